/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench.h — the parts of emb-bench (perf/): configuration, workload, the stream of
 * steps, phases, the roof, the peer, the report and the records. The tool links the
 * public library only.
 *
 * Flow (emb_bench.c): parse the configuration -> measure the roof's rates (each cache
 * level and DRAM) -> build the workload (tables + the first steps' ids) -> the plain
 * loops -> for every bag variant, phase, strategy and thread count time the iterations,
 * each on a fresh step of the stream (drawn untimed) -> the rates again (the better kept)
 * -> optionally the peer on the same tables and ids -> the table, the CSV, JSON, plot and
 * one verdict line per strategy.
 */
#ifndef EMB_BENCH_H
#define EMB_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include <embtables/embtables.h>
#include <jansson.h>

#define BENCH_MAX_GROUPS 64    /* table groups in a "tables" option */
#define BENCH_MAX_TABLES 1024  /* tables in an ensemble */
#define BENCH_MAX_VARIANTS 8   /* bag variants ("bags" option) */
#define BENCH_MAX_THREADS 16   /* entries of the "threads" option */
#define BENCH_MAX_PHASES 8     /* entries of the "phases" option */
#define BENCH_NSETS 4          /* id sets per variant: the stream's next steps (or, with
                                  --recycle, the sets rotated over iterations) */
#define BENCH_LEVELS 4         /* where a row is read from: L1, L2, LLC, DRAM */

/* ---- records (emb_bench_record.c): what a kept result carries ------------------------- */

typedef struct BenchRecord {
    char program[32], version[32], commit[64], date[32];
    char cpu[160], kernel[224];
    int cores, cpus;
    double mem_gib;
    char cmdline[1024];
} BenchRecord;

/* The library's version, the commit, the machine and @cmdline, now. */
void bench_record_fill(BenchRecord *r, const char *program, const char *cmdline);
/* The record as "# " lines (the CSV's head). */
void bench_record_csv(const BenchRecord *r, FILE *f);
/* The record as a JSON object (new reference; NULL: no memory). */
json_t *bench_record_json(const BenchRecord *r);

/* ---- configuration (emb_bench_config.c) ------------------------------------------- */

typedef struct BenchTableSpec {
    int64_t rows;
    int32_t dim;
    EmbDtype dtype;
    int dynamic; /* a dynamic table (dyn:): row r under the sparse id bench_dyn_id(r) */
    int tiered;  /* a tiered table (tier:, tiered.h): rows in a file of --tier-dir */
    double cache_frac;   /* tiered: the cache as a fraction of the table's records, or */
    int64_t cache_bytes; /* tiered: the cache in bytes (when cache_frac is 0) */
} BenchTableSpec;

typedef enum BenchBagKind { BAG_FIXED = 0, BAG_RAGGED_UNIFORM = 1 } BenchBagKind;

/* One bag variant: fixed bags of `lo` ids, or ragged bags of lengths uniform in [lo, hi]. */
typedef struct BenchBagSpec {
    BenchBagKind kind;
    int32_t lo, hi;
    char name[32]; /* "one-hot", "multi-hot-20", "ragged-1-39" */
} BenchBagSpec;

/* The ids' source (bench_ids.h, the one generator of every benchmark). */
typedef enum BenchIdDist { IDS_UNIFORM = 0, IDS_ZIPF = 1, IDS_TRACE = 2 } BenchIdDist;

enum {
    STRAT_SEQUENTIAL = 0,
    STRAT_PARALLEL = 1,
    STRAT_PREALLOC_CONCAT = 2,
    STRAT_AUTO = 3,
    STRAT_COUNT = 4
};

typedef enum BenchPhaseKind {
    PHASE_FORWARD = 0, /* emb_collection_forward (emb_maplookup) */
    PHASE_UPDATE = 1,  /* backward + update with an optimizer */
    PHASE_TRAIN = 2,   /* forward + backward + update: one training step */
} BenchPhaseKind;

/* The optimizers of update:OPT / train:OPT: every EmbOptimizerKind (bench_opt_kind). */
typedef enum BenchOpt {
    OPT_NONE = 0,
    OPT_SGD = 1,
    OPT_ADAGRAD = 2,
    OPT_ROWWISE_ADAGRAD = 3,
    OPT_FTRL = 4,
    OPT_ADAM = 5,
    OPT_ROWWISE_ADAGRAD_COUNTER = 6,
    OPT_COUNT = 7
} BenchOpt;

typedef struct BenchPhaseSpec {
    BenchPhaseKind kind;
    BenchOpt opt;
    char name[32]; /* "forward", "update:sgd", "train:rowwise_adagrad" */
} BenchPhaseSpec;

typedef struct BenchConfig {
    int ntables;
    BenchTableSpec tables[BENCH_MAX_TABLES];
    char tables_desc[128];
    int64_t batch;
    int nvariants;
    BenchBagSpec variants[BENCH_MAX_VARIANTS];
    BenchIdDist ids;
    double zipf_s;
    unsigned strategies; /* bit mask of STRAT_* */
    int nthreads;
    int threads[BENCH_MAX_THREADS];
    int nphases;
    BenchPhaseSpec phases[BENCH_MAX_PHASES];
    int iters, warmup;
    double min_time; /* seconds per row: time at least this long, then until the median's
                        95% interval is within 2% (or 10x min_time has passed) */
    int breakdown;   /* print the training step's phases */
    int pooling_max; /* --pooling max: every table pooled by MAX (else SUM) */
    EmbDtype state_dtype; /* --state-dtype: the optimizers' state (f32, f16, bf16) */
    uint64_t seed;
    double lr;
    double clip[3]; /* --clip: max_gradient, max_row_norm, max_global_norm (0: off) */
    int pair;       /* --opt-pair / --clip-pair given: bench_pair_run instead of the rows */
    BenchOpt pair_opt[2];  /* --opt-pair: the two sides' optimizers (OPT_NONE: the phase's) */
    double pair_clip[2][3]; /* --clip-pair: the two sides' clipping (if pair_clip_given) */
    int pair_clip_given;
    int pair_steps;         /* --pair-steps: steps of one side in a round */
    int64_t roof_mib;
    int quick;
    const char *csv, *plot, *peer, *peer_script;
    /* --sweep dims: one table per cell, hot (Zipf) and cold (uniform) ids, every D and
       dtype listed (emb_bench_sweep.c); the other options apply to every cell */
    int sweep;
    int ndims, ndtypes;
    int dims[8];
    EmbDtype dtypes[3];
    int64_t hot_rows, cold_mib;
    int bags_given, strategies_given, threads_given; /* set by the user, not defaulted */
    const char *tier_dir; /* the tiered tables' files (--tier-dir; NULL: $TMPDIR or /var/tmp) */
    int recycle;          /* --recycle: BENCH_NSETS id sets rotated (hot caches), not a stream */
    int check_roof;       /* --check-roof: exit 1 when the plain loop beats the roof */
    const char *trace;    /* --ids trace:DIR: DIR/tNN.bin or DIR/tNN.txt per table */
    int64_t *trace_ids[BENCH_MAX_TABLES]; /* the trace files' ids (bench_config_parse) */
    int64_t trace_n[BENCH_MAX_TABLES];
    const char *json;     /* --json FILE */
    char cmdline[1024];   /* the command line, for the records */
    BenchRecord record;   /* version, commit, machine, command line (main fills it) */
} BenchConfig;

/* Fills @c with the DLRM-shaped default. */
void bench_config_default(BenchConfig *c);
/* Parses argv (flags and --config FILE) over @c. 0, 1 (help printed, exit 0) or -1. */
int bench_config_parse(BenchConfig *c, int argc, char **argv);
/* The library's optimizer of @o (OPT_SGD ... OPT_ADAM; not OPT_NONE). */
EmbOptimizerKind bench_opt_kind(BenchOpt o);
/* The optimizer's name in --phases ("rowwise_adagrad"; "?" for OPT_NONE). */
const char *bench_opt_name(BenchOpt o);
/* Prints the configuration in one or two lines (to @f). */
void bench_config_print(const BenchConfig *c, FILE *f);
const char *bench_strategy_name(int s);

/* ---- the run (emb_bench.c) and the sweep (emb_bench_sweep.c) ----------------------- */

typedef struct BenchResults BenchResults;
/* Roofs, workload, every row timed, the peer; prints the table (and with @verdicts the
   breakdown, CSV, plot and verdict lines). 0 or -1. */
int bench_run(const BenchConfig *c, BenchResults *res, int verdicts);
/* --opt-pair / --clip-pair: two optimizer configurations in paired rounds, each on its
   own copy of the workload (emb_bench_pair.c); printed. 0 or -1. */
int bench_pair_run(const BenchConfig *c);
/* --sweep dims: bench_run per cell, then one summary table (markdown). 0 or -1. */
int bench_sweep(const BenchConfig *c);

/* ---- workload (emb_bench_workload.c) ---------------------------------------------- */

/* The ids of one variant and step: one EmbBatch per table (int64 ids, CSR offsets). */
typedef struct BenchIdSet {
    EmbBatch *batches;   /* ntables */
    int64_t *ids;        /* all tables' ids, concatenated */
    int64_t *rows;       /* their row indices (== ids unless a table is dynamic) */
    int64_t *offsets;    /* ntables * (batch + 1) */
    int64_t nnz;         /* Σ nnz */
    int64_t distinct;    /* Σ distinct ids per table */
    int64_t *distinct_t; /* ntables: distinct ids of each table */
    int64_t *pairs_t;    /* ntables: (bag, distinct id of the bag) pairs (a bag of more
                            than 64 ids: the distinct of its first 64), the roof's reads */
    int64_t *lvl_rows;   /* ntables x BENCH_LEVELS: distinct rows by where they are read
                            from, set when the step is handed out (bench_stream_next) */
    int64_t step;        /* the stream's step */
} BenchIdSet;

typedef struct BenchStream BenchStream;

typedef struct BenchWorkload {
    int ntables;
    EmbTable **tables;
    void *shm;            /* one shared mapping holding every table (peer runs) or NULL */
    size_t shm_bytes;
    char shm_dir[96];     /* the folder of the files shared with the peer ("" none) */
    int64_t table_bytes;  /* Σ rows x row bytes */
    int64_t concat_width; /* prependrows + Σ D */
    int64_t prepend;
    float *out;           /* batch x concat_width */
    float *grad;          /* batch x concat_width: the output gradient of training phases */
    EmbOptimizer *opt[OPT_COUNT]; /* per BenchOpt, shared by every runner (on first use) */
    BenchIdSet sets[BENCH_MAX_VARIANTS][BENCH_NSETS];
    int steady;           /* the sets are a stream (not --recycle) */
    int64_t next_step[BENCH_MAX_VARIANTS]; /* the step bench_stream_next hands out next */
    int refill[BENCH_MAX_VARIANTS];        /* the slot to draw again first (-1 none) */
    BenchStream *stream;  /* stamps and reuse distances (emb_bench_stream.c) */
    int ntiered;          /* tiered tables (tier:) among the tables */
    char **tier_paths;    /* ntables: tiered table t's file (else NULL), removed at destroy */
    int twin;             /* this workload is another's in-memory twin (bench_tier_twin) */
    double disk_rate[2];  /* the disk's random reads / s of the first tiered table's
                             records, at depth 1 and at depth 16 (measured at creation) */
    double cached_cost[2]; /* seconds of one record's pread and pwrite with its page in the
                              page cache (bench_disk_cached_cost, at creation) */
} BenchWorkload;

/* Draws step @step of variant @v (every table's ids and CSR offsets; fixed bags also get
   offsets, though their batches use bag_size), from the config's source. 0 or -1 (no
   memory). */
int bench_idset_create(BenchIdSet *s, const BenchConfig *c, int v, int64_t step);
void bench_idset_free(BenchIdSet *s);
/* Builds tables (in /dev/shm files when @shared, for the peer) and every id set. */
int bench_workload_create(BenchWorkload *w, const BenchConfig *c, int shared);
/* Writes the manifest and the id files the peer reads (into w->shm_dir). */
int bench_workload_export(const BenchWorkload *w, const BenchConfig *c);
void bench_workload_destroy(BenchWorkload *w);
/* Mean row bytes weighted by table bytes, as a float count (the roof's D). */
int32_t bench_roof_dim(const BenchConfig *c);
/* Table bytes one iteration of the variant reads (forward) and updates (read + write). */
double bench_bytes_read(const BenchWorkload *w, const BenchConfig *c, int v);
double bench_bytes_updated(const BenchWorkload *w, const BenchConfig *c, int v);
/* Optimizer state bytes one update of the variant reads and writes: per distinct row its
   f32 state (Adagrad D, row-wise Adagrad 1, FTRL and Adam 2 D; SGD none), a state row of
   less than a cache line counted as one line (64 B: what a random access moves). */
double bench_bytes_state(const BenchWorkload *w, const BenchConfig *c, int v, BenchOpt opt);

/* ---- steady state and the roof's levels (emb_bench_stream.c) ---------------------- */

/* The rates of the roof, GB/s of rows read from each level (bench_rates_measure). */
typedef struct BenchRates {
    double gbs[BENCH_LEVELS];
} BenchRates;

/* The sizes of L1d, L2 (per core) and the LLC in bytes (sysconf; defaults if unknown;
   the LLC as bench_cache_set_llc set it, if it did). */
void bench_cache_sizes(int64_t size[BENCH_LEVELS - 1]);
/* --llc-mib: the LLC's size the model uses instead of the CPU's (a VM may report the
   host's). */
void bench_cache_set_llc(int64_t bytes);
int bench_stream_create(BenchWorkload *w, const BenchConfig *c);
void bench_stream_destroy(BenchWorkload *w, int ntables);
/* The slot of variant @v's next step, its rows' levels accounted; in steady state the slot
   handed out before is first drawn again with a new step. The slot, or -1 (no memory). */
int bench_stream_next(BenchWorkload *w, const BenchConfig *c, int v);
/* Header lines: the ids' source, steady state or recycled, and per table the distinct
   rows a step touches. */
void bench_workload_header(const BenchWorkload *w, const BenchConfig *c, FILE *f);
/* The fraction of each table the run touched (after the rows). */
void bench_workload_touched(const BenchWorkload *w, const BenchConfig *c, FILE *f);
/* The fraction of table @t's rows the run has touched so far. */
double bench_touched_fraction(const BenchWorkload *w, const BenchConfig *c, int t);
/* f32 optimizer state bytes of one row of @t (a state row under a cache line as 64 B). */
double bench_state_row_bytes(const BenchTableSpec *t, BenchOpt opt);
/* The bytes one step of @kind must read from each level: each distinct row's (row, +
   the optimizer's state for update / train), a second touch in the step free. */
void bench_step_levels(const BenchConfig *c, const BenchIdSet *set, BenchPhaseKind kind,
                       BenchOpt opt, double bytes[BENCH_LEVELS]);
/* The roof's seconds for @bytes read from each level at @rates. */
double bench_roof_of(const double bytes[BENCH_LEVELS], const BenchRates *rates);

/* ---- tiered tables (emb_bench_tier.c, emb_bench_tier_compare.c) ------------------- */

/* Creates tiered table @t (c->tables[t].tiered) in a file of c->tier_dir (its name in
   w->tier_paths), its rows from the seed's initializer, as the in-memory twin of
   bench_tier_compare has them. 0 or an EMB_E* code (printed). */
int bench_tier_make(BenchWorkload *w, const BenchConfig *c, int t, const char *name);
/* The initializer of tiered table @t's rows (and its in-memory twin's). */
EmbInitializer bench_tier_initializer(const BenchConfig *c, int t);
/* Header lines of a workload with tiered tables: the I/O engine, the files, the caches and
   the disk's random-read rate for the record size (measured now, into w->disk_rate). */
void bench_tier_header(BenchWorkload *w, const BenchConfig *c, FILE *f);
/* Removes the tiered tables' files (after the tables were destroyed) and their names. */
void bench_tier_unlink(BenchWorkload *w);
/* Every tiered table's step against the same ensemble held in memory (the same ids, in
   the same run, in alternating blocks of steps), with the tiered counters; printed. 0 or
   -1. */
int bench_tier_compare(const BenchConfig *c, BenchWorkload *w, FILE *f);

/* ---- the roof's rates and the plain loops (emb_bench_roof.c) ------------------------- */

/* The plain loops over the stream's steps: median seconds of a step's gather (forward)
   and of its distinct rows' update (SGD's bytes), and each step's time and bytes. */
#define BENCH_PLAIN_STEPS 10 /* steps of each plain loop */
typedef struct BenchPlain {
    double gather_s, update_s;
    double t[2 * BENCH_PLAIN_STEPS];                 /* each step's time: gathers, updates */
    double bytes[2 * BENCH_PLAIN_STEPS][BENCH_LEVELS]; /* and its bytes by level */
    int n;
} BenchPlain;
/* The largest roof / time of the plain loops' steps at @rates (above 1.0: no bound). */
double bench_plain_worst(const BenchPlain *p, const BenchRates *rates);

/* Measures each level's rate with @threads threads on rows of @row_bytes, DRAM on
   @dram_mib MiB. 0 or -1 (no memory). */
int bench_rates_measure(BenchRates *r, int threads, int32_t row_bytes, int64_t dram_mib,
                        uint64_t seed);
/* Whether the plain loops can run on the workload (every table an f32 array, D <= 1024). */
int bench_roof_on_workload(const BenchConfig *c);
/* The plain loops on variant @v's next steps at @threads (zeros when they cannot run).
   0 or -1. */
int bench_plain_measure(BenchPlain *p, BenchWorkload *w, const BenchConfig *c, int v,
                        int threads);

/* ---- phases (emb_bench_phases.c) --------------------------------------------------- */

typedef struct BenchRunner BenchRunner;

/* A strategy at a thread count, ready to run phases. NULL on failure (message printed). */
BenchRunner *bench_runner_create(const BenchConfig *c, BenchWorkload *w, int strategy,
                                 int threads);
/* The phases of one training step (seconds), as --breakdown prints them. */
enum { BD_FORWARD, BD_RECORD, BD_SERIAL, BD_PULLBACK, BD_INDEX, BD_APPLY, BD_COUNT };

/* One iteration of @phase on id set @set of variant @v; adds its phases' times to @bd
   (NULL: none). 0 or an EMB_E* code. */
int bench_runner_iter(BenchRunner *r, const BenchPhaseSpec *phase, int v, int set,
                      double *bd);
void bench_runner_destroy(BenchRunner **r);
/* Destroys the optimizers the runners shared (w->opt). */
void bench_optimizers_destroy(BenchWorkload *w);

/* ---- results (emb_bench_report.c) ---------------------------------------------------- */

typedef struct BenchRow {
    int variant, phase, strategy, threads;
    double median_s, p90_s, p99_s, max_s;
    double spread;     /* the median's 95% interval half-width / median (box-plot notch) */
    int n;             /* timed iterations */
    double bd[BD_COUNT]; /* median seconds per iteration of each phase */
    double bytes;      /* table bytes moved per iteration */
    double roof_s;     /* the roof's time of the row's steps (mean): each distinct row at
                          its level's rate (bench_roof_of) */
    double lvl_bytes[BENCH_LEVELS]; /* the bytes of that roof by level (mean per step) */
    double fwd_bytes[BENCH_LEVELS]; /* of which the forward's */
    double bytes_rd, bytes_up; /* of which forward rows read; update rows (+ state) moved */
    double roof_fwd_s; /* of which the forward's */
    double plain_s;    /* the plain loops' median for the same steps' kind (0: none) */
    double distinct;   /* distinct rows per step (mean over the row's steps) */
    double lvl_frac[BENCH_LEVELS]; /* of which read from L1, L2, LLC, DRAM */
    double vs_seq;     /* sequential's time / this row's, paired round by round (the
                          median over the quieter half of the rounds; 0: no sequential row) */
    double peer_s;     /* peer median at the same thread count (0: none) */
    double load1;      /* the 1-minute load average when its rows were timed (-1: unknown) */
} BenchRow;

struct BenchResults {
    int nrows, cap;
    BenchRow *rows;
    int nrates;                               /* the roof's rates, per thread count */
    int rate_threads[BENCH_MAX_THREADS + 1];
    BenchRates rates[BENCH_MAX_THREADS + 1];
    int steady;                               /* the ids were a stream (not --recycle) */
};

int bench_results_add(BenchResults *r, const BenchRow *row);
void bench_results_free(BenchResults *r);
/* Fills vs_seq of every row from the sequential rows. */
void bench_results_relate(BenchResults *r);
void bench_report_table(const BenchResults *r, const BenchConfig *c, FILE *f);
/* The training step's phases of every update / train row (--breakdown). */
void bench_report_breakdown(const BenchResults *r, const BenchConfig *c, FILE *f);
/* One line per strategy (vs sequential, roof, torch), then auto against the best fixed
   strategy at each row and the worst tail (p90 / median) of each strategy. */
void bench_report_verdicts(const BenchResults *r, const BenchConfig *c, FILE *f);
int bench_report_csv(const BenchResults *r, const BenchConfig *c, const char *path);
/* The CSV's "# " lines of a run (ids, the roof's rates) and its rows (BENCH_CSV_COLUMNS),
   each led by "@cell: " / "@cell," when @cell is given (the sweep's cells, one file). */
void bench_csv_comments(const BenchResults *r, const char *cell, FILE *f);
void bench_csv_rows(const BenchResults *r, const BenchConfig *c, const char *cell, FILE *f);
/* The CSV's column line: every benchmark program's rows (emb-bench, gpu_bench) have these
   columns, empty where one does not apply, so `emb-bench compare` reads them all. */
#define BENCH_CSV_COLUMNS                                                                  \
    "bags,phase,strategy,threads,median_ms,spread,p90_ms,p99_ms,max_ms,n,bytes,gbs,"      \
    "roof_fraction,vs_sequential,forward_ms,record_ms,serial_ms,pullback_ms,"             \
    "index_ms,apply_ms,peer_ms,vs_peer,load1,roof_ms,plain_ms,vs_plain,"                  \
    "distinct_rows,l1_frac,l2_frac,llc_frac,dram_frac,steady"
/* The record, the configuration, the roof's rates and every row as JSON (--json). */
int bench_report_json(const BenchResults *r, const BenchConfig *c, const char *path);
/* The run without the record as a JSON object (ids, tables, batch, roof_rates, rows; new
   reference; NULL: no memory): --json's body, and each cell of the sweep's. */
json_t *bench_results_json(const BenchResults *r, const BenchConfig *c);
int bench_report_plot(const BenchResults *r, const BenchConfig *c, const char *path);

/* ---- peer (emb_bench_peer.c) ------------------------------------------------------- */

/* Whether $PYTHON (default python3) imports torch; if not, a message. 0 or -1. */
int bench_peer_check(void);
/* Runs the peer script on the exported workload and fills peer_s of matching rows. */
int bench_peer_run(BenchResults *r, const BenchConfig *c, const BenchWorkload *w);

/* ---- the machine (emb_bench_machine.c) ----------------------------------------------- */

/* CPU model, cores, caches, NUMA nodes and the kernels chosen, as header lines. */
void bench_machine_print(FILE *f);

/* "model name" of /proc/cpuinfo, or "unknown CPU" (emb_bench_record.c). */
void bench_cpu_model(char *buf, size_t n);

/* emb-bench compare A.csv B.csv (emb_bench_compare.c): argv[1] is "compare". 0, 1 or 2. */
int bench_compare_main(int argc, char **argv);

/* emb-bench ids ... (emb_bench_ids_main.c): the generator's ids into a file. 0, 1 or 2. */
int bench_ids_main(int argc, char **argv);

/* The subcommands folded in, each with its own options (--help), argv[0] its name:
   emb-bench coll (a collection step against the three calls it is made of, interleaved),
   dyn (dynamic tables against a plain table of the same rows), quant (the pooled lookup
   over f32, int8 and int4 rows of one table), tier (a tiered table's step against memory,
   and the disk's random-read rate). Their ids come from bench_ids.h. Exit codes. */
int bench_coll_main(int argc, char **argv);
/* emb-bench ckpt ... (emb_bench_ckpt.c): a delta checkpoint against a full one. 0, 1 or 2. */
int bench_ckpt_main(int argc, char **argv);
int bench_dyn_main(int argc, char **argv);
int bench_quant_main(int argc, char **argv);
int bench_tier_main(int argc, char **argv);

/* emb-bench --mpi ...: runs dist-bench (the MPI ensemble) with the other arguments;
   returns only on failure (emb_bench_mpi.c). */
int bench_exec_mpi(int argc, char **argv);

/* ---- utilities (emb_bench_util.c) ------------------------------------------------------- */

double bench_now(void);
/* The 1-minute load average (/proc/loadavg), or -1 where there is none. */
double bench_load1(void);
uint64_t bench_splitmix(uint64_t *state);
/* The id of row r of a dynamic table (dyn:): a 62-bit hash of r, distinct for distinct r. */
int64_t bench_dyn_id(int64_t r);
void bench_progress(const char *fmt, ...);
void bench_progress_end(void);

#endif
