/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_phases.c — what one timed iteration does, per phase, through the public API:
 *   forward     emb_collection_forward into the concatenated output (DLRM's layout)
 *   update:OPT  emb_collection_backward_batches of the concat gradient: the pullback, then
 *               one fused dedup + optimizer pass (emb_update_many under the strategy)
 *   train:OPT   forward, then update:OPT: one training step of the embedding part
 * With tiered tables (tier:), each iteration first prefetches the next id set's batches.
 * A runner holds one EmbCollection per optimizer kind over the workload's tables, sharing
 * its strategy and the workload's optimizers (whose state every runner shares): everything
 * a step needs is created once, so the timed iterations allocate nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <embtables/collection.h>

#include "emb_bench.h"

struct BenchRunner {
    const BenchConfig *cfg;
    BenchWorkload *w;
    int strategy, threads;
    EmbStrategy *s;
    EmbOutputs outputs, grad_outputs;
    EmbCollection *coll[OPT_COUNT]; /* per BenchOpt (OPT_NONE: the forward's), on first use */
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

void bench_optimizers_destroy(BenchWorkload *w)
{
    for (int k = 0; k < OPT_COUNT; k++)
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
    if (make_strategy(r) != 0) {
        fprintf(stderr, "emb-bench: strategy %s: %s\n", bench_strategy_name(strategy),
                emb_last_error());
        bench_runner_destroy(&r);
        return NULL;
    }
    return r;
}

/* The workload's optimizer of @kind, created on first use (shared by every runner). */
static int optimizer(BenchRunner *r, BenchOpt kind)
{
    if (kind == OPT_NONE || r->w->opt[kind])
        return 0;
    EmbOptimizerConfig cfg = emb_optimizer_defaults(bench_opt_kind(kind), (float)r->cfg->lr);
    cfg.state_dtype = r->cfg->state_dtype;
    cfg.max_gradient = (float)r->cfg->clip[0];
    cfg.max_row_norm = (float)r->cfg->clip[1];
    cfg.max_global_norm = (float)r->cfg->clip[2];
    return emb_optimizer_create(&r->w->opt[kind], &cfg);
}

/* The collection of @kind: the workload's tables (named by index, pooled by SUM or, with
 * --pooling max, MAX), the
 * runner's strategy and the workload's optimizer of that kind (none for OPT_NONE). */
static int collection(BenchRunner *r, BenchOpt kind, EmbCollection **out)
{
    int rc = r->coll[kind] ? 0 : optimizer(r, kind);
    const int n = r->w->ntables;
    EmbCollectionTable *ct = rc || r->coll[kind] ? NULL : calloc((size_t)n, sizeof *ct);
    char (*names)[16] = ct ? calloc((size_t)n, sizeof *names) : NULL;
    if (!rc && !r->coll[kind] && !names)
        rc = EMB_ENOMEM;
    for (int t = 0; names && t < n; t++) {
        snprintf(names[t], sizeof names[t], "t%d", t);
        ct[t] = (EmbCollectionTable){.name = names[t], .table = r->w->tables[t],
                                     .pooling = r->cfg->pooling_max ? EMB_POOLING_MAX
                                                                    : EMB_POOLING_SUM};
    }
    const EmbCollectionOptions o = {.strategy = r->s, .shared_optimizer = r->w->opt[kind],
                                    .prependrows = r->w->prepend};
    if (names)
        rc = emb_collection_create(&r->coll[kind], ct, n, &o);
    free(ct);
    free(names);
    *out = r->coll[kind];
    return rc;
}

/* The backward and update: of the forward just run (train), or of @set alone (update). */
static int backward_update(BenchRunner *r, EmbCollection *c, const BenchIdSet *set,
                           int after_forward, double *bd)
{
    const double t0 = bench_now();
    const int rc = after_forward ? emb_collection_backward(c, &r->grad_outputs)
                                 : emb_collection_backward_batches(c, set->batches,
                                                                   &r->grad_outputs);
    const double t1 = bench_now();
    EmbUpdateTimes ut;
    if (!rc && bd && emb_strategy_update_times(r->s, &ut) == 0) {
        const double update = ut.serial + ut.pullback + ut.index + ut.apply;
        bd[BD_RECORD] += t1 - t0 - update; /* the pullback's recording, and the call's rest */
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
    const BenchOpt kind = phase->kind == PHASE_FORWARD ? OPT_NONE : phase->opt;
    EmbCollection *c;
    int rc = collection(r, kind, &c);
    if (!rc && r->w->ntiered) /* tiered tables: the next batch's misses start loading */
        rc = emb_collection_prefetch(c, r->w->sets[v][(set + 1) % BENCH_NSETS].batches);
    if (!rc && phase->kind != PHASE_UPDATE) {
        const double t0 = bench_now();
        rc = emb_collection_forward(c, ids->batches, &r->outputs);
        if (bd)
            bd[BD_FORWARD] += bench_now() - t0;
    }
    if (rc == 0 && phase->kind != PHASE_FORWARD)
        rc = backward_update(r, c, ids, phase->kind != PHASE_UPDATE, bd);
    return rc;
}

void bench_runner_destroy(BenchRunner **rp)
{
    BenchRunner *r = rp ? *rp : NULL;
    if (!r)
        return;
    for (int k = 0; k < OPT_COUNT; k++)
        emb_collection_destroy(&r->coll[k]);
    emb_strategy_destroy(&r->s);
    free(r);
    *rp = NULL;
}
