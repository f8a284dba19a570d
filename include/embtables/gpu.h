/* SPDX-License-Identifier: BSD-2-Clause */
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
 *  - messages of failures are read with emb_last_error() (this thread's; also under the
 *    name emb_gpu_last_error()), codes named
 *    by emb_strerror().
 *
 * Determinism: lookups and updates give bit-identical results run to run; the backward
 * uses no floating-point atomics (ids are radix-sorted, each distinct row's gradient is
 * reduced in a fixed order, hot rows split into fixed-size pieces combined in order).
 *
 * Concurrency: work is ordered on the stream you pass. Calls that read a device table may
 * be queued on several streams at once; a call that writes it (an update) must be ordered
 * after the reads and before later ones by your stream order or events. A workspace takes
 * one call at a time (one stream at a time); host-side calls on different tables and
 * workspaces may run from several threads at once.
 */
#ifndef EMBTABLES_GPU_H
#define EMBTABLES_GPU_H

#include "embtables/lookup.h"
#include "embtables/strategy.h"
#include "embtables/update.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest feature size the GPU kernels take (a row is held in registers). */
#define EMB_GPU_MAX_FEATURESIZE 1024

/** Flags of the GPU calls. */
enum {
    /** Do not wait for the stream: errors are reported by emb_gpu_workspace_check(). */
    EMB_GPU_DEFER_CHECK = 1 << 0,
    /**
     * emb_gpu_backward_update() of a bf16 table: round the updated rows stochastically
     * (up with probability equal to the fraction cut off, so small updates are not lost on
     * average, as FBGEMM offers) instead of to nearest even. The random bits hash the
     * table's seed (emb_gpu_table_set_seed()), its count of backward calls, the column and
     * the element: the same seed and calls give the same bits, those of the CPU's
     * EmbOptimizerConfig::stochastic_rounding at seed = its table's and step = calls.
     * f32 and f16 tables round to nearest even whatever this flag.
     */
    EMB_GPU_STOCHASTIC_ROUNDING = 1 << 1,
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
 * library, valid until the next failing call on this thread. The library has one error
 * channel: this is emb_last_error(), under the name existing code uses.
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
 * multiple of 16 bytes (4 f32 or 8 f16 / bf16 elements).
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

/**
 * Sets the seed of @p t's stochastic rounding (EMB_GPU_STOCHASTIC_ROUNDING; 0 by default)
 * and restarts its count of backward calls, so that the calls that follow draw the same
 * bits as after any other setting of the same seed.
 * @return 0; EMB_ENULL
 */
EMB_API int emb_gpu_table_set_seed(EmbGpuTable *t, uint64_t seed);

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
 * @param flags EMB_GPU_DEFER_CHECK (other bits but EMB_GPU_STOCHASTIC_ROUNDING: EMB_EINVAL)
 * @return 0; EMB_ENULL; EMB_EINVAL (bad enums, unknown flag or pooling flag bits, negative
 *         sizes); EMB_ESHAPE; EMB_EOFFSETS; EMB_ERANGE; EMB_ESTRIDE;
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

/**
 * Backward of emb_gpu_lookup(table, batch, pooling) for the output gradient @p dy (device,
 * nbags rows of featuresize f32 at stride @p dy_stride), fused with the optimizer @p opt:
 * every distinct column receives the sum of its gradients (duplicates accumulate; max_norm's
 * Jacobian uses the column before the update) and is updated once, as emb_update() does on
 * the CPU. @p opt is the CPU library's configuration (emb_optimizer_defaults(), update.h):
 * the same kinds, hyper-parameters, defaults and formulas. The GPU takes EMB_OPT_SGD,
 * EMB_OPT_ROWWISE_ADAGRAD and EMB_OPT_ADAM; placement and numa_node are ignored. The
 * optimizer state (row-wise Adagrad: one f32 per column, initial_accumulator; Adam: two f32
 * rows per column and the step count) lives in the table, created on the first call; a
 * table keeps one optimizer kind. Every call counts as a step for Adam's t, an empty batch
 * too (as emb_update()).
 * @return as emb_gpu_lookup(); EMB_EINVAL (a hyper-parameter emb_optimizer_create() would
 *         reject, another kind than the table's state); EMB_ENOTSUP (EMB_OPT_ADAGRAD or
 *         EMB_OPT_FTRL; ncolumns >= 2^32 - 1). Nothing is written on failure.
 */
EMB_API int emb_gpu_backward_update(EmbGpuTable *table, const EmbBatch *batch,
                                    const EmbPooling *pooling, const float *dy,
                                    int64_t dy_stride, const EmbOptimizerConfig *opt,
                                    unsigned flags, EmbGpuWorkspace *ws, void *stream);

#ifdef __cplusplus
}
#endif
#endif
