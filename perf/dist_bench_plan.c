/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist_bench_plan.c — dist-bench's plan side: the distinct ids per step the planner is
 * given (measured on the benchmark's own first batch) and --show-plan, the planner's
 * placement of the ensemble for 2, 4 and 8 ranks beside the fixed plans'.
 */
#include "dist_bench_plan.h"

#include <stdio.h>
#include <stdlib.h>

#include "bench_ids.h"

#include <embtables/embtables.h>

static int cmp_id(const void *x, const void *y)
{
    const int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

int dist_bench_describe(EmbDistTableDesc *desc, int ntables, int P, int64_t nnz, double zipf)
{
    int64_t *ids = malloc(sizeof(int64_t) * (size_t)(nnz * ntables * P));
    if (!ids)
        return EMB_ENOMEM;
    for (int q = 0; q < P; q++) { /* as main() draws the first step's batches on rank q */
        uint64_t seed = 1234 + (uint64_t)q;
        for (int t = 0; t < ntables; t++) {
            BenchIdGen g;
            bench_idgen_init(&g, zipf > 0 ? BENCH_IDS_ZIPF : BENCH_IDS_UNIFORM, desc[t].nrows,
                             zipf, (uint64_t)t);
            for (int64_t k = 0; k < nnz; k++)
                ids[((int64_t)t * P + q) * nnz + k] = bench_idgen_row(&g, &seed, k);
        }
    }
    for (int t = 0; t < ntables; t++) {
        int64_t *v = ids + (int64_t)t * P * nnz, n = 0;
        qsort(v, (size_t)(P * nnz), sizeof *v, cmp_id);
        for (int64_t k = 0; k < P * nnz; k++)
            n += k == 0 || v[k] != v[k - 1];
        desc[t].lookups = (double)(P * nnz);
        desc[t].distinct = (double)n;
    }
    free(ids);
    return 0;
}

static const char *kind_name(EmbDistKind k)
{
    return k == EMB_DIST_TABLEWISE ? "table-wise on rank" : k == EMB_DIST_ROWWISE ? "row-wise"
           : k == EMB_DIST_COLUMNWISE ? "column-wise" : "replicated";
}

/* Max / mean of @p n loads. */
static double imbalance(const double *load, int n)
{
    double mx = 0, sum = 0;
    for (int k = 0; k < n; k++)
        mx = load[k] > mx ? load[k] : mx, sum += load[k];
    return sum > 0 ? mx * n / sum : 1.0;
}

static void print_placement(const EmbDistTableDesc *t, int i, const EmbDistPlacement *p, int P)
{
    printf("  table %2d  %9lld rows  D %4d  %s", i, (long long)t->nrows, (int)t->featuresize,
           kind_name(p->kind));
    if (p->kind == EMB_DIST_TABLEWISE)
        printf(" %d\n", (int)p->rank);
    else if (p->kind == EMB_DIST_ROWWISE || p->kind == EMB_DIST_COLUMNWISE)
        printf(" on ranks %d..%d\n", p->nshards ? (int)p->rank : 0,
               (int)(p->nshards ? p->rank + p->nshards - 1 : P - 1));
    else
        printf("\n");
}

int dist_bench_show_plan(EmbDistTableDesc *desc, int ntables, int batch, int64_t nnz,
                         double zipf)
{
    static const int ranks[3] = {2, 4, 8};
    static const EmbDistPlan plans[3] = {EMB_DIST_PLAN_AUTO, EMB_DIST_PLAN_TABLEWISE,
                                         EMB_DIST_PLAN_ROWWISE};
    static const char *const pname[3] = {"auto", "table", "row"};
    EmbDistPlacement pl[26];
    double load[8];
    int64_t bytes[8];
    for (int k = 0; k < 3; k++) {
        const int P = ranks[k];
        int r = dist_bench_describe(desc, ntables, P, nnz, zipf);
        const EmbDistPlaceOptions po = {.batch = (int64_t)batch * P};
        for (int j = 0; j < 3 && !r; j++) {
            EmbDistPlaceOptions o = po;
            o.plan = plans[j];
            r = emb_dist_place(desc, ntables, P, &o, pl);
            if (!r)
                r = emb_dist_plan_cost(desc, ntables, P, &o, pl, load, bytes);
            if (r)
                break;
            printf("%d ranks, %s plan: modelled step per rank (ms):", P,
                   j == 0 ? "auto" : j == 1 ? "table-wise" : "row-wise");
            for (int q = 0; q < P; q++)
                printf(" %.3f", 1e3 * load[q]);
            printf("  max/mean %.3f\n", imbalance(load, P));
            double mx = 0, mb = 0;
            for (int q = 0; q < P; q++)
                mx = load[q] > mx ? load[q] : mx, mb = bytes[q] > mb ? (double)bytes[q] : mb;
            printf("RESULT_PLAN ranks=%d plan=%s max_over_mean=%.4f max_ms=%.4f "
                   "max_rank_mib=%.1f\n", P, pname[j], imbalance(load, P), 1e3 * mx,
                   mb / 1048576.0);
            for (int t = 0; j == 0 && t < ntables; t++)
                print_placement(&desc[t], t, &pl[t], P);
        }
        if (r) {
            fprintf(stderr, "plan: %s\n", r == EMB_ENOMEM ? "out of memory" : emb_last_error());
            return r;
        }
    }
    return 0;
}
