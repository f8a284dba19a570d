/* SPDX-License-Identifier: BSD-2-Clause */
/* tier_cache.c — the tiered table's set-associative cache (tier_cache.h). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tables/tiered/tier_cache.h"

int emb__tier_cache_init(EmbTierCache *c, int64_t nslots, size_t stride, int lfu)
{
    memset(c, 0, sizeof *c);
    c->ways = (int32_t)EMB_MIN(nslots, EMB_TIER_WAYS);
    c->nsets = nslots / c->ways;
    c->nslots = c->nsets * c->ways;
    c->stride = stride;
    c->lfu = lfu;
    /* read at random: huge pages (emb__big_alloc) against TLB misses; a set's 8 entries
       (128 bytes) in one aligned pair of cache lines, fetched together */
    c->slots = emb__big_alloc(2 * EMB_ALIGN, (size_t)c->nslots * sizeof *c->slots);
    c->data = emb__big_alloc(EMB_ALIGN, (size_t)c->nslots * stride);
    if (!c->slots || !c->data) {
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
    c->slots = NULL;
    c->data = NULL;
}

int64_t emb__tier_cache_find(const EmbTierCache *c, int64_t id)
{
    const int64_t s0 = emb__tier_cache_set(c, id);
    for (int64_t s = s0; s < s0 + c->ways; s++)
        if ((c->slots[s].flags & (EMB_TIER_VALID | EMB_TIER_LOADING)) && c->slots[s].id == id)
            return s;
    return -1;
}

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
        if (e->pins || (e->flags & EMB_TIER_LOADING) || (ahead && (e->flags & EMB_TIER_AHEAD)))
            continue;
        /* rows read ahead rank below every other row */
        const uint64_t w = worth(c, e) + ((e->flags & EMB_TIER_AHEAD) ? 0 : (uint64_t)1 << 32);
        if (best < 0 || w > bw)
            best = s, bw = w;
    }
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
