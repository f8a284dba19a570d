/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_ckpt.c — emb-bench ckpt: a delta checkpoint against a full one (issue 45). One
 * table trained with Adam on Zipf(1.05) ids (the benchmarks' generator: bench_ids.h);
 * every --steps steps, a full save (a saver without deltas) and a delta save (a saver
 * with full_every) of the same state, in alternating order (so that the machine's load
 * falls on both alike), into --dir. Prints per round the touched fraction, both files'
 * bytes and save times, and the medians' ratios. With --dynamic the table is a dynamic one
 * (the ids are its keys; rows not updated in the last --ttl steps are evicted before each
 * save, so that deltas carry tombstones) and the touched fraction is of its rows.
 *
 *   emb-bench ckpt [--rows R] [--dim D] [--batch B] [--bag S] [--steps N] [--saves K]
 *                  [--dir DIR] [--dynamic] [--ttl T] [--quick]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <embtables/embtables.h>

#include "bench_ids.h"
#include "bench_util.h"
#include "emb_bench.h"

typedef struct Opts {
    int dim, steps, saves, dynamic;
    int64_t rows, batch, bag, ttl;
    const char *dir;
} Opts;

static const char ckpt_usage[] =
    "usage: emb-bench ckpt [--rows R] [--dim D] [--batch B] [--bag S] [--steps N] [--saves K]\n"
    "                      [--dir DIR] [--dynamic] [--ttl T] [--quick]\n"
    "A delta checkpoint (the rows touched since the previous save) against a full one, of\n"
    "one table trained with Adam on Zipf(1.05) ids, saved every N steps, K times, in\n"
    "alternating order, into DIR (two subdirectories). Defaults: 1000000 rows x D 64, 2048\n"
    "bags of 20, 100 steps, 5 saves, /tmp. --dynamic: a dynamic table keyed by the ids,\n"
    "rows not updated in the last T steps (default 300) evicted before each save.\n";

/* 0: run; 1: bad options (said on stderr); -1: --help (the usage on stdout). */
static int parse(int argc, char **argv, Opts *o)
{
    *o = (Opts){.dim = 64, .steps = 100, .saves = 5, .rows = 1000000, .batch = 2048,
                .bag = 20, .dir = "/tmp", .ttl = 300};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return fputs(ckpt_usage, stdout), -1;
        if (!strcmp(a, "--quick")) {
            o->rows = 5000, o->dim = 16, o->batch = 64, o->bag = 4, o->steps = 3, o->saves = 2;
            continue;
        }
        if (!strcmp(a, "--dynamic")) {
            o->dynamic = 1;
            continue;
        }
        if (!v)
            return fprintf(stderr, "emb-bench ckpt: %s needs a value (--help: the options)\n",
                           a), 1;
        i++;
        if (!strcmp(a, "--rows")) o->rows = atoll(v);
        else if (!strcmp(a, "--dim")) o->dim = atoi(v);
        else if (!strcmp(a, "--batch")) o->batch = atoll(v);
        else if (!strcmp(a, "--bag")) o->bag = atoll(v);
        else if (!strcmp(a, "--steps")) o->steps = atoi(v);
        else if (!strcmp(a, "--saves")) o->saves = atoi(v);
        else if (!strcmp(a, "--dir")) o->dir = v;
        else if (!strcmp(a, "--ttl")) o->ttl = atoll(v);
        else return fprintf(stderr, "emb-bench ckpt: unknown option %s (--help: the options)\n",
                            a), 1;
    }
    if (o->dim < 1 || o->steps < 1 || o->saves < 1 || o->rows < 1 || o->batch < 1 ||
        o->bag < 1 || o->ttl < 1)
        return fprintf(stderr, "emb-bench ckpt: every size must be >= 1\n"), 1;
    return 0;
}

typedef struct Bench {
    Opts o;
    EmbStore *s;
    EmbTable *t;
    EmbOptimizer *opt;
    EmbGrad *g;
    EmbIndexer *ix;
    EmbSaver *full, *delta;
    int64_t *ids;
    float *rows;
    char fdir[4200], ddir[4200];
} Bench;

static int setup(Bench *x)
{
    const Opts *o = &x->o;
    const int64_t nnz = o->batch * o->bag;
    x->ids = malloc((size_t)nnz * sizeof *x->ids);
    x->rows = malloc((size_t)(nnz * o->dim) * sizeof *x->rows);
    if (!x->ids || !x->rows)
        return EMB_ENOMEM;
    for (int64_t k = 0; k < nnz * o->dim; k++)
        x->rows[k] = 0.001f * (float)(k % 7) - 0.003f;
    const EmbDynamicOptions dyn = {.capacity = o->rows};
    const EmbVariableSpec v = {.name = "emb", .ncolumns = o->dynamic ? 0 : o->rows,
                               .featuresize = o->dim, .dtype = EMB_F32,
                               .init = {EMB_INIT_UNIFORM, -0.1f, 0.1f, 7},
                               .dynamic = o->dynamic ? &dyn : NULL};
    const EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_ADAM, 0.01f);
    snprintf(x->fdir, sizeof x->fdir, "%s/emb-bench-ckpt-full", o->dir);
    snprintf(x->ddir, sizeof x->ddir, "%s/emb-bench-ckpt-delta", o->dir);
    int r = emb_store_create(&x->s) || emb_store_get(x->s, &v, EMB_REUSE_NO, &x->t) ||
            emb_optimizer_create(&x->opt, &oc) || emb_grad_create(&x->g) ||
            emb_indexer_create(&x->ix);
    const EmbSaverOptions fo = {.max_to_keep = 1, .optimizer = x->opt},
                          dopt = {.max_to_keep = 1, .optimizer = x->opt, .full_every = 1000000};
    r = r || emb_saver_create(&x->full, x->fdir, "full", &fo) ||
        emb_saver_create(&x->delta, x->ddir, "delta", &dopt);
    return r;
}

/* Step @s: Zipf(1.05) ids, a constant gradient row pattern, one Adam update. */
static int step(Bench *x, int s)
{
    const Opts *o = &x->o;
    const int64_t nnz = o->batch * o->bag;
    uint64_t z = (uint64_t)s * 1000003u + 1;
    BenchIdGen g;
    bench_idgen_init(&g, BENCH_IDS_ZIPF, o->rows, 1.05, 3);
    for (int64_t k = 0; k < nnz; k++)
        x->ids[k] = bench_idgen_row(&g, &z, k);
    const EmbSparseGrad sg = {.ids = x->ids, .n = nnz, .featuresize = o->dim,
                              .values = x->rows, .stride = o->dim};
    return emb_grad_set_sparse(x->g, x->t, &sg) || emb_update(x->opt, x->t, x->g, x->ix, 0);
}

/* One save of @sv at @gstep: its seconds and the file's bytes (-1 on failure). */
static double save(EmbSaver *sv, const EmbStore *s, int64_t gstep, double *bytes)
{
    char path[4400];
    const double t0 = now();
    if (emb_saver_save(sv, s, gstep, path, sizeof path))
        return -1;
    const double t = now() - t0;
    struct stat st;
    *bytes = stat(path, &st) == 0 ? (double)st.st_size : -1;
    return t;
}

/* Before a save of a dynamic table: the rows not updated in the last --ttl steps go. */
static int evict(Bench *x)
{
    const EmbDynamicEvict ev = {.ttl = x->o.ttl};
    return x->o.dynamic ? emb_table_dynamic_evict(x->t, &ev, NULL) : 0;
}

/* Rows in the delta file of @path ("emb/delta.ids", a dynamic table's "emb/dynamic.ids");
   -1: none. */
static int64_t delta_rows(const char *dir, int64_t gstep)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/delta-%lld.safetensors", dir, (long long)gstep);
    EmbCheckpoint *ck;
    if (emb_checkpoint_open(&ck, path, 0))
        return -1;
    int64_t n = -1;
    for (int64_t i = 0; i < emb_checkpoint_count(ck); i++) {
        EmbCheckpointEntry e;
        if (!emb_checkpoint_entry(ck, i, &e) &&
            (!strcmp(e.name, "emb/delta.ids") || !strcmp(e.name, "emb/dynamic.ids")))
            n = e.ncolumns;
    }
    emb_checkpoint_close(&ck);
    return n;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int bench_ckpt_main(int argc, char **argv)
{
    Bench x = {0};
    const int p = parse(argc, argv, &x.o);
    if (p)
        return p < 0 ? 0 : 2;
    const Opts *o = &x.o;
    double *tf = calloc((size_t)o->saves, sizeof *tf), *td = calloc((size_t)o->saves, sizeof *td);
    double *bf = calloc((size_t)o->saves, sizeof *bf), *bd = calloc((size_t)o->saves, sizeof *bd);
    int r = !tf || !td || !bf || !bd ? EMB_ENOMEM : setup(&x);
    double db; /* the delta saver's first save is full: the chain's start */
    r = r || save(x.delta, x.s, 0, &db) < 0;
    printf("emb-bench ckpt: %lld %srows x %d f32, Adam, %lld bags of %lld Zipf(1.05) ids a "
           "step, %d steps between saves\n", (long long)o->rows,
           o->dynamic ? "keys (dynamic, ttl-evicted) " : "", o->dim, (long long)o->batch,
           (long long)o->bag, o->steps);
    printf("%5s %9s %12s %12s %9s %9s %7s %7s\n", "save", "touched", "full_bytes", "delta_bytes",
           "full_s", "delta_s", "bytes%", "time%");
    for (int k = 0; k < o->saves && !r; k++) {
        for (int s = 0; s < o->steps && !r; s++)
            r = step(&x, k * o->steps + s);
        const int64_t gstep = (int64_t)(k + 1) * o->steps;
        r = r || evict(&x);
        if (k % 2) { /* alternating order */
            td[k] = save(x.delta, x.s, gstep, &bd[k]);
            tf[k] = save(x.full, x.s, gstep, &bf[k]);
        } else {
            tf[k] = save(x.full, x.s, gstep, &bf[k]);
            td[k] = save(x.delta, x.s, gstep, &bd[k]);
        }
        r = r || tf[k] < 0 || td[k] < 0;
        const int64_t n = delta_rows(x.ddir, gstep);
        EmbDynamicStats ds = {.rows = o->rows};
        if (o->dynamic)
            emb_table_dynamic_stats(x.t, &ds);
        if (!r)
            printf("%5d %8.3f%% %12.0f %12.0f %9.4f %9.4f %6.2f%% %6.2f%%\n", k + 1,
                   100.0 * (double)n / (double)(ds.rows > 0 ? ds.rows : 1), bf[k], bd[k], tf[k], td[k],
                   100.0 * bd[k] / bf[k], 100.0 * td[k] / tf[k]);
    }
    if (!r) {
        const double mf = median(tf, o->saves), md = median(td, o->saves);
        printf("median: full %.4f s, delta %.4f s (%.2f%%); bytes: delta / full %.2f%% "
               "(median)\n", mf, md, 100.0 * md / mf,
               100.0 * median(bd, o->saves) / median(bf, o->saves));
    } else {
        fprintf(stderr, "emb-bench ckpt: %s\n", emb_last_error());
    }
    emb_saver_destroy(&x.full), emb_saver_destroy(&x.delta);
    emb_optimizer_destroy(&x.opt), emb_grad_destroy(&x.g), emb_indexer_destroy(&x.ix);
    emb_store_destroy(&x.s);
    free(x.ids), free(x.rows), free(tf), free(td), free(bf), free(bd);
    return r ? 1 : 0;
}
