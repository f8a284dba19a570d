/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_criteo.c — bytes -> a Criteo TSV file read by examples/criteo.c: every line parsed
 * alone, then the whole file through the threaded reader. Every line is counted once
 * (good or bad), the reader keeps exactly the lines that parse alone, and every good
 * sample has a 0/1 label, finite non-negative dense values and indices inside their tables.
 * The first byte sets the options; with its bit 6 the 26 table sizes are any int64 read
 * next (a size <= 0: every parse and the open refuse with -EINVAL, writing nothing), and
 * with its bit 7 each line is also parsed as a NULL pointer of its length (refused unless
 * the length is 0).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "criteo.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_sample(float label, const float *dense, const int64_t *cat,
                         int64_t cat_stride, const int64_t *sizes)
{
    FUZZ_ASSERT(label == 0.0f || label == 1.0f);
    for (int k = 0; k < CRITEO_NDENSE; k++)
        FUZZ_ASSERT(isfinite(dense[k]) && dense[k] >= 0.0f);
    for (int t = 0; t < CRITEO_NCAT; t++)
        FUZZ_ASSERT(cat[t * cat_stride] >= 0 && cat[t * cat_stride] < sizes[t]);
}

/* Parses a line into outputs poisoned first; with a size <= 0 the parse must refuse the
   argument (-EINVAL) and leave them as they were. */
static int parse_poisoned(const char *line, size_t len, const CriteoOptions *o, float *label,
                          float *dense, int64_t *cat, int sizes_ok)
{
    char why[80];
    *label = -1.0f;
    for (int k = 0; k < CRITEO_NDENSE; k++)
        dense[k] = -1.0f;
    for (int t = 0; t < CRITEO_NCAT; t++)
        cat[t] = -1;
    const int r = criteo_parse_line(line, (int64_t)len, o->sizes, o->flags, label, dense, cat, 1,
                                    why, sizeof why);
    if (!sizes_ok) {
        FUZZ_ASSERT(r == -EINVAL && strstr(why, "sizes[") && *label == -1.0f &&
                    dense[0] == -1.0f && cat[0] == -1);
    } else {
        FUZZ_ASSERT(r == 0 || r == -1);
    }
    return r;
}

/* A NULL line of @p len bytes: refused (naming line) unless len is 0, a bad line then. */
static int parse_null(size_t len, const CriteoOptions *o, int sizes_ok)
{
    float label, dense[CRITEO_NDENSE];
    int64_t cat[CRITEO_NCAT];
    char why[80] = "";
    const int r = criteo_parse_line(NULL, (int64_t)len, o->sizes, o->flags, &label, dense, cat,
                                    1, why, sizeof why);
    if (len > 0)
        return r == -EINVAL && strstr(why, "line is NULL");
    return r == (sizes_ok ? -1 : -EINVAL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzInput in = {data, size};
    const uint8_t opt = fuzz_u8(&in);
    CriteoOptions o = {.batch = 1 + (opt & 7), .flags = opt & 8 ? CRITEO_HASH : 0,
                       .nthreads = 1 + ((opt >> 4) & 1), .max_line = opt & 32 ? 64 : 0};
    int sizes_ok = 1;
    for (int t = 0; t < CRITEO_NCAT; t++) {
        o.sizes[t] = opt & 64 ? fuzz_i64(&in) : 1 + t * 37;
        sizes_ok &= o.sizes[t] > 0;
    }
    const char *text = (const char *)in.p;
    const size_t n = in.n;

    /* every line alone */
    int64_t lines = 0, good = 0;
    for (size_t pos = 0; pos < n;) {
        const char *nl = memchr(text + pos, '\n', n - pos);
        const size_t len = nl ? (size_t)(nl - text - pos) : n - pos;
        float label, dense[CRITEO_NDENSE];
        int64_t cat[CRITEO_NCAT];
        const int64_t max = o.max_line ? o.max_line : 65536;
        if (opt & 128)
            FUZZ_ASSERT(parse_null(len, &o, sizes_ok));
        const int got = (int64_t)len <= max ? parse_poisoned(text + pos, len, &o, &label, dense,
                                                             cat, sizes_ok) : -1;
        if (got == 0) {
            check_sample(label, dense, cat, 1, o.sizes);
            good++;
        }
        lines++;
        pos += len + 1;
    }

    /* the whole file through the reader */
    const int fd = memfd_create("fuzz_criteo", 0);
    if (fd < 0)
        return 0;
    if (write(fd, text, n) != (ssize_t)n) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    CriteoReader *r = NULL;
    const int opened = criteo_open(&r, path, &o, NULL, 0);
    FUZZ_ASSERT(sizes_ok || (opened == -EINVAL && !r));
    if (opened == 0) {
        CriteoBatch b;
        int64_t samples = 0;
        while (criteo_next(r, &b) == 0 && b.n > 0) {
            FUZZ_ASSERT(b.n <= o.batch);
            for (int64_t i = 0; i < b.n; i++)
                check_sample(b.label[i], b.dense + i * CRITEO_NDENSE, b.cat[0] + i, o.batch,
                             o.sizes);
            samples += b.n;
        }
        int64_t read_lines, bad;
        criteo_counts(r, &read_lines, &bad);
        FUZZ_ASSERT(read_lines == lines);
        FUZZ_ASSERT(samples == good && read_lines - bad == good);
        criteo_close(&r);
    }
    close(fd);
    return 0;
}
