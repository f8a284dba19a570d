/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sround_body.h — sround.h's rounding of an f32 row into f16 / bf16 (stochastic with a key,
 * to nearest even without), 8 elements at a time with AVX2 + F16C: included by the AVX2
 * and AVX-512 kernel files, checked bit for bit against sround.h's C by checkasm.
 *
 * bf16: (bits(x) + r) >> 16 in integer lanes (r: the 16 random bits, or 0x7fff + the kept
 * lsb to nearest). f16: the magnitude truncated by vcvtps2ph (round toward zero), its two
 * neighbours back by vcvtph2ps, f = (|x| - lo) / ulp, up iff r + f 2^16 >= 2^16, as the C;
 * |x| >= 65504 and NaN take vcvtps2ph to nearest (the C's emb__f32_to_f16). A draw's 64
 * bits are its 4 elements' r in order: two draws are the 8 lanes' r.
 */
#ifndef EMB_SROUND_BODY_H
#define EMB_SROUND_BODY_H

#include <immintrin.h>

#include "sround.h"

/* 8 u32 lanes (each <= 0xffff) as 8 u16. */
static inline __m128i sr_pack16(__m256i v)
{
    const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(v, v), 0xd8);
    return _mm256_castsi256_si128(p);
}

/* bf16 bits of @x; @r: 8 lanes of 16 random bits, or NULL-key rounding to nearest (@near). */
static inline __m128i sr_bf16_8(__m256 x, __m256i r, int near)
{
    const __m256i u = _mm256_castps_si256(x), low = _mm256_set1_epi32(0xffff);
    const __m256i hi = _mm256_srli_epi32(u, 16), q = _mm256_set1_epi32(0x40);
    __m256i special, spec;
    if (near) {
        const __m256i a = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
        special = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7f800000)); /* NaN */
        spec = _mm256_or_si256(hi, q);
        r = _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
                             _mm256_and_si256(hi, _mm256_set1_epi32(1)));
    } else {
        const __m256i e = _mm256_set1_epi32(0x7f800000);
        special = _mm256_cmpeq_epi32(_mm256_and_si256(u, e), e); /* inf, NaN */
        const __m256i z = _mm256_cmpeq_epi32(_mm256_and_si256(u, low), _mm256_setzero_si256());
        spec = _mm256_or_si256(hi, _mm256_andnot_si256(z, q));
    }
    const __m256i v = _mm256_srli_epi32(_mm256_add_epi32(u, r), 16);
    return sr_pack16(_mm256_blendv_epi8(v, spec, special));
}

/* f16 bits of @x given 8 lanes of 16 random bits @r. */
static inline __m128i sr_f16_8(__m256 x, __m256i r)
{
    const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    const __m256 big = _mm256_cmp_ps(a, _mm256_set1_ps(65504.0f), _CMP_NLT_UQ);
    const __m128i rne = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT);
    const __m128i lo = _mm256_cvtps_ph(a, _MM_FROUND_TO_ZERO);
    const __m256 flo = _mm256_cvtph_ps(lo);
    const __m256 ulp = _mm256_sub_ps(_mm256_cvtph_ps(_mm_add_epi16(lo, _mm_set1_epi16(1))), flo);
    const __m256 f = _mm256_div_ps(_mm256_sub_ps(a, flo), ulp);
    const __m256 t = _mm256_add_ps(_mm256_cvtepi32_ps(r),
                                   _mm256_mul_ps(f, _mm256_set1_ps(65536.0f)));
    const __m256i up = _mm256_castps_si256(_mm256_cmp_ps(t, _mm256_set1_ps(65536.0f), _CMP_GE_OQ));
    __m256i m = _mm256_sub_epi32(_mm256_cvtepu16_epi32(lo), up);
    m = _mm256_or_si256(m, _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(x), 16),
                                            _mm256_set1_epi32(0x8000)));
    const __m128i bigm = sr_pack16(_mm256_srli_epi32(_mm256_castps_si256(big), 16));
    return _mm_blendv_epi8(sr_pack16(m), rne, bigm);
}

/* emb__sr_row (sround.h) for @dt, 8 elements at a time, the tail in C. */
static inline void sr_row_simd(EmbDtype dt, void *row, int32_t D, const float *x,
                               const uint64_t *key)
{
    uint16_t *p = (uint16_t *)row;
    const int32_t n8 = D / 8 * 8;
    if (!key) {
        for (int32_t i = 0; i < n8; i += 8) {
            const __m256 v = _mm256_loadu_ps(x + i);
            const __m128i h = dt == EMB_BF16 ? sr_bf16_8(v, _mm256_setzero_si256(), 1)
                                             : _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
            _mm_storeu_si128((__m128i *)(p + i), h);
        }
        for (int32_t i = n8; i < D; i++)
            p[i] = dt == EMB_BF16 ? emb__f32_to_bf16(x[i]) : emb__f32_to_f16(x[i]);
        return;
    }
    const uint64_t h = emb__rng_stream(key[0], key[1]);
    const uint64_t c0 = key[2] * (uint64_t)((D + 3) / 4);
    for (int32_t i = 0; i < n8; i += 8) {
        const uint64_t d0 = emb__rng_u64_at(h, c0 + (uint64_t)(i / 4));
        const uint64_t d1 = emb__rng_u64_at(h, c0 + (uint64_t)(i / 4) + 1);
        const __m256i r = _mm256_cvtepu16_epi32(_mm_set_epi64x((long long)d1, (long long)d0));
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m128i o = dt == EMB_BF16 ? sr_bf16_8(v, r, 0) : sr_f16_8(v, r);
        _mm_storeu_si128((__m128i *)(p + i), o);
    }
    for (int32_t i = n8; i < D; i++) {
        const uint64_t draw = emb__rng_u64_at(h, c0 + (uint64_t)(i / 4));
        const uint32_t r = (uint32_t)(draw >> (16 * (i % 4))) & 0xffffu;
        p[i] = dt == EMB_BF16 ? emb__sr_bf16(x[i], r) : emb__sr_f16(x[i], r);
    }
}

/* A kernel @NAME (emb_requant_fn) of dtype @DT: sr_row_simd. */
#define EMB_SROUND_SIMD_KERNEL(NAME, DT)                                                   \
    static void NAME(void *row, int32_t D, const float *x, const uint64_t *key)           \
    {                                                                                      \
        sr_row_simd(DT, row, D, x, key);                                                   \
    }

#endif
