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
 */
#include "platform.h"
#include "strategies/strategy_impl.h"

#if EMB_HAVE_OPENMP
#include <omp.h>
#endif

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
