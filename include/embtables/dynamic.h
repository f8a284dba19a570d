/* SPDX-License-Identifier: BSD-2-Clause */
/**
 * @file dynamic.h
 * Hash-keyed dynamic tables: rows keyed by raw 64-bit ids, created on first update,
 * admitted after N updates, evicted by age or norm (DeepRec's EmbeddingVariable, TorchRec's
 * managed-collision modules).
 *
 * A dynamic table is an EmbTable: every lookup form, emb_maplookup under every strategy,
 * emb_lookup_backward, emb_update / emb_update_many with every optimizer and the
 * partitioned tables (mod, over dynamic shards: partition.h) take it unchanged. Its ids are any int64
 * in [0, INT64_MAX) (emb_table_ncolumns() is INT64_MAX); negative ids are out of range
 * (EMB_ERANGE) unless the pooling prunes them.
 *
 * - **Storage**: an open-addressing (linear probing, backward-shift deletion) map from id
 *   to a row index, and the rows in pooled slabs (no allocation per row). A row is aligned
 *   as an owned table's column is (64 bytes, or its power-of-two size when smaller). Each
 *   row costs its stride, 16 bytes of metadata (id, last update step) and 16-byte index
 *   slots at a load of at most 0.7; the optimizer's state rows live in parallel slabs.
 * - **Unknown ids on FORWARD** (lookups, and the max_norm backward's reads) read as the
 *   default row (`EmbDynamicOptions::missing`): zeros, a constant, or EMB_ENOTFOUND naming
 *   the id (the lookup checks every id first and writes nothing).
 * - **Updates** (emb_update, emb_update_many): each distinct id of the gradient that is not
 *   a row is counted in the admission sketch; once counted `admit_after` times (this update
 *   included) it becomes a row, initialised by `init` as emb_table_initialize() would
 *   initialise column `id` of a table (so a row's first values depend on its id only: any
 *   run, creation order and thread count gives the same bits), and the update applies to
 *   it; before that the id's gradient is dropped and it reads as the default. Each update
 *   call counts one step of the table (emb_table_dynamic_step()); a row remembers the
 *   step of its last update.
 * - **Memory cap** `max_rows`: an update (or import) that would need more rows fails with
 *   EMB_ENOMEM before anything is written, as does any failed allocation.
 * - **Checkpoints** (store.h): the saver writes the rows in increasing id order with their
 *   ids, last update steps, optimizer state, the admission counts and the table's step;
 *   a restore replaces every row of a dynamic table (of any capacity) by the file's, and
 *   training resumes bit for bit. docs/format.md lists the tensors.
 * - **Optimizer state**: the optimizer's state of a dynamic table is kept beside its rows
 *   (emb_optimizer_state() returns a view keyed by id), created with the row and freed
 *   with it. One optimizer at a time may keep state for a dynamic table (a second one:
 *   EMB_ENOTSUP until the first detaches).
 *
 * Concurrency: lookups (FORWARD reads) of a dynamic table may run at once from any
 * threads, as for every table. Everything that changes its structure (an update's serial
 * prepare step, which creates rows and may grow the index and slabs; emb_table_dynamic_evict;
 * emb_table_dynamic_import; emb_table_column_pointer() with UPDATE of an unknown id) must
 * run while no other call uses the table: a growing index is rehashed in one piece, not
 * bucket by bucket, so there is no lookup during a resize. The apply phase of an update
 * (emb_update_many's threads) only finds rows created by its prepare step, so it may run on
 * any number of threads. As for any table, a lookup must not run during an update of the
 * same table.
 */
#ifndef EMBTABLES_DYNAMIC_H
#define EMBTABLES_DYNAMIC_H

#include "embtables/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What a FORWARD read of an id without a row gives. */
typedef enum EmbDynamicMissing {
    EMB_DYN_MISSING_ZEROS = 0,    /**< a row of zeros */
    EMB_DYN_MISSING_CONSTANT = 1, /**< a row of `missing_value` (rounded to the dtype) */
    EMB_DYN_MISSING_ERROR = 2,    /**< the lookup fails with EMB_ENOTFOUND, writing nothing */
} EmbDynamicMissing;

/** Options of emb_table_dynamic_create(); zero-initialise and set what you need. */
typedef struct EmbDynamicOptions {
    EmbTableOptions table;     /**< name, static_size, column_align, flags (placement: only
                                    EMB_PLACE_DEFAULT) */
    int64_t capacity;          /**< rows expected (index and slabs sized for them); 0: 1024 */
    int64_t max_rows;          /**< cap on rows (0: none): past it EMB_ENOMEM */
    EmbInitializer init;       /**< values of a created row (any kind but
                                    UNIFORM_UNIT_SCALING; NONE / ZEROS: zeros) */
    EmbDynamicMissing missing; /**< FORWARD of an unknown id */
    float missing_value;       /**< for EMB_DYN_MISSING_CONSTANT */
    int32_t admit_after;       /**< updates before an id becomes a row (0 or 1: the first) */
    int32_t sketch_width;      /**< counters per row of the count-min sketch (4 rows of
                                    16-bit saturating counters; rounded up to a power of
                                    two; 0: 65536; at most EMB_DYN_SKETCH_WIDTH_MAX); used
                                    when admit_after > 1 */
} EmbDynamicOptions;

/** The largest sketch_width: 2^24 counters a row, 128 MiB of sketch. */
#define EMB_DYN_SKETCH_WIDTH_MAX (1 << 24)

/**
 * Creates an empty dynamic table of rows of @p featuresize elements of @p dtype.
 * @return 0, EMB_ENULL, EMB_EINVAL (a negative capacity or cap, admit_after < 0,
 *         sketch_width < 0 or > EMB_DYN_SKETCH_WIDTH_MAX, an unknown missing mode,
 *         initializer or placement), EMB_ENONFINITE (missing_value NaN or infinite under
 *         EMB_DYN_MISSING_CONSTANT on a table with EMB_TABLE_CHECK_FINITE), EMB_EDTYPE,
 *         EMB_ESHAPE, EMB_ENOMEM
 */
EMB_API int emb_table_dynamic_create(EmbTable **out, int32_t featuresize, EmbDtype dtype,
                                     const EmbDynamicOptions *opts);

/** 1 when @p t is a dynamic table, else 0. */
EMB_API int emb_table_is_dynamic(const EmbTable *t);

/** Statistics of a dynamic table. */
typedef struct EmbDynamicStats {
    int64_t rows;        /**< ids with a row */
    int64_t slab_rows;   /**< rows the slabs hold (used, free and not yet used) */
    int64_t index_slots; /**< slots of the hash index */
    int64_t bytes;       /**< bytes held: slabs, state slabs, metadata, index, sketch */
    int64_t step;        /**< update steps so far */
} EmbDynamicStats;

/** @return 0, EMB_ENULL, EMB_EINVAL (not a dynamic table) */
EMB_API int emb_table_dynamic_stats(const EmbTable *t, EmbDynamicStats *out);

/** Update steps of a dynamic table so far (0 for another table or NULL). */
EMB_API int64_t emb_table_dynamic_step(const EmbTable *t);

/** Whether @p id has a row: 1, 0; or EMB_ENULL, EMB_EINVAL (not a dynamic table). */
EMB_API int emb_table_dynamic_contains(const EmbTable *t, int64_t id);

/** emb_table_dynamic_evict() flags */
enum {
    /** evict a row only when every given criterion holds (default: when any does) */
    EMB_DYN_EVICT_ALL = 1 << 0,
};

/** What emb_table_dynamic_evict() removes; zero-initialise and set what you need. */
typedef struct EmbDynamicEvict {
    int64_t ttl;     /**< > 0: rows whose last update is more than ttl steps before the
                          table's step (step - last > ttl); 0: no age criterion */
    float min_norm;  /**< > 0: rows whose L2 norm is below it; 0: no norm criterion */
    unsigned flags;  /**< EMB_DYN_EVICT_ALL */
} EmbDynamicEvict;

/**
 * Removes the rows the criteria select, with their optimizer state; their slab rows are
 * reused by later rows. Never runs inside a lookup or an update: call it between steps.
 * @param evicted receives the number of rows removed (may be NULL)
 * @return 0, EMB_ENULL, EMB_EINVAL (not a dynamic table, negative ttl, min_norm < 0 or NaN,
 *         unknown flags)
 */
EMB_API int emb_table_dynamic_evict(EmbTable *t, const EmbDynamicEvict *ev, int64_t *evicted);

/**
 * Exports the rows in increasing id order: ids into @p ids and the rows (converted to f32)
 * into @p rows, row k at `rows + k * row_stride`. With @p ids NULL only counts.
 * @param cap  room in ids / rows (rows)
 * @param n    receives the number of rows of the table
 * @return 0, EMB_ENULL, EMB_EINVAL (not dynamic), EMB_ESTRIDE, EMB_EOVERFLOW (cap rows of
 *         row_stride are not addressable), EMB_ERANGE (cap < rows: nothing written),
 *         EMB_ENOMEM
 */
EMB_API int emb_table_dynamic_export(const EmbTable *t, int64_t *ids, float *rows,
                                     int64_t row_stride, int64_t cap, int64_t *n);

/**
 * Sets the rows of @p n distinct ids (>= 0), creating those missing (with fresh optimizer
 * state and the current step as their last update; no admission). Checks everything first:
 * a failed call leaves the table as it was.
 * @return 0, EMB_ENULL, EMB_EINVAL (not dynamic, a repeated id), EMB_ERANGE (an id not in
 *         [0, INT64_MAX), which lookups and updates refuse too),
 *         EMB_ESTRIDE, EMB_EOVERFLOW (n rows of row_stride are not addressable),
 *         EMB_ENONFINITE (EMB_TABLE_CHECK_FINITE), EMB_ENOMEM (max_rows)
 */
EMB_API int emb_table_dynamic_import(EmbTable *t, const int64_t *ids, const float *rows,
                                     int64_t row_stride, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
