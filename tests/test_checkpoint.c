/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_checkpoint.c — checkpoints: resuming training bit for bit (every optimizer and
 * dtype, into another shard count), learning-rate control and weight decay, corruption
 * (every byte flipped, every truncation), the saver's defects of issue 14 (kill -9 during
 * saves, temporaries, crafted index entries, prefixes, max_to_keep = 0, the index written
 * before deletion), name maps, the listing and mapped tables.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "test_files.h"
#include "test_util.h"

static bool exists(const char *dir, const char *name)
{
    char p[600];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0;
}

/* Number of files of @dir whose name contains @part. */
static int count_files(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));)
        n += strstr(de->d_name, part) != NULL;
    closedir(d);
    return n;
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

static unsigned char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    unsigned char *b = malloc(*n);
    cr_assert_eq(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

/* The table's values as f32 (exact for every dtype). */
static float *values(const EmbTable *t)
{
    const int64_t n = emb_table_ncolumns(t) * emb_table_featuresize(t);
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    cr_assert_eq(emb_table_read(t, v, emb_table_featuresize(t)), 0);
    return v;
}

static bool same_values(const EmbTable *a, const EmbTable *b)
{
    if (emb_table_ncolumns(a) != emb_table_ncolumns(b) ||
        emb_table_featuresize(a) != emb_table_featuresize(b))
        return false;
    float *x = values(a), *y = values(b);
    const bool same = memcmp(x, y, (size_t)emb_table_ncolumns(a) * emb_table_featuresize(a) *
                                           sizeof(float)) == 0;
    free(x);
    free(y);
    return same;
}

/* ---- a small training run -------------------------------------------------------------- */

#define NTAB 2
static const int64_t NCOL[NTAB] = {97, 41};
static const int32_t DIM[NTAB] = {12, 5};
static const char *const NAME[NTAB] = {"user", "item"};

typedef struct Run {
    EmbStore *s;
    EmbTable *t[NTAB];
    EmbOptimizer *o;
    EmbIndexer *ix;
    EmbGrad *g;
    int64_t ids[24];
    float rows[24 * 12];
} Run;

static EmbOptimizerConfig config(EmbOptimizerKind kind)
{
    EmbOptimizerConfig c = emb_optimizer_defaults(kind, 0.05f);
    c.weight_decay = 0.01f;
    c.weight_decay_mode = kind == EMB_OPT_ADAM || kind == EMB_OPT_ROWWISE_ADAGRAD
                                  ? EMB_DECAY_DECOUPLED : EMB_DECAY_L2;
    return c;
}

/* Two tables (@shards[i] > 1: partitioned, MOD then DIV) initialised from @seed. */
static void run_make(Run *r, EmbOptimizerKind kind, EmbDtype dt, const int32_t shards[NTAB],
                     uint64_t seed)
{
    memset(r, 0, sizeof *r);
    cr_assert_eq(emb_store_create(&r->s), 0);
    for (int i = 0; i < NTAB; i++) {
        const EmbVariableSpec v = {.name = NAME[i], .ncolumns = NCOL[i], .featuresize = DIM[i],
                                   .dtype = dt, .init = {EMB_INIT_UNIFORM, -1, 1, seed + i},
                                   .nshards = shards[i],
                                   .partition = i == 0 ? EMB_PARTITION_MOD : EMB_PARTITION_DIV};
        cr_assert_eq(emb_store_get(r->s, &v, EMB_REUSE_NO, &r->t[i]), 0, "%s", emb_last_error());
    }
    const EmbOptimizerConfig c = config(kind);
    cr_assert_eq(emb_optimizer_create(&r->o, &c), 0, "%s", emb_last_error());
    cr_assert_eq(emb_indexer_create(&r->ix), 0);
    cr_assert_eq(emb_grad_create(&r->g), 0);
}

static void run_free(Run *r)
{
    emb_optimizer_destroy(&r->o);
    emb_store_destroy(&r->s);
    emb_indexer_destroy(&r->ix);
    emb_grad_destroy(&r->g);
}

/* Training step @k: a seeded sparse gradient (duplicate ids included) per table. */
static void run_step(Run *r, int k)
{
    for (int i = 0; i < NTAB; i++) {
        uint64_t seed = 1000u * (uint64_t)k + (uint64_t)i + 1;
        for (int j = 0; j < 24; j++)
            r->ids[j] = (int64_t)(tu_rand(&seed) % (uint64_t)(NCOL[i] / 2));
        for (int j = 0; j < 24 * DIM[i]; j++)
            r->rows[j] = tu_randf(&seed);
        const EmbSparseGrad sg = {.ids = r->ids, .n = 24, .featuresize = DIM[i],
                                  .values = r->rows, .stride = DIM[i]};
        cr_assert_eq(emb_grad_set_sparse(r->g, r->t[i], &sg), 0);
        cr_assert_eq(emb_update(r->o, r->t[i], r->g, r->ix, 0), 0, "%s", emb_last_error());
    }
}

/* Run @a (shards @sa, seed 1) trained one step and a fresh run @b (plain, seed 2). */
static void trained_and_fresh(Run *a, Run *b, EmbOptimizerKind kind, EmbDtype dt,
                              const int32_t sa[NTAB])
{
    run_make(a, kind, dt, sa, 1);
    run_make(b, kind, dt, (int32_t[]){1, 1}, 2);
    run_step(a, 0);
}

static EmbSaver *saver(const char *dir, const char *prefix, int32_t keep, const EmbOptimizer *o)
{
    const EmbSaverOptions so = {.max_to_keep = keep, .optimizer = o};
    EmbSaver *sv = NULL;
    cr_assert_eq(emb_saver_create(&sv, dir, prefix, &so), 0, "%s", emb_last_error());
    return sv;
}

static void check_state_equal(const Run *a, const Run *b)
{
    for (int i = 0; i < NTAB; i++) {
        EmbTable *sa, *sb;
        int64_t ka, kb;
        cr_assert_eq(emb_optimizer_state(a->o, a->t[i], 0, &sa, &ka), 0);
        cr_assert_eq(emb_optimizer_state(b->o, b->t[i], 0, &sb, &kb), 0);
        cr_assert_eq(ka, kb);
        cr_assert_eq(sa == NULL, sb == NULL);
        if (sa)
            cr_assert(same_values(sa, sb), "state of %s", NAME[i]);
    }
}

Test(resume, five_steps_saved_restored_five_more_equal_ten_straight)
{
    static const char *const dnames[] = {"f32", "f16", "bf16"};
    char dir[64], path[512];
    tmpdir(dir);
    for (int kind = EMB_OPT_SGD; kind <= EMB_OPT_ADAM; kind++)
        for (int dt = EMB_F32; dt <= EMB_BF16; dt++) {
            Run straight, first, resumed;
            run_make(&straight, kind, dt, (int32_t[]){3, 1}, 7);
            run_make(&first, kind, dt, (int32_t[]){3, 1}, 7);
            /* another shard count and other initial values: the restore must fix both */
            run_make(&resumed, kind, dt, (int32_t[]){1, 2}, 99);
            for (int k = 0; k < 10; k++)
                run_step(&straight, k);
            for (int k = 0; k < 5; k++)
                run_step(&first, k);
            EmbSaver *sv = saver(dir, "run", 0, first.o);
            cr_assert_eq(emb_saver_save(sv, first.s, 5, path, sizeof path), 0, "%s",
                         emb_last_error());
            const EmbRestoreOptions ro = {.optimizer = resumed.o};
            int64_t step = -1;
            cr_assert_eq(emb_checkpoint_restore_ex(resumed.s, path, &ro, &step), 0, "%s",
                         emb_last_error());
            cr_assert_eq(step, 5);
            check_state_equal(&first, &resumed);
            for (int k = 5; k < 10; k++)
                run_step(&resumed, k);
            for (int i = 0; i < NTAB; i++)
                cr_assert(same_values(straight.t[i], resumed.t[i]), "%s %s %s differs",
                          NAME[i], dnames[dt],
                          kind == EMB_OPT_ADAM ? "adam" : "optimizer");
            check_state_equal(&straight, &resumed);
            emb_saver_destroy(&sv);
            run_free(&straight);
            run_free(&first);
            run_free(&resumed);
        }
    rmdir_all(dir);
}

Test(resume, optimizer_of_another_kind_or_no_state_is_refused)
{
    char dir[64], path[512];
    tmpdir(dir);
    Run a, b;
    trained_and_fresh(&a, &b, EMB_OPT_ADAGRAD, EMB_F32, (int32_t[]){1, 1});
    emb_optimizer_destroy(&b.o);
    const EmbOptimizerConfig adam = config(EMB_OPT_ADAM);
    cr_assert_eq(emb_optimizer_create(&b.o, &adam), 0);
    EmbSaver *sv = saver(dir, "k", 0, a.o);
    cr_assert_eq(emb_saver_save(sv, a.s, 1, path, sizeof path), 0);
    const EmbRestoreOptions ro = {.optimizer = b.o};
    float *before = values(b.t[0]);
    cr_assert_eq(emb_checkpoint_restore_ex(b.s, path, &ro, NULL), EMB_EINVAL);
    cr_assert(strstr(emb_last_error(), "adagrad"), "%s", emb_last_error());
    float *after = values(b.t[0]);
    cr_assert_eq(memcmp(before, after, sizeof(float) * 97 * 12), 0);
    free(before);
    free(after);
    /* saved without an optimizer: restoring state is refused, plain restore works */
    emb_saver_destroy(&sv);
    sv = saver(dir, "plain", 0, NULL);
    cr_assert_eq(emb_saver_save(sv, a.s, 2, path, sizeof path), 0);
    cr_assert_eq(emb_checkpoint_restore_ex(b.s, path, &ro, NULL), EMB_ENOTFOUND);
    cr_assert_eq(emb_checkpoint_restore(b.s, path, NULL), 0);
    cr_assert(same_values(a.t[0], b.t[0]));
    emb_saver_destroy(&sv);
    run_free(&a);
    run_free(&b);
    rmdir_all(dir);
}

Test(resume, table_without_state_gets_none_back)
{
    char dir[64], path[512];
    tmpdir(dir);
    Run a, b;
    run_make(&a, EMB_OPT_ADAM, EMB_F32, (int32_t[]){1, 1}, 1);
    run_make(&b, EMB_OPT_ADAM, EMB_F32, (int32_t[]){1, 1}, 2);
    run_step(&b, 0); /* b has state, a has none */
    EmbSaver *sv = saver(dir, "k", 0, a.o);
    cr_assert_eq(emb_saver_save(sv, a.s, 0, path, sizeof path), 0);
    const EmbRestoreOptions ro = {.optimizer = b.o};
    cr_assert_eq(emb_checkpoint_restore_ex(b.s, path, &ro, NULL), 0, "%s", emb_last_error());
    EmbTable *st;
    cr_assert_eq(emb_optimizer_state(b.o, b.t[0], 0, &st, NULL), EMB_ENOTFOUND);
    emb_saver_destroy(&sv);
    run_free(&a);
    run_free(&b);
    rmdir_all(dir);
}

/* ---- learning rate and weight decay ---------------------------------------------------- */

Test(optimizer, set_lr_keeps_the_state)
{
    char dir[64], path[512];
    tmpdir(dir);
    for (int kind = EMB_OPT_SGD; kind <= EMB_OPT_ADAM; kind++) {
        Run live, saved;
        run_make(&live, kind, EMB_F32, (int32_t[]){1, 1}, 3);
        run_make(&saved, kind, EMB_F32, (int32_t[]){1, 1}, 3);
        for (int k = 0; k < 4; k++)
            run_step(&live, k);
        EmbSaver *sv = saver(dir, "lr", 0, live.o);
        cr_assert_eq(emb_saver_save(sv, live.s, 4, path, sizeof path), 0);
        /* the live one changes its rate; the other is a new optimizer with that rate */
        cr_assert_eq(emb_optimizer_set_lr(live.o, 0.01f), 0);
        EmbOptimizerConfig c = config(kind);
        c.lr = 0.01f;
        emb_optimizer_destroy(&saved.o);
        cr_assert_eq(emb_optimizer_create(&saved.o, &c), 0);
        const EmbRestoreOptions ro = {.optimizer = saved.o};
        cr_assert_eq(emb_checkpoint_restore_ex(saved.s, path, &ro, NULL), 0);
        for (int k = 4; k < 8; k++) {
            run_step(&live, k);
            run_step(&saved, k);
        }
        for (int i = 0; i < NTAB; i++)
            cr_assert(same_values(live.t[i], saved.t[i]), "kind %d", kind);
        EmbOptimizerConfig got;
        cr_assert_eq(emb_optimizer_get_config(live.o, &got), 0);
        cr_assert_eq(got.lr, 0.01f);
        /* bad values and another kind are refused, the config unchanged */
        cr_assert_eq(emb_optimizer_set_lr(live.o, -1.0f), EMB_EINVAL);
        cr_assert_eq(emb_optimizer_set_lr(live.o, NAN), EMB_EINVAL);
        c.kind = kind == EMB_OPT_SGD ? EMB_OPT_ADAM : EMB_OPT_SGD;
        cr_assert_eq(emb_optimizer_set_config(live.o, &c), EMB_EINVAL);
        c = got;
        c.weight_decay = -1.0f;
        cr_assert_eq(emb_optimizer_set_config(live.o, &c), EMB_EINVAL);
        cr_assert_eq(emb_optimizer_get_config(live.o, &got), 0);
        cr_assert_eq(got.lr, 0.01f);
        cr_assert_eq(got.weight_decay, 0.01f);
        emb_saver_destroy(&sv);
        run_free(&live);
        run_free(&saved);
    }
    rmdir_all(dir);
}

/* SGD with weight decay against the formulas, on the updated columns only. */
Test(optimizer, weight_decay_l2_and_decoupled)
{
    for (int mode = EMB_DECAY_L2; mode <= EMB_DECAY_DECOUPLED; mode++) {
        EmbTable *t = NULL;
        cr_assert_eq(emb_table_create(&t, 10, 4, EMB_F32, NULL), 0);
        tu_fill_random(t, 5);
        float *w0 = values(t);
        EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_SGD, 0.5f);
        c.weight_decay = 0.2f;
        c.weight_decay_mode = (EmbWeightDecay)mode;
        EmbOptimizer *o = NULL;
        EmbIndexer *ix = NULL;
        EmbGrad *g = NULL;
        cr_assert_eq(emb_optimizer_create(&o, &c), 0);
        emb_indexer_create(&ix);
        emb_grad_create(&g);
        const int64_t ids[] = {3, 7, 3};
        const float rows[] = {1, 2, 3, 4, 5, 6, 7, 8, 0.5f, 0.5f, 0.5f, 0.5f};
        const EmbSparseGrad sg = {.ids = ids, .n = 3, .featuresize = 4, .values = rows,
                                  .stride = 4};
        cr_assert_eq(emb_grad_set_sparse(g, t, &sg), 0);
        cr_assert_eq(emb_update(o, t, g, ix, 0), 0);
        float *w1 = values(t);
        for (int col = 0; col < 10; col++)
            for (int i = 0; i < 4; i++) {
                const float w = w0[col * 4 + i];
                float gr = col == 3 ? rows[i] + rows[8 + i] : col == 7 ? rows[4 + i] : 0;
                float want = w;
                if (col == 3 || col == 7)
                    want = mode == EMB_DECAY_L2 ? w - 0.5f * (gr + 0.2f * w)
                                                : w * (1 - 0.5f * 0.2f) - 0.5f * gr;
                cr_assert_float_eq(w1[col * 4 + i], want, 1e-6, "mode %d col %d", mode, col);
            }
        free(w0);
        free(w1);
        emb_optimizer_destroy(&o);
        emb_indexer_destroy(&ix);
        emb_grad_destroy(&g);
        emb_table_destroy(&t);
    }
    EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAM, 0.1f);
    EmbOptimizer *o = NULL;
    c.weight_decay_mode = (EmbWeightDecay)7;
    cr_assert_eq(emb_optimizer_create(&o, &c), EMB_EINVAL);
}

/* ---- corruption ------------------------------------------------------------------------ */

/* A saved run (Adam state included) and its file's bytes. */
static void saved_run(const char *dir, Run *r, char *path, size_t cap, unsigned char **bytes,
                      size_t *n)
{
    run_make(r, EMB_OPT_ADAM, EMB_BF16, (int32_t[]){2, 1}, 11);
    run_step(r, 0);
    EmbSaver *sv = saver(dir, "c", 0, r->o);
    cr_assert_eq(emb_saver_save(sv, r->s, 1, path, cap), 0);
    emb_saver_destroy(&sv);
    *bytes = read_file(path, n);
}

/* Restores @path into @r's tables and optimizer: the result, with everything unchanged
 * unless it succeeded. */
static int restore_checked(Run *r, const char *path)
{
    float *before[NTAB], *sbefore[NTAB];
    EmbTable *st;
    for (int i = 0; i < NTAB; i++) {
        before[i] = values(r->t[i]);
        cr_assert_eq(emb_optimizer_state(r->o, r->t[i], 0, &st, NULL), 0);
        sbefore[i] = values(st);
    }
    const EmbRestoreOptions ro = {.optimizer = r->o};
    const int e = emb_checkpoint_restore_ex(r->s, path, &ro, NULL);
    for (int i = 0; i < NTAB && e; i++) {
        float *now = values(r->t[i]);
        cr_assert_eq(memcmp(now, before[i], sizeof(float) * NCOL[i] * DIM[i]), 0);
        cr_assert_eq(emb_optimizer_state(r->o, r->t[i], 0, &st, NULL), 0);
        float *snow = values(st);
        cr_assert_eq(memcmp(snow, sbefore[i], sizeof(float) * NCOL[i] * 2 * DIM[i]), 0);
        free(now);
        free(snow);
    }
    for (int i = 0; i < NTAB; i++) {
        free(before[i]);
        free(sbefore[i]);
    }
    return e;
}

Test(corrupt, every_flipped_byte_and_every_truncation_is_ECORRUPT)
{
    char dir[64], path[512], bad[600];
    tmpdir(dir);
    Run r, target;
    unsigned char *b;
    size_t n;
    saved_run(dir, &r, path, sizeof path, &b, &n);
    run_make(&target, EMB_OPT_ADAM, EMB_BF16, (int32_t[]){1, 3}, 12);
    run_step(&target, 3);
    snprintf(bad, sizeof bad, "%s/bad.safetensors", dir);
    /* every byte of the length and the header, every 7th of the data */
    size_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | b[i];
    for (size_t i = 0; i < n; i += i < 8 + hlen ? 1 : 7) {
        const unsigned char flip = (unsigned char)(1u << (i % 8));
        b[i] ^= flip;
        write_file(bad, b, n);
        const int e = restore_checked(&target, bad);
        cr_assert_eq(e, EMB_ECORRUPT, "byte %zu of %zu flipped: %d %s", i, n, e,
                     emb_last_error());
        b[i] ^= flip;
    }
    for (size_t len = 0; len < n; len += len < 8 + hlen ? 1 : 7) {
        write_file(bad, b, len);
        cr_assert_eq(restore_checked(&target, bad), EMB_ECORRUPT, "truncated to %zu", len);
    }
    /* one extra byte */
    unsigned char *longer = malloc(n + 1);
    memcpy(longer, b, n);
    longer[n] = 0;
    write_file(bad, longer, n + 1);
    cr_assert_eq(restore_checked(&target, bad), EMB_ECORRUPT);
    free(longer);
    /* the intact file restores */
    write_file(bad, b, n);
    cr_assert_eq(restore_checked(&target, bad), 0, "%s", emb_last_error());
    cr_assert(same_values(r.t[0], target.t[0]));
    free(b);
    run_free(&r);
    run_free(&target);
    rmdir_all(dir);
}

/* Audit defect 5: a flipped byte near the end is ECORRUPT even when the shapes differ. */
Test(corrupt, integrity_is_checked_before_meaning)
{
    char dir[64], path[512], bad[600];
    tmpdir(dir);
    Run r, other;
    unsigned char *b;
    size_t n;
    saved_run(dir, &r, path, sizeof path, &b, &n);
    run_make(&other, EMB_OPT_ADAM, EMB_F32, (int32_t[]){1, 1}, 1); /* another dtype */
    const EmbRestoreOptions ro = {.optimizer = other.o};
    cr_assert_eq(emb_checkpoint_restore_ex(other.s, path, &ro, NULL), EMB_ESHAPE);
    b[n - 3] ^= 0x10;
    snprintf(bad, sizeof bad, "%s/bad.safetensors", dir);
    write_file(bad, b, n);
    cr_assert_eq(emb_checkpoint_restore_ex(other.s, bad, &ro, NULL), EMB_ECORRUPT);
    cr_assert(strstr(emb_last_error(), "checksum"), "%s", emb_last_error());
    free(b);
    run_free(&r);
    run_free(&other);
    rmdir_all(dir);
}

Test(corrupt, old_format_foreign_files_and_huge_headers)
{
    char dir[64], p[600];
    tmpdir(dir);
    EmbStore *s = NULL;
    emb_store_create(&s);
    snprintf(p, sizeof p, "%s/old.emb", dir);
    write_file(p, "EMBCKPT\1\1\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 24);
    cr_assert_eq(emb_checkpoint_restore(s, p, NULL), EMB_ENOTSUP);
    cr_assert(strstr(emb_last_error(), "embtables 1 format"), "%s", emb_last_error());
    /* a safetensors file of someone else's */
    static const char foreign[] = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1],"
                                  "\"data_offsets\":[0,4]}}";
    unsigned char buf[256] = {0};
    buf[0] = (unsigned char)(sizeof foreign - 1);
    memcpy(buf + 8, foreign, sizeof foreign - 1);
    snprintf(p, sizeof p, "%s/foreign.safetensors", dir);
    write_file(p, buf, 8 + sizeof foreign - 1 + 4);
    cr_assert_eq(emb_checkpoint_restore(s, p, NULL), EMB_ENOTSUP);
    cr_assert(strstr(emb_last_error(), "did not write"), "%s", emb_last_error());
    /* a header length far beyond the file, and beyond any bound */
    memset(buf, 0xff, 8);
    write_file(p, buf, 64);
    cr_assert_eq(emb_checkpoint_restore(s, p, NULL), EMB_ECORRUPT);
    EmbCheckpoint *ck = NULL;
    cr_assert_eq(emb_checkpoint_open(&ck, p, 0), EMB_ECORRUPT);
    cr_assert_null(ck);
    cr_assert_eq(emb_checkpoint_restore(s, "/nonexistent/x.safetensors", NULL), EMB_EIO);
    cr_assert_eq(emb_checkpoint_restore(s, dir, NULL), EMB_EIO);
    emb_store_destroy(&s);
    rmdir_all(dir);
}

/* ---- the saver ------------------------------------------------------------------------- */

/* A store of two tables whose every element is @v. */
static void fill_store(EmbStore *s, float v)
{
    for (int i = 0; i < NTAB; i++) {
        EmbTable *t;
        cr_assert_eq(emb_store_find(s, NAME[i], &t), 0);
        const EmbInitializer c = {EMB_INIT_CONSTANT, v, 0, 0};
        cr_assert_eq(emb_table_initialize(t, &c), 0);
    }
}

static EmbStore *const_store(void)
{
    EmbStore *s = NULL;
    cr_assert_eq(emb_store_create(&s), 0);
    for (int i = 0; i < NTAB; i++) {
        const EmbVariableSpec v = {.name = NAME[i], .ncolumns = NCOL[i] * 8,
                                   .featuresize = DIM[i], .dtype = EMB_F32};
        EmbTable *t;
        cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_NO, &t), 0);
    }
    return s;
}

/* Every element of the store's tables equals @v. */
static bool store_is(EmbStore *s, float v)
{
    bool ok = true;
    for (int i = 0; i < NTAB; i++) {
        EmbTable *t;
        emb_store_find(s, NAME[i], &t);
        float *x = values(t);
        for (int64_t k = 0; k < emb_table_ncolumns(t) * emb_table_featuresize(t); k++)
            ok &= x[k] == v;
        free(x);
    }
    return ok;
}

/* Every `kept` entry of the index exists. */
static void index_entries_exist(const char *dir)
{
    char p[600], line[600], name[300];
    snprintf(p, sizeof p, "%s/checkpoint", dir);
    FILE *f = fopen(p, "r");
    if (!f)
        return;
    double t;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "kept %299s %lf", name, &t) == 2)
            cr_assert(exists(dir, name), "index entry %s is missing", name);
    fclose(f);
}

/* Audit defects 1 and 2: kill -9 at random points of saves. */
static void kill_during_saves(int32_t keep, int rounds)
{
    char dir[64], latest[600];
    tmpdir(dir);
    EmbStore *s = const_store(), *r = const_store();
    uint64_t seed = 12345 + (uint64_t)keep;
    int restored = 0, left = 0;
    for (int round = 0; round < rounds; round++) {
        /* The child writes one byte once its first save is complete; the kill
         * comes after it, so every round has a checkpoint to restore whatever
         * the machine's load (no timing assumption). */
        int ready[2];
        cr_assert_eq(pipe(ready), 0);
        const pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            close(ready[0]);
            const EmbSaverOptions so = {.max_to_keep = keep};
            EmbSaver *sv = NULL;
            if (emb_saver_create(&sv, dir, "k", &so))
                _exit(1);
            for (int64_t step = 1 + round * 10000;; step++) {
                fill_store(s, (float)step);
                if (emb_saver_save(sv, s, step, NULL, 0))
                    _exit(2);
                if (ready[1] >= 0) {
                    if (write(ready[1], "r", 1) != 1)
                        _exit(3);
                    close(ready[1]);
                    ready[1] = -1;
                }
            }
        }
        close(ready[1]);
        char byte;
        const ssize_t got = read(ready[0], &byte, 1);
        close(ready[0]);
        if (got == 1)
            usleep((useconds_t)(tu_rand(&seed) % 4000));
        kill(pid, SIGKILL);
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFSIGNALED(status), "the saving child failed: status %d", status);
        index_entries_exist(dir);
        left += count_files(dir, ".tmp") > 0;
        cr_assert_eq(got, 1, "round %d: the child saved nothing", round);
        const int e = emb_checkpoint_latest(dir, latest, sizeof latest);
        cr_assert_eq(e, 0, "%s", emb_last_error());
        int64_t step;
        cr_assert_eq(emb_checkpoint_restore(r, latest, &step), 0, "round %d: %s", round,
                     emb_last_error());
        cr_assert(store_is(r, (float)step), "round %d: step %lld", round, (long long)step);
        restored++;
        /* the next save removes every temporary */
        const EmbSaverOptions so = {.max_to_keep = keep};
        EmbSaver *sv = NULL;
        cr_assert_eq(emb_saver_create(&sv, dir, "k", &so), 0);
        fill_store(s, (float)(9000000 + round));
        cr_assert_eq(emb_saver_save(sv, s, 9000000 + round, NULL, 0), 0, "%s", emb_last_error());
        cr_assert_eq(count_files(dir, ".tmp"), 0, "round %d: a temporary survived", round);
        emb_saver_destroy(&sv);
        if (keep > 0)
            cr_assert_leq(count_files(dir, ".safetensors"), keep + 1);
    }
    cr_assert_eq(restored, rounds);
    /* The kills exercise interrupted saves: a save is most of the child's loop,
     * so at least one of the rounds must have left a temporary behind. */
    cr_assert_geq(left, 1, "no kill of %d left a temporary", rounds);
    emb_store_destroy(&s);
    emb_store_destroy(&r);
    rmdir_all(dir);
}

Test(saver, kill9_during_saves_max_to_keep_1)
{
    kill_during_saves(1, 40);
}

Test(saver, kill9_during_saves_max_to_keep_5)
{
    kill_during_saves(5, 40);
}

Test(saver, leftover_temporaries_go_and_held_ones_stay)
{
    char dir[64], p[600];
    tmpdir(dir);
    EmbStore *s = const_store();
    static const char *const dead[] = {"k-3.safetensors.tmp-999999-0", "checkpoint.tmp-1-2",
                                       "k-2.emb.tmp.4242", "checkpoint.tmp.4242"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, dead[i]);
        write_file(p, "x", 1);
    }
    /* a temporary a live save holds (its lock), and another prefix's file */
    snprintf(p, sizeof p, "%s/k-4.safetensors.tmp-1-1", dir);
    write_file(p, "x", 1);
    const int held = open(p, O_RDONLY);
    cr_assert_eq(flock(held, LOCK_EX), 0);
    snprintf(p, sizeof p, "%s/other-1.safetensors.tmp-5-5", dir);
    write_file(p, "x", 1);
    EmbSaver *sv = saver(dir, "k", 2, NULL);
    cr_assert_eq(emb_saver_save(sv, s, 7, NULL, 0), 0);
    for (size_t i = 0; i < 4; i++)
        cr_assert(!exists(dir, dead[i]), "%s survived", dead[i]);
    cr_assert(exists(dir, "k-4.safetensors.tmp-1-1"));
    cr_assert(exists(dir, "other-1.safetensors.tmp-5-5"));
    close(held);
    cr_assert_eq(emb_saver_save(sv, s, 8, NULL, 0), 0);
    cr_assert(!exists(dir, "k-4.safetensors.tmp-1-1"));
    emb_saver_destroy(&sv);
    emb_store_destroy(&s);
    rmdir_all(dir);
}

typedef struct SaveJob {
    EmbSaver *sv;
    const EmbStore *s;
    int64_t step0;
    int rc;
} SaveJob;

static void *save_many(void *arg)
{
    SaveJob *j = arg;
    for (int64_t k = 0; k < 10 && !j->rc; k++)
        j->rc = emb_saver_save(j->sv, j->s, j->step0 + k % 3, NULL, 0);
    return NULL;
}

/* Audit defect 2: threads of one process saving at once (one saver, and two savers of one
 * directory, the same steps included). */
Test(saver, threads_saving_at_once)
{
    char dir[64], latest[600];
    tmpdir(dir);
    EmbStore *s = const_store(), *r = const_store();
    fill_store(s, 3.0f);
    EmbSaver *a = saver(dir, "k", 3, NULL), *b = saver(dir, "k", 3, NULL);
    SaveJob jobs[4] = {{a, s, 100, 0}, {a, s, 200, 0}, {b, s, 100, 0}, {b, s, 300, 0}};
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, save_many, &jobs[i]), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(jobs[i].rc, 0, "thread %d: %d", i, jobs[i].rc);
    }
    cr_assert_eq(count_files(dir, ".tmp"), 0);
    cr_assert_eq(emb_checkpoint_latest(dir, latest, sizeof latest), 0);
    cr_assert_eq(emb_checkpoint_restore(r, latest, NULL), 0, "%s", emb_last_error());
    cr_assert(store_is(r, 3.0f));
    index_entries_exist(dir);
    emb_saver_destroy(&a);
    emb_saver_destroy(&b);
    emb_store_destroy(&s);
    emb_store_destroy(&r);
    rmdir_all(dir);
}

/* Two savers of one directory and prefix, saving in turn, keep one list: the index names
 * only files that exist, and max_to_keep holds for the directory (each saver re-reads the
 * index under the directory's lock). */
Test(saver, two_savers_of_one_directory_keep_one_list)
{
    char dir[64], latest[600];
    tmpdir(dir);
    EmbStore *s = const_store();
    fill_store(s, 2.0f);
    EmbSaver *a = saver(dir, "k", 3, NULL), *b = saver(dir, "k", 3, NULL);
    cr_assert_eq(emb_saver_save(a, s, 100, NULL, 0), 0);
    for (int64_t step = 100; step < 104; step++) /* b retires a's k-100 */
        cr_assert_eq(emb_saver_save(b, s, step, NULL, 0), 0);
    cr_assert_eq(emb_saver_save(a, s, 300, NULL, 0), 0);
    index_entries_exist(dir);
    cr_assert_eq(count_files(dir, ".safetensors"), 3);
    cr_assert(!exists(dir, "k-101.safetensors"));
    cr_assert_eq(emb_checkpoint_latest(dir, latest, sizeof latest), 0);
    cr_assert(strstr(latest, "k-300.safetensors"), "%s", latest);
    emb_saver_destroy(&a);
    emb_saver_destroy(&b);
    emb_store_destroy(&s);
    rmdir_all(dir);
}

/* Audit defect 3: index entries are file names of the directory, nothing else. */
Test(saver, crafted_index_entries_are_never_followed)
{
    char dir[64], p[600], victim[600], latest[600];
    tmpdir(dir);
    snprintf(victim, sizeof victim, "%s-victim.txt", dir);
    write_file(victim, "keep me", 7);
    snprintf(p, sizeof p, "%s/checkpoint", dir);
    char index[1400];
    const char *vname = strrchr(victim, '/') + 1;
    snprintf(index, sizeof index,
             "latest ../%s\nkept ../%s 1.0\nkept k-1.safetensors/../../%s 2.0\n"
             "kept /etc/passwd 3.0\nkept k-2.safetensors 4.0 extra\nkept k-3.safetensors 5.0\n",
             vname, vname, vname);
    write_file(p, index, strlen(index));
    cr_assert_eq(emb_checkpoint_latest(dir, latest, sizeof latest), EMB_ECORRUPT);
    write_file(p, "latest my model-1.safetensors\n", 30);
    cr_assert_eq(emb_checkpoint_latest(dir, latest, sizeof latest), EMB_ECORRUPT);
    write_file(p, index, strlen(index));
    EmbStore *s = const_store();
    EmbSaver *sv = saver(dir, "k", 1, NULL);
    for (int step = 10; step < 13; step++)
        cr_assert_eq(emb_saver_save(sv, s, step, NULL, 0), 0, "%s", emb_last_error());
    struct stat st;
    cr_assert_eq(stat(victim, &st), 0, "the victim outside the directory was deleted");
    cr_assert_eq(stat("/etc/passwd", &st), 0);
    cr_assert_eq(emb_checkpoint_latest(dir, latest, sizeof latest), 0);
    snprintf(p, sizeof p, "%s/k-12.safetensors", dir);
    cr_assert_str_eq(latest, p);
    cr_assert_eq(count_files(dir, ".safetensors"), 1);
    emb_saver_destroy(&sv);
    emb_store_destroy(&s);
    unlink(victim);
    rmdir_all(dir);
}

/* Audit defect 4: prefixes that would break the index are refused. */
Test(saver, prefixes_are_validated)
{
    char dir[64];
    tmpdir(dir);
    static const char *const bad[] = {"", "my model", "a\nb", "a/b", ".hidden", "tab\tx",
                                      "back\\slash",
                                      "0123456789012345678901234567890123456789012345678901234567"
                                      "890123456789012345678901234567890123456789012345"};
    EmbSaver *sv = NULL;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_assert_eq(emb_saver_create(&sv, dir, bad[i], NULL), EMB_EINVAL, "\"%s\"", bad[i]);
    cr_assert_null(sv);
    cr_assert_eq(emb_saver_create(&sv, dir, "model_v2.1-x", NULL), 0);
    emb_saver_destroy(&sv);
    cr_assert_eq(emb_saver_create(&sv, "/dev/null/k", "k", NULL), EMB_EIO);
    rmdir_all(dir);
}

/* A saver creates its directory and the missing parents (mkdir -p); where one cannot be
   made, EMB_EIO names it and nothing is created. */
Test(saver, creates_its_directory)
{
    char dir[64], deep[128], file[128], below[160];
    tmpdir(dir);
    snprintf(deep, sizeof deep, "%s/a/b/c", dir);
    EmbSaver *sv = NULL;
    cr_assert_eq(emb_saver_create(&sv, deep, "k", NULL), 0, "%s", emb_last_error());
    struct stat st;
    cr_assert(stat(deep, &st) == 0 && S_ISDIR(st.st_mode));
    emb_saver_destroy(&sv);
    cr_assert_eq(emb_saver_create(&sv, deep, "k", NULL), 0, "%s", emb_last_error()); /* exists */
    emb_saver_destroy(&sv);
    snprintf(file, sizeof file, "%s/file", dir);
    FILE *f = fopen(file, "w");
    cr_assert_not_null(f);
    fclose(f);
    snprintf(below, sizeof below, "%s/x/y", file);
    cr_assert_eq(emb_saver_create(&sv, below, "k", NULL), EMB_EIO);
    cr_assert_null(sv);
    cr_assert(strstr(emb_last_error(), file), "%s", emb_last_error());
    cr_assert_eq(emb_saver_create(&sv, "", "k", NULL), EMB_EINVAL);
    /* the arguments are checked before anything is made */
    snprintf(below, sizeof below, "%s/new", dir);
    cr_assert_eq(emb_saver_create(&sv, below, "bad prefix", NULL), EMB_EINVAL);
    cr_assert_neq(stat(below, &st), 0);
    rmdir_all(dir);
}

/* Audit defect 6: max_to_keep 0 keeps all (TF); no options keep 5. */
Test(saver, max_to_keep_zero_keeps_all)
{
    char dir[64], dir2[64];
    tmpdir(dir);
    tmpdir(dir2);
    EmbStore *s = const_store();
    EmbSaver *all = saver(dir, "k", 0, NULL), *dflt = NULL;
    cr_assert_eq(emb_saver_create(&dflt, dir2, "k", NULL), 0);
    for (int step = 0; step < 8; step++) {
        cr_assert_eq(emb_saver_save(all, s, step, NULL, 0), 0);
        cr_assert_eq(emb_saver_save(dflt, s, step, NULL, 0), 0);
    }
    cr_assert_eq(count_files(dir, ".safetensors"), 8);
    cr_assert_eq(count_files(dir2, ".safetensors"), EMB_SAVER_DEFAULT_MAX_TO_KEEP);
    emb_saver_destroy(&all);
    emb_saver_destroy(&dflt);
    emb_store_destroy(&s);
    rmdir_all(dir);
    rmdir_all(dir2);
}

/* Audit defect 1: an index that cannot be written fails the save, deletes nothing and
 * leaves no new checkpoint. */
Test(saver, failed_index_write_deletes_nothing)
{
    char dir[64], p[600];
    tmpdir(dir);
    EmbStore *s = const_store();
    EmbSaver *sv = saver(dir, "k", 1, NULL);
    cr_assert_eq(emb_saver_save(sv, s, 1, NULL, 0), 0);
    snprintf(p, sizeof p, "%s/checkpoint", dir);
    cr_assert_eq(unlink(p), 0);
    cr_assert_eq(mkdir(p, 0755), 0); /* the rename onto the index fails */
    cr_assert_eq(emb_saver_save(sv, s, 2, NULL, 0), EMB_EIO);
    cr_assert(exists(dir, "k-1.safetensors"));
    cr_assert(!exists(dir, "k-2.safetensors"));
    cr_assert_eq(count_files(dir, ".tmp"), 0);
    cr_assert_eq(rmdir(p), 0);
    cr_assert_eq(emb_saver_save(sv, s, 3, NULL, 0), 0);
    cr_assert(!exists(dir, "k-1.safetensors"));
    cr_assert(exists(dir, "k-3.safetensors"));
    emb_saver_destroy(&sv);
    emb_store_destroy(&s);
    rmdir_all(dir);
}

/* ---- name maps, listing, mapped tables -------------------------------------------------- */

Test(var_list, subset_under_other_names_and_back)
{
    char dir[64], path[512];
    tmpdir(dir);
    Run a, b;
    trained_and_fresh(&a, &b, EMB_OPT_FTRL, EMB_F16, (int32_t[]){2, 1});
    const EmbCheckpointVar save_vars[] = {{"tower/emb", a.t[0]}};
    const EmbSaverOptions so = {.var_list = save_vars, .nvars = 1, .optimizer = a.o};
    EmbSaver *sv = NULL;
    cr_assert_eq(emb_saver_create(&sv, dir, "v", &so), 0);
    cr_assert_eq(emb_saver_save(sv, NULL, 4, path, sizeof path), 0, "%s", emb_last_error());
    EmbCheckpoint *ck = NULL;
    cr_assert_eq(emb_checkpoint_open(&ck, path, 0), 0, "%s", emb_last_error());
    cr_assert_eq(emb_checkpoint_count(ck), 3);
    cr_assert_eq(emb_checkpoint_global_step(ck), 4);
    EmbCheckpointEntry e;
    cr_assert_eq(emb_checkpoint_entry(ck, 0, &e), 0);
    cr_assert_str_eq(e.name, "tower/emb");
    cr_assert_null(e.slot);
    cr_assert_eq(e.ncolumns, 97);
    cr_assert_eq(e.featuresize, 12);
    cr_assert_eq(e.dtype, EMB_F16);
    cr_assert_eq(e.nshards, 2);
    cr_assert_eq(e.partition, EMB_PARTITION_MOD);
    cr_assert_eq(e.step, 1);
    cr_assert_eq(emb_checkpoint_entry(ck, 2, &e), 0);
    cr_assert_str_eq(e.name, "tower/emb/ftrl.linear");
    cr_assert_str_eq(e.table, "tower/emb");
    cr_assert_str_eq(e.slot, "linear");
    cr_assert_eq(e.dtype, EMB_F32);
    cr_assert_eq(emb_checkpoint_entry(ck, 3, &e), EMB_ERANGE);
    EmbOptimizerConfig oc;
    cr_assert_eq(emb_checkpoint_optimizer(ck, &oc), 0);
    cr_assert_eq(oc.kind, EMB_OPT_FTRL);
    cr_assert_eq(oc.lr, 0.05f);
    cr_assert_eq(oc.weight_decay, 0.01f);
    EmbTable *mt;
    cr_assert_eq(emb_checkpoint_table(ck, "tower/emb", &mt), EMB_EINVAL);
    emb_checkpoint_close(&ck);
    cr_assert_null(ck);
    /* restored into the other run's second-named table: the store is not needed */
    const EmbCheckpointVar rv[] = {{"tower/emb", b.t[0]}};
    const EmbRestoreOptions ro = {.var_list = rv, .nvars = 1, .optimizer = b.o};
    cr_assert_eq(emb_checkpoint_restore_ex(NULL, path, &ro, NULL), 0, "%s", emb_last_error());
    cr_assert(same_values(a.t[0], b.t[0]));
    run_step(&a, 1);
    run_step(&b, 1);
    cr_assert(same_values(a.t[0], b.t[0]));
    const EmbCheckpointVar missing[] = {{"user", b.t[0]}};
    const EmbRestoreOptions rm = {.var_list = missing, .nvars = 1};
    cr_assert_eq(emb_checkpoint_restore_ex(NULL, path, &rm, NULL), EMB_ENOTFOUND);
    /* two tables under one name */
    const EmbCheckpointVar twice[] = {{"x", a.t[0]}, {"x", a.t[1]}};
    const EmbSaverOptions s2 = {.var_list = twice, .nvars = 2};
    emb_saver_destroy(&sv);
    cr_assert_eq(emb_saver_create(&sv, dir, "w", &s2), 0);
    cr_assert_eq(emb_saver_save(sv, NULL, 1, NULL, 0), EMB_EINVAL);
    cr_assert_eq(count_files(dir, "w-"), 0);
    emb_saver_destroy(&sv);
    run_free(&a);
    run_free(&b);
    rmdir_all(dir);
}

Test(mmap, tables_over_the_file)
{
    char dir[64], path[512];
    tmpdir(dir);
    Run a;
    run_make(&a, EMB_OPT_ROWWISE_ADAGRAD, EMB_BF16, (int32_t[]){3, 1}, 4);
    run_step(&a, 0);
    EmbSaver *sv = saver(dir, "m", 0, a.o);
    cr_assert_eq(emb_saver_save(sv, a.s, 1, path, sizeof path), 0);
    EmbCheckpoint *ck = NULL;
    cr_assert_eq(emb_checkpoint_open(&ck, path, EMB_CHECKPOINT_MMAP), 0, "%s", emb_last_error());
    EmbTable *t, *h;
    cr_assert_eq(emb_checkpoint_table(ck, "user", &t), 0);
    cr_assert(same_values(t, a.t[0]));
    cr_assert_eq(emb_table_dtype(t), EMB_BF16);
    cr_assert_eq(emb_checkpoint_table(ck, "user/rowwise_adagrad.h", &h), 0);
    cr_assert_eq(emb_table_featuresize(h), 1);
    EmbTable *st;
    cr_assert_eq(emb_optimizer_state(a.o, a.t[0], 0, &st, NULL), 0);
    cr_assert(same_values(h, st));
    /* a lookup over the mapped table */
    const int64_t ids[] = {5, 0, 96};
    float out[3 * 12], want[3 * 12];
    cr_assert_eq(emb_gather(t, ids, 3, out, 12), 0);
    cr_assert_eq(emb_gather(a.t[0], ids, 3, want, 12), 0);
    cr_assert_eq(memcmp(out, want, sizeof out), 0);
    /* copy-on-write: writing changes this process's copy, never the file */
    const float ones[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const int64_t id0 = 0;
    cr_assert_eq(emb_table_scatter_update(t, &id0, 1, ones, 12), 0);
    cr_assert_eq(emb_checkpoint_table(ck, "nope", &t), EMB_ENOTFOUND);
    emb_checkpoint_close(&ck);
    Run b;
    run_make(&b, EMB_OPT_ROWWISE_ADAGRAD, EMB_BF16, (int32_t[]){1, 1}, 5);
    cr_assert_eq(emb_checkpoint_restore(b.s, path, NULL), 0, "%s", emb_last_error());
    cr_assert(same_values(a.t[0], b.t[0]));
    cr_assert_eq(emb_checkpoint_open(&ck, path, 1u << 5), EMB_EINVAL);
    emb_saver_destroy(&sv);
    run_free(&a);
    run_free(&b);
    rmdir_all(dir);
}

/* ---- crafted files: a valid header checksum, lying content ------------------------------ */

/* Writes a checkpoint whose header (tensor entries @tensors, embtables metadata @meta) has a
 * correct header_xxh3, followed by @ndata bytes of data. */
static void craft(const char *path, const char *tensors, const char *meta, size_t ndata)
{
    char h[4096], esc[2048];
    size_t k = 0;
    for (const char *p = meta; *p; p++) { /* meta as a JSON string */
        if (*p == '"')
            esc[k++] = '\\';
        esc[k++] = *p;
    }
    esc[k] = '\0';
    int n = snprintf(h, sizeof h, "{\"__metadata__\":{\"format\":\"embtables\",\"embtables\":\"%s\","
                     "\"header_xxh3\":\"0000000000000000\"}%s%s}", esc, tensors[0] ? "," : "",
                     tensors);
    char *digits = strstr(h, "\"header_xxh3\":\"") + 15;
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)XXH3_64bits(h, (size_t)n));
    memcpy(digits, hex, 16);
    unsigned char *file = calloc(1, 8 + (size_t)n + ndata);
    for (int i = 0; i < 8; i++)
        file[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(file + 8, h, (size_t)n);
    write_file(path, file, 8 + (size_t)n + ndata);
    free(file);
}

Test(corrupt, crafted_headers_with_valid_checksums_are_bounded)
{
    char dir[64], p[600];
    tmpdir(dir);
    snprintf(p, sizeof p, "%s/x.safetensors", dir);
    EmbStore *s = NULL;
    emb_store_create(&s);
    const EmbVariableSpec v = {.name = "w", .ncolumns = 2, .featuresize = 2, .dtype = EMB_F32};
    EmbTable *t;
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_NO, &t), 0);
    /* 16 zero bytes hash to this (XXH3-64 of 16 zeros) */
    char sum[17];
    const unsigned char zeros[16] = {0};
    snprintf(sum, sizeof sum, "%016llx", (unsigned long long)XXH3_64bits(zeros, 16));
    char meta[512], ok_meta[512];
    snprintf(ok_meta, sizeof ok_meta, "{\"version\":2,\"global_step\":3,\"tables\":[{\"name\":"
             "\"w\",\"nshards\":1,\"partition\":\"none\",\"step\":-1}],\"xxh3\":{\"w\":\"%s\"}}",
             sum);
    const char *good = "\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}";
    craft(p, good, ok_meta, 16);
    int64_t step = 0;
    cr_assert_eq(emb_checkpoint_restore(s, p, &step), 0, "%s", emb_last_error());
    cr_assert_eq(step, 3);
    static const char *const lies[] = {
        "\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,1600000]}",
        "\"w\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,1073741824],"
        "\"data_offsets\":[0,16]}",
        "\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[16,0]}",
        "\"w\":{\"dtype\":\"F32\",\"shape\":[-2,-2],\"data_offsets\":[0,16]}",
        "\"w\":{\"dtype\":\"F64\",\"shape\":[2,1],\"data_offsets\":[0,16]}",
        "\"w\":{\"dtype\":\"F32\",\"shape\":[2,2,1],\"data_offsets\":[0,16]}",
        "\"w\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]},"
        "\"v\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[4,12]}",
        "\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16],\"x\":1}",
        "\"w\":[]",
    };
    for (size_t i = 0; i < sizeof lies / sizeof *lies; i++) {
        craft(p, lies[i], ok_meta, 16);
        cr_assert_eq(emb_checkpoint_restore(s, p, NULL), EMB_ECORRUPT, "lie %zu: %s", i,
                     emb_last_error());
    }
    static const char *const bad_meta[] = {
        "{\"version\":2,\"global_step\":3,\"tables\":[],\"xxh3\":{\"w\":\"%s\"}}",
        "{\"version\":2,\"global_step\":3,\"tables\":[{\"name\":\"nope\",\"nshards\":1,"
        "\"partition\":\"none\",\"step\":-1}],\"xxh3\":{\"w\":\"%s\"}}",
        "{\"version\":2,\"global_step\":3,\"tables\":[{\"name\":\"w\",\"nshards\":0,"
        "\"partition\":\"none\",\"step\":-1}],\"xxh3\":{\"w\":\"%s\"}}",
        "{\"version\":2,\"global_step\":3,\"tables\":[{\"name\":\"w\",\"nshards\":1,"
        "\"partition\":\"none\",\"step\":4}],\"xxh3\":{\"w\":\"%s\"}}",
        "{\"version\":2,\"global_step\":3,\"tables\":[{\"name\":\"w\",\"nshards\":1,"
        "\"partition\":\"none\",\"step\":-1}],\"xxh3\":{\"v\":\"%s\"}}",
        "{\"version\":2,\"global_step\":\"3\",\"tables\":[],\"xxh3\":{\"w\":\"%s\"}}",
        "[\"%s\"]",
        "{\"version\":2,\"global_step\":-1,\"tables\":[{\"name\":\"w\",\"nshards\":1,"
        "\"partition\":\"none\",\"step\":-1}],\"xxh3\":{\"w\":\"%s\"}}",
    };
    for (size_t i = 0; i < sizeof bad_meta / sizeof *bad_meta; i++) {
        snprintf(meta, sizeof meta, bad_meta[i], sum);
        craft(p, good, meta, 16);
        cr_assert_eq(emb_checkpoint_restore(s, p, NULL), EMB_ECORRUPT, "meta %zu: %s", i,
                     emb_last_error());
    }
    cr_assert(strstr(emb_last_error(), "global_step (>= 0)"), "%s", emb_last_error());
    snprintf(meta, sizeof meta, "{\"version\":3,\"global_step\":3}");
    craft(p, good, meta, 16);
    cr_assert_eq(emb_checkpoint_restore(s, p, NULL), EMB_ENOTSUP);
    /* a zero-column table round-trips */
    EmbStore *e = NULL;
    emb_store_create(&e);
    const EmbVariableSpec z = {.name = "z", .ncolumns = 0, .featuresize = 3, .dtype = EMB_BF16};
    cr_assert_eq(emb_store_get(e, &z, EMB_REUSE_NO, &t), 0);
    EmbSaver *sv = saver(dir, "z", 0, NULL);
    cr_assert_eq(emb_saver_save(sv, e, -1, p, sizeof p), EMB_EINVAL, "a step no restore takes");
    cr_assert(strstr(emb_last_error(), "global_step -1"), "%s", emb_last_error());
    cr_assert_eq(count_files(dir, "z-"), 0);
    cr_assert_eq(emb_saver_save(sv, e, 1, p, sizeof p), 0, "%s", emb_last_error());
    cr_assert_eq(emb_checkpoint_restore(e, p, NULL), 0, "%s", emb_last_error());
    EmbCheckpoint *ck = NULL;
    cr_assert_eq(emb_checkpoint_open(&ck, p, EMB_CHECKPOINT_MMAP), 0, "%s", emb_last_error());
    cr_assert_eq(emb_checkpoint_table(ck, "z", &t), 0);
    cr_assert_eq(emb_table_ncolumns(t), 0);
    emb_checkpoint_close(&ck);
    emb_saver_destroy(&sv);
    emb_store_destroy(&e);
    emb_store_destroy(&s);
    rmdir_all(dir);
}
