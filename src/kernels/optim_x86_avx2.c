/*
 * optim_x86_avx2.c — AVX2 variants of the f32 Adagrad and row-wise Adagrad row kernels,
 * plain and with streaming column stores. Compiled alone with -mavx2 -ffp-contract=off
 * and called only when the CPU flags allow AVX2. Bit-identical to optim_c.c: the same
 * multiplies and adds (no FMA), correctly rounded sqrt and divide, and the 8-lane sum of
 * squares of optim.h. Tails use vmaskmov, which never touches memory past the mask.
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/optim.h"

/* Lanes [0, r) set. */
static inline __m256i tail_mask(int32_t r)
{
    static const int32_t m[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(m + 8 - r));
}

static inline void store(float *p, __m256 v, int nt)
{
    if (nt)
        _mm256_stream_ps(p, v);
    else
        _mm256_storeu_ps(p, v);
}

/* Σ g² in lanes i % 8, reduced as ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). */
static inline float sumsq8(const float *g, int32_t D)
{
    __m256 acc = _mm256_setzero_ps();
    int32_t i = 0;
    for (; i + 8 <= D; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        acc = _mm256_add_ps(acc, _mm256_mul_ps(x, x));
    }
    if (i < D) {
        const __m256 x = _mm256_maskload_ps(g + i, tail_mask(D - i));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(x, x));
    }
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

static inline void rowwise_body(float *w, float *h, const float *g, const EmbOptimParams *p,
                                int32_t D, int nt)
{
    h[0] = h[0] + sumsq8(g, D) / (float)D;
    const __m256 m = _mm256_set1_ps(p->lr / (sqrtf(h[0]) + p->eps));
    nt = nt && ((uintptr_t)w & 31) == 0;
    int32_t i = 0;
    for (; i + 8 <= D; i += 8)
        store(w + i, _mm256_sub_ps(_mm256_loadu_ps(w + i),
                                   _mm256_mul_ps(m, _mm256_loadu_ps(g + i))), nt);
    if (i < D) {
        const __m256i k = tail_mask(D - i);
        const __m256 x = _mm256_sub_ps(_mm256_maskload_ps(w + i, k),
                                       _mm256_mul_ps(m, _mm256_maskload_ps(g + i, k)));
        _mm256_maskstore_ps(w + i, k, x);
    }
}

/* One vector of Adagrad: h += g²; w -= lr · (g / (sqrt(h) + eps)); returns the new w. */
static inline __m256 adagrad_vec(__m256 w, __m256 *h, __m256 g, __m256 lr, __m256 eps)
{
    *h = _mm256_add_ps(*h, _mm256_mul_ps(g, g));
    const __m256 step = _mm256_div_ps(g, _mm256_add_ps(_mm256_sqrt_ps(*h), eps));
    return _mm256_sub_ps(w, _mm256_mul_ps(lr, step));
}

static inline void adagrad_body(float *w, float *h, const float *g, const EmbOptimParams *p,
                                int32_t D, int nt)
{
    const __m256 lr = _mm256_set1_ps(p->lr), eps = _mm256_set1_ps(p->eps);
    nt = nt && ((uintptr_t)w & 31) == 0;
    int32_t i = 0;
    for (; i + 8 <= D; i += 8) {
        __m256 vh = _mm256_loadu_ps(h + i);
        const __m256 x = adagrad_vec(_mm256_loadu_ps(w + i), &vh, _mm256_loadu_ps(g + i), lr, eps);
        _mm256_storeu_ps(h + i, vh);
        store(w + i, x, nt);
    }
    if (i < D) {
        const __m256i k = tail_mask(D - i);
        __m256 vh = _mm256_maskload_ps(h + i, k);
        const __m256 x = adagrad_vec(_mm256_maskload_ps(w + i, k), &vh,
                                     _mm256_maskload_ps(g + i, k), lr, eps);
        _mm256_maskstore_ps(h + i, k, vh);
        _mm256_maskstore_ps(w + i, k, x);
    }
}

#define ENTRY(NAME, BODY, NT)                                                              \
    static void NAME(void *col, float *h, const float *g, const EmbOptimParams *p, int32_t D) \
    {                                                                                      \
        BODY(col, h, g, p, D, NT);                                                         \
    }
ENTRY(rowwise_f32_avx2, rowwise_body, 0)
ENTRY(rowwise_f32_avx2_nt, rowwise_body, 1)
ENTRY(adagrad_f32_avx2, adagrad_body, 0)
ENTRY(adagrad_f32_avx2_nt, adagrad_body, 1)
#undef ENTRY

void emb__optim_init_avx2(EmbOptimKernels *k)
{
    k->row[EMB_OPTIM_ROWWISE][EMB_F32] = rowwise_f32_avx2;
    k->row_nt[EMB_OPTIM_ROWWISE][EMB_F32] = rowwise_f32_avx2_nt;
    k->row[EMB_OPTIM_ADAGRAD][EMB_F32] = adagrad_f32_avx2;
    k->row_nt[EMB_OPTIM_ADAGRAD][EMB_F32] = adagrad_f32_avx2_nt;
}
