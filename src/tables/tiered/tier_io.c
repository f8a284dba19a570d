/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_io.c — the tiered table's I/O engine (tier_io.h): io_uring through liburing, the
 * process's pool of pread / pwrite threads (tier_pool.c), shared by every table, or reads
 * copied from a mapping of the file (tier_map.c; docs/design/tiered-tables.md, "Mapped
 * reads"), its writes and populates on the pool.
 * With io_uring, reads go through the ring and writes through the pool: the kernel runs
 * buffered writes to one file in one io-wq worker (hashed by inode), one at a time, and a
 * record's write that must first read its page blocks there. Buffered reads through the
 * ring were slower too than the pool's 16 blocking preads here (emb-bench tier, 500k x 64
 * rows, 10 % cache, Zipf, lookups of whole batches, 3 runs of each interleaved: a median
 * 66 ms a step against 52 ms, with prefetch 69 against 21 ms; kernel 6.18, ext4 on a
 * virtual disk; with the batched pool of now, 2 runs each: 10.2-13.1 ms a step against
 * 13.2-13.4 ms), so io_uring stays for whoever asks (EMB_TIER_IO=uring,
 * EmbTieredOptions::engine) and for other disks; EMB_TIER_IO_AUTO is the mapping for a file
 * that stays populated, else the pool (auto_kind).
 * Buffered I/O, not O_DIRECT: a record (a row and its state) is usually smaller than a
 * logical block, so O_DIRECT writes would need a read-modify-write of whole blocks; the
 * page cache is reclaimable, so it does not count against the table's memory bound.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "tables/tiered/tier_io.h"
#if EMB_HAVE_LIBURING
#include <liburing.h>
#endif

#define URING_ENTRIES 256

struct EmbTierIo {
    EmbTierIoKind kind;
    int fd;
    int64_t inflight;    /* io_uring: submitted, not completed */
#if EMB_HAVE_LIBURING
    struct io_uring ring;
#endif
    int64_t pinflight;   /* the pool's requests submitted, not completed (under its lock) */
    bool pooled;         /* a user of the process's pool (tier_pool.c) */
    /* the mapped engine (EMB_TIER_IO_MAP): reads copied from map; a background read waits
       in def (its pages populated by pop) until someone waits for it or pending() */
    bool guarded;        /* a user of the SIGBUS guard (tier_map.c) */
    bool unmappable;     /* the file cannot be mapped: reads go through pread */
    bool autok;          /* EMB_TIER_IO_AUTO: map or pread chosen again for each file */
    EmbTierMap map;
    int64_t hot;         /* the mapping's bytes [0, hot) populated at once (map_hot) */
    int64_t popinflight; /* populates submitted to the pool, not completed */
    EmbTierReq *pop;
    int64_t npop, pop_cap;
    EmbTierReq **def;
    int64_t ndef, def_cap;
};

/* ---- io_uring ---------------------------------------------------------------------- */

#if EMB_HAVE_LIBURING
static void uring_queue(EmbTierIo *io, EmbTierReq *r);

/* Reaps one completion (waiting for it); resubmits the rest of a partial transfer. */
static void uring_reap(EmbTierIo *io)
{
    struct io_uring_cqe *cqe = NULL;
    int e;
    do
        e = io_uring_wait_cqe(&io->ring, &cqe);
    while (e == -EINTR);
    if (e < 0 || !cqe)
        return; /* cannot happen with requests in flight */
    EmbTierReq *r = io_uring_cqe_get_data(cqe);
    const int res = cqe->res;
    io_uring_cqe_seen(&io->ring, cqe);
    io->inflight--;
    if (res < 0 && res != -EINTR && res != -EAGAIN) {
        r->res = res, r->complete = 1;
    } else if (res == 0 && r->len > r->done) {
        r->res = r->write ? -EIO : -ENODATA, r->complete = 1;
    } else {
        r->done += res > 0 ? (uint32_t)res : 0;
        if (r->done < r->len) {
            uring_queue(io, r);
            io_uring_submit(&io->ring);
        } else {
            r->res = 0, r->complete = 1;
        }
    }
}

static void uring_queue(EmbTierIo *io, EmbTierReq *r)
{
    struct io_uring_sqe *sqe;
    while (io->inflight >= URING_ENTRIES || !(sqe = io_uring_get_sqe(&io->ring))) {
        io_uring_submit(&io->ring);
        uring_reap(io);
    }
    char *p = (char *)r->buf + r->done;
    if (r->write)
        io_uring_prep_write(sqe, io->fd, p, r->len - r->done, (uint64_t)(r->offset + r->done));
    else
        io_uring_prep_read(sqe, io->fd, p, r->len - r->done, (uint64_t)(r->offset + r->done));
    io_uring_sqe_set_data(sqe, r);
    io->inflight++;
}

/* Reads through the ring; writes go to the pool (see the file's comment). */
static void uring_submit(EmbTierIo *io, EmbTierReq *reqs, int64_t n, bool bg)
{
    for (int64_t i = 0; i < n;) {
        int64_t k = 0; /* a run of writes: one batch of the pool */
        while (i + k < n && reqs[i + k].write)
            k++;
        if (k) {
            emb__tier_pool_submit(io->fd, &io->pinflight, &reqs[i], k, bg);
            i += k;
            continue;
        }
        const int f = emb__tier_io_injected(&reqs[i]);
        if (f)
            reqs[i].res = f, reqs[i].complete = 1;
        else
            uring_queue(io, &reqs[i]);
        i++;
    }
    io_uring_submit(&io->ring);
}

static void uring_wait(EmbTierIo *io)
{
    while (io->inflight)
        uring_reap(io);
}
#endif

/* ---- the mapped engine ------------------------------------------------------------- */

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
 * populate per range; EMB_TIER_IO_AUTO maps only a file that stays populated (choose).
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
static void map_drain(EmbTierIo *io)
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
static void map_submit(EmbTierIo *io, EmbTierReq *reqs, int64_t n, bool bg)
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

/* ---- the engine -------------------------------------------------------------------- */

static EmbTierIoKind env_kind(void)
{
    const char *e = getenv("EMB_TIER_IO");
    if (e && !strcmp(e, "pread"))
        return EMB_TIER_IO_PREAD;
    if (e && !strcmp(e, "uring"))
        return EMB_TIER_IO_URING;
    if (e && !strcmp(e, "map"))
        return EMB_TIER_IO_MAP;
    return EMB_TIER_IO_AUTO;
}

static int pool_join(EmbTierIo *io)
{
    const int r = emb__tier_pool_start();
    io->pooled = !r;
    return r;
}

/*
 * AUTO: the mapped engine for a file that stays populated (map_hot) with room for its log to
 * double it, else the pool. Measured (docs/bench/2026-11-28-tier-read-path.md, emb-bench
 * tier, 500 k x 64 f32 + Adagrad, fresh Zipf ids, prefetch 1, file in the page cache, 2
 * cores, 3 interleaved rounds): a miss copied from the populated mapping (0.9 us) costs less
 * than a pread on the pool (2.5 us); the step was faster at 10 and 25 % caches in every
 * round, at 50 % in one of three (slower in one, inside the runs' spread). A file larger
 * than that goes to the disk, where the pool's depth (tier_pool.c) reads it fastest
 * (docs/bench/2026-11-28-tier-2xram.md).
 */
static EmbTierIoKind auto_kind(int fd)
{
    struct stat st;
    if (fstat(fd, &st) || 2 * (int64_t)st.st_size > emb__tier_map_memory() / MAP_HOT_DIV)
        return EMB_TIER_IO_PREAD;
    return EMB_TIER_IO_MAP;
}

/* io_uring when @kind asks for it and the kernel lets us (none: EMB_ENOTSUP), the mapping
   when asked for (or AUTO's) and the SIGBUS guard can be installed, else the pool. */
static int choose(EmbTierIo *io, EmbTierIoKind kind)
{
    io->autok = kind == EMB_TIER_IO_AUTO;
    if (io->autok)
        kind = auto_kind(io->fd);
#if EMB_HAVE_LIBURING
    if (kind == EMB_TIER_IO_URING && io_uring_queue_init(URING_ENTRIES, &io->ring, 0) == 0) {
        io->kind = EMB_TIER_IO_URING;
        return pool_join(io); /* its writes */
    }
#endif
    if (kind == EMB_TIER_IO_URING)
        return emb__fail(EMB_ENOTSUP, "tiered table: io_uring is not available here");
    if (kind == EMB_TIER_IO_MAP && !emb__tier_guard_acquire()) {
        io->kind = EMB_TIER_IO_MAP, io->guarded = true;
        return pool_join(io); /* its writes and populates */
    }
    emb__clear_error(); /* no guard: the pool */
    io->kind = EMB_TIER_IO_PREAD;
    return pool_join(io);
}

int emb__tier_io_create(EmbTierIo **out, int fd, EmbTierIoKind kind)
{
    EmbTierIo *io = calloc(1, sizeof *io);
    if (!io)
        return emb__fail(EMB_ENOMEM, "out of memory for a tiered table's I/O engine");
    io->fd = fd;
    const int r = choose(io, kind == EMB_TIER_IO_AUTO ? env_kind() : kind);
    if (r) {
        emb__tier_io_destroy(&io);
        return r;
    }
    *out = io;
    return 0;
}

void emb__tier_io_destroy(EmbTierIo **pio)
{
    EmbTierIo *io = pio ? *pio : NULL;
    if (!io)
        return;
    emb__tier_io_wait(io);
#if EMB_HAVE_LIBURING
    if (io->kind == EMB_TIER_IO_URING)
        io_uring_queue_exit(&io->ring);
#endif
    if (io->pooled)
        emb__tier_pool_stop();
    emb__tier_map_drop(&io->map);
    if (io->guarded)
        emb__tier_guard_release();
    free(io->pop);
    free(io->def);
    free(io);
    *pio = NULL;
}

void emb__tier_io_set_fd(EmbTierIo *io, int fd)
{
    emb__tier_io_wait(io);
    emb__tier_map_drop(&io->map);
    io->unmappable = false;
    io->hot = 0;
    io->fd = fd;
    if (!io->autok)
        return;
    const bool map = auto_kind(fd) == EMB_TIER_IO_MAP;
    if (map && !io->guarded && !(io->guarded = !emb__tier_guard_acquire()))
        emb__clear_error(); /* no guard: the pool */
    if (!map && io->guarded)
        emb__tier_guard_release(), io->guarded = false;
    io->kind = io->guarded ? EMB_TIER_IO_MAP : EMB_TIER_IO_PREAD;
}

int32_t emb__tier_io_rw_fd(int fd, EmbTierReq *r)
{
    const int f = emb__tier_io_injected(r);
    r->res = f ? f : emb__tier_pool_rw(fd, r);
    return r->res;
}

int32_t emb__tier_io_sync(int fd)
{
    const EmbTierReq q = {.write = 1, .tag = EMB_TIER_SYNC_TAG};
    const int f = emb__tier_io_injected(&q);
    return f ? f : fdatasync(fd) ? -errno : 0;
}

const char *emb__tier_io_name(const EmbTierIo *io)
{
    return io->kind == EMB_TIER_IO_URING                    ? "io_uring"
           : io->kind == EMB_TIER_IO_MAP && !io->unmappable ? "mmap"
                                                            : "pread";
}

static void submit(EmbTierIo *io, EmbTierReq *reqs, int64_t n, bool bg)
{
    for (int64_t i = 0; i < n; i++)
        reqs[i].done = 0, reqs[i].res = 0, reqs[i].complete = 0, reqs[i].populate = 0,
        reqs[i].src = NULL;
    if (io->kind == EMB_TIER_IO_MAP) {
        map_submit(io, reqs, n, bg);
        return;
    }
#if EMB_HAVE_LIBURING
    if (io->kind == EMB_TIER_IO_URING) {
        uring_submit(io, reqs, n, bg);
        return;
    }
#endif
    emb__tier_pool_submit(io->fd, &io->pinflight, reqs, n, bg);
}

void emb__tier_io_submit(EmbTierIo *io, EmbTierReq *reqs, int64_t n)
{
    submit(io, reqs, n, false);
}

void emb__tier_io_submit_background(EmbTierIo *io, EmbTierReq *reqs, int64_t n)
{
    submit(io, reqs, n, true);
}

int64_t emb__tier_io_pending(EmbTierIo *io)
{
    int64_t n = 0;
#if EMB_HAVE_LIBURING
    if (io->kind == EMB_TIER_IO_URING) {
        struct io_uring_cqe *cqe;
        while (io->inflight && io_uring_peek_cqe(&io->ring, &cqe) == 0)
            uring_reap(io);
        n = io->inflight;
    }
#endif
    if (io->ndef && !emb__tier_pool_pending(&io->popinflight))
        map_drain(io); /* populated: copied now */
    return n + io->ndef + emb__tier_pool_pending(&io->pinflight);
}

void emb__tier_io_wait(EmbTierIo *io)
{
#if EMB_HAVE_LIBURING
    if (io->kind == EMB_TIER_IO_URING)
        uring_wait(io);
#endif
    emb__tier_pool_wait(&io->pinflight, NULL);
    map_drain(io);
}

void emb__tier_io_wait_one(EmbTierIo *io, const EmbTierReq *r)
{
#if EMB_HAVE_LIBURING
    if (io->kind == EMB_TIER_IO_URING && !r->write) {
        while (!r->complete && io->inflight)
            uring_reap(io);
        return;
    }
#endif
    /* the kind first: another engine's requests complete on the pool's threads, under its
       lock (emb__tier_pool_wait reads them there), and so does a mapped read copied there
       (src set by map_defer, in this thread); another mapped read completes in this one */
    if (io->kind == EMB_TIER_IO_MAP && !r->write && !r->src && !r->complete)
        map_drain(io);
    emb__tier_pool_wait(&io->pinflight, r);
}

void emb__tier_io_run(EmbTierIo *io, EmbTierReq *reqs, int64_t n)
{
    emb__tier_io_submit(io, reqs, n);
    for (int64_t i = 0; i < n; i++) /* these alone: a prefetch in flight goes on */
        emb__tier_io_wait_one(io, &reqs[i]);
}
