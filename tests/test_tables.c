/* SPDX-License-Identifier: BSD-2-Clause */
/* test_tables.c — table types behind the column-pointer interface. */
#include <criterion/criterion.h>

#include "test_util.h"

Test(tables, create_accessors_and_zero_fill)
{
    EmbTable *t = NULL;
    EmbTableOptions o = {.name = "user_id"};
    cr_assert_eq(emb_table_create(&t, 100, 65, EMB_F32, &o), 0);
    cr_assert_eq(emb_table_ncolumns(t), 100);
    cr_assert_eq(emb_table_featuresize(t), 65);
    cr_assert_eq(emb_table_is_static(t), 0);
    cr_assert_eq(emb_table_dtype(t), EMB_F32);
    cr_assert_str_eq(emb_table_name(t), "user_id");
    int64_t stride;
    float *d = emb_table_data(t, &stride);
    cr_assert_eq(stride, 80, "65 floats padded to 64-byte columns: 80, got %lld", (long long)stride);
    cr_assert_eq((uintptr_t)d % 64, 0);
    for (int64_t c = 0; c < 100; c++) {
        void *p;
        cr_assert_eq(emb_table_column_pointer(t, c, EMB_CTX_NONE, &p), 0);
        cr_assert_eq((uintptr_t)p % 64, 0);
        for (int i = 0; i < 65; i++)
            cr_assert_eq(((float *)p)[i], 0.0f);
    }
    emb_table_destroy(&t);
    cr_assert_null(t);
    emb_table_destroy(&t); /* NULL is fine */
    emb_table_destroy(NULL);
}

Test(tables, small_columns_are_not_padded_to_a_cache_line)
{
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_create(&t, 10, 3, EMB_F32, NULL), 0);
    int64_t stride;
    emb_table_data(t, &stride);
    cr_assert_eq(stride, 4); /* 12 bytes -> 16 */
    emb_table_destroy(&t);
}

Test(tables, create_rejects_bad_input)
{
    EmbTable *t = (EmbTable *)0x1;
    cr_assert_eq(emb_table_create(NULL, 1, 1, EMB_F32, NULL), EMB_ENULL);
    cr_assert_eq(emb_table_create(&t, -1, 4, EMB_F32, NULL), EMB_EINVAL);
    cr_assert(strstr(emb_last_error(), "ncolumns -1"));
    cr_assert_eq(emb_table_create(&t, 1, 0, EMB_F32, NULL), EMB_EINVAL);
    cr_assert_eq(emb_table_create(&t, 1, 4, (EmbDtype)7, NULL), EMB_EDTYPE);
    EmbTableOptions o = {.name = "s", .static_size = 8};
    cr_assert_eq(emb_table_create(&t, 1, 4, EMB_F32, &o), EMB_ESHAPE);
    cr_assert(strstr(emb_last_error(), "static_size 8"));
    cr_assert_eq(emb_table_create(&t, INT64_MAX / 2, 1024, EMB_F32, NULL), EMB_EOVERFLOW);
    EmbTableOptions a = {.column_align = 48};
    cr_assert_eq(emb_table_create(&t, 1, 4, EMB_F32, &a), EMB_EINVAL);
    EmbTableOptions n = {.placement = EMB_PLACE_NODE, .numa_node = 4096};
    cr_assert_eq(emb_table_create(&t, 1, 4, EMB_F32, &n), EMB_EINVAL);
    cr_assert_eq(t, (EmbTable *)0x1, "out is untouched on failure");
}

Test(tables, placements_work_on_any_machine)
{
    static const EmbPlacement pl[] = {EMB_PLACE_DEFAULT, EMB_PLACE_LOCAL, EMB_PLACE_INTERLEAVE,
                                      EMB_PLACE_NODE};
    for (size_t i = 0; i < 4; i++) {
        EmbTable *t = NULL;
        EmbTableOptions o = {.placement = pl[i], .numa_node = 0};
        cr_assert_eq(emb_table_create(&t, 1 << 14, 64, EMB_F32, &o), 0, "%s", emb_last_error());
        emb_table_destroy(&t);
    }
    cr_assert_geq(emb_num_physical_cores(), 1);
    cr_assert_geq(emb_num_numa_nodes(), 1);
}

Test(tables, column_pointer_range)
{
    EmbTable *t = NULL;
    EmbTableOptions o = {.name = "items"};
    cr_assert_eq(emb_table_create(&t, 10, 4, EMB_F32, &o), 0);
    void *p = (void *)0x1;
    cr_assert_eq(emb_table_column_pointer(t, 10, EMB_CTX_FORWARD, &p), EMB_ERANGE);
    cr_assert_str_eq(emb_last_error(), "column 10 is not in [0, 10) (table \"items\")");
    cr_assert_eq(emb_table_column_pointer(t, -1, EMB_CTX_FORWARD, &p), EMB_ERANGE);
    cr_assert_eq(p, (void *)0x1);
    cr_assert_eq(emb_table_column_pointer(NULL, 0, EMB_CTX_FORWARD, &p), EMB_ENULL);
    emb_table_destroy(&t);
}

Test(tables, wrap_uses_caller_memory_and_stride)
{
    float mem[5 * 7];
    for (int c = 0; c < 5; c++)
        for (int i = 0; i < 7; i++)
            mem[c * 7 + i] = (float)(c * 100 + i);
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_wrap(&t, mem, 5, 4, 7, EMB_F32, NULL), 0);
    void *p;
    cr_assert_eq(emb_table_column_pointer(t, 3, EMB_CTX_NONE, &p), 0);
    cr_assert_eq(p, (void *)&mem[21]);
    mem[21] = 42.0f; /* no copy: the table sees the caller's writes */
    float out[4];
    cr_assert_eq(emb_gather(t, (const int64_t[]){3}, 1, out, 4), 0);
    cr_assert_eq(out[0], 42.0f);
    cr_assert_eq(out[3], 303.0f);
    cr_assert_eq(emb_table_wrap(&t, mem, 5, 8, 7, EMB_F32, NULL), EMB_ESTRIDE);
    cr_assert_eq(emb_table_wrap(&t, NULL, 5, 4, 7, EMB_F32, NULL), EMB_ENULL);
    emb_table_destroy(&t);
    cr_assert_eq(mem[0], 0.0f, "wrapped memory is not freed or touched");
}

typedef struct Counting {
    float data[6][3];
    int forward, update, none;
    int destroyed;
} Counting;

static void *counting_column(void *user, int64_t column, EmbContext ctx)
{
    Counting *c = user;
    if (ctx == EMB_CTX_FORWARD)
        __atomic_add_fetch(&c->forward, 1, __ATOMIC_RELAXED);
    else if (ctx == EMB_CTX_UPDATE)
        __atomic_add_fetch(&c->update, 1, __ATOMIC_RELAXED);
    else
        __atomic_add_fetch(&c->none, 1, __ATOMIC_RELAXED);
    return c->data[column];
}

static void counting_destroy(void *user)
{
    ((Counting *)user)->destroyed++;
}

Test(tables, custom_table_sees_forward_contexts)
{
    Counting c = {0};
    for (int j = 0; j < 6; j++)
        for (int i = 0; i < 3; i++)
            c.data[j][i] = (float)(j + 1);
    EmbTable *t = NULL;
    cr_assert_eq(emb_table_custom(&t, 6, 3, EMB_F32, counting_column, &c, counting_destroy, NULL), 0);
    cr_assert_null(emb_table_data(t, NULL));
    const int64_t ids[] = {0, 5, 5, 2, 1, 4};
    float out[2 * 3];
    cr_assert_eq(emb_lookup_sum(t, ids, 2, 3, out, 3), 0);
    cr_assert_eq(out[0], 1 + 6 + 6);
    cr_assert_eq(out[5], 3 + 2 + 5);
    cr_assert_eq(c.forward, 6, "one FORWARD per id, got %d", c.forward);
    cr_assert_eq(c.update + c.none, 0);
    void *p;
    cr_assert_eq(emb_table_column_pointer(t, 2, EMB_CTX_UPDATE, &p), 0);
    cr_assert_eq(c.update, 1);
    cr_assert_eq(emb_table_custom(&t, 6, 3, EMB_F32, NULL, &c, NULL, NULL), EMB_ENULL);
    emb_table_destroy(&t);
    cr_assert_eq(c.destroyed, 1);
}

Test(tables, static_table_matches_dynamic)
{
    static const int32_t sizes[] = {1, 3, 16, 17, 32, 64, 65, 128, 256};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        const int32_t D = sizes[s];
        EmbTable *dyn = NULL, *sta = NULL;
        EmbTableOptions o = {.static_size = D};
        cr_assert_eq(emb_table_create(&dyn, 50, D, EMB_F32, NULL), 0);
        cr_assert_eq(emb_table_create(&sta, 50, D, EMB_F32, &o), 0);
        cr_assert_eq(emb_table_is_static(sta), 1);
        tu_fill_random(dyn, 7 + s);
        tu_fill_random(sta, 7 + s);
        uint64_t seed = 99;
        int64_t ids[40 * 5];
        for (int i = 0; i < 200; i++)
            ids[i] = (int64_t)(tu_rand(&seed) % 50);
        float *a = malloc(sizeof(float) * 40 * D), *b = malloc(sizeof(float) * 40 * D);
        cr_assert_eq(emb_lookup_sum(dyn, ids, 40, 5, a, D), 0);
        cr_assert_eq(emb_lookup_sum(sta, ids, 40, 5, b, D), 0);
        cr_assert_eq(memcmp(a, b, sizeof(float) * 40 * D), 0, "D=%d", D);
        cr_assert_eq(emb_gather(dyn, ids, 40, a, D), 0);
        cr_assert_eq(emb_gather(sta, ids, 40, b, D), 0);
        cr_assert_eq(memcmp(a, b, sizeof(float) * 40 * D), 0, "D=%d", D);
        free(a);
        free(b);
        emb_table_destroy(&dyn);
        emb_table_destroy(&sta);
    }
}
