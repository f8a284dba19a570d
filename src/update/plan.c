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

#define PREFETCH_AHEAD 16 /* distinct columns prefetched ahead */
#define POOL_AHEAD 8      /* gradient rows the pool kernel may prefetch ahead */

/* Counting-sort scatter of a sparse gradient's rows into the indexer's groups. */
static void scatter_sparse(EmbIndexer *ix, const EmbSparseGrad *s)
{
    for (int64_t k = 0; k < s->n; k++) {
        const int64_t pos = ix->cursor[ix->row_dist[k]]++;
        ix->grow[pos] = s->values + k * s->stride;
        ix->gcoef[pos] = 1.0f;
    }
}

static void group_sparse(EmbIndexer *ix, const EmbSparseGrad *s)
{
    if (s->id_type == EMB_ID_I64) {
        emb__indexer_group(ix, s->ids, sizeof(int64_t), s->n);
    } else {
        const int32_t *ids = (const int32_t *)s->ids;
        for (int64_t k = 0; k < s->n; k++)
            ix->idbuf[k] = ids[k];
        emb__indexer_group(ix, ix->idbuf, sizeof(int64_t), s->n);
    }
    scatter_sparse(ix, s);
}

/* Pullback entries, grouped: each entry's output-gradient row and coefficient. */
static void group_pullback(EmbIndexer *ix, const EmbTable *t, const EmbGrad *g)
{
    const int64_t n = emb__pullback_entries(t, &g->batch, &g->pooling, ix->entries);
    emb__indexer_group(ix, &ix->entries[0].id, sizeof(EmbPullEntry), n);
    for (int64_t k = 0; k < n; k++) {
        const EmbPullEntry *e = &ix->entries[k];
        const int64_t pos = ix->cursor[ix->row_dist[k]]++;
        ix->grow[pos] = g->dy + e->bag * g->dy_stride;
        ix->gcoef[pos] = e->coef;
    }
}

int emb__plan_prepare(EmbPlan *plan)
{
    const EmbGrad *g = plan->grad;
    int r = emb__grad_check(plan->table, g);
    if (r)
        return r;
    const int64_t rows = emb__grad_max_rows(g);
    r = emb__indexer_reserve(plan->ix, rows);
    if (!r && g->kind == EMB_GRAD_PULLBACK)
        r = emb__indexer_reserve_entries(plan->ix, EMB_MAX(rows, 1));
    plan->max_norm = g->kind == EMB_GRAD_PULLBACK && emb__pullback_needs_column(&g->pooling);
    plan->nparts = 1;
    return r;
}

int emb__plan_index(EmbPlan *plan)
{
    const int r = emb__plan_prepare(plan);
    if (r)
        return r;
    if (plan->grad->kind == EMB_GRAD_SPARSE)
        group_sparse(plan->ix, &plan->grad->sparse);
    else
        group_pullback(plan->ix, plan->table, plan->grad);
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

/* The max_norm row of group position @pos: emb__pullback_row of its entry, rebuilt. */
static void clipped_row(const EmbPlan *plan, int64_t d, int64_t pos, float *tmp)
{
    const EmbGrad *g = plan->grad;
    const EmbIndexer *ix = plan->ix;
    const float *dy = ix->grow[pos];
    const EmbPullEntry e = {ix->ids[d], (dy - g->dy) / g->dy_stride, ix->gcoef[pos]};
    emb__pullback_row(plan->table, &g->pooling, &e, dy, tmp);
}

/* The summed gradient of distinct column @d: a row of the gradient itself or @acc. */
static const float *column_grad(const EmbPlan *plan, int64_t d, float *acc, float *tmp)
{
    const EmbIndexer *ix = plan->ix;
    const int32_t D = plan->table->featuresize;
    const int64_t p0 = ix->starts[d], p1 = ix->starts[d + 1];
    if (plan->max_norm) {
        for (int64_t p = p0; p < p1; p++) {
            clipped_row(plan, d, p, tmp);
            axpy(acc, 1.0f, tmp, D, p == p0);
        }
        return acc;
    }
    if (p1 - p0 == 1 && ix->gcoef[p0] == 1.0f)
        return ix->grow[p0];
    const int64_t ahead = EMB_MIN(POOL_AHEAD, ix->nrows - p1);
    plan->pool(acc, ix->grow + p0, ix->gcoef + p0, p1 - p0, ahead, D, 0);
    return acc;
}

/* Into L2 (prefetcht1): on this EPYC, 16 columns ahead into L1 stalls on fill buffers and
 * runs the update 1.4x slower. The asm form because GCC 12 at -O3 drops __builtin_prefetch
 * in this loop nest (kept with -fno-aggressive-loop-optimizations). */
static inline void prefetch_line(const char *p)
{
#if EMB_ARCH_X86 && defined(__GNUC__)
    __asm__ volatile("prefetcht1 %0" : : "m"(*p));
#else
    __builtin_prefetch(p, 0, 2);
#endif
}

static inline void prefetch_rows(const char *p, size_t bytes)
{
    for (size_t o = 0; o < bytes; o += 64)
        prefetch_line(p + o);
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
