/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * internal.h — the core shared by every part of the library: error reporting, logging,
 * checked size arithmetic and the aligned allocator. Private: never installed.
 */
#ifndef EMB_INTERNAL_H
#define EMB_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "embtables/common.h"

#if defined(__GNUC__)
#define EMB_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define EMB_LIKELY(x) __builtin_expect(!!(x), 1)
#define EMB_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define EMB_INLINE static inline __attribute__((always_inline))
#else
#define EMB_PRINTF(a, b)
#define EMB_LIKELY(x) (x)
#define EMB_UNLIKELY(x) (x)
#define EMB_INLINE static inline
#endif

#define EMB_MIN(a, b) ((a) < (b) ? (a) : (b))
#define EMB_MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---- errors (error.c) ---------------------------------------------------------------- */

/* Records this thread's message for @code and returns @code: `return emb__fail(...)`. */
int emb__fail(int code, const char *fmt, ...) EMB_PRINTF(2, 3);
/* Clears this thread's message (called by nothing on success: the message is "last error"). */
void emb__clear_error(void);

#define EMB_CHECK_NULL(p)                                                                  \
    do {                                                                                   \
        if (EMB_UNLIKELY(!(p)))                                                            \
            return emb__fail(EMB_ENULL, "%s: argument '%s' is NULL", __func__, #p);        \
    } while (0)

/* ---- logging (log.c) ----------------------------------------------------------------- */

void emb__log(EmbLogLevel level, const char *fmt, ...) EMB_PRINTF(2, 3);

/* ---- checked arithmetic -------------------------------------------------------------- */

/* a * b into *r; false on overflow (or a negative operand). */
static inline bool emb__mul_ok(int64_t a, int64_t b, int64_t *r)
{
    if (a < 0 || b < 0)
        return false;
    return !__builtin_mul_overflow(a, b, r);
}

/* Whether @n rows of @width elements, @stride elements apart, are addressable: their last
   element's offset (n - 1) x stride + width, in 4-byte elements, fits in int64 (so that no
   index or byte offset of the rows wraps). */
static inline bool emb__rows_fit(int64_t n, int64_t stride, int64_t width)
{
    int64_t span;
    return n <= 0 || (emb__mul_ok(n - 1, stride, &span) && width >= 0 &&
                      span <= INT64_MAX / 4 - width);
}

/* ---- memory (memory.c) --------------------------------------------------------------- */

#define EMB_ALIGN 64

/* Tables up to this size are looked up without software prefetch (about one L2 cache). */
#define EMB_RESIDENT_BYTES ((int64_t)1 << 20)

/* Aligned allocation (alignment a power of two >= sizeof(void *)); NULL on failure. */
void *emb__aligned_alloc(size_t alignment, size_t bytes);
/* emb__aligned_alloc for memory read at random (tables, their optimizer state, a dynamic
 * table's index and slabs): from 2 MiB up, 2 MiB aligned and (Linux) advised as
 * transparent huge pages, so that random rows miss the TLB less. Freed by
 * emb__aligned_free. */
void *emb__big_alloc(size_t alignment, size_t bytes);
#define EMB_HUGE_BYTES ((size_t)2 << 20) /* a transparent huge page */
void emb__aligned_free(void *p);

/*
 * Sorts @n rows key << 32 | value (key < 2^@kb, @kb <= 32) by key, stably, with an LSD
 * radix sort of 11-bit digits at most (two passes up to 22 bits, three up to 32), @b (n
 * rows) as scratch: returns the sorted array, @a or @b (sort.c).
 */
uint64_t *emb__radix_sort(uint64_t *a, uint64_t *b, int64_t n, int kb);
/* The key bits of ids below @n (<= 2^32): the least kb >= 1 with 2^kb >= n. */
int emb__radix_bits(int64_t n);

/*
 * Makes room for one more element in a growing array: when *n == *cap, reallocates *array
 * (a pointer to the array pointer) to twice the capacity (at least 8 elements of @elsize).
 * Returns 0, or EMB_ENOMEM naming @what with the array unchanged.
 */
int emb__grow(void *array, int64_t n, int64_t *cap, size_t elsize, const char *what);

/* ---- cpu features (cpu.c) ------------------------------------------------------------ */

/* Flags the kernels may use now (detected & mask); cheap after the first call. */
unsigned emb__cpu_flags(void);

#endif
