/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_dynamic.c — hash-keyed dynamic tables (dynamic.h) against a reference: a plain table
 * plus an id -> row map kept here. Lookups, every optimizer through emb_update and
 * emb_update_many (bit-identical over thread and split counts), the missing-id modes,
 * admission, eviction, the memory cap, export / import.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "test_files.h"
#include "test_util.h"

#define D 16
#define NREF 128

/* The reference: ids[r] is the id of row r of the plain table. */
typedef struct Ref {
    EmbTable *t;
    int64_t ids[NREF];
    int64_t n;
} Ref;

static int64_t ref_row(Ref *ref, int64_t id, bool create)
{
    for (int64_t r = 0; r < ref->n; r++)
        if (ref->ids[r] == id)
            return r;
    if (!create)
        return -1;
    cr_assert_lt(ref->n, NREF);
    ref->ids[ref->n] = id;
    return ref->n++;
}

static int64_t big_id(uint64_t *s)
{
    return (int64_t)(tu_rand(s) >> 1) % (INT64_MAX - 1);
}

/* A dynamic table and its reference holding the same @n random rows. */
static void make_pair(EmbTable **dyn, Ref *ref, const EmbDynamicOptions *o, int64_t n,
                      uint64_t seed)
{
    cr_assert_eq(emb_table_dynamic_create(dyn, D, EMB_F32, o), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_create(&ref->t, NREF, D, EMB_F32, NULL), 0);
    ref->n = 0;
    int64_t ids[NREF];
    float rows[NREF * D];
    for (int64_t k = 0; k < n; k++) {
        ids[k] = big_id(&seed);
        const int64_t r = ref_row(ref, ids[k], true);
        float *col;
        emb_table_column_pointer(ref->t, r, EMB_CTX_NONE, (void **)&col);
        for (int i = 0; i < D; i++)
            rows[k * D + i] = col[i] = tu_randf(&seed);
    }
    cr_assert_eq(emb_table_dynamic_import(*dyn, ids, rows, D, n), 0, "%s", emb_last_error());
}

/* Lookups of known ids give the reference's bits, for several poolings. */
Test(dynamic, lookups_match_reference)
{
    EmbTable *dyn;
    Ref ref;
    make_pair(&dyn, &ref, NULL, 40, 1);
    uint64_t s = 7;
    int64_t ids[120], rids[120], offs[31];
    float w[120];
    for (int k = 0; k < 120; k++) {
        const int64_t r = (int64_t)(tu_rand(&s) % 40);
        ids[k] = ref.ids[r];
        rids[k] = r;
        w[k] = tu_randf(&s);
    }
    for (int b = 0; b <= 30; b++)
        offs[b] = b * 4;
    offs[5] = offs[4]; /* an empty bag */
    const EmbPooling pools[] = {EMB_POOLING_SUM, EMB_POOLING_MEAN, EMB_POOLING_SQRTN,
                                {EMB_COMBINER_SUM, 0.5f, 0, 0}};
    for (size_t p = 0; p < sizeof pools / sizeof pools[0]; p++)
        for (int weighted = 0; weighted < 2; weighted++) {
            EmbBatch b = {.ids = ids, .nnz = 120, .nbags = 30, .offsets = offs,
                          .weights = weighted ? w : NULL};
            EmbBatch rb = b;
            rb.ids = rids;
            float out[30 * D], rout[30 * D];
            cr_assert_eq(emb_lookup(dyn, &b, &pools[p], out, D), 0, "%s", emb_last_error());
            cr_assert_eq(emb_lookup(ref.t, &rb, &pools[p], rout, D), 0);
            cr_assert_eq(memcmp(out, rout, sizeof out), 0, "pooling %zu weighted %d", p,
                         weighted);
        }
    /* maplookup under every strategy */
    EmbStrategy *st[3];
    const EmbStrategyOptions so = {.nthreads = 2};
    emb_strategy_sequential(&st[0]);
    emb_strategy_parallel(&st[1], &so);
    emb_strategy_prealloc_concat(&st[2], &so);
    for (int k = 0; k < 3; k++) {
        EmbBatch b = {.ids = ids, .nnz = 120, .nbags = 30, .bag_size = 4};
        EmbBatch rb = b;
        rb.ids = rids;
        float out[30 * D], rout[30 * D];
        float *po[1] = {out};
        float *rpo[1] = {rout};
        EmbOutputs o = {.per_table = po}, ro = {.per_table = rpo};
        cr_assert_eq(emb_maplookup(st[k], &dyn, 1, &b, NULL, &o), 0, "%s", emb_last_error());
        cr_assert_eq(emb_maplookup(st[k], &ref.t, 1, &rb, NULL, &ro), 0);
        cr_assert_eq(memcmp(out, rout, sizeof out), 0, "strategy %d", k);
        emb_strategy_destroy(&st[k]);
    }
    emb_table_destroy(&dyn);
    emb_table_destroy(&ref.t);
}

/*
 * The lookup's span path (lookup.c: ids resolved a span at a time, then the bags kernel;
 * a bag longer than a span pooled in pieces): known and unknown ids mixed, skewed (Zipf-
 * like) bags from empty to 400 ids, weights, every combiner, a default id for empty bags,
 * 32-bit ids, dtypes f32 / bf16 / f16 at D = 16, 64, 256, all against the reference (the
 * unknown ids' rows there hold the missing value). A plain table of 65 rows: 0 .. 63 the
 * known ids, 64 the missing value.
 */
Test(dynamic, span_lookups_match_reference)
{
    enum { NK = 64, NB = 40 };
    const EmbDtype dts[3] = {EMB_F32, EMB_BF16, EMB_F16};
    const int32_t dims[3] = {16, 64, 256};
    for (int c = 0; c < 9; c++) {
        const EmbDtype dt = dts[c % 3];
        const int32_t dim = dims[c / 3];
        uint64_t s = 11 + (uint64_t)c;
        EmbDynamicOptions o = {.missing = EMB_DYN_MISSING_CONSTANT, .missing_value = 0.375f};
        if (c == 3) /* f32 D = 64: a capacity of 18 MB, slabs and index of 2 MiB pages */
            o.capacity = 70000;
        EmbTable *dyn, *ref;
        cr_assert_eq(emb_table_dynamic_create(&dyn, dim, dt, &o), 0, "%s", emb_last_error());
        cr_assert_eq(emb_table_create(&ref, NK + 1, dim, EMB_F32, NULL), 0);
        int64_t known[NK];
        float *rows = malloc((size_t)(NK + 1) * (size_t)dim * sizeof *rows);
        for (int r = 0; r <= NK; r++) {
            if (r < NK)
                known[r] = (int64_t)(tu_rand(&s) % 2000000000);
            for (int i = 0; i < dim; i++) /* values exact in every dtype */
                rows[r * dim + i] = r < NK ? (float)((int)(tu_rand(&s) % 512) - 256) / 64.0f
                                           : 0.375f;
        }
        cr_assert_eq(emb_table_dynamic_import(dyn, known, rows, dim, NK), 0, "%s",
                     emb_last_error());
        int64_t rstride;
        float *rd = emb_table_data(ref, &rstride);
        for (int r = 0; r <= NK; r++)
            memcpy(rd + r * rstride, rows + r * dim, (size_t)dim * sizeof(float));
        int64_t offs[NB + 1];
        offs[0] = 0;
        for (int b = 0; b < NB; b++) {
            const int len = b % 7 == 3 ? 0 : b % 9 == 1 ? 130 + (int)(tu_rand(&s) % 270)
                                                        : (int)(tu_rand(&s) % 40);
            offs[b + 1] = offs[b] + len;
        }
        const int64_t nnz = offs[NB];
        int64_t *ids = malloc((size_t)nnz * sizeof *ids), *rids = malloc((size_t)nnz * 8);
        int32_t *ids32 = malloc((size_t)nnz * sizeof *ids32);
        float *w = malloc((size_t)nnz * sizeof *w);
        for (int64_t k = 0; k < nnz; k++) {
            const double u = (double)(tu_rand(&s) >> 11) * (1.0 / 9007199254740992.0);
            const bool miss = tu_rand(&s) % 5 == 0;
            const int r = (int)(NK * u * u * u); /* skewed toward row 0 */
            ids[k] = miss ? 2000000000 + (int64_t)(tu_rand(&s) % 100000000) : known[r];
            rids[k] = miss ? NK : r;
            ids32[k] = (int32_t)ids[k];
            w[k] = (float)((int)(tu_rand(&s) % 16) - 4) / 8.0f;
        }
        EmbPooling pools[4] = {EMB_POOLING_SUM, EMB_POOLING_MEAN, EMB_POOLING_SQRTN,
                               EMB_POOLING_SUM};
        pools[3].flags = EMB_USE_DEFAULT_ID;
        pools[3].default_id = known[5];
        float *out = malloc((size_t)NB * (size_t)dim * sizeof *out);
        float *rout = malloc((size_t)NB * (size_t)dim * sizeof *rout);
        for (int p = 0; p < 4; p++)
            for (int v = 0; v < 3; v++) { /* unweighted, weighted, 32-bit ids */
                EmbBatch b = {.ids = v == 2 ? (const void *)ids32 : (const void *)ids,
                              .id_type = v == 2 ? EMB_ID_I32 : EMB_ID_I64, .nnz = nnz,
                              .nbags = NB, .offsets = offs, .weights = v == 1 ? w : NULL};
                EmbBatch rb = {.ids = rids, .nnz = nnz, .nbags = NB, .offsets = offs,
                               .weights = b.weights};
                EmbPooling rp = pools[p];
                rp.default_id = 5;
                tu_poison(out, (size_t)NB * (size_t)dim);
                cr_assert_eq(emb_lookup(dyn, &b, &pools[p], out, dim), 0, "%s",
                             emb_last_error());
                cr_assert_eq(emb_lookup(ref, &rb, &rp, rout, dim), 0);
                cr_assert_eq(memcmp(out, rout, (size_t)NB * (size_t)dim * sizeof *out), 0,
                             "dtype %d D %d pooling %d variant %d", (int)dt, (int)dim, p, v);
            }
        /* a gather of every id (spans of the gather's chunks), 64- and 32-bit ids */
        float *g = malloc((size_t)nnz * (size_t)dim * sizeof *g);
        float *rg = malloc((size_t)nnz * (size_t)dim * sizeof *rg);
        const EmbPooling gp = EMB_POOLING_GATHER;
        for (int v = 0; v < 2; v++) {
            EmbBatch b = {.ids = v ? (const void *)ids32 : (const void *)ids,
                          .id_type = v ? EMB_ID_I32 : EMB_ID_I64, .nnz = nnz, .nbags = nnz,
                          .bag_size = 1};
            EmbBatch rb = {.ids = rids, .nnz = nnz, .nbags = nnz, .bag_size = 1};
            cr_assert_eq(emb_lookup(dyn, &b, &gp, g, dim), 0, "%s", emb_last_error());
            cr_assert_eq(emb_lookup(ref, &rb, &gp, rg, dim), 0);
            cr_assert_eq(memcmp(g, rg, (size_t)nnz * (size_t)dim * sizeof *g), 0,
                         "gather of %lld ids, variant %d", (long long)nnz, v);
        }
        free(g), free(rg);
        /* fixed-size bags longer than a span, and under a strategy on two threads */
        EmbStrategy *st;
        const EmbStrategyOptions so = {.nthreads = 2};
        cr_assert_eq(emb_strategy_parallel(&st, &so), 0);
        const int64_t bs = nnz / 3;
        EmbBatch b = {.ids = ids, .nnz = 3 * bs, .nbags = 3, .bag_size = bs};
        EmbBatch rb = {.ids = rids, .nnz = 3 * bs, .nbags = 3, .bag_size = bs};
        float *po[1] = {out}, *rpo[1] = {rout};
        EmbOutputs eo = {.per_table = po}, reo = {.per_table = rpo};
        cr_assert_eq(emb_maplookup(st, &dyn, 1, &b, &pools[1], &eo), 0, "%s", emb_last_error());
        cr_assert_eq(emb_maplookup(st, &ref, 1, &rb, &pools[1], &reo), 0);
        cr_assert_eq(memcmp(out, rout, 3 * (size_t)dim * sizeof *out), 0, "fixed bags of %lld",
                     (long long)bs);
        emb_strategy_destroy(&st);
        free(ids), free(rids), free(ids32), free(w), free(out), free(rout), free(rows);
        emb_table_destroy(&dyn);
        emb_table_destroy(&ref);
    }
}

Test(dynamic, missing_ids)
{
    const int64_t unknown[2] = {5, 123456789012345};
    float out[2 * D];
    for (int mode = 0; mode < 3; mode++) {
        EmbDynamicOptions o = {.missing = (EmbDynamicMissing)mode, .missing_value = 0.25f};
        EmbTable *t;
        cr_assert_eq(emb_table_dynamic_create(&t, D, EMB_F16, &o), 0);
        tu_poison(out, 2 * D);
        const int r = emb_lookup_sum(t, unknown, 2, 1, out, D);
        if (mode == EMB_DYN_MISSING_ERROR) {
            cr_assert_eq(r, EMB_ENOTFOUND);
            cr_assert(strstr(emb_last_error(), "123456789012345") || strstr(emb_last_error(), "5"));
            cr_assert(tu_is_poison(out, 2 * D), "a failed lookup wrote");
        } else {
            cr_assert_eq(r, 0);
            for (int i = 0; i < 2 * D; i++)
                cr_assert_eq(out[i], mode == 0 ? 0.0f : 0.25f);
        }
        cr_assert_eq(emb_table_dynamic_contains(t, 5), 0);
        int64_t neg = -3;
        cr_assert_eq(emb_lookup_sum(t, &neg, 1, 1, out, D), EMB_ERANGE);
        emb_table_destroy(&t);
    }
}

/* Issue 23's gaps: id INT64_MAX (which no lookup or update reaches) is refused by import
   as by them; a sketch of 2^30 counters a row and a NaN missing_value under
   EMB_TABLE_CHECK_FINITE are refused at creation, the message naming them. */
Test(dynamic, import_and_create_refuse_what_lookups_refuse)
{
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_dynamic_create(&t, D, EMB_F32, NULL), 0);
    const int64_t ids[2] = {7, INT64_MAX};
    float rows[2 * D] = {0};
    cr_assert_eq(emb_table_dynamic_import(t, ids, rows, D, 2), EMB_ERANGE);
    cr_assert(strstr(emb_last_error(), "id 9223372036854775807 at position 1"), "%s",
              emb_last_error());
    cr_assert_eq(emb_table_dynamic_contains(t, 7), 0, "nothing imported");
    float out[D];
    cr_assert_eq(emb_lookup_sum(t, &ids[1], 1, 1, out, D), EMB_ERANGE, "as a lookup refuses");
    emb_table_destroy(&t);
    EmbDynamicOptions o = {.admit_after = 2, .sketch_width = 1 << 30};
    cr_assert_eq(emb_table_dynamic_create(&t, D, EMB_F32, &o), EMB_EINVAL);
    cr_assert(strstr(emb_last_error(), "sketch_width 1073741824 is more than 16777216"), "%s",
              emb_last_error());
    o.sketch_width = EMB_DYN_SKETCH_WIDTH_MAX / 1024; /* the cap's neighbourhood is fine */
    cr_assert_eq(emb_table_dynamic_create(&t, D, EMB_F32, &o), 0, "%s", emb_last_error());
    emb_table_destroy(&t);
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 3; k++) {
        EmbDynamicOptions m = {.missing = EMB_DYN_MISSING_CONSTANT, .missing_value = bad[k],
                               .table.flags = EMB_TABLE_CHECK_FINITE};
        cr_assert_eq(emb_table_dynamic_create(&t, D, EMB_F32, &m), EMB_ENONFINITE);
        cr_assert(strstr(emb_last_error(), "missing_value"), "%s", emb_last_error());
        cr_assert_null(t);
        m.table.flags = 0; /* a table that does not check: as before */
        cr_assert_eq(emb_table_dynamic_create(&t, D, EMB_F32, &m), 0);
        emb_table_destroy(&t);
    }
}

/* A created row holds emb_table_initialize's values of column id, whatever the order. */
Test(dynamic, created_rows_depend_on_id_only)
{
    const EmbInitializer in = {EMB_INIT_NORMAL, 0.0f, 0.1f, 42};
    EmbDynamicOptions o = {.init = in};
    EmbTable *a, *b, *plain;
    cr_assert_eq(emb_table_dynamic_create(&a, D, EMB_BF16, &o), 0);
    cr_assert_eq(emb_table_dynamic_create(&b, D, EMB_BF16, &o), 0);
    cr_assert_eq(emb_table_create(&plain, 1000, D, EMB_BF16, NULL), 0);
    cr_assert_eq(emb_table_initialize(plain, &in), 0);
    cr_assert_eq(emb_table_initialize(a, &in), 0); /* empty: sets the initializer it has */
    const int64_t ids[4] = {777, 3, 999, 12};
    for (int k = 0; k < 4; k++) {
        void *p;
        cr_assert_eq(emb_table_column_pointer(a, ids[k], EMB_CTX_UPDATE, &p), 0);
        cr_assert_eq(emb_table_column_pointer(b, ids[3 - k], EMB_CTX_UPDATE, &p), 0);
    }
    for (int k = 0; k < 4; k++) {
        void *pa, *pb, *pp;
        emb_table_column_pointer(a, ids[k], EMB_CTX_FORWARD, &pa);
        emb_table_column_pointer(b, ids[k], EMB_CTX_FORWARD, &pb);
        emb_table_column_pointer(plain, ids[k], EMB_CTX_FORWARD, &pp);
        cr_assert_eq(memcmp(pa, pp, D * 2), 0, "id %lld", (long long)ids[k]);
        cr_assert_eq(memcmp(pb, pp, D * 2), 0);
    }
    emb_table_destroy(&a);
    emb_table_destroy(&b);
    emb_table_destroy(&plain);
}

/* Steps of every optimizer: known and new ids (created as zeros) against the reference. */
Test(dynamic, optimizers_match_reference)
{
    for (int kind = EMB_OPT_SGD; kind <= EMB_OPT_ADAM; kind++) {
        EmbTable *dyn;
        Ref ref;
        make_pair(&dyn, &ref, NULL, 20, 3);
        EmbOptimizerConfig cfg = emb_optimizer_defaults((EmbOptimizerKind)kind, 0.05f);
        cfg.weight_decay = kind == EMB_OPT_ADAM ? 0.01f : 0.0f;
        EmbOptimizer *o1, *o2;
        emb_optimizer_create(&o1, &cfg);
        emb_optimizer_create(&o2, &cfg);
        EmbIndexer *i1, *i2;
        emb_indexer_create(&i1);
        emb_indexer_create(&i2);
        EmbGrad *g1, *g2;
        emb_grad_create(&g1);
        emb_grad_create(&g2);
        uint64_t s = 11 + (uint64_t)kind;
        for (int step = 0; step < 4; step++) {
            int64_t ids[32], rids[32];
            float dy[8 * D];
            for (int k = 0; k < 32; k++) {
                ids[k] = tu_rand(&s) % 4 == 0 ? big_id(&s) % 1000 + (int64_t)step * 1000
                                              : ref.ids[tu_rand(&s) % 20];
                rids[k] = ref_row(&ref, ids[k], true);
            }
            for (int i = 0; i < 8 * D; i++)
                dy[i] = tu_randf(&s);
            const EmbPooling mean = EMB_POOLING_MEAN;
            EmbBatch b = {.ids = ids, .nnz = 32, .nbags = 8, .bag_size = 4};
            EmbBatch rb = b;
            rb.ids = rids;
            cr_assert_eq(emb_lookup_backward(dyn, &b, &mean, dy, D, g1), 0);
            cr_assert_eq(emb_lookup_backward(ref.t, &rb, &mean, dy, D, g2), 0);
            cr_assert_eq(emb_update(o1, dyn, g1, i1, 0), 0, "%s", emb_last_error());
            cr_assert_eq(emb_update(o2, ref.t, g2, i2, 0), 0);
        }
        EmbTable *view, *rstate;
        cr_assert_eq(emb_optimizer_state(o1, dyn, 0, &view, NULL), 0);
        cr_assert_eq(emb_optimizer_state(o2, ref.t, 0, &rstate, NULL), 0);
        for (int64_t r = 0; r < ref.n; r++) {
            void *pd, *pr;
            emb_table_column_pointer(dyn, ref.ids[r], EMB_CTX_FORWARD, &pd);
            emb_table_column_pointer(ref.t, r, EMB_CTX_FORWARD, &pr);
            cr_assert_eq(memcmp(pd, pr, D * 4), 0, "optimizer %d row %lld", kind, (long long)r);
            if (rstate) {
                emb_table_column_pointer(view, ref.ids[r], EMB_CTX_FORWARD, &pd);
                emb_table_column_pointer(rstate, r, EMB_CTX_FORWARD, &pr);
                cr_assert_eq(memcmp(pd, pr, (size_t)emb_table_featuresize(rstate) * 4), 0,
                             "optimizer %d state of row %lld", kind, (long long)r);
            }
        }
        cr_assert_eq(emb_table_dynamic_step(dyn), 4);
        emb_grad_destroy(&g1);
        emb_grad_destroy(&g2);
        emb_indexer_destroy(&i1);
        emb_indexer_destroy(&i2);
        emb_optimizer_destroy(&o1);
        emb_optimizer_destroy(&o2);
        emb_table_destroy(&dyn);
        emb_table_destroy(&ref.t);
    }
}

/* emb_update_many over 3 dynamic tables: the same bits for 1, 2, 3 threads, splits 1, 4
   (the partitioned indexing, whose distinct ids are applied in place). */
static void run_many(int nthreads, int splits, int kind, int64_t out_ids[3][512],
                     float out_rows[3][512 * D], int64_t nout[3])
{
    EmbTable *t[3];
    EmbDynamicOptions o = {.init = {EMB_INIT_UNIFORM, -0.1f, 0.1f, 9}, .admit_after = 2,
                           .sketch_width = 1024};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(emb_table_dynamic_create(&t[i], D, EMB_F32, &o), 0);
    EmbStrategy *st;
    const EmbStrategyOptions so = {.nthreads = nthreads, .num_splits = splits};
    /* auto: with num_splits > 1 each table's ids are partitioned (update/pindex.c) */
    cr_assert_eq(emb_strategy_auto(&st, &so), 0);
    EmbOptimizerConfig cfg = emb_optimizer_defaults((EmbOptimizerKind)kind, 0.1f);
    EmbOptimizer *opt;
    emb_optimizer_create(&opt, &cfg);
    EmbIndexer *ix[3];
    EmbGrad *g[3];
    for (int i = 0; i < 3; i++) {
        emb_indexer_create(&ix[i]);
        emb_grad_create(&g[i]);
    }
    uint64_t s = 5;
    for (int step = 0; step < 5; step++) {
        int64_t ids[3][256];
        float dy[64 * D];
        EmbBatch b[3];
        for (int i = 0; i < 3; i++) {
            for (int k = 0; k < 256; k++)
                ids[i][k] = (int64_t)(tu_rand(&s) % 300) * 7919 + i;
            b[i] = (EmbBatch){.ids = ids[i], .nnz = 256, .nbags = 64, .bag_size = 4};
        }
        for (int k = 0; k < 64 * D; k++)
            dy[k] = tu_randf(&s);
        for (int i = 0; i < 3; i++)
            cr_assert_eq(emb_lookup_backward(t[i], &b[i], NULL, dy, D, g[i]), 0);
        cr_assert_eq(emb_update_many(st, opt, t, (const EmbGrad *const *)g, 3, ix, 0), 0,
                     "%s", emb_last_error());
    }
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(emb_table_dynamic_export(t[i], out_ids[i], out_rows[i], D, 512, &nout[i]),
                     0, "%s", emb_last_error());
        emb_indexer_destroy(&ix[i]);
        emb_grad_destroy(&g[i]);
    }
    emb_optimizer_destroy(&opt);
    for (int i = 0; i < 3; i++)
        emb_table_destroy(&t[i]);
    emb_strategy_destroy(&st);
}

Test(dynamic, update_many_bit_identical)
{
    static int64_t ids0[3][512], ids1[3][512];
    static float rows0[3][512 * D], rows1[3][512 * D];
    int64_t n0[3], n1[3];
    for (int kind = EMB_OPT_SGD; kind <= EMB_OPT_ADAM; kind++) {
        run_many(1, 1, kind, ids0, rows0, n0);
        cr_assert_gt(n0[0], 100);
        const int conf[3][2] = {{2, 1}, {2, 4}, {3, 4}};
        for (int c = 0; c < 3; c++) {
            run_many(conf[c][0], conf[c][1], kind, ids1, rows1, n1);
            for (int i = 0; i < 3; i++) {
                cr_assert_eq(n0[i], n1[i]);
                cr_assert_eq(memcmp(ids0[i], ids1[i], (size_t)n0[i] * 8), 0);
                cr_assert_eq(memcmp(rows0[i], rows1[i], (size_t)n0[i] * D * 4), 0,
                             "optimizer %d, %d threads, %d splits", kind, conf[c][0],
                             conf[c][1]);
            }
        }
    }
}

/* One sparse SGD step of @n ids with gradient rows of @g. */
static int sgd_step(EmbOptimizer *o, EmbTable *t, EmbIndexer *ix, const int64_t *ids, int n,
                    float g)
{
    float rows[16 * D];
    for (int i = 0; i < n * D; i++)
        rows[i] = g;
    EmbGrad *gr;
    emb_grad_create(&gr);
    const EmbSparseGrad sp = {.ids = ids, .n = n, .featuresize = D, .values = rows, .stride = D};
    int r = emb_grad_set_sparse(gr, t, &sp);
    r = r ? r : emb_update(o, t, gr, ix, 0);
    emb_grad_destroy(&gr);
    return r;
}

/* A dynamic table of options @o, an optimizer of @kind and an indexer. */
static void make_trio(const EmbDynamicOptions *o, EmbOptimizerKind kind, float lr, EmbTable **t,
                      EmbOptimizer **opt, EmbIndexer **ix)
{
    cr_assert_eq(emb_table_dynamic_create(t, D, EMB_F32, o), 0, "%s", emb_last_error());
    const EmbOptimizerConfig cfg = emb_optimizer_defaults(kind, lr);
    cr_assert_eq(emb_optimizer_create(opt, &cfg), 0);
    cr_assert_eq(emb_indexer_create(ix), 0);
}

static void free_trio(EmbTable **t, EmbOptimizer **opt, EmbIndexer **ix)
{
    emb_indexer_destroy(ix);
    emb_optimizer_destroy(opt);
    emb_table_destroy(t);
}

Test(dynamic, admission)
{
    EmbDynamicOptions o = {.admit_after = 3, .sketch_width = 256};
    EmbTable *t;
    EmbOptimizer *opt;
    EmbIndexer *ix;
    make_trio(&o, EMB_OPT_SGD, 1.0f, &t, &opt, &ix);
    const int64_t a[2] = {100, 100}, b = 200;
    for (int step = 1; step <= 3; step++) {
        cr_assert_eq(sgd_step(opt, t, ix, a, 2, 1.0f), 0); /* repeats count once a step */
        cr_assert_eq(emb_table_dynamic_contains(t, 100), step == 3, "step %d", step);
    }
    cr_assert_eq(sgd_step(opt, t, ix, &b, 1, 1.0f), 0);
    cr_assert_eq(emb_table_dynamic_contains(t, 200), 0);
    float out[D];
    cr_assert_eq(emb_lookup_sum(t, a, 1, 1, out, D), 0);
    for (int i = 0; i < D; i++) /* created on the third update, which then applied: -2 */
        cr_assert_eq(out[i], -2.0f);
    cr_assert_eq(emb_lookup_sum(t, &b, 1, 1, out, D), 0);
    cr_assert_eq(out[0], 0.0f);
    free_trio(&t, &opt, &ix);
}

Test(dynamic, eviction_and_reuse)
{
    EmbDynamicOptions o = {.capacity = 16, .init = {EMB_INIT_CONSTANT, 0.5f, 0, 0}};
    EmbTable *t;
    EmbOptimizer *opt;
    EmbIndexer *ix;
    make_trio(&o, EMB_OPT_ADAGRAD, 0.1f, &t, &opt, &ix);
    const int64_t ids[4] = {1, 2, 3, 4};
    cr_assert_eq(sgd_step(opt, t, ix, ids, 4, 1.0f), 0);       /* step 1: all four */
    cr_assert_eq(sgd_step(opt, t, ix, ids, 2, 1.0f), 0);       /* step 2: 1, 2 */
    cr_assert_eq(sgd_step(opt, t, ix, ids, 1, 1.0f), 0);       /* step 3: 1 */
    EmbDynamicStats st0;
    emb_table_dynamic_stats(t, &st0);
    cr_assert_eq(st0.rows, 4);
    int64_t n;
    EmbDynamicEvict ev = {.ttl = 1};
    cr_assert_eq(emb_table_dynamic_evict(t, &ev, &n), 0);
    cr_assert_eq(n, 2); /* 3 and 4: last updated at step 1, 3 - 1 > 1 */
    cr_assert_eq(emb_table_dynamic_contains(t, 3), 0);
    cr_assert_eq(emb_table_dynamic_contains(t, 2), 1);
    /* by norm, just above row 2's (row 1 goes too when its norm is smaller) */
    void *p1, *p2;
    emb_table_column_pointer(t, 1, EMB_CTX_FORWARD, &p1);
    emb_table_column_pointer(t, 2, EMB_CTX_FORWARD, &p2);
    const float n2 = 4.0f * fabsf(((float *)p2)[0]); /* sqrt(16) x each equal element */
    const int64_t also1 = fabsf(((float *)p1)[0]) * 4.0f < n2 * 1.0001f;
    ev = (EmbDynamicEvict){.min_norm = n2 * 1.0001f};
    cr_assert_eq(emb_table_dynamic_evict(t, &ev, &n), 0);
    cr_assert_eq(n, 1 + also1);
    cr_assert_eq(emb_table_dynamic_contains(t, 2), 0);
    /* a re-created id starts fresh: its row and its optimizer state */
    EmbTable *fresh;
    cr_assert_eq(emb_table_dynamic_create(&fresh, D, EMB_F32, &o), 0);
    EmbOptimizer *opt2;
    const EmbOptimizerConfig cfg = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    emb_optimizer_create(&opt2, &cfg);
    cr_assert_eq(sgd_step(opt, t, ix, &ids[2], 1, 1.0f), 0);
    cr_assert_eq(sgd_step(opt2, fresh, ix, &ids[2], 1, 1.0f), 0);
    void *pa, *pb;
    emb_table_column_pointer(t, 3, EMB_CTX_FORWARD, &pa);
    emb_table_column_pointer(fresh, 3, EMB_CTX_FORWARD, &pb);
    cr_assert_eq(memcmp(pa, pb, D * 4), 0);
    EmbDynamicStats st1;
    emb_table_dynamic_stats(t, &st1);
    cr_assert_eq(st1.slab_rows, st0.slab_rows, "freed rows are reused");
    ev = (EmbDynamicEvict){.ttl = -1};
    cr_assert_eq(emb_table_dynamic_evict(t, &ev, &n), EMB_EINVAL);
    emb_optimizer_destroy(&opt2);
    emb_table_destroy(&fresh);
    free_trio(&t, &opt, &ix);
}

Test(dynamic, memory_cap_writes_nothing)
{
    EmbDynamicOptions o = {.max_rows = 3};
    EmbTable *t;
    EmbOptimizer *opt;
    EmbIndexer *ix;
    make_trio(&o, EMB_OPT_ADAM, 0.1f, &t, &opt, &ix);
    const int64_t ids[4] = {10, 20, 30, 40};
    cr_assert_eq(sgd_step(opt, t, ix, ids, 2, 1.0f), 0);
    int64_t e0[4], e1[4], n0, n1;
    float r0[4 * D], r1[4 * D];
    emb_table_dynamic_export(t, e0, r0, D, 4, &n0);
    cr_assert_eq(sgd_step(opt, t, ix, ids, 4, 1.0f), EMB_ENOMEM);
    cr_assert(strstr(emb_last_error(), "max_rows"));
    emb_table_dynamic_export(t, e1, r1, D, 4, &n1);
    cr_assert_eq(n0, 2);
    cr_assert_eq(n1, 2);
    cr_assert_eq(memcmp(r0, r1, sizeof(float) * 2 * D), 0, "a failed update wrote");
    cr_assert_eq(emb_table_dynamic_step(t), 1);
    cr_assert_eq(sgd_step(opt, t, ix, ids, 3, 1.0f), 0);
    float one[D] = {0};
    cr_assert_eq(emb_table_dynamic_import(t, &ids[3], one, D, 1), EMB_ENOMEM);
    cr_assert_eq(emb_table_scatter_update(t, &ids[3], 1, one, D), EMB_ENOMEM);
    void *p;
    cr_assert_eq(emb_table_column_pointer(t, 40, EMB_CTX_UPDATE, &p), EMB_ENOMEM);
    free_trio(&t, &opt, &ix);
}

Test(dynamic, export_import)
{
    EmbTable *a;
    Ref ref;
    make_pair(&a, &ref, NULL, 50, 21);
    int64_t ids[50];
    float rows[50 * D];
    int64_t n;
    cr_assert_eq(emb_table_dynamic_export(a, NULL, NULL, 0, 0, &n), 0);
    cr_assert_eq(n, 50);
    cr_assert_eq(emb_table_dynamic_export(a, ids, rows, D, 49, &n), EMB_ERANGE);
    cr_assert_eq(emb_table_dynamic_export(a, ids, rows, D, 50, &n), 0);
    for (int k = 1; k < 50; k++)
        cr_assert_lt(ids[k - 1], ids[k]);
    for (int k = 0; k < 50; k++) {
        float *col;
        emb_table_column_pointer(ref.t, ref_row(&ref, ids[k], false), EMB_CTX_NONE,
                                 (void **)&col);
        cr_assert_eq(memcmp(col, &rows[k * D], D * 4), 0);
    }
    int64_t dup[2] = {ids[0], ids[0]};
    cr_assert_eq(emb_table_dynamic_import(a, dup, rows, D, 2), EMB_EINVAL);
    /* into a table of another capacity: the same export */
    EmbDynamicOptions small = {.capacity = 1};
    EmbTable *b;
    cr_assert_eq(emb_table_dynamic_create(&b, D, EMB_F32, &small), 0);
    cr_assert_eq(emb_table_dynamic_import(b, ids, rows, D, 50), 0);
    int64_t ids2[50];
    float rows2[50 * D];
    cr_assert_eq(emb_table_dynamic_export(b, ids2, rows2, D, 50, &n), 0);
    cr_assert_eq(memcmp(ids, ids2, sizeof ids), 0);
    cr_assert_eq(memcmp(rows, rows2, sizeof rows), 0);
    float r[D];
    cr_assert_eq(emb_table_read(b, r, D), EMB_ENOTSUP);
    emb_table_destroy(&a);
    emb_table_destroy(&b);
    emb_table_destroy(&ref.t);
}

/* ---- checkpoints ---------------------------------------------------------------------- */

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

static unsigned char *ck_read(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n);
    cr_assert_eq(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

static void ck_write(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* Training step @s (the same for any run): 8 ids of a pool of 40 large ids, seeded rows;
 * every 4th step evicts rows not updated in the last 3 steps. */
static void ck_step(EmbTable *t, EmbOptimizer *o, EmbIndexer *ix, int s)
{
    uint64_t seed = 1000 + (uint64_t)s;
    int64_t ids[8];
    float rows[8 * D];
    for (int k = 0; k < 8; k++)
        ids[k] = (int64_t)(tu_rand(&seed) % 40) * 1000003 + 7;
    for (int i = 0; i < 8 * D; i++)
        rows[i] = tu_randf(&seed);
    EmbGrad *g;
    emb_grad_create(&g);
    const EmbSparseGrad sp = {.ids = ids, .n = 8, .featuresize = D, .values = rows, .stride = D};
    cr_assert_eq(emb_grad_set_sparse(g, t, &sp), 0, "%s", emb_last_error());
    cr_assert_eq(emb_update(o, t, g, ix, 0), 0, "%s", emb_last_error());
    emb_grad_destroy(&g);
    if (s % 4 == 3) {
        const EmbDynamicEvict ev = {.ttl = 3};
        cr_assert_eq(emb_table_dynamic_evict(t, &ev, NULL), 0);
    }
}

/* Everything of a dynamic table and its optimizer state: ids, rows, state rows, steps. */
typedef struct Snap {
    int64_t n, step, ostep;
    int64_t ids[64];
    float rows[64 * D], state[64 * 2 * D];
} Snap;

static void snap(const EmbTable *t, const EmbOptimizer *o, Snap *s)
{
    memset(s, 0, sizeof *s);
    cr_assert_eq(emb_table_dynamic_export(t, s->ids, s->rows, D, 64, &s->n), 0, "%s",
                 emb_last_error());
    s->step = emb_table_dynamic_step(t);
    EmbTable *v = NULL;
    s->ostep = -1;
    if (!o || emb_optimizer_state(o, t, 0, &v, &s->ostep) != 0 || !v)
        return;
    const int32_t w = emb_table_featuresize(v);
    for (int64_t k = 0; k < s->n; k++) {
        void *p;
        cr_assert_eq(emb_table_column_pointer(v, s->ids[k], EMB_CTX_FORWARD, &p), 0);
        memcpy(&s->state[k * 2 * D], p, (size_t)w * sizeof(float));
    }
}

static void snap_eq(const Snap *a, const Snap *b, const char *what)
{
    cr_assert_eq(a->n, b->n, "%s: %lld rows, %lld", what, (long long)a->n, (long long)b->n);
    cr_assert_eq(a->step, b->step, "%s: table step", what);
    cr_assert_eq(a->ostep, b->ostep, "%s: optimizer step", what);
    cr_assert_eq(memcmp(a->ids, b->ids, sizeof a->ids), 0, "%s: ids", what);
    cr_assert_eq(memcmp(a->rows, b->rows, sizeof a->rows), 0, "%s: rows", what);
    cr_assert_eq(memcmp(a->state, b->state, sizeof a->state), 0, "%s: state", what);
}

static int ck_save(EmbTable *t, const EmbOptimizer *o, const char *dir, int64_t step, char *path)
{
    const EmbCheckpointVar v = {"emb", t};
    const EmbSaverOptions so = {.var_list = &v, .nvars = 1, .optimizer = o};
    EmbSaver *sv;
    cr_assert_eq(emb_saver_create(&sv, dir, "dyn", &so), 0, "%s", emb_last_error());
    const int r = emb_saver_save(sv, NULL, step, path, 512);
    emb_saver_destroy(&sv);
    return r;
}

static int ck_restore(EmbTable *t, EmbOptimizer *o, const char *path)
{
    const EmbCheckpointVar v = {"emb", t};
    const EmbRestoreOptions ro = {.var_list = &v, .nvars = 1, .optimizer = o};
    return emb_checkpoint_restore_ex(NULL, path, &ro, NULL);
}

static const EmbDynamicOptions CK_OPTS = {.capacity = 64, .admit_after = 2, .sketch_width = 64,
                                          .init = {EMB_INIT_UNIFORM, -0.1f, 0.1f, 5}};

/* Train, save half-way, restore into fresh tables of another capacity and a fresh
 * optimizer, train on: the same bits as training straight through, for every optimizer. */
Test(dynamic_ckpt, resume_is_bit_identical)
{
    char dir[64], path[512];
    tmpdir(dir);
    const EmbOptimizerKind kinds[] = {EMB_OPT_SGD, EMB_OPT_ADAGRAD, EMB_OPT_ROWWISE_ADAGRAD,
                                      EMB_OPT_FTRL, EMB_OPT_ADAM};
    static Snap a, b, c;
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        EmbTable *t1, *t2, *t3;
        EmbOptimizer *o1, *o2, *o3;
        EmbIndexer *ix;
        make_trio(&CK_OPTS, kinds[k], 0.05f, &t1, &o1, &ix);
        const EmbOptimizerConfig cfg = emb_optimizer_defaults(kinds[k], 0.05f);
        emb_optimizer_create(&o2, &cfg);
        emb_optimizer_create(&o3, &cfg);
        cr_assert_eq(emb_table_dynamic_create(&t2, D, EMB_F32, &CK_OPTS), 0);
        EmbDynamicOptions small = CK_OPTS;
        small.capacity = 1;
        cr_assert_eq(emb_table_dynamic_create(&t3, D, EMB_F32, &small), 0);
        for (int s = 0; s < 24; s++)
            ck_step(t1, o1, ix, s);
        for (int s = 0; s < 14; s++) /* rows last updated at 13 and 14 outlive step 15's
                                        eviction: the saved steps matter */
            ck_step(t2, o2, ix, s);
        cr_assert_eq(ck_save(t2, o2, dir, 14, path), 0, "%s", emb_last_error());
        snap(t2, o2, &b);
        cr_assert_gt(b.n, 4);
        cr_assert_eq(ck_restore(t3, o3, path), 0, "%s", emb_last_error());
        snap(t3, o3, &c);
        snap_eq(&b, &c, "restored");
        for (int s = 14; s < 24; s++)
            ck_step(t3, o3, ix, s);
        snap(t1, o1, &a);
        snap(t3, o3, &c);
        snap_eq(&a, &c, "resumed");
        emb_optimizer_destroy(&o2);
        emb_optimizer_destroy(&o3);
        emb_table_destroy(&t2);
        emb_table_destroy(&t3);
        free_trio(&t1, &o1, &ix);
    }
    rmdir_all(dir);
}

/* Save, evict and train on, restore: the table as saved, the evicted rows back (into the
 * same table and into one of another capacity); what cannot take it is left untouched. */
Test(dynamic_ckpt, round_trip_with_eviction)
{
    char dir[64], path[512];
    tmpdir(dir);
    EmbTable *t;
    EmbOptimizer *o;
    EmbIndexer *ix;
    make_trio(&CK_OPTS, EMB_OPT_ADAM, 0.05f, &t, &o, &ix);
    for (int s = 0; s < 10; s++)
        ck_step(t, o, ix, s);
    static Snap saved, now, other;
    snap(t, o, &saved);
    cr_assert_eq(ck_save(t, o, dir, 10, path), 0, "%s", emb_last_error());
    int64_t n;
    const EmbDynamicEvict ev = {.ttl = 1};
    cr_assert_eq(emb_table_dynamic_evict(t, &ev, &n), 0);
    cr_assert_gt(n, 0);
    for (int s = 10; s < 13; s++)
        ck_step(t, o, ix, s);
    snap(t, o, &now);
    cr_assert_neq(memcmp(&now, &saved, sizeof now), 0);
    cr_assert_eq(ck_restore(t, o, path), 0, "%s", emb_last_error());
    snap(t, o, &now);
    snap_eq(&saved, &now, "restored over an evicted table");
    /* a table capped below the file's rows: EMB_ENOMEM, nothing written */
    EmbDynamicOptions capped = CK_OPTS;
    capped.max_rows = saved.n - 1;
    EmbTable *c;
    EmbOptimizer *oc;
    const EmbOptimizerConfig cfg = emb_optimizer_defaults(EMB_OPT_ADAM, 0.05f);
    emb_optimizer_create(&oc, &cfg);
    cr_assert_eq(emb_table_dynamic_create(&c, D, EMB_F32, &capped), 0);
    ck_step(c, oc, ix, 0);
    snap(c, oc, &other);
    cr_assert_eq(ck_restore(c, oc, path), EMB_ENOMEM);
    cr_assert(strstr(emb_last_error(), "max_rows"), "%s", emb_last_error());
    snap(c, oc, &now);
    snap_eq(&other, &now, "a failed restore");
    emb_optimizer_detach(oc, c); /* its address may come back */
    emb_table_destroy(&c);
    /* another sketch width: EMB_ESHAPE; no admission: the counts are not needed */
    EmbDynamicOptions wide = CK_OPTS;
    wide.sketch_width = 128;
    cr_assert_eq(emb_table_dynamic_create(&c, D, EMB_F32, &wide), 0);
    cr_assert_eq(ck_restore(c, oc, path), EMB_ESHAPE, "%s", emb_last_error());
    cr_assert_eq(emb_table_dynamic_stats(c, &(EmbDynamicStats){0}), 0);
    emb_optimizer_detach(oc, c); /* its address may come back */
    emb_table_destroy(&c);
    EmbDynamicOptions plain = {.capacity = 3};
    cr_assert_eq(emb_table_dynamic_create(&c, D, EMB_F32, &plain), 0);
    cr_assert_eq(ck_restore(c, oc, path), 0, "%s", emb_last_error());
    snap(c, oc, &now);
    snap_eq(&saved, &now, "restored into a table without admission");
    /* restored without the optimizer: the rows, and fresh state for them */
    emb_optimizer_detach(oc, c); /* its address may come back */
    emb_table_destroy(&c);
    cr_assert_eq(emb_table_dynamic_create(&c, D, EMB_F32, &plain), 0);
    const EmbCheckpointVar v = {"emb", c};
    const EmbRestoreOptions ro = {.var_list = &v, .nvars = 1};
    cr_assert_eq(emb_checkpoint_restore_ex(NULL, path, &ro, NULL), 0, "%s", emb_last_error());
    snap(c, NULL, &now);
    cr_assert_eq(now.n, saved.n);
    cr_assert_eq(memcmp(now.rows, saved.rows, sizeof now.rows), 0);
    emb_optimizer_detach(oc, c); /* its address may come back */
    emb_table_destroy(&c);
    /* plain <-> dynamic: EMB_ESHAPE */
    cr_assert_eq(emb_table_create(&c, 64, D, EMB_F32, NULL), 0);
    cr_assert_eq(ck_restore(c, NULL, path), EMB_ESHAPE);
    char ppath[512];
    const EmbCheckpointVar pv = {"emb", c};
    const EmbSaverOptions so = {.var_list = &pv, .nvars = 1};
    EmbSaver *sv;
    cr_assert_eq(emb_saver_create(&sv, dir, "plain", &so), 0);
    cr_assert_eq(emb_saver_save(sv, NULL, 1, ppath, sizeof ppath), 0, "%s", emb_last_error());
    emb_saver_destroy(&sv);
    cr_assert_eq(ck_restore(t, NULL, ppath), EMB_ESHAPE, "%s", emb_last_error());
    emb_optimizer_detach(oc, c); /* its address may come back */
    emb_table_destroy(&c);
    /* the listing and the mapped tables */
    EmbCheckpoint *ck;
    cr_assert_eq(emb_checkpoint_open(&ck, path, EMB_CHECKPOINT_MMAP), 0, "%s", emb_last_error());
    int seen = 0;
    for (int64_t i = 0; i < emb_checkpoint_count(ck); i++) {
        EmbCheckpointEntry e;
        cr_assert_eq(emb_checkpoint_entry(ck, i, &e), 0);
        cr_assert(e.dynamic);
        cr_assert_eq(e.dyn_step, 10);
        cr_assert_eq(e.ncolumns, strcmp(e.name, "emb/dynamic.sketch") ? saved.n : 4);
        EmbTable *m;
        if (strcmp(e.name, "emb/dynamic.ids") == 0) {
            seen |= 1;
            cr_assert_str_eq(e.type, "I64");
            cr_assert_str_eq(e.slot, "dynamic.ids");
            cr_assert_eq(emb_checkpoint_table(ck, e.name, &m), EMB_EINVAL);
        } else if (strcmp(e.name, "emb") == 0) {
            seen |= 2;
            cr_assert_str_eq(e.type, "F32");
            cr_assert_eq(emb_checkpoint_table(ck, e.name, &m), 0);
            const int64_t k = saved.n - 1;
            void *p;
            emb_table_column_pointer(m, k, EMB_CTX_FORWARD, &p);
            cr_assert_eq(memcmp(p, &saved.rows[k * D], D * 4), 0, "rows in id order");
        }
    }
    cr_assert_eq(seen, 3);
    emb_checkpoint_close(&ck);
    emb_optimizer_destroy(&oc);
    free_trio(&t, &o, &ix);
    rmdir_all(dir);
}

/* Rewrites tensor @name's element @k (int64) of the checkpoint bytes @b (@n) to @v, with
 * every checksum made right again: a file that lies with valid checksums. */
static void ck_forge(unsigned char *b, size_t n, const char *name, int64_t k, int64_t v)
{
    uint64_t hn = 0;
    for (int i = 0; i < 8; i++)
        hn |= (uint64_t)b[i] << (8 * i);
    char *h = (char *)b + 8;
    char key[128];
    snprintf(key, sizeof key, "\"%s\":{", name);
    char *e = memmem(h, hn, key, strlen(key));
    cr_assert_not_null(e);
    unsigned long long b0, b1;
    cr_assert_eq(sscanf(strstr(e, "data_offsets"), "data_offsets\":[%llu,%llu]", &b0, &b1), 2);
    unsigned char *data = b + 8 + hn;
    cr_assert_leq(8 + hn + b1, n);
    memcpy(data + b0 + 8 * k, &v, 8);
    char sum[17], hex[17];
    snprintf(sum, sizeof sum, "%016llx", (unsigned long long)XXH3_64bits(data + b0, b1 - b0));
    snprintf(key, sizeof key, "\\\"%s\\\":\\\"", name); /* in the escaped metadata */
    char *s = memmem(h, hn, key, strlen(key));
    cr_assert_not_null(s);
    memcpy(s + strlen(key), sum, 16);
    char *digits = memmem(h, hn, "\"header_xxh3\":\"", 15);
    cr_assert_not_null(digits);
    digits += 15;
    memset(digits, '0', 16);
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)XXH3_64bits(h, hn));
    memcpy(digits, hex, 16);
}

/* Damaged files: EMB_ECORRUPT and the table untouched; lying files with valid checksums
 * (a repeated id, ids out of order, a negative id, a step from the future) too. */
Test(dynamic_ckpt, damaged_files)
{
    char dir[64], path[512], bad[600];
    tmpdir(dir);
    EmbTable *t;
    EmbOptimizer *o;
    EmbIndexer *ix;
    make_trio(&CK_OPTS, EMB_OPT_ADAGRAD, 0.05f, &t, &o, &ix);
    for (int s = 0; s < 6; s++)
        ck_step(t, o, ix, s);
    cr_assert_eq(ck_save(t, o, dir, 6, path), 0, "%s", emb_last_error());
    static Snap before, after;
    ck_step(t, o, ix, 6); /* the table differs from the file */
    snap(t, o, &before);
    size_t n;
    unsigned char *b = ck_read(path, &n);
    snprintf(bad, sizeof bad, "%s/bad.safetensors", dir);
    for (size_t i = 0; i < n; i += 1 + i / 64) { /* flipped bytes, denser at the start */
        b[i] ^= 0x20;
        ck_write(bad, b, n);
        b[i] ^= 0x20;
        const int r = ck_restore(t, o, bad);
        cr_assert(r == EMB_ECORRUPT, "byte %zu: %d %s", i, r,
                  emb_last_error());
        snap(t, o, &after);
        snap_eq(&before, &after, "a damaged file");
    }
    for (size_t len = 0; len < n; len += 1 + len / 16) {
        ck_write(bad, b, len);
        cr_assert_eq(ck_restore(t, o, bad), EMB_ECORRUPT, "%zu bytes", len);
    }
    int64_t ids[64];
    float rows[64 * D];
    int64_t rows_n;
    EmbTable *src; /* the saved ids, from a restored copy */
    cr_assert_eq(emb_table_dynamic_create(&src, D, EMB_F32, &CK_OPTS), 0);
    cr_assert_eq(ck_restore(src, NULL, path), 0);
    cr_assert_eq(emb_table_dynamic_export(src, ids, rows, D, 64, &rows_n), 0);
    cr_assert_gt(rows_n, 2);
    emb_table_destroy(&src);
    const struct {
        const char *tensor;
        int64_t k, v;
    } lies[] = {
        {"emb/dynamic.ids", 1, ids[0]},      /* a repeated id */
        {"emb/dynamic.ids", 0, ids[2]},      /* out of order */
        {"emb/dynamic.ids", 0, -5},          /* negative */
        {"emb/dynamic.last", 1, 7},          /* a step after the table's 6 */
        {"emb/dynamic.last", 0, -1},
    };
    for (size_t i = 0; i < sizeof lies / sizeof *lies; i++) {
        unsigned char *f = malloc(n);
        memcpy(f, b, n);
        ck_forge(f, n, lies[i].tensor, lies[i].k, lies[i].v);
        ck_write(bad, f, n);
        free(f);
        cr_assert_eq(ck_restore(t, o, bad), EMB_ECORRUPT, "lie %zu: %s", i, emb_last_error());
        snap(t, o, &after);
        snap_eq(&before, &after, "a lying file");
    }
    /* the forger itself is right: an unchanged value restores */
    unsigned char *f = malloc(n);
    memcpy(f, b, n);
    ck_forge(f, n, "emb/dynamic.ids", 0, ids[0]);
    ck_write(bad, f, n);
    free(f);
    cr_assert_eq(ck_restore(t, o, bad), 0, "%s", emb_last_error());
    free(b);
    free_trio(&t, &o, &ix);
    rmdir_all(dir);
}

/* ---- the store ------------------------------------------------------------------------ */

/* What a table (dynamic or partitioned over dynamic shards) holds of ck_step's 40 ids. */
typedef struct PoolSnap {
    int has[40];
    float rows[40 * D], state[40 * 2 * D];
    int64_t step, ostep;
} PoolSnap;

static void pool_snap(const EmbTable *t, const EmbOptimizer *o, PoolSnap *s)
{
    memset(s, 0, sizeof *s);
    EmbTable *v = NULL;
    s->ostep = -1;
    if (o)
        emb_optimizer_state(o, t, 0, &v, &s->ostep);
    s->step = emb_table_dynamic_step(t);
    for (int k = 0; k < 40; k++) {
        const int64_t id = (int64_t)k * 1000003 + 7;
        s->has[k] = emb_table_dynamic_contains(t, id);
        void *p;
        cr_assert_eq(emb_table_column_pointer(t, id, EMB_CTX_FORWARD, &p), 0);
        memcpy(&s->rows[k * D], p, D * 4);
        if (v) {
            cr_assert_eq(emb_table_column_pointer(v, id, EMB_CTX_FORWARD, &p), 0);
            memcpy(&s->state[k * 2 * D], p, (size_t)emb_table_featuresize(v) * 4);
        }
    }
}

static void pool_eq(const PoolSnap *a, const PoolSnap *b, const char *what, int q)
{
    cr_assert_eq(a->step, b->step, "%s %d: step", what, q);
    cr_assert_eq(a->ostep, b->ostep, "%s %d: optimizer step", what, q);
    cr_assert_eq(memcmp(a->has, b->has, sizeof a->has), 0, "%s %d: rows held", what, q);
    cr_assert_eq(memcmp(a->rows, b->rows, sizeof a->rows), 0, "%s %d: rows", what, q);
    cr_assert_eq(memcmp(a->state, b->state, sizeof a->state), 0, "%s %d: state", what, q);
}

Test(dynamic_store, get_initialize_save_restore)
{
    EmbStore *s;
    cr_assert_eq(emb_store_create(&s), 0);
    const EmbDynamicOptions dopt = {.capacity = 8, .admit_after = 1};
    const EmbInitializer init = {EMB_INIT_NORMAL, 0.0f, 0.5f, 42};
    EmbVariableSpec v = {.name = "items", .featuresize = D, .dtype = EMB_F32, .init = init,
                         .trainable = 1, .dynamic = &dopt};
    EmbTable *t, *again;
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_NO, &t), 0, "%s", emb_last_error());
    cr_assert(emb_table_is_dynamic(t));
    cr_assert_str_eq(emb_table_name(t), "items");
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_AUTO, &again), 0, "%s", emb_last_error());
    cr_assert_eq(again, t);
    EmbVariableSpec bad = v;
    bad.dynamic = NULL;
    bad.ncolumns = 10;
    cr_assert_eq(emb_store_get(s, &bad, EMB_REUSE_AUTO, &again), EMB_ESHAPE);
    bad = v;
    bad.featuresize = D + 1;
    cr_assert_eq(emb_store_get(s, &bad, EMB_REUSE_AUTO, &again), EMB_ESHAPE);
    bad = v;
    bad.name = "other";
    bad.ncolumns = 100;
    cr_assert_eq(emb_store_get(s, &bad, EMB_REUSE_NO, &again), EMB_EINVAL);
    bad.ncolumns = 0;
    bad.nshards = 2;
    bad.partition = EMB_PARTITION_DIV;
    cr_assert_eq(emb_store_get(s, &bad, EMB_REUSE_NO, &again), EMB_EINVAL);
    bad.nshards = 0;
    bad.init = (EmbInitializer){EMB_INIT_UNIFORM_UNIT_SCALING, 1.0f, 0, 0};
    cr_assert_eq(emb_store_get(s, &bad, EMB_REUSE_NO, &again), EMB_EINVAL);
    int64_t n;
    cr_assert_eq(emb_store_list(s, 0, NULL, 0, &n), 0);
    cr_assert_eq(n, 1, "failed gets add nothing");
    /* over 3 shards: the same rows as one table (checked after the training below) */
    EmbVariableSpec sharded = v;
    sharded.name = "items3";
    sharded.nshards = 3;
    sharded.partition = EMB_PARTITION_MOD;
    EmbTable *t3;
    cr_assert_eq(emb_store_get(s, &sharded, EMB_REUSE_NO, &t3), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_nshards(t3), 3);
    cr_assert_str_eq(emb_table_name(emb_table_shard(t3, 2)), "items3/part_2");
    cr_assert_eq(emb_store_get(s, &sharded, EMB_REUSE_AUTO, &again), 0, "%s", emb_last_error());
    cr_assert_eq(again, t3);
    /* rows are created with the spec's initializer, as by a table made directly */
    EmbDynamicOptions direct = dopt;
    direct.init = init;
    EmbTable *ref;
    cr_assert_eq(emb_table_dynamic_create(&ref, D, EMB_F32, &direct), 0);
    EmbOptimizer *o;
    EmbIndexer *ix;
    const EmbOptimizerConfig cfg = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    emb_optimizer_create(&o, &cfg);
    emb_indexer_create(&ix);
    for (int st = 0; st < 5; st++) {
        ck_step(t, o, ix, st);
        ck_step(ref, o, ix, st);
        ck_step(t3, o, ix, st);
    }
    static Snap a, b;
    snap(t, o, &a);
    snap(ref, o, &b);
    snap_eq(&a, &b, "store-made table");
    static PoolSnap pa, pb;
    pool_snap(t, o, &pa);
    pool_snap(t3, o, &pb);
    pool_eq(&pa, &pb, "store-made partitioned table", 3);
    /* save the store, train on, restore the store */
    char dir[64], path[512];
    tmpdir(dir);
    const EmbSaverOptions so = {.max_to_keep = 1, .optimizer = o};
    EmbSaver *sv;
    cr_assert_eq(emb_saver_create(&sv, dir, "store", &so), 0);
    cr_assert_eq(emb_saver_save(sv, s, 5, path, sizeof path), 0, "%s", emb_last_error());
    for (int st = 5; st < 9; st++)
        ck_step(t, o, ix, st);
    int64_t step = 0;
    const EmbRestoreOptions ro = {.optimizer = o};
    cr_assert_eq(emb_checkpoint_restore_ex(s, path, &ro, &step), 0, "%s", emb_last_error());
    cr_assert_eq(step, 5);
    snap(t, o, &b);
    snap_eq(&a, &b, "restored store");
    pool_snap(t3, o, &pb);
    pool_eq(&pa, &pb, "restored partitioned table", 3);
    /* emb_table_initialize: every row as created under the new initializer, and later ones */
    const EmbInitializer one = {EMB_INIT_CONSTANT, 0.25f, 0, 0};
    cr_assert_eq(emb_table_initialize(t, &one), 0, "%s", emb_last_error());
    float out[D];
    cr_assert_eq(emb_lookup_sum(t, &a.ids[0], 1, 1, out, D), 0);
    cr_assert_eq(out[3], 0.25f);
    const int64_t fresh = 123456789;
    cr_assert_eq(emb_table_dynamic_contains(t, fresh), 0);
    void *p;
    cr_assert_eq(emb_table_column_pointer(t, fresh, EMB_CTX_UPDATE, &p), 0);
    cr_assert_eq(((float *)p)[D - 1], 0.25f);
    cr_assert_eq(emb_table_initialize(t, &(EmbInitializer){EMB_INIT_UNIFORM_UNIT_SCALING, 1, 0,
                                                            0}), EMB_EINVAL);
    /* created with EMB_INIT_NONE: reported uninitialized until restored or marked */
    EmbVariableSpec none = v;
    none.name = "zeros";
    none.init = (EmbInitializer){0};
    cr_assert_eq(emb_store_get(s, &none, EMB_REUSE_NO, &again), 0);
    cr_assert_eq(emb_store_uninitialized(s, NULL, 0, &n), 0);
    cr_assert_eq(n, 1);
    emb_saver_destroy(&sv);
    emb_indexer_destroy(&ix);
    emb_optimizer_destroy(&o);
    emb_table_destroy(&ref);
    emb_store_destroy(&s);
    rmdir_all(dir);
}

/* ---- partitioned (mod) over dynamic shards --------------------------------------------- */

#define NSH 3
#define POOL 300

static int64_t pool_id(int64_t k)
{
    return k * 7919 + 3;
}

static EmbTable *make_part(const EmbDynamicOptions *o)
{
    EmbTable *sh[NSH], *p;
    for (int i = 0; i < NSH; i++)
        cr_assert_eq(emb_table_dynamic_create(&sh[i], D, EMB_F32, o), 0);
    cr_assert_eq(emb_table_partitioned(&p, sh, NSH, EMB_PARTITION_MOD | EMB_PARTITION_OWN_SHARDS,
                                       NULL), 0, "%s", emb_last_error());
    return p;
}

/* One table and the same over 3 shards, trained side by side through lookups, maplookup
 * under every strategy, backward, emb_update_many (2 threads, split: the partitioned
 * indexing) and evictions: the same outputs, rows, state and steps, bit for bit. */
static void part_vs_one(int kind, int nthreads, int splits)
{
    const EmbDynamicOptions o = {.init = {EMB_INIT_UNIFORM, -0.1f, 0.1f, 9}, .admit_after = 2,
                                 .sketch_width = 1 << 14};
    EmbTable *t[2];
    cr_assert_eq(emb_table_dynamic_create(&t[0], D, EMB_F32, &o), 0);
    t[1] = make_part(&o);
    EmbStrategy *st[3];
    const EmbStrategyOptions so = {.nthreads = nthreads, .num_splits = splits};
    emb_strategy_sequential(&st[0]);
    emb_strategy_parallel(&st[1], &so);
    emb_strategy_auto(&st[2], &so);
    EmbOptimizerConfig cfg = emb_optimizer_defaults((EmbOptimizerKind)kind, 0.1f);
    cfg.weight_decay = kind == EMB_OPT_ADAM ? 0.01f : 0.0f;
    EmbOptimizer *opt;
    emb_optimizer_create(&opt, &cfg);
    EmbIndexer *ix[2];
    EmbGrad *g[2];
    for (int i = 0; i < 2; i++) {
        emb_indexer_create(&ix[i]);
        emb_grad_create(&g[i]);
    }
    uint64_t s = 77 + (uint64_t)kind;
    static float out[2][64 * D];
    for (int step = 0; step < 8; step++) {
        int64_t ids[256];
        float dy[64 * D], w[256];
        for (int k = 0; k < 256; k++) {
            ids[k] = pool_id((int64_t)(tu_rand(&s) % POOL));
            w[k] = tu_randf(&s);
        }
        for (int k = 0; k < 64 * D; k++)
            dy[k] = tu_randf(&s);
        const EmbBatch b = {.ids = ids, .nnz = 256, .nbags = 64, .bag_size = 4, .weights = w};
        const EmbPooling pools[] = {EMB_POOLING_SUM, EMB_POOLING_MEAN, {EMB_COMBINER_SUM, 0.5f,
                                                                        0, 0}};
        for (size_t p = 0; p < 3; p++) {
            for (int i = 0; i < 2; i++)
                cr_assert_eq(emb_lookup(t[i], &b, &pools[p], out[i], D), 0, "%s",
                             emb_last_error());
            cr_assert_eq(memcmp(out[0], out[1], sizeof out[0]), 0, "step %d pooling %zu", step,
                         p);
        }
        for (int k = 0; k < 3; k++) {
            const EmbBatch bb[2] = {b, b};
            const EmbPooling pp[2] = {pools[1], pools[1]};
            float *po[2] = {out[0], out[1]};
            const EmbOutputs eo = {.per_table = po};
            cr_assert_eq(emb_maplookup(st[k], t, 2, bb, pp, &eo), 0, "%s", emb_last_error());
            cr_assert_eq(memcmp(out[0], out[1], sizeof out[0]), 0, "strategy %d", k);
        }
        for (int i = 0; i < 2; i++)
            cr_assert_eq(emb_lookup_backward(t[i], &b, &pools[step % 3], dy, D, g[i]), 0);
        cr_assert_eq(emb_update_many(st[2], opt, t, (const EmbGrad *const *)g, 2, ix, 0), 0,
                     "%s", emb_last_error());
        if (step % 3 == 2) {
            const EmbDynamicEvict ev = {.ttl = 2};
            int64_t n0, n1;
            cr_assert_eq(emb_table_dynamic_evict(t[0], &ev, &n0), 0);
            cr_assert_eq(emb_table_dynamic_evict(t[1], &ev, &n1), 0, "%s", emb_last_error());
            cr_assert_eq(n0, n1);
        }
    }
    EmbDynamicStats s0, s1;
    cr_assert_eq(emb_table_dynamic_stats(t[0], &s0), 0);
    cr_assert_eq(emb_table_dynamic_stats(t[1], &s1), 0);
    cr_assert_eq(s0.rows, s1.rows);
    cr_assert_gt(s0.rows, 50);
    cr_assert_eq(s1.step, 8);
    cr_assert_eq(emb_table_dynamic_step(t[1]), 8);
    EmbTable *v[2] = {NULL, NULL};
    for (int i = 0; i < 2 && kind != EMB_OPT_SGD; i++)
        cr_assert_eq(emb_optimizer_state(opt, t[i], 0, &v[i], NULL), 0);
    for (int64_t k = 0; k < POOL; k++) {
        const int64_t id = pool_id(k);
        cr_assert_eq(emb_table_dynamic_contains(t[0], id), emb_table_dynamic_contains(t[1], id));
        void *p0, *p1;
        emb_table_column_pointer(t[0], id, EMB_CTX_FORWARD, &p0);
        emb_table_column_pointer(t[1], id, EMB_CTX_FORWARD, &p1);
        cr_assert_eq(memcmp(p0, p1, D * 4), 0, "kind %d id %lld", kind, (long long)id);
        if (!v[0])
            continue;
        emb_table_column_pointer(v[0], id, EMB_CTX_FORWARD, &p0);
        emb_table_column_pointer(v[1], id, EMB_CTX_FORWARD, &p1);
        cr_assert_eq(memcmp(p0, p1, (size_t)emb_table_featuresize(v[0]) * 4), 0);
    }
    /* each shard holds only its ids, under the ids themselves */
    for (int i = 0; i < NSH; i++) {
        int64_t ids[POOL], n;
        static float rows[POOL * D];
        EmbTable *sh = emb_table_shard(t[1], i);
        cr_assert_eq(emb_table_dynamic_export(sh, ids, rows, D, POOL, &n), 0);
        for (int64_t k = 0; k < n; k++)
            cr_assert_eq(ids[k] % NSH, i);
    }
    for (int i = 0; i < 2; i++) {
        emb_indexer_destroy(&ix[i]);
        emb_grad_destroy(&g[i]);
    }
    emb_optimizer_destroy(&opt);
    for (int k = 0; k < 3; k++)
        emb_strategy_destroy(&st[k]);
    emb_table_destroy(&t[0]);
    emb_table_destroy(&t[1]);
}

Test(dynamic_part, matches_one_table)
{
    for (int kind = EMB_OPT_SGD; kind <= EMB_OPT_ADAM; kind++) {
        part_vs_one(kind, 1, 1);
        part_vs_one(kind, 2, 4);
    }
}

/* Creating rows by column pointer and scatter, unknown ids as errors, initialisation, what
 * is refused. */
Test(dynamic_part, other_paths)
{
    EmbDynamicOptions o = {.missing = EMB_DYN_MISSING_ERROR, .max_rows = 4};
    EmbTable *t = make_part(&o);
    cr_assert_eq(emb_table_ncolumns(t), INT64_MAX);
    void *p;
    cr_assert_eq(emb_table_column_pointer(t, 10, EMB_CTX_UPDATE, &p), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_dynamic_contains(emb_table_shard(t, 1), 10), 1);
    cr_assert_eq(emb_table_dynamic_contains(t, 10), 1);
    const int64_t ids[2] = {10, 11};
    float rows[2 * D], out[D];
    for (int i = 0; i < 2 * D; i++)
        rows[i] = (float)i;
    cr_assert_eq(emb_lookup_sum(t, ids, 2, 1, out, D), EMB_ENOTFOUND);
    cr_assert(strstr(emb_last_error(), "11"), "%s", emb_last_error());
    cr_assert_eq(emb_table_scatter_update(t, ids, 2, rows, D), 0, "%s", emb_last_error());
    cr_assert_eq(emb_lookup_sum(t, &ids[1], 1, 1, out, D), 0, "%s", emb_last_error());
    cr_assert_eq(out[3], (float)(D + 3));
    const EmbInitializer c = {EMB_INIT_CONSTANT, 2.0f, 0, 0};
    cr_assert_eq(emb_table_initialize(t, &c), 0, "%s", emb_last_error());
    cr_assert_eq(emb_lookup_sum(t, ids, 1, 1, out, D), 0);
    cr_assert_eq(out[0], 2.0f);
    /* whole-table reads of the partitioned table: refused */
    float all[D];
    cr_assert_eq(emb_table_read(t, all, D), EMB_ENOTSUP);
    emb_table_destroy(&t);
    /* dynamic and fixed shards do not mix; div needs row counts */
    EmbTable *sh[2];
    cr_assert_eq(emb_table_dynamic_create(&sh[0], D, EMB_F32, NULL), 0);
    cr_assert_eq(emb_table_create(&sh[1], 10, D, EMB_F32, NULL), 0);
    cr_assert_eq(emb_table_partitioned(&t, sh, 2, EMB_PARTITION_MOD, NULL), EMB_EINVAL);
    emb_table_destroy(&sh[1]);
    cr_assert_eq(emb_table_dynamic_create(&sh[1], D, EMB_F32, NULL), 0);
    cr_assert_eq(emb_table_partitioned(&t, sh, 2, EMB_PARTITION_DIV, NULL), EMB_EINVAL);
    cr_assert_eq(emb_table_partitioned(&t, sh, 2, EMB_PARTITION_MOD, NULL), 0);
    emb_table_destroy(&t); /* borrowed shards stay */
    cr_assert_eq(emb_table_dynamic_contains(sh[0], 1), 0);
    emb_table_destroy(&sh[0]);
    emb_table_destroy(&sh[1]);
}

static EmbTable *make_part_n(const EmbDynamicOptions *o, int n)
{
    EmbTable *sh[4], *p;
    for (int i = 0; i < n; i++)
        cr_assert_eq(emb_table_dynamic_create(&sh[i], D, EMB_F32, o), 0);
    cr_assert_eq(emb_table_partitioned(&p, sh, n, EMB_PARTITION_MOD | EMB_PARTITION_OWN_SHARDS,
                                       NULL), 0, "%s", emb_last_error());
    return p;
}

/* A table partitioned over 3 dynamic shards saved as one dynamic table (rows in id order,
 * each shard's admission counts), restored into 1, 2, 3 and 4 shards and trained on: the
 * bits of one table trained straight through (the sketch is wide enough not to collide). */
Test(dynamic_part, checkpoints_into_any_shard_count)
{
    char dir[64], path[512];
    tmpdir(dir);
    EmbDynamicOptions o = CK_OPTS;
    o.sketch_width = 1 << 14;
    const EmbOptimizerConfig cfg = emb_optimizer_defaults(EMB_OPT_ADAM, 0.05f);
    EmbTable *one, *part;
    EmbOptimizer *o1, *o3;
    EmbIndexer *ix;
    cr_assert_eq(emb_table_dynamic_create(&one, D, EMB_F32, &o), 0);
    part = make_part_n(&o, 3);
    emb_optimizer_create(&o1, &cfg);
    emb_optimizer_create(&o3, &cfg);
    emb_indexer_create(&ix);
    for (int s = 0; s < 10; s++) {
        ck_step(one, o1, ix, s);
        ck_step(part, o3, ix, s);
    }
    static PoolSnap want, got;
    pool_snap(one, o1, &want);
    pool_snap(part, o3, &got);
    pool_eq(&want, &got, "partitioned", 3);
    cr_assert_eq(ck_save(part, o3, dir, 10, path), 0, "%s", emb_last_error());
    EmbCheckpoint *ck;
    cr_assert_eq(emb_checkpoint_open(&ck, path, 0), 0, "%s", emb_last_error());
    EmbCheckpointEntry e;
    cr_assert_eq(emb_checkpoint_entry(ck, 0, &e), 0);
    cr_assert_eq(e.nshards, 3);
    cr_assert(e.dynamic);
    emb_checkpoint_close(&ck);
    for (int s = 10; s < 18; s++)
        ck_step(one, o1, ix, s);
    pool_snap(one, o1, &want);
    for (int q = 1; q <= 4; q++) {
        EmbTable *t = NULL;
        if (q == 1)
            cr_assert_eq(emb_table_dynamic_create(&t, D, EMB_F32, &o), 0);
        else
            t = make_part_n(&o, q);
        EmbOptimizer *oq;
        emb_optimizer_create(&oq, &cfg);
        cr_assert_eq(ck_restore(t, oq, path), 0, "%d shards: %s", q, emb_last_error());
        for (int s = 10; s < 18; s++)
            ck_step(t, oq, ix, s);
        pool_snap(t, oq, &got);
        pool_eq(&want, &got, "resumed in shards", q);
        emb_optimizer_destroy(&oq);
        emb_table_destroy(&t);
    }
    /* a single table's checkpoint into shards, too */
    cr_assert_eq(ck_save(one, o1, dir, 18, path), 0, "%s", emb_last_error());
    EmbTable *t = make_part_n(&o, 2);
    EmbOptimizer *oq;
    emb_optimizer_create(&oq, &cfg);
    cr_assert_eq(ck_restore(t, oq, path), 0, "%s", emb_last_error());
    pool_snap(t, oq, &got);
    pool_eq(&want, &got, "a single table restored in shards", 2);
    emb_optimizer_destroy(&oq);
    emb_table_destroy(&t);
    emb_indexer_destroy(&ix);
    emb_optimizer_destroy(&o1);
    emb_optimizer_destroy(&o3);
    emb_table_destroy(&one);
    emb_table_destroy(&part);
    rmdir_all(dir);
}
