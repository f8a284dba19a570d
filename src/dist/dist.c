/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist.c — the sharded ensemble: creation over a duplicated communicator, destruction and
 * the accessors; the thin top of src/dist/ (errors, the agreement step and the word
 * all-to-all: dist_comm.c; the placement's arithmetic: dist_layout.c).
 * Only the public API of the core library is used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_impl.h"

/* ---- creation ------------------------------------------------------------------------ */

static void *proxy_column(void *user, int64_t column, EmbContext ctx)
{
    (void)column, (void)ctx;
    return user; /* never read: the proxies only validate */
}

/* This rank's part of table @t: in memory, or tiered in `<path>.rank<R>`. */
static int make_local(EmbDist *d, DistTable *t, int64_t rows, int32_t width, const char *name,
                      const EmbDistOptions *o)
{
    EmbVariableSpec spec = {.name = name, .ncolumns = rows, .featuresize = width,
                            .dtype = t->desc.dtype, .trainable = 1, .options = o->table};
    char path[DIST_PATH_MAX + 32];
    EmbTieredSpec ts;
    if (t->desc.tiered) {
        ts = *t->desc.tiered;
        snprintf(path, sizeof path, "%s.rank%d", ts.path, (int)d->rank);
        ts.path = path;
        spec.tiered = &ts;
    }
    const int r = emb_store_get(d->store, &spec, EMB_REUSE_NO, &t->local);
    return r ? dist_fail_core(r, "local table") : 0;
}

static int make_table(EmbDist *d, DistTable *t, int64_t i, const EmbDistOptions *o)
{
    snprintf(t->name, sizeof t->name, "%s", t->desc.name ? t->desc.name : "");
    t->desc.name = t->name;
    t->rowbytes = emb_dtype_size(t->desc.dtype) * (size_t)t->desc.featuresize;
    EmbTableOptions to = {.name = t->name};
    int r = emb_table_custom(&t->proxy, t->desc.nrows, t->desc.featuresize, t->desc.dtype,
                             proxy_column, d->zero, NULL, &to);
    if (r)
        return dist_fail_core(r, "proxy table");
    EmbDistPlacement *p = &t->place;
    if (!dist_placement_valid(p, d->nranks))
        return dist_fail(EMB_EINVAL, "placement[%lld]: kind %d, rank %d, partition %u, "
                         "nshards %d is not valid over %d ranks", (long long)i, (int)p->kind,
                         (int)p->rank, p->partition, (int)p->nshards, (int)d->nranks);
    if ((r = dist_placement_allowed(&t->desc, p, i, "placement")))
        return r;
    if ((p->kind == EMB_DIST_ROWWISE || p->kind == EMB_DIST_COLUMNWISE) && p->nshards == 0)
        p->rank = 0, p->nshards = d->nranks; /* every rank, spelt out */
    if (p->kind == EMB_DIST_COLUMNWISE && p->nshards > t->desc.featuresize)
        return dist_fail(EMB_EINVAL, "placement[%lld]: %d column slices of %d columns",
                         (long long)i, (int)p->nshards, (int)t->desc.featuresize);
    if (p->kind != EMB_DIST_ROWWISE)
        p->partition = 0;
    if (p->kind == EMB_DIST_TABLEWISE || p->kind == EMB_DIST_REPLICATED)
        p->nshards = 0;
    if (p->kind == EMB_DIST_REPLICATED)
        p->rank = 0;
    int64_t rows = -1;
    int32_t c0, width = dist_cols(t, d->rank, &c0);
    if (width > 0)
        rows = t->desc.nrows;
    else if (p->kind == EMB_DIST_ROWWISE && d->rank >= p->rank &&
             d->rank < p->rank + p->nshards)
        rows = emb_partition_shard_rows(t->desc.nrows, p->nshards, d->rank - p->rank),
        width = t->desc.featuresize;
    if (rows >= 0) {
        char name[EMB_NAME_MAX + 1];
        dist_part_name(d, i, p->kind, d->rank, name);
        if ((r = make_local(d, t, rows, width, name, o)))
            return r;
        if ((r = emb_grad_create(&t->grad)) || (r = emb_indexer_create(&t->indexer)))
            return dist_fail_core(r, "gradient holder");
    }
    return 0;
}

static int alloc_all(EmbDist *d, int64_t n)
{
    const size_t P = (size_t)d->nranks;
    d->t = calloc((size_t)n, sizeof *d->t);
    d->send = calloc(P, sizeof *d->send);
    d->rank_nbags = calloc(P, sizeof(int64_t));
    d->rank_off = calloc(P + 1, sizeof(int64_t));
    d->scount = calloc(4 * P, sizeof(int));
    d->vals = calloc(2 * P, sizeof(int64_t));
    d->tmp_tables = calloc((size_t)n, sizeof *d->tmp_tables);
    d->tmp_batches = calloc((size_t)n, sizeof *d->tmp_batches);
    d->tmp_poolings = calloc((size_t)n, sizeof *d->tmp_poolings);
    d->tmp_grads = calloc((size_t)n, sizeof *d->tmp_grads);
    d->tmp_indexers = calloc((size_t)n, sizeof *d->tmp_indexers);
    d->tmp_cols = calloc(2 * P + 1, sizeof *d->tmp_cols);
    if (!d->tmp_tables || !d->tmp_batches || !d->tmp_poolings || !d->tmp_grads ||
        !d->tmp_indexers || !d->tmp_cols)
        return dist_fail(EMB_ENOMEM, "out of memory for the ensemble");
    if (!d->t || !d->send || !d->rank_nbags || !d->rank_off || !d->scount || !d->vals)
        return dist_fail(EMB_ENOMEM, "out of memory for the ensemble");
    d->sdispl = d->scount + P, d->rcount = d->sdispl + P, d->rdispl = d->rcount + P;
    return 0;
}

static int setup(EmbDist *d, const EmbDistTableDesc *tables, int64_t n,
                 const EmbDistOptions *o)
{
    int r = alloc_all(d, n);
    if (r)
        return r;
    d->ntables = n;
    d->table_flags = o->table.flags;
    d->bf16 = o->exchange_bf16 != 0;
    d->check_finite = (o->table.flags & EMB_TABLE_CHECK_FINITE) != 0;
    int64_t maxbytes = 4;
    for (int64_t i = 0; i < n; i++) {
        int64_t b;
        if ((r = dist_desc_check(&tables[i], i, &b)))
            return r;
        d->t[i].desc = tables[i];
        d->t[i].col = i ? d->t[i - 1].col + tables[i - 1].featuresize : 0;
        const int64_t rb = (int64_t)emb_dtype_size(tables[i].dtype) * tables[i].featuresize;
        maxbytes = rb > maxbytes ? rb : maxbytes;
    }
    if (!(d->zero = calloc(1, (size_t)maxbytes)))
        return dist_fail(EMB_ENOMEM, "out of memory for the ensemble");
    if (o->placement) {
        for (int64_t i = 0; i < n; i++)
            d->t[i].place = o->placement[i];
    } else {
        EmbDistPlacement *pl = malloc((size_t)n * sizeof *pl);
        if (!pl)
            return dist_fail(EMB_ENOMEM, "out of memory for the placement");
        r = emb_dist_place(tables, n, d->nranks, &o->place, pl);
        for (int64_t i = 0; i < n && !r; i++)
            d->t[i].place = pl[i];
        free(pl);
        if (r)
            return r;
    }
    if (o->groups < 0)
        return dist_fail(EMB_EINVAL, "groups %d is negative", (int)o->groups);
    d->ngroups = o->groups > 1 ? (o->groups < n ? o->groups : (int32_t)n) : 1;
    if (!(d->group_start = malloc(sizeof(int64_t) * (size_t)(d->ngroups + 1))))
        return dist_fail(EMB_ENOMEM, "out of memory for the groups");
    for (int32_t g = 0; g <= d->ngroups; g++)
        d->group_start[g] = n * g / d->ngroups;
    for (int32_t g = 0; g < d->ngroups; g++)
        for (int64_t i = d->group_start[g]; i < d->group_start[g + 1]; i++)
            d->t[i].group = g;
    if ((r = emb_store_create(&d->store)))
        return dist_fail_core(r, "store");
    for (int64_t i = 0; i < n && !r; i++)
        r = make_table(d, &d->t[i], i, o);
    if (r)
        return r;
    if (o->strategy) {
        d->strategy = o->strategy;
    } else {
        if ((r = emb_strategy_sequential(&d->strategy)))
            return dist_fail_core(r, "strategy");
        d->own_strategy = 1;
    }
    return 0;
}

/* A hash of what every rank must agree on: the tables' shapes, placements, groups and the
   local tables' options (names aside). */
static uint64_t ensemble_hash(const EmbDist *d)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const int64_t head[4] = {d->ntables, d->ngroups, d->table_flags, d->bf16};
    for (int k = 0; k < 4; k++)
        h = (h ^ (uint64_t)head[k]) * 0x100000001b3ull;
    for (int64_t i = 0; i < d->ntables; i++) {
        const DistTable *t = &d->t[i];
        const int64_t v[8] = {t->desc.nrows, t->desc.featuresize, t->desc.dtype,
                              t->place.kind, t->place.rank, t->place.partition,
                              t->place.nshards, t->desc.tiered != NULL};
        for (int k = 0; k < 8; k++)
            h = (h ^ (uint64_t)v[k]) * 0x100000001b3ull;
    }
    return h;
}

int emb_dist_create(EmbDist **out, MPI_Comm comm, const EmbDistTableDesc *tables, int64_t n,
                    const EmbDistOptions *opts)
{
    dist_clear_error();
    if (!out)
        return dist_fail(EMB_ENULL, "emb_dist_create: out is NULL");
    const EmbDistOptions o = opts ? *opts : (EmbDistOptions){0};
    EmbDist *d = calloc(1, sizeof *d);
    if (!d)
        return dist_fail(EMB_ENOMEM, "out of memory for the ensemble");
    int r = MPI_Comm_dup(comm, &d->comm);
    if (r != MPI_SUCCESS) {
        free(d);
        return dist_mpi_fail(r, "MPI_Comm_dup");
    }
    int rank = 0, size = 1;
    MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(d->comm, &rank);
    MPI_Comm_size(d->comm, &size);
    d->rank = rank, d->nranks = size;
    d->xclock = &d->stats.exchange_s;
    if (!(d->agree = malloc(3 * sizeof(int64_t) * (size_t)size))) {
        MPI_Comm_free(&d->comm);
        free(d);
        return dist_fail(EMB_ENOMEM, "out of memory for the ensemble");
    }
    if (!tables)
        r = dist_fail(EMB_ENULL, "emb_dist_create: tables is NULL");
    else if (n < 1)
        r = dist_fail(EMB_EINVAL, "emb_dist_create: n %lld < 1", (long long)n);
    else
        r = setup(d, tables, n, &o);
    /* the ranks must describe the same ensemble: agreed on through a hash of it */
    const int64_t mine[2] = {r ? 0 : (int64_t)ensemble_hash(d), 0};
    r = dist_agree(d, r, mine, d->vals);
    for (int32_t k = 1; k < d->nranks && !r; k++)
        if (d->vals[2 * k] != d->vals[0])
            r = dist_fail(EMB_EINVAL, "emb_dist_create: rank %d describes other tables, "
                          "placements, groups, table options or exchange_bf16 than rank 0", (int)k);
    if (r) {
        emb_dist_destroy(&d);
        return r;
    }
    memset(&d->stats, 0, sizeof d->stats);
    d->xclock = &d->stats.exchange_s;
    *out = d;
    return 0;
}

static void free_table(DistTable *t)
{
    emb_table_destroy(&t->proxy);
    emb_table_destroy(&t->compact);
    emb_grad_destroy(&t->grad);
    emb_indexer_destroy(&t->indexer);
    free(t->ids), free(t->offsets), free(t->weights);
    free(t->distinct), free(t->remap), free(t->nreq), free(t->rows);
    free(t->g_ids), free(t->g_offsets), free(t->g_weights);
    free(t->req_rows), free(t->req_n);
    free(t->g_dy), free(t->b_ids), free(t->b_offsets), free(t->b_coef), free(t->b_dy);
}

void emb_dist_destroy(EmbDist **dp)
{
    if (!dp || !*dp)
        return;
    EmbDist *d = *dp;
    if (d->prefetched) /* the buffers of the ids in flight */
        MPI_Wait(&d->pf_req, MPI_STATUS_IGNORE);
    free(d->pf_hdr);
    for (int64_t i = 0; d->t && i < d->ntables; i++)
        free_table(&d->t[i]);
    for (int32_t r = 0; d->send && r < d->nranks; r++)
        free(d->send[r].w);
    if (d->own_strategy)
        emb_strategy_destroy(&d->strategy);
    dist_saver_free(&d->ckpt);
    emb_store_destroy(&d->store); /* the local tables */
    free(d->t), free(d->send), free(d->rank_nbags), free(d->rank_off), free(d->scount);
    free(d->group_start), free(d->zero), free(d->sendbuf), free(d->recvbuf);
    free(d->pooled), free(d->pooled_recv), free(d->gather), free(d->gcount), free(d->req);
    free(d->pooled16), free(d->pooled16_recv);
    free(d->agree), free(d->vals), free(d->hash), free(d->ent);
    free(d->tmp_tables), free(d->tmp_batches), free(d->tmp_poolings), free(d->tmp_grads);
    free(d->tmp_indexers), free(d->tmp_cols);
    MPI_Comm_free(&d->comm);
    free(d);
    *dp = NULL;
}

/* ---- accessors ----------------------------------------------------------------------- */

int32_t emb_dist_rank(const EmbDist *d)
{
    return d ? d->rank : 0;
}

int32_t emb_dist_nranks(const EmbDist *d)
{
    return d ? d->nranks : 0;
}

int64_t emb_dist_ntables(const EmbDist *d)
{
    return d ? d->ntables : 0;
}

int emb_dist_placement(const EmbDist *d, int64_t i, EmbDistPlacement *out)
{
    if (!d || !out)
        return dist_fail(EMB_ENULL, "emb_dist_placement: NULL argument");
    if (i < 0 || i >= d->ntables)
        return dist_fail(EMB_EINVAL, "emb_dist_placement: table %lld of %lld", (long long)i,
                         (long long)d->ntables);
    *out = d->t[i].place;
    return 0;
}

EmbTable *emb_dist_local_table(const EmbDist *d, int64_t i)
{
    return d && i >= 0 && i < d->ntables ? d->t[i].local : NULL;
}

int emb_dist_local_columns(const EmbDist *d, int64_t i, int32_t *first, int32_t *count)
{
    if (!d || !first || !count)
        return dist_fail(EMB_ENULL, "emb_dist_local_columns: NULL argument");
    if (i < 0 || i >= d->ntables)
        return dist_fail(EMB_EINVAL, "emb_dist_local_columns: table %lld of %lld",
                         (long long)i, (long long)d->ntables);
    *first = 0;
    *count = d->t[i].local ? emb_table_featuresize(d->t[i].local) : 0;
    if (d->t[i].place.kind == EMB_DIST_COLUMNWISE)
        *count = dist_cols(&d->t[i], d->rank, first);
    return 0;
}

int emb_dist_locate(const EmbDist *d, int64_t i, int64_t id, int32_t *rank, int64_t *column)
{
    if (!d || !rank || !column)
        return dist_fail(EMB_ENULL, "emb_dist_locate: NULL argument");
    if (i < 0 || i >= d->ntables)
        return dist_fail(EMB_EINVAL, "emb_dist_locate: table %lld of %lld", (long long)i,
                         (long long)d->ntables);
    if (id < 0 || id >= d->t[i].desc.nrows)
        return dist_fail(EMB_ERANGE, "emb_dist_locate: id %lld is not in [0, %lld)",
                         (long long)id, (long long)d->t[i].desc.nrows);
    dist_locate(d, &d->t[i], id, rank, column);
    return 0;
}

int emb_dist_stats(const EmbDist *d, EmbDistStats *out)
{
    if (!d || !out)
        return dist_fail(EMB_ENULL, "emb_dist_stats: NULL argument");
    *out = d->stats;
    return 0;
}

/* ---- outputs ------------------------------------------------------------------------- */

float *dist_out_row(const EmbDist *d, const EmbOutputs *o, int64_t i, int64_t row,
                    int64_t *stride)
{
    if (!o->concat) {
        *stride = o->strides ? o->strides[i] : d->t[i].desc.featuresize;
        return o->per_table[i] + row * *stride;
    }
    *stride = o->concat_stride;
    return o->concat + row * o->concat_stride + o->prependrows + d->t[i].col;
}

int dist_outputs_check(const EmbDist *d, const EmbOutputs *o, int64_t nbags, const char *what)
{
    if (!o)
        return dist_fail(EMB_ENULL, "%s is NULL", what);
    if (!o->concat) {
        if (!o->per_table)
            return dist_fail(EMB_ENULL, "%s: neither concat nor per_table", what);
        for (int64_t i = 0; i < d->ntables; i++) {
            const int64_t s = o->strides ? o->strides[i] : d->t[i].desc.featuresize;
            if (nbags > 0 && !o->per_table[i])
                return dist_fail(EMB_ENULL, "%s: per_table[%lld] is NULL", what, (long long)i);
            if (s < d->t[i].desc.featuresize)
                return dist_fail(EMB_ESTRIDE, "%s: strides[%lld] = %lld < featuresize %d",
                                 what, (long long)i, (long long)s, (int)d->t[i].desc.featuresize);
        }
        return 0;
    }
    int64_t width = o->prependrows;
    for (int64_t i = 0; i < d->ntables; i++)
        width += d->t[i].desc.featuresize;
    if (o->prependrows < 0)
        return dist_fail(EMB_EINVAL, "%s: prependrows %lld is negative", what,
                         (long long)o->prependrows);
    if (o->concat_stride < width)
        return dist_fail(EMB_ESHAPE, "%s: concat_stride %lld < prependrows + sum of "
                         "featuresizes %lld", what, (long long)o->concat_stride, (long long)width);
    return 0;
}
