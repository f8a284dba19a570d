/* platform.c — topology, NUMA binding and pinning through hwloc, with sysconf fallbacks. */
#include <threads.h>
#include <unistd.h>

#include "internal.h"
#include "platform.h"

#if EMB_HAVE_HWLOC
#include <hwloc.h>

static hwloc_topology_t topo;
static int topo_ok;
#endif
static once_flag once = ONCE_FLAG_INIT;
static int ncores = 1, nnodes = 1;

static void init(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    ncores = n > 0 ? (int)n : 1;
#if EMB_HAVE_HWLOC
    if (hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) == 0) {
        topo_ok = 1;
        int c = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
        int m = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
        ncores = c > 0 ? c : ncores;
        nnodes = m > 0 ? m : 1;
        emb__log(EMB_LOG_INFO, "hwloc: %d cores, %d NUMA nodes", ncores, nnodes);
        return;
    }
    emb__log(EMB_LOG_INFO, "hwloc could not load the topology; %d processors, 1 node", ncores);
#else
    emb__log(EMB_LOG_INFO, "built without hwloc; %d processors, 1 node", ncores);
#endif
}

int emb__platform_physical_cores(void)
{
    call_once(&once, init);
    return ncores;
}

int emb__platform_numa_nodes(void)
{
    call_once(&once, init);
    return nnodes;
}

int emb__platform_bind_memory(void *p, size_t bytes, EmbPlacement placement, int node)
{
    call_once(&once, init);
    if (placement == EMB_PLACE_NODE && (node < 0 || node >= nnodes))
        return emb__fail(EMB_EINVAL, "NUMA node %d does not exist (the machine has %d)", node,
                         nnodes);
    if (placement == EMB_PLACE_DEFAULT || bytes == 0)
        return 0;
#if EMB_HAVE_HWLOC
    if (!topo_ok || nnodes == 1) {
        emb__log(EMB_LOG_INFO, "one NUMA node: placement %d needs no binding", (int)placement);
        return 0;
    }
    hwloc_nodeset_t set = hwloc_bitmap_alloc();
    hwloc_membind_policy_t policy = HWLOC_MEMBIND_BIND;
    if (placement == EMB_PLACE_INTERLEAVE) {
        hwloc_bitmap_copy(set, hwloc_topology_get_topology_nodeset(topo));
        policy = HWLOC_MEMBIND_INTERLEAVE;
    } else if (placement == EMB_PLACE_NODE) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)node);
        hwloc_bitmap_copy(set, o->nodeset);
    } else { /* LOCAL: the nodes near the calling thread */
        hwloc_cpuset_t cpus = hwloc_bitmap_alloc();
        hwloc_get_cpubind(topo, cpus, HWLOC_CPUBIND_THREAD);
        hwloc_cpuset_to_nodeset(topo, cpus, set);
        hwloc_bitmap_free(cpus);
    }
    if (hwloc_set_area_membind(topo, p, bytes, set, policy, HWLOC_MEMBIND_BYNODESET) != 0)
        emb__log(EMB_LOG_WARN, "hwloc could not bind %zu bytes (placement %d); left unbound",
                 bytes, (int)placement);
    hwloc_bitmap_free(set);
#else
    (void)p;
    emb__log(EMB_LOG_INFO, "built without hwloc: placement %d ignored", (int)placement);
#endif
    return 0;
}

#if EMB_HAVE_HWLOC
/*
 * The scatter domains: NUMA nodes when there are several, else L3 caches when there are
 * several (the CCDs of one socket), else none (scatter is then compact).
 */
static hwloc_obj_type_t scatter_domain(int *count)
{
    const hwloc_obj_type_t types[] = {HWLOC_OBJ_NUMANODE, HWLOC_OBJ_L3CACHE, HWLOC_OBJ_PACKAGE};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        const int n = hwloc_get_nbobjs_by_type(topo, types[i]);
        if (n > 1) {
            *count = n;
            return types[i];
        }
    }
    *count = 1;
    return HWLOC_OBJ_MACHINE;
}

/* Core of thread k: compact = core k; scatter = domain k mod n, its (k / n)-th core. */
static hwloc_obj_t pin_core(int k, EmbPinning pinning)
{
    int ndom;
    const hwloc_obj_type_t type = scatter_domain(&ndom);
    if (pinning == EMB_PIN_SCATTER && ndom > 1) {
        hwloc_obj_t dom = hwloc_get_obj_by_type(topo, type, (unsigned)(k % ndom));
        const int in = dom ? hwloc_get_nbobjs_inside_cpuset_by_type(topo, dom->cpuset,
                                                                    HWLOC_OBJ_CORE) : 0;
        if (in > 0)
            return hwloc_get_obj_inside_cpuset_by_type(topo, dom->cpuset, HWLOC_OBJ_CORE,
                                                       (unsigned)((k / ndom) % in));
    }
    return hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned)(k % ncores));
}
#endif

void emb__platform_pin_thread(int k, EmbPinning pinning)
{
    call_once(&once, init);
    if (pinning == EMB_PIN_NONE)
        return;
#if EMB_HAVE_HWLOC
    if (!topo_ok)
        return;
    hwloc_obj_t o = pin_core(k, pinning);
    if (o && hwloc_set_cpubind(topo, o->cpuset, HWLOC_CPUBIND_THREAD) != 0)
        emb__log(EMB_LOG_INFO, "could not pin thread %d to core %u", k, o->logical_index);
#else
    (void)k;
#endif
}

int emb_num_physical_cores(void)
{
    return emb__platform_physical_cores();
}

int emb_num_numa_nodes(void)
{
    return emb__platform_numa_nodes();
}
