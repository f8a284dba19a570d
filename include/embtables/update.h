/* SPDX-License-Identifier: BSD-2-Clause */
/**
 * @file update.h
 * The second half of a training step: gradients of lookups (lazy pullbacks or
 * materialised sparse gradients), deduplication (EmbIndexer), fused optimizers
 * (emb_update, emb_update_many) and the tf.Variable-style operations on whole tables and
 * on scattered columns.
 *
 * A typical step:
 * @code
 *   emb_lookup(t, &batch, &pool, out, D);               // forward
 *   ... compute dL/dout into dout ...
 *   emb_lookup_backward(t, &batch, &pool, dout, D, g);  // records; no work per id yet
 *   emb_update(opt, t, g, ix, 0);                        // dedup + accumulate + optimizer
 * @endcode
 *
 * Semantics: the gradient rows of one column (duplicate ids, an id in several bags) are
 * summed in a fixed order (gradient order), and
 * the optimizer is applied once per distinct column, so results never depend on the
 * thread count or on how the work is split. Every column is read once and written once.
 * Optimizer state is kept in f32 whatever the table's dtype.
 *
 * Concurrency: emb_update(), emb_update_many(), the assign and scatter operations write
 * their tables: no other call may use those tables (or their shards) meanwhile, lookups
 * included. An optimizer, an indexer and a gradient holder take one call at a time each
 * (recording into a gradient holder while an update reads it is a race); updates of
 * different tables with different optimizers, indexers and holders may run at once.
 * emb_lookup_backward() and emb_table_read() only read the table.
 */
#ifndef EMBTABLES_UPDATE_H
#define EMBTABLES_UPDATE_H

#include "embtables/strategy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- gradients ----------------------------------------------------------------------- */

/**
 * A materialised sparse gradient (TF IndexedSlices, Julia SparseEmbeddingUpdate): @c n
 * ids and one gradient row of @c featuresize f32 per id, row k at `values + k * stride`.
 * Duplicate ids accumulate. The caller owns every buffer.
 */
typedef struct EmbSparseGrad {
    const void *ids;       /**< n ids of type id_type (may be NULL when n == 0) */
    EmbIdType id_type;     /**< EMB_ID_I64 (default) or EMB_ID_I32 */
    int64_t n;             /**< number of rows */
    int32_t featuresize;   /**< elements per row: must equal the table's */
    const float *values;   /**< n rows */
    int64_t stride;        /**< elements between rows (>= featuresize) */
} EmbSparseGrad;

/**
 * Creates an empty, reusable gradient holder (bound to no table). One holder per table
 * is typical; recording into it again replaces what it held, without allocating.
 * @return 0, EMB_ENULL, EMB_ENOMEM
 */
EMB_API int emb_grad_create(EmbGrad **out);
/** Destroys a gradient holder (NULL is fine) and sets `*g` to NULL. */
EMB_API void emb_grad_destroy(EmbGrad **g);

/**
 * Records the pullback of `emb_lookup(table, batch, pooling, out, ...)` for the output
 * gradient @p grad_out (nbags rows of featuresize f32, row b at `grad_out + b *
 * grad_stride`) into @p grad, lazily: the batch is validated now, and the gradient keeps
 * *pointers* to the batch's ids, offsets and weights and to @p grad_out (the EmbBatch and
 * EmbPooling structs themselves are copied). The caller keeps those buffers alive and
 * unchanged until the gradient is consumed by emb_update() / emb_update_many().
 * Every pooling is handled: gather 1:1, SUM (w·dy), MEAN and SQRTN (scaled by the
 * combiner's factor), pruning, default_id, and max_norm's exact Jacobian (evaluated on
 * the column's value before the update).
 * @return 0; EMB_ENULL, and any code of emb_batch_validate(); EMB_ESTRIDE (grad_stride <
 *         featuresize). @p grad is untouched on failure.
 */
EMB_API int emb_lookup_backward(const EmbTable *table, const EmbBatch *batch,
                                const EmbPooling *pooling, const float *grad_out,
                                int64_t grad_stride, EmbGrad *grad);

/**
 * Records a materialised sparse gradient for @p table into @p grad. The struct is copied;
 * its buffers are kept by pointer (alive and unchanged until consumed). Ids are checked
 * when the gradient is consumed.
 * @return 0; EMB_ENULL, EMB_EINVAL (n < 0, bad id_type), EMB_ESHAPE (featuresize differs
 *         from the table's), EMB_ESTRIDE, EMB_EOVERFLOW (n rows of stride are not
 *         addressable). @p grad is untouched on failure.
 */
EMB_API int emb_grad_set_sparse(EmbGrad *grad, const EmbTable *table,
                                const EmbSparseGrad *sparse);

/**
 * The backward of emb_maplookup(): records table i's pullback into grads[i] from its slice
 * of @p grad_outputs, laid out as the forward's outputs (per-table buffers, or the concat
 * matrix where table i's gradient is columns [prependrows + Σ_{j<i} D_j, ... + D_i) of
 * every row; the prependrows columns are ignored). Same lifetime rules as
 * emb_lookup_backward(). @p poolings NULL: SUM for every table.
 * The layout is checked as emb_maplookup() checks it, with the same codes. The ids are
 * not read here (a pass over every id of a step on the calling thread would not scale):
 * as for emb_grad_set_sparse(), they are checked when the gradient is consumed, by
 * emb_update_many() on its threads or emb_update(), which return EMB_ERANGE naming the
 * id before anything is written.
 * @return 0; EMB_ENULL, EMB_EINVAL (ntables <= 0, prependrows < 0), EMB_ESHAPE (concat
 *         nbags differ or concat_stride too small), EMB_EOVERFLOW (the concat row width
 *         overflows), any code of emb_lookup_backward() but EMB_ERANGE for an id (a bad
 *         default_id is still EMB_ERANGE here). No grad is changed on failure.
 */
EMB_API int emb_maplookup_backward(EmbTable *const *tables, int64_t ntables,
                                   const EmbBatch *batches, const EmbPooling *poolings,
                                   const EmbOutputs *grad_outputs, EmbGrad *const *grads);

/* ---- deduplication ------------------------------------------------------------------- */

/**
 * Creates a reusable indexer: groups gradient rows by distinct id with a hash table, in
 * O(rows) per step whatever the table's size. Its buffers grow to the largest gradient
 * seen and are then reused (a steady-state step allocates nothing). One indexer per table
 * of an emb_update_many() call; an indexer must not be used by two calls at once.
 * @return 0, EMB_ENULL, EMB_ENOMEM
 */
EMB_API int emb_indexer_create(EmbIndexer **out);
/** Destroys an indexer (NULL is fine) and sets `*ix` to NULL. */
EMB_API void emb_indexer_destroy(EmbIndexer **ix);

/**
 * Indexes @p n int64 ids (any values): afterwards emb_indexer_distinct() lists the
 * distinct ids in order of first appearance with their counts, e.g. ids
 * [10,4,10,100,4,4,4,1,9,10,5] give 10,4,100,1,9,5 with counts 3,4,1,1,1,1. Deterministic.
 * @return 0, EMB_ENULL, EMB_EINVAL (n < 0), EMB_ENOMEM (the indexer is then empty)
 */
EMB_API int emb_indexer_index(EmbIndexer *ix, const int64_t *ids, int64_t n);

/**
 * The result of the last indexing (by emb_indexer_index() or an update): the number of
 * distinct ids; `*ids` and `*counts` (either may be NULL) receive arrays owned by the
 * indexer, valid until it is used again. After an update the order is the grouping's:
 * ascending ids for a gradient of 4096 rows or more of a table of columns (the ids are
 * sorted, not hashed); after emb_update_many() under a strategy that splits tables, the
 * ids are grouped by hash partition first, and within a partition of mostly distinct ids
 * come ascending (a keyed table's: in the order of their hash). Always deterministic: a
 * function of the ids and the split count.
 */
EMB_API int64_t emb_indexer_distinct(const EmbIndexer *ix, const int64_t **ids,
                                     const int64_t **counts);

/* ---- optimizers ---------------------------------------------------------------------- */


/** How EmbOptimizerConfig::weight_decay acts on an updated column w with gradient g. */
typedef enum EmbWeightDecay {
    EMB_DECAY_L2 = 0,        /**< g += wd·w before the optimizer (L2 regularisation;
                                  PyTorch's weight_decay of SGD, Adagrad, Adam) */
    EMB_DECAY_DECOUPLED = 1, /**< w *= 1 - lr·wd, then the optimizer (decoupled weight
                                  decay: PyTorch's AdamW) */
} EmbWeightDecay;

/** Hyper-parameters; fill with emb_optimizer_defaults() and change what you need. */
typedef struct EmbOptimizerConfig {
    EmbOptimizerKind kind; /**< which optimizer */
    float lr;            /**< learning rate (> 0) */
    float eps;           /**< Adagrad / row-wise Adagrad / Adam epsilon (default 1e-10,
                              Adam 1e-8) */
    float initial_accumulator; /**< Adagrad h0 (0), FTRL accumulator (0.1) */
    float lr_power;      /**< FTRL (-0.5; <= 0) */
    float l1;            /**< FTRL l1 regularisation (0; >= 0) */
    float l2;            /**< FTRL l2 regularisation (0; >= 0) */
    float beta1;         /**< Adam first-moment decay (0.9; in [0, 1)) */
    float beta2;         /**< Adam second-moment decay (0.999; in [0, 1)) */
    int bias_correction; /**< Adam: 1 (default) divides by 1 - beta^t */
    EmbPlacement placement; /**< NUMA placement of the state (as the tables') */
    int32_t numa_node;   /**< node for EMB_PLACE_NODE */
    float weight_decay;  /**< wd (0: none; >= 0). Like every sparse optimizer it acts on
                              the columns a step updates only, with w the column's value
                              before the step (rounded to the table's dtype when scaled) */
    EmbWeightDecay weight_decay_mode; /**< EMB_DECAY_L2 (default) or EMB_DECAY_DECOUPLED */
    /* -- gradient clipping (issue 42): on each distinct column's summed gradient g, before
       weight decay and the optimizer, in this order; 0 turns each off (the default) -- */
    float max_gradient;  /**< element-wise: g_i = clamp(g_i, -max_gradient, max_gradient)
                              (FBGEMM TBE's gradient_clipping; >= 0) */
    float max_row_norm;  /**< per column: g *= max_row_norm / ||g||_2 when ||g||_2 exceeds
                              it (>= 0) */
    float max_global_norm; /**< over every column of every table of the call (emb_update,
                              emb_update_many, a collection's step): g *= max_global_norm /
                              (N + 1e-6) when the norm N of all the clipped gradients
                              exceeds it (torch.nn.utils.clip_grad_norm_); N is the same
                              bits for any thread and split count (>= 0) */
    /* -- EMB_OPT_ROWWISE_ADAGRAD_COUNTER (issue 42; FBGEMM's counter-based regularization,
       regularization_mode 3): per row h, the step it was last seen, its counter c -- */
    int32_t counter_halflife; /**< > 0: c = 1 + 2^(-steps since the row's last step /
                                   halflife) · c; 0: c = 1; < 0 (default -1): c += 1 */
    int32_t adjustment_iter;  /**< the learning-rate mode and the counter's weight decay
                                   act from step adjustment_iter + 1 on (<= 0, default -1:
                                   from the first) */
    float adjustment_ub;      /**< learning_rate_mode 2's a (default 1; > 0) */
    int32_t learning_rate_mode; /**< -1 (default): Adagrad's rate; 2: lr / (sqrt(a · c) +
                                   eps) for rows with c > tail_id_threshold (FBGEMM's modes 0
                                   and 1 scale by the table's largest counter: EMB_ENOTSUP) */
    float tail_id_threshold;  /**< rows with c <= it keep Adagrad's rate (0; >= 0) */
    /* ---- low-precision state and rounding (docs/design/lowp.md) ---- */
    EmbDtype state_dtype; /**< element type of the optimizer state: EMB_F32 (default),
                               EMB_F16 or EMB_BF16 (half the bytes; the row kernels step it
                               as f32, then it is rounded to nearest even, or stochastically
                               with @c stochastic_rounding). Fixed for the optimizer's life;
                               tables that keep state with their rows (tiered, dynamic)
                               answer EMB_ENOTSUP for anything but EMB_F32 */
    int stochastic_rounding; /**< 1: the updated rows of f16 / bf16 tables (and a 16-bit
                                  state) are rounded stochastically, with random bits keyed
                                  by (the table's name, row, element, step): the same bits
                                  for any thread, split and rank count; 0 (default): to
                                  nearest even */
} EmbOptimizerConfig;

/** The defaults of @p kind with learning rate @p lr. */
EMB_API EmbOptimizerConfig emb_optimizer_defaults(EmbOptimizerKind kind, float lr);

/**
 * The f32 elements of optimizer state @p kind keeps per row of @p featuresize elements
 * (SGD 0, Adagrad D, row-wise Adagrad 1, counter row-wise Adagrad 3, FTRL and Adam 2 x D):
 * what a tiered table's
 * EmbTieredOptions::state_width needs.
 * @return the width, or EMB_EINVAL (an unknown kind, featuresize < 1)
 */
EMB_API int32_t emb_optimizer_state_width(EmbOptimizerKind kind, int32_t featuresize);

/**
 * Checks @p cfg as emb_optimizer_create() does (the GPU back end checks with it too).
 * @return 0, EMB_ENULL, EMB_EINVAL (naming the hyper-parameter out of range), EMB_ENOTSUP
 *         (the counter optimizer's learning_rate_mode 0 or 1)
 */
EMB_API int emb_optimizer_config_check(const EmbOptimizerConfig *cfg);

/**
 * Creates an optimizer. Its per-column state lives in shadow tables it owns: one set per
 * table it updates, created on the table's first update (or by emb_optimizer_attach())
 * with the table's number of columns, f32, placed as @c cfg->placement says. The state
 * is keyed by the table's handle: destroy the optimizer (or call emb_optimizer_detach())
 * before destroying a table it updated. An optimizer must not be used by two calls at
 * once (it holds the per-table state and step counts).
 * @return 0, EMB_ENULL, EMB_EINVAL (a hyper-parameter out of range, NaN or infinite; an
 *         unknown kind or placement), EMB_ENOTSUP (as emb_optimizer_config_check()),
 *         EMB_ENOMEM
 */
EMB_API int emb_optimizer_create(EmbOptimizer **out, const EmbOptimizerConfig *cfg);
/** Destroys an optimizer and all its state (NULL is fine); sets `*opt` to NULL. */
EMB_API void emb_optimizer_destroy(EmbOptimizer **opt);

/** The optimizer's hyper-parameters, into `*out`. @return 0, EMB_ENULL */
EMB_API int emb_optimizer_get_config(const EmbOptimizer *opt, EmbOptimizerConfig *out);

/**
 * Changes the hyper-parameters of a live optimizer (learning-rate schedules, warm-up,
 * decay) without touching its state: the next update uses them. The kind cannot change;
 * initial_accumulator and the placement apply to state created afterwards only.
 * @return 0, EMB_ENULL, EMB_EINVAL (another kind, a value out of range); unchanged on
 *         failure
 */
EMB_API int emb_optimizer_set_config(EmbOptimizer *opt, const EmbOptimizerConfig *cfg);

/** emb_optimizer_set_config() with only the learning rate changed. @return as it */
EMB_API int emb_optimizer_set_lr(EmbOptimizer *opt, float lr);

/**
 * Creates @p table's state now (a no-op when it exists), so that no update allocates.
 * @return 0, EMB_ENULL, EMB_ENOMEM, EMB_EOVERFLOW
 */
EMB_API int emb_optimizer_attach(EmbOptimizer *opt, const EmbTable *table);
/** Drops @p table's state (nothing when it has none). */
EMB_API void emb_optimizer_detach(EmbOptimizer *opt, const EmbTable *table);

/**
 * @p table's state slot @p slot as a table owned by the optimizer (NULL in `*out` when
 * the kind has no such slot): Adagrad 0 = h (D per column); row-wise Adagrad 0 = h (1 per
 * column); FTRL 0 = [accumulator D | linear D] per column; Adam 0 = [m D | v D];
 * counter row-wise Adagrad 0 = [h | last step | counter].
 * @p step (may be NULL) receives the number of updates applied to the table.
 * @return 0, EMB_ENULL, EMB_EINVAL (slot < 0), EMB_ENOTFOUND (the table has no state yet)
 */
EMB_API int emb_optimizer_state(const EmbOptimizer *opt, const EmbTable *table, int slot,
                                EmbTable **out, int64_t *step);

/**
 * Sets the number of updates applied to @p table (Adam's t; what emb_optimizer_state()
 * reports), as a restored state needs it: the state slot's values are written through
 * emb_optimizer_state()'s table, the step count here.
 * @return 0, EMB_ENULL, EMB_EINVAL (@p step < 0), EMB_ENOTFOUND (the table has no state
 *         yet: emb_optimizer_attach() it first). Nothing changes on an error.
 */
EMB_API int emb_optimizer_set_step(EmbOptimizer *opt, const EmbTable *table, int64_t step);

/** emb_update() flags. */
enum {
    EMB_UPDATE_NONTEMPORAL = 1 << 0, /**< write updated columns with streaming stores */
};

/**
 * Applies @p grad to @p table with @p opt: dedups the gradient rows with @p ix, sums each
 * column's rows in a fixed order and applies the optimizer once per distinct column,
 * reading and writing each column once. An empty gradient is a valid no-op (it still
 * counts as a step for Adam's t). The gradient is not consumed: it may be applied again.
 * Every buffer of the call belongs to @p ix (the optimizer holds only the table's state).
 * @return 0; EMB_ENULL, EMB_EINVAL (a gradient recorded for another table, or none),
 *         EMB_ERANGE (an id, naming it and its position), EMB_EOFFSETS, EMB_ENOMEM,
 *         EMB_EOVERFLOW, EMB_ENONFINITE (a NaN / inf gradient or weight, when the table
 *         has EMB_TABLE_CHECK_FINITE). On failure no column (and no state) is written.
 */
EMB_API int emb_update(EmbOptimizer *opt, EmbTable *table, const EmbGrad *grad,
                       EmbIndexer *ix, unsigned flags);

/**
 * emb_update() over @p n tables under @p strategy: every table is indexed in parallel,
 * then splits of each table's distinct columns (balanced by gradient rows; num_splits of
 * the strategy's options, 1 for sequential and parallel) run on the strategy's threads.
 * Results are bit-identical for every strategy, nthreads and num_splits. Tables may have
 * different feature sizes and dtypes; every table needs its own indexer, and a table may
 * appear only once. A custom strategy's update_many callback is called instead when set.
 * The call's plans and per-thread scratch belong to @p strategy, each table's grouping to
 * its indexer; a steady-state call allocates nothing.
 * @return as emb_update(), plus EMB_EINVAL (n <= 0, a table twice), EMB_ENOTSUP (custom
 *         strategy without update_many). Nothing is written on failure.
 */
EMB_API int emb_update_many(EmbStrategy *strategy, EmbOptimizer *opt, EmbTable *const *tables,
                            const EmbGrad *const *grads, int64_t n,
                            EmbIndexer *const *indexers, unsigned flags);

/**
 * emb_update_many() in two steps, for a caller that must agree with others before any
 * of them writes (the MPI ensemble, emb_dist_update()). emb_update_many_prepare() does
 * every check and every allocation of the call (the indexing into the indexers, the
 * scratch, the optimizer states, created when missing, and a dynamic table's room) and
 * writes no column and no state's values; emb_update_many_commit() then applies it and
 * cannot fail (0), with the same bits as emb_update_many(); emb_update_many_cancel()
 * drops it (nothing written). Between them the arguments must stay as they were and
 * @p strategy must run nothing else; another prepare or emb_update_many() on it drops
 * a prepared call. A custom strategy's prepare checks only for its update_many callback,
 * which its commit calls (returning its result).
 * @return prepare: as emb_update_many() (nothing prepared on failure); commit: 0,
 *         EMB_ENULL, EMB_EINVAL (nothing prepared), a custom callback's code
 */
EMB_API int emb_update_many_prepare(EmbStrategy *strategy, EmbOptimizer *opt,
                                    EmbTable *const *tables, const EmbGrad *const *grads,
                                    int64_t n, EmbIndexer *const *indexers, unsigned flags);
/** Applies the update prepared on @p strategy (see emb_update_many_prepare()). */
EMB_API int emb_update_many_commit(EmbStrategy *strategy);
/** Drops the update prepared on @p strategy, if any (see emb_update_many_prepare()). */
EMB_API void emb_update_many_cancel(EmbStrategy *strategy);

/**
 * Where the last successful emb_update_many() on a strategy spent its time, in seconds of
 * the calling thread's wall clock (for benchmarks: `emb-bench --breakdown`). Phases that
 * run on the strategy's threads count from their start to the last thread's end.
 */
typedef struct EmbUpdateTimes {
    double serial;   /**< checks, planning and the serial steps between parallel phases */
    double pullback; /**< expanding the gradients into rows (the pullback), checking their
                          ids and, split, sorting them by partition */
    double index;    /**< grouping the rows by distinct id (hash, rows in groups) */
    double apply;    /**< summing each distinct column's rows and the optimizer rows */
} EmbUpdateTimes;

/**
 * The phase times of the last successful emb_update_many() on @p strategy (all zero
 * before one, or for a custom strategy).
 * @return 0, EMB_ENULL
 */
EMB_API int emb_strategy_update_times(const EmbStrategy *strategy, EmbUpdateTimes *out);

/* ---- variable operations (tf.Variable) --------------------------------------------- */

/**
 * Whole-table operations with a dense f32 value of @p ncolumns x @p featuresize (row c at
 * `values + c * stride`), which must equal the table's shape: assign sets, assign_add
 * adds, assign_sub subtracts (results rounded to the table's dtype). A tiered table
 * (tiered.h) is worked 1024 rows at a time, so memory stays bounded.
 * @return 0, EMB_ENULL, EMB_ESHAPE, EMB_ESTRIDE, EMB_EOVERFLOW (the rows at stride are not
 *         addressable), EMB_ENONFINITE (EMB_TABLE_CHECK_FINITE), EMB_ENOTSUP (a dynamic
 *         table), EMB_EIO (a tiered table's read failed, naming the file and rows:
 *         nothing assigned; every row is read before the first is written, so only a
 *         disk failing between that read and the write leaves the rows before it
 *         assigned), EMB_ENOMEM
 */
EMB_API int emb_table_assign(EmbTable *t, const float *values, int64_t ncolumns,
                             int32_t featuresize, int64_t stride);
/** See emb_table_assign(). */
EMB_API int emb_table_assign_add(EmbTable *t, const float *values, int64_t ncolumns,
                                 int32_t featuresize, int64_t stride);
/** See emb_table_assign(). */
EMB_API int emb_table_assign_sub(EmbTable *t, const float *values, int64_t ncolumns,
                                 int32_t featuresize, int64_t stride);

/**
 * Copies the whole table out as f32: column c to `out + c * out_stride` (a quantized row
 * dequantized: q * scale + bias).
 * @return 0, EMB_ENULL, EMB_ESTRIDE, EMB_EOVERFLOW, EMB_ENOTSUP (a dynamic table), EMB_EIO
 *         (a tiered table's read failed, naming the file and rows; @p out untouched but
 *         for a disk failing between emb_table_assign()'s two reads), EMB_ENOMEM
 */
EMB_API int emb_table_read(const EmbTable *t, float *out, int64_t out_stride);

/**
 * Sets every row of @p dst from the same row of @p src, converted: typically an f32, f16 or
 * bf16 table quantized into an EMB_INT8 / EMB_INT4 one (for serving, or to train
 * quantized). A quantized row gets bias = its minimum and scale = (max - min) / 255 (int8;
 * int4: both f16, scale (max - bias) / 15), values rounded to nearest (emb_dtype_row_bytes()
 * and EmbDtype for the layouts); any other pair of dtypes converts element by element
 * (rounded to nearest even). @p src is only read; both tables stay the caller's.
 * @return 0, EMB_ENULL, EMB_EINVAL (@p dst is @p src), EMB_ESHAPE (row counts or feature
 *         sizes differ), EMB_ENONFINITE (@p dst has EMB_TABLE_CHECK_FINITE and a value of
 *         @p src is NaN or infinite: nothing written), EMB_ENOMEM, EMB_ENOTSUP (a dynamic
 *         table), EMB_EIO (a tiered table's read failed, naming the file and rows:
 *         nothing written, as for emb_table_assign())
 */
EMB_API int emb_table_quantize(EmbTable *dst, const EmbTable *src);

/**
 * Scatter operations: for k = 0 .. n-1 in order, column ids[k] is combined with row k of
 * @p updates (`updates + k * stride`, featuresize f32): update sets it, add adds, sub
 * subtracts, mul multiplies, div divides (elementwise). With duplicate ids the rows are
 * applied one after another, so add / sub accumulate, mul / div compose and update keeps
 * the last row; each application is rounded to the table's dtype. All ids are checked
 * (and a tiered table's rows all read) before anything is written.
 * @return 0, EMB_ENULL, EMB_EINVAL (n < 0), EMB_ERANGE (naming the id and position),
 *         EMB_ESTRIDE, EMB_EOVERFLOW (n rows of stride are not addressable), EMB_ENONFINITE
 *         (EMB_TABLE_CHECK_FINITE), EMB_EIO (a tiered table's read failed: nothing
 *         written), EMB_ENOMEM
 */
EMB_API int emb_table_scatter_update(EmbTable *t, const int64_t *ids, int64_t n,
                                     const float *updates, int64_t stride);
/** See emb_table_scatter_update(). */
EMB_API int emb_table_scatter_add(EmbTable *t, const int64_t *ids, int64_t n,
                                  const float *updates, int64_t stride);
/** See emb_table_scatter_update(). */
EMB_API int emb_table_scatter_sub(EmbTable *t, const int64_t *ids, int64_t n,
                                  const float *updates, int64_t stride);
/** See emb_table_scatter_update(). */
EMB_API int emb_table_scatter_mul(EmbTable *t, const int64_t *ids, int64_t n,
                                  const float *updates, int64_t stride);
/** See emb_table_scatter_update(). */
EMB_API int emb_table_scatter_div(EmbTable *t, const int64_t *ids, int64_t n,
                                  const float *updates, int64_t stride);

/**
 * TF sparse_mask: copies the rows of @p in whose id is not in @p mask_ids into the
 * caller's buffers @p out_ids (room for in->n int64) and @p out_values (in->n rows of
 * @p out_stride), in order, and describes them in @p out (ids as EMB_ID_I64).
 * @return 0, EMB_ENULL (naming the buffer), EMB_EINVAL (negative counts, featuresize < 1,
 *         bad id_type), EMB_ESTRIDE, EMB_EOVERFLOW (rows not addressable), EMB_ENOMEM
 */
EMB_API int emb_sparse_mask(const EmbSparseGrad *in, const int64_t *mask_ids, int64_t nmask,
                            EmbSparseGrad *out, int64_t *out_ids, float *out_values,
                            int64_t out_stride);

#ifdef __cplusplus
}
#endif
#endif
