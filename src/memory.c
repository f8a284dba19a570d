/* SPDX-License-Identifier: BSD-2-Clause */
/* memory.c — the one aligned allocator of the library. */
#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

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

/* Without the advice, under THP's "madvise" mode (Debian's default) a table of 4M rows of
 * 256 B is 262144 pages of 4 KiB: each random row (and its optimizer state) a TLB miss
 * and a page walk; with it, 512 pages of 2 MiB. */
void *emb__big_alloc(size_t alignment, size_t bytes)
{
    if (bytes < EMB_HUGE_BYTES)
        return emb__aligned_alloc(alignment, bytes);
    void *p = emb__aligned_alloc(EMB_MAX(alignment, EMB_HUGE_BYTES), bytes);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p)
        madvise(p, bytes / EMB_HUGE_BYTES * EMB_HUGE_BYTES, MADV_HUGEPAGE); /* advice only */
#endif
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
