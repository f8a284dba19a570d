/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_tier_cmd.c — emb-bench tier: tiered tables (tiered.h) against the same table in memory: a training
 * step (lookup of bags, backward, Adagrad) on Zipf or uniform ids, with and without
 * look-ahead prefetch; hit rate, rows read / written per second, bytes from the disk; and
 * the disk's own random-read rate for the record size, measured in the same run on the same
 * file (its pages dropped from the page cache first with posix_fadvise, as before each
 * timed run); and the step's I/O roof: the in-memory step plus the step's reads and writes
 * at the page cache's cost per record (reads: bench_disk_cached_cost; writes: a batched
 * log append, bench_tier_append_cost; measured in the run), the floor of the engine. A table larger than RAM: --no-memory (the in-memory run
 * is skipped). With several cache fractions or policies (--cache-frac 0.1,0.25 --policy
 * all), each pair is run with prefetch and its rows read a step are set against the ideal
 * frequency cache of the same size, and each run prints the model of its step
 * (emb_bench_tier_model.c). --warmup steps (not timed) bring the cache to steady state.
 * --interval S prints every S timed steps the step rate, the rows read a second, the resident
 * set and the memory cgroup's charges (bench_mem.h): a table larger than a cgroup's limit.
 *
 *   emb-bench tier [--rows N] [--dim D] [--cache-frac F | --cache-mib M] [--batch B] [--bag L]
 *              [--steps S] [--zipf A | --uniform] [--prefetch P] [--engine auto|uring|pread|map]
 *              [--policy P[,P..] | all] (P: lru lfu lru-admit lfu-admit) [--warmup S] [--interval S]
 *              [--dtype f32|f16|bf16|int8|int4] [--dir PATH]
 *              [--no-memory] [--quick]
 */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "embtables/embtables.h"

#include "bench_choice.h"
#include "bench_disk.h"
#include "bench_ids.h"
#include "bench_mem.h"
#include "emb_bench.h"
#include "emb_bench_tier_model.h"

#define MAX_RUNS 4 /* cache fractions, policies */
#define APPEND_BATCH 4096 /* records a step's write-backs append at once (~5 000 at 10 %) */

static const char *const policy_names[] = {"lru", "lfu", "lru-admit", "lfu-admit"};

typedef struct Opts {
    int64_t rows, batch, bag, steps, warmup, interval;
    int32_t dim;
    double cache_frac, cache_mib, zipf;
    double fracs[MAX_RUNS];
    EmbTierPolicy pols[MAX_RUNS];
    int nfrac, npol;
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

/* The value of the enum-like option @opt among @names (its index), or exit 2 naming them. */
static int choice(const char *opt, const char *v, const char *const *names, int n)
{
    const int k = bench_choice(stderr, "emb-bench tier", opt, v, names, n);
    if (k < 0)
        exit(2);
    return k;
}

static EmbDtype dtype_of(const char *s)
{
    static const EmbDtype all[] = {EMB_F32, EMB_F16, EMB_BF16, EMB_INT8, EMB_INT4};
    static const char *const names[] = {"f32", "f16", "bf16", "int8", "int4"};
    return all[choice("--dtype", s, names, 5)];
}

static EmbTierEngine engine_of(const char *s)
{
    static const EmbTierEngine all[] = {EMB_TIER_ENGINE_AUTO, EMB_TIER_ENGINE_URING,
                                        EMB_TIER_ENGINE_PREAD, EMB_TIER_ENGINE_MAP};
    static const char *const names[] = {"auto", "uring", "pread", "map"};
    return all[choice("--engine", s, names, 4)];
}

/* The usage on @f, then exit(@code): 0 for --help, 2 for a bad option. */
static void usage_to(FILE *f, int code)
{
    fprintf(f, "usage: emb-bench tier [--rows N] [--dim D] [--cache-frac F | --cache-mib M] "
            "[--batch B] [--bag L] [--steps S] [--zipf A | --uniform] [--prefetch P] "
            "[--engine auto|uring|pread|map] [--policy P[,P..] | all] (P: lru lfu lru-admit "
            "lfu-admit) [--warmup S] [--interval S] [--dtype f32|f16|bf16|int8|int4] "
            "[--dir PATH] [--no-memory] [--quick]\n");
    exit(code);
}

/* Up to MAX_RUNS fractions of a comma-separated list @v into o->fracs. */
static void parse_fracs(Opts *o, const char *v)
{
    o->nfrac = 0;
    for (const char *p = v; p && *p && o->nfrac < MAX_RUNS; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        o->fracs[o->nfrac++] = atof(p);
    o->cache_frac = o->fracs[0];
}

/* Policies of a comma-separated list @v (or "all") into o->pols. */
static void parse_policies(Opts *o, const char *v)
{
    const int all = !strcmp(v, "all");
    o->npol = 0;
    for (int k = 0; k < MAX_RUNS && all; k++)
        o->pols[o->npol++] = (EmbTierPolicy)k;
    for (const char *p = v; !all && p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        char one[32];
        snprintf(one, sizeof one, "%.*s", (int)strcspn(p, ","), p);
        const int k = choice("--policy", one, policy_names,
                             (int)(sizeof policy_names / sizeof *policy_names));
        if (o->npol == MAX_RUNS)
            usage();
        o->pols[o->npol++] = (EmbTierPolicy)k;
        if (!strchr(p, ','))
            break;
    }
    if (!o->npol)
        usage();
    o->policy = o->pols[0];
}

static void parse(Opts *o, int argc, char **argv)
{
    *o = (Opts){.rows = 1000000, .dim = 64, .cache_frac = 0.10, .batch = 2048, .bag = 20,
                .steps = 50, .warmup = 1, .zipf = 1.05, .prefetch = 1, .memory = 1,
                .dir = "/tmp", .fracs = {0.10}, .nfrac = 1, .npol = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (!strcmp(a, name) && v && ++i)
        if (ARG("--rows")) o->rows = atoll(v);
        else if (ARG("--dim")) o->dim = atoi(v);
        else if (ARG("--cache-frac")) parse_fracs(o, v);
        else if (ARG("--cache-mib")) o->cache_mib = atof(v);
        else if (ARG("--batch")) o->batch = atoll(v);
        else if (ARG("--bag")) o->bag = atoll(v);
        else if (ARG("--steps")) o->steps = atoll(v);
        else if (ARG("--warmup")) o->warmup = atoll(v);
        else if (ARG("--interval")) o->interval = atoll(v);
        else if (ARG("--zipf")) o->zipf = atof(v);
        else if (ARG("--prefetch")) o->prefetch = atoi(v);
        else if (ARG("--dir")) o->dir = v;
        else if (ARG("--engine"))
            o->engine = engine_of(v);
        else if (ARG("--policy")) parse_policies(o, v);
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
    if (o->rows < 1 || o->dim < 1 || o->batch < 1 || o->bag < 1 || o->steps < 1 ||
        o->warmup < 0 || o->nfrac < 1 || o->prefetch < 0 || o->interval < 0)
        usage();
    if (o->cache_mib > 0)
        o->nfrac = 1; /* one size */
}

static void die(const char *what, int r)
{
    fprintf(stderr, "emb-bench tier: %s: %s (%s)\n", what, emb_strerror(r), emb_last_error());
    exit(1);
}

/* The training batches: warm-up, steps and prefetch depth of them, fresh ids drawn up front
   (the source's scatter offset in @shift). */
static int64_t *make_ids(const Opts *o, uint64_t *shift)
{
    const int64_t nb = o->warmup + o->steps + o->prefetch + 1, nnz = o->batch * o->bag;
    int64_t *ids = malloc((size_t)(nb * nnz) * sizeof *ids);
    uint64_t s = 42;
    BenchIdGen g; /* the benchmarks' generator (bench_ids.h) */
    bench_idgen_init(&g, o->zipf > 0 ? BENCH_IDS_ZIPF : BENCH_IDS_UNIFORM, o->rows, o->zipf, s);
    for (int64_t k = 0; ids && k < nb * nnz; k++)
        ids[k] = bench_idgen_row(&g, &s, k);
    *shift = g.shift;
    return ids;
}

typedef struct Run {
    double step_ms;       /* median */
    double part_ms[4];    /* mean per step: prefetch, lookup, backward, update */
    EmbTieredStats d;     /* the timed steps' counters */
    double secs;
    int64_t steps;        /* timed */
} Run;

/* --interval's line after timed step @st: the steps since the last line a second, the rows
   read a second, the resident set and the memory cgroup's charges (bench_mem.h). */
static void interval_line(const Opts *o, EmbTable *t, int64_t st, double *t_last,
                          int64_t last[2])
{
    EmbTieredStats s = {0};
    if (emb_table_is_tiered(t))
        emb_table_tiered_stats(t, &s);
    const double tn = now(), dt = tn - *t_last;
    const BenchMem m = bench_mem_now();
    printf("interval steps %5lld-%5lld: %7.2f steps/s, read %8.0f rows/s (%7.0f KiB/s from "
           "storage), VmRSS %7.1f MiB", (long long)(st + 1 - o->interval), (long long)st,
           (double)o->interval / dt, (double)(s.rows_read - last[0]) / dt,
           (double)(m.disk_read - last[1]) / 1024.0 / dt, (double)m.rss / 1048576.0);
    if (m.anon >= 0)
        printf(", cgroup anon %.1f MiB, page cache %.1f MiB", (double)m.anon / 1048576.0,
               (double)m.file / 1048576.0);
    if (m.limit > 0)
        printf(", limit %.0f MiB", (double)m.limit / 1048576.0);
    printf("\n");
    *t_last = tn, last[0] = s.rows_read, last[1] = m.disk_read;
}

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
    double t0 = 0, t_last = 0;
    int64_t last[2] = {0}; /* rows read, bytes from storage at the last interval's line */
    for (int64_t st = -o->warmup; st < o->steps; st++) { /* warm-up: state attached, cache filled */
        if (st == 0) {
            if (tiered)
                emb_table_tiered_stats(t, &s0);
            t0 = t_last = now(), last[0] = s0.rows_read, last[1] = bench_mem_now().disk_read;
        }
        const int64_t k = st + o->warmup;
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
        if (o->interval && st >= 0 && (st + 1) % o->interval == 0)
            interval_line(o, t, st, &t_last, last);
    }
    Run run = {.secs = now() - t0, .steps = o->steps, .part_ms = {part[0], part[1], part[2], part[3]}};
    if (tiered) {
        emb_table_tiered_stats(t, &s1);
        run.d = s1;
        run.d.hits -= s0.hits, run.d.misses -= s0.misses, run.d.rows_read -= s0.rows_read;
        run.d.rows_written -= s0.rows_written, run.d.prefetched -= s0.prefetched;
        run.d.log_bytes_appended -= s0.log_bytes_appended;
        run.d.log_segments -= s0.log_segments, run.d.log_compactions -= s0.log_compactions;
        run.d.log_bytes_compacted -= s0.log_bytes_compacted;
        run.d.log_compact_ns -= s0.log_compact_ns;
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

/* Removes a tiered table's file and its log's manifest (`<path>.manifest`). */
static void remove_table(const char *path)
{
    char man[4200];
    snprintf(man, sizeof man, "%s.manifest", path);
    unlink(path);
    unlink(man);
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

static double disk_rate; /* random reads a second at depth 16, measured in the run */

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
    if (looked > 0 && r->steps > 0)
        printf("\n%-22s log a step: %.2f MiB appended, %.2f segments begun, %.3f compactions "
               "rewriting %.2f MiB, %.3f ms of compaction in the calls; live fraction %.3f at "
               "the end", "", (double)r->d.log_bytes_appended / 1048576.0 / (double)r->steps,
               (double)r->d.log_segments / (double)r->steps,
               (double)r->d.log_compactions / (double)r->steps,
               (double)r->d.log_bytes_compacted / 1048576.0 / (double)r->steps,
               1e-6 * (double)r->d.log_compact_ns / (double)r->steps, r->d.log_live_fraction);
    printf("\n");
}

/* The in-memory step (W) on the same ids: its report and median step time. */
static double memory_run(const Opts *o, const int64_t *ids, int64_t rec)
{
    EmbTable *m = NULL;
    const EmbTableOptions mo = {.name = "tier"}; /* the stochastic rounding's key */
    int r = emb_table_create(&m, o->rows, o->dim, o->dtype, &mo);
    const EmbInitializer in = {EMB_INIT_UNIFORM, -0.05f, 0.05f, 1};
    r = r ? r : emb_table_initialize(m, &in);
    if (r)
        die("in-memory table", r);
    const Run rm = train(m, o, ids, 0);
    report("memory", &rm, 0, rec);
    emb_table_destroy(&m);
    return rm.step_ms;
}

/* The bookkeeping of a step: a cache of every row, minus W and its own reads and writes at
   the page cache's costs (@cost: read, write seconds). */
static double bookkeeping_run(const Opts *o, const char *path, const int64_t *ids,
                              double mem_ms, const double cost[2])
{
    Opts q = *o;
    q.cache_frac = 1.0, q.cache_mib = 0, q.policy = EMB_TIER_LRU;
    int64_t rec;
    EmbTable *t = tiered_table(&q, path, &rec);
    emb_table_tiered_flush(t);
    const Run r = train(t, &q, ids, q.prefetch);
    report("tiered, every row", &r, mem_ms, rec);
    emb_table_destroy(&t);
    remove_table(path);
    const double io = 1e3 * ((double)r.d.rows_read * cost[0] + (double)r.d.rows_written * cost[1]);
    const double bk = r.step_ms - mem_ms - io / (double)o->steps;
    printf("%-22s bookkeeping %.3f ms a step (the step of a cache of every row, prefetch %d, "
           "less W and its own I/O)\n", "", bk > 0 ? bk : 0, q.prefetch);
    return bk > 0 ? bk : 0;
}

/* One cache size and policy: its runs (prefetch 0 and P with @both, else P), the roof and
   the model; the rows read a step with prefetch, returned. @ideal: the ideal caches'
   misses (run, distribution), @bk: the bookkeeping. */
static double tier_run(const Opts *o, const char *path, const int64_t *ids, double mem_ms,
                       const double cost[2], const double ideal[2], double bk, double distinct,
                       int both)
{
    int64_t rec;
    EmbTable *t = tiered_table(o, path, &rec);
    double reads = 0;
    for (int pf = !both; pf <= 1; pf++) {
        emb_table_tiered_flush(t);
        bench_disk_drop_pages(path);
        const Run rt = train(t, o, ids, pf ? o->prefetch : 0);
        char what[64];
        snprintf(what, sizeof what, "%s, prefetch %d", policy_names[o->policy],
                 pf ? o->prefetch : 0);
        report(what, &rt, mem_ms, rec);
        const double rd = (double)rt.d.rows_read / (double)o->steps;
        const double wr = (double)rt.d.rows_written / (double)o->steps;
        if (mem_ms > 0 && cost[0] > 0) { /* the floor of a buffered engine: I/O at cache cost */
            const double roof = mem_ms + 1e3 * (rd * cost[0] + wr * cost[1]);
            printf("%-22s I/O roof %.3f ms (memory step + %.0f reads and %.0f log appends a "
                   "step at the page cache's cost, one thread: %.2fx memory); step at %.2f of it\n", "",
                   roof, rd, wr, roof / mem_ms, roof / rt.step_ms);
            const double mv = (double)rt.d.log_bytes_compacted / (double)rec / (double)o->steps;
            const BenchTierModel m = {distinct, rd, wr, ideal[0], ideal[1], mv, cost[0], cost[1],
                                      bk, mem_ms, rt.step_ms};
            bench_tier_model_print(&m);
        }
        if (rt.d.misses > 0 && disk_rate > 0)
            printf("%-22s rows read at %.2f of the disk's random-read rate at depth 16\n", "",
                   (double)rt.d.rows_read / rt.secs / disk_rate);
        reads = rd;
    }
    emb_table_destroy(&t);
    remove_table(path);
    return reads;
}

int bench_tier_main(int argc, char **argv)
{
    Opts o;
    parse(&o, argc, argv);
    setvbuf(stdout, NULL, _IOLBF, 0); /* a long run's lines as they come, also into a file */
    char path[4096];
    snprintf(path, sizeof path, "%s/emb-bench-tier-%d.tier", o.dir, (int)getpid());
    int64_t rec;
    EmbTable *t = tiered_table(&o, path, &rec);
    EmbTieredStats st;
    emb_table_tiered_stats(t, &st);
    printf("emb-bench tier: %lld rows x %d %s (+ Adagrad state) = %.1f MiB in %s; cache %lld rows "
           "(%.1f%%, %.1f MiB); engine %s; ids %s; batch %lld x bags of %lld; %lld steps after "
           "%lld of warm-up\n",
           (long long)o.rows, (int)o.dim, emb_dtype_name(o.dtype),
           (double)(o.rows * rec) / 1048576.0, path,
           (long long)st.cache_rows, 100.0 * (double)st.cache_rows / (double)o.rows,
           (double)(st.cache_rows * rec) / 1048576.0, st.engine,
           o.zipf > 0 ? "zipf" : "uniform", (long long)o.batch, (long long)o.bag,
           (long long)o.steps, (long long)o.warmup);
    if (o.zipf > 0)
        printf("emb-bench tier: zipf exponent %.2f, fresh ids every step\n", o.zipf);
    emb_table_tiered_flush(t);
    const int64_t nread = o.steps > 10 ? 20000 : 500;
    const double disk1 = bench_disk_rate(path, 4096, o.rows, rec, nread, 1);
    disk_rate = bench_disk_rate(path, 4096, o.rows, rec, 4 * nread, 16);
    printf("disk random reads of %lld-byte records (pread, pages dropped): %.0f reads/s at "
           "depth 1, %.0f at depth 16\n", (long long)rec, disk1, disk_rate);
    double cost[2];
    bench_disk_cached_cost(path, 4096, o.rows, rec, nread, &cost[0], &cost[1]);
    const double pwrite_s = cost[1];
    cost[1] = bench_tier_append_cost(o.dir, rec, APPEND_BATCH); /* what a write-back costs now */
    printf("page cache: a record's pread %.2f us, pwrite %.2f us (pages cached, one thread); "
           "its share of a log append of %d records %.3f us (the model's write cost)\n",
           1e6 * cost[0], 1e6 * pwrite_s, APPEND_BATCH, 1e6 * cost[1]);
    emb_table_destroy(&t);
    remove_table(path);
    uint64_t shift;
    int64_t *ids = make_ids(&o, &shift);
    if (!ids)
        die("ids", EMB_ENOMEM);
    const int64_t nnz = o.batch * o.bag;
    const int64_t *timed = ids + o.warmup * nnz; /* the timed steps' batches */
    double mem_ms = 0, bk = 0, reads[MAX_RUNS][MAX_RUNS], ideal[MAX_RUNS][2], distinct = 0;
    if (o.memory) {
        mem_ms = memory_run(&o, ids, rec);
        bk = bookkeeping_run(&o, path, ids, mem_ms, cost);
    }
    const int both = o.nfrac == 1 && o.npol == 1;
    for (int f = 0; f < o.nfrac; f++) {
        Opts q = o;
        q.cache_frac = o.fracs[f];
        int64_t crec;
        t = tiered_table(&q, path, &crec); /* its cache's rows */
        emb_table_tiered_stats(t, &st);
        emb_table_destroy(&t);
        remove_table(path);
        uint8_t *hot[2] = {bench_tier_hot_run(timed, o.steps * nnz, o.rows, st.cache_rows),
                           o.zipf > 0 ? bench_tier_hot_ranks(o.rows, st.cache_rows, shift)
                                      : NULL};
        for (int k = 0; k < 2; k++)
            ideal[f][k] = hot[k] ? bench_tier_ideal_misses(timed, o.steps, nnz, o.rows, hot[k],
                                                           &distinct)
                                 : 0;
        free(hot[0]), free(hot[1]);
        printf("cache %lld rows (%.1f%%): the ideal frequency cache misses %.0f rows a step "
               "(the run's hottest rows), %.0f (the distribution's) of %.0f distinct\n",
               (long long)st.cache_rows, 100.0 * (double)st.cache_rows / (double)o.rows,
               ideal[f][0], ideal[f][1], distinct);
        for (int p = 0; p < o.npol; p++) {
            q.policy = o.pols[p];
            reads[f][p] = tier_run(&q, path, ids, mem_ms, cost, ideal[f], bk, distinct, both);
        }
    }
    for (int f = 0; f < o.nfrac && o.nfrac * o.npol > 1; f++)
        for (int p = 0; p < o.npol; p++)
            printf("summary: cache %4.1f%% %-9s %7.0f misses a step, %.2fx the ideal cache "
                   "(run), %.2fx (distribution)\n", 100.0 * o.fracs[f], policy_names[o.pols[p]],
                   reads[f][p], ideal[f][0] > 0 ? reads[f][p] / ideal[f][0] : 0,
                   ideal[f][1] > 0 ? reads[f][p] / ideal[f][1] : 0);
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
