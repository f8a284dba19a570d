/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_pool.c — the process's pread / pwrite pool (tier_io.h), shared by every tiered
 * table's engine: one set of threads fed from one queue of submitted batches, each batch
 * naming its file and its engine's count of requests in flight (an engine waits for its
 * own requests only). Started by the first engine, stopped (threads joined) by the last.
 *
 * Its size adapts to where the reads go. A record in the page cache needs a core, not depth:
 * every thread running past the cores only takes them from the training step (on 2 cores,
 * a pread costs 2.5 us of the pool's thread while the step computes on the other). A
 * blocking pread that goes to the disk keeps one request at the device, so there the
 * threads running are the engine's queue depth, and a random-read SSD needs ~16 in flight
 * to approach its rate (fio, 4 KiB random reads). The pool starts POOL_DEPTH (16) threads
 * once (they sleep when not let run: 16 for the process, where 26 tiered tables of the
 * DLRM example used to start 416) and lets pool.limit of them run chunks at once: pool.base
 * while the reads hit the page cache, one more each time a chunk of reads was mostly slow
 * (POOL_SLOW_NS: gone to the disk), one less each time a chunk of reads was all fast, so
 * the depth follows the storage (docs/bench/2026-11-28-tier-read-path.md measures both).
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
#include "platform.h"
#include "tables/tiered/tier_io.h"

#define POOL_DEPTH 16    /* the threads: the most running at once, the device's queue depth */
#define POOL_BASE 2      /* the most running at once on reads from the page cache, per core */
#define POOL_BATCHES 256 /* submitted batches queued for the pool */
#define POOL_CHUNK 32    /* the most reads one thread takes at a time */
#define POOL_MIN_CHUNK 8 /* the fewest (where there are as many) */
#define POOL_WRITE_CHUNK 4096 /* the most writes one thread takes at a time */
/* A read that takes longer than this went to the disk, not the page cache (0.6-2.5 us a
   record there): a background chunk's first wakes one more thread (pool_submit), a chunk
   of reads mostly slow lets one more run (run_chunk) */
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
    int base, limit;     /* the pool's threads let run at once: now, the least */
    int running;         /* the pool's threads running a chunk (not the helping callers) */
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

/* Does all of @r with pread / pwrite (a mapped engine's copy); 0 or -errno (-ENODATA at the
   end of the file). */
int32_t emb__tier_pool_rw(int fd, EmbTierReq *r)
{
    if (r->populate) /* the mapped engine's (tier_map.c): not a transfer */
        return emb__tier_populate(r->buf, r->len);
    if (r->src) { /* the mapped engine's read from a populated mapping (tier_io.c) */
        const int32_t e = emb__tier_guarded_copy(r->buf, r->src, r->len);
        r->done = e ? 0 : r->len;
        return e;
    }
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
                                     EMB_MIN((int64_t)POOL_CHUNK, left / (pool.limit + 1))));
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

/* A chunk's copies from the mapping (src) checked against the file's size after they were
   made, once a chunk: a file cut by someone else since their submit (tier_io.c checks it
   there) reads zeros inside the mapping's last page, so those copies fail with -ENODATA, as
   a pread's would, and are not taken as rows. */
static void cut_copies(int fd, EmbTierReq *r, int64_t k)
{
    struct stat st;
    int64_t i = 0;
    while (i < k && !(r[i].src && !r[i].res))
        i++;
    if (i == k || fstat(fd, &st))
        return;
    for (; i < k; i++)
        if (r[i].src && !r[i].res && r[i].offset + (int64_t)r[i].len > (int64_t)st.st_size)
            r[i].res = -ENODATA, r[i].done = 0;
}

/* The reads of a chunk told where they went (pool.mu held): mostly slow (the disk) lets one
   more thread run, all fast (the page cache) one less, down to pool.base. */
static void adapt(int64_t reads, int64_t slow)
{
    if (reads && 2 * slow > reads && pool.limit < pool.nthreads) {
        pool.limit++;
        pthread_cond_signal(&pool.work);
    } else if (reads && !slow && pool.limit > pool.base) {
        pool.limit--;
    }
}

/* Does a chunk taken by take() (pool.mu held on entry and on return; released meanwhile).
   A background chunk whose first request was slow wakes one more thread; @own: a pool
   thread's chunk (its reads' times adapt the pool's depth). */
static void run_chunk(EmbTierReq *r, int64_t k, const PoolBatch *b, bool own)
{
    const int fd = b->fd;
    const bool bg = b->bg;
    int64_t reads = 0, slow = 0;
    pthread_mutex_unlock(&pool.mu);
    for (int64_t i = 0; i < k; i++) {
        const bool timed = (own || (bg && i == 0)) && !r[i].write && !r[i].populate;
        const int64_t t0 = timed ? emb__tier_now_ns() : 0;
        const int f = r[i].populate ? 0 : emb__tier_io_injected(&r[i]);
        r[i].res = f ? f : emb__tier_pool_rw(fd, &r[i]);
        if (!timed)
            continue;
        const bool s = emb__tier_now_ns() - t0 > POOL_SLOW_NS;
        reads++, slow += s;
        if (s && bg && i == 0)
            pthread_cond_signal(&pool.work); /* one may be missed: the depth grows later */
    }
    cut_copies(fd, r, k);
    pthread_mutex_lock(&pool.mu);
    for (int64_t i = 0; i < k; i++)
        r[i].complete = 1;
    *b->inflight -= k;
    if (own)
        adapt(reads, slow);
    if (pool.waiters)
        pthread_cond_broadcast(&pool.idle);
}

/* Does one queued chunk, of any engine's, if there is one (pool.mu held); whether it did.
   @own: a pool thread (counted running), not a caller helping. */
static bool help(bool own)
{
    if (!pool.count)
        return false;
    int64_t k;
    PoolBatch b;
    EmbTierReq *r = take(&k, &b);
    pool.running += own;
    run_chunk(r, k, &b, own);
    pool.running -= own;
    return true;
}

static void *pool_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        while ((!pool.count || pool.running >= pool.limit) && !pool.stop)
            pthread_cond_wait(&pool.work, &pool.mu);
        if (!help(true))
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
        if (!help(false))
            pthread_cond_wait(&pool.room, &pool.mu);
    /* a batch someone waits for goes before the background ones: a lookup's few reads or
       write-backs do not wait behind (nor, helping, do) the next batch's prefetch */
    if (!bg)
        pool.head = (pool.head + POOL_BATCHES - 1) % POOL_BATCHES;
    pool.queue[bg ? (pool.head + pool.count) % POOL_BATCHES : pool.head] =
        (PoolBatch){.reqs = reqs, .n = n, .inflight = inflight, .fd = fd, .bg = bg};
    pool.count++;
    *inflight += n;
    const int64_t wake = bg ? 1 : EMB_MIN((int64_t)pool.limit,
                                          (n + POOL_MIN_CHUNK - 1) / POOL_MIN_CHUNK);
    for (int64_t i = 0; i < wake; i++)
        pthread_cond_signal(&pool.work);
    pthread_mutex_unlock(&pool.mu);
}

void emb__tier_pool_wait(const int64_t *inflight, const EmbTierReq *r)
{
    pthread_mutex_lock(&pool.mu);
    while (r ? !r->complete : *inflight != 0) {
        if (help(false))
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

/* The pool's threads let run at once on reads from the page cache: EMB_TIER_POOL_THREADS
   (1..POOL_DEPTH) where set, else POOL_BASE a physical core the process may use. */
static int pool_base(void)
{
    const char *e = getenv("EMB_TIER_POOL_THREADS");
    const int n = e ? atoi(e) : 0;
    if (n >= 1 && n <= POOL_DEPTH)
        return n;
    return EMB_MIN(POOL_DEPTH, EMB_MAX(1, POOL_BASE * emb__platform_physical_cores()));
}

int emb__tier_pool_start(void)
{
    int r = 0;
    pthread_mutex_lock(&pool.life);
    if (pool.users == 0) {
        pool.stop = 0; /* no thread runs: the last stop joined them all */
        pool.base = pool.limit = pool_base();
        for (int i = 0; i < POOL_DEPTH; i++) {
            if (pthread_create(&pool.threads[i], NULL, pool_main, NULL))
                break;
            pthread_mutex_lock(&pool.mu);
            pool.nthreads++;
            pthread_mutex_unlock(&pool.mu);
        }
        if (!pool.nthreads)
            r = emb__fail(EMB_ENOMEM, "tiered table: cannot start I/O threads");
        pthread_mutex_lock(&pool.mu);
        pool.base = pool.limit = EMB_MIN(pool.base, EMB_MAX(pool.nthreads, 1));
        pthread_mutex_unlock(&pool.mu);
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


int emb__tier_pool_limit(int *base)
{
    pthread_mutex_lock(&pool.mu);
    const int n = pool.limit;
    *base = pool.base;
    pthread_mutex_unlock(&pool.mu);
    return n;
}
