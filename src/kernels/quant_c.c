/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * quant_c.c — the C references of the lookup kernels over row-wise quantized rows (EMB_INT8,
 * EMB_INT4; dtype.h): gather, pool, bags, sumsq. They dequantize inside the kernel and
 * compute in f32. The definition of correct, which x86/quant_body.h reproduces bit for bit:
 *
 *   a row of weight w (1 when unweighted) with scale s and bias b adds, element by element,
 *   acc[i] = acc[i] + fma(q[i], w * s, w * b)      (the term in one rounding: fmaf)
 *
 * rows in bag order. Per row and element that is a fused multiply-add and one add (a
 * multiply and two adds before), and the sum's dependency chain holds only the add. Each
 * row is complete in acc, so a bag pooled in pieces (the generic path, dynamic and tiered
 * tables) gets the bits of a bag pooled at once. The term rounds once where the dequantized
 * value q * s + b (emb__q_value: gather, reads) rounds twice, so a one-row bag may differ
 * from it in the last bit; bags agree with torch's quantized bags within f32 rounding
 * (tests/python_quant).
 */
#include <math.h>
#include <string.h>

#include "dtype.h"
#include "internal.h"
#include "requant.h"
#include "sround.h"
#include "kernels/bags_ref.h"
#include "kernels/kernels.h"

/* acc[0 .. D) += fma(q, w * s, w * b): a row of weight w, as the header says (EmbRowAdd: an
 * unweighted row is w = 1, the same formula). */
static inline void qadd(float *acc, const void *row, float w, int weighted, const int32_t D,
                        const EmbDtype dt)
{
    (void)weighted;
    float s, b;
    emb__q_params(dt, row, D, &s, &b);
    s = w * s;
    b = w * b;
    for (int32_t i = 0; i < D; i++)
        acc[i] = acc[i] + fmaf((float)emb__q_get(dt, row, i), s, b);
}

EMB_INLINE void qgather_body(float *out, int64_t stride, const void *const *cols, int64_t n,
                             const int32_t D, const EmbDtype dt)
{
    for (int64_t k = 0; k < n; k++) {
        float s, b;
        emb__q_params(dt, cols[k], D, &s, &b);
        for (int32_t i = 0; i < D; i++)
            out[k * stride + i] = emb__q_value(dt, cols[k], i, s, b);
    }
}

/* out (+)= Σ_k w[k] cols[k] in bag order; the constant-N copies sum into a local array. */
EMB_INLINE void qpool_body(float *out, const void *const *cols, const float *w, int64_t n,
                           const int32_t D, int accumulate, const EmbDtype dt)
{
    float a[512];
    float *acc = D <= 512 ? a : out;
    if (!accumulate)
        memset(acc, 0, (size_t)D * sizeof(float));
    else if (acc != out)
        memcpy(acc, out, (size_t)D * sizeof(float));
    for (int64_t k = 0; k < n; k++)
        qadd(acc, cols[k], w ? w[k] : 1.0f, w != NULL, D, dt);
    if (acc != out)
        memcpy(out, acc, (size_t)D * sizeof(float));
}

/* Σ x² of the dequantized row in 16 lanes (element i into lane i % 16), then the tree. */
EMB_INLINE float qsumsq_body(const void *col, int32_t D, const EmbDtype dt)
{
    float s[16] = {0}, sc, b;
    emb__q_params(dt, col, D, &sc, &b);
    for (int32_t i = 0; i < D; i++) {
        const float x = emb__q_value(dt, col, i, sc, b);
        s[i % 16] = s[i % 16] + x * x;
    }
    return emb__sumsq_lanes(s);
}

/* One-line wrappers: NAME, then the constant size (0: the run-time D) and dtype. */
#define QGATHER(NAME, N, DT)                                                               \
    static void NAME(float *out, int64_t stride, const void *const *cols, int64_t n,      \
                     int32_t D)                                                            \
    {                                                                                      \
        qgather_body(out, stride, cols, n, N ? N : D, DT);                                 \
    }
#define QPOOL(NAME, N, DT)                                                                 \
    static void NAME(float *out, const void *const *cols, const float *w, int64_t n,      \
                     int64_t ahead, int32_t D, int acc)                                    \
    {                                                                                      \
        (void)ahead;                                                                       \
        qpool_body(out, cols, w, n, N ? N : D, acc, DT);                                   \
    }
#define QBAGS(NAME, N, DT)                                                                 \
    static void NAME(const EmbBagsArgs *a)                                                 \
    {                                                                                      \
        emb__bags_ref(a, N ? N : a->D, DT, qadd);                                          \
    }
#define QSUMSQ(NAME, DT)                                                                   \
    static float NAME(const void *col, int32_t D)                                          \
    {                                                                                      \
        return qsumsq_body(col, D, DT);                                                    \
    }

QGATHER(gather_int8_c, 0, EMB_INT8)
QGATHER(gather_d16_int8_c, 16, EMB_INT8)
QGATHER(gather_d32_int8_c, 32, EMB_INT8)
QGATHER(gather_d64_int8_c, 64, EMB_INT8)
QGATHER(gather_d128_int8_c, 128, EMB_INT8)
QGATHER(gather_d256_int8_c, 256, EMB_INT8)
QPOOL(pool_int8_c, 0, EMB_INT8)
QPOOL(pool_d16_int8_c, 16, EMB_INT8)
QPOOL(pool_d32_int8_c, 32, EMB_INT8)
QPOOL(pool_d64_int8_c, 64, EMB_INT8)
QPOOL(pool_d128_int8_c, 128, EMB_INT8)
QPOOL(pool_d256_int8_c, 256, EMB_INT8)
QBAGS(bags_int8_c, 0, EMB_INT8)
QBAGS(bags_d16_int8_c, 16, EMB_INT8)
QBAGS(bags_d32_int8_c, 32, EMB_INT8)
QBAGS(bags_d64_int8_c, 64, EMB_INT8)
QBAGS(bags_d128_int8_c, 128, EMB_INT8)
QBAGS(bags_d256_int8_c, 256, EMB_INT8)
QSUMSQ(sumsq_int8_c, EMB_INT8)

QGATHER(gather_int4_c, 0, EMB_INT4)
QGATHER(gather_d16_int4_c, 16, EMB_INT4)
QGATHER(gather_d32_int4_c, 32, EMB_INT4)
QGATHER(gather_d64_int4_c, 64, EMB_INT4)
QGATHER(gather_d128_int4_c, 128, EMB_INT4)
QGATHER(gather_d256_int4_c, 256, EMB_INT4)
QPOOL(pool_int4_c, 0, EMB_INT4)
QPOOL(pool_d16_int4_c, 16, EMB_INT4)
QPOOL(pool_d32_int4_c, 32, EMB_INT4)
QPOOL(pool_d64_int4_c, 64, EMB_INT4)
QPOOL(pool_d128_int4_c, 128, EMB_INT4)
QPOOL(pool_d256_int4_c, 256, EMB_INT4)
QBAGS(bags_int4_c, 0, EMB_INT4)
QBAGS(bags_d16_int4_c, 16, EMB_INT4)
QBAGS(bags_d32_int4_c, 32, EMB_INT4)
QBAGS(bags_d64_int4_c, 64, EMB_INT4)
QBAGS(bags_d128_int4_c, 128, EMB_INT4)
QBAGS(bags_d256_int4_c, 256, EMB_INT4)
QSUMSQ(sumsq_int4_c, EMB_INT4)

/* The update's re-quantization: requant.h's C, compiled with this file's flags. */
EMB_REQUANT_KERNEL(requant_int8_c, EMB_INT8)
EMB_REQUANT_KERNEL(requant_int4_c, EMB_INT4)
/* f16 / bf16 rows written with stochastic rounding: sround.h's C, this file's flags. */
EMB_SROUND_KERNEL(requant_f16_c, EMB_F16)
EMB_SROUND_KERNEL(requant_bf16_c, EMB_BF16)

/* The quantized entries of the C level (the _nt pools are the plain ones). */
void emb__kernels_init_quant_c(EmbKernels *k)
{
    k->gather[EMB_INT8] = gather_int8_c;
    k->gather_d[0][EMB_INT8] = gather_d16_int8_c;
    k->gather_d[1][EMB_INT8] = gather_d32_int8_c;
    k->gather_d[2][EMB_INT8] = gather_d64_int8_c;
    k->gather_d[3][EMB_INT8] = gather_d128_int8_c;
    k->gather_d[4][EMB_INT8] = gather_d256_int8_c;
    k->pool[EMB_INT8] = k->pool_nt[EMB_INT8] = pool_int8_c;
    k->pool_d[0][EMB_INT8] = pool_d16_int8_c;
    k->pool_d[1][EMB_INT8] = pool_d32_int8_c;
    k->pool_d[2][EMB_INT8] = pool_d64_int8_c;
    k->pool_d[3][EMB_INT8] = pool_d128_int8_c;
    k->pool_d[4][EMB_INT8] = pool_d256_int8_c;
    k->bags[EMB_INT8] = bags_int8_c;
    k->bags_d[0][EMB_INT8] = bags_d16_int8_c;
    k->bags_d[1][EMB_INT8] = bags_d32_int8_c;
    k->bags_d[2][EMB_INT8] = bags_d64_int8_c;
    k->bags_d[3][EMB_INT8] = bags_d128_int8_c;
    k->bags_d[4][EMB_INT8] = bags_d256_int8_c;
    k->sumsq[EMB_INT8] = sumsq_int8_c;
    k->requant[EMB_INT8] = requant_int8_c;

    k->gather[EMB_INT4] = gather_int4_c;
    k->gather_d[0][EMB_INT4] = gather_d16_int4_c;
    k->gather_d[1][EMB_INT4] = gather_d32_int4_c;
    k->gather_d[2][EMB_INT4] = gather_d64_int4_c;
    k->gather_d[3][EMB_INT4] = gather_d128_int4_c;
    k->gather_d[4][EMB_INT4] = gather_d256_int4_c;
    k->pool[EMB_INT4] = k->pool_nt[EMB_INT4] = pool_int4_c;
    k->pool_d[0][EMB_INT4] = pool_d16_int4_c;
    k->pool_d[1][EMB_INT4] = pool_d32_int4_c;
    k->pool_d[2][EMB_INT4] = pool_d64_int4_c;
    k->pool_d[3][EMB_INT4] = pool_d128_int4_c;
    k->pool_d[4][EMB_INT4] = pool_d256_int4_c;
    k->bags[EMB_INT4] = bags_int4_c;
    k->bags_d[0][EMB_INT4] = bags_d16_int4_c;
    k->bags_d[1][EMB_INT4] = bags_d32_int4_c;
    k->bags_d[2][EMB_INT4] = bags_d64_int4_c;
    k->bags_d[3][EMB_INT4] = bags_d128_int4_c;
    k->bags_d[4][EMB_INT4] = bags_d256_int4_c;
    k->sumsq[EMB_INT4] = sumsq_int4_c;
    k->requant[EMB_INT4] = requant_int4_c;
    k->requant[EMB_F16] = requant_f16_c;
    k->requant[EMB_BF16] = requant_bf16_c;
}
