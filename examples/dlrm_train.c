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
 *
 * This file holds main() and the serving export; the parts, one concern each, are in
 * examples/dlrm/ (dlrm.h declares what they share): args.c the options, mlp.c the MLPs,
 * model.c the model and its step, data.c the reader and the metrics, loop.c an epoch.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime, under -std=c11 */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dlrm/dlrm.h"
#include "dlrm_blas.h"
#include "dlrm_export.h"

void die(const char *msg, const char *arg)
{
    fprintf(stderr, "dlrm_train: %s%s\n", msg, arg ? arg : "");
    exit(2);
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        die("out of memory", NULL);
    return p;
}

double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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
           "logloss=%.6f (auc %+.6f against the f32 tables)\n",
           a->export_path, emb_dtype_name(a->export_dtype), (long long)sv.bytes,
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
           "BLAS: %s\n",
           a->dim, emb_dtype_name(a->emb_dtype), (long long)a->batch, a->epochs,
           a->epochs == 1 ? "" : "s",
           a->opt == EMB_OPT_SGD    ? "sgd"
           : a->opt == EMB_OPT_ADAM ? "adam"
                                    : "adagrad",
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
