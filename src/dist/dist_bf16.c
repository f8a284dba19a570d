/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist_bf16.c — the optional bf16 exchange (EmbDistOptions::exchange_bf16): pooled rows
 * and output gradients travel as bf16, rounded to nearest even by emb_dist_bf16_round()'s
 * rule (src/dtype.h, the rule of the library's bf16 tables), two values per 32-bit word.
 */
#include <string.h>

#include "dist/dist_impl.h"
#include "dtype.h"

/* emb__f32_to_bf16() without a branch, so that the loops below vectorise; the same bits
   (tests/test_dist.c compares the exchange with emb_dist_bf16_round()). */
static inline uint32_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1)) >> 16, nan = (u >> 16) | 0x40;
    return (u & 0x7fffffffu) > 0x7f800000u ? nan : rounded;
}

static inline float from_bf16(uint32_t h)
{
    const uint32_t u = h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float emb_dist_bf16_round(float x)
{
    return emb__bf16_to_f32(emb__f32_to_bf16(x));
}

void dist_round_bf16(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = from_bf16(to_bf16(x[i]));
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
        dst[i] = (uint16_t)to_bf16(src[i]);
}

void dist_from_bf16(float *dst, const uint16_t *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = from_bf16(src[i]);
}

void dist_put_bf16s(Words *b, const float *v, int64_t n)
{
    uint32_t *w = b->w + b->n;
    const int64_t h = n / 2;
    for (int64_t i = 0; i < h; i++)
        w[i] = to_bf16(v[2 * i]) | to_bf16(v[2 * i + 1]) << 16;
    if (n & 1)
        w[h] = to_bf16(v[n - 1]);
    b->n += dist_bf16_words(n);
}

void dist_get_bf16s(const uint32_t **p, float *dst, int64_t n)
{
    const uint32_t *w = *p;
    const int64_t h = n / 2;
    for (int64_t i = 0; i < h; i++) {
        dst[2 * i] = from_bf16(w[i] & 0xffffu);
        dst[2 * i + 1] = from_bf16(w[i] >> 16);
    }
    if (n & 1)
        dst[n - 1] = from_bf16(w[h] & 0xffffu);
    *p += dist_bf16_words(n);
}
