/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist_bf16.c — the optional bf16 exchange (EmbDistOptions::exchange_bf16): pooled rows
 * and output gradients travel as bf16, rounded to nearest even by emb_dist_bf16_round()'s
 * rule (src/dtype.h, the rule of the library's bf16 tables), two values per 32-bit word.
 */
#include <string.h>

#include "dist/dist_impl.h"
#include "dtype.h"

float emb_dist_bf16_round(float x)
{
    return emb__bf16_to_f32(emb__f32_to_bf16(x));
}

void dist_round_bf16(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = emb__bf16_to_f32(emb__f32_to_bf16(x[i]));
}

void dist_round_local_outputs(EmbDist *d, const EmbOutputs *out)
{
    for (int64_t i = 0; i < d->ntables; i++)
        if (d->t[i].place.kind == EMB_DIST_ROWWISE || d->t[i].place.kind == EMB_DIST_REPLICATED)
            for (int64_t b = 0; b < d->nbags; b++) {
                int64_t stride;
                dist_round_bf16(dist_out_row(d, out, i, b, &stride), d->t[i].desc.featuresize);
            }
}

void dist_to_bf16(uint16_t *dst, const float *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = emb__f32_to_bf16(src[i]);
}

void dist_from_bf16(float *dst, const uint16_t *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = emb__bf16_to_f32(src[i]);
}

void dist_put_bf16s(Words *b, const float *v, int64_t n)
{
    uint32_t *w = b->w + b->n;
    for (int64_t i = 0; i + 1 < n; i += 2)
        *w++ = emb__f32_to_bf16(v[i]) | (uint32_t)emb__f32_to_bf16(v[i + 1]) << 16;
    if (n & 1)
        *w = emb__f32_to_bf16(v[n - 1]);
    b->n += dist_bf16_words(n);
}

void dist_get_bf16s(const uint32_t **p, float *dst, int64_t n)
{
    const uint32_t *w = *p;
    for (int64_t i = 0; i < n; i++)
        dst[i] = emb__bf16_to_f32((uint16_t)(w[i / 2] >> (16 * (i & 1))));
    *p += dist_bf16_words(n);
}
