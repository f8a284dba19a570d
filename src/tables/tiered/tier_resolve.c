/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_resolve.c — resolving rows of a tiered table (tier.h): hits in the cache
 * or the scratch pad, misses read in one batch into victim slots (dirty victims parked by the
 * write-back path and written with the reads) or scratch rows; an update's rows; the end of
 * an operation. A failed resolve undoes itself: nothing is lost, the call can be retried.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tables/tiered/tier.h"


/* Undoes a failed resolve: the rows this call started loading are dropped, the victims
   (parked in the scratch pad) go back to their slots (dirty where their write failed), the
   call's scratch rows and pins are dropped. */
static void resolve_undo(Tier *x, const EmbTierReq *w, int64_t nw, const EmbTierReq *rd,
                         int64_t nr, int64_t mark, int64_t sp0)
{
    emb__tier_unpin_from(x, mark, x->npinned);
    x->npinned = mark;
    for (int64_t i = 0; i < nr; i++)
        if (emb__tier_in_cache(x, rd[i].buf))
            x->cache.slots[emb__tier_slot_of(x, rd[i].buf)].flags = 0;
    for (int64_t i = 0; i < nw; i++) {
        EmbTierSlot *e = &x->cache.slots[x->wslot[i]];
        memcpy(emb__tier_cache_row(&x->cache, x->wslot[i]), w[i].buf, x->recbytes);
        e->id = w[i].tag;
        e->flags = EMB_TIER_VALID | (w[i].res ? EMB_TIER_DIRTY : 0);
    }
    if (x->sp.n != sp0) {
        x->sp.n = sp0;
        emb__tier_sp_rehash(&x->sp, sp0); /* cannot fail: the map only shrinks or stays */
    }
}

/* Row of a hit (cache or scratch, pinned; @dirty: marked dirty), or NULL for a miss, or
   for a scratch row a prefetch read for the lookup (TIER_SP_PF: its index in *@ahead, for
   take_ahead; else -1). @s0: the slot a prefetch found or gave @id (-1: none), looked at
   before the id's set. */
static char *hit(Tier *x, int64_t id, uint8_t dirty, int64_t s0, int64_t *ahead)
{
    *ahead = -1;
    int64_t s = s0 >= 0 && x->cache.slots[s0].id == id &&
                        (x->cache.slots[s0].flags & (EMB_TIER_VALID | EMB_TIER_LOADING))
                    ? s0
                    : emb__tier_cache_find(&x->cache, id);
    if (s >= 0 && (x->cache.slots[s].flags & EMB_TIER_LOADING) && !x->cache.slots[s].pins) {
        emb__tier_pf_wait_slot(x, s); /* a prefetched row still in flight */
        s = emb__tier_cache_find(&x->cache, id);
    }
    if (s >= 0) {
        emb__tier_use_slot(x, s, dirty);
        emb__tier_pin_slot(x, s);
        return emb__tier_cache_row(&x->cache, s);
    }
    int64_t k = emb__tier_sp_find(&x->sp, id);
    if (k >= 0 && (x->sp.flags[k] & (TIER_SP_WB | EMB_TIER_LOADING))) {
        /* a row a prefetch parked, its write-back still in flight from these bytes (the
           caller may write the row, so that write completes first), or one it is reading */
        emb__tier_pf_settle(x, true);
        k = emb__tier_sp_find(&x->sp, id);
    }
    if (k >= 0 && (x->sp.flags[k] & TIER_SP_PF))
        *ahead = k;
    if (k < 0 || *ahead >= 0)
        return NULL;
    x->sp.flags[k] |= dirty;
    emb__tier_pin_sp(x, k);
    return emb__tier_sp_row(x, k);
}

/* The slot the lookup's victim choice gives @id, its dirty victim parked (emb__tier_wb_park;
   its write in w, its slot in x->wslot), installed with @flags and pinned: its index; -1:
   no slot; CLAIM_NOMEM: no memory to park the victim (nothing changed). */
#define CLAIM_NOMEM (-2)
static int64_t claim(Tier *x, int64_t id, uint8_t flags, EmbTierReq *w, int64_t *nw)
{
    const int64_t v = emb__tier_cache_victim(&x->cache, id, 0);
    if (v < 0)
        return -1;
    EmbTierSlot *e = &x->cache.slots[v];
    if (e->flags & EMB_TIER_DIRTY) {
        if (!emb__tier_wb_park(x, v, &w[*nw], EMB_TIER_VALID))
            return CLAIM_NOMEM;
        x->wslot[(*nw)++] = v;
    }
    x->st.evictions += (e->flags & EMB_TIER_VALID) != 0;
    emb__tier_cache_install(&x->cache, v, id, flags);
    emb__tier_pin_slot(x, v);
    return v;
}

/* The row of @id that a prefetch read into scratch row @k (its set had no slot for it
   then): moved into the slot the lookup's own victim choice gives it (a dirty victim parked
   as place() does), else kept in the scratch pad; pinned, as hit() pins. */
static char *take_ahead(Tier *x, int64_t id, int64_t k, uint8_t dirty, EmbTierReq *w,
                        int64_t *nw)
{
    x->sp.flags[k] &= (uint8_t) ~(TIER_SP_PF | TIER_SP_AGE);
    const int64_t v = claim(x, id, EMB_TIER_VALID | dirty, w, nw);
    if (v < 0) {
        x->sp.flags[k] |= dirty;
        emb__tier_pin_sp(x, k);
        return emb__tier_sp_row(x, k);
    }
    memcpy(emb__tier_cache_row(&x->cache, v), emb__tier_sp_row(x, k), x->recbytes);
    x->sp.ids[k] = -1, x->sp.flags[k] = 0; /* clean: dropped at the release */
    return emb__tier_cache_row(&x->cache, v);
}

/* A slot (or a scratch row) for the missing row @id, pinned, its read queued in rd and a
   dirty victim parked (emb__tier_wb_park; its write in w, its slot in x->wslot: sent with
   the reads). NULL: out of memory for the scratch pad. */
static char *place(Tier *x, int64_t id, uint8_t dirty, EmbTierReq *w, int64_t *nw,
                   EmbTierReq *rd, int64_t *nr)
{
    char *row;
    const int64_t v = claim(x, id, EMB_TIER_LOADING, w, nw);
    if (v == CLAIM_NOMEM)
        return NULL;
    if (v >= 0) {
        row = emb__tier_cache_row(&x->cache, v);
    } else {
        if (emb__tier_sp_room(x))
            return NULL;
        const int64_t k = x->sp.n++;
        x->sp.ids[k] = id;
        x->sp.flags[k] = EMB_TIER_VALID | dirty;
        emb__tier_sp_map_put(&x->sp, k);
        emb__tier_pin_sp(x, k);
        row = emb__tier_sp_row(x, k);
        x->st.scratch_rows++;
    }
    rd[(*nr)++] = emb__tier_req(x, id, row, false);
    return row;
}


/* Resolves and pins the rows of @ids into @rows (NULL: not handed out); with @dirty they
   are marked dirty as they are found or read (an UPDATE: one pass, no second find).
   @hint (NULL: none): each id's slot when its prefetch found or gave it one (hit()). */
int emb__tier_resolve_locked(Tier *x, const int64_t *ids, int64_t n, char **rows, bool dirty,
                          const int64_t *hint)
{
    const uint8_t d = dirty ? EMB_TIER_DIRTY : 0;
    if (emb__tier_pin_room(x, n) || emb__tier_rq_room(x, 2 * n))
        return emb__fail(EMB_ENOMEM, "%s: out of memory for %lld rows", x->label, (long long)n);
    const int64_t mark = x->npinned, sp0 = x->sp.n;
    EmbTierReq *w = x->rq, *rd = x->rq + n;
    int64_t nw = 0, nr = 0;
    for (int64_t k = 0; k < n; k++) {
        if (k + SET_AHEAD < n && hint && hint[k + SET_AHEAD] >= 0)
            __builtin_prefetch(&x->cache.slots[hint[k + SET_AHEAD]], 1);
        else if (k + SET_AHEAD < n)
            emb__tier_cache_prefetch(&x->cache, ids[k + SET_AHEAD]);
        if (!x->counted) /* admission counts each distinct id once an operation */
            emb__tier_cache_count(&x->cache, ids[k]);
        int64_t a;
        char *row = hit(x, ids[k], d, hint ? hint[k] : -1, &a);
        row = a >= 0 ? take_ahead(x, ids[k], a, d, w, &nw) : row;
        x->st.hits += row && !x->counted;
        if (!row && !(row = place(x, ids[k], d, w, &nw, rd, &nr))) {
            for (int64_t i = 0; i < nw; i++)
                w[i].res = -ENOMEM; /* not written: the victims go back dirty */
            resolve_undo(x, w, nw, rd, nr, mark, sp0);
            return emb__fail(EMB_ENOMEM, "%s: out of memory for the scratch pad", x->label);
        }
        if (rows)
            rows[k] = row;
    }
    /* a write-back into a file cut by someone else would leave a hole of rows reading 0 */
    const int cut = nw ? emb__tier_check_size(x) : 0;
    if (cut) {
        for (int64_t i = 0; i < nw; i++)
            w[i].res = -EIO; /* not written: the victims go back dirty */
        resolve_undo(x, w, nw, rd, nr, mark, sp0);
        return cut;
    }
    x->st.misses += nr;
    emb__tier_log_submit(x, w, nw, TIER_LOG_SYNC, false); /* the parked copies, with the reads */
    emb__tier_io_run(x->io, rd, nr);
    emb__tier_log_wait(x, TIER_LOG_SYNC);
    emb__tier_log_settle(x, w, nw, TIER_LOG_SYNC);
    int r = emb__tier_any_failed(w, nw) ? emb__tier_io_fail(x, w, nw, "writing back") : 0;
    r = r ? r : emb__tier_any_failed(rd, nr) ? emb__tier_io_fail(x, rd, nr, "reading") : 0;
    emb__tier_pf_settle(x, false);
    x->st.rows_written += nw - emb__tier_count_failed(w, nw);
    if (r) {
        resolve_undo(x, w, nw, rd, nr, mark, sp0);
        return r;
    }
    for (int64_t i = 0; i < nr; i++)
        if (emb__tier_in_cache(x, rd[i].buf))
            x->cache.slots[emb__tier_slot_of(x, rd[i].buf)].flags = EMB_TIER_VALID | d;
    x->st.rows_read += nr;
    return 0;
}

int emb__tier_resolve(Tier *x, const int64_t *ids, int64_t n, char **rows, bool dirty)
{
    pthread_mutex_lock(&x->mu);
    if (x->release_pending || x->held)
        emb__tier_release_locked(x);
    int r = emb__tier_wb_retry(x);
    r = r ? r : emb__tier_resolve_locked(x, ids, n, rows, dirty, NULL);
    pthread_mutex_unlock(&x->mu);
    return r;
}

/* The in-range ids of a batch's ids [k0, k1) into x->ids: their count, or -1 (no memory). */
int emb__tier_column(Tier *x, int64_t id, char **row, bool dirty)
{
    pthread_mutex_lock(&x->mu);
    const int r = emb__tier_resolve_locked(x, &id, 1, row, dirty, NULL);
    pthread_mutex_unlock(&x->mu);
    return r;
}


void emb__tier_release(Tier *x)
{
    pthread_mutex_lock(&x->mu);
    if (x->nbr == 1 && x->step_nd >= 0 && !x->release_pending) {
        /* a lookup of one deduplicated range: held (its pins kept) for its update */
        x->held = true;
        x->counted = false;
        x->nbr = x->nbrow = 0; /* no span of a later operation takes these pointers */
    } else {
        emb__tier_release_locked(x);
    }
    pthread_mutex_unlock(&x->mu);
}

/* The index in the held step's distinct ids of @id, or -1; @cur: where the last search
   ended (an update's ids come ascending: the next one is there). */
static int64_t step_find(const Tier *x, int64_t id, int64_t *cur)
{
    const int64_t *u = x->step_uid, nd = x->step_nd;
    const int64_t c = *cur;
    if (c < nd && u[c] == id) {
        *cur = c + 1;
        return c;
    }
    int64_t lo = c > 0 && c <= nd && u[c - 1] < id ? c : 0, hi = nd;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (u[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < nd && u[lo] == id) {
        *cur = lo + 1;
        return lo;
    }
    return -1;
}

/* The update's resolve: rows of the held step are pinned already and found in its distinct
   ids (marked dirty and used, as hit() does); the others, if any, go through resolve. */
static int resolve_update_locked(Tier *x, const int64_t *ids, int64_t n, char **rows)
{
    if (!x->held)
        return emb__tier_resolve_locked(x, ids, n, rows, true, NULL);
    int64_t cur = 0, nmiss = 0;
    for (int64_t k = 0; k < n; k++) {
        if (cur + SET_AHEAD < x->step_nd && emb__tier_in_cache(x, x->step_urow[cur + SET_AHEAD]))
            __builtin_prefetch(&x->cache.slots[emb__tier_slot_of(x, x->step_urow[cur + SET_AHEAD])], 1);
        const int64_t j = step_find(x, ids[k], &cur);
        char *row = j < 0 ? NULL : x->step_urow[j];
        rows[k] = row;
        if (!row)
            nmiss++;
        else if (emb__tier_in_cache(x, row))
            emb__tier_use_slot(x, emb__tier_slot_of(x, row), EMB_TIER_DIRTY);
        else
            x->sp.flags[emb__tier_sp_find(&x->sp, ids[k])] |= EMB_TIER_DIRTY;
    }
    x->st.hits += n - nmiss;
    if (!nmiss)
        return 0;
    if (nmiss > x->mrow_cap) {
        char **mr = realloc(x->mrow, (size_t)nmiss * sizeof *mr);
        if (!mr)
            return emb__fail(EMB_ENOMEM, "%s: out of memory for %lld rows", x->label,
                             (long long)n);
        x->mrow = mr, x->mrow_cap = nmiss;
    }
    if (nmiss > x->ids_cap) {
        int64_t *mi = realloc(x->ids, (size_t)nmiss * sizeof *mi);
        if (!mi)
            return emb__fail(EMB_ENOMEM, "%s: out of memory for %lld rows", x->label,
                             (long long)n);
        x->ids = mi, x->ids_cap = nmiss;
    }
    for (int64_t k = 0, i = 0; k < n; k++)
        if (!rows[k])
            x->ids[i++] = ids[k];
    const int r = emb__tier_resolve_locked(x, x->ids, nmiss, x->mrow, true, NULL);
    for (int64_t k = 0, i = 0; k < n && !r; k++)
        if (!rows[k])
            rows[k] = x->mrow[i++];
    return r;
}

int emb__tier_resolve_update(Tier *x, const int64_t *ids, int64_t n, char **rows)
{
    pthread_mutex_lock(&x->mu);
    if (x->release_pending)
        emb__tier_release_locked(x);
    int r = emb__tier_wb_retry(x);
    r = r ? r : resolve_update_locked(x, ids, n, rows);
    pthread_mutex_unlock(&x->mu);
    return r;
}

void emb__tier_release_later(Tier *x)
{
    pthread_mutex_lock(&x->mu);
    x->release_pending = true;
    x->release_mark = x->npinned;
    pthread_mutex_unlock(&x->mu);
}

