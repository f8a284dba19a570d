/* SPDX-License-Identifier: BSD-2-Clause */
/* test_semantics.c — TF / DeepRec pooling semantics on hand-computed cases: weighted
 * combiners, max_norm, pruning, empty bags and default_id, and long bags against a double
 * reference. */
#include <criterion/criterion.h>

#include "test_util.h"

/* Columns: 0 = (3,4) norm 5, 1 = (1,0), 2 = (0,2), 3 = (0,0), 4 = (6,8) norm 10. */
static const float cols5[5][2] = {{3, 4}, {1, 0}, {0, 2}, {0, 0}, {6, 8}};

static EmbTable *table5(EmbDtype dt, void *mem)
{
    for (int c = 0; c < 5; c++)
        for (int i = 0; i < 2; i++) {
            const float v = cols5[c][i];
            if (dt == EMB_F32)
                ((float *)mem)[2 * c + i] = v;
            else if (dt == EMB_BF16) { /* exact: the values have few mantissa bits */
                uint32_t b;
                memcpy(&b, &v, 4);
                ((uint16_t *)mem)[2 * c + i] = (uint16_t)(b >> 16);
            }
        }
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_wrap(&t, mem, 5, 2, 2, dt, NULL), 0);
    return t;
}

/* One lookup of ragged bags (offsets NULL: bags of one id) into a poisoned buffer of
 * stride 3 (padding stays poison). */
static void run(const EmbTable *t, const int64_t *ids, const int64_t *offsets, int64_t nbags,
                const float *w, EmbPooling p, float *out)
{
    const EmbBatch b = {.ids = ids,
                        .nnz = offsets ? offsets[nbags] : nbags,
                        .nbags = nbags,
                        .offsets = offsets,
                        .bag_size = 1,
                        .weights = w};
    tu_poison(out, (size_t)nbags * 3);
    cr_assert_eq(emb_lookup(t, &b, &p, out, 3), 0, "%s", emb_last_error());
    for (int64_t k = 0; k < nbags; k++)
        cr_assert(tu_is_poison(out + 3 * k + 2, 1), "padding of bag %lld", (long long)k);
}

/* Relative tolerance 1e-6 (single f32 roundings of short sums) plus 1e-7 absolute. */
static void expect2(const float *got, double x, double y, const char *what)
{
    cr_assert(fabs(got[0] - x) <= 1e-6 * fabs(x) + 1e-7 &&
                  fabs(got[1] - y) <= 1e-6 * fabs(y) + 1e-7,
              "%s: got (%g, %g), want (%g, %g)", what, (double)got[0], (double)got[1], x, y);
    cr_assert(!isnan(got[0]) && !isnan(got[1]), "%s: NaN", what);
}

static EmbPooling pool(EmbCombiner c, float max_norm, int64_t def, unsigned flags)
{
    return (EmbPooling){.combiner = c, .max_norm = max_norm, .default_id = def, .flags = flags};
}

Test(semantics, weighted_combiners)
{
    float mem[10], out[2 * 3];
    EmbTable *t = table5(EMB_F32, mem);
    /* bag 0: 2·e0 + 1·e1 = (7, 8); bag 1: 1·e1 + 0.5·e1 + 2·e2 = (1.5, 4) (duplicates count) */
    const int64_t ids[] = {0, 1, 1, 1, 2}, off[] = {0, 2, 5};
    const float w[] = {2, 1, 1, 0.5f, 2};
    run(t, ids, off, 2, w, pool(EMB_COMBINER_SUM, 0, 0, 0), out);
    expect2(out, 7, 8, "sum bag 0");
    expect2(out + 3, 1.5, 4, "sum bag 1");
    run(t, ids, off, 2, w, pool(EMB_COMBINER_MEAN, 0, 0, 0), out);
    expect2(out, 7.0 / 3, 8.0 / 3, "mean bag 0");
    expect2(out + 3, 1.5 / 3.5, 4 / 3.5, "mean bag 1");
    run(t, ids, off, 2, w, pool(EMB_COMBINER_SQRTN, 0, 0, 0), out);
    expect2(out, 7 / sqrt(5), 8 / sqrt(5), "sqrtn bag 0");
    expect2(out + 3, 1.5 / sqrt(5.25), 4 / sqrt(5.25), "sqrtn bag 1");
    /* no weights: w = 1 */
    run(t, ids, off, 2, NULL, pool(EMB_COMBINER_MEAN, 0, 0, 0), out);
    expect2(out, 2, 2, "unweighted mean bag 0");
    expect2(out + 3, 2.0 / 3, 2.0 / 3, "unweighted mean bag 1");
    run(t, ids, off, 2, NULL, pool(EMB_COMBINER_SQRTN, 0, 0, 0), out);
    expect2(out + 3, 2 / sqrt(3), 2 / sqrt(3), "unweighted sqrtn bag 1");
    emb_table_destroy(&t);
}

Test(semantics, max_norm_clips_before_weighting)
{
    float mem[10], out[4 * 3];
    EmbTable *t = table5(EMB_F32, mem);
    const int64_t ids[] = {0, 4, 1, 3};
    /* gather with max_norm 2.5: (3,4) -> (1.5,2), (6,8) -> (1.5,2), (1,0) and 0 unchanged */
    run(t, ids, NULL, 4, NULL, pool(EMB_COMBINER_NONE, 2.5f, 0, 0), out);
    expect2(out, 1.5, 2, "clipped e0");
    expect2(out + 3, 1.5, 2, "clipped e4");
    expect2(out + 6, 1, 0, "short e1 unchanged");
    expect2(out + 9, 0, 0, "zero column stays zero");
    /* 2·clip(e0) + 1·clip(e4) = (4.5, 6): weighting after the clip (clipping the weighted
     * vectors would give (1.5,2)+(1.5,2) = (3, 4)) */
    const int64_t off[] = {0, 2};
    const float w[] = {2, 1};
    run(t, ids, off, 1, w, pool(EMB_COMBINER_SUM, 2.5f, 0, 0), out);
    expect2(out, 4.5, 6, "sum of clipped, weighted");
    run(t, ids, off, 1, w, pool(EMB_COMBINER_MEAN, 2.5f, 0, 0), out);
    expect2(out, 1.5, 2, "mean of clipped, weighted");
    /* a norm equal to max_norm is not clipped */
    run(t, ids, NULL, 1, NULL, pool(EMB_COMBINER_NONE, 5.0f, 0, 0), out);
    expect2(out, 3, 4, "norm == max_norm");
    emb_table_destroy(&t);
}

Test(semantics, max_norm_in_bf16)
{
    uint16_t mem[10];
    float out[2 * 3];
    EmbTable *t = table5(EMB_BF16, mem);
    const int64_t ids[] = {4, 0, 1}, off[] = {0, 2, 3};
    run(t, ids, off, 2, NULL, pool(EMB_COMBINER_SQRTN, 1.0f, 0, 0), out);
    expect2(out, 1.2 / sqrt(2), 1.6 / sqrt(2), "bf16 clipped sqrtn");
    expect2(out + 3, 1, 0, "bf16 unclipped");
    emb_table_destroy(&t);
}

Test(semantics, empty_bags_default_id_or_zeros)
{
    float mem[10], out[3 * 3];
    EmbTable *t = table5(EMB_F32, mem);
    const int64_t ids[] = {1, 1}, off[] = {0, 0, 2, 2};
    for (int c = EMB_COMBINER_SUM; c <= EMB_COMBINER_SQRTN; c++) {
        run(t, ids, off, 3, NULL, pool((EmbCombiner)c, 0, 999, 0), out);
        expect2(out, 0, 0, "empty bag, no default: zeros (default_id ignored)");
        expect2(out + 6, 0, 0, "last empty bag");
        run(t, ids, off, 3, NULL, pool((EmbCombiner)c, 0, 2, EMB_USE_DEFAULT_ID), out);
        expect2(out, 0, 2, "empty bag gives the default column, weight 1");
        expect2(out + 3,
                c == EMB_COMBINER_SUM    ? 2
                : c == EMB_COMBINER_MEAN ? 1
                                         : sqrt(2),
                0, "non-empty bag");
        expect2(out + 6, 0, 2, "last empty bag");
        run(t, ids, off, 3, NULL, pool((EmbCombiner)c, 1.0f, 4, EMB_USE_DEFAULT_ID), out);
        expect2(out, 0.6, 0.8, "the default column is clipped by max_norm");
    }
    emb_table_destroy(&t);
}

Test(semantics, pruning_then_empty_bags)
{
    float mem[10], out[4 * 3];
    EmbTable *t = table5(EMB_F32, mem);
    /* bag 0: -1 pruned, 2 kept; bag 1: all invalid; bag 2: weights 0, -1, 3; bag 3: 1, -1 */
    const int64_t ids[] = {-1, 2, -1, -3, 0, 1, 2, 1, 2}, off[] = {0, 2, 4, 7, 9};
    const float w[] = {5, 0.5f, 1, 1, 0, -1, 3, 1, -1};
    const unsigned both = EMB_PRUNE_INVALID | EMB_PRUNE_NONPOSITIVE_WEIGHTS;
    run(t, ids, off, 4, w, pool(EMB_COMBINER_MEAN, 0, 0, both), out);
    expect2(out, 0, 2, "mean after pruning the invalid id");
    expect2(out + 3, 0, 0, "all pruned, no default: zeros");
    expect2(out + 6, 0, 2, "only the positive weight is left: mean = e2");
    expect2(out + 9, 1, 0, "weight -1 pruned");
    run(t, ids, off, 4, w, pool(EMB_COMBINER_SQRTN, 0, 4, both | EMB_USE_DEFAULT_ID), out);
    expect2(out + 3, 6, 8, "all pruned: default column");
    /* pruning ids only: weights 0, -1, 3 stay; mean = (0·e0 − e1 + 3·e2) / 2 = (-0.5, 3);
     * weights 1, -1 cancel: mean and sqrtn finite (0 and (1,-2)/sqrt 2) */
    run(t, ids, off, 4, w, pool(EMB_COMBINER_MEAN, 0, 0, EMB_PRUNE_INVALID), out);
    expect2(out + 6, -0.5, 3, "mean with non-positive weights kept");
    expect2(out + 9, 0, 0, "weights summing to 0: zeros, never NaN");
    run(t, ids, off, 4, w, pool(EMB_COMBINER_SQRTN, 0, 0, EMB_PRUNE_INVALID), out);
    expect2(out + 9, 1 / sqrt(2), -2 / sqrt(2), "sqrtn with cancelling weights");
    /* without EMB_PRUNE_INVALID a negative id is an error, and an id >= ncolumns always */
    const EmbBatch b = {.ids = ids, .nnz = 9, .nbags = 4, .offsets = off, .weights = w};
    EmbPooling p = pool(EMB_COMBINER_MEAN, 0, 0, EMB_PRUNE_NONPOSITIVE_WEIGHTS);
    cr_assert_eq(emb_lookup(t, &b, &p, out, 3), EMB_ERANGE);
    const int64_t big[] = {5};
    const EmbBatch bb = {.ids = big, .nnz = 1, .nbags = 1, .bag_size = 1};
    p.flags = EMB_PRUNE_INVALID;
    cr_assert_eq(emb_lookup(t, &bb, &p, out, 3), EMB_ERANGE);
    emb_table_destroy(&t);
}

Test(semantics, all_zero_weights_never_nan)
{
    float mem[10], out[3];
    EmbTable *t = table5(EMB_F32, mem);
    const int64_t ids[] = {0, 4}, off[] = {0, 2};
    const float w[] = {0, 0};
    for (int c = EMB_COMBINER_SUM; c <= EMB_COMBINER_SQRTN; c++) {
        run(t, ids, off, 1, w, pool((EmbCombiner)c, 0, 0, 0), out);
        expect2(out, 0, 0, "zero weights");
    }
    emb_table_destroy(&t);
}

Test(semantics, gather_with_pruning_and_int32_ids)
{
    float mem[10], out[3 * 3];
    EmbTable *t = table5(EMB_F32, mem);
    const int32_t ids[] = {4, -1, 2};
    const float w[] = {0.5f, 1, -2};
    const EmbBatch b = {
        .ids = ids, .id_type = EMB_ID_I32, .nnz = 3, .nbags = 3, .bag_size = 1, .weights = w};
    const EmbPooling p = pool(EMB_COMBINER_NONE, 0, 1, EMB_PRUNE_INVALID | EMB_USE_DEFAULT_ID);
    tu_poison(out, 9);
    cr_assert_eq(emb_lookup(t, &b, &p, out, 3), 0, "%s", emb_last_error());
    expect2(out, 3, 4, "weighted gather");
    expect2(out + 3, 1, 0, "pruned id: default column");
    expect2(out + 6, 0, -4, "negative weight kept without weight pruning");
    emb_table_destroy(&t);
}

/* Adds wk · clip(column id) to acc in double. */
static void ref_add(double *acc, const float *col, int D, double wk, double c)
{
    double n2 = 0;
    for (int i = 0; i < D; i++)
        n2 += (double)col[i] * col[i];
    const double f = n2 > c * c ? c / sqrt(n2) : 1;
    for (int i = 0; i < D; i++)
        acc[i] += wk * f * col[i];
}

/* Long weighted bags with max_norm and pruning across the lookup's chunks, against a
 * double-precision reference. */
Test(semantics, long_bags_against_double_reference)
{
    enum { NCOL = 300, D = 20, NNZ = 1400 };
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_create(&t, NCOL, D, EMB_F32, NULL), 0);
    tu_fill_random(t, 11);
    int64_t stride;
    const float *d = emb_table_data(t, &stride);
    static int64_t ids[NNZ];
    static float w[NNZ];
    const int64_t off[] = {0, 0, 1, 600, 601, 1400};
    uint64_t s = 5;
    for (int k = 0; k < NNZ; k++) {
        ids[k] = (int64_t)(tu_rand(&s) % (NCOL + 1)) - 1;
        w[k] = tu_randf(&s) + 0.3f;
    }
    const double c = 1.5;
    const EmbBatch b = {.ids = ids, .nnz = NNZ, .nbags = 5, .offsets = off, .weights = w};
    for (int comb = EMB_COMBINER_SUM; comb <= EMB_COMBINER_SQRTN; comb++) {
        const EmbPooling p =
            pool((EmbCombiner)comb, (float)c, 7,
                 EMB_PRUNE_INVALID | EMB_PRUNE_NONPOSITIVE_WEIGHTS | EMB_USE_DEFAULT_ID);
        float out[5 * D];
        cr_assert_eq(emb_lookup(t, &b, &p, out, D), 0);
        for (int bag = 0; bag < 5; bag++) {
            double acc[D] = {0}, sw = 0, sw2 = 0, sc = 1;
            for (int64_t k = off[bag]; k < off[bag + 1]; k++) {
                if (ids[k] < 0 || !(w[k] > 0))
                    continue;
                ref_add(acc, d + ids[k] * stride, D, w[k], c);
                sw += w[k];
                sw2 += (double)w[k] * w[k];
            }
            if (sw2 == 0)
                ref_add(acc, d + 7 * stride, D, 1, c);
            else if (comb != EMB_COMBINER_SUM)
                sc = comb == EMB_COMBINER_MEAN ? 1 / sw : 1 / sqrt(sw2);
            for (int i = 0; i < D; i++) /* f32 sums of up to 800 terms of size <= 1.5 */
                cr_assert(fabs(out[bag * D + i] - acc[i] * sc) <= 2e-4 * (1 + fabs(acc[i] * sc)),
                          "combiner %d bag %d elem %d: %g vs %g", comb, bag, i,
                          (double)out[bag * D + i], acc[i] * sc);
        }
    }
    emb_table_destroy(&t);
}
