/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pindex.c — the index phase of one table on several threads (see update_impl.h).
 *
 * Rows are cut into nparts chunks (bag ranges for a pullback, row ranges for a sparse
 * gradient) and ids into nparts partitions by a hash. A chunk task checks its ids, expands
 * its rows and sorts them by partition within its own range (a counting sort, while they
 * are in its cache), so each partition has one segment per chunk, in row order. A
 * partition task then groups its segments, writing its distinct ids at its row offset:
 * when most of its ids are distinct, by a stable radix sort on their id (a table of
 * columns: ids ascending) or their hash (keyed ids: in the order of their hash;
 * group_sorted), else chunk after chunk with its own hash region (ids in
 * order of first appearance). The apply tasks then work on each partition's list in place
 * and copy the ids they applied to the compacted result, so the serial part of the phase
 * is O(nparts^2) whatever the batch, and the phase synchronises its threads twice. A
 * partition's hash region is sized by its own rows: it stays in cache where one
 * table-wide hash would not.
 */
#include <math.h>
#include <stdbool.h>
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
    return emb__plan_max_prepare(plan); /* the ids are checked: MAX's routing reads rows */
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

/* The most distinct ids a run of equal keys may mix before the hash takes the partition. */
#define MAX_MIXED 8

/* Distinct id @id's rows of the run [k, e) of sorted rows @a (low 32 bits: the row's
 * position in pid / prow / pcoef), in order, from row @pos of the grouping on; the rows
 * taken marked UINT64_MAX (never a row: keys < 2^32, positions < 2^31). Returns the count. */
static int64_t take_id(EmbIndexer *ix, uint64_t *a, int64_t k, int64_t e, int64_t id,
                       int64_t pos)
{
    int64_t c = 0;
    for (int64_t j = k; j < e; j++) {
        const uint32_t q = (uint32_t)a[j];
        if (a[j] == UINT64_MAX || ix->pid[q] != id)
            continue;
        ix->grow[pos + c] = ix->prow[q];
        ix->gcoef[pos + c] = ix->pcoef[q];
        a[j] = UINT64_MAX;
        c++;
    }
    return c;
}

/* The sort pays when at least this fraction of a partition's rows are distinct ids: it
 * costs the same per row whatever the ids, the hash about 3x more for a new id (a slot
 * missed, a collision mispredicted) than for one seen. Measured at 2 threads, bags of 20,
 * the two groupings on alternate steps of one run (TSC cycles a row, 2 runs each): a
 * 1M x 64 table with uniform ids (98 % distinct) 19.5-23 sorted against 32-33 hashed,
 * Zipf(1.05) 25.2-25.3 against 25.4-25.7; where this test sends rows to the hash, Zipf(1.5)
 * 10.2-11.9 against 9.7-11.3 (the test's cost), a 10K-row table (uniform, 24 % distinct)
 * 15.4-17.1 against 12.6-16.1. */
#define SORT_MIN_DISTINCT 0.3
#define SORT_SAMPLE 1024 /* rows after which mostly_distinct may give up early */
#define SORT_AHEAD 16    /* sorted rows whose id, row and coefficient are prefetched */

/* The top @kb bits of @id's hash: the sort's key. */
static inline uint64_t key_of(int64_t id, int kb)
{
    return (uint64_t)id * 0x9e3779b97f4a7c15ull >> (64 - kb);
}

/* Whether at least SORT_MIN_DISTINCT of the rows of @segs have distinct keys, estimated by
 * linear counting in @bits (2^kb bits, kb <= log2(4n): n / 2 bytes at most), before
 * anything is sorted: a pass that reads the ids and sets bits in a bitmap in L1 / L2. It
 * stops after SORT_SAMPLE rows when fewer of those were distinct (the fraction only falls
 * as rows come: the cost of the test stays small where the hash is cheap). */
static bool mostly_distinct(const EmbIndexer *ix, const EmbSeg *segs, int np, int64_t n,
                            int kb, uint64_t *bits)
{
    const int64_t m = (int64_t)1 << kb;
    memset(bits, 0, (size_t)((m + 63) / 64) * sizeof *bits);
    int64_t ones = 0, k = 0;
    for (int c = 0; c < np; c++)
        for (int64_t q = segs[c].start; q < segs[c].start + segs[c].n; q++, k++) {
            if (k == SORT_SAMPLE && ones < SORT_MIN_DISTINCT * SORT_SAMPLE)
                return false;
            const uint64_t key = key_of(ix->pid[q], kb), bit = 1ull << (key % 64);
            ones += (bits[key / 64] & bit) == 0;
            bits[key / 64] |= bit;
        }
    const double distinct = ones >= m ? (double)m : -(double)m * log1p(-(double)ones / (double)m);
    return distinct >= SORT_MIN_DISTINCT * (double)n;
}

/* The rows of @segs sorted stably by their key (the id, or key_of its hash) in @a, @b as
 * scratch: the sorted array (@a or @b). */
static uint64_t *sort_rows(const EmbIndexer *ix, const EmbSeg *segs, int np, int kb,
                           bool by_id, uint64_t *a, uint64_t *b)
{
    int64_t k = 0;
    for (int c = 0; c < np; c++)
        for (int64_t q = segs[c].start; q < segs[c].start + segs[c].n; q++, k++) {
            if (q % 8 == 0) { /* into this core's cache in order: the scan reads at random */
                __builtin_prefetch(&ix->prow[q]);
                __builtin_prefetch(&ix->pcoef[q]);
            }
            const uint64_t key = by_id ? (uint64_t)ix->pid[q] : key_of(ix->pid[q], kb);
            a[k] = key << 32 | (uint64_t)q;
        }
    return emb__radix_sort(a, b, k, kb);
}

/*
 * Partition p grouped by sorting its rows by their id (ids below @ncolumns <= 2^32: the
 * rows of a table of columns), else by their id's hash, instead of hashing them: the
 * hash's cost is a branch on a slot's state, mispredicted at every collision and waiting
 * for the slot's load (about 9 ns a row on the 2-core machine, mostly distinct ids),
 * where the passes of a radix sort run without a data-dependent branch, and the sorted
 * rows are the grouping (no scatter). Runs of equal keys are one id (its rows in row
 * order: the sort is stable) or, after a collision, a few: each taken in order of first
 * appearance. The distinct ids come in the order of their keys: ascending ids walk the
 * table in address order in the apply (id keys: 2-thread index phase of a 1M x 64 table,
 * uniform ids, 0.134-0.138 ms against 0.153-0.157 by hash). Returns false, having
 * written nothing the hash's grouping does not overwrite, when too few rows are distinct
 * (SORT_MIN_DISTINCT) or a run mixes more than MAX_MIXED ids (then the partition is
 * hashed). Scratch: idbuf and cursor from r0 on, free until the apply (which compacts
 * into them).
 */
static bool group_sorted(EmbIndexer *ix, const EmbSeg *segs, int np, int64_t r0, int64_t n,
                         int64_t ncolumns, int64_t *ndist)
{
    /* a key and a position in 63 bits: UINT64_MAX is no row */
    int kb = EMB_MIN(emb__radix_bits(emb__indexer_hash_size(n)), 31);
    uint64_t *a = (uint64_t *)(ix->idbuf + r0), *b = (uint64_t *)(ix->cursor + r0);
    if (!mostly_distinct(ix, segs, np, n, kb, b))
        return false;
    const bool by_id = ncolumns <= ((int64_t)1 << 32);
    if (by_id)
        kb = emb__radix_bits(ncolumns);
    a = sort_rows(ix, segs, np, kb, by_id, a, b);
    int64_t m = 0, pos = r0;
    for (int64_t k = 0, e; k < n; k = e) {
        if (k + SORT_AHEAD < n) { /* the rows come in key order: their lines at random */
            const uint32_t q = (uint32_t)a[k + SORT_AHEAD];
            __builtin_prefetch(&ix->pid[q]);
            __builtin_prefetch(&ix->prow[q]);
            __builtin_prefetch(&ix->pcoef[q]);
        }
        const uint64_t key = a[k] >> 32;
        const int64_t id = ix->pid[(uint32_t)a[k]];
        bool mixed = false;
        for (e = k + 1; e < n && a[e] >> 32 == key; e++)
            mixed |= ix->pid[(uint32_t)a[e]] != id;
        for (int64_t j = k, ids = 0; j < e; j++) {
            if (a[j] == UINT64_MAX)
                continue;
            if (++ids > MAX_MIXED)
                return false;
            const int64_t jd = ix->pid[(uint32_t)a[j]];
            ix->ids[r0 + m] = jd;
            ix->starts[r0 + m] = pos;
            ix->counts[r0 + m] = take_id(ix, a, j, e, jd, pos);
            pos += ix->counts[r0 + m++];
            if (!mixed)
                break; /* one id: every row taken */
        }
    }
    *ndist = m;
    return true;
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
    int64_t m;
    const EmbTable *t = plan->table;
    const int64_t ncolumns = emb__table_rows_appear(t) ? INT64_MAX : t->ncolumns;
    if (n > 0 && group_sorted(ix, segs, np, r0, n, ncolumns, &m)) {
        ix->pdist[p] = m;
        if (m < n)
            ix->starts[r0 + m] = r0 + n;
        return;
    }
    m = emb__indexer_group_at(ix, ix->pid, sizeof(int64_t), segs, np, s0,
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
