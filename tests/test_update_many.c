/* test_update_many.c — the multi-table update under every strategy, thread count and
 * split count (bit-identical to emb_update), the ensemble backward (concat layout) and
 * bad input across tables. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_update_ref.h"

#define NT 4
static const int32_t dims[NT] = {16, 8, 5, 64};
static const EmbDtype dtypes[NT] = {EMB_F32, EMB_F16, EMB_BF16, EMB_F32};
static const int64_t ncols[NT] = {200, 50, 1000, 300};

/* Skewed random batches (hot ids repeat) of 24 bags each and their output gradients. */
typedef struct Data {
    int64_t ids[NT][24 * 7];
    int32_t ids32[24 * 7];
    int64_t offsets[25];
    float w[24 * 7];
    float dy[NT][24 * 64];
    EmbBatch b[NT];
    EmbPooling p[NT];
} Data;

static void make_data(Data *d, uint64_t seed)
{
    for (int i = 0; i < NT; i++) {
        for (int k = 0; k < 24 * 7; k++) {
            const uint64_t r = tu_rand(&seed);
            d->ids[i][k] = (int64_t)((r & 1) ? r % 7 : (r >> 8) % (uint64_t)ncols[i]);
        }
        for (int k = 0; k < 24 * 64; k++)
            d->dy[i][k] = tu_randf(&seed);
        d->b[i] = (EmbBatch){.ids = d->ids[i], .nnz = 24 * 7, .nbags = 24, .bag_size = 7};
        d->p[i] = (EmbPooling){.combiner = (EmbCombiner)(1 + i % 3)};
    }
    /* table 0: ragged bags, some empty (default id), weights with pruning */
    d->offsets[0] = 0;
    for (int b = 0; b < 24; b++) {
        const int64_t next = d->offsets[b] + (int64_t)(tu_rand(&seed) % 12);
        d->offsets[b + 1] = next < 24 * 7 ? next : 24 * 7;
    }
    d->offsets[24] = 24 * 7;
    for (int k = 0; k < 24 * 7; k++)
        d->w[k] = tu_randf(&seed) + 0.3f;
    d->b[0].offsets = d->offsets;
    d->b[0].weights = d->w;
    d->p[0].default_id = 3;
    d->p[0].flags = EMB_USE_DEFAULT_ID | EMB_PRUNE_NONPOSITIVE_WEIGHTS;
    /* table 2: max_norm clips most columns (its gradient reads them) */
    d->p[2].max_norm = 0.5f;
    /* table 1: int32 ids (a sparse gradient) */
    for (int k = 0; k < 24 * 7; k++)
        d->ids32[k] = (int32_t)d->ids[1][k];
}

typedef struct Model {
    EmbTable *t[NT];
    EmbGrad *g[NT];
    EmbIndexer *ix[NT];
    EmbOptimizer *opt;
} Model;

static void model_init(Model *m, EmbOptimizerConfig c)
{
    for (int i = 0; i < NT; i++) {
        m->t[i] = tu_table(ncols[i], dims[i], dtypes[i], 100 + (uint64_t)i);
        cr_assert_eq(emb_grad_create(&m->g[i]), 0);
        cr_assert_eq(emb_indexer_create(&m->ix[i]), 0);
    }
    cr_assert_eq(emb_optimizer_create(&m->opt, &c), 0);
}

static void model_free(Model *m)
{
    for (int i = 0; i < NT; i++) {
        emb_grad_destroy(&m->g[i]);
        emb_indexer_destroy(&m->ix[i]);
    }
    emb_optimizer_destroy(&m->opt); /* before the tables it keys on */
    for (int i = 0; i < NT; i++)
        emb_table_destroy(&m->t[i]);
}

/* Pullbacks for every table but table 1, which gets its rows as a sparse gradient. */
static void record(Model *m, Data *d)
{
    for (int i = 0; i < NT; i++)
        cr_assert_eq(emb_lookup_backward(m->t[i], &d->b[i], &d->p[i], d->dy[i], dims[i],
                                         m->g[i]), 0, "%s", emb_last_error());
    const EmbSparseGrad sg = {.ids = d->ids32, .id_type = EMB_ID_I32, .n = 24 * 7,
                              .featuresize = dims[1], .values = d->dy[1], .stride = dims[1]};
    cr_assert_eq(emb_grad_set_sparse(m->g[1], m->t[1], &sg), 0);
}

/* A model with SGD and one recorded step of data from @seed. */
static void sgd_model(Model *m, Data *d, uint64_t seed)
{
    model_init(m, emb_optimizer_defaults(EMB_OPT_SGD, 0.1f));
    make_data(d, seed);
    record(m, d);
}

/* Two training steps (emb_update per table when @s is NULL, else emb_update_many under
 * @s, non-temporal in the second step); each table's checksum into @sums. */
static void two_steps(EmbOptimizerConfig c, EmbStrategy *s, uint64_t sums[NT])
{
    Model m;
    Data d;
    model_init(&m, c);
    for (int step = 0; step < 2; step++) {
        make_data(&d, 500 + (uint64_t)step);
        record(&m, &d);
        const unsigned flags = step ? EMB_UPDATE_NONTEMPORAL : 0;
        for (int i = 0; i < NT && !s; i++)
            cr_assert_eq(emb_update(m.opt, m.t[i], m.g[i], m.ix[i], 0), 0);
        if (s)
            cr_assert_eq(emb_update_many(s, m.opt, m.t, (const EmbGrad *const *)m.g, NT, m.ix,
                                         flags), 0, "%s", emb_last_error());
    }
    for (int i = 0; i < NT; i++)
        sums[i] = tu_checksum(m.t[i]);
    model_free(&m);
}

static void run_many(EmbOptimizerConfig c, EmbStrategy *s, const uint64_t want[NT],
                     const char *what)
{
    uint64_t got[NT];
    two_steps(c, s, got);
    for (int i = 0; i < NT; i++)
        cr_assert_eq(got[i], want[i], "%s: kind %d table %d differs", what, (int)c.kind, i);
}

Test(update_many, identical_for_every_strategy_thread_and_split_count)
{
    for (int kind = EMB_OPT_SGD; kind <= EMB_OPT_ADAM; kind++) {
        const EmbOptimizerConfig c = emb_optimizer_defaults((EmbOptimizerKind)kind, 0.05f);
        uint64_t want[NT];
        two_steps(c, NULL, want);
        EmbStrategy *s = NULL;
        cr_assert_eq(emb_strategy_sequential(&s), 0);
        run_many(c, s, want, "sequential");
        emb_strategy_destroy(&s);
        for (int nth = 1; nth <= 4; nth++) {
            EmbStrategyOptions o = {.nthreads = nth};
            cr_assert_eq(emb_strategy_parallel(&s, &o), 0);
            run_many(c, s, want, "parallel");
            emb_strategy_destroy(&s);
            for (int sp = 1; sp <= 8; sp++) {
                o.num_splits = sp;
                cr_assert_eq(emb_strategy_prealloc_concat(&s, &o), 0);
                char what[64];
                snprintf(what, sizeof what, "concat nthreads %d splits %d", nth, sp);
                run_many(c, s, want, what);
                emb_strategy_destroy(&s);
            }
        }
    }
}

Test(update_many, bad_table_writes_nothing_anywhere)
{
    Model m;
    Data d;
    sgd_model(&m, &d, 1);
    uint64_t sums[NT];
    for (int i = 0; i < NT; i++)
        sums[i] = tu_checksum(m.t[i]);
    EmbStrategyOptions o = {.nthreads = 2, .num_splits = 3};
    EmbStrategy *s = NULL;
    cr_assert_eq(emb_strategy_prealloc_concat(&s, &o), 0);
    d.ids[2][17] = ncols[2]; /* out of range in table 2, after recording */
    cr_assert_eq(emb_update_many(s, m.opt, m.t, (const EmbGrad *const *)m.g, NT, m.ix, 0),
                 EMB_ERANGE);
    cr_assert(strstr(emb_last_error(), "position 17"), "%s", emb_last_error());
    d.ids[2][17] = 0;
    EmbGrad *swapped[NT] = {m.g[1], m.g[0], m.g[2], m.g[3]}; /* grads of other tables */
    cr_assert_eq(emb_update_many(s, m.opt, m.t, (const EmbGrad *const *)swapped, NT, m.ix, 0),
                 EMB_EINVAL);
    EmbTable *twice[NT] = {m.t[0], m.t[1], m.t[0], m.t[3]};
    cr_assert_eq(emb_update_many(s, m.opt, twice, (const EmbGrad *const *)m.g, NT, m.ix, 0),
                 EMB_EINVAL);
    cr_assert_eq(emb_update_many(s, m.opt, m.t, (const EmbGrad *const *)m.g, 0, m.ix, 0),
                 EMB_EINVAL);
    for (int i = 0; i < NT; i++)
        cr_assert_eq(tu_checksum(m.t[i]), sums[i]);
    emb_strategy_destroy(&s);
    model_free(&m);
}

static int custom_calls;
static int custom_update(void *user, EmbOptimizer *opt, EmbTable *const *tables,
                         const EmbGrad *const *grads, int64_t n, EmbIndexer *const *ix,
                         unsigned flags)
{
    (void)user;
    custom_calls++;
    for (int64_t i = 0; i < n; i++) {
        const int r = emb_update(opt, tables[i], grads[i], ix[i], flags);
        if (r)
            return r;
    }
    return 0;
}

Test(update_many, custom_strategy_callback)
{
    Model m;
    Data d;
    sgd_model(&m, &d, 1);
    EmbStrategyCallbacks cb = {0};
    EmbStrategy *s = NULL;
    cr_assert_eq(emb_strategy_custom(&s, &cb, NULL), 0);
    cr_assert_eq(emb_update_many(s, m.opt, m.t, (const EmbGrad *const *)m.g, NT, m.ix, 0),
                 EMB_ENOTSUP);
    emb_strategy_destroy(&s);
    cb.update_many = custom_update;
    cr_assert_eq(emb_strategy_custom(&s, &cb, NULL), 0);
    cr_assert_eq(emb_update_many(s, m.opt, m.t, (const EmbGrad *const *)m.g, NT, m.ix, 0), 0);
    cr_assert_eq(custom_calls, 1);
    emb_strategy_destroy(&s);
    model_free(&m);
}

/* Backward of a concat-layout maplookup: every table gets its own slice of each row
 * (EmbeddingTables.jl hands every table the first table's slice). SGD with lr 1 on zero
 * tables makes each table minus the gradient it received. */
Test(maplookup_backward, concat_slices_per_table)
{
    enum { N = 3, B = 6, PRE = 2, STRIDE = PRE + 4 + 8 + 3 + 1 };
    const int32_t D[N] = {4, 8, 3};
    const int64_t stride = STRIDE;
    EmbTable *t[N];
    EmbGrad *g[N];
    EmbIndexer *ix[N];
    int64_t ids[N][B];
    EmbBatch b[N];
    for (int i = 0; i < N; i++) {
        cr_assert_eq(emb_table_create(&t[i], B, D[i], EMB_F32, NULL), 0);
        emb_grad_create(&g[i]);
        emb_indexer_create(&ix[i]);
        for (int k = 0; k < B; k++)
            ids[i][k] = (k + i) % B; /* gather: bag k reads one distinct column */
        b[i] = (EmbBatch){.ids = ids[i], .nnz = B, .nbags = B, .bag_size = 1};
    }
    float dy[B * STRIDE];
    uint64_t seed = 3;
    for (int k = 0; k < B * stride; k++)
        dy[k] = tu_randf(&seed);
    const EmbOutputs go = {.concat = dy, .concat_stride = stride, .prependrows = PRE};
    EmbPooling p[N] = {EMB_POOLING_GATHER, EMB_POOLING_SUM, EMB_POOLING_MEAN};
    cr_assert_eq(emb_maplookup_backward(t, N, b, p, &go, g), 0, "%s", emb_last_error());
    EmbOptimizer *o = NULL;
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_SGD, 1.0f);
    emb_optimizer_create(&o, &c);
    EmbStrategy *s = NULL;
    emb_strategy_sequential(&s);
    cr_assert_eq(emb_update_many(s, o, t, (const EmbGrad *const *)g, N, ix, 0), 0);
    int64_t off = PRE;
    for (int i = 0; i < N; i++) {
        float out[B * 8];
        emb_table_read(t[i], out, D[i]);
        for (int k = 0; k < B; k++)
            for (int j = 0; j < D[i]; j++) /* exact: 0 - 1 * dy */
                cr_assert_eq(out[ids[i][k] * D[i] + j], -dy[k * stride + off + j],
                             "table %d bag %d element %d", i, k, j);
        off += D[i];
    }
    /* per-table layout, and bad shapes */
    float *pt[N] = {dy, dy, dy};
    const EmbOutputs per = {.per_table = pt};
    cr_assert_eq(emb_maplookup_backward(t, N, b, p, &per, g), 0);
    EmbOutputs narrow = go;
    narrow.concat_stride = PRE + 4 + 8 + 2;
    cr_assert_eq(emb_maplookup_backward(t, N, b, p, &narrow, g), EMB_ESHAPE);
    b[1].nbags = B - 1;
    b[1].nnz = B - 1;
    cr_assert_eq(emb_maplookup_backward(t, N, b, p, &go, g), EMB_ESHAPE);
    emb_strategy_destroy(&s);
    emb_optimizer_destroy(&o);
    for (int i = 0; i < N; i++) {
        emb_grad_destroy(&g[i]);
        emb_indexer_destroy(&ix[i]);
        emb_table_destroy(&t[i]);
    }
}
