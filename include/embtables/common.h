/* SPDX-License-Identifier: BSD-2-Clause */
/**
 * @file common.h
 * Error codes, element types, the logger, CPU-feature control and the machine (memory
 * placement, thread pinning, cores) shared by every part of embtables.
 *
 * Conventions of the whole API:
 *  - every function that can fail returns 0 or a negative EMB_E* code; emb_strerror() names
 *    the code and emb_last_error() gives this thread's detailed message of the last failure
 *    (which id, at which position, of which table);
 *  - input is validated before anything is written: a failed call leaves every table and
 *    every output buffer as it was;
 *  - ids are 0-based; handles are opaque; every destroy accepts NULL and sets the caller's
 *    pointer to NULL;
 *  - the library never prints and never aborts: diagnostics go to the logger callback.
 *
 * Concurrency (docs/guide/reference.md has the whole contract): calls on
 * different objects may run at once; calls that only read a table may run at once with
 * each other; a call that writes a table needs it (and its shards) to itself; an
 * optimizer, indexer, strategy, gradient holder or saver takes one call at a time.
 * emb_set_logger() and emb_set_cpu_mask() need no other thread inside the library;
 * emb_last_error() is per thread.
 */
#ifndef EMBTABLES_COMMON_H
#define EMBTABLES_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define EMB_API __declspec(dllexport)
#elif defined(__GNUC__)
#define EMB_API __attribute__((visibility("default")))
#else
#define EMB_API
#endif

/** Error codes (all negative; 0 is success). */
enum {
    EMB_OK = 0,
    EMB_EINVAL = -1,    /**< an argument is invalid (a bad enum, a negative size, ...) */
    EMB_ENULL = -2,     /**< a required pointer is NULL */
    EMB_ENOMEM = -3,    /**< an allocation failed */
    EMB_ERANGE = -4,    /**< an id is outside [0, ncolumns) */
    EMB_EOFFSETS = -5,  /**< bag offsets do not start at 0, are not monotone or do not end at nnz */
    EMB_ESTRIDE = -6,   /**< an output or column stride is smaller than the feature size */
    EMB_EDTYPE = -7,    /**< an element type does not match or is not supported */
    EMB_EOVERFLOW = -8, /**< a size computation would overflow */
    EMB_ENOTSUP = -9,   /**< the request is valid but not implemented by this build */
    EMB_ESHAPE = -10,   /**< shapes do not agree (feature sizes, bag counts, shard sizes) */
    EMB_EIO = -11,      /**< a file could not be read or written */
    EMB_ECORRUPT = -12, /**< a file is corrupt or truncated */
    EMB_ENODEV = -13,   /**< no device (GPU) is available */
    EMB_EDEVICE = -14,  /**< a device (CUDA) call failed */
    EMB_ENOTFOUND = -15,/**< a named object does not exist */
    EMB_EEXIST = -16,   /**< a named object exists already */
    EMB_ENONFINITE = -17, /**< a NaN or infinity where the table asks for finite values
                               (EMB_TABLE_CHECK_FINITE) */
    EMB_EBUSY = -18,    /**< a resource is in use by another user (a tiered table's file) */
};

/**
 * Element type of a table's storage. Lookups always accumulate and write f32.
 *
 * The row-wise quantized types store a row as its quantized values followed by the row's
 * scale and bias; element i is `q[i] * scale + bias`. Their rows are the formats of
 * PyTorch / FBGEMM, so rows prepacked there can be wrapped without a copy:
 * - EMB_INT8: D uint8, then an f32 scale and an f32 bias (D + 8 bytes; the layout of
 *   `torch.ops.quantized.embedding_bag_byte_prepack`, FBGEMM's fused 8-bit rows).
 * - EMB_INT4: D / 2 bytes, element 2j in the low nibble of byte j and 2j + 1 in its high
 *   nibble, then an f16 scale and an f16 bias (D / 2 + 4 bytes; the layout of
 *   `torch.ops.quantized.embedding_bag_4bit_prepack`). D must be even.
 *
 * A pooled lookup over quantized rows adds a bag's rows in bag order, each element as
 * acc[i] + fma(q[i], w * scale, w * bias): the row's term in one rounding, then one add.
 * Every path (any strategy, thread count, table kind, a bag pooled at once or in pieces)
 * gives the same bits. A gather gives the dequantized value `q[i] * scale + bias`
 * (rounded twice), which a bag of one row may differ from in the last bit; bags agree with
 * torch's quantized embedding bags (and with f32 rows of the dequantized values) within
 * f32 rounding, not bit for bit.
 *
 * Non-finite values and the quantized types: one row has one scale and one bias, so it
 * cannot hold a NaN or an infinity in one element. A row written from f32 values of which
 * any is NaN or infinite (emb_table_quantize(), the assigns and scatters, an update's
 * result) becomes NaN whole: scale and bias NaN, every element reads NaN and every bag
 * holding the row pools NaN, as a NaN in an f32 row would show, never a row that silently
 * reads finite. (torch's byte / 4-bit prepack follow no such rule: a NaN there changes the
 * row or is lost depending on where it is.) With EMB_TABLE_CHECK_FINITE (table.h) such a
 * write is refused instead, EMB_ENONFINITE naming the table, row and element, nothing
 * written: by the assigns, scatters and emb_table_quantize() (their inputs), by
 * emb_table_wrap() and a checkpoint restore (every element of every row as it reads: a
 * finite scale and bias whose values overflow are refused too); an update checks its
 * gradients, and its rows follow the rule above.
 */
typedef enum EmbDtype {
    EMB_F32 = 0,  /**< IEEE binary32 */
    EMB_F16 = 1,  /**< IEEE binary16 */
    EMB_BF16 = 2, /**< bfloat16 (upper half of a binary32) */
    EMB_INT8 = 3, /**< row-wise quantized, 8 bits a value, f32 scale and bias */
    EMB_INT4 = 4, /**< row-wise quantized, 4 bits a value, f16 scale and bias */
} EmbDtype;

/**
 * Size in bytes of one element of @p dtype; 0 for an unknown dtype and for the row-wise
 * quantized types, whose elements are not whole bytes of their own (emb_dtype_row_bytes()).
 */
EMB_API size_t emb_dtype_size(EmbDtype dtype);
/**
 * Bytes of one row of @p featuresize elements of @p dtype (scale and bias included for the
 * quantized types); 0 for an unknown dtype, a featuresize < 1 or an odd one for EMB_INT4.
 */
EMB_API size_t emb_dtype_row_bytes(EmbDtype dtype, int32_t featuresize);
/** Name of @p dtype ("f32", "f16", "bf16", "int8", "int4"), or "?" */
EMB_API const char *emb_dtype_name(EmbDtype dtype);

/** Static description of an error code ("id out of range", ...). Never NULL. */
EMB_API const char *emb_strerror(int code);

/**
 * This thread's message for the last failed call, naming the culprit, e.g.
 * `id 1000 at position 17 is not in [0, 1000) (table "user_id")`. Empty when no call has
 * failed on this thread. The string is owned by the library and valid until the next
 * failing call on this thread.
 */
EMB_API const char *emb_last_error(void);

/**
 * Records @p code's message for this thread (what emb_last_error() then returns) and
 * returns @p code: the one error channel, for code outside the core that reports through
 * it: the companion libraries (embtables_gpu, embtables_mpi: their emb_gpu_last_error()
 * and emb_dist_last_error() are this channel), and the callbacks of custom tables and
 * strategies. printf-style; an argument may be emb_last_error() itself (e.g. to prefix
 * it). The message is cut at 511 bytes.
 */
EMB_API int emb_set_error(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** Log levels, most severe first. */
typedef enum EmbLogLevel {
    EMB_LOG_ERROR = 0,
    EMB_LOG_WARN = 1,
    EMB_LOG_INFO = 2,
    EMB_LOG_DEBUG = 3,
} EmbLogLevel;

/** A logger: receives every diagnostic the library has (the library itself never prints). */
typedef void (*emb_log_fn)(void *user, EmbLogLevel level, const char *message);

/**
 * Sets the process-wide logger (NULL: diagnostics are dropped, the default) and the most
 * verbose level it receives. Not thread-safe against concurrent calls into the library.
 */
EMB_API void emb_set_logger(emb_log_fn fn, void *user, EmbLogLevel max_level);

/** CPU features used by the kernels (bit flags). */
enum {
    EMB_CPU_AVX2 = 1 << 0,       /**< AVX2 + FMA */
    EMB_CPU_F16C = 1 << 1,       /**< F16C half-precision conversions */
    EMB_CPU_AVX512 = 1 << 2,     /**< AVX-512 F + BW + VL + DQ */
    EMB_CPU_AVX512BF16 = 1 << 3, /**< AVX512-BF16 */
};

/** The features of this CPU (detected once), before any mask. */
EMB_API unsigned emb_cpu_detected(void);

/** The features the kernels use now: detected & mask. */
EMB_API unsigned emb_cpu_flags(void);

/**
 * Restricts the kernels to the features in @p mask (0 forces the C references) and
 * re-selects every kernel. The environment variable `EMB_CPU_MASK` (a number, e.g. `0`,
 * `0x3`) sets the initial mask. Call it while no other thread is inside the library.
 */
EMB_API void emb_set_cpu_mask(unsigned mask);

/**
 * The library's version at run time, "MAJOR.MINOR.PATCH" (the headers' is
 * EMB_VERSION_MAJOR etc. of version.h). Never NULL.
 */
EMB_API const char *emb_version(void);

/** Where an owned table's memory is placed (needs hwloc; otherwise DEFAULT is used). */
typedef enum EmbPlacement {
    EMB_PLACE_DEFAULT = 0,    /**< wherever the allocator puts it (first touch) */
    EMB_PLACE_LOCAL = 1,      /**< the NUMA node of the calling thread */
    EMB_PLACE_INTERLEAVE = 2, /**< pages interleaved over all NUMA nodes */
    EMB_PLACE_NODE = 3,       /**< NUMA node EmbTableOptions::numa_node */
} EmbPlacement;

/**
 * Thread pinning orders (need hwloc; otherwise ignored). Thread 0 of a strategy is the
 * calling thread, so a pinning strategy pins the caller too (as OMP_PROC_BIND does); a
 * thread stays pinned after the call.
 */
typedef enum EmbPinning {
    EMB_PIN_NONE = 0,    /**< leave threads where the OS puts them */
    EMB_PIN_COMPACT = 1, /**< thread k on physical core k */
    EMB_PIN_SCATTER = 2, /**< round-robin over NUMA nodes (one node: over L3 caches) */
} EmbPinning;

/* The vocabulary the core, the kernels and the API share (the optimizer kinds, the
   initializers): here so that src/ headers below the API need no other public header. */

/** How a bag's columns are combined. */
typedef enum EmbCombiner {
    EMB_COMBINER_NONE = 0,  /**< gather: one output per id */
    EMB_COMBINER_SUM = 1,
    EMB_COMBINER_MEAN = 2,
    EMB_COMBINER_SQRTN = 3,
    /** element-wise maximum over the bag's kept columns (torch's mode='max'): an empty bag
        gives zeros (or its default column); no per-id weights, no max_norm (EMB_EINVAL).
        Its backward sends each element's gradient to the column that gave that element's
        maximum, the first such entry of the bag on ties (an id repeated in a bag counts
        once). NaN: an element stays the first entry's when no later one compares greater. */
    EMB_COMBINER_MAX = 4,
} EmbCombiner;

/** Optimizer kinds (formulas per distinct column with accumulated gradient g). */
typedef enum EmbOptimizerKind {
    EMB_OPT_SGD = 0,             /**< w -= lr·g */
    EMB_OPT_ADAGRAD = 1,         /**< h += g²; w -= lr·g / (sqrt(h) + eps)  (PyTorch) */
    EMB_OPT_ROWWISE_ADAGRAD = 2, /**< h += mean(g²) (one h per column);
                                      w -= lr·g / (sqrt(h) + eps)  (FBGEMM) */
    EMB_OPT_FTRL = 3,            /**< TF ApplyFtrl (lr_power, l1, l2, accumulator) */
    EMB_OPT_ADAM = 4,            /**< PyTorch SparseAdam (lazy moments, t per table) */
    EMB_OPT_ROWWISE_ADAGRAD_COUNTER = 5, /**< FBGEMM's rowwise_adagrad_with_counter: row-wise
                                      Adagrad with a per-row counter (EmbOptimizerConfig's
                                      counter fields; docs/guide/training.md) */
} EmbOptimizerKind;

/** Initializer kinds (TF's names). */
typedef enum EmbInitKind {
    EMB_INIT_NONE = 0,          /**< leave the table as created (zeros); reported uninitialized */
    EMB_INIT_ZEROS = 1,
    EMB_INIT_ONES = 2,
    EMB_INIT_CONSTANT = 3,      /**< every element = a */
    EMB_INIT_UNIFORM = 4,       /**< uniform in [a, b) */
    EMB_INIT_NORMAL = 5,        /**< normal, mean a, stddev b */
    EMB_INIT_TRUNCATED_NORMAL = 6, /**< normal(a, b) redrawn while more than 2 b from a */
    EMB_INIT_UNIFORM_UNIT_SCALING = 7, /**< uniform in ±a·sqrt(3 / ncolumns) (TF: input
                                          size = product of all but the last dimension) */
} EmbInitKind;

/** An initializer: kind, its two parameters and a seed. */
typedef struct EmbInitializer {
    EmbInitKind kind; /**< which initializer */
    float a;       /**< constant value / minval / mean / factor */
    float b;       /**< maxval / stddev */
    uint64_t seed; /**< seed of the random kinds */
} EmbInitializer;

/** Physical cores this process may use (hwloc; online processors without it). */
EMB_API int emb_num_physical_cores(void);
/** NUMA nodes of the machine (1 without hwloc). */
EMB_API int emb_num_numa_nodes(void);

#ifdef __cplusplus
}
#endif
#endif
