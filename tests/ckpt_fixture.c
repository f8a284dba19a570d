/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ckpt_fixture.c — writes a checkpoint for the Python reader's test: three tables (f32
 * partitioned, f16, bf16) trained two Adam steps, saved as `DIR/fixture-2.safetensors`,
 * and every tensor's values as raw little-endian f32 in `DIR/<name, '/' as '_'>.f32`; and a
 * dynamic table (admission after 2 updates) trained three Adagrad steps as
 * `DIR/dynfixture-3.safetensors`, its export as `DIR/dyn.ids` (int64) and `DIR/dyn.f32`;
 * and a delta chain (deltafix-2 full, deltafix-4 and -5 deltas), the tables at step 5 as
 * `DIR/d5_<name>.f32`, and their int8 serving export `DIR/serve-int8.safetensors`.
 * Usage: ckpt_fixture DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embtables/embtables.h"

#define CHECK(x)                                                                           \
    do {                                                                                   \
        if ((x) != 0) {                                                                    \
            fprintf(stderr, "%s: %s\n", #x, emb_last_error());                             \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static void dump(const char *dir, const char *name, const EmbTable *t)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s.f32", dir, name);
    for (char *p = path + strlen(dir) + 1; *p; p++)
        *p = *p == '/' ? '_' : *p;
    const int64_t n = emb_table_ncolumns(t) * emb_table_featuresize(t);
    float *v = malloc((size_t)n * sizeof *v + 1);
    CHECK(emb_table_read(t, v, emb_table_featuresize(t)));
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(v, sizeof *v, (size_t)n, f) != (size_t)n || fclose(f) != 0)
        exit(2);
    free(v);
}

static void write_raw(const char *dir, const char *name, const void *p, size_t n)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
        exit(2);
}

static void dynamic_fixture(const char *dir)
{
    const EmbDynamicOptions o = {.admit_after = 2, .sketch_width = 16,
                                 .init = {EMB_INIT_UNIFORM, -1, 1, 3}};
    EmbTable *t = NULL;
    EmbOptimizer *opt = NULL;
    EmbIndexer *ix = NULL;
    EmbGrad *g = NULL;
    CHECK(emb_table_dynamic_create(&t, 4, EMB_F32, &o));
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    CHECK(emb_optimizer_create(&opt, &c));
    CHECK(emb_indexer_create(&ix));
    CHECK(emb_grad_create(&g));
    const int64_t ids[] = {5, 1000000000000LL, 77, 5};
    float rows[4 * 4];
    for (int k = 0; k < 16; k++)
        rows[k] = (float)(k % 5) * 0.5f - 1.0f;
    for (int step = 0; step < 3; step++) {
        const EmbSparseGrad sg = {.ids = ids + step % 2, .n = 3, .featuresize = 4,
                                  .values = rows, .stride = 4};
        CHECK(emb_grad_set_sparse(g, t, &sg));
        CHECK(emb_update(opt, t, g, ix, 0));
    }
    const EmbCheckpointVar v = {"dyn", t};
    const EmbSaverOptions so = {.var_list = &v, .nvars = 1, .optimizer = opt};
    EmbSaver *sv = NULL;
    CHECK(emb_saver_create(&sv, dir, "dynfixture", &so));
    CHECK(emb_saver_save(sv, NULL, 3, NULL, 0));
    int64_t n, eids[8];
    float ev[8 * 4];
    CHECK(emb_table_dynamic_export(t, eids, ev, 4, 8, &n));
    write_raw(dir, "dyn.ids", eids, (size_t)n * sizeof *eids);
    write_raw(dir, "dyn.f32", ev, (size_t)n * 4 * sizeof *ev);
    emb_saver_destroy(&sv);
    emb_grad_destroy(&g);
    emb_indexer_destroy(&ix);
    emb_optimizer_destroy(&opt);
    emb_table_destroy(&t);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    static const char *const names[] = {"user/f32", "f16", "bf16"};
    static const int64_t ncol[] = {37, 11, 13};
    static const int32_t dim[] = {5, 8, 3};
    EmbStore *s = NULL;
    EmbTable *t[3];
    CHECK(emb_store_create(&s));
    for (int i = 0; i < 3; i++) {
        const EmbVariableSpec v = {.name = names[i], .ncolumns = ncol[i], .featuresize = dim[i],
                                   .dtype = (EmbDtype)i, .init = {EMB_INIT_NORMAL, 0, 1, 7 + i},
                                   .nshards = i == 0 ? 3 : 0, .partition = EMB_PARTITION_MOD};
        CHECK(emb_store_get(s, &v, EMB_REUSE_NO, &t[i]));
    }
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAM, 0.01f);
    EmbOptimizer *o = NULL;
    EmbIndexer *ix = NULL;
    EmbGrad *g = NULL;
    CHECK(emb_optimizer_create(&o, &c));
    CHECK(emb_indexer_create(&ix));
    CHECK(emb_grad_create(&g));
    const int64_t ids[] = {0, 3, 3, 10};
    float rows[4 * 8];
    for (int k = 0; k < 4 * 8; k++)
        rows[k] = (float)(k % 7) * 0.25f - 0.75f;
    for (int step = 0; step < 2; step++)
        for (int i = 0; i < 3; i++) {
            const EmbSparseGrad sg = {.ids = ids, .n = 4, .featuresize = dim[i],
                                      .values = rows, .stride = dim[i]};
            CHECK(emb_grad_set_sparse(g, t[i], &sg));
            CHECK(emb_update(o, t[i], g, ix, 0));
        }
    const EmbSaverOptions so = {.optimizer = o};
    EmbSaver *sv = NULL;
    CHECK(emb_saver_create(&sv, argv[1], "fixture", &so));
    CHECK(emb_saver_save(sv, s, 2, NULL, 0));
    for (int i = 0; i < 3; i++) {
        EmbTable *st;
        char name[128];
        dump(argv[1], names[i], t[i]);
        CHECK(emb_optimizer_state(o, t[i], 0, &st, NULL));
        snprintf(name, sizeof name, "%s/adam.mv", names[i]);
        dump(argv[1], name, st);
    }
    emb_saver_destroy(&sv);
    /* a delta chain: full at step 2, deltas at 4 and 5 (the tables then dumped as d5/...) */
    const EmbSaverOptions dso = {.optimizer = o, .full_every = 5, .max_to_keep = 0};
    CHECK(emb_saver_create(&sv, argv[1], "deltafix", &dso));
    CHECK(emb_saver_save(sv, s, 2, NULL, 0));
    for (int step = 2; step < 5; step++) {
        for (int i = 0; i < 3; i++) {
            const int64_t more[] = {step, 1, step + 2, 1};
            const EmbSparseGrad sg = {.ids = more, .n = 4, .featuresize = dim[i],
                                      .values = rows, .stride = dim[i]};
            CHECK(emb_grad_set_sparse(g, t[i], &sg));
            CHECK(emb_update(o, t[i], g, ix, 0));
        }
        if (step != 2)
            CHECK(emb_saver_save(sv, s, step + 1, NULL, 0));
    }
    for (int i = 0; i < 3; i++) {
        EmbTable *st;
        char name[128];
        snprintf(name, sizeof name, "d5/%s", names[i]);
        dump(argv[1], name, t[i]);
        CHECK(emb_optimizer_state(o, t[i], 0, &st, NULL));
        snprintf(name, sizeof name, "d5/%s/adam.mv", names[i]);
        dump(argv[1], name, st);
    }
    emb_saver_destroy(&sv);
    char serve[600]; /* the serving export of the tables at step 5, int8 */
    snprintf(serve, sizeof serve, "%s/serve-int8.safetensors", argv[1]);
    const EmbExportOptions eo = {.dtype = EMB_INT8, .global_step = 5};
    CHECK(emb_store_export(s, serve, &eo));
    emb_grad_destroy(&g);
    emb_indexer_destroy(&ix);
    emb_optimizer_destroy(&o);
    emb_store_destroy(&s);
    dynamic_fixture(argv[1]);
    return 0;
}
