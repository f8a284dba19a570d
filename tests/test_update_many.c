/* SPDX-License-Identifier: BSD-2-Clause */
/* test_update_many.c — the multi-table update under every strategy, thread count and
 * split count (bit-identical to emb_update), the ensemble backward (concat layout) and
 * bad input across tables. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_ensemble.h"

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

/* two_steps through emb_update_many_prepare / _cancel / _commit instead */
static bool two_phase;

/* emb_update_many under @s in two steps: a prepare writes nothing (cancelled, then
 * again), the commit applies. */
static int update_two_phase(EmbStrategy *s, Model *m, unsigned flags)
{
    uint64_t sums[NT];
    for (int i = 0; i < NT; i++)
        sums[i] = tu_checksum(m->t[i]);
    for (int k = 0; k < 2; k++) {
        const int r = emb_update_many_prepare(s, m->opt, m->t, (const EmbGrad *const *)m->g,
                                              NT, m->ix, flags);
        if (r)
            return r;
        for (int i = 0; i < NT; i++)
            cr_assert_eq(tu_checksum(m->t[i]), sums[i], "prepare wrote table %d", i);
        if (k == 0) {
            emb_update_many_cancel(s);
            cr_assert_eq(emb_update_many_commit(s), EMB_EINVAL, "commit after a cancel");
        }
    }
    return emb_update_many_commit(s);
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
        if (s && two_phase)
            cr_assert_eq(update_two_phase(s, &m, flags), 0, "%s", emb_last_error());
        else if (s)
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

/* emb_update_many_prepare + _commit: the bits of emb_update_many; a cancelled prepare
 * writes nothing. */
Test(update_many, prepare_then_commit_is_update_many)
{
    two_phase = true;
    for (int kind = EMB_OPT_SGD; kind <= EMB_OPT_ADAM; kind++) {
        const EmbOptimizerConfig c = emb_optimizer_defaults((EmbOptimizerKind)kind, 0.05f);
        uint64_t want[NT];
        two_steps(c, NULL, want);
        EmbStrategy *s = NULL;
        cr_assert_eq(emb_strategy_sequential(&s), 0);
        run_many(c, s, want, "two-phase sequential");
        emb_strategy_destroy(&s);
        EmbStrategyOptions o = {.nthreads = 2, .num_splits = 3};
        cr_assert_eq(emb_strategy_prealloc_concat(&s, &o), 0);
        run_many(c, s, want, "two-phase concat");
        emb_strategy_destroy(&s);
    }
    Model m;
    Data d;
    sgd_model(&m, &d, 1);
    EmbStrategy *s = NULL;
    cr_assert_eq(emb_strategy_sequential(&s), 0);
    d.ids[2][17] = ncols[2]; /* a failed prepare: nothing prepared */
    cr_assert_eq(emb_update_many_prepare(s, m.opt, m.t, (const EmbGrad *const *)m.g, NT, m.ix,
                                         0), EMB_ERANGE);
    cr_assert_eq(emb_update_many_commit(s), EMB_EINVAL);
    cr_assert_eq(emb_update_many_commit(NULL), EMB_ENULL);
    emb_update_many_cancel(NULL);
    emb_strategy_destroy(&s);
    model_free(&m);
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
    d.ids32[101] = -1; /* the sparse gradient's ids are checked in the parallel chunks too */
    cr_assert_eq(emb_update_many(s, m.opt, m.t, (const EmbGrad *const *)m.g, NT, m.ix, 0),
                 EMB_ERANGE);
    cr_assert(strstr(emb_last_error(), "position 101"), "%s", emb_last_error());
    d.ids32[101] = 0;
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

/* emb_maplookup_backward does not read the ids (a serial pass over every id of the step):
 * a bad one is EMB_ERANGE from whichever update consumes the gradient, under every
 * strategy and split count, naming its position, and no table changes. */
Test(maplookup_backward, ids_checked_by_the_update)
{
    enum { N = 3, B = 40, L = 3, W = 4 + 8 + 5 };
    const int32_t D[N] = {4, 8, 5};
    EmbTable *t[N];
    EmbGrad *g[N];
    EmbIndexer *ix[N];
    static int64_t ids[N][B * L];
    EmbBatch b[N];
    uint64_t seed = 21, sums[N];
    for (int i = 0; i < N; i++) {
        t[i] = tu_table(50, D[i], EMB_F32, 40 + (uint64_t)i);
        cr_assert_eq(emb_grad_create(&g[i]), 0);
        cr_assert_eq(emb_indexer_create(&ix[i]), 0);
        for (int k = 0; k < B * L; k++)
            ids[i][k] = (int64_t)(tu_rand(&seed) % 50);
        b[i] = (EmbBatch){.ids = ids[i], .nnz = B * L, .nbags = B, .bag_size = L};
        sums[i] = tu_checksum(t[i]);
    }
    ids[1][77] = 50; /* table 1, position 77 */
    static float dy[B * W];
    for (int k = 0; k < B * W; k++)
        dy[k] = tu_randf(&seed);
    const EmbOutputs go = {.concat = dy, .concat_stride = W};
    cr_assert_eq(emb_maplookup_backward(t, N, b, NULL, &go, g), 0, "%s", emb_last_error());
    EmbOptimizer *o = NULL;
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    cr_assert_eq(emb_optimizer_create(&o, &c), 0);
    for (int k = 0; k < 4; k++) {
        EmbStrategy *s = NULL;
        const EmbStrategyOptions so = {.nthreads = 2, .num_splits = k == 3 ? 5 : 0};
        cr_assert_eq(k == 0 ? emb_strategy_sequential(&s)
                     : k == 1 ? emb_strategy_parallel(&s, &so)
                              : emb_strategy_prealloc_concat(&s, &so), 0);
        cr_assert_eq(emb_update_many(s, o, t, (const EmbGrad *const *)g, N, ix, 0), EMB_ERANGE,
                     "strategy %d", k);
        cr_assert(strstr(emb_last_error(), "position 77"), "%s", emb_last_error());
        emb_strategy_destroy(&s);
    }
    cr_assert_eq(emb_update(o, t[1], g[1], ix[1], 0), EMB_ERANGE);
    for (int i = 0; i < N; i++)
        cr_assert_eq(tu_checksum(t[i]), sums[i], "table %d changed", i);
    /* a default_id out of range is still refused when recording */
    EmbPooling p[N] = {EMB_POOLING_SUM, EMB_POOLING_SUM, EMB_POOLING_SUM};
    p[2].flags = EMB_USE_DEFAULT_ID;
    p[2].default_id = 50;
    cr_assert_eq(emb_maplookup_backward(t, N, b, p, &go, g), EMB_ERANGE);
    emb_optimizer_destroy(&o);
    for (int i = 0; i < N; i++) {
        emb_grad_destroy(&g[i]);
        emb_indexer_destroy(&ix[i]);
        emb_table_destroy(&t[i]);
    }
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
    b[1].nbags = B;
    b[1].nnz = B;
    /* one check of the layout: each mistake the same code forward and backward */
    EmbOutputs bad[2] = {go, go};
    bad[0].prependrows = -1;             /* EMB_EINVAL */
    bad[1].prependrows = INT64_MAX - 10; /* the row width overflows: EMB_EOVERFLOW */
    bad[1].concat_stride = INT64_MAX;
    const int want[2] = {EMB_EINVAL, EMB_EOVERFLOW};
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(emb_maplookup(s, t, N, b, p, &bad[k]), want[k], "%s", emb_last_error());
        cr_assert_eq(emb_maplookup_backward(t, N, b, p, &bad[k], g), want[k], "%s",
                     emb_last_error());
    }
    emb_strategy_destroy(&s);
    emb_optimizer_destroy(&o);
    for (int i = 0; i < N; i++) {
        emb_grad_destroy(&g[i]);
        emb_indexer_destroy(&ix[i]);
        emb_table_destroy(&t[i]);
    }
}

/* @ix and @fresh hold the same distinct ids with the same counts, in the same order. */
static void same_distinct(const EmbIndexer *ix, const EmbIndexer *fresh, const char *what)
{
    const int64_t *id0, *id1, *c0, *c1;
    const int64_t n0 = emb_indexer_distinct(ix, &id0, &c0);
    cr_assert_eq(n0, emb_indexer_distinct(fresh, &id1, &c1), "%s", what);
    cr_assert(!memcmp(id0, id1, (size_t)n0 * sizeof *id0), "%s: distinct ids differ", what);
    cr_assert(!memcmp(c0, c1, (size_t)n0 * sizeof *c0), "%s: counts differ", what);
}

/* One step of a 300 x 8 table from @nbags bags of 4 (ids from @seed): the same update
 * through a reused indexer @ix (table @t) and a fresh one (table @ref) must give the same
 * bits and the same distinct ids. @s NULL: emb_update. */
static void reuse_step(EmbStrategy *s, EmbOptimizer *o, EmbTable *t, EmbTable *ref,
                       EmbIndexer *ix, int64_t nbags, uint64_t seed, const char *what)
{
    int64_t ids[4 * 544];
    float dy[544 * 8];
    for (int64_t k = 0; k < 4 * nbags; k++)
        ids[k] = (int64_t)(tu_rand(&seed) % 300);
    for (int64_t k = 0; k < 8 * nbags; k++)
        dy[k] = tu_randf(&seed);
    const EmbBatch b = {.ids = ids, .nnz = 4 * nbags, .nbags = nbags, .bag_size = 4};
    const EmbPooling p = EMB_POOLING_SUM;
    EmbTable *tabs[2] = {t, ref};
    EmbGrad *g[2];
    EmbIndexer *fresh = NULL, *ixs[2] = {ix, NULL};
    cr_assert_eq(emb_indexer_create(&fresh), 0);
    ixs[1] = fresh;
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(emb_grad_create(&g[i]), 0);
        cr_assert_eq(emb_lookup_backward(tabs[i], &b, &p, dy, 8, g[i]), 0);
        if (s) /* one table per call: the reused indexer meets this call's split count */
            cr_assert_eq(emb_update_many(s, o, &tabs[i], (const EmbGrad *const *)&g[i], 1,
                                         &ixs[i], 0), 0, "%s: %s", what, emb_last_error());
        else
            cr_assert_eq(emb_update(o, tabs[i], g[i], ixs[i], 0), 0, "%s", what);
        emb_grad_destroy(&g[i]);
    }
    cr_assert_eq(tu_checksum(t), tu_checksum(ref), "%s: the tables differ", what);
    same_distinct(ix, fresh, what);
    emb_indexer_destroy(&fresh);
}

/* emb_indexer_index through the reused indexer and a fresh one: the same result. */
static void reuse_index(EmbIndexer *ix, int64_t n, uint64_t seed, const char *what)
{
    int64_t ids[4 * 544];
    for (int64_t k = 0; k < n; k++)
        ids[k] = (int64_t)(tu_rand(&seed) % 5000) - 400; /* negative ids too */
    EmbIndexer *fresh = NULL;
    cr_assert_eq(emb_indexer_create(&fresh), 0);
    cr_assert_eq(emb_indexer_index(ix, ids, n), 0, "%s", what);
    cr_assert_eq(emb_indexer_index(fresh, ids, n), 0);
    same_distinct(ix, fresh, what);
    emb_indexer_destroy(&fresh);
}

/* One indexer through every split count and thread count, in between single-table updates
 * and plain indexing of other sizes: each result as a fresh indexer's. (A hash sized for a
 * split call once made the next unsplit call probe forever: hence the timeout.) */
Test(indexer, reused_across_split_and_thread_counts, .timeout = 120)
{
    EmbTable *t = tu_table(300, 8, EMB_F32, 7), *ref = tu_table(300, 8, EMB_F32, 7);
    EmbOptimizer *o = NULL;
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.05f);
    cr_assert_eq(emb_optimizer_create(&o, &c), 0);
    EmbIndexer *ix = NULL;
    cr_assert_eq(emb_indexer_create(&ix), 0);
    EmbStrategy *seq = NULL;
    cr_assert_eq(emb_strategy_sequential(&seq), 0);
    uint64_t seed = 11;
    for (int nth = 1; nth <= 4; nth++) {
        for (int sp = 1; sp <= 17; sp++) {
            char what[80];
            const EmbStrategyOptions so = {.nthreads = nth, .num_splits = sp};
            EmbStrategy *s = NULL;
            cr_assert_eq(emb_strategy_prealloc_concat(&s, &so), 0);
            const int64_t nbags = 8 * ((nth - 1) * 17 + sp); /* growing: new hash sizes */
            snprintf(what, sizeof what, "threads %d splits %d", nth, sp);
            reuse_step(s, o, t, ref, ix, nbags, seed++, what);
            emb_strategy_destroy(&s);
            snprintf(what, sizeof what, "emb_update after threads %d splits %d", nth, sp);
            reuse_step(NULL, o, t, ref, ix, 1 + (int64_t)(tu_rand(&seed) % 256), seed++, what);
            snprintf(what, sizeof what, "sequential after threads %d splits %d", nth, sp);
            reuse_step(seq, o, t, ref, ix, 1 + (int64_t)(tu_rand(&seed) % 256), seed++, what);
            snprintf(what, sizeof what, "emb_indexer_index after threads %d splits %d", nth,
                     sp);
            reuse_index(ix, 4 * nbags, seed++, what);
        }
    }
    emb_strategy_destroy(&seq);
    emb_indexer_destroy(&ix);
    emb_optimizer_destroy(&o);
    emb_table_destroy(&t);
    emb_table_destroy(&ref);
}
