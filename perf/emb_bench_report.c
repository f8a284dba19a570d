/*
 * emb_bench_report.c — the results: the printed table, CSV, the gnuplot PNG and the
 * verdict lines. Derived numbers, one definition each:
 *   GB/s        = table bytes moved per iteration / median time
 *   roof        = roof time for those bytes / median time (1.0 = at the measured roof)
 *   vs seq      = sequential median / this median (same variant and phase)
 *   vs torch    = torch median / this median, same thread count (> 1: embtables faster)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    fprintf(f, "\n%-14s %-13s %-16s %3s %10s %10s %7s %5s %7s", "bags", "phase", "strategy",
            "thr", "median ms", "p90 ms", "GB/s", "roof", "vs seq");
    fprintf(f, peer ? " %9s %8s\n" : "\n", "torch ms", "vs torch");
    for (int i = 0; i < r->nrows; i++) {
        const BenchRow *x = &r->rows[i];
        fprintf(f, "%-14s %-13s %-16s %3d %10.3f %10.3f %7.2f %5.2f %6.2fx",
                c->variants[x->variant].name, c->phases[x->phase].name,
                bench_strategy_name(x->strategy), x->threads, x->median_s * 1e3, x->p90_s * 1e3,
                gbs(x), roof_fraction(x), x->vs_seq);
        if (peer && x->peer_s > 0)
            fprintf(f, " %9.3f %7.2fx", x->peer_s * 1e3, x->peer_s / x->median_s);
        fputc('\n', f);
    }
}

/* Geometric means over one strategy's rows at its largest thread count. */
static int strategy_summary(const BenchResults *r, int s, int *threads, double *seq,
                            double *roof, double *peer)
{
    int tmax = 0, n = 0, np = 0;
    for (int i = 0; i < r->nrows; i++)
        if (r->rows[i].strategy == s && r->rows[i].threads > tmax)
            tmax = r->rows[i].threads;
    double ls = 0, lr = 0, lp = 0;
    for (int i = 0; i < r->nrows; i++) {
        const BenchRow *x = &r->rows[i];
        if (x->strategy != s || x->threads != tmax || x->vs_seq <= 0)
            continue;
        ls += log(x->vs_seq);
        lr += log(roof_fraction(x));
        n++;
        if (x->peer_s > 0) {
            lp += log(x->peer_s / x->median_s);
            np++;
        }
    }
    *threads = tmax;
    *seq = n ? exp(ls / n) : 0;
    *roof = n ? exp(lr / n) : 0;
    *peer = np ? exp(lp / np) : 0;
    return n;
}

void bench_report_verdicts(const BenchResults *r, const BenchConfig *c, FILE *f)
{
    fprintf(f, "\n# verdict: geometric mean over every bag variant and phase, at the "
               "strategy's largest thread count\n");
    for (int s = 0; s < STRAT_COUNT; s++) {
        int threads;
        double seq, roof, peer;
        int n = strategy_summary(r, s, &threads, &seq, &roof, &peer);
        if (!n)
            continue;
        fprintf(f, "%s: %.2fx sequential, %.2f of roof", bench_strategy_name(s), seq, roof);
        if (peer > 0)
            fprintf(f, ", %.2fx torch", peer);
        fprintf(f, " (%d thread%s, %d rows)\n", threads, threads > 1 ? "s" : "", n);
    }
    (void)c;
}

int bench_report_csv(const BenchResults *r, const BenchConfig *c, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "emb-bench: cannot write %s\n", path);
        return -1;
    }
    fprintf(f, "bags,phase,strategy,threads,median_ms,p90_ms,bytes,gbs,roof_fraction,"
               "vs_sequential,peer_ms,vs_peer\n");
    for (int i = 0; i < r->nrows; i++) {
        const BenchRow *x = &r->rows[i];
        fprintf(f, "%s,%s,%s,%d,%.6f,%.6f,%.0f,%.4f,%.4f,%.4f,", c->variants[x->variant].name,
                c->phases[x->phase].name, bench_strategy_name(x->strategy), x->threads,
                x->median_s * 1e3, x->p90_s * 1e3, x->bytes, gbs(x), roof_fraction(x), x->vs_seq);
        if (x->peer_s > 0)
            fprintf(f, "%.6f,%.4f\n", x->peer_s * 1e3, x->peer_s / x->median_s);
        else
            fprintf(f, ",\n");
    }
    return fclose(f) == 0 ? 0 : -1;
}

/* ---- the plot ------------------------------------------------------------------------ */

/* One gnuplot data block: threads, sequential, parallel, prealloc-concat, roof, torch. */
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
    fprintf(g, "plot $d%d_%d u 1:5 w lp dt 2 lc rgb 'black' pt 1 t 'memory roof', "
               "'' u 1:2 w l dt 3 lw 2 lc rgb 'gray40' t 'sequential (1 thread)', "
               "'' u 1:3 w lp lw 2 pt 7 lc rgb '#1f77b4' t 'parallel', "
               "'' u 1:4 w lp lw 2 pt 5 lc rgb '#2ca02c' t 'prealloc-concat'%s\n",
            v, ph, c->peer ? ", '' u 1:6 w lp lw 2 pt 9 lc rgb '#ff7f0e' t 'torch'" : "");
}

int bench_report_plot(const BenchResults *r, const BenchConfig *c, const char *path)
{
    FILE *g = popen("gnuplot", "w");
    if (!g) {
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
    fprintf(g, "set xlabel 'threads'\nset ylabel 'GB/s of table bytes'\nset grid\n"
               "set key below font ',8'\nset yrange [0:*]\nset xrange [0.5:%g]\n"
               "set xtics 1\n", tmax + 0.5);
    fprintf(g, "set multiplot layout %d,%d title 'emb-bench: throughput against threads'\n",
            c->nvariants, c->nphases);
    for (int v = 0; v < c->nvariants; v++)
        for (int ph = 0; ph < c->nphases; ph++)
            plot_panel(g, c, v, ph);
    fprintf(g, "unset multiplot\n");
    int rc = pclose(g);
    if (rc != 0)
        fprintf(stderr, "emb-bench: gnuplot failed (%d) writing %s\n", rc, path);
    else
        printf("# plot: %s\n", path);
    return rc == 0 ? 0 : -1;
}
