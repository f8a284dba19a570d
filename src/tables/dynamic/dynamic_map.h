/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynamic_map.h — the dynamic kind's id -> row index map, alone (no table, no contract:
 * unit-tested by itself, tests/test_dynamic_map.c): open addressing over a power-of-two
 * array of slots, linear probing, backward-shift deletion. Ids are >= 0; slot h holds
 * (id, row), id -1 when empty. The caller keeps the load at most 7/10 (emb__dyn_slots_for,
 * emb__dyn_index_grow) so that a probe ends. The layout, hence the slot order a walk over
 * `slots` sees, is a function of the operations' sequence alone (no address, no time).
 */
#ifndef EMB_DYNAMIC_MAP_H
#define EMB_DYNAMIC_MAP_H

#include <stdint.h>

#include "rng.h"

#define MAX_LOAD_NUM 7  /* the index grows past a load of 7/10 */
#define MAX_LOAD_DEN 10

typedef struct DynSlot {
    int64_t id;
    int64_t row;
} DynSlot;

typedef struct DynIndex {
    DynSlot *slots;
    int64_t nslots; /* a power of two */
} DynIndex;

/* The hash of @id; its home slot in an index of n slots is hash & (n - 1). */
static inline uint64_t slot_hash(int64_t id)
{
    return emb__mix64((uint64_t)id ^ 0x5851f42d4c957f2dull);
}

/* The row of @id whose home slot is @h (of an index with @mask), or -1. */
static inline int64_t find_at(const DynSlot *slots, uint64_t mask, uint64_t h, int64_t id)
{
    for (;; h = (h + 1) & mask) {
        const DynSlot *s = &slots[h];
        if (s->id == id)
            return s->row;
        if (s->id < 0)
            return -1;
    }
}

/* The row of @id, or -1. */
static inline int64_t emb__dyn_index_find(const DynIndex *x, int64_t id)
{
    const uint64_t mask = (uint64_t)x->nslots - 1;
    return find_at(x->slots, mask, slot_hash(id) & mask, id);
}

/* An empty index of @nslots slots (a power of two >= 16); 0 or EMB_ENOMEM (x->slots NULL). */
int emb__dyn_index_init(DynIndex *x, int64_t nslots);
/* Frees the slots (x may be zeroed or initialised). */
void emb__dyn_index_free(DynIndex *x);
/* Inserts (id, row) into @slots of @nslots (id absent, room guaranteed). */
void emb__dyn_slot_insert(DynSlot *slots, int64_t nslots, int64_t id, int64_t row);
/* Removes @id (present): backward-shift deletion, no tombstone. */
void emb__dyn_slot_remove(DynIndex *x, int64_t id);
/* An index of at least @want slots holding every entry, re-inserted in slot order; the
   old index kept on failure (EMB_ENOMEM). */
int emb__dyn_index_grow(DynIndex *x, int64_t want);
/* Slots needed for @rows entries at a load of at most 7/10 (at least 16). */
int64_t emb__dyn_slots_for(int64_t rows);

#endif
