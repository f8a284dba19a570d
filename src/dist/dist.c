/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist.c — the sharded ensemble: placement, creation over a duplicated communicator,
 * accessors, errors and the agreement step, and the word all-to-all the steps share.
 * Only the public API of the core library is used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist/dist_impl.h"

/* ---- errors -------------------------------------------------------------------------- */

int dist_fail_core(int code, const char *what)
{
    return dist_fail(code, "%s: %s", what, emb_last_error());
}

int dist_mpi_fail(int mpierr, const char *call)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(mpierr, s, &len) != MPI_SUCCESS)
        snprintf(s, sizeof s, "MPI error %d", mpierr);
    return dist_fail(EMB_EIO, "%s failed: %s", call, s);
}

void dist_clear_error(void)
{
    emb_set_error(0, "%s", "");
}

const char *emb_dist_last_error(void)
{
    return emb_last_error();
}

double dist_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/*
 * One MPI_Allgather of (code, value, value2) triples. On failure the first failing rank
 * broadcasts its message, so every rank reports the same code and text.
 */
/* dist_agree; with @p ranked, the failing ranks of the highest value[0] come first. */
static int agree(EmbDist *d, int code, const int64_t value[2], int64_t *values, int ranked)
{
    const double t0 = dist_now();
    const int64_t mine[3] = {code, value ? value[0] : 0, value ? value[1] : 0};
    int64_t *all = d->agree;
    int r = MPI_Allgather(mine, 3, MPI_INT64_T, all, 3, MPI_INT64_T, d->comm);
    if (r != MPI_SUCCESS)
        return dist_mpi_fail(r, "MPI_Allgather (agreement)");
    int first = -1;
    for (int32_t i = 0; i < d->nranks; i++)
        if (all[3 * i] != 0 && (first < 0 || (ranked && all[3 * i + 1] > all[3 * first + 1])))
            first = i;
    if (first < 0 && values)
        for (int32_t i = 0; i < d->nranks; i++)
            values[2 * i] = all[3 * i + 1], values[2 * i + 1] = all[3 * i + 2];
    if (first >= 0) {
        const int agreed = (int)all[3 * first];
        char msg[512];
        snprintf(msg, sizeof msg, "%s", emb_last_error());
        r = MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, d->comm);
        msg[sizeof msg - 1] = '\0';
        if (r != MPI_SUCCESS)
            return dist_mpi_fail(r, "MPI_Bcast (agreement)");
        *d->xclock += dist_now() - t0;
        return dist_fail(agreed, "rank %d: %s", first, msg);
    }
    *d->xclock += dist_now() - t0;
    return 0;
}

int dist_agree(EmbDist *d, int code, const int64_t value[2], int64_t *values)
{
    return agree(d, code, value, values, 0);
}

int dist_agree_ranked(EmbDist *d, int code, int64_t priority)
{
    const int64_t value[2] = {priority, 0};
    return agree(d, code, value, NULL, 1);
}

/* ---- buffers ------------------------------------------------------------------------- */

int dist_grow(void **p, int64_t *cap, int64_t bytes)
{
    if (bytes <= *cap)
        return 0;
    int64_t n = *cap > 0 ? *cap : 256;
    while (n < bytes)
        n *= 2;
    void *q = realloc(*p, (size_t)n);
    if (!q)
        return dist_fail(EMB_ENOMEM, "out of memory for %lld bytes of exchange buffers",
                         (long long)bytes);
    *p = q;
    *cap = n;
    return 0;
}

int dist_words_reserve(Words *b, int64_t add)
{
    int64_t cap = b->cap * (int64_t)sizeof *b->w;
    const int r = dist_grow((void **)&b->w, &cap, (b->n + add) * (int64_t)sizeof *b->w);
    b->cap = cap / (int64_t)sizeof *b->w;
    return r;
}

void dist_put_i64(Words *b, int64_t v)
{
    memcpy(b->w + b->n, &v, sizeof v);
    b->n += 2;
}

void dist_put_f32(Words *b, float v)
{
    memcpy(b->w + b->n, &v, sizeof v);
    b->n += 1;
}

void dist_put_f32s(Words *b, const float *v, int64_t n)
{
    memcpy(b->w + b->n, v, (size_t)n * sizeof *v);
    b->n += n;
}

int64_t dist_get_i64(const uint32_t **p)
{
    int64_t v;
    memcpy(&v, *p, sizeof v);
    *p += 2;
    return v;
}

float dist_get_f32(const uint32_t **p)
{
    float v;
    memcpy(&v, *p, sizeof v);
    *p += 1;
    return v;
}

int dist_pack_sendbuf(EmbDist *d, int code, int64_t *sent_bytes)
{
    int64_t total = 0;
    for (int32_t r = 0; r < d->nranks && !code; r++)
        total += d->send[r].n;
    if (!code && total > INT32_MAX)
        code = dist_fail(EMB_EOVERFLOW, "%lld words exceed MPI's int counts", (long long)total);
    if (!code)
        code = dist_grow((void **)&d->sendbuf, &d->sendbuf_cap, 4 * total + 4);
    total = 0;
    for (int32_t k = 0; k < d->nranks; k++) {
        d->scount[k] = code ? 0 : (int)d->send[k].n;
        d->sdispl[k] = (int)total;
        if (d->scount[k])
            memcpy(d->sendbuf + total, d->send[k].w, 4 * (size_t)d->send[k].n);
        total += d->scount[k];
        if (k != d->rank)
            *sent_bytes += 4 * (int64_t)d->scount[k];
    }
    return code;
}

int dist_size_recvbuf(EmbDist *d, int code)
{
    int64_t rtotal = 0;
    for (int32_t k = 0; k < d->nranks; k++) {
        d->rdispl[k] = rtotal > INT32_MAX ? 0 : (int)rtotal;
        rtotal += d->rcount[k];
    }
    if (!code && rtotal > INT32_MAX)
        code = dist_fail(EMB_EOVERFLOW, "%lld words received exceed MPI's int counts",
                         (long long)rtotal);
    if (!code)
        code = dist_grow((void **)&d->recvbuf, &d->recvbuf_cap, 4 * rtotal + 4);
    return code;
}

/*
 * The packers' all-to-all with the agreement folded in: the counts go first
 * (MPI_Alltoall; a rank that failed sends none), every rank sizes its receive buffer,
 * the ranks agree on @p code (and exchange @p value, into d->vals), then the words
 * travel (MPI_Alltoallv) into d->recvbuf, source k's at d->rdispl[k].
 */
int dist_exchange_words(EmbDist *d, int code, const int64_t value[2], int64_t *sent_bytes)
{
    code = dist_pack_sendbuf(d, code, sent_bytes);
    double t0 = dist_now();
    int r = MPI_Alltoall(d->scount, 1, MPI_INT, d->rcount, 1, MPI_INT, d->comm);
    *d->xclock += dist_now() - t0;
    if (r != MPI_SUCCESS)
        return dist_mpi_fail(r, "MPI_Alltoall (counts)");
    if ((r = dist_agree(d, dist_size_recvbuf(d, code), value, d->vals)))
        return r;
    t0 = dist_now();
    r = MPI_Alltoallv(d->sendbuf, d->scount, d->sdispl, MPI_UINT32_T, d->recvbuf, d->rcount,
                      d->rdispl, MPI_UINT32_T, d->comm);
    *d->xclock += dist_now() - t0;
    return r == MPI_SUCCESS ? 0 : dist_mpi_fail(r, "MPI_Alltoallv");
}

/* ---- creation ------------------------------------------------------------------------ */

int dist_placement_valid(const EmbDistPlacement *p, int32_t nranks)
{
    if (p->kind == EMB_DIST_TABLEWISE)
        return p->rank >= 0 && p->rank < nranks;
    if (p->kind == EMB_DIST_REPLICATED)
        return 1;
    return (p->kind == EMB_DIST_COLUMNWISE ||
            (p->kind == EMB_DIST_ROWWISE &&
             (p->partition == EMB_PARTITION_MOD || p->partition == EMB_PARTITION_DIV))) &&
           (p->nshards == 0 || (p->nshards >= 1 && p->rank >= 0 &&
                                p->rank <= nranks - p->nshards));
}

static void *proxy_column(void *user, int64_t column, EmbContext ctx)
{
    (void)column, (void)ctx;
    return user; /* never read: the proxies only validate */
}

void dist_locate(const EmbDist *d, const DistTable *t, int64_t id, int32_t *rank,
                 int64_t *column)
{
    if (t->place.kind == EMB_DIST_REPLICATED || t->place.kind == EMB_DIST_COLUMNWISE) {
        /* here when this rank holds (part of) every row, else the first holder */
        *rank = dist_whole_on(t, d->rank) ? d->rank : t->place.rank;
        *column = id;
        return;
    }
    if (t->place.kind == EMB_DIST_TABLEWISE) {
        *rank = t->place.rank;
        *column = id;
        return;
    }
    int32_t shard;
    emb_partition_locate(t->desc.nrows, t->place.nshards, t->place.partition, id, &shard,
                         column);
    *rank = t->place.rank + shard;
}

void dist_part_name(const EmbDist *d, int64_t i, EmbDistKind kind, int32_t rank, char *name)
{
    const char *n = d->t[i].name;
    if (kind == EMB_DIST_ROWWISE)
        snprintf(name, EMB_NAME_MAX + 1, "%lld:%.24s/part_%d", (long long)i, n, (int)rank);
    else
        snprintf(name, EMB_NAME_MAX + 1, "%lld:%.40s", (long long)i, n);
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
