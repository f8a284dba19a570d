/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * indexer.c — EmbIndexer: groups gradient rows by distinct id in O(rows).
 *
 * An open-addressing hash (linear probing, load <= 1/2) maps an id to its distinct index,
 * assigned in order of first appearance; the counts' prefix sums then place each distinct
 * id's rows, in row order, for the caller's counting-sort scatter. Slots carry a
 * generation stamp, so a step clears nothing: the slot array is sized by the largest
 * gradient seen, never by the table's ncolumns. Every grouping hashes into a region whose
 * size is a power of two fitted to its own rows (load <= 1/2, so probing always ends):
 * the whole-table grouping uses slots [0, hash_size(rows)), the partitioned one (pindex.c)
 * one such region per partition, side by side. The slot array itself may be any size.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "update/update_impl.h"

#define HASH_AHEAD 16 /* rows whose hash slot is prefetched ahead */

int emb_indexer_create(EmbIndexer **out)
{
    EMB_CHECK_NULL(out);
    EmbIndexer *ix = calloc(1, sizeof *ix);
    if (!ix)
        return emb__fail(EMB_ENOMEM, "out of memory for an indexer");
    *out = ix;
    return 0;
}

void emb_indexer_destroy(EmbIndexer **pix)
{
    if (!pix || !*pix)
        return;
    EmbIndexer *ix = *pix;
    free(ix->slots);
    free(ix->row_dist);
    free(ix->grow);
    free(ix->gcoef);
    free(ix->idbuf);
    free(ix->sbuf);
    free(ix->entries);
    free(ix->ids);
    free(ix->counts);
    free(ix->starts);
    free(ix->cursor);
    free(ix->pid);
    free(ix->prow);
    free(ix->pcoef);
    free(ix->handle);
    free(ix->maxid);
    free(ix->maxval);
    emb__aligned_free(ix->scratch);
    emb__aligned_free(ix->sum_rows);
    free(ix->sum_grow);
    free(ix->sum_starts);
    free(ix->sum_coef);
    free(ix);
    *pix = NULL;
}

/*
 * realloc from @old to @n elements of @size, keeping *p on failure. The new part is
 * written once here, so that its pages fault in now, on the caller, and not on first touch
 * inside a parallel phase of the step (where page faults of many threads serialise on the
 * process's memory map and one slow thread holds up the step).
 */
static int grow(void *pp, int64_t old, int64_t n, size_t size)
{
    void **p = (void **)pp;
    n = n > 0 ? n : 1;
    void *q = realloc(*p, (size_t)n * size);
    if (!q)
        return EMB_ENOMEM;
    old = EMB_MIN(EMB_MAX(old, 0), n);
    memset((char *)q + (size_t)old * size, 0, (size_t)(n - old) * size);
    *p = q;
    return 0;
}

int emb__indexer_reserve_slots(EmbIndexer *ix, int64_t nslots)
{
    if (nslots <= ix->nslots)
        return 0;
    EmbSlot *s = (uint64_t)nslots <= SIZE_MAX / sizeof *s ? malloc((size_t)nslots * sizeof *s)
                                                          : NULL;
    if (!s)
        return emb__fail(EMB_ENOMEM, "out of memory for an indexer hash of %lld slots",
                         (long long)nslots);
    memset(s, 0, (size_t)nslots * sizeof *s); /* zero and fault in now (see grow) */
    free(ix->slots);
    ix->slots = s;
    ix->nslots = nslots;
    ix->gen = 0;
    return 0;
}

int64_t emb__indexer_hash_size(int64_t rows)
{
    int64_t want = 16;
    while (want < 2 * rows) /* load factor <= 1/2: fewer mispredicted probes */
        want *= 2;
    return want;
}

int emb__indexer_reserve(EmbIndexer *ix, int64_t rows)
{
    if (rows > INT32_MAX)
        return emb__fail(EMB_EOVERFLOW, "%lld gradient rows exceed the indexer's 2^31 - 1",
                         (long long)rows);
    ix->nrows = ix->ndistinct = 0;
    rows = EMB_MAX(rows, 1); /* starts[0] exists even for no rows */
    int r = emb__indexer_reserve_slots(ix, emb__indexer_hash_size(rows));
    if (r)
        return r;
    if (rows > ix->row_cap) { /* per gradient row */
        const int64_t old = ix->row_cap;
        r = grow(&ix->row_dist, old, rows, sizeof(int32_t));
        r = r ? r : grow(&ix->grow, old, rows, sizeof(void *));
        r = r ? r : grow(&ix->gcoef, old, rows, sizeof(float));
        r = r ? r : grow(&ix->idbuf, old, rows, sizeof(int64_t));
        r = r ? r : grow(&ix->sbuf, 2 * old, 2 * rows, sizeof(uint64_t));
        r = r ? r : grow(&ix->pid, old, rows, sizeof(int64_t));
        r = r ? r : grow(&ix->prow, old, rows, sizeof(void *));
        r = r ? r : grow(&ix->pcoef, old, rows, sizeof(float));
        if (!r)
            ix->row_cap = rows;
    }
    if (!r && rows > ix->dist_cap) { /* per distinct id (at most one per row) */
        const int64_t old = ix->dist_cap;
        r = grow(&ix->ids, old, rows, sizeof(int64_t));
        r = r ? r : grow(&ix->counts, old, rows, sizeof(int64_t));
        r = r ? r : grow(&ix->starts, old, rows + 1, sizeof(int64_t));
        r = r ? r : grow(&ix->cursor, old, rows, sizeof(int64_t));
        if (!r)
            ix->dist_cap = rows;
    }
    ix->res_ids = ix->ids;
    ix->res_counts = ix->counts;
    ix->sorted = NULL;
    return r ? emb__fail(EMB_ENOMEM, "out of memory for an indexer of %lld rows",
                         (long long)rows)
             : 0;
}

int emb__indexer_reserve_entries(EmbIndexer *ix, int64_t n)
{
    if (n <= ix->entry_cap)
        return 0;
    if (grow(&ix->entries, ix->entry_cap, n, sizeof(EmbPullEntry)))
        return emb__fail(EMB_ENOMEM, "out of memory for %lld gradient entries", (long long)n);
    ix->entry_cap = n;
    return 0;
}

int emb__indexer_reserve_max(EmbIndexer *ix, int64_t n, int32_t D)
{
    if (n > ix->max_cap) {
        if (grow(&ix->maxid, ix->max_cap, n, sizeof(int64_t)))
            return emb__fail(EMB_ENOMEM, "out of memory for MAX pooling's %lld maxima",
                             (long long)n);
        ix->max_cap = n;
    }
    if (D <= ix->maxval_d)
        return 0;
    if (grow(&ix->maxval, ix->maxval_d, D, sizeof(float)))
        return emb__fail(EMB_ENOMEM, "out of memory for MAX pooling's row of %d maxima", D);
    ix->maxval_d = D;
    return 0;
}

static inline uint64_t hash(int64_t id, uint64_t mask)
{
    return ((uint64_t)id * 0x9e3779b97f4a7c15ull >> 32) & mask;
}

/* The distinct index of @id in a hash region, appending it to ids / counts when new;
 * counts the row. */
static inline int32_t insert(EmbSlot *slots, uint64_t mask, uint32_t gen, int64_t id,
                             int64_t *ids, int64_t *counts, int64_t *nd)
{
    for (uint64_t h = hash(id, mask);; h = (h + 1) & mask) {
        EmbSlot *s = &slots[h];
        if (s->gen != gen) {
            const int32_t d = (int32_t)(*nd)++;
            *s = (EmbSlot){id, gen, d};
            ids[d] = id;
            counts[d] = 1;
            return d;
        }
        if (s->id == id) {
            counts[s->dist]++;
            return s->dist;
        }
    }
}

void emb__indexer_next_generation(EmbIndexer *ix)
{
    if (++ix->gen == 0) {
        memset(ix->slots, 0, (size_t)ix->nslots * sizeof *ix->slots);
        ix->gen = 1;
    }
}

int64_t emb__indexer_group_at(EmbIndexer *ix, const void *base, size_t stride,
                              const EmbSeg *segs, int nseg, int64_t slot0, int64_t nslots,
                              int64_t r0)
{
    EmbSlot *slots = ix->slots + slot0;
    const uint64_t mask = (uint64_t)nslots - 1;
    const uint32_t gen = ix->gen;
    int64_t *ids = ix->ids + r0, *counts = ix->counts + r0, nd = 0;
    int32_t *row_dist = ix->row_dist + r0;
    for (int g = 0; g < nseg; g++) {
        const int64_t n = segs[g].n;
        if (n == 0)
            continue; /* base may be NULL when there are no rows at all */
        const char *b = (const char *)base + (size_t)segs[g].start * stride;
        for (int64_t k = 0; k < n; k++) {
            int64_t id;
            if (k + HASH_AHEAD < n) {
                memcpy(&id, b + (size_t)(k + HASH_AHEAD) * stride, sizeof id);
                __builtin_prefetch(&slots[hash(id, mask)], 0, 3);
            }
            memcpy(&id, b + (size_t)k * stride, sizeof id);
            *row_dist++ = insert(slots, mask, gen, id, ids, counts, &nd);
        }
    }
    int64_t s = r0;
    for (int64_t d = 0; d < nd; d++) {
        ix->starts[r0 + d] = ix->cursor[r0 + d] = s;
        s += counts[d];
    }
    return nd;
}

void emb__indexer_group(EmbIndexer *ix, const void *base, size_t stride, int64_t n)
{
    /* a region of its own size: the slots may be a partitioned call's sum of regions */
    const int64_t nslots = emb__indexer_hash_size(n);
    assert(nslots <= ix->nslots);
    emb__indexer_next_generation(ix);
    ix->hslots = nslots;
    const EmbSeg all = {0, n};
    ix->ndistinct = emb__indexer_group_at(ix, base, stride, &all, 1, 0, nslots, 0);
    ix->nrows = n;
    ix->starts[ix->ndistinct] = n;
    ix->res_ids = ix->ids;
    ix->res_counts = ix->counts;
    ix->sorted = NULL;
}

bool emb__indexer_group_sorted(EmbIndexer *ix, const void *base, size_t stride, int64_t n,
                               int64_t ncolumns)
{
    if (n > UINT32_MAX || ncolumns > ((int64_t)1 << 32))
        return false;
    const char *src = base;
    for (int64_t k = 0; k < n; k++) {
        int64_t id;
        memcpy(&id, src + (size_t)k * stride, sizeof id);
        ix->sbuf[k] = (uint64_t)id << 32 | (uint64_t)k; /* checked columns: id < 2^32 */
    }
    const uint64_t *a = emb__radix_sort(ix->sbuf, ix->sbuf + n, n, emb__radix_bits(ncolumns));
    int64_t d = 0;
    for (int64_t pos = 0, e; pos < n; pos = e) {
        const uint64_t id = a[pos] >> 32;
        for (e = pos + 1; e < n && a[e] >> 32 == id; e++)
            ;
        ix->ids[d] = (int64_t)id;
        ix->counts[d] = e - pos;
        ix->starts[d++] = pos;
    }
    ix->starts[d] = n;
    ix->ndistinct = d;
    ix->nrows = n;
    ix->hslots = 0;
    ix->res_ids = ix->ids;
    ix->res_counts = ix->counts;
    ix->sorted = a;
    return true;
}

int64_t emb__indexer_find(const EmbIndexer *ix, int64_t id)
{
    assert(ix->hslots > 0 || ix->ndistinct == 0);
    if (ix->hslots == 0 || ix->ndistinct == 0)
        return -1;
    const uint64_t mask = (uint64_t)ix->hslots - 1;
    uint64_t h = hash(id, mask);
    for (int64_t probe = 0; probe < ix->hslots; probe++, h = (h + 1) & mask) {
        const EmbSlot *s = &ix->slots[h];
        if (s->gen != ix->gen)
            return -1;
        if (s->id == id)
            return s->dist;
    }
    return -1;
}

int emb_indexer_index(EmbIndexer *ix, const int64_t *ids, int64_t n)
{
    EMB_CHECK_NULL(ix);
    if (n < 0)
        return emb__fail(EMB_EINVAL, "emb_indexer_index: n %lld is negative", (long long)n);
    if (n > 0)
        EMB_CHECK_NULL(ids);
    int r = emb__indexer_reserve(ix, n);
    if (r)
        return r;
    emb__indexer_group(ix, ids, sizeof *ids, n);
    return 0;
}

int64_t emb_indexer_distinct(const EmbIndexer *ix, const int64_t **ids, const int64_t **counts)
{
    if (ids)
        *ids = ix ? ix->res_ids : NULL;
    if (counts)
        *counts = ix ? ix->res_counts : NULL;
    return ix ? ix->ndistinct : 0;
}
