/* SPDX-License-Identifier: BSD-2-Clause */
/**
 * @file strategy.h
 * Ensembles: emb_maplookup() over many tables, each with its own batch, under a pluggable
 * execution strategy. The same strategy objects drive the multi-table update
 * (emb_update_many() in update.h).
 *
 * Strategies:
 *  - sequential: tables one after another on the calling thread;
 *  - parallel: whole tables spread over threads, balanced by work (nnz x D x element size);
 *  - prealloc-concat: every table cut into chunks of bags handed to threads, writing the
 *    concatenated output directly (the layout DLRM's interaction layer wants);
 *  - auto: per call, whole tables per thread or bag chunks for the forward, and for the
 *    update whole tables or each table's ids partitioned by row over the threads, from the
 *    table count, their work and the thread count (emb_strategy_auto());
 *  - custom: user callbacks.
 * Every strategy writes either output layout and gives bit-identical results to
 * sequential. A strategy owns per-thread scratch, allocated on first use and reused: a
 * steady-state call allocates nothing. One strategy object must not be used by two calls
 * at once. Threads come from OpenMP (the caller is thread 0); called from inside an active
 * OpenMP parallel region, or in a build without OpenMP, a strategy runs its work on the
 * calling thread, with the same results.
 *
 * Concurrency: emb_maplookup() reads its tables as lookup.h's calls do; two calls at once
 * need two strategy objects (threads of your own may each drive their own strategy).
 */
#ifndef EMBTABLES_STRATEGY_H
#define EMBTABLES_STRATEGY_H

#include "embtables/lookup.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque execution strategy (sequential, parallel, prealloc-concat or custom). */
typedef struct EmbStrategy EmbStrategy;
/* Declared here for the strategy callbacks; described in update.h. */
/** Opaque optimizer: hyper-parameters and per-table state (update.h). */
typedef struct EmbOptimizer EmbOptimizer;
/** Opaque gradient holder of one table (update.h). */
typedef struct EmbGrad EmbGrad;
/** Opaque reusable deduplicating indexer (update.h). */
typedef struct EmbIndexer EmbIndexer;

/** Options of the threaded strategies; zero-initialise for the defaults. */
typedef struct EmbStrategyOptions {
    int32_t nthreads;   /**< 0: the physical cores (hwloc) */
    EmbPinning pinning; /**< pin the strategy's threads */
    int32_t chunks;     /**< prealloc-concat lookup: bag chunks per table (0: auto) */
    int32_t num_splits; /**< multi-table update: splits per table (0: auto: 1 with one
                             thread or >= 4 tables per thread, else max(4, 2 x nthreads /
                             tables) up to 64; parallel: 1) */
} EmbStrategyOptions;

/**
 * Where emb_maplookup() writes: either one buffer per table (`per_table[i]`, rows of
 * `strides[i]` elements, or featuresize when strides is NULL), or, when `concat` is
 * non-NULL, one row-major matrix of nbags rows of `concat_stride` elements, where table i
 * occupies the columns [prependrows + Σ_{j<i} D_j, prependrows + Σ_{j<=i} D_j). The first
 * `prependrows` elements of each row are never written (the dense features of a DLRM go
 * there; the name is EmbeddingTables.jl's, whose output is column-major).
 */
typedef struct EmbOutputs {
    float *const *per_table; /**< ntables buffers (per-table layout) */
    const int64_t *strides;  /**< ntables row strides, or NULL for featuresize */
    float *concat;           /**< the concatenated matrix, or NULL */
    int64_t concat_stride;   /**< >= prependrows + Σ featuresize */
    int64_t prependrows;     /**< leading elements of each concat row left untouched */
} EmbOutputs;

/** User strategy callbacks; either may be NULL (then that operation is EMB_ENOTSUP). */
typedef struct EmbStrategyCallbacks {
    /** does emb_maplookup() (the arguments validated) */
    int (*maplookup)(void *user, EmbTable *const *tables, int64_t ntables,
                     const EmbBatch *batches, const EmbPooling *poolings,
                     const EmbOutputs *outputs);
    /** does emb_update_many() (the arguments validated) */
    int (*update_many)(void *user, EmbOptimizer *opt, EmbTable *const *tables,
                       const EmbGrad *const *grads, int64_t ntables,
                       EmbIndexer *const *indexers, unsigned flags);
    void (*destroy)(void *user); /**< called on user by emb_strategy_destroy */
} EmbStrategyCallbacks;

/** The sequential strategy. @return 0, EMB_ENULL, EMB_ENOMEM */
EMB_API int emb_strategy_sequential(EmbStrategy **out);
/**
 * Whole tables over threads: the tables, largest work (nnz x featuresize x element size)
 * first, are handed out dynamically to the threads (list scheduling in LPT order).
 * @param opts NULL for the defaults; chunks is ignored, num_splits is 1
 * @return 0, EMB_ENULL, EMB_EINVAL (negative or > 4096 threads, bad pinning, negative
 *         chunks / num_splits), EMB_ENOMEM
 */
EMB_API int emb_strategy_parallel(EmbStrategy **out, const EmbStrategyOptions *opts);
/**
 * Bag chunks of every table over threads: each table cut into `chunks` near-equal bag
 * ranges (0: automatic, about 8 tasks per thread, at least 32 bags a chunk), handed out
 * table-major (the chunks of the table with the most work first, each table's chunks in
 * row order), so that a thread's next task is usually the rows right after its last one
 * and the threads work on one or two tables at a time.
 * @param opts NULL for the defaults
 * @return 0, EMB_ENULL, EMB_EINVAL (as emb_strategy_parallel()), EMB_ENOMEM
 */
EMB_API int emb_strategy_prealloc_concat(EmbStrategy **out, const EmbStrategyOptions *opts);
/**
 * Chooses per call from the ensemble's shape (a few comparisons; no state kept):
 *  - a call with little work (below 4 MiB: the forward's ids x featuresize x element size
 *    plus its outputs, the update's gradient rows x featuresize x 4 bytes; the update only
 *    with num_splits 0) runs on the calling thread: waking the threads would cost more
 *    than they save (a one-hot batch of 2048 ids of one table, for one).
 *  - forward (emb_maplookup()): whole tables per thread, as emb_strategy_parallel(), when
 *    there are at least 4 tables per thread and no table has more work (nnz x featuresize
 *    x element size) than total / nthreads (list scheduling then balances the threads);
 *    otherwise bag chunks, as emb_strategy_prealloc_concat() (one large table, few tables,
 *    or one table dominating). One thread: the tables in order.
 *  - update (emb_update_many()): whole tables per thread when there is one thread or at
 *    least 4 tables per thread; otherwise each table's ids partitioned by row (hash) into max(4, 2 x
 *    nthreads / ntables) parts (at most 64) that are indexed and applied in parallel, as
 *    prealloc-concat with num_splits 0.
 * Results are bit-identical to every other strategy's.
 * @param opts NULL for the defaults (chunks and num_splits as for prealloc-concat)
 * @return 0, EMB_ENULL, EMB_EINVAL (as emb_strategy_parallel()), EMB_ENOMEM
 */
EMB_API int emb_strategy_auto(EmbStrategy **out, const EmbStrategyOptions *opts);
/**
 * A user strategy; @p cb is copied, @p user owned on success (cb->destroy is called on it
 * by emb_strategy_destroy()). emb_maplookup() validates everything before it calls
 * cb->maplookup and returns what the callback returns.
 * @return 0, EMB_ENULL, EMB_ENOMEM
 */
EMB_API int emb_strategy_custom(EmbStrategy **out, const EmbStrategyCallbacks *cb, void *user);
/** Destroys a strategy and its scratch (NULL is fine); sets `*s` to NULL. */
EMB_API void emb_strategy_destroy(EmbStrategy **s);
/** Threads the strategy runs on (1 for sequential and custom, 0 for NULL). */
EMB_API int emb_strategy_nthreads(const EmbStrategy *s);
/** "sequential", "parallel", "prealloc-concat", "auto" or "custom" ("?" for NULL). */
EMB_API const char *emb_strategy_name(const EmbStrategy *s);

/**
 * Looks up batches[i] in tables[i] for every i < ntables, pooled by poolings[i] (poolings
 * NULL: SUM for all), into @p outputs. Every batch is validated before any thread starts;
 * in the concat layout every batch must have the same nbags. The error message names the
 * first failing table in table order (`tables[i]: ...`). Bit-identical results for every
 * strategy and thread count. The caller's buffers are not owned; the strategy's plan
 * buffer grows on first use, so a steady-state call allocates nothing.
 * @return 0; EMB_ENULL (strategy, tables, a tables[i], batches, outputs, or both
 *         per_table and concat, a per_table[i] with rows), EMB_EINVAL (ntables <= 0,
 *         prependrows < 0), EMB_ESHAPE (nbags differ in concat, concat_stride too small),
 *         EMB_EOVERFLOW (the concat row width overflows),
 *         EMB_ENOTSUP (a custom strategy without maplookup), EMB_ENOMEM (first call), any
 *         code of emb_lookup() naming the table (the first failing table's code with
 *         its own message), or what a custom callback returns. Nothing is written on
 *         failure: a tiered table's rows (tiered.h) are all read, for every table, before
 *         any output is written, under every strategy (a custom strategy's callback
 *         excepted: what it writes is its own).
 */
EMB_API int emb_maplookup(EmbStrategy *strategy, EmbTable *const *tables, int64_t ntables,
                          const EmbBatch *batches, const EmbPooling *poolings,
                          const EmbOutputs *outputs);

/**
 * Julia `maplookup(strategy, tables, indices)` with one id matrix per table: table i's
 * batch is @p nbags fixed bags of @p bag_size int64 ids at `ids[i]` (bag b's ids
 * contiguous), pooled by SUM (bag_size 1 gives the columns themselves, as Julia's vector
 * form). The batch descriptors live in a buffer owned by @p strategy (grown, never
 * shrunk), so a steady-state call allocates nothing.
 * @return as emb_maplookup(); EMB_EOVERFLOW for sizes that are negative or overflow
 */
EMB_API int emb_maplookup_ids(EmbStrategy *strategy, EmbTable *const *tables, int64_t ntables,
                              const int64_t *const *ids, int64_t nbags, int64_t bag_size,
                              const EmbOutputs *outputs);

/**
 * As emb_maplookup_ids() with all ids in one 3-D array laid out [table][sample][id in bag]:
 * table i's ids start at `ids + i * nbags * bag_size` (EmbeddingTables.jl's combined form:
 * Julia's column-major `bag_size x nbags x ntables` array has this memory layout).
 * @return as emb_maplookup_ids()
 */
EMB_API int emb_maplookup_ids3(EmbStrategy *strategy, EmbTable *const *tables, int64_t ntables,
                               const int64_t *ids, int64_t nbags, int64_t bag_size,
                               const EmbOutputs *outputs);

#ifdef __cplusplus
}
#endif
#endif
