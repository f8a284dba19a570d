/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * kernels.h — the kernel family: every CPU kernel (gather, pool, scale, sumsq, SGD and the
 * optimizer rows) and the one dispatch table that holds them.
 *
 * emb__kernels() returns the table, filled once at init (dispatch.c): the C references
 * (kernels_c.c, optim_c.c, optim_rows_c.c) first, then the SIMD variants this CPU (and
 * the mask of emb_set_cpu_mask / EMB_CPU_MASK) allows, in ascending ISA order (x86/).
 * Kernels never allocate, never print, never hold OpenMP pragmas. Column pointers point at
 * table storage of the entry's dtype; everything computed is f32.
 *
 * Names: <family>[_d<N>]_<dtype>_<isa>, e.g. pool_d64_f16_avx2 (pool, D = 64, f16 columns,
 * AVX2); the C reference of pool_d64_f16_avx2 is pool_f16_c (pool_d64_f16_c is the C
 * copy for D = 64). Every name appears as written in its file, in its registration and in
 * tests/checkasm.c's list.
 *
 * Static-size variants: `*_d[k]` entries serve featuresize == emb__dclass_size[k]
 * (16, 32, 64, 128, 256); emb__kernel_*() pick them for static tables and for dynamic
 * tables whose featuresize equals a specialised size alike: they give bit-identical
 * results (tests/checkasm.c checks it), so "static" is only a promise about the size,
 * and a dynamic table of D = 64 gets the unrolled code too.
 *
 * Variants (tests/checkasm.c runs each against the C reference, bit for bit):
 *   C        kernels_c.c, optim_c.c  every entry, `_d` for all sizes (constant-size loops)
 *   AVX2     x86/kernels_avx2.c      every entry but FTRL's one-row kernels (f16 ones
 *                                    need F16C); FTRL's range copies: lr_power = -0.5
 *   AVX-512  x86/kernels_avx512.c    F+BW+VL+DQ; as AVX2
 * All of them are exact with the reference: multiply then add (never FMA), bags summed
 * in bag order, sumsq in 16 fixed lanes (element i into lane i % 16, then a tree),
 * conversions rounding to nearest even. AVX512-BF16's vcvtneps2bf16 flushes subnormals,
 * so bf16 stores use integer rounding instead; bf16 loads are a shift.
 */
#ifndef EMB_KERNELS_H
#define EMB_KERNELS_H

#include <math.h>
#include <stdint.h>

#include "batch_rules.h"
#include "config.h"
#include "dtype.h"
#include "internal.h" /* EMB_RESIDENT_BYTES */
#include "embtables/common.h" /* EmbOptimizerKind, EmbCombiner */

#define EMB_NDCLASS 5
#define EMB_NOPT (EMB_OPT_ADAM + 1) /* optimizer kinds: EmbOptimizerKind indexes opt_row */

/*
 * Software prefetch distance of the gather and pool kernels, in columns: while column k
 * is read, every cache line of column k + EMB_PF_DIST is prefetched. Chosen by measuring
 * the cold pooled gather (tests/checkasm --cold 1024, D = 64, 1 GiB) on an AMD EPYC
 * (Zen 4): distances 8, 16, 24 and 32 all reach 7.1 .. 7.6 GB/s on one thread (the roof's
 * 7.5), within the noise of a shared machine; 16 is the roof tool's distance.
 */

#ifndef EMB_PF_DIST
#define EMB_PF_DIST 16
#endif

/*
 * The bags kernel's distance for rows of @row_bytes bytes: EMB_PF_BYTES bytes of rows ahead
 * (f32 D = 64: EMB_PF_DIST rows, as before), at least EMB_PF_DIST and at most EMB_PF_MAX
 * rows; rows shorter than two cache lines EMB_PF_SHORT rows. Short rows need more rows in
 * flight: emb-bench quant --mib 1024 --cpu-time 1 (Zen 4, 1 thread, uniform ids) took int8 /
 * int4 at D = 64 (72 / 36 bytes) from 1.0 .. 1.3x / 0.8 .. 1.1x the f32 rows/s at 16 rows
 * to 1.6 .. 1.8x / 1.3 .. 1.5x at 56 / 64 rows; f32 D = 32 (128 bytes) neutral at 32 rows.
 * On Zen 5 (4 KiB pages: a page walk a row) short rows gained again up to ~100 rows and
 * stayed flat to 160: int8 / int4 D = 64 +10 .. 25% at 128 rows over 56 / 64 (emb-bench quant
 * --mib 1024, 1 and 2 threads; f32 D = 16, 64 bytes, +0 .. 10%); README "Quantized
 * tables".
 */
#ifndef EMB_PF_BYTES
#define EMB_PF_BYTES 4096
#endif
#define EMB_PF_MAX 64    /* rows: the distance's cap (rows of 2 lines or more) */
#ifndef EMB_PF_SHORT
#define EMB_PF_SHORT 128 /* rows: the distance of rows under 128 bytes */
#endif

static inline int64_t emb__pf_rows(int64_t row_bytes)
{
    if (row_bytes > 0 && row_bytes < 128)
        return EMB_PF_SHORT;
    const int64_t r = row_bytes > 0 ? EMB_PF_BYTES / row_bytes : EMB_PF_DIST;
    return r < EMB_PF_DIST ? EMB_PF_DIST : r > EMB_PF_MAX ? EMB_PF_MAX : r;
}

/* out + i*out_stride = column cols[i] (converted to f32), for i in [0, n). */
typedef void (*emb_gather_fn)(float *out, int64_t out_stride, const void *const *cols,
                              int64_t n, int32_t D);

/*
 * out (+)= Σ_{k<n} w[k] * cols[k] in order k = 0, 1, ... (w NULL: every weight 1).
 * accumulate == 0: out is overwritten (n == 0 gives zeros). cols[n .. n + ahead) are the
 * columns needed next: a kernel may prefetch them, never dereference them. ahead < 0: the
 * caller knows the columns are cache-resident (a table of at most EMB_RESIDENT_BYTES):
 * no prefetch at all, which saves a prefetch per cache line of every column.
 */
typedef void (*emb_pool_fn)(float *out, const void *const *cols, const float *w, int64_t n,
                            int64_t ahead, int32_t D, int accumulate);

/*
 * The MAX pooling kernels have emb_pool_fn's type (w is ignored: MAX takes no weights):
 * out = the element-wise max of cols[0 .. n) in order, acc = x > acc ? x : acc from the
 * first column (accumulate: from out); n == 0 without accumulate gives zeros. A quantized
 * element is fma(q, scale, bias). kernels_c.c's pool_max_body is the definition.
 */

/* Element @i of a row as the MAX kernels compare it: its f32 value; a quantized one
 * fma(q, s, b), with @s, @b the row's emb__q_params (ignored for the other dtypes). The
 * backward's routing (update/pullback.c) compares the same values the same way. */
static inline float emb__max_elem(EmbDtype dt, const void *row, int32_t i, float s, float b)
{
    return emb__dtype_quantized(dt) ? fmaf((float)emb__q_get(dt, row, i), s, b)
                                    : emb__load(dt, row, i);
}

/*
 * A range of bags of a simple table pooled in one call: the lookup's per-id path with no
 * array of column pointers and no call per bag. Bag b covers ids [start(b), end(b)):
 * offsets[b] .. offsets[b + 1], or b * bag_size .. (b + 1) * bag_size when offsets is
 * NULL. Each id is read at its width (id32: int32, else int64) and must be in range (the
 * caller validated the batch; nothing is pruned). The bag's sum, in bag order from zero
 * (each column weighted when weights is non-NULL: acc + w[k] * x), is kept in registers and
 * written once to out + b * out_stride, after the combiner's factor (emb__combiner_factor):
 * exactly the pool kernel with accumulate 0 followed by the scale kernel. An empty bag
 * gives its default column (defcol, weight 1) or zeros. pf_dist > 0: the column of id
 * k + pf_dist (within the range) is prefetched while id k is pooled; 0: none.
 */
typedef struct EmbBagsArgs {
    float *out;
    int64_t out_stride;
    const char *data;       /* column c at data + c * col_stride (bytes) */
    int64_t col_stride;
    const void *ids;
    const int64_t *offsets; /* nbags + 1 bounds, or NULL: fixed bag_size */
    int64_t bag_size;
    const float *weights;   /* per id, or NULL */
    const void *defcol;     /* an empty bag's column, or NULL: zeros */
    int64_t bag0, bag1;
    int64_t pf_dist;
    int32_t D;
    int id32;
    int combiner;           /* EmbCombiner: MEAN and SQRTN scale, others do not */
} EmbBagsArgs;
typedef void (*emb_bags_fn)(const EmbBagsArgs *a);

/* The factor a finished bag is scaled by: 1 (SUM, NONE), 1/Σw (MEAN), 1/sqrt(Σw²) (SQRTN);
 * 0 when the denominator is 0 (weights that cancel give zeros, never NaN). */
static inline float emb__combiner_factor(int combiner, double sum_w, double sum_w2)
{
    return emb_rule_combiner_factor(combiner, sum_w, sum_w2); /* batch_rules.h */
}

/*
 * The largest of @n ids as an unsigned number: int64 ids (id32 == 0) as uint64, int32 ids
 * as uint32, so that a negative id is larger than every valid one; 0 when n == 0. The
 * batch check compares it with the table's size (one vector max per 8 or 16 ids).
 */
typedef uint64_t (*emb_idmax_fn)(const void *ids, int64_t n, int id32);

/* x[0..D) *= s */
typedef void (*emb_scale_fn)(float *x, float s, int32_t D);

/* Σ col[i]² in f32 (for max_norm): s[i % 16] += col[i]², then emb__sumsq_lanes(s). */
typedef float (*emb_sumsq_fn)(const void *col, int32_t D);

/* col[i] -= lr * g[i], written back in the column's dtype (round to nearest even). */
typedef void (*emb_sgd_row_fn)(void *col, const float *g, float lr, int32_t D);


/* Per-step hyper-parameters of an optimizer row kernel. */
typedef struct EmbOptimParams {
    float lr, eps;
    float lr_power, l1, l2;     /* FTRL */
    float beta1, beta2;         /* Adam */
    float step_size;            /* Adam: lr · sqrt(1 - beta2^t) / (1 - beta1^t) */
} EmbOptimParams;

/*
 * One optimizer step on one column with its accumulated gradient g (f32) and its f32 state
 * row: the column is read once and written once in its dtype (round to nearest even).
 * Formulas (elementwise; see update.h):
 *   ADAGRAD          state = h[D]:            h += g²; w -= lr·(g / (sqrt(h) + eps))
 *   ROWWISE_ADAGRAD  state = h[1]:            h += mean(g²); w -= (lr / (sqrt(h) + eps))·g
 *   FTRL             state = [accum D | linear D]   (TF ApplyFtrl)
 *   ADAM             state = [m D | v D]            (PyTorch SparseAdam, step_size given)
 * mean(g²) is summed in 8 interleaved lanes (lane i % 8) combined as
 * ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)), the order an 8-wide SIMD variant reproduces.
 */
typedef void (*emb_opt_row_fn)(void *col, float *state, const float *g,
                               const EmbOptimParams *p, int32_t D);

/*
 * An optimizer on a range of distinct columns of a plain table in one call: the apply's
 * common case with no call per column. Column d (d0 <= d < d1) is ids[d] (at data + ids[d]
 * * col_stride bytes; its state row at state + ids[d] * state_stride); its gradient rows
 * are grow[p] with coefficients gcoef[p] for p in [starts[d], starts[d + 1]). Its gradient
 * is its one row when there is one with coefficient 1, else the rows' sum from zeros in row
 * order (acc + gcoef[p] * row): exactly the pool kernel (accumulate 0); then the row kernel
 * of the optimizer: SGD col -= lr * g (sgd_row), the others their opt_row with params; clip non-NULL: the gradient clipped first
 * (EmbRowsClip). pf_dist > 0: the column (and state row) pf_dist ahead (within the range)
 * is prefetched into L2 while column d is updated.
 */
/*
 * Gradient clipping inside a range kernel (EmbRowsArgs.clip; NULL: none): clip.c's steps on
 * each column's gradient g, in this order: value > 0: each element clamped to [-value,
 * value] (x > value ? value : x, then x < -value ? -value : x: NaN stays NaN); norm > 0:
 * when sqrt(Σ g²) (emb__sumsq8's 8 lanes) > norm, g * (norm / sqrt(Σ g²)); scale != 1:
 * g * scale (the global norm's factor). The optimizer then steps with that g.
 */
typedef struct EmbRowsClip {
    float value, norm, scale;
} EmbRowsClip;

/* A row-wise Adagrad range's rate (EmbRowsArgs.rate; NULL: h += Σ g² / D, then lr / (sqrt(h)
 * + eps)): the column's step factor from its state row @state (updated) and the Σ g² of its
 * gradient (8 lanes); the counter optimizer's (update/counter.c), @ctx its plan. */
typedef float (*emb_rows_rate_fn)(const void *ctx, float *state, float sumsq);

typedef struct EmbRowsArgs {
    char *data;
    int64_t col_stride;
    char *state;             /* f32 state rows, or NULL (SGD) */
    int64_t state_stride;
    const int64_t *ids, *starts;
    const void *const *grow; /* f32 rows (void, as the pool kernel takes them) */
    const float *gcoef;
    int64_t d0, d1, pf_dist;
    float lr;                /* SGD */
    const EmbOptimParams *params;
    const EmbRowsClip *clip; /* NULL: none */
    emb_rows_rate_fn rate;   /* row-wise Adagrad's rate, or NULL */
    const void *rate_ctx;
    int32_t D;
} EmbRowsArgs;
typedef void (*emb_rows_fn)(const EmbRowsArgs *a);

/* Σ g² of a row in the 8-lane order the kernels use (row-wise Adagrad's, clipping's). */
static inline float emb__sumsq8(const float *g, int32_t D)
{
    float l[8] = {0};
    int32_t i = 0;
    for (; i + 8 <= D; i += 8)
        for (int j = 0; j < 8; j++)
            l[j] = l[j] + g[i + j] * g[i + j];
    for (int j = 0; i + j < D; j++)
        l[j] = l[j] + g[i + j] * g[i + j];
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

/* Element @i of distinct column @d's gradient (EmbRowsArgs), as the C references read it:
 * its one row's when its coefficient is 1, else the sum from zero in row order. */
static inline float emb__rows_grad(const EmbRowsArgs *a, int64_t d, int32_t i)
{
    const int64_t p0 = a->starts[d], p1 = a->starts[d + 1];
    if (p1 - p0 == 1 && a->gcoef[p0] == 1.0f)
        return ((const float *)a->grow[p0])[i];
    float g = 0.0f;
    for (int64_t p = p0; p < p1; p++)
        g = g + a->gcoef[p] * ((const float *)a->grow[p])[i];
    return g;
}

/* @x clamped to [-m, m] (EmbRowsClip's order: NaN stays NaN). */
static inline float emb__clamp(float x, float m)
{
    x = x > m ? m : x;
    return x < -m ? -m : x;
}

/* Element @i of column @d's gradient clamped (EmbRowsClip.value > 0), as the C references
 * read it. */
static inline float emb__rows_grad_clamped(const EmbRowsArgs *a, int64_t d, int32_t i)
{
    const float g = emb__rows_grad(a, d, i);
    return a->clip && a->clip->value > 0.0f ? emb__clamp(g, a->clip->value) : g;
}

/* Column @d's row-norm factor (EmbRowsClip.norm): norm / sqrt(Σ g²) of its clamped
 * gradient when that root exceeds norm, else 1 (no multiply). */
static inline float emb__rows_clip_factor(const EmbRowsArgs *a, int64_t d, int32_t D)
{
    if (!a->clip || !(a->clip->norm > 0.0f))
        return 1.0f;
    float l[8] = {0};
    for (int32_t i = 0; i < D; i++) {
        const float g = emb__rows_grad_clamped(a, d, i);
        l[i % 8] = l[i % 8] + g * g;
    }
    const float n = sqrtf(((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7])));
    return n > a->clip->norm ? a->clip->norm / n : 1.0f;
}

/* Element @i of column @d's clipped gradient (EmbRowsClip), @rs its row-norm factor. */
static inline float emb__rows_grad_clip(const EmbRowsArgs *a, int64_t d, int32_t i, float rs)
{
    float g = emb__rows_grad_clamped(a, d, i);
    if (rs != 1.0f)
        g = g * rs;
    if (a->clip && a->clip->scale != 1.0f)
        g = g * a->clip->scale;
    return g;
}

/* The row of @dt (EMB_INT8 / EMB_INT4) quantized from x[0 .. D) with stochastic rounding
 * keyed by @key = {seed, stream, step}: the update's re-quantization (requant.h; dtype.h's
 * emb__row_quantize says what the row becomes). */
typedef void (*emb_requant_fn)(void *row, int32_t D, const float *x, const uint64_t *key);

typedef struct EmbKernels {
    emb_gather_fn gather[EMB_NDTYPES];
    emb_pool_fn pool[EMB_NDTYPES];
    emb_pool_fn pool_nt[EMB_NDTYPES]; /* output written with non-temporal stores */
    emb_pool_fn pool_max[EMB_NDTYPES]; /* MAX pooling, every dtype */
    emb_scale_fn scale;
    emb_idmax_fn idmax;
    emb_sumsq_fn sumsq[EMB_NDTYPES];
    emb_sgd_row_fn sgd_row[EMB_NDTYPES];
    emb_sgd_row_fn sgd_row_nt[EMB_NDTYPES]; /* column written with non-temporal stores;
                                               the caller issues one emb__sfence() */
    /* static-size variants (NULL where none): [size class][dtype] */
    emb_gather_fn gather_d[EMB_NDCLASS][EMB_NDTYPES];
    emb_pool_fn pool_d[EMB_NDCLASS][EMB_NDTYPES];
    emb_pool_fn pool_max_d[EMB_NDCLASS][EMB_NDTYPES]; /* SIMD levels only (C: pool_max) */
    emb_sgd_row_fn sgd_row_d[EMB_NDCLASS][EMB_NDTYPES];
    /* bags of a simple table (EmbBagsArgs): bags[dt] the C reference for any D, bags_d the
     * copies for the five static sizes (the lookup uses only these) */
    emb_bags_fn bags[EMB_NDTYPES];
    emb_bags_fn bags_d[EMB_NDCLASS][EMB_NDTYPES];
    /* MAX bags (EmbBagsArgs without weights; combiner ignored): each bag the pool_max of
     * its rows, an empty bag its default column or zeros. bags_max[dt] the C reference,
     * bags_max_d the SIMD copies at the static sizes (the lookup uses only these) */
    emb_bags_fn bags_max[EMB_NDTYPES];
    emb_bags_fn bags_max_d[EMB_NDCLASS][EMB_NDTYPES];
    /* optimizer rows: [EmbOptimizerKind][dtype]; [EMB_OPT_SGD] stays NULL (SGD has no
     * state and static sizes: sgd_row) */
    emb_opt_row_fn opt_row[EMB_NOPT][EMB_NDTYPES];
    emb_opt_row_fn opt_row_nt[EMB_NOPT][EMB_NDTYPES]; /* column written non-temporally */
    /* optimizer rows at the static sizes: [size class][EmbOptimizerKind][dtype] */
    emb_opt_row_fn opt_row_d[EMB_NDCLASS][EMB_NOPT][EMB_NDTYPES];
    /* an optimizer on a range of distinct columns (EmbRowsArgs): rows[kind][dt] the C
     * reference for any D, rows_d the copies for the static sizes (the apply uses only
     * these); every optimizer (FTRL's SIMD copies: lr_power = -0.5 only) */
    emb_rows_fn rows[EMB_NOPT][EMB_NDTYPES];
    emb_rows_fn rows_d[EMB_NDCLASS][EMB_NOPT][EMB_NDTYPES];
    /* re-quantization of a quantized dtype's row (NULL for the others) */
    emb_requant_fn requant[EMB_NDTYPES];
} EmbKernels;

extern const int emb__dclass_size[EMB_NDCLASS];

/* The dispatch table (initialised on first use; re-filled by emb_set_cpu_mask). */
const EmbKernels *emb__kernels(void);

/* Size class of D (index into *_d) or -1. */
static inline int emb__dclass(int32_t D)
{
    switch (D) {
    case 16: return 0;
    case 32: return 1;
    case 64: return 2;
    case 128: return 3;
    case 256: return 4;
    default: return -1;
    }
}

/* The reduction that ends every sumsq kernel: 16 lane sums added as a fixed tree. */
static inline float emb__sumsq_lanes(float s[16])
{
    for (int h = 8; h >= 1; h /= 2)
        for (int i = 0; i < h; i++)
            s[i] = s[i] + s[i + h];
    return s[0];
}

/* The best gather / pool / sgd kernel for (dtype, D). */
emb_gather_fn emb__kernel_gather(EmbDtype dt, int32_t D);
emb_pool_fn emb__kernel_pool(EmbDtype dt, int32_t D, int nontemporal);
emb_pool_fn emb__kernel_pool_max(EmbDtype dt, int32_t D);
emb_sgd_row_fn emb__kernel_sgd_row(EmbDtype dt, int32_t D, int nontemporal);
/* The bags kernel for (dt, D), or NULL when D has no copy (the lookup then pools by bag). */
emb_bags_fn emb__kernel_bags(EmbDtype dt, int32_t D);
/* The MAX bags kernel for (dt, D), or NULL (the lookup then takes its generic path). */
emb_bags_fn emb__kernel_bags_max(EmbDtype dt, int32_t D);
/* The range kernel of @kind for (dt, D), or NULL when D has no copy (FTRL's SIMD copies
 * take lr_power = -0.5 only: emb__plan_optimizer checks). */
emb_rows_fn emb__kernel_rows(EmbOptimizerKind kind, EmbDtype dt, int32_t D);
/* The optimizer row kernel of @kind (not EMB_OPT_SGD) for (@dt, @D). */
emb_opt_row_fn emb__kernel_opt_row(EmbOptimizerKind kind, EmbDtype dt, int32_t D,
                                   int nontemporal);

/* A store fence after non-temporal stores (no-op where there are none). */
void emb__sfence(void);

/* C references: fill every entry of @k (kernels_c.c calls optim_c.c's part, which calls
   optim_rows_c.c's). */
void emb__kernels_init_c(EmbKernels *k);
void emb__kernels_init_optim_c(EmbKernels *k);
void emb__kernels_init_optim_rows_c(EmbKernels *k); /* optim_rows_c.c: the range kernels */
void emb__kernels_init_quant_c(EmbKernels *k); /* quant_c.c: the EMB_INT8 / EMB_INT4 rows */
#if EMB_HAVE_X86_KERNELS
/* x86 variants (dispatch.c): override entries for the ISAs in @flags, in ascending order. */
void emb__kernels_init_x86(EmbKernels *k, unsigned flags);
/* One ISA each (x86/kernels_avx2.c, x86/kernels_avx512.c), compiled with its flags. */
void emb__kernels_init_avx2(EmbKernels *k, unsigned flags);
void emb__kernels_init_avx512(EmbKernels *k, unsigned flags);
/* The quantized rows' entries of each ISA (x86/quant_body.h, stamped in the ISA files). */
void emb__kernels_init_quant_avx2(EmbKernels *k);
void emb__kernels_init_quant_avx512(EmbKernels *k);
#endif

#endif
