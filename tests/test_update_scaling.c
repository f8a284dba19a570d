/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_update_scaling.c — a training step's backward (emb_maplookup_backward of a concat
 * gradient, then emb_update_many) gives the same bits under every strategy, thread count
 * 1..8 and split count, for every optimizer: on one table and on 26, with Zipf-skewed ids
 * and one id in half of all bags; the partitions' sorted and hashed groupings. And the auto
 * strategy's choices for a few shapes (the internal rule: links the static library).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "strategies/strategy_impl.h"
#include "test_update_ref.h"

#define MAXT 26
#define NBAGS 96
#define BAG 6
#define HOT 7 /* the id in half of all bags (modulo a table's rows) */

typedef struct Model {
    int nt;
    int64_t width;
    EmbTable *t[MAXT];
    EmbGrad *g[MAXT];
    EmbIndexer *ix[MAXT];
    EmbOptimizer *opt;
    int64_t ids[MAXT][NBAGS * BAG];
    EmbBatch b[MAXT];
    float dy[NBAGS * MAXT * 16];
} Model;

static int64_t rows_of(int nt, int i)
{
    static const int64_t small[5] = {3, 40, 1000, 200, 7000};
    return nt == 1 ? 5000 : small[i % 5];
}

static int32_t dim_of(int nt, int i)
{
    static const int32_t dims[4] = {4, 8, 16, 5};
    return nt == 1 ? 16 : dims[i % 4];
}

static void model_init(Model *m, int nt, EmbOptimizerConfig c)
{
    m->nt = nt;
    m->width = 0;
    for (int i = 0; i < nt; i++) {
        m->t[i] = tu_table(rows_of(nt, i), dim_of(nt, i), EMB_F32, 300 + (uint64_t)i);
        cr_assert_not_null(m->t[i]);
        cr_assert_eq(emb_grad_create(&m->g[i]), 0);
        cr_assert_eq(emb_indexer_create(&m->ix[i]), 0);
        m->width += dim_of(nt, i);
    }
    cr_assert_eq(emb_optimizer_create(&m->opt, &c), 0);
}

static void model_free(Model *m)
{
    for (int i = 0; i < m->nt; i++) {
        emb_grad_destroy(&m->g[i]);
        emb_indexer_destroy(&m->ix[i]);
    }
    emb_optimizer_destroy(&m->opt);
    for (int i = 0; i < m->nt; i++)
        emb_table_destroy(&m->t[i]);
}

/* Step @step's ids (log-uniform, about Zipf 1; HOT first in every even bag) and gradient. */
static void make_step(Model *m, int step)
{
    uint64_t seed = 900 + (uint64_t)step;
    for (int i = 0; i < m->nt; i++) {
        const int64_t rows = rows_of(m->nt, i);
        for (int k = 0; k < NBAGS * BAG; k++) {
            const double u = (double)(tu_rand(&seed) >> 11) / 9007199254740992.0;
            const int64_t id = (int64_t)pow((double)rows, u) - 1;
            m->ids[i][k] = (k / BAG) % 2 == 0 && k % BAG == 0 ? HOT % rows
                                                              : EMB_MIN(EMB_MAX(id, 0), rows - 1);
        }
        m->b[i] = (EmbBatch){.ids = m->ids[i], .nnz = NBAGS * BAG, .nbags = NBAGS,
                             .bag_size = BAG};
    }
    for (int64_t k = 0; k < NBAGS * m->width; k++)
        m->dy[k] = tu_randf(&seed);
}

/* Two steps under @s (NULL: sequential); every table's checksum into @sums. */
static void two_steps(int nt, EmbOptimizerConfig c, EmbStrategy *s, uint64_t sums[MAXT])
{
    static Model m;
    model_init(&m, nt, c);
    EmbStrategy *seq = NULL;
    if (!s) {
        cr_assert_eq(emb_strategy_sequential(&seq), 0);
        s = seq;
    }
    for (int step = 0; step < 2; step++) {
        make_step(&m, step);
        const EmbOutputs go = {.concat = m.dy, .concat_stride = m.width};
        cr_assert_eq(emb_maplookup_backward(m.t, nt, m.b, NULL, &go, m.g), 0, "%s",
                     emb_last_error());
        cr_assert_eq(emb_update_many(s, m.opt, m.t, (const EmbGrad *const *)m.g, nt, m.ix,
                                     step ? EMB_UPDATE_NONTEMPORAL : 0),
                     0, "%s", emb_last_error());
    }
    for (int i = 0; i < nt; i++)
        sums[i] = tu_checksum(m.t[i]);
    emb_strategy_destroy(&seq);
    model_free(&m);
}

static void check_same(int nt, EmbOptimizerConfig c, EmbStrategy *s, const uint64_t *want,
                       const char *what, int nth, int sp)
{
    uint64_t got[MAXT];
    two_steps(nt, c, s, got);
    for (int i = 0; i < nt; i++)
        cr_assert_eq(got[i], want[i], "%d tables, optimizer %d, %s, %d threads, %d splits: "
                     "table %d differs", nt, (int)c.kind, what, nth, sp, i);
}

static void every_strategy(int nt)
{
    static const int splits[] = {0, 1, 2, 5, 8, 64};
    for (int kind = EMB_OPT_SGD; kind <= EMB_OPT_ADAM; kind++) {
        const EmbOptimizerConfig c = emb_optimizer_defaults((EmbOptimizerKind)kind, 0.05f);
        uint64_t want[MAXT];
        two_steps(nt, c, NULL, want);
        for (int nth = 1; nth <= 8; nth++) {
            EmbStrategy *s = NULL;
            EmbStrategyOptions o = {.nthreads = nth};
            cr_assert_eq(emb_strategy_parallel(&s, &o), 0);
            check_same(nt, c, s, want, "parallel", nth, 1);
            emb_strategy_destroy(&s);
            cr_assert_eq(emb_strategy_auto(&s, &o), 0);
            check_same(nt, c, s, want, "auto", nth, 0);
            emb_strategy_destroy(&s);
            for (size_t k = 0; k < sizeof splits / sizeof *splits; k++) {
                o.num_splits = splits[k];
                cr_assert_eq(emb_strategy_prealloc_concat(&s, &o), 0);
                check_same(nt, c, s, want, "prealloc-concat", nth, splits[k]);
                emb_strategy_destroy(&s);
            }
        }
    }
}

Test(update_scaling, one_table_zipf_every_thread_and_split_count, .timeout = 240)
{
    every_strategy(1);
}

Test(update_scaling, tables_26_zipf_every_thread_and_split_count, .timeout = 240)
{
    every_strategy(26);
}

static int cmp_pair(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* The (id, count) pairs of @n distinct ids, sorted by id, into @out (2n). */
static void sorted_pairs(const int64_t *ids, const int64_t *counts, int64_t n, int64_t *out)
{
    for (int64_t k = 0; k < n; k++) {
        out[2 * k] = ids[k];
        out[2 * k + 1] = counts[k];
    }
    qsort(out, (size_t)n, 2 * sizeof *out, cmp_pair);
}

/* After emb_update_many under split counts 1..64 (the apply tasks compact the partitions'
 * distinct lists), the indexer lists each distinct id of the batch once with its count:
 * the same pairs as emb_indexer_index of the ids. Few ids and many splits leave partitions
 * empty, and one hot id fills most of one. */
Test(update_scaling, distinct_ids_after_a_partitioned_update)
{
    static const int splits[] = {1, 2, 3, 8, 64};
    static const int64_t nbags_of[] = {1, 5, NBAGS};
    static Model m;
    static int64_t want[2 * NBAGS * BAG], got[2 * NBAGS * BAG];
    for (size_t b = 0; b < sizeof nbags_of / sizeof *nbags_of; b++)
        for (size_t k = 0; k < sizeof splits / sizeof *splits; k++) {
            model_init(&m, 1, emb_optimizer_defaults(EMB_OPT_SGD, 0.05f));
            make_step(&m, (int)(b * 8 + k));
            m.b[0].nbags = nbags_of[b];
            m.b[0].nnz = nbags_of[b] * BAG;
            EmbIndexer *ref = NULL;
            cr_assert_eq(emb_indexer_create(&ref), 0);
            cr_assert_eq(emb_indexer_index(ref, m.ids[0], m.b[0].nnz), 0);
            const int64_t *rid, *rcnt, *id, *cnt;
            const int64_t nd = emb_indexer_distinct(ref, &rid, &rcnt);
            sorted_pairs(rid, rcnt, nd, want);
            EmbStrategy *s = NULL;
            const EmbStrategyOptions o = {.nthreads = 3, .num_splits = splits[k]};
            cr_assert_eq(emb_strategy_prealloc_concat(&s, &o), 0);
            const EmbOutputs go = {.concat = m.dy, .concat_stride = m.width};
            cr_assert_eq(emb_maplookup_backward(m.t, 1, m.b, NULL, &go, m.g), 0);
            cr_assert_eq(emb_update_many(s, m.opt, m.t, (const EmbGrad *const *)m.g, 1, m.ix,
                                         0), 0, "%s", emb_last_error());
            cr_assert_eq(emb_indexer_distinct(m.ix[0], &id, &cnt), nd, "%d splits, %lld bags",
                         splits[k], (long long)nbags_of[b]);
            sorted_pairs(id, cnt, nd, got);
            cr_assert(!memcmp(want, got, (size_t)(2 * nd) * sizeof *want),
                      "%d splits, %lld bags: distinct ids or counts differ", splits[k],
                      (long long)nbags_of[b]);
            emb_strategy_destroy(&s);
            emb_indexer_destroy(&ref);
            model_free(&m);
        }
}

/* Ids for the partitions' two groupings (update/pindex.c), of kind @kind: 0 mostly distinct
 * (each partition sorted, runs of a shared key mixing a few ids), 1 few distinct (hashed),
 * 2 mostly distinct with 64 ids whose hashes share their top 14 bits, each 3 times (a
 * run mixing more than the sort takes: that partition hashed). */
#define GROUP_ROWS (1 << 20)
#define GROUP_NNZ 2048
static void grouping_ids(int64_t *ids, int kind, uint64_t seed)
{
    int64_t same[64];
    int ns = 0;
    for (int64_t x = 0; x < GROUP_ROWS && ns < 64; x++) /* top 14 bits of hash() 0x155 */
        if (((uint64_t)x * 0x9e3779b97f4a7c15ull) >> 50 == 0x155)
            same[ns++] = x;
    cr_assert_eq(ns, 64);
    for (int64_t k = 0; k < GROUP_NNZ; k++)
        ids[k] = kind == 1 ? (int64_t)(tu_rand(&seed) % 100)
                           : (int64_t)(tu_rand(&seed) % GROUP_ROWS);
    for (int64_t k = 0; kind == 2 && k < 3 * 64; k++)
        ids[k * 10] = same[k % 64];
}

/* The partitions' groupings, sorted or hashed, give emb_update's bits and distinct ids. */
Test(update_scaling, sorted_and_hashed_partitions_agree)
{
    static int64_t ids[GROUP_NNZ], want[2 * GROUP_NNZ], got[2 * GROUP_NNZ];
    static float dy[GROUP_NNZ / 4 * 4];
    const EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.05f);
    for (int kind = 0; kind < 3; kind++) {
        uint64_t seed = 50 + (uint64_t)kind;
        grouping_ids(ids, kind, seed);
        for (int k = 0; k < GROUP_NNZ; k++)
            dy[k] = tu_randf(&seed);
        const EmbBatch b = {.ids = ids, .nnz = GROUP_NNZ, .nbags = GROUP_NNZ / 4,
                            .bag_size = 4};
        const EmbPooling pool = EMB_POOLING_SUM;
        EmbTable *ref = tu_table(GROUP_ROWS, 4, EMB_F32, 9);
        EmbOptimizer *o = NULL;
        EmbGrad *g = NULL;
        EmbIndexer *ix = NULL;
        cr_assert_eq(emb_optimizer_create(&o, &oc), 0);
        cr_assert_eq(emb_grad_create(&g), 0);
        cr_assert_eq(emb_indexer_create(&ix), 0);
        cr_assert_eq(emb_lookup_backward(ref, &b, &pool, dy, 4, g), 0);
        cr_assert_eq(emb_update(o, ref, g, ix, 0), 0, "%s", emb_last_error());
        const int64_t *id, *cnt;
        const int64_t nd = emb_indexer_distinct(ix, &id, &cnt);
        sorted_pairs(id, cnt, nd, want);
        emb_optimizer_destroy(&o);
        for (int sp = 2; sp <= 8; sp *= 2)
            for (int nth = 1; nth <= 3; nth += 2) {
                EmbTable *t = tu_table(GROUP_ROWS, 4, EMB_F32, 9);
                const EmbStrategyOptions so = {.nthreads = nth, .num_splits = sp};
                EmbStrategy *s = NULL;
                cr_assert_eq(emb_strategy_prealloc_concat(&s, &so), 0);
                cr_assert_eq(emb_optimizer_create(&o, &oc), 0);
                cr_assert_eq(emb_lookup_backward(t, &b, &pool, dy, 4, g), 0);
                cr_assert_eq(emb_update_many(s, o, &t, (const EmbGrad *const *)&g, 1, &ix, 0),
                             0, "%s", emb_last_error());
                cr_assert_eq(tu_checksum(t), tu_checksum(ref), "ids %d, %d splits, %d threads",
                             kind, sp, nth);
                cr_assert_eq(emb_indexer_distinct(ix, &id, &cnt), nd);
                sorted_pairs(id, cnt, nd, got);
                cr_assert(!memcmp(want, got, (size_t)(2 * nd) * sizeof *want),
                          "ids %d, %d splits, %d threads: distinct ids or counts differ", kind,
                          sp, nth);
                emb_optimizer_destroy(&o);
                emb_strategy_destroy(&s);
                emb_table_destroy(&t);
            }
        emb_indexer_destroy(&ix);
        emb_grad_destroy(&g);
        emb_table_destroy(&ref);
    }
}

static EmbStrategyKind forward_kind(int nthreads, const double *work, int64_t n)
{
    return emb__auto_forward_kind(nthreads, work, n, sizeof *work);
}

Test(strategy_auto, forward_choice)
{
    double w[64];
    for (int i = 0; i < 64; i++)
        w[i] = 1000.0;
    /* little work (below EMB_AUTO_SERIAL_WORK): the tables in order on the caller */
    cr_assert_eq(forward_kind(2, w, 1), EMB_STRATEGY_SEQUENTIAL);
    cr_assert_eq(forward_kind(16, w, 64), EMB_STRATEGY_SEQUENTIAL);
    for (int i = 0; i < 64; i++)
        w[i] = 1e7; /* 10 MB a table */
    /* one thread: the tables in order */
    cr_assert_eq(forward_kind(1, w, 1), EMB_STRATEGY_PARALLEL);
    /* one large table: bag chunks */
    cr_assert_eq(forward_kind(2, w, 1), EMB_STRATEGY_PREALLOC_CONCAT);
    cr_assert_eq(forward_kind(16, w, 1), EMB_STRATEGY_PREALLOC_CONCAT);
    /* 26 equal tables: whole tables at 2 threads (13 a thread), chunks at 8 and 16 */
    cr_assert_eq(forward_kind(2, w, 26), EMB_STRATEGY_PARALLEL);
    cr_assert_eq(forward_kind(8, w, 26), EMB_STRATEGY_PREALLOC_CONCAT);
    cr_assert_eq(forward_kind(16, w, 26), EMB_STRATEGY_PREALLOC_CONCAT);
    /* 64 tables at 4 threads, one with half of all work: chunks */
    w[5] = 6.3e8;
    cr_assert_eq(forward_kind(4, w, 64), EMB_STRATEGY_PREALLOC_CONCAT);
    /* ... with a quarter of it: whole tables */
    w[5] = 2.1e8;
    cr_assert_eq(forward_kind(4, w, 64), EMB_STRATEGY_PARALLEL);
}

static int update_splits_of(int nthreads, int num_splits, int64_t ntables, double work,
                            int *threads)
{
    EmbStrategy *s = NULL;
    const EmbStrategyOptions o = {.nthreads = nthreads, .num_splits = num_splits};
    cr_assert_eq(emb_strategy_auto(&s, &o), 0);
    const int n = emb__strategy_update_splits(s, ntables, work);
    *threads = emb__strategy_update_threads(s, work);
    emb_strategy_destroy(&s);
    return n;
}

/* Splits of an update of 1 GB of gradient rows (far above EMB_AUTO_SERIAL_WORK). */
static int update_splits(int nthreads, int num_splits, int64_t ntables)
{
    int threads;
    const int n = update_splits_of(nthreads, num_splits, ntables, 1e9, &threads);
    cr_assert_eq(threads, nthreads);
    return n;
}

Test(strategy_auto, update_choice)
{
    EmbStrategy *s = NULL;
    cr_assert_eq(emb_strategy_auto(&s, NULL), 0);
    cr_assert_str_eq(emb_strategy_name(s), "auto");
    emb_strategy_destroy(&s);
    /* one thread: whole tables (splitting would only add a pass) */
    cr_assert_eq(update_splits(1, 0, 1), 1);
    cr_assert_eq(update_splits(1, 0, 26), 1);
    /* one large table: row partitions, two per thread, at least 4 */
    cr_assert_eq(update_splits(2, 0, 1), 4);
    cr_assert_eq(update_splits(16, 0, 1), 32);
    cr_assert_eq(update_splits(64, 0, 1), 64);
    /* 26 tables: whole tables at 2 threads (13 a thread), 4 partitions each at 16 */
    cr_assert_eq(update_splits(2, 0, 26), 1);
    cr_assert_eq(update_splits(16, 0, 26), 4);
    /* an explicit split count is kept */
    cr_assert_eq(update_splits(16, 3, 1), 3);
    /* little work (a one-hot batch of 2048 rows of D = 64: 0.5 MiB): on the caller alone,
       unless the split count is explicit */
    int threads;
    cr_assert_eq(update_splits_of(2, 0, 1, 2048.0 * 64 * 4, &threads), 1);
    cr_assert_eq(threads, 1);
    cr_assert_eq(update_splits_of(16, 0, 3, 3 * 2048.0 * 64 * 4, &threads), 1);
    cr_assert_eq(threads, 1);
    cr_assert_eq(update_splits_of(16, 3, 1, 2048.0 * 64 * 4, &threads), 3);
    cr_assert_eq(threads, 16);
}

/* Forward + backward + SGD update of one table under @s (NULL: sequential), with a batch
 * large enough (2048 bags of 10 ids, D = 64: above EMB_AUTO_SERIAL_WORK) that auto runs it
 * on its threads; the outputs and the table's checksum after two steps. */
static uint64_t big_steps(EmbStrategy *s, float *out)
{
    enum { NB = 2048, L = 10, D = 64, ROWS = 20000 };
    EmbTable *t = tu_table(ROWS, D, EMB_F32, 77);
    cr_assert_not_null(t);
    EmbStrategy *seq = NULL;
    if (!s) {
        cr_assert_eq(emb_strategy_sequential(&seq), 0);
        s = seq;
    }
    Kit k;
    cr_assert_eq(kit_init(&k, emb_optimizer_defaults(EMB_OPT_SGD, 0.05f)), 0);
    int64_t *ids = malloc(NB * L * sizeof *ids);
    float *dy = malloc(NB * D * sizeof *dy);
    cr_assert(ids && dy);
    uint64_t seed = 4242;
    for (int step = 0; step < 2; step++) {
        for (int k = 0; k < NB * L; k++) /* half the ids on 64 hot rows */
            ids[k] = (int64_t)(tu_rand(&seed) % (k % 2 ? ROWS : 64));
        for (int k = 0; k < NB * D; k++)
            dy[k] = tu_randf(&seed);
        const EmbBatch b = {.ids = ids, .nnz = NB * L, .nbags = NB, .bag_size = L};
        const EmbOutputs o = {.concat = out + (size_t)step * NB * D, .concat_stride = D};
        const EmbOutputs go = {.concat = dy, .concat_stride = D};
        cr_assert_eq(emb_maplookup(s, &t, 1, &b, NULL, &o), 0, "%s", emb_last_error());
        cr_assert_eq(emb_maplookup_backward(&t, 1, &b, NULL, &go, &k.g), 0, "%s",
                     emb_last_error());
        cr_assert_eq(emb_update_many(s, k.o, &t, (const EmbGrad *const *)&k.g, 1, &k.ix, 0),
                     0, "%s", emb_last_error());
    }
    const uint64_t sum = tu_checksum(t);
    free(ids);
    free(dy);
    kit_free(&k);
    emb_strategy_destroy(&seq);
    emb_table_destroy(&t);
    return sum;
}

Test(strategy_auto, above_serial_work_identical, .timeout = 120)
{
    const size_t n = 2 * 2048 * 64;
    float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    cr_assert(want && got);
    const uint64_t sum = big_steps(NULL, want);
    for (int nth = 2; nth <= 4; nth++) {
        EmbStrategy *s = NULL;
        const EmbStrategyOptions o = {.nthreads = nth};
        cr_assert_eq(emb_strategy_auto(&s, &o), 0);
        cr_assert_eq(emb__strategy_update_threads(s, 2048.0 * 10 * 64 * 4), nth);
        cr_assert_eq(big_steps(s, got), sum, "auto, %d threads: the table differs", nth);
        cr_assert(!memcmp(got, want, n * sizeof *got), "auto, %d threads: outputs differ", nth);
        emb_strategy_destroy(&s);
    }
    free(want);
    free(got);
}
