/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_phases.c — what one timed iteration does, per phase, through the public API:
 *   forward     emb_maplookup(strategy) into the concatenated output (DLRM's layout)
 *   update:OPT  emb_maplookup_backward of the concat gradient, then
 *               emb_update_many(strategy, OPT) — one fused dedup + optimizer pass
 *   train:OPT   forward, then update:OPT: one training step of the embedding part
 * Everything a step needs (strategy, optimizers, gradient holders, indexers) is created
 * once per runner, so the timed iterations allocate nothing.
 */
#include <stdlib.h>
#include <string.h>

#include <embtables/update.h>

#include "emb_bench.h"

struct BenchRunner {
    const BenchConfig *cfg;
    BenchWorkload *w;
    int strategy, threads;
    EmbStrategy *s;
    EmbOutputs outputs, grad_outputs;
    EmbGrad **grads;      /* ntables */
    EmbIndexer **indexers;
};

static int make_strategy(BenchRunner *r)
{
    EmbStrategyOptions o = {.nthreads = r->threads};
    switch (r->strategy) {
    case STRAT_SEQUENTIAL: return emb_strategy_sequential(&r->s);
    case STRAT_PARALLEL: return emb_strategy_parallel(&r->s, &o);
    case STRAT_AUTO: return emb_strategy_auto(&r->s, &o);
    default: return emb_strategy_prealloc_concat(&r->s, &o);
    }
}

static int make_update_state(BenchRunner *r)
{
    const int n = r->w->ntables;
    r->grads = calloc((size_t)n, sizeof *r->grads);
    r->indexers = calloc((size_t)n, sizeof *r->indexers);
    if (!r->grads || !r->indexers)
        return EMB_ENOMEM;
    for (int t = 0; t < n; t++) {
        int rc = emb_grad_create(&r->grads[t]);
        if (!rc)
            rc = emb_indexer_create(&r->indexers[t]);
        if (rc)
            return rc;
    }
    return 0;
}

static void release_update(BenchRunner *r)
{
    for (int t = 0; r->grads && r->indexers && t < r->w->ntables; t++) {
        emb_grad_destroy(&r->grads[t]);
        emb_indexer_destroy(&r->indexers[t]);
    }
    free(r->grads);
    free(r->indexers);
}

void bench_optimizers_destroy(BenchWorkload *w)
{
    for (int k = 0; k < 3; k++)
        emb_optimizer_destroy(&w->opt[k]);
}

BenchRunner *bench_runner_create(const BenchConfig *c, BenchWorkload *w, int strategy,
                                 int threads)
{
    BenchRunner *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    *r = (BenchRunner){.cfg = c, .w = w, .strategy = strategy, .threads = threads};
    r->outputs = (EmbOutputs){.concat = w->out, .concat_stride = w->concat_width,
                              .prependrows = w->prepend};
    r->grad_outputs = (EmbOutputs){.concat = w->grad, .concat_stride = w->concat_width,
                                   .prependrows = w->prepend};
    int rc = make_strategy(r);
    if (!rc)
        rc = make_update_state(r);
    if (rc != 0) {
        fprintf(stderr, "emb-bench: strategy %s: %s\n", bench_strategy_name(strategy),
                emb_last_error());
        bench_runner_destroy(&r);
        return NULL;
    }
    return r;
}

static int forward(BenchRunner *r, const BenchIdSet *set)
{
    return emb_maplookup(r->s, r->w->tables, r->w->ntables, set->batches, NULL, &r->outputs);
}

/* The optimizer of @kind, created (and attached to every table) on first use. */
static int optimizer(BenchRunner *r, BenchOpt kind, EmbOptimizer **out)
{
    if (!r->w->opt[kind]) {
        const EmbOptimizerKind k = kind == OPT_ADAGRAD ? EMB_OPT_ADAGRAD : EMB_OPT_SGD; /* as torch */
        const EmbOptimizerConfig cfg = emb_optimizer_defaults(k, (float)r->cfg->lr);
        int rc = emb_optimizer_create(&r->w->opt[kind], &cfg);
        for (int t = 0; !rc && t < r->w->ntables; t++)
            rc = emb_optimizer_attach(r->w->opt[kind], r->w->tables[t]);
        if (rc)
            return rc;
    }
    *out = r->w->opt[kind];
    return 0;
}

static int backward_update(BenchRunner *r, const BenchIdSet *set, BenchOpt kind, double *bd)
{
    EmbOptimizer *opt;
    int rc = optimizer(r, kind, &opt);
    const double t0 = bench_now();
    if (!rc)
        rc = emb_maplookup_backward(r->w->tables, r->w->ntables, set->batches, NULL,
                                    &r->grad_outputs, r->grads);
    const double t1 = bench_now();
    if (!rc)
        rc = emb_update_many(r->s, opt, r->w->tables, (const EmbGrad *const *)r->grads,
                             r->w->ntables, r->indexers, 0);
    EmbUpdateTimes ut;
    if (!rc && bd && emb_strategy_update_times(r->s, &ut) == 0) {
        bd[BD_RECORD] += t1 - t0;
        bd[BD_SERIAL] += ut.serial;
        bd[BD_PULLBACK] += ut.pullback;
        bd[BD_INDEX] += ut.index;
        bd[BD_APPLY] += ut.apply;
    }
    return rc;
}

int bench_runner_iter(BenchRunner *r, const BenchPhaseSpec *phase, int v, int set, double *bd)
{
    const BenchIdSet *ids = &r->w->sets[v][set];
    int rc = 0;
    if (phase->kind != PHASE_UPDATE) {
        const double t0 = bench_now();
        rc = forward(r, ids);
        if (bd)
            bd[BD_FORWARD] += bench_now() - t0;
    }
    if (rc == 0 && phase->kind != PHASE_FORWARD)
        rc = backward_update(r, ids, phase->opt, bd);
    return rc;
}

void bench_runner_destroy(BenchRunner **rp)
{
    BenchRunner *r = rp ? *rp : NULL;
    if (!r)
        return;
    release_update(r);
    emb_strategy_destroy(&r->s);
    free(r);
    *rp = NULL;
}
