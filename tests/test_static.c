/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_static.c — the header-only static tables (embtables/static.h) against the library:
 * gather, bag sums and SGD must be bit-identical (compiled with -ffp-contract=off, as the
 * header asks) for sizes with and without a specialised kernel, ids seeded at random.
 */
#include <criterion/criterion.h>

#include <embtables/static.h>

#include "kernels/kernels.h"
#include "test_util.h"

EMB_STATIC_TABLE(st16, 16);
EMB_STATIC_TABLE(st32, 32);
EMB_STATIC_TABLE(st17, 17);

#define NCOL 97
#define NBAGS 13
#define BAG 7

/* A library table wrapping the same storage, ids and both outputs, for one size. */
typedef struct Fixture {
    float *data;
    EmbTable *t;
    int64_t ids[NBAGS * BAG];
    float *ref, *got;
} Fixture;

static void setup(Fixture *f, int32_t N, uint64_t seed)
{
    f->data = malloc(sizeof(float) * NCOL * (size_t)N);
    f->ref = malloc(sizeof(float) * NBAGS * BAG * (size_t)N);
    f->got = malloc(sizeof(float) * NBAGS * BAG * (size_t)N);
    cr_assert(f->data && f->ref && f->got);
    for (int64_t i = 0; i < (int64_t)NCOL * N; i++)
        f->data[i] = tu_randf(&seed);
    for (int k = 0; k < NBAGS * BAG; k++)
        f->ids[k] = (int64_t)(tu_rand(&seed) % NCOL);
    EmbTableOptions o = {0};
    o.static_size = N;
    cr_assert_eq(emb_table_wrap(&f->t, f->data, NCOL, N, N, EMB_F32, &o), 0, "%s",
                 emb_last_error());
    tu_poison(f->ref, (size_t)NBAGS * BAG * N);
    tu_poison(f->got, (size_t)NBAGS * BAG * N);
}

static void teardown(Fixture *f)
{
    emb_table_destroy(&f->t);
    free(f->data);
    free(f->ref);
    free(f->got);
}

static void expect_same(const float *a, const float *b, size_t n, const char *what)
{
    /* exact: same operations in the same order (tolerance 0) */
    cr_assert_eq(memcmp(a, b, n * sizeof(float)), 0, "%s differs from the library", what);
}

#define CHECK_SIZE(NAME, N, SEED)                                                          \
    do {                                                                                   \
        Fixture f;                                                                         \
        setup(&f, N, SEED);                                                                \
        NAME t = NAME##_wrap(f.data, NCOL);                                                \
        cr_assert_eq(NAME##_check(&t, f.ids, NBAGS * BAG), -1);                            \
        cr_assert_eq(emb_gather(f.t, f.ids, NBAGS * BAG, f.ref, N), 0);                    \
        NAME##_gather(&t, f.ids, NBAGS * BAG, f.got, N);                                   \
        expect_same(f.ref, f.got, (size_t)NBAGS * BAG * N, "gather");                      \
        cr_assert_eq(emb_lookup_sum(f.t, f.ids, NBAGS, BAG, f.ref, N), 0);                 \
        NAME##_lookup_sum(&t, f.ids, NBAGS, BAG, f.got, N);                                \
        expect_same(f.ref, f.got, (size_t)NBAGS * N, "lookup_sum");                        \
        NAME##_bag_sum(&t, f.ids, 0, f.got);                                               \
        for (int i = 0; i < N; i++)                                                        \
            cr_assert_eq(f.got[i], 0.0f, "an empty bag sums to zeros");                    \
        float g[N], copy[N];                                                               \
        for (int i = 0; i < N; i++)                                                        \
            g[i] = (float)(i % 5) - 2.5f;                                                  \
        memcpy(copy, NAME##_column(&t, 3), sizeof copy);                                   \
        NAME##_sgd(&t, 3, g, 0.37f);                                                       \
        emb__kernel_sgd_row(EMB_F32, N, 0)(copy, g, 0.37f, N);                             \
        expect_same(copy, NAME##_column(&t, 3), N, "sgd");                                 \
        teardown(&f);                                                                      \
    } while (0)

Test(static_table, matches_library_d16)
{
    CHECK_SIZE(st16, 16, 16);
}

Test(static_table, matches_library_d32)
{
    CHECK_SIZE(st32, 32, 32);
}

Test(static_table, matches_library_odd_size)
{
    CHECK_SIZE(st17, 17, 17);
}

Test(static_table, check_finds_bad_ids)
{
    float data[4 * 16] = {0};
    st16 t = st16_wrap(data, 4);
    const int64_t ids[] = {0, 3, 4, -1};
    cr_assert_eq(st16_check(&t, ids, 2), -1);
    cr_assert_eq(st16_check(&t, ids, 4), 2, "id 4 at position 2 is out of [0, 4)");
    cr_assert_eq(st16_check(&t, ids + 3, 1), 0, "a negative id is out of range");
}
