/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * data.c — dlrm_train's data and metrics: the reader opened and closed (bad lines
 * reported), the exact AUC, the evaluation on the test file, the restore of a checkpoint.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime, under -std=c11 */
#endif
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "dlrm.h"

static void report_bad(void *user, int64_t line, const char *why)
{
    BadLines *b = user;
    if (b->n == 0)
        b->first = line;
    if (b->n++ < 10)
        fprintf(stderr, "dlrm_train: %s:%lld: skipped: %s\n", b->path, (long long)line, why);
}

CriteoReader *open_data(const Args *a, const char *path, BadLines *bad)
{
    CriteoOptions o = {.batch = a->batch,
                       .flags = a->hash ? CRITEO_HASH : 0,
                       .nthreads = a->reader_threads,
                       .report = report_bad,
                       .report_user = bad};
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
void close_data(CriteoReader **r, const BadLines *bad, int64_t samples)
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
        fprintf(stderr,
                "dlrm_train: %s:%lld: no sample: all %lld lines are bad, the first "
                "at this line (its reason above)\n",
                bad->path, (long long)bad->first, (long long)lines);
    exit(2);
}

int next_batch(CriteoReader *r, CriteoBatch *b, const char *path)
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
void evaluate(Model *m, int64_t limit, double *auc_out, double *logloss)
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
int64_t restore(Model *m)
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
