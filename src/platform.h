/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * platform.h — the contract of the topology / NUMA / thread layer (hwloc behind it).
 *
 * Every function works without hwloc or on a single-node machine: the topology then falls
 * back to sysconf() (one NUMA node, online processors counted as cores), memory binding
 * becomes a no-op reported at INFO level, and pinning does nothing. Nothing here fails a
 * caller because the machine lacks a feature; only invalid requests (a node that does not
 * exist) are errors.
 */
#ifndef EMB_PLATFORM_H
#define EMB_PLATFORM_H

#include <stdatomic.h>
#include <stddef.h>

#include "embtables/common.h" /* EmbPlacement, EmbPinning */

/* Physical cores (not hardware threads) this process may use; >= 1. */
int emb__platform_physical_cores(void);

/* NUMA nodes of the machine; >= 1. */
int emb__platform_numa_nodes(void);

/*
 * Binds [p, p + bytes) to a placement before it is first touched. DEFAULT is a no-op.
 * Returns 0, or EMB_EINVAL for a node that does not exist.
 */
int emb__platform_bind_memory(void *p, size_t bytes, EmbPlacement placement, int node);
/* This machine's physical memory in bytes (SIZE_MAX when unknown). */
size_t emb__platform_memory_bytes(void);
/* Checks a placement and its node before anything is allocated; @what names the owner.
 * @return 0 or EMB_EINVAL */
int emb__placement_check(EmbPlacement placement, int node, const char *what);

/* Pins the calling thread, the k-th of a team, to a core chosen by @p pinning. */
void emb__platform_pin_thread(int k, EmbPinning pinning);

/*
 * Sleeps while *@word holds @value: returns when another thread's emb__platform_wake
 * (after it changed *@word) wakes it, at once when *@word differs, or spuriously; the
 * caller loops on its own test. A futex on Linux; elsewhere a sched_yield.
 */
void emb__platform_wait(atomic_uint *word, unsigned value);
/* Wakes every thread sleeping in emb__platform_wait on @word. */
void emb__platform_wake(atomic_uint *word);

#endif
