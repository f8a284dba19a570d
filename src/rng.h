/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rng.h — a counter-based random generator: every value is a pure function of
 * (seed, stream, counter), so initializers give the same numbers for any thread count and
 * any order of evaluation. The mixer is SplitMix64's finaliser applied to a Weyl-sequence
 * combination of the three words, twice (enough for initialisation, not cryptography).
 */
#ifndef EMB_RNG_H
#define EMB_RNG_H

#include <stdint.h>

static inline uint64_t emb__mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The stream (seed, stream) as one word, for many counters of it (emb__rng_u64_at). */
static inline uint64_t emb__rng_stream(uint64_t seed, uint64_t stream)
{
    return emb__mix64(seed + 0x9e3779b97f4a7c15ull * (stream + 1));
}

/* 64 random bits for @counter of the stream @h (emb__rng_stream). */
static inline uint64_t emb__rng_u64_at(uint64_t h, uint64_t counter)
{
    return emb__mix64(h ^ (counter * 0xd1b54a32d192ed03ull + 0x8cb92ba72f3d8dd7ull));
}

/* 64 random bits for (seed, stream, counter). */
static inline uint64_t emb__rng_u64(uint64_t seed, uint64_t stream, uint64_t counter)
{
    return emb__rng_u64_at(emb__rng_stream(seed, stream), counter);
}

/* Uniform in [0, 1) with 24 random bits (every value exactly representable). */
static inline float emb__rng_unit_at(uint64_t h, uint64_t counter)
{
    return (float)(emb__rng_u64_at(h, counter) >> 40) * (1.0f / 16777216.0f);
}

static inline float emb__rng_unit(uint64_t seed, uint64_t stream, uint64_t counter)
{
    return emb__rng_unit_at(emb__rng_stream(seed, stream), counter);
}

/* Uniform in (0, 1] with 53 random bits (for logarithms). */
static inline double emb__rng_open01(uint64_t seed, uint64_t stream, uint64_t counter)
{
    return ((double)(emb__rng_u64(seed, stream, counter) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

#endif
