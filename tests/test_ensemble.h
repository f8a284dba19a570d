/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_ensemble.h — the four-table ensemble of the multi-table suites (test_update_many,
 * test_tiered): shapes of every dtype, skewed random batches (ragged bags with weights,
 * pruning and a default id in table 0, max_norm in table 2) with their output gradients,
 * and the objects a training step needs. model_init makes the tables with @make (NULL:
 * seeded random in-memory tables, tu_table).
 */
#ifndef EMB_TEST_ENSEMBLE_H
#define EMB_TEST_ENSEMBLE_H

#include "test_update_ref.h"

#define NT 4
static const int32_t dims[NT] = {16, 8, 5, 64};
static const EmbDtype dtypes[NT] = {EMB_F32, EMB_F16, EMB_BF16, EMB_F32};
static const int64_t ncols[NT] = {200, 50, 1000, 300};

/* Skewed random batches (hot ids repeat) of 24 bags each and their output gradients. */
typedef struct Data {
    int64_t ids[NT][24 * 7];
    int32_t ids32[24 * 7];
    int64_t offsets[25];
    float w[24 * 7];
    float dy[NT][24 * 64];
    EmbBatch b[NT];
    EmbPooling p[NT];
} Data;

static inline void make_data(Data *d, uint64_t seed)
{
    for (int i = 0; i < NT; i++) {
        for (int k = 0; k < 24 * 7; k++) {
            const uint64_t r = tu_rand(&seed);
            d->ids[i][k] = (int64_t)((r & 1) ? r % 7 : (r >> 8) % (uint64_t)ncols[i]);
        }
        for (int k = 0; k < 24 * 64; k++)
            d->dy[i][k] = tu_randf(&seed);
        d->b[i] = (EmbBatch){.ids = d->ids[i], .nnz = 24 * 7, .nbags = 24, .bag_size = 7};
        d->p[i] = (EmbPooling){.combiner = (EmbCombiner)(1 + i % 3)};
    }
    /* table 0: ragged bags, some empty (default id), weights with pruning */
    d->offsets[0] = 0;
    for (int b = 0; b < 24; b++) {
        const int64_t next = d->offsets[b] + (int64_t)(tu_rand(&seed) % 12);
        d->offsets[b + 1] = next < 24 * 7 ? next : 24 * 7;
    }
    d->offsets[24] = 24 * 7;
    for (int k = 0; k < 24 * 7; k++)
        d->w[k] = tu_randf(&seed) + 0.3f;
    d->b[0].offsets = d->offsets;
    d->b[0].weights = d->w;
    d->p[0].default_id = 3;
    d->p[0].flags = EMB_USE_DEFAULT_ID | EMB_PRUNE_NONPOSITIVE_WEIGHTS;
    /* table 2: max_norm clips most columns (its gradient reads them) */
    d->p[2].max_norm = 0.5f;
    /* table 3: MAX pooling (its gradient reads the bags' rows; hot ids repeat in a bag) */
    d->p[3].combiner = EMB_COMBINER_MAX;
    /* table 1: int32 ids (a sparse gradient) */
    for (int k = 0; k < 24 * 7; k++)
        d->ids32[k] = (int32_t)d->ids[1][k];
}

typedef struct Model {
    EmbTable *t[NT];
    EmbGrad *g[NT];
    EmbIndexer *ix[NT];
    EmbOptimizer *opt;
} Model;

static inline void model_init_with(Model *m, EmbOptimizerConfig c, EmbTable *(*make)(int i, const void *arg),
                            const void *arg)
{
    for (int i = 0; i < NT; i++) {
        m->t[i] = make ? make(i, arg) : tu_table(ncols[i], dims[i], dtypes[i], 100 + (uint64_t)i);
        cr_assert_eq(emb_grad_create(&m->g[i]), 0);
        cr_assert_eq(emb_indexer_create(&m->ix[i]), 0);
    }
    cr_assert_eq(emb_optimizer_create(&m->opt, &c), 0);
}

static inline void model_init(Model *m, EmbOptimizerConfig c)
{
    model_init_with(m, c, NULL, NULL);
}

static inline void model_free(Model *m)
{
    for (int i = 0; i < NT; i++) {
        emb_grad_destroy(&m->g[i]);
        emb_indexer_destroy(&m->ix[i]);
    }
    emb_optimizer_destroy(&m->opt); /* before the tables it keys on */
    for (int i = 0; i < NT; i++)
        emb_table_destroy(&m->t[i]);
}

#endif
