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

/* Adds the finite, non-negative f32 @x exactly: x = m * 2^(shift - 149) with m < 2^24. */
static void acc_add(EmbNormAcc *a, float x)
{
    if (!isfinite(x)) {
        a->special += (double)x; /* inf + inf = inf, NaN absorbs: any order */
        return;
    }
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    const uint32_t e = (bits >> 23) & 0xffu;
    uint64_t m = bits & 0x7fffffu;
    int shift = 0;
    if (e) {
        m |= 1u << 23;
        shift = (int)e - 1;
    }
    const uint64_t v = m << (shift % 32);
    a->limb[shift / 32] += v & 0xffffffffu;
    a->limb[shift / 32 + 1] += v >> 32;
}

/* Carries propagated: every limb < 2^32 but the last. */
static void acc_normalize(EmbNormAcc *a)
{
    for (int k = 0; k + 1 < EMB_NORM_LIMBS; k++) {
        a->limb[k + 1] += a->limb[k] >> 32;
        a->limb[k] &= 0xffffffffu;
    }
}

/* Σ g² of @g clipped (element-wise, then by its norm) without writing it where it is not
 * clipped: clip_local then row_sumsq, the same bits, with one Σ g² per column unless the
 * row-norm clip scales it. */
static float clipped_sumsq(const EmbPlan *plan, const float *g, float *row, int32_t D)
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

void emb__clip_norm_range(const EmbPlan *plan, int64_t d0, int64_t d1, float *scratch,
                          EmbNormAcc *acc)
{
    if (!plan->clip)
        return;
    const int32_t D = plan->table->featuresize;
    float *sum = scratch, *tmp = scratch + D, *row = tmp + D;
    for (int64_t d = d0; d < d1; d++)
        acc_add(acc, clipped_sumsq(plan, emb__plan_column_grad(plan, d, sum, tmp), row, D));
    acc_normalize(acc); /* each call adds < 2^32 terms per limb before this */
}

void emb__norm_acc_merge(EmbNormAcc *dst, const EmbNormAcc *src)
{
    for (int k = 0; k < EMB_NORM_LIMBS; k++)
        dst->limb[k] += src->limb[k];
    dst->special += src->special;
    acc_normalize(dst);
}

float emb__clip_global_scale(const EmbNormAcc *acc, float max_norm)
{
    if (!(max_norm > 0.0f))
        return 1.0f;
    double s = 0.0;
    for (int k = EMB_NORM_LIMBS - 1; k >= 0; k--)
        s = s * 4294967296.0 + (double)acc->limb[k];
    s = ldexp(s, -149);
    if (acc->special != 0.0 || isnan(acc->special))
        s = acc->special;
    const double coef = (double)max_norm / (sqrt(s) + 1e-6);
    return coef < 1.0 || isnan(coef) ? (float)coef : 1.0f;
}
