/*
 * simd_body.h — the SIMD kernel bodies, written once and compiled per ISA. Included (once)
 * by kernels_avx2.c and kernels_avx512.c after they define the vector primitives:
 *
 *   VL, BLK            floats per vector; vectors kept in registers per block of columns
 *   vec                the f32 vector type
 *   vzero vset1 vadd vsub vmul
 *   ld_f32(p) ldn_f32(p, r) st_f32 stn_f32 stnt_f32   f32 access, as below for T = f32
 *   ld_u16 ldn_u16 st_u16 stn_u16 stnt_u16   the same for raw 16-bit lanes (half vectors)
 *   cvt_from_T cvt_to_T      16-bit lanes <-> f32 vector for T in f16, bf16
 *
 * and this file adds, for T in f32, f16, bf16:
 *   ld_T(p) ldn_T(p, r)       load VL (r < VL, zeros after) elements of dtype T as f32
 *   st_T(p, v) stn_T(p, v, r) store VL (r) elements as dtype T (round to nearest even)
 *   stnt_T(p, v)              non-temporal store of VL elements (p aligned to VL elements)
 *
 * ISA_SUFFIX (avx2, avx512) is appended to every kernel's name. Every body is exact with the C reference: the same operations
 * in the same order per element (multiply, then add; no FMA; a bag summed in bag order;
 * sumsq in the reference's 16 lanes), tails handled with partial loads and stores.
 *
 * Fixed sizes, zstd style: each body is a forced-inline function whose size parameter is
 * a compile-time constant in the `_dN` copies stamped by STAMP_SIZE (the compiler then
 * unrolls it completely), and a run-time value in the generic copy.
 */
#ifndef EMB_SIMD_BODY_H
#define EMB_SIMD_BODY_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "kernels/kernels.h"

_Static_assert(BLK == 8, "POOL_LAST_CASE lists blocks of 1 .. 8 vectors");

#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(name, ISA_SUFFIX)

#define ET_f32 float
#define ET_f16 uint16_t
#define ET_bf16 uint16_t

/* The 16-bit storage types: raw lanes plus a conversion. */
#define DEFINE_U16_ACCESS(T)                                                               \
    static inline vec ld_##T(const uint16_t *p)                                            \
    {                                                                                      \
        return cvt_from_##T(ld_u16(p));                                                    \
    }                                                                                      \
    static inline vec ldn_##T(const uint16_t *p, int r)                                    \
    {                                                                                      \
        return cvt_from_##T(ldn_u16(p, r));                                                \
    }                                                                                      \
    static inline void st_##T(uint16_t *p, vec v)                                          \
    {                                                                                      \
        st_u16(p, cvt_to_##T(v));                                                          \
    }                                                                                      \
    static inline void stn_##T(uint16_t *p, vec v, int r)                                  \
    {                                                                                      \
        stn_u16(p, cvt_to_##T(v), r);                                                      \
    }                                                                                      \
    static inline void stnt_##T(uint16_t *p, vec v)                                        \
    {                                                                                      \
        stnt_u16(p, cvt_to_##T(v));                                                        \
    }

DEFINE_U16_ACCESS(f16)
DEFINE_U16_ACCESS(bf16)

/* Prefetches every cache line of the @bytes bytes at @p (a column: maybe unaligned). */
EMB_INLINE void prefetch_col(const void *p, int32_t bytes)
{
    const char *c = (const char *)p;
    for (int32_t o = 0; o < bytes; o += 64)
        _mm_prefetch(c + o, _MM_HINT_T0);
    if (((uintptr_t)c & 63) != 0) /* a misaligned column touches one more line */
        _mm_prefetch(c + bytes - 1, _MM_HINT_T0);
}

/* Whether @p is aligned to @bytes (a power of two), for the non-temporal stores. */
EMB_INLINE bool aligned_to(const void *p, uintptr_t bytes)
{
    return ((uintptr_t)p & (bytes - 1)) == 0;
}

/* The loops over a block's vectors unrolled before GCC sees them as memset / arrays, so
 * that the accumulators live in registers. */
#if defined(__GNUC__) && !defined(__clang__)
#define UNROLL_BLK _Pragma("GCC unroll 8")
#else
#define UNROLL_BLK
#endif

/* Whether vector j of a block of nv is the partial one (partial: the block ends in one). */
#define IS_PARTIAL(j, nv, partial) ((partial) && (j) == (nv)-1)

/*
 * Pooling of one block of nv vectors at column offset off: a[j] (+)= Σ_k w[k] cols[k][..].
 * pf_bytes != 0: prefetch cols[k + EMB_PF_DIST] while k + EMB_PF_DIST < npf.
 */
#define DEFINE_POOL_BLOCK(T)                                                               \
    EMB_INLINE void pool_blk_##T(float *out, const void *const *cols, const float *w,     \
                                 int64_t n, int64_t npf, int32_t off, const int nv,        \
                                 const int partial, int tail, int32_t pf_bytes, int acc,   \
                                 const int nt)                                             \
    {                                                                                      \
        vec a[BLK];                                                                        \
        float *o = out + off;                                                              \
        UNROLL_BLK for (int j = 0; j < nv; j++) {                                                     \
            const bool part = IS_PARTIAL(j, nv, partial);                                  \
            a[j] = !acc ? vzero() : part ? ldn_f32(o + j * VL, tail) : ld_f32(o + j * VL); \
        }                                                                                  \
        for (int64_t k = 0; k < n; k++) {                                                  \
            if (pf_bytes && k + EMB_PF_DIST < npf)                                         \
                prefetch_col(cols[k + EMB_PF_DIST], pf_bytes);                             \
            const ET_##T *p = (const ET_##T *)cols[k] + off;                               \
            if (w) {                                                                       \
                const vec wk = vset1(w[k]);                                                \
                UNROLL_BLK for (int j = 0; j < nv; j++) {                                             \
                    const bool part = IS_PARTIAL(j, nv, partial);                          \
                    const vec x = part ? ldn_##T(p + j * VL, tail) : ld_##T(p + j * VL);   \
                    a[j] = vadd(a[j], vmul(wk, x));                                        \
                }                                                                          \
            } else {                                                                       \
                UNROLL_BLK for (int j = 0; j < nv; j++) {                                             \
                    const bool part = IS_PARTIAL(j, nv, partial);                          \
                    a[j] = vadd(a[j], part ? ldn_##T(p + j * VL, tail) : ld_##T(p + j * VL)); \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
        const bool stream = nt && aligned_to(o, VL * sizeof(float));                       \
        UNROLL_BLK for (int j = 0; j < nv; j++) {                                                     \
            if (IS_PARTIAL(j, nv, partial))                                                \
                stn_f32(o + j * VL, a[j], tail);                                           \
            else if (stream)                                                               \
                stnt_f32(o + j * VL, a[j]);                                                \
            else                                                                           \
                st_f32(o + j * VL, a[j]);                                                  \
        }                                                                                  \
    }

/* The last (partial) block of a pooling: nv = 1 .. BLK vectors, the last holding tail. */
#define POOL_LAST_CASE(T, NV)                                                              \
    case NV:                                                                               \
        if (tail == VL)                                                                    \
            pool_blk_##T(out, cols, w, n, npf, off, NV, 0, VL, pf, acc, nt);               \
        else                                                                               \
            pool_blk_##T(out, cols, w, n, npf, off, NV, 1, tail, pf, acc, nt);             \
        break;

/* out (+)= Σ_k w[k] cols[k]: full blocks of BLK vectors, then one last block. */
#define DEFINE_POOL_BODY(T)                                                                \
    DEFINE_POOL_BLOCK(T)                                                                   \
    EMB_INLINE void pool_body_##T(float *out, const void *const *cols, const float *w,    \
                                  int64_t n, int64_t ahead, const int32_t D, int acc,      \
                                  const int nt)                                            \
    {                                                                                      \
        const int32_t bytes = D * (int32_t)sizeof(ET_##T);                                 \
        const int64_t npf = ahead < 0 ? 0 : n + ahead;                                     \
        int32_t off = 0;                                                                   \
        for (; off + BLK * VL <= D; off += BLK * VL)                                       \
            pool_blk_##T(out, cols, w, n, npf, off, BLK, 0, VL, off ? 0 : bytes, acc, nt); \
        const int32_t rem = D - off, pf = off ? 0 : bytes;                                 \
        const int tail = rem % VL ? rem % VL : VL;                                         \
        switch ((rem + VL - 1) / VL) {                                                     \
            POOL_LAST_CASE(T, 1)                                                           \
            POOL_LAST_CASE(T, 2)                                                           \
            POOL_LAST_CASE(T, 3)                                                           \
            POOL_LAST_CASE(T, 4)                                                           \
            POOL_LAST_CASE(T, 5)                                                           \
            POOL_LAST_CASE(T, 6)                                                           \
            POOL_LAST_CASE(T, 7)                                                           \
            POOL_LAST_CASE(T, 8)                                                           \
        default: break;                                                                    \
        }                                                                                  \
    }

/* out + k*stride = cols[k] as f32, prefetching EMB_PF_DIST columns ahead. */
#define DEFINE_GATHER_BODY(T)                                                              \
    EMB_INLINE void gather_body_##T(float *out, int64_t stride, const void *const *cols,  \
                                    int64_t n, const int32_t D)                            \
    {                                                                                      \
        for (int64_t k = 0; k < n; k++) {                                                  \
            if (k + EMB_PF_DIST < n)                                                       \
                prefetch_col(cols[k + EMB_PF_DIST], D * (int32_t)sizeof(ET_##T));          \
            const ET_##T *p = (const ET_##T *)cols[k];                                     \
            float *o = out + k * stride;                                                   \
            int32_t i = 0;                                                                 \
            for (; i + VL <= D; i += VL)                                                   \
                st_f32(o + i, ld_##T(p + i));                                              \
            if (i < D)                                                                     \
                stn_f32(o + i, ldn_##T(p + i, D - i), D - i);                              \
        }                                                                                  \
    }

/* col -= lr * g in the column's dtype; nt: non-temporal stores where aligned. */
#define DEFINE_SGD_BODY(T)                                                                 \
    EMB_INLINE void sgd_body_##T(void *col, const float *g, float lr, const int32_t D,    \
                                 const int nt)                                             \
    {                                                                                      \
        ET_##T *p = (ET_##T *)col;                                                         \
        const vec l = vset1(lr);                                                           \
        const bool stream = nt && aligned_to(p, VL * sizeof(ET_##T));                      \
        int32_t i = 0;                                                                     \
        for (; i + VL <= D; i += VL) {                                                     \
            const vec x = vsub(ld_##T(p + i), vmul(l, ld_f32(g + i)));                     \
            if (stream)                                                                    \
                stnt_##T(p + i, x);                                                        \
            else                                                                           \
                st_##T(p + i, x);                                                          \
        }                                                                                  \
        if (i < D) {                                                                       \
            const int r = D - i;                                                           \
            stn_##T(p + i, vsub(ldn_##T(p + i, r), vmul(l, ldn_f32(g + i, r))), r);        \
        }                                                                                  \
    }

/* Σ x² in the reference's order: 16 lanes (element i into lane i % 16), then a tree. */
#define DEFINE_SUMSQ(T)                                                                    \
    static float FN(sumsq_##T)(const void *col, int32_t D)                                 \
    {                                                                                      \
        const ET_##T *p = (const ET_##T *)col;                                             \
        vec a[16 / VL];                                                                    \
        for (int j = 0; j < 16 / VL; j++)                                                  \
            a[j] = vzero();                                                                \
        int32_t i = 0;                                                                     \
        for (; i + 16 <= D; i += 16)                                                       \
            for (int j = 0; j < 16 / VL; j++) {                                            \
                const vec x = ld_##T(p + i + j * VL);                                      \
                a[j] = vadd(a[j], vmul(x, x));                                             \
            }                                                                              \
        for (int j = 0; j < 16 / VL && i + j * VL < D; j++) {                              \
            const int r = EMB_MIN(VL, D - (i + j * VL));                                   \
            const vec x = r == VL ? ld_##T(p + i + j * VL) : ldn_##T(p + i + j * VL, r);   \
            a[j] = vadd(a[j], vmul(x, x));                                                 \
        }                                                                                  \
        float s[16];                                                                       \
        for (int j = 0; j < 16 / VL; j++)                                                  \
            st_f32(s + j * VL, a[j]);                                                      \
        return emb__sumsq_lanes(s);                                                        \
    }

/* The generic (any D) entry points of dtype T. */
#define DEFINE_GENERIC(T)                                                                  \
    DEFINE_POOL_BODY(T)                                                                    \
    DEFINE_GATHER_BODY(T)                                                                  \
    DEFINE_SGD_BODY(T)                                                                     \
    DEFINE_SUMSQ(T)                                                                        \
    static void FN(gather_##T)(float *out, int64_t stride, const void *const *cols,        \
                               int64_t n, int32_t D)                                       \
    {                                                                                      \
        gather_body_##T(out, stride, cols, n, D);                                          \
    }                                                                                      \
    static void FN(pool_##T)(float *out, const void *const *cols, const float *w,          \
                             int64_t n, int64_t ahead, int32_t D, int acc)                 \
    {                                                                                      \
        pool_body_##T(out, cols, w, n, ahead, D, acc, 0);                                  \
    }                                                                                      \
    static void FN(pool_nt_##T)(float *out, const void *const *cols, const float *w,       \
                                int64_t n, int64_t ahead, int32_t D, int acc)              \
    {                                                                                      \
        pool_body_##T(out, cols, w, n, ahead, D, acc, 1);                                  \
    }                                                                                      \
    static void FN(sgd_row_##T)(void *col, const float *g, float lr, int32_t D)            \
    {                                                                                      \
        sgd_body_##T(col, g, lr, D, 0);                                                    \
    }                                                                                      \
    static void FN(sgd_row_nt_##T)(void *col, const float *g, float lr, int32_t D)         \
    {                                                                                      \
        sgd_body_##T(col, g, lr, D, 1);                                                    \
    }

/* The copies for one compile-time size N (D is ignored: the dispatch checked D == N). */
#define STAMP_SIZE(T, N)                                                                   \
    static void FN(gather_d##N##_##T)(float *out, int64_t stride, const void *const *cols, \
                                      int64_t n, int32_t D)                                \
    {                                                                                      \
        (void)D;                                                                           \
        gather_body_##T(out, stride, cols, n, N);                                          \
    }                                                                                      \
    static void FN(pool_d##N##_##T)(float *out, const void *const *cols, const float *w,   \
                                    int64_t n, int64_t ahead, int32_t D, int acc)          \
    {                                                                                      \
        (void)D;                                                                           \
        pool_body_##T(out, cols, w, n, ahead, N, acc, 0);                                  \
    }                                                                                      \
    static void FN(sgd_row_d##N##_##T)(void *col, const float *g, float lr, int32_t D)     \
    {                                                                                      \
        (void)D;                                                                           \
        sgd_body_##T(col, g, lr, N, 0);                                                    \
    }

#define FILL_SIZE(T, DT, C, N)                                                             \
    k->gather_d[C][DT] = FN(gather_d##N##_##T);                                            \
    k->pool_d[C][DT] = FN(pool_d##N##_##T);                                                \
    k->sgd_row_d[C][DT] = FN(sgd_row_d##N##_##T);

/* Every kernel of dtype T: the generic ones, the fixed sizes and a fill function. */
#define DEFINE_DTYPE(T, DT)                                                                \
    DEFINE_GENERIC(T)                                                                      \
    STAMP_SIZE(T, 16)                                                                      \
    STAMP_SIZE(T, 32)                                                                      \
    STAMP_SIZE(T, 64)                                                                      \
    STAMP_SIZE(T, 128)                                                                     \
    STAMP_SIZE(T, 256)                                                                     \
    static void FN(fill_##T)(EmbKernels * k)                                               \
    {                                                                                      \
        k->gather[DT] = FN(gather_##T);                                                    \
        k->pool[DT] = FN(pool_##T);                                                        \
        k->pool_nt[DT] = FN(pool_nt_##T);                                                  \
        k->sumsq[DT] = FN(sumsq_##T);                                                      \
        k->sgd_row[DT] = FN(sgd_row_##T);                                                  \
        k->sgd_row_nt[DT] = FN(sgd_row_nt_##T);                                            \
        FILL_SIZE(T, DT, 0, 16)                                                            \
        FILL_SIZE(T, DT, 1, 32)                                                            \
        FILL_SIZE(T, DT, 2, 64)                                                            \
        FILL_SIZE(T, DT, 3, 128)                                                           \
        FILL_SIZE(T, DT, 4, 256)                                                           \
    }

/* x *= s (f32 vectors only). */
static void FN(scale)(float *x, float s, int32_t D)
{
    const vec v = vset1(s);
    int32_t i = 0;
    for (; i + VL <= D; i += VL)
        st_f32(x + i, vmul(ld_f32(x + i), v));
    if (i < D)
        stn_f32(x + i, vmul(ldn_f32(x + i, D - i), v), D - i);
}

#endif
