/*
 * plan.c — the two phases of a table's update step (see update_impl.h): index the
 * gradient, then apply ranges of distinct columns. The apply loop is the hot path: per
 * distinct column it sums the column's gradient rows (in row order) into a scratch row,
 * or uses the row in place when there is one with coefficient 1, and calls one row kernel
 * that reads and writes the column once. Columns (and their state) a few distinct ids
 * ahead are prefetched for writing.
 */
#include <string.h>

#include "lookup/batch.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

#define PREFETCH_AHEAD 8

static void group_sparse(EmbIndexer *ix, const EmbSparseGrad *s)
{
    if (s->id_type == EMB_ID_I64) {
        emb__indexer_group(ix, s->ids, sizeof(int64_t), s->n);
        return;
    }
    const int32_t *ids = (const int32_t *)s->ids;
    for (int64_t k = 0; k < s->n; k++)
        ix->idbuf[k] = ids[k];
    emb__indexer_group(ix, ix->idbuf, sizeof(int64_t), s->n);
}

int emb__plan_index(EmbPlan *plan)
{
    const EmbGrad *g = plan->grad;
    EmbIndexer *ix = plan->ix;
    int r = emb__grad_check(plan->table, g);
    if (r)
        return r;
    const int64_t rows = emb__grad_max_rows(g);
    r = emb__indexer_reserve(ix, rows);
    if (r)
        return r;
    plan->max_norm = false;
    if (g->kind == EMB_GRAD_SPARSE) {
        group_sparse(ix, &g->sparse);
        return 0;
    }
    r = emb__indexer_reserve_entries(ix, rows);
    if (r)
        return r;
    const int64_t n = emb__pullback_entries(plan->table, &g->batch, &g->pooling, ix->entries);
    emb__indexer_group(ix, &ix->entries[0].id, sizeof(EmbPullEntry), n);
    plan->max_norm = emb__pullback_needs_column(&g->pooling) != 0;
    return 0;
}

/* acc (+)= c * x over D elements; first: overwrite. */
static inline void axpy(float *acc, float c, const float *x, int32_t D, bool first)
{
    if (first)
        for (int32_t i = 0; i < D; i++)
            acc[i] = c * x[i];
    else
        for (int32_t i = 0; i < D; i++)
            acc[i] = acc[i] + c * x[i];
}

/* The summed gradient of distinct column @d: a row of the gradient itself or @acc. */
static const float *column_grad(const EmbPlan *plan, int64_t d, float *acc, float *tmp)
{
    const EmbIndexer *ix = plan->ix;
    const EmbGrad *g = plan->grad;
    const int32_t D = plan->table->featuresize;
    const int32_t *rows = ix->order + ix->starts[d];
    const int64_t cnt = ix->counts[d];
    if (g->kind == EMB_GRAD_SPARSE) {
        const float *v = g->sparse.values;
        const int64_t st = g->sparse.stride;
        if (cnt == 1)
            return v + rows[0] * st;
        for (int64_t j = 0; j < cnt; j++)
            axpy(acc, 1.0f, v + rows[j] * st, D, j == 0);
        return acc;
    }
    for (int64_t j = 0; j < cnt; j++) {
        const EmbPullEntry *e = &ix->entries[rows[j]];
        const float *dy = g->dy + e->bag * g->dy_stride;
        if (plan->max_norm) {
            emb__pullback_row(plan->table, &g->pooling, e, dy, tmp);
            axpy(acc, 1.0f, tmp, D, j == 0);
        } else if (cnt == 1 && e->coef == 1.0f) {
            return dy;
        } else {
            axpy(acc, e->coef, dy, D, j == 0);
        }
    }
    return acc;
}

static inline void prefetch_rows(const char *p, size_t bytes)
{
    for (size_t o = 0; o < bytes; o += 64)
        __builtin_prefetch(p + o, 1, 3);
}

static void prefetch(const EmbPlan *plan, int64_t d)
{
    const EmbTable *t = plan->table;
    const int64_t id = plan->ix->ids[d];
    if (t->data)
        prefetch_rows(t->data + (size_t)id * t->stride, (size_t)t->featuresize * t->elsize);
    if (plan->state)
        prefetch_rows(plan->state->data + (size_t)id * plan->state->stride,
                      (size_t)plan->state->featuresize * sizeof(float));
}

void emb__plan_apply(const EmbPlan *plan, int64_t d0, int64_t d1, float *scratch)
{
    EmbTable *t = plan->table;
    const EmbIndexer *ix = plan->ix;
    const int32_t D = t->featuresize;
    float *acc = scratch, *tmp = scratch + D;
    for (int64_t d = d0; d < EMB_MIN(d1, d0 + PREFETCH_AHEAD); d++)
        prefetch(plan, d);
    for (int64_t d = d0; d < d1; d++) {
        if (d + PREFETCH_AHEAD < d1)
            prefetch(plan, d + PREFETCH_AHEAD);
        const float *g = column_grad(plan, d, acc, tmp);
        const int64_t id = ix->ids[d];
        void *col = emb__column(t, id, EMB_CTX_UPDATE);
        if (plan->sgd)
            plan->sgd(col, g, plan->params.lr, D);
        else
            plan->row(col, (float *)emb__column(plan->state, id, EMB_CTX_UPDATE), g,
                      &plan->params, D);
    }
}

int64_t emb__plan_split(const EmbPlan *plan, int64_t split, int64_t nsplits)
{
    const EmbIndexer *ix = plan->ix;
    if (split <= 0)
        return 0;
    if (split >= nsplits)
        return ix->ndistinct;
    /* first d with starts[d] >= rows * split / nsplits */
    const int64_t target = (int64_t)((double)ix->nrows * (double)split / (double)nsplits);
    int64_t lo = 0, hi = ix->ndistinct;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (ix->starts[mid] >= target)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}
