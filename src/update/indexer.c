/*
 * indexer.c — EmbIndexer: groups gradient rows by distinct id in O(rows).
 *
 * An open-addressing hash (linear probing, load <= 1/2) maps an id to its distinct index,
 * assigned in order of first appearance; a counting sort then lists each distinct id's
 * rows in row order. Slots carry a generation stamp, so a step clears nothing: the hash is
 * sized by the rows of the largest gradient seen, never by the table's ncolumns.
 */
#include <stdlib.h>
#include <string.h>

#include "update/update_impl.h"

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
    free(ix->order);
    free(ix->idbuf);
    free(ix->entries);
    free(ix->ids);
    free(ix->counts);
    free(ix->starts);
    free(ix->cursor);
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

static int reserve_slots(EmbIndexer *ix, int64_t rows)
{
    int64_t want = 16;
    while (want < 2 * rows)
        want *= 2;
    if (want <= ix->nslots)
        return 0;
    EmbSlot *s = calloc((size_t)want, sizeof *s);
    if (!s)
        return EMB_ENOMEM;
    free(ix->slots);
    ix->slots = s;
    ix->nslots = want;
    ix->gen = 0;
    return 0;
}

int emb__indexer_reserve(EmbIndexer *ix, int64_t rows)
{
    if (rows > INT32_MAX)
        return emb__fail(EMB_EOVERFLOW, "%lld gradient rows exceed the indexer's 2^31 - 1",
                         (long long)rows);
    ix->nrows = ix->ndistinct = 0;
    int r = reserve_slots(ix, rows);
    if (!r && rows > ix->row_cap) {
        r = grow(&ix->row_dist, rows, sizeof(int32_t));
        r = r ? r : grow(&ix->order, rows, sizeof(int32_t));
        r = r ? r : grow(&ix->idbuf, rows, sizeof(int64_t));
        if (!r)
            ix->row_cap = rows;
    }
    if (!r && rows > ix->dist_cap) {
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

/* The distinct index of @id, inserting it when new. */
static inline int32_t insert(EmbIndexer *ix, int64_t id, uint64_t mask)
{
    uint64_t h = hash(id, mask);
    for (;;) {
        EmbSlot *s = &ix->slots[h];
        if (s->gen != ix->gen) {
            const int32_t d = (int32_t)ix->ndistinct++;
            *s = (EmbSlot){ix->gen, d};
            ix->ids[d] = id;
            ix->counts[d] = 0;
            return d;
        }
        if (ix->ids[s->dist] == id)
            return s->dist;
        h = (h + 1) & mask;
    }
}

static void next_generation(EmbIndexer *ix)
{
    if (++ix->gen == 0) {
        memset(ix->slots, 0, (size_t)ix->nslots * sizeof *ix->slots);
        ix->gen = 1;
    }
}

void emb__indexer_group(EmbIndexer *ix, const void *base, size_t stride, int64_t n)
{
    const uint64_t mask = (uint64_t)ix->nslots - 1;
    next_generation(ix);
    ix->ndistinct = 0;
    ix->nrows = n;
    for (int64_t k = 0; k < n; k++) {
        int64_t id;
        memcpy(&id, (const char *)base + (size_t)k * stride, sizeof id);
        const int32_t d = insert(ix, id, mask);
        ix->counts[d]++;
        ix->row_dist[k] = d;
    }
    int64_t s = 0;
    for (int64_t d = 0; d < ix->ndistinct; d++) {
        ix->starts[d] = ix->cursor[d] = s;
        s += ix->counts[d];
    }
    ix->starts[ix->ndistinct] = s;
    for (int64_t k = 0; k < n; k++)
        ix->order[ix->cursor[ix->row_dist[k]]++] = (int32_t)k;
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
        if (ix->ids[s->dist] == id)
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
