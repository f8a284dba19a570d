/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * quant.c — whole rows of any element type as f32 (core): reading a row (dequantizing a
 * quantized one), writing one (quantizing: scale and bias from the row's min and max, as
 * FBGEMM's prepack does), and the finite check of a quantized row's scale and bias.
 */
#include <math.h>

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
    for (int32_t i = 0; i < D; i++)
        x[i] = emb__q_value(dt, row, i, s, b);
}

/* The row's scale and bias (int4: both rounded to f16 first, bias = the rounded minimum). */
static void q_params_of(EmbDtype dt, const float *x, int32_t D, float *scale, float *bias,
                        float *inv)
{
    float lo = x[0], hi = x[0];
    for (int32_t i = 1; i < D; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
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

/* q = round((x - bias) / scale) in [0, qmax]: to nearest, or stochastically with u. */
static int q_of(float x, float bias, float inv, int qmax, float u, int stochastic)
{
    const float v = (x - bias) * inv;
    float q = stochastic ? floorf(v + u) : nearbyintf(v);
    q = q < 0.0f ? 0.0f : q > (float)qmax ? (float)qmax : q;
    return q == q ? (int)q : 0;
}

void emb__row_quantize(EmbDtype dt, void *row, int32_t D, const float *x, const uint64_t *key)
{
    float s, b, inv;
    q_params_of(dt, x, D, &s, &b, &inv);
    const int qmax = dt == EMB_INT4 ? 15 : 255;
    unsigned char *p = (unsigned char *)row;
    if (dt == EMB_INT4)
        memset(p, 0, (size_t)D / 2);
    for (int32_t i = 0; i < D; i++) {
        const float u = key ? emb__rng_unit(key[0], key[1], key[2] * (uint64_t)D + (uint64_t)i)
                            : 0.0f;
        const int q = q_of(x[i], b, inv, qmax, u, key != NULL);
        if (dt == EMB_INT4)
            p[i / 2] = (unsigned char)(p[i / 2] | (q << (4 * (i & 1))));
        else
            p[i] = (unsigned char)q;
    }
    unsigned char *sb = p + emb__q_value_bytes(dt, D);
    if (dt == EMB_INT4) {
        const uint16_t h[2] = {emb__f32_to_f16(s), emb__f32_to_f16(b)};
        memcpy(sb, h, sizeof h);
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
