/* SPDX-License-Identifier: BSD-2-Clause */
/* test_maxpool.c — MAX pooling (EMB_COMBINER_MAX): the forward of every dtype against a
 * reference written here (the element-wise max, the first entry kept on ties, pruning,
 * default ids, empty bags), its backward against the reference's routing (each element's
 * gradient to the column that gave its maximum, an id repeated in a bag counted once), and
 * what it refuses (weights, max_norm) without writing anything. Every strategy, split and
 * thread count: test_update_many.c (table 3 of test_ensemble.h); every table kind:
 * test_contract.c's battery; every ISA's kernels: checkasm. */
#include <criterion/criterion.h>
#include <string.h>

#include "embtables/embtables.h"
#include "test_util.h"

#define NC 40
#define NB 7
#define MAXD 100

/* Bags over NC columns: repeats, pruned -1s, ties (columns 5 and 6 are equal: bag 1 is
   {0, 6}, bag 3 {5, 5, 5}, bag 6 {-1, 2, 38, 6, 5}), bag 2 empty. */
static const int64_t ids[] = {3, 7, 7, 0, 6, 5, 5, 5, 39, 12, 21, -1, 30, 1, -1, 2, 38, 6, 5};
static const int64_t offs[NB + 1] = {0, 3, 5, 5, 8, 13, 14, 19};
#define NNZ ((int64_t)(sizeof ids / sizeof *ids))

/* A table of @dt with seeded values; column 6 a copy of column 5 (ties). */
static EmbTable *table(EmbDtype dt, int32_t D, uint64_t seed)
{
    static float v[NC * MAXD];
    for (int64_t k = 0; k < NC * D; k++)
        v[k] = tu_randf(&seed);
    memcpy(v + 6 * D, v + 5 * D, (size_t)D * sizeof *v);
    EmbTable *t;
    cr_assert_eq(emb_table_create(&t, NC, D, dt, NULL), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_assign(t, v, NC, D, D), 0, "%s", emb_last_error());
    return t;
}

/* Column @c as the kernels see it: a one-id SUM bag (a quantized row's fma(q, s, b)). */
static void column(const EmbTable *t, int64_t c, float *out)
{
    static const int64_t one[2] = {0, 1};
    const EmbBatch b = {.ids = &c, .nnz = 1, .nbags = 1, .offsets = one};
    cr_assert_eq(emb_lookup(t, &b, NULL, out, emb_table_featuresize(t)), 0);
}

/* The reference forward of bag @bag and, per element, the id that gave its maximum. */
static void ref_bag(const EmbTable *t, const EmbPooling *p, int64_t bag, float *y,
                    int64_t *arg)
{
    const int32_t D = emb_table_featuresize(t);
    float x[MAXD];
    bool any = false;
    for (int64_t k = offs[bag]; k < offs[bag + 1]; k++) {
        if (ids[k] < 0)
            continue; /* EMB_PRUNE_INVALID */
        column(t, ids[k], x);
        for (int32_t i = 0; i < D; i++)
            if (!any || x[i] > y[i])
                y[i] = x[i], arg[i] = ids[k];
        any = true;
    }
    if (any)
        return;
    if (p->flags & EMB_USE_DEFAULT_ID) {
        column(t, p->default_id, y);
        for (int32_t i = 0; i < D; i++)
            arg[i] = p->default_id;
        return;
    }
    for (int32_t i = 0; i < D; i++)
        y[i] = 0.0f, arg[i] = -1;
}

Test(maxpool, forward_of_every_dtype_matches_the_reference)
{
    const EmbDtype dts[] = {EMB_F32, EMB_F16, EMB_BF16, EMB_INT8, EMB_INT4};
    const int32_t dims[] = {3, 16, 32, 64, 100};
    const EmbPooling pools[] = {
        {EMB_COMBINER_MAX, 0.0f, 0, EMB_PRUNE_INVALID},
        {EMB_COMBINER_MAX, 0.0f, 9, EMB_PRUNE_INVALID | EMB_USE_DEFAULT_ID},
        {EMB_COMBINER_MAX, 0.0f, 9, EMB_PRUNE_INVALID | EMB_USE_DEFAULT_ID | EMB_OUT_NONTEMPORAL},
    };
    const EmbBatch b = {.ids = ids, .nnz = NNZ, .nbags = NB, .offsets = offs};
    for (size_t di = 0; di < sizeof dts / sizeof *dts; di++)
        for (size_t k = 0; k < sizeof dims / sizeof *dims; k++) {
            const int32_t D = dims[k];
            if (dts[di] == EMB_INT4 && D % 2)
                continue;
            EmbTable *t = table(dts[di], D, 7 + (uint64_t)D);
            for (size_t pi = 0; pi < sizeof pools / sizeof *pools; pi++) {
                float out[NB * MAXD], y[MAXD];
                int64_t arg[MAXD];
                cr_assert_eq(emb_lookup(t, &b, &pools[pi], out, D), 0, "%s", emb_last_error());
                for (int64_t bag = 0; bag < NB; bag++) {
                    ref_bag(t, &pools[pi], bag, y, arg);
                    for (int32_t i = 0; i < D; i++)
                        cr_assert(out[bag * D + i] == y[i], "%s D %d pooling %zu bag %lld "
                                  "element %d: %g, not %g", emb_dtype_name(dts[di]), D, pi,
                                  (long long)bag, i, (double)out[bag * D + i], (double)y[i]);
                }
            }
            emb_table_destroy(&t);
        }
}

/* A fixed-size batch takes the same path: bags of 3 ids, one of 1 (a copy). */
Test(maxpool, fixed_bags_and_one_id_bags)
{
    EmbTable *t = table(EMB_F32, 16, 3);
    const int64_t fx[] = {1, 2, 3, 4, 4, 9};
    float out[2 * 16], y[16], one[16];
    const EmbPooling p = EMB_POOLING_MAX;
    const EmbBatch b = {.ids = fx, .nnz = 6, .nbags = 2, .bag_size = 3};
    cr_assert_eq(emb_lookup(t, &b, &p, out, 16), 0, "%s", emb_last_error());
    for (int bag = 0; bag < 2; bag++) {
        for (int i = 0; i < 16; i++)
            y[i] = -2.0f;
        for (int k = 0; k < 3; k++) {
            column(t, fx[bag * 3 + k], one);
            for (int i = 0; i < 16; i++)
                y[i] = one[i] > y[i] ? one[i] : y[i];
        }
        cr_assert(memcmp(out + bag * 16, y, sizeof y) == 0, "bag %d", bag);
    }
    const EmbBatch b1 = {.ids = fx, .nnz = 6, .nbags = 6, .bag_size = 1};
    float out1[6 * 16];
    cr_assert_eq(emb_lookup(t, &b1, &p, out1, 16), 0);
    for (int k = 0; k < 6; k++) {
        column(t, fx[k], one);
        cr_assert(memcmp(out1 + k * 16, one, sizeof one) == 0, "one-id bag %d", k);
    }
    emb_table_destroy(&t);
}

/* SGD with lr 1 after a MAX backward: each column loses exactly the sum, in bag order, of
   the elements of dy it gave the maximum of (ties to the first entry, a repeated id once,
   the default id an empty bag's whole row). */
Test(maxpool, backward_routes_each_element_to_its_maximum)
{
    const int32_t D = 16;
    const EmbPooling p = {EMB_COMBINER_MAX, 0.0f, 9, EMB_PRUNE_INVALID | EMB_USE_DEFAULT_ID};
    const EmbBatch b = {.ids = ids, .nnz = NNZ, .nbags = NB, .offsets = offs};
    EmbTable *t = table(EMB_F32, D, 11);
    float before[NC * 16], after[NC * 16], g[NC * 16] = {0}, dy[NB * 16], y[16];
    int64_t arg[16];
    uint64_t seed = 5;
    for (int k = 0; k < NB * D; k++)
        dy[k] = tu_randf(&seed);
    cr_assert_eq(emb_table_read(t, before, D), 0);
    for (int64_t bag = 0; bag < NB; bag++) {
        ref_bag(t, &p, bag, y, arg);
        for (int32_t i = 0; i < D; i++)
            if (arg[i] >= 0)
                g[arg[i] * D + i] = g[arg[i] * D + i] + dy[bag * D + i];
    }
    EmbGrad *gr;
    EmbIndexer *ix;
    EmbOptimizer *o;
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_SGD, 1.0f);
    cr_assert_eq(emb_grad_create(&gr), 0);
    cr_assert_eq(emb_indexer_create(&ix), 0);
    cr_assert_eq(emb_optimizer_create(&o, &c), 0);
    cr_assert_eq(emb_lookup_backward(t, &b, &p, dy, D, gr), 0, "%s", emb_last_error());
    cr_assert_eq(emb_update(o, t, gr, ix, 0), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_read(t, after, D), 0);
    for (int64_t k = 0; k < NC * D; k++)
        cr_assert(after[k] == before[k] - g[k], "column %lld element %lld: %g, not %g",
                  (long long)(k / D), (long long)(k % D), (double)after[k],
                  (double)(before[k] - g[k]));
    emb_optimizer_destroy(&o);
    emb_indexer_destroy(&ix);
    emb_grad_destroy(&gr);
    emb_table_destroy(&t);
}

/* Quantized and half-precision rows train under MAX, the same bits for any split count. */
Test(maxpool, training_every_dtype_is_deterministic)
{
    const EmbDtype dts[] = {EMB_F16, EMB_BF16, EMB_INT8, EMB_INT4};
    const EmbPooling p = {EMB_COMBINER_MAX, 0.0f, 9, EMB_PRUNE_INVALID | EMB_USE_DEFAULT_ID};
    const EmbBatch b = {.ids = ids, .nnz = NNZ, .nbags = NB, .offsets = offs};
    float dy[NB * 64];
    uint64_t seed = 9;
    for (int k = 0; k < NB * 64; k++)
        dy[k] = tu_randf(&seed);
    for (size_t di = 0; di < sizeof dts / sizeof *dts; di++) {
        uint64_t sums[2];
        for (int v = 0; v < 2; v++) {
            EmbTable *t = table(dts[di], 64, 13);
            EmbGrad *gr;
            EmbIndexer *ix;
            EmbOptimizer *o;
            EmbStrategy *s;
            const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
            const EmbStrategyOptions so = {.nthreads = 2, .num_splits = 3};
            cr_assert_eq(emb_grad_create(&gr), 0);
            cr_assert_eq(emb_indexer_create(&ix), 0);
            cr_assert_eq(emb_optimizer_create(&o, &c), 0);
            cr_assert_eq(emb_strategy_prealloc_concat(&s, &so), 0);
            for (int step = 0; step < 3; step++) {
                cr_assert_eq(emb_lookup_backward(t, &b, &p, dy, 64, gr), 0);
                const int r = v ? emb_update_many(s, o, &t, (const EmbGrad *const *)&gr, 1,
                                                  &ix, 0)
                                : emb_update(o, t, gr, ix, 0);
                cr_assert_eq(r, 0, "%s", emb_last_error());
            }
            sums[v] = tu_checksum(t);
            emb_strategy_destroy(&s);
            emb_optimizer_destroy(&o);
            emb_indexer_destroy(&ix);
            emb_grad_destroy(&gr);
            emb_table_destroy(&t);
        }
        cr_assert_eq(sums[0], sums[1], "%s: emb_update_many differs from emb_update",
                     emb_dtype_name(dts[di]));
    }
}

/* Weights and max_norm are refused (EMB_EINVAL, named), the output and gradient unchanged. */
Test(maxpool, weights_and_max_norm_are_refused)
{
    EmbTable *t = table(EMB_F32, 16, 1);
    float w[NNZ], out[NB * 16], dy[NB * 16] = {0};
    for (int k = 0; k < NNZ; k++)
        w[k] = 1.0f;
    tu_poison(out, NB * 16);
    const EmbBatch wb = {.ids = ids, .nnz = NNZ, .nbags = NB, .offsets = offs, .weights = w};
    const EmbBatch b = {.ids = ids, .nnz = NNZ, .nbags = NB, .offsets = offs};
    const EmbPooling p = {EMB_COMBINER_MAX, 0.0f, 0, EMB_PRUNE_INVALID};
    const EmbPooling pn = {EMB_COMBINER_MAX, 0.5f, 0, EMB_PRUNE_INVALID};
    cr_assert_eq(emb_lookup(t, &wb, &p, out, 16), EMB_EINVAL);
    cr_assert(strstr(emb_last_error(), "weights"), "%s", emb_last_error());
    cr_assert_eq(emb_lookup(t, &b, &pn, out, 16), EMB_EINVAL);
    cr_assert(strstr(emb_last_error(), "max_norm"), "%s", emb_last_error());
    cr_assert(tu_is_poison(out, NB * 16), "a refused lookup wrote its output");
    EmbGrad *gr;
    cr_assert_eq(emb_grad_create(&gr), 0);
    cr_assert_eq(emb_lookup_backward(t, &wb, &p, dy, 16, gr), EMB_EINVAL);
    cr_assert(strstr(emb_last_error(), "weights"), "%s", emb_last_error());
    const EmbPooling bad = {(EmbCombiner)5, 0.0f, 0, 0};
    cr_assert_eq(emb_lookup(t, &b, &bad, out, 16), EMB_EINVAL);
    emb_grad_destroy(&gr);
    emb_table_destroy(&t);
}

/* emb_maplookup of MAX-pooled tables (f32, bf16, int8 at D = 64, f32 at 3) under every
   strategy, thread and split count: the bits of emb_lookup, table by table. */
Test(maxpool, maplookup_under_every_strategy_is_the_lookup)
{
    const EmbDtype dts[4] = {EMB_F32, EMB_BF16, EMB_INT8, EMB_F32};
    const int32_t dims[4] = {64, 64, 64, 3};
    EmbTable *t[4];
    EmbBatch b[4];
    EmbPooling p[4];
    float want[4][NB * 64];
    for (int i = 0; i < 4; i++) {
        t[i] = table(dts[i], dims[i], 21 + (uint64_t)i);
        b[i] = (EmbBatch){.ids = ids, .nnz = NNZ, .nbags = NB, .offsets = offs};
        p[i] = (EmbPooling){EMB_COMBINER_MAX, 0.0f, 4, EMB_PRUNE_INVALID | EMB_USE_DEFAULT_ID};
        cr_assert_eq(emb_lookup(t[i], &b[i], &p[i], want[i], dims[i]), 0);
    }
    for (int kind = 0; kind < 4; kind++)
        for (int nth = 1; nth <= 3; nth++)
            for (int sp = 1; sp <= 4; sp += 3) {
                EmbStrategy *s = NULL;
                const EmbStrategyOptions so = {.nthreads = nth, .num_splits = sp};
                const int r = kind == 0   ? emb_strategy_sequential(&s)
                              : kind == 1 ? emb_strategy_parallel(&s, &so)
                              : kind == 2 ? emb_strategy_prealloc_concat(&s, &so)
                                          : emb_strategy_auto(&s, &so);
                cr_assert_eq(r, 0);
                float out[4][NB * 64];
                float *const per[4] = {out[0], out[1], out[2], out[3]};
                const EmbOutputs o = {.per_table = per};
                cr_assert_eq(emb_maplookup(s, t, 4, b, p, &o), 0, "%s", emb_last_error());
                for (int i = 0; i < 4; i++)
                    cr_assert(memcmp(out[i], want[i], (size_t)NB * dims[i] * sizeof(float)) == 0,
                              "%s, %d threads, %d splits: table %d", emb_strategy_name(s), nth,
                              sp, i);
                emb_strategy_destroy(&s);
            }
    for (int i = 0; i < 4; i++)
        emb_table_destroy(&t[i]);
}
