/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_lowp.c — low-precision optimizer state (state_dtype) and stochastic rounding of
 * f16 / bf16 rows (issue 42): the state kept in 16 bits and close to f32 state's training,
 * the same bits for any strategy, thread and split count, the 1,000-step drift of a bf16
 * table, checkpoints recording the state dtype, and the new options' bad values.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "test_files.h"
#include "test_update_ref.h"

#define NCOL 200
#define DIM 16
#define NID 64

/* Step @k's seeded sparse gradient (duplicate ids included) applied to @t. */
static void step(EmbOptimizer *o, EmbTable *t, EmbGrad *g, EmbIndexer *ix, int k)
{
    int64_t ids[NID];
    float rows[NID * DIM];
    uint64_t seed = 77u * (uint64_t)k + 5;
    for (int j = 0; j < NID; j++)
        ids[j] = (int64_t)(tu_rand(&seed) % (NCOL / 2));
    for (int j = 0; j < NID * DIM; j++)
        rows[j] = tu_randf(&seed);
    const EmbSparseGrad sg = {.ids = ids, .n = NID, .featuresize = DIM, .values = rows,
                              .stride = DIM};
    cr_assert_eq(emb_grad_set_sparse(g, t, &sg), 0);
    cr_assert_eq(emb_update(o, t, g, ix, 0), 0, "%s", emb_last_error());
}

static EmbOptimizerConfig config(EmbOptimizerKind kind, EmbDtype sdt, int sr)
{
    EmbOptimizerConfig c = emb_optimizer_defaults(kind, kind == EMB_OPT_ADAM ? 0.01f : 0.05f);
    c.state_dtype = sdt;
    c.stochastic_rounding = sr;
    return c;
}

/* @t trained @n steps by a new optimizer of @c (returned). */
static EmbOptimizer *train(EmbTable *t, const EmbOptimizerConfig *c, int n)
{
    EmbOptimizer *o = NULL;
    EmbIndexer *ix = NULL;
    EmbGrad *g = NULL;
    cr_assert_eq(emb_optimizer_create(&o, c), 0, "%s", emb_last_error());
    cr_assert_eq(emb_indexer_create(&ix), 0);
    cr_assert_eq(emb_grad_create(&g), 0);
    for (int k = 0; k < n; k++)
        step(o, t, g, ix, k);
    emb_indexer_destroy(&ix);
    emb_grad_destroy(&g);
    return o;
}

static float *read_all(const EmbTable *t)
{
    const int64_t n = emb_table_ncolumns(t) * emb_table_featuresize(t);
    float *v = malloc((size_t)n * sizeof *v);
    cr_assert_eq(emb_table_read(t, v, emb_table_featuresize(t)), 0);
    return v;
}

static bool same_bits(const EmbTable *a, const EmbTable *b)
{
    int64_t sa, sb;
    const char *pa = emb_table_data(a, &sa), *pb = emb_table_data(b, &sb);
    const size_t rb = emb_dtype_row_bytes(emb_table_dtype(a), emb_table_featuresize(a));
    for (int64_t c = 0; c < emb_table_ncolumns(a); c++)
        if (memcmp(pa + c * sa * emb_dtype_size(emb_table_dtype(a)),
                   pb + c * sb * emb_dtype_size(emb_table_dtype(b)), rb))
            return false;
    return true;
}

Test(lowp, state_kept_in_16_bits_trains_close_to_f32_state)
{
    for (int kind = EMB_OPT_ADAGRAD; kind <= EMB_OPT_ADAM; kind++)
        for (EmbDtype sdt = EMB_F16; sdt <= EMB_BF16; sdt++)
            for (int sr = 0; sr <= 1; sr++) {
                EmbTable *a = tu_table(NCOL, DIM, EMB_F32, 3), *b = tu_table(NCOL, DIM, EMB_F32, 3);
                const EmbOptimizerConfig ca = config(kind, EMB_F32, 0), cb = config(kind, sdt, sr);
                EmbOptimizer *oa = train(a, &ca, 30), *ob = train(b, &cb, 30);
                EmbTable *sa, *sb;
                cr_assert_eq(emb_optimizer_state(oa, a, 0, &sa, NULL), 0);
                cr_assert_eq(emb_optimizer_state(ob, b, 0, &sb, NULL), 0);
                cr_assert_eq(emb_table_dtype(sb), sdt);
                cr_assert_eq(emb_table_featuresize(sa), emb_table_featuresize(sb));
                /* half the bytes per state row */
                cr_assert_eq(2 * emb_dtype_row_bytes(sdt, emb_table_featuresize(sb)),
                             emb_dtype_row_bytes(EMB_F32, emb_table_featuresize(sa)));
                float *va = read_all(a), *vb = read_all(b);
                double moved = 0, diff = 0;
                float *v0 = read_all(tu_table(NCOL, DIM, EMB_F32, 3));
                for (int i = 0; i < NCOL * DIM; i++) {
                    moved += fabs((double)va[i] - v0[i]);
                    diff += fabs((double)va[i] - vb[i]);
                }
                /* the steps taken differ from f32 state's by a few percent at most */
                cr_assert(diff < 0.05 * moved, "kind %d state %d sr %d: |w - w_f32| %g of "
                          "steps %g", kind, (int)sdt, sr, diff, moved);
                cr_assert(diff > 0.0, "kind %d: the 16-bit state changed nothing", kind);
                free(va), free(vb), free(v0);
                emb_optimizer_destroy(&oa), emb_optimizer_destroy(&ob);
                emb_table_destroy(&a), emb_table_destroy(&b);
            }
}

/* One step from zero state: the row the same bits as with f32 state, the 16-bit state that
 * f32 state rounded to nearest even (the 16-bit state's loop against the f32 one). */
Test(lowp, first_step_is_the_f32_step_with_its_state_rounded_to_nearest)
{
    const EmbOptimizerKind kinds[] = {EMB_OPT_ADAGRAD, EMB_OPT_ROWWISE_ADAGRAD, EMB_OPT_ADAM};
    for (int k = 0; k < 3; k++)
        for (EmbDtype sdt = EMB_F16; sdt <= EMB_BF16; sdt++)
            for (int clip = 0; clip <= 1; clip++) {
                EmbTable *a = tu_table(NCOL, DIM, EMB_F32, 3), *b = tu_table(NCOL, DIM, EMB_F32, 3);
                EmbOptimizerConfig ca = config(kinds[k], EMB_F32, 0), cb = config(kinds[k], sdt, 0);
                ca.max_gradient = cb.max_gradient = clip ? 0.25f : 0.0f;
                EmbOptimizer *oa = train(a, &ca, 1), *ob = train(b, &cb, 1);
                cr_assert(same_bits(a, b), "kind %d state %d clip %d: rows", kinds[k], (int)sdt,
                          clip);
                EmbTable *sa, *sb, *r = NULL;
                cr_assert_eq(emb_optimizer_state(oa, a, 0, &sa, NULL), 0);
                cr_assert_eq(emb_optimizer_state(ob, b, 0, &sb, NULL), 0);
                const int32_t w = emb_table_featuresize(sa);
                cr_assert_eq(emb_table_create(&r, NCOL, w, sdt, NULL), 0);
                float *va = read_all(sa);
                cr_assert_eq(emb_table_assign(r, va, NCOL, w, w), 0); /* rounded to nearest */
                cr_assert(same_bits(r, sb), "kind %d state %d clip %d: state", kinds[k],
                          (int)sdt, clip);
                free(va);
                emb_table_destroy(&r);
                emb_optimizer_destroy(&oa), emb_optimizer_destroy(&ob);
                emb_table_destroy(&a), emb_table_destroy(&b);
            }
}

/* Tables of f16 / bf16 trained by emb_update_many under @s: their bits. */
static void train_many(EmbStrategy *s, const EmbOptimizerConfig *c, EmbTable *t[3])
{
    EmbOptimizer *o = NULL;
    EmbIndexer *ix[3];
    EmbGrad *g[3];
    cr_assert_eq(emb_optimizer_create(&o, c), 0, "%s", emb_last_error());
    for (int i = 0; i < 3; i++) {
        t[i] = tu_table(NCOL, DIM, i == 1 ? EMB_F16 : EMB_BF16, 11 + (uint64_t)i);
        cr_assert_eq(emb_indexer_create(&ix[i]), 0);
        cr_assert_eq(emb_grad_create(&g[i]), 0);
    }
    int64_t ids[3][NID];
    float rows[NID * DIM];
    for (int k = 0; k < 6; k++) {
        uint64_t seed = 31u * (uint64_t)k + 1;
        for (int j = 0; j < NID * DIM; j++)
            rows[j] = tu_randf(&seed) * 1e-3f; /* small steps: rounding decides */
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < NID; j++)
                ids[i][j] = (int64_t)(tu_rand(&seed) % NCOL);
            const EmbSparseGrad sg = {.ids = ids[i], .n = NID, .featuresize = DIM,
                                      .values = rows, .stride = DIM};
            cr_assert_eq(emb_grad_set_sparse(g[i], t[i], &sg), 0);
        }
        cr_assert_eq(emb_update_many(s, o, t, (const EmbGrad *const *)g, 3, ix, 0), 0, "%s",
                     emb_last_error());
    }
    for (int i = 0; i < 3; i++) {
        emb_indexer_destroy(&ix[i]);
        emb_grad_destroy(&g[i]);
    }
    emb_optimizer_destroy(&o);
}

Test(lowp, stochastic_rounding_same_bits_any_strategy_thread_and_split_count)
{
    for (int kind = EMB_OPT_SGD; kind <= EMB_OPT_ADAM; kind++) {
        const EmbOptimizerConfig c = config(kind, kind == EMB_OPT_ADAM ? EMB_BF16 : EMB_F32, 1);
        EmbStrategy *seq = NULL;
        cr_assert_eq(emb_strategy_sequential(&seq), 0);
        EmbTable *ref[3], *got[3], *rne[3];
        train_many(seq, &c, ref);
        const EmbOptimizerConfig cn = config(kind, c.state_dtype, 0);
        train_many(seq, &cn, rne);
        for (int i = 0; i < 3; i++) /* stochastic rounding changes the result */
            cr_assert(!same_bits(ref[i], rne[i]), "kind %d table %d", kind, i);
        for (int threads = 1; threads <= 3; threads++)
            for (int splits = 1; splits <= 4; splits += 3)
                for (int par = 0; par <= 1; par++) {
                    const EmbStrategyOptions so = {.nthreads = threads, .num_splits = splits};
                    EmbStrategy *s = NULL;
                    cr_assert_eq(par ? emb_strategy_parallel(&s, &so)
                                     : emb_strategy_prealloc_concat(&s, &so), 0);
                    train_many(s, &c, got);
                    for (int i = 0; i < 3; i++) {
                        cr_assert(same_bits(ref[i], got[i]), "kind %d table %d threads %d "
                                  "splits %d %s", kind, i, threads, splits, par ? "par" : "pc");
                        emb_table_destroy(&got[i]);
                    }
                    emb_strategy_destroy(&s);
                }
        for (int i = 0; i < 3; i++)
            emb_table_destroy(&ref[i]), emb_table_destroy(&rne[i]);
        emb_strategy_destroy(&seq);
    }
}

/* Mean drift (w_T - w_0) of a table of @dt trained by SGD lr 1e-4 for 1,000 steps with a
 * gradient in [0.5, 1.5) on every element. */
static double drift(EmbDtype dt, int sr)
{
    enum { N = 512, D = 64 };
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_create(&t, N, D, dt, NULL), 0);
    float *w0 = malloc((size_t)N * D * sizeof *w0), *g = malloc((size_t)N * D * sizeof *g);
    uint64_t seed = 9;
    for (int i = 0; i < N * D; i++)
        w0[i] = 0.5f + 0.5f * fabsf(tu_randf(&seed)); /* bf16's ulp here: 2^-8 .. 2^-9 */
    cr_assert_eq(emb_table_assign(t, w0, N, D, D), 0);
    cr_assert_eq(emb_table_read(t, w0, D), 0);
    int64_t ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = i;
    EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_SGD, 1e-4f);
    c.stochastic_rounding = sr;
    EmbOptimizer *o = NULL;
    EmbIndexer *ix = NULL;
    EmbGrad *gr = NULL;
    cr_assert_eq(emb_optimizer_create(&o, &c), 0);
    cr_assert_eq(emb_indexer_create(&ix), 0);
    cr_assert_eq(emb_grad_create(&gr), 0);
    for (int k = 0; k < 1000; k++) {
        for (int i = 0; i < N * D; i++)
            g[i] = 1.0f + 0.5f * tu_randf(&seed);
        const EmbSparseGrad sg = {.ids = ids, .n = N, .featuresize = D, .values = g, .stride = D};
        cr_assert_eq(emb_grad_set_sparse(gr, t, &sg), 0);
        cr_assert_eq(emb_update(o, t, gr, ix, 0), 0, "%s", emb_last_error());
    }
    float *w = malloc((size_t)N * D * sizeof *w);
    cr_assert_eq(emb_table_read(t, w, D), 0);
    double s = 0;
    for (int i = 0; i < N * D; i++)
        s += (double)w[i] - w0[i];
    free(w), free(w0), free(g);
    emb_optimizer_destroy(&o), emb_indexer_destroy(&ix), emb_grad_destroy(&gr);
    emb_table_destroy(&t);
    return s / (N * D);
}

Test(lowp, bf16_sgd_drift_with_stochastic_rounding_within_1_percent_of_f32)
{
    const double f32 = drift(EMB_F32, 0), sr = drift(EMB_BF16, 1), rne = drift(EMB_BF16, 0);
    const double f16 = drift(EMB_F16, 1);
    cr_log_info("mean drift f32 %.6f, bf16 stochastic %.6f, bf16 nearest %.6f, "
                "f16 stochastic %.6f", f32, sr, rne, f16);
    cr_assert(fabs(sr - f32) <= 0.01 * fabs(f32), "bf16 SR %g, f32 %g", sr, f32);
    cr_assert(fabs(f16 - f32) <= 0.01 * fabs(f32), "f16 SR %g, f32 %g", f16, f32);
    cr_assert(fabs(rne) < 0.5 * fabs(f32), "to nearest, small steps vanish: %g", rne);
}

Test(lowp, checkpoint_records_the_state_dtype_and_refuses_another)
{
    char dir[64], path[512];
    tmpdir(dir);
    for (EmbDtype sdt = EMB_F32; sdt <= EMB_BF16; sdt++) {
        EmbStore *st[3];
        EmbTable *t[3];
        EmbOptimizer *o[3];
        for (int r = 0; r < 3; r++) {
            cr_assert_eq(emb_store_create(&st[r]), 0);
            const EmbVariableSpec v = {.name = "emb", .ncolumns = NCOL, .featuresize = DIM,
                                       .dtype = EMB_BF16,
                                       .init = {EMB_INIT_UNIFORM, -1, 1, 1 + (uint64_t)r}};
            cr_assert_eq(emb_store_get(st[r], &v, EMB_REUSE_NO, &t[r]), 0);
            /* run 2's optimizer keeps another state dtype */
            const EmbOptimizerConfig c = config(EMB_OPT_ADAM, r == 2 ? (sdt + 1) % 3 : sdt, 1);
            cr_assert_eq(emb_optimizer_create(&o[r], &c), 0);
        }
        EmbIndexer *ix = NULL;
        EmbGrad *g = NULL;
        cr_assert_eq(emb_indexer_create(&ix), 0);
        cr_assert_eq(emb_grad_create(&g), 0);
        for (int k = 0; k < 4; k++)
            step(o[0], t[0], g, ix, k);
        const EmbSaverOptions so = {.optimizer = o[0]};
        EmbSaver *sv = NULL;
        cr_assert_eq(emb_saver_create(&sv, dir, "lowp", &so), 0);
        cr_assert_eq(emb_saver_save(sv, st[0], 4, path, sizeof path), 0, "%s", emb_last_error());
        EmbCheckpoint *ck = NULL;
        EmbOptimizerConfig fc;
        cr_assert_eq(emb_checkpoint_open(&ck, path, 0), 0);
        cr_assert_eq(emb_checkpoint_optimizer(ck, &fc), 0);
        cr_assert_eq(fc.state_dtype, sdt, "the file records state %d", (int)sdt);
        emb_checkpoint_close(&ck);
        /* the same state dtype: resumed bit for bit */
        EmbRestoreOptions ro = {.optimizer = o[1]};
        cr_assert_eq(emb_checkpoint_restore_ex(st[1], path, &ro, NULL), 0, "%s", emb_last_error());
        for (int k = 4; k < 8; k++) {
            step(o[0], t[0], g, ix, k);
            step(o[1], t[1], g, ix, k);
        }
        cr_assert(same_bits(t[0], t[1]));
        EmbTable *s0, *s1;
        cr_assert_eq(emb_optimizer_state(o[0], t[0], 0, &s0, NULL), 0);
        cr_assert_eq(emb_optimizer_state(o[1], t[1], 0, &s1, NULL), 0);
        cr_assert(same_bits(s0, s1));
        /* another: refused, naming both dtypes, nothing written */
        float *before = read_all(t[2]);
        ro.optimizer = o[2];
        cr_assert_eq(emb_checkpoint_restore_ex(st[2], path, &ro, NULL), EMB_EINVAL);
        cr_assert(strstr(emb_last_error(), "state_dtype"), "%s", emb_last_error());
        float *after = read_all(t[2]);
        cr_assert_arr_eq(before, after, NCOL * DIM * sizeof(float));
        free(before), free(after);
        emb_saver_destroy(&sv);
        emb_indexer_destroy(&ix), emb_grad_destroy(&g);
        for (int r = 0; r < 3; r++)
            emb_optimizer_destroy(&o[r]), emb_store_destroy(&st[r]);
    }
    rmdir_all(dir);
}

Test(lowp, bad_options_are_refused)
{
    EmbOptimizer *o = NULL;
    EmbOptimizerConfig c = config(EMB_OPT_ADAM, EMB_INT8, 0);
    cr_assert_eq(emb_optimizer_create(&o, &c), EMB_EINVAL);
    cr_assert(strstr(emb_last_error(), "state_dtype"));
    c = config(EMB_OPT_ADAM, EMB_F32, 2);
    cr_assert_eq(emb_optimizer_create(&o, &c), EMB_EINVAL);
    cr_assert(strstr(emb_last_error(), "stochastic_rounding"));
    c = config(EMB_OPT_ADAM, EMB_BF16, 1);
    cr_assert_eq(emb_optimizer_create(&o, &c), 0);
    EmbOptimizerConfig d = c;
    d.state_dtype = EMB_F32;
    cr_assert_eq(emb_optimizer_set_config(o, &d), EMB_EINVAL);
    d = c;
    d.stochastic_rounding = 0; /* may change */
    cr_assert_eq(emb_optimizer_set_config(o, &d), 0);
    emb_optimizer_destroy(&o);
}

Test(lowp, tables_keeping_state_with_their_rows_refuse_16_bit_state)
{
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_dynamic_create(&t, DIM, EMB_F32, NULL), 0, "%s", emb_last_error());
    for (EmbDtype sdt = EMB_F32; sdt <= EMB_BF16; sdt++) {
        const EmbOptimizerConfig c = config(EMB_OPT_ADAM, sdt, 0);
        EmbOptimizer *o = NULL;
        cr_assert_eq(emb_optimizer_create(&o, &c), 0);
        const int r = emb_optimizer_attach(o, t);
        cr_assert_eq(r, sdt == EMB_F32 ? 0 : EMB_ENOTSUP, "state %d: %d", (int)sdt, r);
        if (r)
            cr_assert(strstr(emb_last_error(), "state_dtype"), "%s", emb_last_error());
        emb_optimizer_destroy(&o);
    }
    emb_table_destroy(&t);
}

/* A bf16 table rounded stochastically is stepped as f32 in a scratch row: weight decay
 * (either mode) and the counter optimizer (with or without decay) read that row as f32, so the steps the table
 * takes keep close to those of an f32 table trained the same way. */
Test(lowp, stochastic_rounding_with_weight_decay_and_the_counter_optimizer)
{
    const EmbOptimizerKind kinds[] = {EMB_OPT_SGD, EMB_OPT_ADAGRAD,
                                      EMB_OPT_ROWWISE_ADAGRAD_COUNTER};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (int mode = -1; mode <= EMB_DECAY_DECOUPLED; mode++) { /* -1: no decay */
            EmbTable *a = tu_table(NCOL, DIM, EMB_F32, 3), *b = tu_table(NCOL, DIM, EMB_BF16, 3);
            float *a0 = read_all(a), *b0 = read_all(b);
            EmbOptimizerConfig ca = config(kinds[k], EMB_F32, 0);
            ca.weight_decay = mode < 0 ? 0.0f : 0.1f;
            ca.weight_decay_mode = mode < 0 ? EMB_DECAY_L2 : (EmbWeightDecay)mode;
            EmbOptimizerConfig cb = ca;
            cb.stochastic_rounding = 1;
            EmbOptimizer *oa = train(a, &ca, 20), *ob = train(b, &cb, 20);
            float *va = read_all(a), *vb = read_all(b);
            double moved = 0, diff = 0;
            for (int i = 0; i < NCOL * DIM; i++) {
                cr_assert(isfinite(vb[i]), "kind %d mode %d: element %d is %g", (int)kinds[k],
                          mode, i, (double)vb[i]);
                moved += fabs((double)va[i] - a0[i]);
                diff += fabs(((double)va[i] - a0[i]) - ((double)vb[i] - b0[i]));
            }
            cr_assert(diff < 0.05 * moved, "kind %d mode %d: steps differ by %g of %g",
                      (int)kinds[k], mode, diff, moved);
            free(a0), free(b0), free(va), free(vb);
            emb_optimizer_destroy(&oa), emb_optimizer_destroy(&ob);
            emb_table_destroy(&a), emb_table_destroy(&b);
        }
}
