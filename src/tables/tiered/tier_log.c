/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_log.c — the write-back log of a tiered table (tier.h; the design, its constants and
 * its crash story: docs/design/tiered-tables.md). The file's records past the homes form
 * fixed-size segments of seg_recs records; an evicted dirty row is appended to the segment
 * being filled (the head): a batch of write-backs is staged in one buffer and sent as one
 * write per run of consecutive slots (one, or two where the batch crosses into a segment
 * that is not the next one), instead of one pwrite a record at its home. The row map
 * (TierLog::loc, 4 bytes a row) names each row's newest copy; it changes only when a write
 * has completed, so a failed write leaves the map, and the row (dirty), as they were.
 *
 * Segments are recycled: one is free when no row's newest copy is there (live 0), no write
 * or compaction is pending on it and the manifest on disk does not name it (kept: a crash
 * must find what the last manifest names). Compaction rewrites the live records of
 * segments less than 2/3 live (a third stale: DeepRec's SSD tier's threshold) when no
 * segment is free, entirely on the pool's threads: the victims read whole in the
 * background; at a later call their live records queued as appends in the background; at a
 * later one still, once written, the map moved to the new copies of the rows not rewritten
 * meanwhile. So the log holds at most 1.5x its live records plus the segments named by the
 * manifest, and no call waits for compaction's I/O. It moves bytes only: a row's bits never
 * depend on when it ran.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "tables/tiered/tier.h"

#define SEG_BYTES (4 << 20) /* a segment: 4 MiB of records (8192 of 512 bytes) ... */
#define SEG_PARTS 8         /* ... or an eighth of the table's rows, if fewer */
#define RUN_MAX (64u << 20) /* the bytes of one write at most */
#define RUN_STAGE (8u << 20) /* the bytes a synchronous run stages at once at most */
#define NOT_SENT UINT32_MAX /* a request's run (its done field) when none was submitted */
#define VICTIMS TIER_LOG_VICTIMS

static int64_t seg_of(const TierLog *lg, int64_t slot)
{
    return slot / lg->seg_recs;
}


int emb__tier_log_init(Tier *x, bool create)
{
    TierLog *lg = &x->lg;
    lg->loc = calloc((size_t)EMB_MAX(1, x->nrows), sizeof *lg->loc);
    if (!lg->loc)
        return emb__fail(EMB_ENOMEM, "%s: out of memory for the row map of %lld rows",
                         x->label, (long long)x->nrows);
    lg->base = (emb__tier_rec_offset(x, x->nrows) + 4095) / 4096 * 4096;
    lg->seg_recs = EMB_MAX(1, EMB_MIN(SEG_BYTES / (int64_t)x->recbytes,
                                      (x->nrows + SEG_PARTS - 1) / SEG_PARTS));
    lg->head = -1;
    lg->uid = emb__tier_file_uid(x->fd, &lg->uid0);
    return create ? 0 : emb__tier_manifest_read(x);
}

void emb__tier_log_reset(Tier *x)
{
    TierLog *lg = &x->lg;
    if (lg->loc)
        memset(lg->loc, 0, (size_t)EMB_MAX(1, x->nrows) * sizeof *lg->loc);
    lg->nseg = 0, lg->head = -1, lg->fill = 0, lg->dirty = false, lg->cnv = 0;
    lg->moving = false, lg->ncq = 0;
    for (int i = 0; i < TIER_LOG_STAGES; i++)
        lg->nruns[i] = 0;
    lg->uid = emb__tier_file_uid(x->fd, &lg->uid0);
}

void emb__tier_log_free(TierLog *lg)
{
    free(lg->loc), free(lg->live), free(lg->pending), free(lg->kept), free(lg->cbuf);
    free(lg->cq), free(lg->cold);
    for (int i = 0; i < TIER_LOG_STAGES; i++)
        free(lg->buf[i]), free(lg->runs[i]);
    memset(lg, 0, sizeof *lg);
}

/* ---- appends --------------------------------------------------------------------------- */

/* Staging room in buffer @which for @n records: 0 or -ENOMEM. */
static int room(Tier *x, int which, int64_t n)
{
    TierLog *lg = &x->lg;
    const size_t bytes = (size_t)n * x->recbytes;
    if (bytes > lg->buf_cap[which]) {
        char *b = realloc(lg->buf[which], bytes);
        if (!b)
            return -ENOMEM;
        lg->buf[which] = b, lg->buf_cap[which] = bytes;
    }
    if (n > lg->runs_cap[which]) {
        EmbTierReq *r = realloc(lg->runs[which], (size_t)n * sizeof *r);
        if (!r)
            return -ENOMEM;
        lg->runs[which] = r, lg->runs_cap[which] = n;
    }
    return 0;
}

/* A segment to append to: the lowest free one, else a new one at the end; -1 when the log
   has no slot left that a 32-bit map can name, or no memory. */
static int64_t new_segment(TierLog *lg)
{
    for (int64_t s = 0; s < lg->nseg; s++)
        if (s != lg->head && !lg->live[s] && !lg->pending[s] && !lg->kept[s])
            return s;
    if ((lg->nseg + 1) * lg->seg_recs >= (int64_t)UINT32_MAX || emb__tier_log_segs(lg, lg->nseg + 1))
        return -1;
    return lg->nseg - 1;
}

void emb__tier_log_submit(Tier *x, EmbTierReq *w, int64_t n, int which, bool bg)
{
    TierLog *lg = &x->lg;
    const int64_t rb = (int64_t)x->recbytes;
    lg->nruns[which] = 0;
    int err = n ? room(x, which, n) : 0;
    int64_t k = 0, nr = 0;
    EmbTierReq *runs = lg->runs[which];
    for (; k < n && !err; k++) {
        if (lg->head < 0 || lg->fill == lg->seg_recs) {
            const int64_t s = new_segment(lg);
            if (s < 0) {
                err = -ENOSPC;
                break;
            }
            lg->head = s, lg->fill = 0;
            lg->begun++;
        }
        const int64_t slot = lg->head * lg->seg_recs + lg->fill++;
        lg->pending[lg->head]++;
        char *dst = lg->buf[which] + k * rb;
        memcpy(dst, w[k].buf, (size_t)rb);
        w[k].offset = lg->base + slot * rb;
        EmbTierReq *r = nr ? &runs[nr - 1] : NULL;
        if (r && r->offset + r->len == w[k].offset && r->len + (uint64_t)rb <= RUN_MAX)
            r->len += (uint32_t)rb;
        else
            runs[nr++] = (EmbTierReq){.buf = dst, .offset = w[k].offset, .len = (uint32_t)rb,
                                      .write = 1, .tag = w[k].tag};
        w[k].done = (uint32_t)(nr - 1);
    }
    if (err) { /* nothing sent: the slots taken stay unused (stale) */
        for (int64_t i = 0; i < k; i++)
            lg->pending[seg_of(lg, (w[i].offset - lg->base) / rb)]--;
        for (int64_t i = 0; i < n; i++)
            w[i].res = err, w[i].complete = 1, w[i].done = NOT_SENT;
        return;
    }
    lg->nruns[which] = nr;
    if (bg)
        emb__tier_io_submit_background(x->io, runs, nr);
    else
        emb__tier_io_submit(x->io, runs, nr);
}

void emb__tier_log_wait(Tier *x, int which)
{
    for (int64_t i = 0; i < x->lg.nruns[which]; i++)
        emb__tier_io_wait_one(x->io, &x->lg.runs[which][i]);
}

/* emb__tier_log_settle, where @cold (not NULL) is each row's map entry when its copy was
   read: a row whose entry has changed since (rewritten meanwhile) keeps the newer copy. */
static void settle(Tier *x, EmbTierReq *w, int64_t n, int which, const uint32_t *cold)
{
    TierLog *lg = &x->lg;
    const int64_t rb = (int64_t)x->recbytes;
    for (int64_t i = 0; i < n; i++) {
        if (w[i].done == NOT_SENT)
            continue;
        const int64_t slot = (w[i].offset - lg->base) / rb, s = seg_of(lg, slot);
        w[i].res = lg->runs[which][w[i].done].res, w[i].complete = 1;
        lg->pending[s]--;
        if (w[i].res)
            continue;
        lg->appended++;
        const uint32_t old = lg->loc[w[i].tag];
        if (cold && old != cold[i])
            continue; /* the copy written is stale already: its slot stays unused */
        if (old)
            lg->live[seg_of(lg, old - 1)]--;
        lg->loc[w[i].tag] = (uint32_t)(slot + 1);
        lg->live[s]++;
        lg->dirty = true;
    }
    lg->nruns[which] = 0;
}

void emb__tier_log_settle(Tier *x, EmbTierReq *w, int64_t n, int which)
{
    settle(x, w, n, which, NULL);
}

/* In pieces of RUN_STAGE bytes at most: a flush of a whole cache's dirty rows would else
   stage a copy of the cache, kept for the table's life (resident memory twice the cache's). */
void emb__tier_log_run(Tier *x, EmbTierReq *w, int64_t n)
{
    const int64_t piece = EMB_MAX(1, (int64_t)(RUN_STAGE / x->recbytes));
    for (int64_t i = 0; i == 0 || i < n; i += piece) {
        const int64_t k = EMB_MIN(piece, n - i);
        emb__tier_log_submit(x, w + i, k, TIER_LOG_SYNC, false);
        emb__tier_log_wait(x, TIER_LOG_SYNC);
        emb__tier_log_settle(x, w + i, k, TIER_LOG_SYNC);
    }
}

/* ---- reads that bypass the cache ------------------------------------------------------- */

int emb__tier_log_read_rows(Tier *x, int64_t r0, int64_t n, char *buf)
{
    int64_t m = 0;
    for (int64_t k = 0; k < n; k++)
        m += x->lg.loc[r0 + k] != 0;
    if (!m)
        return 0;
    EmbTierReq *q = malloc((size_t)m * sizeof *q);
    if (!q)
        return emb__fail(EMB_ENOMEM, "%s: out of memory for %lld reads", x->label, (long long)m);
    for (int64_t k = 0, i = 0; k < n; k++)
        if (x->lg.loc[r0 + k])
            q[i++] = emb__tier_req(x, r0 + k, buf + k * (int64_t)x->recbytes, false);
    emb__tier_io_run(x->io, q, m);
    const int r = emb__tier_any_failed(q, m) ? emb__tier_io_fail(x, q, m, "reading") : 0;
    free(q);
    return r;
}

/* ---- compaction ------------------------------------------------------------------------ */

/* The segments to compact into @victim (flags, one a segment): when none is free, up to
   VICTIMS of those less than 2/3 live, the least live first. Their live records. */
static int64_t choose(const TierLog *lg, uint8_t *victim)
{
    const int64_t lim = lg->seg_recs * 2 / 3;
    for (int64_t s = 0; s < lg->nseg; s++)
        if (s != lg->head && !lg->live[s] && !lg->pending[s] && !lg->kept[s])
            return 0; /* a free segment: nothing to do yet */
    int64_t total = 0;
    for (int v = 0; v < VICTIMS; v++) {
        int64_t best = -1;
        for (int64_t s = 0; s < lg->nseg; s++)
            if (s != lg->head && !victim[s] && !lg->pending[s] && lg->live[s] > 0 &&
                lg->live[s] < lim && (best < 0 || lg->live[s] < lg->live[best]))
                best = s;
        if (best < 0)
            break;
        victim[best] = 1;
        total += lg->live[best];
    }
    return total;
}

/* Starts a compaction: the victims read whole into lg->cbuf in the background, on the pool's
   threads (up to the file's end: the last segment written before a reopen may be partly
   filled); the segments pending meanwhile (never chosen again nor recycled; appends go to
   the head only, so their records do not change). */
static void compact_start(Tier *x)
{
    TierLog *lg = &x->lg;
    uint8_t *victim = calloc((size_t)lg->nseg, 1);
    const int64_t m = victim ? choose(lg, victim) : 0;
    const int64_t segb = lg->seg_recs * (int64_t)x->recbytes;
    if (m && lg->cbuf_cap < (size_t)(VICTIMS * segb)) {
        char *b = realloc(lg->cbuf, (size_t)(VICTIMS * segb));
        lg->cbuf = b ? b : lg->cbuf;
        lg->cbuf_cap = b ? (size_t)(VICTIMS * segb) : lg->cbuf_cap;
    }
    struct stat st;
    const int64_t end = m && fstat(x->fd, &st) == 0 ? (int64_t)st.st_size : 0;
    for (int64_t s = 0; s < lg->nseg && end && lg->cbuf_cap >= (size_t)(VICTIMS * segb); s++)
        if (victim[s]) {
            const int64_t off = lg->base + s * segb, len = EMB_MIN(segb, end - off);
            lg->crd[lg->cnv] = (EmbTierReq){.buf = lg->cbuf + lg->cnv * segb, .offset = off,
                                            .len = (uint32_t)EMB_MAX(len, 0), .tag = -1};
            lg->cseg[lg->cnv++] = s;
            lg->pending[s]++;
        }
    free(victim);
    emb__tier_io_submit_background(x->io, lg->crd, lg->cnv);
}

/* Room for @n moves in lg->cq / lg->cold: false when there is no memory. */
static bool move_room(TierLog *lg, int64_t n)
{
    if (n <= lg->cq_cap)
        return true;
    EmbTierReq *q = realloc(lg->cq, (size_t)n * sizeof *q);
    lg->cq = q ? q : lg->cq;
    uint32_t *c = q ? realloc(lg->cold, (size_t)n * sizeof *c) : NULL;
    lg->cold = c ? c : lg->cold;
    if (c)
        lg->cq_cap = n;
    return c != NULL;
}

/* Its reads done: the victims' live records (one scan of the map) queued as appends in the
   background (TIER_LOG_MOVE), each with its map entry now; on a failed read or no memory,
   the compaction ends with nothing moved. */
static void compact_move(Tier *x)
{
    TierLog *lg = &x->lg;
    const int64_t rb = (int64_t)x->recbytes, segb = lg->seg_recs * rb;
    int64_t m = 0;
    for (int i = 0; i < lg->cnv; i++) {
        emb__tier_io_wait_one(x->io, &lg->crd[i]); /* done already: its result read */
        m += lg->live[lg->cseg[i]];
    }
    int64_t k = 0;
    if (m && move_room(lg, m) && !emb__tier_any_failed(lg->crd, lg->cnv)) {
        /* the victims' live records: one scan of the map, a row's entry compared with each
           victim's range of slots (no division a row: the scan is the map's bytes read) */
        uint64_t lo[VICTIMS];
        for (int i = 0; i < lg->cnv; i++)
            lo[i] = (uint64_t)(lg->cseg[i] * lg->seg_recs) + 1; /* map entries are slot + 1 */
        const uint64_t span = (uint64_t)lg->seg_recs;
        for (int64_t r = 0; r < x->nrows && k < m; r++) {
            const uint64_t l = lg->loc[r];
            for (int i = 0; i < lg->cnv; i++) {
                if (l - lo[i] >= span) /* (0, no copy, wraps past every range) */
                    continue;
                lg->cold[k] = (uint32_t)l;
                lg->cq[k++] = (EmbTierReq){.buf = lg->cbuf + i * segb + (int64_t)(l - lo[i]) * rb,
                                           .len = (uint32_t)rb, .write = 1, .tag = r};
                break;
            }
        }
        emb__tier_log_submit(x, lg->cq, k, TIER_LOG_MOVE, true); /* copied to its staging */
    }
    lg->ncq = k, lg->moving = true;
}

/* Its appends done: the map names the new copies of the rows not rewritten meanwhile (a
   write that failed leaves its row's copy where it was); the victims released (recycled
   once no row is there and the manifest no longer names them). */
static void compact_finish(Tier *x)
{
    TierLog *lg = &x->lg;
    emb__tier_log_wait(x, TIER_LOG_MOVE); /* done already: the results read */
    settle(x, lg->cq, lg->ncq, TIER_LOG_MOVE, lg->cold);
    lg->compactions++;
    lg->compacted += lg->ncq - emb__tier_count_failed(lg->cq, lg->ncq);
    for (int i = 0; i < lg->cnv; i++)
        lg->pending[lg->cseg[i]]--;
    lg->cnv = 0, lg->ncq = 0, lg->moving = false;
}

void emb__tier_log_compact(Tier *x)
{
    TierLog *lg = &x->lg;
    if (!lg->nseg)
        return;
    const int64_t t0 = emb__tier_now_ns();
    /* a step only where no prefetch read is in flight (of a slot the map is about to move,
       whose segment could then be recycled); each step waits for its own I/O, which a
       resolve's I/O may have passed in the pool's queue (tier_pool.c) */
    const bool quiet = !x->npf && !x->npfw;
    if (!lg->cnv)
        compact_start(x);
    else if (quiet && !lg->moving)
        compact_move(x);
    else if (quiet)
        compact_finish(x);
    lg->compact_ns += emb__tier_now_ns() - t0;
}

void emb__tier_log_quiesce(Tier *x)
{
    TierLog *lg = &x->lg;
    if (!lg->cnv)
        return;
    for (int i = 0; i < lg->cnv; i++)
        emb__tier_io_wait_one(x->io, &lg->crd[i]);
    if (lg->moving) { /* settled: the copies written are as good as the ones read */
        compact_finish(x);
        return;
    }
    for (int i = 0; i < lg->cnv; i++)
        lg->pending[lg->cseg[i]]--;
    lg->cnv = 0;
}

void emb__tier_log_stats(const Tier *x, EmbTieredStats *out)
{
    const TierLog *lg = &x->lg;
    const int64_t rb = (int64_t)x->recbytes;
    int64_t live = 0;
    for (int64_t s = 0; s < lg->nseg; s++)
        live += lg->live[s];
    out->log_bytes_appended = lg->appended * rb;
    out->log_segments = lg->begun;
    out->log_compactions = lg->compactions;
    out->log_bytes_compacted = lg->compacted * rb;
    out->log_compact_ns = lg->compact_ns;
    out->log_live_fraction = lg->nseg ? (double)live / (double)(lg->nseg * lg->seg_recs) : 1.0;
}
