/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * grad.c — gradient holders: the lazy pullback of a lookup and materialised sparse
 * gradients (emb_maplookup_backward, in strategies/, records one pullback per table).
 * Recording validates and copies the descriptors; no work per id happens until an update
 * consumes the gradient.
 */
#include <stdio.h>
#include <stdlib.h>

#include "lookup/batch.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

int emb_grad_create(EmbGrad **out)
{
    EMB_CHECK_NULL(out);
    EmbGrad *g = calloc(1, sizeof *g);
    if (!g)
        return emb__fail(EMB_ENOMEM, "out of memory for a gradient");
    *out = g;
    return 0;
}

void emb_grad_destroy(EmbGrad **g)
{
    if (!g)
        return;
    free(*g);
    *g = NULL;
}

int emb__lookup_backward_check(const EmbTable *table, const EmbBatch *batch,
                               const EmbPooling *pooling, const float *grad_out,
                               int64_t grad_stride, bool ids)
{
    int r = ids ? emb__batch_check(table, batch, pooling)
                : emb__batch_check_shape(table, batch, pooling);
    if (!r)
        r = emb__output_check(table, grad_out, batch->nbags, grad_stride, "output gradient");
    return r;
}

void emb__lookup_backward_record(const EmbTable *table, const EmbBatch *batch,
                                 const EmbPooling *pooling, const float *grad_out,
                                 int64_t grad_stride, EmbGrad *grad)
{
    *grad = (EmbGrad){
        .kind = EMB_GRAD_PULLBACK, .table = table, .batch = *batch,
        .pooling = pooling ? *pooling : emb__pooling_sum,
        .dy = grad_out, .dy_stride = grad_stride,
    };
}

int emb_lookup_backward(const EmbTable *table, const EmbBatch *batch, const EmbPooling *pooling,
                        const float *grad_out, int64_t grad_stride, EmbGrad *grad)
{
    EMB_CHECK_NULL(grad);
    const int r = emb__lookup_backward_check(table, batch, pooling, grad_out, grad_stride,
                                             true);
    if (!r)
        emb__lookup_backward_record(table, batch, pooling, grad_out, grad_stride, grad);
    return r;
}

/* Shape checks of a sparse gradient that do not look at its ids. */
static int sparse_shape_check(const EmbTable *t, const EmbSparseGrad *s)
{
    if (s->n < 0)
        return emb__fail(EMB_EINVAL, "sparse gradient has n %lld < 0 (%s)", (long long)s->n,
                         emb__table_label(t));
    if (s->id_type != EMB_ID_I64 && s->id_type != EMB_ID_I32)
        return emb__fail(EMB_EINVAL, "sparse gradient id_type %d is not I64 or I32 (%s)",
                         (int)s->id_type, emb__table_label(t));
    if (s->featuresize != t->featuresize)
        return emb__fail(EMB_ESHAPE, "sparse gradient rows have %d elements, %s has %d",
                         (int)s->featuresize, emb__table_label(t), (int)t->featuresize);
    if (s->n > 0 && (!s->ids || !s->values))
        return emb__fail(EMB_ENULL, "sparse gradient of %lld rows has NULL %s (%s)",
                         (long long)s->n, !s->ids ? "ids" : "values", emb__table_label(t));
    if (s->stride < s->featuresize)
        return emb__fail(EMB_ESTRIDE, "sparse gradient stride %lld < featuresize %d (%s)",
                         (long long)s->stride, (int)s->featuresize, emb__table_label(t));
    if (!emb__rows_fit(s->n, s->stride, s->featuresize))
        return emb__fail(EMB_EOVERFLOW, "sparse gradient of %lld rows of stride %lld overflows",
                         (long long)s->n, (long long)s->stride);
    return 0;
}

int emb_grad_set_sparse(EmbGrad *grad, const EmbTable *table, const EmbSparseGrad *sparse)
{
    EMB_CHECK_NULL(grad);
    EMB_CHECK_NULL(table);
    EMB_CHECK_NULL(sparse);
    int r = sparse_shape_check(table, sparse);
    if (r)
        return r;
    *grad = (EmbGrad){.kind = EMB_GRAD_SPARSE, .table = table, .sparse = *sparse};
    return 0;
}

static int sparse_ids_check(const EmbTable *t, const EmbSparseGrad *s, int64_t k0, int64_t k1)
{
    const EmbBatch b = {.ids = s->ids, .id_type = s->id_type};
    for (int64_t k = k0; k < k1; k++) {
        const int64_t id = emb__batch_id(&b, k);
        if (id < 0 || id >= t->ncolumns)
            return emb__fail(EMB_ERANGE, "gradient id %lld at position %lld is not in [0, %lld) "
                             "(%s)", (long long)id, (long long)k, (long long)t->ncolumns,
                             emb__table_label(t));
    }
    return 0;
}

int emb__grad_check(const EmbTable *t, const EmbGrad *g)
{
    return emb__grad_check_ex(t, g, true);
}

int emb__grad_check_ids(const EmbTable *t, const EmbGrad *g, int64_t k0, int64_t k1)
{
    if (g->kind == EMB_GRAD_SPARSE)
        return sparse_ids_check(t, &g->sparse, k0, k1);
    return emb__batch_check_ids(t, &g->batch, &g->pooling, k0, k1);
}

int emb__grad_check_ex(const EmbTable *t, const EmbGrad *g, bool check_ids)
{
    if (g->kind == EMB_GRAD_EMPTY)
        return emb__fail(EMB_EINVAL, "the gradient for %s holds nothing (record it first)",
                         emb__table_label(t));
    if (g->table != t) {
        char other[EMB_NAME_MAX + 16];
        snprintf(other, sizeof other, "%s", emb__table_label(g->table));
        return emb__fail(EMB_EINVAL, "a gradient recorded for %s was passed with %s", other,
                         emb__table_label(t));
    }
    if (g->kind == EMB_GRAD_SPARSE) {
        const EmbSparseGrad *s = &g->sparse;
        int r = sparse_shape_check(t, s);
        r = r || !check_ids ? r : sparse_ids_check(t, s, 0, s->n);
        return r ? r : emb__finite_check(t, s->values, s->n, t->featuresize, s->stride,
                                         "gradient");
    }
    int r = check_ids ? emb__batch_check(t, &g->batch, &g->pooling)
                         : emb__batch_check_shape(t, &g->batch, &g->pooling);
    r = r ? r : emb__finite_check(t, g->dy, g->batch.nbags, t->featuresize, g->dy_stride,
                                  "output gradient");
    return r ? r : emb__finite_check(t, g->batch.weights, g->batch.nnz, 1, 1, "weights");
}

int64_t emb__grad_max_rows(const EmbGrad *g)
{
    return g->kind == EMB_GRAD_SPARSE ? g->sparse.n : emb__pullback_max_entries(&g->batch);
}
