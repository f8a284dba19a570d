/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * model.c — the DLRM model of dlrm_train: its tables (an EmbCollection, tiered with
 * --tier-dir) and MLPs in one store, the dot interaction, the forward and the SGD step.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime, under -std=c11 */
#endif
#include <math.h>
#include <string.h>

#include "dlrm.h"

/* ---- dot interaction ------------------------------------------------------------------ */

/* r = [z_0 | <z_i, z_j> for i = 1..26, j < i] per sample of rows [r0, r0 + n),
 * z_i = row + i D. */
static void interact_forward(const float *rows, int64_t ldrow, int64_t r0, int n, int D, float *r,
                             int64_t ldr)
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

void model_init(Model *m, const Args *a)
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
            const int64_t rec =
                ((int64_t)emb_dtype_row_bytes(a->emb_dtype, a->dim) + 15) / 16 * 16 +
                4 * (int64_t)sw;
            ts.options.state_width = sw;
            ts.options.cache_bytes = rec * (int64_t)ceil(a->tier_cache * (double)a->sizes[t]);
        }
        const EmbVariableSpec v = {.name = name,
                                   .ncolumns = a->sizes[t],
                                   .featuresize = a->dim,
                                   .dtype = a->emb_dtype,
                                   .trainable = 1,
                                   .init = {EMB_INIT_UNIFORM, -bound, bound, a->seed + (uint64_t)t},
                                   .tiered = tier ? &ts : NULL};
        tables[t] = (EmbCollectionTable){.pooling = EMB_POOLING_SUM};
        CHECK(emb_store_get(m->store, &v, EMB_REUSE_NO, &tables[t].table));
    }
    EmbOptimizerConfig oc = emb_optimizer_defaults(a->opt, a->lr);
    oc.state_dtype = a->lowp.state_dtype;
    oc.stochastic_rounding = a->lowp.stochastic_rounding;
    const EmbCollectionOptions co = {
        .strategy_options = {.nthreads = a->threads}, .optimizer = &oc, .prependrows = a->dim};
    CHECK(emb_collection_create(&m->emb, tables, NT, &co));
    mlp_init(&m->bot, m->store, "bot", CRITEO_NDENSE, a->bot, a->nbot, 1, m->B, 0, a->seed);
    mlp_init(&m->top, m->store, "top", a->dim + NINTER, a->top, a->ntop, 0, m->B, a->nbot, a->seed);
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

void model_free(Model *m)
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
void forward(Model *m, const CriteoBatch *b)
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

double bce(float z, float y) /* -log sigmoid(z) if y else -log(1 - sigmoid(z)) */
{
    const double x = z;
    return (x > 0 ? x + log1p(exp(-x)) : log1p(exp(x))) - (double)y * x;
}

/* One SGD step on a batch; returns its summed loss. @p next (or NULL): the next batch,
 * whose rows tiered tables start reading while this step computes (a hint: same bits). */
double train_step(Model *m, const CriteoBatch *b, const CriteoBatch *next)
{
    const int64_t n = b->n;
    if (next) { /* first: the reads overlap the whole step, forward and backward */
        EmbBatch nb[NT];
        for (int t = 0; t < NT; t++)
            nb[t] =
                (EmbBatch){.ids = next->cat[t], .nnz = next->n, .nbags = next->n, .bag_size = 1};
        CHECK(emb_collection_prefetch(m->emb, nb));
    }
    forward(m, b);
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
