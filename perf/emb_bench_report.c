/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_report.c — the results: the printed table, CSV, the gnuplot PNG and the
 * verdict lines. Derived numbers, one definition each:
 *   GB/s        = table bytes moved per iteration / median time
 *   roof        = the roof's time for the row's steps / median time: each distinct row a
 *                 step touches at the measured rate of where it is read from (L1, L2, LLC,
 *                 DRAM; emb_bench_stream.c), the reads every kernel makes again at the L1
 *                 rate, so 1.0 is a bound no kernel can pass
 *   vs plain    = the plain loops' median / this median (the former roof: a hand-written
 *                 gather and update over the same tables and steps)
 *   vs seq      = the median over the quieter half of the rounds of the sequential row's
 *                 time / this row's in the same round (same variant and phase; paired_vs_seq
 *                 in emb_bench.c); sequential median / this median where not paired
 *   vs torch    = torch median / this median, same thread count (> 1: embtables faster)
 */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emb_bench.h"

int bench_results_add(BenchResults *r, const BenchRow *row)
{
    if (r->nrows == r->cap) {
        int cap = r->cap ? 2 * r->cap : 32;
        BenchRow *rows = realloc(r->rows, (size_t)cap * sizeof *rows);
        if (!rows)
            return -1;
        r->rows = rows;
        r->cap = cap;
    }
    r->rows[r->nrows++] = *row;
    return 0;
}

void bench_results_free(BenchResults *r)
{
    free(r->rows);
    memset(r, 0, sizeof *r);
}

static const BenchRow *find(const BenchResults *r, int v, int ph, int s, int threads)
{
    for (int i = 0; i < r->nrows; i++) {
        const BenchRow *x = &r->rows[i];
        if (x->variant == v && x->phase == ph && x->strategy == s &&
            (threads < 0 || x->threads == threads))
            return x;
    }
    return NULL;
}

void bench_results_relate(BenchResults *r)
{
    for (int i = 0; i < r->nrows; i++) {
        BenchRow *x = &r->rows[i];
        const BenchRow *seq = find(r, x->variant, x->phase, STRAT_SEQUENTIAL, 1);
        if (x->vs_seq <= 0) /* not paired round by round when timed (emb_bench.c) */
            x->vs_seq = seq ? seq->median_s / x->median_s : 0;
    }
}

static double gbs(const BenchRow *x)
{
    return x->bytes / x->median_s / 1e9;
}

static double roof_fraction(const BenchRow *x)
{
    return x->roof_s / x->median_s;
}

void bench_report_table(const BenchResults *r, const BenchConfig *c, FILE *f)
{
    const int peer = c->peer != NULL;
    int state = 0;
    for (int p = 0; p < c->nphases; p++)
        state |= c->phases[p].opt > OPT_SGD;
    fprintf(f, "\n# GB/s counts table bytes read (forward) and read + written "
               "(update)%s; roof: the roof's time / ours (each distinct row at the rate of "
               "where it comes from, the reads made again at the L1 rate; <= 1.0); plain: the plain loops' time / ours; dram: of "
               "a step's distinct rows, those from DRAM; spread: the median's 95%% interval, "
               "+-%% of it\n",
            state ? ", plus the optimizer's state read + written (a state row of less than "
                    "a cache line counts as 64 B)" : "");
    fprintf(f, "%-14s %-13s %-16s %3s %10s %6s %9s %9s %9s %5s %7s %5s %6s %5s %7s", "bags",
            "phase", "strategy", "thr", "median ms", "spread", "p90 ms", "p99 ms", "max ms", "n",
            "GB/s", "roof", "plain", "dram", "vs seq");
    fprintf(f, peer ? " %9s %8s\n" : "\n", "torch ms", "vs torch");
    for (int i = 0; i < r->nrows; i++) {
        const BenchRow *x = &r->rows[i];
        fprintf(f, "%-14s %-13s %-16s %3d %10.3f %5.1f%% %9.3f %9.3f %9.3f %5d %7.2f %5.2f ",
                c->variants[x->variant].name, c->phases[x->phase].name,
                bench_strategy_name(x->strategy), x->threads, x->median_s * 1e3,
                x->spread * 100, x->p90_s * 1e3, x->p99_s * 1e3, x->max_s * 1e3, x->n,
                gbs(x), roof_fraction(x));
        if (x->plain_s > 0)
            fprintf(f, "%5.2fx", x->plain_s / x->median_s);
        else
            fprintf(f, "%6s", "-");
        fprintf(f, " %4.0f%% %6.2fx", 100 * x->lvl_frac[BENCH_LEVELS - 1], x->vs_seq);
        if (peer && x->peer_s > 0)
            fprintf(f, " %9.3f %7.2fx", x->peer_s * 1e3, x->peer_s / x->median_s);
        fputc('\n', f);
    }
}

/* " GB/s roof" of @bytes moved in @sec against the roof's @roof_s (dashes: none). */
static void phase_roof(FILE *f, double bytes, double sec, double roof_s)
{
    if (bytes <= 0 || sec <= 0 || roof_s <= 0)
        fprintf(f, " %8s %5s", "-", "-");
    else
        fprintf(f, " %8.2f %5.2f", bytes / sec / 1e9, roof_s / sec);
}

/* Each phase against its own part of the roof: the forward against the rows' reads; the
 * apply, and the whole update, against the rest (the optimizer state's reads, and the
 * rows' for an update alone); the step against the whole roof (the main table's). */
static void breakdown_roofs(const BenchResults *r, const BenchConfig *c, FILE *f)
{
    fprintf(f, "\n# breakdown against each phase's part of the roof: GB/s and the roof's "
               "time / the phase's (forward: the rows' reads; apply and update = serial + "
               "pullback + index + apply: the state's reads, and an update alone's rows)\n%-14s %-13s %-16s %3s %8s %5s %8s %5s %8s %5s %8s %5s\n",
            "bags", "phase", "strategy", "thr", "fwd GB/s", "roof", "app GB/s", "roof",
            "upd GB/s", "roof", "stp GB/s", "roof");
    for (int i = 0; i < r->nrows; i++) {
        const BenchRow *x = &r->rows[i];
        if (c->phases[x->phase].kind == PHASE_FORWARD)
            continue;
        const double upd = x->bd[BD_SERIAL] + x->bd[BD_PULLBACK] + x->bd[BD_INDEX] +
                           x->bd[BD_APPLY];
        fprintf(f, "%-14s %-13s %-16s %3d", c->variants[x->variant].name,
                c->phases[x->phase].name, bench_strategy_name(x->strategy), x->threads);
        phase_roof(f, x->bytes_rd, x->bd[BD_FORWARD], x->roof_fwd_s);
        phase_roof(f, x->bytes_up, x->bd[BD_APPLY], x->roof_s - x->roof_fwd_s);
        phase_roof(f, x->bytes_up, upd, x->roof_s - x->roof_fwd_s);
        fprintf(f, " %8.2f %5.2f\n", gbs(x), roof_fraction(x));
    }
}

void bench_report_breakdown(const BenchResults *r, const BenchConfig *c, FILE *f)
{
    static const char *const names[BD_COUNT] = {"forward", "record", "serial", "pullback",
                                                "index", "apply"};
    fprintf(f, "\n# breakdown: median ms per iteration (each phase its own median); record = emb_maplookup_backward "
               "(checks, on the caller), serial / pullback / index / apply = "
               "emb_update_many's phases\n%-14s %-13s %-16s %3s", "bags", "phase", "strategy",
            "thr");
    for (int k = 0; k < BD_COUNT; k++)
        fprintf(f, " %9s", names[k]);
    fprintf(f, " %9s\n", "median");
    for (int i = 0; i < r->nrows; i++) {
        const BenchRow *x = &r->rows[i];
        if (c->phases[x->phase].kind == PHASE_FORWARD)
            continue;
        fprintf(f, "%-14s %-13s %-16s %3d", c->variants[x->variant].name,
                c->phases[x->phase].name, bench_strategy_name(x->strategy), x->threads);
        for (int k = 0; k < BD_COUNT; k++)
            fprintf(f, " %9.3f", x->bd[k] * 1e3);
        fprintf(f, " %9.3f\n", x->median_s * 1e3);
    }    breakdown_roofs(r, c, f);
}

/* The row of strategy @s for variant @v and phase @ph at @threads, or (threads < 0) the
   one with the smallest median. */
static const BenchRow *pick(const BenchResults *r, int v, int ph, int s, int threads)
{
    const BenchRow *best = NULL;
    for (int i = 0; i < r->nrows; i++) {
        const BenchRow *x = &r->rows[i];
        if (x->variant != v || x->phase != ph || x->strategy != s)
            continue;
        if (threads >= 0 ? x->threads == threads : !best || x->median_s < best->median_s)
            best = x;
    }
    return best;
}

/* Geometric means over one strategy's rows at its largest thread count (@best: at each
   row's best thread count instead); *threads: the largest (or the best's range). */
static int strategy_summary(const BenchResults *r, const BenchConfig *c, int s, int best,
                            int *tlo, int *thi, double *seq, double *roof, double *peer)
{
    int tmax = 0, n = 0, np = 0;
    for (int i = 0; i < r->nrows; i++)
        if (r->rows[i].strategy == s && r->rows[i].threads > tmax)
            tmax = r->rows[i].threads;
    double ls = 0, lr = 0, lp = 0;
    *tlo = 1 << 30;
    *thi = 0;
    for (int v = 0; v < c->nvariants; v++)
        for (int ph = 0; ph < c->nphases; ph++) {
            const BenchRow *x = pick(r, v, ph, s, best ? -1 : tmax);
            if (!x || x->vs_seq <= 0)
                continue;
            *tlo = x->threads < *tlo ? x->threads : *tlo;
            *thi = x->threads > *thi ? x->threads : *thi;
            ls += log(x->vs_seq);
            lr += log(roof_fraction(x));
            n++;
            if (x->peer_s > 0) {
                lp += log(x->peer_s / x->median_s);
                np++;
            }
        }
    *seq = n ? exp(ls / n) : 0;
    *roof = n ? exp(lr / n) : 0;
    *peer = np ? exp(lp / np) : 0;
    return n;
}

/* The fastest row of a fixed strategy (sequential only at 1 thread) beside auto row @a. */
static const BenchRow *best_fixed(const BenchResults *r, const BenchRow *a)
{
    const BenchRow *best = NULL;
    for (int s = STRAT_SEQUENTIAL; s < STRAT_AUTO; s++) {
        const BenchRow *x = find(r, a->variant, a->phase, s, a->threads);
        if (x && (!best || x->median_s < best->median_s))
            best = x;
    }
    return best;
}

/* Issue #12's rule for auto: never more than 5% slower than the best fixed strategy at the
   same thread count. The spreads say whether a miss is beyond the noise of this run. */
static void auto_verdict(const BenchResults *r, const BenchConfig *c, FILE *f)
{
    const BenchRow *worst = NULL, *wbest = NULL;
    int n = 0, within = 0;
    for (int i = 0; i < r->nrows; i++) {
        const BenchRow *a = &r->rows[i], *b;
        if (a->strategy != STRAT_AUTO || !(b = best_fixed(r, a)))
            continue;
        n++;
        within += a->median_s <= 1.05 * b->median_s;
        if (!worst || a->median_s / b->median_s > worst->median_s / wbest->median_s)
            worst = a, wbest = b;
    }
    if (!n)
        return;
    fprintf(f, "auto vs the best fixed strategy at the same thread count: %d of %d rows within "
               "5%%; worst %+.1f%% (%s %s, %d thread%s: %s; spreads +-%.1f%% and +-%.1f%%)\n",
            within, n, 100 * (worst->median_s / wbest->median_s - 1),
            c->variants[worst->variant].name, c->phases[worst->phase].name, worst->threads,
            worst->threads > 1 ? "s" : "", bench_strategy_name(wbest->strategy), 100 * worst->spread, 100 * wbest->spread);
}

/* The worst p90 / median of each strategy (issue #12's target: <= 1.5 at every count). */
static void tail_verdict(const BenchResults *r, const BenchConfig *c, FILE *f)
{
    for (int s = 0; s < STRAT_COUNT; s++) {
        const BenchRow *worst = NULL;
        for (int i = 0; i < r->nrows; i++) {
            const BenchRow *x = &r->rows[i];
            if (x->strategy == s && (!worst || x->p90_s / x->median_s >
                                                   worst->p90_s / worst->median_s))
                worst = x;
        }
        if (worst)
            fprintf(f, "tail %s: worst p90 %.2fx the median, p99 %.2fx, max %.2fx (%s %s, "
                       "%d thread%s)\n", bench_strategy_name(s), worst->p90_s / worst->median_s,
                    worst->p99_s / worst->median_s, worst->max_s / worst->median_s,
                    c->variants[worst->variant].name, c->phases[worst->phase].name,
                    worst->threads, worst->threads > 1 ? "s" : "");
    }
}

/* One line when a row is above its roof: why, so that "of roof" keeps its meaning. */
static void roof_verdict(const BenchResults *r, const BenchConfig *c, FILE *f)
{
    const BenchRow *top = NULL;
    int above = 0;
    for (int i = 0; i < r->nrows; i++) {
        const BenchRow *x = &r->rows[i];
        above += roof_fraction(x) > 1.0;
        if (!top || roof_fraction(x) > roof_fraction(top))
            top = x;
    }
    if (!top)
        return;
    if (!above) {
        fprintf(f, "roof: no row above 1.00 (most: %.2f, %s %s %s %d thread%s)\n",
                roof_fraction(top), c->variants[top->variant].name, c->phases[top->phase].name,
                bench_strategy_name(top->strategy), top->threads, top->threads > 1 ? "s" : "");
        return;
    }
    fprintf(f, "roof: %d row%s above 1.00 (most: %.2f, %s %s %s %d thread%s): the roof does "
               "not bound them -- a bug in the roof's model (a level's rate measured under "
               "more load than the row ran with, or a row's place in the caches misjudged)\n",
            above, above > 1 ? "s" : "", roof_fraction(top), c->variants[top->variant].name,
            c->phases[top->phase].name, bench_strategy_name(top->strategy), top->threads,
            top->threads > 1 ? "s" : "");
}

/* The fastest row of variant @v and phase @ph at @threads that the peer timed, or NULL. */
static const BenchRow *fastest_with_peer(const BenchResults *r, int v, int ph, int threads)
{
    const BenchRow *best = NULL;
    for (int i = 0; i < r->nrows; i++) {
        const BenchRow *x = &r->rows[i];
        if (x->variant == v && x->phase == ph && x->threads == threads && x->peer_s > 0 &&
            (!best || x->median_s < best->median_s))
            best = x;
    }
    return best;
}

/* Against the peer, per bag variant, phase and thread count: the fastest strategy's median
 * against the peer's (issue #28's target: >= 5x torch's sparse SGD step at 1 and 2
 * threads). A --peer-script's lines may time another thing (peer_embtables.py: Python). */
static void peer_verdict(const BenchResults *r, const BenchConfig *c, FILE *f)
{
    for (int v = 0; v < c->nvariants; v++)
        for (int ph = 0; ph < c->nphases; ph++)
            for (int t = 0; t < c->nthreads; t++) {
                const BenchRow *x = fastest_with_peer(r, v, ph, c->threads[t]);
                if (x)
                    fprintf(f, "vs %s %s %s %d thread%s: %.2fx (%s %.3f ms, peer %.3f ms)\n",
                            c->peer_script ? "peer" : c->peer, c->variants[v].name,
                            c->phases[ph].name, x->threads, x->threads > 1 ? "s" : "",
                            x->peer_s / x->median_s, bench_strategy_name(x->strategy),
                            x->median_s * 1e3, x->peer_s * 1e3);
            }
}

/* The load while the rows were timed; a warning when it exceeded the cores (some thread
 * of another program waited for a CPU beside the rows): those rows are unreliable. */
static void load_verdict(const BenchResults *r, FILE *f)
{
    const int cores = emb_num_physical_cores();
    double lo = 1e30, hi = -1;
    int over = 0, n = 0;
    for (int i = 0; i < r->nrows; i++) {
        const double l = r->rows[i].load1;
        if (l < 0)
            continue;
        lo = l < lo ? l : lo;
        hi = l > hi ? l : hi;
        over += l > cores;
        n++;
    }
    if (hi < 0)
        return;
    fprintf(f, "load average (1 min) while rows were timed: %.2f .. %.2f on %d cores\n", lo,
            hi, cores);
    if (over)
        fprintf(f, "warning: %d of %d rows were timed while the load exceeded the %d cores "
                   "(other programs took CPU time from them): those rows and the verdicts "
                   "above are unreliable; rerun on a quiet machine\n", over, n, cores);
}

void bench_report_verdicts(const BenchResults *r, const BenchConfig *c, FILE *f)
{
    fprintf(f, "\n# verdict: geometric mean over every bag variant and phase, at the "
               "strategy's largest thread count and at each row's best\n");
    for (int s = 0; s < STRAT_COUNT; s++)
        for (int best = 0; best < 2; best++) {
            int tlo, thi;
            double seq, roof, peer;
            int n = strategy_summary(r, c, s, best, &tlo, &thi, &seq, &roof, &peer);
            if (!n || (best && s == STRAT_SEQUENTIAL))
                continue;
            fprintf(f, "%s: %.2fx sequential, %.2f of roof", bench_strategy_name(s), seq, roof);
            if (peer > 0)
                fprintf(f, ", %.2fx torch", peer);
            if (tlo == thi)
                fprintf(f, " (%s %d thread%s, %d rows)\n", best ? "best:" : "largest:", thi,
                        thi > 1 ? "s" : "", n);
            else
                fprintf(f, " (best: %d-%d threads, %d rows)\n", tlo, thi, n);
        }
    auto_verdict(r, c, f);
    tail_verdict(r, c, f);
    roof_verdict(r, c, f);
    peer_verdict(r, c, f);
    load_verdict(r, f);
}

void bench_csv_comments(const BenchResults *r, const char *cell, FILE *f)
{
    const char *lead = cell ? cell : "", *sep = cell ? ": " : "";
    fprintf(f, "# %s%sids: %s\n# %s%sroof rates, GB/s (L1 L2 LLC DRAM):", lead, sep,
            r->steady ? "steady state (a stream of fresh ids every step)"
                      : "RECYCLED (4 sets rotated)",
            lead, sep);
    for (int i = 0; i < r->nrates; i++)
        fprintf(f, " %d thread%s %.1f %.1f %.1f %.1f;", r->rate_threads[i],
                r->rate_threads[i] > 1 ? "s" : "", r->rates[i].gbs[0], r->rates[i].gbs[1],
                r->rates[i].gbs[2], r->rates[i].gbs[3]);
    fputc('\n', f);
}

void bench_csv_rows(const BenchResults *r, const BenchConfig *c, const char *cell, FILE *f)
{
    for (int i = 0; i < r->nrows; i++) {
        const BenchRow *x = &r->rows[i];
        if (cell)
            fprintf(f, "%s,", cell);
        fprintf(f, "%s,%s,%s,%d,%.6f,%.4f,%.6f,%.6f,%.6f,%d,%.0f,%.4f,%.4f,%.4f,",
                c->variants[x->variant].name, c->phases[x->phase].name,
                bench_strategy_name(x->strategy), x->threads, x->median_s * 1e3, x->spread,
                x->p90_s * 1e3, x->p99_s * 1e3, x->max_s * 1e3, x->n, x->bytes, gbs(x),
                roof_fraction(x), x->vs_seq);
        for (int k = 0; k < BD_COUNT; k++)
            fprintf(f, "%.6f,", x->bd[k] * 1e3);
        if (x->peer_s > 0)
            fprintf(f, "%.6f,%.4f,", x->peer_s * 1e3, x->peer_s / x->median_s);
        else
            fprintf(f, ",,");
        fprintf(f, "%.2f,%.6f,", x->load1, x->roof_s * 1e3);
        if (x->plain_s > 0)
            fprintf(f, "%.6f,%.4f,", x->plain_s * 1e3, x->plain_s / x->median_s);
        else
            fprintf(f, ",,");
        fprintf(f, "%.1f,%.4f,%.4f,%.4f,%.4f,%d\n", x->distinct, x->lvl_frac[0], x->lvl_frac[1],
                x->lvl_frac[2], x->lvl_frac[3], r->steady);
    }
}

int bench_report_csv(const BenchResults *r, const BenchConfig *c, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "emb-bench: cannot write %s\n", path);
        return -1;
    }
    bench_record_csv(&c->record, f);
    bench_csv_comments(r, NULL, f);
    fprintf(f, "%s\n", BENCH_CSV_COLUMNS);
    bench_csv_rows(r, c, NULL, f);
    if (fclose(f) != 0)
        return -1;
    printf("# rows: %s\n", path);
    return 0;
}

static json_t *row_json(const BenchRow *x, const BenchConfig *c)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:f, s:f, s:f, s:f, s:f, s:i, s:f, s:f, s:f, s:f,"
                          " s:f, s:f, s:f}",
                          "bags", c->variants[x->variant].name, "phase", c->phases[x->phase].name,
                          "strategy", bench_strategy_name(x->strategy), "threads", x->threads,
                          "median_ms", x->median_s * 1e3, "spread", x->spread,
                          "p90_ms", x->p90_s * 1e3, "p99_ms", x->p99_s * 1e3,
                          "max_ms", x->max_s * 1e3, "n", x->n, "bytes", x->bytes,
                          "gbs", gbs(x), "roof_fraction", roof_fraction(x),
                          "roof_ms", x->roof_s * 1e3, "vs_sequential", x->vs_seq,
                          "distinct_rows", x->distinct, "load1", x->load1);
    if (!o)
        return NULL;
    static const char *const lv[BENCH_LEVELS] = {"l1", "l2", "llc", "dram"};
    json_t *fr = json_object();
    for (int l = 0; fr && l < BENCH_LEVELS; l++)
        json_object_set_new(fr, lv[l], json_real(x->lvl_frac[l]));
    json_object_set_new(o, "level_fractions", fr);
    if (x->plain_s > 0)
        json_object_set_new(o, "plain_ms", json_real(x->plain_s * 1e3));
    if (x->peer_s > 0)
        json_object_set_new(o, "peer_ms", json_real(x->peer_s * 1e3));
    static const char *const bdn[BD_COUNT] = {"forward", "record", "serial", "pullback",
                                              "index", "apply"};
    json_t *bd = json_object();
    for (int k = 0; bd && k < BD_COUNT; k++)
        json_object_set_new(bd, bdn[k], json_real(x->bd[k] * 1e3));
    json_object_set_new(o, "breakdown_ms", bd);
    return o;
}

json_t *bench_results_json(const BenchResults *r, const BenchConfig *c)
{
    json_t *root = json_object(), *rows = json_array(), *rates = json_array();
    int rc = root && rows && rates ? 0 : -1;
    if (!rc) {
        json_object_set_new(root, "ids", json_string(r->steady ? "steady" : "recycled"));
        json_object_set_new(root, "tables", json_string(c->tables_desc));
        json_object_set_new(root, "batch", json_integer(c->batch));
    }
    for (int i = 0; !rc && i < r->nrates; i++) {
        const double *g = r->rates[i].gbs;
        json_t *o = json_pack("{s:i, s:f, s:f, s:f, s:f}", "threads", r->rate_threads[i],
                              "l1_gbs", g[0], "l2_gbs", g[1], "llc_gbs", g[2], "dram_gbs", g[3]);
        rc = o ? json_array_append_new(rates, o) : -1;
    }
    for (int i = 0; !rc && i < r->nrows; i++) {
        json_t *o = row_json(&r->rows[i], c);
        rc = o ? json_array_append_new(rows, o) : -1;
    }
    if (!rc) {
        json_object_set(root, "roof_rates", rates);
        json_object_set(root, "rows", rows);
    }
    json_decref(rows);
    json_decref(rates);
    if (rc) {
        json_decref(root);
        return NULL;
    }
    return root;
}

int bench_report_json(const BenchResults *r, const BenchConfig *c, const char *path)
{
    json_t *root = json_object(), *res = bench_results_json(r, c);
    int rc = root && res ? 0 : -1;
    if (!rc) { /* the record first, then the run */
        json_object_set_new(root, "record", bench_record_json(&c->record));
        rc = json_object_update(root, res);
    }
    if (!rc)
        rc = json_dump_file(root, path, JSON_INDENT(1)) == 0 ? 0 : -1;
    json_decref(res);
    json_decref(root);
    if (rc)
        fprintf(stderr, "emb-bench: cannot write %s\n", path);
    else
        printf("# json: %s\n", path);
    return rc;
}

/* ---- the plot ------------------------------------------------------------------------ */

/* One gnuplot data block: threads, sequential, parallel, prealloc-concat, auto, roof,
   torch. */
static void plot_block(FILE *g, const BenchResults *r, const BenchConfig *c, int v, int ph)
{
    const BenchRow *seq = find(r, v, ph, STRAT_SEQUENTIAL, 1);
    fprintf(g, "$d%d_%d << EOD\n", v, ph);
    for (int i = 0; i < c->nthreads; i++) {
        int t = c->threads[i];
        const BenchRow *any = NULL;
        fprintf(g, "%d %s", t, "");
        fprintf(g, seq ? "%g" : "NaN", seq ? gbs(seq) : 0.0);
        for (int s = STRAT_PARALLEL; s < STRAT_COUNT; s++) {
            const BenchRow *x = find(r, v, ph, s, t);
            any = x ? x : any;
            fprintf(g, x ? " %g" : " NaN", x ? gbs(x) : 0.0);
        }
        any = any ? any : (t == 1 ? seq : NULL);
        fprintf(g, any ? " %g" : " NaN", any ? any->bytes / any->roof_s / 1e9 : 0.0);
        fprintf(g, any && any->peer_s > 0 ? " %g\n" : " NaN\n",
                any && any->peer_s > 0 ? any->bytes / any->peer_s / 1e9 : 0.0);
    }
    fprintf(g, "EOD\n");
}

static void plot_panel(FILE *g, const BenchConfig *c, int v, int ph)
{
    fprintf(g, "set title '%s, %s'\n", c->variants[v].name, c->phases[ph].name);
    fprintf(g, "plot $d%d_%d u 1:6 w lp dt 2 lc rgb 'black' pt 1 t 'roof (bound)', "
               "'' u 1:2 w l dt 3 lw 2 lc rgb 'gray40' t 'sequential (1 thread)', "
               "'' u 1:3 w lp lw 2 pt 7 lc rgb '#1f77b4' t 'parallel', "
               "'' u 1:4 w lp lw 2 pt 5 lc rgb '#2ca02c' t 'prealloc-concat', "
               "'' u 1:5 w lp lw 2 pt 13 lc rgb '#9467bd' t 'auto'%s\n",
            v, ph, c->peer ? ", '' u 1:7 w lp lw 2 pt 9 lc rgb '#ff7f0e' t 'torch'" : "");
}

/* Whether @prog is an executable file in a folder of $PATH. */
static int on_path(const char *prog)
{
    const char *path = getenv("PATH");
    char dir[4096];
    while (path && *path) {
        const size_t n = strcspn(path, ":");
        snprintf(dir, sizeof dir, "%.*s/%s", (int)n, n ? path : ".", prog);
        if (access(dir, X_OK) == 0)
            return 1;
        path += n + (path[n] == ':');
    }
    return 0;
}

int bench_report_plot(const BenchResults *r, const BenchConfig *c, const char *path)
{
    if (!on_path("gnuplot")) {
        fprintf(stderr, "emb-bench: no gnuplot on PATH: no plot %s (the table and the CSV are "
                        "complete; scripts/deps.sh gnuplot-nox installs it)\n", path);
        return -1;
    }
    /* gnuplot exiting early must not kill the run with SIGPIPE: writes then fail */
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    FILE *g = popen("gnuplot", "w");
    if (!g) {
        signal(SIGPIPE, old);
        fprintf(stderr, "emb-bench: cannot start gnuplot (scripts/deps.sh gnuplot-nox)\n");
        return -1;
    }
    for (int v = 0; v < c->nvariants; v++)
        for (int ph = 0; ph < c->nphases; ph++)
            plot_block(g, r, c, v, ph);
    int tmax = c->threads[0];
    for (int i = 0; i < c->nthreads; i++)
        tmax = c->threads[i] > tmax ? c->threads[i] : tmax;
    fprintf(g, "set terminal pngcairo size %d,%d font ',10'\nset output '%s'\n",
            480 * c->nphases, 360 * c->nvariants, path);
    /* log GB/s: the roof (a bound, often 10-100x the rows in steady state) and the rows
       both readable */
    fprintf(g, "set xlabel 'threads'\nset ylabel 'GB/s of table bytes (log)'\nset grid\n"
               "set key below font ',8'\nset logscale y\nset xrange [0.5:%g]\n"
               "set xtics 1\n", tmax + 0.5);
    fprintf(g, "set multiplot layout %d,%d title 'emb-bench: throughput against threads'\n",
            c->nvariants, c->nphases);
    for (int v = 0; v < c->nvariants; v++)
        for (int ph = 0; ph < c->nphases; ph++)
            plot_panel(g, c, v, ph);
    fprintf(g, "unset multiplot\n");
    int rc = pclose(g);
    signal(SIGPIPE, old);
    if (rc != 0)
        fprintf(stderr, "emb-bench: gnuplot failed (%d) writing %s\n", rc, path);
    else
        printf("# plot: %s\n", path);
    return rc == 0 ? 0 : -1;
}
