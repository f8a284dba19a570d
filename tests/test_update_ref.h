/* SPDX-License-Identifier: BSD-2-Clause */
/* test_update_ref.h — double-precision references for the update suites: the optimizer
 * formulas of DESIGN.md §4 and the lookup pullback, written the obvious way. */
#ifndef EMB_TEST_UPDATE_REF_H
#define EMB_TEST_UPDATE_REF_H

#include "test_util.h"

/* A table with seeded random values in [-1, 1) (any dtype, through emb_table_assign). */
static inline EmbTable *tu_table(int64_t ncol, int32_t D, EmbDtype dt, uint64_t seed)
{
    EmbTable *t = NULL;
    if (emb_table_create(&t, ncol, D, dt, NULL))
        return NULL;
    float *v = malloc((size_t)(ncol * D + 1) * sizeof(float));
    for (int64_t i = 0; i < ncol * D; i++)
        v[i] = tu_randf(&seed);
    emb_table_assign(t, v, ncol, D, D);
    free(v);
    return t;
}

/* The objects one table's update needs, created (and checked) together. */
typedef struct Kit {
    EmbGrad *g;
    EmbIndexer *ix;
    EmbOptimizer *o;
} Kit;

/* Creates a kit with an optimizer of @p c; 0 or the first error. */
static inline int kit_init(Kit *k, EmbOptimizerConfig c)
{
    *k = (Kit){0};
    int r = emb_grad_create(&k->g);
    r = r ? r : emb_indexer_create(&k->ix);
    return r ? r : emb_optimizer_create(&k->o, &c);
}

static inline void kit_free(Kit *k)
{
    emb_optimizer_destroy(&k->o);
    emb_indexer_destroy(&k->ix);
    emb_grad_destroy(&k->g);
}

/* The table's values as doubles (ncol x D), malloc'ed. */
static inline double *tu_read_double(const EmbTable *t)
{
    const int64_t n = emb_table_ncolumns(t) * emb_table_featuresize(t);
    float *f = malloc((size_t)(n + 1) * sizeof(float));
    double *d = malloc((size_t)(n + 1) * sizeof(double));
    emb_table_read(t, f, emb_table_featuresize(t));
    for (int64_t i = 0; i < n; i++)
        d[i] = f[i];
    free(f);
    return d;
}

/* Per-column reference state: s[0..2D) (h / accum+linear / m+v), step t. */
typedef struct RefOpt {
    EmbOptimizerConfig c;
    double *s; /* ncol x 2D */
    int64_t step;
    int32_t D;
} RefOpt;

static inline void ref_opt_init(RefOpt *r, EmbOptimizerConfig c, int64_t ncol, int32_t D)
{
    r->c = c;
    r->D = D;
    r->step = 0;
    r->s = calloc((size_t)(ncol * 2 * D + 1), sizeof(double));
    const double h0 = c.initial_accumulator;
    if (c.kind != EMB_OPT_ADAM)
        for (int64_t i = 0; i < ncol; i++)
            for (int32_t j = 0; j < D; j++)
                r->s[i * 2 * D + j] = h0;
}

/* Applies the optimizer to column w (D doubles) with gradient g. */
static inline void ref_opt_column(const RefOpt *r, int64_t col, double *w, const double *g)
{
    const EmbOptimizerConfig *c = &r->c;
    const int32_t D = r->D;
    double *s = r->s + col * 2 * D;
    const double lr = c->lr, eps = c->eps;
    if (c->kind == EMB_OPT_SGD) {
        for (int32_t i = 0; i < D; i++)
            w[i] -= lr * g[i];
    } else if (c->kind == EMB_OPT_ADAGRAD) {
        for (int32_t i = 0; i < D; i++) {
            s[i] += g[i] * g[i];
            w[i] -= lr * g[i] / (sqrt(s[i]) + eps);
        }
    } else if (c->kind == EMB_OPT_ROWWISE_ADAGRAD) {
        double m = 0;
        for (int32_t i = 0; i < D; i++)
            m += g[i] * g[i] / D;
        s[0] += m;
        for (int32_t i = 0; i < D; i++)
            w[i] -= lr * g[i] / (sqrt(s[0]) + eps);
    } else if (c->kind == EMB_OPT_FTRL) {
        const double p = c->lr_power;
        for (int32_t i = 0; i < D; i++) {
            const double a = s[i], a1 = a + g[i] * g[i];
            s[D + i] += g[i] - (pow(a1, -p) - pow(a, -p)) / lr * w[i];
            const double quad = pow(a1, -p) / lr + 2 * c->l2, l = s[D + i];
            w[i] = fabs(l) > c->l1 ? ((l > 0 ? c->l1 : -c->l1) - l) / quad : 0.0;
            s[i] = a1;
        }
    } else {
        const double t = (double)(r->step + 1);
        const double ss = c->bias_correction
                              ? lr * sqrt(1 - pow(c->beta2, t)) / (1 - pow(c->beta1, t))
                              : lr;
        for (int32_t i = 0; i < D; i++) {
            s[i] = c->beta1 * s[i] + (1 - c->beta1) * g[i];
            s[D + i] = c->beta2 * s[D + i] + (1 - c->beta2) * g[i] * g[i];
            w[i] -= ss * s[i] / (sqrt(s[D + i]) + eps);
        }
    }
}

/* One step: G (ncol x D, summed gradient) applied to every touched column of W. */
static inline void ref_opt_step(RefOpt *r, double *W, const double *G, const char *touched,
                                int64_t ncol)
{
    for (int64_t c = 0; c < ncol; c++)
        if (touched[c])
            ref_opt_column(r, c, W + c * r->D, G + c * r->D);
    r->step++;
}

/*
 * The pullback of a SUM / MEAN / SQRTN / NONE lookup without max_norm, accumulated into G
 * (ncol x D) with touched[] set: each kept id of a bag gets s·w·dy of its bag.
 */
static inline void ref_pullback(const EmbBatch *b, const EmbPooling *p, const float *dy,
                                int64_t dys, int32_t D, double *G, char *touched)
{
    for (int64_t bag = 0; bag < b->nbags; bag++) {
        const int64_t s0 = b->offsets ? b->offsets[bag] : bag * b->bag_size;
        const int64_t s1 = b->offsets ? b->offsets[bag + 1] : (bag + 1) * b->bag_size;
        double sw = 0, sw2 = 0;
        int kept = 0;
        for (int pass = 0; pass < 2; pass++)
            for (int64_t k = s0; k < s1; k++) {
                const int64_t id = b->id_type == EMB_ID_I32 ? ((const int32_t *)b->ids)[k]
                                                            : ((const int64_t *)b->ids)[k];
                const double w = b->weights ? b->weights[k] : 1.0;
                if ((id < 0 && (p->flags & EMB_PRUNE_INVALID)) ||
                    (b->weights && (p->flags & EMB_PRUNE_NONPOSITIVE_WEIGHTS) && !(w > 0)))
                    continue;
                if (pass == 0) {
                    sw += w;
                    sw2 += w * w;
                    kept++;
                    continue;
                }
                double s = 1;
                if (p->combiner == EMB_COMBINER_MEAN)
                    s = sw != 0 ? 1 / sw : 0;
                if (p->combiner == EMB_COMBINER_SQRTN)
                    s = sw2 > 0 ? 1 / sqrt(sw2) : 0;
                for (int32_t i = 0; i < D; i++)
                    G[id * D + i] += s * w * dy[bag * dys + i];
                touched[id] = 1;
            }
        if (kept == 0 && (p->flags & EMB_USE_DEFAULT_ID)) {
            for (int32_t i = 0; i < D; i++)
                G[p->default_id * D + i] += dy[bag * dys + i];
            touched[p->default_id] = 1;
        }
    }
}

#endif
