/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_io.c — the tiered table's I/O engine (tier_io.h): io_uring through liburing, the
 * process's pool of pread / pwrite threads (tier_pool.c), shared by every table, or reads
 * copied from a mapping of the file (tier_io_map.c, tier_map.c; docs/design/tiered-tables.md,
 * "Mapped reads"), its writes and populates on the pool.
 * With io_uring, reads go through the ring and writes through the pool: the kernel runs
 * buffered writes to one file in one io-wq worker (hashed by inode), one at a time, and a
 * record's write that must first read its page blocks there. Buffered reads through the
 * ring were slower too than the pool's 16 blocking preads here (emb-bench tier, 500k x 64
 * rows, 10 % cache, Zipf, lookups of whole batches, 3 runs of each interleaved: a median
 * 66 ms a step against 52 ms, with prefetch 69 against 21 ms; kernel 6.18, ext4 on a
 * virtual disk; with the batched pool of now, 2 runs each: 10.2-13.1 ms a step against
 * 13.2-13.4 ms), so io_uring stays for whoever asks (EMB_TIER_IO=uring,
 * EmbTieredOptions::engine) and for other disks; EMB_TIER_IO_AUTO is the pool (choose).
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
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "tables/tiered/tier_io_impl.h"

#define URING_ENTRIES 256


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
 * AUTO is the pool. The populated mapping copies a miss in 0.9 us against a pread's 2.5 us
 * and made the single-table step faster (docs/bench/2026-11-28-tier-read-path.md: emb-bench
 * tier, 500 k x 64, 10 and 25 % caches, every round), but the DLRM example, 26 small tables
 * of batches of 128, trained slower with it in 4 of 6 interleaved rounds and never faster
 * (0.69-0.89x the in-memory samples/s against 0.78-0.92x with the pool;
 * docs/bench/2026-11-28-dlrm-tiered-rerun.md): it stays for whoever asks (EMB_TIER_IO=map).
 */
/* io_uring when @kind asks for it and the kernel lets us (none: EMB_ENOTSUP), the mapping
   when asked for and the SIGBUS guard can be installed, else the pool. */
static int choose(EmbTierIo *io, EmbTierIoKind kind)
{
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
        emb__tier_iomap_submit(io, reqs, n, bg);
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
        emb__tier_iomap_drain(io); /* populated: copied now */
    return n + io->ndef + emb__tier_pool_pending(&io->pinflight);
}

void emb__tier_io_wait(EmbTierIo *io)
{
#if EMB_HAVE_LIBURING
    if (io->kind == EMB_TIER_IO_URING)
        uring_wait(io);
#endif
    emb__tier_pool_wait(&io->pinflight, NULL);
    emb__tier_iomap_drain(io);
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
        emb__tier_iomap_drain(io);
    emb__tier_pool_wait(&io->pinflight, r);
}

void emb__tier_io_run(EmbTierIo *io, EmbTierReq *reqs, int64_t n)
{
    emb__tier_io_submit(io, reqs, n);
    for (int64_t i = 0; i < n; i++) /* these alone: a prefetch in flight goes on */
        emb__tier_io_wait_one(io, &reqs[i]);
}
