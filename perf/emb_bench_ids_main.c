/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_ids_main.c — `emb-bench ids`: the benchmarks' generator (bench_ids.h) as a
 * command, so that other programs (scripts/criteo_gen.py, a user's trace tools) draw the
 * same ids: COUNT ids over ROWS rows from --ids uniform | zipf:S and --seed, written as
 * int64 little-endian binary, or text one id a line when the file name ends in ".txt"
 * (the two formats --ids trace:DIR reads).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_choice.h"
#include "bench_ids.h"
#include "emb_bench.h"

static const char ids_usage[] =
    "usage: emb-bench ids --rows N --count M [--ids uniform|zipf:S] [--seed X] --out FILE\n"
    "M ids in [0, N) from the benchmarks' generator (zipf: rejection-inversion, ranks\n"
    "scattered over the rows as emb-bench does); FILE: int64 little-endian, or text one id a\n"
    "line when it ends in .txt. Defaults: zipf:1.05, seed 42.\n";

static int write_ids(const char *path, const BenchIdGen *g, int64_t count, uint64_t seed)
{
    const size_t n = strlen(path);
    const int text = n >= 4 && strcmp(path + n - 4, ".txt") == 0;
    FILE *f = fopen(path, text ? "w" : "wb");
    if (!f)
        return fprintf(stderr, "emb-bench ids: cannot write %s\n", path), -1;
    uint64_t st = seed;
    int rc = 0;
    for (int64_t i = 0; i < count && !rc; i++) {
        const int64_t id = bench_idgen_row(g, &st, i);
        if (text) {
            rc = fprintf(f, "%lld\n", (long long)id) < 0;
        } else {
            unsigned char b[8];
            for (int k = 0; k < 8; k++)
                b[k] = (unsigned char)((uint64_t)id >> (8 * k));
            rc = fwrite(b, 1, 8, f) != 8;
        }
    }
    if (fclose(f) != 0 || rc)
        return fprintf(stderr, "emb-bench ids: cannot write %s\n", path), -1;
    return 0;
}

int bench_ids_main(int argc, char **argv)
{
    long long rows = 0, count = 0;
    unsigned long long seed = 42;
    double s = 1.05;
    BenchIdKind kind = BENCH_IDS_ZIPF;
    const char *out = NULL;
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(k, "--help") == 0)
            return fputs(ids_usage, stdout), 0;
        if (!v)
            return fprintf(stderr, "emb-bench ids: %s needs a value\n%s", k, ids_usage), 2;
        i++;
        if (strcmp(k, "--rows") == 0)
            rows = atoll(v);
        else if (strcmp(k, "--count") == 0)
            count = atoll(v);
        else if (strcmp(k, "--seed") == 0)
            seed = strtoull(v, NULL, 10);
        else if (strcmp(k, "--out") == 0)
            out = v;
        else if (strcmp(k, "--ids") == 0 && strcmp(v, "uniform") == 0)
            kind = BENCH_IDS_UNIFORM;
        else if (strcmp(k, "--ids") == 0 && sscanf(v, "zipf:%lf", &s) == 1 && s > 0)
            kind = BENCH_IDS_ZIPF;
        else if (strcmp(k, "--ids") == 0) {
            static const char *const forms[] = {"uniform", "zipf:S (S > 0)"};
            return bench_choice_fail(stderr, "emb-bench ids", k, v, forms, 2), 2;
        } else
            return fprintf(stderr, "emb-bench ids: bad option %s %s\n%s", k, v, ids_usage), 2;
    }
    if (rows < 1 || count < 1 || !out)
        return fprintf(stderr, "emb-bench ids: --rows, --count and --out are needed\n%s",
                       ids_usage), 2;
    BenchIdGen g;
    bench_idgen_init(&g, kind, rows, s, seed);
    return write_ids(out, &g, count, seed ^ 0x6964735fULL) == 0 ? 0 : 1;
}
