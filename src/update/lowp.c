/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lowp.c — low-precision optimizer state and stochastic rounding in the update's plan
 * (docs/design/lowp.md): which rows and states a step writes through the rounding kernels
 * (`requant[EMB_F16]` / `requant[EMB_BF16]`, sround.h) and with which key; and the fast
 * loop of such steps on in-memory tables (emb__lowp_apply).
 */
#include "dtype.h"
#include "tables/table_impl.h"
#include "update/column.h"
#include "update/update_impl.h"

void emb__plan_lowp(const EmbOptimizerConfig *c, EmbPlan *plan, EmbDtype *cdt)
{
    const EmbTable *t = plan->table;
    plan->sround = c->stochastic_rounding != 0;
    plan->state_lowp = plan->state && plan->state->dtype != EMB_F32;
    plan->state_store = plan->state_lowp ? emb__kernels()->requant[plan->state->dtype] : NULL;
    if (plan->sround && (t->dtype == EMB_F16 || t->dtype == EMB_BF16)) {
        *cdt = EMB_F32; /* stepped as f32, then rounded into the row (plan.c's apply_one) */
        plan->requant = true;
        plan->requant_row = emb__kernels()->requant[t->dtype];
    }
}

void emb__plan_state_store(const EmbPlan *plan, int64_t id, void *state, const float *x)
{
    /* the state's stream: the rows' seed inverted, so that its bits differ from the row's */
    const uint64_t key[3] = {~plan->qseed, (uint64_t)id, (uint64_t)plan->step};
    plan->state_store(state, plan->state->featuresize, x, plan->sround ? key : NULL);
}

bool emb__lowp_fast(const EmbPlan *plan)
{
    const EmbTable *t = plan->table;
    const bool row16 =
        plan->requant && plan->sround && (t->dtype == EMB_F16 || t->dtype == EMB_BF16);
    return (plan->state_lowp || row16) && (!plan->requant || row16) && !plan->planned &&
           t->data && !plan->max_norm && !plan->counter &&
           plan->decay_l2 == 0.0f && plan->decay_scale == 1.0f &&
           (plan->sgd || (plan->state && plan->state->data));
}

#define LOWP_AHEAD 16 /* distinct ids prefetched ahead (plan.c's PREFETCH_AHEAD) */

void emb__lowp_apply(const EmbPlan *plan, int64_t d0, int64_t d1, float *scratch)
{
    const EmbTable *t = plan->table, *st = plan->sgd ? NULL : plan->state;
    const int32_t D = t->featuresize, SD = st ? st->featuresize : 0;
    const EmbKernels *k = emb__kernels();
    /* 16-bit rows and state rows into f32 by the gather kernels (SIMD conversions) */
    const emb_gather_fn load_row = plan->requant ? k->gather[t->dtype] : NULL;
    const emb_gather_fn load_state = plan->state_lowp ? k->gather[st->dtype] : NULL;
    float *acc = scratch, *row = scratch + 2 * (size_t)D, *sbuf = row + D;
    const size_t rb = emb__row_bytes(t->dtype, D);
    const size_t sb = st ? emb__row_bytes(st->dtype, SD) : 0;
    for (int64_t d = d0; d < EMB_MIN(d1, d0 + LOWP_AHEAD); d++)
        emb__column_prefetch(plan, d, rb, sb);
    for (int64_t d = d0; d < d1; d++) {
        if (d + LOWP_AHEAD < d1)
            emb__column_prefetch(plan, d + LOWP_AHEAD, rb, sb);
        const int64_t id = plan->ix->ids[d];
        void *col = t->data + (size_t)id * t->stride, *w = col;
        void *state = st ? st->data + (size_t)id * st->stride : NULL;
        float *s = state;
        const float *g = emb__column_grad(plan, d, acc, NULL);
        if (plan->clip)
            g = emb__clip_grad(plan, g, acc);
        if (load_row) {
            load_row(row, D, (const void *const *)&col, 1, D);
            w = row;
        }
        if (load_state) {
            load_state(sbuf, SD, (const void *const *)&state, 1, SD);
            s = sbuf;
        }
        if (plan->sgd)
            plan->sgd(w, g, plan->params.lr, D);
        else
            plan->row(w, s, g, &plan->params, D);
        if (load_state)
            emb__plan_state_store(plan, id, state, sbuf);
        if (load_row) {
            const uint64_t key[3] = {plan->qseed, (uint64_t)id, (uint64_t)plan->step};
            plan->requant_row(col, D, row, key);
        }
    }
}
