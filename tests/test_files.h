/* SPDX-License-Identifier: BSD-2-Clause */
/* test_files.h — scratch directories for the Criterion suites that write files
 * (checkpoints, the store's saver, dynamic tables' checkpoints). */
#ifndef EMB_TEST_FILES_H
#define EMB_TEST_FILES_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A fresh directory in @dir (64 bytes): on tmpfs where there is one (syncs cost nothing
   there, and kills act the same), else under /tmp. */
static inline void tmpdir(char *dir)
{
    struct stat st;
    strcpy(dir, stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm/embtables-test-XXXXXX"
                                                                  : "/tmp/embtables-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

/* Removes @dir and everything in it (without a shell: suites call it hundreds of times). */
static inline void rmdir_all(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        cr_assert_eq(lstat(path, &st), 0, "%s", path);
        if (S_ISDIR(st.st_mode))
            rmdir_all(path);
        else
            cr_assert_eq(unlink(path), 0, "%s", path);
    }
    closedir(d);
    cr_assert_eq(rmdir(dir), 0, "%s", dir);
}

#endif
