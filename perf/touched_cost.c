/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * touched_cost.c — what the always-on touched-row tracking (src/tables/touched.c) adds to
 * an update step (issue 45: at most 1 %): one table of --rows x 64 f32 trained with Adam
 * on 2048 bags of 20 Zipf(1.05) ids (bench_ids.h), each step timed, and the tracking of
 * the step's distinct ids (sorted, as the commit sees them for large batches) timed
 * alone on a second table of the same rows; medians and quartiles of both. Internal (the
 * static library): the tracking cannot be switched off, so it is timed by itself.
 *
 *   touched-cost [ROWS] [STEPS]          defaults 4000000 40
 */
#include <stdio.h>
#include <stdlib.h>

#include <embtables/embtables.h>

#include "bench_ids.h"
#include "bench_util.h"
#include "tables/table_impl.h"

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const int64_t rows = argc > 1 ? atoll(argv[1]) : 4000000, nnz = 2048 * 20;
    const int steps = argc > 2 ? atoi(argv[2]) : 40, D = 64;
    if (rows < 1 || steps < 4)
        return fprintf(stderr, "usage: touched-cost [ROWS >= 1] [STEPS >= 4]\n"), 2;
    EmbTable *t = NULL, *t2 = NULL;
    EmbOptimizer *o = NULL;
    EmbGrad *g = NULL;
    EmbIndexer *ix = NULL;
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAM, 0.01f);
    int64_t *ids = malloc((size_t)nnz * sizeof *ids), *d = malloc((size_t)nnz * sizeof *d);
    float *vals = malloc((size_t)(nnz * D) * sizeof *vals);
    double *ts = calloc((size_t)steps, sizeof *ts), *tt = calloc((size_t)steps, sizeof *tt);
    if (!ids || !d || !vals || !ts || !tt || emb_table_create(&t, rows, D, EMB_F32, NULL) ||
        emb_table_create(&t2, rows, 1, EMB_F32, NULL) || emb_optimizer_create(&o, &c) ||
        emb_grad_create(&g) || emb_indexer_create(&ix))
        return fprintf(stderr, "touched-cost: %s\n", emb_last_error()), 1;
    for (int64_t k = 0; k < nnz * D; k++)
        vals[k] = 0.001f * (float)(k % 7);
    BenchIdGen gen;
    bench_idgen_init(&gen, BENCH_IDS_ZIPF, rows, 1.05, 3);
    int64_t m = 0;
    for (int s = 0; s < steps; s++) {
        uint64_t z = (uint64_t)s * 1000003u + 1;
        for (int64_t k = 0; k < nnz; k++)
            ids[k] = d[k] = bench_idgen_row(&gen, &z, k);
        const EmbSparseGrad sg = {.ids = ids, .n = nnz, .featuresize = D, .values = vals,
                                  .stride = D};
        double t0 = now();
        if (emb_grad_set_sparse(g, t, &sg) || emb_update(o, t, g, ix, 0))
            return fprintf(stderr, "touched-cost: %s\n", emb_last_error()), 1;
        ts[s] = now() - t0;
        qsort(d, (size_t)nnz, sizeof *d, cmp_i64);
        m = 0;
        for (int64_t k = 0; k < nnz; k++)
            if (m == 0 || d[k] != d[m - 1])
                d[m++] = d[k];
        t0 = now();
        emb__touched_set(t2, d, m);
        tt[s] = now() - t0;
    }
    qsort(ts, (size_t)steps, sizeof *ts, cmp_double);
    qsort(tt, (size_t)steps, sizeof *tt, cmp_double);
    printf("touched-cost: %lld rows x %d, Adam, %lld ids a step (%lld distinct in the last)\n"
           "  update step  median %.3f ms (quartiles %.3f .. %.3f)\n"
           "  tracking     median %.4f ms (quartiles %.4f .. %.4f): %.2f %% of the step\n",
           (long long)rows, D, (long long)nnz, (long long)m, ts[steps / 2] * 1e3,
           ts[steps / 4] * 1e3, ts[3 * steps / 4] * 1e3, tt[steps / 2] * 1e3,
           tt[steps / 4] * 1e3, tt[3 * steps / 4] * 1e3, 100.0 * tt[steps / 2] / ts[steps / 2]);
    emb_table_destroy(&t), emb_table_destroy(&t2), emb_optimizer_destroy(&o);
    emb_grad_destroy(&g), emb_indexer_destroy(&ix);
    free(ids), free(d), free(vals), free(ts), free(tt);
    return 0;
}
