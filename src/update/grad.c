/*
 * grad.c — gradient holders: the lazy pullback of a lookup (and of a maplookup, concat
 * layout included) and materialised sparse gradients. Recording validates and copies the
 * descriptors; no work per id happens until an update consumes the gradient.
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

int emb_lookup_backward(const EmbTable *table, const EmbBatch *batch, const EmbPooling *pooling,
                        const float *grad_out, int64_t grad_stride, EmbGrad *grad)
{
    EMB_CHECK_NULL(grad);
    int r = emb__batch_check(table, batch, pooling);
    if (!r)
        r = emb__output_check(table, grad_out, batch->nbags, grad_stride, "output gradient");
    if (r)
        return r;
    *grad = (EmbGrad){
        .kind = EMB_GRAD_PULLBACK, .table = table, .batch = *batch,
        .pooling = pooling ? *pooling : emb__pooling_sum,
        .dy = grad_out, .dy_stride = grad_stride,
    };
    return 0;
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
        return emb__fail(EMB_ENULL, "sparse gradient of %lld rows has NULL ids or values (%s)",
                         (long long)s->n, emb__table_label(t));
    if (s->stride < s->featuresize)
        return emb__fail(EMB_ESTRIDE, "sparse gradient stride %lld < featuresize %d (%s)",
                         (long long)s->stride, (int)s->featuresize, emb__table_label(t));
    int64_t last;
    if (s->n > 0 && !emb__mul_ok(s->n - 1, s->stride, &last))
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

static int sparse_ids_check(const EmbTable *t, const EmbSparseGrad *s)
{
    const EmbBatch b = {.ids = s->ids, .id_type = s->id_type};
    for (int64_t k = 0; k < s->n; k++) {
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
        const int r = sparse_shape_check(t, &g->sparse);
        return r ? r : sparse_ids_check(t, &g->sparse);
    }
    return emb__batch_check(t, &g->batch, &g->pooling);
}

int64_t emb__grad_max_rows(const EmbGrad *g)
{
    return g->kind == EMB_GRAD_SPARSE ? g->sparse.n : emb__pullback_max_entries(&g->batch);
}

/* Output-gradient row 0 and stride of table i in @o (checked by the caller). */
static const float *slice(const EmbOutputs *o, EmbTable *const *tables, int64_t i,
                          int64_t *stride)
{
    if (!o->concat) {
        *stride = o->strides ? o->strides[i] : tables[i]->featuresize;
        return o->per_table[i];
    }
    int64_t col = o->prependrows;
    for (int64_t j = 0; j < i; j++)
        col += tables[j]->featuresize;
    *stride = o->concat_stride;
    return o->concat + col;
}

static int outputs_check(EmbTable *const *tables, int64_t n, const EmbBatch *batches,
                         const EmbOutputs *o)
{
    if (!o->concat) {
        EMB_CHECK_NULL(o->per_table);
        return 0;
    }
    int64_t width = o->prependrows;
    for (int64_t i = 0; i < n; i++) {
        if (batches[i].nbags != batches[0].nbags)
            return emb__fail(EMB_ESHAPE, "concat gradient: table %lld has %lld bags, table 0 "
                             "%lld", (long long)i, (long long)batches[i].nbags,
                             (long long)batches[0].nbags);
        width += tables[i]->featuresize;
    }
    if (o->prependrows < 0 || o->concat_stride < width)
        return emb__fail(EMB_ESHAPE, "concat gradient stride %lld < prependrows + sum of "
                         "featuresizes %lld", (long long)o->concat_stride, (long long)width);
    return 0;
}

int emb_maplookup_backward(EmbTable *const *tables, int64_t ntables, const EmbBatch *batches,
                           const EmbPooling *poolings, const EmbOutputs *grad_outputs,
                           EmbGrad *const *grads)
{
    EMB_CHECK_NULL(tables);
    EMB_CHECK_NULL(batches);
    EMB_CHECK_NULL(grad_outputs);
    EMB_CHECK_NULL(grads);
    if (ntables <= 0)
        return emb__fail(EMB_EINVAL, "emb_maplookup_backward: ntables %lld <= 0",
                         (long long)ntables);
    for (int64_t i = 0; i < ntables; i++)
        if (!tables[i] || !grads[i])
            return emb__fail(EMB_ENULL, "emb_maplookup_backward: table or grad %lld is NULL",
                             (long long)i);
    int r = outputs_check(tables, ntables, batches, grad_outputs);
    for (int64_t i = 0; i < ntables && !r; i++) {
        int64_t stride;
        const float *dy = slice(grad_outputs, tables, i, &stride);
        EmbGrad probe;
        r = emb_lookup_backward(tables[i], &batches[i], poolings ? &poolings[i] : NULL, dy,
                                stride, &probe);
    }
    if (r)
        return r;
    for (int64_t i = 0; i < ntables; i++) {
        int64_t stride;
        const float *dy = slice(grad_outputs, tables, i, &stride);
        emb_lookup_backward(tables[i], &batches[i], poolings ? &poolings[i] : NULL, dy, stride,
                            grads[i]);
    }
    return 0;
}
