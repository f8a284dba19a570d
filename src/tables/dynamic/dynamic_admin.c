/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynamic_admin.c — the dynamic tables' public administration (dynamic.h): stats, step, contains, evict, export, import (and reserve_ids, the room import and scatter writes need), over one table or a table partitioned over dynamic shards.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "initval.h"
#include "rng.h"
#include "tables/dynamic/dynamic_impl.h"

int emb_table_is_dynamic(const EmbTable *t)
{
    return t && emb__is_dynamic(t);
}

static int dyn_check(const EmbTable *t)
{
    EMB_CHECK_NULL(t);
    if (!emb__is_dynamic(t))
        return emb__fail(EMB_EINVAL, "%s is not a dynamic table", emb__table_label(t));
    return 0;
}

/* Partitioned over dynamic shards (a table with shards, dynamic ones): the shard count,
   else 0. */
static int32_t dyn_parts(const EmbTable *t)
{
    return t && t->ops->shard && emb__is_dynamic(t->ops->shard(t, 0)) ? t->ops->nshards(t)
                                                                      : 0;
}

static EmbTable *dyn_shard(const EmbTable *t, int32_t i)
{
    return t->ops->shard(t, i);
}

int emb_table_dynamic_stats(const EmbTable *t, EmbDynamicStats *out)
{
    if (dyn_parts(t)) { /* the shards' sums; their common step */
        EMB_CHECK_NULL(out);
        EmbDynamicStats sum = {0}, s;
        for (int32_t i = 0; i < dyn_parts(t); i++) {
            emb_table_dynamic_stats(dyn_shard(t, i), &s);
            sum.rows += s.rows;
            sum.slab_rows += s.slab_rows;
            sum.index_slots += s.index_slots;
            sum.bytes += s.bytes;
            sum.step = i == 0 ? s.step : sum.step;
        }
        *out = sum;
        return 0;
    }
    int r = dyn_check(t);
    if (r)
        return r;
    EMB_CHECK_NULL(out);
    const Dyn *d = dyn_of(t);
    const int64_t slab_rows = d->nslabs << d->shift;
    *out = (EmbDynamicStats){
        .rows = d->nrows, .slab_rows = slab_rows, .index_slots = d->x.nslots, .step = d->step,
        .bytes = slab_rows * (int64_t)(d->stride + d->sstride + 2 * sizeof(int64_t)) +
                 d->x.nslots * (int64_t)sizeof(DynSlot) +
                 SKETCH_DEPTH * d->sketch_width * (int64_t)sizeof(uint16_t)};
    return 0;
}

int64_t emb_table_dynamic_step(const EmbTable *t)
{
    if (dyn_parts(t))
        return emb_table_dynamic_step(dyn_shard(t, 0));
    return emb_table_is_dynamic(t) ? dyn_of(t)->step : 0;
}

int emb_table_dynamic_contains(const EmbTable *t, int64_t id)
{
    if (dyn_parts(t))
        return id >= 0 && emb__dynamic_has(dyn_shard(t, (int32_t)(id % dyn_parts(t))), id);
    const int r = dyn_check(t);
    return r ? r : emb__dynamic_has(t, id);
}

/* L2 norm of a row, in double over its elements in order. */
static double row_norm(const Dyn *d, int64_t r)
{
    const char *row = row_ptr(d, r);
    double s = 0.0;
    for (int32_t i = 0; i < d->D; i++) {
        const double x = emb__load(d->dtype, row, i);
        s += x * x;
    }
    return sqrt(s);
}

int emb_table_dynamic_evict(EmbTable *t, const EmbDynamicEvict *ev, int64_t *evicted)
{
    if (dyn_parts(t)) { /* every shard (the first call checks the criteria) */
        int64_t sum = 0, n = 0;
        int r = 0;
        for (int32_t i = 0; i < dyn_parts(t) && !r; i++, sum += n)
            r = emb_table_dynamic_evict(dyn_shard(t, i), ev, &n);
        if (!r && evicted)
            *evicted = sum;
        return r;
    }
    int r = dyn_check(t);
    if (r)
        return r;
    EMB_CHECK_NULL(ev);
    if (ev->ttl < 0 || !(ev->min_norm >= 0.0f) || (ev->flags & ~(unsigned)EMB_DYN_EVICT_ALL))
        return emb__fail(EMB_EINVAL, "evict: ttl %lld, min_norm %g, flags 0x%x: need ttl >= 0, "
                         "min_norm >= 0 and no unknown flag (%s)", (long long)ev->ttl,
                         (double)ev->min_norm, ev->flags, emb__table_label(t));
    Dyn *d = dyn_of(t);
    const bool by_age = ev->ttl > 0, by_norm = ev->min_norm > 0.0f;
    const bool all = (ev->flags & EMB_DYN_EVICT_ALL) != 0;
    int64_t n = 0;
    for (int64_t row = 0; (by_age || by_norm) && row < d->used; row++) {
        if (d->rowid[row] < 0)
            continue;
        const bool old = by_age && d->step - d->last[row] > ev->ttl;
        const bool small = by_norm && row_norm(d, row) < (double)ev->min_norm;
        const bool go = all ? (old || !by_age) && (small || !by_norm) : old || small;
        if (go) {
            emb__dyn_evict_row(d, row);
            n++;
        }
    }
    if (evicted)
        *evicted = n;
    return 0;
}

/* Rows in increasing id order: (id, row) pairs sorted. */
typedef struct IdRow {
    int64_t id, row;
} IdRow;

static int idrow_cmp(const void *a, const void *b)
{
    const int64_t x = ((const IdRow *)a)->id, y = ((const IdRow *)b)->id;
    return (x > y) - (x < y);
}

int emb_table_dynamic_export(const EmbTable *t, int64_t *ids, float *rows, int64_t row_stride,
                             int64_t cap, int64_t *n)
{
    int r = dyn_check(t);
    if (r)
        return r;
    EMB_CHECK_NULL(n);
    const Dyn *d = dyn_of(t);
    if (!ids) {
        *n = d->nrows;
        return 0;
    }
    EMB_CHECK_NULL(rows);
    if (row_stride < d->D)
        return emb__fail(EMB_ESTRIDE, "export: row_stride %lld < featuresize %d (%s)",
                         (long long)row_stride, (int)d->D, emb__table_label(t));
    if (!emb__rows_fit(EMB_MAX(cap, d->nrows), row_stride, d->D))
        return emb__fail(EMB_EOVERFLOW, "export: %lld rows of row_stride %lld overflow (%s)",
                         (long long)EMB_MAX(cap, d->nrows), (long long)row_stride,
                         emb__table_label(t));
    if (cap < d->nrows)
        return emb__fail(EMB_ERANGE, "export: room for %lld rows, %s has %lld", (long long)cap,
                         emb__table_label(t), (long long)d->nrows);
    IdRow *v = malloc((size_t)EMB_MAX(d->nrows, 1) * sizeof *v);
    if (!v)
        return emb__fail(EMB_ENOMEM, "out of memory to sort %lld ids", (long long)d->nrows);
    int64_t k = 0;
    for (int64_t row = 0; row < d->used; row++)
        if (d->rowid[row] >= 0)
            v[k++] = (IdRow){d->rowid[row], row};
    qsort(v, (size_t)k, sizeof *v, idrow_cmp);
    for (int64_t j = 0; j < k; j++) {
        ids[j] = v[j].id;
        const char *src = row_ptr(d, v[j].row);
        for (int32_t i = 0; i < d->D; i++)
            rows[j * row_stride + i] = emb__load(d->dtype, src, i);
    }
    free(v);
    *n = k;
    return 0;
}

int emb__dynamic_reserve_ids(EmbTable *t, const int64_t *ids, int64_t n)
{
    Dyn *d = dyn_of(t);
    IdRow *v = malloc((size_t)EMB_MAX(n, 1) * sizeof *v);
    if (!v)
        return emb__fail(EMB_ENOMEM, "out of memory for %lld ids", (long long)n);
    int64_t m = 0;
    for (int64_t k = 0; k < n; k++)
        if (find(d, ids[k]) < 0)
            v[m++] = (IdRow){ids[k], k};
    qsort(v, (size_t)m, sizeof *v, idrow_cmp);
    int64_t extra = 0;
    for (int64_t k = 0; k < m; k++)
        extra += k == 0 || v[k].id != v[k - 1].id;
    free(v);
    return emb__dyn_reserve(d, extra, t);
}

int emb_table_dynamic_import(EmbTable *t, const int64_t *ids, const float *rows,
                             int64_t row_stride, int64_t n)
{
    int r = dyn_check(t);
    if (r)
        return r;
    if (n < 0)
        return emb__fail(EMB_EINVAL, "import: n %lld < 0 (%s)", (long long)n,
                         emb__table_label(t));
    if (n == 0)
        return 0;
    EMB_CHECK_NULL(ids);
    EMB_CHECK_NULL(rows);
    Dyn *d = dyn_of(t);
    if (row_stride < d->D)
        return emb__fail(EMB_ESTRIDE, "import: row_stride %lld < featuresize %d (%s)",
                         (long long)row_stride, (int)d->D, emb__table_label(t));
    if (!emb__rows_fit(n, row_stride, d->D))
        return emb__fail(EMB_EOVERFLOW, "import: %lld rows of row_stride %lld overflow (%s)",
                         (long long)n, (long long)row_stride, emb__table_label(t));
    r = emb__finite_check(t, rows, n, d->D, row_stride, "import rows");
    if (r)
        return r;
    IdRow *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return emb__fail(EMB_ENOMEM, "out of memory to sort %lld ids", (long long)n);
    int64_t extra = 0;
    for (int64_t k = 0; k < n; k++) {
        if (ids[k] < 0 || ids[k] == INT64_MAX) { /* as lookups and updates refuse them */
            free(v);
            return emb__fail(EMB_ERANGE, "import: id %lld at position %lld is not in "
                             "[0, %lld) (%s)", (long long)ids[k], (long long)k,
                             (long long)INT64_MAX, emb__table_label(t));
        }
        v[k] = (IdRow){ids[k], k};
        extra += find(d, ids[k]) < 0;
    }
    qsort(v, (size_t)n, sizeof *v, idrow_cmp);
    for (int64_t k = 1; k < n; k++)
        if (v[k].id == v[k - 1].id) {
            const int64_t twice = v[k].id;
            free(v);
            return emb__fail(EMB_EINVAL, "import: id %lld is given twice (%s)",
                             (long long)twice, emb__table_label(t));
        }
    free(v);
    r = emb__dyn_reserve(d, extra, t);
    if (r)
        return r;
    emb__touched_all(t); /* rows written without a step's stamp: the next save is whole */
    for (int64_t k = 0; k < n; k++) {
        int64_t row = find(d, ids[k]);
        if (row < 0)
            row = emb__dyn_create(d, ids[k]);
        char *dst = row_ptr(d, row);
        for (int32_t i = 0; i < d->D; i++)
            emb__store(d->dtype, dst, i, rows[k * row_stride + i]);
    }
    return 0;
}
