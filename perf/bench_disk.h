/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_disk.h — the disk's own random-read rate, as tier-bench and emb-bench (tiered
 * tables) measure it in the same run as the tables they time: random reads of one record
 * size from the tiered table's own file, its pages dropped from the page cache first.
 */
#ifndef EMB_PERF_BENCH_DISK_H
#define EMB_PERF_BENCH_DISK_H

#include <stdint.h>

/* Writes the file's dirty pages and drops its pages from the page cache (the next reads
   come from the disk). Best effort: a file that cannot be opened is left alone. */
void bench_disk_drop_pages(const char *path);

/* The disk's random-read rate for @rec-byte records of @path (record r at offset
   @header + r x @rec, r < @rows): @n preads at random records from @depth threads (the
   queue depth, <= 64), after the file's pages were dropped; reads per second (0 when the
   file cannot be read). */
double bench_disk_rate(const char *path, int64_t header, int64_t rows, int64_t rec, int64_t n,
                       int depth);

#endif
