/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_delta.c — delta checkpoints (issue 45): a full save and ten deltas restore bit for
 * bit what a full save at the same step restores (values and Adam state, a partitioned
 * table too), a delta holds exactly the touched rows, a full save every N deltas, broken
 * chains (a missing or a foreign link) are EMB_ECORRUPT naming the link and change
 * nothing, max_to_keep never deletes what a kept chain needs, and a kill -9 during delta
 * saves leaves the chain restorable; a collection's full_every; streaming (emb_table_changed_since) and the serving
 * export (emb_store_export, int8, mapped).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "embtables/embtables.h"
#include "test_files.h"
#include "test_kill9.h"
#include "test_util.h"

#define NTAB 2
static const int64_t NCOL[NTAB] = {1000, 300};
static const int32_t DIM[NTAB] = {8, 6};
static const int32_t SHARDS[NTAB] = {3, 1};
static const char *const NAME[NTAB] = {"user", "item"};

typedef struct Run {
    EmbStore *s;
    EmbTable *t[NTAB];
    EmbOptimizer *o;
    EmbIndexer *ix;
    EmbGrad *g;
} Run;

static void run_make(Run *r, uint64_t seed)
{
    cr_assert_eq(emb_store_create(&r->s), 0);
    for (int i = 0; i < NTAB; i++) {
        const EmbVariableSpec v = {.name = NAME[i], .ncolumns = NCOL[i], .featuresize = DIM[i],
                                   .dtype = i ? EMB_BF16 : EMB_F32,
                                   .init = {EMB_INIT_UNIFORM, -1, 1, seed + i},
                                   .nshards = SHARDS[i], .partition = EMB_PARTITION_MOD};
        cr_assert_eq(emb_store_get(r->s, &v, EMB_REUSE_NO, &r->t[i]), 0, "%s", emb_last_error());
    }
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAM, 0.05f);
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

/* Step @k: 16 seeded ids (repeats included) per table, among the first 40 rows. */
static void run_step(Run *r, int k)
{
    int64_t ids[16];
    float rows[16 * 8];
    for (int i = 0; i < NTAB; i++) {
        uint64_t seed = 1000u * (uint64_t)k + (uint64_t)i + 1;
        for (int j = 0; j < 16; j++)
            ids[j] = (int64_t)(tu_rand(&seed) % 40u) * (i + 1);
        for (int j = 0; j < 16 * DIM[i]; j++)
            rows[j] = tu_randf(&seed);
        const EmbSparseGrad sg = {.ids = ids, .n = 16, .featuresize = DIM[i], .values = rows,
                                  .stride = DIM[i]};
        cr_assert_eq(emb_grad_set_sparse(r->g, r->t[i], &sg), 0);
        cr_assert_eq(emb_update(r->o, r->t[i], r->g, r->ix, 0), 0, "%s", emb_last_error());
    }
}

static bool same_table(const EmbTable *a, const EmbTable *b)
{
    const int64_t n = emb_table_ncolumns(a) * emb_table_featuresize(a);
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    cr_assert_eq(emb_table_read(a, x, emb_table_featuresize(a)), 0);
    cr_assert_eq(emb_table_read(b, y, emb_table_featuresize(b)), 0);
    const bool same = emb_table_ncolumns(a) == emb_table_ncolumns(b) &&
                      memcmp(x, y, (size_t)n * sizeof *x) == 0;
    free(x);
    free(y);
    return same;
}

static bool same_run(const Run *a, const Run *b)
{
    bool same = true;
    for (int i = 0; i < NTAB; i++) {
        EmbTable *sa, *sb;
        int64_t ka, kb;
        cr_assert_eq(emb_optimizer_state(a->o, a->t[i], 0, &sa, &ka), 0);
        cr_assert_eq(emb_optimizer_state(b->o, b->t[i], 0, &sb, &kb), 0);
        same = same && same_table(a->t[i], b->t[i]) && ka == kb && sa && sb &&
               same_table(sa, sb);
    }
    return same;
}

static EmbSaver *saver(const char *dir, int32_t keep, int32_t full_every, const EmbOptimizer *o)
{
    const EmbSaverOptions so = {.max_to_keep = keep, .optimizer = o, .full_every = full_every};
    EmbSaver *sv = NULL;
    cr_assert_eq(emb_saver_create(&sv, dir, "m", &so), 0, "%s", emb_last_error());
    return sv;
}

/* Rows in the file's delta.ids tensor of table @name; -1: a full checkpoint. */
static int64_t delta_rows(const char *path, const char *name)
{
    EmbCheckpoint *ck;
    cr_assert_eq(emb_checkpoint_open(&ck, path, 0), 0, "%s", emb_last_error());
    int64_t n = -1;
    char want[64];
    snprintf(want, sizeof want, "%s/delta.ids", name);
    for (int64_t i = 0; i < emb_checkpoint_count(ck); i++) {
        EmbCheckpointEntry e;
        cr_assert_eq(emb_checkpoint_entry(ck, i, &e), 0);
        if (strcmp(e.name, want) == 0) {
            cr_assert_str_eq(e.slot, "delta.ids");
            n = e.ncolumns;
        }
    }
    emb_checkpoint_close(&ck);
    return n;
}

static off_t file_size(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s", path);
    return st.st_size;
}

/* Distinct ids of table @i over steps [k0, k1) (run_step's). */
static int64_t distinct_ids(int i, int k0, int k1)
{
    bool seen[1000] = {false};
    int64_t n = 0;
    for (int k = k0; k < k1; k++) {
        uint64_t seed = 1000u * (uint64_t)k + (uint64_t)i + 1;
        for (int j = 0; j < 16; j++) {
            const int64_t id = (int64_t)(tu_rand(&seed) % 40u) * (i + 1);
            n += !seen[id];
            seen[id] = true;
        }
        for (int j = 0; j < 16 * DIM[i]; j++)
            (void)tu_randf(&seed);
    }
    return n;
}

Test(delta, full_and_ten_deltas_restore_as_a_full_save)
{
    char dir[64], ref[64], paths[11][512], full[512];
    tmpdir(dir);
    tmpdir(ref);
    Run a;
    run_make(&a, 7);
    EmbSaver *sv = saver(dir, 0, 10, a.o);
    cr_assert_eq(emb_saver_save(sv, a.s, 0, paths[0], sizeof paths[0]), 0, "%s",
                 emb_last_error());
    cr_assert_eq(delta_rows(paths[0], "user"), -1, "the first save is full");
    for (int d = 1; d <= 10; d++) {
        for (int k = 3 * d; k < 3 * d + 3; k++)
            run_step(&a, k);
        cr_assert_eq(emb_saver_save(sv, a.s, d, paths[d], sizeof paths[d]), 0, "%s",
                     emb_last_error());
        for (int i = 0; i < NTAB; i++) /* exactly the rows touched since the last save */
            cr_assert_eq(delta_rows(paths[d], NAME[i]), distinct_ids(i, 3 * d, 3 * d + 3),
                         "save %d, %s", d, NAME[i]);
        cr_assert_lt(file_size(paths[d]) * 4, file_size(paths[0]));
    }
    EmbSaver *fs = saver(ref, 0, 0, a.o);
    cr_assert_eq(emb_saver_save(fs, a.s, 10, full, sizeof full), 0, "%s", emb_last_error());
    Run b, c;
    run_make(&b, 99);
    run_make(&c, 98);
    const EmbRestoreOptions rb = {.optimizer = b.o}, rc = {.optimizer = c.o};
    int64_t step = -1;
    cr_assert_eq(emb_checkpoint_restore_ex(b.s, paths[10], &rb, &step), 0, "%s",
                 emb_last_error());
    cr_assert_eq(step, 10);
    cr_assert_eq(emb_checkpoint_restore_ex(c.s, full, &rc, NULL), 0, "%s", emb_last_error());
    cr_assert(same_run(&b, &c), "full + 10 deltas differs from the full save");
    cr_assert(same_run(&a, &b), "full + 10 deltas differs from the trained tables");
    /* and a middle link restores its own step */
    cr_assert_eq(emb_checkpoint_restore_ex(b.s, paths[4], &rb, &step), 0, "%s",
                 emb_last_error());
    cr_assert_eq(step, 4);
    cr_assert_not(same_run(&a, &b));
    /* training on from the restored chain matches training straight through */
    cr_assert_eq(emb_checkpoint_restore_ex(b.s, paths[10], &rb, &step), 0);
    for (int k = 33; k < 36; k++)
        run_step(&a, k), run_step(&b, k);
    cr_assert(same_run(&a, &b));
    emb_saver_destroy(&sv);
    emb_saver_destroy(&fs);
    run_free(&a);
    run_free(&b);
    run_free(&c);
    rmdir_all(dir);
    rmdir_all(ref);
}

/* Step @k through emb_update_many on @st (threads and splits: the indexing's partitions). */
static void run_step_many(Run *r, EmbStrategy *st, int k)
{
    static int64_t ids[NTAB][600];
    static float rows[NTAB][600 * 8];
    EmbGrad *g[NTAB];
    EmbIndexer *ix[NTAB];
    for (int i = 0; i < NTAB; i++) {
        uint64_t seed = 7000u * (uint64_t)k + (uint64_t)i + 1;
        for (int j = 0; j < 600; j++)
            ids[i][j] = (int64_t)(tu_rand(&seed) % (uint64_t)NCOL[i]);
        for (int j = 0; j < 600 * DIM[i]; j++)
            rows[i][j] = tu_randf(&seed);
        const EmbSparseGrad sg = {.ids = ids[i], .n = 600, .featuresize = DIM[i],
                                  .values = rows[i], .stride = DIM[i]};
        cr_assert_eq(emb_grad_create(&g[i]), 0);
        cr_assert_eq(emb_indexer_create(&ix[i]), 0);
        cr_assert_eq(emb_grad_set_sparse(g[i], r->t[i], &sg), 0);
    }
    cr_assert_eq(emb_update_many(st, r->o, r->t, (const EmbGrad *const *)g, NTAB, ix, 0), 0,
                 "%s", emb_last_error());
    for (int i = 0; i < NTAB; i++) {
        emb_grad_destroy(&g[i]);
        emb_indexer_destroy(&ix[i]);
    }
}

Test(delta, rows_of_split_parallel_updates_are_tracked)
{
    char dir[64], path[512];
    tmpdir(dir);
    Run a, b;
    run_make(&a, 7);
    run_make(&b, 9);
    EmbSaver *sv = saver(dir, 0, 5, a.o);
    cr_assert_eq(emb_saver_save(sv, a.s, 0, NULL, 0), 0);
    for (int sp = 1; sp <= 4; sp++) {
        const EmbStrategyOptions so = {.nthreads = 2, .num_splits = sp};
        EmbStrategy *st = NULL;
        cr_assert_eq(emb_strategy_prealloc_concat(&st, &so), 0);
        run_step_many(&a, st, sp);
        emb_strategy_destroy(&st);
        cr_assert_eq(emb_saver_save(sv, a.s, sp, path, sizeof path), 0, "%s", emb_last_error());
        cr_assert_geq(delta_rows(path, "user"), 0, "save %d is a delta", sp);
        const EmbRestoreOptions ro = {.optimizer = b.o};
        cr_assert_eq(emb_checkpoint_restore_ex(b.s, path, &ro, NULL), 0, "%s", emb_last_error());
        cr_assert(same_run(&a, &b), "splits %d", sp);
    }
    emb_saver_destroy(&sv);
    run_free(&a);
    run_free(&b);
    rmdir_all(dir);
}

Test(delta, a_full_save_every_n_deltas)
{
    char dir[64], path[512];
    tmpdir(dir);
    Run a;
    run_make(&a, 7);
    EmbSaver *sv = saver(dir, 0, 3, a.o);
    for (int s = 0; s < 9; s++) {
        run_step(&a, s);
        cr_assert_eq(emb_saver_save(sv, a.s, s, path, sizeof path), 0, "%s", emb_last_error());
        cr_assert_eq(delta_rows(path, "item") < 0, s % 4 == 0, "save %d", s);
    }
    /* an untracked write (a column pointer for UPDATE) makes the next save full */
    void *col;
    cr_assert_eq(emb_table_column_pointer(a.t[1], 0, EMB_CTX_UPDATE, &col), 0);
    cr_assert_eq(emb_saver_save(sv, a.s, 9, path, sizeof path), 0);
    cr_assert_lt(delta_rows(path, "item"), 0);
    emb_saver_destroy(&sv);
    run_free(&a);
    rmdir_all(dir);
}

/* A collection of the two tables (Adam) saving deltas every save but every third. */
static EmbCollection *coll(int32_t full_every)
{
    EmbCollectionTable ct[NTAB];
    for (int i = 0; i < NTAB; i++)
        ct[i] = (EmbCollectionTable){.name = NAME[i], .pooling = {.combiner = EMB_COMBINER_SUM},
                                     .spec = {.ncolumns = NCOL[i], .featuresize = DIM[i],
                                              .init = {EMB_INIT_NORMAL, 0, 0.1f, 5}}};
    const EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_ADAM, 0.01f);
    const EmbCollectionOptions o = {.optimizer = &oc, .full_every = full_every};
    EmbCollection *c = NULL;
    cr_assert_eq(emb_collection_create(&c, ct, NTAB, &o), 0, "%s", emb_last_error());
    return c;
}

static void coll_step(EmbCollection *c, int s)
{
    int64_t ids[NTAB][16];
    EmbBatch b[NTAB];
    float out[16 * (8 + 6)];
    for (int i = 0; i < NTAB; i++) {
        for (int k = 0; k < 16; k++)
            ids[i][k] = (s * 37 + k * k * 11 + i) % 50; /* a few rows of each table */
        b[i] = (EmbBatch){.ids = ids[i], .nnz = 16, .nbags = 16, .bag_size = 1};
    }
    const EmbOutputs lo = emb_collection_concat(c, out);
    cr_assert_eq(emb_collection_forward(c, b, &lo), 0, "%s", emb_last_error());
    for (int k = 0; k < 16 * (8 + 6); k++)
        out[k] = (float)(k % 7) / 8 - 0.4f;
    cr_assert_eq(emb_collection_backward(c, &lo), 0, "%s", emb_last_error());
}

Test(delta, collection_saves_deltas_with_full_every)
{
    char dir[64], path[512];
    tmpdir(dir);
    EmbCollection *a = coll(2), *straight = coll(0), *back = coll(2);
    for (int s = 1; s <= 5; s++) {
        coll_step(a, s);
        coll_step(straight, s);
        cr_assert_eq(emb_collection_save(a, dir, "c", s, 0, path, sizeof path), 0, "%s",
                     emb_last_error());
        cr_assert_eq(delta_rows(path, "user") < 0, s % 3 == 1, "save %d", s);
    }
    int64_t at = -1;
    cr_assert_eq(emb_collection_restore(back, path, &at), 0, "%s", emb_last_error());
    cr_assert_eq(at, 5);
    coll_step(back, 6); /* the optimizer's state and count restored too */
    coll_step(straight, 6);
    for (int i = 0; i < NTAB; i++)
        cr_assert(same_table(emb_collection_table(back, i), emb_collection_table(straight, i)),
                  "table %d", i);
    emb_collection_destroy(&a);
    emb_collection_destroy(&straight);
    emb_collection_destroy(&back);
    rmdir_all(dir);
}

/* A copy of @from at @to. */
static void copy_file(const char *from, const char *to)
{
    FILE *f = fopen(from, "rb"), *g = fopen(to, "wb");
    cr_assert(f && g);
    char b[4096];
    for (size_t n; (n = fread(b, 1, sizeof b, f)) > 0;)
        cr_assert_eq(fwrite(b, 1, n, g), n);
    fclose(f);
    fclose(g);
}

Test(delta, a_missing_or_foreign_link_is_ECORRUPT_naming_it_and_changes_nothing)
{
    char dir[64], other[64], p[4][512], q[4][512];
    tmpdir(dir);
    tmpdir(other);
    Run a, o, b;
    run_make(&a, 7);
    run_make(&o, 8);
    run_make(&b, 9);
    EmbSaver *sv = saver(dir, 0, 10, a.o), *so = saver(other, 0, 10, o.o);
    for (int s = 0; s < 4; s++) {
        run_step(&a, s);
        run_step(&o, s + 50);
        cr_assert_eq(emb_saver_save(sv, a.s, s, p[s], sizeof p[s]), 0);
        cr_assert_eq(emb_saver_save(so, o.s, s, q[s], sizeof q[s]), 0);
    }
    const EmbRestoreOptions rb = {.optimizer = b.o};
    Run b0; /* b as it was */
    run_make(&b0, 9);
    copy_file(p[2], q[0]); /* keep the real one aside */
    copy_file(q[2], p[2]); /* a foreign link: same name, another run's file */
    cr_assert_eq(emb_checkpoint_restore_ex(b.s, p[3], &rb, NULL), EMB_ECORRUPT);
    cr_assert(strstr(emb_last_error(), "m-2.safetensors"), "%s", emb_last_error());
    for (int i = 0; i < NTAB; i++)
        cr_assert(same_table(b.t[i], b0.t[i]), "a failed restore changed %s", NAME[i]);
    unlink(p[2]); /* a missing link */
    cr_assert_eq(emb_checkpoint_restore_ex(b.s, p[3], &rb, NULL), EMB_ECORRUPT);
    cr_assert(strstr(emb_last_error(), "m-2.safetensors"), "%s", emb_last_error());
    for (int i = 0; i < NTAB; i++)
        cr_assert(same_table(b.t[i], b0.t[i]), "a failed restore changed %s", NAME[i]);
    copy_file(q[0], p[2]); /* back: the chain restores */
    cr_assert_eq(emb_checkpoint_restore_ex(b.s, p[3], &rb, NULL), 0, "%s", emb_last_error());
    cr_assert(same_run(&a, &b));
    emb_saver_destroy(&sv);
    emb_saver_destroy(&so);
    run_free(&a);
    run_free(&o);
    run_free(&b);
    run_free(&b0);
    rmdir_all(dir);
    rmdir_all(other);
}

/* Files of @dir whose name contains @part. */
static int count_files_with(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));)
        n += strstr(de->d_name, part) != NULL;
    closedir(d);
    return n;
}

Test(delta, max_to_keep_never_deletes_what_a_kept_chain_needs)
{
    char dir[64];
    tmpdir(dir);
    Run a, b;
    run_make(&a, 7);
    run_make(&b, 9);
    EmbSaver *sv = saver(dir, 2, 4, a.o);
    for (int s = 0; s < 23; s++) {
        run_step(&a, s);
        cr_assert_eq(emb_saver_save(sv, a.s, s, NULL, 0), 0, "%s", emb_last_error());
        cr_assert_geq(kept_restore(dir, b.s, b.o), 2 - (s == 0));
    }
    /* the chain of the last save is whole; older chains went */
    cr_assert_leq(count_files_with(dir, ".safetensors"), 6);
    emb_saver_destroy(&sv);
    run_free(&a);
    run_free(&b);
    rmdir_all(dir);
}

static void kill9_train(const char *dir, int round, int ready)
{
    Run a;
    run_make(&a, 7);
    EmbSaver *sv = saver(dir, 3, 5, a.o);
    for (int s = 0;; s++) {
        run_step(&a, s);
        if (emb_saver_save(sv, a.s, 1000 * round + s, NULL, 0))
            _exit(2);
        if (s == 1 && write(ready, "r", 1) != 1)
            _exit(3);
    }
}

static void kill9_check(const char *dir, int round)
{
    char latest[600];
    cr_assert_eq(emb_checkpoint_latest(dir, latest, sizeof latest), 0);
    Run b;
    run_make(&b, 9);
    const EmbRestoreOptions ro = {.optimizer = b.o};
    cr_assert_eq(emb_checkpoint_restore_ex(b.s, latest, &ro, NULL), 0, "round %d: %s", round,
                 emb_last_error());
    cr_assert_geq(kept_restore(dir, b.s, b.o), 1);
    run_free(&b);
}

Test(delta, kill9_during_delta_saves_leaves_the_chain_restorable)
{
    char dir[64];
    tmpdir(dir);
    kill9_rounds(dir, 12, kill9_train, kill9_check);
    rmdir_all(dir);
}

Test(stream, changed_since_gives_the_rows_written_after_a_write_count)
{
    Run a;
    run_make(&a, 7);
    int64_t ids[1000], n = -1, now0 = -1, now1 = -1, now2 = -1;
    float rows[1000 * 6];
    /* initialised: every column counts as written */
    cr_assert_eq(emb_table_changed_since(a.t[1], 0, ids, NULL, 0, 1000, &n, &now0), 0, "%s",
                 emb_last_error());
    cr_assert_eq(n, NCOL[1]);
    for (int k = 0; k < 3; k++)
        run_step(&a, k);
    cr_assert_eq(emb_table_changed_since(a.t[1], now0, ids, rows, 6, 1000, &n, &now1), 0);
    cr_assert_eq(n, distinct_ids(1, 0, 3));
    cr_assert_gt(now1, now0);
    float *all = malloc((size_t)NCOL[1] * 6 * sizeof *all);
    cr_assert_eq(emb_table_read(a.t[1], all, 6), 0);
    for (int64_t k = 0; k < n; k++) {
        cr_assert(k == 0 || ids[k] > ids[k - 1]);
        cr_assert_eq(ids[k] % 2, 0, "only even ids are trained (item: id * 2)");
        cr_assert_eq(memcmp(rows + k * 6, all + ids[k] * 6, 6 * sizeof(float)), 0);
    }
    free(all);
    /* too little room: the count, and the first ids */
    int64_t few[2], m = -1;
    cr_assert_eq(emb_table_changed_since(a.t[1], now0, few, NULL, 0, 2, &m, NULL), 0);
    cr_assert_eq(m, n);
    cr_assert_eq(few[1], ids[1]);
    /* nothing since now; a scatter is a write */
    cr_assert_eq(emb_table_changed_since(a.t[1], now1, ids, NULL, 0, 1000, &n, &now2), 0);
    cr_assert_eq(n, 0);
    const int64_t sid[1] = {299};
    const float one[6] = {1, 1, 1, 1, 1, 1};
    cr_assert_eq(emb_table_scatter_update(a.t[1], sid, 1, one, 6), 0);
    cr_assert_eq(emb_table_changed_since(a.t[1], now2, ids, rows, 6, 1000, &n, NULL), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(ids[0], 299);
    cr_assert_eq(memcmp(rows, one, sizeof one), 0);
    run_free(&a);
}

Test(export, int8_serving_file_without_state_mapped_with_no_copy)
{
    char dir[64], full[512], serve[600], f32[600];
    tmpdir(dir);
    Run a;
    run_make(&a, 7);
    for (int k = 0; k < 3; k++)
        run_step(&a, k);
    EmbSaver *sv = saver(dir, 0, 0, a.o);
    cr_assert_eq(emb_saver_save(sv, a.s, 3, full, sizeof full), 0);
    snprintf(serve, sizeof serve, "%s/serve-int8.safetensors", dir);
    snprintf(f32, sizeof f32, "%s/serve-f32.safetensors", dir);
    const EmbExportOptions eo = {.dtype = EMB_INT8, .global_step = 3};
    cr_assert_eq(emb_store_export(a.s, serve, &eo), 0, "%s", emb_last_error());
    cr_assert_eq(emb_store_export(a.s, f32, NULL), 0, "%s", emb_last_error());
    cr_assert_lt(file_size(serve) * 10, file_size(full) * 3, "int8 export over 30 %%");
    EmbCheckpoint *ck;
    cr_assert_eq(emb_checkpoint_open(&ck, serve, EMB_CHECKPOINT_MMAP), 0, "%s", emb_last_error());
    cr_assert_eq(emb_checkpoint_count(ck), NTAB, "no optimizer state");
    cr_assert_eq(emb_checkpoint_global_step(ck), 3);
    for (int i = 0; i < NTAB; i++) {
        EmbTable *m, *q;
        cr_assert_eq(emb_checkpoint_table(ck, NAME[i], &m), 0);
        cr_assert_eq(emb_table_dtype(m), EMB_INT8);
        cr_assert_eq(emb_table_create(&q, NCOL[i], DIM[i], EMB_INT8, NULL), 0);
        cr_assert_eq(emb_table_quantize(q, a.t[i]), 0);
        cr_assert(same_table(m, q), "%s: the mapped rows are not the quantized ones", NAME[i]);
        emb_table_destroy(&q);
    }
    emb_checkpoint_close(&ck);
    /* the f32 export restores the values (and no state) */
    Run b;
    run_make(&b, 9);
    cr_assert_eq(emb_checkpoint_restore(b.s, f32, NULL), 0, "%s", emb_last_error());
    for (int i = 0; i < NTAB; i++)
        cr_assert(same_table(a.t[i], b.t[i]));
    const EmbExportOptions bad = {.dtype = EMB_F16};
    cr_assert_eq(emb_store_export(a.s, serve, &bad), EMB_EINVAL);
    emb_saver_destroy(&sv);
    run_free(&a);
    run_free(&b);
    rmdir_all(dir);
}

/* The pruned export of @t (@dt, rows under norm 1e-3 pruned) mapped reads as @want. */
static void pruned_reads_as(EmbTable *t, EmbDtype dt, const EmbTable *want, const char *path)
{
    const EmbCheckpointVar v = {"w", t};
    const EmbExportOptions eo = {.dtype = dt, .var_list = &v, .nvars = 1, .prune_norm = 1e-3f};
    cr_assert_eq(emb_store_export(NULL, path, &eo), 0, "%s", emb_last_error());
    EmbCheckpoint *ck;
    EmbTable *m;
    cr_assert_eq(emb_checkpoint_open(&ck, path, EMB_CHECKPOINT_MMAP), 0, "%s", emb_last_error());
    cr_assert_eq(emb_checkpoint_table(ck, "w", &m), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_ncolumns(m), emb_table_ncolumns(t));
    cr_assert_eq(emb_table_dtype(m), dt);
    cr_assert(same_table(m, want), "the pruned export does not read as the pruned table");
    /* every lookup form: the same bits as the unpruned table with the pruned rows zeroed */
    const int64_t ids[] = {0, 1, 3, 4, 199, 198, 7, 9, 9, 2, 150, 151};
    const int64_t offs[] = {0, 2, 2, 7, 12};
    const float w[] = {0.5f, -1, 2, 0.25f, 1, 1, -0.5f, 3, 0, 1, 2, 0.1f};
    const EmbPooling forms[] = {EMB_POOLING_GATHER, EMB_POOLING_SUM, EMB_POOLING_MEAN};
    for (int v = 0; v < 6; v++) {
        const bool ragged = v >= 2 && (v & 1); /* gather takes no offsets */
        const EmbBatch b = {.ids = ids, .nnz = 12, .nbags = ragged ? 4 : 12,
                            .offsets = ragged ? offs : NULL, .bag_size = ragged ? 0 : 1,
                            .weights = ragged ? w : NULL};
        float x[12 * 6], y[12 * 6];
        const EmbPooling p = forms[v / 2];
        cr_assert_eq(emb_lookup(m, &b, &p, x, 6), 0, "%s", emb_last_error());
        cr_assert_eq(emb_lookup(want, &b, &p, y, 6), 0, "%s", emb_last_error());
        cr_assert_eq(memcmp(x, y, (size_t)b.nbags * 6 * sizeof *x), 0, "lookup form %d", v);
    }
    emb_checkpoint_close(&ck);
}

Test(export, pruned_rows_read_as_zeros_through_the_remapping)
{
    char dir[64], path[600], full[600];
    tmpdir(dir);
    snprintf(path, sizeof path, "%s/pruned.safetensors", dir);
    snprintf(full, sizeof full, "%s/full.safetensors", dir);
    enum { N = 200, D = 6 };
    EmbTable *t, *want, *q;
    cr_assert_eq(emb_table_create(&t, N, D, EMB_F32, NULL), 0);
    cr_assert_eq(emb_table_create(&want, N, D, EMB_F32, NULL), 0);
    for (int64_t c = 0; c < N; c++) {
        float *x, *y;
        cr_assert_eq(emb_table_column_pointer(t, c, EMB_CTX_UPDATE, (void **)&x), 0);
        cr_assert_eq(emb_table_column_pointer(want, c, EMB_CTX_UPDATE, (void **)&y), 0);
        for (int k = 0; k < D; k++) { /* every third row small: pruned */
            x[k] = c % 3 == 0 ? 1e-5f : (float)(c + 1) * 0.01f * (float)(k - 2);
            y[k] = c % 3 == 0 ? 0.0f : x[k];
        }
    }
    pruned_reads_as(t, EMB_F32, want, path);
    const EmbCheckpointVar v = {"w", t};
    const EmbExportOptions eo = {.var_list = &v, .nvars = 1};
    cr_assert_eq(emb_store_export(NULL, full, &eo), 0);
    cr_assert_lt(file_size(path), file_size(full), "a third of the rows pruned");
    cr_assert_eq(emb_table_create(&q, N, D, EMB_INT8, NULL), 0);
    cr_assert_eq(emb_table_quantize(q, want), 0);
    pruned_reads_as(t, EMB_INT8, q, path);
    /* a bad threshold fails before writing; a partitioned table cannot be pruned */
    const EmbExportOptions bad = {.var_list = &v, .nvars = 1, .prune_norm = -1};
    cr_assert_eq(emb_store_export(NULL, path, &bad), EMB_EINVAL);
    Run a;
    run_make(&a, 3);
    const EmbCheckpointVar pv = {"p", a.t[0]};
    const EmbExportOptions part = {.var_list = &pv, .nvars = 1, .prune_untouched = 1};
    cr_assert_eq(emb_store_export(NULL, path, &part), EMB_ENOTSUP);
    run_free(&a);
    emb_table_destroy(&q);
    emb_table_destroy(&want);
    emb_table_destroy(&t);
    rmdir_all(dir);
}
