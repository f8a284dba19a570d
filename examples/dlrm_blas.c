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
#include <string.h>

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
