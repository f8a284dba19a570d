/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynamic.c — hash-keyed dynamic tables (dynamic.h), the kind: its facets (rows, keyed,
 * listed) and its constructor. The parts, one concern a file, in this folder: the id -> row
 * map and slabs (dynamic_rows.c), the admission sketch (dynamic_sketch.c), optimizer state
 * with the rows (dynamic_state.c), administration (dynamic_admin.c), checkpoint rows and
 * restore staging (dynamic_stage.c, dynamic_ckpt.c), the partitioned glue (partition_dyn.c);
 * the body they share is dynamic_impl.h.
 *
 * The table contract (tables/table_ops.h) is its only door to the layers above: the
 * operations tables at the end of this file. The structure changes only in serial steps
 * (an update's prepare / commit, evict, import, a column pointer with UPDATE of an unknown
 * id, a restore's stage commit); lookups and the update's apply phase only probe, so they
 * may run on many threads. A created row's values depend on its id alone
 * (initval.h), never on the order rows were created in or on the row index it got.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "initval.h"
#include "rng.h"
#include "tables/dynamic/dynamic_impl.h"
void *emb__dynamic_row(const EmbTable *t, int64_t r)
{
    return row_ptr(dyn_of(t), r);
}

float *emb__dynamic_state_row(const EmbTable *t, int64_t r)
{
    const Dyn *d = dyn_of(t);
    return d->swidth ? state_ptr(d, r) : NULL;
}

bool emb__dynamic_missing_fails(const EmbTable *t)
{
    return dyn_of(t)->missing == EMB_DYN_MISSING_ERROR;
}

bool emb__dynamic_has(const EmbTable *t, int64_t id)
{
    return id >= 0 && find(dyn_of(t), id) >= 0;
}

static bool dyn_missing_fails(const EmbTable *t)
{
    return emb__dynamic_missing_fails(t);
}

static bool dyn_readable(const EmbTable *t, int64_t id)
{
    return !emb__dynamic_missing_fails(t) || emb__dynamic_has(t, id);
}

static bool dyn_state_is(const EmbTable *t, const EmbTable *view)
{
    return dyn_of(t)->view == view;
}

/* ---- column, column_create (the contract) ----------------------------------------------- */

static void *dynamic_column(const EmbTable *t, int64_t id, EmbContext ctx)
{
    Dyn *d = dyn_of(t);
    int64_t r = find(d, id);
    if (r >= 0)
        return row_ptr(d, r);
    if (ctx != EMB_CTX_UPDATE)
        return d->defrow;
    /* a write to an unknown id outside an update (emb_table_column_pointer checks room
       first; internal writers prepare their rows): serial by the header's contract */
    if (emb__dyn_reserve(d, 1, t))
        return d->sink;
    r = emb__dyn_create(d, id);
    return row_ptr(d, r);
}

static void *state_column(const EmbTable *t, int64_t id, EmbContext ctx)
{
    (void)ctx;
    const Dyn *d = dyn_of(t);
    if (!d->swidth)
        return d->sdefault;
    const int64_t r = find(d, id);
    return r >= 0 ? (void *)state_ptr(d, r) : (void *)d->sdefault;
}

int emb__dynamic_get_or_create(EmbTable *t, int64_t id, void **col)
{
    Dyn *d = dyn_of(t);
    int64_t r = find(d, id);
    if (r < 0) {
        const int e = emb__dyn_reserve(d, 1, t);
        if (e)
            return e;
        r = emb__dyn_create(d, id);
    }
    *col = row_ptr(d, r);
    return 0;
}

/* ---- resolve, prefetch (the contract: batched resolution of spans) ---------------------- */

#define SPAN EMB_SPAN_MAX /* ids hashed and probed together */

EMB_INLINE int64_t span_id(const void *ids, int id32, int64_t k)
{
    return id32 ? (int64_t)((const int32_t *)ids)[k] : ((const int64_t *)ids)[k];
}

/*
 * cols[k] = the row of id k0 + k of @ids (the FORWARD default row for an unknown id), for
 * k < n <= SPAN: every id of the span hashed and its home slot prefetched first (the
 * misses overlap, and a slot has arrived by its probe), then each probed and its row's
 * lines prefetched (@pf) so that the kernel that reads the span finds them arriving.
 * Reads the index only.
 */
static void resolve(const Dyn *d, const void *ids, int id32, int64_t k0, int64_t n,
                    size_t rowbytes, bool pf, const char **cols)
{
    uint64_t h[SPAN];
    const DynSlot *slots = d->x.slots;
    const uint64_t mask = (uint64_t)d->x.nslots - 1;
    for (int64_t k = 0; k < n; k++) {
        h[k] = slot_hash(span_id(ids, id32, k0 + k)) & mask;
        __builtin_prefetch(&slots[h[k]]);
    }
    for (int64_t k = 0; k < n; k++) {
        const int64_t r = find_at(slots, mask, h[k], span_id(ids, id32, k0 + k));
        const char *row = r >= 0 ? row_ptr(d, r) : (const char *)d->defrow;
        if (pf)
            for (size_t off = 0; off < rowbytes; off += 64)
                __builtin_prefetch(row + off);
        cols[k] = row;
    }
}

/* The contract's acquire (FORWARD / NONE: reads the index only); n <= SPAN. */
static int dyn_resolve(const EmbTable *t, const EmbIdSpan *sp, EmbContext ctx,
                       const void **cols, unsigned *hint)
{
    (void)ctx;
    if (!cols) /* nothing to pin: rows in memory */
        return 0;
    const Dyn *d = dyn_of(t);
    const size_t rowbytes = (size_t)t->featuresize * t->elsize;
    const bool pf = d->nrows * (int64_t)d->stride > EMB_RESIDENT_BYTES;
    resolve(d, sp->ids, sp->id32, sp->k0, sp->n, rowbytes, pf, (const char **)cols);
    *hint = pf ? EMB_RESOLVE_PREFETCHED : 0;
    return 0;
}

/* The contract's prefetch: the home slot of @id (a lookup, a few ids ahead). */
static void dyn_prefetch(const EmbTable *t, int64_t id)
{
    const DynIndex *x = &dyn_of(t)->x;
    __builtin_prefetch(&x->slots[slot_hash(id) & (uint64_t)(x->nslots - 1)]);
}

/* ---- update_prepare / update_commit / update_rows (the contract) ------------------------ */

void emb__dynamic_decide(const EmbTable *t, const int64_t *ids, int64_t n, int64_t *rows,
                         int64_t *extra)
{
    const Dyn *d = dyn_of(t);
    for (int64_t k = 0; k < n; k++) {
        rows[k] = find(d, ids[k]);
        if (rows[k] < 0) {
            rows[k] = emb__dyn_admits(d, ids[k]) ? -2 : -1;
            *extra += rows[k] == -2;
        }
    }
}

int emb__dynamic_reserve(EmbTable *t, int64_t extra)
{
    return emb__dyn_reserve(dyn_of(t), extra, t);
}

void emb__dynamic_step(EmbTable *t)
{
    dyn_of(t)->step++;
}

void emb__dynamic_commit(EmbTable *t, const int64_t *ids, int64_t n, int64_t *rows)
{
    Dyn *d = dyn_of(t);
    for (int64_t k = 0; k < n; k++) {
        if (rows[k] == -1)
            emb__dyn_count(d, ids[k]);
        else if (rows[k] == -2)
            rows[k] = emb__dyn_create(d, ids[k]);
        if (rows[k] >= 0)
            d->last[rows[k]] = d->step;
    }
}

/* The contract's update steps: each part's ids decided in part order, then created. */
static int dyn_update_prepare(EmbTable *t, EmbRowPlan *rp)
{
    int64_t extra = 0;
    for (int p = 0; p < rp->nparts; p++) {
        int64_t d0, n;
        emb__rowplan_part(rp, p, &d0, &n);
        if (n > 0) /* an empty update may have no arrays at all */
            emb__dynamic_decide(t, rp->ids + d0, n, rp->handle + d0, &extra);
    }
    return emb__dynamic_reserve(t, extra);
}

static void dyn_update_commit(EmbTable *t, EmbRowPlan *rp)
{
    emb__dynamic_step(t);
    for (int p = 0; p < rp->nparts; p++) {
        int64_t d0, n;
        emb__rowplan_part(rp, p, &d0, &n);
        if (n > 0)
            emb__dynamic_commit(t, rp->ids + d0, n, rp->handle + d0);
    }
}

static void dyn_update_rows(const EmbTable *t, const EmbRowPlan *rp, int64_t d0, int64_t n,
                            void **cols, float **states)
{
    const Dyn *d = dyn_of(t);
    for (int64_t k = 0; k < n; k++) {
        const int64_t r = rp->handle[d0 + k];
        cols[k] = r >= 0 ? row_ptr(d, r) : NULL;
        if (states)
            states[k] = r >= 0 && d->swidth ? state_ptr(d, r) : NULL;
    }
}

/* ---- the public functions ---------------------------------------------------------------- */

static void dyn_destroy(EmbTable *t)
{
    Dyn *d = dyn_of(t);
    if (d)
        emb__dyn_unref(d);
    t->impl = NULL;
}

static int options_check(const EmbDynamicOptions *o, const char *name)
{
    if (o->capacity < 0 || o->max_rows < 0 || o->admit_after < 0 || o->sketch_width < 0)
        return emb__fail(EMB_EINVAL, "dynamic table \"%s\": capacity %lld, max_rows %lld, "
                         "admit_after %d and sketch_width %d must be >= 0", name,
                         (long long)o->capacity, (long long)o->max_rows, (int)o->admit_after,
                         (int)o->sketch_width);
    if (o->sketch_width > EMB_DYN_SKETCH_WIDTH_MAX)
        return emb__fail(EMB_EINVAL, "dynamic table \"%s\": sketch_width %d is more than %d "
                         "(4 rows of 16-bit counters: %d MiB)", name, (int)o->sketch_width,
                         EMB_DYN_SKETCH_WIDTH_MAX, EMB_DYN_SKETCH_WIDTH_MAX * 8 >> 20);
    if ((unsigned)o->missing > EMB_DYN_MISSING_ERROR)
        return emb__fail(EMB_EINVAL, "dynamic table \"%s\": missing mode %d is unknown", name,
                         (int)o->missing);
    if (o->missing == EMB_DYN_MISSING_CONSTANT && (o->table.flags & EMB_TABLE_CHECK_FINITE) &&
        !isfinite(o->missing_value))
        return emb__fail(EMB_ENONFINITE, "dynamic table \"%s\": missing_value %g is not finite "
                         "(the table checks for finite values)", name, (double)o->missing_value);
    if (o->table.placement != EMB_PLACE_DEFAULT)
        return emb__fail(EMB_EINVAL, "dynamic table \"%s\": placement %d is not supported "
                         "(only EMB_PLACE_DEFAULT)", name, (int)o->table.placement);
    char label[EMB_NAME_MAX + 32];
    snprintf(label, sizeof label, "dynamic table \"%s\"", name);
    int r = emb__init_check(&o->init, label);
    if (!r && o->init.kind == EMB_INIT_UNIFORM_UNIT_SCALING)
        r = emb__fail(EMB_EINVAL, "%s: UNIFORM_UNIT_SCALING needs a row count a dynamic table "
                      "does not have", label);
    return r;
}

/* The configuration of a new body @d of rows of @stride bytes (slabs aligned to @align). */
static void dyn_configure(Dyn *d, const EmbDynamicOptions *o, int32_t featuresize,
                          EmbDtype dtype, size_t stride, size_t align)
{
    d->refs = 1;
    d->free_head = -1;
    d->D = featuresize;
    d->dtype = dtype;
    d->stride = stride;
    d->align = EMB_MAX(align, (size_t)EMB_ALIGN);
    /* slabs of 256 KiB, or 2 MiB (huge pages) for a table meant to hold 16 MiB or more */
    const size_t slab_bytes = (double)o->capacity * (double)stride >= 16.0 * 1048576.0
                                  ? EMB_HUGE_BYTES : SLAB_BYTES;
    d->shift = 4;
    while (d->shift < 16 && ((size_t)2 << d->shift) * stride <= slab_bytes)
        d->shift++;
    d->max_rows = o->max_rows;
    d->init = o->init;
    d->missing = o->missing;
    d->admit_after = o->admit_after;
    d->x.nslots = 16;
}

/* The storage of a configured body: index, default and sink rows, the sketch, room for
   the capacity hint. 0 or EMB_ENOMEM. */
static int dyn_allocate(Dyn *d, const EmbDynamicOptions *o)
{
    d->x.slots = malloc((size_t)d->x.nslots * sizeof *d->x.slots);
    d->defrow = emb__dyn_zalloc(d->stride);
    d->sink = emb__dyn_zalloc(d->stride);
    if (d->admit_after > 1) {
        int64_t w = 1;
        while (w < (o->sketch_width ? o->sketch_width : 65536))
            w *= 2;
        d->sketch_width = w;
        d->sketch = calloc((size_t)(SKETCH_DEPTH * w), sizeof *d->sketch);
    }
    if (!d->x.slots || !d->defrow || !d->sink || (d->admit_after > 1 && !d->sketch))
        return emb__fail(EMB_ENOMEM, "out of memory for a dynamic table");
    for (int64_t i = 0; i < d->x.nslots; i++)
        d->x.slots[i] = (DynSlot){-1, 0};
    if (o->missing == EMB_DYN_MISSING_CONSTANT)
        for (int32_t i = 0; i < d->D; i++)
            emb__store(d->dtype, d->defrow, i, o->missing_value);
    const int64_t cap = o->capacity ? o->capacity : 1024;
    int r = emb__dyn_index_grow(d, emb__dyn_slots_for(cap));
    while (!r && (d->nslabs << d->shift) < cap)
        r = emb__dyn_slab_add(d);
    return r;
}

int emb_table_dynamic_create(EmbTable **out, int32_t featuresize, EmbDtype dtype,
                             const EmbDynamicOptions *opts)
{
    EMB_CHECK_NULL(out);
    const EmbDynamicOptions o = opts ? *opts : (EmbDynamicOptions){0};
    const char *name = o.table.name ? o.table.name : "";
    int r = options_check(&o, name);
    if (!r && emb__dtype_quantized(dtype))
        r = emb__fail(EMB_ENOTSUP, "dtype %s: dynamic tables of quantized rows are not "
                      "supported (table \"%s\")", emb_dtype_name(dtype), name);
    EmbTable *t = NULL;
    r = r ? r : emb__table_alloc(&t, INT64_MAX, featuresize, dtype, &o.table);
    if (r)
        return r;
    size_t stride = 0, align = 0;
    r = emb__column_stride((size_t)featuresize * t->elsize, &o.table, &stride, &align);
    if (!r && stride > (size_t)1 << 30)
        r = emb__fail(EMB_EOVERFLOW, "rows of %zu bytes are too large (%s)", stride,
                      emb__table_label(t));
    Dyn *d = r ? NULL : calloc(1, sizeof *d);
    if (!r && !d)
        r = emb__fail(EMB_ENOMEM, "out of memory for a dynamic table");
    if (!r) {
        dyn_configure(d, &o, featuresize, dtype, stride, align);
        t->ops = &emb__dynamic_ops;
        t->impl = d;
        r = dyn_allocate(d, &o);
    }
    if (r) {
        emb_table_destroy(&t);
        return r;
    }
    *out = t;
    return 0;
}

/* ---- the operations tables -------------------------------------------------------------- */

static int dyn_save_check(const EmbTable *t)
{
    EmbTable *self = (EmbTable *)t;
    return emb__dynamic_save_check(t, &self, 1);
}

static int dyn_save_list(const EmbTable *t, bool state, EmbRowList *out)
{
    EmbTable *self = (EmbTable *)t;
    return emb__dynamic_save_list(t, &self, 1, state, out);
}

static void dyn_restore_extras(const EmbTable *t, EmbExtraTensor *extra, int *n)
{
    EmbTable *self = (EmbTable *)t;
    emb__dynamic_restore_extras(&self, 1, extra, n);
}

static int dyn_stage(const EmbTable *t, const EmbStageIn *in, EmbRowStage **out)
{
    EmbTable *self = (EmbTable *)t;
    return emb__dynamic_restore_stage(t, &self, 1, in, out);
}

static const EmbRowsFacet dyn_rows = {
    .keys = true,
    .column = dynamic_column,
    .acquire = dyn_resolve,
    .prefetch = dyn_prefetch,
    .missing_fails = dyn_missing_fails,
    .readable = dyn_readable,
    .release = emb__rows_release_none,
};

static const EmbKeyedFacet dyn_keyed = {
    .column_create = emb__dynamic_get_or_create,
    .reserve_ids = emb__dynamic_reserve_ids,
    .initialize = emb__dynamic_initialize,
    .update_prepare = dyn_update_prepare,
    .update_commit = dyn_update_commit,
    .update_cancel = emb__keyed_cancel_none,
    .update_rows = dyn_update_rows,
    .state_attach = emb__dynamic_state_attach,
    .state_is = dyn_state_is,
};

static const EmbListedFacet dyn_listed = {
    .list = dyn_save_list,
    .extras = dyn_restore_extras,
    .stage = dyn_stage,
    .stage_dst = emb__dynamic_stage_dst,
    .stage_commit = emb__dynamic_stage_commit_all,
    .stage_free = emb__dynamic_stage_free_all,
};

const EmbTableOps emb__dynamic_ops = {
    .kind = "dynamic",
    .rows = &dyn_rows,
    .keyed = &dyn_keyed,
    .listed = &dyn_listed,
    .save_check = dyn_save_check,
    .destroy = dyn_destroy,
};

static int state_save_check(const EmbTable *t)
{
    return emb__fail(EMB_EINVAL, "%s is the optimizer state of a dynamic table: save the "
                     "table with the optimizer (EmbSaverOptions.optimizer)",
                     emb__table_label(t));
}

static const EmbRowsFacet state_rows = {
    .keys = true,
    .column = state_column,
    .acquire = emb__rows_acquire_by_column,
    .prefetch = emb__rows_no_prefetch,
    .missing_fails = emb__rows_never_missing,
    .readable = emb__rows_all_readable,
    .release = emb__rows_release_none,
};

const EmbTableOps emb__dynamic_state_ops = {
    .kind = "dynamic state",
    .rows = &state_rows,
    .save_check = state_save_check,
    .destroy = emb__dyn_view_destroy,
};
