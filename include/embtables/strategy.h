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
 *  - custom: user callbacks.
 * Every strategy writes either output layout and gives bit-identical results to
 * sequential. A strategy owns per-thread scratch, allocated on first use and reused: a
 * steady-state call allocates nothing. One strategy object must not be used by two calls
 * at once.
 */
#ifndef EMBTABLES_STRATEGY_H
#define EMBTABLES_STRATEGY_H

#include "embtables/lookup.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct EmbStrategy EmbStrategy;
/* Declared here for the strategy callbacks; defined in update.h. */
typedef struct EmbOptimizer EmbOptimizer;
typedef struct EmbGrad EmbGrad;
typedef struct EmbIndexer EmbIndexer;

/** Thread pinning orders (need hwloc; otherwise ignored). */
typedef enum EmbPinning {
    EMB_PIN_NONE = 0,    /**< leave threads where the OS puts them */
    EMB_PIN_COMPACT = 1, /**< thread k on physical core k */
    EMB_PIN_SCATTER = 2, /**< threads spread round-robin over NUMA nodes */
} EmbPinning;

/** Options of the threaded strategies; zero-initialise for the defaults. */
typedef struct EmbStrategyOptions {
    int32_t nthreads;   /**< 0: the physical cores (hwloc) */
    EmbPinning pinning; /**< pin the strategy's threads */
    int32_t chunks;     /**< prealloc-concat lookup: bag chunks per table (0: auto) */
    int32_t num_splits; /**< multi-table update: splits per table (0: 4; parallel: 1) */
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
    int (*maplookup)(void *user, EmbTable *const *tables, int64_t ntables,
                     const EmbBatch *batches, const EmbPooling *poolings,
                     const EmbOutputs *outputs);
    int (*update_many)(void *user, EmbOptimizer *opt, EmbTable *const *tables,
                       const EmbGrad *const *grads, int64_t ntables,
                       EmbIndexer *const *indexers, unsigned flags);
    void (*destroy)(void *user); /**< called on user by emb_strategy_destroy */
} EmbStrategyCallbacks;

/** The sequential strategy. @return 0, EMB_ENULL, EMB_ENOMEM */
EMB_API int emb_strategy_sequential(EmbStrategy **out);
/** Whole tables over threads. @return 0, EMB_ENULL, EMB_EINVAL, EMB_ENOMEM */
EMB_API int emb_strategy_parallel(EmbStrategy **out, const EmbStrategyOptions *opts);
/** Bag chunks of every table over threads. @return 0, EMB_ENULL, EMB_EINVAL, EMB_ENOMEM */
EMB_API int emb_strategy_prealloc_concat(EmbStrategy **out, const EmbStrategyOptions *opts);
/** A user strategy; @p cb is copied, @p user owned on success. @return 0, EMB_ENULL, EMB_ENOMEM */
EMB_API int emb_strategy_custom(EmbStrategy **out, const EmbStrategyCallbacks *cb, void *user);
/** Destroys a strategy and its scratch (NULL is fine); sets `*s` to NULL. */
EMB_API void emb_strategy_destroy(EmbStrategy **s);
/** Threads the strategy runs on (1 for sequential and custom). */
EMB_API int emb_strategy_nthreads(const EmbStrategy *s);
/** "sequential", "parallel", "prealloc-concat" or "custom". */
EMB_API const char *emb_strategy_name(const EmbStrategy *s);

/**
 * Looks up batches[i] in tables[i] for every i < ntables, pooled by poolings[i] (poolings
 * NULL: SUM for all), into @p outputs. Every batch is validated before any thread starts;
 * in the concat layout every batch must have the same nbags.
 * @return 0; EMB_ENULL, EMB_EINVAL (ntables <= 0), EMB_ESHAPE (nbags differ in concat,
 *         concat_stride too small), any code of emb_lookup() naming the table. Nothing is
 *         written on failure.
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
 * table i's ids start at `ids + i * nbags * bag_size` (the seed's combined form; Julia's
 * column-major `bag_size x nbags x ntables` array has this memory layout).
 * @return as emb_maplookup_ids()
 */
EMB_API int emb_maplookup_ids3(EmbStrategy *strategy, EmbTable *const *tables, int64_t ntables,
                               const int64_t *ids, int64_t nbags, int64_t bag_size,
                               const EmbOutputs *outputs);

#ifdef __cplusplus
}
#endif
#endif
