/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_ids.c — the benchmarks' generator of ids (bench_ids.h): uniform, Zipf by
 * rejection-inversion, and trace files.
 */
#include "bench_ids.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t bench_ids_splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- Zipf by rejection-inversion -------------------------------------------------------
 * H(x) = ((x^(1-s)) - 1) / (1 - s) (log x at s = 1) integrates the hat h(x) = x^-s;
 * helper1 / helper2 are log1p(x)/x and expm1(x)/x, stable near 0 (s near 1). */

static double helper1(double x)
{
    return fabs(x) > 1e-8 ? log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}

static double helper2(double x)
{
    return fabs(x) > 1e-8 ? expm1(x) / x : 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x));
}

static double zh(const BenchZipf *z, double x)
{
    return exp(-z->s * log(x));
}

static double zh_int(const BenchZipf *z, double x)
{
    const double lx = log(x);
    return helper2((1 - z->s) * lx) * lx;
}

static double zh_inv(const BenchZipf *z, double x)
{
    double t = x * (1 - z->s);
    if (t < -1)
        t = -1;
    return exp(helper1(t) * x);
}

void bench_zipf_init(BenchZipf *z, int64_t n, double s)
{
    z->s = s;
    z->n = n;
    z->hx1 = zh_int(z, 1.5) - 1;
    z->hn = zh_int(z, (double)n + 0.5);
    z->sq = 2 - zh_inv(z, zh_int(z, 2.5) - zh(z, 2));
}

static double unit(uint64_t *st)
{
    return (double)(bench_ids_splitmix(st) >> 11) * 0x1.0p-53;
}

int64_t bench_zipf_rank(const BenchZipf *z, uint64_t *st)
{
    for (;;) {
        const double u = z->hn + unit(st) * (z->hx1 - z->hn);
        const double x = zh_inv(z, u);
        int64_t k = (int64_t)(x + 0.5);
        k = k < 1 ? 1 : k > z->n ? z->n : k;
        if (k - x <= z->sq || u >= zh_int(z, (double)k + 0.5) - zh(z, (double)k))
            return k - 1;
    }
}

/* ---- one table's source --------------------------------------------------------------- */

#define RANK_MULT 2147483647u /* 2^31 - 1, prime: rank * P + shift mod rows permutes */

void bench_idgen_init(BenchIdGen *g, BenchIdKind kind, int64_t rows, double s, uint64_t seed)
{
    memset(g, 0, sizeof *g);
    g->kind = kind;
    g->rows = rows;
    bench_zipf_init(&g->zipf, rows, kind == BENCH_IDS_ZIPF ? s : 1.0);
    g->shift = bench_ids_splitmix(&seed) % (uint64_t)rows;
}

void bench_idgen_trace(BenchIdGen *g, int64_t rows, const int64_t *ids, int64_t n)
{
    memset(g, 0, sizeof *g);
    g->kind = BENCH_IDS_TRACE;
    g->rows = rows;
    g->trace = ids;
    g->ntrace = n;
}

int64_t bench_idgen_row(const BenchIdGen *g, uint64_t *st, int64_t pos)
{
    switch (g->kind) {
    case BENCH_IDS_ZIPF: {
        const uint64_t r = (uint64_t)bench_zipf_rank(&g->zipf, st) * RANK_MULT + g->shift;
        return (int64_t)(r % (uint64_t)g->rows);
    }
    case BENCH_IDS_TRACE:
        return g->trace[pos % g->ntrace];
    default:
        return (int64_t)(bench_ids_splitmix(st) % (uint64_t)g->rows);
    }
}

/* ---- trace files ---------------------------------------------------------------------- */

static int ends_with(const char *s, const char *tail)
{
    const size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

static int grow(int64_t **ids, int64_t *cap, int64_t need)
{
    if (need <= *cap)
        return 0;
    int64_t c = *cap ? *cap * 2 : 4096;
    while (c < need)
        c *= 2;
    int64_t *p = realloc(*ids, (size_t)c * sizeof *p);
    if (!p)
        return -1;
    *ids = p;
    *cap = c;
    return 0;
}

static int read_text(FILE *f, const char *path, int64_t rows, int64_t **ids, int64_t *n,
                     char *err, size_t errlen)
{
    char line[128];
    int64_t cap = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *end;
        errno = 0;
        const long long v = strtoll(line, &end, 10);
        while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
            end++;
        if (end == line || *end || errno) {
            snprintf(err, errlen, "%s:%" PRId64 ": not an id", path, lineno);
            return -1;
        }
        if (v < 0 || v >= rows) {
            snprintf(err, errlen, "%s:%" PRId64 ": id %lld outside the table's %" PRId64 " rows",
                     path, lineno, v, rows);
            return -1;
        }
        if (grow(ids, &cap, *n + 1) != 0) {
            snprintf(err, errlen, "%s: out of memory", path);
            return -1;
        }
        (*ids)[(*n)++] = v;
    }
    return 0;
}

static int read_binary(FILE *f, const char *path, int64_t rows, int64_t **ids, int64_t *n,
                       char *err, size_t errlen)
{
    int64_t cap = 0;
    unsigned char b[8];
    size_t got;
    while ((got = fread(b, 1, 8, f)) == 8) {
        uint64_t v = 0;
        for (int k = 7; k >= 0; k--)
            v = v << 8 | b[k];
        if ((int64_t)v < 0 || (int64_t)v >= rows) {
            snprintf(err, errlen, "%s: id %" PRId64 " (the %" PRId64 "th) outside the table's %" PRId64 " rows",
                     path, (int64_t)v, *n + 1, rows);
            return -1;
        }
        if (grow(ids, &cap, *n + 1) != 0) {
            snprintf(err, errlen, "%s: out of memory", path);
            return -1;
        }
        (*ids)[(*n)++] = (int64_t)v;
    }
    if (got != 0) {
        snprintf(err, errlen, "%s: %zu bytes at the end are not a whole int64 id", path, got);
        return -1;
    }
    return 0;
}

int bench_trace_load(const char *path, int64_t rows, int64_t **ids, int64_t *n, char *err,
                     size_t errlen)
{
    *ids = NULL;
    *n = 0;
    FILE *f = fopen(path, ends_with(path, ".txt") ? "r" : "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = ends_with(path, ".txt") ? read_text(f, path, rows, ids, n, err, errlen)
                                     : read_binary(f, path, rows, ids, n, err, errlen);
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        rc = -1;
    }
    if (rc == 0 && *n == 0) {
        snprintf(err, errlen, "%s: no ids", path);
        rc = -1;
    }
    fclose(f);
    if (rc != 0) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return rc;
}

const char *bench_ids_describe(BenchIdKind kind, double s, const char *trace, char *buf,
                               size_t n)
{
    if (kind == BENCH_IDS_ZIPF)
        snprintf(buf, n, "zipf(s=%.2f, rejection-inversion)", s);
    else if (kind == BENCH_IDS_TRACE)
        snprintf(buf, n, "trace(%s)", trace ? trace : "?");
    else
        snprintf(buf, n, "uniform");
    return buf;
}
