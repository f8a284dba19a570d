/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clip.c — gradient clipping (EmbOptimizerConfig's max_gradient, max_row_norm,
 * max_global_norm) on each distinct column's summed gradient, before weight decay and the
 * optimizer: element-wise clamp, then the column's L2 norm, then the call's global scale.
 *
 * The global norm is Σ over every distinct column of every table of the call of its
 * clipped gradient's Σ g² (an f32, summed in the 8-lane order of kernels.h). Those f32
 * terms are added *exactly* into an integer accumulator (EmbNormAcc: the fixed-point sum
 * of every finite f32 fits in 10 limbs), so the total is the same bits whatever the order
 * of the columns, the threads, the splits and the partitions: each thread keeps its own
 * accumulator and their merge is integer addition. The norm is then rounded to double once.
 * That sum, over a plan's columns, is clip_norm.c's; this file clips one gradient.
 */
#include <math.h>
#include <string.h>

#include "tables/table_impl.h"
#include "update/update_impl.h"

void emb__plan_clip(const EmbOptimizerConfig *c, EmbPlan *plan)
{
    plan->clip_value = c->max_gradient;
    plan->clip_norm = c->max_row_norm;
    plan->clip_scale = 1.0f;
    plan->clip = c->max_gradient > 0.0f || c->max_row_norm > 0.0f || c->max_global_norm > 0.0f;
}

/* Σ g² of a row in the 8-lane order of kernels.h (row-wise Adagrad's). */
static float row_sumsq(const float *g, int32_t D)
{
    return emb__sumsq8(g, D);
}

/* @g clamped to [-m, m] into @out (may be @g): min / max, branch-free; NaN stays NaN. */
static void clamp(float m, const float *g, float *out, int32_t D)
{
    for (int32_t i = 0; i < D; i++) {
        float x = g[i];
        x = x > m ? m : x;
        out[i] = x < -m ? -m : x;
    }
}

/* Element-wise and row-norm clipping of @g into @out (may be @g). */
static void clip_local(const EmbPlan *plan, const float *g, float *out, int32_t D)
{
    const float m = plan->clip_value;
    if (m > 0.0f)
        clamp(m, g, out, D);
    else if (out != g)
        memcpy(out, g, (size_t)D * sizeof *out);
    if (plan->clip_norm > 0.0f) {
        const float norm = sqrtf(row_sumsq(out, D));
        if (norm > plan->clip_norm) {
            const float s = plan->clip_norm / norm;
            for (int32_t i = 0; i < D; i++)
                out[i] = out[i] * s;
        }
    }
}

const float *emb__clip_grad(const EmbPlan *plan, const float *g, float *out)
{
    const int32_t D = plan->table->featuresize;
    clip_local(plan, g, out, D);
    if (plan->clip_scale != 1.0f)
        for (int32_t i = 0; i < D; i++)
            out[i] = out[i] * plan->clip_scale;
    return out;
}

/* Σ g² of @g clipped (element-wise, then by its norm) without writing it where it is not
 * clipped: clip_local then row_sumsq, the same bits, with one Σ g² per column unless the
 * row-norm clip scales it. */
float emb__clip_sumsq(const EmbPlan *plan, const float *g, float *row, int32_t D)
{
    const float m = plan->clip_value;
    if (m > 0.0f) {
        clamp(m, g, row, D);
        g = row;
    }
    const float ss = row_sumsq(g, D);
    if (!(plan->clip_norm > 0.0f))
        return ss;
    const float norm = sqrtf(ss);
    if (!(norm > plan->clip_norm))
        return ss;
    const float s = plan->clip_norm / norm;
    for (int32_t i = 0; i < D; i++)
        row[i] = g[i] * s;
    return row_sumsq(row, D);
}

