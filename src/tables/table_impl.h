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
    /* keyed kinds (rows appear): the ids and the kind's step at the last save with deltas
       (touched.c), what a delta's new rows and tombstones are found against; NULL: none */
    struct EmbSavedKeys *saved_keys;
};

/* The simple kind's operations (emb__table_alloc's default). */
extern const EmbTableOps emb__simple_ops;

/* ---- the provided defaults (table.c): a kind's facets point at them -------------------- */

/* The rows facet of a kind with contiguous data (t->data + id * t->stride). */
extern const EmbRowsFacet emb__rows_dense;
/* acquire by column() per id (cols == NULL: nothing to pin). */
int emb__rows_acquire_by_column(const EmbTable *t, const EmbIdSpan *s, EmbContext ctx,
                                const void **cols, unsigned *hint);
/* acquire with cols == NULL over a span of any length, by acquire in EMB_SPAN_MAX spans. */
int emb__rows_pin_in_spans(const EmbTable *t, const EmbIdSpan *s);
void emb__rows_release_none(const EmbTable *t);
/* A complete rows facet of a kind that does not pin, with its own column function. */
#define EMB_ROWS_BY_COLUMN(column_fn)                                                          \
    {                                                                                          \
        .column = (column_fn), .acquire = emb__rows_acquire_by_column,                         \
        .release = emb__rows_release_none,                                                     \
    }

int emb__keyed_column_acquire(EmbTable *t, int64_t id, void **out);
int emb__keyed_reserve_none(EmbTable *t, const int64_t *ids, int64_t n);
void emb__keyed_cancel_none(EmbTable *t, EmbRowPlan *rp);
bool emb__keyed_state_unchecked(const EmbTable *t, const EmbTable *view);

/* ---- the contract's wrappers (table_ops.h): callers above src/tables/ use only these ---- */

/* The column pointer of an in-range column (the caller validated it): the owned table's
   contiguous data is the one fast path. */
EMB_INLINE void *emb__column(const EmbTable *t, int64_t column, EmbContext ctx)
{
    if (EMB_LIKELY(t->data != NULL))
        return t->data + (size_t)column * t->stride;
    return t->ops->rows->column(t, column, ctx);
}

/* cols[k] = the row of span id k (s->n <= EMB_SPAN_MAX); 0 or the kind's error (EMB_EIO). */
EMB_INLINE int emb__table_acquire(const EmbTable *t, const EmbIdSpan *s, EmbContext ctx,
                                  const void **cols, unsigned *hint)
{
    *hint = 0;
    return t->ops->rows->acquire(t, s, ctx, cols, hint);
}

/* acquire without rows (table_ops.h): the check of a read of @s's ids (any length) before
   any output is written, pinning the rows of a kind that pins until the release; 0,
   EMB_ENOTFOUND, EMB_EIO, EMB_ENOMEM. */
EMB_INLINE int emb__table_acquire_check(const EmbTable *t, const EmbIdSpan *s)
{
    return t->ops->rows->acquire(t, s, EMB_CTX_FORWARD, NULL, NULL);
}

EMB_INLINE void emb__table_release(const EmbTable *t)
{
    t->ops->rows->release(t);
}

/* Whether rows must be made resident and pinned (a tiered table's, from disk): reach them
   through the fallible acquire, not column(). */
EMB_INLINE bool emb__table_pins(const EmbTable *t)
{
    return t->ops->rows->pins;
}

/* Whether ids are keys and rows are created by updates (no ncolumns bound). */
EMB_INLINE bool emb__table_rows_appear(const EmbTable *t)
{
    return t->ops->rows->keys;
}

/* The keyed facet (NULL: dense rows updated in place, dense optimizer state beside). */
EMB_INLINE const EmbKeyedFacet *emb__table_keyed(const EmbTable *t)
{
    return t->ops->keyed;
}

/* The listed facet (NULL: a dense checkpoint). */
EMB_INLINE const EmbListedFacet *emb__table_listed(const EmbTable *t)
{
    return t->ops->listed;
}

/* The keyed facet's entries (the caller tested emb__table_keyed once). */
EMB_INLINE int emb__table_column_create(EmbTable *t, int64_t id, void **out)
{
    return t->ops->keyed->column_create(t, id, out);
}
EMB_INLINE int emb__table_reserve_ids(EmbTable *t, const int64_t *ids, int64_t n)
{
    return t->ops->keyed->reserve_ids(t, ids, n);
}
EMB_INLINE int emb__table_keyed_initialize(EmbTable *t, const struct EmbInitializer *in)
{
    return t->ops->keyed->initialize(t, in);
}
EMB_INLINE int emb__table_update_prepare(EmbTable *t, EmbRowPlan *rp)
{
    return t->ops->keyed->update_prepare(t, rp);
}
EMB_INLINE void emb__table_update_commit(EmbTable *t, EmbRowPlan *rp)
{
    t->ops->keyed->update_commit(t, rp);
}
EMB_INLINE void emb__table_update_cancel(EmbTable *t, EmbRowPlan *rp)
{
    t->ops->keyed->update_cancel(t, rp);
}
EMB_INLINE void emb__table_update_rows(const EmbTable *t, const EmbRowPlan *rp, int64_t d0,
                                       int64_t n, void **cols, float **states)
{
    t->ops->keyed->update_rows(t, rp, d0, n, cols, states);
}
EMB_INLINE int emb__table_state_attach(EmbTable *t, int32_t width, const float *init,
                                       EmbTable **view)
{
    return t->ops->keyed->state_attach(t, width, init, view);
}
EMB_INLINE bool emb__table_state_is(const EmbTable *t, const EmbTable *view)
{
    return t->ops->keyed->state_is(t, view);
}

/* The listed facet's entries (the caller tested emb__table_listed once). */
EMB_INLINE int emb__table_list_ids(const EmbTable *t, const int64_t *ids, int64_t n, bool state,
                                   EmbRowList *out)
{
    return t->ops->listed->list_ids(t, ids, n, state, out);
}
/* The listed facet's list_ids of keyed kinds: EMB_ENOTSUP (touched.c). */
int emb__listed_ids_none(const EmbTable *t, const int64_t *ids, int64_t n, bool state,
                         EmbRowList *out);
EMB_INLINE int emb__table_list(const EmbTable *t, bool state, EmbRowList *out)
{
    return t->ops->listed->list(t, state, out);
}
EMB_INLINE void emb__table_extras(const EmbTable *t, EmbExtraTensor *extra, int *n)
{
    t->ops->listed->extras(t, extra, n);
}
EMB_INLINE int emb__table_stage(const EmbTable *t, const EmbStageIn *in, EmbRowStage **out)
{
    return t->ops->listed->stage(t, in, out);
}
EMB_INLINE void *emb__table_stage_dst(const EmbTable *t, EmbRowStage *s, int what, int64_t k)
{
    return t->ops->listed->stage_dst(s, what, k);
}
EMB_INLINE void emb__table_stage_commit(EmbTable *t, EmbRowStage *s)
{
    t->ops->listed->stage_commit(t, s);
}
EMB_INLINE void emb__table_stage_free(const EmbTable *t, EmbRowStage *s)
{
    t->ops->listed->stage_free(s);
}

/* Whether the table can be saved: 0, or the kind's reason (EMB_ENOTSUP / EMB_EINVAL). */
EMB_INLINE int emb__table_save_check(const EmbTable *t)
{
    return t->ops->save_check ? t->ops->save_check(t) : 0;
}

/* ---- touched rows (touched.c): what a delta checkpoint holds ----------------------------- */

/* Marks columns @ids (in range) touched; cannot fail (a failed allocation: all touched). */
void emb__touched_set(EmbTable *t, const int64_t *ids, int64_t n);
/* A keyed table's ids and step at its last save with deltas (NULL: none), sorted. */
typedef struct EmbSavedKeys {
    int64_t step, n;
    int64_t ids[];
} EmbSavedKeys;
/* Marks every row touched (a write that is not tracked). */
void emb__touched_all(EmbTable *t);
/* After a save with deltas: nothing touched since (a keyed table: its ids and step kept in
   saved_keys; without memory for them, every row stays touched). */
void emb__touched_clear(EmbTable *t);
/* The index of the extra tensor named @suffix in listing @l, or -1. */
int emb__listed_extra(const struct EmbRowList *l, const char *suffix);
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
