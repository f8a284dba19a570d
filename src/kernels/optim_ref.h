/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * optim_ref.h — the one step of the optimizer references that both the one-row kernels
 * (optim_c.c) and the range kernels (optim_rows_c.c) take element by element: FTRL's.
 * Written once here so that the two stay the same bits.
 */
#ifndef EMB_KERNELS_OPTIM_REF_H
#define EMB_KERNELS_OPTIM_REF_H

#include <math.h>

#include "kernels/kernels.h"

/* FTRL's a^(-lr_power), with TF's sqrt special case for lr_power = -0.5. */
static inline float ftrl_pow(float a, float lr_power)
{
    return lr_power == -0.5f ? sqrtf(a) : powf(a, -lr_power);
}

/* One element of FTRL: updates *acc and *lin for gradient g, returns the new weight. */
static inline float ftrl_elem(float w, float *acc, float *lin, float g, const EmbOptimParams *p)
{
    const float a1 = *acc + g * g;
    const float pa1 = ftrl_pow(a1, p->lr_power);
    *lin = *lin + (g - (pa1 - ftrl_pow(*acc, p->lr_power)) / p->lr * w);
    const float quad = pa1 / p->lr + 2.0f * p->l2;
    const float l = *lin;
    *acc = a1;
    return fabsf(l) > p->l1 ? (copysignf(p->l1, l) - l) / quad : 0.0f;
}

#endif
