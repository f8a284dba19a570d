/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynamic_rows.c — the rows in slabs: growth (nothing visible changes), creation and
 * eviction of a row, kept in the id -> row map (dynamic_map.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "initval.h"
#include "rng.h"
#include "tables/dynamic/dynamic_impl.h"

/* ---- the slabs (growth: nothing visible changes) ----------------------------------------- */

static void *zalloc_aligned(size_t align, size_t bytes)
{
    void *p = emb__aligned_alloc(align, bytes ? bytes : align);
    if (p)
        memset(p, 0, bytes);
    return p;
}

void *emb__dyn_zalloc_big(size_t align, size_t bytes)
{
    void *p = emb__big_alloc(align, bytes ? bytes : align);
    if (p)
        memset(p, 0, bytes);
    return p;
}

void *emb__dyn_zalloc(size_t bytes)
{
    return zalloc_aligned(EMB_ALIGN, bytes);
}

static int grow_array(void *pp, int64_t n, size_t size)
{
    void *q = realloc(*(void **)pp, (size_t)n * size);
    if (!q)
        return EMB_ENOMEM;
    *(void **)pp = q;
    return 0;
}

/* One more slab (and state slab); nothing changes on failure. */
int emb__dyn_slab_add(Dyn *d)
{
    const int64_t per = (int64_t)1 << d->shift, rows = (d->nslabs + 1) * per;
    if (d->nslabs == d->slabs_cap) {
        const int64_t cap = EMB_MAX(8, 2 * d->slabs_cap);
        if (grow_array(&d->slabs, cap, sizeof *d->slabs) ||
            grow_array(&d->sslabs, cap, sizeof *d->sslabs))
            return emb__fail(EMB_ENOMEM, "out of memory for a dynamic table's slab list");
        d->slabs_cap = cap;
    }
    if (grow_array(&d->rowid, rows, sizeof(int64_t)) ||
        grow_array(&d->last, rows, sizeof(int64_t)))
        return emb__fail(EMB_ENOMEM, "out of memory for a dynamic table's row metadata");
    char *slab = emb__dyn_zalloc_big(d->align, (size_t)per * d->stride);
    float *sslab = d->swidth ? emb__dyn_zalloc_big(EMB_ALIGN, (size_t)per * d->sstride) : NULL;
    if (!slab || (d->swidth && !sslab)) {
        emb__aligned_free(slab);
        emb__aligned_free(sslab);
        return emb__fail(EMB_ENOMEM, "out of memory for a dynamic table slab of %lld bytes",
                         (long long)((size_t)per * d->stride));
    }
    for (int64_t r = d->nslabs * per; r < rows; r++)
        d->rowid[r] = -1;
    d->slabs[d->nslabs] = slab;
    d->sslabs[d->nslabs] = sslab;
    d->nslabs++;
    return 0;
}

/* Room for @extra new rows (cap, index, slabs); 0 or EMB_ENOMEM, nothing visible changed. */
int emb__dyn_reserve(Dyn *d, int64_t extra, const EmbTable *t)
{
    if (extra <= 0)
        return 0;
    if (d->max_rows > 0 && d->nrows + extra > d->max_rows)
        return emb__fail(EMB_ENOMEM, "%s: %lld rows and %lld new exceed max_rows %lld",
                         emb__table_label(t), (long long)d->nrows, (long long)extra,
                         (long long)d->max_rows);
    int r = emb__dyn_index_grow(&d->x, emb__dyn_slots_for(d->nrows + extra));
    while (!r && d->nfree + (d->nslabs << d->shift) - d->used < extra)
        r = emb__dyn_slab_add(d);
    return r;
}

/* ---- rows -------------------------------------------------------------------------------- */

/* A new row for @id (after reserve). */
int64_t emb__dyn_create(Dyn *d, int64_t id)
{
    int64_t r = d->used;
    if (d->free_head >= 0) {
        r = d->free_head;
        d->free_head = -2 - d->rowid[r];
        d->nfree--;
    } else {
        d->used++;
    }
    char *row = row_ptr(d, r);
    for (int32_t i = 0; i < d->D; i++)
        emb__store(d->dtype, row, i, emb__init_value(&d->init, INT64_MAX, id, i));
    if (d->swidth)
        memcpy(state_ptr(d, r), d->sinit, (size_t)d->swidth * sizeof(float));
    d->rowid[r] = id;
    d->last[r] = d->step;
    emb__dyn_slot_insert(d->x.slots, d->x.nslots, id, r);
    d->nrows++;
    return r;
}

void emb__dyn_evict_row(Dyn *d, int64_t r)
{
    emb__dyn_slot_remove(&d->x, d->rowid[r]);
    d->rowid[r] = -2 - d->free_head;
    d->free_head = r;
    d->nfree++;
    memset(row_ptr(d, r), 0, d->stride);
    d->nrows--;
}
