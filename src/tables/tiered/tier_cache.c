/* SPDX-License-Identifier: BSD-2-Clause */
/* tier_cache.c — the tiered table's set-associative cache (tier_cache.h). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tables/tiered/tier_cache.h"

enum {
    SKETCH_MAX = 15,   /* a counter's cap: 4 bits' worth, as TinyLFU */
    SKETCH_PERIOD = 10 /* counts between halvings, per cache slot (TinyLFU's W = 10 C) */
};

/* The admission sketch of a cache of @nslots: width the power of two >= 2 x nslots. */
static int sketch_init(EmbTierSketch *k, int64_t nslots)
{
    uint64_t w = 64;
    while (w < 2 * (uint64_t)nslots)
        w <<= 1;
    k->mask = w - 1;
    k->period = SKETCH_PERIOD * nslots;
    k->count = calloc(4, w);
    return k->count ? 0 : EMB_ENOMEM;
}

int emb__tier_cache_init(EmbTierCache *c, int64_t nslots, size_t stride, int policy)
{
    memset(c, 0, sizeof *c);
    c->ways = (int32_t)EMB_MIN(nslots, EMB_TIER_WAYS);
    c->nsets = nslots / c->ways;
    c->nslots = c->nsets * c->ways;
    c->stride = stride;
    c->lfu = policy & 1;
    /* read at random: huge pages (emb__big_alloc) against TLB misses; a set's 8 entries
       (128 bytes) in one aligned pair of cache lines, fetched together */
    c->slots = emb__big_alloc(2 * EMB_ALIGN, (size_t)c->nslots * sizeof *c->slots);
    c->data = emb__big_alloc(EMB_ALIGN, (size_t)c->nslots * stride);
    const int sk = (policy & 2) ? sketch_init(&c->sketch, c->nslots) : 0;
    if (!c->slots || !c->data || sk) {
        emb__tier_cache_free(c);
        return emb__fail(EMB_ENOMEM, "out of memory for a tiered table's cache of %lld rows",
                         (long long)nslots);
    }
    memset(c->slots, 0, (size_t)c->nslots * sizeof *c->slots);
    return 0;
}

void emb__tier_cache_free(EmbTierCache *c)
{
    emb__aligned_free(c->slots);
    emb__aligned_free(c->data);
    free(c->sketch.count);
    c->slots = NULL;
    c->data = NULL;
    c->sketch.count = NULL;
}

int64_t emb__tier_cache_find(const EmbTierCache *c, int64_t id)
{
    const int64_t s0 = emb__tier_cache_set(c, id);
    for (int64_t s = s0; s < s0 + c->ways; s++)
        if ((c->slots[s].flags & (EMB_TIER_VALID | EMB_TIER_LOADING)) && c->slots[s].id == id)
            return s;
    return -1;
}

/* ---- the admission sketch -------------------------------------------------------------- */

/* @id's counter in sketch row @r (0..3): double hashing of two mixes of the id. */
static uint8_t *counter(const EmbTierSketch *k, int64_t id, int r)
{
    uint64_t a = (uint64_t)id * 0x9e3779b97f4a7c15ull;
    a ^= a >> 29;
    uint64_t b = (a ^ 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;
    b ^= b >> 31;
    return &k->count[(uint64_t)r * (k->mask + 1) + ((a + (uint64_t)r * (b | 1)) & k->mask)];
}

unsigned emb__tier_cache_estimate(const EmbTierCache *c, int64_t id)
{
    if (!c->sketch.count)
        return 0;
    unsigned m = SKETCH_MAX;
    for (int r = 0; r < 4; r++) {
        const unsigned v = *counter(&c->sketch, id, r);
        m = v < m ? v : m;
    }
    return m;
}

void emb__tier_cache_count(EmbTierCache *c, int64_t id)
{
    EmbTierSketch *k = &c->sketch;
    if (!k->count)
        return;
    /* conservative update: only the counters at the minimum grow */
    const unsigned m = emb__tier_cache_estimate(c, id);
    for (int r = 0; r < 4 && m < SKETCH_MAX; r++) {
        uint8_t *p = counter(k, id, r);
        *p = (uint8_t)(*p == m ? m + 1 : *p);
    }
    if (++k->added >= k->period) { /* old popularity fades: every count halved */
        for (uint64_t i = 0; i < 4 * (k->mask + 1); i++)
            k->count[i] >>= 1;
        k->added = 0;
    }
}

/* ---- eviction -------------------------------------------------------------------------- */

/* How evictable slot @e is: larger is better (the oldest use for LRU, the fewest for LFU). */
static uint32_t worth(const EmbTierCache *c, const EmbTierSlot *e)
{
    return c->lfu ? UINT32_MAX - e->stamp : c->tick - e->stamp;
}

int64_t emb__tier_cache_victim(const EmbTierCache *c, int64_t id, int ahead)
{
    const int64_t s0 = emb__tier_cache_set(c, id);
    int64_t best = -1;
    uint64_t bw = 0;
    for (int64_t s = s0; s < s0 + c->ways; s++) {
        const EmbTierSlot *e = &c->slots[s];
        if (!(e->flags & (EMB_TIER_VALID | EMB_TIER_LOADING)))
            return s;
        /* protected rows are never victims, loaded or still loading alike: which slots
           a prefetch's reads have filled yet changes no choice */
        const int later = (e->flags & EMB_TIER_AHEAD) != 0;
        if (e->pins || e->ahead || (e->flags & EMB_TIER_LOADING) || (ahead && later))
            continue;
        /* rows read ahead rank below every other row */
        const uint64_t w = worth(c, e) + (later ? 0 : (uint64_t)1 << 32);
        if (best < 0 || w > bw)
            best = s, bw = w;
    }
    /* admission: a row no more popular than the victim stays out */
    if (best >= 0 && c->sketch.count &&
        emb__tier_cache_estimate(c, id) <= emb__tier_cache_estimate(c, c->slots[best].id))
        return -1;
    return best;
}

/* LFU: halves the counts of slot @s's set, so that old popularity fades. */
static void age_set(EmbTierCache *c, int64_t s)
{
    const int64_t s0 = s - s % c->ways;
    for (int64_t k = s0; k < s0 + c->ways; k++)
        c->slots[k].stamp >>= 1;
}

void emb__tier_cache_touch(EmbTierCache *c, int64_t s)
{
    EmbTierSlot *e = &c->slots[s];
    if (!c->lfu) {
        e->stamp = ++c->tick;
        return;
    }
    if (e->stamp == UINT32_MAX)
        age_set(c, s);
    e->stamp++;
}

void emb__tier_cache_install(EmbTierCache *c, int64_t s, int64_t id, uint8_t flags)
{
    EmbTierSlot *e = &c->slots[s];
    e->id = id;
    e->flags = flags;
    e->pins = 0;
    e->stamp = 0;
    emb__tier_cache_touch(c, s);
}

/* ---- look-ahead protection ------------------------------------------------------------- */

void emb__tier_cache_protect(EmbTierCache *c, int64_t s, int d)
{
    EmbTierSlot *e = &c->slots[s];
    const int v = (int)e->ahead + d;
    e->ahead = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

void emb__tier_cache_protect_all(EmbTierCache *c, const int64_t *slots, int64_t n, int d)
{
    for (int64_t k = 0; k < n; k++)
        if (slots[k] >= 0)
            emb__tier_cache_protect(c, slots[k], d);
}
