/* SPDX-License-Identifier: BSD-2-Clause */
/* test_util.h — helpers shared by the Criterion suites: seeded random data, poisoned
 * buffers, tables filled with known contents. */
#ifndef EMB_TEST_UTIL_H
#define EMB_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <embtables/embtables.h>

/* A value no lookup can produce from the tables the tests build: NaN with a payload. */
#define POISON_BITS 0x7fc0dead

static inline uint64_t tu_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [-1, 1) */
static inline float tu_randf(uint64_t *s)
{
    return (float)((tu_rand(s) >> 40) * (1.0 / (1ull << 24))) * 2.0f - 1.0f;
}

static inline void tu_poison(float *p, size_t n)
{
    uint32_t b = POISON_BITS;
    for (size_t i = 0; i < n; i++)
        memcpy(&p[i], &b, 4);
}

static inline int tu_is_poison(const float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &p[i], 4);
        if (b != POISON_BITS)
            return 0;
    }
    return 1;
}

/* Fills an f32 simple table with seeded random values in [-1, 1). */
static inline void tu_fill_random(EmbTable *t, uint64_t seed)
{
    int64_t stride;
    float *d = (float *)emb_table_data(t, &stride);
    for (int64_t c = 0; c < emb_table_ncolumns(t); c++)
        for (int32_t i = 0; i < emb_table_featuresize(t); i++)
            d[c * stride + i] = tu_randf(&seed);
}

/* FNV-1a of a simple table's columns: to show a failed call wrote nothing. */
static inline uint64_t tu_checksum(const EmbTable *t)
{
    int64_t stride;
    const unsigned char *d = (const unsigned char *)emb_table_data(t, &stride);
    const EmbDtype dt = emb_table_dtype(t);
    size_t rowbytes = emb_dtype_row_bytes(dt, emb_table_featuresize(t));
    size_t sbytes = (size_t)stride * (emb_dtype_size(dt) ? emb_dtype_size(dt) : 1); /* bytes */
    uint64_t h = 1469598103934665603ull;
    for (int64_t c = 0; c < emb_table_ncolumns(t); c++)
        for (size_t i = 0; i < rowbytes; i++)
            h = (h ^ d[(size_t)c * sbytes + i]) * 1099511628211ull;
    return h;
}

#endif
