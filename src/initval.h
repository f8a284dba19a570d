/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * initval.h — the value of an initializer (common.h's EmbInitializer) at element i of column
 * c: a pure function of (seed, c, i), shared by emb_table_initialize (store/init.c) and the
 * rows a dynamic table creates (tables/dynamic.c, with c = the row's id), so both give the
 * same numbers.
 */
#ifndef EMB_INITVAL_H
#define EMB_INITVAL_H

#include <math.h>

#include "embtables/common.h" /* EmbInitializer */
#include "internal.h"
#include "rng.h"

/* A standard normal from the attempt-th pair of uniforms of (c, i) (Box-Muller). */
static inline double emb__init_std_normal(uint64_t seed, int64_t c, int64_t i,
                                          uint64_t attempt)
{
    const uint64_t k = ((uint64_t)i << 1) + (attempt << 40);
    const double u = emb__rng_open01(seed, (uint64_t)c, k);
    const double v = emb__rng_open01(seed, (uint64_t)c, k + 1);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* Element @i of column @c of a table of @ncolumns columns. */
static inline float emb__init_value(const EmbInitializer *in, int64_t ncolumns, int64_t c,
                                    int64_t i)
{
    switch (in->kind) {
    case EMB_INIT_ONES: return 1.0f;
    case EMB_INIT_CONSTANT: return in->a;
    case EMB_INIT_UNIFORM:
        return in->a + (in->b - in->a) * emb__rng_unit(in->seed, (uint64_t)c, (uint64_t)i);
    case EMB_INIT_NORMAL:
        return (float)(in->a + in->b * emb__init_std_normal(in->seed, c, i, 0));
    case EMB_INIT_TRUNCATED_NORMAL:
        for (uint64_t attempt = 0;; attempt++) {
            const double z = emb__init_std_normal(in->seed, c, i, attempt);
            if (fabs(z) <= 2.0 || attempt == 1000)
                return (float)(in->a + in->b * (fabs(z) <= 2.0 ? z : 0.0));
        }
    case EMB_INIT_UNIFORM_UNIT_SCALING: {
        const double m = in->a * sqrt(3.0 / (double)(ncolumns > 0 ? ncolumns : 1));
        return (float)(m * (2.0 * emb__rng_unit(in->seed, (uint64_t)c, (uint64_t)i) - 1.0));
    }
    default: return 0.0f; /* NONE, ZEROS */
    }
}

/* The parameter checks of an initializer (message naming @label): 0 or EMB_EINVAL. */
static inline int emb__init_check(const EmbInitializer *in, const char *label)
{
    if (in->kind < EMB_INIT_NONE || in->kind > EMB_INIT_UNIFORM_UNIT_SCALING)
        return emb__fail(EMB_EINVAL, "initializer kind %d is unknown (%s)", (int)in->kind,
                         label);
    if (in->kind == EMB_INIT_UNIFORM && !(in->b >= in->a))
        return emb__fail(EMB_EINVAL, "uniform initializer: maxval %g < minval %g (%s)",
                         (double)in->b, (double)in->a, label);
    if ((in->kind == EMB_INIT_NORMAL || in->kind == EMB_INIT_TRUNCATED_NORMAL) && !(in->b >= 0))
        return emb__fail(EMB_EINVAL, "normal initializer: stddev %g < 0 (%s)", (double)in->b,
                         label);
    return 0;
}

#endif
