/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynamic_kind.c — the dynamic kind's thin adapter: its facets (rows, keyed, listed), its
 * operations table and its constructor, pointing down at the files of this folder (the
 * arrows go only downward from here).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "tables/dynamic/dynamic_impl.h"

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
    emb__dyn_index_init(&d->x, d->x.nslots); /* checked below: x.slots NULL */
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
    if (o->missing == EMB_DYN_MISSING_CONSTANT)
        for (int32_t i = 0; i < d->D; i++)
            emb__store(d->dtype, d->defrow, i, o->missing_value);
    const int64_t cap = o->capacity ? o->capacity : 1024;
    int r = emb__dyn_index_grow(&d->x, emb__dyn_slots_for(cap));
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
    .column = emb__dyn_column,
    .acquire = emb__dyn_resolve,
    .release = emb__rows_release_none,
};

static const EmbKeyedFacet dyn_keyed = {
    .column_create = emb__dynamic_get_or_create,
    .reserve_ids = emb__dynamic_reserve_ids,
    .initialize = emb__dynamic_initialize,
    .update_prepare = emb__dyn_update_prepare,
    .update_commit = emb__dyn_update_commit,
    .update_cancel = emb__keyed_cancel_none,
    .update_rows = emb__dyn_update_rows,
    .state_attach = emb__dynamic_state_attach,
    .state_is = emb__dyn_state_is,
};

static const EmbListedFacet dyn_listed = {
    .list_ids = emb__listed_ids_none, .list = dyn_save_list,
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
    .destroy = emb__dyn_destroy,
};
