/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_atomic.c — failed calls write nothing above the table kinds: emb_maplookup and
 * emb_collection_forward under every strategy when one table's tiered read fails, the
 * whole-table variable ops (assign, assign_add, read, quantize) when a read fails midway;
 * two failing tables report the first one's code with its own message; a concat batch of
 * the wrong bag count is named by its table. A tiered read is made to fail by tier_fault.h
 * (internal: the static library, for the fault hook).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "embtables/collection.h"
#include "embtables/tiered.h"
#include "tier_fault.h"

enum { ROWS = 1000, D = 16, NB = 256, BAG = 2, BAD_ROW = 600 };

/* A tiered table of ROWS x D f32 at dir/@name, a 4-row cache, initialised uniformly. */
static EmbTable *tiered(const char *name, uint64_t seed)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    const EmbTieredOptions o = {.table = {.name = name}, .cache_bytes = 4 * D * 4,
                                .engine = EMB_TIER_ENGINE_PREAD};
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_tiered_create(&t, path, ROWS, D, EMB_F32, &o), 0, "%s",
                 emb_last_error());
    const EmbInitializer in = {EMB_INIT_UNIFORM, -1.0f, 1.0f, seed};
    cr_assert_eq(emb_table_initialize(t, &in), 0, "%s", emb_last_error());
    return t;
}

static EmbTable *in_memory(const char *name, uint64_t seed)
{
    const EmbTableOptions to = {.name = name};
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_create(&t, ROWS, D, EMB_F32, &to), 0);
    const EmbInitializer in = {EMB_INIT_UNIFORM, -1.0f, 1.0f, seed};
    cr_assert_eq(emb_table_initialize(t, &in), 0);
    return t;
}

/* Bags of BAG ids below BAD_ROW, but the last bag's ids at BAD_ROW and up. */
static void fill_ids(int64_t *ids)
{
    for (int k = 0; k < NB * BAG; k++)
        ids[k] = k < (NB - 1) * BAG ? (k * 37) % BAD_ROW : BAD_ROW + k % 100;
}

static EmbStrategy *strategy(int k)
{
    const EmbStrategyOptions so = {.nthreads = 2, .chunks = k == 3 ? 5 : 0};
    EmbStrategy *s = NULL;
    switch (k) {
    case 0: cr_assert_eq(emb_strategy_sequential(&s), 0); break;
    case 1: cr_assert_eq(emb_strategy_parallel(&s, &so), 0); break;
    case 2: cr_assert_eq(emb_strategy_auto(&s, &so), 0); break;
    default: cr_assert_eq(emb_strategy_prealloc_concat(&s, &so), 0); break;
    }
    return s;
}

static void assert_poisoned(const float *out, size_t n, const char *what)
{
    for (size_t i = 0; i < n * sizeof *out; i++)
        cr_assert_eq(((const unsigned char *)out)[i], 0xab, "%s: byte %zu of %zu written", what,
                     i, n * sizeof *out);
}

/* A table whose tiered read fails (the last one, or the first) makes emb_maplookup fail
   under every strategy, concat and per-table outputs, without writing any output; once
   the disk reads again the same call gives the in-memory tables' bits. */
Test(atomic, a_failed_tiered_read_writes_no_maplookup_output, .init = setup, .fini = teardown)
{
    static int64_t ids[NB * BAG];
    static float out[NB * 3 * D], ref[NB * 3 * D];
    fill_ids(ids);
    for (int where = 0; where < 3; where += 2) { /* the tiered table at index 0, then 2 */
        EmbTable *t[3], *m[3];
        for (int i = 0; i < 3; i++) {
            char name[16];
            snprintf(name, sizeof name, "t%d", i);
            t[i] = i == where ? tiered(name, 10 + (uint64_t)i) : in_memory(name, 10 + (uint64_t)i);
            m[i] = in_memory(name, 10 + (uint64_t)i);
        }
        EmbBatch b[3];
        for (int i = 0; i < 3; i++)
            b[i] = (EmbBatch){.ids = ids, .nnz = NB * BAG, .nbags = NB, .bag_size = BAG};
        for (int k = 0; k < 4; k++) {
            EmbStrategy *s = strategy(k);
            float *per[3] = {out, out + NB * D, out + 2 * NB * D};
            float *rper[3] = {ref, ref + NB * D, ref + 2 * NB * D};
            const EmbOutputs layouts[2] = {{.concat = out, .concat_stride = 3 * D},
                                           {.per_table = per}};
            const EmbOutputs rlayouts[2] = {{.concat = ref, .concat_stride = 3 * D},
                                            {.per_table = rper}};
            for (int l = 0; l < 2; l++) {
                memset(out, 0xab, sizeof out);
                fault_set(-EIO, 0, 1, BAD_ROW);
                cr_assert_eq(emb_maplookup(s, t, 3, b, NULL, &layouts[l]), EMB_EIO,
                             "strategy %d layout %d: %s", k, l, emb_last_error());
                char want[32];
                snprintf(want, sizeof want, "tables[%d]", where);
                cr_assert(strstr(emb_last_error(), want), "%s", emb_last_error());
                assert_poisoned(out, sizeof out / sizeof *out, emb_strategy_name(s));
                fault_set(0, 1, 1, 0);
                cr_assert_eq(emb_maplookup(s, t, 3, b, NULL, &layouts[l]), 0, "%s",
                             emb_last_error());
                cr_assert_eq(emb_maplookup(s, m, 3, b, NULL, &rlayouts[l]), 0);
                cr_assert_eq(memcmp(out, ref, sizeof out), 0, "strategy %d layout %d", k, l);
            }
            emb_strategy_destroy(&s);
        }
        for (int i = 0; i < 3; i++) {
            emb_table_destroy(&t[i]);
            emb_table_destroy(&m[i]);
        }
    }
}

/* The single-table lookup too (the rows are pinned before the first output). */
Test(atomic, a_failed_tiered_read_writes_no_lookup_output, .init = setup, .fini = teardown)
{
    static int64_t ids[NB * BAG];
    static float out[NB * D];
    fill_ids(ids);
    EmbTable *t = tiered("one", 3);
    const EmbPooling poolings[2] = {EMB_POOLING_SUM, EMB_POOLING_GATHER};
    for (int p = 0; p < 2; p++) {
        const EmbBatch b = {.ids = ids, .nnz = NB * BAG, .nbags = p ? NB * BAG : NB,
                            .bag_size = p ? 1 : BAG};
        static float gout[NB * BAG * D];
        float *o = p ? gout : out;
        const size_t n = p ? sizeof gout / sizeof *gout : sizeof out / sizeof *out;
        memset(o, 0xab, n * sizeof *o);
        fault_set(-EIO, 0, 1, BAD_ROW);
        cr_assert_eq(emb_lookup(t, &b, &poolings[p], o, D), EMB_EIO);
        assert_poisoned(o, n, "emb_lookup");
        fault_set(0, 1, 1, 0);
    }
    emb_table_destroy(&t);
}

/* A collection's forward over a tiered table and an in-memory one: the failed forward
   writes no output, names the tiered table, and records no step (a backward then fails). */
Test(atomic, a_failed_collection_forward_writes_nothing, .init = setup, .fini = teardown)
{
    static int64_t ids[NB * BAG];
    static float out[NB * 2 * D];
    fill_ids(ids);
    EmbTable *mem = in_memory("user", 1), *tt = tiered("item", 2);
    for (int k = 0; k < 4; k++) {
        EmbStrategy *s = strategy(k);
        const EmbCollectionTable ct[2] = {{.table = mem, .pooling = EMB_POOLING_SUM},
                                          {.table = tt, .pooling = EMB_POOLING_MEAN}};
        const EmbCollectionOptions o = {.strategy = s};
        EmbCollection *c = NULL;
        cr_assert_eq(emb_collection_create(&c, ct, 2, &o), 0, "%s", emb_last_error());
        const EmbOutputs layout = emb_collection_concat(c, out);
        const EmbBatch b[2] = {{.ids = ids, .nnz = NB * BAG, .nbags = NB, .bag_size = BAG},
                               {.ids = ids, .nnz = NB * BAG, .nbags = NB, .bag_size = BAG}};
        memset(out, 0xab, sizeof out);
        fault_set(-EIO, 0, 1, BAD_ROW);
        cr_assert_eq(emb_collection_forward(c, b, &layout), EMB_EIO);
        cr_assert(strstr(emb_last_error(), "table \"item\" (1)"), "%s", emb_last_error());
        assert_poisoned(out, sizeof out / sizeof *out, emb_strategy_name(s));
        fault_set(0, 1, 1, 0);
        cr_assert_eq(emb_collection_backward(c, &layout), EMB_EINVAL, "no step was recorded");
        cr_assert_eq(emb_collection_forward(c, b, &layout), 0, "%s", emb_last_error());
        emb_collection_destroy(&c);
        emb_strategy_destroy(&s);
    }
    emb_table_destroy(&tt);
    emb_table_destroy(&mem);
}

/* Two tables fail in one call: the code and the message are table 0's, under every
   strategy (table 1 failing last, on the caller or on another thread, does not leave its
   message beside table 0's code). */
Test(atomic, two_failing_tables_report_the_first_ones_code_and_message, .init = setup,
     .fini = teardown)
{
    static int64_t ids[NB * BAG];
    static float out[NB * 2 * D];
    fill_ids(ids);
    EmbTable *t[2] = {tiered("first", 1), tiered("second", 2)};
    const EmbBatch b[2] = {{.ids = ids, .nnz = NB * BAG, .nbags = NB, .bag_size = BAG},
                           {.ids = ids, .nnz = NB * BAG, .nbags = NB, .bag_size = BAG}};
    const EmbOutputs layout = {.concat = out, .concat_stride = 2 * D};
    for (int k = 0; k < 4; k++) {
        EmbStrategy *s = strategy(k);
        for (int rep = 0; rep < 4; rep++) {
            fault_set(-EIO, 0, 1, BAD_ROW);
            cr_assert_eq(emb_maplookup(s, t, 2, b, NULL, &layout), EMB_EIO);
            const char *m = emb_last_error();
            cr_assert(strstr(m, "tables[0]") && strstr(m, "/first") && !strstr(m, "/second"),
                      "%s: %s", emb_strategy_name(s), m);
            fault_set(0, 1, 1, 0);
        }
        emb_strategy_destroy(&s);
    }
    emb_table_destroy(&t[0]);
    emb_table_destroy(&t[1]);
}

/* ---- whole-table variable ops ---------------------------------------------------------- */

enum { VR = 3000, VD = 8, VBAD = 2048 };

static EmbTable *vtable(const char *name, EmbDtype dt)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    const EmbTieredOptions o = {.cache_bytes = 16 * 32, .engine = EMB_TIER_ENGINE_PREAD};
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_tiered_create(&t, path, VR, VD, dt, &o), 0, "%s", emb_last_error());
    return t;
}

/* The table's rows as f32, read with no fault. */
static void rows_now(const EmbTable *t, float *rows)
{
    fault_set(0, 1, 1, 0);
    cr_assert_eq(emb_table_read(t, rows, VD), 0, "%s", emb_last_error());
}

/* assign, assign_add and assign_sub of a tiered table whose row 2048 cannot be read (a
   whole-table pass goes 1024 rows at a time): EMB_EIO, and not one row written. */
Test(atomic, a_failed_assign_writes_no_row, .init = setup, .fini = teardown)
{
    static float v[VR * VD], before[VR * VD], after[VR * VD];
    for (int i = 0; i < VR * VD; i++)
        v[i] = 0.001f * (float)(i % 997) - 0.4f;
    EmbTable *t = vtable("a", EMB_F32);
    cr_assert_eq(emb_table_assign(t, v, VR, VD, VD), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_tiered_flush(t), 0);
    rows_now(t, before);
    int (*const ops[3])(EmbTable *, const float *, int64_t, int32_t, int64_t) = {
        emb_table_assign, emb_table_assign_add, emb_table_assign_sub};
    for (int k = 0; k < 3; k++) {
        fault_set(-EIO, 0, 1, VBAD);
        for (int i = 0; i < VR * VD; i++)
            v[i] = (float)k + 1.0f;
        cr_assert_eq(ops[k](t, v, VR, VD, VD), EMB_EIO, "op %d", k);
        cr_assert(strstr(emb_last_error(), "/a"), "%s", emb_last_error());
        rows_now(t, after);
        cr_assert_eq(memcmp(before, after, sizeof before), 0, "op %d wrote rows", k);
    }
    emb_table_destroy(&t);
}

/* emb_table_read into a buffer: a failed read leaves the buffer as it was. */
Test(atomic, a_failed_read_writes_nothing, .init = setup, .fini = teardown)
{
    static float out[VR * VD];
    EmbTable *t = vtable("r", EMB_F32);
    memset(out, 0xab, sizeof out);
    fault_set(-EIO, 0, 1, VBAD);
    cr_assert_eq(emb_table_read(t, out, VD), EMB_EIO);
    assert_poisoned(out, VR * VD, "emb_table_read");
    emb_table_destroy(&t);
}

/* emb_table_quantize into a tiered int8 table, from a tiered f32 one: a read failing in
   either leaves the destination as it was. */
Test(atomic, a_failed_quantize_writes_no_row, .init = setup, .fini = teardown)
{
    static float v[VR * VD], before[VR * VD], after[VR * VD];
    for (int i = 0; i < VR * VD; i++)
        v[i] = 0.001f * (float)(i % 997) - 0.4f;
    EmbTable *src = vtable("src", EMB_F32), *dst = vtable("dst", EMB_INT8), *mem = NULL;
    cr_assert_eq(emb_table_create(&mem, VR, VD, EMB_F32, NULL), 0);
    cr_assert_eq(emb_table_assign(src, v, VR, VD, VD), 0, "%s", emb_last_error());
    for (int i = 0; i < VR * VD; i++)
        v[i] = -v[i];
    cr_assert_eq(emb_table_assign(mem, v, VR, VD, VD), 0);
    cr_assert_eq(emb_table_tiered_flush(src), 0);
    cr_assert_eq(emb_table_tiered_flush(dst), 0);
    rows_now(dst, before);
    const EmbTable *from[2] = {src, mem};
    for (int k = 0; k < 2; k++) {
        fault_set(-EIO, 0, 1, VBAD);
        cr_assert_eq(emb_table_quantize(dst, from[k]), EMB_EIO, "source %d", k);
        rows_now(dst, after);
        cr_assert_eq(memcmp(before, after, sizeof before), 0, "source %d: rows written", k);
    }
    cr_assert_eq(emb_table_quantize(dst, mem), 0, "%s", emb_last_error());
    emb_table_destroy(&mem);
    emb_table_destroy(&dst);
    emb_table_destroy(&src);
}

/* ---- naming ------------------------------------------------------------------------------ */

/* A concat output over batches of different bag counts: emb_maplookup names the table
   (index and name), the collection's forward and backward name both tables by their
   collection names; nothing is written. */
Test(atomic, a_bag_count_mismatch_names_the_tables)
{
    static int64_t ids[NB * BAG];
    static float out[NB * 2 * D];
    fill_ids(ids);
    EmbTable *t[2] = {in_memory("user_t", 1), in_memory("item_t", 2)};
    const EmbBatch b[2] = {{.ids = ids, .nnz = NB * BAG, .nbags = NB, .bag_size = BAG},
                           {.ids = ids, .nnz = (NB - 1) * BAG, .nbags = NB - 1,
                            .bag_size = BAG}};
    EmbStrategy *s = strategy(0);
    const EmbOutputs layout = {.concat = out, .concat_stride = 2 * D};
    memset(out, 0xab, sizeof out);
    cr_assert_eq(emb_maplookup(s, t, 2, b, NULL, &layout), EMB_ESHAPE);
    const char *m = emb_last_error();
    cr_assert(strstr(m, "tables[1]: nbags = 255 (table \"item_t\")") &&
              strstr(m, "tables[0] has nbags = 256 (table \"user_t\")"), "%s", m);
    const EmbCollectionTable ct[2] = {{.name = "user", .table = t[0], .pooling = EMB_POOLING_SUM},
                                      {.name = "item", .table = t[1], .pooling = EMB_POOLING_SUM}};
    const EmbOptimizerConfig sgd = emb_optimizer_defaults(EMB_OPT_SGD, 0.1f);
    const EmbCollectionOptions o = {.strategy = s, .optimizer = &sgd};
    EmbCollection *c = NULL;
    cr_assert_eq(emb_collection_create(&c, ct, 2, &o), 0, "%s", emb_last_error());
    const EmbOutputs cl = emb_collection_concat(c, out);
    cr_assert_eq(emb_collection_forward(c, b, &cl), EMB_ESHAPE);
    m = emb_last_error();
    cr_assert(strstr(m, "emb_collection_forward: table \"item\" (1) has 255 bags") &&
              strstr(m, "table \"user\" (0) has 256"), "%s", m);
    cr_assert_eq(emb_collection_backward_batches(c, b, &cl), EMB_ESHAPE);
    m = emb_last_error();
    cr_assert(strstr(m, "emb_collection_backward: table \"item\" (1) has 255 bags") &&
              strstr(m, "table \"user\" (0) has 256"), "%s", m);
    assert_poisoned(out, sizeof out / sizeof *out, "a mismatched call");
    emb_collection_destroy(&c);
    emb_strategy_destroy(&s);
    emb_table_destroy(&t[0]);
    emb_table_destroy(&t[1]);
}
