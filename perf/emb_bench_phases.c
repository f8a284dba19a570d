/*
 * emb_bench_phases.c — what one timed iteration does, per phase, through the public API:
 *   forward     emb_maplookup(strategy) into the concatenated output (DLRM's layout)
 *   update:OPT  emb_lookup_backward per table, then emb_update_many(strategy, OPT)
 *   train:OPT   forward, then update:OPT — one training step of the embedding part
 * A phase the build cannot run (no update API yet) is reported, never faked.
 */
#include <stdlib.h>
#include <string.h>

#include "emb_bench.h"

#if EMB_BENCH_HAVE_UPDATE
#include <embtables/update.h>
#endif

struct BenchRunner {
    const BenchConfig *cfg;
    BenchWorkload *w;
    int strategy, threads;
    EmbStrategy *s;
    EmbOutputs outputs;
#if EMB_BENCH_HAVE_UPDATE
    EmbOptimizer *opt[3]; /* per BenchOpt, created on first use */
    EmbGrad **grads;      /* ntables */
    EmbIndexer **indexers;
#endif
};

int bench_have_strategies(void)
{
    return EMB_BENCH_HAVE_STRATEGIES;
}

int bench_phase_available(const BenchPhaseSpec *p)
{
    return p->kind == PHASE_FORWARD || EMB_BENCH_HAVE_UPDATE;
}

static int make_strategy(BenchRunner *r)
{
#if EMB_BENCH_HAVE_STRATEGIES
    EmbStrategyOptions o = {.nthreads = r->threads};
    switch (r->strategy) {
    case STRAT_SEQUENTIAL: return emb_strategy_sequential(&r->s);
    case STRAT_PARALLEL: return emb_strategy_parallel(&r->s, &o);
    default: return emb_strategy_prealloc_concat(&r->s, &o);
    }
#else
    return r->strategy == STRAT_SEQUENTIAL ? 0 : EMB_ENOTSUP;
#endif
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
    int rc = make_strategy(r);
    if (rc != 0) {
        fprintf(stderr, "emb-bench: strategy %s: %s\n", bench_strategy_name(strategy),
                rc == EMB_ENOTSUP ? "not in this build" : emb_last_error());
        free(r);
        return NULL;
    }
    return r;
}

/* The library's maplookup, or (before strategies exist) emb_lookup table by table. */
static int forward(BenchRunner *r, const BenchIdSet *set)
{
#if EMB_BENCH_HAVE_STRATEGIES
    return emb_maplookup(r->s, r->w->tables, r->w->ntables, set->batches, NULL, &r->outputs);
#else
    float *out = r->w->out + r->w->prepend;
    for (int t = 0; t < r->w->ntables; t++) {
        int rc = emb_lookup(r->w->tables[t], &set->batches[t], NULL, out, r->w->concat_width);
        if (rc != 0)
            return rc;
        out += emb_table_featuresize(r->w->tables[t]);
    }
    return 0;
#endif
}

#if EMB_BENCH_HAVE_UPDATE
/* update API: wired in when branch `update` lands */
#else
static int backward_update(BenchRunner *r, const BenchIdSet *set, BenchOpt opt)
{
    (void)r, (void)set, (void)opt;
    return EMB_ENOTSUP;
}
#endif

int bench_runner_iter(BenchRunner *r, const BenchPhaseSpec *phase, int v, int set)
{
    const BenchIdSet *ids = &r->w->sets[v][set];
    int rc = 0;
    if (phase->kind != PHASE_UPDATE)
        rc = forward(r, ids);
    if (rc == 0 && phase->kind != PHASE_FORWARD)
        rc = backward_update(r, ids, phase->opt);
    return rc;
}

void bench_runner_destroy(BenchRunner **rp)
{
    BenchRunner *r = rp ? *rp : NULL;
    if (!r)
        return;
#if EMB_BENCH_HAVE_UPDATE
    release_update(r);
#endif
#if EMB_BENCH_HAVE_STRATEGIES
    emb_strategy_destroy(&r->s);
#endif
    free(r);
    *rp = NULL;
}
