/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist_forward.c — emb_dist_maplookup() (step (1) and emb_dist_prefetch(): dist_prefetch.c).
 *
 * (1) Each rank checks its batches against the tables' shapes (proxy tables), copies them
 * (the backward needs them) and, for row-wise tables, lists the distinct ids it needs
 * from each owner (owner-major, first appearance inside: the columns of the compact table
 * it will pool from). The ranks agree (codes, bag counts, a hash of the poolings).
 * (2) Requests travel: MPI_Alltoall of the counts, MPI_Alltoallv of the words: for a
 * table-wise table its owner gets the rank's bag lengths, ids and weights; for a row-wise
 * table every owner gets the columns asked of it. Owners assemble each table's global
 * batch, ranks in order, and agree again.
 * (3) Group by group, owners pool their tables' global batches (emb_maplookup under the
 * ensemble's strategy, into a concat matrix whose rows are the global bags: the rows for
 * rank r are one contiguous block) and copy the raw rows asked of them; an
 * MPI_Ialltoallv per group (pooled rows) and per row-wise table (raw rows) starts at
 * once, so that the next group's pooling runs while they travel. (4) After the waits and
 * a last agreement, each rank copies its pooled rows into its outputs and pools its
 * row-wise tables from the rows it received, wrapped as a table, in bag order: the bits
 * of the single-process lookup.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch_rules.h"
#include "dist/dist_impl.h"

/* ---- (2) requests -------------------------------------------------------------------- */

/*
 * Owner side: walks every source's request; @p fill 0 sizes the global batches, 1 fills
 * them (ids, offsets, weights: 1 where a rank sent none), and records where each
 * source's row-wise requests are.
 */
static void parse_requests(EmbDist *d, int fill)
{
    for (int64_t i = 0; i < d->ntables; i++) {
        DistTable *t = &d->t[i];
        t->g_nnz = 0;
        if (!fill)
            t->g_has_weights = 0;
        if (fill && t->g_offsets)
            t->g_offsets[0] = 0;
    }
    for (int32_t src = 0; src < d->nranks; src++) {
        const uint32_t *p = d->recvbuf + d->rdispl[src];
        const int64_t nb = d->rank_nbags[src], b0 = d->rank_off[src];
        for (int64_t i = 0; i < d->ntables; i++) {
            DistTable *t = &d->t[i];
            if (dist_whole_on(t, d->rank)) {
                const int64_t nnz = dist_get_i64(&p), hw = dist_get_i64(&p), k0 = t->g_nnz;
                if (!fill) {
                    t->g_has_weights |= hw != 0;
                    p += 2 * nb + 2 * nnz + (hw ? nnz : 0);
                    t->g_nnz += nnz;
                    continue;
                }
                for (int64_t b = 0; b < nb; b++)
                    t->g_offsets[b0 + b + 1] = t->g_offsets[b0 + b] + dist_get_i64(&p);
                for (int64_t k = 0; k < nnz; k++)
                    t->g_ids[k0 + k] = dist_get_i64(&p);
                for (int64_t k = 0; t->g_has_weights && k < nnz; k++)
                    t->g_weights[k0 + k] = hw ? dist_get_f32(&p) : 1.0f;
                t->g_nnz += nnz;
            } else if (t->place.kind == EMB_DIST_ROWWISE) {
                const int64_t m = dist_get_i64(&p);
                if (fill)
                    t->req_rows[src] = p, t->req_n[src] = m;
                p += 2 * m;
            }
        }
    }
}

static int build_global(EmbDist *d)
{
    parse_requests(d, 0);
    const int64_t G = d->global_nbags;
    for (int64_t i = 0; i < d->ntables; i++) {
        DistTable *t = &d->t[i];
        int r = 0;
        if (dist_whole_on(t, d->rank)) {
            r = dist_grow((void **)&t->g_ids, &t->g_ids_cap, 8 * t->g_nnz + 8);
            if (!r)
                r = dist_grow((void **)&t->g_offsets, &t->g_offsets_cap, 8 * (G + 1));
            if (!r && t->g_has_weights)
                r = dist_grow((void **)&t->g_weights, &t->g_weights_cap, 4 * t->g_nnz + 4);
        } else if (t->place.kind == EMB_DIST_ROWWISE && !t->req_rows) {
            t->req_rows = calloc((size_t)d->nranks, sizeof *t->req_rows);
            t->req_n = calloc((size_t)d->nranks, sizeof *t->req_n);
            if (!t->req_rows || !t->req_n)
                r = dist_fail(EMB_ENOMEM, "out of memory for row-wise requests");
        }
        if (r)
            return r;
    }
    parse_requests(d, 1);
    return 0;
}

/* ---- (3) pooling and the row exchanges ----------------------------------------------- */

/* Elements per global bag that rank @p o pools in group @p g (table-wise tables, its
   column-wise slices). */
static int64_t group_width(const EmbDist *d, int32_t g, int32_t o)
{
    int64_t w = 0;
    for (int64_t i = d->group_start[g]; i < d->group_start[g + 1]; i++) {
        int32_t c0;
        w += dist_pooled_cols(&d->t[i], o, &c0);
    }
    return w;
}

static int64_t nrowwise(const EmbDist *d)
{
    int64_t n = 0;
    for (int64_t i = 0; i < d->ntables; i++)
        n += d->t[i].place.kind == EMB_DIST_ROWWISE;
    return n;
}

/*
 * The rows buffer of row-wise table @p t wrapped whole as a table (ids index its first
 * ndistinct columns); wrapped again only when it has grown, so a steady-state step
 * allocates nothing here. Done before the agreement: the pooling after the exchange
 * cannot fail.
 */
static int wrap_rows(DistTable *t)
{
    const int64_t cols = t->rows_cap / (int64_t)t->rowbytes;
    if (t->compact && t->compact_data == t->rows && t->compact_cols == cols)
        return 0;
    emb_table_destroy(&t->compact);
    const int r = emb_table_wrap(&t->compact, t->rows, cols, t->desc.featuresize,
                                 t->desc.featuresize, t->desc.dtype, NULL);
    if (r)
        return dist_fail_core(r, "row-wise compact table");
    t->compact_data = t->rows, t->compact_cols = cols;
    return 0;
}

/* Buffers of the exchange: pooled rows (sent and received), gathered raw rows, counts. */
static int size_buffers(EmbDist *d)
{
    int64_t send_floats = 0, recv_floats = 0, gather_bytes = 0;
    for (int32_t g = 0; g < d->ngroups; g++) {
        send_floats += d->global_nbags * group_width(d, g, d->rank);
        for (int32_t o = 0; o < d->nranks; o++)
            recv_floats += d->nbags * group_width(d, g, o);
    }
    for (int64_t i = 0; i < d->ntables; i++) {
        DistTable *t = &d->t[i];
        if (t->place.kind != EMB_DIST_ROWWISE)
            continue;
        for (int32_t s = 0; s < d->nranks; s++)
            gather_bytes += t->req_n[s] * (int64_t)t->rowbytes;
        if (t->ndistinct * (int64_t)t->rowbytes > INT32_MAX)
            return dist_fail(EMB_EOVERFLOW, "emb_dist_maplookup: tables[%lld]: %lld rows "
                             "to receive exceed MPI's int counts", (long long)i,
                             (long long)t->ndistinct);
        int r = dist_grow((void **)&t->rows, &t->rows_cap,
                          t->ndistinct * (int64_t)t->rowbytes + 4);
        if (!r)
            r = wrap_rows(t);
        if (r)
            return r;
    }
    /* MPI counts and displacements are int: checked here, before the agreement, so that
       no rank leaves the collectives the others have started */
    if (send_floats > INT32_MAX || recv_floats > INT32_MAX || gather_bytes > INT32_MAX)
        return dist_fail(EMB_EOVERFLOW, "emb_dist_maplookup: %lld pooled floats to send, "
                         "%lld to receive or %lld row bytes exceed MPI's int counts",
                         (long long)send_floats, (long long)recv_floats,
                         (long long)gather_bytes);
    const int64_t nx = d->ngroups + nrowwise(d);
    int r = dist_grow((void **)&d->pooled, &d->pooled_cap, 4 * send_floats + 4);
    if (!r)
        r = dist_grow((void **)&d->pooled_recv, &d->pooled_recv_cap, 4 * recv_floats + 4);
    if (!r && d->bf16)
        r = dist_grow((void **)&d->pooled16, &d->pooled16_cap, 2 * send_floats + 4);
    if (!r && d->bf16)
        r = dist_grow((void **)&d->pooled16_recv, &d->pooled16_recv_cap, 2 * recv_floats + 4);
    if (!r)
        r = dist_grow((void **)&d->gather, &d->gather_cap, gather_bytes + 4);
    if (!r && nx > d->nreq_cap) {
        free(d->gcount), free(d->req);
        d->gcount = malloc(sizeof(int) * 4 * (size_t)(nx * d->nranks));
        d->req = malloc(sizeof(MPI_Request) * (size_t)nx);
        d->nreq_cap = d->gcount && d->req ? nx : 0;
        if (!d->nreq_cap)
            r = dist_fail(EMB_ENOMEM, "out of memory for the exchange requests");
    }
    return r;
}

/*
 * Pools group @p g's table-wise tables owned here into d->pooled + @p send_off. With
 * exchanges in flight (@p inflight requests) the tables are pooled one call each with an
 * MPI_Testall between them: Open MPI moves a non-blocking collective only inside MPI
 * calls. The bits do not depend on how the tables are split into calls.
 */
static int pool_group(EmbDist *d, int32_t g, int64_t send_off, int64_t inflight)
{
    int64_t n = 0;
    for (int64_t i = d->group_start[g]; i < d->group_start[g + 1]; i++) {
        DistTable *t = &d->t[i];
        int32_t c0;
        if (!dist_pooled_cols(t, d->rank, &c0))
            continue;
        d->tmp_tables[n] = t->local;
        d->tmp_batches[n] = dist_batch(t, t->g_ids, t->g_offsets, t->g_has_weights ?
                                       t->g_weights : NULL, t->g_nnz, d->global_nbags);
        d->tmp_poolings[n++] = t->pooling;
    }
    if (n == 0 || d->global_nbags == 0)
        return 0;
    const int64_t W = group_width(d, g, d->rank), step = inflight ? 1 : n;
    int64_t col = 0;
    for (int64_t k = 0; k < n; k += step) {
        const EmbOutputs o = {.concat = d->pooled + send_off, .concat_stride = W,
                              .prependrows = col};
        const int r = emb_maplookup(d->strategy, d->tmp_tables + k, step, d->tmp_batches + k,
                                    d->tmp_poolings + k, &o);
        if (r)
            return dist_fail_core(r, "owner pooling");
        col += emb_table_featuresize(d->tmp_tables[k]);
        if (inflight) {
            int flag;
            const double t0 = dist_now();
            MPI_Testall((int)inflight, d->req, &flag, MPI_STATUSES_IGNORE);
            *d->xclock += dist_now() - t0;
        }
    }
    return 0;
}

/* Owner: copies the rows each rank asked of row-wise table @p t into d->gather + off. */
static void gather_rows(const DistTable *t, unsigned char *dst, const EmbDist *d)
{
    for (int32_t s = 0; s < d->nranks; s++) {
        const uint32_t *p = t->req_rows[s];
        for (int64_t j = 0; j < t->req_n[s]; j++) {
            void *col;
            emb_table_column_pointer(t->local, dist_get_i64(&p), EMB_CTX_FORWARD, &col);
            memcpy(dst, col, t->rowbytes);
            dst += t->rowbytes;
        }
    }
}

/* Starts group @p g's pooled-row all-to-all (request slot @p x; size_buffers() checked
   that every count and displacement fits an int). */
static int start_pooled(EmbDist *d, int32_t g, int64_t x, int64_t send_off, int64_t recv_off,
                        int64_t *sent)
{
    int *sc = d->gcount + 4 * x * d->nranks, *sd = sc + d->nranks, *rc = sd + d->nranks,
        *rd = rc + d->nranks;
    const int64_t W = group_width(d, g, d->rank);
    int64_t ro = 0;
    for (int32_t k = 0; k < d->nranks; k++) {
        const int64_t wk = group_width(d, g, k);
        sc[k] = (int)(d->rank_nbags[k] * W), sd[k] = (int)(send_off + d->rank_off[k] * W);
        rc[k] = (int)(d->nbags * wk), rd[k] = (int)(recv_off + ro);
        ro += d->nbags * wk;
        if (k != d->rank)
            *sent += (d->bf16 ? 2 : 4) * (int64_t)sc[k];
    }
    if (d->bf16) /* the group's rows as bf16, at the same element offsets */
        dist_to_bf16(d->pooled16 + send_off, d->pooled + send_off, d->global_nbags * W);
    const int r = d->bf16
        ? MPI_Ialltoallv(d->pooled16, sc, sd, MPI_UINT16_T, d->pooled16_recv, rc, rd,
                         MPI_UINT16_T, d->comm, &d->req[x])
        : MPI_Ialltoallv(d->pooled, sc, sd, MPI_FLOAT, d->pooled_recv, rc, rd, MPI_FLOAT,
                         d->comm, &d->req[x]);
    return r == MPI_SUCCESS ? 0 : dist_mpi_fail(r, "MPI_Ialltoallv (pooled rows)");
}

/* Starts row-wise table @p t's raw-row all-to-all from d->gather + goff (slot @p x;
   counts checked by size_buffers()). */
static int start_rows(EmbDist *d, DistTable *t, int64_t x, int64_t goff, int64_t *sent)
{
    int *sc = d->gcount + 4 * x * d->nranks, *sd = sc + d->nranks, *rc = sd + d->nranks,
        *rd = rc + d->nranks;
    int64_t so = goff, ro = 0;
    const int64_t rb = (int64_t)t->rowbytes;
    for (int32_t k = 0; k < d->nranks; k++) {
        sc[k] = (int)(t->req_n[k] * rb), sd[k] = (int)so;
        rc[k] = (int)(t->nreq[k] * rb), rd[k] = (int)ro;
        so += sc[k], ro += rc[k];
        if (k != d->rank)
            *sent += sc[k];
    }
    const int r = MPI_Ialltoallv(d->gather, sc, sd, MPI_BYTE, t->rows, rc, rd, MPI_BYTE,
                                 d->comm, &d->req[x]);
    return r == MPI_SUCCESS ? 0 : dist_mpi_fail(r, "MPI_Ialltoallv (rows)");
}

/*
 * Every group: pool, gather, start the exchanges; between groups MPI_Testall lets the
 * started ones progress. A local failure still starts every collective (the others wait
 * on them) and is agreed on afterwards.
 */
static int run_groups(EmbDist *d)
{
    int64_t send_off = 0, recv_off = 0, goff = 0, x = 0;
    int err = 0;
    for (int32_t g = 0; g < d->ngroups; g++) {
        double t0 = dist_now();
        const double x0 = *d->xclock; /* pool_group's MPI_Testall time is exchange time */
        if (!err)
            err = pool_group(d, g, send_off, x);
        int64_t off = goff;
        for (int64_t i = d->group_start[g]; i < d->group_start[g + 1]; i++) {
            const DistTable *t = &d->t[i];
            if (t->place.kind != EMB_DIST_ROWWISE)
                continue;
            gather_rows(t, d->gather + off, d);
            for (int32_t s = 0; s < d->nranks; s++)
                off += t->req_n[s] * (int64_t)t->rowbytes;
        }
        d->stats.pool_s += dist_now() - t0 - (*d->xclock - x0);
        t0 = dist_now();
        int r = start_pooled(d, g, x++, send_off, recv_off, &d->stats.rows_bytes);
        for (int64_t i = d->group_start[g]; i < d->group_start[g + 1] && !r; i++) {
            DistTable *t = &d->t[i];
            if (t->place.kind != EMB_DIST_ROWWISE)
                continue;
            r = start_rows(d, t, x++, goff, &d->stats.rows_bytes);
            for (int32_t s = 0; s < d->nranks; s++)
                goff += t->req_n[s] * (int64_t)t->rowbytes;
        }
        if (r) /* an MPI failure or a count overflow */
            return r;
        int flag;
        MPI_Testall((int)x, d->req, &flag, MPI_STATUSES_IGNORE);
        *d->xclock += dist_now() - t0;
        send_off += d->global_nbags * group_width(d, g, d->rank);
        for (int32_t o = 0; o < d->nranks; o++)
            recv_off += d->nbags * group_width(d, g, o);
    }
    const double t0 = dist_now();
    const int r = MPI_Waitall((int)x, d->req, MPI_STATUSES_IGNORE);
    *d->xclock += dist_now() - t0;
    if (r != MPI_SUCCESS)
        return dist_mpi_fail(r, "MPI_Waitall (rows)");
    return dist_agree(d, err, NULL, NULL);
}

/* ---- (4) into the outputs ------------------------------------------------------------ */

/* The pooled rows received: owner o's block of group g holds, per bag, its tables' rows
   side by side (W = group_width wide); each table's column of rows is copied out. */
static void scatter_pooled(EmbDist *d, const EmbOutputs *out)
{
    int64_t recv_off = 0;
    for (int32_t g = 0; g < d->ngroups; g++) {
        int64_t *col = d->tmp_cols; /* per owner: the next table's column in its rows */
        for (int32_t o = 0; o < d->nranks; o++) {
            col[2 * o] = recv_off; /* where owner o's block starts, then its width */
            col[2 * o + 1] = group_width(d, g, o);
            recv_off += d->nbags * col[2 * o + 1];
        }
        for (int64_t i = d->group_start[g]; i < d->group_start[g + 1]; i++)
            for (int32_t o = 0; o < d->nranks; o++) { /* the owner, or each slice's */
                int32_t c0;
                const int32_t w = dist_pooled_cols(&d->t[i], o, &c0);
                if (!w)
                    continue;
                const int64_t W = col[2 * o + 1];
                for (int64_t b = 0; b < d->nbags; b++) {
                    int64_t stride;
                    float *dst = dist_out_row(d, out, i, b, &stride) + c0;
                    if (d->bf16)
                        dist_from_bf16(dst, d->pooled16_recv + col[2 * o] + b * W, w);
                    else
                        memcpy(dst, d->pooled_recv + col[2 * o] + b * W, 4 * (size_t)w);
                }
                col[2 * o] += w;
            }
    }
}

/* Pools row-wise table @p i from the rows this rank received. */
static int pool_rows(EmbDist *d, int64_t i, const EmbOutputs *out)
{
    DistTable *t = &d->t[i];
    const EmbBatch b = dist_batch(t, t->remap, t->offsets, t->has_weights ? t->weights : NULL,
                                  t->offsets[d->nbags], d->nbags);
    EmbPooling p = t->pooling;
    p.default_id = t->default_col;
    int64_t stride;
    float *dst = dist_out_row(d, out, i, 0, &stride);
    const int r = emb_lookup(t->compact, &b, &p, dst, stride);
    return r ? dist_fail_core(r, "row-wise pooling") : 0;
}

/* Pools replicated table @p i for this rank's own bags from its replica. */
static int pool_replica(EmbDist *d, int64_t i, const EmbOutputs *out)
{
    DistTable *t = &d->t[i];
    const EmbBatch b = dist_batch(t, t->ids, t->offsets, t->has_weights ? t->weights : NULL,
                                  t->offsets[d->nbags], d->nbags);
    int64_t stride;
    float *dst = dist_out_row(d, out, i, 0, &stride);
    const int r = emb_lookup(t->local, &b, &t->pooling, dst, stride);
    return r ? dist_fail_core(r, "replica pooling") : 0;
}

/* ---- the call ------------------------------------------------------------------------ */

int emb_dist_maplookup(EmbDist *d, const EmbBatch *batches, const EmbPooling *poolings,
                       const EmbOutputs *outputs)
{
    dist_clear_error();
    if (!d)
        return dist_fail(EMB_ENULL, "emb_dist_maplookup: d is NULL");
    d->forward_done = d->backward_done = 0;
    d->stats.pool_s = d->stats.exchange_s = 0;
    d->xclock = &d->stats.exchange_s;
    d->stats.rows_bytes = 0;
    int r;
    if (d->prefetched) { /* the ids are travelling: wait for what the overlap left */
        r = batches != d->pf_batches || poolings != d->pf_poolings
            ? dist_fail(EMB_EINVAL, "emb_dist_maplookup: batches or poolings are not those "
                        "of the pending emb_dist_prefetch()")
            : dist_outputs_check(d, outputs, d->nbags, "emb_dist_maplookup: outputs");
        if ((r = dist_prefetch_finish(d, r)))
            return r;
    } else {
        d->stats.ids_bytes = 0;
        r = dist_prepare(d, batches, poolings, outputs, 1);
        const int64_t mine[2] = {d->nbags, (int64_t)dist_pooling_hash(d, poolings)};
        r = dist_exchange_words(d, r, mine, &d->stats.ids_bytes);
        d->stats.ids_wait_s = d->stats.exchange_s;
        if (r)
            return r;
    }
    d->rank_off[0] = 0;
    for (int32_t k = 0; k < d->nranks; k++) {
        if (d->vals[2 * k + 1] != d->vals[1])
            return dist_fail(EMB_EINVAL, "emb_dist_maplookup: the poolings of rank %d differ "
                             "from rank 0's", (int)k);
        d->rank_nbags[k] = d->vals[2 * k];
        d->rank_off[k + 1] = d->rank_off[k] + d->rank_nbags[k];
    }
    d->global_nbags = d->rank_off[d->nranks];
    r = build_global(d);
    if (!r)
        r = size_buffers(d);
    if ((r = dist_agree(d, r, NULL, NULL)) || (r = run_groups(d)))
        return r;
    const double t0 = dist_now();
    scatter_pooled(d, outputs);
    for (int64_t i = 0; i < d->ntables && !r; i++)
        if (d->t[i].place.kind == EMB_DIST_ROWWISE)
            r = pool_rows(d, i, outputs);
        else if (d->t[i].place.kind == EMB_DIST_REPLICATED)
            r = pool_replica(d, i, outputs);
    if (!r && d->bf16)
        dist_round_local_outputs(d, outputs);
    d->stats.pool_s += dist_now() - t0;
    d->forward_done = !r;
    return r;
}
