/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_prefetch.c — the look-ahead prefetch of a tiered table (tier.h):
 * asynchronous reads of a batch's missing rows into free or evictable slots, the dirty
 * victims parked by the write-back path and written in the same submission.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tables/tiered/tier.h"

/* Room for @n more prefetch requests (the array is not in flight): false when none. */
static bool pf_room(Tier *x, int64_t n)
{
    if (x->npf + n <= x->pf_cap)
        return true;
    const int64_t cap = EMB_MAX(2 * x->pf_cap, x->npf + n);
    EmbTierReq *p = realloc(x->pf, (size_t)cap * sizeof *p);
    if (p)
        x->pf = p;
    int64_t *o = p ? realloc(x->pf_order, (size_t)cap * sizeof *o) : NULL;
    if (!o)
        return false;
    x->pf_order = o, x->pf_cap = cap;
    return true;
}

/* Sorts @n indices of x->pf by their slots (heapsort: n log n, in place, no allocation). */
static void sift(const Tier *x, int64_t *a, int64_t i, int64_t n)
{
    for (int64_t c; (c = 2 * i + 1) < n; i = c) {
        if (c + 1 < n && x->pf[a[c + 1]].buf > x->pf[a[c]].buf)
            c++;
        if (x->pf[a[c]].buf <= x->pf[a[i]].buf)
            return;
        const int64_t t = a[i];
        a[i] = a[c], a[c] = t;
    }
}

static void sort_by_slot(const Tier *x, int64_t *a, int64_t n)
{
    for (int64_t i = n / 2 - 1; i >= 0; i--)
        sift(x, a, i, n);
    for (int64_t k = n - 1; k > 0; k--) {
        const int64_t t = a[0];
        a[0] = a[k], a[k] = t;
        sift(x, a, 0, k);
    }
}

/* Room for @n parked write-backs in x->pfw (none in flight): false when none. */
static bool pfw_room(Tier *x, int64_t n)
{
    if (n <= x->pfw_cap)
        return true;
    EmbTierReq *p = realloc(x->pfw, (size_t)n * sizeof *p);
    if (!p)
        return false;
    x->pfw = p, x->pfw_cap = n;
    return true;
}

static bool park_pf(Tier *x, int64_t v)
{
    const bool ok = emb__tier_wb_park(x, v, &x->pfw[x->npfw], EMB_TIER_VALID | TIER_SP_WB);
    x->npfw += ok;
    return ok;
}

/* A slot for the prefetch of @id: a free or evictable one, or -1. A dirty victim is parked
   (emb__tier_wb_park), its write in x->pfw sent with the prefetch's reads; a write that
   fails leaves the row in the scratch pad, dirty (emb__tier_pf_settle). */
static int64_t pf_slot(Tier *x, int64_t id)
{
    const int64_t v = emb__tier_cache_victim(&x->cache, id, 1);
    if (v < 0 || ((x->cache.slots[v].flags & EMB_TIER_DIRTY) && !park_pf(x, v)))
        return -1;
    x->st.evictions += (x->cache.slots[v].flags & EMB_TIER_VALID) != 0;
    emb__tier_cache_install(&x->cache, v, id, EMB_TIER_LOADING);
    return v;
}

/* A scratch row for the prefetch of @id (its set had no slot for it), loading, kept for
   its lookup (TIER_SP_PF): its record, or NULL (no memory: the lookup reads it). */
static char *pf_scratch(Tier *x, int64_t id)
{
    if (emb__tier_sp_room(x))
        return NULL;
    const int64_t k = x->sp.n++;
    x->sp.ids[k] = id;
    x->sp.flags[k] = EMB_TIER_VALID | EMB_TIER_LOADING | TIER_SP_PF;
    emb__tier_sp_map_put(&x->sp, k);
    return emb__tier_sp_row(x, k);
}

/* One prefetch more for the scratch rows kept for a lookup: those older than the deepest
   prefetch are not anybody's any more (ordinary clean rows, dropped at the next release). */
static void pf_age(Tier *x)
{
    for (int64_t k = 0; k < x->sp.n; k++) {
        uint8_t *f = &x->sp.flags[k];
        if (!(*f & TIER_SP_PF))
            continue;
        if ((*f & TIER_SP_AGE) / TIER_SP_AGE1 >= TIER_DEDUPS - 1)
            *f &= (uint8_t) ~(TIER_SP_PF | TIER_SP_AGE);
        else
            *f = (uint8_t)(*f + TIER_SP_AGE1);
    }
}

/* Queues reads of the missing rows of @ids into free or evictable slots, dirty victims'
   write-backs in the same submission (emb__tier_wb_park); the resident rows of @ids are marked
   as read ahead, so that the next prefetch does not evict them before they are used. */
static void prefetch_locked(Tier *x, const int64_t *ids, int64_t n, int64_t *slot)
{
    if (x->release_pending)
        emb__tier_release_locked(x);
    emb__tier_pf_settle(x, true);
    pf_age(x);
    if (!x->npinned) /* between operations: the last prefetch's parked rows dropped */
        emb__tier_wb_settle(x);
    emb__tier_log_compact(x); /* nothing of the prefetch's in flight */
    for (int64_t k = 0; slot && k < n; k++)
        slot[k] = -1;
    if (!pf_room(x, n) || !pfw_room(x, n))
        return;
    for (int64_t k = 0; k < n; k++) {
        if (k + SET_AHEAD < n)
            emb__tier_cache_prefetch(&x->cache, ids[k + SET_AHEAD]);
        const int64_t s = emb__tier_cache_find(&x->cache, ids[k]);
        if (s >= 0 && (x->cache.slots[s].flags & EMB_TIER_VALID)) {
            emb__tier_cache_touch(&x->cache, s);
            x->cache.slots[s].flags |= EMB_TIER_AHEAD;
        }
        if (slot)
            slot[k] = s;
        if (s >= 0 || emb__tier_sp_find(&x->sp, ids[k]) >= 0)
            continue;
        const int64_t v = pf_slot(x, ids[k]);
        char *row = v >= 0 ? emb__tier_cache_row(&x->cache, v) : pf_scratch(x, ids[k]);
        if (row)
            x->pf[x->npf++] = emb__tier_req(x, ids[k], row, false);
        if (slot)
            slot[k] = v;
    }
    x->st.prefetched += x->npf;
    emb__tier_log_submit(x, x->pfw, x->npfw, TIER_LOG_BG, true);
    emb__tier_io_submit_background(x->io, x->pf, x->npf);
    for (int64_t i = 0; i < x->npf; i++)
        x->pf_order[i] = i;
    sort_by_slot(x, x->pf_order, x->npf);
}

void emb__tier_prefetch(Tier *x, const int64_t *ids, int64_t n)
{
    pthread_mutex_lock(&x->mu);
    prefetch_locked(x, ids, n, NULL);
    pthread_mutex_unlock(&x->mu);
}


void emb__tier_prefetch_batch(Tier *x, const void *ids, bool id32, int64_t n)
{
    pthread_mutex_lock(&x->mu);
    const int64_t m = emb__tier_batch_ids(x, ids, id32, 0, n);
    const int64_t nd = m < 0 ? -1 : emb__tier_distinct_ids(x, m);
    if (nd >= 0) { /* ascending: the reads go in file order */
        prefetch_locked(x, x->uid, nd, x->uslot);
        emb__tier_dd_keep(x, m, nd); /* for the lookup of these ids */
    }
    else if (m >= 0) /* else out of memory: a hint */
        prefetch_locked(x, x->ids, m, NULL);
    pthread_mutex_unlock(&x->mu);
}
