/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_compare.c — `emb-bench compare A.csv B.csv`: two runs' CSVs row by row (the
 * same bags, phase, strategy and thread count, and cell when the files have that column:
 * the sweep's), the way a user compares two machines or
 * two builds. Per row: both medians, the speed ratio A / B (> 1: B faster) and the two
 * medians' spreads combined (sqrt(a^2 + b^2)); a row whose ratio is further from 1 than
 * twice that is marked. Then the geometric mean of the ratios, their range, and the rows
 * only one file has. The files' "# " lines (the record: commit, machine, command) are
 * printed first.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emb_bench.h"

typedef struct CmpRow {
    char key[160];
    double median_ms, spread;
    int matched;
} CmpRow;

typedef struct CmpFile {
    CmpRow *rows;
    int n;
} CmpFile;

enum { COL_BAGS, COL_PHASE, COL_STRATEGY, COL_THREADS, COL_MEDIAN, COL_SPREAD, NCOLS };
static const char *const col_names[NCOLS] = {"bags", "phase", "strategy", "threads",
                                             "median_ms", "spread"};

/* Splits @line at commas in place: the fields' count (at most @cap). */
static int split(char *line, char **f, int cap)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (char *p = line; n < cap;) {
        f[n++] = p;
        char *comma = strchr(p, ',');
        if (!comma)
            break;
        *comma = '\0';
        p = comma + 1;
    }
    return n;
}

static int read_csv(const char *path, CmpFile *out, FILE *log)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return fprintf(stderr, "emb-bench compare: cannot open %s\n", path), -1;
    char line[4096], *fld[64];
    int col[NCOLS], header = 0, cap = 0, rc = 0, lineno = 0, cell = -1;
    while (!rc && fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '#') {
            fprintf(log, "%s: %s", path, line + 2);
            continue;
        }
        const int n = split(line, fld, 64);
        if (!header) {
            for (int k = 0; k < NCOLS; k++) {
                col[k] = -1;
                for (int i = 0; i < n; i++)
                    if (strcmp(fld[i], col_names[k]) == 0)
                        col[k] = i;
                if (k == 0)
                    for (int i = 0; i < n; i++)
                        cell = strcmp(fld[i], "cell") == 0 ? i : cell;
                if (col[k] < 0) {
                    fprintf(stderr, "emb-bench compare: %s: no column %s (not emb-bench's CSV)\n",
                            path, col_names[k]);
                    rc = -1;
                }
            }
            header = 1;
            continue;
        }
        int maxcol = 0;
        for (int k = 0; k < NCOLS; k++)
            maxcol = col[k] > maxcol ? col[k] : maxcol;
        maxcol = cell > maxcol ? cell : maxcol;
        if (n <= maxcol) {
            fprintf(stderr, "emb-bench compare: %s:%d: %d fields, %d expected\n", path, lineno,
                    n, maxcol + 1);
            rc = -1;
            break;
        }
        if (out->n == cap) {
            cap = cap ? 2 * cap : 64;
            CmpRow *r = realloc(out->rows, (size_t)cap * sizeof *r);
            if (!r) {
                rc = -1;
                break;
            }
            out->rows = r;
        }
        CmpRow *r = &out->rows[out->n++];
        snprintf(r->key, sizeof r->key, "%s%s%s %s %s %s", cell >= 0 ? fld[cell] : "",
                 cell >= 0 ? " " : "", fld[col[COL_BAGS]], fld[col[COL_PHASE]],
                 fld[col[COL_STRATEGY]], fld[col[COL_THREADS]]);
        r->median_ms = atof(fld[col[COL_MEDIAN]]);
        r->spread = atof(fld[col[COL_SPREAD]]);
        r->matched = 0;
        if (!(r->median_ms > 0)) {
            fprintf(stderr, "emb-bench compare: %s:%d: median_ms is not a positive number\n",
                    path, lineno);
            rc = -1;
        }
    }
    fclose(f);
    if (!rc && !header)
        fprintf(stderr, "emb-bench compare: %s: no header line\n", path), rc = -1;
    return rc;
}

static int compare_files(CmpFile *a, CmpFile *b, FILE *o)
{
    fprintf(o, "%-44s %10s %10s %7s %7s\n", "row (bags phase strategy threads)", "A ms", "B ms",
            "A/B", "spread");
    double lsum = 0, lo = 1e30, hi = 0;
    int n = 0, beyond = 0;
    for (int i = 0; i < a->n; i++)
        for (int j = 0; j < b->n; j++) {
            CmpRow *x = &a->rows[i], *y = &b->rows[j];
            if (y->matched || strcmp(x->key, y->key) != 0)
                continue;
            x->matched = y->matched = 1;
            const double ratio = x->median_ms / y->median_ms;
            const double sp = sqrt(x->spread * x->spread + y->spread * y->spread);
            const int out = fabs(ratio - 1) > 2 * sp;
            fprintf(o, "%-44s %10.3f %10.3f %6.3fx %6.1f%%%s\n", x->key, x->median_ms,
                    y->median_ms, ratio, 100 * sp, out ? " *" : "");
            lsum += log(ratio);
            lo = ratio < lo ? ratio : lo;
            hi = ratio > hi ? ratio : hi;
            beyond += out;
            n++;
            break;
        }
    for (int i = 0; i < a->n; i++)
        if (!a->rows[i].matched)
            fprintf(o, "only in A: %s\n", a->rows[i].key);
    for (int j = 0; j < b->n; j++)
        if (!b->rows[j].matched)
            fprintf(o, "only in B: %s\n", b->rows[j].key);
    if (!n) {
        fprintf(stderr, "emb-bench compare: no row in common\n");
        return -1;
    }
    fprintf(o, "A/B (> 1: B faster): geometric mean %.3fx over %d rows, range %.3fx .. %.3fx; "
               "%d row%s (*) differ by more than twice their combined spread\n",
            exp(lsum / n), n, lo, hi, beyond, beyond == 1 ? "" : "s");
    return 0;
}

int bench_compare_main(int argc, char **argv)
{
    if (argc != 4 || strcmp(argv[2], "--help") == 0) {
        fprintf(argc == 3 && strcmp(argv[2], "--help") == 0 ? stdout : stderr,
                "usage: emb-bench compare A.csv B.csv\n"
                "B's rows against A's: medians, A/B (> 1: B faster), the combined spread\n");
        return argc == 3 && strcmp(argv[2], "--help") == 0 ? 0 : 2;
    }
    CmpFile a = {0}, b = {0};
    int rc = read_csv(argv[2], &a, stdout);
    if (!rc)
        rc = read_csv(argv[3], &b, stdout);
    if (!rc)
        rc = compare_files(&a, &b, stdout);
    free(a.rows);
    free(b.rows);
    return rc ? 1 : 0;
}
