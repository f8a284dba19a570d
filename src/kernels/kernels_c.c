/*
 * kernels_c.c — the C reference of every kernel family: the definition of correct. Plain
 * loops over one element type each, stamped out per dtype by a macro. The library's
 * baseline flags (-std=c11: no FMA contraction) keep `acc + w * x` a separate multiply and
 * add, which the SIMD variants reproduce where they claim bit-exactness.
 */
#include <string.h>

#include "internal.h"
#include "kernels/convert.h"
#include "kernels/kernels.h"

#define DEFINE_C_KERNELS(T)                                                                \
    static void gather_##T##_c(float *out, int64_t out_stride, const void *const *cols,    \
                               int64_t n, int32_t D)                                       \
    {                                                                                      \
        for (int64_t k = 0; k < n; k++)                                                    \
            for (int32_t i = 0; i < D; i++)                                                \
                out[k * out_stride + i] = emb__ld_##T(cols[k], i);                         \
    }                                                                                      \
    static void pool_##T##_c(float *out, const void *const *cols, const float *w,          \
                             int64_t n, int64_t ahead, int32_t D, int accumulate)          \
    {                                                                                      \
        (void)ahead;                                                                       \
        if (!accumulate)                                                                   \
            memset(out, 0, (size_t)D * sizeof(float));                                     \
        for (int64_t k = 0; k < n; k++) {                                                  \
            if (w) {                                                                       \
                const float wk = w[k];                                                     \
                for (int32_t i = 0; i < D; i++)                                            \
                    out[i] = out[i] + wk * emb__ld_##T(cols[k], i);                        \
            } else {                                                                       \
                for (int32_t i = 0; i < D; i++)                                            \
                    out[i] = out[i] + emb__ld_##T(cols[k], i);                             \
            }                                                                              \
        }                                                                                  \
    }                                                                                      \
    static float sumsq_##T##_c(const void *col, int32_t D)                                 \
    {                                                                                      \
        float s[16] = {0};                                                                 \
        for (int32_t i = 0; i < D; i++) {                                                  \
            const float x = emb__ld_##T(col, i);                                           \
            s[i % 16] = s[i % 16] + x * x;                                                 \
        }                                                                                  \
        return emb__sumsq_lanes(s);                                                        \
    }                                                                                      \
    static void sgd_row_##T##_c(void *col, const float *g, float lr, int32_t D)            \
    {                                                                                      \
        for (int32_t i = 0; i < D; i++)                                                    \
            emb__st_##T(col, i, emb__ld_##T(col, i) - lr * g[i]);                          \
    }

DEFINE_C_KERNELS(f32)
DEFINE_C_KERNELS(f16)
DEFINE_C_KERNELS(bf16)

/*
 * Static-size copies (zstd style): forced-inline bodies with a constant N, so that the
 * compiler unrolls and vectorises them for the baseline ISA; the pool sums into a local
 * array (no aliasing with the columns), element by element in bag order as above.
 */
#define DEFINE_C_FIXED(T)                                                                  \
    EMB_INLINE void pool_fixed_##T(float *out, const void *const *cols, const float *w,    \
                                   int64_t n, const int32_t N, int accumulate)             \
    {                                                                                      \
        float a[256];                                                                      \
        for (int32_t i = 0; i < N; i++)                                                    \
            a[i] = accumulate ? out[i] : 0.0f;                                             \
        for (int64_t k = 0; k < n; k++) {                                                  \
            const float wk = w ? w[k] : 1.0f;                                              \
            if (w)                                                                         \
                for (int32_t i = 0; i < N; i++)                                            \
                    a[i] = a[i] + wk * emb__ld_##T(cols[k], i);                            \
            else                                                                           \
                for (int32_t i = 0; i < N; i++)                                            \
                    a[i] = a[i] + emb__ld_##T(cols[k], i);                                 \
        }                                                                                  \
        memcpy(out, a, (size_t)N * sizeof(float));                                         \
    }

#define STAMP_C_SIZE(T, N)                                                                 \
    static void gather_d##N##_##T##_c(float *out, int64_t stride, const void *const *cols, \
                                      int64_t n, int32_t D)                                \
    {                                                                                      \
        (void)D;                                                                           \
        for (int64_t k = 0; k < n; k++)                                                    \
            for (int32_t i = 0; i < N; i++)                                                \
                out[k * stride + i] = emb__ld_##T(cols[k], i);                             \
    }                                                                                      \
    static void pool_d##N##_##T##_c(float *out, const void *const *cols, const float *w,   \
                                    int64_t n, int64_t ahead, int32_t D, int acc)          \
    {                                                                                      \
        (void)ahead;                                                                       \
        (void)D;                                                                           \
        pool_fixed_##T(out, cols, w, n, N, acc);                                           \
    }                                                                                      \
    static void sgd_row_d##N##_##T##_c(void *col, const float *g, float lr, int32_t D)     \
    {                                                                                      \
        (void)D;                                                                           \
        for (int32_t i = 0; i < N; i++)                                                    \
            emb__st_##T(col, i, emb__ld_##T(col, i) - lr * g[i]);                          \
    }

#define STAMP_C_SIZES(T)                                                                   \
    DEFINE_C_FIXED(T)                                                                      \
    STAMP_C_SIZE(T, 16)                                                                    \
    STAMP_C_SIZE(T, 32)                                                                    \
    STAMP_C_SIZE(T, 64)                                                                    \
    STAMP_C_SIZE(T, 128)                                                                   \
    STAMP_C_SIZE(T, 256)

STAMP_C_SIZES(f32)
STAMP_C_SIZES(f16)
STAMP_C_SIZES(bf16)

static void scale_c(float *x, float s, int32_t D)
{
    for (int32_t i = 0; i < D; i++)
        x[i] *= s;
}

#define FILL_SIZE(T, DT, C, N)                                                             \
    k->gather_d[C][DT] = gather_d##N##_##T##_c;                                            \
    k->pool_d[C][DT] = pool_d##N##_##T##_c;                                                \
    k->sgd_row_d[C][DT] = sgd_row_d##N##_##T##_c;

void emb__kernels_init_c(EmbKernels *k)
{
    memset(k, 0, sizeof *k);
#define FILL(T, DT)                                                                        \
    k->gather[DT] = gather_##T##_c;                                                        \
    k->pool[DT] = pool_##T##_c;                                                            \
    k->pool_nt[DT] = pool_##T##_c;                                                         \
    k->sumsq[DT] = sumsq_##T##_c;                                                          \
    k->sgd_row[DT] = sgd_row_##T##_c;                                                      \
    k->sgd_row_nt[DT] = sgd_row_##T##_c;                                                   \
    FILL_SIZE(T, DT, 0, 16)                                                                \
    FILL_SIZE(T, DT, 1, 32)                                                                \
    FILL_SIZE(T, DT, 2, 64)                                                                \
    FILL_SIZE(T, DT, 3, 128)                                                               \
    FILL_SIZE(T, DT, 4, 256)
    FILL(f32, EMB_F32)
    FILL(f16, EMB_F16)
    FILL(bf16, EMB_BF16)
#undef FILL
    k->scale = scale_c;
}
