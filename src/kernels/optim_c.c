/*
 * optim_c.c — C references of the optimizer row kernels (see optim.h), stamped out per
 * storage dtype. The baseline flags (-std=c11) keep multiplies and adds separate.
 */
#include <math.h>
#include <string.h>

#include "kernels/convert.h"
#include "kernels/optim.h"


/* Σ g² in the 8-lane order of optim.h. */
static inline float sumsq8(const float *g, int32_t D)
{
    float l[8] = {0};
    int32_t i = 0;
    for (; i + 8 <= D; i += 8)
        for (int j = 0; j < 8; j++)
            l[j] = l[j] + g[i + j] * g[i + j];
    for (int j = 0; i + j < D; j++)
        l[j] = l[j] + g[i + j] * g[i + j];
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

/* FTRL's a^(-lr_power), with TF's sqrt special case for lr_power = -0.5. */
static inline float ftrl_pow(float a, float lr_power)
{
    return lr_power == -0.5f ? sqrtf(a) : powf(a, -lr_power);
}

#define DEFINE_OPTIM_C(T)                                                                  \
    static void adagrad_##T##_c(void *col, float *h, const float *g,                       \
                                const EmbOptimParams *p, int32_t D)                        \
    {                                                                                      \
        for (int32_t i = 0; i < D; i++) {                                                  \
            h[i] = h[i] + g[i] * g[i];                                                     \
            const float step = g[i] / (sqrtf(h[i]) + p->eps);                              \
            emb__st_##T(col, i, emb__ld_##T(col, i) - p->lr * step);                       \
        }                                                                                  \
    }                                                                                      \
    static void rowwise_##T##_c(void *col, float *h, const float *g,                       \
                                const EmbOptimParams *p, int32_t D)                        \
    {                                                                                      \
        h[0] = h[0] + sumsq8(g, D) / (float)D;                                             \
        const float m = p->lr / (sqrtf(h[0]) + p->eps);                                    \
        for (int32_t i = 0; i < D; i++)                                                    \
            emb__st_##T(col, i, emb__ld_##T(col, i) - m * g[i]);                           \
    }                                                                                      \
    static void ftrl_##T##_c(void *col, float *s, const float *g, const EmbOptimParams *p, \
                             int32_t D)                                                    \
    {                                                                                      \
        float *acc = s, *lin = s + D;                                                      \
        for (int32_t i = 0; i < D; i++) {                                                  \
            const float w = emb__ld_##T(col, i), a1 = acc[i] + g[i] * g[i];                \
            const float pa1 = ftrl_pow(a1, p->lr_power);                                   \
            lin[i] = lin[i] + (g[i] - (pa1 - ftrl_pow(acc[i], p->lr_power)) / p->lr * w);  \
            const float quad = pa1 / p->lr + 2.0f * p->l2;                                 \
            const float l = lin[i];                                                        \
            const float nw = fabsf(l) > p->l1 ? (copysignf(p->l1, l) - l) / quad : 0.0f;   \
            emb__st_##T(col, i, nw);                                                       \
            acc[i] = a1;                                                                   \
        }                                                                                  \
    }                                                                                      \
    static void adam_##T##_c(void *col, float *s, const float *g, const EmbOptimParams *p, \
                             int32_t D)                                                    \
    {                                                                                      \
        float *m = s, *v = s + D;                                                          \
        for (int32_t i = 0; i < D; i++) {                                                  \
            m[i] = m[i] + (g[i] - m[i]) * (1.0f - p->beta1);                               \
            v[i] = v[i] + (g[i] * g[i] - v[i]) * (1.0f - p->beta2);                        \
            const float step = m[i] / (sqrtf(v[i]) + p->eps);                              \
            emb__st_##T(col, i, emb__ld_##T(col, i) - p->step_size * step);                \
        }                                                                                  \
    }

DEFINE_OPTIM_C(f32)
DEFINE_OPTIM_C(f16)
DEFINE_OPTIM_C(bf16)

void emb__optim_init_c(EmbOptimKernels *k)
{
    memset(k, 0, sizeof *k);
#define FILL(T, DT)                                                                        \
    k->row[EMB_OPTIM_ADAGRAD][DT] = adagrad_##T##_c;                                       \
    k->row[EMB_OPTIM_ROWWISE][DT] = rowwise_##T##_c;                                       \
    k->row[EMB_OPTIM_FTRL][DT] = ftrl_##T##_c;                                             \
    k->row[EMB_OPTIM_ADAM][DT] = adam_##T##_c;
    FILL(f32, EMB_F32)
    FILL(f16, EMB_F16)
    FILL(bf16, EMB_BF16)
#undef FILL
    memcpy(k->row_nt, k->row, sizeof k->row);
}
