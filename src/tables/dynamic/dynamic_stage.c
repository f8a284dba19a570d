/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynamic_stage.c — a dynamic table's rows for its checkpoint (dynamic_ckpt.c): row accessors, the restore's staged body built aside and swapped in, and initialize.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "initval.h"
#include "rng.h"
#include "tables/dynamic/dynamic_impl.h"

/* ---- rows and stages for dynamic_ckpt.c (the contract's checkpoint entries) ------------- */

void emb__dynamic_each_row(const EmbTable *t, void (*fn)(void *ctx, int64_t row, int64_t id),
                           void *ctx)
{
    const Dyn *d = dyn_of(t);
    for (int64_t row = 0; row < d->used; row++)
        if (d->rowid[row] >= 0)
            fn(ctx, row, d->rowid[row]);
}

int64_t emb__dynamic_row_id(const EmbTable *t, int64_t r)
{
    return dyn_of(t)->rowid[r];
}

int64_t emb__dynamic_row_last(const EmbTable *t, int64_t r)
{
    return dyn_of(t)->last[r];
}

const uint16_t *emb__dynamic_sketch(const EmbTable *t, int64_t *width)
{
    const Dyn *d = dyn_of(t);
    *width = d->sketch ? d->sketch_width : 0;
    return d->sketch;
}

int emb__dynamic_stage(const EmbTable *t, int64_t n, EmbDynStage **out)
{
    const Dyn *d = dyn_of(t);
    if (d->max_rows > 0 && n > d->max_rows)
        return emb__fail(EMB_ENOMEM, "%s: the checkpoint holds %lld rows, more than its "
                         "max_rows %lld", emb__table_label(t), (long long)n,
                         (long long)d->max_rows);
    Dyn *s = calloc(1, sizeof *s);
    if (!s)
        return emb__fail(EMB_ENOMEM, "out of memory restoring %s", emb__table_label(t));
    s->refs = 1;
    s->free_head = -1;
    s->D = d->D;
    s->dtype = d->dtype;
    s->stride = d->stride;
    s->align = d->align;
    s->shift = d->shift;
    s->max_rows = d->max_rows;
    s->sketch_width = d->sketch_width;
    s->swidth = d->swidth;
    s->sstride = d->sstride;
    s->x.nslots = 16;
    s->x.slots = malloc((size_t)s->x.nslots * sizeof *s->x.slots);
    if (d->sketch)
        s->sketch = calloc((size_t)(SKETCH_DEPTH * d->sketch_width), sizeof *s->sketch);
    int r = s->x.slots && (!d->sketch || s->sketch)
                    ? 0 : emb__fail(EMB_ENOMEM, "out of memory restoring %s",
                                    emb__table_label(t));
    for (int64_t i = 0; !r && i < s->x.nslots; i++)
        s->x.slots[i] = (DynSlot){-1, 0};
    r = r ? r : emb__dyn_reserve(s, EMB_MAX(n, 1), t);
    for (int64_t row = 0; !r && s->swidth && row < n; row++)
        memcpy(state_ptr(s, row), d->sinit, (size_t)s->swidth * sizeof(float));
    if (r) {
        emb__dyn_unref(s);
        return r;
    }
    s->used = s->nrows = n;
    *out = (EmbDynStage *)s;
    return 0;
}

void *emb__dynamic_stage_row(EmbDynStage *st, int64_t k)
{
    return row_ptr((Dyn *)st, k);
}

float *emb__dynamic_stage_state(EmbDynStage *st, int64_t k)
{
    const Dyn *s = (Dyn *)st;
    return s->swidth ? state_ptr(s, k) : NULL;
}

int64_t *emb__dynamic_stage_last(EmbDynStage *st)
{
    return ((Dyn *)st)->last;
}

uint16_t *emb__dynamic_stage_sketch(EmbDynStage *st, int64_t *width)
{
    Dyn *s = (Dyn *)st;
    *width = s->sketch ? s->sketch_width : 0;
    return s->sketch;
}

int emb__dynamic_stage_ids(EmbDynStage *st, const int64_t *ids, int64_t step)
{
    Dyn *s = (Dyn *)st;
    if (step < 0)
        return -1;
    for (int64_t k = 0; k < s->nrows; k++) {
        if (ids[k] < 0 || (k > 0 && ids[k] <= ids[k - 1]) || s->last[k] < 0 ||
            s->last[k] > step)
            return -1;
        s->rowid[k] = ids[k];
        emb__dyn_slot_insert(s->x.slots, s->x.nslots, ids[k], k);
    }
    s->step = step;
    return 0;
}

void emb__dynamic_stage_commit(EmbTable *t, EmbDynStage *st)
{
    Dyn *d = dyn_of(t), *s = (Dyn *)st;
#define SWAP(f)                                                                               \
    do {                                                                                      \
        __typeof__(d->f) tmp_ = d->f;                                                         \
        d->f = s->f;                                                                          \
        s->f = tmp_;                                                                          \
    } while (0)
    SWAP(x);
    SWAP(slabs);
    SWAP(sslabs);
    SWAP(nslabs);
    SWAP(slabs_cap);
    SWAP(rowid);
    SWAP(last);
    SWAP(free_head);
    SWAP(nfree);
    SWAP(used);
    SWAP(nrows);
    SWAP(sketch);
    SWAP(step);
#undef SWAP
    emb__dyn_unref(s); /* the table's old storage */
}

void emb__dynamic_stage_free(EmbDynStage *st)
{
    if (st)
        emb__dyn_unref((Dyn *)st);
}

int emb__dynamic_initialize(EmbTable *t, const EmbInitializer *in)
{
    Dyn *d = dyn_of(t);
    if (in->kind == EMB_INIT_UNIFORM_UNIT_SCALING)
        return emb__fail(EMB_EINVAL, "%s: UNIFORM_UNIT_SCALING needs a row count a dynamic "
                         "table does not have", emb__table_label(t));
    if (in->kind == EMB_INIT_NONE)
        return 0;
    d->init = *in;
    for (int64_t r = 0; r < d->used; r++) {
        if (d->rowid[r] < 0)
            continue;
        char *row = row_ptr(d, r);
        for (int32_t i = 0; i < d->D; i++)
            emb__store(d->dtype, row, i, emb__init_value(&d->init, INT64_MAX, d->rowid[r], i));
    }
    return 0;
}
