/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * kernels_c.c — the C reference of every lookup kernel (gather, pool, sumsq, scale, SGD
 * row): the definition of correct. One forced-inline body per family with the dtype and,
 * in the `_dN` copies, the size as constant parameters (zstd's habit); each registered
 * kernel is a one-line wrapper named as it is registered. The library's baseline flags
 * (-std=c11: no FMA contraction) keep `acc + w * x` a separate multiply and add, which the
 * SIMD variants reproduce.
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "dtype.h"
#include "internal.h"
#include "kernels/bags_ref.h"
#include "kernels/kernels.h"

EMB_INLINE void gather_body(float *out, int64_t stride, const void *const *cols, int64_t n,
                            const int32_t D, const EmbDtype dt)
{
    for (int64_t k = 0; k < n; k++)
        for (int32_t i = 0; i < D; i++)
            out[k * stride + i] = emb__load(dt, cols[k], i);
}

/* out (+)= Σ_k w[k] cols[k], element by element in bag order. */
EMB_INLINE void pool_body(float *out, const void *const *cols, const float *w, int64_t n,
                          const int32_t D, int accumulate, const EmbDtype dt)
{
    if (!accumulate)
        memset(out, 0, (size_t)D * sizeof(float));
    for (int64_t k = 0; k < n; k++) {
        if (w) {
            const float wk = w[k];
            for (int32_t i = 0; i < D; i++)
                out[i] = out[i] + wk * emb__load(dt, cols[k], i);
        } else {
            for (int32_t i = 0; i < D; i++)
                out[i] = out[i] + emb__load(dt, cols[k], i);
        }
    }
}

/* The pool for a constant N: sums into a local array (no aliasing with the columns), so
 * that the compiler unrolls and vectorises it for the baseline ISA; the same order. */
EMB_INLINE void pool_fixed_body(float *out, const void *const *cols, const float *w,
                                int64_t n, const int32_t N, int accumulate, const EmbDtype dt)
{
    float a[256];
    for (int32_t i = 0; i < N; i++)
        a[i] = accumulate ? out[i] : 0.0f;
    for (int64_t k = 0; k < n; k++) {
        const float wk = w ? w[k] : 1.0f;
        if (w)
            for (int32_t i = 0; i < N; i++)
                a[i] = a[i] + wk * emb__load(dt, cols[k], i);
        else
            for (int32_t i = 0; i < N; i++)
                a[i] = a[i] + emb__load(dt, cols[k], i);
    }
    memcpy(out, a, (size_t)N * sizeof(float));
}

/*
 * out = the element-wise max of cols[0 .. n) (accumulate: of out and them): acc = x > acc ?
 * x : acc from the first (so a NaN first stays, a later NaN is skipped, the first of equal
 * values stays: the entry the backward credits); n == 0 without accumulate gives zeros.
 * Every dtype: a quantized element is fma(q, scale, bias), a one-row SUM bag's value
 * (emb__max_elem).
 */
EMB_INLINE void pool_max_body(float *out, const void *const *cols, int64_t n,
                              const int32_t D, int accumulate, const EmbDtype dt)
{
    int64_t k = 0;
    if (!accumulate && n == 0) {
        memset(out, 0, (size_t)D * sizeof(float));
        return;
    }
    float s = 1.0f, b = 0.0f;
    if (!accumulate) {
        if (emb__dtype_quantized(dt))
            emb__q_params(dt, cols[0], D, &s, &b);
        for (int32_t i = 0; i < D; i++)
            out[i] = emb__max_elem(dt, cols[0], i, s, b);
        k = 1;
    }
    for (; k < n; k++) {
        if (emb__dtype_quantized(dt))
            emb__q_params(dt, cols[k], D, &s, &b);
        for (int32_t i = 0; i < D; i++) {
            const float x = emb__max_elem(dt, cols[k], i, s, b);
            out[i] = x > out[i] ? x : out[i];
        }
    }
}

/* MAX bags a->bag0 .. bag1 (EmbBagsArgs, no weights): each bag pool_max_body of its rows
 * in bag order, an empty bag its default column or zeros. */
EMB_INLINE void bags_max_body(const EmbBagsArgs *a, const int32_t D, const EmbDtype dt)
{
    for (int64_t bag = a->bag0; bag < a->bag1; bag++) {
        const int64_t start = a->offsets ? a->offsets[bag] : bag * a->bag_size;
        const int64_t end = a->offsets ? a->offsets[bag + 1] : start + a->bag_size;
        float *o = a->out + bag * a->out_stride;
        if (start == end) {
            const void *def[1] = {a->defcol};
            pool_max_body(o, def, a->defcol ? 1 : 0, D, 0, dt);
            continue;
        }
        for (int64_t k = start; k < end; k++) {
            const int64_t id = a->id32 ? ((const int32_t *)a->ids)[k]
                                       : ((const int64_t *)a->ids)[k];
            const void *row[1] = {a->data + id * a->col_stride};
            pool_max_body(o, row, 1, D, k > start, dt);
        }
    }
}

/* acc += a row in the table's dtype (EmbRowAdd): o + x unweighted, o + w * x weighted. */
static inline void add_row(float *acc, const void *row, float w, int weighted, const int32_t D,
                        const EmbDtype dt)
{
    for (int32_t i = 0; i < D; i++)
        acc[i] = weighted ? acc[i] + w * emb__load(dt, row, i) : acc[i] + emb__load(dt, row, i);
}

EMB_INLINE float sumsq_body(const void *col, int32_t D, const EmbDtype dt)
{
    float s[16] = {0};
    for (int32_t i = 0; i < D; i++) {
        const float x = emb__load(dt, col, i);
        s[i % 16] = s[i % 16] + x * x;
    }
    return emb__sumsq_lanes(s);
}

EMB_INLINE void sgd_body(void *col, const float *g, float lr, const int32_t D,
                         const EmbDtype dt)
{
    for (int32_t i = 0; i < D; i++)
        emb__store(dt, col, i, emb__load(dt, col, i) - lr * g[i]);
}

/* SGD on columns d0 .. d1 (EmbRowsArgs): the SGD row's col - lr * g on each column. */
EMB_INLINE void sgd_rows_body(const EmbRowsArgs *a, const int32_t D, const EmbDtype dt)
{
    for (int64_t d = a->d0; d < a->d1; d++) {
        void *col = a->data + a->ids[d] * a->col_stride;
        const float rs = emb__rows_clip_factor(a, d, D); /* 1: no clipping */
        for (int32_t i = 0; i < D; i++)
            emb__store(dt, col, i, emb__load(dt, col, i) - a->lr * emb__rows_grad_clip(a, d, i, rs));
    }
}

/* One-line wrappers: NAME, then the constant size (0: the run-time D) and dtype. */
#define GATHER(NAME, N, DT)                                                                \
    static void NAME(float *out, int64_t stride, const void *const *cols, int64_t n,      \
                     int32_t D)                                                            \
    {                                                                                      \
        gather_body(out, stride, cols, n, N ? N : D, DT);                                  \
    }
#define POOL(NAME, DT)                                                                     \
    static void NAME(float *out, const void *const *cols, const float *w, int64_t n,      \
                     int64_t ahead, int32_t D, int acc)                                    \
    {                                                                                      \
        (void)ahead;                                                                       \
        pool_body(out, cols, w, n, D, acc, DT);                                            \
    }
#define POOL_D(NAME, N, DT)                                                                \
    static void NAME(float *out, const void *const *cols, const float *w, int64_t n,      \
                     int64_t ahead, int32_t D, int acc)                                    \
    {                                                                                      \
        (void)ahead, (void)D;                                                              \
        pool_fixed_body(out, cols, w, n, N, acc, DT);                                      \
    }
#define POOL_MAX(NAME, DT)                                                                 \
    static void NAME(float *out, const void *const *cols, const float *w, int64_t n,      \
                     int64_t ahead, int32_t D, int acc)                                    \
    {                                                                                      \
        (void)ahead, (void)w;                                                              \
        pool_max_body(out, cols, n, D, acc, DT);                                           \
    }
#define BAGS_MAX(NAME, DT)                                                                 \
    static void NAME(const EmbBagsArgs *a)                                                 \
    {                                                                                      \
        bags_max_body(a, a->D, DT);                                                        \
    }
#define BAGS(NAME, N, DT)                                                                  \
    static void NAME(const EmbBagsArgs *a)                                                 \
    {                                                                                      \
        emb__bags_ref(a, N ? N : a->D, DT, add_row);                                                    \
    }
#define SGD_ROWS(NAME, N, DT)                                                              \
    static void NAME(const EmbRowsArgs *a)                                              \
    {                                                                                      \
        sgd_rows_body(a, N ? N : a->D, DT);                                                \
    }
#define SUMSQ(NAME, DT)                                                                    \
    static float NAME(const void *col, int32_t D)                                          \
    {                                                                                      \
        return sumsq_body(col, D, DT);                                                     \
    }
#define SGD(NAME, N, DT)                                                                   \
    static void NAME(void *col, const float *g, float lr, int32_t D)                       \
    {                                                                                      \
        sgd_body(col, g, lr, N ? N : D, DT);                                               \
    }

GATHER(gather_f32_c, 0, EMB_F32)
GATHER(gather_f16_c, 0, EMB_F16)
GATHER(gather_bf16_c, 0, EMB_BF16)
GATHER(gather_d16_f32_c, 16, EMB_F32)
GATHER(gather_d16_f16_c, 16, EMB_F16)
GATHER(gather_d16_bf16_c, 16, EMB_BF16)
GATHER(gather_d32_f32_c, 32, EMB_F32)
GATHER(gather_d32_f16_c, 32, EMB_F16)
GATHER(gather_d32_bf16_c, 32, EMB_BF16)
GATHER(gather_d64_f32_c, 64, EMB_F32)
GATHER(gather_d64_f16_c, 64, EMB_F16)
GATHER(gather_d64_bf16_c, 64, EMB_BF16)
GATHER(gather_d128_f32_c, 128, EMB_F32)
GATHER(gather_d128_f16_c, 128, EMB_F16)
GATHER(gather_d128_bf16_c, 128, EMB_BF16)
GATHER(gather_d256_f32_c, 256, EMB_F32)
GATHER(gather_d256_f16_c, 256, EMB_F16)
GATHER(gather_d256_bf16_c, 256, EMB_BF16)

POOL(pool_f32_c, EMB_F32)
POOL(pool_f16_c, EMB_F16)
POOL(pool_bf16_c, EMB_BF16)
POOL_D(pool_d16_f32_c, 16, EMB_F32)
POOL_D(pool_d16_f16_c, 16, EMB_F16)
POOL_D(pool_d16_bf16_c, 16, EMB_BF16)
POOL_D(pool_d32_f32_c, 32, EMB_F32)
POOL_D(pool_d32_f16_c, 32, EMB_F16)
POOL_D(pool_d32_bf16_c, 32, EMB_BF16)
POOL_D(pool_d64_f32_c, 64, EMB_F32)
POOL_D(pool_d64_f16_c, 64, EMB_F16)
POOL_D(pool_d64_bf16_c, 64, EMB_BF16)
POOL_D(pool_d128_f32_c, 128, EMB_F32)
POOL_D(pool_d128_f16_c, 128, EMB_F16)
POOL_D(pool_d128_bf16_c, 128, EMB_BF16)
POOL_D(pool_d256_f32_c, 256, EMB_F32)
POOL_D(pool_d256_f16_c, 256, EMB_F16)
POOL_D(pool_d256_bf16_c, 256, EMB_BF16)

POOL_MAX(pool_max_f32_c, EMB_F32)
POOL_MAX(pool_max_f16_c, EMB_F16)
POOL_MAX(pool_max_bf16_c, EMB_BF16)
POOL_MAX(pool_max_int8_c, EMB_INT8)
POOL_MAX(pool_max_int4_c, EMB_INT4)
BAGS_MAX(bags_max_f32_c, EMB_F32)
BAGS_MAX(bags_max_f16_c, EMB_F16)
BAGS_MAX(bags_max_bf16_c, EMB_BF16)
BAGS_MAX(bags_max_int8_c, EMB_INT8)
BAGS_MAX(bags_max_int4_c, EMB_INT4)

BAGS(bags_f32_c, 0, EMB_F32)
BAGS(bags_f16_c, 0, EMB_F16)
BAGS(bags_bf16_c, 0, EMB_BF16)
BAGS(bags_d16_f32_c, 16, EMB_F32)
BAGS(bags_d16_f16_c, 16, EMB_F16)
BAGS(bags_d16_bf16_c, 16, EMB_BF16)
BAGS(bags_d32_f32_c, 32, EMB_F32)
BAGS(bags_d32_f16_c, 32, EMB_F16)
BAGS(bags_d32_bf16_c, 32, EMB_BF16)
BAGS(bags_d64_f32_c, 64, EMB_F32)
BAGS(bags_d128_f32_c, 128, EMB_F32)
BAGS(bags_d256_f32_c, 256, EMB_F32)
BAGS(bags_d64_f16_c, 64, EMB_F16)
BAGS(bags_d128_f16_c, 128, EMB_F16)
BAGS(bags_d256_f16_c, 256, EMB_F16)
BAGS(bags_d64_bf16_c, 64, EMB_BF16)
BAGS(bags_d128_bf16_c, 128, EMB_BF16)
BAGS(bags_d256_bf16_c, 256, EMB_BF16)

SUMSQ(sumsq_f32_c, EMB_F32)
SUMSQ(sumsq_f16_c, EMB_F16)
SUMSQ(sumsq_bf16_c, EMB_BF16)

SGD(sgd_row_f32_c, 0, EMB_F32)
SGD(sgd_row_f16_c, 0, EMB_F16)
SGD(sgd_row_bf16_c, 0, EMB_BF16)
SGD(sgd_row_d16_f32_c, 16, EMB_F32)
SGD(sgd_row_d16_f16_c, 16, EMB_F16)
SGD(sgd_row_d16_bf16_c, 16, EMB_BF16)
SGD(sgd_row_d32_f32_c, 32, EMB_F32)
SGD(sgd_row_d32_f16_c, 32, EMB_F16)
SGD(sgd_row_d32_bf16_c, 32, EMB_BF16)
SGD(sgd_row_d64_f32_c, 64, EMB_F32)
SGD(sgd_row_d64_f16_c, 64, EMB_F16)
SGD(sgd_row_d64_bf16_c, 64, EMB_BF16)
SGD(sgd_row_d128_f32_c, 128, EMB_F32)
SGD(sgd_row_d128_f16_c, 128, EMB_F16)
SGD(sgd_row_d128_bf16_c, 128, EMB_BF16)
SGD(sgd_row_d256_f32_c, 256, EMB_F32)
SGD(sgd_row_d256_f16_c, 256, EMB_F16)
SGD(sgd_row_d256_bf16_c, 256, EMB_BF16)

SGD_ROWS(sgd_rows_f32_c, 0, EMB_F32)
SGD_ROWS(sgd_rows_f16_c, 0, EMB_F16)
SGD_ROWS(sgd_rows_bf16_c, 0, EMB_BF16)
SGD_ROWS(sgd_rows_d16_f32_c, 16, EMB_F32)
SGD_ROWS(sgd_rows_d16_f16_c, 16, EMB_F16)
SGD_ROWS(sgd_rows_d16_bf16_c, 16, EMB_BF16)
SGD_ROWS(sgd_rows_d32_f32_c, 32, EMB_F32)
SGD_ROWS(sgd_rows_d32_f16_c, 32, EMB_F16)
SGD_ROWS(sgd_rows_d32_bf16_c, 32, EMB_BF16)
SGD_ROWS(sgd_rows_d64_f32_c, 64, EMB_F32)
SGD_ROWS(sgd_rows_d64_f16_c, 64, EMB_F16)
SGD_ROWS(sgd_rows_d64_bf16_c, 64, EMB_BF16)
SGD_ROWS(sgd_rows_d128_f32_c, 128, EMB_F32)
SGD_ROWS(sgd_rows_d128_f16_c, 128, EMB_F16)
SGD_ROWS(sgd_rows_d128_bf16_c, 128, EMB_BF16)
SGD_ROWS(sgd_rows_d256_f32_c, 256, EMB_F32)
SGD_ROWS(sgd_rows_d256_f16_c, 256, EMB_F16)
SGD_ROWS(sgd_rows_d256_bf16_c, 256, EMB_BF16)

static uint64_t idmax_c(const void *ids, int64_t n, int id32)
{
    uint64_t m = 0;
    for (int64_t k = 0; k < n; k++) {
        const uint64_t v = id32 ? (uint32_t)((const int32_t *)ids)[k]
                                : (uint64_t)((const int64_t *)ids)[k];
        m = v > m ? v : m;
    }
    return m;
}

static void scale_c(float *x, float s, int32_t D)
{
    for (int32_t i = 0; i < D; i++)
        x[i] *= s;
}

/* The gather kernels and their static-size copies. */
static void init_gather(EmbKernels *k)
{
    k->gather[EMB_F32] = gather_f32_c;
    k->gather[EMB_F16] = gather_f16_c;
    k->gather[EMB_BF16] = gather_bf16_c;
    k->gather_d[0][EMB_F32] = gather_d16_f32_c;
    k->gather_d[0][EMB_F16] = gather_d16_f16_c;
    k->gather_d[0][EMB_BF16] = gather_d16_bf16_c;
    k->gather_d[1][EMB_F32] = gather_d32_f32_c;
    k->gather_d[1][EMB_F16] = gather_d32_f16_c;
    k->gather_d[1][EMB_BF16] = gather_d32_bf16_c;
    k->gather_d[2][EMB_F32] = gather_d64_f32_c;
    k->gather_d[2][EMB_F16] = gather_d64_f16_c;
    k->gather_d[2][EMB_BF16] = gather_d64_bf16_c;
    k->gather_d[3][EMB_F32] = gather_d128_f32_c;
    k->gather_d[3][EMB_F16] = gather_d128_f16_c;
    k->gather_d[3][EMB_BF16] = gather_d128_bf16_c;
    k->gather_d[4][EMB_F32] = gather_d256_f32_c;
    k->gather_d[4][EMB_F16] = gather_d256_f16_c;
    k->gather_d[4][EMB_BF16] = gather_d256_bf16_c;
}

/* The pooling kernels and their static-size copies. */
static void init_pool(EmbKernels *k)
{
    k->pool[EMB_F32] = k->pool_nt[EMB_F32] = pool_f32_c;
    k->pool[EMB_F16] = k->pool_nt[EMB_F16] = pool_f16_c;
    k->pool[EMB_BF16] = k->pool_nt[EMB_BF16] = pool_bf16_c;
    k->pool_d[0][EMB_F32] = pool_d16_f32_c;
    k->pool_d[0][EMB_F16] = pool_d16_f16_c;
    k->pool_d[0][EMB_BF16] = pool_d16_bf16_c;
    k->pool_d[1][EMB_F32] = pool_d32_f32_c;
    k->pool_d[1][EMB_F16] = pool_d32_f16_c;
    k->pool_d[1][EMB_BF16] = pool_d32_bf16_c;
    k->pool_d[2][EMB_F32] = pool_d64_f32_c;
    k->pool_d[2][EMB_F16] = pool_d64_f16_c;
    k->pool_d[2][EMB_BF16] = pool_d64_bf16_c;
    k->pool_d[3][EMB_F32] = pool_d128_f32_c;
    k->pool_d[3][EMB_F16] = pool_d128_f16_c;
    k->pool_d[3][EMB_BF16] = pool_d128_bf16_c;
    k->pool_d[4][EMB_F32] = pool_d256_f32_c;
    k->pool_d[4][EMB_F16] = pool_d256_f16_c;
    k->pool_d[4][EMB_BF16] = pool_d256_bf16_c;
}

/* The MAX pooling and bags kernels (every dtype; no static-size copies in C). */
static void init_pool_max(EmbKernels *k)
{
    k->pool_max[EMB_F32] = pool_max_f32_c;
    k->pool_max[EMB_F16] = pool_max_f16_c;
    k->pool_max[EMB_BF16] = pool_max_bf16_c;
    k->pool_max[EMB_INT8] = pool_max_int8_c;
    k->pool_max[EMB_INT4] = pool_max_int4_c;
    k->bags_max[EMB_F32] = bags_max_f32_c;
    k->bags_max[EMB_F16] = bags_max_f16_c;
    k->bags_max[EMB_BF16] = bags_max_bf16_c;
    k->bags_max[EMB_INT8] = bags_max_int8_c;
    k->bags_max[EMB_INT4] = bags_max_int4_c;
}

/* The multi-bag pooling kernels and their static-size copies. */
static void init_bags(EmbKernels *k)
{
    k->bags[EMB_F32] = bags_f32_c;
    k->bags[EMB_F16] = bags_f16_c;
    k->bags[EMB_BF16] = bags_bf16_c;
    k->bags_d[0][EMB_F32] = bags_d16_f32_c;
    k->bags_d[0][EMB_F16] = bags_d16_f16_c;
    k->bags_d[0][EMB_BF16] = bags_d16_bf16_c;
    k->bags_d[1][EMB_F32] = bags_d32_f32_c;
    k->bags_d[1][EMB_F16] = bags_d32_f16_c;
    k->bags_d[1][EMB_BF16] = bags_d32_bf16_c;
    k->bags_d[2][EMB_F32] = bags_d64_f32_c;
    k->bags_d[3][EMB_F32] = bags_d128_f32_c;
    k->bags_d[4][EMB_F32] = bags_d256_f32_c;
    k->bags_d[2][EMB_F16] = bags_d64_f16_c;
    k->bags_d[3][EMB_F16] = bags_d128_f16_c;
    k->bags_d[4][EMB_F16] = bags_d256_f16_c;
    k->bags_d[2][EMB_BF16] = bags_d64_bf16_c;
    k->bags_d[3][EMB_BF16] = bags_d128_bf16_c;
    k->bags_d[4][EMB_BF16] = bags_d256_bf16_c;
}

/* The SGD kernels (one row, range) and their static-size copies. */
static void init_sgd(EmbKernels *k)
{
    k->sgd_row[EMB_F32] = k->sgd_row_nt[EMB_F32] = sgd_row_f32_c;
    k->sgd_row[EMB_F16] = k->sgd_row_nt[EMB_F16] = sgd_row_f16_c;
    k->sgd_row[EMB_BF16] = k->sgd_row_nt[EMB_BF16] = sgd_row_bf16_c;
    k->sgd_row_d[0][EMB_F32] = sgd_row_d16_f32_c;
    k->sgd_row_d[0][EMB_F16] = sgd_row_d16_f16_c;
    k->sgd_row_d[0][EMB_BF16] = sgd_row_d16_bf16_c;
    k->sgd_row_d[1][EMB_F32] = sgd_row_d32_f32_c;
    k->sgd_row_d[1][EMB_F16] = sgd_row_d32_f16_c;
    k->sgd_row_d[1][EMB_BF16] = sgd_row_d32_bf16_c;
    k->sgd_row_d[2][EMB_F32] = sgd_row_d64_f32_c;
    k->sgd_row_d[2][EMB_F16] = sgd_row_d64_f16_c;
    k->sgd_row_d[2][EMB_BF16] = sgd_row_d64_bf16_c;
    k->sgd_row_d[3][EMB_F32] = sgd_row_d128_f32_c;
    k->sgd_row_d[3][EMB_F16] = sgd_row_d128_f16_c;
    k->sgd_row_d[3][EMB_BF16] = sgd_row_d128_bf16_c;
    k->sgd_row_d[4][EMB_F32] = sgd_row_d256_f32_c;
    k->sgd_row_d[4][EMB_F16] = sgd_row_d256_f16_c;
    k->sgd_row_d[4][EMB_BF16] = sgd_row_d256_bf16_c;

    k->rows[EMB_OPT_SGD][EMB_F32] = sgd_rows_f32_c;
    k->rows[EMB_OPT_SGD][EMB_F16] = sgd_rows_f16_c;
    k->rows[EMB_OPT_SGD][EMB_BF16] = sgd_rows_bf16_c;
    k->rows_d[0][EMB_OPT_SGD][EMB_F32] = sgd_rows_d16_f32_c;
    k->rows_d[0][EMB_OPT_SGD][EMB_F16] = sgd_rows_d16_f16_c;
    k->rows_d[0][EMB_OPT_SGD][EMB_BF16] = sgd_rows_d16_bf16_c;
    k->rows_d[1][EMB_OPT_SGD][EMB_F32] = sgd_rows_d32_f32_c;
    k->rows_d[1][EMB_OPT_SGD][EMB_F16] = sgd_rows_d32_f16_c;
    k->rows_d[1][EMB_OPT_SGD][EMB_BF16] = sgd_rows_d32_bf16_c;
    k->rows_d[2][EMB_OPT_SGD][EMB_F32] = sgd_rows_d64_f32_c;
    k->rows_d[2][EMB_OPT_SGD][EMB_F16] = sgd_rows_d64_f16_c;
    k->rows_d[2][EMB_OPT_SGD][EMB_BF16] = sgd_rows_d64_bf16_c;
    k->rows_d[3][EMB_OPT_SGD][EMB_F32] = sgd_rows_d128_f32_c;
    k->rows_d[3][EMB_OPT_SGD][EMB_F16] = sgd_rows_d128_f16_c;
    k->rows_d[3][EMB_OPT_SGD][EMB_BF16] = sgd_rows_d128_bf16_c;
    k->rows_d[4][EMB_OPT_SGD][EMB_F32] = sgd_rows_d256_f32_c;
    k->rows_d[4][EMB_OPT_SGD][EMB_F16] = sgd_rows_d256_f16_c;
    k->rows_d[4][EMB_OPT_SGD][EMB_BF16] = sgd_rows_d256_bf16_c;
}

/* The C level: every entry (the _nt ones are the plain ones: no streaming stores). */
void emb__kernels_init_c(EmbKernels *k)
{
    memset(k, 0, sizeof *k);
    init_gather(k);
    init_pool(k);
    init_pool_max(k);
    init_bags(k);
    k->sumsq[EMB_F32] = sumsq_f32_c;
    k->sumsq[EMB_F16] = sumsq_f16_c;
    k->sumsq[EMB_BF16] = sumsq_bf16_c;
    k->scale = scale_c;
    k->idmax = idmax_c;
    init_sgd(k);
    emb__kernels_init_optim_c(k);
    emb__kernels_init_quant_c(k);
}
