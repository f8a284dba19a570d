/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * quant_body.h — row-wise quantized rows (EMB_INT8, EMB_INT4) in the SIMD bodies: the
 * access helpers that simd_body.h's pool and bags bodies use for a quantized dtype, and the
 * gather and sumsq bodies of those rows. Included by simd_body.h (after its element access
 * and prefetch helpers), with these primitives of the ISA file:
 *
 *   ld_q8(p) ldn_q8(p, r)   VL (or r < VL) uint8 from p as an f32 vector (zeros after)
 *   ld_q4(p) ldn_q4(p, r)   VL (or r < VL, r even) 4-bit values from the VL / 2 (r / 2)
 *                           bytes at p, element 2j the low nibble of byte j, as f32
 *   ld_q4x2(p, &x0, &x1)    2 VL 4-bit values from the VL bytes at p, as two f32 vectors
 *                           (nibbles split by and / shift, interleaved by byte unpacks)
 *   ld_q4_pairs(p, &e, &o)  the same 2 VL values as the even elements (low nibbles) and
 *                           the odd ones (high nibbles): bytes widened, then and / shift
 *
 * Exact with quant_c.c: per row a = w * scale and c = w * bias (scalars), per element
 * acc + fma(q, a, c) (vfma: the row's term in one rounding, then one add to the sum), rows
 * in bag order; gather q * scale + bias; sumsq in the 16 lanes of the reference.
 */
#ifndef EMB_QUANT_BODY_H
#define EMB_QUANT_BODY_H

#include "dtype.h"

/* VL values of the row from element @i (even for int4). */
static inline vec qld(const EmbDtype dt, const void *row, int32_t i)
{
    const uint8_t *p = (const uint8_t *)row;
    return dt == EMB_INT4 ? ld_q4(p + i / 2) : ld_q8(p + i);
}

static inline vec qldn(const EmbDtype dt, const void *row, int32_t i, int r)
{
    const uint8_t *p = (const uint8_t *)row;
    return dt == EMB_INT4 ? ldn_q4(p + i / 2, r) : ldn_q8(p + i, r);
}

/* The row's w * scale and w * bias, broadcast. int4's f16 pair converted by F16C in one
 * instruction (exact, as emb__f16_to_f32; a NaN comes out quiet, and NaN it stays). */
EMB_INLINE void qparams(const EmbDtype dt, const void *row, int32_t D, float w, vec *a, vec *c)
{
    float s, b;
    if (dt == EMB_INT4) {
        int32_t u;
        memcpy(&u, (const uint8_t *)row + D / 2, 4);
        const __m128 sb = _mm_cvtph_ps(_mm_cvtsi32_si128(u));
        s = _mm_cvtss_f32(sb);
        b = _mm_cvtss_f32(_mm_movehdup_ps(sb));
    } else { /* two 4-byte reads: each a broadcast from memory (one 8-byte read was split
              * by shifts and moves, 6 instructions a row) */
        memcpy(&s, (const uint8_t *)row + D, 4);
        memcpy(&b, (const uint8_t *)row + D + 4, 4);
    }
    *a = vset1(w * s);
    *c = vset1(w * b);
}

/* q * a + c: multiply, then add (gather, sumsq: the dequantized value). */
EMB_INLINE vec qval(vec q, vec a, vec c)
{
    return vadd(vmul(q, a), c);
}

/* acc + fma(q, a, c): a row's term added to a sum (pool, bags). The fused term is off the
 * sum's dependency chain: one add a row on it. */
EMB_INLINE vec qacc(vec acc, vec q, vec a, vec c)
{
    return vadd(acc, vfma(q, a, c));
}

/* Adds nv vectors of the row (weight w) from element @off to acc (the last one partial:
 * @tail elements); the pool and bags bodies of simd_body.h. */
EMB_INLINE void qadd_vecs(vec *acc, const void *row, int32_t off, const int nv,
                          const int partial, int tail, float w, const int32_t D,
                          const EmbDtype dt)
{
    vec s, b;
    qparams(dt, row, D, w, &s, &b);
    if (dt == EMB_INT4 && !partial && nv % 2 == 0) { /* two vectors a load */
        const uint8_t *p = (const uint8_t *)row + off / 2;
        UNROLL_BLK for (int j = 0; j < nv; j += 2) {
            vec x0, x1;
            ld_q4x2(p + j * VL / 2, &x0, &x1);
            acc[j] = qacc(acc[j], x0, s, b);
            acc[j + 1] = qacc(acc[j + 1], x1, s, b);
        }
        return;
    }
    UNROLL_BLK for (int j = 0; j < nv; j++) {
        const bool part = partial && j == nv - 1;
        const int32_t i = off + j * VL;
        acc[j] = qacc(acc[j], part ? qldn(dt, row, i, tail) : qld(dt, row, i), s, b);
    }
}

/* int4 rows of the bags body's paired layout (simd_body.h's bag_add): VL bytes give the
 * even elements of 2 VL in acc[2m] and the odd ones in acc[2m + 1] (one widening, an and
 * and a shift a load), bag_store interleaves them; each element summed as qadd_vecs sums it. */
EMB_INLINE void qadd_pairs(vec *acc, const void *row, int32_t off, const int nv, float w,
                           const int32_t D)
{
    vec s, b;
    qparams(EMB_INT4, row, D, w, &s, &b);
    const uint8_t *p = (const uint8_t *)row + off / 2;
    UNROLL_BLK for (int m = 0; m < nv / 2; m++) {
        vec e, o;
        ld_q4_pairs(p + m * VL, &e, &o);
        acc[2 * m] = qacc(acc[2 * m], e, s, b);
        acc[2 * m + 1] = qacc(acc[2 * m + 1], o, s, b);
    }
}

/* ---- gather, sumsq --------------------------------------------------------------------- */

EMB_INLINE void qgather_body(float *out, int64_t stride, const void *const *cols, int64_t n,
                             const int32_t D, const EmbDtype dt)
{
    const int32_t bytes = (int32_t)emb__row_bytes(dt, D);
    for (int64_t k = 0; k < n; k++) {
        if (k + EMB_PF_DIST < n)
            prefetch_col(cols[k + EMB_PF_DIST], bytes);
        const void *p = cols[k];
        float *o = out + k * stride;
        vec s, b;
        qparams(dt, p, D, 1.0f, &s, &b);
        int32_t i = 0;
        if (dt == EMB_INT4)
            for (; i + 2 * VL <= D; i += 2 * VL) {
                vec x0, x1;
                ld_q4x2((const uint8_t *)p + i / 2, &x0, &x1);
                st_f32(o + i, qval(x0, s, b));
                st_f32(o + i + VL, qval(x1, s, b));
            }
        for (; i + VL <= D; i += VL)
            st_f32(o + i, qval(qld(dt, p, i), s, b));
        if (i < D)
            stn_f32(o + i, qval(qldn(dt, p, i, D - i), s, b), D - i);
    }
}

/* Σ x² of the dequantized row: element i into lane i % 16, then the reference's tree. A
 * partial vector's lanes past the row hold q = 0, so x = bias there: masked off. */
static inline float qsumsq_body(const void *col, int32_t D, const EmbDtype dt)
{
    vec a[16 / VL], s, b;
    qparams(dt, col, D, 1.0f, &s, &b);
    for (int j = 0; j < 16 / VL; j++)
        a[j] = vzero();
    int32_t i = 0;
    for (; i + 16 <= D; i += 16)
        for (int j = 0; j < 16 / VL; j++) {
            const vec x = qval(qld(dt, col, i + j * VL), s, b);
            a[j] = vadd(a[j], vmul(x, x));
        }
    for (int j = 0; j < 16 / VL && i + j * VL < D; j++) {
        const int r = EMB_MIN(VL, D - (i + j * VL));
        float t[VL];
        st_f32(t, qval(r == VL ? qld(dt, col, i + j * VL) : qldn(dt, col, i + j * VL, r), s, b));
        const vec x = ldn_f32(t, r);
        a[j] = vadd(a[j], vmul(x, x));
    }
    float l[16];
    for (int j = 0; j < 16 / VL; j++)
        st_f32(l + j * VL, a[j]);
    return emb__sumsq_lanes(l);
}

/* ---- the one-line wrappers of the ISA files ------------------------------------------- */

#define QGATHER(NAME, N, DT)                                                               \
    static void NAME(float *out, int64_t stride, const void *const *cols, int64_t n,      \
                     int32_t D)                                                            \
    {                                                                                      \
        qgather_body(out, stride, cols, n, N ? N : D, DT);                                 \
    }
#define QSUMSQ(NAME, DT)                                                                   \
    static float NAME(const void *col, int32_t D)                                          \
    {                                                                                      \
        return qsumsq_body(col, D, DT);                                                    \
    }

#endif
