/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist_collection.c — the sharded collection: collection.h's EmbCollection whose tables
 * are placed over the ranks of a communicator. Its calls are the ensemble's
 * (emb_dist_maplookup, emb_dist_backward then emb_dist_update, emb_dist_save /
 * emb_dist_restore), made through emb_collection_custom(), so a training loop written
 * for one process runs sharded by changing the create call only.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_impl.h"

typedef struct DistColl {
    EmbDist *d;
    EmbOptimizer *opt;   /* NULL: the backward only records */
    bool own_opt;
    EmbPooling *poolings;
    unsigned flags;      /* emb_dist_update flags */
} DistColl;

static int dc_forward(void *u, const EmbBatch *batches, const EmbOutputs *out)
{
    const DistColl *x = u;
    return emb_dist_maplookup(x->d, batches, x->poolings, out);
}

static int dc_backward(void *u, const EmbBatch *batches, const EmbOutputs *grad_out)
{
    const DistColl *x = u;
    if (batches) /* every rank makes the same call: the same code everywhere */
        return dist_fail(EMB_ENOTSUP, "emb_collection_backward_batches: a sharded "
                         "collection backs its last forward only");
    int r = emb_dist_backward(x->d, grad_out);
    if (!r && x->opt)
        r = emb_dist_update(x->d, x->opt, x->flags);
    return r;
}

/* emb_dist_save's index, `<dir>/dist-<step>.index`, is the checkpoint's path. */
static int dc_save(void *u, const char *dir, const char *prefix, int64_t step,
                   int32_t max_to_keep, char *path, size_t cap)
{
    const DistColl *x = u;
    (void)prefix, (void)max_to_keep; /* the sharded layout has its own names, keeps all */
    int r = emb_dist_save(x->d, dir, step, x->opt);
    if (!r && path && (size_t)snprintf(path, cap, "%s/dist-%lld.index", dir,
                                       (long long)step) >= cap)
        r = dist_fail(EMB_EINVAL, "emb_collection_save: the path does not fit in %zu bytes",
                      cap);
    return r;
}

static int dc_restore(void *u, const char *path, int64_t *global_step)
{
    const DistColl *x = u;
    const char *base = strrchr(path, '/');
    char dir[4096];
    long long step = -1;
    char tail = 0;
    if (!base || base == path || (size_t)(base - path) >= sizeof dir ||
        sscanf(base, "/dist-%lld.inde%c", &step, &tail) != 2 || tail != 'x' || step < 0)
        return dist_fail(EMB_EINVAL, "emb_collection_restore: '%s' is not a sharded "
                         "checkpoint's <dir>/dist-<step>.index", path);
    memcpy(dir, path, (size_t)(base - path));
    dir[base - path] = '\0';
    const int r = emb_dist_restore(x->d, dir, step, x->opt);
    if (!r && global_step)
        *global_step = step;
    return r;
}

static void dc_destroy(void *u)
{
    DistColl *x = u;
    emb_dist_destroy(&x->d);
    if (x->own_opt)
        emb_optimizer_destroy(&x->opt);
    free(x->poolings);
    free(x);
}

static const EmbCollectionOps dist_ops = {
    .forward = dc_forward, .backward = dc_backward, .save = dc_save,
    .restore = dc_restore, .destroy = dc_destroy,
};

/* What a sharded collection cannot take, the same on every rank (no exchange needed). */
static int check_tables(const EmbCollectionTable *tables, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const EmbCollectionTable *t = &tables[i];
        const EmbInitKind k = t->spec.init.kind;
        if (t->table || t->spec.dynamic || t->spec.nshards > 1)
            return dist_fail(EMB_ENOTSUP, "emb_dist_collection_create: tables[%lld]: a "
                             "sharded collection creates plain or tiered tables (no table, "
                             "dynamic or partitioned spec)", (long long)i);
        if (k != EMB_INIT_NONE && k != EMB_INIT_ZEROS && k != EMB_INIT_ONES &&
            k != EMB_INIT_CONSTANT)
            return dist_fail(EMB_ENOTSUP, "emb_dist_collection_create: tables[%lld]: "
                             "initializer %d depends on the column: fill the local "
                             "tables (emb_dist_local_table)", (long long)i, (int)k);
    }
    return 0;
}

/* @s's tiered spec, with the state room optimizer kind @kind keeps when it has none. */
static const EmbTieredSpec *with_state(const EmbVariableSpec *s, int kind, EmbTieredSpec *out)
{
    *out = *s->tiered;
    const int32_t w = kind >= 0 && out->options.state_width == 0
                      ? emb_optimizer_state_width((EmbOptimizerKind)kind, s->featuresize) : 0;
    if (w > 0)
        out->options.state_width = w;
    return out;
}

/* The ensemble and the optimizer of @x; every rank returns the same code. */
static int make_dist(DistColl *x, MPI_Comm comm, const EmbCollectionTable *tables, int64_t n,
                     const EmbCollectionOptions *o, const EmbDistOptions *dopts)
{
    EmbDistTableDesc *desc = calloc((size_t)n, sizeof *desc);
    EmbTieredSpec *tiered = calloc((size_t)n, sizeof *tiered);
    x->poolings = calloc((size_t)n, sizeof *x->poolings);
    if (!desc || !tiered || !x->poolings) {
        free(desc);
        free(tiered);
        return dist_fail(EMB_ENOMEM, "emb_dist_collection_create: out of memory");
    }
    EmbOptimizerConfig shared;
    const int kind = o->optimizer ? (int)o->optimizer->kind
                     : o->shared_optimizer && !emb_optimizer_get_config(o->shared_optimizer,
                                                                         &shared)
                     ? (int)shared.kind : -1;
    for (int64_t i = 0; i < n; i++) {
        const EmbVariableSpec *s = &tables[i].spec;
        const EmbPooling *pool = &tables[i].pooling;
        const unsigned uses = (pool->combiner == EMB_COMBINER_MAX ? EMB_DIST_USES_MAX : 0u) |
                              (pool->max_norm != 0 ? EMB_DIST_USES_MAX_NORM : 0u) |
                              (kind == EMB_OPT_ROWWISE_ADAGRAD ? EMB_DIST_USES_ROWWISE_ADAGRAD
                                                               : 0u);
        desc[i] = (EmbDistTableDesc){.name = tables[i].name, .nrows = s->ncolumns,
                                     .featuresize = s->featuresize, .dtype = s->dtype,
                                     .uses = uses};
        if (s->tiered) /* state room for the collection's optimizer, as emb_collection_create */
            desc[i].tiered = with_state(s, kind, &tiered[i]);
        x->poolings[i] = tables[i].pooling;
    }
    EmbDistOptions dist = dopts ? *dopts : (EmbDistOptions){0};
    if (o->strategy)
        dist.strategy = o->strategy;
    int r = emb_dist_create(&x->d, comm, desc, n, &dist);
    free(desc);
    free(tiered);
    x->opt = o->shared_optimizer;
    x->flags = o->update_flags;
    if (!r) /* the same value on every rank: the same code */
        r = emb_dist_set_full_every(x->d, o->full_every);
    if (!r && o->optimizer) {
        r = emb_optimizer_create(&x->opt, o->optimizer);
        x->own_opt = !r;
    }
    return r;
}

/* Table i's initializer on this rank's part (id-independent kinds only: check_tables). */
static int initialize(DistColl *x, const EmbCollectionTable *tables, int64_t n)
{
    int r = 0;
    for (int64_t i = 0; i < n && !r; i++) {
        EmbTable *t = emb_dist_local_table(x->d, i);
        if (t && tables[i].spec.init.kind != EMB_INIT_NONE)
            r = emb_table_initialize(t, &tables[i].spec.init);
    }
    return r;
}

int emb_dist_collection_create(EmbCollection **out, MPI_Comm comm,
                               const EmbCollectionTable *tables, int64_t n,
                               const EmbCollectionOptions *opts, const EmbDistOptions *dopts)
{
    if (!out || !tables)
        return dist_fail(EMB_ENULL, "emb_dist_collection_create: %s is NULL",
                         !out ? "out" : "tables");
    const EmbCollectionOptions none = {0};
    const EmbCollectionOptions *o = opts ? opts : &none;
    int r = n < 1 ? dist_fail(EMB_EINVAL, "emb_dist_collection_create: n = %lld tables",
                              (long long)n)
                  : check_tables(tables, n);
    DistColl *x = r ? NULL : calloc(1, sizeof *x);
    if (!r && !x)
        r = dist_fail(EMB_ENOMEM, "emb_dist_collection_create: out of memory");
    if (!r)
        r = make_dist(x, comm, tables, n, o, dopts);
    if (!r)
        r = initialize(x, tables, n);
    EmbCollection *c = NULL;
    if (!r) { /* the shell: this rank's parts as the collection's tables */
        EmbCollectionTable *ct = calloc((size_t)n, sizeof *ct);
        for (int64_t i = 0; ct && i < n; i++)
            ct[i] = (EmbCollectionTable){.name = tables[i].name, .spec = tables[i].spec,
                                         .table = emb_dist_local_table(x->d, i),
                                         .pooling = tables[i].pooling};
        const EmbCollectionOptions shell = {.shared_optimizer = x->opt,
                                            .prependrows = o->prependrows};
        r = ct ? emb_collection_custom(&c, ct, n, &shell, &dist_ops, x)
               : dist_fail(EMB_ENOMEM, "emb_dist_collection_create: out of memory");
        free(ct);
    }
    if (x && x->d) /* a rank's local failure (names, memory) fails every rank */
        r = dist_agree(x->d, r, NULL, NULL);
    if (r) {
        if (c)
            emb_collection_destroy(&c); /* owns x: calls dc_destroy */
        else if (x)
            dc_destroy(x);
        return r;
    }
    *out = c;
    return 0;
}

EmbDist *emb_dist_of(const EmbCollection *c)
{
    const DistColl *x = emb_collection_custom_user(c, &dist_ops);
    return x ? x->d : NULL;
}
