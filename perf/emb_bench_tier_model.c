/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_tier_model.c — emb-bench tier's yardsticks for a cache policy and the model of
 * a tiered step:
 * - the ideal frequency cache: a static cache of the C hottest rows, either of the
 *   distribution (Zipf ranks 0..C-1, where bench_ids.c scatters them) or of the run (the
 *   rows the timed steps look up most, which knows the future). Its misses a step are the
 *   distinct ids of each batch outside that set: what no policy of C rows can beat on
 *   i.i.d. ids, save by luck;
 * - the model of a step, printed beside the measured ratio:
 *   1 + (bookkeeping + reads x read cost + (writes + moves) x append cost) / W, W the
 *   in-memory step, the read cost a record's pread with its page cached
 *   (bench_disk_cached_cost), the append cost a record's share of a batched append as the
 *   log writes (bench_tier_append_cost), moves the records compaction rewrote, the
 *   bookkeeping the step of a cache holding every row minus W and its own few reads.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emb_bench_tier_model.h"

#define RANK_MULT 2147483647u /* bench_ids.c's scatter of ranks over rows */
#define APPEND_SPAN (64 << 20) /* bytes the appends cycle over */
#define APPEND_PASSES 4        /* timed passes over it, after one that sizes the file */

static double secs(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double bench_tier_append_cost(const char *dir, int64_t rec, int64_t batch)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/emb-bench-append-%d", dir, (int)getpid());
    const int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    const int64_t len = batch * rec, per = APPEND_SPAN / (len > 0 ? len : 1);
    char *buf = len > 0 ? malloc((size_t)len) : NULL;
    double cost = 0;
    if (fd >= 0 && buf && per > 0) {
        memset(buf, 0x5a, (size_t)len);
        double t0 = 0;
        int64_t k = 0;
        for (int pass = 0; pass <= APPEND_PASSES; pass++) {
            if (pass == 1)
                t0 = secs();
            for (k = 0; k < per; k++)
                if (pwrite(fd, buf, (size_t)len, (off_t)(k * len)) != (ssize_t)len)
                    goto out;
        }
        cost = (secs() - t0) / (double)(APPEND_PASSES * per * batch);
    }
out:
    free(buf);
    if (fd >= 0)
        close(fd), unlink(path);
    return cost;
}

uint8_t *bench_tier_hot_ranks(int64_t rows, int64_t c, uint64_t shift)
{
    uint8_t *hot = calloc((size_t)rows, 1);
    for (int64_t k = 0; hot && k < c && k < rows; k++)
        hot[((uint64_t)k * RANK_MULT + shift) % (uint64_t)rows] = 1;
    return hot;
}

static int cmp_desc(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x < y) - (x > y);
}

uint8_t *bench_tier_hot_run(const int64_t *ids, int64_t n, int64_t rows, int64_t c)
{
    int32_t *count = calloc((size_t)rows, sizeof *count), *sorted = NULL;
    uint8_t *hot = calloc((size_t)rows, 1);
    if (count && hot && (sorted = malloc((size_t)rows * sizeof *sorted))) {
        for (int64_t k = 0; k < n; k++)
            count[ids[k]]++;
        memcpy(sorted, count, (size_t)rows * sizeof *sorted);
        qsort(sorted, (size_t)rows, sizeof *sorted, cmp_desc);
        const int32_t t = c < rows ? sorted[c - 1] : 0; /* the C-th highest count */
        int64_t in = 0;
        for (int64_t r = 0; r < rows; r++) /* above it, then at it in row order */
            in += hot[r] = count[r] > t;
        for (int64_t r = 0; r < rows && in < c; r++)
            if (!hot[r] && count[r] == t)
                hot[r] = 1, in++;
    } else {
        free(hot);
        hot = NULL;
    }
    free(count);
    free(sorted);
    return hot;
}

double bench_tier_ideal_misses(const int64_t *ids, int64_t nsteps, int64_t nnz, int64_t rows,
                               const uint8_t *hot, double *distinct)
{
    int32_t *seen = calloc((size_t)rows, sizeof *seen);
    double miss = 0, nd = 0;
    for (int64_t s = 0; seen && s < nsteps; s++)
        for (int64_t k = s * nnz; k < (s + 1) * nnz; k++) {
            const int64_t r = ids[k];
            if (seen[r] == (int32_t)(s + 1))
                continue;
            seen[r] = (int32_t)(s + 1);
            nd++;
            miss += !hot[r];
        }
    free(seen);
    if (distinct)
        *distinct = nsteps ? nd / (double)nsteps : 0;
    return nsteps ? miss / (double)nsteps : 0;
}

void bench_tier_model_print(const BenchTierModel *m)
{
    const double rd_ms = 1e3 * m->reads * m->read_s;
    const double wr_ms = 1e3 * (m->writes + m->moved) * m->write_s;
    const double model_ms = m->mem_ms + m->bookkeeping_ms + rd_ms + wr_ms;
    printf("%-22s model: %.0f distinct ids, %.0f misses (rows read; %.2fx the ideal cache of "
           "the run's hottest rows, %.0f; %.2fx the distribution's, %.0f), %.0f write-backs and "
           "%.0f compaction moves a step; a record's read %.2f us, append %.2f us; bookkeeping "
           "%.3f ms; in-memory step W %.3f ms: step W + %.3f + %.3f reads + %.3f appends = "
           "%.3f ms, measured %.3f ms (model %.2f of it); 1 + (...) / W = %.2fx, measured "
           "%.2fx\n", "", m->distinct, m->reads,
           m->ideal_run > 0 ? m->reads / m->ideal_run : 0, m->ideal_run,
           m->ideal_dist > 0 ? m->reads / m->ideal_dist : 0, m->ideal_dist, m->writes, m->moved,
           1e6 * m->read_s, 1e6 * m->write_s, m->bookkeeping_ms, m->mem_ms, m->bookkeeping_ms,
           rd_ms, wr_ms, model_ms, m->step_ms, model_ms / m->step_ms, model_ms / m->mem_ms,
           m->step_ms / m->mem_ms);
}
