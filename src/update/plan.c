/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * plan.c — the two phases of a table's update step (see update_impl.h): index the
 * gradient, then apply ranges of distinct columns. The apply loop is the hot path: per
 * distinct column it sums the column's gradient rows (in row order) into a scratch row,
 * or uses the row in place when there is one with coefficient 1, and calls one row kernel
 * that reads and writes the column once. Columns (and their state) a few distinct ids
 * ahead are prefetched for writing.
 */
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "lookup/batch.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"
#include "update/column.h"

#define PREFETCH_AHEAD 16 /* distinct columns prefetched ahead */
#define ROWS_SPAN 64      /* distinct ids whose rows a planned table resolves at once */
#define GATHER_AHEAD 16   /* sorted rows whose entry is prefetched ahead */

/* Counting-sort scatter of a sparse gradient's rows into the indexer's groups. */
static void scatter_sparse(EmbIndexer *ix, const EmbSparseGrad *s)
{
    for (int64_t k = 0; k < s->n; k++) {
        const int64_t pos = ix->cursor[ix->row_dist[k]]++;
        ix->grow[pos] = s->values + k * s->stride;
        ix->gcoef[pos] = 1.0f;
    }
}

/*
 * Rows from which the grouping sorts the ids (emb__indexer_group_sorted) rather than
 * hashing them. Below, the hash's region fits in L1 / L2 and costs the same. Above, the
 * sort's passes run without a data-dependent branch where the hash misses cache and
 * mispredicts at collisions, and ascending ids walk the table in address order in the
 * apply. Measured at 1 thread, bags of 20 (40 960 rows), index phase against the hash:
 * 1M x 64, uniform ids 0.20 ms against 0.47; Zipf(1.05) 0.23 against 0.35-0.39; 10K rows
 * (24 % distinct) 0.23 against 0.22; 100M x 8, uniform, 0.22 against 0.33, and the apply
 * 0.57 ms against 0.98 (rows in address order).
 */
#define SORT_MIN_ROWS 4096

/* The columns of @t when its ids are columns (the sorted grouping's bound), else a bound
 * that no sort takes (keyed ids). */
static int64_t sort_columns(const EmbPlan *plan, int64_t n)
{
    const EmbTable *t = plan->table;
    if (emb__table_rows_appear(t) || (n < SORT_MIN_ROWS && !plan->sort_ids))
        return INT64_MAX;
    return t->ncolumns;
}

static void group_sparse(const EmbPlan *plan, const EmbSparseGrad *s)
{
    EmbIndexer *ix = plan->ix;
    const void *ids = s->ids;
    if (s->id_type == EMB_ID_I32) {
        const int32_t *i32 = (const int32_t *)s->ids;
        for (int64_t k = 0; k < s->n; k++)
            ix->idbuf[k] = i32[k];
        ids = ix->idbuf;
    }
    if (!emb__indexer_group_sorted(ix, ids, sizeof(int64_t), s->n, sort_columns(plan, s->n))) {
        emb__indexer_group(ix, ids, sizeof(int64_t), s->n);
        scatter_sparse(ix, s);
        return;
    }
    for (int64_t pos = 0; pos < s->n; pos++) {
        ix->grow[pos] = s->values + (int64_t)(uint32_t)ix->sorted[pos] * s->stride;
        ix->gcoef[pos] = 1.0f;
    }
}

/* Pullback entries, grouped: each entry's output-gradient row and coefficient. */
static void group_pullback(const EmbPlan *plan)
{
    EmbIndexer *ix = plan->ix;
    const EmbGrad *g = plan->grad;
    const int64_t n = emb__pullback_entries(plan->table, &g->batch, &g->pooling, ix->entries);
    if (emb__indexer_group_sorted(ix, &ix->entries[0].id, sizeof(EmbPullEntry), n,
                                  sort_columns(plan, n))) {
        for (int64_t pos = 0; pos < n; pos++) {
            if (pos + GATHER_AHEAD < n)
                __builtin_prefetch(&ix->entries[(uint32_t)ix->sorted[pos + GATHER_AHEAD]]);
            const EmbPullEntry *e = &ix->entries[(uint32_t)ix->sorted[pos]];
            ix->grow[pos] = g->dy + e->bag * g->dy_stride;
            ix->gcoef[pos] = e->coef;
        }
        return;
    }
    emb__indexer_group(ix, &ix->entries[0].id, sizeof(EmbPullEntry), n);
    for (int64_t k = 0; k < n; k++) {
        const EmbPullEntry *e = &ix->entries[k];
        const int64_t pos = ix->cursor[ix->row_dist[k]]++;
        ix->grow[pos] = g->dy + e->bag * g->dy_stride;
        ix->gcoef[pos] = e->coef;
    }
}

int emb__plan_prepare(EmbPlan *plan)
{
    return emb__plan_prepare_ex(plan, true);
}

int emb__plan_prepare_ex(EmbPlan *plan, bool check_ids)
{
    const EmbGrad *g = plan->grad;
    int r = emb__grad_check_ex(plan->table, g, check_ids);
    if (r)
        return r;
    const EmbTable *t = plan->table;
    if (!emb__kernel_sgd_row(emb__dtype_compute(t->dtype), t->featuresize, 0))
        return emb__fail(EMB_ENOTSUP, "%s is %s: training it is not supported (no update "
                         "kernel for its rows)", emb__table_label(t), emb_dtype_name(t->dtype));
    const int64_t rows = emb__grad_max_rows(g);
    r = emb__indexer_reserve(plan->ix, rows);
    if (!r && g->kind == EMB_GRAD_PULLBACK)
        r = emb__indexer_reserve_entries(plan->ix, EMB_MAX(rows, 1));
    plan->max_norm = g->kind == EMB_GRAD_PULLBACK && emb__pullback_needs_column(&g->pooling);
    plan->maxid = NULL;
    plan->nparts = 1;
    return r || !check_ids ? r : emb__plan_max_prepare(plan);
}

int emb__plan_max_prepare(EmbPlan *plan)
{
    const EmbGrad *g = plan->grad;
    if (g->kind != EMB_GRAD_PULLBACK || g->pooling.combiner != EMB_COMBINER_MAX)
        return 0;
    const int32_t D = plan->table->featuresize;
    int64_t n;
    if (!emb__mul_ok(g->batch.nbags, D, &n))
        return emb__fail(EMB_EOVERFLOW, "MAX pooling: %lld bags x %d elements overflow",
                         (long long)g->batch.nbags, D);
    int r = emb__indexer_reserve_max(plan->ix, n, D);
    if (!r)
        r = emb__pullback_max_ids(plan->table, &g->batch, &g->pooling, plan->ix->maxid,
                                  plan->ix->maxval);
    plan->maxid = r ? NULL : plan->ix->maxid;
    return r;
}

int emb__plan_index(EmbPlan *plan)
{
    const int r = emb__plan_prepare(plan);
    if (r)
        return r;
    if (plan->grad->kind == EMB_GRAD_SPARSE)
        group_sparse(plan, &plan->grad->sparse);
    else
        group_pullback(plan);
    return 0;
}

const float *emb__plan_column_grad(const EmbPlan *plan, int64_t d, float *acc, float *tmp)
{
    return emb__column_grad(plan, d, acc, tmp);
}

static void prefetch(const EmbPlan *plan, int64_t d)
{
    const EmbTable *t = plan->table;
    const int64_t id = plan->ix->ids[d];
    if (t->data)
        emb__prefetch_rows(t->data + (size_t)id * t->stride, emb__row_bytes(t->dtype, t->featuresize));
    if (plan->state && plan->state->data)
        emb__prefetch_rows(plan->state->data + (size_t)id * plan->state->stride,
                      (size_t)plan->state->featuresize * sizeof(float));
}

/* A planned table's row @col and state row @st (resolved by the table), prefetched. */
static void prefetch_planned(const EmbPlan *plan, const void *col, const float *st)
{
    if (col)
        emb__prefetch_rows(col, emb__row_bytes(plan->table->dtype, plan->table->featuresize));
    if (col && st)
        emb__prefetch_rows((const char *)st, (size_t)plan->state->featuresize * sizeof(float));
}

/* Weight decay of column @col (of dtype @dt) before its step: L2 returns g + wd * w (into
 * @out), decoupled scales the column (rounded to its dtype) and returns g. */
static const float *weight_decay(const EmbPlan *plan, EmbDtype dt, void *col, const float *g,
                                 float *out)
{
    const int32_t D = plan->table->featuresize;
    if (plan->decay_l2 != 0.0f) {
        for (int32_t i = 0; i < D; i++)
            out[i] = g[i] + plan->decay_l2 * emb__load(dt, col, i);
        return out;
    }
    for (int32_t i = 0; i < D; i++)
        emb__store(dt, col, i, emb__load(dt, col, i) * plan->decay_scale);
    return g;
}

/* One distinct column's step: its gradient (summed), weight decay, the row kernel. A
 * quantized row (plan->requant; or an f16 / bf16 row rounded stochastically) is stepped
 * as f32 in @row, then written back with stochastic rounding keyed by (the table's seed,
 * the id, the step); a 16-bit state row is stepped as f32 after @row (lowp.c). */
static inline void apply_one(const EmbPlan *plan, int64_t d, void *col, float *state,
                             float *acc, float *tmp, float *row)
{
    const EmbTable *t = plan->table;
    const int32_t D = t->featuresize;
    const float *g = emb__column_grad(plan, d, acc, tmp);
    if (plan->clip)
        g = emb__clip_grad(plan, g, acc);
    void *w = col;
    const EmbDtype wdt = plan->requant ? EMB_F32 : t->dtype; /* what w holds */
    float *s = state, *sbuf = row + D; /* a 16-bit state row is stepped as f32 in sbuf */
    if (plan->requant) {
        emb__row_load(t->dtype, col, D, row);
        w = row;
    }
    if (plan->state_lowp) {
        emb__row_load(plan->state->dtype, state, plan->state->featuresize, sbuf);
        s = sbuf;
    }
    if (plan->decay_l2 != 0.0f || plan->decay_scale != 1.0f)
        g = weight_decay(plan, wdt, w, g, g == tmp ? acc : tmp);
    if (plan->counter)
        emb__counter_row(plan, wdt, w, state, g);
    else if (plan->sgd)
        plan->sgd(w, g, plan->params.lr, D);
    else
        plan->row(w, s, g, &plan->params, D);
    if (plan->state_lowp)
        emb__plan_state_store(plan, plan->ix->ids[d], state, sbuf);
    if (plan->requant) {
        const uint64_t key[3] = {plan->qseed, (uint64_t)plan->ix->ids[d], (uint64_t)plan->step};
        plan->requant_row(col, D, row, key);
    }
}

/* Rows (and state rows: NULL with SGD) of distinct ids [d, d + n) of a planned table. */
static void planned_rows(const EmbPlan *plan, int64_t d, int64_t n, void **cols, float **st)
{
    emb__table_update_rows(plan->table, &plan->rp, d, n, cols, plan->sgd ? NULL : st);
    if (plan->sgd)
        memset(st, 0, (size_t)n * sizeof *st);
}

/* A table whose rows its update steps resolve (table_ops.h: update_rows), in spans of
   ROWS_SPAN, the next span resolved before the current one is applied so that rows
   PREFETCH_AHEAD ahead are known across spans. */
static void apply_planned(const EmbPlan *plan, int64_t d0, int64_t d1, float *acc, float *tmp,
                          float *row)
{
    void *cols[2][ROWS_SPAN];
    float *st[2][ROWS_SPAN];
    planned_rows(plan, d0, EMB_MIN(ROWS_SPAN, d1 - d0), cols[0], st[0]);
    for (int64_t k = 0; k < EMB_MIN(d1 - d0, PREFETCH_AHEAD); k++)
        prefetch_planned(plan, cols[0][k], st[0][k]);
    for (int64_t s0 = d0, b = 0; s0 < d1; s0 += ROWS_SPAN, b ^= 1) {
        const int64_t n = EMB_MIN(ROWS_SPAN, d1 - s0);
        if (s0 + n < d1)
            planned_rows(plan, s0 + n, EMB_MIN(ROWS_SPAN, d1 - s0 - n), cols[b ^ 1], st[b ^ 1]);
        for (int64_t k = 0; k < n; k++) {
            const int64_t a = k + PREFETCH_AHEAD;
            if (s0 + a < d1)
                prefetch_planned(plan, a < ROWS_SPAN ? cols[b][a] : cols[b ^ 1][a - ROWS_SPAN],
                                 a < ROWS_SPAN ? st[b][a] : st[b ^ 1][a - ROWS_SPAN]);
            if (cols[b][k]) /* NULL: skipped (dynamic: not admitted, the gradient dropped) */
                apply_one(plan, s0 + k, cols[b][k], st[b][k], acc, tmp, row);
        }
    }
}

/* Whether @plan takes apply_plain: a table (and state) in memory, no max_norm Jacobian,
 * the counter optimizer only with its range kernel, no weight decay, not dynamic, rows not
 * quantized. */
static bool plain(const EmbPlan *plan)
{
    return !plan->planned && !plan->requant && !plan->state_lowp && plan->table->data &&
           !plan->max_norm && (!plan->counter || plan->range) &&
           plan->decay_l2 == 0.0f && plan->decay_scale == 1.0f &&
           (plan->sgd || (plan->state && plan->state->data));
}

/* emb__plan_apply's common case: the same kernels on the same rows in the same order as the
 * general loop, without its per-column tests (table kind, state, clipping, decay). */
static void apply_plain(const EmbPlan *plan, int64_t d0, int64_t d1, float *acc)
{
    if (plan->range) { /* a static size: one call for the range, clipping inside it */
        const EmbIndexer *ix = plan->ix;
        const EmbRowsClip clip = {plan->clip_value, plan->clip_norm, plan->clip_scale};
        const EmbTable *t = plan->table, *st = plan->state;
        const EmbRowsArgs a = {.data = t->data, .col_stride = (int64_t)t->stride,
                               .state = st ? st->data : NULL,
                               .state_stride = st ? (int64_t)st->stride : 0, .ids = ix->ids,
                               .starts = plan->summed ? ix->sum_starts : ix->starts,
                               .grow = plan->summed ? ix->sum_grow : ix->grow,
                               .gcoef = plan->summed ? ix->sum_coef : ix->gcoef,
                               .d0 = d0, .d1 = d1, .pf_dist = PREFETCH_AHEAD,
                               .lr = plan->params.lr, .params = &plan->params,
                               .clip = plan->clip ? &clip : NULL,
                               .rate = plan->counter ? emb__counter_rate : NULL,
                               .rate_ctx = plan, .D = t->featuresize};
        plan->range(&a);
        return;
    }
    const EmbTable *t = plan->table, *st = plan->state;
    const int64_t *ids = plan->ix->ids;
    const int32_t D = t->featuresize;
    const size_t rb = emb__row_bytes(t->dtype, D);
    const size_t sb = plan->sgd ? 0 : (size_t)st->featuresize * sizeof(float);
    for (int64_t d = d0; d < EMB_MIN(d1, d0 + PREFETCH_AHEAD); d++)
        emb__column_prefetch(plan, d, rb, sb);
    for (int64_t d = d0; d < d1; d++) {
        if (d + PREFETCH_AHEAD < d1)
            emb__column_prefetch(plan, d + PREFETCH_AHEAD, rb, sb);
        char *col = t->data + (size_t)ids[d] * t->stride;
        const float *g = emb__column_grad(plan, d, acc, NULL);
        if (plan->clip)
            g = emb__clip_grad(plan, g, acc);
        if (plan->sgd)
            plan->sgd(col, g, plan->params.lr, D);
        else
            plan->row(col, (float *)(st->data + (size_t)ids[d] * st->stride), g,
                      &plan->params, D);
    }
}

void emb__plan_apply(const EmbPlan *plan, int64_t d0, int64_t d1, float *scratch)
{
    if (plain(plan)) {
        apply_plain(plan, d0, d1, scratch);
        return;
    }
    if (emb__lowp_fast(plan)) { /* 16-bit state or stochastically rounded rows (lowp.c) */
        emb__lowp_apply(plan, d0, d1, scratch);
        return;
    }
    EmbTable *t = plan->table;
    const EmbIndexer *ix = plan->ix;
    float *acc = scratch, *tmp = scratch + t->featuresize;
    if (plan->planned) {
        if (d0 < d1)
            apply_planned(plan, d0, d1, acc, tmp, tmp + t->featuresize);
        return;
    }
    for (int64_t d = d0; d < EMB_MIN(d1, d0 + PREFETCH_AHEAD); d++)
        prefetch(plan, d);
    for (int64_t d = d0; d < d1; d++) {
        if (d + PREFETCH_AHEAD < d1)
            prefetch(plan, d + PREFETCH_AHEAD);
        const int64_t id = ix->ids[d];
        void *col = emb__column(t, id, EMB_CTX_UPDATE);
        float *state = plan->sgd ? NULL : (float *)emb__column(plan->state, id, EMB_CTX_UPDATE);
        apply_one(plan, d, col, state, acc, tmp, tmp + t->featuresize);
    }
}

int emb__plan_rows_prepare(EmbPlan *plan)
{
    plan->planned = false;
    EmbTable *t = plan->table;
    if (!emb__table_keyed(t))
        return 0;
    EmbIndexer *ix = plan->ix;
    const int64_t need = EMB_MAX(ix->nrows, ix->ndistinct); /* indices in place < nrows */
    if (need > ix->handle_cap) {
        int64_t *p = realloc(ix->handle, (size_t)need * sizeof *p);
        if (!p)
            return emb__fail(EMB_ENOMEM, "out of memory for %lld row handles",
                             (long long)need);
        ix->handle = p;
        ix->handle_cap = need;
    }
    const bool split = plan->nparts > 1;
    plan->rp = (EmbRowPlan){.ids = ix->ids, .ndistinct = ix->ndistinct,
                            .nparts = EMB_MAX(plan->nparts, 1),
                            .part_start = split ? ix->part_start : NULL,
                            .part_len = split ? ix->pdist : NULL, .handle = ix->handle};
    return emb__table_update_prepare(t, &plan->rp);
}

void emb__plan_rows_commit(EmbPlan *plan)
{
    EmbTable *t = plan->table;
    const EmbIndexer *ix = plan->ix; /* the step commits: its rows are touched (a keyed
                                        kind's: stamped with its step, tables/touched.c) */
    for (int p = 0; p < EMB_MAX(plan->nparts, 1) && !emb__table_rows_appear(t); p++)
        emb__touched_set(t, ix->ids + (plan->nparts > 1 ? ix->part_start[p] : 0),
                         plan->nparts > 1 ? ix->pdist[p] : ix->ndistinct);
    if (!emb__table_keyed(t))
        return;
    emb__table_update_commit(t, &plan->rp);
    plan->planned = true;
}

void emb__plan_rows_cancel(EmbPlan *plan)
{
    EmbTable *t = plan->table;
    if (emb__table_keyed(t))
        emb__table_update_cancel(t, &plan->rp);
}
