/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * threads.c — the thread launcher: the one place of the library with OpenMP pragmas.
 *
 * A run is one OpenMP parallel region whose threads take task indices from a shared
 * counter (dynamic hand-out in index order, so the caller decides the order: largest
 * first, chunk-major, ...). The caller is thread 0. OpenMP keeps its team between
 * regions, so a thread is pinned the first time it runs for a given (index, pinning) and
 * not again. Without OpenMP, or for one thread or one task, the tasks run on the caller in
 * order.
 *
 * A run of phases (emb__threads_run_phases) is one region too: before each phase the
 * caller's thread runs the serial step that says the phase's tasks, while the others wait
 * at a barrier of this file (a bounded spin, then asleep on a futex), so that a training
 * step's three parallel phases wake the team once. The team then leaves the region and
 * waits between calls as the user's OMP_WAIT_POLICY says.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "platform.h"
#include "strategies/strategy_impl.h"

#if EMB_HAVE_OPENMP
#include <omp.h>
#endif

/* How long a thread spins at a barrier before it sleeps: about what a sleep's wake-up costs
 * (45-50 us on the 2-core machine), so that waiting costs at most twice the better choice
 * in hindsight; a serial step between phases is a few us. Bounded by the clock, not by a
 * count of polls: a pause takes 24 ns on this Zen 5 (20000 polls, meant as 20-50 us, spun
 * 0.5 ms), a few ns on other cores. Then the thread sleeps (a futex), and does not poll
 * with sched_yield: on a machine whose cores other programs keep busy, a long spin held
 * the core the awaited thread needed. A 2-thread step of a 1M x 64 table, 0.79 ms when
 * quiet, took 4.4 ms at a load of 2-2.2 on 2 cores with the 0.5 ms spin and yields,
 * 1.7 ms with a 50 us spin (1.6 ms with 20 us). */
#define SPIN_NS 50000
#define POLLS_PER_CLOCK 16 /* polls between two reads of the clock */

/* (index + 1) * 4 + pinning this OS thread was last pinned as; 0: never. */
static _Thread_local int pinned_as;

static void pin(int k, EmbPinning pinning)
{
    if (pinning == EMB_PIN_NONE)
        return;
    const int key = (k + 1) * 4 + (int)pinning;
    if (pinned_as == key)
        return;
    emb__platform_pin_thread(k, pinning);
    pinned_as = key;
}

static void run_serial(EmbPinning pinning, int64_t ntasks, emb_task_fn fn, void *ctx)
{
    pin(0, pinning);
    for (int64_t i = 0; i < ntasks; i++)
        fn(ctx, i, 0);
}

#if EMB_HAVE_OPENMP
static void run_team(int nthreads, EmbPinning pinning, int64_t ntasks, emb_task_fn fn,
                     void *ctx)
{
    int64_t next = 0;
#pragma omp parallel num_threads(nthreads) default(none) \
    shared(next, pinning, ntasks, fn, ctx)
    {
        const int k = omp_get_thread_num();
        pin(k, pinning);
        for (;;) {
            int64_t i;
#pragma omp atomic capture
            i = next++;
            if (i >= ntasks)
                break;
            fn(ctx, i, k);
        }
    }
}
#endif

/* Phases [0, nphases) on the caller: each serial step, then its tasks in order. */
static void phases_serial(EmbPinning pinning, int nphases, emb_step_fn step, void *ctx)
{
    pin(0, pinning);
    for (int p = 0; p < nphases; p++) {
        emb_task_fn fn = NULL;
        const int64_t ntasks = step(ctx, p, &fn);
        if (ntasks < 0)
            return;
        for (int64_t i = 0; i < ntasks; i++)
            fn(ctx, i, 0);
    }
}

#if EMB_HAVE_OPENMP
/* A sense-counting barrier of n threads: arrivals counted, the last one bumps gen and
   wakes the sleepers, if any. */
typedef struct Barrier {
    atomic_int count;
    atomic_uint gen;
    atomic_int sleepers;
} Barrier;

static int64_t now_ns(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if EMB_ARCH_X86 && defined(__GNUC__)
    __asm__ volatile("pause");
#endif
}

/* The sleepers' count and gen are sequentially consistent on both sides: a waiter that
 * counted itself and still saw the old gen is seen by the last arrival, which wakes it (a
 * wake before the futex sleeps finds gen changed, and the futex returns at once). */
static void barrier_wait(Barrier *b, int n)
{
    const unsigned g = atomic_load_explicit(&b->gen, memory_order_acquire);
    if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) == n - 1) {
        atomic_store_explicit(&b->count, 0, memory_order_relaxed);
        atomic_fetch_add(&b->gen, 1);
        if (atomic_load(&b->sleepers) > 0)
            emb__platform_wake(&b->gen);
        return;
    }
    const int64_t t0 = now_ns();
    for (long i = 1;; i++) {
        if (atomic_load_explicit(&b->gen, memory_order_acquire) != g)
            return;
        if (i % POLLS_PER_CLOCK == 0 && now_ns() - t0 > SPIN_NS)
            break;
        cpu_relax();
    }
    atomic_fetch_add(&b->sleepers, 1);
    while (atomic_load(&b->gen) == g)
        emb__platform_wait(&b->gen, g);
    atomic_fetch_sub(&b->sleepers, 1);
}

/* What thread 0's serial step hands the team: the phase's tasks and the counter. */
typedef struct PhaseRun {
    Barrier bar;
    atomic_llong next;
    int64_t ntasks;
    emb_task_fn fn;
} PhaseRun;

/* Thread @k's part of one phase: tasks from the shared counter. */
static void phase_tasks(PhaseRun *r, void *ctx, int k)
{
    for (;;) {
        const int64_t i = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
        if (i >= r->ntasks)
            return;
        r->fn(ctx, i, k);
    }
}

static void phases_team(int nthreads, EmbPinning pinning, int nphases, emb_step_fn step,
                        void *ctx)
{
    PhaseRun r = {.ntasks = 0};
#pragma omp parallel num_threads(nthreads) default(none) \
    shared(r, nthreads, pinning, nphases, step, ctx)
    {
        const int k = omp_get_thread_num();
        pin(k, pinning);
        for (int p = 0; p < nphases; p++) {
            if (k == 0) {
                r.ntasks = step(ctx, p, &r.fn);
                atomic_store_explicit(&r.next, 0, memory_order_relaxed);
            }
            barrier_wait(&r.bar, nthreads); /* the step's results seen by every thread */
            if (r.ntasks < 0)
                break;
            phase_tasks(&r, ctx, k);
            barrier_wait(&r.bar, nthreads); /* every task done before the next step */
        }
    }
}
#endif

void emb__threads_run_phases(int nthreads, EmbPinning pinning, int nphases, emb_step_fn step,
                             void *ctx)
{
#if EMB_HAVE_OPENMP
    if (nthreads > 1 && !omp_in_parallel()) {
        phases_team(nthreads, pinning, nphases, step, ctx);
        return;
    }
#else
    (void)nthreads; /* one thread without OpenMP */
#endif
    phases_serial(pinning, nphases, step, ctx);
}

void emb__threads_run(int nthreads, EmbPinning pinning, int64_t ntasks, emb_task_fn fn,
                      void *ctx)
{
    if (ntasks <= 0)
        return;
    const int n = ntasks < nthreads ? (int)ntasks : nthreads;
#if EMB_HAVE_OPENMP
    if (n > 1 && !omp_in_parallel()) {
        run_team(n, pinning, ntasks, fn, ctx);
        return;
    }
#else
    (void)n;
#endif
    run_serial(pinning, ntasks, fn, ctx);
}
