/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_pool.c — the process's pread / pwrite pool (tier_io.h), shared by every tiered
 * table's engine: one set of threads fed from one queue of submitted batches, each batch
 * naming its file and its engine's count of requests in flight (an engine waits for its
 * own requests only). Started by the first engine, stopped (threads joined) by the last.
 *
 * Its size: a blocking pread or pwrite keeps one request at the device, so the threads are
 * the engine's queue depth; POOL_DEPTH (16) is what one table had before, and the most a
 * random-read SSD needs at a record's size to approach its rate (fio, 4 KiB random reads:
 * 16 in flight). A record in the page cache needs a core rather than depth, and every
 * thread past the cores only takes them from the training step: the pool has
 * min(POOL_DEPTH, max(POOL_MIN, 2 x the physical cores the process may use)) threads — 4 on a
 * 2-core machine — where 26 tiered tables (the DLRM example) used to start 416.
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
#include "platform.h"
#include "tables/tiered/tier_io.h"

#define POOL_DEPTH 16    /* the most threads: the device's queue depth */
#define POOL_MIN 4       /* the fewest */
#define POOL_BATCHES 256 /* submitted batches queued for the pool */
#define POOL_CHUNK 32    /* the most reads one thread takes at a time */
#define POOL_MIN_CHUNK 8 /* the fewest (where there are as many) */
#define POOL_WRITE_CHUNK 4096 /* the most writes one thread takes at a time */
/* A background batch's request that takes longer than this went to the disk, not the page
   cache (0.6-1.5 us a record there): its thread wakes one more (pool_submit) */
#define POOL_SLOW_NS 20000

/* A submitted batch: reqs[next .. n) not taken yet, of the file fd; *inflight: its engine's
   requests in flight; bg: a background batch (emb__tier_pool_submit). */
typedef struct PoolBatch {
    EmbTierReq *reqs;
    int64_t n, next;
    int64_t *inflight;
    int fd;
    bool bg;
} PoolBatch;

static struct {
    pthread_mutex_t life; /* held by start and stop (users, threads) */
    pthread_mutex_t mu;   /* everything below */
    pthread_cond_t work, room, idle;
    PoolBatch queue[POOL_BATCHES];
    int64_t head, count; /* queue[head .. head + count) mod POOL_BATCHES */
    int waiters;         /* threads waiting on idle */
    int nthreads;
    int stop;
    int users;           /* engines */
    pthread_t threads[POOL_DEPTH];
} pool = {.life = PTHREAD_MUTEX_INITIALIZER, .mu = PTHREAD_MUTEX_INITIALIZER,
          .work = PTHREAD_COND_INITIALIZER, .room = PTHREAD_COND_INITIALIZER,
          .idle = PTHREAD_COND_INITIALIZER};

static _Atomic(emb_tier_fault_fn) fault_hook;

void emb__tier_io_set_fault(emb_tier_fault_fn fn)
{
    atomic_store(&fault_hook, fn);
}

int emb__tier_io_injected(const EmbTierReq *r)
{
    const emb_tier_fault_fn fn = atomic_load(&fault_hook);
    return fn ? fn(r) : 0;
}

/*
 * Requests go to the pool as whole batches (one queue entry a submit), and a thread takes
 * them in chunks (a share of what is left, at most POOL_CHUNK), does them without the lock
 * and marks the chunk complete under it, waking waiters once a chunk. A thread that waits
 * for requests (wait_one, wait, a full queue) does queued chunks itself first: a
 * synchronous resolve whose rows are in the page cache then costs its own preads, with no
 * hand-off, while the pool's threads keep the disk's queue full when they are not.
 */

/* Does all of @r with pread / pwrite; 0 or -errno (-ENODATA at the end of the file). */
int32_t emb__tier_pool_rw(int fd, EmbTierReq *r)
{
    if (r->populate) /* the mapped engine's (tier_map.c): not a transfer */
        return emb__tier_populate(r->buf, r->len);
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

/* Takes a chunk of the head batch (pool.mu held, pool.count > 0): its first request and its
   length through @k; @out: the batch's file, engine and kind. */
static EmbTierReq *take(int64_t *k, PoolBatch *out)
{
    PoolBatch *b = &pool.queue[pool.head];
    *out = *b;
    const int64_t left = b->n - b->next;
    /* writes to one file take its inode lock one at a time (ext4, xfs): one thread writes a
       whole run of them rather than many spinning on that lock */
    *k = b->reqs[b->next].write
             ? EMB_MIN(left, (int64_t)POOL_WRITE_CHUNK)
             : EMB_MIN(left, EMB_MAX((int64_t)POOL_MIN_CHUNK,
                                     EMB_MIN((int64_t)POOL_CHUNK, left / (pool.nthreads + 1))));
    EmbTierReq *r = b->reqs + b->next;
    b->next += *k;
    if (b->next == b->n) {
        pool.head = (pool.head + 1) % POOL_BATCHES;
        pool.count--;
        pthread_cond_signal(&pool.room);
    }
    return r;
}

int64_t emb__tier_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Does a chunk taken by take() (pool.mu held on entry and on return; released meanwhile).
   A background chunk whose first request was slow wakes one more thread. */
static void run_chunk(EmbTierReq *r, int64_t k, const PoolBatch *b)
{
    const int fd = b->fd;
    const bool bg = b->bg;
    pthread_mutex_unlock(&pool.mu);
    for (int64_t i = 0; i < k; i++) {
        const int64_t t0 = bg && i == 0 ? emb__tier_now_ns() : 0;
        const int f = r[i].populate ? 0 : emb__tier_io_injected(&r[i]);
        r[i].res = f ? f : emb__tier_pool_rw(fd, &r[i]);
        if (t0 && emb__tier_now_ns() - t0 > POOL_SLOW_NS)
            pthread_cond_signal(&pool.work); /* one may be missed: the depth grows later */
    }
    pthread_mutex_lock(&pool.mu);
    for (int64_t i = 0; i < k; i++)
        r[i].complete = 1;
    *b->inflight -= k;
    if (pool.waiters)
        pthread_cond_broadcast(&pool.idle);
}

/* Does one queued chunk, of any engine's, if there is one (pool.mu held); whether it did. */
static bool help(void)
{
    if (!pool.count)
        return false;
    int64_t k;
    PoolBatch b;
    EmbTierReq *r = take(&k, &b);
    run_chunk(r, k, &b);
    return true;
}

static void *pool_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        while (!pool.count && !pool.stop)
            pthread_cond_wait(&pool.work, &pool.mu);
        if (!help())
            break;
    }
    pthread_mutex_unlock(&pool.mu);
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
void emb__tier_pool_submit(int fd, int64_t *inflight, EmbTierReq *reqs, int64_t n, bool bg)
{
    if (n <= 0)
        return;
    pthread_mutex_lock(&pool.mu);
    while (pool.count == POOL_BATCHES)
        if (!help())
            pthread_cond_wait(&pool.room, &pool.mu);
    /* a batch someone waits for goes before the background ones: a lookup's few reads or
       write-backs do not wait behind (nor, helping, do) the next batch's prefetch */
    if (!bg)
        pool.head = (pool.head + POOL_BATCHES - 1) % POOL_BATCHES;
    pool.queue[bg ? (pool.head + pool.count) % POOL_BATCHES : pool.head] =
        (PoolBatch){.reqs = reqs, .n = n, .inflight = inflight, .fd = fd, .bg = bg};
    pool.count++;
    *inflight += n;
    const int64_t wake = bg ? 1 : EMB_MIN((int64_t)pool.nthreads,
                                          (n + POOL_MIN_CHUNK - 1) / POOL_MIN_CHUNK);
    for (int64_t i = 0; i < wake; i++)
        pthread_cond_signal(&pool.work);
    pthread_mutex_unlock(&pool.mu);
}

void emb__tier_pool_wait(const int64_t *inflight, const EmbTierReq *r)
{
    pthread_mutex_lock(&pool.mu);
    while (r ? !r->complete : *inflight != 0) {
        if (help())
            continue;
        pool.waiters++;
        pthread_cond_wait(&pool.idle, &pool.mu);
        pool.waiters--;
    }
    pthread_mutex_unlock(&pool.mu);
}

int64_t emb__tier_pool_pending(const int64_t *inflight)
{
    pthread_mutex_lock(&pool.mu);
    const int64_t n = *inflight;
    pthread_mutex_unlock(&pool.mu);
    return n;
}

/* The pool's threads: see the file's comment. */
static int pool_size(void)
{
    return EMB_MIN(POOL_DEPTH, EMB_MAX(POOL_MIN, 2 * emb__platform_physical_cores()));
}

int emb__tier_pool_start(void)
{
    int r = 0;
    pthread_mutex_lock(&pool.life);
    if (pool.users == 0) {
        const int want = pool_size();
        pool.stop = 0; /* no thread runs: the last stop joined them all */
        for (int i = 0; i < want; i++) {
            if (pthread_create(&pool.threads[i], NULL, pool_main, NULL))
                break;
            pthread_mutex_lock(&pool.mu);
            pool.nthreads++;
            pthread_mutex_unlock(&pool.mu);
        }
        if (!pool.nthreads)
            r = emb__fail(EMB_ENOMEM, "tiered table: cannot start I/O threads");
    }
    pool.users += !r;
    pthread_mutex_unlock(&pool.life);
    return r;
}

void emb__tier_pool_stop(void)
{
    pthread_mutex_lock(&pool.life);
    if (--pool.users == 0) {
        pthread_mutex_lock(&pool.mu);
        pool.stop = 1;
        pthread_cond_broadcast(&pool.work);
        const int n = pool.nthreads;
        pthread_mutex_unlock(&pool.mu);
        for (int i = 0; i < n; i++)
            pthread_join(pool.threads[i], NULL);
        pthread_mutex_lock(&pool.mu);
        pool.nthreads = 0;
        pthread_mutex_unlock(&pool.mu);
    }
    pthread_mutex_unlock(&pool.life);
}

int emb__tier_pool_threads(void)
{
    pthread_mutex_lock(&pool.mu);
    const int n = pool.nthreads;
    pthread_mutex_unlock(&pool.mu);
    return n;
}

