/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_disk.c — the disk's random-read rate for one record size (bench_disk.h): threads
 * of blocking preads at random record offsets, the file's pages dropped first, so that
 * the rate is the disk's (and the kernel's), not the page cache's; and the kernel's cost
 * of a record's pread / pwrite when its page is cached, the floor of a buffered engine.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "bench_disk.h"

void bench_disk_drop_pages(const char *path)
{
    const int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

typedef struct Reader {
    const char *path;
    int64_t header, rows, rec, n, done;
    uint64_t seed;
} Reader;

static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void *reader(void *arg)
{
    Reader *r = arg;
    const int fd = open(r->path, O_RDONLY);
    if (fd >= 0) /* random reads, as the tiered engine advises: no readahead */
        posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    char *buf = malloc((size_t)r->rec);
    uint64_t s = r->seed;
    for (int64_t k = 0; k < r->n && fd >= 0 && buf; k++) {
        const off_t at = (off_t)(r->header + (int64_t)(next(&s) % (uint64_t)r->rows) * r->rec);
        if (pread(fd, buf, (size_t)r->rec, at) != (ssize_t)r->rec)
            break;
        r->done++;
    }
    free(buf);
    if (fd >= 0)
        close(fd);
    return NULL;
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double bench_disk_rate(const char *path, int64_t header, int64_t rows, int64_t rec, int64_t n,
                       int depth)
{
    depth = depth < 1 ? 1 : depth > 64 ? 64 : depth;
    if (rows < 1 || rec < 1 || n < depth)
        return 0;
    bench_disk_drop_pages(path);
    pthread_t th[64];
    Reader rd[64];
    int started = 0;
    const double t0 = seconds();
    for (int i = 0; i < depth; i++) {
        rd[i] = (Reader){path, header, rows, rec, n / depth, 0, 7 + (uint64_t)i * 1000003};
        started += pthread_create(&th[i], NULL, reader, &rd[i]) == 0;
        if (started <= i)
            break;
    }
    int64_t done = 0;
    for (int i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        done += rd[i].done;
    }
    const double dt = seconds() - t0;
    return done > 0 && dt > 0 ? (double)done / dt : 0;
}

void bench_disk_cached_cost(const char *path, int64_t header, int64_t rows, int64_t rec,
                            int64_t n, double *read_s, double *write_s)
{
    *read_s = *write_s = 0;
    const int fd = open(path, O_RDWR);
    char *buf = malloc((size_t)(n * rec));
    int64_t *at = malloc((size_t)n * sizeof *at);
    if (fd < 0 || !buf || !at || rows < 1 || n < 1)
        goto out;
    uint64_t s = 11;
    for (int64_t k = 0; k < n; k++) {
        at[k] = header + (int64_t)(next(&s) % (uint64_t)rows) * rec;
        if (pread(fd, buf + k * rec, (size_t)rec, (off_t)at[k]) != (ssize_t)rec)
            goto out;
    }
    const double t0 = seconds();
    for (int64_t k = 0; k < n; k++)
        if (pread(fd, buf + k * rec, (size_t)rec, (off_t)at[k]) != (ssize_t)rec)
            goto out;
    const double t1 = seconds();
    for (int64_t k = 0; k < n; k++) /* the same bytes back, in the order drawn */
        if (pwrite(fd, buf + k * rec, (size_t)rec, (off_t)at[k]) != (ssize_t)rec)
            goto out;
    const double t2 = seconds();
    *read_s = (t1 - t0) / (double)n, *write_s = (t2 - t1) / (double)n;
out:
    free(at);
    free(buf);
    if (fd >= 0)
        close(fd);
}
