/*
 * strategy_priv.h — the inside of EmbStrategy, shared by the files of src/strategies/
 * only: the object (strategy.c), the thread launcher (threads.c) and the ensemble lookup
 * (maplookup.c). Other layers use strategy_impl.h.
 */
#ifndef EMB_STRATEGY_PRIV_H
#define EMB_STRATEGY_PRIV_H

#include "internal.h"
#include "strategies/strategy_impl.h"

/* The most threads a strategy may ask for. */
#define EMB_MAX_THREADS 4096

/* A buffer owned by the strategy: grown when more is asked, never shrunk. */
typedef struct EmbGrowBuf {
    void *p;
    size_t bytes;
} EmbGrowBuf;

struct EmbStrategy {
    EmbStrategyKind kind;
    int nthreads;
    EmbPinning pinning;
    int32_t chunks;      /* prealloc-concat: bag chunks per table (0: auto) */
    int num_splits;      /* multi-table update: splits per table */
    bool splits_auto;    /* num_splits was left to the library (option 0) */

    void **scratch;      /* nthreads per-thread buffers of scratch_bytes each */
    size_t scratch_bytes;
    EmbGrowBuf plan;     /* emb_maplookup's per-call plan */
    EmbGrowBuf batches;  /* the batches built by the id-matrix conveniences */

    EmbStrategyCallbacks cb; /* custom strategies */
    void *user;
};

/*
 * Makes @b hold at least @bytes (64-byte aligned; contents not kept when it grows).
 * Returns the buffer, or NULL after recording EMB_ENOMEM (the old buffer is kept).
 */
void *emb__growbuf(EmbGrowBuf *b, size_t bytes);

/*
 * The thread launcher (threads.c): runs tasks [0, ntasks) on up to @nthreads threads
 * (the caller is thread 0), handing them out dynamically in index order, each thread
 * pinned by @pinning. Runs on the caller alone when nthreads or ntasks is 1, or when the
 * library is built without OpenMP.
 */
void emb__threads_run(int nthreads, EmbPinning pinning, int64_t ntasks, emb_task_fn fn,
                      void *ctx);

#endif
