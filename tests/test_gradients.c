/* SPDX-License-Identifier: BSD-2-Clause */
/* test_gradients.c — the exact pullback of every pooling (SUM / MEAN / SQRTN / NONE ×
 * weights × max_norm × default fill × pruning) against central finite differences, in
 * double precision, of the scalar loss L = Σ r·y (r random) through a double reference of
 * the forward; the reference itself is checked against emb_lookup. Internal functions:
 * linked with embtables_internal_dep. */
#include <stdio.h>

#include <criterion/criterion.h>

#include "update/pullback.h"
#include "test_util.h"

enum { NCOL = 12, D = 5, NBAGS = 8, MAXNNZ = 48 };

typedef struct Case {
    int64_t ids[MAXNNZ], offsets[NBAGS + 1];
    float w[MAXNNZ];
    EmbBatch b;
    EmbPooling p;
    double r[NBAGS * D]; /* the loss's random weights */
} Case;

/* A ragged batch: bag 0 empty, bag 1 of invalid ids only (kept valid when not pruning),
 * duplicates likely, some weights <= 0. NONE: bags of one id. */
static void make_case(Case *cs, EmbPooling p, bool weights, uint64_t seed)
{
    const bool prune = p.flags & EMB_PRUNE_INVALID;
    int64_t nnz = 0;
    cs->offsets[0] = 0;
    for (int bag = 0; bag < NBAGS; bag++) {
        int len = p.combiner == EMB_COMBINER_NONE ? 1 : bag == 0 ? 0 : (int)(tu_rand(&seed) % 6);
        for (int k = 0; k < len; k++, nnz++) {
            int64_t id = (int64_t)(tu_rand(&seed) % (NCOL + 1)) - 1;
            if (bag == 1)
                id = -1 - k;
            cs->ids[nnz] = id < 0 && !prune ? (nnz * 5) % NCOL : id;
            cs->w[nnz] = nnz % 5 == 3 ? (float)(nnz % 2) * -0.5f : tu_randf(&seed) * 0.7f + 0.8f;
        }
        cs->offsets[bag + 1] = nnz;
    }
    cs->b =
        (EmbBatch){.ids = cs->ids, .nnz = nnz, .nbags = NBAGS, .weights = weights ? cs->w : NULL};
    if (p.combiner == EMB_COMBINER_NONE)
        cs->b.bag_size = 1;
    else
        cs->b.offsets = cs->offsets;
    cs->p = p;
    for (int i = 0; i < NBAGS * D; i++)
        cs->r[i] = tu_randf(&seed);
}

/* acc += wk · clip(x) in double. */
static void add_clipped(double *acc, const double *x, double wk, double c)
{
    double n2 = 0;
    for (int i = 0; i < D; i++)
        n2 += x[i] * x[i];
    const double f = c > 0 && n2 > c * c ? c / sqrt(n2) : 1;
    for (int i = 0; i < D; i++)
        acc[i] += wk * f * x[i];
}

/* The forward in double (lookup.h's semantics) for table X (NCOL x D), into y. */
static void ref_forward(const double *X, const Case *cs, double *y)
{
    const EmbBatch *b = &cs->b;
    const EmbPooling *p = &cs->p;
    for (int bag = 0; bag < NBAGS; bag++) {
        double *yb = y + bag * D, sw = 0, sw2 = 0;
        int kept = 0;
        memset(yb, 0, D * sizeof *yb);
        const int64_t k0 = b->offsets ? b->offsets[bag] : bag,
                      k1 = b->offsets ? b->offsets[bag + 1] : bag + 1;
        for (int64_t k = k0; k < k1; k++) {
            const int64_t id = cs->ids[k];
            const double wk = b->weights ? b->weights[k] : 1;
            if ((id < 0 && (p->flags & EMB_PRUNE_INVALID)) ||
                (b->weights && (p->flags & EMB_PRUNE_NONPOSITIVE_WEIGHTS) && !(wk > 0)))
                continue;
            add_clipped(yb, X + id * D, wk, p->max_norm);
            sw += wk;
            sw2 += wk * wk;
            kept++;
        }
        if (!kept) {
            if (p->flags & EMB_USE_DEFAULT_ID)
                add_clipped(yb, X + p->default_id * D, 1, p->max_norm);
            continue;
        }
        const double s = p->combiner == EMB_COMBINER_MEAN    ? (sw != 0 ? 1 / sw : 0)
                         : p->combiner == EMB_COMBINER_SQRTN ? (sw2 > 0 ? 1 / sqrt(sw2) : 0)
                                                             : 1;
        for (int i = 0; i < D; i++)
            yb[i] *= s;
    }
}

static double loss(const double *X, const Case *cs)
{
    double y[NBAGS * D], L = 0;
    ref_forward(X, cs, y);
    for (int i = 0; i < NBAGS * D; i++)
        L += cs->r[i] * y[i];
    return L;
}

/* The gradient of L w.r.t. the table through the library's pullback, into G (NCOL x D). */
static void pullback_grad(const EmbTable *t, const Case *cs, double *G)
{
    EmbPullEntry e[MAXNNZ + NBAGS];
    cr_assert_leq(emb__pullback_max_entries(&cs->b), MAXNNZ + NBAGS);
    const int64_t n = emb__pullback_entries(t, &cs->b, &cs->p, e);
    cr_assert_leq(n, emb__pullback_max_entries(&cs->b));
    memset(G, 0, NCOL * D * sizeof *G);
    for (int64_t j = 0; j < n; j++) {
        float dy[D], g[D];
        for (int i = 0; i < D; i++)
            dy[i] = (float)cs->r[e[j].bag * D + i];
        emb__pullback_row(t, &cs->p, &e[j], dy, NULL, g);
        for (int i = 0; i < D; i++)
            G[e[j].id * D + i] += g[i];
    }
}

/* A random f32 table whose column norms keep 0.05 away from max_norm (FD stays smooth). */
static EmbTable *make_table(double *X, double c, uint64_t seed)
{
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_create(&t, NCOL, D, EMB_F32, NULL), 0);
    tu_fill_random(t, seed);
    int64_t stride;
    float *d = emb_table_data(t, &stride);
    for (int col = 0; col < NCOL; col++) {
        double n2 = 0;
        for (int i = 0; i < D; i++)
            n2 += (double)d[col * stride + i] * d[col * stride + i];
        const float f = fabs(sqrt(n2) - c) < 0.05 ? 1.25f : 1.0f;
        for (int i = 0; i < D; i++)
            X[col * D + i] = d[col * stride + i] *= f;
    }
    return t;
}

/* The reference forward agrees with emb_lookup (so FD differentiates the library's map). */
static void check_reference(const EmbTable *t, const double *X, const Case *cs, const char *what)
{
    float out[NBAGS * D];
    double y[NBAGS * D];
    cr_assert_eq(emb_lookup(t, &cs->b, &cs->p, out, D), 0, "%s: %s", what, emb_last_error());
    ref_forward(X, cs, y);
    for (int i = 0; i < NBAGS * D; i++) /* f32 forward of <= 5 terms */
        cr_assert(fabs(out[i] - y[i]) <= 1e-5 * (1 + fabs(y[i])), "%s: y[%d] %g vs %g", what, i,
                  (double)out[i], y[i]);
}

static void check_case(const EmbTable *t, double *X, const Case *cs, const char *what)
{
    double G[NCOL * D];
    check_reference(t, X, cs, what);
    pullback_grad(t, cs, G);
    const double h = 1e-5;
    for (int j = 0; j < NCOL * D; j++) {
        const double x0 = X[j];
        X[j] = x0 + h;
        const double lp = loss(X, cs);
        X[j] = x0 - h;
        const double lm = loss(X, cs);
        X[j] = x0;
        const double fd = (lp - lm) / (2 * h);
        /* f32 pullback of a few entries vs double FD (error ~1e-10) */
        cr_assert(fabs(G[j] - fd) <= 1e-5 * (1 + fabs(fd)), "%s: dL/dX[col %d][%d] = %.9g, FD %.9g",
                  what, j / D, j % D, G[j], fd);
    }
}

Test(gradients, every_pooling_against_finite_differences)
{
    const double c = 1.1; /* random columns of 5 elements in [-1, 1): about half are clipped */
    double X[NCOL * D];
    EmbTable *t = make_table(X, c, 21);
    const unsigned prune = EMB_PRUNE_INVALID | EMB_PRUNE_NONPOSITIVE_WEIGHTS;
    int ncases = 0;
    for (int comb = EMB_COMBINER_NONE; comb <= EMB_COMBINER_SQRTN; comb++)
        for (int mask = 0; mask < 16; mask++) {
            const bool weights = mask & 1, clip = mask & 2, dflt = mask & 4, pr = mask & 8;
            EmbPooling p = {.combiner = (EmbCombiner)comb,
                            .max_norm = clip ? (float)c : 0,
                            .default_id = 3,
                            .flags = (dflt ? EMB_USE_DEFAULT_ID : 0) | (pr ? prune : 0)};
            Case cs;
            make_case(&cs, p, weights, 1000 + (uint64_t)(comb * 16 + mask));
            char what[96];
            snprintf(what, sizeof what, "combiner %d weights %d max_norm %d default %d prune %d",
                     comb, weights, clip, dflt, pr);
            check_case(t, X, &cs, what);
            ncases++;
        }
    cr_assert_eq(ncases, 64);
    emb_table_destroy(&t);
}

Test(gradients, max_norm_jacobian_on_a_known_vector)
{
    /* x = (3, 4), c = 1: y = x/5; dL/dx = (c/n)(g − x(x·g)/n²) with g = (1, 0):
     * (1/5)((1,0) − (3,4)·3/25) = (16/125, −12/125) */
    float mem[2] = {3, 4};
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_wrap(&t, mem, 1, 2, 2, EMB_F32, NULL), 0);
    const EmbPooling p = {.combiner = EMB_COMBINER_SUM, .max_norm = 1.0f};
    const EmbPullEntry e = {.id = 0, .bag = 0, .coef = 1.0f};
    const float dy[2] = {1, 0};
    float g[2];
    cr_assert(emb__pullback_needs_column(&p));
    emb__pullback_row(t, &p, &e, dy, NULL, g);
    cr_assert_float_eq(g[0], 16.0f / 125, 1e-7f);
    cr_assert_float_eq(g[1], -12.0f / 125, 1e-7f);
    /* unclipped (c = 5 = norm): identity; DeepRec's scaling-only rule would give (0.2, 0) */
    const EmbPooling q = {.combiner = EMB_COMBINER_SUM, .max_norm = 5.0f};
    emb__pullback_row(t, &q, &e, dy, NULL, g);
    cr_assert_eq(g[0], 1.0f);
    cr_assert_eq(g[1], 0.0f);
    emb_table_destroy(&t);
}

Test(gradients, entries_of_a_pruned_batch)
{
    /* bag 0: ids 2 (w 2), -1 (pruned), 2 (w 0, pruned); bag 1 empty -> default 4;
     * SQRTN: bag 0 coef = 2 / sqrt(4) = 1 for its one kept entry; the default gets 1 */
    float mem[5 * 2] = {0};
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_wrap(&t, mem, 5, 2, 2, EMB_F32, NULL), 0);
    const int64_t ids[] = {2, -1, 2}, off[] = {0, 3, 3};
    const float w[] = {2, 1, 0};
    const EmbBatch b = {.ids = ids, .nnz = 3, .nbags = 2, .offsets = off, .weights = w};
    EmbPooling p = {.combiner = EMB_COMBINER_SQRTN,
                    .default_id = 4,
                    .flags =
                        EMB_PRUNE_INVALID | EMB_PRUNE_NONPOSITIVE_WEIGHTS | EMB_USE_DEFAULT_ID};
    EmbPullEntry e[5];
    cr_assert_eq(emb__pullback_entries(t, &b, &p, e), 2);
    cr_assert(e[0].id == 2 && e[0].bag == 0 && e[0].coef == 1.0f);
    cr_assert(e[1].id == 4 && e[1].bag == 1 && e[1].coef == 1.0f);
    p.flags &= ~(unsigned)EMB_USE_DEFAULT_ID; /* zeros: the empty bag sends nothing */
    cr_assert_eq(emb__pullback_entries(t, &b, &p, e), 1);
    emb_table_destroy(&t);
}

Test(gradients, partitioned_table_same_pullback)
{
    double X[NCOL * D], G0[NCOL * D], G1[NCOL * D];
    EmbTable *t = make_table(X, 0.9, 77);
    EmbTable *pt = NULL;
    cr_assert_eq(emb_table_partitioned_create(&pt, NCOL, D, EMB_F32, 5, EMB_PARTITION_DIV, NULL),
                 0);
    for (int64_t col = 0; col < NCOL; col++) {
        void *dst;
        cr_assert_eq(emb_table_column_pointer(pt, col, EMB_CTX_UPDATE, &dst), 0);
        for (int i = 0; i < D; i++)
            ((float *)dst)[i] = (float)X[col * D + i];
    }
    Case cs;
    make_case(&cs,
              (EmbPooling){.combiner = EMB_COMBINER_MEAN,
                           .max_norm = 0.9f,
                           .default_id = 1,
                           .flags = EMB_USE_DEFAULT_ID | EMB_PRUNE_INVALID},
              true, 5);
    pullback_grad(t, &cs, G0);
    pullback_grad(pt, &cs, G1);
    cr_assert_eq(memcmp(G0, G1, sizeof G0), 0, "bit-identical through the shards");
    emb_table_destroy(&pt);
    emb_table_destroy(&t);
}

Test(gradients, bf16_columns_same_pullback_as_f32)
{
    /* the same bf16-representable values in an f32 and a bf16 table: the same gradients */
    double X[NCOL * D], G0[NCOL * D], G1[NCOL * D];
    EmbTable *t = make_table(X, 0.8, 9);
    EmbTable *tb = NULL;
    cr_assert_eq(emb_table_create(&tb, NCOL, D, EMB_BF16, NULL), 0);
    int64_t s32, s16;
    float *d = emb_table_data(t, &s32);
    uint16_t *h = emb_table_data(tb, &s16);
    for (int col = 0; col < NCOL; col++)
        for (int i = 0; i < D; i++) {
            uint32_t bits;
            memcpy(&bits, &d[col * s32 + i], 4);
            bits &= 0xffff0000u; /* truncate to a bf16 value */
            memcpy(&d[col * s32 + i], &bits, 4);
            h[col * s16 + i] = (uint16_t)(bits >> 16);
        }
    Case cs;
    make_case(&cs, (EmbPooling){.combiner = EMB_COMBINER_SQRTN, .max_norm = 0.8f}, true, 3);
    pullback_grad(t, &cs, G0);
    pullback_grad(tb, &cs, G1);
    for (int j = 0; j < NCOL * D; j++) /* the same f32 inputs; the clip test may sum in
                                          another order per dtype: 1e-6 relative */
        cr_assert(fabs(G0[j] - G1[j]) <= 1e-6 * (1 + fabs(G0[j])), "%d: %g vs %g", j, G0[j], G1[j]);
    emb_table_destroy(&tb);
    emb_table_destroy(&t);
}

/* The public backward + SGD (update.h) moves every column by −lr · (the FD gradient). */
Test(gradients, sgd_step_follows_finite_differences)
{
    const double c = 1.1, lr = 0.5;
    for (int comb = EMB_COMBINER_NONE; comb <= EMB_COMBINER_SQRTN; comb++) {
        double X[NCOL * D];
        EmbTable *t = make_table(X, c, 40 + (uint64_t)comb);
        Case cs;
        make_case(&cs,
                  (EmbPooling){.combiner = (EmbCombiner)comb, .max_norm = (float)c,
                               .default_id = 6,
                               .flags = EMB_USE_DEFAULT_ID | EMB_PRUNE_INVALID |
                                        EMB_PRUNE_NONPOSITIVE_WEIGHTS},
                  true, 60 + (uint64_t)comb);
        float dout[NBAGS * D];
        for (int i = 0; i < NBAGS * D; i++)
            dout[i] = (float)cs.r[i];
        EmbOptimizerConfig cfg = emb_optimizer_defaults(EMB_OPT_SGD, (float)lr);
        EmbOptimizer *opt = NULL;
        EmbGrad *g = NULL;
        EmbIndexer *ix = NULL;
        cr_assert_eq(emb_optimizer_create(&opt, &cfg), 0);
        cr_assert_eq(emb_grad_create(&g), 0);
        cr_assert_eq(emb_indexer_create(&ix), 0);
        cr_assert_eq(emb_lookup_backward(t, &cs.b, &cs.p, dout, D, g), 0, "%s", emb_last_error());
        cr_assert_eq(emb_update(opt, t, g, ix, 0), 0, "%s", emb_last_error());
        int64_t stride;
        const float *d = emb_table_data(t, &stride);
        const double h = 1e-5;
        for (int j = 0; j < NCOL * D; j++) {
            const double x0 = X[j];
            X[j] = x0 + h;
            const double lp = loss(X, &cs);
            X[j] = x0 - h;
            const double lm = loss(X, &cs);
            X[j] = x0;
            const double want = x0 - lr * (lp - lm) / (2 * h);
            const double got = d[(j / D) * stride + j % D];
            /* f32 gradient and update of values of size ~1 */
            cr_assert(fabs(got - want) <= 2e-5 * (1 + fabs(want)),
                      "combiner %d: column %d[%d] = %.9g, want %.9g", comb, j / D, j % D, got,
                      want);
        }
        emb_indexer_destroy(&ix);
        emb_grad_destroy(&g);
        emb_optimizer_destroy(&opt);
        emb_table_destroy(&t);
    }
}
