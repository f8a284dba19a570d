/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_stream.c — steady state: every measured step gets ids it has not seen, and the
 * roof knows where each of a step's rows comes from.
 *
 * The stream: each variant keeps BENCH_NSETS id sets, holding its next BENCH_NSETS steps.
 * bench_stream_next() hands out the oldest and, before that, draws the step BENCH_NSETS
 * ahead into the slot the previous call handed out (outside any timing, on the calling
 * thread: with two shared cores a generating thread would steal from the measured one).
 * Step k of variant v draws from its own seed (bench_ids.h), so the ids of the k-th step
 * are the same in every run, whatever the thread counts. With --recycle the sets are
 * today's four, rotated (a hot-cache measurement, labelled so in the report).
 *
 * The levels: when a step is handed out, each distinct row it touches gets the place it
 * is read from by an LRU reuse distance: the bytes of distinct rows touched since the
 * row's last touch (a Fenwick tree over the global step counter, holding the bytes of
 * rows whose last touch was each step). Writing the tables counts as their first touch,
 * table by table (a table's rows all at its end: the distances err short, towards the
 * caches). A row comes from the first level whose capacity (L1 and L2 per core times the
 * run's most threads, the LLC shared), doubled for replacement that is not LRU, holds its
 * distance, else from DRAM. The roof (bench_roof_of) charges each distinct row's bytes at
 * its level's measured rate, and the reads every kernel must make again at the L1 rate:
 * each further (bag, distinct id of the bag) pair of a forward, and a training step's
 * update of its rows after the forward. Writes and a bag's repeated id cost nothing, so
 * no correct kernel can beat it (docs/guide/benchmark.md, "The roof").
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_ids.h"
#include "emb_bench.h"

#define FW_CAP (1 << 20) /* global steps before the stamps are folded into one */

struct BenchStream {
    uint32_t **stamp;      /* per table, per row: the global step of its last touch (0 never) */
    int64_t *touched;      /* per table: rows touched at least once in the run */
    double *fw;            /* Fenwick tree over global steps: bytes last touched there */
    uint32_t g;            /* the global step being accounted (1-based) */
    uint32_t nfill;        /* steps 1..nfill: the tables' writing, one per table */
    double cap[BENCH_LEVELS - 1]; /* bytes each cache level holds for the model */
};

static void fw_add(BenchStream *s, uint32_t i, double v)
{
    for (; i < FW_CAP; i += i & -i)
        s->fw[i] += v;
}

static double fw_sum(const BenchStream *s, uint32_t i) /* steps 1..i */
{
    double v = 0;
    for (; i > 0; i -= i & -i)
        v += s->fw[i];
    return v;
}

static int64_t cache_size(int name, int64_t fallback)
{
    const long v = sysconf(name);
    return v > 0 ? (int64_t)v : fallback;
}

static int64_t llc_override; /* --llc-mib, in bytes (0: the CPU's) */

void bench_cache_set_llc(int64_t bytes)
{
    llc_override = bytes;
}

void bench_cache_sizes(int64_t size[BENCH_LEVELS - 1])
{
    size[0] = cache_size(_SC_LEVEL1_DCACHE_SIZE, 32 << 10);
    size[1] = cache_size(_SC_LEVEL2_CACHE_SIZE, 1 << 20);
    size[2] = llc_override > 0 ? llc_override : cache_size(_SC_LEVEL3_CACHE_SIZE, size[1]);
}

int bench_stream_create(BenchWorkload *w, const BenchConfig *c)
{
    BenchStream *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    w->stream = s;
    s->stamp = calloc((size_t)c->ntables, sizeof *s->stamp);
    s->touched = calloc((size_t)c->ntables, sizeof *s->touched);
    s->fw = calloc(FW_CAP, sizeof *s->fw);
    if (!s->stamp || !s->touched || !s->fw)
        return -1;
    for (int t = 0; t < c->ntables; t++) /* tiered: rows from the disk, the I/O roof's */
        if (!c->tables[t].tiered &&
            !(s->stamp[t] = calloc((size_t)c->tables[t].rows, sizeof **s->stamp)))
            return -1;
    int maxthreads = 1;
    for (int i = 0; i < c->nthreads; i++)
        maxthreads = c->threads[i] > maxthreads ? c->threads[i] : maxthreads;
    int64_t size[BENCH_LEVELS - 1];
    bench_cache_sizes(size);
    s->cap[0] = 2.0 * (double)size[0] * maxthreads;
    s->cap[1] = 2.0 * (double)size[1] * maxthreads;
    s->cap[2] = 2.0 * (double)size[2];
    /* the tables' writing, in the order bench_workload_create wrote them */
    for (int t = 0; t < c->ntables; t++) {
        const double rb = (double)emb_dtype_row_bytes(c->tables[t].dtype, c->tables[t].dim);
        for (int64_t r = 0; s->stamp[t] && r < c->tables[t].rows; r++)
            s->stamp[t][r] = (uint32_t)t + 1;
        if (s->stamp[t])
            fw_add(s, (uint32_t)t + 1, rb * (double)c->tables[t].rows);
    }
    s->nfill = (uint32_t)c->ntables;
    s->g = s->nfill + 1;
    return 0;
}

void bench_stream_destroy(BenchWorkload *w, int ntables)
{
    BenchStream *s = w->stream;
    if (!s)
        return;
    for (int t = 0; s->stamp && t < ntables; t++)
        free(s->stamp[t]);
    free(s->stamp);
    free(s->touched);
    free(s->fw);
    free(s);
    w->stream = NULL;
}

/* Past FW_CAP steps: every row's last touch becomes one step, the fill's last for the
   rows the run has not touched, the one after for the others, so distances are counted
   from there on (shorter than the truth: the model errs towards the caches). */
static void fold(BenchStream *s, const BenchConfig *c)
{
    double fill = 0, run = 0;
    for (int t = 0; t < c->ntables; t++) {
        const double rb = (double)emb_dtype_row_bytes(c->tables[t].dtype, c->tables[t].dim);
        for (int64_t r = 0; s->stamp[t] && r < c->tables[t].rows; r++) {
            const int ran = s->stamp[t][r] > s->nfill;
            s->stamp[t][r] = ran ? s->nfill + 1 : s->nfill;
            *(ran ? &run : &fill) += rb;
        }
    }
    memset(s->fw, 0, FW_CAP * sizeof *s->fw);
    fw_add(s, s->nfill, fill);
    fw_add(s, s->nfill + 1, run);
    s->g = s->nfill + 2;
}

/* The level of a row last touched at step @last, @rb bytes. */
static int level_of(const BenchStream *s, uint32_t last, double rb)
{
    const double dist = fw_sum(s, s->g - 1) - fw_sum(s, last) + rb;
    for (int l = 0; l < BENCH_LEVELS - 1; l++)
        if (dist <= s->cap[l])
            return l;
    return BENCH_LEVELS - 1;
}

/* Accounts set @set as the step about to run: its distinct rows per table by level. */
static void account(BenchWorkload *w, const BenchConfig *c, BenchIdSet *set)
{
    BenchStream *s = w->stream;
    if (s->g >= FW_CAP - 1)
        fold(s, c);
    const uint32_t g = s->g;
    for (int t = 0; t < c->ntables; t++) {
        const double rb = (double)emb_dtype_row_bytes(c->tables[t].dtype, c->tables[t].dim);
        const int64_t *rows = set->rows + ((const int64_t *)set->batches[t].ids - set->ids);
        int64_t *lvl = set->lvl_rows + (size_t)t * BENCH_LEVELS;
        memset(lvl, 0, BENCH_LEVELS * sizeof *lvl);
        uint32_t *stamp = s->stamp[t];
        for (int64_t i = 0; stamp && i < set->batches[t].nnz; i++) {
            const int64_t r = rows[i];
            const uint32_t last = stamp[r];
            if (last == g)
                continue; /* a second touch in this step: free for the roof */
            lvl[level_of(s, last, rb)]++;
            fw_add(s, last, -rb);
            s->touched[t] += last <= s->nfill;
            fw_add(s, g, rb);
            stamp[r] = g;
        }
    }
    s->g++;
}

int bench_stream_next(BenchWorkload *w, const BenchConfig *c, int v)
{
    const int slot = (int)(w->next_step[v] % BENCH_NSETS);
    if (w->steady && w->refill[v] >= 0) { /* the slot handed out last: its step + NSETS */
        const int old = w->refill[v];
        bench_idset_free(&w->sets[v][old]);
        if (bench_idset_create(&w->sets[v][old], c, v, w->next_step[v] - 1 + BENCH_NSETS) != 0)
            return -1;
    }
    w->refill[v] = slot;
    w->next_step[v]++;
    if (w->stream) /* a twin (emb_bench_tier_compare.c) has none */
        account(w, c, &w->sets[v][slot]);
    return slot;
}

double bench_touched_fraction(const BenchWorkload *w, const BenchConfig *c, int t)
{
    return w->stream ? (double)w->stream->touched[t] / (double)c->tables[t].rows : 0;
}

/* f32 state elements per element of a row (as the library's optimizer.c). */
static double state_per_element(BenchOpt opt, int32_t dim)
{
    switch (opt) {
    case OPT_ADAGRAD: return 1;
    case OPT_ROWWISE_ADAGRAD: return 1.0 / dim;
    case OPT_ROWWISE_ADAGRAD_COUNTER: return 3.0 / dim;
    case OPT_FTRL:
    case OPT_ADAM: return 2;
    default: return 0;
    }
}

double bench_state_row_bytes(const BenchTableSpec *t, BenchOpt opt)
{
    const double row = state_per_element(opt, t->dim) * t->dim * 4;
    return row <= 0 ? 0 : row < 64 ? 64 : row;
}

void bench_step_levels(const BenchConfig *c, const BenchIdSet *set, BenchPhaseKind kind,
                       BenchOpt opt, double bytes[BENCH_LEVELS])
{
    memset(bytes, 0, BENCH_LEVELS * sizeof *bytes);
    for (int t = 0; t < c->ntables; t++) {
        const double rb = (double)emb_dtype_row_bytes(c->tables[t].dtype, c->tables[t].dim);
        const double sb = kind == PHASE_FORWARD ? 0 : bench_state_row_bytes(&c->tables[t], opt);
        double distinct = 0;
        for (int l = 0; l < BENCH_LEVELS; l++) {
            const double n = (double)set->lvl_rows[(size_t)t * BENCH_LEVELS + l];
            bytes[l] += n * (rb + sb);
            distinct += n;
        }
        if (c->tables[t].tiered) /* its rows from the disk: the I/O roof's */
            continue;
        /* the reads every kernel makes again, at the L1 rate at best: a forward reads the
           row of each (bag, distinct id of the bag) pair (the first of a row is above); a
           training step's update reads its distinct rows again after the forward */
        if (kind != PHASE_UPDATE)
            bytes[0] += ((double)set->pairs_t[t] - distinct) * rb;
        if (kind == PHASE_TRAIN)
            bytes[0] += distinct * rb;
    }
}

double bench_roof_of(const double bytes[BENCH_LEVELS], const BenchRates *rates)
{
    double s = 0;
    for (int l = 0; l < BENCH_LEVELS; l++)
        s += bytes[l] / (rates->gbs[l] * 1e9);
    return s;
}

void bench_workload_header(const BenchWorkload *w, const BenchConfig *c, FILE *f)
{
    char desc[160];
    bench_ids_describe(c->ids == IDS_ZIPF ? BENCH_IDS_ZIPF
                       : c->ids == IDS_TRACE ? BENCH_IDS_TRACE : BENCH_IDS_UNIFORM,
                       c->zipf_s, c->trace, desc, sizeof desc);
    fprintf(f, "# ids: %s; %s\n", desc,
            !w->steady ? "RECYCLED (--recycle): 4 id sets rotated, hot caches, not steady state"
            : c->ids == IDS_TRACE ? "steady state: a stream, each step the trace's next ids, "
                                    "taken just before it runs (untimed)"
                                  : "steady state: a stream, each step's ids drawn from its own "
                                    "seed just before it runs (untimed), no step seen twice"
            );
    fprintf(f, "# distinct rows a step touches per table (mean of its first %d steps; rows):\n",
            BENCH_NSETS);
    for (int v = 0; v < c->nvariants; v++) {
        fprintf(f, "#   %s:", c->variants[v].name);
        for (int t = 0; t < c->ntables; t++) {
            double d = 0;
            for (int s = 0; s < BENCH_NSETS; s++)
                d += (double)w->sets[v][s].distinct_t[t];
            fprintf(f, "%s t%02d %.0f/%lld", t && t % 6 == 0 ? "\n#    " : "", t,
                    d / BENCH_NSETS, (long long)c->tables[t].rows);
        }
        fputc('\n', f);
    }
}

void bench_workload_touched(const BenchWorkload *w, const BenchConfig *c, FILE *f)
{
    fprintf(f, "# the fraction of each table the run touched:");
    for (int t = 0; t < c->ntables; t++)
        fprintf(f, "%s t%02d %.1f%%", t && t % 8 == 0 ? "\n#  " : "", t,
                100 * bench_touched_fraction(w, c, t));
    fputc('\n', f);
}
