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
