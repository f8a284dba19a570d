/* SPDX-License-Identifier: BSD-2-Clause */
/* test_clip.c — gradient clipping (EmbOptimizerConfig max_gradient, max_row_norm,
 * max_global_norm): against a plain reference (clip, then the optimizer) for every
 * optimizer and dtype, the same bits for every strategy, thread and split count, and bad
 * values refused naming the field. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_ensemble.h"
#include "test_files.h"

#define NCOL 64
#define D 8

/* The reference's element and row clipping of one f32 row, in the library's order (the
 * 8-lane Σ g² of kernels.h), so that a pre-clipped gradient is the same bits. */
static void clip_row_f32(float *g, int32_t n, float maxg, float maxn)
{
    for (int32_t i = 0; i < n && maxg > 0; i++)
        g[i] = g[i] > maxg ? maxg : g[i] < -maxg ? -maxg : g[i];
    float l[8] = {0};
    for (int32_t i = 0; i < n; i++)
        l[i % 8] = l[i % 8] + g[i] * g[i];
    const float nrm = sqrtf(((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7])));
    if (maxn > 0 && nrm > maxn)
        for (int32_t i = 0; i < n; i++)
            g[i] = g[i] * (maxn / nrm);
}

/* One emb_update of distinct ids 0, 2, 4, ... with rows @rows under @c into a fresh table
 * of @dt: its checksum. */
static uint64_t one_update(EmbOptimizerConfig c, EmbDtype dt, const float *rows)
{
    EmbTable *t = tu_table(NCOL, D, dt, 7);
    cr_assert(t);
    Kit k;
    cr_assert_eq(kit_init(&k, c), 0, "%s", emb_last_error());
    int64_t ids[NCOL / 2];
    for (int64_t i = 0; i < NCOL / 2; i++)
        ids[i] = 2 * i;
    for (int s = 0; s < 2; s++) { /* the second step sees the first's state and other rows
                                     (one scale-invariant optimizer step would not tell) */
        const EmbSparseGrad sg = {.ids = ids, .n = NCOL / 2 - s, .featuresize = D,
                                  .values = rows + s * D, .stride = D};
        cr_assert_eq(emb_grad_set_sparse(k.g, t, &sg), 0);
        cr_assert_eq(emb_update(k.o, t, k.g, k.ix, 0), 0, "%s", emb_last_error());
    }
    const uint64_t sum = tu_checksum(t);
    kit_free(&k);
    emb_table_destroy(&t);
    return sum;
}

/* Element-wise and row-norm clipping are the optimizer on the clipped gradient, bit for
 * bit, for every optimizer, dtype (quantized included) and weight decay; and they bite. */
Test(clip, element_and_row_clip_are_the_optimizer_on_clipped_rows)
{
    const EmbDtype dts[] = {EMB_F32, EMB_F16, EMB_BF16, EMB_INT8};
    float rows[NCOL / 2 * D], clipped[NCOL / 2 * D];
    uint64_t seed = 11;
    for (int i = 0; i < NCOL / 2 * D; i++)
        rows[i] = 2.0f * tu_randf(&seed);
    const float cases[3][2] = {{0.5f, 0.0f}, {0.0f, 1.0f}, {0.7f, 1.2f}};
    for (int kind = EMB_OPT_SGD; kind <= EMB_OPT_ADAM; kind++)
        for (size_t di = 0; di < sizeof dts / sizeof *dts; di++)
            for (int cs = 0; cs < 3; cs++)
                for (int wd = 0; wd < 2; wd++) {
                    EmbOptimizerConfig plain = emb_optimizer_defaults((EmbOptimizerKind)kind,
                                                                      0.05f);
                    plain.weight_decay = wd ? 0.01f : 0.0f;
                    EmbOptimizerConfig c = plain;
                    c.max_gradient = cases[cs][0];
                    c.max_row_norm = cases[cs][1];
                    memcpy(clipped, rows, sizeof rows);
                    for (int r = 0; r < NCOL / 2; r++)
                        clip_row_f32(clipped + r * D, D, c.max_gradient, c.max_row_norm);
                    const uint64_t got = one_update(c, dts[di], rows);
                    cr_assert_eq(got, one_update(plain, dts[di], clipped),
                                 "kind %d dtype %d case %d wd %d", kind, (int)dts[di], cs, wd);
                    cr_assert_neq(got, one_update(plain, dts[di], rows),
                                  "kind %d dtype %d case %d: clipping changed nothing", kind,
                                  (int)dts[di], cs);
                }
}

/* Two f32 tables with duplicate ids under emb_update_many with all three clippings: a
 * double reference (sum, clamp, row norm, global norm over both tables, optimizer). */
Test(clip, global_norm_over_the_call_matches_a_double_reference)
{
    enum { N = 96, T = 2 };
    for (int kind = EMB_OPT_SGD; kind <= EMB_OPT_ADAM; kind++) {
        EmbOptimizerConfig c = emb_optimizer_defaults((EmbOptimizerKind)kind, 0.05f);
        c.max_gradient = 0.6f;
        c.max_row_norm = 1.1f;
        c.max_global_norm = 2.0f;
        EmbTable *t[T];
        EmbGrad *g[T];
        EmbIndexer *ix[T];
        EmbOptimizer *o = NULL;
        cr_assert_eq(emb_optimizer_create(&o, &c), 0);
        int64_t ids[T][N];
        float rows[T][N * D];
        double *W[T], *G[T];
        char touched[T][NCOL];
        RefOpt ref[T];
        uint64_t seed = 5 + (uint64_t)kind;
        for (int i = 0; i < T; i++) {
            t[i] = tu_table(NCOL, D, EMB_F32, 20 + (uint64_t)i);
            cr_assert_eq(emb_grad_create(&g[i]), 0);
            cr_assert_eq(emb_indexer_create(&ix[i]), 0);
            W[i] = tu_read_double(t[i]);
            G[i] = calloc(NCOL * D, sizeof(double));
            memset(touched[i], 0, NCOL);
            ref_opt_init(&ref[i], c, NCOL, D);
            for (int k = 0; k < N; k++) {
                ids[i][k] = (int64_t)(tu_rand(&seed) % NCOL);
                touched[i][ids[i][k]] = 1;
                for (int e = 0; e < D; e++) {
                    rows[i][k * D + e] = tu_randf(&seed);
                    G[i][ids[i][k] * D + e] += rows[i][k * D + e];
                }
            }
            const EmbSparseGrad sg = {.ids = ids[i], .n = N, .featuresize = D,
                                      .values = rows[i], .stride = D};
            cr_assert_eq(emb_grad_set_sparse(g[i], t[i], &sg), 0);
        }
        EmbStrategy *s = NULL;
        cr_assert_eq(emb_strategy_sequential(&s), 0);
        cr_assert_eq(emb_update_many(s, o, t, (const EmbGrad *const *)g, T, ix, 0), 0, "%s",
                     emb_last_error());
        double sq = 0;
        for (int i = 0; i < T; i++)
            for (int col = 0; col < NCOL; col++) {
                double *r = G[i] + col * D, n2 = 0;
                for (int e = 0; e < D; e++) {
                    r[e] = fmin(fmax(r[e], -c.max_gradient), c.max_gradient);
                    n2 += r[e] * r[e];
                }
                const double scale = sqrt(n2) > c.max_row_norm ? c.max_row_norm / sqrt(n2) : 1;
                for (int e = 0; e < D; e++)
                    r[e] *= scale;
                sq += n2 * scale * scale;
            }
        const double gs = fmin(1.0, c.max_global_norm / (sqrt(sq) + 1e-6));
        cr_assert_lt(gs, 0.9, "the global norm %g does not bite", sqrt(sq));
        for (int i = 0; i < T; i++) {
            for (int e = 0; e < NCOL * D; e++)
                G[i][e] *= gs;
            ref_opt_step(&ref[i], W[i], G[i], touched[i], NCOL);
            double *got = tu_read_double(t[i]);
            for (int e = 0; e < NCOL * D; e++)
                cr_assert(fabs(got[e] - W[i][e]) < 2e-5, "kind %d table %d element %d: %g, "
                          "reference %g", kind, i, e, got[e], W[i][e]);
            free(got);
        }
        emb_strategy_destroy(&s);
        emb_optimizer_destroy(&o);
        for (int i = 0; i < T; i++) {
            free(W[i]);
            free(G[i]);
            free(ref[i].s);
            emb_grad_destroy(&g[i]);
            emb_indexer_destroy(&ix[i]);
            emb_table_destroy(&t[i]);
        }
    }
}

/* One emb_update_many of @m's recorded gradients under @s (or prepare + commit). */
static void many_step(EmbStrategy *s, Model *m, bool two_phase)
{
    if (two_phase) {
        cr_assert_eq(emb_update_many_prepare(s, m->opt, m->t, (const EmbGrad *const *)m->g,
                                             NT, m->ix, 0), 0, "%s", emb_last_error());
        cr_assert_eq(emb_update_many_commit(s), 0);
    } else {
        cr_assert_eq(emb_update_many(s, m->opt, m->t, (const EmbGrad *const *)m->g, NT, m->ix,
                                     0), 0, "%s", emb_last_error());
    }
}

/* Each table's checksum into @sums, then @m freed. */
static void model_sums_free(Model *m, uint64_t sums[NT])
{
    for (int i = 0; i < NT; i++)
        sums[i] = tu_checksum(m->t[i]);
    model_free(m);
}

/* Two steps of the four-table ensemble (every dtype, pooling, max_norm, MAX) under @s
 * (emb_update_many, or prepare + commit with @two_phase): each table's checksum. */
static void ensemble_steps(EmbOptimizerConfig c, EmbStrategy *s, bool two_phase,
                           uint64_t sums[NT])
{
    Model m;
    Data d;
    model_init(&m, c);
    for (int step = 0; step < 2; step++) {
        make_data(&d, 900 + (uint64_t)step);
        for (int i = 0; i < NT; i++)
            cr_assert_eq(emb_lookup_backward(m.t[i], &d.b[i], &d.p[i], d.dy[i], dims[i],
                                             m.g[i]), 0, "%s", emb_last_error());
        many_step(s, &m, two_phase);
    }
    model_sums_free(&m, sums);
}

Test(clip, global_norm_same_bits_for_every_strategy_thread_and_split_count, .timeout = 120)
{
    const EmbOptimizerKind kinds[] = {EMB_OPT_SGD, EMB_OPT_ROWWISE_ADAGRAD, EMB_OPT_ADAM};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        EmbOptimizerConfig c = emb_optimizer_defaults(kinds[k], 0.05f);
        c.max_gradient = 0.4f;
        c.max_row_norm = 0.9f;
        c.max_global_norm = 0.5f;
        uint64_t want[NT], got[NT], unclipped[NT];
        EmbStrategy *s = NULL;
        cr_assert_eq(emb_strategy_sequential(&s), 0);
        ensemble_steps(c, s, false, want);
        EmbOptimizerConfig off = c;
        off.max_global_norm = 0.0f;
        ensemble_steps(off, s, false, unclipped);
        for (int i = 0; i < NT; i++)
            cr_assert_neq(want[i], unclipped[i], "the global norm changed nothing in %d", i);
        emb_strategy_destroy(&s);
        for (int nth = 1; nth <= 4; nth++)
            for (int sp = 1; sp <= 8; sp += (sp < 4 ? 1 : 4)) {
                const EmbStrategyOptions o = {.nthreads = nth, .num_splits = sp};
                cr_assert_eq(emb_strategy_prealloc_concat(&s, &o), 0);
                for (int tp = 0; tp < 2; tp++) {
                    ensemble_steps(c, s, tp, got);
                    for (int i = 0; i < NT; i++)
                        cr_assert_eq(got[i], want[i], "kind %d nthreads %d splits %d "
                                     "two-phase %d: table %d differs", (int)kinds[k], nth, sp,
                                     tp, i);
                }
                emb_strategy_destroy(&s);
            }
    }
}

/* Two update_many steps of one-hot batches (24 bags, hot ids repeat: fewer distinct
 * columns than bags, so the global norm's pass keeps its sums) on the ensemble's tables:
 * their checksums. */
static void onehot_steps(EmbOptimizerConfig c, EmbStrategy *s, bool two_phase, uint64_t sums[NT])
{
    Model m;
    model_init(&m, c);
    uint64_t seed = 77;
    for (int step = 0; step < 2; step++) {
        int64_t ids[NT][24];
        float dy[NT][24 * 64];
        EmbBatch b[NT];
        const EmbPooling p = {.combiner = (EmbCombiner)1};
        for (int i = 0; i < NT; i++) {
            for (int k = 0; k < 24; k++)
                ids[i][k] = (int64_t)(tu_rand(&seed) % 9);
            for (int k = 0; k < 24 * dims[i]; k++)
                dy[i][k] = tu_randf(&seed);
            b[i] = (EmbBatch){.ids = ids[i], .nnz = 24, .nbags = 24, .bag_size = 1};
            cr_assert_eq(emb_lookup_backward(m.t[i], &b[i], &p, dy[i], dims[i], m.g[i]), 0,
                         "%s", emb_last_error());
        }
        many_step(s, &m, two_phase);
    }
    model_sums_free(&m, sums);
}

/* The global norm's pass keeps each column's summed gradient for the apply (clip_norm.c;
 * one-hot batches) or not (the ensemble's multi-hot bags): a norm that does not bite
 * (factor 1) leaves the step what it is without it, bit for bit, on every path (the range
 * kernels of the f32 tables, the generic loop of the others). */
Test(clip, global_norm_that_does_not_bite_is_the_step_without_it, .timeout = 120)
{
    const EmbOptimizerKind kinds[] = {EMB_OPT_SGD, EMB_OPT_ROWWISE_ADAGRAD, EMB_OPT_ADAM,
                                      EMB_OPT_ROWWISE_ADAGRAD_COUNTER};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (int rowclip = 0; rowclip < 2; rowclip++) {
            EmbOptimizerConfig c = emb_optimizer_defaults(kinds[k], 0.05f);
            c.max_row_norm = rowclip ? 0.9f : 0.0f;
            EmbOptimizerConfig on = c;
            on.max_global_norm = 1e30f;
            for (int nth = 1; nth <= 2; nth++) {
                const EmbStrategyOptions o = {.nthreads = nth, .num_splits = 2 * nth - 1};
                EmbStrategy *s = NULL;
                cr_assert_eq(emb_strategy_prealloc_concat(&s, &o), 0);
                uint64_t want[NT], got[NT];
                for (int onehot = 0; onehot < 2; onehot++) {
                    (onehot ? onehot_steps : ensemble_steps)(c, s, false, want);
                    (onehot ? onehot_steps : ensemble_steps)(on, s, nth == 2, got);
                    for (int i = 0; i < NT; i++)
                        cr_assert_eq(got[i], want[i], "kind %d row clip %d nthreads %d one-hot "
                                     "%d: table %d differs", (int)kinds[k], rowclip, nth,
                                     onehot, i);
                }
                emb_strategy_destroy(&s);
            }
        }
}

Test(clip, bad_values_refused_naming_the_field)
{
    const char *names[] = {"max_gradient", "max_row_norm", "max_global_norm"};
    const float bad[] = {-1.0f, NAN, INFINITY};
    for (int f = 0; f < 3; f++)
        for (int b = 0; b < 3; b++) {
            EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
            float *field = f == 0 ? &c.max_gradient : f == 1 ? &c.max_row_norm
                                                             : &c.max_global_norm;
            *field = bad[b];
            EmbOptimizer *o = NULL;
            cr_assert_eq(emb_optimizer_create(&o, &c), EMB_EINVAL, "%s %g", names[f],
                         (double)bad[b]);
            cr_assert_null(o);
            cr_assert(strstr(emb_last_error(), names[f]), "%s", emb_last_error());
            EmbOptimizerConfig ok = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
            ok.max_gradient = 1.0f;
            cr_assert_eq(emb_optimizer_create(&o, &ok), 0);
            cr_assert_eq(emb_optimizer_set_config(o, &c), EMB_EINVAL);
            EmbOptimizerConfig now;
            emb_optimizer_get_config(o, &now);
            cr_assert_eq(now.max_gradient, 1.0f, "a refused config changed the optimizer");
            emb_optimizer_destroy(&o);
        }
}

/* The clipping fields are saved with the optimizer's configuration. */
Test(clip, saved_in_the_checkpoint_config)
{
    char dir[64], path[512];
    tmpdir(dir);
    EmbTable *t = tu_table(NCOL, D, EMB_F32, 3);
    EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAM, 0.01f);
    c.max_gradient = 0.25f;
    c.max_row_norm = 1.5f;
    c.max_global_norm = 4.0f;
    EmbOptimizer *o = NULL;
    cr_assert_eq(emb_optimizer_create(&o, &c), 0);
    cr_assert_eq(emb_optimizer_attach(o, t), 0);
    const EmbCheckpointVar vars[] = {{"clipped", t}};
    const EmbSaverOptions so = {.var_list = vars, .nvars = 1, .optimizer = o};
    EmbSaver *sv = NULL;
    cr_assert_eq(emb_saver_create(&sv, dir, "c", &so), 0, "%s", emb_last_error());
    cr_assert_eq(emb_saver_save(sv, NULL, 1, path, sizeof path), 0, "%s", emb_last_error());
    EmbCheckpoint *ck = NULL;
    cr_assert_eq(emb_checkpoint_open(&ck, path, 0), 0, "%s", emb_last_error());
    EmbOptimizerConfig got;
    cr_assert_eq(emb_checkpoint_optimizer(ck, &got), 0);
    cr_assert_eq(got.max_gradient, 0.25f);
    cr_assert_eq(got.max_row_norm, 1.5f);
    cr_assert_eq(got.max_global_norm, 4.0f);
    emb_checkpoint_close(&ck);
    emb_saver_destroy(&sv);
    emb_optimizer_destroy(&o);
    emb_table_destroy(&t);
    rmdir_all(dir);
}
