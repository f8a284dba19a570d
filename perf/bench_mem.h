/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_mem.h — the process's memory as a benchmark reports it beside a run that must fit a
 * budget (emb-bench tier --interval): its resident set (VmRSS), and, when it runs in a
 * memory cgroup (v2 memory.stat, or v1's), the group's anonymous memory and page cache, the
 * page cache being charged to the group too (a file twice the limit cannot stay cached);
 * and the bytes it read from storage (the disk's reads, not the page cache's).
 */
#ifndef EMB_PERF_BENCH_MEM_H
#define EMB_PERF_BENCH_MEM_H

#include <stdint.h>

typedef struct BenchMem {
    int64_t rss;          /* VmRSS, bytes (-1: unknown) */
    int64_t anon, file;   /* the cgroup's anonymous memory and page cache (-1: no group) */
    int64_t limit;        /* the cgroup's limit (-1: none or unknown) */
    int64_t disk_read;    /* bytes the process caused to be read from storage so far
                             (/proc/self/io read_bytes: page cache hits excluded; -1) */
} BenchMem;

/* The figures now. */
BenchMem bench_mem_now(void);

#endif
