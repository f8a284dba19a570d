/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_update.c — bytes -> (optimizer config, gradient, table): emb_optimizer_create(),
 * emb_grad_set_sparse() / emb_lookup_backward() and emb_update() must never crash, and a
 * failed update must leave the table and the optimizer state as they were. The same
 * bytes drive the scatter operations and emb_sparse_mask().
 */
#include <stdlib.h>
#include <string.h>

#include "embtables/embtables.h"
#include "fuzz_input.h"

#define MAX_N 48
#define MAX_COLS 12

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A hyper-parameter: a sane value most of the time, any float (NaN, inf) sometimes. */
static float hyper(FuzzInput *in, float sane)
{
    const uint8_t sel = fuzz_u8(in);
    if (sel < 200)
        return sane;
    if (sel < 250)
        return sane * (float)(sel - 199) / 8.0f - 1.0f;
    return fuzz_f32(in);
}

static void snapshot(const EmbTable *t, float *buf, int64_t D)
{
    FUZZ_ASSERT(emb_table_read(t, buf, D) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzInput in = {data, size};
    const uint8_t shape = fuzz_u8(&in);
    const int64_t ncols = shape % (MAX_COLS + 1);
    const int32_t D = 1 + (shape >> 4) * 3;          /* 1 .. 46 */
    const EmbDtype dtype = (EmbDtype)(fuzz_u8(&in) % 3);
    EmbTable *t = NULL;
    FUZZ_ASSERT(emb_table_create(&t, ncols, D, dtype, NULL) == 0);
    EmbInitializer init = {EMB_INIT_NORMAL, 0.0f, 1.0f, fuzz_u8(&in)};
    FUZZ_ASSERT(emb_table_initialize(t, &init) == 0);

    /* the optimizer */
    const uint8_t osel = fuzz_u8(&in);
    EmbOptimizerConfig cfg = emb_optimizer_defaults((EmbOptimizerKind)(osel % 6), 0.1f);
    cfg.lr = hyper(&in, cfg.lr);
    cfg.eps = hyper(&in, cfg.eps);
    cfg.initial_accumulator = hyper(&in, cfg.initial_accumulator);
    cfg.lr_power = hyper(&in, cfg.lr_power);
    cfg.l1 = hyper(&in, cfg.l1);
    cfg.l2 = hyper(&in, cfg.l2);
    cfg.beta1 = hyper(&in, cfg.beta1);
    cfg.beta2 = hyper(&in, cfg.beta2);
    cfg.bias_correction = (osel >> 3) & 1;
    EmbOptimizer *opt = NULL;
    if (emb_optimizer_create(&opt, &cfg) != 0)
        opt = NULL;

    /* the gradient: a sparse one or a lookup's pullback */
    const uint8_t gsel = fuzz_u8(&in);
    int64_t ids[MAX_N];
    float values[MAX_N * 48];
    int64_t offsets[MAX_N + 1];
    const int64_t n = (int64_t)(fuzz_u8(&in) % (MAX_N + 2)) - 1;
    for (int i = 0; i < MAX_N; i++)
        ids[i] = fuzz_id(&in, ncols);
    for (int i = 0; i < MAX_N * 48; i++)
        values[i] = (i % 7 == 0 && fuzz_u8(&in) == 0xff) ? fuzz_f32(&in) : (float)(i % 13) * 0.25f - 1.5f;
    for (int i = 0; i <= MAX_N; i++)
        offsets[i] = fuzz_u8(&in) % (MAX_N + 1);
    const int64_t stride = D + (int64_t)(fuzz_u8(&in) % 3) - 1;

    const size_t tab = (size_t)(ncols ? ncols : 1) * (size_t)D;
    float *before = calloc(tab, sizeof(float));
    float *after = calloc(tab, sizeof(float));
    FUZZ_ASSERT(before && after);

    EmbGrad *g = NULL;
    EmbIndexer *ix = NULL;
    FUZZ_ASSERT(emb_grad_create(&g) == 0 && emb_indexer_create(&ix) == 0);
    int rc;
    if (gsel & 1) {
        EmbSparseGrad sg = {ids, (EmbIdType)((gsel >> 1) % 3 == 2 ? 7 : 0), n,
                            (gsel & 8) ? D + 1 : D, values, stride};
        rc = emb_grad_set_sparse(g, t, &sg);
    } else {
        EmbBatch b = {.ids = ids, .nnz = n, .nbags = (int64_t)(fuzz_u8(&in) % 8),
                      .bag_size = (int64_t)(fuzz_u8(&in) % 4),
                      .offsets = (gsel & 2) ? offsets : NULL,
                      .weights = (gsel & 4) ? values : NULL};
        EmbPooling p = {(EmbCombiner)(fuzz_u8(&in) % 4), (gsel & 16) ? 1.0f : 0.0f,
                        fuzz_id(&in, ncols), fuzz_u8(&in) & 7};
        rc = emb_lookup_backward(t, &b, &p, values, stride > 0 ? stride : 1, g);
    }
    FUZZ_ASSERT(rc <= 0);
    if (opt) {
        snapshot(t, before, D);
        int64_t step0 = 0, step1 = 0;
        EmbTable *st = NULL;
        const int had_state = emb_optimizer_state(opt, t, 0, &st, &step0) == 0;
        rc = emb_update(opt, t, g, ix, (gsel >> 5) & 1);
        FUZZ_ASSERT(rc <= 0);
        if (rc) {
            snapshot(t, after, D);
            FUZZ_ASSERT(memcmp(before, after, tab * sizeof(float)) == 0);
            if (had_state)
                FUZZ_ASSERT(emb_optimizer_state(opt, t, 0, &st, &step1) == 0 && step1 == step0);
        }
    }

    /* the tf.Variable scatter operations: all ids checked before anything is written */
    const int nsel = (gsel >> 6) & 3;
    snapshot(t, before, D);
    const int64_t sn = n < 0 ? n : n % 16;
    switch (nsel) {
    case 0: rc = emb_table_scatter_update(t, ids, sn, values, stride); break;
    case 1: rc = emb_table_scatter_add(t, ids, sn, values, stride); break;
    case 2: rc = emb_table_scatter_mul(t, ids, sn, values, stride); break;
    default: rc = emb_table_scatter_div(t, ids, sn, values, stride); break;
    }
    FUZZ_ASSERT(rc <= 0);
    if (rc) {
        snapshot(t, after, D);
        FUZZ_ASSERT(memcmp(before, after, tab * sizeof(float)) == 0);
    }

    /* sparse_mask: in -> out of at most in.n rows */
    {
        EmbSparseGrad sg = {ids, EMB_ID_I64, n, D, values, stride};
        EmbSparseGrad out;
        int64_t out_ids[MAX_N];
        float *out_values = malloc((size_t)MAX_N * 48 * sizeof(float));
        FUZZ_ASSERT(out_values != NULL);
        const int64_t nmask = (int64_t)(fuzz_u8(&in) % 8) - 1;
        rc = emb_sparse_mask(&sg, ids + MAX_N - 8, nmask, &out, out_ids, out_values,
                             stride > 0 ? stride : D);
        FUZZ_ASSERT(rc <= 0);
        if (rc == 0)
            FUZZ_ASSERT(out.n >= 0 && out.n <= n);
        free(out_values);
    }

    emb_indexer_destroy(&ix);
    emb_grad_destroy(&g);
    emb_optimizer_destroy(&opt);
    emb_table_destroy(&t);
    free(before);
    free(after);
    return 0;
}
