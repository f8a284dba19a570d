/*
 * strategy_impl.h — what the rest of the library (the multi-table update in update/) may
 * ask of a strategy: its kind and sizes, per-thread scratch, and running tasks on its
 * threads. OpenMP lives only behind emb__strategy_run (threads.c), never in callers.
 */
#ifndef EMB_STRATEGY_IMPL_H
#define EMB_STRATEGY_IMPL_H

#include "embtables/strategy.h"

typedef enum EmbStrategyKind {
    EMB_STRATEGY_SEQUENTIAL = 0,
    EMB_STRATEGY_PARALLEL = 1,
    EMB_STRATEGY_PREALLOC_CONCAT = 2,
    EMB_STRATEGY_CUSTOM = 3,
} EmbStrategyKind;

EmbStrategyKind emb__strategy_kind(const EmbStrategy *s);
/* Splits per table for the update (1 for sequential and parallel). */
int emb__strategy_num_splits(const EmbStrategy *s);
/*
 * Splits per table for an update of @ntables tables: num_splits, except that a
 * prealloc-concat strategy whose num_splits was left at 0 (auto) splits no table when there
 * are at least 4 tables per thread (whole tables balance the threads; splitting a table
 * costs an extra pass over its ids).
 */
int emb__strategy_update_splits(const EmbStrategy *s, int64_t ntables);
/* The user callbacks and user data of a custom strategy (NULL otherwise). */
const EmbStrategyCallbacks *emb__strategy_callbacks(const EmbStrategy *s, void **user);

/*
 * Makes sure every thread of the strategy has at least @bytes of scratch (64-byte
 * aligned). Grows, never shrinks; allocates only when more is asked than before.
 * Returns 0 or EMB_ENOMEM (nothing changed). Call before emb__strategy_run.
 */
int emb__strategy_reserve(EmbStrategy *s, size_t bytes);
/* Thread @thread's scratch (as reserved). */
void *emb__strategy_scratch(const EmbStrategy *s, int thread);

/* A task: runs task @task on thread @thread (0 <= thread < nthreads). */
typedef void (*emb_task_fn)(void *ctx, int64_t task, int thread);

/*
 * Runs tasks [0, ntasks) on the strategy's threads (pinned as asked) and returns when all
 * are done. Tasks are handed out in index order, dynamically; callers make results
 * independent of which thread runs a task.
 */
void emb__strategy_run(EmbStrategy *s, int64_t ntasks, emb_task_fn fn, void *ctx);

#endif
