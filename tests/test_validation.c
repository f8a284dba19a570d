/* SPDX-License-Identifier: BSD-2-Clause */
/* test_validation.c — every enum, flag and count of the API is checked: a bad one gives an
 * error (naming it) and writes nothing. One test per input that was once accepted. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "test_util.h"

Test(validation, table_placement)
{
    EmbTable *t = NULL;
    EmbTableOptions o = {.placement = (EmbPlacement)7};
    cr_assert_eq(emb_table_create(&t, 4, 4, EMB_F32, &o), EMB_EINVAL);
    cr_assert(strstr(emb_last_error(), "placement 7"), "%s", emb_last_error());
    o.placement = (EmbPlacement)-1;
    cr_assert_eq(emb_table_create(&t, 4, 4, EMB_F32, &o), EMB_EINVAL);
    float mem[16];
    cr_assert_eq(emb_table_wrap(&t, mem, 4, 4, 4, EMB_F32, &o), EMB_EINVAL);
    o = (EmbTableOptions){.column_align = -64}; /* named as given, not as a size_t */
    cr_assert_eq(emb_table_create(&t, 4, 4, EMB_F32, &o), EMB_EINVAL);
    cr_assert(strstr(emb_last_error(), "column_align -64 "), "%s", emb_last_error());
    o = (EmbTableOptions){.placement = EMB_PLACE_NODE, .numa_node = -1};
    cr_assert_eq(emb_table_create(&t, 4, 4, EMB_F32, &o), EMB_EINVAL);
    cr_assert_null(t);
}

Test(validation, optimizer_placement_and_hyperparameters)
{
    EmbOptimizer *opt = NULL;
    EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    c.placement = (EmbPlacement)9;
    cr_assert_eq(emb_optimizer_create(&opt, &c), EMB_EINVAL);
    c = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    c.eps = INFINITY;
    cr_assert_eq(emb_optimizer_create(&opt, &c), EMB_EINVAL);
    c = emb_optimizer_defaults(EMB_OPT_FTRL, 0.1f);
    c.l1 = NAN;
    cr_assert_eq(emb_optimizer_create(&opt, &c), EMB_EINVAL);
    c = emb_optimizer_defaults(EMB_OPT_ADAM, 0.1f);
    c.bias_correction = 2;
    cr_assert_eq(emb_optimizer_create(&opt, &c), EMB_EINVAL);
    c = emb_optimizer_defaults((EmbOptimizerKind)6, 0.1f);
    cr_assert_eq(emb_optimizer_create(&opt, &c), EMB_EINVAL);
    cr_assert_null(opt);
}

Test(validation, pooling_flags_unknown_bits)
{
    float mem[12] = {0}, out[6];
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_wrap(&t, mem, 4, 3, 3, EMB_F32, NULL), 0);
    const int64_t ids[2] = {1, 2};
    const EmbBatch b = {.ids = ids, .nnz = 2, .nbags = 1, .bag_size = 2};
    EmbPooling p = EMB_POOLING_SUM;
    p.flags = 1u << 4;
    tu_poison(out, 6);
    cr_assert_eq(emb_lookup(t, &b, &p, out, 3), EMB_EINVAL);
    cr_assert(tu_is_poison(out, 6));
    cr_assert_eq(emb_batch_validate(t, &b, &p), EMB_EINVAL);
    p.flags = 0x80000000u | EMB_PRUNE_INVALID;
    cr_assert_eq(emb_lookup(t, &b, &p, out, 3), EMB_EINVAL);
    p.flags = EMB_PRUNE_INVALID | EMB_PRUNE_NONPOSITIVE_WEIGHTS | EMB_USE_DEFAULT_ID |
              EMB_OUT_NONTEMPORAL;
    cr_assert_eq(emb_lookup(t, &b, &p, out, 3), 0);
    emb_table_destroy(&t);
}

Test(validation, column_pointer_context)
{
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_create(&t, 4, 4, EMB_F32, NULL), 0);
    void *p = NULL;
    cr_assert_eq(emb_table_column_pointer(t, 1, (EmbContext)77, &p), EMB_EINVAL);
    cr_assert_eq(emb_table_column_pointer(t, 1, (EmbContext)-1, &p), EMB_EINVAL);
    cr_assert_null(p);
    cr_assert_eq(emb_table_column_pointer(t, 1, EMB_CTX_UPDATE, &p), 0);
    emb_table_destroy(&t);
}

Test(validation, store_negative_shards_and_cap)
{
    EmbStore *s = NULL;
    cr_assert_eq(emb_store_create(&s), 0);
    EmbVariableSpec spec = {.name = "t", .ncolumns = 10, .featuresize = 4, .nshards = -3};
    EmbTable *t = NULL;
    cr_assert_eq(emb_store_get(s, &spec, EMB_REUSE_NO, &t), EMB_EINVAL);
    cr_assert_null(t);
    spec.nshards = 0;
    spec.partition = EMB_PARTITION_OWN_SHARDS; /* not a mode: the store owns its shards */
    cr_assert_eq(emb_store_get(s, &spec, EMB_REUSE_NO, &t), EMB_EINVAL);
    spec.partition = 1u << 9;
    cr_assert_eq(emb_store_get(s, &spec, EMB_REUSE_NO, &t), EMB_EINVAL);
    cr_assert_null(t);
    int64_t n = -1;
    cr_assert_eq(emb_store_list(s, 0, NULL, 0, &n), 0);
    cr_assert_eq(n, 0);
    EmbTable *list[2];
    cr_assert_eq(emb_store_list(s, 0, list, -1, &n), EMB_EINVAL);
    cr_assert_eq(emb_store_uninitialized(s, list, -5, &n), EMB_EINVAL);
    emb_store_destroy(&s);
}

Test(validation, saver_keep_every_n_hours)
{
    char dir[] = "/tmp/emb_validation_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    EmbSaver *sv = NULL;
    const double bad[] = {NAN, -1.0, INFINITY};
    for (int i = 0; i < 3; i++) {
        const EmbSaverOptions o = {.keep_every_n_hours = bad[i]};
        cr_assert_eq(emb_saver_create(&sv, dir, "m", &o), EMB_EINVAL, "hours %g", bad[i]);
        cr_assert_null(sv);
    }
    const EmbSaverOptions ok = {.keep_every_n_hours = 0.5};
    cr_assert_eq(emb_saver_create(&sv, dir, "m", &ok), 0);
    emb_saver_destroy(&sv);
    cr_assert_eq(rmdir(dir), 0);
}

Test(validation, sparse_mask_zero_featuresize)
{
    const int64_t ids[2] = {1, 2};
    const float v[2] = {1, 2};
    const EmbSparseGrad in = {.ids = ids, .n = 2, .featuresize = 0, .values = v, .stride = 1};
    EmbSparseGrad out = {0};
    int64_t out_ids[2] = {-1, -1};
    float out_v[2];
    cr_assert_eq(emb_sparse_mask(&in, NULL, 0, &out, out_ids, out_v, 1), EMB_EINVAL);
    cr_assert_eq(out_ids[0], -1);
    cr_assert_eq(out.n, 0);
}

Test(validation, optimizer_state_negative_slot)
{
    EmbTable *t = NULL, *st = (EmbTable *)&st;
    cr_assert_eq(emb_table_create(&t, 4, 4, EMB_F32, NULL), 0);
    EmbOptimizer *opt = NULL;
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    cr_assert_eq(emb_optimizer_create(&opt, &c), 0);
    cr_assert_eq(emb_optimizer_attach(opt, t), 0);
    cr_assert_eq(emb_optimizer_state(opt, t, -1, &st, NULL), EMB_EINVAL);
    cr_assert_eq(st, (EmbTable *)&st);
    cr_assert_eq(emb_optimizer_state(opt, t, 0, &st, NULL), 0);
    cr_assert_not_null(st);
    cr_assert_eq(emb_optimizer_state(opt, t, 1, &st, NULL), 0);
    cr_assert_null(st); /* no such slot */
    emb_optimizer_destroy(&opt);
    emb_table_destroy(&t);
}

/* Without EMB_TABLE_CHECK_FINITE non-finite values go in (the documented default); with
 * it every write checks its inputs first and writes nothing. */
Test(validation, nonfinite_rejected_with_check_finite)
{
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    for (int checked = 0; checked < 2; checked++)
        for (int b = 0; b < 3; b++) {
            EmbTableOptions o = {.name = "nf", .flags = checked ? EMB_TABLE_CHECK_FINITE : 0};
            EmbTable *t = NULL;
            cr_assert_eq(emb_table_create(&t, 6, 4, EMB_F32, &o), 0);
            tu_fill_random(t, 7 + (uint64_t)b);
            const uint64_t sum0 = tu_checksum(t);
            const int want = checked ? EMB_ENONFINITE : 0;
            float rows[3 * 4];
            for (int i = 0; i < 12; i++)
                rows[i] = 0.25f * (float)i;
            rows[6] = bad[b];
            const int64_t ids[3] = {1, 3, 1};

            /* a sparse gradient, then a lookup's output gradient, then per-id weights */
            EmbOptimizer *opt = NULL;
            const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
            cr_assert_eq(emb_optimizer_create(&opt, &c), 0);
            EmbGrad *g = NULL;
            EmbIndexer *ix = NULL;
            cr_assert_eq(emb_grad_create(&g), 0);
            cr_assert_eq(emb_indexer_create(&ix), 0);
            const EmbSparseGrad sg = {ids, EMB_ID_I64, 3, 4, rows, 4};
            cr_assert_eq(emb_grad_set_sparse(g, t, &sg), 0);
            if (checked) {
                cr_assert_eq(emb_update(opt, t, g, ix, 0), want);
                cr_assert(strstr(emb_last_error(), "row 1"), "%s", emb_last_error());
                cr_assert_eq(tu_checksum(t), sum0);
                const EmbBatch batch = {.ids = ids, .nnz = 3, .nbags = 3, .bag_size = 1};
                cr_assert_eq(emb_lookup_backward(t, &batch, NULL, rows, 4, g), 0);
                cr_assert_eq(emb_update(opt, t, g, ix, 0), want);
                float w[3] = {1.0f, bad[b], 1.0f}, dy[12] = {0};
                const EmbBatch wb = {.ids = ids, .nnz = 3, .nbags = 1, .bag_size = 3,
                                     .weights = w};
                cr_assert_eq(emb_lookup_backward(t, &wb, NULL, dy, 4, g), 0);
                cr_assert_eq(emb_update(opt, t, g, ix, 0), want);
                cr_assert_eq(tu_checksum(t), sum0);
            }

            /* assign, scatter, initializer parameters */
            float all[6 * 4] = {0};
            all[13] = bad[b];
            cr_assert_eq(emb_table_assign_add(t, all, 6, 4, 4), want);
            if (checked)
                cr_assert_eq(tu_checksum(t), sum0);
            cr_assert_eq(emb_table_scatter_update(t, ids, 3, rows, 4), want);
            if (checked)
                cr_assert_eq(tu_checksum(t), sum0);
            const EmbInitializer init = {EMB_INIT_CONSTANT, bad[b], 0.0f, 0};
            cr_assert_eq(emb_table_initialize(t, &init), want);
            if (checked)
                cr_assert_eq(tu_checksum(t), sum0);
            emb_indexer_destroy(&ix);
            emb_grad_destroy(&g);
            emb_optimizer_destroy(&opt);
            emb_table_destroy(&t);
        }
    EmbTable *t = NULL;
    const EmbTableOptions o = {.flags = 1u << 5};
    cr_assert_eq(emb_table_create(&t, 2, 2, EMB_F32, &o), EMB_EINVAL);
    cr_assert_str_eq(emb_strerror(EMB_ENONFINITE), "non-finite value");
}

Test(validation, version_matches_headers)
{
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", EMB_VERSION_MAJOR, EMB_VERSION_MINOR,
             EMB_VERSION_PATCH);
    cr_assert_str_eq(emb_version(), want);
}
