/* SPDX-License-Identifier: BSD-2-Clause */
/* test_collection.c — EmbCollection: a step gives the bits of emb_maplookup +
 * emb_maplookup_backward + emb_update_many under every strategy, thread and split count,
 * in both output layouts; errors name the table and write nothing; gradients without an
 * optimizer; accessors; checkpoints in one call. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "test_files.h"
#include "test_update_ref.h"

#define NT 4
#define NB 24
#define BS 7
static const int32_t dims[NT] = {16, 8, 5, 64};
static const EmbDtype dtypes[NT] = {EMB_F32, EMB_F16, EMB_BF16, EMB_F32};
static const int64_t ncols[NT] = {200, 50, 1000, 300};
static const char *const names[NT] = {"user", "item", "shop", "query"};
#define WIDTH (3 + 16 + 8 + 5 + 64) /* prependrows 3 */

/* One step's batches: skewed ids, ragged bags with weights and pruning, max_norm. */
typedef struct Data {
    int64_t ids[NT][NB * BS];
    int64_t offsets[NB + 1];
    float w[NB * BS];
    EmbBatch b[NT];
    EmbPooling p[NT];
    float dy[NB * WIDTH];
} Data;

static void make_data(Data *d, uint64_t seed)
{
    for (int i = 0; i < NT; i++) {
        for (int k = 0; k < NB * BS; k++) {
            const uint64_t r = tu_rand(&seed);
            d->ids[i][k] = (int64_t)((r & 1) ? r % 7 : (r >> 8) % (uint64_t)ncols[i]);
        }
        d->b[i] = (EmbBatch){.ids = d->ids[i], .nnz = NB * BS, .nbags = NB, .bag_size = BS};
        d->p[i] = (EmbPooling){.combiner = (EmbCombiner)(1 + i % 3)};
    }
    d->offsets[0] = 0;
    for (int b = 0; b < NB; b++) {
        const int64_t next = d->offsets[b] + (int64_t)(tu_rand(&seed) % 12);
        d->offsets[b + 1] = next < NB * BS ? next : NB * BS;
    }
    d->offsets[NB] = NB * BS;
    for (int k = 0; k < NB * BS; k++)
        d->w[k] = tu_randf(&seed) + 0.3f;
    d->b[0].offsets = d->offsets;
    d->b[0].weights = d->w;
    d->p[0].default_id = 3;
    d->p[0].flags = EMB_USE_DEFAULT_ID | EMB_PRUNE_NONPOSITIVE_WEIGHTS;
    d->p[2].max_norm = 0.5f;
    for (int k = 0; k < NB * WIDTH; k++)
        d->dy[k] = tu_randf(&seed);
}

static void make_tables(EmbTable **t, uint64_t seed)
{
    for (int i = 0; i < NT; i++)
        cr_assert_not_null(t[i] = tu_table(ncols[i], dims[i], dtypes[i], seed + (uint64_t)i));
}

static EmbCollection *collection_over(EmbTable **t, const Data *d, EmbStrategy *s,
                                      const EmbOptimizerConfig *oc)
{
    EmbCollectionTable ct[NT];
    for (int i = 0; i < NT; i++)
        ct[i] = (EmbCollectionTable){.name = names[i], .table = t[i], .pooling = d->p[i]};
    const EmbCollectionOptions o = {.strategy = s, .optimizer = oc, .prependrows = 3};
    EmbCollection *c = NULL;
    cr_assert_eq(emb_collection_create(&c, ct, NT, &o), 0, "%s", emb_last_error());
    return c;
}

/* The per-table layout over @buf (table i at its concat columns, row stride WIDTH). */
static EmbOutputs per_table(float *buf, float **rows, int64_t *strides)
{
    int64_t col = 3;
    for (int i = 0; i < NT; i++) {
        rows[i] = buf + col, strides[i] = WIDTH;
        col += dims[i];
    }
    return (EmbOutputs){.per_table = rows, .strides = strides};
}

/* Three steps with the collection and with the three lower-level calls: same bits. */
static void compare(EmbStrategy *s, EmbOptimizerKind kind, int concat)
{
    EmbTable *ta[NT], *tb[NT];
    make_tables(ta, 7);
    make_tables(tb, 7);
    const EmbOptimizerConfig oc = emb_optimizer_defaults(kind, 0.05f);
    Data d;
    make_data(&d, 1);
    EmbCollection *c = collection_over(ta, &d, s, &oc);
    EmbOptimizer *o = NULL;
    EmbGrad *g[NT];
    EmbIndexer *ix[NT];
    cr_assert_eq(emb_optimizer_create(&o, &oc), 0);
    for (int i = 0; i < NT; i++)
        cr_assert(!emb_grad_create(&g[i]) && !emb_indexer_create(&ix[i]));
    static float outa[NB * WIDTH], outb[NB * WIDTH];
    float *ra[NT], *rb[NT];
    int64_t sa[NT], sb[NT];
    const EmbOutputs la = concat ? emb_collection_concat(c, outa) : per_table(outa, ra, sa);
    const EmbOutputs lb = concat ? emb_collection_concat(c, outb) : per_table(outb, rb, sb);
    for (int step = 0; step < 3; step++) {
        make_data(&d, 100 + (uint64_t)step);
        tu_poison(outa, NB * WIDTH), tu_poison(outb, NB * WIDTH);
        cr_assert_eq(emb_collection_forward(c, d.b, &la), 0, "%s", emb_last_error());
        cr_assert_eq(emb_maplookup(s, tb, NT, d.b, d.p, &lb), 0);
        cr_assert_eq(memcmp(outa, outb, sizeof outa), 0, "forward, step %d", step);
        memcpy(outa, d.dy, sizeof outa);
        memcpy(outb, d.dy, sizeof outb);
        cr_assert_eq(emb_collection_backward(c, &la), 0, "%s", emb_last_error());
        cr_assert_eq(emb_maplookup_backward(tb, NT, d.b, d.p, &lb, g), 0);
        cr_assert_eq(emb_update_many(s, o, tb, (const EmbGrad *const *)g, NT, ix, 0), 0);
        for (int i = 0; i < NT; i++)
            cr_assert_eq(tu_checksum(ta[i]), tu_checksum(tb[i]), "%s kind %d step %d table %d",
                         emb_strategy_name(s), (int)kind, step, i);
    }
    emb_collection_destroy(&c);
    cr_assert_null(c);
    emb_optimizer_destroy(&o);
    for (int i = 0; i < NT; i++) {
        emb_grad_destroy(&g[i]), emb_indexer_destroy(&ix[i]);
        emb_table_destroy(&ta[i]), emb_table_destroy(&tb[i]);
    }
}

Test(collection, same_bits_as_the_three_calls)
{
    const EmbStrategyOptions par = {.nthreads = 2}, split = {.nthreads = 2, .num_splits = 3};
    EmbStrategy *s[4] = {NULL};
    cr_assert_eq(emb_strategy_sequential(&s[0]), 0);
    cr_assert_eq(emb_strategy_parallel(&s[1], &par), 0);
    cr_assert_eq(emb_strategy_prealloc_concat(&s[2], &split), 0);
    cr_assert_eq(emb_strategy_auto(&s[3], &par), 0);
    const EmbOptimizerKind kinds[3] = {EMB_OPT_SGD, EMB_OPT_ROWWISE_ADAGRAD, EMB_OPT_ADAM};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 4; i++)
            for (int concat = 0; concat < 2; concat++)
                compare(s[i], kinds[k], concat);
    for (int i = 0; i < 4; i++)
        emb_strategy_destroy(&s[i]);
}

/* A collection's own (auto) strategy of 1 and 2 threads gives one sequential's bits. */
Test(collection, owned_strategy_any_thread_count)
{
    uint64_t sums[2][NT];
    for (int th = 1; th <= 2; th++) {
        EmbTable *t[NT];
        make_tables(t, 3);
        Data d;
        make_data(&d, 5);
        EmbCollectionTable ct[NT];
        for (int i = 0; i < NT; i++)
            ct[i] = (EmbCollectionTable){.name = names[i], .table = t[i], .pooling = d.p[i]};
        const EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
        const EmbCollectionOptions o = {.strategy_options = {.nthreads = th},
                                        .optimizer = &oc, .prependrows = 3};
        EmbCollection *c = NULL;
        cr_assert_eq(emb_collection_create(&c, ct, NT, &o), 0);
        cr_assert_str_eq(emb_strategy_name(emb_collection_strategy(c)), "auto");
        static float out[NB * WIDTH];
        const EmbOutputs l = emb_collection_concat(c, out);
        for (int step = 0; step < 2; step++) {
            cr_assert_eq(emb_collection_forward(c, d.b, &l), 0);
            memcpy(out, d.dy, sizeof out);
            cr_assert_eq(emb_collection_backward(c, &l), 0);
        }
        for (int i = 0; i < NT; i++)
            sums[th - 1][i] = tu_checksum(t[i]);
        emb_collection_destroy(&c);
        for (int i = 0; i < NT; i++)
            emb_table_destroy(&t[i]);
    }
    cr_assert_eq(memcmp(sums[0], sums[1], sizeof sums[0]), 0);
}

Test(collection, created_tables_and_accessors)
{
    EmbCollectionTable ct[2] = {
        {.name = "a", .spec = {.ncolumns = 10, .featuresize = 4,
                               .init = {EMB_INIT_CONSTANT, 0.5f, 0, 0}},
         .pooling = EMB_POOLING_SUM},
        {.name = "b", .spec = {.ncolumns = 20, .featuresize = 6, .dtype = EMB_BF16},
         .pooling = EMB_POOLING_MEAN},
    };
    const EmbCollectionOptions o = {.prependrows = 2};
    EmbCollection *c = NULL;
    cr_assert_eq(emb_collection_create(&c, ct, 2, &o), 0, "%s", emb_last_error());
    cr_assert_eq(emb_collection_ntables(c), 2);
    cr_assert_eq(emb_collection_width(c), 12);
    cr_assert_eq(emb_collection_offset(c, 0), 2);
    cr_assert_eq(emb_collection_offset(c, 1), 6);
    cr_assert_eq(emb_collection_offset(c, 2), -1);
    int64_t i = -1;
    cr_assert_eq(emb_collection_find(c, "b", &i), 0);
    cr_assert_eq(i, 1);
    cr_assert_eq(emb_collection_find(c, "zz", &i), EMB_ENOTFOUND);
    cr_assert_str_eq(emb_collection_name(c, 0), "a");
    cr_assert_str_eq(emb_table_name(emb_collection_table(c, 1)), "b");
    cr_assert_eq(emb_table_dtype(emb_collection_table(c, 1)), EMB_BF16);
    cr_assert_eq(emb_collection_pooling(c, 1)->combiner, EMB_COMBINER_MEAN);
    cr_assert_null(emb_collection_table(c, 2));
    cr_assert_null(emb_collection_optimizer(c));
    float col[4];
    cr_assert_eq(emb_gather(emb_collection_table(c, 0), (int64_t[]){9}, 1, col, 4), 0);
    cr_assert_eq(col[3], 0.5f);
    cr_assert_eq(emb_collection_prefetch(c, (EmbBatch[2]){{0}}), 0);
    cr_assert_eq(emb_collection_prefetch(c, NULL), EMB_ENULL);
    emb_collection_destroy(&c);
    emb_collection_destroy(&c); /* NULL is fine */
}

Test(collection, bad_create_arguments)
{
    EmbTable *t = tu_table(10, 4, EMB_F32, 1);
    EmbCollection *c = NULL;
    const EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_SGD, 0.1f);
    EmbOptimizer *o = NULL;
    cr_assert_eq(emb_optimizer_create(&o, &oc), 0);
    EmbCollectionTable ct[2] = {{.name = "x", .table = t},
                                {.name = "x", .spec = {.ncolumns = 10, .featuresize = 4}}};
    cr_assert_eq(emb_collection_create(&c, ct, 2, NULL), EMB_EINVAL);
    cr_assert(strstr(emb_last_error(), "\"x\""), "%s", emb_last_error());
    ct[1].name = NULL;
    cr_assert_eq(emb_collection_create(&c, ct, 2, NULL), EMB_EINVAL);
    ct[1].name = "";
    cr_assert_eq(emb_collection_create(&c, ct, 2, NULL), EMB_EINVAL);
    ct[1] = (EmbCollectionTable){.name = "y", .table = t};
    cr_assert_eq(emb_collection_create(&c, ct, 2, NULL), EMB_EINVAL); /* the same table */
    ct[1] = (EmbCollectionTable){.name = "y", .spec = {.ncolumns = 10, .featuresize = 4},
                                 .pooling = {.combiner = EMB_COMBINER_SUM, .max_norm = -1}};
    cr_assert_eq(emb_collection_create(&c, ct, 2, NULL), EMB_EINVAL);
    cr_assert(strstr(emb_last_error(), "table \"y\" (1)"), "%s", emb_last_error());
    ct[1].pooling = (EmbPooling){.combiner = EMB_COMBINER_SUM, .flags = EMB_USE_DEFAULT_ID,
                                 .default_id = 10};
    cr_assert_eq(emb_collection_create(&c, ct, 2, NULL), EMB_ERANGE);
    cr_assert(strstr(emb_last_error(), "table \"y\" (1)"), "%s", emb_last_error());
    ct[1].pooling = EMB_POOLING_SUM;
    const EmbCollectionOptions both = {.optimizer = &oc, .shared_optimizer = o};
    cr_assert_eq(emb_collection_create(&c, ct, 2, &both), EMB_EINVAL);
    const EmbCollectionOptions neg = {.prependrows = -1}, flags = {.update_flags = 1u << 9};
    cr_assert_eq(emb_collection_create(&c, ct, 2, &neg), EMB_EINVAL);
    cr_assert_eq(emb_collection_create(&c, ct, 2, &flags), EMB_EINVAL);
    cr_assert_eq(emb_collection_create(&c, ct, 0, NULL), EMB_EINVAL);
    cr_assert_eq(emb_collection_create(&c, NULL, 2, NULL), EMB_ENULL);
    cr_assert_null(c);
    /* a shared optimizer: the collection's state is its, and destroying keeps it usable */
    const EmbCollectionOptions shared = {.shared_optimizer = o};
    cr_assert_eq(emb_collection_create(&c, ct, 2, &shared), 0, "%s", emb_last_error());
    cr_assert_eq(emb_collection_optimizer(c), o);
    emb_collection_destroy(&c);
    cr_assert_eq(emb_optimizer_state(o, t, 0, &(EmbTable *){NULL}, NULL), 0);
    emb_optimizer_destroy(&o);
    emb_table_destroy(&t);
}

/* A bad id in table "shop" at position 17: named, and nothing written anywhere. */
Test(collection, errors_name_the_table_and_write_nothing)
{
    EmbTable *t[NT];
    make_tables(t, 9);
    Data d;
    make_data(&d, 2);
    const EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    EmbCollection *c = collection_over(t, &d, NULL, &oc);
    static float out[NB * WIDTH];
    const EmbOutputs l = emb_collection_concat(c, out);
    cr_assert_eq(emb_collection_backward(c, &l), EMB_EINVAL); /* no forward yet */
    d.ids[2][17] = 5000;
    tu_poison(out, NB * WIDTH);
    cr_assert_eq(emb_collection_forward(c, d.b, &l), EMB_ERANGE);
    const char *m = emb_last_error();
    cr_assert(strstr(m, "emb_collection_forward: table \"shop\" (2)") && strstr(m, "5000") &&
              strstr(m, "17"), "%s", m);
    cr_assert(tu_is_poison(out, NB * WIDTH));
    d.ids[2][17] = 1;
    uint64_t sums[NT];
    for (int i = 0; i < NT; i++)
        sums[i] = tu_checksum(t[i]);
    cr_assert_eq(emb_collection_forward(c, d.b, &l), 0);
    /* an output gradient too narrow for the layout: nothing applied */
    EmbOutputs narrow = l;
    narrow.concat_stride = WIDTH - 1;
    cr_assert_eq(emb_collection_backward(c, &narrow), EMB_ESHAPE);
    /* the ids changed under the step (the caller's contract broken): the update finds it */
    d.ids[1][40] = -3;
    memcpy(out, d.dy, sizeof out);
    cr_assert_eq(emb_collection_backward(c, &l), EMB_ERANGE);
    m = emb_last_error();
    cr_assert(strstr(m, "table \"item\" (1)") && strstr(m, "40"), "%s", m);
    for (int i = 0; i < NT; i++)
        cr_assert_eq(tu_checksum(t[i]), sums[i], "table %d written", i);
    d.ids[1][40] = 2; /* repaired: the recorded step can be applied */
    cr_assert_eq(emb_collection_backward(c, &l), 0, "%s", emb_last_error());
    cr_assert_eq(emb_collection_backward(c, &l), EMB_EINVAL); /* the step ended */
    emb_collection_destroy(&c);
    for (int i = 0; i < NT; i++)
        emb_table_destroy(&t[i]);
}

/* Without an optimizer: the recorded gradient, as emb_update() of one's own applies it,
 * and coalesced rows equal to a plain double-checked sum. */
Test(collection, gradients_without_optimizer)
{
    EmbTable *ta[NT], *tb[NT];
    make_tables(ta, 4);
    make_tables(tb, 4);
    Data d;
    make_data(&d, 8);
    EmbCollection *c = collection_over(ta, &d, NULL, NULL);
    const EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_SGD, 0.5f);
    EmbCollection *f = collection_over(tb, &d, NULL, &oc);
    static float out[NB * WIDTH];
    const EmbOutputs l = emb_collection_concat(c, out);
    const int64_t *ids;
    const float *rows;
    int64_t n;
    cr_assert_eq(emb_collection_grad_rows(c, 0, &ids, &rows, &n), EMB_EINVAL);
    cr_assert_eq(emb_collection_forward(c, d.b, &l), 0);
    cr_assert_eq(emb_collection_forward(f, d.b, &l), 0);
    memcpy(out, d.dy, sizeof out);
    cr_assert_eq(emb_collection_backward(c, &l), 0);
    cr_assert_eq(emb_collection_backward(f, &l), 0);
    /* table 1 (MEAN, plain ids): each distinct id's row is Σ dy / bag size over its bags */
    cr_assert_eq(emb_collection_grad_rows(c, 1, &ids, &rows, &n), 0, "%s", emb_last_error());
    cr_assert_gt(n, 0);
    for (int64_t k = 0; k < n; k++)
        for (int e = 0; e < dims[1]; e++) {
            double want = 0;
            for (int p = 0; p < NB * BS; p++)
                if (d.ids[1][p] == ids[k])
                    want += d.dy[(p / BS) * WIDTH + 3 + 16 + e] / (double)BS;
            cr_assert_float_eq(rows[k * dims[1] + e], want, 1e-5, "id %lld", (long long)ids[k]);
        }
    /* the recorded gradients, applied by hand with SGD: the bits of the fused update */
    EmbOptimizer *o = NULL;
    EmbIndexer *ix = NULL;
    cr_assert(!emb_optimizer_create(&o, &oc) && !emb_indexer_create(&ix));
    for (int i = 0; i < NT; i++) {
        cr_assert_eq(emb_update(o, ta[i], emb_collection_grad(c, i), ix, 0), 0);
        cr_assert_eq(tu_checksum(ta[i]), tu_checksum(tb[i]), "table %d", i);
    }
    emb_optimizer_destroy(&o);
    emb_indexer_destroy(&ix);
    emb_collection_destroy(&c);
    emb_collection_destroy(&f);
    for (int i = 0; i < NT; i++)
        emb_table_destroy(&ta[i]), emb_table_destroy(&tb[i]);
}

/* Train 2 steps, save, train 2: the same bits as restoring into a fresh collection and
 * training 2. */
static EmbCollection *created(uint64_t seed, const EmbOptimizerConfig *oc)
{
    EmbCollectionTable ct[2] = {
        {.name = "u", .spec = {.ncolumns = 50, .featuresize = 8,
                               .init = {EMB_INIT_UNIFORM, -1, 1, seed}},
         .pooling = EMB_POOLING_SUM},
        {.name = "v", .spec = {.ncolumns = 30, .featuresize = 4, .dtype = EMB_F16,
                               .init = {EMB_INIT_NORMAL, 0, 1, seed + 1}},
         .pooling = EMB_POOLING_SQRTN},
    };
    const EmbCollectionOptions o = {.optimizer = oc};
    EmbCollection *c = NULL;
    cr_assert_eq(emb_collection_create(&c, ct, 2, &o), 0, "%s", emb_last_error());
    return c;
}

static void train(EmbCollection *c, int from, int to)
{
    for (int s = from; s < to; s++) {
        int64_t ids[2][32];
        for (int k = 0; k < 32; k++)
            ids[0][k] = (k * 7 + s * 3) % 50, ids[1][k] = (k * 5 + s) % 30;
        const EmbBatch b[2] = {{.ids = ids[0], .nnz = 32, .nbags = 8, .bag_size = 4},
                               {.ids = ids[1], .nnz = 32, .nbags = 8, .bag_size = 4}};
        float out[8 * 12];
        const EmbOutputs l = emb_collection_concat(c, out);
        cr_assert_eq(emb_collection_forward(c, b, &l), 0);
        for (int k = 0; k < 8 * 12; k++)
            out[k] = 0.01f * out[k] + 0.1f;
        cr_assert_eq(emb_collection_backward(c, &l), 0);
    }
}

Test(collection, save_restore_one_call)
{
    char dir[64], sub[96], path[256];
    tmpdir(dir);
    snprintf(sub, sizeof sub, "%s/run/ckpt", dir); /* created by the save (mkdir -p) */
    const EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_ADAM, 0.01f);
    EmbCollection *a = created(1, &oc), *b = created(99, &oc);
    train(a, 0, 2);
    cr_assert_eq(emb_collection_save(a, sub, "ckpt", -1, 0, path, sizeof path), EMB_EINVAL);
    struct stat st;
    cr_assert_neq(stat(sub, &st), 0, "a failed save created %s", sub);
    cr_assert_eq(emb_collection_save(a, sub, "ckpt", 2, 0, path, sizeof path), 0, "%s",
                 emb_last_error());
    train(a, 2, 4);
    int64_t step = -1;
    cr_assert_eq(emb_collection_restore(b, path, &step), 0, "%s", emb_last_error());
    cr_assert_eq(step, 2);
    train(b, 2, 4);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(tu_checksum(emb_collection_table(a, i)),
                     tu_checksum(emb_collection_table(b, i)), "table %d", i);
    /* a collection without the file's names: nothing restored */
    EmbCollectionTable other = {.name = "w", .spec = {.ncolumns = 5, .featuresize = 2}};
    EmbCollection *w = NULL;
    cr_assert_eq(emb_collection_create(&w, &other, 1, NULL), 0);
    cr_assert_eq(emb_collection_restore(w, path, NULL), EMB_ENOTFOUND);
    emb_collection_destroy(&w);
    emb_collection_destroy(&a);
    emb_collection_destroy(&b);
    rmdir_all(dir);
}

/* emb_collection_backward_batches: the backward of batches given again, same bits as a
 * forward-then-backward step. */
Test(collection, backward_of_given_batches)
{
    EmbTable *ta[NT], *tb[NT];
    make_tables(ta, 11);
    make_tables(tb, 11);
    Data d;
    make_data(&d, 12);
    const EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    EmbCollection *a = collection_over(ta, &d, NULL, &oc), *b = collection_over(tb, &d, NULL, &oc);
    static float out[NB * WIDTH];
    const EmbOutputs l = emb_collection_concat(a, out);
    cr_assert_eq(emb_collection_forward(a, d.b, &l), 0);
    memcpy(out, d.dy, sizeof out);
    cr_assert_eq(emb_collection_backward(a, &l), 0);
    cr_assert_eq(emb_collection_backward_batches(b, d.b, &l), 0, "%s", emb_last_error());
    for (int i = 0; i < NT; i++)
        cr_assert_eq(tu_checksum(ta[i]), tu_checksum(tb[i]), "table %d", i);
    cr_assert_eq(emb_collection_backward_batches(b, NULL, &l), EMB_ENULL);
    emb_collection_destroy(&a);
    emb_collection_destroy(&b);
    for (int i = 0; i < NT; i++)
        emb_table_destroy(&ta[i]), emb_table_destroy(&tb[i]);
}

static int calls[4];
static int fake_forward(void *u, const EmbBatch *b, const EmbOutputs *o)
{
    (void)b, (void)o;
    calls[0]++;
    return *(int *)u;
}
static int fake_backward(void *u, const EmbBatch *b, const EmbOutputs *o)
{
    (void)u, (void)o;
    calls[b ? 2 : 1]++;
    return 0;
}
static void fake_destroy(void *u)
{
    (void)u;
    calls[3]++;
}

/* A collection whose calls are a table of functions: dispatched, ENOTSUP where absent. */
Test(collection, custom_calls)
{
    static int code = EMB_EIO;
    const EmbCollectionOps ops = {.forward = fake_forward, .backward = fake_backward,
                                  .destroy = fake_destroy};
    const EmbCollectionTable ct[2] = {{.name = "p", .spec = {.featuresize = 3}},
                                      {.name = "q", .spec = {.featuresize = 5}}};
    const EmbCollectionOptions o = {.prependrows = 1};
    EmbCollection *c = NULL;
    const EmbCollectionTable bad = {.name = "r"}; /* no featuresize */
    cr_assert_eq(emb_collection_custom(&c, &bad, 1, &o, &ops, &code), EMB_EINVAL);
    cr_assert_eq(calls[3], 0); /* not owned on failure */
    cr_assert_eq(emb_collection_custom(&c, ct, 2, &o, &ops, &code), 0, "%s", emb_last_error());
    cr_assert_eq(emb_collection_width(c), 9);
    cr_assert_eq(emb_collection_custom_user(c, &ops), &code);
    const EmbCollectionOps other = {.forward = fake_forward};
    cr_assert_null(emb_collection_custom_user(c, &other));
    float out[9];
    const EmbOutputs l = emb_collection_concat(c, out);
    const EmbBatch b[2] = {{0}};
    cr_assert_eq(emb_collection_forward(c, b, &l), EMB_EIO);
    cr_assert_eq(emb_collection_backward(c, &l), 0);
    cr_assert_eq(emb_collection_backward_batches(c, b, &l), 0);
    cr_assert_eq(emb_collection_prefetch(c, b), 0);
    cr_assert_eq(emb_collection_save(c, "/tmp", "x", 0, 0, NULL, 0), EMB_ENOTSUP);
    cr_assert_eq(emb_collection_restore(c, "/tmp/x", NULL), EMB_ENOTSUP);
    const int64_t *ids;
    const float *rows;
    int64_t n;
    cr_assert_eq(emb_collection_grad_rows(c, 0, &ids, &rows, &n), EMB_ENOTSUP);
    cr_assert_eq(calls[0] * 100 + calls[1] * 10 + calls[2], 111);
    emb_collection_destroy(&c);
    cr_assert_eq(calls[3], 1);
}
