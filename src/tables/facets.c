/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * facets.c — the table contract's provided defaults (table_ops.h): the rows facet of a kind
 * with contiguous data, and the single entries a kind's facets point at when the kind has
 * nothing of its own to do there. Written once here, never at a call site.
 */
#include "tables/table_impl.h"

static void *dense_column(const EmbTable *t, int64_t id, EmbContext ctx)
{
    (void)ctx;
    return t->data + (size_t)id * t->stride;
}

static int dense_acquire(const EmbTable *t, const EmbIdSpan *s, EmbContext ctx,
                         const void **cols, unsigned *hint)
{
    (void)ctx;
    (void)hint;
    if (!cols)
        return 0;
    for (int64_t k = 0; k < s->n; k++)
        cols[k] = t->data + (size_t)emb__span_id(s, k) * t->stride;
    return 0;
}

const EmbRowsFacet emb__rows_dense = {
    .column = dense_column, .acquire = dense_acquire, .release = emb__rows_release_none,
};

int emb__rows_acquire_by_column(const EmbTable *t, const EmbIdSpan *s, EmbContext ctx,
                                const void **cols, unsigned *hint)
{
    (void)hint;
    if (!cols)
        return 0;
    for (int64_t k = 0; k < s->n; k++)
        cols[k] = t->ops->rows->column(t, emb__span_id(s, k), ctx);
    return 0;
}

int emb__rows_pin_in_spans(const EmbTable *t, const EmbIdSpan *s)
{
    const void *cols[EMB_SPAN_MAX];
    for (int64_t k = 0; k < s->n; k += EMB_SPAN_MAX) {
        const EmbIdSpan sub = {s->ids, s->id32, s->k0 + k, EMB_MIN(EMB_SPAN_MAX, s->n - k), NULL};
        unsigned hint = 0;
        const int r = t->ops->rows->acquire(t, &sub, EMB_CTX_FORWARD, cols, &hint);
        if (r)
            return r;
    }
    return 0;
}

void emb__rows_release_none(const EmbTable *t)
{
    (void)t;
}

int emb__keyed_column_acquire(EmbTable *t, int64_t id, void **out)
{
    const EmbIdSpan s = {&id, 0, 0, 1, NULL};
    const void *col = NULL;
    unsigned hint;
    const int r = emb__table_acquire(t, &s, EMB_CTX_UPDATE, &col, &hint);
    if (!r)
        *out = (void *)col;
    return r;
}

int emb__keyed_reserve_none(EmbTable *t, const int64_t *ids, int64_t n)
{
    (void)t;
    (void)ids;
    (void)n;
    return 0;
}

void emb__keyed_cancel_none(EmbTable *t, EmbRowPlan *rp)
{
    (void)t;
    (void)rp;
}

bool emb__keyed_state_unchecked(const EmbTable *t, const EmbTable *view)
{
    (void)t;
    (void)view;
    return true;
}
