/* SPDX-License-Identifier: BSD-2-Clause */
/* test_update.c — gradients, the indexer, the fused optimizers of emb_update against
 * double-precision references, non-temporal stores and bad input. */
#include <criterion/criterion.h>

#include "test_update_ref.h"

Test(indexer, golden_first_appearance)
{
    const int64_t ids[] = {10, 4, 10, 100, 4, 4, 4, 1, 9, 10, 5};
    const int64_t want_ids[] = {10, 4, 100, 1, 9, 5}, want_counts[] = {3, 4, 1, 1, 1, 1};
    EmbIndexer *ix = NULL;
    cr_assert_eq(emb_indexer_create(&ix), 0);
    for (int rep = 0; rep < 3; rep++) { /* reuse gives the same answer */
        cr_assert_eq(emb_indexer_index(ix, ids, 11), 0);
        const int64_t *d, *c;
        cr_assert_eq(emb_indexer_distinct(ix, &d, &c), 6);
        for (int i = 0; i < 6; i++) {
            cr_assert_eq(d[i], want_ids[i]);
            cr_assert_eq(c[i], want_counts[i]);
        }
    }
    cr_assert_eq(emb_indexer_index(ix, NULL, 0), 0);
    cr_assert_eq(emb_indexer_distinct(ix, NULL, NULL), 0);
    cr_assert_eq(emb_indexer_index(ix, ids, -1), EMB_EINVAL);
    emb_indexer_destroy(&ix);
    cr_assert_null(ix);
}

Test(indexer, random_against_quadratic_reference)
{
    uint64_t seed = 7;
    EmbIndexer *ix = NULL;
    cr_assert_eq(emb_indexer_create(&ix), 0);
    for (int64_t n = 1; n <= 3000; n = n * 3 + 1) {
        int64_t *ids = malloc((size_t)n * sizeof *ids);
        for (int64_t k = 0; k < n; k++) /* huge sparse ids, many duplicates */
            ids[k] = (int64_t)(tu_rand(&seed) % (uint64_t)(n / 2 + 1)) * 1000003 - 5;
        cr_assert_eq(emb_indexer_index(ix, ids, n), 0);
        const int64_t *d, *c;
        const int64_t nd = emb_indexer_distinct(ix, &d, &c);
        int64_t next = 0, total = 0;
        for (int64_t k = 0; k < n; k++) {
            int64_t j = 0;
            while (j < k && ids[j] != ids[k])
                j++;
            if (j < k)
                continue; /* seen before */
            int64_t cnt = 0;
            for (int64_t m = k; m < n; m++)
                cnt += ids[m] == ids[k];
            cr_assert_eq(d[next], ids[k]);
            cr_assert_eq(c[next], cnt);
            next++;
            total += cnt;
        }
        cr_assert_eq(nd, next);
        cr_assert_eq(total, n);
        free(ids);
    }
    emb_indexer_destroy(&ix);
}

/* Runs @steps of (random batch with duplicates -> pullback -> emb_update) with optimizer
 * @c on a table and the reference, and compares. */
static void optimizer_case(EmbOptimizerConfig c, EmbCombiner comb, int weighted, EmbDtype dt,
                           double tol)
{
    const int64_t ncol = 37, nbags = 12;
    const int32_t D = 11;
    uint64_t seed = 1234 + (uint64_t)c.kind * 17 + (uint64_t)comb;
    EmbTable *t = tu_table(ncol, D, dt, seed);
    double *W = tu_read_double(t);
    RefOpt ref;
    ref_opt_init(&ref, c, ncol, D);
    Kit k;
    cr_assert_eq(kit_init(&k, c), 0);
    EmbOptimizer *opt = k.o;
    EmbIndexer *ix = k.ix;
    EmbGrad *g = k.g;
    int64_t ids[64], offsets[13];
    float wts[64], dy[12 * 11];
    for (int step = 0; step < 5; step++) {
        offsets[0] = 0;
        for (int64_t b = 0; b < nbags; b++)
            offsets[b + 1] = offsets[b] + (int64_t)(tu_rand(&seed) % 6); /* empty bags too */
        for (int64_t k = 0; k < offsets[nbags]; k++) {
            ids[k] = (int64_t)(tu_rand(&seed) % 9) * 4; /* few distinct: duplicates */
            wts[k] = 0.25f + (float)(tu_rand(&seed) % 8) * 0.25f;
        }
        for (int i = 0; i < nbags * D; i++)
            dy[i] = tu_randf(&seed);
        const EmbBatch b = {.ids = ids, .nnz = offsets[nbags], .nbags = nbags,
                            .offsets = offsets, .weights = weighted ? wts : NULL};
        const EmbPooling p = {.combiner = comb};
        cr_assert_eq(emb_lookup_backward(t, &b, &p, dy, D, g), 0);
        cr_assert_eq(emb_update(opt, t, g, ix, 0), 0, "%s", emb_last_error());
        double *G = calloc((size_t)(ncol * D), sizeof(double));
        char touched[37] = {0};
        ref_pullback(&b, &p, dy, D, D, G, touched);
        ref_opt_step(&ref, W, G, touched, ncol);
        free(G);
    }
    double *got = tu_read_double(t);
    for (int64_t i = 0; i < ncol * D; i++)
        cr_assert(fabs(got[i] - W[i]) <= tol * (1 + fabs(W[i])),
                  "kind %d dtype %d: element %lld is %.9g, reference %.9g (tol %g)",
                  (int)c.kind, (int)dt, (long long)i, got[i], W[i], tol);
    int64_t steps;
    EmbTable *slot;
    cr_assert_eq(emb_optimizer_state(opt, t, 0, &slot, &steps), 0);
    cr_assert_eq(steps, 5);
    cr_assert_eq(slot == NULL, c.kind == EMB_OPT_SGD);
    free(got);
    free(W);
    free(ref.s);
    kit_free(&k);
    emb_table_destroy(&t);
}

/* f32 results within 2e-5 relative of the double reference over 5 steps */
Test(optimizers, sgd_sum) { optimizer_case(emb_optimizer_defaults(EMB_OPT_SGD, 0.3f), EMB_COMBINER_SUM, 0, EMB_F32, 2e-5); }
Test(optimizers, sgd_mean_weighted) { optimizer_case(emb_optimizer_defaults(EMB_OPT_SGD, 0.3f), EMB_COMBINER_MEAN, 1, EMB_F32, 2e-5); }
Test(optimizers, sgd_sqrtn_weighted) { optimizer_case(emb_optimizer_defaults(EMB_OPT_SGD, 0.3f), EMB_COMBINER_SQRTN, 1, EMB_F32, 2e-5); }
Test(optimizers, adagrad) { optimizer_case(emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f), EMB_COMBINER_SUM, 1, EMB_F32, 2e-5); }
Test(optimizers, rowwise_adagrad) { optimizer_case(emb_optimizer_defaults(EMB_OPT_ROWWISE_ADAGRAD, 0.1f), EMB_COMBINER_MEAN, 0, EMB_F32, 2e-5); }
Test(optimizers, adam) { optimizer_case(emb_optimizer_defaults(EMB_OPT_ADAM, 0.01f), EMB_COMBINER_SUM, 1, EMB_F32, 2e-5); }

Test(optimizers, adam_no_bias_correction)
{
    EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAM, 0.01f);
    c.bias_correction = 0;
    optimizer_case(c, EMB_COMBINER_SQRTN, 0, EMB_F32, 2e-5);
}

Test(optimizers, ftrl_seed002)
{
    EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_FTRL, 0.1f);
    c.l1 = 2.0f; /* seed 002: FtrlOptimizer(0.1, l1=2.0, l2=1e-5) */
    c.l2 = 1e-5f;
    optimizer_case(c, EMB_COMBINER_SUM, 0, EMB_F32, 2e-5);
    c.l1 = 0.01f;
    c.lr_power = -0.7f; /* the general power path */
    optimizer_case(c, EMB_COMBINER_MEAN, 1, EMB_F32, 5e-5);
}

/* 16-bit storage rounds every step: within a few ulps of the format (bf16 2^-8) */
Test(optimizers, f16_bf16_storage)
{
    optimizer_case(emb_optimizer_defaults(EMB_OPT_SGD, 0.3f), EMB_COMBINER_SUM, 0, EMB_F16, 4e-3);
    optimizer_case(emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f), EMB_COMBINER_SUM, 0, EMB_BF16, 3e-2);
}

Test(optimizers, bad_config)
{
    EmbOptimizer *o = NULL;
    EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_SGD, 0.0f);
    cr_assert_eq(emb_optimizer_create(&o, &c), EMB_EINVAL);
    c = emb_optimizer_defaults(EMB_OPT_ADAM, 0.1f);
    c.beta1 = 1.0f;
    cr_assert_eq(emb_optimizer_create(&o, &c), EMB_EINVAL);
    c = emb_optimizer_defaults(EMB_OPT_FTRL, 0.1f);
    c.initial_accumulator = 0.0f;
    cr_assert_eq(emb_optimizer_create(&o, &c), EMB_EINVAL);
    cr_assert_null(o);
}

/* Materialised gradient with duplicates, int32 ids: SGD sums them once per column. */
Test(update, sparse_grad_duplicates_sgd)
{
    float mem[6 * 3] = {0};
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_wrap(&t, mem, 6, 3, 3, EMB_F32, NULL), 0);
    const int32_t ids[] = {5, 1, 5, 5};
    const float vals[] = {1, 2, 3, 10, 20, 30, 100, 200, 300, 1000, 2000, 3000};
    const EmbSparseGrad sg = {.ids = ids, .id_type = EMB_ID_I32, .n = 4, .featuresize = 3,
                              .values = vals, .stride = 3};
    Kit k;
    cr_assert_eq(kit_init(&k, emb_optimizer_defaults(EMB_OPT_SGD, 0.5f)), 0);
    EmbGrad *g = k.g;
    EmbIndexer *ix = k.ix;
    EmbOptimizer *o = k.o;
    cr_assert_eq(emb_grad_set_sparse(g, t, &sg), 0);
    cr_assert_eq(emb_update(o, t, g, ix, 0), 0);
    const float want5[] = {-550.5f, -1101.0f, -1651.5f}, want1[] = {-5, -10, -15};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(mem[5 * 3 + i], want5[i]); /* exact: sums of small integers */
        cr_assert_eq(mem[1 * 3 + i], want1[i]);
        cr_assert_eq(mem[0 * 3 + i], 0.0f);
    }
    kit_free(&k);
    emb_table_destroy(&t);
}

/*
 * A gradient of 4096 rows or more of a table of columns is grouped by sorting its ids
 * (plan.c): each column's rows must still be summed in row order. The same update as a
 * gradient of one row per column, summed here in row order (a small gradient, hashed),
 * gives the same bits; the values span 2^-10..2^10, so another order gives others.
 */
static void sorted_grouping_case(EmbIdType id_type)
{
    const int64_t ncol = 3000, n = 9000;
    const int32_t D = 8;
    uint64_t seed = 99;
    int64_t *ids = malloc((size_t)n * sizeof *ids);
    int32_t *ids32 = malloc((size_t)n * sizeof *ids32);
    float *vals = malloc((size_t)(n * D) * sizeof *vals);
    float *sum = calloc((size_t)(ncol * D), sizeof *sum), *rev = calloc((size_t)(ncol * D), sizeof *rev);
    int64_t *cnt = calloc((size_t)ncol, sizeof *cnt);
    for (int64_t k = 0; k < n; k++) {
        ids[k] = (int64_t)(tu_rand(&seed) % (uint64_t)ncol);
        ids32[k] = (int32_t)ids[k];
        for (int32_t e = 0; e < D; e++)
            vals[k * D + e] = ldexpf(tu_randf(&seed), (int)(tu_rand(&seed) % 21) - 10);
    }
    for (int64_t k = 0; k < n; k++) { /* row order, as plan.c's pool: x first, then acc + x */
        for (int32_t e = 0; e < D; e++)
            sum[ids[k] * D + e] = cnt[ids[k]] ? sum[ids[k] * D + e] + vals[k * D + e] : vals[k * D + e];
        cnt[ids[k]]++;
    }
    memset(cnt, 0, (size_t)ncol * sizeof *cnt);
    for (int64_t k = n - 1; k >= 0; k--) {
        for (int32_t e = 0; e < D; e++)
            rev[ids[k] * D + e] = cnt[ids[k]] ? rev[ids[k] * D + e] + vals[k * D + e] : vals[k * D + e];
        cnt[ids[k]]++;
    }
    cr_assert_neq(memcmp(sum, rev, (size_t)(ncol * D) * sizeof *sum), 0,
                  "the order of the sum should matter here");
    int64_t *cols = malloc((size_t)ncol * sizeof *cols), m = 0;
    float *rows = malloc((size_t)(ncol * D) * sizeof *rows);
    for (int64_t c = 0; c < ncol; c++)
        if (cnt[c]) {
            cols[m] = c;
            memcpy(rows + m * D, sum + c * D, (size_t)D * sizeof *rows);
            m++;
        }
    cr_assert_lt(m, 4096, "the reference gradient is hashed");
    EmbTable *a = tu_table(ncol, D, EMB_F32, 5), *b = tu_table(ncol, D, EMB_F32, 5);
    Kit k;
    cr_assert_eq(kit_init(&k, emb_optimizer_defaults(EMB_OPT_SGD, 0.5f)), 0);
    const EmbSparseGrad big = {.ids = id_type == EMB_ID_I32 ? (const void *)ids32 : (const void *)ids,
                               .id_type = id_type, .n = n, .featuresize = D, .values = vals,
                               .stride = D};
    const EmbSparseGrad small = {.ids = cols, .id_type = EMB_ID_I64, .n = m, .featuresize = D,
                                 .values = rows, .stride = D};
    cr_assert_eq(emb_grad_set_sparse(k.g, a, &big), 0);
    cr_assert_eq(emb_update(k.o, a, k.g, k.ix, 0), 0, "%s", emb_last_error());
    const int64_t *dids, *dcounts;
    cr_assert_eq(emb_indexer_distinct(k.ix, &dids, &dcounts), m);
    for (int64_t d = 0; d < m; d++) { /* ascending, with their counts */
        cr_assert_eq(dids[d], cols[d]);
        cr_assert_eq(dcounts[d], cnt[cols[d]]);
    }
    cr_assert_eq(emb_grad_set_sparse(k.g, b, &small), 0);
    cr_assert_eq(emb_update(k.o, b, k.g, k.ix, 0), 0, "%s", emb_last_error());
    cr_assert_eq(memcmp(emb_table_data(a, NULL), emb_table_data(b, NULL), (size_t)(ncol * D) * sizeof(float)), 0,
                 "a column's rows were not summed in row order");
    kit_free(&k);
    emb_table_destroy(&a);
    emb_table_destroy(&b);
    free(ids);
    free(ids32);
    free(vals);
    free(sum);
    free(rev);
    free(cnt);
    free(cols);
    free(rows);
}

Test(update, sorted_grouping_sums_in_row_order_i64) { sorted_grouping_case(EMB_ID_I64); }
Test(update, sorted_grouping_sums_in_row_order_i32) { sorted_grouping_case(EMB_ID_I32); }

/* A learning-rate schedule: emb_optimizer_set_lr changes the next step, keeps the state. */
Test(update, set_lr_between_steps)
{
    float mem[2 * 2] = {0};
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_wrap(&t, mem, 2, 2, 2, EMB_F32, NULL), 0);
    const int64_t ids[] = {1};
    const float vals[] = {1, 2};
    const EmbSparseGrad sg = {.ids = ids, .n = 1, .featuresize = 2, .values = vals, .stride = 2};
    Kit k;
    cr_assert_eq(kit_init(&k, emb_optimizer_defaults(EMB_OPT_SGD, 0.5f)), 0);
    cr_assert_eq(emb_grad_set_sparse(k.g, t, &sg), 0);
    cr_assert_eq(emb_update(k.o, t, k.g, k.ix, 0), 0);
    cr_assert_eq(emb_optimizer_set_lr(k.o, 0.25f), 0);
    cr_assert_eq(emb_optimizer_set_lr(k.o, -1.0f), EMB_EINVAL);
    cr_assert_eq(emb_optimizer_set_lr(k.o, NAN), EMB_EINVAL);
    cr_assert_eq(emb_optimizer_set_lr(NULL, 1.0f), EMB_ENULL);
    cr_assert_eq(emb_update(k.o, t, k.g, k.ix, 0), 0);
    cr_assert_eq(mem[2], -0.75f); /* exact: 0.5 + 0.25 (the refused lrs changed nothing) */
    cr_assert_eq(mem[3], -1.5f);
    cr_assert_eq(mem[0], 0.0f);
    kit_free(&k);
    emb_table_destroy(&t);
}

/* Gather backward, pruning and default_id through SGD with lr 1: table -= gradient. */
Test(update, pullback_gather_prune_default)
{
    const int32_t D = 4;
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_create(&t, 10, D, EMB_F32, NULL), 0);
    const int64_t ids[] = {3, -1, 3, 7, 2, -4};
    const float w[] = {1.0f, 1.0f, 0.0f, 2.0f, -1.0f, 1.0f};
    const int64_t offsets[] = {0, 2, 3, 6};
    float dy[3 * 4];
    uint64_t seed = 5;
    for (int i = 0; i < 12; i++)
        dy[i] = tu_randf(&seed);
    const EmbBatch b = {.ids = ids, .nnz = 6, .nbags = 3, .offsets = offsets, .weights = w};
    const EmbPooling p = {.combiner = EMB_COMBINER_MEAN, .default_id = 9,
                          .flags = EMB_PRUNE_INVALID | EMB_PRUNE_NONPOSITIVE_WEIGHTS |
                                   EMB_USE_DEFAULT_ID};
    Kit k;
    cr_assert_eq(kit_init(&k, emb_optimizer_defaults(EMB_OPT_SGD, 1.0f)), 0);
    EmbGrad *g = k.g;
    EmbIndexer *ix = k.ix;
    EmbOptimizer *o = k.o;
    cr_assert_eq(emb_lookup_backward(t, &b, &p, dy, D, g), 0);
    cr_assert_eq(emb_update(o, t, g, ix, 0), 0, "%s", emb_last_error());
    double G[10 * 4] = {0};
    char touched[10] = {0};
    ref_pullback(&b, &p, dy, D, D, G, touched);
    cr_assert(touched[3] && touched[9] && touched[7] && !touched[2]);
    float out[10 * 4];
    emb_table_read(t, out, D);
    for (int i = 0; i < 40; i++) /* one product and a sum of one or two terms */
        cr_assert(fabs(out[i] + G[i]) <= 1e-6, "element %d: %g vs %g", i, out[i], -G[i]);
    /* plain gather (NONE): one row per id */
    const int64_t gids[] = {1, 1, 4};
    const EmbBatch gb = {.ids = gids, .nnz = 3, .nbags = 3, .bag_size = 1};
    const EmbPooling gp = EMB_POOLING_GATHER;
    cr_assert_eq(emb_lookup_backward(t, &gb, &gp, dy, D, g), 0);
    cr_assert_eq(emb_update(o, t, g, ix, 0), 0);
    emb_table_read(t, out, D);
    for (int i = 0; i < D; i++) {
        cr_assert_float_eq(out[1 * D + i], -(dy[i] + dy[D + i]), 1e-6);
        cr_assert_float_eq(out[4 * D + i], -dy[2 * D + i], 1e-6);
    }
    kit_free(&k);
    emb_table_destroy(&t);
}

/* max_norm far above every column's norm changes nothing: same bits as without it. */
Test(update, max_norm_unclipped_equals_plain)
{
    EmbTable *a = tu_table(50, 8, EMB_F32, 3), *bt = tu_table(50, 8, EMB_F32, 3);
    int64_t ids[40];
    float dy[10 * 8];
    uint64_t seed = 11;
    for (int k = 0; k < 40; k++)
        ids[k] = (int64_t)(tu_rand(&seed) % 20);
    for (int i = 0; i < 80; i++)
        dy[i] = tu_randf(&seed);
    const EmbBatch b = {.ids = ids, .nnz = 40, .nbags = 10, .bag_size = 4};
    EmbPooling p = EMB_POOLING_SUM;
    Kit k;
    cr_assert_eq(kit_init(&k, emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f)), 0);
    EmbGrad *g = k.g;
    EmbIndexer *ix = k.ix;
    EmbOptimizer *o = k.o;
    cr_assert_eq(emb_lookup_backward(a, &b, &p, dy, 8, g), 0);
    cr_assert_eq(emb_update(o, a, g, ix, 0), 0);
    p.max_norm = 1000.0f;
    cr_assert_eq(emb_lookup_backward(bt, &b, &p, dy, 8, g), 0);
    cr_assert_eq(emb_update(o, bt, g, ix, 0), 0);
    cr_assert_eq(tu_checksum(a), tu_checksum(bt));
    kit_free(&k);
    emb_table_destroy(&a);
    emb_table_destroy(&bt);
}

/* EMB_UPDATE_NONTEMPORAL gives the same bits, for every optimizer and dtype. */
Test(update, nontemporal_identical)
{
    for (int kind = EMB_OPT_SGD; kind <= EMB_OPT_ADAM; kind++)
        for (int dt = EMB_F32; dt <= EMB_BF16; dt++) {
            EmbTable *t[2] = {tu_table(300, 64, (EmbDtype)dt, 9), tu_table(300, 64, (EmbDtype)dt, 9)};
            const EmbOptimizerConfig c = emb_optimizer_defaults((EmbOptimizerKind)kind, 0.05f);
            int64_t ids[500];
            float dy[500 * 64];
            uint64_t seed = 99;
            for (int k = 0; k < 500; k++)
                ids[k] = (int64_t)(tu_rand(&seed) % 300);
            for (int i = 0; i < 500 * 64; i++)
                dy[i] = tu_randf(&seed);
            const EmbSparseGrad sg = {.ids = ids, .n = 500, .featuresize = 64, .values = dy,
                                      .stride = 64};
            for (int v = 0; v < 2; v++) {
                Kit k;
                cr_assert_eq(kit_init(&k, c), 0);
                cr_assert_eq(emb_grad_set_sparse(k.g, t[v], &sg), 0);
                for (int s = 0; s < 3; s++)
                    cr_assert_eq(emb_update(k.o, t[v], k.g, k.ix,
                                            v ? EMB_UPDATE_NONTEMPORAL : 0), 0);
                kit_free(&k);
            }
            cr_assert_eq(tu_checksum(t[0]), tu_checksum(t[1]), "kind %d dtype %d", kind, dt);
            emb_table_destroy(&t[0]);
            emb_table_destroy(&t[1]);
        }
}

/* Bad input: an error, and the table (and the optimizer state) bit-identical after. */
Test(update, bad_input_writes_nothing)
{
    EmbTable *t = tu_table(20, 4, EMB_F32, 1), *other = tu_table(20, 4, EMB_F32, 2);
    Kit k;
    cr_assert_eq(kit_init(&k, emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f)), 0);
    EmbGrad *g = k.g;
    EmbIndexer *ix = k.ix;
    EmbOptimizer *o = k.o;
    const uint64_t sum = tu_checksum(t);
    float vals[4 * 4] = {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4};
    int64_t ids[] = {1, 2, 20, 3};
    EmbSparseGrad sg = {.ids = ids, .n = 4, .featuresize = 4, .values = vals, .stride = 4};
    cr_assert_eq(emb_update(o, t, g, ix, 0), EMB_EINVAL); /* nothing recorded */
    cr_assert_eq(emb_grad_set_sparse(g, t, &sg), 0);
    cr_assert_eq(emb_update(o, t, g, ix, 0), EMB_ERANGE);
    cr_assert(strstr(emb_last_error(), "id 20 at position 2"), "%s", emb_last_error());
    ids[2] = -1;
    cr_assert_eq(emb_update(o, t, g, ix, 0), EMB_ERANGE);
    ids[2] = 4;
    cr_assert_eq(emb_update(o, other, g, ix, 0), EMB_EINVAL); /* recorded for t */
    cr_assert_eq(emb_update(o, t, g, ix, 0x100), EMB_EINVAL); /* unknown flag */
    sg.featuresize = 3;
    cr_assert_eq(emb_grad_set_sparse(g, t, &sg), EMB_ESHAPE);
    sg.featuresize = 4;
    sg.stride = 2;
    cr_assert_eq(emb_grad_set_sparse(g, t, &sg), EMB_ESTRIDE);
    /* a pullback whose ids were changed after recording */
    int64_t bids[] = {0, 1, 2, 3};
    float dy[2 * 4] = {1, 2, 3, 4, 5, 6, 7, 8};
    const EmbBatch b = {.ids = bids, .nnz = 4, .nbags = 2, .bag_size = 2};
    cr_assert_eq(emb_lookup_backward(t, &b, NULL, dy, 3, g), EMB_ESTRIDE);
    cr_assert_eq(emb_lookup_backward(t, &b, NULL, dy, 4, g), 0);
    bids[3] = 99;
    cr_assert_eq(emb_update(o, t, g, ix, 0), EMB_ERANGE);
    cr_assert_eq(tu_checksum(t), sum);
    cr_assert_eq(emb_update(NULL, t, g, ix, 0), EMB_ENULL);
    bids[3] = 3;
    cr_assert_eq(emb_update(o, t, g, ix, 0), 0); /* valid again: now it writes */
    cr_assert_neq(tu_checksum(t), sum);
    kit_free(&k);
    emb_table_destroy(&t);
    emb_table_destroy(&other);
}

/* An empty gradient is a no-op that still counts as a step. */
Test(update, empty_gradient)
{
    EmbTable *t = tu_table(5, 4, EMB_F32, 1);
    const uint64_t sum = tu_checksum(t);
    Kit k;
    cr_assert_eq(kit_init(&k, emb_optimizer_defaults(EMB_OPT_ADAM, 0.1f)), 0);
    EmbGrad *g = k.g;
    EmbIndexer *ix = k.ix;
    EmbOptimizer *o = k.o;
    const EmbSparseGrad sg = {.featuresize = 4, .stride = 4};
    cr_assert_eq(emb_grad_set_sparse(g, t, &sg), 0);
    cr_assert_eq(emb_update(o, t, g, ix, 0), 0);
    cr_assert_eq(tu_checksum(t), sum);
    int64_t step;
    EmbTable *slot;
    cr_assert_eq(emb_optimizer_state(o, t, 0, &slot, &step), 0);
    cr_assert_eq(step, 1);
    cr_assert_eq(emb_table_ncolumns(slot), 5);
    cr_assert_eq(emb_table_featuresize(slot), 8);
    cr_assert_eq(emb_optimizer_set_step(o, t, -1), EMB_EINVAL);
    cr_assert_eq(emb_optimizer_set_step(NULL, t, 3), EMB_ENULL);
    cr_assert_eq(emb_optimizer_state(o, t, 0, &slot, &step), 0);
    cr_assert_eq(step, 1); /* the failed calls changed nothing */
    cr_assert_eq(emb_optimizer_set_step(o, t, 41), 0);
    cr_assert_eq(emb_optimizer_state(o, t, 0, &slot, &step), 0);
    cr_assert_eq(step, 41);
    emb_optimizer_detach(o, t);
    cr_assert_eq(emb_optimizer_state(o, t, 0, &slot, &step), EMB_ENOTFOUND);
    cr_assert_eq(emb_optimizer_set_step(o, t, 3), EMB_ENOTFOUND);
    kit_free(&k);
    emb_table_destroy(&t);
}

/* A partitioned table (columns behind the column pointer) updates exactly as a simple one. */
Test(update, partitioned_table_same_bits)
{
    const int64_t R = 23;
    const int32_t D = 6;
    EmbTable *simple = tu_table(R, D, EMB_F32, 8), *part = NULL;
    cr_assert_eq(emb_table_partitioned_create(&part, R, D, EMB_F32, 4, EMB_PARTITION_MOD, NULL), 0);
    float v[23 * 6], a[23 * 6], b[23 * 6];
    cr_assert_eq(emb_table_read(simple, v, D), 0);
    cr_assert_eq(emb_table_assign(part, v, R, D, D), 0);
    int64_t ids[30];
    float dy[10 * 6];
    uint64_t seed = 77;
    for (int k = 0; k < 30; k++)
        ids[k] = (int64_t)(tu_rand(&seed) % (uint64_t)R);
    for (int i = 0; i < 60; i++)
        dy[i] = tu_randf(&seed);
    const EmbBatch bt = {.ids = ids, .nnz = 30, .nbags = 10, .bag_size = 3};
    EmbTable *tables[2] = {simple, part};
    Kit k;
    cr_assert_eq(kit_init(&k, emb_optimizer_defaults(EMB_OPT_ADAM, 0.01f)), 0);
    for (int step = 0; step < 3; step++)
        for (int t = 0; t < 2; t++) {
            cr_assert_eq(emb_lookup_backward(tables[t], &bt, NULL, dy, D, k.g), 0);
            cr_assert_eq(emb_update(k.o, tables[t], k.g, k.ix, 0), 0, "%s", emb_last_error());
        }
    cr_assert_eq(emb_table_read(simple, a, D), 0);
    cr_assert_eq(emb_table_read(part, b, D), 0);
    cr_assert_eq(memcmp(a, b, sizeof a), 0);
    cr_assert_neq(memcmp(a, v, sizeof a), 0);
    kit_free(&k);
    emb_table_destroy(&part);
    emb_table_destroy(&simple);
}
