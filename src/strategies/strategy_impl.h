/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * strategy_impl.h — the inside of EmbStrategy, shared by the files of src/strategies/ (and
 * by test_strategies.c): the object and its buffers (strategy.c), the thread launcher
 * (threads.c), and what the ensemble operations (maplookup.c, update_many.c) ask of a
 * strategy: its kind and sizes, its buffers, and running tasks on its threads. OpenMP
 * lives only behind emb__strategy_run (threads.c), never in callers. No other layer
 * includes this header: strategies sit above lookup and update.
 */
#ifndef EMB_STRATEGY_IMPL_H
#define EMB_STRATEGY_IMPL_H

#include "embtables/strategy.h"
#include "internal.h"

typedef enum EmbStrategyKind {
    EMB_STRATEGY_SEQUENTIAL = 0,
    EMB_STRATEGY_PARALLEL = 1,
    EMB_STRATEGY_PREALLOC_CONCAT = 2,
    EMB_STRATEGY_CUSTOM = 3,
    EMB_STRATEGY_AUTO = 4,
} EmbStrategyKind;

/*
 * Below this much work (bytes: the forward's nnz x featuresize x element size plus its
 * outputs, the update's gradient rows x featuresize x 4) the auto strategy runs a call on
 * the caller alone: waking a thread team costs more than a second thread saves (measured
 * on the 2-core machine: a parallel region about 45-50 us under OMP_WAIT_POLICY=passive,
 * 1-5 us spinning; a one-hot step of one 4M x 64 table, 1 MiB of forward work and 1 MiB
 * of gradient rows, took 0.07 ms on one thread and 0.24 ms on two, forward + 3 update
 * phases each waking the team). 2 MiB, about the break-even there (0.1-0.2 ms of work on
 * one core): with threads that spin, or many cores, a larger call still gains from them.
 * Raised to 4 MiB (issue #41): between a torch model's ops the team is cold or spinning in
 * torch's regions, and a one-hot forward of 8 tables x 512 bags x D = 64 (exactly 2 MiB:
 * 1 MiB of rows, 1 MiB of outputs) cost its caller 0.57 ms of CPU on 2 threads against
 * 0.14 ms on one (thread CPU time, load 25); forward and update of the same batch now
 * choose alike (the forward counts its outputs too, so it is twice the update's measure).
 */
#define EMB_AUTO_SERIAL_WORK (4.0 * 1024.0 * 1024.0)

/*
 * The auto strategy's forward choice (strategy.h, emb_strategy_auto): the tables in order
 * on the caller (EMB_STRATEGY_SEQUENTIAL) when the call's work is below
 * EMB_AUTO_SERIAL_WORK; whole tables per thread (EMB_STRATEGY_PARALLEL) when there are at
 * least 4 tables per thread and no table has more than a thread's share of the work
 * (@work[i]: nnz x featuresize x element size, plus the outputs); bag chunks
 * (EMB_STRATEGY_PREALLOC_CONCAT) otherwise. One thread: PARALLEL (the tables in order on
 * the caller).
 */
EmbStrategyKind emb__auto_forward_kind(int nthreads, const double *work, int64_t ntables,
                                       size_t work_stride);

EmbStrategyKind emb__strategy_kind(const EmbStrategy *s);
/* Splits per table for the update (1 for sequential and parallel). */
int emb__strategy_num_splits(const EmbStrategy *s);
/*
 * Splits per table for an update of @ntables tables of @work bytes (gradient rows x
 * featuresize x 4): num_splits, except that a prealloc-concat or auto strategy whose
 * num_splits was left at 0 (auto) splits no table with one thread or when there are at
 * least 4 tables per thread (whole tables balance the threads; splitting a table costs an
 * extra pass over its ids), nor (auto) below EMB_AUTO_SERIAL_WORK, and otherwise about
 * 2 x nthreads / ntables splits, at least 4 and at most 64 (so that one large table keeps
 * every thread busy).
 */
int emb__strategy_update_splits(const EmbStrategy *s, int64_t ntables, double work);
/* The threads an update of @work bytes runs on: 1 where emb__strategy_update_splits
   keeps an auto strategy's call on the caller (below EMB_AUTO_SERIAL_WORK), else all. */
int emb__strategy_update_threads(const EmbStrategy *s, double work);
/* The user callbacks and user data of a custom strategy (NULL otherwise). */
const EmbStrategyCallbacks *emb__strategy_callbacks(const EmbStrategy *s, void **user);

/*
 * Makes sure every thread of the strategy has at least @bytes of scratch (64-byte
 * aligned). Grows, never shrinks; allocates only when more is asked than before.
 * Returns 0 or EMB_ENOMEM (nothing changed). Call before emb__strategy_run.
 */
int emb__strategy_reserve(EmbStrategy *s, size_t bytes);
/* Thread @thread's scratch (as reserved). */
void *emb__strategy_scratch(const EmbStrategy *s, int thread);

/* A task: runs task @task on thread @thread (0 <= thread < nthreads). */
typedef void (*emb_task_fn)(void *ctx, int64_t task, int thread);

/*
 * Runs tasks [0, ntasks) on the strategy's threads (pinned as asked) and returns when all
 * are done. Tasks are handed out in index order, dynamically; callers make results
 * independent of which thread runs a task.
 */
void emb__strategy_run(EmbStrategy *s, int64_t ntasks, emb_task_fn fn, void *ctx);
/* emb__strategy_run on at most @nthreads of the strategy's threads (1: on the caller). */
void emb__strategy_run_on(EmbStrategy *s, int nthreads, int64_t ntasks, emb_task_fn fn,
                          void *ctx);

/*
 * The serial step before phase @phase of a run of phases, on the caller's thread: its
 * work, then the phase's task function (*fn) and count, or -1 to end the run there.
 */
typedef int64_t (*emb_step_fn)(void *ctx, int phase, emb_task_fn *fn);
/*
 * Phases [0, nphases) in one parallel region on at most @nthreads of the strategy's
 * threads: per phase @step on the caller, then its tasks on every thread (handed out in
 * index order), each phase waiting for the one before at a barrier with a bounded spin.
 * One team wake-up for the whole run; the same results as emb__strategy_run per phase.
 */
void emb__strategy_run_phases(EmbStrategy *s, int nthreads, int nphases, emb_step_fn step,
                              void *ctx);

/* The most threads a strategy may ask for. */
#define EMB_MAX_THREADS 4096

/* A buffer owned by the strategy: grown when more is asked, never shrunk. */
typedef struct EmbGrowBuf {
    void *p;
    size_t bytes;
} EmbGrowBuf;

/*
 * One emb_update_many call (update_many.c): its plans (in the strategy's updates buffer),
 * sizes and phase clock; kept by emb_update_many_prepare until the commit or the cancel
 * (pending), with the arguments for a custom strategy's callback.
 */
typedef struct EmbManyCall {
    struct EmbPlan *plans;
    struct EmbStrategy *s;
    EmbOptimizer *opt;
    int64_t n;
    int64_t nsplits, asplits; /* index partitions per table, apply tasks per partition */
    int nthreads;             /* threads of this call (auto: 1 for little work) */
    int32_t dmax;             /* the largest featuresize (the scratch's) */
    int rc;                   /* the first failure of a run of phases (0: none) */
    unsigned flags;
    double t, times[4]; /* the last lap's end; EmbUpdateTimes in order */
    EmbTable *const *tables;  /* custom strategy: the arguments for its callback */
    const EmbGrad *const *grads;
    EmbIndexer *const *indexers;
    bool pending;
} EmbManyCall;

struct EmbStrategy {
    EmbStrategyKind kind;
    int nthreads;
    EmbPinning pinning;
    int32_t chunks;      /* prealloc-concat: bag chunks per table (0: auto) */
    int num_splits;      /* multi-table update: splits per table */
    bool splits_auto;    /* num_splits was left to the library (option 0) */

    /* every buffer an ensemble call needs beyond the caller's and the indexers' */
    void **scratch;      /* nthreads per-thread buffers of scratch_bytes each */
    size_t scratch_bytes;
    EmbGrowBuf plan;     /* emb_maplookup's per-call plan */
    EmbGrowBuf batches;  /* the batches built by the id-matrix conveniences */
    EmbGrowBuf updates;  /* emb_update_many's per-table plans */

    double update_times[4];  /* emb_update_many's last phases (EmbUpdateTimes order) */
    EmbManyCall many;        /* emb_update_many_prepare's prepared call (pending) */

    EmbStrategyCallbacks cb; /* custom strategies */
    void *user;
};

/*
 * Makes @b hold at least @bytes (64-byte aligned; contents not kept when it grows).
 * Returns the buffer, or NULL after recording EMB_ENOMEM (the old buffer is kept).
 */
void *emb__growbuf(EmbGrowBuf *b, size_t bytes);

/*
 * The thread launcher (threads.c): runs tasks [0, ntasks) on up to @nthreads threads
 * (the caller is thread 0), handing them out dynamically in index order, each thread
 * pinned by @pinning. Runs on the caller alone when nthreads or ntasks is 1, or when the
 * library is built without OpenMP.
 */
void emb__threads_run(int nthreads, EmbPinning pinning, int64_t ntasks, emb_task_fn fn,
                      void *ctx);
/* emb__strategy_run_phases on @nthreads threads (threads.c). */
void emb__threads_run_phases(int nthreads, EmbPinning pinning, int nphases, emb_step_fn step,
                             void *ctx);

/* ---- the output layout (outputs.c) ----------------------------------------------------
 * The one owner of EmbOutputs: per-table buffers, or one concat matrix in which table i
 * has the columns [prependrows + Σ_{j<i} D_j, prependrows + Σ_{j<=i} D_j) of every row.
 * emb_maplookup writes it, emb_maplookup_backward reads it; both check it here.
 */

/*
 * Checks @o for @n tables and their batches without reading ids: no NULL table, a buffer
 * set, and for concat: prependrows >= 0 (EMB_EINVAL), equal bag counts (EMB_ESHAPE), a row
 * width that does not overflow (EMB_EOVERFLOW) and fits concat_stride (EMB_ESHAPE).
 * @op names the calling function in messages. Returns 0 or the code, message set.
 */
int emb__outputs_check(const char *op, EmbTable *const *tables, int64_t n,
                       const EmbBatch *batches, const EmbOutputs *o);
/*
 * Table @i's rows in a checked @o: returns row 0 and sets *stride. Call for i = 0, 1, ...
 * in order with one @col, set to 0 before the first call (the concat column so far).
 */
float *emb__outputs_next(const EmbOutputs *o, EmbTable *const *tables, int64_t i, int64_t *col,
                         int64_t *stride);

#endif
