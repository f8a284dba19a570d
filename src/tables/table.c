/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * table.c — the table interface and the simple (owned / wrapped) and custom table types.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "platform.h"
#include "tables/table_impl.h"

static void *custom_column(const EmbTable *t, int64_t column, EmbContext ctx)
{
    return t->user_fn(t->user, column, ctx);
}

static void custom_destroy(EmbTable *t)
{
    if (t->user_destroy)
        t->user_destroy(t->user);
}

const EmbTableOps emb__simple_ops = {.kind = "simple", .rows = &emb__rows_dense};
static const EmbRowsFacet custom_rows = EMB_ROWS_BY_COLUMN(custom_column);
static const EmbTableOps custom_ops = {.kind = "custom", .rows = &custom_rows,
                                       .destroy = custom_destroy};

int emb__table_alloc(EmbTable **out, int64_t ncolumns, int32_t featuresize, EmbDtype dtype,
                     const EmbTableOptions *opts)
{
    EMB_CHECK_NULL(out);
    const char *name = opts && opts->name ? opts->name : "";
    if (ncolumns < 0)
        return emb__fail(EMB_EINVAL, "ncolumns %lld is negative (table \"%s\")",
                         (long long)ncolumns, name);
    if (featuresize < 1)
        return emb__fail(EMB_EINVAL, "featuresize %d is not >= 1 (table \"%s\")",
                         (int)featuresize, name);
    if (emb__row_bytes(dtype, 1) == 0 && emb__row_bytes(dtype, 2) == 0)
        return emb__fail(EMB_EDTYPE, "dtype %d is not f32, f16, bf16, int8 or int4 (table \"%s\")",
                         (int)dtype, name);
    if (emb__row_bytes(dtype, featuresize) == 0)
        return emb__fail(EMB_ESHAPE, "featuresize %d is odd: int4 rows hold two values a byte "
                         "(table \"%s\")", (int)featuresize, name);
    if (opts) {
        const int r = emb__placement_check(opts->placement, opts->numa_node, name[0] ? name : "unnamed table");
        if (r)
            return r;
    }
    if (opts && (opts->flags & ~(unsigned)EMB_TABLE_CHECK_FINITE))
        return emb__fail(EMB_EINVAL, "table flags 0x%x have unknown bits (table \"%s\")",
                         opts->flags, name);
    if (opts && opts->static_size != 0 && opts->static_size != featuresize)
        return emb__fail(EMB_ESHAPE, "static_size %d != featuresize %d (table \"%s\")",
                         (int)opts->static_size, (int)featuresize, name);
    EmbTable *t = calloc(1, sizeof *t);
    if (!t)
        return emb__fail(EMB_ENOMEM, "out of memory for a table header");
    t->dtype = dtype;
    t->featuresize = featuresize;
    t->static_size = opts ? opts->static_size : 0;
    t->check_finite = opts && (opts->flags & EMB_TABLE_CHECK_FINITE);
    t->ncolumns = ncolumns;
    t->elsize = emb__dtype_quantized(dtype) ? 1 : emb_dtype_size(dtype); /* stride unit */
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ops = &emb__simple_ops;
    *out = t;
    return 0;
}

int emb__column_stride(size_t rowbytes, const EmbTableOptions *opts, size_t *stride,
                       size_t *align)
{
    size_t a = opts && opts->column_align ? (size_t)opts->column_align : 0;
    if (a == 0) {
        a = EMB_ALIGN;
        while (a / 2 >= rowbytes && a > 4)
            a /= 2;
    } else if ((a & (a - 1)) != 0 || a > 4096) {
        return emb__fail(EMB_EINVAL, "column_align %d is not a power of two <= 4096",
                         (int)opts->column_align);
    }
    *stride = (rowbytes + a - 1) / a * a;
    *align = a < EMB_ALIGN ? EMB_ALIGN : a;
    return 0;
}

int emb__finite_check(const EmbTable *t, const float *rows, int64_t n, int32_t width,
                      int64_t stride, const char *what)
{
    if (!t->check_finite || !rows)
        return 0;
    for (int64_t r = 0; r < n; r++)
        for (int32_t i = 0; i < width; i++)
            if (!isfinite(rows[r * stride + i]))
                return emb__fail(EMB_ENONFINITE, "%s: element %d of row %lld is %g (%s checks "
                                 "for finite values)", what, (int)i, (long long)r,
                                 (double)rows[r * stride + i], emb__table_label(t));
    return 0;
}

/*
 * The options the column stride follows. A quantized row longer than half a cache line is
 * packed at the alignment of its scale (int8 at D >= 25: 8 bytes; int4 at D >= 58: 4
 * bytes, torch's own stride) instead of padded to a whole line: at D = 64 int8 (72 bytes)
 * touches 2 lines either way and the table is 44 % smaller than with 128-byte columns;
 * int4 (36 bytes) spans 2 lines in 7 rows of 16 instead of 1, but the table is 44 %
 * smaller than with 64-byte columns, and random rows from DRAM are bound by the rows'
 * address translation more than by their lines (a Zen 5 VM: emb-bench quant --mib 1024, int4
 * 267 -> 306 M rows/s at 1 thread, 268 -> 285 M at 2, 6 interleaved runs; README
 * "Quantized tables").
 */
static const EmbTableOptions *stride_opts(EmbDtype dt, int32_t D, const EmbTableOptions *opts)
{
    static const EmbTableOptions packed8 = {.column_align = 8}, packed4 = {.column_align = 4};
    if (!emb__dtype_quantized(dt) || (opts && opts->column_align) ||
        emb__row_bytes(dt, D) <= EMB_ALIGN / 2)
        return opts;
    return dt == EMB_INT4 ? &packed4 : &packed8;
}

int emb_table_create(EmbTable **out, int64_t ncolumns, int32_t featuresize, EmbDtype dtype,
                     const EmbTableOptions *opts)
{
    EMB_CHECK_NULL(out);
    EmbTable *t = NULL;
    int r = emb__table_alloc(&t, ncolumns, featuresize, dtype, opts);
    if (r)
        return r;
    size_t stride = 0, align = EMB_ALIGN;
    int64_t bytes;
    r = emb__column_stride(emb__row_bytes(dtype, featuresize), stride_opts(dtype, featuresize,
                                                                            opts), &stride, &align);
    if (r)
        goto fail;
    if (!emb__mul_ok(ncolumns, (int64_t)stride, &bytes) || (uint64_t)bytes > SIZE_MAX / 2) {
        r = emb__fail(EMB_EOVERFLOW, "%lld columns of %zu bytes overflow (%s)",
                      (long long)ncolumns, stride, emb__table_label(t));
        goto fail;
    }
    t->data = emb__big_alloc(align, (size_t)bytes);
    if (!t->data) {
        r = emb__fail(EMB_ENOMEM, "cannot allocate %lld bytes (%s)", (long long)bytes,
                      emb__table_label(t));
        goto fail;
    }
    t->owned = true;
    t->stride = stride;
    r = emb__platform_bind_memory(t->data, (size_t)bytes, opts ? opts->placement : 0,
                                  opts ? opts->numa_node : 0);
    if (r)
        goto fail;
    memset(t->data, 0, (size_t)bytes);
    *out = t;
    return 0;
fail:
    emb_table_destroy(&t);
    return r;
}

/* EMB_TABLE_CHECK_FINITE on a wrapped quantized table: every element of every row reads
   finite (a NaN or infinite scale or bias, or finite ones whose values overflow: refused). */
static int wrapped_rows_check(const EmbTable *t)
{
    if (!t->check_finite || !emb__dtype_quantized(t->dtype))
        return 0;
    for (int64_t c = 0; c < t->ncolumns; c++) {
        const int32_t i = emb__q_row_nonfinite(t->dtype, t->data + (size_t)c * t->stride,
                                               t->featuresize);
        if (i >= 0)
            return emb__fail(EMB_ENONFINITE, "element %d of row %lld reads %g (its scale and "
                             "bias give no finite value; %s checks for finite values)", (int)i,
                             (long long)c, (double)emb__row_elem(t->dtype, t->data +
                             (size_t)c * t->stride, t->featuresize, i), emb__table_label(t));
    }
    return 0;
}

int emb_table_wrap(EmbTable **out, void *data, int64_t ncolumns, int32_t featuresize,
                   int64_t column_stride, EmbDtype dtype, const EmbTableOptions *opts)
{
    EMB_CHECK_NULL(out);
    if (ncolumns > 0)
        EMB_CHECK_NULL(data);
    EmbTable *t = NULL;
    int r = emb__table_alloc(&t, ncolumns, featuresize, dtype, opts);
    if (r)
        return r;
    const int64_t min_stride = (int64_t)(emb__row_bytes(dtype, featuresize) / t->elsize);
    if (column_stride < min_stride) {
        emb_table_destroy(&t);
        return emb__fail(EMB_ESTRIDE, "column_stride %lld < %lld (featuresize %d in %s)",
                         (long long)column_stride, (long long)min_stride, (int)featuresize,
                         emb_dtype_name(dtype));
    }
    int64_t sb, total;
    if (!emb__mul_ok(column_stride, (int64_t)t->elsize, &sb) ||
        !emb__mul_ok(ncolumns, sb, &total)) {
        emb_table_destroy(&t);
        return emb__fail(EMB_EOVERFLOW, "%lld columns of stride %lld overflow",
                         (long long)ncolumns, (long long)column_stride);
    }
    t->data = data;
    t->stride = (size_t)sb;
    r = wrapped_rows_check(t);
    if (r) {
        emb_table_destroy(&t);
        return r;
    }
    *out = t;
    return 0;
}

int emb_table_custom(EmbTable **out, int64_t ncolumns, int32_t featuresize, EmbDtype dtype,
                     emb_column_pointer_fn fn, void *user, emb_destroy_fn destroy,
                     const EmbTableOptions *opts)
{
    EMB_CHECK_NULL(out);
    EMB_CHECK_NULL(fn);
    EmbTable *t = NULL;
    int r = emb__table_alloc(&t, ncolumns, featuresize, dtype, opts);
    if (r)
        return r;
    t->ops = &custom_ops;
    t->user_fn = fn;
    t->user = user;
    t->user_destroy = destroy;
    *out = t;
    return 0;
}

void emb_table_destroy(EmbTable **pt)
{
    if (!pt || !*pt)
        return;
    EmbTable *t = *pt;
    if (t->owned)
        emb__aligned_free(t->data);
    if (t->ops->destroy)
        t->ops->destroy(t);
    free(t->touched);
    free(t->touched_at);
    free(t->saved_keys);
    free(t);
    *pt = NULL;
}

int emb_table_column_pointer(const EmbTable *t, int64_t column, EmbContext ctx, void **out)
{
    EMB_CHECK_NULL(t);
    EMB_CHECK_NULL(out);
    if (ctx < EMB_CTX_NONE || ctx > EMB_CTX_UPDATE)
        return emb__fail(EMB_EINVAL, "context %d is not NONE, FORWARD or UPDATE (%s)", (int)ctx,
                         emb__table_label(t));
    if (column < 0 || column >= t->ncolumns)
        return emb__fail(EMB_ERANGE, "column %lld is not in [0, %lld) (%s)", (long long)column,
                         (long long)t->ncolumns, emb__table_label(t));
    if (ctx == EMB_CTX_UPDATE) /* the caller writes it: not tracked */
        emb__touched_all((EmbTable *)t);
    if (ctx == EMB_CTX_UPDATE && emb__table_keyed(t)) /* may create the row: may fail */
        return emb__table_column_create((EmbTable *)t, column, out);
    if (emb__table_pins(t)) { /* fetched (a disk read): may fail, unlike column() */
        const EmbIdSpan s = {&column, 0, 0, 1, NULL};
        const void *col = NULL;
        unsigned hint;
        const int r = emb__table_acquire(t, &s, ctx, &col, &hint);
        if (!r)
            *out = (void *)col;
        return r;
    }
    *out = emb__column(t, column, ctx);
    return 0;
}

int64_t emb_table_ncolumns(const EmbTable *t)
{
    return t ? t->ncolumns : 0;
}

int32_t emb_table_featuresize(const EmbTable *t)
{
    return t ? t->featuresize : 0;
}

int emb_table_is_static(const EmbTable *t)
{
    return t && t->static_size != 0;
}

EmbDtype emb_table_dtype(const EmbTable *t)
{
    return t ? t->dtype : EMB_F32;
}

const char *emb_table_name(const EmbTable *t)
{
    return t ? t->name : "";
}

void *emb_table_data(const EmbTable *t, int64_t *column_stride)
{
    if (column_stride)
        *column_stride = t && t->data ? (int64_t)(t->stride / t->elsize) : 0;
    return t ? t->data : NULL;
}
