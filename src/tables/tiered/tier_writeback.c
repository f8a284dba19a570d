/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_writeback.c — the one write-back path of a tiered table (tier.h): a dirty
 * row leaves the cache only by being parked in the scratch pad with its write queued
 * (emb__tier_wb_park: a resolve's victims, sent with its reads; a prefetch's, sent in the
 * background); the writes in flight are settled here (the prefetch's parked rows and reads:
 * emb__tier_pf_settle), the scratch pad's dirty rows are written at the end of an operation
 * (emb__tier_wb_settle, retried by emb__tier_wb_retry) and every dirty row by a flush. A write
 * that fails leaves its row dirty where it is: nothing is lost and the call can be retried.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tables/tiered/tier.h"


/* ---- requests -------------------------------------------------------------------------- */

/* Room for @n requests in x->rq: 0 or EMB_ENOMEM. */
int emb__tier_rq_room(Tier *x, int64_t n)
{
    if (n <= x->rq_cap)
        return 0;
    EmbTierReq *q = realloc(x->rq, (size_t)n * sizeof *q);
    x->rq = q ? q : x->rq;
    int64_t *v = q ? realloc(x->wslot, (size_t)n * sizeof *v) : NULL;
    if (!v)
        return emb__fail(EMB_ENOMEM, "%s: out of memory for %lld I/O requests", x->label,
                         (long long)n);
    x->wslot = v, x->rq_cap = n;
    return 0;
}

/* Parks the dirty row of cache slot @v in the scratch pad (flags @flags) and makes *@q its
   write-back, from the parked copy: the slot is free at once and the row stays found (hit()
   looks in the scratch pad) until its write has been settled. false: no memory (nothing
   changed, the slot not taken). */
bool emb__tier_wb_park(Tier *x, int64_t v, EmbTierReq *q, uint8_t flags)
{
    if (emb__tier_sp_room(x))
        return false;
    const int64_t k = x->sp.n++;
    x->sp.ids[k] = x->cache.slots[v].id;
    x->sp.flags[k] = flags;
    emb__tier_sp_map_put(&x->sp, k);
    memcpy(emb__tier_sp_row(x, k), emb__tier_cache_row(&x->cache, v), x->recbytes);
    *q = emb__tier_req(x, x->sp.ids[k], emb__tier_sp_row(x, k), true);
    return true;
}

/* Settles the prefetch's read @q into a scratch row (TIER_SP_PF): loaded, or, where the read
   failed, the row made unfindable (id -1, dropped at the next release; the lookup reads it
   again and reports). */
static void pf_settle_scratch(Tier *x, const EmbTierReq *q)
{
    const int64_t k = emb__tier_sp_find(&x->sp, q->tag);
    if (k < 0 || !(x->sp.flags[k] & EMB_TIER_LOADING) || emb__tier_sp_row(x, k) != q->buf)
        return; /* cannot happen: a loading row stays where it is until settled */
    x->sp.flags[k] &= (uint8_t)~EMB_TIER_LOADING;
    if (q->res)
        x->sp.ids[k] = -1, x->sp.flags[k] = 0;
    x->st.rows_read += !q->res;
}

/* Settles the prefetch's reads once they are all done (with @wait, waits for them, and
   for its write-backs; not for a compaction's reads): each slot becomes valid, or free when
   its read failed (a resolve reads it again and reports). */
void emb__tier_pf_settle(Tier *x, bool wait)
{
    if ((!x->npf && !x->npfw) || (!wait && emb__tier_io_pending(x->io)))
        return;
    for (int64_t i = 0; i < x->npf; i++)
        emb__tier_io_wait_one(x->io, &x->pf[i]);
    emb__tier_log_wait(x, TIER_LOG_BG);
    emb__tier_log_settle(x, x->pfw, x->npfw, TIER_LOG_BG);
    for (int64_t i = 0; i < x->npfw; i++) { /* parked victims: clean, or dirty to retry */
        const int64_t k = emb__tier_sp_find(&x->sp, x->pfw[i].tag);
        if (k < 0)
            continue; /* cannot happen: a parked row stays until its write is settled */
        x->sp.flags[k] &= (uint8_t)~TIER_SP_WB;
        x->sp.flags[k] |= x->pfw[i].res ? EMB_TIER_DIRTY : 0;
        x->wb_failed |= x->pfw[i].res != 0;
        x->st.rows_written += !x->pfw[i].res;
    }
    x->npfw = 0;
    for (int64_t i = 0; i < x->npf; i++) {
        if (!emb__tier_in_cache(x, x->pf[i].buf)) {
            pf_settle_scratch(x, &x->pf[i]);
            continue;
        }
        EmbTierSlot *e = &x->cache.slots[emb__tier_slot_of(x, x->pf[i].buf)];
        if (!(e->flags & EMB_TIER_LOADING) || e->id != x->pf[i].tag)
            continue;
        e->flags = x->pf[i].res ? 0 : EMB_TIER_VALID | EMB_TIER_AHEAD;
        x->st.rows_read += !x->pf[i].res;
    }
    x->npf = 0;
}

/* Waits for the prefetch's read into slot @s (its index found by bisection of pf_order)
   and settles that slot alone: the step waits only for the rows it needs. */
void emb__tier_pf_wait_slot(Tier *x, int64_t s)
{
    int64_t lo = 0, hi = x->npf;
    while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        if (emb__tier_slot_of(x, x->pf[x->pf_order[mid]].buf) < s)
            lo = mid + 1;
        else
            hi = mid;
    }
    EmbTierReq *q = lo < x->npf ? &x->pf[x->pf_order[lo]] : NULL;
    if (!q || emb__tier_slot_of(x, q->buf) != s) {
        emb__tier_pf_settle(x, true); /* cannot happen: every LOADING slot not pinned is the prefetch's */
        return;
    }
    emb__tier_io_wait_one(x->io, q);
    EmbTierSlot *e = &x->cache.slots[s];
    e->flags = q->res ? 0 : EMB_TIER_VALID | EMB_TIER_AHEAD;
    x->st.rows_read += !q->res;
    q->tag = -1; /* settled */
}

/* ---- release, flush, prefetch ---------------------------------------------------------- */

/* Writes back the scratch pad's unpinned dirty rows and drops its clean unpinned ones;
   rows whose write fails stay (dirty, x->wb_failed), to be retried by the next operation
   (wb_retry) or flush. Returns the writes it made (x->rq). */
int64_t emb__tier_wb_settle(Tier *x)
{
    TierScratch *sp = &x->sp;
    int64_t nw = 0;
    x->wb_failed &= sp->n > 0; /* nothing left to write */
    if (!sp->n || emb__tier_rq_room(x, sp->n))
        return 0;
    for (int64_t k = 0; k < sp->n; k++)
        if ((sp->flags[k] & (EMB_TIER_DIRTY | TIER_SP_PINNED | TIER_SP_WB)) == EMB_TIER_DIRTY)
            x->rq[nw++] = emb__tier_req(x, sp->ids[k], emb__tier_sp_row(x, k), true);
    emb__tier_log_run(x, x->rq, nw);
    for (int64_t i = 0, k = 0; i < nw; i++) {
        while (emb__tier_sp_row(x, k) != x->rq[i].buf)
            k++;
        if (!x->rq[i].res)
            sp->flags[k] &= (uint8_t)~EMB_TIER_DIRTY, x->st.rows_written++;
    }
    x->wb_failed = emb__tier_any_failed(x->rq, nw);
    for (int64_t k = 0; k < sp->n; k++)
        if (sp->flags[k] & (TIER_SP_PINNED | TIER_SP_WB | EMB_TIER_LOADING))
            return nw; /* rows handed out, being written or read stay where they are */
    int64_t m = 0;
    for (int64_t k = 0; k < sp->n; k++) {
        if (!(sp->flags[k] & (EMB_TIER_DIRTY | TIER_SP_PINNED | TIER_SP_PF)))
            continue;
        if (m != k) {
            memcpy(emb__tier_sp_row(x, m), emb__tier_sp_row(x, k), x->recbytes);
            sp->ids[m] = sp->ids[k], sp->flags[m] = sp->flags[k];
        }
        m++;
    }
    sp->n = m;
    emb__tier_sp_rehash(sp, m);
    return nw;
}

/* At a resolve: the scratch rows whose write-back failed (at a release or under a
   prefetch) are written again; if that fails, an error naming the file and rows, and the
   resolve does nothing (the rows stay dirty; the call can be retried). A disk that takes
   no write-backs stops the training at the next step rather than filling the pad. */
int emb__tier_wb_retry(Tier *x)
{
    if (!x->wb_failed)
        return 0;
    emb__tier_pf_settle(x, true);
    const int64_t nw = emb__tier_wb_settle(x);
    if (!x->wb_failed)
        return 0;
    return nw ? emb__tier_io_fail(x, x->rq, nw, "writing back")
              : emb__fail(EMB_ENOMEM, "%s: out of memory for a write-back", x->label);
}

/* Ends the operation: unpins its rows (with release_pending, only those pinned before the
   update's commit: column() calls since then may belong to the next operation). */
void emb__tier_release_locked(Tier *x)
{
    const int64_t upto = x->release_pending ? x->release_mark : x->npinned;
    x->release_pending = false;
    x->counted = false;
    x->held = false;
    x->step_nd = -1;
    x->nbr = x->nbrow = 0;
    emb__tier_pf_settle(x, false);
    const int64_t rest = x->npinned - upto;
    emb__tier_unpin_from(x, 0, upto);
    if (rest > 0) /* (pinned is NULL while nothing was ever pinned) */
        memmove(x->pinned, x->pinned + upto, (size_t)rest * sizeof *x->pinned);
    x->npinned = rest;
    emb__tier_wb_settle(x);
    emb__tier_log_compact(x);
}
/* The next up to @max dirty rows from record *@at on (cache slots, then scratch rows
   from nslots on) as write requests in x->rq: their count. */
static int64_t dirty_piece(Tier *x, int64_t *at, int64_t max)
{
    int64_t nw = 0;
    for (; *at < x->cache.nslots && nw < max; ++*at)
        if (x->cache.slots[*at].flags & EMB_TIER_DIRTY)
            x->rq[nw++] = emb__tier_req(x, x->cache.slots[*at].id,
                                        emb__tier_cache_row(&x->cache, *at), true);
    for (int64_t k; (k = *at - x->cache.nslots) < x->sp.n && nw < max; ++*at)
        if (x->sp.flags[k] & EMB_TIER_DIRTY)
            x->rq[nw++] = emb__tier_req(x, x->sp.ids[k], emb__tier_sp_row(x, k), true);
    return nw;
}

/* Writes the dirty rows back, in pieces of FLUSH_PIECE bytes (its requests and staging,
   kept for the table's life, are not the size of the cache), and syncs; they are marked
   clean only once the sync has succeeded (a failed write-back or sync may have lost any of
   them: all are written again). The lock is held throughout: every dirty row was written. */
#define FLUSH_PIECE (8 << 20)
static int flush_locked(Tier *x)
{
    emb__tier_pf_settle(x, true);
    const int64_t piece = EMB_MAX(1, FLUSH_PIECE / (int64_t)x->recbytes);
    if (emb__tier_rq_room(x, EMB_MIN(piece, x->cache.nslots + x->sp.n)))
        return emb__fail(EMB_ENOMEM, "%s: out of memory for a flush", x->label);
    const int cut = emb__tier_check_size(x); /* a write past its end would leave holes */
    if (cut)
        return cut;
    int64_t at = 0, nw, total = 0;
    while ((nw = dirty_piece(x, &at, piece)) > 0) {
        emb__tier_log_run(x, x->rq, nw);
        x->st.rows_written += nw - emb__tier_count_failed(x->rq, nw);
        if (emb__tier_any_failed(x->rq, nw))
            return emb__tier_io_fail(x, x->rq, nw, "writing back");
        total += nw;
    }
    const int e = emb__tier_io_sync(x->fd);
    if (e)
        return emb__fail(EMB_EIO, "%s: syncing %s: %s (its %lld dirty rows stay dirty)",
                         x->label, x->path, strerror(-e), (long long)total);
    for (int64_t s = 0; s < x->cache.nslots; s++)
        x->cache.slots[s].flags &= (uint8_t)~EMB_TIER_DIRTY;
    for (int64_t k = 0; k < x->sp.n; k++)
        x->sp.flags[k] &= (uint8_t)~EMB_TIER_DIRTY;
    return emb__tier_manifest_write(x); /* the rows are safe in the file: a retry rewrites it */
}

int emb__tier_flush(Tier *x)
{
    pthread_mutex_lock(&x->mu);
    if (x->release_pending)
        emb__tier_release_locked(x);
    const int r = flush_locked(x);
    if (!r && !x->npinned)
        emb__tier_wb_settle(x);
    pthread_mutex_unlock(&x->mu);
    return r;
}

