/* SPDX-License-Identifier: BSD-2-Clause */
/**
 * @file dist.h
 * Scale-out on MPI (library `embtables_mpi`): an ensemble of tables sharded over the ranks
 * of the caller's communicator, model-parallel lookups, backward and updates with
 * all-to-all exchanges, results bit-identical to one process running the global batch.
 *
 * Data parallel in, model parallel inside: every rank brings its share of the batch (every
 * table's ids for its own bags, the same bag count for every table); the global batch is
 * rank 0's bags, then rank 1's, and so on. Tables are placed on ranks whole (table-wise:
 * the owner pools, pooled rows travel), split by rows over all ranks or a range of them
 * (row-wise, EMB_PARTITION_MOD / DIV as partition.h: the owners send the raw rows a rank
 * asked for and the rank pools them itself, in bag order), split by feature columns
 * (column-wise: each holder pools its slice) or replicated on every rank (data-parallel:
 * each rank pools its own bags). Row-wise tables do not return
 * partial sums: adding per-shard partial sums would change the rounding with the rank
 * count, and every placement here gives the bits of the single-process library.
 *
 * A step: emb_dist_maplookup() (ids to their owners with MPI_Alltoallv, counts first;
 * owners pool with the ensemble's strategy; pooled rows come back into each rank's output,
 * table group by table group with MPI_Ialltoallv so that one group's exchange overlaps the
 * next group's pooling), emb_dist_backward() (output gradients to the owners, recorded as
 * the pullback of the global batch), emb_dist_update() (the owners dedup and apply any
 * optimizer of update.h). Every call is collective over the communicator.
 *
 * Errors: every call returns 0 or a negative EMB_E* code, and the same code on every rank:
 * each rank checks its own part first (ids against the table sizes, offsets, outputs),
 * then the ranks agree (one MPI_Allgather); when any rank failed, every rank returns the
 * first failing rank's code and emb_last_error() (or emb_dist_last_error()) gives that
 * rank's message, and no
 * rank has written anything. Sharded checkpoints (emb_dist_save(), emb_dist_restore())
 * restore into any rank count. MPI failures (a rank that dies) are MPI's to report: the
 * library duplicates the communicator and sets MPI_ERRORS_RETURN on the duplicate, every
 * MPI error becomes EMB_EIO naming the call, and the ensemble is then unusable. The
 * library never calls MPI_Init or MPI_Finalize; destroy the ensemble before
 * MPI_Finalize.
 *
 * Concurrency: an ensemble takes one call at a time, and every rank makes the same calls
 * in the same order. MPI is called from the calling thread only (the strategy's threads
 * never call it), so MPI_THREAD_FUNNELED suffices when that is the main thread; using two
 * ensembles from two threads at once needs MPI_THREAD_MULTIPLE. The local tables
 * (emb_dist_local_table()) follow table.h's rules: no lookup or update of them from your
 * own threads while an ensemble call runs.
 */
#ifndef EMBTABLES_DIST_H
#define EMBTABLES_DIST_H

#include <mpi.h>

#include "embtables/collection.h"
#include "embtables/update.h"

struct EmbTieredSpec; /* tiered.h */

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque sharded ensemble of tables over an MPI communicator. */
typedef struct EmbDist EmbDist;

/** EmbDistTableDesc::uses: what a table will run with that some placements cannot run. */
enum {
    EMB_DIST_USES_MAX = 1u,        /**< MAX pooling: never row-wise */
    EMB_DIST_USES_MAX_NORM = 2u,   /**< a max_norm pooling: never column-wise */
    EMB_DIST_USES_ROWWISE_ADAGRAD = 4u, /**< EMB_OPT_ROWWISE_ADAGRAD: never column-wise */
};

/** A table of the ensemble, as every rank describes it (the same on every rank). */
typedef struct EmbDistTableDesc {
    const char *name;    /**< copied into the local tables' names; may be NULL */
    int64_t nrows;       /**< columns of the whole table (>= 0) */
    int32_t featuresize; /**< elements per column (>= 1) */
    EmbDtype dtype;      /**< storage type */
    double lookups;      /**< expected ids per step over the global batch, for placement
                              (0: unknown, counted as 1) */
    const struct EmbTieredSpec *tiered; /**< non-NULL: the rank's part (whole table or
                              shard) is a tiered table (tiered.h) in the file
                              `<tiered->path>.rank<R>` of that rank, with these cache
                              options; NULL: in memory. Every rank passes the same choice */
    unsigned uses;       /**< EMB_DIST_USES_* flags (0: none): the planner never chooses,
                              and a pin or an explicit placement may not name, a placement
                              the table's pooling or optimizer cannot run (EMB_ENOTSUP) */
    double distinct;     /**< expected distinct ids per step over the global batch, for
                              placement (0: unknown, min(lookups, nrows), as if no id
                              repeated); skewed ids repeat: a measured batch's count */
} EmbDistTableDesc;

/** How one table is placed. */
typedef enum EmbDistKind {
    EMB_DIST_ANY = -1,      /**< in EmbDistPlaceOptions::pins only: the planner chooses */
    EMB_DIST_TABLEWISE = 0, /**< the whole table on rank `rank` */
    EMB_DIST_ROWWISE = 1,   /**< rows by `partition` over `nshards` ranks from `rank` (shard
                                 s on rank `rank` + s; table-row-wise when fewer than all) */
    EMB_DIST_REPLICATED = 2, /**< data-parallel: the whole table on every rank; each rank
                                  pools its own bags, every rank receives the global batch's
                                  ids and output gradients and applies the same update (the
                                  gradient summed in global batch order, as one process) */
    EMB_DIST_COLUMNWISE = 3, /**< the feature columns split over `nshards` ranks from `rank`
                                  (0: every rank), as evenly as D allows (slice s: columns
                                  s·⌊D/S⌋ + min(s, D mod S), one more while s < D mod S);
                                  each holder pools its slice of the global batch and the
                                  slices are placed side by side (no sums across ranks).
                                  Not with max_norm or EMB_OPT_ROWWISE_ADAGRAD
                                  (EMB_ENOTSUP); the planner chooses it where its model
                                  says it is fastest (wide tables) */
} EmbDistKind;

/** Where one table lives. */
typedef struct EmbDistPlacement {
    EmbDistKind kind;   /**< table-wise or row-wise */
    int32_t rank;       /**< table-wise: the owner, in [0, nranks); row-wise with nshards
                             > 0: the first rank holding a shard */
    unsigned partition; /**< row-wise: EMB_PARTITION_MOD or EMB_PARTITION_DIV */
    int32_t nshards;    /**< row-wise: shards on ranks rank .. rank + nshards - 1 (1 <=
                             nshards, rank + nshards <= nranks); 0: every rank (rank
                             ignored, shard r on rank r) */
} EmbDistPlacement;

/** Which placements emb_dist_place() may choose. */
typedef enum EmbDistPlan {
    EMB_DIST_PLAN_AUTO = 0,      /**< the planner: any kind, the slowest modelled rank as fast
                                      as it can make it (emb_dist_place()) */
    EMB_DIST_PLAN_TABLEWISE = 1, /**< every table whole */
    EMB_DIST_PLAN_ROWWISE = 2,   /**< every table by rows */
} EmbDistPlan;

/** Options of emb_dist_place(); zero-initialise for the defaults. */
typedef struct EmbDistPlaceOptions {
    EmbDistPlan plan;      /**< which placements may be chosen */
    int64_t rowwise_bytes; /**< unused (the size threshold AUTO was before the planner) */
    unsigned partition;    /**< row-wise tables: EMB_PARTITION_MOD (0: MOD) or _DIV */
    int64_t memory_per_rank; /**< AUTO: bytes of table rows one rank may hold (0: no
                                  limit); leave room for the optimizer state yourself */
    int64_t batch;         /**< global bags per step, for the model (0: each table's
                                lookups, as one-hot bags) */
    const EmbDistPlacement *pins; /**< NULL, or n placements: AUTO keeps those whose kind
                                       is not EMB_DIST_ANY as given (checked) and plans the
                                       others around them */
} EmbDistPlaceOptions;

/**
 * The placement function: the same answer on every rank for the same arguments.
 *
 * PLAN_ROWWISE: every table by rows over every rank. PLAN_TABLEWISE: every table whole,
 * by longest-processing-time list scheduling on the cost `bytes / Σ bytes + lookups /
 * Σ lookups` (tables by decreasing cost, ties: lower index, each to the rank with the
 * least cost so far, ties: lower rank). PLAN_AUTO, the planner: each table's modelled
 * step cost (emb_dist_plan_cost(); the model and its constants: docs/design/mpi.md) as
 * table-wise, replicated or row-wise over a range of ranks; whole tables by LPT while they
 * fit under the mean load and in memory, then each remaining table (decreasing cost) takes
 * the placement that gives the lowest maximum rank load, within memory_per_rank. Pinned
 * tables (opts->pins) are kept. With 1 rank every table is table-wise on rank 0.
 * @param out n placements
 * @return 0; EMB_ENULL; EMB_EINVAL (n < 1, nranks < 1, bad plan or partition, a table
 *         with nrows < 0, featuresize < 1 or lookups < 0, a pin not valid over nranks,
 *         memory_per_rank or batch < 0); EMB_EDTYPE; EMB_EOVERFLOW; EMB_ENOMEM (AUTO: a
 *         table that fits no rank's remaining memory even split over every rank)
 */
EMB_API int emb_dist_place(const EmbDistTableDesc *tables, int64_t n, int32_t nranks,
                           const EmbDistPlaceOptions *opts, EmbDistPlacement *out);

/**
 * The planner's model of a placement: the modelled seconds of one step (lookup, update
 * and exchange bytes over the constants of docs/design/mpi.md) on each rank, for tables
 * placed as @p placement (PLAN_AUTO's objective is the largest of them).
 * @param opts for batch (NULL: 0)
 * @param placement n placements valid over @p nranks
 * @param load nranks seconds
 * @param bytes NULL, or nranks: bytes of table rows each rank holds
 * @return 0; EMB_ENULL; EMB_EINVAL (as emb_dist_place(), an invalid placement); EMB_EDTYPE
 */
EMB_API int emb_dist_plan_cost(const EmbDistTableDesc *tables, int64_t n, int32_t nranks,
                               const EmbDistPlaceOptions *opts,
                               const EmbDistPlacement *placement, double *load,
                               int64_t *bytes);

/** Options of emb_dist_create(); zero-initialise for the defaults. */
typedef struct EmbDistOptions {
    const EmbDistPlacement *placement; /**< n placements given explicitly, or NULL:
                                            emb_dist_place() with `place` */
    EmbDistPlaceOptions place; /**< options of emb_dist_place() when placement is NULL */
    EmbStrategy *strategy;  /**< borrowed; runs the owners' pooling and updates
                                 (NULL: a sequential strategy owned by the ensemble) */
    int32_t groups;         /**< table groups (contiguous ranges of tables, as even as the
                                 table count allows) whose pooled-row exchanges overlap the
                                 next group's pooling; 0 or 1: one group */
    EmbTableOptions table;  /**< options of the local tables and shards (name ignored) */
    int32_t exchange_bf16;  /**< 1: the pooled rows (table-wise and column-wise tables) and
                                 the output gradients travel between ranks as bf16, half the
                                 bytes; the one setting that is not bit-identical to one
                                 process: every output the forward writes is the
                                 single-process output rounded by emb_dist_bf16_round()
                                 (row-wise and replicated tables' rows too, pooled locally
                                 then rounded), and the tables are updated as one process
                                 would with the output gradients rounded by it. Row-wise
                                 tables' raw rows and the ids still travel exact. 0 (the
                                 default): bit-identical */
} EmbDistOptions;

/**
 * Creates the sharded ensemble, collectively over @p comm: duplicates @p comm (errors
 * return on the duplicate), places the tables and creates, on each rank, the tables it
 * owns (whole) and its shard of every row-wise table (zero-filled; fill them through
 * emb_dist_local_table()). Every rank must pass the same tables and options (checked:
 * shapes, dtypes, placements, groups, table flags and exchange_bf16; names are not).
 * @return 0; EMB_ENULL; EMB_EINVAL (as emb_dist_place(); groups < 0; a placement with a
 *         rank outside the communicator; ranks describing different ensembles); EMB_EDTYPE;
 *         EMB_ENOMEM; EMB_EIO (MPI). The same code on every rank.
 */
EMB_API int emb_dist_create(EmbDist **out, MPI_Comm comm, const EmbDistTableDesc *tables,
                            int64_t n, const EmbDistOptions *opts);
/** Destroys an ensemble (NULL is fine; collective: it frees the communicator duplicate). */
EMB_API void emb_dist_destroy(EmbDist **d);

/** This process's rank and the number of ranks (0 for NULL). */
EMB_API int32_t emb_dist_rank(const EmbDist *d);
/** The number of ranks of the ensemble's communicator (0 for NULL). */
EMB_API int32_t emb_dist_nranks(const EmbDist *d);
/** Number of tables of the ensemble. */
EMB_API int64_t emb_dist_ntables(const EmbDist *d);
/** Table @p i's placement. @return 0, EMB_ENULL, EMB_EINVAL (i out of range) */
EMB_API int emb_dist_placement(const EmbDist *d, int64_t i, EmbDistPlacement *out);
/**
 * The part of table @p i this rank holds (owned by the ensemble): the whole table when
 * this rank owns it table-wise, its shard (column k = the table's id located by
 * emb_dist_locate()) when row-wise, NULL otherwise.
 */
EMB_API EmbTable *emb_dist_local_table(const EmbDist *d, int64_t i);
/**
 * The feature columns of table @p i this rank's local table holds: all of them (whole or
 * row-wise parts), a column-wise slice, or none (@p count 0).
 * @return 0, EMB_ENULL, EMB_EINVAL (i out of range)
 */
EMB_API int emb_dist_local_columns(const EmbDist *d, int64_t i, int32_t *first,
                                   int32_t *count);

/**
 * Where id @p id of table @p i lives: the rank holding it and its column in that rank's
 * local table. @return 0, EMB_ENULL, EMB_EINVAL, EMB_ERANGE
 */
EMB_API int emb_dist_locate(const EmbDist *d, int64_t i, int64_t id, int32_t *rank,
                            int64_t *column);

/**
 * The distributed forward: this rank's @p batches (one per table, every nbags equal) are
 * looked up in the sharded tables, and @p outputs (per-table buffers or the concat matrix
 * with prependrows, as emb_maplookup()) receive exactly what the single-process
 * emb_maplookup() of the global batch writes for this rank's bags. @p poolings (NULL: SUM)
 * must be the same on every rank (checked). The ensemble keeps what the backward needs
 * (copies: the caller's batches may change after the call).
 * @return 0; EMB_ENULL, EMB_EINVAL, EMB_ESHAPE, EMB_ERANGE, EMB_EOFFSETS, ... (any rank's
 *         code of emb_maplookup() or emb_batch_validate(), on every rank; EMB_EINVAL when
 *         the ranks' poolings differ), EMB_ENOMEM, EMB_EIO. Nothing written on failure.
 */
EMB_API int emb_dist_maplookup(EmbDist *d, const EmbBatch *batches, const EmbPooling *poolings,
                               const EmbOutputs *outputs);

/**
 * Records the backward of the last emb_dist_maplookup(): @p grad_outputs (laid out as that
 * call's outputs) travel to the owners, which record the pullback of the global batch
 * (emb_maplookup_backward()). Nothing is applied until emb_dist_update().
 * @return 0; EMB_ENULL, EMB_EINVAL (no forward before), EMB_ESHAPE, EMB_ESTRIDE,
 *         EMB_ENOMEM, EMB_EIO; the same on every rank
 */
EMB_API int emb_dist_backward(EmbDist *d, const EmbOutputs *grad_outputs);

/**
 * Applies the recorded gradients with @p opt (emb_update_many() on this rank's tables and
 * shards under the ensemble's strategy): every table ends bit-identical to one process
 * that ran the global batch through emb_maplookup_backward() and emb_update_many() with
 * the same optimizer. @p opt holds the state of this rank's tables only.
 * With EMB_TABLE_CHECK_FINITE in the options' table flags, a NaN or infinite output
 * gradient or weight on any rank gives EMB_ENONFINITE on every rank (found by
 * emb_dist_backward(), reported here, as emb_update_many() reports it) and no rank
 * applies anything.
 * @return 0; EMB_ENULL, EMB_EINVAL (no backward recorded), EMB_ENONFINITE, EMB_ENOTSUP
 *         (the optimizer's max_global_norm: no norm across ranks yet), any code of
 *         emb_update_many(), EMB_EIO; the same on every rank. Every check and every
 *         allocation (emb_update_many_prepare()) is agreed on before any rank applies, so
 *         on failure no rank's table or optimizer state changes (after a failure in the
 *         update itself, EMB_ENOMEM, the update may be called again without a backward).
 */
EMB_API int emb_dist_update(EmbDist *d, EmbOptimizer *opt, unsigned flags);

/**
 * Pipelining: starts the next forward's id exchange without blocking, so that it travels
 * while emb_dist_update() runs: this call checks, copies and packs @p batches and starts
 * a non-blocking all-to-all of fixed-size headers (counts, check results); the update
 * sizes the receive buffers after its first agreement and starts the ids'
 * MPI_Ialltoallv after its last (no extra synchronisation). Call it after emb_dist_backward() and before emb_dist_update(); the next
 * emb_dist_maplookup() must pass the same @p batches and @p poolings pointers (the ids
 * were copied here: the arrays may change) and waits only for what the overlap did not
 * hide (EmbDistStats::ids_wait_s). Results are bit-identical with and without. Without
 * an update in between, that forward runs the whole exchange. Until that forward:
 * emb_dist_backward() fails (EMB_EINVAL), emb_dist_update(), emb_dist_save() and the
 * accessors work; an update that fails drops the prefetch (the next forward runs whole).
 * Collective.
 * @return 0; EMB_ENULL, EMB_EINVAL (a prefetch pending), EMB_ENOMEM (the first call's
 *         headers), EMB_EIO; the same on every rank. A rank's failed check of @p batches
 *         is not returned here (no rank waits for the others): the next
 *         emb_dist_maplookup() returns it on every rank, writes nothing, and the forward
 *         after that runs whole.
 */
EMB_API int emb_dist_prefetch(EmbDist *d, const EmbBatch *batches, const EmbPooling *poolings);

/**
 * Sharded checkpoint, collectively: each rank saves its tables and shards, with @p opt's
 * state of them when @p opt is not NULL, with the store's checkpoints (store.h: one
 * safetensors file per rank, `<dir>/rank<r>/ckpt-<step>` + EMB_CHECKPOINT_EXT, atomic,
 * checksummed); then rank 0 writes the index `<dir>/dist-<step>.index` (rank count, every
 * table's shape and placement, each rank's file). @p dir must exist and be shared by the
 * ranks (one machine, or a shared file system). Every checkpoint is kept (prune old steps
 * yourself). With deltas on (emb_dist_set_full_every()), a rank's file holds only the
 * rows of its parts touched since its previous save to @p dir with @p opt (a delta
 * linked to that file), and a restore follows each file's chain.
 * @return 0; EMB_ENULL, EMB_EINVAL (step < 0, path too long), EMB_EIO, EMB_ENOMEM; the
 *         same on every rank
 */
EMB_API int emb_dist_save(EmbDist *d, const char *dir, int64_t step, const EmbOptimizer *opt);

/**
 * Delta checkpoints for emb_dist_save() (store.h's EmbSaverOptions::full_every, per rank):
 * 0 (the default): every save is full; N > 0: the ensemble keeps each rank's saver between
 * saves to one directory with one optimizer, so that a save writes, on each rank, only the
 * rows of its tables and shards touched since its previous save (their optimizer state,
 * their ids and the name and checksum of the file it extends), and every (N+1)-th save of
 * a chain is full again. A save is full anyway in a new directory, with another optimizer,
 * after this call, and where the saver's rules say so (a table written untracked, e.g.
 * restored). emb_dist_restore() of a step restores each rank's full file and its deltas in
 * order, into any rank count and placement, with the bits a full save of that step would
 * give; a missing or foreign link is EMB_ECORRUPT naming it. Pruning old steps: keep
 * every file a kept step's chain needs (the steps back to a full one). Every rank should
 * pass the same value (not collective).
 * @return 0; EMB_ENULL; EMB_EINVAL (full_every < 0)
 */
EMB_API int emb_dist_set_full_every(EmbDist *d, int32_t full_every);

/**
 * Restores the checkpoint of @p step from @p dir into this ensemble, whatever the rank
 * count and placement it was saved with (an ensemble over MPI_COMM_SELF restores it into
 * one process): each rank verifies every file holding columns it needs, the ranks agree,
 * and only then are columns copied. With @p opt (of the kind saved, fresh or behind the
 * checkpoint) its state of this rank's tables is restored too, update counts included, so
 * training resumes with the bits it would have had. The tables must be those saved (same
 * count, names, shapes, dtypes). Memory: a rank reads, from each old rank's file, the
 * old parts of the tables it now holds part of (whole old parts, freed at return).
 * @return 0; EMB_ENULL, EMB_EIO (a file missing), EMB_ECORRUPT (index or file damaged; a
 *         delta whose chain lacks a link or holds a foreign one),
 *         EMB_ESHAPE (other tables), EMB_EINVAL (another optimizer kind, an optimizer
 *         past the checkpoint), EMB_ENOTSUP (row-wise Adagrad's state with a
 *         column-wise table on either side), EMB_ENOTFOUND, EMB_ENOMEM; the same on every
 *         rank, and no table is changed on failure
 */
EMB_API int emb_dist_restore(EmbDist *d, const char *dir, int64_t step, EmbOptimizer *opt);

/** Timings and traffic of this rank's last forward / backward / update. */
typedef struct EmbDistStats {
    double pool_s;        /**< local pooling: owners' emb_maplookup, row gathers, the
                               row-wise pooling of the requester */
    double exchange_s;    /**< forward time in MPI calls (all-to-alls, waits, agreements) */
    double backward_s;    /**< emb_dist_backward(): packing, exchange, recording */
    double update_s;      /**< emb_dist_update() */
    double grad_exchange_s; /**< backward and update time in MPI calls */
    int64_t ids_bytes;    /**< bytes this rank sent in the id all-to-all (self excluded) */
    int64_t rows_bytes;   /**< bytes sent in the pooled / raw row all-to-alls */
    int64_t grad_bytes;   /**< bytes sent in the gradient all-to-all */
    double ids_wait_s;    /**< seconds the last forward's ids exchange kept this rank in
                               MPI calls: the whole exchange, or after emb_dist_prefetch()
                               the time its two legs' calls took (posting, waiting for the
                               headers, waiting for what the overlap did not hide) */
} EmbDistStats;

/** This rank's statistics. @return 0, EMB_ENULL */
EMB_API int emb_dist_stats(const EmbDist *d, EmbDistStats *out);

/* ---- the sharded collection ----------------------------------------------------------- */

/**
 * A collection (collection.h) whose tables are placed over the ranks of @p comm: the same
 * calls as a one-process collection, collectively (every rank calls each with its own
 * share of the batch, as emb_dist_maplookup() describes): emb_collection_forward() is
 * emb_dist_maplookup(), emb_collection_backward() is emb_dist_backward() then, with an
 * optimizer, emb_dist_update(); emb_collection_save() is emb_dist_save() (the prefix and
 * max_to_keep are not used: the path written is `<dir>/dist-<step>.index`) and
 * emb_collection_restore() takes that path. Results are bit-identical to a one-process
 * collection running the global batch. emb_collection_table() gives this rank's part of
 * a table (emb_dist_local_table(), NULL where it holds none);
 * emb_collection_backward_batches(), emb_collection_grad() and _grad_rows() are not
 * available (EMB_ENOTSUP, NULL). Every rank must pass the same arguments.
 * @param tables specs only (`table` NULL; not dynamic, not partitioned); a spec's
 *        initializer must not depend on the column (NONE, ZEROS, ONES, CONSTANT: fill
 *        other values through emb_dist_local_table() and emb_dist_locate())
 * @param opts as emb_collection_create()'s (strategy: the owners', borrowed; optimizer
 *        or shared_optimizer: it then holds the state of this rank's parts only)
 * @param dopts placement and groups (its strategy is replaced by opts->strategy when
 *        set); NULL for the defaults
 * @return 0; EMB_ENULL; EMB_EINVAL (n < 1, names as emb_collection_create()); EMB_ENOTSUP
 *         (an existing table, a dynamic or partitioned spec, a column-dependent
 *         initializer); any code of emb_dist_create() or emb_optimizer_create(); the same
 *         on every rank
 */
EMB_API int emb_dist_collection_create(EmbCollection **out, MPI_Comm comm,
                                       const EmbCollectionTable *tables, int64_t n,
                                       const EmbCollectionOptions *opts,
                                       const EmbDistOptions *dopts);

/** The ensemble under a collection made by emb_dist_collection_create() (for
 *  emb_dist_stats(), emb_dist_locate()), else NULL. Owned by the collection. */
EMB_API EmbDist *emb_dist_of(const EmbCollection *c);

/**
 * The bf16 exchange's rounding (EmbDistOptions::exchange_bf16): @p x rounded to bfloat16
 * (the upper 16 bits of a binary32), to nearest, ties to even, and widened back; NaN stays
 * a quiet NaN, infinities stay, finite values above bf16's largest round to infinity. The
 * rule of the library's bf16 tables (EMB_BF16).
 * @return the rounded value
 */
EMB_API float emb_dist_bf16_round(float x);

/**
 * This thread's message of the last failed emb_dist_* call ("rank R: ..." naming the
 * failing rank and the culprit there); "" after success. The library has one error
 * channel: this is emb_last_error(), under the name existing code uses.
 */
EMB_API const char *emb_dist_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
