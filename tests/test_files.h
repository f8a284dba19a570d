/* SPDX-License-Identifier: BSD-2-Clause */
/* test_files.h — scratch directories for the Criterion suites that write files
 * (checkpoints, the store's saver, dynamic tables' checkpoints). */
#ifndef EMB_TEST_FILES_H
#define EMB_TEST_FILES_H

#include <criterion/criterion.h>
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

/* Removes @dir and everything in it. */
static inline void rmdir_all(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

#endif
