/* SPDX-License-Identifier: BSD-2-Clause */
/**
 * @file tiered.h
 * Tiered tables: tables larger than memory. The rows (and, when trained, their optimizer
 * state, kept beside each row so that both move together) live in a file; a DRAM cache of
 * a configurable byte size holds the hot rows; dirty rows are written back when evicted and
 * on emb_table_tiered_flush(). Results are bit-identical to the same table in memory, for
 * any cache size (down to one row), thread count, strategy and prefetch depth: the cache
 * changes where a row's bytes are, never what they are.
 *
 * - **The file is a working store, not a checkpoint.** Its rows are current only after
 *   emb_table_tiered_flush() (or emb_table_destroy(), which flushes). After a crash the
 *   file may hold a mix of old and new rows: restore the last checkpoint (store.h), which
 *   a tiered table saves and restores like any table.
 * - **Cache**: set-associative, 8 ways (fewer when it holds fewer rows), LRU or LFU within
 *   a set, optionally with TinyLFU admission (EmbTierPolicy); 16 bytes of index per cached
 *   row besides the records themselves. Rows of prefetched batches not yet looked up are
 *   not evicted by a later prefetch. A step whose
 *   rows do not fit (every way of a set pinned by the step) keeps the rest in a scratch
 *   pad for the step's duration, so no cache size is too small.
 * - **Pinning**: the rows an operation (a lookup, an update step, a save) uses stay
 *   resident until it ends, and a lookup's rows until the step's update: they stay pinned
 *   through a prefetch, a flush or emb_table_column_pointer() and are released by the next
 *   other operation (the update, the next lookup). No eviction moves a row under a running
 *   step, and the update takes the lookup's rows without looking them up again.
 * - **Prefetch**: emb_table_prefetch() with the next batch starts asynchronous, batched
 *   reads of its missing rows, so the step that uses them waits only for what has not
 *   arrived. A hint: it never fails and never changes results.
 * - **I/O**: the process's pool of pread / pwrite threads (16, shared by every tiered table;
 *   as many run at once as the reads need: twice the cores from the page cache, up to 16
 *   from a disk), reads copied from a populated mapping of the file, or io_uring (liburing)
 *   for the reads (writes stay in the pool) where asked for and the kernel allows it
 *   (EmbTieredOptions::engine, or the environment variable EMB_TIER_IO=uring|pread|map). The
 *   pool is the default (docs/guide/tiered-tables.md says when the mapping is faster).
 *   Buffered I/O (records are smaller than a disk block).
 * - **Row formats**: f32, f16, bf16 and the quantized EMB_INT8 / EMB_INT4 rows (common.h):
 *   a record holds the row's bytes as an in-memory table holds them (int8: D values, f32
 *   scale and bias), so a quantized tiered table caches more rows in the same bytes (at
 *   D = 64 with row-wise Adagrad: 3.1x for int8, 5x for int4), trains with the same
 *   stochastic rounding and checkpoints as the same U8 tensor.
 * - **Faults**: a failed read or write-back returns EMB_EIO naming the file and the rows;
 *   nothing is lost (a dirty row whose write-back failed stays cached and dirty) and the
 *   call can be retried. A write-back that fails where no call can report it (at the end
 *   of an operation, or sent by a prefetch) is retried by the next lookup or update, which
 *   fails with EMB_EIO naming those rows if it fails again, before doing anything else:
 *   a disk that takes no writes stops the training at the next step. An operation that
 *   fails writes nothing, as for any table. emb_table_initialize() (and an optimizer's
 *   attach, which writes the state's initial values) writes the new rows into a copy of
 *   the file, its blocks allocated first, renamed over it once whole: it needs room for a
 *   second file while it runs, and a full disk or an I/O error leaves the table as it was.
 *   A save reads the file (no mapping): a file cut by someone else fails it with EMB_EIO.
 *
 * Concurrency: one operation at a time per tiered table (lookups of one table from two
 * user threads at once are not supported); inside an operation any number of the library's
 * threads may resolve rows. The I/O threads are the library's own.
 *
 * Limits: a pointer from emb_table_column_pointer() stays valid until the table's next
 * lookup or update (the row stays pinned till then; a row that cannot be read gives a row of
 * zeros there: use lookups to see I/O errors). Whole-table calls (emb_table_read(),
 * emb_table_assign()) pin every row, so they need memory for the whole table. A lookup
 * resolves every row it reads (one batch of reads for its misses) before it writes any
 * output, so a failed emb_lookup() writes nothing; a strategy that splits one table's bags
 * among threads (emb_maplookup()) may have written the bags of the threads whose rows
 * were read. The update and the checkpoint calls write nothing when they fail.
 */
#ifndef EMBTABLES_TIERED_H
#define EMBTABLES_TIERED_H

#include "embtables/lookup.h"
#include "embtables/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Which cached row of a full set is evicted. */
typedef enum EmbTierPolicy {
    EMB_TIER_LRU = 0, /**< the least recently used */
    EMB_TIER_LFU = 1, /**< the least frequently used (counts halved when one saturates) */
    /** LRU, and a missing row takes a cached row's slot only when a frequency sketch of
        the recent look-ups (count-min, TinyLFU) counts it more often: rows seen once do
        not push out hot ones (they are read and written back without being cached) */
    EMB_TIER_LRU_ADMIT = 2,
    EMB_TIER_LFU_ADMIT = 3, /**< LFU with the admission of EMB_TIER_LRU_ADMIT */
} EmbTierPolicy;

/** The I/O engine of a tiered table. */
typedef enum EmbTierEngine {
    EMB_TIER_ENGINE_AUTO = 0,  /**< EMB_TIER_IO from the environment, else pread */
    EMB_TIER_ENGINE_URING = 1, /**< io_uring reads, pwrite writes (EMB_ENOTSUP where unavailable) */
    EMB_TIER_ENGINE_PREAD = 2, /**< a pool of pread / pwrite threads */
    EMB_TIER_ENGINE_MAP = 3,   /**< reads copied from a mapping of the file, populated ahead
                                    by the prefetch; pwrite writes (pread where the file
                                    cannot be mapped) */
} EmbTierEngine;

/** Options of emb_table_tiered_create() / _open(); zero-initialise and set what you need. */
typedef struct EmbTieredOptions {
    EmbTableOptions table;  /**< name, static_size, flags (placement, column_align: unused) */
    int64_t cache_bytes;    /**< DRAM for cached records (0: 64 MiB); at least one record */
    EmbTierPolicy policy;   /**< eviction policy */
    EmbTierEngine engine;   /**< I/O engine */
    int32_t state_width;    /**< create only: f32 of optimizer state kept beside each row
                                 (0: none, so SGD only). Per optimizer: Adagrad D, row-wise
                                 Adagrad 1, FTRL and Adam 2 x D; more is fine */
} EmbTieredOptions;

/**
 * A tiered table in a spec: EmbVariableSpec::tiered (store.h; so EmbCollection's specs
 * too) and EmbDistTableDesc::tiered (dist.h). The spec's shape, dtype, initializer and
 * table options are the table's; `options.table` is not read. A collection with an
 * optimizer sets `options.state_width` to what its optimizer keeps when it is 0
 * (emb_optimizer_state_width()).
 */
typedef struct EmbTieredSpec {
    const char *path;          /**< the backing file (created, or replaced when it
                                    exists, once the table is made); under MPI, each rank's part is the file
                                    `<path>.rank<R>` */
    EmbTieredOptions options;  /**< cache size, policy, engine, state room */
} EmbTieredSpec;

/**
 * Creates a tiered table of @p ncolumns rows of @p featuresize elements of @p dtype in the
 * file @p path (rows start as zeros: see emb_table_initialize()). The file is made beside
 * @p path under a new name, sized at once (sparse where the file system allows), and
 * renamed over @p path (a file there is replaced) only when the call succeeds: a failed
 * create leaves @p path as it found it. The table holds an exclusive lock (flock) on its
 * file until it is destroyed; the cache holds at most every row of the table.
 * @param out receives the table; untouched on failure
 * @return 0, EMB_ENULL, EMB_EINVAL (a bad option, a cache smaller than one record, @p path
 *         is not a regular file), EMB_EDTYPE, EMB_ESHAPE, EMB_EOVERFLOW, EMB_EIO (the file
 *         cannot be created or sized: the message names it), EMB_EBUSY (another table or
 *         process has the file at @p path), EMB_ENOTSUP (io_uring asked for and
 *         unavailable), EMB_ENOMEM
 */
EMB_API int emb_table_tiered_create(EmbTable **out, const char *path, int64_t ncolumns,
                                    int32_t featuresize, EmbDtype dtype,
                                    const EmbTieredOptions *opts);

/**
 * Opens the tiered table in @p path (written by emb_table_tiered_create() and flushed),
 * with its shape and state room from the file's header.
 * The table holds an exclusive lock (flock) on the file until it is destroyed.
 * @return 0, EMB_ENULL, EMB_EINVAL (a bad option; not a regular file: a FIFO is refused,
 *         not waited on), EMB_ENOTFOUND (no such file), EMB_EIO (it cannot be opened for
 *         reading and writing), EMB_ECORRUPT (not a tiered table's file, or short: the
 *         message names the missing rows), EMB_EBUSY (another table or process has it
 *         open), EMB_ENOTSUP, EMB_ENOMEM
 */
EMB_API int emb_table_tiered_open(EmbTable **out, const char *path,
                                  const EmbTieredOptions *opts);

/** 1 when @p t is a tiered table, else 0. */
EMB_API int emb_table_is_tiered(const EmbTable *t);

/**
 * Writes every dirty row back and syncs the file. The rows become clean only once the
 * sync has succeeded: after a failed write or sync every dirty row stays cached and
 * dirty, and calling again writes them all again. A file shorter than the table (cut by
 * someone else) fails with EMB_EIO before anything is written.
 * @return 0, EMB_ENULL, EMB_EINVAL (not a tiered table), EMB_EIO (naming the file and
 *         the rows), EMB_ENOMEM
 */
EMB_API int emb_table_tiered_flush(EmbTable *t);

/** Counters of a tiered table since its creation. */
typedef struct EmbTieredStats {
    int64_t hits;          /**< rows found resident when resolved (a lookup of 64 ids or
                                more, and an update, count each distinct id once) */
    int64_t misses;        /**< rows read because they were not (counted as hits are) */
    int64_t prefetched;    /**< rows whose read a prefetch started */
    int64_t rows_read;     /**< records read from the file */
    int64_t rows_written;  /**< records written back */
    int64_t evictions;     /**< cached rows replaced */
    int64_t scratch_rows;  /**< rows a step kept in the scratch pad (its sets were pinned) */
    int64_t cache_rows;    /**< records the cache holds */
    int64_t record_bytes;  /**< bytes of one record (row + state, padded) */
    int64_t dirty_rows;    /**< rows not yet written back now */
    const char *engine;    /**< "io_uring", "mmap" or "pread" (static) */
    /* the write-back log (docs/design/tiered-tables.md) */
    int64_t log_bytes_appended;  /**< bytes appended to the log and written (write-backs
                                      and compaction's moves) */
    int64_t log_segments;        /**< log segments begun (a new or recycled segment that
                                      appends started to fill) */
    int64_t log_compactions;     /**< compactions completed (each rewrites the live records
                                      of up to 2 segments less than 2/3 live) */
    int64_t log_bytes_compacted; /**< bytes compaction rewrote (moved records) */
    int64_t log_compact_ns;      /**< time the table's calls spent on compaction, in ns
                                      (choosing, scanning the row map, queuing: its reads
                                      and writes run on the I/O threads) */
    double log_live_fraction;    /**< of the log's record slots now, the fraction holding a
                                      row's newest copy (1 with no log yet) */
} EmbTieredStats;

/** @return 0, EMB_ENULL, EMB_EINVAL (not a tiered table) */
EMB_API int emb_table_tiered_stats(const EmbTable *t, EmbTieredStats *out);

/**
 * Tells @p t that @p batch will be looked up or trained soon: the rows it misses are read
 * asynchronously, in one batch. For any table (a no-op for tables held in memory); a hint
 * that never changes results. Ids out of range are ignored (the lookup reports them).
 * @return 0, EMB_ENULL
 */
EMB_API int emb_table_prefetch(EmbTable *t, const EmbBatch *batch);

#ifdef __cplusplus
}
#endif
#endif
