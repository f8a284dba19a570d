/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * update_many.c — the backward half of an ensemble step: emb_maplookup_backward records
 * one pullback per table from its slice of the outputs' gradient (layout: outputs.c), and
 * emb_update_many updates many tables under a strategy.
 *
 * emb_maplookup_backward checks everything but the ids, which every consumer of a pullback
 * checks before it writes (emb_update_many on its threads: a serial pass over every id of
 * the step on the caller would not scale).
 *
 * emb_update_many runs the two phases of update/plan.c (see update_impl.h) on the
 * strategy's threads: it indexes every table in parallel (phase 1: a task per table, or
 * with several splits per table the partitioned indexing of update/pindex.c), checks every
 * result, and only then applies splits of every table's distinct columns (phase 2; per
 * partition when partitioned), balanced by gradient rows. A distinct column is always summed and updated whole by one
 * task, so the split count and the thread that runs a task never change a result. The
 * per-table plans and the per-thread scratch belong to the strategy; each indexer holds its
 * own table's grouping; the optimizer holds only state.
 */
#include <string.h>
#include <time.h>

#include "strategies/strategy_impl.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

int emb_maplookup_backward(EmbTable *const *tables, int64_t ntables, const EmbBatch *batches,
                           const EmbPooling *poolings, const EmbOutputs *grad_outputs,
                           EmbGrad *const *grads)
{
    EMB_CHECK_NULL(tables);
    EMB_CHECK_NULL(batches);
    EMB_CHECK_NULL(grad_outputs);
    EMB_CHECK_NULL(grads);
    if (ntables <= 0)
        return emb__fail(EMB_EINVAL, "emb_maplookup_backward: ntables %lld <= 0",
                         (long long)ntables);
    for (int64_t i = 0; i < ntables; i++)
        if (!grads[i])
            return emb__fail(EMB_ENULL, "emb_maplookup_backward: grads[%lld] is NULL",
                             (long long)i);
    int r = emb__outputs_check("emb_maplookup_backward", tables, ntables, batches,
                               grad_outputs);
    int64_t col = 0;
    for (int64_t i = 0; i < ntables && !r; i++) { /* every table checked, nothing recorded */
        int64_t stride;
        const float *dy = emb__outputs_next(grad_outputs, tables, i, &col, &stride);
        r = emb__lookup_backward_check(tables[i], &batches[i], poolings ? &poolings[i] : NULL,
                                       dy, stride, false);
    }
    if (r)
        return r;
    col = 0;
    for (int64_t i = 0; i < ntables; i++) {
        int64_t stride;
        const float *dy = emb__outputs_next(grad_outputs, tables, i, &col, &stride);
        emb__lookup_backward_record(tables[i], &batches[i], poolings ? &poolings[i] : NULL, dy,
                                    stride, grads[i]);
    }
    return 0;
}

/* Arguments of emb_update_many that need no strategy. */
static int many_check(EmbOptimizer *opt, EmbTable *const *tables, const EmbGrad *const *grads,
                      int64_t n, EmbIndexer *const *indexers, unsigned flags)
{
    EMB_CHECK_NULL(opt);
    EMB_CHECK_NULL(tables);
    EMB_CHECK_NULL(grads);
    EMB_CHECK_NULL(indexers);
    if (n <= 0)
        return emb__fail(EMB_EINVAL, "emb_update_many: n %lld <= 0", (long long)n);
    for (int64_t i = 0; i < n; i++) {
        if (!tables[i] || !grads[i] || !indexers[i])
            return emb__fail(EMB_ENULL, "emb_update_many: %s[%lld] is NULL",
                             !tables[i] ? "tables" : !grads[i] ? "grads" : "indexers",
                             (long long)i);
        for (int64_t j = 0; j < i; j++)
            if (tables[j] == tables[i] || indexers[j] == indexers[i])
                return emb__fail(EMB_EINVAL, "emb_update_many: entries %lld and %lld share a "
                                 "table or an indexer", (long long)j, (long long)i);
    }
    return emb__update_flags_check(flags);
}

/* The per-table plans of a call, in the strategy's buffer; NULL after EMB_ENOMEM. */
static EmbPlan *plans_of(EmbStrategy *s, int64_t n)
{
    if ((uint64_t)n > SIZE_MAX / sizeof(EmbPlan)) {
        emb__fail(EMB_EOVERFLOW, "emb_update_many: %lld tables overflow the plan", (long long)n);
        return NULL;
    }
    return emb__growbuf(&s->updates, (size_t)n * sizeof(EmbPlan));
}

/* Apply tasks per partition of a partitioned table: finer than the partitions, so that a
 * thread the system holds up (or one hot column) delays the step by less. Any count gives
 * the same bits: a distinct column is always applied whole by one task. */
#define APPLY_PER_PART 4

/* Where a thread's global-norm accumulator starts in its scratch (after the plan's rows of @dmax). */
#define NORM_ACC_OFFSET(dmax) ((EMB_PLAN_SCRATCH_ROWS * (size_t)(dmax) * sizeof(float) + 63) / 64 * 64)

typedef EmbManyCall ManyCtx;

enum { T_SERIAL = 0, T_PULLBACK = 1, T_INDEX = 2, T_APPLY = 3 };

static double now(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Adds the time since the last lap to phase @k. */
static void lap(ManyCtx *c, int k)
{
    const double t = now();
    c->times[k] += t - c->t;
    c->t = t;
}

static void index_task(void *vctx, int64_t task, int thread)
{
    (void)thread;
    ManyCtx *c = vctx;
    c->plans[task].rc = emb__plan_index(&c->plans[task]);
}

/* Task = (table, partition, split): applies the split's distinct columns in place in the
 * partition's list, then copies their ids to the indexer's compacted result. */
static void apply_task(void *vctx, int64_t task, int thread)
{
    const ManyCtx *c = vctx;
    const int64_t per_table = c->nsplits * c->asplits;
    const EmbPlan *p = &c->plans[task / per_table];
    const int part = (int)(task % per_table / c->asplits);
    int64_t d0, d1;
    emb__pindex_apply_range(p, part, task % c->asplits, c->asplits, &d0, &d1);
    if (d0 < d1) {
        emb__plan_apply(p, d0, d1, emb__strategy_scratch(c->s, thread));
        emb__pindex_compact(p, part, d0, d1);
    }
    if (c->flags & EMB_UPDATE_NONTEMPORAL)
        emb__sfence();
}

/* The global norm's task: as apply_task's split, its Σ g² into the thread's accumulator
   (after its 3 * dmax floats of scratch). */
static float *norm_scratch(const ManyCtx *c, int thread, EmbNormAcc **acc)
{
    char *s = emb__strategy_scratch(c->s, thread);
    *acc = (EmbNormAcc *)(void *)(s + NORM_ACC_OFFSET(c->dmax));
    return (float *)(void *)s;
}

static void norm_task(void *vctx, int64_t task, int thread)
{
    const ManyCtx *c = vctx;
    const int64_t per_table = c->nsplits * c->asplits;
    const EmbPlan *p = &c->plans[task / per_table];
    int64_t d0, d1;
    emb__pindex_apply_range(p, (int)(task % per_table / c->asplits), task % c->asplits,
                            c->asplits, &d0, &d1);
    EmbNormAcc *acc;
    float *scratch = norm_scratch(c, thread, &acc);
    emb__clip_norm_range(p, d0, d1, scratch, acc);
}

/* Whether the call has a global norm to compute before its apply. */
static bool global_norm(const ManyCtx *c)
{
    return c->opt->cfg.max_global_norm > 0.0f;
}

/* Every thread's accumulator zeroed, before the norm tasks. */
static void norm_start(ManyCtx *c)
{
    for (int t = 0; t < c->s->nthreads; t++) {
        EmbNormAcc *acc;
        norm_scratch(c, t, &acc);
        *acc = (EmbNormAcc){{0}, 0.0};
    }
}

/* The threads' accumulators merged in thread order (integer sums: any order, same bits)
   and the global factor set in every plan. */
static void norm_finish(ManyCtx *c)
{
    EmbNormAcc total = {{0}, 0.0}, *acc;
    for (int t = 0; t < c->s->nthreads; t++) {
        norm_scratch(c, t, &acc);
        emb__norm_acc_merge(&total, acc);
    }
    const float scale = emb__clip_global_scale(&total, c->opt->cfg.max_global_norm);
    for (int64_t i = 0; i < c->n; i++) {
        c->plans[i].clip_scale = scale;
        c->plans[i].summed = c->plans[i].clip && c->plans[i].keep_sums; /* kept sums */
    }
}

static void chunk_task(void *vctx, int64_t task, int thread)
{
    (void)thread;
    ManyCtx *c = vctx;
    emb__pindex_chunk(&c->plans[task / c->nsplits], (int)(task % c->nsplits));
}

static void group_task(void *vctx, int64_t task, int thread)
{
    (void)thread;
    ManyCtx *c = vctx;
    emb__pindex_group(&c->plans[task / c->nsplits], (int)(task % c->nsplits));
}

/* Phases of the indexing: chunk and group with partitions, else one task per table. */
static int index_phases(const ManyCtx *c)
{
    return c->nsplits > 1 ? 2 : 1;
}

static int64_t fail_step(ManyCtx *c, int r)
{
    c->rc = r;
    return -1;
}

/* The serial step before indexing phase @phase (checks and planning on the caller), then
 * the phase's tasks; -1 on failure (c->rc). */
static int64_t index_step(ManyCtx *c, int phase, emb_task_fn *fn)
{
    const int64_t n = c->n;
    if (c->nsplits == 1) {
        lap(c, T_SERIAL);
        *fn = index_task;
        return n;
    }
    if (phase == 0) {
        for (int64_t i = 0; i < n; i++) {
            const int r = emb__pindex_prepare(&c->plans[i], (int)c->nsplits);
            if (r)
                return fail_step(c, r);
        }
        lap(c, T_SERIAL);
        *fn = chunk_task;
        return n * c->nsplits;
    }
    lap(c, T_PULLBACK);
    for (int64_t i = 0; i < n; i++) {
        int r = emb__pindex_checked(&c->plans[i]);
        r = r ? r : emb__pindex_offsets(&c->plans[i]);
        if (r)
            return fail_step(c, r);
    }
    lap(c, T_SERIAL);
    *fn = group_task;
    return n * c->nsplits;
}

/* After the indexing's last phase: the partitions finished, or each table's result
 * checked (a failure is re-run here for its message). */
static int index_finish(ManyCtx *c)
{
    lap(c, T_INDEX);
    if (c->nsplits > 1) {
        for (int64_t i = 0; i < c->n; i++)
            emb__pindex_finish(&c->plans[i]);
        lap(c, T_SERIAL);
        return 0;
    }
    for (int64_t i = 0; i < c->n; i++)
        if (c->plans[i].rc) {
            const int r = emb__plan_index(&c->plans[i]);
            return r ? r : c->plans[i].rc;
        }
    return 0;
}

/* Optimizer state of every table, looked up (or created) once per table: by index while
   creating may move the array, then the plans point at it (plans[i].ost_index). */
static int plan_all(EmbOptimizer *opt, EmbPlan *plans, int64_t n, unsigned flags)
{
    EmbOptState *st;
    for (int64_t i = 0; i < n; i++) {
        const int r = emb__optimizer_state(opt, plans[i].table, &st);
        if (r)
            return r;
        plans[i].ost_index = st - opt->states;
    }
    for (int64_t i = 0; i < n; i++)
        emb__plan_optimizer(opt, &opt->states[plans[i].ost_index], &plans[i], flags);
    return 0;
}

/* What can fail after the indexing: the scratch, the optimizer states (created when
 * missing) and the planned tables' prepare (table_ops.h: update_prepare; the ones prepared
 * before a failure cancelled). */
static int prepare_rest(ManyCtx *c)
{
    if (emb__strategy_reserve(c->s, NORM_ACC_OFFSET(c->dmax) + sizeof(EmbNormAcc)))
        return emb__fail(EMB_ENOMEM, "out of memory for update scratch");
    int r = plan_all(c->opt, c->plans, c->n, c->flags);
    for (int64_t i = 0; i < c->n && !r && global_norm(c); i++)
        r = emb__clip_sums_reserve(&c->plans[i]);
    int64_t prepared = 0;
    for (; prepared < c->n && !r; prepared++) /* every table prepared before any commit */
        r = emb__plan_rows_prepare(&c->plans[prepared]);
    for (int64_t i = 0; r && i < prepared - 1; i++) /* the ones before the failure */
        emb__plan_rows_cancel(&c->plans[i]);
    return r;
}

/* The planned tables' commits (dynamic: rows created), then the apply's tasks (cannot
   fail). */
static int64_t apply_step(ManyCtx *c, emb_task_fn *fn)
{
    for (int64_t i = 0; i < c->n; i++)
        emb__plan_rows_commit(&c->plans[i]);
    lap(c, T_SERIAL);
    *fn = apply_task;
    return c->n * c->nsplits * c->asplits;
}

/* The global norm's tasks (the apply's splits), after the preparation. */
static int64_t norm_step(ManyCtx *c, emb_task_fn *fn)
{
    norm_start(c);
    *fn = norm_task;
    return c->n * c->nsplits * c->asplits;
}

/* The serial steps of emb_update_many's one region: the indexing's phases, then (@phase ==
 * index_phases) the rest of the preparation and the apply, or with a global norm the
 * norm's tasks, then (the next phase) the apply. */
static int64_t many_step(void *vctx, int phase, emb_task_fn *fn)
{
    ManyCtx *c = vctx;
    if (phase < index_phases(c))
        return index_step(c, phase, fn);
    if (phase > index_phases(c)) {
        norm_finish(c);
        return apply_step(c, fn);
    }
    int r = index_finish(c);
    r = r ? r : prepare_rest(c);
    if (r)
        return fail_step(c, r);
    return global_norm(c) ? norm_step(c, fn) : apply_step(c, fn);
}

/*
 * The call's context, checked: the plans, the thread and split counts. Then, with @apply,
 * everything in one run of phases (emb_update_many); else the preparation only, which
 * writes no table and no state's values (emb_update_many_prepare).
 */
static int many_run(EmbStrategy *strategy, EmbOptimizer *opt, EmbTable *const *tables,
                    const EmbGrad *const *grads, int64_t n, EmbIndexer *const *indexers,
                    unsigned flags, bool apply, ManyCtx *c)
{
    const double t0 = now();
    int r = many_check(opt, tables, grads, n, indexers, flags);
    if (r)
        return r;
    EmbPlan *plans = plans_of(strategy, n);
    if (!plans)
        return EMB_ENOMEM;
    int32_t dmax = 1;
    double work = 0.0; /* gradient rows x featuresize x 4 bytes: the auto strategy's size */
    for (int64_t i = 0; i < n; i++) {
        plans[i] = (EmbPlan){.table = tables[i], .grad = grads[i], .ix = indexers[i]};
        dmax = EMB_MAX(dmax, tables[i]->featuresize);
        work += (double)emb__grad_max_rows(grads[i]) * tables[i]->featuresize * 4.0;
    }
    *c = (ManyCtx){.plans = plans, .s = strategy, .opt = opt, .n = n, .flags = flags, .t = t0,
                   .dmax = dmax, .nthreads = emb__strategy_update_threads(strategy, work),
                   .nsplits = EMB_MIN(emb__strategy_update_splits(strategy, n, work),
                                      EMB_MAX_PARTS)};
    c->asplits = c->nsplits > 1 ? APPLY_PER_PART : 1;
    const int64_t tasks = n * c->nsplits * (apply ? c->asplits : 1);
    emb__strategy_run_phases(strategy, (int)EMB_MIN(c->nthreads, tasks),
                             index_phases(c) + apply * (1 + global_norm(c)), many_step, c);
    if (c->rc || apply)
        return c->rc;
    r = index_finish(c);
    return r ? r : prepare_rest(c);
}

/* The steps counted and the phases' times kept, after the apply. */
static void many_done(ManyCtx *c)
{
    lap(c, T_APPLY);
    for (int64_t i = 0; i < c->n; i++) {
        emb__table_release(c->plans[i].table);
        c->opt->states[c->plans[i].ost_index].step++;
    }
    lap(c, T_SERIAL);
    memcpy(c->s->update_times, c->times, sizeof c->times);
}

/* The prepared call @c: commits the planned tables (dynamic: rows created), applies, counts the steps.
 * Allocates nothing and cannot fail. */
static void many_apply(ManyCtx *c)
{
    emb_task_fn fn = NULL;
    if (global_norm(c)) {
        const int64_t ntasks = norm_step(c, &fn);
        emb__strategy_run_on(c->s, c->nthreads, ntasks, fn, c);
        norm_finish(c);
    }
    const int64_t ntasks = apply_step(c, &fn);
    emb__strategy_run_on(c->s, c->nthreads, ntasks, fn, c);
    many_done(c);
}

int emb_update_many(EmbStrategy *strategy, EmbOptimizer *opt, EmbTable *const *tables,
                    const EmbGrad *const *grads, int64_t n, EmbIndexer *const *indexers,
                    unsigned flags)
{
    EMB_CHECK_NULL(strategy);
    void *user = NULL;
    const EmbStrategyCallbacks *cb = emb__strategy_callbacks(strategy, &user);
    if (cb) {
        if (!cb->update_many)
            return emb__fail(EMB_ENOTSUP, "the custom strategy has no update_many callback");
        return cb->update_many(user, opt, tables, grads, n, indexers, flags);
    }
    strategy->many.pending = false; /* the buffers a prepared call holds are reused */
    ManyCtx c;
    const int r = many_run(strategy, opt, tables, grads, n, indexers, flags, true, &c);
    if (r)
        return r;
    many_done(&c);
    return 0;
}

int emb_update_many_prepare(EmbStrategy *strategy, EmbOptimizer *opt, EmbTable *const *tables,
                            const EmbGrad *const *grads, int64_t n,
                            EmbIndexer *const *indexers, unsigned flags)
{
    EMB_CHECK_NULL(strategy);
    strategy->many.pending = false;
    void *user = NULL;
    const EmbStrategyCallbacks *cb = emb__strategy_callbacks(strategy, &user);
    if (cb) { /* the callback runs at the commit */
        if (!cb->update_many)
            return emb__fail(EMB_ENOTSUP, "the custom strategy has no update_many callback");
        strategy->many = (ManyCtx){.s = strategy, .opt = opt, .n = n, .flags = flags,
                                   .tables = tables, .grads = grads, .indexers = indexers,
                                   .pending = true};
        return 0;
    }
    ManyCtx c;
    const int r = many_run(strategy, opt, tables, grads, n, indexers, flags, false, &c);
    if (r)
        return r;
    c.pending = true;
    strategy->many = c;
    return 0;
}

int emb_update_many_commit(EmbStrategy *strategy)
{
    EMB_CHECK_NULL(strategy);
    if (!strategy->many.pending)
        return emb__fail(EMB_EINVAL, "emb_update_many_commit: no prepared update on the "
                         "strategy");
    ManyCtx c = strategy->many;
    strategy->many.pending = false;
    void *user = NULL;
    const EmbStrategyCallbacks *cb = emb__strategy_callbacks(strategy, &user);
    if (cb)
        return cb->update_many(user, c.opt, c.tables, c.grads, c.n, c.indexers, c.flags);
    c.t = now(); /* the time between prepare and commit is the caller's */
    many_apply(&c);
    return 0;
}

void emb_update_many_cancel(EmbStrategy *strategy)
{
    if (!strategy || !strategy->many.pending)
        return;
    strategy->many.pending = false;
    void *user = NULL;
    if (emb__strategy_callbacks(strategy, &user))
        return; /* nothing was prepared: the callback runs at the commit */
    for (int64_t i = 0; i < strategy->many.n; i++) /* what the tables reserved, dropped */
        emb__plan_rows_cancel(&strategy->many.plans[i]);
}

int emb_strategy_update_times(const EmbStrategy *strategy, EmbUpdateTimes *out)
{
    EMB_CHECK_NULL(strategy);
    EMB_CHECK_NULL(out);
    const double *t = strategy->update_times;
    *out = (EmbUpdateTimes){.serial = t[T_SERIAL], .pullback = t[T_PULLBACK],
                            .index = t[T_INDEX], .apply = t[T_APPLY]};
    return 0;
}
