/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_contract.c — the table contract (src/tables/table_ops.h) over every table kind: one
 * battery (lookup forms, backward, every optimizer, emb_update_many under every strategy,
 * checkpoint round trip) runs on a table of each kind holding the same rows as a plain
 * reference table, and every output, row and state must equal the reference's bit for bit.
 *
 * A new kind plugs in with one line of KINDS below, X(test name, constructor): the
 * constructor makes a table of NCOL rows of D f32 elements (named by its argument)
 * holding row id's values `value(id, i)` (fill() writes them through column pointers with
 * UPDATE, which creates the rows of a kind whose rows appear); the battery's ids stay in
 * [0, NCOL), so the reference is the same plain table for every kind. The battery then
 * runs as the test contract::<name> (also under the sanitizers, .ci/run).
 */
#include <criterion/criterion.h>

#include "embtables/embtables.h"

#include "test_files.h"

#define NCOL 40
#define D 8
#define NSHARDS 3

/* The element type of the tables the kinds make (the dtype axis: f32, bf16, int8). */
static EmbDtype dtype = EMB_F32;

static float value(int64_t id, int32_t i)
{
    return (float)((id * 31 + i * 7) % 23) * 0.0625f - 0.6f;
}

/* Row id's bytes in @dtype: value(id, i) (f32), its upper half (bf16), or quantized
   values then a scale and a bias (int8). */
static void encode(int64_t id, unsigned char *row)
{
    for (int32_t i = 0; i < D; i++) {
        const float v = value(id, i);
        uint32_t u;
        memcpy(&u, &v, 4);
        if (dtype == EMB_F32)
            memcpy(row + 4 * i, &v, 4);
        else if (dtype == EMB_BF16)
            memcpy(row + 2 * i, (const uint16_t[]){(uint16_t)(u >> 16)}, 2);
        else
            row[i] = (unsigned char)((id * 31 + i * 7) % 23 * 11);
    }
    if (dtype == EMB_INT8)
        memcpy(row + D, (const float[]){0.0625f, -0.6f}, 8);
}

/* Writes row id's values into every row of @t through column pointers with UPDATE. */
static void fill(EmbTable *t)
{
    for (int64_t id = 0; id < NCOL; id++) {
        void *p;
        cr_assert_eq(emb_table_column_pointer(t, id, EMB_CTX_UPDATE, &p), 0, "%s",
                     emb_last_error());
        encode(id, p);
    }
}

/* A constructor's code: 0 (made), or EMB_EDTYPE / EMB_ENOTSUP on the dtype axis (the kind
   does not take the dtype: the test has nothing to check). */
static bool made(int r)
{
    cr_assert(r == 0 || ((r == EMB_EDTYPE || r == EMB_ENOTSUP) && dtype != EMB_F32), "%s",
              emb_last_error());
    return r == 0;
}

/* ---- the kinds --------------------------------------------------------------------------- */

static EmbTable *make_simple(const char *name)
{
    EmbTable *t;
    const EmbTableOptions o = {.name = name};
    if (!made(emb_table_create(&t, NCOL, D, dtype, &o)))
        return NULL;
    fill(t);
    return t;
}

static void free_buffer(void *p)
{
    free(p);
}

/* Wrapped tables' buffers, freed at the end of each test (after their tables). */
static float *wrapped[64];
static int nwrapped;

static EmbTable *make_wrapped(const char *name)
{
    EmbTable *t;
    float *buf = calloc(NCOL * (D + 3), sizeof *buf); /* a stride wider than a row */
    const int64_t stride = dtype == EMB_INT8 ? (int64_t)emb_dtype_row_bytes(dtype, D) + 5 : D + 3;
    cr_assert(buf && nwrapped < 64);
    wrapped[nwrapped++] = buf;
    const EmbTableOptions o = {.name = name};
    if (!made(emb_table_wrap(&t, buf, NCOL, D, stride, dtype, &o)))
        return NULL;
    fill(t);
    return t;
}

static void *custom_col(void *user, int64_t c, EmbContext ctx)
{
    (void)ctx;
    return (char *)user + c * (int64_t)emb_dtype_row_bytes(dtype, D);
}

static EmbTable *make_custom(const char *name)
{
    EmbTable *t;
    const EmbTableOptions o = {.name = name};
    void *buf = calloc(NCOL * D, sizeof(float));
    if (!made(emb_table_custom(&t, NCOL, D, dtype, custom_col, buf, free_buffer, &o))) {
        free(buf);
        return NULL;
    }
    fill(t);
    return t;
}

static EmbTable *make_part(const char *name, unsigned mode)
{
    EmbTable *t;
    const EmbTableOptions o = {.name = name};
    if (!made(emb_table_partitioned_create(&t, NCOL, D, dtype, NSHARDS, mode, &o)))
        return NULL;
    fill(t);
    return t;
}

static EmbTable *make_mod(const char *name)
{
    return make_part(name, EMB_PARTITION_MOD);
}

static EmbTable *make_div(const char *name)
{
    return make_part(name, EMB_PARTITION_DIV);
}

static EmbTable *make_dynamic(const char *name)
{
    EmbTable *t;
    const EmbDynamicOptions o = {.table = {.name = name}};
    if (!made(emb_table_dynamic_create(&t, D, dtype, &o)))
        return NULL;
    fill(t); /* UPDATE creates the rows */
    return t;
}

static EmbTable *make_part_dynamic(const char *name)
{
    EmbTable *sh[NSHARDS], *t;
    for (int i = 0; i < NSHARDS; i++)
        if (!made(emb_table_dynamic_create(&sh[i], D, dtype, NULL))) {
            while (i > 0)
                emb_table_destroy(&sh[--i]);
            return NULL;
        }
    const EmbTableOptions o = {.name = name};
    cr_assert_eq(emb_table_partitioned(&t, sh, NSHARDS,
                                       EMB_PARTITION_MOD | EMB_PARTITION_OWN_SHARDS, &o), 0);
    fill(t);
    return t;
}

/* Tiered tables (a file and a cache of 3 rows: most rows go through the disk and the
   scratch pad), in a directory of the test's own, removed by battery(). */
static char tierdir[64];
static int ntiered;

static EmbTable *make_tiered(const char *name)
{
    if (!tierdir[0])
        tmpdir(tierdir);
    char path[128];
    snprintf(path, sizeof path, "%s/%s-%d", tierdir, name, ntiered++);
    const EmbTieredOptions o = {.table = {.name = name}, .cache_bytes = 3 * (32 + 4 * 2 * D),
                                .state_width = 2 * D};
    EmbTable *t;
    if (!made(emb_table_tiered_create(&t, path, NCOL, D, dtype, &o)))
        return NULL;
    fill(t);
    return t;
}

/* Every table kind: (test name, constructor). A new kind (tiered, quantized ...) is one more
   line here; the battery then runs on it as the test contract::<name>. */
#define KINDS(X)                                                                           \
    X(simple, make_simple)                                                                 \
    X(wrapped, make_wrapped)                                                               \
    X(custom, make_custom)                                                                 \
    X(partitioned_mod, make_mod)                                                           \
    X(partitioned_div, make_div)                                                           \
    X(dynamic, make_dynamic)                                                               \
    X(partitioned_dynamic, make_part_dynamic)                                              \
    X(tiered, make_tiered)

typedef struct Kind {
    const char *name;
    EmbTable *(*make)(const char *name);
} Kind;

/* ---- comparisons ------------------------------------------------------------------------- */

/* Rows 0 .. NCOL-1 of @a and @b equal, bit for bit. */
static void same_rows(const EmbTable *a, const EmbTable *b, const char *what)
{
    for (int64_t id = 0; id < NCOL; id++) {
        void *p, *q;
        cr_assert_eq(emb_table_column_pointer(a, id, EMB_CTX_NONE, &p), 0);
        cr_assert_eq(emb_table_column_pointer(b, id, EMB_CTX_NONE, &q), 0);
        cr_assert(memcmp(p, q, D * sizeof(float)) == 0, "%s: row %lld differs", what,
                  (long long)id);
    }
}

/* The optimizer states of @a (by @oa) and @b (by @ob) equal over rows 0 .. NCOL-1. */
static void same_state(const EmbOptimizer *oa, const EmbTable *a, const EmbOptimizer *ob,
                       const EmbTable *b, const char *what)
{
    EmbTable *sa = NULL, *sb = NULL;
    int64_t na = -1, nb = -2;
    cr_assert_eq(emb_optimizer_state(oa, a, 0, &sa, &na), 0, "%s: %s", what, emb_last_error());
    cr_assert_eq(emb_optimizer_state(ob, b, 0, &sb, &nb), 0, "%s: %s", what, emb_last_error());
    cr_assert_eq(na, nb, "%s: steps %lld, %lld", what, (long long)na, (long long)nb);
    cr_assert_eq(sa == NULL, sb == NULL, "%s", what);
    if (!sa) /* SGD: no state */
        return;
    const int32_t w = emb_table_featuresize(sa);
    for (int64_t id = 0; id < NCOL; id++) {
        void *p, *q;
        cr_assert_eq(emb_table_column_pointer(sa, id, EMB_CTX_NONE, &p), 0, "%s", emb_last_error());
        cr_assert_eq(emb_table_column_pointer(sb, id, EMB_CTX_NONE, &q), 0);
        cr_assert(memcmp(p, q, (size_t)w * sizeof(float)) == 0, "%s: state row %lld differs",
                  what, (long long)id);
    }
}

static void same_floats(const float *a, const float *b, int64_t n, const char *what)
{
    cr_assert(memcmp(a, b, (size_t)n * sizeof *a) == 0, "%s differs", what);
}

/* ---- the battery ------------------------------------------------------------------------ */

#define NBAGS 6
static const int64_t bag_ids[] = {3, 7, 7, 0, 39, 12, 5, 5, 5, 21, 30, 1, 2, 38};
static const int32_t bag_ids32[] = {3, 7, 7, 0, 39, 12, 5, 5, 5, 21, 30, 1, 2, 38};
static const int64_t bag_offsets[] = {0, 3, 3, 6, 9, 11, 14}; /* bag 1 empty */
static const float bag_w[] = {1, 0.5f, -2, 3, 1, 0, 0.25f, 1, 2, -1, 1, 0.75f, 1.5f, 2};
#define NNZ ((int64_t)(sizeof bag_ids / sizeof *bag_ids))

/* One lookup form on @t and on the reference @r: the same output bits. */
static void lookup_form(const EmbTable *t, const EmbTable *r, const EmbBatch *b,
                        const EmbPooling *p, const char *what)
{
    float out[NNZ * D], ref[NNZ * D];
    memset(out, 0x5a, sizeof out);
    memset(ref, 0x5a, sizeof ref);
    cr_assert_eq(emb_lookup(t, b, p, out, D), 0, "%s: %s", what, emb_last_error());
    cr_assert_eq(emb_lookup(r, b, p, ref, D), 0, "%s: %s", what, emb_last_error());
    same_floats(out, ref, NNZ * D, what);
}

static void battery_lookup(const EmbTable *t, const EmbTable *r)
{
    const EmbBatch csr = {bag_ids, EMB_ID_I64, NNZ, NBAGS, 0, bag_offsets, NULL};
    const EmbBatch csr32 = {bag_ids32, EMB_ID_I32, NNZ, NBAGS, 0, bag_offsets, NULL};
    const EmbBatch weighted = {bag_ids, EMB_ID_I64, NNZ, NBAGS, 0, bag_offsets, bag_w};
    const EmbBatch fixed = {bag_ids, EMB_ID_I64, 12, 4, 3, NULL, NULL};
    const EmbBatch gather = {bag_ids, EMB_ID_I64, NNZ, NNZ, 1, NULL, NULL};
    const EmbPooling pools[] = {
        EMB_POOLING_SUM, EMB_POOLING_MEAN, EMB_POOLING_SQRTN,
        {EMB_COMBINER_SUM, 0.9f, 0, 0},
        {EMB_COMBINER_MEAN, 0.0f, 4, EMB_USE_DEFAULT_ID | EMB_PRUNE_NONPOSITIVE_WEIGHTS},
    };
    for (size_t k = 0; k < sizeof pools / sizeof *pools; k++) {
        lookup_form(t, r, &csr, &pools[k], "csr");
        lookup_form(t, r, &csr32, &pools[k], "csr int32");
        lookup_form(t, r, &weighted, &pools[k], "weighted");
        lookup_form(t, r, &fixed, &pools[k], "fixed bags");
    }
    const EmbPooling maxes[] = { /* MAX takes no weights */
        EMB_POOLING_MAX,
        {EMB_COMBINER_MAX, 0.0f, 4, EMB_USE_DEFAULT_ID | EMB_OUT_NONTEMPORAL},
    };
    for (size_t k = 0; k < sizeof maxes / sizeof *maxes; k++) {
        lookup_form(t, r, &csr, &maxes[k], "csr max");
        lookup_form(t, r, &csr32, &maxes[k], "csr int32 max");
        lookup_form(t, r, &fixed, &maxes[k], "fixed bags max");
    }
    const EmbPooling g = EMB_POOLING_GATHER;
    lookup_form(t, r, &gather, &g, "gather");
    float out[NNZ * D], ref[NNZ * D];
    cr_assert_eq(emb_gather(t, bag_ids, NNZ, out, D), 0);
    cr_assert_eq(emb_gather(r, bag_ids, NNZ, ref, D), 0);
    same_floats(out, ref, NNZ * D, "emb_gather");
    cr_assert_eq(emb_lookup_sum(t, bag_ids, 4, 3, out, D), 0);
    cr_assert_eq(emb_lookup_sum(r, bag_ids, 4, 3, ref, D), 0);
    same_floats(out, ref, 4 * D, "emb_lookup_sum");
}

/* A backward of a weighted MEAN lookup with max_norm (steps 0, 1) or of a MAX lookup with a
   default id (step 2: its gradient reads the bags' rows), and the optimizer's step. */
static void step(EmbOptimizer *o, EmbTable *t, EmbIndexer *ix, EmbGrad *g, int s)
{
    const EmbBatch b = {bag_ids, EMB_ID_I64, NNZ, NBAGS, 0, bag_offsets, s == 2 ? NULL : bag_w};
    const EmbPooling p = s == 2 ? (EmbPooling){EMB_COMBINER_MAX, 0.0f, 4, EMB_USE_DEFAULT_ID}
                                : (EmbPooling){EMB_COMBINER_MEAN, s % 2 ? 0.8f : 0.0f, 0, 0};
    float dy[NBAGS * D];
    for (int k = 0; k < NBAGS * D; k++)
        dy[k] = (float)((k * 5 + s) % 9) * 0.125f - 0.5f;
    cr_assert_eq(emb_lookup_backward(t, &b, &p, dy, D, g), 0, "%s", emb_last_error());
    cr_assert_eq(emb_update(o, t, g, ix, 0), 0, "%s", emb_last_error());
}

static EmbOptimizer *optimizer(EmbOptimizerKind k)
{
    EmbOptimizer *o;
    const EmbOptimizerConfig c = emb_optimizer_defaults(k, 0.05f);
    cr_assert_eq(emb_optimizer_create(&o, &c), 0);
    return o;
}

static void battery_optimizers(const Kind *kind)
{
    EmbIndexer *ix;
    EmbGrad *g;
    cr_assert_eq(emb_indexer_create(&ix), 0);
    cr_assert_eq(emb_grad_create(&g), 0);
    for (int k = EMB_OPT_SGD; k <= EMB_OPT_ADAM; k++) {
        EmbTable *t = kind->make("t"), *r = make_simple("t");
        EmbOptimizer *ot = optimizer((EmbOptimizerKind)k), *orf = optimizer((EmbOptimizerKind)k);
        for (int s = 0; s < 3; s++) {
            step(ot, t, ix, g, s);
            step(orf, r, ix, g, s);
        }
        same_rows(t, r, "after 3 steps");
        same_state(ot, t, orf, r, "state after 3 steps");
        emb_optimizer_destroy(&ot);
        emb_optimizer_destroy(&orf);
        emb_table_destroy(&t);
        emb_table_destroy(&r);
    }
    emb_grad_destroy(&g);
    emb_indexer_destroy(&ix);
}

/* emb_maplookup of tables @t (of the kind) and @r (the reference) under @s: concat
   output, the same bits. */
static void maplookup(EmbStrategy *s, EmbTable **t, EmbTable **r)
{
    const EmbBatch b[2] = {{bag_ids, EMB_ID_I64, NNZ, NBAGS, 0, bag_offsets, bag_w},
                           {bag_ids32, EMB_ID_I32, NNZ, NBAGS, 0, bag_offsets, NULL}};
    const EmbPooling p[2] = {EMB_POOLING_MEAN, EMB_POOLING_SUM};
    float out[NBAGS * (2 * D + 1)], ref[NBAGS * (2 * D + 1)];
    memset(out, 0, sizeof out);
    memset(ref, 0, sizeof ref);
    const EmbOutputs ot = {.concat = out, .concat_stride = 2 * D + 1, .prependrows = 1};
    const EmbOutputs orf = {.concat = ref, .concat_stride = 2 * D + 1, .prependrows = 1};
    cr_assert_eq(emb_maplookup(s, t, 2, b, p, &ot), 0, "%s: %s", emb_strategy_name(s),
                 emb_last_error());
    cr_assert_eq(emb_maplookup(s, r, 2, b, p, &orf), 0);
    same_floats(out, ref, NBAGS * (2 * D + 1), "emb_maplookup");
}

/* emb_update_many of two tables of the kind under @s, against the reference's. */
static void many(const Kind *kind, EmbStrategy *s)
{
    EmbTable *t[2] = {kind->make("a"), kind->make("b")}, *r[2] = {make_simple("a"),
                                                                   make_simple("b")};
    EmbOptimizer *ot = optimizer(EMB_OPT_ADAGRAD), *orf = optimizer(EMB_OPT_ADAGRAD);
    EmbIndexer *ix[2];
    EmbGrad *gt[2], *gr[2];
    float v[NNZ * D];
    for (int k = 0; k < NNZ * D; k++)
        v[k] = (float)(k % 13) * 0.1f - 0.6f;
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(emb_indexer_create(&ix[i]), 0);
        cr_assert_eq(emb_grad_create(&gt[i]), 0);
        cr_assert_eq(emb_grad_create(&gr[i]), 0);
        const EmbSparseGrad sg = {.ids = bag_ids + i, .n = NNZ - 1, .featuresize = D,
                                  .values = v, .stride = D};
        cr_assert_eq(emb_grad_set_sparse(gt[i], t[i], &sg), 0);
        cr_assert_eq(emb_grad_set_sparse(gr[i], r[i], &sg), 0);
    }
    maplookup(s, t, r);
    cr_assert_eq(emb_update_many(s, ot, t, (const EmbGrad *const *)gt, 2, ix, 0), 0, "%s: %s",
                 emb_strategy_name(s), emb_last_error());
    cr_assert_eq(emb_update_many(s, orf, r, (const EmbGrad *const *)gr, 2, ix, 0), 0);
    for (int i = 0; i < 2; i++) {
        same_rows(t[i], r[i], emb_strategy_name(s));
        same_state(ot, t[i], orf, r[i], emb_strategy_name(s));
        emb_table_destroy(&t[i]);
        emb_table_destroy(&r[i]);
        emb_indexer_destroy(&ix[i]);
        emb_grad_destroy(&gt[i]);
        emb_grad_destroy(&gr[i]);
    }
    emb_optimizer_destroy(&ot);
    emb_optimizer_destroy(&orf);
}

static void battery_update_many(const Kind *kind)
{
    const EmbStrategyOptions two = {.nthreads = 2}, split = {.nthreads = 2, .num_splits = 4};
    EmbStrategy *s[5];
    cr_assert_eq(emb_strategy_sequential(&s[0]), 0);
    cr_assert_eq(emb_strategy_parallel(&s[1], &two), 0);
    cr_assert_eq(emb_strategy_prealloc_concat(&s[2], &two), 0);
    cr_assert_eq(emb_strategy_prealloc_concat(&s[3], &split), 0);
    cr_assert_eq(emb_strategy_auto(&s[4], &two), 0);
    for (int i = 0; i < 5; i++) {
        many(kind, s[i]);
        emb_strategy_destroy(&s[i]);
    }
}

/* Save (with Adam state), restore into a fresh table of the kind and a fresh optimizer,
   one more step on both: the same rows and state. */
static void battery_checkpoint(const Kind *kind)
{
    char dir[64], path[512];
    tmpdir(dir);
    EmbIndexer *ix;
    EmbGrad *g;
    cr_assert_eq(emb_indexer_create(&ix), 0);
    cr_assert_eq(emb_grad_create(&g), 0);
    EmbTable *t = kind->make("t"), *u = kind->make("t");
    EmbOptimizer *ot = optimizer(EMB_OPT_ADAM), *ou = optimizer(EMB_OPT_ADAM);
    for (int s = 0; s < 2; s++)
        step(ot, t, ix, g, s);
    const EmbCheckpointVar vt = {"t", t}, vu = {"t", u};
    const EmbSaverOptions so = {.var_list = &vt, .nvars = 1, .optimizer = ot};
    EmbSaver *sv;
    cr_assert_eq(emb_saver_create(&sv, dir, "c", &so), 0);
    cr_assert_eq(emb_saver_save(sv, NULL, 2, path, sizeof path), 0, "%s", emb_last_error());
    emb_saver_destroy(&sv);
    const EmbRestoreOptions ro = {.var_list = &vu, .nvars = 1, .optimizer = ou};
    cr_assert_eq(emb_checkpoint_restore_ex(NULL, path, &ro, NULL), 0, "%s", emb_last_error());
    same_rows(t, u, "restored");
    same_state(ot, t, ou, u, "restored state");
    step(ot, t, ix, g, 2);
    step(ou, u, ix, g, 2);
    same_rows(t, u, "a step after the restore");
    same_state(ot, t, ou, u, "state a step after the restore");
    emb_optimizer_destroy(&ot);
    emb_optimizer_destroy(&ou);
    emb_table_destroy(&t);
    emb_table_destroy(&u);
    emb_grad_destroy(&g);
    emb_indexer_destroy(&ix);
    rmdir_all(dir);
}

/* ---- one test per kind and part of the battery ----------------------------------------- */

static void battery(const Kind *k)
{
    EmbTable *t = k->make("t"), *r = make_simple("t");
    battery_lookup(t, r);
    emb_table_destroy(&t);
    emb_table_destroy(&r);
    battery_optimizers(k);
    battery_update_many(k);
    battery_checkpoint(k);
    while (nwrapped > 0)
        free(wrapped[--nwrapped]);
    if (tierdir[0]) { /* the next test makes its own (the nofork runner runs all in one) */
        rmdir_all(tierdir);
        tierdir[0] = '\0';
    }
}

#define KIND_TEST(name, make)                                                              \
    Test(contract, name)                                                                   \
    {                                                                                      \
        const Kind k = {#name, make};                                                      \
        battery(&k);                                                                       \
    }
KINDS(KIND_TEST)

/* The dtype axis: the lookup battery over every kind that takes bf16 / int8 rows (a kind
   that refuses the dtype, EMB_EDTYPE, has nothing to check), against a simple table of the
   same dtype and rows. */
static void battery_dtype(const Kind *k, EmbDtype dt)
{
    dtype = dt;
    EmbTable *t = k->make("t"), *r = make_simple("t");
    cr_assert(r != NULL);
    if (t) {
        const size_t rb = emb_dtype_row_bytes(dt, D);
        for (int64_t id = 0; id < NCOL; id++) {
            void *p, *q;
            cr_assert_eq(emb_table_column_pointer(t, id, EMB_CTX_NONE, &p), 0);
            cr_assert_eq(emb_table_column_pointer(r, id, EMB_CTX_NONE, &q), 0);
            cr_assert(memcmp(p, q, rb) == 0, "%s %s: row %lld differs", k->name,
                      emb_dtype_name(dt), (long long)id);
        }
        battery_lookup(t, r);
    }
    emb_table_destroy(&t);
    emb_table_destroy(&r);
    dtype = EMB_F32; /* the nofork runner runs every test in one process */
    while (nwrapped > 0)
        free(wrapped[--nwrapped]);
    if (tierdir[0]) {
        rmdir_all(tierdir);
        tierdir[0] = '\0';
    }
}

#define DTYPE_TEST(name, make)                                                             \
    Test(contract, name##_bf16)                                                            \
    {                                                                                      \
        const Kind k = {#name, make};                                                      \
        battery_dtype(&k, EMB_BF16);                                                       \
    }                                                                                      \
    Test(contract, name##_int8)                                                            \
    {                                                                                      \
        const Kind k = {#name, make};                                                      \
        battery_dtype(&k, EMB_INT8);                                                       \
    }
KINDS(DTYPE_TEST)
