/* SPDX-License-Identifier: BSD-2-Clause */
/**
 * @file static.h
 * Header-only static tables: for a program that embeds one small table of a compile-time
 * feature size in a hot loop. No library call, no allocation, no error path: the functions
 * are inline loops over a constant N that the compiler unrolls and vectorises for the
 * target it compiles for.
 *
 * @code
 *   #include <embtables/static.h>
 *   EMB_STATIC_TABLE(user_tbl, 32)     // a type `user_tbl` and user_tbl_* functions, N = 32
 *
 *   float storage[1000 * 32];
 *   user_tbl t = user_tbl_wrap(storage, 1000);
 *   user_tbl_bag_sum(&t, ids, 20, out);   // out[0..32) = Σ columns ids[0..20)
 * @endcode
 *
 * The stamped functions (NAME the first macro argument, N the second; storage is f32, the
 * layout the library uses for a simple table: column c at data + c * N):
 *  - `NAME NAME_wrap(float *data, int64_t ncolumns)`: a table over the caller's memory
 *    (not copied, not owned; keep it alive while the table is used);
 *  - `float *NAME_column(const NAME *t, int64_t id)`;
 *  - `int64_t NAME_check(const NAME *t, const int64_t *ids, int64_t n)`: the position of
 *    the first id outside [0, ncolumns), or -1 when all are valid. The other functions do
 *    not check ids (that is the point of a hot path): call it where ids are untrusted;
 *  - `void NAME_gather(const NAME *t, const int64_t *ids, int64_t n, float *out,
 *    int64_t out_stride)`: row k of out = column ids[k];
 *  - `void NAME_bag_sum(const NAME *t, const int64_t *ids, int64_t len, float *out)`:
 *    out[0..N) = Σ_k column ids[k], summed in bag order from zeros (a repeated id counts
 *    each time; len 0 gives zeros);
 *  - `void NAME_lookup_sum(const NAME *t, const int64_t *ids, int64_t nbags,
 *    int64_t bag_size, float *out, int64_t out_stride)`: fixed bags, as emb_lookup_sum;
 *  - `void NAME_sgd(NAME *t, int64_t id, const float *g, float lr)`: column -= lr * g.
 *
 * Results are bit-identical to the library's (emb_gather, emb_lookup_sum, the SGD row
 * kernel): the same operations in the same order. For NAME_sgd that needs the multiply
 * and the subtract kept apart: compile with -ffp-contract=off (the default of -std=c11 /
 * -std=c17 in GCC and Clang; GNU modes may fuse them into an FMA, which rounds once
 * instead of twice and can differ by one unit in the last place).
 *
 * Concurrency: the functions read the data they are given and write only their outputs
 * (NAME_sgd writes the columns it updates): the caller's usual rules for shared memory.
 */
#ifndef EMBTABLES_STATIC_H
#define EMBTABLES_STATIC_H

#include <stdint.h>
#include <string.h>

/** Storage class of the header-only helpers (always inlined where the compiler can). */
#if defined(__GNUC__)
#define EMB_STATIC_INLINE static inline __attribute__((always_inline, unused))
#else
#define EMB_STATIC_INLINE static inline
#endif

/** Σ over a bag of columns[off .. off + w) of n-float columns, in bag order, into out. */
EMB_STATIC_INLINE void emb_static_sum1(const float *data, int64_t n, const int64_t *ids,
                                       int64_t len, int off, float *out)
{
    float a = 0.0f;
    for (int64_t k = 0; k < len; k++)
        a = a + data[ids[k] * n + off];
    out[off] = a;
}

#if defined(__GNUC__)
/* GNU C vectors (4 floats: any x86-64, NEON, ...) keep the accumulators in registers,
 * which compilers do not reliably manage with arrays; the sums stay element-wise. */
typedef float emb_static_v4 __attribute__((vector_size(16)));

EMB_STATIC_INLINE emb_static_v4 emb_static_ld4(const float *p)
{
    emb_static_v4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

EMB_STATIC_INLINE void emb_static_sum4(const float *data, int64_t n, const int64_t *ids,
                                       int64_t len, int off, float *out)
{
    emb_static_v4 a = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t k = 0; k < len; k++)
        a = a + emb_static_ld4(data + ids[k] * n + off);
    memcpy(out + off, &a, sizeof a);
}

EMB_STATIC_INLINE void emb_static_sum16(const float *data, int64_t n, const int64_t *ids,
                                        int64_t len, int off, float *out)
{
    emb_static_v4 a0 = {0.0f, 0.0f, 0.0f, 0.0f}, a1 = a0, a2 = a0, a3 = a0;
    for (int64_t k = 0; k < len; k++) {
        const float *c = data + ids[k] * n + off;
        a0 = a0 + emb_static_ld4(c);
        a1 = a1 + emb_static_ld4(c + 4);
        a2 = a2 + emb_static_ld4(c + 8);
        a3 = a3 + emb_static_ld4(c + 12);
    }
    memcpy(out + off, &a0, sizeof a0);
    memcpy(out + off + 4, &a1, sizeof a1);
    memcpy(out + off + 8, &a2, sizeof a2);
    memcpy(out + off + 12, &a3, sizeof a3);
}
#endif

/** out[0 .. n) = Σ_k column ids[k]: blocks of 16 and 4 floats (GNU C), then single ones. */
EMB_STATIC_INLINE void emb_static_bag_sum(const float *data, int n, const int64_t *ids,
                                          int64_t len, float *out)
{
    int off = 0;
#if defined(__GNUC__)
    for (; off + 16 <= n; off += 16)
        emb_static_sum16(data, n, ids, len, off, out);
    for (; off + 4 <= n; off += 4)
        emb_static_sum4(data, n, ids, len, off, out);
#endif
    for (; off < n; off++)
        emb_static_sum1(data, n, ids, len, off, out);
}

/** Stamps out the static table type NAME of feature size N (a positive constant) and its
 *  functions NAME_wrap, NAME_column, NAME_check, NAME_gather, NAME_bag_sum,
 *  NAME_lookup_sum and NAME_sgd (see the file comment). */
#define EMB_STATIC_TABLE(NAME, N)                                                          \
    typedef struct NAME {                                                                  \
        float *data;      /* column c at data + c * N */                                   \
        int64_t ncolumns;                                                                  \
    } NAME;                                                                                \
                                                                                           \
    EMB_STATIC_INLINE NAME NAME##_wrap(float *data, int64_t ncolumns)                      \
    {                                                                                      \
        NAME t;                                                                            \
        t.data = data;                                                                     \
        t.ncolumns = ncolumns;                                                             \
        return t;                                                                          \
    }                                                                                      \
                                                                                           \
    EMB_STATIC_INLINE float *NAME##_column(const NAME *t, int64_t id)                      \
    {                                                                                      \
        return t->data + id * (int64_t)(N);                                                \
    }                                                                                      \
                                                                                           \
    EMB_STATIC_INLINE int64_t NAME##_check(const NAME *t, const int64_t *ids, int64_t n)   \
    {                                                                                      \
        for (int64_t k = 0; k < n; k++)                                                    \
            if (ids[k] < 0 || ids[k] >= t->ncolumns)                                       \
                return k;                                                                  \
        return -1;                                                                         \
    }                                                                                      \
                                                                                           \
    EMB_STATIC_INLINE void NAME##_gather(const NAME *t, const int64_t *ids, int64_t n,     \
                                         float *out, int64_t out_stride)                   \
    {                                                                                      \
        for (int64_t k = 0; k < n; k++) {                                                  \
            const float *c = NAME##_column(t, ids[k]);                                     \
            float *o = out + k * out_stride;                                               \
            for (int i = 0; i < (N); i++)                                                  \
                o[i] = c[i];                                                               \
        }                                                                                  \
    }                                                                                      \
                                                                                           \
    EMB_STATIC_INLINE void NAME##_bag_sum(const NAME *t, const int64_t *ids, int64_t len,  \
                                          float *out)                                      \
    {                                                                                      \
        emb_static_bag_sum(t->data, (N), ids, len, out);                                   \
    }                                                                                      \
                                                                                           \
    EMB_STATIC_INLINE void NAME##_lookup_sum(const NAME *t, const int64_t *ids,            \
                                             int64_t nbags, int64_t bag_size, float *out,  \
                                             int64_t out_stride)                           \
    {                                                                                      \
        for (int64_t b = 0; b < nbags; b++)                                                \
            NAME##_bag_sum(t, ids + b * bag_size, bag_size, out + b * out_stride);         \
    }                                                                                      \
                                                                                           \
    EMB_STATIC_INLINE void NAME##_sgd(NAME *t, int64_t id, const float *g, float lr)       \
    {                                                                                      \
        float *c = NAME##_column(t, id);                                                   \
        for (int i = 0; i < (N); i++) {                                                    \
            const float step = lr * g[i];                                                  \
            c[i] = c[i] - step;                                                            \
        }                                                                                  \
    }                                                                                      \
    typedef int NAME##_stamped /* lets the macro be followed by a semicolon */

#endif
