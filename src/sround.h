/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sround.h — an f32 row written as f16 or bf16 with stochastic rounding, as inline C: the
 * reference (the `requant[EMB_F16]` / `requant[EMB_BF16]` kernels of kernels/, which
 * compile this same C with each ISA's flags; checkasm compares them bit for bit).
 *
 * The definition (docs/design/lowp.md): element i of a row keyed by {seed, stream, step}
 * takes 16 random bits r, bits 16 (i % 4) .. 16 (i % 4) + 15 of the counter-based
 * generator's draw (rng.h) at (seed, stream, step * ceil(D / 4) + i / 4), as the quantized
 * update's rounding does. With f = the part of |x| below the kept bits, as a fraction of
 * one unit of the last kept place, the magnitude is rounded up iff r + f 2^16 >= 2^16: the
 * random bits are added below the kept ones and the sum truncated. For bf16 that is
 * (bits(x) + r) >> 16, the GPU back end's rule. NaN, infinities and |x| beyond the largest
 * finite value (f16: 65504) are rounded to nearest even. No key: nearest even throughout.
 */
#ifndef EMB_SROUND_H
#define EMB_SROUND_H

#include <stdint.h>

#include "dtype.h"
#include "rng.h"

/* x as bf16 bits, given 16 random bits r (the GPU's gpu_bf16_sr). */
static inline uint16_t emb__sr_bf16(float x, uint32_t r)
{
    const uint32_t u = emb__f32_as_u32(x);
    if ((u & 0x7f800000u) == 0x7f800000u) /* inf kept, NaN quiet */
        return (uint16_t)((u >> 16) | ((u & 0xffffu) ? 0x40u : 0u));
    return (uint16_t)((u + (r & 0xffffu)) >> 16);
}

/* x as f16 bits, given 16 random bits r. */
static inline uint16_t emb__sr_f16(float x, uint32_t r)
{
    const float a = x < 0.0f ? -x : x;
    if (!(a < 65504.0f)) /* NaN, infinities, beyond the largest finite f16 */
        return emb__f32_to_f16(x);
    uint16_t lo = (uint16_t)(emb__f32_to_f16(a) & 0x7fffu); /* a's magnitude, then truncated */
    if (emb__f16_to_f32(lo) > a)
        lo--;
    const float flo = emb__f16_to_f32(lo), ulp = emb__f16_to_f32((uint16_t)(lo + 1)) - flo;
    const float f = (a - flo) / ulp; /* exact: a - flo within one binade, ulp a power of 2 */
    const uint16_t m = (uint16_t)(lo + ((float)(r & 0xffffu) + f * 65536.0f >= 65536.0f));
    return (uint16_t)(m | (emb__f32_as_u32(x) >> 16 & 0x8000u));
}

/* The row of @dt (EMB_F16 / EMB_BF16) from x[0 .. D): stochastically rounded keyed by
 * @key = {seed, stream, step}, or to nearest even (@key NULL). */
static inline void emb__sr_row(EmbDtype dt, void *row, int32_t D, const float *x,
                               const uint64_t *key)
{
    uint16_t *p = (uint16_t *)row;
    if (!key) {
        for (int32_t i = 0; i < D; i++)
            p[i] = dt == EMB_BF16 ? emb__f32_to_bf16(x[i]) : emb__f32_to_f16(x[i]);
        return;
    }
    const uint64_t h = emb__rng_stream(key[0], key[1]);
    const uint64_t c0 = key[2] * (uint64_t)((D + 3) / 4);
    for (int32_t i0 = 0; i0 < D; i0 += 4) {
        const uint64_t draw = emb__rng_u64_at(h, c0 + (uint64_t)(i0 / 4));
        const int32_t n = D - i0 < 4 ? D - i0 : 4;
        for (int32_t j = 0; j < n; j++) {
            const uint32_t r = (uint32_t)(draw >> (16 * j)) & 0xffffu;
            p[i0 + j] = dt == EMB_BF16 ? emb__sr_bf16(x[i0 + j], r) : emb__sr_f16(x[i0 + j], r);
        }
    }
}

/* A kernel @NAME (emb_requant_fn, kernels.h) of dtype @DT: emb__sr_row compiled in the file
 * that stamps it (the C reference, or an ISA file with its flags). */
#define EMB_SROUND_KERNEL(NAME, DT)                                                        \
    static void NAME(void *row, int32_t D, const float *x, const uint64_t *key)           \
    {                                                                                      \
        emb__sr_row(DT, row, D, x, key);                                                   \
    }

#endif
