/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynamic_map.c — the id -> row index map (dynamic_map.h): open addressing, linear
 * probing, backward-shift deletion, load <= 0.7; growth re-inserts in slot order and
 * keeps the old index on failure.
 */
#include <stdlib.h>

#include "internal.h"
#include "tables/dynamic/dynamic_map.h"

static DynSlot *alloc_empty(int64_t n)
{
    DynSlot *s = (uint64_t)n <= SIZE_MAX / sizeof *s
                     ? emb__big_alloc(EMB_ALIGN, (size_t)n * sizeof *s) : NULL;
    for (int64_t i = 0; s && i < n; i++)
        s[i] = (DynSlot){-1, 0};
    return s;
}

int emb__dyn_index_init(DynIndex *x, int64_t nslots)
{
    x->slots = alloc_empty(nslots);
    x->nslots = nslots;
    return x->slots ? 0 : EMB_ENOMEM;
}

void emb__dyn_index_free(DynIndex *x)
{
    free(x->slots);
    x->slots = NULL;
    x->nslots = 0;
}

void emb__dyn_slot_insert(DynSlot *slots, int64_t nslots, int64_t id, int64_t row)
{
    const uint64_t mask = (uint64_t)nslots - 1;
    uint64_t h = slot_hash(id) & mask;
    while (slots[h].id >= 0)
        h = (h + 1) & mask;
    slots[h] = (DynSlot){id, row};
}

void emb__dyn_slot_remove(DynIndex *x, int64_t id)
{
    const uint64_t mask = (uint64_t)x->nslots - 1;
    uint64_t h = slot_hash(id) & mask;
    while (x->slots[h].id != id)
        h = (h + 1) & mask;
    for (uint64_t j = (h + 1) & mask;; j = (j + 1) & mask) {
        if (x->slots[j].id < 0)
            break;
        const uint64_t home = slot_hash(x->slots[j].id) & mask;
        /* move j into the hole h when its home is not in (h, j] cyclically */
        if (((j - home) & mask) >= ((j - h) & mask)) {
            x->slots[h] = x->slots[j];
            h = j;
        }
    }
    x->slots[h] = (DynSlot){-1, 0};
}

int emb__dyn_index_grow(DynIndex *x, int64_t want)
{
    if (want <= x->nslots)
        return 0;
    int64_t n = x->nslots;
    while (n < want)
        n *= 2;
    DynSlot *s = alloc_empty(n);
    if (!s)
        return emb__fail(EMB_ENOMEM, "out of memory for a dynamic table index of %lld slots",
                         (long long)n);
    for (int64_t i = 0; i < x->nslots; i++)
        if (x->slots[i].id >= 0)
            emb__dyn_slot_insert(s, n, x->slots[i].id, x->slots[i].row);
    free(x->slots);
    x->slots = s;
    x->nslots = n;
    return 0;
}

int64_t emb__dyn_slots_for(int64_t rows)
{
    int64_t n = 16;
    while (n / MAX_LOAD_DEN * MAX_LOAD_NUM < rows && n < ((int64_t)1 << 60))
        n *= 2;
    return n;
}
