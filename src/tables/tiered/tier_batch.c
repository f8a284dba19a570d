/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_batch.c — a lookup's batch resolves (tier.h): the in-range ids of a
 * batch range resolved once (deduplicated), each id's record kept so that the lookup's span
 * resolves copy pointers, and the held step's distinct rows kept for its update.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tables/tiered/tier.h"

static int range_room(Tier *x, int64_t n)
{
    if (x->nbr == x->br_cap) {
        const int64_t cap = EMB_MAX(8, 2 * x->br_cap);
        struct TierRange *b = realloc(x->br, (size_t)cap * sizeof *b);
        if (!b)
            return EMB_ENOMEM;
        x->br = b, x->br_cap = cap;
    }
    if (x->nbrow + n > x->brow_cap) {
        const int64_t cap = EMB_MAX(2 * x->brow_cap, x->nbrow + n);
        char **r = realloc(x->brow, (size_t)cap * sizeof *r);
        if (!r)
            return EMB_ENOMEM;
        x->brow = r, x->brow_cap = cap;
    }
    return 0;
}

/* Spreads the @m records of the in-range ids of [k0, k1) (at brow[at ..]) to their
   positions, NULL at ids out of range (backwards: in place). */
static void spread_rows(Tier *x, const void *ids, bool id32, int64_t k0, int64_t k1, int64_t m)
{
    char **r = x->brow + x->nbrow;
    for (int64_t k = k1 - 1, j = m - 1; k >= k0; k--) {
        const int64_t id = id32 ? ((const int32_t *)ids)[k] : ((const int64_t *)ids)[k];
        r[k - k0] = id >= 0 && id < x->nrows ? r[j--] : NULL;
    }
}

/* Keeps the distinct ids of the operation's first batch range and their records (urow) for
   a held step; a second range ends that (step_nd -1). */
static void keep_step(Tier *x, int64_t nd)
{
    x->step_nd = -1;
    if (nd < 0 || x->nbr)
        return;
    if (nd > x->step_cap) {
        int64_t *u = realloc(x->step_uid, (size_t)nd * sizeof *u);
        if (u)
            x->step_uid = u;
        char **r = u ? realloc(x->step_urow, (size_t)nd * sizeof *r) : NULL;
        if (!r)
            return; /* no memory: no held step, the update finds its rows */
        x->step_urow = r, x->step_cap = nd;
    }
    memcpy(x->step_uid, x->uid, (size_t)nd * sizeof *x->uid);
    memcpy(x->step_urow, x->urow, (size_t)nd * sizeof *x->urow);
    x->step_nd = nd;
}

int emb__tier_resolve_batch(Tier *x, const void *ids, bool id32, int64_t k0, int64_t k1)
{
    pthread_mutex_lock(&x->mu);
    if (x->release_pending || x->held)
        emb__tier_release_locked(x);
    int r = emb__tier_wb_retry(x);
    const int64_t m = r || range_room(x, k1 - k0) ? -1 : emb__tier_batch_ids(x, ids, id32, k0, k1);
    int64_t nd = m < 0 ? -1 : emb__tier_dd_take(x, m); /* sorted by its prefetch, slots found */
    const bool taken = nd >= 0;
    nd = m < 0 || taken ? nd : emb__tier_distinct_ids(x, m);
    r = r        ? r
        : m < 0  ? emb__fail(EMB_ENOMEM, "%s: out of memory for %lld ids", x->label,
                             (long long)(k1 - k0))
        : nd < 0 ? emb__tier_resolve_locked(x, x->ids, m, x->brow + x->nbrow, false, NULL)
                 : emb__tier_resolve_locked(x, x->uid, nd, x->urow, false, taken ? x->uslot : NULL);
    if (!r && nd >= 0) { /* each id's record, in the batch's order */
        char **row = x->brow + x->nbrow;
        for (int64_t j = 0, d = -1; j < m; j++) {
            d += j == 0 || x->sorted[j] >> 32 != x->sorted[j - 1] >> 32;
            row[(uint32_t)x->sorted[j]] = x->urow[d];
        }
    }
    if (!r) {
        keep_step(x, nd);
        spread_rows(x, ids, id32, k0, k1, m);
        x->br[x->nbr++] = (struct TierRange){ids, k0, k1, x->nbrow};
        x->nbrow += k1 - k0;
        x->counted = true; /* the operation's resolves of these rows are not counted again */
    }
    pthread_mutex_unlock(&x->mu);
    return r;
}

bool emb__tier_resolved_span(Tier *x, const void *ids, int64_t k0, int64_t n, char **rows)
{
    pthread_mutex_lock(&x->mu);
    const struct TierRange *g = NULL;
    for (int64_t i = 0; i < x->nbr && !g; i++)
        if (x->br[i].ids == ids && x->br[i].k0 <= k0 && k0 + n <= x->br[i].k1)
            g = &x->br[i];
    bool all = g != NULL;
    for (int64_t k = 0; all && k < n; k++)
        all = (rows[k] = x->brow[g->at + k0 - g->k0 + k]) != NULL;
    pthread_mutex_unlock(&x->mu);
    return all;
}

