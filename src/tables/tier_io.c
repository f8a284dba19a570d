/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_io.c — the tiered table's I/O engine (tier_io.h): io_uring through liburing, or a
 * pool of POOL_THREADS pread / pwrite threads fed from a fixed ring of request pointers.
 * With io_uring, reads go through the ring and writes through the pool: the kernel runs
 * buffered writes to one file in one io-wq worker (hashed by inode), one at a time, and a
 * record's write that must first read its page blocks there. Buffered reads through the
 * ring were slower too than the pool's 16 blocking preads here (tier-bench, 500k x 64
 * rows, 10 % cache, Zipf, lookups of whole batches, 3 runs of each interleaved: a median
 * 66 ms a step against 52 ms, with prefetch 69 against 21 ms; kernel 6.18, ext4 on a
 * virtual disk), so EMB_TIER_IO_AUTO is the pool; io_uring stays for whoever asks
 * (EMB_TIER_IO=uring, EmbTieredOptions::engine) and for other disks.
 * Buffered I/O, not O_DIRECT: a record (a row and its state) is usually smaller than a
 * logical block, so O_DIRECT writes would need a read-modify-write of whole blocks; the
 * page cache is reclaimable, so it does not count against the table's memory bound.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "tables/tier_io.h"
#if EMB_HAVE_LIBURING
#include <liburing.h>
#endif

#define POOL_THREADS 16 /* the queue depth of the pread engine */
#define POOL_RING 1024   /* request pointers queued for the pool */
#define URING_ENTRIES 256

struct EmbTierIo {
    EmbTierIoKind kind;
    int fd;
    int64_t inflight;    /* io_uring: submitted, not completed */
#if EMB_HAVE_LIBURING
    struct io_uring ring;
#endif
    /* the pool */
    pthread_mutex_t mu;
    pthread_cond_t work, room, idle;
    EmbTierReq *queue[POOL_RING];
    int64_t head, count; /* queue[head .. head + count) mod POOL_RING */
    int64_t pinflight;   /* the pool's requests submitted, not completed */
    int nthreads;
    int stop;
    pthread_t threads[POOL_THREADS];
};

static _Atomic(emb_tier_fault_fn) fault_hook;

void emb__tier_io_set_fault(emb_tier_fault_fn fn)
{
    atomic_store(&fault_hook, fn);
}

/* The injected fault of @r, or 0. */
static int injected(const EmbTierReq *r)
{
    const emb_tier_fault_fn fn = atomic_load(&fault_hook);
    return fn ? fn(r) : 0;
}

/* ---- the pread / pwrite pool ------------------------------------------------------- */

/* Does all of @r with pread / pwrite; 0 or -errno (-ENODATA at the end of the file). */
static int32_t rw_all(int fd, EmbTierReq *r)
{
    while (r->done < r->len) {
        char *p = (char *)r->buf + r->done;
        const size_t n = r->len - r->done;
        const off_t at = (off_t)(r->offset + r->done);
        const ssize_t k = r->write ? pwrite(fd, p, n, at) : pread(fd, p, n, at);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            return r->write ? -EIO : -ENODATA;
        r->done += (uint32_t)k;
    }
    return 0;
}

static void *pool_main(void *arg)
{
    EmbTierIo *io = arg;
    pthread_mutex_lock(&io->mu);
    for (;;) {
        while (!io->count && !io->stop)
            pthread_cond_wait(&io->work, &io->mu);
        if (!io->count)
            break;
        EmbTierReq *r = io->queue[io->head];
        const int fd = io->fd;
        io->head = (io->head + 1) % POOL_RING;
        io->count--;
        pthread_cond_signal(&io->room);
        pthread_mutex_unlock(&io->mu);
        const int f = injected(r);
        const int32_t res = f ? f : rw_all(fd, r);
        pthread_mutex_lock(&io->mu);
        r->res = res;
        r->complete = 1;
        --io->pinflight;
        pthread_cond_broadcast(&io->idle);
    }
    pthread_mutex_unlock(&io->mu);
    return NULL;
}

static void pool_submit(EmbTierIo *io, EmbTierReq *reqs, int64_t n)
{
    pthread_mutex_lock(&io->mu);
    for (int64_t i = 0; i < n; i++) {
        while (io->count == POOL_RING)
            pthread_cond_wait(&io->room, &io->mu);
        io->queue[(io->head + io->count) % POOL_RING] = &reqs[i];
        io->count++;
        io->pinflight++;
        pthread_cond_signal(&io->work);
    }
    pthread_mutex_unlock(&io->mu);
}

static void pool_wait(EmbTierIo *io)
{
    pthread_mutex_lock(&io->mu);
    while (io->pinflight)
        pthread_cond_wait(&io->idle, &io->mu);
    pthread_mutex_unlock(&io->mu);
}

static int pool_start(EmbTierIo *io)
{
    for (int i = 0; i < POOL_THREADS; i++) {
        if (pthread_create(&io->threads[i], NULL, pool_main, io))
            break;
        io->nthreads++;
    }
    return io->nthreads ? 0 : emb__fail(EMB_ENOMEM, "tiered table: cannot start I/O threads");
}

static void pool_stop(EmbTierIo *io)
{
    pthread_mutex_lock(&io->mu);
    io->stop = 1;
    pthread_cond_broadcast(&io->work);
    pthread_mutex_unlock(&io->mu);
    for (int i = 0; i < io->nthreads; i++)
        pthread_join(io->threads[i], NULL);
}

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
static void uring_submit(EmbTierIo *io, EmbTierReq *reqs, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const int f = reqs[i].write ? 0 : injected(&reqs[i]);
        if (f)
            reqs[i].res = f, reqs[i].complete = 1;
        else if (reqs[i].write)
            pool_submit(io, &reqs[i], 1);
        else
            uring_queue(io, &reqs[i]);
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
    return EMB_TIER_IO_AUTO;
}

/* io_uring when @kind asks for it and the kernel lets us (none: EMB_ENOTSUP), else the
   pool: AUTO is the pool, measured faster (the file's comment). */
static int choose(EmbTierIo *io, EmbTierIoKind kind)
{
#if EMB_HAVE_LIBURING
    if (kind == EMB_TIER_IO_URING && io_uring_queue_init(URING_ENTRIES, &io->ring, 0) == 0) {
        io->kind = EMB_TIER_IO_URING;
        return pool_start(io); /* its writes */
    }
#endif
    if (kind == EMB_TIER_IO_URING)
        return emb__fail(EMB_ENOTSUP, "tiered table: io_uring is not available here");
    io->kind = EMB_TIER_IO_PREAD;
    return pool_start(io);
}

int emb__tier_io_create(EmbTierIo **out, int fd, EmbTierIoKind kind)
{
    EmbTierIo *io = calloc(1, sizeof *io);
    if (!io)
        return emb__fail(EMB_ENOMEM, "out of memory for a tiered table's I/O engine");
    io->fd = fd;
    pthread_mutex_init(&io->mu, NULL);
    pthread_cond_init(&io->work, NULL);
    pthread_cond_init(&io->room, NULL);
    pthread_cond_init(&io->idle, NULL);
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
    pool_stop(io);
    pthread_mutex_destroy(&io->mu);
    pthread_cond_destroy(&io->work);
    pthread_cond_destroy(&io->room);
    pthread_cond_destroy(&io->idle);
    free(io);
    *pio = NULL;
}

void emb__tier_io_set_fd(EmbTierIo *io, int fd)
{
    emb__tier_io_wait(io);
    pthread_mutex_lock(&io->mu);
    io->fd = fd;
    pthread_mutex_unlock(&io->mu);
}

const char *emb__tier_io_name(const EmbTierIo *io)
{
    return io->kind == EMB_TIER_IO_URING ? "io_uring" : "pread";
}

void emb__tier_io_submit(EmbTierIo *io, EmbTierReq *reqs, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        reqs[i].done = 0, reqs[i].res = 0, reqs[i].complete = 0;
#if EMB_HAVE_LIBURING
    if (io->kind == EMB_TIER_IO_URING) {
        uring_submit(io, reqs, n);
        return;
    }
#endif
    pool_submit(io, reqs, n);
}

int64_t emb__tier_io_pending(EmbTierIo *io)
{
#if EMB_HAVE_LIBURING
    int64_t n = 0;
    if (io->kind == EMB_TIER_IO_URING) {
        struct io_uring_cqe *cqe;
        while (io->inflight && io_uring_peek_cqe(&io->ring, &cqe) == 0)
            uring_reap(io);
        n = io->inflight;
    }
#endif
    pthread_mutex_lock(&io->mu);
    n += io->pinflight;
    pthread_mutex_unlock(&io->mu);
    return n;
}

void emb__tier_io_wait(EmbTierIo *io)
{
#if EMB_HAVE_LIBURING
    if (io->kind == EMB_TIER_IO_URING)
        uring_wait(io);
#endif
    pool_wait(io);
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
    pthread_mutex_lock(&io->mu);
    while (!r->complete)
        pthread_cond_wait(&io->idle, &io->mu);
    pthread_mutex_unlock(&io->mu);
}

void emb__tier_io_run(EmbTierIo *io, EmbTierReq *reqs, int64_t n)
{
    emb__tier_io_submit(io, reqs, n);
    for (int64_t i = 0; i < n; i++) /* these alone: a prefetch in flight goes on */
        emb__tier_io_wait_one(io, &reqs[i]);
}
