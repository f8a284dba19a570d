/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outputs.c — the EmbOutputs layout (see strategy_impl.h): checked once here for the
 * forward (emb_maplookup writes it) and the backward (emb_maplookup_backward reads it),
 * with one error code for each mistake.
 */
#include <stdio.h>

#include "strategies/strategy_impl.h"
#include "tables/table_impl.h"

/* The concat layout: prependrows, equal bag counts, a wide enough row. */
static int check_concat(const char *op, EmbTable *const *tables, int64_t n,
                        const EmbBatch *batches, const EmbOutputs *o)
{
    if (o->prependrows < 0)
        return emb__fail(EMB_EINVAL, "%s: prependrows %lld is negative", op,
                         (long long)o->prependrows);
    const int64_t nbags = batches[0].nbags;
    int64_t width = o->prependrows;
    for (int64_t i = 0; i < n; i++) {
        if (batches[i].nbags != nbags) {
            char first[EMB_NAME_MAX + 16]; /* the label's buffer is reused by the second */
            snprintf(first, sizeof first, "%s", emb__table_label(tables[0]));
            return emb__fail(EMB_ESHAPE,
                             "%s: tables[%lld]: nbags = %lld (%s), but tables[0] has nbags "
                             "= %lld (%s): a concat output needs equal bag counts", op,
                             (long long)i, (long long)batches[i].nbags,
                             emb__table_label(tables[i]), (long long)nbags, first);
        }
        if (__builtin_add_overflow(width, (int64_t)tables[i]->featuresize, &width))
            return emb__fail(EMB_EOVERFLOW, "%s: concat row width overflows", op);
    }
    if (o->concat_stride < width)
        return emb__fail(EMB_ESHAPE,
                         "%s: concat_stride %lld < prependrows + sum of feature sizes = %lld",
                         op, (long long)o->concat_stride, (long long)width);
    return 0;
}

int emb__outputs_check(const char *op, EmbTable *const *tables, int64_t n,
                       const EmbBatch *batches, const EmbOutputs *o)
{
    for (int64_t i = 0; i < n; i++)
        if (!tables[i])
            return emb__fail(EMB_ENULL, "%s: tables[%lld] is NULL", op, (long long)i);
    if (o->concat)
        return check_concat(op, tables, n, batches, o);
    if (!o->per_table)
        return emb__fail(EMB_ENULL, "%s: outputs has neither concat nor per_table", op);
    return 0;
}

float *emb__outputs_next(const EmbOutputs *o, EmbTable *const *tables, int64_t i, int64_t *col,
                         int64_t *stride)
{
    if (!o->concat) {
        *stride = o->strides ? o->strides[i] : tables[i]->featuresize;
        return o->per_table[i];
    }
    float *row0 = o->concat + o->prependrows + *col;
    *col += tables[i]->featuresize;
    *stride = o->concat_stride;
    return row0;
}
