/* SPDX-License-Identifier: BSD-2-Clause */
/* test_partition.c — partitioned tables: the seed's mod / div vectors, lookups equal to an
 * unpartitioned table's, ownership, context pass-through, bad shard sets, partitioners. */
#include <criterion/criterion.h>

#include "test_files.h"
#include "test_util.h"

static const unsigned modes[2] = {EMB_PARTITION_MOD, EMB_PARTITION_DIV};

static bool same_columns(const EmbTable *a, const EmbTable *b);

/* The ids shard s holds, in row order, written to ids; returns their count. */
static int shard_ids(int64_t nrows, int32_t nshards, unsigned mode, int32_t s, int64_t *ids)
{
    int n = 0;
    for (int64_t id = 0; id < nrows; id++) {
        int32_t sh;
        int64_t row;
        cr_assert_eq(emb_partition_locate(nrows, nshards, mode, id, &sh, &row), 0);
        if (sh == s) {
            cr_assert_eq(row, n, "id %lld: rows of a shard are in id order", (long long)id);
            ids[n++] = id;
        }
    }
    return n;
}

Test(partition, seed_vectors_13_ids_over_5_shards)
{
    static const int64_t want_mod[5][3] = {{0, 5, 10}, {1, 6, 11}, {2, 7, 12}, {3, 8}, {4, 9}};
    static const int64_t want_div[5][3] = {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9, 10}, {11, 12}};
    static const int want_n[5] = {3, 3, 3, 2, 2};
    for (int m = 0; m < 2; m++)
        for (int32_t s = 0; s < 5; s++) {
            int64_t ids[13];
            const int n = shard_ids(13, 5, modes[m], s, ids);
            cr_assert_eq(n, want_n[s]);
            cr_assert_eq(emb_partition_shard_rows(13, 5, s), want_n[s]);
            /* an error is negative, an empty shard 0 */
            cr_assert_eq(emb_partition_shard_rows(3, 5, 4), 0);
            cr_assert_eq(emb_partition_shard_rows(13, 5, 5), EMB_EINVAL);
            cr_assert_eq(emb_partition_shard_rows(13, 5, -1), EMB_EINVAL);
            cr_assert_eq(emb_partition_shard_rows(-1, 5, 0), EMB_EINVAL);
            cr_assert_eq(emb_partition_shard_rows(13, 0, 0), EMB_EINVAL);
            for (int k = 0; k < n; k++)
                cr_assert_eq(ids[k], m == 0 ? want_mod[s][k] : want_div[s][k],
                             "mode %d shard %d row %d", m, s, k);
        }
}

/* Shards of wrapped memory whose row holds the global id it stands for; look all ids up. */
Test(partition, seed_table_lookup_through_shards)
{
    for (int m = 0; m < 2; m++) {
        float mem[5][3 * 2];
        EmbTable *shards[5];
        for (int32_t s = 0; s < 5; s++) {
            int64_t ids[3];
            const int n = shard_ids(13, 5, modes[m], s, ids);
            for (int k = 0; k < n; k++)
                mem[s][2 * k] = mem[s][2 * k + 1] = (float)ids[k];
            cr_assert_eq(emb_table_wrap(&shards[s], mem[s], n, 2, 2, EMB_F32, NULL), 0);
        }
        EmbTable *t = NULL;
        const EmbTableOptions o = {.name = "seed"};
        cr_assert_eq(emb_table_partitioned(&t, shards, 5, modes[m], &o), 0, "%s",
                     emb_last_error());
        cr_assert_eq(emb_table_ncolumns(t), 13);
        cr_assert_eq(emb_table_featuresize(t), 2);
        cr_assert_eq(emb_table_nshards(t), 5);
        cr_assert_eq(emb_table_shard(t, 3), shards[3]);
        cr_assert_null(emb_table_shard(t, 5));
        cr_assert_eq(emb_table_partition_mode(t), modes[m]);
        cr_assert_null(emb_table_data(t, NULL));
        int64_t ids[13];
        float out[13 * 2];
        for (int k = 0; k < 13; k++)
            ids[k] = 12 - k;
        cr_assert_eq(emb_gather(t, ids, 13, out, 2), 0, "%s", emb_last_error());
        for (int k = 0; k < 13; k++)
            cr_assert_eq(out[2 * k], (float)(12 - k));
        ids[5] = 13; /* out of range: nothing written, the message names the table */
        tu_poison(out, 26);
        cr_assert_eq(emb_gather(t, ids, 13, out, 2), EMB_ERANGE);
        cr_assert_str_eq(emb_last_error(), "id 13 at position 5 is not in [0, 13) "
                                           "(table \"seed\")");
        cr_assert(tu_is_poison(out, 26));
        emb_table_destroy(&t);
        for (int32_t s = 0; s < 5; s++) /* borrowed: still alive, ours to destroy */
            emb_table_destroy(&shards[s]);
    }
}

/* Copies a simple table's columns into any table through the column-pointer interface. */
static void copy_columns(EmbTable *dst, const EmbTable *src)
{
    for (int64_t c = 0; c < emb_table_ncolumns(src); c++) {
        void *from, *to;
        cr_assert_eq(emb_table_column_pointer(src, c, EMB_CTX_NONE, &from), 0);
        cr_assert_eq(emb_table_column_pointer(dst, c, EMB_CTX_UPDATE, &to), 0);
        memcpy(to, from, (size_t)emb_table_featuresize(src) * sizeof(float));
    }
}

/* A ragged batch of nbags bags with ids in [-1, ncol) (some bags empty) and weights. */
typedef struct RandBatch {
    int64_t ids[400], offsets[65];
    float w[400];
    EmbBatch b;
} RandBatch;

static void rand_batch(RandBatch *r, int64_t ncol, uint64_t seed)
{
    int64_t nnz = 0;
    r->offsets[0] = 0;
    for (int bag = 0; bag < 64; bag++) {
        const int len = (int)(tu_rand(&seed) % 7); /* 0..6 */
        for (int k = 0; k < len; k++, nnz++) {
            r->ids[nnz] = (int64_t)(tu_rand(&seed) % (uint64_t)(ncol + 1)) - 1;
            r->w[nnz] = tu_randf(&seed) + 0.5f; /* some <= 0 */
        }
        r->offsets[bag + 1] = nnz;
    }
    r->b = (EmbBatch){.ids = r->ids, .nnz = nnz, .nbags = 64, .offsets = r->offsets,
                      .weights = r->w};
}

static void expect_same_lookup(const EmbTable *a, const EmbTable *b, const EmbBatch *batch,
                               const EmbPooling *p)
{
    float ya[64 * 9], yb[64 * 9];
    const int64_t n = batch->nbags;
    tu_poison(ya, sizeof ya / 4);
    tu_poison(yb, sizeof yb / 4);
    cr_assert_eq(emb_lookup(a, batch, p, ya, 9), 0, "%s", emb_last_error());
    cr_assert_eq(emb_lookup(b, batch, p, yb, 9), 0, "%s", emb_last_error());
    /* the same columns pooled in the same order by the same kernels: bit-identical */
    cr_assert_eq(memcmp(ya, yb, (size_t)n * 9 * sizeof(float)), 0, "combiner %d flags %u",
                 (int)p->combiner, p->flags);
}

Test(partition, same_lookups_as_unpartitioned)
{
    const int64_t R = 103;
    EmbTable *plain = NULL;
    cr_assert_eq(emb_table_create(&plain, R, 9, EMB_F32, NULL), 0);
    tu_fill_random(plain, 42);
    for (int m = 0; m < 2; m++)
        for (int32_t P = 1; P <= 8; P += 3) {
            EmbTable *t = NULL;
            cr_assert_eq(emb_table_partitioned_create(&t, R, 9, EMB_F32, P, modes[m], NULL), 0);
            copy_columns(t, plain);
            RandBatch rb;
            rand_batch(&rb, R, 7 + (uint64_t)P);
            for (int c = EMB_COMBINER_SUM; c <= EMB_COMBINER_SQRTN; c++) {
                EmbPooling p = {.combiner = (EmbCombiner)c, .default_id = 17,
                                .flags = EMB_PRUNE_INVALID | EMB_PRUNE_NONPOSITIVE_WEIGHTS};
                expect_same_lookup(plain, t, &rb.b, &p);
                p.flags |= EMB_USE_DEFAULT_ID;
                p.max_norm = 1.2f;
                expect_same_lookup(plain, t, &rb.b, &p);
            }
            /* gather: the plain gather path, and with weights the pooled one */
            int64_t ids[50];
            uint64_t s = 99;
            for (int k = 0; k < 50; k++)
                ids[k] = (int64_t)(tu_rand(&s) % (uint64_t)R);
            EmbBatch g = {.ids = ids, .nnz = 50, .nbags = 50, .bag_size = 1};
            expect_same_lookup(plain, t, &g, &EMB_POOLING_GATHER);
            g.weights = rb.w;
            expect_same_lookup(plain, t, &g, &EMB_POOLING_GATHER);
            emb_table_destroy(&t);
        }
    emb_table_destroy(&plain);
}

Test(partition, more_shards_than_rows)
{
    /* R = 3 over P = 5 (legal in TF): div and mod put ids 0, 1, 2 on shards 0, 1, 2; shards
       3, 4 are empty, made by partitioned_create or by the caller */
    for (int m = 0; m < 2; m++)
        for (int own = 0; own < 2; own++) {
            EmbTable *t = NULL, *sh[5];
            if (own) {
                cr_assert_eq(emb_table_partitioned_create(&t, 3, 4, EMB_F32, 5, modes[m], NULL),
                             0, "%s", emb_last_error());
            } else {
                for (int32_t s = 0; s < 5; s++)
                    cr_assert_eq(emb_table_create(&sh[s], emb_partition_shard_rows(3, 5, s), 4,
                                                  EMB_F32, NULL), 0);
                cr_assert_eq(emb_table_partitioned(&t, sh, 5,
                                                   modes[m] | EMB_PARTITION_OWN_SHARDS, NULL), 0);
            }
            cr_assert_eq(emb_table_nshards(t), 5);
            for (int32_t s = 0; s < 5; s++)
                cr_assert_eq(emb_table_ncolumns(emb_table_shard(t, s)), s < 3 ? 1 : 0);
            for (int64_t id = 0; id < 3; id++) {
                void *p, *q;
                cr_assert_eq(emb_table_column_pointer(t, id, EMB_CTX_NONE, &p), 0);
                cr_assert_eq(emb_table_column_pointer(emb_table_shard(t, (int32_t)id), 0,
                                                      EMB_CTX_NONE, &q), 0);
                cr_assert_eq(p, q);
            }
            emb_table_destroy(&t);
        }
    /* the store's partitioned tables too (TF's get_variable with a fixed_size_partitioner of
       more shards than rows has them) */
    EmbStore *st = NULL;
    cr_assert_eq(emb_store_create(&st), 0);
    const EmbVariableSpec spec = {.name = "few", .ncolumns = 3, .featuresize = 4,
                                  .nshards = 5, .partition = EMB_PARTITION_DIV,
                                  .init = {.kind = EMB_INIT_ONES}};
    EmbTable *t = NULL;
    cr_assert_eq(emb_store_get(st, &spec, EMB_REUSE_NO, &t), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_nshards(t), 5);
    cr_assert_eq(emb_table_ncolumns(emb_table_shard(t, 4)), 0);
    float out[4];
    const int64_t id = 2;
    cr_assert_eq(emb_gather(t, &id, 1, out, 4), 0);
    cr_assert_eq(out[3], 1.0f);
    emb_store_destroy(&st);
}

/* TF's assignment (embedding_ops.py, _embedding_lookup_and_transform), written as TF does:
   mod: shard id % P, row id // P; div: with q = R // P, e = R % P,
   shard = max(id // (q + 1), (id - e) // q), row = id % (q + 1) if shard < e else
   (id - e) % q (floor division; when q = 0 every id is below e and the second term, a
   division by zero in TF, is never the maximum). */
static int64_t floordiv(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

static void tf_assign(int64_t R, int32_t P, unsigned mode, int64_t id, int32_t *sh, int64_t *row)
{
    if (mode == EMB_PARTITION_MOD) {
        *sh = (int32_t)(id % P), *row = id / P;
        return;
    }
    const int64_t q = R / P, e = R % P;
    int64_t a = floordiv(id, q + 1);
    if (q > 0 && floordiv(id - e, q) > a)
        a = floordiv(id - e, q);
    *sh = (int32_t)a;
    *row = a < e ? id % (q + 1) : (id - e) % q;
}

/* Column @p id of @p t as TF finds it: row tf_assign() of shard tf_assign(). */
static float *tf_column(const EmbTable *t, int64_t R, int32_t P, unsigned mode, int64_t id)
{
    int32_t sh;
    int64_t row;
    void *c;
    tf_assign(R, P, mode, id, &sh, &row);
    cr_assert_lt(row, emb_table_ncolumns(emb_table_shard(t, sh)), "R %lld P %d id %lld",
                 (long long)R, P, (long long)id);
    cr_assert_eq(emb_table_column_pointer(emb_table_shard(t, sh), row, EMB_CTX_NONE, &c), 0);
    return c;
}

/* The shard sizes and every id's (shard, row) against TF's rule; the rows of each shard
   are each reached by exactly one id. */
static void expect_tf_layout(const EmbTable *t, int64_t R, int32_t P, unsigned mode)
{
    int64_t count[12] = {0};
    for (int64_t id = 0; id < R; id++) {
        int32_t sh, s2;
        int64_t row, r2;
        tf_assign(R, P, mode, id, &sh, &row);
        cr_assert_eq(emb_partition_locate(R, P, mode, id, &s2, &r2), 0);
        cr_assert(s2 == sh && r2 == row, "R %lld P %d mode %u id %lld", (long long)R, P, mode,
                  (long long)id);
        cr_assert_eq(row, count[sh]++, "a shard's rows are in id order");
    }
    for (int32_t s = 0; s < P; s++)
        cr_assert_eq(emb_table_ncolumns(emb_table_shard(t, s)), count[s]);
}

/* Saves @p t (as "t") with the optimizer's state, restores into @p into (and a fresh
   optimizer of @p cfg), which must then equal @p ref column for column, state too. */
static void expect_round_trip(EmbTable *t, EmbOptimizer *opt, EmbTable *into,
                              const EmbOptimizerConfig *cfg)
{
    char dir[64], path[256];
    tmpdir(dir);
    const EmbCheckpointVar v = {"t", t}, w = {"t", into};
    const EmbSaverOptions so = {.var_list = &v, .nvars = 1, .optimizer = opt};
    EmbSaver *sv = NULL;
    cr_assert_eq(emb_saver_create(&sv, dir, "p", &so), 0, "%s", emb_last_error());
    cr_assert_eq(emb_saver_save(sv, NULL, 7, path, sizeof path), 0, "%s", emb_last_error());
    EmbOptimizer *o2 = NULL;
    cr_assert_eq(emb_optimizer_create(&o2, cfg), 0);
    const EmbRestoreOptions ro = {.var_list = &w, .nvars = 1, .optimizer = o2};
    int64_t step = -1;
    cr_assert_eq(emb_checkpoint_restore_ex(NULL, path, &ro, &step), 0, "%s", emb_last_error());
    cr_assert_eq(step, 7);
    cr_assert(same_columns(t, into));
    EmbTable *s1 = NULL, *s2 = NULL;
    cr_assert_eq(emb_optimizer_state(opt, t, 0, &s1, NULL), 0, "%s", emb_last_error());
    cr_assert_eq(emb_optimizer_state(o2, into, 0, &s2, NULL), 0, "%s", emb_last_error());
    cr_assert(same_columns(s1, s2), "the optimizer's state round-trips");
    emb_optimizer_destroy(&o2);
    emb_saver_destroy(&sv);
    rmdir_all(dir);
}
/* Shards that check for finite values are checked through the partitioned table too. */
Test(partition, finite_checks_of_the_shards_hold_through_it)
{
    const EmbTableOptions fin = {.flags = EMB_TABLE_CHECK_FINITE};
    EmbTable *sh[2], *t = NULL;
    cr_assert_eq(emb_table_create(&sh[0], 2, 2, EMB_F32, NULL), 0);
    cr_assert_eq(emb_table_create(&sh[1], 2, 2, EMB_F32, &fin), 0);
    cr_assert_eq(emb_table_partitioned(&t, sh, 2, EMB_PARTITION_MOD | EMB_PARTITION_OWN_SHARDS,
                                       NULL), 0);
    const float nan[2] = {NAN, 1.0f};
    const int64_t id = 1;
    cr_assert_eq(emb_table_scatter_update(t, &id, 1, nan, 2), EMB_ENONFINITE);
    float back[4];
    cr_assert_eq(emb_table_read(sh[1], back, 2), 0);
    cr_assert_eq(back[0], 0.0f, "nothing written");
    emb_table_destroy(&t);
}

/* A custom shard that records the contexts it is asked with and counts its destruction. */
typedef struct Spy {
    float col[4];
    EmbContext last;
    int destroyed;
} Spy;

static void *spy_column(void *user, int64_t column, EmbContext ctx)
{
    Spy *s = user;
    (void)column;
    s->last = ctx;
    return s->col;
}

static void spy_destroy(void *user)
{
    ((Spy *)user)->destroyed++;
}

Test(partition, context_passes_through_and_ownership)
{
    Spy spy[2] = {{.col = {1, 2, 3, 4}}, {.col = {5, 6, 7, 8}}};
    EmbTable *sh[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(emb_table_custom(&sh[i], 1, 4, EMB_F32, spy_column, &spy[i], spy_destroy,
                                      NULL), 0);
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_partitioned(&t, sh, 2, EMB_PARTITION_MOD | EMB_PARTITION_OWN_SHARDS,
                                       NULL), 0);
    void *p;
    cr_assert_eq(emb_table_column_pointer(t, 1, EMB_CTX_UPDATE, &p), 0);
    cr_assert_eq(p, spy[1].col);
    cr_assert_eq(spy[1].last, EMB_CTX_UPDATE);
    const int64_t ids[] = {0, 1};
    float out[4];
    cr_assert_eq(emb_lookup_sum(t, ids, 1, 2, out, 4), 0);
    cr_assert_eq(spy[0].last, EMB_CTX_FORWARD);
    cr_assert_eq(out[3], 12.0f);
    emb_table_destroy(&t);
    cr_assert_null(t);
    cr_assert_eq(spy[0].destroyed, 1, "owned shards are destroyed with the table");
    cr_assert_eq(spy[1].destroyed, 1);
}

Test(partition, bad_shard_sets_rejected)
{
    EmbTable *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL, *t = NULL;
    cr_assert_eq(emb_table_create(&a, 3, 4, EMB_F32, NULL), 0);
    cr_assert_eq(emb_table_create(&b, 2, 4, EMB_F32, NULL), 0);
    cr_assert_eq(emb_table_create(&c, 2, 5, EMB_F32, NULL), 0);  /* featuresize 5 */
    cr_assert_eq(emb_table_create(&d, 2, 4, EMB_F16, NULL), 0);  /* f16 */
    cr_assert_eq(emb_table_create(&e, 3, 4, EMB_F32, NULL), 0);
    const EmbTableOptions o = {.name = "emb"};
    EmbTable *ok[2] = {a, b};
    EmbTable *fs[2] = {a, c}, *dt[2] = {a, d}, *nul[2] = {a, NULL}, *dup[2] = {a, a};
    EmbTable *sizes[2] = {b, a}; /* 5 rows over 2: shard 0 must hold 3 */
    EmbTable *uneven[3] = {a, e, b}; /* 8 over 3: 3, 3, 2 fine */
    EmbTable *wrong3[3] = {b, a, e}; /* shard 0 holds 2, needs 3 */
    cr_assert_eq(emb_table_partitioned(&t, fs, 2, EMB_PARTITION_DIV, &o), EMB_ESHAPE);
    cr_assert_str_eq(emb_last_error(), "shard 1 has featuresize 5, shard 0 has 4 "
                                       "(partitioned table \"emb\")");
    cr_assert_eq(emb_table_partitioned(&t, dt, 2, EMB_PARTITION_MOD, &o), EMB_EDTYPE);
    cr_assert(strstr(emb_last_error(), "shard 1 has dtype f16"));
    cr_assert_eq(emb_table_partitioned(&t, nul, 2, EMB_PARTITION_MOD, &o), EMB_ENULL);
    cr_assert(strstr(emb_last_error(), "shard 1 is NULL"));
    cr_assert_eq(emb_table_partitioned(&t, dup, 2, EMB_PARTITION_MOD, &o), EMB_EINVAL);
    for (int m = 0; m < 2; m++) {
        cr_assert_eq(emb_table_partitioned(&t, sizes, 2, modes[m], &o), EMB_ESHAPE);
        cr_assert_str_eq(emb_last_error(), "shard 0 holds 2 rows; 5 rows over 2 shards put 3 "
                                           "there (partitioned table \"emb\")");
        cr_assert_eq(emb_table_partitioned(&t, wrong3, 3, modes[m], &o), EMB_ESHAPE);
    }
    cr_assert_eq(emb_table_partitioned(&t, ok, 0, EMB_PARTITION_MOD, &o), EMB_EINVAL);
    cr_assert_eq(emb_table_partitioned(&t, ok, -3, EMB_PARTITION_MOD, &o), EMB_EINVAL);
    cr_assert_eq(emb_table_partitioned(&t, ok, 2, 0, &o), EMB_EINVAL);
    cr_assert_eq(emb_table_partitioned(&t, ok, 2, EMB_PARTITION_MOD | EMB_PARTITION_DIV, &o),
                 EMB_EINVAL);
    cr_assert_eq(emb_table_partitioned(&t, ok, 2, EMB_PARTITION_MOD | 64, &o), EMB_EINVAL);
    cr_assert_eq(emb_table_partitioned(&t, NULL, 2, EMB_PARTITION_MOD, &o), EMB_ENULL);
    cr_assert_eq(emb_table_partitioned(NULL, ok, 2, EMB_PARTITION_MOD, &o), EMB_ENULL);
    const EmbTableOptions st = {.static_size = 8};
    cr_assert_eq(emb_table_partitioned(&t, ok, 2, EMB_PARTITION_MOD, &st), EMB_ESHAPE);
    cr_assert_null(t, "untouched on failure");
    cr_assert_eq(emb_table_partitioned(&t, uneven, 3, EMB_PARTITION_DIV, &o), 0);
    cr_assert_eq(emb_table_ncolumns(t), 8);
    emb_table_destroy(&t);
    cr_assert_eq(emb_table_partitioned(&t, ok, 2, EMB_PARTITION_MOD, &o), 0);
    emb_table_destroy(&t);
    EmbTable *all[5] = {a, b, c, d, e};
    for (int i = 0; i < 5; i++)
        emb_table_destroy(&all[i]);
}

Test(partition, create_helper)
{
    EmbTable *t = NULL;
    const EmbTableOptions o = {.name = "item", .static_size = 16};
    cr_assert_eq(emb_table_partitioned_create(&t, 13, 16, EMB_BF16, 5, EMB_PARTITION_DIV, &o), 0);
    cr_assert_eq(emb_table_ncolumns(t), 13);
    cr_assert_eq(emb_table_dtype(t), EMB_BF16);
    cr_assert(emb_table_is_static(t));
    cr_assert_str_eq(emb_table_name(t), "item");
    cr_assert_str_eq(emb_table_name(emb_table_shard(t, 4)), "item/part_4");
    cr_assert_eq(emb_table_ncolumns(emb_table_shard(t, 4)), 2);
    emb_table_destroy(&t);
    cr_assert_eq(emb_table_partitioned_create(&t, -1, 16, EMB_F32, 5, EMB_PARTITION_DIV, NULL),
                 EMB_EINVAL);
    cr_assert_eq(emb_table_partitioned_create(&t, 10, 0, EMB_F32, 5, EMB_PARTITION_DIV, NULL),
                 EMB_EINVAL);
    cr_assert_eq(emb_table_partitioned_create(&t, 10, 4, (EmbDtype)7, 5, EMB_PARTITION_DIV, NULL),
                 EMB_EDTYPE);
    cr_assert_eq(emb_table_partitioned_create(&t, 10, 4, EMB_F32, 0, EMB_PARTITION_MOD, NULL),
                 EMB_EINVAL);
    /* more shards than rows are TF's empty shards, but 2^31 shards are refused by the
       memory they need (a header and an allocation each: over 2^31 x 200 bytes = 400 GiB)
       before any is allocated, the message giving the figure */
    cr_assert_eq(emb_table_partitioned_create(&t, 0, 4, EMB_F32, 2, EMB_PARTITION_MOD, NULL), 0);
    cr_assert_eq(emb_table_nshards(t), 2);
    emb_table_destroy(&t);
    if ((double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE) < 0x1p31 * 200) {
        cr_assert_eq(emb_table_partitioned_create(&t, 10, 4, EMB_F32, INT32_MAX,
                                                  EMB_PARTITION_MOD, NULL), EMB_ENOMEM);
        cr_assert(strstr(emb_last_error(), "nshards 2147483647 need "), "%s", emb_last_error());
        cr_assert(strstr(emb_last_error(), "bytes, more than this machine's memory"));
    }
    /* more than the machine's memory fails before anything is allocated */
    cr_assert_eq(emb_table_partitioned_create(&t, INT64_MAX / 64, 8, EMB_F32, 4,
                                              EMB_PARTITION_DIV, NULL), EMB_ENOMEM);
    cr_assert_null(t);
}

Test(partition, partitioners)
{
    int32_t P = -1;
    cr_assert_eq(emb_partition_fixed_size(1000, 8, &P), 0);
    cr_assert_eq(P, 8);
    cr_assert_eq(emb_partition_fixed_size(3, 8, &P), 0);
    cr_assert_eq(P, 3, "TF caps the shard count at the rows");
    cr_assert_eq(emb_partition_fixed_size(0, 8, &P), 0);
    cr_assert_eq(P, 1);
    cr_assert_eq(emb_partition_fixed_size(10, 0, &P), EMB_EINVAL);
    /* 1000 rows of 16 f32 = 64 bytes; 1000 bytes hold 15 rows: ceil(1000 / 15) = 67 */
    cr_assert_eq(emb_partition_max_shard_bytes(1000, 16, EMB_F32, 1000, 0, &P), 0);
    cr_assert_eq(P, 67);
    for (int32_t s = 0; s < P; s++)
        cr_assert_leq(emb_partition_shard_rows(1000, P, s) * 64, 1000, "shard %d fits", s);
    cr_assert_eq(emb_partition_max_shard_bytes(1000, 16, EMB_F32, 1000, 10, &P), 0);
    cr_assert_eq(P, 10, "capped by max_shards");
    cr_assert_eq(emb_partition_max_shard_bytes(1000, 16, EMB_F16, 10, 0, &P), 0);
    cr_assert_eq(P, 1000, "a row larger than a shard: one row per shard");
    cr_assert_eq(emb_partition_max_shard_bytes(960, 16, EMB_F32, 64 * 96, 0, &P), 0);
    cr_assert_eq(P, 10, "exact fit");
    cr_assert_eq(emb_partition_max_shard_bytes(0, 16, EMB_F32, 64, 0, &P), 0);
    cr_assert_eq(P, 1);
    cr_assert_eq(emb_partition_max_shard_bytes(INT64_MAX, 1, EMB_F32, 1, 0, &P), EMB_EOVERFLOW);
    cr_assert_eq(emb_partition_max_shard_bytes(10, 16, EMB_F32, 0, 0, &P), EMB_EINVAL);
    cr_assert_eq(emb_partition_max_shard_bytes(10, 16, (EmbDtype)5, 64, 0, &P), EMB_EDTYPE);
    /* TF's docstring example: 1024 x 1024 f32 with 256 KiB slices: 16, or max_partitions */
    cr_assert_eq(emb_partition_min_slice_bytes(1024, 1024, EMB_F32, 256 << 10, 100, &P), 0);
    cr_assert_eq(P, 16);
    cr_assert_eq(emb_partition_min_slice_bytes(1024, 1024, EMB_F32, 256 << 10, 7, &P), 0);
    cr_assert_eq(P, 7);
    cr_assert_eq(emb_partition_min_slice_bytes(1024, 1024, EMB_F32, 300 << 10, 100, &P), 0);
    cr_assert_eq(P, 14, "ceil(4 MiB / 300 KiB)");
    cr_assert_eq(emb_partition_min_slice_bytes(3, 1 << 20, EMB_F32, 1, 100, &P), 0);
    cr_assert_eq(P, 3, "capped by the rows");
    cr_assert_eq(emb_partition_min_slice_bytes(10, 4, EMB_F32, 1 << 20, 100, &P), 0);
    cr_assert_eq(P, 1, "a small table: one shard");
    cr_assert_eq(emb_partition_min_slice_bytes(INT64_MAX, 1 << 30, EMB_F32, 1, 9, &P), 0);
    cr_assert_eq(P, 9, "no overflow");
    cr_assert_eq(emb_partition_min_slice_bytes(10, 4, EMB_F32, 64, 0, &P), EMB_EINVAL);
    int32_t sh;
    int64_t row;
    cr_assert_eq(emb_partition_locate(13, 5, EMB_PARTITION_DIV, 13, &sh, &row), EMB_ERANGE);
    cr_assert_eq(emb_partition_locate(13, 5, EMB_PARTITION_DIV, -1, &sh, &row), EMB_ERANGE);
    cr_assert_eq(emb_partition_locate(13, 0, EMB_PARTITION_DIV, 1, &sh, &row), EMB_EINVAL);
    cr_assert_eq(emb_partition_locate(13, 5, 0, 1, &sh, &row), EMB_EINVAL);
}

/* Whether two tables hold bit-identical columns (through the column-pointer interface). */
static bool same_columns(const EmbTable *a, const EmbTable *b)
{
    for (int64_t c = 0; c < emb_table_ncolumns(a); c++) {
        void *x, *y;
        cr_assert_eq(emb_table_column_pointer(a, c, EMB_CTX_NONE, &x), 0);
        cr_assert_eq(emb_table_column_pointer(b, c, EMB_CTX_NONE, &y), 0);
        if (memcmp(x, y, (size_t)emb_table_featuresize(a) * sizeof(float)))
            return false;
    }
    return true;
}

/* One forward + backward + update step of @p t with the batch and output gradient. */
static void train_step(EmbOptimizer *opt, EmbTable *t, const EmbBatch *b, const EmbPooling *p,
                       const float *dout, EmbGrad *g, EmbIndexer *ix)
{
    float out[64 * 9];
    cr_assert_eq(emb_lookup(t, b, p, out, 9), 0, "%s", emb_last_error());
    cr_assert_eq(emb_lookup_backward(t, b, p, dout, 9, g), 0, "%s", emb_last_error());
    cr_assert_eq(emb_update(opt, t, g, ix, 0), 0, "%s", emb_last_error());
}

Test(partition, same_updates_as_unpartitioned)
{
    const int64_t R = 103;
    for (int kind = EMB_OPT_SGD; kind <= EMB_OPT_ADAM; kind++)
        for (int m = 0; m < 2; m++) {
            EmbTable *plain = NULL, *part = NULL;
            cr_assert_eq(emb_table_create(&plain, R, 9, EMB_F32, NULL), 0);
            tu_fill_random(plain, 3);
            cr_assert_eq(emb_table_partitioned_create(&part, R, 9, EMB_F32, 4, modes[m], NULL),
                         0);
            copy_columns(part, plain);
            const uint64_t before = tu_checksum(plain);
            const EmbOptimizerConfig cfg = emb_optimizer_defaults((EmbOptimizerKind)kind, 0.1f);
            EmbOptimizer *o1 = NULL, *o2 = NULL;
            EmbGrad *g1 = NULL, *g2 = NULL;
            EmbIndexer *i1 = NULL, *i2 = NULL;
            cr_assert_eq(emb_optimizer_create(&o1, &cfg), 0);
            cr_assert_eq(emb_optimizer_create(&o2, &cfg), 0);
            cr_assert_eq(emb_grad_create(&g1) | emb_grad_create(&g2), 0);
            cr_assert_eq(emb_indexer_create(&i1) | emb_indexer_create(&i2), 0);
            float dout[64 * 9];
            for (int step = 0; step < 3; step++) {
                RandBatch rb;
                rand_batch(&rb, R, 100 + (uint64_t)step);
                uint64_t s = 200 + (uint64_t)step;
                for (int i = 0; i < 64 * 9; i++)
                    dout[i] = tu_randf(&s);
                const EmbPooling p = {.combiner = (EmbCombiner)(1 + step), .max_norm = 1.2f,
                                      .default_id = 5,
                                      .flags = EMB_PRUNE_INVALID | EMB_USE_DEFAULT_ID |
                                               EMB_PRUNE_NONPOSITIVE_WEIGHTS};
                train_step(o1, plain, &rb.b, &p, dout, g1, i1);
                train_step(o2, part, &rb.b, &p, dout, g2, i2);
                cr_assert(same_columns(plain, part), "optimizer %d mode %d step %d", kind, m,
                          step);
            }
            cr_assert_neq(tu_checksum(plain), before, "the updates changed the table");
            emb_indexer_destroy(&i1);
            emb_indexer_destroy(&i2);
            emb_grad_destroy(&g1);
            emb_grad_destroy(&g2);
            emb_optimizer_destroy(&o1);
            emb_optimizer_destroy(&o2);
            emb_table_destroy(&part);
            emb_table_destroy(&plain);
        }
}

Test(partition, maplookup_under_every_strategy)
{
    /* tables [plain, mod-partitioned, div-partitioned] of one content in the concat layout:
     * the three slices of every row are bit-identical, for every strategy */
    const int64_t R = 103;
    EmbTable *t[3] = {NULL, NULL, NULL};
    cr_assert_eq(emb_table_create(&t[0], R, 9, EMB_F32, NULL), 0);
    tu_fill_random(t[0], 8);
    for (int m = 0; m < 2; m++) {
        cr_assert_eq(emb_table_partitioned_create(&t[1 + m], R, 9, EMB_F32, 3, modes[m], NULL),
                     0);
        copy_columns(t[1 + m], t[0]);
    }
    RandBatch rb;
    rand_batch(&rb, R, 31);
    const EmbBatch batches[3] = {rb.b, rb.b, rb.b};
    const EmbPooling p = {.combiner = EMB_COMBINER_SQRTN, .max_norm = 1.1f, .default_id = 2,
                          .flags = EMB_PRUNE_INVALID | EMB_USE_DEFAULT_ID};
    const EmbPooling pools[3] = {p, p, p};
    const EmbStrategyOptions so = {.nthreads = 2};
    for (int k = 0; k < 3; k++) {
        EmbStrategy *s = NULL;
        cr_assert_eq(k == 0   ? emb_strategy_sequential(&s)
                     : k == 1 ? emb_strategy_parallel(&s, &so)
                              : emb_strategy_prealloc_concat(&s, &so), 0);
        static float concat[64 * 30];
        const EmbOutputs o = {.concat = concat, .concat_stride = 30, .prependrows = 3};
        cr_assert_eq(emb_maplookup(s, t, 3, batches, pools, &o), 0, "%s", emb_last_error());
        for (int bag = 0; bag < 64; bag++) {
            const float *row = concat + bag * 30 + 3;
            const char *name = emb_strategy_name(s);
            cr_assert_eq(memcmp(row, row + 9, 9 * sizeof(float)), 0, "%s bag %d mod", name, bag);
            cr_assert_eq(memcmp(row, row + 18, 9 * sizeof(float)), 0, "%s bag %d div", name, bag);
        }
        emb_strategy_destroy(&s);
    }
    for (int i = 0; i < 3; i++)
        emb_table_destroy(&t[i]);
}

/* Column @p c of a table. */
static float *col(const EmbTable *t, int64_t c)
{
    void *p;
    cr_assert_eq(emb_table_column_pointer(t, c, EMB_CTX_NONE, &p), 0);
    return p;
}

/* One step of Adagrad over bags that hold every id (some twice) with gradient rows that
   differ per bag: the plain table and the partitioned one must give the same bits. */
static void train_both(EmbTable *plain, EmbTable *t, EmbOptimizer *o1, EmbOptimizer *o2,
                       int64_t R)
{
    int64_t ids[32], offsets[11] = {0};
    float dout[10 * 3], y[10 * 3];
    int64_t nnz = 0;
    uint64_t seed = 5 + (uint64_t)R;
    for (int bag = 0; bag < 10; bag++) {
        for (int k = 0; k < 3 && R > 0; k++)
            ids[nnz++] = (int64_t)((bag * 3 + k) % R);
        offsets[bag + 1] = nnz;
    }
    for (int i = 0; i < 30; i++)
        dout[i] = tu_randf(&seed);
    const EmbBatch b = {.ids = ids, .nnz = nnz, .nbags = 10, .offsets = offsets};
    const EmbPooling p = {.combiner = EMB_COMBINER_MEAN};
    EmbTable *tabs[2] = {plain, t};
    EmbOptimizer *opts[2] = {o1, o2};
    for (int k = 0; k < 2; k++) {
        EmbGrad *g = NULL;
        EmbIndexer *ix = NULL;
        cr_assert_eq(emb_grad_create(&g) | emb_indexer_create(&ix), 0);
        cr_assert_eq(emb_lookup(tabs[k], &b, &p, y, 3), 0, "%s", emb_last_error());
        cr_assert_eq(emb_lookup_backward(tabs[k], &b, &p, dout, 3, g), 0, "%s",
                     emb_last_error());
        cr_assert_eq(emb_update(opts[k], tabs[k], g, ix, 0), 0, "%s", emb_last_error());
        emb_indexer_destroy(&ix);
        emb_grad_destroy(&g);
    }
}

/* Every (R, P) TF allows for R < 10, P <= 12, mod and div: the layout, lookups, a training
   step and a checkpoint round trip (into a plain table and into the same partitioning). */
Test(partition, every_small_shape_as_tf)
{
    const EmbOptimizerConfig cfg = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.5f);
    for (int64_t R = 0; R <= 9; R++)
        for (int32_t P = 1; P <= 12; P++)
            for (int m = 0; m < 2; m++) {
                EmbTable *t = NULL, *plain = NULL, *back = NULL, *flat = NULL;
                cr_assert_eq(emb_table_partitioned_create(&t, R, 3, EMB_F32, P, modes[m], NULL),
                             0, "R %lld P %d: %s", (long long)R, P, emb_last_error());
                cr_assert_eq(emb_table_ncolumns(t), R);
                expect_tf_layout(t, R, P, modes[m]);
                cr_assert_eq(emb_table_create(&plain, R, 3, EMB_F32, NULL), 0);
                tu_fill_random(plain, 40 + (uint64_t)R);
                for (int64_t id = 0; id < R; id++) /* each id's row where TF puts it */
                    memcpy(tf_column(t, R, P, modes[m], id),
                           col(plain, id), 3 * sizeof(float));
                int64_t ids[10];
                float y[30];
                for (int64_t k = 0; k < R; k++)
                    ids[k] = R - 1 - k;
                const EmbBatch g = {.ids = ids, .nnz = R, .nbags = R, .bag_size = 1};
                cr_assert_eq(emb_lookup(t, &g, &EMB_POOLING_GATHER, y, 3), 0);
                for (int64_t k = 0; k < R; k++)
                    cr_assert_eq(memcmp(y + 3 * k, tf_column(t, R, P, modes[m], ids[k]), 12), 0);
                ids[0] = R; /* one past the end: refused, nothing written */
                tu_poison(y, 30);
                const EmbBatch bad = {.ids = ids, .nnz = 1, .nbags = 1, .bag_size = 1};
                cr_assert_eq(emb_lookup(t, &bad, &EMB_POOLING_GATHER, y, 3), EMB_ERANGE);
                cr_assert(tu_is_poison(y, 30));
                EmbOptimizer *o1 = NULL, *o2 = NULL;
                cr_assert_eq(emb_optimizer_create(&o1, &cfg) | emb_optimizer_create(&o2, &cfg), 0);
                cr_assert_eq(emb_optimizer_attach(o1, plain) | emb_optimizer_attach(o2, t), 0);
                train_both(plain, t, o1, o2, R);
                for (int64_t id = 0; id < R; id++)
                    cr_assert_eq(memcmp(tf_column(t, R, P, modes[m], id),
                                        col(plain, id), 12), 0,
                                 "R %lld P %d mode %d id %lld after a step", (long long)R, P, m,
                                 (long long)id);
                cr_assert_eq(emb_table_create(&flat, R, 3, EMB_F32, NULL), 0);
                cr_assert_eq(emb_table_partitioned_create(&back, R, 3, EMB_F32, P, modes[m],
                                                          NULL), 0);
                expect_round_trip(t, o2, flat, &cfg); /* global id order: equals plain */
                cr_assert(same_columns(flat, plain));
                expect_round_trip(t, o2, back, &cfg);
                EmbTable *all[4] = {t, plain, back, flat};
                for (int i = 0; i < 4; i++)
                    emb_table_destroy(&all[i]);
                emb_optimizer_destroy(&o1);
                emb_optimizer_destroy(&o2);
            }
}
