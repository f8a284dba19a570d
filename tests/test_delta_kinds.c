/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_delta_kinds.c — delta checkpoints of dynamic and tiered tables (issue 45).
 * Dynamic tables, trained with
 * evictions between saves, a full save and four deltas (the rows created or updated since
 * the previous save, and tombstones for the evicted ids) restore exactly what a full save at
 * that step restores (resaved whole, the files are the same bytes: every row, its Adam
 * state, the id set, the update steps and the admission counts), training on from either
 * gives the same tables, a missing link is EMB_ECORRUPT naming it, and a kill -9 during
 * delta saves leaves the chain restorable. Tiered tables (a cache of a few records, so that
 * most touched rows are written back before the save): a delta holds exactly the touched
 * rows, full + deltas restore what a full save restores, and kill -9 during delta saves
 * leaves the chain restorable.
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
static const int32_t DIM[NTAB] = {8, 5};
static const int32_t SHARDS[NTAB] = {1, 3};
static const char *const NAME[NTAB] = {"user", "item"};

typedef struct Run {
    bool tiered;
    char dir[64];
    EmbStore *s;
    EmbTable *t[NTAB];
    EmbOptimizer *o;
    EmbIndexer *ix;
    EmbGrad *g;
} Run;

#define TIER_ROWS 1000

/* Two tiered tables of TIER_ROWS rows in files of a new directory, caches of 6 records. */
static void tier_make(Run *r)
{
    r->tiered = true;
    tmpdir(r->dir);
    cr_assert_eq(emb_store_create(&r->s), 0);
    for (int i = 0; i < NTAB; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/t%d", r->dir, i);
        const int64_t rec = ((int64_t)DIM[i] * 4 + 15) / 16 * 16 + 8 * DIM[i];
        const EmbTieredSpec ts = {path, {.cache_bytes = 6 * rec, .engine = EMB_TIER_ENGINE_PREAD,
                                         .state_width = 2 * DIM[i]}};
        const EmbVariableSpec v = {.name = NAME[i], .ncolumns = TIER_ROWS, .featuresize = DIM[i],
                                   .dtype = EMB_F32,
                                   .init = {EMB_INIT_UNIFORM, -1, 1, 3u + (uint64_t)i},
                                   .tiered = &ts};
        cr_assert_eq(emb_store_get(r->s, &v, EMB_REUSE_NO, &r->t[i]), 0, "%s", emb_last_error());
    }
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAM, 0.05f);
    cr_assert_eq(emb_optimizer_create(&r->o, &c), 0, "%s", emb_last_error());
    cr_assert_eq(emb_indexer_create(&r->ix), 0);
    cr_assert_eq(emb_grad_create(&r->g), 0);
}

static void run_make(Run *r)
{
    r->tiered = false;
    cr_assert_eq(emb_store_create(&r->s), 0);
    for (int i = 0; i < NTAB; i++) {
        const EmbDynamicOptions d = {.admit_after = i ? 1 : 2, .sketch_width = 64};
        const EmbVariableSpec v = {.name = NAME[i], .featuresize = DIM[i],
                                   .dtype = i ? EMB_BF16 : EMB_F32,
                                   .init = {EMB_INIT_UNIFORM, -1, 1, 3u + (uint64_t)i},
                                   .dynamic = &d, .nshards = SHARDS[i],
                                   .partition = EMB_PARTITION_MOD};
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
    if (r->tiered)
        rmdir_all(r->dir);
}

/* Step @k: 24 seeded keys (repeats included) per table among 120 sparse keys; every third
   step evicts the rows not updated in the last 4 steps. */
static void run_step(Run *r, int k)
{
    int64_t ids[24];
    float rows[24 * 8];
    for (int i = 0; i < NTAB; i++) {
        uint64_t seed = 1000u * (uint64_t)k + (uint64_t)i + 1;
        for (int j = 0; j < 24; j++)
            ids[j] = r->tiered ? (int64_t)(tu_rand(&seed) % 60u) * (i + 1)
                               : (int64_t)(tu_rand(&seed) % 120u) * 1000003 + i;
        for (int j = 0; j < 24 * DIM[i]; j++)
            rows[j] = tu_randf(&seed);
        const EmbSparseGrad sg = {.ids = ids, .n = 24, .featuresize = DIM[i], .values = rows,
                                  .stride = DIM[i]};
        cr_assert_eq(emb_grad_set_sparse(r->g, r->t[i], &sg), 0);
        cr_assert_eq(emb_update(r->o, r->t[i], r->g, r->ix, 0), 0, "%s", emb_last_error());
        const EmbDynamicEvict ev = {.ttl = 4};
        if (k % 3 == 2 && !r->tiered)
            cr_assert_eq(emb_table_dynamic_evict(r->t[i], &ev, NULL), 0, "%s", emb_last_error());
    }
}

static EmbSaver *saver(const char *dir, const char *prefix, int32_t keep, int32_t full_every,
                       const EmbOptimizer *o)
{
    const EmbSaverOptions so = {.max_to_keep = keep, .optimizer = o, .full_every = full_every};
    EmbSaver *sv = NULL;
    cr_assert_eq(emb_saver_create(&sv, dir, prefix, &so), 0, "%s", emb_last_error());
    return sv;
}

/* Columns of tensor "<table>/<suffix>" in the file at @path; -1: none. */
static int64_t tensor_rows(const char *path, const char *table, const char *suffix)
{
    EmbCheckpoint *ck;
    cr_assert_eq(emb_checkpoint_open(&ck, path, 0), 0, "%s", emb_last_error());
    int64_t n = -1;
    char want[64];
    snprintf(want, sizeof want, "%s/%s", table, suffix);
    for (int64_t i = 0; i < emb_checkpoint_count(ck); i++) {
        EmbCheckpointEntry e;
        cr_assert_eq(emb_checkpoint_entry(ck, i, &e), 0);
        if (strcmp(e.name, want) == 0)
            n = e.ncolumns;
    }
    emb_checkpoint_close(&ck);
    return n;
}

static char *slurp(const char *path, long *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)*n + 1);
    cr_assert_eq(fread(b, 1, (size_t)*n, f), (size_t)*n);
    fclose(f);
    return b;
}

/* Whether @r saved whole at @step is the same bytes as the file at @want. */
static bool saves_as(const Run *r, int64_t step, const char *want)
{
    char path[512], dir[64];
    tmpdir(dir);
    EmbSaver *sv = saver(dir, "whole", 0, 0, r->o);
    cr_assert_eq(emb_saver_save(sv, r->s, step, path, sizeof path), 0, "%s", emb_last_error());
    emb_saver_destroy(&sv);
    long na, nb;
    char *a = slurp(path, &na), *b = slurp(want, &nb);
    const bool same = na == nb && memcmp(a, b, (size_t)na) == 0;
    free(a);
    free(b);
    rmdir_all(dir);
    return same;
}

/* @a saved whole at @step into @ref (the file: @full, the saver returned); @b made by
   @make and restored from the chain ending at @end: at @step, the full save's bytes. */
static EmbSaver *chain_as_full(const Run *a, const char *ref, int64_t step, char *full,
                               void (*make)(Run *), Run *b, const char *end)
{
    EmbSaver *fs = saver(ref, "m", 0, 0, a->o);
    cr_assert_eq(emb_saver_save(fs, a->s, step, full, 512), 0, "%s", emb_last_error());
    make(b);
    const EmbRestoreOptions rb = {.optimizer = b->o};
    int64_t at = -1;
    cr_assert_eq(emb_checkpoint_restore_ex(b->s, end, &rb, &at), 0, "%s", emb_last_error());
    cr_assert_eq(at, step);
    cr_assert(saves_as(b, step, full), "full + deltas differs from the full save");
    return fs;
}

Test(delta_kinds, dynamic_full_and_deltas_with_evictions_restore_as_a_full_save)
{
    char dir[64], ref[64], paths[5][512], full[512];
    tmpdir(dir);
    tmpdir(ref);
    Run a;
    run_make(&a);
    for (int k = 0; k < 4; k++)
        run_step(&a, k);
    EmbSaver *sv = saver(dir, "m", 0, 10, a.o);
    cr_assert_eq(emb_saver_save(sv, a.s, 0, paths[0], sizeof paths[0]), 0, "%s",
                 emb_last_error());
    int64_t gone = 0;
    for (int d = 1; d <= 4; d++) {
        for (int k = 4 * d; k < 4 * d + 4; k++)
            run_step(&a, k);
        cr_assert_eq(emb_saver_save(sv, a.s, d, paths[d], sizeof paths[d]), 0, "%s",
                     emb_last_error());
        for (int i = 0; i < NTAB; i++) {
            const int64_t n = tensor_rows(paths[d], NAME[i], "dynamic.ids");
            const int64_t g = tensor_rows(paths[d], NAME[i], "delta.gone");
            int64_t rows;
            EmbDynamicStats st;
            cr_assert_eq(emb_table_dynamic_stats(a.t[i], &st), 0);
            rows = st.rows;
            cr_assert_geq(g, 0, "save %d of %s is a delta with tombstones", d, NAME[i]);
            cr_assert(n >= 0 && n <= rows, "save %d, %s: %lld rows of %lld", d, NAME[i],
                      (long long)n, (long long)rows);
            gone += g;
        }
    }
    cr_assert_gt(gone, 0, "evictions between saves make tombstones");
    Run b;
    EmbSaver *fs = chain_as_full(&a, ref, 4, full, run_make, &b, paths[4]);
    const EmbRestoreOptions rb = {.optimizer = b.o};
    int64_t step = -1;
    /* a middle link restores its own step, and the chain's end again */
    cr_assert_eq(emb_checkpoint_restore_ex(b.s, paths[2], &rb, &step), 0, "%s",
                 emb_last_error());
    cr_assert_eq(step, 2);
    cr_assert_not(saves_as(&b, 4, full));
    cr_assert_eq(emb_checkpoint_restore_ex(b.s, paths[4], &rb, &step), 0);
    /* training on from the chain matches training on from the full save */
    Run c;
    run_make(&c);
    const EmbRestoreOptions rc = {.optimizer = c.o};
    cr_assert_eq(emb_checkpoint_restore_ex(c.s, full, &rc, NULL), 0, "%s", emb_last_error());
    for (int k = 20; k < 26; k++)
        run_step(&b, k), run_step(&c, k), run_step(&a, k);
    char again[512];
    EmbSaver *cs = saver(ref, "c", 0, 0, c.o);
    cr_assert_eq(emb_saver_save(cs, c.s, 5, again, sizeof again), 0, "%s", emb_last_error());
    emb_saver_destroy(&cs);
    cr_assert(saves_as(&b, 5, again), "training on from the chain differs");
    cr_assert(saves_as(&a, 5, again), "training on from the full save differs");
    /* a missing link: EMB_ECORRUPT naming it, nothing changed */
    unlink(paths[2]);
    cr_assert_eq(emb_checkpoint_restore_ex(b.s, paths[4], &rb, NULL), EMB_ECORRUPT);
    cr_assert(strstr(emb_last_error(), "m-2.safetensors"), "%s", emb_last_error());
    cr_assert(saves_as(&b, 5, again), "a failed restore changed the tables");
    emb_saver_destroy(&sv);
    emb_saver_destroy(&fs);
    run_free(&a);
    run_free(&b);
    run_free(&c);
    rmdir_all(dir);
    rmdir_all(ref);
}

Test(delta_kinds, a_delta_holds_only_the_changed_rows)
{
    char dir[64], p0[512], p1[512], p2[512];
    tmpdir(dir);
    Run a;
    run_make(&a);
    for (int k = 0; k < 6; k++)
        run_step(&a, k);
    EmbSaver *sv = saver(dir, "m", 0, 10, a.o);
    cr_assert_eq(emb_saver_save(sv, a.s, 0, p0, sizeof p0), 0, "%s", emb_last_error());
    cr_assert_eq(emb_saver_save(sv, a.s, 1, p1, sizeof p1), 0, "%s", emb_last_error());
    for (int i = 0; i < NTAB; i++) { /* nothing changed: an empty delta */
        cr_assert_eq(tensor_rows(p1, NAME[i], "dynamic.ids"), 0);
        cr_assert_eq(tensor_rows(p1, NAME[i], "delta.gone"), 0);
    }
    const int64_t id = 7 * 1000003; /* one update of one key (twice: admitted in "user") */
    float row[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int rep = 0; rep < 2; rep++) {
        const EmbSparseGrad sg = {.ids = &id, .n = 1, .featuresize = DIM[0], .values = row,
                                  .stride = DIM[0]};
        cr_assert_eq(emb_grad_set_sparse(a.g, a.t[0], &sg), 0);
        cr_assert_eq(emb_update(a.o, a.t[0], a.g, a.ix, 0), 0, "%s", emb_last_error());
    }
    cr_assert_eq(emb_saver_save(sv, a.s, 2, p2, sizeof p2), 0, "%s", emb_last_error());
    cr_assert_eq(tensor_rows(p2, "user", "dynamic.ids"), 1);
    cr_assert_eq(tensor_rows(p2, "item", "dynamic.ids"), 0);
    emb_saver_destroy(&sv);
    run_free(&a);
    rmdir_all(dir);
}

static void (*kill9_make)(Run *); /* the kind of the kill -9 rounds */

static void kill9_train(const char *dir, int round, int ready)
{
    Run a;
    kill9_make(&a);
    EmbSaver *sv = saver(dir, "m", 3, 5, a.o);
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
    kill9_make(&b);
    const EmbRestoreOptions ro = {.optimizer = b.o};
    cr_assert_eq(emb_checkpoint_restore_ex(b.s, latest, &ro, NULL), 0, "round %d: %s", round,
                 emb_last_error());
    cr_assert_geq(kept_restore(dir, b.s, b.o), 1);
    run_free(&b);
}

static void kill9_of(void (*make)(Run *))
{
    char dir[64];
    tmpdir(dir);
    kill9_make = make;
    kill9_rounds(dir, 8, kill9_train, kill9_check);
    rmdir_all(dir);
}

Test(delta_kinds, kill9_during_dynamic_delta_saves_leaves_the_chain_restorable)
{
    kill9_of(run_make);
}

Test(delta_kinds, kill9_during_tiered_delta_saves_leaves_the_chain_restorable)
{
    kill9_of(tier_make);
}

/* Distinct ids of table @i over steps [k0, k1) of tiered runs (run_step's). */
static int64_t tier_distinct(int i, int k0, int k1)
{
    bool seen[TIER_ROWS] = {false};
    int64_t n = 0;
    for (int k = k0; k < k1; k++) {
        uint64_t seed = 1000u * (uint64_t)k + (uint64_t)i + 1;
        for (int j = 0; j < 24; j++) {
            const int64_t id = (int64_t)(tu_rand(&seed) % 60u) * (i + 1);
            n += !seen[id];
            seen[id] = true;
        }
        for (int j = 0; j < 24 * DIM[i]; j++)
            (void)tu_randf(&seed);
    }
    return n;
}

static off_t file_size(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s", path);
    return st.st_size;
}

Test(delta_kinds, tiered_full_and_deltas_of_the_touched_rows_restore_as_a_full_save)
{
    char dir[64], ref[64], paths[4][512], full[512];
    tmpdir(dir);
    tmpdir(ref);
    Run a;
    tier_make(&a);
    run_step(&a, 0);
    EmbSaver *sv = saver(dir, "m", 0, 10, a.o);
    cr_assert_eq(emb_saver_save(sv, a.s, 0, paths[0], sizeof paths[0]), 0, "%s",
                 emb_last_error());
    for (int d = 1; d <= 3; d++) {
        for (int k = 3 * d; k < 3 * d + 3; k++)
            run_step(&a, k);
        cr_assert_eq(emb_saver_save(sv, a.s, d, paths[d], sizeof paths[d]), 0, "%s",
                     emb_last_error());
        for (int i = 0; i < NTAB; i++) /* exactly the rows touched since the last save */
            cr_assert_eq(tensor_rows(paths[d], NAME[i], "delta.ids"),
                         tier_distinct(i, 3 * d, 3 * d + 3), "save %d, %s", d, NAME[i]);
        cr_assert_lt(file_size(paths[d]) * 4, file_size(paths[0]));
    }
    Run b;
    EmbSaver *fs = chain_as_full(&a, ref, 3, full, tier_make, &b, paths[3]);
    for (int k = 20; k < 23; k++) /* and trains on as the original */
        run_step(&a, k), run_step(&b, k);
    char again[512];
    cr_assert_eq(emb_saver_save(fs, a.s, 4, again, sizeof again), 0, "%s", emb_last_error());
    cr_assert(saves_as(&b, 4, again), "training on from the chain differs");
    emb_saver_destroy(&sv);
    emb_saver_destroy(&fs);
    run_free(&a);
    run_free(&b);
    rmdir_all(dir);
    rmdir_all(ref);
}
