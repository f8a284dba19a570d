/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * alloc_fail.h — the allocation-failure hook of the tests linked with the library's static
 * objects and -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc (and --wrap=posix_memalign
 * where ALLOC_FAIL_MEMALIGN is defined before including): with fail_in = k >= 0 the k-th
 * allocation from then on fails (once; fail_in is -1 again and fired 1). Include once.
 */
#ifndef EMB_TEST_ALLOC_FAIL_H
#define EMB_TEST_ALLOC_FAIL_H

#include <errno.h>
#include <stddef.h>

static long fail_in = -1; /* allocations until the failing one; -1: none */
static int fired;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t s);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t s);
void *__wrap_realloc(void *p, size_t n);

static int fail_now(void)
{
    if (fail_in < 0)
        return 0;
    if (fail_in-- > 0)
        return 0;
    fired = 1;
    return 1;
}

void *__wrap_malloc(size_t n)
{
    return fail_now() ? NULL : __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t s)
{
    return fail_now() ? NULL : __real_calloc(n, s);
}
void *__wrap_realloc(void *p, size_t n)
{
    return fail_now() ? NULL : __real_realloc(p, n);
}

#ifdef ALLOC_FAIL_MEMALIGN
int __real_posix_memalign(void **p, size_t a, size_t n);
int __wrap_posix_memalign(void **p, size_t a, size_t n);
int __wrap_posix_memalign(void **p, size_t a, size_t n)
{
    return fail_now() ? ENOMEM : __real_posix_memalign(p, a, n);
}
#endif

#endif
