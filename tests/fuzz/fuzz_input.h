/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_input.h — reads typed values off the front of a fuzzer's input. Past the end every
 * read yields zero, so any byte string is a valid input.
 */
#ifndef EMB_FUZZ_INPUT_H
#define EMB_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct FuzzInput {
    const uint8_t *p;
    size_t n;
} FuzzInput;

static inline void fuzz_bytes(FuzzInput *in, void *dst, size_t size)
{
    const size_t k = size < in->n ? size : in->n;
    memcpy(dst, in->p, k);
    memset((char *)dst + k, 0, size - k);
    in->p += k;
    in->n -= k;
}

/* fuzz_u8(), fuzz_i64(), fuzz_f32(): the next value's bytes, as stored on this machine */
#define FUZZ_READER(name, type)                                                            \
    static inline type name(FuzzInput *in)                                                 \
    {                                                                                      \
        type v;                                                                            \
        fuzz_bytes(in, &v, sizeof v);                                                      \
        return v;                                                                          \
    }
FUZZ_READER(fuzz_u8, uint8_t)
FUZZ_READER(fuzz_i64, int64_t)
FUZZ_READER(fuzz_f32, float)

/* A small id in [-2, lim + 2) most of the time, any int64 when the selector says so. */
static inline int64_t fuzz_id(FuzzInput *in, int64_t lim)
{
    const uint8_t sel = fuzz_u8(in);
    if (sel == 0xff)
        return fuzz_i64(in);
    return (int64_t)(sel % (uint8_t)(lim + 4)) - 2;
}

/* Aborts the fuzzer (a finding) when a contract of the library is broken. */
#define FUZZ_ASSERT(cond)                                                                  \
    do {                                                                                   \
        if (!(cond))                                                                       \
            __builtin_trap();                                                              \
    } while (0)

#endif
