/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynamic_sketch.c — the admission sketch: a count-min sketch of SKETCH_DEPTH rows of 16-bit counters; an id is admitted once its count reaches admit_after.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "initval.h"
#include "rng.h"
#include "tables/dynamic/dynamic_impl.h"

/* ---- admission --------------------------------------------------------------------------- */

static inline uint16_t *sketch_cell(const Dyn *d, int k, int64_t id)
{
    const uint64_t h = emb__rng_u64(0x243f6a8885a308d3ull, (uint64_t)k, (uint64_t)id);
    return &d->sketch[(int64_t)k * d->sketch_width + (int64_t)(h & (uint64_t)(d->sketch_width - 1))];
}

/* Whether one more update admits @id: its count so far (the sketch's minimum) + 1. */
bool emb__dyn_admits(const Dyn *d, int64_t id)
{
    if (d->admit_after <= 1)
        return true;
    uint32_t m = UINT16_MAX;
    for (int k = 0; k < SKETCH_DEPTH; k++)
        m = EMB_MIN(m, *sketch_cell(d, k, id));
    return m + 1 >= (uint32_t)d->admit_after;
}

void emb__dyn_count(Dyn *d, int64_t id)
{
    for (int k = 0; k < SKETCH_DEPTH; k++) {
        uint16_t *c = sketch_cell(d, k, id);
        if (*c < UINT16_MAX)
            (*c)++;
    }
}
