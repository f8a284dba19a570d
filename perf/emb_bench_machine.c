/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_machine.c — the machine in the report's header: CPU model, cores, caches and
 * NUMA nodes (hwloc when built with it; /proc/cpuinfo and the library's counts without),
 * and the kernels the library chose (its CPU flags after any mask).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "emb_bench.h"

#if BENCH_HWLOC
#include <hwloc.h>
#endif

static void print_kernels(FILE *f)
{
    const unsigned k = emb_cpu_flags();
    fprintf(f, "# kernels: %s%s%s (cpu flags 0x%x of 0x%x detected)\n",
            k & EMB_CPU_AVX512 ? "avx512" : k & EMB_CPU_AVX2 ? "avx2" : "C references",
            k & EMB_CPU_F16C ? " +f16c" : "", k & EMB_CPU_AVX512BF16 ? " +avx512bf16" : "",
            k, emb_cpu_detected());
}

#if BENCH_HWLOC
static void print_caches(FILE *f, hwloc_topology_t topo)
{
    static const hwloc_obj_type_t types[] = {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE,
                                             HWLOC_OBJ_L3CACHE};
    fprintf(f, "; caches:");
    for (int i = 0; i < 3; i++) {
        const int n = hwloc_get_nbobjs_by_type(topo, types[i]);
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, types[i], 0);
        if (n <= 0 || !o || !o->attr)
            continue;
        const unsigned long long kib = (unsigned long long)o->attr->cache.size >> 10;
        if (kib >= 4096)
            fprintf(f, " L%d %dx%llu MiB", i + 1, n, kib >> 10);
        else
            fprintf(f, " L%d %dx%llu KiB", i + 1, n, kib);
    }
}
#endif

/* What decides how a shared machine's noise reaches the rows: the load when the run
   started and OpenMP's wait policy and binding (docs/guide/benchmark.md, "Threads that
   spin"). */
static void print_conditions(FILE *f)
{
    double load[3] = {0, 0, 0};
    FILE *l = fopen("/proc/loadavg", "r");
    if (l) {
        if (fscanf(l, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
            load[0] = load[1] = load[2] = 0;
        fclose(l);
    }
    const char *wait = getenv("OMP_WAIT_POLICY"), *bind = getenv("OMP_PROC_BIND");
    const char *spin = getenv("GOMP_SPINCOUNT"); /* libgomp: how long idle threads spin */
    fprintf(f, "# load average %.2f %.2f %.2f; OMP_WAIT_POLICY=%s OMP_PROC_BIND=%s", load[0],
            load[1], load[2], wait ? wait : "(unset)", bind ? bind : "(unset)");
    if (spin)
        fprintf(f, " GOMP_SPINCOUNT=%s", spin);
    fputc('\n', f);
    /* measured on a 2-core machine at load 12: every row, 1-thread ones too, 2-3x slower
       than with passive, as the idle team of the row before spins beside it */
    if (load[0] > emb_num_physical_cores() && !(wait && strcasecmp(wait, "passive") == 0))
        fprintf(f, "# warning: the load exceeds the cores and OpenMP threads spin when idle: "
                   "the idle team of one row takes a core from the next; rerun with "
                   "OMP_WAIT_POLICY=passive\n");
}

void bench_machine_print(FILE *f)
{
    char model[256];
    bench_cpu_model(model, sizeof model);
    fprintf(f, "# machine: %s; %d physical cores", model, emb_num_physical_cores());
#if BENCH_HWLOC
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) == 0) {
        fprintf(f, " (%d PUs)", hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU));
        print_caches(f, topo);
        fprintf(f, "; NUMA nodes: %d", hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE));
        hwloc_topology_destroy(topo);
    }
#else
    fprintf(f, "; NUMA nodes: %d (no hwloc: caches unknown)", emb_num_numa_nodes());
#endif
    fputc('\n', f);
    print_kernels(f);
    print_conditions(f);
}
