/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_tier_compare.c — emb-bench's tiered tables (tier:) against the same ensemble
 * held in memory (emb_bench_tier.c builds them).
 *
 * The comparison runs, per variant and phase, one strategy (auto, else prealloc-concat,
 * parallel, sequential: the first given) at the largest thread count on two workloads that
 * share ids, outputs and gradients: the run's (tiered tables) and its twin (each tiered
 * table replaced by an in-memory table with the same initial rows). They alternate in
 * blocks of BLOCK steps (a tiered step's prefetch of the next batch overlaps only its own
 * steps, as in training), the block order swapped every round. Each side has its own copy
 * of the stream of steps (emb_bench_stream.c), started at the same step: both run the
 * same fresh ids, in the same order (with --recycle, the same four sets). Per round: the ratio of the
 * blocks' times; reported: the median step of each, the median ratio and its quartiles, the
 * ratio of CPU time (the process's, I/O threads included: steadier than wall time on a
 * shared machine) and the tiered tables' counters over the timed tiered steps.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_disk.h"
#include "emb_bench.h"

#define BLOCK 4 /* steps of one side per round */

/* ---- the in-memory twin --------------------------------------------------------------- */

/* @w's workload with each tiered table replaced by an in-memory table of the same initial
   rows; the other tables, outputs and gradients shared; its own id sets, holding the same
   steps as @w's stream next hands out. 0 or -1 (printed). */
static int twin_make(const BenchWorkload *w, const BenchConfig *c, BenchWorkload *m)
{
    *m = *w;
    memset(m->opt, 0, sizeof m->opt);
    memset(m->sets, 0, sizeof m->sets);
    m->ntiered = 0, m->tier_paths = NULL, m->twin = 1, m->shm = NULL, m->shm_dir[0] = '\0';
    m->stream = NULL; /* no roof here: the I/O roof is the comparison's */
    if (!(m->tables = calloc((size_t)w->ntables, sizeof *m->tables)))
        return -1;
    for (int v = 0; v < c->nvariants; v++) /* the ring as @w's: steps k .. k + NSETS - 1 */
        for (int j = 0; j < BENCH_NSETS; j++) {
            const int64_t k = w->next_step[v] - (w->refill[v] >= 0) + j;
            if (bench_idset_create(&m->sets[v][k % BENCH_NSETS], c, v,
                                   w->steady ? k : k % BENCH_NSETS) != 0)
                return fprintf(stderr, "emb-bench: out of memory\n"), -1;
        }
    for (int t = 0; t < w->ntables; t++) {
        const BenchTableSpec *s = &c->tables[t];
        if (!s->tiered) {
            m->tables[t] = w->tables[t];
            continue;
        }
        const EmbTableOptions o = {.name = emb_table_name(w->tables[t])};
        const EmbInitializer in = bench_tier_initializer(c, t);
        int rc = emb_table_create(&m->tables[t], s->rows, s->dim, s->dtype, &o);
        if (rc || (rc = emb_table_initialize(m->tables[t], &in)) != 0) {
            fprintf(stderr, "emb-bench: in-memory twin of table %d: %s\n", t, emb_last_error());
            return -1;
        }
    }
    return 0;
}

static void twin_free(BenchWorkload *m, const BenchConfig *c)
{
    for (int v = 0; v < BENCH_MAX_VARIANTS; v++)
        for (int k = 0; k < BENCH_NSETS; k++)
            bench_idset_free(&m->sets[v][k]);
    for (int t = 0; m->tables && t < m->ntables; t++)
        if (c->tables[t].tiered)
            emb_table_destroy(&m->tables[t]);
    free(m->tables);
    bench_optimizers_destroy(m);
}

/* ---- the comparison ------------------------------------------------------------------- */

/* The tiered tables' counters summed (rows), and the bytes of the records they read. */
typedef struct TierCount {
    int64_t hits, misses, read, written;
    double bytes_read;
} TierCount;

static TierCount count(const BenchWorkload *w)
{
    TierCount n = {0};
    EmbTieredStats s;
    for (int t = 0; t < w->ntables; t++)
        if (emb_table_is_tiered(w->tables[t]) && emb_table_tiered_stats(w->tables[t], &s) == 0) {
            n.hits += s.hits, n.misses += s.misses, n.read += s.rows_read;
            n.written += s.rows_written;
            n.bytes_read += (double)(s.rows_read * s.record_bytes);
        }
    return n;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One side of the comparison: its runner and what its timed steps took. */
typedef struct Side {
    BenchRunner *r;
    BenchWorkload *w; /* its workload: the stream it takes its steps from */
    double *step;     /* seconds per timed step */
    double *block;    /* seconds per round (BLOCK steps) */
    double cpu, wall; /* summed over the timed steps */
    int n;
} Side;

/* BLOCK steps of @s (timed into round @round unless @round < 0). 0 or -1. */
static int run_block(const BenchConfig *c, Side *s, const BenchPhaseSpec *ph, int v, int round)
{
    const double c0 = cpu_now(), w0 = bench_now();
    for (int k = 0; k < BLOCK; k++) {
        const int slot = bench_stream_next(s->w, c, v); /* untimed */
        if (slot < 0)
            return fprintf(stderr, "emb-bench: out of memory drawing ids\n"), -1;
        const double t0 = bench_now();
        if (bench_runner_iter(s->r, ph, v, slot, NULL) != 0) {
            fprintf(stderr, "emb-bench: %s failed: %s\n", ph->name, emb_last_error());
            return -1;
        }
        if (round >= 0)
            s->step[s->n++] = bench_now() - t0;
    }
    if (round >= 0) {
        s->block[round] = bench_now() - w0;
        s->wall += s->block[round];
        s->cpu += cpu_now() - c0;
    }
    return 0;
}

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The @q quantile of @n values (sorted in place). */
static double quant(double *x, int n, double q)
{
    qsort(x, (size_t)n, sizeof *x, cmp_d);
    const int k = (int)(q * (n - 1) + 0.5);
    return x[k];
}

static void print_row(const BenchConfig *c, const BenchWorkload *w, int v, int ph, Side *s,
                      int rounds, const TierCount *d, FILE *f)
{
    double *ratio = s[1].block; /* reused: the rounds' ratios */
    for (int k = 0; k < rounds; k++)
        ratio[k] = s[0].block[k] / s[1].block[k];
    const double looked = (double)(d->hits + d->misses), secs = s[0].wall;
    const double rd = (double)d->read / secs;
    fprintf(f, "%-13s %-14s %9.3f %9.3f %6.2fx [%4.2f-%4.2f] %6.2fx %6.1f%% %11.0f %11.0f "
            "%9.1f", c->variants[v].name, c->phases[ph].name, 1e3 * quant(s[0].step, s[0].n, 0.5),
            1e3 * quant(s[1].step, s[1].n, 0.5), quant(ratio, rounds, 0.5),
            quant(ratio, rounds, 0.25), quant(ratio, rounds, 0.75), s[0].cpu / s[1].cpu,
            looked > 0 ? 100.0 * (double)d->hits / looked : 0.0, rd,
            (double)d->written / secs, d->bytes_read / 1048576.0);
    fprintf(f, " %6.2f", w->disk_rate[1] > 0 ? rd / w->disk_rate[1] : 0.0);
    /* the I/O roof: the in-memory step plus this step's reads and writes at the page
       cache's cost per record (the floor of any buffered-I/O engine) */
    const double mem = quant(s[1].step, s[1].n, 0.5), steps = (double)s[0].n;
    const double roof = mem + ((double)d->read * w->cached_cost[0] +
                               (double)d->written * w->cached_cost[1]) / steps;
    if (w->cached_cost[0] > 0)
        fprintf(f, " %8.2fx %7.2f", roof / mem, roof / quant(s[0].step, s[0].n, 0.5));
    fputc('\n', f);
}

static void add_delta(TierCount *acc, const TierCount *b, const TierCount *e)
{
    acc->hits += e->hits - b->hits, acc->misses += e->misses - b->misses;
    acc->read += e->read - b->read, acc->written += e->written - b->written;
    acc->bytes_read += e->bytes_read - b->bytes_read;
}

/* Rounds of both sides' blocks, the tiered counters summed over its timed blocks: at least
   c->iters (and 2) rounds and, with min-time, 8 x min-time; the rounds done, or -1. */
static int time_rounds(const BenchConfig *c, BenchWorkload *w, Side *s, int v,
                       const BenchPhaseSpec *phase, int cap, TierCount *d)
{
    const double start = bench_now();
    int done = 0;
    while (done < cap) {
        for (int k = 0; k < 2; k++) {
            const int side = (k + done) & 1;
            const TierCount b = side == 0 ? count(w) : (TierCount){0};
            if (run_block(c, &s[side], phase, v, done) != 0)
                return -1;
            const TierCount e = side == 0 ? count(w) : (TierCount){0};
            add_delta(d, &b, &e);
        }
        done++;
        if (done >= c->iters && done >= 2 && bench_now() - start >= 8 * c->min_time)
            break;
    }
    return done;
}

static int compare_one(const BenchConfig *c, BenchWorkload *w, Side *s, int v, int ph, FILE *f)
{
    const BenchPhaseSpec *phase = &c->phases[ph];
    const int cap = c->min_time > 0 ? 50 * (c->iters < 2 ? 2 : c->iters) : c->iters < 2 ? 2 : c->iters;
    int rc = 0;
    for (int k = 0; k < 2; k++) {
        s[k].n = 0, s[k].cpu = s[k].wall = 0;
        s[k].step = malloc((size_t)(cap * BLOCK) * sizeof *s[k].step);
        s[k].block = malloc((size_t)cap * sizeof *s[k].block);
        rc = rc || !s[k].step || !s[k].block ? -1 : 0;
    }
    for (int k = 0; k < 2 && !rc; k++) /* warm up: caches filled, optimizer state attached */
        rc = run_block(c, &s[k], phase, v, -1);
    TierCount d = {0};
    const int rounds = rc ? -1 : time_rounds(c, w, s, v, phase, cap, &d);
    if (rounds > 0)
        print_row(c, w, v, ph, s, rounds, &d, f);
    for (int k = 0; k < 2; k++)
        free(s[k].step), free(s[k].block);
    return rounds > 0 ? 0 : -1;
}

/* The strategy of the comparison: auto, else prealloc-concat, parallel, sequential. */
static int pick_strategy(const BenchConfig *c, int *threads)
{
    static const int order[] = {STRAT_AUTO, STRAT_PREALLOC_CONCAT, STRAT_PARALLEL,
                                STRAT_SEQUENTIAL};
    for (int i = 0; i < 4; i++)
        if (c->strategies >> order[i] & 1) {
            *threads = order[i] == STRAT_SEQUENTIAL ? 1 : c->threads[c->nthreads - 1];
            return order[i];
        }
    return -1;
}

int bench_tier_compare(const BenchConfig *c, BenchWorkload *w, FILE *f)
{
    int threads = 1;
    const int strategy = pick_strategy(c, &threads);
    BenchWorkload m;
    memset(&m, 0, sizeof m);
    int rc = strategy < 0 ? -1 : twin_make(w, c, &m);
    Side s[2] = {{0}, {0}};
    s[0].w = w, s[1].w = &m;
    s[0].r = rc ? NULL : bench_runner_create(c, w, strategy, threads);
    s[1].r = s[0].r ? bench_runner_create(c, &m, strategy, threads) : NULL;
    rc = s[1].r ? 0 : -1;
    if (!rc)
        fprintf(f, "\ntiered vs in memory: %s, %d threads, the same ids, alternating blocks of "
                "%d steps (ratio: median [quartiles] of the rounds'; cpu: process CPU time)\n"
                "(I/O roof: the in-memory step plus the tiered step's reads and writes at the page "
                "cache's cost; io roof x: it against the in-memory step; of roof: it against the "
                "tiered step)\n"
                "%-13s %-14s %9s %9s %20s %7s %7s %11s %11s %9s %6s %9s %7s\n",
                bench_strategy_name(strategy), threads, BLOCK, "bags", "phase", "tier ms", "mem ms",
                "ratio", "cpu", "hits", "read/s", "written/s", "disk MiB", "of disk", "io roof x",
                "of roof");
    for (int v = 0; v < c->nvariants && !rc; v++)
        for (int ph = 0; ph < c->nphases && !rc; ph++) {
            for (int t = 0; t < w->ntables; t++) /* start from the disk, not the page cache */
                if (w->tier_paths && w->tier_paths[t] && emb_table_tiered_flush(w->tables[t]) == 0)
                    bench_disk_drop_pages(w->tier_paths[t]);
            rc = compare_one(c, w, s, v, ph, f);
        }
    bench_runner_destroy(&s[0].r);
    bench_runner_destroy(&s[1].r);
    if (strategy >= 0 && m.twin)
        twin_free(&m, c);
    return rc;
}
