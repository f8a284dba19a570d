/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_ckpt_legacy.c — checkpoints written before the table contract (issue 24) against
 * today's library: tests/data/legacy-{adam,ftrl}.safetensors were written at ce17ca2 from
 * legacy_model.h's model (every kind a checkpoint holds). Today's save of the same model
 * writes the same bytes; the files restore into fresh tables and optimizer so that a save
 * of them writes the same bytes again, and one more step on both gives the same bytes.
 */
#include <criterion/criterion.h>

#include "legacy_model.h"
#include "test_files.h"

static const char *const fixture[2] = {"legacy-adam.safetensors", "legacy-ftrl.safetensors"};

static unsigned char *slurp(const char *path, long *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    *n = ftell(f);
    rewind(f);
    unsigned char *b = malloc((size_t)*n + 1);
    cr_assert_not_null(b);
    cr_assert_eq(fread(b, 1, (size_t)*n, f), (size_t)*n);
    fclose(f);
    return b;
}

/* Saves @t / @opt in @dir under @prefix; returns the file's bytes (*n of them). */
static unsigned char *save(EmbTable **t, EmbOptimizer *opt, const char *dir, const char *prefix,
                           long *n)
{
    EmbCheckpointVar v[LEGACY_NT];
    legacy_vars(t, v);
    const EmbSaverOptions so = {.var_list = v, .nvars = LEGACY_NT, .optimizer = opt};
    EmbSaver *sv = NULL;
    char path[512];
    cr_assert_eq(emb_saver_create(&sv, dir, prefix, &so), 0, "%s", emb_last_error());
    cr_assert_eq(emb_saver_save(sv, NULL, 7, path, sizeof path), 0, "%s", emb_last_error());
    emb_saver_destroy(&sv);
    return slurp(path, n);
}

static void assert_same(const unsigned char *a, long na, const unsigned char *b, long nb,
                        const char *what)
{
    cr_assert_eq(na, nb, "%s: %ld bytes, the fixture %ld", what, na, nb);
    for (long i = 0; i < na; i++)
        cr_assert_eq(a[i], b[i], "%s: byte %ld differs", what, i);
}

static void check_file(int which)
{
    char dir[64], path[512];
    tmpdir(dir);
    snprintf(path, sizeof path, "%s/%s", EMB_TEST_DATA, fixture[which]);
    long nf, n;
    unsigned char *file = slurp(path, &nf);
    EmbTable *t[LEGACY_NT], *u[LEGACY_NT];
    EmbOptimizer *o = NULL, *p = NULL;
    legacy_model(which, t, &o);
    unsigned char *now = save(t, o, dir, "now", &n);
    assert_same(now, n, file, nf, "today's save of the model");
    free(now);
    /* restored into fresh tables and a fresh optimizer of the same kind */
    legacy_tables(u);
    EmbOptimizerConfig c;
    cr_assert_eq(emb_optimizer_get_config(o, &c), 0);
    cr_assert_eq(emb_optimizer_create(&p, &c), 0);
    EmbCheckpointVar v[LEGACY_NT];
    legacy_vars(u, v);
    const EmbRestoreOptions ro = {.var_list = v, .nvars = LEGACY_NT, .optimizer = p};
    int64_t step = -1;
    cr_assert_eq(emb_checkpoint_restore_ex(NULL, path, &ro, &step), 0, "%s", emb_last_error());
    cr_assert_eq(step, 7);
    now = save(u, p, dir, "restored", &n);
    assert_same(now, n, file, nf, "a save of the restored model");
    free(now);
    /* one more step on both */
    legacy_train(t, o, 1);
    legacy_train(u, p, 1);
    long m;
    unsigned char *a = save(t, o, dir, "a", &n), *b = save(u, p, dir, "b", &m);
    assert_same(a, n, b, m, "one more step after the restore");
    free(a);
    free(b);
    free(file);
    legacy_free(t, &o);
    legacy_free(u, &p);
    rmdir_all(dir);
}

Test(ckpt_legacy, adam_file_of_ce17ca2_restores_bit_for_bit)
{
    check_file(0);
}

Test(ckpt_legacy, ftrl_file_of_ce17ca2_restores_bit_for_bit)
{
    check_file(1);
}
