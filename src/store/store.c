/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store.c — the named store: get-or-create with tf.variable_scope's reuse rules, the
 * trainable flag, and the report of tables never initialised. A store holds tens to a few
 * hundred tables, so names are found by a linear scan.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embtables/dynamic.h"
#include "embtables/partition.h"
#include "embtables/tiered.h"
#include "store/store_impl.h"
#include "tables/table_impl.h"

int emb_store_create(EmbStore **out)
{
    EMB_CHECK_NULL(out);
    EmbStore *s = calloc(1, sizeof *s);
    if (!s)
        return emb__fail(EMB_ENOMEM, "out of memory for a store");
    *out = s;
    return 0;
}

void emb_store_destroy(EmbStore **ps)
{
    if (!ps || !*ps)
        return;
    EmbStore *s = *ps;
    for (int64_t i = 0; i < s->n; i++)
        emb_table_destroy(&s->entries[i].table);
    free(s->entries);
    free(s);
    *ps = NULL;
}

EmbStoreEntry *emb__store_entry(const EmbStore *s, const char *name)
{
    for (int64_t i = 0; i < s->n; i++)
        if (strcmp(s->entries[i].table->name, name) == 0)
            return &s->entries[i];
    return NULL;
}

static int check_existing(const EmbStoreEntry *e, const EmbVariableSpec *spec)
{
    const EmbTable *t = e->table;
    const bool dyn = emb__table_rows_appear(t);
    if (dyn != (spec->dynamic != NULL))
        return emb__fail(EMB_ESHAPE, "table \"%s\" exists as a %s table, asked for a %s one",
                         spec->name, dyn ? "dynamic" : "fixed", dyn ? "fixed" : "dynamic");
    if (emb_table_is_tiered(t) != (spec->tiered != NULL))
        return emb__fail(EMB_ESHAPE, "table \"%s\" exists %s, asked for one %s", spec->name,
                         spec->tiered ? "in memory" : "tiered",
                         spec->tiered ? "tiered" : "in memory");
    if ((!dyn && t->ncolumns != spec->ncolumns) || t->featuresize != spec->featuresize ||
        t->dtype != spec->dtype)
        return emb__fail(EMB_ESHAPE,
                         "table \"%s\" exists as %lld x %d %s, asked for %lld x %d %s",
                         spec->name, (long long)t->ncolumns, (int)t->featuresize,
                         emb_dtype_name(t->dtype), (long long)spec->ncolumns,
                         (int)spec->featuresize, emb_dtype_name(spec->dtype));
    return 0;
}

/* A table partitioned (mod) over @nshards dynamic shards "<name>/part_<i>" of options @o,
   capacity and max_rows split evenly (rounded up). */
static int create_dynamic_part(EmbTable **out, const EmbVariableSpec *spec, EmbDynamicOptions o)
{
    const int32_t n = spec->nshards;
    EmbTable **shards = calloc((size_t)n, sizeof *shards);
    if (!shards)
        return emb__fail(EMB_ENOMEM, "out of memory for %d shards", (int)n);
    const EmbTableOptions whole = o.table;
    o.capacity = (o.capacity + n - 1) / n;
    o.max_rows = (o.max_rows + n - 1) / n;
    int r = 0;
    for (int32_t i = 0; i < n && !r; i++) {
        char name[EMB_NAME_MAX + 1];
        snprintf(name, sizeof name, "%s/part_%d", spec->name, (int)i);
        o.table.name = name;
        r = emb_table_dynamic_create(&shards[i], spec->featuresize, spec->dtype, &o);
    }
    r = r ? r : emb_table_partitioned(out, shards, n, EMB_PARTITION_MOD | EMB_PARTITION_OWN_SHARDS,
                                      &whole);
    if (r)
        for (int32_t i = 0; i < n; i++)
            emb_table_destroy(&shards[i]);
    free(shards);
    return r;
}

static int create_tiered(EmbTable **out, const EmbVariableSpec *spec, EmbTableOptions o)
{
    EmbTieredOptions to = spec->tiered->options;
    to.table = o;
    return emb__table_tiered_create_pending(out, spec->tiered->path, spec->ncolumns, spec->featuresize,
                                   spec->dtype, &to);
}

static int create_entry(EmbStore *s, const EmbVariableSpec *spec, EmbTable **out)
{
    int r = emb__grow(&s->entries, s->n, &s->cap, sizeof *s->entries, "the store's index");
    if (r)
        return r;
    EmbTableOptions o = spec->options;
    o.name = spec->name;
    EmbTable *t = NULL;
    EmbDynamicOptions dyn = spec->dynamic ? *spec->dynamic : (EmbDynamicOptions){0};
    dyn.table = o;
    dyn.init = spec->init;
    if (spec->dynamic && spec->nshards > 1) /* rows initialised when created, by spec->init */
        r = create_dynamic_part(&t, spec, dyn);
    else if (spec->dynamic)
        r = emb_table_dynamic_create(&t, spec->featuresize, spec->dtype, &dyn);
    else if (spec->tiered)
        r = create_tiered(&t, spec, o);
    else if (spec->nshards > 1)
        r = emb_table_partitioned_create(&t, spec->ncolumns, spec->featuresize, spec->dtype,
                                         spec->nshards, spec->partition, &o);
    else
        r = emb_table_create(&t, spec->ncolumns, spec->featuresize, spec->dtype, &o);
    if (!r)
        r = emb_table_initialize(t, &spec->init);
    if (!r && !s->defer_commit) /* a tiered table replaces its file once it is whole */
        r = emb__table_tiered_commit(t);
    if (r) {
        emb_table_destroy(&t);
        return r;
    }
    s->entries[s->n++] = (EmbStoreEntry){t, spec->trainable != 0, spec->init.kind != EMB_INIT_NONE};
    *out = t;
    return 0;
}

int emb_store_get(EmbStore *s, const EmbVariableSpec *spec, EmbReuse reuse, EmbTable **out)
{
    EMB_CHECK_NULL(s);
    EMB_CHECK_NULL(spec);
    EMB_CHECK_NULL(out);
    EMB_CHECK_NULL(spec->name);
    if (!spec->name[0] || strlen(spec->name) > EMB_NAME_MAX)
        return emb__fail(EMB_EINVAL, "table name \"%.80s\" is empty or longer than %d bytes",
                         spec->name, EMB_NAME_MAX);
    if (reuse < EMB_REUSE_NO || reuse > EMB_REUSE_AUTO)
        return emb__fail(EMB_EINVAL, "reuse %d is not NO, YES or AUTO", (int)reuse);
    if (spec->nshards < 0)
        return emb__fail(EMB_EINVAL, "nshards %d of table \"%s\" is negative",
                         (int)spec->nshards, spec->name);
    if (spec->partition & ~(unsigned)(EMB_PARTITION_MOD | EMB_PARTITION_DIV))
        return emb__fail(EMB_EINVAL, "partition 0x%x of table \"%s\" is not MOD or DIV",
                         spec->partition, spec->name);
    if (spec->dynamic && spec->ncolumns != 0)
        return emb__fail(EMB_EINVAL, "dynamic table \"%s\" has no row count: ncolumns %lld "
                         "must be 0 (EmbDynamicOptions.capacity sizes it)", spec->name,
                         (long long)spec->ncolumns);
    if (spec->tiered && (spec->dynamic || spec->nshards > 1))
        return emb__fail(EMB_EINVAL, "tiered table \"%s\" cannot be %s", spec->name,
                         spec->dynamic ? "dynamic" : "partitioned (nshards > 1)");
    if (spec->tiered && !spec->tiered->path)
        return emb__fail(EMB_ENULL, "tiered table \"%s\": tiered->path is NULL", spec->name);
    if (spec->dynamic && spec->nshards > 1 && spec->partition != EMB_PARTITION_MOD)
        return emb__fail(EMB_EINVAL, "dynamic table \"%s\": %d shards need EMB_PARTITION_MOD",
                         spec->name, (int)spec->nshards);
    const EmbStoreEntry *e = emb__store_entry(s, spec->name);
    if (e && reuse == EMB_REUSE_NO)
        return emb__fail(EMB_EEXIST, "table \"%s\" exists already (reuse it with "
                         "EMB_REUSE_YES or EMB_REUSE_AUTO)", spec->name);
    if (!e && reuse == EMB_REUSE_YES)
        return emb__fail(EMB_ENOTFOUND, "table \"%s\" does not exist (EMB_REUSE_YES)",
                         spec->name);
    if (e) {
        int r = check_existing(e, spec);
        if (!r)
            *out = e->table;
        return r;
    }
    return create_entry(s, spec, out);
}

int emb_store_find(const EmbStore *s, const char *name, EmbTable **out)
{
    EMB_CHECK_NULL(s);
    EMB_CHECK_NULL(name);
    EMB_CHECK_NULL(out);
    const EmbStoreEntry *e = emb__store_entry(s, name);
    if (!e)
        return emb__fail(EMB_ENOTFOUND, "no table \"%s\" in the store", name);
    *out = e->table;
    return 0;
}

/* Lists the entries for which keep() holds. */
static int list(const EmbStore *s, int (*keep)(const EmbStoreEntry *, int), int arg,
                EmbTable **tables, int64_t cap, int64_t *n)
{
    EMB_CHECK_NULL(s);
    EMB_CHECK_NULL(n);
    if (cap < 0)
        return emb__fail(EMB_EINVAL, "cap %lld is negative", (long long)cap);
    if (cap > 0)
        EMB_CHECK_NULL(tables);
    int64_t k = 0;
    for (int64_t i = 0; i < s->n; i++) {
        if (!keep(&s->entries[i], arg))
            continue;
        if (k < cap)
            tables[k] = s->entries[i].table;
        k++;
    }
    *n = k;
    return 0;
}

static int keep_trainable(const EmbStoreEntry *e, int trainable_only)
{
    return !trainable_only || e->trainable;
}

static int keep_uninitialized(const EmbStoreEntry *e, int unused)
{
    (void)unused;
    return !e->initialized;
}

int emb_store_list(const EmbStore *s, int trainable_only, EmbTable **tables, int64_t cap,
                   int64_t *n)
{
    return list(s, keep_trainable, trainable_only, tables, cap, n);
}

int emb_store_uninitialized(const EmbStore *s, EmbTable **tables, int64_t cap, int64_t *n)
{
    return list(s, keep_uninitialized, 0, tables, cap, n);
}

int emb_store_mark_initialized(EmbStore *s, const EmbTable *table)
{
    EMB_CHECK_NULL(s);
    EMB_CHECK_NULL(table);
    for (int64_t i = 0; i < s->n; i++)
        if (s->entries[i].table == table) {
            s->entries[i].initialized = true;
            return 0;
        }
    return emb__fail(EMB_ENOTFOUND, "%s is not in the store", emb__table_label(table));
}
