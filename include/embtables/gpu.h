/**
 * @file gpu.h
 * The CUDA back end (library `embtables_gpu`, built when nvcc is found): device tables,
 * pooled and table-batched lookups, and a deterministic backward with fused optimizers.
 * Not included by embtables.h; link `embtables_gpu` (it links the CPU library and the
 * CUDA runtime).
 *
 * Semantics are the CPU library's (lookup.h, strategy.h): the same EmbBatch / EmbPooling
 * descriptors, combiners, max_norm, pruning and default id, and the same output layouts.
 * Differences:
 *  - every pointer inside an EmbBatch (ids, offsets, weights) and every output or
 *    gradient buffer is a DEVICE pointer; the descriptors themselves live on the host;
 *  - `stream` is the caller's `cudaStream_t` (NULL: the legacy default stream); every
 *    call is ordered on it;
 *  - feature sizes are limited to 1..EMB_GPU_MAX_FEATURESIZE;
 *  - errors detected on the device (an id out of range, bad offsets) are found by a
 *    validation kernel that runs before the kernels that write: a failed call writes
 *    nothing (the writing kernels see the error and exit). By default the call then waits
 *    for the stream and returns the error; with EMB_GPU_DEFER_CHECK it returns at once and
 *    emb_gpu_workspace_check() reports the error later. An error is sticky in its
 *    workspace until reported: calls on a workspace holding one write nothing;
 *  - messages of failures are read with emb_gpu_last_error() (this thread's), codes named
 *    by emb_strerror().
 *
 * Determinism: lookups and updates give bit-identical results run to run; the backward
 * uses no floating-point atomics (ids are radix-sorted, each distinct row's gradient is
 * reduced in a fixed order, hot rows split into fixed-size pieces combined in order).
 */
#ifndef EMBTABLES_GPU_H
#define EMBTABLES_GPU_H

#include "embtables/lookup.h"
#include "embtables/strategy.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest feature size the GPU kernels take (a row is held in registers). */
#define EMB_GPU_MAX_FEATURESIZE 1024

/** Flags of the GPU calls. */
enum {
    /** Do not wait for the stream: errors are reported by emb_gpu_workspace_check(). */
    EMB_GPU_DEFER_CHECK = 1 << 0,
};

/** A table in device memory (opaque). */
typedef struct EmbGpuTable EmbGpuTable;
/** Scratch and error state of GPU calls (opaque); one per stream in flight. */
typedef struct EmbGpuWorkspace EmbGpuWorkspace;

/**
 * Number of CUDA devices in @p count.
 * @return 0; EMB_ENULL; EMB_ENODEV (no driver or no device; *count is set to 0)
 */
EMB_API int emb_gpu_device_count(int *count);

/**
 * This thread's message for the last failed GPU call (empty when none). Owned by the
 * library, valid until the next failing GPU call on this thread.
 */
EMB_API const char *emb_gpu_last_error(void);

/**
 * Creates a workspace: device scratch (grown on demand and then reused, so steady-state
 * calls allocate nothing), a device error record and pinned host memory.
 * @return 0; EMB_ENULL; EMB_ENODEV; EMB_ENOMEM; EMB_EDEVICE
 */
EMB_API int emb_gpu_workspace_create(EmbGpuWorkspace **out);

/** Destroys a workspace (NULL is fine; waits for its work) and sets `*ws` to NULL. */
EMB_API void emb_gpu_workspace_destroy(EmbGpuWorkspace **ws);

/**
 * Waits for the last call made with @p ws and returns the first error any call recorded
 * since the last report (then clears it).
 * @return 0; EMB_ENULL; EMB_ERANGE; EMB_EOFFSETS; EMB_EDEVICE
 */
EMB_API int emb_gpu_workspace_check(EmbGpuWorkspace *ws);

/**
 * Creates a zero-filled device table on the current device. Rows are padded to a
 * multiple of 4 elements.
 * @param name   copied; NULL: unnamed
 * @param stream where the zero fill runs (the call waits for it)
 * @return 0; EMB_ENULL; EMB_EINVAL (ncolumns < 0, featuresize outside
 *         1..EMB_GPU_MAX_FEATURESIZE); EMB_EDTYPE; EMB_EOVERFLOW; EMB_ENODEV; EMB_ENOMEM;
 *         EMB_EDEVICE
 */
EMB_API int emb_gpu_table_create(EmbGpuTable **out, int64_t ncolumns, int32_t featuresize,
                                 EmbDtype dtype, const char *name, void *stream);

/** Frees a device table and its optimizer state (NULL is fine); sets `*t` to NULL. */
EMB_API void emb_gpu_table_destroy(EmbGpuTable **t);

/**
 * Copies every column of host table @p src (any table type) into @p dst and waits for
 * the copy. Shapes and dtypes must match.
 * @return 0; EMB_ENULL; EMB_ESHAPE; EMB_EDTYPE; EMB_ENOMEM; EMB_EDEVICE
 */
EMB_API int emb_gpu_table_upload(EmbGpuTable *dst, const EmbTable *src, void *stream);

/**
 * Copies @p src into host table @p dst (any table type; columns asked for with
 * EMB_CTX_UPDATE), after the work queued on @p stream; waits for the copy.
 * @return as emb_gpu_table_upload()
 */
EMB_API int emb_gpu_table_download(const EmbGpuTable *src, EmbTable *dst, void *stream);

/** Number of columns (0 for NULL). */
EMB_API int64_t emb_gpu_table_ncolumns(const EmbGpuTable *t);
/** Elements per column (0 for NULL). */
EMB_API int32_t emb_gpu_table_featuresize(const EmbGpuTable *t);
/** Storage element type. */
EMB_API EmbDtype emb_gpu_table_dtype(const EmbGpuTable *t);
/** Device storage and its column stride in elements in `*column_stride` (may be NULL). */
EMB_API void *emb_gpu_table_data(const EmbGpuTable *t, int64_t *column_stride);

/**
 * Pooled lookup of @p batch (device ids / offsets / weights) in @p table, writing one f32
 * row of featuresize per bag to device memory @p out with stride @p out_stride; semantics
 * of emb_lookup(). @p pooling NULL means SUM.
 * @return 0; EMB_ENULL; EMB_EINVAL; EMB_ESHAPE; EMB_EOFFSETS; EMB_ERANGE; EMB_ESTRIDE;
 *         EMB_EOVERFLOW; EMB_ENOTSUP (nnz + nbags >= 2^31); EMB_ENOMEM; EMB_EDEVICE.
 *         Nothing is written on failure.
 */
EMB_API int emb_gpu_lookup(const EmbGpuTable *table, const EmbBatch *batch,
                           const EmbPooling *pooling, float *out, int64_t out_stride,
                           unsigned flags, EmbGpuWorkspace *ws, void *stream);

/**
 * Table-batched lookup: batches[i] in tables[i] for every i < ntables, all in one launch,
 * into @p outputs (device buffers; either layout of EmbOutputs: per table, or the
 * concatenated nbags x (prependrows + Σ featuresize) matrix, whose first prependrows
 * elements per row are never written). @p poolings NULL: SUM for all.
 * @return as emb_gpu_lookup(); EMB_EINVAL (ntables <= 0); EMB_ESHAPE (nbags differ in the
 *         concat layout, concat_stride too small). Nothing is written on failure.
 */
EMB_API int emb_gpu_maplookup(EmbGpuTable *const *tables, int64_t ntables,
                              const EmbBatch *batches, const EmbPooling *poolings,
                              const EmbOutputs *outputs, unsigned flags,
                              EmbGpuWorkspace *ws, void *stream);

/** Fused optimizers of the GPU backward. */
typedef enum EmbGpuOptKind {
    EMB_GPU_SGD = 0,             /**< w -= lr·g */
    EMB_GPU_ROWWISE_ADAGRAD = 1, /**< h += mean(g²); w -= lr·g / (sqrt(h) + eps) (FBGEMM) */
    EMB_GPU_ADAM = 2,            /**< PyTorch SparseAdam: lazy moments, t = updates applied */
} EmbGpuOptKind;

/** An optimizer; zero-initialise and set kind and lr (beta1/beta2/eps 0: 0.9/0.999/1e-8). */
typedef struct EmbGpuOptimizer {
    EmbGpuOptKind kind;
    float lr;
    float eps;   /**< Adagrad and Adam (0: 1e-8; row-wise Adagrad too) */
    float beta1; /**< Adam */
    float beta2; /**< Adam */
} EmbGpuOptimizer;

/**
 * Backward of emb_gpu_lookup(table, batch, pooling) for the output gradient @p dy (device,
 * nbags rows of featuresize f32 at stride @p dy_stride), fused with @p opt: every distinct
 * column receives the sum of its gradients (duplicates accumulate; max_norm's Jacobian
 * uses the column before the update) and is updated once. The optimizer state (row-wise
 * Adagrad: one f32 per column; Adam: two f32 rows per column and the step count) lives in
 * the table, allocated zeroed on the first call; a table keeps one optimizer kind.
 * @return as emb_gpu_lookup(); EMB_EINVAL (bad optimizer, lr not finite, another kind than
 *         the table's state); EMB_ENOTSUP (ncolumns >= 2^32 - 1). Nothing is written on
 *         failure.
 */
EMB_API int emb_gpu_backward_update(EmbGpuTable *table, const EmbBatch *batch,
                                    const EmbPooling *pooling, const float *dy,
                                    int64_t dy_stride, const EmbGpuOptimizer *opt,
                                    unsigned flags, EmbGpuWorkspace *ws, void *stream);

#ifdef __cplusplus
}
#endif
#endif
