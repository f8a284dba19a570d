/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dlrm_blas.c — the running CBLAS's name and threads, by the vendors' own entry points
 * looked up in the process (OpenBLAS: openblas_get_config; BLIS: bli_info_get_version_str);
 * neither found: a BLAS without them, netlib's reference (single-threaded) as a rule.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT, under -std=c11 */
#endif
#include "dlrm_blas.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A function of the process by name, or NULL (memcpy: ISO C has no object-to-function
 * pointer cast). */
static void (*symbol(const char *name))(void)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    void (*f)(void) = NULL;
    if (p)
        memcpy(&f, &p, sizeof f);
    return f;
}

static int openblas(char *out, size_t size)
{
    void (*f)(void) = symbol("openblas_get_config");
    if (!f)
        return 0;
    char *(*config)(void) = (char *(*)(void))f;
    char *(*core)(void) = (char *(*)(void))symbol("openblas_get_corename");
    int (*parallel)(void) = (int (*)(void))symbol("openblas_get_parallel");
    void (*set)(int) = (void (*)(int))symbol("openblas_set_num_threads");
    int (*get)(void) = (int (*)(void))symbol("openblas_get_num_threads");
    static const char *const kind[] = {"sequential", "pthreads", "OpenMP"};
    const int par = parallel ? parallel() : -1;
    if (set)
        set(1);
    char name[32] = "OpenBLAS", version[32] = ""; /* "OpenBLAS 0.3.21 DYNAMIC_ARCH .." */
    sscanf(config(), "%31s %31s", name, version);
    snprintf(out, size, "%s %s %s (%s), %d thread per call", name, version,
             core ? core() : "?", par >= 0 && par <= 2 ? kind[par] : "?", get ? get() : 1);
    return 1;
}

static int blis(char *out, size_t size)
{
    void (*f)(void) = symbol("bli_info_get_version_str");
    if (!f)
        return 0;
    const char *(*version)(void) = (const char *(*)(void))f;
    void (*set)(int64_t) = (void (*)(int64_t))symbol("bli_thread_set_num_threads");
    int64_t (*get)(void) = (int64_t (*)(void))symbol("bli_thread_get_num_threads");
    int (*arch)(void) = (int (*)(void))symbol("bli_arch_query_id");
    const char *(*arch_name)(int) = (const char *(*)(int))symbol("bli_arch_string");
    if (set)
        set(1);
    snprintf(out, size, "BLIS %s %s, %lld thread per call", version(),
             arch && arch_name ? arch_name(arch()) : "?", (long long)(get ? get() : 1));
    return 1;
}

void dlrm_blas_init(char *out, size_t size)
{
    if (!openblas(out, size) && !blis(out, size))
        snprintf(out, size, "reference BLAS (netlib?), 1 thread per call: ~25x slower "
                            "than OpenBLAS; install libopenblas-dev");
}

/* The x86 level of OpenBLAS's kernels of that name: 0 SSE, 1 AVX, 2 AVX2, 3 AVX-512; -1
 * for a name not listed (another architecture, a newer OpenBLAS): no warning then. */
static int core_level(const char *core)
{
    static const struct {
        const char *name;
        int level;
    } cores[] = {{"Prescott", 0}, {"Core2", 0}, {"Penryn", 0}, {"Dunnington", 0},
                 {"Nehalem", 0}, {"Atom", 0}, {"Barcelona", 0}, {"Opteron", 0},
                 {"Nano", 0}, {"Katmai", 0}, {"Coppermine", 0}, {"Northwood", 0},
                 {"Sandybridge", 1}, {"Bulldozer", 1}, {"Piledriver", 1}, {"Steamroller", 1},
                 {"Haswell", 2}, {"Zen", 2}, {"Excavator", 2}, {"SkylakeX", 3},
                 {"Cooperlake", 3}, {"SapphireRapids", 3}};
    for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++)
        if (!strcasecmp(core, cores[i].name))
            return cores[i].level;
    return -1;
}

/* This CPU's level, as core_level() counts (SkylakeX's kernels need AVX-512 F, BW, DQ, VL). */
static int cpu_level(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return 3;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return 2;
    return __builtin_cpu_supports("avx") ? 1 : 0;
#else
    return -1;
#endif
}

int dlrm_blas_warning(char *out, size_t size)
{
    char *(*core)(void) = (char *(*)(void))symbol("openblas_get_corename");
    if (!core || !core())
        return 0;
    const int have = core_level(core()), can = cpu_level();
    if (have < 0 || can <= have || getenv("OPENBLAS_CORETYPE")) /* set: the user chose */
        return 0;
    static const char *const best[] = {"", "Sandybridge", "Haswell", "SkylakeX"};
    static const char *const isa[] = {"", "AVX", "AVX2", "AVX-512"};
    snprintf(out, size, "OpenBLAS chose its %s kernels on a CPU with %s (it does not know "
             "this CPU): OPENBLAS_CORETYPE=%s in the environment makes the MLPs several times "
             "faster", core(), isa[can], best[can]);
    return 1;
}
