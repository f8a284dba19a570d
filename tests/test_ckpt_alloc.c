/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_ckpt_alloc.c — allocation failures in the saver (audit defect 6): the library's
 * (static) objects are linked with --wrap for the allocator, and the k-th allocation of a
 * call fails, for every k. A call whose allocation failed reports it (EMB_ENOMEM) and
 * changes nothing: emb_saver_create never drops index entries, emb_saver_save leaves the
 * index as it was and no file behind.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "embtables/embtables.h"

#include "alloc_fail.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    char *b = calloc(1, 1 << 16);
    cr_assert_not_null(b);
    size_t n = fread(b, 1, (1 << 16) - 1, f);
    b[n] = '\0';
    fclose(f);
    return b;
}

static int nfiles(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));)
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

Test(saver_alloc, every_failed_allocation_is_reported_and_changes_nothing)
{
    char dir[64], index[128];
    struct stat st;
    strcpy(dir, stat("/dev/shm", &st) == 0 ? "/dev/shm/embtables-alloc-XXXXXX"
                                           : "/tmp/embtables-alloc-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    EmbStore *s = NULL;
    cr_assert_eq(emb_store_create(&s), 0);
    const EmbVariableSpec v = {.name = "t", .ncolumns = 50, .featuresize = 4, .dtype = EMB_F32};
    EmbTable *t;
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_NO, &t), 0);
    /* an index of 40 checkpoints (enough to grow the saver's list several times) */
    const EmbSaverOptions keep_all = {.max_to_keep = 0};
    EmbSaver *sv = NULL;
    cr_assert_eq(emb_saver_create(&sv, dir, "k", &keep_all), 0);
    for (int step = 0; step < 40; step++)
        cr_assert_eq(emb_saver_save(sv, s, step, NULL, 0), 0);
    emb_saver_destroy(&sv);
    snprintf(index, sizeof index, "%s/checkpoint", dir);
    char *before = slurp(index);
    const int files = nfiles(dir);
    int failures = 0;
    for (long k = 0;; k++) {
        fired = 0;
        fail_in = k;
        const int r = emb_saver_create(&sv, dir, "k", &keep_all);
        fail_in = -1;
        if (!fired) {
            cr_assert_eq(r, 0, "%s", emb_last_error());
            break;
        }
        failures++;
        cr_assert_eq(r, EMB_ENOMEM, "allocation %ld failed: %d %s", k, r, emb_last_error());
        cr_assert_null(sv);
    }
    cr_assert_geq(failures, 2);
    for (long k = 0;; k++) {
        fired = 0;
        fail_in = k;
        const int r = emb_saver_save(sv, s, 1000, NULL, 0);
        fail_in = -1;
        if (!fired) {
            cr_assert_eq(r, 0, "%s", emb_last_error());
            break;
        }
        cr_assert_eq(r, EMB_ENOMEM, "allocation %ld failed: %d %s", k, r, emb_last_error());
        char *now = slurp(index);
        cr_assert_str_eq(now, before, "allocation %ld failed: the index changed", k);
        free(now);
        cr_assert_eq(nfiles(dir), files, "allocation %ld failed: a file was left", k);
    }
    /* the saver managed all 40 and the new one: keep-all wrote 41 entries */
    char *after = slurp(index);
    int kept = 0;
    for (const char *p = after; (p = strstr(p, "kept ")); p++)
        kept++;
    cr_assert_eq(kept, 41);
    free(after);
    free(before);
    emb_saver_destroy(&sv);
    emb_store_destroy(&s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
