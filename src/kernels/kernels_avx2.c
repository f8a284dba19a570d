/*
 * kernels_avx2.c — the AVX2 (+F16C) kernels: 8-float vectors, the bodies of simd_body.h.
 * Compiled in its own static library with -mavx2 -mfma -mf16c -ffp-contract=off; called
 * only after the dispatch saw AVX2 (and F16C for the f16 entries).
 *
 * Tails: f32 uses vmaskmov (no fault past the mask); the 16-bit types go through a small
 * stack buffer (tails are at most 7 elements per column).
 */
#include <immintrin.h>

#include "kernels/convert.h"

#define VL 8
#define BLK 8
#define ISA_SUFFIX avx2
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
static inline vec vmul(vec a, vec b)
{
    return _mm256_mul_ps(a, b);
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

#include "kernels/simd_body.h"

DEFINE_DTYPE(f32, EMB_F32)
DEFINE_DTYPE(f16, EMB_F16)
DEFINE_DTYPE(bf16, EMB_BF16)

void emb__kernels_init_avx2(EmbKernels *k, unsigned flags)
{
    FN(fill_f32)(k);
    FN(fill_bf16)(k);
    if (flags & EMB_CPU_F16C)
        FN(fill_f16)(k);
    k->scale = FN(scale);
}
