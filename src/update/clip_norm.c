/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clip_norm.c — the global norm of gradient clipping (max_global_norm; clip.c clips each
 * column): Σ over every distinct column of the call of its clipped gradient's Σ g², added
 * exactly into an integer accumulator (EmbNormAcc), so the total is the same bits whatever
 * the order of the columns, threads, splits and partitions; then the global factor.
 * The pass keeps each column's summed gradient (the indexer's sum_rows / sum_grow) when
 * they are fewer than the gradient's source rows (one-hot), which the apply reads as a
 * column of one row of coefficient 1 (plan->summed): a column's rows are read and summed
 * once a step, as without the global norm. Above both clip.c (the
 * clipped Σ g²) and plan.c (a column's summed gradient).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tables/table_impl.h"
#include "update/update_impl.h"

/* Adds the finite, non-negative f32 @x exactly: x = m * 2^(shift - 149) with m < 2^24. */
static void acc_add(EmbNormAcc *a, float x)
{
    if (!isfinite(x)) {
        a->special += (double)x; /* inf + inf = inf, NaN absorbs: any order */
        return;
    }
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    const uint32_t e = (bits >> 23) & 0xffu;
    uint64_t m = bits & 0x7fffffu;
    int shift = 0;
    if (e) {
        m |= 1u << 23;
        shift = (int)e - 1;
    }
    const uint64_t v = m << (shift % 32);
    a->limb[shift / 32] += v & 0xffffffffu;
    a->limb[shift / 32 + 1] += v >> 32;
}

/* Carries propagated: every limb < 2^32 but the last. */
static void acc_normalize(EmbNormAcc *a)
{
    for (int k = 0; k + 1 < EMB_NORM_LIMBS; k++) {
        a->limb[k + 1] += a->limb[k] >> 32;
        a->limb[k] &= 0xffffffffu;
    }
}

/* The gradient rows of a column @d (within [.., d1)) prefetched: a column of one row is
 * read in place (no pool kernel to prefetch ahead), so without this each column waits
 * for its row from DRAM. */
static void prefetch_column(const EmbPlan *plan, int64_t d, int64_t d1)
{
    if (d >= d1)
        return;
    const EmbIndexer *ix = plan->ix;
    const size_t bytes = (size_t)plan->table->featuresize * sizeof(float);
    for (int64_t p = ix->starts[d]; p < ix->starts[d + 1] && p < ix->starts[d] + 4; p++)
        emb__prefetch_rows((const char *)ix->grow[p], bytes);
}

int emb__clip_sums_reserve(EmbPlan *plan)
{
    EmbIndexer *ix = plan->ix;
    const int32_t D = plan->table->featuresize;
    const int64_t need = EMB_MAX(ix->nrows, ix->ndistinct); /* column indices < nrows */
    /* kept when the sums are no more rows than the gradient's source (a bag's output
       gradient, a sparse row): else (multi-hot bags) writing and reading them back costs
       more than summing the source's rows, in cache, again */
    const EmbGrad *g = plan->grad;
    plan->keep_sums = ix->ndistinct <= (g->kind == EMB_GRAD_SPARSE ? g->sparse.n
                                                                     : g->batch.nbags);
    if (!plan->keep_sums || (need <= ix->sum_cap && D <= ix->sum_d))
        return 0;
    const int64_t cap = EMB_MAX(need, ix->sum_cap), d = EMB_MAX(D, ix->sum_d);
    float *rows = emb__aligned_alloc(EMB_ALIGN, (size_t)cap * (size_t)d * sizeof(float));
    const void **grow = malloc((size_t)cap * sizeof *grow);
    int64_t *starts = malloc((size_t)(cap + 1) * sizeof *starts);
    float *coef = malloc((size_t)cap * sizeof *coef);
    if (!rows || !grow || !starts || !coef) {
        emb__aligned_free(rows);
        free(grow);
        free(starts);
        free(coef);
        return emb__fail(EMB_ENOMEM, "out of memory for the global norm's %lld column sums",
                         (long long)cap);
    }
    for (int64_t k = 0; k < cap; k++) {
        starts[k] = k;
        coef[k] = 1.0f;
    }
    starts[cap] = cap;
    emb__aligned_free(ix->sum_rows);
    free(ix->sum_grow);
    free(ix->sum_starts);
    free(ix->sum_coef);
    ix->sum_rows = rows;
    ix->sum_grow = grow;
    ix->sum_starts = starts;
    ix->sum_coef = coef;
    ix->sum_cap = cap;
    ix->sum_d = d;
    return 0;
}

enum { NORM_AHEAD = 16 }; /* columns whose gradient rows are prefetched ahead */

void emb__clip_norm_range(const EmbPlan *plan, int64_t d0, int64_t d1, float *scratch,
                          EmbNormAcc *acc)
{
    if (!plan->clip)
        return;
    EmbIndexer *ix = plan->ix;
    const int32_t D = plan->table->featuresize;
    float *tmp = scratch + D, *row = tmp + D;
    for (int64_t d = d0; d < EMB_MIN(d0 + NORM_AHEAD, d1); d++)
        prefetch_column(plan, d, d1);
    for (int64_t d = d0; d < d1; d++) {
        prefetch_column(plan, d + NORM_AHEAD, d1);
        float *sum = plan->keep_sums ? ix->sum_rows + d * ix->sum_d : scratch;
        const float *g = emb__plan_column_grad(plan, d, sum, tmp);
        if (plan->keep_sums)
            ix->sum_grow[d] = g;
        acc_add(acc, emb__clip_sumsq(plan, g, row, D));
    }
    acc_normalize(acc); /* each call adds < 2^32 terms per limb before this */
}

void emb__norm_acc_merge(EmbNormAcc *dst, const EmbNormAcc *src)
{
    for (int k = 0; k < EMB_NORM_LIMBS; k++)
        dst->limb[k] += src->limb[k];
    dst->special += src->special;
    acc_normalize(dst);
}

float emb__clip_global_scale(const EmbNormAcc *acc, float max_norm)
{
    if (!(max_norm > 0.0f))
        return 1.0f;
    double s = 0.0;
    for (int k = EMB_NORM_LIMBS - 1; k >= 0; k--)
        s = s * 4294967296.0 + (double)acc->limb[k];
    s = ldexp(s, -149);
    if (acc->special != 0.0 || isnan(acc->special))
        s = acc->special;
    const double coef = (double)max_norm / (sqrt(s) + 1e-6);
    return coef < 1.0 || isnan(coef) ? (float)coef : 1.0f;
}
