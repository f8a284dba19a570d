/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_sweep.c — `emb-bench --sweep dims`: the forward pass of one table over every
 * feature size and dtype, with hot and cold ids (issue 13's targets as one command).
 *
 * A cell is (ids, dtype, D): hot = a table of --hot-rows rows and Zipf ids (--ids when it
 * is Zipf, else s = 1.05): the hot rows stay in cache and the cost per id shows; cold = a
 * table of --cold-mib MiB and uniform ids: every row a miss, the memory roof shows. Each
 * cell is an ordinary emb-bench run (its table printed as it ends) with phases = forward,
 * bags = 20 and strategies = sequential, prealloc-concat unless --bags / --strategies were
 * given; --threads, --batch, --min-time, --peer apply to every cell. The run ends with one
 * markdown table of every row of every cell. --csv and --json keep every cell's rows in
 * one file each: the ordinary run's columns led by a "cell" column (ids:dtype:D, which
 * `emb-bench compare` adds to a row's key), and in JSON one object per cell.
 */
#include <stdlib.h>
#include <string.h>

#include "emb_bench.h"

typedef struct SweepRow {
    int cold;
    EmbDtype dt;
    int32_t D;
    char bags[32];
    BenchRow row;
} SweepRow;

static void print_summary(const SweepRow *r, int n, const BenchConfig *c, FILE *f)
{
    const int peer = c->peer != NULL;
    fprintf(f, "\n# the forward sweep: batch %lld; hot = %lld rows, Zipf(%.2f); cold = %lld "
               "MiB, uniform; ms per batch (median, +- its 95%% interval); roof = the memory "
               "roof's time for the rows read / ours%s\n",
            (long long)c->batch, (long long)c->hot_rows, c->ids == IDS_ZIPF ? c->zipf_s : 1.05,
            (long long)c->cold_mib, peer ? "; vs torch = torch's median / ours (> 1: faster)" : "");
    fprintf(f, "| ids | dtype | D | bags | strategy | thr | ms | vs seq | GB/s | roof |%s\n",
            peer ? " torch ms | vs torch |" : "");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|---|%s\n", peer ? "---|---|" : "");
    for (int i = 0; i < n; i++) {
        const BenchRow *x = &r[i].row;
        fprintf(f, "| %s | %s | %d | %s | %s | %d | %.3f +-%.1f%% | %.2fx | %.2f | %.2f |",
                r[i].cold ? "cold" : "hot", emb_dtype_name(r[i].dt), r[i].D, r[i].bags,
                bench_strategy_name(x->strategy), x->threads, x->median_s * 1e3,
                x->spread * 100, x->vs_seq, x->bytes / x->median_s / 1e9,
                x->roof_s / x->median_s);
        if (peer && x->peer_s > 0)
            fprintf(f, " %.3f | %.2fx |", x->peer_s * 1e3, x->peer_s / x->median_s);
        else if (peer)
            fprintf(f, " - | - |");
        fputc('\n', f);
    }
}

/* The files of --csv and --json: opened before the first cell (a bad path fails at once),
   each cell's rows added as it ends. */
typedef struct SweepOut {
    FILE *csv;
    json_t *json, *cells;
} SweepOut;

static int out_open(SweepOut *o, const BenchConfig *base)
{
    if (base->csv) {
        if (!(o->csv = fopen(base->csv, "w")))
            return fprintf(stderr, "emb-bench: cannot write %s\n", base->csv), -1;
        bench_record_csv(&base->record, o->csv);
        fprintf(o->csv, "cell,%s\n", BENCH_CSV_COLUMNS);
    }
    if (base->json) {
        o->json = json_object();
        o->cells = json_array();
        if (!o->json || !o->cells)
            return -1;
        json_object_set_new(o->json, "record", bench_record_json(&base->record));
        json_object_set(o->json, "cells", o->cells);
    }
    return 0;
}

static int out_cell(SweepOut *o, const BenchResults *res, const BenchConfig *c, int cold,
                    EmbDtype dt, int32_t D)
{
    char cell[48];
    snprintf(cell, sizeof cell, "%s:%s:%d", cold ? "cold" : "hot", emb_dtype_name(dt), D);
    if (o->csv) {
        bench_csv_comments(res, cell, o->csv);
        bench_csv_rows(res, c, cell, o->csv);
        fflush(o->csv);
    }
    if (o->cells) {
        json_t *j = bench_results_json(res, c);
        if (!j || json_object_set_new(j, "cell", json_string(cell)) != 0 ||
            json_array_append_new(o->cells, j) != 0)
            return -1;
    }
    return 0;
}

static int out_close(SweepOut *o, const BenchConfig *base, int rc)
{
    if (o->csv && fclose(o->csv) != 0 && rc == 0) {
        fprintf(stderr, "emb-bench: cannot write %s\n", base->csv);
        rc = -1;
    } else if (o->csv && rc == 0) {
        printf("# rows: %s\n", base->csv);
    }
    if (o->json && rc == 0) {
        rc = json_dump_file(o->json, base->json, JSON_INDENT(1)) == 0 ? 0 : -1;
        if (rc)
            fprintf(stderr, "emb-bench: cannot write %s\n", base->json);
        else
            printf("# json: %s\n", base->json);
    }
    json_decref(o->cells);
    json_decref(o->json);
    return rc;
}

int bench_sweep(const BenchConfig *base)
{
    BenchConfig *c = malloc(sizeof *c);
    const int ncells = 2 * base->ndtypes * base->ndims;
    SweepRow *rows = NULL;
    int nrows = 0, cap = 0, rc = c ? 0 : -1;
    SweepOut out = {0};
    if (rc == 0)
        rc = out_open(&out, base);
    for (int cell = 0; cell < ncells && rc == 0; cell++) {
        const int cold = cell / (base->ndtypes * base->ndims);
        const EmbDtype dt = base->dtypes[cell / base->ndims % base->ndtypes];
        const int32_t D = base->dims[cell % base->ndims];
        *c = *base;
        c->sweep = 0;
        const int64_t row_bytes = (int64_t)D * (int64_t)emb_dtype_size(dt);
        c->ntables = 1;
        c->tables[0] = (BenchTableSpec){
            .rows = cold ? (base->cold_mib << 20) / row_bytes : base->hot_rows, .dim = D,
            .dtype = dt};
        if (c->tables[0].rows < 1)
            c->tables[0].rows = 1;
        snprintf(c->tables_desc, sizeof c->tables_desc, "%s: 1 table %lldx%d %s",
                 cold ? "cold" : "hot", (long long)c->tables[0].rows, D, emb_dtype_name(dt));
        c->ids = cold ? IDS_UNIFORM : IDS_ZIPF;
        c->zipf_s = base->ids == IDS_ZIPF ? base->zipf_s : 1.05;
        c->nphases = 1;
        c->phases[0] = (BenchPhaseSpec){PHASE_FORWARD, OPT_NONE, "forward"};
        if (!base->bags_given)
            c->nvariants = 1, c->variants[0] = (BenchBagSpec){BAG_FIXED, 20, 20, "multi-hot-20"};
        if (!base->strategies_given)
            c->strategies = 1u << STRAT_SEQUENTIAL | 1u << STRAT_PREALLOC_CONCAT;
        c->csv = c->plot = c->json = NULL; /* the sweep's files hold every cell */
        printf("\n## sweep cell %d/%d\n", cell + 1, ncells);
        bench_config_print(c, stdout);
        if (cell == 0)
            bench_machine_print(stdout);
        BenchResults res = {0};
        rc = bench_run(c, &res, 0);
        if (rc == 0)
            rc = out_cell(&out, &res, c, cold, dt, D);
        for (int i = 0; rc == 0 && i < res.nrows; i++) {
            if (nrows == cap) {
                cap = cap ? 2 * cap : 64;
                SweepRow *g = realloc(rows, (size_t)cap * sizeof *g);
                if (!g) {
                    rc = -1;
                    break;
                }
                rows = g;
            }
            SweepRow *s = &rows[nrows++];
            *s = (SweepRow){cold, dt, D, "", res.rows[i]};
            snprintf(s->bags, sizeof s->bags, "%s", c->variants[res.rows[i].variant].name);
        }
        bench_results_free(&res);
    }
    if (rc == 0)
        print_summary(rows, nrows, base, stdout);
    rc = out_close(&out, base, rc);
    free(rows);
    free(c);
    return rc;
}
