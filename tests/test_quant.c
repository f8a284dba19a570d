/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_quant.c — row-wise quantized tables (EMB_INT8, EMB_INT4): torch's prepacked rows
 * wrapped as they are, quantization, every lookup form against an f32 table of the
 * dequantized values, and bad input.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "embtables/dynamic.h"
#include "embtables/partition.h"
#include "embtables/store.h"
#include "embtables/strategy.h"
#include "test_files.h"
#include "test_update_ref.h"

/* torch.ops.quantized.embedding_bag_byte_prepack / _4bit_prepack of the row
 * [0, 1, .., 14, 15.5] (torch 1.13). */
static const unsigned char torch_q8[24] = {0, 16, 33, 49, 66, 82, 99, 115, 132, 148, 165, 181,
                                           197, 214, 230, 255, 249, 248, 120, 61, 0, 0, 0, 0};
static const unsigned char torch_q4[12] = {16, 50, 84, 118, 152, 186, 220, 254, 34, 60, 0, 0};

Test(quant, row_bytes_and_names)
{
    cr_assert_eq(emb_dtype_row_bytes(EMB_INT8, 64), 72);
    cr_assert_eq(emb_dtype_row_bytes(EMB_INT4, 64), 36);
    cr_assert_eq(emb_dtype_row_bytes(EMB_INT4, 63), 0);
    cr_assert_eq(emb_dtype_row_bytes(EMB_F16, 64), 128);
    cr_assert_eq(emb_dtype_size(EMB_INT8), 0);
    cr_assert_str_eq(emb_dtype_name(EMB_INT4), "int4");
}

Test(quant, wraps_torch_int8_rows)
{
    unsigned char mem[2 * 24];
    memcpy(mem, torch_q8, 24);
    memcpy(mem + 24, torch_q8, 24);
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_wrap(&t, mem, 2, 16, 24, EMB_INT8, NULL), 0, "%s", emb_last_error());
    float out[2 * 16];
    cr_assert_eq(emb_table_read(t, out, 16), 0);
    float s;
    memcpy(&s, torch_q8 + 16, 4);
    for (int i = 0; i < 16; i++) {
        cr_assert_eq(out[i], (float)torch_q8[i] * s + 0.0f);
        cr_assert(fabsf(out[i] - (i == 15 ? 15.5f : (float)i)) <= s / 2, "element %d", i);
    }
    emb_table_destroy(&t);
}

Test(quant, wraps_torch_int4_rows_low_nibble_first)
{
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_wrap(&t, (void *)torch_q4, 1, 16, 12, EMB_INT4, NULL), 0, "%s",
                 emb_last_error());
    float out[16];
    cr_assert_eq(emb_table_read(t, out, 16), 0);
    const float s = 1.0332031f; /* f16 0x3c22 */
    for (int i = 0; i < 16; i++)
        cr_assert_eq(out[i], (float)i * s, "element %d: %g", i, (double)out[i]);
    emb_table_destroy(&t);
}

/* An owned quantized table of random values (quantized from an f32 one) and the f32 table
 * of its dequantized values. */
static void make_pair(EmbDtype dt, int64_t n, int32_t D, EmbTable **q, EmbTable **f)
{
    EmbTable *src = NULL;
    cr_assert_eq(emb_table_create(&src, n, D, EMB_F32, NULL), 0);
    tu_fill_random(src, 42 + (uint64_t)D);
    cr_assert_eq(emb_table_create(q, n, D, dt, NULL), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_quantize(*q, src), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_create(f, n, D, EMB_F32, NULL), 0);
    int64_t fs;
    float *fd = emb_table_data(*f, &fs);
    cr_assert_eq(emb_table_read(*q, fd, fs), 0);
    /* quantization error: at most half a step (int4: the f16 bias's rounding too) */
    const float *sd = emb_table_data(src, NULL);
    const float step = dt == EMB_INT8 ? 2.0f / 255 : 2.0f / 15;
    for (int64_t c = 0; c < n; c++)
        for (int32_t i = 0; i < D; i++)
            cr_assert(fabsf(fd[c * fs + i] - sd[c * fs + i]) <= step * 0.51f + 1e-3f,
                      "row %lld element %d", (long long)c, (int)i);
    emb_table_destroy(&src);
}

Test(quant, owned_strides)
{
    EmbTable *q = NULL, *f = NULL;
    int64_t s;
    make_pair(EMB_INT8, 10, 64, &q, &f);
    emb_table_data(q, &s);
    cr_assert_eq(s, 72, "int8 D = 64: packed at 8 bytes (%lld)", (long long)s);
    emb_table_destroy(&q);
    emb_table_destroy(&f);
    make_pair(EMB_INT4, 10, 64, &q, &f);
    emb_table_data(q, &s);
    cr_assert_eq(s, 36, "int4 D = 64: packed at 4 bytes, torch's stride (%lld)", (long long)s);
    emb_table_destroy(&q);
    emb_table_destroy(&f);
    make_pair(EMB_INT4, 10, 32, &q, &f);
    emb_table_data(q, &s);
    cr_assert_eq(s, 32, "int4 D = 32: 20 bytes, half a line (%lld)", (long long)s);
    emb_table_destroy(&q);
    emb_table_destroy(&f);
}

/* Every pooling form on q and on f: within f32 rounding (q sums its rows' terms fma(q, s, b),
 * quant_c.c; f sums the dequantized values q * s + b), the same bits where @exact says so. */
static void compare(EmbTable *q, EmbTable *f, const EmbBatch *b, const EmbPooling *p, int exact)
{
    const int32_t D = emb_table_featuresize(q);
    float oq[8 * 260], of[8 * 260];
    tu_poison(oq, 8 * 260);
    tu_poison(of, 8 * 260);
    cr_assert_eq(emb_lookup(q, b, p, oq, D + 3), 0, "%s", emb_last_error());
    cr_assert_eq(emb_lookup(f, b, p, of, D + 3), 0, "%s", emb_last_error());
    for (int64_t k = 0; k < b->nbags; k++) {
        for (int32_t i = 0; i < D; i++) {
            const float x = oq[k * (D + 3) + i], y = of[k * (D + 3) + i];
            if (exact)
                cr_assert_eq(x, y, "bag %lld element %d: %a %a", (long long)k, (int)i, x, y);
            else
                cr_assert(fabsf(x - y) <= 1e-5f * (1.0f + fabsf(y)), "bag %lld el %d: %g %g",
                          (long long)k, (int)i, (double)x, (double)y);
        }
        cr_assert(tu_is_poison(oq + k * (D + 3) + D, 3));
    }
}

static void every_form(EmbDtype dt, int32_t D)
{
    EmbTable *q = NULL, *f = NULL;
    make_pair(dt, 30, D, &q, &f);
    const int64_t ids[] = {3, 7, 7, 0, 29, 12, 5, 5, 1, 2, 8, 9, 10, -1, 4, 6};
    const int64_t offs[] = {0, 3, 3, 9, 12, 16};
    const float w[] = {0.5f, -1, 2, 0.25f, 1, 1, -0.5f, 3, 0, 1, 2, 0.1f, 1, 1, 0.7f, 2};
    for (int v = 0; v < 32; v++) {
        const int ragged = v & 1, weighted = (v >> 1) & 1, comb = (v >> 2) % 3;
        const int special = v >> 2 >= 3 ? (v >> 2) - 3 : -1; /* 0 max_norm 1 prune 2 default */
        EmbBatch b = {.ids = ids, .nnz = ragged ? 16 : 12, .nbags = ragged ? 5 : 4,
                      .offsets = ragged ? offs : NULL, .bag_size = ragged ? 0 : 3,
                      .weights = weighted ? w : NULL};
        EmbPooling p = {.combiner = EMB_COMBINER_SUM + comb};
        if (special == 0)
            p.max_norm = 0.5f;
        if (special == 1 || ragged)
            p.flags |= EMB_PRUNE_INVALID;
        if (special == 2) {
            p.flags |= EMB_USE_DEFAULT_ID;
            p.default_id = 11;
        }
        if (special == 3)
            p.flags |= EMB_OUT_NONTEMPORAL;
        /* int4 unweighted: q * s (4 + 11 bits) + the f16 bias is exact in f32, and so are
         * their sums over these bags of <= 6 rows */
        const int exact = dt == EMB_INT4 && !weighted && p.max_norm == 0.0f;
        compare(q, f, &b, &p, exact);
    }
    const int64_t g[] = {0, 29, 4, 4};
    float oq[4 * 256], of[4 * 256];
    cr_assert_eq(emb_gather(q, g, 4, oq, D), 0);
    cr_assert_eq(emb_gather(f, g, 4, of, D), 0);
    cr_assert_eq(memcmp(oq, of, sizeof(float) * 4 * (size_t)D), 0);
    emb_table_destroy(&q);
    emb_table_destroy(&f);
}

/* The generic path (pruning asked for) pools a bag longer than its chunk in pieces, cut
 * where the bags before it leave the chunk: each row is complete in the sum (its bias with
 * its own terms), so a bag's bits do not depend on the cut (nor on a strategy's ranges),
 * and equal the bags kernel's (no pruning asked for). */
static void pieces_same_bits(EmbDtype dt)
{
    EmbTable *q = NULL, *f = NULL;
    make_pair(dt, 50, 64, &q, &f);
    int64_t ids[400];
    uint64_t seed = 7;
    for (int i = 0; i < 400; i++)
        ids[i] = (int64_t)(tu_rand(&seed) % 50);
    const int64_t offs_a[] = {0, 100, 400}, offs_b[] = {0, 300};
    const EmbBatch a = {.ids = ids, .nnz = 400, .nbags = 2, .offsets = offs_a};
    const EmbBatch b = {.ids = ids + 100, .nnz = 300, .nbags = 1, .offsets = offs_b};
    const EmbPooling p = {.combiner = EMB_COMBINER_SUM, .flags = EMB_PRUNE_INVALID};
    float oa[2 * 64], ob[64];
    cr_assert_eq(emb_lookup(q, &a, &p, oa, 64), 0, "%s", emb_last_error());
    cr_assert_eq(emb_lookup(q, &b, &p, ob, 64), 0, "%s", emb_last_error());
    cr_assert_eq(memcmp(oa + 64, ob, sizeof ob), 0, "%s: a bag of 300 cut at 156 / 256",
                 emb_dtype_name(dt));
    const EmbPooling fast = {.combiner = EMB_COMBINER_SUM};
    cr_assert_eq(emb_lookup(q, &b, &fast, ob, 64), 0, "%s", emb_last_error());
    cr_assert_eq(memcmp(oa + 64, ob, sizeof ob), 0, "%s: generic path and bags kernel",
                 emb_dtype_name(dt));
    emb_table_destroy(&q);
    emb_table_destroy(&f);
}

Test(quant, bag_bits_do_not_depend_on_its_pieces)
{
    pieces_same_bits(EMB_INT8);
    pieces_same_bits(EMB_INT4);
}

Test(quant, every_lookup_form_int8)
{
    const int32_t dims[] = {2, 17, 32, 64, 100, 256};
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++)
        every_form(EMB_INT8, dims[i]);
}

Test(quant, every_lookup_form_int4)
{
    const int32_t dims[] = {2, 18, 32, 64, 100, 256};
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++)
        every_form(EMB_INT4, dims[i]);
}

Test(quant, bad_input)
{
    EmbTable *t = NULL;
    unsigned char mem[3 * 24] = {0};
    cr_assert_eq(emb_table_create(&t, 4, 7, EMB_INT4, NULL), EMB_ESHAPE);
    cr_assert_eq(emb_table_wrap(&t, mem, 2, 7, 8, EMB_INT4, NULL), EMB_ESHAPE);
    cr_assert_eq(emb_table_wrap(&t, mem, 2, 16, 23, EMB_INT8, NULL), EMB_ESTRIDE);
    cr_assert_null(t);
    const float nan = NAN;
    memcpy(mem + 24 + 16, &nan, 4); /* row 1's scale */
    const EmbTableOptions fin = {.flags = EMB_TABLE_CHECK_FINITE};
    cr_assert_eq(emb_table_wrap(&t, mem, 3, 16, 24, EMB_INT8, &fin), EMB_ENONFINITE);
    cr_assert(strstr(emb_last_error(), "row 1"), "%s", emb_last_error());
    cr_assert_null(t);
    cr_assert_eq(emb_table_wrap(&t, mem, 3, 16, 24, EMB_INT8, NULL), 0); /* unchecked */
    emb_table_destroy(&t);
}

Test(quant, quantize_checks_before_writing)
{
    EmbTable *src = NULL, *dst = NULL, *other = NULL;
    const EmbTableOptions fin = {.flags = EMB_TABLE_CHECK_FINITE};
    cr_assert_eq(emb_table_create(&src, 5, 8, EMB_F32, NULL), 0);
    cr_assert_eq(emb_table_create(&dst, 5, 8, EMB_INT8, &fin), 0);
    cr_assert_eq(emb_table_create(&other, 4, 8, EMB_INT8, NULL), 0);
    tu_fill_random(src, 7);
    const uint64_t before = tu_checksum(dst);
    ((float *)emb_table_data(src, NULL))[3 * 8 + 5] = INFINITY;
    cr_assert_eq(emb_table_quantize(dst, src), EMB_ENONFINITE);
    cr_assert_eq(tu_checksum(dst), before, "nothing written");
    cr_assert_eq(emb_table_quantize(other, src), EMB_ESHAPE);
    cr_assert_eq(emb_table_quantize(dst, dst), EMB_EINVAL);
    emb_table_destroy(&src);
    emb_table_destroy(&dst);
    emb_table_destroy(&other);
}

Test(quant, refused_where_not_supported)
{
    EmbTable *t = NULL, *q = NULL;
    cr_assert_eq(emb_table_dynamic_create(&t, 8, EMB_INT8, NULL), EMB_ENOTSUP);
    cr_assert_eq(emb_table_partitioned_create(&t, 100, 8, EMB_INT4, 2, EMB_PARTITION_MOD, NULL),
                 EMB_ENOTSUP);
    cr_assert_null(t);
    cr_assert_eq(emb_table_create(&q, 10, 8, EMB_INT8, NULL), 0);
    EmbTable *shards[1] = {q};
    cr_assert_eq(emb_table_partitioned(&t, shards, 1, EMB_PARTITION_MOD, NULL), EMB_ENOTSUP);
    emb_table_destroy(&q);
}

Test(quant, variable_ops_requantize)
{
    EmbTable *q = NULL;
    cr_assert_eq(emb_table_create(&q, 3, 4, EMB_INT8, NULL), 0);
    const float v[12] = {0, 1, 2, 3, -1, -1, -1, -1, 10, 0, 5, 2.5f};
    cr_assert_eq(emb_table_assign(q, v, 3, 4, 4), 0);
    float out[12];
    cr_assert_eq(emb_table_read(q, out, 4), 0);
    for (int i = 0; i < 12; i++)
        cr_assert(fabsf(out[i] - v[i]) <= 10.0f / 255 * 0.51f, "%d: %g", i, (double)out[i]);
    const int64_t ids[] = {1};
    const float add[4] = {1, 2, 3, 4};
    cr_assert_eq(emb_table_scatter_add(q, ids, 1, add, 4), 0);
    cr_assert_eq(emb_table_read(q, out, 4), 0);
    for (int i = 0; i < 4; i++)
        cr_assert(fabsf(out[4 + i] - (float)i) <= 3.0f / 255 * 0.51f, "%d: %g", i,
                  (double)out[4 + i]);
    emb_table_destroy(&q);
}

/* One SGD step on a quantized table against the same step on the f32 table of its
 * dequantized values: every element within one quantization step of the new row. */
static void sgd_like_f32(EmbDtype dt)
{
    EmbTable *q = NULL, *f = NULL;
    make_pair(dt, 20, 16, &q, &f);
    const int64_t ids[] = {3, 4, 3, 19, 0, 7};
    float dy[3 * 16];
    uint64_t seed = 5;
    for (int i = 0; i < 3 * 16; i++)
        dy[i] = tu_randf(&seed);
    const EmbBatch b = {.ids = ids, .nnz = 6, .nbags = 3, .bag_size = 2};
    const EmbOptimizerConfig cfg = emb_optimizer_defaults(EMB_OPT_SGD, 0.5f);
    EmbTable *tabs[2] = {q, f};
    for (int k = 0; k < 2; k++) {
        EmbGrad *g = NULL;
        EmbOptimizer *opt = NULL;
        EmbIndexer *ix = NULL;
        cr_assert_eq(emb_grad_create(&g) | emb_optimizer_create(&opt, &cfg) |
                     emb_indexer_create(&ix), 0);
        cr_assert_eq(emb_lookup_backward(tabs[k], &b, NULL, dy, 16, g), 0);
        cr_assert_eq(emb_update(opt, tabs[k], g, ix, 0), 0, "%s", emb_last_error());
        emb_indexer_destroy(&ix);
        emb_optimizer_destroy(&opt);
        emb_grad_destroy(&g);
    }
    float oq[20 * 16];
    cr_assert_eq(emb_table_read(q, oq, 16), 0);
    int64_t fs;
    const float *fd = emb_table_data(f, &fs);
    for (int c = 0; c < 20; c++) {
        float lo = fd[c * fs], hi = lo;
        for (int i = 0; i < 16; i++) {
            lo = fminf(lo, fd[c * fs + i]);
            hi = fmaxf(hi, fd[c * fs + i]);
        }
        const float step = (hi - lo) / (dt == EMB_INT8 ? 255.0f : 15.0f) * 1.01f + 1e-3f;
        for (int i = 0; i < 16; i++)
            cr_assert(fabsf(oq[c * 16 + i] - fd[c * fs + i]) <= step, "row %d el %d: %g %g",
                      c, i, (double)oq[c * 16 + i], (double)fd[c * fs + i]);
    }
    emb_table_destroy(&q);
    emb_table_destroy(&f);
}

Test(quant, sgd_step_int8)
{
    sgd_like_f32(EMB_INT8);
}

Test(quant, sgd_step_int4)
{
    sgd_like_f32(EMB_INT4);
}

static float max8(const float x[8])
{
    float m = x[0];
    for (int i = 1; i < 8; i++)
        m = fmaxf(m, x[i]);
    return m;
}

/* One SGD step (lr 1) of gradient @g on row 0 of a 1-row int8 table of 0, 1, .. 7; its
 * scale and bias after, and its values in @out. */
static void sgd_one_row(const float g[8], float sb[2], float out[8])
{
    EmbTable *q = NULL;
    cr_assert_eq(emb_table_create(&q, 1, 8, EMB_INT8, NULL), 0);
    const float v[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    cr_assert_eq(emb_table_assign(q, v, 1, 8, 8), 0);
    const int64_t ids[] = {0};
    const EmbBatch b = {.ids = ids, .nnz = 1, .nbags = 1, .bag_size = 1};
    const EmbOptimizerConfig cfg = emb_optimizer_defaults(EMB_OPT_SGD, 1.0f);
    EmbGrad *gr = NULL;
    EmbOptimizer *opt = NULL;
    EmbIndexer *ix = NULL;
    cr_assert_eq(emb_grad_create(&gr) | emb_optimizer_create(&opt, &cfg) |
                 emb_indexer_create(&ix), 0);
    cr_assert_eq(emb_lookup_backward(q, &b, NULL, g, 8, gr), 0);
    cr_assert_eq(emb_update(opt, q, gr, ix, 0), 0, "%s", emb_last_error());
    memcpy(sb, (const unsigned char *)emb_table_data(q, NULL) + 8, 8);
    cr_assert_eq(emb_table_read(q, out, 8), 0);
    emb_indexer_destroy(&ix);
    emb_optimizer_destroy(&opt);
    emb_grad_destroy(&gr);
    emb_table_destroy(&q);
}

/* Training re-grids an updated row at its new min and max (bias = min, scale = (max -
 * min) / 255), whether its values stay inside the old grid, leave it or shrink. */
Test(quant, training_regrids_at_min_and_max)
{
    const float step = 7.0f / 255;
    float small[8], sb[2], out[8];
    for (int i = 0; i < 8; i++)
        small[i] = (i == 0 ? -1.0f : i == 7 ? 1.0f : 0.5f) * step * 3.3f; /* in the grid */
    const float out_of[8] = {0, 0, 0, 0, 0, 0, 0, -1}; /* 7 + 1 > the grid's top */
    const float shrink[8] = {0, 0, 0, 0, 1, 2, 3, 4}; /* 0 .. 3: under half of 0 .. 7 */
    const float *const gs[3] = {small, out_of, shrink};
    for (int k = 0; k < 3; k++) {
        sgd_one_row(gs[k], sb, out);
        float lo = out[0];
        for (int i = 1; i < 8; i++)
            lo = fminf(lo, out[i]);
        cr_assert(sb[1] == lo && fabsf(sb[0] - (max8(out) - lo) / 255) < 1e-6f,
                  "case %d: scale %g bias %g, values %g .. %g", k, (double)sb[0],
                  (double)sb[1], (double)lo, (double)max8(out));
    }
    sgd_one_row(small, sb, out); /* inside the old grid 0 .. 7, yet re-gridded: 0.09 .. 6.91 */
    cr_assert(sb[1] > 0.0f && sb[0] < step, "kept the grid: %g %g", (double)sb[0],
              (double)sb[1]);
}

#define NQ 3
/* Two Adagrad steps on NQ quantized tables: mode 0 emb_update per table, 1 the sequential
 * strategy, 2 parallel on 2 threads, 3 auto on 2 threads with 8 splits. The checksums of
 * the tables after, and the optimizer state's dtype. */
static void train(EmbDtype dt, int mode, uint64_t sums[NQ])
{
    static const char *names[NQ] = {"qa", "qb", "qc"};
    EmbTable *t[NQ], *src = NULL;
    EmbGrad *g[NQ];
    EmbIndexer *ix[NQ];
    EmbOptimizer *opt = NULL;
    const EmbOptimizerConfig cfg = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.3f);
    cr_assert_eq(emb_optimizer_create(&opt, &cfg), 0);
    cr_assert_eq(emb_table_create(&src, 500, 32, EMB_F32, NULL), 0);
    tu_fill_random(src, 11);
    for (int i = 0; i < NQ; i++) {
        const EmbTableOptions o = {.name = names[i]};
        cr_assert_eq(emb_table_create(&t[i], 500, 32, dt, &o), 0);
        cr_assert_eq(emb_table_quantize(t[i], src), 0);
        cr_assert_eq(emb_grad_create(&g[i]) | emb_indexer_create(&ix[i]), 0);
    }
    EmbStrategy *s = NULL;
    const EmbStrategyOptions so = {.nthreads = 2, .num_splits = mode == 3 ? 8 : 0};
    if (mode == 1)
        cr_assert_eq(emb_strategy_sequential(&s), 0);
    else if (mode == 2)
        cr_assert_eq(emb_strategy_parallel(&s, &so), 0);
    else if (mode == 3)
        cr_assert_eq(emb_strategy_auto(&s, &so), 0);
    int64_t ids[400];
    float dy[100 * 32];
    uint64_t r = 99;
    for (int step = 0; step < 2; step++) {
        for (int i = 0; i < NQ; i++) {
            for (int k = 0; k < 400; k++)
                ids[k] = (int64_t)(tu_rand(&r) % 500);
            for (int k = 0; k < 100 * 32; k++)
                dy[k] = tu_randf(&r);
            const EmbBatch b = {.ids = ids, .nnz = 400, .nbags = 100, .bag_size = 4};
            cr_assert_eq(emb_lookup_backward(t[i], &b, NULL, dy, 32, g[i]), 0);
        }
        if (!s)
            for (int i = 0; i < NQ; i++)
                cr_assert_eq(emb_update(opt, t[i], g[i], ix[i], 0), 0, "%s", emb_last_error());
        else
            cr_assert_eq(emb_update_many(s, opt, t, (const EmbGrad *const *)g, NQ, ix, 0), 0,
                         "%s", emb_last_error());
    }
    for (int i = 0; i < NQ; i++) {
        sums[i] = tu_checksum(t[i]);
        EmbTable *st = NULL;
        cr_assert_eq(emb_optimizer_state(opt, t[i], 0, &st, NULL), 0);
        cr_assert_eq(emb_table_dtype(st), EMB_F32, "optimizer state stays f32");
        emb_grad_destroy(&g[i]);
        emb_indexer_destroy(&ix[i]);
    }
    emb_strategy_destroy(&s);
    emb_optimizer_destroy(&opt);
    for (int i = 0; i < NQ; i++)
        emb_table_destroy(&t[i]);
    emb_table_destroy(&src);
}

/* The stochastic rounding is keyed by (table, row, step): the same bits for every mode. */
static void same_bits_every_strategy(EmbDtype dt)
{
    uint64_t want[NQ], got[NQ];
    train(dt, 0, want);
    cr_assert_neq(want[0], want[1], "the tables got different steps");
    for (int mode = 1; mode < 4; mode++) {
        train(dt, mode, got);
        for (int i = 0; i < NQ; i++)
            cr_assert_eq(got[i], want[i], "mode %d table %d", mode, i);
    }
}

Test(quant, training_same_bits_any_strategy_int8)
{
    same_bits_every_strategy(EMB_INT8);
}

Test(quant, training_same_bits_any_strategy_int4)
{
    same_bits_every_strategy(EMB_INT4);
}

/* A store of an int8 and an int4 table (initialised, one Adagrad step each) saved with its
 * state: the file has U8 tensors and formats; a restore into a fresh store gives the same
 * bytes and state, and the mapped checkpoint reads the same values. */
static EmbStore *quant_store(EmbTable *t[2], uint64_t seed)
{
    EmbStore *s = NULL;
    cr_assert_eq(emb_store_create(&s), 0);
    const EmbDtype dts[2] = {EMB_INT8, EMB_INT4};
    static const char *names[2] = {"user/q8", "item/q4"};
    for (int i = 0; i < 2; i++) {
        const EmbVariableSpec v = {.name = names[i], .ncolumns = 41, .featuresize = 6 + 10 * i,
                                   .dtype = dts[i], .init = {EMB_INIT_UNIFORM, -1, 1, seed + i}};
        cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_NO, &t[i]), 0, "%s", emb_last_error());
    }
    return s;
}

Test(quant, checkpoint_round_trip)
{
    char dir[64], path[256];
    tmpdir(dir);
    EmbTable *a[2], *b[2];
    EmbStore *sa = quant_store(a, 3), *sb = quant_store(b, 77);
    EmbOptimizer *opt = NULL, *opt2 = NULL;
    const EmbOptimizerConfig cfg = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    cr_assert_eq(emb_optimizer_create(&opt, &cfg) | emb_optimizer_create(&opt2, &cfg), 0);
    const int64_t ids[] = {1, 5, 40, 5};
    float dy[2 * 16];
    for (int i = 0; i < 32; i++)
        dy[i] = 0.1f * (float)(i % 7) - 0.3f;
    for (int i = 0; i < 2; i++) {
        EmbGrad *g = NULL;
        EmbIndexer *ix = NULL;
        cr_assert_eq(emb_grad_create(&g) | emb_indexer_create(&ix), 0);
        const EmbBatch bt = {.ids = ids, .nnz = 4, .nbags = 2, .bag_size = 2};
        cr_assert_eq(emb_lookup_backward(a[i], &bt, NULL, dy, 16, g), 0);
        cr_assert_eq(emb_update(opt, a[i], g, ix, 0), 0, "%s", emb_last_error());
        emb_grad_destroy(&g);
        emb_indexer_destroy(&ix);
    }
    EmbSaver *sv = NULL;
    const EmbSaverOptions so = {.optimizer = opt};
    cr_assert_eq(emb_saver_create(&sv, dir, "q", &so), 0, "%s", emb_last_error());
    cr_assert_eq(emb_saver_save(sv, sa, 9, path, sizeof path), 0, "%s", emb_last_error());
    const EmbRestoreOptions ro = {.optimizer = opt2};
    int64_t step = 0;
    cr_assert_eq(emb_checkpoint_restore_ex(sb, path, &ro, &step), 0, "%s", emb_last_error());
    cr_assert_eq(step, 9);
    EmbCheckpoint *ck = NULL;
    cr_assert_eq(emb_checkpoint_open(&ck, path, EMB_CHECKPOINT_MMAP), 0, "%s", emb_last_error());
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(tu_checksum(a[i]), tu_checksum(b[i]), "table %d restored", i);
        EmbTable *sa_ = NULL, *sb_ = NULL, *m = NULL;
        cr_assert_eq(emb_optimizer_state(opt, a[i], 0, &sa_, NULL), 0);
        cr_assert_eq(emb_optimizer_state(opt2, b[i], 0, &sb_, NULL), 0);
        cr_assert_eq(tu_checksum(sa_), tu_checksum(sb_), "state %d restored", i);
        cr_assert_eq(emb_checkpoint_table(ck, emb_table_name(a[i]), &m), 0, "%s",
                     emb_last_error());
        cr_assert_eq(emb_table_dtype(m), emb_table_dtype(a[i]));
        cr_assert_eq(tu_checksum(m), tu_checksum(a[i]), "mapped table %d", i);
    }
    EmbCheckpointEntry e;
    cr_assert_eq(emb_checkpoint_entry(ck, 0, &e), 0);
    cr_assert_str_eq(e.type, "U8");
    emb_checkpoint_close(&ck);
    emb_saver_destroy(&sv);
    emb_optimizer_destroy(&opt);
    emb_optimizer_destroy(&opt2);
    emb_store_destroy(&sa);
    emb_store_destroy(&sb);
    rmdir_all(dir);
}

/* emb_maplookup over int8 and int4 tables (and an f32 one) under every strategy, 2 threads
 * and bag chunks: the bits of emb_lookup table by table. */
Test(quant, maplookup_same_bits_every_strategy)
{
    EmbTable *t[3], *f[2];
    make_pair(EMB_INT8, 300, 64, &t[0], &f[0]);
    make_pair(EMB_INT4, 300, 32, &t[1], &f[1]);
    t[2] = f[0];
    enum { NB = 257 };
    static int64_t ids[3][NB * 7];
    uint64_t r = 4;
    EmbBatch b[3];
    static float want[3][NB * 64], got[3][NB * 64];
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < NB * 7; k++)
            ids[i][k] = (int64_t)(tu_rand(&r) % 300);
        b[i] = (EmbBatch){.ids = ids[i], .nnz = NB * 7, .nbags = NB, .bag_size = 7};
        cr_assert_eq(emb_lookup(t[i], &b[i], NULL, want[i], emb_table_featuresize(t[i])), 0);
    }
    float *per[3] = {got[0], got[1], got[2]};
    const EmbOutputs o = {.per_table = per};
    for (int mode = 0; mode < 4; mode++) {
        EmbStrategy *s = NULL;
        const EmbStrategyOptions so = {.nthreads = 2, .chunks = 3};
        cr_assert_eq(mode == 0 ? emb_strategy_sequential(&s)
                     : mode == 1 ? emb_strategy_parallel(&s, &so)
                     : mode == 2 ? emb_strategy_prealloc_concat(&s, &so)
                                 : emb_strategy_auto(&s, &so), 0);
        memset(got, 0, sizeof got);
        cr_assert_eq(emb_maplookup(s, t, 3, b, NULL, &o), 0, "%s", emb_last_error());
        for (int i = 0; i < 3; i++) {
            const size_t n = (size_t)NB * (size_t)emb_table_featuresize(t[i]);
            cr_assert_eq(memcmp(got[i], want[i], n * sizeof(float)), 0, "strategy %d table %d",
                         mode, i);
        }
        emb_strategy_destroy(&s);
    }
    for (int i = 0; i < 2; i++) {
        emb_table_destroy(&t[i]);
        emb_table_destroy(&f[i]);
    }
}

/*
 * Stochastic rounding is unbiased: a row on the grid of scale 1 (min 0, max 255 fixed by
 * zero gradients) whose other elements SGD moves up by a quarter a step rounds up a quarter
 * of the time, so 200 steps raise them by 50 on average (the spread of the mean over 62
 * elements is about 0.4). Rounding to nearest would raise none; always up, 200.
 */
Test(quant, stochastic_rounding_is_unbiased)
{
    enum { D = 64, STEPS = 200 };
    float x[D], g[D] = {0}, got[D];
    for (int i = 0; i < D; i++)
        x[i] = i == 0 ? 0.0f : i == D - 1 ? 255.0f : (float)i;
    for (int i = 1; i < D - 1; i++)
        g[i] = -0.25f; /* lr 1: w + 0.25 */
    EmbTable *src = NULL, *t = NULL;
    cr_assert_eq(emb_table_wrap(&src, x, 1, D, D, EMB_F32, NULL), 0);
    cr_assert_eq(emb_table_create(&t, 1, D, EMB_INT8, NULL), 0);
    cr_assert_eq(emb_table_quantize(t, src), 0);
    Kit k;
    cr_assert_eq(kit_init(&k, emb_optimizer_defaults(EMB_OPT_SGD, 1.0f)), 0);
    const int64_t id = 0;
    const EmbSparseGrad sg = {.ids = &id, .id_type = EMB_ID_I64, .n = 1, .featuresize = D,
                              .values = g, .stride = D};
    for (int s = 0; s < STEPS; s++) {
        cr_assert_eq(emb_grad_set_sparse(k.g, t, &sg), 0);
        cr_assert_eq(emb_update(k.o, t, k.g, k.ix, 0), 0, "%s", emb_last_error());
    }
    cr_assert_eq(emb_table_read(t, got, D), 0);
    cr_assert_eq(got[0], 0.0f);
    cr_assert_eq(got[D - 1], 255.0f);
    double rise = 0;
    for (int i = 1; i < D - 1; i++) {
        cr_assert_eq(got[i], floorf(got[i]), "element %d is off the grid: %g", i, got[i]);
        rise += (got[i] - x[i]) / (D - 2);
    }
    cr_assert(fabs(rise - 0.25 * STEPS) < 2.0, "a mean rise of %g, not %g", rise, 0.25 * STEPS);
    kit_free(&k);
    emb_table_destroy(&t);
    emb_table_destroy(&src);
}
