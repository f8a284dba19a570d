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

/* ---- the prefetch: a non-blocking exchange in two legs ------------------------------- */

/*
 * emb_dist_prefetch() checks, copies and packs the next batch, then starts one
 * MPI_Ialltoall of fixed-size headers (to each rank: the words it will get, this rank's
 * check code, bag count and poolings hash) and returns. After emb_dist_update()'s first
 * agreement (which drove the headers: every rank had posted them), each rank waits for
 * them (at once, in practice) and sizes its receive buffer; the update's last agreement
 * carries whether every rank could, and then the words' MPI_Ialltoallv starts, to be
 * driven by whatever MPI calls the caller makes (the dense part's allreduce) until the
 * forward waits for it. No extra synchronisation: each leg rides on an agreement the
 * update makes anyway, at the same point of every rank's collective calls.
 * Without an update in between, the forward runs both legs itself. No rank blocks in
 * the prefetch; a rank whose checks failed sends no words and every rank learns it from
 * the headers: the forward reports it, agreed.
 */
int emb_dist_prefetch(EmbDist *d, const EmbBatch *batches, const EmbPooling *poolings)
{
    dist_clear_error();
    if (!d)
        return dist_fail(EMB_ENULL, "emb_dist_prefetch: d is NULL");
    if (d->prefetched) /* every rank made the same calls: no agreement needed */
        return dist_fail(EMB_EINVAL, "emb_dist_prefetch: a prefetch is already pending");
    double blocking = 0, *clock = d->xclock;
    d->xclock = &blocking;
    const int32_t P = d->nranks;
    if (!d->pf_hdr) { /* the first prefetch on every rank: its one allocation, agreed */
        d->pf_hdr = malloc(sizeof(int64_t) * 8 * (size_t)P);
        const int r = dist_agree(d, d->pf_hdr ? 0 : dist_fail(EMB_ENOMEM, "emb_dist_prefetch: "
                                 "out of memory for the headers"), NULL, NULL);
        if (r) {
            d->xclock = clock;
            return r;
        }
    }
    d->forward_done = 0; /* the saved batches are the next step's from here on */
    d->stats.ids_bytes = 0;
    int code = dist_prepare(d, batches, poolings, NULL, 0);
    code = dist_pack_sendbuf(d, code, &d->stats.ids_bytes);
    d->pf_code = code;
    snprintf(d->pf_msg, sizeof d->pf_msg, "%s", code ? emb_last_error() : "");
    const int64_t hash = (int64_t)dist_pooling_hash(d, poolings);
    int64_t *h = d->pf_hdr;
    for (int32_t k = 0; k < P; k++)
        h[4 * k] = d->scount[k], h[4 * k + 1] = code, h[4 * k + 2] = d->nbags, h[4 * k + 3] = hash;
    const double t0 = dist_now();
    const int m = MPI_Ialltoall(h, 4, MPI_INT64_T, h + 4 * P, 4, MPI_INT64_T, d->comm,
                                &d->pf_req);
    blocking += dist_now() - t0;
    d->xclock = clock;
    if (m != MPI_SUCCESS)
        return dist_mpi_fail(m, "MPI_Ialltoall (prefetch headers)");
    dist_clear_error(); /* a failed check is the forward's to report */
    d->prefetched = 1, d->pf_phase = DIST_PF_HEADERS;
    d->pf_batches = batches, d->pf_poolings = poolings;
    d->pf_blocking = blocking;
    return 0;
}

/* Waits for the headers; DIST_PF_FAILED when a rank's checks failed, else sizes the
   receive buffer (returns its failure). */
static int wait_headers(EmbDist *d)
{
    const double t0 = dist_now();
    const int m = MPI_Wait(&d->pf_req, MPI_STATUS_IGNORE);
    d->pf_blocking += dist_now() - t0;
    if (m != MPI_SUCCESS)
        return dist_mpi_fail(m, "MPI_Wait (prefetch headers)");
    const int64_t *h = d->pf_hdr + 4 * d->nranks;
    d->pf_phase = DIST_PF_SIZED;
    for (int32_t k = 0; k < d->nranks; k++)
        if (h[4 * k + 1])
            d->pf_phase = DIST_PF_FAILED;
    for (int32_t k = 0; k < d->nranks; k++)
        d->rcount[k] = d->pf_phase == DIST_PF_FAILED ? 0 : (int)h[4 * k];
    return dist_size_recvbuf(d, 0);
}

/* Drops the pending prefetch (its headers received): the next forward runs whole. */
static void drop(EmbDist *d)
{
    d->prefetched = 0, d->pf_phase = 0;
}

int dist_prefetch_progress(EmbDist *d, int agreed, int64_t ready[2])
{
    ready[0] = ready[1] = 0;
    if (!d->prefetched || d->pf_phase != DIST_PF_HEADERS)
        return 0;
    const int r = wait_headers(d);
    if (agreed)
        drop(d);
    ready[0] = !r;
    dist_clear_error(); /* a receive buffer that failed: the forward retries it */
    return 1;
}

void dist_prefetch_start(EmbDist *d, int agreed)
{
    if (!d->prefetched || (d->pf_phase != DIST_PF_SIZED && d->pf_phase != DIST_PF_FAILED))
        return;
    if (agreed) {
        drop(d);
        return;
    }
    for (int32_t k = 0; k < d->nranks; k++)
        if (d->pf_phase != DIST_PF_SIZED || !d->vals[2 * k]) /* the forward does it */
            return;
    const double t0 = dist_now();
    const int m = MPI_Ialltoallv(d->sendbuf, d->scount, d->sdispl, MPI_UINT32_T, d->recvbuf,
                                 d->rcount, d->rdispl, MPI_UINT32_T, d->comm, &d->pf_req);
    d->pf_blocking += dist_now() - t0;
    d->pf_phase = DIST_PF_WORDS;
    if (m != MPI_SUCCESS) { /* MPI's errors are fatal unless a handler says otherwise */
        d->pf_phase = DIST_PF_FAILED, d->pf_code = dist_mpi_fail(m, "MPI_Ialltoallv (ids)");
        snprintf(d->pf_msg, sizeof d->pf_msg, "%s", emb_last_error());
        dist_clear_error();
    }
}

int dist_prefetch_finish(EmbDist *d, int code)
{
    d->prefetched = 0;
    const double t0 = dist_now();
    int m = MPI_SUCCESS, r = 0;
    if (d->pf_phase == DIST_PF_HEADERS) /* no update in between: both legs here */
        r = wait_headers(d);
    else if (d->pf_phase == DIST_PF_SIZED) /* a rank's receive buffer failed: again */
        r = dist_size_recvbuf(d, 0);
    if (d->pf_phase == DIST_PF_SIZED) {
        if (!(r = dist_agree(d, r, NULL, NULL)))
            m = MPI_Alltoallv(d->sendbuf, d->scount, d->sdispl, MPI_UINT32_T, d->recvbuf,
                              d->rcount, d->rdispl, MPI_UINT32_T, d->comm);
    } else if (d->pf_phase == DIST_PF_WORDS) {
        m = MPI_Wait(&d->pf_req, MPI_STATUS_IGNORE);
    }
    d->pf_phase = 0;
    *d->xclock += dist_now() - t0;
    d->stats.ids_wait_s = d->pf_blocking + dist_now() - t0;
    if (r)
        return r;
    if (m != MPI_SUCCESS)
        return dist_mpi_fail(m, "MPI_Alltoallv (prefetched ids)");
    const int64_t *h = d->pf_hdr + 4 * d->nranks;
    for (int32_t k = 0; k < d->nranks; k++)
        d->vals[2 * k] = h[4 * k + 2], d->vals[2 * k + 1] = h[4 * k + 3];
    if (d->pf_code) /* the prefetch's checks come first, as in a whole forward */
        code = dist_fail(d->pf_code, "%s", d->pf_msg);
    return dist_agree(d, code, NULL, NULL);
}

/* ---- (1) the requests packed ------------------------------------------------------- */

static int64_t req_start(const DistTable *t, int32_t o)
{
    int64_t s = 0;
    for (int32_t k = 0; k < o; k++)
        s += t->nreq[k];
    return s;
}

int dist_pack_requests(EmbDist *d)
{
    const int64_t nb = d->nbags;
    for (int32_t o = 0; o < d->nranks; o++) {
        Words *w = &d->send[o];
        w->n = 0;
        for (int64_t i = 0; i < d->ntables; i++) {
            const DistTable *t = &d->t[i];
            const int64_t nnz = t->offsets[nb];
            if (dist_whole_on(t, o)) {
                if (dist_words_reserve(w, 4 + 2 * nb + 3 * nnz))
                    return EMB_ENOMEM;
                dist_put_i64(w, nnz);
                dist_put_i64(w, t->has_weights);
                for (int64_t b = 0; b < nb; b++)
                    dist_put_i64(w, t->offsets[b + 1] - t->offsets[b]);
                for (int64_t k = 0; k < nnz; k++)
                    dist_put_i64(w, t->ids[k]);
                if (t->has_weights)
                    dist_put_f32s(w, t->weights, nnz);
            } else if (t->place.kind == EMB_DIST_ROWWISE) {
                const int64_t m = t->nreq[o], s = req_start(t, o);
                if (dist_words_reserve(w, 2 + 2 * m))
                    return EMB_ENOMEM;
                dist_put_i64(w, m);
                for (int64_t j = 0; j < m; j++)
                    dist_put_i64(w, t->distinct[s + j]);
            }
        }
    }
    return 0;
}
