/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb-bench — the strategy benchmark of embtables (perf/).
 *
 * Runs an ensemble of tables under every strategy, thread count and phase and prints, per
 * row, the median and p90 time per iteration, GB/s of table bytes moved, the fraction of
 * the memory roof measured in this run and the ratio to the sequential strategy; then, with
 * --peer torch, PyTorch on the same tables and ids; then one verdict line per strategy.
 * `emb-bench --help` lists the options; docs/guide/benchmark.md explains every column.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emb_bench.h"

/* ---- the run ------------------------------------------------------------------------ */

typedef struct Plan {
    const BenchConfig *cfg;
    BenchWorkload *w;
    BenchRates rates[BENCH_MAX_THREADS + 1];  /* the roof's rates at each thread count */
    BenchPlain plain[BENCH_MAX_VARIANTS][BENCH_MAX_THREADS + 1]; /* the plain loops */
    int roof_threads[BENCH_MAX_THREADS + 1]; /* 1 first, then the configured counts */
    int nroof;
    int done, total;
} Plan;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int roof_index(const Plan *p, int threads)
{
    for (int i = 0; i < p->nroof; i++)
        if (p->roof_threads[i] == threads)
            return i;
    return 0;
}

/*
 * The rates of each level at every thread count of the run, printed: the roof's inputs.
 * Measured at start-up and again after the rows (@again), each level's rate the better
 * of the two: a rate measured while other programs took the cores would make the roof
 * slower than a row that ran in a quiet moment.
 */
static int measure_rates(Plan *p, const BenchConfig *c, int again)
{
    if (!again) {
        p->roof_threads[p->nroof++] = 1;
        for (int i = 0; i < c->nthreads; i++)
            if (c->threads[i] != 1)
                p->roof_threads[p->nroof++] = c->threads[i];
    }
    int64_t size[BENCH_LEVELS - 1];
    bench_cache_sizes(size);
    const int32_t row_bytes = 4 * bench_roof_dim(c);
    /* DRAM: a buffer twice the LLC (a smaller one, --quick's, errs fast: still a bound) */
    const int64_t llc_mib = 2 * size[2] >> 20, dram_mib =
        c->quick || c->roof_mib > llc_mib ? c->roof_mib : llc_mib;
    for (int i = 0; i < p->nroof; i++) {
        BenchRates r;
        bench_progress("measuring the roof's rates: %d threads", p->roof_threads[i]);
        if (bench_rates_measure(&r, p->roof_threads[i], row_bytes, dram_mib, c->seed) != 0) {
            fprintf(stderr, "emb-bench: cannot allocate the roof's buffers\n");
            return -1;
        }
        for (int l = 0; l < BENCH_LEVELS; l++)
            if (!again || r.gbs[l] > p->rates[i].gbs[l])
                p->rates[i].gbs[l] = r.gbs[l];
    }
    /* more threads read at least as fast as fewer (a pass measured while the cores were
       taken says less): each count's rate at least any smaller count's */
    for (int i = 0; i < p->nroof; i++)
        for (int j = 0; j < p->nroof; j++)
            for (int l = 0; l < BENCH_LEVELS; l++)
                if (p->roof_threads[j] < p->roof_threads[i] &&
                    p->rates[j].gbs[l] > p->rates[i].gbs[l])
                    p->rates[i].gbs[l] = p->rates[j].gbs[l];
    bench_progress_end();
    printf("# roof: each distinct row of a step at the rate of where it is read from (LRU "
           "reuse distance against L1d %lld KiB, L2 %lld KiB per core, LLC %lld KiB, "
           "doubled), and each further (bag, distinct id) pair's read and a training "
           "step's update's read of its rows again at the L1 rate; %s, GB/s of %d-byte rows read at random (DRAM: %lld MiB):\n",
           (long long)size[0] >> 10, (long long)size[1] >> 10, (long long)size[2] >> 10,
           again ? "the rates, the better of start-up and now" : "the rates measured at start-up",
           row_bytes, (long long)dram_mib);
    for (int i = 0; i < p->nroof; i++)
        printf("#   %2d thread%s: L1 %7.1f  L2 %7.1f  LLC %7.1f  DRAM %6.1f\n",
               p->roof_threads[i], p->roof_threads[i] > 1 ? "s" : " ", p->rates[i].gbs[0],
               p->rates[i].gbs[1], p->rates[i].gbs[2], p->rates[i].gbs[3]);
    return 0;
}

/* The roof of every row at the final rates. */
static void apply_rates(const Plan *p, BenchResults *res)
{
    for (int i = 0; i < res->nrows; i++) {
        BenchRow *x = &res->rows[i];
        const BenchRates *r = &p->rates[roof_index(p, x->threads)];
        x->roof_s = bench_roof_of(x->lvl_bytes, r);
        x->roof_fwd_s = bench_roof_of(x->fwd_bytes, r);
    }
}

/* The plain loops on the run's own tables and steps, at every thread count; whether the
 * roof bounds them (--check-roof makes a step above it an error). */
static int measure_plain(Plan *p, const BenchConfig *c)
{
    if (!bench_roof_on_workload(c))
        return 0;
    for (int v = 0; v < c->nvariants; v++)
        for (int i = 0; i < p->nroof; i++) {
            bench_progress("the plain loops: %s, %d threads", c->variants[v].name,
                           p->roof_threads[i]);
            if (bench_plain_measure(&p->plain[v][i], p->w, c, v, p->roof_threads[i]) != 0)
                return fprintf(stderr, "emb-bench: out of memory\n"), -1;
        }
    bench_progress_end();
    return 0;
}

/* Whether the roof bounds the plain loops' steps (at the final rates); --check-roof makes
 * a step above it an error. */
static int check_plain(const Plan *p, const BenchConfig *c)
{
    if (!bench_roof_on_workload(c))
        return 0;
    double worst = 0;
    for (int v = 0; v < c->nvariants; v++)
        for (int i = 0; i < p->nroof; i++) {
            const double w = bench_plain_worst(&p->plain[v][i], &p->rates[i]);
            worst = w > worst ? w : worst;
        }
    printf("# plain loops (gather, update) on the run's steps: at most %.2f of the roof%s\n",
           worst, worst > 1.0 ? " -- ABOVE the roof: the roof does not bound" : "");
    if (c->check_roof && worst > 1.0) {
        fprintf(stderr, "emb-bench: --check-roof: a plain loop's step took %.2f of the roof's "
                        "time (< 1.0 expected)\n", 1 / worst);
        return -1;
    }
    return 0;
}

/* One row being timed: its runner, its samples and its phases' (BD_COUNT per sample). */
typedef struct Timed {
    BenchRunner *r;
    BenchRow row;
    double *t, *bd; /* bd: BD_COUNT per sample, then cap of scratch */
    double distinct, lvl[BENCH_LEVELS]; /* Σ over the timed steps: distinct rows, by level */
    double lb[BENCH_LEVELS], fb[BENCH_LEVELS]; /* Σ of the roof's bytes by level; forward's */
    int n, it, cap;
} Timed;

#define SPREAD_TARGET 0.02 /* stop when every row's median is known within 2% (95%) */
/*
 * The time cap (10x min_time) stops a group only after this many rounds: the default's
 * bags-of-20 train rows (20-46 ms a step) hit it after 45-52 rounds with medians known to
 * +-11-21 %, and one such row moved a strategy's verdict by 5 % from run to run
 * (docs/bench/2026-11-28-verdict-spread-2.md).
 */
#define CAP_MIN_ROUNDS 120

static double quantile(const double *sorted, int n, double q)
{
    int k = (int)(q * n + 0.999999) - 1;
    return sorted[k < 0 ? 0 : k >= n ? n - 1 : k];
}

/* Median, p90, p99, max and the notch (1.57 IQR / sqrt(n), relative) of a row's samples. */
static void row_stats(Timed *x)
{
    BenchRow *row = &x->row;
    const int n = x->n;
    qsort(x->t, (size_t)n, sizeof *x->t, cmp_double);
    row->median_s = n % 2 ? x->t[n / 2] : 0.5 * (x->t[n / 2 - 1] + x->t[n / 2]);
    row->p90_s = quantile(x->t, n, 0.90);
    row->p99_s = quantile(x->t, n, 0.99);
    row->max_s = x->t[n - 1];
    const double iqr = quantile(x->t, n, 0.75) - quantile(x->t, n, 0.25);
    row->spread = 1.57 * iqr / sqrt((double)n) / row->median_s;
    row->n = n;
    double *tmp = x->bd + (size_t)x->cap * BD_COUNT; /* the samples' scratch */
    for (int k = 0; k < BD_COUNT; k++) { /* each phase's median */
        for (int i = 0; i < n; i++)
            tmp[i] = x->bd[(size_t)i * BD_COUNT + k];
        qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
        row->bd[k] = n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
    }
    row->distinct = x->distinct / n;
    for (int l = 0; l < BENCH_LEVELS; l++) {
        row->lvl_frac[l] = x->distinct > 0 ? x->lvl[l] / x->distinct : 0;
        row->lvl_bytes[l] = x->lb[l] / n;
        row->fwd_bytes[l] = x->fb[l] / n;
    }
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/*
 * vs_seq of every row of one group, from its samples before row_stats sorts them: sample r
 * of every row ran in round r, so the sequential row's sample over the row's is a paired
 * ratio that the machine's slow drift cancels out of. Of the rounds, only the quieter half
 * counts (a round's load: the mean over its rows of log(sample / the row's median); on a
 * shared machine another program's burst slows a 2-thread row more than a 1-thread one, so
 * a ratio from a loaded round measures the other program). vs_seq is the median of the kept
 * rounds' ratios (docs/bench/2026-11-28-paired-verdict.md: under a load of 11-15 on 2
 * cores neither this nor the ratio of medians held the verdict within +-3 %).
 */
static void paired_vs_seq(Timed *rows, int nrows, double *tmp)
{
    const Timed *seq = NULL;
    for (int i = 0; i < nrows; i++)
        if (rows[i].row.strategy == STRAT_SEQUENTIAL)
            seq = &rows[i];
    const int n = seq ? seq->n : 0;
    if (n < 1)
        return;
    double med[STRAT_COUNT * BENCH_MAX_THREADS];
    for (int i = 0; i < nrows; i++) {
        memcpy(tmp, rows[i].t, (size_t)n * sizeof *tmp);
        med[i] = median_of(tmp, n);
    }
    double *load = tmp + n, *ratio = tmp + 2 * n;
    for (int r = 0; r < n; r++) {
        load[r] = 0;
        for (int i = 0; i < nrows; i++)
            load[r] += log(rows[i].t[r] / med[i]) / nrows;
    }
    memcpy(tmp, load, (size_t)n * sizeof *tmp);
    const double quiet = median_of(tmp, n);
    for (int i = 0; i < nrows; i++) {
        int k = 0;
        for (int r = 0; r < n; r++)
            if (load[r] <= quiet)
                ratio[k++] = seq->t[r] / rows[i].t[r];
        rows[i].row.vs_seq = k ? median_of(ratio, k) : 0;
    }
}

/* The largest notch of the rows (their samples left unsorted). */
static double worst_spread(Timed *rows, int nrows, double *tmp)
{
    double worst = 0;
    for (int i = 0; i < nrows; i++) {
        const int n = rows[i].n;
        memcpy(tmp, rows[i].t, (size_t)n * sizeof *tmp);
        qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
        const double med = tmp[n / 2], iqr = quantile(tmp, n, 0.75) - quantile(tmp, n, 0.25);
        const double sp = med > 0 ? 1.57 * iqr / sqrt((double)n) / med : 0;
        worst = sp > worst ? sp : worst;
    }
    return worst;
}

/* The roof and the levels of the step in @slot, for row @x. */
static void note_step(const Plan *p, Timed *x, int slot)
{
    const BenchConfig *c = p->cfg;
    const BenchPhaseSpec *ph = &c->phases[x->row.phase];
    const BenchIdSet *set = &p->w->sets[x->row.variant][slot];
    double b[BENCH_LEVELS], fwd[BENCH_LEVELS] = {0};
    bench_step_levels(c, set, ph->kind, ph->opt, b);
    if (ph->kind != PHASE_UPDATE)
        bench_step_levels(c, set, PHASE_FORWARD, OPT_NONE, fwd);
    for (int l = 0; l < BENCH_LEVELS; l++) {
        x->lb[l] += b[l];
        x->fb[l] += fwd[l];
    }
    for (int t = 0; t < c->ntables; t++)
        for (int l = 0; l < BENCH_LEVELS; l++) {
            x->lvl[l] += (double)set->lvl_rows[t * BENCH_LEVELS + l];
            x->distinct += (double)set->lvl_rows[t * BENCH_LEVELS + l];
        }
}

static int iterate(const Plan *p, Timed *x, int timed)
{
    const BenchPhaseSpec *ph = &p->cfg->phases[x->row.phase];
    double *bd = timed ? x->bd + (size_t)x->n * BD_COUNT : NULL;
    for (int k = 0; bd && k < BD_COUNT; k++)
        bd[k] = 0;
    const int slot = bench_stream_next(p->w, p->cfg, x->row.variant); /* untimed */
    if (slot < 0)
        return fprintf(stderr, "emb-bench: out of memory drawing ids\n"), -1;
    if (timed)
        note_step(p, x, slot);
    x->it++;
    const double t0 = bench_now();
    if (bench_runner_iter(x->r, ph, x->row.variant, slot, bd) != 0) {
        fprintf(stderr, "emb-bench: %s failed: %s\n", ph->name, emb_last_error());
        return -1;
    }
    if (timed)
        x->t[x->n++] = bench_now() - t0;
    return 0;
}

/* A Fisher-Yates shuffle of @order (n entries) from @seed. */
static void shuffle(int *order, int n, uint64_t *seed)
{
    for (int i = n - 1; i > 0; i--) {
        const int j = (int)(bench_splitmix(seed) % (uint64_t)(i + 1));
        const int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/*
 * Times every row of one variant and phase together: rounds in which each row runs one
 * iteration, in a new pseudo-random order every round, so that the machine's noise hits
 * every strategy and thread count alike, and no row always runs after the same row (a
 * fixed rotation put, say, auto at 1 thread after prealloc-concat at 2 threads in nearly
 * every round: it found its core's caches half filled by the other core, and the first
 * row of each round met the round's new id set with cold caches). At least iters rounds and min_time per row; then on until every
 * row's median is known within SPREAD_TARGET, or 10x min_time per row has passed and at
 * least CAP_MIN_ROUNDS rounds have run. The
 * time counted is the rows' timed iterations, not the drawing of their ids (untimed): a
 * step of the default's bags of 20 draws ~1M ids, ~50 ms, 5-10x the step, and counting it
 * stopped those rows after 22-34 rounds with medians known to +-4-60 %
 * (docs/bench/2026-11-28-verdict-spread.md).
 */
static int time_rows(const Plan *p, Timed *rows, int nrows)
{
    const BenchConfig *c = p->cfg;
    const int cap = c->min_time > 0 ? 1000 * c->iters : c->iters;
    double *tmp = malloc((size_t)cap * 3 * sizeof *tmp);
    for (int i = 0; i < nrows && tmp; i++) {
        rows[i].t = malloc((size_t)cap * sizeof *rows[i].t);
        rows[i].bd = malloc((size_t)cap * (BD_COUNT + 1) * sizeof *rows[i].bd);
        rows[i].cap = cap;
        if (!rows[i].t || !rows[i].bd)
            tmp = (free(tmp), NULL);
    }
    if (!tmp)
        return fprintf(stderr, "emb-bench: out of memory\n"), -1;
    int rc = 0;
    for (int w = 0; w < c->warmup && !rc; w++)
        for (int i = 0; i < nrows && !rc; i++)
            rc = iterate(p, &rows[i], 0);
    const double min_total = c->min_time * nrows;
    double el = 0; /* the rows' timed seconds so far */
    int order[STRAT_COUNT * BENCH_MAX_THREADS];
    for (int k = 0; k < nrows; k++)
        order[k] = k;
    uint64_t seed = (uint64_t)c->seed ^ 0x6f72646572ull; /* "order": the same every run */
    for (int round = 0; !rc && round < cap; round++) {
        shuffle(order, nrows, &seed);
        for (int k = 0; k < nrows && !rc; k++) {
            rc = iterate(p, &rows[order[k]], 1);
            el += rc ? 0 : rows[order[k]].t[rows[order[k]].n - 1];
        }
        if (round + 1 < c->iters || el < min_total)
            continue;
        if (c->min_time <= 0 || (el >= 10 * min_total && round + 1 >= CAP_MIN_ROUNDS) ||
            worst_spread(rows, nrows, tmp) <= SPREAD_TARGET)
            break;
    }
    if (!rc)
        paired_vs_seq(rows, nrows, tmp);
    for (int i = 0; i < nrows && !rc; i++)
        row_stats(&rows[i]);
    free(tmp);
    return rc;
}

static void row_model(const Plan *p, BenchRow *row)
{
    const BenchPhaseSpec *ph = &p->cfg->phases[row->phase];
    const BenchPlain *plain = &p->plain[row->variant][roof_index(p, row->threads)];
    double rd = ph->kind != PHASE_UPDATE ? bench_bytes_read(p->w, p->cfg, row->variant) : 0;
    double up = 0;
    if (ph->kind != PHASE_FORWARD)
        up = bench_bytes_updated(p->w, p->cfg, row->variant) +
             bench_bytes_state(p->w, p->cfg, row->variant, ph->opt);
    row->bytes = rd + up;
    row->bytes_rd = rd;
    row->bytes_up = up;
    row->plain_s = (ph->kind != PHASE_UPDATE ? plain->gather_s : 0) +
                   (ph->kind != PHASE_FORWARD ? plain->update_s : 0);
}

/* Every strategy and thread count of variant @v and phase @ph, timed together. */
static int run_group(Plan *p, BenchResults *res, int v, int ph)
{
    const BenchConfig *c = p->cfg;
    Timed rows[STRAT_COUNT * BENCH_MAX_THREADS];
    int n = 0, rc = 0;
    memset(rows, 0, sizeof rows);
    for (int s = 0; s < STRAT_COUNT && !rc; s++) {
        if (!(c->strategies >> s & 1))
            continue;
        for (int i = 0; i < c->nthreads; i++) {
            const int threads = s == STRAT_SEQUENTIAL ? 1 : c->threads[i];
            BenchRunner *r = bench_runner_create(c, p->w, s, threads);
            if (!r) {
                rc = s == STRAT_SEQUENTIAL ? -1 : 0;
                break;
            }
            rows[n++] = (Timed){.r = r, .row = {.variant = v, .phase = ph, .strategy = s,
                                                .threads = threads}};
            if (s == STRAT_SEQUENTIAL)
                break;
        }
    }
    p->done += n;
    bench_progress("[%d/%d] %s %s: %d rows interleaved", p->done, p->total,
                   c->variants[v].name, c->phases[ph].name, n);
    if (!rc)
        rc = time_rows(p, rows, n);
    const double load1 = bench_load1();
    for (int i = 0; i < n; i++) {
        if (!rc) {
            row_model(p, &rows[i].row);
            rows[i].row.load1 = load1;
            rc = bench_results_add(res, &rows[i].row);
        }
        bench_runner_destroy(&rows[i].r);
        free(rows[i].t);
        free(rows[i].bd);
    }
    return rc;
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
            if (run_group(p, res, v, ph) != 0)
                return -1;
    bench_progress_end();
    return 0;
}

static int report(BenchResults *res, const BenchConfig *c, int verdicts)
{
    int rc = 0;
    bench_report_table(res, c, stdout);
    if (!verdicts)
        return 0;
    if (c->breakdown)
        bench_report_breakdown(res, c, stdout);
    if (c->csv && bench_report_csv(res, c, c->csv) != 0)
        rc = -1;
    if (c->json && bench_report_json(res, c, c->json) != 0)
        rc = -1;
    if (c->plot && bench_report_plot(res, c, c->plot) != 0)
        rc = -1;
    bench_report_verdicts(res, c, stdout);
    return rc;
}

int bench_run(const BenchConfig *cfg, BenchResults *res, int verdicts)
{
    Plan *plan = calloc(1, sizeof *plan);
    BenchWorkload *w = calloc(1, sizeof *w);
    int rc = plan && w ? 0 : -1;
    if (rc == 0) {
        plan->cfg = cfg;
        plan->w = w;
        rc = measure_rates(plan, cfg, 0);
    }
    if (rc == 0)
        rc = bench_workload_create(w, cfg, cfg->peer != NULL);
    if (rc == 0 && w->ntiered)
        bench_tier_header(w, cfg, stdout);
    if (rc == 0)
        bench_workload_header(w, cfg, stdout);
    if (rc == 0)
        rc = measure_plain(plan, cfg);
    if (rc == 0)
        rc = run_all(plan, res);
    if (rc == 0)
        bench_workload_touched(w, cfg, stdout);
    if (rc == 0)
        rc = measure_rates(plan, cfg, 1);
    if (rc == 0) {
        apply_rates(plan, res);
        res->nrates = plan->nroof;
        res->steady = w->steady;
        memcpy(res->rate_threads, plan->roof_threads, sizeof res->rate_threads);
        memcpy(res->rates, plan->rates, sizeof res->rates);
        rc = check_plain(plan, cfg);
    }
    int peer_failed = 0;
    if (rc == 0) {
        bench_results_relate(res);
        if (cfg->peer && bench_peer_run(res, cfg, w) != 0) {
            fprintf(stderr, "emb-bench: the peer did not run; see above\n");
            peer_failed = 1;
        }
        rc = report(res, cfg, verdicts);
    }
    if (rc == 0 && peer_failed)
        rc = -1;
    if (rc == 0 && w->ntiered && verdicts)
        rc = bench_tier_compare(cfg, w, stdout);
    if (w) {
        bench_optimizers_destroy(w);
        bench_workload_destroy(w);
    }
    free(w);
    free(plan);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--mpi") == 0)
        return bench_exec_mpi(argc, argv);
    if (argc > 1 && strcmp(argv[1], "compare") == 0)
        return bench_compare_main(argc, argv);
    if (argc > 1 && strcmp(argv[1], "ids") == 0)
        return bench_ids_main(argc, argv);
    static const struct {
        const char *name;
        int (*main)(int, char **);
    } sub[] = {{"coll", bench_coll_main}, {"dyn", bench_dyn_main}, {"ckpt", bench_ckpt_main},
               {"quant", bench_quant_main}, {"tier", bench_tier_main}};
    for (size_t i = 0; argc > 1 && i < sizeof sub / sizeof *sub; i++)
        if (strcmp(argv[1], sub[i].name) == 0)
            return sub[i].main(argc - 1, argv + 1);
    static BenchConfig cfg;
    bench_config_default(&cfg);
    int rc = bench_config_parse(&cfg, argc, argv);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    bench_record_fill(&cfg.record, "emb-bench", cfg.cmdline);
    if (cfg.sweep)
        return bench_sweep(&cfg) == 0 ? 0 : 1;
    if (cfg.pair) {
        bench_config_print(&cfg, stdout);
        bench_machine_print(stdout);
        return bench_pair_run(&cfg) == 0 ? 0 : 1;
    }
    if (cfg.peer && bench_peer_check() != 0)
        return 2;
    bench_config_print(&cfg, stdout);
    bench_machine_print(stdout);
    if (cfg.nphases == 0 || !cfg.strategies)
        return fprintf(stderr, "emb-bench: nothing to run\n"), 2;
    BenchResults res = {0};
    rc = bench_run(&cfg, &res, 1);
    bench_results_free(&res);
    return rc == 0 ? 0 : 1;
}
