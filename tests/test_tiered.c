/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tiered.c — tiered tables (tiered.h) against the same tables in memory: every
 * forward output and the final rows bit for bit, for cache sizes down to one row, both I/O
 * engines, LRU and LFU, every optimizer, emb_update and emb_update_many under every
 * strategy, prefetch depths 0..2; reopening a flushed file; faults injected into the I/O
 * (tier_fault.h): errors name the file and rows, nothing is lost, a retry gives the same
 * bits. Internal (the static library) for the fault hook only.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "embtables/collection.h"
#include "embtables/tiered.h"
#include "test_files.h"
#include "test_ensemble.h"
#include "test_update_ref.h"
#include "tier_fault.h"

#define NB 24
#define NNZ (NB * 7)


/* The ensemble's batches, table 1's ids as int32. */
static void make_batches(Data *d, uint64_t seed)
{
    make_data(d, seed);
    d->b[1].ids = d->ids32;
    d->b[1].id_type = EMB_ID_I32;
}

/* How the tiered model is set up (cache_rows 0: the tables in memory). */
typedef struct Cfg {
    int64_t cache_rows;
    EmbTierEngine engine;
    EmbTierPolicy policy;
    int prefetch;  /* batches handed ahead */
} Cfg;

static int64_t record_bytes(int i)
{
    return ((int64_t)dims[i] * (int64_t)emb_dtype_size(dtypes[i]) + 15) / 16 * 16 + 8 * dims[i];
}

static EmbTable *tiered(int i, const Cfg *cfg)
{
    char path[128];
    snprintf(path, sizeof path, "%s/t%d", dir, i);
    const EmbTieredOptions o = {.cache_bytes = cfg->cache_rows * record_bytes(i),
                                .engine = cfg->engine, .policy = cfg->policy,
                                .state_width = 2 * dims[i]};
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_tiered_create(&t, path, ncols[i], dims[i], dtypes[i], &o), 0, "%s",
                 emb_last_error());
    return t;
}

/* Table @i of a model of @arg (a Cfg): tiered, or in memory when cache_rows is 0; both
   initialised alike. */
static EmbTable *make_table(int i, const void *arg)
{
    const Cfg *cfg = arg;
    EmbTable *t = NULL;
    if (cfg->cache_rows)
        t = tiered(i, cfg);
    else
        cr_assert_eq(emb_table_create(&t, ncols[i], dims[i], dtypes[i], NULL), 0);
    const EmbInitializer in = {EMB_INIT_UNIFORM, -1.0f, 1.0f, 100 + (uint64_t)i};
    cr_assert_eq(emb_table_initialize(t, &in), 0, "%s", emb_last_error());
    return t;
}

static void model_make(Model *m, EmbOptimizerConfig c, const Cfg *cfg)
{
    model_init_with(m, c, make_table, cfg);
}

/* Every row of every table as f32 (through lookups: a gather of all ids). */
static float *content(Model *m)
{
    int64_t n = 0;
    for (int i = 0; i < NT; i++)
        n += ncols[i] * dims[i];
    float *out = malloc((size_t)n * sizeof *out), *o = out;
    for (int i = 0; i < NT; i++) {
        int64_t *ids = malloc((size_t)ncols[i] * sizeof *ids);
        for (int64_t c = 0; c < ncols[i]; c++)
            ids[c] = c;
        cr_assert_eq(emb_gather(m->t[i], ids, ncols[i], o, dims[i]), 0, "%s", emb_last_error());
        o += ncols[i] * dims[i];
        free(ids);
    }
    return out;
}

#define STEPS 3
static Data data[STEPS + 3];

static void make_all(void)
{
    for (int k = 0; k < STEPS + 3; k++)
        make_batches(&data[k], 500 + (uint64_t)k);
}

/* Training steps [from, to) of @m: a forward (maplookup under @s, or emb_lookup per table),
   its outputs into @fwd (step k's at fwd + k * NT * NB * 64; NULL: a scratch buffer); the
   backward; the update (emb_update_many under @s, or emb_update per table). Prefetches
   @prefetch batches ahead. Returns the first error (0). */
static int steps(Model *m, int from, int to, EmbStrategy *s, float *fwd, int prefetch)
{
    static float scratch[NT * NB * 64];
    for (int k = from; k < from + prefetch; k++)
        for (int i = 0; i < NT; i++)
            cr_assert_eq(emb_table_prefetch(m->t[i], &data[k].b[i]), 0);
    int r = 0;
    for (int step = from; step < to && !r; step++) {
        Data *dd = &data[step];
        for (int i = 0; prefetch && i < NT; i++)
            emb_table_prefetch(m->t[i], &data[step + prefetch].b[i]);
        float *outs[NT];
        for (int i = 0; i < NT; i++)
            outs[i] = (fwd ? fwd + (int64_t)step * NT * NB * 64 : scratch) + i * NB * 64;
        const EmbOutputs eo = {.per_table = outs};
        if (s)
            r = emb_maplookup(s, m->t, NT, dd->b, dd->p, &eo);
        for (int i = 0; i < NT && !s && !r; i++)
            r = emb_lookup(m->t[i], &dd->b[i], &dd->p[i], outs[i], dims[i]);
        float *dys[NT] = {dd->dy[0], dd->dy[1], dd->dy[2], dd->dy[3]};
        const int64_t strides[NT] = {64, 64, 64, 64};
        const EmbOutputs go = {.per_table = dys, .strides = strides};
        r = r ? r : emb_maplookup_backward(m->t, NT, dd->b, dd->p, &go, m->g);
        if (s && !r)
            r = emb_update_many(s, m->opt, m->t, (const EmbGrad *const *)m->g, NT, m->ix, 0);
        for (int i = 0; i < NT && !s && !r; i++)
            r = emb_update(m->opt, m->t[i], m->g[i], m->ix[i], 0);
    }
    return r;
}

/* STEPS steps of a fresh model; returns its rows. */
static float *train(EmbOptimizerConfig c, const Cfg *cfg, EmbStrategy *s, float *fwd)
{
    Model m;
    model_make(&m, c, cfg);
    make_all();
    cr_assert_eq(steps(&m, 0, STEPS, s, fwd, cfg->prefetch), 0, "%s", emb_last_error());
    float *rows = content(&m);
    model_free(&m);
    return rows;
}

static int64_t total_rows(void)
{
    int64_t n = 0;
    for (int i = 0; i < NT; i++)
        n += ncols[i] * dims[i];
    return n;
}

static void compare(EmbOptimizerConfig c, const Cfg *cfg, EmbStrategy *s, const float *want_rows,
                    const float *want_fwd, const char *what)
{
    static float fwd[STEPS * NT * NB * 64];
    memset(fwd, 0, sizeof fwd);
    float *rows = train(c, cfg, s, fwd);
    cr_assert_eq(memcmp(fwd, want_fwd, sizeof fwd), 0, "%s: forward differs (optimizer %d, "
                 "cache %lld rows)", what, (int)c.kind, (long long)cfg->cache_rows);
    cr_assert_eq(memcmp(rows, want_rows, (size_t)total_rows() * sizeof(float)), 0,
                 "%s: rows differ (optimizer %d, cache %lld rows)", what, (int)c.kind,
                 (long long)cfg->cache_rows);
    free(rows);
}

Test(tiered, bit_identical_to_memory_for_every_cache_size_strategy_and_optimizer,
     .init = setup, .fini = teardown, .timeout = 600)
{
    static const Cfg cfgs[] = {
        {1, EMB_TIER_ENGINE_URING, EMB_TIER_LRU, 0},
        {3, EMB_TIER_ENGINE_PREAD, EMB_TIER_LFU_ADMIT, 1},
        {16, EMB_TIER_ENGINE_AUTO, EMB_TIER_LRU_ADMIT, 2},
        {2000, EMB_TIER_ENGINE_PREAD, EMB_TIER_LFU, 1},
    };
    const Cfg mem = {0};
    static float want_fwd[STEPS * NT * NB * 64];
    for (int kind = EMB_OPT_SGD; kind <= EMB_OPT_ADAM; kind++) {
        const EmbOptimizerConfig c = emb_optimizer_defaults((EmbOptimizerKind)kind, 0.05f);
        memset(want_fwd, 0, sizeof want_fwd);
        float *want = train(c, &mem, NULL, want_fwd);
        EmbStrategy *ss[4] = {NULL};
        const EmbStrategyOptions o2 = {.nthreads = 2}, o3 = {.nthreads = 2, .num_splits = 3};
        cr_assert_eq(emb_strategy_sequential(&ss[0]), 0);
        cr_assert_eq(emb_strategy_parallel(&ss[1], &o2), 0);
        cr_assert_eq(emb_strategy_prealloc_concat(&ss[2], &o3), 0);
        cr_assert_eq(emb_strategy_auto(&ss[3], &o2), 0);
        for (size_t k = 0; k < sizeof cfgs / sizeof *cfgs; k++) {
            if (cfgs[k].engine == EMB_TIER_ENGINE_URING) { /* skipped where io_uring is not */
                EmbTable *t = NULL;
                char path[128];
                snprintf(path, sizeof path, "%s/probe", dir);
                const EmbTieredOptions po = {.engine = EMB_TIER_ENGINE_URING};
                if (emb_table_tiered_create(&t, path, 1, 1, EMB_F32, &po))
                    continue;
                emb_table_destroy(&t);
            }
            compare(c, &cfgs[k], NULL, want, want_fwd, "emb_update");
            for (int si = 0; si < 4; si++)
                compare(c, &cfgs[k], ss[si], want, want_fwd, "emb_update_many");
        }
        for (int si = 0; si < 4; si++)
            emb_strategy_destroy(&ss[si]);
        free(want);
    }
}

/* ---- reopening, checkpoints ------------------------------------------------------------ */

static const char *names[NT] = {"t0", "t1", "t2", "t3"};

static void save(Model *m, const char *sub, char *path)
{
    char d[128];
    snprintf(d, sizeof d, "%s/%s", dir, sub);
    mkdir(d, 0755);
    EmbCheckpointVar vars[NT];
    for (int i = 0; i < NT; i++)
        vars[i] = (EmbCheckpointVar){names[i], m->t[i]};
    const EmbSaverOptions so = {.var_list = vars, .nvars = NT, .optimizer = m->opt};
    EmbSaver *sv = NULL;
    cr_assert_eq(emb_saver_create(&sv, d, "ck", &so), 0, "%s", emb_last_error());
    cr_assert_eq(emb_saver_save(sv, NULL, 7, path, 256), 0, "%s", emb_last_error());
    emb_saver_destroy(&sv);
}

static void restore(Model *m, const char *path)
{
    EmbCheckpointVar vars[NT];
    for (int i = 0; i < NT; i++)
        vars[i] = (EmbCheckpointVar){names[i], m->t[i]};
    const EmbRestoreOptions ro = {.var_list = vars, .nvars = NT, .optimizer = m->opt};
    cr_assert_eq(emb_checkpoint_restore_ex(NULL, path, &ro, NULL), 0, "%s", emb_last_error());
}

/* Train 2 steps tiered, save; restore into memory and train on; save that and restore into
   fresh tiered tables, train on: every path gives the bits of training straight through. */
/* STEPS steps of collection @c, each step prefetching the next step's batches through
   emb_collection_prefetch(); forward outputs into @fwd. */
static void run_collection(EmbCollection *c, float *fwd)
{
    cr_assert_eq(emb_collection_prefetch(c, data[0].b), 0);
    for (int step = 0; step < STEPS; step++) {
        cr_assert_eq(emb_collection_prefetch(c, data[step + 1].b), 0);
        float *outs[NT], *dys[NT];
        const int64_t strides[NT] = {64, 64, 64, 64};
        for (int i = 0; i < NT; i++)
            outs[i] = fwd + ((int64_t)step * NT + i) * NB * 64, dys[i] = data[step].dy[i];
        const EmbOutputs eo = {.per_table = outs}, go = {.per_table = dys, .strides = strides};
        cr_assert_eq(emb_collection_forward(c, data[step].b, &eo), 0, "%s", emb_last_error());
        cr_assert_eq(emb_collection_backward(c, &go), 0, "%s", emb_last_error());
    }
}

/* STEPS steps of @m's tables as one collection (Adagrad). */
static void collection_steps(Model *m, float *fwd)
{
    EmbCollectionTable ct[NT];
    for (int i = 0; i < NT; i++)
        ct[i] = (EmbCollectionTable){.name = (const char *[]){"a", "b", "c", "d"}[i],
                                     .table = m->t[i], .pooling = data[0].p[i]};
    const EmbOptimizerConfig cfg = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.05f);
    const EmbCollectionOptions o = {.optimizer = &cfg, .strategy_options = {.nthreads = 2}};
    EmbCollection *c = NULL;
    cr_assert_eq(emb_collection_create(&c, ct, NT, &o), 0, "%s", emb_last_error());
    run_collection(c, fwd);
    emb_collection_destroy(&c);
}

/* A collection of the ensemble's tables created from specs (tiered ones in files of 3
   records' cache, their state room left to the collection: 0), trained STEPS steps with
   optimizer @kind; its forward outputs into @fwd, every table's rows returned. */
static float *spec_collection(bool tiered_tables, EmbOptimizerKind kind, float *fwd)
{
    EmbCollectionTable ct[NT];
    EmbTieredSpec ts[NT];
    char paths[NT][128];
    for (int i = 0; i < NT; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/spec%d", dir, i);
        ts[i] = (EmbTieredSpec){paths[i], {.cache_bytes = 3 * record_bytes(i),
                                           .engine = EMB_TIER_ENGINE_PREAD}};
        ct[i] = (EmbCollectionTable){
            .name = names[i], .pooling = data[0].p[i],
            .spec = {.ncolumns = ncols[i], .featuresize = dims[i], .dtype = dtypes[i],
                     .init = {EMB_INIT_UNIFORM, -1.0f, 1.0f, 100 + (uint64_t)i},
                     .tiered = tiered_tables ? &ts[i] : NULL}};
    }
    const EmbOptimizerConfig cfg = emb_optimizer_defaults(kind, 0.05f);
    const EmbCollectionOptions o = {.optimizer = &cfg};
    EmbCollection *c = NULL;
    cr_assert_eq(emb_collection_create(&c, ct, NT, &o), 0, "%s", emb_last_error());
    for (int i = 0; i < NT; i++)
        cr_assert_eq(emb_table_is_tiered(emb_collection_table(c, i)), tiered_tables);
    run_collection(c, fwd);
    Model m;
    for (int i = 0; i < NT; i++)
        m.t[i] = emb_collection_table(c, i);
    float *rows = content(&m);
    emb_collection_destroy(&c);
    return rows;
}

Test(tiered, a_collection_prefetches_and_gives_the_bits_of_memory, .init = setup,
     .fini = teardown)
{
    static float want_fwd[STEPS * NT * NB * 64], fwd[STEPS * NT * NB * 64];
    const EmbOptimizerConfig none = emb_optimizer_defaults(EMB_OPT_SGD, 0.05f); /* unused */
    const Cfg mem = {0}, tier = {3, EMB_TIER_ENGINE_PREAD, EMB_TIER_LRU, 1};
    make_all();
    Model a, b;
    model_make(&a, none, &mem);
    model_make(&b, none, &tier);
    collection_steps(&a, want_fwd);
    collection_steps(&b, fwd);
    cr_assert_eq(memcmp(fwd, want_fwd, sizeof fwd), 0, "forward differs");
    float *want = content(&a), *got = content(&b);
    cr_assert_eq(memcmp(got, want, (size_t)total_rows() * sizeof(float)), 0, "rows differ");
    EmbTieredStats st;
    cr_assert_eq(emb_table_tiered_stats(b.t[2], &st), 0);
    cr_assert_gt(st.prefetched, 0, "the collection's prefetch reached no table");
    free(want), free(got);
    model_free(&a), model_free(&b);
}

/* A tiered spec (store.h's EmbVariableSpec::tiered) through the collection: its state room
   comes from the collection's optimizer, and it trains to the bits of the in-memory spec. */
Test(tiered, collection_specs_create_tiered_tables, .init = setup, .fini = teardown)
{
    static float want_fwd[STEPS * NT * NB * 64], fwd[STEPS * NT * NB * 64];
    make_all();
    const EmbOptimizerKind kinds[2] = {EMB_OPT_ADAGRAD, EMB_OPT_ADAM};
    for (int k = 0; k < 2; k++) {
        float *want = spec_collection(false, kinds[k], want_fwd);
        float *got = spec_collection(true, kinds[k], fwd);
        cr_assert_eq(memcmp(fwd, want_fwd, sizeof fwd), 0, "forward differs (%d)", k);
        cr_assert_eq(memcmp(got, want, (size_t)total_rows() * sizeof(float)), 0,
                     "rows differ (%d)", k);
        free(want), free(got);
    }
}

/* The store's checks of a tiered spec, and reuse by name. */
Test(tiered, store_specs, .init = setup, .fini = teardown)
{
    char path[128];
    snprintf(path, sizeof path, "%s/store", dir);
    const EmbDynamicOptions dyn = {.capacity = 8};
    EmbTieredSpec ts = {path, {.cache_bytes = 1 << 16}};
    EmbVariableSpec v = {.name = "t", .ncolumns = 10, .featuresize = 4, .dtype = EMB_F32,
                         .tiered = &ts};
    EmbStore *s = NULL;
    EmbTable *t = NULL, *u = NULL;
    cr_assert_eq(emb_store_create(&s), 0);
    v.nshards = 2;
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_NO, &t), EMB_EINVAL);
    cr_assert(strstr(emb_last_error(), "partitioned"), "%s", emb_last_error());
    v.nshards = 0, v.ncolumns = 0, v.dynamic = &dyn;
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_NO, &t), EMB_EINVAL);
    v.ncolumns = 10, v.dynamic = NULL, ts.path = NULL;
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_NO, &t), EMB_ENULL);
    cr_assert(strstr(emb_last_error(), "path"), "%s", emb_last_error());
    ts.path = path;
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_NO, &t), 0, "%s", emb_last_error());
    cr_assert(emb_table_is_tiered(t));
    cr_assert_eq(access(path, F_OK), 0, "no backing file");
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_AUTO, &u), 0);
    cr_assert_eq(u, t);
    v.tiered = NULL;
    cr_assert_eq(emb_store_get(s, &v, EMB_REUSE_AUTO, &u), EMB_ESHAPE);
    cr_assert(strstr(emb_last_error(), "tiered"), "%s", emb_last_error());
    emb_store_destroy(&s);
}

Test(tiered, checkpoints_into_memory_and_back, .init = setup, .fini = teardown)
{
    const Cfg tier = {3, EMB_TIER_ENGINE_AUTO, EMB_TIER_LRU, 1}, mem = {0};
    const EmbOptimizerKind kinds[] = {EMB_OPT_SGD, EMB_OPT_ADAGRAD, EMB_OPT_ADAM};
    make_all();
    for (int k = 0; k < 3; k++) {
        const EmbOptimizerConfig c = emb_optimizer_defaults(kinds[k], 0.05f);
        Model a, b, ref;
        model_make(&ref, c, &mem);
        cr_assert_eq(steps(&ref, 0, 4, NULL, NULL, 0), 0);
        float *want = content(&ref);
        model_free(&ref);

        model_make(&a, c, &tier);
        cr_assert_eq(steps(&a, 0, 2, NULL, NULL, 1), 0, "%s", emb_last_error());
        char p1[256], p2[256];
        save(&a, "a", p1);
        model_free(&a);
        model_make(&b, c, &mem);
        restore(&b, p1);
        cr_assert_eq(steps(&b, 2, 3, NULL, NULL, 0), 0);
        save(&b, "b", p2);
        model_free(&b);
        model_make(&a, c, &tier); /* files created anew */
        restore(&a, p2);
        cr_assert_eq(steps(&a, 3, 4, NULL, NULL, 1), 0, "%s", emb_last_error());
        float *got = content(&a);
        cr_assert_eq(memcmp(got, want, (size_t)total_rows() * sizeof(float)), 0,
                     "optimizer %d: rows differ after save / restore", (int)kinds[k]);
        model_free(&a);
        free(got);
        free(want);
    }
}

/* ---- quantized rows -------------------------------------------------------------------- */

#define QROWS 61
#define QD 16
#define QBAGS 8
#define QBAG 5
#define QSTEPS 4

/* A model of one @dt table named "q" (the stochastic rounding's key: the same name in
   memory and tiered) and @kind's optimizer; tiered with a cache of @cache rows, or in
   memory (cache 0). */
typedef struct QModel {
    EmbTable *t;
    EmbOptimizer *opt;
    EmbGrad *g;
    EmbIndexer *ix;
    int64_t ids[QSTEPS + 2][QBAGS * QBAG];
    EmbBatch b[QSTEPS + 2];
} QModel;

static void q_make(QModel *m, EmbDtype dt, EmbOptimizerKind kind, int64_t cache, const char *file)
{
    memset(m, 0, sizeof *m);
    const EmbTableOptions to = {.name = "q"};
    const int32_t sw = emb_optimizer_state_width(kind, QD);
    if (cache) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dir, file);
        const int64_t rec = ((int64_t)emb_dtype_row_bytes(dt, QD) + 15) / 16 * 16 + 4 * sw;
        const EmbTieredOptions o = {.table = to, .cache_bytes = cache * rec, .state_width = sw};
        cr_assert_eq(emb_table_tiered_create(&m->t, path, QROWS, QD, dt, &o), 0, "%s",
                     emb_last_error());
    } else {
        cr_assert_eq(emb_table_create(&m->t, QROWS, QD, dt, &to), 0, "%s", emb_last_error());
    }
    const EmbInitializer in = {EMB_INIT_UNIFORM, -1.0f, 1.0f, 5};
    cr_assert_eq(emb_table_initialize(m->t, &in), 0, "%s", emb_last_error());
    const EmbOptimizerConfig c = emb_optimizer_defaults(kind, 0.05f);
    cr_assert_eq(emb_optimizer_create(&m->opt, &c) | emb_grad_create(&m->g) |
                 emb_indexer_create(&m->ix), 0);
    for (int k = 0; k < QSTEPS + 2; k++) {
        uint64_t s = 99 + (uint64_t)k;
        for (int i = 0; i < QBAGS * QBAG; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            m->ids[k][i] = (int64_t)((s >> 33) % QROWS);
        }
        m->b[k] = (EmbBatch){.ids = m->ids[k], .nnz = QBAGS * QBAG, .nbags = QBAGS,
                             .bag_size = QBAG};
    }
}

static void q_free(QModel *m)
{
    emb_indexer_destroy(&m->ix);
    emb_grad_destroy(&m->g);
    emb_optimizer_destroy(&m->opt);
    emb_table_destroy(&m->t);
}

/* Steps [from, to): lookup (outputs into @fwd at step k's place, NULL: none kept), backward,
   update; @prefetch batches handed ahead. */
static void q_steps(QModel *m, int from, int to, int prefetch, float *fwd)
{
    for (int k = from; k < from + prefetch; k++)
        cr_assert_eq(emb_table_prefetch(m->t, &m->b[k]), 0);
    for (int k = from; k < to; k++) {
        if (prefetch)
            cr_assert_eq(emb_table_prefetch(m->t, &m->b[k + prefetch]), 0);
        float out[QBAGS * QD], dy[QBAGS * QD];
        cr_assert_eq(emb_lookup(m->t, &m->b[k], NULL, out, QD), 0, "%s", emb_last_error());
        if (fwd)
            memcpy(fwd + k * QBAGS * QD, out, sizeof out);
        for (int i = 0; i < QBAGS * QD; i++)
            dy[i] = 0.3f * out[i] - 0.01f * (float)(i % 11) + 0.02f * (float)k;
        cr_assert_eq(emb_lookup_backward(m->t, &m->b[k], NULL, dy, QD, m->g), 0);
        cr_assert_eq(emb_update(m->opt, m->t, m->g, m->ix, 0), 0, "%s", emb_last_error());
    }
}

/* Every row of @t, dequantized (a gather of every id). */
static void q_rows(EmbTable *t, float *rows)
{
    int64_t ids[QROWS];
    for (int64_t c = 0; c < QROWS; c++)
        ids[c] = c;
    cr_assert_eq(emb_gather(t, ids, QROWS, rows, QD), 0, "%s", emb_last_error());
}

/* int8 and int4 rows in tiered tables: the forward outputs and the trained rows (stochastic
   rounding included) of the same table in memory, bit for bit, for every optimizer, caches
   of 1 row up to all rows and prefetch depths 0..2; the flushed file reopens to the same
   rows; a checkpoint of the tiered table restores into an in-memory table and trains on
   to the same bits. */
Test(tiered, quantized_rows_bit_identical_to_memory, .init = setup, .fini = teardown)
{
    static const int64_t caches[] = {1, 3, 12, QROWS};
    const EmbDtype dts[] = {EMB_INT8, EMB_INT4};
    for (int d = 0; d < 2; d++)
        for (int kind = EMB_OPT_SGD; kind <= EMB_OPT_ADAM; kind++) {
            QModel m;
            float want_fwd[QSTEPS * QBAGS * QD], fwd[QSTEPS * QBAGS * QD];
            float want[QROWS * QD], got[QROWS * QD];
            q_make(&m, dts[d], (EmbOptimizerKind)kind, 0, NULL);
            q_steps(&m, 0, QSTEPS, 0, want_fwd);
            q_rows(m.t, want);
            q_free(&m);
            for (int c = 0; c < 4; c++) {
                q_make(&m, dts[d], (EmbOptimizerKind)kind, caches[c], "q");
                q_steps(&m, 0, QSTEPS, c % 3, fwd);
                q_rows(m.t, got);
                cr_assert_eq(memcmp(fwd, want_fwd, sizeof fwd), 0,
                             "%s, optimizer %d, cache %lld: forward differs",
                             emb_dtype_name(dts[d]), kind, (long long)caches[c]);
                cr_assert_eq(memcmp(got, want, sizeof got), 0,
                             "%s, optimizer %d, cache %lld: rows differ",
                             emb_dtype_name(dts[d]), kind, (long long)caches[c]);
                q_free(&m); /* flushes */
            }
            char path[256];
            snprintf(path, sizeof path, "%s/q", dir);
            EmbTable *re = NULL;
            cr_assert_eq(emb_table_tiered_open(&re, path, NULL), 0, "%s", emb_last_error());
            cr_assert_eq(emb_table_dtype(re), dts[d]);
            q_rows(re, got);
            cr_assert_eq(memcmp(got, want, sizeof got), 0, "%s: the reopened file differs",
                         emb_dtype_name(dts[d]));
            emb_table_destroy(&re);
            /* 2 steps tiered, saved; restored into memory, 2 steps more */
            q_make(&m, dts[d], (EmbOptimizerKind)kind, 3, "q");
            q_steps(&m, 0, 2, 1, NULL);
            char sub[128];
            snprintf(sub, sizeof sub, "%s/ck%d%d", dir, d, kind);
            mkdir(sub, 0755);
            EmbCheckpointVar var = {"q", m.t};
            const EmbSaverOptions so = {.var_list = &var, .nvars = 1, .optimizer = m.opt};
            EmbSaver *sv = NULL;
            cr_assert_eq(emb_saver_create(&sv, sub, "ck", &so), 0, "%s", emb_last_error());
            cr_assert_eq(emb_saver_save(sv, NULL, 2, path, sizeof path), 0, "%s",
                         emb_last_error());
            emb_saver_destroy(&sv);
            q_free(&m);
            q_make(&m, dts[d], (EmbOptimizerKind)kind, 0, NULL);
            var.table = m.t;
            const EmbRestoreOptions ro = {.var_list = &var, .nvars = 1, .optimizer = m.opt};
            cr_assert_eq(emb_checkpoint_restore_ex(NULL, path, &ro, NULL), 0, "%s",
                         emb_last_error());
            q_steps(&m, 2, QSTEPS, 0, NULL);
            q_rows(m.t, got);
            cr_assert_eq(memcmp(got, want, sizeof got), 0,
                         "%s, optimizer %d: rows differ after a checkpoint into memory",
                         emb_dtype_name(dts[d]), kind);
            q_free(&m);
        }
}

/* tf.Variable operations on a tiered table of 3000 rows with a 16-row cache: whole-table
   assign / read / quantize, scatters and emb_table_column_pointer give the in-memory
   results; a failed read is reported (EMB_EIO naming the file), never read as zeros; a scatter that fails writes no
   row; every operation drops its pins (the cache stays usable). */
Test(tiered, variable_ops_through_the_fallible_resolve, .init = setup, .fini = teardown)
{
    enum { R = 3000, D = 8 };
    char path[128];
    snprintf(path, sizeof path, "%s/v", dir);
    const EmbTieredOptions o = {.cache_bytes = 16 * 32};
    EmbTable *t = NULL, *m = NULL;
    cr_assert_eq(emb_table_tiered_create(&t, path, R, D, EMB_F32, &o), 0, "%s",
                 emb_last_error());
    cr_assert_eq(emb_table_create(&m, R, D, EMB_F32, NULL), 0);
    static float v[R * D], got[R * D], want[R * D];
    for (int i = 0; i < R * D; i++)
        v[i] = 0.001f * (float)(i % 997) - 0.4f;
    cr_assert_eq(emb_table_assign(t, v, R, D, D), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_assign(m, v, R, D, D), 0);
    EmbTieredStats st;
    cr_assert_eq(emb_table_tiered_stats(t, &st), 0);
    cr_assert(st.dirty_rows <= st.cache_rows, "the pass dropped its pins (the scratch pad "
              "written back): %lld dirty rows", (long long)st.dirty_rows);
    cr_assert_eq(emb_table_assign_add(t, v, R, D, D), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_assign_add(m, v, R, D, D), 0);
    const int64_t ids[] = {5, 2999, 5, 17, 1200};
    const float up[5 * D] = {1, 2, 3, 4, 5, 6, 7, 8, -1, -2};
    cr_assert_eq(emb_table_scatter_add(t, ids, 5, up, D), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_scatter_add(m, ids, 5, up, D), 0);
    cr_assert_eq(emb_table_read(t, got, D), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_read(m, want, D), 0);
    cr_assert_eq(memcmp(got, want, sizeof got), 0);

    cr_assert_eq(emb_table_tiered_flush(t), 0);
    fault_set(-EIO, 0, 1, 2000); /* rows 2000.. cannot be read */
    memset(got, 0, sizeof got);
    cr_assert_eq(emb_table_read(t, got, D), EMB_EIO);
    cr_assert(strstr(emb_last_error(), path), "%s", emb_last_error());
    const int64_t bad[] = {3, 2500};
    cr_assert_eq(emb_table_scatter_update(t, bad, 2, up, D), EMB_EIO);
    EmbTable *q = NULL;
    cr_assert_eq(emb_table_create(&q, R, D, EMB_INT8, NULL), 0);
    cr_assert_eq(emb_table_quantize(q, t), EMB_EIO);
    void *col = NULL;
    cr_assert_eq(emb_table_column_pointer(t, 2222, EMB_CTX_NONE, &col), EMB_EIO);
    cr_assert(strstr(emb_last_error(), path), "%s", emb_last_error());
    cr_assert_eq(emb_table_column_pointer(t, 22, EMB_CTX_NONE, &col), 0);
    cr_assert_eq(*(const float *)col, want[22 * D]);
    fault_set(0, 1, 1, 0);
    cr_assert_eq(emb_table_read(t, got, D), 0, "%s", emb_last_error());
    cr_assert_eq(memcmp(got, want, sizeof got), 0, "the failed scatter wrote nothing");

    EmbTable *qm = NULL, *qt = NULL;
    char qpath[128];
    snprintf(qpath, sizeof qpath, "%s/q", dir);
    cr_assert_eq(emb_table_create(&qm, R, D, EMB_INT8, NULL), 0);
    cr_assert_eq(emb_table_tiered_create(&qt, qpath, R, D, EMB_INT8, &o), 0);
    cr_assert_eq(emb_table_quantize(qm, m), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_quantize(qt, t), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_read(qm, want, D), 0);
    cr_assert_eq(emb_table_read(qt, got, D), 0, "%s", emb_last_error());
    cr_assert_eq(memcmp(got, want, sizeof got), 0);
    emb_table_destroy(&qt);
    emb_table_destroy(&qm);
    emb_table_destroy(&q);
    emb_table_destroy(&m);
    emb_table_destroy(&t);
}

/* ---- faults, reopening, bad input ------------------------------------------------------ */

static float *reference_rows(EmbOptimizerConfig c, int nsteps)
{
    const Cfg mem = {0};
    Model m;
    model_make(&m, c, &mem);
    cr_assert_eq(steps(&m, 0, nsteps, NULL, NULL, 0), 0);
    float *rows = content(&m);
    model_free(&m);
    return rows;
}

/* Steps from *step on, to @last at most, until one fails (3 tries): its error, or 0 when
   none did; the steps that succeed are counted (one that fails applies nothing). */
static int until_fault(Model *m, EmbStrategy *s, int *step, int last)
{
    for (int tries = 0; tries < 3 && *step < last; tries++) {
        const int r = steps(m, *step, *step + 1, s, NULL, 0);
        if (r)
            return r;
        (*step)++;
    }
    return 0;
}

/* A write-back that fails (ENOSPC, EIO) or a read that fails stops a step with an error
   naming the file and rows (a write-back that failed at a release is retried, and
   reported, by the next step's first resolve); nothing is lost: the retried steps give the
   bits of a run without faults, and a failed flush succeeds when retried. */
Test(tiered, faults_lose_nothing_and_retry, .init = setup, .fini = teardown)
{
    enum { LAST = 5 };
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.05f);
    make_all();
    float *want = reference_rows(c, LAST);
    for (int e = 0; e < 2; e++) {
        const Cfg cfg = {3, e ? EMB_TIER_ENGINE_PREAD : EMB_TIER_ENGINE_AUTO, EMB_TIER_LRU, 0};
        Model m;
        model_make(&m, c, &cfg);
        EmbStrategy *seq = NULL; /* all tables or none updated (see below) */
        cr_assert_eq(emb_strategy_sequential(&seq), 0);
        cr_assert_eq(steps(&m, 0, 1, seq, NULL, 0), 0, "%s", emb_last_error());
        int step = 1;
        fault_set(-ENOSPC, 1, 0, 0);
        cr_assert_eq(until_fault(&m, seq, &step, LAST), EMB_EIO);
        cr_assert(strstr(emb_last_error(), "writing back rows") &&
                  strstr(emb_last_error(), dir) && strstr(emb_last_error(), "No space left"),
                  "%s", emb_last_error());
        fault_set(-EIO, 0, 1, 0);
        cr_assert_eq(until_fault(&m, seq, &step, LAST), EMB_EIO);
        cr_assert(strstr(emb_last_error(), "reading rows"), "%s", emb_last_error());
        fault_set(0, 1, 1, 0);
        cr_assert_eq(steps(&m, step, LAST, seq, NULL, 0), 0, "%s", emb_last_error());
        fault_set(-EIO, 1, 0, 0);
        EmbTieredStats st;
        cr_assert_eq(emb_table_tiered_stats(m.t[3], &st), 0);
        cr_assert(st.dirty_rows > 0);
        cr_assert_eq(emb_table_tiered_flush(m.t[3]), EMB_EIO);
        cr_assert(strstr(emb_last_error(), "/t3"), "%s", emb_last_error());
        fault_set(0, 1, 1, 0);
        cr_assert_eq(emb_table_tiered_flush(m.t[3]), 0);
        cr_assert_eq(emb_table_tiered_stats(m.t[3], &st), 0);
        cr_assert_eq(st.dirty_rows, 0);
        float *got = content(&m);
        cr_assert_eq(memcmp(got, want, (size_t)total_rows() * sizeof(float)), 0);
        free(got);
        emb_strategy_destroy(&seq);
        model_free(&m);
    }
    free(want);
}

/* The write-backs a running prefetch sends (dirty victims parked in the scratch pad,
   written asynchronously) may fail too: the rows stay dirty, the steps fail and retry, and
   the run ends with the bits of a run without faults. Flushes (failing under the fault)
   settle the I/O in flight before the fault hook changes. The steps update through
   emb_update_many, which fails before it writes any table: emb_update table after table
   would have updated the tables before the one whose write-back failed, and the retried
   step would update them twice. */
Test(tiered, prefetch_write_back_faults_lose_nothing, .init = setup, .fini = teardown)
{
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.05f);
    make_all();
    float *want = reference_rows(c, 4);
    const Cfg cfg = {3, EMB_TIER_ENGINE_PREAD, EMB_TIER_LRU, 1};
    Model m;
    model_make(&m, c, &cfg);
    EmbStrategy *seq = NULL;
    cr_assert_eq(emb_strategy_sequential(&seq), 0);
    cr_assert_eq(steps(&m, 0, 1, seq, NULL, 0), 0, "%s", emb_last_error());
    fault_set(-EIO, 1, 0, 0);
    int step = 1, failed = 0;
    for (int tries = 0; tries < 3 && step < 4; tries++) { /* may fail: nothing is applied */
        if (steps(&m, step, step + 1, seq, NULL, 1) == 0)
            step++;
        else
            failed++;
    }
    cr_assert_gt(failed, 0, "no step met the fault");
    for (int i = 0; i < NT; i++)
        cr_assert_eq(emb_table_tiered_flush(m.t[i]), EMB_EIO);
    fault_set(0, 1, 1, 0);
    cr_assert_eq(steps(&m, step, 4, seq, NULL, 1), 0, "%s", emb_last_error());
    emb_strategy_destroy(&seq);
    for (int i = 0; i < NT; i++)
        cr_assert_eq(emb_table_tiered_flush(m.t[i]), 0, "%s", emb_last_error());
    float *got = content(&m);
    cr_assert_eq(memcmp(got, want, (size_t)total_rows() * sizeof(float)), 0);
    free(got);
    model_free(&m);
    free(want);
}

/* A lookup whose reads fail writes no output (every row is resolved before any output is
   written), for bags and for one-id bags; retried, it gives the in-memory table's values. */
Test(tiered, a_failed_lookup_writes_no_output, .init = setup, .fini = teardown)
{
    enum { ROWS = 1000, D = 16, N = 600 };
    char path[128];
    snprintf(path, sizeof path, "%s/lk", dir);
    EmbTable *t = NULL, *mem = NULL;
    const EmbTieredOptions o = {.cache_bytes = 4 * D * 4, .engine = EMB_TIER_ENGINE_PREAD};
    const EmbInitializer in = {EMB_INIT_UNIFORM, -1.0f, 1.0f, 7};
    cr_assert_eq(emb_table_tiered_create(&t, path, ROWS, D, EMB_F32, &o), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_create(&mem, ROWS, D, EMB_F32, NULL), 0);
    cr_assert_eq(emb_table_initialize(t, &in), 0);
    cr_assert_eq(emb_table_initialize(mem, &in), 0);
    static int64_t ids[N];
    static float out[N * D], ref[N * D];
    for (int k = 0; k < N; k++) /* rows >= 500 only in the last bags */
        ids[k] = k < N - 6 ? (k * 37) % 500 : 500 + k % 100;
    for (int bag = 1; bag <= 3; bag += 2) {
        const EmbBatch b = {.ids = ids, .nnz = N, .nbags = N / bag, .bag_size = bag};
        memset(out, 0xab, sizeof out);
        fault_set(-EIO, 0, 1, 500);
        cr_assert_eq(emb_lookup(t, &b, NULL, out, D), EMB_EIO);
        cr_assert(strstr(emb_last_error(), "reading rows") && strstr(emb_last_error(), path),
                  "%s", emb_last_error());
        for (size_t i = 0; i < sizeof out; i++)
            cr_assert_eq(((const unsigned char *)out)[i], 0xab, "byte %zu written", i);
        fault_set(0, 1, 1, 0);
        cr_assert_eq(emb_lookup(t, &b, NULL, out, D), 0, "%s", emb_last_error());
        cr_assert_eq(emb_lookup(mem, &b, NULL, ref, D), 0);
        cr_assert_eq(memcmp(out, ref, (size_t)(N / bag * D) * sizeof *out), 0);
    }
    emb_table_destroy(&t);
    emb_table_destroy(&mem);
}

/* The rows a step's lookup used stay pinned until its update: a prefetch of other rows
   between the two evicts none of them, so the update misses no row (it takes them from the
   lookup, without a find), and the rows trained are the in-memory table's, bit for bit.
   The next lookup ends the hold: the prefetched rows are then found. */
Test(tiered, a_steps_rows_stay_pinned_from_lookup_to_update, .init = setup, .fini = teardown)
{
    enum { ROWS = 1000, D = 16, N = 128, CACHE = 64 };
    char path[128];
    snprintf(path, sizeof path, "%s/held", dir);
    EmbTable *t = NULL, *mem = NULL;
    const EmbTieredOptions o = {.cache_bytes = CACHE * (D * 4 + D * 4), .state_width = D};
    const EmbInitializer in = {EMB_INIT_UNIFORM, -1.0f, 1.0f, 11};
    cr_assert_eq(emb_table_tiered_create(&t, path, ROWS, D, EMB_F32, &o), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_create(&mem, ROWS, D, EMB_F32, NULL), 0);
    cr_assert_eq(emb_table_initialize(t, &in), 0);
    cr_assert_eq(emb_table_initialize(mem, &in), 0);
    static int64_t a[N], b[N];
    static float out[N * D], ref[N * D], dy[N * D];
    for (int k = 0; k < N; k++) { /* 48 distinct rows (repeats), then 128 other ones */
        a[k] = (k * 7) % 48;
        b[k] = 500 + k;
    }
    for (int i = 0; i < N * D; i++)
        dy[i] = (float)((i * 13) % 17) / 17.0f - 0.5f;
    const EmbBatch ba = {.ids = a, .nnz = N, .nbags = N / 2, .bag_size = 2};
    const EmbBatch bb = {.ids = b, .nnz = N, .nbags = N / 2, .bag_size = 2};
    Kit kt, km;
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.05f);
    cr_assert_eq(kit_init(&kt, c), 0);
    cr_assert_eq(kit_init(&km, c), 0);
    for (int step = 0; step < 2; step++) {
        cr_assert_eq(emb_lookup(t, &ba, NULL, out, D), 0, "%s", emb_last_error());
        cr_assert_eq(emb_lookup(mem, &ba, NULL, ref, D), 0);
        cr_assert_eq(memcmp(out, ref, (size_t)(N / 2 * D) * sizeof *out), 0);
        cr_assert_eq(emb_table_prefetch(t, &bb), 0); /* would evict the lookup's rows */
        cr_assert_eq(emb_lookup_backward(t, &ba, NULL, dy, D, kt.g), 0);
        cr_assert_eq(emb_lookup_backward(mem, &ba, NULL, dy, D, km.g), 0);
        EmbTieredStats before, after;
        cr_assert_eq(emb_table_tiered_stats(t, &before), 0);
        cr_assert_eq(emb_update(kt.o, t, kt.g, kt.ix, 0), 0, "%s", emb_last_error());
        cr_assert_eq(emb_update(km.o, mem, km.g, km.ix, 0), 0);
        cr_assert_eq(emb_table_tiered_stats(t, &after), 0);
        cr_assert_eq(after.misses, before.misses, "step %d: the update missed %lld rows", step,
                     (long long)(after.misses - before.misses));
        cr_assert_eq(after.hits - before.hits, 48, "step %d: %lld hits", step,
                     (long long)(after.hits - before.hits));
    }
    /* an update of rows the held lookup did not read (a gradient of another batch: half
       its ids the lookup's) finds those as usual */
    static int64_t c_[N];
    for (int k = 0; k < N; k++)
        c_[k] = k % 2 ? a[k] : 700 + k;
    const EmbBatch bc = {.ids = c_, .nnz = N, .nbags = N / 2, .bag_size = 2};
    cr_assert_eq(emb_lookup(t, &ba, NULL, out, D), 0, "%s", emb_last_error());
    cr_assert_eq(emb_lookup_backward(t, &bc, NULL, dy, D, kt.g), 0);
    cr_assert_eq(emb_lookup_backward(mem, &bc, NULL, dy, D, km.g), 0);
    cr_assert_eq(emb_update(kt.o, t, kt.g, kt.ix, 0), 0, "%s", emb_last_error());
    cr_assert_eq(emb_update(km.o, mem, km.g, km.ix, 0), 0);
    EmbTieredStats st;
    cr_assert_eq(emb_table_tiered_stats(t, &st), 0);
    cr_assert_gt(st.prefetched, 0);
    static int64_t all[ROWS];
    static float got[ROWS * D], want[ROWS * D];
    for (int k = 0; k < ROWS; k++)
        all[k] = k;
    cr_assert_eq(emb_gather(t, all, ROWS, got, D), 0, "%s", emb_last_error());
    cr_assert_eq(emb_gather(mem, all, ROWS, want, D), 0);
    cr_assert_eq(memcmp(got, want, sizeof got), 0);
    kit_free(&kt);
    kit_free(&km);
    emb_table_destroy(&t);
    emb_table_destroy(&mem);
}

/* A flushed file reopens with the same rows (SGD: no optimizer state to carry). */
Test(tiered, reopen_a_flushed_file, .init = setup, .fini = teardown)
{
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_SGD, 0.05f);
    make_all();
    float *want = reference_rows(c, 2);
    const Cfg cfg = {2, EMB_TIER_ENGINE_AUTO, EMB_TIER_LFU, 1};
    Model m;
    model_make(&m, c, &cfg);
    cr_assert_eq(steps(&m, 0, 2, NULL, NULL, 1), 0, "%s", emb_last_error());
    for (int i = 0; i < NT; i++) { /* destroy flushes */
        emb_table_destroy(&m.t[i]);
        char path[128];
        snprintf(path, sizeof path, "%s/t%d", dir, i);
        const EmbTieredOptions o = {.cache_bytes = 5 * record_bytes(i)};
        cr_assert_eq(emb_table_tiered_open(&m.t[i], path, &o), 0, "%s", emb_last_error());
        cr_assert_eq(emb_table_ncolumns(m.t[i]), ncols[i]);
    }
    float *got = content(&m);
    cr_assert_eq(memcmp(got, want, (size_t)total_rows() * sizeof(float)), 0);
    free(got);
    free(want);
    model_free(&m);
}

Test(tiered, bad_input_and_files, .init = setup, .fini = teardown)
{
    EmbTable *t = NULL, *mem = NULL;
    char path[128];
    snprintf(path, sizeof path, "%s/x", dir);
    EmbTieredOptions o = {.cache_bytes = -1};
    cr_assert_eq(emb_table_tiered_create(&t, path, 10, 4, EMB_F32, &o), EMB_EINVAL);
    o = (EmbTieredOptions){.cache_bytes = 8};
    cr_assert_eq(emb_table_tiered_create(&t, path, 10, 4, EMB_F32, &o), EMB_EINVAL);
    cr_assert(strstr(emb_last_error(), "holds no record"), "%s", emb_last_error());
    cr_assert_eq(emb_table_tiered_create(&t, NULL, 10, 4, EMB_F32, NULL), EMB_ENULL);
    cr_assert_eq(emb_table_tiered_create(&t, path, 10, 0, EMB_F32, NULL), EMB_EINVAL);
    cr_assert_eq(emb_table_tiered_create(&t, dir, 10, 4, EMB_F32, NULL), EMB_EIO);
    cr_assert(strstr(emb_last_error(), dir), "%s", emb_last_error());
    cr_assert_null(t);
    snprintf(path, sizeof path, "%s/none", dir);
    cr_assert_eq(emb_table_tiered_open(&t, path, NULL), EMB_ENOTFOUND);
    cr_assert(strstr(emb_last_error(), path));
    snprintf(path, sizeof path, "%s/short", dir);
    cr_assert_eq(emb_table_tiered_create(&t, path, 100, 4, EMB_F32, NULL), 0);
    emb_table_destroy(&t);
    cr_assert_eq(truncate(path, 4096 + 50 * 16), 0);
    cr_assert_eq(emb_table_tiered_open(&t, path, NULL), EMB_ECORRUPT);
    cr_assert(strstr(emb_last_error(), "rows 50..99"), "%s", emb_last_error());
    cr_assert_eq(truncate(path, 100), 0);
    cr_assert_eq(emb_table_tiered_open(&t, path, NULL), EMB_ECORRUPT);
    cr_assert_null(t);
    /* calls on other tables */
    cr_assert_eq(emb_table_create(&mem, 10, 4, EMB_F32, NULL), 0);
    cr_assert_eq(emb_table_tiered_flush(mem), EMB_EINVAL);
    cr_assert_eq(emb_table_tiered_flush(NULL), EMB_ENULL);
    cr_assert_eq(emb_table_is_tiered(mem), 0);
    const int64_t ids[2] = {1, 2};
    const EmbBatch b = {.ids = ids, .nnz = 2, .nbags = 2, .bag_size = 1};
    cr_assert_eq(emb_table_prefetch(mem, &b), 0);
    cr_assert_eq(emb_table_prefetch(mem, NULL), EMB_ENULL);
    emb_table_destroy(&mem);
    /* no room for the optimizer's state */
    snprintf(path, sizeof path, "%s/nostate", dir);
    cr_assert_eq(emb_table_tiered_create(&t, path, 10, 4, EMB_F32, NULL), 0);
    cr_assert_eq(emb_table_is_tiered(t), 1);
    EmbOptimizer *opt = NULL;
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    cr_assert_eq(emb_optimizer_create(&opt, &c), 0);
    EmbGrad *g = NULL;
    EmbIndexer *ix = NULL;
    cr_assert_eq(emb_grad_create(&g), 0);
    cr_assert_eq(emb_indexer_create(&ix), 0);
    float dy[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    cr_assert_eq(emb_lookup_backward(t, &b, NULL, dy, 4, g), 0);
    cr_assert_eq(emb_update(opt, t, g, ix, 0), EMB_ENOTSUP);
    cr_assert(strstr(emb_last_error(), "state_width"), "%s", emb_last_error());
    emb_optimizer_destroy(&opt);
    emb_grad_destroy(&g);
    emb_indexer_destroy(&ix);
    emb_table_destroy(&t);
}
