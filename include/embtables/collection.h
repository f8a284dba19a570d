/* SPDX-License-Identifier: BSD-2-Clause */
/**
 * @file collection.h
 * EmbCollection: the embedding half of a training step as one object (FBGEMM's
 * table-batched embedding, TorchRec's EmbeddingBagCollection). A collection holds named
 * tables with their poolings, an execution strategy, an optional fused optimizer and
 * everything a step needs (each table's gradient holder and indexer, the step's batch
 * descriptors); per step you call emb_collection_forward() and
 * emb_collection_backward().
 *
 * A training loop (examples/train.c is the complete program):
 * @code
 *   EmbCollectionTable t[2] = {
 *       {.name = "user", .spec = {.ncolumns = 1000, .featuresize = 16,
 *                                 .init = {EMB_INIT_UNIFORM, -0.05f, 0.05f, 1}},
 *        .pooling = EMB_POOLING_SUM},
 *       {.name = "item", .spec = {.ncolumns = 5000, .featuresize = 16},
 *        .pooling = EMB_POOLING_MEAN},
 *   };
 *   EmbOptimizerConfig adagrad = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.05f);
 *   EmbCollectionOptions o = {.optimizer = &adagrad};
 *   EmbCollection *c;
 *   emb_collection_create(&c, t, 2, &o);
 *   float *out = calloc(nbags * emb_collection_width(c), sizeof *out);
 *   EmbOutputs layout = emb_collection_concat(c, out);   // one row per bag: [user | item]
 *   for (int step = 0; step < nsteps; step++) {
 *       EmbBatch b[2] = ...;                      // this step's ids, one batch per table
 *       emb_collection_forward(c, b, &layout);    // out = the pooled rows
 *       ... the dense model; dL/dout into `out` (same layout) ...
 *       emb_collection_backward(c, &layout);      // pullback + fused Adagrad, every table
 *   }
 *   emb_collection_destroy(&c);
 * @endcode
 *
 * What it is built from: emb_collection_forward() is emb_maplookup() (strategy.h),
 * emb_collection_backward() is emb_maplookup_backward() followed by emb_update_many()
 * (update.h), with the collection's strategy, optimizer, gradient holders and indexers:
 * the same bits, for every strategy, thread count and split count, as those three calls.
 * Those lower-level calls stay available to whoever wants to hold the pieces.
 *
 * Memory: the collection owns the tables it creates (from an EmbVariableSpec, in a store
 * of its own), the strategy and optimizer it creates, and every buffer of a step; the
 * caller owns the tables, strategy and optimizer it passes in (they must outlive the
 * collection), the batches' id / offset / weight buffers and the output and output
 * gradient buffers. Between emb_collection_forward() and emb_collection_backward() the
 * batches' buffers must stay alive and unchanged (the backward reads the ids the forward
 * read, as emb_lookup_backward() does). After the first step, a step allocates nothing
 * as long as the batches do not grow (tests/test_update_alloc.c).
 *
 * Errors: every function returns 0 or a negative EMB_E* code; emb_last_error() then
 * names the culprit: the table by its collection name and index, and the id, bag or
 * offset by its position (e.g. `emb_collection_forward: table "item" (1): id 9000 at
 * position 17 is not in [0, 5000)`). Every check runs before anything is written: a
 * failed call leaves every table, the optimizer state and the caller's outputs as they
 * were.
 *
 * Concurrency: a collection takes one call at a time (it owns one step's state); its
 * tables follow update.h's rules (no lookup of them from other threads during a backward
 * that updates them). Two collections may run at once when they share no table, strategy
 * or optimizer.
 */
#ifndef EMBTABLES_COLLECTION_H
#define EMBTABLES_COLLECTION_H
#include "embtables/store.h"
#ifdef __cplusplus
extern "C" {
#endif

/** Opaque collection of named tables with what a training step needs. */
typedef struct EmbCollection EmbCollection;

/**
 * One table of a collection: an existing table, or the spec of one the collection
 * creates. Zero-initialise and fill.
 */
typedef struct EmbCollectionTable {
    const char *name;     /**< unique in the collection, non-empty, at most EMB_NAME_MAX
                               bytes (copied); NULL with `table`: the table's own name */
    EmbTable *table;      /**< an existing table, borrowed (alive and not resized while
                               the collection lives), or NULL: create one from `spec` */
    EmbVariableSpec spec; /**< the table to create when `table` is NULL (store.h: columns,
                               featuresize, dtype, initializer, table options, shards,
                               dynamic options); its `name` is ignored (`name` is used) and
                               `trainable` is not read */
    EmbPooling pooling;   /**< how its bags are pooled (lookup.h; e.g. EMB_POOLING_SUM) */
} EmbCollectionTable;

/** Options of emb_collection_create(); zero-initialise for the defaults. */
typedef struct EmbCollectionOptions {
    EmbStrategy *strategy;   /**< borrowed, or NULL: emb_strategy_auto() with
                                  `strategy_options`, owned by the collection */
    EmbStrategyOptions strategy_options; /**< the owned strategy's options */
    const EmbOptimizerConfig *optimizer; /**< an optimizer the collection creates and owns
                                  (copied), or NULL */
    EmbOptimizer *shared_optimizer; /**< or an existing optimizer, borrowed (not with
                                  `optimizer`); neither: no optimizer, the backward only
                                  records gradients (emb_collection_grad()) */
    int64_t prependrows;     /**< concat layout (emb_collection_concat()): leading elements
                                  of each row left to the caller (DLRM's dense features) */
    unsigned update_flags;   /**< emb_update_many() flags (EMB_UPDATE_NONTEMPORAL) */
    int32_t full_every;      /**< delta checkpoints (EmbSaverOptions::full_every): 0 (default):
                                  every emb_collection_save() is full; N > 0: the collection
                                  keeps its saver between saves to one directory, prefix and
                                  max_to_keep, a save writes only the rows touched since the
                                  previous one, and every (N+1)-th save of a chain is full
                                  again (a sharded collection: emb_dist_set_full_every()).
                                  Negative: EMB_EINVAL */
} EmbCollectionOptions;

/**
 * Creates a collection of @p n tables (in this order: table i is index i in every call).
 * Tables with `table == NULL` are created (emb_store_get() of their spec under their
 * name), initialised by the spec's initializer and owned by the collection; the others
 * are borrowed. Every table's optimizer state is created now (emb_optimizer_attach()), so
 * the first update allocates no state.
 * @param out receives the collection; untouched on failure
 * @param tables @p n descriptions (copied; strings copied)
 * @param opts NULL for the defaults (auto strategy, no optimizer, prependrows 0)
 * @return 0; EMB_ENULL (out, tables); EMB_EINVAL (n < 1; a name NULL for a created table,
 *         empty, too long or repeated; a table given twice; both optimizer and
 *         shared_optimizer; prependrows < 0; update_flags with unknown bits; a bad
 *         pooling, naming the table); EMB_EOVERFLOW (the concat row width); any code of
 *         emb_store_get() (naming the table), emb_strategy_auto(), emb_optimizer_create()
 *         or emb_optimizer_attach(); EMB_ENOMEM. Nothing is left allocated on failure.
 */
EMB_API int emb_collection_create(EmbCollection **out, const EmbCollectionTable *tables,
                                  int64_t n, const EmbCollectionOptions *opts);

/** Destroys a collection (NULL is fine), the tables, strategy and optimizer it owns; sets
 *  `*c` to NULL. Borrowed objects are untouched. */
EMB_API void emb_collection_destroy(EmbCollection **c);

/**
 * The forward of a step: looks up @p batches[i] in table i with its pooling, for every
 * table, into @p out (per-table buffers or the concat matrix: EmbOutputs in strategy.h;
 * emb_collection_concat() fills the concat one), under the collection's strategy. The
 * batch descriptors are copied (their buffers stay the caller's: alive and unchanged
 * until the backward) and this step replaces any step not yet backed.
 * @param batches one batch per table, in the collection's order
 * @return 0; EMB_ENULL (c, batches, out); any code of emb_maplookup(), the message naming
 *         the table by name and index (and the id, bag or offset by its position).
 *         Nothing is written on failure (and the previous step, if any, is kept).
 */
EMB_API int emb_collection_forward(EmbCollection *c, const EmbBatch *batches,
                                   const EmbOutputs *out);

/**
 * The backward of the last forward: records each table's pullback of @p grad_out (laid out
 * as that forward's outputs: the gradient of table i is its slice, prependrows ignored),
 * then, with an optimizer, applies the fused update to every table (emb_update_many() with
 * the collection's strategy, indexers and update flags) and ends the step. Without an
 * optimizer the gradients stay recorded: read them with emb_collection_grad() /
 * emb_collection_grad_rows() until the next forward. @p grad_out is read by the update:
 * keep it unchanged until this call returns (without an optimizer, until the gradients
 * are consumed).
 * @return 0; EMB_ENULL (c, grad_out); EMB_EINVAL (no forward since the last backward with
 *         an optimizer); any code of emb_maplookup_backward() or emb_update_many()
 *         (EMB_ERANGE naming the table, the id and its position; EMB_ENONFINITE;
 *         EMB_ENOMEM). On failure no table and no optimizer state is written and the step
 *         stays recorded (the backward may be called again).
 */
EMB_API int emb_collection_backward(EmbCollection *c, const EmbOutputs *grad_out);

/**
 * emb_collection_backward() of @p batches (one per table) instead of the last forward's:
 * the backward of a forward made earlier or elsewhere (a binding that keeps several steps
 * in flight, each with its own batches; a benchmark that times the backward alone). The
 * batches are checked as emb_maplookup_backward() checks them (their ids by the update, or
 * when the gradients are consumed); their buffers and @p grad_out stay the caller's, read
 * until the call returns (without an optimizer, until the gradients are consumed). The
 * last forward's step, if any, is left as it was.
 * @return 0; EMB_ENULL (c, batches, grad_out); as emb_collection_backward() otherwise
 */
EMB_API int emb_collection_backward_batches(EmbCollection *c, const EmbBatch *batches,
                                            const EmbOutputs *grad_out);

/**
 * Hook for the next step's batches, called while the current step computes: every table
 * is given its batch of @p next_batches through emb_table_prefetch() (tiered.h), so a
 * tiered, disk-backed table starts reading the rows it misses; for tables held in memory
 * it does nothing. A hint: it never changes results. The batches' buffers are read during
 * the call only.
 * @return 0, EMB_ENULL (c, next_batches)
 */
EMB_API int emb_collection_prefetch(EmbCollection *c, const EmbBatch *next_batches);

/* ---- accessors ----------------------------------------------------------------------- */

/** Number of tables (0 for NULL). */
EMB_API int64_t emb_collection_ntables(const EmbCollection *c);

/**
 * The index of the table named @p name into `*index`.
 * @return 0, EMB_ENULL, EMB_ENOTFOUND
 */
EMB_API int emb_collection_find(const EmbCollection *c, const char *name, int64_t *index);

/** Table @p i (owned by the collection or borrowed, as created), or NULL when @p i is out of
 *  range or @p c is NULL. */
EMB_API EmbTable *emb_collection_table(const EmbCollection *c, int64_t i);

/** Table @p i's name in the collection (owned by it), or NULL when out of range. */
EMB_API const char *emb_collection_name(const EmbCollection *c, int64_t i);

/** Table @p i's pooling, or NULL when out of range (owned by the collection). */
EMB_API const EmbPooling *emb_collection_pooling(const EmbCollection *c, int64_t i);

/** The strategy (owned or borrowed), e.g. for emb_strategy_update_times(); NULL for NULL. */
EMB_API EmbStrategy *emb_collection_strategy(const EmbCollection *c);

/** The optimizer (owned or borrowed; NULL without one), e.g. for emb_optimizer_set_lr(). */
EMB_API EmbOptimizer *emb_collection_optimizer(const EmbCollection *c);

/** The concat row width: prependrows + Σ featuresize (0 for NULL). */
EMB_API int64_t emb_collection_width(const EmbCollection *c);

/** The first column of table @p i in a concat row: prependrows + Σ_{j<i} featuresize_j
 *  (-1 when out of range). */
EMB_API int64_t emb_collection_offset(const EmbCollection *c, int64_t i);

/**
 * The concat layout over @p buf (rows of emb_collection_width() elements, the first
 * prependrows of each left untouched), for emb_collection_forward() and
 * emb_collection_backward(). @p buf stays the caller's.
 */
EMB_API EmbOutputs emb_collection_concat(const EmbCollection *c, float *buf);

/**
 * Table @p i's gradient holder (owned by the collection): after a backward without an
 * optimizer it holds the step's recorded pullback, for emb_update() with an optimizer of
 * your own. NULL when out of range.
 */
EMB_API EmbGrad *emb_collection_grad(const EmbCollection *c, int64_t i);

/**
 * Table @p i's recorded gradient, coalesced as PyTorch's sparse gradient after
 * coalesce(): ids ascending (a keyed, dynamic table's in order of first appearance), `*n`
 * distinct ids at `*ids` and the sum of each id's gradient rows, featuresize f32 per id,
 * at `*rows` (row k at `*rows + k * featuresize`), summed in the order an update sums
 * them. The arrays are owned by the collection, valid until its next forward, backward or
 * grad_rows call.
 * Needs a backward without an optimizer since the last forward.
 * @return 0; EMB_ENULL; EMB_EINVAL (i out of range, no recorded gradient); EMB_ERANGE (an
 *         id, naming the table and the position); EMB_ENOMEM
 */
EMB_API int emb_collection_grad_rows(EmbCollection *c, int64_t i, const int64_t **ids,
                                     const float **rows, int64_t *n);

/* ---- collections implemented elsewhere ------------------------------------------------ */

/**
 * The calls of a collection whose tables live elsewhere (the sharded collection of the MPI
 * library, dist.h's emb_dist_collection_create(), is one): emb_collection_forward(),
 * _backward(), _backward_batches(), _prefetch(), _save() and _restore() check their
 * pointers and call these with @c user. A NULL entry makes that call EMB_ENOTSUP.
 */
typedef struct EmbCollectionOps {
    /** the forward (as emb_collection_forward()) */
    int (*forward)(void *user, const EmbBatch *batches, const EmbOutputs *out);
    /** the backward of @p batches, or of the last forward when NULL (and the update, when
        the collection has an optimizer) */
    int (*backward)(void *user, const EmbBatch *batches, const EmbOutputs *grad_out);
    /** emb_collection_prefetch() (NULL: nothing to do, 0) */
    int (*prefetch)(void *user, const EmbBatch *next_batches);
    /** emb_collection_save() */
    int (*save)(void *user, const char *dir, const char *prefix, int64_t global_step,
                int32_t max_to_keep, char *path, size_t cap);
    /** emb_collection_restore() */
    int (*restore)(void *user, const char *path, int64_t *global_step);
    /** called on @c user by emb_collection_destroy() */
    void (*destroy)(void *user);
} EmbCollectionOps;

/**
 * A collection whose calls are @p ops (for libraries that place tables elsewhere). The
 * names, poolings and the row width come from @p tables as for emb_collection_create()
 * (`table`: this process's part of table i, or NULL; `spec.featuresize`: its width when
 * `table` is NULL); opts->shared_optimizer is what emb_collection_optimizer() returns
 * (borrowed); the strategy and optimizer config are not read. On success the collection
 * owns @p user (ops->destroy is called on it by emb_collection_destroy()); @p ops is
 * copied. emb_collection_grad() / _grad_rows() and emb_collection_strategy() have nothing
 * to give for such a collection (NULL, EMB_ENOTSUP).
 * @return 0; EMB_ENULL (out, tables, ops); EMB_EINVAL (as emb_collection_create(): names,
 *         n, prependrows; a featuresize < 1); EMB_ENOMEM
 */
EMB_API int emb_collection_custom(EmbCollection **out, const EmbCollectionTable *tables,
                                  int64_t n, const EmbCollectionOptions *opts,
                                  const EmbCollectionOps *ops, void *user);

/** The @c user of a collection made by emb_collection_custom() with these @p ops (compared
 *  by their functions), else NULL. */
EMB_API void *emb_collection_custom_user(const EmbCollection *c, const EmbCollectionOps *ops);

/* ---- checkpoints --------------------------------------------------------------------- */

/**
 * Saves every table under its collection name, with the optimizer's state of them (slots
 * and step counts) when the collection has an optimizer, to
 * `<dir>/<prefix>-<global_step>.safetensors` with a store.h saver (EmbSaverOptions's
 * max_to_keep from @p max_to_keep: 0 keeps every checkpoint; the index `<dir>/checkpoint`
 * is updated; a missing @p dir is created as emb_saver_create() creates it). The path
 * written goes to @p path (cap bytes; may be NULL). With EmbCollectionOptions::full_every
 * the file may be a delta of the previous save's (emb_collection_restore() follows its
 * chain).
 * @return 0; EMB_ENULL (c, dir, prefix); any code of emb_saver_create() or
 *         emb_saver_save() (EMB_EIO, EMB_EINVAL for a bad prefix, EMB_ENOMEM)
 */
EMB_API int emb_collection_save(const EmbCollection *c, const char *dir, const char *prefix,
                                int64_t global_step, int32_t max_to_keep, char *path,
                                size_t cap);

/**
 * Restores a checkpoint written by emb_collection_save() (or any checkpoint holding these
 * names): every table from the tensor of its collection name, and with an optimizer its
 * state (the file must hold state of the same kind; a table saved without state gets
 * none). Train, save, restore into a fresh collection of the same tables, train on: the
 * same bits as training straight through. The whole file is verified before anything is
 * written. The global step goes to `*global_step` (may be NULL).
 * @return 0; EMB_ENULL; any code of emb_checkpoint_restore_ex() (EMB_ENOTFOUND naming the
 *         missing table, EMB_ESHAPE, EMB_ECORRUPT, EMB_EIO, EMB_EINVAL for another
 *         optimizer kind). Nothing is written on failure.
 */
EMB_API int emb_collection_restore(EmbCollection *c, const char *path, int64_t *global_step);

#ifdef __cplusplus
}
#endif
#endif
