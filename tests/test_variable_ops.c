/* SPDX-License-Identifier: BSD-2-Clause */
/* test_variable_ops.c — tf.Variable operations: whole-table assign / read, scatter ops
 * with duplicate ids against a sequential reference, sparse_mask, bad input. */
#include <criterion/criterion.h>

#include "test_update_ref.h"

Test(variable_ops, assign_add_sub_read)
{
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_create(&t, 3, 2, EMB_F32, NULL), 0);
    const float v[3 * 3] = {1, 2, -1, 3, 4, -1, 5, 6, -1}; /* stride 3 */
    float out[3 * 2];
    cr_assert_eq(emb_table_assign(t, v, 3, 2, 3), 0);
    cr_assert_eq(emb_table_assign_add(t, v, 3, 2, 3), 0);
    cr_assert_eq(emb_table_assign_add(t, v, 3, 2, 3), 0);
    cr_assert_eq(emb_table_assign_sub(t, v, 3, 2, 3), 0);
    cr_assert_eq(emb_table_read(t, out, 2), 0);
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 2; i++)
            cr_assert_eq(out[c * 2 + i], 2 * v[c * 3 + i]); /* small integers: exact */
    const uint64_t sum = tu_checksum(t);
    cr_assert_eq(emb_table_assign(t, v, 4, 2, 3), EMB_ESHAPE);
    cr_assert_eq(emb_table_assign_add(t, v, 3, 3, 3), EMB_ESHAPE);
    cr_assert_eq(emb_table_assign_sub(t, v, 3, 2, 1), EMB_ESTRIDE);
    cr_assert_eq(emb_table_assign(t, NULL, 3, 2, 3), EMB_ENULL);
    cr_assert_eq(emb_table_read(t, out, 1), EMB_ESTRIDE);
    cr_assert_eq(tu_checksum(t), sum);
    emb_table_destroy(&t);
}

typedef int (*scatter_fn)(EmbTable *, const int64_t *, int64_t, const float *, int64_t);

/* Sequential reference of one scatter op, in double, on f32-rounded values. */
static void ref_scatter(int op, double *W, const int64_t *ids, int64_t n, const float *u,
                        int32_t D)
{
    for (int64_t k = 0; k < n; k++)
        for (int32_t i = 0; i < D; i++) {
            double *w = &W[ids[k] * D + i];
            const double x = u[k * D + i];
            switch (op) {
            case 0: *w = x; break;
            case 1: *w += x; break;
            case 2: *w -= x; break;
            case 3: *w *= x; break;
            default: *w /= x; break;
            }
            *w = (float)*w; /* the table stores f32 after every application */
        }
}

Test(variable_ops, scatter_with_duplicates)
{
    const scatter_fn fns[5] = {emb_table_scatter_update, emb_table_scatter_add,
                               emb_table_scatter_sub, emb_table_scatter_mul,
                               emb_table_scatter_div};
    const int64_t ids[] = {2, 5, 2, 0, 2, 5};
    uint64_t seed = 21;
    float u[6 * 7];
    for (int i = 0; i < 6 * 7; i++)
        u[i] = 0.5f + (tu_randf(&seed) + 1.0f); /* in [0.5, 2.5): safe divisors */
    for (int op = 0; op < 5; op++) {
        EmbTable *t = tu_table(8, 7, EMB_F32, 4);
        double *W = tu_read_double(t);
        cr_assert_eq(fns[op](t, ids, 6, u, 7), 0);
        ref_scatter(op, W, ids, 6, u, 7);
        double *got = tu_read_double(t);
        for (int i = 0; i < 8 * 7; i++) /* same f32 operations in the same order: exact */
            cr_assert_eq(got[i], W[i], "op %d element %d: %g vs %g", op, i, got[i], W[i]);
        if (op == 0) /* update keeps the last row of a duplicate */
            for (int i = 0; i < 7; i++)
                cr_assert_eq(got[2 * 7 + i], (double)u[4 * 7 + i]);
        free(W);
        free(got);
        const uint64_t sum = tu_checksum(t);
        const int64_t bad[] = {1, 8};
        cr_assert_eq(fns[op](t, bad, 2, u, 7), EMB_ERANGE);
        cr_assert(strstr(emb_last_error(), "id 8 at position 1"), "%s", emb_last_error());
        cr_assert_eq(fns[op](t, ids, 6, u, 6), EMB_ESTRIDE);
        cr_assert_eq(fns[op](t, ids, -1, u, 7), EMB_EINVAL);
        cr_assert_eq(tu_checksum(t), sum);
        emb_table_destroy(&t);
    }
}

Test(variable_ops, scatter_add_bf16_rounds_each_step)
{
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_create(&t, 2, 1, EMB_BF16, NULL), 0);
    const int64_t ids[] = {1, 1, 1};
    const float u[] = {256.0f, 1.0f, 1.0f}; /* 257 and 258 round to even in bf16 */
    cr_assert_eq(emb_table_scatter_add(t, ids, 3, u, 1), 0);
    float out[2];
    emb_table_read(t, out, 1);
    cr_assert_eq(out[1], 256.0f);
    cr_assert_eq(out[0], 0.0f);
    emb_table_destroy(&t);
}

Test(variable_ops, sparse_mask)
{
    const int32_t ids[] = {4, 7, 4, 1, 9};
    float vals[5 * 2];
    for (int i = 0; i < 10; i++)
        vals[i] = (float)i;
    const EmbSparseGrad in = {.ids = ids, .id_type = EMB_ID_I32, .n = 5, .featuresize = 2,
                              .values = vals, .stride = 2};
    const int64_t mask[] = {4, 9, 100};
    int64_t oid[5];
    float ov[5 * 3];
    EmbSparseGrad out;
    cr_assert_eq(emb_sparse_mask(&in, mask, 3, &out, oid, ov, 3), 0);
    cr_assert_eq(out.n, 2);
    cr_assert_eq(oid[0], 7);
    cr_assert_eq(oid[1], 1);
    cr_assert_eq(ov[0], 2.0f);
    cr_assert_eq(ov[1], 3.0f);
    cr_assert_eq(ov[3], 6.0f);
    cr_assert_eq(ov[4], 7.0f);
    cr_assert_eq(out.stride, 3);
    cr_assert_eq(out.id_type, EMB_ID_I64);
    cr_assert_eq(emb_sparse_mask(&in, NULL, 0, &out, oid, ov, 3), 0);
    cr_assert_eq(out.n, 5);
    cr_assert_eq(emb_sparse_mask(&in, mask, 3, &out, oid, ov, 1), EMB_ESTRIDE);
    cr_assert_eq(emb_sparse_mask(&in, mask, -1, &out, oid, ov, 3), EMB_EINVAL);
}
