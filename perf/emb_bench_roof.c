/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_roof.c — the roof's rates and the plain loops.
 *
 * The roof (emb_bench_stream.c) charges each distinct row a step touches at the rate of
 * the level it comes from, and the reads every kernel makes again at the L1 rate; the rates are measured here at start-up, per thread count:
 * random rows of the run's row size read from a buffer that fits each level (L1d, L2,
 * LLC) and from one that does not (DRAM), the best of REPS passes. The plain loops are
 * the hand-written gather and update over the run's own tables and steps (the former
 * roof): the "plain" column, and the check that the roof bounds them (--check-roof).
 * OpenMP appears here only because it is the loops' method; the library's strategies do
 * their own threading.
 */
#include <stdlib.h>
#include <string.h>

#include "emb_bench.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define PF 16
#define REPS 10

/*
 * The roof's gather loop: one table's bags (fixed or CSR) of rows of @stride floats summed
 * into @dim floats of rows of @ldout, prefetching PF ids ahead; its bags spread over the
 * enclosing team (an orphaned OpenMP for, without the barrier at its end).
 */
static void gather_bags(const float *t, int64_t stride, const EmbBatch *b, float *out,
                        int64_t ldout, int dim)
{
    const int64_t *id = b->ids, *off = b->offsets, nnz = b->nnz, L = b->bag_size;
    const size_t D = (size_t)dim;
    if (!off && L == 1) { /* one-hot: a row copy, as a one-hot lookup's kernel does */
#pragma omp for schedule(static) nowait
        for (int64_t bag = 0; bag < b->nbags; bag++) {
            if (bag + PF < nnz) {
                const char *f = (const char *)(t + id[bag + PF] * stride);
                for (size_t c = 0; c < D * sizeof(float); c += 64)
                    __builtin_prefetch(f + c, 0, 3);
            }
            memcpy(out + bag * ldout, t + id[bag] * stride, D * sizeof(float));
        }
        return;
    }
#pragma omp for schedule(static) nowait
    for (int64_t bag = 0; bag < b->nbags; bag++) {
        float acc[1024];
        memset(acc, 0, D * sizeof(float));
        const int64_t end = off ? off[bag + 1] : (bag + 1) * L;
        for (int64_t p = off ? off[bag] : bag * L; p < end; p++) {
            if (p + PF < nnz) {
                const char *f = (const char *)(t + id[p + PF] * stride);
                for (size_t c = 0; c < D * sizeof(float); c += 64)
                    __builtin_prefetch(f + c, 0, 3);
            }
            const float *row = t + id[p] * stride;
#pragma omp simd
            for (size_t d = 0; d < D; d++)
                acc[d] += row[d];
        }
        memcpy(out + bag * ldout, acc, D * sizeof(float));
    }
}


/* ---- the rates of the levels ----------------------------------------------------------
 * Random rows of the run's row size summed into an accumulator (two rows a step, so the
 * adds do not wait on each other), each prefetched PF rows ahead: from a buffer half the size
 * of L1d and of L2 (one per thread: they are private), half the LLC (shared) and
 * twice the LLC or --roof-mib MiB (DRAM). GB/s of rows read, the best of RATE_PASSES. */

#define RATE_READS (1 << 15) /* rows each thread reads per pass */
#define RATE_PASSES 30       /* the best pass is the rate: enough for a quiet moment */

typedef struct RateBuf {
    float *buf;
    int64_t *idx;  /* threads x RATE_READS row indices */
    int64_t rows;  /* rows of each thread's region */
    int priv;      /* each thread reads its own region */
} RateBuf;

static double rate_pass(const RateBuf *b, int threads, size_t D, float *sink)
{
    (void)threads; /* without OpenMP one thread runs the pass, and rate_of counts threads
                      times its bytes: one thread's rate scaled linearly, still a bound */
    const double t0 = bench_now();
#pragma omp parallel num_threads(threads)
    {
        int me = 0;
#ifdef _OPENMP
        me = omp_get_thread_num();
#endif
        const float *base = b->buf + (b->priv ? (size_t)me * (size_t)b->rows * D : 0);
        const int64_t *idx = b->idx + (size_t)me * RATE_READS;
        float acc[1024];
        memset(acc, 0, D * sizeof *acc);
        for (int64_t i = 0; i + 1 < RATE_READS; i += 2) {
            /* both rows PF ahead: prefetching one of the two (as this loop once did) left
               every other row a demand miss, a memory rate 25-45 % under what a kernel
               reads (the sweep's cold D = 128 cell, f32, at 1.15 of the roof) */
            for (int64_t k = i + PF; k < i + PF + 2 && k < RATE_READS; k++) {
                const char *f = (const char *)(base + (size_t)idx[k] * D);
                for (size_t c = 0; c < D * sizeof(float); c += 64)
                    __builtin_prefetch(f + c, 0, 3);
            }
            const float *r0 = base + (size_t)idx[i] * D, *r1 = base + (size_t)idx[i + 1] * D;
#pragma omp simd
            for (size_t d = 0; d < D; d++)
                acc[d] += r0[d] + r1[d];
        }
        sink[me * 16] += acc[0] + acc[D - 1];
    }
    return bench_now() - t0;
}

static double rate_of(int64_t bytes, int priv, int threads, size_t D, uint64_t seed)
{
    RateBuf b = {.priv = priv};
    b.rows = bytes / (int64_t)(D * sizeof(float));
    b.rows = b.rows < 2 ? 2 : b.rows;
    const size_t regions = priv ? (size_t)threads : 1, n = regions * (size_t)b.rows * D;
    b.buf = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    b.idx = malloc((size_t)threads * RATE_READS * sizeof *b.idx);
    float *sink = calloc((size_t)threads * 16, sizeof *sink);
    double best = 1e30;
    if (b.buf && b.idx && sink) {
#pragma omp parallel for schedule(static) num_threads(threads)
        for (size_t i = 0; i < n; i++) /* each thread's region first touched by it */
            b.buf[i] = (float)(i % 251) * 1e-3f;
        for (size_t i = 0; i < (size_t)threads * RATE_READS; i++)
            b.idx[i] = (int64_t)(bench_splitmix(&seed) % (uint64_t)b.rows);
        for (int r = 0; r < RATE_PASSES; r++) {
            const double dt = rate_pass(&b, threads, D, sink);
            best = dt < best ? dt : best;
        }
    }
    free(b.buf);
    free(b.idx);
    free(sink);
    if (best >= 1e30)
        return 0;
    return (double)threads * RATE_READS * (double)(D * sizeof(float)) / best / 1e9;
}

int bench_rates_measure(BenchRates *r, int threads, int32_t row_bytes, int64_t dram_mib,
                        uint64_t seed)
{
    int64_t size[BENCH_LEVELS - 1];
    bench_cache_sizes(size);
    size_t D = (size_t)(row_bytes + 3) / 4;
    D = D < 1 ? 1 : D > 1024 ? 1024 : D;
    for (int l = 0; l < BENCH_LEVELS; l++) {
        int64_t bytes = l < BENCH_LEVELS - 1 ? size[l] / 2 : dram_mib << 20;
        if (l == BENCH_LEVELS - 2 && bytes > dram_mib << 20) /* a smaller LLC buffer: faster */
            bytes = dram_mib << 20;
        r->gbs[l] = rate_of(bytes, l < 2, threads, D, seed + (uint64_t)l);
        if (r->gbs[l] <= 0)
            return -1;
    }
    /* a level never slower than the one below it: the roof bounds either way */
    for (int l = BENCH_LEVELS - 2; l >= 0; l--)
        r->gbs[l] = r->gbs[l] > r->gbs[l + 1] ? r->gbs[l] : r->gbs[l + 1];
    return 0;
}

int bench_roof_on_workload(const BenchConfig *c)
{
    for (int t = 0; t < c->ntables; t++)
        if (c->tables[t].dtype != EMB_F32 || c->tables[t].dim > 1024 || c->tables[t].dynamic ||
            c->tables[t].tiered)
            return 0;
    return 1;
}

/* One pass of the plain gather over every table's bags of @set: seconds. */
static double plain_gather(const BenchWorkload *w, const BenchConfig *c, const BenchIdSet *set,
                           int threads)
{
    (void)threads; /* without OpenMP: one thread */
    const double t0 = bench_now();
#pragma omp parallel num_threads(threads) /* one team for every table, as the strategies */
    {
        int64_t col = w->prepend; /* each table's columns of the concatenated output */
        for (int t = 0; t < w->ntables; t++) {
            int64_t stride;
            const float *data = emb_table_data(w->tables[t], &stride);
            gather_bags(data, stride, &set->batches[t], w->out + col, w->concat_width,
                        c->tables[t].dim);
            col += c->tables[t].dim;
        }
    }
    return bench_now() - t0;
}

static int cmp_id(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The distinct ids of one batch, shuffled (the order an optimizer's rows come in does not
 * follow the ids); their count. */
static int64_t batch_distinct(const EmbBatch *b, int64_t *out, uint64_t *seed)
{
    memcpy(out, b->ids, (size_t)b->nnz * sizeof *out);
    qsort(out, (size_t)b->nnz, sizeof *out, cmp_id);
    int64_t n = 0;
    for (int64_t i = 0; i < b->nnz; i++)
        if (i == 0 || out[i] != out[n - 1])
            out[n++] = out[i];
    for (int64_t i = n - 1; i > 0; i--) {
        const int64_t j = (int64_t)(bench_splitmix(seed) % (uint64_t)(i + 1)), x = out[i];
        out[i] = out[j];
        out[j] = x;
    }
    return n;
}

/* One pass of the update loop over every table's distinct ids of one id set: row -= 0.01
 * g with g all zeros (read from memory, so the loop is the roof's), leaving the tables'
 * bits as they were. */
static void update_tables(const BenchWorkload *w, const BenchConfig *c, int64_t *const *ids,
                          const int64_t *n, const float *g, int threads)
{
    (void)threads; /* without OpenMP: one thread */
#pragma omp parallel num_threads(threads)
    for (int t = 0; t < w->ntables; t++) {
        int64_t stride;
        float *data = emb_table_data(w->tables[t], &stride);
        const int64_t *id = ids[t];
        const size_t D = (size_t)c->tables[t].dim;
#pragma omp for schedule(static) nowait
        for (int64_t i = 0; i < n[t]; i++) {
            if (i + PF < n[t]) {
                const char *f = (const char *)(data + id[i + PF] * stride);
                for (size_t b = 0; b < D * sizeof(float); b += 64)
                    __builtin_prefetch(f + b, 1, 3);
            }
            float *row = data + id[i] * stride;
            const float *gr = g + (i % 1024) * (int64_t)D;
#pragma omp simd
            for (size_t d = 0; d < D; d++)
                row[d] -= 0.01f * gr[d];
        }
    }
}

static int cmp_dbl(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/*
 * The plain loops on the stream's next BENCH_PLAIN_STEPS steps of variant @v: the gather (forward) and,
 * on the next ones, the update of each step's distinct rows (a zero gradient: the tables
 * keep their bits). Their medians, and each step's time and bytes by level.
 */
int bench_plain_measure(BenchPlain *p, BenchWorkload *w, const BenchConfig *c, int v,
                        int threads)
{
    memset(p, 0, sizeof *p);
    if (!bench_roof_on_workload(c))
        return 0;
    int64_t *ids[BENCH_MAX_TABLES] = {0}, n[BENCH_MAX_TABLES];
    float *g = calloc(1024 * 1024, sizeof *g); /* 1024 rows of the widest D, zeros */
    double tg[BENCH_PLAIN_STEPS], tu[BENCH_PLAIN_STEPS];
    int rc = g ? 0 : -1;
    uint64_t seed = c->seed;
    for (int r = 0; r < BENCH_PLAIN_STEPS && !rc; r++) {
        const int slot = bench_stream_next(w, c, v);
        if (slot < 0)
            break;
        const BenchIdSet *set = &w->sets[v][slot];
        tg[r] = p->t[p->n] = plain_gather(w, c, set, threads);
        bench_step_levels(c, set, PHASE_FORWARD, OPT_NONE, p->bytes[p->n++]);
    }
    for (int r = 0; r < BENCH_PLAIN_STEPS && !rc; r++) {
        const int slot = bench_stream_next(w, c, v);
        if (slot < 0)
            break;
        const BenchIdSet *set = &w->sets[v][slot];
        for (int t = 0; t < w->ntables && !rc; t++) {
            const EmbBatch *b = &set->batches[t];
            free(ids[t]);
            rc = (ids[t] = malloc((size_t)(b->nnz ? b->nnz : 1) * sizeof(int64_t))) ? 0 : -1;
            n[t] = rc ? 0 : batch_distinct(b, ids[t], &seed);
        }
        if (rc)
            break;
        const double t0 = bench_now();
        update_tables(w, c, ids, n, g, threads);
        tu[r] = p->t[p->n] = bench_now() - t0;
        bench_step_levels(c, set, PHASE_UPDATE, OPT_SGD, p->bytes[p->n++]);
    }
    for (int t = 0; t < w->ntables; t++)
        free(ids[t]);
    free(g);
    if (rc)
        return -1;
    qsort(tg, BENCH_PLAIN_STEPS, sizeof *tg, cmp_dbl);
    qsort(tu, BENCH_PLAIN_STEPS, sizeof *tu, cmp_dbl);
    p->gather_s = tg[BENCH_PLAIN_STEPS / 2];
    p->update_s = tu[BENCH_PLAIN_STEPS / 2];
    return 0;
}

double bench_plain_worst(const BenchPlain *p, const BenchRates *rates)
{
    double worst = 0;
    for (int i = 0; i < p->n; i++) {
        const double f = bench_roof_of(p->bytes[i], rates) / p->t[i];
        worst = f > worst ? f : worst;
    }
    return worst;
}
