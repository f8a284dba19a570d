/*
 * kernels.h — the kernel families and their dispatch table.
 *
 * Each family is a function-pointer type; emb__kernels() returns the table filled once at
 * init: the C references (kernels_c.c) first, then the SIMD variants this CPU (and the mask
 * of emb_set_cpu_mask / EMB_CPU_MASK) allows, in ascending ISA order. Kernels never
 * allocate, never print, never hold OpenMP pragmas. Column pointers point at table storage
 * of the entry's dtype; everything computed is f32.
 *
 * Static-size variants: `*_d[k]` entries serve featuresize == emb__dclass_size[k]
 * (16, 32, 64, 128, 256); emb__kernel_*() pick them for static tables and for dynamic
 * tables whose featuresize equals a specialised size alike: they give bit-identical
 * results (tests/checkasm.c checks it), so "static" is only a promise about the size,
 * and a dynamic table of D = 64 gets the unrolled code too.
 *
 * Variants (tests/checkasm.c runs each against the C reference, bit for bit):
 *   C        kernels_c.c     every entry, `_d` for all sizes (constant-size loops)
 *   AVX2     kernels_avx2.c  every entry (f16 ones only with F16C), `_d` for all sizes
 *   AVX-512  kernels_avx512.c  F+BW+VL+DQ; every entry, `_d` for all sizes
 * All of them are exact with the reference: multiply then add (never FMA), bags summed
 * in bag order, sumsq in 16 fixed lanes (element i into lane i % 16, then a tree),
 * conversions rounding to nearest even. AVX512-BF16's vcvtneps2bf16 flushes subnormals,
 * so bf16 stores use integer rounding instead; bf16 loads are a shift.
 */
#ifndef EMB_KERNELS_H
#define EMB_KERNELS_H

#include <stdint.h>

#include "config.h"
#include "embtables/common.h"

#define EMB_NDTYPES 3
#define EMB_NDCLASS 5

/*
 * Software prefetch distance of the gather and pool kernels, in columns: while column k
 * is read, every cache line of column k + EMB_PF_DIST is prefetched. Chosen by measuring
 * the cold pooled gather (tests/checkasm --cold 1024, D = 64, 1 GiB) on an AMD EPYC
 * (Zen 4): distances 8, 16, 24 and 32 all reach 7.1 .. 7.6 GB/s on one thread (the roof's
 * 7.5), within the noise of a shared machine; 16 is the roof tool's distance.
 */
/* Tables up to this size are looked up without software prefetch (about one L2 cache). */
#define EMB_RESIDENT_BYTES ((int64_t)1 << 20)

#ifndef EMB_PF_DIST
#define EMB_PF_DIST 16
#endif

/* out + i*out_stride = column cols[i] (converted to f32), for i in [0, n). */
typedef void (*emb_gather_fn)(float *out, int64_t out_stride, const void *const *cols,
                              int64_t n, int32_t D);

/*
 * out (+)= Σ_{k<n} w[k] * cols[k] in order k = 0, 1, ... (w NULL: every weight 1).
 * accumulate == 0: out is overwritten (n == 0 gives zeros). cols[n .. n + ahead) are the
 * columns needed next: a kernel may prefetch them, never dereference them. ahead < 0: the
 * caller knows the columns are cache-resident (a table of at most EMB_RESIDENT_BYTES):
 * no prefetch at all, which saves a prefetch per cache line of every column.
 */
typedef void (*emb_pool_fn)(float *out, const void *const *cols, const float *w, int64_t n,
                            int64_t ahead, int32_t D, int accumulate);

/* x[0..D) *= s */
typedef void (*emb_scale_fn)(float *x, float s, int32_t D);

/* Σ col[i]² in f32 (for max_norm): s[i % 16] += col[i]², then emb__sumsq_lanes(s). */
typedef float (*emb_sumsq_fn)(const void *col, int32_t D);

/* col[i] -= lr * g[i], written back in the column's dtype (round to nearest even). */
typedef void (*emb_sgd_row_fn)(void *col, const float *g, float lr, int32_t D);

typedef struct EmbKernels {
    emb_gather_fn gather[EMB_NDTYPES];
    emb_pool_fn pool[EMB_NDTYPES];
    emb_pool_fn pool_nt[EMB_NDTYPES]; /* output written with non-temporal stores */
    emb_scale_fn scale;
    emb_sumsq_fn sumsq[EMB_NDTYPES];
    emb_sgd_row_fn sgd_row[EMB_NDTYPES];
    emb_sgd_row_fn sgd_row_nt[EMB_NDTYPES]; /* column written with non-temporal stores;
                                               the caller issues one emb__sfence() */
    /* static-size variants (NULL where none): [size class][dtype] */
    emb_gather_fn gather_d[EMB_NDCLASS][EMB_NDTYPES];
    emb_pool_fn pool_d[EMB_NDCLASS][EMB_NDTYPES];
    emb_sgd_row_fn sgd_row_d[EMB_NDCLASS][EMB_NDTYPES];
} EmbKernels;

extern const int emb__dclass_size[EMB_NDCLASS];

/* The dispatch table (initialised on first use; re-filled by emb_set_cpu_mask). */
const EmbKernels *emb__kernels(void);

/* Size class of D (index into *_d) or -1. */
static inline int emb__dclass(int32_t D)
{
    switch (D) {
    case 16: return 0;
    case 32: return 1;
    case 64: return 2;
    case 128: return 3;
    case 256: return 4;
    default: return -1;
    }
}

/* The reduction that ends every sumsq kernel: 16 lane sums added as a fixed tree. */
static inline float emb__sumsq_lanes(float s[16])
{
    for (int h = 8; h >= 1; h /= 2)
        for (int i = 0; i < h; i++)
            s[i] = s[i] + s[i + h];
    return s[0];
}

/* The best gather / pool / sgd kernel for (dtype, D). */
emb_gather_fn emb__kernel_gather(EmbDtype dt, int32_t D);
emb_pool_fn emb__kernel_pool(EmbDtype dt, int32_t D, int nontemporal);
emb_sgd_row_fn emb__kernel_sgd_row(EmbDtype dt, int32_t D, int nontemporal);

/* A store fence after non-temporal stores (no-op where there are none). */
void emb__sfence(void);

/* C references (kernels_c.c): fill every entry of @k. */
void emb__kernels_init_c(EmbKernels *k);
#if EMB_HAVE_X86_KERNELS
/* x86 variants (dispatch.c): override entries for the ISAs in @flags, in ascending order. */
void emb__kernels_init_x86(EmbKernels *k, unsigned flags);
/* One ISA each (kernels_avx2.c, kernels_avx512.c), compiled with that ISA's flags. */
void emb__kernels_init_avx2(EmbKernels *k, unsigned flags);
void emb__kernels_init_avx512(EmbKernels *k, unsigned flags);
#endif

#endif
