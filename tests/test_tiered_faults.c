/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tiered_faults.c — a tiered table's backing file under misuse and faults: a file cut
 * by someone else (save, flush), a full disk (initialize), a failed sync, a second user of
 * the file (tables, processes, a collection's specs), failed creates (a collection's, a
 * file that cannot be sized) that must leave the existing file as it was, a symlink
 * planted where a restore stages its copy, a FIFO, and a cache larger than the table.
 * Each fails with an EMB_E* code and a message naming the file, and changes nothing.
 * Internal (the static library) for tier_fault.h's hook.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "embtables/collection.h"
#include "embtables/store.h"
#include "embtables/tiered.h"
#include "embtables/update.h"
#include "tables/tiered/tier.h" /* EMB_TIER_HEADER */
#include "tier_fault.h"

enum { R = 40000, D = 16 }; /* 2.5 MiB: a whole-file pass takes 3 chunks of 1 MiB */

static void path_of(char *path, const char *name)
{
    snprintf(path, 128, "%s/%s", dir, name);
}

/* A tiered table of R rows of D floats at @path, every element @v, flushed. */
static EmbTable *make(const char *path, float v)
{
    EmbTable *t = NULL;
    const EmbTieredOptions o = {.cache_bytes = 64 * (D * 4 + 16)};
    cr_assert_eq(emb_table_tiered_create(&t, path, R, D, EMB_F32, &o), 0, "%s",
                 emb_last_error());
    const EmbInitializer in = {EMB_INIT_CONSTANT, v, 0, 0};
    cr_assert_eq(emb_table_initialize(t, &in), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_tiered_flush(t), 0, "%s", emb_last_error());
    return t;
}

/* Every element of @t is @v. */
static void all_equal(const EmbTable *t, float v, const char *what)
{
    const int64_t n = emb_table_ncolumns(t);
    float *rows = malloc((size_t)n * D * sizeof *rows);
    cr_assert_eq(emb_table_read(t, rows, D), 0, "%s", emb_last_error());
    for (int64_t k = 0; k < n * D; k++)
        cr_assert_eq(rows[k], v, "%s: element %lld is %g, not %g", what, (long long)k,
                     (double)rows[k], (double)v);
    free(rows);
}

static void error_names(const char *s)
{
    cr_assert(strstr(emb_last_error(), s), "the message names %s: %s", s, emb_last_error());
}

/* Saves @t as "t" into a checkpoint in @sub (path into @ck): the code of the save. */
static int save(EmbTable *t, const char *sub, char *ck)
{
    char d[128];
    path_of(d, sub);
    mkdir(d, 0755);
    EmbCheckpointVar var = {"t", t};
    const EmbSaverOptions so = {.var_list = &var, .nvars = 1};
    EmbSaver *sv = NULL;
    cr_assert_eq(emb_saver_create(&sv, d, "ck", &so), 0, "%s", emb_last_error());
    const int r = emb_saver_save(sv, NULL, 1, ck, 256);
    emb_saver_destroy(&sv);
    return r;
}

/* A file cut by someone else fails the save with EMB_EIO naming it (it was a SIGBUS), and
   so does a read that fails while the save streams the rows. */
Test(tiered_faults, a_save_of_a_cut_file_fails_with_eio, .init = setup, .fini = teardown)
{
    char path[128], ck[256];
    path_of(path, "cut");
    EmbTable *t = make(path, 1.0f);
    cr_assert_eq(truncate(path, EMB_TIER_HEADER + 1000 * (D * 4)), 0); /* another process */
    cr_assert_eq(save(t, "a", ck), EMB_EIO);
    error_names(path);
    error_names("is short (");
    emb_table_destroy(&t);

    t = make(path, 2.0f);
    fault_set(-EIO, 0, 1, 20000); /* the rows from 20000 on cannot be read */
    cr_assert_eq(save(t, "b", ck), EMB_EIO);
    error_names(path);
    error_names("reading rows 32768..39999");
    fault_set(0, 1, 1, 0);
    cr_assert_eq(save(t, "c", ck), 0, "%s", emb_last_error());
    emb_table_destroy(&t);
}

/* An initialize that cannot write its rows (a full disk from row 1000 on) fails with
   EMB_EIO naming the rows (its third chunk's) and changes nothing, in the file or the
   cache. */
Test(tiered_faults, initialize_on_a_full_disk_changes_nothing, .init = setup,
     .fini = teardown)
{
    char path[128];
    path_of(path, "full");
    EmbTable *t = make(path, 1.0f);
    const EmbInitializer two = {EMB_INIT_CONSTANT, 2.0f, 0, 0};
    fault_set(-ENOSPC, 1, 0, 20000);
    cr_assert_eq(emb_table_initialize(t, &two), EMB_EIO);
    error_names(path);
    error_names("writing rows 32768..39999");
    cr_assert(!strstr(emb_last_error(), "rows 0..0"), "%s", emb_last_error());
    fault_set(0, 1, 1, 0);
    all_equal(t, 1.0f, "after a failed initialize");
    emb_table_destroy(&t);
    EmbTable *re = NULL;
    cr_assert_eq(emb_table_tiered_open(&re, path, NULL), 0, "%s", emb_last_error());
    all_equal(re, 1.0f, "the file after a failed initialize");
    cr_assert_eq(emb_table_initialize(re, &two), 0, "%s", emb_last_error());
    all_equal(re, 2.0f, "after an initialize");
    emb_table_destroy(&re);
}

/* A collection whose create fails after its tiered table was made leaves the file at that
   path as it was (it was re-created, zeroed); one that succeeds replaces it. */
Test(tiered_faults, a_failed_collection_create_keeps_the_existing_file, .init = setup,
     .fini = teardown)
{
    char path[128];
    path_of(path, "coll");
    EmbTable *t = make(path, 3.0f);
    emb_table_destroy(&t);
    EmbTieredSpec ts = {path, {.cache_bytes = 1 << 16}};
    EmbCollectionTable ct[2] = {
        {.name = "a", .pooling = EMB_POOLING_SUM,
         .spec = {.ncolumns = R, .featuresize = D, .dtype = EMB_F32,
                  .init = {EMB_INIT_CONSTANT, 5.0f, 0, 0}, .tiered = &ts}},
        {.name = "b", .pooling = EMB_POOLING_SUM,
         .spec = {.ncolumns = 10, .featuresize = 0, .dtype = EMB_F32}}, /* fails */
    };
    EmbCollection *c = NULL;
    cr_assert_lt(emb_collection_create(&c, ct, 2, NULL), 0);
    cr_assert_null(c);
    cr_assert_eq(emb_table_tiered_open(&t, path, NULL), 0, "%s", emb_last_error());
    all_equal(t, 3.0f, "the file after a failed collection create");
    emb_table_destroy(&t);
    cr_assert_eq(emb_collection_create(&c, ct, 1, NULL), 0, "%s", emb_last_error());
    all_equal(emb_collection_table(c, 0), 5.0f, "the collection's table");
    emb_collection_destroy(&c);
    cr_assert_eq(emb_table_tiered_open(&t, path, NULL), 0, "%s", emb_last_error());
    all_equal(t, 5.0f, "the file after a collection create");
    emb_table_destroy(&t);
}

/* One table a file: a second open or create of the path, in this process or another, or a
   collection with two tiered specs on one path, gets EMB_EBUSY naming it. */
Test(tiered_faults, a_file_has_one_user, .init = setup, .fini = teardown)
{
    char path[128];
    path_of(path, "one");
    EmbTable *t = make(path, 4.0f), *u = NULL;
    cr_assert_eq(emb_table_tiered_open(&u, path, NULL), EMB_EBUSY);
    error_names(path);
    cr_assert_eq(emb_table_tiered_create(&u, path, 10, D, EMB_F32, NULL), EMB_EBUSY);
    error_names(path);
    cr_assert_null(u);
    const pid_t pid = fork();
    if (pid == 0) { /* another process */
        const int r = emb_table_tiered_open(&u, path, NULL);
        _exit(r == EMB_EBUSY && strstr(emb_last_error(), path) ? 0 : 1);
    }
    int status = -1;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the other process opened it");
    all_equal(t, 4.0f, "the first table");
    emb_table_destroy(&t);
    cr_assert_eq(emb_table_tiered_open(&u, path, NULL), 0, "%s", emb_last_error());
    emb_table_destroy(&u);

    char p2[128];
    path_of(p2, "two");
    EmbTieredSpec ts = {p2, {.cache_bytes = 1 << 16}};
    const EmbVariableSpec spec = {.ncolumns = 10, .featuresize = D, .dtype = EMB_F32,
                                  .tiered = &ts};
    EmbCollectionTable ct[2] = {{.name = "a", .pooling = EMB_POOLING_SUM, .spec = spec},
                                {.name = "b", .pooling = EMB_POOLING_SUM, .spec = spec}};
    EmbCollection *c = NULL;
    cr_assert_eq(emb_collection_create(&c, ct, 2, NULL), EMB_EBUSY);
    error_names(p2);
    cr_assert_eq(access(p2, F_OK), -1, "the failed collection left %s", p2);
}

/* A restore stages its copy under a new name: a symlink planted at the old fixed name
   `<path>.restore` is not followed (its target was overwritten) and the table's path
   stays a regular file. */
Test(tiered_faults, a_restore_does_not_follow_a_symlink, .init = setup, .fini = teardown)
{
    char path[128], ck[256], link[160], victim[128];
    path_of(path, "r");
    path_of(victim, "victim");
    snprintf(link, sizeof link, "%s.restore", path);
    FILE *f = fopen(victim, "w");
    cr_assert_not_null(f);
    fputs("keep", f);
    fclose(f);
    cr_assert_eq(symlink(victim, link), 0);
    EmbTable *t = make(path, 6.0f);
    cr_assert_eq(save(t, "ck", ck), 0, "%s", emb_last_error());
    const EmbInitializer seven = {EMB_INIT_CONSTANT, 7.0f, 0, 0};
    cr_assert_eq(emb_table_initialize(t, &seven), 0, "%s", emb_last_error());
    EmbCheckpointVar var = {"t", t};
    const EmbRestoreOptions ro = {.var_list = &var, .nvars = 1};
    cr_assert_eq(emb_checkpoint_restore_ex(NULL, ck, &ro, NULL), 0, "%s", emb_last_error());
    all_equal(t, 6.0f, "after the restore");
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISREG(st.st_mode), "the table's path became a link");
    cr_assert_eq(stat(victim, &st), 0);
    cr_assert_eq(st.st_size, 4, "the link's target was overwritten");
    emb_table_destroy(&t);
}

/* Dirties row @id of @t (every element @v). */
static void dirty(EmbTable *t, int64_t id, float v)
{
    float row[D];
    for (int i = 0; i < D; i++)
        row[i] = v;
    cr_assert_eq(emb_table_scatter_update(t, &id, 1, row, D), 0, "%s", emb_last_error());
}

/* The file cut under a dirty row: the flush, and an update that evicts the row, fail with
   EMB_EIO naming the file (the flush wrote the row past the end, leaving a hole of rows
   that read 0). */
Test(tiered_faults, a_flush_into_a_cut_file_fails, .init = setup, .fini = teardown)
{
    char path[128];
    path_of(path, "hole");
    EmbTable *t = make(path, 1.0f);
    dirty(t, R - 1, 8.0f);
    cr_assert_eq(truncate(path, EMB_TIER_HEADER + 100 * (D * 4)), 0);
    cr_assert_eq(emb_table_tiered_flush(t), EMB_EIO);
    error_names(path);
    error_names("is short (");
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_size, EMB_TIER_HEADER + 100 * (D * 4), "the flush wrote past the end");
    /* nor does the eviction of the dirty row by an update of 100 others */
    int64_t ids[100];
    float rows[100 * D] = {0};
    for (int k = 0; k < 100; k++)
        ids[k] = k;
    cr_assert_eq(emb_table_scatter_update(t, ids, 100, rows, D), EMB_EIO);
    error_names("is short (");
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_size, EMB_TIER_HEADER + 100 * (D * 4), "a write-back past the end");
    emb_table_destroy(&t);
}

/* A failed sync leaves the rows dirty: the retried flush writes them again. */
Test(tiered_faults, a_failed_sync_leaves_rows_dirty, .init = setup, .fini = teardown)
{
    char path[128];
    path_of(path, "sync");
    EmbTable *t = make(path, 1.0f);
    dirty(t, 5, 9.0f);
    EmbTieredStats st;
    fault_sync_set(-EIO); /* only the sync fails */
    cr_assert_eq(emb_table_tiered_flush(t), EMB_EIO);
    error_names("syncing");
    error_names(path);
    fault_set(0, 1, 1, 0);
    cr_assert_eq(emb_table_tiered_stats(t, &st), 0);
    cr_assert_eq(st.dirty_rows, 1);
    const int64_t written = st.rows_written;
    cr_assert_eq(emb_table_tiered_flush(t), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_tiered_stats(t, &st), 0);
    cr_assert_eq(st.dirty_rows, 0);
    cr_assert_eq(st.rows_written, written + 1, "the retry wrote nothing");
    emb_table_destroy(&t);
}

/* A FIFO (or any file that is not regular) is refused at once: the open hung. */
Test(tiered_faults, a_fifo_is_refused, .init = setup, .fini = teardown, .timeout = 20)
{
    char path[128];
    path_of(path, "fifo");
    cr_assert_eq(mkfifo(path, 0644), 0);
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_tiered_open(&t, path, NULL), EMB_EINVAL);
    error_names(path);
    error_names("not a regular file");
    cr_assert_eq(emb_table_tiered_create(&t, path, 10, D, EMB_F32, NULL), EMB_EINVAL);
    error_names("not a regular file");
    cr_assert_null(t);
}

/* A create that fails once it has the path (the file cannot be sized: RLIMIT_FSIZE)
   leaves the existing file as it was and no file of its own; its message is the first
   error's (a cleanup flush of /dev/full overwrote it). */
Test(tiered_faults, a_failed_create_leaves_the_existing_file, .init = setup,
     .fini = teardown)
{
    char path[128];
    path_of(path, "precious");
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("precious", f);
    fclose(f);
    /* the limit is the process's: restored before any assertion, as the suites may share
       one process (tests/nofork/ under ThreadSanitizer) */
    struct rlimit old;
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*old_xfsz)(int) = signal(SIGXFSZ, SIG_IGN);
    const struct rlimit lim = {1 << 16, old.rlim_max};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    EmbTable *t = NULL;
    const int rc = emb_table_tiered_create(&t, path, 100000, D, EMB_F32, NULL);
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_xfsz);
    cr_assert_eq(rc, EMB_EIO);
    error_names("cannot size");
    cr_assert_null(t);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_size, 8, "the existing file was changed");
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    cr_assert_eq(n, 1, "the failed create left a file");

    cr_assert_eq(emb_table_tiered_create(&t, "/dev/full", 10, D, EMB_F32, NULL), EMB_EINVAL);
    error_names("/dev/full");
    cr_assert(!strstr(emb_last_error(), "syncing"), "%s", emb_last_error());
}

/* The cache holds no more rows than the table: 1 GiB asked for 1000 rows. */
Test(tiered_faults, the_cache_is_capped_at_the_table, .init = setup, .fini = teardown)
{
    char path[128];
    path_of(path, "cap");
    EmbTable *t = NULL;
    const EmbTieredOptions o = {.cache_bytes = (int64_t)1 << 30};
    cr_assert_eq(emb_table_tiered_create(&t, path, 1000, D, EMB_F32, &o), 0, "%s",
                 emb_last_error());
    EmbTieredStats st;
    cr_assert_eq(emb_table_tiered_stats(t, &st), 0);
    cr_assert_leq(st.cache_rows, 1000);
    cr_assert_geq(st.cache_rows, 1000 - 8, "the cache does not hold the table");
    emb_table_destroy(&t);
}
