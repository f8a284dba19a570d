/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_strategies.c — ensembles: emb_maplookup under every strategy and both output
 * layouts (bit-identical to sequential), the seed's maplookup example, bad input leaving
 * outputs untouched, custom strategies, and the internal contract the multi-table update
 * uses (per-thread scratch, the task launcher). Links the static library (internal dep).
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include <criterion/criterion.h>

#include "config.h"
#include "strategies/strategy_impl.h"
#include "test_util.h"

#define NT 10
static const int32_t Ds[NT] = {16, 64, 65, 512, 16, 65, 64, 512, 16, 64};

enum { GATHER, FIXED, RAGGED, MIXED };

/* An ensemble: NT tables of mixed D, one batch and pooling each, all with nbags bags. */
typedef struct Ens {
    EmbTable *t[NT];
    EmbBatch b[NT];
    EmbPooling p[NT];
    int64_t *ids[NT], *off[NT];
    float *w[NT];
    int64_t nbags, width; /* width: Σ D */
} Ens;

/* Table i's batch of kind @k: gather (bag_size 1), fixed bags of 3 (SUM), or ragged bags
 * of 0..6 ids (every 17th of 300: longer than the lookup's chunk) with weights under
 * MEAN / SQRTN / SUM with max_norm. */
static void make_batch(Ens *e, int i, int k, uint64_t *s)
{
    const int64_t n = e->nbags, ncol = emb_table_ncolumns(e->t[i]);
    int64_t nnz = k == GATHER ? n : k == FIXED ? 3 * n : 0;
    if (k == RAGGED) {
        e->off[i] = malloc((size_t)(n + 1) * sizeof(int64_t));
        e->off[i][0] = 0;
        for (int64_t b = 0; b < n; b++)
            e->off[i][b + 1] = e->off[i][b] + (int64_t)(b % 17 == 5 ? 300 : tu_rand(s) % 7);
        nnz = e->off[i][n];
        e->w[i] = malloc((size_t)(nnz + 1) * sizeof(float));
        for (int64_t j = 0; j < nnz; j++)
            e->w[i][j] = 0.25f + (tu_randf(s) + 1.0f);
    }
    e->ids[i] = malloc((size_t)(nnz + 1) * sizeof(int64_t));
    for (int64_t j = 0; j < nnz; j++)
        e->ids[i][j] = (int64_t)(tu_rand(s) % (uint64_t)ncol);
    e->b[i] = (EmbBatch){.ids = e->ids[i], .nnz = nnz, .nbags = n,
                         .bag_size = k == GATHER ? 1 : 3, .offsets = e->off[i],
                         .weights = e->w[i]};
    const EmbCombiner comb[] = {EMB_COMBINER_MEAN, EMB_COMBINER_SQRTN, EMB_COMBINER_SUM};
    e->p[i] = k == GATHER ? EMB_POOLING_GATHER : EMB_POOLING_SUM;
    if (k == RAGGED) {
        e->p[i].combiner = comb[i % 3];
        e->p[i].max_norm = i % 3 == 2 ? 2.0f : 0.0f;
        e->p[i].flags = i % 2 ? EMB_USE_DEFAULT_ID : 0;
        e->p[i].default_id = 1;
    }
}

static Ens *ens_create(int kind, int64_t nbags, uint64_t seed)
{
    Ens *e = calloc(1, sizeof *e);
    e->nbags = nbags;
    for (int i = 0; i < NT; i++) {
        cr_assert_eq(emb_table_create(&e->t[i], 40 + 17 * i, Ds[i], EMB_F32, NULL), 0);
        tu_fill_random(e->t[i], seed + (uint64_t)i);
        e->width += Ds[i];
        make_batch(e, i, kind == MIXED ? i % 3 : kind, &seed);
    }
    return e;
}

static void ens_destroy(Ens *e)
{
    for (int i = 0; i < NT; i++) {
        emb_table_destroy(&e->t[i]);
        free(e->ids[i]);
        free(e->off[i]);
        free(e->w[i]);
    }
    free(e);
}

/* Per-table buffers with a stride of D + 3 (the 3 padding elements poisoned). */
typedef struct PerTable {
    float *buf[NT];
    int64_t strides[NT];
} PerTable;

static EmbOutputs per_table(PerTable *pt, const Ens *e)
{
    for (int i = 0; i < NT; i++) {
        pt->strides[i] = Ds[i] + 3;
        pt->buf[i] = malloc((size_t)(e->nbags * pt->strides[i] + 1) * sizeof(float));
        tu_poison(pt->buf[i], (size_t)(e->nbags * pt->strides[i]));
    }
    return (EmbOutputs){.per_table = pt->buf, .strides = pt->strides};
}

static void per_table_free(PerTable *pt)
{
    for (int i = 0; i < NT; i++)
        free(pt->buf[i]);
}

/* A poisoned concat matrix: 5 prepend elements, Σ D, then 7 padding elements a row. */
static EmbOutputs concat(const Ens *e)
{
    const int64_t stride = 5 + e->width + 7;
    float *m = malloc((size_t)(e->nbags * stride + 1) * sizeof(float));
    tu_poison(m, (size_t)(e->nbags * stride));
    return (EmbOutputs){.concat = m, .concat_stride = stride, .prependrows = 5};
}

/* The reference: emb_lookup per table into a concat-shaped matrix. */
static float *reference(const Ens *e, int64_t stride)
{
    float *m = malloc((size_t)(e->nbags * stride + 1) * sizeof(float));
    tu_poison(m, (size_t)(e->nbags * stride));
    int64_t off = 5;
    for (int i = 0; i < NT; i++) {
        cr_assert_eq(emb_lookup(e->t[i], &e->b[i], &e->p[i], m + off, stride), 0, "%s",
                     emb_last_error());
        off += Ds[i];
    }
    return m;
}

/* Compares a per-table result bit for bit with the reference; padding untouched. */
static void expect_per_table(const PerTable *pt, const Ens *e, const float *ref,
                             int64_t rstride, const char *what)
{
    int64_t off = 5;
    for (int i = 0; i < NT; i++) {
        for (int64_t b = 0; b < e->nbags; b++) {
            const float *o = pt->buf[i] + b * pt->strides[i];
            cr_assert(!memcmp(o, ref + b * rstride + off, (size_t)Ds[i] * 4),
                      "%s: table %d bag %lld differs", what, i, (long long)b);
            cr_assert(tu_is_poison(o + Ds[i], 3), "%s: table %d padding written", what, i);
        }
        off += Ds[i];
    }
}

/* A concat result must equal the reference bit for bit, prepend and padding included
 * (both poisoned, so untouched). */
static void expect_concat(const EmbOutputs *o, const Ens *e, const float *ref,
                          const char *what)
{
    for (int64_t b = 0; b < e->nbags; b++)
        cr_assert(!memcmp(o->concat + b * o->concat_stride, ref + b * o->concat_stride,
                          (size_t)o->concat_stride * 4),
                  "%s: row %lld differs", what, (long long)b);
}

/* Runs one strategy on both layouts and compares with the reference. */
static void check_strategy(EmbStrategy *s, const Ens *e, const float *ref, int64_t rstride,
                           const char *what)
{
    PerTable pt;
    EmbOutputs o = per_table(&pt, e);
    cr_assert_eq(emb_maplookup(s, e->t, NT, e->b, e->p, &o), 0, "%s: %s", what,
                 emb_last_error());
    expect_per_table(&pt, e, ref, rstride, what);
    per_table_free(&pt);
    o = concat(e);
    cr_assert_eq(emb_maplookup(s, e->t, NT, e->b, e->p, &o), 0, "%s: %s", what,
                 emb_last_error());
    expect_concat(&o, e, ref, what);
    free(o.concat);
}

/* Every strategy, thread counts 1-4 and chunk counts 1-16 (and auto), on one ensemble. */
static void check_all_strategies(int kind, int64_t nbags, uint64_t seed)
{
    Ens *e = ens_create(kind, nbags, seed);
    const int64_t rstride = 5 + e->width + 7;
    float *ref = reference(e, rstride);
    char what[96];
    EmbStrategy *s = NULL;
    cr_assert_eq(emb_strategy_sequential(&s), 0);
    check_strategy(s, e, ref, rstride, "sequential");
    emb_strategy_destroy(&s);
    for (int nt = 1; nt <= 4; nt++) {
        const EmbStrategyOptions po = {.nthreads = nt, .pinning = nt % 3};
        cr_assert_eq(emb_strategy_parallel(&s, &po), 0);
        snprintf(what, sizeof what, "kind %d parallel %d threads", kind, nt);
        check_strategy(s, e, ref, rstride, what);
        emb_strategy_destroy(&s);
        const int chunks[] = {0, 1, 2, 3, 5, 7, 8, 13, 16};
        for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
            const EmbStrategyOptions co = {.nthreads = nt, .chunks = chunks[c]};
            cr_assert_eq(emb_strategy_prealloc_concat(&s, &co), 0);
            snprintf(what, sizeof what, "kind %d prealloc-concat %d threads %d chunks", kind,
                     nt, chunks[c]);
            check_strategy(s, e, ref, rstride, what);
            emb_strategy_destroy(&s);
        }
    }
    free(ref);
    ens_destroy(e);
}

Test(strategies, identical_gather) { check_all_strategies(GATHER, 97, 11); }
Test(strategies, identical_fixed_bags) { check_all_strategies(FIXED, 97, 12); }
Test(strategies, identical_ragged_weighted) { check_all_strategies(RAGGED, 97, 13); }
Test(strategies, identical_mixed_batches) { check_all_strategies(MIXED, 97, 14); }
Test(strategies, identical_fewer_bags_than_chunks) { check_all_strategies(MIXED, 5, 15); }
Test(strategies, identical_no_bags) { check_all_strategies(FIXED, 0, 16); }

/* Per-table layout with a different bag count for every table (bag prefixes of the
 * batches: fixed bags keep bag_size, ragged bags keep their first offsets). */
Test(strategies, identical_per_table_with_unequal_bag_counts)
{
    Ens *e = ens_create(MIXED, 97, 21);
    for (int i = 0; i < NT; i++) {
        EmbBatch *b = &e->b[i];
        b->nbags = 97 - 9 * i;
        b->nnz = b->offsets ? b->offsets[b->nbags] : b->nbags * b->bag_size;
    }
    float *ref[NT];
    for (int i = 0; i < NT; i++) {
        ref[i] = malloc((size_t)(e->b[i].nbags * Ds[i] + 1) * sizeof(float));
        cr_assert_eq(emb_lookup(e->t[i], &e->b[i], &e->p[i], ref[i], Ds[i]), 0);
    }
    const EmbStrategyOptions opts[] = {{.nthreads = 3}, {.nthreads = 2, .chunks = 5},
                                       {.nthreads = 4, .chunks = 16}, {.nthreads = 3}};
    for (int k = 0; k < 4; k++) {
        EmbStrategy *s = NULL;
        cr_assert_eq(k == 0 ? emb_strategy_parallel(&s, &opts[k])
                            : emb_strategy_prealloc_concat(&s, &opts[k]), 0);
        float *buf[NT];
        for (int i = 0; i < NT; i++) {
            buf[i] = malloc((size_t)(e->b[i].nbags * Ds[i] + 1) * sizeof(float));
            tu_poison(buf[i], (size_t)(e->b[i].nbags * Ds[i]));
        }
        const EmbOutputs o = {.per_table = buf};
        cr_assert_eq(emb_maplookup(s, e->t, NT, e->b, e->p, &o), 0, "%s", emb_last_error());
        for (int i = 0; i < NT; i++) {
            cr_assert(!memcmp(buf[i], ref[i], (size_t)(e->b[i].nbags * Ds[i]) * 4),
                      "%s: table %d differs", emb_strategy_name(s), i);
            free(buf[i]);
        }
        emb_strategy_destroy(&s);
    }
    for (int i = 0; i < NT; i++)
        free(ref[i]);
    ens_destroy(e);
}

/* A warm strategy keeps its plan buffer: a steady-state call allocates nothing. */
Test(strategies, steady_state_reuses_the_plan)
{
    Ens *e = ens_create(FIXED, 40, 5);
    EmbStrategy *s = NULL;
    cr_assert_eq(emb_strategy_prealloc_concat(&s, &(EmbStrategyOptions){.nthreads = 2}), 0);
    EmbOutputs o = concat(e);
    cr_assert_eq(emb_maplookup(s, e->t, NT, e->b, e->p, &o), 0);
    const EmbGrowBuf before = s->plan;
    for (int r = 0; r < 3; r++)
        cr_assert_eq(emb_maplookup(s, e->t, NT - r, e->b, e->p, &o), 0);
    const EmbGrowBuf after = s->plan;
    cr_assert(before.p == after.p && before.bytes == after.bytes, "plan buffer reused");
    free(o.concat);
    emb_strategy_destroy(&s);
    ens_destroy(e);
}

/* Custom tables that log which table the (single) thread reads, one entry per switch. */
typedef struct OrderLog {
    int seq[64], n;
    float col[8];
} OrderLog;

typedef struct Logged {
    OrderLog *log;
    int table;
} Logged;

static void *logged_column(void *user, int64_t column, EmbContext ctx)
{
    (void)column, (void)ctx;
    Logged *l = user;
    if (l->log->n == 0 || l->log->seq[l->log->n - 1] != l->table)
        if (l->log->n < 64)
            l->log->seq[l->log->n++] = l->table;
    return l->log->col;
}

/* One thread: the run order shows the hand-out order of the strategy's tasks. */
static void expect_order(EmbStrategy *s, const int64_t *nnz, int n, const int *want, int nwant)
{
    OrderLog log = {.n = 0};
    Logged users[4];
    EmbTable *t[4];
    EmbBatch b[4];
    int64_t ids[64] = {0};
    for (int i = 0; i < n; i++) {
        users[i] = (Logged){&log, i};
        cr_assert_eq(emb_table_custom(&t[i], 2, 8, EMB_F32, logged_column, &users[i], NULL,
                                      NULL), 0);
        b[i] = (EmbBatch){.ids = ids, .nnz = nnz[i], .nbags = nnz[i], .bag_size = 1};
    }
    float out[4][64 * 8];
    float *pt[] = {out[0], out[1], out[2], out[3]};
    const EmbOutputs o = {.per_table = pt};
    cr_assert_eq(emb_maplookup(s, t, n, b, NULL, &o), 0, "%s", emb_last_error());
    cr_assert_eq(log.n, nwant, "%s: %d switches", emb_strategy_name(s), log.n);
    for (int k = 0; k < nwant; k++)
        cr_assert_eq(log.seq[k], want[k], "%s: step %d reads table %d, not %d",
                     emb_strategy_name(s), k, log.seq[k], want[k]);
    for (int i = 0; i < n; i++)
        emb_table_destroy(&t[i]);
}

Test(strategies, hand_out_order)
{
    EmbStrategy *s = NULL;
    const int64_t nnz[] = {10, 40, 20, 40};
    cr_assert_eq(emb_strategy_parallel(&s, &(EmbStrategyOptions){.nthreads = 1}), 0);
    expect_order(s, nnz, 4, (const int[]){1, 3, 2, 0}, 4); /* most work first, ties by index */
    emb_strategy_destroy(&s);
    cr_assert_eq(emb_strategy_sequential(&s), 0);
    expect_order(s, nnz, 4, (const int[]){0, 1, 2, 3}, 4);
    emb_strategy_destroy(&s);
    const EmbStrategyOptions co = {.nthreads = 1, .chunks = 2};
    cr_assert_eq(emb_strategy_prealloc_concat(&s, &co), 0);
    const int64_t even[] = {40, 40, 40};
    expect_order(s, even, 3, (const int[]){0, 1, 2}, 3); /* table-major: chunks together */
    expect_order(s, nnz, 4, (const int[]){1, 3, 2, 0}, 4);  /* most work first */
    emb_strategy_destroy(&s);
}

/* ---- the seed's example -------------------------------------------------------------- */

/* Seed tables A (column j = [j+1, j+1]) and B (10 x that), ids iA = [0,1,0], iB = [1,0,0]:
 * per-table results [1 2 1] and [20 10 10]; concat rows [P P a a b b pad]. */
static void check_seed(EmbStrategy *s)
{
    float ma[6], mb[6], oa[3 * 2], ob[3 * 2], cat[3 * 7];
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 2; i++) {
            ma[j * 2 + i] = (float)(j + 1);
            mb[j * 2 + i] = 10.0f * (float)(j + 1);
        }
    EmbTable *t[2] = {NULL, NULL};
    cr_assert_eq(emb_table_wrap(&t[0], ma, 3, 2, 2, EMB_F32, NULL), 0);
    cr_assert_eq(emb_table_wrap(&t[1], mb, 3, 2, 2, EMB_F32, NULL), 0);
    const int64_t ia[] = {0, 1, 0}, ib[] = {1, 0, 0}, combined[] = {0, 1, 0, 1, 0, 0};
    const int64_t *ids[] = {ia, ib};
    const float wa[] = {1, 2, 1}, wb[] = {20, 10, 10};
    for (int form = 0; form < 2; form++) {
        float *pt[] = {oa, ob};
        const EmbOutputs per = {.per_table = pt};
        tu_poison(oa, 6);
        tu_poison(ob, 6);
        cr_assert_eq(form ? emb_maplookup_ids3(s, t, 2, combined, 3, 1, &per)
                          : emb_maplookup_ids(s, t, 2, ids, 3, 1, &per), 0, "%s",
                     emb_last_error());
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < 2; i++) {
                cr_assert_eq(oa[k * 2 + i], wa[k], "%s A[%d]", emb_strategy_name(s), k);
                cr_assert_eq(ob[k * 2 + i], wb[k], "%s B[%d]", emb_strategy_name(s), k);
            }
        const EmbOutputs cat_out = {.concat = cat, .concat_stride = 7, .prependrows = 2};
        tu_poison(cat, 21);
        cr_assert_eq(form ? emb_maplookup_ids3(s, t, 2, combined, 3, 1, &cat_out)
                          : emb_maplookup_ids(s, t, 2, ids, 3, 1, &cat_out), 0);
        for (int k = 0; k < 3; k++) {
            const float *row = cat + k * 7;
            cr_assert(tu_is_poison(row, 2), "prepend elements of row %d untouched", k);
            cr_assert(tu_is_poison(row + 6, 1), "padding of row %d untouched", k);
            cr_assert(row[2] == wa[k] && row[3] == wa[k] && row[4] == wb[k] && row[5] == wb[k],
                      "%s concat row %d", emb_strategy_name(s), k);
        }
    }
    /* the same through emb_maplookup with gather batches */
    const EmbBatch b[] = {{.ids = ia, .nnz = 3, .nbags = 3, .bag_size = 1},
                          {.ids = ib, .nnz = 3, .nbags = 3, .bag_size = 1}};
    const EmbPooling p[] = {EMB_POOLING_GATHER, EMB_POOLING_GATHER};
    const EmbOutputs cat_out = {.concat = cat, .concat_stride = 7, .prependrows = 2};
    tu_poison(cat, 21);
    cr_assert_eq(emb_maplookup(s, t, 2, b, p, &cat_out), 0);
    cr_assert(cat[7 + 2] == 2.0f && cat[7 + 4] == 10.0f && tu_is_poison(cat + 7, 2));
    emb_table_destroy(&t[0]);
    emb_table_destroy(&t[1]);
}

Test(strategies, seed_example_every_strategy)
{
    EmbStrategy *s = NULL;
    cr_assert_eq(emb_strategy_sequential(&s), 0);
    check_seed(s);
    emb_strategy_destroy(&s);
    cr_assert_null(s);
    const EmbStrategyOptions o = {.nthreads = 2, .chunks = 2};
    cr_assert_eq(emb_strategy_parallel(&s, &o), 0);
    check_seed(s);
    emb_strategy_destroy(&s);
    cr_assert_eq(emb_strategy_prealloc_concat(&s, &o), 0);
    check_seed(s);
    emb_strategy_destroy(&s);
}

/* ---- bad input: an error, and every output left as it was ---------------------------- */

static int never_called(void *user, EmbTable *const *t, int64_t n, const EmbBatch *b,
                        const EmbPooling *p, const EmbOutputs *o)
{
    (void)user, (void)t, (void)n, (void)b, (void)p, (void)o;
    cr_assert_fail("a custom strategy was called with invalid input");
    return 0;
}

/* The four strategies a bad call is tried on. */
static EmbStrategy *bad_strategy(int k)
{
    EmbStrategy *s = NULL;
    const EmbStrategyOptions o = {.nthreads = 3, .chunks = 4};
    const EmbStrategyCallbacks cb = {.maplookup = never_called};
    int r = k == 0 ? emb_strategy_sequential(&s)
          : k == 1 ? emb_strategy_parallel(&s, &o)
          : k == 2 ? emb_strategy_prealloc_concat(&s, &o)
                   : emb_strategy_custom(&s, &cb, NULL);
    cr_assert_eq(r, 0);
    return s;
}

typedef struct Bad {
    Ens *e;
    EmbBatch b[NT];
    EmbPooling p[NT];
    EmbTable *t[NT];
    PerTable pt;
    EmbOutputs per, cat;
} Bad;

static void bad_reset(Bad *x)
{
    memcpy(x->b, x->e->b, sizeof x->b);
    memcpy(x->p, x->e->p, sizeof x->p);
    memcpy(x->t, x->e->t, sizeof x->t);
    x->per = (EmbOutputs){.per_table = x->pt.buf, .strides = x->pt.strides};
    x->cat.prependrows = 5;
    x->cat.concat_stride = 5 + x->e->width + 7;
}

static void expect_untouched(const Bad *x)
{
    for (int i = 0; i < NT; i++)
        cr_assert(!x->pt.buf[i] || tu_is_poison(x->pt.buf[i], (size_t)(x->e->nbags * x->pt.strides[i])),
                  "per-table output %d written by a failed call", i);
    cr_assert(tu_is_poison(x->cat.concat, (size_t)(x->e->nbags * (5 + x->e->width + 7))),
              "concat output written by a failed call");
}

/* Calls maplookup on every strategy and layout; each must fail with @code. */
static void expect_bad(Bad *x, int64_t n, const EmbOutputs *only, int code, const char *what,
                       const char *needle)
{
    for (int k = 0; k < 4; k++) {
        EmbStrategy *s = bad_strategy(k);
        for (int l = 0; l < 2; l++) {
            const EmbOutputs *o = only ? only : l ? &x->cat : &x->per;
            const int r = emb_maplookup(s, x->t, n, x->b, x->p, o);
            cr_assert_eq(r, code, "%s (%s, layout %d): got %d: %s", what, emb_strategy_name(s),
                         l, r, emb_last_error());
            if (needle)
                cr_assert(strstr(emb_last_error(), needle), "%s: message '%s' lacks '%s'",
                          what, emb_last_error(), needle);
            expect_untouched(x);
        }
        emb_strategy_destroy(&s);
    }
    bad_reset(x);
}

Test(strategies, bad_input_writes_nothing)
{
    Bad x = {.e = ens_create(MIXED, 20, 99)};
    per_table(&x.pt, x.e);
    x.cat = concat(x.e);
    bad_reset(&x);
    expect_bad(&x, 0, NULL, EMB_EINVAL, "ntables 0", "ntables");
    expect_bad(&x, -1, NULL, EMB_EINVAL, "ntables -1", "ntables");
    x.t[3] = NULL;
    expect_bad(&x, NT, NULL, EMB_ENULL, "tables[3] NULL", "tables[3]");
    int64_t *ids8 = (int64_t *)x.e->b[8].ids;
    const int64_t keep = ids8[x.e->b[8].nnz - 1];
    ids8[x.e->b[8].nnz - 1] = emb_table_ncolumns(x.t[8]);
    expect_bad(&x, NT, NULL, EMB_ERANGE, "id out of range in table 8", "tables[8]");
    ids8[x.e->b[8].nnz - 1] = -1;
    expect_bad(&x, NT, NULL, EMB_ERANGE, "negative id in table 8", "position");
    ids8[x.e->b[8].nnz - 1] = keep;
    x.b[2].nnz += 1; /* table 2 is ragged: offsets no longer end at nnz */
    expect_bad(&x, NT, NULL, EMB_EOFFSETS, "offsets of table 2", "tables[2]");
    x.p[5].combiner = (EmbCombiner)9;
    expect_bad(&x, NT, NULL, EMB_EINVAL, "combiner of table 5", "tables[5]");
    x.b[4].nbags -= 1;
    expect_bad(&x, NT, &x.cat, EMB_ESHAPE, "nbags differ in concat", "tables[4]");
    x.cat.concat_stride = 5 + x.e->width - 1;
    expect_bad(&x, NT, &x.cat, EMB_ESHAPE, "concat_stride too small", "concat_stride");
    x.cat.prependrows = -1;
    expect_bad(&x, NT, &x.cat, EMB_EINVAL, "negative prependrows", "prependrows");
    x.per.per_table = NULL;
    expect_bad(&x, NT, &x.per, EMB_ENULL, "no output", NULL);
    float *keep2 = x.pt.buf[2];
    x.pt.buf[2] = NULL;
    expect_bad(&x, NT, &x.per, EMB_ENULL, "per_table[2] NULL", "tables[2]");
    x.pt.buf[2] = keep2;
    x.pt.strides[1] = Ds[1] - 1;
    expect_bad(&x, NT, &x.per, EMB_ESTRIDE, "stride of table 1", "tables[1]");
    x.pt.strides[1] = Ds[1] + 3;

    EmbStrategy *s = bad_strategy(1);
    cr_assert_eq(emb_maplookup(NULL, x.t, NT, x.b, x.p, &x.per), EMB_ENULL);
    cr_assert_eq(emb_maplookup(s, NULL, NT, x.b, x.p, &x.per), EMB_ENULL);
    cr_assert_eq(emb_maplookup(s, x.t, NT, NULL, x.p, &x.per), EMB_ENULL);
    cr_assert_eq(emb_maplookup(s, x.t, NT, x.b, x.p, NULL), EMB_ENULL);
    cr_assert_eq(emb_maplookup_ids(s, x.t, NT, NULL, 20, 1, &x.per), EMB_ENULL);
    const int64_t one = 0;
    cr_assert_eq(emb_maplookup_ids3(s, x.t, NT, &one, -1, 1, &x.per), EMB_EOVERFLOW);
    cr_assert_eq(emb_maplookup_ids3(s, x.t, NT, &one, INT64_MAX, 2, &x.per), EMB_EOVERFLOW);
    expect_untouched(&x);
    emb_strategy_destroy(&s);
    per_table_free(&x.pt);
    free(x.cat.concat);
    ens_destroy(x.e);
}

Test(strategies, bad_options)
{
    EmbStrategy *s = NULL;
    const EmbStrategyOptions bad[] = {{.nthreads = -1}, {.pinning = (EmbPinning)7},
                                      {.chunks = -2}, {.num_splits = -1}};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(emb_strategy_parallel(&s, &bad[i]), EMB_EINVAL, "option set %d", i);
        cr_assert_eq(emb_strategy_prealloc_concat(&s, &bad[i]), EMB_EINVAL, "option set %d", i);
        cr_assert_null(s);
    }
    cr_assert_eq(emb_strategy_parallel(NULL, NULL), EMB_ENULL);
    cr_assert_eq(emb_strategy_sequential(NULL), EMB_ENULL);
    cr_assert_eq(emb_strategy_custom(&s, NULL, NULL), EMB_ENULL);
    emb_strategy_destroy(NULL);
    emb_strategy_destroy(&s);
}

/* ---- custom strategies --------------------------------------------------------------- */

typedef struct Probe {
    int lookups, updates, destroyed;
    int64_t ntables;
    const EmbBatch *batches;
} Probe;

static int probe_lookup(void *user, EmbTable *const *t, int64_t n, const EmbBatch *b,
                        const EmbPooling *p, const EmbOutputs *o)
{
    Probe *pr = user;
    pr->lookups++;
    pr->ntables = n;
    pr->batches = b;
    /* a user strategy: every table on this thread, through the public lookup */
    for (int64_t i = 0; i < n; i++) {
        const int r = emb_lookup(t[i], &b[i], p ? &p[i] : NULL, o->per_table[i],
                                 o->strides ? o->strides[i] : emb_table_featuresize(t[i]));
        if (r)
            return r;
    }
    return pr->lookups == 2 ? EMB_EIO : 0;
}

static int probe_update(void *user, EmbOptimizer *opt, EmbTable *const *t,
                        const EmbGrad *const *g, int64_t n, EmbIndexer *const *ix, unsigned f)
{
    (void)opt, (void)t, (void)g, (void)n, (void)ix, (void)f;
    ((Probe *)user)->updates++;
    return 0;
}

static void probe_destroy(void *user)
{
    ((Probe *)user)->destroyed++;
}

Test(strategies, custom_callbacks)
{
    Probe pr = {0};
    const EmbStrategyCallbacks cb = {probe_lookup, probe_update, probe_destroy};
    EmbStrategy *s = NULL;
    cr_assert_eq(emb_strategy_custom(&s, &cb, &pr), 0);
    cr_assert_str_eq(emb_strategy_name(s), "custom");
    cr_assert_eq(emb_strategy_nthreads(s), 1);
    cr_assert_eq(emb__strategy_kind(s), EMB_STRATEGY_CUSTOM);
    void *user = NULL;
    const EmbStrategyCallbacks *got = emb__strategy_callbacks(s, &user);
    cr_assert(got && got->update_many == probe_update && user == &pr);
    cr_assert_eq(got->update_many(user, NULL, NULL, NULL, 0, NULL, 0), 0);
    cr_assert_eq(pr.updates, 1);

    Ens *e = ens_create(MIXED, 31, 7);
    const int64_t rstride = 5 + e->width + 7;
    float *ref = reference(e, rstride);
    PerTable pt;
    EmbOutputs o = per_table(&pt, e);
    cr_assert_eq(emb_maplookup(s, e->t, NT, e->b, e->p, &o), 0, "%s", emb_last_error());
    cr_assert(pr.lookups == 1 && pr.ntables == NT && pr.batches == e->b);
    expect_per_table(&pt, e, ref, rstride, "custom");
    cr_assert_eq(emb_maplookup(s, e->t, NT, e->b, e->p, &o), EMB_EIO, "the callback's code");
    per_table_free(&pt);
    free(ref);
    ens_destroy(e);
    emb_strategy_destroy(&s);
    cr_assert_eq(pr.destroyed, 1);
    cr_assert_null(s);

    const EmbStrategyCallbacks none = {0};
    cr_assert_eq(emb_strategy_custom(&s, &none, NULL), 0);
    cr_assert_null(emb__strategy_callbacks(s, NULL)->maplookup);
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_create(&t, 4, 8, EMB_F32, NULL), 0);
    float out[8];
    float *outs[] = {out};
    const EmbOutputs one = {.per_table = outs};
    const int64_t id = 1;
    cr_assert_eq(emb_maplookup_ids(s, &t, 1, (const int64_t *const[]){&id}, 1, 1, &one),
                 EMB_ENOTSUP);
    emb_table_destroy(&t);
    emb_strategy_destroy(&s);
}

/* ---- the internal contract of the multi-table update --------------------------------- */

Test(strategies, kinds_threads_and_splits)
{
    EmbStrategy *s = NULL;
    cr_assert_eq(emb_strategy_sequential(&s), 0);
    cr_assert(emb__strategy_kind(s) == EMB_STRATEGY_SEQUENTIAL && emb_strategy_nthreads(s) == 1);
    cr_assert(emb__strategy_num_splits(s) == 1 && !emb__strategy_callbacks(s, NULL));
    cr_assert_str_eq(emb_strategy_name(s), "sequential");
    emb_strategy_destroy(&s);
    cr_assert_eq(emb_strategy_parallel(&s, NULL), 0);
    cr_assert_eq(emb_strategy_nthreads(s), emb_num_physical_cores(), "default: physical cores");
    cr_assert(emb__strategy_num_splits(s) == 1 && emb__strategy_kind(s) == EMB_STRATEGY_PARALLEL);
    emb_strategy_destroy(&s);
    cr_assert_eq(emb_strategy_prealloc_concat(&s, &(EmbStrategyOptions){.nthreads = 3}), 0);
    cr_assert(emb__strategy_num_splits(s) == 4 && emb_strategy_nthreads(s) == 3);
    cr_assert_str_eq(emb_strategy_name(s), "prealloc-concat");
    emb_strategy_destroy(&s);
    cr_assert_eq(emb_strategy_prealloc_concat(&s, &(EmbStrategyOptions){.num_splits = 7}), 0);
    cr_assert_eq(emb__strategy_num_splits(s), 7);
    emb_strategy_destroy(&s);
}

Test(strategies, scratch_grows_never_shrinks)
{
    EmbStrategy *s = NULL;
    cr_assert_eq(emb_strategy_parallel(&s, &(EmbStrategyOptions){.nthreads = 4}), 0);
    cr_assert_eq(emb__strategy_reserve(s, 100), 0);
    void *first[4];
    for (int t = 0; t < 4; t++) {
        first[t] = emb__strategy_scratch(s, t);
        cr_assert(first[t] && ((uintptr_t)first[t] % 64) == 0, "thread %d: 64-byte aligned", t);
        memset(first[t], t, 100);
        for (int u = 0; u < t; u++)
            cr_assert_neq(first[t], first[u], "each thread its own scratch");
    }
    cr_assert_eq(emb__strategy_reserve(s, 64), 0);
    cr_assert_eq(emb__strategy_reserve(s, 128), 0); /* rounded up to 128 already */
    for (int t = 0; t < 4; t++)
        cr_assert_eq(emb__strategy_scratch(s, t), first[t], "no reallocation when it fits");
    cr_assert_eq(emb__strategy_reserve(s, 5000), 0);
    for (int t = 0; t < 4; t++) {
        void *p = emb__strategy_scratch(s, t);
        cr_assert(p && ((uintptr_t)p % 64) == 0);
        memset(p, 0, 5000);
    }
    cr_assert_eq(emb__strategy_reserve(s, SIZE_MAX), EMB_EOVERFLOW);
    cr_assert_neq(emb__strategy_scratch(s, 0), NULL, "a failed reserve keeps the scratch");
    emb_strategy_destroy(&s);
}

typedef struct Tally {
    EmbStrategy *s;
    int nthreads;
    int64_t seen[500];
    int64_t order[500];
    int thread_of[500];
} Tally;

static void tally_task(void *ctx, int64_t task, int thread)
{
    Tally *t = ctx;
    int64_t *mine = emb__strategy_scratch(t->s, thread);
    t->seen[task]++;
    t->thread_of[task] = thread;
    if (t->nthreads == 1) /* the order of one thread (other threads would share slots) */
        t->order[mine[0] % 500] = task;
    mine[0]++;
}

Test(strategies, run_every_task_once)
{
    for (int nt = 1; nt <= 4; nt++) {
        Tally *t = calloc(1, sizeof *t);
        t->nthreads = nt;
        const EmbStrategyOptions o = {.nthreads = nt, .pinning = (EmbPinning)(nt % 3)};
        cr_assert_eq(emb_strategy_prealloc_concat(&t->s, &o), 0);
        cr_assert_eq(emb__strategy_reserve(t->s, sizeof(int64_t)), 0);
        for (int k = 0; k < nt; k++)
            *(int64_t *)emb__strategy_scratch(t->s, k) = 0;
        emb__strategy_run(t->s, 0, tally_task, t);
        emb__strategy_run(t->s, 500, tally_task, t);
        int64_t total = 0;
        for (int k = 0; k < nt; k++)
            total += *(int64_t *)emb__strategy_scratch(t->s, k);
        cr_assert_eq(total, 500, "every task counted on some thread's scratch");
        for (int i = 0; i < 500; i++) {
            cr_assert_eq(t->seen[i], 1, "%d threads: task %d ran %lld times", nt, i,
                         (long long)t->seen[i]);
            cr_assert(t->thread_of[i] >= 0 && t->thread_of[i] < nt);
            if (nt == 1)
                cr_assert_eq(t->order[i], i, "one thread: tasks in index order");
        }
        emb_strategy_destroy(&t->s);
        free(t);
    }
}

/* A run of phases whose serial steps and some tasks outlast the barrier's spin (1 ms
 * sleeps), so that the waiting threads go to sleep there and must be woken. */
typedef struct Phased {
    atomic_int done[4][64];
    int steps;
    bool stopped;
} Phased;

static void nap(void)
{
    const struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
}

static void phased_task(void *ctx, int64_t task, int thread)
{
    (void)thread;
    Phased *p = ctx;
    if (task % 16 == 0) /* a slow task: the others finish first and wait */
        nap();
    atomic_fetch_add(&p->done[p->steps - 1][task], 1);
}

static int64_t phased_step(void *ctx, int phase, emb_task_fn *fn)
{
    Phased *p = ctx;
    cr_assert_eq(p->steps, phase, "the steps in order, once each");
    for (int q = 0; q < phase; q++) /* every task of the phases before done, once */
        for (int i = 0; i < 64; i++)
            cr_assert_eq(atomic_load(&p->done[q][i]), 1, "phase %d task %d", q, i);
    p->steps++;
    if (phase == 3) {
        p->stopped = true;
        return -1; /* ends the run */
    }
    nap(); /* a long serial step: the team waits asleep */
    *fn = phased_task;
    return 64;
}

Test(strategies, phases_wake_sleeping_threads)
{
    for (int nt = 1; nt <= 3; nt++) {
        EmbStrategy *s = NULL;
        const EmbStrategyOptions o = {.nthreads = nt};
        cr_assert_eq(emb_strategy_prealloc_concat(&s, &o), 0);
        Phased *p = calloc(1, sizeof *p);
        emb__strategy_run_phases(s, nt, 5, phased_step, p);
        cr_assert_eq(p->steps, 4, "%d threads: the run ends at the step that says -1", nt);
        cr_assert(p->stopped);
        for (int q = 0; q < 3; q++)
            for (int i = 0; i < 64; i++)
                cr_assert_eq(atomic_load(&p->done[q][i]), 1);
        free(p);
        emb_strategy_destroy(&s);
    }
}

#if EMB_HAVE_HWLOC && EMB_HAVE_OPENMP
typedef struct Affinity {
    cpu_set_t set[2];
    int seen[2];
} Affinity;

static void affinity_task(void *ctx, int64_t task, int thread)
{
    (void)task;
    Affinity *a = ctx;
    if (thread < 2 && !a->seen[thread]) {
        sched_getaffinity(0, sizeof a->set[thread], &a->set[thread]);
        a->seen[thread] = 1;
    }
    for (volatile int spin = 0; spin < 200000; spin++) /* let the other thread take tasks */
        ;
}

Test(strategies, pinning_gives_threads_disjoint_cores)
{
    if (emb_num_physical_cores() < 2)
        cr_skip_test("one core: nothing to pin apart");
    for (int pin = EMB_PIN_COMPACT; pin <= EMB_PIN_SCATTER; pin++) {
        Affinity a = {0};
        EmbStrategy *s = NULL;
        const EmbStrategyOptions o = {.nthreads = 2, .pinning = (EmbPinning)pin};
        cr_assert_eq(emb_strategy_parallel(&s, &o), 0);
        for (int tries = 0; tries < 50 && !(a.seen[0] && a.seen[1]); tries++)
            emb__strategy_run(s, 64, affinity_task, &a); /* until both threads took tasks */
        cr_assert(a.seen[0] && a.seen[1], "both threads ran tasks");
        cpu_set_t both;
        CPU_AND(&both, &a.set[0], &a.set[1]);
        cr_assert(CPU_COUNT(&a.set[0]) > 0 && CPU_COUNT(&a.set[1]) > 0);
        cr_assert_eq(CPU_COUNT(&both), 0, "pinning %d: the two threads share no CPU", pin);
        emb_strategy_destroy(&s);
    }
}
#endif
