/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * checkasm.h — shared by the kernel checker (checkasm.c) and its benchmark mode
 * (checkasm_bench.c): the ISA levels, one dispatch table per level, seeded data.
 */
#ifndef EMB_CHECKASM_H
#define EMB_CHECKASM_H

#include <stdint.h>

#include "config.h"
#include "kernels/kernels.h"
#include "test_util.h"

/* A dispatch level: the kernels a CPU with exactly these flags gets. */
typedef struct Level {
    const char *name;
    unsigned flags;   /* flags the level needs (and gives to the init) */
    EmbKernels k;     /* its table: the C references overridden up to this ISA */
    int available;    /* this CPU has the flags */
} Level;

enum { LEVEL_C, LEVEL_AVX2, LEVEL_AVX512, NLEVELS };

/* Fills levels[0 .. NLEVELS) for this CPU (detected flags, the mask ignored). */
void ca_levels_init(Level levels[NLEVELS]);

/* A value in [-1, 1) scaled by 2^-e, e in [0, 28), sometimes tiny (subnormal in f16). */
float ca_value(uint64_t *s);

/* n elements of dtype dt at p: seeded values, stored in the dtype (round to nearest). */
void ca_fill(void *p, EmbDtype dt, int64_t n, uint64_t *s);
/* @nrows quantized rows of D elements (dtype @dt) at @p, @stride bytes apart: random bytes
 * (values and the bytes between rows), then a seeded scale and bias per row. */
void ca_fill_rows(void *p, EmbDtype dt, int32_t D, int64_t nrows, int64_t stride, uint64_t *s);
/* Element @i of @p (dtype @dt) = @x, rounded to nearest even. */
void ca_set(void *p, EmbDtype dt, int64_t i, float x);

static inline const char *ca_dtype_name(int dt)
{
    return emb_dtype_name((EmbDtype)dt);
}

/* --bench: times every level against C (cache-resident) and static vs generic sizes. */
int ca_bench(const Level levels[NLEVELS], uint64_t seed);

/* --cold MiB: pooled gather of a cold table through emb_lookup, 1 and 2 threads. */
int ca_cold(int64_t mib, uint64_t seed);

#endif
