/* SPDX-License-Identifier: BSD-2-Clause */
/* test_lookup.c — single-table lookup: the seed examples, bag forms and bad input. */
#include <criterion/criterion.h>

#include "test_util.h"

/* The seed's 5x5 table whose column j holds j+1 (0-based ids). */
static EmbTable *seed_table(float *mem)
{
    for (int j = 0; j < 5; j++)
        for (int i = 0; i < 5; i++)
            mem[j * 5 + i] = (float)(j + 1);
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_wrap(&t, mem, 5, 5, 5, EMB_F32, NULL), 0);
    return t;
}

Test(lookup, seed_gather)
{
    float mem[25], out[6 * 5];
    EmbTable *t = seed_table(mem);
    const int64_t ids[] = {0, 2, 3, 3, 1, 4};
    cr_assert_eq(emb_gather(t, ids, 6, out, 5), 0);
    const float want[] = {1, 3, 4, 4, 2, 5};
    for (int k = 0; k < 6; k++)
        for (int i = 0; i < 5; i++)
            cr_assert_eq(out[k * 5 + i], want[k]);
    emb_table_destroy(&t);
}

Test(lookup, seed_reducing_lookup)
{
    float mem[25], out[2 * 5];
    EmbTable *t = seed_table(mem);
    /* Julia inds = [1 4; 2 5]: column (bag) 1 = ids 1,2; bag 2 = ids 4,5 -> 0-based */
    const int64_t ids[] = {0, 1, 3, 4};
    cr_assert_eq(emb_lookup_sum(t, ids, 2, 2, out, 5), 0);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(out[i], 3.0f);
        cr_assert_eq(out[5 + i], 9.0f);
    }
    emb_table_destroy(&t);
}

Test(lookup, ragged_bags_int32_empty_and_duplicates)
{
    float mem[25], out[4 * 8];
    EmbTable *t = seed_table(mem);
    const int32_t ids[] = {4, 4, 0, 2, 1};
    const int64_t offsets[] = {0, 2, 2, 5, 5};
    const EmbBatch b = {.ids = ids, .id_type = EMB_ID_I32, .nnz = 5, .nbags = 4,
                        .offsets = offsets};
    tu_poison(out, 32);
    cr_assert_eq(emb_lookup(t, &b, NULL, out, 8), 0, "%s", emb_last_error());
    const float want[] = {10, 0, 1 + 3 + 2, 0};
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < 5; i++)
            cr_assert_eq(out[k * 8 + i], want[k], "bag %d", k);
        cr_assert(tu_is_poison(out + k * 8 + 5, 3), "padding of row %d untouched", k);
    }
    emb_table_destroy(&t);
}

Test(lookup, empty_batch_is_a_noop)
{
    float mem[25];
    EmbTable *t = seed_table(mem);
    const EmbBatch b = {0};
    cr_assert_eq(emb_lookup(t, &b, NULL, NULL, 5), 0);
    /* no ids at all: no arithmetic on the NULL pointer (clang's UBSan checks it in CI) */
    float out[5];
    cr_assert_eq(emb_gather(t, NULL, 0, out, 5), 0);
    const EmbPooling g = EMB_POOLING_GATHER;
    cr_assert_eq(emb_lookup(t, &b, &g, NULL, 5), 0);
    emb_table_destroy(&t);
}

Test(lookup, long_bags_cross_chunks)
{
    /* bags longer than the lookup's internal chunk, against a plain double sum */
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_create(&t, 1000, 33, EMB_F32, NULL), 0);
    tu_fill_random(t, 5);
    int64_t stride;
    const float *d = emb_table_data(t, &stride);
    const int64_t offsets[] = {0, 1, 700, 700, 1500};
    int64_t ids[1500];
    uint64_t s = 3;
    for (int i = 0; i < 1500; i++)
        ids[i] = (int64_t)(tu_rand(&s) % 1000);
    const EmbBatch b = {.ids = ids, .nnz = 1500, .nbags = 4, .offsets = offsets};
    float out[4 * 33];
    cr_assert_eq(emb_lookup(t, &b, NULL, out, 33), 0);
    for (int bag = 0; bag < 4; bag++)
        for (int i = 0; i < 33; i++) {
            float want = 0; /* same order as the reference: exact */
            for (int64_t k = offsets[bag]; k < offsets[bag + 1]; k++)
                want = want + d[ids[k] * stride + i];
            cr_assert_eq(out[bag * 33 + i], want, "bag %d elem %d", bag, i);
        }
    emb_table_destroy(&t);
}

/* ---- bad input: every failure has a distinct code, a message, and writes nothing ---- */

typedef struct Bad {
    EmbTable *t;
    float out[16 * 8];
} Bad;

static int bad_call(Bad *x, const EmbBatch *b, const EmbPooling *p, int64_t stride)
{
    tu_poison(x->out, 16 * 8);
    int r = emb_lookup(x->t, b, p, x->out, stride);
    cr_assert(tu_is_poison(x->out, 16 * 8), "output written by a failed call (%d)", r);
    cr_assert_neq(emb_last_error()[0], '\0');
    return r;
}

Test(lookup, bad_input_leaves_output_untouched)
{
    float mem[25];
    Bad x = {.t = NULL};
    EmbTableOptions o = {.name = "user_id"};
    cr_assert_eq(emb_table_wrap(&x.t, mem, 5, 5, 5, EMB_F32, &o), 0);
    const int64_t ids[] = {0, 1, 2, 3, 4, 4, 3, 2, 1, 0, 1, 2, 3, 4, 0, 1, 2, 7};
    EmbBatch b = {.ids = ids, .nnz = 18, .nbags = 6, .bag_size = 3};

    cr_assert_eq(bad_call(&x, &b, NULL, 8), EMB_ERANGE);
    cr_assert_str_eq(emb_last_error(), "id 7 at position 17 is not in [0, 5) (table \"user_id\")");

    const int64_t neg[] = {0, -1, 2};
    EmbBatch bn = {.ids = neg, .nnz = 3, .nbags = 1, .bag_size = 3};
    cr_assert_eq(bad_call(&x, &bn, NULL, 8), EMB_ERANGE);
    cr_assert(strstr(emb_last_error(), "id -1 at position 1"));

    EmbBatch b2 = b;
    b2.nnz = 12; /* 6 x 3 != 12 */
    cr_assert_eq(bad_call(&x, &b2, NULL, 8), EMB_ESHAPE);
    b2 = b;
    b2.nbags = -1;
    cr_assert_eq(bad_call(&x, &b2, NULL, 8), EMB_EINVAL);
    b2 = b;
    b2.bag_size = INT64_MAX / 2;
    cr_assert_eq(bad_call(&x, &b2, NULL, 8), EMB_EOVERFLOW);
    b2 = b;
    b2.ids = NULL;
    cr_assert_eq(bad_call(&x, &b2, NULL, 8), EMB_ENULL);
    b2 = b;
    b2.id_type = (EmbIdType)9;
    cr_assert_eq(bad_call(&x, &b2, NULL, 8), EMB_EINVAL);

    cr_assert_eq(bad_call(&x, &(EmbBatch){.ids = ids, .nnz = 3, .nbags = 1, .bag_size = 3}, NULL, 4),
                 EMB_ESTRIDE);

    const int64_t off_start[] = {1, 2, 3};
    const int64_t off_mono[] = {0, 2, 1, 3};
    const int64_t off_end[] = {0, 1, 2};
    EmbBatch r = {.ids = ids, .nnz = 3, .nbags = 2, .offsets = off_start};
    cr_assert_eq(bad_call(&x, &r, NULL, 8), EMB_EOFFSETS);
    cr_assert(strstr(emb_last_error(), "offsets[0] is 1"));
    r.offsets = off_mono;
    r.nbags = 3;
    cr_assert_eq(bad_call(&x, &r, NULL, 8), EMB_EOFFSETS);
    cr_assert(strstr(emb_last_error(), "offsets[2] = 1 < offsets[1] = 2"));
    r.offsets = off_end;
    r.nbags = 2;
    cr_assert_eq(bad_call(&x, &r, NULL, 8), EMB_EOFFSETS);
    cr_assert(strstr(emb_last_error(), "not nnz 3"));

    EmbPooling p = EMB_POOLING_SUM;
    p.combiner = (EmbCombiner)11;
    cr_assert_eq(bad_call(&x, &b, &p, 8), EMB_EINVAL);
    p = EMB_POOLING_SUM;
    p.max_norm = NAN;
    cr_assert_eq(bad_call(&x, &b, &p, 8), EMB_EINVAL);
    p = EMB_POOLING_SUM;
    p.flags = EMB_USE_DEFAULT_ID;
    p.default_id = 5;
    cr_assert_eq(bad_call(&x, &(EmbBatch){.ids = ids, .nnz = 3, .nbags = 1, .bag_size = 3}, &p, 8),
                 EMB_ERANGE);
    cr_assert(strstr(emb_last_error(), "default_id 5"));
    p = EMB_POOLING_GATHER;
    cr_assert_eq(bad_call(&x, &b, &p, 8), EMB_EINVAL); /* gather needs bag_size 1 */

    cr_assert_eq(emb_lookup(NULL, &b, NULL, x.out, 8), EMB_ENULL);
    cr_assert_eq(emb_lookup(x.t, NULL, NULL, x.out, 8), EMB_ENULL);
    cr_assert_eq(emb_lookup(x.t, &(EmbBatch){.ids = ids, .nnz = 3, .nbags = 1, .bag_size = 3},
                            NULL, x.out, 8), 0, "the same table still works");
    emb_table_destroy(&x.t);
}

Test(lookup, null_output_rejected)
{
    float mem[25];
    EmbTable *t = seed_table(mem);
    const int64_t ids[] = {0};
    cr_assert_eq(emb_gather(t, ids, 1, NULL, 5), EMB_ENULL);
    emb_table_destroy(&t);
}
