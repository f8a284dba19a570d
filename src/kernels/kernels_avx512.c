/*
 * kernels_avx512.c — the AVX-512 (F+BW+VL+DQ) kernels: 16-float vectors, the bodies of
 * simd_body.h. Compiled in its own static library with the AVX-512 flags and
 * -ffp-contract=off; called only after the dispatch saw AVX-512. Tails use masked loads
 * and stores (no fault past the mask). f16 conversions are AVX-512F's vcvtph2ps/vcvtps2ph.
 */
#include <immintrin.h>

#include "kernels/convert.h"

#define VL 16
#define BLK 8
#define ISA_SUFFIX avx512
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
static inline vec vmul(vec a, vec b)
{
    return _mm512_mul_ps(a, b);
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

#include "kernels/simd_body.h"

DEFINE_DTYPE(f32, EMB_F32)
DEFINE_DTYPE(f16, EMB_F16)
DEFINE_DTYPE(bf16, EMB_BF16)

void emb__kernels_init_avx512(EmbKernels *k, unsigned flags)
{
    (void)flags;
    FN(fill_f32)(k);
    FN(fill_f16)(k);
    FN(fill_bf16)(k);
    k->scale = FN(scale);
}
