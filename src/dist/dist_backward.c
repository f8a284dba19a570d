/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist_backward.c — emb_dist_backward() and emb_dist_update().
 *
 * Table-wise tables: each rank sends its output-gradient rows to the owner, which
 * assembles the global batch's gradient (ranks in order) and records the pullback of the
 * global batch it kept from the forward: the very gradient one process would record, so
 * emb_update_many() dedups and sums it in the single-process order.
 *
 * Row-wise tables: the gradient of one id is the sum, in global batch order, of
 * coef x dy(bag) over its entries, where coef is the entry's weight times the bag's
 * combiner scale (1, 1 / Σw or 1 / sqrt(Σw²), Σ over the bag's kept entries, in double,
 * as the core's pullback; an empty bag with a default id gives (default_id, 1)). Each rank
 * computes its bags' entries and sends each owner the ones it holds: per bag with such
 * entries, their columns and coefficients and the bag's dy row. The owner concatenates the
 * sources in rank order (so every id's entries stay in global order) and records them as
 * a SUM lookup with the coefficients as weights (coef x 1 = coef) and the same max_norm
 * (whose Jacobian needs only the column, which the owner has): the same rows, summed in
 * the same order, as the single-process pullback of the whole table.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch_rules.h"
#include "dist/dist_impl.h"

/* A pullback entry (batch_rules.h): id is the column in the owner's shard once located,
 * owner the rank holding it. */
typedef EmbPullEntry Entry;

/* This rank's pullback entries of row-wise table @p t, in batch order (the core's rule,
 * batch_rules.h), each located on its owner; returns the count. */
static int64_t entries(const EmbDist *d, const DistTable *t, Entry *e)
{
    const EmbBatch b = dist_batch(t, t->ids, t->offsets, t->has_weights ? t->weights : NULL,
                                  t->offsets[d->nbags], d->nbags);
    const int64_t n = emb_rule_pullback_entries(&b, &t->pooling, e);
    for (int64_t i = 0; i < n; i++)
        dist_locate(d, t, e[i].id, &e[i].owner, &e[i].id);
    return n;
}

/* Packs owner @p o's entries @p e (n of them, in batch order) and their bags' dy rows. */
static int pack_rowwise(EmbDist *d, const EmbOutputs *g, int64_t i, const Entry *e,
                        int64_t n, int32_t o)
{
    const int32_t D = d->t[i].desc.featuresize;
    int64_t k = 0;
    for (int64_t j = 0; j < n; j++)
        k += j == 0 || e[j].bag != e[j - 1].bag;
    Words *w = &d->send[o];
    if (dist_words_reserve(w, 4 + 2 * k + 3 * n + k * D))
        return EMB_ENOMEM;
    dist_put_i64(w, k);
    dist_put_i64(w, n);
    for (int64_t j = 0, len = 1; j < n; j++, len++) /* bag lengths */
        if (j + 1 == n || e[j + 1].bag != e[j].bag) {
            dist_put_i64(w, len);
            len = 0;
        }
    for (int64_t j = 0; j < n; j++)
        dist_put_i64(w, e[j].id);
    for (int64_t j = 0; j < n; j++)
        dist_put_f32(w, e[j].coef);
    for (int64_t j = 0; j < n; j++)
        if (j == 0 || e[j].bag != e[j - 1].bag) {
            int64_t stride;
            const float *dy = dist_out_row(d, g, i, e[j].bag, &stride);
            if (d->bf16)
                dist_put_bf16s(w, dy, D);
            else
                dist_put_f32s(w, dy, D);
        }
    return 0;
}

/*
 * Row-wise table @p i: this rank's entries, then a stable counting sort by owner (each
 * owner's entries stay in batch order), then each owner's packed: O(entries + ranks).
 */
static int pack_table_rowwise(EmbDist *d, const EmbOutputs *g, int64_t i)
{
    const DistTable *t = &d->t[i];
    const int64_t max = t->offsets[d->nbags] + d->nbags;
    int r = dist_grow(&d->ent, &d->ent_cap, 2 * (int64_t)sizeof(Entry) * max + 8);
    if (r)
        return r;
    Entry *e = d->ent, *sorted = e + max;
    const int64_t n = entries(d, t, e);
    int64_t *start = d->tmp_cols; /* nranks + 1 */
    for (int32_t o = 0; o <= d->nranks; o++)
        start[o] = 0;
    for (int64_t j = 0; j < n; j++)
        start[e[j].owner + 1]++;
    for (int32_t o = 0; o < d->nranks; o++)
        start[o + 1] += start[o];
    for (int64_t j = 0; j < n; j++)
        sorted[start[e[j].owner]++] = e[j];
    int64_t begin = 0;
    for (int32_t o = 0; o < d->nranks && !r; o++) { /* start[o] is now owner o's end */
        r = pack_rowwise(d, g, i, sorted + begin, start[o] - begin, o);
        begin = start[o];
    }
    return r;
}

static int pack_grads(EmbDist *d, const EmbOutputs *g)
{
    for (int32_t o = 0; o < d->nranks; o++)
        d->send[o].n = 0;
    for (int64_t i = 0; i < d->ntables; i++) {
        DistTable *t = &d->t[i];
        if (t->place.kind != EMB_DIST_ROWWISE) { /* the owner, every replica, each slice */
            for (int32_t o = 0; o < d->nranks; o++) {
                Words *w = &d->send[o];
                int32_t c0;
                const int32_t cols = dist_cols(t, o, &c0);
                if (!cols)
                    continue;
                if (dist_words_reserve(w, d->nbags * cols))
                    return EMB_ENOMEM;
                for (int64_t b = 0; b < d->nbags; b++) {
                    int64_t stride;
                    const float *dy = dist_out_row(d, g, i, b, &stride) + c0;
                    if (d->bf16)
                        dist_put_bf16s(w, dy, cols);
                    else
                        dist_put_f32s(w, dy, cols);
                }
            }
            continue;
        }
        const int r = pack_table_rowwise(d, g, i);
        if (r)
            return r;
    }
    return 0;
}

/* Owner: walks every source's gradients; @p fill 0 sizes the row-wise batches, 1 fills. */
static void parse_grads(EmbDist *d, int fill)
{
    for (int64_t i = 0; i < d->ntables; i++) {
        DistTable *t = &d->t[i];
        t->b_nnz = t->b_nbags = 0;
        if (fill && t->b_offsets)
            t->b_offsets[0] = 0;
    }
    for (int32_t src = 0; src < d->nranks; src++) {
        const uint32_t *p = d->recvbuf + d->rdispl[src];
        const int64_t nb = d->rank_nbags[src];
        for (int64_t i = 0; i < d->ntables; i++) {
            DistTable *t = &d->t[i];
            const int32_t D = t->desc.featuresize;
            if (t->place.kind != EMB_DIST_ROWWISE) {
                int32_t c0;
                const int32_t cols = dist_cols(t, d->rank, &c0);
                if (fill && cols && !d->bf16)
                    memcpy(t->g_dy + d->rank_off[src] * cols, p, 4 * (size_t)(nb * cols));
                for (int64_t b = 0; b < nb && fill && cols && d->bf16; b++) {
                    const uint32_t *q = p + b * dist_bf16_words(cols);
                    dist_get_bf16s(&q, t->g_dy + (d->rank_off[src] + b) * cols, cols);
                }
                p += nb * dist_grad_words(d, cols);
                continue;
            }
            const int64_t k = dist_get_i64(&p), m = dist_get_i64(&p);
            if (fill) {
                for (int64_t b = 0; b < k; b++)
                    t->b_offsets[t->b_nbags + b + 1] = t->b_offsets[t->b_nbags + b] +
                                                      dist_get_i64(&p);
                for (int64_t j = 0; j < m; j++)
                    t->b_ids[t->b_nnz + j] = dist_get_i64(&p);
                memcpy(t->b_coef + t->b_nnz, p, 4 * (size_t)m);
                p += m;
                if (d->bf16)
                    for (int64_t b = 0; b < k; b++)
                        dist_get_bf16s(&p, t->b_dy + (t->b_nbags + b) * D, D);
                else
                    memcpy(t->b_dy + t->b_nbags * D, p, 4 * (size_t)(k * D));
                p += d->bf16 ? 0 : k * D;
            } else {
                p += 2 * k + 3 * m + k * dist_grad_words(d, D);
            }
            t->b_nbags += k, t->b_nnz += m;
        }
    }
}

static int record(EmbDist *d)
{
    parse_grads(d, 0);
    const int64_t G = d->global_nbags;
    for (int64_t i = 0; i < d->ntables; i++) {
        DistTable *t = &d->t[i];
        const int64_t D = t->desc.featuresize;
        int r = 0;
        int32_t c0;
        if (dist_whole_on(t, d->rank)) {
            r = dist_grow((void **)&t->g_dy, &t->g_dy_cap, 4 * G * dist_cols(t, d->rank, &c0) + 4);
        } else if (t->place.kind == EMB_DIST_ROWWISE) {
            r = dist_grow((void **)&t->b_offsets, &t->b_offsets_cap, 8 * t->b_nbags + 8);
            if (!r)
                r = dist_grow((void **)&t->b_ids, &t->b_ids_cap, 8 * t->b_nnz + 8);
            if (!r)
                r = dist_grow((void **)&t->b_coef, &t->b_coef_cap, 4 * t->b_nnz + 4);
            if (!r)
                r = dist_grow((void **)&t->b_dy, &t->b_dy_cap, 4 * t->b_nbags * D + 4);
        }
        if (r)
            return r;
    }
    parse_grads(d, 1);
    for (int64_t i = 0; i < d->ntables; i++) {
        DistTable *t = &d->t[i];
        t->recorded = 0;
        if (!t->local)
            continue;
        const int32_t D = t->desc.featuresize;
        int r;
        if (t->place.kind != EMB_DIST_ROWWISE) {
            const EmbBatch b = dist_batch(t, t->g_ids, t->g_offsets, t->g_has_weights ?
                                          t->g_weights : NULL, t->g_nnz, G);
            r = emb_lookup_backward(t->local, &b, &t->pooling, t->g_dy,
                                    emb_table_featuresize(t->local), t->grad);
        } else {
            const EmbBatch b = {.ids = t->b_ids, .nnz = t->b_nnz, .nbags = t->b_nbags,
                                .offsets = t->b_offsets, .weights = t->b_coef};
            const EmbPooling p = {EMB_COMBINER_SUM, t->pooling.max_norm, 0, 0};
            r = emb_lookup_backward(t->local, &b, &p, t->b_dy, D, t->grad);
        }
        if (r)
            return dist_fail_core(r, "recording a gradient");
        t->recorded = 1;
    }
    return 0;
}

/*
 * EMB_TABLE_CHECK_FINITE: whether this rank's part of the global gradient (its output
 * gradient rows of every table, its weights) is finite. The single-process library checks
 * the whole global batch in emb_update_many(), so a failure here is kept and reported by
 * emb_dist_update()'s agreement, before any rank applies anything.
 */
static void check_finite(EmbDist *d, const EmbOutputs *g)
{
    d->nonfinite = 0;
    for (int64_t i = 0; i < d->ntables && d->check_finite; i++) {
        const DistTable *t = &d->t[i];
        for (int64_t b = 0; b < d->nbags; b++) {
            int64_t stride;
            const float *row = dist_out_row(d, g, i, b, &stride);
            for (int32_t j = 0; j < t->desc.featuresize; j++)
                if (!isfinite(row[j])) {
                    d->nonfinite = 1;
                    snprintf(d->nonfinite_msg, sizeof d->nonfinite_msg, "tables[%lld] '%s': "
                             "element %d of the output gradient of bag %lld is %g",
                             (long long)i, t->name, (int)j, (long long)b, (double)row[j]);
                    return;
                }
        }
        for (int64_t k = 0; t->has_weights && k < t->offsets[d->nbags]; k++)
            if (!isfinite(t->weights[k])) {
                d->nonfinite = 1;
                snprintf(d->nonfinite_msg, sizeof d->nonfinite_msg, "tables[%lld] '%s': "
                         "weight %lld is %g", (long long)i, t->name, (long long)k,
                         (double)t->weights[k]);
                return;
            }
    }
}

int emb_dist_backward(EmbDist *d, const EmbOutputs *grad_outputs)
{
    dist_clear_error();
    if (!d)
        return dist_fail(EMB_ENULL, "emb_dist_backward: d is NULL");
    if (d->prefetched) /* every rank made the same calls: no agreement needed */
        return dist_fail(EMB_EINVAL, "emb_dist_backward: a prefetch is pending (call "
                         "emb_dist_maplookup() with its batches first)");
    const double t0 = dist_now();
    d->stats.grad_bytes = 0;
    d->stats.grad_exchange_s = 0;
    d->xclock = &d->stats.grad_exchange_s;
    d->backward_done = 0;
    int r = 0;
    if (!d->forward_done)
        r = dist_fail(EMB_EINVAL, "emb_dist_backward: no emb_dist_maplookup() before");
    if (!r)
        r = dist_outputs_check(d, grad_outputs, d->nbags, "emb_dist_backward: grad_outputs");
    if (!r)
        check_finite(d, grad_outputs);
    if (!r && pack_grads(d, grad_outputs))
        r = dist_fail(EMB_ENOMEM, "out of memory for the gradient exchange");
    if (!(r = dist_exchange_words(d, r, NULL, &d->stats.grad_bytes)))
        r = dist_agree(d, record(d), NULL, NULL);
    d->backward_done = !r;
    d->stats.backward_s = dist_now() - t0;
    return r;
}

/* Whether @opt clips by a global norm (which would be each rank's own here). */
static bool dist_global_norm(const EmbOptimizer *opt)
{
    EmbOptimizerConfig c;
    return emb_optimizer_get_config(opt, &c) == 0 && c.max_global_norm > 0.0f;
}

int emb_dist_update(EmbDist *d, EmbOptimizer *opt, unsigned flags)
{
    dist_clear_error();
    if (!d)
        return dist_fail(EMB_ENULL, "emb_dist_update: d is NULL");
    const double t0 = dist_now();
    d->xclock = &d->stats.grad_exchange_s;
    int r = 0;
    if (!d->backward_done)
        r = dist_fail(EMB_EINVAL, "emb_dist_update: no emb_dist_backward() before");
    else if (!opt)
        r = dist_fail(EMB_ENULL, "emb_dist_update: opt is NULL");
    else if (dist_global_norm(opt))
        r = dist_fail(EMB_ENOTSUP, "emb_dist_update: the optimizer's max_global_norm (one "
                      "norm over every rank's tables is not implemented)");
    else if (d->nonfinite)
        r = dist_fail(EMB_ENONFINITE, "emb_dist_update: %s (the tables check for finite "
                      "values)", d->nonfinite_msg);
    EmbOptimizerConfig cfg;
    for (int64_t i = 0; i < d->ntables && !r; i++)
        if (d->t[i].place.kind == EMB_DIST_COLUMNWISE && !emb_optimizer_get_config(opt, &cfg) &&
            cfg.kind == EMB_OPT_ROWWISE_ADAGRAD)
            r = dist_fail(EMB_ENOTSUP, "emb_dist_update: table %lld is column-wise: row-wise "
                          "Adagrad's one accumulator per row spans the ranks", (long long)i);
    int64_t n = 0;
    for (int64_t i = 0; i < d->ntables && !r; i++) {
        DistTable *t = &d->t[i];
        if (!t->local || !t->recorded)
            continue;
        if ((r = emb_optimizer_attach(opt, t->local))) /* the state: allocated before */
            r = dist_fail_core(r, "optimizer state");
        d->tmp_tables[n] = t->local;
        d->tmp_grads[n] = t->grad;
        d->tmp_indexers[n++] = t->indexer;
    }
    /* the checks above (which outrank), then every allocation and check of the update, in
       one agreement; then the apply, which cannot fail: a rank that fails leaves every
       rank's tables as they were */
    const int checked = r;
    if (!r && n > 0 && (r = emb_update_many_prepare(d->strategy, opt, d->tmp_tables,
                                                    (const EmbGrad *const *)d->tmp_grads, n,
                                                    d->tmp_indexers, flags)))
        r = dist_fail_core(r, "emb_update_many");
    r = dist_agree_ranked(d, r, checked ? 1 : 0);
    int64_t ready[2]; /* a pending prefetch's receive buffer, sized (dist_prefetch.c) */
    const int pf = dist_prefetch_progress(d, r, ready);
    if (r) {
        emb_update_many_cancel(d->strategy);
        goto out;
    }
    if (n > 0 && (r = emb_update_many_commit(d->strategy))) /* a custom strategy's */
        r = dist_fail_core(r, "emb_update_many");
    r = dist_agree(d, r, pf ? ready : NULL, pf ? d->vals : NULL);
    if (pf || r)
        dist_prefetch_start(d, r); /* the next ids travel from here */
    d->backward_done = 0;
out:
    d->stats.update_s = dist_now() - t0;
    return r;
}
