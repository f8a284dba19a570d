/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * counter.c — EMB_OPT_ROWWISE_ADAGRAD_COUNTER: FBGEMM's rowwise_adagrad_with_counter with
 * its counter-based regularization (regularization_mode 3, the GPU kernel's definition),
 * learning-rate modes -1 and 2. Without weight decay a row is Σ g² (emb__sumsq8, the same
 * 8-lane order) and an SGD step by the row's rate (emb__counter_rate): on a plain table of
 * a static size the row-wise Adagrad range kernel with that rate (kernels.h,
 * emb_rows_rate_fn), else per column the table's SIMD sgd kernel (w - adj * g, the same
 * bits as the reference body below for finite weights); with weight decay, the C body. Per row the state is [h, prev_iter, counter] (f32,
 * as FBGEMM keeps momentum1, prev_iter and row_counter); the step t is the table's update
 * count + 1 (FBGEMM's iter). Formulas: docs/guide/training.md.
 */
#include <math.h>

#include "dtype.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

int emb__counter_check(const EmbOptimizerConfig *c)
{
    if (!isfinite(c->adjustment_ub) || !(c->adjustment_ub > 0.0f))
        return emb__fail(EMB_EINVAL, "optimizer adjustment_ub %g is not a finite number > 0",
                         (double)c->adjustment_ub);
    if (!isfinite(c->tail_id_threshold) || !(c->tail_id_threshold >= 0.0f))
        return emb__fail(EMB_EINVAL, "optimizer tail_id_threshold %g is not a finite number "
                         ">= 0", (double)c->tail_id_threshold);
    if (c->learning_rate_mode == 0 || c->learning_rate_mode == 1)
        return emb__fail(EMB_ENOTSUP, "optimizer learning_rate_mode %d (relative to the "
                         "table's largest counter) is not implemented: -1 or 2",
                         (int)c->learning_rate_mode);
    if (c->learning_rate_mode != -1 && c->learning_rate_mode != 2)
        return emb__fail(EMB_EINVAL, "optimizer learning_rate_mode %d is not -1 or 2",
                         (int)c->learning_rate_mode);
    return 0;
}

void emb__plan_counter(const EmbOptimizerConfig *c, EmbPlan *plan, EmbDtype cdt)
{
    plan->counter = c;
    plan->decay_l2 = 0.0f; /* the counter's weight decay is its own (emb__counter_row) */
    plan->decay_scale = 1.0f;
    plan->counter_sgd = emb__kernel_sgd_row(cdt, plan->table->featuresize, 0);
    /* the decay's factors for the few steps since a row's last update that most rows have:
       the expression count() would evaluate, so the same bits, once per plan */
    const float log_rho = c->counter_halflife > 0 ? logf(2.0f) / (float)c->counter_halflife
                                                  : 0.0f;
    plan->counter_log_rho = log_rho;
    for (int k = 0; k < EMB_COUNTER_DECAYS; k++)
        plan->counter_decay[k] = expf(-(float)k * log_rho);
}

/* exp(-delta log_rho): the plan's factor when @delta is a whole number of steps below
 * EMB_COUNTER_DECAYS (iter and prev_iter are whole numbers: exact in f32 below 2^24). */
static float decay(const EmbPlan *plan, float delta)
{
    if (delta >= 0.0f && delta < (float)EMB_COUNTER_DECAYS && delta == (float)(int)delta)
        return plan->counter_decay[(int)delta];
    return expf(-delta * plan->counter_log_rho);
}

/* The counter update of state @s at step @iter (FBGEMM's counter with half-life decay:
 * cnt = 1 + exp(-delta ln 2 / halflife) cnt, the factor from decay()). */
static void count(const EmbPlan *plan, float iter, float *s)
{
    const EmbOptimizerConfig *c = plan->counter;
    float *prev = &s[1], *cnt = &s[2];
    if (c->counter_halflife > 0) {
        const float delta = *prev == 0.0f ? 1.0f : iter - *prev;
        *prev = iter;
        *cnt = 1.0f + decay(plan, delta) * *cnt;
    } else if (c->counter_halflife == 0) {
        *cnt = 1.0f;
    } else {
        *cnt = *cnt + 1.0f;
    }
}

/* The row's rate from its h (updated by @sum) and counter; *mult: lr / (√h + eps). */
static float rate(const EmbOptimizerConfig *c, float iter, float *s, float sum, int32_t D,
                  float *mult)
{
    s[0] = s[0] + sum / (float)D;
    *mult = c->lr / (sqrtf(s[0]) + c->eps);
    const bool enabled = c->adjustment_iter <= 0 || iter > (float)c->adjustment_iter;
    if (c->learning_rate_mode == 2 && enabled && s[2] > c->tail_id_threshold)
        return c->lr / (sqrtf(c->adjustment_ub * s[2]) + c->eps);
    return *mult;
}

/* emb__counter_row's body with the dtype a constant (one copy per dtype: no per-element
   switch in emb__load / emb__store). */
EMB_INLINE void counter_body(const EmbPlan *plan, const EmbDtype dt, void *w, float *s,
                             const float *g)
{
    const EmbOptimizerConfig *c = plan->counter;
    const int32_t D = plan->table->featuresize;
    const float iter = (float)(plan->step + 1);
    count(plan, iter, s);
    const float freq = (float)c->counter_halflife / s[2];
    const bool l2 = c->weight_decay > 0.0f && c->weight_decay_mode == EMB_DECAY_L2;
    float l[8] = {0}; /* Σ g'² in the 8-lane order of kernels.h, g' = g + wd·w with L2 */
    const float wd = l2 ? c->weight_decay : 0.0f;
    int32_t i = 0;
    for (; i + 8 <= D; i += 8)
        for (int j = 0; j < 8; j++) {
            const float gi = g[i + j] + wd * emb__load(dt, w, i + j);
            l[j] = l[j] + gi * gi;
        }
    for (int j = 0; i + j < D; j++) {
        const float gi = g[i + j] + wd * emb__load(dt, w, i + j);
        l[j] = l[j] + gi * gi;
    }
    const float sum = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
    float mult;
    const float adj = rate(c, iter, s, sum, D, &mult);
    const bool enabled = c->adjustment_iter <= 0 || iter > (float)c->adjustment_iter;
    float corr = 1.0f;
    if (enabled && c->weight_decay > 0.0f)
        corr = 1.0f - freq * c->weight_decay * (l2 ? mult : c->lr);
    for (int32_t k = 0; k < D; k++) {
        const float wi = emb__load(dt, w, k);
        emb__store(dt, w, k, corr * wi - adj * (g[k] + wd * wi));
    }
}

float emb__counter_rate(const void *ctx, float *s, float sumsq)
{
    const EmbPlan *plan = ctx;
    const EmbOptimizerConfig *c = plan->counter;
    const float iter = (float)(plan->step + 1);
    float mult;
    count(plan, iter, s);
    return rate(c, iter, s, sumsq, plan->table->featuresize, &mult);
}

void emb__counter_row(const EmbPlan *plan, EmbDtype dt, void *w, float *s, const float *g)
{
    const EmbOptimizerConfig *c = plan->counter;
    if (!(c->weight_decay > 0.0f) && plan->counter_sgd) { /* Σ g², an SGD step by the rate */
        const int32_t D = plan->table->featuresize;
        plan->counter_sgd(w, g, emb__counter_rate(plan, s, emb__sumsq8(g, D)), D);
        return;
    }
    switch (dt) {
    case EMB_F32: counter_body(plan, EMB_F32, w, s, g); break;
    case EMB_F16: counter_body(plan, EMB_F16, w, s, g); break;
    case EMB_BF16: counter_body(plan, EMB_BF16, w, s, g); break;
    default: counter_body(plan, dt, w, s, g); break;
    }
}
