/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench.h — the parts of emb-bench (perf/): configuration, workload, phases, the
 * memory roof, the peer and the report. The tool links the public library only.
 *
 * Flow (emb_bench.c): parse the configuration -> measure the roof -> build the workload
 * (tables + id sets) -> for every bag variant, phase, strategy and thread count time the
 * iterations -> optionally run the peer on the same tables and ids -> print the table, the
 * CSV, the plot and one verdict line per strategy.
 */
#ifndef EMB_BENCH_H
#define EMB_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include <embtables/embtables.h>

#define BENCH_MAX_GROUPS 64    /* table groups in a "tables" option */
#define BENCH_MAX_TABLES 1024  /* tables in an ensemble */
#define BENCH_MAX_VARIANTS 8   /* bag variants ("bags" option) */
#define BENCH_MAX_THREADS 16   /* entries of the "threads" option */
#define BENCH_MAX_PHASES 8     /* entries of the "phases" option */
#define BENCH_NSETS 4          /* id sets per variant, rotated over iterations */

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

typedef enum BenchIdDist { IDS_UNIFORM = 0, IDS_ZIPF = 1 } BenchIdDist;

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
    OPT_COUNT = 6
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
    uint64_t seed;
    double lr;
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
} BenchConfig;

/* Fills @c with the DLRM-shaped default. */
void bench_config_default(BenchConfig *c);
/* Parses argv (flags and --config FILE) over @c. 0, 1 (help printed, exit 0) or -1. */
int bench_config_parse(BenchConfig *c, int argc, char **argv);
/* The library's optimizer of @o (OPT_SGD ... OPT_ADAM; not OPT_NONE). */
EmbOptimizerKind bench_opt_kind(BenchOpt o);
/* Prints the configuration in one or two lines (to @f). */
void bench_config_print(const BenchConfig *c, FILE *f);
const char *bench_strategy_name(int s);

/* ---- the run (emb_bench.c) and the sweep (emb_bench_sweep.c) ----------------------- */

typedef struct BenchResults BenchResults;
/* Roofs, workload, every row timed, the peer; prints the table (and with @verdicts the
   breakdown, CSV, plot and verdict lines). 0 or -1. */
int bench_run(const BenchConfig *c, BenchResults *res, int verdicts);
/* --sweep dims: bench_run per cell, then one summary table (markdown). 0 or -1. */
int bench_sweep(const BenchConfig *c);

/* ---- workload (emb_bench_workload.c) ---------------------------------------------- */

/* The ids of one variant and id set: one EmbBatch per table (int64 ids, CSR offsets). */
typedef struct BenchIdSet {
    EmbBatch *batches;   /* ntables */
    int64_t *ids;        /* all tables' ids, concatenated */
    int64_t *offsets;    /* ntables * (batch + 1) */
    int64_t nnz;         /* Σ nnz */
    int64_t distinct;    /* Σ distinct ids per table */
} BenchIdSet;

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
    int ntiered;          /* tiered tables (tier:) among the tables */
    char **tier_paths;    /* ntables: tiered table t's file (else NULL), removed at destroy */
    int twin;             /* this workload is another's in-memory twin (bench_tier_twin) */
    double disk_rate[2];  /* the disk's random reads / s of the first tiered table's
                             records, at depth 1 and at depth 16 (measured at creation) */
    double cached_cost[2]; /* seconds of one record's pread and pwrite with its page in the
                              page cache (bench_disk_cached_cost, at creation) */
} BenchWorkload;

/* Draws id set @set of variant @v (every table's ids and CSR offsets; fixed bags also get
   offsets, though their batches use bag_size). 0 or -1 (no memory). */
int bench_idset_create(BenchIdSet *s, const BenchConfig *c, int v, int set);
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

/* ---- the memory roof (emb_bench_roof.c): gather_roof's method --------------------- */

typedef struct BenchRoof {
    double gather_gbs; /* pooled random-row gather with prefetch, GB/s of rows read */
    double update_gbs; /* random distinct-row read-modify-write, GB/s read + written */
} BenchRoof;

/*
 * Measures the roof with @threads threads on a buffer of @mib MiB, rows of @dim floats,
 * @bags bags of @bag ids (update: @distinct distinct rows). 0 or -1 (no memory).
 */
int bench_roof_measure(BenchRoof *r, int threads, int64_t mib, int32_t dim, int64_t bags,
                       int32_t bag, int64_t distinct, uint64_t seed);
/* Whether the roofs run on the workload's own tables and ids (every table an f32 array of
 * D <= 1024); if not, they are the uniform-id buffer's of bench_roof_measure. */
int bench_roof_on_workload(const BenchConfig *c);
/*
 * The gather roof of the run's own workload: the same hand-tuned loop over the ensemble's
 * tables and variant @v's ids (so a skewed id distribution's cache hits count for the roof
 * too). GB/s of rows read, or 0 when the tables are not all f32.
 */
double bench_roof_workload(const BenchWorkload *w, const BenchConfig *c, int v, int threads);
/*
 * The update roof of the run's own workload: the update loop over the ensemble's tables
 * and the distinct ids of variant @v's batches (Zipf ids: the hot rows cached, as for the
 * optimizer), with a zero gradient, so the tables keep their bits. GB/s of rows read +
 * written, or 0 when the tables are not all f32 arrays or memory ran out.
 */
double bench_roof_workload_update(const BenchWorkload *w, const BenchConfig *c, int v,
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
    double roof_s;     /* the time the roof needs for the same bytes */
    double bytes_rd, bytes_up; /* of which forward rows read; update rows (+ state) moved */
    double gather_gbs, update_gbs; /* the roof lines of the forward and of the update */
    double vs_seq;     /* sequential median / this median (0: no sequential row) */
    double peer_s;     /* peer median at the same thread count (0: none) */
    double load1;      /* the 1-minute load average when its rows were timed (-1: unknown) */
} BenchRow;

struct BenchResults {
    int nrows, cap;
    BenchRow *rows;
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
int bench_report_plot(const BenchResults *r, const BenchConfig *c, const char *path);

/* ---- peer (emb_bench_peer.c) ------------------------------------------------------- */

/* Runs the peer script on the exported workload and fills peer_s of matching rows. */
int bench_peer_run(BenchResults *r, const BenchConfig *c, const BenchWorkload *w);

/* ---- the machine (emb_bench_machine.c) ----------------------------------------------- */

/* CPU model, cores, caches, NUMA nodes and the kernels chosen, as header lines. */
void bench_machine_print(FILE *f);

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
