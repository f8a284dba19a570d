/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_tier_cmd.c — emb-bench tier: tiered tables (tiered.h) against the same table in memory: a training
 * step (lookup of bags, backward, Adagrad) on Zipf or uniform ids, with and without
 * look-ahead prefetch; hit rate, rows read / written per second, bytes from the disk; and
 * the disk's own random-read rate for the record size, measured in the same run on the same
 * file (its pages dropped from the page cache first with posix_fadvise, as before each
 * timed run); and the step's I/O roof: the in-memory step plus the step's reads and writes
 * at the page cache's cost per record (bench_disk_cached_cost, measured in the run), the
 * floor of any buffered-I/O engine. A table larger than RAM: --no-memory (the in-memory run
 * is skipped).
 *
 *   emb-bench tier [--rows N] [--dim D] [--cache-frac F | --cache-mib M] [--batch B] [--bag L]
 *              [--steps S] [--zipf A | --uniform] [--prefetch P] [--engine auto|uring|pread]
 *              [--policy lru|lfu] [--dtype f32|f16|bf16|int8|int4] [--dir PATH]
 *              [--no-memory] [--quick]
 */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "embtables/embtables.h"

#include "bench_disk.h"
#include "bench_ids.h"
#include "emb_bench.h"

typedef struct Opts {
    int64_t rows, batch, bag, steps;
    int32_t dim;
    double cache_frac, cache_mib, zipf;
    int prefetch, memory;
    EmbTierEngine engine;
    EmbTierPolicy policy;
    EmbDtype dtype;
    const char *dir;
} Opts;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}


static void usage_to(FILE *f, int code);
#define usage() usage_to(stderr, 2)

static EmbDtype dtype_of(const char *s)
{
    static const EmbDtype all[] = {EMB_F32, EMB_F16, EMB_BF16, EMB_INT8, EMB_INT4};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (!strcmp(s, emb_dtype_name(all[i])))
            return all[i];
    usage();
    return EMB_F32;
}

/* The usage on @f, then exit(@code): 0 for --help, 2 for a bad option. */
static void usage_to(FILE *f, int code)
{
    fprintf(f, "usage: emb-bench tier [--rows N] [--dim D] [--cache-frac F | --cache-mib M] "
            "[--batch B] [--bag L] [--steps S] [--zipf A | --uniform] [--prefetch P] "
            "[--engine auto|uring|pread] [--policy lru|lfu] [--dtype f32|f16|bf16|int8|int4] "
            "[--dir PATH] [--no-memory] [--quick]\n");
    exit(code);
}

static void parse(Opts *o, int argc, char **argv)
{
    *o = (Opts){.rows = 1000000, .dim = 64, .cache_frac = 0.10, .batch = 2048, .bag = 20,
                .steps = 50, .zipf = 1.05, .prefetch = 1, .memory = 1, .dir = "/tmp"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (!strcmp(a, name) && v && ++i)
        if (ARG("--rows")) o->rows = atoll(v);
        else if (ARG("--dim")) o->dim = atoi(v);
        else if (ARG("--cache-frac")) o->cache_frac = atof(v);
        else if (ARG("--cache-mib")) o->cache_mib = atof(v);
        else if (ARG("--batch")) o->batch = atoll(v);
        else if (ARG("--bag")) o->bag = atoll(v);
        else if (ARG("--steps")) o->steps = atoll(v);
        else if (ARG("--zipf")) o->zipf = atof(v);
        else if (ARG("--prefetch")) o->prefetch = atoi(v);
        else if (ARG("--dir")) o->dir = v;
        else if (ARG("--engine"))
            o->engine = !strcmp(v, "uring") ? EMB_TIER_ENGINE_URING
                        : !strcmp(v, "pread") ? EMB_TIER_ENGINE_PREAD : EMB_TIER_ENGINE_AUTO;
        else if (ARG("--policy")) o->policy = !strcmp(v, "lfu") ? EMB_TIER_LFU : EMB_TIER_LRU;
        else if (ARG("--dtype")) o->dtype = dtype_of(v);
        else if (!strcmp(a, "--uniform")) o->zipf = 0.0;
        else if (!strcmp(a, "--no-memory")) o->memory = 0;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            usage_to(stdout, 0);
        else if (!strcmp(a, "--quick"))
            o->rows = 20000, o->dim = 16, o->batch = 256, o->steps = 4;
        else
            usage();
#undef ARG
    }
    if (o->rows < 1 || o->dim < 1 || o->batch < 1 || o->bag < 1 || o->steps < 1)
        usage();
}

static void die(const char *what, int r)
{
    fprintf(stderr, "emb-bench tier: %s: %s (%s)\n", what, emb_strerror(r), emb_last_error());
    exit(1);
}

/* The training batches: steps + prefetch depth of them, ids drawn up front. */
static int64_t *make_ids(const Opts *o)
{
    const int64_t nb = o->steps + o->prefetch + 1, nnz = o->batch * o->bag;
    int64_t *ids = malloc((size_t)(nb * nnz) * sizeof *ids);
    uint64_t s = 42;
    BenchIdGen g; /* the benchmarks' generator (bench_ids.h) */
    bench_idgen_init(&g, o->zipf > 0 ? BENCH_IDS_ZIPF : BENCH_IDS_UNIFORM, o->rows, o->zipf, s);
    for (int64_t k = 0; ids && k < nb * nnz; k++)
        ids[k] = bench_idgen_row(&g, &s, k);
    return ids;
}

typedef struct Run {
    double step_ms;       /* median */
    double part_ms[4];    /* mean per step: prefetch, lookup, backward, update */
    EmbTieredStats d;     /* the timed steps' counters */
    double secs;
} Run;

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Steps of lookup + backward + Adagrad on @t; median step time; stats deltas. */
static Run train(EmbTable *t, const Opts *o, const int64_t *ids, int prefetch)
{
    const int64_t nnz = o->batch * o->bag;
    float *out = malloc((size_t)(o->batch * o->dim) * sizeof *out);
    for (int64_t k = 0; k < o->batch * o->dim; k++)
        out[k] = 1e-3f;
    EmbOptimizer *opt = NULL;
    EmbGrad *g = NULL;
    EmbIndexer *ix = NULL;
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.01f);
    int r = emb_optimizer_create(&opt, &c);
    r = r ? r : emb_grad_create(&g);
    r = r ? r : emb_indexer_create(&ix);
    if (r)
        die("setup", r);
    double *ms = malloc((size_t)o->steps * sizeof *ms), part[4] = {0};
    EmbTieredStats s0 = {0}, s1 = {0};
    const int tiered = emb_table_is_tiered(t);
    for (int k = 0; k < prefetch; k++) {
        const EmbBatch b = {.ids = ids + k * nnz, .nnz = nnz, .nbags = o->batch, .bag_size = o->bag};
        emb_table_prefetch(t, &b);
    }
    double t0 = 0;
    for (int64_t st = -1; st < o->steps; st++) { /* step -1: attach the state, warm up */
        if (st == 0) {
            if (tiered)
                emb_table_tiered_stats(t, &s0);
            t0 = now();
        }
        const int64_t k = st < 0 ? 0 : st;
        const EmbBatch b = {.ids = ids + k * nnz, .nnz = nnz, .nbags = o->batch, .bag_size = o->bag};
        const EmbBatch next = {.ids = ids + (k + prefetch) * nnz, .nnz = nnz, .nbags = o->batch,
                               .bag_size = o->bag};
        double tp[5];
        tp[0] = now();
        if (prefetch)
            emb_table_prefetch(t, &next);
        tp[1] = now();
        r = emb_lookup(t, &b, NULL, out, o->dim);
        tp[2] = now();
        r = r ? r : emb_lookup_backward(t, &b, NULL, out, o->dim, g);
        tp[3] = now();
        r = r ? r : emb_update(opt, t, g, ix, 0);
        tp[4] = now();
        if (r)
            die("step", r);
        if (st >= 0)
            ms[st] = 1e3 * (tp[4] - tp[0]);
        for (int p = 0; p < 4 && st >= 0; p++)
            part[p] += 1e3 * (tp[p + 1] - tp[p]) / (double)o->steps;
    }
    Run run = {.secs = now() - t0, .part_ms = {part[0], part[1], part[2], part[3]}};
    if (tiered) {
        emb_table_tiered_stats(t, &s1);
        run.d = s1;
        run.d.hits -= s0.hits, run.d.misses -= s0.misses, run.d.rows_read -= s0.rows_read;
        run.d.rows_written -= s0.rows_written, run.d.prefetched -= s0.prefetched;
    }
    qsort(ms, (size_t)o->steps, sizeof *ms, cmp_d);
    run.step_ms = ms[o->steps / 2];
    free(ms);
    free(out);
    emb_optimizer_destroy(&opt);
    emb_grad_destroy(&g);
    emb_indexer_destroy(&ix);
    return run;
}

static EmbTable *tiered_table(const Opts *o, const char *path, int64_t *rec)
{
    const int64_t rowbytes = ((int64_t)emb_dtype_row_bytes(o->dtype, o->dim) + 15) / 16 * 16 +
                             4 * o->dim;
    const int64_t cache = o->cache_mib > 0 ? (int64_t)(o->cache_mib * 1048576.0)
                          : (int64_t)(o->cache_frac * (double)(o->rows * rowbytes));
    const EmbTieredOptions to = {.cache_bytes = cache > rowbytes ? cache : rowbytes,
                                 .engine = o->engine, .policy = o->policy,
                                 .state_width = o->dim, .table = {.name = "tier"}};
    EmbTable *t = NULL;
    int r = emb_table_tiered_create(&t, path, o->rows, o->dim, o->dtype, &to);
    const EmbInitializer in = {EMB_INIT_UNIFORM, -0.05f, 0.05f, 1};
    r = r ? r : emb_table_initialize(t, &in);
    if (r)
        die(path, r);
    *rec = rowbytes;
    return t;
}

static void report(const char *what, const Run *r, double mem_ms, int64_t rec)
{
    const double looked = (double)(r->d.hits + r->d.misses);
    printf("%-22s step %8.3f ms (prefetch %.2f, lookup %.2f, backward %.2f, update %.2f)",
           what, r->step_ms, r->part_ms[0], r->part_ms[1], r->part_ms[2], r->part_ms[3]);
    if (mem_ms > 0)
        printf(" (%.2fx memory)", r->step_ms / mem_ms);
    if (looked > 0)
        printf("\n%-22s hit rate %5.1f%%, read %.0f rows/s, written %.0f rows/s, from disk "
               "%.1f MiB", "", 100.0 * (double)r->d.hits / looked, (double)r->d.rows_read / r->secs,
               (double)r->d.rows_written / r->secs,
               (double)(r->d.rows_read * rec) / 1048576.0);
    printf("\n");
}

int bench_tier_main(int argc, char **argv)
{
    Opts o;
    parse(&o, argc, argv);
    char path[4096];
    snprintf(path, sizeof path, "%s/emb-bench-tier-%d.tier", o.dir, (int)getpid());
    int64_t rec;
    EmbTable *t = tiered_table(&o, path, &rec);
    EmbTieredStats st;
    emb_table_tiered_stats(t, &st);
    printf("emb-bench tier: %lld rows x %d %s (+ Adagrad state) = %.1f MiB in %s; cache %lld rows "
           "(%.1f%%, %.1f MiB); engine %s; ids %s; batch %lld x bags of %lld\n",
           (long long)o.rows, (int)o.dim, emb_dtype_name(o.dtype),
           (double)(o.rows * rec) / 1048576.0, path,
           (long long)st.cache_rows, 100.0 * (double)st.cache_rows / (double)o.rows,
           (double)(st.cache_rows * rec) / 1048576.0, st.engine,
           o.zipf > 0 ? "zipf" : "uniform", (long long)o.batch, (long long)o.bag);
    if (o.zipf > 0)
        printf("emb-bench tier: zipf exponent %.2f\n", o.zipf);
    emb_table_tiered_flush(t);
    const int64_t nread = o.steps > 10 ? 20000 : 500;
    const double disk1 = bench_disk_rate(path, 4096, o.rows, rec, nread, 1);
    const double disk = bench_disk_rate(path, 4096, o.rows, rec, 4 * nread, 16);
    printf("disk random reads of %lld-byte records (pread, pages dropped): %.0f reads/s at "
           "depth 1, %.0f at depth 16\n", (long long)rec, disk1, disk);
    double rd_s, wr_s;
    bench_disk_cached_cost(path, 4096, o.rows, rec, nread, &rd_s, &wr_s);
    printf("page cache: a record's pread %.2f us, pwrite %.2f us (pages cached, one thread)\n",
           1e6 * rd_s, 1e6 * wr_s);
    int64_t *ids = make_ids(&o);
    double mem_ms = 0;
    if (o.memory) {
        EmbTable *m = NULL;
        const EmbTableOptions mo = {.name = "tier"}; /* the stochastic rounding's key */
        int r = emb_table_create(&m, o.rows, o.dim, o.dtype, &mo);
        const EmbInitializer in = {EMB_INIT_UNIFORM, -0.05f, 0.05f, 1};
        r = r ? r : emb_table_initialize(m, &in);
        if (r)
            die("in-memory table", r);
        const Run rm = train(m, &o, ids, 0);
        mem_ms = rm.step_ms;
        report("memory", &rm, 0, rec);
        emb_table_destroy(&m);
    }
    for (int pf = 0; pf <= 1; pf++) {
        emb_table_tiered_flush(t);
        bench_disk_drop_pages(path);
        const Run rt = train(t, &o, ids, pf ? o.prefetch : 0);
        char what[64];
        snprintf(what, sizeof what, "tiered, prefetch %d", pf ? o.prefetch : 0);
        report(what, &rt, mem_ms, rec);
        if (mem_ms > 0 && rd_s > 0) { /* the floor of a buffered engine: I/O at cache cost */
            const double rd = (double)rt.d.rows_read / (double)o.steps;
            const double wr = (double)rt.d.rows_written / (double)o.steps;
            const double roof = mem_ms + 1e3 * (rd * rd_s + wr * wr_s);
            printf("%-22s I/O roof %.3f ms (memory step + %.0f reads and %.0f writes a step at "
                   "the page cache's cost, one thread: %.2fx memory); step at %.2f of it\n", "",
                   roof, rd, wr, roof / mem_ms, roof / rt.step_ms);
        }
        if (rt.d.misses > 0 && disk > 0)
            printf("%-22s rows read at %.2f of the disk's random-read rate at depth 16\n", "",
                   (double)rt.d.rows_read / rt.secs / disk);
    }
    emb_table_destroy(&t);
    unlink(path);
    free(ids);
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6))
            printf("peak resident memory: %s", line + 6);
    if (f)
        fclose(f);
    return 0;
}
