/*
 * emb-bench — the strategy benchmark of embtables (perf/).
 *
 * Runs an ensemble of tables under every strategy, thread count and phase and prints, per
 * row, the median and p90 time per iteration, GB/s of table bytes moved, the fraction of
 * the memory roof measured in this run and the ratio to the sequential strategy; then, with
 * --peer torch, PyTorch on the same tables and ids; then one verdict line per strategy.
 * `emb-bench --help` lists the options; the README's "Reading the benchmark" explains them.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emb_bench.h"

double bench_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

uint64_t bench_splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int progress_shown;

/* One progress line on stderr, rewritten in place on a terminal. */
void bench_progress(const char *fmt, ...)
{
    static double last;
    const int tty = isatty(2);
    double t = bench_now();
    if (!tty && t - last < 2.0)
        return;
    last = t;
    va_list ap;
    va_start(ap, fmt);
    fputs(tty ? "\r\033[K" : "", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(tty ? "" : "\n", stderr);
    va_end(ap);
    progress_shown = tty;
}

void bench_progress_end(void)
{
    if (progress_shown)
        fputs("\r\033[K", stderr);
    progress_shown = 0;
}

/* ---- the run ------------------------------------------------------------------------ */

typedef struct Plan {
    const BenchConfig *cfg;
    BenchWorkload *w;
    BenchRoof roof[BENCH_MAX_VARIANTS][BENCH_MAX_THREADS + 1];
    int roof_threads[BENCH_MAX_THREADS + 1]; /* 1 first, then the configured counts */
    int nroof;
    int done, total;
} Plan;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static const BenchRoof *roof_for(const Plan *p, int v, int threads)
{
    for (int i = 0; i < p->nroof; i++)
        if (p->roof_threads[i] == threads)
            return &p->roof[v][i];
    return &p->roof[v][0];
}

static int measure_roofs(Plan *p, const BenchConfig *c)
{
    p->roof_threads[p->nroof++] = 1;
    for (int i = 0; i < c->nthreads; i++)
        if (c->threads[i] != 1)
            p->roof_threads[p->nroof++] = c->threads[i];
    for (int v = 0; v < c->nvariants; v++) {
        const BenchBagSpec *b = &c->variants[v];
        int32_t bag = (b->lo + b->hi + 1) / 2;
        int64_t bags = c->batch * c->ntables;
        for (int i = 0; i < p->nroof; i++) {
            bench_progress("measuring the roof: %s, %d threads", b->name, p->roof_threads[i]);
            if (bench_roof_measure(&p->roof[v][i], p->roof_threads[i], c->roof_mib,
                                   bench_roof_dim(c), bags, bag < 1 ? 1 : bag, 0,
                                   c->seed) != 0) {
                fprintf(stderr, "emb-bench: cannot allocate the roof buffer\n");
                return -1;
            }
        }
    }
    bench_progress_end();
    return 0;
}

/* Replaces each gather roof by the same loop over the run's own tables and ids. */
static void measure_workload_roofs(Plan *p, const BenchConfig *c)
{
    for (int v = 0; v < c->nvariants; v++)
        for (int i = 0; i < p->nroof; i++) {
            bench_progress("measuring the roof on the workload: %s, %d threads",
                           c->variants[v].name, p->roof_threads[i]);
            const double gbs = bench_roof_workload(p->w, c, v, p->roof_threads[i]);
            if (gbs > 0)
                p->roof[v][i].gather_gbs = gbs;
        }
    bench_progress_end();
}

/* Times one row: warmup, then iters (more until min_time); fills median and p90. */
static int time_row(const Plan *p, BenchRunner *r, BenchRow *row)
{
    const BenchConfig *c = p->cfg;
    const BenchPhaseSpec *ph = &c->phases[row->phase];
    int cap = c->min_time > 0 ? 10 * c->iters : c->iters, n = 0, it = 0;
    double *t = malloc((size_t)cap * sizeof *t), start = bench_now();
    if (!t)
        return -1;
    for (; it < c->warmup; it++)
        if (bench_runner_iter(r, ph, row->variant, it % BENCH_NSETS) != 0)
            goto fail;
    while (n < cap && (n < c->iters || bench_now() - start < c->min_time)) {
        double t0 = bench_now();
        if (bench_runner_iter(r, ph, row->variant, it++ % BENCH_NSETS) != 0)
            goto fail;
        t[n++] = bench_now() - t0;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    row->median_s = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    row->p90_s = t[(9 * n + 9) / 10 - 1];
    free(t);
    return 0;
fail:
    fprintf(stderr, "emb-bench: %s failed: %s\n", ph->name, emb_last_error());
    free(t);
    return -1;
}

static void row_model(const Plan *p, BenchRow *row)
{
    const BenchPhaseSpec *ph = &p->cfg->phases[row->phase];
    const BenchRoof *roof = roof_for(p, row->variant, row->threads);
    double rd = ph->kind != PHASE_UPDATE ? bench_bytes_read(p->w, p->cfg, row->variant) : 0;
    double up = ph->kind != PHASE_FORWARD ? bench_bytes_updated(p->w, p->cfg, row->variant) : 0;
    row->bytes = rd + up;
    row->roof_s = rd / (roof->gather_gbs * 1e9) + up / (roof->update_gbs * 1e9);
}

static int run_strategy(Plan *p, BenchResults *res, int v, int ph, int s)
{
    const BenchConfig *c = p->cfg;
    for (int i = 0; i < c->nthreads; i++) {
        int threads = s == STRAT_SEQUENTIAL ? 1 : c->threads[i];
        bench_progress("[%d/%d] %s %s %s, %d thread%s", ++p->done, p->total,
                       c->variants[v].name, c->phases[ph].name, bench_strategy_name(s),
                       threads, threads > 1 ? "s" : "");
        BenchRunner *r = bench_runner_create(c, p->w, s, threads);
        if (!r)
            return s == STRAT_SEQUENTIAL ? -1 : 0;
        BenchRow row = {.variant = v, .phase = ph, .strategy = s, .threads = threads};
        int rc = time_row(p, r, &row);
        bench_runner_destroy(&r);
        if (rc != 0)
            return -1;
        row_model(p, &row);
        if (bench_results_add(res, &row) != 0)
            return -1;
        if (s == STRAT_SEQUENTIAL)
            break;
    }
    return 0;
}

static int run_all(Plan *p, BenchResults *res)
{
    const BenchConfig *c = p->cfg;
    int nstrat = 0;
    for (int s = 0; s < STRAT_COUNT; s++)
        if (c->strategies >> s & 1)
            nstrat += s == STRAT_SEQUENTIAL ? 1 : c->nthreads;
    p->total = c->nvariants * c->nphases * nstrat;
    for (int v = 0; v < c->nvariants; v++)
        for (int ph = 0; ph < c->nphases; ph++)
            for (int s = 0; s < STRAT_COUNT; s++)
                if ((c->strategies >> s & 1) && run_strategy(p, res, v, ph, s) != 0)
                    return -1;
    bench_progress_end();
    return 0;
}

static int report(BenchResults *res, const BenchConfig *c)
{
    int rc = 0;
    bench_report_table(res, c, stdout);
    if (c->csv && bench_report_csv(res, c, c->csv) != 0)
        rc = -1;
    if (c->plot && bench_report_plot(res, c, c->plot) != 0)
        rc = -1;
    bench_report_verdicts(res, c, stdout);
    return rc;
}

int main(int argc, char **argv)
{
    static BenchConfig cfg;
    bench_config_default(&cfg);
    int rc = bench_config_parse(&cfg, argc, argv);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    bench_config_print(&cfg, stdout);
    if (cfg.nphases == 0 || !cfg.strategies)
        return fprintf(stderr, "emb-bench: nothing to run\n"), 2;
    static Plan plan;
    static BenchWorkload w;
    BenchResults res = {0};
    plan.cfg = &cfg;
    plan.w = &w;
    rc = measure_roofs(&plan, &cfg);
    if (rc == 0)
        rc = bench_workload_create(&w, &cfg, cfg.peer != NULL);
    if (rc == 0) {
        measure_workload_roofs(&plan, &cfg);
        rc = run_all(&plan, &res);
    }
    if (rc == 0) {
        bench_results_relate(&res);
        if (cfg.peer && bench_peer_run(&res, &cfg, &w) != 0)
            fprintf(stderr, "emb-bench: the peer did not run; see above\n");
        rc = report(&res, &cfg);
    }
    bench_workload_destroy(&w);
    bench_results_free(&res);
    return rc == 0 ? 0 : 1;
}
