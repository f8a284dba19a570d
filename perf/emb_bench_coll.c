/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_coll.c — emb-bench coll: what a collection step costs against the three calls it is made of
 * (emb_maplookup, emb_maplookup_backward, emb_update_many): two identical ensembles in
 * one process, one stepped through EmbCollection, the other through the three calls,
 * iteration by iteration interleaved (so that the machine's load falls on both alike);
 * each timing's median and minimum, the ratio of the medians, and whether the two
 * ensembles ended bit-identical (the exit status: 1 if not).
 *
 *   emb-bench coll [--tables N] [--rows R] [--dim D] [--batch B] [--bag S] [--iters I]
 *              [--threads T] [--quick]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <embtables/embtables.h>

#include "bench_ids.h"
#include "bench_util.h"
#include "emb_bench.h"

typedef struct Opts {
    int tables, dim, threads, iters;
    int64_t rows, batch, bag;
} Opts;

static const char coll_usage[] =
    "usage: emb-bench coll [--tables N] [--rows R] [--dim D] [--batch B] [--bag S] [--iters I]\n"
    "                      [--threads T] [--quick]\n"
    "A collection step (Adagrad) against the three calls it is made of, interleaved; exit 1\n"
    "when the two ensembles do not end bit-identical. Defaults: 8 tables x 200000 rows x D 64,\n"
    "2048 bags of 20, 60 iterations, 1 thread.\n";

/* 0: run; 1: bad options (said on stderr); -1: --help (the usage on stdout). */
static int parse(int argc, char **argv, Opts *o)
{
    *o = (Opts){.tables = 8, .dim = 64, .threads = 1, .iters = 60, .rows = 200000,
                .batch = 2048, .bag = 20};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return fputs(coll_usage, stdout), -1;
        if (!strcmp(a, "--quick")) {
            o->tables = 3, o->rows = 1000, o->batch = 64, o->bag = 4, o->iters = 2;
            continue;
        }
        if (!v)
            return fprintf(stderr, "emb-bench coll: %s needs a value (--help: the options)\n",
                           a), 1;
        i++;
        if (!strcmp(a, "--tables")) o->tables = atoi(v);
        else if (!strcmp(a, "--rows")) o->rows = atoll(v);
        else if (!strcmp(a, "--dim")) o->dim = atoi(v);
        else if (!strcmp(a, "--batch")) o->batch = atoll(v);
        else if (!strcmp(a, "--bag")) o->bag = atoll(v);
        else if (!strcmp(a, "--iters")) o->iters = atoi(v);
        else if (!strcmp(a, "--threads")) o->threads = atoi(v);
        else return fprintf(stderr, "emb-bench coll: unknown option %s (--help: the options)\n",
                            a), 1;
    }
    if (o->tables < 1 || o->dim < 1 || o->iters < 1 || o->rows < 1 || o->batch < 1 ||
        o->bag < 1 || o->threads < 1)
        return fprintf(stderr, "emb-bench coll: every size must be >= 1\n"), 1;
    return 0;
}

/* The two ensembles: tables a[] (the collection's, borrowed) and b[] (the three calls'). */
typedef struct Bench {
    Opts o;
    EmbTable **a, **b;
    EmbGrad **g;
    EmbIndexer **ix;
    EmbBatch *batches;
    int64_t *ids;
    float *out;
    EmbStrategy *sa, *sb;
    EmbOptimizer *opt;
    EmbCollection *c;
    EmbOutputs layout;
} Bench;

static int setup(Bench *x)
{
    const Opts *o = &x->o;
    const size_t n = (size_t)o->tables;
    x->a = calloc(n, sizeof *x->a), x->b = calloc(n, sizeof *x->b);
    x->g = calloc(n, sizeof *x->g), x->ix = calloc(n, sizeof *x->ix);
    x->batches = calloc(n, sizeof *x->batches);
    x->ids = malloc(n * (size_t)(o->batch * o->bag) * sizeof *x->ids);
    x->out = malloc((size_t)(o->batch * o->tables * o->dim) * sizeof *x->out);
    EmbCollectionTable *ct = calloc(n, sizeof *ct);
    char (*names)[16] = calloc(n, sizeof *names);
    if (!x->a || !x->b || !x->g || !x->ix || !x->batches || !x->ids || !x->out || !ct || !names)
        return EMB_ENOMEM;
    const EmbInitializer init = {EMB_INIT_UNIFORM, -0.1f, 0.1f, 7};
    int r = 0;
    for (int t = 0; t < o->tables && !r; t++) {
        r = emb_table_create(&x->a[t], o->rows, o->dim, EMB_F32, NULL) ||
            emb_table_create(&x->b[t], o->rows, o->dim, EMB_F32, NULL) ||
            emb_table_initialize(x->a[t], &init) || emb_table_initialize(x->b[t], &init) ||
            emb_grad_create(&x->g[t]) || emb_indexer_create(&x->ix[t]);
        snprintf(names[t], sizeof names[t], "t%d", t);
        ct[t] = (EmbCollectionTable){.name = names[t], .table = x->a[t],
                                     .pooling = EMB_POOLING_SUM};
    }
    const EmbStrategyOptions so = {.nthreads = o->threads};
    const EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.01f);
    r = r || emb_strategy_auto(&x->sa, &so) || emb_strategy_auto(&x->sb, &so) ||
        emb_optimizer_create(&x->opt, &oc);
    for (int t = 0; t < o->tables && !r; t++)
        r = emb_optimizer_attach(x->opt, x->b[t]);
    const EmbCollectionOptions co = {.strategy = x->sa, .optimizer = &oc};
    r = r || emb_collection_create(&x->c, ct, o->tables, &co);
    free(ct), free(names);
    x->layout = (EmbOutputs){.concat = x->out, .concat_stride = (int64_t)o->tables * o->dim};
    return r;
}

/* Step @s's ids (Zipf(1.05), the benchmarks' generator: bench_ids.h), one batch per
   table. */
static void make_ids(Bench *x, int s)
{
    const Opts *o = &x->o;
    const int64_t nnz = o->batch * o->bag;
    uint64_t z = (uint64_t)s * 1000003u;
    for (int t = 0; t < o->tables; t++) {
        int64_t *ids = x->ids + t * nnz;
        BenchIdGen g;
        bench_idgen_init(&g, BENCH_IDS_ZIPF, o->rows, 1.05, (uint64_t)t);
        for (int64_t k = 0; k < nnz; k++)
            ids[k] = bench_idgen_row(&g, &z, k);
        x->batches[t] = (EmbBatch){.ids = ids, .nnz = nnz, .nbags = o->batch,
                                   .bag_size = o->bag};
    }
}

static void gradient(Bench *x)
{
    const int64_t n = x->o.batch * x->o.tables * x->o.dim;
    for (int64_t k = 0; k < n; k++)
        x->out[k] = 0.001f * (float)(k % 7) - 0.003f;
}

static double step_collection(Bench *x)
{
    const double t0 = now();
    int r = emb_collection_forward(x->c, x->batches, &x->layout);
    gradient(x); /* timed on both sides alike */
    r = r || emb_collection_backward(x->c, &x->layout);
    return r ? -1 : now() - t0;
}

static double step_three_calls(Bench *x)
{
    const int n = x->o.tables;
    const double t0 = now();
    int r = emb_maplookup(x->sb, x->b, n, x->batches, NULL, &x->layout);
    gradient(x);
    r = r || emb_maplookup_backward(x->b, n, x->batches, NULL, &x->layout, x->g) ||
        emb_update_many(x->sb, x->opt, x->b, (const EmbGrad *const *)x->g, n, x->ix, 0);
    return r ? -1 : now() - t0;
}

static int same_tables(const Bench *x)
{
    const size_t bytes = (size_t)(x->o.rows * x->o.dim) * sizeof(float);
    float *u = malloc(bytes), *v = malloc(bytes);
    int same = u && v;
    for (int t = 0; t < x->o.tables && same; t++)
        same = !emb_table_read(x->a[t], u, x->o.dim) && !emb_table_read(x->b[t], v, x->o.dim) &&
               !memcmp(u, v, bytes);
    free(u), free(v);
    return same;
}

static void teardown(Bench *x)
{
    emb_collection_destroy(&x->c);
    emb_optimizer_destroy(&x->opt);
    emb_strategy_destroy(&x->sa), emb_strategy_destroy(&x->sb);
    for (int t = 0; t < x->o.tables; t++) {
        if (x->a) emb_table_destroy(&x->a[t]);
        if (x->b) emb_table_destroy(&x->b[t]);
        if (x->g) emb_grad_destroy(&x->g[t]);
        if (x->ix) emb_indexer_destroy(&x->ix[t]);
    }
    free(x->a), free(x->b), free(x->g), free(x->ix), free(x->batches), free(x->ids), free(x->out);
}

int bench_coll_main(int argc, char **argv)
{
    Bench x = {0};
    const int p = parse(argc, argv, &x.o);
    if (p)
        return p < 0 ? 0 : 2;
    const int it = x.o.iters;
    double *tc = calloc((size_t)it, sizeof *tc), *t3 = calloc((size_t)it, sizeof *t3);
    int r = !tc || !t3 ? EMB_ENOMEM : setup(&x);
    for (int s = -1; s < it && !r; s++) { /* step -1: warm-up; then alternate who goes first */
        make_ids(&x, s + 1);
        const int first = s & 1;
        const double a = first ? step_three_calls(&x) : step_collection(&x);
        const double b = first ? step_collection(&x) : step_three_calls(&x);
        const double c = first ? b : a, t = first ? a : b;
        r = c < 0 || t < 0;
        if (s >= 0)
            tc[s] = c, t3[s] = t;
    }
    if (r) {
        fprintf(stderr, "emb-bench coll: %s\n", emb_last_error());
        teardown(&x);
        return 2;
    }
    const int same = same_tables(&x);
    qsort(tc, (size_t)it, sizeof *tc, cmp_double), qsort(t3, (size_t)it, sizeof *t3, cmp_double);
    printf("emb-bench coll: %d tables x %lld rows x D %d, %lld bags of %lld, %d thread(s), %d "
           "steps each (Adagrad), interleaved\n", x.o.tables, (long long)x.o.rows, x.o.dim,
           (long long)x.o.batch, (long long)x.o.bag, x.o.threads, it);
    printf("  three calls: median %.3f ms, min %.3f ms\n", 1e3 * t3[it / 2], 1e3 * t3[0]);
    printf("  collection:  median %.3f ms, min %.3f ms\n", 1e3 * tc[it / 2], 1e3 * tc[0]);
    printf("  collection / three calls: median %.3f, min %.3f; tables %s\n",
           tc[it / 2] / t3[it / 2], tc[0] / t3[0], same ? "bit-identical" : "DIFFER");
    teardown(&x);
    free(tc), free(t3);
    return same ? 0 : 1;
}
