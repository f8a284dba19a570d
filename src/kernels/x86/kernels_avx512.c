/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * kernels_avx512.c — the AVX-512 (F+BW+VL+DQ) kernels: 16-float vectors, the bodies of
 * simd_body.h stamped as one-line wrappers. Compiled in its own static library with the
 * AVX-512 flags of kernels/meson.build (-ffp-contract=off); called only after the dispatch
 * saw AVX-512. Tails use masked loads and stores (no fault past the mask). f16 conversions
 * are AVX-512F's vcvtph2ps/vcvtps2ph. FTRL's one-row kernels stay C; its range copies
 * take lr_power = -0.5 (a square root).
 *
 * Over 500 lines on purpose (scripts/code_metrics.py's exception list): one ISA's vector
 * primitives and every stamped wrapper and registration belong to one compilation unit
 * compiled with that ISA's flags; the bodies themselves are simd_body.h's.
 */
#include <immintrin.h>

#include "dtype.h"
#include "requant.h"
#include "kernels/x86/sround_body.h"
#include "sround.h"

#define VL 16
#define BLK 8
typedef __m512 vec;

static inline vec vzero(void)
{
    return _mm512_setzero_ps();
}
static inline vec vset1(float x)
{
    return _mm512_set1_ps(x);
}
static inline vec vadd(vec a, vec b)
{
    return _mm512_add_ps(a, b);
}
static inline vec vsub(vec a, vec b)
{
    return _mm512_sub_ps(a, b);
}
/* x > acc ? x : acc per lane (MAXPS returns its second operand unless the first is
   greater: NaNs and equal values keep acc), the C reference's max */
static inline vec vmax(vec x, vec acc)
{
    return _mm512_max_ps(x, acc);
}
/* a < b ? a : b per lane (MINPS returns its second operand unless the first is less) */
static inline vec vmin(vec a, vec b)
{
    return _mm512_min_ps(a, b);
}
static inline vec vmul(vec a, vec b)
{
    return _mm512_mul_ps(a, b);
}
/* a * b + c, one rounding (an explicit FMA: -ffp-contract=off fuses nothing else). */
static inline vec vfma(vec a, vec b, vec c)
{
    return _mm512_fmadd_ps(a, b, c);
}
static inline vec vdiv(vec a, vec b)
{
    return _mm512_div_ps(a, b);
}
static inline vec vsqrt(vec a)
{
    return _mm512_sqrt_ps(a);
}
/* FTRL's new weight: |l| > l1 ? (copysign(l1, l) - l) / quad : +0 (l1 >= 0). */
static inline vec vftrl_w(vec l, vec l1, vec quad)
{
    const vec sign = _mm512_set1_ps(-0.0f);
    const __mmask16 over = _mm512_cmp_ps_mask(_mm512_andnot_ps(sign, l), l1, _CMP_GT_OQ);
    const vec cs = _mm512_or_ps(_mm512_and_ps(sign, l), _mm512_andnot_ps(sign, l1));
    return _mm512_maskz_div_ps(over, _mm512_sub_ps(cs, l), quad);
}
/* acc + x²: elements 0 .. 7 of the vector, then 8 .. 15, as the reference's lanes i % 8. */
static inline __m256 sq8_add(__m256 acc, vec x)
{
    const vec q = vmul(x, x);
    acc = _mm256_add_ps(acc, _mm512_castps512_ps256(q));
    return _mm256_add_ps(acc, _mm512_extractf32x8_ps(q, 1));
}

/* Lanes [0, r) set. */
static inline __mmask16 tail_mask(int r)
{
    return (__mmask16)((1u << r) - 1);
}

/* ---- f32 ----------------------------------------------------------------------------- */

static inline vec ld_f32(const float *p)
{
    return _mm512_loadu_ps(p);
}
static inline vec ldn_f32(const float *p, int r)
{
    return _mm512_maskz_loadu_ps(tail_mask(r), p);
}
static inline void st_f32(float *p, vec v)
{
    _mm512_storeu_ps(p, v);
}
static inline void stn_f32(float *p, vec v, int r)
{
    _mm512_mask_storeu_ps(p, tail_mask(r), v);
}
static inline void stnt_f32(float *p, vec v)
{
    _mm512_stream_ps(p, v);
}

/* ---- 16-bit storage ------------------------------------------------------------------ */

static inline __m256i ld_u16(const uint16_t *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}
static inline __m256i ldn_u16(const uint16_t *p, int r)
{
    return _mm256_maskz_loadu_epi16(tail_mask(r), p);
}
static inline void stn_u16(uint16_t *p, __m256i h, int r)
{
    _mm256_mask_storeu_epi16(p, tail_mask(r), h);
}
static inline void st_u16(uint16_t *p, __m256i h)
{
    _mm256_storeu_si256((__m256i *)p, h);
}
static inline void stnt_u16(uint16_t *p, __m256i h)
{
    _mm256_stream_si256((__m256i *)p, h);
}

static inline vec cvt_from_f16(__m256i h)
{
    return _mm512_cvtph_ps(h);
}
static inline __m256i cvt_to_f16(vec v)
{
    return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
}
static inline vec cvt_from_bf16(__m256i h)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
/* As emb__f32_to_bf16: round to nearest even, a NaN stays a quiet NaN. */
static inline __m256i cvt_to_bf16(vec v)
{
    const __m512i u = _mm512_castps_si512(v), hi = _mm512_srli_epi32(u, 16);
    const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
    r = _mm512_srli_epi32(r, 16);
    const __m512i abs = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
    const __mmask16 isnan = _mm512_cmpgt_epu32_mask(abs, _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_or_epi32(r, isnan, hi, _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
}

/* 32 bf16 as the f32 values of elements 0, 2, .. 30 (lane << 16) and 1, 3, .. 31 (the
 * lane's high half). */
static inline void ld_bf16_pairs(const uint16_t *p, vec *even, vec *odd)
{
    const __m512i x = _mm512_loadu_si512(p);
    *even = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
    *odd = _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32((int)0xffff0000u)));
}
/* e0 o0 e1 o1 .. e7 o7 and e8 o8 .. e15 o15. */
static inline void zip_even_odd(vec even, vec odd, vec *lo, vec *hi)
{
    const __m512i i0 = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i i1 = _mm512_add_epi32(i0, _mm512_set1_epi32(8));
    *lo = _mm512_permutex2var_ps(even, i0, odd);
    *hi = _mm512_permutex2var_ps(even, i1, odd);
}

/* ---- row-wise quantized rows (x86/quant_body.h) --------------------------------------- */

/* 16 uint8 as f32. */
static inline vec ld_q8(const uint8_t *p)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p)));
}
static inline vec ldn_q8(const uint8_t *p, int r)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(tail_mask(r), p)));
}
/* The 16 nibbles of the 8 low bytes of @x (element 2j: the low nibble of byte j) as f32. */
static inline vec q4_expand(__m128i x)
{
    const __m512i v = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(x, x)); /* b0 b0 b1 b1 .. */
    const __m512i sh = _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4);
    return _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srlv_epi32(v, sh), _mm512_set1_epi32(15)));
}
static inline vec ld_q4(const uint8_t *p)
{
    return q4_expand(_mm_loadl_epi64((const __m128i *)p));
}
/* The 16 bytes at @p widened: their low nibbles (elements 0, 2, .. 30) and high ones. */
static inline void ld_q4_pairs(const uint8_t *p, vec *even, vec *odd)
{
    const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
    *even = _mm512_cvtepi32_ps(_mm512_and_si512(v, _mm512_set1_epi32(15)));
    *odd = _mm512_cvtepi32_ps(_mm512_srli_epi32(v, 4));
}
/* 32 nibbles of the 16 bytes at @p: low and high nibbles split, interleaved back into
 * bytes 0 .. 15 (elements 0 .. 15) and 16 .. 31, each widened to 16 f32. */
static inline void ld_q4x2(const uint8_t *p, vec *x0, vec *x1)
{
    const __m128i x = _mm_loadu_si128((const __m128i *)p), m = _mm_set1_epi8(15);
    const __m128i lo = _mm_and_si128(x, m), hi = _mm_and_si128(_mm_srli_epi16(x, 4), m);
    *x0 = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi)));
    *x1 = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpackhi_epi8(lo, hi)));
}
static inline vec ldn_q4(const uint8_t *p, int r)
{
    return q4_expand(_mm_maskz_loadu_epi8(tail_mask(r / 2), p));
}

#include "kernels/x86/simd_body.h"

GATHER(gather_f32_avx512, 0, EMB_F32)
GATHER(gather_d16_f32_avx512, 16, EMB_F32)
GATHER(gather_d32_f32_avx512, 32, EMB_F32)
GATHER(gather_d64_f32_avx512, 64, EMB_F32)
GATHER(gather_d128_f32_avx512, 128, EMB_F32)
GATHER(gather_d256_f32_avx512, 256, EMB_F32)
POOL(pool_f32_avx512, 0, 0, EMB_F32)
POOL(pool_nt_f32_avx512, 0, 1, EMB_F32)
POOL(pool_d16_f32_avx512, 16, 0, EMB_F32)
POOL(pool_d32_f32_avx512, 32, 0, EMB_F32)
POOL(pool_d64_f32_avx512, 64, 0, EMB_F32)
POOL(pool_d128_f32_avx512, 128, 0, EMB_F32)
POOL(pool_d256_f32_avx512, 256, 0, EMB_F32)
BAGS(bags_d16_f32_avx512, 16, EMB_F32)
BAGS(bags_d32_f32_avx512, 32, EMB_F32)
BAGS(bags_d64_f32_avx512, 64, EMB_F32)
BAGS(bags_d128_f32_avx512, 128, EMB_F32)
BAGS(bags_d256_f32_avx512, 256, EMB_F32)
SUMSQ(sumsq_f32_avx512, EMB_F32)
SGD(sgd_row_f32_avx512, 0, 0, EMB_F32)
SGD(sgd_row_nt_f32_avx512, 0, 1, EMB_F32)
SGD(sgd_row_d16_f32_avx512, 16, 0, EMB_F32)
SGD(sgd_row_d32_f32_avx512, 32, 0, EMB_F32)
SGD(sgd_row_d64_f32_avx512, 64, 0, EMB_F32)
SGD(sgd_row_d128_f32_avx512, 128, 0, EMB_F32)
SGD(sgd_row_d256_f32_avx512, 256, 0, EMB_F32)

GATHER(gather_f16_avx512, 0, EMB_F16)
GATHER(gather_d16_f16_avx512, 16, EMB_F16)
GATHER(gather_d32_f16_avx512, 32, EMB_F16)
GATHER(gather_d64_f16_avx512, 64, EMB_F16)
GATHER(gather_d128_f16_avx512, 128, EMB_F16)
GATHER(gather_d256_f16_avx512, 256, EMB_F16)
POOL(pool_f16_avx512, 0, 0, EMB_F16)
POOL(pool_nt_f16_avx512, 0, 1, EMB_F16)
POOL(pool_d16_f16_avx512, 16, 0, EMB_F16)
POOL(pool_d32_f16_avx512, 32, 0, EMB_F16)
POOL(pool_d64_f16_avx512, 64, 0, EMB_F16)
POOL(pool_d128_f16_avx512, 128, 0, EMB_F16)
POOL(pool_d256_f16_avx512, 256, 0, EMB_F16)
BAGS(bags_d16_f16_avx512, 16, EMB_F16)
BAGS(bags_d32_f16_avx512, 32, EMB_F16)
BAGS(bags_d64_f16_avx512, 64, EMB_F16)
BAGS(bags_d128_f16_avx512, 128, EMB_F16)
BAGS(bags_d256_f16_avx512, 256, EMB_F16)
SUMSQ(sumsq_f16_avx512, EMB_F16)
SGD(sgd_row_f16_avx512, 0, 0, EMB_F16)
SGD(sgd_row_nt_f16_avx512, 0, 1, EMB_F16)
SGD(sgd_row_d16_f16_avx512, 16, 0, EMB_F16)
SGD(sgd_row_d32_f16_avx512, 32, 0, EMB_F16)
SGD(sgd_row_d64_f16_avx512, 64, 0, EMB_F16)
SGD(sgd_row_d128_f16_avx512, 128, 0, EMB_F16)
SGD(sgd_row_d256_f16_avx512, 256, 0, EMB_F16)

GATHER(gather_bf16_avx512, 0, EMB_BF16)
GATHER(gather_d16_bf16_avx512, 16, EMB_BF16)
GATHER(gather_d32_bf16_avx512, 32, EMB_BF16)
GATHER(gather_d64_bf16_avx512, 64, EMB_BF16)
GATHER(gather_d128_bf16_avx512, 128, EMB_BF16)
GATHER(gather_d256_bf16_avx512, 256, EMB_BF16)
POOL(pool_bf16_avx512, 0, 0, EMB_BF16)
POOL(pool_nt_bf16_avx512, 0, 1, EMB_BF16)
POOL(pool_d16_bf16_avx512, 16, 0, EMB_BF16)
POOL(pool_d32_bf16_avx512, 32, 0, EMB_BF16)
POOL(pool_d64_bf16_avx512, 64, 0, EMB_BF16)
POOL(pool_d128_bf16_avx512, 128, 0, EMB_BF16)
POOL(pool_d256_bf16_avx512, 256, 0, EMB_BF16)
BAGS(bags_d16_bf16_avx512, 16, EMB_BF16)
BAGS(bags_d32_bf16_avx512, 32, EMB_BF16)
BAGS(bags_d64_bf16_avx512, 64, EMB_BF16)
BAGS(bags_d128_bf16_avx512, 128, EMB_BF16)
BAGS(bags_d256_bf16_avx512, 256, EMB_BF16)
SUMSQ(sumsq_bf16_avx512, EMB_BF16)
SGD(sgd_row_bf16_avx512, 0, 0, EMB_BF16)
SGD(sgd_row_nt_bf16_avx512, 0, 1, EMB_BF16)
SGD(sgd_row_d16_bf16_avx512, 16, 0, EMB_BF16)
SGD(sgd_row_d32_bf16_avx512, 32, 0, EMB_BF16)
SGD(sgd_row_d64_bf16_avx512, 64, 0, EMB_BF16)
SGD(sgd_row_d128_bf16_avx512, 128, 0, EMB_BF16)
SGD(sgd_row_d256_bf16_avx512, 256, 0, EMB_BF16)

OPT_ROW(adagrad_f32_avx512, adagrad_body, 0, 0, EMB_F32)
OPT_ROW(adagrad_nt_f32_avx512, adagrad_body, 0, 1, EMB_F32)
OPT_ROW(adagrad_d16_f32_avx512, adagrad_body, 16, 0, EMB_F32)
OPT_ROW(adagrad_d32_f32_avx512, adagrad_body, 32, 0, EMB_F32)
OPT_ROW(adagrad_d64_f32_avx512, adagrad_body, 64, 0, EMB_F32)
OPT_ROW(adagrad_d128_f32_avx512, adagrad_body, 128, 0, EMB_F32)
OPT_ROW(adagrad_d256_f32_avx512, adagrad_body, 256, 0, EMB_F32)
OPT_ROW(rowwise_f32_avx512, rowwise_body, 0, 0, EMB_F32)
OPT_ROW(rowwise_nt_f32_avx512, rowwise_body, 0, 1, EMB_F32)
OPT_ROW(rowwise_d16_f32_avx512, rowwise_body, 16, 0, EMB_F32)
OPT_ROW(rowwise_d32_f32_avx512, rowwise_body, 32, 0, EMB_F32)
OPT_ROW(rowwise_d64_f32_avx512, rowwise_body, 64, 0, EMB_F32)
OPT_ROW(rowwise_d128_f32_avx512, rowwise_body, 128, 0, EMB_F32)
OPT_ROW(rowwise_d256_f32_avx512, rowwise_body, 256, 0, EMB_F32)
OPT_ROW(adam_f32_avx512, adam_body, 0, 0, EMB_F32)
OPT_ROW(adam_nt_f32_avx512, adam_body, 0, 1, EMB_F32)
OPT_ROW(adam_d16_f32_avx512, adam_body, 16, 0, EMB_F32)
OPT_ROW(adam_d32_f32_avx512, adam_body, 32, 0, EMB_F32)
OPT_ROW(adam_d64_f32_avx512, adam_body, 64, 0, EMB_F32)
OPT_ROW(adam_d128_f32_avx512, adam_body, 128, 0, EMB_F32)
OPT_ROW(adam_d256_f32_avx512, adam_body, 256, 0, EMB_F32)
OPT_ROW(adagrad_f16_avx512, adagrad_body, 0, 0, EMB_F16)
OPT_ROW(adagrad_nt_f16_avx512, adagrad_body, 0, 1, EMB_F16)
OPT_ROW(adagrad_d16_f16_avx512, adagrad_body, 16, 0, EMB_F16)
OPT_ROW(adagrad_d32_f16_avx512, adagrad_body, 32, 0, EMB_F16)
OPT_ROW(adagrad_d64_f16_avx512, adagrad_body, 64, 0, EMB_F16)
OPT_ROW(adagrad_d128_f16_avx512, adagrad_body, 128, 0, EMB_F16)
OPT_ROW(adagrad_d256_f16_avx512, adagrad_body, 256, 0, EMB_F16)
OPT_ROW(rowwise_f16_avx512, rowwise_body, 0, 0, EMB_F16)
OPT_ROW(rowwise_nt_f16_avx512, rowwise_body, 0, 1, EMB_F16)
OPT_ROW(rowwise_d16_f16_avx512, rowwise_body, 16, 0, EMB_F16)
OPT_ROW(rowwise_d32_f16_avx512, rowwise_body, 32, 0, EMB_F16)
OPT_ROW(rowwise_d64_f16_avx512, rowwise_body, 64, 0, EMB_F16)
OPT_ROW(rowwise_d128_f16_avx512, rowwise_body, 128, 0, EMB_F16)
OPT_ROW(rowwise_d256_f16_avx512, rowwise_body, 256, 0, EMB_F16)
OPT_ROW(adam_f16_avx512, adam_body, 0, 0, EMB_F16)
OPT_ROW(adam_nt_f16_avx512, adam_body, 0, 1, EMB_F16)
OPT_ROW(adam_d16_f16_avx512, adam_body, 16, 0, EMB_F16)
OPT_ROW(adam_d32_f16_avx512, adam_body, 32, 0, EMB_F16)
OPT_ROW(adam_d64_f16_avx512, adam_body, 64, 0, EMB_F16)
OPT_ROW(adam_d128_f16_avx512, adam_body, 128, 0, EMB_F16)
OPT_ROW(adam_d256_f16_avx512, adam_body, 256, 0, EMB_F16)
OPT_ROW(adagrad_bf16_avx512, adagrad_body, 0, 0, EMB_BF16)
OPT_ROW(adagrad_nt_bf16_avx512, adagrad_body, 0, 1, EMB_BF16)
OPT_ROW(adagrad_d16_bf16_avx512, adagrad_body, 16, 0, EMB_BF16)
OPT_ROW(adagrad_d32_bf16_avx512, adagrad_body, 32, 0, EMB_BF16)
OPT_ROW(adagrad_d64_bf16_avx512, adagrad_body, 64, 0, EMB_BF16)
OPT_ROW(adagrad_d128_bf16_avx512, adagrad_body, 128, 0, EMB_BF16)
OPT_ROW(adagrad_d256_bf16_avx512, adagrad_body, 256, 0, EMB_BF16)
OPT_ROW(rowwise_bf16_avx512, rowwise_body, 0, 0, EMB_BF16)
OPT_ROW(rowwise_nt_bf16_avx512, rowwise_body, 0, 1, EMB_BF16)
OPT_ROW(rowwise_d16_bf16_avx512, rowwise_body, 16, 0, EMB_BF16)
OPT_ROW(rowwise_d32_bf16_avx512, rowwise_body, 32, 0, EMB_BF16)
OPT_ROW(rowwise_d64_bf16_avx512, rowwise_body, 64, 0, EMB_BF16)
OPT_ROW(rowwise_d128_bf16_avx512, rowwise_body, 128, 0, EMB_BF16)
OPT_ROW(rowwise_d256_bf16_avx512, rowwise_body, 256, 0, EMB_BF16)
OPT_ROW(adam_bf16_avx512, adam_body, 0, 0, EMB_BF16)
OPT_ROW(adam_nt_bf16_avx512, adam_body, 0, 1, EMB_BF16)
OPT_ROW(adam_d16_bf16_avx512, adam_body, 16, 0, EMB_BF16)
OPT_ROW(adam_d32_bf16_avx512, adam_body, 32, 0, EMB_BF16)
OPT_ROW(adam_d64_bf16_avx512, adam_body, 64, 0, EMB_BF16)
OPT_ROW(adam_d128_bf16_avx512, adam_body, 128, 0, EMB_BF16)
OPT_ROW(adam_d256_bf16_avx512, adam_body, 256, 0, EMB_BF16)

SGD_ROWS(sgd_rows_d16_f32_avx512, 16, EMB_F32)
SGD_ROWS(sgd_rows_d32_f32_avx512, 32, EMB_F32)
SGD_ROWS(sgd_rows_d64_f32_avx512, 64, EMB_F32)
SGD_ROWS(sgd_rows_d128_f32_avx512, 128, EMB_F32)
SGD_ROWS(sgd_rows_d256_f32_avx512, 256, EMB_F32)
SGD_ROWS(sgd_rows_d16_f16_avx512, 16, EMB_F16)
SGD_ROWS(sgd_rows_d32_f16_avx512, 32, EMB_F16)
SGD_ROWS(sgd_rows_d64_f16_avx512, 64, EMB_F16)
SGD_ROWS(sgd_rows_d128_f16_avx512, 128, EMB_F16)
SGD_ROWS(sgd_rows_d256_f16_avx512, 256, EMB_F16)
SGD_ROWS(sgd_rows_d16_bf16_avx512, 16, EMB_BF16)
SGD_ROWS(sgd_rows_d32_bf16_avx512, 32, EMB_BF16)
SGD_ROWS(sgd_rows_d64_bf16_avx512, 64, EMB_BF16)
SGD_ROWS(sgd_rows_d128_bf16_avx512, 128, EMB_BF16)
SGD_ROWS(sgd_rows_d256_bf16_avx512, 256, EMB_BF16)

OPT_ROWS(rowwise_rows_d16_f32_avx512, rowwise_rows_body, 16, EMB_F32)
OPT_ROWS(rowwise_rows_d32_f32_avx512, rowwise_rows_body, 32, EMB_F32)
OPT_ROWS(rowwise_rows_d64_f32_avx512, rowwise_rows_body, 64, EMB_F32)
OPT_ROWS(rowwise_rows_d128_f32_avx512, rowwise_rows_body, 128, EMB_F32)
OPT_ROWS(rowwise_rows_d256_f32_avx512, rowwise_rows_body, 256, EMB_F32)
OPT_ROWS(rowwise_rows_d16_f16_avx512, rowwise_rows_body, 16, EMB_F16)
OPT_ROWS(rowwise_rows_d32_f16_avx512, rowwise_rows_body, 32, EMB_F16)
OPT_ROWS(rowwise_rows_d64_f16_avx512, rowwise_rows_body, 64, EMB_F16)
OPT_ROWS(rowwise_rows_d128_f16_avx512, rowwise_rows_body, 128, EMB_F16)
OPT_ROWS(rowwise_rows_d256_f16_avx512, rowwise_rows_body, 256, EMB_F16)
OPT_ROWS(rowwise_rows_d16_bf16_avx512, rowwise_rows_body, 16, EMB_BF16)
OPT_ROWS(rowwise_rows_d32_bf16_avx512, rowwise_rows_body, 32, EMB_BF16)
OPT_ROWS(rowwise_rows_d64_bf16_avx512, rowwise_rows_body, 64, EMB_BF16)
OPT_ROWS(rowwise_rows_d128_bf16_avx512, rowwise_rows_body, 128, EMB_BF16)
OPT_ROWS(rowwise_rows_d256_bf16_avx512, rowwise_rows_body, 256, EMB_BF16)

OPT_ROWS(adagrad_rows_d16_f32_avx512, adagrad_rows_body, 16, EMB_F32)
OPT_ROWS(adagrad_rows_d32_f32_avx512, adagrad_rows_body, 32, EMB_F32)
OPT_ROWS(adagrad_rows_d64_f32_avx512, adagrad_rows_body, 64, EMB_F32)
OPT_ROWS(adagrad_rows_d128_f32_avx512, adagrad_rows_body, 128, EMB_F32)
OPT_ROWS(adagrad_rows_d256_f32_avx512, adagrad_rows_body, 256, EMB_F32)
OPT_ROWS(adam_rows_d16_f32_avx512, adam_rows_body, 16, EMB_F32)
OPT_ROWS(adam_rows_d32_f32_avx512, adam_rows_body, 32, EMB_F32)
OPT_ROWS(adam_rows_d64_f32_avx512, adam_rows_body, 64, EMB_F32)
OPT_ROWS(adam_rows_d128_f32_avx512, adam_rows_body, 128, EMB_F32)
OPT_ROWS(adam_rows_d256_f32_avx512, adam_rows_body, 256, EMB_F32)
OPT_ROWS(adagrad_rows_d16_f16_avx512, adagrad_rows_body, 16, EMB_F16)
OPT_ROWS(adagrad_rows_d32_f16_avx512, adagrad_rows_body, 32, EMB_F16)
OPT_ROWS(adagrad_rows_d64_f16_avx512, adagrad_rows_body, 64, EMB_F16)
OPT_ROWS(adagrad_rows_d128_f16_avx512, adagrad_rows_body, 128, EMB_F16)
OPT_ROWS(adagrad_rows_d256_f16_avx512, adagrad_rows_body, 256, EMB_F16)
OPT_ROWS(adam_rows_d16_f16_avx512, adam_rows_body, 16, EMB_F16)
OPT_ROWS(adam_rows_d32_f16_avx512, adam_rows_body, 32, EMB_F16)
OPT_ROWS(adam_rows_d64_f16_avx512, adam_rows_body, 64, EMB_F16)
OPT_ROWS(adam_rows_d128_f16_avx512, adam_rows_body, 128, EMB_F16)
OPT_ROWS(adam_rows_d256_f16_avx512, adam_rows_body, 256, EMB_F16)
OPT_ROWS(adagrad_rows_d16_bf16_avx512, adagrad_rows_body, 16, EMB_BF16)
OPT_ROWS(adagrad_rows_d32_bf16_avx512, adagrad_rows_body, 32, EMB_BF16)
OPT_ROWS(adagrad_rows_d64_bf16_avx512, adagrad_rows_body, 64, EMB_BF16)
OPT_ROWS(adagrad_rows_d128_bf16_avx512, adagrad_rows_body, 128, EMB_BF16)
OPT_ROWS(adagrad_rows_d256_bf16_avx512, adagrad_rows_body, 256, EMB_BF16)
OPT_ROWS(adam_rows_d16_bf16_avx512, adam_rows_body, 16, EMB_BF16)
OPT_ROWS(adam_rows_d32_bf16_avx512, adam_rows_body, 32, EMB_BF16)
OPT_ROWS(adam_rows_d64_bf16_avx512, adam_rows_body, 64, EMB_BF16)
OPT_ROWS(adam_rows_d128_bf16_avx512, adam_rows_body, 128, EMB_BF16)
OPT_ROWS(adam_rows_d256_bf16_avx512, adam_rows_body, 256, EMB_BF16)
OPT_ROWS(ftrl_rows_d16_f32_avx512, ftrl_rows_body, 16, EMB_F32)
OPT_ROWS(ftrl_rows_d32_f32_avx512, ftrl_rows_body, 32, EMB_F32)
OPT_ROWS(ftrl_rows_d64_f32_avx512, ftrl_rows_body, 64, EMB_F32)
OPT_ROWS(ftrl_rows_d128_f32_avx512, ftrl_rows_body, 128, EMB_F32)
OPT_ROWS(ftrl_rows_d256_f32_avx512, ftrl_rows_body, 256, EMB_F32)
OPT_ROWS(ftrl_rows_d16_f16_avx512, ftrl_rows_body, 16, EMB_F16)
OPT_ROWS(ftrl_rows_d32_f16_avx512, ftrl_rows_body, 32, EMB_F16)
OPT_ROWS(ftrl_rows_d64_f16_avx512, ftrl_rows_body, 64, EMB_F16)
OPT_ROWS(ftrl_rows_d128_f16_avx512, ftrl_rows_body, 128, EMB_F16)
OPT_ROWS(ftrl_rows_d256_f16_avx512, ftrl_rows_body, 256, EMB_F16)
OPT_ROWS(ftrl_rows_d16_bf16_avx512, ftrl_rows_body, 16, EMB_BF16)
OPT_ROWS(ftrl_rows_d32_bf16_avx512, ftrl_rows_body, 32, EMB_BF16)
OPT_ROWS(ftrl_rows_d64_bf16_avx512, ftrl_rows_body, 64, EMB_BF16)
OPT_ROWS(ftrl_rows_d128_bf16_avx512, ftrl_rows_body, 128, EMB_BF16)
OPT_ROWS(ftrl_rows_d256_bf16_avx512, ftrl_rows_body, 256, EMB_BF16)

static void scale_avx512(float *x, float s, int32_t D)
{
    scale_body(x, s, D);
}
/* idmax_c with one unsigned vector max per 16 (int32) or 8 (int64) ids, a masked tail. */
static uint64_t idmax_avx512(const void *ids, int64_t n, int id32)
{
    __m512i m = _mm512_setzero_si512();
    int64_t k = 0;
    if (id32) {
        const int32_t *p = ids;
        for (; k + 16 <= n; k += 16)
            m = _mm512_max_epu32(m, _mm512_loadu_si512(p + k));
        if (k < n)
            m = _mm512_max_epu32(m, _mm512_maskz_loadu_epi32(tail_mask((int)(n - k)), p + k));
        return _mm512_reduce_max_epu32(m);
    }
    const int64_t *p = ids;
    for (; k + 8 <= n; k += 8)
        m = _mm512_max_epu64(m, _mm512_loadu_si512(p + k));
    if (k < n)
        m = _mm512_max_epu64(m, _mm512_maskz_loadu_epi64((__mmask8)tail_mask((int)(n - k)), p + k));
    return _mm512_reduce_max_epu64(m);
}

/* The static-size range kernels of FTRL (lr_power = -0.5). */
static void init_rows_ftrl(EmbKernels *k)
{
    k->rows_d[0][EMB_OPT_FTRL][EMB_F32] = ftrl_rows_d16_f32_avx512;
    k->rows_d[1][EMB_OPT_FTRL][EMB_F32] = ftrl_rows_d32_f32_avx512;
    k->rows_d[2][EMB_OPT_FTRL][EMB_F32] = ftrl_rows_d64_f32_avx512;
    k->rows_d[3][EMB_OPT_FTRL][EMB_F32] = ftrl_rows_d128_f32_avx512;
    k->rows_d[4][EMB_OPT_FTRL][EMB_F32] = ftrl_rows_d256_f32_avx512;
    k->rows_d[0][EMB_OPT_FTRL][EMB_F16] = ftrl_rows_d16_f16_avx512;
    k->rows_d[1][EMB_OPT_FTRL][EMB_F16] = ftrl_rows_d32_f16_avx512;
    k->rows_d[2][EMB_OPT_FTRL][EMB_F16] = ftrl_rows_d64_f16_avx512;
    k->rows_d[3][EMB_OPT_FTRL][EMB_F16] = ftrl_rows_d128_f16_avx512;
    k->rows_d[4][EMB_OPT_FTRL][EMB_F16] = ftrl_rows_d256_f16_avx512;
    k->rows_d[0][EMB_OPT_FTRL][EMB_BF16] = ftrl_rows_d16_bf16_avx512;
    k->rows_d[1][EMB_OPT_FTRL][EMB_BF16] = ftrl_rows_d32_bf16_avx512;
    k->rows_d[2][EMB_OPT_FTRL][EMB_BF16] = ftrl_rows_d64_bf16_avx512;
    k->rows_d[3][EMB_OPT_FTRL][EMB_BF16] = ftrl_rows_d128_bf16_avx512;
    k->rows_d[4][EMB_OPT_FTRL][EMB_BF16] = ftrl_rows_d256_bf16_avx512;
}

/* The static-size range kernels of SGD and row-wise Adagrad. */
static void init_rows_sgd_rowwise(EmbKernels *k)
{
    k->rows_d[0][EMB_OPT_SGD][EMB_F32] = sgd_rows_d16_f32_avx512;
    k->rows_d[1][EMB_OPT_SGD][EMB_F32] = sgd_rows_d32_f32_avx512;
    k->rows_d[2][EMB_OPT_SGD][EMB_F32] = sgd_rows_d64_f32_avx512;
    k->rows_d[3][EMB_OPT_SGD][EMB_F32] = sgd_rows_d128_f32_avx512;
    k->rows_d[4][EMB_OPT_SGD][EMB_F32] = sgd_rows_d256_f32_avx512;
    k->rows_d[0][EMB_OPT_SGD][EMB_F16] = sgd_rows_d16_f16_avx512;
    k->rows_d[1][EMB_OPT_SGD][EMB_F16] = sgd_rows_d32_f16_avx512;
    k->rows_d[2][EMB_OPT_SGD][EMB_F16] = sgd_rows_d64_f16_avx512;
    k->rows_d[3][EMB_OPT_SGD][EMB_F16] = sgd_rows_d128_f16_avx512;
    k->rows_d[4][EMB_OPT_SGD][EMB_F16] = sgd_rows_d256_f16_avx512;
    k->rows_d[0][EMB_OPT_SGD][EMB_BF16] = sgd_rows_d16_bf16_avx512;
    k->rows_d[1][EMB_OPT_SGD][EMB_BF16] = sgd_rows_d32_bf16_avx512;
    k->rows_d[2][EMB_OPT_SGD][EMB_BF16] = sgd_rows_d64_bf16_avx512;
    k->rows_d[3][EMB_OPT_SGD][EMB_BF16] = sgd_rows_d128_bf16_avx512;
    k->rows_d[4][EMB_OPT_SGD][EMB_BF16] = sgd_rows_d256_bf16_avx512;
    k->rows_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_rows_d16_f32_avx512;
    k->rows_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_rows_d32_f32_avx512;
    k->rows_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_rows_d64_f32_avx512;
    k->rows_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_rows_d128_f32_avx512;
    k->rows_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_rows_d256_f32_avx512;
    k->rows_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_rows_d16_f16_avx512;
    k->rows_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_rows_d32_f16_avx512;
    k->rows_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_rows_d64_f16_avx512;
    k->rows_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_rows_d128_f16_avx512;
    k->rows_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_rows_d256_f16_avx512;
    k->rows_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_rows_d16_bf16_avx512;
    k->rows_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_rows_d32_bf16_avx512;
    k->rows_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_rows_d64_bf16_avx512;
    k->rows_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_rows_d128_bf16_avx512;
    k->rows_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_rows_d256_bf16_avx512;
}

/* The static-size range kernels of Adagrad and Adam. */
static void init_rows_adagrad_adam(EmbKernels *k)
{
    k->rows_d[0][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_rows_d16_f32_avx512;
    k->rows_d[1][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_rows_d32_f32_avx512;
    k->rows_d[2][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_rows_d64_f32_avx512;
    k->rows_d[3][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_rows_d128_f32_avx512;
    k->rows_d[4][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_rows_d256_f32_avx512;
    k->rows_d[0][EMB_OPT_ADAM][EMB_F32] = adam_rows_d16_f32_avx512;
    k->rows_d[1][EMB_OPT_ADAM][EMB_F32] = adam_rows_d32_f32_avx512;
    k->rows_d[2][EMB_OPT_ADAM][EMB_F32] = adam_rows_d64_f32_avx512;
    k->rows_d[3][EMB_OPT_ADAM][EMB_F32] = adam_rows_d128_f32_avx512;
    k->rows_d[4][EMB_OPT_ADAM][EMB_F32] = adam_rows_d256_f32_avx512;
    k->rows_d[0][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_rows_d16_f16_avx512;
    k->rows_d[1][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_rows_d32_f16_avx512;
    k->rows_d[2][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_rows_d64_f16_avx512;
    k->rows_d[3][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_rows_d128_f16_avx512;
    k->rows_d[4][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_rows_d256_f16_avx512;
    k->rows_d[0][EMB_OPT_ADAM][EMB_F16] = adam_rows_d16_f16_avx512;
    k->rows_d[1][EMB_OPT_ADAM][EMB_F16] = adam_rows_d32_f16_avx512;
    k->rows_d[2][EMB_OPT_ADAM][EMB_F16] = adam_rows_d64_f16_avx512;
    k->rows_d[3][EMB_OPT_ADAM][EMB_F16] = adam_rows_d128_f16_avx512;
    k->rows_d[4][EMB_OPT_ADAM][EMB_F16] = adam_rows_d256_f16_avx512;
    k->rows_d[0][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_rows_d16_bf16_avx512;
    k->rows_d[1][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_rows_d32_bf16_avx512;
    k->rows_d[2][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_rows_d64_bf16_avx512;
    k->rows_d[3][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_rows_d128_bf16_avx512;
    k->rows_d[4][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_rows_d256_bf16_avx512;
    k->rows_d[0][EMB_OPT_ADAM][EMB_BF16] = adam_rows_d16_bf16_avx512;
    k->rows_d[1][EMB_OPT_ADAM][EMB_BF16] = adam_rows_d32_bf16_avx512;
    k->rows_d[2][EMB_OPT_ADAM][EMB_BF16] = adam_rows_d64_bf16_avx512;
    k->rows_d[3][EMB_OPT_ADAM][EMB_BF16] = adam_rows_d128_bf16_avx512;
    k->rows_d[4][EMB_OPT_ADAM][EMB_BF16] = adam_rows_d256_bf16_avx512;
}

/* The one-row optimizer kernels of f32. */
static void init_opt_row_f32(EmbKernels *k)
{
    k->opt_row[EMB_OPT_ADAGRAD][EMB_F32] = adagrad_f32_avx512;
    k->opt_row_nt[EMB_OPT_ADAGRAD][EMB_F32] = adagrad_nt_f32_avx512;
    k->opt_row_d[0][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_d16_f32_avx512;
    k->opt_row_d[1][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_d32_f32_avx512;
    k->opt_row_d[2][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_d64_f32_avx512;
    k->opt_row_d[3][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_d128_f32_avx512;
    k->opt_row_d[4][EMB_OPT_ADAGRAD][EMB_F32] = adagrad_d256_f32_avx512;
    k->opt_row[EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_f32_avx512;
    k->opt_row_nt[EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_nt_f32_avx512;
    k->opt_row_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_d16_f32_avx512;
    k->opt_row_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_d32_f32_avx512;
    k->opt_row_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_d64_f32_avx512;
    k->opt_row_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_d128_f32_avx512;
    k->opt_row_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32] = rowwise_d256_f32_avx512;
    k->opt_row[EMB_OPT_ADAM][EMB_F32] = adam_f32_avx512;
    k->opt_row_nt[EMB_OPT_ADAM][EMB_F32] = adam_nt_f32_avx512;
    k->opt_row_d[0][EMB_OPT_ADAM][EMB_F32] = adam_d16_f32_avx512;
    k->opt_row_d[1][EMB_OPT_ADAM][EMB_F32] = adam_d32_f32_avx512;
    k->opt_row_d[2][EMB_OPT_ADAM][EMB_F32] = adam_d64_f32_avx512;
    k->opt_row_d[3][EMB_OPT_ADAM][EMB_F32] = adam_d128_f32_avx512;
    k->opt_row_d[4][EMB_OPT_ADAM][EMB_F32] = adam_d256_f32_avx512;
}

/* The one-row optimizer kernels of f16. */
static void init_opt_row_f16(EmbKernels *k)
{
    k->opt_row[EMB_OPT_ADAGRAD][EMB_F16] = adagrad_f16_avx512;
    k->opt_row_nt[EMB_OPT_ADAGRAD][EMB_F16] = adagrad_nt_f16_avx512;
    k->opt_row_d[0][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_d16_f16_avx512;
    k->opt_row_d[1][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_d32_f16_avx512;
    k->opt_row_d[2][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_d64_f16_avx512;
    k->opt_row_d[3][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_d128_f16_avx512;
    k->opt_row_d[4][EMB_OPT_ADAGRAD][EMB_F16] = adagrad_d256_f16_avx512;
    k->opt_row[EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_f16_avx512;
    k->opt_row_nt[EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_nt_f16_avx512;
    k->opt_row_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_d16_f16_avx512;
    k->opt_row_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_d32_f16_avx512;
    k->opt_row_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_d64_f16_avx512;
    k->opt_row_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_d128_f16_avx512;
    k->opt_row_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16] = rowwise_d256_f16_avx512;
    k->opt_row[EMB_OPT_ADAM][EMB_F16] = adam_f16_avx512;
    k->opt_row_nt[EMB_OPT_ADAM][EMB_F16] = adam_nt_f16_avx512;
    k->opt_row_d[0][EMB_OPT_ADAM][EMB_F16] = adam_d16_f16_avx512;
    k->opt_row_d[1][EMB_OPT_ADAM][EMB_F16] = adam_d32_f16_avx512;
    k->opt_row_d[2][EMB_OPT_ADAM][EMB_F16] = adam_d64_f16_avx512;
    k->opt_row_d[3][EMB_OPT_ADAM][EMB_F16] = adam_d128_f16_avx512;
    k->opt_row_d[4][EMB_OPT_ADAM][EMB_F16] = adam_d256_f16_avx512;
}

/* The one-row optimizer kernels of bf16. */
static void init_opt_row_bf16(EmbKernels *k)
{
    k->opt_row[EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_bf16_avx512;
    k->opt_row_nt[EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_nt_bf16_avx512;
    k->opt_row_d[0][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_d16_bf16_avx512;
    k->opt_row_d[1][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_d32_bf16_avx512;
    k->opt_row_d[2][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_d64_bf16_avx512;
    k->opt_row_d[3][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_d128_bf16_avx512;
    k->opt_row_d[4][EMB_OPT_ADAGRAD][EMB_BF16] = adagrad_d256_bf16_avx512;
    k->opt_row[EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_bf16_avx512;
    k->opt_row_nt[EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_nt_bf16_avx512;
    k->opt_row_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_d16_bf16_avx512;
    k->opt_row_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_d32_bf16_avx512;
    k->opt_row_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_d64_bf16_avx512;
    k->opt_row_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_d128_bf16_avx512;
    k->opt_row_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16] = rowwise_d256_bf16_avx512;
    k->opt_row[EMB_OPT_ADAM][EMB_BF16] = adam_bf16_avx512;
    k->opt_row_nt[EMB_OPT_ADAM][EMB_BF16] = adam_nt_bf16_avx512;
    k->opt_row_d[0][EMB_OPT_ADAM][EMB_BF16] = adam_d16_bf16_avx512;
    k->opt_row_d[1][EMB_OPT_ADAM][EMB_BF16] = adam_d32_bf16_avx512;
    k->opt_row_d[2][EMB_OPT_ADAM][EMB_BF16] = adam_d64_bf16_avx512;
    k->opt_row_d[3][EMB_OPT_ADAM][EMB_BF16] = adam_d128_bf16_avx512;
    k->opt_row_d[4][EMB_OPT_ADAM][EMB_BF16] = adam_d256_bf16_avx512;
}

/* f32: gather, pool, bags, sum of squares, SGD row. */
static void init_f32(EmbKernels *k)
{
    k->gather[EMB_F32] = gather_f32_avx512;
    k->gather_d[0][EMB_F32] = gather_d16_f32_avx512;
    k->gather_d[1][EMB_F32] = gather_d32_f32_avx512;
    k->gather_d[2][EMB_F32] = gather_d64_f32_avx512;
    k->gather_d[3][EMB_F32] = gather_d128_f32_avx512;
    k->gather_d[4][EMB_F32] = gather_d256_f32_avx512;
    k->pool[EMB_F32] = pool_f32_avx512;
    k->pool_nt[EMB_F32] = pool_nt_f32_avx512;
    k->pool_d[0][EMB_F32] = pool_d16_f32_avx512;
    k->pool_d[1][EMB_F32] = pool_d32_f32_avx512;
    k->pool_d[2][EMB_F32] = pool_d64_f32_avx512;
    k->pool_d[3][EMB_F32] = pool_d128_f32_avx512;
    k->pool_d[4][EMB_F32] = pool_d256_f32_avx512;
    k->bags_d[0][EMB_F32] = bags_d16_f32_avx512;
    k->bags_d[1][EMB_F32] = bags_d32_f32_avx512;
    k->bags_d[2][EMB_F32] = bags_d64_f32_avx512;
    k->bags_d[3][EMB_F32] = bags_d128_f32_avx512;
    k->bags_d[4][EMB_F32] = bags_d256_f32_avx512;
    k->sumsq[EMB_F32] = sumsq_f32_avx512;
    k->sgd_row[EMB_F32] = sgd_row_f32_avx512;
    k->sgd_row_nt[EMB_F32] = sgd_row_nt_f32_avx512;
    k->sgd_row_d[0][EMB_F32] = sgd_row_d16_f32_avx512;
    k->sgd_row_d[1][EMB_F32] = sgd_row_d32_f32_avx512;
    k->sgd_row_d[2][EMB_F32] = sgd_row_d64_f32_avx512;
    k->sgd_row_d[3][EMB_F32] = sgd_row_d128_f32_avx512;
    k->sgd_row_d[4][EMB_F32] = sgd_row_d256_f32_avx512;
}

/* f16: gather, pool, bags, sum of squares, SGD row. */
static void init_f16(EmbKernels *k)
{
    k->gather[EMB_F16] = gather_f16_avx512;
    k->gather_d[0][EMB_F16] = gather_d16_f16_avx512;
    k->gather_d[1][EMB_F16] = gather_d32_f16_avx512;
    k->gather_d[2][EMB_F16] = gather_d64_f16_avx512;
    k->gather_d[3][EMB_F16] = gather_d128_f16_avx512;
    k->gather_d[4][EMB_F16] = gather_d256_f16_avx512;
    k->pool[EMB_F16] = pool_f16_avx512;
    k->pool_nt[EMB_F16] = pool_nt_f16_avx512;
    k->pool_d[0][EMB_F16] = pool_d16_f16_avx512;
    k->pool_d[1][EMB_F16] = pool_d32_f16_avx512;
    k->pool_d[2][EMB_F16] = pool_d64_f16_avx512;
    k->pool_d[3][EMB_F16] = pool_d128_f16_avx512;
    k->pool_d[4][EMB_F16] = pool_d256_f16_avx512;
    k->bags_d[0][EMB_F16] = bags_d16_f16_avx512;
    k->bags_d[1][EMB_F16] = bags_d32_f16_avx512;
    k->bags_d[2][EMB_F16] = bags_d64_f16_avx512;
    k->bags_d[3][EMB_F16] = bags_d128_f16_avx512;
    k->bags_d[4][EMB_F16] = bags_d256_f16_avx512;
    k->sumsq[EMB_F16] = sumsq_f16_avx512;
    k->sgd_row[EMB_F16] = sgd_row_f16_avx512;
    k->sgd_row_nt[EMB_F16] = sgd_row_nt_f16_avx512;
    k->sgd_row_d[0][EMB_F16] = sgd_row_d16_f16_avx512;
    k->sgd_row_d[1][EMB_F16] = sgd_row_d32_f16_avx512;
    k->sgd_row_d[2][EMB_F16] = sgd_row_d64_f16_avx512;
    k->sgd_row_d[3][EMB_F16] = sgd_row_d128_f16_avx512;
    k->sgd_row_d[4][EMB_F16] = sgd_row_d256_f16_avx512;
}

/* bf16: gather, pool, bags, sum of squares, SGD row. */
static void init_bf16(EmbKernels *k)
{
    k->gather[EMB_BF16] = gather_bf16_avx512;
    k->gather_d[0][EMB_BF16] = gather_d16_bf16_avx512;
    k->gather_d[1][EMB_BF16] = gather_d32_bf16_avx512;
    k->gather_d[2][EMB_BF16] = gather_d64_bf16_avx512;
    k->gather_d[3][EMB_BF16] = gather_d128_bf16_avx512;
    k->gather_d[4][EMB_BF16] = gather_d256_bf16_avx512;
    k->pool[EMB_BF16] = pool_bf16_avx512;
    k->pool_nt[EMB_BF16] = pool_nt_bf16_avx512;
    k->pool_d[0][EMB_BF16] = pool_d16_bf16_avx512;
    k->pool_d[1][EMB_BF16] = pool_d32_bf16_avx512;
    k->pool_d[2][EMB_BF16] = pool_d64_bf16_avx512;
    k->pool_d[3][EMB_BF16] = pool_d128_bf16_avx512;
    k->pool_d[4][EMB_BF16] = pool_d256_bf16_avx512;
    k->bags_d[0][EMB_BF16] = bags_d16_bf16_avx512;
    k->bags_d[1][EMB_BF16] = bags_d32_bf16_avx512;
    k->bags_d[2][EMB_BF16] = bags_d64_bf16_avx512;
    k->bags_d[3][EMB_BF16] = bags_d128_bf16_avx512;
    k->bags_d[4][EMB_BF16] = bags_d256_bf16_avx512;
    k->sumsq[EMB_BF16] = sumsq_bf16_avx512;
    k->sgd_row[EMB_BF16] = sgd_row_bf16_avx512;
    k->sgd_row_nt[EMB_BF16] = sgd_row_nt_bf16_avx512;
    k->sgd_row_d[0][EMB_BF16] = sgd_row_d16_bf16_avx512;
    k->sgd_row_d[1][EMB_BF16] = sgd_row_d32_bf16_avx512;
    k->sgd_row_d[2][EMB_BF16] = sgd_row_d64_bf16_avx512;
    k->sgd_row_d[3][EMB_BF16] = sgd_row_d128_bf16_avx512;
    k->sgd_row_d[4][EMB_BF16] = sgd_row_d256_bf16_avx512;
}

/* ---- MAX pooling (pool_max_body), every dtype ------------------------------------------ */

BAGS_MAX(bags_max_d16_f32_avx512, 16, EMB_F32)
BAGS_MAX(bags_max_d32_f32_avx512, 32, EMB_F32)
BAGS_MAX(bags_max_d64_f32_avx512, 64, EMB_F32)
BAGS_MAX(bags_max_d128_f32_avx512, 128, EMB_F32)
BAGS_MAX(bags_max_d256_f32_avx512, 256, EMB_F32)
BAGS_MAX(bags_max_d16_f16_avx512, 16, EMB_F16)
BAGS_MAX(bags_max_d32_f16_avx512, 32, EMB_F16)
BAGS_MAX(bags_max_d64_f16_avx512, 64, EMB_F16)
BAGS_MAX(bags_max_d128_f16_avx512, 128, EMB_F16)
BAGS_MAX(bags_max_d256_f16_avx512, 256, EMB_F16)
BAGS_MAX(bags_max_d16_bf16_avx512, 16, EMB_BF16)
BAGS_MAX(bags_max_d32_bf16_avx512, 32, EMB_BF16)
BAGS_MAX(bags_max_d64_bf16_avx512, 64, EMB_BF16)
BAGS_MAX(bags_max_d128_bf16_avx512, 128, EMB_BF16)
BAGS_MAX(bags_max_d256_bf16_avx512, 256, EMB_BF16)
BAGS_MAX(bags_max_d16_int8_avx512, 16, EMB_INT8)
BAGS_MAX(bags_max_d32_int8_avx512, 32, EMB_INT8)
BAGS_MAX(bags_max_d64_int8_avx512, 64, EMB_INT8)
BAGS_MAX(bags_max_d128_int8_avx512, 128, EMB_INT8)
BAGS_MAX(bags_max_d256_int8_avx512, 256, EMB_INT8)
BAGS_MAX(bags_max_d16_int4_avx512, 16, EMB_INT4)
BAGS_MAX(bags_max_d32_int4_avx512, 32, EMB_INT4)
BAGS_MAX(bags_max_d64_int4_avx512, 64, EMB_INT4)
BAGS_MAX(bags_max_d128_int4_avx512, 128, EMB_INT4)
BAGS_MAX(bags_max_d256_int4_avx512, 256, EMB_INT4)
POOL_MAX(pool_max_f32_avx512, 0, EMB_F32)
POOL_MAX(pool_max_d16_f32_avx512, 16, EMB_F32)
POOL_MAX(pool_max_d32_f32_avx512, 32, EMB_F32)
POOL_MAX(pool_max_d64_f32_avx512, 64, EMB_F32)
POOL_MAX(pool_max_d128_f32_avx512, 128, EMB_F32)
POOL_MAX(pool_max_d256_f32_avx512, 256, EMB_F32)
POOL_MAX(pool_max_f16_avx512, 0, EMB_F16)
POOL_MAX(pool_max_d16_f16_avx512, 16, EMB_F16)
POOL_MAX(pool_max_d32_f16_avx512, 32, EMB_F16)
POOL_MAX(pool_max_d64_f16_avx512, 64, EMB_F16)
POOL_MAX(pool_max_d128_f16_avx512, 128, EMB_F16)
POOL_MAX(pool_max_d256_f16_avx512, 256, EMB_F16)
POOL_MAX(pool_max_bf16_avx512, 0, EMB_BF16)
POOL_MAX(pool_max_d16_bf16_avx512, 16, EMB_BF16)
POOL_MAX(pool_max_d32_bf16_avx512, 32, EMB_BF16)
POOL_MAX(pool_max_d64_bf16_avx512, 64, EMB_BF16)
POOL_MAX(pool_max_d128_bf16_avx512, 128, EMB_BF16)
POOL_MAX(pool_max_d256_bf16_avx512, 256, EMB_BF16)
POOL_MAX(pool_max_int8_avx512, 0, EMB_INT8)
POOL_MAX(pool_max_d16_int8_avx512, 16, EMB_INT8)
POOL_MAX(pool_max_d32_int8_avx512, 32, EMB_INT8)
POOL_MAX(pool_max_d64_int8_avx512, 64, EMB_INT8)
POOL_MAX(pool_max_d128_int8_avx512, 128, EMB_INT8)
POOL_MAX(pool_max_d256_int8_avx512, 256, EMB_INT8)
POOL_MAX(pool_max_int4_avx512, 0, EMB_INT4)
POOL_MAX(pool_max_d16_int4_avx512, 16, EMB_INT4)
POOL_MAX(pool_max_d32_int4_avx512, 32, EMB_INT4)
POOL_MAX(pool_max_d64_int4_avx512, 64, EMB_INT4)
POOL_MAX(pool_max_d128_int4_avx512, 128, EMB_INT4)
POOL_MAX(pool_max_d256_int4_avx512, 256, EMB_INT4)

/* The MAX pooling and bags kernels. */
static void init_pool_max(EmbKernels *k)
{
    k->pool_max[EMB_F32] = pool_max_f32_avx512;
    k->bags_max_d[0][EMB_F32] = bags_max_d16_f32_avx512;
    k->bags_max_d[1][EMB_F32] = bags_max_d32_f32_avx512;
    k->bags_max_d[2][EMB_F32] = bags_max_d64_f32_avx512;
    k->bags_max_d[3][EMB_F32] = bags_max_d128_f32_avx512;
    k->bags_max_d[4][EMB_F32] = bags_max_d256_f32_avx512;
    k->pool_max_d[0][EMB_F32] = pool_max_d16_f32_avx512;
    k->pool_max_d[1][EMB_F32] = pool_max_d32_f32_avx512;
    k->pool_max_d[2][EMB_F32] = pool_max_d64_f32_avx512;
    k->pool_max_d[3][EMB_F32] = pool_max_d128_f32_avx512;
    k->pool_max_d[4][EMB_F32] = pool_max_d256_f32_avx512;
    k->pool_max[EMB_F16] = pool_max_f16_avx512;
    k->bags_max_d[0][EMB_F16] = bags_max_d16_f16_avx512;
    k->bags_max_d[1][EMB_F16] = bags_max_d32_f16_avx512;
    k->bags_max_d[2][EMB_F16] = bags_max_d64_f16_avx512;
    k->bags_max_d[3][EMB_F16] = bags_max_d128_f16_avx512;
    k->bags_max_d[4][EMB_F16] = bags_max_d256_f16_avx512;
    k->pool_max_d[0][EMB_F16] = pool_max_d16_f16_avx512;
    k->pool_max_d[1][EMB_F16] = pool_max_d32_f16_avx512;
    k->pool_max_d[2][EMB_F16] = pool_max_d64_f16_avx512;
    k->pool_max_d[3][EMB_F16] = pool_max_d128_f16_avx512;
    k->pool_max_d[4][EMB_F16] = pool_max_d256_f16_avx512;
    k->pool_max[EMB_BF16] = pool_max_bf16_avx512;
    k->bags_max_d[0][EMB_BF16] = bags_max_d16_bf16_avx512;
    k->bags_max_d[1][EMB_BF16] = bags_max_d32_bf16_avx512;
    k->bags_max_d[2][EMB_BF16] = bags_max_d64_bf16_avx512;
    k->bags_max_d[3][EMB_BF16] = bags_max_d128_bf16_avx512;
    k->bags_max_d[4][EMB_BF16] = bags_max_d256_bf16_avx512;
    k->pool_max_d[0][EMB_BF16] = pool_max_d16_bf16_avx512;
    k->pool_max_d[1][EMB_BF16] = pool_max_d32_bf16_avx512;
    k->pool_max_d[2][EMB_BF16] = pool_max_d64_bf16_avx512;
    k->pool_max_d[3][EMB_BF16] = pool_max_d128_bf16_avx512;
    k->pool_max_d[4][EMB_BF16] = pool_max_d256_bf16_avx512;
    k->pool_max[EMB_INT8] = pool_max_int8_avx512;
    k->bags_max_d[0][EMB_INT8] = bags_max_d16_int8_avx512;
    k->bags_max_d[1][EMB_INT8] = bags_max_d32_int8_avx512;
    k->bags_max_d[2][EMB_INT8] = bags_max_d64_int8_avx512;
    k->bags_max_d[3][EMB_INT8] = bags_max_d128_int8_avx512;
    k->bags_max_d[4][EMB_INT8] = bags_max_d256_int8_avx512;
    k->pool_max_d[0][EMB_INT8] = pool_max_d16_int8_avx512;
    k->pool_max_d[1][EMB_INT8] = pool_max_d32_int8_avx512;
    k->pool_max_d[2][EMB_INT8] = pool_max_d64_int8_avx512;
    k->pool_max_d[3][EMB_INT8] = pool_max_d128_int8_avx512;
    k->pool_max_d[4][EMB_INT8] = pool_max_d256_int8_avx512;
    k->pool_max[EMB_INT4] = pool_max_int4_avx512;
    k->bags_max_d[0][EMB_INT4] = bags_max_d16_int4_avx512;
    k->bags_max_d[1][EMB_INT4] = bags_max_d32_int4_avx512;
    k->bags_max_d[2][EMB_INT4] = bags_max_d64_int4_avx512;
    k->bags_max_d[3][EMB_INT4] = bags_max_d128_int4_avx512;
    k->bags_max_d[4][EMB_INT4] = bags_max_d256_int4_avx512;
    k->pool_max_d[0][EMB_INT4] = pool_max_d16_int4_avx512;
    k->pool_max_d[1][EMB_INT4] = pool_max_d32_int4_avx512;
    k->pool_max_d[2][EMB_INT4] = pool_max_d64_int4_avx512;
    k->pool_max_d[3][EMB_INT4] = pool_max_d128_int4_avx512;
    k->pool_max_d[4][EMB_INT4] = pool_max_d256_int4_avx512;
}

/* The AVX-512 level over the AVX2 one. */
void emb__kernels_init_avx512(EmbKernels *k, unsigned flags)
{
    (void)flags;
    init_rows_sgd_rowwise(k);
    init_rows_adagrad_adam(k);
    init_rows_ftrl(k);
    init_opt_row_f32(k);
    init_opt_row_f16(k);
    init_opt_row_bf16(k);
    init_f32(k);
    init_f16(k);
    init_bf16(k);
    init_pool_max(k);
    k->scale = scale_avx512;
    k->idmax = idmax_avx512;
}


QGATHER(gather_int8_avx512, 0, EMB_INT8)
QGATHER(gather_d16_int8_avx512, 16, EMB_INT8)
QGATHER(gather_d32_int8_avx512, 32, EMB_INT8)
QGATHER(gather_d64_int8_avx512, 64, EMB_INT8)
QGATHER(gather_d128_int8_avx512, 128, EMB_INT8)
QGATHER(gather_d256_int8_avx512, 256, EMB_INT8)
POOL(pool_int8_avx512, 0, 0, EMB_INT8)
POOL(pool_nt_int8_avx512, 0, 1, EMB_INT8)
POOL(pool_d16_int8_avx512, 16, 0, EMB_INT8)
POOL(pool_d32_int8_avx512, 32, 0, EMB_INT8)
POOL(pool_d64_int8_avx512, 64, 0, EMB_INT8)
POOL(pool_d128_int8_avx512, 128, 0, EMB_INT8)
POOL(pool_d256_int8_avx512, 256, 0, EMB_INT8)
BAGS(bags_d16_int8_avx512, 16, EMB_INT8)
BAGS(bags_d32_int8_avx512, 32, EMB_INT8)
BAGS(bags_d64_int8_avx512, 64, EMB_INT8)
BAGS(bags_d128_int8_avx512, 128, EMB_INT8)
BAGS(bags_d256_int8_avx512, 256, EMB_INT8)
QSUMSQ(sumsq_int8_avx512, EMB_INT8)

QGATHER(gather_int4_avx512, 0, EMB_INT4)
QGATHER(gather_d16_int4_avx512, 16, EMB_INT4)
QGATHER(gather_d32_int4_avx512, 32, EMB_INT4)
QGATHER(gather_d64_int4_avx512, 64, EMB_INT4)
QGATHER(gather_d128_int4_avx512, 128, EMB_INT4)
QGATHER(gather_d256_int4_avx512, 256, EMB_INT4)
POOL(pool_int4_avx512, 0, 0, EMB_INT4)
POOL(pool_nt_int4_avx512, 0, 1, EMB_INT4)
POOL(pool_d16_int4_avx512, 16, 0, EMB_INT4)
POOL(pool_d32_int4_avx512, 32, 0, EMB_INT4)
POOL(pool_d64_int4_avx512, 64, 0, EMB_INT4)
POOL(pool_d128_int4_avx512, 128, 0, EMB_INT4)
POOL(pool_d256_int4_avx512, 256, 0, EMB_INT4)
BAGS(bags_d16_int4_avx512, 16, EMB_INT4)
BAGS(bags_d32_int4_avx512, 32, EMB_INT4)
BAGS(bags_d64_int4_avx512, 64, EMB_INT4)
BAGS(bags_d128_int4_avx512, 128, EMB_INT4)
BAGS(bags_d256_int4_avx512, 256, EMB_INT4)
QSUMSQ(sumsq_int4_avx512, EMB_INT4)

/* The update's re-quantization: requant.h's C, compiled with this file's flags. */
EMB_REQUANT_KERNEL(requant_int8_avx512, EMB_INT8)
EMB_REQUANT_KERNEL(requant_int4_avx512, EMB_INT4)
/* f16 / bf16 rows written with stochastic rounding: sround.h, in SIMD (sround_body.h). */
EMB_SROUND_SIMD_KERNEL(requant_f16_avx512, EMB_F16)
EMB_SROUND_SIMD_KERNEL(requant_bf16_avx512, EMB_BF16)

/* The quantized rows' entries (kernels.h). */
void emb__kernels_init_quant_avx512(EmbKernels *k)
{
    k->gather[EMB_INT8] = gather_int8_avx512;
    k->gather_d[0][EMB_INT8] = gather_d16_int8_avx512;
    k->gather_d[1][EMB_INT8] = gather_d32_int8_avx512;
    k->gather_d[2][EMB_INT8] = gather_d64_int8_avx512;
    k->gather_d[3][EMB_INT8] = gather_d128_int8_avx512;
    k->gather_d[4][EMB_INT8] = gather_d256_int8_avx512;
    k->pool[EMB_INT8] = pool_int8_avx512;
    k->pool_nt[EMB_INT8] = pool_nt_int8_avx512;
    k->pool_d[0][EMB_INT8] = pool_d16_int8_avx512;
    k->pool_d[1][EMB_INT8] = pool_d32_int8_avx512;
    k->pool_d[2][EMB_INT8] = pool_d64_int8_avx512;
    k->pool_d[3][EMB_INT8] = pool_d128_int8_avx512;
    k->pool_d[4][EMB_INT8] = pool_d256_int8_avx512;
    k->bags_d[0][EMB_INT8] = bags_d16_int8_avx512;
    k->bags_d[1][EMB_INT8] = bags_d32_int8_avx512;
    k->bags_d[2][EMB_INT8] = bags_d64_int8_avx512;
    k->bags_d[3][EMB_INT8] = bags_d128_int8_avx512;
    k->bags_d[4][EMB_INT8] = bags_d256_int8_avx512;
    k->sumsq[EMB_INT8] = sumsq_int8_avx512;
    k->requant[EMB_INT8] = requant_int8_avx512;

    k->gather[EMB_INT4] = gather_int4_avx512;
    k->gather_d[0][EMB_INT4] = gather_d16_int4_avx512;
    k->gather_d[1][EMB_INT4] = gather_d32_int4_avx512;
    k->gather_d[2][EMB_INT4] = gather_d64_int4_avx512;
    k->gather_d[3][EMB_INT4] = gather_d128_int4_avx512;
    k->gather_d[4][EMB_INT4] = gather_d256_int4_avx512;
    k->pool[EMB_INT4] = pool_int4_avx512;
    k->pool_nt[EMB_INT4] = pool_nt_int4_avx512;
    k->pool_d[0][EMB_INT4] = pool_d16_int4_avx512;
    k->pool_d[1][EMB_INT4] = pool_d32_int4_avx512;
    k->pool_d[2][EMB_INT4] = pool_d64_int4_avx512;
    k->pool_d[3][EMB_INT4] = pool_d128_int4_avx512;
    k->pool_d[4][EMB_INT4] = pool_d256_int4_avx512;
    k->bags_d[0][EMB_INT4] = bags_d16_int4_avx512;
    k->bags_d[1][EMB_INT4] = bags_d32_int4_avx512;
    k->bags_d[2][EMB_INT4] = bags_d64_int4_avx512;
    k->bags_d[3][EMB_INT4] = bags_d128_int4_avx512;
    k->bags_d[4][EMB_INT4] = bags_d256_int4_avx512;
    k->sumsq[EMB_INT4] = sumsq_int4_avx512;
    k->requant[EMB_INT4] = requant_int4_avx512;
    k->requant[EMB_F16] = requant_f16_avx512;
    k->requant[EMB_BF16] = requant_bf16_avx512;
}
