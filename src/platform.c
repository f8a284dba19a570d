/* SPDX-License-Identifier: BSD-2-Clause */
/* platform.c — topology, NUMA binding and pinning through hwloc, with sysconf fallbacks. */
#include <limits.h>
#include <sched.h>
#include <pthread.h> /* pthread_once: ThreadSanitizer sees it (not C11 call_once) */
#include <unistd.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#include "internal.h"
#include "platform.h"

#if EMB_HAVE_HWLOC
#include <hwloc.h>

static hwloc_topology_t topo;
static hwloc_cpuset_t allowed; /* the CPUs this process may run on, at first use */
static int topo_ok;
#endif
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int ncores = 1, nnodes = 1;

/* Processors this process may run on (its affinity mask), without hwloc. */
static int allowed_processors(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

#if EMB_HAVE_HWLOC
/* The @idx-th object of @type that has a CPU in @set, or NULL; *count = how many have. */
static hwloc_obj_t nth_in(hwloc_obj_type_t type, hwloc_const_cpuset_t set, int idx, int *count)
{
    hwloc_obj_t o = NULL, hit = NULL;
    int n = 0;
    while ((o = hwloc_get_next_obj_by_type(topo, type, o)))
        if (o->cpuset && hwloc_bitmap_intersects(o->cpuset, set) && n++ == idx)
            hit = o;
    if (count)
        *count = n;
    return hit;
}

/* Loads the topology; the cores counted are those the process may run on (taskset,
 * cgroups), so a restricted process gets as many threads as it has cores. */
static bool load_topology(void)
{
    if (hwloc_topology_init(&topo) != 0)
        return false;
    if (hwloc_topology_load(topo) != 0 || !(allowed = hwloc_bitmap_alloc())) {
        hwloc_topology_destroy(topo);
        return false;
    }
    if (hwloc_get_cpubind(topo, allowed, HWLOC_CPUBIND_PROCESS) != 0 ||
        hwloc_bitmap_iszero(allowed))
        hwloc_bitmap_copy(allowed, hwloc_topology_get_allowed_cpuset(topo));
    int c = 0;
    nth_in(HWLOC_OBJ_CORE, allowed, -1, &c);
    const int m = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    ncores = c > 0 ? c : ncores;
    nnodes = m > 0 ? m : 1;
    return true;
}
#endif

static void init(void)
{
    ncores = allowed_processors();
#if EMB_HAVE_HWLOC
    if ((topo_ok = load_topology())) {
        emb__log(EMB_LOG_INFO, "hwloc: %d usable cores, %d NUMA nodes", ncores, nnodes);
        return;
    }
    emb__log(EMB_LOG_INFO, "hwloc could not load the topology; %d processors, 1 node", ncores);
#else
    emb__log(EMB_LOG_INFO, "built without hwloc; %d processors, 1 node", ncores);
#endif
}

int emb__platform_physical_cores(void)
{
    pthread_once(&once, init);
    return ncores;
}

int emb__platform_numa_nodes(void)
{
    pthread_once(&once, init);
    return nnodes;
}

size_t emb__platform_memory_bytes(void)
{
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0 || (unsigned long)pages > SIZE_MAX / (unsigned long)page)
        return SIZE_MAX;
    return (size_t)pages * (size_t)page;
}

int emb__placement_check(EmbPlacement placement, int node, const char *what)
{
    pthread_once(&once, init);
    if (placement < EMB_PLACE_DEFAULT || placement > EMB_PLACE_NODE)
        return emb__fail(EMB_EINVAL, "placement %d is not DEFAULT, LOCAL, INTERLEAVE or NODE (%s)",
                         (int)placement, what);
    if (placement == EMB_PLACE_NODE && (node < 0 || node >= nnodes))
        return emb__fail(EMB_EINVAL, "NUMA node %d does not exist (the machine has %d) (%s)",
                         node, nnodes, what);
    return 0;
}

int emb__platform_bind_memory(void *p, size_t bytes, EmbPlacement placement, int node)
{
    const int r = emb__placement_check(placement, node, "memory binding");
    if (r)
        return r;
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
 * The scatter domains among the usable CPUs: NUMA nodes when there are several, else L3
 * caches (the CCDs of one socket), else packages; MACHINE (one domain) when none repeats.
 */
static hwloc_obj_type_t scatter_domain(int *count)
{
    const hwloc_obj_type_t types[] = {HWLOC_OBJ_NUMANODE, HWLOC_OBJ_L3CACHE, HWLOC_OBJ_PACKAGE};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        nth_in(types[i], allowed, -1, count);
        if (*count > 1)
            return types[i];
    }
    *count = 1;
    return HWLOC_OBJ_MACHINE;
}

/* Core of thread k among the usable ones: compact = core k; scatter = domain k mod n,
 * its (k / n)-th usable core. */
static hwloc_obj_t pin_core(int k, EmbPinning pinning)
{
    int ndom, in = 0;
    const hwloc_obj_type_t type = scatter_domain(&ndom);
    if (pinning == EMB_PIN_SCATTER && ndom > 1) {
        hwloc_obj_t dom = nth_in(type, allowed, k % ndom, NULL);
        hwloc_cpuset_t set = hwloc_bitmap_alloc();
        hwloc_obj_t core = NULL;
        if (dom && set && hwloc_bitmap_and(set, dom->cpuset, allowed) == 0) {
            nth_in(HWLOC_OBJ_CORE, set, -1, &in);
            core = in > 0 ? nth_in(HWLOC_OBJ_CORE, set, (k / ndom) % in, NULL) : NULL;
        }
        hwloc_bitmap_free(set);
        if (core)
            return core;
    }
    return nth_in(HWLOC_OBJ_CORE, allowed, k % ncores, NULL);
}

/* Binds the calling thread to the usable CPUs of core @o. */
static void bind_to(hwloc_obj_t o, int k)
{
    hwloc_cpuset_t set = hwloc_bitmap_alloc();
    if (!set)
        return;
    hwloc_bitmap_and(set, o->cpuset, allowed);
    if (hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD) != 0)
        emb__log(EMB_LOG_INFO, "could not pin thread %d to core %u", k, o->logical_index);
    hwloc_bitmap_free(set);
}
#endif

void emb__platform_pin_thread(int k, EmbPinning pinning)
{
    pthread_once(&once, init);
    if (pinning == EMB_PIN_NONE)
        return;
#if EMB_HAVE_HWLOC
    hwloc_obj_t o = topo_ok ? pin_core(k, pinning) : NULL;
    if (o)
        bind_to(o, k);
#else
    (void)k;
#endif
}

/* The futex word is the atomic's object representation (an unsigned int: 32 bits on every
   Linux target), as libgomp and glibc use theirs. */
void emb__platform_wait(atomic_uint *word, unsigned value)
{
#if defined(__linux__) && defined(SYS_futex)
    syscall(SYS_futex, (void *)word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
#else
    (void)word;
    (void)value;
    sched_yield();
#endif
}

void emb__platform_wake(atomic_uint *word)
{
#if defined(__linux__) && defined(SYS_futex)
    syscall(SYS_futex, (void *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#else
    (void)word;
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
