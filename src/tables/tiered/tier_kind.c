/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_kind.c — tiered tables (public tiered.h): the constructors, the public calls and the
 * kind's entries of the table contract (table_ops.h). The data movement is tier_resolve.c's
 * and its neighbours' (tier.h); checkpoints and whole-file passes (initialize, state attach)
 * are tier_passes.c's.
 *
 * Row pointers handed out (resolve, column, update_rows) are records in the cache or the
 * scratch pad, pinned until the operation's release. An update's prepare resolves the
 * step's distinct rows (the only step that reads the disk, and the only one that may fail)
 * and marks them dirty as it finds them; its handles are the records' addresses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "tables/table_impl.h"
#include "tables/tiered/tier.h"

#define DEFAULT_CACHE ((int64_t)64 << 20)

static Tier *tier(const EmbTable *t)
{
    return (Tier *)t->impl;
}

/* ---- the contract's entries ---------------------------------------------------------- */

/* A row outside resolve (emb_table_column_pointer, whole-table paths): resolved and pinned
   on demand until the next release; a failed read gives the zero row (sink). */
static void *tiered_column(const EmbTable *t, int64_t id, EmbContext ctx)
{
    Tier *x = tier(t);
    char *row;
    if (emb__tier_column(x, id, &row, ctx == EMB_CTX_UPDATE))
        return x->sink;
    return row;
}

static int tiered_resolve_batch(const EmbTable *t, const EmbIdSpan *s);

static int tiered_resolve(const EmbTable *t, const EmbIdSpan *s, EmbContext ctx,
                          const void **cols, unsigned *hint)
{
    if (!cols) /* the contract's acquire without rows: pin the batch */
        return tiered_resolve_batch(t, s);
    *hint = 0;
    return emb__tier_resolve_span(tier(t), s, ctx, cols, 0);
}

static int tiered_resolve_batch(const EmbTable *t, const EmbIdSpan *s)
{
    return emb__tier_resolve_batch(tier(t), s->ids, s->id32, s->k0, s->k0 + s->n);
}

static void tiered_release(const EmbTable *t)
{
    emb__tier_release(tier(t));
}

/* Resolves (pins, reads) the step's distinct rows part by part; a handle is its record's
   address. Marked dirty by the commit; unpinned when the next operation starts (the update
   calls no release: tier_resolve.c's release_pending). */
static int tiered_update_prepare(EmbTable *t, EmbRowPlan *rp)
{
    Tier *x = tier(t);
    _Static_assert(sizeof(char *) == sizeof(int64_t), "handles hold addresses");
    for (int p = 0; p < rp->nparts; p++) {
        int64_t d0, n;
        emb__rowplan_part(rp, p, &d0, &n);
        if (n == 0) /* an empty update may have no arrays at all */
            continue;
        /* marked dirty here, found once (a cancelled update leaves them dirty: written
           back unchanged) */
        const int r = emb__tier_resolve_update(x, rp->ids + d0, n, (char **)(rp->handle + d0));
        if (r) {
            emb__tier_release(x);
            return r;
        }
    }
    return 0;
}

static void tiered_update_commit(EmbTable *t, EmbRowPlan *rp)
{
    (void)rp; /* the rows were marked dirty by the prepare */
    emb__tier_release_later(tier(t));
}

static void tiered_update_cancel(EmbTable *t, EmbRowPlan *rp)
{
    (void)rp;
    emb__tier_release(tier(t));
}

static void tiered_update_rows(const EmbTable *t, const EmbRowPlan *rp, int64_t d0, int64_t n,
                               void **cols, float **states)
{
    const Tier *x = tier(t);
    for (int64_t k = 0; k < n; k++) {
        char *rec = (char *)(intptr_t)rp->handle[d0 + k];
        cols[k] = rec;
        if (states)
            states[k] = x->state_width ? (float *)(rec + x->state_off) : NULL;
    }
}

static void tiered_destroy(EmbTable *t)
{
    emb__tier_unref(tier(t));
    t->impl = NULL;
}

static bool tiered_state_is(const EmbTable *t, const EmbTable *view)
{
    return emb__tiered_state_view(t) == view;
}

static const EmbRowsFacet tiered_rows = {
    .pins = true, .column = tiered_column, .acquire = tiered_resolve,
    .release = tiered_release,
};
static const EmbKeyedFacet tiered_keyed = {
    .column_create = emb__keyed_column_acquire, .reserve_ids = emb__keyed_reserve_none,
    .initialize = emb__tiered_initialize, .update_prepare = tiered_update_prepare,
    .update_commit = tiered_update_commit, .update_cancel = tiered_update_cancel,
    .update_rows = tiered_update_rows, .state_attach = emb__tiered_state_attach,
    .state_is = tiered_state_is,
};
static const EmbListedFacet tiered_listed = {
    .list = emb__tiered_save_list, .list_ids = emb__tiered_list_ids,
    .extras = emb__tiered_restore_extras,
    .stage = emb__tiered_stage, .stage_dst = emb__tiered_stage_dst,
    .stage_commit = emb__tiered_stage_commit, .stage_free = emb__tiered_stage_free,
};
static const EmbTableOps tiered_ops = {
    .kind = "tiered", .rows = &tiered_rows, .keyed = &tiered_keyed,
    .listed = &tiered_listed, .destroy = tiered_destroy,
};

/* ---- constructors ------------------------------------------------------------------------ */

static int check_opts(const EmbTieredOptions *o, const char *path)
{
    if (o->cache_bytes < 0)
        return emb__fail(EMB_EINVAL, "tiered table %s: cache_bytes %lld is negative", path,
                         (long long)o->cache_bytes);
    if ((unsigned)o->policy > EMB_TIER_LFU_ADMIT)
        return emb__fail(EMB_EINVAL, "tiered table %s: policy %d is not an EmbTierPolicy", path,
                         (int)o->policy);
    if ((unsigned)o->engine > EMB_TIER_ENGINE_MAP)
        return emb__fail(EMB_EINVAL, "tiered table %s: engine %d is not AUTO, URING, PREAD or MAP",
                         path, (int)o->engine);
    if (o->state_width < 0)
        return emb__fail(EMB_EINVAL, "tiered table %s: state_width %d is negative", path,
                         (int)o->state_width);
    return 0;
}

/* Opens the file (creating it with @create) behind the table @t (shape set for create). */
static int attach(EmbTable *t, const char *path, bool create, const EmbTieredOptions *o)
{
    Tier *x = calloc(1, sizeof *x);
    if (!x)
        return emb__fail(EMB_ENOMEM, "out of memory for a tiered table");
    t->impl = x;
    t->ops = &tiered_ops;
    x->refs = 1;
    snprintf(x->label, sizeof x->label, "%s", emb__table_label(t));
    x->nrows = t->ncolumns, x->D = t->featuresize, x->dtype = (int32_t)t->dtype;
    x->rowbytes = emb__row_bytes(t->dtype, t->featuresize);
    x->state_room = o->state_width;
    const int64_t cache = o->cache_bytes ? o->cache_bytes : DEFAULT_CACHE;
    int r = emb__tier_init(x, path, create, cache, (int)o->policy,
                           (EmbTierIoKind)o->engine);
    if (!r && !(x->sink = calloc(1, x->recbytes)))
        r = emb__fail(EMB_ENOMEM, "out of memory for a tiered table");
    return r;
}

int emb__table_tiered_create_pending(EmbTable **out, const char *path, int64_t ncolumns,
                                     int32_t featuresize, EmbDtype dtype,
                                     const EmbTieredOptions *opts)
{
    EMB_CHECK_NULL(out);
    EMB_CHECK_NULL(path);
    const EmbTieredOptions o = opts ? *opts : (EmbTieredOptions){0};
    int r = check_opts(&o, path);
    EmbTable *t = NULL;
    r = r ? r : emb__table_alloc(&t, ncolumns, featuresize, dtype, &o.table);
    int64_t bytes;
    if (!r && !emb__mul_ok(ncolumns, (int64_t)emb__row_bytes(dtype, featuresize) + 16 +
                                         4 * (int64_t)o.state_width, &bytes))
        r = emb__fail(EMB_EOVERFLOW, "tiered table %s: %lld rows overflow", path,
                      (long long)ncolumns);
    r = r ? r : attach(t, path, true, &o);
    if (r) {
        emb_table_destroy(&t);
        return r;
    }
    *out = t;
    return 0;
}

int emb__table_tiered_commit(EmbTable *t)
{
    return emb_table_is_tiered(t) ? emb__tier_commit(tier(t)) : 0;
}

int emb_table_tiered_create(EmbTable **out, const char *path, int64_t ncolumns,
                            int32_t featuresize, EmbDtype dtype, const EmbTieredOptions *opts)
{
    EMB_CHECK_NULL(out);
    EmbTable *t = NULL;
    int r = emb__table_tiered_create_pending(&t, path, ncolumns, featuresize, dtype, opts);
    r = r ? r : emb__table_tiered_commit(t);
    if (r) {
        emb_table_destroy(&t);
        return r;
    }
    *out = t;
    return 0;
}

int emb_table_tiered_open(EmbTable **out, const char *path, const EmbTieredOptions *opts)
{
    EMB_CHECK_NULL(out);
    EMB_CHECK_NULL(path);
    const EmbTieredOptions o = opts ? *opts : (EmbTieredOptions){0};
    EmbTierShape sh;
    int r = check_opts(&o, path);
    r = r ? r : emb__tier_read_shape(path, &sh);
    EmbTable *t = NULL;
    r = r ? r : emb__table_alloc(&t, sh.nrows, sh.D, (EmbDtype)sh.dtype, &o.table);
    r = r ? r : attach(t, path, false, &o);
    if (r) {
        emb_table_destroy(&t);
        return r;
    }
    *out = t;
    return 0;
}

int emb_table_is_tiered(const EmbTable *t)
{
    return t && t->ops == &tiered_ops;
}

static int need_tiered(const EmbTable *t, const char *fn)
{
    if (!t)
        return emb__fail(EMB_ENULL, "%s: argument 't' is NULL", fn);
    if (!emb_table_is_tiered(t))
        return emb__fail(EMB_EINVAL, "%s: %s is not a tiered table", fn, emb__table_label(t));
    return 0;
}

int emb_table_tiered_flush(EmbTable *t)
{
    const int r = need_tiered(t, __func__);
    return r ? r : emb__tier_flush(tier(t));
}

int emb_table_tiered_stats(const EmbTable *t, EmbTieredStats *out)
{
    int r = need_tiered(t, __func__);
    if (r)
        return r;
    EMB_CHECK_NULL(out);
    emb__tier_stats(tier(t), out);
    return 0;
}

int emb_table_prefetch(EmbTable *t, const EmbBatch *batch)
{
    EMB_CHECK_NULL(t);
    EMB_CHECK_NULL(batch);
    if (!emb_table_is_tiered(t) || batch->nnz <= 0 || !batch->ids)
        return 0;
    emb__tier_prefetch_batch(tier(t), batch->ids, batch->id_type == EMB_ID_I32, batch->nnz);
    return 0;
}
