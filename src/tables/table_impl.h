/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * table_impl.h — the inside of EmbTable, shared by the table kinds, the lookup, the update,
 * the strategies and the store. A table kind fills `ops` (tables/table_ops.h: the table
 * contract); a simple table also sets `data` so that the hot loops compute
 * `data + column * stride` without a call. Layers above tables/ use the emb__table_*
 * wrappers below and never t->kind.
 */
#ifndef EMB_TABLE_IMPL_H
#define EMB_TABLE_IMPL_H

#include "embtables/table.h"
#include "internal.h"
#include "tables/table_ops.h"

struct EmbTable {
    EmbDtype dtype;
    int32_t featuresize;
    int32_t static_size; /* 0: dynamic */
    int64_t ncolumns;
    size_t elsize;       /* bytes per element */
    char name[EMB_NAME_MAX + 1];
    bool check_finite;   /* EMB_TABLE_CHECK_FINITE: writes check their inputs first */

    /* simple tables: column c at data + c * stride (bytes); NULL for other kinds */
    char *data;
    size_t stride;
    bool owned;          /* data allocated by emb_table_create */

    /* every kind: its operations (table_ops.h); never NULL */
    const EmbTableOps *ops;

    /* custom tables */
    emb_column_pointer_fn user_fn;
    void *user;
    emb_destroy_fn user_destroy;

    /* other kinds' private state, freed by ops->destroy */
    void *impl;

    /* touched rows (touched.c): for delta checkpoints, bit c of column c written since the
       last save with deltas (NULL until the first tracked write) and whether every column
       counts as written; for emb_table_changed_since, the write clock, each column's clock
       at its last tracked write (NULL until streaming is asked for) and the clock of the
       last untracked write */
    uint64_t *touched;
    bool touched_all;
    uint32_t touch_clock;
    uint32_t *touched_at;
    uint32_t touch_all_at;
};

/* The simple kind's operations (emb__table_alloc's default). */
extern const EmbTableOps emb__simple_ops;

/* The column pointer of an in-range column (the caller validated it). */
EMB_INLINE void *emb__column(const EmbTable *t, int64_t column, EmbContext ctx)
{
    if (EMB_LIKELY(t->data != NULL))
        return t->data + (size_t)column * t->stride;
    return t->ops->column(t, column, ctx);
}

/* ---- the contract's wrappers (table_ops.h): the defaults of NULL entries ---------------- */

/* cols[k] = the row of span id k (FORWARD / NONE); 0 or the kind's error (EMB_EIO, ...). */
EMB_INLINE int emb__table_resolve(const EmbTable *t, const EmbIdSpan *s, EmbContext ctx,
                                  const void **cols, unsigned *hint)
{
    *hint = 0;
    if (t->ops->resolve)
        return t->ops->resolve(t, s, ctx, cols, hint);
    for (int64_t k = 0; k < s->n; k++)
        cols[k] = emb__column(t, emb__span_id(s, k), ctx);
    return 0;
}

EMB_INLINE void emb__table_prefetch(const EmbTable *t, int64_t id)
{
    if (t->ops->prefetch)
        t->ops->prefetch(t, id);
}

/* Whether a FORWARD read of some id may be refused (then each id: emb__table_readable). */
EMB_INLINE bool emb__table_missing_fails(const EmbTable *t)
{
    return t->ops->missing_fails && t->ops->missing_fails(t);
}

EMB_INLINE bool emb__table_readable(const EmbTable *t, int64_t id)
{
    return !t->ops->readable || t->ops->readable(t, id);
}

EMB_INLINE void emb__table_release(const EmbTable *t)
{
    if (t->ops->release)
        t->ops->release(t);
}

/* ---- touched rows (touched.c): what a delta checkpoint holds ----------------------------- */

/* Marks columns @ids (in range) touched; cannot fail (a failed allocation: all touched). */
void emb__touched_set(EmbTable *t, const int64_t *ids, int64_t n);
/* Marks every row touched (a write that is not tracked). */
void emb__touched_all(EmbTable *t);
/* After a save with deltas: nothing touched since. */
void emb__touched_clear(EmbTable *t);
/* Whether every row counts as touched since the last save. */
bool emb__touched_is_all(const EmbTable *t);
/* The columns touched since the last save, in increasing order: up to @cap of them into
   @ids; returns how many. */
int64_t emb__touched_list(const EmbTable *t, int64_t *ids, int64_t cap);

struct EmbTieredOptions;
/* A tiered table created in a new file that replaces @path only on emb__table_tiered_commit
   (emb_table_tiered_create's arguments and codes): destroyed uncommitted, it leaves @path as
   it found it. The store initialises its tables before the commit; a collection commits
   when the whole collection is made. Commit: 0 (nothing to do for another table) or EMB_EIO. */
int emb__table_tiered_create_pending(EmbTable **out, const char *path, int64_t ncolumns,
                                     int32_t featuresize, EmbDtype dtype,
                                     const struct EmbTieredOptions *opts);
int emb__table_tiered_commit(EmbTable *t);

/* Whether rows must be fetched and pinned (EMB_OPS_PINS: a tiered table's, from disk):
   reach them through the fallible resolve, not column(). */
EMB_INLINE bool emb__table_pins(const EmbTable *t)
{
    return (t->ops->flags & EMB_OPS_PINS) != 0;
}

/* Whether rows are created by updates (keyed ids: no ncolumns bound on what exists). */
EMB_INLINE bool emb__table_rows_appear(const EmbTable *t)
{
    return (t->ops->flags & EMB_OPS_ROWS_APPEAR) != 0;
}

/* Whether the update resolves rows through update_prepare / commit / rows. */
EMB_INLINE bool emb__table_planned(const EmbTable *t)
{
    return t->ops->update_prepare != NULL;
}

/*
 * Allocates a table struct with the common fields checked and filled (kind SIMPLE, no
 * storage). Used by every constructor. Returns 0 or an error (nothing allocated).
 */
int emb__table_alloc(EmbTable **out, int64_t ncolumns, int32_t featuresize, EmbDtype dtype,
                     const EmbTableOptions *opts);

/* Column stride in bytes of an owned table (EmbTableOptions::column_align: 64, or the
   row's power-of-two size when smaller) and the allocation's alignment; 0 or EMB_EINVAL. */
int emb__column_stride(size_t rowbytes, const EmbTableOptions *opts, size_t *stride,
                       size_t *align);
/* Short name for messages: `table "name"` or `unnamed table`. Thread-local buffer. */
const char *emb__table_label(const EmbTable *t);
/*
 * With EMB_TABLE_CHECK_FINITE on @t: EMB_ENONFINITE (naming @what, the row and the
 * element) when one of @n rows of @width floats at @rows + r * @stride is NaN or infinite;
 * else (or without the flag, or rows NULL) 0.
 */
int emb__finite_check(const EmbTable *t, const float *rows, int64_t n, int32_t width,
                      int64_t stride, const char *what);

#endif
