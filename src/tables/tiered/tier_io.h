/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_io.h — the tiered table's I/O engine: batched asynchronous reads and writes of
 * records of one file, through the process's pool of pread / pwrite threads (one for every
 * table), or io_uring
 * (liburing) for the reads where asked for, or copies from a mapping of the file for the
 * reads (tier_map.c; EMB_TIER_IO=uring|pread|map chooses; auto: the mapping for a file small
 * enough to keep populated, else the pool, tier_io.c says why). Submitting never fails: a request that cannot be queued waits
 * for room. Each request completes with res 0 or a negative errno (-ENODATA: the file
 * ended before the request did).
 *
 * Calls on one engine are serialised by the caller (the tiered table's lock). The fault hook
 * (tests only) lets a test fail any request with an errno of its choice, on both engines.
 */
#ifndef EMB_TIER_IO_H
#define EMB_TIER_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct EmbTierIo EmbTierIo;

/** One read or write of len bytes at offset of the engine's file. */
typedef struct EmbTierReq {
    void *buf;
    int64_t offset;
    uint32_t len;
    uint8_t write;
    uint8_t populate; /* the mapped engine's: MADV_POPULATE_READ of buf (a mapping), len */
    const char *src;  /* the mapped engine's: a read copied from here (the mapping), guarded */
    int32_t res;   /* set on completion: 0 or -errno */
    uint32_t done; /* bytes done so far (the engine's) */
    uint8_t complete; /* set with res (the engine's; read it through emb__tier_io_wait_one) */
    int64_t tag;   /* the caller's (a row, a slot) */
} EmbTierReq;

typedef enum EmbTierIoKind {
    EMB_TIER_IO_AUTO = 0,  /* EMB_TIER_IO from the environment, else map or pread (tier_io.c) */
    EMB_TIER_IO_URING = 1,
    EMB_TIER_IO_PREAD = 2,
    EMB_TIER_IO_MAP = 3,   /* reads copied from a mapping of the file (tier_map.c) */
} EmbTierIoKind;

/*
 * Fault injection (tests): when set, called for every request before its I/O; a nonzero
 * return (a negative errno) completes the request with it and does no I/O.
 */
typedef int (*emb_tier_fault_fn)(const EmbTierReq *req);
void emb__tier_io_set_fault(emb_tier_fault_fn fn);

/* The fault hook sees a sync (emb__tier_io_sync) as a write of 0 bytes with this tag. */
#define EMB_TIER_SYNC_TAG INT64_MAX

/* The injected fault of @r (the hook's return), or 0. */
int emb__tier_io_injected(const EmbTierReq *r);

/* ---- the process's pread / pwrite pool (tier_pool.c), shared by every engine ---- */
/* A user more (the first starts the threads): 0 or EMB_ENOMEM. */
int emb__tier_pool_start(void);
/* A user less (the last stops and joins the threads; nothing of its may be in flight). */
void emb__tier_pool_stop(void);
/* The pool's threads now (0: none started). */
int emb__tier_pool_threads(void);
/* The pool's threads let run at once now, and through @base the least (tier_pool.c). */
int emb__tier_pool_limit(int *base);
/* Queues @n requests on the file @fd, counted in *@inflight (the engine's, under the pool's
   lock); @bg: nobody waits for them yet (wakes one thread, see tier_pool.c). */
void emb__tier_pool_submit(int fd, int64_t *inflight, EmbTierReq *reqs, int64_t n, bool bg);
/* Waits (doing queued chunks meanwhile) until @r is complete, or with @r NULL, until
   *@inflight is 0. */
void emb__tier_pool_wait(const int64_t *inflight, const EmbTierReq *r);
/* *@inflight read under the pool's lock. */
int64_t emb__tier_pool_pending(const int64_t *inflight);
/* CLOCK_MONOTONIC in ns. */
int64_t emb__tier_now_ns(void);
/* Does all of @r with pread / pwrite on @fd, in this thread: 0 or -errno (-ENODATA at the
   end of the file). */
int32_t emb__tier_pool_rw(int fd, EmbTierReq *r);

/* ---- the mapped read engine's pieces (tier_map.c) ---- */
/* A read-only shared mapping of a file: base[0, len), the file's size fsize when last seen. */
typedef struct EmbTierMap {
    char *base;
    size_t len;
    int64_t fsize;
} EmbTierMap;
/* The SIGBUS guard's user count, one more (the first installs it): 0 or EMB_ENOTSUP. */
int emb__tier_guard_acquire(void);
/* One less (the last restores the previous handler). */
void emb__tier_guard_release(void);
/* memcpy from a mapping: 0, or -EIO where a page faulted (SIGBUS: unreadable, truncated). */
int32_t emb__tier_guarded_copy(void *dst, const void *src, size_t len);
/* Covers the file @fd's bytes [0, @end): 0, -ENODATA (shorter) or -errno (not mappable). */
int emb__tier_map_cover(EmbTierMap *m, int fd, int64_t end);
/* Unmaps. */
void emb__tier_map_drop(EmbTierMap *m);
/* The page size. */
int64_t emb__tier_map_page(void);
/* The memory the process may fill: the RAM, or its memory cgroup's limit where lower. */
int64_t emb__tier_map_memory(void);
/* MADV_POPULATE_READ of [@addr, +@len) (page-aligned): 0 or -errno (-EFAULT: a page would
   have raised SIGBUS; -EHWPOISON, -ENOMEM...). */
int32_t emb__tier_populate(const void *addr, size_t len);

/* Does request @r on the file @fd (not the engine's) at once, in this thread: its res. */
int32_t emb__tier_io_rw_fd(int fd, EmbTierReq *r);
/* fdatasync of @fd (the fault hook's first): 0 or -errno. */
int32_t emb__tier_io_sync(int fd);

/* 0, or EMB_ENOMEM / EMB_ENOTSUP (io_uring asked for and unavailable) with a message. */
int emb__tier_io_create(EmbTierIo **out, int fd, EmbTierIoKind kind);
/* Waits for every request in flight, then frees the engine. NULL is fine. */
void emb__tier_io_destroy(EmbTierIo **io);
/* Switches to the file @fd (no request in flight: the caller waited). */
void emb__tier_io_set_fd(EmbTierIo *io, int fd);
/* "io_uring", "mmap" or "pread" */
const char *emb__tier_io_name(const EmbTierIo *io);
/* Starts @n requests (their memory stays the caller's until emb__tier_io_wait returns). */
void emb__tier_io_submit(EmbTierIo *io, EmbTierReq *reqs, int64_t n);
/* emb__tier_io_submit of requests nobody waits for yet (a prefetch's): the pool wakes one
   thread for them, and more only while their requests go to the disk (tier_io.c). */
void emb__tier_io_submit_background(EmbTierIo *io, EmbTierReq *reqs, int64_t n);
/* Requests in flight (without waiting; io_uring's completions that are there are reaped). */
int64_t emb__tier_io_pending(EmbTierIo *io);
/* Waits until every request submitted so far has completed. */
void emb__tier_io_wait(EmbTierIo *io);
/* Waits until request @r (submitted) has completed. */
void emb__tier_io_wait_one(EmbTierIo *io, const EmbTierReq *r);
/* Submits @n requests and waits for them (not for other requests in flight). */
void emb__tier_io_run(EmbTierIo *io, EmbTierReq *reqs, int64_t n);

#endif
