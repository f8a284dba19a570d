/*
 * kernels_c.c — the C reference of every kernel family: the definition of correct. Plain
 * loops over one element type each, stamped out per dtype by a macro. The library's
 * baseline flags (-std=c11: no FMA contraction) keep `acc + w * x` a separate multiply and
 * add, which the SIMD variants reproduce where they claim bit-exactness.
 */
#include <string.h>

#include "kernels/convert.h"
#include "kernels/kernels.h"

static inline float load_f32(const void *p, int32_t i)
{
    return ((const float *)p)[i];
}
static inline float load_f16(const void *p, int32_t i)
{
    return emb__f16_to_f32(((const uint16_t *)p)[i]);
}
static inline float load_bf16(const void *p, int32_t i)
{
    return emb__bf16_to_f32(((const uint16_t *)p)[i]);
}
static inline void store_f32(void *p, int32_t i, float v)
{
    ((float *)p)[i] = v;
}
static inline void store_f16(void *p, int32_t i, float v)
{
    ((uint16_t *)p)[i] = emb__f32_to_f16(v);
}
static inline void store_bf16(void *p, int32_t i, float v)
{
    ((uint16_t *)p)[i] = emb__f32_to_bf16(v);
}

#define DEFINE_C_KERNELS(T)                                                                \
    static void gather_##T##_c(float *out, int64_t out_stride, const void *const *cols,    \
                               int64_t n, int32_t D)                                       \
    {                                                                                      \
        for (int64_t k = 0; k < n; k++)                                                    \
            for (int32_t i = 0; i < D; i++)                                                \
                out[k * out_stride + i] = load_##T(cols[k], i);                            \
    }                                                                                      \
    static void pool_##T##_c(float *out, const void *const *cols, const float *w,          \
                             int64_t n, int64_t ahead, int32_t D, int accumulate)          \
    {                                                                                      \
        (void)ahead;                                                                       \
        if (!accumulate)                                                                   \
            memset(out, 0, (size_t)D * sizeof(float));                                     \
        for (int64_t k = 0; k < n; k++) {                                                  \
            if (w) {                                                                       \
                const float wk = w[k];                                                     \
                for (int32_t i = 0; i < D; i++)                                            \
                    out[i] = out[i] + wk * load_##T(cols[k], i);                           \
            } else {                                                                       \
                for (int32_t i = 0; i < D; i++)                                            \
                    out[i] = out[i] + load_##T(cols[k], i);                                \
            }                                                                              \
        }                                                                                  \
    }                                                                                      \
    static float sumsq_##T##_c(const void *col, int32_t D)                                 \
    {                                                                                      \
        float s[16] = {0};                                                                 \
        for (int32_t i = 0; i < D; i++) {                                                  \
            const float x = load_##T(col, i);                                              \
            s[i % 16] = s[i % 16] + x * x;                                                 \
        }                                                                                  \
        return emb__sumsq_lanes(s);                                                        \
    }                                                                                      \
    static void sgd_row_##T##_c(void *col, const float *g, float lr, int32_t D)            \
    {                                                                                      \
        for (int32_t i = 0; i < D; i++)                                                    \
            store_##T(col, i, load_##T(col, i) - lr * g[i]);                               \
    }

DEFINE_C_KERNELS(f32)
DEFINE_C_KERNELS(f16)
DEFINE_C_KERNELS(bf16)

static void scale_c(float *x, float s, int32_t D)
{
    for (int32_t i = 0; i < D; i++)
        x[i] *= s;
}

void emb__kernels_init_c(EmbKernels *k)
{
    memset(k, 0, sizeof *k);
#define FILL(T, DT)                                                                        \
    k->gather[DT] = gather_##T##_c;                                                        \
    k->pool[DT] = pool_##T##_c;                                                            \
    k->pool_nt[DT] = pool_##T##_c;                                                         \
    k->sumsq[DT] = sumsq_##T##_c;                                                          \
    k->sgd_row[DT] = sgd_row_##T##_c;                                                      \
    k->sgd_row_nt[DT] = sgd_row_##T##_c;
    FILL(f32, EMB_F32)
    FILL(f16, EMB_F16)
    FILL(bf16, EMB_BF16)
#undef FILL
    k->scale = scale_c;
}
