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

bool emb__dyn_state_is(const EmbTable *t, const EmbTable *view)
{
    return dyn_of(t)->view == view;
}

/* ---- column, column_create (the contract) ----------------------------------------------- */

void *emb__dyn_column(const EmbTable *t, int64_t id, EmbContext ctx)
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

/* ---- acquire (the contract: batched resolution of spans) ---------------------- */

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

/* acquire without rows: with EMB_DYN_MISSING_ERROR, EMB_ENOTFOUND for the first id of @sp
   that has no row (ids < 0 and pruned entries left out). */
static int check_readable(const EmbTable *t, const EmbIdSpan *sp)
{
    if (!emb__dynamic_missing_fails(t))
        return 0;
    for (int64_t k = 0; k < sp->n; k++) {
        const int64_t id = emb__span_id(sp, k);
        if (id < 0 || (sp->pruned_w && !(sp->pruned_w[sp->k0 + k] > 0.0f)))
            continue;
        if (!emb__dynamic_has(t, id))
            return emb__fail(EMB_ENOTFOUND, "id %lld has no row (%s reads unknown ids as an "
                             "error)", (long long)id, emb__table_label(t));
    }
    return 0;
}

/* The contract's acquire (FORWARD / NONE: reads the index only); n <= SPAN. */
int emb__dyn_resolve(const EmbTable *t, const EmbIdSpan *sp, EmbContext ctx,
                       const void **cols, unsigned *hint)
{
    (void)ctx;
    if (!cols) /* rows in memory: nothing to pin, ids to check */
        return check_readable(t, sp);
    const Dyn *d = dyn_of(t);
    const size_t rowbytes = (size_t)t->featuresize * t->elsize;
    const bool pf = d->nrows * (int64_t)d->stride > EMB_RESIDENT_BYTES;
    resolve(d, sp->ids, sp->id32, sp->k0, sp->n, rowbytes, pf, (const char **)cols);
    *hint = pf ? EMB_RESOLVE_PREFETCHED : 0;
    return 0;
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
int emb__dyn_update_prepare(EmbTable *t, EmbRowPlan *rp)
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

void emb__dyn_update_commit(EmbTable *t, EmbRowPlan *rp)
{
    emb__dynamic_step(t);
    for (int p = 0; p < rp->nparts; p++) {
        int64_t d0, n;
        emb__rowplan_part(rp, p, &d0, &n);
        if (n > 0)
            emb__dynamic_commit(t, rp->ids + d0, n, rp->handle + d0);
    }
}

void emb__dyn_update_rows(const EmbTable *t, const EmbRowPlan *rp, int64_t d0, int64_t n,
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

void emb__dyn_destroy(EmbTable *t)
{
    Dyn *d = dyn_of(t);
    if (d)
        emb__dyn_unref(d);
    t->impl = NULL;
}
