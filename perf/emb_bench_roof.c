/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_roof.c — the memory roof, measured in the run by the method of
 * ../shared/tools/gather_roof.c: hand-tuned OpenMP loops over a large buffer with the
 * run's row size, batch and bag size and the same thread count as the row they judge.
 *   gather: bags of random rows summed into output rows, software prefetch PF ids ahead;
 *           GB/s of rows read.
 *   update: random distinct rows, row -= 0.01 * grad, prefetched for writing; GB/s of rows
 *           read + written.
 * The best of REPS repetitions over IDSETS id sets is the roof. OpenMP appears here only
 * because it is the roof's method; the library's strategies do their own threading.
 */
#include <stdlib.h>
#include <string.h>

#include "emb_bench.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define PF 16
#define REPS 10
#define IDSETS 4
#define MAX_NNZ (1 << 18) /* cap of rows per repetition: keeps the measurement short */

typedef struct RoofBuf {
    float *t, *out, *g;
    int64_t *ids;
    size_t rows, dim, bags, bag, nnz;
} RoofBuf;

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

static void gather_table(const float *t, int64_t stride, const EmbBatch *b, float *out,
                         int64_t out_stride, int threads)
{
#pragma omp parallel num_threads(threads)
    gather_bags(t, stride, b, out, out_stride, (int)out_stride);
}

static double gather(const RoofBuf *b, int threads)
{
    double best = 1e30;
    for (int r = 0; r < REPS; r++) {
        const EmbBatch batch = {.ids = b->ids + (size_t)(r % IDSETS) * b->nnz,
                                .nnz = (int64_t)b->nnz, .nbags = (int64_t)b->bags,
                                .bag_size = (int64_t)b->bag};
        double t0 = bench_now();
        gather_table(b->t, (int64_t)b->dim, &batch, b->out, (int64_t)b->dim, threads);
        double dt = bench_now() - t0;
        best = dt < best ? dt : best;
    }
    return (double)b->nnz * b->dim * sizeof(float) / best / 1e9;
}

static double update(const RoofBuf *b, size_t n, int threads)
{
    double best = 1e30;
    const size_t D = b->dim;
    for (int r = 0; r < REPS; r++) {
        const int64_t *id = b->ids + (size_t)(r % IDSETS) * b->nnz;
        float *t = b->t;
        const float *g = b->g;
        double t0 = bench_now();
#pragma omp parallel for schedule(static) num_threads(threads)
        for (size_t i = 0; i < n; i++) {
            if (i + PF < n) {
                const char *f = (const char *)(t + id[i + PF] * D);
                for (size_t c = 0; c < D * sizeof(float); c += 64)
                    __builtin_prefetch(f + c, 1, 3);
            }
            float *row = t + id[i] * D;
            const float *gr = g + (i % 1024) * D;
#pragma omp simd
            for (size_t d = 0; d < D; d++)
                row[d] -= 0.01f * gr[d];
        }
        double dt = bench_now() - t0;
        best = dt < best ? dt : best;
    }
    return 2.0 * (double)n * D * sizeof(float) / best / 1e9;
}

/* n distinct ids (one per stratum of rows / n), shuffled: what an optimizer sees. */
static void distinct_ids(int64_t *ids, size_t n, size_t rows, uint64_t *seed)
{
    size_t stratum = rows / n ? rows / n : 1;
    for (size_t i = 0; i < n; i++)
        ids[i] = (int64_t)((i * stratum + bench_splitmix(seed) % stratum) % rows);
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = bench_splitmix(seed) % (i + 1);
        int64_t x = ids[i];
        ids[i] = ids[j];
        ids[j] = x;
    }
}

static void *alloc64(size_t bytes)
{
    return aligned_alloc(64, (bytes + 63) / 64 * 64);
}

static int roof_alloc(RoofBuf *b, int64_t mib, int32_t dim, int64_t bags, int32_t bag)
{
    memset(b, 0, sizeof *b);
    b->dim = (size_t)(dim > 1024 ? 1024 : dim);
    b->bag = (size_t)bag;
    b->bags = (size_t)bags;
    if (b->bags * b->bag > MAX_NNZ)
        b->bags = MAX_NNZ / b->bag ? MAX_NNZ / b->bag : 1;
    b->nnz = b->bags * b->bag;
    size_t bytes = (size_t)mib << 20;
    b->rows = bytes / (b->dim * sizeof(float));
    b->t = alloc64(b->rows * b->dim * sizeof(float));
    b->out = alloc64(b->bags * b->dim * sizeof(float));
    b->g = alloc64(1024 * b->dim * sizeof(float));
    b->ids = malloc(IDSETS * b->nnz * sizeof(int64_t));
    return b->rows > 0 && b->t && b->out && b->g && b->ids ? 0 : -1;
}

static void roof_free(RoofBuf *b)
{
    free(b->t);
    free(b->out);
    free(b->g);
    free(b->ids);
}

int bench_roof_measure(BenchRoof *r, int threads, int64_t mib, int32_t dim, int64_t bags,
                       int32_t bag, int64_t distinct, uint64_t seed)
{
    RoofBuf b;
    if (roof_alloc(&b, mib, dim, bags, bag) != 0) {
        roof_free(&b);
        return -1;
    }
    size_t nfl = b.rows * b.dim;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t i = 0; i < nfl; i++)
        b.t[i] = (float)(i % 997) * 1e-3f;
    for (size_t i = 0; i < 1024 * b.dim; i++)
        b.g[i] = 1e-3f;
    for (size_t i = 0; i < IDSETS * b.nnz; i++)
        b.ids[i] = (int64_t)(bench_splitmix(&seed) % b.rows);
    r->gather_gbs = gather(&b, threads);
    size_t n = distinct > 0 && (size_t)distinct < b.nnz ? (size_t)distinct : b.nnz;
    if (n > b.rows)
        n = b.rows;
    for (int s = 0; s < IDSETS; s++)
        distinct_ids(b.ids + (size_t)s * b.nnz, n, b.rows, &seed);
    r->update_gbs = update(&b, n, threads);
    roof_free(&b);
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

double bench_roof_workload(const BenchWorkload *w, const BenchConfig *c, int v, int threads)
{
    if (!bench_roof_on_workload(c))
        return 0;
    double best = 1e30;
    for (int r = 0; r < REPS; r++) {
        const BenchIdSet *set = &w->sets[v][r % BENCH_NSETS];
        double t0 = bench_now();
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
        double dt = bench_now() - t0;
        best = dt < best ? dt : best;
    }
    return bench_bytes_read(w, c, v) / best / 1e9;
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

double bench_roof_workload_update(const BenchWorkload *w, const BenchConfig *c, int v,
                                  int threads)
{
    if (!bench_roof_on_workload(c))
        return 0;
    int64_t *ids[BENCH_NSETS][BENCH_MAX_TABLES] = {{0}}, n[BENCH_NSETS][BENCH_MAX_TABLES];
    float *g = calloc(1024 * 1024, sizeof *g); /* 1024 rows of the widest D, zeros */
    int ok = g != NULL;
    uint64_t seed = c->seed;
    for (int s = 0; s < BENCH_NSETS; s++)
        for (int t = 0; t < w->ntables && ok; t++) {
            const EmbBatch *b = &w->sets[v][s].batches[t];
            ok = (ids[s][t] = malloc((size_t)(b->nnz ? b->nnz : 1) * sizeof(int64_t))) != NULL;
            n[s][t] = ok ? batch_distinct(b, ids[s][t], &seed) : 0;
        }
    double best = 1e30;
    for (int r = 0; r < REPS && ok; r++) {
        const double t0 = bench_now();
        update_tables(w, c, ids[r % BENCH_NSETS], n[r % BENCH_NSETS], g, threads);
        const double dt = bench_now() - t0;
        best = dt < best ? dt : best;
    }
    for (int s = 0; s < BENCH_NSETS; s++)
        for (int t = 0; t < w->ntables; t++)
            free(ids[s][t]);
    free(g);
    return ok ? bench_bytes_updated(w, c, v) / best / 1e9 : 0;
}
