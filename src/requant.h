/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * requant.h — a row quantized from f32, as inline C: quant.c's emb__row_quantize (the
 * reference: rounding to nearest, or stochastically for the update) and the re-quantization
 * kernels of kernels/ (`requant[dt]`), which compile this same C with each ISA's flags
 * (-ffp-contract=off: no fused multiply-add) so the compiler vectorizes the draws' 64-bit
 * multiplies and the rounding; checkasm compares them with the C level bit for bit.
 * dtype.h's emb__row_quantize says what a row becomes.
 */
#ifndef EMB_REQUANT_H
#define EMB_REQUANT_H

#include <math.h>
#include <string.h>

#include "dtype.h"
#include "rng.h"

/* Elements quantized per block: the block's draws first (independent multiplies), then its
 * values (a loop without calls). A multiple of EMB_Q_PER_DRAW. */
#define EMB_Q_BLOCK 64
/* Elements rounded by one 64-bit draw, 16 bits each (dtype.h's emb__row_quantize). 16 bits
 * are ample for rounding to 8 or 4 bits; a draw (two 64-bit mixes) an element was most of
 * the quantization's time. */
#define EMB_Q_PER_DRAW 4

/*
 * The row's scale, bias and the reciprocal the rounding multiplies by, from the min and max
 * of x[0 .. D) (int4: both rounded to f16 first, bias = the rounded minimum). The min and
 * max run as 8 chains (a vector), all from x[0]; a zero min or max is +0 whatever zeros
 * the row holds, so neither depends on the order the elements were compared in (any
 * vector width gives the same bits). A row with a NaN or an infinity anywhere (or whose
 * max - min overflows) gets the NaN grid: scale and bias NaN, inv 0, so every q is 0 and
 * every element reads NaN (common.h's rule: a non-finite value makes its row NaN whole).
 * The 8 sums of x * 0 tell it: +-0 for finite x, NaN once any element is not.
 */
static inline void emb__q_grid(EmbDtype dt, const float *x, int32_t D, float *scale,
                               float *bias, float *inv)
{
    float lo8[8], hi8[8], z8[8];
    for (int j = 0; j < 8; j++) {
        lo8[j] = hi8[j] = x[0];
        z8[j] = 0.0f;
    }
    int32_t i = 0;
    for (; i + 8 <= D; i += 8)
        for (int j = 0; j < 8; j++) {
            lo8[j] = x[i + j] < lo8[j] ? x[i + j] : lo8[j];
            hi8[j] = x[i + j] > hi8[j] ? x[i + j] : hi8[j];
            z8[j] += x[i + j] * 0.0f;
        }
    for (; i < D; i++) {
        lo8[0] = x[i] < lo8[0] ? x[i] : lo8[0];
        hi8[0] = x[i] > hi8[0] ? x[i] : hi8[0];
        z8[0] += x[i] * 0.0f;
    }
    float lo = lo8[0], hi = hi8[0], z = z8[0];
    for (int j = 1; j < 8; j++) {
        lo = lo8[j] < lo ? lo8[j] : lo;
        hi = hi8[j] > hi ? hi8[j] : hi;
        z += z8[j];
    }
    z += (hi - lo) * 0.0f;
    if (z != z) { /* a NaN or an infinity in the row: NaN whole */
        *scale = *bias = NAN;
        *inv = 0.0f;
        return;
    }
    lo = lo == 0.0f ? 0.0f : lo; /* -0 -> +0 */
    hi = hi == 0.0f ? 0.0f : hi;
    if (dt == EMB_INT8) {
        *bias = lo;
        *scale = (hi - lo) / 255.0f;
        *inv = 255.0f / ((hi - lo) + 1e-8f);
        return;
    }
    *bias = emb__f16_to_f32(emb__f32_to_f16(lo));
    float s = emb__f16_to_f32(emb__f32_to_f16((hi - *bias) / 15.0f));
    if (!(s > 0.0f) || isinf(1.0f / s))
        s = 1.0f; /* a constant row (or one too narrow for f16): every q is 0 */
    *scale = s;
    *inv = 1.0f / s;
}

/* q = round((x - bias) / scale) to nearest, in [0, qmax] (NaN: 0; the NaN grid: 0). */
static inline int emb__q_nearest(float x, float bias, float inv, int qmax)
{
    float q = nearbyintf((x - bias) * inv);
    q = q < 0.0f ? 0.0f : q > (float)qmax ? (float)qmax : q;
    return q == q ? (int)q : 0;
}

/*
 * q = floor((x - bias) / scale + u) in [0, qmax] (NaN: 0): rounded stochastically by the
 * uniform u. Clamped before it is truncated, which is the floor of a value >= 0 (and the
 * same as flooring first: qmax is whole); no libm call, so the loop over a row vectorizes.
 */
static inline unsigned char emb__q_stochastic(float x, float bias, float inv, float qmax,
                                              float u)
{
    float w = (x - bias) * inv + u;
    w = w > 0.0f ? w : 0.0f;
    w = w < qmax ? w : qmax;
    return (unsigned char)(int)w;
}

/* The uniforms of elements [0, n) of a block whose first draw is @c0 of the stream @h. */
static inline void emb__q_uniforms(float *u, int32_t n, uint64_t h, uint64_t c0)
{
    uint64_t d[EMB_Q_BLOCK / EMB_Q_PER_DRAW];
    const int32_t nd = (n + EMB_Q_PER_DRAW - 1) / EMB_Q_PER_DRAW;
    for (int32_t g = 0; g < nd; g++)
        d[g] = emb__rng_u64_at(h, c0 + (uint64_t)g);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint16_t f[EMB_Q_BLOCK]; /* field j of draw g is 16-bit word 4 g + j */
    memcpy(f, d, sizeof f);
    for (int32_t k = 0; k < n; k++)
        u[k] = (float)f[k] * (1.0f / 65536.0f);
#else
    for (int32_t k = 0; k < n; k++)
        u[k] = (float)((d[k / EMB_Q_PER_DRAW] >> (16 * (k % EMB_Q_PER_DRAW))) & 0xffff) *
               (1.0f / 65536.0f);
/* A kernel @NAME (emb_requant_fn, kernels.h) of dtype @DT: emb__q_row compiled in the file
 * that stamps it (the C reference, or an ISA file with its flags). */
#define EMB_REQUANT_KERNEL(NAME, DT)                                                       \
    static void NAME(void *row, int32_t D, const float *x, const uint64_t *key)           \
    {                                                                                      \
        emb__q_row(DT, row, D, x, key);                                                    \
    }

#endif
}

/* The quantized row of x[0 .. D): to nearest (@key NULL) or stochastically keyed by @key =
 * {seed, stream, step}. */
static inline void emb__q_row(EmbDtype dt, void *row, int32_t D, const float *x,
                              const uint64_t *key)
{
    float s, b, inv;
    emb__q_grid(dt, x, D, &s, &b, &inv);
    const int qmax = dt == EMB_INT4 ? 15 : 255;
    unsigned char *p = (unsigned char *)row;
    const uint64_t h = key ? emb__rng_stream(key[0], key[1]) : 0;
    const uint64_t draws = (uint64_t)((D + EMB_Q_PER_DRAW - 1) / EMB_Q_PER_DRAW);
    for (int32_t i0 = 0; i0 < D; i0 += EMB_Q_BLOCK) {
        const int32_t n = D - i0 < EMB_Q_BLOCK ? D - i0 : EMB_Q_BLOCK;
        unsigned char q[EMB_Q_BLOCK];
        if (key) {
            float u[EMB_Q_BLOCK];
            emb__q_uniforms(u, n, h, key[2] * draws + (uint64_t)(i0 / EMB_Q_PER_DRAW));
            for (int32_t k = 0; k < n; k++)
                q[k] = emb__q_stochastic(x[i0 + k], b, inv, (float)qmax, u[k]);
        } else {
            for (int32_t k = 0; k < n; k++)
                q[k] = (unsigned char)emb__q_nearest(x[i0 + k], b, inv, qmax);
        }
        if (dt == EMB_INT4) /* D, i0 and n even: element 2j in the low nibble */
            for (int32_t k = 0; k < n; k += 2)
                p[(i0 + k) / 2] = (unsigned char)(q[k] | q[k + 1] << 4);
        else
            memcpy(p + i0, q, (size_t)n);
    }
    emb__q_store_grid(dt, row, D, s, b);
}

/* A kernel @NAME (emb_requant_fn, kernels.h) of dtype @DT: emb__q_row compiled in the file
 * that stamps it (the C reference, or an ISA file with its flags). */
#define EMB_REQUANT_KERNEL(NAME, DT)                                                       \
    static void NAME(void *row, int32_t D, const float *x, const uint64_t *key)           \
    {                                                                                      \
        emb__q_row(DT, row, D, x, key);                                                    \
    }

#endif
