/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cpu.c — CPU features, detected once, and the mask that restricts them.
 * The initial mask comes from the environment variable EMB_CPU_MASK (e.g. 0 forces the C
 * references); emb_set_cpu_mask() (kernels/dispatch.c) changes it and re-selects kernels.
 */
#include <stdlib.h>
#include <pthread.h> /* pthread_once: ThreadSanitizer sees it (not C11 call_once) */

#include "internal.h"
#include "cpu.h"

#if EMB_ARCH_X86 && defined(__GNUC__)
#include <cpuid.h>
#endif

static unsigned detected;
static unsigned mask = ~0u;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static unsigned detect(void)
{
    unsigned f = 0;
#if EMB_ARCH_X86 && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        f |= EMB_CPU_AVX2;
    unsigned a, b, c, d; /* F16C: CPUID leaf 1, ECX bit 29 (clang lacks the builtin's name) */
    if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) && (f & EMB_CPU_AVX2))
        f |= EMB_CPU_F16C;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        f |= EMB_CPU_AVX512;
    if ((f & EMB_CPU_AVX512) && __builtin_cpu_supports("avx512bf16"))
        f |= EMB_CPU_AVX512BF16;
#endif
    return f;
}

static void init(void)
{
    detected = detect();
    const char *env = getenv("EMB_CPU_MASK");
    if (env && *env) {
        char *end;
        unsigned long m = strtoul(env, &end, 0);
        if (*end == '\0')
            mask = (unsigned)m;
        else
            emb__log(EMB_LOG_WARN, "EMB_CPU_MASK=\"%s\" is not a number; ignored", env);
    }
}

unsigned emb_cpu_detected(void)
{
    pthread_once(&once, init);
    return detected;
}

unsigned emb__cpu_flags(void)
{
    pthread_once(&once, init);
    return detected & mask;
}

unsigned emb_cpu_flags(void)
{
    return emb__cpu_flags();
}

void emb__cpu_set_mask(unsigned m)
{
    pthread_once(&once, init);
    mask = m;
}
