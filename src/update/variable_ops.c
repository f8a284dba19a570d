/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * variable_ops.c — tf.Variable operations on tables: whole-table assign / assign_add /
 * assign_sub / read, scatter update / add / sub / mul / div, and sparse_mask. They work on
 * every table type through the column pointer and compute in f32, rounding each result to
 * the table's dtype. Every argument and id is checked before the first write.
 *
 * A kind whose rows must be fetched (its rows facet pins: a tiered table, whose rows live on disk)
 * is worked through its fallible resolve, never column() (which cannot report a failed
 * read): a scatter pins every row it writes before the first write (a failed read writes
 * nothing); a whole-table pass goes CHUNK rows at a time, each chunk resolved, done and
 * released, so its memory stays bounded for a table larger than RAM. So that a failed
 * read writes nothing there too, a whole-table pass (assign, read, quantize) first reads
 * every row of its fetching tables without writing (rows_readable: the reads, and the
 * write-backs of the dirty rows they evict, are what may fail), then makes its pass. The
 * one exception, kept this narrow: a disk that fails between the two passes stops the
 * second one, having written the rows before the failed read (the message names the file
 * and the rows).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

typedef enum Op { OP_SET, OP_ADD, OP_SUB, OP_MUL, OP_DIV } Op;

/* col = col op x, elementwise over the table's featuresize, through @row (featuresize
 * floats): the row is read as f32 and written back whole in its dtype (rounded to nearest;
 * a quantized row gets a new scale and bias). */
static void combine(const EmbTable *t, void *col, const float *x, Op op, float *row)
{
    const int32_t D = t->featuresize;
    if (op != OP_SET)
        emb__row_load(t->dtype, col, D, row);
    for (int32_t i = 0; i < D; i++) {
        const float a = row[i];
        switch (op) {
        case OP_ADD: row[i] = a + x[i]; break;
        case OP_SUB: row[i] = a - x[i]; break;
        case OP_MUL: row[i] = a * x[i]; break;
        case OP_DIV: row[i] = a / x[i]; break;
        default: row[i] = x[i]; break;
        }
    }
    emb__row_store(t->dtype, col, D, row);
}

/* A row of featuresize floats for combine (before anything is written). */
static float *row_buffer(const EmbTable *t)
{
    float *row = malloc((size_t)t->featuresize * sizeof(float));
    if (!row)
        emb__fail(EMB_ENOMEM, "out of memory for a row of %d floats (%s)", (int)t->featuresize,
                  emb__table_label(t));
    return row;
}

/* Checks rows of featuresize f32 at @p (named @what) with @stride (named @sname): @n rows
   addressable. */
static int rows_check(const EmbTable *t, const float *p, int64_t n, int64_t stride,
                      const char *what, const char *sname)
{
    if (n > 0 && !p)
        return emb__fail(EMB_ENULL, "%s is NULL (%s)", what, emb__table_label(t));
    if (stride < t->featuresize)
        return emb__fail(EMB_ESTRIDE, "%s %lld < featuresize %d (%s)", sname,
                         (long long)stride, (int)t->featuresize, emb__table_label(t));
    if (!emb__rows_fit(n, stride, t->featuresize))
        return emb__fail(EMB_EOVERFLOW, "%s: %lld rows of %s %lld overflow (%s)", what,
                         (long long)n, sname, (long long)stride, emb__table_label(t));
    return 0;
}

/* ---- rows of a kind that fetches them ----------------------------------------------- */

#define CHUNK 1024 /* rows a whole-table pass over a fetching kind pins at a time */

/* cols[k] = the row of ids[k] (ids NULL: column first + k), k < n, for @ctx: through column()
   for a kind that does not fetch rows; else resolved in spans and pinned until
   emb__table_release (UPDATE: marked dirty too). 0, or the kind's error (a failed read:
   EMB_EIO naming the file and rows; then nothing stays pinned). */
static int rows_of(const EmbTable *t, const int64_t *ids, int64_t first, int64_t n,
                   EmbContext ctx, void **cols)
{
    if (!emb__table_pins(t)) {
        for (int64_t k = 0; k < n; k++)
            cols[k] = emb__column(t, ids ? ids[k] : first + k, ctx);
        return 0;
    }
    int64_t span[EMB_SPAN_MAX];
    for (int64_t k0 = 0; k0 < n; k0 += EMB_SPAN_MAX) {
        const int64_t m = EMB_MIN((int64_t)EMB_SPAN_MAX, n - k0);
        for (int64_t j = 0; j < m; j++)
            span[j] = ids ? ids[k0 + j] : first + k0 + j;
        const EmbIdSpan s = {span, 0, 0, m, NULL};
        unsigned hint;
        const int r = emb__table_acquire(t, &s, ctx, (const void **)(cols + k0), &hint);
        if (r) {
            emb__table_release(t);
            return r;
        }
    }
    return 0;
}

/* The end of a pass over rows from rows_of(). */
static void rows_done(const EmbTable *t)
{
    if (emb__table_pins(t))
        emb__table_release(t);
}

/* Every row of a fetching kind read, CHUNK rows at a time, nothing written (a no-op for
   other kinds): 0, or the kind's error (a failed read: EMB_EIO naming the file and rows). */
static int rows_readable(const EmbTable *t)
{
    if (!emb__table_pins(t))
        return 0;
    void *cols[CHUNK];
    for (int64_t c0 = 0; c0 < t->ncolumns; c0 += CHUNK) {
        const int r = rows_of(t, NULL, c0, EMB_MIN((int64_t)CHUNK, t->ncolumns - c0),
                              EMB_CTX_NONE, cols);
        if (r)
            return r;
        rows_done(t);
    }
    return 0;
}

/* Whole-table operations need a row count: not on a dynamic table. */
static int whole_check(const EmbTable *t)
{
    if (emb__table_rows_appear(t))
        return emb__fail(EMB_ENOTSUP, "%s is dynamic: read or assign it by id "
                         "(emb_table_dynamic_export / _import, scatter ops)", emb__table_label(t));
    return 0;
}

static int assign_op(EmbTable *t, const float *values, int64_t ncolumns, int32_t featuresize,
                     int64_t stride, Op op)
{
    EMB_CHECK_NULL(t);
    if (whole_check(t))
        return EMB_ENOTSUP;
    if (ncolumns != t->ncolumns || featuresize != t->featuresize)
        return emb__fail(EMB_ESHAPE, "values of ncolumns %lld x featuresize %d assigned to %s "
                         "of %lld x %d", (long long)ncolumns, (int)featuresize,
                         emb__table_label(t), (long long)t->ncolumns, (int)t->featuresize);
    int r = rows_check(t, values, ncolumns, stride, "values", "stride");
    r = r ? r : emb__finite_check(t, values, ncolumns, t->featuresize, stride, "values");
    r = r ? r : rows_readable(t);
    if (r)
        return r;
    float *row = row_buffer(t);
    if (!row)
        return EMB_ENOMEM;
    void *cols[CHUNK];
    emb__touched_all(t);
    for (int64_t c0 = 0; c0 < t->ncolumns && !r; c0 += CHUNK) {
        const int64_t m = EMB_MIN((int64_t)CHUNK, t->ncolumns - c0);
        r = rows_of(t, NULL, c0, m, EMB_CTX_UPDATE, cols);
        for (int64_t j = 0; j < m && !r; j++)
            combine(t, cols[j], values + (c0 + j) * stride, op, row);
        if (!r)
            rows_done(t);
    }
    free(row);
    return r;
}

int emb_table_assign(EmbTable *t, const float *values, int64_t ncolumns, int32_t featuresize,
                     int64_t stride)
{
    return assign_op(t, values, ncolumns, featuresize, stride, OP_SET);
}

int emb_table_assign_add(EmbTable *t, const float *values, int64_t ncolumns,
                         int32_t featuresize, int64_t stride)
{
    return assign_op(t, values, ncolumns, featuresize, stride, OP_ADD);
}

int emb_table_assign_sub(EmbTable *t, const float *values, int64_t ncolumns,
                         int32_t featuresize, int64_t stride)
{
    return assign_op(t, values, ncolumns, featuresize, stride, OP_SUB);
}

int emb_table_read(const EmbTable *t, float *out, int64_t out_stride)
{
    EMB_CHECK_NULL(t);
    if (whole_check(t))
        return EMB_ENOTSUP;
    int r = rows_check(t, out, t->ncolumns, out_stride, "out", "out_stride");
    r = r ? r : rows_readable(t);
    void *cols[CHUNK];
    for (int64_t c0 = 0; c0 < t->ncolumns && !r; c0 += CHUNK) {
        const int64_t m = EMB_MIN((int64_t)CHUNK, t->ncolumns - c0);
        r = rows_of(t, NULL, c0, m, EMB_CTX_NONE, cols);
        for (int64_t j = 0; j < m && !r; j++)
            emb__row_load(t->dtype, cols[j], t->featuresize, out + (c0 + j) * out_stride);
        if (!r)
            rows_done(t);
    }
    return r;
}

/* Every row of @src readable and, with EMB_TABLE_CHECK_FINITE on @dst, finite (read
   through @row); every row of @dst readable. */
static int quantize_check(const EmbTable *dst, const EmbTable *src, float *row)
{
    int r = rows_readable(dst);
    if (r || !dst->check_finite)
        return r ? r : rows_readable(src);
    void *cols[CHUNK];
    for (int64_t c0 = 0; c0 < src->ncolumns && !r; c0 += CHUNK) {
        const int64_t m = EMB_MIN((int64_t)CHUNK, src->ncolumns - c0);
        if ((r = rows_of(src, NULL, c0, m, EMB_CTX_NONE, cols)) != 0)
            break;
        for (int64_t j = 0; j < m && !r; j++) {
            emb__row_load(src->dtype, cols[j], src->featuresize, row);
            char what[64];
            snprintf(what, sizeof what, "source row %lld", (long long)(c0 + j));
            r = emb__finite_check(dst, row, 1, src->featuresize, src->featuresize, what);
        }
        rows_done(src);
    }
    return r;
}

int emb_table_quantize(EmbTable *dst, const EmbTable *src)
{
    EMB_CHECK_NULL(dst);
    EMB_CHECK_NULL(src);
    if (dst == src)
        return emb__fail(EMB_EINVAL, "emb_table_quantize: %s is both source and destination",
                         emb__table_label(dst));
    if (whole_check(dst) || whole_check(src))
        return EMB_ENOTSUP;
    if (dst->ncolumns != src->ncolumns || dst->featuresize != src->featuresize)
        return emb__fail(EMB_ESHAPE, "emb_table_quantize: %lld x %d source into %s of %lld x %d",
                         (long long)src->ncolumns, (int)src->featuresize,
                         emb__table_label(dst), (long long)dst->ncolumns, (int)dst->featuresize);
    float *row = row_buffer(dst);
    if (!row)
        return EMB_ENOMEM;
    int r = quantize_check(dst, src, row);
    emb__touched_all(dst);
    void *from[CHUNK], *to[CHUNK];
    for (int64_t c0 = 0; c0 < src->ncolumns && !r; c0 += CHUNK) {
        const int64_t m = EMB_MIN((int64_t)CHUNK, src->ncolumns - c0);
        r = rows_of(src, NULL, c0, m, EMB_CTX_NONE, from);
        if (!r && (r = rows_of(dst, NULL, c0, m, EMB_CTX_UPDATE, to)) != 0)
            rows_done(src);
        for (int64_t j = 0; j < m && !r; j++) {
            emb__row_load(src->dtype, from[j], src->featuresize, row);
            emb__row_store(dst->dtype, to[j], dst->featuresize, row);
        }
        if (!r)
            rows_done(src), rows_done(dst);
    }
    free(row);
    return r;
}

static int scatter_op(EmbTable *t, const int64_t *ids, int64_t n, const float *updates,
                      int64_t stride, Op op)
{
    EMB_CHECK_NULL(t);
    if (n < 0)
        return emb__fail(EMB_EINVAL, "scatter: n %lld is negative", (long long)n);
    if (n > 0)
        EMB_CHECK_NULL(ids);
    int r = rows_check(t, updates, n, stride, "updates", "stride");
    r = r ? r : emb__finite_check(t, updates, n, t->featuresize, stride, "updates");
    if (r)
        return r;
    for (int64_t k = 0; k < n; k++)
        if (ids[k] < 0 || ids[k] >= t->ncolumns)
            return emb__fail(EMB_ERANGE, "scatter id %lld at position %lld is not in [0, %lld) "
                             "(%s)", (long long)ids[k], (long long)k, (long long)t->ncolumns,
                             emb__table_label(t));
    float *row = row_buffer(t);
    if (!row)
        return EMB_ENOMEM;
    if (emb__table_keyed(t)) { /* rows of unknown ids are created: room for them first */
        r = emb__table_reserve_ids(t, ids, n);
        if (r) {
            free(row);
            return r;
        }
    }
    emb__touched_set(t, ids, n); /* delta checkpoints: rows written (if it fails, later) */
    void **cols = emb__table_pins(t) ? malloc((size_t)EMB_MAX(n, 1) * sizeof *cols) : NULL;
    if (emb__table_pins(t)) { /* every row pinned before the first write */
        r = cols ? rows_of(t, ids, 0, n, EMB_CTX_UPDATE, cols)
                 : emb__fail(EMB_ENOMEM, "out of memory for %lld row pointers (%s)",
                             (long long)n, emb__table_label(t));
        for (int64_t k = 0; k < n && !r; k++)
            combine(t, cols[k], updates + k * stride, op, row);
        if (!r)
            rows_done(t);
    } else {
        for (int64_t k = 0; k < n; k++)
            combine(t, emb__column(t, ids[k], EMB_CTX_UPDATE), updates + k * stride, op, row);
    }
    free(cols);
    free(row);
    return r;
}

int emb_table_scatter_update(EmbTable *t, const int64_t *ids, int64_t n, const float *updates,
                             int64_t stride)
{
    return scatter_op(t, ids, n, updates, stride, OP_SET);
}

int emb_table_scatter_add(EmbTable *t, const int64_t *ids, int64_t n, const float *updates,
                          int64_t stride)
{
    return scatter_op(t, ids, n, updates, stride, OP_ADD);
}

int emb_table_scatter_sub(EmbTable *t, const int64_t *ids, int64_t n, const float *updates,
                          int64_t stride)
{
    return scatter_op(t, ids, n, updates, stride, OP_SUB);
}

int emb_table_scatter_mul(EmbTable *t, const int64_t *ids, int64_t n, const float *updates,
                          int64_t stride)
{
    return scatter_op(t, ids, n, updates, stride, OP_MUL);
}

int emb_table_scatter_div(EmbTable *t, const int64_t *ids, int64_t n, const float *updates,
                          int64_t stride)
{
    return scatter_op(t, ids, n, updates, stride, OP_DIV);
}

static int mask_check(const EmbSparseGrad *in, const int64_t *mask_ids, int64_t nmask,
                      const int64_t *out_ids, const float *out_values, int64_t out_stride)
{
    if (in->n < 0 || nmask < 0)
        return emb__fail(EMB_EINVAL, "sparse_mask: n %lld or nmask %lld is negative",
                         (long long)in->n, (long long)nmask);
    if (in->id_type != EMB_ID_I64 && in->id_type != EMB_ID_I32)
        return emb__fail(EMB_EINVAL, "sparse_mask: id_type %d is not I64 or I32",
                         (int)in->id_type);
    const char *null = in->n > 0 && !in->ids ? "in->ids"
                     : in->n > 0 && !in->values ? "in->values"
                     : in->n > 0 && !out_ids ? "out_ids"
                     : in->n > 0 && !out_values ? "out_values"
                     : nmask > 0 && !mask_ids ? "mask_ids" : NULL;
    if (null)
        return emb__fail(EMB_ENULL, "sparse_mask: %s is NULL (n %lld, nmask %lld)", null,
                         (long long)in->n, (long long)nmask);
    if (in->featuresize < 1)
        return emb__fail(EMB_EINVAL, "sparse_mask: featuresize %d is not >= 1",
                         (int)in->featuresize);
    if (in->stride < in->featuresize || out_stride < in->featuresize)
        return emb__fail(EMB_ESTRIDE, "sparse_mask: stride %lld / out_stride %lld < "
                         "featuresize %d", (long long)in->stride, (long long)out_stride,
                         (int)in->featuresize);
    if (!emb__rows_fit(in->n, in->stride, in->featuresize) ||
        !emb__rows_fit(in->n, out_stride, in->featuresize))
        return emb__fail(EMB_EOVERFLOW, "sparse_mask: %lld rows of stride %lld / out_stride "
                         "%lld overflow", (long long)in->n, (long long)in->stride,
                         (long long)out_stride);
    return 0;
}

int emb_sparse_mask(const EmbSparseGrad *in, const int64_t *mask_ids, int64_t nmask,
                    EmbSparseGrad *out, int64_t *out_ids, float *out_values, int64_t out_stride)
{
    EMB_CHECK_NULL(in);
    EMB_CHECK_NULL(out);
    int r = mask_check(in, mask_ids, nmask, out_ids, out_values, out_stride);
    EmbIndexer *mask = NULL;
    r = r ? r : emb_indexer_create(&mask);
    r = r ? r : emb_indexer_index(mask, mask_ids, nmask);
    if (r) {
        emb_indexer_destroy(&mask);
        return r;
    }
    int64_t m = 0;
    for (int64_t k = 0; k < in->n; k++) {
        const int64_t id = in->id_type == EMB_ID_I32 ? ((const int32_t *)in->ids)[k]
                                                     : ((const int64_t *)in->ids)[k];
        if (emb__indexer_find(mask, id) >= 0)
            continue;
        out_ids[m] = id;
        memcpy(out_values + m * out_stride, in->values + k * in->stride,
               (size_t)in->featuresize * sizeof(float));
        m++;
    }
    emb_indexer_destroy(&mask);
    *out = (EmbSparseGrad){.ids = out_ids, .id_type = EMB_ID_I64, .n = m,
                           .featuresize = in->featuresize, .values = out_values,
                           .stride = out_stride};
    return 0;
}
