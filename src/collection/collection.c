/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * collection.c — EmbCollection (collection.h): named tables, their poolings, a strategy,
 * an optional optimizer, and every buffer of a training step, held in one object. Its
 * lifetime and accessors; the step is collection_step.c, the checkpoints
 * collection_ckpt.c.
 *
 * Built on the public calls of the layers below only (emb_store_get, emb_strategy_auto,
 * emb_optimizer_create / attach, emb_grad_create, emb_indexer_create): the collection
 * owns no rule of its own about tables, batches or updates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collection/collection_impl.h"
#include "embtables/tiered.h"
#include "store/store_impl.h"
#include "tables/table_impl.h"

/* ---- creation ------------------------------------------------------------------------ */

static const char *name_of(const EmbCollectionTable *d)
{
    if (d->name || !d->table)
        return d->name;
    return emb_table_name(d->table);
}

/* The names (unique, 1..EMB_NAME_MAX bytes) and borrowed tables (each once). */
static int check_names(const char *op, const EmbCollectionTable *tables, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const char *name = name_of(&tables[i]);
        if (!name || !name[0] || strlen(name) > EMB_NAME_MAX)
            return emb__fail(EMB_EINVAL, "%s: tables[%lld] has %s name (1 to %d bytes, and "
                             "a name is needed for a created table)", op,
                             (long long)i, !name ? "no" : name[0] ? "a too long" : "an empty",
                             EMB_NAME_MAX);
        for (int64_t j = 0; j < i; j++) {
            if (!strcmp(name_of(&tables[j]), name))
                return emb__fail(EMB_EINVAL, "%s: tables[%lld] and tables[%lld] are both "
                                 "named \"%s\"", op, (long long)j, (long long)i, name);
            if (tables[i].table && tables[j].table == tables[i].table)
                return emb__fail(EMB_EINVAL, "%s: tables[%lld] and tables[%lld] are the "
                                 "same table", op, (long long)j, (long long)i);
        }
    }
    return 0;
}

static int check_options(const EmbCollectionOptions *o)
{
    if (o->optimizer && o->shared_optimizer)
        return emb__fail(EMB_EINVAL, "emb_collection_create: both optimizer and "
                         "shared_optimizer are set");
    if (o->full_every < 0)
        return emb__fail(EMB_EINVAL, "emb_collection_create: full_every %d is negative",
                         (int)o->full_every);
    return emb__update_flags_check(o->update_flags);
}

static int alloc_arrays(EmbCollection *c, int64_t n)
{
    const size_t k = (size_t)n;
    c->tables = calloc(k, sizeof *c->tables);
    c->poolings = calloc(k, sizeof *c->poolings);
    c->names = calloc(k, sizeof *c->names);
    c->grads = calloc(k, sizeof *c->grads);
    c->ix = calloc(k, sizeof *c->ix);
    c->batches = calloc(k, sizeof *c->batches);
    c->vars = calloc(k, sizeof *c->vars);
    c->owned = calloc(k, sizeof *c->owned);
    if (!c->owned || !c->tables || !c->poolings || !c->names || !c->grads || !c->ix ||
        !c->batches || !c->vars)
        return emb__fail(EMB_ENOMEM, "emb_collection_create: out of memory for %lld tables",
                         (long long)n);
    return 0;
}

/* The optimizer kind of @o's optimizer; -1: none. */
static int optimizer_kind(const EmbCollectionOptions *o)
{
    EmbOptimizerConfig cfg;
    if (o->optimizer)
        return (int)o->optimizer->kind;
    if (o->shared_optimizer && emb_optimizer_get_config(o->shared_optimizer, &cfg) == 0)
        return (int)cfg.kind;
    return -1;
}

/* Table i: borrowed, or created in the collection's store under its name (a tiered spec
   with no state room gets what optimizer kind @kind keeps: tiered.h). */
static int table_of(EmbCollection *c, const EmbCollectionTable *d, int64_t i, int kind)
{
    c->vars[i] = (EmbCheckpointVar){c->names[i], NULL};
    if (d->table) {
        c->tables[i] = c->vars[i].table = d->table;
        return 0;
    }
    int r = c->store ? 0 : emb_store_create(&c->store);
    if (!r) /* its tiered files replaced only when the collection is made (commit_files) */
        c->store->defer_commit = true;
    EmbVariableSpec spec = d->spec;
    spec.name = c->names[i];
    spec.trainable = 1;
    spec.options.name = NULL;
    EmbTieredSpec tiered;
    const int32_t w = spec.tiered && spec.tiered->options.state_width == 0 && kind >= 0
                      ? emb_optimizer_state_width((EmbOptimizerKind)kind, spec.featuresize) : 0;
    if (w > 0) {
        tiered = *spec.tiered;
        tiered.options.state_width = w;
        spec.tiered = &tiered;
    }
    if (!r)
        r = emb_store_get(c->store, &spec, EMB_REUSE_NO, &c->tables[i]);
    if (r)
        return emb__collection_named(c, r, "emb_collection_create", i);
    c->vars[i].table = c->tables[i];
    c->owned[i] = true;
    return 0;
}

/* The pooling of table i, checked as a lookup checks it (an empty batch). */
static int check_pooling(EmbCollection *c, int64_t i)
{
    const EmbBatch empty = {.bag_size = 1};
    const int r = emb_batch_validate(c->tables[i], &empty, &c->poolings[i]);
    return r ? emb__collection_named(c, r, "emb_collection_create", i) : 0;
}

static int strategy_and_optimizer(EmbCollection *c, const EmbCollectionOptions *o)
{
    int r = 0;
    c->strategy = o->strategy;
    if (!c->strategy) {
        r = emb_strategy_auto(&c->strategy, &o->strategy_options);
        c->own_strategy = !r;
    }
    c->opt = o->shared_optimizer;
    if (!r && o->optimizer) {
        r = emb_optimizer_create(&c->opt, o->optimizer);
        c->own_opt = !r;
    }
    for (int64_t i = 0; i < c->n && !r && c->opt; i++) {
        r = emb_optimizer_attach(c->opt, c->tables[i]);
        if (r)
            r = emb__collection_named(c, r, "emb_collection_create", i);
    }
    return r;
}

/* Adds table i's featuresize @D to the concat row width. */
static int widen(EmbCollection *c, const char *op, int64_t i, int32_t D)
{
    if (D < 1)
        return emb__fail(EMB_EINVAL, "%s: table \"%s\" (%lld) has featuresize %d", op,
                         c->names[i], (long long)i, (int)D);
    if (c->width > INT64_MAX - D)
        return emb__fail(EMB_EOVERFLOW, "%s: the concat row width overflows", op);
    c->width += D;
    return 0;
}

static int fill(EmbCollection *c, const EmbCollectionTable *tables,
                const EmbCollectionOptions *o)
{
    int r = 0;
    for (int64_t i = 0; i < c->n && !r; i++)
        r = table_of(c, &tables[i], i, optimizer_kind(o));
    for (int64_t i = 0; i < c->n && !r; i++)
        r = check_pooling(c, i);
    for (int64_t i = 0; i < c->n && !r; i++)
        r = widen(c, "emb_collection_create", i, emb_table_featuresize(c->tables[i]));
    if (!r)
        r = strategy_and_optimizer(c, o);
    for (int64_t i = 0; i < c->n && !r; i++) {
        r = emb_grad_create(&c->grads[i]);
        if (!r)
            r = emb_indexer_create(&c->ix[i]);
    }
    c->flags = o->update_flags;
    c->full_every = o->full_every;
    if (!r && c->full_every > 0)
        r = emb__collection_saver_init(c);
    return r;
}

/* The new files of the collection's tiered tables renamed over their paths: the last step
   of a create, so that a create that fails leaves every path as it found it. */
static int commit_files(EmbCollection *c)
{
    int r = 0;
    for (int64_t i = 0; i < c->n && !r; i++)
        if (c->owned[i] && (r = emb__table_tiered_commit(c->tables[i])))
            r = emb__collection_named(c, r, "emb_collection_create", i);
    return r;
}

/* What every collection starts from, checked: the names, poolings and arrays. */
static int shell(const char *op, const EmbCollectionTable *tables, int64_t n,
                 int64_t prependrows, EmbCollection **out)
{
    if (n < 1 || (uint64_t)n > SIZE_MAX / sizeof(EmbBatch))
        return emb__fail(EMB_EINVAL, "%s: n = %lld tables, not >= 1", op, (long long)n);
    int r = check_names(op, tables, n);
    if (!r && prependrows < 0)
        r = emb__fail(EMB_EINVAL, "%s: prependrows %lld is negative", op,
                      (long long)prependrows);
    EmbCollection *c = r ? NULL : calloc(1, sizeof *c);
    if (!r && !c)
        r = emb__fail(EMB_ENOMEM, "%s: out of memory", op);
    if (r)
        return r;
    c->n = n;
    c->prependrows = c->width = prependrows;
    r = alloc_arrays(c, n);
    for (int64_t i = 0; i < n && !r; i++) {
        snprintf(c->names[i], sizeof c->names[i], "%s", name_of(&tables[i]));
        c->poolings[i] = tables[i].pooling;
    }
    if (r)
        emb_collection_destroy(&c);
    *out = c;
    return r;
}

int emb_collection_create(EmbCollection **out, const EmbCollectionTable *tables, int64_t n,
                          const EmbCollectionOptions *opts)
{
    EMB_CHECK_NULL(out);
    EMB_CHECK_NULL(tables);
    const EmbCollectionOptions none = {0};
    const EmbCollectionOptions *o = opts ? opts : &none;
    EmbCollection *c = NULL;
    int r = check_options(o);
    if (!r)
        r = shell("emb_collection_create", tables, n, o->prependrows, &c);
    if (!r)
        r = fill(c, tables, o);
    if (!r)
        r = commit_files(c);
    if (r) {
        emb_collection_destroy(&c);
        return r;
    }
    *out = c;
    return 0;
}

/* ---- collections implemented elsewhere ------------------------------------------------ */

int emb_collection_custom(EmbCollection **out, const EmbCollectionTable *tables, int64_t n,
                          const EmbCollectionOptions *opts, const EmbCollectionOps *ops,
                          void *user)
{
    EMB_CHECK_NULL(out);
    EMB_CHECK_NULL(tables);
    EMB_CHECK_NULL(ops);
    const char *op = "emb_collection_custom";
    const EmbCollectionOptions none = {0};
    const EmbCollectionOptions *o = opts ? opts : &none;
    EmbCollection *c = NULL;
    int r = shell(op, tables, n, o->prependrows, &c);
    for (int64_t i = 0; i < n && !r; i++) {
        const EmbCollectionTable *d = &tables[i];
        c->tables[i] = d->table;
        r = widen(c, op, i, d->table ? emb_table_featuresize(d->table) : d->spec.featuresize);
    }
    if (r) {
        emb_collection_destroy(&c);
        return r;
    }
    c->opt = o->shared_optimizer;
    c->custom = true, c->ops = *ops, c->user = user;
    *out = c;
    return 0;
}

void *emb_collection_custom_user(const EmbCollection *c, const EmbCollectionOps *ops)
{
    if (!c || !ops || !c->custom)
        return NULL;
    return memcmp(&c->ops, ops, sizeof *ops) ? NULL : c->user;
}

void emb_collection_destroy(EmbCollection **pc)
{
    EmbCollection *c = pc ? *pc : NULL;
    if (!c)
        return;
    if (c->custom && c->ops.destroy)
        c->ops.destroy(c->user);
    for (int64_t i = 0; i < c->n && c->grads; i++) {
        emb_grad_destroy(&c->grads[i]);
        emb_indexer_destroy(&c->ix[i]);
    }
    if (c->own_opt)
        emb_optimizer_destroy(&c->opt);
    for (int64_t i = 0; i < c->n && c->opt && c->owned; i++)
        if (c->owned[i]) /* a shared optimizer keeps no state of the tables we destroy */
            emb_optimizer_detach(c->opt, c->tables[i]);
    if (c->own_strategy)
        emb_strategy_destroy(&c->strategy);
    emb__collection_saver_free(c);
    emb_store_destroy(&c->store);
    emb_indexer_destroy(&c->rows_ix);
    free(c->rows);
    free(c->tables);
    free(c->poolings);
    free(c->names);
    free(c->grads);
    free(c->ix);
    free(c->batches);
    free(c->vars);
    free(c->owned);
    free(c);
    *pc = NULL;
}

/* ---- accessors ----------------------------------------------------------------------- */

static bool in_range(const EmbCollection *c, int64_t i)
{
    return c && i >= 0 && i < c->n;
}

int64_t emb_collection_ntables(const EmbCollection *c)
{
    return c ? c->n : 0;
}

int emb_collection_find(const EmbCollection *c, const char *name, int64_t *index)
{
    EMB_CHECK_NULL(c);
    EMB_CHECK_NULL(name);
    EMB_CHECK_NULL(index);
    for (int64_t i = 0; i < c->n; i++)
        if (!strcmp(c->names[i], name)) {
            *index = i;
            return 0;
        }
    return emb__fail(EMB_ENOTFOUND, "emb_collection_find: no table named \"%s\"", name);
}

EmbTable *emb_collection_table(const EmbCollection *c, int64_t i)
{
    return in_range(c, i) ? c->tables[i] : NULL;
}

const char *emb_collection_name(const EmbCollection *c, int64_t i)
{
    return in_range(c, i) ? c->names[i] : NULL;
}

const EmbPooling *emb_collection_pooling(const EmbCollection *c, int64_t i)
{
    return in_range(c, i) ? &c->poolings[i] : NULL;
}

EmbStrategy *emb_collection_strategy(const EmbCollection *c)
{
    return c ? c->strategy : NULL;
}

EmbOptimizer *emb_collection_optimizer(const EmbCollection *c)
{
    return c ? c->opt : NULL;
}

int64_t emb_collection_width(const EmbCollection *c)
{
    return c ? c->width : 0;
}

int64_t emb_collection_offset(const EmbCollection *c, int64_t i)
{
    if (!in_range(c, i))
        return -1;
    int64_t col = c->prependrows;
    for (int64_t j = 0; j < i; j++)
        col += emb_table_featuresize(c->tables[j]);
    return col;
}

EmbOutputs emb_collection_concat(const EmbCollection *c, float *buf)
{
    EmbOutputs o = {0};
    o.concat = buf;
    o.concat_stride = c ? c->width : 0;
    o.prependrows = c ? c->prependrows : 0;
    return o;
}

EmbGrad *emb_collection_grad(const EmbCollection *c, int64_t i)
{
    return in_range(c, i) ? c->grads[i] : NULL;
}
