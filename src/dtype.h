/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dtype.h — the storage element types (core): exact scalar conversions between f32 and the
 * 16-bit types, and typed element access. The C reference kernels, the initializers, the
 * variable ops and the pullback use these; SIMD variants agree with them bit for bit.
 */
#ifndef EMB_DTYPE_H
#define EMB_DTYPE_H

#include <stdint.h>
#include <string.h>

#include "embtables/common.h"

/* EMB_F32, EMB_F16, EMB_BF16, EMB_INT8, EMB_INT4: the dtype index of every per-dtype
 * table. */
#define EMB_NDTYPES 5

static inline float emb__u32_as_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint32_t emb__f32_as_u32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* bf16 -> f32: exact (a bf16 is the upper half of a binary32). */
static inline float emb__bf16_to_f32(uint16_t h)
{
    return emb__u32_as_f32((uint32_t)h << 16);
}

/* f32 -> bf16, round to nearest even; NaN stays a (quiet) NaN. */
static inline uint16_t emb__f32_to_bf16(float f)
{
    uint32_t u = emb__f32_as_u32(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* f16 -> f32: exact, subnormals included. */
static inline float emb__f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f)
        return emb__u32_as_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24 is exact in binary32 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return emb__u32_as_f32(sign | ((exp + 112) << 23) | (man << 13));
}

/* f32 -> f16, round to nearest even (as F16C's vcvtps2ph with rounding imm 0). */
static inline uint16_t emb__f32_to_f16(float f)
{
    uint32_t u = emb__f32_as_u32(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00 | ((a >> 13) & 0x3ff));
    if (a >= 0x477ff000u) /* rounds to >= 65520: infinity */
        return (uint16_t)(sign | 0x7c00);
    if (a < 0x38800000u) { /* below the smallest normal f16: subnormal or zero */
        if (a < 0x33000000u)
            return sign; /* < half the smallest subnormal: rounds to zero */
        uint32_t e = a >> 23, m = (a & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* 14 .. 24 */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1)))
            r++;
        return (uint16_t)(sign | r);
    }
    a += 0xfffu + ((a >> 13) & 1) - 0x38000000u; /* rebias 127 -> 15, round */
    return (uint16_t)(sign | (a >> 13));
}

/* ---- row-wise quantized rows (EMB_INT8, EMB_INT4) -------------------------------------- */

/* Whether @dt is a row-wise quantized type: a row is its values, then a scale and a bias. */
static inline int emb__dtype_quantized(EmbDtype dt)
{
    return dt == EMB_INT8 || dt == EMB_INT4;
}

/* The element type the update computes a row in: f32 for the quantized types (their rows
 * are dequantized, updated and quantized again), the dtype itself for the others. */
static inline EmbDtype emb__dtype_compute(EmbDtype dt)
{
    return emb__dtype_quantized(dt) ? EMB_F32 : dt;
}

/* Bytes of the quantized values of a row of D elements (where the scale starts). */
static inline size_t emb__q_value_bytes(EmbDtype dt, int32_t D)
{
    return dt == EMB_INT4 ? (size_t)D / 2 : (size_t)D;
}

/*
 * Bytes of one row of D elements of @dt: D x element size, or the values then the scale and
 * bias of a quantized row (int8: D + 8, int4: D / 2 + 4). 0 for an unknown dtype, D < 1, or
 * an odd D in int4. Every stride and row size is computed from this, never from D x size.
 */
static inline size_t emb__row_bytes(EmbDtype dt, int32_t D)
{
    if (D < 1)
        return 0;
    switch (dt) {
    case EMB_F32: return (size_t)D * 4;
    case EMB_F16:
    case EMB_BF16: return (size_t)D * 2;
    case EMB_INT8: return (size_t)D + 8;
    case EMB_INT4: return D % 2 ? 0 : (size_t)D / 2 + 4;
    default: return 0;
    }
}

/* Stores the scale and bias of a quantized row of D elements after its values (EMB_INT4:
   f16 each; unaligned: memcpy), as emb__q_params reads them. */
static inline void emb__q_store_grid(EmbDtype dt, void *row, int32_t D, float s, float b)
{
    unsigned char *sb = (unsigned char *)row + emb__q_value_bytes(dt, D);
    if (dt == EMB_INT4) {
        const uint16_t hb[2] = {emb__f32_to_f16(s), emb__f32_to_f16(b)};
        memcpy(sb, hb, sizeof hb);
    } else {
        const float f[2] = {s, b};
        memcpy(sb, f, sizeof f);
    }
}

/* The scale and bias of a quantized row of D elements (unaligned: memcpy). */
static inline void emb__q_params(EmbDtype dt, const void *row, int32_t D, float *scale,
                                 float *bias)
{
    const unsigned char *p = (const unsigned char *)row + emb__q_value_bytes(dt, D);
    if (dt == EMB_INT4) {
        uint16_t h[2];
        memcpy(h, p, 4);
        *scale = emb__f16_to_f32(h[0]);
        *bias = emb__f16_to_f32(h[1]);
    } else {
        float f[2];
        memcpy(f, p, 8);
        *scale = f[0];
        *bias = f[1];
    }
}

/* The quantized value of element i (int4: low nibble of byte i / 2 for even i). */
static inline int emb__q_get(EmbDtype dt, const void *row, int32_t i)
{
    const unsigned char *p = (const unsigned char *)row;
    if (dt == EMB_INT4)
        return (p[i / 2] >> (4 * (i & 1))) & 15;
    return p[i];
}

/* Element i of a quantized row, given its scale and bias: q * scale + bias (multiply, then
 * add: every kernel computes exactly this). */
static inline float emb__q_value(EmbDtype dt, const void *row, int32_t i, float scale,
                                 float bias)
{
    return (float)emb__q_get(dt, row, i) * scale + bias;
}

/* ---- whole rows as f32 (quant.c) ------------------------------------------------------ */

/* x[0 .. D) = the row's values (dequantized for the quantized types). */
void emb__row_load(EmbDtype dt, const void *row, int32_t D, float *x);
/* The row = x[0 .. D) in @dt: rounded to nearest even, or quantized with round to nearest
 * (emb__row_quantize with no key). */
void emb__row_store(EmbDtype dt, void *row, int32_t D, const float *x);
/*
 * A quantized row from x[0 .. D) (a zero min or max taken as +0; a NaN or an infinity
 * anywhere makes scale and bias NaN and every q 0: the row reads NaN whole): bias = min x, scale = (max - min) / 255 (int8), or for
 * int4 bias = f16(min x), scale = f16((max - bias) / 15) (1 when that is 0: FBGEMM's rule);
 * q = (x - bias) / scale clamped to [0, 255] / [0, 15], rounded to nearest, or with @key =
 * {seed, stream, step} stochastically: floor(v + u), u uniform in [0, 1) from 16 bits of
 * the counter-based generator (rng.h): bits 16 (i % 4) .. 16 (i % 4) + 15 of its draw at
 * (seed, stream, step * ceil(D / 4) + i / 4), the same for any thread.
 */
void emb__row_quantize(EmbDtype dt, void *row, int32_t D, const float *x, const uint64_t *key);
/* The first element of a quantized row that reads NaN or infinite, as a gather reads it
   (q * scale + bias) or a bag (fma(q, scale, bias)); -1 when every element is finite. */
int32_t emb__q_row_nonfinite(EmbDtype dt, const void *row, int32_t D);

/* Element i of a column, typed: the C reference kernels stamp one copy per dtype. */
static inline float emb__ld_f32(const void *p, int32_t i)
{
    return ((const float *)p)[i];
}
static inline float emb__ld_f16(const void *p, int32_t i)
{
    return emb__f16_to_f32(((const uint16_t *)p)[i]);
}
static inline float emb__ld_bf16(const void *p, int32_t i)
{
    return emb__bf16_to_f32(((const uint16_t *)p)[i]);
}
static inline void emb__st_f32(void *p, int32_t i, float v)
{
    ((float *)p)[i] = v;
}
static inline void emb__st_f16(void *p, int32_t i, float v)
{
    ((uint16_t *)p)[i] = emb__f32_to_f16(v);
}
static inline void emb__st_bf16(void *p, int32_t i, float v)
{
    ((uint16_t *)p)[i] = emb__f32_to_bf16(v);
}

/* Element i of a column of dtype @dt: run-time (initializers, variable ops, pullback), or a
 * constant in a kernel body, where the switch folds away. */
static inline float emb__load(EmbDtype dt, const void *col, int32_t i)
{
    switch (dt) {
    case EMB_F16: return emb__ld_f16(col, i);
    case EMB_BF16: return emb__ld_bf16(col, i);
    default: return emb__ld_f32(col, i);
    }
}

/* Stores @v, rounded to nearest even in @dt, as element i of a column. */
static inline void emb__store(EmbDtype dt, void *col, int32_t i, float v)
{
    switch (dt) {
    case EMB_F16: emb__st_f16(col, i, v); break;
    case EMB_BF16: emb__st_bf16(col, i, v); break;
    default: emb__st_f32(col, i, v); break;
    }
}

/* Element i of a row of D elements of any dtype (a quantized row dequantized). */
static inline float emb__row_elem(EmbDtype dt, const void *row, int32_t D, int32_t i)
{
    float s, b;
    if (!emb__dtype_quantized(dt))
        return emb__load(dt, row, i);
    emb__q_params(dt, row, D, &s, &b);
    return emb__q_value(dt, row, i, s, b);
}

#endif
