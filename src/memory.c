/* SPDX-License-Identifier: BSD-2-Clause */
/* memory.c — the one aligned allocator of the library. */
#include <stdlib.h>

#include "internal.h"

void *emb__aligned_alloc(size_t alignment, size_t bytes)
{
    void *p = NULL;
    if (bytes == 0)
        bytes = alignment;
    if (posix_memalign(&p, alignment, bytes) != 0)
        return NULL;
    return p;
}

void emb__aligned_free(void *p)
{
    free(p);
}

int emb__grow(void *array, int64_t n, int64_t *cap, size_t elsize, const char *what)
{
    if (n < *cap)
        return 0;
    void **p = (void **)array;
    const int64_t c = *cap ? 2 * *cap : 8;
    void *q = realloc(*p, (size_t)c * elsize);
    if (!q)
        return emb__fail(EMB_ENOMEM, "out of memory for %s", what);
    *p = q;
    *cap = c;
    return 0;
}
