/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * column.h — a distinct column of an update plan, as every apply loop reads it: its summed
 * gradient (in row order) and the prefetch of its row and state row. Inline, for plan.c's
 * loops and lowp.c's 16-bit loop alike (neither file calls the other for it).
 */
#ifndef EMB_UPDATE_COLUMN_H
#define EMB_UPDATE_COLUMN_H

#include "lookup/batch.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

#define POOL_AHEAD 8 /* gradient rows the pool kernel may prefetch ahead */

/* acc (+)= c * x over D elements; first: overwrite. */
static inline void column_axpy(float *acc, float c, const float *x, int32_t D, bool first)
{
    if (first)
        for (int32_t i = 0; i < D; i++)
            acc[i] = c * x[i];
    else
        for (int32_t i = 0; i < D; i++)
            acc[i] = acc[i] + c * x[i];
}

/* The max_norm (or MAX pooling) row of group position @pos: emb__pullback_row of its
   entry, rebuilt. */
static inline void column_clipped_row(const EmbPlan *plan, int64_t d, int64_t pos, float *tmp)
{
    const EmbGrad *g = plan->grad;
    const EmbIndexer *ix = plan->ix;
    const float *dy = ix->grow[pos];
    const EmbPullEntry e = {ix->ids[d], (dy - g->dy) / g->dy_stride, ix->gcoef[pos], 0};
    const int64_t *maxid = plan->maxid ? plan->maxid + e.bag * plan->table->featuresize : NULL;
    emb__pullback_row(plan->table, &g->pooling, &e, dy, maxid, tmp);
}

/* The summed gradient of distinct column @d: a row of the gradient itself (or the global
 * norm's kept sum) or @acc. Inline, so that the apply loops inline it;
 * emb__plan_column_grad (plan.c) is its exported form. */
static inline const float *emb__column_grad(const EmbPlan *plan, int64_t d, float *acc, float *tmp)
{
    const EmbIndexer *ix = plan->ix;
    if (plan->summed)
        return ix->sum_grow[d];
    const int32_t D = plan->table->featuresize;
    const int64_t p0 = ix->starts[d], p1 = ix->starts[d + 1];
    if (plan->max_norm) {
        for (int64_t p = p0; p < p1; p++) {
            column_clipped_row(plan, d, p, tmp);
            column_axpy(acc, 1.0f, tmp, D, p == p0);
        }
        return acc;
    }
    if (p1 - p0 == 1 && ix->gcoef[p0] == 1.0f)
        return ix->grow[p0];
    const int64_t ahead = EMB_MIN(POOL_AHEAD, ix->nrows - p1);
    plan->pool(acc, ix->grow + p0, ix->gcoef + p0, p1 - p0, ahead, D, 0);
    return acc;
}

/* The column (and state row) of distinct id @d prefetched (@rb, @sb: their bytes; 0: no
   state row), as the apply loops prefetch them. */
static inline void emb__column_prefetch(const EmbPlan *plan, int64_t d, size_t rb, size_t sb)
{
    const int64_t id = plan->ix->ids[d];
    emb__prefetch_rows(plan->table->data + (size_t)id * plan->table->stride, rb);
    if (sb)
        emb__prefetch_rows(plan->state->data + (size_t)id * plan->state->stride, sb);
}

#endif
