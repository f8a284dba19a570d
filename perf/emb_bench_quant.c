/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_quant.c — emb-bench quant: the pooled lookup over f32, int8 and int4 rows of the same
 * table (the int8 / int4 tables quantized from the f32 one, emb_table_quantize), in rows
 * per second, at 1 and 2 threads, cold (a table of --mib MiB as f32, uniform ids) and hot
 * (--hot-rows rows, cache-resident). Rows of one (table size, thread count) run
 * interleaved, round after round, so that a shared machine's noise falls on all three; the
 * median of the rounds is reported with the spread (min .. max). Steady state: every call
 * (BATCHES batches) gets fresh uniform ids from the benchmarks' generator (bench_ids.h),
 * drawn just before it, untimed.
 *
 *   emb-bench quant [--mib 1024] [--dim 64] [--bag 20] [--batch 2048] [--rounds 9]
 *               [--hot-rows 4096] [--seed 42] [--thp 1]
 *
 * --cpu-time 1: one thread's rows timed by the calling thread's CPU clock instead of the
 * wall clock (a loaded machine's descheduled time left out; memory stalls stay in).
 * --thp 1: every table's rows copied into memory advised as transparent huge pages
 * (madvise MADV_HUGEPAGE, Linux; the same column strides), wrapped: random rows then miss
 * the TLB far less often (plain tables get 4 KiB pages unless THP is "always").
 * 2 threads: each runs emb_lookup on half the bags (pthreads, one barrier per batch).
 */
#include <pthread.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_choice.h"
#include "bench_ids.h"
#include "embtables/embtables.h"
#include "emb_bench.h"

#define NDT 3
#define BATCHES 8 /* id sets: each round looks up every one */
#define MAXR 64

typedef struct Opts {
    int64_t mib, hot_rows, batch, seed, thp, cpu_time;
    int32_t dim, bag, rounds;
} Opts;

typedef struct Run {
    EmbTable *t;
    const int64_t *ids;
    float *out;
    int64_t bag0, bag1;
    int32_t bag, dim;
} Run;

typedef struct Pair {
    Run half[2];
    int quit;
    pthread_barrier_t go, done;
} Pair;

static const EmbDtype dts[NDT] = {EMB_F32, EMB_INT8, EMB_INT4};

static double now_on(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void run(const Run *r)
{
    const EmbBatch b = {.ids = r->ids + r->bag0 * r->bag, .nnz = (r->bag1 - r->bag0) * r->bag,
                        .nbags = r->bag1 - r->bag0, .bag_size = r->bag};
    if (emb_lookup(r->t, &b, NULL, r->out + r->bag0 * r->dim, r->dim))
        fprintf(stderr, "emb-bench quant: %s\n", emb_last_error());
}

static void *worker(void *arg)
{
    Pair *p = arg;
    for (;;) {
        pthread_barrier_wait(&p->go);
        if (p->quit)
            return NULL;
        run(&p->half[1]);
        pthread_barrier_wait(&p->done);
    }
}

/* Seconds for one lookup of every id set through @t on @threads threads. */
static double time_batches(Pair *p, EmbTable *t, const int64_t *ids, float *out,
                           const Opts *o, int threads)
{
    const clockid_t clock = threads == 1 && o->cpu_time ? CLOCK_THREAD_CPUTIME_ID
                                                          : CLOCK_MONOTONIC;
    const double t0 = now_on(clock);
    for (int s = 0; s < BATCHES; s++) {
        const int64_t *set = ids + (size_t)s * (size_t)(o->batch * o->bag);
        const int64_t mid = threads == 2 ? o->batch / 2 : o->batch;
        p->half[0] = (Run){t, set, out, 0, mid, o->bag, o->dim};
        p->half[1] = (Run){t, set, out, mid, o->batch, o->bag, o->dim};
        if (threads == 2) {
            pthread_barrier_wait(&p->go);
            run(&p->half[0]);
            pthread_barrier_wait(&p->done);
        } else {
            run(&p->half[0]);
        }
    }
    return now_on(clock) - t0;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Table @t's rows copied into 2 MiB-aligned memory advised as huge pages (*mem: freed by
   the caller after the table), wrapped with the same stride in place of @t. */
static int to_huge_pages(EmbTable **t, void **mem, const Opts *o)
{
    int64_t stride;
    const void *src = emb_table_data(*t, &stride);
    const EmbDtype dt = emb_table_dtype(*t);
    const size_t unit = emb_dtype_size(dt) ? emb_dtype_size(dt) : 1;
    const size_t bytes = (size_t)emb_table_ncolumns(*t) * (size_t)stride * unit;
    const size_t huge = 2u << 20, alloc = (bytes + huge - 1) / huge * huge;
    *mem = aligned_alloc(huge, alloc);
    if (!*mem)
        return -1;
#ifdef MADV_HUGEPAGE
    madvise(*mem, alloc, MADV_HUGEPAGE);
#endif
    memcpy(*mem, src, bytes);
    EmbTable *w = NULL;
    if (emb_table_wrap(&w, *mem, emb_table_ncolumns(*t), o->dim, stride, dt, NULL))
        return fprintf(stderr, "emb-bench quant: %s\n", emb_last_error()), -1;
    emb_table_destroy(t);
    *t = w;
    return 0;
}

/* The three tables of @rows rows: f32 filled with seeded values, int8 / int4 quantized. */
static int make_tables(EmbTable *t[NDT], void *mem[NDT], int64_t rows, const Opts *o)
{
    for (int d = 0; d < NDT; d++)
        if (emb_table_create(&t[d], rows, o->dim, dts[d], NULL))
            return fprintf(stderr, "emb-bench quant: %s\n", emb_last_error()), -1;
    int64_t stride;
    float *f = emb_table_data(t[0], &stride);
    uint64_t s = (uint64_t)o->seed;
    for (int64_t r = 0; r < rows; r++)
        for (int32_t i = 0; i < o->dim; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            f[r * stride + i] = (float)(int64_t)(s >> 40) * 0x1p-24f - 0.5f;
        }
    for (int d = 1; d < NDT; d++)
        if (emb_table_quantize(t[d], t[0]))
            return fprintf(stderr, "emb-bench quant: %s\n", emb_last_error()), -1;
    for (int d = 0; d < NDT && o->thp; d++)
        if (to_huge_pages(&t[d], &mem[d], o))
            return -1;
    return 0;
}

/* @n fresh ids of @g into @ids (the next of its stream @st). */
static void draw(int64_t *ids, size_t n, const BenchIdGen *g, uint64_t *st)
{
    for (size_t k = 0; k < n; k++)
        ids[k] = bench_idgen_row(g, st, (int64_t)k);
}

/* Interleaved rounds over the three tables at 1 and 2 threads; one line per row. */
static void measure(Pair *p, EmbTable *t[NDT], int64_t *ids, float *out, const Opts *o,
                    const char *what, const BenchIdGen *g, uint64_t *st)
{
    const size_t nids = (size_t)BATCHES * (size_t)(o->batch * o->bag);
    const double rows = (double)BATCHES * (double)o->batch * o->bag;
    for (int threads = 1; threads <= 2; threads++) {
        double sec[NDT][MAXR];
        for (int d = 0; d < NDT; d++) { /* warm-up */
            draw(ids, nids, g, st);
            time_batches(p, t[d], ids, out, o, threads);
        }
        for (int r = 0; r < o->rounds; r++)
            for (int k = 0; k < NDT; k++) {
                const int d = (k + r) % NDT; /* a new order each round */
                draw(ids, nids, g, st); /* untimed: every call its own ids */
                sec[d][r] = time_batches(p, t[d], ids, out, o, threads);
            }
        double med[NDT];
        for (int d = 0; d < NDT; d++) {
            qsort(sec[d], (size_t)o->rounds, sizeof(double), cmp_double);
            med[d] = sec[d][o->rounds / 2];
            printf("%-4s %-5s threads %d: %7.1f M rows/s (spread %6.1f .. %6.1f)  %.2fx f32\n",
                   what, emb_dtype_name(dts[d]), threads, rows / med[d] / 1e6,
                   rows / sec[d][o->rounds - 1] / 1e6, rows / sec[d][0] / 1e6, med[0] / med[d]);
        }
    }
}

static int bench(Pair *p, int64_t rows, const Opts *o, const char *what)
{
    EmbTable *t[NDT] = {NULL};
    void *mem[NDT] = {NULL};
    const size_t nids = (size_t)BATCHES * (size_t)(o->batch * o->bag);
    int64_t *ids = malloc(nids * sizeof *ids);
    float *out = malloc((size_t)o->batch * (size_t)o->dim * sizeof *out);
    int rc = ids && out ? make_tables(t, mem, rows, o) : -1;
    BenchIdGen g;
    bench_idgen_init(&g, BENCH_IDS_UNIFORM, rows, 1.0, (uint64_t)o->seed);
    uint64_t st = (uint64_t)o->seed ^ 0x9e3779b97f4a7c15ull;
    if (!rc) {
        printf("%s: %lld rows x D %d (f32 %.0f MiB, int8 %.0f MiB, int4 %.0f MiB), bags of %d, "
               "batch %lld, uniform ids, fresh every call (steady state)\n", what, (long long)rows, o->dim,
               (double)rows * (double)emb_dtype_row_bytes(EMB_F32, o->dim) / 1048576.0,
               (double)rows * (double)emb_dtype_row_bytes(EMB_INT8, o->dim) / 1048576.0,
               (double)rows * (double)emb_dtype_row_bytes(EMB_INT4, o->dim) / 1048576.0,
               o->bag, (long long)o->batch);
        measure(p, t, ids, out, o, what, &g, &st);
    }
    for (int d = 0; d < NDT; d++) {
        emb_table_destroy(&t[d]);
        free(mem[d]);
    }
    free(ids);
    free(out);
    return rc;
}

static int parse(int argc, char **argv, Opts *o)
{
    *o = (Opts){.mib = 1024, .hot_rows = 4096, .batch = 2048, .seed = 42, .dim = 64, .bag = 20,
                .rounds = 9};
    for (int i = 1; i + 1 < argc; i += 2) {
        const long long v = strtoll(argv[i + 1], NULL, 0);
        if (!strcmp(argv[i], "--mib")) o->mib = v;
        else if (!strcmp(argv[i], "--dim")) o->dim = (int32_t)v;
        else if (!strcmp(argv[i], "--bag")) o->bag = (int32_t)v;
        else if (!strcmp(argv[i], "--batch")) o->batch = v;
        else if (!strcmp(argv[i], "--rounds")) o->rounds = (int32_t)v;
        else if (!strcmp(argv[i], "--hot-rows")) o->hot_rows = v;
        else if (!strcmp(argv[i], "--seed")) o->seed = v;
        else if (!strcmp(argv[i], "--thp") || !strcmp(argv[i], "--cpu-time")) {
            static const char *const flag[] = {"0", "1"};
            const int k = bench_choice(stderr, "emb-bench quant", argv[i], argv[i + 1], flag, 2);
            if (k < 0)
                return -1;
            *(argv[i][2] == 't' ? &o->thp : &o->cpu_time) = k;
        }
        else return -1;
    }
    return argc % 2 == 1 && o->mib > 0 && o->dim > 0 && o->dim % 2 == 0 && o->bag > 0 &&
                   o->batch > 1 && o->rounds > 0 && o->rounds <= MAXR && o->hot_rows > 0
               ? 0 : -1;
}

int bench_quant_main(int argc, char **argv)
{
    Opts o;
    const int help = argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
    if (help || parse(argc, argv, &o))
        return fprintf(help ? stdout : stderr, "usage: emb-bench quant [--mib N] "
                       "[--dim D (even)] [--bag N] [--batch N] [--rounds N <= %d] "
                       "[--hot-rows N] [--seed N] [--thp 0|1] [--cpu-time 0|1]\n", MAXR),
               help ? 0 : 2;
    Pair p = {0};
    pthread_t th;
    pthread_barrier_init(&p.go, NULL, 2);
    pthread_barrier_init(&p.done, NULL, 2);
    pthread_create(&th, NULL, worker, &p);
    printf("emb-bench quant: cpu flags 0x%x, %d rounds interleaved, median (spread min .. max), "
           "%s pages, 1 thread timed by %s\n", emb_cpu_flags(), o.rounds,
           o.thp ? "huge (madvise)" : "default", o.cpu_time ? "its CPU clock" : "the wall clock");
    const int64_t cold_rows = (o.mib << 20) / (int64_t)emb_dtype_row_bytes(EMB_F32, o.dim);
    int rc = bench(&p, cold_rows, &o, "cold");
    rc = rc ? rc : bench(&p, o.hot_rows, &o, "hot");
    p.quit = 1;
    pthread_barrier_wait(&p.go);
    pthread_join(th, NULL);
    return rc ? 1 : 0;
}
