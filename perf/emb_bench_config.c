/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_config.c — emb-bench's configuration: the DLRM-shaped default, flags and the
 * config file. A flag `--key value` (or `--key=value`, getopt_long) and a file line
 * `key = value` go through the same setter, so every option has one spelling in both.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_choice.h"
#include "bench_ids.h"

#include "emb_bench.h"

/* Criteo Kaggle (DLRM's "kaggle" day split): rows of the 26 categorical features. */
static const int64_t criteo_rows[26] = {
    1460,  583,   10131227, 2202608, 305,  24,      12517, 633, 3,      93145, 5683,   8351593, 3194,
    27,    14992, 5461306,  10,      5652, 2173,    4,     7046547, 18, 15, 286181, 105, 142572,
};

static const char *const strategy_names[STRAT_COUNT] = {"sequential", "parallel",
                                                        "prealloc-concat", "auto"};

static const char usage[] =
    "usage: emb-bench [--key value | --key=value]... [--config FILE]\n"
    "Times lookups and updates of an ensemble under every strategy and thread count.\n"
    "  --tables SPEC     criteo[:MiB[:D[:dtype]]] (26 Criteo-Kaggle tables, the largest\n"
    "                    capped so all fit in MiB) or NxROWSxD[:dtype][,...]  [criteo:4096:64]\n"
    "                    dtype: f32, f16, bf16, int8 or int4 (row-wise quantized, torch's\n"
    "                    prepacked rows: quantized from f32 values; int4: D even; the\n"
    "                    torch peer looks them up with its quantized ops, forward only)\n"
    "                    a group dyn:NxROWSxD[:dtype]: N dynamic tables (dynamic.h) each\n"
    "                    holding ROWS rows under sparse 62-bit ids, looked up and updated\n"
    "                    by them (no --peer)\n"
    "                    a group tier:NxROWSxD[:dtype]:CACHE: N tiered tables (tiered.h),\n"
    "                    rows in files of --tier-dir, a DRAM cache of CACHE each: P% of\n"
    "                    the table's records, or bytes (suffix K, M, G: KiB, MiB, GiB);\n"
    "                    each step prefetches the next batch; then their step is timed\n"
    "                    against the same ensemble in memory (no --peer; one optimizer\n"
    "                    in --phases: a tiered table keeps one optimizer's state)\n"
    "  --tier-dir DIR    the tiered tables' files              [$TMPDIR or /var/tmp]\n"
    "  --batch N         bags per table per iteration                            [2048]\n"
    "  --bags LIST       bag variants: N (fixed) or ragged:LO:HI (uniform lengths) [1,20]\n"
    "  --ids DIST        uniform | zipf:S (exponent S > 0; exact: rejection-\n"
    "                    inversion) | trace:DIR (DIR/tNN.bin: int64 ids, or\n"
    "                    DIR/tNN.txt: one id a line, per table NN)           [zipf:1.05]\n"
    "  --recycle         rotate 4 id sets (hot caches, labelled) instead of the\n"
    "                    steady-state stream of fresh ids every step\n"
    "  --strategies LIST sequential,parallel,prealloc-concat,auto | all           [all]\n"
    "  --threads LIST    thread counts, or auto (1..physical cores)              [auto]\n"
    "  --phases LIST     forward, update:OPT, train:OPT; OPT = sgd | adagrad |\n"
    "                    rowwise_adagrad | ftrl | adam | rowwise_adagrad_counter\n"
    "                                                             [forward,train:sgd]\n"
    "  --iters N         at least N timed iterations per row                       [9]\n"
    "  --warmup N        untimed iterations first                                  [1]\n"
    "  --min-time S      time each row at least S seconds, then until its median is\n"
    "                    known within 2% (95%) or 10x S passed (seconds of timed\n"
    "                    iterations, not of drawing ids) and 120 rounds ran; the rows\n"
    "                    of one variant and phase run interleaved, round after round;\n"
    "                    0: just --iters                                         [0.2]\n"
    "  --breakdown       print the training step's phases: forward, record (backward),\n"
    "                    serial, pullback, index, apply (median ms per iteration)\n"
    "  --lr X            optimizer learning rate                                [0.01]\n"
    "  --clip G,R,N      every optimizer's gradient clipping: max_gradient,\n"
    "                    max_row_norm, max_global_norm (0: off)                [0,0,0]\n"
    "  --pooling P       sum | max: how every table's bags are pooled            [sum]\n"
    "  --state-dtype T   f32 | f16 | bf16: the optimizers' state                 [f32]\n"
    "  --opt-pair A,B    time two optimizers (train:A against train:B, or update:)\n"
    "                    in one process, in paired rounds A B, B A, ... of --iters\n"
    "                    rounds, each side on its own copy of the tables and state,\n"
    "                    the same ids: per-round ratios, median, spread\n"
    "  --clip-pair X/Y   the same with clipping X against Y (each G,R,N as --clip); the\n"
    "                    optimizer from --opt-pair or the first train:/update: phase\n"
    "  --pair-steps N    steps of one side in a round                             [4]\n"
    "  --seed N          seed of tables and ids                                   [42]\n"
    "  --roof-mib N      the roof's DRAM buffer at least (twice the LLC)          [512]\n"
    "  --llc-mib N       the LLC's size for the roof's model      [the CPU's, sysconf]\n"
    "  --csv FILE        write every row as CSV (# lines: version, commit, machine,\n"
    "                    command line)\n"
    "  --json FILE       the same records and rows as JSON\n"
    "  --check-roof      exit 1 when a plain loop's step beats the roof (a test)\n"
    "  --plot FILE.png   GB/s against threads per strategy (gnuplot)\n"
    "  --peer torch      run perf/peer_torch.py on the same tables and ids, with\n"
    "                    $PYTHON (default: python3 on PATH)\n"
    "  --peer-script F   the peer script                [installed peer_torch.py]\n"
    "  --config FILE     read key = value lines (same keys, # comments)\n"
    "  --quick           a tiny one-iteration run (the meson test)\n"
    "  --sweep dims      the forward sweep: one table per cell, hot (Zipf, --ids if zipf)\n"
    "                    and cold (uniform) ids, every D of --dims and dtype of --dtypes;\n"
    "                    bags 20, sequential + prealloc-concat unless given; ends with a\n"
    "                    markdown table of every cell (docs/guide/benchmark.md)\n"
    "  --dims LIST       sweep feature sizes                      [16,32,64,128,256]\n"
    "  --dtypes LIST     sweep dtypes: f32,f16,bf16                       [f32,f16,bf16]\n"
    "  --hot-rows N      sweep: rows of the hot (Zipf) table                  [2000000]\n"
    "  --cold-mib N      sweep: MiB of the cold (uniform) table                  [1024]\n"
    "emb-bench --mpi [OPTIONS] under mpirun: the MPI ensemble's step (dist-bench; its\n"
    "options: dist-bench --help)\n"
    "emb-bench compare A.csv B.csv: B against A row by row (speed ratio, spreads)\n"
    "emb-bench ids --rows N --count M [--ids DIST] --out FILE: the generator's ids\n"
    "emb-bench coll|dyn|quant|tier|ckpt [OPTIONS]: the collection step against its\n"
    "calls, dynamic against plain tables, int8/int4 pooled lookups, a tiered table\n"
    "against memory and the disk, a delta checkpoint against a full one (each: --help)\n";

const char *bench_strategy_name(int s)
{
    return s >= 0 && s < STRAT_COUNT ? strategy_names[s] : "?";
}

static int bad(const char *key, const char *value)
{
    fprintf(stderr, "emb-bench: bad value for %s: '%s'\n", key, value);
    return -1;
}

/* An enum-like option's bad value @v: the message names --@key and the @n @names; -1. */
static int bad_of(const char *key, const char *v, const char *const *names, int n)
{
    bench_choice_fail(stderr, "emb-bench", key, v, names, n);
    return -1;
}

/* The index of @v among @names of the option @key, or -1 said as bad_of(). */
static int choice(const char *key, const char *v, const char *const *names, int n)
{
    return bench_choice(stderr, "emb-bench", key, v, names, n);
}

static const char *const float_dtypes[] = {"f32", "f16", "bf16"};

/* A table's dtype: f32, f16, bf16, int8 or int4 (@quantized: the quantized ones too). */
static int parse_dtype_of(const char *s, EmbDtype *d, int quantized)
{
    static const EmbDtype all[] = {EMB_F32, EMB_F16, EMB_BF16, EMB_INT8, EMB_INT4};
    for (int i = 0; i < (quantized ? 5 : 3); i++)
        if (strcmp(s, emb_dtype_name(all[i])) == 0) {
            *d = all[i];
            return 0;
        }
    return -1;
}

static int parse_dtype(const char *s, EmbDtype *d)
{
    return parse_dtype_of(s, d, 1);
}

/* The largest cap such that every table, capped at it, fits in @budget bytes. */
static int64_t criteo_cap(int64_t budget, int64_t row_bytes)
{
    int64_t lo = 1, hi = criteo_rows[2];
    while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2, sum = 0;
        for (int i = 0; i < 26; i++)
            sum += (criteo_rows[i] < mid ? criteo_rows[i] : mid) * row_bytes;
        if (sum <= budget)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static int set_criteo(BenchConfig *c, const char *v)
{
    long mib = 4096, dim = 64;
    char dt[16] = "f32";
    EmbDtype d;
    if ((v[6] != '\0' && v[6] != ':') || (v[6] && sscanf(v + 7, "%ld:%ld:%15s", &mib, &dim, dt) < 1) ||
        mib < 1 || dim < 1 || parse_dtype(dt, &d) != 0 || !emb_dtype_row_bytes(d, (int32_t)dim))
        return bad("tables", v);
    int64_t cap = criteo_cap((int64_t)mib << 20, (int64_t)emb_dtype_row_bytes(d, (int32_t)dim));
    c->ntables = 26;
    for (int i = 0; i < 26; i++)
        c->tables[i] = (BenchTableSpec){.rows = criteo_rows[i] < cap ? criteo_rows[i] : cap,
                                        .dim = (int32_t)dim, .dtype = d};
    snprintf(c->tables_desc, sizeof c->tables_desc, "26 Criteo-Kaggle tables capped at %lld rows, D=%ld %s",
             (long long)cap, dim, emb_dtype_name(d));
    return 0;
}

/* A tiered group's cache, "P%" of the records or bytes with an optional K/M/G suffix. */
static int parse_cache(const char *s, BenchTableSpec *t)
{
    char *end;
    errno = 0;
    const double x = strtod(s, &end);
    const char *units = "KMG";
    const char *u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
    if (errno || end == s || !(x > 0))
        return -1;
    if (*end == '%' && !end[1] && x <= 100)
        return (t->cache_frac = x / 100), 0;
    if (*end && (!u || (end[1] && strcmp(end + 1, "iB") && strcmp(end + 1, "B"))))
        return -1;
    t->cache_bytes = (int64_t)(x * (double)(u ? 1ll << (10 * (u - units + 1)) : 1));
    return t->cache_bytes > 0 ? 0 : -1;
}

/* One group NxROWSxD[:dtype] (after its dyn: / tier: prefix; tier: ends with :CACHE). */
static int parse_group(BenchConfig *c, char *g, int dynamic, int tiered)
{
    BenchTableSpec spec = {.dynamic = dynamic, .tiered = tiered};
    char *cache = tiered ? strrchr(g, ':') : NULL;
    if (tiered && (!cache || parse_cache(cache + 1, &spec) != 0))
        return -1;
    if (cache)
        *cache = '\0';
    long n, dim;
    long long rows;
    char dt[16] = "f32";
    if (sscanf(g, "%ldx%lldx%ld:%15s", &n, &rows, &dim, dt) < 3 || n < 1 || rows < 1 ||
        dim < 1 || parse_dtype(dt, &spec.dtype) != 0 || c->ntables + n > BENCH_MAX_TABLES ||
        !emb_dtype_row_bytes(spec.dtype, (int32_t)dim)) /* int4 of an odd D */
        return -1;
    spec.rows = rows, spec.dim = (int32_t)dim;
    for (long i = 0; i < n; i++)
        c->tables[c->ntables++] = spec;
    return (int)n;
}

static int set_tables(BenchConfig *c, const char *v)
{
    if (strncmp(v, "criteo", 6) == 0)
        return set_criteo(c, v);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", v);
    int ndyn = 0, ntier = 0;
    c->ntables = 0;
    for (char *g = strtok(buf, ","); g; g = strtok(NULL, ",")) {
        const int dynamic = strncmp(g, "dyn:", 4) == 0, tiered = strncmp(g, "tier:", 5) == 0;
        const int n = parse_group(c, g + (dynamic ? 4 : tiered ? 5 : 0), dynamic, tiered);
        if (n < 0)
            return bad("tables", v);
        ndyn += dynamic ? n : 0;
        ntier += tiered ? n : 0;
    }
    if (ndyn || ntier)
        snprintf(c->tables_desc, sizeof c->tables_desc, "%d tables (%d dynamic, %d tiered) %.60s",
                 c->ntables, ndyn, ntier, v);
    else
        snprintf(c->tables_desc, sizeof c->tables_desc, "%d tables %.96s", c->ntables, v);
    return c->ntables > 0 ? 0 : bad("tables", v);
}

static int set_bags(BenchConfig *c, const char *v)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    c->nvariants = 0;
    for (char *g = strtok(buf, ","); g; g = strtok(NULL, ",")) {
        if (c->nvariants == BENCH_MAX_VARIANTS)
            return bad("bags", v);
        BenchBagSpec *b = &c->variants[c->nvariants++];
        int lo, hi;
        if (sscanf(g, "ragged:%d:%d", &lo, &hi) == 2 && lo >= 0 && hi >= lo && hi > 0) {
            *b = (BenchBagSpec){BAG_RAGGED_UNIFORM, lo, hi, ""};
            snprintf(b->name, sizeof b->name, "ragged-%d-%d", lo, hi);
        } else if (sscanf(g, "%d", &lo) == 1 && lo >= 1) {
            *b = (BenchBagSpec){BAG_FIXED, lo, lo, ""};
            if (lo == 1)
                snprintf(b->name, sizeof b->name, "one-hot");
            else
                snprintf(b->name, sizeof b->name, "multi-hot-%d", lo);
        } else {
            return bad("bags", v);
        }
    }
    return c->nvariants > 0 ? 0 : bad("bags", v);
}

static int set_strategies(BenchConfig *c, const char *v)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    c->strategies = 0;
    for (char *g = strtok(buf, ","); g; g = strtok(NULL, ",")) {
        int found = strcmp(g, "all") == 0;
        if (found)
            c->strategies = (1u << STRAT_COUNT) - 1;
        for (int s = 0; s < STRAT_COUNT; s++)
            if (strcmp(g, strategy_names[s]) == 0) {
                c->strategies |= 1u << s;
                found = 1;
            }
        if (!found) {
            const char *acc[STRAT_COUNT + 1] = {"all"};
            memcpy(acc + 1, strategy_names, sizeof strategy_names);
            return bad_of("strategies", g, acc, STRAT_COUNT + 1);
        }
    }
    return c->strategies ? 0 : bad("strategies", v);
}

/* A comma list of at most @cap integers >= 1 into @out: their count, or -1. */
static int positive_ints(const char *v, int *out, int cap)
{
    char buf[512];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", v);
    for (char *g = strtok(buf, ","); g; g = strtok(NULL, ",")) {
        const int x = atoi(g);
        if (x < 1 || n == cap)
            return -1;
        out[n++] = x;
    }
    return n > 0 ? n : -1;
}

static int set_threads(BenchConfig *c, const char *v)
{
    c->nthreads = 0;
    if (strcmp(v, "auto") == 0) {
        int n = emb_num_physical_cores();
        for (int t = 1; t <= n && c->nthreads < BENCH_MAX_THREADS; t *= 2)
            c->threads[c->nthreads++] = t;
        if (c->threads[c->nthreads - 1] != n && c->nthreads < BENCH_MAX_THREADS)
            c->threads[c->nthreads++] = n;
        return 0;
    }
    return (c->nthreads = positive_ints(v, c->threads, BENCH_MAX_THREADS)) > 0
               ? 0 : bad("threads", v);
}

/* The optimizers' names in --phases, indexed by BenchOpt (OPT_NONE: none). */
static const char *const opt_names[OPT_COUNT] = {"", "sgd", "adagrad", "rowwise_adagrad",
                                                 "ftrl", "adam", "rowwise_adagrad_counter"};

EmbOptimizerKind bench_opt_kind(BenchOpt o)
{
    switch (o) {
    case OPT_ADAGRAD: return EMB_OPT_ADAGRAD;
    case OPT_ROWWISE_ADAGRAD: return EMB_OPT_ROWWISE_ADAGRAD;
    case OPT_FTRL: return EMB_OPT_FTRL;
    case OPT_ADAM: return EMB_OPT_ADAM;
    case OPT_ROWWISE_ADAGRAD_COUNTER: return EMB_OPT_ROWWISE_ADAGRAD_COUNTER;
    default: return EMB_OPT_SGD;
    }
}

const char *bench_opt_name(BenchOpt o)
{
    return o > OPT_NONE && o < OPT_COUNT ? opt_names[o] : "?";
}

static BenchOpt parse_opt(const char *name)
{
    for (int o = OPT_SGD; o < OPT_COUNT; o++)
        if (strcmp(name, opt_names[o]) == 0)
            return (BenchOpt)o;
    return OPT_NONE;
}

/* --opt-pair A,B (two optimizer names) or --clip-pair X/Y (two G,R,N; '/' or a blank
   between them): the two sides of bench_pair_run. */
static int set_pair(BenchConfig *c, const char *k, const char *v)
{
    char a[64], b[64], tail;
    double *x = c->pair_clip[0], *y = c->pair_clip[1];
    if (k[0] == 'o') {
        if (sscanf(v, "%63[^,],%63s%c", a, b, &tail) != 2)
            return bad(k, v);
        if ((c->pair_opt[0] = parse_opt(a)) == OPT_NONE ||
            (c->pair_opt[1] = parse_opt(b)) == OPT_NONE)
            return bad_of(k, c->pair_opt[0] == OPT_NONE ? a : b, opt_names + 1, OPT_COUNT - 1);
    } else if (sscanf(v, "%lf,%lf,%lf%*[/ ]%lf,%lf,%lf%c", &x[0], &x[1], &x[2], &y[0], &y[1],
                      &y[2], &tail) != 6 || x[0] < 0 || x[1] < 0 || x[2] < 0 || y[0] < 0 ||
               y[1] < 0 || y[2] < 0) {
        return bad(k, v);
    }
    c->pair_clip_given |= k[0] == 'c';
    c->pair = 1;
    return 0;
}

static int set_phases(BenchConfig *c, const char *v)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    c->nphases = 0;
    for (char *g = strtok(buf, ","); g; g = strtok(NULL, ",")) {
        BenchPhaseSpec p = {PHASE_FORWARD, OPT_NONE, ""};
        char *colon = strchr(g, ':');
        const char *opt = colon ? colon + 1 : "";
        if (colon)
            *colon = '\0';
        if (strcmp(g, "update") == 0 || strcmp(g, "train") == 0) {
            p.kind = g[0] == 'u' ? PHASE_UPDATE : PHASE_TRAIN;
            if ((p.opt = parse_opt(opt)) == OPT_NONE)
                return bad_of(g[0] == 'u' ? "phases update:OPT" : "phases train:OPT", opt,
                              opt_names + 1, OPT_COUNT - 1);
        } else if (strcmp(g, "forward") != 0 || colon) {
            static const char *const kinds[] = {"forward", "update:OPT", "train:OPT"};
            return bad_of("phases", g, kinds, 3);
        } else if (c->nphases == BENCH_MAX_PHASES) {
            return bad("phases", v);
        }
        snprintf(p.name, sizeof p.name, "%s%s%s", g, colon ? ":" : "", opt);
        c->phases[c->nphases++] = p;
    }
    return c->nphases ? 0 : bad("phases", v);
}

static int set_dims(BenchConfig *c, const char *v)
{
    const int cap = (int)(sizeof c->dims / sizeof *c->dims);
    return (c->ndims = positive_ints(v, c->dims, cap)) > 0 ? 0 : bad("dims", v);
}

static int set_dtypes(BenchConfig *c, const char *v)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    c->ndtypes = 0;
    for (char *g = strtok(buf, ","); g; g = strtok(NULL, ",")) {
        EmbDtype d;
        if (parse_dtype_of(g, &d, 0) != 0)
            return bad_of("dtypes", g, float_dtypes, 3);
        if (c->ndtypes == 3)
            return bad("dtypes", v);
        c->dtypes[c->ndtypes++] = d;
    }
    return c->ndtypes ? 0 : bad("dtypes", v);
}

static int set_ids(BenchConfig *c, const char *v)
{
    if (strcmp(v, "uniform") == 0) {
        c->ids = IDS_UNIFORM;
        return 0;
    }
    if (sscanf(v, "zipf:%lf", &c->zipf_s) == 1 && c->zipf_s > 0) {
        c->ids = IDS_ZIPF;
        return 0;
    }
    if (strncmp(v, "trace:", 6) == 0 && v[6]) {
        c->ids = IDS_TRACE;
        return (c->trace = strdup(v + 6)) ? 0 : -1;
    }
    static const char *const forms[] = {"uniform", "zipf:S (S > 0)", "trace:PATH"};
    return bad_of("ids", v, forms, 3);
}

static int set_number(const char *key, const char *v, double lo, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x >= lo))
        return bad(key, v);
    *out = x;
    return 0;
}

static void set_quick(BenchConfig *c)
{
    set_criteo(c, "criteo:16:64:f32");
    snprintf(c->tables_desc, sizeof c->tables_desc, "26 Criteo-shaped tables in 16 MiB (quick)");
    c->batch = 128;
    c->iters = 1;
    c->warmup = 1;
    c->min_time = 0;
    c->roof_mib = 16;
    c->hot_rows = 1000; /* --sweep dims --quick: tiny cells */
    c->cold_mib = 4;
    c->quick = 1;
}

static int read_config(BenchConfig *c, const char *path);

/* Sets one option; @v may be NULL only for the flags that take no value. */
static int set_option(BenchConfig *c, const char *k, const char *v)
{
    double x;
    if (strcmp(k, "quick") == 0)
        return set_quick(c), 0;
    if (strcmp(k, "breakdown") == 0 && (!v || strcmp(v, "1") == 0))
        return (c->breakdown = 1), 0;
    if (strcmp(k, "recycle") == 0 && (!v || strcmp(v, "1") == 0))
        return (c->recycle = 1), 0;
    if (strcmp(k, "check-roof") == 0 && (!v || strcmp(v, "1") == 0))
        return (c->check_roof = 1), 0;
    if (!v)
        return bad(k, "(missing)");
    char list[512]; /* list values without blanks: "forward, train:sgd" */
    size_t n = 0;
    for (const char *q = v; *q && n + 1 < sizeof list; q++)
        if (!isspace((unsigned char)*q))
            list[n++] = *q;
    list[n] = '\0';
    if (strchr("tbspd", k[0]) && strcmp(k, "seed") != 0 && strcmp(k, "tier-dir") != 0)
        v = list;
    if (strcmp(k, "tables") == 0) return set_tables(c, v);
    if (strcmp(k, "bags") == 0) return (c->bags_given = 1), set_bags(c, v);
    if (strcmp(k, "ids") == 0) return set_ids(c, v);
    if (strcmp(k, "strategies") == 0) return (c->strategies_given = 1), set_strategies(c, v);
    if (strcmp(k, "threads") == 0) return (c->threads_given = 1), set_threads(c, v);
    if (strcmp(k, "dims") == 0) return set_dims(c, v);
    if (strcmp(k, "dtypes") == 0) return set_dtypes(c, v);
    static const char *const sweeps[] = {"dims"}, *const peers[] = {"torch"},
                             *const poolings[] = {"sum", "max"};
    int e;
    if (strcmp(k, "sweep") == 0)
        return choice(k, v, sweeps, 1) < 0 ? -1 : ((c->sweep = 1), 0);
    if (strcmp(k, "phases") == 0) return set_phases(c, v);
    if (strcmp(k, "config") == 0) return read_config(c, v);
    if (strcmp(k, "csv") == 0) return (c->csv = strdup(v)) ? 0 : -1;
    if (strcmp(k, "json") == 0) return (c->json = strdup(v)) ? 0 : -1;
    if (strcmp(k, "plot") == 0) return (c->plot = strdup(v)) ? 0 : -1;
    if (strcmp(k, "peer-script") == 0) return (c->peer_script = strdup(v)) ? 0 : -1;
    if (strcmp(k, "tier-dir") == 0) return (c->tier_dir = strdup(v)) ? 0 : -1;
    if (strcmp(k, "peer") == 0)
        return choice(k, v, peers, 1) < 0 ? -1 : ((c->peer = "torch"), 0);
    if (strcmp(k, "state-dtype") == 0) {
        static const EmbDtype sd[] = {EMB_F32, EMB_F16, EMB_BF16};
        return (e = choice(k, v, float_dtypes, 3)) < 0 ? -1 : ((c->state_dtype = sd[e]), 0);
    }
    if (strcmp(k, "pooling") == 0)
        return (e = choice(k, v, poolings, 2)) < 0 ? -1 : ((c->pooling_max = e), 0);
    if (strcmp(k, "min-time") == 0) return set_number(k, v, 0, &c->min_time);
    if (strcmp(k, "lr") == 0) return set_number(k, v, 0, &c->lr);
    if (strcmp(k, "opt-pair") == 0 || strcmp(k, "clip-pair") == 0)
        return set_pair(c, k, v);
    if (strcmp(k, "clip") == 0) {
        char tail;
        return sscanf(v, "%lf,%lf,%lf%c", &c->clip[0], &c->clip[1], &c->clip[2], &tail) == 3 &&
                       c->clip[0] >= 0 && c->clip[1] >= 0 && c->clip[2] >= 0
                   ? 0 : bad(k, v);
    }
    if (set_number(k, v, 0, &x) != 0)
        return -1;
    if (strcmp(k, "batch") == 0 && x >= 1) return (c->batch = (int64_t)x), 0;
    if (strcmp(k, "iters") == 0 && x >= 1) return (c->iters = (int)x), 0;
    if (strcmp(k, "warmup") == 0) return (c->warmup = (int)x), 0;
    if (strcmp(k, "pair-steps") == 0 && x >= 1) return (c->pair_steps = (int)x), 0;
    if (strcmp(k, "seed") == 0) return (c->seed = (uint64_t)x), 0;
    if (strcmp(k, "roof-mib") == 0 && x >= 1) return (c->roof_mib = (int64_t)x), 0;
    if (strcmp(k, "llc-mib") == 0 && x >= 1)
        return bench_cache_set_llc((int64_t)x << 20), 0;
    if (strcmp(k, "hot-rows") == 0 && x >= 1) return (c->hot_rows = (int64_t)x), 0;
    if (strcmp(k, "cold-mib") == 0 && x >= 1) return (c->cold_mib = (int64_t)x), 0;
    fprintf(stderr, "emb-bench: unknown option or bad value: %s %s\n", k, v);
    return -1;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static int read_config(BenchConfig *c, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "emb-bench: cannot open config %s\n", path);
        return -1;
    }
    char line[1024];
    int rc = 0, n = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        n++;
        char *hash = strchr(line, '#'), *eq;
        if (hash)
            *hash = '\0';
        char *s = trim(line);
        if (!*s)
            continue;
        eq = strchr(s, '=');
        if (eq)
            *eq = '\0';
        rc = set_option(c, trim(s), eq ? trim(eq + 1) : NULL);
        if (rc)
            fprintf(stderr, "emb-bench: %s:%d\n", path, n);
    }
    fclose(f);
    return rc;
}

void bench_config_default(BenchConfig *c)
{
    memset(c, 0, sizeof *c);
    set_criteo(c, "criteo:4096:64:f32");
    c->batch = 2048;
    set_bags(c, "1,20");
    set_ids(c, "zipf:1.05");
    set_strategies(c, "all");
    set_threads(c, "auto");
    set_phases(c, "forward,train:sgd");
    c->iters = 9;
    c->warmup = 1;
    c->pair_steps = 4;
    c->min_time = 0.2;
    c->lr = 0.01;
    c->seed = 42;
    c->roof_mib = 512;
    set_dims(c, "16,32,64,128,256");
    set_dtypes(c, "f32,f16,bf16");
    c->hot_rows = 2000000;
    c->cold_mib = 1024;
}

/* The flags: each takes a value and goes to set_option under its own name, but quick (no
 * value) and breakdown (optional: --breakdown or --breakdown=1). */
static const struct option long_options[] = {
    {"tables", required_argument, 0, 0},     {"batch", required_argument, 0, 0},
    {"bags", required_argument, 0, 0},       {"ids", required_argument, 0, 0},
    {"strategies", required_argument, 0, 0}, {"threads", required_argument, 0, 0},
    {"phases", required_argument, 0, 0},     {"iters", required_argument, 0, 0},
    {"warmup", required_argument, 0, 0},     {"min-time", required_argument, 0, 0},
    {"breakdown", optional_argument, 0, 0},  {"lr", required_argument, 0, 0},
    {"pooling", required_argument, 0, 0},    {"clip", required_argument, 0, 0},
    {"state-dtype", required_argument, 0, 0},
    {"seed", required_argument, 0, 0},       {"roof-mib", required_argument, 0, 0},
    {"csv", required_argument, 0, 0},        {"plot", required_argument, 0, 0},
    {"peer", required_argument, 0, 0},       {"peer-script", required_argument, 0, 0},
    {"config", required_argument, 0, 0},     {"quick", no_argument, 0, 0},
    {"sweep", required_argument, 0, 0},      {"dims", required_argument, 0, 0},
    {"dtypes", required_argument, 0, 0},     {"hot-rows", required_argument, 0, 0},
    {"cold-mib", required_argument, 0, 0},   {"tier-dir", required_argument, 0, 0},
    {"recycle", no_argument, 0, 0},          {"check-roof", no_argument, 0, 0},
    {"json", required_argument, 0, 0},       {"llc-mib", required_argument, 0, 0},
    {"opt-pair", required_argument, 0, 0},   {"clip-pair", required_argument, 0, 0},
    {"pair-steps", required_argument, 0, 0},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};

/* --ids trace:DIR: every table's file, each id checked against its rows, before anything
   runs. 0 or -1 (the file and the id at fault printed). */
static int load_traces(BenchConfig *c)
{
    if (c->ids != IDS_TRACE)
        return 0;
    for (int t = 0; t < c->ntables; t++) {
        char path[4096], err[4200];
        snprintf(path, sizeof path, "%s/t%02d.txt", c->trace, t);
        if (access(path, R_OK) != 0)
            snprintf(path, sizeof path, "%s/t%02d.bin", c->trace, t);
        if (bench_trace_load(path, c->tables[t].rows, &c->trace_ids[t], &c->trace_n[t], err,
                             sizeof err) != 0) {
            fprintf(stderr, "emb-bench: --ids trace: table %d: %s\n", t, err);
            return -1;
        }
    }
    return 0;
}

int bench_config_parse(BenchConfig *c, int argc, char **argv)
{
    optind = 0; /* a fresh scan (glibc, musl): gpu_bench parses its own flags first */
    int opt, index;
    while ((opt = getopt_long(argc, argv, "h", long_options, &index)) != -1) {
        if (opt == 'h')
            return fputs(usage, stdout), 1;
        if (opt != 0) /* getopt_long said what is wrong */
            return fputs("emb-bench: --help lists the options\n", stderr), -1;
        if (set_option(c, long_options[index].name, optarg) != 0)
            return -1;
    }
    if (optind < argc)
        return fprintf(stderr, "emb-bench: unexpected '%s' (--help lists the options)\n",
                       argv[optind]), -1;
    size_t at = 0; /* the command line, for the records */
    for (int i = 0; i < argc && at + 1 < sizeof c->cmdline; i++)
        at += (size_t)snprintf(c->cmdline + at, sizeof c->cmdline - at, "%s%s", i ? " " : "",
                               argv[i]);
    return load_traces(c);
}

void bench_config_print(const BenchConfig *c, FILE *f)
{
    fprintf(f, "# %s; batch %lld; ids %s", c->tables_desc, (long long)c->batch,
            c->ids == IDS_ZIPF ? "zipf" : c->ids == IDS_TRACE ? "trace" : "uniform");
    if (c->ids == IDS_ZIPF)
        fprintf(f, "(s=%.2f)", c->zipf_s);
    if (c->ids == IDS_TRACE)
        fprintf(f, "(%s)", c->trace);
    if (c->recycle)
        fprintf(f, " RECYCLED (4 sets, hot caches)");
    fprintf(f, "; seed %llu\n# bags:", (unsigned long long)c->seed);
    for (int v = 0; v < c->nvariants; v++)
        fprintf(f, " %s", c->variants[v].name);
    fprintf(f, "; threads:");
    for (int t = 0; t < c->nthreads; t++)
        fprintf(f, " %d", c->threads[t]);
    fprintf(f, "; iters >= %d (+%d warmup), min-time %g s; phases:", c->iters, c->warmup,
            c->min_time);
    for (int p = 0; p < c->nphases; p++)
        fprintf(f, " %s", c->phases[p].name);
    fputc('\n', f);
}
