/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_disk.h — the disk's own random-read rate, as emb-bench tier and emb-bench (tiered
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

/* The kernel's cost of one record's pread and pwrite when its page is in the page cache
   (the floor of any buffered-I/O engine: a tiered step's I/O roof is its reads and writes
   at these costs): @n random records of @path read once (their pages cached), then timed
   read again and written back with the bytes just read (the file is unchanged), on one
   thread. Seconds per pread / pwrite through @read_s / @write_s (0 when the file cannot be
   opened). Call it with no write of the file in flight. */
void bench_disk_cached_cost(const char *path, int64_t header, int64_t rows, int64_t rec,
                            int64_t n, double *read_s, double *write_s);

#endif
