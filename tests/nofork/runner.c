/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * runner.c — main() of the no-fork test runner (see criterion/criterion.h): runs the
 * registered tests in name order in this process. Options: --filter SUITE/NAME (a glob),
 * --list; Criterion's other options (--jobs N, ...) are accepted and ignored.
 */
#include <fnmatch.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "criterion/criterion.h"

#define MAX_TESTS 1024

static NoforkTest *tests[MAX_TESTS];
static int ntests;
static jmp_buf env;
static int skipped;

void nofork_register(NoforkTest *t)
{
    if (ntests == MAX_TESTS) {
        fprintf(stderr, "nofork: more than %d tests\n", MAX_TESTS);
        abort();
    }
    tests[ntests++] = t;
}

void nofork_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
    fprintf(stderr, "%s:%d: assertion failed: %s", file, line, expr);
    if (fmt[0]) {
        va_list ap;
        va_start(ap, fmt);
        fputs(": ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    longjmp(env, 1);
}

void nofork_skip(const char *fmt, ...)
{
    (void)fmt;
    skipped = 1;
    longjmp(env, 2);
}

static int by_name(const void *a, const void *b)
{
    const NoforkTest *x = *(NoforkTest *const *)a, *y = *(NoforkTest *const *)b;
    const int c = strcmp(x->suite, y->suite);
    return c ? c : strcmp(x->name, y->name);
}

int main(int argc, char **argv)
{
    const char *filter = NULL;
    int list = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--filter") && i + 1 < argc)
            filter = argv[++i];
        else if (!strncmp(argv[i], "--filter=", 9))
            filter = argv[i] + 9;
        else if (!strcmp(argv[i], "--list") || !strcmp(argv[i], "-l"))
            list = 1;
        else if (!strcmp(argv[i], "--jobs") || !strcmp(argv[i], "-j"))
            i++;
    }
    qsort(tests, (size_t)ntests, sizeof *tests, by_name);
    int failed = 0, ran = 0, nskipped = 0;
    for (int i = 0; i < ntests; i++) {
        NoforkTest *t = tests[i];
        char full[256];
        snprintf(full, sizeof full, "%s/%s", t->suite, t->name);
        if (t->disabled || (filter && fnmatch(filter, full, 0) != 0))
            continue;
        if (list) {
            printf("%s\n", full);
            continue;
        }
        skipped = 0;
        ran++;
        const int r = setjmp(env);
        if (r == 0) {
            if (t->init)
                t->init();
            t->fn();
        }
        if (t->fini)
            t->fini();
        if (r == 1)
            failed++;
        nskipped += skipped;
        printf("[%s] %s\n", r == 1 ? "FAIL" : skipped ? "SKIP" : "PASS", full);
    }
    if (!list)
        printf("Synthesis: Tested: %d | Passing: %d | Failing: %d | Skipped: %d\n", ran,
               ran - failed - nskipped, failed, nskipped);
    return failed ? 1 : 0;
}
