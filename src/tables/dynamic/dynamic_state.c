/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynamic_state.c — optimizer state kept with a dynamic table's rows (the keyed facet's state_attach) and its state view table.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "initval.h"
#include "rng.h"
#include "tables/dynamic/dynamic_impl.h"

/* ---- state_attach (the contract: optimizer state kept with the rows) -------------------- */

void emb__dyn_unref(Dyn *d)
{
    if (--d->refs > 0)
        return;
    for (int64_t i = 0; i < d->nslabs; i++) {
        emb__aligned_free(d->slabs[i]);
        emb__aligned_free(d->sslabs[i]);
    }
    free(d->slabs);
    free(d->sslabs);
    free(d->rowid);
    free(d->last);
    free(d->x.slots);
    free(d->sketch);
    emb__aligned_free(d->defrow);
    emb__aligned_free(d->sink);
    emb__aligned_free(d->sinit);
    emb__aligned_free(d->sdefault);
    free(d);
}

static void state_free(Dyn *d)
{
    for (int64_t i = 0; i < d->nslabs; i++) {
        emb__aligned_free(d->sslabs[i]);
        d->sslabs[i] = NULL;
    }
    emb__aligned_free(d->sinit);
    emb__aligned_free(d->sdefault);
    d->sinit = d->sdefault = NULL;
    d->swidth = 0;
    d->sstride = 0;
}

void emb__dyn_view_destroy(EmbTable *v)
{
    Dyn *d = v->impl;
    if (d->view == v) {
        state_free(d);
        d->view = NULL;
    }
    emb__dyn_unref(d);
    v->impl = NULL;
}

int emb__dynamic_state_attach(EmbTable *t, int32_t width, const float *init, EmbTable **view)
{
    Dyn *d = dyn_of(t);
    if (d->view)
        return emb__fail(EMB_ENOTSUP, "%s keeps another optimizer's state already (detach it "
                         "first)", emb__table_label(t));
    if (width < 1 || width > (1 << 24))
        return emb__fail(EMB_EINVAL, "optimizer state width %d for %s", (int)width,
                         emb__table_label(t));
    const size_t sstride = ((size_t)width * sizeof(float) + EMB_ALIGN - 1) / EMB_ALIGN * EMB_ALIGN;
    const EmbTableOptions vo = {0};
    EmbTable *v = NULL;
    int r = emb__table_alloc(&v, INT64_MAX, width, EMB_F32, &vo);
    if (r)
        return r;
    float *sinit = emb__dyn_zalloc(sstride), *sdef = emb__dyn_zalloc(sstride);
    float **sl = calloc((size_t)EMB_MAX(d->nslabs, 1), sizeof *sl);
    bool ok = sinit && sdef && sl;
    for (int64_t i = 0; ok && i < d->nslabs; i++)
        ok = (sl[i] = emb__dyn_zalloc_big(EMB_ALIGN, ((size_t)1 << d->shift) * sstride)) != NULL;
    if (!ok) {
        for (int64_t i = 0; sl && i < d->nslabs; i++)
            emb__aligned_free(sl[i]);
        free(sl);
        emb__aligned_free(sinit);
        emb__aligned_free(sdef);
        emb_table_destroy(&v);
        return emb__fail(EMB_ENOMEM, "out of memory for the optimizer state of %s",
                         emb__table_label(t));
    }
    memcpy(sinit, init, (size_t)width * sizeof(float));
    memcpy(sdef, init, (size_t)width * sizeof(float));
    for (int64_t i = 0; i < d->nslabs; i++)
        d->sslabs[i] = sl[i];
    free(sl);
    d->swidth = width;
    d->sstride = sstride;
    d->sinit = sinit;
    d->sdefault = sdef;
    for (int64_t row = 0; row < d->used; row++)
        if (d->rowid[row] >= 0)
            memcpy(state_ptr(d, row), sinit, (size_t)width * sizeof(float));
    v->ops = &emb__dynamic_state_ops;
    v->impl = d;
    d->refs++;
    d->view = v;
    *view = v;
    return 0;
}

/* ---- the state view table ---------------------------------------------------------------- */

static void *state_column(const EmbTable *t, int64_t id, EmbContext ctx)
{
    (void)ctx;
    const Dyn *d = dyn_of(t);
    if (!d->swidth)
        return d->sdefault;
    const int64_t r = find(d, id);
    return r >= 0 ? (void *)state_ptr(d, r) : (void *)d->sdefault;
}

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
    .release = emb__rows_release_none,
};

const EmbTableOps emb__dynamic_state_ops = {
    .kind = "dynamic state",
    .rows = &state_rows,
    .save_check = state_save_check,
    .destroy = emb__dyn_view_destroy,
};
