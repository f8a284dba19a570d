/* SPDX-License-Identifier: BSD-2-Clause */
/* batch.c — validation of batches, poolings and outputs, before anything is written. */
#include <math.h>

#include "kernels/kernels.h"
#include "lookup/batch.h"
#include "tables/table_impl.h"

const EmbPooling emb__pooling_sum = {EMB_COMBINER_SUM, 0.0f, 0, 0};

/* The shape rule (batch_rules.h), its message labelled with the table. */
static int check_shape(const EmbTable *t, const EmbBatch *b, const EmbPooling *p)
{
    char msg[160];
    const int r = emb_rule_check_shape(b, p, msg, sizeof msg);
    return r ? emb__fail(r, "%s (%s)", msg, emb__table_label(t)) : 0;
}

static int check_offsets(const EmbTable *t, const EmbBatch *b)
{
    const int64_t *o = b->offsets;
    if (o[0] != 0)
        return emb__fail(EMB_EOFFSETS, "offsets[0] is %lld, not 0 (%s)", (long long)o[0],
                         emb__table_label(t));
    for (int64_t i = 0; i < b->nbags; i++)
        if (o[i + 1] < o[i])
            return emb__fail(EMB_EOFFSETS, "offsets[%lld] = %lld < offsets[%lld] = %lld (%s)",
                             (long long)(i + 1), (long long)o[i + 1], (long long)i,
                             (long long)o[i], emb__table_label(t));
    if (o[b->nbags] != b->nnz)
        return emb__fail(EMB_EOFFSETS, "offsets[%lld] is %lld, not nnz %lld (%s)",
                         (long long)b->nbags, (long long)o[b->nbags], (long long)b->nnz,
                         emb__table_label(t));
    return 0;
}

/* Whether ids [k0, k1) are in [0, ncol): the idmax kernel, a vector max per 8 or 16 ids
 * instead of a load, compare and branch per id. */
static bool all_in_range(const EmbBatch *b, int64_t ncol, int64_t k0, int64_t k1)
{
    const int id32 = b->id_type == EMB_ID_I32;
    const void *ids = (const char *)b->ids + k0 * (id32 ? 4 : 8);
    const uint64_t m = emb__kernels()->idmax(ids, k1 - k0, id32);
    return id32 ? m < (uint64_t)EMB_MIN(ncol, (int64_t)1 << 31) : m < (uint64_t)ncol;
}

static int check_ids(const EmbTable *t, const EmbBatch *b, const EmbPooling *p, int64_t k0,
                     int64_t k1)
{
    const int64_t ncol = t->ncolumns;
    if (k0 >= k1 || all_in_range(b, ncol, k0, k1))
        return 0; /* else find the first id that is neither in range nor pruned */
    for (int64_t k = k0; k < k1; k++) {
        const int64_t id = emb__batch_id(b, k);
        if (EMB_LIKELY((uint64_t)id < (uint64_t)ncol))
            continue;
        if (emb__pruned(b, p, k, id))
            continue;
        return emb__fail(EMB_ERANGE, "id %lld at position %lld is not in [0, %lld) (%s)",
                         (long long)id, (long long)k, (long long)ncol, emb__table_label(t));
    }
    return 0;
}

int emb__batch_check(const EmbTable *t, const EmbBatch *b, const EmbPooling *p)
{
    const int r = emb__batch_check_shape(t, b, p);
    return r ? r : check_ids(t, b, p ? p : &emb__pooling_sum, 0, b->nnz);
}

int emb__batch_check_ids(const EmbTable *t, const EmbBatch *b, const EmbPooling *p, int64_t k0,
                         int64_t k1)
{
    return check_ids(t, b, p ? p : &emb__pooling_sum, k0, k1);
}

int emb__batch_check_shape(const EmbTable *t, const EmbBatch *b, const EmbPooling *p)
{
    if (!t || !b)
        return emb__fail(EMB_ENULL, "the %s is NULL", !t ? "table" : "batch");
    if (!p)
        p = &emb__pooling_sum;
    int r = check_shape(t, b, p);
    if (!r && b->offsets)
        r = check_offsets(t, b);
    if (!r && (p->flags & EMB_USE_DEFAULT_ID) &&
        (p->default_id < 0 || p->default_id >= t->ncolumns))
        r = emb__fail(EMB_ERANGE, "default_id %lld is not in [0, %lld) (%s)",
                      (long long)p->default_id, (long long)t->ncolumns, emb__table_label(t));
    return r;
}

int emb__output_check(const EmbTable *t, const float *out, int64_t nbags, int64_t stride,
                      const char *what)
{
    if (stride < t->featuresize)
        return emb__fail(EMB_ESTRIDE, "%s stride %lld < featuresize %d (%s)", what,
                         (long long)stride, (int)t->featuresize, emb__table_label(t));
    if (nbags == 0)
        return 0;
    if (!out)
        return emb__fail(EMB_ENULL, "%s is NULL for %lld rows (%s)", what, (long long)nbags,
                         emb__table_label(t));
    if (!emb__rows_fit(nbags, stride, t->featuresize))
        return emb__fail(EMB_EOVERFLOW, "%s of %lld rows of stride %lld overflows (%s)", what,
                         (long long)nbags, (long long)stride, emb__table_label(t));
    return 0;
}

int emb_batch_validate(const EmbTable *table, const EmbBatch *batch, const EmbPooling *pooling)
{
    return emb__batch_check(table, batch, pooling);
}
