/* SPDX-License-Identifier: BSD-2-Clause */
/* test_counter.c — EMB_OPT_ROWWISE_ADAGRAD_COUNTER (FBGEMM's rowwise_adagrad_with_counter,
 * counter-based regularization): against a double reference of FBGEMM's formulas over
 * steps where rows skip steps, for each counter mode, learning-rate mode and weight decay;
 * resumed from a checkpoint bit for bit; its range kernel the bits of its per-column step;
 * bad values refused naming the field. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "test_files.h"
#include "test_update_ref.h"

#define NCOL 40
#define D 12
#define STEPS 6

/* The ids of step @s: a row appears in steps depending on its id (gaps for the halflife). */
static int64_t step_ids(int s, int64_t *ids)
{
    int64_t n = 0;
    for (int64_t c = 0; c < NCOL; c++)
        if ((c + s) % (1 + c % 4) == 0)
            ids[n++] = c;
    return n;
}

/* FBGEMM's GPU kernel (regularization_mode 3) in double, one row. */
static void ref_row(const EmbOptimizerConfig *c, int64_t iter, double *w, double *st,
                    const double *g)
{
    double *h = &st[0], *prev = &st[1], *cnt = &st[2];
    if (c->counter_halflife > 0) {
        const double delta = *prev == 0 ? 1 : (double)iter - *prev;
        *prev = (double)iter;
        *cnt = 1 + exp(-delta * log(2.0) / c->counter_halflife) * *cnt;
    } else if (c->counter_halflife == 0) {
        *cnt = 1;
    } else {
        *cnt += 1;
    }
    const double freq = c->counter_halflife / *cnt, wd = c->weight_decay;
    const int l2 = wd > 0 && c->weight_decay_mode == EMB_DECAY_L2;
    double gg[D], sq = 0;
    for (int i = 0; i < D; i++) {
        gg[i] = g[i] + (l2 ? wd * w[i] : 0);
        sq += gg[i] * gg[i];
    }
    *h += sq / D;
    const double mult = c->lr / (sqrt(*h) + c->eps);
    const int on = c->adjustment_iter <= 0 || iter > c->adjustment_iter;
    double adj = mult, corr = 1;
    if (c->learning_rate_mode == 2 && on && *cnt > c->tail_id_threshold)
        adj = c->lr / (sqrt(c->adjustment_ub * *cnt) + c->eps);
    if (on && wd > 0)
        corr = 1 - freq * wd * (l2 ? mult : c->lr);
    for (int i = 0; i < D; i++)
        w[i] = corr * w[i] - adj * gg[i];
}

/* Steps [s0, s1) of random gradients (seeded by the step) on @t (of @dim <= 128) with @o,
 * emb_update's @flags. */
static void train_dim(EmbTable *t, EmbOptimizer *o, int s0, int s1, int32_t dim,
                      unsigned flags)
{
    EmbGrad *g = NULL;
    EmbIndexer *ix = NULL;
    cr_assert_eq(emb_grad_create(&g), 0);
    cr_assert_eq(emb_indexer_create(&ix), 0);
    for (int s = s0; s < s1; s++) {
        int64_t ids[NCOL];
        static float rows[NCOL * 128];
        const int64_t n = step_ids(s, ids);
        uint64_t seed = 1000 + (uint64_t)s;
        for (int64_t k = 0; k < n * dim; k++)
            rows[k] = tu_randf(&seed);
        const EmbSparseGrad sg = {.ids = ids, .n = n, .featuresize = dim, .values = rows,
                                  .stride = dim};
        cr_assert_eq(emb_grad_set_sparse(g, t, &sg), 0);
        cr_assert_eq(emb_update(o, t, g, ix, flags), 0, "%s", emb_last_error());
    }
    emb_indexer_destroy(&ix);
    emb_grad_destroy(&g);
}

static void train(EmbTable *t, EmbOptimizer *o, int s0, int s1)
{
    train_dim(t, o, s0, s1, D, 0);
}

static EmbOptimizerConfig counter_config(int halflife, int lr_mode, float wd,
                                         EmbWeightDecay mode, int adj_iter)
{
    EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ROWWISE_ADAGRAD_COUNTER, 0.1f);
    c.counter_halflife = halflife;
    c.learning_rate_mode = lr_mode;
    c.adjustment_ub = 0.5f;
    c.tail_id_threshold = 1.5f;
    c.weight_decay = wd;
    c.weight_decay_mode = mode;
    c.adjustment_iter = adj_iter;
    return c;
}

Test(counter, matches_fbgemm_formulas_in_double)
{
    const int halflives[] = {-1, 0, 3};
    for (int hl = 0; hl < 3; hl++)
        for (int lm = 0; lm < 2; lm++)
            for (int wdm = 0; wdm < 3; wdm++) {
                const EmbOptimizerConfig c = counter_config(
                    halflives[hl], lm ? 2 : -1, wdm ? 0.05f : 0.0f,
                    wdm == 2 ? EMB_DECAY_DECOUPLED : EMB_DECAY_L2, lm ? 2 : -1);
                EmbTable *t = tu_table(NCOL, D, EMB_F32, 9);
                EmbOptimizer *o = NULL;
                cr_assert_eq(emb_optimizer_create(&o, &c), 0, "%s", emb_last_error());
                double *W = tu_read_double(t), S[NCOL][3];
                memset(S, 0, sizeof S);
                train(t, o, 0, STEPS);
                for (int s = 0; s < STEPS; s++) {
                    int64_t ids[NCOL];
                    const int64_t n = step_ids(s, ids);
                    uint64_t seed = 1000 + (uint64_t)s;
                    for (int64_t k = 0; k < n; k++) {
                        double g[D];
                        for (int i = 0; i < D; i++)
                            g[i] = tu_randf(&seed);
                        ref_row(&c, s + 1, W + ids[k] * D, S[ids[k]], g);
                    }
                }
                double *got = tu_read_double(t);
                for (int64_t e = 0; e < NCOL * D; e++)
                    cr_assert(fabs(got[e] - W[e]) < 1e-5, "halflife %d lr mode %d wd %d: "
                              "element %lld %g, reference %g", halflives[hl], lm, wdm,
                              (long long)e, got[e], W[e]);
                EmbTable *st = NULL;
                cr_assert_eq(emb_optimizer_state(o, t, 0, &st, NULL), 0);
                float srow[3];
                float *all = malloc(NCOL * 3 * sizeof(float));
                cr_assert_eq(emb_table_read(st, all, 3), 0);
                memcpy(srow, all + 3 * 5, sizeof srow);
                cr_assert(fabs(srow[2] - S[5][2]) < 1e-5, "counter %g, reference %g",
                          (double)srow[2], S[5][2]);
                free(all);
                free(got);
                free(W);
                emb_optimizer_destroy(&o);
                emb_table_destroy(&t);
            }
}

/* Saved after 3 steps, restored into a fresh table and optimizer, 3 more: the bits of 6
 * straight (h, the last step and the counter are in the checkpoint). */
Test(counter, resumed_from_a_checkpoint_bit_for_bit)
{
    const EmbOptimizerConfig c = counter_config(3, 2, 0.05f, EMB_DECAY_DECOUPLED, -1);
    EmbTable *a = tu_table(NCOL, D, EMB_F32, 9), *b = tu_table(NCOL, D, EMB_F32, 77);
    EmbOptimizer *oa = NULL, *ob = NULL;
    cr_assert_eq(emb_optimizer_create(&oa, &c), 0);
    cr_assert_eq(emb_optimizer_create(&ob, &c), 0);
    train(a, oa, 0, 3);
    char dir[64], path[512];
    tmpdir(dir);
    const EmbCheckpointVar vars[] = {{"t", a}};
    const EmbSaverOptions so = {.var_list = vars, .nvars = 1, .optimizer = oa};
    EmbSaver *sv = NULL;
    cr_assert_eq(emb_saver_create(&sv, dir, "c", &so), 0, "%s", emb_last_error());
    cr_assert_eq(emb_saver_save(sv, NULL, 3, path, sizeof path), 0, "%s", emb_last_error());
    EmbCheckpoint *ck = NULL;
    EmbOptimizerConfig saved;
    cr_assert_eq(emb_checkpoint_open(&ck, path, 0), 0, "%s", emb_last_error());
    cr_assert_eq(emb_checkpoint_optimizer(ck, &saved), 0);
    cr_assert_eq(saved.kind, EMB_OPT_ROWWISE_ADAGRAD_COUNTER);
    cr_assert_eq(saved.counter_halflife, 3);
    cr_assert_eq(saved.learning_rate_mode, 2);
    cr_assert_eq(saved.adjustment_ub, 0.5f);
    cr_assert_eq(saved.tail_id_threshold, 1.5f);
    emb_checkpoint_close(&ck);
    const EmbCheckpointVar rv[] = {{"t", b}};
    const EmbRestoreOptions ro = {.var_list = rv, .nvars = 1, .optimizer = ob};
    cr_assert_eq(emb_optimizer_attach(ob, b), 0);
    cr_assert_eq(emb_checkpoint_restore_ex(NULL, path, &ro, NULL), 0, "%s", emb_last_error());
    cr_assert_eq(tu_checksum(b), tu_checksum(a));
    train(a, oa, 3, STEPS);
    train(b, ob, 3, STEPS);
    cr_assert_eq(tu_checksum(b), tu_checksum(a), "the resumed run differs");
    emb_saver_destroy(&sv);
    rmdir_all(dir);
    emb_optimizer_destroy(&oa);
    emb_optimizer_destroy(&ob);
    emb_table_destroy(&a);
    emb_table_destroy(&b);
}

/* At a static size without weight decay the counter steps a range of columns in row-wise
 * Adagrad's range kernel with its rate (and clipping inside it); with non-temporal stores
 * asked, column by column (emb__counter_row): the same bits, table and state. */
Test(counter, range_kernel_same_bits_as_per_column)
{
    const int32_t dims[] = {16, 64, 128};
    for (int k = 0; k < 3; k++)
        for (int clip = 0; clip < 2; clip++) {
            EmbOptimizerConfig c = counter_config(3, 2, 0.0f, EMB_DECAY_L2, -1);
            c.max_gradient = clip ? 0.5f : 0.0f;
            c.max_row_norm = clip ? 1.5f : 0.0f;
            EmbTable *a = tu_table(NCOL, dims[k], EMB_F32, 9);
            EmbTable *b = tu_table(NCOL, dims[k], EMB_F32, 9);
            const uint64_t before = tu_checksum(a);
            EmbOptimizer *oa = NULL, *ob = NULL;
            cr_assert_eq(emb_optimizer_create(&oa, &c), 0);
            cr_assert_eq(emb_optimizer_create(&ob, &c), 0);
            train_dim(a, oa, 0, STEPS, dims[k], 0);
            train_dim(b, ob, 0, STEPS, dims[k], EMB_UPDATE_NONTEMPORAL);
            cr_assert_neq(tu_checksum(a), before);
            cr_assert_eq(tu_checksum(a), tu_checksum(b), "D %d clip %d: the table differs",
                         dims[k], clip);
            EmbTable *sa = NULL, *sb = NULL;
            cr_assert_eq(emb_optimizer_state(oa, a, 0, &sa, NULL), 0);
            cr_assert_eq(emb_optimizer_state(ob, b, 0, &sb, NULL), 0);
            cr_assert_eq(tu_checksum(sa), tu_checksum(sb), "D %d clip %d: the state differs",
                         dims[k], clip);
            emb_optimizer_destroy(&oa);
            emb_optimizer_destroy(&ob);
            emb_table_destroy(&a);
            emb_table_destroy(&b);
        }
}

Test(counter, bad_values_refused_naming_the_field)
{
    EmbOptimizerConfig c = counter_config(3, 2, 0, EMB_DECAY_L2, -1);
    EmbOptimizer *o = NULL;
    c.adjustment_ub = 0.0f;
    cr_assert_eq(emb_optimizer_create(&o, &c), EMB_EINVAL);
    cr_assert(strstr(emb_last_error(), "adjustment_ub"));
    c = counter_config(3, 2, 0, EMB_DECAY_L2, -1);
    c.tail_id_threshold = NAN;
    cr_assert_eq(emb_optimizer_create(&o, &c), EMB_EINVAL);
    cr_assert(strstr(emb_last_error(), "tail_id_threshold"));
    c = counter_config(3, 7, 0, EMB_DECAY_L2, -1);
    cr_assert_eq(emb_optimizer_create(&o, &c), EMB_EINVAL);
    cr_assert(strstr(emb_last_error(), "learning_rate_mode"));
    c = counter_config(3, 0, 0, EMB_DECAY_L2, -1);
    cr_assert_eq(emb_optimizer_create(&o, &c), EMB_ENOTSUP);
    cr_assert(strstr(emb_last_error(), "learning_rate_mode"));
    cr_assert_null(o);
    cr_assert_eq(emb_optimizer_state_width(EMB_OPT_ROWWISE_ADAGRAD_COUNTER, 8), 3);
}
