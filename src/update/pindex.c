/*
 * pindex.c — the index phase of one table on several threads (see update_impl.h).
 *
 * Rows are cut into nparts chunks (bag ranges for a pullback, row ranges for a sparse
 * gradient) and ids into nparts partitions by a hash. A chunk task expands its rows and
 * counts them per partition; the counts give, partition-major and chunk-minor, where each
 * row goes, so the scatter keeps the rows of a partition in row order. A partition task
 * then groups its rows with its own hash region, writing its distinct ids at its row
 * offset; the serial finish closes the gaps between partitions. A partition's hash region
 * is sized by its own rows: it stays in cache where one table-wide hash would not.
 */
#include <string.h>

#include "lookup/batch.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

/* Partition of @id among @np (multiply-shift on bits the hash of a slot does not use). */
static inline int part_of(int64_t id, int np)
{
    const uint64_t h = ((uint64_t)id * 0xff51afd7ed558ccdull) >> 32;
    return (int)((h * (uint64_t)np) >> 32);
}

static inline int64_t sparse_id(const EmbSparseGrad *s, int64_t k)
{
    return s->id_type == EMB_ID_I32 ? ((const int32_t *)s->ids)[k]
                                    : ((const int64_t *)s->ids)[k];
}

int emb__pindex_prepare(EmbPlan *plan, int nparts)
{
    const int r = emb__plan_prepare(plan);
    plan->nparts = EMB_MAX(1, EMB_MIN(nparts, EMB_MAX_PARTS));
    return r;
}

/* Bags [b0, b1) of @b as a batch of its own (ids, weights and offsets stay absolute). */
static EmbBatch sub_batch(const EmbBatch *b, int64_t b0, int64_t b1)
{
    EmbBatch s = *b;
    s.nbags = b1 - b0;
    if (b->offsets) {
        s.offsets = b->offsets + b0;
        return s;
    }
    const size_t esz = b->id_type == EMB_ID_I32 ? 4 : 8;
    s.ids = (const char *)b->ids + (size_t)(b0 * b->bag_size) * esz;
    if (b->weights)
        s.weights = b->weights + b0 * b->bag_size;
    s.nnz = s.nbags * b->bag_size;
    return s;
}

/* Chunk c of a pullback: its entries (bags made absolute) and counts per partition. */
static void chunk_pullback(EmbPlan *plan, int c, int64_t *cnt)
{
    const EmbGrad *g = plan->grad;
    EmbIndexer *ix = plan->ix;
    const int np = plan->nparts;
    const int64_t b0 = g->batch.nbags * c / np, b1 = g->batch.nbags * (c + 1) / np;
    const EmbBatch sub = sub_batch(&g->batch, b0, b1);
    /* bags before b0 produce at most one entry per id or one default entry each */
    const int64_t e0 = emb__bag_start(&g->batch, b0) + b0;
    EmbPullEntry *e = ix->entries + e0;
    const int64_t n = emb__pullback_entries(plan->table, &sub, &g->pooling, e);
    for (int64_t k = 0; k < n; k++) {
        e[k].bag += b0;
        cnt[part_of(e[k].id, np)]++;
    }
    ix->pent0[c] = e0;
    ix->pentn[c] = n;
}

void emb__pindex_chunk(EmbPlan *plan, int c)
{
    EmbIndexer *ix = plan->ix;
    const int np = plan->nparts;
    int64_t *cnt = ix->pcnt + (size_t)c * (size_t)np;
    memset(cnt, 0, (size_t)np * sizeof *cnt);
    if (plan->grad->kind == EMB_GRAD_PULLBACK) {
        chunk_pullback(plan, c, cnt);
        return;
    }
    const EmbSparseGrad *s = &plan->grad->sparse;
    const int64_t k0 = s->n * c / np, k1 = s->n * (c + 1) / np;
    for (int64_t k = k0; k < k1; k++)
        cnt[part_of(sparse_id(s, k), np)]++;
}

int emb__pindex_offsets(EmbPlan *plan)
{
    EmbIndexer *ix = plan->ix;
    const int np = plan->nparts;
    int64_t pos = 0, slots = 0;
    for (int p = 0; p < np; p++) {
        ix->part_start[p] = pos;
        ix->slot_start[p] = slots;
        for (int c = 0; c < np; c++) {
            int64_t *cnt = &ix->pcnt[(size_t)c * (size_t)np + (size_t)p];
            const int64_t n = *cnt;
            *cnt = pos; /* the count becomes chunk c's first position in partition p */
            pos += n;
        }
        slots += emb__indexer_hash_size(pos - ix->part_start[p]);
    }
    ix->part_start[np] = pos;
    ix->slot_start[np] = slots;
    ix->nrows = pos;
    const int r = emb__indexer_reserve_slots(ix, slots);
    if (!r)
        emb__indexer_next_generation(ix);
    return r;
}

static inline void place(EmbIndexer *ix, int64_t *off, int np, int64_t id, const void *row,
                         float coef)
{
    const int64_t pos = off[part_of(id, np)]++;
    ix->pid[pos] = id;
    ix->prow[pos] = row;
    ix->pcoef[pos] = coef;
}

void emb__pindex_scatter(EmbPlan *plan, int c)
{
    EmbIndexer *ix = plan->ix;
    const EmbGrad *g = plan->grad;
    const int np = plan->nparts;
    int64_t *off = ix->pcnt + (size_t)c * (size_t)np;
    if (g->kind == EMB_GRAD_PULLBACK) {
        const EmbPullEntry *e = ix->entries + ix->pent0[c];
        for (int64_t k = 0; k < ix->pentn[c]; k++)
            place(ix, off, np, e[k].id, g->dy + e[k].bag * g->dy_stride, e[k].coef);
        return;
    }
    const EmbSparseGrad *s = &g->sparse;
    const int64_t k0 = s->n * c / np, k1 = s->n * (c + 1) / np;
    for (int64_t k = k0; k < k1; k++)
        place(ix, off, np, sparse_id(s, k), s->values + k * s->stride, 1.0f);
}

void emb__pindex_group(EmbPlan *plan, int p)
{
    EmbIndexer *ix = plan->ix;
    const int64_t r0 = ix->part_start[p], n = ix->part_start[p + 1] - r0;
    const int64_t s0 = ix->slot_start[p];
    ix->pdist[p] = emb__indexer_group_at(ix, ix->pid + r0, sizeof(int64_t), n, s0,
                                         ix->slot_start[p + 1] - s0, r0);
    for (int64_t k = 0; k < n; k++) {
        const int64_t pos = ix->cursor[r0 + ix->row_dist[r0 + k]]++;
        ix->grow[pos] = ix->prow[r0 + k];
        ix->gcoef[pos] = ix->pcoef[r0 + k];
    }
}

void emb__pindex_finish(EmbPlan *plan)
{
    EmbIndexer *ix = plan->ix;
    int64_t nd = 0;
    for (int p = 0; p < plan->nparts; p++) {
        const int64_t r0 = ix->part_start[p], m = ix->pdist[p];
        memmove(ix->ids + nd, ix->ids + r0, (size_t)m * sizeof *ix->ids);
        memmove(ix->counts + nd, ix->counts + r0, (size_t)m * sizeof *ix->counts);
        memmove(ix->starts + nd, ix->starts + r0, (size_t)m * sizeof *ix->starts);
        nd += m;
    }
    ix->ndistinct = nd;
    ix->starts[nd] = ix->nrows;
}
