/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Criteo reader of examples/criteo.c: one line's fields and transforms, then whole
 * files with bad lines, CRLF, no final newline, overlong lines and empty files, read in
 * batches on 1 and 3 threads.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "criteo.h"

static const char GOOD[] =
    "1\t5\t\t-3\t0\t100\t\t\t\t\t\t\t\t7\t"
    "0000000a\tFF\t\t1\t2\t3\t4\t5\t6\t7\t8\t9\ta\tb\tc\td\te\tf\t10\t11\t12\t13\t14\t15\t16\tffffffff";

static int64_t sizes_all(int64_t n, int64_t *sizes)
{
    for (int t = 0; t < CRITEO_NCAT; t++)
        sizes[t] = n;
    return n;
}

typedef struct Parsed {
    float label, dense[CRITEO_NDENSE];
    int64_t cat[CRITEO_NCAT];
    char why[80];
} Parsed;

static int parse(const char *line, int64_t size, unsigned flags, Parsed *p)
{
    int64_t sizes[CRITEO_NCAT];
    sizes_all(size, sizes);
    memset(p, 0, sizeof *p);
    return criteo_parse_line(line, (int64_t)strlen(line), sizes, flags, &p->label, p->dense,
                             p->cat, 1, p->why, sizeof p->why);
}

Test(criteo, good_line_and_transforms)
{
    Parsed p;
    cr_assert_eq(parse(GOOD, 1000, 0, &p), 0, "%s", p.why);
    cr_assert_eq(p.label, 1.0f);
    cr_assert_eq(p.dense[0], (float)log1p(5.0));
    cr_assert_eq(p.dense[1], 0.0f, "missing -> 0");
    cr_assert_eq(p.dense[2], 0.0f, "negative -> log(1 + 0)");
    cr_assert_eq(p.dense[4], (float)log1p(100.0));
    cr_assert_eq(p.dense[12], (float)log1p(7.0));
    cr_assert_eq(p.cat[0], 10);
    cr_assert_eq(p.cat[1], 255, "upper-case hex");
    cr_assert_eq(p.cat[2], 0, "missing -> 0");
    cr_assert_eq(p.cat[25], 0xffffffffll % 1000);
}

Test(criteo, hashed_indices)
{
    Parsed p;
    cr_assert_eq(parse(GOOD, 977, CRITEO_HASH, &p), 0, "%s", p.why);
    cr_assert_eq(p.cat[0], (int64_t)(criteo_hash(10) % 977));
    cr_assert_eq(p.cat[25], (int64_t)(criteo_hash(0xffffffffu) % 977));
    for (int t = 0; t < CRITEO_NCAT; t++)
        cr_assert(p.cat[t] >= 0 && p.cat[t] < 977);
    cr_assert_neq(criteo_hash(1), criteo_hash(2));
}

Test(criteo, crlf_and_all_missing)
{
    char line[256] = "0";
    for (int i = 1; i < CRITEO_NFIELDS; i++)
        strcat(line, "\t");
    Parsed p;
    cr_assert_eq(parse(line, 10, 0, &p), 0, "%s", p.why);
    strcat(line, "\r");
    cr_assert_eq(parse(line, 10, 0, &p), 0, "CRLF: %s", p.why);
    char crlf[sizeof GOOD + 1];
    snprintf(crlf, sizeof crlf, "%s\r", GOOD);
    cr_assert_eq(parse(crlf, 1000, 0, &p), 0, "%s", p.why);
    cr_assert_eq(p.cat[25], 0xffffffffll % 1000, "the \\r is not part of the last field");
}

/* GOOD with field @p field replaced by @p value. */
static void with_field(char *out, size_t cap, int field, const char *value)
{
    const char *p = GOOD;
    out[0] = '\0';
    for (int f = 0; f < CRITEO_NFIELDS; f++) {
        const char *tab = strchr(p, '\t');
        const size_t n = tab ? (size_t)(tab - p) : strlen(p);
        if (f)
            strncat(out, "\t", cap - strlen(out) - 1);
        if (f == field)
            strncat(out, value, cap - strlen(out) - 1);
        else
            strncat(out, p, n < cap - strlen(out) - 1 ? n : cap - strlen(out) - 1);
        p = tab ? tab + 1 : p + n;
    }
}

Test(criteo, bad_fields)
{
    static const struct { int field; const char *value, *why; } cases[] = {
        {0, "2", "label"},        {0, "", "label"},           {0, "01", "label"},
        {1, "1x", "I1"},          {3, "-", "I3"},            {13, "1234567890123456789", "I13"},
        {14, "0000000g", "C1"},   {15, "123456789", "C2"},   {39, " 1", "C26"},
        {20, "-1", "C7"},         {5, "1.5", "I5"},          {39, "ff\tff", "more than"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char line[512];
        with_field(line, sizeof line, cases[i].field, cases[i].value);
        Parsed p;
        cr_assert_eq(parse(line, 1000, 0, &p), -1, "case %zu accepted", i);
        cr_assert(strstr(p.why, cases[i].why), "case %zu: '%s'", i, p.why);
    }
    Parsed p;
    cr_assert_eq(parse("", 10, 0, &p), -1);
    cr_assert(strstr(p.why, "1 fields"), "%s", p.why);
    char short_line[sizeof GOOD];
    memcpy(short_line, GOOD, sizeof GOOD);
    *strrchr(short_line, '\t') = '\0'; /* 39 fields */
    cr_assert_eq(parse(short_line, 10, 0, &p), -1);
    cr_assert(strstr(p.why, "39 fields"), "%s", p.why);
    with_field(short_line, sizeof short_line, 16, "123456789012345678");
    cr_assert_eq(parse(short_line, 10, 0, &p), -1, "a hex field of 18 digits");
    char big[512];
    with_field(big, sizeof big, 4, "-123456789012345678");
    cr_assert_eq(parse(big, 10, 0, &p), 0, "%s", p.why);
    cr_assert_eq(p.dense[3], 0.0f);
}

/* ---- files ----------------------------------------------------------------------------- */

typedef struct Reports {
    int64_t n, lines[64];
    char why[64][80];
} Reports;

static void on_bad(void *user, int64_t line, const char *why)
{
    Reports *r = user;
    if (r->n < 64) {
        r->lines[r->n] = line;
        snprintf(r->why[r->n], sizeof r->why[0], "%s", why);
    }
    r->n++;
}

static char *write_file(const char *text, size_t n)
{
    char *path = strdup("/tmp/test_criteo-XXXXXX");
    const int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, text, n), (ssize_t)n);
    close(fd);
    return path;
}

/* A line whose label, I1 and C1 encode @p k. */
static int make_line(char *out, size_t cap, int64_t k, const char *end)
{
    int n = snprintf(out, cap, "%d\t%lld", (int)(k & 1), (long long)k);
    for (int f = 2; f <= CRITEO_NDENSE; f++)
        n += snprintf(out + n, cap - (size_t)n, "\t");
    n += snprintf(out + n, cap - (size_t)n, "\t%llx", (unsigned long long)k);
    for (int t = 1; t < CRITEO_NCAT; t++)
        n += snprintf(out + n, cap - (size_t)n, "\t%x", t);
    return n + snprintf(out + n, cap - (size_t)n, "%s", end);
}

typedef struct Read {
    int64_t nbatches, nsamples, ks[4096], lines, bad;
} Read;

static void read_all(const char *path, int64_t batch, int nthreads, int64_t max_line,
                     Reports *rep, Read *out)
{
    CriteoOptions o = {.batch = batch, .nthreads = nthreads, .max_line = max_line,
                       .report = on_bad, .report_user = rep};
    sizes_all(1 << 20, o.sizes);
    CriteoReader *r;
    char err[200];
    cr_assert_eq(criteo_open(&r, path, &o, err, sizeof err), 0, "%s", err);
    memset(out, 0, sizeof *out);
    CriteoBatch b;
    for (;;) {
        cr_assert_eq(criteo_next(r, &b), 0, "%s", criteo_error(r));
        if (b.n == 0)
            break;
        cr_assert(b.n <= batch);
        for (int64_t i = 0; i < b.n; i++) {
            const int64_t k = b.cat[0][i];
            cr_assert_eq(b.label[i], (float)(k & 1));
            cr_assert_eq(b.dense[i * CRITEO_NDENSE], (float)log1p((double)k));
            cr_assert_eq(b.cat[5][i], 5);
            cr_assert(out->nsamples < 4096);
            out->ks[out->nsamples++] = k;
        }
        out->nbatches++;
    }
    cr_assert_eq(criteo_next(r, &b), 0, "the end stays the end");
    cr_assert_eq(b.n, 0);
    criteo_counts(r, &out->lines, &out->bad);
    criteo_close(&r);
    cr_assert_null(r);
}

Test(criteo, file_with_bad_lines)
{
    /* lines 1..10 good except: 3 non-hex, 5 overlong, 6 empty, 8 CRLF (good), 10 without '\n' */
    char text[8192];
    size_t n = 0;
    for (int64_t k = 1; k <= 10; k++) {
        char line[1024];
        make_line(line, sizeof line, k, k == 8 ? "\r\n" : k == 10 ? "" : "\n");
        if (k == 3)
            memcpy(strstr(line, "\t3\t4\t"), "\tz\t", 3);
        if (k == 5) {
            memset(line, '1', 600);
            strcpy(line + 600, "\n");
        }
        if (k == 6)
            strcpy(line, "\n");
        n += (size_t)snprintf(text + n, sizeof text - n, "%s", line);
    }
    char *path = write_file(text, n);
    for (int threads = 1; threads <= 3; threads += 2)
        for (int64_t batch = 1; batch <= 11; batch += 3) {
            Reports rep = {0};
            Read got;
            read_all(path, batch, threads, 300, &rep, &got);
            cr_assert_eq(got.lines, 10);
            cr_assert_eq(got.bad, 3);
            cr_assert_eq(got.nsamples, 7);
            const int64_t want[] = {1, 2, 4, 7, 8, 9, 10};
            for (int i = 0; i < 7; i++)
                cr_assert_eq(got.ks[i], want[i], "batch %lld threads %d", (long long)batch, threads);
            cr_assert_eq(rep.n, 3);
            cr_assert_eq(rep.lines[0], 3);
            cr_assert(strstr(rep.why[0], "C4"), "%s", rep.why[0]);
            cr_assert_eq(rep.lines[1], 5);
            cr_assert(strstr(rep.why[1], "longer than 300"), "%s", rep.why[1]);
            cr_assert_eq(rep.lines[2], 6);
        }
    unlink(path);
    free(path);
}

Test(criteo, empty_and_missing_files)
{
    char *path = write_file("", 0);
    Reports rep = {0};
    Read got;
    read_all(path, 4, 2, 0, &rep, &got);
    cr_assert_eq(got.nbatches, 0);
    cr_assert_eq(got.lines, 0);
    unlink(path);
    free(path);

    path = write_file("\n\n", 2); /* two empty lines: two bad lines */
    read_all(path, 4, 2, 0, &rep, &got);
    cr_assert_eq(got.nbatches, 0);
    cr_assert_eq(got.bad, 2);
    cr_assert_eq(rep.lines[1], 2);
    unlink(path);
    free(path);

    CriteoOptions o = {.batch = 4};
    sizes_all(10, o.sizes);
    CriteoReader *r = NULL;
    char err[200];
    cr_assert_eq(criteo_open(&r, "/nonexistent/criteo.tsv", &o, err, sizeof err), -ENOENT);
    cr_assert(strstr(err, "/nonexistent/criteo.tsv"), "%s", err);
    cr_assert_null(r);
    o.sizes[7] = 0;
    cr_assert_eq(criteo_open(&r, "/dev/null", &o, err, sizeof err), -EINVAL);
    cr_assert(strstr(err, "sizes[7] (table C8)"), "%s", err);
    o.sizes[7] = 10;
    cr_assert_eq(criteo_open(&r, NULL, &o, err, sizeof err), -EINVAL);
    cr_assert(strstr(err, "path is NULL"), "%s", err);
    cr_assert_eq(criteo_open(&r, "/dev/null", NULL, err, sizeof err), -EINVAL);
    cr_assert(strstr(err, "opts is NULL"), "%s", err);
    cr_assert_eq(criteo_open(NULL, "/dev/null", &o, err, sizeof err), -EINVAL);
    cr_assert(strstr(err, "out is NULL"), "%s", err);
    cr_assert_null(r);
    criteo_close(&r);
}

/* criteo_parse_line's arguments (issue 23): each refused with -EINVAL naming it, before
   any output is written (the outputs keep their poison). */
Test(criteo, parse_line_bad_arguments)
{
    int64_t ok[CRITEO_NCAT], zero[CRITEO_NCAT], neg[CRITEO_NCAT];
    sizes_all(10, ok), sizes_all(10, zero), sizes_all(10, neg);
    zero[0] = 0;
    neg[25] = -7;
    float label = -1, dense[CRITEO_NDENSE];
    int64_t cat[2 * CRITEO_NCAT];
    const int64_t len = (int64_t)strlen(GOOD);
    const struct {
        const char *line;
        int64_t len;
        const int64_t *sizes;
        float *label, *dense;
        int64_t *cat, stride;
        const char *culprit;
    } cases[] = {
        {GOOD, len, zero, &label, dense, cat, 1, "sizes[0] (table C1) is 0"},
        {GOOD, len, neg, &label, dense, cat, 1, "sizes[25] (table C26) is -7"},
        {GOOD, len, NULL, &label, dense, cat, 1, "sizes is NULL"},
        {NULL, 5, ok, &label, dense, cat, 1, "line is NULL"},
        {GOOD, -1, ok, &label, dense, cat, 1, "len is negative"},
        {GOOD, len, ok, NULL, dense, cat, 1, "label is NULL"},
        {GOOD, len, ok, &label, NULL, cat, 1, "dense is NULL"},
        {GOOD, len, ok, &label, dense, NULL, 1, "cat is NULL"},
        {GOOD, len, ok, &label, dense, cat, 0, "cat_stride"},
        {GOOD, len, ok, &label, dense, cat, -2, "cat_stride"},
        {GOOD, len, ok, &label, dense, cat, INT64_MAX, "cat_stride"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char why[120] = "";
        for (int k = 0; k < CRITEO_NDENSE; k++)
            dense[k] = -1;
        for (int t = 0; t < 2 * CRITEO_NCAT; t++)
            cat[t] = -1;
        cr_assert_eq(criteo_parse_line(cases[i].line, cases[i].len, cases[i].sizes, 0,
                                       cases[i].label, cases[i].dense, cases[i].cat,
                                       cases[i].stride, why, sizeof why), -EINVAL, "case %zu", i);
        cr_assert(strstr(why, cases[i].culprit), "case %zu: '%s'", i, why);
        cr_assert_eq(label, -1.0f, "case %zu wrote", i);
        for (int k = 0; k < CRITEO_NDENSE; k++)
            cr_assert_eq(dense[k], -1.0f, "case %zu wrote", i);
        for (int t = 0; t < 2 * CRITEO_NCAT; t++)
            cr_assert_eq(cat[t], -1, "case %zu wrote", i);
        /* no message buffer: the same code */
        cr_assert_eq(criteo_parse_line(cases[i].line, cases[i].len, cases[i].sizes, 0,
                                       cases[i].label, cases[i].dense, cases[i].cat,
                                       cases[i].stride, NULL, 0), -EINVAL);
    }
    /* a NULL line of length 0 is an empty line: a bad line, not a bad argument; sizes up to
       INT64_MAX and a stride of 2 are fine */
    char why[80];
    cr_assert_eq(criteo_parse_line(NULL, 0, ok, 0, &label, dense, cat, 1, why, sizeof why), -1);
    ok[3] = INT64_MAX;
    cr_assert_eq(criteo_parse_line(GOOD, len, ok, CRITEO_HASH, &label, dense, cat, 2, why,
                                   sizeof why), 0, "%s", why);
    cr_assert_eq(cat[6], (int64_t)(criteo_hash(1) % INT64_MAX));
}

Test(criteo, many_batches_in_order)
{
    const int64_t lines = 3000;
    char *text = malloc((size_t)lines * 256);
    size_t n = 0;
    for (int64_t k = 0; k < lines; k++)
        n += (size_t)make_line(text + n, 256, k * 7919 % lines, "\n");
    char *path = write_file(text, n);
    free(text);
    for (int threads = 1; threads <= 3; threads++) {
        Reports rep = {0};
        Read got;
        read_all(path, 64, threads, 0, &rep, &got);
        cr_assert_eq(got.nbatches, (lines + 63) / 64);
        cr_assert_eq(got.nsamples, lines);
        cr_assert_eq(got.bad, 0);
        for (int64_t k = 0; k < lines; k++)
            cr_assert_eq(got.ks[k], k * 7919 % lines, "threads %d line %lld", threads, (long long)k);
    }
    unlink(path);
    free(path);
}

Test(criteo, close_while_reading_ahead)
{
    /* a reader closed after one batch, with workers blocked on full slots */
    const int64_t lines = 500;
    char *text = malloc((size_t)lines * 256);
    size_t n = 0;
    for (int64_t k = 0; k < lines; k++)
        n += (size_t)make_line(text + n, 256, k, "\n");
    char *path = write_file(text, n);
    free(text);
    CriteoOptions o = {.batch = 8, .nthreads = 3};
    sizes_all(1000, o.sizes);
    CriteoReader *r;
    cr_assert_eq(criteo_open(&r, path, &o, NULL, 0), 0);
    CriteoBatch b;
    cr_assert_eq(criteo_next(r, &b), 0);
    cr_assert_eq(b.n, 8);
    cr_assert_eq(b.first_line, 1);
    criteo_close(&r);
    unlink(path);
    free(path);
}

#ifdef CRITEO_HAVE_ZLIB
#include <zlib.h>

/* @p text gzip-compressed into a new file (its path, to free). */
static char *write_gz(const char *text, size_t n)
{
    char *path = write_file("", 0);
    gzFile g = gzopen(path, "wb");
    cr_assert_not_null(g);
    cr_assert_eq(gzwrite(g, text, (unsigned)n), (int)n);
    cr_assert_eq(gzclose(g), Z_OK);
    return path;
}
#endif

/* A gzip file reads as its text (with zlib), to the same samples and counts; a truncated
 * one is an I/O error naming the line, not a short file; without zlib it is refused at
 * open with a message saying why. */
Test(criteo, gzip_file_as_its_text)
{
    const int64_t lines = 1500;
    char *text = malloc((size_t)lines * 256);
    size_t n = 0;
    for (int64_t k = 0; k < lines; k++)
        n += (size_t)make_line(text + n, 256, k * 7919 % lines, k == 9 ? "x\n" : "\n");
#ifdef CRITEO_HAVE_ZLIB
    char *plain = write_file(text, n), *gz = write_gz(text, n);
    Read a, b;
    Reports ra = {0}, rb = {0};
    read_all(plain, 64, 2, 0, &ra, &a);
    read_all(gz, 64, 2, 0, &rb, &b);
    cr_assert_eq(a.nsamples, lines - 1);
    cr_assert_eq(b.nsamples, a.nsamples);
    cr_assert_eq(b.bad, 1);
    cr_assert_eq(rb.lines[0], 10);
    cr_assert_eq(memcmp(a.ks, b.ks, sizeof a.ks), 0);
    /* cut the compressed file in its middle */
    FILE *f = fopen(gz, "rb");
    char *bytes = malloc(n);
    const size_t size = fread(bytes, 1, n, f);
    fclose(f);
    char *cut = write_file(bytes, size / 2);
    CriteoOptions o = {.batch = 64};
    sizes_all(1 << 20, o.sizes);
    CriteoReader *r;
    char err[200];
    cr_assert_eq(criteo_open(&r, cut, &o, err, sizeof err), 0, "%s", err);
    CriteoBatch batch;
    int rc = 0;
    while ((rc = criteo_next(r, &batch)) == 0 && batch.n > 0) {
    }
    cr_assert_eq(rc, -EIO);
    cr_assert(strstr(criteo_error(r), "read error after line"), "%s", criteo_error(r));
    criteo_close(&r);
    free(bytes);
    unlink(cut);
    free(cut);
    unlink(plain);
    free(plain);
#else
    char *gz = write_file("\x1f\x8b\x08\x00", 4);
    CriteoOptions o = {.batch = 4};
    sizes_all(10, o.sizes);
    CriteoReader *r = NULL;
    char err[200];
    cr_assert_eq(criteo_open(&r, gz, &o, err, sizeof err), -ENOTSUP);
    cr_assert(strstr(err, gz) && strstr(err, "zlib"), "%s", err);
    cr_assert_null(r);
#endif
    unlink(gz);
    free(gz);
    free(text);
}
