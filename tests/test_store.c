/* SPDX-License-Identifier: BSD-2-Clause */
/* test_store.c — initializers, the named store and checkpoints. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_files.h"
#include "test_util.h"

static EmbTable *table(int64_t n, int32_t d)
{
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_create(&t, n, d, EMB_F32, NULL), 0);
    return t;
}

Test(init, deterministic_and_shaped)
{
    EmbTable *a = table(1000, 17), *b = table(1000, 17);
    const EmbInitializer u = {EMB_INIT_UNIFORM, -0.5f, 0.25f, 42};
    cr_assert_eq(emb_table_initialize(a, &u), 0);
    cr_assert_eq(emb_table_initialize(b, &u), 0);
    cr_assert_eq(tu_checksum(a), tu_checksum(b), "same seed, same table");
    int64_t st;
    const float *d = emb_table_data(a, &st);
    double sum = 0;
    for (int64_t c = 0; c < 1000; c++)
        for (int i = 0; i < 17; i++) {
            cr_assert(d[c * st + i] >= -0.5f && d[c * st + i] < 0.25f);
            sum += d[c * st + i];
        }
    /* mean of 17000 uniforms on [-0.5, 0.25): -0.125, stddev of the mean ~0.0017 */
    cr_assert(fabs(sum / 17000 + 0.125) < 0.01, "mean %g", sum / 17000);
    const EmbInitializer u2 = {EMB_INIT_UNIFORM, -0.5f, 0.25f, 43};
    cr_assert_eq(emb_table_initialize(b, &u2), 0);
    cr_assert_neq(tu_checksum(a), tu_checksum(b), "another seed, another table");
    emb_table_destroy(&a);
    emb_table_destroy(&b);
}

Test(init, normal_truncated_constant_unit_scaling)
{
    EmbTable *t = table(2000, 32);
    int64_t st;
    const float *d = emb_table_data(t, &st);
    const EmbInitializer n = {EMB_INIT_NORMAL, 1.0f, 2.0f, 7};
    cr_assert_eq(emb_table_initialize(t, &n), 0);
    double s = 0, s2 = 0;
    for (int64_t c = 0; c < 2000; c++)
        for (int i = 0; i < 32; i++) {
            s += d[c * st + i];
            s2 += (double)d[c * st + i] * d[c * st + i];
        }
    const double mean = s / 64000, var = s2 / 64000 - mean * mean;
    /* 64000 samples: mean within 0.05 (6 sigma), variance within 5% */
    cr_assert(fabs(mean - 1.0) < 0.05 && fabs(var - 4.0) < 0.2, "mean %g var %g", mean, var);
    const EmbInitializer tn = {EMB_INIT_TRUNCATED_NORMAL, 0.0f, 1.0f, 7};
    cr_assert_eq(emb_table_initialize(t, &tn), 0);
    for (int64_t c = 0; c < 2000; c++)
        for (int i = 0; i < 32; i++)
            cr_assert(fabsf(d[c * st + i]) <= 2.0f);
    const EmbInitializer k = {EMB_INIT_CONSTANT, 0.5f, 0, 0};
    cr_assert_eq(emb_table_initialize(t, &k), 0);
    cr_assert_eq(d[5 * st + 3], 0.5f);
    const EmbInitializer us = {EMB_INIT_UNIFORM_UNIT_SCALING, 2.0f, 0, 1};
    cr_assert_eq(emb_table_initialize(t, &us), 0);
    const float lim = 2.0f * sqrtf(3.0f / 2000.0f);
    for (int64_t c = 0; c < 2000; c++)
        cr_assert(fabsf(d[c * st]) <= lim);
    const EmbInitializer bad = {EMB_INIT_UNIFORM, 1.0f, 0.0f, 0};
    const uint64_t before = tu_checksum(t);
    cr_assert_eq(emb_table_initialize(t, &bad), EMB_EINVAL);
    cr_assert_eq(tu_checksum(t), before);
    emb_table_destroy(&t);
}

Test(store, get_or_create_with_reuse)
{
    EmbStore *s = NULL;
    cr_assert_eq(emb_store_create(&s), 0);
    EmbVariableSpec v = {.name = "user", .ncolumns = 100, .featuresize = 8, .dtype = EMB_F32,
                         .init = {EMB_INIT_ONES, 0, 0, 0}, .trainable = 1};
    EmbTable *a = NULL, *b = NULL;
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_YES, &a), EMB_ENOTFOUND);
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_NO, &a), 0);
    cr_assert_str_eq(emb_table_name(a), "user");
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_NO, &b), EMB_EEXIST);
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_YES, &b), 0);
    cr_assert_eq(a, b);
    v.featuresize = 9;
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_AUTO, &b), EMB_ESHAPE);
    cr_assert(strstr(emb_last_error(), "\"user\" exists as 100 x 8"));
    EmbVariableSpec w = {.name = "step", .ncolumns = 1, .featuresize = 1, .dtype = EMB_F32};
    cr_assert_eq(emb_store_get(s, &w, EMB_REUSE_AUTO, &b), 0);
    EmbTable *list[4];
    int64_t n;
    cr_assert_eq(emb_store_list(s, 0, list, 4, &n), 0);
    cr_assert_eq(n, 2);
    cr_assert_eq(list[0], a);
    cr_assert_eq(emb_store_list(s, 1, list, 4, &n), 0);
    cr_assert_eq(n, 1, "only \"user\" is trainable");
    cr_assert_eq(emb_store_uninitialized(s, list, 4, &n), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(list[0], b);
    cr_assert_eq(emb_store_mark_initialized(s, b), 0);
    cr_assert_eq(emb_store_uninitialized(s, NULL, 0, &n), 0);
    cr_assert_eq(n, 0);
    EmbTable *f;
    cr_assert_eq(emb_store_find(s, "step", &f), 0);
    cr_assert_eq(f, b);
    cr_assert_eq(emb_store_find(s, "nope", &f), EMB_ENOTFOUND);
    v.name = "";
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_AUTO, &b), EMB_EINVAL);
    emb_store_destroy(&s);
    cr_assert_null(s);
}

/* A store of two tables filled from a seed. */
static EmbStore *sample_store(uint64_t seed)
{
    EmbStore *s = NULL;
    cr_assert_eq(emb_store_create(&s), 0);
    EmbVariableSpec v = {.name = "a", .ncolumns = 300, .featuresize = 5, .dtype = EMB_F32,
                         .init = {EMB_INIT_NORMAL, 0, 1, seed}};
    EmbTable *t;
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_NO, &t), 0);
    v = (EmbVariableSpec){.name = "b", .ncolumns = 7, .featuresize = 64, .dtype = EMB_BF16,
                          .init = {EMB_INIT_UNIFORM, -1, 1, seed + 1}};
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_NO, &t), 0);
    return s;
}

static uint64_t store_sum(EmbStore *s)
{
    EmbTable *a, *b;
    emb_store_find(s, "a", &a);
    emb_store_find(s, "b", &b);
    return tu_checksum(a) * 31 + tu_checksum(b);
}

Test(checkpoint, save_restore_roundtrip_and_latest)
{
    char dir[64], path[512], latest[512];
    tmpdir(dir);
    EmbStore *s = sample_store(1), *r = sample_store(2);
    const uint64_t want = store_sum(s);
    cr_assert_neq(store_sum(r), want);
    EmbSaver *sv = NULL;
    cr_assert_eq(emb_saver_create(&sv, dir, "model", NULL), 0);
    cr_assert_eq(emb_saver_save(sv, s, 1234, path, sizeof path), 0, "%s", emb_last_error());
    cr_assert(strstr(path, "model-1234.safetensors"));
    cr_assert_eq(emb_checkpoint_latest(dir, latest, sizeof latest), 0);
    cr_assert_str_eq(latest, path);
    int64_t step = 0;
    cr_assert_eq(emb_checkpoint_restore(r, latest, &step), 0, "%s", emb_last_error());
    cr_assert_eq(step, 1234);
    cr_assert_eq(store_sum(r), want);
    emb_saver_destroy(&sv);
    emb_store_destroy(&s);
    emb_store_destroy(&r);
    rmdir_all(dir);
}

Test(checkpoint, corrupt_truncated_or_foreign_files_touch_nothing)
{
    char dir[64], path[512], bad[600];
    tmpdir(dir);
    EmbStore *s = sample_store(1), *r = sample_store(2);
    EmbSaver *sv = NULL;
    cr_assert_eq(emb_saver_create(&sv, dir, "m", NULL), 0);
    cr_assert_eq(emb_saver_save(sv, s, 1, path, sizeof path), 0);
    const uint64_t before = store_sum(r);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    unsigned char *buf = malloc((size_t)size);
    cr_assert_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    snprintf(bad, sizeof bad, "%s/bad.emb", dir);
    /* one flipped bit in the data of the last table */
    buf[size - 40] ^= 1;
    f = fopen(bad, "wb");
    fwrite(buf, 1, (size_t)size, f);
    fclose(f);
    cr_assert_eq(emb_checkpoint_restore(r, bad, NULL), EMB_ECORRUPT);
    cr_assert(strstr(emb_last_error(), "checksum"));
    cr_assert_eq(store_sum(r), before);
    buf[size - 40] ^= 1;
    /* truncated */
    f = fopen(bad, "wb");
    fwrite(buf, 1, (size_t)size - 100, f);
    fclose(f);
    cr_assert_eq(emb_checkpoint_restore(r, bad, NULL), EMB_ECORRUPT);
    cr_assert_eq(store_sum(r), before);
    free(buf);
    /* a store that lacks a table of the file, or has it in another shape */
    EmbStore *other = NULL;
    emb_store_create(&other);
    EmbVariableSpec v = {.name = "a", .ncolumns = 300, .featuresize = 6, .dtype = EMB_F32};
    EmbTable *t;
    emb_store_get(other, &v, EMB_REUSE_NO, &t);
    cr_assert_eq(emb_checkpoint_restore(other, path, NULL), EMB_ESHAPE);
    EmbStore *empty = NULL;
    emb_store_create(&empty);
    cr_assert_eq(emb_checkpoint_restore(empty, path, NULL), EMB_ENOTFOUND);
    cr_assert_eq(emb_checkpoint_restore(r, "/nonexistent/x.emb", NULL), EMB_EIO);
    emb_store_destroy(&other);
    emb_store_destroy(&empty);
    emb_saver_destroy(&sv);
    emb_store_destroy(&s);
    emb_store_destroy(&r);
    rmdir_all(dir);
}

Test(checkpoint, max_to_keep_deletes_the_oldest)
{
    char dir[64], path[512], p[600];
    tmpdir(dir);
    EmbStore *s = sample_store(1);
    EmbSaver *sv = NULL;
    const EmbSaverOptions o = {.max_to_keep = 2};
    cr_assert_eq(emb_saver_create(&sv, dir, "ck", &o), 0);
    for (int step = 1; step <= 4; step++)
        cr_assert_eq(emb_saver_save(sv, s, step, path, sizeof path), 0);
    struct stat st;
    for (int step = 1; step <= 4; step++) {
        snprintf(p, sizeof p, "%s/ck-%d.safetensors", dir, step);
        cr_assert_eq(stat(p, &st) == 0, step >= 3, "step %d kept: %d", step, step >= 3);
    }
    emb_saver_destroy(&sv);
    /* a new saver picks up the index and goes on retiring */
    cr_assert_eq(emb_saver_create(&sv, dir, "ck", &o), 0);
    cr_assert_eq(emb_saver_save(sv, s, 5, path, sizeof path), 0);
    snprintf(p, sizeof p, "%s/ck-3.safetensors", dir);
    cr_assert_neq(stat(p, &st), 0);
    cr_assert_eq(emb_saver_create(&sv, "/dev/null/ck", "ck", &o), EMB_EIO);
    cr_assert_eq(emb_saver_create(&sv, dir, "a/b", &o), EMB_EINVAL);
    emb_saver_destroy(&sv);
    emb_store_destroy(&s);
    rmdir_all(dir);
}

Test(checkpoint, partitioned_tables_initialise_and_restore_as_one_table)
{
    char dir[64], path[512];
    tmpdir(dir);
    EmbStore *s = NULL, *r = NULL;
    emb_store_create(&s);
    emb_store_create(&r);
    const EmbInitializer init = {EMB_INIT_UNIFORM, -1, 1, 9};
    EmbVariableSpec part = {.name = "emb", .ncolumns = 101, .featuresize = 6, .dtype = EMB_F32,
                            .init = init, .nshards = 4, .partition = EMB_PARTITION_MOD};
    EmbVariableSpec plain = part;
    plain.nshards = 0;
    EmbTable *tp, *tu;
    cr_assert_eq(emb_store_get(s, &part, EMB_REUSE_NO, &tp), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_nshards(tp), 4);
    cr_assert_eq(emb_store_get(r, &plain, EMB_REUSE_NO, &tu), 0);
    float a[6], b[6];
    for (int64_t c = 0; c < 101; c++) {
        cr_assert_eq(emb_gather(tp, &c, 1, a, 6), 0);
        cr_assert_eq(emb_gather(tu, &c, 1, b, 6), 0);
        cr_assert_eq(memcmp(a, b, sizeof a), 0, "column %lld", (long long)c);
    }
    /* the partitioned table's checkpoint restores into the plain one, column for column */
    const EmbInitializer zero = {EMB_INIT_ZEROS, 0, 0, 0};
    emb_table_initialize(tu, &zero);
    EmbSaver *sv = NULL;
    cr_assert_eq(emb_saver_create(&sv, dir, "p", NULL), 0);
    cr_assert_eq(emb_saver_save(sv, s, 3, path, sizeof path), 0);
    cr_assert_eq(emb_checkpoint_restore(r, path, NULL), 0, "%s", emb_last_error());
    for (int64_t c = 0; c < 101; c++) {
        emb_gather(tp, &c, 1, a, 6);
        emb_gather(tu, &c, 1, b, 6);
        cr_assert_eq(memcmp(a, b, sizeof a), 0, "column %lld", (long long)c);
    }
    emb_saver_destroy(&sv);
    emb_store_destroy(&s);
    emb_store_destroy(&r);
    rmdir_all(dir);
}
