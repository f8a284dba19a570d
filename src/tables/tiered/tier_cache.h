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
 * Two additions use what the look-ahead knows (docs/design/tier-cache-policy.md):
 * - look-ahead protection: a slot marked by a prefetched batch that is not yet looked up
 *   (a count per slot, emb__tier_cache_protect) is never a victim (a resolve whose set
 *   holds nothing else uses the scratch pad), so no choice depends on which of a
 *   prefetch's reads have landed;
 * - admission (EMB_TIER_LRU_ADMIT / _LFU_ADMIT): a count-min sketch of the looked-up ids
 *   (4 rows of 8-bit counters capped at 15, all halved every 10 x nslots counts, TinyLFU);
 *   a missing row takes a valid victim's slot only when its estimate is higher, so rows
 *   seen once do not push out hot ones (the row is then served from the scratch pad).
 * Both depend only on the sequence of ids and calls: no clock, no thread order.
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
    uint8_t ahead;    /* prefetched batches not yet looked up that hold it (protection) */
} EmbTierSlot;

/* The admission sketch: count-min, 4 rows of @mask + 1 counters. */
typedef struct EmbTierSketch {
    uint8_t *count;     /* 4 x (mask + 1); NULL: no admission */
    uint64_t mask;
    int64_t added, period; /* counts since the last halving; halve at period */
} EmbTierSketch;

typedef struct EmbTierCache {
    EmbTierSlot *slots; /* nsets x ways */
    char *data;         /* slot s's record at data + s * stride */
    size_t stride;
    int64_t nslots, nsets;
    int32_t ways;
    int lfu;            /* 0: LRU, 1: LFU */
    uint32_t tick;
    EmbTierSketch sketch;
} EmbTierCache;

#define EMB_TIER_WAYS 8

/* A cache of @nslots (>= 1) records of @stride bytes under @policy (EmbTierPolicy: bit 0
   LFU, bit 1 admission); 0 or EMB_ENOMEM (message set). */
int emb__tier_cache_init(EmbTierCache *c, int64_t nslots, size_t stride, int policy);
void emb__tier_cache_free(EmbTierCache *c);
/* The slot holding @id (valid or loading), or -1. */
int64_t emb__tier_cache_find(const EmbTierCache *c, int64_t id);
/* The slot @id should go to: a free one of its set, else the least used unpinned and not
   loading nor protected one, rows read ahead last (never with @ahead: a prefetch's victim);
   -1 when there is none, or when admission keeps the valid victim (@id's estimate is not
   above its). */
int64_t emb__tier_cache_victim(const EmbTierCache *c, int64_t id, int ahead);
/* Records a use of slot @s. */
void emb__tier_cache_touch(EmbTierCache *c, int64_t s);
/* Slot @s now holds @id with @flags (a first use counted; pins 0; protection kept). */
void emb__tier_cache_install(EmbTierCache *c, int64_t s, int64_t id, uint8_t flags);
/* Counts a look-up of @id in the admission sketch (nothing without admission): once per
   distinct id of a batch's look-up, so the estimates follow the id sequence alone. */
void emb__tier_cache_count(EmbTierCache *c, int64_t id);
/* The sketch's estimate of @id's recent look-ups (0 without admission). */
unsigned emb__tier_cache_estimate(const EmbTierCache *c, int64_t id);
/* Adds @d (+1: a prefetched batch needs slot @s; -1: that batch was looked up or dropped)
   to slot @s's protection. The count stays below the number of batches kept (each marks
   a slot once); it is clamped at 0 and 255. */
void emb__tier_cache_protect(EmbTierCache *c, int64_t s, int d);
/* emb__tier_cache_protect(@d) of each slot >= 0 of @slots[0, @n). */
void emb__tier_cache_protect_all(EmbTierCache *c, const int64_t *slots, int64_t n, int d);

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
