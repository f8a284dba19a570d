/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * table_impl.h — the inside of EmbTable, shared by the table types, the lookup, the update
 * and the strategies. A table type fills `column_fn`; a simple table also sets `data` so
 * that the hot loops compute `data + column * stride` without a call.
 */
#ifndef EMB_TABLE_IMPL_H
#define EMB_TABLE_IMPL_H

#include "embtables/table.h"
#include "internal.h"

typedef void *(*emb_table_column_fn)(const EmbTable *t, int64_t column, EmbContext ctx);

typedef enum EmbTableKind {
    EMB_KIND_SIMPLE = 0,
    EMB_KIND_CUSTOM = 1,
    EMB_KIND_PARTITIONED = 2,
    EMB_KIND_DYNAMIC = 3,       /* dynamic.c: hash-keyed rows */
    EMB_KIND_DYNAMIC_STATE = 4, /* dynamic.c: a dynamic table's optimizer state, by id */
} EmbTableKind;

struct EmbTable {
    EmbTableKind kind;
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

    /* every kind: the column-pointer entry (simple tables too, for uniformity) */
    emb_table_column_fn column_fn;

    /* custom tables */
    emb_column_pointer_fn user_fn;
    void *user;
    emb_destroy_fn user_destroy;

    /* other kinds' private state, freed by impl_destroy */
    void *impl;
    void (*impl_destroy)(EmbTable *t);
};

/* The column pointer of an in-range column (the caller validated it). */
EMB_INLINE void *emb__column(const EmbTable *t, int64_t column, EmbContext ctx)
{
    if (EMB_LIKELY(t->data != NULL))
        return t->data + (size_t)column * t->stride;
    return t->column_fn(t, column, ctx);
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
