/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_badinput.c — every public function of include/embtables/ (but gpu.h and dist.h,
 * which have their own suites), each argument out of its domain: NULL, negative, too large,
 * an unknown enum or flag, a wrong dtype, shape or stride, inconsistent counts. For each
 * case the call must return the expected code, emb_last_error() must be a new message
 * naming the culprit (a substring: the argument's name, the field, the value), and nothing
 * may change: every table's bytes (plain, f16, partitioned, dynamic, the store's), the
 * optimizer's state and config, the indexer's result, the store's lists, the files of the
 * checkpoint directory and every output buffer and out-pointer are compared byte for byte
 * with a snapshot taken before the call (the gradient holders, opaque, are checked at the
 * end: they still apply the same update). Functions that cannot fail (getters, destroys)
 * get their NULL / out-of-range arguments too, checked for their documented value. The
 * test prints the number of cases and of functions covered.
 *
 * Adding API: the test reads the public headers (EMB_HEADER_DIR) and fails naming every
 * function declared EMB_API (with arguments) that no case calls. For a new function:
 *  1. if it needs an object the fixture lacks (a collection, a tiered or quantized table),
 *     add it to `Fx`, create it in fx_setup(), destroy it in fx_teardown() and add what it
 *     holds to snapshot() (its bytes through the public API), so that a case that writes
 *     it is caught;
 *  2. add one C(...) line per argument and per way it can be out of its domain to the
 *     section function of its header (cases_table(), cases_store(), ...; a new header gets
 *     a new section function, listed in `sections`): C(function, expected code, culprit
 *     substring, call expression using the fixture `f` and its outputs `o`). Outputs go to
 *     `o` (sentinel-filled: a write shows); a case needing statements gets a small helper
 *     function above the sections. For a function that cannot fail, V(function, expected
 *     value, expression).
 * A failing case prints its index, function and expression.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_files.h"
#include "test_util.h"

#define D 4  /* feature size of the fixture's tables */
#define NC 8 /* their columns */

/* Every output a case may be handed: sentinel bytes before the first case, compared after
   every case (a failed call must not write its outputs). */
typedef struct Outs {
    float out[64 * 16];
    int64_t ids[64];
    EmbTable *table;
    void *ptr;
    EmbStrategy *strategy;
    EmbOptimizer *opt;
    EmbGrad *grad;
    EmbIndexer *ix;
    EmbStore *store;
    EmbSaver *saver;
    EmbCheckpoint *ck;
    EmbCollection *coll;
    int64_t n;
    int32_t n32;
    int64_t row;
    const int64_t *cids, *ccounts;
    const float *crows;
    EmbOptimizerConfig cfg;
    EmbCheckpointEntry entry;
    EmbDynamicStats stats;
    EmbTieredStats tstats;
    EmbSparseGrad sparse;
    EmbUpdateTimes times;
    char path[8];
} Outs;

typedef struct Fx {
    EmbTable *t;    /* 8 x 4 f32 "t", EMB_TABLE_CHECK_FINITE, optimizer state attached */
    EmbTable *h;    /* 8 x 4 f16 "h" */
    EmbTable *part; /* 8 x 4 f32 "part", 3 shards, mod */
    EmbTable *dyn;  /* dynamic, 4 f32 "dyn", EMB_TABLE_CHECK_FINITE, ids 3, 10, 2^40 */
    EmbTable *st;   /* the store's "s": 8 x 4 f32, uninitialized */
    EmbTable *s3, *d2; /* 3 x 4 f32 "s3"; 8 x 2 f32 "d2" */
    EmbTable *tabs[2], *twice[2]; /* {t, part}, {t, t} */
    EmbOptimizer *opt; /* Adagrad */
    EmbGrad *g, *gs[2], *empty; /* g: t's gradient; gs: {t, part}'s; empty: none recorded */
    EmbGrad *gnan, *gbad, *gnans[2]; /* t's sparse gradients: a NaN row; id 8; {gnan, gs[1]} */
    EmbGrad *gdyn; /* dyn's sparse gradient of id INT64_MAX */
    EmbStrategy *nocb; /* a custom strategy without callbacks */
    EmbCollection *coll; /* {"ct": t, "cp": part}, borrowed, SUM, no optimizer */
    EmbCollectionTable ctabs[2];
    EmbIndexer *ix, *ixs[2];
    EmbStrategy *seq;
    EmbStore *store;
    EmbSaver *sv;
    EmbCheckpoint *ck, *cklist; /* the fixture's checkpoint, mapped / listed only */
    EmbCheckpointVar vars[3];
    char dir[64], ckpt[256];
    int64_t ids[16], offsets[5], bad_offsets[5], big[2], dup[2];
    float w[16], vals[NC * D], nanv[NC * D], dout[16 * D];
    EmbBatch b, b2[2]; /* 4 ragged bags over ids 0..7; b2: {b, b} */
    EmbPooling p2[2];
    float update_ref[NC * D]; /* t after applying g with SGD (fx_setup), for the end */
    float t0[NC * D];         /* t's initial values */
    Outs o;
} Fx;

/* ---- snapshot --------------------------------------------------------------------------- */

typedef struct Snap {
    unsigned char *p;
    size_t n, cap;
} Snap;

static void put(Snap *s, const void *p, size_t n)
{
    if (s->n + n > s->cap) {
        s->cap = (s->n + n) * 2;
        s->p = realloc(s->p, s->cap);
        cr_assert_not_null(s->p);
    }
    memcpy(s->p + s->n, p, n);
    s->n += n;
}

/* A table's shape and every column's bytes, through the column-pointer interface. */
static void put_table(Snap *s, const EmbTable *t)
{
    const int64_t nc = emb_table_ncolumns(t);
    put(s, &nc, sizeof nc);
    const size_t bytes = (size_t)emb_table_featuresize(t) * emb_dtype_size(emb_table_dtype(t));
    for (int64_t c = 0; c < nc; c++) {
        void *p;
        cr_assert_eq(emb_table_column_pointer(t, c, EMB_CTX_NONE, &p), 0);
        put(s, p, bytes);
    }
}

static void put_dynamic(Snap *s, const EmbTable *t)
{
    int64_t ids[16], n = 0;
    float rows[16 * D];
    EmbDynamicStats st;
    cr_assert_eq(emb_table_dynamic_export(t, ids, rows, D, 16, &n), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_dynamic_stats(t, &st), 0);
    put(s, &n, sizeof n);
    put(s, ids, (size_t)n * sizeof *ids);
    put(s, rows, (size_t)n * D * sizeof *rows);
    put(s, &st, sizeof st);
}

/* Every file of @dir (names in order, bytes). */
static void put_files(Snap *s, const char *dir)
{
    struct dirent **list;
    const int n = scandir(dir, &list, NULL, alphasort);
    cr_assert_geq(n, 0);
    for (int i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, list[i]->d_name);
        put(s, list[i]->d_name, strlen(list[i]->d_name) + 1);
        FILE *fp = list[i]->d_name[0] != '.' ? fopen(path, "rb") : NULL;
        for (int c; fp && (c = fgetc(fp)) != EOF;) {
            const unsigned char b = (unsigned char)c;
            put(s, &b, 1);
        }
        if (fp)
            fclose(fp);
        free(list[i]);
    }
    free(list);
}

static void snapshot(const Fx *f, Snap *s)
{
    s->n = 0;
    const EmbTable *tabs[] = {f->t, f->h, f->part, f->st, f->s3, f->d2};
    for (size_t i = 0; i < sizeof tabs / sizeof *tabs; i++)
        put_table(s, tabs[i]);
    put_dynamic(s, f->dyn);
    EmbTable *state;
    int64_t step;
    cr_assert_eq(emb_optimizer_state(f->opt, f->t, 0, &state, &step), 0);
    put_table(s, state);
    put(s, &step, sizeof step);
    EmbOptimizerConfig cfg;
    cr_assert_eq(emb_optimizer_get_config(f->opt, &cfg), 0);
    put(s, &cfg, sizeof cfg);
    const int64_t *ids, *counts;
    const int64_t nd = emb_indexer_distinct(f->ix, &ids, &counts);
    put(s, &nd, sizeof nd);
    put(s, ids, (size_t)nd * sizeof *ids);
    put(s, counts, (size_t)nd * sizeof *counts);
    EmbTable *list[8];
    int64_t n;
    cr_assert_eq(emb_store_list(f->store, 0, list, 8, &n), 0);
    put(s, &n, sizeof n);
    put(s, list, (size_t)n * sizeof *list);
    cr_assert_eq(emb_store_uninitialized(f->store, list, 8, &n), 0);
    put(s, &n, sizeof n);
    put_files(s, f->dir);
    put(s, &f->o, sizeof f->o);
}

/* ---- the fixture ------------------------------------------------------------------------ */

static void fx_tables(Fx *f)
{
    const EmbTableOptions ot = {.name = "t", .flags = EMB_TABLE_CHECK_FINITE};
    cr_assert_eq(emb_table_create(&f->t, NC, D, EMB_F32, &ot), 0);
    for (int i = 0; i < NC * D; i++)
        f->vals[i] = f->t0[i] = f->nanv[i] = 0.25f * (float)(i % 7) - 0.5f;
    f->nanv[5] = NAN;
    cr_assert_eq(emb_table_assign(f->t, f->t0, NC, D, D), 0);
    const EmbTableOptions oh = {.name = "h"}, op = {.name = "part"}, o3 = {.name = "s3"},
                          o2 = {.name = "d2"};
    cr_assert_eq(emb_table_create(&f->s3, 3, D, EMB_F32, &o3), 0);
    cr_assert_eq(emb_table_create(&f->d2, NC, 2, EMB_F32, &o2), 0);
    cr_assert_eq(emb_table_create(&f->h, NC, D, EMB_F16, &oh), 0);
    cr_assert_eq(emb_table_assign(f->h, f->t0, NC, D, D), 0);
    cr_assert_eq(emb_table_partitioned_create(&f->part, NC, D, EMB_F32, 3, EMB_PARTITION_MOD,
                                              &op), 0);
    cr_assert_eq(emb_table_assign(f->part, f->t0, NC, D, D), 0);
    const EmbDynamicOptions od = {.table = {.name = "dyn", .flags = EMB_TABLE_CHECK_FINITE}};
    cr_assert_eq(emb_table_dynamic_create(&f->dyn, D, EMB_F32, &od), 0);
    const int64_t dids[3] = {3, 10, INT64_C(1) << 40};
    cr_assert_eq(emb_table_dynamic_import(f->dyn, dids, f->vals, D, 3), 0);
    f->tabs[0] = f->twice[0] = f->twice[1] = f->t;
    f->tabs[1] = f->part;
    f->ctabs[0] = (EmbCollectionTable){.name = "ct", .table = f->t, .pooling = EMB_POOLING_SUM};
    f->ctabs[1] = (EmbCollectionTable){.name = "cp", .table = f->part,
                                       .pooling = EMB_POOLING_SUM};
    cr_assert_eq(emb_collection_create(&f->coll, f->ctabs, 2, NULL), 0, "%s", emb_last_error());
}

static void fx_batches(Fx *f)
{
    for (int i = 0; i < 16; i++) {
        f->ids[i] = i % NC;
        f->w[i] = 1.0f + 0.125f * (float)i;
    }
    for (int i = 0; i < 16 * D; i++)
        f->dout[i] = 0.0625f * (float)(i % 9) - 0.25f;
    const int64_t off[5] = {0, 2, 2, 5, 8}, bad[5] = {0, 3, 2, 5, 8};
    memcpy(f->offsets, off, sizeof off);
    memcpy(f->bad_offsets, bad, sizeof bad);
    f->big[0] = NC, f->big[1] = -1;
    f->dup[0] = f->dup[1] = 3;
    f->b = (EmbBatch){.ids = f->ids, .nnz = 8, .nbags = 4, .offsets = f->offsets, .weights = f->w};
    f->b2[0] = f->b2[1] = f->b;
    f->p2[0] = f->p2[1] = EMB_POOLING_MEAN;
}

/* t's gradient g applied by SGD to t: the reference the end of the test compares with. */
static void fx_update_ref(Fx *f)
{
    const EmbOptimizerConfig sgd = emb_optimizer_defaults(EMB_OPT_SGD, 0.5f);
    EmbOptimizer *o = NULL;
    EmbIndexer *ix = NULL;
    cr_assert_eq(emb_optimizer_create(&o, &sgd) | emb_indexer_create(&ix), 0);
    cr_assert_eq(emb_update(o, f->t, f->g, ix, 0), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_read(f->t, f->update_ref, D), 0);
    cr_assert_eq(emb_table_assign(f->t, f->t0, NC, D, D), 0);
    emb_optimizer_destroy(&o);
    emb_indexer_destroy(&ix);
}

static void fx_training(Fx *f)
{
    const EmbOptimizerConfig cfg = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    cr_assert_eq(emb_optimizer_create(&f->opt, &cfg), 0);
    cr_assert_eq(emb_optimizer_attach(f->opt, f->t), 0);
    cr_assert_eq(emb_grad_create(&f->g) | emb_grad_create(&f->gs[0]) |
                 emb_grad_create(&f->gs[1]) | emb_grad_create(&f->empty), 0);
    cr_assert_eq(emb_lookup_backward(f->t, &f->b, &EMB_POOLING_MEAN, f->dout, D, f->g), 0);
    const EmbOutputs go = {.concat = f->dout, .concat_stride = 2 * D};
    cr_assert_eq(emb_maplookup_backward(f->tabs, 2, f->b2, f->p2, &go, f->gs), 0, "%s",
                 emb_last_error());
    cr_assert_eq(emb_indexer_create(&f->ix) | emb_indexer_create(&f->ixs[0]) |
                 emb_indexer_create(&f->ixs[1]), 0);
    cr_assert_eq(emb_indexer_index(f->ix, f->ids, 11), 0);
    cr_assert_eq(emb_strategy_sequential(&f->seq), 0);
    cr_assert_eq(emb_strategy_custom(&f->nocb, &(EmbStrategyCallbacks){0}, NULL), 0);
    cr_assert_eq(emb_grad_create(&f->gnan) | emb_grad_create(&f->gbad) |
                 emb_grad_create(&f->gdyn), 0);
    static const int64_t max_id = INT64_MAX;
    const EmbSparseGrad gd = {&max_id, EMB_ID_I64, 1, D, f->vals, D};
    cr_assert_eq(emb_grad_set_sparse(f->gdyn, f->dyn, &gd), 0);
    const EmbSparseGrad nan = {f->ids, EMB_ID_I64, 2, D, f->nanv, D},
                        bad = {f->big, EMB_ID_I64, 1, D, f->vals, D};
    cr_assert_eq(emb_grad_set_sparse(f->gnan, f->t, &nan), 0);
    cr_assert_eq(emb_grad_set_sparse(f->gbad, f->t, &bad), 0);
    f->gnans[0] = f->gnan, f->gnans[1] = f->gs[1];
    fx_update_ref(f);
}

static void fx_files(Fx *f)
{
    cr_assert_eq(emb_store_create(&f->store), 0);
    const EmbVariableSpec spec = {.name = "s", .ncolumns = NC, .featuresize = D,
                                  .dtype = EMB_F32};
    cr_assert_eq(emb_store_get(f->store, &spec, EMB_REUSE_NO, &f->st), 0);
    tmpdir(f->dir);
    f->vars[0] = (EmbCheckpointVar){"t", f->t};
    f->vars[1] = (EmbCheckpointVar){"part", f->part};
    f->vars[2] = (EmbCheckpointVar){"dyn", f->dyn};
    const EmbSaverOptions so = {.var_list = f->vars, .nvars = 3, .optimizer = f->opt};
    cr_assert_eq(emb_saver_create(&f->sv, f->dir, "m", &so), 0);
    cr_assert_eq(emb_saver_save(f->sv, NULL, 1, f->ckpt, sizeof f->ckpt), 0, "%s",
                 emb_last_error());
    cr_assert_eq(emb_checkpoint_open(&f->ck, f->ckpt, EMB_CHECKPOINT_MMAP), 0);
    cr_assert_eq(emb_checkpoint_open(&f->cklist, f->ckpt, 0), 0);
}

static void fx_setup(Fx *f)
{
    memset(f, 0, sizeof *f);
    fx_tables(f);
    fx_batches(f);
    fx_training(f);
    fx_files(f);
    memset(&f->o, 0xa5, sizeof f->o);
}

static void fx_teardown(Fx *f)
{
    emb_checkpoint_close(&f->ck);
    emb_checkpoint_close(&f->cklist);
    emb_collection_destroy(&f->coll);
    emb_saver_destroy(&f->sv);
    emb_store_destroy(&f->store);
    emb_strategy_destroy(&f->seq);
    emb_strategy_destroy(&f->nocb);
    emb_grad_destroy(&f->gnan);
    emb_grad_destroy(&f->gbad);
    emb_grad_destroy(&f->gdyn);
    for (int i = 0; i < 2; i++) {
        emb_indexer_destroy(&f->ixs[i]);
        emb_grad_destroy(&f->gs[i]);
    }
    emb_indexer_destroy(&f->ix);
    emb_grad_destroy(&f->g);
    emb_grad_destroy(&f->empty);
    emb_optimizer_destroy(&f->opt);
    EmbTable *all[] = {f->t, f->h, f->part, f->dyn, f->s3, f->d2};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        emb_table_destroy(&all[i]);
    rmdir_all(f->dir);
}

/* ---- helpers of cases that need statements ---------------------------------------------- */

static EmbBatch batch_with(const Fx *f, int field, int64_t v)
{
    EmbBatch b = f->b;
    if (field == 0)
        b.nnz = v;
    else if (field == 1)
        b.nbags = v;
    else if (field == 2)
        b.bag_size = v, b.offsets = NULL;
    else if (field == 3)
        b.id_type = (EmbIdType)v;
    return b;
}

static int lookup_batch(Fx *f, const EmbBatch *b, const EmbPooling *p)
{
    return emb_lookup(f->t, b, p, f->o.out, D);
}

static int lookup_field(Fx *f, int field, int64_t v)
{
    const EmbBatch b = batch_with(f, field, v);
    return lookup_batch(f, &b, NULL);
}

static int lookup_ids(Fx *f, const int64_t *ids, const int64_t *offsets, int64_t nnz)
{
    EmbBatch b = f->b;
    b.ids = ids, b.offsets = offsets, b.nnz = nnz;
    if (nnz != 8)
        b.offsets = NULL, b.nbags = nnz, b.bag_size = 1;
    return emb_lookup(f->t, &b, NULL, f->o.out, D);
}

static int lookup_pool(Fx *f, int combiner, float max_norm, int64_t default_id, unsigned flags)
{
    const EmbPooling p = {(EmbCombiner)combiner, max_norm, default_id, flags};
    return emb_lookup(f->t, &f->b, &p, f->o.out, D);
}

static int gather_bags(Fx *f, int64_t bag_size)
{
    EmbBatch b = f->b;
    b.offsets = NULL, b.nbags = 4, b.bag_size = bag_size;
    return emb_lookup(f->t, &b, &EMB_POOLING_GATHER, f->o.out, D);
}

static int maplookup_concat(Fx *f, EmbTable *const *tabs, int64_t n, const EmbBatch *b,
                            const EmbPooling *p, int64_t stride, int64_t prepend)
{
    const EmbOutputs o = {.concat = f->o.out, .concat_stride = stride, .prependrows = prepend};
    return emb_maplookup(f->seq, tabs, n, b, p, &o);
}

static int maplookup_nbags(Fx *f, int64_t nbags1)
{
    EmbBatch b[2] = {f->b, f->b};
    b[1].nbags = nbags1, b[1].nnz = nbags1, b[1].bag_size = 1, b[1].offsets = NULL;
    return maplookup_concat(f, f->tabs, 2, b, NULL, 2 * D, 0);
}

static int maplookup_bad_id(Fx *f)
{
    static const int64_t bad4[4] = {0, 1, 2, NC};
    EmbBatch b[2] = {f->b, {.ids = bad4, .nnz = 4, .nbags = 4, .bag_size = 1}};
    return maplookup_concat(f, f->tabs, 2, b, NULL, 2 * D, 0);
}

static int maplookup_per_table(Fx *f, float *second, const int64_t *strides)
{
    float *const per[2] = {f->o.out, second};
    const EmbOutputs o = {.per_table = per, .strides = strides};
    return emb_maplookup(f->seq, f->tabs, 2, f->b2, NULL, &o);
}

static int maplookup_both_layouts(Fx *f, int both)
{
    float *const per[2] = {f->o.out, f->o.out + 64};
    const EmbOutputs o = {.per_table = both ? per : NULL, .concat = both ? f->o.out : NULL,
                          .concat_stride = 2 * D};
    return emb_maplookup(f->seq, f->tabs, 2, f->b2, NULL, &o);
}

static int maplookup_ids(Fx *f, const int64_t *const *ids, int64_t nbags, int64_t bag_size,
                         int three)
{
    const EmbOutputs o = {.concat = f->o.out, .concat_stride = 2 * D};
    return three ? emb_maplookup_ids3(f->seq, f->tabs, 2, ids ? ids[0] : NULL, nbags, bag_size,
                                      &o)
                 : emb_maplookup_ids(f->seq, f->tabs, 2, ids, nbags, bag_size, &o);
}

static int strategy_opts(EmbStrategy **out, int kind, int nthreads, int pinning, int chunks,
                         int splits)
{
    const EmbStrategyOptions o = {nthreads, (EmbPinning)pinning, chunks, splits};
    return kind == 0 ? emb_strategy_parallel(out, &o)
         : kind == 1 ? emb_strategy_prealloc_concat(out, &o) : emb_strategy_auto(out, &o);
}

static int backward_stride(Fx *f, int64_t stride, EmbGrad *g)
{
    return emb_lookup_backward(f->t, &f->b, NULL, f->dout, stride, g);
}

static int backward_batch(Fx *f, int field, int64_t v, const EmbPooling *p)
{
    const EmbBatch b = batch_with(f, field, v);
    return emb_lookup_backward(f->t, &b, p, f->dout, D, f->g);
}

static int set_sparse(Fx *f, EmbGrad *g, const EmbTable *t, int64_t n, int id_type, int32_t fs,
                      int null_values, int64_t stride, const int64_t *ids)
{
    const EmbSparseGrad s = {ids, (EmbIdType)id_type, n, fs, null_values ? NULL : f->dout,
                             stride};
    return emb_grad_set_sparse(g, t, &s);
}

static int mapback(Fx *f, EmbTable *const *tabs, int64_t n, const EmbBatch *b, int64_t stride,
                   int64_t prepend, EmbGrad *const *grads, const EmbPooling *p)
{
    const EmbOutputs go = {.concat = f->dout, .concat_stride = stride, .prependrows = prepend};
    return emb_maplookup_backward(tabs, n, b, p, &go, grads);
}

static int mapback_default(Fx *f)
{
    EmbPooling p[2] = {EMB_POOLING_SUM, {EMB_COMBINER_SUM, 0, NC, EMB_USE_DEFAULT_ID}};
    return mapback(f, f->tabs, 2, f->b2, 2 * D, 0, f->gs, p);
}

/* Optimizer configs: @field set to @v in the defaults of @kind. */
static EmbOptimizerConfig cfg_with(int kind, int field, float v)
{
    EmbOptimizerConfig c = emb_optimizer_defaults((EmbOptimizerKind)kind, 0.1f);
    float *const fields[] = {&c.lr, &c.eps, &c.initial_accumulator, &c.lr_power, &c.l1, &c.l2,
                             &c.beta1, &c.beta2, &c.weight_decay};
    if (field < 9)
        *fields[field] = v;
    else if (field == 9)
        c.bias_correction = (int)v;
    else if (field == 10)
        c.placement = (EmbPlacement)v;
    else if (field == 11)
        c.weight_decay_mode = (EmbWeightDecay)v;
    else if (field == 12)
        c.placement = EMB_PLACE_NODE, c.numa_node = (int32_t)v;
    return c;
}

static int cfg_check(int kind, int field, float v)
{
    const EmbOptimizerConfig c = cfg_with(kind, field, v);
    return emb_optimizer_config_check(&c);
}

static int opt_create(Fx *f, int kind, int field, float v)
{
    const EmbOptimizerConfig c = cfg_with(kind, field, v);
    return emb_optimizer_create(&f->o.opt, &c);
}

static int opt_set(Fx *f, int kind, int field, float v)
{
    const EmbOptimizerConfig c = cfg_with(kind, field, v);
    return emb_optimizer_set_config(f->opt, &c);
}

static int update_many(Fx *f, int prepare, EmbStrategy *s, EmbOptimizer *o,
                       EmbTable *const *tabs, const EmbGrad *const *grads, int64_t n,
                       EmbIndexer *const *ixs, unsigned flags)
{
    (void)f;
    return prepare ? emb_update_many_prepare(s, o, tabs, grads, n, ixs, flags)
                   : emb_update_many(s, o, tabs, grads, n, ixs, flags);
}

static int many_null_entry(Fx *f, int prepare, int which)
{
    EmbTable *tabs[2] = {f->t, which == 0 ? NULL : f->part};
    const EmbGrad *grads[2] = {f->gs[0], which == 1 ? NULL : f->gs[1]};
    EmbIndexer *ixs[2] = {f->ixs[0], which == 2 ? NULL : f->ixs[1]};
    return update_many(f, prepare, f->seq, f->opt, tabs, grads, 2, ixs, 0);
}

static int many_twice(Fx *f, int prepare)
{
    const EmbGrad *grads[2] = {f->gs[0], f->gs[0]};
    return update_many(f, prepare, f->seq, f->opt, f->twice, grads, 2, f->ixs, 0);
}

static int many_swapped(Fx *f, int prepare)
{
    const EmbGrad *grads[2] = {f->gs[1], f->gs[0]};
    return update_many(f, prepare, f->seq, f->opt, f->tabs, grads, 2, f->ixs, 0);
}

static int many(Fx *f, int prepare, int which, int64_t n, unsigned flags)
{
    const EmbGrad *const *grads = (const EmbGrad *const *)f->gs;
    return update_many(f, prepare, which == 0 ? NULL : f->seq, which == 1 ? NULL : f->opt,
                       which == 2 ? NULL : f->tabs, which == 3 ? NULL : grads, n,
                       which == 4 ? NULL : f->ixs, flags);
}

static int commit_unprepared(Fx *f)
{
    emb_update_many_cancel(f->seq);
    return emb_update_many_commit(f->seq);
}

static int cancel_null(void)
{
    emb_update_many_cancel(NULL);
    return 0;
}

static int scatter(Fx *f, int op, EmbTable *t, const int64_t *ids, int64_t n,
                   const float *upd, int64_t stride)
{
    int (*const fn[5])(EmbTable *, const int64_t *, int64_t, const float *, int64_t) = {
        emb_table_scatter_update, emb_table_scatter_add, emb_table_scatter_sub,
        emb_table_scatter_mul, emb_table_scatter_div};
    (void)f;
    return fn[op](t, ids, n, upd, stride);
}

static int assign(int op, EmbTable *t, const float *v, int64_t nc, int32_t fs, int64_t stride)
{
    return op == 0 ? emb_table_assign(t, v, nc, fs, stride)
         : op == 1 ? emb_table_assign_add(t, v, nc, fs, stride)
                   : emb_table_assign_sub(t, v, nc, fs, stride);
}

static int sparse_mask(Fx *f, int64_t n, int id_type, int32_t fs, int64_t nmask,
                       int null_mask, int null_out, int null_ids, int null_vals, int64_t stride)
{
    const EmbSparseGrad in = {f->ids, (EmbIdType)id_type, n, fs, f->dout, D};
    return emb_sparse_mask(&in, null_mask ? NULL : f->dup, nmask,
                           null_out ? NULL : &f->o.sparse, null_ids ? NULL : f->o.ids,
                           null_vals ? NULL : f->o.out, stride);
}

static int initialize(EmbTable *t, int kind, float a, float b)
{
    const EmbInitializer init = {(EmbInitKind)kind, a, b, 1};
    return emb_table_initialize(t, &init);
}

static int store_get(Fx *f, const char *name, int64_t nc, int32_t fs, int dtype, int32_t nshards,
                     unsigned partition, int reuse, int dynamic)
{
    const EmbDynamicOptions dyn = {0};
    const EmbVariableSpec s = {.name = name, .ncolumns = nc, .featuresize = fs,
                               .dtype = (EmbDtype)dtype, .nshards = nshards,
                               .partition = partition, .dynamic = dynamic ? &dyn : NULL};
    return emb_store_get(f->store, &s, (EmbReuse)reuse, &f->o.table);
}

static const char long_name[] = "a_name_of_sixty_four_bytes_which_is_one_more_than_EMB_NAME_MAX__";
static const char long_prefix[] = "a_prefix_of_one_hundred_and_one_bytes_one_more_than_the_saver_takes__"
                                  "0123456789012345678901234567890x";

static int saver_opts(Fx *f, const char *prefix, double hours, const EmbCheckpointVar *vars,
                      int64_t nvars)
{
    const EmbSaverOptions o = {.keep_every_n_hours = hours, .var_list = vars, .nvars = nvars};
    return emb_saver_create(&f->o.saver, f->dir, prefix, &o);
}

static int save_to(Fx *f, int64_t step, char *path, size_t cap)
{
    return emb_saver_save(f->sv, NULL, step, path, cap);
}

static int save_store_null(Fx *f)
{
    EmbSaver *s = NULL;
    cr_assert_eq(emb_saver_create(&s, f->dir, "n", NULL), 0);
    const int r = emb_saver_save(s, NULL, 1, NULL, 0);
    emb_saver_destroy(&s);
    return r;
}

static int restore_vars(Fx *f, const char *name, EmbTable *t, int64_t nvars, EmbOptimizer *o)
{
    const EmbCheckpointVar v = {name, t};
    const EmbRestoreOptions ro = {.var_list = &v, .nvars = nvars, .optimizer = o};
    return emb_checkpoint_restore_ex(NULL, f->ckpt, &ro, &f->o.n);
}

static int restore_other_kind(Fx *f)
{
    EmbOptimizer *o = NULL;
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAM, 0.1f);
    cr_assert_eq(emb_optimizer_create(&o, &c), 0);
    const int r = restore_vars(f, "t", f->t, 1, o);
    emb_optimizer_destroy(&o);
    return r;
}

static int partitioned(Fx *f, EmbTable *a, EmbTable *b, int32_t n, unsigned flags)
{
    EmbTable *sh[2] = {a, b};
    return emb_table_partitioned(&f->o.table, sh, n, flags, NULL);
}

static int dyn_create(Fx *f, int32_t fs, int dtype, int field, int64_t v)
{
    EmbDynamicOptions o = {.table.name = "d"};
    if (field == 1)
        o.capacity = v;
    else if (field == 2)
        o.max_rows = v;
    else if (field == 3)
        o.admit_after = (int32_t)v;
    else if (field == 4)
        o.admit_after = 2, o.sketch_width = (int32_t)v;
    else if (field == 5)
        o.missing = (EmbDynamicMissing)v;
    else if (field == 6)
        o.table.placement = (EmbPlacement)v;
    else if (field == 7)
        o.init.kind = (EmbInitKind)v;
    else if (field == 8)
        o.missing = EMB_DYN_MISSING_CONSTANT, o.missing_value = NAN,
        o.table.flags = EMB_TABLE_CHECK_FINITE;
    else if (field == 9)
        o.table.static_size = (int32_t)v;
    else if (field == 10)
        o.table.flags = (unsigned)v;
    else if (field == 11)
        o.table.column_align = (int32_t)v;
    return emb_table_dynamic_create(&f->o.table, fs, (EmbDtype)dtype, &o);
}

static int evict(EmbTable *t, int64_t ttl, float min_norm, unsigned flags, int64_t *n)
{
    const EmbDynamicEvict ev = {ttl, min_norm, flags};
    return emb_table_dynamic_evict(t, &ev, n);
}

static int create_opts(Fx *f, int placement, int32_t node, int32_t align, unsigned flags,
                       int32_t static_size)
{
    const EmbTableOptions o = {.placement = (EmbPlacement)placement, .numa_node = node,
                               .column_align = align, .flags = flags,
                               .static_size = static_size};
    return emb_table_create(&f->o.table, NC, D, EMB_F32, &o);
}

static void *no_column(void *user, int64_t column, EmbContext ctx)
{
    (void)column, (void)ctx;
    return user;
}

static int custom(Fx *f, int64_t nc, int32_t fs, int dtype, int null_fn, int placement)
{
    const EmbTableOptions o = {.placement = (EmbPlacement)placement};
    return emb_table_custom(&f->o.table, nc, fs, (EmbDtype)dtype, null_fn ? NULL : no_column,
                            f->o.out, NULL, &o);
}

static int destroy_nulls(void)
{
    EmbTable *t = NULL;
    EmbStrategy *s = NULL;
    EmbGrad *g = NULL;
    EmbIndexer *ix = NULL;
    EmbOptimizer *o = NULL;
    EmbStore *st = NULL;
    EmbSaver *sv = NULL;
    EmbCheckpoint *ck = NULL;
    emb_table_destroy(NULL), emb_table_destroy(&t);
    emb_strategy_destroy(NULL), emb_strategy_destroy(&s);
    emb_grad_destroy(NULL), emb_grad_destroy(&g);
    emb_indexer_destroy(NULL), emb_indexer_destroy(&ix);
    emb_optimizer_destroy(NULL), emb_optimizer_destroy(&o);
    emb_store_destroy(NULL), emb_store_destroy(&st);
    emb_saver_destroy(NULL), emb_saver_destroy(&sv);
    emb_checkpoint_close(NULL), emb_checkpoint_close(&ck);
    return 0;
}

static int detach_nulls(Fx *f)
{
    emb_optimizer_detach(NULL, f->t);
    emb_optimizer_detach(f->opt, NULL);
    emb_optimizer_detach(f->opt, f->h); /* no state: nothing */
    return 0;
}

static int logger_null(void)
{
    emb_set_logger(NULL, NULL, (EmbLogLevel)99);
    emb_set_logger(NULL, NULL, (EmbLogLevel)-1);
    return 0;
}

/* Unknown bits of the mask are ignored; the mask in force is restored. */
static int cpu_mask_unknown_bits(void)
{
    const unsigned before = emb_cpu_flags();
    emb_set_cpu_mask(~0u);
    const int r = (emb_cpu_flags() & ~emb_cpu_detected()) != 0;
    emb_set_cpu_mask(before);
    return r || emb_cpu_flags() != before;
}

static int defaults_unknown_kind(int kind)
{
    const EmbOptimizerConfig c = emb_optimizer_defaults((EmbOptimizerKind)kind, 0.1f);
    return emb_optimizer_config_check(&c);
}

static int data_of(const EmbTable *t)
{
    int64_t stride = -7;
    return emb_table_data(t, &stride) == NULL && stride == 0;
}

static int coll_create(Fx *f, int which)
{
    EmbCollectionTable t[2] = {f->ctabs[0], f->ctabs[1]};
    EmbCollectionOptions o = {0};
    const EmbOptimizerConfig cfg = emb_optimizer_defaults(EMB_OPT_SGD, 0.1f);
    if (which == 0)
        t[1].name = t[0].name;
    else if (which == 1)
        t[1].table = t[0].table;
    else if (which == 2)
        t[1].pooling.combiner = (EmbCombiner)8;
    else if (which == 3)
        o.prependrows = -1;
    else if (which == 4)
        o.optimizer = &cfg, o.shared_optimizer = f->opt;
    else if (which == 5)
        o.update_flags = 0x40;
    else if (which == 6)
        t[1].name = "";
    else if (which == 7)
        t[1] = (EmbCollectionTable){.spec = {.ncolumns = 4, .featuresize = 2}};
    else if (which == 8)
        t[1] = (EmbCollectionTable){.name = "new", .spec = {.ncolumns = -4, .featuresize = 2}};
    return emb_collection_create(&f->o.coll, t, 2, &o);
}

static int coll_forward(Fx *f, const EmbBatch *b, int null_out)
{
    const EmbOutputs o = emb_collection_concat(f->coll, f->o.out);
    return emb_collection_forward(f->coll, b, null_out ? NULL : &o);
}

static int coll_backward(Fx *f, int which)
{
    const EmbOutputs o = emb_collection_concat(f->coll, f->dout);
    return which == 0 ? emb_collection_backward(f->coll, &o)
         : which == 1 ? emb_collection_backward_batches(f->coll, NULL, &o)
                      : emb_collection_backward_batches(f->coll, f->b2, NULL);
}

static int coll_values(Fx *f)
{
    const EmbOutputs o = emb_collection_concat(NULL, f->o.out);
    const int ok[] = {
        emb_collection_ntables(NULL) == 0, emb_collection_table(f->coll, 2) == NULL,
        emb_collection_table(f->coll, -1) == NULL, emb_collection_name(f->coll, 2) == NULL,
        emb_collection_pooling(f->coll, -1) == NULL, emb_collection_strategy(NULL) == NULL,
        emb_collection_optimizer(NULL) == NULL, emb_collection_optimizer(f->coll) == NULL,
        emb_collection_width(NULL) == 0, emb_collection_grad(f->coll, 2) == NULL,
        emb_collection_grad(NULL, 0) == NULL, o.concat_stride == 0,
        emb_collection_custom_user(NULL, NULL) == NULL,
        emb_collection_custom_user(f->coll, &(EmbCollectionOps){0}) == NULL};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if (!ok[i])
            return -(int)i - 1;
    return 1;
}

/* ---- the cases -------------------------------------------------------------------------- */

typedef struct CaseInfo {
    const char *fn, *culprit, *expr;
    int code;
} CaseInfo;

enum { NOT_A_CASE = 1 << 30 };

/* C: an error case (code, culprit in emb_last_error()); V: a value case (no message). */
#define CN(name_, code_, culprit_, ...)                                                      \
    if (k++ == i) {                                                                         \
        *info = (CaseInfo){name_, culprit_, #__VA_ARGS__, code_};                           \
        return (__VA_ARGS__);                                                               \
    }
#define C(fn_, code_, culprit_, ...) CN(#fn_, code_, culprit_, __VA_ARGS__)
#define V(fn_, value_, ...) CN(#fn_, value_, NULL, __VA_ARGS__)

/* A section's cases: k counts them across sections, i is the one to run. */
#define SECTION_BEGIN                                                                       \
    int k = *kp;                                                                            \
    Outs *o = &f->o;                                                                        \
    (void)o;
#define SECTION_END                                                                         \
    *kp = k;                                                                                \
    return NOT_A_CASE;

/* common.h */
static int cases_common(int i, int *kp, Fx *f, CaseInfo *info)
{
    SECTION_BEGIN
    V(emb_dtype_size, 0, (int)emb_dtype_size((EmbDtype)9))
    V(emb_dtype_size, 0, (int)emb_dtype_size((EmbDtype)-1))
    V(emb_dtype_row_bytes, 0, (int)emb_dtype_row_bytes((EmbDtype)9, D))
    V(emb_dtype_row_bytes, 0, (int)emb_dtype_row_bytes(EMB_INT4, 3))
    V(emb_dtype_row_bytes, 0, (int)emb_dtype_row_bytes(EMB_INT8, 0))
    V(emb_dtype_name, 0, strcmp(emb_dtype_name((EmbDtype)9), "?"))
    V(emb_strerror, 1, emb_strerror(12345) != NULL && emb_strerror(INT32_MIN) != NULL)
    V(emb_set_logger, 0, logger_null())
    V(emb_set_cpu_mask, 0, cpu_mask_unknown_bits())
    V(emb_set_error, EMB_EINVAL, emb_set_error(EMB_EINVAL, "%s", "a message"))
    SECTION_END
}

/* table.h */
static int cases_table(int i, int *kp, Fx *f, CaseInfo *info)
{
    SECTION_BEGIN
    C(emb_table_create, EMB_ENULL, "'out'", emb_table_create(NULL, NC, D, EMB_F32, NULL))
    C(emb_table_create, EMB_EINVAL, "ncolumns -1", emb_table_create(&o->table, -1, D, EMB_F32, NULL))
    C(emb_table_create, EMB_EINVAL, "featuresize 0", emb_table_create(&o->table, NC, 0, EMB_F32, NULL))
    C(emb_table_create, EMB_EINVAL, "featuresize -3", emb_table_create(&o->table, NC, -3, EMB_F32, NULL))
    C(emb_table_create, EMB_EDTYPE, "dtype 9", emb_table_create(&o->table, NC, D, (EmbDtype)9, NULL))
    C(emb_table_create, EMB_EDTYPE, "dtype -1", emb_table_create(&o->table, NC, D, (EmbDtype)-1, NULL))
    C(emb_table_create, EMB_EOVERFLOW, "columns", emb_table_create(&o->table, INT64_MAX, D, EMB_F32, NULL))
    C(emb_table_create, EMB_EINVAL, "placement 9", create_opts(f, 9, 0, 0, 0, 0))
    C(emb_table_create, EMB_EINVAL, "placement -1", create_opts(f, -1, 0, 0, 0, 0))
    C(emb_table_create, EMB_EINVAL, "NUMA node 99", create_opts(f, EMB_PLACE_NODE, 99, 0, 0, 0))
    C(emb_table_create, EMB_EINVAL, "column_align 3", create_opts(f, 0, 0, 3, 0, 0))
    C(emb_table_create, EMB_EINVAL, "column_align 8192", create_opts(f, 0, 0, 8192, 0, 0))
    C(emb_table_create, EMB_EINVAL, "column_align -64", create_opts(f, 0, 0, -64, 0, 0))
    C(emb_table_create, EMB_EINVAL, "flags 0x20", create_opts(f, 0, 0, 0, 0x20, 0))
    C(emb_table_create, EMB_ESHAPE, "static_size 7", create_opts(f, 0, 0, 0, 0, 7))
    C(emb_table_create, EMB_ESHAPE, "static_size -4", create_opts(f, 0, 0, 0, 0, -4))
    C(emb_table_wrap, EMB_ENULL, "'out'", emb_table_wrap(NULL, o->out, NC, D, D, EMB_F32, NULL))
    C(emb_table_wrap, EMB_ENULL, "'data'", emb_table_wrap(&o->table, NULL, NC, D, D, EMB_F32, NULL))
    C(emb_table_wrap, EMB_EINVAL, "ncolumns -1", emb_table_wrap(&o->table, o->out, -1, D, D, EMB_F32, NULL))
    C(emb_table_wrap, EMB_EINVAL, "featuresize 0", emb_table_wrap(&o->table, o->out, NC, 0, D, EMB_F32, NULL))
    C(emb_table_wrap, EMB_ESTRIDE, "column_stride 3", emb_table_wrap(&o->table, o->out, NC, D, 3, EMB_F32, NULL))
    C(emb_table_wrap, EMB_ESTRIDE, "column_stride -4", emb_table_wrap(&o->table, o->out, NC, D, -4, EMB_F32, NULL))
    C(emb_table_wrap, EMB_EOVERFLOW, "of stride 4611686018427387903 overflow", emb_table_wrap(&o->table, o->out, NC, D, INT64_MAX / 2, EMB_F32, NULL))
    C(emb_table_wrap, EMB_EDTYPE, "dtype 7", emb_table_wrap(&o->table, o->out, NC, D, D, (EmbDtype)7, NULL))
    C(emb_table_custom, EMB_ENULL, "'out'", emb_table_custom(NULL, NC, D, EMB_F32, no_column, NULL, NULL, NULL))
    C(emb_table_custom, EMB_ENULL, "'fn'", custom(f, NC, D, EMB_F32, 1, 0))
    C(emb_table_custom, EMB_EINVAL, "ncolumns -2", custom(f, -2, D, EMB_F32, 0, 0))
    C(emb_table_custom, EMB_EINVAL, "featuresize 0", custom(f, NC, 0, EMB_F32, 0, 0))
    C(emb_table_custom, EMB_EDTYPE, "dtype 9", custom(f, NC, D, 9, 0, 0))
    C(emb_table_custom, EMB_EINVAL, "placement 5", custom(f, NC, D, EMB_F32, 0, 5))
    V(emb_table_destroy, 0, destroy_nulls())
    C(emb_table_column_pointer, EMB_ENULL, "'t'", emb_table_column_pointer(NULL, 0, EMB_CTX_NONE, &o->ptr))
    C(emb_table_column_pointer, EMB_ENULL, "'out'", emb_table_column_pointer(f->t, 0, EMB_CTX_NONE, NULL))
    C(emb_table_column_pointer, EMB_ERANGE, "column -1", emb_table_column_pointer(f->t, -1, EMB_CTX_NONE, &o->ptr))
    C(emb_table_column_pointer, EMB_ERANGE, "column 8", emb_table_column_pointer(f->t, NC, EMB_CTX_NONE, &o->ptr))
    C(emb_table_column_pointer, EMB_ERANGE, "column 8", emb_table_column_pointer(f->part, NC, EMB_CTX_UPDATE, &o->ptr))
    C(emb_table_column_pointer, EMB_EINVAL, "context 3", emb_table_column_pointer(f->t, 0, (EmbContext)3, &o->ptr))
    C(emb_table_column_pointer, EMB_EINVAL, "context -1", emb_table_column_pointer(f->t, 0, (EmbContext)-1, &o->ptr))
    C(emb_table_column_pointer, EMB_ERANGE, "column -1", emb_table_column_pointer(f->dyn, -1, EMB_CTX_UPDATE, &o->ptr))
    C(emb_table_column_pointer, EMB_ERANGE, "9223372036854775807", emb_table_column_pointer(f->dyn, INT64_MAX, EMB_CTX_UPDATE, &o->ptr))
    V(emb_table_ncolumns, 0, (int)emb_table_ncolumns(NULL))
    V(emb_table_featuresize, 0, emb_table_featuresize(NULL))
    V(emb_table_is_static, 0, emb_table_is_static(NULL))
    V(emb_table_dtype, EMB_F32, (int)emb_table_dtype(NULL))
    V(emb_table_name, 0, strcmp(emb_table_name(NULL), ""))
    V(emb_table_data, 1, data_of(NULL))
    V(emb_table_data, 1, data_of(f->part))
    SECTION_END
}

/* lookup.h */
static int cases_lookup(int i, int *kp, Fx *f, CaseInfo *info)
{
    SECTION_BEGIN
    C(emb_lookup, EMB_ENULL, "table", emb_lookup(NULL, &f->b, NULL, o->out, D))
    C(emb_lookup, EMB_ENULL, "batch", emb_lookup(f->t, NULL, NULL, o->out, D))
    C(emb_lookup, EMB_ENULL, "out", emb_lookup(f->t, &f->b, NULL, NULL, D))
    C(emb_lookup, EMB_ENULL, "ids", lookup_ids(f, NULL, f->offsets, 8))
    C(emb_lookup, EMB_EINVAL, "nnz -1", lookup_field(f, 0, -1))
    C(emb_lookup, EMB_EINVAL, "nbags -1", lookup_field(f, 1, -1))
    C(emb_lookup, EMB_EINVAL, "bag_size -2", lookup_field(f, 2, -2))
    C(emb_lookup, EMB_ESHAPE, "bag_size 3", lookup_field(f, 2, 3))
    C(emb_lookup_sum, EMB_EOVERFLOW, "nbags", emb_lookup_sum(f->t, f->ids, INT64_MAX / 2, 4, o->out, D))
    C(emb_lookup, EMB_EINVAL, "id_type 2", lookup_field(f, 3, 2))
    C(emb_lookup, EMB_EINVAL, "id_type -1", lookup_field(f, 3, -1))
    C(emb_lookup, EMB_EOFFSETS, "offsets", lookup_ids(f, f->ids, f->bad_offsets, 8))
    C(emb_lookup, EMB_EOFFSETS, "offsets", lookup_field(f, 0, 7))
    C(emb_lookup, EMB_ERANGE, "id 8", lookup_ids(f, f->big, NULL, 1))
    C(emb_lookup, EMB_ERANGE, "id -1", lookup_ids(f, f->big + 1, NULL, 1))
    C(emb_lookup, EMB_EINVAL, "combiner 5", lookup_pool(f, 5, 0, 0, 0))
    C(emb_lookup, EMB_EINVAL, "weights", lookup_pool(f, EMB_COMBINER_MAX, 0, 0, 0))
    C(emb_lookup, EMB_EINVAL, "combiner -1", lookup_pool(f, -1, 0, 0, 0))
    C(emb_lookup, EMB_EINVAL, "flags", lookup_pool(f, 1, 0, 0, 1u << 4))
    C(emb_lookup, EMB_EINVAL, "max_norm", lookup_pool(f, 1, NAN, 0, 0))
    C(emb_lookup, EMB_EINVAL, "max_norm", lookup_pool(f, 1, -1.0f, 0, 0))
    C(emb_lookup, EMB_ERANGE, "default_id 8", lookup_pool(f, 1, 0, NC, EMB_USE_DEFAULT_ID))
    C(emb_lookup, EMB_ERANGE, "default_id -1", lookup_pool(f, 1, 0, -1, EMB_USE_DEFAULT_ID))
    C(emb_lookup, EMB_EINVAL, "bag_size", gather_bags(f, 2))
    C(emb_lookup, EMB_ESTRIDE, "output stride 3", emb_lookup(f->t, &f->b, NULL, o->out, 3))
    C(emb_lookup, EMB_ESTRIDE, "output stride -4", emb_lookup(f->t, &f->b, NULL, o->out, -4))
    C(emb_lookup, EMB_EOVERFLOW, "output of 4 rows of stride", emb_lookup(f->t, &f->b, NULL, o->out, INT64_MAX / 2))
    C(emb_gather, EMB_ENULL, "table", emb_gather(NULL, f->ids, 2, o->out, D))
    C(emb_gather, EMB_ENULL, "ids", emb_gather(f->t, NULL, 2, o->out, D))
    C(emb_gather, EMB_ENULL, "out", emb_gather(f->t, f->ids, 2, NULL, D))
    C(emb_gather, EMB_EINVAL, "-1", emb_gather(f->t, f->ids, -1, o->out, D))
    C(emb_gather, EMB_ESTRIDE, "output stride 2", emb_gather(f->t, f->ids, 2, o->out, 2))
    C(emb_gather, EMB_ERANGE, "id 8", emb_gather(f->t, f->big, 2, o->out, D))
    C(emb_gather, EMB_ERANGE, "id 8", emb_gather(f->part, f->big, 1, o->out, D))
    C(emb_gather, EMB_ERANGE, "id 9223372036854775807", emb_gather(f->dyn, (const int64_t[1]){INT64_MAX}, 1, o->out, D))
    C(emb_gather, EMB_ERANGE, "id -1", emb_gather(f->dyn, f->big + 1, 1, o->out, D))
    C(emb_lookup_sum, EMB_ENULL, "table", emb_lookup_sum(NULL, f->ids, 2, 2, o->out, D))
    C(emb_lookup_sum, EMB_ENULL, "ids", emb_lookup_sum(f->t, NULL, 2, 2, o->out, D))
    C(emb_lookup_sum, EMB_ENULL, "out", emb_lookup_sum(f->t, f->ids, 2, 2, NULL, D))
    C(emb_lookup_sum, EMB_EINVAL, "nbags -1", emb_lookup_sum(f->t, f->ids, -1, 2, o->out, D))
    C(emb_lookup_sum, EMB_EINVAL, "bag_size -1", emb_lookup_sum(f->t, f->ids, 2, -1, o->out, D))
    C(emb_lookup_sum, EMB_ESTRIDE, "output stride 0", emb_lookup_sum(f->t, f->ids, 2, 2, o->out, 0))
    C(emb_lookup_sum, EMB_ERANGE, "id 8", emb_lookup_sum(f->t, f->big, 1, 2, o->out, D))
    C(emb_batch_validate, EMB_ENULL, "table", emb_batch_validate(NULL, &f->b, NULL))
    C(emb_batch_validate, EMB_ENULL, "batch", emb_batch_validate(f->t, NULL, NULL))
    C(emb_batch_validate, EMB_EINVAL, "combiner 7", emb_batch_validate(f->t, &f->b, &(EmbPooling){(EmbCombiner)7, 0, 0, 0}))
    C(emb_batch_validate, EMB_EOFFSETS, "offsets", emb_batch_validate(f->t, &(EmbBatch){.ids = f->ids, .nnz = 8, .nbags = 4, .offsets = f->bad_offsets}, NULL))
    SECTION_END
}

/* strategy.h */
static int cases_strategy(int i, int *kp, Fx *f, CaseInfo *info)
{
    SECTION_BEGIN
    C(emb_strategy_sequential, EMB_ENULL, "'out'", emb_strategy_sequential(NULL))
    C(emb_strategy_parallel, EMB_ENULL, "'out'", emb_strategy_parallel(NULL, NULL))
    C(emb_strategy_parallel, EMB_EINVAL, "nthreads = -1", strategy_opts(&o->strategy, 0, -1, 0, 0, 0))
    C(emb_strategy_parallel, EMB_EINVAL, "nthreads = 5000", strategy_opts(&o->strategy, 0, 5000, 0, 0, 0))
    C(emb_strategy_parallel, EMB_EINVAL, "pinning = 3", strategy_opts(&o->strategy, 0, 1, 3, 0, 0))
    C(emb_strategy_parallel, EMB_EINVAL, "pinning = -1", strategy_opts(&o->strategy, 0, 1, -1, 0, 0))
    C(emb_strategy_parallel, EMB_EINVAL, "chunks = -1", strategy_opts(&o->strategy, 0, 1, 0, -1, 0))
    C(emb_strategy_parallel, EMB_EINVAL, "num_splits = -1", strategy_opts(&o->strategy, 0, 1, 0, 0, -1))
    C(emb_strategy_prealloc_concat, EMB_ENULL, "'out'", emb_strategy_prealloc_concat(NULL, NULL))
    C(emb_strategy_prealloc_concat, EMB_EINVAL, "nthreads = -2", strategy_opts(&o->strategy, 1, -2, 0, 0, 0))
    C(emb_strategy_prealloc_concat, EMB_EINVAL, "chunks = -3", strategy_opts(&o->strategy, 1, 1, 0, -3, 0))
    C(emb_strategy_auto, EMB_ENULL, "'out'", emb_strategy_auto(NULL, NULL))
    C(emb_strategy_auto, EMB_EINVAL, "nthreads = 4097", strategy_opts(&o->strategy, 2, 4097, 0, 0, 0))
    C(emb_strategy_auto, EMB_EINVAL, "pinning = 7", strategy_opts(&o->strategy, 2, 1, 7, 0, 0))
    C(emb_strategy_auto, EMB_EINVAL, "num_splits = -5", strategy_opts(&o->strategy, 2, 1, 0, 0, -5))
    C(emb_strategy_custom, EMB_ENULL, "'out'", emb_strategy_custom(NULL, &(EmbStrategyCallbacks){0}, NULL))
    C(emb_strategy_custom, EMB_ENULL, "'cb'", emb_strategy_custom(&o->strategy, NULL, NULL))
    V(emb_strategy_destroy, 0, destroy_nulls())
    V(emb_strategy_nthreads, 0, emb_strategy_nthreads(NULL))
    V(emb_strategy_name, 0, strcmp(emb_strategy_name(NULL), "?"))
    C(emb_maplookup, EMB_ENULL, "strategy", emb_maplookup(NULL, f->tabs, 2, f->b2, NULL, &(EmbOutputs){.concat = o->out, .concat_stride = 2 * D}))
    C(emb_maplookup, EMB_ENULL, "tables", maplookup_concat(f, NULL, 2, f->b2, NULL, 2 * D, 0))
    C(emb_maplookup, EMB_ENULL, "tables[1]", maplookup_concat(f, (EmbTable *const[2]){f->t, NULL}, 2, f->b2, NULL, 2 * D, 0))
    C(emb_maplookup, EMB_ENULL, "batches", maplookup_concat(f, f->tabs, 2, NULL, NULL, 2 * D, 0))
    C(emb_maplookup, EMB_ENULL, "outputs", emb_maplookup(f->seq, f->tabs, 2, f->b2, NULL, NULL))
    C(emb_maplookup, EMB_ENOTSUP, "maplookup", emb_maplookup(f->nocb, f->tabs, 2, f->b2, NULL, &(EmbOutputs){.concat = o->out, .concat_stride = 2 * D}))
    C(emb_maplookup, EMB_EINVAL, "ntables = 0", maplookup_concat(f, f->tabs, 0, f->b2, NULL, 2 * D, 0))
    C(emb_maplookup, EMB_EINVAL, "ntables = -1", maplookup_concat(f, f->tabs, -1, f->b2, NULL, 2 * D, 0))
    C(emb_maplookup, EMB_ESHAPE, "concat_stride 7", maplookup_concat(f, f->tabs, 2, f->b2, NULL, 2 * D - 1, 0))
    C(emb_maplookup, EMB_ESHAPE, "concat_stride 8", maplookup_concat(f, f->tabs, 2, f->b2, NULL, 2 * D, 1))
    C(emb_maplookup, EMB_EINVAL, "prependrows -1", maplookup_concat(f, f->tabs, 2, f->b2, NULL, 2 * D, -1))
    C(emb_maplookup, EMB_EOVERFLOW, "concat", maplookup_concat(f, f->tabs, 2, f->b2, NULL, INT64_MAX, INT64_MAX - 2))
    C(emb_maplookup, EMB_ESHAPE, "nbags", maplookup_nbags(f, 3))
    C(emb_maplookup, EMB_ERANGE, "tables[1]", maplookup_bad_id(f))
    C(emb_maplookup, EMB_EINVAL, "tables[1]", maplookup_concat(f, f->tabs, 2, f->b2, (EmbPooling[2]){EMB_POOLING_SUM, {(EmbCombiner)9, 0, 0, 0}}, 2 * D, 0))
    C(emb_maplookup, EMB_ENULL, "neither concat nor per_table", maplookup_both_layouts(f, 0))
    C(emb_maplookup, EMB_ENULL, "tables[1]: per_table output is NULL", maplookup_per_table(f, NULL, NULL))
    C(emb_maplookup, EMB_ESTRIDE, "tables[1]: per_table output stride 3", maplookup_per_table(f, o->out + 64, (const int64_t[2]){D, D - 1}))
    C(emb_maplookup_ids, EMB_ENULL, "strategy", emb_maplookup_ids(NULL, f->tabs, 2, (const int64_t *const[2]){f->ids, f->ids}, 4, 2, &(EmbOutputs){.concat = o->out, .concat_stride = 2 * D}))
    C(emb_maplookup_ids, EMB_ENULL, "ids", maplookup_ids(f, NULL, 4, 2, 0))
    C(emb_maplookup_ids, EMB_ENULL, "tables[1]: ids is NULL", maplookup_ids(f, (const int64_t *const[2]){f->ids, NULL}, 4, 2, 0))
    C(emb_maplookup_ids, EMB_EOVERFLOW, "-1 bags", maplookup_ids(f, (const int64_t *const[2]){f->ids, f->ids}, -1, 2, 0))
    C(emb_maplookup_ids, EMB_EOVERFLOW, "-1 ids", maplookup_ids(f, (const int64_t *const[2]){f->ids, f->ids}, 4, -1, 0))
    C(emb_maplookup_ids, EMB_EOVERFLOW, "4611686018427387903 bags", maplookup_ids(f, (const int64_t *const[2]){f->ids, f->ids}, INT64_MAX / 2, 4, 0))
    C(emb_maplookup_ids, EMB_ERANGE, "tables[1]", maplookup_ids(f, (const int64_t *const[2]){f->ids, f->big}, 1, 2, 0))
    C(emb_maplookup_ids, EMB_EINVAL, "ntables = 0", emb_maplookup_ids(f->seq, f->tabs, 0, (const int64_t *const[2]){f->ids, f->ids}, 4, 2, &(EmbOutputs){.concat = o->out, .concat_stride = 2 * D}))
    C(emb_maplookup_ids3, EMB_ENULL, "strategy", emb_maplookup_ids3(NULL, f->tabs, 2, f->ids, 2, 2, &(EmbOutputs){.concat = o->out, .concat_stride = 2 * D}))
    C(emb_maplookup_ids3, EMB_ENULL, "ids", maplookup_ids(f, NULL, 2, 2, 1))
    C(emb_maplookup_ids3, EMB_EOVERFLOW, "-2 bags", maplookup_ids(f, (const int64_t *const[1]){f->ids}, -2, 2, 1))
    C(emb_maplookup_ids3, EMB_EOVERFLOW, "2305843009213693951 bags", maplookup_ids(f, (const int64_t *const[1]){f->ids}, INT64_MAX / 4, 4, 1))
    C(emb_maplookup_ids3, EMB_ENULL, "outputs", emb_maplookup_ids3(f->seq, f->tabs, 2, f->ids, 2, 2, NULL))
    SECTION_END
}

/* update.h: gradients */
static int cases_gradients(int i, int *kp, Fx *f, CaseInfo *info)
{
    SECTION_BEGIN
    C(emb_grad_create, EMB_ENULL, "'out'", emb_grad_create(NULL))
    V(emb_grad_destroy, 0, destroy_nulls())
    C(emb_lookup_backward, EMB_ENULL, "table", emb_lookup_backward(NULL, &f->b, NULL, f->dout, D, f->g))
    C(emb_lookup_backward, EMB_ENULL, "batch", emb_lookup_backward(f->t, NULL, NULL, f->dout, D, f->g))
    C(emb_lookup_backward, EMB_ENULL, "output gradient is NULL", emb_lookup_backward(f->t, &f->b, NULL, NULL, D, f->g))
    C(emb_lookup_backward, EMB_ENULL, "grad", backward_stride(f, D, NULL))
    C(emb_lookup_backward, EMB_ESTRIDE, "output gradient stride 3", backward_stride(f, 3, f->g))
    C(emb_lookup_backward, EMB_ESTRIDE, "output gradient stride -1", backward_stride(f, -1, f->g))
    C(emb_lookup_backward, EMB_EOVERFLOW, "output gradient of 4 rows of stride", backward_stride(f, INT64_MAX / 2, f->g))
    C(emb_lookup_backward, EMB_EINVAL, "nnz -1", backward_batch(f, 0, -1, NULL))
    C(emb_lookup_backward, EMB_EINVAL, "id_type 5", backward_batch(f, 3, 5, NULL))
    C(emb_lookup_backward, EMB_EINVAL, "combiner 5", backward_batch(f, 4, 0, &(EmbPooling){(EmbCombiner)5, 0, 0, 0}))
    C(emb_lookup_backward, EMB_ERANGE, "default_id 8", backward_batch(f, 4, 0, &(EmbPooling){EMB_COMBINER_SUM, 0, NC, EMB_USE_DEFAULT_ID}))
    C(emb_grad_set_sparse, EMB_ENULL, "grad", set_sparse(f, NULL, f->t, 2, 0, D, 0, D, f->ids))
    C(emb_grad_set_sparse, EMB_ENULL, "table", set_sparse(f, f->g, NULL, 2, 0, D, 0, D, f->ids))
    C(emb_grad_set_sparse, EMB_ENULL, "sparse", emb_grad_set_sparse(f->g, f->t, NULL))
    C(emb_grad_set_sparse, EMB_EINVAL, "n -1", set_sparse(f, f->g, f->t, -1, 0, D, 0, D, f->ids))
    C(emb_grad_set_sparse, EMB_EINVAL, "id_type 2", set_sparse(f, f->g, f->t, 2, 2, D, 0, D, f->ids))
    C(emb_grad_set_sparse, EMB_ESHAPE, "rows have 3 elements", set_sparse(f, f->g, f->t, 2, 0, 3, 0, D, f->ids))
    C(emb_grad_set_sparse, EMB_ESTRIDE, "stride 3", set_sparse(f, f->g, f->t, 2, 0, D, 0, 3, f->ids))
    C(emb_grad_set_sparse, EMB_EOVERFLOW, "stride 4611686018427387903", set_sparse(f, f->g, f->t, 3, 0, D, 0, INT64_MAX / 2, f->ids))
    C(emb_grad_set_sparse, EMB_ENULL, "NULL values", set_sparse(f, f->g, f->t, 2, 0, D, 1, D, f->ids))
    C(emb_grad_set_sparse, EMB_ENULL, "NULL ids", set_sparse(f, f->g, f->t, 2, 0, D, 0, D, NULL))
    C(emb_maplookup_backward, EMB_ENULL, "tables", mapback(f, NULL, 2, f->b2, 2 * D, 0, f->gs, NULL))
    C(emb_maplookup_backward, EMB_ENULL, "tables[1]", mapback(f, (EmbTable *const[2]){f->t, NULL}, 2, f->b2, 2 * D, 0, f->gs, NULL))
    C(emb_maplookup_backward, EMB_ENULL, "batches", mapback(f, f->tabs, 2, NULL, 2 * D, 0, f->gs, NULL))
    C(emb_maplookup_backward, EMB_ENULL, "grad_outputs", emb_maplookup_backward(f->tabs, 2, f->b2, NULL, NULL, f->gs))
    C(emb_maplookup_backward, EMB_ENULL, "grads", mapback(f, f->tabs, 2, f->b2, 2 * D, 0, NULL, NULL))
    C(emb_maplookup_backward, EMB_ENULL, "grads[1]", mapback(f, f->tabs, 2, f->b2, 2 * D, 0, (EmbGrad *const[2]){f->gs[0], NULL}, NULL))
    C(emb_maplookup_backward, EMB_EINVAL, "ntables 0", mapback(f, f->tabs, 0, f->b2, 2 * D, 0, f->gs, NULL))
    C(emb_maplookup_backward, EMB_EINVAL, "prependrows -1", mapback(f, f->tabs, 2, f->b2, 2 * D, -1, f->gs, NULL))
    C(emb_maplookup_backward, EMB_ESHAPE, "concat_stride 7", mapback(f, f->tabs, 2, f->b2, 2 * D - 1, 0, f->gs, NULL))
    C(emb_maplookup_backward, EMB_ERANGE, "default_id 8", mapback_default(f))
    C(emb_indexer_create, EMB_ENULL, "'out'", emb_indexer_create(NULL))
    V(emb_indexer_destroy, 0, destroy_nulls())
    C(emb_indexer_index, EMB_ENULL, "'ix'", emb_indexer_index(NULL, f->ids, 2))
    C(emb_indexer_index, EMB_ENULL, "'ids'", emb_indexer_index(f->ix, NULL, 2))
    C(emb_indexer_index, EMB_EINVAL, "n -1", emb_indexer_index(f->ix, f->ids, -1))
    V(emb_indexer_distinct, 0, (int)emb_indexer_distinct(NULL, NULL, NULL))
    SECTION_END
}

/* update.h: optimizers */
static int cases_optimizers(int i, int *kp, Fx *f, CaseInfo *info)
{
    SECTION_BEGIN
    V(emb_optimizer_defaults, EMB_EINVAL, defaults_unknown_kind(9))
    C(emb_optimizer_config_check, EMB_ENULL, "'cfg'", emb_optimizer_config_check(NULL))
    C(emb_optimizer_state_width, EMB_EINVAL, "kind 6", emb_optimizer_state_width(6, 8))
    C(emb_optimizer_state_width, EMB_EINVAL, "featuresize 0",
      emb_optimizer_state_width(EMB_OPT_ADAM, 0))
    C(emb_optimizer_config_check, EMB_EINVAL, "kind 6", cfg_check(6, 99, 0))
    C(emb_optimizer_config_check, EMB_EINVAL, "kind -1", cfg_check(-1, 99, 0))
    C(emb_optimizer_config_check, EMB_EINVAL, "lr", cfg_check(EMB_OPT_SGD, 0, 0.0f))
    C(emb_optimizer_config_check, EMB_EINVAL, "lr", cfg_check(EMB_OPT_SGD, 0, -1.0f))
    C(emb_optimizer_config_check, EMB_EINVAL, "lr", cfg_check(EMB_OPT_SGD, 0, NAN))
    C(emb_optimizer_config_check, EMB_EINVAL, "lr", cfg_check(EMB_OPT_SGD, 0, INFINITY))
    C(emb_optimizer_config_check, EMB_EINVAL, "eps", cfg_check(EMB_OPT_ADAGRAD, 1, -1.0f))
    C(emb_optimizer_config_check, EMB_EINVAL, "eps", cfg_check(EMB_OPT_ADAM, 1, NAN))
    C(emb_optimizer_config_check, EMB_EINVAL, "initial_accumulator", cfg_check(EMB_OPT_ADAGRAD, 2, -1.0f))
    C(emb_optimizer_config_check, EMB_EINVAL, "initial_accumulator", cfg_check(EMB_OPT_FTRL, 2, NAN))
    C(emb_optimizer_config_check, EMB_EINVAL, "lr_power", cfg_check(EMB_OPT_FTRL, 3, 1.0f))
    C(emb_optimizer_config_check, EMB_EINVAL, "l1", cfg_check(EMB_OPT_FTRL, 4, -1.0f))
    C(emb_optimizer_config_check, EMB_EINVAL, "l2", cfg_check(EMB_OPT_FTRL, 5, NAN))
    C(emb_optimizer_config_check, EMB_EINVAL, "beta1", cfg_check(EMB_OPT_ADAM, 6, 1.0f))
    C(emb_optimizer_config_check, EMB_EINVAL, "beta2", cfg_check(EMB_OPT_ADAM, 7, -0.5f))
    C(emb_optimizer_config_check, EMB_EINVAL, "weight_decay", cfg_check(EMB_OPT_SGD, 8, -1.0f))
    C(emb_optimizer_config_check, EMB_EINVAL, "weight_decay", cfg_check(EMB_OPT_SGD, 8, NAN))
    C(emb_optimizer_config_check, EMB_EINVAL, "bias_correction", cfg_check(EMB_OPT_ADAM, 9, 2))
    C(emb_optimizer_config_check, EMB_EINVAL, "placement 8", cfg_check(EMB_OPT_SGD, 10, 8))
    C(emb_optimizer_config_check, EMB_EINVAL, "weight_decay_mode 2", cfg_check(EMB_OPT_SGD, 11, 2))
    C(emb_optimizer_config_check, EMB_EINVAL, "NUMA node -3", cfg_check(EMB_OPT_SGD, 12, -3))
    C(emb_optimizer_create, EMB_ENULL, "'out'", emb_optimizer_create(NULL, &o->cfg))
    C(emb_optimizer_create, EMB_ENULL, "'cfg'", emb_optimizer_create(&o->opt, NULL))
    C(emb_optimizer_create, EMB_EINVAL, "lr", opt_create(f, EMB_OPT_ADAGRAD, 0, -2.0f))
    C(emb_optimizer_create, EMB_EINVAL, "kind 6", opt_create(f, 6, 99, 0))
    V(emb_optimizer_destroy, 0, destroy_nulls())
    C(emb_optimizer_get_config, EMB_ENULL, "'opt'", emb_optimizer_get_config(NULL, &o->cfg))
    C(emb_optimizer_get_config, EMB_ENULL, "'out'", emb_optimizer_get_config(f->opt, NULL))
    C(emb_optimizer_set_config, EMB_ENULL, "'opt'", emb_optimizer_set_config(NULL, &o->cfg))
    C(emb_optimizer_set_config, EMB_ENULL, "'cfg'", emb_optimizer_set_config(f->opt, NULL))
    C(emb_optimizer_set_config, EMB_EINVAL, "kind", opt_set(f, EMB_OPT_ADAM, 99, 0))
    C(emb_optimizer_set_config, EMB_EINVAL, "eps", opt_set(f, EMB_OPT_ADAGRAD, 1, -3.0f))
    C(emb_optimizer_set_lr, EMB_ENULL, "'opt'", emb_optimizer_set_lr(NULL, 0.1f))
    C(emb_optimizer_set_lr, EMB_EINVAL, "lr", emb_optimizer_set_lr(f->opt, 0.0f))
    C(emb_optimizer_set_lr, EMB_EINVAL, "lr", emb_optimizer_set_lr(f->opt, -0.5f))
    C(emb_optimizer_set_lr, EMB_EINVAL, "lr", emb_optimizer_set_lr(f->opt, NAN))
    C(emb_optimizer_set_lr, EMB_EINVAL, "lr", emb_optimizer_set_lr(f->opt, INFINITY))
    C(emb_optimizer_attach, EMB_ENULL, "'opt'", emb_optimizer_attach(NULL, f->t))
    C(emb_optimizer_attach, EMB_ENULL, "'table'", emb_optimizer_attach(f->opt, NULL))
    V(emb_optimizer_detach, 0, detach_nulls(f))
    C(emb_optimizer_set_step, EMB_ENULL, "'opt'", emb_optimizer_set_step(NULL, f->t, 1))
    C(emb_optimizer_set_step, EMB_ENULL, "'table'", emb_optimizer_set_step(f->opt, NULL, 1))
    C(emb_optimizer_set_step, EMB_EINVAL, "step -1", emb_optimizer_set_step(f->opt, f->t, -1))
    C(emb_optimizer_set_step, EMB_ENOTFOUND, "\"h\"", emb_optimizer_set_step(f->opt, f->h, 1))
    C(emb_optimizer_state, EMB_ENULL, "'opt'", emb_optimizer_state(NULL, f->t, 0, &o->table, &o->n))
    C(emb_optimizer_state, EMB_ENULL, "'table'", emb_optimizer_state(f->opt, NULL, 0, &o->table, &o->n))
    C(emb_optimizer_state, EMB_ENULL, "'out'", emb_optimizer_state(f->opt, f->t, 0, NULL, &o->n))
    C(emb_optimizer_state, EMB_EINVAL, "slot -1", emb_optimizer_state(f->opt, f->t, -1, &o->table, &o->n))
    C(emb_optimizer_state, EMB_ENOTFOUND, "\"h\"", emb_optimizer_state(f->opt, f->h, 0, &o->table, &o->n))
    C(emb_optimizer_set_step, EMB_ENULL, "'opt'", emb_optimizer_set_step(NULL, f->t, 1))
    C(emb_optimizer_set_step, EMB_ENULL, "'table'", emb_optimizer_set_step(f->opt, NULL, 1))
    C(emb_optimizer_set_step, EMB_EINVAL, "step -1", emb_optimizer_set_step(f->opt, f->t, -1))
    C(emb_optimizer_set_step, EMB_ENOTFOUND, "\"h\"", emb_optimizer_set_step(f->opt, f->h, 1))
    SECTION_END
}

/* update.h: updates */
static int cases_updates(int i, int *kp, Fx *f, CaseInfo *info)
{
    SECTION_BEGIN
    C(emb_update, EMB_ENULL, "'opt'", emb_update(NULL, f->t, f->g, f->ix, 0))
    C(emb_update, EMB_ENULL, "'table'", emb_update(f->opt, NULL, f->g, f->ix, 0))
    C(emb_update, EMB_ENULL, "'grad'", emb_update(f->opt, f->t, NULL, f->ix, 0))
    C(emb_update, EMB_ENULL, "'ix'", emb_update(f->opt, f->t, f->g, NULL, 0))
    C(emb_update, EMB_EINVAL, "flags 0x10", emb_update(f->opt, f->t, f->g, f->ix, 0x10))
    C(emb_update, EMB_EINVAL, "\"h\"", emb_update(f->opt, f->h, f->g, f->ix, 0))
    C(emb_update, EMB_EINVAL, "holds nothing", emb_update(f->opt, f->t, f->empty, f->ix, 0))
    C(emb_update, EMB_ENONFINITE, "nan", emb_update(f->opt, f->t, f->gnan, f->ixs[0], 0))
    C(emb_update, EMB_ERANGE, "id 8", emb_update(f->opt, f->t, f->gbad, f->ixs[0], 0))
    C(emb_update, EMB_ERANGE, "9223372036854775807", emb_update(f->opt, f->dyn, f->gdyn, f->ixs[0], 0))
    C(emb_update_many, EMB_ENONFINITE, "nan", emb_update_many(f->seq, f->opt, f->tabs, (const EmbGrad *const *)f->gnans, 2, f->ixs, 0))
    C(emb_update_many, EMB_ENOTSUP, "update_many", emb_update_many(f->nocb, f->opt, f->tabs, (const EmbGrad *const *)f->gs, 2, f->ixs, 0))
    C(emb_update_many_prepare, EMB_ENONFINITE, "nan", emb_update_many_prepare(f->seq, f->opt, f->tabs, (const EmbGrad *const *)f->gnans, 2, f->ixs, 0))
    C(emb_update_many, EMB_ENULL, "strategy", many(f, 0, 0, 2, 0))
    C(emb_update_many, EMB_ENULL, "opt", many(f, 0, 1, 2, 0))
    C(emb_update_many, EMB_ENULL, "tables", many(f, 0, 2, 2, 0))
    C(emb_update_many, EMB_ENULL, "grads", many(f, 0, 3, 2, 0))
    C(emb_update_many, EMB_ENULL, "indexers", many(f, 0, 4, 2, 0))
    C(emb_update_many, EMB_EINVAL, "n 0", many(f, 0, 9, 0, 0))
    C(emb_update_many, EMB_EINVAL, "n -1", many(f, 0, 9, -1, 0))
    C(emb_update_many, EMB_EINVAL, "flags 0x8", many(f, 0, 9, 2, 8))
    C(emb_update_many, EMB_ENULL, "tables[1]", many_null_entry(f, 0, 0))
    C(emb_update_many, EMB_ENULL, "grads[1]", many_null_entry(f, 0, 1))
    C(emb_update_many, EMB_ENULL, "indexers[1]", many_null_entry(f, 0, 2))
    C(emb_update_many, EMB_EINVAL, "entries 0 and 1 share a table", many_twice(f, 0))
    C(emb_update_many, EMB_EINVAL, "recorded for table \"part\" was passed with table \"t\"", many_swapped(f, 0))
    C(emb_update_many_prepare, EMB_ENULL, "strategy", many(f, 1, 0, 2, 0))
    C(emb_update_many_prepare, EMB_ENULL, "opt", many(f, 1, 1, 2, 0))
    C(emb_update_many_prepare, EMB_EINVAL, "n 0", many(f, 1, 9, 0, 0))
    C(emb_update_many_prepare, EMB_ENULL, "tables[1]", many_null_entry(f, 1, 0))
    C(emb_update_many_prepare, EMB_EINVAL, "entries 0 and 1 share a table", many_twice(f, 1))
    C(emb_update_many_prepare, EMB_EINVAL, "recorded for table \"part\" was passed with table \"t\"", many_swapped(f, 1))
    C(emb_update_many_commit, EMB_ENULL, "strategy", emb_update_many_commit(NULL))
    C(emb_update_many_commit, EMB_EINVAL, "prepared", commit_unprepared(f))
    V(emb_update_many_cancel, 0, cancel_null())
    C(emb_strategy_update_times, EMB_ENULL, "strategy", emb_strategy_update_times(NULL, &o->times))
    C(emb_strategy_update_times, EMB_ENULL, "out", emb_strategy_update_times(f->seq, NULL))
    SECTION_END
}

/* update.h: variable operations */
static int cases_variable_ops(int i, int *kp, Fx *f, CaseInfo *info)
{
    SECTION_BEGIN
    static const char *const assigns[3] = {"emb_table_assign", "emb_table_assign_add",
                                           "emb_table_assign_sub"};
    for (int op = 0; op < 3; op++) {
        const char *fn = assigns[op];
        CN(fn, EMB_ENULL, "'t'", assign(op, NULL, f->vals, NC, D, D))
        CN(fn, EMB_ENULL, "values is NULL", assign(op, f->t, NULL, NC, D, D))
        CN(fn, EMB_ESHAPE, "ncolumns 7", assign(op, f->t, f->vals, NC - 1, D, D))
        CN(fn, EMB_ESHAPE, "featuresize 3", assign(op, f->t, f->vals, NC, D - 1, D))
        CN(fn, EMB_ESTRIDE, "stride 3", assign(op, f->t, f->vals, NC, D, D - 1))
        CN(fn, EMB_EOVERFLOW, "rows of stride", assign(op, f->t, f->vals, NC, D, INT64_MAX / 4))
        CN(fn, EMB_ENONFINITE, "nan", assign(op, f->t, f->nanv, NC, D, D))
        CN(fn, EMB_ENOTSUP, "dynamic", assign(op, f->dyn, f->vals, NC, D, D))
    }
    C(emb_table_read, EMB_ENULL, "'t'", emb_table_read(NULL, o->out, D))
    C(emb_table_read, EMB_ENULL, "out is NULL", emb_table_read(f->t, NULL, D))
    C(emb_table_read, EMB_ESTRIDE, "out_stride 3", emb_table_read(f->t, o->out, D - 1))
    C(emb_table_read, EMB_EOVERFLOW, "rows of out_stride", emb_table_read(f->t, o->out, INT64_MAX / 4))
    C(emb_table_read, EMB_ENOTSUP, "dynamic", emb_table_read(f->dyn, o->out, D))
    C(emb_table_changed_since, EMB_ENULL, "'table'", emb_table_changed_since(NULL, 0, o->ids, o->out, D, 8, &o->n, &o->row))
    C(emb_table_changed_since, EMB_ENULL, "'n'", emb_table_changed_since(f->t, 0, o->ids, o->out, D, 8, NULL, &o->row))
    C(emb_table_changed_since, EMB_EINVAL, "cap -1", emb_table_changed_since(f->t, 0, o->ids, o->out, D, -1, &o->n, &o->row))
    C(emb_table_changed_since, EMB_EINVAL, "cap 8 with ids", emb_table_changed_since(f->t, 0, NULL, o->out, D, 8, &o->n, &o->row))
    C(emb_table_changed_since, EMB_EINVAL, "since -1", emb_table_changed_since(f->t, -1, o->ids, o->out, D, 8, &o->n, &o->row))
    C(emb_table_changed_since, EMB_EINVAL, "since 9223372036854775807", emb_table_changed_since(f->t, INT64_MAX, o->ids, o->out, D, 8, &o->n, &o->row))
    C(emb_table_changed_since, EMB_ESTRIDE, "stride 3", emb_table_changed_since(f->t, 0, o->ids, o->out, D - 1, 8, &o->n, &o->row))
    C(emb_table_changed_since, EMB_EOVERFLOW, "overflow", emb_table_changed_since(f->t, 0, o->ids, o->out, INT64_MAX / 2, 8, &o->n, &o->row))
    C(emb_table_changed_since, EMB_ENOTSUP, "dynamic", emb_table_changed_since(f->dyn, 0, o->ids, o->out, D, 8, &o->n, &o->row))
    C(emb_table_quantize, EMB_ENULL, "'dst'", emb_table_quantize(NULL, f->t))
    C(emb_table_quantize, EMB_ENULL, "'src'", emb_table_quantize(f->h, NULL))
    C(emb_table_quantize, EMB_EINVAL, "both source", emb_table_quantize(f->t, f->t))
    C(emb_table_quantize, EMB_ESHAPE, "source into", emb_table_quantize(f->s3, f->t))
    C(emb_table_quantize, EMB_ENOTSUP, "dynamic", emb_table_quantize(f->dyn, f->t))
    static const char *const scatters[5] = {"emb_table_scatter_update", "emb_table_scatter_add",
                                            "emb_table_scatter_sub", "emb_table_scatter_mul",
                                            "emb_table_scatter_div"};
    for (int op = 0; op < 5; op++) {
        const char *fn = scatters[op];
        CN(fn, EMB_ENULL, "'t'", scatter(f, op, NULL, f->ids, 2, f->vals, D))
        CN(fn, EMB_ENULL, "'ids'", scatter(f, op, f->t, NULL, 2, f->vals, D))
        CN(fn, EMB_ENULL, "updates is NULL", scatter(f, op, f->t, f->ids, 2, NULL, D))
        CN(fn, EMB_EINVAL, "n -1", scatter(f, op, f->t, f->ids, -1, f->vals, D))
        CN(fn, EMB_ESTRIDE, "stride 3", scatter(f, op, f->t, f->ids, 2, f->vals, D - 1))
        CN(fn, EMB_EOVERFLOW, "rows of stride", scatter(f, op, f->t, f->ids, 3, f->vals, INT64_MAX / 2))
        CN(fn, EMB_ERANGE, "id 8", scatter(f, op, f->t, f->big, 1, f->vals, D))
        CN(fn, EMB_ERANGE, "id -1", scatter(f, op, f->part, f->big + 1, 1, f->vals, D))
        CN(fn, EMB_ERANGE, "id -1", scatter(f, op, f->dyn, f->big + 1, 1, f->vals, D))
        CN(fn, EMB_ENONFINITE, "nan", scatter(f, op, f->t, f->ids, 2, f->nanv, D))
        CN(fn, EMB_ENONFINITE, "nan", scatter(f, op, f->dyn, f->ids, 2, f->nanv, D))
    }
    C(emb_sparse_mask, EMB_ENULL, "'in'", emb_sparse_mask(NULL, f->dup, 2, &o->sparse, o->ids, o->out, D))
    C(emb_sparse_mask, EMB_ENULL, "mask_ids", sparse_mask(f, 4, 0, D, 2, 1, 0, 0, 0, D))
    C(emb_sparse_mask, EMB_ENULL, "'out'", sparse_mask(f, 4, 0, D, 2, 0, 1, 0, 0, D))
    C(emb_sparse_mask, EMB_ENULL, "out_ids", sparse_mask(f, 4, 0, D, 2, 0, 0, 1, 0, D))
    C(emb_sparse_mask, EMB_ENULL, "out_values", sparse_mask(f, 4, 0, D, 2, 0, 0, 0, 1, D))
    C(emb_sparse_mask, EMB_EINVAL, "nmask -1", sparse_mask(f, 4, 0, D, -1, 0, 0, 0, 0, D))
    C(emb_sparse_mask, EMB_EINVAL, "n -1", sparse_mask(f, -1, 0, D, 2, 0, 0, 0, 0, D))
    C(emb_sparse_mask, EMB_EINVAL, "featuresize 0", sparse_mask(f, 4, 0, 0, 2, 0, 0, 0, 0, D))
    C(emb_sparse_mask, EMB_EINVAL, "id_type 3", sparse_mask(f, 4, 3, D, 2, 0, 0, 0, 0, D))
    C(emb_sparse_mask, EMB_ESTRIDE, "out_stride 3", sparse_mask(f, 4, 0, D, 2, 0, 0, 0, 0, D - 1))
    C(emb_sparse_mask, EMB_EOVERFLOW, "out_stride 4611686018427387903 overflow", sparse_mask(f, 4, 0, D, 2, 0, 0, 0, 0, INT64_MAX / 2))
    SECTION_END
}

/* store.h: initializers and the store */
static int cases_store(int i, int *kp, Fx *f, CaseInfo *info)
{
    SECTION_BEGIN
    C(emb_table_initialize, EMB_ENULL, "'table'", initialize(NULL, EMB_INIT_ONES, 0, 0))
    C(emb_table_initialize, EMB_ENULL, "'init'", emb_table_initialize(f->t, NULL))
    C(emb_table_initialize, EMB_EINVAL, "kind 8", initialize(f->t, 8, 0, 0))
    C(emb_table_initialize, EMB_EINVAL, "kind -1", initialize(f->t, -1, 0, 0))
    C(emb_table_initialize, EMB_EINVAL, "b", initialize(f->t, EMB_INIT_UNIFORM, 1, 0))
    C(emb_table_initialize, EMB_EINVAL, "stddev", initialize(f->t, EMB_INIT_NORMAL, 0, -1))
    C(emb_table_initialize, EMB_EINVAL, "stddev", initialize(f->t, EMB_INIT_TRUNCATED_NORMAL, 0, -1))
    C(emb_table_initialize, EMB_ENONFINITE, "nan", initialize(f->t, EMB_INIT_CONSTANT, NAN, 0))
    C(emb_table_initialize, EMB_ENONFINITE, "inf", initialize(f->dyn, EMB_INIT_UNIFORM, 0, INFINITY))
    C(emb_table_initialize, EMB_EINVAL, "UNIFORM_UNIT_SCALING", initialize(f->dyn, EMB_INIT_UNIFORM_UNIT_SCALING, 1, 0))
    C(emb_store_create, EMB_ENULL, "'out'", emb_store_create(NULL))
    V(emb_store_destroy, 0, destroy_nulls())
    C(emb_store_get, EMB_ENULL, "'s'", emb_store_get(NULL, &(EmbVariableSpec){.name = "x", .ncolumns = 1, .featuresize = 1}, EMB_REUSE_NO, &o->table))
    C(emb_store_get, EMB_ENULL, "'spec'", emb_store_get(f->store, NULL, EMB_REUSE_NO, &o->table))
    C(emb_store_get, EMB_ENULL, "'out'", emb_store_get(f->store, &(EmbVariableSpec){.name = "x", .ncolumns = 1, .featuresize = 1}, EMB_REUSE_NO, NULL))
    C(emb_store_get, EMB_ENULL, "spec->name", store_get(f, NULL, NC, D, 0, 0, 0, 0, 0))
    C(emb_store_get, EMB_EINVAL, "name", store_get(f, "", NC, D, 0, 0, 0, 0, 0))
    C(emb_store_get, EMB_EINVAL, "name", store_get(f, long_name, NC, D, 0, 0, 0, 0, 0))
    C(emb_store_get, EMB_EINVAL, "reuse 3", store_get(f, "x", NC, D, 0, 0, 0, 3, 0))
    C(emb_store_get, EMB_EINVAL, "reuse -1", store_get(f, "x", NC, D, 0, 0, 0, -1, 0))
    C(emb_store_get, EMB_EEXIST, "\"s\"", store_get(f, "s", NC, D, 0, 0, 0, EMB_REUSE_NO, 0))
    C(emb_store_get, EMB_ENOTFOUND, "\"x\"", store_get(f, "x", NC, D, 0, 0, 0, EMB_REUSE_YES, 0))
    C(emb_store_get, EMB_ESHAPE, "\"s\"", store_get(f, "s", NC + 1, D, 0, 0, 0, EMB_REUSE_AUTO, 0))
    C(emb_store_get, EMB_ESHAPE, "\"s\"", store_get(f, "s", NC, D, EMB_F16, 0, 0, EMB_REUSE_YES, 0))
    C(emb_store_get, EMB_ESHAPE, "\"s\"", store_get(f, "s", 0, D, 0, 0, 0, EMB_REUSE_AUTO, 1))
    C(emb_store_get, EMB_EINVAL, "ncolumns -1", store_get(f, "x", -1, D, 0, 0, 0, 0, 0))
    C(emb_store_get, EMB_EINVAL, "sketch_width 1073741824", emb_store_get(f->store, &(EmbVariableSpec){.name = "x", .featuresize = 1, .dynamic = &(EmbDynamicOptions){.admit_after = 2, .sketch_width = 1 << 30}}, EMB_REUSE_NO, &o->table))
    C(emb_store_get, EMB_EINVAL, "placement 9", emb_store_get(f->store, &(EmbVariableSpec){.name = "x", .ncolumns = 1, .featuresize = 1, .options.placement = (EmbPlacement)9}, EMB_REUSE_NO, &o->table))
    C(emb_store_get, EMB_EINVAL, "kind 12", emb_store_get(f->store, &(EmbVariableSpec){.name = "x", .ncolumns = 1, .featuresize = 1, .init.kind = (EmbInitKind)12}, EMB_REUSE_NO, &o->table))
    C(emb_store_get, EMB_EINVAL, "kind 12", emb_store_get(f->store, &(EmbVariableSpec){.name = "x", .ncolumns = 4, .featuresize = 1, .nshards = 2, .partition = EMB_PARTITION_MOD, .init.kind = (EmbInitKind)12}, EMB_REUSE_NO, &o->table))
    C(emb_store_get, EMB_EINVAL, "featuresize 0", store_get(f, "x", NC, 0, 0, 0, 0, 0, 0))
    C(emb_store_get, EMB_EDTYPE, "dtype 9", store_get(f, "x", NC, D, 9, 0, 0, 0, 0))
    C(emb_store_get, EMB_EINVAL, "nshards -2", store_get(f, "x", NC, D, 0, -2, 0, 0, 0))
    C(emb_store_get, EMB_EINVAL, "partition", store_get(f, "x", NC, D, 0, 2, 1u << 7, 0, 0))
    C(emb_store_get, EMB_EINVAL, "partition", store_get(f, "x", NC, D, 0, 2, 0, 0, 0))
    C(emb_store_get, EMB_EINVAL, "ncolumns 8", store_get(f, "x", NC, D, 0, 0, 0, 0, 1))
    C(emb_store_get, EMB_EINVAL, "EMB_PARTITION_MOD", store_get(f, "x", 0, D, 0, 2, EMB_PARTITION_DIV, 0, 1))
    C(emb_store_find, EMB_ENULL, "'s'", emb_store_find(NULL, "s", &o->table))
    C(emb_store_find, EMB_ENULL, "'name'", emb_store_find(f->store, NULL, &o->table))
    C(emb_store_find, EMB_ENULL, "'out'", emb_store_find(f->store, "s", NULL))
    C(emb_store_find, EMB_ENOTFOUND, "\"nope\"", emb_store_find(f->store, "nope", &o->table))
    C(emb_store_list, EMB_ENULL, "'s'", emb_store_list(NULL, 0, &o->table, 1, &o->n))
    C(emb_store_list, EMB_ENULL, "'n'", emb_store_list(f->store, 0, &o->table, 1, NULL))
    C(emb_store_list, EMB_ENULL, "'tables'", emb_store_list(f->store, 0, NULL, 1, &o->n))
    C(emb_store_list, EMB_EINVAL, "cap -1", emb_store_list(f->store, 0, &o->table, -1, &o->n))
    C(emb_store_uninitialized, EMB_ENULL, "'s'", emb_store_uninitialized(NULL, &o->table, 1, &o->n))
    C(emb_store_uninitialized, EMB_ENULL, "'n'", emb_store_uninitialized(f->store, &o->table, 1, NULL))
    C(emb_store_uninitialized, EMB_ENULL, "'tables'", emb_store_uninitialized(f->store, NULL, 1, &o->n))
    C(emb_store_uninitialized, EMB_EINVAL, "cap -5", emb_store_uninitialized(f->store, &o->table, -5, &o->n))
    C(emb_store_mark_initialized, EMB_ENULL, "'s'", emb_store_mark_initialized(NULL, f->st))
    C(emb_store_mark_initialized, EMB_ENULL, "'table'", emb_store_mark_initialized(f->store, NULL))
    C(emb_store_mark_initialized, EMB_ENOTFOUND, "\"t\"", emb_store_mark_initialized(f->store, f->t))
    SECTION_END
}

/* store.h: checkpoints */
static int cases_checkpoints(int i, int *kp, Fx *f, CaseInfo *info)
{
    SECTION_BEGIN
    C(emb_saver_create, EMB_ENULL, "'out'", emb_saver_create(NULL, f->dir, "x", NULL))
    C(emb_saver_create, EMB_ENULL, "'dir'", emb_saver_create(&o->saver, NULL, "x", NULL))
    C(emb_saver_create, EMB_ENULL, "'prefix'", emb_saver_create(&o->saver, f->dir, NULL, NULL))
    C(emb_saver_create, EMB_EINVAL, "prefix", saver_opts(f, "", 0, NULL, 0))
    C(emb_saver_create, EMB_EINVAL, "prefix", saver_opts(f, "a/b", 0, NULL, 0))
    C(emb_saver_create, EMB_EINVAL, "prefix", saver_opts(f, ".x", 0, NULL, 0))
    C(emb_saver_create, EMB_EINVAL, "prefix", saver_opts(f, "a b", 0, NULL, 0))
    C(emb_saver_create, EMB_EINVAL, "prefix", saver_opts(f, long_prefix, 0, NULL, 0))
    C(emb_saver_create, EMB_EINVAL, "keep_every_n_hours", saver_opts(f, "x", NAN, NULL, 0))
    C(emb_saver_create, EMB_EINVAL, "keep_every_n_hours", saver_opts(f, "x", -1, NULL, 0))
    C(emb_saver_create, EMB_EINVAL, "keep_every_n_hours", saver_opts(f, "x", 1e10, NULL, 0))
    C(emb_saver_create, EMB_EINVAL, "var_list: 2 entries at (nil)", saver_opts(f, "x", 0, NULL, 2))
    C(emb_saver_create, EMB_EINVAL, "var_list: -1 entries", saver_opts(f, "x", 0, f->vars, -1))
    C(emb_saver_create, EMB_ENULL, "var_list entry 1 has no table", saver_opts(f, "x", 0, (EmbCheckpointVar[2]){{"a", f->t}, {"b", NULL}}, 2))
    C(emb_saver_create, EMB_EIO, "\"/dev/null\": not a directory", emb_saver_create(&o->saver, "/dev/null/dir", "x", NULL))
    C(emb_saver_create, EMB_EIO, "m-1.safetensors", emb_saver_create(&o->saver, f->ckpt, "x", NULL))
    C(emb_saver_create, EMB_EINVAL, "full_every -1", emb_saver_create(&o->saver, f->dir, "x", &(EmbSaverOptions){.full_every = -1}))
    V(emb_saver_destroy, 0, destroy_nulls())
    C(emb_store_export, EMB_ENULL, "'path'", emb_store_export(f->store, NULL, NULL))
    C(emb_store_export, EMB_ENULL, "no store", emb_store_export(NULL, f->ckpt, NULL))
    C(emb_store_export, EMB_EINVAL, "dtype 1", emb_store_export(f->store, f->ckpt, &(EmbExportOptions){.dtype = EMB_F16}))
    C(emb_store_export, EMB_EINVAL, "var_list: -1", emb_store_export(f->store, f->ckpt, &(EmbExportOptions){.nvars = -1}))
    C(emb_store_export, EMB_EINVAL, "global_step -1", emb_store_export(f->store, f->ckpt, &(EmbExportOptions){.global_step = -1}))
    C(emb_saver_save, EMB_ENULL, "'s'", emb_saver_save(NULL, NULL, 1, NULL, 0))
    C(emb_saver_save, EMB_EINVAL, "global_step -1", save_to(f, -1, NULL, 0))
    C(emb_saver_save, EMB_EINVAL, "8 bytes", save_to(f, 2, o->path, sizeof o->path))
    C(emb_saver_save, EMB_ENULL, "store", save_store_null(f))
    C(emb_checkpoint_restore, EMB_ENULL, "'store'", emb_checkpoint_restore(NULL, f->ckpt, &o->n))
    C(emb_checkpoint_restore, EMB_ENULL, "'path'", emb_checkpoint_restore(f->store, NULL, &o->n))
    C(emb_checkpoint_restore, EMB_EIO, "/nonexistent", emb_checkpoint_restore(f->store, "/nonexistent/x.safetensors", &o->n))
    C(emb_checkpoint_restore, EMB_ENOTFOUND, "\"t\"", emb_checkpoint_restore(f->store, f->ckpt, &o->n))
    C(emb_checkpoint_restore_ex, EMB_ENULL, "'path'", emb_checkpoint_restore_ex(NULL, NULL, &(EmbRestoreOptions){0}, &o->n))
    C(emb_checkpoint_restore_ex, EMB_ENULL, "store", emb_checkpoint_restore_ex(NULL, f->ckpt, &(EmbRestoreOptions){0}, &o->n))
    C(emb_checkpoint_restore_ex, EMB_EINVAL, "var_list: -1 entries", restore_vars(f, "t", f->t, -1, NULL))
    C(emb_checkpoint_restore_ex, EMB_EINVAL, "var_list: 1 entries at (nil)", emb_checkpoint_restore_ex(NULL, f->ckpt, &(EmbRestoreOptions){.nvars = 1}, &o->n))
    C(emb_checkpoint_restore_ex, EMB_ENOTFOUND, "\"nope\"", restore_vars(f, "nope", f->t, 1, NULL))
    C(emb_checkpoint_restore_ex, EMB_ENULL, "table", restore_vars(f, "t", NULL, 1, NULL))
    C(emb_checkpoint_restore_ex, EMB_ESHAPE, "\"t\"", restore_vars(f, "t", f->h, 1, NULL))
    C(emb_checkpoint_restore_ex, EMB_ESHAPE, "\"dyn\"", restore_vars(f, "dyn", f->t, 1, NULL))
    C(emb_checkpoint_restore_ex, EMB_ESHAPE, "\"t\"", restore_vars(f, "t", f->dyn, 1, NULL))
    C(emb_checkpoint_restore_ex, EMB_EINVAL, "holds adagrad state; the optimizer is adam", restore_other_kind(f))
    C(emb_checkpoint_latest, EMB_ENULL, "'dir'", emb_checkpoint_latest(NULL, o->path, sizeof o->path))
    C(emb_checkpoint_latest, EMB_ENULL, "'path'", emb_checkpoint_latest(f->dir, NULL, 8))
    C(emb_checkpoint_latest, EMB_EINVAL, "8", emb_checkpoint_latest(f->dir, o->path, sizeof o->path))
    C(emb_checkpoint_latest, EMB_EINVAL, "0", emb_checkpoint_latest(f->dir, o->path, 0))
    C(emb_checkpoint_latest, EMB_ENOTFOUND, "/nonexistent", emb_checkpoint_latest("/nonexistent", o->path, sizeof o->path))
    C(emb_checkpoint_open, EMB_ENULL, "'out'", emb_checkpoint_open(NULL, f->ckpt, 0))
    C(emb_checkpoint_open, EMB_ENULL, "'path'", emb_checkpoint_open(&o->ck, NULL, 0))
    C(emb_checkpoint_open, EMB_EINVAL, "flags 0x20", emb_checkpoint_open(&o->ck, f->ckpt, 0x20))
    C(emb_checkpoint_open, EMB_EIO, "/nonexistent", emb_checkpoint_open(&o->ck, "/nonexistent/x", 0))
    V(emb_checkpoint_close, 0, destroy_nulls())
    V(emb_checkpoint_count, 0, (int)emb_checkpoint_count(NULL))
    C(emb_checkpoint_entry, EMB_ENULL, "'ck'", emb_checkpoint_entry(NULL, 0, &o->entry))
    C(emb_checkpoint_entry, EMB_ENULL, "'out'", emb_checkpoint_entry(f->ck, 0, NULL))
    C(emb_checkpoint_entry, EMB_ERANGE, "-1", emb_checkpoint_entry(f->ck, -1, &o->entry))
    C(emb_checkpoint_entry, EMB_ERANGE, "99", emb_checkpoint_entry(f->ck, 99, &o->entry))
    V(emb_checkpoint_global_step, 0, (int)emb_checkpoint_global_step(NULL))
    C(emb_checkpoint_optimizer, EMB_ENULL, "'ck'", emb_checkpoint_optimizer(NULL, &o->cfg))
    C(emb_checkpoint_optimizer, EMB_ENULL, "'out'", emb_checkpoint_optimizer(f->ck, NULL))
    C(emb_checkpoint_table, EMB_ENULL, "'ck'", emb_checkpoint_table(NULL, "t", &o->table))
    C(emb_checkpoint_table, EMB_ENULL, "'name'", emb_checkpoint_table(f->ck, NULL, &o->table))
    C(emb_checkpoint_table, EMB_ENULL, "'out'", emb_checkpoint_table(f->ck, "t", NULL))
    C(emb_checkpoint_table, EMB_ENOTFOUND, "\"nope\"", emb_checkpoint_table(f->ck, "nope", &o->table))
    C(emb_checkpoint_table, EMB_EINVAL, "EMB_CHECKPOINT_MMAP", emb_checkpoint_table(f->cklist, "t", &o->table))
    SECTION_END
}

/* partition.h */
static int cases_partition(int i, int *kp, Fx *f, CaseInfo *info)
{
    SECTION_BEGIN
    C(emb_table_partitioned, EMB_ENULL, "'out'", emb_table_partitioned(NULL, f->tabs, 2, EMB_PARTITION_MOD, NULL))
    C(emb_table_partitioned, EMB_ENULL, "'shards'", emb_table_partitioned(&o->table, NULL, 2, EMB_PARTITION_MOD, NULL))
    C(emb_table_partitioned, EMB_ENULL, "shard 1", partitioned(f, f->t, NULL, 2, EMB_PARTITION_MOD))
    C(emb_table_partitioned, EMB_EINVAL, "nshards 0", partitioned(f, f->t, f->h, 0, EMB_PARTITION_MOD))
    C(emb_table_partitioned, EMB_EINVAL, "nshards -1", partitioned(f, f->t, f->h, -1, EMB_PARTITION_MOD))
    C(emb_table_partitioned, EMB_EINVAL, "flags 0x0", partitioned(f, f->t, f->part, 2, 0))
    C(emb_table_partitioned, EMB_EINVAL, "flags 0x3", partitioned(f, f->t, f->part, 2, EMB_PARTITION_MOD | EMB_PARTITION_DIV))
    C(emb_table_partitioned, EMB_EINVAL, "flags 0x41", partitioned(f, f->t, f->part, 2, EMB_PARTITION_MOD | 64))
    C(emb_table_partitioned, EMB_EINVAL, "shard 1 is shard 0", partitioned(f, f->t, f->t, 2, EMB_PARTITION_MOD))
    C(emb_table_partitioned, EMB_EDTYPE, "shard 1 has dtype f16", partitioned(f, f->t, f->h, 2, EMB_PARTITION_MOD))
    C(emb_table_partitioned, EMB_ESHAPE, "shard 0 holds 8 rows", partitioned(f, f->t, f->s3, 2, EMB_PARTITION_DIV))
    C(emb_table_partitioned, EMB_ESHAPE, "shard 1 has featuresize 2", partitioned(f, f->t, f->d2, 2, EMB_PARTITION_MOD))
    C(emb_table_partitioned, EMB_EINVAL, "dynamic", partitioned(f, f->t, f->dyn, 2, EMB_PARTITION_MOD))
    C(emb_table_partitioned, EMB_ESHAPE, "static_size 8", emb_table_partitioned(&o->table, f->tabs, 2, EMB_PARTITION_MOD, &(EmbTableOptions){.static_size = 8}))
    C(emb_table_partitioned_create, EMB_ENULL, "'out'", emb_table_partitioned_create(NULL, NC, D, EMB_F32, 2, EMB_PARTITION_MOD, NULL))
    C(emb_table_partitioned_create, EMB_EINVAL, "nrows -1", emb_table_partitioned_create(&o->table, -1, D, EMB_F32, 2, EMB_PARTITION_MOD, NULL))
    C(emb_table_partitioned_create, EMB_EINVAL, "featuresize 0", emb_table_partitioned_create(&o->table, NC, 0, EMB_F32, 2, EMB_PARTITION_MOD, NULL))
    C(emb_table_partitioned_create, EMB_EDTYPE, "dtype 9", emb_table_partitioned_create(&o->table, NC, D, (EmbDtype)9, 2, EMB_PARTITION_MOD, NULL))
    C(emb_table_partitioned_create, EMB_EINVAL, "nshards 0", emb_table_partitioned_create(&o->table, NC, D, EMB_F32, 0, EMB_PARTITION_MOD, NULL))
    C(emb_table_partitioned_create, EMB_EINVAL, "nshards -4", emb_table_partitioned_create(&o->table, NC, D, EMB_F32, -4, EMB_PARTITION_MOD, NULL))
    C(emb_table_partitioned_create, EMB_EINVAL, "flags 0x8", emb_table_partitioned_create(&o->table, NC, D, EMB_F32, 2, 8, NULL))
    C(emb_table_partitioned_create, EMB_ENOMEM, "bytes", emb_table_partitioned_create(&o->table, INT64_MAX / 64, 8, EMB_F32, 4, EMB_PARTITION_DIV, NULL))
    C(emb_table_partitioned_create, EMB_EINVAL, "column_align 3", emb_table_partitioned_create(&o->table, NC, D, EMB_F32, 2, EMB_PARTITION_DIV, &(EmbTableOptions){.column_align = 3}))
    C(emb_table_partitioned_create, EMB_EINVAL, "placement 6", emb_table_partitioned_create(&o->table, NC, D, EMB_F32, 2, EMB_PARTITION_DIV, &(EmbTableOptions){.placement = (EmbPlacement)6}))
    V(emb_table_nshards, 0, emb_table_nshards(NULL) + emb_table_nshards(f->t))
    V(emb_table_shard, 1, emb_table_shard(f->part, 3) == NULL && emb_table_shard(f->part, -1) == NULL && emb_table_shard(f->t, 0) == NULL && emb_table_shard(NULL, 0) == NULL)
    V(emb_table_partition_mode, 0, (int)(emb_table_partition_mode(NULL) | emb_table_partition_mode(f->t)))
    C(emb_partition_shard_rows, EMB_EINVAL, "-1 rows", (int)emb_partition_shard_rows(-1, 2, 0))
    C(emb_partition_shard_rows, EMB_EINVAL, "0 shards", (int)emb_partition_shard_rows(NC, 0, 0))
    C(emb_partition_shard_rows, EMB_EINVAL, "shard 2", (int)emb_partition_shard_rows(NC, 2, 2))
    C(emb_partition_shard_rows, EMB_EINVAL, "shard -1", (int)emb_partition_shard_rows(NC, 2, -1))
    C(emb_partition_locate, EMB_ENULL, "'shard'", emb_partition_locate(NC, 2, EMB_PARTITION_MOD, 0, NULL, &o->row))
    C(emb_partition_locate, EMB_ENULL, "'row'", emb_partition_locate(NC, 2, EMB_PARTITION_MOD, 0, &o->n32, NULL))
    C(emb_partition_locate, EMB_EINVAL, "flags 0x0", emb_partition_locate(NC, 2, 0, 0, &o->n32, &o->row))
    C(emb_partition_locate, EMB_EINVAL, "flags 0x4", emb_partition_locate(NC, 2, EMB_PARTITION_OWN_SHARDS, 0, &o->n32, &o->row))
    C(emb_partition_locate, EMB_EINVAL, "nrows -1", emb_partition_locate(-1, 2, EMB_PARTITION_MOD, 0, &o->n32, &o->row))
    C(emb_partition_locate, EMB_EINVAL, "nshards 0", emb_partition_locate(NC, 0, EMB_PARTITION_DIV, 0, &o->n32, &o->row))
    C(emb_partition_locate, EMB_ERANGE, "id 8", emb_partition_locate(NC, 2, EMB_PARTITION_DIV, NC, &o->n32, &o->row))
    C(emb_partition_locate, EMB_ERANGE, "id -1", emb_partition_locate(NC, 2, EMB_PARTITION_DIV, -1, &o->n32, &o->row))
    C(emb_partition_fixed_size, EMB_ENULL, "'nshards'", emb_partition_fixed_size(NC, 2, NULL))
    C(emb_partition_fixed_size, EMB_EINVAL, "nrows -1", emb_partition_fixed_size(-1, 2, &o->n32))
    C(emb_partition_fixed_size, EMB_EINVAL, "num_shards 0", emb_partition_fixed_size(NC, 0, &o->n32))
    C(emb_partition_max_shard_bytes, EMB_ENULL, "'nshards'", emb_partition_max_shard_bytes(NC, D, EMB_F32, 64, 0, NULL))
    C(emb_partition_max_shard_bytes, EMB_EINVAL, "nrows -1", emb_partition_max_shard_bytes(-1, D, EMB_F32, 64, 0, &o->n32))
    C(emb_partition_max_shard_bytes, EMB_EINVAL, "featuresize 0", emb_partition_max_shard_bytes(NC, 0, EMB_F32, 64, 0, &o->n32))
    C(emb_partition_max_shard_bytes, EMB_EINVAL, "max_shard_bytes 0", emb_partition_max_shard_bytes(NC, D, EMB_F32, 0, 0, &o->n32))
    C(emb_partition_max_shard_bytes, EMB_EINVAL, "max_shards -1", emb_partition_max_shard_bytes(NC, D, EMB_F32, 64, -1, &o->n32))
    C(emb_partition_max_shard_bytes, EMB_EDTYPE, "dtype 9", emb_partition_max_shard_bytes(NC, D, (EmbDtype)9, 64, 0, &o->n32))
    C(emb_partition_max_shard_bytes, EMB_EOVERFLOW, "int32", emb_partition_max_shard_bytes(INT64_MAX, 1, EMB_F32, 1, 0, &o->n32))
    C(emb_partition_min_slice_bytes, EMB_ENULL, "'nshards'", emb_partition_min_slice_bytes(NC, D, EMB_F32, 64, 2, NULL))
    C(emb_partition_min_slice_bytes, EMB_EINVAL, "nrows -1", emb_partition_min_slice_bytes(-1, D, EMB_F32, 64, 2, &o->n32))
    C(emb_partition_min_slice_bytes, EMB_EINVAL, "min_slice_bytes -1", emb_partition_min_slice_bytes(NC, D, EMB_F32, -1, 2, &o->n32))
    C(emb_partition_min_slice_bytes, EMB_EINVAL, "max_partitions 0", emb_partition_min_slice_bytes(NC, D, EMB_F32, 64, 0, &o->n32))
    C(emb_partition_min_slice_bytes, EMB_EDTYPE, "dtype -1", emb_partition_min_slice_bytes(NC, D, (EmbDtype)-1, 64, 2, &o->n32))
    SECTION_END
}

/* dynamic.h */
static int cases_dynamic(int i, int *kp, Fx *f, CaseInfo *info)
{
    SECTION_BEGIN
    C(emb_table_dynamic_create, EMB_ENULL, "'out'", emb_table_dynamic_create(NULL, D, EMB_F32, NULL))
    C(emb_table_dynamic_create, EMB_EINVAL, "featuresize 0", dyn_create(f, 0, EMB_F32, 0, 0))
    C(emb_table_dynamic_create, EMB_EDTYPE, "dtype 9", dyn_create(f, D, 9, 0, 0))
    C(emb_table_dynamic_create, EMB_EINVAL, "capacity -1", dyn_create(f, D, EMB_F32, 1, -1))
    C(emb_table_dynamic_create, EMB_EINVAL, "max_rows -1", dyn_create(f, D, EMB_F32, 2, -1))
    C(emb_table_dynamic_create, EMB_EINVAL, "admit_after -1", dyn_create(f, D, EMB_F32, 3, -1))
    C(emb_table_dynamic_create, EMB_EINVAL, "sketch_width -1", dyn_create(f, D, EMB_F32, 4, -1))
    C(emb_table_dynamic_create, EMB_EINVAL, "sketch_width 1073741824", dyn_create(f, D, EMB_F32, 4, 1 << 30))
    C(emb_table_dynamic_create, EMB_EINVAL, "missing mode 3", dyn_create(f, D, EMB_F32, 5, 3))
    C(emb_table_dynamic_create, EMB_EINVAL, "missing mode -1", dyn_create(f, D, EMB_F32, 5, -1))
    C(emb_table_dynamic_create, EMB_EINVAL, "placement 1", dyn_create(f, D, EMB_F32, 6, EMB_PLACE_LOCAL))
    C(emb_table_dynamic_create, EMB_EINVAL, "kind 9", dyn_create(f, D, EMB_F32, 7, 9))
    C(emb_table_dynamic_create, EMB_EINVAL, "UNIFORM_UNIT_SCALING", dyn_create(f, D, EMB_F32, 7, EMB_INIT_UNIFORM_UNIT_SCALING))
    C(emb_table_dynamic_create, EMB_ENONFINITE, "missing_value", dyn_create(f, D, EMB_F32, 8, 0))
    C(emb_table_dynamic_create, EMB_ESHAPE, "static_size 5", dyn_create(f, D, EMB_F32, 9, 5))
    C(emb_table_dynamic_create, EMB_EINVAL, "flags 0x4", dyn_create(f, D, EMB_F32, 10, 4))
    C(emb_table_dynamic_create, EMB_EINVAL, "column_align 6", dyn_create(f, D, EMB_F32, 11, 6))
    V(emb_table_is_dynamic, 0, emb_table_is_dynamic(NULL) + emb_table_is_dynamic(f->t))
    C(emb_table_dynamic_stats, EMB_ENULL, "'t'", emb_table_dynamic_stats(NULL, &o->stats))
    C(emb_table_dynamic_stats, EMB_ENULL, "'out'", emb_table_dynamic_stats(f->dyn, NULL))
    C(emb_table_dynamic_stats, EMB_EINVAL, "not a dynamic table", emb_table_dynamic_stats(f->t, &o->stats))
    V(emb_table_dynamic_step, 0, (int)(emb_table_dynamic_step(NULL) + emb_table_dynamic_step(f->t)))
    C(emb_table_dynamic_contains, EMB_ENULL, "'t'", emb_table_dynamic_contains(NULL, 3))
    C(emb_table_dynamic_contains, EMB_EINVAL, "not a dynamic table", emb_table_dynamic_contains(f->part, 3))
    V(emb_table_dynamic_contains, 0, emb_table_dynamic_contains(f->dyn, -3) + emb_table_dynamic_contains(f->dyn, INT64_MAX))
    C(emb_table_dynamic_evict, EMB_ENULL, "'t'", evict(NULL, 1, 0, 0, &o->n))
    C(emb_table_dynamic_evict, EMB_ENULL, "'ev'", emb_table_dynamic_evict(f->dyn, NULL, &o->n))
    C(emb_table_dynamic_evict, EMB_EINVAL, "not a dynamic table", evict(f->t, 1, 0, 0, &o->n))
    C(emb_table_dynamic_evict, EMB_EINVAL, "ttl -1", evict(f->dyn, -1, 0, 0, &o->n))
    C(emb_table_dynamic_evict, EMB_EINVAL, "min_norm -1", evict(f->dyn, 0, -1.0f, 0, &o->n))
    C(emb_table_dynamic_evict, EMB_EINVAL, "min_norm nan", evict(f->dyn, 0, NAN, 0, &o->n))
    C(emb_table_dynamic_evict, EMB_EINVAL, "flags 0x8", evict(f->dyn, 1, 0, 8, &o->n))
    C(emb_table_dynamic_export, EMB_ENULL, "'t'", emb_table_dynamic_export(NULL, o->ids, o->out, D, 8, &o->n))
    C(emb_table_dynamic_export, EMB_ENULL, "'n'", emb_table_dynamic_export(f->dyn, o->ids, o->out, D, 8, NULL))
    C(emb_table_dynamic_export, EMB_ENULL, "'rows'", emb_table_dynamic_export(f->dyn, o->ids, NULL, D, 8, &o->n))
    C(emb_table_dynamic_export, EMB_EINVAL, "not a dynamic table", emb_table_dynamic_export(f->h, o->ids, o->out, D, 8, &o->n))
    C(emb_table_dynamic_export, EMB_ESTRIDE, "row_stride 3", emb_table_dynamic_export(f->dyn, o->ids, o->out, D - 1, 8, &o->n))
    C(emb_table_dynamic_export, EMB_EOVERFLOW, "rows of row_stride", emb_table_dynamic_export(f->dyn, o->ids, o->out, INT64_MAX / 2, 8, &o->n))
    C(emb_table_dynamic_export, EMB_ERANGE, "room for 2 rows", emb_table_dynamic_export(f->dyn, o->ids, o->out, D, 2, &o->n))
    C(emb_table_dynamic_export, EMB_ERANGE, "room for -1 rows", emb_table_dynamic_export(f->dyn, o->ids, o->out, D, -1, &o->n))
    C(emb_table_dynamic_import, EMB_ENULL, "'t'", emb_table_dynamic_import(NULL, f->ids, f->vals, D, 2))
    C(emb_table_dynamic_import, EMB_ENULL, "'ids'", emb_table_dynamic_import(f->dyn, NULL, f->vals, D, 2))
    C(emb_table_dynamic_import, EMB_ENULL, "'rows'", emb_table_dynamic_import(f->dyn, f->ids, NULL, D, 2))
    C(emb_table_dynamic_import, EMB_EINVAL, "n -1", emb_table_dynamic_import(f->dyn, f->ids, f->vals, D, -1))
    C(emb_table_dynamic_import, EMB_EINVAL, "not a dynamic table", emb_table_dynamic_import(f->t, f->ids, f->vals, D, 2))
    C(emb_table_dynamic_import, EMB_ESTRIDE, "row_stride 3", emb_table_dynamic_import(f->dyn, f->ids, f->vals, D - 1, 2))
    C(emb_table_dynamic_import, EMB_EOVERFLOW, "rows of row_stride", emb_table_dynamic_import(f->dyn, f->ids, f->vals, INT64_MAX / 2, 3))
    C(emb_table_dynamic_import, EMB_ERANGE, "id -1", emb_table_dynamic_import(f->dyn, f->big + 1, f->vals, D, 1))
    C(emb_table_dynamic_import, EMB_ERANGE, "id 9223372036854775807", emb_table_dynamic_import(f->dyn, (const int64_t[2]){5, INT64_MAX}, f->vals, D, 2))
    C(emb_table_dynamic_import, EMB_EINVAL, "id 3 is given twice", emb_table_dynamic_import(f->dyn, f->dup, f->vals, D, 2))
    C(emb_table_dynamic_import, EMB_ENONFINITE, "nan", emb_table_dynamic_import(f->dyn, f->ids, f->nanv, D, 2))
    SECTION_END
}

/* collection.h */
static int cases_collection(int i, int *kp, Fx *f, CaseInfo *info)
{
    SECTION_BEGIN
    C(emb_collection_create, EMB_ENULL, "'out'", emb_collection_create(NULL, f->ctabs, 2, NULL))
    C(emb_collection_create, EMB_ENULL, "'tables'", emb_collection_create(&o->coll, NULL, 2, NULL))
    C(emb_collection_create, EMB_EINVAL, "n = 0", emb_collection_create(&o->coll, f->ctabs, 0, NULL))
    C(emb_collection_create, EMB_EINVAL, "n = -1", emb_collection_create(&o->coll, f->ctabs, -1, NULL))
    C(emb_collection_create, EMB_EINVAL, "\"ct\"", coll_create(f, 0))
    C(emb_collection_create, EMB_EINVAL, "tables[0] and tables[1] are the same table", coll_create(f, 1))
    C(emb_collection_create, EMB_EINVAL, "combiner 8", coll_create(f, 2))
    C(emb_collection_create, EMB_EINVAL, "prependrows -1", coll_create(f, 3))
    C(emb_collection_create, EMB_EINVAL, "shared_optimizer", coll_create(f, 4))
    C(emb_collection_create, EMB_EINVAL, "update flags 0x40", coll_create(f, 5))
    C(emb_collection_create, EMB_EINVAL, "name", coll_create(f, 6))
    C(emb_collection_create, EMB_EINVAL, "name", coll_create(f, 7))
    C(emb_collection_create, EMB_EINVAL, "ncolumns -4", coll_create(f, 8))
    V(emb_collection_destroy, 0, (emb_collection_destroy(NULL), 0))
    C(emb_collection_forward, EMB_ENULL, "'c'", emb_collection_forward(NULL, f->b2, &(EmbOutputs){.concat = o->out, .concat_stride = 2 * D}))
    C(emb_collection_forward, EMB_ENULL, "'batches'", coll_forward(f, NULL, 0))
    C(emb_collection_forward, EMB_ENULL, "'out'", coll_forward(f, f->b2, 1))
    C(emb_collection_forward, EMB_ERANGE, "\"cp\"", coll_forward(f, (EmbBatch[2]){f->b, {.ids = f->big, .nnz = 4, .nbags = 4, .bag_size = 1}}, 0))
    C(emb_collection_backward, EMB_ENULL, "'c'", emb_collection_backward(NULL, &(EmbOutputs){.concat = f->dout, .concat_stride = 2 * D}))
    C(emb_collection_backward, EMB_ENULL, "'grad_out'", emb_collection_backward(f->coll, NULL))
    C(emb_collection_backward, EMB_EINVAL, "forward", coll_backward(f, 0))
    C(emb_collection_backward_batches, EMB_ENULL, "'c'", emb_collection_backward_batches(NULL, f->b2, &(EmbOutputs){.concat = f->dout, .concat_stride = 2 * D}))
    C(emb_collection_backward_batches, EMB_ENULL, "'batches'", coll_backward(f, 1))
    C(emb_collection_backward_batches, EMB_ENULL, "'grad_out'", coll_backward(f, 2))
    C(emb_collection_prefetch, EMB_ENULL, "'c'", emb_collection_prefetch(NULL, f->b2))
    C(emb_collection_prefetch, EMB_ENULL, "'next_batches'", emb_collection_prefetch(f->coll, NULL))
    V(emb_collection_ntables, 1, coll_values(f))
    C(emb_collection_find, EMB_ENULL, "'c'", emb_collection_find(NULL, "ct", &o->n))
    C(emb_collection_find, EMB_ENULL, "'name'", emb_collection_find(f->coll, NULL, &o->n))
    C(emb_collection_find, EMB_ENULL, "'index'", emb_collection_find(f->coll, "ct", NULL))
    C(emb_collection_find, EMB_ENOTFOUND, "\"nope\"", emb_collection_find(f->coll, "nope", &o->n))
    V(emb_collection_table, 1, coll_values(f))
    V(emb_collection_name, 1, coll_values(f))
    V(emb_collection_pooling, 1, coll_values(f))
    V(emb_collection_strategy, 1, coll_values(f))
    V(emb_collection_optimizer, 1, coll_values(f))
    V(emb_collection_width, 1, coll_values(f))
    V(emb_collection_offset, 1, emb_collection_offset(NULL, 0) <= 0 && emb_collection_offset(f->coll, 5) <= 0)
    V(emb_collection_concat, 1, coll_values(f))
    V(emb_collection_grad, 1, coll_values(f))
    C(emb_collection_grad_rows, EMB_ENULL, "'c'", emb_collection_grad_rows(NULL, 0, &o->cids, &o->crows, &o->n))
    C(emb_collection_grad_rows, EMB_EINVAL, "5", emb_collection_grad_rows(f->coll, 5, &o->cids, &o->crows, &o->n))
    C(emb_collection_grad_rows, EMB_EINVAL, "-1", emb_collection_grad_rows(f->coll, -1, &o->cids, &o->crows, &o->n))
    C(emb_collection_grad_rows, EMB_EINVAL, "gradient", emb_collection_grad_rows(f->coll, 0, &o->cids, &o->crows, &o->n))
    C(emb_collection_custom, EMB_ENULL, "'out'", emb_collection_custom(NULL, f->ctabs, 2, NULL, &(EmbCollectionOps){0}, NULL))
    C(emb_collection_custom, EMB_ENULL, "'tables'", emb_collection_custom(&o->coll, NULL, 2, NULL, &(EmbCollectionOps){0}, NULL))
    C(emb_collection_custom, EMB_ENULL, "'ops'", emb_collection_custom(&o->coll, f->ctabs, 2, NULL, NULL, NULL))
    C(emb_collection_custom, EMB_EINVAL, "n = 0", emb_collection_custom(&o->coll, f->ctabs, 0, NULL, &(EmbCollectionOps){0}, NULL))
    V(emb_collection_custom_user, 1, coll_values(f))
    C(emb_collection_save, EMB_ENULL, "'c'", emb_collection_save(NULL, f->dir, "c", 1, 0, NULL, 0))
    C(emb_collection_save, EMB_ENULL, "'dir'", emb_collection_save(f->coll, NULL, "c", 1, 0, NULL, 0))
    C(emb_collection_save, EMB_ENULL, "'prefix'", emb_collection_save(f->coll, f->dir, NULL, 1, 0, NULL, 0))
    C(emb_collection_save, EMB_EINVAL, "prefix", emb_collection_save(f->coll, f->dir, "a/b", 1, 0, NULL, 0))
    C(emb_collection_save, EMB_EINVAL, "global_step -1", emb_collection_save(f->coll, f->dir, "c", -1, 0, NULL, 0))
    C(emb_collection_save, EMB_EIO, "\"/dev/null\": not a directory", emb_collection_save(f->coll, "/dev/null/ckpt", "c", 1, 0, NULL, 0))
    C(emb_collection_restore, EMB_ENULL, "'c'", emb_collection_restore(NULL, f->ckpt, &o->n))
    C(emb_collection_restore, EMB_ENULL, "'path'", emb_collection_restore(f->coll, NULL, &o->n))
    C(emb_collection_restore, EMB_EIO, "/nonexistent", emb_collection_restore(f->coll, "/nonexistent/x", &o->n))
    C(emb_collection_restore, EMB_ENOTFOUND, "\"ct\"", emb_collection_restore(f->coll, f->ckpt, &o->n))
    SECTION_END
}

/* The sections, in order: a new header gets its own. */
/* emb_table_tiered_create of a D-wide f32 table of @n rows in the fixture's directory,
   option @field set to @v (1 cache_bytes, 2 policy, 3 engine, 4 state_width); the file
   must not exist afterwards (a failed create leaves none). */
static int tier_create(Fx *f, int64_t n, int32_t fs, int dtype, int field, int64_t v)
{
    char path[128];
    snprintf(path, sizeof path, "%s/tier", f->dir);
    EmbTieredOptions o = {.table.name = "tier"};
    if (field == 1)
        o.cache_bytes = v;
    else if (field == 2)
        o.policy = (EmbTierPolicy)v;
    else if (field == 3)
        o.engine = (EmbTierEngine)v;
    else if (field == 4)
        o.state_width = (int32_t)v;
    const int r = emb_table_tiered_create(&f->o.table, path, n, fs, (EmbDtype)dtype, &o);
    return access(path, F_OK) == 0 ? 1 : r;
}

/* emb_table_tiered_open of @name in the fixture's directory (the checkpoint: not a tiered
   table's file). */
static int tier_open(Fx *f, const char *name)
{
    char path[300];
    snprintf(path, sizeof path, "%s", name ? name : f->ckpt);
    if (name)
        snprintf(path, sizeof path, "%s/%s", f->dir, name);
    return emb_table_tiered_open(&f->o.table, path, NULL);
}

/* A tiered table's call with a NULL output (the table made and destroyed here). */
static int tier_stats_null(Fx *f)
{
    char path[128];
    snprintf(path, sizeof path, "%s/tier-ok", f->dir);
    EmbTable *t = NULL;
    if (emb_table_tiered_create(&t, path, 4, D, EMB_F32, NULL))
        return 1;
    const int r = emb_table_tiered_stats(t, NULL);
    emb_table_destroy(&t);
    unlink(path);
    return r;
}

/* tiered.h */
static int cases_tiered(int i, int *kp, Fx *f, CaseInfo *info)
{
    SECTION_BEGIN
    C(emb_table_tiered_create, EMB_ENULL, "'out'", emb_table_tiered_create(NULL, f->dir, NC, D, EMB_F32, NULL))
    C(emb_table_tiered_create, EMB_ENULL, "'path'", emb_table_tiered_create(&o->table, NULL, NC, D, EMB_F32, NULL))
    C(emb_table_tiered_create, EMB_EINVAL, "ncolumns -1", tier_create(f, -1, D, EMB_F32, 0, 0))
    C(emb_table_tiered_create, EMB_EINVAL, "featuresize 0", tier_create(f, NC, 0, EMB_F32, 0, 0))
    C(emb_table_tiered_create, EMB_EDTYPE, "dtype 9", tier_create(f, NC, D, 9, 0, 0))
    C(emb_table_tiered_create, EMB_ESHAPE, "int4", tier_create(f, NC, 3, EMB_INT4, 0, 0))
    C(emb_table_tiered_create, EMB_EINVAL, "cache_bytes -1", tier_create(f, NC, D, EMB_F32, 1, -1))
    C(emb_table_tiered_create, EMB_EINVAL, "cache_bytes", tier_create(f, NC, D, EMB_F32, 1, 8))
    C(emb_table_tiered_create, EMB_EINVAL, "policy 4", tier_create(f, NC, D, EMB_F32, 2, 4))
    C(emb_table_tiered_create, EMB_EINVAL, "engine 4", tier_create(f, NC, D, EMB_F32, 3, 4))
    C(emb_table_tiered_create, EMB_EINVAL, "state_width -1", tier_create(f, NC, D, EMB_F32, 4, -1))
    C(emb_table_tiered_create, EMB_EIO, "cannot open", emb_table_tiered_create(&o->table, f->dir, NC, D, EMB_F32, NULL))
    C(emb_table_tiered_open, EMB_ENULL, "'out'", emb_table_tiered_open(NULL, f->ckpt, NULL))
    C(emb_table_tiered_open, EMB_ENULL, "'path'", emb_table_tiered_open(&o->table, NULL, NULL))
    C(emb_table_tiered_open, EMB_ENOTFOUND, "none.tier", tier_open(f, "none.tier"))
    C(emb_table_tiered_open, EMB_ECORRUPT, "not a tiered table's file", tier_open(f, NULL))
    V(emb_table_is_tiered, 0, emb_table_is_tiered(NULL) + emb_table_is_tiered(f->t))
    C(emb_table_tiered_flush, EMB_ENULL, "'t'", emb_table_tiered_flush(NULL))
    C(emb_table_tiered_flush, EMB_EINVAL, "not a tiered table", emb_table_tiered_flush(f->dyn))
    C(emb_table_tiered_stats, EMB_ENULL, "'t'", emb_table_tiered_stats(NULL, &o->tstats))
    C(emb_table_tiered_stats, EMB_EINVAL, "not a tiered table", emb_table_tiered_stats(f->t, &o->tstats))
    C(emb_table_tiered_stats, EMB_ENULL, "'out'", tier_stats_null(f))
    C(emb_table_prefetch, EMB_ENULL, "'t'", emb_table_prefetch(NULL, &f->b))
    C(emb_table_prefetch, EMB_ENULL, "'batch'", emb_table_prefetch(f->t, NULL))
    V(emb_table_prefetch, 0, emb_table_prefetch(f->part, &f->b))
    SECTION_END
}

static int (*const sections[])(int, int *, Fx *, CaseInfo *) = {
    cases_common,
    cases_table,
    cases_lookup,
    cases_strategy,
    cases_gradients,
    cases_optimizers,
    cases_updates,
    cases_variable_ops,
    cases_store,
    cases_checkpoints,
    cases_partition,
    cases_dynamic,
    cases_collection,
    cases_tiered,
};

static int run_case(int i, Fx *f, CaseInfo *info)
{
    int k = 0;
    for (size_t s = 0; s < sizeof sections / sizeof *sections; s++) {
        const int r = sections[s](i, &k, f, info);
        if (info->fn)
            return r;
    }
    return NOT_A_CASE;
}

/* ---- the coverage check: every EMB_API function of the headers has a case ---------------- */

/* Appends to @names (newline-separated) every function declared EMB_API with arguments in
   @path. */
static void api_functions(const char *path, char *names, size_t cap)
{
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp, "%s", path);
    static char text[1 << 17];
    const size_t n = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    text[n] = '\0';
    for (const char *p = strstr(text, "\nEMB_API "); p; p = strstr(p + 1, "\nEMB_API ")) {
        const char *paren = strchr(p, '('), *name = paren;
        while (name > p && (name[-1] == '_' || (name[-1] >= 'a' && name[-1] <= 'z') ||
                            (name[-1] >= '0' && name[-1] <= '9')))
            name--;
        if (!paren || strncmp(paren, "(void)", 6) == 0)
            continue;
        strncat(names, name, (size_t)(paren - name));
        strncat(names, "\n", cap - strlen(names) - 1);
    }
}

static int missing_cases(const char *seen, char *missing, size_t cap)
{
    char names[1 << 14] = "";
    DIR *d = opendir(EMB_HEADER_DIR);
    cr_assert_not_null(d, "%s", EMB_HEADER_DIR);
    for (struct dirent *e; (e = readdir(d));) {
        const size_t len = strlen(e->d_name);
        if (len < 3 || strcmp(e->d_name + len - 2, ".h") || !strcmp(e->d_name, "gpu.h") ||
            !strcmp(e->d_name, "dist.h"))
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", EMB_HEADER_DIR, e->d_name);
        api_functions(path, names, sizeof names);
    }
    closedir(d);
    int nmissing = 0;
    for (char *line = strtok(names, "\n"); line; line = strtok(NULL, "\n")) {
        char key[128];
        snprintf(key, sizeof key, "\n%s\n", line);
        if (!strstr(seen, key)) {
            strncat(missing, " ", cap - strlen(missing) - 1);
            strncat(missing, line, cap - strlen(missing) - 1);
            nmissing++;
        }
    }
    return nmissing;
}

/* ---- the test ----------------------------------------------------------------------- */

/* Runs case @i; returns 0 past the last case. Adds its function to @seen. */
static int check_case(Fx *f, int i, Snap *before, Snap *after, char *seen, size_t cap,
                      int *nfunctions)
{
    /* a known failure first: a case that forgets its message cannot pass on a stale one */
    void *dummy;
    cr_assert_eq(emb_table_column_pointer(f->t, 7777777, EMB_CTX_NONE, &dummy), EMB_ERANGE);
    char stale[512];
    snprintf(stale, sizeof stale, "%s", emb_last_error());
    snapshot(f, before);
    CaseInfo info = {0};
    const int r = run_case(i, f, &info);
    if (r == NOT_A_CASE && !info.fn)
        return 0;
    char key[128];
    snprintf(key, sizeof key, "\n%s\n", info.fn);
    if (!strstr(seen, key)) {
        strncat(seen, key + 1, cap - strlen(seen) - 1);
        (*nfunctions)++;
    }
    cr_expect(r == info.code, "case %d: %s: got %d, want %d (%s)\n    %s", i, info.fn, r,
                 info.code, emb_last_error(), info.expr);
    if (info.culprit) {
        const char *msg = emb_last_error();
        cr_expect(strcmp(msg, stale) != 0 && strstr(msg, info.culprit),
                  "case %d: %s: message '%s' does not name '%s'\n    %s", i, info.fn, msg,
                  info.culprit, info.expr);
    }
    snapshot(f, after);
    cr_expect(before->n == after->n && memcmp(before->p, after->p, before->n) == 0,
              "case %d: %s: the call changed a table, state, file or output\n    %s", i,
              info.fn, info.expr);
    return 1;
}

Test(badinput, every_public_function_every_argument)
{
    static Fx f;
    fx_setup(&f);
    Snap before = {0}, after = {0};
    static char seen[1 << 14] = "\n";
    int ncases = 0, nfunctions = 0;
    while (check_case(&f, ncases, &before, &after, seen, sizeof seen, &nfunctions))
        ncases++;
    /* the gradient holders, untouched by every failed call: g still gives the update it
       gave at the start */
    EmbOptimizer *sgd = NULL;
    EmbIndexer *ix = NULL;
    const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_SGD, 0.5f);
    cr_assert_eq(emb_optimizer_create(&sgd, &c) | emb_indexer_create(&ix), 0);
    cr_assert_eq(emb_update(sgd, f.t, f.g, ix, 0), 0, "%s", emb_last_error());
    float now[NC * D];
    cr_assert_eq(emb_table_read(f.t, now, D), 0);
    cr_expect(memcmp(now, f.update_ref, sizeof now) == 0, "a failed call changed a gradient");
    cr_assert_eq(emb_update_many(f.seq, sgd, f.tabs, (const EmbGrad *const *)f.gs, 2, f.ixs, 0),
                 0, "the maplookup gradients still apply: %s", emb_last_error());
    emb_indexer_destroy(&ix);
    emb_optimizer_destroy(&sgd);
    char missing[4096] = "";
    const int nmissing = missing_cases(seen, missing, sizeof missing);
    cr_expect(nmissing == 0, "public functions without a bad-input case (add them to "
                 "tests/test_badinput.c, see its header):%s", missing);
    fprintf(stderr, "badinput: %d cases over %d public functions\n", ncases, nfunctions);
    free(before.p);
    free(after.p);
    fx_teardown(&f);
}
