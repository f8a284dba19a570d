/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_dedup.c — the distinct ids of a batch (tier.h): a prefetch's or a
 * lookup's ids, deduplicated once by a radix sort, and kept from a prefetch for the lookup
 * of the same ids (the dedup ring, TIER_DEDUPS batches).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tables/tiered/tier.h"

int64_t emb__tier_batch_ids(Tier *x, const void *ids, bool id32, int64_t k0, int64_t k1)
{
    if (k1 - k0 > x->ids_cap) {
        int64_t *p = realloc(x->ids, (size_t)(k1 - k0) * sizeof *p);
        if (!p)
            return -1;
        x->ids = p, x->ids_cap = k1 - k0;
    }
    int64_t m = 0;
    for (int64_t k = k0; k < k1; k++) {
        const int64_t id = id32 ? ((const int32_t *)ids)[k] : ((const int64_t *)ids)[k];
        if (id >= 0 && id < x->nrows)
            x->ids[m++] = id;
    }
    return m;
}

/* Batches of fewer ids are resolved as they come (a sort of so few would not pay; the
   tests' batches, 168 ids, are deduplicated). */
#define DEDUP_MIN 64

/*
 * The distinct ids of x->ids[0, m) (emb_table_prefetch's, a lookup's batch), so that a
 * batch's passes find each row once rather than at each of its ids (Zipf(1.05) batches of
 * bags of 20: a third of the ids distinct): sorted by a radix sort of id << 32 | position
 * (sort.c) into x->sorted, the distinct ids ascending into x->uid. Returns their count, or
 * -1 where it does not apply (a small batch, ids of 2^32 and up, no memory: the caller goes
 * on with every id).
 */
int64_t emb__tier_distinct_ids(Tier *x, int64_t m)
{
    if (m < DEDUP_MIN || m > UINT32_MAX || x->nrows > ((int64_t)1 << 32))
        return -1;
    if (m > x->u_cap) {
        int64_t *u = realloc(x->uid, (size_t)m * sizeof *u);
        if (u)
            x->uid = u;
        uint64_t *b = realloc(x->sbuf, (size_t)(2 * m) * sizeof *b);
        if (b)
            x->sbuf = b;
        int64_t *sl = realloc(x->uslot, (size_t)m * sizeof *sl);
        if (sl)
            x->uslot = sl;
        if (!u || !b || !sl)
            return -1;
        x->u_cap = m;
    }
    if (m > x->urow_cap) {
        char **r = realloc(x->urow, (size_t)m * sizeof *r);
        if (!r)
            return -1;
        x->urow = r, x->urow_cap = m;
    }
    for (int64_t k = 0; k < m; k++)
        x->sbuf[k] = (uint64_t)x->ids[k] << 32 | (uint64_t)k;
    const uint64_t *a = emb__radix_sort(x->sbuf, x->sbuf + m, m, emb__radix_bits(x->nrows));
    int64_t nd = 0;
    for (int64_t j = 0; j < m; j++)
        if (j == 0 || a[j] >> 32 != a[j - 1] >> 32)
            x->uid[nd++] = (int64_t)(a[j] >> 32);
    x->sorted = a;
    return nd;
}

/* Swaps the working buffers of a batch's ids and distinct ids with @e's. */
static void dd_swap(Tier *x, TierDedup *e)
{
    int64_t *ids = x->ids, *uid = x->uid, *sl = x->uslot, ids_cap = x->ids_cap, u_cap = x->u_cap;
    uint64_t *sbuf = x->sbuf;
    x->ids = e->ids, x->uid = e->uid, x->uslot = e->slot, x->sbuf = e->sbuf;
    x->ids_cap = e->ids_cap, x->u_cap = e->u_cap;
    e->ids = ids, e->uid = uid, e->slot = sl, e->sbuf = sbuf, e->ids_cap = ids_cap;
    e->u_cap = u_cap;
}

/* Keeps the working batch (a prefetch's: @m ids, @nd distinct) for its lookup. */
void emb__tier_dd_keep(Tier *x, int64_t m, int64_t nd)
{
    TierDedup *e = &x->dd[x->dd_next];
    x->dd_next = (x->dd_next + 1) % TIER_DEDUPS;
    if (e->valid) /* never looked up: its rows no longer protected */
        emb__tier_cache_protect_all(&x->cache, e->slot, e->nd, -1);
    dd_swap(x, e);
    e->sorted = x->sorted, e->m = m, e->nd = nd, e->valid = true;
    emb__tier_cache_protect_all(&x->cache, e->slot, nd, 1); /* kept until its look-up */
    x->sorted = NULL;
}

/* The distinct ids of the working batch x->ids[0, m) when a prefetch kept them (then in the
   working buffers, as distinct_ids leaves them), else -1. */
int64_t emb__tier_dd_take(Tier *x, int64_t m)
{
    for (int i = 0; i < TIER_DEDUPS; i++) {
        TierDedup *e = &x->dd[i];
        if (!e->valid || e->m != m || memcmp(e->ids, x->ids, (size_t)m * sizeof *x->ids))
            continue;
        if (m > x->urow_cap) {
            char **r = realloc(x->urow, (size_t)m * sizeof *r);
            if (!r)
                return -1;
            x->urow = r, x->urow_cap = m;
        }
        emb__tier_cache_protect_all(&x->cache, e->slot, e->nd, -1);
        dd_swap(x, e);
        x->sorted = e->sorted;
        e->valid = false, e->sorted = NULL;
        return e->nd;
    }
    return -1;
}

/* Room for one more batch range of @n records: 0 or EMB_ENOMEM. */
