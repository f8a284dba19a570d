/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * optim_c.c — C references of the optimizer one-row kernels (kernels.h, opt_row; the range
 * kernels, rows: optim_rows_c.c; FTRL's element step: optim_ref.h): one
 * forced-inline body per optimizer with the dtype a constant parameter, and one-line
 * wrappers named as registered. The baseline flags (-std=c11) keep multiplies and adds
 * separate.
 */
#include <math.h>
#include <string.h>

#include "dtype.h"
#include "internal.h"
#include "kernels/kernels.h"
#include "kernels/optim_ref.h"

/* Σ g² in the 8-lane order of kernels.h. */
static inline float sumsq8(const float *g, int32_t D)
{
    return emb__sumsq8(g, D);
}

EMB_INLINE void adagrad_body(void *col, float *h, const float *g, const EmbOptimParams *p,
                             int32_t D, const EmbDtype dt)
{
    for (int32_t i = 0; i < D; i++) {
        h[i] = h[i] + g[i] * g[i];
        const float step = g[i] / (sqrtf(h[i]) + p->eps);
        emb__store(dt, col, i, emb__load(dt, col, i) - p->lr * step);
    }
}

EMB_INLINE void rowwise_body(void *col, float *h, const float *g, const EmbOptimParams *p,
                             int32_t D, const EmbDtype dt)
{
    h[0] = h[0] + sumsq8(g, D) / (float)D;
    const float m = p->lr / (sqrtf(h[0]) + p->eps);
    for (int32_t i = 0; i < D; i++)
        emb__store(dt, col, i, emb__load(dt, col, i) - m * g[i]);
}

EMB_INLINE void ftrl_body(void *col, float *s, const float *g, const EmbOptimParams *p,
                          int32_t D, const EmbDtype dt)
{
    float *acc = s, *lin = s + D;
    for (int32_t i = 0; i < D; i++)
        emb__store(dt, col, i, ftrl_elem(emb__load(dt, col, i), &acc[i], &lin[i], g[i], p));
}

EMB_INLINE void adam_body(void *col, float *s, const float *g, const EmbOptimParams *p,
                          int32_t D, const EmbDtype dt)
{
    float *m = s, *v = s + D;
    for (int32_t i = 0; i < D; i++) {
        m[i] = m[i] + (g[i] - m[i]) * (1.0f - p->beta1);
        v[i] = v[i] + (g[i] * g[i] - v[i]) * (1.0f - p->beta2);
        const float step = m[i] / (sqrtf(v[i]) + p->eps);
        emb__store(dt, col, i, emb__load(dt, col, i) - p->step_size * step);
    }
}

/* One-line wrappers: NAME, the body, the dtype. */
#define ROW(NAME, BODY, DT)                                                                \
    static void NAME(void *col, float *s, const float *g, const EmbOptimParams *p,         \
                     int32_t D)                                                            \
    {                                                                                      \
        BODY(col, s, g, p, D, DT);                                                         \
    }
ROW(adagrad_f32_c, adagrad_body, EMB_F32)
ROW(adagrad_f16_c, adagrad_body, EMB_F16)
ROW(adagrad_bf16_c, adagrad_body, EMB_BF16)
ROW(rowwise_f32_c, rowwise_body, EMB_F32)
ROW(rowwise_f16_c, rowwise_body, EMB_F16)
ROW(rowwise_bf16_c, rowwise_body, EMB_BF16)
ROW(ftrl_f32_c, ftrl_body, EMB_F32)
ROW(ftrl_f16_c, ftrl_body, EMB_F16)
ROW(ftrl_bf16_c, ftrl_body, EMB_BF16)
ROW(adam_f32_c, adam_body, EMB_F32)
ROW(adam_f16_c, adam_body, EMB_F16)
ROW(adam_bf16_c, adam_body, EMB_BF16)

/* The static-size copies: NAME, the body, the size, the dtype (constant-size loops). */
#define ROW_D(NAME, BODY, N, DT)                                                           \
    static void NAME(void *col, float *s, const float *g, const EmbOptimParams *p,         \
                     int32_t D)                                                            \
    {                                                                                      \
        (void)D;                                                                           \
        BODY(col, s, g, p, N, DT);                                                         \
    }
ROW_D(adagrad_d16_f32_c, adagrad_body, 16, EMB_F32)
ROW_D(adagrad_d32_f32_c, adagrad_body, 32, EMB_F32)
ROW_D(adagrad_d64_f32_c, adagrad_body, 64, EMB_F32)
ROW_D(adagrad_d128_f32_c, adagrad_body, 128, EMB_F32)
ROW_D(adagrad_d256_f32_c, adagrad_body, 256, EMB_F32)
ROW_D(adagrad_d16_f16_c, adagrad_body, 16, EMB_F16)
ROW_D(adagrad_d32_f16_c, adagrad_body, 32, EMB_F16)
ROW_D(adagrad_d64_f16_c, adagrad_body, 64, EMB_F16)
ROW_D(adagrad_d128_f16_c, adagrad_body, 128, EMB_F16)
ROW_D(adagrad_d256_f16_c, adagrad_body, 256, EMB_F16)
ROW_D(adagrad_d16_bf16_c, adagrad_body, 16, EMB_BF16)
ROW_D(adagrad_d32_bf16_c, adagrad_body, 32, EMB_BF16)
ROW_D(adagrad_d64_bf16_c, adagrad_body, 64, EMB_BF16)
ROW_D(adagrad_d128_bf16_c, adagrad_body, 128, EMB_BF16)
ROW_D(adagrad_d256_bf16_c, adagrad_body, 256, EMB_BF16)
ROW_D(rowwise_d16_f32_c, rowwise_body, 16, EMB_F32)
ROW_D(rowwise_d32_f32_c, rowwise_body, 32, EMB_F32)
ROW_D(rowwise_d64_f32_c, rowwise_body, 64, EMB_F32)
ROW_D(rowwise_d128_f32_c, rowwise_body, 128, EMB_F32)
ROW_D(rowwise_d256_f32_c, rowwise_body, 256, EMB_F32)
ROW_D(rowwise_d16_f16_c, rowwise_body, 16, EMB_F16)
ROW_D(rowwise_d32_f16_c, rowwise_body, 32, EMB_F16)
ROW_D(rowwise_d64_f16_c, rowwise_body, 64, EMB_F16)
ROW_D(rowwise_d128_f16_c, rowwise_body, 128, EMB_F16)
ROW_D(rowwise_d256_f16_c, rowwise_body, 256, EMB_F16)
ROW_D(rowwise_d16_bf16_c, rowwise_body, 16, EMB_BF16)
ROW_D(rowwise_d32_bf16_c, rowwise_body, 32, EMB_BF16)
ROW_D(rowwise_d64_bf16_c, rowwise_body, 64, EMB_BF16)
ROW_D(rowwise_d128_bf16_c, rowwise_body, 128, EMB_BF16)
ROW_D(rowwise_d256_bf16_c, rowwise_body, 256, EMB_BF16)
ROW_D(ftrl_d16_f32_c, ftrl_body, 16, EMB_F32)
ROW_D(ftrl_d32_f32_c, ftrl_body, 32, EMB_F32)
ROW_D(ftrl_d64_f32_c, ftrl_body, 64, EMB_F32)
ROW_D(ftrl_d128_f32_c, ftrl_body, 128, EMB_F32)
ROW_D(ftrl_d256_f32_c, ftrl_body, 256, EMB_F32)
ROW_D(ftrl_d16_f16_c, ftrl_body, 16, EMB_F16)
ROW_D(ftrl_d32_f16_c, ftrl_body, 32, EMB_F16)
ROW_D(ftrl_d64_f16_c, ftrl_body, 64, EMB_F16)
ROW_D(ftrl_d128_f16_c, ftrl_body, 128, EMB_F16)
ROW_D(ftrl_d256_f16_c, ftrl_body, 256, EMB_F16)
ROW_D(ftrl_d16_bf16_c, ftrl_body, 16, EMB_BF16)
ROW_D(ftrl_d32_bf16_c, ftrl_body, 32, EMB_BF16)
ROW_D(ftrl_d64_bf16_c, ftrl_body, 64, EMB_BF16)
ROW_D(ftrl_d128_bf16_c, ftrl_body, 128, EMB_BF16)
ROW_D(ftrl_d256_bf16_c, ftrl_body, 256, EMB_BF16)
ROW_D(adam_d16_f32_c, adam_body, 16, EMB_F32)
ROW_D(adam_d32_f32_c, adam_body, 32, EMB_F32)
ROW_D(adam_d64_f32_c, adam_body, 64, EMB_F32)
ROW_D(adam_d128_f32_c, adam_body, 128, EMB_F32)
ROW_D(adam_d256_f32_c, adam_body, 256, EMB_F32)
ROW_D(adam_d16_f16_c, adam_body, 16, EMB_F16)
ROW_D(adam_d32_f16_c, adam_body, 32, EMB_F16)
ROW_D(adam_d64_f16_c, adam_body, 64, EMB_F16)
ROW_D(adam_d128_f16_c, adam_body, 128, EMB_F16)
ROW_D(adam_d256_f16_c, adam_body, 256, EMB_F16)
ROW_D(adam_d16_bf16_c, adam_body, 16, EMB_BF16)
ROW_D(adam_d32_bf16_c, adam_body, 32, EMB_BF16)
ROW_D(adam_d64_bf16_c, adam_body, 64, EMB_BF16)
ROW_D(adam_d128_bf16_c, adam_body, 128, EMB_BF16)
ROW_D(adam_d256_bf16_c, adam_body, 256, EMB_BF16)

/* The one-row kernels' static-size copies (d16 .. d256: emb__dclass_size's order):
 * Adagrad and row-wise Adagrad. */
static void init_opt_row_d_adagrad(EmbKernels *k)
{
    k->opt_row_d[0][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_d16_f32_c;
    k->opt_row_d[1][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_d32_f32_c;
    k->opt_row_d[2][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_d64_f32_c;
    k->opt_row_d[3][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_d128_f32_c;
    k->opt_row_d[4][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_d256_f32_c;
    k->opt_row_d[0][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_d16_f16_c;
    k->opt_row_d[1][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_d32_f16_c;
    k->opt_row_d[2][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_d64_f16_c;
    k->opt_row_d[3][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_d128_f16_c;
    k->opt_row_d[4][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_d256_f16_c;
    k->opt_row_d[0][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_d16_bf16_c;
    k->opt_row_d[1][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_d32_bf16_c;
    k->opt_row_d[2][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_d64_bf16_c;
    k->opt_row_d[3][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_d128_bf16_c;
    k->opt_row_d[4][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_d256_bf16_c;
    k->opt_row_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_d16_f32_c;
    k->opt_row_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_d32_f32_c;
    k->opt_row_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_d64_f32_c;
    k->opt_row_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_d128_f32_c;
    k->opt_row_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_d256_f32_c;
    k->opt_row_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_d16_f16_c;
    k->opt_row_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_d32_f16_c;
    k->opt_row_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_d64_f16_c;
    k->opt_row_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_d128_f16_c;
    k->opt_row_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_d256_f16_c;
    k->opt_row_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_d16_bf16_c;
    k->opt_row_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_d32_bf16_c;
    k->opt_row_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_d64_bf16_c;
    k->opt_row_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_d128_bf16_c;
    k->opt_row_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_d256_bf16_c;
}

/* The one-row kernels' static-size copies: FTRL and Adam. */
static void init_opt_row_d_ftrl_adam(EmbKernels *k)
{
    k->opt_row_d[0][EMB_OPT_FTRL][EMB_F32] = ftrl_d16_f32_c;
    k->opt_row_d[1][EMB_OPT_FTRL][EMB_F32] = ftrl_d32_f32_c;
    k->opt_row_d[2][EMB_OPT_FTRL][EMB_F32] = ftrl_d64_f32_c;
    k->opt_row_d[3][EMB_OPT_FTRL][EMB_F32] = ftrl_d128_f32_c;
    k->opt_row_d[4][EMB_OPT_FTRL][EMB_F32] = ftrl_d256_f32_c;
    k->opt_row_d[0][EMB_OPT_FTRL][EMB_F16] = ftrl_d16_f16_c;
    k->opt_row_d[1][EMB_OPT_FTRL][EMB_F16] = ftrl_d32_f16_c;
    k->opt_row_d[2][EMB_OPT_FTRL][EMB_F16] = ftrl_d64_f16_c;
    k->opt_row_d[3][EMB_OPT_FTRL][EMB_F16] = ftrl_d128_f16_c;
    k->opt_row_d[4][EMB_OPT_FTRL][EMB_F16] = ftrl_d256_f16_c;
    k->opt_row_d[0][EMB_OPT_FTRL][EMB_BF16] = ftrl_d16_bf16_c;
    k->opt_row_d[1][EMB_OPT_FTRL][EMB_BF16] = ftrl_d32_bf16_c;
    k->opt_row_d[2][EMB_OPT_FTRL][EMB_BF16] = ftrl_d64_bf16_c;
    k->opt_row_d[3][EMB_OPT_FTRL][EMB_BF16] = ftrl_d128_bf16_c;
    k->opt_row_d[4][EMB_OPT_FTRL][EMB_BF16] = ftrl_d256_bf16_c;
    k->opt_row_d[0][EMB_OPT_ADAM][EMB_F32] = adam_d16_f32_c;
    k->opt_row_d[1][EMB_OPT_ADAM][EMB_F32] = adam_d32_f32_c;
    k->opt_row_d[2][EMB_OPT_ADAM][EMB_F32] = adam_d64_f32_c;
    k->opt_row_d[3][EMB_OPT_ADAM][EMB_F32] = adam_d128_f32_c;
    k->opt_row_d[4][EMB_OPT_ADAM][EMB_F32] = adam_d256_f32_c;
    k->opt_row_d[0][EMB_OPT_ADAM][EMB_F16] = adam_d16_f16_c;
    k->opt_row_d[1][EMB_OPT_ADAM][EMB_F16] = adam_d32_f16_c;
    k->opt_row_d[2][EMB_OPT_ADAM][EMB_F16] = adam_d64_f16_c;
    k->opt_row_d[3][EMB_OPT_ADAM][EMB_F16] = adam_d128_f16_c;
    k->opt_row_d[4][EMB_OPT_ADAM][EMB_F16] = adam_d256_f16_c;
    k->opt_row_d[0][EMB_OPT_ADAM][EMB_BF16] = adam_d16_bf16_c;
    k->opt_row_d[1][EMB_OPT_ADAM][EMB_BF16] = adam_d32_bf16_c;
    k->opt_row_d[2][EMB_OPT_ADAM][EMB_BF16] = adam_d64_bf16_c;
    k->opt_row_d[3][EMB_OPT_ADAM][EMB_BF16] = adam_d128_bf16_c;
    k->opt_row_d[4][EMB_OPT_ADAM][EMB_BF16] = adam_d256_bf16_c;
}

/* The one-row kernels (no streaming stores: _nt is the plain kernel) and their copies. */
static void init_opt_row(EmbKernels *k)
{
    k->opt_row[EMB_OPT_ADAGRAD][EMB_F32] = adagrad_f32_c;
    k->opt_row[EMB_OPT_ADAGRAD][EMB_F16] = adagrad_f16_c;
    k->opt_row[EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_bf16_c;
    k->opt_row[EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_f32_c;
    k->opt_row[EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_f16_c;
    k->opt_row[EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_bf16_c;
    k->opt_row[EMB_OPT_FTRL][EMB_F32] = ftrl_f32_c;
    k->opt_row[EMB_OPT_FTRL][EMB_F16] = ftrl_f16_c;
    k->opt_row[EMB_OPT_FTRL][EMB_BF16] = ftrl_bf16_c;
    k->opt_row[EMB_OPT_ADAM][EMB_F32] = adam_f32_c;
    k->opt_row[EMB_OPT_ADAM][EMB_F16] = adam_f16_c;
    k->opt_row[EMB_OPT_ADAM][EMB_BF16] = adam_bf16_c;
    memcpy(k->opt_row_nt, k->opt_row, sizeof k->opt_row);
    init_opt_row_d_adagrad(k);
    init_opt_row_d_ftrl_adam(k);
}

/* The optimizer kernels of the C level. */
void emb__kernels_init_optim_c(EmbKernels *k)
{
    init_opt_row(k);
    emb__kernels_init_optim_rows_c(k);
}
