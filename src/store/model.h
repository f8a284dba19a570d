/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * model.h — the table model of checkpoints: which tensors a table and its optimizer state
 * become (values "<name>", slots "<name>/<kind>.<slot>", a row-listing kind's extra
 * tensors "<name>/<suffix>", e.g. a dynamic table's "dynamic.ids" / "dynamic.last" /
 * "dynamic.sketch") and the "embtables" metadata ("tables", "optimizer", "global_step"),
 * through the table contract (tables/table_ops.h: save_list, restore_extras, stage ...).
 * format.c writes and reads the tensors; model.c gives them meaning.
 */
#ifndef EMB_STORE_MODEL_H
#define EMB_STORE_MODEL_H

#include "embtables/store.h"
#include "store/format.h"
#include "tables/table_ops.h"

typedef struct EmbCkptTable {
    char *name;           /* owned */
    int32_t nshards;      /* 1: not partitioned */
    unsigned partition;
    int64_t step;         /* optimizer updates; -1: no state */
    int64_t values;       /* tensor index */
    int64_t state[2];     /* tensor indices of the slots (-1: none) */
    /* a table whose kind lists its rows (a dynamic table, or one partitioned over dynamic
       shards): its kind's update count and the tensor indices of its ids and last update
       steps (I64, [rows, 1], rows in increasing id order) and of its admission counts (U16,
       [4 * nshards, width]; -1: none) */
    bool dynamic;
    int64_t dyn_step;
    int64_t ids, last, sketch;
    EmbRowList *list;     /* writing: its rows as its kind lists them (owned), or NULL */
    /* in a delta (store/delta.c): the table's columns, and the tensor index of the ids of
       the rows the delta holds (I64, [rows, 1], increasing; a dynamic table's: its
       tombstones "delta.gone", delta_keyed.c); -1 in a full checkpoint */
    int64_t delta_ncolumns;
    int64_t delta_ids;
    /* in a pruned export (store/export.c): the tensor index of its id remapping (I32,
       [delta_ncolumns, 1]: each id's row in the values or -1); -1: none */
    int64_t remap;
} EmbCkptTable;

void emb__ckpt_free(EmbCkpt *c);

/*
 * Adds table @t under @name (NULL: its name) to @c for writing, with @opt's state of it
 * when @opt is not NULL. Returns 0, EMB_EINVAL (no name, a name twice, a state view),
 * EMB_ENOTSUP (the kind cannot be saved so), EMB_ENOMEM.
 */
int emb__ckpt_add(EmbCkpt *c, const char *name, const EmbTable *t, const EmbOptimizer *opt);

/* emb__ckpt_add of the rows @l lists (taken: closed and freed with @c, or on failure), no
   optimizer state (store/export.c: a pruned export). */
int emb__ckpt_add_listed(EmbCkpt *c, const char *name, const EmbTable *t, EmbRowList *l);

/* emb__ckpt_add for a delta (c->delta_base set): only the rows of @t touched since its last
   save (a table whose kind does not list its rows: a dense one), with "<name>/delta.ids". */
int emb__ckpt_add_delta(EmbCkpt *c, const char *name, const EmbTable *t,
                        const EmbOptimizer *opt);

/* The rows of dense @t touched since its last save, listed for a delta (@st: the state kept
   for it, or NULL): 0 or EMB_ENOMEM (store/delta.c). */
struct EmbOptState;
int emb__delta_list(const EmbTable *t, const struct EmbOptState *st, EmbRowList *out);

/* Writes @c (tables added, global_step, has_opt / opt set) to the open file @fd. */
int emb__ckpt_save(EmbCkpt *c, int fd, const char *path);

/*
 * Reads the file @fd of @size bytes: its tensors (format.c) and its tables and optimizer.
 * 0, EMB_ECORRUPT, EMB_ENOTSUP, EMB_EIO, EMB_ENOMEM.
 */
int emb__ckpt_open(EmbCkpt *c, int fd, uint64_t size, const char *path);

/* Reads every row-listing table's ids and last update steps: ids strictly increasing and
   >= 0, steps in [0, the table's step]; 0, EMB_ECORRUPT, EMB_EIO, EMB_ENOMEM. */
int emb__ckpt_check_rows(const EmbCkpt *c, int fd, unsigned char *buf, const char *path);

/* Reads tensor @k from @fd into elements [off, off + width) of every column of @t. */
int emb__ckpt_load(const EmbCkpt *c, int64_t k, int fd, EmbTable *t, int32_t off,
                   unsigned char *buf, const char *path);

/* Opens @path and reads its header into @c (ckpt_open.c): the fd, or -1, the error in *err. */
int emb__ckpt_open_path(const char *path, EmbCkpt *c, uint64_t *size, int *err);

/* ---- delta checkpoints (delta.c) ---- */

#define EMB_CKPT_FILE_NAME_MAX 255
/* A checkpoint of the saver's index (checkpoint.c): its file name and when it was saved. */
typedef struct EmbKept {
    char name[EMB_CKPT_FILE_NAME_MAX + 1];
    double time;
} EmbKept;

/* The @nretired files that max_to_keep would retire (@retired) but a chain of the kept
   ones (*kept, the last one not written yet; @head: its base when it is a delta, or NULL)
   needs go back to the front of *kept (oldest first; chains at most @depth deltas long):
   every kept checkpoint stays restorable. 0 or EMB_ENOMEM. */
int emb__delta_keep_chains(const char *dir, const char *head, int32_t depth, EmbKept **kept,
                           int64_t *n, EmbKept *retired, int64_t *nretired);

/* Whether a delta can hold @t: a dense kind, tracked (not all touched). */
bool emb__delta_possible(const EmbTable *t);
/* emb_checkpoint_restore_ex of the full checkpoint @path (restore.c; arguments checked by the
   caller): 0, an error code, or EMB__RESTORE_IS_DELTA (> 0) when @path is a delta, having
   touched nothing. */
#define EMB__RESTORE_IS_DELTA 1
int emb__restore_full(EmbStore *s, const char *path, const EmbRestoreOptions *o,
                      int64_t *global_step);
/* emb_checkpoint_restore_ex of the delta @path: its chain checked whole, then the full
   checkpoint restored and the deltas written in order. */
int emb__delta_restore(EmbStore *s, const char *path, const EmbRestoreOptions *o,
                       int64_t *global_step);
/* The base of checkpoint @dir/@name into @base: 1 (a delta), 0 (a full one), or an error. */
int emb__delta_base_of(const char *dir, const char *name, char *base, size_t cap);

#endif
