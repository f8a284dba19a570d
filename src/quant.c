/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * quant.c — whole rows of any element type as f32 (core): reading a row (dequantizing a
 * quantized one), writing one (quantizing: scale and bias from the row's min and max, as
 * FBGEMM's prepack does), and the finite check of a quantized row's scale and bias.
 */
#include <math.h>
#include <string.h>

#include "dtype.h"
#include "requant.h"

void emb__row_load(EmbDtype dt, const void *row, int32_t D, float *x)
{
    switch (dt) { /* one loop per dtype, so that each vectorizes (a 16-bit optimizer
                     state is loaded through here every step) */
    case EMB_F32: memcpy(x, row, (size_t)D * sizeof *x); return;
    case EMB_BF16:
        for (int32_t i = 0; i < D; i++)
            x[i] = emb__ld_bf16(row, i);
        return;
    case EMB_F16:
        for (int32_t i = 0; i < D; i++)
            x[i] = emb__ld_f16(row, i);
        return;
    default: break;
    }
    float s, b;
    emb__q_params(dt, row, D, &s, &b);
    if (dt == EMB_INT4) { /* a byte's two elements at once (D is even): emb__q_value's values */
        const unsigned char *p = (const unsigned char *)row;
        for (int32_t j = 0; j < D / 2; j++) {
            x[2 * j] = (float)(p[j] & 15) * s + b;
            x[2 * j + 1] = (float)(p[j] >> 4) * s + b;
        }
        return;
    }
    for (int32_t i = 0; i < D; i++)
        x[i] = emb__q_value(dt, row, i, s, b);
}

void emb__row_quantize(EmbDtype dt, void *row, int32_t D, const float *x, const uint64_t *key)
{
    emb__q_row(dt, row, D, x, key);
}

void emb__row_store(EmbDtype dt, void *row, int32_t D, const float *x)
{
    if (emb__dtype_quantized(dt)) {
        emb__row_quantize(dt, row, D, x, NULL);
        return;
    }
    for (int32_t i = 0; i < D; i++)
        emb__store(dt, row, i, x[i]);
}

int32_t emb__q_row_nonfinite(EmbDtype dt, const void *row, int32_t D)
{
    float s, b;
    emb__q_params(dt, row, D, &s, &b);
    for (int32_t i = 0; i < D; i++) {
        const float q = (float)emb__q_get(dt, row, i);
        if (!isfinite(emb__q_value(dt, row, i, s, b)) || !isfinite(fmaf(q, s, b)))
            return i;
    }
    return -1;
}
