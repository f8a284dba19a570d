/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_criteo.c — bytes -> a Criteo TSV file read by examples/criteo.c: every line parsed
 * alone, then the whole file through the threaded reader. Every line is counted once
 * (good or bad), the reader keeps exactly the lines that parse alone, and every good
 * sample has a 0/1 label, finite non-negative dense values and indices inside their tables.
 */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzInput in = {data, size};
    const uint8_t opt = fuzz_u8(&in);
    CriteoOptions o = {.batch = 1 + (opt & 7), .flags = opt & 8 ? CRITEO_HASH : 0,
                       .nthreads = 1 + ((opt >> 4) & 1), .max_line = opt & 32 ? 64 : 0};
    for (int t = 0; t < CRITEO_NCAT; t++)
        o.sizes[t] = 1 + t * 37;
    const char *text = (const char *)in.p;
    const size_t n = in.n;

    /* every line alone */
    int64_t lines = 0, good = 0;
    for (size_t pos = 0; pos < n;) {
        const char *nl = memchr(text + pos, '\n', n - pos);
        const size_t len = nl ? (size_t)(nl - text - pos) : n - pos;
        float label, dense[CRITEO_NDENSE];
        int64_t cat[CRITEO_NCAT];
        char why[80];
        const int64_t max = o.max_line ? o.max_line : 65536;
        if ((int64_t)len <= max &&
            criteo_parse_line(text + pos, (int64_t)len, o.sizes, o.flags, &label, dense, cat, 1,
                              why, sizeof why) == 0) {
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
    CriteoReader *r;
    if (criteo_open(&r, path, &o, NULL, 0) == 0) {
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
