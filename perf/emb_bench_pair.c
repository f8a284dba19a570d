/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_pair.c — two optimizer configurations timed in one process, in paired rounds
 * (--opt-pair A,B and / or --clip-pair G,R,N/G,R,N; issue 42's "≤ 5 %" targets).
 *
 * Process to process, the same configuration moved by up to 1.5x on the shared machine
 * (docs/bench/2026-11-28-targets-rt.md); inside one process, rounds alternate the sides
 * A B, B A, A B ... so that the machine's drift hits both alike. Each side has its own
 * workload (emb_bench_workload.c: its own tables, optimizer state, outputs and stream of
 * steps, built from the same seed), so neither warms the other's rows and both draw the
 * same fresh ids: round r's block of --pair-steps steps is the same steps on both sides
 * (checked: a hash of every step's ids, per side, must agree). Per round: each side's
 * mean step and apply (the optimizer's pass), and B / A; then the median ratio, its
 * quartiles, range and notch (1.57 IQR / sqrt(n): the median's 95 % interval, as
 * emb-bench's rows), the median of the A-first and of the B-first rounds, and the
 * ratio of each pair of rounds (A B + B A). The order matters: in A B, B A the side
 * that runs twice in a row finds its hot rows in the caches, the other does not, so the
 * second block of a round is the slower one; a pair of rounds gives each side one of
 * each, and its ratio is the one to quote. When the two sides are one configuration, the tables
 * must end bit-identical (checked when each table is at most 64 MiB).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emb_bench.h"

typedef struct PairSide {
    BenchConfig *cfg;     /* the run's configuration with this side's clipping */
    BenchWorkload w;      /* its own tables, optimizer state and stream of steps */
    BenchPhaseSpec phase; /* train:OPT or update:OPT */
    char name[64];        /* "train:rowwise_adagrad clip 0,0,0" */
    uint64_t hash;        /* of every timed and warm-up step's ids, in order */
    int64_t steps, ids;
} PairSide;

static int cmp_dbl(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The value at quantile @q of the sorted @v. */
static double quart(const double *v, int n, double q)
{
    const int k = (int)(q * n + 0.999999) - 1;
    return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

/* FNV-1a over @n bytes, continuing @h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* One step of side @s on variant @v's next step; its seconds into @t, the apply's into
   @apply (both added). 0 or -1 (printed). */
static int side_step(PairSide *s, BenchRunner *r, int v, double *t, double *apply)
{
    const int slot = bench_stream_next(&s->w, s->cfg, v); /* untimed */
    if (slot < 0)
        return fprintf(stderr, "emb-bench: out of memory drawing ids\n"), -1;
    const BenchIdSet *set = &s->w.sets[v][slot];
    s->hash = fnv(s->hash, &set->step, sizeof set->step);
    s->hash = fnv(s->hash, set->ids, (size_t)set->nnz * sizeof *set->ids);
    s->steps++;
    s->ids += set->nnz;
    double bd[BD_COUNT] = {0};
    const double t0 = bench_now();
    if (bench_runner_iter(r, &s->phase, v, slot, bd) != 0)
        return fprintf(stderr, "emb-bench: %s failed: %s\n", s->name, emb_last_error()), -1;
    *t += bench_now() - t0;
    *apply += bd[BD_APPLY];
    return 0;
}

/* Prints the median, quartiles, range and notch of @n ratios (@tmp: n scratch). */
static void print_ratios(const char *what, const double *ratio, int n, double *tmp)
{
    memcpy(tmp, ratio, (size_t)n * sizeof *tmp);
    const double med = median(tmp, n);
    const double q1 = quart(tmp, n, 0.25), q3 = quart(tmp, n, 0.75);
    printf("%s B/A over %d rounds: median %.3f, quartiles %.3f .. %.3f, range %.3f .. %.3f, "
           "notch +-%.1f%%\n", what, n, med, q1, q3, tmp[0], tmp[n - 1],
           100 * 1.57 * (q3 - q1) / sqrt((double)n) / med);
}

/* The paired rounds of variant @v under strategy @strategy at @threads. 0 or -1. */
static int run_pair(const BenchConfig *c, PairSide side[2], int v, int strategy, int threads)
{
    const int rounds = c->iters, steps = c->pair_steps;
    BenchRunner *r[2] = {bench_runner_create(side[0].cfg, &side[0].w, strategy, threads),
                         bench_runner_create(side[1].cfg, &side[1].w, strategy, threads)};
    double *buf = calloc((size_t)rounds * 7, sizeof *buf);
    int rc = r[0] && r[1] && buf ? 0 : -1;
    double *t[2] = {buf, buf + rounds}, *ap[2] = {buf + 2 * rounds, buf + 3 * rounds};
    double *ratio = buf + 4 * rounds, *aratio = buf + 5 * rounds, *tmp = buf + 6 * rounds;
    printf("## %s, %s, %d thread%s: A = %s, B = %s; %d rounds of %d steps a side\n",
           c->variants[v].name, bench_strategy_name(strategy), threads, threads == 1 ? "" : "s",
           side[0].name, side[1].name, rounds, steps);
    for (int k = 0; !rc && k < c->warmup; k++) /* untimed, the same steps on both sides */
        for (int s = 0; s < 2 && !rc; s++) {
            double dt = 0, da = 0;
            rc = side_step(&side[s], r[s], v, &dt, &da);
        }
    for (int round = 0; !rc && round < rounds; round++) {
        const int first = round % 2; /* A B, B A, A B, ... */
        for (int j = 0; j < 2 && !rc; j++) {
            const int s = j ? 1 - first : first;
            for (int k = 0; k < steps && !rc; k++)
                rc = side_step(&side[s], r[s], v, &t[s][round], &ap[s][round]);
        }
        ratio[round] = t[1][round] / t[0][round];
        aratio[round] = ap[0][round] > 0 ? ap[1][round] / ap[0][round] : 0;
        if (!rc)
            printf("round %2d (%s): A %9.3f ms (apply %8.3f)  B %9.3f ms (apply %8.3f)  "
                   "B/A %.3f (apply %.3f)\n", round + 1, first ? "B A" : "A B",
                   1e3 * t[0][round] / steps, 1e3 * ap[0][round] / steps,
                   1e3 * t[1][round] / steps, 1e3 * ap[1][round] / steps, ratio[round],
                   aratio[round]);
    }
    if (!rc) {
        for (int s = 0; s < 2; s++) {
            memcpy(tmp, t[s], (size_t)rounds * sizeof *tmp);
            const double step = median(tmp, rounds);
            memcpy(tmp, ap[s], (size_t)rounds * sizeof *tmp);
            printf("%s: median step %.3f ms, apply %.3f ms\n", s ? "B" : "A",
                   1e3 * step / steps, 1e3 * median(tmp, rounds) / steps);
        }
        print_ratios("step", ratio, rounds, tmp);
        print_ratios("apply", aratio, rounds, tmp);
        double by[2]; /* the median ratio of the A-first and of the B-first rounds */
        int nby[2] = {0, 0};
        for (int f = 0; f < 2; f++) {
            for (int round = f; round < rounds; round += 2)
                tmp[nby[f]++] = ratio[round];
            by[f] = nby[f] ? median(tmp, nby[f]) : 0;
        }
        printf("step B/A, A first: %.3f (%d rounds); B first: %.3f (%d rounds)\n", by[0],
               nby[0], by[1], nby[1]);
        /* A B then B A: each side once first (after the other side's block: its rows out
           of the caches) and once second (after its own block) */
        const int nq = rounds / 2;
        for (int q = 0; q < nq; q++)
            ratio[q] = (t[1][2 * q] + t[1][2 * q + 1]) / (t[0][2 * q] + t[0][2 * q + 1]);
        if (nq)
            print_ratios("step (A B + B A rounds)", ratio, nq, tmp);
    }
    bench_runner_destroy(&r[0]);
    bench_runner_destroy(&r[1]);
    free(buf);
    return rc;
}

/* Whether the two sides' tables hold the same bits (1), differ (0), or are too large to
   compare here (-1). */
static int same_tables(const BenchConfig *c, PairSide side[2])
{
    for (int t = 0; t < c->ntables; t++)
        if (c->tables[t].dynamic || c->tables[t].rows * c->tables[t].dim > (16 << 20))
            return -1;
    int same = 1;
    for (int t = 0; t < c->ntables && same; t++) {
        const size_t n = (size_t)(c->tables[t].rows * c->tables[t].dim);
        float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        const int32_t d = c->tables[t].dim;
        same = a && b && emb_table_read(side[0].w.tables[t], a, d) == 0 &&
                       emb_table_read(side[1].w.tables[t], b, d) == 0 &&
                       memcmp(a, b, n * sizeof *a) == 0;
        free(a);
        free(b);
    }
    return same;
}

/* The side's phase, clipping and name from the run's configuration. 0 or -1. */
static int side_init(const BenchConfig *c, PairSide *s, int k, BenchPhaseKind kind,
                     BenchOpt base)
{
    if (!(s->cfg = malloc(sizeof *s->cfg)))
        return -1;
    memcpy(s->cfg, c, sizeof *c);
    if (c->pair_clip_given)
        memcpy(s->cfg->clip, c->pair_clip[k], sizeof s->cfg->clip);
    s->phase.kind = kind;
    s->phase.opt = c->pair_opt[k] != OPT_NONE ? c->pair_opt[k] : base;
    snprintf(s->phase.name, sizeof s->phase.name, "%s:%s", kind == PHASE_TRAIN ? "train" : "update",
             bench_opt_name(s->phase.opt));
    snprintf(s->name, sizeof s->name, "%s clip %g,%g,%g", s->phase.name, s->cfg->clip[0],
             s->cfg->clip[1], s->cfg->clip[2]);
    s->hash = 0xcbf29ce484222325ull;
    return 0;
}

int bench_pair_run(const BenchConfig *c)
{
    BenchPhaseKind kind = PHASE_TRAIN; /* the first update / train phase given, else train */
    BenchOpt base = OPT_NONE;
    for (int p = c->nphases - 1; p >= 0; p--)
        if (c->phases[p].kind != PHASE_FORWARD)
            kind = c->phases[p].kind, base = c->phases[p].opt;
    for (int t = 0; t < c->ntables; t++)
        if (c->tables[t].tiered)
            return fprintf(stderr, "emb-bench: --opt-pair / --clip-pair: no tiered tables\n"), -1;
    if (c->peer || c->sweep)
        return fprintf(stderr, "emb-bench: --opt-pair / --clip-pair: no --peer, no --sweep\n"),
               -1;
    if (base == OPT_NONE && (c->pair_opt[0] == OPT_NONE || c->pair_opt[1] == OPT_NONE))
        return fprintf(stderr, "emb-bench: --clip-pair: name the optimizer (--phases "
                               "train:OPT or --opt-pair)\n"), -1;
    PairSide side[2];
    memset(side, 0, sizeof side);
    int rc = 0;
    for (int s = 0; s < 2 && !rc; s++) {
        rc = side_init(c, &side[s], s, kind, base);
        if (!rc)
            rc = bench_workload_create(&side[s].w, side[s].cfg, 0);
    }
    if (!rc)
        bench_workload_header(&side[0].w, c, stdout);
    for (int v = 0; v < c->nvariants && !rc; v++)
        for (int st = 0; st < STRAT_COUNT && !rc; st++)
            for (int i = 0; (c->strategies >> st & 1) && i < c->nthreads && !rc; i++) {
                rc = run_pair(c, side, v, st, st == STRAT_SEQUENTIAL ? 1 : c->threads[i]);
                if (st == STRAT_SEQUENTIAL)
                    break;
            }
    if (!rc) {
        const int same = side[0].hash == side[1].hash && side[0].steps == side[1].steps &&
                         side[0].ids == side[1].ids;
        printf("same work: %s (each side %lld steps, %lld ids, ids hash %016llx / %016llx)\n",
               same ? "yes" : "NO", (long long)side[0].steps, (long long)side[0].ids,
               (unsigned long long)side[0].hash, (unsigned long long)side[1].hash);
        rc = same ? 0 : -1;
    }
    if (!rc && strcmp(side[0].name, side[1].name) == 0) {
        const int same = same_tables(c, side);
        printf("one configuration on both sides: tables %s\n",
               same > 0 ? "bit-identical" : same ? "NOT identical" : "too large to compare");
        rc = same == 0 ? -1 : 0;
    }
    for (int s = 0; s < 2; s++) {
        bench_optimizers_destroy(&side[s].w);
        if (side[s].w.tables)
            bench_workload_destroy(&side[s].w);
        free(side[s].cfg);
    }
    return rc;
}
