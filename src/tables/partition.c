/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * partition.c — partitioned tables (TF's list of params with partition_strategy "mod" or
 * "div") behind the column-pointer interface, and the partitioners that choose the shard
 * count (TF's fixed_size_partitioner, variable_axis_size_partitioner and
 * min_max_variable_partitioner).
 *
 * A partitioned table has no contiguous storage (data == NULL): its column_fn maps an id
 * to (shard, row) and asks the shard for that row with the caller's context, so a shard
 * can be of any type. Both strategies give shard i q + (i < r) rows (q = R / P,
 * r = R % P); the shard sizes are checked against this rule at creation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "embtables/partition.h"
#include "platform.h"
#include "tables/partition_impl.h"

static void *mod_column(const EmbTable *t, int64_t id, EmbContext ctx)
{
    const Partition *p = t->impl;
    return emb__column(p->shards[id % p->nshards], id / p->nshards, ctx);
}

static void *div_column(const EmbTable *t, int64_t id, EmbContext ctx)
{
    const Partition *p = t->impl;
    if (id < p->split)
        return emb__column(p->shards[id / (p->q + 1)], id % (p->q + 1), ctx);
    const int64_t k = id - p->split; /* q >= 1 here: ids past split exist only then */
    return emb__column(p->shards[p->r + k / p->q], k % p->q, ctx);
}

void emb__partition_destroy(EmbTable *t)
{
    Partition *p = t->impl;
    if (p && p->own)
        for (int32_t i = 0; i < p->nshards; i++)
            emb_table_destroy(&p->shards[i]);
    free(p);
    t->impl = NULL;
}

int32_t emb__partition_nshards(const EmbTable *t)
{
    return emb__partition(t)->nshards;
}

EmbTable *emb__partition_shard(const EmbTable *t, int32_t i)
{
    return emb__partition(t)->shards[i];
}

static const EmbRowsFacet mod_rows = EMB_ROWS_BY_COLUMN(mod_column);
static const EmbRowsFacet div_rows = EMB_ROWS_BY_COLUMN(div_column);
const EmbTableOps emb__partition_mod_ops = {
    .kind = "partitioned (mod)", .rows = &mod_rows, .nshards = emb__partition_nshards,
    .shard = emb__partition_shard, .destroy = emb__partition_destroy};
const EmbTableOps emb__partition_div_ops = {
    .kind = "partitioned (div)", .rows = &div_rows, .nshards = emb__partition_nshards,
    .shard = emb__partition_shard, .destroy = emb__partition_destroy};

static int check_mode(unsigned flags, unsigned allowed)
{
    const unsigned mode = flags & (EMB_PARTITION_MOD | EMB_PARTITION_DIV);
    if ((flags & ~allowed) || (mode != EMB_PARTITION_MOD && mode != EMB_PARTITION_DIV))
        return emb__fail(EMB_EINVAL, "partition flags 0x%x: need exactly one of "
                         "EMB_PARTITION_MOD and EMB_PARTITION_DIV", flags);
    return 0;
}

int64_t emb_partition_shard_rows(int64_t nrows, int32_t nshards, int32_t shard)
{
    if (nrows < 0 || nshards < 1 || shard < 0 || shard >= nshards)
        return emb__fail(EMB_EINVAL, "shard %d of %lld rows over %d shards: need nrows >= 0 "
                         "and 0 <= shard < nshards", (int)shard, (long long)nrows, (int)nshards);
    return nrows / nshards + (shard < nrows % nshards ? 1 : 0);
}

/* Each shard non-NULL, distinct, of the first shard's feature size, dtype and kind (dynamic
   or not: dynamic shards only under EMB_PARTITION_MOD). */
static int check_shard_kinds(EmbTable *const *shards, int32_t nshards, unsigned mode,
                             const char *name)
{
    const EmbTable *s0 = shards[0];
    for (int32_t i = 0; i < nshards; i++) {
        const EmbTable *s = shards[i];
        if (!s)
            return emb__fail(EMB_ENULL, "shard %d is NULL (partitioned table \"%s\")", (int)i,
                             name);
        const bool dyn = emb__table_rows_appear(s), dyn0 = emb__table_rows_appear(s0);
        if (s->ops != s0->ops && (dyn || dyn0))
            return emb__fail(EMB_EINVAL, "shard %d is %sa dynamic table, shard 0 is %s "
                             "(partitioned table \"%s\")", (int)i, dyn ? "" : "not ",
                             dyn0 ? "one" : "not", name);
        if (dyn && mode != EMB_PARTITION_MOD)
            return emb__fail(EMB_EINVAL, "dynamic shards are partitioned by EMB_PARTITION_MOD "
                             "only (partitioned table \"%s\")", name);
        if (s->featuresize != s0->featuresize)
            return emb__fail(EMB_ESHAPE, "shard %d has featuresize %d, shard 0 has %d "
                             "(partitioned table \"%s\")", (int)i, (int)s->featuresize,
                             (int)s0->featuresize, name);
        if (s->dtype != s0->dtype)
            return emb__fail(EMB_EDTYPE, "shard %d has dtype %s, shard 0 has %s (partitioned "
                             "table \"%s\")", (int)i, emb_dtype_name(s->dtype),
                             emb_dtype_name(s0->dtype), name);
        if (emb__dtype_quantized(s->dtype))
            return emb__fail(EMB_ENOTSUP, "shard %d is %s: partitioned tables of quantized "
                             "rows are not supported (partitioned table \"%s\")", (int)i,
                             emb_dtype_name(s->dtype), name);
        for (int32_t j = 0; j < i; j++)
            if (shards[j] == s)
                return emb__fail(EMB_EINVAL, "shard %d is shard %d again (partitioned table "
                                 "\"%s\")", (int)i, (int)j, name);
    }
    return 0;
}

/* The total rows, and each shard's rows against the size rule. */
static int check_shard_sizes(EmbTable *const *shards, int32_t nshards, const char *name,
                             int64_t *nrows)
{
    int64_t total = 0;
    for (int32_t i = 0; i < nshards; i++)
        if (__builtin_add_overflow(total, shards[i]->ncolumns, &total))
            return emb__fail(EMB_EOVERFLOW, "the shards' rows overflow (partitioned table "
                             "\"%s\")", name);
    for (int32_t i = 0; i < nshards; i++) {
        const int64_t want = emb_partition_shard_rows(total, nshards, i);
        if (shards[i]->ncolumns != want)
            return emb__fail(EMB_ESHAPE, "shard %d holds %lld rows; %lld rows over %d shards "
                             "put %lld there (partitioned table \"%s\")", (int)i,
                             (long long)shards[i]->ncolumns, (long long)total, (int)nshards,
                             (long long)want, name);
    }
    *nrows = total;
    return 0;
}

static int check_shards(EmbTable *const *shards, int32_t nshards, unsigned mode,
                        const EmbTableOptions *opts, int64_t *nrows)
{
    const char *name = opts && opts->name ? opts->name : "";
    if (nshards < 1)
        return emb__fail(EMB_EINVAL, "nshards %d is not >= 1 (partitioned table \"%s\")",
                         (int)nshards, name);
    int r = check_shard_kinds(shards, nshards, mode, name);
    if (!r && emb__table_rows_appear(shards[0])) { /* any id: each shard keys its own */
        *nrows = INT64_MAX;
        return 0;
    }
    return r ? r : check_shard_sizes(shards, nshards, name, nrows);
}

int emb__partition_check(EmbTable *const *shards, int32_t nshards, unsigned flags,
                         const EmbTableOptions *opts, int64_t *nrows)
{
    EMB_CHECK_NULL(shards);
    const int r = check_mode(flags, EMB_PARTITION_MOD | EMB_PARTITION_DIV |
                                        EMB_PARTITION_OWN_SHARDS);
    return r ? r : check_shards(shards, nshards, flags & (EMB_PARTITION_MOD | EMB_PARTITION_DIV),
                                opts, nrows);
}

int emb__partition_build(EmbTable **out, EmbTable *const *shards, int32_t nshards,
                         unsigned flags, const EmbTableOptions *opts, int64_t nrows,
                         const EmbTableOps *ops)
{
    EmbTable *t = NULL;
    int r = emb__table_alloc(&t, nrows, shards[0]->featuresize, shards[0]->dtype, opts);
    if (r)
        return r;
    Partition *p = malloc(sizeof *p + (size_t)nshards * sizeof p->shards[0]);
    if (!p) {
        emb_table_destroy(&t);
        return emb__fail(EMB_ENOMEM, "out of memory for %d shards", (int)nshards);
    }
    for (int32_t i = 0; i < nshards; i++) /* a write through it checks what a shard would */
        t->check_finite |= shards[i]->check_finite;
    p->mode = flags & (EMB_PARTITION_MOD | EMB_PARTITION_DIV);
    p->own = (flags & EMB_PARTITION_OWN_SHARDS) != 0;
    p->dynamic = emb__table_rows_appear(shards[0]);
    p->nshards = nshards;
    p->q = nrows / nshards;
    p->r = nrows % nshards;
    p->split = p->r * (p->q + 1);
    memcpy(p->shards, shards, (size_t)nshards * sizeof p->shards[0]);
    t->ops = ops;
    t->impl = p;
    *out = t;
    return 0;
}

/* Creates shard i of a table of nrows rows, named "<name>/part_<i>". */
static int create_shard(EmbTable **out, int64_t nrows, int32_t featuresize, EmbDtype dtype,
                        int32_t nshards, int32_t i, const EmbTableOptions *opts)
{
    char name[EMB_NAME_MAX + 1];
    EmbTableOptions so = opts ? *opts : (EmbTableOptions){0};
    snprintf(name, sizeof name, "%s/part_%d", so.name ? so.name : "", (int)i);
    so.name = name;
    return emb_table_create(out, emb_partition_shard_rows(nrows, nshards, i), featuresize, dtype,
                            &so);
}

/*
 * The bytes emb_table_partitioned_create() allocates, bounded from above: the rows at the
 * shards' column stride, and per shard (empty ones too) a header, an allocation of at least
 * one alignment unit, two pointers and the allocator's overhead. In double: any int32 shard
 * count and int64 row count fit.
 */
static int create_need(int64_t nrows, int32_t featuresize, EmbDtype dtype, int32_t nshards,
                       const EmbTableOptions *opts, double *need)
{
    size_t stride = 0, align = EMB_ALIGN;
    const int r = emb__column_stride((size_t)featuresize * emb_dtype_size(dtype), opts, &stride,
                                     &align);
    if (r)
        return r;
    const double per_shard = (double)(sizeof(EmbTable) + align + 2 * sizeof(void *) + 64);
    *need = (double)nrows * (double)stride + (double)nshards * per_shard;
    return 0;
}

/* nrows, nshards, featuresize and dtype in their domains, and the memory they need (checked
   before anything is allocated: over-committed memory fails only when touched). */
static int check_create(int64_t nrows, int32_t featuresize, EmbDtype dtype, int32_t nshards,
                        const EmbTableOptions *opts)
{
    if (nrows < 0)
        return emb__fail(EMB_EINVAL, "nrows %lld is negative", (long long)nrows);
    if (nshards < 1)
        return emb__fail(EMB_EINVAL, "nshards %d is not >= 1", (int)nshards);
    if (featuresize < 1)
        return emb__fail(EMB_EINVAL, "featuresize %d is not >= 1", (int)featuresize);
    if (emb__dtype_quantized(dtype))
        return emb__fail(EMB_ENOTSUP, "dtype %s: partitioned tables of quantized rows are not "
                         "supported", emb_dtype_name(dtype));
    if (emb_dtype_size(dtype) == 0)
        return emb__fail(EMB_EDTYPE, "dtype %d is not f32, f16 or bf16", (int)dtype);
    double need = 0;
    const int r = create_need(nrows, featuresize, dtype, nshards, opts, &need);
    const size_t have = emb__platform_memory_bytes();
    if (!r && need > (double)have)
        return emb__fail(EMB_ENOMEM, "%lld rows of %d elements over nshards %d need %.0f bytes, "
                         "more than this machine's memory (%zu bytes)", (long long)nrows,
                         (int)featuresize, (int)nshards, need, have);
    return r;
}

int emb_table_partitioned_create(EmbTable **out, int64_t nrows, int32_t featuresize,
                                 EmbDtype dtype, int32_t nshards, unsigned flags,
                                 const EmbTableOptions *opts)
{
    EMB_CHECK_NULL(out);
    int r = check_mode(flags, EMB_PARTITION_MOD | EMB_PARTITION_DIV | EMB_PARTITION_OWN_SHARDS);
    if (!r)
        r = check_create(nrows, featuresize, dtype, nshards, opts);
    if (r)
        return r;
    EmbTable **shards = calloc((size_t)nshards, sizeof *shards);
    if (!shards)
        return emb__fail(EMB_ENOMEM, "out of memory for %d shards", (int)nshards);
    for (int32_t i = 0; i < nshards && !r; i++)
        r = create_shard(&shards[i], nrows, featuresize, dtype, nshards, i, opts);
    if (!r) /* fresh dense shards of the size rule's rows: nothing left to check */
        r = emb__partition_build(out, shards, nshards, flags | EMB_PARTITION_OWN_SHARDS, opts,
                                 nrows, flags & EMB_PARTITION_MOD ? &emb__partition_mod_ops
                                                                  : &emb__partition_div_ops);
    if (r)
        for (int32_t i = 0; i < nshards; i++)
            emb_table_destroy(&shards[i]);
    free(shards);
    return r;
}

static const Partition *partition_of(const EmbTable *t)
{
    return t && t->ops->destroy == emb__partition_destroy ? t->impl : NULL;
}

int32_t emb_table_nshards(const EmbTable *t)
{
    const Partition *p = partition_of(t);
    return p ? p->nshards : 0;
}

EmbTable *emb_table_shard(const EmbTable *t, int32_t i)
{
    const Partition *p = partition_of(t);
    return p && i >= 0 && i < p->nshards ? p->shards[i] : NULL;
}

unsigned emb_table_partition_mode(const EmbTable *t)
{
    const Partition *p = partition_of(t);
    return p ? p->mode : 0;
}

int emb_partition_locate(int64_t nrows, int32_t nshards, unsigned flags, int64_t id,
                         int32_t *shard, int64_t *row)
{
    EMB_CHECK_NULL(shard);
    EMB_CHECK_NULL(row);
    int r = check_mode(flags, EMB_PARTITION_MOD | EMB_PARTITION_DIV);
    if (r)
        return r;
    if (nrows < 0 || nshards < 1)
        return emb__fail(EMB_EINVAL, "nrows %lld / nshards %d: need nrows >= 0, nshards >= 1",
                         (long long)nrows, (int)nshards);
    if (id < 0 || id >= nrows)
        return emb__fail(EMB_ERANGE, "id %lld is not in [0, %lld)", (long long)id,
                         (long long)nrows);
    const int64_t q = nrows / nshards, rem = nrows % nshards, split = rem * (q + 1);
    if (flags & EMB_PARTITION_MOD) {
        *shard = (int32_t)(id % nshards);
        *row = id / nshards;
    } else if (id < split) {
        *shard = (int32_t)(id / (q + 1));
        *row = id % (q + 1);
    } else {
        *shard = (int32_t)(rem + (id - split) / q);
        *row = (id - split) % q;
    }
    return 0;
}

int emb_partition_fixed_size(int64_t nrows, int32_t num_shards, int32_t *nshards)
{
    EMB_CHECK_NULL(nshards);
    if (nrows < 0 || num_shards < 1)
        return emb__fail(EMB_EINVAL, "nrows %lld / num_shards %d: need nrows >= 0, "
                         "num_shards >= 1", (long long)nrows, (int)num_shards);
    *nshards = nrows < num_shards ? (int32_t)EMB_MAX(nrows, 1) : num_shards;
    return 0;
}

/*
 * A partitioner's common checks: the table's shape, a byte limit (named @what) and a cap
 * (named @cap_name, at least @cap_min); the bytes of one row into *row_bytes.
 */
static int check_partitioner(int64_t nrows, int32_t featuresize, EmbDtype dtype, int64_t bytes,
                             const char *what, int32_t cap, int32_t cap_min,
                             const char *cap_name, int64_t *row_bytes)
{
    if (nrows < 0 || featuresize < 1 || bytes < 1 || cap < cap_min)
        return emb__fail(EMB_EINVAL, "nrows %lld, featuresize %d, %s %lld, %s %d: need >= 0, "
                         ">= 1, >= 1, >= %d", (long long)nrows, (int)featuresize, what,
                         (long long)bytes, cap_name, (int)cap, (int)cap_min);
    if (emb_dtype_size(dtype) == 0)
        return emb__fail(EMB_EDTYPE, "dtype %d is not f32, f16 or bf16", (int)dtype);
    *row_bytes = (int64_t)featuresize * (int64_t)emb_dtype_size(dtype);
    return 0;
}

int emb_partition_max_shard_bytes(int64_t nrows, int32_t featuresize, EmbDtype dtype,
                                  int64_t max_shard_bytes, int32_t max_shards,
                                  int32_t *nshards)
{
    EMB_CHECK_NULL(nshards);
    int64_t row_bytes = 1;
    int r = check_partitioner(nrows, featuresize, dtype, max_shard_bytes, "max_shard_bytes",
                              max_shards, 0, "max_shards", &row_bytes);
    if (r)
        return r;
    const int64_t rows_per_shard = EMB_MAX(1, max_shard_bytes / row_bytes);
    int64_t p = nrows / rows_per_shard + (nrows % rows_per_shard != 0);
    if (max_shards > 0)
        p = EMB_MIN(p, max_shards);
    if (p > INT32_MAX)
        return emb__fail(EMB_EOVERFLOW, "%lld shards of at most %lld bytes do not fit in int32",
                         (long long)p, (long long)max_shard_bytes);
    *nshards = (int32_t)EMB_MAX(p, 1);
    return 0;
}

int emb_partition_min_slice_bytes(int64_t nrows, int32_t featuresize, EmbDtype dtype,
                                  int64_t min_slice_bytes, int32_t max_partitions,
                                  int32_t *nshards)
{
    EMB_CHECK_NULL(nshards);
    int64_t row_bytes = 1;
    int r = check_partitioner(nrows, featuresize, dtype, min_slice_bytes, "min_slice_bytes",
                              max_partitions, 1, "max_partitions", &row_bytes);
    if (r)
        return r;
    /* in double as TF does: the product may exceed int64, the caps keep P small */
    const double want = ceil((double)nrows * (double)row_bytes / (double)min_slice_bytes);
    const double p = fmin(fmin(want, (double)nrows), (double)max_partitions);
    *nshards = p < 1.0 ? 1 : (int32_t)p;
    return 0;
}
