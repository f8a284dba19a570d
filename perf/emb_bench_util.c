/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_util.c — the small utilities of emb-bench (emb_bench.h), shared with gpu_bench
 * (which builds the same Criteo workload's ids).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_ids.h"
#include "emb_bench.h"

double bench_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int64_t bench_dyn_id(int64_t r)
{
    /* splitmix's finaliser is a bijection of 64 bits; the top 62 are distinct for the
       row counts a benchmark has (< 2^40) with overwhelming probability, and the lookups
       probe the index whatever they are */
    uint64_t z = (uint64_t)r * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (int64_t)((z ^ (z >> 31)) >> 2);
}

uint64_t bench_splitmix(uint64_t *s)
{
    return bench_ids_splitmix(s);
}

double bench_load1(void)
{
    double load = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &load) != 1)
            load = -1;
        fclose(f);
    }
    return load;
}

static int progress_shown;

/* One progress line on stderr, rewritten in place on a terminal. */
void bench_progress(const char *fmt, ...)
{
    static double last;
    const int tty = isatty(2);
    double t = bench_now();
    if (!tty && t - last < 2.0)
        return;
    last = t;
    va_list ap;
    va_start(ap, fmt);
    fputs(tty ? "\r\033[K" : "", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(tty ? "" : "\n", stderr);
    va_end(ap);
    progress_shown = tty;
}

void bench_progress_end(void)
{
    if (progress_shown)
        fputs("\r\033[K", stderr);
    progress_shown = 0;
}
