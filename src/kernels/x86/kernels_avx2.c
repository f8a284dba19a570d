/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * kernels_avx2.c — the AVX2 (+F16C) kernels: 8-float vectors, the bodies of simd_body.h
 * stamped as one-line wrappers (the optimizer rows included).
 * Compiled in its own static library with the AVX2 flags of kernels/meson.build
 * (-ffp-contract=off, with FMA and F16C); called only after the dispatch saw all three.
 *
 * Tails: f32 uses vmaskmov (no fault past the mask); the 16-bit types go through a small
 * stack buffer (tails are at most 7 elements per column).
 *
 * Over 500 lines on purpose (scripts/code_metrics.py's exception list): one ISA's vector
 * primitives and every stamped wrapper and registration belong to one compilation unit
 * compiled with that ISA's flags; the bodies themselves are simd_body.h's.
 */
#include <immintrin.h>
#include <math.h>

#include "dtype.h"
#include "requant.h"
#include "kernels/x86/sround_body.h"
#include "sround.h"

#define VL 8
#define BLK 8
typedef __m256 vec;

static inline vec vzero(void)
{
    return _mm256_setzero_ps();
}
static inline vec vset1(float x)
{
    return _mm256_set1_ps(x);
}
static inline vec vadd(vec a, vec b)
{
    return _mm256_add_ps(a, b);
}
static inline vec vsub(vec a, vec b)
{
    return _mm256_sub_ps(a, b);
}
/* x > acc ? x : acc per lane (MAXPS returns its second operand unless the first is
   greater: NaNs and equal values keep acc), the C reference's max */
static inline vec vmax(vec x, vec acc)
{
    return _mm256_max_ps(x, acc);
}
/* a < b ? a : b per lane (MINPS returns its second operand unless the first is less) */
static inline vec vmin(vec a, vec b)
{
    return _mm256_min_ps(a, b);
}
static inline vec vmul(vec a, vec b)
{
    return _mm256_mul_ps(a, b);
}
/* a * b + c, one rounding (an explicit FMA: -ffp-contract=off fuses nothing else). */
static inline vec vfma(vec a, vec b, vec c)
{
    return _mm256_fmadd_ps(a, b, c);
}
static inline vec vdiv(vec a, vec b)
{
    return _mm256_div_ps(a, b);
}
static inline vec vsqrt(vec a)
{
    return _mm256_sqrt_ps(a);
}
/* FTRL's new weight: |l| > l1 ? (copysign(l1, l) - l) / quad : +0 (l1 >= 0). */
static inline vec vftrl_w(vec l, vec l1, vec quad)
{
    const vec sign = _mm256_set1_ps(-0.0f);
    const vec over = _mm256_cmp_ps(_mm256_andnot_ps(sign, l), l1, _CMP_GT_OQ);
    const vec cs = _mm256_or_ps(_mm256_and_ps(sign, l), _mm256_andnot_ps(sign, l1));
    return _mm256_and_ps(over, _mm256_div_ps(_mm256_sub_ps(cs, l), quad));
}
/* acc + x² (lanes i % 8 are the vector's lanes). */
static inline __m256 sq8_add(__m256 acc, vec x)
{
    return vadd(acc, vmul(x, x));
}

/* Lanes [0, r) set: a window of 8 into 8 ones then 8 zeros. */
static inline __m256i tail_mask(int r)
{
    static const int32_t m[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(m + 8 - r));
}

/* ---- f32 ----------------------------------------------------------------------------- */

static inline vec ld_f32(const float *p)
{
    return _mm256_loadu_ps(p);
}
static inline vec ldn_f32(const float *p, int r)
{
    return _mm256_maskload_ps(p, tail_mask(r));
}
static inline void st_f32(float *p, vec v)
{
    _mm256_storeu_ps(p, v);
}
static inline void stn_f32(float *p, vec v, int r)
{
    _mm256_maskstore_ps(p, tail_mask(r), v);
}
static inline void stnt_f32(float *p, vec v)
{
    _mm256_stream_ps(p, v);
}

/* ---- 16-bit storage ------------------------------------------------------------------ */

static inline __m128i ld_u16(const uint16_t *p)
{
    return _mm_loadu_si128((const __m128i *)p);
}
static inline __m128i ldn_u16(const uint16_t *p, int r)
{
    uint16_t t[VL] = {0};
    memcpy(t, p, (size_t)r * sizeof *p);
    return ld_u16(t);
}
static inline void stn_u16(uint16_t *p, __m128i h, int r)
{
    uint16_t t[VL];
    _mm_storeu_si128((__m128i *)t, h);
    memcpy(p, t, (size_t)r * sizeof *p);
}
static inline void st_u16(uint16_t *p, __m128i h)
{
    _mm_storeu_si128((__m128i *)p, h);
}
static inline void stnt_u16(uint16_t *p, __m128i h)
{
    _mm_stream_si128((__m128i *)p, h);
}

static inline vec cvt_from_f16(__m128i h)
{
    return _mm256_cvtph_ps(h);
}
static inline __m128i cvt_to_f16(vec v)
{
    return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
}
static inline vec cvt_from_bf16(__m128i h)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
/* As emb__f32_to_bf16: round to nearest even, a NaN stays a quiet NaN. */
static inline __m128i cvt_to_bf16(vec v)
{
    const __m256i u = _mm256_castps_si256(v), hi = _mm256_srli_epi32(u, 16);
    const __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
    r = _mm256_srli_epi32(r, 16);
    const __m256i nan = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
    const __m256i abs = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
    const __m256i isnan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
    r = _mm256_blendv_epi8(r, nan, isnan);
    const __m256i packed = _mm256_packus_epi32(r, r); /* r0..3 r0..3 | r4..7 r4..7 */
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
}

/* 16 bf16 as the f32 values of elements 0, 2, .. 14 (lane << 16) and 1, 3, .. 15 (the
 * lane's high half). */
static inline void ld_bf16_pairs(const uint16_t *p, vec *even, vec *odd)
{
    const __m256i x = _mm256_loadu_si256((const __m256i *)p);
    *even = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
    *odd = _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32((int)0xffff0000u)));
}
/* e0 o0 e1 o1 .. e3 o3 and e4 o4 .. e7 o7. */
static inline void zip_even_odd(vec even, vec odd, vec *lo, vec *hi)
{
    const vec a = _mm256_unpacklo_ps(even, odd), b = _mm256_unpackhi_ps(even, odd);
    *lo = _mm256_permute2f128_ps(a, b, 0x20);
    *hi = _mm256_permute2f128_ps(a, b, 0x31);
}

/* ---- row-wise quantized rows (x86/quant_body.h) --------------------------------------- */

/* 8 uint8 as f32. */
static inline vec ld_q8(const uint8_t *p)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}
static inline vec ldn_q8(const uint8_t *p, int r)
{
    uint8_t t[8] = {0};
    memcpy(t, p, (size_t)r);
    return ld_q8(t);
}
/* The 8 nibbles of the 4 low bytes of @x (element 2j: the low nibble of byte j) as f32. */
static inline vec q4_expand(__m128i x)
{
    const __m256i v = _mm256_cvtepu8_epi32(_mm_unpacklo_epi8(x, x)); /* b0 b0 b1 b1 .. */
    const __m256i sh = _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4);
    return _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srlv_epi32(v, sh), _mm256_set1_epi32(15)));
}
static inline vec ld_q4(const uint8_t *p)
{
    int32_t u;
    memcpy(&u, p, 4);
    return q4_expand(_mm_cvtsi32_si128(u));
}
static inline vec ldn_q4(const uint8_t *p, int r)
{
    uint8_t t[4] = {0};
    memcpy(t, p, (size_t)r / 2);
    return ld_q4(t);
}
/* The 8 bytes at @p widened: their low nibbles (elements 0, 2, .. 14) and high ones. */
static inline void ld_q4_pairs(const uint8_t *p, vec *even, vec *odd)
{
    const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
    *even = _mm256_cvtepi32_ps(_mm256_and_si256(v, _mm256_set1_epi32(15)));
    *odd = _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 4));
}
/* 16 nibbles of the 8 bytes at @p: low and high nibbles split, interleaved back into 16
 * bytes (element order), widened to 8 + 8 f32. */
static inline void ld_q4x2(const uint8_t *p, vec *x0, vec *x1)
{
    const __m128i x = _mm_loadl_epi64((const __m128i *)p), m = _mm_set1_epi8(15);
    const __m128i lo = _mm_and_si128(x, m), hi = _mm_and_si128(_mm_srli_epi16(x, 4), m);
    const __m128i e = _mm_unpacklo_epi8(lo, hi);
    *x0 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(e));
    *x1 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(e, e)));
}

#include "kernels/x86/simd_body.h"

GATHER(gather_f32_avx2, 0, EMB_F32)
GATHER(gather_d16_f32_avx2, 16, EMB_F32)
GATHER(gather_d32_f32_avx2, 32, EMB_F32)
GATHER(gather_d64_f32_avx2, 64, EMB_F32)
GATHER(gather_d128_f32_avx2, 128, EMB_F32)
GATHER(gather_d256_f32_avx2, 256, EMB_F32)
POOL(pool_f32_avx2, 0, 0, EMB_F32)
POOL(pool_nt_f32_avx2, 0, 1, EMB_F32)
POOL(pool_d16_f32_avx2, 16, 0, EMB_F32)
POOL(pool_d32_f32_avx2, 32, 0, EMB_F32)
POOL(pool_d64_f32_avx2, 64, 0, EMB_F32)
POOL(pool_d128_f32_avx2, 128, 0, EMB_F32)
POOL(pool_d256_f32_avx2, 256, 0, EMB_F32)
BAGS(bags_d16_f32_avx2, 16, EMB_F32)
BAGS(bags_d32_f32_avx2, 32, EMB_F32)
BAGS(bags_d64_f32_avx2, 64, EMB_F32)
BAGS(bags_d128_f32_avx2, 128, EMB_F32)
BAGS(bags_d256_f32_avx2, 256, EMB_F32)
SUMSQ(sumsq_f32_avx2, EMB_F32)
SGD(sgd_row_f32_avx2, 0, 0, EMB_F32)
SGD(sgd_row_nt_f32_avx2, 0, 1, EMB_F32)
SGD(sgd_row_d16_f32_avx2, 16, 0, EMB_F32)
SGD(sgd_row_d32_f32_avx2, 32, 0, EMB_F32)
SGD(sgd_row_d64_f32_avx2, 64, 0, EMB_F32)
SGD(sgd_row_d128_f32_avx2, 128, 0, EMB_F32)
SGD(sgd_row_d256_f32_avx2, 256, 0, EMB_F32)

GATHER(gather_f16_avx2, 0, EMB_F16)
GATHER(gather_d16_f16_avx2, 16, EMB_F16)
GATHER(gather_d32_f16_avx2, 32, EMB_F16)
GATHER(gather_d64_f16_avx2, 64, EMB_F16)
GATHER(gather_d128_f16_avx2, 128, EMB_F16)
GATHER(gather_d256_f16_avx2, 256, EMB_F16)
POOL(pool_f16_avx2, 0, 0, EMB_F16)
POOL(pool_nt_f16_avx2, 0, 1, EMB_F16)
POOL(pool_d16_f16_avx2, 16, 0, EMB_F16)
POOL(pool_d32_f16_avx2, 32, 0, EMB_F16)
POOL(pool_d64_f16_avx2, 64, 0, EMB_F16)
POOL(pool_d128_f16_avx2, 128, 0, EMB_F16)
POOL(pool_d256_f16_avx2, 256, 0, EMB_F16)
BAGS(bags_d16_f16_avx2, 16, EMB_F16)
BAGS(bags_d32_f16_avx2, 32, EMB_F16)
BAGS(bags_d64_f16_avx2, 64, EMB_F16)
BAGS(bags_d128_f16_avx2, 128, EMB_F16)
BAGS(bags_d256_f16_avx2, 256, EMB_F16)
SUMSQ(sumsq_f16_avx2, EMB_F16)
SGD(sgd_row_f16_avx2, 0, 0, EMB_F16)
SGD(sgd_row_nt_f16_avx2, 0, 1, EMB_F16)
SGD(sgd_row_d16_f16_avx2, 16, 0, EMB_F16)
SGD(sgd_row_d32_f16_avx2, 32, 0, EMB_F16)
SGD(sgd_row_d64_f16_avx2, 64, 0, EMB_F16)
SGD(sgd_row_d128_f16_avx2, 128, 0, EMB_F16)
SGD(sgd_row_d256_f16_avx2, 256, 0, EMB_F16)

GATHER(gather_bf16_avx2, 0, EMB_BF16)
GATHER(gather_d16_bf16_avx2, 16, EMB_BF16)
GATHER(gather_d32_bf16_avx2, 32, EMB_BF16)
GATHER(gather_d64_bf16_avx2, 64, EMB_BF16)
GATHER(gather_d128_bf16_avx2, 128, EMB_BF16)
GATHER(gather_d256_bf16_avx2, 256, EMB_BF16)
POOL(pool_bf16_avx2, 0, 0, EMB_BF16)
POOL(pool_nt_bf16_avx2, 0, 1, EMB_BF16)
POOL(pool_d16_bf16_avx2, 16, 0, EMB_BF16)
POOL(pool_d32_bf16_avx2, 32, 0, EMB_BF16)
POOL(pool_d64_bf16_avx2, 64, 0, EMB_BF16)
POOL(pool_d128_bf16_avx2, 128, 0, EMB_BF16)
POOL(pool_d256_bf16_avx2, 256, 0, EMB_BF16)
BAGS(bags_d16_bf16_avx2, 16, EMB_BF16)
BAGS(bags_d32_bf16_avx2, 32, EMB_BF16)
BAGS(bags_d64_bf16_avx2, 64, EMB_BF16)
BAGS(bags_d128_bf16_avx2, 128, EMB_BF16)
BAGS(bags_d256_bf16_avx2, 256, EMB_BF16)
SUMSQ(sumsq_bf16_avx2, EMB_BF16)
SGD(sgd_row_bf16_avx2, 0, 0, EMB_BF16)
SGD(sgd_row_nt_bf16_avx2, 0, 1, EMB_BF16)
SGD(sgd_row_d16_bf16_avx2, 16, 0, EMB_BF16)
SGD(sgd_row_d32_bf16_avx2, 32, 0, EMB_BF16)
SGD(sgd_row_d64_bf16_avx2, 64, 0, EMB_BF16)
SGD(sgd_row_d128_bf16_avx2, 128, 0, EMB_BF16)
SGD(sgd_row_d256_bf16_avx2, 256, 0, EMB_BF16)

SGD_ROWS(sgd_rows_d16_f32_avx2, 16, EMB_F32)
SGD_ROWS(sgd_rows_d32_f32_avx2, 32, EMB_F32)
SGD_ROWS(sgd_rows_d64_f32_avx2, 64, EMB_F32)
SGD_ROWS(sgd_rows_d128_f32_avx2, 128, EMB_F32)
SGD_ROWS(sgd_rows_d256_f32_avx2, 256, EMB_F32)
SGD_ROWS(sgd_rows_d16_f16_avx2, 16, EMB_F16)
SGD_ROWS(sgd_rows_d32_f16_avx2, 32, EMB_F16)
SGD_ROWS(sgd_rows_d64_f16_avx2, 64, EMB_F16)
SGD_ROWS(sgd_rows_d128_f16_avx2, 128, EMB_F16)
SGD_ROWS(sgd_rows_d256_f16_avx2, 256, EMB_F16)
SGD_ROWS(sgd_rows_d16_bf16_avx2, 16, EMB_BF16)
SGD_ROWS(sgd_rows_d32_bf16_avx2, 32, EMB_BF16)
SGD_ROWS(sgd_rows_d64_bf16_avx2, 64, EMB_BF16)
SGD_ROWS(sgd_rows_d128_bf16_avx2, 128, EMB_BF16)
SGD_ROWS(sgd_rows_d256_bf16_avx2, 256, EMB_BF16)

OPT_ROWS(rowwise_rows_d16_f32_avx2, rowwise_rows_body, 16, EMB_F32)
OPT_ROWS(rowwise_rows_d32_f32_avx2, rowwise_rows_body, 32, EMB_F32)
OPT_ROWS(rowwise_rows_d64_f32_avx2, rowwise_rows_body, 64, EMB_F32)
OPT_ROWS(rowwise_rows_d128_f32_avx2, rowwise_rows_body, 128, EMB_F32)
OPT_ROWS(rowwise_rows_d256_f32_avx2, rowwise_rows_body, 256, EMB_F32)
OPT_ROWS(rowwise_rows_d16_f16_avx2, rowwise_rows_body, 16, EMB_F16)
OPT_ROWS(rowwise_rows_d32_f16_avx2, rowwise_rows_body, 32, EMB_F16)
OPT_ROWS(rowwise_rows_d64_f16_avx2, rowwise_rows_body, 64, EMB_F16)
OPT_ROWS(rowwise_rows_d128_f16_avx2, rowwise_rows_body, 128, EMB_F16)
OPT_ROWS(rowwise_rows_d256_f16_avx2, rowwise_rows_body, 256, EMB_F16)
OPT_ROWS(rowwise_rows_d16_bf16_avx2, rowwise_rows_body, 16, EMB_BF16)
OPT_ROWS(rowwise_rows_d32_bf16_avx2, rowwise_rows_body, 32, EMB_BF16)
OPT_ROWS(rowwise_rows_d64_bf16_avx2, rowwise_rows_body, 64, EMB_BF16)
OPT_ROWS(rowwise_rows_d128_bf16_avx2, rowwise_rows_body, 128, EMB_BF16)
OPT_ROWS(rowwise_rows_d256_bf16_avx2, rowwise_rows_body, 256, EMB_BF16)

OPT_ROWS(adagrad_rows_d16_f32_avx2, adagrad_rows_body, 16, EMB_F32)
OPT_ROWS(adagrad_rows_d32_f32_avx2, adagrad_rows_body, 32, EMB_F32)
OPT_ROWS(adagrad_rows_d64_f32_avx2, adagrad_rows_body, 64, EMB_F32)
OPT_ROWS(adagrad_rows_d128_f32_avx2, adagrad_rows_body, 128, EMB_F32)
OPT_ROWS(adagrad_rows_d256_f32_avx2, adagrad_rows_body, 256, EMB_F32)
OPT_ROWS(adam_rows_d16_f32_avx2, adam_rows_body, 16, EMB_F32)
OPT_ROWS(adam_rows_d32_f32_avx2, adam_rows_body, 32, EMB_F32)
OPT_ROWS(adam_rows_d64_f32_avx2, adam_rows_body, 64, EMB_F32)
OPT_ROWS(adam_rows_d128_f32_avx2, adam_rows_body, 128, EMB_F32)
OPT_ROWS(adam_rows_d256_f32_avx2, adam_rows_body, 256, EMB_F32)
OPT_ROWS(adagrad_rows_d16_f16_avx2, adagrad_rows_body, 16, EMB_F16)
OPT_ROWS(adagrad_rows_d32_f16_avx2, adagrad_rows_body, 32, EMB_F16)
OPT_ROWS(adagrad_rows_d64_f16_avx2, adagrad_rows_body, 64, EMB_F16)
OPT_ROWS(adagrad_rows_d128_f16_avx2, adagrad_rows_body, 128, EMB_F16)
OPT_ROWS(adagrad_rows_d256_f16_avx2, adagrad_rows_body, 256, EMB_F16)
OPT_ROWS(adam_rows_d16_f16_avx2, adam_rows_body, 16, EMB_F16)
OPT_ROWS(adam_rows_d32_f16_avx2, adam_rows_body, 32, EMB_F16)
OPT_ROWS(adam_rows_d64_f16_avx2, adam_rows_body, 64, EMB_F16)
OPT_ROWS(adam_rows_d128_f16_avx2, adam_rows_body, 128, EMB_F16)
OPT_ROWS(adam_rows_d256_f16_avx2, adam_rows_body, 256, EMB_F16)
OPT_ROWS(adagrad_rows_d16_bf16_avx2, adagrad_rows_body, 16, EMB_BF16)
OPT_ROWS(adagrad_rows_d32_bf16_avx2, adagrad_rows_body, 32, EMB_BF16)
OPT_ROWS(adagrad_rows_d64_bf16_avx2, adagrad_rows_body, 64, EMB_BF16)
OPT_ROWS(adagrad_rows_d128_bf16_avx2, adagrad_rows_body, 128, EMB_BF16)
OPT_ROWS(adagrad_rows_d256_bf16_avx2, adagrad_rows_body, 256, EMB_BF16)
OPT_ROWS(adam_rows_d16_bf16_avx2, adam_rows_body, 16, EMB_BF16)
OPT_ROWS(adam_rows_d32_bf16_avx2, adam_rows_body, 32, EMB_BF16)
OPT_ROWS(adam_rows_d64_bf16_avx2, adam_rows_body, 64, EMB_BF16)
OPT_ROWS(adam_rows_d128_bf16_avx2, adam_rows_body, 128, EMB_BF16)
OPT_ROWS(adam_rows_d256_bf16_avx2, adam_rows_body, 256, EMB_BF16)
OPT_ROWS(ftrl_rows_d16_f32_avx2, ftrl_rows_body, 16, EMB_F32)
OPT_ROWS(ftrl_rows_d32_f32_avx2, ftrl_rows_body, 32, EMB_F32)
OPT_ROWS(ftrl_rows_d64_f32_avx2, ftrl_rows_body, 64, EMB_F32)
OPT_ROWS(ftrl_rows_d128_f32_avx2, ftrl_rows_body, 128, EMB_F32)
OPT_ROWS(ftrl_rows_d256_f32_avx2, ftrl_rows_body, 256, EMB_F32)
OPT_ROWS(ftrl_rows_d16_f16_avx2, ftrl_rows_body, 16, EMB_F16)
OPT_ROWS(ftrl_rows_d32_f16_avx2, ftrl_rows_body, 32, EMB_F16)
OPT_ROWS(ftrl_rows_d64_f16_avx2, ftrl_rows_body, 64, EMB_F16)
OPT_ROWS(ftrl_rows_d128_f16_avx2, ftrl_rows_body, 128, EMB_F16)
OPT_ROWS(ftrl_rows_d256_f16_avx2, ftrl_rows_body, 256, EMB_F16)
OPT_ROWS(ftrl_rows_d16_bf16_avx2, ftrl_rows_body, 16, EMB_BF16)
OPT_ROWS(ftrl_rows_d32_bf16_avx2, ftrl_rows_body, 32, EMB_BF16)
OPT_ROWS(ftrl_rows_d64_bf16_avx2, ftrl_rows_body, 64, EMB_BF16)
OPT_ROWS(ftrl_rows_d128_bf16_avx2, ftrl_rows_body, 128, EMB_BF16)
OPT_ROWS(ftrl_rows_d256_bf16_avx2, ftrl_rows_body, 256, EMB_BF16)

static void scale_avx2(float *x, float s, int32_t D)
{
    scale_body(x, s, D);
}

/* ---- optimizer rows: every (optimizer, dtype) but FTRL's one-row kernels (pow: C) -- */

OPT_ROW(adagrad_f32_avx2, adagrad_body, 0, 0, EMB_F32)
OPT_ROW(adagrad_nt_f32_avx2, adagrad_body, 0, 1, EMB_F32)
OPT_ROW(adagrad_d16_f32_avx2, adagrad_body, 16, 0, EMB_F32)
OPT_ROW(adagrad_d32_f32_avx2, adagrad_body, 32, 0, EMB_F32)
OPT_ROW(adagrad_d64_f32_avx2, adagrad_body, 64, 0, EMB_F32)
OPT_ROW(adagrad_d128_f32_avx2, adagrad_body, 128, 0, EMB_F32)
OPT_ROW(adagrad_d256_f32_avx2, adagrad_body, 256, 0, EMB_F32)
OPT_ROW(rowwise_f32_avx2, rowwise_body, 0, 0, EMB_F32)
OPT_ROW(rowwise_nt_f32_avx2, rowwise_body, 0, 1, EMB_F32)
OPT_ROW(rowwise_d16_f32_avx2, rowwise_body, 16, 0, EMB_F32)
OPT_ROW(rowwise_d32_f32_avx2, rowwise_body, 32, 0, EMB_F32)
OPT_ROW(rowwise_d64_f32_avx2, rowwise_body, 64, 0, EMB_F32)
OPT_ROW(rowwise_d128_f32_avx2, rowwise_body, 128, 0, EMB_F32)
OPT_ROW(rowwise_d256_f32_avx2, rowwise_body, 256, 0, EMB_F32)
OPT_ROW(adam_f32_avx2, adam_body, 0, 0, EMB_F32)
OPT_ROW(adam_nt_f32_avx2, adam_body, 0, 1, EMB_F32)
OPT_ROW(adam_d16_f32_avx2, adam_body, 16, 0, EMB_F32)
OPT_ROW(adam_d32_f32_avx2, adam_body, 32, 0, EMB_F32)
OPT_ROW(adam_d64_f32_avx2, adam_body, 64, 0, EMB_F32)
OPT_ROW(adam_d128_f32_avx2, adam_body, 128, 0, EMB_F32)
OPT_ROW(adam_d256_f32_avx2, adam_body, 256, 0, EMB_F32)
OPT_ROW(adagrad_f16_avx2, adagrad_body, 0, 0, EMB_F16)
OPT_ROW(adagrad_nt_f16_avx2, adagrad_body, 0, 1, EMB_F16)
OPT_ROW(adagrad_d16_f16_avx2, adagrad_body, 16, 0, EMB_F16)
OPT_ROW(adagrad_d32_f16_avx2, adagrad_body, 32, 0, EMB_F16)
OPT_ROW(adagrad_d64_f16_avx2, adagrad_body, 64, 0, EMB_F16)
OPT_ROW(adagrad_d128_f16_avx2, adagrad_body, 128, 0, EMB_F16)
OPT_ROW(adagrad_d256_f16_avx2, adagrad_body, 256, 0, EMB_F16)
OPT_ROW(rowwise_f16_avx2, rowwise_body, 0, 0, EMB_F16)
OPT_ROW(rowwise_nt_f16_avx2, rowwise_body, 0, 1, EMB_F16)
OPT_ROW(rowwise_d16_f16_avx2, rowwise_body, 16, 0, EMB_F16)
OPT_ROW(rowwise_d32_f16_avx2, rowwise_body, 32, 0, EMB_F16)
OPT_ROW(rowwise_d64_f16_avx2, rowwise_body, 64, 0, EMB_F16)
OPT_ROW(rowwise_d128_f16_avx2, rowwise_body, 128, 0, EMB_F16)
OPT_ROW(rowwise_d256_f16_avx2, rowwise_body, 256, 0, EMB_F16)
OPT_ROW(adam_f16_avx2, adam_body, 0, 0, EMB_F16)
OPT_ROW(adam_nt_f16_avx2, adam_body, 0, 1, EMB_F16)
OPT_ROW(adam_d16_f16_avx2, adam_body, 16, 0, EMB_F16)
OPT_ROW(adam_d32_f16_avx2, adam_body, 32, 0, EMB_F16)
OPT_ROW(adam_d64_f16_avx2, adam_body, 64, 0, EMB_F16)
OPT_ROW(adam_d128_f16_avx2, adam_body, 128, 0, EMB_F16)
OPT_ROW(adam_d256_f16_avx2, adam_body, 256, 0, EMB_F16)
OPT_ROW(adagrad_bf16_avx2, adagrad_body, 0, 0, EMB_BF16)
OPT_ROW(adagrad_nt_bf16_avx2, adagrad_body, 0, 1, EMB_BF16)
OPT_ROW(adagrad_d16_bf16_avx2, adagrad_body, 16, 0, EMB_BF16)
OPT_ROW(adagrad_d32_bf16_avx2, adagrad_body, 32, 0, EMB_BF16)
OPT_ROW(adagrad_d64_bf16_avx2, adagrad_body, 64, 0, EMB_BF16)
OPT_ROW(adagrad_d128_bf16_avx2, adagrad_body, 128, 0, EMB_BF16)
OPT_ROW(adagrad_d256_bf16_avx2, adagrad_body, 256, 0, EMB_BF16)
OPT_ROW(rowwise_bf16_avx2, rowwise_body, 0, 0, EMB_BF16)
OPT_ROW(rowwise_nt_bf16_avx2, rowwise_body, 0, 1, EMB_BF16)
OPT_ROW(rowwise_d16_bf16_avx2, rowwise_body, 16, 0, EMB_BF16)
OPT_ROW(rowwise_d32_bf16_avx2, rowwise_body, 32, 0, EMB_BF16)
OPT_ROW(rowwise_d64_bf16_avx2, rowwise_body, 64, 0, EMB_BF16)
OPT_ROW(rowwise_d128_bf16_avx2, rowwise_body, 128, 0, EMB_BF16)
OPT_ROW(rowwise_d256_bf16_avx2, rowwise_body, 256, 0, EMB_BF16)
OPT_ROW(adam_bf16_avx2, adam_body, 0, 0, EMB_BF16)
OPT_ROW(adam_nt_bf16_avx2, adam_body, 0, 1, EMB_BF16)
OPT_ROW(adam_d16_bf16_avx2, adam_body, 16, 0, EMB_BF16)
OPT_ROW(adam_d32_bf16_avx2, adam_body, 32, 0, EMB_BF16)
OPT_ROW(adam_d64_bf16_avx2, adam_body, 64, 0, EMB_BF16)
OPT_ROW(adam_d128_bf16_avx2, adam_body, 128, 0, EMB_BF16)
OPT_ROW(adam_d256_bf16_avx2, adam_body, 256, 0, EMB_BF16)

/* idmax_c with vector maxima: int32 ids by vpmaxud, int64 ids by a signed compare of
 * sign-flipped values (AVX2 has no unsigned 64-bit max); a scalar tail. */
static uint64_t idmax_avx2(const void *ids, int64_t n, int id32)
{
    uint64_t r = 0;
    int64_t k = 0;
    if (id32) {
        const int32_t *p = ids;
        __m256i m = _mm256_setzero_si256();
        for (; k + 8 <= n; k += 8)
            m = _mm256_max_epu32(m, _mm256_loadu_si256((const __m256i *)(p + k)));
        uint32_t l[8];
        _mm256_storeu_si256((__m256i *)l, m);
        for (int i = 0; i < 8; i++)
            r = l[i] > r ? l[i] : r;
        for (; k < n; k++)
            r = (uint32_t)p[k] > r ? (uint32_t)p[k] : r;
        return r;
    }
    const int64_t *p = ids;
    const __m256i sign = _mm256_set1_epi64x(INT64_MIN);
    __m256i m = sign; /* 0 flipped */
    for (; k + 4 <= n; k += 4) {
        const __m256i x = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(p + k)), sign);
        m = _mm256_blendv_epi8(m, x, _mm256_cmpgt_epi64(x, m));
    }
    uint64_t l[4];
    _mm256_storeu_si256((__m256i *)l, _mm256_xor_si256(m, sign));
    for (int i = 0; i < 4; i++)
        r = l[i] > r ? l[i] : r;
    for (; k < n; k++)
        r = (uint64_t)p[k] > r ? (uint64_t)p[k] : r;
    return r;
}

/* f32: gather, pool, bags, sum of squares, SGD row. */
static void init_f32(EmbKernels *k)
{
    k->gather[EMB_F32] = gather_f32_avx2;
    k->gather_d[0][EMB_F32] = gather_d16_f32_avx2;
    k->gather_d[1][EMB_F32] = gather_d32_f32_avx2;
    k->gather_d[2][EMB_F32] = gather_d64_f32_avx2;
    k->gather_d[3][EMB_F32] = gather_d128_f32_avx2;
    k->gather_d[4][EMB_F32] = gather_d256_f32_avx2;
    k->pool[EMB_F32] = pool_f32_avx2;
    k->pool_nt[EMB_F32] = pool_nt_f32_avx2;
    k->pool_d[0][EMB_F32] = pool_d16_f32_avx2;
    k->pool_d[1][EMB_F32] = pool_d32_f32_avx2;
    k->pool_d[2][EMB_F32] = pool_d64_f32_avx2;
    k->pool_d[3][EMB_F32] = pool_d128_f32_avx2;
    k->pool_d[4][EMB_F32] = pool_d256_f32_avx2;
    k->bags_d[0][EMB_F32] = bags_d16_f32_avx2;
    k->bags_d[1][EMB_F32] = bags_d32_f32_avx2;
    k->bags_d[2][EMB_F32] = bags_d64_f32_avx2;
    k->bags_d[3][EMB_F32] = bags_d128_f32_avx2;
    k->bags_d[4][EMB_F32] = bags_d256_f32_avx2;
    k->sumsq[EMB_F32] = sumsq_f32_avx2;
    k->sgd_row[EMB_F32] = sgd_row_f32_avx2;
    k->sgd_row_nt[EMB_F32] = sgd_row_nt_f32_avx2;
    k->sgd_row_d[0][EMB_F32] = sgd_row_d16_f32_avx2;
    k->sgd_row_d[1][EMB_F32] = sgd_row_d32_f32_avx2;
    k->sgd_row_d[2][EMB_F32] = sgd_row_d64_f32_avx2;
    k->sgd_row_d[3][EMB_F32] = sgd_row_d128_f32_avx2;
    k->sgd_row_d[4][EMB_F32] = sgd_row_d256_f32_avx2;
}

/* bf16: gather, pool, bags, sum of squares, SGD row. */
static void init_bf16(EmbKernels *k)
{
    k->gather[EMB_BF16] = gather_bf16_avx2;
    k->gather_d[0][EMB_BF16] = gather_d16_bf16_avx2;
    k->gather_d[1][EMB_BF16] = gather_d32_bf16_avx2;
    k->gather_d[2][EMB_BF16] = gather_d64_bf16_avx2;
    k->gather_d[3][EMB_BF16] = gather_d128_bf16_avx2;
    k->gather_d[4][EMB_BF16] = gather_d256_bf16_avx2;
    k->pool[EMB_BF16] = pool_bf16_avx2;
    k->pool_nt[EMB_BF16] = pool_nt_bf16_avx2;
    k->pool_d[0][EMB_BF16] = pool_d16_bf16_avx2;
    k->pool_d[1][EMB_BF16] = pool_d32_bf16_avx2;
    k->pool_d[2][EMB_BF16] = pool_d64_bf16_avx2;
    k->pool_d[3][EMB_BF16] = pool_d128_bf16_avx2;
    k->pool_d[4][EMB_BF16] = pool_d256_bf16_avx2;
    k->bags_d[0][EMB_BF16] = bags_d16_bf16_avx2;
    k->bags_d[1][EMB_BF16] = bags_d32_bf16_avx2;
    k->bags_d[2][EMB_BF16] = bags_d64_bf16_avx2;
    k->bags_d[3][EMB_BF16] = bags_d128_bf16_avx2;
    k->bags_d[4][EMB_BF16] = bags_d256_bf16_avx2;
    k->sumsq[EMB_BF16] = sumsq_bf16_avx2;
    k->sgd_row[EMB_BF16] = sgd_row_bf16_avx2;
    k->sgd_row_nt[EMB_BF16] = sgd_row_nt_bf16_avx2;
    k->sgd_row_d[0][EMB_BF16] = sgd_row_d16_bf16_avx2;
    k->sgd_row_d[1][EMB_BF16] = sgd_row_d32_bf16_avx2;
    k->sgd_row_d[2][EMB_BF16] = sgd_row_d64_bf16_avx2;
    k->sgd_row_d[3][EMB_BF16] = sgd_row_d128_bf16_avx2;
    k->sgd_row_d[4][EMB_BF16] = sgd_row_d256_bf16_avx2;
}

/* The static-size range kernels of f32 and bf16. */
static void init_rows_f32_bf16(EmbKernels *k)
{
    k->rows_d[0][EMB_OPT_SGD][EMB_F32] = sgd_rows_d16_f32_avx2;
    k->rows_d[1][EMB_OPT_SGD][EMB_F32] = sgd_rows_d32_f32_avx2;
    k->rows_d[2][EMB_OPT_SGD][EMB_F32] = sgd_rows_d64_f32_avx2;
    k->rows_d[3][EMB_OPT_SGD][EMB_F32] = sgd_rows_d128_f32_avx2;
    k->rows_d[4][EMB_OPT_SGD][EMB_F32] = sgd_rows_d256_f32_avx2;
    k->rows_d[0][EMB_OPT_SGD][EMB_BF16] = sgd_rows_d16_bf16_avx2;
    k->rows_d[1][EMB_OPT_SGD][EMB_BF16] = sgd_rows_d32_bf16_avx2;
    k->rows_d[2][EMB_OPT_SGD][EMB_BF16] = sgd_rows_d64_bf16_avx2;
    k->rows_d[3][EMB_OPT_SGD][EMB_BF16] = sgd_rows_d128_bf16_avx2;
    k->rows_d[4][EMB_OPT_SGD][EMB_BF16] = sgd_rows_d256_bf16_avx2;
    k->rows_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_rows_d16_f32_avx2;
    k->rows_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_rows_d32_f32_avx2;
    k->rows_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_rows_d64_f32_avx2;
    k->rows_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_rows_d128_f32_avx2;
    k->rows_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_rows_d256_f32_avx2;
    k->rows_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_rows_d16_bf16_avx2;
    k->rows_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_rows_d32_bf16_avx2;
    k->rows_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_rows_d64_bf16_avx2;
    k->rows_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_rows_d128_bf16_avx2;
    k->rows_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_rows_d256_bf16_avx2;
    k->rows_d[0][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_rows_d16_f32_avx2;
    k->rows_d[1][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_rows_d32_f32_avx2;
    k->rows_d[2][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_rows_d64_f32_avx2;
    k->rows_d[3][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_rows_d128_f32_avx2;
    k->rows_d[4][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_rows_d256_f32_avx2;
    k->rows_d[0][EMB_OPT_ADAM][EMB_F32] = adam_rows_d16_f32_avx2;
    k->rows_d[1][EMB_OPT_ADAM][EMB_F32] = adam_rows_d32_f32_avx2;
    k->rows_d[2][EMB_OPT_ADAM][EMB_F32] = adam_rows_d64_f32_avx2;
    k->rows_d[3][EMB_OPT_ADAM][EMB_F32] = adam_rows_d128_f32_avx2;
    k->rows_d[4][EMB_OPT_ADAM][EMB_F32] = adam_rows_d256_f32_avx2;
    k->rows_d[0][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_rows_d16_bf16_avx2;
    k->rows_d[1][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_rows_d32_bf16_avx2;
    k->rows_d[2][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_rows_d64_bf16_avx2;
    k->rows_d[3][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_rows_d128_bf16_avx2;
    k->rows_d[4][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_rows_d256_bf16_avx2;
    k->rows_d[0][EMB_OPT_ADAM][EMB_BF16] = adam_rows_d16_bf16_avx2;
    k->rows_d[1][EMB_OPT_ADAM][EMB_BF16] = adam_rows_d32_bf16_avx2;
    k->rows_d[2][EMB_OPT_ADAM][EMB_BF16] = adam_rows_d64_bf16_avx2;
    k->rows_d[3][EMB_OPT_ADAM][EMB_BF16] = adam_rows_d128_bf16_avx2;
    k->rows_d[4][EMB_OPT_ADAM][EMB_BF16] = adam_rows_d256_bf16_avx2;
}

/* The one-row optimizer kernels of f32 and bf16. */
static void init_opt_row_f32_bf16(EmbKernels *k)
{
    k->opt_row[EMB_OPT_ADAGRAD][EMB_F32] = adagrad_f32_avx2;
    k->opt_row_nt[EMB_OPT_ADAGRAD][EMB_F32] = adagrad_nt_f32_avx2;
    k->opt_row_d[0][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_d16_f32_avx2;
    k->opt_row_d[1][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_d32_f32_avx2;
    k->opt_row_d[2][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_d64_f32_avx2;
    k->opt_row_d[3][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_d128_f32_avx2;
    k->opt_row_d[4][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_d256_f32_avx2;
    k->opt_row[EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_f32_avx2;
    k->opt_row_nt[EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_nt_f32_avx2;
    k->opt_row_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_d16_f32_avx2;
    k->opt_row_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_d32_f32_avx2;
    k->opt_row_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_d64_f32_avx2;
    k->opt_row_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_d128_f32_avx2;
    k->opt_row_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_d256_f32_avx2;
    k->opt_row[EMB_OPT_ADAM][EMB_F32] = adam_f32_avx2;
    k->opt_row_nt[EMB_OPT_ADAM][EMB_F32] = adam_nt_f32_avx2;
    k->opt_row_d[0][EMB_OPT_ADAM][EMB_F32] = adam_d16_f32_avx2;
    k->opt_row_d[1][EMB_OPT_ADAM][EMB_F32] = adam_d32_f32_avx2;
    k->opt_row_d[2][EMB_OPT_ADAM][EMB_F32] = adam_d64_f32_avx2;
    k->opt_row_d[3][EMB_OPT_ADAM][EMB_F32] = adam_d128_f32_avx2;
    k->opt_row_d[4][EMB_OPT_ADAM][EMB_F32] = adam_d256_f32_avx2;
    k->opt_row[EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_bf16_avx2;
    k->opt_row_nt[EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_nt_bf16_avx2;
    k->opt_row_d[0][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_d16_bf16_avx2;
    k->opt_row_d[1][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_d32_bf16_avx2;
    k->opt_row_d[2][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_d64_bf16_avx2;
    k->opt_row_d[3][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_d128_bf16_avx2;
    k->opt_row_d[4][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_d256_bf16_avx2;
    k->opt_row[EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_bf16_avx2;
    k->opt_row_nt[EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_nt_bf16_avx2;
    k->opt_row_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_d16_bf16_avx2;
    k->opt_row_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_d32_bf16_avx2;
    k->opt_row_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_d64_bf16_avx2;
    k->opt_row_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_d128_bf16_avx2;
    k->opt_row_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_d256_bf16_avx2;
    k->opt_row[EMB_OPT_ADAM][EMB_BF16] = adam_bf16_avx2;
    k->opt_row_nt[EMB_OPT_ADAM][EMB_BF16] = adam_nt_bf16_avx2;
    k->opt_row_d[0][EMB_OPT_ADAM][EMB_BF16] = adam_d16_bf16_avx2;
    k->opt_row_d[1][EMB_OPT_ADAM][EMB_BF16] = adam_d32_bf16_avx2;
    k->opt_row_d[2][EMB_OPT_ADAM][EMB_BF16] = adam_d64_bf16_avx2;
    k->opt_row_d[3][EMB_OPT_ADAM][EMB_BF16] = adam_d128_bf16_avx2;
    k->opt_row_d[4][EMB_OPT_ADAM][EMB_BF16] = adam_d256_bf16_avx2;
}

/* f16 (F16C): gather, pool, bags, sum of squares, SGD row. */
static void init_f16(EmbKernels *k)
{
    k->gather[EMB_F16] = gather_f16_avx2;
    k->gather_d[0][EMB_F16] = gather_d16_f16_avx2;
    k->gather_d[1][EMB_F16] = gather_d32_f16_avx2;
    k->gather_d[2][EMB_F16] = gather_d64_f16_avx2;
    k->gather_d[3][EMB_F16] = gather_d128_f16_avx2;
    k->gather_d[4][EMB_F16] = gather_d256_f16_avx2;
    k->pool[EMB_F16] = pool_f16_avx2;
    k->pool_nt[EMB_F16] = pool_nt_f16_avx2;
    k->pool_d[0][EMB_F16] = pool_d16_f16_avx2;
    k->pool_d[1][EMB_F16] = pool_d32_f16_avx2;
    k->pool_d[2][EMB_F16] = pool_d64_f16_avx2;
    k->pool_d[3][EMB_F16] = pool_d128_f16_avx2;
    k->pool_d[4][EMB_F16] = pool_d256_f16_avx2;
    k->bags_d[0][EMB_F16] = bags_d16_f16_avx2;
    k->bags_d[1][EMB_F16] = bags_d32_f16_avx2;
    k->bags_d[2][EMB_F16] = bags_d64_f16_avx2;
    k->bags_d[3][EMB_F16] = bags_d128_f16_avx2;
    k->bags_d[4][EMB_F16] = bags_d256_f16_avx2;
    k->sumsq[EMB_F16] = sumsq_f16_avx2;
    k->sgd_row[EMB_F16] = sgd_row_f16_avx2;
    k->sgd_row_nt[EMB_F16] = sgd_row_nt_f16_avx2;
    k->sgd_row_d[0][EMB_F16] = sgd_row_d16_f16_avx2;
    k->sgd_row_d[1][EMB_F16] = sgd_row_d32_f16_avx2;
    k->sgd_row_d[2][EMB_F16] = sgd_row_d64_f16_avx2;
    k->sgd_row_d[3][EMB_F16] = sgd_row_d128_f16_avx2;
    k->sgd_row_d[4][EMB_F16] = sgd_row_d256_f16_avx2;
}

/* f16 (F16C): the static-size range kernels and the one-row optimizer kernels. */
static void init_optim_f16(EmbKernels *k)
{
    k->rows_d[0][EMB_OPT_SGD][EMB_F16] = sgd_rows_d16_f16_avx2;
    k->rows_d[1][EMB_OPT_SGD][EMB_F16] = sgd_rows_d32_f16_avx2;
    k->rows_d[2][EMB_OPT_SGD][EMB_F16] = sgd_rows_d64_f16_avx2;
    k->rows_d[3][EMB_OPT_SGD][EMB_F16] = sgd_rows_d128_f16_avx2;
    k->rows_d[4][EMB_OPT_SGD][EMB_F16] = sgd_rows_d256_f16_avx2;
    k->rows_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_rows_d16_f16_avx2;
    k->rows_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_rows_d32_f16_avx2;
    k->rows_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_rows_d64_f16_avx2;
    k->rows_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_rows_d128_f16_avx2;
    k->rows_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_rows_d256_f16_avx2;
    k->rows_d[0][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_rows_d16_f16_avx2;
    k->rows_d[1][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_rows_d32_f16_avx2;
    k->rows_d[2][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_rows_d64_f16_avx2;
    k->rows_d[3][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_rows_d128_f16_avx2;
    k->rows_d[4][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_rows_d256_f16_avx2;
    k->rows_d[0][EMB_OPT_ADAM][EMB_F16] = adam_rows_d16_f16_avx2;
    k->rows_d[1][EMB_OPT_ADAM][EMB_F16] = adam_rows_d32_f16_avx2;
    k->rows_d[2][EMB_OPT_ADAM][EMB_F16] = adam_rows_d64_f16_avx2;
    k->rows_d[3][EMB_OPT_ADAM][EMB_F16] = adam_rows_d128_f16_avx2;
    k->rows_d[4][EMB_OPT_ADAM][EMB_F16] = adam_rows_d256_f16_avx2;
    k->opt_row[EMB_OPT_ADAGRAD][EMB_F16] = adagrad_f16_avx2;
    k->opt_row_nt[EMB_OPT_ADAGRAD][EMB_F16] = adagrad_nt_f16_avx2;
    k->opt_row_d[0][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_d16_f16_avx2;
    k->opt_row_d[1][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_d32_f16_avx2;
    k->opt_row_d[2][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_d64_f16_avx2;
    k->opt_row_d[3][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_d128_f16_avx2;
    k->opt_row_d[4][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_d256_f16_avx2;
    k->opt_row[EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_f16_avx2;
    k->opt_row_nt[EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_nt_f16_avx2;
    k->opt_row_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_d16_f16_avx2;
    k->opt_row_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_d32_f16_avx2;
    k->opt_row_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_d64_f16_avx2;
    k->opt_row_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_d128_f16_avx2;
    k->opt_row_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_d256_f16_avx2;
    k->opt_row[EMB_OPT_ADAM][EMB_F16] = adam_f16_avx2;
    k->opt_row_nt[EMB_OPT_ADAM][EMB_F16] = adam_nt_f16_avx2;
    k->opt_row_d[0][EMB_OPT_ADAM][EMB_F16] = adam_d16_f16_avx2;
    k->opt_row_d[1][EMB_OPT_ADAM][EMB_F16] = adam_d32_f16_avx2;
    k->opt_row_d[2][EMB_OPT_ADAM][EMB_F16] = adam_d64_f16_avx2;
    k->opt_row_d[3][EMB_OPT_ADAM][EMB_F16] = adam_d128_f16_avx2;
    k->opt_row_d[4][EMB_OPT_ADAM][EMB_F16] = adam_d256_f16_avx2;
}

/* The static-size range kernels of FTRL (lr_power = -0.5) of f32 and bf16. */
static void init_rows_ftrl_f32_bf16(EmbKernels *k)
{
    k->rows_d[0][EMB_OPT_FTRL][EMB_F32] = ftrl_rows_d16_f32_avx2;
    k->rows_d[1][EMB_OPT_FTRL][EMB_F32] = ftrl_rows_d32_f32_avx2;
    k->rows_d[2][EMB_OPT_FTRL][EMB_F32] = ftrl_rows_d64_f32_avx2;
    k->rows_d[3][EMB_OPT_FTRL][EMB_F32] = ftrl_rows_d128_f32_avx2;
    k->rows_d[4][EMB_OPT_FTRL][EMB_F32] = ftrl_rows_d256_f32_avx2;
    k->rows_d[0][EMB_OPT_FTRL][EMB_BF16] = ftrl_rows_d16_bf16_avx2;
    k->rows_d[1][EMB_OPT_FTRL][EMB_BF16] = ftrl_rows_d32_bf16_avx2;
    k->rows_d[2][EMB_OPT_FTRL][EMB_BF16] = ftrl_rows_d64_bf16_avx2;
    k->rows_d[3][EMB_OPT_FTRL][EMB_BF16] = ftrl_rows_d128_bf16_avx2;
    k->rows_d[4][EMB_OPT_FTRL][EMB_BF16] = ftrl_rows_d256_bf16_avx2;
}

/* f16 (F16C): the static-size range kernels of FTRL. */
static void init_rows_ftrl_f16(EmbKernels *k)
{
    k->rows_d[0][EMB_OPT_FTRL][EMB_F16] = ftrl_rows_d16_f16_avx2;
    k->rows_d[1][EMB_OPT_FTRL][EMB_F16] = ftrl_rows_d32_f16_avx2;
    k->rows_d[2][EMB_OPT_FTRL][EMB_F16] = ftrl_rows_d64_f16_avx2;
    k->rows_d[3][EMB_OPT_FTRL][EMB_F16] = ftrl_rows_d128_f16_avx2;
    k->rows_d[4][EMB_OPT_FTRL][EMB_F16] = ftrl_rows_d256_f16_avx2;
}

/* ---- MAX pooling (pool_max_body), every dtype ------------------------------------------ */

BAGS_MAX(bags_max_d16_f32_avx2, 16, EMB_F32)
BAGS_MAX(bags_max_d32_f32_avx2, 32, EMB_F32)
BAGS_MAX(bags_max_d64_f32_avx2, 64, EMB_F32)
BAGS_MAX(bags_max_d128_f32_avx2, 128, EMB_F32)
BAGS_MAX(bags_max_d256_f32_avx2, 256, EMB_F32)
BAGS_MAX(bags_max_d16_f16_avx2, 16, EMB_F16)
BAGS_MAX(bags_max_d32_f16_avx2, 32, EMB_F16)
BAGS_MAX(bags_max_d64_f16_avx2, 64, EMB_F16)
BAGS_MAX(bags_max_d128_f16_avx2, 128, EMB_F16)
BAGS_MAX(bags_max_d256_f16_avx2, 256, EMB_F16)
BAGS_MAX(bags_max_d16_bf16_avx2, 16, EMB_BF16)
BAGS_MAX(bags_max_d32_bf16_avx2, 32, EMB_BF16)
BAGS_MAX(bags_max_d64_bf16_avx2, 64, EMB_BF16)
BAGS_MAX(bags_max_d128_bf16_avx2, 128, EMB_BF16)
BAGS_MAX(bags_max_d256_bf16_avx2, 256, EMB_BF16)
BAGS_MAX(bags_max_d16_int8_avx2, 16, EMB_INT8)
BAGS_MAX(bags_max_d32_int8_avx2, 32, EMB_INT8)
BAGS_MAX(bags_max_d64_int8_avx2, 64, EMB_INT8)
BAGS_MAX(bags_max_d128_int8_avx2, 128, EMB_INT8)
BAGS_MAX(bags_max_d256_int8_avx2, 256, EMB_INT8)
BAGS_MAX(bags_max_d16_int4_avx2, 16, EMB_INT4)
BAGS_MAX(bags_max_d32_int4_avx2, 32, EMB_INT4)
BAGS_MAX(bags_max_d64_int4_avx2, 64, EMB_INT4)
BAGS_MAX(bags_max_d128_int4_avx2, 128, EMB_INT4)
BAGS_MAX(bags_max_d256_int4_avx2, 256, EMB_INT4)
POOL_MAX(pool_max_f32_avx2, 0, EMB_F32)
POOL_MAX(pool_max_d16_f32_avx2, 16, EMB_F32)
POOL_MAX(pool_max_d32_f32_avx2, 32, EMB_F32)
POOL_MAX(pool_max_d64_f32_avx2, 64, EMB_F32)
POOL_MAX(pool_max_d128_f32_avx2, 128, EMB_F32)
POOL_MAX(pool_max_d256_f32_avx2, 256, EMB_F32)
POOL_MAX(pool_max_f16_avx2, 0, EMB_F16)
POOL_MAX(pool_max_d16_f16_avx2, 16, EMB_F16)
POOL_MAX(pool_max_d32_f16_avx2, 32, EMB_F16)
POOL_MAX(pool_max_d64_f16_avx2, 64, EMB_F16)
POOL_MAX(pool_max_d128_f16_avx2, 128, EMB_F16)
POOL_MAX(pool_max_d256_f16_avx2, 256, EMB_F16)
POOL_MAX(pool_max_bf16_avx2, 0, EMB_BF16)
POOL_MAX(pool_max_d16_bf16_avx2, 16, EMB_BF16)
POOL_MAX(pool_max_d32_bf16_avx2, 32, EMB_BF16)
POOL_MAX(pool_max_d64_bf16_avx2, 64, EMB_BF16)
POOL_MAX(pool_max_d128_bf16_avx2, 128, EMB_BF16)
POOL_MAX(pool_max_d256_bf16_avx2, 256, EMB_BF16)
POOL_MAX(pool_max_int8_avx2, 0, EMB_INT8)
POOL_MAX(pool_max_d16_int8_avx2, 16, EMB_INT8)
POOL_MAX(pool_max_d32_int8_avx2, 32, EMB_INT8)
POOL_MAX(pool_max_d64_int8_avx2, 64, EMB_INT8)
POOL_MAX(pool_max_d128_int8_avx2, 128, EMB_INT8)
POOL_MAX(pool_max_d256_int8_avx2, 256, EMB_INT8)
POOL_MAX(pool_max_int4_avx2, 0, EMB_INT4)
POOL_MAX(pool_max_d16_int4_avx2, 16, EMB_INT4)
POOL_MAX(pool_max_d32_int4_avx2, 32, EMB_INT4)
POOL_MAX(pool_max_d64_int4_avx2, 64, EMB_INT4)
POOL_MAX(pool_max_d128_int4_avx2, 128, EMB_INT4)
POOL_MAX(pool_max_d256_int4_avx2, 256, EMB_INT4)

/* The MAX pooling and bags kernels. */
static void init_pool_max(EmbKernels *k)
{
    k->pool_max[EMB_F32] = pool_max_f32_avx2;
    k->bags_max_d[0][EMB_F32] = bags_max_d16_f32_avx2;
    k->bags_max_d[1][EMB_F32] = bags_max_d32_f32_avx2;
    k->bags_max_d[2][EMB_F32] = bags_max_d64_f32_avx2;
    k->bags_max_d[3][EMB_F32] = bags_max_d128_f32_avx2;
    k->bags_max_d[4][EMB_F32] = bags_max_d256_f32_avx2;
    k->pool_max_d[0][EMB_F32] = pool_max_d16_f32_avx2;
    k->pool_max_d[1][EMB_F32] = pool_max_d32_f32_avx2;
    k->pool_max_d[2][EMB_F32] = pool_max_d64_f32_avx2;
    k->pool_max_d[3][EMB_F32] = pool_max_d128_f32_avx2;
    k->pool_max_d[4][EMB_F32] = pool_max_d256_f32_avx2;
    k->pool_max[EMB_BF16] = pool_max_bf16_avx2;
    k->bags_max_d[0][EMB_BF16] = bags_max_d16_bf16_avx2;
    k->bags_max_d[1][EMB_BF16] = bags_max_d32_bf16_avx2;
    k->bags_max_d[2][EMB_BF16] = bags_max_d64_bf16_avx2;
    k->bags_max_d[3][EMB_BF16] = bags_max_d128_bf16_avx2;
    k->bags_max_d[4][EMB_BF16] = bags_max_d256_bf16_avx2;
    k->pool_max_d[0][EMB_BF16] = pool_max_d16_bf16_avx2;
    k->pool_max_d[1][EMB_BF16] = pool_max_d32_bf16_avx2;
    k->pool_max_d[2][EMB_BF16] = pool_max_d64_bf16_avx2;
    k->pool_max_d[3][EMB_BF16] = pool_max_d128_bf16_avx2;
    k->pool_max_d[4][EMB_BF16] = pool_max_d256_bf16_avx2;
    k->pool_max[EMB_INT8] = pool_max_int8_avx2;
    k->bags_max_d[0][EMB_INT8] = bags_max_d16_int8_avx2;
    k->bags_max_d[1][EMB_INT8] = bags_max_d32_int8_avx2;
    k->bags_max_d[2][EMB_INT8] = bags_max_d64_int8_avx2;
    k->bags_max_d[3][EMB_INT8] = bags_max_d128_int8_avx2;
    k->bags_max_d[4][EMB_INT8] = bags_max_d256_int8_avx2;
    k->pool_max_d[0][EMB_INT8] = pool_max_d16_int8_avx2;
    k->pool_max_d[1][EMB_INT8] = pool_max_d32_int8_avx2;
    k->pool_max_d[2][EMB_INT8] = pool_max_d64_int8_avx2;
    k->pool_max_d[3][EMB_INT8] = pool_max_d128_int8_avx2;
    k->pool_max_d[4][EMB_INT8] = pool_max_d256_int8_avx2;
    k->pool_max[EMB_INT4] = pool_max_int4_avx2;
    k->bags_max_d[0][EMB_INT4] = bags_max_d16_int4_avx2;
    k->bags_max_d[1][EMB_INT4] = bags_max_d32_int4_avx2;
    k->bags_max_d[2][EMB_INT4] = bags_max_d64_int4_avx2;
    k->bags_max_d[3][EMB_INT4] = bags_max_d128_int4_avx2;
    k->bags_max_d[4][EMB_INT4] = bags_max_d256_int4_avx2;
    k->pool_max_d[0][EMB_INT4] = pool_max_d16_int4_avx2;
    k->pool_max_d[1][EMB_INT4] = pool_max_d32_int4_avx2;
    k->pool_max_d[2][EMB_INT4] = pool_max_d64_int4_avx2;
    k->pool_max_d[3][EMB_INT4] = pool_max_d128_int4_avx2;
    k->pool_max_d[4][EMB_INT4] = pool_max_d256_int4_avx2;
    k->pool_max[EMB_F16] = pool_max_f16_avx2;
    k->bags_max_d[0][EMB_F16] = bags_max_d16_f16_avx2;
    k->bags_max_d[1][EMB_F16] = bags_max_d32_f16_avx2;
    k->bags_max_d[2][EMB_F16] = bags_max_d64_f16_avx2;
    k->bags_max_d[3][EMB_F16] = bags_max_d128_f16_avx2;
    k->bags_max_d[4][EMB_F16] = bags_max_d256_f16_avx2;
    k->pool_max_d[0][EMB_F16] = pool_max_d16_f16_avx2;
    k->pool_max_d[1][EMB_F16] = pool_max_d32_f16_avx2;
    k->pool_max_d[2][EMB_F16] = pool_max_d64_f16_avx2;
    k->pool_max_d[3][EMB_F16] = pool_max_d128_f16_avx2;
    k->pool_max_d[4][EMB_F16] = pool_max_d256_f16_avx2;
}

/* The AVX2 level over the C one (the dispatch saw F16C too: dispatch.c's NEED_AVX2). */
void emb__kernels_init_avx2(EmbKernels *k, unsigned flags)
{
    (void)flags;
    init_f32(k);
    init_bf16(k);
    init_rows_f32_bf16(k);
    init_rows_ftrl_f32_bf16(k);
    k->scale = scale_avx2;
    k->idmax = idmax_avx2;
    init_opt_row_f32_bf16(k);
    init_pool_max(k);
    init_f16(k);
    init_optim_f16(k);
    init_rows_ftrl_f16(k);
}


QGATHER(gather_int8_avx2, 0, EMB_INT8)
QGATHER(gather_d16_int8_avx2, 16, EMB_INT8)
QGATHER(gather_d32_int8_avx2, 32, EMB_INT8)
QGATHER(gather_d64_int8_avx2, 64, EMB_INT8)
QGATHER(gather_d128_int8_avx2, 128, EMB_INT8)
QGATHER(gather_d256_int8_avx2, 256, EMB_INT8)
POOL(pool_int8_avx2, 0, 0, EMB_INT8)
POOL(pool_nt_int8_avx2, 0, 1, EMB_INT8)
POOL(pool_d16_int8_avx2, 16, 0, EMB_INT8)
POOL(pool_d32_int8_avx2, 32, 0, EMB_INT8)
POOL(pool_d64_int8_avx2, 64, 0, EMB_INT8)
POOL(pool_d128_int8_avx2, 128, 0, EMB_INT8)
POOL(pool_d256_int8_avx2, 256, 0, EMB_INT8)
BAGS(bags_d16_int8_avx2, 16, EMB_INT8)
BAGS(bags_d32_int8_avx2, 32, EMB_INT8)
BAGS(bags_d64_int8_avx2, 64, EMB_INT8)
BAGS(bags_d128_int8_avx2, 128, EMB_INT8)
BAGS(bags_d256_int8_avx2, 256, EMB_INT8)
QSUMSQ(sumsq_int8_avx2, EMB_INT8)

QGATHER(gather_int4_avx2, 0, EMB_INT4)
QGATHER(gather_d16_int4_avx2, 16, EMB_INT4)
QGATHER(gather_d32_int4_avx2, 32, EMB_INT4)
QGATHER(gather_d64_int4_avx2, 64, EMB_INT4)
QGATHER(gather_d128_int4_avx2, 128, EMB_INT4)
QGATHER(gather_d256_int4_avx2, 256, EMB_INT4)
POOL(pool_int4_avx2, 0, 0, EMB_INT4)
POOL(pool_nt_int4_avx2, 0, 1, EMB_INT4)
POOL(pool_d16_int4_avx2, 16, 0, EMB_INT4)
POOL(pool_d32_int4_avx2, 32, 0, EMB_INT4)
POOL(pool_d64_int4_avx2, 64, 0, EMB_INT4)
POOL(pool_d128_int4_avx2, 128, 0, EMB_INT4)
POOL(pool_d256_int4_avx2, 256, 0, EMB_INT4)
BAGS(bags_d16_int4_avx2, 16, EMB_INT4)
BAGS(bags_d32_int4_avx2, 32, EMB_INT4)
BAGS(bags_d64_int4_avx2, 64, EMB_INT4)
BAGS(bags_d128_int4_avx2, 128, EMB_INT4)
BAGS(bags_d256_int4_avx2, 256, EMB_INT4)
QSUMSQ(sumsq_int4_avx2, EMB_INT4)

/* The update's re-quantization: requant.h's C, compiled with this file's flags. */
EMB_REQUANT_KERNEL(requant_int8_avx2, EMB_INT8)
EMB_REQUANT_KERNEL(requant_int4_avx2, EMB_INT4)
/* f16 / bf16 rows written with stochastic rounding: sround.h, in SIMD (sround_body.h). */
EMB_SROUND_SIMD_KERNEL(requant_f16_avx2, EMB_F16)
EMB_SROUND_SIMD_KERNEL(requant_bf16_avx2, EMB_BF16)

/* The quantized rows' entries (kernels.h). */
void emb__kernels_init_quant_avx2(EmbKernels *k)
{
    k->gather[EMB_INT8] = gather_int8_avx2;
    k->gather_d[0][EMB_INT8] = gather_d16_int8_avx2;
    k->gather_d[1][EMB_INT8] = gather_d32_int8_avx2;
    k->gather_d[2][EMB_INT8] = gather_d64_int8_avx2;
    k->gather_d[3][EMB_INT8] = gather_d128_int8_avx2;
    k->gather_d[4][EMB_INT8] = gather_d256_int8_avx2;
    k->pool[EMB_INT8] = pool_int8_avx2;
    k->pool_nt[EMB_INT8] = pool_nt_int8_avx2;
    k->pool_d[0][EMB_INT8] = pool_d16_int8_avx2;
    k->pool_d[1][EMB_INT8] = pool_d32_int8_avx2;
    k->pool_d[2][EMB_INT8] = pool_d64_int8_avx2;
    k->pool_d[3][EMB_INT8] = pool_d128_int8_avx2;
    k->pool_d[4][EMB_INT8] = pool_d256_int8_avx2;
    k->bags_d[0][EMB_INT8] = bags_d16_int8_avx2;
    k->bags_d[1][EMB_INT8] = bags_d32_int8_avx2;
    k->bags_d[2][EMB_INT8] = bags_d64_int8_avx2;
    k->bags_d[3][EMB_INT8] = bags_d128_int8_avx2;
    k->bags_d[4][EMB_INT8] = bags_d256_int8_avx2;
    k->sumsq[EMB_INT8] = sumsq_int8_avx2;
    k->requant[EMB_INT8] = requant_int8_avx2;

    k->gather[EMB_INT4] = gather_int4_avx2;
    k->gather_d[0][EMB_INT4] = gather_d16_int4_avx2;
    k->gather_d[1][EMB_INT4] = gather_d32_int4_avx2;
    k->gather_d[2][EMB_INT4] = gather_d64_int4_avx2;
    k->gather_d[3][EMB_INT4] = gather_d128_int4_avx2;
    k->gather_d[4][EMB_INT4] = gather_d256_int4_avx2;
    k->pool[EMB_INT4] = pool_int4_avx2;
    k->pool_nt[EMB_INT4] = pool_nt_int4_avx2;
    k->pool_d[0][EMB_INT4] = pool_d16_int4_avx2;
    k->pool_d[1][EMB_INT4] = pool_d32_int4_avx2;
    k->pool_d[2][EMB_INT4] = pool_d64_int4_avx2;
    k->pool_d[3][EMB_INT4] = pool_d128_int4_avx2;
    k->pool_d[4][EMB_INT4] = pool_d256_int4_avx2;
    k->bags_d[0][EMB_INT4] = bags_d16_int4_avx2;
    k->bags_d[1][EMB_INT4] = bags_d32_int4_avx2;
    k->bags_d[2][EMB_INT4] = bags_d64_int4_avx2;
    k->bags_d[3][EMB_INT4] = bags_d128_int4_avx2;
    k->bags_d[4][EMB_INT4] = bags_d256_int4_avx2;
    k->sumsq[EMB_INT4] = sumsq_int4_avx2;
    k->requant[EMB_INT4] = requant_int4_avx2;
    k->requant[EMB_F16] = requant_f16_avx2;
    k->requant[EMB_BF16] = requant_bf16_avx2;
}
