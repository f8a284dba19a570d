/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dlrm_train.c — DLRM (Naumov et al. 2019; facebookresearch/dlrm) trained on Criteo-format
 * click logs, the training loop to copy.
 *
 *   dense (13) -> bottom MLP -> x (D) ---------------------------.
 *   C1 .. C26 -> 26 tables (an EmbCollection's forward) -> e_1 .. e_26 (D each)
 *   Z = [x | e_1 | .. | e_26]  (one row of 27 D per sample: the lookup's concat output, x
 *                               written by the bottom MLP into the prependrows columns)
 *   R = [x | <Z_i, Z_j> for 0 <= j < i <= 26]  (dot interaction, DLRM's order)
 *   top MLP -> logit -> sigmoid, binary cross-entropy
 *
 * MLP layers are cblas_sgemm calls (ReLU after each but the top's last), trained by SGD,
 * split over the same OpenMP threads as the library's strategy; the tables by the
 * collection's backward (its fused optimizer, Adagrad or SGD, deduplicated).
 * Every parameter lives in one EmbStore (the MLP weights as tables of `out` columns of
 * `in` features), so one checkpoint holds the whole model with the tables' optimizer
 * state; training resumes at the epoch after the latest checkpoint. The reader (criteo.h)
 * parses the next batches on its own threads while a batch trains.
 *
 * Initialisation is counter-based (store.h), so examples/dlrm_torch.py starts from the
 * very same weights: table t (C{t+1}) uniform in ±sqrt(1/rows) with seed `seed + t`;
 * layer l (bottom layers first, then top) weight uniform in ±sqrt(6/(in+out)), seed
 * `seed + 100 + l`, bias uniform in ±sqrt(3/out), seed `seed + 200 + l` (DLRM's
 * variances, uniform instead of normal).
 *
 * The last line of stdout is `test auc=<x> logloss=<y> samples_per_s=<z>`: exact AUC
 * (sorted, ties counted one half), mean log loss, training samples per second.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime, under -std=c11 */
#endif
#include <cblas.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <embtables/collection.h>
#include <embtables/embtables.h>

#include "criteo.h"
#include "dlrm_blas.h"
#include "dlrm_export.h"

enum { NT = CRITEO_NCAT, NV = NT + 1, NINTER = NV * (NV - 1) / 2, MAXL = 8 };

#define CHECK(call)                                                                        \
    do {                                                                                   \
        const int r_ = (call);                                                             \
        if (r_ != 0) {                                                                     \
            fprintf(stderr, "dlrm_train: %s:%d: %s: %s\n", __FILE__, __LINE__,             \
                    emb_strerror(r_), emb_last_error());                                   \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#ifdef _OPENMP
#define PRAGMA(x) _Pragma(#x)
#define OMP(x) PRAGMA(omp x)
#else
#define OMP(x) /* without OpenMP the loops run on the calling thread */
#endif

static void die(const char *msg, const char *arg)
{
    fprintf(stderr, "dlrm_train: %s%s\n", msg, arg ? arg : "");
    exit(2);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        die("out of memory", NULL);
    return p;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- options ----------------------------------------------------------------------------- */

typedef struct Args {
    const char *train, *test, *ckpt_dir;
    int epochs, dim, threads, reader_threads, resume, hash;
    EmbOptimizerKind opt; /* the tables' optimizer (--optimizer) */
    EmbOptimizerConfig lowp; /* --state-dtype, --stochastic-rounding: its two fields */
    int64_t batch, max_ind_range, sizes[NT];
    EmbDtype emb_dtype; /* the tables' element type (--emb-dtype) */
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

static const char usage[] =
    "usage: dlrm_train --train FILE --test FILE [--epochs N (1)] [--batch B (128)]\n"
    "         [--dim D (16)] [--max-ind-range N (100000)] [--table-sizes N,N,..(26)]\n"
    "         [--hash] [--optimizer sgd|adagrad|adam (adagrad)] [--lr X (0.2)] [--threads T (0: cores)]\n"
    "         [--state-dtype f32|f16|bf16 (f32)] [--stochastic-rounding]\n"
    "         [--reader-threads T (2)] [--bot 512-256-64] [--top 512-256] [--seed S (1)]\n"
    "         [--emb-dtype f32|f16|bf16|int8|int4 (f32)] [--checkpoint-dir DIR] [--resume]\n"
    "         [--tier-dir DIR [--tier-cache F (0.1)] [--tier-min ROWS (10000)] [--no-prefetch]]\n"
    "         [--checkpoint-every STEPS | MINUTESm] [--eval-every STEPS [--eval-samples N]\n"
    "         [--early-stop]] [--progress-every SECONDS (0.5 on a terminal, else 30)]\n"
    "         [--export FILE [--export-dtype int8|int4|f32 (int8)]] [--bf16-exchange]\n"
    "The defaults train a real model in one pass: Adagrad on the tables (SGD on the\n"
    "MLPs), lr 0.2. On scripts/criteo_gen.py's 200k / 40k rows they beat a hashed\n"
    "logistic regression (scripts/criteo_linear.py); SGD at DLRM's lr 0.1 needs 2 epochs\n"
    "or more for that. Criteo Kaggle: --train on train.txt's first 6/7 of lines, --test on\n"
    "the rest (test.txt has no labels); Terabyte: day_0 .. day_22 (concatenated) as --train,\n"
    "day_23 as --test, --max-ind-range 10000000 (DLRM's); the README has the details.\n"
    "--emb-dtype int8 / int4: row-wise quantized tables (the initial rows quantized to\n"
    "nearest; each update in f32, stored again with stochastic rounding).\n"
    "--state-dtype: the tables' optimizer state in 16 bits (half its bytes);\n"
    "--stochastic-rounding: f16 / bf16 rows and state rounded stochastically.\n"
    "--tier-dir: the tables of more than --tier-min rows are tiered tables (tiered.h) in\n"
    "DIR, with a DRAM cache of --tier-cache of their rows: the model trains to the bits\n"
    "of the in-memory run; each step prefetches the next batch's rows (--no-prefetch: not).\n"
    "FILEs are plain or gzip-compressed (.gz, where built with zlib). --checkpoint-dir\n"
    "keeps the latest checkpoints (each epoch's end, and every --checkpoint-every steps or\n"
    "minutes); --resume continues from the latest, bit for bit. --eval-every: the test AUC\n"
    "and log loss every STEPS steps (on its first --eval-samples samples, default all),\n"
    "the best model kept in DIR/best; a warning when the AUC falls (CTR models overfit\n"
    "after their first epoch), and with --early-stop the training stops there.\n"
    "--export: at the end the 26 tables are written to FILE for serving (no optimizer\n"
    "state, rows quantized to --export-dtype), mapped back and the test set scored\n"
    "through them too (the `export:` line, before the last one).\n";

static EmbDtype parse_dtype(const char *s)
{
    static const EmbDtype all[] = {EMB_F32, EMB_F16, EMB_BF16, EMB_INT8, EMB_INT4};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(s, emb_dtype_name(all[i])))
            return all[i];
    die("--emb-dtype is f32, f16, bf16, int8 or int4, not ", s);
    return EMB_F32;
}

static int parse_list(const char *s, int *out, int cap)
{
    int n = 0;
    while (*s) {
        char *end;
        const long v = strtol(s, &end, 10);
        if (end == s || v <= 0 || v > 65536 || n == cap)
            die("bad layer list: ", s);
        out[n++] = (int)v;
        s = *end ? end + 1 : end;
    }
    return n;
}

static int64_t parse_i64(const char *s, int64_t lo, int64_t hi, const char *what)
{
    char *end;
    errno = 0;
    const long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        die(what, s);
    return v;
}

/* --table-sizes: 26 positive numbers, comma-separated. */
static void parse_sizes(const char *arg, int64_t sizes[NT])
{
    const char *s = arg;
    for (int t = 0; t < NT; t++) {
        char *end;
        const long long v = strtoll(s, &end, 10);
        if (end == s || v <= 0 || (t < NT - 1 && *end != ','))
            die("--table-sizes wants 26 positive numbers, comma-separated: ", arg);
        sizes[t] = v;
        s = end + (t < NT - 1);
    }
}

/* A file that can be read again (not a pipe, FIFO or device); a missing one counts as
 * one (its open names it). */
static int regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) != 0 || S_ISREG(st.st_mode);
}

/* --checkpoint-every: N steps, or N minutes written Nm. */
static void parse_every(const char *arg, Args *a)
{
    char *end;
    const double v = strtod(arg, &end);
    if (end != arg && !strcmp(end, "m") && v > 0 && v < 1e6) {
        a->ckpt_every_s = 60 * v;
        return;
    }
    a->ckpt_every_steps = parse_i64(arg, 1, INT64_MAX,
                                    "--checkpoint-every is N (steps) or Nm (minutes), not ");
}

static void parse_args(int argc, char **argv, Args *a)
{
    static const struct option opts[] = {
        {"train", 1, 0, 'a'}, {"test", 1, 0, 'b'}, {"epochs", 1, 0, 'e'}, {"batch", 1, 0, 'B'},
        {"dim", 1, 0, 'd'}, {"max-ind-range", 1, 0, 'm'}, {"table-sizes", 1, 0, 'S'},
        {"hash", 0, 0, 'H'}, {"optimizer", 1, 0, 'o'}, {"lr", 1, 0, 'l'}, {"threads", 1, 0, 't'},
        {"reader-threads", 1, 0, 'r'}, {"bot", 1, 0, 'x'}, {"top", 1, 0, 'y'},
        {"seed", 1, 0, 's'}, {"checkpoint-dir", 1, 0, 'c'}, {"resume", 0, 0, 'R'},
        {"emb-dtype", 1, 0, 'T'}, {"tier-dir", 1, 0, 'D'}, {"tier-cache", 1, 0, 'C'},
        {"tier-min", 1, 0, 'M'}, {"checkpoint-every", 1, 0, 'K'}, {"eval-every", 1, 0, 'E'},
        {"eval-samples", 1, 0, 'N'}, {"early-stop", 0, 0, 'X'}, {"progress-every", 1, 0, 'P'},
        {"state-dtype", 1, 0, 'Z'}, {"stochastic-rounding", 0, 0, 'Y'},
        {"export", 1, 0, 'O'}, {"export-dtype", 1, 0, 'Q'}, {"bf16-exchange", 0, 0, 'G'},
        {"no-prefetch", 0, 0, 'F'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    *a = (Args){.epochs = 1, .dim = 16, .batch = 128, .max_ind_range = 100000, .lr = 0.2f, .opt = EMB_OPT_ADAGRAD,
                .reader_threads = 2, .seed = 1, .bot = {512, 256, 64}, .nbot = 3,
                .top = {512, 256}, .ntop = 2, .tier_cache = 0.1, .tier_min = 10000,
                .export_dtype = EMB_INT8};
    int64_t table_sizes[NT] = {0};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'a': a->train = optarg; break;
        case 'O': a->export_path = optarg; break;
        case 'Q':
            a->export_dtype = parse_dtype(optarg);
            if (a->export_dtype != EMB_F32 && a->export_dtype != EMB_INT8 &&
                a->export_dtype != EMB_INT4)
                die("--export-dtype is int8, int4 or f32, not ", optarg);
            break;
        case 'b': a->test = optarg; break;
        case 'e': a->epochs = (int)parse_i64(optarg, 0, 1000000, "bad --epochs: "); break;
        case 'B': a->batch = parse_i64(optarg, 1, 1 << 20, "bad --batch: "); break;
        case 'd': a->dim = (int)parse_i64(optarg, 1, 4096, "bad --dim: "); break;
        case 'm':
            a->max_ind_range = parse_i64(optarg, 1, INT64_C(1) << 40, "bad --max-ind-range: ");
            a->max_ind_range_set = 1;
            break;
        case 'S': parse_sizes(optarg, table_sizes); break;
        case 'H': a->hash = 1; break;
        case 'o':
            if (strcmp(optarg, "sgd") && strcmp(optarg, "adagrad") && strcmp(optarg, "adam"))
                die("--optimizer is sgd, adagrad or adam, not ", optarg);
            a->opt = !strcmp(optarg, "sgd") ? EMB_OPT_SGD
                     : !strcmp(optarg, "adam") ? EMB_OPT_ADAM : EMB_OPT_ADAGRAD;
            break;
        case 'Z':
            a->lowp.state_dtype = parse_dtype(optarg);
            if (a->lowp.state_dtype > EMB_BF16)
                die("--state-dtype is f32, f16 or bf16, not ", optarg);
            break;
        case 'Y': a->lowp.stochastic_rounding = 1; break;
        case 'G': a->bf16_exchange = 1; break;
        case 'l': {
            char *end;
            a->lr = strtof(optarg, &end);
            if (*end || !(a->lr > 0))
                die("bad --lr: ", optarg);
            break;
        }
        case 't': a->threads = (int)parse_i64(optarg, 0, 4096, "bad --threads: "); break;
        case 'r': a->reader_threads = (int)parse_i64(optarg, 1, 64, "bad --reader-threads: "); break;
        case 'x': a->nbot = parse_list(optarg, a->bot, MAXL - 2); break;
        case 'y': a->ntop = parse_list(optarg, a->top, MAXL - 2); break;
        case 's': a->seed = (uint64_t)parse_i64(optarg, 0, INT64_MAX, "bad --seed: "); break;
        case 'c': a->ckpt_dir = optarg; break;
        case 'R': a->resume = 1; break;
        case 'T': a->emb_dtype = parse_dtype(optarg); break;
        case 'D': a->tier_dir = optarg; break;
        case 'C': {
            char *end;
            a->tier_cache = strtod(optarg, &end);
            if (*end || !(a->tier_cache > 0 && a->tier_cache <= 1))
                die("--tier-cache is a fraction in (0, 1], not ", optarg);
            break;
        }
        case 'M': a->tier_min = parse_i64(optarg, 0, INT64_MAX, "bad --tier-min: "); break;
        case 'F': a->no_prefetch = 1; break;
        case 'K': parse_every(optarg, a); break;
        case 'E': a->eval_every = parse_i64(optarg, 1, INT64_MAX, "bad --eval-every: "); break;
        case 'N': a->eval_samples = parse_i64(optarg, 1, INT64_MAX, "bad --eval-samples: "); break;
        case 'X': a->early_stop = 1; break;
        case 'P': {
            char *end;
            a->progress_every = strtod(optarg, &end);
            if (*end || !(a->progress_every > 0 && a->progress_every < 1e6))
                die("--progress-every is a number of seconds > 0, not ", optarg);
            break;
        }
        case 'h': fputs(usage, stdout); exit(0);
        default: fputs(usage, stderr); exit(2);
        }
    }
    if (!a->train || !a->test || optind < argc) {
        fputs(usage, stderr);
        exit(2);
    }
    if (a->resume && !a->ckpt_dir)
        die("--resume needs --checkpoint-dir", NULL);
    if ((a->ckpt_every_steps || a->ckpt_every_s > 0) && !a->ckpt_dir)
        die("--checkpoint-every needs --checkpoint-dir", NULL);
    if ((a->early_stop || a->eval_samples) && !a->eval_every)
        die("--early-stop and --eval-samples need --eval-every", NULL);
    /* a pipe (or /dev/fd/N of a shell's <(zcat ..)) can be read once */
    if (a->epochs > 1 && !regular_file(a->train))
        die("--epochs > 1 reads --train again: it must be a file, not a pipe: ", a->train);
    if (a->eval_every && !regular_file(a->test))
        die("--eval-every reads --test again: it must be a file, not a pipe: ", a->test);
    /* DLRM: min(cardinality, max_ind_range); the default range only where --table-sizes
       gives none (so Kaggle's cardinalities are taken as they are) */
    for (int t = 0; t < NT; t++)
        a->sizes[t] = !table_sizes[t] ? a->max_ind_range
                      : a->max_ind_range_set && a->max_ind_range < table_sizes[t]
                          ? a->max_ind_range
                          : table_sizes[t];
    a->bot[a->nbot++] = a->dim;
    a->top[a->ntop++] = 1;
}

/* ---- MLP: layers of cblas_sgemm, parameters in the store ------------------------------- */

/* Threads of the example's own loops and GEMMs: the strategy's, in one OpenMP team, so
 * that the library's lookups and updates and the MLPs share one pool of threads (a second
 * pool, OpenBLAS's, would fight it for the cores: OpenBLAS runs single-threaded here). */
static int nthreads = 1;

/* The MLPs and the interaction run on blocks of BLOCK rows (samples), a block per
 * single-threaded BLAS call: a row's result depends on its block, never on the thread
 * count, so every thread count gives the same bits. A step runs four parallel regions of
 * its own (bottom forward; interaction + top forward; top backward + interaction
 * backward, then the top's update; bottom backward, then its update), each block taking
 * every layer at once: one wake-up of the team where a region per GEMM took ~20. */
enum { BLOCK = 64 };

static int min_int(int64_t a, int64_t b)
{
    return (int)(a < b ? a : b);
}

typedef struct Mlp {
    int nlayers, relu_last;
    int dims[MAXL + 1];           /* dims[0] inputs, dims[l + 1] outputs of layer l */
    float *w[MAXL], *b[MAXL];     /* w: dims[l+1] rows of dims[l] (stride ldw), b: dims[l+1] */
    int64_t ldw[MAXL];
    const float *act[MAXL + 1];   /* act[0] the input, act[l + 1] layer l's output */
    int64_t ld[MAXL + 1];
    float *own[MAXL + 1];         /* buffers of the hidden activations */
    float *gz[MAXL];              /* dL/d(pre-activation) of layer l (batch x dims[l+1]),
                                     kept for the update */
    float *g[2];                  /* dL/d(input) of the layers, in turn (batch rows of
                                     widest: a block's rows are the same for every layer) */
    int widest;
} Mlp;

/* A store table initialised uniform in ±bound; its storage and column stride. */
static float *param(EmbStore *store, const char *name, int64_t rows, int cols, float bound,
                    uint64_t seed, int64_t *stride)
{
    EmbTable *t;
    const EmbVariableSpec v = {.name = name, .ncolumns = rows, .featuresize = cols,
                               .dtype = EMB_F32, .trainable = 1,
                               .init = {EMB_INIT_UNIFORM, -bound, bound, seed}};
    CHECK(emb_store_get(store, &v, EMB_REUSE_NO, &t));
    float *data = emb_table_data(t, stride);
    if (!data)
        die("a parameter table has no contiguous storage: ", name);
    return data;
}

static void mlp_init(Mlp *m, EmbStore *store, const char *prefix, int in, const int *outs,
                     int n, int relu_last, int64_t batch, int first_layer, uint64_t seed)
{
    memset(m, 0, sizeof *m);
    m->nlayers = n;
    m->relu_last = relu_last;
    m->dims[0] = in;
    int widest = in;
    for (int l = 0; l < n; l++) {
        const int fin = m->dims[l], fout = outs[l];
        char name[64];
        int64_t unused;
        m->dims[l + 1] = fout;
        widest = fout > widest ? fout : widest;
        snprintf(name, sizeof name, "%s.%d.weight", prefix, l);
        m->w[l] = param(store, name, fout, fin, sqrtf(6.0f / (float)(fin + fout)),
                        seed + 100 + (uint64_t)(first_layer + l), &m->ldw[l]);
        snprintf(name, sizeof name, "%s.%d.bias", prefix, l);
        m->b[l] = param(store, name, 1, fout, sqrtf(3.0f / (float)fout),
                        seed + 200 + (uint64_t)(first_layer + l), &unused);
        if (l < n - 1) {
            m->own[l + 1] = xcalloc((size_t)(batch * fout), sizeof(float));
            m->act[l + 1] = m->own[l + 1];
            m->ld[l + 1] = fout;
        }
        m->gz[l] = xcalloc((size_t)(batch * fout), sizeof(float));
    }
    m->widest = widest;
    for (int k = 0; k < 2; k++)
        m->g[k] = xcalloc((size_t)(batch * widest), sizeof(float));
}

static void mlp_free(Mlp *m)
{
    for (int l = 0; l <= m->nlayers; l++)
        free(m->own[l]);
    for (int l = 0; l < m->nlayers; l++)
        free(m->gz[l]);
    free(m->g[0]);
    free(m->g[1]);
}

static int relu_after(const Mlp *m, int l)
{
    return l < m->nlayers - 1 || m->relu_last;
}

/* Rows [r0, r0 + n) of every layer: act[l + 1] = relu(act[l] W_l^T + b_l); act[0] and
 * the last output (act[nlayers], ld[nlayers]) are set by the caller. */
static void mlp_forward_block(Mlp *m, int64_t r0, int n)
{
    for (int l = 0; l < m->nlayers; l++) {
        const int fin = m->dims[l], fout = m->dims[l + 1];
        const int64_t ldy = m->ld[l + 1];
        float *y = (float *)m->act[l + 1] + r0 * ldy;
        for (int s = 0; s < n; s++)
            memcpy(y + s * ldy, m->b[l], (size_t)fout * sizeof(float));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, fout, fin, 1.0f,
                    m->act[l] + r0 * m->ld[l], (int)m->ld[l], m->w[l], (int)m->ldw[l], 1.0f,
                    y, (int)ldy);
        if (!relu_after(m, l))
            continue;
        for (int s = 0; s < n; s++) {
            float *ys = y + s * ldy;
            OMP(simd)
            for (int j = 0; j < fout; j++)
                ys[j] = ys[j] > 0 ? ys[j] : 0;
        }
    }
}

/* One row: gz = g where the layer's output y > 0 (ReLU), or g. */
static void relu_grad(float *restrict gz, const float *restrict g, const float *restrict y,
                      int relu, int n)
{
    if (!relu) {
        memcpy(gz, g, (size_t)n * sizeof(float));
        return;
    }
    OMP(simd)
    for (int j = 0; j < n; j++) {
        const float v = g[j]; /* read whatever y says: a select, not a branch (SSE2 too) */
        gz[j] = y[j] > 0 ? v : 0.0f;
    }
}

/* Rows [r0, r0 + n) of the backward from dL/d(output) (ld dld): every layer's gz, and
 * dL/d(input) into din (ld ldin) when din is not NULL. The weights are the ones of the
 * forward: mlp_update changes them after every row's backward, as autograd +
 * optimizer.step() do. */
static void mlp_backward_block(Mlp *m, int64_t r0, int n, const float *dout, int64_t dld,
                               float *din, int64_t ldin)
{
    const float *g = dout + r0 * dld;
    int64_t ldg = dld;
    for (int l = m->nlayers - 1; l >= 0; l--) {
        const int fin = m->dims[l], fout = m->dims[l + 1];
        float *gz = m->gz[l] + r0 * fout;
        const float *y = m->act[l + 1] + r0 * m->ld[l + 1];
        for (int s = 0; s < n; s++)
            relu_grad(gz + s * fout, g + s * ldg, y + s * m->ld[l + 1], relu_after(m, l), fout);
        float *gx = l > 0 ? m->g[l & 1] + r0 * m->widest : din ? din + r0 * ldin : NULL;
        const int64_t ldx = l > 0 ? m->widest : ldin;
        if (gx)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, fin, fout, 1.0f, gz,
                        fout, m->w[l], (int)m->ldw[l], 0.0f, gx, (int)ldx);
        g = gx;
        ldg = ldx;
    }
}

/* b[j] -= lr sum_s gz[s][j] for the n columns j of one block; the sum over the batch's
 * rows in order, so any thread count gives the same bits. */
static void bias_update(float *restrict b, const float *restrict gz, int ldz, int64_t rows,
                        int n, float lr)
{
    float acc[BLOCK] = {0};
    for (int64_t s = 0; s < rows; s++) {
        const float *z = gz + s * ldz;
        OMP(simd)
        for (int j = 0; j < n; j++)
            acc[j] += z[j];
    }
    for (int j = 0; j < n; j++)
        b[j] -= lr * acc[j];
}

/* SGD on every layer after the backward of all @rows rows: W_l -= lr gz_l^T act_l and the
 * bias, in blocks of BLOCK output units spread over the enclosing team (an orphaned
 * OpenMP for: called inside a parallel region; outside one, on the calling thread). */
static void mlp_update(Mlp *m, int64_t rows, float lr)
{
    int first[MAXL + 1] = {0};
    for (int l = 0; l < m->nlayers; l++)
        first[l + 1] = first[l] + (m->dims[l + 1] + BLOCK - 1) / BLOCK;
    OMP(for schedule(dynamic, 1))
    for (int k = 0; k < first[m->nlayers]; k++) {
        int l = 0;
        while (k >= first[l + 1])
            l++;
        const int fin = m->dims[l], fout = m->dims[l + 1], j0 = BLOCK * (k - first[l]);
        const int n = min_int(BLOCK, fout - j0);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, fin, (int)rows, -lr,
                    m->gz[l] + j0, fout, m->act[l], (int)m->ld[l], 1.0f,
                    m->w[l] + j0 * m->ldw[l], (int)m->ldw[l]);
        bias_update(m->b[l] + j0, m->gz[l] + j0, fout, rows, n, lr);
    }
}

/* ---- dot interaction ------------------------------------------------------------------ */

/* r = [z_0 | <z_i, z_j> for i = 1..26, j < i] per sample of rows [r0, r0 + n),
 * z_i = row + i D. */
static void interact_forward(const float *rows, int64_t ldrow, int64_t r0, int n, int D,
                             float *r, int64_t ldr)
{
    for (int64_t s = r0; s < r0 + n; s++) {
        const float *z = rows + s * ldrow;
        float *o = r + s * ldr;
        memcpy(o, z, (size_t)D * sizeof(float));
        int64_t k = D;
        for (int i = 1; i < NV; i++)
            for (int j = 0; j < i; j++) {
                float dot = 0;
                for (int d = 0; d < D; d++)
                    dot += z[i * D + d] * z[j * D + d];
                o[k++] = dot;
            }
    }
}

/* drows = dL/dZ from dr = dL/dR, rows [r0, r0 + n); the bottom MLP's share (first D)
 * plus dr's first D columns go to the first D columns of drows, as Z's layout. */
static void interact_backward(const float *rows, int64_t ldrow, int64_t r0, int n, int D,
                              const float *dr, int64_t ldr, float *drows)
{
    for (int64_t s = r0; s < r0 + n; s++) {
        const float *z = rows + s * ldrow, *g = dr + s * ldr;
        float *dz = drows + s * ldrow;
        memcpy(dz, g, (size_t)D * sizeof(float));
        memset(dz + D, 0, (size_t)(NV - 1) * (size_t)D * sizeof(float));
        int64_t k = D;
        for (int i = 1; i < NV; i++)
            for (int j = 0; j < i; j++) {
                const float c = g[k++];
                for (int d = 0; d < D; d++) {
                    dz[i * D + d] += c * z[j * D + d];
                    dz[j * D + d] += c * z[i * D + d];
                }
            }
    }
}

/* ---- the model -------------------------------------------------------------------------- */

typedef struct Model {
    const Args *a;
    int D;
    int64_t width, B;             /* Z row: NV * D */
    EmbStore *store;              /* every parameter: the tables and the MLPs' */
    EmbCollection *emb;           /* the 26 tables (borrowed from the store) of a step */
    Mlp bot, top;
    float *rows, *drows, *r, *dr, *logit, *dlogit;
    EmbBatch batches[NT];
} Model;

static void model_init(Model *m, const Args *a)
{
    memset(m, 0, sizeof *m);
    m->a = a;
    m->D = a->dim;
    m->B = a->batch;
    m->width = (int64_t)NV * a->dim;
    CHECK(emb_store_create(&m->store));
    EmbCollectionTable tables[NT];
    for (int t = 0; t < NT; t++) {
        char name[16];
        snprintf(name, sizeof name, "C%d", t + 1);
        const float bound = (float)sqrt(1.0 / (double)a->sizes[t]);
        /* a large table tiered (--tier-dir): its file, a cache of a fraction of its records
           (row padded to 16 bytes + the optimizer's state), room for that state */
        char path[4096];
        EmbTieredSpec ts = {.path = path};
        const int tier = a->tier_dir && a->sizes[t] > a->tier_min;
        if (tier) {
            snprintf(path, sizeof path, "%s/%s.tier", a->tier_dir, name);
            const int32_t sw = emb_optimizer_state_width(a->opt, a->dim);
            const int64_t rec = ((int64_t)emb_dtype_row_bytes(a->emb_dtype, a->dim) + 15) / 16 * 16 +
                                4 * (int64_t)sw;
            ts.options.state_width = sw;
            ts.options.cache_bytes = rec * (int64_t)ceil(a->tier_cache * (double)a->sizes[t]);
        }
        const EmbVariableSpec v = {.name = name, .ncolumns = a->sizes[t], .featuresize = a->dim,
                                   .dtype = a->emb_dtype, .trainable = 1,
                                   .init = {EMB_INIT_UNIFORM, -bound, bound, a->seed + (uint64_t)t},
                                   .tiered = tier ? &ts : NULL};
        tables[t] = (EmbCollectionTable){.pooling = EMB_POOLING_SUM};
        CHECK(emb_store_get(m->store, &v, EMB_REUSE_NO, &tables[t].table));
    }
    EmbOptimizerConfig oc = emb_optimizer_defaults(a->opt, a->lr);
    oc.state_dtype = a->lowp.state_dtype;
    oc.stochastic_rounding = a->lowp.stochastic_rounding;
    const EmbCollectionOptions co = {.strategy_options = {.nthreads = a->threads},
                                     .optimizer = &oc, .prependrows = a->dim};
    CHECK(emb_collection_create(&m->emb, tables, NT, &co));
    mlp_init(&m->bot, m->store, "bot", CRITEO_NDENSE, a->bot, a->nbot, 1, m->B, 0, a->seed);
    mlp_init(&m->top, m->store, "top", a->dim + NINTER, a->top, a->ntop, 0, m->B, a->nbot,
             a->seed);
    const size_t B = (size_t)m->B;
    m->rows = xcalloc(B * (size_t)m->width, sizeof(float));
    m->drows = xcalloc(B * (size_t)m->width, sizeof(float));
    m->r = xcalloc(B * (size_t)(a->dim + NINTER), sizeof(float));
    m->dr = xcalloc(B * (size_t)(a->dim + NINTER), sizeof(float));
    m->logit = xcalloc(B, sizeof(float));
    m->dlogit = xcalloc(B, sizeof(float));
    /* the MLPs' ends: the bottom writes x into Z's first D columns, the top reads R */
    m->bot.act[m->bot.nlayers] = m->rows;
    m->bot.ld[m->bot.nlayers] = m->width;
    m->top.act[0] = m->r;
    m->top.ld[0] = a->dim + NINTER;
    m->top.act[m->top.nlayers] = m->logit;
    m->top.ld[m->top.nlayers] = 1;
}

static void model_free(Model *m)
{
    emb_collection_destroy(&m->emb); /* before the store that holds its tables */
    emb_store_destroy(&m->store);
    mlp_free(&m->bot);
    mlp_free(&m->top);
    free(m->rows);
    free(m->drows);
    free(m->r);
    free(m->dr);
    free(m->logit);
    free(m->dlogit);
}

/* The team of a step's region: every thread when the batch has two blocks or more. */
#define TEAM(n) OMP(parallel num_threads(nthreads) if (nthreads > 1 && (n) > BLOCK))
#define BLOCKS(n) (((n) + BLOCK - 1) / BLOCK)

/*
 * --bf16-exchange: what the MPI ensemble's bf16 exchange (dist.h, EmbDistOptions::
 * exchange_bf16) does to one process's training, without MPI: the pooled rows and their
 * gradients rounded to bf16. The rounding is emb_dist_bf16_round()'s, bit for bit (nearest,
 * ties to even, NaN kept quiet), written here because this example does not link MPI.
 */
static float bf16_round(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        u |= 0x400000u;
    else
        u += 0x7fffu + ((u >> 16) & 1);
    u &= 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

/* The n rows' @p w embedding columns of concat output @p o, rounded to bf16. */
static void round_bf16_cols(const EmbOutputs *o, int64_t n, int64_t w)
{
    for (int64_t r = 0; r < n; r++)
        for (int64_t j = 0; j < w; j++) {
            float *v = o->concat + r * o->concat_stride + o->prependrows + j;
            *v = bf16_round(*v);
        }
}

/* Forward of a batch: logits of its n samples into m->logit. */
static void forward(Model *m, const CriteoBatch *b)
{
    const int64_t n = b->n, ldr = m->D + NINTER;
    m->bot.act[0] = b->dense;
    m->bot.ld[0] = CRITEO_NDENSE;
    TEAM(n)
    OMP(for schedule(static))
    for (int64_t k = 0; k < BLOCKS(n); k++)
        mlp_forward_block(&m->bot, BLOCK * k, min_int(BLOCK, n - BLOCK * k));
    for (int t = 0; t < NT; t++)
        m->batches[t] = (EmbBatch){.ids = b->cat[t], .nnz = n, .nbags = n, .bag_size = 1};
    const EmbOutputs out = emb_collection_concat(m->emb, m->rows);
    CHECK(emb_collection_forward(m->emb, m->batches, &out));
    if (m->a->bf16_exchange)
        round_bf16_cols(&out, n, NT * m->D);
    TEAM(n)
    OMP(for schedule(static))
    for (int64_t k = 0; k < BLOCKS(n); k++) {
        const int rows = min_int(BLOCK, n - BLOCK * k);
        interact_forward(m->rows, m->width, BLOCK * k, rows, m->D, m->r, ldr);
        mlp_forward_block(&m->top, BLOCK * k, rows);
    }
}

static double bce(float z, float y) /* -log sigmoid(z) if y else -log(1 - sigmoid(z)) */
{
    const double x = z;
    return (x > 0 ? x + log1p(exp(-x)) : log1p(exp(x))) - (double)y * x;
}

/* One SGD step on a batch; returns its summed loss. @p next (or NULL): the next batch,
 * whose rows tiered tables start reading while this step computes (a hint: same bits). */
static double train_step(Model *m, const CriteoBatch *b, const CriteoBatch *next)
{
    const int64_t n = b->n;
    forward(m, b);
    if (next) {
        EmbBatch nb[NT];
        for (int t = 0; t < NT; t++)
            nb[t] =
                (EmbBatch){.ids = next->cat[t], .nnz = next->n, .nbags = next->n, .bag_size = 1};
        CHECK(emb_collection_prefetch(m->emb, nb));
    }
    double loss = 0;
    for (int64_t s = 0; s < n; s++) {
        const double p = 1.0 / (1.0 + exp(-(double)m->logit[s]));
        loss += bce(m->logit[s], b->label[s]);
        m->dlogit[s] = (float)((p - b->label[s]) / (double)n);
    }
    const float lr = m->a->lr;
    const int64_t ldr = m->D + NINTER;
    TEAM(n)
    {
        OMP(for schedule(static))
        for (int64_t k = 0; k < BLOCKS(n); k++) {
            const int rows = min_int(BLOCK, n - BLOCK * k);
            mlp_backward_block(&m->top, BLOCK * k, rows, m->dlogit, 1, m->dr, ldr);
            interact_backward(m->rows, m->width, BLOCK * k, rows, m->D, m->dr, ldr, m->drows);
        }
        mlp_update(&m->top, n, lr);
    }
    const EmbOutputs dout = emb_collection_concat(m->emb, m->drows);
    if (m->a->bf16_exchange)
        round_bf16_cols(&dout, n, NT * m->D);
    CHECK(emb_collection_backward(m->emb, &dout)); /* the tables' gradients and update */
    TEAM(n)
    {
        OMP(for schedule(static))
        for (int64_t k = 0; k < BLOCKS(n); k++)
            mlp_backward_block(&m->bot, BLOCK * k, min_int(BLOCK, n - BLOCK * k), m->drows,
                               m->width, NULL, 0);
        mlp_update(&m->bot, n, lr);
    }
    return loss;
}

/* ---- data, metrics ---------------------------------------------------------------------- */

typedef struct BadLines {
    const char *path;
    int64_t n, first; /* bad lines, and the first one's number */
} BadLines;

static void report_bad(void *user, int64_t line, const char *why)
{
    BadLines *b = user;
    if (b->n == 0)
        b->first = line;
    if (b->n++ < 10)
        fprintf(stderr, "dlrm_train: %s:%lld: skipped: %s\n", b->path, (long long)line, why);
}

static CriteoReader *open_data(const Args *a, const char *path, BadLines *bad)
{
    CriteoOptions o = {.batch = a->batch, .flags = a->hash ? CRITEO_HASH : 0,
                       .nthreads = a->reader_threads, .report = report_bad, .report_user = bad};
    memcpy(o.sizes, a->sizes, sizeof o.sizes);
    *bad = (BadLines){.path = path};
    CriteoReader *r;
    char err[300];
    if (criteo_open(&r, path, &o, err, sizeof err) != 0)
        die(err, NULL);
    return r;
}

/* Closes the reader; a file that gave no sample at all stops the run (exit 2) with a
 * message naming it and the line where its trouble starts. */
static void close_data(CriteoReader **r, const BadLines *bad, int64_t samples)
{
    int64_t lines, nbad;
    criteo_counts(*r, &lines, &nbad);
    criteo_close(r);
    if (bad->n > 10)
        fprintf(stderr, "dlrm_train: %s: %lld bad lines skipped in all\n", bad->path,
                (long long)bad->n);
    if (samples > 0)
        return;
    struct stat st;
    const int fifo = stat(bad->path, &st) == 0 && S_ISFIFO(st.st_mode);
    if (lines == 0)
        fprintf(stderr, "dlrm_train: %s:1: no sample: nothing to read%s\n", bad->path,
                fifo ? " (a pipe is read once: more epochs, or a test file, need a file)" : "");
    else
        fprintf(stderr, "dlrm_train: %s:%lld: no sample: all %lld lines are bad, the first "
                "at this line (its reason above)\n", bad->path, (long long)bad->first,
                (long long)lines);
    exit(2);
}

static int next_batch(CriteoReader *r, CriteoBatch *b, const char *path)
{
    if (criteo_next(r, b) != 0) {
        fprintf(stderr, "dlrm_train: %s: %s\n", path, criteo_error(r));
        exit(2);
    }
    return b->n > 0;
}

typedef struct Scored {
    float score, label;
} Scored;

static int by_score(const void *x, const void *y)
{
    const float a = ((const Scored *)x)->score, b = ((const Scored *)y)->score;
    return (a > b) - (a < b);
}

/* Exact AUC: the Mann-Whitney statistic over the sorted scores, ties counted one half. */
static double auc(Scored *v, int64_t n)
{
    qsort(v, (size_t)n, sizeof *v, by_score);
    double pos = 0, rank_sum = 0;
    for (int64_t i = 0; i < n;) {
        int64_t j = i;
        double tie_pos = 0;
        while (j < n && v[j].score == v[i].score)
            tie_pos += v[j++].label;
        rank_sum += tie_pos * 0.5 * (double)(i + 1 + j); /* mean 1-based rank of the group */
        pos += tie_pos;
        i = j;
    }
    const double neg = (double)n - pos;
    return pos > 0 && neg > 0 ? (rank_sum - pos * (pos + 1) / 2) / (pos * neg) : NAN;
}

/* AUC and mean log loss on the test file's first @limit samples (0: all of them). */
static void evaluate(Model *m, int64_t limit, double *auc_out, double *logloss)
{
    BadLines bad;
    CriteoReader *r = open_data(m->a, m->a->test, &bad);
    int64_t n = 0, cap = 1 << 16;
    Scored *v = xcalloc((size_t)cap, sizeof *v);
    double loss = 0;
    CriteoBatch b;
    while ((limit == 0 || n < limit) && next_batch(r, &b, m->a->test)) {
        forward(m, &b);
        const int64_t take = limit && b.n > limit - n ? limit - n : b.n;
        if (n + take > cap) {
            cap = 2 * (n + take);
            v = realloc(v, (size_t)cap * sizeof *v);
            if (!v)
                die("out of memory", NULL);
        }
        for (int64_t s = 0; s < take; s++) {
            v[n + s] = (Scored){m->logit[s], b.label[s]};
            loss += bce(m->logit[s], b.label[s]);
        }
        n += take;
    }
    close_data(&r, &bad, n);
    *logloss = loss / (double)n;
    *auc_out = auc(v, n);
    free(v);
}

/* ---- checkpoints ----------------------------------------------------------------------- */

/* The steps (batches) trained before: 0, or the latest checkpoint's global step. */
static int64_t restore(Model *m)
{
    char path[4096];
    if (emb_checkpoint_latest(m->a->ckpt_dir, path, sizeof path) != 0) {
        fprintf(stderr, "dlrm_train: no checkpoint in %s, starting afresh\n", m->a->ckpt_dir);
        return 0;
    }
    int64_t step;
    /* the optimizer: Adagrad's accumulators too */
    const EmbRestoreOptions ro = {.optimizer = emb_collection_optimizer(m->emb)};
    CHECK(emb_checkpoint_restore_ex(m->store, path, &ro, &step));
    fprintf(stderr, "dlrm_train: resumed from %s (step %lld done)\n", path, (long long)step);
    return step;
}

/* ---- the training run ------------------------------------------------------------------ */

typedef struct Run {
    Model *m;
    const Args *a;
    EmbSaver *saver, *best; /* --checkpoint-dir: the latest checkpoints; DIR/best */
    int64_t step;           /* batches trained in all: the checkpoints' global step */
    int64_t skip;           /* batches a resumed run passes over (trained before) */
    double last_ckpt;       /* now() at the last checkpoint */
    double best_auc;        /* the best held-out AUC so far (--eval-every) */
    int64_t best_step;
    int stop;               /* --early-stop: the held-out AUC fell */
    int tty;
    double progress_every, last_progress;
} Run;

static void save(Run *run, EmbSaver *saver)
{
    char path[4096];
    CHECK(emb_saver_save(saver, run->m->store, run->step, path, sizeof path));
    run->last_ckpt = now();
}

/* A held-out evaluation (--eval-every): the best model saved; a fall said, and with
 * --early-stop the end of the training. */
static void held_out(Run *run)
{
    double a, loss;
    evaluate(run->m, run->a->eval_samples, &a, &loss);
    printf("step %lld: held-out auc=%.6f logloss=%.6f\n", (long long)run->step, a, loss);
    fflush(stdout);
    if (a > run->best_auc || run->best_step < 0) {
        run->best_auc = a;
        run->best_step = run->step;
        if (run->best)
            save(run, run->best);
        return;
    }
    fprintf(stderr, "dlrm_train: warning: the held-out AUC fell to %.6f from %.6f at step "
            "%lld: the model overfits (CTR models do after their first epoch)%s%s%s\n", a,
            run->best_auc, (long long)run->best_step,
            run->best ? "; the best model is in " : "", run->best ? run->a->ckpt_dir : "",
            run->best ? "/best" : "");
    if (run->a->early_stop) {
        fprintf(stderr, "dlrm_train: stopping (--early-stop)\n");
        run->stop = 1;
    }
}

/* A progress line to stderr: samples, percent of the file and ETA (when its size is
 * known), samples/s and the running loss; redrawn in place on a terminal. */
static void progress(Run *run, CriteoReader *r, int epoch, int64_t samples, double t0,
                     double loss)
{
    const double t = now(), rate = (double)samples / (t - t0 > 0 ? t - t0 : 1e-9);
    int64_t done, total;
    criteo_position(r, &done, &total);
    char where[96] = "";
    if (total > 0 && done > 0) {
        const double f = (double)done / (double)total > 1 ? 1 : (double)done / (double)total;
        const double eta = (t - t0) * (1 - f) / f;
        snprintf(where, sizeof where, " (%.1f %%, ETA %lldm%02llds)", 100 * f,
                 (long long)eta / 60, (long long)eta % 60);
    }
    fprintf(stderr, "%sepoch %d: %lld samples%s, %.0f samples/s, loss %.4f%s", run->tty ? "\r" : "",
            epoch + 1, (long long)samples, where, rate, loss, run->tty ? "   " : "\n");
    fflush(stderr);
    run->last_progress = t;
}

/* One batch: passed over (trained before a resume) or trained (prefetching @p next, if
 * any), then what falls due after it: a checkpoint, a held-out evaluation. Returns the
 * batch's loss, or NAN. */
static double one_batch(Run *run, const CriteoBatch *b, const CriteoBatch *next)
{
    if (run->skip > 0) {
        run->skip--;
        run->step++;
        return NAN;
    }
    const double loss = train_step(run->m, b, next);
    run->step++;
    const Args *a = run->a;
    if ((a->ckpt_every_steps && run->step % a->ckpt_every_steps == 0) ||
        (a->ckpt_every_s > 0 && now() - run->last_ckpt >= a->ckpt_every_s))
        save(run, run->saver);
    if (a->eval_every && run->step % a->eval_every == 0)
        held_out(run);
    return loss;
}

/* A batch kept past the reader's next call, which recycles the batch it returned before:
 * tiered tables prefetch the next batch's rows while this one trains. */
typedef struct HeldBatch {
    CriteoBatch b;
    float *label, *dense;
    int64_t *cat[NT], cap;
} HeldBatch;

static void hold_batch(HeldBatch *h, const CriteoBatch *b)
{
    if (b->n > h->cap) {
        h->cap = b->n;
        h->label = realloc(h->label, (size_t)h->cap * sizeof *h->label);
        h->dense = realloc(h->dense, (size_t)h->cap * CRITEO_NDENSE * sizeof *h->dense);
        if (!h->label || !h->dense)
            die("out of memory", NULL);
        for (int t = 0; t < NT; t++)
            if (!(h->cat[t] = realloc(h->cat[t], (size_t)h->cap * sizeof *h->cat[t])))
                die("out of memory", NULL);
    }
    h->b = *b;
    h->b.label = memcpy(h->label, b->label, (size_t)b->n * sizeof *h->label);
    h->b.dense = memcpy(h->dense, b->dense, (size_t)b->n * CRITEO_NDENSE * sizeof *h->dense);
    for (int t = 0; t < NT; t++)
        h->b.cat[t] = memcpy(h->cat[t], b->cat[t], (size_t)b->n * sizeof *h->cat[t]);
}

static void held_free(HeldBatch *h)
{
    free(h->label);
    free(h->dense);
    for (int t = 0; t < NT; t++)
        free(h->cat[t]);
}

/* One epoch over the training file; returns the samples trained (0 when a resumed run
 * passed over the whole epoch). With tiered tables (unless --no-prefetch) each step
 * prefetches the next batch's rows. */
static int64_t epoch_run(Run *run, int epoch, double *seconds)
{
    BadLines bad;
    CriteoReader *r = open_data(run->a, run->a->train, &bad);
    CriteoBatch next, *bp = &next;
    HeldBatch held = {0};
    const int ahead = run->a->tier_dir && !run->a->no_prefetch;
    double loss = 0, running = NAN;
    int64_t samples = 0, read = 0;
    const double t0 = now();
    run->last_progress = t0;
    int more = next_batch(r, &next, run->a->train);
    while (!run->stop && more) {
        if (ahead) { /* this batch held, the next one read for its prefetch */
            hold_batch(&held, &next);
            bp = &held.b;
            more = next_batch(r, &next, run->a->train);
        }
        const CriteoBatch b = *bp;
        read += b.n;
        const double l = one_batch(run, &b, ahead && more ? &next : NULL);
        if (!ahead)
            more = next_batch(r, &next, run->a->train);
        if (isnan(l))
            continue;
        loss += l;
        samples += b.n;
        running = isnan(running) ? l / (double)b.n : 0.98 * running + 0.02 * l / (double)b.n;
        if (now() - run->last_progress >= run->progress_every)
            progress(run, r, epoch, samples, t0, running);
    }
    *seconds = now() - t0;
    held_free(&held);
    if (run->tty && samples > 0 && run->last_progress > t0)
        fputc('\n', stderr);
    close_data(&r, &bad, read);
    if (samples > 0) {
        printf("epoch %d: %lld samples, train loss %.4f, %.0f samples/s\n", epoch + 1,
               (long long)samples, loss / (double)samples,
               (double)samples / (*seconds > 0 ? *seconds : 1e-9));
        fflush(stdout);
        if (run->saver && !run->stop)
            save(run, run->saver);
    }
    return samples;
}

/* ---- the serving export ------------------------------------------------------------- */

/* --export: the tables written for serving, mapped back, the test set scored through them;
   their size against the f32 rows' and the latest checkpoint's, the AUC against @f32_auc. */
static void export_and_serve(Model *m, double f32_auc)
{
    const Args *a = m->a;
    DlrmServed sv;
    CHECK(dlrm_export(m->emb, NT, a->dim, a->export_dtype, a->export_path, &sv));
    EmbCollection *trained = m->emb;
    m->emb = sv.emb; /* the same concat layout: the forward reads the served rows */
    double served_auc, served_loss;
    evaluate(m, 0, &served_auc, &served_loss);
    m->emb = trained;
    char ckpt[4096] = "", also[160] = "";
    struct stat st;
    if (a->ckpt_dir && emb_checkpoint_latest(a->ckpt_dir, ckpt, sizeof ckpt) == 0 &&
        stat(ckpt, &st) == 0)
        snprintf(also, sizeof also, ", %.1f %% of the latest checkpoint's %lld",
                 100.0 * (double)sv.bytes / (double)st.st_size, (long long)st.st_size);
    printf("export: %s %s: %lld bytes, %.1f %% of the f32 rows' %lld%s; served auc=%.6f "
           "logloss=%.6f (auc %+.6f against the f32 tables)\n", a->export_path,
           emb_dtype_name(a->export_dtype), (long long)sv.bytes,
           100.0 * (double)sv.bytes / (double)sv.f32_bytes, (long long)sv.f32_bytes, also,
           served_auc, served_loss, served_auc - f32_auc);
    dlrm_served_free(&sv);
}

/* ---- main ---------------------------------------------------------------------------- */

/* The run's first line: the model, the threads and the BLAS that runs the MLPs (made
 * single-threaded here, before its first call); a warning when OpenBLAS runs kernels
 * older than the CPU's. */
static void print_header(const Args *a)
{
    char blas[256], warning[512];
    dlrm_blas_init(blas, sizeof blas);
    printf("dlrm_train: D %d %s tables, batch %lld, %d epoch%s, %s lr %g, %d threads; "
           "BLAS: %s\n", a->dim, emb_dtype_name(a->emb_dtype), (long long)a->batch, a->epochs,
           a->epochs == 1 ? "" : "s",
           a->opt == EMB_OPT_SGD ? "sgd" : a->opt == EMB_OPT_ADAM ? "adam" : "adagrad",
           (double)a->lr, nthreads, blas);
    double state = 0; /* the tables' optimizer state, in bytes */
    for (int t = 0; t < NT; t++)
        state += (double)a->sizes[t] * emb_optimizer_state_width(a->opt, a->dim) *
                 (double)emb_dtype_size(a->lowp.state_dtype);
    printf("dlrm_train: optimizer state %.1f MiB (%s)%s\n", state / (1 << 20),
           emb_dtype_name(a->lowp.state_dtype),
           a->lowp.stochastic_rounding ? ", stochastic rounding" : "");
    fflush(stdout);
    if (dlrm_blas_warning(warning, sizeof warning))
        fprintf(stderr, "dlrm_train: warning: %s\n", warning);
}

int main(int argc, char **argv)
{
    Args a;
    parse_args(argc, argv, &a);
    Model m;
    model_init(&m, &a);
    nthreads = emb_strategy_nthreads(emb_collection_strategy(m.emb));
    print_header(&a);

    Run run = {.m = &m, .a = &a, .best_step = -1, .tty = isatty(2), .last_ckpt = now()};
    run.progress_every = a.progress_every > 0 ? a.progress_every : run.tty ? 0.5 : 30;
    if (a.ckpt_dir) {
        /* the saver creates the directory */
        const EmbSaverOptions so = {.max_to_keep = EMB_SAVER_DEFAULT_MAX_TO_KEEP,
                                    .optimizer = emb_collection_optimizer(m.emb)};
        CHECK(emb_saver_create(&run.saver, a.ckpt_dir, "dlrm", &so));
        if (a.resume)
            run.skip = restore(&m);
        if (a.eval_every) {
            char best[4096];
            snprintf(best, sizeof best, "%s/best", a.ckpt_dir);
            const EmbSaverOptions bo = {.max_to_keep = 1, .optimizer = so.optimizer};
            CHECK(emb_saver_create(&run.best, best, "dlrm", &bo));
        }
    }
    double train_time = 0;
    int64_t trained = 0;
    for (int epoch = 0; epoch < a.epochs && !run.stop; epoch++) {
        double seconds;
        const int64_t samples = epoch_run(&run, epoch, &seconds);
        if (samples > 0) {
            train_time += seconds;
            trained += samples;
        }
    }
    double test_auc, test_loss;
    evaluate(&m, 0, &test_auc, &test_loss);
    if (a.export_path)
        export_and_serve(&m, test_auc);
    printf("test auc=%.6f logloss=%.6f samples_per_s=%.1f\n", test_auc, test_loss,
           trained ? (double)trained / train_time : 0.0);
    emb_saver_destroy(&run.best);
    emb_saver_destroy(&run.saver);
    model_free(&m);
    return 0;
}
