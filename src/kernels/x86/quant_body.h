/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * quant_body.h — the SIMD bodies of the kernels over row-wise quantized rows (EMB_INT8,
 * EMB_INT4), written once and compiled per ISA: included by x86/kernels_avx2.c and
 * x86/kernels_avx512.c after simd_body.h, with these primitives of the ISA file:
 *
 *   ld_q8(p) ldn_q8(p, r)   VL (or r < VL) uint8 from p as an f32 vector (zeros after)
 *   ld_q4(p) ldn_q4(p, r)   VL (or r < VL, r even) 4-bit values from the VL / 2 (r / 2)
 *                           bytes at p, element 2j the low nibble of byte j, as f32
 *
 * Each body is exact with quant_c.c: per row a = w * scale and c = w * bias (scalars), per
 * element acc + (q * a + c), rows in bag order, sumsq in the 16 lanes of the reference.
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

/* The row's w * scale and w * bias, broadcast. */
EMB_INLINE void qparams(const EmbDtype dt, const void *row, int32_t D, float w, vec *a, vec *c)
{
    float s, b;
    emb__q_params(dt, row, D, &s, &b);
    *a = vset1(w * s);
    *c = vset1(w * b);
}

/* q * a + c: multiply, then add. */
EMB_INLINE vec qval(vec q, vec a, vec c)
{
    return vadd(vmul(q, a), c);
}

/* ---- pool ------------------------------------------------------------------------------ */

/* One block of nv vectors at element @off (pool_blk's shape): a[j] (+)= Σ_k rows. */
EMB_INLINE void qpool_blk(float *out, const void *const *cols, const float *w, int64_t n,
                          int64_t npf, int32_t off, const int nv, const int partial, int tail,
                          int32_t pf_bytes, int acc, const int nt, const int32_t D,
                          const EmbDtype dt)
{
    vec a[BLK];
    float *o = out + off;
    UNROLL_BLK for (int j = 0; j < nv; j++) {
        const bool part = partial && j == nv - 1;
        a[j] = !acc ? vzero() : part ? ldn_f32(o + j * VL, tail) : ld_f32(o + j * VL);
    }
    for (int64_t k = 0; k < n; k++) {
        if (pf_bytes && k + EMB_PF_DIST < npf)
            prefetch_col(cols[k + EMB_PF_DIST], pf_bytes);
        vec s, b;
        qparams(dt, cols[k], D, w ? w[k] : 1.0f, &s, &b);
        UNROLL_BLK for (int j = 0; j < nv; j++) {
            const bool part = partial && j == nv - 1;
            const int32_t i = off + j * VL;
            a[j] = vadd(a[j], qval(part ? qldn(dt, cols[k], i, tail) : qld(dt, cols[k], i), s, b));
        }
    }
    const bool stream = nt && aligned_to(o, VL * sizeof(float));
    UNROLL_BLK for (int j = 0; j < nv; j++) {
        if (partial && j == nv - 1)
            stn_f32(o + j * VL, a[j], tail);
        else if (stream)
            stnt_f32(o + j * VL, a[j]);
        else
            st_f32(o + j * VL, a[j]);
    }
}

EMB_INLINE void qpool_last(float *out, const void *const *cols, const float *w, int64_t n,
                           int64_t npf, int32_t off, const int nv, int tail, int32_t pf,
                           int acc, const int nt, const int32_t D, const EmbDtype dt)
{
    if (tail == VL)
        qpool_blk(out, cols, w, n, npf, off, nv, 0, VL, pf, acc, nt, D, dt);
    else
        qpool_blk(out, cols, w, n, npf, off, nv, 1, tail, pf, acc, nt, D, dt);
}

EMB_INLINE void qpool_body(float *out, const void *const *cols, const float *w, int64_t n,
                           int64_t ahead, const int32_t D, int acc, const int nt,
                           const EmbDtype dt)
{
    const int32_t bytes = (int32_t)emb__row_bytes(dt, D);
    const int64_t npf = ahead < 0 ? 0 : n + ahead;
    int32_t off = 0;
    for (; off + BLK * VL <= D; off += BLK * VL)
        qpool_blk(out, cols, w, n, npf, off, BLK, 0, VL, off ? 0 : bytes, acc, nt, D, dt);
    const int32_t rem = D - off, pf = off ? 0 : bytes;
    const int tail = rem % VL ? rem % VL : VL;
    switch ((rem + VL - 1) / VL) {
    case 1: qpool_last(out, cols, w, n, npf, off, 1, tail, pf, acc, nt, D, dt); break;
    case 2: qpool_last(out, cols, w, n, npf, off, 2, tail, pf, acc, nt, D, dt); break;
    case 3: qpool_last(out, cols, w, n, npf, off, 3, tail, pf, acc, nt, D, dt); break;
    case 4: qpool_last(out, cols, w, n, npf, off, 4, tail, pf, acc, nt, D, dt); break;
    case 5: qpool_last(out, cols, w, n, npf, off, 5, tail, pf, acc, nt, D, dt); break;
    case 6: qpool_last(out, cols, w, n, npf, off, 6, tail, pf, acc, nt, D, dt); break;
    case 7: qpool_last(out, cols, w, n, npf, off, 7, tail, pf, acc, nt, D, dt); break;
    case 8: qpool_last(out, cols, w, n, npf, off, 8, tail, pf, acc, nt, D, dt); break;
    default: break;
    }
}

/* ---- bags ------------------------------------------------------------------------------ */

/* Adds the row of weight w's nv vectors from element @off to the accumulators. */
EMB_INLINE void qbag_add(vec *acc, const void *row, int32_t off, const int nv, float w,
                         const int32_t N, const EmbDtype dt)
{
    vec s, b;
    qparams(dt, row, N, w, &s, &b);
    UNROLL_BLK for (int j = 0; j < nv; j++)
        acc[j] = vadd(acc[j], qval(qld(dt, row, off + j * VL), s, b));
}

/* bags_run (simd_body.h) over quantized rows of N elements, N whole vectors. */
EMB_INLINE void qbags_run(const EmbBagsArgs *a, const int32_t N, const EmbDtype dt,
                          const int id32, const int weighted)
{
    const int nv = N / VL <= BLK ? N / VL : BLK, nblk = N / (nv * VL);
    const int32_t rb = (int32_t)emb__row_bytes(dt, N);
    const void *ids = a->ids;
    const char *data = a->data;
    const int64_t cs = a->col_stride, pf = a->pf_dist;
    const int64_t *offs = a->offsets;
    const int scaled = a->combiner == EMB_COMBINER_MEAN || a->combiner == EMB_COMBINER_SQRTN;
    int64_t start = offs ? offs[a->bag0] : a->bag0 * a->bag_size;
    const int64_t kend = offs ? offs[a->bag1] : a->bag1 * a->bag_size;
    float *o = a->out + a->bag0 * a->out_stride;
    for (int64_t bag = a->bag0; bag < a->bag1; bag++, o += a->out_stride) {
        const int64_t end = offs ? offs[bag + 1] : start + a->bag_size;
        float f = 1.0f;
        for (int blk = 0; blk < nblk; blk++) {
            const int32_t off = blk * nv * VL;
            vec acc[BLK];
            UNROLL_BLK for (int j = 0; j < nv; j++)
                acc[j] = vzero();
            double sw = 0.0, sw2 = 0.0;
            for (int64_t k = start; k < end; k++) {
                if (pf && blk == 0 && k + pf < kend)
                    prefetch_col(data + bag_id(ids, k + pf, id32) * cs, rb);
                const void *row = data + bag_id(ids, k, id32) * cs;
                const float wk = weighted ? a->weights[k] : 1.0f;
                qbag_add(acc, row, off, nv, wk, N, dt);
                if (weighted && scaled && blk == 0) {
                    sw += wk;
                    sw2 += (double)wk * wk;
                }
            }
            if (end == start) {
                if (a->defcol)
                    qbag_add(acc, a->defcol, off, nv, 1.0f, N, dt);
            } else if (scaled && blk == 0) {
                if (!weighted)
                    sw = sw2 = (double)(end - start);
                f = emb__combiner_factor(a->combiner, sw, sw2);
            }
            if (f != 1.0f) {
                const vec fv = vset1(f);
                UNROLL_BLK for (int j = 0; j < nv; j++)
                    acc[j] = vmul(acc[j], fv);
            }
            UNROLL_BLK for (int j = 0; j < nv; j++)
                st_f32(o + off + j * VL, acc[j]);
        }
        start = end;
    }
}

EMB_INLINE void qbags_body(const EmbBagsArgs *a, const int32_t N, const EmbDtype dt)
{
    if (a->id32)
        a->weights ? qbags_run(a, N, dt, 1, 1) : qbags_run(a, N, dt, 1, 0);
    else
        a->weights ? qbags_run(a, N, dt, 0, 1) : qbags_run(a, N, dt, 0, 0);
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
#define QPOOL(NAME, N, NT, DT)                                                             \
    static void NAME(float *out, const void *const *cols, const float *w, int64_t n,      \
                     int64_t ahead, int32_t D, int acc)                                    \
    {                                                                                      \
        qpool_body(out, cols, w, n, ahead, N ? N : D, acc, NT, DT);                        \
    }
#define QBAGS(NAME, N, DT)                                                                 \
    static void NAME(const EmbBagsArgs *a)                                                 \
    {                                                                                      \
        _Static_assert(N % VL == 0 && (N / VL <= BLK || N % (BLK * VL) == 0),              \
                       "bags: whole vectors in registers");                                \
        qbags_body(a, N, DT);                                                              \
    }
#define QSUMSQ(NAME, DT)                                                                   \
    static float NAME(const void *col, int32_t D)                                          \
    {                                                                                      \
        return qsumsq_body(col, D, DT);                                                    \
    }

#endif
