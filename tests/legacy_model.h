/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * legacy_model.h — the tables, optimizer and training behind tests/data/legacy-*.safetensors,
 * checkpoints written by the library as of ce17ca2 (before the table contract, issue 24):
 * every kind a checkpoint holds (f32 / f16 / bf16, partitioned mod and div, dynamic with an
 * admission sketch, partitioned over dynamic shards) trained a few steps with Adam, and a
 * second model with FTRL. tests/legacy_gen.c writes the files; test_ckpt_legacy.c rebuilds
 * the model with today's library and checks that the files restore bit for bit and that a
 * save today writes the same bytes.
 */
#ifndef EMB_TEST_LEGACY_MODEL_H
#define EMB_TEST_LEGACY_MODEL_H

#include <stdio.h>
#include <stdlib.h>

#include "embtables/embtables.h"

#define LEGACY_NT 7

static const char *const legacy_names[LEGACY_NT] = {"f32", "f16", "bf16", "pdiv", "pmod",
                                                    "dyn", "pdyn"};

#define LEGACY_CHECK(x)                                                                    \
    do {                                                                                   \
        if ((x) != 0) {                                                                    \
            fprintf(stderr, "%s: %s\n", #x, emb_last_error());                             \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

/* The seven tables, empty (initialised as they were created). */
static void legacy_tables(EmbTable **t)
{
    const EmbInitializer in = {EMB_INIT_NORMAL, 0, 1, 11};
    for (int i = 0; i < 3; i++) {
        const EmbTableOptions o = {.name = legacy_names[i]};
        LEGACY_CHECK(emb_table_create(&t[i], 19 + i, 3 + 2 * i, (EmbDtype)i, &o));
        LEGACY_CHECK(emb_table_initialize(t[i], &in));
    }
    for (int i = 3; i < 5; i++) {
        const EmbTableOptions o = {.name = legacy_names[i]};
        LEGACY_CHECK(emb_table_partitioned_create(&t[i], 23, 4, EMB_F32, 3,
                                                  i == 3 ? EMB_PARTITION_DIV : EMB_PARTITION_MOD,
                                                  &o));
        LEGACY_CHECK(emb_table_initialize(t[i], &in));
    }
    const EmbDynamicOptions d = {.admit_after = 2, .sketch_width = 32, .table = {.name = "dyn"},
                                 .init = {EMB_INIT_UNIFORM, -1, 1, 3}};
    LEGACY_CHECK(emb_table_dynamic_create(&t[5], 6, EMB_F32, &d));
    EmbTable *sh[3];
    for (int i = 0; i < 3; i++) {
        const EmbDynamicOptions ds = {.admit_after = 1, .sketch_width = 16,
                                      .init = {EMB_INIT_UNIFORM, -0.5, 0.5, 5}};
        LEGACY_CHECK(emb_table_dynamic_create(&sh[i], 5, EMB_F16, &ds));
    }
    const EmbTableOptions po = {.name = "pdyn"};
    LEGACY_CHECK(emb_table_partitioned(&t[6], sh, 3, EMB_PARTITION_MOD | EMB_PARTITION_OWN_SHARDS,
                                       &po));
}

/* @steps sparse updates of every table by @opt (ids repeat, some new to dynamic tables). */
static void legacy_train(EmbTable **t, EmbOptimizer *opt, int steps)
{
    EmbIndexer *ix = NULL;
    EmbGrad *g = NULL;
    LEGACY_CHECK(emb_indexer_create(&ix));
    LEGACY_CHECK(emb_grad_create(&g));
    float rows[8 * 8];
    for (int k = 0; k < 64; k++)
        rows[k] = (float)(k % 9) * 0.125f - 0.5f;
    for (int s = 0; s < steps; s++)
        for (int i = 0; i < LEGACY_NT; i++) {
            const int64_t n = emb_table_ncolumns(t[i]);
            int64_t ids[8];
            for (int k = 0; k < 8; k++)
                ids[k] = i >= 5 ? (int64_t)((k * 7 + s * 3) % 11) * 1000003LL : (k * 5 + s) % n;
            const int32_t D = emb_table_featuresize(t[i]);
            const EmbSparseGrad sg = {.ids = ids, .n = 8, .featuresize = D, .values = rows,
                                      .stride = 8};
            LEGACY_CHECK(emb_grad_set_sparse(g, t[i], &sg));
            LEGACY_CHECK(emb_update(opt, t[i], g, ix, 0));
        }
    emb_grad_destroy(&g);
    emb_indexer_destroy(&ix);
}

/* The model of file @which (0: Adam, 4 steps; 1: FTRL, 3 steps): tables and optimizer. */
static void legacy_model(int which, EmbTable **t, EmbOptimizer **opt)
{
    legacy_tables(t);
    const EmbOptimizerConfig c = emb_optimizer_defaults(which == 0 ? EMB_OPT_ADAM : EMB_OPT_FTRL,
                                                        0.05f);
    LEGACY_CHECK(emb_optimizer_create(opt, &c));
    legacy_train(t, *opt, which == 0 ? 4 : 3);
}

static void legacy_vars(EmbTable **t, EmbCheckpointVar *v)
{
    for (int i = 0; i < LEGACY_NT; i++)
        v[i] = (EmbCheckpointVar){legacy_names[i], t[i]};
}

static void legacy_free(EmbTable **t, EmbOptimizer **opt)
{
    emb_optimizer_destroy(opt);
    for (int i = 0; i < LEGACY_NT; i++)
        emb_table_destroy(&t[i]);
}

#endif
