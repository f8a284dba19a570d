/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_io_map.c — the tiered table's mapped read engine (EMB_TIER_IO_MAP; tier_io.h, the
 * engine's state in tier_io_impl.h): reads copied from a mapping of the file (tier_map.c:
 * the mapping, its populate and the SIGBUS guard), background reads populated and copied on
 * the pool's threads (tier_pool.c), writes sent to the pool. docs/design/tiered-tables.md,
 * "Mapped reads".
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "tables/tiered/tier_io_impl.h"

/* Populate ranges a gap of up to MAP_GAP pages apart are one (the gap's pages cost a page
   walk, cheaper than a system call), up to MAP_RANGE bytes. */
#define MAP_GAP 4
#define MAP_RANGE (1 << 20)

static void finish(EmbTierReq *r, int32_t res)
{
    r->res = res, r->done = res ? 0 : r->len, r->complete = 1;
}

/*
 * A file of at most a MAP_HOT_DIV-th of the memory (emb__tier_map_memory: the RAM, or the
 * process's memory cgroup's limit) is populated whole, once a mapping (one
 * MADV_POPULATE_READ, on the thread that maps it, and again for the bytes a growing log
 * adds): then a background read is a copy at once, no system call a range, done on the
 * pool's threads (map_defer). A populate per range (map_defer) costs about a pread a record
 * when a step's misses lie a page apart or more: at 10 % of a 500 k x 64 table it made the
 * engine no faster than the pool (docs/bench/2026-11-28-tier-mapped-reads.md). Pages the
 * kernel reclaims later fault back in on the copy (guarded). Larger files keep the
 * populate per range.
 */
#define MAP_HOT_DIV 4

/* Populates the mapping up to the file's end; @from: the bytes populated before on the
   same mapping (0: a new one). */
static void map_hot(EmbTierIo *io, int64_t from)
{
    const int64_t ps = emb__tier_map_page(), end = (io->map.fsize + ps - 1) / ps * ps;
    const int64_t a = from / ps * ps;
    io->hot = 0;
    if (io->map.fsize <= emb__tier_map_memory() / MAP_HOT_DIV &&
        !emb__tier_populate(io->map.base + a, (size_t)(end - a)))
        io->hot = io->map.fsize;
}

/* Covers the request @r's bytes (nothing may be using the mapping: populates waited for):
   0, -ENODATA, or -errno where the file cannot be mapped (io->unmappable set: pread). */
static int32_t cover(EmbTierIo *io, const EmbTierReq *r)
{
    const int64_t end = r->offset + (int64_t)r->len;
    if (io->unmappable || end <= io->map.fsize)
        return io->unmappable ? -ENODEV : 0;
    emb__tier_pool_wait(&io->popinflight, NULL);
    if (end > (int64_t)io->map.len) /* a new mapping: the copies from the old one done */
        emb__tier_pool_wait(&io->pinflight, NULL);
    const char *base = io->map.base;
    const int e = emb__tier_map_cover(&io->map, io->fd, end);
    io->unmappable = e && e != -ENODATA;
    if (!e)
        map_hot(io, io->map.base == base ? io->hot : 0);
    return e;
}

/* The read @r, now, in this thread (the fault hook's first): a guarded copy from the
   mapping, or a pread where the file cannot be mapped. */
static void map_read(EmbTierIo *io, EmbTierReq *r)
{
    int32_t e = emb__tier_io_injected(r);
    if (!e && (e = cover(io, r)) && io->unmappable)
        e = emb__tier_pool_rw(io->fd, r);
    else if (!e)
        e = emb__tier_guarded_copy(r->buf, io->map.base + r->offset, r->len);
    finish(r, e);
}

/* The reads of @n copied from the mapping (@r, or the pointers @pr) whose records end past
   the file's end now fail with -ENODATA, as a pread's would: a file cut by someone else
   inside a page the mapping still has reads zeros there, no SIGBUS. One fstat a batch. */
static void map_check_end(EmbTierIo *io, EmbTierReq *r, EmbTierReq **pr, int64_t n)
{
    struct stat st;
    if (!n || fstat(io->fd, &st))
        return;
    io->map.fsize = EMB_MIN(io->map.fsize, (int64_t)st.st_size); /* a cut: covered again */
    for (int64_t i = 0; i < n; i++) {
        EmbTierReq *q = pr ? pr[i] : &r[i];
        if (!q->write && !q->res && q->offset + (int64_t)q->len > (int64_t)st.st_size)
            finish(q, -ENODATA);
    }
}

/* Copies the background reads waiting in io->def (their populates waited for). A failed
   populate (-EFAULT: a page of its range would raise SIGBUS) fails no read by itself: its
   range may hold good records too; the guarded copy finds the bad ones (-EIO). */
void emb__tier_iomap_drain(EmbTierIo *io)
{
    if (!io->ndef)
        return;
    emb__tier_pool_wait(&io->popinflight, NULL);
    for (int64_t i = 0; i < io->ndef; i++)
        map_read(io, io->def[i]);
    map_check_end(io, NULL, io->def, io->ndef);
    io->ndef = io->npop = 0;
}

static bool defer_room(EmbTierIo *io, int64_t n)
{
    if (io->ndef + n > io->def_cap) {
        const int64_t cap = EMB_MAX(2 * io->def_cap, io->ndef + n);
        EmbTierReq **d = realloc(io->def, (size_t)cap * sizeof *d);
        if (!d)
            return false;
        io->def = d, io->def_cap = cap;
    }
    if (io->npop + n > io->pop_cap) {
        const int64_t cap = EMB_MAX(2 * io->pop_cap, io->npop + n);
        EmbTierReq *p = realloc(io->pop, (size_t)cap * sizeof *p);
        if (!p)
            return false;
        io->pop = p, io->pop_cap = cap;
    }
    return true;
}

/* Sends the reads @r[0, @n) of the populated part of the mapping to the pool to be copied,
   from the mapping of now. */
static void map_send(EmbTierIo *io, EmbTierReq *r, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        r[i].src = io->map.base + r[i].offset;
    emb__tier_pool_submit(io->fd, &io->pinflight, r, n, true);
}

/* Background reads (a prefetch's): those in the populated part of the mapping (map_hot)
   copied on the pool's threads (emb__tier_pool_rw: a guarded copy from r->src), so that the
   caller goes on computing meanwhile (at 10 % of a 500 k x 64 table, 5 400 copies took
   4.8 ms of its step: docs/bench/2026-11-28-tier-read-path.md); the others' pages populated
   on the pool's threads, ranges coalesced in the requests' order (a prefetch's is the
   file's), their copies waiting in io->def for the step (map_drain). Out of memory: copied
   now. */
static void map_defer(EmbTierIo *io, EmbTierReq *reqs, int64_t n)
{
    emb__tier_pool_wait(&io->popinflight, NULL); /* io->pop may move */
    struct stat st; /* a cut since: the reads past it deferred and checked (map_drain) */
    if (io->hot && !fstat(io->fd, &st))
        io->hot = EMB_MIN(io->hot, (int64_t)st.st_size);
    if (!defer_room(io, n)) {
        for (int64_t i = 0; i < n; i++)
            map_read(io, &reqs[i]);
        map_check_end(io, reqs, NULL, n);
        return;
    }
    const int64_t ps = emb__tier_map_page(), p0 = io->npop;
    int64_t lo = 0, hi = 0; /* the open range */
    int64_t c0 = 0;         /* reqs[c0, i): copies for the pool, not sent yet */
    for (int64_t i = 0; i < n; i++) {
        EmbTierReq *r = &reqs[i];
        const int32_t e = cover(io, r); /* before the hot test: the mapping may move */
        if (!e && r->offset + (int64_t)r->len <= io->hot)
            continue;
        map_send(io, reqs + c0, i - c0);
        c0 = i + 1;
        if (e) {
            map_read(io, r); /* its error, or its pread */
            continue;
        }
        const int64_t a = r->offset / ps * ps, b = (r->offset + r->len + ps - 1) / ps * ps;
        if (io->npop > p0 && a <= hi + MAP_GAP * ps && b - lo <= MAP_RANGE) {
            hi = EMB_MAX(hi, b);
        } else {
            if (io->npop > p0)
                io->pop[io->npop - 1].len = (uint32_t)(hi - lo);
            lo = a, hi = b;
            io->pop[io->npop++] = (EmbTierReq){.offset = a, .populate = 1, .tag = r->tag};
        }
        io->def[io->ndef++] = r;
    }
    map_send(io, reqs + c0, n - c0);
    if (io->npop > p0)
        io->pop[io->npop - 1].len = (uint32_t)(hi - lo);
    for (int64_t i = p0; i < io->npop; i++) /* the mapping of now (a cover may have moved it) */
        io->pop[i].buf = io->map.base + io->pop[i].offset;
    emb__tier_pool_submit(io->fd, &io->popinflight, io->pop + p0, io->npop - p0, true);
}

/* Writes go to the pool; reads are copied now, or with @bg deferred (map_defer). */
void emb__tier_iomap_submit(EmbTierIo *io, EmbTierReq *reqs, int64_t n, bool bg)
{
    for (int64_t i = 0; i < n;) {
        int64_t k = 0;
        const uint8_t w = reqs[i].write;
        while (i + k < n && reqs[i + k].write == w)
            k++;
        if (w)
            emb__tier_pool_submit(io->fd, &io->pinflight, &reqs[i], k, bg);
        else if (bg)
            map_defer(io, &reqs[i], k);
        else {
            for (int64_t j = 0; j < k; j++)
                map_read(io, &reqs[i + j]);
            map_check_end(io, &reqs[i], NULL, k);
        }
        i += k;
    }
}

