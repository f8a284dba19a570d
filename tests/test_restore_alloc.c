/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_restore_alloc.c — allocation failures in a restore (issue 23, item 2): the library's
 * (static) objects linked with --wrap for the allocator (posix_memalign included), the k-th
 * allocation of emb_checkpoint_restore_ex fails, for every k, restoring {an f16 table, a
 * dynamic table, their Adam state}. Each failed restore reports EMB_ENOMEM and leaves every
 * table and state byte for byte as it was; the last restore succeeds and changes them.
 */
#define ALLOC_FAIL_MEMALIGN
#include <criterion/criterion.h>

#include "embtables/embtables.h"

#include "alloc_fail.h"
#include "test_files.h"

#define NT 2

/* Everything a restore may change, as bytes: the f16 table's storage, the dynamic table's
   rows (export) and statistics, each table's optimizer state rows and step. */
typedef struct Snap {
    unsigned char *b;
    size_t n, cap;
} Snap;

static void put(Snap *s, const void *p, size_t n)
{
    if (s->n + n > s->cap) {
        s->cap = 2 * (s->n + n);
        s->b = realloc(s->b, s->cap);
        cr_assert_not_null(s->b);
    }
    memcpy(s->b + s->n, p, n);
    s->n += n;
}

static void snap_state(Snap *s, const EmbOptimizer *o, const EmbTable *t, const int64_t *ids,
                       int64_t n)
{
    EmbTable *st = NULL;
    int64_t step = -1;
    cr_assert_eq(emb_optimizer_state(o, t, 0, &st, &step), 0, "%s", emb_last_error());
    put(s, &step, sizeof step);
    for (int64_t k = 0; k < n; k++) {
        void *row;
        cr_assert_eq(emb_table_column_pointer(st, ids ? ids[k] : k, EMB_CTX_NONE, &row), 0);
        put(s, row, (size_t)emb_table_featuresize(st) * sizeof(float));
    }
}

static Snap snap(EmbTable **t, const EmbOptimizer *o)
{
    Snap s = {0};
    int64_t stride;
    const void *d = emb_table_data(t[0], &stride);
    put(&s, d, (size_t)(emb_table_ncolumns(t[0]) * stride) * 2);
    snap_state(&s, o, t[0], NULL, emb_table_ncolumns(t[0]));
    int64_t n, ids[64];
    float rows[64 * 4];
    cr_assert_eq(emb_table_dynamic_export(t[1], ids, rows, 4, 64, &n), 0, "%s", emb_last_error());
    EmbDynamicStats ds;
    cr_assert_eq(emb_table_dynamic_stats(t[1], &ds), 0);
    put(&s, &n, sizeof n);
    put(&s, ids, (size_t)n * sizeof *ids);
    put(&s, rows, (size_t)n * 4 * sizeof *rows);
    put(&s, &ds.rows, sizeof ds.rows);
    put(&s, &ds.step, sizeof ds.step);
    snap_state(&s, o, t[1], ids, n);
    return s;
}

static void train(EmbTable **t, EmbOptimizer *o, int steps, int seed)
{
    EmbIndexer *ix = NULL;
    EmbGrad *g = NULL;
    cr_assert_eq(emb_indexer_create(&ix), 0);
    cr_assert_eq(emb_grad_create(&g), 0);
    float v[8 * 4];
    for (int k = 0; k < 32; k++)
        v[k] = (float)((k * 7 + seed) % 11) * 0.1f - 0.5f;
    for (int s = 0; s < steps; s++)
        for (int i = 0; i < NT; i++) {
            int64_t ids[8];
            for (int k = 0; k < 8; k++)
                ids[k] = i == 0 ? (k * 3 + s + seed) % 20
                                : (int64_t)((k + s * 5 + seed) % 13) * 977;
            const EmbSparseGrad sg = {.ids = ids, .n = 8, .featuresize = 4, .values = v,
                                      .stride = 4};
            cr_assert_eq(emb_grad_set_sparse(g, t[i], &sg), 0, "%s", emb_last_error());
            cr_assert_eq(emb_update(o, t[i], g, ix, 0), 0, "%s", emb_last_error());
        }
    emb_grad_destroy(&g);
    emb_indexer_destroy(&ix);
}

Test(restore_alloc, every_failed_allocation_leaves_every_table_and_state_as_it_was)
{
    char dir[64], path[512];
    tmpdir(dir);
    EmbTable *t[NT];
    const EmbTableOptions fo = {.name = "f16"};
    cr_assert_eq(emb_table_create(&t[0], 20, 4, EMB_F16, &fo), 0);
    const EmbDynamicOptions dopt = {.admit_after = 2, .sketch_width = 64,
                                    .table = {.name = "dyn"}, .init = {EMB_INIT_UNIFORM, -1, 1, 9}};
    cr_assert_eq(emb_table_dynamic_create(&t[1], 4, EMB_F32, &dopt), 0);
    const EmbOptimizerConfig cfg = emb_optimizer_defaults(EMB_OPT_ADAM, 0.05f);
    EmbOptimizer *o = NULL;
    cr_assert_eq(emb_optimizer_create(&o, &cfg), 0);
    train(t, o, 3, 0);
    const EmbCheckpointVar v[NT] = {{"f16", t[0]}, {"dyn", t[1]}};
    const EmbSaverOptions so = {.var_list = v, .nvars = NT, .optimizer = o};
    EmbSaver *sv = NULL;
    cr_assert_eq(emb_saver_create(&sv, dir, "r", &so), 0);
    cr_assert_eq(emb_saver_save(sv, NULL, 3, path, sizeof path), 0, "%s", emb_last_error());
    emb_saver_destroy(&sv);
    train(t, o, 2, 5); /* the tables move on: a restore changes every part of them */
    Snap before = snap(t, o);
    const EmbRestoreOptions ro = {.var_list = v, .nvars = NT, .optimizer = o};
    int failures = 0;
    for (long k = 0;; k++) {
        int64_t step = -1;
        fired = 0;
        fail_in = k;
        const int r = emb_checkpoint_restore_ex(NULL, path, &ro, &step);
        fail_in = -1;
        if (!fired) {
            cr_assert_eq(r, 0, "%s", emb_last_error());
            cr_assert_eq(step, 3);
            break;
        }
        failures++;
        cr_assert_eq(r, EMB_ENOMEM, "allocation %ld failed: %d %s", k, r, emb_last_error());
        Snap now = snap(t, o);
        cr_assert_eq(now.n, before.n, "allocation %ld failed: a table or state changed", k);
        cr_assert(memcmp(now.b, before.b, now.n) == 0,
                  "allocation %ld failed: a table or state changed", k);
        free(now.b);
    }
    cr_assert_geq(failures, 10, "only %d allocations in a restore", failures);
    Snap after = snap(t, o);
    cr_assert(after.n != before.n || memcmp(after.b, before.b, after.n) != 0,
              "the restore changed nothing: the test cannot fail");
    free(after.b);
    free(before.b);
    emb_optimizer_destroy(&o);
    emb_table_destroy(&t[0]);
    emb_table_destroy(&t[1]);
    rmdir_all(dir);
}
