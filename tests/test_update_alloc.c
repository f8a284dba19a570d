/* SPDX-License-Identifier: BSD-2-Clause */
/* test_update_alloc.c — a steady-state training step allocates nothing: the library's
 * (static) objects are linked with --wrap for the allocator, so every malloc / calloc /
 * realloc / posix_memalign they make is counted here. */
#include <criterion/criterion.h>

#include "test_update_ref.h"

static long nalloc;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t s);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t s);
void *__wrap_realloc(void *p, size_t n);
int __wrap_posix_memalign(void **p, size_t a, size_t n);

void *__wrap_malloc(size_t n)
{
    __atomic_add_fetch(&nalloc, 1, __ATOMIC_RELAXED);
    return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t s)
{
    __atomic_add_fetch(&nalloc, 1, __ATOMIC_RELAXED);
    return __real_calloc(n, s);
}
void *__wrap_realloc(void *p, size_t n)
{
    __atomic_add_fetch(&nalloc, 1, __ATOMIC_RELAXED);
    return __real_realloc(p, n);
}
int __wrap_posix_memalign(void **p, size_t a, size_t n)
{
    __atomic_add_fetch(&nalloc, 1, __ATOMIC_RELAXED);
    return __real_posix_memalign(p, a, n);
}

#define NTAB 2
static const int32_t dims[NTAB] = {16, 8};
static const EmbDtype dts[NTAB] = {EMB_F32, EMB_BF16};

/* One step of every table: pullback recorded, then update_many (s) or emb_update (NULL).
 * Returns the first error. Ids move with @step so that each step touches other columns. */
static int step(EmbStrategy *s, EmbOptimizer *o, EmbTable **t, EmbGrad **g, EmbIndexer **ix,
                int64_t *ids, float *dy, int it)
{
    for (int k = 0; k < 64 * 4; k++)
        ids[k] = (k * 37 + it * 11) % 500;
    const EmbBatch b = {.ids = ids, .nnz = 64 * 4, .nbags = 64, .bag_size = 4};
    int r = 0;
    for (int i = 0; i < NTAB && !r; i++)
        r = emb_lookup_backward(t[i], &b, NULL, dy, 16, g[i]);
    if (!r && s)
        r = emb_update_many(s, o, t, (const EmbGrad *const *)g, NTAB, ix, 0);
    for (int i = 0; i < NTAB && !r && !s; i++)
        r = emb_update(o, t[i], g[i], ix[i], EMB_UPDATE_NONTEMPORAL);
    return r;
}

static void check_strategy(EmbStrategy *s, EmbOptimizerKind kind)
{
    EmbTable *t[NTAB];
    EmbGrad *g[NTAB];
    EmbIndexer *ix[NTAB];
    EmbOptimizer *o = NULL;
    int64_t ids[64 * 4];
    float dy[64 * 16];
    for (int i = 0; i < 64 * 16; i++)
        dy[i] = 0.01f * (float)(i % 13);
    for (int i = 0; i < NTAB; i++) {
        t[i] = tu_table(500, dims[i], dts[i], (uint64_t)i);
        cr_assert_eq(emb_grad_create(&g[i]), 0);
        cr_assert_eq(emb_indexer_create(&ix[i]), 0);
    }
    const EmbOptimizerConfig c = emb_optimizer_defaults(kind, 0.1f);
    cr_assert_eq(emb_optimizer_create(&o, &c), 0);
    int r = step(s, o, t, g, ix, ids, dy, 0) || step(s, o, t, g, ix, ids, dy, 1);
    const long before = nalloc;
    for (int it = 2; it < 5 && !r; it++)
        r = step(s, o, t, g, ix, ids, dy, it);
    const long allocs = nalloc - before; /* no assertion inside the counted steps */
    cr_assert_eq(r, 0, "%s", emb_last_error());
    cr_assert_eq(allocs, 0, "kind %d, strategy %s: %ld allocations in 3 steady steps",
                 (int)kind, s ? emb_strategy_name(s) : "none", allocs);
    emb_optimizer_destroy(&o);
    for (int i = 0; i < NTAB; i++) {
        emb_grad_destroy(&g[i]);
        emb_indexer_destroy(&ix[i]);
        emb_table_destroy(&t[i]);
    }
}

Test(update_alloc, steady_state_steps_allocate_nothing)
{
    const EmbStrategyOptions par = {.nthreads = 2}, split = {.nthreads = 2, .num_splits = 3};
    for (int kind = EMB_OPT_SGD; kind <= EMB_OPT_ADAM; kind++) {
        EmbStrategy *s[3] = {NULL, NULL, NULL};
        cr_assert_eq(emb_strategy_sequential(&s[0]), 0);
        cr_assert_eq(emb_strategy_parallel(&s[1], &par), 0);
        cr_assert_eq(emb_strategy_prealloc_concat(&s[2], &split), 0);
        check_strategy(NULL, (EmbOptimizerKind)kind);
        for (int i = 0; i < 3; i++) {
            check_strategy(s[i], (EmbOptimizerKind)kind);
            emb_strategy_destroy(&s[i]);
        }
    }
}

/* A collection's step (forward + backward with the fused update) under each strategy kind:
 * after the first steps, nothing allocated. */
static int coll_step(EmbCollection *c, int64_t *ids, float *out, int it)
{
    for (int k = 0; k < 64 * 4; k++)
        ids[k] = (k * 37 + it * 11) % 500;
    const EmbBatch b[NTAB] = {{.ids = ids, .nnz = 64 * 4, .nbags = 64, .bag_size = 4},
                              {.ids = ids, .nnz = 64 * 4, .nbags = 64, .bag_size = 4}};
    const EmbOutputs l = emb_collection_concat(c, out);
    int r = emb_collection_prefetch(c, b) || emb_collection_forward(c, b, &l);
    for (int k = 0; k < 64 * 24 && !r; k++)
        out[k] = 0.01f * (float)(k % 13);
    return r ? r : emb_collection_backward(c, &l);
}

Test(update_alloc, collection_steps_allocate_nothing)
{
    const EmbStrategyOptions split = {.nthreads = 2, .num_splits = 3};
    for (int kind = EMB_OPT_SGD; kind <= EMB_OPT_ADAM; kind++)
        for (int which = 0; which < 2; which++) {
            EmbCollectionTable ct[NTAB];
            for (int i = 0; i < NTAB; i++)
                ct[i] = (EmbCollectionTable){.name = i ? "b" : "a", .pooling = EMB_POOLING_SUM,
                    .spec = {.ncolumns = 500, .featuresize = dims[i], .dtype = dts[i]}};
            const EmbOptimizerConfig oc = emb_optimizer_defaults((EmbOptimizerKind)kind, 0.1f);
            EmbStrategy *s = NULL;
            cr_assert_eq(emb_strategy_prealloc_concat(&s, &split), 0);
            const EmbCollectionOptions o = {.optimizer = &oc, .strategy = which ? s : NULL};
            EmbCollection *c = NULL;
            cr_assert_eq(emb_collection_create(&c, ct, NTAB, &o), 0, "%s", emb_last_error());
            int64_t ids[64 * 4];
            float out[64 * 24];
            int r = coll_step(c, ids, out, 0) || coll_step(c, ids, out, 1);
            const long before = nalloc;
            for (int it = 2; it < 5 && !r; it++)
                r = coll_step(c, ids, out, it);
            const long allocs = nalloc - before;
            cr_assert_eq(r, 0, "%s", emb_last_error());
            cr_assert_eq(allocs, 0, "kind %d, strategy %d: %ld allocations in 3 steady steps",
                         kind, which, allocs);
            emb_collection_destroy(&c);
            emb_strategy_destroy(&s);
        }
}
