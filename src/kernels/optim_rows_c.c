/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * optim_rows_c.c — C references of the optimizer range kernels (kernels.h, rows: columns
 * d0 .. d1 of an EmbRowsArgs, the gradient clipped on the fly): one forced-inline body per
 * optimizer with the dtype (and in the `_dN` copies the size) a constant parameter, and
 * one-line wrappers named as registered. The one-row kernels are in optim_c.c; FTRL's
 * element step, shared with them, in optim_ref.h.
 */
#include <math.h>

#include "dtype.h"
#include "internal.h"
#include "kernels/kernels.h"
#include "kernels/optim_ref.h"

/* Row-wise Adagrad on columns d0 .. d1 (EmbRowsArgs): rowwise_body's steps with each
 * column's gradient read twice (for the sum of squares, then for the update). */
EMB_INLINE void rowwise_rows_body(const EmbRowsArgs *a, const int32_t D, const EmbDtype dt)
{
    for (int64_t d = a->d0; d < a->d1; d++) {
        void *col = a->data + a->ids[d] * a->col_stride;
        const float rs = emb__rows_clip_factor(a, d, D); /* 1: no clipping */
        float *h = (float *)(a->state + a->ids[d] * a->state_stride), l[8] = {0};
        for (int32_t i = 0; i < D; i++) {
            const float g = emb__rows_grad_clip(a, d, i, rs);
            l[i % 8] = l[i % 8] + g * g;
        }
        const float s = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
        float m;
        if (a->rate) {
            m = a->rate(a->rate_ctx, h, s);
        } else {
            h[0] = h[0] + s / (float)D;
            m = a->params->lr / (sqrtf(h[0]) + a->params->eps);
        }
        for (int32_t i = 0; i < D; i++)
            emb__store(dt, col, i, emb__load(dt, col, i) - m * emb__rows_grad_clip(a, d, i, rs));
    }
}

/* Adagrad and Adam on columns d0 .. d1 (EmbRowsArgs): adagrad_body's and adam_body's
 * steps per element. */
EMB_INLINE void adagrad_rows_body(const EmbRowsArgs *a, const int32_t D, const EmbDtype dt)
{
    const EmbOptimParams *p = a->params;
    for (int64_t d = a->d0; d < a->d1; d++) {
        void *col = a->data + a->ids[d] * a->col_stride;
        const float rs = emb__rows_clip_factor(a, d, D); /* 1: no clipping */
        float *h = (float *)(a->state + a->ids[d] * a->state_stride);
        for (int32_t i = 0; i < D; i++) {
            const float g = emb__rows_grad_clip(a, d, i, rs);
            h[i] = h[i] + g * g;
            const float step = g / (sqrtf(h[i]) + p->eps);
            emb__store(dt, col, i, emb__load(dt, col, i) - p->lr * step);
        }
    }
}

EMB_INLINE void adam_rows_body(const EmbRowsArgs *a, const int32_t D, const EmbDtype dt)
{
    const EmbOptimParams *p = a->params;
    for (int64_t d = a->d0; d < a->d1; d++) {
        void *col = a->data + a->ids[d] * a->col_stride;
        const float rs = emb__rows_clip_factor(a, d, D); /* 1: no clipping */
        float *m = (float *)(a->state + a->ids[d] * a->state_stride), *v = m + D;
        for (int32_t i = 0; i < D; i++) {
            const float g = emb__rows_grad_clip(a, d, i, rs);
            m[i] = m[i] + (g - m[i]) * (1.0f - p->beta1);
            v[i] = v[i] + (g * g - v[i]) * (1.0f - p->beta2);
            const float step = m[i] / (sqrtf(v[i]) + p->eps);
            emb__store(dt, col, i, emb__load(dt, col, i) - p->step_size * step);
        }
    }
}

/* FTRL on columns d0 .. d1 (EmbRowsArgs): ftrl_body's steps per element, any lr_power
 * (the SIMD copies: lr_power = -0.5 only, which emb__plan_optimizer checks). */
EMB_INLINE void ftrl_rows_body(const EmbRowsArgs *a, const int32_t D, const EmbDtype dt)
{
    for (int64_t d = a->d0; d < a->d1; d++) {
        void *col = a->data + a->ids[d] * a->col_stride;
        const float rs = emb__rows_clip_factor(a, d, D); /* 1: no clipping */
        float *acc = (float *)(a->state + a->ids[d] * a->state_stride), *lin = acc + D;
        for (int32_t i = 0; i < D; i++)
            emb__store(dt, col, i, ftrl_elem(emb__load(dt, col, i), &acc[i], &lin[i],
                                             emb__rows_grad_clip(a, d, i, rs), a->params));
    }
}

/* The range copies: NAME, the size (0: a->D), the dtype. */
#define ROWS(NAME, BODY, N, DT)                                                            \
    static void NAME(const EmbRowsArgs *a)                                                 \
    {                                                                                      \
        BODY(a, N ? N : a->D, DT);                                                         \
    }
ROWS(rowwise_rows_f32_c, rowwise_rows_body, 0, EMB_F32)
ROWS(rowwise_rows_d16_f32_c, rowwise_rows_body, 16, EMB_F32)
ROWS(rowwise_rows_d32_f32_c, rowwise_rows_body, 32, EMB_F32)
ROWS(rowwise_rows_d64_f32_c, rowwise_rows_body, 64, EMB_F32)
ROWS(rowwise_rows_d128_f32_c, rowwise_rows_body, 128, EMB_F32)
ROWS(rowwise_rows_d256_f32_c, rowwise_rows_body, 256, EMB_F32)
ROWS(rowwise_rows_f16_c, rowwise_rows_body, 0, EMB_F16)
ROWS(rowwise_rows_d16_f16_c, rowwise_rows_body, 16, EMB_F16)
ROWS(rowwise_rows_d32_f16_c, rowwise_rows_body, 32, EMB_F16)
ROWS(rowwise_rows_d64_f16_c, rowwise_rows_body, 64, EMB_F16)
ROWS(rowwise_rows_d128_f16_c, rowwise_rows_body, 128, EMB_F16)
ROWS(rowwise_rows_d256_f16_c, rowwise_rows_body, 256, EMB_F16)
ROWS(rowwise_rows_bf16_c, rowwise_rows_body, 0, EMB_BF16)
ROWS(rowwise_rows_d16_bf16_c, rowwise_rows_body, 16, EMB_BF16)
ROWS(rowwise_rows_d32_bf16_c, rowwise_rows_body, 32, EMB_BF16)
ROWS(rowwise_rows_d64_bf16_c, rowwise_rows_body, 64, EMB_BF16)
ROWS(rowwise_rows_d128_bf16_c, rowwise_rows_body, 128, EMB_BF16)
ROWS(rowwise_rows_d256_bf16_c, rowwise_rows_body, 256, EMB_BF16)

ROWS(adagrad_rows_f32_c, adagrad_rows_body, 0, EMB_F32)
ROWS(adagrad_rows_d16_f32_c, adagrad_rows_body, 16, EMB_F32)
ROWS(adagrad_rows_d32_f32_c, adagrad_rows_body, 32, EMB_F32)
ROWS(adagrad_rows_d64_f32_c, adagrad_rows_body, 64, EMB_F32)
ROWS(adagrad_rows_d128_f32_c, adagrad_rows_body, 128, EMB_F32)
ROWS(adagrad_rows_d256_f32_c, adagrad_rows_body, 256, EMB_F32)
ROWS(adagrad_rows_f16_c, adagrad_rows_body, 0, EMB_F16)
ROWS(adagrad_rows_d16_f16_c, adagrad_rows_body, 16, EMB_F16)
ROWS(adagrad_rows_d32_f16_c, adagrad_rows_body, 32, EMB_F16)
ROWS(adagrad_rows_d64_f16_c, adagrad_rows_body, 64, EMB_F16)
ROWS(adagrad_rows_d128_f16_c, adagrad_rows_body, 128, EMB_F16)
ROWS(adagrad_rows_d256_f16_c, adagrad_rows_body, 256, EMB_F16)
ROWS(adagrad_rows_bf16_c, adagrad_rows_body, 0, EMB_BF16)
ROWS(adagrad_rows_d16_bf16_c, adagrad_rows_body, 16, EMB_BF16)
ROWS(adagrad_rows_d32_bf16_c, adagrad_rows_body, 32, EMB_BF16)
ROWS(adagrad_rows_d64_bf16_c, adagrad_rows_body, 64, EMB_BF16)
ROWS(adagrad_rows_d128_bf16_c, adagrad_rows_body, 128, EMB_BF16)
ROWS(adagrad_rows_d256_bf16_c, adagrad_rows_body, 256, EMB_BF16)
ROWS(adam_rows_f32_c, adam_rows_body, 0, EMB_F32)
ROWS(adam_rows_d16_f32_c, adam_rows_body, 16, EMB_F32)
ROWS(adam_rows_d32_f32_c, adam_rows_body, 32, EMB_F32)
ROWS(adam_rows_d64_f32_c, adam_rows_body, 64, EMB_F32)
ROWS(adam_rows_d128_f32_c, adam_rows_body, 128, EMB_F32)
ROWS(adam_rows_d256_f32_c, adam_rows_body, 256, EMB_F32)
ROWS(adam_rows_f16_c, adam_rows_body, 0, EMB_F16)
ROWS(adam_rows_d16_f16_c, adam_rows_body, 16, EMB_F16)
ROWS(adam_rows_d32_f16_c, adam_rows_body, 32, EMB_F16)
ROWS(adam_rows_d64_f16_c, adam_rows_body, 64, EMB_F16)
ROWS(adam_rows_d128_f16_c, adam_rows_body, 128, EMB_F16)
ROWS(adam_rows_d256_f16_c, adam_rows_body, 256, EMB_F16)
ROWS(adam_rows_bf16_c, adam_rows_body, 0, EMB_BF16)
ROWS(adam_rows_d16_bf16_c, adam_rows_body, 16, EMB_BF16)
ROWS(adam_rows_d32_bf16_c, adam_rows_body, 32, EMB_BF16)
ROWS(adam_rows_d64_bf16_c, adam_rows_body, 64, EMB_BF16)
ROWS(adam_rows_d128_bf16_c, adam_rows_body, 128, EMB_BF16)
ROWS(adam_rows_d256_bf16_c, adam_rows_body, 256, EMB_BF16)
ROWS(ftrl_rows_f32_c, ftrl_rows_body, 0, EMB_F32)
ROWS(ftrl_rows_d16_f32_c, ftrl_rows_body, 16, EMB_F32)
ROWS(ftrl_rows_d32_f32_c, ftrl_rows_body, 32, EMB_F32)
ROWS(ftrl_rows_d64_f32_c, ftrl_rows_body, 64, EMB_F32)
ROWS(ftrl_rows_d128_f32_c, ftrl_rows_body, 128, EMB_F32)
ROWS(ftrl_rows_d256_f32_c, ftrl_rows_body, 256, EMB_F32)
ROWS(ftrl_rows_f16_c, ftrl_rows_body, 0, EMB_F16)
ROWS(ftrl_rows_d16_f16_c, ftrl_rows_body, 16, EMB_F16)
ROWS(ftrl_rows_d32_f16_c, ftrl_rows_body, 32, EMB_F16)
ROWS(ftrl_rows_d64_f16_c, ftrl_rows_body, 64, EMB_F16)
ROWS(ftrl_rows_d128_f16_c, ftrl_rows_body, 128, EMB_F16)
ROWS(ftrl_rows_d256_f16_c, ftrl_rows_body, 256, EMB_F16)
ROWS(ftrl_rows_bf16_c, ftrl_rows_body, 0, EMB_BF16)
ROWS(ftrl_rows_d16_bf16_c, ftrl_rows_body, 16, EMB_BF16)
ROWS(ftrl_rows_d32_bf16_c, ftrl_rows_body, 32, EMB_BF16)
ROWS(ftrl_rows_d64_bf16_c, ftrl_rows_body, 64, EMB_BF16)
ROWS(ftrl_rows_d128_bf16_c, ftrl_rows_body, 128, EMB_BF16)
ROWS(ftrl_rows_d256_bf16_c, ftrl_rows_body, 256, EMB_BF16)

/* The range kernels' static-size copies: Adagrad and Adam. */
static void init_rows_d_adagrad_adam(EmbKernels *k)
{
    k->rows_d[0][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_rows_d16_f32_c;
    k->rows_d[1][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_rows_d32_f32_c;
    k->rows_d[2][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_rows_d64_f32_c;
    k->rows_d[3][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_rows_d128_f32_c;
    k->rows_d[4][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_rows_d256_f32_c;
    k->rows_d[0][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_rows_d16_f16_c;
    k->rows_d[1][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_rows_d32_f16_c;
    k->rows_d[2][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_rows_d64_f16_c;
    k->rows_d[3][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_rows_d128_f16_c;
    k->rows_d[4][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_rows_d256_f16_c;
    k->rows_d[0][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_rows_d16_bf16_c;
    k->rows_d[1][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_rows_d32_bf16_c;
    k->rows_d[2][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_rows_d64_bf16_c;
    k->rows_d[3][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_rows_d128_bf16_c;
    k->rows_d[4][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_rows_d256_bf16_c;
    k->rows_d[0][EMB_OPT_ADAM][EMB_F32] = adam_rows_d16_f32_c;
    k->rows_d[1][EMB_OPT_ADAM][EMB_F32] = adam_rows_d32_f32_c;
    k->rows_d[2][EMB_OPT_ADAM][EMB_F32] = adam_rows_d64_f32_c;
    k->rows_d[3][EMB_OPT_ADAM][EMB_F32] = adam_rows_d128_f32_c;
    k->rows_d[4][EMB_OPT_ADAM][EMB_F32] = adam_rows_d256_f32_c;
    k->rows_d[0][EMB_OPT_ADAM][EMB_F16] = adam_rows_d16_f16_c;
    k->rows_d[1][EMB_OPT_ADAM][EMB_F16] = adam_rows_d32_f16_c;
    k->rows_d[2][EMB_OPT_ADAM][EMB_F16] = adam_rows_d64_f16_c;
    k->rows_d[3][EMB_OPT_ADAM][EMB_F16] = adam_rows_d128_f16_c;
    k->rows_d[4][EMB_OPT_ADAM][EMB_F16] = adam_rows_d256_f16_c;
    k->rows_d[0][EMB_OPT_ADAM][EMB_BF16] = adam_rows_d16_bf16_c;
    k->rows_d[1][EMB_OPT_ADAM][EMB_BF16] = adam_rows_d32_bf16_c;
    k->rows_d[2][EMB_OPT_ADAM][EMB_BF16] = adam_rows_d64_bf16_c;
    k->rows_d[3][EMB_OPT_ADAM][EMB_BF16] = adam_rows_d128_bf16_c;
    k->rows_d[4][EMB_OPT_ADAM][EMB_BF16] = adam_rows_d256_bf16_c;
}

/* The range kernels' static-size copies: row-wise Adagrad. */
static void init_rows_d_rowwise(EmbKernels *k)
{
    k->rows_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_rows_d16_f32_c;
    k->rows_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_rows_d32_f32_c;
    k->rows_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_rows_d64_f32_c;
    k->rows_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_rows_d128_f32_c;
    k->rows_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_rows_d256_f32_c;
    k->rows_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_rows_d16_f16_c;
    k->rows_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_rows_d32_f16_c;
    k->rows_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_rows_d64_f16_c;
    k->rows_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_rows_d128_f16_c;
    k->rows_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_rows_d256_f16_c;
    k->rows_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_rows_d16_bf16_c;
    k->rows_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_rows_d32_bf16_c;
    k->rows_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_rows_d64_bf16_c;
    k->rows_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_rows_d128_bf16_c;
    k->rows_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_rows_d256_bf16_c;
}

/* The range kernels' static-size copies: FTRL. */
static void init_rows_d_ftrl(EmbKernels *k)
{
    k->rows_d[0][EMB_OPT_FTRL][EMB_F32] = ftrl_rows_d16_f32_c;
    k->rows_d[1][EMB_OPT_FTRL][EMB_F32] = ftrl_rows_d32_f32_c;
    k->rows_d[2][EMB_OPT_FTRL][EMB_F32] = ftrl_rows_d64_f32_c;
    k->rows_d[3][EMB_OPT_FTRL][EMB_F32] = ftrl_rows_d128_f32_c;
    k->rows_d[4][EMB_OPT_FTRL][EMB_F32] = ftrl_rows_d256_f32_c;
    k->rows_d[0][EMB_OPT_FTRL][EMB_F16] = ftrl_rows_d16_f16_c;
    k->rows_d[1][EMB_OPT_FTRL][EMB_F16] = ftrl_rows_d32_f16_c;
    k->rows_d[2][EMB_OPT_FTRL][EMB_F16] = ftrl_rows_d64_f16_c;
    k->rows_d[3][EMB_OPT_FTRL][EMB_F16] = ftrl_rows_d128_f16_c;
    k->rows_d[4][EMB_OPT_FTRL][EMB_F16] = ftrl_rows_d256_f16_c;
    k->rows_d[0][EMB_OPT_FTRL][EMB_BF16] = ftrl_rows_d16_bf16_c;
    k->rows_d[1][EMB_OPT_FTRL][EMB_BF16] = ftrl_rows_d32_bf16_c;
    k->rows_d[2][EMB_OPT_FTRL][EMB_BF16] = ftrl_rows_d64_bf16_c;
    k->rows_d[3][EMB_OPT_FTRL][EMB_BF16] = ftrl_rows_d128_bf16_c;
    k->rows_d[4][EMB_OPT_FTRL][EMB_BF16] = ftrl_rows_d256_bf16_c;
}

/* The range kernels (Adagrad, Adam, row-wise Adagrad, FTRL) and their copies. */
void emb__kernels_init_optim_rows_c(EmbKernels *k)
{
    k->rows[EMB_OPT_ADAGRAD][EMB_F32] = adagrad_rows_f32_c;
    k->rows[EMB_OPT_ADAGRAD][EMB_F16] = adagrad_rows_f16_c;
    k->rows[EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_rows_bf16_c;
    k->rows[EMB_OPT_ADAM][EMB_F32] = adam_rows_f32_c;
    k->rows[EMB_OPT_ADAM][EMB_F16] = adam_rows_f16_c;
    k->rows[EMB_OPT_ADAM][EMB_BF16] = adam_rows_bf16_c;
    k->rows[EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_rows_f32_c;
    k->rows[EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_rows_f16_c;
    k->rows[EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_rows_bf16_c;
    k->rows[EMB_OPT_FTRL][EMB_F32] = ftrl_rows_f32_c;
    k->rows[EMB_OPT_FTRL][EMB_F16] = ftrl_rows_f16_c;
    k->rows[EMB_OPT_FTRL][EMB_BF16] = ftrl_rows_bf16_c;
    init_rows_d_adagrad_adam(k);
    init_rows_d_rowwise(k);
    init_rows_d_ftrl(k);
}
