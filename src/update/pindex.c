/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pindex.c — the index phase of one table on several threads (see update_impl.h).
 *
 * Rows are cut into nparts chunks (bag ranges for a pullback, row ranges for a sparse
 * gradient) and ids into nparts partitions by a hash. A chunk task checks its ids, expands
 * its rows and sorts them by partition within its own range (a counting sort, while they
 * are in its cache), so each partition has one segment per chunk, in row order. A
 * partition task then groups its segments, chunk after chunk, with its own hash region,
 * writing its distinct ids at its row offset; the apply tasks then work on each
 * partition's list in place and copy the ids they applied to the compacted result, so the
 * serial part of the phase is O(nparts^2) whatever the batch, and the phase synchronises
 * its threads twice. A partition's hash region is sized by its own rows: it stays in cache
 * where one table-wide hash would not.
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
    const int r = emb__plan_prepare_ex(plan, false);
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

/* Chunk c's counts per partition into its segments' starts, from @first on. */
static void counts_to_starts(int64_t *seg, int np, int64_t first)
{
    for (int p = 0; p < np; p++) {
        const int64_t n = seg[p];
        seg[p] = first;
        first += n;
    }
}

/* Row @pos of the partition-sorted rows. */
static inline void put(EmbIndexer *ix, int64_t pos, int64_t id, const void *row, float coef)
{
    ix->pid[pos] = id;
    ix->prow[pos] = row;
    ix->pcoef[pos] = coef;
}

/* Chunk c of a pullback: its entries (bags made absolute), sorted by partition. */
static void chunk_pullback(EmbPlan *plan, int c, int64_t *seg)
{
    const EmbGrad *g = plan->grad;
    EmbIndexer *ix = plan->ix;
    const int np = plan->nparts;
    const int64_t b0 = g->batch.nbags * c / np, b1 = g->batch.nbags * (c + 1) / np;
    const EmbBatch sub = sub_batch(&g->batch, b0, b1);
    /* bags before b0 produce at most one entry per id or one default entry each */
    const int64_t e0 = emb__bag_start(&g->batch, b0) + b0;
    EmbPullEntry *e = ix->entries + e0;
    ix->pent0[c] = e0;
    ix->pentn[c] = 0;
    ix->prc[c] = emb__grad_check_ids(plan->table, g, emb__bag_start(&g->batch, b0),
                                     emb__bag_start(&g->batch, b1));
    if (ix->prc[c])
        return;
    const int64_t n = emb__pullback_entries(plan->table, &sub, &g->pooling, e);
    int64_t off[EMB_MAX_PARTS] = {0}; /* counted here: the chunks' rows of pseg share lines */
    for (int64_t k = 0; k < n; k++) {
        e[k].bag += b0;
        off[part_of(e[k].id, np)]++;
    }
    ix->pentn[c] = n;
    counts_to_starts(off, np, e0);
    memcpy(seg, off, (size_t)np * sizeof *seg);
    for (int64_t k = 0; k < n; k++)
        put(ix, off[part_of(e[k].id, np)]++, e[k].id, g->dy + e[k].bag * g->dy_stride,
            e[k].coef);
}

/* Chunk c of a sparse gradient: its rows, sorted by partition. */
static void chunk_sparse(EmbPlan *plan, int c, int64_t *seg)
{
    EmbIndexer *ix = plan->ix;
    const EmbSparseGrad *s = &plan->grad->sparse;
    const int np = plan->nparts;
    const int64_t k0 = s->n * c / np, k1 = s->n * (c + 1) / np;
    ix->pent0[c] = k0;
    ix->pentn[c] = 0;
    ix->prc[c] = emb__grad_check_ids(plan->table, plan->grad, k0, k1);
    if (ix->prc[c])
        return;
    int64_t off[EMB_MAX_PARTS] = {0}; /* counted here: the chunks' rows of pseg share lines */
    for (int64_t k = k0; k < k1; k++)
        off[part_of(sparse_id(s, k), np)]++;
    ix->pentn[c] = k1 - k0;
    counts_to_starts(off, np, k0);
    memcpy(seg, off, (size_t)np * sizeof *seg);
    for (int64_t k = k0; k < k1; k++) {
        const int64_t id = sparse_id(s, k);
        put(ix, off[part_of(id, np)]++, id, s->values + k * s->stride, 1.0f);
    }
}

int emb__pindex_checked(EmbPlan *plan)
{
    const EmbIndexer *ix = plan->ix;
    for (int c = 0; c < plan->nparts; c++)
        if (ix->prc[c]) {
            const int r = emb__grad_check(plan->table, plan->grad);
            return r ? r : ix->prc[c];
        }
    return 0;
}

void emb__pindex_chunk(EmbPlan *plan, int c)
{
    EmbIndexer *ix = plan->ix;
    const int np = plan->nparts;
    int64_t *seg = ix->pseg + (size_t)c * (size_t)np;
    memset(seg, 0, (size_t)np * sizeof *seg);
    if (plan->grad->kind == EMB_GRAD_PULLBACK)
        chunk_pullback(plan, c, seg);
    else
        chunk_sparse(plan, c, seg);
}

/* Chunk c's segment of partition p (after the chunk ran). */
static EmbSeg segment(const EmbIndexer *ix, int np, int c, int p)
{
    const int64_t *seg = ix->pseg + (size_t)c * (size_t)np;
    const int64_t end = p + 1 < np ? seg[p + 1] : ix->pent0[c] + ix->pentn[c];
    return (EmbSeg){seg[p], end - seg[p]};
}

int emb__pindex_offsets(EmbPlan *plan)
{
    EmbIndexer *ix = plan->ix;
    const int np = plan->nparts;
    int64_t pos = 0, slots = 0;
    for (int p = 0; p < np; p++) {
        ix->part_start[p] = pos;
        ix->slot_start[p] = slots;
        for (int c = 0; c < np; c++)
            pos += segment(ix, np, c, p).n;
        slots += emb__indexer_hash_size(pos - ix->part_start[p]);
    }
    ix->part_start[np] = pos;
    ix->slot_start[np] = slots;
    ix->nrows = pos;
    ix->starts[pos] = pos; /* the end of the last non-empty partition's last id */
    const int r = emb__indexer_reserve_slots(ix, slots);
    ix->hslots = 0; /* no whole-table region to search */
    if (!r)
        emb__indexer_next_generation(ix);
    return r;
}

void emb__pindex_group(EmbPlan *plan, int p)
{
    EmbIndexer *ix = plan->ix;
    const int np = plan->nparts;
    const int64_t r0 = ix->part_start[p], n = ix->part_start[p + 1] - r0;
    const int64_t s0 = ix->slot_start[p];
    EmbSeg segs[EMB_MAX_PARTS];
    for (int c = 0; c < np; c++)
        segs[c] = segment(ix, np, c, p);
    const int64_t m = emb__indexer_group_at(ix, ix->pid, sizeof(int64_t), segs, np, s0,
                                            ix->slot_start[p + 1] - s0, r0);
    ix->pdist[p] = m;
    /* where the last id's rows end: in the partition's own room when it has fewer ids than
       rows; else starts[r0 + n] is the next non-empty partition's first start (its
       part_start, written by its task) or starts[nrows] (emb__pindex_offsets) */
    if (m < n)
        ix->starts[r0 + m] = r0 + n;
    const int32_t *dist = ix->row_dist + r0;
    for (int c = 0; c < np; c++)
        for (int64_t q = segs[c].start; q < segs[c].start + segs[c].n; q++) {
            const int64_t pos = ix->cursor[r0 + *dist++]++;
            ix->grow[pos] = ix->prow[q];
            ix->gcoef[pos] = ix->pcoef[q];
        }
}

void emb__pindex_finish(EmbPlan *plan)
{
    EmbIndexer *ix = plan->ix;
    int64_t nd = 0;
    for (int p = 0; p < plan->nparts; p++) {
        ix->pout[p] = nd;
        nd += ix->pdist[p];
    }
    ix->ndistinct = nd;
    ix->res_ids = ix->idbuf; /* filled by emb__pindex_compact */
    ix->res_counts = ix->cursor;
}

void emb__pindex_apply_range(const EmbPlan *plan, int p, int64_t s, int64_t a, int64_t *d0,
                             int64_t *d1)
{
    const EmbIndexer *ix = plan->ix;
    const bool one = plan->nparts <= 1;
    const int64_t r0 = one ? 0 : ix->part_start[p], r1 = one ? ix->nrows : ix->part_start[p + 1];
    const int64_t m = one ? ix->ndistinct : ix->pdist[p];
    int64_t lim[2];
    for (int k = 0; k < 2; k++) {
        if (s + k <= 0 || s + k >= a) {
            lim[k] = s + k <= 0 ? r0 : r0 + m;
            continue;
        }
        /* the first distinct index whose rows start at or after the split's first row */
        const int64_t target = r0 + (int64_t)((double)(r1 - r0) * (double)(s + k) / (double)a);
        int64_t lo = r0, hi = r0 + m;
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (ix->starts[mid] >= target)
                hi = mid;
            else
                lo = mid + 1;
        }
        lim[k] = lo;
    }
    *d0 = lim[0];
    *d1 = lim[1];
}

void emb__pindex_compact(const EmbPlan *plan, int p, int64_t d0, int64_t d1)
{
    EmbIndexer *ix = plan->ix;
    if (plan->nparts <= 1 || d0 >= d1)
        return;
    const int64_t dst = ix->pout[p] + (d0 - ix->part_start[p]);
    memcpy(ix->idbuf + dst, ix->ids + d0, (size_t)(d1 - d0) * sizeof *ix->ids);
    memcpy(ix->cursor + dst, ix->counts + d0, (size_t)(d1 - d0) * sizeof *ix->counts);
}
