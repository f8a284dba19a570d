/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_kill9.h — kill -9 during checkpoint saves (test_delta.c, test_delta_kinds.c):
 * rounds of a child that trains and saves into a directory forever, killed at a random
 * moment once it saved twice, then the parent's check of what the directory holds; and
 * kept_restore, which that check and the max_to_keep tests use.
 */
#ifndef TEST_KILL9_H
#define TEST_KILL9_H

#include <criterion/criterion.h>
#include <embtables/embtables.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

/* @rounds rounds: a child runs @train(dir, round, fd) (it writes one byte to fd once it
   saved twice, never returns), is killed with SIGKILL 0 to 3 ms later, then @check(dir,
   round) runs in the parent. */
static inline void kill9_rounds(const char *dir, int rounds,
                                void (*train)(const char *dir, int round, int ready),
                                void (*check)(const char *dir, int round))
{
    uint64_t seed = 5;
    for (int round = 0; round < rounds; round++) {
        int ready[2];
        cr_assert_eq(pipe(ready), 0);
        const pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            close(ready[0]);
            train(dir, round, ready[1]);
            _exit(4);
        }
        close(ready[1]);
        char byte;
        cr_assert_eq(read(ready[0], &byte, 1), 1);
        close(ready[0]);
        usleep((useconds_t)(tu_rand(&seed) % 3000));
        kill(pid, SIGKILL);
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFSIGNALED(status));
        check(dir, round);
    }
}

/* Every checkpoint the index of @dir keeps restores into the store @s (optimizer @o): their
   count. */
static inline int kept_restore(const char *dir, EmbStore *s, EmbOptimizer *o)
{
    char ipath[600], line[600], name[300], path[1000];
    snprintf(ipath, sizeof ipath, "%s/checkpoint", dir);
    FILE *f = fopen(ipath, "r");
    cr_assert_not_null(f);
    const EmbRestoreOptions ro = {.optimizer = o};
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "kept %299s", name) == 1) {
            snprintf(path, sizeof path, "%s/%s", dir, name);
            cr_assert_eq(emb_checkpoint_restore_ex(s, path, &ro, NULL), 0, "%s: %s", name,
                         emb_last_error());
            n++;
        }
    fclose(f);
    return n;
}

#endif
