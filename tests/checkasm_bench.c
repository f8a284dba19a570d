/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * checkasm_bench.c — the checker's benchmark modes (never run as a test):
 *
 *   --bench     every dispatch level against the C reference on cache-resident bags
 *               (NBAGS bags of LEN columns drawn from NCOLS_B columns), and each level's
 *               static-size `_dN` copies against its generic kernel at the same D; the
 *               lookup's bags kernels (bags_dN: ids in, pooled rows out) against the
 *               generic pool kernel on resolved columns, with and without prefetch;
 *   --cold MiB  pooled gather (SUM, bags of 20, batches of 2048) of a cold MiB-sized f32
 *               table at D = 64 through emb_lookup, on 1 and 2 threads, as GB/s of rows
 *               read: the same measure as ../shared/tools/gather_roof.c's "gather 64".
 *
 * Times are the best of several runs (CLOCK_MONOTONIC).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <embtables/static.h>

#include "checkasm.h"

EMB_STATIC_TABLE(bench16, 16);
EMB_STATIC_TABLE(bench32, 32);

#define NCOLS_B 256 /* columns a cache-resident bag draws from */
#define NBAGS 64
#define LEN 20
#define RUNS 7

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct Bench {
    int32_t D;
    const void *store;
    size_t rowbytes; /* column stride: D elements, or a quantized row */
    int64_t ids[NBAGS * LEN]; /* the columns of cols[] as ids into store */
    const void *cols[NBAGS * LEN];
    float w[NBAGS * LEN];
    float *out;
    const float *g;
} Bench;

/* One kernel to time: exactly one of the pointers is set. */
typedef struct Kernel {
    emb_pool_fn pool;
    emb_gather_fn gather;
    emb_sgd_row_fn sgd;
    emb_bags_fn bags;
    int weighted;
    int resident; /* pool: ahead -1 (no prefetch), as emb_lookup does for small tables */
} Kernel;

/* One pass over the bench's bags with @k (sgd_row: lr 0, the table keeps its values). */
static void run_once(const Bench *b, const Kernel *k)
{
    if (k->bags) { /* all the bags in one call, as the lookup does */
        const EmbBagsArgs a = {
            .out = b->out, .out_stride = b->D, .data = b->store,
            .col_stride = (int64_t)b->rowbytes, .ids = b->ids, .bag_size = LEN,
            .weights = k->weighted ? b->w : NULL, .bag0 = 0, .bag1 = NBAGS,
            .pf_dist = k->resident ? 0 : EMB_PF_DIST, .D = b->D,
            .combiner = EMB_COMBINER_SUM,
        };
        k->bags(&a);
        return;
    }
    for (int j = 0; j < NBAGS; j++) {
        const int64_t c = (int64_t)j * LEN;
        if (k->pool)
            k->pool(b->out + (size_t)j * b->D, b->cols + c, k->weighted ? b->w + c : NULL,
                    LEN, k->resident ? -1 : (int64_t)(NBAGS - 1 - j) * LEN, b->D, 0);
        else if (k->gather)
            k->gather(b->out, b->D, b->cols + c, LEN, b->D);
        else
            for (int i = 0; i < LEN; i++)
                k->sgd((void *)(uintptr_t)b->cols[c + i], b->g, 0.0f, b->D);
    }
}

/* ns per bag (pool) or per column (gather, sgd_row), best of RUNS. */
static double time_kernel(const Bench *b, const Kernel *k)
{
    const int reps = (int)(4096 / b->D) + 4;
    double best = 1e30;
    for (int r = 0; r < RUNS; r++) {
        const double t0 = now();
        for (int i = 0; i < reps; i++)
            run_once(b, k);
        const double dt = now() - t0;
        best = dt < best ? dt : best;
    }
    return best / reps / NBAGS / (k->pool || k->bags ? 1 : LEN) * 1e9;
}

/* Values of magnitude [0.5, 1) in the dtype: ca_fill's subnormals (there to test the
 * conversions) would time the CPU's subnormal assists, not the kernels (weighted bags of
 * them ran 20x slower than unweighted ones). */
static void bench_fill(void *p, int dt, int64_t n, uint64_t *s)
{
    for (int64_t i = 0; i < n; i++) {
        const float u = tu_randf(s);
        ca_set(p, (EmbDtype)dt, i, (u < 0 ? -0.5f : 0.5f) * (1.0f + fabsf(u)));
    }
}

/* Quantized rows: random values, scale 2^-7 and bias -0.5 (no subnormals either). */
static void bench_fill_rows(void *store, EmbDtype dt, int32_t D, size_t rowbytes, uint64_t *s)
{
    ca_fill_rows(store, dt, D, NCOLS_B, (int64_t)rowbytes, s);
    for (int64_t r = 0; r < NCOLS_B; r++) {
        unsigned char *p = (unsigned char *)store + r * rowbytes + emb__q_value_bytes(dt, D);
        const float f[2] = {0x1p-7f, -0.5f};
        const uint16_t h[2] = {emb__f32_to_f16(f[0]), emb__f32_to_f16(f[1])};
        if (dt == EMB_INT4)
            memcpy(p, h, sizeof h);
        else
            memcpy(p, f, sizeof f);
    }
}

static void bench_setup(Bench *b, void *store, int dt, int32_t D, uint64_t *s)
{
    const size_t rowbytes = emb_dtype_row_bytes((EmbDtype)dt, D);
    b->D = D;
    b->store = store;
    b->rowbytes = rowbytes;
    if (emb__dtype_quantized((EmbDtype)dt))
        bench_fill_rows(store, (EmbDtype)dt, D, rowbytes, s);
    else
        bench_fill(store, dt, (int64_t)NCOLS_B * D, s);
    for (int k = 0; k < NBAGS * LEN; k++) {
        b->ids[k] = (int64_t)(tu_rand(s) % NCOLS_B);
        b->cols[k] = (const char *)store + b->ids[k] * rowbytes;
        b->w[k] = tu_randf(s);
    }
}

/* One line per (family, dtype, D): C time, then each level's time and speed-up. */
static void bench_line(const Level *lv, const Bench *b, const char *family, int dt)
{
    const int dc = emb__dclass(b->D);
    double c = 0.0;
    printf("%-9s %-4s D=%-4d", family, ca_dtype_name(dt), b->D);
    for (int l = 0; l < NLEVELS; l++) {
        if (!lv[l].available)
            continue;
        const EmbKernels *k = &lv[l].k;
        Kernel g = {0}, d = {0};
        if (!strcmp(family, "gather")) {
            g.gather = k->gather[dt];
            d.gather = dc >= 0 ? k->gather_d[dc][dt] : NULL;
        } else if (!strcmp(family, "sgd_row")) {
            g.sgd = k->sgd_row[dt];
            d.sgd = dc >= 0 ? k->sgd_row_d[dc][dt] : NULL;
        } else if (!strncmp(family, "bags", 4)) { /* bags_dN against the generic pool */
            g.pool = k->pool[dt];
            d.bags = dc >= 0 ? k->bags_d[dc][dt] : NULL;
            g.weighted = d.weighted = !strcmp(family, "bags_w");
            g.resident = d.resident = !strcmp(family, "bags_res");
        } else {
            g.pool = k->pool[dt];
            d.pool = dc >= 0 ? k->pool_d[dc][dt] : NULL;
            g.weighted = d.weighted = !strcmp(family, "pool_w");
            g.resident = d.resident = !strcmp(family, "pool_res");
        }
        const double t = time_kernel(b, &g);
        const double td = d.pool || d.gather || d.sgd || d.bags ? time_kernel(b, &d) : 0.0;
        if (l == LEVEL_C) {
            c = t;
            printf(" | c %7.1f ns", t);
            if (td > 0.0)
                printf(" d%d %6.1f", b->D, td);
            continue;
        }
        printf(" | %s %6.1f (%4.1fx)", lv[l].name, t, c / t);
        if (td > 0.0)
            printf(" d%d %6.1f (%4.1fx, static/dyn %4.2fx)", b->D, td, c / td, t / td);
    }
    printf("\n");
}

/* ns per bag of emb_lookup_sum over @ids into @out (a table of NCOLS_B columns). */
static double time_lookup(EmbTable *t, const int64_t *ids, float *out)
{
    double best = 1e30;
    for (int r = 0; r < RUNS; r++) {
        const double t0 = now();
        for (int i = 0; i < 100; i++)
            emb_lookup_sum(t, ids, NBAGS, LEN, out, emb_table_featuresize(t));
        const double dt = now() - t0;
        best = dt < best ? dt : best;
    }
    return best / 100 / NBAGS * 1e9;
}

/* The same bags through a static.h table (inline code of this compilation) and
 * through emb_lookup_sum on a library table over the same memory. */
#define BENCH_STATIC(NAME, N, store, ids, out)                                             \
    do {                                                                                   \
        NAME st = NAME##_wrap(store, NCOLS_B);                                             \
        EmbTable *t;                                                                       \
        if (emb_table_wrap(&t, store, NCOLS_B, N, N, EMB_F32, NULL))                       \
            return 2;                                                                      \
        double best = 1e30;                                                                \
        for (int r = 0; r < RUNS; r++) {                                                   \
            const double t0 = now();                                                       \
            for (int i = 0; i < 100; i++)                                                  \
                NAME##_lookup_sum(&st, ids, NBAGS, LEN, out, N);                           \
            const double dt = now() - t0;                                                  \
            best = dt < best ? dt : best;                                                  \
        }                                                                                  \
        const double lib = time_lookup(t, ids, out), hdr = best / 100 / NBAGS * 1e9;       \
        printf("static.h  f32  D=%-4d | %s_lookup_sum %6.1f ns | emb_lookup_sum %6.1f ns " \
               "(static.h %4.2fx)\n", N, #NAME, hdr, lib, lib / hdr);                      \
        emb_table_destroy(&t);                                                             \
    } while (0)

static int bench_header(float *store, float *out, uint64_t *s)
{
    int64_t ids[NBAGS * LEN];
    for (int k = 0; k < NBAGS * LEN; k++)
        ids[k] = (int64_t)(tu_rand(s) % NCOLS_B);
    bench_fill(store, EMB_F32, (int64_t)NCOLS_B * 32, s);
    BENCH_STATIC(bench16, 16, store, ids, out);
    BENCH_STATIC(bench32, 32, store, ids, out);
    return 0;
}

int ca_bench(const Level levels[NLEVELS], uint64_t seed)
{
    static const int32_t sizes[] = {16, 32, 64, 100, 128, 256};
    uint64_t s = seed;
    Bench *b = malloc(sizeof *b);
    void *store = aligned_alloc(64, (size_t)NCOLS_B * 256 * sizeof(float)); /* as a table */
    float *g = malloc(256 * sizeof(float));
    b->out = malloc((size_t)NBAGS * LEN * 256 * sizeof(float));
    if (!b || !store || !g || !b->out)
        return 2;
    memset(g, 0, 256 * sizeof(float));
    b->g = g;
    printf("times per bag of %d (pool) or per column (gather, sgd_row); %d bags from %d "
           "cache-resident columns; best of %d\n", LEN, NBAGS, NCOLS_B, RUNS);
    printf("pool: prefetching %d columns ahead; pool_res: no prefetch (ahead -1, as emb_lookup "
           "for tables <= %lld bytes); pool_w: weighted\n", EMB_PF_DIST,
           (long long)EMB_RESIDENT_BYTES);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        bench_setup(b, store, EMB_F32, sizes[i], &s);
        bench_line(levels, b, "pool", EMB_F32);
        bench_line(levels, b, "pool_res", EMB_F32);
    }
    for (int dt = 0; dt < EMB_NDTYPES; dt++) {
        bench_setup(b, store, dt, 64, &s);
        if (dt != EMB_F32)
            bench_line(levels, b, "pool", dt);
        bench_line(levels, b, "pool_w", dt);
        bench_line(levels, b, "gather", dt);
        if (!emb__dtype_quantized((EmbDtype)dt)) /* no update kernels */
            bench_line(levels, b, "sgd_row", dt);
    }
    printf("bags: bags_dN (ids in, %d columns ahead prefetched) against the generic pool "
           "kernel (prefetching); bags_res: neither prefetches; bags_w: weighted\n",
           EMB_PF_DIST);
    for (int dt = 0; dt < EMB_NDTYPES; dt++)
        for (int32_t D = 16; D <= 256; D *= 2) {
            bench_setup(b, store, dt, D, &s);
            bench_line(levels, b, "bags", dt);
            bench_line(levels, b, "bags_res", dt);
            if (D == 64)
                bench_line(levels, b, "bags_w", dt);
        }
    const int r = bench_header(store, b->out, &s);
    free(b->out);
    free(b);
    free(store);
    free(g);
    return r;
}

/* ---- cold pooled gather ------------------------------------------------------------- */

#define COLD_D 64
#define COLD_BAGS 2048
#define COLD_REPS 24
#define COLD_IDSETS 8

typedef struct Cold {
    EmbTable *t;
    int64_t *ids;        /* COLD_IDSETS sets of COLD_BAGS * LEN */
    float *out;
    int rep;             /* the set this repetition uses */
    int quit;
    int direct;          /* call the pool kernel on resolved columns, not emb_lookup */
    pthread_barrier_t go, done;
} Cold;

/* Bags [bag0, bag1) straight through the pool kernel, in windows of 256 columns as the
 * lookup's chunks: the kernel's share of a lookup, without validation and bookkeeping. */
static void cold_direct(Cold *c, const int64_t *ids, int64_t bag0, int64_t bag1)
{
    enum { WIN = 256 / LEN };
    const void *cols[WIN * LEN];
    int64_t stride;
    const char *data = emb_table_data(c->t, &stride);
    const emb_pool_fn pool = emb__kernel_pool(EMB_F32, COLD_D, 0);
    for (int64_t b0 = bag0; b0 < bag1; b0 += WIN) {
        const int64_t nb = bag1 - b0 < WIN ? bag1 - b0 : WIN;
        for (int64_t k = 0; k < nb * LEN; k++)
            cols[k] = data + ids[b0 * LEN + k] * stride * (int64_t)sizeof(float);
        for (int64_t b = 0; b < nb; b++)
            pool(c->out + (b0 + b) * COLD_D, cols + b * LEN, NULL, LEN, (nb - 1 - b) * LEN,
                 COLD_D, 0);
    }
}

/* Bags [bag0, bag1) of the current set. */
static void cold_part(Cold *c, int64_t bag0, int64_t bag1)
{
    const int64_t *ids = c->ids + (size_t)(c->rep % COLD_IDSETS) * COLD_BAGS * LEN;
    if (c->direct) {
        cold_direct(c, ids, bag0, bag1);
        return;
    }
    const EmbBatch b = {.ids = ids + bag0 * LEN, .nnz = (bag1 - bag0) * LEN,
                        .nbags = bag1 - bag0, .bag_size = LEN};
    if (emb_lookup(c->t, &b, NULL, c->out + bag0 * COLD_D, COLD_D))
        fprintf(stderr, "cold: %s\n", emb_last_error());
}

/* The second thread: the upper half of the bags of every repetition. */
static void *cold_worker(void *arg)
{
    Cold *c = arg;
    for (;;) {
        pthread_barrier_wait(&c->go);
        if (c->quit)
            return NULL;
        cold_part(c, COLD_BAGS / 2, COLD_BAGS);
        pthread_barrier_wait(&c->done);
    }
}

/* GB/s of rows read, best of COLD_REPS; 2 threads: each does half the bags. */
static double cold_run(Cold *c, int threads)
{
    double best = 1e30;
    for (c->rep = 0; c->rep < COLD_REPS; c->rep++) {
        const double t0 = now();
        if (threads == 2) {
            pthread_barrier_wait(&c->go);
            cold_part(c, 0, COLD_BAGS / 2);
            pthread_barrier_wait(&c->done);
        } else {
            cold_part(c, 0, COLD_BAGS);
        }
        const double dt = now() - t0;
        best = dt < best ? dt : best;
    }
    return (double)COLD_BAGS * LEN * COLD_D * sizeof(float) / best / 1e9;
}

int ca_cold(int64_t mib, uint64_t seed)
{
    Cold c = {0};
    const int64_t rows = (mib << 20) / (COLD_D * (int64_t)sizeof(float));
    const size_t nids = (size_t)COLD_IDSETS * COLD_BAGS * LEN;
    if (emb_table_create(&c.t, rows, COLD_D, EMB_F32, NULL))
        return fprintf(stderr, "cold: %s\n", emb_last_error()), 2;
    c.ids = malloc(nids * sizeof *c.ids);
    c.out = malloc((size_t)COLD_BAGS * COLD_D * sizeof(float));
    if (!c.ids || !c.out)
        return 2;
    int64_t stride;
    float *d = emb_table_data(c.t, &stride);
    for (int64_t i = 0; i < rows * COLD_D; i++)
        d[i] = (float)(i % 997) * 1e-3f;
    uint64_t s = seed;
    for (size_t i = 0; i < nids; i++)
        c.ids[i] = (int64_t)(tu_rand(&s) % (uint64_t)rows);
    pthread_t th;
    pthread_barrier_init(&c.go, NULL, 2);
    pthread_barrier_init(&c.done, NULL, 2);
    pthread_create(&th, NULL, cold_worker, &c);
    printf("cold-gather table %lld MiB D=%d bag %d batch %d pf-dist %d cpu 0x%x\n",
           (long long)mib, COLD_D, LEN, COLD_BAGS, EMB_PF_DIST, emb_cpu_flags());
    printf("cold-gather threads 1 %.2f GB/s\n", cold_run(&c, 1));
    printf("cold-gather threads 2 %.2f GB/s\n", cold_run(&c, 2));
    c.direct = 1;
    printf("cold-gather kernel only (no emb_lookup) threads 1 %.2f GB/s\n", cold_run(&c, 1));
    printf("cold-gather kernel only (no emb_lookup) threads 2 %.2f GB/s\n", cold_run(&c, 2));
    c.quit = 1;
    pthread_barrier_wait(&c.go);
    pthread_join(th, NULL);
    pthread_barrier_destroy(&c.go);
    pthread_barrier_destroy(&c.done);
    emb_table_destroy(&c.t);
    free(c.ids);
    free(c.out);
    return 0;
}
