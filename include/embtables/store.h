/* SPDX-License-Identifier: BSD-2-Clause */
/**
 * @file store.h
 * Initializers, a named store of tables (tf.get_variable's get-or-create with reuse) and
 * checkpoints (tf.train.Saver: save with a global step, restore, max_to_keep,
 * keep_checkpoint_every_n_hours, latest_checkpoint, atomic writes, a checksum).
 *
 * Initializers are counter-based: element i of column c gets a value that depends only on
 * (seed, c, i), so a table is initialised identically whatever the thread count or the
 * table type (a partitioned table gives the values of one unpartitioned table). A
 * checkpoint stores tables by name in global column order, so a partitioned table restores
 * into an unpartitioned one of the same shape and back (TF cannot re-shard a checkpoint),
 * with the optimizer's state.
 *
 * Concurrency: emb_table_initialize() and emb_checkpoint_restore() write tables (nothing
 * else may use them meanwhile); emb_saver_save() only reads them. emb_store_find / list /
 * uninitialized may run at once; emb_store_get and emb_store_mark_initialized need the
 * store to themselves. A saver takes one call at a time; emb_checkpoint_latest() may run
 * anywhere.
 */
#ifndef EMBTABLES_STORE_H
#define EMBTABLES_STORE_H

#include "embtables/table.h"
#include "embtables/update.h"

#ifdef __cplusplus
extern "C" {
#endif


/**
 * Fills every column of @p table (any table type, through its column pointers with
 * context UPDATE) from @p init. Values are rounded to the table's dtype. A dynamic table
 * (dynamic.h): every row it has gets the values a row created under @p init gets (a
 * function of its id), and @p init becomes the initializer of the rows it creates later;
 * its optimizer state is not touched. EMB_INIT_NONE changes nothing.
 * @return 0, EMB_ENULL, EMB_EINVAL (unknown kind, b < a for UNIFORM, stddev < 0,
 *         UNIFORM_UNIT_SCALING for a dynamic table),
 *         EMB_ENONFINITE (a or b NaN or infinite, when the table has
 *         EMB_TABLE_CHECK_FINITE)
 */
EMB_API int emb_table_initialize(EmbTable *table, const EmbInitializer *init);

/** Opaque named store of tables. */
typedef struct EmbStore EmbStore;

/** Creates an empty store. @return 0, EMB_ENULL, EMB_ENOMEM */
EMB_API int emb_store_create(EmbStore **out);
/** Destroys the store and every table it created (NULL is fine); sets `*s` to NULL. */
EMB_API void emb_store_destroy(EmbStore **s);

/** What emb_store_get() may do (tf.variable_scope's reuse). */
typedef enum EmbReuse {
    EMB_REUSE_NO = 0,   /**< create; EMB_EEXIST if the name exists */
    EMB_REUSE_YES = 1,  /**< return the existing table; EMB_ENOTFOUND if none */
    EMB_REUSE_AUTO = 2, /**< return it if it exists (shapes checked), else create */
} EmbReuse;

struct EmbDynamicOptions; /* dynamic.h */
struct EmbTieredSpec;     /* tiered.h */

/** What a table in the store looks like. */
typedef struct EmbVariableSpec {
    const char *name;        /**< unique, non-empty, at most EMB_NAME_MAX bytes */
    int64_t ncolumns;        /**< columns (rows of the TF variable); 0 for a dynamic table */
    int32_t featuresize;     /**< elements per column */
    EmbDtype dtype;          /**< storage element type */
    EmbInitializer init;     /**< applied at creation (EMB_INIT_NONE: left to the caller) */
    int trainable;           /**< kept for emb_store_list(trainable_only) */
    EmbTableOptions options; /**< placement, static size, alignment (name is ignored) */
    int32_t nshards;         /**< > 1: a partitioned table of nshards owned shards (choose
                                  it with partition.h's emb_partition_* helpers); 0 or 1:
                                  one table; negative: EMB_EINVAL */
    unsigned partition;      /**< with nshards > 1: EMB_PARTITION_MOD or EMB_PARTITION_DIV
                                  (other bits: EMB_EINVAL) */
    const struct EmbDynamicOptions *dynamic; /**< non-NULL: a dynamic table (dynamic.h) of
                                  these options (capacity, max_rows, missing, admission),
                                  ncolumns 0; `init` is the initializer of its rows, applied
                                  to each when it is created, and `options` its table
                                  options (the fields `init` and `table` of *dynamic are not
                                  read); nshards > 1: a table partitioned (partition must be
                                  EMB_PARTITION_MOD) over dynamic shards "<name>/part_<i>",
                                  capacity and max_rows split evenly (rounded up) */
    const struct EmbTieredSpec *tiered; /**< non-NULL: a tiered table (tiered.h) in the
                                  file tiered->path, with its cache options; neither
                                  dynamic nor partitioned (EMB_EINVAL) */
} EmbVariableSpec;

/**
 * Gets or creates the table @p spec names. The store owns the tables it creates; `*out`
 * stays valid until the store is destroyed.
 * @return 0, EMB_ENULL, EMB_EINVAL (empty or too long name; a dynamic spec with ncolumns
 *         other than 0), EMB_EEXIST, EMB_ENOTFOUND, EMB_ESHAPE (an existing table of another
 *         shape or dtype, or dynamic where the spec is not or back), EMB_EINVAL (a dynamic
 *         spec with nshards > 1 not EMB_PARTITION_MOD; a tiered spec that is dynamic or
 *         partitioned), EMB_ESHAPE (an existing table tiered where the spec is not or back),
 *         and the codes of emb_table_create(), emb_table_dynamic_create() or
 *         emb_table_tiered_create()
 */
EMB_API int emb_store_get(EmbStore *s, const EmbVariableSpec *spec, EmbReuse reuse,
                          EmbTable **out);

/** Finds a table by name. @return 0, EMB_ENULL, EMB_ENOTFOUND */
EMB_API int emb_store_find(const EmbStore *s, const char *name, EmbTable **out);

/**
 * Lists the store's tables in creation order: writes up to @p cap of them to @p tables
 * (may be NULL when cap is 0) and their total number to `*n`.
 * @param trainable_only list only trainable tables
 * @return 0, EMB_ENULL, EMB_EINVAL (cap < 0)
 */
EMB_API int emb_store_list(const EmbStore *s, int trainable_only, EmbTable **tables,
                           int64_t cap, int64_t *n);

/**
 * tf.report_uninitialized_variables: lists (as emb_store_list) the tables created with
 * EMB_INIT_NONE that no initializer, restore or emb_store_mark_initialized has filled.
 */
EMB_API int emb_store_uninitialized(const EmbStore *s, EmbTable **tables, int64_t cap,
                                    int64_t *n);

/** Records that the caller filled @p table itself (assign, copy). @return 0, EMB_ENULL, EMB_ENOTFOUND */
EMB_API int emb_store_mark_initialized(EmbStore *s, const EmbTable *table);

/**
 * Streaming of touched rows (online training publishing increments, Monolith's pattern):
 * the columns of @p table written since its write count was @p since, in increasing
 * order, and their values. Tracked writes are the update steps (emb_update,
 * emb_update_many, collections) and the scatter ops; an untracked write
 * (emb_table_initialize, a restore, emb_table_column_pointer for EMB_CTX_UPDATE,
 * emb_table_assign*) counts every column as written. Nothing is written to a file and
 * no value changes. The first call starts the table's write clocks (4 bytes a column,
 * allocated then) and lists every column; call it with @p since 0 first, then with the
 * `*now` of the last call. Not while the table is being written.
 * @param table  the table (not dynamic)
 * @param since  a write count returned in `*now` before (0: every column)
 * @param ids    up to @p cap ids (may be NULL when cap is 0)
 * @param rows   NULL, or up to @p cap rows of their values as f32, @p stride apart
 *               (not for a tiered table: read those with a lookup)
 * @param stride floats between rows (>= featuresize when rows is not NULL)
 * @param cap    entries of ids and rows
 * @param n      the number of such columns (may exceed cap: call again with room)
 * @param now    the table's write count now (may be NULL)
 * @return 0, EMB_ENULL, EMB_EINVAL (cap < 0, ids NULL with cap > 0, since < 0 or above
 *         the write count), EMB_ESTRIDE, EMB_EOVERFLOW (stride), EMB_ENOTSUP (a dynamic
 *         table; rows of a tiered table), EMB_ENOMEM (the first call)
 */
EMB_API int emb_table_changed_since(const EmbTable *table, int64_t since, int64_t *ids,
                                    float *rows, int64_t stride, int64_t cap, int64_t *n,
                                    int64_t *now);

/* ---- checkpoints ------------------------------------------------------------------- */

/*
 * A checkpoint is a safetensors file (`<prefix>-<step>.safetensors`): numpy, PyTorch and
 * the safetensors package open it without this library. Every table is a tensor of shape
 * [ncolumns, featuresize] in global column order (so a partitioned table restores into
 * any shard count, its optimizer state included), dtype F32, F16 or BF16; optimizer
 * state tensors are named `<table>/<kind>.<slot>` (F32). Our metadata (partitioning,
 * optimizer kind and hyper-parameters, steps, an xxHash of every tensor and of the
 * header) is JSON in `__metadata__`. A dynamic table (dynamic.h) is its rows in id order
 * with `<table>/dynamic.ids` and `/dynamic.last` (I64) and `/dynamic.sketch` (U16); it
 * restores only into a dynamic table, of any capacity, replacing its rows. docs/format.md
 * describes the format.
 */

/** The file name extension of checkpoints. */
#define EMB_CHECKPOINT_EXT ".safetensors"

/** A table under a checkpoint name (TF's var_list as a dict). */
typedef struct EmbCheckpointVar {
    const char *name; /**< name in the checkpoint; NULL: the table's own name */
    EmbTable *table;  /**< the table saved from or restored into */
} EmbCheckpointVar;

/** Opaque checkpoint writer for one directory (tf.train.Saver). */
typedef struct EmbSaver EmbSaver;

/** The max_to_keep of a saver created without options (TF's default). */
#define EMB_SAVER_DEFAULT_MAX_TO_KEEP 5

/** Saver options; NULL options: max_to_keep 5 and nothing else. */
typedef struct EmbSaverOptions {
    int32_t max_to_keep;         /**< most recent checkpoints kept; 0 (as in TF) or < 0: all */
    double keep_every_n_hours;   /**< also keep one checkpoint per this many hours (0: off;
                                      NaN, negative or > 1e9: EMB_EINVAL) */
    const EmbCheckpointVar *var_list; /**< the tables to save and their names (NULL: every
                                           table of the store under its own name); kept by
                                           pointer, alive while the saver saves */
    int64_t nvars;               /**< entries of var_list */
    const EmbOptimizer *optimizer; /**< its state of the saved tables (slots and steps) is
                                        saved with them (NULL: no state); kept by pointer */
    int32_t full_every;          /**< delta checkpoints: 0 (default): every save is full;
                                      N > 0: a save writes only the rows touched since this
                                      saver's previous save (a delta, linked to that file),
                                      and every (N+1)-th save of a chain is full again. A save
                                      is full anyway when the index's latest is not this
                                      saver's last file, or a table cannot be in a delta
                                      (dynamic, tiered, a row-listing kind; a table written
                                      untracked: initialized, restored, a column pointer
                                      taken for UPDATE). Negative: EMB_EINVAL.
                                      docs/guide/checkpoints.md "Delta checkpoints" */
} EmbSaverOptions;

/**
 * Creates a saver writing `<dir>/<prefix>-<step>.safetensors` and the index
 * `<dir>/checkpoint`. Checkpoints of this prefix already listed in the index are managed
 * as if this saver had written them; other entries are ignored (never deleted). A
 * missing @p dir is created with its missing parents (`mkdir -p`: mode 0777 less the
 * umask), after every argument is checked.
 * @return 0, EMB_ENULL, EMB_EINVAL (a prefix that is empty, longer than 100 bytes, starts
 *         with '.' or has a '/', '\\', a space or a control character; a bad var_list or
 *         keep_every_n_hours; dir empty or longer than 3776 bytes),
 *         EMB_EIO (dir cannot be created, the message naming the part that cannot; the
 *         index unreadable), EMB_ENOMEM
 */
EMB_API int emb_saver_create(EmbSaver **out, const char *dir, const char *prefix,
                             const EmbSaverOptions *opts);
/** Destroys a saver (files stay); NULL is fine; sets `*s` to NULL. */
EMB_API void emb_saver_destroy(EmbSaver **s);

/**
 * Writes the tables (every table of @p store, or the saver's var_list; @p store may then
 * be NULL) to a new checkpoint for @p global_step. The file is written under a temporary
 * name unique to the call, synced and renamed into place; then the index is replaced
 * atomically the same way, and only then are checkpoints beyond max_to_keep deleted (a
 * crash at any point leaves an index whose every entry exists). Temporaries left by
 * crashed saves of this prefix are deleted first. Thread-safe for one saver or several:
 * the saves of every saver of the directory, in this process or another, take turns (an
 * exclusive flock() of the directory) and each re-reads the index first, so savers of one
 * directory and prefix keep one list and one max_to_keep. The checkpoint's path goes to
 * @p path (cap bytes; may be NULL).
 * @return 0, EMB_ENULL, EMB_EIO, EMB_ENOMEM, EMB_EINVAL (global_step < 0, path does not
 *         fit in cap, two tensors of one name, an unnamed table); on failure the index is
 *         unchanged
 */
EMB_API int emb_saver_save(EmbSaver *s, const EmbStore *store, int64_t global_step, char *path,
                           size_t cap);

/**
 * Restores the tables of a checkpoint into the store's tables of the same names. The whole
 * file is verified first (header and every tensor's checksum, then every table present in
 * the store with the same shape and dtype): on any failure no table is touched. Tables of
 * the store absent from the file are left as they are. The global step goes to
 * `*global_step` (may be NULL). Optimizer state in the file is ignored (a dynamic table's
 * restored rows get fresh state from an optimizer that keeps state for it).
 * @return 0, EMB_ENULL, EMB_EIO, EMB_ECORRUPT (not safetensors, truncated, a checksum
 *         mismatch, a negative global_step, a dynamic table's ids repeated, negative or out
 *         of order),
 *         EMB_ENOTSUP (the older embtables format), EMB_ENOTFOUND (a table of the file is
 *         not in the store), EMB_ENONFINITE (a value of the file that reads NaN or
 *         infinite, for a table with EMB_TABLE_CHECK_FINITE: naming table, row, element), EMB_ESHAPE (also: a dynamic table's checkpoint into another
 *         table or back, an admission sketch of another width), EMB_ENOMEM (also: more
 *         rows than a dynamic table's max_rows)
 */
EMB_API int emb_checkpoint_restore(EmbStore *store, const char *path, int64_t *global_step);

/** emb_checkpoint_restore_ex() options; zero-initialise. */
typedef struct EmbRestoreOptions {
    const EmbCheckpointVar *var_list; /**< restore these (each must be in the file) instead
                                           of the store's tables; other tensors are skipped */
    int64_t nvars;                    /**< entries of var_list */
    EmbOptimizer *optimizer; /**< restore its state of the restored tables: the file must
                                  hold state of the same kind (EMB_EINVAL otherwise); a
                                  table saved without state gets none (as before its first
                                  update). Hyper-parameters are not changed. */
} EmbRestoreOptions;

/**
 * emb_checkpoint_restore() with a name map and optimizer state. Train, save, restore into
 * fresh tables and a fresh optimizer of the same kind, train on: the same bits as training
 * straight through. @p store may be NULL with a var_list.
 * @return as emb_checkpoint_restore(); EMB_EINVAL (another optimizer kind),
 *         EMB_ENOTFOUND (a var_list name or the state the optimizer needs is not in it)
 */
EMB_API int emb_checkpoint_restore_ex(EmbStore *store, const char *path,
                                      const EmbRestoreOptions *opts, int64_t *global_step);

/**
 * Path of the most recent checkpoint in @p dir's index, into @p path (cap bytes). The
 * index's entry must be a plain file name (no '/', not "." or ".."): anything else is
 * EMB_ECORRUPT, never a path outside @p dir.
 * @return 0, EMB_ENULL, EMB_ENOTFOUND (no index or empty), EMB_EIO, EMB_ECORRUPT,
 *         EMB_EINVAL (too long)
 */
EMB_API int emb_checkpoint_latest(const char *dir, char *path, size_t cap);

/** emb_store_export() options; zero-initialise. */
typedef struct EmbExportOptions {
    EmbDtype dtype;      /**< EMB_F32 (0): rows as stored; EMB_INT8 / EMB_INT4: every table
                              of another dtype quantized row-wise (emb_table_quantize) */
    const EmbCheckpointVar *var_list; /**< the tables and their names (NULL: every table of
                                           the store under its own name) */
    int64_t nvars;       /**< entries of var_list */
    int64_t global_step; /**< recorded in the file (>= 0) */
    int prune_untouched; /**< non-zero: prune the rows that touched-row tracking does not
                              list: never written since the table was made or restored, or
                              since its last save with deltas (none after an untracked
                              write) */
    float prune_norm;    /**< > 0: prune the rows whose L2 norm is under it (f32 tables) */
} EmbExportOptions;

/**
 * The serving export: writes the tables to one checkpoint file at @p path without
 * optimizer state, optionally quantized, under a temporary name renamed into place (an
 * existing @p path is replaced whole or not at all). emb_checkpoint_open() with
 * EMB_CHECKPOINT_MMAP then serves its tables with no copy (every lookup form reads int8 /
 * int4 tables), and python/embtables_ckpt.py reads it. A dynamic table is exported as
 * stored (its ids and rows) and cannot be quantized (EMB_ENOTSUP).
 * With pruning (prune_untouched, prune_norm) a table of the simple kind keeps only its other
 * rows, with an id remapping (docs/format.md "Pruned tables": a dense int32 array, id to
 * row or -1); its mapped table reads a pruned id as zeros. Dynamic, tiered, partitioned and
 * custom tables, and tables of over INT32_MAX columns, cannot be pruned (EMB_ENOTSUP).
 * @return 0, EMB_ENULL, EMB_EINVAL (dtype, var_list, global_step, prune_norm), EMB_ESHAPE
 *         (int4 of an odd featuresize), EMB_ENOTSUP, EMB_EIO, EMB_ENOMEM
 */
EMB_API int emb_store_export(const EmbStore *store, const char *path,
                             const EmbExportOptions *opts);

/** An opened checkpoint: its listing, and with EMB_CHECKPOINT_MMAP its tables. */
typedef struct EmbCheckpoint EmbCheckpoint;

/** emb_checkpoint_open() flags. */
enum {
    EMB_CHECKPOINT_MMAP = 1 << 0, /**< map the file and make a table over every tensor
                                       (zero copy; every checksum verified at open) */
};

/** One tensor of a checkpoint (strings owned by the EmbCheckpoint). */
typedef struct EmbCheckpointEntry {
    const char *name;    /**< tensor name */
    const char *table;   /**< the table it belongs to (== name for a table's values) */
    const char *slot;    /**< NULL for a table's values; else the optimizer slot ("h", "m",
                              "v", "accum", "linear") or, for a dynamic table, "dynamic.ids",
                              "dynamic.last" or "dynamic.sketch" */
    int64_t ncolumns;    /**< columns of the tensor */
    int32_t featuresize; /**< elements per column */
    EmbDtype dtype;      /**< element type in the file */
    int32_t nshards;     /**< shards of the saved table (1: not partitioned) */
    unsigned partition;  /**< EMB_PARTITION_MOD / _DIV when partitioned, else 0 */
    int64_t step;        /**< optimizer updates of the table (-1: no state saved) */
    int dynamic;         /**< 1: a dynamic table's (dynamic.h); ncolumns is then its row
                              count, rows in increasing id order */
    int64_t dyn_step;    /**< a dynamic table's update steps (-1: not dynamic) */
    const char *type;    /**< the tensor's safetensors dtype: "F32", "F16", "BF16", "U8"
                              (an EMB_INT8 / EMB_INT4 table's rows as they are, [ncolumns,
                              emb_dtype_row_bytes()]: dtype and featuresize give the table's,
                              the table's metadata entry its "format"), or "I64" (a dynamic
                              table's ids and last update steps, [rows, 1]) and "U16" (its
                              admission counts, [4, width]), whose dtype field reads
                              EMB_F32 */
} EmbCheckpointEntry;

/**
 * Opens a checkpoint for listing (the header is read and its checksum verified; the data
 * are not read) or, with EMB_CHECKPOINT_MMAP, maps it: emb_checkpoint_table() then gives
 * tables over the file's memory, for inference. They are copy-on-write: an update changes
 * this process's pages, never the file. Another process truncating the file while it is
 * mapped is undefined (SIGBUS).
 * @return 0, EMB_ENULL, EMB_EINVAL (unknown flags), EMB_EIO, EMB_ECORRUPT, EMB_ENOTSUP,
 *         EMB_ENOMEM
 */
EMB_API int emb_checkpoint_open(EmbCheckpoint **out, const char *path, unsigned flags);
/** Closes a checkpoint and destroys its tables (NULL is fine); sets `*ck` to NULL. */
EMB_API void emb_checkpoint_close(EmbCheckpoint **ck);
/** Number of tensors (tables and state). */
EMB_API int64_t emb_checkpoint_count(const EmbCheckpoint *ck);
/**
 * Tensor @p i (0 .. count-1, in the file's order: a table, then its slots).
 * @return 0, EMB_ENULL, EMB_ERANGE
 */
EMB_API int emb_checkpoint_entry(const EmbCheckpoint *ck, int64_t i, EmbCheckpointEntry *out);
/** The global step it was saved at. */
EMB_API int64_t emb_checkpoint_global_step(const EmbCheckpoint *ck);
/**
 * The optimizer configuration it was saved with (placement fields zero; state_dtype: the
 * dtype of its state tensors).
 * @return 0, EMB_ENULL, EMB_ENOTFOUND (saved without an optimizer)
 */
EMB_API int emb_checkpoint_optimizer(const EmbCheckpoint *ck, EmbOptimizerConfig *out);
/**
 * The mapped table of tensor @p name (owned by @p ck, valid until it is closed).
 * @return 0, EMB_ENULL, EMB_ENOTFOUND, EMB_EINVAL (not opened with EMB_CHECKPOINT_MMAP)
 */
EMB_API int emb_checkpoint_table(const EmbCheckpoint *ck, const char *name, EmbTable **out);

#ifdef __cplusplus
}
#endif
#endif
