/*
 * indexer.c — EmbIndexer: groups gradient rows by distinct id in O(rows).
 *
 * An open-addressing hash (linear probing, load <= 1/2) maps an id to its distinct index,
 * assigned in order of first appearance; the counts' prefix sums then place each distinct
 * id's rows, in row order, for the caller's counting-sort scatter. Slots carry a
 * generation stamp, so a step clears nothing: the hash is
 * sized by the rows of the largest gradient seen, never by the table's ncolumns.
 */
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
    free(ix->entries);
    free(ix->ids);
    free(ix->counts);
    free(ix->starts);
    free(ix->cursor);
    free(ix->pid);
    free(ix->prow);
    free(ix->pcoef);
    emb__aligned_free(ix->scratch);
    free(ix);
    *pix = NULL;
}

/* realloc to @n elements of @size, keeping *p on failure. */
static int grow(void *pp, int64_t n, size_t size)
{
    void **p = (void **)pp;
    void *q = realloc(*p, (size_t)(n > 0 ? n : 1) * size);
    if (!q)
        return EMB_ENOMEM;
    *p = q;
    return 0;
}

int emb__indexer_reserve_slots(EmbIndexer *ix, int64_t nslots)
{
    if (nslots <= ix->nslots)
        return 0;
    EmbSlot *s = calloc((size_t)nslots, sizeof *s);
    if (!s)
        return emb__fail(EMB_ENOMEM, "out of memory for an indexer hash of %lld slots",
                         (long long)nslots);
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
        r = grow(&ix->row_dist, rows, sizeof(int32_t));
        r = r ? r : grow(&ix->grow, rows, sizeof(void *));
        r = r ? r : grow(&ix->gcoef, rows, sizeof(float));
        r = r ? r : grow(&ix->idbuf, rows, sizeof(int64_t));
        r = r ? r : grow(&ix->pid, rows, sizeof(int64_t));
        r = r ? r : grow(&ix->prow, rows, sizeof(void *));
        r = r ? r : grow(&ix->pcoef, rows, sizeof(float));
        if (!r)
            ix->row_cap = rows;
    }
    if (!r && rows > ix->dist_cap) { /* per distinct id (at most one per row) */
        r = grow(&ix->ids, rows, sizeof(int64_t));
        r = r ? r : grow(&ix->counts, rows, sizeof(int64_t));
        r = r ? r : grow(&ix->starts, rows + 1, sizeof(int64_t));
        r = r ? r : grow(&ix->cursor, rows, sizeof(int64_t));
        if (!r)
            ix->dist_cap = rows;
    }
    return r ? emb__fail(EMB_ENOMEM, "out of memory for an indexer of %lld rows",
                         (long long)rows)
             : 0;
}

int emb__indexer_reserve_entries(EmbIndexer *ix, int64_t n)
{
    if (n <= ix->entry_cap)
        return 0;
    if (grow(&ix->entries, n, sizeof(EmbPullEntry)))
        return emb__fail(EMB_ENOMEM, "out of memory for %lld gradient entries", (long long)n);
    ix->entry_cap = n;
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

int64_t emb__indexer_group_at(EmbIndexer *ix, const void *base, size_t stride, int64_t n,
                              int64_t slot0, int64_t nslots, int64_t r0)
{
    EmbSlot *slots = ix->slots + slot0;
    const uint64_t mask = (uint64_t)nslots - 1;
    const uint32_t gen = ix->gen;
    int64_t *ids = ix->ids + r0, *counts = ix->counts + r0, nd = 0;
    int32_t *row_dist = ix->row_dist + r0;
    for (int64_t k = 0; k < n; k++) {
        int64_t id;
        if (k + HASH_AHEAD < n) {
            memcpy(&id, (const char *)base + (size_t)(k + HASH_AHEAD) * stride, sizeof id);
            __builtin_prefetch(&slots[hash(id, mask)], 0, 3);
        }
        memcpy(&id, (const char *)base + (size_t)k * stride, sizeof id);
        row_dist[k] = insert(slots, mask, gen, id, ids, counts, &nd);
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
    emb__indexer_next_generation(ix);
    ix->ndistinct = emb__indexer_group_at(ix, base, stride, n, 0, ix->nslots, 0);
    ix->nrows = n;
    ix->starts[ix->ndistinct] = n;
}

int64_t emb__indexer_find(const EmbIndexer *ix, int64_t id)
{
    if (ix->nslots == 0 || ix->ndistinct == 0)
        return -1;
    const uint64_t mask = (uint64_t)ix->nslots - 1;
    for (uint64_t h = hash(id, mask);; h = (h + 1) & mask) {
        const EmbSlot *s = &ix->slots[h];
        if (s->gen != ix->gen)
            return -1;
        if (s->id == id)
            return s->dist;
    }
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
        *ids = ix ? ix->ids : NULL;
    if (counts)
        *counts = ix ? ix->counts : NULL;
    return ix ? ix->ndistinct : 0;
}
