/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_dyn.c — emb-bench dyn: dynamic (hash-keyed) tables against a plain table holding the same rows
 * (issue 19's targets): the lookup of existing ids, and the update step where 10 % of the
 * ids are new (created by the step) against the plain table's step over existing ids. Ids
 * uniform or Zipf; 1 and 2 threads. Dynamic and plain runs are interleaved, each timing is
 * the median of the repetitions, min and max given as the spread.
 *
 *   emb-bench dyn [--rows N] [--dim D] [--bags B] [--bag-size S] [--reps R] [--cpu-time]
 *                 [--quick]
 *
 * --cpu-time: every call timed by the process's CPU clock (all its threads) instead of
 * the wall clock: a loaded machine's descheduled time left out, memory stalls kept in.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <embtables/embtables.h>

#include "bench_ids.h"
#include "bench_util.h"
#include "emb_bench.h"

static clockid_t dyn_clock = CLOCK_MONOTONIC; /* --cpu-time: CLOCK_PROCESS_CPUTIME_ID */

static double clock_now(void)
{
    struct timespec t;
    clock_gettime(dyn_clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The dynamic id of plain row r (a sparse 63-bit value); new ids from another stream. */
static int64_t key_of(int64_t r)
{
    return (int64_t)(mix((uint64_t)r) >> 1);
}

typedef struct Stat {
    double med, lo, hi;
} Stat;

static Stat stat_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return (Stat){v[n / 2], v[0], v[n - 1]};
}

/* Row indices from the benchmarks' generator (bench_ids.h): uniform, or Zipf(1.05). */
static void draw_rows(int64_t *out, int64_t n, const BenchIdGen *g, uint64_t *s)
{
    for (int64_t k = 0; k < n; k++)
        out[k] = bench_idgen_row(g, s, 0);
}

static void check(int rc, const char *what)
{
    if (rc) {
        fprintf(stderr, "emb-bench dyn: %s: %s (%s)\n", what, emb_strerror(rc), emb_last_error());
        exit(1);
    }
}

int bench_dyn_main(int argc, char **argv)
{
    int64_t rows = 500000, bags = 4096, bag = 20;
    int32_t dim = 64;
    int reps = 15;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            rows = 5000, bags = 64, reps = 3;
        } else if (i + 1 < argc && !strcmp(argv[i], "--rows")) {
            rows = atoll(argv[++i]);
        } else if (i + 1 < argc && !strcmp(argv[i], "--dim")) {
            dim = atoi(argv[++i]);
        } else if (i + 1 < argc && !strcmp(argv[i], "--bags")) {
            bags = atoll(argv[++i]);
        } else if (i + 1 < argc && !strcmp(argv[i], "--bag-size")) {
            bag = atoll(argv[++i]);
        } else if (!strcmp(argv[i], "--cpu-time")) {
            dyn_clock = CLOCK_PROCESS_CPUTIME_ID;
        } else if (i + 1 < argc && !strcmp(argv[i], "--reps")) {
            reps = atoi(argv[++i]);
        } else {
            const int help = !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
            fprintf(help ? stdout : stderr, "usage: emb-bench dyn [--rows N] [--dim D] "
                    "[--bags B] [--bag-size S] [--reps R] [--cpu-time] [--quick]\n");
            return help ? 0 : 2;
        }
    }
    const int64_t nnz = bags * bag;
    /* the plain table and the dynamic one, same rows (row r of plain = id key_of(r)) */
    EmbTable *plain;
    check(emb_table_create(&plain, rows, dim, EMB_F32, NULL), "plain table");
    int64_t stride;
    float *data = emb_table_data(plain, &stride);
    uint64_t s = 1;
    for (int64_t r = 0; r < rows; r++)
        for (int32_t i = 0; i < dim; i++)
            data[r * stride + i] = (float)((s = mix(s)) >> 40) * (1.0f / 16777216.0f) - 0.5f;
    int64_t *keys = malloc((size_t)rows * sizeof *keys);
    int64_t *ids = malloc((size_t)nnz * sizeof *ids), *dids = malloc((size_t)nnz * sizeof *dids);
    float *out = malloc((size_t)bags * (size_t)dim * sizeof *out);
    double *tp = malloc((size_t)reps * sizeof *tp), *td = malloc((size_t)reps * sizeof *td);
    if (!keys || !ids || !dids || !out || !tp || !td)
        return 1;
    for (int64_t r = 0; r < rows; r++)
        keys[r] = key_of(r);
    BenchIdGen gen[2];
    bench_idgen_init(&gen[0], BENCH_IDS_UNIFORM, rows, 0, 99);
    bench_idgen_init(&gen[1], BENCH_IDS_ZIPF, rows, 1.05, 99);
    printf("emb-bench dyn: %lld rows x %d f32, %lld bags of %lld ids, median of %d (min-max), "
           "timed by the %s clock; every call fresh ids\n", (long long)rows, (int)dim,
           (long long)bags, (long long)bag, reps,
           dyn_clock == CLOCK_MONOTONIC ? "wall" : "process's CPU");
    printf("%-8s %-4s %-7s %22s %22s %6s\n", "ids", "thr", "phase", "plain ms", "dynamic ms",
           "ratio");
    for (int zipf = 0; zipf < 2; zipf++)
        for (int threads = 1; threads <= 2; threads++) {
            EmbDynamicOptions o = {.capacity = rows + rows / 2};
            EmbTable *dyn;
            check(emb_table_dynamic_create(&dyn, dim, EMB_F32, &o), "dynamic table");
            check(emb_table_dynamic_import(dyn, keys, data, stride, rows), "import");
            EmbStrategy *st;
            const EmbStrategyOptions so = {.nthreads = threads};
            check(emb_strategy_prealloc_concat(&st, &so), "strategy");
            uint64_t seed = 99;
            /* lookup of existing ids */
            for (int k = 0; k < reps; k++) {
                draw_rows(ids, nnz, &gen[zipf], &seed);
                for (int64_t j = 0; j < nnz; j++)
                    dids[j] = keys[ids[j]];
                EmbBatch b = {.ids = ids, .nnz = nnz, .nbags = bags, .bag_size = bag};
                EmbBatch db = b;
                db.ids = dids;
                float *po[1] = {out};
                const EmbOutputs eo = {.per_table = po};
                double t0 = clock_now();
                check(emb_maplookup(st, &plain, 1, &b, NULL, &eo), "plain lookup");
                tp[k] = clock_now() - t0;
                t0 = clock_now();
                check(emb_maplookup(st, &dyn, 1, &db, NULL, &eo), "dynamic lookup");
                td[k] = clock_now() - t0;
            }
            Stat a = stat_of(tp, reps), d = stat_of(td, reps);
            printf("%-8s %-4d %-7s %7.3f (%6.3f-%6.3f) %7.3f (%6.3f-%6.3f) %6.2f\n",
                   zipf ? "zipf" : "uniform", threads, "lookup", 1e3 * a.med, 1e3 * a.lo,
                   1e3 * a.hi, 1e3 * d.med, 1e3 * d.lo, 1e3 * d.hi, d.med / a.med);
            /* update (Adagrad) from a pullback of SUM bags; 10 % of the dynamic ids new */
            EmbOptimizerConfig cfg = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.01f);
            EmbOptimizer *op, *od;
            EmbIndexer *ip, *id;
            EmbGrad *gp, *gd;
            check(emb_optimizer_create(&op, &cfg), "optimizer");
            check(emb_optimizer_create(&od, &cfg), "optimizer");
            emb_indexer_create(&ip);
            emb_indexer_create(&id);
            emb_grad_create(&gp);
            emb_grad_create(&gd);
            EmbStrategy *us;
            check(emb_strategy_auto(&us, &so), "strategy");
            for (int64_t j = 0; j < bags * dim; j++)
                out[j] = 1e-3f * (float)(j % 7);
            int64_t fresh = 0;
            for (int k = 0; k < reps + 1; k++) { /* the first step warms up both */
                draw_rows(ids, nnz, &gen[zipf], &seed);
                for (int64_t j = 0; j < nnz; j++)
                    dids[j] = j % 10 == 9 ? (int64_t)(mix(~(uint64_t)fresh++) >> 1)
                                          : keys[ids[j]];
                EmbBatch b = {.ids = ids, .nnz = nnz, .nbags = bags, .bag_size = bag};
                EmbBatch db = b;
                db.ids = dids;
                double t0 = clock_now();
                check(emb_lookup_backward(plain, &b, NULL, out, dim, gp), "backward");
                check(emb_update_many(us, op, &plain, (const EmbGrad *const *)&gp, 1, &ip, 0),
                      "plain update");
                const double t1 = clock_now();
                check(emb_lookup_backward(dyn, &db, NULL, out, dim, gd), "backward");
                check(emb_update_many(us, od, &dyn, (const EmbGrad *const *)&gd, 1, &id, 0),
                      "dynamic update");
                const double t2 = clock_now();
                if (k > 0) {
                    tp[k - 1] = t1 - t0;
                    td[k - 1] = t2 - t1;
                }
            }
            a = stat_of(tp, reps), d = stat_of(td, reps);
            printf("%-8s %-4d %-7s %7.3f (%6.3f-%6.3f) %7.3f (%6.3f-%6.3f) %6.2f\n",
                   zipf ? "zipf" : "uniform", threads, "update", 1e3 * a.med, 1e3 * a.lo,
                   1e3 * a.hi, 1e3 * d.med, 1e3 * d.lo, 1e3 * d.hi, d.med / a.med);
            EmbDynamicStats ds;
            emb_table_dynamic_stats(dyn, &ds);
            /* where the bytes beyond row + state go: the index (16-byte slots at its load),
               the per-row metadata (id, last step: 16 bytes a slab row) and the slab rows
               held beyond the live ones (the capacity hint, 1.5x the rows here) */
            const double rs = (double)(stride * 4 + dim * 4), nr = (double)ds.rows;
            const double index = 16.0 * (double)ds.index_slots;
            printf("         dynamic: %lld rows, %.1f bytes per row held (plain: %lld + %lld "
                   "state): index %.1f (load %.2f), metadata %.1f, unused slab rows %.1f\n",
                   (long long)ds.rows, (double)ds.bytes / nr, (long long)(stride * 4),
                   (long long)(dim * 4), index / nr, nr / (double)ds.index_slots,
                   16.0 * (double)ds.slab_rows / nr,
                   ((double)ds.bytes - index - 16.0 * (double)ds.slab_rows) / nr - rs);
            emb_grad_destroy(&gp);
            emb_grad_destroy(&gd);
            emb_indexer_destroy(&ip);
            emb_indexer_destroy(&id);
            emb_optimizer_destroy(&op);
            emb_optimizer_destroy(&od);
            emb_strategy_destroy(&us);
            emb_strategy_destroy(&st);
            emb_table_destroy(&dyn);
            /* the plain table's rows changed under its updates: refill is not needed for a
               timing, the dynamic one is rebuilt from the changed rows next round */
        }
    emb_table_destroy(&plain);
    free(keys), free(ids), free(dids), free(out), free(tp), free(td);
    return 0;
}
