/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_cache.h — the DRAM cache of a tiered table: a set-associative array of record slots
 * (a row and its optimizer state) with a 16-byte index entry per slot. An id lives in one
 * set (a hash of the id); its slot's record is at data + slot * stride, so the entry needs
 * no pointer. Eviction picks, in the id's set, a free slot, else the unpinned slot that was
 * used least recently (LRU: a 32-bit tick, compared by age so it may wrap) or least often
 * (LFU: a saturating count; a set whose count saturates is halved). Set-associative rather
 * than one global LRU list: no list pointers per row (16 bytes of index, the target), a
 * lookup touches one set (8 adjacent entries, 2 cache lines) and eviction is O(ways).
 * Not thread-safe: the tiered table's lock serialises every call.
 */
#ifndef EMB_TIER_CACHE_H
#define EMB_TIER_CACHE_H

#include <stddef.h>
#include <stdint.h>

enum {
    EMB_TIER_VALID = 1,   /* the slot holds row `id` */
    EMB_TIER_DIRTY = 2,   /* its record differs from the file's */
    EMB_TIER_LOADING = 4, /* a read into it is in flight */
    EMB_TIER_AHEAD = 8,   /* read by a prefetch and not used since: evicted only when its
                             set has nothing else, and never by another prefetch */
};

/* One slot's index entry: 16 bytes. */
typedef struct EmbTierSlot {
    int64_t id;
    uint32_t stamp;   /* LRU: tick of the last use; LFU: uses */
    uint16_t pins;    /* users that hold its record (no eviction while > 0) */
    uint8_t flags;
    uint8_t spare;
} EmbTierSlot;

typedef struct EmbTierCache {
    EmbTierSlot *slots; /* nsets x ways */
    char *data;         /* slot s's record at data + s * stride */
    size_t stride;
    int64_t nslots, nsets;
    int32_t ways;
    int lfu;            /* 0: LRU, 1: LFU */
    uint32_t tick;
} EmbTierCache;

#define EMB_TIER_WAYS 8

/* A cache of @nslots (>= 1) records of @stride bytes; 0 or EMB_ENOMEM (message set). */
int emb__tier_cache_init(EmbTierCache *c, int64_t nslots, size_t stride, int lfu);
void emb__tier_cache_free(EmbTierCache *c);
/* The slot holding @id (valid or loading), or -1. */
int64_t emb__tier_cache_find(const EmbTierCache *c, int64_t id);
/* The slot @id should go to: a free one of its set, else the least used unpinned and not
   loading one, rows read ahead last (never with @ahead: a prefetch's victim); -1 when
   there is none. */
int64_t emb__tier_cache_victim(const EmbTierCache *c, int64_t id, int ahead);
/* Records a use of slot @s. */
void emb__tier_cache_touch(EmbTierCache *c, int64_t s);
/* Slot @s now holds @id with @flags (a first use counted; pins 0). */
void emb__tier_cache_install(EmbTierCache *c, int64_t s, int64_t id, uint8_t flags);

/* The first slot of @id's set. */
static inline int64_t emb__tier_cache_set(const EmbTierCache *c, int64_t id)
{
    uint64_t z = (uint64_t)id + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
#ifdef __SIZEOF_INT128__ /* z scaled to [0, nsets): a multiply, not a division (Lemire) */
    return (int64_t)(((unsigned __int128)z * (uint64_t)c->nsets) >> 64) * c->ways;
#else
    return (int64_t)(z % (uint64_t)c->nsets) * c->ways;
#endif
}

/* Brings @id's set (its index entries) towards the core, for a find a few ids later. */
static inline void emb__tier_cache_prefetch(const EmbTierCache *c, int64_t id)
{
    const EmbTierSlot *set = &c->slots[emb__tier_cache_set(c, id)];
    __builtin_prefetch(set, 1);
    __builtin_prefetch((const char *)set + 64, 1);
}

static inline char *emb__tier_cache_row(const EmbTierCache *c, int64_t s)
{
    return c->data + (size_t)s * c->stride;
}

#endif
