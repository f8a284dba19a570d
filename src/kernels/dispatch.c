/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dispatch.c — fills the one kernel dispatch table once (C references, then the ISA
 * variants the CPU and the mask allow, in ascending order) and picks the static-size
 * variant for a feature size.
 */
#include <pthread.h> /* pthread_once: ThreadSanitizer sees it (not C11 call_once) */

#include "cpu.h"
#include "internal.h"
#include "kernels/kernels.h"

const int emb__dclass_size[EMB_NDCLASS] = {16, 32, 64, 128, 256};

static EmbKernels table;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void fill(void)
{
    EmbKernels k;
    emb__kernels_init_c(&k);
#if EMB_HAVE_X86_KERNELS
    emb__kernels_init_x86(&k, emb__cpu_flags());
#endif
    table = k;
}

const EmbKernels *emb__kernels(void)
{
    pthread_once(&once, fill);
    return &table;
}

void emb_set_cpu_mask(unsigned mask)
{
    pthread_once(&once, fill);
    emb__cpu_set_mask(mask);
    fill();
}

#if EMB_HAVE_X86_KERNELS
/* The features each x86 library is compiled for (meson.build: x86_avx2_args = -mavx2 -mfma
   -mf16c; x86_avx512_args adds -mavx512f/bw/vl/dq): the compiler may use any of them anywhere
   in the library (the quantized rows' scale and bias are f16), so its entries are taken only
   when the CPU has them all (EMB_CPU_AVX2 is AVX2 + FMA; no -mbmi* flag is used). */
enum { NEED_AVX2 = EMB_CPU_AVX2 | EMB_CPU_F16C, NEED_AVX512 = NEED_AVX2 | EMB_CPU_AVX512 };

/* dav1d order: each ISA overrides the entries of the one below; stop at a missing flag. */
void emb__kernels_init_x86(EmbKernels *k, unsigned flags)
{
    if ((flags & NEED_AVX2) != NEED_AVX2)
        return;
    emb__kernels_init_avx2(k, flags);
    emb__kernels_init_quant_avx2(k);
    if ((flags & NEED_AVX512) != NEED_AVX512)
        return;
    emb__kernels_init_avx512(k, flags);
    emb__kernels_init_quant_avx512(k);
}
#endif

emb_gather_fn emb__kernel_gather(EmbDtype dt, int32_t D)
{
    const EmbKernels *k = emb__kernels();
    int c = emb__dclass(D);
    return c >= 0 && k->gather_d[c][dt] ? k->gather_d[c][dt] : k->gather[dt];
}

emb_pool_fn emb__kernel_pool(EmbDtype dt, int32_t D, int nontemporal)
{
    const EmbKernels *k = emb__kernels();
    if (nontemporal)
        return k->pool_nt[dt];
    int c = emb__dclass(D);
    return c >= 0 && k->pool_d[c][dt] ? k->pool_d[c][dt] : k->pool[dt];
}

emb_pool_fn emb__kernel_pool_max(EmbDtype dt, int32_t D)
{
    const EmbKernels *k = emb__kernels();
    const int c = emb__dclass(D);
    return c >= 0 && k->pool_max_d[c][dt] ? k->pool_max_d[c][dt] : k->pool_max[dt];
}

emb_bags_fn emb__kernel_bags_max(EmbDtype dt, int32_t D)
{
    const int c = emb__dclass(D);
    return c >= 0 ? emb__kernels()->bags_max_d[c][dt] : NULL;
}

emb_bags_fn emb__kernel_bags(EmbDtype dt, int32_t D)
{
    const int c = emb__dclass(D);
    return c >= 0 ? emb__kernels()->bags_d[c][dt] : NULL;
}

emb_sgd_row_fn emb__kernel_sgd_row(EmbDtype dt, int32_t D, int nontemporal)
{
    const EmbKernels *k = emb__kernels();
    if (nontemporal)
        return k->sgd_row_nt[dt];
    int c = emb__dclass(D);
    return c >= 0 && k->sgd_row_d[c][dt] ? k->sgd_row_d[c][dt] : k->sgd_row[dt];
}

emb_rows_fn emb__kernel_rows(EmbOptimizerKind kind, EmbDtype dt, int32_t D)
{
    const int c = emb__dclass(D);
    return c >= 0 ? emb__kernels()->rows_d[c][kind][dt] : NULL;
}

emb_opt_row_fn emb__kernel_opt_row(EmbOptimizerKind kind, EmbDtype dt, int32_t D,
                                   int nontemporal)
{
    const EmbKernels *k = emb__kernels();
    if (nontemporal)
        return k->opt_row_nt[kind][dt];
    int c = emb__dclass(D);
    return c >= 0 && k->opt_row_d[c][kind][dt] ? k->opt_row_d[c][kind][dt] : k->opt_row[kind][dt];
}

void emb__sfence(void)
{
#if EMB_ARCH_X86 && defined(__GNUC__)
    __asm__ volatile("sfence" ::: "memory");
#endif
}
