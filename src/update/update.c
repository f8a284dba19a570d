/*
 * update.c — emb_update (one table, calling thread) and emb_update_many (many tables on a
 * strategy's threads). Both run the two phases of plan.c; emb_update_many indexes every
 * table in parallel (phase 1: a task per table, or with several splits per table the
 * partitioned indexing of pindex.c), checks every result, and only then applies splits of
 * every table's distinct columns (phase 2), balanced by gradient rows. A distinct column
 * is always summed and updated whole by one task, so the split count and the thread that
 * runs a task never change a result.
 */
#include <stdlib.h>

#include "strategies/strategy_impl.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

#define KNOWN_FLAGS EMB_UPDATE_NONTEMPORAL

static int flags_check(unsigned flags)
{
    if (flags & ~(unsigned)KNOWN_FLAGS)
        return emb__fail(EMB_EINVAL, "update flags 0x%x have unknown bits", flags);
    return 0;
}

/* Makes room for two rows of @D floats in the indexer's own scratch. */
static int indexer_scratch(EmbIndexer *ix, int32_t D)
{
    if (ix->scratch_d >= D)
        return 0;
    float *s = emb__aligned_alloc(EMB_ALIGN, 2 * (size_t)D * sizeof(float));
    if (!s)
        return emb__fail(EMB_ENOMEM, "out of memory for update scratch");
    emb__aligned_free(ix->scratch);
    ix->scratch = s;
    ix->scratch_d = D;
    return 0;
}

int emb_update(EmbOptimizer *opt, EmbTable *table, const EmbGrad *grad, EmbIndexer *ix,
               unsigned flags)
{
    EMB_CHECK_NULL(opt);
    EMB_CHECK_NULL(table);
    EMB_CHECK_NULL(grad);
    EMB_CHECK_NULL(ix);
    int r = flags_check(flags);
    EmbPlan plan = {.table = table, .grad = grad, .ix = ix};
    r = r ? r : emb__plan_index(&plan);
    r = r ? r : indexer_scratch(ix, table->featuresize);
    EmbOptState *st = NULL;
    r = r ? r : emb__optimizer_state(opt, table, &st);
    if (r)
        return r;
    EmbOptimKernels k;
    emb__optim_select(&k);
    emb__plan_optimizer(opt, st, &plan, &k, flags);
    emb__plan_apply(&plan, 0, ix->ndistinct, ix->scratch);
    if (flags & EMB_UPDATE_NONTEMPORAL)
        emb__sfence();
    st->step++;
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
            return emb__fail(EMB_ENULL, "emb_update_many: table, grad or indexer %lld is NULL",
                             (long long)i);
        for (int64_t j = 0; j < i; j++)
            if (tables[j] == tables[i] || indexers[j] == indexers[i])
                return emb__fail(EMB_EINVAL, "emb_update_many: entries %lld and %lld share a "
                                 "table or an indexer", (long long)j, (long long)i);
    }
    return flags_check(flags);
}

static int reserve_plans(EmbOptimizer *o, int64_t n)
{
    if (n <= o->plan_cap)
        return 0;
    EmbPlan *p = realloc(o->plans, (size_t)n * sizeof *p);
    if (!p)
        return emb__fail(EMB_ENOMEM, "out of memory for %lld update plans", (long long)n);
    o->plans = p;
    o->plan_cap = n;
    return 0;
}

typedef struct ManyCtx {
    EmbPlan *plans;
    EmbStrategy *s;
    int64_t nsplits;
    unsigned flags;
} ManyCtx;

static void index_task(void *vctx, int64_t task, int thread)
{
    (void)thread;
    ManyCtx *c = vctx;
    c->plans[task].rc = emb__plan_index(&c->plans[task]);
}

static void apply_task(void *vctx, int64_t task, int thread)
{
    const ManyCtx *c = vctx;
    const EmbPlan *p = &c->plans[task / c->nsplits];
    const int64_t sp = task % c->nsplits;
    const int64_t d0 = emb__plan_split(p, sp, c->nsplits);
    const int64_t d1 = emb__plan_split(p, sp + 1, c->nsplits);
    if (d0 < d1)
        emb__plan_apply(p, d0, d1, emb__strategy_scratch(c->s, thread));
    if (c->flags & EMB_UPDATE_NONTEMPORAL)
        emb__sfence();
}

static void chunk_task(void *vctx, int64_t task, int thread)
{
    (void)thread;
    ManyCtx *c = vctx;
    emb__pindex_chunk(&c->plans[task / c->nsplits], (int)(task % c->nsplits));
}

static void scatter_task(void *vctx, int64_t task, int thread)
{
    (void)thread;
    ManyCtx *c = vctx;
    emb__pindex_scatter(&c->plans[task / c->nsplits], (int)(task % c->nsplits));
}

static void group_task(void *vctx, int64_t task, int thread)
{
    (void)thread;
    ManyCtx *c = vctx;
    emb__pindex_group(&c->plans[task / c->nsplits], (int)(task % c->nsplits));
}

/* Phase 1 with every table cut into nsplits partitions (checks first, on this thread). */
static int index_partitioned(ManyCtx *c, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const int r = emb__pindex_prepare(&c->plans[i], (int)c->nsplits);
        if (r)
            return r;
    }
    emb__strategy_run(c->s, n * c->nsplits, chunk_task, c);
    for (int64_t i = 0; i < n; i++) {
        const int r = emb__pindex_offsets(&c->plans[i]);
        if (r)
            return r;
    }
    emb__strategy_run(c->s, n * c->nsplits, scatter_task, c);
    emb__strategy_run(c->s, n * c->nsplits, group_task, c);
    for (int64_t i = 0; i < n; i++)
        emb__pindex_finish(&c->plans[i]);
    return 0;
}

/* Phase 1 on the strategy's threads; a failure is re-run here for its message. */
static int index_all(ManyCtx *c, int64_t n)
{
    if (c->nsplits > 1)
        return index_partitioned(c, n);
    emb__strategy_run(c->s, n, index_task, c);
    for (int64_t i = 0; i < n; i++)
        if (c->plans[i].rc) {
            const int r = emb__plan_index(&c->plans[i]);
            return r ? r : c->plans[i].rc;
        }
    return 0;
}

/* Optimizer state of every table (created first, as creating may move the array). */
static int plan_all(EmbOptimizer *opt, EmbPlan *plans, int64_t n, unsigned flags)
{
    EmbOptState *st;
    for (int64_t i = 0; i < n; i++) {
        const int r = emb__optimizer_state(opt, plans[i].table, &st);
        if (r)
            return r;
    }
    EmbOptimKernels k;
    emb__optim_select(&k);
    for (int64_t i = 0; i < n; i++) {
        emb__optimizer_state(opt, plans[i].table, &st);
        emb__plan_optimizer(opt, st, &plans[i], &k, flags);
    }
    return 0;
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
    int r = many_check(opt, tables, grads, n, indexers, flags);
    r = r ? r : reserve_plans(opt, n);
    if (r)
        return r;
    int32_t dmax = 1;
    for (int64_t i = 0; i < n; i++) {
        opt->plans[i] = (EmbPlan){.table = tables[i], .grad = grads[i], .ix = indexers[i]};
        dmax = EMB_MAX(dmax, tables[i]->featuresize);
    }
    ManyCtx c = {.plans = opt->plans, .s = strategy, .flags = flags,
                 .nsplits = EMB_MIN(emb__strategy_update_splits(strategy, n), EMB_MAX_PARTS)};
    r = index_all(&c, n);
    if (!r && emb__strategy_reserve(strategy, 2 * (size_t)dmax * sizeof(float)))
        r = emb__fail(EMB_ENOMEM, "out of memory for update scratch");
    r = r ? r : plan_all(opt, opt->plans, n, flags);
    if (r)
        return r;
    emb__strategy_run(strategy, n * c.nsplits, apply_task, &c);
    for (int64_t i = 0; i < n; i++) {
        EmbOptState *st;
        emb__optimizer_state(opt, tables[i], &st);
        st->step++;
    }
    return 0;
}
