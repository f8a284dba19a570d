/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * quant.c — whole rows of any element type as f32 (core): reading a row (dequantizing a
 * quantized one), writing one (quantizing: scale and bias from the row's min and max, as
 * FBGEMM's prepack does), and the finite check of a quantized row's scale and bias.
 */
#include <math.h>
#include <string.h>

#include "dtype.h"
#include "rng.h"

void emb__row_load(EmbDtype dt, const void *row, int32_t D, float *x)
{
    if (!emb__dtype_quantized(dt)) {
        for (int32_t i = 0; i < D; i++)
            x[i] = emb__load(dt, row, i);
        return;
    }
    float s, b;
    emb__q_params(dt, row, D, &s, &b);
    if (dt == EMB_INT4) { /* a byte's two elements at once (D is even): emb__q_value's values */
        const unsigned char *p = (const unsigned char *)row;
        for (int32_t j = 0; j < D / 2; j++) {
            x[2 * j] = (float)(p[j] & 15) * s + b;
            x[2 * j + 1] = (float)(p[j] >> 4) * s + b;
        }
        return;
    }
    for (int32_t i = 0; i < D; i++)
        x[i] = emb__q_value(dt, row, i, s, b);
}

/* The row's scale and bias (int4: both rounded to f16 first, bias = the rounded minimum). */
static void q_params_of(EmbDtype dt, const float *x, int32_t D, float *scale, float *bias,
                        float *inv)
{
    /* 8 running minima and maxima (one dependency chain each: a vector), all from x[0], so
       a NaN is skipped unless it is x[0] (then the row's scale and bias are NaN) */
    float lo8[8], hi8[8];
    for (int j = 0; j < 8; j++)
        lo8[j] = hi8[j] = x[0];
    int32_t i = 0;
    for (; i + 8 <= D; i += 8)
        for (int j = 0; j < 8; j++) {
            lo8[j] = x[i + j] < lo8[j] ? x[i + j] : lo8[j];
            hi8[j] = x[i + j] > hi8[j] ? x[i + j] : hi8[j];
        }
    for (; i < D; i++) {
        lo8[0] = x[i] < lo8[0] ? x[i] : lo8[0];
        hi8[0] = x[i] > hi8[0] ? x[i] : hi8[0];
    }
    float lo = lo8[0], hi = hi8[0];
    for (int j = 1; j < 8; j++) {
        lo = lo8[j] < lo ? lo8[j] : lo;
        hi = hi8[j] > hi ? hi8[j] : hi;
    }
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

/* q = round((x - bias) / scale) to nearest, in [0, qmax] (NaN: 0). */
static int q_nearest(float x, float bias, float inv, int qmax)
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
static inline unsigned char q_stochastic(float x, float bias, float inv, float qmax, float u)
{
    float w = (x - bias) * inv + u;
    w = w > 0.0f ? w : 0.0f;
    w = w < qmax ? w : qmax;
    return (unsigned char)(int)w;
}

/* Elements quantized per block: the block's draws first (independent multiplies), then its
 * values (a loop without calls). A multiple of Q_PER_DRAW. */
#define Q_BLOCK 64
/*
 * Elements rounded by one 64-bit draw, 16 bits each: element i of a row at step s takes bits
 * [16 (i % 4), 16 (i % 4) + 16) of draw s * ceil(D / 4) + i / 4 of the stream (table seed,
 * row). 16 bits are ample for rounding to 8 or 4 bits; a draw (two 64-bit mixes) an element
 * was most of the quantization's time.
 */
#define Q_PER_DRAW 4

void emb__row_quantize(EmbDtype dt, void *row, int32_t D, const float *x, const uint64_t *key)
{
    float s, b, inv;
    q_params_of(dt, x, D, &s, &b, &inv);
    const int qmax = dt == EMB_INT4 ? 15 : 255;
    unsigned char *p = (unsigned char *)row;
    const uint64_t h = key ? emb__rng_stream(key[0], key[1]) : 0;
    for (int32_t i0 = 0; i0 < D; i0 += Q_BLOCK) {
        const int32_t n = D - i0 < Q_BLOCK ? D - i0 : Q_BLOCK;
        unsigned char q[Q_BLOCK];
        if (key) {
            float u[Q_BLOCK];
            const uint64_t c0 = key[2] * (uint64_t)((D + Q_PER_DRAW - 1) / Q_PER_DRAW) +
                                (uint64_t)(i0 / Q_PER_DRAW);
            for (int32_t g = 0; g < (n + Q_PER_DRAW - 1) / Q_PER_DRAW; g++) {
                const uint64_t r = emb__rng_u64_at(h, c0 + (uint64_t)g);
                for (int j = 0; j < Q_PER_DRAW; j++)
                    u[g * Q_PER_DRAW + j] = (float)((r >> (16 * j)) & 0xffff) * (1.0f / 65536.0f);
            }
            for (int32_t k = 0; k < n; k++)
                q[k] = q_stochastic(x[i0 + k], b, inv, (float)qmax, u[k]);
        } else {
            for (int32_t k = 0; k < n; k++)
                q[k] = (unsigned char)q_nearest(x[i0 + k], b, inv, qmax);
        }
        if (dt == EMB_INT4) /* D, i0 and n even: element 2j in the low nibble */
            for (int32_t k = 0; k < n; k += 2)
                p[(i0 + k) / 2] = (unsigned char)(q[k] | q[k + 1] << 4);
        else
            memcpy(p + i0, q, (size_t)n);
    }
    unsigned char *sb = p + emb__q_value_bytes(dt, D);
    if (dt == EMB_INT4) {
        const uint16_t hb[2] = {emb__f32_to_f16(s), emb__f32_to_f16(b)};
        memcpy(sb, hb, sizeof hb);
    } else {
        const float f[2] = {s, b};
        memcpy(sb, f, sizeof f);
    }
}

void emb__row_store(EmbDtype dt, void *row, int32_t D, const float *x)
{
    if (emb__dtype_quantized(dt)) {
        emb__row_quantize(dt, row, D, x, NULL);
        return;
    }
    for (int32_t i = 0; i < D; i++)
        emb__store(dt, row, i, x[i]);
}

int emb__q_row_finite(EmbDtype dt, const void *row, int32_t D)
{
    float s, b;
    emb__q_params(dt, row, D, &s, &b);
    return isfinite(s) && isfinite(b);
}
