/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bags_ref.h — the bag loop of the C references (kernels_c.c for f32 / f16 / bf16 rows,
 * quant_c.c for quantized ones): what a bag is, written once; each file passes how one
 * row is added.
 */
#ifndef EMB_KERNELS_BAGS_REF_H
#define EMB_KERNELS_BAGS_REF_H

#include <string.h>

#include "internal.h"
#include "kernels/kernels.h"

/* acc[0 .. D) += the row of weight @w (@weighted 0: an unweighted row, w is 1). */
typedef void (*EmbRowAdd)(float *acc, const void *row, float w, int weighted, int32_t D,
                          EmbDtype dt);

/* Bags a->bag0 .. bag1 (EmbBagsArgs): each summed from zero in bag order into its output
 * row by @add, an empty bag its default column (unweighted) or zeros, then scaled by the
 * combiner's factor when it is not 1. @add is a constant where this is stamped, so an
 * optimising compiler inlines it (a plain static inline function: always_inline cannot
 * be asked of a call through a pointer, which -O0 builds keep). */
EMB_INLINE void emb__bags_ref(const EmbBagsArgs *a, const int32_t D, const EmbDtype dt,
                              const EmbRowAdd add)
{
    int64_t k = a->offsets ? a->offsets[a->bag0] : a->bag0 * a->bag_size;
    for (int64_t bag = a->bag0; bag < a->bag1; bag++) {
        const int64_t end = a->offsets ? a->offsets[bag + 1] : k + a->bag_size;
        float *o = a->out + bag * a->out_stride;
        const int64_t start = k;
        double sw = 0.0, sw2 = 0.0;
        memset(o, 0, (size_t)D * sizeof(float));
        if (k == end && a->defcol)
            add(o, a->defcol, 1.0f, 0, D, dt);
        for (; k < end; k++) {
            const int64_t id = a->id32 ? ((const int32_t *)a->ids)[k]
                                       : ((const int64_t *)a->ids)[k];
            const float w = a->weights ? a->weights[k] : 1.0f;
            add(o, a->data + id * a->col_stride, w, a->weights != NULL, D, dt);
            sw += w;
            sw2 += (double)w * w;
        }
        const float f = end > start ? emb__combiner_factor(a->combiner, sw, sw2) : 1.0f;
        if (f != 1.0f)
            for (int32_t i = 0; i < D; i++)
                o[i] *= f;
    }
}

#endif
