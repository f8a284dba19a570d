/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist_prefetch.c — the local side of a lookup, and emb_dist_prefetch().
 *
 * Step (1) of dist_forward.c: each rank checks its batches against the tables' shapes
 * (proxy tables), copies them (the backward needs them) and, for row-wise tables, lists
 * the distinct ids it needs from each owner (owner-major, first appearance inside: the
 * columns of the compact table it will pool from), then packs its requests. A prefetch
 * does that for the next step's batches and starts the requests travelling; the lookup
 * that follows waits for them (dist_forward.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch_rules.h"
#include "dist/dist_impl.h"

/* ---- (1) local checks and copies ----------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

uint64_t dist_pooling_hash(const EmbDist *d, const EmbPooling *poolings)
{
    uint64_t h = 1469598103934665603ull;
    for (int64_t i = 0; i < d->ntables; i++) {
        const EmbPooling p = poolings ? poolings[i] : EMB_POOLING_SUM;
        uint32_t mn;
        memcpy(&mn, &p.max_norm, sizeof mn);
        h = mix(mix(mix(mix(h, (uint64_t)p.combiner), mn), (uint64_t)p.default_id), p.flags);
    }
    return h;
}

static int check_local(EmbDist *d, const EmbBatch *batches, const EmbPooling *poolings,
                       const EmbOutputs *outputs, int check_outputs)
{
    if (!batches)
        return dist_fail(EMB_ENULL, "emb_dist_maplookup: batches is NULL");
    const int64_t nb = batches[0].nbags;
    for (int64_t i = 0; i < d->ntables; i++) {
        const int r = emb_batch_validate(d->t[i].proxy, &batches[i],
                                         poolings ? &poolings[i] : NULL);
        if (r)
            return dist_fail(r, "emb_dist_maplookup: tables[%lld]: %s", (long long)i,
                             emb_last_error());
        if (poolings && poolings[i].combiner == EMB_COMBINER_MAX &&
            d->t[i].place.kind == EMB_DIST_ROWWISE)
            return dist_fail(EMB_ENOTSUP, "emb_dist_maplookup: tables[%lld]: MAX pooling of a "
                             "row-wise table is not supported (its backward would need each "
                             "element's owner): place it table-wise", (long long)i);
        if (poolings && poolings[i].max_norm != 0 &&
            d->t[i].place.kind == EMB_DIST_COLUMNWISE)
            return dist_fail(EMB_ENOTSUP, "emb_dist_maplookup: tables[%lld]: max_norm of a "
                             "column-wise table is not supported (a row's norm spans the "
                             "ranks): place it otherwise", (long long)i);
        if (batches[i].nbags != nb)
            return dist_fail(EMB_ESHAPE, "emb_dist_maplookup: batches[%lld].nbags = %lld, "
                             "batches[0].nbags = %lld", (long long)i,
                             (long long)batches[i].nbags, (long long)nb);
    }
    return check_outputs ? dist_outputs_check(d, outputs, nb, "emb_dist_maplookup: outputs")
                         : 0;
}

static int64_t id_at(const EmbBatch *b, int64_t k)
{
    return b->id_type == EMB_ID_I32 ? ((const int32_t *)b->ids)[k] : ((const int64_t *)b->ids)[k];
}

/* Copies batch @p b of table @p t as int64 ids, offsets (always) and weights. */
static int save_batch(DistTable *t, const EmbBatch *b, const EmbPooling *p)
{
    int r = dist_grow((void **)&t->ids, &t->ids_cap, 8 * b->nnz + 8);
    if (!r)
        r = dist_grow((void **)&t->offsets, &t->offsets_cap, 8 * (b->nbags + 1));
    if (!r && b->weights)
        r = dist_grow((void **)&t->weights, &t->weights_cap, 4 * b->nnz + 4);
    if (r)
        return r;
    for (int64_t k = 0; k < b->nnz; k++)
        t->ids[k] = id_at(b, k);
    for (int64_t i = 0; i <= b->nbags; i++)
        t->offsets[i] = b->offsets ? b->offsets[i] : i * b->bag_size;
    if (b->weights)
        memcpy(t->weights, b->weights, 4 * (size_t)b->nnz);
    t->has_weights = b->weights != NULL;
    t->pooling = p ? *p : EMB_POOLING_SUM;
    return 0;
}

EmbBatch dist_batch(const DistTable *t, const int64_t *ids, const int64_t *offsets,
                    const float *weights, int64_t nnz, int64_t nbags)
{
    EmbBatch b = {.ids = ids, .id_type = EMB_ID_I64, .nnz = nnz, .nbags = nbags,
                  .offsets = offsets, .weights = weights};
    if (t->pooling.combiner == EMB_COMBINER_NONE)
        b.offsets = NULL, b.bag_size = 1;
    return b;
}

int dist_pruned(const DistTable *t, int64_t k, int64_t id)
{
    return emb_rule_pruned(t->pooling.flags, id, t->has_weights ? t->weights : NULL, k);
}

static uint64_t hash64(int64_t v)
{
    uint64_t z = (uint64_t)v + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Index of @p id among the distinct ids so far (added when new); slots hold (id, index). */
static int64_t intern(int64_t *slots, int64_t mask, int64_t id, int64_t *n, int64_t *order)
{
    for (uint64_t s = hash64(id) & (uint64_t)mask;; s = (s + 1) & (uint64_t)mask) {
        if (slots[2 * s + 1] < 0) {
            slots[2 * s] = id, slots[2 * s + 1] = *n;
            order[*n] = id;
            return (*n)++;
        }
        if (slots[2 * s] == id)
            return slots[2 * s + 1];
    }
}

/*
 * Row-wise table @p t: the distinct ids of this rank's batch (and default_id), grouped by
 * owner (ranks in order, first appearance inside), as owners' columns in t->distinct,
 * and each position's compact column in t->remap (-1 when pruned).
 */
static int plan_rows(EmbDist *d, DistTable *t, int64_t nnz)
{
    const int use_default = (t->pooling.flags & EMB_USE_DEFAULT_ID) != 0;
    const int64_t n = nnz + use_default;
    int64_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    int r = dist_grow((void **)&d->hash, &d->hash_cap, 16 * cap);
    if (!r)
        r = dist_grow((void **)&t->remap, &t->remap_cap, 8 * n + 8);
    if (!r)
        r = dist_grow((void **)&t->distinct, &t->distinct_cap, 16 * n + 16);
    if (!r && !t->nreq && !(t->nreq = calloc((size_t)d->nranks + 1, sizeof *t->nreq)))
        r = dist_fail(EMB_ENOMEM, "out of memory for a row-wise plan");
    if (r)
        return r;
    int64_t *slots = d->hash, *order = t->distinct + n; /* ids by first appearance */
    for (int64_t s = 0; s < cap; s++)
        slots[2 * s + 1] = -1;
    int64_t m = 0;
    for (int64_t k = 0; k < nnz; k++)
        t->remap[k] = dist_pruned(t, k, t->ids[k]) ? -1
                      : intern(slots, cap - 1, t->ids[k], &m, order);
    t->default_col = use_default ? intern(slots, cap - 1, t->pooling.default_id, &m, order) : 0;
    /* owner-major order: counting sort by owner, stable */
    int64_t *start = t->nreq; /* reused: counts, then starts */
    for (int32_t o = 0; o <= d->nranks; o++)
        start[o] = 0;
    for (int64_t j = 0; j < m; j++) {
        int32_t o;
        int64_t col;
        dist_locate(d, t, order[j], &o, &col);
        start[o + 1]++;
    }
    for (int32_t o = 0; o < d->nranks; o++)
        start[o + 1] += start[o];
    int64_t *pos = slots; /* the hash is done: index -> compact column */
    for (int64_t j = 0; j < m; j++) {
        int32_t o;
        int64_t col;
        dist_locate(d, t, order[j], &o, &col);
        pos[j] = start[o]++;
        t->distinct[pos[j]] = col;
    }
    for (int64_t k = 0; k < nnz; k++)
        if (t->remap[k] >= 0)
            t->remap[k] = pos[t->remap[k]];
    if (use_default)
        t->default_col = pos[t->default_col];
    for (int32_t o = d->nranks; o > 0; o--) /* starts were advanced to ends: counts */
        start[o] = start[o - 1];
    start[0] = 0;
    for (int32_t o = 0; o < d->nranks; o++)
        start[o] = start[o + 1] - start[o];
    t->ndistinct = m;
    return 0;
}

int dist_prepare(EmbDist *d, const EmbBatch *batches, const EmbPooling *poolings,
                 const EmbOutputs *outputs, int check_outputs)
{
    int r = check_local(d, batches, poolings, outputs, check_outputs);
    d->nbags = r ? 0 : batches[0].nbags;
    for (int64_t i = 0; i < d->ntables && !r; i++) {
        DistTable *t = &d->t[i];
        r = save_batch(t, &batches[i], poolings ? &poolings[i] : NULL);
        if (!r && t->place.kind == EMB_DIST_ROWWISE)
            r = plan_rows(d, t, batches[i].nnz);
    }
    if (!r && dist_pack_requests(d))
        r = dist_fail(EMB_ENOMEM, "out of memory for the requests");
    return r;
}

int emb_dist_prefetch(EmbDist *d, const EmbBatch *batches, const EmbPooling *poolings)
{
    dist_clear_error();
    if (!d)
        return dist_fail(EMB_ENULL, "emb_dist_prefetch: d is NULL");
    if (d->prefetched) /* every rank made the same calls: no agreement needed */
        return dist_fail(EMB_EINVAL, "emb_dist_prefetch: a prefetch is already pending");
    double blocking = 0, *clock = d->xclock;
    d->xclock = &blocking;
    d->forward_done = 0; /* the saved batches are the next step's from here on */
    d->stats.ids_bytes = 0;
    int r = dist_prepare(d, batches, poolings, NULL, 0);
    const int64_t mine[2] = {d->nbags, (int64_t)dist_pooling_hash(d, poolings)};
    r = dist_exchange_words_ex(d, r, mine, &d->stats.ids_bytes, &d->pf_req);
    d->xclock = clock;
    if (r)
        return r;
    d->prefetched = 1;
    d->pf_batches = batches, d->pf_poolings = poolings;
    d->pf_blocking = blocking;
    return 0;
}
