/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lowp.c — low-precision optimizer state and stochastic rounding in the update's plan
 * (docs/design/lowp.md): which rows and states a step writes through the rounding kernels
 * (`requant[EMB_F16]` / `requant[EMB_BF16]`, sround.h) and with which key.
 */
#include "dtype.h"
#include "tables/table_impl.h"
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
