/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_scratch.c — the scratch pad of a tiered table (tier.h): rows that did
 * not fit their cache set, and rows parked while their write-back is in flight, in blocks
 * of SP_BLOCK records with an open-addressing map id -> row; and the current operation's
 * pins (cache slots and scratch rows alike).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tables/tiered/tier.h"


static uint64_t mix(int64_t id)
{
    uint64_t z = (uint64_t)id * 0x9e3779b97f4a7c15ull;
    return z ^ (z >> 29);
}


int64_t emb__tier_sp_find(const TierScratch *sp, int64_t id)
{
    if (!sp->n)
        return -1;
    for (uint64_t h = mix(id) & (uint64_t)(sp->mapcap - 1);; h = (h + 1) & (uint64_t)(sp->mapcap - 1)) {
        const int64_t v = sp->map[h];
        if (!v)
            return -1;
        if (sp->ids[v - 1] == id)
            return v - 1;
    }
}

void emb__tier_sp_map_put(TierScratch *sp, int64_t k)
{
    uint64_t h = mix(sp->ids[k]) & (uint64_t)(sp->mapcap - 1);
    while (sp->map[h])
        h = (h + 1) & (uint64_t)(sp->mapcap - 1);
    sp->map[h] = k + 1;
}

/* Rebuilds the map for the n rows (at a load <= 1/2); it never shrinks, so a rebuild for
   fewer rows cannot fail. */
int emb__tier_sp_rehash(TierScratch *sp, int64_t need)
{
    int64_t cap = EMB_MAX(16, sp->mapcap);
    while (cap < 2 * need)
        cap *= 2;
    if (cap != sp->mapcap) {
        int64_t *m = calloc((size_t)cap, sizeof *m);
        if (!m)
            return EMB_ENOMEM;
        free(sp->map);
        sp->map = m, sp->mapcap = cap;
    } else {
        memset(sp->map, 0, (size_t)cap * sizeof *sp->map);
    }
    for (int64_t k = 0; k < sp->n; k++)
        emb__tier_sp_map_put(sp, k);
    return 0;
}

/* Room for one more scratch row: 0 or EMB_ENOMEM (nothing changed). */
int emb__tier_sp_room(Tier *x)
{
    TierScratch *sp = &x->sp;
    if (sp->n == sp->cap) {
        const int64_t cap = sp->cap ? 2 * sp->cap : SP_BLOCK;
        int64_t *ids = realloc(sp->ids, (size_t)cap * sizeof *ids);
        sp->ids = ids ? ids : sp->ids;
        uint8_t *fl = ids ? realloc(sp->flags, (size_t)cap) : NULL;
        sp->flags = fl ? fl : sp->flags;
        char **bl = fl ? realloc(sp->blocks, (size_t)(cap / SP_BLOCK) * sizeof *bl) : NULL;
        sp->blocks = bl ? bl : sp->blocks;
        if (!bl)
            return EMB_ENOMEM;
        sp->cap = cap;
    }
    if (sp->n == sp->nblocks * SP_BLOCK) {
        char *b = malloc((size_t)SP_BLOCK * x->recbytes);
        if (!b)
            return EMB_ENOMEM;
        sp->blocks[sp->nblocks++] = b;
    }
    return 2 * (sp->n + 1) > sp->mapcap ? emb__tier_sp_rehash(sp, sp->n + 1) : 0;
}


void emb__tier_sp_free(TierScratch *sp)
{
    for (int64_t b = 0; b < sp->nblocks; b++)
        free(sp->blocks[b]);
    free(sp->blocks), free(sp->ids), free(sp->flags), free(sp->map);
    memset(sp, 0, sizeof *sp);
}
/* ---- pins ------------------------------------------------------------------------------ */

int emb__tier_pin_room(Tier *x, int64_t n)
{
    if (x->npinned + n <= x->pinned_cap)
        return 0;
    const int64_t cap = EMB_MAX(2 * x->pinned_cap, x->npinned + n + 64);
    int64_t *p = realloc(x->pinned, (size_t)cap * sizeof *p);
    if (!p)
        return EMB_ENOMEM;
    x->pinned = p, x->pinned_cap = cap;
    return 0;
}

/* Pins cache slot @s (once per operation); the room was made by pin_room. */
void emb__tier_pin_slot(Tier *x, int64_t s)
{
    if (!x->cache.slots[s].pins) {
        x->cache.slots[s].pins = 1;
        x->pinned[x->npinned++] = s;
    }
}

void emb__tier_pin_sp(Tier *x, int64_t k)
{
    if (!(x->sp.flags[k] & TIER_SP_PINNED)) {
        x->sp.flags[k] |= TIER_SP_PINNED;
        x->pinned[x->npinned++] = -1 - k;
    }
}

/* Unpins the pins of indices [from, to) (the list itself is the caller's). */
void emb__tier_unpin_from(Tier *x, int64_t from, int64_t to)
{
    for (int64_t i = from; i < to; i++) {
        if (i + SET_AHEAD < to && x->pinned[i + SET_AHEAD] >= 0)
            __builtin_prefetch(&x->cache.slots[x->pinned[i + SET_AHEAD]], 1);
        const int64_t p = x->pinned[i];
        if (p >= 0)
            x->cache.slots[p].pins = 0;
        else
            x->sp.flags[-1 - p] &= (uint8_t)~TIER_SP_PINNED;
    }
}

