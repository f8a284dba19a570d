/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist_bench.c — the MPI ensemble's training step, run under mpirun (docs/guide/mpi.md;
 * emb-bench --mpi runs it). Every rank brings --batch bags (weak scaling: the global batch
 * grows with the ranks, the tables do not) of a DLRM-shaped ensemble (the 26 Criteo Kaggle
 * cardinalities capped at --rows, D = --dim, bags of --bag ids, Zipf ids from bench_ids.h,
 * fresh every step), and runs
 * forward (emb_dist_maplookup into the concat output), backward and an SGD update.
 * Per step the slowest rank's times are kept; rank 0 prints the median and the p10..p90
 * spread over the steps, split into local pooling, exchange, backward and update, and
 * the bytes each all-to-all moved (sent to other ranks, summed over ranks, per step).
 * `RESULT` lines are for scripts (perf/dist_scaling.sh computes weak-scaling efficiency).
 * --compare-groups N measures the overlap of the exchanges with the pooling: a second
 * ensemble of the same tables with N table groups runs the same batches, its steps
 * interleaved with the first's, and the per-step difference of the forward times is
 * printed with its spread.
 * --prefetch 1 pipelines the steps: after the backward, emb_dist_prefetch() starts the
 * next step's id exchange, which travels during the update; "ids wait" is the time the
 * id exchange kept the slowest rank in MPI calls (the whole exchange without prefetch;
 * with it, every call of its two legs: posting, the headers' wait, the forward's wait).
 * The hidden fraction is (ids wait without - ids wait with) / ids wait without, from
 * invocations interleaved A/B (docs/bench/2026-11-28-mpi-prefetch-nonblocking.md).
 * --show-plan prints, without running a step, the planner's placement of the ensemble
 * (EMB_DIST_PLAN_AUTO) for 2, 4 and 8 ranks, each rank's modelled step and the max/mean
 * rank load, next to the fixed table-wise and row-wise plans' (emb_dist_plan_cost()).
 * --paired auto,table,row,column,replicated builds the ensemble once per listed placement
 * (the planner's; every table whole by LPT; every table by rows; every table's columns
 * over every rank; every table replicated) in this one job and runs them on the same
 * batches in interleaved rounds (--steps rounds in a Williams design: every placement in
 * every position of a round and after every other one equally often; a multiple of N
 * rounds for N placements, 2N for odd N, balances it fully), builds them all --builds
 * times (4; each time in the other order) at equal intervals, then prints each placement's median step and spread and, per round, auto's step
 * over the best fixed placement's (the fixed one of lowest median) with its spread (and
 * auto-bf16's over auto's), and next to each placement's measured step the planner's
 * modelled one (emb_dist_plan_cost(), the slowest rank)
 * (docs/bench/2026-11-28-mpi-planner-paired.md, 2026-11-28-mpi-planner-calibrated.md).
 * --mix replaces the Criteo-shaped ensemble by 6 tables whose fixed placements differ
 * more (mix_rows, mix_dim: wide, huge and tiny tables).
 * --bf16 1 sends the pooled outputs and their gradients as bf16 (EmbDistOptions::
 * exchange_bf16); with --paired, "auto-bf16" in the list is the planner's placement so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_choice.h"
#include "bench_ids.h"
#include "dist_bench_plan.h"

#include <embtables/dist.h>
#include <embtables/embtables.h>

static const int64_t criteo[26] = {1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3,
                                   93145, 5683, 8351593, 3194, 27, 14992, 5461306, 10, 5652,
                                   2173, 4, 7046547, 18, 15, 286181, 105, 142572};

/* --mix: an ensemble whose fixed placements differ more: three wide tables (60 000 rows,
   D 256) that no whole-table plan balances over 2 ranks, a huge narrow one (1 M rows, D 8)
   and two tiny ones (1000 and 50 rows, D 16) */
#define NMIX 6
static const int64_t mix_rows[NMIX] = {60000, 60000, 60000, 1000000, 1000, 50};
static const int32_t mix_dim[NMIX] = {256, 256, 256, 8, 16, 16};

typedef struct Args {
    int tables, dim, batch, bag, steps, warmup, groups, threads, compare, show_plan, prefetch;
    int mix;
    int64_t rows;
    double zipf;
    EmbDistPlan plan;
    int bf16;
    int npaired;  /* --paired: the placements listed (P_*), 0: off */
    int paired[8];
    int rebuild;  /* --paired: the ensembles built this many times over the rounds */
} Args;

/* --paired placements: the planner's, the fixed kinds, the planner's with bf16 exchange */
enum { P_AUTO, P_TABLE, P_ROW, P_COLUMN, P_REPLICATED, P_AUTO_BF16, NP_ };
static const char *const pnames[NP_] = {"auto", "table", "row", "column", "replicated",
                                        "auto-bf16"};

/* Parses the comma-separated --paired list into a->paired; -1 on an unknown name (said on
   @err, NULL: silent). */
static int parse_paired(Args *a, const char *v, FILE *err)
{
    a->npaired = 0;
    while (*v) {
        const size_t n = strcspn(v, ",");
        char one[32];
        snprintf(one, sizeof one, "%.*s", (int)n, v);
        const int k = bench_choice(err, "dist-bench", "--paired", one, pnames, NP_);
        if (k < 0 || a->npaired == 8)
            return -1;
        a->paired[a->npaired++] = k;
        v += n + (v[n] == ',');
    }
    return a->npaired >= 2 ? 0 : -1;
}

/* The options into @a; -1 on a bad one (an enum-like option's value named on @err). */
static int parse(int argc, char **argv, Args *a, FILE *err)
{
    static const char *const plans[] = {"table", "row", "auto"}, *const flag[] = {"0", "1"};
    int c;
    *a = (Args){26, 64, 1024, 1, 20, 3, 1, 1, 0, 0, 0, 0, 200000, 1.05,
                EMB_DIST_PLAN_TABLEWISE, 0, 0, {0}, 4};
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(k, "--quick")) {
            a->tables = 6, a->rows = 2000, a->dim = 16, a->batch = 64, a->steps = 2;
            a->warmup = 1;
            continue;
        }
        if (!strcmp(k, "--show-plan")) {
            a->show_plan = 1;
            continue;
        }
        if (!strcmp(k, "--mix")) {
            a->mix = 1, a->tables = NMIX;
            continue;
        }
        if (!v)
            return -1;
        i++;
        if (!strcmp(k, "--tables")) a->tables = atoi(v);
        else if (!strcmp(k, "--rows")) a->rows = atoll(v);
        else if (!strcmp(k, "--dim")) a->dim = atoi(v);
        else if (!strcmp(k, "--batch")) a->batch = atoi(v);
        else if (!strcmp(k, "--bag")) a->bag = atoi(v);
        else if (!strcmp(k, "--steps")) a->steps = atoi(v);
        else if (!strcmp(k, "--warmup")) a->warmup = atoi(v);
        else if (!strcmp(k, "--groups")) a->groups = atoi(v);
        else if (!strcmp(k, "--compare-groups")) a->compare = atoi(v);
        else if (!strcmp(k, "--threads")) a->threads = atoi(v);
        else if (!strcmp(k, "--zipf")) a->zipf = atof(v);
        else if (!strcmp(k, "--bf16") || !strcmp(k, "--prefetch")) {
            if ((c = bench_choice(err, "dist-bench", k, v, flag, 2)) < 0)
                return -1;
            *(k[2] == 'b' ? &a->bf16 : &a->prefetch) = c;
        }
        else if (!strcmp(k, "--builds")) a->rebuild = atoi(v);
        else if (!strcmp(k, "--paired")) {
            if (parse_paired(a, v, err))
                return -1;
        }
        else if (!strcmp(k, "--plan")) {
            if ((c = bench_choice(err, "dist-bench", k, v, plans, 3)) < 0)
                return -1;
            a->plan = c == 1 ? EMB_DIST_PLAN_ROWWISE
                      : c == 2 ? EMB_DIST_PLAN_AUTO : EMB_DIST_PLAN_TABLEWISE;
        }
        else
            return -1;
    }
    return a->tables < 1 || a->tables > (a->mix ? NMIX : 26) || a->dim < 1 || a->batch < 1 || a->bag < 1 ||
           a->steps < 1 || a->rows < 1 || a->zipf < 0 || a->threads < 1 || a->compare < 0 ||
           a->groups < 0 || a->rebuild < 1
           ? -1 : 0;
}

static int cmp(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Median and p10 / p90 of n values (sorted in place). */
static void spread(double *v, int n, double out[3])
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    out[0] = v[n / 2], out[1] = v[n / 10], out[2] = v[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1];
}

enum { T_TOTAL, T_FWD, T_POOL, T_XCHG, T_BWD, T_UPD, T_GX, T_IDS, NT_ };

/* One ensemble being measured: its per-step times (the slowest rank's) and bytes. */
typedef struct Run {
    EmbDist *d;
    EmbOptimizer *opt;
    int groups, ntw, nrw, steps, prefetch;
    const char *name; /* --paired: the placement's name */
    double *m;        /* NT_ x steps */
    int64_t bytes[3]; /* ids, rows, gradients: all ranks, to other ranks, per step */
    double model_s;   /* the planner's modelled step of this placement (slowest rank) */
} Run;

/* Builds @p u's ensemble and optimizer (its times kept). @p kind: -1 the plan of --plan,
   else a --paired placement (P_*). */
static int run_build(Run *u, const Args *a, const EmbDistTableDesc *desc, EmbStrategy *s,
                     int groups, int kind)
{
    const EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_SGD, 0.01f);
    *u = (Run){.groups = groups, .steps = a->steps, .prefetch = a->prefetch,
               .name = kind < 0 ? "" : pnames[kind], .m = u->m};
    int P;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    EmbDistOptions o = {.place = {.plan = a->plan, .batch = (int64_t)a->batch * P}, .groups = groups, .strategy = s,
                        .exchange_bf16 = a->bf16 || kind == P_AUTO_BF16};
    EmbDistPlacement pl[26];
    if (kind == P_AUTO || kind == P_AUTO_BF16 || kind == P_TABLE || kind == P_ROW)
        o.place.plan = kind == P_TABLE ? EMB_DIST_PLAN_TABLEWISE
                       : kind == P_ROW ? EMB_DIST_PLAN_ROWWISE : EMB_DIST_PLAN_AUTO;
    if (kind == P_COLUMN || kind == P_REPLICATED) {
        for (int t = 0; t < a->tables; t++)
            pl[t] = (EmbDistPlacement){kind == P_COLUMN ? EMB_DIST_COLUMNWISE
                                       : EMB_DIST_REPLICATED, 0, 0, 0};
        o.placement = pl;
    }
    int r = emb_optimizer_create(&u->opt, &oc);
    if (!r)
        r = emb_dist_create(&u->d, MPI_COMM_WORLD, desc, a->tables, &o);
    if (r)
        return r;
    for (int t = 0; t < a->tables; t++) {
        EmbDistPlacement p;
        emb_dist_placement(u->d, t, &p);
        pl[t] = p;
        u->ntw += p.kind == EMB_DIST_TABLEWISE;
        u->nrw += p.kind == EMB_DIST_ROWWISE;
        EmbTable *lt = emb_dist_local_table(u->d, t);
        const EmbInitializer init = {.kind = EMB_INIT_UNIFORM, .a = -0.05f, .b = 0.05f,
                                     .seed = (uint64_t)t};
        if (lt)
            emb_table_initialize(lt, &init);
    }
    double load[64];
    if (P <= 64 && !emb_dist_plan_cost(desc, a->tables, P, &o.place, pl, load, NULL))
        for (int q = 0; q < P; q++)
            u->model_s = load[q] > u->model_s ? load[q] : u->model_s;
    return 0;
}

static int run_create(Run *u, const Args *a, const EmbDistTableDesc *desc, EmbStrategy *s,
                      int groups, int kind)
{
    u->m = NULL;
    const int r = run_build(u, a, desc, s, groups, kind);
    u->m = r ? NULL : malloc(sizeof(double) * (size_t)(NT_ * a->steps));
    return r ? r : u->m ? 0 : EMB_ENOMEM;
}

/* The ensemble and optimizer of @p u (its times kept). */
static void run_teardown(Run *u)
{
    emb_dist_destroy(&u->d);
    emb_optimizer_destroy(&u->opt);
}

static void run_destroy(Run *u)
{
    run_teardown(u);
    free(u->m);
}

/* One training step of @p u; a step < 0 is warmup (not kept); @p next: the next step's
   batches (NULL: none), prefetched when u->prefetch. */
static void run_step(Run *u, int step, int rank, const EmbBatch *b, const EmbBatch *next,
                     const EmbOutputs *eo, const EmbOutputs *go)
{
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    int r = emb_dist_maplookup(u->d, b, NULL, eo);
    const double t1 = MPI_Wtime();
    if (!r)
        r = emb_dist_backward(u->d, go);
    if (!r && u->prefetch && next) {
        MPI_Barrier(MPI_COMM_WORLD); /* as before the forward: the ranks' skew is not the
                                        id exchange's (both modes time it after a barrier) */
        r = emb_dist_prefetch(u->d, next, NULL);
    }
    if (!r)
        r = emb_dist_update(u->d, u->opt, 0);
    const double t2 = MPI_Wtime();
    if (r) {
        fprintf(stderr, "rank %d: step failed: %s\n", rank, emb_dist_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    EmbDistStats st;
    emb_dist_stats(u->d, &st);
    double mine[NT_] = {t2 - t0, t1 - t0, st.pool_s, st.exchange_s, st.backward_s,
                        st.update_s, st.grad_exchange_s, st.ids_wait_s}, worst[NT_];
    MPI_Reduce(mine, worst, NT_, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int64_t mb[3] = {st.ids_bytes, st.rows_bytes, st.grad_bytes};
    MPI_Allreduce(MPI_IN_PLACE, mb, 3, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (step < 0)
        return;
    for (int k = 0; k < NT_; k++)
        u->m[k * u->steps + step] = worst[k];
    for (int k = 0; k < 3; k++)
        u->bytes[k] = mb[k];
}

static void report(Run *u, const Args *a, int P)
{
    double q[NT_][3];
    for (int k = 0; k < NT_; k++)
        spread(u->m + k * a->steps, a->steps, q[k]);
    if (u->name[0])
        printf("[%s] ", u->name);
    printf("dist-bench: %d ranks, %d tables (%d table-wise, %d row-wise, %d other), D %d, "
           "%d bags of %d per rank, %d groups, %d threads, %d steps\n", P, a->tables, u->ntw,
           u->nrw, a->tables - u->ntw - u->nrw, a->dim, a->batch, a->bag, u->groups, a->threads, a->steps);
    static const char *names[NT_] = {"step", "forward", " pool", " exchange", "backward",
                                     "update", "bwd+upd MPI", "ids wait"};
    for (int k = 0; k < NT_; k++)
        printf("  %-10s %8.3f ms  [p10 %.3f .. p90 %.3f]\n", names[k], 1e3 * q[k][0],
               1e3 * q[k][1], 1e3 * q[k][2]);
    printf("  bytes per step, all ranks, to other ranks: ids %lld, rows %lld, gradients "
           "%lld\n", (long long)u->bytes[0], (long long)u->bytes[1], (long long)u->bytes[2]);
    printf("RESULT%s%s ranks=%d groups=%d step_ms=%.3f step_p10_ms=%.3f forward_ms=%.3f "
           "forward_p10_ms=%.3f forward_p90_ms=%.3f pool_ms=%.3f exchange_ms=%.3f "
           "backward_ms=%.3f update_ms=%.3f grad_exchange_ms=%.3f ids_bytes=%lld "
           "rows_bytes=%lld grad_bytes=%lld prefetch=%d ids_wait_ms=%.4f "
           "ids_wait_p10_ms=%.4f ids_wait_p90_ms=%.4f\n", u->name[0] ? " placement=" : "",
           u->name, P, u->groups, 1e3 * q[T_TOTAL][0],
           1e3 * q[T_TOTAL][1], 1e3 * q[T_FWD][0], 1e3 * q[T_FWD][1], 1e3 * q[T_FWD][2],
           1e3 * q[T_POOL][0], 1e3 * q[T_XCHG][0], 1e3 * q[T_BWD][0], 1e3 * q[T_UPD][0],
           1e3 * q[T_GX][0], (long long)u->bytes[0], (long long)u->bytes[1],
           (long long)u->bytes[2], u->prefetch, 1e3 * q[T_IDS][0], 1e3 * q[T_IDS][1],
           1e3 * q[T_IDS][2]);
}

/* --paired: each placement's median step, and auto's step over the best fixed placement's
   per round (the fixed one of lowest median; the planner's runs against it). */
static void paired_report(Run *runs, int n, int steps, int P)
{
    double med[8], q[3], *v = malloc(sizeof(double) * (size_t)steps);
    int best = -1;
    for (int k = 0; k < n; k++) {
        memcpy(v, runs[k].m + T_TOTAL * steps, sizeof(double) * (size_t)steps);
        spread(v, steps, q);
        med[k] = q[0];
        const int fixed = strcmp(runs[k].name, "auto") && strcmp(runs[k].name, "auto-bf16");
        if (fixed && (best < 0 || med[k] < med[best]))
            best = k;
        printf("paired %-10s step %8.3f ms  [p10 %.3f .. p90 %.3f]  modelled %.3f ms "
               "(modelled / measured %.2f)\nRESULT_MODEL ranks=%d placement=%s step_ms=%.3f "
               "model_ms=%.3f\n", runs[k].name, 1e3 * q[0], 1e3 * q[1], 1e3 * q[2],
               1e3 * runs[k].model_s, runs[k].model_s / q[0], P, runs[k].name, 1e3 * q[0],
               1e3 * runs[k].model_s);
    }
    int plain = -1; /* auto-bf16 is also compared with auto */
    for (int k = 0; k < n; k++)
        plain = strcmp(runs[k].name, "auto") ? plain : k;
    for (int k = 0; k < n && best >= 0; k++) {
        if (strncmp(runs[k].name, "auto", 4))
            continue;
        const int vs = k != plain && plain >= 0 ? plain : best;
        for (int i = 0; i < steps; i++)
            v[i] = runs[k].m[T_TOTAL * steps + i] / runs[vs].m[T_TOTAL * steps + i];
        spread(v, steps, q);
        printf("paired %s / %s per round: median %.3f [p10 %.3f .. p90 %.3f]\n"
               "RESULT_PAIRED ranks=%d placement=%s against=%s ratio=%.4f ratio_p10=%.4f "
               "ratio_p90=%.4f\n", runs[k].name, runs[vs].name, q[0], q[1], q[2], P,
               runs[k].name, runs[vs].name, q[0], q[1], q[2]);
    }
    free(v);
}

/*
 * Which run goes @p j-th in round @p round of @p n: a Williams design (the first row 0, 1,
 * n-1, 2, n-2, ..; row r adds r mod n; odd n: the n rows again reversed), so that over n
 * rounds (2n when n is odd) every run takes every position equally often and follows
 * every other run equally often: what a step inherits from the step before it (the cache
 * its predecessor left) and its place in the round cancel between the runs compared.
 */
static int slot(int n, int round, int j)
{
    if ((n & 1) && (round / n) & 1)
        j = n - 1 - j;
    const int w = j == 0 ? 0 : (j & 1) ? (j + 1) / 2 : n - j / 2;
    return (w + round % n) % n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    Args a;
    if (parse(argc, argv, &a, rank == 0 ? stderr : NULL)) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np N dist-bench [--quick] [--tables 26] [--rows "
                    "200000] [--dim 64] [--batch 1024 (per rank)] [--bag 1] [--steps 20] "
                    "[--warmup 3] [--groups 1] [--compare-groups 0] [--threads 1] "
                    "[--plan table|row|auto] [--zipf 1.05 (0: uniform ids)] "
                    "[--show-plan] [--mix] [--prefetch 0|1] [--bf16 0|1] [--builds 4] [--paired "
                    "auto,table,row,column,replicated,auto-bf16]\n");
        MPI_Finalize();
        return 2;
    }
    EmbDistTableDesc desc[26];
    int64_t W = 0; /* the concat output's width */
    for (int t = 0; t < a.tables; t++) {
        const int64_t rows = a.mix ? mix_rows[t] : criteo[t] < a.rows ? criteo[t] : a.rows;
        desc[t] = (EmbDistTableDesc){.name = "t", .nrows = rows,
                                     .featuresize = a.mix ? mix_dim[t] : a.dim,
                                     .dtype = EMB_F32};
        W += desc[t].featuresize;
    }
    /* the planner is told each table's ids and distinct ids per step (Zipf ids repeat) */
    if (!a.show_plan && dist_bench_describe(desc, a.tables, P, (int64_t)a.batch * a.bag, a.zipf)) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (a.show_plan) {
        const int r = rank == 0 ? dist_bench_show_plan(desc, a.tables, a.batch,
                                                       (int64_t)a.batch * a.bag, a.zipf) : 0;
        MPI_Finalize();
        return r ? 1 : 0;
    }
    /* --compare-groups N: a second ensemble of the same tables with N groups, its steps
       interleaved with the first's on the same batches (the overlap, side by side) */
    const int nruns = a.npaired ? a.npaired : a.compare > 0 ? 2 : 1;
    EmbStrategy *s;
    const EmbStrategyOptions so = {.nthreads = a.threads};
    Run runs[8];
    int r = emb_strategy_prealloc_concat(&s, &so);
    for (int k = 0; k < nruns && !r; k++)
        r = a.npaired ? run_create(&runs[k], &a, desc, s, a.groups, a.paired[k])
                      : run_create(&runs[k], &a, desc, s, k ? a.compare : a.groups, -1);
    if (r) {
        fprintf(stderr, "rank %d: setup failed: %s %s\n", rank, emb_dist_last_error(),
                emb_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int64_t nnz = (int64_t)a.batch * a.bag;
    const int nall = a.warmup + a.steps; /* every step's batches made first: prefetching
                                            needs the next step's while this one runs */
    int64_t *ids = malloc(sizeof(int64_t) * (size_t)(nnz * a.tables * nall));
    EmbBatch (*ball)[26] = malloc(sizeof *ball * (size_t)nall);
    float *out = malloc(sizeof(float) * (size_t)(a.batch * W));
    float *dy = malloc(sizeof(float) * (size_t)(a.batch * W));
    for (int64_t i = 0; i < a.batch * W; i++)
        dy[i] = (float)((i % 7) - 3) * 0.01f;
    uint64_t seed = 1234 + (uint64_t)rank;
    for (int step = -a.warmup; step < a.steps; step++) {
        EmbBatch *b = ball[step + a.warmup];
        int64_t *sids = ids + (int64_t)(step + a.warmup) * nnz * a.tables;
        for (int t = 0; t < a.tables; t++) {
            /* fresh ids every step from the benchmarks' generator (bench_ids.h): Zipf(S)
               (--zipf S, 0: uniform), the table's hot rows the same on every rank */
            BenchIdGen g;
            bench_idgen_init(&g, a.zipf > 0 ? BENCH_IDS_ZIPF : BENCH_IDS_UNIFORM,
                             desc[t].nrows, a.zipf, (uint64_t)t);
            for (int64_t k = 0; k < nnz; k++)
                sids[t * nnz + k] = bench_idgen_row(&g, &seed, k);
            b[t] = (EmbBatch){.ids = sids + t * nnz, .nnz = nnz, .nbags = a.batch,
                              .bag_size = a.bag};
        }
    }
    /* --paired: every ensemble is built again (in the other order, and warmed up again)
       --builds - 1 times at equal intervals: a build's memory placement makes it a few
       per cent faster or slower for its whole life (the same placement built twice: 0.99
       to 1.04 in one job), a random effect that averages out over the builds */
    const int nb = a.npaired ? (a.rebuild < a.steps ? a.rebuild : a.steps) : 1;
    const int seg = a.steps / nb;
    const EmbOutputs eo = {.concat = out, .concat_stride = W};
    const EmbOutputs go = {.concat = dy, .concat_stride = W};
    for (int step = -a.warmup; step < a.steps; step++) {
        const EmbBatch *b = ball[step + a.warmup];
        const int again = nb > 1 && step + 1 < nb * seg && step >= 0 && (step + 1) % seg == 0;
        const EmbBatch *next = step + 1 < a.steps && !again ? ball[step + a.warmup + 1] : NULL;
        for (int k = 0; k < nruns; k++)
            run_step(&runs[slot(nruns, step + a.warmup, k)], step, rank, b, next, &eo, &go);
        if (!again)
            continue;
        const int back = (step + 1) / seg & 1; /* odd builds from the list's end */
        for (int i = 0; i < nruns && !r; i++)
            run_teardown(&runs[i]);
        for (int i = 0; i < nruns && !r; i++) {
            const int k = back ? nruns - 1 - i : i;
            r = run_build(&runs[k], &a, desc, s, a.groups, a.paired[k]);
        }
        if (r) {
            fprintf(stderr, "rank %d: rebuild failed: %s\n", rank, emb_dist_last_error());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (int w = 0; w < a.warmup; w++)
            for (int k = 0; k < nruns; k++)
                run_step(&runs[slot(nruns, w, k)], -1, rank, ball[w], NULL, &eo, &go);
    }
    if (rank == 0)
        for (int k = 0; k < nruns; k++)
            report(&runs[k], &a, P);
    if (rank == 0 && nruns == 2) {
        /* the per-step difference of the forward times, both runs on the same batch */
        double *dif = malloc(sizeof(double) * (size_t)a.steps), q[3];
        for (int i = 0; i < a.steps; i++)
            dif[i] = runs[1].m[T_FWD * a.steps + i] - runs[0].m[T_FWD * a.steps + i];
        spread(dif, a.steps, q);
        printf("forward with %d groups minus with %d, per step: median %+.3f ms [p10 %+.3f .. "
               "p90 %+.3f]\nRESULT_COMPARE ranks=%d groups=%d,%d diff_ms=%.3f diff_p10_ms=%.3f "
               "diff_p90_ms=%.3f\n", a.compare, a.groups, 1e3 * q[0], 1e3 * q[1], 1e3 * q[2],
               P, a.groups, a.compare, 1e3 * q[0], 1e3 * q[1], 1e3 * q[2]);
        free(dif);
    }
    if (rank == 0 && a.npaired)
        paired_report(runs, nruns, a.steps, P);
    free(ids), free(ball), free(out), free(dy);
    for (int k = 0; k < nruns; k++)
        run_destroy(&runs[k]);
    emb_strategy_destroy(&s);
    MPI_Finalize();
    return 0;
}
