/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_collection.c — bytes -> one step of a small collection (an f32 table, an int8 one
 * and an f16 one that checks for finite values; SGD fused): crafted batches (ids, offsets,
 * weights, counts, id types) in a concat or per-table layout of crafted strides, then a
 * backward with crafted output gradients (NaN and infinities included). A failed forward
 * must leave the output untouched, a forward that succeeds must write only its bags'
 * rows; a failed backward must leave every table as it was. The strategy is sequential or
 * parallel (two threads), as the input says.
 */
#include <stdlib.h>
#include <string.h>

#include "embtables/embtables.h"
#include "fuzz_input.h"

#define NT 3
#define MAX_NNZ 32
#define MAX_BAGS 16
#define SENTINEL (-1234.5f)
#define ROWS_MAX 8
#define D_MAX 6
#define SNAP (NT * ROWS_MAX * D_MAX)
#define OUT_MAX (MAX_BAGS * (NT * D_MAX + 4) * NT)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static EmbCollection *colls[2];
static EmbStrategy *strategies[2];
static const int64_t ncols[NT] = {6, 5, 4};
static const int32_t dims[NT] = {4, 6, 2};

static void setup(void)
{
    static const EmbDtype dtypes[NT] = {EMB_F32, EMB_INT8, EMB_F16};
    static const char *const names[NT] = {"user", "item", "ctx"};
    const EmbPooling poolings[NT] = {EMB_POOLING_SUM, EMB_POOLING_MEAN, EMB_POOLING_SQRTN};
    const EmbStrategyOptions so = {.nthreads = 2};
    FUZZ_ASSERT(emb_strategy_sequential(&strategies[0]) == 0);
    FUZZ_ASSERT(emb_strategy_parallel(&strategies[1], &so) == 0);
    for (int k = 0; k < 2; k++) {
        EmbCollectionTable ct[NT];
        for (int i = 0; i < NT; i++)
            ct[i] = (EmbCollectionTable){
                .name = names[i], .pooling = poolings[i],
                .spec = {.ncolumns = ncols[i], .featuresize = dims[i], .dtype = dtypes[i],
                         .init = {EMB_INIT_UNIFORM, -1.0f, 1.0f, 7 + (uint64_t)i},
                         .options = {.flags = i == 2 ? EMB_TABLE_CHECK_FINITE : 0u}}};
        const EmbOptimizerConfig sgd = emb_optimizer_defaults(EMB_OPT_SGD, 0.1f);
        const EmbCollectionOptions o = {.strategy = strategies[k], .optimizer = &sgd,
                                        .prependrows = 1};
        FUZZ_ASSERT(emb_collection_create(&colls[k], ct, NT, &o) == 0);
    }
}

/* Every table's rows as f32. */
static void snapshot(const EmbCollection *c, float *buf)
{
    memset(buf, 0, SNAP * sizeof *buf);
    for (int i = 0; i < NT; i++)
        FUZZ_ASSERT(emb_table_read(emb_collection_table(c, i), buf + i * ROWS_MAX * D_MAX,
                                   dims[i]) == 0);
}

/* Batch i from the input, into the arrays at @ids64 / @ids32 / @offsets / @w. */
static EmbBatch read_batch(FuzzInput *in, int i, int64_t *ids64, int32_t *ids32,
                           int64_t *offsets, float *w)
{
    EmbBatch b = {0};
    const uint8_t sel = fuzz_u8(in);
    b.id_type = (EmbIdType)(sel & 3); /* 2, 3: invalid */
    b.nnz = (int64_t)(fuzz_u8(in) % (MAX_NNZ + 2)) - 1;
    b.nbags = (int64_t)(fuzz_u8(in) % (MAX_BAGS + 2)) - 1;
    b.bag_size = (int64_t)(fuzz_u8(in) % 5) - 1;
    for (int k = 0; k < MAX_NNZ; k++) {
        ids64[k] = fuzz_id(in, ncols[i]);
        ids32[k] = (int32_t)ids64[k];
        w[k] = fuzz_u8(in) % 9 == 0 ? fuzz_f32(in) : (float)(fuzz_u8(in) % 5) - 1.0f;
    }
    for (int k = 0; k <= MAX_BAGS; k++)
        offsets[k] = fuzz_u8(in) == 0xff ? fuzz_i64(in) : (int64_t)(fuzz_u8(in) % (MAX_NNZ + 1));
    b.ids = sel & 16 ? NULL : b.id_type == EMB_ID_I32 ? (const void *)ids32 : (const void *)ids64;
    b.offsets = sel & 4 ? offsets : NULL;
    b.weights = sel & 8 ? w : NULL;
    return b;
}

/* Whether element k of @out was written by a forward of @b into @o (concat: row bag,
   columns from prependrows + the table's offset; per table: row bag of buffer i). */
static int written(const EmbCollection *c, const EmbBatch *b, const EmbOutputs *o,
                   const float *out, size_t k)
{
    for (int i = 0; i < NT; i++) {
        const float *base = o->concat ? o->concat + emb_collection_offset(c, i) : o->per_table[i];
        const int64_t stride = o->concat ? o->concat_stride : o->strides[i];
        const int64_t at = (const float *)out + k - base;
        if (at >= 0 && at / stride < b[i].nbags && at % stride < dims[i])
            return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!colls[0])
        setup();
    FuzzInput in = {data, size};
    const uint8_t mode = fuzz_u8(&in);
    EmbCollection *c = colls[mode & 1];
    static int64_t ids64[NT][MAX_NNZ], offsets[NT][MAX_BAGS + 1];
    static int32_t ids32[NT][MAX_NNZ];
    static float w[NT][MAX_NNZ], out[OUT_MAX], before[SNAP], after[SNAP];
    EmbBatch b[NT];
    for (int i = 0; i < NT; i++)
        b[i] = read_batch(&in, i, ids64[i], ids32[i], offsets[i], w[i]);

    /* the layout: concat of a crafted stride, or per-table buffers of crafted strides */
    EmbOutputs o = {0};
    float *per[NT];
    int64_t strides[NT];
    if (mode & 2) {
        o.concat = out;
        o.prependrows = 1;
        o.concat_stride = emb_collection_width(c) + (fuzz_u8(&in) % 4) - 1; /* -1: invalid */
    } else {
        for (int i = 0; i < NT; i++) {
            strides[i] = dims[i] + (fuzz_u8(&in) % 4) - 1;
            per[i] = out + (size_t)i * MAX_BAGS * (D_MAX + 2);
        }
        o.per_table = per;
        o.strides = strides;
    }
    for (size_t k = 0; k < OUT_MAX; k++)
        out[k] = SENTINEL;
    const int rc = emb_collection_forward(c, b, &o);
    FUZZ_ASSERT(rc <= 0);
    for (size_t k = 0; k < OUT_MAX; k++)
        FUZZ_ASSERT(out[k] == SENTINEL || (!rc && written(c, b, &o, out, k)));
    if (rc)
        return 0;

    /* the backward: crafted output gradients in the same layout */
    for (size_t k = 0; k < OUT_MAX; k++) {
        const uint8_t g = fuzz_u8(&in);
        out[k] = g == 0xff ? fuzz_f32(&in) : (float)(g % 11) - 5.0f;
    }
    snapshot(c, before);
    const int rb = emb_collection_backward(c, &o);
    FUZZ_ASSERT(rb <= 0);
    snapshot(c, after);
    if (rb)
        FUZZ_ASSERT(memcmp(before, after, sizeof before) == 0);
    return 0;
}
