/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dlrm.h — what the parts of examples/dlrm_train.c share: the options (args.c), the MLPs
 * (mlp.c), the model and its step (model.c), the data and the metrics (data.c), the
 * training loop (loop.c); main() and the export in dlrm_train.c.
 */
#ifndef DLRM_DLRM_H
#define DLRM_DLRM_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <embtables/collection.h>
#include <embtables/embtables.h>

#include "../criteo.h"

enum { NT = CRITEO_NCAT, NV = NT + 1, NINTER = NV * (NV - 1) / 2, MAXL = 8 };

#define CHECK(call)                                                                                \
    do {                                                                                           \
        const int r_ = (call);                                                                     \
        if (r_ != 0) {                                                                             \
            fprintf(stderr, "dlrm_train: %s:%d: %s: %s\n", __FILE__, __LINE__, emb_strerror(r_),   \
                    emb_last_error());                                                             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#ifdef _OPENMP
#define PRAGMA(x) _Pragma(#x)
#define OMP(x) PRAGMA(omp x)
#else
#define OMP(x) /* without OpenMP the loops run on the calling thread */
#endif

/* Exits with status 2 after a message "dlrm_train: MSG ARG" (ARG may be NULL). */
void die(const char *msg, const char *arg);
/* calloc() or die. */
void *xcalloc(size_t n, size_t size);
/* CLOCK_MONOTONIC, in seconds. */
double now(void);

/* ---- options ----------------------------------------------------------------------------- */

typedef struct Args {
    const char *train, *test, *ckpt_dir;
    int epochs, dim, threads, reader_threads, resume, hash;
    EmbOptimizerKind opt;    /* the tables' optimizer (--optimizer) */
    EmbOptimizerConfig lowp; /* --state-dtype, --stochastic-rounding: its two fields */
    int64_t batch, max_ind_range, sizes[NT];
    EmbDtype emb_dtype;   /* the tables' element type (--emb-dtype) */
    const char *tier_dir; /* --tier-dir: tables of more than --tier-min rows tiered there */
    double tier_cache;    /* --tier-cache: each tiered table's cache, a fraction of its rows */
    int64_t tier_min;
    int no_prefetch;       /* --no-prefetch: tiered tables read a step's misses in its lookup */
    int max_ind_range_set; /* --max-ind-range given: it caps --table-sizes too */
    double progress_every; /* seconds between progress lines (0: 0.5 on a terminal, else 30) */
    int64_t eval_every, eval_samples; /* steps between held-out evaluations; their samples */
    int early_stop;                   /* stop when the held-out AUC falls */
    int64_t ckpt_every_steps;         /* --checkpoint-every N (steps) */
    double ckpt_every_s;              /* --checkpoint-every Nm (minutes, here in seconds) */
    const char *export_path;          /* --export: the serving file written at the end */
    EmbDtype export_dtype;            /* --export-dtype (int8) */
    int bf16_exchange; /* --bf16-exchange: pooled rows and their gradients rounded to bf16 */
    float lr;
    uint64_t seed;
    int bot[MAXL], nbot, top[MAXL], ntop; /* hidden sizes (bottom ends with D, top with 1) */
} Args;
/* Parses the command line into @p a (exits on bad options: 2, or 0 for --help). */
void parse_args(int argc, char **argv, Args *a);

/* Threads of the example's own loops and GEMMs: the strategy's, in one OpenMP team, so
 * that the library's lookups and updates and the MLPs share one pool of threads (a second
 * pool, OpenBLAS's, would fight it for the cores: OpenBLAS runs single-threaded here). */
extern int nthreads;

/* The MLPs and the interaction run on blocks of BLOCK rows (samples), a block per
 * single-threaded BLAS call: a row's result depends on its block, never on the thread
 * count, so every thread count gives the same bits. A step runs four parallel regions of
 * its own (bottom forward; interaction + top forward; top backward + interaction
 * backward, then the top's update; bottom backward, then its update), each block taking
 * every layer at once: one wake-up of the team where a region per GEMM took ~20. */
enum { BLOCK = 64 };

static inline int min_int(int64_t a, int64_t b)
{
    return (int)(a < b ? a : b);
}

typedef struct Mlp {
    int nlayers, relu_last;
    int dims[MAXL + 1];       /* dims[0] inputs, dims[l + 1] outputs of layer l */
    float *w[MAXL], *b[MAXL]; /* w: dims[l+1] rows of dims[l] (stride ldw), b: dims[l+1] */
    int64_t ldw[MAXL];
    const float *act[MAXL + 1]; /* act[0] the input, act[l + 1] layer l's output */
    int64_t ld[MAXL + 1];
    float *own[MAXL + 1]; /* buffers of the hidden activations */
    float *gz[MAXL];      /* dL/d(pre-activation) of layer l (batch x dims[l+1]),
                             kept for the update */
    float *g[2];          /* dL/d(input) of the layers, in turn (batch rows of
                             widest: a block's rows are the same for every layer) */
    int widest;
} Mlp;

/* Layers fout of @p outs (n of them) after @p in inputs, parameters "PREFIX.L.weight" and
 * "PREFIX.L.bias" in @p store, initialised as the file comment of dlrm_train.c says. */
void mlp_init(Mlp *m, EmbStore *store, const char *prefix, int in, const int *outs, int n,
              int relu_last, int64_t batch, int first_layer, uint64_t seed);
void mlp_free(Mlp *m);
void mlp_forward_block(Mlp *m, int64_t r0, int n);
void mlp_backward_block(Mlp *m, int64_t r0, int n, const float *dout, int64_t dld, float *din,
                        int64_t ldin);
void mlp_update(Mlp *m, int64_t rows, float lr);

typedef struct Model {
    const Args *a;
    int D;
    int64_t width, B;   /* Z row: NV * D */
    EmbStore *store;    /* every parameter: the tables and the MLPs' */
    EmbCollection *emb; /* the 26 tables (borrowed from the store) of a step */
    Mlp bot, top;
    float *rows, *drows, *r, *dr, *logit, *dlogit;
    EmbBatch batches[NT];
} Model;

/* The team of a step's region: every thread when the batch has two blocks or more. */
#define TEAM(n) OMP(parallel num_threads(nthreads) if (nthreads > 1 && (n) > BLOCK))
#define BLOCKS(n) (((n) + BLOCK - 1) / BLOCK)

void model_init(Model *m, const Args *a);
void model_free(Model *m);
/* Forward of a batch: logits of its n samples into m->logit. */
void forward(Model *m, const CriteoBatch *b);
/* -log sigmoid(z) if y else -log(1 - sigmoid(z)) */
double bce(float z, float y);
/* One SGD step on a batch; returns its summed loss. @p next (or NULL): the next batch,
 * whose rows tiered tables start reading while this step computes (a hint: same bits). */
double train_step(Model *m, const CriteoBatch *b, const CriteoBatch *next);

typedef struct BadLines {
    const char *path;
    int64_t n, first; /* bad lines, and the first one's number */
} BadLines;

/* A reader of @p path (the batch, sizes and reader threads of @p a); bad lines reported
 * into @p bad. Exits on an error. */
CriteoReader *open_data(const Args *a, const char *path, BadLines *bad);
/* Closes the reader; a file that gave no sample at all stops the run (exit 2) with a
 * message naming it and the line where its trouble starts. */
void close_data(CriteoReader **r, const BadLines *bad, int64_t samples);
/* The next batch into @p b: 1, or 0 at the end of the file; exits on an error. */
int next_batch(CriteoReader *r, CriteoBatch *b, const char *path);
/* AUC and mean log loss on the test file's first @limit samples (0: all of them). */
void evaluate(Model *m, int64_t limit, double *auc_out, double *logloss);
/* The steps (batches) trained before: 0, or the latest checkpoint's global step. */
int64_t restore(Model *m);

typedef struct Run {
    Model *m;
    const Args *a;
    EmbSaver *saver, *best; /* --checkpoint-dir: the latest checkpoints; DIR/best */
    int64_t step;           /* batches trained in all: the checkpoints' global step */
    int64_t skip;           /* batches a resumed run passes over (trained before) */
    double last_ckpt;       /* now() at the last checkpoint */
    double best_auc;        /* the best held-out AUC so far (--eval-every) */
    int64_t best_step;
    int stop; /* --early-stop: the held-out AUC fell */
    int tty;
    double progress_every, last_progress;
} Run;

/* One epoch over the training file; returns the samples trained (0 when a resumed run
 * passed over the whole epoch). With tiered tables (unless --no-prefetch) each step
 * prefetches the next batch's rows. */
int64_t epoch_run(Run *run, int epoch, double *seconds);

#endif
