/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_nonfinite.c — common.h's rule for non-finite values in quantized rows (int8, int4):
 * a NaN or an infinity at any element makes the row NaN whole (quantize, assign, scatter,
 * an update's re-quantization); with EMB_TABLE_CHECK_FINITE it is refused naming the row
 * and element, by a wrap whose finite scale and bias read infinite and by a restore.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "embtables/store.h"
#include "embtables/update.h"
#include "test_files.h"

enum { R = 6, D = 16 };

static const EmbDtype qtypes[2] = {EMB_INT8, EMB_INT4};

/* Rows of R x D finite values; row 1 with a NaN at element 0, row 2 at element 5, row 3
   +inf at element 9, row 4 -inf at element 15; row 5 finite. */
static void rows_with_holes(float *v)
{
    for (int i = 0; i < R * D; i++)
        v[i] = 0.01f * (float)(i % 37) - 0.2f;
    v[1 * D + 0] = NAN;
    v[2 * D + 5] = NAN;
    v[3 * D + 9] = INFINITY;
    v[4 * D + 15] = -INFINITY;
}

/* Rows 1..4 read NaN at every element; rows 0 and 5 finite. */
static void assert_rule(const EmbTable *t, const char *what)
{
    float got[R * D];
    cr_assert_eq(emb_table_read(t, got, D), 0, "%s", emb_last_error());
    for (int r = 0; r < R; r++)
        for (int i = 0; i < D; i++)
            if (r >= 1 && r <= 4)
                cr_assert(isnan(got[r * D + i]), "%s: row %d element %d reads %g, not NaN",
                          what, r, i, (double)got[r * D + i]);
            else
                cr_assert(isfinite(got[r * D + i]), "%s: row %d element %d", what, r, i);
}

Test(nonfinite, a_nonfinite_element_makes_its_quantized_row_nan)
{
    float v[R * D];
    rows_with_holes(v);
    for (int q = 0; q < 2; q++) {
        EmbTable *f = NULL, *t = NULL, *u = NULL;
        cr_assert_eq(emb_table_create(&f, R, D, EMB_F32, NULL), 0);
        cr_assert_eq(emb_table_create(&t, R, D, qtypes[q], NULL), 0);
        cr_assert_eq(emb_table_create(&u, R, D, qtypes[q], NULL), 0);
        cr_assert_eq(emb_table_assign(f, v, R, D, D), 0);
        cr_assert_eq(emb_table_quantize(t, f), 0, "%s", emb_last_error());
        assert_rule(t, "quantize");
        cr_assert_eq(emb_table_assign(u, v, R, D, D), 0, "%s", emb_last_error());
        assert_rule(u, "assign");
        float zero[R * D] = {0};
        cr_assert_eq(emb_table_assign(u, zero, R, D, D), 0);
        const int64_t ids[R] = {0, 1, 2, 3, 4, 5};
        cr_assert_eq(emb_table_scatter_update(u, ids, R, v, D), 0, "%s", emb_last_error());
        assert_rule(u, "scatter");
        /* a lookup of a NaN row pools NaN */
        const int64_t bag[2] = {0, 2};
        float out[D];
        cr_assert_eq(emb_lookup_sum(t, bag, 1, 2, out, D), 0);
        for (int i = 0; i < D; i++)
            cr_assert(isnan(out[i]), "element %d of the bag: %g", i, (double)out[i]);
        emb_table_destroy(&u);
        emb_table_destroy(&t);
        emb_table_destroy(&f);
    }
}

/* The update re-quantizes with its own kernel (requant[dt], every ISA level): a gradient
   with a NaN at element 7 of row 2 makes that row NaN whole; the other rows stay finite. */
Test(nonfinite, an_update_with_a_nan_gradient_makes_the_row_nan)
{
    float v[R * D];
    for (int i = 0; i < R * D; i++)
        v[i] = 0.01f * (float)(i % 37) - 0.2f;
    for (int q = 0; q < 2; q++) {
        EmbTable *t = NULL;
        cr_assert_eq(emb_table_create(&t, R, D, qtypes[q], &(EmbTableOptions){.name = "q"}), 0);
        cr_assert_eq(emb_table_assign(t, v, R, D, D), 0);
        const EmbOptimizerConfig cfg = emb_optimizer_defaults(EMB_OPT_SGD, 0.1f);
        EmbOptimizer *opt = NULL;
        cr_assert_eq(emb_optimizer_create(&opt, &cfg), 0, "%s", emb_last_error());
        const int64_t ids[2] = {2, 4};
        float dy[2 * D];
        for (int i = 0; i < 2 * D; i++)
            dy[i] = 0.5f;
        dy[7] = NAN;
        const EmbBatch b = {.ids = ids, .nnz = 2, .nbags = 2, .bag_size = 1};
        EmbGrad *g = NULL;
        cr_assert_eq(emb_grad_create(&g), 0);
        cr_assert_eq(emb_lookup_backward(t, &b, NULL, dy, D, g), 0, "%s", emb_last_error());
        EmbIndexer *ix = NULL;
        cr_assert_eq(emb_indexer_create(&ix), 0);
        cr_assert_eq(emb_update(opt, t, g, ix, 0), 0, "%s", emb_last_error());
        emb_indexer_destroy(&ix);
        float got[R * D];
        cr_assert_eq(emb_table_read(t, got, D), 0);
        for (int r = 0; r < R; r++)
            for (int i = 0; i < D; i++)
                cr_assert(r == 2 ? isnan(got[r * D + i]) : isfinite(got[r * D + i]),
                          "dtype %d row %d element %d reads %g", q, r, i,
                          (double)got[r * D + i]);
        emb_grad_destroy(&g);
        emb_optimizer_destroy(&opt);
        emb_table_destroy(&t);
    }
}

/* EMB_TABLE_CHECK_FINITE: quantize and assign refuse, naming the element and row. */
Test(nonfinite, check_finite_refuses_and_names_the_element)
{
    float v[R * D];
    rows_with_holes(v);
    const EmbTableOptions o = {.name = "q", .flags = EMB_TABLE_CHECK_FINITE};
    for (int q = 0; q < 2; q++) {
        EmbTable *f = NULL, *t = NULL;
        cr_assert_eq(emb_table_create(&f, R, D, EMB_F32, NULL), 0);
        cr_assert_eq(emb_table_create(&t, R, D, qtypes[q], &o), 0);
        cr_assert_eq(emb_table_assign(f, v, R, D, D), 0);
        cr_assert_eq(emb_table_quantize(t, f), EMB_ENONFINITE);
        cr_assert(strstr(emb_last_error(), "source row 1") &&
                  strstr(emb_last_error(), "element 0"), "%s", emb_last_error());
        cr_assert_eq(emb_table_assign(t, v, R, D, D), EMB_ENONFINITE);
        cr_assert(strstr(emb_last_error(), "element 0 of row 1"), "%s", emb_last_error());
        emb_table_destroy(&t);
        emb_table_destroy(&f);
    }
}

/* A wrapped int8 row whose scale and bias are finite but whose values overflow (q 255 x
   3e38): refused with EMB_TABLE_CHECK_FINITE, naming the row and the element. */
Test(nonfinite, check_finite_wrap_refuses_finite_parameters_that_read_infinite)
{
    enum { RB = D + 8 };
    static unsigned char rows[3 * RB];
    memset(rows, 0, sizeof rows);
    const float ok[2] = {0.5f, -1.0f}, big[2] = {3e38f, 3e38f};
    for (int r = 0; r < 3; r++)
        memcpy(rows + r * RB + D, r == 2 ? big : ok, 8);
    rows[2 * RB + 4] = 255; /* element 4 of row 2: 255 x 3e38 + 3e38 */
    EmbTable *t = NULL;
    const EmbTableOptions o = {.flags = EMB_TABLE_CHECK_FINITE};
    cr_assert_eq(emb_table_wrap(&t, rows, 3, D, RB, EMB_INT8, &o), EMB_ENONFINITE);
    cr_assert(strstr(emb_last_error(), "element 4 of row 2"), "%s", emb_last_error());
    rows[2 * RB + 4] = 0; /* every element reads 3e38: finite */
    cr_assert_eq(emb_table_wrap(&t, rows, 3, D, RB, EMB_INT8, &o), 0, "%s", emb_last_error());
    emb_table_destroy(&t);
}

/* A checkpoint holding a NaN row (saved from a table without the check) restored into a
   table with EMB_TABLE_CHECK_FINITE: refused naming the table, row and element; the
   table is as it was. Into a table without the check it restores, the row NaN. */
Test(nonfinite, check_finite_restore_refuses_nonfinite_rows)
{
    char dir[64];
    tmpdir(dir);
    float v[R * D], before[R * D], after[R * D];
    rows_with_holes(v);
    for (int q = 0; q < 2; q++) {
        EmbTable *src = NULL, *dst = NULL, *plain = NULL;
        cr_assert_eq(emb_table_create(&src, R, D, qtypes[q], &(EmbTableOptions){.name = "q"}),
                     0);
        cr_assert_eq(emb_table_assign(src, v, R, D, D), 0);
        EmbSaver *sv = NULL;
        const EmbCheckpointVar var = {"q", src};
        const EmbSaverOptions so = {.var_list = &var, .nvars = 1};
        char prefix[16], path[256];
        snprintf(prefix, sizeof prefix, "ck%d", q);
        cr_assert_eq(emb_saver_create(&sv, dir, prefix, &so), 0, "%s", emb_last_error());
        cr_assert_eq(emb_saver_save(sv, NULL, 1, path, sizeof path), 0, "%s", emb_last_error());
        emb_saver_destroy(&sv);

        const EmbTableOptions o = {.name = "q", .flags = EMB_TABLE_CHECK_FINITE};
        cr_assert_eq(emb_table_create(&dst, R, D, qtypes[q], &o), 0);
        float fine[R * D];
        for (int i = 0; i < R * D; i++)
            fine[i] = 0.25f;
        cr_assert_eq(emb_table_assign(dst, fine, R, D, D), 0);
        cr_assert_eq(emb_table_read(dst, before, D), 0);
        const EmbCheckpointVar into = {"q", dst};
        const EmbRestoreOptions ro = {.var_list = &into, .nvars = 1};
        cr_assert_eq(emb_checkpoint_restore_ex(NULL, path, &ro, NULL), EMB_ENONFINITE);
        cr_assert(strstr(emb_last_error(), "table \"q\"") &&
                  strstr(emb_last_error(), "of row 1"), "%s", emb_last_error());
        cr_assert_eq(emb_table_read(dst, after, D), 0);
        cr_assert_eq(memcmp(before, after, sizeof before), 0, "the refused restore wrote");

        cr_assert_eq(emb_table_create(&plain, R, D, qtypes[q], &(EmbTableOptions){.name = "q"}),
                     0);
        const EmbCheckpointVar into_plain = {"q", plain};
        const EmbRestoreOptions rp = {.var_list = &into_plain, .nvars = 1};
        cr_assert_eq(emb_checkpoint_restore_ex(NULL, path, &rp, NULL), 0, "%s",
                     emb_last_error());
        assert_rule(plain, "restore");
        emb_table_destroy(&plain);
        emb_table_destroy(&dst);
        emb_table_destroy(&src);
    }
    rmdir_all(dir);
}
