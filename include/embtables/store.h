/**
 * @file store.h
 * Initializers, a named store of tables (tf.get_variable's get-or-create with reuse) and
 * checkpoints (tf.train.Saver: save with a global step, restore, max_to_keep,
 * keep_checkpoint_every_n_hours, latest_checkpoint, atomic writes, a checksum).
 *
 * Initializers are counter-based: element i of column c gets a value that depends only on
 * (seed, c, i), so a table is initialised identically whatever the thread count or the
 * table type (a partitioned table gives the values of one unpartitioned table).
 */
#ifndef EMBTABLES_STORE_H
#define EMBTABLES_STORE_H

#include "embtables/table.h"

#ifdef __cplusplus
extern "C" {
#endif

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
    EmbInitKind kind;
    float a;       /**< constant value / minval / mean / factor */
    float b;       /**< maxval / stddev */
    uint64_t seed; /**< seed of the random kinds */
} EmbInitializer;

/**
 * Fills every column of @p table (any table type, through its column pointers with
 * context UPDATE) from @p init. Values are rounded to the table's dtype.
 * @return 0, EMB_ENULL, EMB_EINVAL (unknown kind, b < a for UNIFORM, stddev < 0)
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

/** What a table in the store looks like. */
typedef struct EmbVariableSpec {
    const char *name;        /**< unique, non-empty, at most EMB_NAME_MAX bytes */
    int64_t ncolumns;
    int32_t featuresize;
    EmbDtype dtype;
    EmbInitializer init;     /**< applied at creation (EMB_INIT_NONE: left to the caller) */
    int trainable;           /**< kept for emb_store_list(trainable_only) */
    EmbTableOptions options; /**< placement, static size, alignment (name is ignored) */
} EmbVariableSpec;

/**
 * Gets or creates the table @p spec names. The store owns the tables it creates; `*out`
 * stays valid until the store is destroyed.
 * @return 0, EMB_ENULL, EMB_EINVAL (empty or too long name), EMB_EEXIST, EMB_ENOTFOUND,
 *         EMB_ESHAPE (an existing table of another shape or dtype), and the codes of
 *         emb_table_create()
 */
EMB_API int emb_store_get(EmbStore *s, const EmbVariableSpec *spec, EmbReuse reuse,
                          EmbTable **out);

/** Finds a table by name. @return 0, EMB_ENULL, EMB_ENOTFOUND */
EMB_API int emb_store_find(const EmbStore *s, const char *name, EmbTable **out);

/**
 * Lists the store's tables in creation order: writes up to @p cap of them to @p tables
 * (may be NULL when cap is 0) and their total number to `*n`.
 * @param trainable_only list only trainable tables
 * @return 0, EMB_ENULL
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

/* ---- checkpoints ------------------------------------------------------------------- */

/** Opaque checkpoint writer for one directory (tf.train.Saver). */
typedef struct EmbSaver EmbSaver;

/** Saver options; zero-initialise for TF's defaults. */
typedef struct EmbSaverOptions {
    int32_t max_to_keep;         /**< most recent checkpoints kept; 0: 5; < 0: keep all */
    double keep_every_n_hours;   /**< also keep one checkpoint per this many hours (0: off) */
} EmbSaverOptions;

/**
 * Creates a saver writing `<dir>/<prefix>-<step>.emb` and the index `<dir>/checkpoint`.
 * Checkpoints already listed in the index are managed as if this saver had written them.
 * @return 0, EMB_ENULL, EMB_EINVAL (empty prefix, a '/' in it), EMB_EIO (dir missing),
 *         EMB_ENOMEM
 */
EMB_API int emb_saver_create(EmbSaver **out, const char *dir, const char *prefix,
                             const EmbSaverOptions *opts);
/** Destroys a saver (files stay); NULL is fine; sets `*s` to NULL. */
EMB_API void emb_saver_destroy(EmbSaver **s);

/**
 * Writes every table of @p store to a new checkpoint for @p global_step, atomically (a
 * temporary file renamed into place), updates the index and deletes checkpoints beyond
 * max_to_keep (except those kept by keep_every_n_hours). The checkpoint's path goes to
 * @p path (cap bytes; may be NULL).
 * @return 0, EMB_ENULL, EMB_EIO, EMB_ENOMEM, EMB_EINVAL (path does not fit in cap)
 */
EMB_API int emb_saver_save(EmbSaver *s, const EmbStore *store, int64_t global_step, char *path,
                           size_t cap);

/**
 * Restores the tables of a checkpoint into the store's tables of the same names. The whole
 * file is verified first (magic, sizes, checksum, every table present in the store with the
 * same shape and dtype): on any failure no table is touched. Tables of the store absent
 * from the file are left as they are. The global step goes to `*global_step` (may be NULL).
 * @return 0, EMB_ENULL, EMB_EIO, EMB_ECORRUPT (bad magic, truncated, checksum mismatch),
 *         EMB_ENOTFOUND (a table of the file is not in the store), EMB_ESHAPE, EMB_ENOMEM
 */
EMB_API int emb_checkpoint_restore(EmbStore *store, const char *path, int64_t *global_step);

/**
 * Path of the most recent checkpoint in @p dir's index, into @p path (cap bytes).
 * @return 0, EMB_ENULL, EMB_ENOTFOUND (no index or empty), EMB_EIO, EMB_EINVAL (too long)
 */
EMB_API int emb_checkpoint_latest(const char *dir, char *path, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
