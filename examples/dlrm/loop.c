/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * loop.c — dlrm_train's training loop: an epoch of steps, the next batch held back for the
 * tiered tables' prefetch, checkpoints, held-out evaluations and progress lines.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime, under -std=c11 */
#endif
#include <math.h>
#include <string.h>

#include "dlrm.h"

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
    fprintf(stderr,
            "dlrm_train: warning: the held-out AUC fell to %.6f from %.6f at step "
            "%lld: the model overfits (CTR models do after their first epoch)%s%s%s\n",
            a, run->best_auc, (long long)run->best_step, run->best ? "; the best model is in " : "",
            run->best ? run->a->ckpt_dir : "", run->best ? "/best" : "");
    if (run->a->early_stop) {
        fprintf(stderr, "dlrm_train: stopping (--early-stop)\n");
        run->stop = 1;
    }
}

/* A progress line to stderr: samples, percent of the file and ETA (when its size is
 * known), samples/s and the running loss; redrawn in place on a terminal. */
static void progress(Run *run, CriteoReader *r, int epoch, int64_t samples, double t0, double loss)
{
    const double t = now(), rate = (double)samples / (t - t0 > 0 ? t - t0 : 1e-9);
    int64_t done, total;
    criteo_position(r, &done, &total);
    char where[96] = "";
    if (total > 0 && done > 0) {
        const double f = (double)done / (double)total > 1 ? 1 : (double)done / (double)total;
        const double eta = (t - t0) * (1 - f) / f;
        snprintf(where, sizeof where, " (%.1f %%, ETA %lldm%02llds)", 100 * f, (long long)eta / 60,
                 (long long)eta % 60);
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
int64_t epoch_run(Run *run, int epoch, double *seconds)
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
