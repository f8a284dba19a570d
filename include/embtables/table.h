/* SPDX-License-Identifier: BSD-2-Clause */
/**
 * @file table.h
 * Embedding tables behind the column-pointer interface.
 *
 * A table holds `ncolumns` vectors ("columns") of `featuresize` elements each; every column
 * is contiguous in memory, columns need not be. A table answers "where is column i?" for a
 * context (why it is asked), which lets a table type act on it (a cached table could move a
 * column into a fast tier on FORWARD). Built-in types: simple tables (owned or wrapped
 * memory), custom tables (user callbacks) and, in partition.h, partitioned tables.
 *
 * A table is *static* when its feature size was fixed at creation (`static_size`): lookups
 * and updates then run kernels specialised for that size. Static and dynamic tables give
 * identical results. Kernels specialised for a size are used for a dynamic table too when
 * its feature size happens to equal a specialised size (docs/design/kernels.md):
 * "static" is a promise the caller makes, never a change of results.
 *
 * Concurrency: the accessors and emb_table_column_pointer() may run at once from any
 * threads (a custom column_pointer callback must be thread-safe too); create and destroy
 * a table while no other call uses it.
 */
#ifndef EMBTABLES_TABLE_H
#define EMBTABLES_TABLE_H

#include "embtables/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque table handle. */
typedef struct EmbTable EmbTable;

/** Why a column pointer is asked for. */
typedef enum EmbContext {
    EMB_CTX_NONE = 0,    /**< no information */
    EMB_CTX_FORWARD = 1, /**< a lookup will read the column */
    EMB_CTX_UPDATE = 2,  /**< an optimizer will read-modify-write the column */
} EmbContext;

/** Longest table name kept (longer names are truncated). */
#define EMB_NAME_MAX 63

/** EmbTableOptions::flags */
enum {
    /** every write into the table first checks its inputs (gradients, per-id weights,
        assigned and scattered values, initializer parameters) for NaN and infinity:
        EMB_ENONFINITE and nothing written (docs/guide/reference.md: non-finite values) */
    EMB_TABLE_CHECK_FINITE = 1 << 0,
};

/** Options of emb_table_create(); zero-initialise and set what you need. */
typedef struct EmbTableOptions {
    const char *name;       /**< copied; NULL: unnamed */
    int32_t static_size;    /**< 0: dynamic; else must equal featuresize (EMB_ESHAPE) */
    EmbPlacement placement; /**< NUMA placement of the memory (another value: EMB_EINVAL) */
    int32_t numa_node;      /**< node for EMB_PLACE_NODE */
    int32_t column_align;   /**< bytes each column is aligned to (power of two, <= 4096);
                                 0: 64, or the next power of two of the column's bytes
                                 when that is smaller (no padding beyond a cache line) */
    unsigned flags;         /**< EMB_TABLE_CHECK_FINITE (other bits: EMB_EINVAL) */
} EmbTableOptions;

/**
 * Creates a table with owned, zero-filled memory (a quantized row of zeros: scale and bias
 * 0, every value 0). A quantized row longer than half a cache line is packed at the
 * alignment of its scale (int8: 8 bytes, int4: 4) unless EmbTableOptions::column_align
 * says otherwise (D = 64: int8 72-byte columns, int4 36-byte ones, torch's strides).
 * @param out        receives the table; untouched on failure
 * @param ncolumns   number of columns (>= 0)
 * @param featuresize elements per column (>= 1)
 * @param dtype      element type
 * @param opts       options or NULL for the defaults
 * @return 0, EMB_ENULL, EMB_EINVAL, EMB_EDTYPE, EMB_ESHAPE (static_size; an odd
 *         featuresize for EMB_INT4), EMB_EOVERFLOW, EMB_ENOMEM
 */
EMB_API int emb_table_create(EmbTable **out, int64_t ncolumns, int32_t featuresize,
                             EmbDtype dtype, const EmbTableOptions *opts);

/**
 * Wraps caller memory without copying: column i starts at
 * `(char *)data + i * column_stride * emb_dtype_size(dtype)`, or for the quantized types
 * (EMB_INT8, EMB_INT4) `(char *)data + i * column_stride`: their stride is in bytes, at
 * least emb_dtype_row_bytes(dtype, featuresize) (torch's prepacked rows: exactly that;
 * with EMB_TABLE_CHECK_FINITE every element of every row must read finite). The caller keeps ownership
 * and must keep the memory alive until the table is destroyed. Any alignment of @p data
 * that is valid for the element type works.
 * @param column_stride elements from one column to the next (>= featuresize; bytes for
 *        the quantized types)
 * @return 0, EMB_ENULL, EMB_EINVAL, EMB_EDTYPE, EMB_ESTRIDE, EMB_ESHAPE (an odd featuresize
 *         for EMB_INT4), EMB_EOVERFLOW, EMB_ENOMEM, EMB_ENONFINITE (EMB_TABLE_CHECK_FINITE:
 *         an element of a quantized row that reads NaN or infinite, naming row and element)
 */
EMB_API int emb_table_wrap(EmbTable **out, void *data, int64_t ncolumns, int32_t featuresize,
                           int64_t column_stride, EmbDtype dtype, const EmbTableOptions *opts);

/**
 * A user column-pointer callback: returns the first element of @p column, which the
 * library has checked is in [0, ncolumns). Must return a valid pointer (the column's
 * `featuresize` elements contiguous) and be safe to call from several threads at once.
 */
typedef void *(*emb_column_pointer_fn)(void *user, int64_t column, EmbContext ctx);
/** Called once with the user data when a custom table is destroyed (may be NULL). */
typedef void (*emb_destroy_fn)(void *user);

/**
 * Creates a user-defined table whose columns are found by @p fn. On success the table owns
 * @p user: @p destroy, if given, is called on it by emb_table_destroy(). On failure the
 * caller keeps ownership of @p user.
 * @return 0, EMB_ENULL, EMB_EINVAL, EMB_EDTYPE, EMB_ESHAPE, EMB_ENOMEM
 */
EMB_API int emb_table_custom(EmbTable **out, int64_t ncolumns, int32_t featuresize,
                             EmbDtype dtype, emb_column_pointer_fn fn, void *user,
                             emb_destroy_fn destroy, const EmbTableOptions *opts);

/** Destroys a table (NULL is fine) and sets `*t` to NULL. Wrapped memory is not freed. */
EMB_API void emb_table_destroy(EmbTable **t);

/**
 * Pointer to column @p column for context @p ctx, in `*out`. A tiered table's row
 * (tiered.h) is read into its cache and pinned until the table's next operation ends
 * (UPDATE: marked dirty, written back later).
 * @return 0, EMB_ENULL, EMB_EINVAL (ctx not an EmbContext), EMB_ERANGE (column outside
 *         [0, ncolumns)), EMB_EIO (a tiered table's read failed: the message names the file
 *         and the row), EMB_ENOMEM
 */
EMB_API int emb_table_column_pointer(const EmbTable *t, int64_t column, EmbContext ctx,
                                     void **out);

/** Number of columns (0 for NULL). */
EMB_API int64_t emb_table_ncolumns(const EmbTable *t);
/** Elements per column (0 for NULL). */
EMB_API int32_t emb_table_featuresize(const EmbTable *t);
/** 1 when the feature size was fixed at creation (static_size), else 0. */
EMB_API int emb_table_is_static(const EmbTable *t);
/** Storage element type. */
EMB_API EmbDtype emb_table_dtype(const EmbTable *t);
/** Name given at creation ("" when none; never NULL). */
EMB_API const char *emb_table_name(const EmbTable *t);
/**
 * Contiguous storage of a simple (owned or wrapped) table and its column stride in
 * elements (in bytes for the quantized types); NULL / 0 for custom and partitioned tables.
 */
EMB_API void *emb_table_data(const EmbTable *t, int64_t *column_stride);

#ifdef __cplusplus
}
#endif
#endif
