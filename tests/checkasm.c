/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * checkasm.c — the kernel checker (dav1d's checkasm habit): every kernel family of every
 * dispatch level this CPU has (C, AVX2, AVX-512), generic and static-size entries, run on
 * seeded random input against the C reference and compared bit for bit, with outputs
 * poisoned including PAD elements past the vector.
 *
 *   checkasm [--seed N]               check (the seed is printed; --seed N replays it)
 *   checkasm --bench [--seed N]       time every level against C (see checkasm_bench.c)
 *   checkasm --cold MiB               cold pooled gather through emb_lookup, 1 and 2 threads
 *
 * Every comparison is exact: the SIMD kernels claim bit-identical results (kernels.h).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checkasm.h"
#include "dtype.h"

#define PAD 32     /* elements past every output that must stay poisoned */
#define NCOLS 24   /* distinct columns the bags draw from */
#define AHEAD 3    /* columns after a bag handed to the pool kernels to prefetch */
#define MAXD 512
#define MAXLEN 20

static const int32_t dims[] = {1, 3, 8, 15, 16, 17, 31, 32, 33, 64, 65, 100, 128, 256, 257, 512};
static const int64_t lens[] = {0, 1, 2, 7, 20};

static int failures, reported;
static long checks;

/* What one comparison is about, for the failure message. */
typedef struct Ctx {
    const char *level, *family, *variant;
    int dt;
    int32_t D;
    int64_t n;
} Ctx;

static void report(const Ctx *c, const char *what, size_t at)
{
    failures++;
    if (reported++ < 20)
        fprintf(stderr, "FAIL %s %s%s %s D=%d n=%lld: %s (element %zu)\n", c->level, c->family,
                c->variant, ca_dtype_name(c->dt), c->D, (long long)c->n, what, at);
}

/* Compares two buffers of @n elements of @esize bytes, reporting the first difference. */
static void expect_same(const Ctx *c, const void *ref, const void *got, size_t n, size_t esize)
{
    checks++;
    const unsigned char *a = ref, *b = got;
    for (size_t i = 0; i < n; i++)
        if (memcmp(a + i * esize, b + i * esize, esize)) {
            report(c, "differs from the C reference", i);
            return;
        }
}

/* ---- levels and data ------------------------------------------------------------------ */

void ca_levels_init(Level levels[NLEVELS])
{
    static const char *names[NLEVELS] = {"c", "avx2", "avx512"};
    static const unsigned need[NLEVELS] = {
        0, EMB_CPU_AVX2 | EMB_CPU_F16C,
        EMB_CPU_AVX2 | EMB_CPU_F16C | EMB_CPU_AVX512 | EMB_CPU_AVX512BF16};
    const unsigned have = emb_cpu_detected();
    for (int l = 0; l < NLEVELS; l++) {
        Level *v = &levels[l];
        v->name = names[l];
        v->flags = need[l] & have;
        v->available = l == LEVEL_C || ((need[l] & ~EMB_CPU_AVX512BF16 & ~have) == 0 &&
                                         EMB_HAVE_X86_KERNELS);
        emb__kernels_init_c(&v->k);
#if EMB_HAVE_X86_KERNELS
        if (v->available)
            emb__kernels_init_x86(&v->k, v->flags);
#endif
    }
}

float ca_value(uint64_t *s)
{
    float x = tu_randf(s) * ldexpf(1.0f, -(int)(tu_rand(s) % 28));
    if (tu_rand(s) % 64 == 0)
        x *= 0x1p-120f; /* f32 values whose bf16 rounding meets subnormals */
    return x;
}

void ca_set(void *p, EmbDtype dt, int64_t i, float x)
{
    if (dt == EMB_F32)
        ((float *)p)[i] = x;
    else if (dt == EMB_F16)
        ((uint16_t *)p)[i] = emb__f32_to_f16(x);
    else
        ((uint16_t *)p)[i] = emb__f32_to_bf16(x);
}

void ca_fill(void *p, EmbDtype dt, int64_t n, uint64_t *s)
{
    for (int64_t i = 0; i < n; i++)
        ca_set(p, dt, i, ca_value(s));
}

void ca_fill_rows(void *p, EmbDtype dt, int32_t D, int64_t nrows, int64_t stride, uint64_t *s)
{
    unsigned char *b = p;
    for (int64_t r = 0; r < nrows; r++) {
        unsigned char *row = b + r * stride;
        for (int64_t i = 0; i < stride; i++)
            row[i] = (unsigned char)tu_rand(s);
        const float scale = ca_value(s), bias = ca_value(s);
        emb__q_store_grid(dt, row, D, scale, bias);
    }
}

static void poison_bytes(void *p, size_t bytes)
{
    memset(p, 0xa5, bytes);
}

/* ---- the data of one (D, dtype) ------------------------------------------------------- */

typedef struct Data {
    int dt;
    int32_t D;
    size_t esize;                         /* bytes per element (quantized: 1) */
    size_t colbytes;                      /* column stride: D + 3 elements, or a quantized
                                             row and 3 bytes (misaligned) */
    unsigned char *store;                 /* NCOLS columns, stride D + 3, misaligned */
    const void *cols[MAXLEN + AHEAD];     /* a bag's columns, then AHEAD more */
    float w[MAXLEN];
    float *out_ref, *out_got;             /* MAXLEN * (MAXD + 3) + PAD floats, aligned */
} Data;

static void data_bag(Data *d, uint64_t *s)
{
    const size_t stride = d->colbytes;
    const size_t skew = (tu_rand(s) % 4) * d->esize * !emb__dtype_quantized((EmbDtype)d->dt);
    for (int k = 0; k < MAXLEN + AHEAD; k++)
        d->cols[k] = d->store + skew + (tu_rand(s) % NCOLS) * stride;
    for (int k = 0; k < MAXLEN; k++)
        d->w[k] = tu_randf(s);
}

/* Both outputs poisoned; with @prefill their first D elements get the same values. */
static void data_outputs(Data *d, size_t n, int prefill, uint64_t *s)
{
    tu_poison(d->out_ref, n);
    if (prefill)
        for (int32_t i = 0; i < d->D; i++)
            d->out_ref[i] = ca_value(s);
    memcpy(d->out_got, d->out_ref, n * sizeof(float));
}

/* ---- the families ---------------------------------------------------------------------- */

static void check_gather(Ctx *c, Data *d, emb_gather_fn ref, emb_gather_fn got, uint64_t *s)
{
    if (!got)
        return;
    const int64_t stride = d->D + 3;
    const size_t total = (size_t)(c->n * stride + PAD);
    data_outputs(d, total, 0, s);
    ref(d->out_ref, stride, d->cols, c->n, d->D);
    got(d->out_got, stride, d->cols, c->n, d->D);
    expect_same(c, d->out_ref, d->out_got, total, sizeof(float));
}

static void check_pool(Ctx *c, Data *d, emb_pool_fn ref, emb_pool_fn got, uint64_t *s)
{
    if (!got)
        return;
    const size_t total = (size_t)d->D + PAD;
    for (int weighted = 0; weighted < 2; weighted++)
        for (int acc = 0; acc < 2; acc++) {
            const float *w = weighted ? d->w : NULL;
            data_outputs(d, total, acc, s);
            const int64_t ahead = acc ? -1 : AHEAD; /* -1: no prefetch */
            ref(d->out_ref, d->cols, w, c->n, ahead, d->D, acc);
            got(d->out_got, d->cols, w, c->n, ahead, d->D, acc);
            expect_same(c, d->out_ref, d->out_got, total, sizeof(float));
        }
}

/* MAX pooling, accumulating or not (no weights: MAX takes none); with ties, since the bag's
 * columns are drawn from NCOLS and repeat, and equal values must keep the first. */
static void check_pool_max(Ctx *c, Data *d, emb_pool_fn ref, emb_pool_fn got, uint64_t *s)
{
    if (!got)
        return;
    const size_t total = (size_t)d->D + PAD;
    for (int acc = 0; acc < 2; acc++) {
        data_outputs(d, total, acc, s);
        const int64_t ahead = acc ? -1 : AHEAD;
        ref(d->out_ref, d->cols, NULL, c->n, ahead, d->D, acc);
        got(d->out_got, d->cols, NULL, c->n, ahead, d->D, acc);
        expect_same(c, d->out_ref, d->out_got, total, sizeof(float));
    }
}

/*
 * bags over NB bags drawn from the column store: lengths from lens (0 and 20 included),
 * ids of either width, with and without weights, offsets or a fixed bag size, each
 * combiner, a default column or none, prefetch or none; output rows of stride D + 3 with
 * the gaps and PAD elements past the last row poisoned. @max: the MAX bags (no weights).
 */
#define NB 6
static void check_bags(Ctx *c, Data *d, emb_bags_fn ref, emb_bags_fn got, int max,
                       uint64_t *s)
{
    if (!got)
        return;
    int64_t ids64[NB * MAXLEN], offs[NB + 1] = {0};
    int32_t ids32[NB * MAXLEN];
    float w[NB * MAXLEN];
    for (int b = 0; b < NB; b++)
        offs[b + 1] = offs[b] + lens[tu_rand(s) % (sizeof lens / sizeof *lens)];
    for (int64_t k = 0; k < NB * MAXLEN; k++) {
        ids32[k] = (int32_t)(ids64[k] = (int64_t)(tu_rand(s) % NCOLS));
        w[k] = tu_randf(s);
    }
    const int64_t stride = d->D + 3;
    const size_t total = (size_t)(NB * stride + PAD);
    const size_t skew = (tu_rand(s) % 4) * d->esize * !emb__dtype_quantized((EmbDtype)d->dt);
    for (int v = 0; v < 48; v++) {
        const int fixed = v & 1, id32 = (v >> 1) & 1, weighted = !max && ((v >> 2) & 1);
        const int def = (v >> 3) & 1, comb = max ? EMB_COMBINER_MAX : EMB_COMBINER_SUM + (v >> 4);
        EmbBagsArgs a = {
            .out_stride = stride, .data = (const char *)d->store + skew,
            .col_stride = (int64_t)d->colbytes,
            .ids = id32 ? (const void *)ids32 : (const void *)ids64,
            .offsets = fixed ? NULL : offs, .bag_size = lens[v % 5],
            .weights = weighted ? w : NULL,
            .defcol = def ? (const char *)d->store + skew + 5 * d->colbytes : NULL,
            .bag0 = v % 3 == 0, .bag1 = NB, .pf_dist = (v % 3) * 2,
            .D = d->D, .id32 = id32, .combiner = comb,
        };
        c->n = fixed ? a.bag_size : -1;
        data_outputs(d, total, 0, s);
        a.out = d->out_ref;
        ref(&a);
        a.out = d->out_got;
        got(&a);
        expect_same(c, d->out_ref, d->out_got, total, sizeof(float));
    }
}

/* idmax over ids of both widths, n = 0 .. 40 and 257 (tails), some negative, some large. */
static void check_idmax(Ctx *c, emb_idmax_fn ref, emb_idmax_fn got, uint64_t *s)
{
    int64_t i64[257];
    int32_t i32[257];
    for (int n = 0; n <= 41; n++) {
        const int len = n == 41 ? 257 : n;
        for (int k = 0; k < len; k++) {
            const uint64_t r = tu_rand(s);
            i64[k] = r % 8 == 0 ? (int64_t)r : (int64_t)(r % 1000);
            i32[k] = r % 8 == 0 ? (int32_t)(uint32_t)r : (int32_t)(r % 1000);
        }
        c->n = len;
        for (int id32 = 0; id32 < 2; id32++) {
            const void *ids = id32 ? (const void *)i32 : (const void *)i64;
            const uint64_t a = ref(ids, len, id32), b = got(ids, len, id32);
            expect_same(c, &a, &b, 1, sizeof a);
        }
    }
}

/* sgd_row on a column (aligned or not) followed by PAD poisoned elements. */
static void check_sgd(Ctx *c, Data *d, emb_sgd_row_fn ref, emb_sgd_row_fn got, uint64_t *s)
{
    if (!got)
        return;
    const size_t bytes = ((size_t)d->D + PAD) * d->esize, skew = (tu_rand(s) % 2) * d->esize;
    unsigned char *a = (unsigned char *)d->out_ref + skew, *b = (unsigned char *)d->out_got + skew;
    float g[MAXD];
    poison_bytes(a, bytes);
    ca_fill(a, d->dt, d->D, s);
    memcpy(b, a, bytes);
    for (int32_t i = 0; i < d->D; i++)
        g[i] = ca_value(s);
    const float lr = tu_randf(s);
    ref(a, g, lr, d->D);
    got(b, g, lr, d->D);
    emb__sfence();
    expect_same(c, a, b, bytes, 1);
}

/* The range in @x applied column by column as emb__plan_apply
 * does without a range kernel: the pool (accumulate 0) unless one row of coefficient 1,
 * clipped as clip.c (x->clip), then the SGD row (@kind SGD) or @kind's optimizer row, all C references. */
static void rows_by_column(const EmbKernels *r, EmbOptimizerKind kind, const EmbRowsArgs *x,
                           EmbDtype dt)
{
    float acc[MAXD];
    for (int64_t d = x->d0; d < x->d1; d++) {
        const int64_t p0 = x->starts[d], p1 = x->starts[d + 1];
        const float *g = acc;
        if (p1 - p0 == 1 && x->gcoef[p0] == 1.0f)
            g = x->grow[p0];
        else
            r->pool[EMB_F32](acc, x->grow + p0, x->gcoef + p0, p1 - p0, 0, x->D, 0);
        if (x->clip) { /* clip.c's steps: clamp, row norm, global factor */
            const EmbRowsClip *k = x->clip;
            for (int32_t i = 0; i < x->D; i++)
                acc[i] = k->value > 0.0f ? emb__clamp(g[i], k->value) : g[i];
            const float n = sqrtf(emb__sumsq8(acc, x->D));
            for (int32_t i = 0; i < x->D; i++) {
                if (k->norm > 0.0f && n > k->norm)
                    acc[i] = acc[i] * (k->norm / n);
                if (k->scale != 1.0f)
                    acc[i] = acc[i] * k->scale;
            }
            g = acc;
        }
        char *col = x->data + x->ids[d] * x->col_stride;
        if (kind == EMB_OPT_SGD)
            r->sgd_row[dt](col, g, x->lr, x->D);
        else
            r->opt_row[kind][dt](col, (float *)(x->state + x->ids[d] * x->state_stride), g,
                                 x->params, x->D);
    }
}

/* A row-wise Adagrad range's rate hook (emb_rows_rate_fn), as the counter optimizer's: the
 * state row's h and a count updated, the rate from both. */
static float test_rate(const void *ctx, float *s, float sumsq)
{
    const float lr = *(const float *)ctx;
    s[0] = s[0] + sumsq / 3.0f;
    s[1] = s[1] + 1.0f;
    return lr / (sqrtf(s[0]) + sqrtf(s[1]));
}

/* A range kernel (rows[kind]) over NC distinct columns of a strided region (padding
 * between columns poisoned) and their state rows (positive accumulators),
 * each column with 1 .. 3 gradient rows whose coefficients are often 1. */
static void check_rows(Ctx *c, Data *d, const EmbKernels *r, EmbOptimizerKind kind,
                       emb_rows_fn got, uint64_t *s)
{
    const emb_rows_fn ref = r->rows[kind][d->dt];
    enum { NC = 12, NR = 3 * NC };
    static float rows[NR][MAXD];
    const int64_t cs = ((int64_t)d->D + 3) * d->esize, nel = NC * ((int64_t)d->D + 3);
    unsigned char *a = (unsigned char *)d->out_ref, *b = (unsigned char *)d->out_got;
    static float ha[NC * 2 * MAXD], hb[NC * 2 * MAXD], ho[NC * 2 * MAXD];
    const int64_t sw = kind == EMB_OPT_ROWWISE_ADAGRAD ? 2 : 2 * (int64_t)d->D; /* per column */
    int64_t ids[NC], starts[NC + 1] = {0};
    const void *grow[NR];
    float gcoef[NR];
    poison_bytes(a, (size_t)(NC * cs));
    ca_fill(a, d->dt, nel, s);
    memcpy(b, a, (size_t)(NC * cs));
    for (int64_t k = 0; k < NC * sw; k++) /* accumulators (h, Adam's m and v) positive, */
        ha[k] = hb[k] = kind == EMB_OPT_FTRL && k % sw >= d->D /* FTRL's linear any sign */
                            ? ca_value(s) : fabsf(ca_value(s)) + 0.1f;
    for (int k = 0; k < NC; k++) {
        ids[k] = (k * 5 + 3) % NC; /* distinct, out of order */
        const int64_t n = 1 + (int64_t)(tu_rand(s) % NR / NC);
        starts[k + 1] = starts[k] + n;
    }
    for (int64_t p = 0; p < starts[NC]; p++) {
        for (int32_t i = 0; i < d->D; i++)
            rows[p][i] = ca_value(s);
        grow[p] = rows[(p * 7) % starts[NC]];
        gcoef[p] = tu_rand(s) % 2 ? 1.0f : tu_randf(s);
    }
    const EmbOptimParams prm = {.lr = 0.01f + fabsf(tu_randf(s)),
                                .eps = tu_rand(s) % 2 ? 1e-8f : 1e-10f, .beta1 = 0.9f,
                                .beta2 = 0.999f, .step_size = fabsf(tu_randf(s)),
                                /* FTRL's SIMD copies: lr_power -0.5 only; l1 cuts some */
                                .lr_power = -0.5f, .l1 = tu_rand(s) % 2 ? 0.01f : 0.5f,
                                .l2 = 0.002f};
    static unsigned char o[NC * (MAXD + 3) * sizeof(float)]; /* the per-column path's */
    memcpy(o, a, (size_t)(NC * cs));
    memcpy(ho, ha, (size_t)(NC * sw) * sizeof(float));
    EmbRowsArgs x = {.data = (char *)a, .col_stride = cs, .state = (char *)ha,
                     .state_stride = sw * (int64_t)sizeof(float), .ids = ids, .starts = starts,
                     .grow = grow, .gcoef = gcoef, .d0 = (int64_t)(tu_rand(s) % 2), .d1 = NC,
                     .pf_dist = (int64_t)(tu_rand(s) % 2) * 4, .lr = tu_randf(s),
                     .params = &prm, .D = d->D};
    const EmbRowsClip clip = { /* clipping, 3 times in 4: each step on or off */
        .value = tu_rand(s) % 2 ? ldexpf(1.0f, -(int)(tu_rand(s) % 6)) : 0.0f,
        .norm = tu_rand(s) % 2 ? ldexpf(1.0f, -(int)(tu_rand(s) % 8)) : 0.0f,
        .scale = tu_rand(s) % 2 ? fabsf(tu_randf(s)) : 1.0f};
    x.clip = tu_rand(s) % 4 ? &clip : NULL;
    if (kind == EMB_OPT_ROWWISE_ADAGRAD && tu_rand(s) % 2) { /* the counter's rate hook */
        x.rate = test_rate;
        x.rate_ctx = &prm.lr;
    }
    ref(&x);
    x.data = (char *)b;
    x.state = (char *)hb;
    got(&x);
    expect_same(c, a, b, (size_t)(NC * cs), 1);
    expect_same(c, ha, hb, (size_t)(NC * sw), sizeof(float));
    if (x.rate) /* no per-column kernel takes a rate: the reference is the definition */
        return;
    x.data = (char *)o;
    x.state = (char *)ho;
    rows_by_column(r, kind, &x, (EmbDtype)d->dt);
    expect_same(c, a, o, (size_t)(NC * cs), 1);
    expect_same(c, ha, ho, (size_t)(NC * sw), sizeof(float));
}

static void check_sumsq(Ctx *c, Data *d, emb_sumsq_fn ref, emb_sumsq_fn got)
{
    const float x = ref(d->cols[0], d->D), y = got(d->cols[0], d->D);
    expect_same(c, &x, &y, 1, sizeof x);
}

static void check_scale(Ctx *c, Data *d, emb_scale_fn ref, emb_scale_fn got, uint64_t *s)
{
    const size_t total = (size_t)d->D + PAD;
    data_outputs(d, total, 1, s);
    const float f = tu_randf(s);
    ref(d->out_ref, f, d->D);
    got(d->out_got, f, d->D);
    expect_same(c, d->out_ref, d->out_got, total, sizeof(float));
}

/* A row quantized stochastically from D values under a random key: plain values, or with
 * NaNs (x[0] among them at times), infinities, zeros of both signs, or all equal; the row's
 * bytes and PAD poisoned bytes after it compared. */
static void check_requant(Ctx *c, Data *d, emb_requant_fn ref, emb_requant_fn got, uint64_t *s)
{
    const int32_t D = d->D;
    const size_t bytes = emb_dtype_row_bytes((EmbDtype)d->dt, D) + PAD;
    float x[MAXD];
    for (int kind = 0; kind < 12; kind++) { /* kinds 6 ..: no key (to nearest) */
        for (int32_t i = 0; i < D; i++) {
            const uint64_t r = tu_rand(s) % 8;
            x[i] = kind % 6 == 4 ? 0.25f : ca_value(s);
            if (kind % 6 == 5) /* 2^-28 .. 2^17: f16's subnormals, beyond its largest */
                x[i] = ldexpf(x[i], (int)(tu_rand(s) % 46) - 28);
            if (kind % 6 == 1 && r == 0)
                x[i] = NAN;
            if (kind % 6 == 2 && r == 0)
                x[i] = tu_rand(s) % 2 ? INFINITY : -INFINITY;
            if (kind % 6 == 3 && r < 4)
                x[i] = r % 2 ? 0.0f : -0.0f;
        }
        unsigned char *a = (unsigned char *)d->out_ref, *b = (unsigned char *)d->out_got;
        poison_bytes(a, bytes);
        poison_bytes(b, bytes);
        const uint64_t key[3] = {tu_rand(s), tu_rand(s) % 1000, tu_rand(s) % 100000};
        ref(a, D, x, kind < 6 ? key : NULL);
        got(b, D, x, kind < 6 ? key : NULL);
        expect_same(c, a, b, bytes, 1);
    }
}

/* An optimizer step (two, so that the state written is read again) on a column (aligned or
 * not) and its state row, each followed by PAD poisoned elements. */
static void check_opt(Ctx *c, Data *d, EmbOptimizerKind kind, emb_opt_row_fn ref,
                      emb_opt_row_fn got, uint64_t *s)
{
    const int32_t D = d->D;
    const size_t bytes = ((size_t)D + PAD) * d->esize, skew = (tu_rand(s) % 2) * d->esize;
    unsigned char *a = (unsigned char *)d->out_ref + skew, *b = (unsigned char *)d->out_got + skew;
    const int32_t nstate = kind == EMB_OPT_ADAGRAD ? D : kind == EMB_OPT_ROWWISE_ADAGRAD ? 1 : 2 * D;
    float *sa = d->out_ref + 2 * MAXD, *sb = d->out_got + 2 * MAXD, g[MAXD];
    poison_bytes(a, bytes);
    ca_fill(a, d->dt, D, s);
    memcpy(b, a, bytes);
    tu_poison(sa, (size_t)nstate + PAD);
    for (int32_t i = 0; i < nstate; i++) /* accumulators (h, FTRL's, Adam's v) positive */
        sa[i] = kind == EMB_OPT_ADAM && i < D ? ca_value(s) : fabsf(ca_value(s)) + 0.1f;
    if (kind == EMB_OPT_FTRL)
        for (int32_t i = D; i < 2 * D; i++)
            sa[i] = ca_value(s);
    memcpy(sb, sa, ((size_t)nstate + PAD) * sizeof(float));
    const EmbOptimParams p = {.lr = 0.01f + fabsf(tu_randf(s)), .eps = tu_rand(s) % 2 ? 1e-8f : 1e-10f,
                              .lr_power = tu_rand(s) % 2 ? -0.5f : -0.7f, .l1 = 0.01f, .l2 = 0.002f,
                              .beta1 = 0.9f, .beta2 = 0.999f, .step_size = fabsf(tu_randf(s))};
    for (int step = 0; step < 2; step++) {
        for (int32_t i = 0; i < D; i++)
            g[i] = ca_value(s);
        ref(a, sa, g, &p, D);
        got(b, sb, g, &p, D);
        emb__sfence();
    }
    expect_same(c, a, b, bytes, 1);
    expect_same(c, sa, sb, (size_t)nstate + PAD, sizeof(float));
}

/*
 * Every kernel of the dispatch table, by the name each level registers it under (NULL: the
 * level keeps the one below), with its slot, dtype and static size (0: any D). Every kernel
 * is checked against the C reference of its family at any D (gather[dt], pool[dt], ...).
 */
typedef enum { GATHER, POOL, POOLMAX, BAGS, BAGSMAX, IDMAX, SUMSQ, SGD, ROWS, SCALE, OPT, REQUANT } Family;

typedef struct Entry {
    size_t slot; /* offset of the function pointer in EmbKernels */
    Family family;
    int dt;
    int32_t size;
    EmbOptimizerKind kind;
    const char *name[NLEVELS];
} Entry;

#define E(fam, field, dt, size, kind, c, avx2, avx512)                                       \
    {offsetof(EmbKernels, field), fam, dt, size, kind, {c, avx2, avx512}}

static const Entry entries[] = {
    E(IDMAX, idmax, EMB_F32, 16, 0, "idmax_c", "idmax_avx2", "idmax_avx512"),
    E(BAGSMAX, bags_max[EMB_F32], EMB_F32, 0, 0, "bags_max_f32_c", NULL, NULL),
    E(BAGSMAX, bags_max_d[0][EMB_F32], EMB_F32, 16, 0,
      NULL, "bags_max_d16_f32_avx2", "bags_max_d16_f32_avx512"),
    E(BAGSMAX, bags_max_d[1][EMB_F32], EMB_F32, 32, 0,
      NULL, "bags_max_d32_f32_avx2", "bags_max_d32_f32_avx512"),
    E(BAGSMAX, bags_max_d[2][EMB_F32], EMB_F32, 64, 0,
      NULL, "bags_max_d64_f32_avx2", "bags_max_d64_f32_avx512"),
    E(BAGSMAX, bags_max_d[3][EMB_F32], EMB_F32, 128, 0,
      NULL, "bags_max_d128_f32_avx2", "bags_max_d128_f32_avx512"),
    E(BAGSMAX, bags_max_d[4][EMB_F32], EMB_F32, 256, 0,
      NULL, "bags_max_d256_f32_avx2", "bags_max_d256_f32_avx512"),
    E(BAGSMAX, bags_max[EMB_F16], EMB_F16, 0, 0, "bags_max_f16_c", NULL, NULL),
    E(BAGSMAX, bags_max_d[0][EMB_F16], EMB_F16, 16, 0,
      NULL, "bags_max_d16_f16_avx2", "bags_max_d16_f16_avx512"),
    E(BAGSMAX, bags_max_d[1][EMB_F16], EMB_F16, 32, 0,
      NULL, "bags_max_d32_f16_avx2", "bags_max_d32_f16_avx512"),
    E(BAGSMAX, bags_max_d[2][EMB_F16], EMB_F16, 64, 0,
      NULL, "bags_max_d64_f16_avx2", "bags_max_d64_f16_avx512"),
    E(BAGSMAX, bags_max_d[3][EMB_F16], EMB_F16, 128, 0,
      NULL, "bags_max_d128_f16_avx2", "bags_max_d128_f16_avx512"),
    E(BAGSMAX, bags_max_d[4][EMB_F16], EMB_F16, 256, 0,
      NULL, "bags_max_d256_f16_avx2", "bags_max_d256_f16_avx512"),
    E(BAGSMAX, bags_max[EMB_BF16], EMB_BF16, 0, 0, "bags_max_bf16_c", NULL, NULL),
    E(BAGSMAX, bags_max_d[0][EMB_BF16], EMB_BF16, 16, 0,
      NULL, "bags_max_d16_bf16_avx2", "bags_max_d16_bf16_avx512"),
    E(BAGSMAX, bags_max_d[1][EMB_BF16], EMB_BF16, 32, 0,
      NULL, "bags_max_d32_bf16_avx2", "bags_max_d32_bf16_avx512"),
    E(BAGSMAX, bags_max_d[2][EMB_BF16], EMB_BF16, 64, 0,
      NULL, "bags_max_d64_bf16_avx2", "bags_max_d64_bf16_avx512"),
    E(BAGSMAX, bags_max_d[3][EMB_BF16], EMB_BF16, 128, 0,
      NULL, "bags_max_d128_bf16_avx2", "bags_max_d128_bf16_avx512"),
    E(BAGSMAX, bags_max_d[4][EMB_BF16], EMB_BF16, 256, 0,
      NULL, "bags_max_d256_bf16_avx2", "bags_max_d256_bf16_avx512"),
    E(BAGSMAX, bags_max[EMB_INT8], EMB_INT8, 0, 0, "bags_max_int8_c", NULL, NULL),
    E(BAGSMAX, bags_max_d[0][EMB_INT8], EMB_INT8, 16, 0,
      NULL, "bags_max_d16_int8_avx2", "bags_max_d16_int8_avx512"),
    E(BAGSMAX, bags_max_d[1][EMB_INT8], EMB_INT8, 32, 0,
      NULL, "bags_max_d32_int8_avx2", "bags_max_d32_int8_avx512"),
    E(BAGSMAX, bags_max_d[2][EMB_INT8], EMB_INT8, 64, 0,
      NULL, "bags_max_d64_int8_avx2", "bags_max_d64_int8_avx512"),
    E(BAGSMAX, bags_max_d[3][EMB_INT8], EMB_INT8, 128, 0,
      NULL, "bags_max_d128_int8_avx2", "bags_max_d128_int8_avx512"),
    E(BAGSMAX, bags_max_d[4][EMB_INT8], EMB_INT8, 256, 0,
      NULL, "bags_max_d256_int8_avx2", "bags_max_d256_int8_avx512"),
    E(BAGSMAX, bags_max[EMB_INT4], EMB_INT4, 0, 0, "bags_max_int4_c", NULL, NULL),
    E(BAGSMAX, bags_max_d[0][EMB_INT4], EMB_INT4, 16, 0,
      NULL, "bags_max_d16_int4_avx2", "bags_max_d16_int4_avx512"),
    E(BAGSMAX, bags_max_d[1][EMB_INT4], EMB_INT4, 32, 0,
      NULL, "bags_max_d32_int4_avx2", "bags_max_d32_int4_avx512"),
    E(BAGSMAX, bags_max_d[2][EMB_INT4], EMB_INT4, 64, 0,
      NULL, "bags_max_d64_int4_avx2", "bags_max_d64_int4_avx512"),
    E(BAGSMAX, bags_max_d[3][EMB_INT4], EMB_INT4, 128, 0,
      NULL, "bags_max_d128_int4_avx2", "bags_max_d128_int4_avx512"),
    E(BAGSMAX, bags_max_d[4][EMB_INT4], EMB_INT4, 256, 0,
      NULL, "bags_max_d256_int4_avx2", "bags_max_d256_int4_avx512"),
    E(POOLMAX, pool_max[EMB_F32], EMB_F32, 0, 0,
      "pool_max_f32_c", "pool_max_f32_avx2", "pool_max_f32_avx512"),
    E(POOLMAX, pool_max_d[0][EMB_F32], EMB_F32, 16, 0,
      NULL, "pool_max_d16_f32_avx2", "pool_max_d16_f32_avx512"),
    E(POOLMAX, pool_max_d[1][EMB_F32], EMB_F32, 32, 0,
      NULL, "pool_max_d32_f32_avx2", "pool_max_d32_f32_avx512"),
    E(POOLMAX, pool_max_d[2][EMB_F32], EMB_F32, 64, 0,
      NULL, "pool_max_d64_f32_avx2", "pool_max_d64_f32_avx512"),
    E(POOLMAX, pool_max_d[3][EMB_F32], EMB_F32, 128, 0,
      NULL, "pool_max_d128_f32_avx2", "pool_max_d128_f32_avx512"),
    E(POOLMAX, pool_max_d[4][EMB_F32], EMB_F32, 256, 0,
      NULL, "pool_max_d256_f32_avx2", "pool_max_d256_f32_avx512"),
    E(POOLMAX, pool_max[EMB_F16], EMB_F16, 0, 0,
      "pool_max_f16_c", "pool_max_f16_avx2", "pool_max_f16_avx512"),
    E(POOLMAX, pool_max_d[0][EMB_F16], EMB_F16, 16, 0,
      NULL, "pool_max_d16_f16_avx2", "pool_max_d16_f16_avx512"),
    E(POOLMAX, pool_max_d[1][EMB_F16], EMB_F16, 32, 0,
      NULL, "pool_max_d32_f16_avx2", "pool_max_d32_f16_avx512"),
    E(POOLMAX, pool_max_d[2][EMB_F16], EMB_F16, 64, 0,
      NULL, "pool_max_d64_f16_avx2", "pool_max_d64_f16_avx512"),
    E(POOLMAX, pool_max_d[3][EMB_F16], EMB_F16, 128, 0,
      NULL, "pool_max_d128_f16_avx2", "pool_max_d128_f16_avx512"),
    E(POOLMAX, pool_max_d[4][EMB_F16], EMB_F16, 256, 0,
      NULL, "pool_max_d256_f16_avx2", "pool_max_d256_f16_avx512"),
    E(POOLMAX, pool_max[EMB_BF16], EMB_BF16, 0, 0,
      "pool_max_bf16_c", "pool_max_bf16_avx2", "pool_max_bf16_avx512"),
    E(POOLMAX, pool_max_d[0][EMB_BF16], EMB_BF16, 16, 0,
      NULL, "pool_max_d16_bf16_avx2", "pool_max_d16_bf16_avx512"),
    E(POOLMAX, pool_max_d[1][EMB_BF16], EMB_BF16, 32, 0,
      NULL, "pool_max_d32_bf16_avx2", "pool_max_d32_bf16_avx512"),
    E(POOLMAX, pool_max_d[2][EMB_BF16], EMB_BF16, 64, 0,
      NULL, "pool_max_d64_bf16_avx2", "pool_max_d64_bf16_avx512"),
    E(POOLMAX, pool_max_d[3][EMB_BF16], EMB_BF16, 128, 0,
      NULL, "pool_max_d128_bf16_avx2", "pool_max_d128_bf16_avx512"),
    E(POOLMAX, pool_max_d[4][EMB_BF16], EMB_BF16, 256, 0,
      NULL, "pool_max_d256_bf16_avx2", "pool_max_d256_bf16_avx512"),
    E(POOLMAX, pool_max[EMB_INT8], EMB_INT8, 0, 0,
      "pool_max_int8_c", "pool_max_int8_avx2", "pool_max_int8_avx512"),
    E(POOLMAX, pool_max_d[0][EMB_INT8], EMB_INT8, 16, 0,
      NULL, "pool_max_d16_int8_avx2", "pool_max_d16_int8_avx512"),
    E(POOLMAX, pool_max_d[1][EMB_INT8], EMB_INT8, 32, 0,
      NULL, "pool_max_d32_int8_avx2", "pool_max_d32_int8_avx512"),
    E(POOLMAX, pool_max_d[2][EMB_INT8], EMB_INT8, 64, 0,
      NULL, "pool_max_d64_int8_avx2", "pool_max_d64_int8_avx512"),
    E(POOLMAX, pool_max_d[3][EMB_INT8], EMB_INT8, 128, 0,
      NULL, "pool_max_d128_int8_avx2", "pool_max_d128_int8_avx512"),
    E(POOLMAX, pool_max_d[4][EMB_INT8], EMB_INT8, 256, 0,
      NULL, "pool_max_d256_int8_avx2", "pool_max_d256_int8_avx512"),
    E(POOLMAX, pool_max[EMB_INT4], EMB_INT4, 0, 0,
      "pool_max_int4_c", "pool_max_int4_avx2", "pool_max_int4_avx512"),
    E(POOLMAX, pool_max_d[0][EMB_INT4], EMB_INT4, 16, 0,
      NULL, "pool_max_d16_int4_avx2", "pool_max_d16_int4_avx512"),
    E(POOLMAX, pool_max_d[1][EMB_INT4], EMB_INT4, 32, 0,
      NULL, "pool_max_d32_int4_avx2", "pool_max_d32_int4_avx512"),
    E(POOLMAX, pool_max_d[2][EMB_INT4], EMB_INT4, 64, 0,
      NULL, "pool_max_d64_int4_avx2", "pool_max_d64_int4_avx512"),
    E(POOLMAX, pool_max_d[3][EMB_INT4], EMB_INT4, 128, 0,
      NULL, "pool_max_d128_int4_avx2", "pool_max_d128_int4_avx512"),
    E(POOLMAX, pool_max_d[4][EMB_INT4], EMB_INT4, 256, 0,
      NULL, "pool_max_d256_int4_avx2", "pool_max_d256_int4_avx512"),
    E(BAGS, bags[EMB_F32], EMB_F32, 0, 0, "bags_f32_c", NULL, NULL),
    E(BAGS, bags_d[0][EMB_F32], EMB_F32, 16, 0,
      "bags_d16_f32_c", "bags_d16_f32_avx2", "bags_d16_f32_avx512"),
    E(BAGS, bags_d[1][EMB_F32], EMB_F32, 32, 0,
      "bags_d32_f32_c", "bags_d32_f32_avx2", "bags_d32_f32_avx512"),
    E(BAGS, bags_d[2][EMB_F32], EMB_F32, 64, 0,
      "bags_d64_f32_c", "bags_d64_f32_avx2", "bags_d64_f32_avx512"),
    E(BAGS, bags_d[3][EMB_F32], EMB_F32, 128, 0,
      "bags_d128_f32_c", "bags_d128_f32_avx2", "bags_d128_f32_avx512"),
    E(BAGS, bags_d[4][EMB_F32], EMB_F32, 256, 0,
      "bags_d256_f32_c", "bags_d256_f32_avx2", "bags_d256_f32_avx512"),
    E(BAGS, bags[EMB_F16], EMB_F16, 0, 0, "bags_f16_c", NULL, NULL),
    E(BAGS, bags_d[0][EMB_F16], EMB_F16, 16, 0,
      "bags_d16_f16_c", "bags_d16_f16_avx2", "bags_d16_f16_avx512"),
    E(BAGS, bags_d[1][EMB_F16], EMB_F16, 32, 0,
      "bags_d32_f16_c", "bags_d32_f16_avx2", "bags_d32_f16_avx512"),
    E(BAGS, bags_d[2][EMB_F16], EMB_F16, 64, 0,
      "bags_d64_f16_c", "bags_d64_f16_avx2", "bags_d64_f16_avx512"),
    E(BAGS, bags_d[3][EMB_F16], EMB_F16, 128, 0,
      "bags_d128_f16_c", "bags_d128_f16_avx2", "bags_d128_f16_avx512"),
    E(BAGS, bags_d[4][EMB_F16], EMB_F16, 256, 0,
      "bags_d256_f16_c", "bags_d256_f16_avx2", "bags_d256_f16_avx512"),
    E(BAGS, bags[EMB_BF16], EMB_BF16, 0, 0, "bags_bf16_c", NULL, NULL),
    E(BAGS, bags_d[0][EMB_BF16], EMB_BF16, 16, 0,
      "bags_d16_bf16_c", "bags_d16_bf16_avx2", "bags_d16_bf16_avx512"),
    E(BAGS, bags_d[1][EMB_BF16], EMB_BF16, 32, 0,
      "bags_d32_bf16_c", "bags_d32_bf16_avx2", "bags_d32_bf16_avx512"),
    E(BAGS, bags_d[2][EMB_BF16], EMB_BF16, 64, 0,
      "bags_d64_bf16_c", "bags_d64_bf16_avx2", "bags_d64_bf16_avx512"),
    E(BAGS, bags_d[3][EMB_BF16], EMB_BF16, 128, 0,
      "bags_d128_bf16_c", "bags_d128_bf16_avx2", "bags_d128_bf16_avx512"),
    E(BAGS, bags_d[4][EMB_BF16], EMB_BF16, 256, 0,
      "bags_d256_bf16_c", "bags_d256_bf16_avx2", "bags_d256_bf16_avx512"),
    E(GATHER, gather[EMB_F32], EMB_F32, 0, 0,
      "gather_f32_c", "gather_f32_avx2", "gather_f32_avx512"),
    E(GATHER, gather_d[0][EMB_F32], EMB_F32, 16, 0,
      "gather_d16_f32_c", "gather_d16_f32_avx2", "gather_d16_f32_avx512"),
    E(GATHER, gather_d[1][EMB_F32], EMB_F32, 32, 0,
      "gather_d32_f32_c", "gather_d32_f32_avx2", "gather_d32_f32_avx512"),
    E(GATHER, gather_d[2][EMB_F32], EMB_F32, 64, 0,
      "gather_d64_f32_c", "gather_d64_f32_avx2", "gather_d64_f32_avx512"),
    E(GATHER, gather_d[3][EMB_F32], EMB_F32, 128, 0,
      "gather_d128_f32_c", "gather_d128_f32_avx2", "gather_d128_f32_avx512"),
    E(GATHER, gather_d[4][EMB_F32], EMB_F32, 256, 0,
      "gather_d256_f32_c", "gather_d256_f32_avx2", "gather_d256_f32_avx512"),
    E(POOL, pool[EMB_F32], EMB_F32, 0, 0,
      "pool_f32_c", "pool_f32_avx2", "pool_f32_avx512"),
    E(POOL, pool_nt[EMB_F32], EMB_F32, 0, 0,
      "pool_f32_c", "pool_nt_f32_avx2", "pool_nt_f32_avx512"),
    E(POOL, pool_d[0][EMB_F32], EMB_F32, 16, 0,
      "pool_d16_f32_c", "pool_d16_f32_avx2", "pool_d16_f32_avx512"),
    E(POOL, pool_d[1][EMB_F32], EMB_F32, 32, 0,
      "pool_d32_f32_c", "pool_d32_f32_avx2", "pool_d32_f32_avx512"),
    E(POOL, pool_d[2][EMB_F32], EMB_F32, 64, 0,
      "pool_d64_f32_c", "pool_d64_f32_avx2", "pool_d64_f32_avx512"),
    E(POOL, pool_d[3][EMB_F32], EMB_F32, 128, 0,
      "pool_d128_f32_c", "pool_d128_f32_avx2", "pool_d128_f32_avx512"),
    E(POOL, pool_d[4][EMB_F32], EMB_F32, 256, 0,
      "pool_d256_f32_c", "pool_d256_f32_avx2", "pool_d256_f32_avx512"),
    E(SUMSQ, sumsq[EMB_F32], EMB_F32, 0, 0,
      "sumsq_f32_c", "sumsq_f32_avx2", "sumsq_f32_avx512"),
    E(SGD, sgd_row[EMB_F32], EMB_F32, 0, 0,
      "sgd_row_f32_c", "sgd_row_f32_avx2", "sgd_row_f32_avx512"),
    E(SGD, sgd_row_nt[EMB_F32], EMB_F32, 0, 0,
      "sgd_row_f32_c", "sgd_row_nt_f32_avx2", "sgd_row_nt_f32_avx512"),
    E(SGD, sgd_row_d[0][EMB_F32], EMB_F32, 16, 0,
      "sgd_row_d16_f32_c", "sgd_row_d16_f32_avx2", "sgd_row_d16_f32_avx512"),
    E(SGD, sgd_row_d[1][EMB_F32], EMB_F32, 32, 0,
      "sgd_row_d32_f32_c", "sgd_row_d32_f32_avx2", "sgd_row_d32_f32_avx512"),
    E(SGD, sgd_row_d[2][EMB_F32], EMB_F32, 64, 0,
      "sgd_row_d64_f32_c", "sgd_row_d64_f32_avx2", "sgd_row_d64_f32_avx512"),
    E(SGD, sgd_row_d[3][EMB_F32], EMB_F32, 128, 0,
      "sgd_row_d128_f32_c", "sgd_row_d128_f32_avx2", "sgd_row_d128_f32_avx512"),
    E(SGD, sgd_row_d[4][EMB_F32], EMB_F32, 256, 0,
      "sgd_row_d256_f32_c", "sgd_row_d256_f32_avx2", "sgd_row_d256_f32_avx512"),

    E(GATHER, gather[EMB_F16], EMB_F16, 0, 0,
      "gather_f16_c", "gather_f16_avx2", "gather_f16_avx512"),
    E(GATHER, gather_d[0][EMB_F16], EMB_F16, 16, 0,
      "gather_d16_f16_c", "gather_d16_f16_avx2", "gather_d16_f16_avx512"),
    E(GATHER, gather_d[1][EMB_F16], EMB_F16, 32, 0,
      "gather_d32_f16_c", "gather_d32_f16_avx2", "gather_d32_f16_avx512"),
    E(GATHER, gather_d[2][EMB_F16], EMB_F16, 64, 0,
      "gather_d64_f16_c", "gather_d64_f16_avx2", "gather_d64_f16_avx512"),
    E(GATHER, gather_d[3][EMB_F16], EMB_F16, 128, 0,
      "gather_d128_f16_c", "gather_d128_f16_avx2", "gather_d128_f16_avx512"),
    E(GATHER, gather_d[4][EMB_F16], EMB_F16, 256, 0,
      "gather_d256_f16_c", "gather_d256_f16_avx2", "gather_d256_f16_avx512"),
    E(POOL, pool[EMB_F16], EMB_F16, 0, 0,
      "pool_f16_c", "pool_f16_avx2", "pool_f16_avx512"),
    E(POOL, pool_nt[EMB_F16], EMB_F16, 0, 0,
      "pool_f16_c", "pool_nt_f16_avx2", "pool_nt_f16_avx512"),
    E(POOL, pool_d[0][EMB_F16], EMB_F16, 16, 0,
      "pool_d16_f16_c", "pool_d16_f16_avx2", "pool_d16_f16_avx512"),
    E(POOL, pool_d[1][EMB_F16], EMB_F16, 32, 0,
      "pool_d32_f16_c", "pool_d32_f16_avx2", "pool_d32_f16_avx512"),
    E(POOL, pool_d[2][EMB_F16], EMB_F16, 64, 0,
      "pool_d64_f16_c", "pool_d64_f16_avx2", "pool_d64_f16_avx512"),
    E(POOL, pool_d[3][EMB_F16], EMB_F16, 128, 0,
      "pool_d128_f16_c", "pool_d128_f16_avx2", "pool_d128_f16_avx512"),
    E(POOL, pool_d[4][EMB_F16], EMB_F16, 256, 0,
      "pool_d256_f16_c", "pool_d256_f16_avx2", "pool_d256_f16_avx512"),
    E(SUMSQ, sumsq[EMB_F16], EMB_F16, 0, 0,
      "sumsq_f16_c", "sumsq_f16_avx2", "sumsq_f16_avx512"),
    E(SGD, sgd_row[EMB_F16], EMB_F16, 0, 0,
      "sgd_row_f16_c", "sgd_row_f16_avx2", "sgd_row_f16_avx512"),
    E(SGD, sgd_row_nt[EMB_F16], EMB_F16, 0, 0,
      "sgd_row_f16_c", "sgd_row_nt_f16_avx2", "sgd_row_nt_f16_avx512"),
    E(SGD, sgd_row_d[0][EMB_F16], EMB_F16, 16, 0,
      "sgd_row_d16_f16_c", "sgd_row_d16_f16_avx2", "sgd_row_d16_f16_avx512"),
    E(SGD, sgd_row_d[1][EMB_F16], EMB_F16, 32, 0,
      "sgd_row_d32_f16_c", "sgd_row_d32_f16_avx2", "sgd_row_d32_f16_avx512"),
    E(SGD, sgd_row_d[2][EMB_F16], EMB_F16, 64, 0,
      "sgd_row_d64_f16_c", "sgd_row_d64_f16_avx2", "sgd_row_d64_f16_avx512"),
    E(SGD, sgd_row_d[3][EMB_F16], EMB_F16, 128, 0,
      "sgd_row_d128_f16_c", "sgd_row_d128_f16_avx2", "sgd_row_d128_f16_avx512"),
    E(SGD, sgd_row_d[4][EMB_F16], EMB_F16, 256, 0,
      "sgd_row_d256_f16_c", "sgd_row_d256_f16_avx2", "sgd_row_d256_f16_avx512"),

    E(GATHER, gather[EMB_BF16], EMB_BF16, 0, 0,
      "gather_bf16_c", "gather_bf16_avx2", "gather_bf16_avx512"),
    E(GATHER, gather_d[0][EMB_BF16], EMB_BF16, 16, 0,
      "gather_d16_bf16_c", "gather_d16_bf16_avx2", "gather_d16_bf16_avx512"),
    E(GATHER, gather_d[1][EMB_BF16], EMB_BF16, 32, 0,
      "gather_d32_bf16_c", "gather_d32_bf16_avx2", "gather_d32_bf16_avx512"),
    E(GATHER, gather_d[2][EMB_BF16], EMB_BF16, 64, 0,
      "gather_d64_bf16_c", "gather_d64_bf16_avx2", "gather_d64_bf16_avx512"),
    E(GATHER, gather_d[3][EMB_BF16], EMB_BF16, 128, 0,
      "gather_d128_bf16_c", "gather_d128_bf16_avx2", "gather_d128_bf16_avx512"),
    E(GATHER, gather_d[4][EMB_BF16], EMB_BF16, 256, 0,
      "gather_d256_bf16_c", "gather_d256_bf16_avx2", "gather_d256_bf16_avx512"),
    E(POOL, pool[EMB_BF16], EMB_BF16, 0, 0,
      "pool_bf16_c", "pool_bf16_avx2", "pool_bf16_avx512"),
    E(POOL, pool_nt[EMB_BF16], EMB_BF16, 0, 0,
      "pool_bf16_c", "pool_nt_bf16_avx2", "pool_nt_bf16_avx512"),
    E(POOL, pool_d[0][EMB_BF16], EMB_BF16, 16, 0,
      "pool_d16_bf16_c", "pool_d16_bf16_avx2", "pool_d16_bf16_avx512"),
    E(POOL, pool_d[1][EMB_BF16], EMB_BF16, 32, 0,
      "pool_d32_bf16_c", "pool_d32_bf16_avx2", "pool_d32_bf16_avx512"),
    E(POOL, pool_d[2][EMB_BF16], EMB_BF16, 64, 0,
      "pool_d64_bf16_c", "pool_d64_bf16_avx2", "pool_d64_bf16_avx512"),
    E(POOL, pool_d[3][EMB_BF16], EMB_BF16, 128, 0,
      "pool_d128_bf16_c", "pool_d128_bf16_avx2", "pool_d128_bf16_avx512"),
    E(POOL, pool_d[4][EMB_BF16], EMB_BF16, 256, 0,
      "pool_d256_bf16_c", "pool_d256_bf16_avx2", "pool_d256_bf16_avx512"),
    E(SUMSQ, sumsq[EMB_BF16], EMB_BF16, 0, 0,
      "sumsq_bf16_c", "sumsq_bf16_avx2", "sumsq_bf16_avx512"),
    E(SGD, sgd_row[EMB_BF16], EMB_BF16, 0, 0,
      "sgd_row_bf16_c", "sgd_row_bf16_avx2", "sgd_row_bf16_avx512"),
    E(SGD, sgd_row_nt[EMB_BF16], EMB_BF16, 0, 0,
      "sgd_row_bf16_c", "sgd_row_nt_bf16_avx2", "sgd_row_nt_bf16_avx512"),
    E(SGD, sgd_row_d[0][EMB_BF16], EMB_BF16, 16, 0,
      "sgd_row_d16_bf16_c", "sgd_row_d16_bf16_avx2", "sgd_row_d16_bf16_avx512"),
    E(SGD, sgd_row_d[1][EMB_BF16], EMB_BF16, 32, 0,
      "sgd_row_d32_bf16_c", "sgd_row_d32_bf16_avx2", "sgd_row_d32_bf16_avx512"),
    E(SGD, sgd_row_d[2][EMB_BF16], EMB_BF16, 64, 0,
      "sgd_row_d64_bf16_c", "sgd_row_d64_bf16_avx2", "sgd_row_d64_bf16_avx512"),
    E(SGD, sgd_row_d[3][EMB_BF16], EMB_BF16, 128, 0,
      "sgd_row_d128_bf16_c", "sgd_row_d128_bf16_avx2", "sgd_row_d128_bf16_avx512"),
    E(SGD, sgd_row_d[4][EMB_BF16], EMB_BF16, 256, 0,
      "sgd_row_d256_bf16_c", "sgd_row_d256_bf16_avx2", "sgd_row_d256_bf16_avx512"),

    E(ROWS, rows[EMB_OPT_SGD][EMB_F32], EMB_F32, 0, EMB_OPT_SGD, "sgd_rows_f32_c", NULL, NULL),
    E(ROWS, rows_d[0][EMB_OPT_SGD][EMB_F32], EMB_F32, 16, EMB_OPT_SGD,
      "sgd_rows_d16_f32_c", "sgd_rows_d16_f32_avx2", "sgd_rows_d16_f32_avx512"),
    E(ROWS, rows_d[1][EMB_OPT_SGD][EMB_F32], EMB_F32, 32, EMB_OPT_SGD,
      "sgd_rows_d32_f32_c", "sgd_rows_d32_f32_avx2", "sgd_rows_d32_f32_avx512"),
    E(ROWS, rows_d[2][EMB_OPT_SGD][EMB_F32], EMB_F32, 64, EMB_OPT_SGD,
      "sgd_rows_d64_f32_c", "sgd_rows_d64_f32_avx2", "sgd_rows_d64_f32_avx512"),
    E(ROWS, rows_d[3][EMB_OPT_SGD][EMB_F32], EMB_F32, 128, EMB_OPT_SGD,
      "sgd_rows_d128_f32_c", "sgd_rows_d128_f32_avx2", "sgd_rows_d128_f32_avx512"),
    E(ROWS, rows_d[4][EMB_OPT_SGD][EMB_F32], EMB_F32, 256, EMB_OPT_SGD,
      "sgd_rows_d256_f32_c", "sgd_rows_d256_f32_avx2", "sgd_rows_d256_f32_avx512"),
    E(ROWS, rows[EMB_OPT_SGD][EMB_F16], EMB_F16, 0, EMB_OPT_SGD, "sgd_rows_f16_c", NULL, NULL),
    E(ROWS, rows_d[0][EMB_OPT_SGD][EMB_F16], EMB_F16, 16, EMB_OPT_SGD,
      "sgd_rows_d16_f16_c", "sgd_rows_d16_f16_avx2", "sgd_rows_d16_f16_avx512"),
    E(ROWS, rows_d[1][EMB_OPT_SGD][EMB_F16], EMB_F16, 32, EMB_OPT_SGD,
      "sgd_rows_d32_f16_c", "sgd_rows_d32_f16_avx2", "sgd_rows_d32_f16_avx512"),
    E(ROWS, rows_d[2][EMB_OPT_SGD][EMB_F16], EMB_F16, 64, EMB_OPT_SGD,
      "sgd_rows_d64_f16_c", "sgd_rows_d64_f16_avx2", "sgd_rows_d64_f16_avx512"),
    E(ROWS, rows_d[3][EMB_OPT_SGD][EMB_F16], EMB_F16, 128, EMB_OPT_SGD,
      "sgd_rows_d128_f16_c", "sgd_rows_d128_f16_avx2", "sgd_rows_d128_f16_avx512"),
    E(ROWS, rows_d[4][EMB_OPT_SGD][EMB_F16], EMB_F16, 256, EMB_OPT_SGD,
      "sgd_rows_d256_f16_c", "sgd_rows_d256_f16_avx2", "sgd_rows_d256_f16_avx512"),
    E(ROWS, rows[EMB_OPT_SGD][EMB_BF16], EMB_BF16, 0, EMB_OPT_SGD, "sgd_rows_bf16_c", NULL, NULL),
    E(ROWS, rows_d[0][EMB_OPT_SGD][EMB_BF16], EMB_BF16, 16, EMB_OPT_SGD,
      "sgd_rows_d16_bf16_c", "sgd_rows_d16_bf16_avx2", "sgd_rows_d16_bf16_avx512"),
    E(ROWS, rows_d[1][EMB_OPT_SGD][EMB_BF16], EMB_BF16, 32, EMB_OPT_SGD,
      "sgd_rows_d32_bf16_c", "sgd_rows_d32_bf16_avx2", "sgd_rows_d32_bf16_avx512"),
    E(ROWS, rows_d[2][EMB_OPT_SGD][EMB_BF16], EMB_BF16, 64, EMB_OPT_SGD,
      "sgd_rows_d64_bf16_c", "sgd_rows_d64_bf16_avx2", "sgd_rows_d64_bf16_avx512"),
    E(ROWS, rows_d[3][EMB_OPT_SGD][EMB_BF16], EMB_BF16, 128, EMB_OPT_SGD,
      "sgd_rows_d128_bf16_c", "sgd_rows_d128_bf16_avx2", "sgd_rows_d128_bf16_avx512"),
    E(ROWS, rows_d[4][EMB_OPT_SGD][EMB_BF16], EMB_BF16, 256, EMB_OPT_SGD,
      "sgd_rows_d256_bf16_c", "sgd_rows_d256_bf16_avx2", "sgd_rows_d256_bf16_avx512"),
    E(ROWS, rows[EMB_OPT_ADAGRAD][EMB_F32], EMB_F32, 0, EMB_OPT_ADAGRAD, "adagrad_rows_f32_c", NULL, NULL),
    E(ROWS, rows_d[0][EMB_OPT_ADAGRAD][EMB_F32], EMB_F32, 16, EMB_OPT_ADAGRAD,
      "adagrad_rows_d16_f32_c", "adagrad_rows_d16_f32_avx2", "adagrad_rows_d16_f32_avx512"),
    E(ROWS, rows_d[1][EMB_OPT_ADAGRAD][EMB_F32], EMB_F32, 32, EMB_OPT_ADAGRAD,
      "adagrad_rows_d32_f32_c", "adagrad_rows_d32_f32_avx2", "adagrad_rows_d32_f32_avx512"),
    E(ROWS, rows_d[2][EMB_OPT_ADAGRAD][EMB_F32], EMB_F32, 64, EMB_OPT_ADAGRAD,
      "adagrad_rows_d64_f32_c", "adagrad_rows_d64_f32_avx2", "adagrad_rows_d64_f32_avx512"),
    E(ROWS, rows_d[3][EMB_OPT_ADAGRAD][EMB_F32], EMB_F32, 128, EMB_OPT_ADAGRAD,
      "adagrad_rows_d128_f32_c", "adagrad_rows_d128_f32_avx2", "adagrad_rows_d128_f32_avx512"),
    E(ROWS, rows_d[4][EMB_OPT_ADAGRAD][EMB_F32], EMB_F32, 256, EMB_OPT_ADAGRAD,
      "adagrad_rows_d256_f32_c", "adagrad_rows_d256_f32_avx2", "adagrad_rows_d256_f32_avx512"),
    E(ROWS, rows[EMB_OPT_ADAGRAD][EMB_F16], EMB_F16, 0, EMB_OPT_ADAGRAD, "adagrad_rows_f16_c", NULL, NULL),
    E(ROWS, rows_d[0][EMB_OPT_ADAGRAD][EMB_F16], EMB_F16, 16, EMB_OPT_ADAGRAD,
      "adagrad_rows_d16_f16_c", "adagrad_rows_d16_f16_avx2", "adagrad_rows_d16_f16_avx512"),
    E(ROWS, rows_d[1][EMB_OPT_ADAGRAD][EMB_F16], EMB_F16, 32, EMB_OPT_ADAGRAD,
      "adagrad_rows_d32_f16_c", "adagrad_rows_d32_f16_avx2", "adagrad_rows_d32_f16_avx512"),
    E(ROWS, rows_d[2][EMB_OPT_ADAGRAD][EMB_F16], EMB_F16, 64, EMB_OPT_ADAGRAD,
      "adagrad_rows_d64_f16_c", "adagrad_rows_d64_f16_avx2", "adagrad_rows_d64_f16_avx512"),
    E(ROWS, rows_d[3][EMB_OPT_ADAGRAD][EMB_F16], EMB_F16, 128, EMB_OPT_ADAGRAD,
      "adagrad_rows_d128_f16_c", "adagrad_rows_d128_f16_avx2", "adagrad_rows_d128_f16_avx512"),
    E(ROWS, rows_d[4][EMB_OPT_ADAGRAD][EMB_F16], EMB_F16, 256, EMB_OPT_ADAGRAD,
      "adagrad_rows_d256_f16_c", "adagrad_rows_d256_f16_avx2", "adagrad_rows_d256_f16_avx512"),
    E(ROWS, rows[EMB_OPT_ADAGRAD][EMB_BF16], EMB_BF16, 0, EMB_OPT_ADAGRAD, "adagrad_rows_bf16_c", NULL, NULL),
    E(ROWS, rows_d[0][EMB_OPT_ADAGRAD][EMB_BF16], EMB_BF16, 16, EMB_OPT_ADAGRAD,
      "adagrad_rows_d16_bf16_c", "adagrad_rows_d16_bf16_avx2", "adagrad_rows_d16_bf16_avx512"),
    E(ROWS, rows_d[1][EMB_OPT_ADAGRAD][EMB_BF16], EMB_BF16, 32, EMB_OPT_ADAGRAD,
      "adagrad_rows_d32_bf16_c", "adagrad_rows_d32_bf16_avx2", "adagrad_rows_d32_bf16_avx512"),
    E(ROWS, rows_d[2][EMB_OPT_ADAGRAD][EMB_BF16], EMB_BF16, 64, EMB_OPT_ADAGRAD,
      "adagrad_rows_d64_bf16_c", "adagrad_rows_d64_bf16_avx2", "adagrad_rows_d64_bf16_avx512"),
    E(ROWS, rows_d[3][EMB_OPT_ADAGRAD][EMB_BF16], EMB_BF16, 128, EMB_OPT_ADAGRAD,
      "adagrad_rows_d128_bf16_c", "adagrad_rows_d128_bf16_avx2", "adagrad_rows_d128_bf16_avx512"),
    E(ROWS, rows_d[4][EMB_OPT_ADAGRAD][EMB_BF16], EMB_BF16, 256, EMB_OPT_ADAGRAD,
      "adagrad_rows_d256_bf16_c", "adagrad_rows_d256_bf16_avx2", "adagrad_rows_d256_bf16_avx512"),
    E(ROWS, rows[EMB_OPT_ROWWISE_ADAGRAD][EMB_F32], EMB_F32, 0, EMB_OPT_ROWWISE_ADAGRAD, "rowwise_rows_f32_c", NULL, NULL),
    E(ROWS, rows_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32], EMB_F32, 16, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_rows_d16_f32_c", "rowwise_rows_d16_f32_avx2", "rowwise_rows_d16_f32_avx512"),
    E(ROWS, rows_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32], EMB_F32, 32, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_rows_d32_f32_c", "rowwise_rows_d32_f32_avx2", "rowwise_rows_d32_f32_avx512"),
    E(ROWS, rows_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32], EMB_F32, 64, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_rows_d64_f32_c", "rowwise_rows_d64_f32_avx2", "rowwise_rows_d64_f32_avx512"),
    E(ROWS, rows_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32], EMB_F32, 128, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_rows_d128_f32_c", "rowwise_rows_d128_f32_avx2", "rowwise_rows_d128_f32_avx512"),
    E(ROWS, rows_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32], EMB_F32, 256, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_rows_d256_f32_c", "rowwise_rows_d256_f32_avx2", "rowwise_rows_d256_f32_avx512"),
    E(ROWS, rows[EMB_OPT_ROWWISE_ADAGRAD][EMB_F16], EMB_F16, 0, EMB_OPT_ROWWISE_ADAGRAD, "rowwise_rows_f16_c", NULL, NULL),
    E(ROWS, rows_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16], EMB_F16, 16, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_rows_d16_f16_c", "rowwise_rows_d16_f16_avx2", "rowwise_rows_d16_f16_avx512"),
    E(ROWS, rows_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16], EMB_F16, 32, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_rows_d32_f16_c", "rowwise_rows_d32_f16_avx2", "rowwise_rows_d32_f16_avx512"),
    E(ROWS, rows_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16], EMB_F16, 64, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_rows_d64_f16_c", "rowwise_rows_d64_f16_avx2", "rowwise_rows_d64_f16_avx512"),
    E(ROWS, rows_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16], EMB_F16, 128, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_rows_d128_f16_c", "rowwise_rows_d128_f16_avx2", "rowwise_rows_d128_f16_avx512"),
    E(ROWS, rows_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16], EMB_F16, 256, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_rows_d256_f16_c", "rowwise_rows_d256_f16_avx2", "rowwise_rows_d256_f16_avx512"),
    E(ROWS, rows[EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16], EMB_BF16, 0, EMB_OPT_ROWWISE_ADAGRAD, "rowwise_rows_bf16_c", NULL, NULL),
    E(ROWS, rows_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16], EMB_BF16, 16, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_rows_d16_bf16_c", "rowwise_rows_d16_bf16_avx2", "rowwise_rows_d16_bf16_avx512"),
    E(ROWS, rows_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16], EMB_BF16, 32, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_rows_d32_bf16_c", "rowwise_rows_d32_bf16_avx2", "rowwise_rows_d32_bf16_avx512"),
    E(ROWS, rows_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16], EMB_BF16, 64, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_rows_d64_bf16_c", "rowwise_rows_d64_bf16_avx2", "rowwise_rows_d64_bf16_avx512"),
    E(ROWS, rows_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16], EMB_BF16, 128, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_rows_d128_bf16_c", "rowwise_rows_d128_bf16_avx2", "rowwise_rows_d128_bf16_avx512"),
    E(ROWS, rows_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16], EMB_BF16, 256, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_rows_d256_bf16_c", "rowwise_rows_d256_bf16_avx2", "rowwise_rows_d256_bf16_avx512"),
    E(ROWS, rows[EMB_OPT_ADAM][EMB_F32], EMB_F32, 0, EMB_OPT_ADAM, "adam_rows_f32_c", NULL, NULL),
    E(ROWS, rows_d[0][EMB_OPT_ADAM][EMB_F32], EMB_F32, 16, EMB_OPT_ADAM,
      "adam_rows_d16_f32_c", "adam_rows_d16_f32_avx2", "adam_rows_d16_f32_avx512"),
    E(ROWS, rows_d[1][EMB_OPT_ADAM][EMB_F32], EMB_F32, 32, EMB_OPT_ADAM,
      "adam_rows_d32_f32_c", "adam_rows_d32_f32_avx2", "adam_rows_d32_f32_avx512"),
    E(ROWS, rows_d[2][EMB_OPT_ADAM][EMB_F32], EMB_F32, 64, EMB_OPT_ADAM,
      "adam_rows_d64_f32_c", "adam_rows_d64_f32_avx2", "adam_rows_d64_f32_avx512"),
    E(ROWS, rows_d[3][EMB_OPT_ADAM][EMB_F32], EMB_F32, 128, EMB_OPT_ADAM,
      "adam_rows_d128_f32_c", "adam_rows_d128_f32_avx2", "adam_rows_d128_f32_avx512"),
    E(ROWS, rows_d[4][EMB_OPT_ADAM][EMB_F32], EMB_F32, 256, EMB_OPT_ADAM,
      "adam_rows_d256_f32_c", "adam_rows_d256_f32_avx2", "adam_rows_d256_f32_avx512"),
    E(ROWS, rows[EMB_OPT_ADAM][EMB_F16], EMB_F16, 0, EMB_OPT_ADAM, "adam_rows_f16_c", NULL, NULL),
    E(ROWS, rows_d[0][EMB_OPT_ADAM][EMB_F16], EMB_F16, 16, EMB_OPT_ADAM,
      "adam_rows_d16_f16_c", "adam_rows_d16_f16_avx2", "adam_rows_d16_f16_avx512"),
    E(ROWS, rows_d[1][EMB_OPT_ADAM][EMB_F16], EMB_F16, 32, EMB_OPT_ADAM,
      "adam_rows_d32_f16_c", "adam_rows_d32_f16_avx2", "adam_rows_d32_f16_avx512"),
    E(ROWS, rows_d[2][EMB_OPT_ADAM][EMB_F16], EMB_F16, 64, EMB_OPT_ADAM,
      "adam_rows_d64_f16_c", "adam_rows_d64_f16_avx2", "adam_rows_d64_f16_avx512"),
    E(ROWS, rows_d[3][EMB_OPT_ADAM][EMB_F16], EMB_F16, 128, EMB_OPT_ADAM,
      "adam_rows_d128_f16_c", "adam_rows_d128_f16_avx2", "adam_rows_d128_f16_avx512"),
    E(ROWS, rows_d[4][EMB_OPT_ADAM][EMB_F16], EMB_F16, 256, EMB_OPT_ADAM,
      "adam_rows_d256_f16_c", "adam_rows_d256_f16_avx2", "adam_rows_d256_f16_avx512"),
    E(ROWS, rows[EMB_OPT_ADAM][EMB_BF16], EMB_BF16, 0, EMB_OPT_ADAM, "adam_rows_bf16_c", NULL, NULL),
    E(ROWS, rows_d[0][EMB_OPT_ADAM][EMB_BF16], EMB_BF16, 16, EMB_OPT_ADAM,
      "adam_rows_d16_bf16_c", "adam_rows_d16_bf16_avx2", "adam_rows_d16_bf16_avx512"),
    E(ROWS, rows_d[1][EMB_OPT_ADAM][EMB_BF16], EMB_BF16, 32, EMB_OPT_ADAM,
      "adam_rows_d32_bf16_c", "adam_rows_d32_bf16_avx2", "adam_rows_d32_bf16_avx512"),
    E(ROWS, rows_d[2][EMB_OPT_ADAM][EMB_BF16], EMB_BF16, 64, EMB_OPT_ADAM,
      "adam_rows_d64_bf16_c", "adam_rows_d64_bf16_avx2", "adam_rows_d64_bf16_avx512"),
    E(ROWS, rows_d[3][EMB_OPT_ADAM][EMB_BF16], EMB_BF16, 128, EMB_OPT_ADAM,
      "adam_rows_d128_bf16_c", "adam_rows_d128_bf16_avx2", "adam_rows_d128_bf16_avx512"),
    E(ROWS, rows_d[4][EMB_OPT_ADAM][EMB_BF16], EMB_BF16, 256, EMB_OPT_ADAM,
      "adam_rows_d256_bf16_c", "adam_rows_d256_bf16_avx2", "adam_rows_d256_bf16_avx512"),
    E(ROWS, rows[EMB_OPT_FTRL][EMB_F32], EMB_F32, 0, EMB_OPT_FTRL, "ftrl_rows_f32_c", NULL, NULL),
    E(ROWS, rows_d[0][EMB_OPT_FTRL][EMB_F32], EMB_F32, 16, EMB_OPT_FTRL,
      "ftrl_rows_d16_f32_c", "ftrl_rows_d16_f32_avx2", "ftrl_rows_d16_f32_avx512"),
    E(ROWS, rows_d[1][EMB_OPT_FTRL][EMB_F32], EMB_F32, 32, EMB_OPT_FTRL,
      "ftrl_rows_d32_f32_c", "ftrl_rows_d32_f32_avx2", "ftrl_rows_d32_f32_avx512"),
    E(ROWS, rows_d[2][EMB_OPT_FTRL][EMB_F32], EMB_F32, 64, EMB_OPT_FTRL,
      "ftrl_rows_d64_f32_c", "ftrl_rows_d64_f32_avx2", "ftrl_rows_d64_f32_avx512"),
    E(ROWS, rows_d[3][EMB_OPT_FTRL][EMB_F32], EMB_F32, 128, EMB_OPT_FTRL,
      "ftrl_rows_d128_f32_c", "ftrl_rows_d128_f32_avx2", "ftrl_rows_d128_f32_avx512"),
    E(ROWS, rows_d[4][EMB_OPT_FTRL][EMB_F32], EMB_F32, 256, EMB_OPT_FTRL,
      "ftrl_rows_d256_f32_c", "ftrl_rows_d256_f32_avx2", "ftrl_rows_d256_f32_avx512"),
    E(ROWS, rows[EMB_OPT_FTRL][EMB_F16], EMB_F16, 0, EMB_OPT_FTRL, "ftrl_rows_f16_c", NULL, NULL),
    E(ROWS, rows_d[0][EMB_OPT_FTRL][EMB_F16], EMB_F16, 16, EMB_OPT_FTRL,
      "ftrl_rows_d16_f16_c", "ftrl_rows_d16_f16_avx2", "ftrl_rows_d16_f16_avx512"),
    E(ROWS, rows_d[1][EMB_OPT_FTRL][EMB_F16], EMB_F16, 32, EMB_OPT_FTRL,
      "ftrl_rows_d32_f16_c", "ftrl_rows_d32_f16_avx2", "ftrl_rows_d32_f16_avx512"),
    E(ROWS, rows_d[2][EMB_OPT_FTRL][EMB_F16], EMB_F16, 64, EMB_OPT_FTRL,
      "ftrl_rows_d64_f16_c", "ftrl_rows_d64_f16_avx2", "ftrl_rows_d64_f16_avx512"),
    E(ROWS, rows_d[3][EMB_OPT_FTRL][EMB_F16], EMB_F16, 128, EMB_OPT_FTRL,
      "ftrl_rows_d128_f16_c", "ftrl_rows_d128_f16_avx2", "ftrl_rows_d128_f16_avx512"),
    E(ROWS, rows_d[4][EMB_OPT_FTRL][EMB_F16], EMB_F16, 256, EMB_OPT_FTRL,
      "ftrl_rows_d256_f16_c", "ftrl_rows_d256_f16_avx2", "ftrl_rows_d256_f16_avx512"),
    E(ROWS, rows[EMB_OPT_FTRL][EMB_BF16], EMB_BF16, 0, EMB_OPT_FTRL, "ftrl_rows_bf16_c", NULL, NULL),
    E(ROWS, rows_d[0][EMB_OPT_FTRL][EMB_BF16], EMB_BF16, 16, EMB_OPT_FTRL,
      "ftrl_rows_d16_bf16_c", "ftrl_rows_d16_bf16_avx2", "ftrl_rows_d16_bf16_avx512"),
    E(ROWS, rows_d[1][EMB_OPT_FTRL][EMB_BF16], EMB_BF16, 32, EMB_OPT_FTRL,
      "ftrl_rows_d32_bf16_c", "ftrl_rows_d32_bf16_avx2", "ftrl_rows_d32_bf16_avx512"),
    E(ROWS, rows_d[2][EMB_OPT_FTRL][EMB_BF16], EMB_BF16, 64, EMB_OPT_FTRL,
      "ftrl_rows_d64_bf16_c", "ftrl_rows_d64_bf16_avx2", "ftrl_rows_d64_bf16_avx512"),
    E(ROWS, rows_d[3][EMB_OPT_FTRL][EMB_BF16], EMB_BF16, 128, EMB_OPT_FTRL,
      "ftrl_rows_d128_bf16_c", "ftrl_rows_d128_bf16_avx2", "ftrl_rows_d128_bf16_avx512"),
    E(ROWS, rows_d[4][EMB_OPT_FTRL][EMB_BF16], EMB_BF16, 256, EMB_OPT_FTRL,
      "ftrl_rows_d256_bf16_c", "ftrl_rows_d256_bf16_avx2", "ftrl_rows_d256_bf16_avx512"),

    /* row-wise quantized rows (quant_c.c, x86/quant_body.h) */
    E(GATHER, gather[EMB_INT8], EMB_INT8, 0, 0,
      "gather_int8_c", "gather_int8_avx2", "gather_int8_avx512"),
    E(GATHER, gather_d[0][EMB_INT8], EMB_INT8, 16, 0,
      "gather_d16_int8_c", "gather_d16_int8_avx2", "gather_d16_int8_avx512"),
    E(GATHER, gather_d[1][EMB_INT8], EMB_INT8, 32, 0,
      "gather_d32_int8_c", "gather_d32_int8_avx2", "gather_d32_int8_avx512"),
    E(GATHER, gather_d[2][EMB_INT8], EMB_INT8, 64, 0,
      "gather_d64_int8_c", "gather_d64_int8_avx2", "gather_d64_int8_avx512"),
    E(GATHER, gather_d[3][EMB_INT8], EMB_INT8, 128, 0,
      "gather_d128_int8_c", "gather_d128_int8_avx2", "gather_d128_int8_avx512"),
    E(GATHER, gather_d[4][EMB_INT8], EMB_INT8, 256, 0,
      "gather_d256_int8_c", "gather_d256_int8_avx2", "gather_d256_int8_avx512"),
    E(POOL, pool[EMB_INT8], EMB_INT8, 0, 0,
      "pool_int8_c", "pool_int8_avx2", "pool_int8_avx512"),
    E(POOL, pool_nt[EMB_INT8], EMB_INT8, 0, 0,
      "pool_int8_c", "pool_nt_int8_avx2", "pool_nt_int8_avx512"),
    E(POOL, pool_d[0][EMB_INT8], EMB_INT8, 16, 0,
      "pool_d16_int8_c", "pool_d16_int8_avx2", "pool_d16_int8_avx512"),
    E(POOL, pool_d[1][EMB_INT8], EMB_INT8, 32, 0,
      "pool_d32_int8_c", "pool_d32_int8_avx2", "pool_d32_int8_avx512"),
    E(POOL, pool_d[2][EMB_INT8], EMB_INT8, 64, 0,
      "pool_d64_int8_c", "pool_d64_int8_avx2", "pool_d64_int8_avx512"),
    E(POOL, pool_d[3][EMB_INT8], EMB_INT8, 128, 0,
      "pool_d128_int8_c", "pool_d128_int8_avx2", "pool_d128_int8_avx512"),
    E(POOL, pool_d[4][EMB_INT8], EMB_INT8, 256, 0,
      "pool_d256_int8_c", "pool_d256_int8_avx2", "pool_d256_int8_avx512"),
    E(BAGS, bags[EMB_INT8], EMB_INT8, 0, 0,
      "bags_int8_c", NULL, NULL),
    E(BAGS, bags_d[0][EMB_INT8], EMB_INT8, 16, 0,
      "bags_d16_int8_c", "bags_d16_int8_avx2", "bags_d16_int8_avx512"),
    E(BAGS, bags_d[1][EMB_INT8], EMB_INT8, 32, 0,
      "bags_d32_int8_c", "bags_d32_int8_avx2", "bags_d32_int8_avx512"),
    E(BAGS, bags_d[2][EMB_INT8], EMB_INT8, 64, 0,
      "bags_d64_int8_c", "bags_d64_int8_avx2", "bags_d64_int8_avx512"),
    E(BAGS, bags_d[3][EMB_INT8], EMB_INT8, 128, 0,
      "bags_d128_int8_c", "bags_d128_int8_avx2", "bags_d128_int8_avx512"),
    E(BAGS, bags_d[4][EMB_INT8], EMB_INT8, 256, 0,
      "bags_d256_int8_c", "bags_d256_int8_avx2", "bags_d256_int8_avx512"),
    E(SUMSQ, sumsq[EMB_INT8], EMB_INT8, 0, 0,
      "sumsq_int8_c", "sumsq_int8_avx2", "sumsq_int8_avx512"),
    E(REQUANT, requant[EMB_INT8], EMB_INT8, 0, 0,
      "requant_int8_c", "requant_int8_avx2", "requant_int8_avx512"),
    E(REQUANT, requant[EMB_F16], EMB_F16, 0, 0,
      "requant_f16_c", "requant_f16_avx2", "requant_f16_avx512"),
    E(REQUANT, requant[EMB_BF16], EMB_BF16, 0, 0,
      "requant_bf16_c", "requant_bf16_avx2", "requant_bf16_avx512"),

    E(GATHER, gather[EMB_INT4], EMB_INT4, 0, 0,
      "gather_int4_c", "gather_int4_avx2", "gather_int4_avx512"),
    E(GATHER, gather_d[0][EMB_INT4], EMB_INT4, 16, 0,
      "gather_d16_int4_c", "gather_d16_int4_avx2", "gather_d16_int4_avx512"),
    E(GATHER, gather_d[1][EMB_INT4], EMB_INT4, 32, 0,
      "gather_d32_int4_c", "gather_d32_int4_avx2", "gather_d32_int4_avx512"),
    E(GATHER, gather_d[2][EMB_INT4], EMB_INT4, 64, 0,
      "gather_d64_int4_c", "gather_d64_int4_avx2", "gather_d64_int4_avx512"),
    E(GATHER, gather_d[3][EMB_INT4], EMB_INT4, 128, 0,
      "gather_d128_int4_c", "gather_d128_int4_avx2", "gather_d128_int4_avx512"),
    E(GATHER, gather_d[4][EMB_INT4], EMB_INT4, 256, 0,
      "gather_d256_int4_c", "gather_d256_int4_avx2", "gather_d256_int4_avx512"),
    E(POOL, pool[EMB_INT4], EMB_INT4, 0, 0,
      "pool_int4_c", "pool_int4_avx2", "pool_int4_avx512"),
    E(POOL, pool_nt[EMB_INT4], EMB_INT4, 0, 0,
      "pool_int4_c", "pool_nt_int4_avx2", "pool_nt_int4_avx512"),
    E(POOL, pool_d[0][EMB_INT4], EMB_INT4, 16, 0,
      "pool_d16_int4_c", "pool_d16_int4_avx2", "pool_d16_int4_avx512"),
    E(POOL, pool_d[1][EMB_INT4], EMB_INT4, 32, 0,
      "pool_d32_int4_c", "pool_d32_int4_avx2", "pool_d32_int4_avx512"),
    E(POOL, pool_d[2][EMB_INT4], EMB_INT4, 64, 0,
      "pool_d64_int4_c", "pool_d64_int4_avx2", "pool_d64_int4_avx512"),
    E(POOL, pool_d[3][EMB_INT4], EMB_INT4, 128, 0,
      "pool_d128_int4_c", "pool_d128_int4_avx2", "pool_d128_int4_avx512"),
    E(POOL, pool_d[4][EMB_INT4], EMB_INT4, 256, 0,
      "pool_d256_int4_c", "pool_d256_int4_avx2", "pool_d256_int4_avx512"),
    E(BAGS, bags[EMB_INT4], EMB_INT4, 0, 0,
      "bags_int4_c", NULL, NULL),
    E(BAGS, bags_d[0][EMB_INT4], EMB_INT4, 16, 0,
      "bags_d16_int4_c", "bags_d16_int4_avx2", "bags_d16_int4_avx512"),
    E(BAGS, bags_d[1][EMB_INT4], EMB_INT4, 32, 0,
      "bags_d32_int4_c", "bags_d32_int4_avx2", "bags_d32_int4_avx512"),
    E(BAGS, bags_d[2][EMB_INT4], EMB_INT4, 64, 0,
      "bags_d64_int4_c", "bags_d64_int4_avx2", "bags_d64_int4_avx512"),
    E(BAGS, bags_d[3][EMB_INT4], EMB_INT4, 128, 0,
      "bags_d128_int4_c", "bags_d128_int4_avx2", "bags_d128_int4_avx512"),
    E(BAGS, bags_d[4][EMB_INT4], EMB_INT4, 256, 0,
      "bags_d256_int4_c", "bags_d256_int4_avx2", "bags_d256_int4_avx512"),
    E(SUMSQ, sumsq[EMB_INT4], EMB_INT4, 0, 0,
      "sumsq_int4_c", "sumsq_int4_avx2", "sumsq_int4_avx512"),
    E(REQUANT, requant[EMB_INT4], EMB_INT4, 0, 0,
      "requant_int4_c", "requant_int4_avx2", "requant_int4_avx512"),

    E(SCALE, scale, EMB_F32, 0, 0,
      "scale_c", "scale_avx2", "scale_avx512"),

    E(OPT, opt_row[EMB_OPT_ADAGRAD][EMB_F32], EMB_F32, 0, EMB_OPT_ADAGRAD,
      "adagrad_f32_c", "adagrad_f32_avx2", "adagrad_f32_avx512"),
    E(OPT, opt_row_nt[EMB_OPT_ADAGRAD][EMB_F32], EMB_F32, 0, EMB_OPT_ADAGRAD,
      "adagrad_f32_c", "adagrad_nt_f32_avx2", "adagrad_nt_f32_avx512"),
    E(OPT, opt_row_d[0][EMB_OPT_ADAGRAD][EMB_F32], EMB_F32, 16, EMB_OPT_ADAGRAD,
      "adagrad_d16_f32_c", "adagrad_d16_f32_avx2", "adagrad_d16_f32_avx512"),
    E(OPT, opt_row_d[1][EMB_OPT_ADAGRAD][EMB_F32], EMB_F32, 32, EMB_OPT_ADAGRAD,
      "adagrad_d32_f32_c", "adagrad_d32_f32_avx2", "adagrad_d32_f32_avx512"),
    E(OPT, opt_row_d[2][EMB_OPT_ADAGRAD][EMB_F32], EMB_F32, 64, EMB_OPT_ADAGRAD,
      "adagrad_d64_f32_c", "adagrad_d64_f32_avx2", "adagrad_d64_f32_avx512"),
    E(OPT, opt_row_d[3][EMB_OPT_ADAGRAD][EMB_F32], EMB_F32, 128, EMB_OPT_ADAGRAD,
      "adagrad_d128_f32_c", "adagrad_d128_f32_avx2", "adagrad_d128_f32_avx512"),
    E(OPT, opt_row_d[4][EMB_OPT_ADAGRAD][EMB_F32], EMB_F32, 256, EMB_OPT_ADAGRAD,
      "adagrad_d256_f32_c", "adagrad_d256_f32_avx2", "adagrad_d256_f32_avx512"),
    E(OPT, opt_row[EMB_OPT_ADAGRAD][EMB_F16], EMB_F16, 0, EMB_OPT_ADAGRAD,
      "adagrad_f16_c", "adagrad_f16_avx2", "adagrad_f16_avx512"),
    E(OPT, opt_row_nt[EMB_OPT_ADAGRAD][EMB_F16], EMB_F16, 0, EMB_OPT_ADAGRAD,
      "adagrad_f16_c", "adagrad_nt_f16_avx2", "adagrad_nt_f16_avx512"),
    E(OPT, opt_row_d[0][EMB_OPT_ADAGRAD][EMB_F16], EMB_F16, 16, EMB_OPT_ADAGRAD,
      "adagrad_d16_f16_c", "adagrad_d16_f16_avx2", "adagrad_d16_f16_avx512"),
    E(OPT, opt_row_d[1][EMB_OPT_ADAGRAD][EMB_F16], EMB_F16, 32, EMB_OPT_ADAGRAD,
      "adagrad_d32_f16_c", "adagrad_d32_f16_avx2", "adagrad_d32_f16_avx512"),
    E(OPT, opt_row_d[2][EMB_OPT_ADAGRAD][EMB_F16], EMB_F16, 64, EMB_OPT_ADAGRAD,
      "adagrad_d64_f16_c", "adagrad_d64_f16_avx2", "adagrad_d64_f16_avx512"),
    E(OPT, opt_row_d[3][EMB_OPT_ADAGRAD][EMB_F16], EMB_F16, 128, EMB_OPT_ADAGRAD,
      "adagrad_d128_f16_c", "adagrad_d128_f16_avx2", "adagrad_d128_f16_avx512"),
    E(OPT, opt_row_d[4][EMB_OPT_ADAGRAD][EMB_F16], EMB_F16, 256, EMB_OPT_ADAGRAD,
      "adagrad_d256_f16_c", "adagrad_d256_f16_avx2", "adagrad_d256_f16_avx512"),
    E(OPT, opt_row[EMB_OPT_ADAGRAD][EMB_BF16], EMB_BF16, 0, EMB_OPT_ADAGRAD,
      "adagrad_bf16_c", "adagrad_bf16_avx2", "adagrad_bf16_avx512"),
    E(OPT, opt_row_nt[EMB_OPT_ADAGRAD][EMB_BF16], EMB_BF16, 0, EMB_OPT_ADAGRAD,
      "adagrad_bf16_c", "adagrad_nt_bf16_avx2", "adagrad_nt_bf16_avx512"),
    E(OPT, opt_row_d[0][EMB_OPT_ADAGRAD][EMB_BF16], EMB_BF16, 16, EMB_OPT_ADAGRAD,
      "adagrad_d16_bf16_c", "adagrad_d16_bf16_avx2", "adagrad_d16_bf16_avx512"),
    E(OPT, opt_row_d[1][EMB_OPT_ADAGRAD][EMB_BF16], EMB_BF16, 32, EMB_OPT_ADAGRAD,
      "adagrad_d32_bf16_c", "adagrad_d32_bf16_avx2", "adagrad_d32_bf16_avx512"),
    E(OPT, opt_row_d[2][EMB_OPT_ADAGRAD][EMB_BF16], EMB_BF16, 64, EMB_OPT_ADAGRAD,
      "adagrad_d64_bf16_c", "adagrad_d64_bf16_avx2", "adagrad_d64_bf16_avx512"),
    E(OPT, opt_row_d[3][EMB_OPT_ADAGRAD][EMB_BF16], EMB_BF16, 128, EMB_OPT_ADAGRAD,
      "adagrad_d128_bf16_c", "adagrad_d128_bf16_avx2", "adagrad_d128_bf16_avx512"),
    E(OPT, opt_row_d[4][EMB_OPT_ADAGRAD][EMB_BF16], EMB_BF16, 256, EMB_OPT_ADAGRAD,
      "adagrad_d256_bf16_c", "adagrad_d256_bf16_avx2", "adagrad_d256_bf16_avx512"),
    E(OPT, opt_row[EMB_OPT_ROWWISE_ADAGRAD][EMB_F32], EMB_F32, 0, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_f32_c", "rowwise_f32_avx2", "rowwise_f32_avx512"),
    E(OPT, opt_row_nt[EMB_OPT_ROWWISE_ADAGRAD][EMB_F32], EMB_F32, 0, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_f32_c", "rowwise_nt_f32_avx2", "rowwise_nt_f32_avx512"),
    E(OPT, opt_row_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32], EMB_F32, 16, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_d16_f32_c", "rowwise_d16_f32_avx2", "rowwise_d16_f32_avx512"),
    E(OPT, opt_row_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32], EMB_F32, 32, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_d32_f32_c", "rowwise_d32_f32_avx2", "rowwise_d32_f32_avx512"),
    E(OPT, opt_row_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32], EMB_F32, 64, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_d64_f32_c", "rowwise_d64_f32_avx2", "rowwise_d64_f32_avx512"),
    E(OPT, opt_row_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32], EMB_F32, 128, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_d128_f32_c", "rowwise_d128_f32_avx2", "rowwise_d128_f32_avx512"),
    E(OPT, opt_row_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_F32], EMB_F32, 256, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_d256_f32_c", "rowwise_d256_f32_avx2", "rowwise_d256_f32_avx512"),
    E(OPT, opt_row[EMB_OPT_ROWWISE_ADAGRAD][EMB_F16], EMB_F16, 0, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_f16_c", "rowwise_f16_avx2", "rowwise_f16_avx512"),
    E(OPT, opt_row_nt[EMB_OPT_ROWWISE_ADAGRAD][EMB_F16], EMB_F16, 0, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_f16_c", "rowwise_nt_f16_avx2", "rowwise_nt_f16_avx512"),
    E(OPT, opt_row_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16], EMB_F16, 16, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_d16_f16_c", "rowwise_d16_f16_avx2", "rowwise_d16_f16_avx512"),
    E(OPT, opt_row_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16], EMB_F16, 32, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_d32_f16_c", "rowwise_d32_f16_avx2", "rowwise_d32_f16_avx512"),
    E(OPT, opt_row_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16], EMB_F16, 64, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_d64_f16_c", "rowwise_d64_f16_avx2", "rowwise_d64_f16_avx512"),
    E(OPT, opt_row_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16], EMB_F16, 128, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_d128_f16_c", "rowwise_d128_f16_avx2", "rowwise_d128_f16_avx512"),
    E(OPT, opt_row_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_F16], EMB_F16, 256, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_d256_f16_c", "rowwise_d256_f16_avx2", "rowwise_d256_f16_avx512"),
    E(OPT, opt_row[EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16], EMB_BF16, 0, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_bf16_c", "rowwise_bf16_avx2", "rowwise_bf16_avx512"),
    E(OPT, opt_row_nt[EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16], EMB_BF16, 0, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_bf16_c", "rowwise_nt_bf16_avx2", "rowwise_nt_bf16_avx512"),
    E(OPT, opt_row_d[0][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16], EMB_BF16, 16, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_d16_bf16_c", "rowwise_d16_bf16_avx2", "rowwise_d16_bf16_avx512"),
    E(OPT, opt_row_d[1][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16], EMB_BF16, 32, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_d32_bf16_c", "rowwise_d32_bf16_avx2", "rowwise_d32_bf16_avx512"),
    E(OPT, opt_row_d[2][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16], EMB_BF16, 64, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_d64_bf16_c", "rowwise_d64_bf16_avx2", "rowwise_d64_bf16_avx512"),
    E(OPT, opt_row_d[3][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16], EMB_BF16, 128, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_d128_bf16_c", "rowwise_d128_bf16_avx2", "rowwise_d128_bf16_avx512"),
    E(OPT, opt_row_d[4][EMB_OPT_ROWWISE_ADAGRAD][EMB_BF16], EMB_BF16, 256, EMB_OPT_ROWWISE_ADAGRAD,
      "rowwise_d256_bf16_c", "rowwise_d256_bf16_avx2", "rowwise_d256_bf16_avx512"),
    E(OPT, opt_row[EMB_OPT_FTRL][EMB_F32], EMB_F32, 0, EMB_OPT_FTRL,
      "ftrl_f32_c", NULL, NULL),
    E(OPT, opt_row_nt[EMB_OPT_FTRL][EMB_F32], EMB_F32, 0, EMB_OPT_FTRL,
      "ftrl_f32_c", NULL, NULL),
    E(OPT, opt_row_d[0][EMB_OPT_FTRL][EMB_F32], EMB_F32, 16, EMB_OPT_FTRL,
      "ftrl_d16_f32_c", NULL, NULL),
    E(OPT, opt_row_d[1][EMB_OPT_FTRL][EMB_F32], EMB_F32, 32, EMB_OPT_FTRL,
      "ftrl_d32_f32_c", NULL, NULL),
    E(OPT, opt_row_d[2][EMB_OPT_FTRL][EMB_F32], EMB_F32, 64, EMB_OPT_FTRL,
      "ftrl_d64_f32_c", NULL, NULL),
    E(OPT, opt_row_d[3][EMB_OPT_FTRL][EMB_F32], EMB_F32, 128, EMB_OPT_FTRL,
      "ftrl_d128_f32_c", NULL, NULL),
    E(OPT, opt_row_d[4][EMB_OPT_FTRL][EMB_F32], EMB_F32, 256, EMB_OPT_FTRL,
      "ftrl_d256_f32_c", NULL, NULL),
    E(OPT, opt_row[EMB_OPT_FTRL][EMB_F16], EMB_F16, 0, EMB_OPT_FTRL,
      "ftrl_f16_c", NULL, NULL),
    E(OPT, opt_row_nt[EMB_OPT_FTRL][EMB_F16], EMB_F16, 0, EMB_OPT_FTRL,
      "ftrl_f16_c", NULL, NULL),
    E(OPT, opt_row_d[0][EMB_OPT_FTRL][EMB_F16], EMB_F16, 16, EMB_OPT_FTRL,
      "ftrl_d16_f16_c", NULL, NULL),
    E(OPT, opt_row_d[1][EMB_OPT_FTRL][EMB_F16], EMB_F16, 32, EMB_OPT_FTRL,
      "ftrl_d32_f16_c", NULL, NULL),
    E(OPT, opt_row_d[2][EMB_OPT_FTRL][EMB_F16], EMB_F16, 64, EMB_OPT_FTRL,
      "ftrl_d64_f16_c", NULL, NULL),
    E(OPT, opt_row_d[3][EMB_OPT_FTRL][EMB_F16], EMB_F16, 128, EMB_OPT_FTRL,
      "ftrl_d128_f16_c", NULL, NULL),
    E(OPT, opt_row_d[4][EMB_OPT_FTRL][EMB_F16], EMB_F16, 256, EMB_OPT_FTRL,
      "ftrl_d256_f16_c", NULL, NULL),
    E(OPT, opt_row[EMB_OPT_FTRL][EMB_BF16], EMB_BF16, 0, EMB_OPT_FTRL,
      "ftrl_bf16_c", NULL, NULL),
    E(OPT, opt_row_nt[EMB_OPT_FTRL][EMB_BF16], EMB_BF16, 0, EMB_OPT_FTRL,
      "ftrl_bf16_c", NULL, NULL),
    E(OPT, opt_row_d[0][EMB_OPT_FTRL][EMB_BF16], EMB_BF16, 16, EMB_OPT_FTRL,
      "ftrl_d16_bf16_c", NULL, NULL),
    E(OPT, opt_row_d[1][EMB_OPT_FTRL][EMB_BF16], EMB_BF16, 32, EMB_OPT_FTRL,
      "ftrl_d32_bf16_c", NULL, NULL),
    E(OPT, opt_row_d[2][EMB_OPT_FTRL][EMB_BF16], EMB_BF16, 64, EMB_OPT_FTRL,
      "ftrl_d64_bf16_c", NULL, NULL),
    E(OPT, opt_row_d[3][EMB_OPT_FTRL][EMB_BF16], EMB_BF16, 128, EMB_OPT_FTRL,
      "ftrl_d128_bf16_c", NULL, NULL),
    E(OPT, opt_row_d[4][EMB_OPT_FTRL][EMB_BF16], EMB_BF16, 256, EMB_OPT_FTRL,
      "ftrl_d256_bf16_c", NULL, NULL),
    E(OPT, opt_row[EMB_OPT_ADAM][EMB_F32], EMB_F32, 0, EMB_OPT_ADAM,
      "adam_f32_c", "adam_f32_avx2", "adam_f32_avx512"),
    E(OPT, opt_row_nt[EMB_OPT_ADAM][EMB_F32], EMB_F32, 0, EMB_OPT_ADAM,
      "adam_f32_c", "adam_nt_f32_avx2", "adam_nt_f32_avx512"),
    E(OPT, opt_row_d[0][EMB_OPT_ADAM][EMB_F32], EMB_F32, 16, EMB_OPT_ADAM,
      "adam_d16_f32_c", "adam_d16_f32_avx2", "adam_d16_f32_avx512"),
    E(OPT, opt_row_d[1][EMB_OPT_ADAM][EMB_F32], EMB_F32, 32, EMB_OPT_ADAM,
      "adam_d32_f32_c", "adam_d32_f32_avx2", "adam_d32_f32_avx512"),
    E(OPT, opt_row_d[2][EMB_OPT_ADAM][EMB_F32], EMB_F32, 64, EMB_OPT_ADAM,
      "adam_d64_f32_c", "adam_d64_f32_avx2", "adam_d64_f32_avx512"),
    E(OPT, opt_row_d[3][EMB_OPT_ADAM][EMB_F32], EMB_F32, 128, EMB_OPT_ADAM,
      "adam_d128_f32_c", "adam_d128_f32_avx2", "adam_d128_f32_avx512"),
    E(OPT, opt_row_d[4][EMB_OPT_ADAM][EMB_F32], EMB_F32, 256, EMB_OPT_ADAM,
      "adam_d256_f32_c", "adam_d256_f32_avx2", "adam_d256_f32_avx512"),
    E(OPT, opt_row[EMB_OPT_ADAM][EMB_F16], EMB_F16, 0, EMB_OPT_ADAM,
      "adam_f16_c", "adam_f16_avx2", "adam_f16_avx512"),
    E(OPT, opt_row_nt[EMB_OPT_ADAM][EMB_F16], EMB_F16, 0, EMB_OPT_ADAM,
      "adam_f16_c", "adam_nt_f16_avx2", "adam_nt_f16_avx512"),
    E(OPT, opt_row_d[0][EMB_OPT_ADAM][EMB_F16], EMB_F16, 16, EMB_OPT_ADAM,
      "adam_d16_f16_c", "adam_d16_f16_avx2", "adam_d16_f16_avx512"),
    E(OPT, opt_row_d[1][EMB_OPT_ADAM][EMB_F16], EMB_F16, 32, EMB_OPT_ADAM,
      "adam_d32_f16_c", "adam_d32_f16_avx2", "adam_d32_f16_avx512"),
    E(OPT, opt_row_d[2][EMB_OPT_ADAM][EMB_F16], EMB_F16, 64, EMB_OPT_ADAM,
      "adam_d64_f16_c", "adam_d64_f16_avx2", "adam_d64_f16_avx512"),
    E(OPT, opt_row_d[3][EMB_OPT_ADAM][EMB_F16], EMB_F16, 128, EMB_OPT_ADAM,
      "adam_d128_f16_c", "adam_d128_f16_avx2", "adam_d128_f16_avx512"),
    E(OPT, opt_row_d[4][EMB_OPT_ADAM][EMB_F16], EMB_F16, 256, EMB_OPT_ADAM,
      "adam_d256_f16_c", "adam_d256_f16_avx2", "adam_d256_f16_avx512"),
    E(OPT, opt_row[EMB_OPT_ADAM][EMB_BF16], EMB_BF16, 0, EMB_OPT_ADAM,
      "adam_bf16_c", "adam_bf16_avx2", "adam_bf16_avx512"),
    E(OPT, opt_row_nt[EMB_OPT_ADAM][EMB_BF16], EMB_BF16, 0, EMB_OPT_ADAM,
      "adam_bf16_c", "adam_nt_bf16_avx2", "adam_nt_bf16_avx512"),
    E(OPT, opt_row_d[0][EMB_OPT_ADAM][EMB_BF16], EMB_BF16, 16, EMB_OPT_ADAM,
      "adam_d16_bf16_c", "adam_d16_bf16_avx2", "adam_d16_bf16_avx512"),
    E(OPT, opt_row_d[1][EMB_OPT_ADAM][EMB_BF16], EMB_BF16, 32, EMB_OPT_ADAM,
      "adam_d32_bf16_c", "adam_d32_bf16_avx2", "adam_d32_bf16_avx512"),
    E(OPT, opt_row_d[2][EMB_OPT_ADAM][EMB_BF16], EMB_BF16, 64, EMB_OPT_ADAM,
      "adam_d64_bf16_c", "adam_d64_bf16_avx2", "adam_d64_bf16_avx512"),
    E(OPT, opt_row_d[3][EMB_OPT_ADAM][EMB_BF16], EMB_BF16, 128, EMB_OPT_ADAM,
      "adam_d128_bf16_c", "adam_d128_bf16_avx2", "adam_d128_bf16_avx512"),
    E(OPT, opt_row_d[4][EMB_OPT_ADAM][EMB_BF16], EMB_BF16, 256, EMB_OPT_ADAM,
      "adam_d256_bf16_c", "adam_d256_bf16_avx2", "adam_d256_bf16_avx512"),

};
#define NENTRIES (sizeof entries / sizeof *entries)

static void (*slot_of(const EmbKernels *k, const Entry *e))(void)
{
    void (*f)(void);
    memcpy(&f, (const char *)k + e->slot, sizeof f);
    return f;
}

/* Entry @e of level @lv against the C reference of its family, at (d->D, d->dt). */
static void check_entry(const Level *lv, int l, const EmbKernels *r, const Entry *e, Data *d,
                        uint64_t *s)
{
    const EmbKernels *k = &lv->k;
    const int dt = d->dt;
    Ctx c = {lv->name, e->name[l], "", dt, d->D, 1};
    switch (e->family) {
    case GATHER:
    case POOL:
    case POOLMAX:
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
            c.n = lens[li];
            data_bag(d, s);
            if (e->family == GATHER)
                check_gather(&c, d, r->gather[dt], (emb_gather_fn)slot_of(k, e), s);
            else if (e->family == POOLMAX)
                check_pool_max(&c, d, r->pool_max[dt], (emb_pool_fn)slot_of(k, e), s);
            else
                check_pool(&c, d, r->pool[dt], (emb_pool_fn)slot_of(k, e), s);
            emb__sfence();
        }
        break;
    case IDMAX: check_idmax(&c, r->idmax, (emb_idmax_fn)slot_of(k, e), s); break;
    case BAGS: check_bags(&c, d, r->bags[dt], (emb_bags_fn)slot_of(k, e), 0, s); break;
    case BAGSMAX: check_bags(&c, d, r->bags_max[dt], (emb_bags_fn)slot_of(k, e), 1, s); break;
    case SUMSQ:
        data_bag(d, s);
        check_sumsq(&c, d, r->sumsq[dt], (emb_sumsq_fn)slot_of(k, e));
        break;
    case SGD: check_sgd(&c, d, r->sgd_row[dt], (emb_sgd_row_fn)slot_of(k, e), s); break;
    case ROWS: check_rows(&c, d, r, e->kind, (emb_rows_fn)slot_of(k, e), s); break;
    case SCALE: check_scale(&c, d, r->scale, (emb_scale_fn)slot_of(k, e), s); break;
    case OPT:
        check_opt(&c, d, e->kind, r->opt_row[e->kind][dt], (emb_opt_row_fn)slot_of(k, e), s);
        break;
    case REQUANT: check_requant(&c, d, r->requant[dt], (emb_requant_fn)slot_of(k, e), s); break;
    }
}

/* Every kernel this level registers, at every D (static sizes at theirs) and dtype. */
static void check_level(const Level *levels, int l, Data *d, uint64_t *s)
{
    for (size_t di = 0; di < sizeof dims / sizeof *dims; di++)
        for (int dt = 0; dt < EMB_NDTYPES; dt++) {
            d->dt = dt;
            d->D = dims[di];
            if (emb__dtype_quantized((EmbDtype)dt)) {
                if (!emb_dtype_row_bytes((EmbDtype)dt, d->D))
                    continue; /* int4: even D only */
                d->esize = 1;
                d->colbytes = emb_dtype_row_bytes((EmbDtype)dt, d->D) + 3;
                ca_fill_rows(d->store, (EmbDtype)dt, d->D, NCOLS + 1, (int64_t)d->colbytes, s);
            } else {
                d->esize = emb_dtype_size((EmbDtype)dt);
                d->colbytes = ((size_t)d->D + 3) * d->esize;
                ca_fill(d->store, (EmbDtype)dt, (int64_t)NCOLS * (d->D + 3) + 3, s);
            }
            for (size_t i = 0; i < NENTRIES; i++) {
                const Entry *e = &entries[i];
                if (e->name[l] && e->dt == dt && (!e->size || e->size == d->D))
                    check_entry(&levels[l], l, &levels[LEVEL_C].k, e, d, s);
            }
        }
}

/* Slots of @k that differ from @below: the variants this level adds (all, below NULL). */
static int count_new(const EmbKernels *k, const EmbKernels *below)
{
    static const EmbKernels none;
    const unsigned char *a = (const unsigned char *)k;
    const unsigned char *b = (const unsigned char *)(below ? below : &none);
    const size_t slot = sizeof(emb_pool_fn);
    int n = 0;
    for (size_t i = 0; i + slot <= sizeof *k; i += slot)
        n += memcmp(a + i, b + i, slot) != 0;
    return n;
}

/* The list above is the table: level @l registers exactly the entries named for it, and
 * nothing else. Returns the count of its new slots. */
static int check_names(const Level *levels, int l)
{
    const Level *lv = &levels[l];
    const EmbKernels *below = l ? &levels[l - 1].k : NULL;
    int named = 0;
    for (size_t i = 0; i < NENTRIES; i++) {
        const Entry *e = &entries[i];
        const int added = slot_of(&lv->k, e) && (!below || slot_of(&lv->k, e) != slot_of(below, e));
        named += e->name[l] != NULL;
        checks++;
        if (added != (e->name[l] != NULL)) {
            Ctx c = {lv->name, e->name[l] ? e->name[l] : e->name[LEVEL_C], "", e->dt, e->size, 0};
            report(&c, e->name[l] ? "named here, not registered" : "registered, not named", i);
        }
    }
    const int added = count_new(&lv->k, below);
    checks++;
    if (added != named) {
        Ctx c = {lv->name, "table", "", 0, 0, 0};
        report(&c, "a registered kernel is missing from checkasm's list", (size_t)added);
    }
    return added;
}

/* The dispatch table follows the mask: 0 gives the C references, all flags the best. */
static void check_dispatch(const Level *levels)
{
    Ctx c = {"dispatch", "mask", "", EMB_F32, 64, 0};
    const unsigned saved = emb_cpu_flags();
    emb_set_cpu_mask(0);
    checks++;
    if (emb__kernels()->pool[EMB_F32] != levels[LEVEL_C].k.pool[EMB_F32] ||
        emb__kernel_pool(EMB_F32, 64, 0) != levels[LEVEL_C].k.pool_d[2][EMB_F32] ||
        emb__kernel_pool(EMB_F32, 65, 0) != levels[LEVEL_C].k.pool[EMB_F32])
        report(&c, "mask 0 does not select the C pool", 0);
    /* a library's entries need every feature it is compiled for: AVX2 (+ FMA) or AVX-512
       with F16C masked (a VM may hide it) select no SIMD entry at all (issue: SIGILL) */
    static const unsigned no_f16c[2] = {EMB_CPU_AVX2, EMB_CPU_AVX2 | EMB_CPU_AVX512};
    for (int m = 0; m < 2; m++) {
        emb_set_cpu_mask(no_f16c[m]);
        checks++;
        if (memcmp(emb__kernels(), &levels[LEVEL_C].k, sizeof levels[LEVEL_C].k) != 0)
            report(&c, "a mask without F16C selects an entry of a library built with -mf16c", m);
    }
    emb_set_cpu_mask(~0u);
    const Level *best = &levels[LEVEL_C];
    for (int l = 0; l < NLEVELS; l++)
        best = levels[l].available ? &levels[l] : best;
    checks++;
    if (emb__kernel_pool(EMB_F32, 64, 0) != best->k.pool_d[2][EMB_F32])
        report(&c, "D = 64 does not select the best _d64 pool", 0);
    emb_set_cpu_mask(saved);
}

static int run_checks(const Level *levels, uint64_t seed)
{
    Data d;
    const size_t outn = (size_t)MAXLEN * (MAXD + 3) + PAD;
    d.store = malloc(((size_t)NCOLS * (MAXD + 3) + 8) * sizeof(float));
    const size_t outbytes = ((outn + 16) * sizeof(float) + 63) & ~(size_t)63;
    d.out_ref = aligned_alloc(64, outbytes);
    d.out_got = aligned_alloc(64, outbytes);
    if (!d.store || !d.out_ref || !d.out_got) {
        fprintf(stderr, "checkasm: out of memory\n");
        return 2;
    }
    for (int l = 0; l < NLEVELS; l++) {
        if (!levels[l].available) {
            printf("  %-7s skipped (not on this CPU or not built)\n", levels[l].name);
            continue;
        }
        const int before = failures;
        const long c0 = checks;
        uint64_t s = seed + (uint64_t)l;
        const int added = check_names(levels, l);
        check_level(levels, l, &d, &s);
        printf("  %-7s %3d kernels registered, %6ld comparisons: %s\n", levels[l].name, added,
               checks - c0, failures == before ? "ok" : "FAILED");
    }
    check_dispatch(levels);
    free(d.store);
    free(d.out_ref);
    free(d.out_got);
    printf("checkasm: %ld comparisons, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
    int bench = 0;
    int64_t cold = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--bench"))
            bench = 1;
        else if (!strcmp(argv[i], "--cold") && i + 1 < argc)
            cold = strtoll(argv[++i], NULL, 0);
        else {
            fprintf(stderr, "usage: %s [--seed N] [--bench] [--cold MiB]\n", argv[0]);
            return 2;
        }
    }
    static Level levels[NLEVELS];
    ca_levels_init(levels);
    printf("checkasm: seed %llu (replay with --seed %llu), cpu flags 0x%x\n",
           (unsigned long long)seed, (unsigned long long)seed, emb_cpu_detected());
    if (cold)
        return ca_cold(cold, seed);
    if (bench)
        return ca_bench(levels, seed);
    return run_checks(levels, seed);
}
