/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_io.c — the tiered table's I/O engine (tier_io.h): io_uring through liburing, or a
 * pool of POOL_THREADS pread / pwrite threads fed from a queue of submitted batches.
 * With io_uring, reads go through the ring and writes through the pool: the kernel runs
 * buffered writes to one file in one io-wq worker (hashed by inode), one at a time, and a
 * record's write that must first read its page blocks there. Buffered reads through the
 * ring were slower too than the pool's 16 blocking preads here (emb-bench tier, 500k x 64
 * rows, 10 % cache, Zipf, lookups of whole batches, 3 runs of each interleaved: a median
 * 66 ms a step against 52 ms, with prefetch 69 against 21 ms; kernel 6.18, ext4 on a
 * virtual disk; with the batched pool of now, 2 runs each: 10.2-13.1 ms a step against
 * 13.2-13.4 ms), so EMB_TIER_IO_AUTO is the pool; io_uring stays for whoever asks
 * (EMB_TIER_IO=uring, EmbTieredOptions::engine) and for other disks.
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
#include "tables/tiered/tier_io.h"
#if EMB_HAVE_LIBURING
#include <liburing.h>
#endif

#define POOL_THREADS 16  /* the queue depth of the pread engine */
#define POOL_BATCHES 256 /* submitted batches queued for the pool */
#define POOL_CHUNK 32    /* the most reads one thread takes at a time */
#define POOL_MIN_CHUNK 8 /* the fewest (where there are as many) */
#define POOL_WRITE_CHUNK 4096 /* the most writes one thread takes at a time */
/* A background batch's request that takes longer than this went to the disk, not the page
   cache (0.6-1.5 us a record there): its thread wakes one more (pool_submit) */
#define POOL_SLOW_NS 20000
#define URING_ENTRIES 256

/* A submitted batch: reqs[next .. n) not taken yet; bg: a background batch (pool_submit). */
typedef struct PoolBatch {
    EmbTierReq *reqs;
    int64_t n, next;
    bool bg;
} PoolBatch;

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
    PoolBatch queue[POOL_BATCHES];
    int64_t head, count; /* queue[head .. head + count) mod POOL_BATCHES */
    int64_t pinflight;   /* the pool's requests submitted, not completed */
    int waiters;         /* threads waiting on idle */
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

/*
 * Requests go to the pool as whole batches (one queue entry a submit), and a thread takes
 * them in chunks (a share of what is left, at most POOL_CHUNK), does them without the lock
 * and marks the chunk complete under it, waking waiters once a chunk. A thread that waits
 * for requests (wait_one, wait, a full queue) does queued chunks itself first: a
 * synchronous resolve whose rows are in the page cache then costs its own preads, with no
 * hand-off, while the pool's threads keep the disk's queue full when they are not.
 */

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

/* Takes a chunk of the head batch (io->mu held, io->count > 0): its first request and its
   length through @k; @bg: whether the batch is a background one. */
static EmbTierReq *take(EmbTierIo *io, int64_t *k, bool *bg)
{
    PoolBatch *b = &io->queue[io->head];
    *bg = b->bg;
    const int64_t left = b->n - b->next;
    /* writes to one file take its inode lock one at a time (ext4, xfs): one thread writes a
       whole run of them rather than many spinning on that lock */
    *k = b->reqs[b->next].write
             ? EMB_MIN(left, (int64_t)POOL_WRITE_CHUNK)
             : EMB_MIN(left, EMB_MAX((int64_t)POOL_MIN_CHUNK,
                                     EMB_MIN((int64_t)POOL_CHUNK, left / (io->nthreads + 1))));
    EmbTierReq *r = b->reqs + b->next;
    b->next += *k;
    if (b->next == b->n) {
        io->head = (io->head + 1) % POOL_BATCHES;
        io->count--;
        pthread_cond_signal(&io->room);
    }
    return r;
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Does a chunk taken by take() (io->mu held on entry and on return; released meanwhile).
   A background chunk whose first request was slow wakes one more thread. */
static void run_chunk(EmbTierIo *io, EmbTierReq *r, int64_t k, bool bg)
{
    const int fd = io->fd;
    pthread_mutex_unlock(&io->mu);
    for (int64_t i = 0; i < k; i++) {
        const int64_t t0 = bg && i == 0 ? now_ns() : 0;
        const int f = injected(&r[i]);
        r[i].res = f ? f : rw_all(fd, &r[i]);
        if (t0 && now_ns() - t0 > POOL_SLOW_NS)
            pthread_cond_signal(&io->work); /* one may be missed: the depth grows later */
    }
    pthread_mutex_lock(&io->mu);
    for (int64_t i = 0; i < k; i++)
        r[i].complete = 1;
    io->pinflight -= k;
    if (io->waiters)
        pthread_cond_broadcast(&io->idle);
}

/* Does one queued chunk if there is one (io->mu held); whether it did. */
static bool help(EmbTierIo *io)
{
    if (!io->count)
        return false;
    int64_t k;
    bool bg;
    EmbTierReq *r = take(io, &k, &bg);
    run_chunk(io, r, k, bg);
    return true;
}

static void *pool_main(void *arg)
{
    EmbTierIo *io = arg;
    pthread_mutex_lock(&io->mu);
    for (;;) {
        while (!io->count && !io->stop)
            pthread_cond_wait(&io->work, &io->mu);
        if (!help(io))
            break;
    }
    pthread_mutex_unlock(&io->mu);
    return NULL;
}

/*
 * Queues a batch. A batch someone waits for wakes a thread per POOL_MIN_CHUNK requests (a
 * wake-up costs more than a cached record's pread; the submitter's own wait does chunks
 * too). A background batch (@bg: a prefetch's) wakes one: the woken threads would take the
 * cores from the caller, who goes on computing meanwhile (on 2 cores, 16 woken threads made
 * the prefetch's submit take 0.3-0.4 ms of the caller's 2.5-3 ms step, emb-bench tier 25 %),
 * and a thread whose request went to the disk wakes another (run_chunk), so a batch on
 * disk still gets the pool's depth.
 */
static void pool_submit(EmbTierIo *io, EmbTierReq *reqs, int64_t n, bool bg)
{
    if (n <= 0)
        return;
    pthread_mutex_lock(&io->mu);
    while (io->count == POOL_BATCHES)
        if (!help(io))
            pthread_cond_wait(&io->room, &io->mu);
    io->queue[(io->head + io->count) % POOL_BATCHES] = (PoolBatch){reqs, n, 0, bg};
    io->count++;
    io->pinflight += n;
    const int64_t wake = bg ? 1 : EMB_MIN((int64_t)io->nthreads,
                                          (n + POOL_MIN_CHUNK - 1) / POOL_MIN_CHUNK);
    for (int64_t i = 0; i < wake; i++)
        pthread_cond_signal(&io->work);
    pthread_mutex_unlock(&io->mu);
}

/* Waits (doing queued chunks meanwhile) until @r is complete, or with @r NULL, until no
   request of the pool is in flight. */
static void pool_wait_for(EmbTierIo *io, const EmbTierReq *r)
{
    pthread_mutex_lock(&io->mu);
    while (r ? !r->complete : io->pinflight != 0) {
        if (help(io))
            continue;
        io->waiters++;
        pthread_cond_wait(&io->idle, &io->mu);
        io->waiters--;
    }
    pthread_mutex_unlock(&io->mu);
}

static void pool_wait(EmbTierIo *io)
{
    pool_wait_for(io, NULL);
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
static void uring_submit(EmbTierIo *io, EmbTierReq *reqs, int64_t n, bool bg)
{
    for (int64_t i = 0; i < n;) {
        int64_t k = 0; /* a run of writes: one batch of the pool */
        while (i + k < n && reqs[i + k].write)
            k++;
        if (k) {
            pool_submit(io, &reqs[i], k, bg);
            i += k;
            continue;
        }
        const int f = injected(&reqs[i]);
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

int32_t emb__tier_io_rw_fd(int fd, EmbTierReq *r)
{
    const int f = injected(r);
    r->res = f ? f : rw_all(fd, r);
    return r->res;
}

int32_t emb__tier_io_sync(int fd)
{
    const EmbTierReq q = {.write = 1, .tag = EMB_TIER_SYNC_TAG};
    const int f = injected(&q);
    return f ? f : fdatasync(fd) ? -errno : 0;
}

const char *emb__tier_io_name(const EmbTierIo *io)
{
    return io->kind == EMB_TIER_IO_URING ? "io_uring" : "pread";
}

static void submit(EmbTierIo *io, EmbTierReq *reqs, int64_t n, bool bg)
{
    for (int64_t i = 0; i < n; i++)
        reqs[i].done = 0, reqs[i].res = 0, reqs[i].complete = 0;
#if EMB_HAVE_LIBURING
    if (io->kind == EMB_TIER_IO_URING) {
        uring_submit(io, reqs, n, bg);
        return;
    }
#endif
    pool_submit(io, reqs, n, bg);
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
    pool_wait_for(io, r);
}

void emb__tier_io_run(EmbTierIo *io, EmbTierReq *reqs, int64_t n)
{
    emb__tier_io_submit(io, reqs, n);
    for (int64_t i = 0; i < n; i++) /* these alone: a prefetch in flight goes on */
        emb__tier_io_wait_one(io, &reqs[i]);
}
