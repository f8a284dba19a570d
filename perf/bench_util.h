/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_util.h — the small helpers emb-bench's subcommands (emb_bench_coll.c, emb_bench_dyn.c)
 * share: a monotonic clock, a 64-bit mixer for reproducible ids, and the double compare
 * for qsort that their medians use.
 */
#ifndef EMB_PERF_BENCH_UTIL_H
#define EMB_PERF_BENCH_UTIL_H

#include <stdint.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* splitmix64's output function of z + the golden-ratio increment. */
static inline uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* qsort's comparison of two doubles, ascending. */
static inline int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
