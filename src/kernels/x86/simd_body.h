/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * simd_body.h — the SIMD kernel bodies, written once and compiled per ISA. Included (once)
 * by x86/kernels_avx2.c and x86/kernels_avx512.c after they define the vector primitives:
 *
 *   VL, BLK            floats per vector; vectors kept in registers per block of columns
 *   vec                the f32 vector type
 *   vzero vset1 vadd vsub vmul
 *   vmax(x, acc)       x > acc ? x : acc per lane (MAX pooling)
 *   vfma(a, b, c)      a * b + c fused (one rounding): the quantized rows' sums only
 *   ld_f32(p) ldn_f32(p, r) st_f32 stn_f32 stnt_f32   f32 access (r < VL: lanes [0, r),
 *                                                      zeros after; no access past them)
 *   ld_u16 ldn_u16 st_u16 stn_u16 stnt_u16   the same for raw 16-bit lanes (half vectors)
 *   cvt_from_f16 cvt_to_f16 cvt_from_bf16 cvt_to_bf16   16-bit lanes <-> f32 vector
 *   vdiv vsqrt         correctly rounded divide and square root (the optimizer rows)
 *   sq8_add(acc, x)    an __m256 of 8 lanes += x² lane i % 8 by element order (the 8-lane
 *                      sum of squares of row-wise Adagrad)
 *   ld_bf16_pairs(p, &even, &odd)   2 VL bf16 from p as the f32 vectors of the even and
 *                                   the odd elements; zip_even_odd(even, odd, &lo, &hi)
 *                                   interleaves them back (elements 0 .. VL, VL .. 2 VL)
 *   ld_q8 ldn_q8 ld_q4 ldn_q4       quantized rows' values as f32 (x86/quant_body.h)
 *
 * Every body is a forced-inline function whose dtype, and in the `_dN` copies whose size,
 * are constant parameters (zstd's habit): the compiler folds the dtype switches of the
 * access helpers below and unrolls the fixed sizes completely. The ISA file stamps one-line
 * wrappers named as registered (pool_d64_f16_avx2, ...). Every body is exact with the C
 * reference: the same operations in the same order per element (multiply, then add; no
 * FMA but where the reference has fmaf, the quantized rows' terms; a bag summed in bag
 * order; sumsq in the reference's 16 lanes), tails handled with partial loads and stores.
 *
 * Over 500 lines on purpose (scripts/code_metrics.py's exception list): every body is
 * written once here for both ISAs; cut into files, each piece would include the whole
 * primitive set of each ISA file again.
 */
#ifndef EMB_SIMD_BODY_H
#define EMB_SIMD_BODY_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "kernels/kernels.h"

_Static_assert(BLK == 8, "pool_body's last-block switch lists blocks of 1 .. 8 vectors");

/* ---- element access by dtype (constant after inlining) -------------------------------- */

EMB_INLINE int32_t esize(const EmbDtype dt)
{
    return dt == EMB_F32 ? 4 : 2;
}

/* Element @i of column @p. */
EMB_INLINE const void *at(const EmbDtype dt, const void *p, int32_t i)
{
    return (const char *)p + (ptrdiff_t)i * esize(dt);
}

/* VL elements of column @p from element @i, as f32. */
static inline vec ld(const EmbDtype dt, const void *p, int32_t i)
{
    switch (dt) {
    case EMB_F16: return cvt_from_f16(ld_u16((const uint16_t *)p + i));
    case EMB_BF16: return cvt_from_bf16(ld_u16((const uint16_t *)p + i));
    default: return ld_f32((const float *)p + i);
    }
}

/* r < VL elements from element @i (zeros after). */
static inline vec ldn(const EmbDtype dt, const void *p, int32_t i, int r)
{
    switch (dt) {
    case EMB_F16: return cvt_from_f16(ldn_u16((const uint16_t *)p + i, r));
    case EMB_BF16: return cvt_from_bf16(ldn_u16((const uint16_t *)p + i, r));
    default: return ldn_f32((const float *)p + i, r);
    }
}

/* VL elements stored from element @i in the dtype (round to nearest even). */
static inline void st(const EmbDtype dt, void *p, int32_t i, vec v)
{
    switch (dt) {
    case EMB_F16: st_u16((uint16_t *)p + i, cvt_to_f16(v)); break;
    case EMB_BF16: st_u16((uint16_t *)p + i, cvt_to_bf16(v)); break;
    default: st_f32((float *)p + i, v); break;
    }
}

/* r < VL elements stored from element @i. */
static inline void stn(const EmbDtype dt, void *p, int32_t i, vec v, int r)
{
    switch (dt) {
    case EMB_F16: stn_u16((uint16_t *)p + i, cvt_to_f16(v), r); break;
    case EMB_BF16: stn_u16((uint16_t *)p + i, cvt_to_bf16(v), r); break;
    default: stn_f32((float *)p + i, v, r); break;
    }
}

/* Non-temporal store of VL elements from element @i (aligned to VL elements). */
static inline void stnt(const EmbDtype dt, void *p, int32_t i, vec v)
{
    switch (dt) {
    case EMB_F16: stnt_u16((uint16_t *)p + i, cvt_to_f16(v)); break;
    case EMB_BF16: stnt_u16((uint16_t *)p + i, cvt_to_bf16(v)); break;
    default: stnt_f32((float *)p + i, v); break;
    }
}

/* One line into L1 (T0) or, l2, into L2 only (T1). */
EMB_INLINE void prefetch_to(const char *p, const bool l2)
{
    if (l2)
        _mm_prefetch(p, _MM_HINT_T1);
    else
        _mm_prefetch(p, _MM_HINT_T0);
}

/*
 * Prefetches every cache line of the @bytes bytes at @p (a column: maybe unaligned). A
 * column of whole lines (bytes % 64 == 0) is usually aligned: one more line only when it is
 * not, a branch that predicts well. A narrower or ragged one (D = 16 in f16 / bf16: 32
 * bytes) sits at a random offset in its line, where that branch mispredicted on half the
 * ids (f16 D = 16 hot: 1.4x slower, emb-bench): its last byte's line is prefetched
 * unconditionally instead (a second prefetch of one line costs a uop, no miss). l2: into
 * L2 only (the apply's hint: L1 fills stall on its loop); prefetch_col: into L1.
 */
EMB_INLINE void prefetch_col_to(const void *p, int32_t bytes, const bool l2)
{
    const char *c = (const char *)p;
    for (int32_t o = 0; o < bytes; o += 64)
        prefetch_to(c + o, l2);
    if (bytes % 64 != 0 || ((uintptr_t)c & 63) != 0)
        prefetch_to(c + bytes - 1, l2);
}

EMB_INLINE void prefetch_col(const void *p, int32_t bytes)
{
    prefetch_col_to(p, bytes, false);
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

/* Quantized rows (EMB_INT8, EMB_INT4): their access helpers, gather and sumsq bodies; the
 * pool and bags bodies below take them through qadd_vecs. */
#include "kernels/x86/quant_body.h"

/* ---- pool ------------------------------------------------------------------------------ */

/*
 * Pooling of one block of nv vectors at column offset off: a[j] (+)= Σ_k w[k] cols[k][..];
 * partial: the last vector holds only @tail elements. pf_bytes != 0: prefetch
 * cols[k + EMB_PF_DIST] while k + EMB_PF_DIST < npf. nt: non-temporal stores where aligned.
 */
EMB_INLINE void pool_blk(float *out, const void *const *cols, const float *w, int64_t n,
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
        if (emb__dtype_quantized(dt)) { /* fma(q, w * scale, w * bias): quant_body.h */
            qadd_vecs(a, cols[k], off, nv, partial, tail, w ? w[k] : 1.0f, D, dt);
            continue;
        }
        const void *p = at(dt, cols[k], off);
        if (w) {
            const vec wk = vset1(w[k]);
            UNROLL_BLK for (int j = 0; j < nv; j++) {
                const bool part = partial && j == nv - 1;
                const vec x = part ? ldn(dt, p, j * VL, tail) : ld(dt, p, j * VL);
                a[j] = vadd(a[j], vmul(wk, x));
            }
        } else {
            UNROLL_BLK for (int j = 0; j < nv; j++) {
                const bool part = partial && j == nv - 1;
                a[j] = vadd(a[j], part ? ldn(dt, p, j * VL, tail) : ld(dt, p, j * VL));
            }
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

/* The last block of a pooling: nv = 1 .. BLK vectors, the last one full or partial. */
EMB_INLINE void pool_last(float *out, const void *const *cols, const float *w, int64_t n,
                          int64_t npf, int32_t off, const int nv, int tail, int32_t pf,
                          int acc, const int nt, const int32_t D, const EmbDtype dt)
{
    if (tail == VL)
        pool_blk(out, cols, w, n, npf, off, nv, 0, VL, pf, acc, nt, D, dt);
    else
        pool_blk(out, cols, w, n, npf, off, nv, 1, tail, pf, acc, nt, D, dt);
}

/* out (+)= Σ_k w[k] cols[k]: full blocks of BLK vectors, then one last block. */
EMB_INLINE void pool_body(float *out, const void *const *cols, const float *w, int64_t n,
                          int64_t ahead, const int32_t D, int acc, const int nt,
                          const EmbDtype dt)
{
    const int32_t bytes = (int32_t)emb__row_bytes(dt, D);
    const int64_t npf = ahead < 0 ? 0 : n + ahead;
    int32_t off = 0;
    for (; off + BLK * VL <= D; off += BLK * VL)
        pool_blk(out, cols, w, n, npf, off, BLK, 0, VL, off ? 0 : bytes, acc, nt, D, dt);
    const int32_t rem = D - off, pf = off ? 0 : bytes;
    const int tail = rem % VL ? rem % VL : VL;
    switch ((rem + VL - 1) / VL) {
    case 1: pool_last(out, cols, w, n, npf, off, 1, tail, pf, acc, nt, D, dt); break;
    case 2: pool_last(out, cols, w, n, npf, off, 2, tail, pf, acc, nt, D, dt); break;
    case 3: pool_last(out, cols, w, n, npf, off, 3, tail, pf, acc, nt, D, dt); break;
    case 4: pool_last(out, cols, w, n, npf, off, 4, tail, pf, acc, nt, D, dt); break;
    case 5: pool_last(out, cols, w, n, npf, off, 5, tail, pf, acc, nt, D, dt); break;
    case 6: pool_last(out, cols, w, n, npf, off, 6, tail, pf, acc, nt, D, dt); break;
    case 7: pool_last(out, cols, w, n, npf, off, 7, tail, pf, acc, nt, D, dt); break;
    case 8: pool_last(out, cols, w, n, npf, off, 8, tail, pf, acc, nt, D, dt); break;
    default: break;
    }
}

/* ---- MAX pooling ----------------------------------------------------------------------- */

/* nv vectors of row @p from element @off (the last partial: @tail elements) as f32: a
 * quantized element fma(q, scale, bias), the C reference's max_elem. */
EMB_INLINE void max_row(vec *x, const void *p, int32_t off, const int nv, const int partial,
                        int tail, const int32_t D, const EmbDtype dt)
{
    if (emb__dtype_quantized(dt)) {
        vec s, b;
        qparams(dt, p, D, 1.0f, &s, &b);
        UNROLL_BLK for (int j = 0; j < nv; j++) {
            const bool part = partial && j == nv - 1;
            const int32_t i = off + j * VL;
            x[j] = vfma(part ? qldn(dt, p, i, tail) : qld(dt, p, i), s, b);
        }
        return;
    }
    const void *q = at(dt, p, off);
    UNROLL_BLK for (int j = 0; j < nv; j++) {
        const bool part = partial && j == nv - 1;
        x[j] = part ? ldn(dt, q, j * VL, tail) : ld(dt, q, j * VL);
    }
}

/* One block of nv vectors at @off of the MAX pooling (pool_max_body): a[j] from the first
 * column (or out), then vmax with each next one; prefetch as pool_blk. */
EMB_INLINE void pool_max_blk(float *out, const void *const *cols, int64_t n, int64_t npf,
                             int32_t off, const int nv, const int partial, int tail,
                             int32_t pf_bytes, int acc, const int32_t D, const EmbDtype dt)
{
    vec a[BLK], x[BLK];
    float *o = out + off;
    int64_t k = 0;
    if (acc) {
        UNROLL_BLK for (int j = 0; j < nv; j++)
            a[j] = partial && j == nv - 1 ? ldn_f32(o + j * VL, tail) : ld_f32(o + j * VL);
    } else {
        max_row(a, cols[0], off, nv, partial, tail, D, dt);
        k = 1;
    }
    for (; k < n; k++) {
        if (pf_bytes && k + EMB_PF_DIST < npf)
            prefetch_col(cols[k + EMB_PF_DIST], pf_bytes);
        max_row(x, cols[k], off, nv, partial, tail, D, dt);
        UNROLL_BLK for (int j = 0; j < nv; j++)
            a[j] = vmax(x[j], a[j]);
    }
    UNROLL_BLK for (int j = 0; j < nv; j++) {
        if (partial && j == nv - 1)
            stn_f32(o + j * VL, a[j], tail);
        else
            st_f32(o + j * VL, a[j]);
    }
}

EMB_INLINE void pool_max_last(float *out, const void *const *cols, int64_t n, int64_t npf,
                              int32_t off, const int nv, int tail, int32_t pf, int acc,
                              const int32_t D, const EmbDtype dt)
{
    if (tail == VL)
        pool_max_blk(out, cols, n, npf, off, nv, 0, VL, pf, acc, D, dt);
    else
        pool_max_blk(out, cols, n, npf, off, nv, 1, tail, pf, acc, D, dt);
}

/* out = the element-wise max of cols[0 .. n) (accumulate: with out); zeros for an empty
 * bag: kernels_c.c's pool_max_body, block by block of BLK vectors. */
EMB_INLINE void pool_max_body(float *out, const void *const *cols, int64_t n, int64_t ahead,
                              const int32_t D, int acc, const EmbDtype dt)
{
    if (!acc && n == 0) {
        memset(out, 0, (size_t)D * sizeof(float));
        return;
    }
    const int32_t bytes = (int32_t)emb__row_bytes(dt, D);
    const int64_t npf = ahead < 0 ? 0 : n + ahead;
    int32_t off = 0;
    for (; off + BLK * VL <= D; off += BLK * VL)
        pool_max_blk(out, cols, n, npf, off, BLK, 0, VL, off ? 0 : bytes, acc, D, dt);
    const int32_t rem = D - off, pf = off ? 0 : bytes;
    const int tail = rem % VL ? rem % VL : VL;
    switch ((rem + VL - 1) / VL) {
    case 1: pool_max_last(out, cols, n, npf, off, 1, tail, pf, acc, D, dt); break;
    case 2: pool_max_last(out, cols, n, npf, off, 2, tail, pf, acc, D, dt); break;
    case 3: pool_max_last(out, cols, n, npf, off, 3, tail, pf, acc, D, dt); break;
    case 4: pool_max_last(out, cols, n, npf, off, 4, tail, pf, acc, D, dt); break;
    case 5: pool_max_last(out, cols, n, npf, off, 5, tail, pf, acc, D, dt); break;
    case 6: pool_max_last(out, cols, n, npf, off, 6, tail, pf, acc, D, dt); break;
    case 7: pool_max_last(out, cols, n, npf, off, 7, tail, pf, acc, D, dt); break;
    case 8: pool_max_last(out, cols, n, npf, off, 8, tail, pf, acc, D, dt); break;
    default: break;
    }
}

/* ---- bags: the lookup's per-id path --------------------------------------------------- */

/* Id @k of the batch at its width. */
EMB_INLINE int64_t bag_id(const void *ids, int64_t k, const int id32)
{
    return id32 ? (int64_t)((const int32_t *)ids)[k] : ((const int64_t *)ids)[k];
}

/*
 * Adds the row at @row from element @off (times @w when weighted; a quantized row of N
 * elements: qadd_vecs, weight 1 when not) to the bag's nv accumulators (int4 paired:
 * qadd_pairs, even and odd nibbles). Paired (bf16 with
 * an even nv): each full vector of 2 VL bf16 is read once as VL 32-bit lanes, lane l
 * holding elements 2l (low half) and 2l + 1 (high half): a shift gives the even elements'
 * f32 values, a mask the odd ones' (2 integer ops per 2 VL elements instead of 2 widening
 * shuffles and 2 shifts), kept in acc[2m] (even) and acc[2m + 1] (odd) until bag_store
 * interleaves them. Every element is still summed alone and in bag order: bit-identical.
 */
EMB_INLINE void bag_add(vec *acc, const void *row, int32_t off, const int nv,
                        const bool paired, const int weighted, float wk, const int32_t N,
                        const EmbDtype dt)
{
    if (emb__dtype_quantized(dt)) {
        if (paired) /* int4 */
            qadd_pairs(acc, row, off, nv, weighted ? wk : 1.0f, N);
        else
            qadd_vecs(acc, row, off, nv, 0, VL, weighted ? wk : 1.0f, N, dt);
        return;
    }
    const void *p = at(dt, row, off);
    const vec w = vset1(wk);
    if (paired) {
        UNROLL_BLK for (int m = 0; m < nv / 2; m++) {
            vec e, o;
            ld_bf16_pairs((const uint16_t *)p + m * 2 * VL, &e, &o);
            acc[2 * m] = vadd(acc[2 * m], weighted ? vmul(w, e) : e);
            acc[2 * m + 1] = vadd(acc[2 * m + 1], weighted ? vmul(w, o) : o);
        }
        return;
    }
    UNROLL_BLK for (int j = 0; j < nv; j++) {
        const vec x = ld(dt, p, j * VL);
        acc[j] = vadd(acc[j], weighted ? vmul(w, x) : x);
    }
}

/* Stores the bag's accumulators at @o in element order (paired: interleaved back). */
EMB_INLINE void bag_store(float *o, const vec *acc, const int nv, const bool paired)
{
    if (paired) {
        UNROLL_BLK for (int m = 0; m < nv / 2; m++) {
            vec lo, hi;
            zip_even_odd(acc[2 * m], acc[2 * m + 1], &lo, &hi);
            st_f32(o + 2 * m * VL, lo);
            st_f32(o + (2 * m + 1) * VL, hi);
        }
        return;
    }
    UNROLL_BLK for (int j = 0; j < nv; j++)
        st_f32(o + j * VL, acc[j]);
}

/*
 * Bags of N elements, N a whole number of vectors: at most BLK of them (D = 16 .. 64, and
 * 128 with 16-float vectors), or a multiple of BLK (128 with 8-float vectors, 256), done as
 * N / (BLK VL) blocks of columns one after the other over the bag's ids (the pool kernel's
 * blocks; the ids of a bag are read once a block, from L1). Each block's sum is kept in
 * nv registers from the bag's first id to its store: per id one id load, one address, nv
 * loads and adds (and the weight's broadcast and multiply), in the first block one
 * prefetch of the column pf_dist ids ahead when pf_dist > 0. The per-bag work (bounds, the
 * combiner's factor, the store) is scalar code between the bags, no call.
 */
EMB_INLINE void bags_run(const EmbBagsArgs *a, const int32_t N, const EmbDtype dt,
                         const int id32, const int weighted)
{
    const int nv = N / VL <= BLK ? N / VL : BLK, nblk = N / (nv * VL);
    const bool paired = (dt == EMB_BF16 || dt == EMB_INT4) && nv % 2 == 0;
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
                    prefetch_col(data + bag_id(ids, k + pf, id32) * cs,
                                 (int32_t)emb__row_bytes(dt, N));
                const void *row = data + bag_id(ids, k, id32) * cs;
                if (weighted) {
                    const float wk = a->weights[k];
                    bag_add(acc, row, off, nv, paired, 1, wk, N, dt);
                    if (scaled && blk == 0) {
                        sw += wk;
                        sw2 += (double)wk * wk;
                    }
                } else {
                    bag_add(acc, row, off, nv, paired, 0, 0.0f, N, dt);
                }
            }
            if (end == start) {
                if (a->defcol)
                    bag_add(acc, a->defcol, off, nv, paired, 0, 0.0f, N, dt);
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
            bag_store(o + off, acc, nv, paired);
        }
        start = end;
    }
}

/*
 * MAX bags of N elements (N as bags_run's): per block of nv vectors, the bag's first row
 * loaded into registers, then vmax with each next row (max_row: a quantized element
 * fma(q, s, b)), stored once; an empty bag its default column or zeros; the prefetch of
 * bags_run. The C reference's bags_max_body, bit for bit.
 */
EMB_INLINE void bags_max_run(const EmbBagsArgs *a, const int32_t N, const EmbDtype dt,
                             const int id32)
{
    const int nv = N / VL <= BLK ? N / VL : BLK, nblk = N / (nv * VL);
    const void *ids = a->ids;
    const char *data = a->data;
    const int64_t cs = a->col_stride, pf = a->pf_dist;
    const int64_t *offs = a->offsets;
    int64_t start = offs ? offs[a->bag0] : a->bag0 * a->bag_size;
    const int64_t kend = offs ? offs[a->bag1] : a->bag1 * a->bag_size;
    float *o = a->out + a->bag0 * a->out_stride;
    for (int64_t bag = a->bag0; bag < a->bag1; bag++, o += a->out_stride) {
        const int64_t end = offs ? offs[bag + 1] : start + a->bag_size;
        for (int blk = 0; blk < nblk; blk++) {
            const int32_t off = blk * nv * VL;
            vec acc[BLK], x[BLK];
            const bool pfb = pf && blk == 0;
            const void *first = end > start ? data + bag_id(ids, start, id32) * cs : a->defcol;
            if (pfb && end > start && start + pf < kend)
                prefetch_col(data + bag_id(ids, start + pf, id32) * cs,
                             (int32_t)emb__row_bytes(dt, N));
            if (first) {
                max_row(acc, first, off, nv, 0, VL, N, dt);
            } else {
                UNROLL_BLK for (int j = 0; j < nv; j++)
                    acc[j] = vzero();
            }
            for (int64_t k = start + 1; k < end; k++) {
                if (pfb && k + pf < kend)
                    prefetch_col(data + bag_id(ids, k + pf, id32) * cs,
                                 (int32_t)emb__row_bytes(dt, N));
                max_row(x, data + bag_id(ids, k, id32) * cs, off, nv, 0, VL, N, dt);
                UNROLL_BLK for (int j = 0; j < nv; j++)
                    acc[j] = vmax(x[j], acc[j]);
            }
            UNROLL_BLK for (int j = 0; j < nv; j++)
                st_f32(o + off + j * VL, acc[j]);
        }
        start = end;
    }
}

EMB_INLINE void bags_max_body(const EmbBagsArgs *a, const int32_t N, const EmbDtype dt)
{
    if (a->id32)
        bags_max_run(a, N, dt, 1);
    else
        bags_max_run(a, N, dt, 0);
}

/* The id width and the weights chosen once per call, not per id. */
EMB_INLINE void bags_body(const EmbBagsArgs *a, const int32_t N, const EmbDtype dt)
{
    if (a->id32)
        a->weights ? bags_run(a, N, dt, 1, 1) : bags_run(a, N, dt, 1, 0);
    else
        a->weights ? bags_run(a, N, dt, 0, 1) : bags_run(a, N, dt, 0, 0);
}

/* ---- gather, SGD, sumsq, scale --------------------------------------------------------- */

/* out + k*stride = cols[k] as f32, prefetching EMB_PF_DIST columns ahead. */
EMB_INLINE void gather_body(float *out, int64_t stride, const void *const *cols, int64_t n,
                            const int32_t D, const EmbDtype dt)
{
    for (int64_t k = 0; k < n; k++) {
        if (k + EMB_PF_DIST < n)
            prefetch_col(cols[k + EMB_PF_DIST], D * esize(dt));
        const void *p = cols[k];
        float *o = out + k * stride;
        int32_t i = 0;
        for (; i + VL <= D; i += VL)
            st_f32(o + i, ld(dt, p, i));
        if (i < D)
            stn_f32(o + i, ldn(dt, p, i, D - i), D - i);
    }
}

/* col -= lr * g in the column's dtype; nt: non-temporal stores where aligned. */
EMB_INLINE void sgd_body(void *col, const float *g, float lr, const int32_t D, const int nt,
                         const EmbDtype dt)
{
    const vec l = vset1(lr);
    const bool stream = nt && aligned_to(col, (uintptr_t)(VL * esize(dt)));
    int32_t i = 0;
    for (; i + VL <= D; i += VL) {
        const vec x = vsub(ld(dt, col, i), vmul(l, ld_f32(g + i)));
        if (stream)
            stnt(dt, col, i, x);
        else
            st(dt, col, i, x);
    }
    if (i < D) {
        const int r = D - i;
        stn(dt, col, i, vsub(ldn(dt, col, i, r), vmul(l, ldn_f32(g + i, r))), r);
    }
}

/* The reference's tree over 8 lanes: ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). */
EMB_INLINE float sum8_tree(__m256 acc)
{
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

/* Σ x² in the reference's order: 16 lanes (element i into lane i % 16), then a tree. */
static inline float sumsq_body(const void *col, int32_t D, const EmbDtype dt)
{
    vec a[16 / VL];
    for (int j = 0; j < 16 / VL; j++)
        a[j] = vzero();
    int32_t i = 0;
    for (; i + 16 <= D; i += 16)
        for (int j = 0; j < 16 / VL; j++) {
            const vec x = ld(dt, col, i + j * VL);
            a[j] = vadd(a[j], vmul(x, x));
        }
    for (int j = 0; j < 16 / VL && i + j * VL < D; j++) {
        const int r = EMB_MIN(VL, D - (i + j * VL));
        const vec x = r == VL ? ld(dt, col, i + j * VL) : ldn(dt, col, i + j * VL, r);
        a[j] = vadd(a[j], vmul(x, x));
    }
    float s[16];
    for (int j = 0; j < 16 / VL; j++)
        st_f32(s + j * VL, a[j]);
    return emb__sumsq_lanes(s);
}

/* x *= s (f32 vectors only). */
static inline void scale_body(float *x, float s, int32_t D)
{
    const vec v = vset1(s);
    int32_t i = 0;
    for (; i + VL <= D; i += VL)
        st_f32(x + i, vmul(ld_f32(x + i), v));
    if (i < D)
        stn_f32(x + i, vmul(ldn_f32(x + i, D - i), v), D - i);
}

/* ---- optimizer rows (kernels.h, emb_opt_row_fn) ---------------------------------------- */

/*
 * The same operations per element as optim_c.c (multiply then add, correctly rounded sqrt
 * and divide), the column read and written in its dtype; the f32 state rows with partial
 * loads and stores in the tail. nt: the column's full vectors streamed where aligned.
 */
EMB_INLINE void col_store(const EmbDtype dt, void *col, int32_t i, vec x, const bool stream)
{
    if (stream)
        stnt(dt, col, i, x);
    else
        st(dt, col, i, x);
}

/* Σ g² in the reference's 8 lanes (element i into lane i % 8), then its tree. */
EMB_INLINE float opt_sumsq8(const float *g, const int32_t D)
{
    __m256 acc = _mm256_setzero_ps();
    int32_t i = 0;
    for (; i + VL <= D; i += VL)
        acc = sq8_add(acc, ld_f32(g + i));
    if (i < D)
        acc = sq8_add(acc, ldn_f32(g + i, D - i));
    return sum8_tree(acc);
}

/* Row-wise Adagrad: h += mean(g²); w -= (lr / (sqrt(h) + eps)) · g. */
EMB_INLINE void rowwise_body(void *col, float *h, const float *g, const EmbOptimParams *p,
                             const int32_t D, const int nt, const EmbDtype dt)
{
    h[0] = h[0] + opt_sumsq8(g, D) / (float)D;
    const vec m = vset1(p->lr / (sqrtf(h[0]) + p->eps));
    const bool stream = nt && aligned_to(col, (uintptr_t)(VL * esize(dt)));
    int32_t i = 0;
    for (; i + VL <= D; i += VL)
        col_store(dt, col, i, vsub(ld(dt, col, i), vmul(m, ld_f32(g + i))), stream);
    if (i < D) {
        const int r = D - i;
        stn(dt, col, i, vsub(ldn(dt, col, i, r), vmul(m, ldn_f32(g + i, r))), r);
    }
}

/* One vector of Adagrad: h += g²; returns w - lr · (g / (sqrt(h) + eps)). */
static inline vec adagrad_vec(vec w, vec *h, vec g, vec lr, vec eps)
{
    *h = vadd(*h, vmul(g, g));
    return vsub(w, vmul(lr, vdiv(g, vadd(vsqrt(*h), eps))));
}

EMB_INLINE void adagrad_body(void *col, float *h, const float *g, const EmbOptimParams *p,
                             const int32_t D, const int nt, const EmbDtype dt)
{
    const vec lr = vset1(p->lr), eps = vset1(p->eps);
    const bool stream = nt && aligned_to(col, (uintptr_t)(VL * esize(dt)));
    int32_t i = 0;
    for (; i + VL <= D; i += VL) {
        vec vh = ld_f32(h + i);
        const vec x = adagrad_vec(ld(dt, col, i), &vh, ld_f32(g + i), lr, eps);
        st_f32(h + i, vh);
        col_store(dt, col, i, x, stream);
    }
    if (i < D) {
        const int r = D - i;
        vec vh = ldn_f32(h + i, r);
        const vec x = adagrad_vec(ldn(dt, col, i, r), &vh, ldn_f32(g + i, r), lr, eps);
        stn_f32(h + i, vh, r);
        stn(dt, col, i, x, r);
    }
}

/* One vector of Adam: m += (g - m)(1 - b1); v += (g² - v)(1 - b2); returns
 * w - step_size · (m / (sqrt(v) + eps)). c holds 1 - b1, 1 - b2, step_size, eps. */
static inline vec adam_vec(vec w, vec *m, vec *v, vec g, const vec c[4])
{
    *m = vadd(*m, vmul(vsub(g, *m), c[0]));
    *v = vadd(*v, vmul(vsub(vmul(g, g), *v), c[1]));
    return vsub(w, vmul(c[2], vdiv(*m, vadd(vsqrt(*v), c[3]))));
}

EMB_INLINE void adam_body(void *col, float *s, const float *g, const EmbOptimParams *p,
                          const int32_t D, const int nt, const EmbDtype dt)
{
    const vec c[4] = {vset1(1.0f - p->beta1), vset1(1.0f - p->beta2), vset1(p->step_size),
                      vset1(p->eps)};
    float *m = s, *v = s + D;
    const bool stream = nt && aligned_to(col, (uintptr_t)(VL * esize(dt)));
    int32_t i = 0;
    for (; i + VL <= D; i += VL) {
        vec vm = ld_f32(m + i), vv = ld_f32(v + i);
        const vec x = adam_vec(ld(dt, col, i), &vm, &vv, ld_f32(g + i), c);
        st_f32(m + i, vm);
        st_f32(v + i, vv);
        col_store(dt, col, i, x, stream);
    }
    if (i < D) {
        const int r = D - i;
        vec vm = ldn_f32(m + i, r), vv = ldn_f32(v + i, r);
        const vec x = adam_vec(ldn(dt, col, i, r), &vm, &vv, ldn_f32(g + i, r), c);
        stn_f32(m + i, vm, r);
        stn_f32(v + i, vv, r);
        stn(dt, col, i, x, r);
    }
}

/* ---- range kernels (kernels.h, emb_rows_fn): the apply's columns in one call ----- */

/* Distinct column @d's gradient, elements off .. off + nv VL, into @g: its one row
 * loaded, or its rows summed from zeros in row order (EmbRowsArgs). */
EMB_INLINE void rows_grad(const EmbRowsArgs *a, int64_t d, int32_t off, const int nv, vec *g)
{
    const int64_t p0 = a->starts[d], p1 = a->starts[d + 1];
    if (p1 - p0 == 1 && a->gcoef[p0] == 1.0f) {
        const float *r = (const float *)a->grow[p0] + off;
        UNROLL_BLK for (int j = 0; j < nv; j++)
            g[j] = ld_f32(r + j * VL);
        return;
    }
    UNROLL_BLK for (int j = 0; j < nv; j++)
        g[j] = vzero();
    for (int64_t p = p0; p < p1; p++) {
        const vec w = vset1(a->gcoef[p]);
        const float *r = (const float *)a->grow[p] + off;
        UNROLL_BLK for (int j = 0; j < nv; j++)
            g[j] = vadd(g[j], vmul(w, ld_f32(r + j * VL)));
    }
}

/* A column's clipping (EmbRowsClip) as the range kernels apply it: the clamp's bounds, the
 * row-norm factor rs (scaled: the norm was over), the global factor (global: != 1). */
typedef struct RowsClip {
    bool clamp, scaled, global;
    vec hi, lo, rs, scale;
} RowsClip;

/* g clamped to [lo, hi] as emb__clamp: min(hi, x) keeps x unless hi < x, then max(lo, .). */
EMB_INLINE void rows_clamp(const RowsClip *rc, const int nv, vec *g)
{
    if (rc->clamp)
        UNROLL_BLK for (int j = 0; j < nv; j++)
            g[j] = vmax(rc->lo, vmin(rc->hi, g[j]));
}

/* The call's clipping (a->clip; NULL: none): bounds and global factor, once a call. */
EMB_INLINE void rows_clip_init(const EmbRowsArgs *a, RowsClip *rc)
{
    const EmbRowsClip *c = a->clip;
    rc->clamp = c && c->value > 0.0f;
    rc->global = c && c->scale != 1.0f;
    rc->scaled = false;
    rc->hi = vset1(c ? c->value : 0.0f);
    rc->lo = vset1(c ? -c->value : 0.0f);
    rc->scale = vset1(c ? c->scale : 1.0f);
    rc->rs = vset1(1.0f);
}

/* The row-norm factor from @acc, Σ g² of the clamped gradient in the reference's 8 lanes
 * (emb__rows_clip_factor): rs = norm / sqrt(Σ g²) when that root is over norm. */
EMB_INLINE void rows_norm_set(const EmbRowsArgs *a, __m256 acc, RowsClip *rc)
{
    const float n = sqrtf(sum8_tree(acc)), norm = a->clip->norm;
    rc->scaled = n > norm;
    if (rc->scaled)
        rc->rs = vset1(norm / n);
}

/* Column @d's row-norm factor (a->clip's norm > 0): one pass over its clamped gradient's
 * blocks (emb__rows_clip_factor). */
EMB_INLINE void rows_clip_row(const EmbRowsArgs *a, int64_t d, const int nv, const int nblk,
                              RowsClip *rc)
{
    if (!a->clip || !(a->clip->norm > 0.0f))
        return;
    __m256 acc = _mm256_setzero_ps();
    for (int blk = 0; blk < nblk; blk++) {
        vec g[BLK];
        rows_grad(a, d, blk * nv * VL, nv, g);
        rows_clamp(rc, nv, g);
        UNROLL_BLK for (int j = 0; j < nv; j++)
            acc = sq8_add(acc, g[j]);
    }
    rows_norm_set(a, acc, rc);
}

/* The row-norm and global factors of @rc on a clamped gradient block. */
EMB_INLINE void rows_scale(const RowsClip *rc, const int nv, vec *g)
{
    if (rc->scaled)
        UNROLL_BLK for (int j = 0; j < nv; j++)
            g[j] = vmul(g[j], rc->rs);
    if (rc->global)
        UNROLL_BLK for (int j = 0; j < nv; j++)
            g[j] = vmul(g[j], rc->scale);
}

/* Column @d's gradient block (rows_grad) clipped by @rc: clamp, row-norm factor, global
 * factor, each a multiply as emb__rows_grad_clip. */
EMB_INLINE void rows_grad_clip(const EmbRowsArgs *a, int64_t d, int32_t off, const int nv,
                               vec *g, const RowsClip *rc)
{
    rows_grad(a, d, off, nv, g);
    rows_clamp(rc, nv, g);
    rows_scale(rc, nv, g);
}

/* Column @d's first gradient block, clipped, into @g, its row-norm factor set in @rc: a
 * column of one block is summed once, its norm taken on the registers (the same values and
 * order as rows_clip_row); a longer one takes rows_clip_row's pass first. */
EMB_INLINE void rows_grad_first(const EmbRowsArgs *a, int64_t d, const int nv, const int nblk,
                                vec *g, RowsClip *rc)
{
    if (nblk > 1 || !a->clip || !(a->clip->norm > 0.0f)) {
        rows_clip_row(a, d, nv, nblk, rc);
        rows_grad_clip(a, d, 0, nv, g, rc);
        return;
    }
    rows_grad(a, d, 0, nv, g);
    rows_clamp(rc, nv, g);
    __m256 acc = _mm256_setzero_ps();
    UNROLL_BLK for (int j = 0; j < nv; j++)
        acc = sq8_add(acc, g[j]);
    rows_norm_set(a, acc, rc);
    rows_scale(rc, nv, g);
}

/* The column (@bytes) and its state row (@sbytes, 0: none) @pf_dist ahead of @d into L2,
 * within the range. */
EMB_INLINE void rows_prefetch(const EmbRowsArgs *a, int64_t d, int32_t bytes,
                              const int32_t sbytes)
{
    if (!a->pf_dist || d + a->pf_dist >= a->d1)
        return;
    const int64_t id = a->ids[d + a->pf_dist];
    prefetch_col_to(a->data + id * a->col_stride, bytes, true);
    if (sbytes)
        prefetch_col_to(a->state + id * a->state_stride, sbytes, true);
}

/*
 * SGD on columns d0 .. d1 of N elements (N whole vectors: at most BLK, or whole blocks of
 * BLK, as bags_run): per block of the column its gradient in nv registers, then col -= lr
 * * g stored in the dtype. No scratch row, no call per column.
 */
EMB_INLINE void sgd_rows_body(const EmbRowsArgs *a, const int32_t N, const EmbDtype dt)
{
    const int nv = N / VL <= BLK ? N / VL : BLK, nblk = N / (nv * VL);
    const vec lr = vset1(a->lr);
    RowsClip rc;
    rows_clip_init(a, &rc);
    for (int64_t d = a->d0; d < a->d1; d++) {
        rows_prefetch(a, d, N * esize(dt), 0);
        char *col = a->data + a->ids[d] * a->col_stride;
        vec g[BLK];
        rows_grad_first(a, d, nv, nblk, g, &rc);
        for (int blk = 0; blk < nblk; blk++) {
            const int32_t off = blk * nv * VL;
            if (blk)
                rows_grad_clip(a, d, off, nv, g, &rc);
            UNROLL_BLK for (int j = 0; j < nv; j++)
                st(dt, col, off + j * VL, vsub(ld(dt, col, off + j * VL), vmul(lr, g[j])));
        }
    }
}

/* Row-wise Adagrad on columns d0 .. d1 of N elements (blocks as sgd_rows_body): the sum
 * of squares in the reference's 8 lanes over the gradient in registers, then the update;
 * a column of more than one block sums its gradient again for the update (the same
 * values: one order, one rounding). */
EMB_INLINE void rowwise_rows_body(const EmbRowsArgs *a, const int32_t N, const EmbDtype dt)
{
    const int nv = N / VL <= BLK ? N / VL : BLK, nblk = N / (nv * VL);
    const float lr = a->params->lr, eps = a->params->eps;
    RowsClip rc;
    rows_clip_init(a, &rc);
    /* the state row: h, or with a rate (the counter) h, prev_iter, counter: 12 bytes in a
       16-byte stride (emb__column_stride aligns a 12-byte row to 16), one line, prefetched */
    const int32_t sbytes = a->rate ? (int32_t)EMB_MIN(a->state_stride, 64) : (int32_t)sizeof(float);
    for (int64_t d = a->d0; d < a->d1; d++) {
        rows_prefetch(a, d, N * esize(dt), sbytes);
        char *col = a->data + a->ids[d] * a->col_stride;
        float *h = (float *)(a->state + a->ids[d] * a->state_stride);
        vec g[BLK];
        rows_grad_first(a, d, nv, nblk, g, &rc);
        __m256 acc = _mm256_setzero_ps();
        for (int blk = 0; blk < nblk; blk++) {
            if (blk)
                rows_grad_clip(a, d, blk * nv * VL, nv, g, &rc);
            UNROLL_BLK for (int j = 0; j < nv; j++)
                acc = sq8_add(acc, g[j]);
        }
        float f;
        if (a->rate) {
            f = a->rate(a->rate_ctx, h, sum8_tree(acc));
        } else {
            h[0] = h[0] + sum8_tree(acc) / (float)N;
            f = lr / (sqrtf(h[0]) + eps);
        }
        const vec m = vset1(f);
        for (int blk = 0; blk < nblk; blk++) {
            const int32_t off = blk * nv * VL;
            if (nblk > 1)
                rows_grad_clip(a, d, off, nv, g, &rc);
            UNROLL_BLK for (int j = 0; j < nv; j++)
                st(dt, col, off + j * VL, vsub(ld(dt, col, off + j * VL), vmul(m, g[j])));
        }
    }
}

/* One vector of FTRL with lr_power = -0.5 (optim_ref.h's ftrl_elem, the pow a square
 * root): acc and lin updated, the new weight returned. c holds lr, 2 l2, l1. */
static inline vec ftrl_vec(vec w, vec *acc, vec *lin, vec g, const vec c[4])
{
    const vec a1 = vadd(*acc, vmul(g, g)), pa1 = vsqrt(a1);
    *lin = vadd(*lin, vsub(g, vmul(vdiv(vsub(pa1, vsqrt(*acc)), c[0]), w)));
    const vec quad = vadd(vdiv(pa1, c[0]), c[1]);
    *acc = a1;
    return vftrl_w(*lin, c[2], quad);
}

/* One vector of an elementwise optimizer at element i of a column (state row s), the
 * gradient's vector in g: adagrad_vec (h at s), adam_vec (m at s, v at s + N) or
 * ftrl_vec (accumulator at s, linear at s + N). */
EMB_INLINE vec elem_vec(const EmbOptimizerKind kind, vec w, float *s, int32_t i,
                        const int32_t N, vec g, const vec c[4])
{
    if (kind == EMB_OPT_ADAGRAD) {
        vec vh = ld_f32(s + i);
        const vec x = adagrad_vec(w, &vh, g, c[2], c[3]);
        st_f32(s + i, vh);
        return x;
    }
    vec vm = ld_f32(s + i), vv = ld_f32(s + N + i);
    const vec x = kind == EMB_OPT_FTRL ? ftrl_vec(w, &vm, &vv, g, c)
                                       : adam_vec(w, &vm, &vv, g, c);
    st_f32(s + i, vm);
    st_f32(s + N + i, vv);
    return x;
}

/* Adagrad (state row h[N]), Adam ([m N | v N]) or FTRL with lr_power = -0.5 ([accum N |
 * linear N]) on columns d0 .. d1 of N elements, blocks as sgd_rows_body: elem_vec per
 * vector of the gradient in registers. c holds Adam's 1 - beta1, 1 - beta2, then the step
 * (Adagrad: lr; Adam: step_size) and eps; FTRL's lr, 2 l2, l1. */
EMB_INLINE void elem_rows_body(const EmbRowsArgs *a, const int32_t N, const EmbDtype dt,
                               const EmbOptimizerKind kind)
{
    const int nv = N / VL <= BLK ? N / VL : BLK, nblk = N / (nv * VL);
    const EmbOptimParams *p = a->params;
    const bool ftrl = kind == EMB_OPT_FTRL;
    const vec c[4] = {vset1(ftrl ? p->lr : 1.0f - p->beta1),
                      vset1(ftrl ? 2.0f * p->l2 : 1.0f - p->beta2),
                      vset1(ftrl ? p->l1 : kind == EMB_OPT_ADAM ? p->step_size : p->lr),
                      vset1(p->eps)};
    const int32_t sbytes = (kind == EMB_OPT_ADAGRAD ? 1 : 2) * N * (int32_t)sizeof(float);
    RowsClip rc;
    rows_clip_init(a, &rc);
    for (int64_t d = a->d0; d < a->d1; d++) {
        rows_prefetch(a, d, N * esize(dt), sbytes);
        char *col = a->data + a->ids[d] * a->col_stride;
        float *s = (float *)(a->state + a->ids[d] * a->state_stride);
        vec g[BLK];
        rows_grad_first(a, d, nv, nblk, g, &rc);
        for (int blk = 0; blk < nblk; blk++) {
            const int32_t off = blk * nv * VL;
            if (blk)
                rows_grad_clip(a, d, off, nv, g, &rc);
            UNROLL_BLK for (int j = 0; j < nv; j++) {
                const int32_t i = off + j * VL;
                st(dt, col, i, elem_vec(kind, ld(dt, col, i), s, i, N, g[j], c));
            }
        }
    }
}

EMB_INLINE void adagrad_rows_body(const EmbRowsArgs *a, const int32_t N, const EmbDtype dt)
{
    elem_rows_body(a, N, dt, EMB_OPT_ADAGRAD);
}

EMB_INLINE void adam_rows_body(const EmbRowsArgs *a, const int32_t N, const EmbDtype dt)
{
    elem_rows_body(a, N, dt, EMB_OPT_ADAM);
}

/* lr_power = -0.5 only (emb__plan_optimizer takes no range kernel for another). */
EMB_INLINE void ftrl_rows_body(const EmbRowsArgs *a, const int32_t N, const EmbDtype dt)
{
    elem_rows_body(a, N, dt, EMB_OPT_FTRL);
}

/* ---- the one-line wrappers of the ISA files ------------------------------------------- */

/* NAME, then the constant size (0: the run-time D) and dtype; the _nt ones stream. */
#define GATHER(NAME, N, DT)                                                                \
    static void NAME(float *out, int64_t stride, const void *const *cols, int64_t n,      \
                     int32_t D)                                                            \
    {                                                                                      \
        gather_body(out, stride, cols, n, N ? N : D, DT);                                  \
    }
#define POOL(NAME, N, NT, DT)                                                              \
    static void NAME(float *out, const void *const *cols, const float *w, int64_t n,      \
                     int64_t ahead, int32_t D, int acc)                                    \
    {                                                                                      \
        pool_body(out, cols, w, n, ahead, N ? N : D, acc, NT, DT);                         \
    }
/* N: whole vectors, as BAGS. */
#define BAGS_MAX(NAME, N, DT)                                                              \
    static void NAME(const EmbBagsArgs *a)                                                 \
    {                                                                                      \
        _Static_assert(N % VL == 0 && (N / VL <= BLK || N % (BLK * VL) == 0),              \
                       "bags: whole vectors in registers");                                \
        bags_max_body(a, N, DT);                                                           \
    }
#define POOL_MAX(NAME, N, DT)                                                              \
    static void NAME(float *out, const void *const *cols, const float *w, int64_t n,      \
                     int64_t ahead, int32_t D, int acc)                                    \
    {                                                                                      \
        (void)w;                                                                           \
        pool_max_body(out, cols, n, ahead, N ? N : D, acc, DT);                            \
    }
#define SGD(NAME, N, NT, DT)                                                               \
    static void NAME(void *col, const float *g, float lr, int32_t D)                       \
    {                                                                                      \
        sgd_body(col, g, lr, N ? N : D, NT, DT);                                           \
    }
/* N: a size of whole vectors, at most BLK of them or whole blocks of BLK. */
#define BAGS(NAME, N, DT)                                                                  \
    static void NAME(const EmbBagsArgs *a)                                                 \
    {                                                                                      \
        _Static_assert(N % VL == 0 && (N / VL <= BLK || N % (BLK * VL) == 0),              \
                       "bags: whole vectors in registers");                                \
        bags_body(a, N, DT);                                                               \
    }
/* NAME, the body (adagrad_body, rowwise_body, adam_body), the constant size (0: the run-time
 * D), streaming stores or not, the dtype. */
#define OPT_ROW(NAME, BODY, N, NT, DT)                                                     \
    static void NAME(void *col, float *s, const float *g, const EmbOptimParams *p,         \
                     int32_t D)                                                            \
    {                                                                                      \
        BODY(col, s, g, p, N ? N : D, NT, DT);                                             \
    }
/* N: whole vectors, as BAGS. */
#define SGD_ROWS(NAME, N, DT)                                                              \
    static void NAME(const EmbRowsArgs *a)                                              \
    {                                                                                      \
        _Static_assert(N % VL == 0 && (N / VL <= BLK || N % (BLK * VL) == 0),              \
                       "sgd_rows: whole vectors in registers");                            \
        sgd_rows_body(a, N, DT);                                                           \
    }
/* N: whole vectors, as BAGS. */
#define OPT_ROWS(NAME, BODY, N, DT)                                                        \
    static void NAME(const EmbRowsArgs *a)                                                 \
    {                                                                                      \
        _Static_assert(N % VL == 0 && (N / VL <= BLK || N % (BLK * VL) == 0),              \
                       "rows: whole vectors in registers");                                \
        BODY(a, N, DT);                                                                    \
    }
#define SUMSQ(NAME, DT)                                                                    \
    static float NAME(const void *col, int32_t D)                                          \
    {                                                                                      \
        return sumsq_body(col, D, DT);                                                     \
    }

#endif
