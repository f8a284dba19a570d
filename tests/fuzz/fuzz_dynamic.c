/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_dynamic.c — bytes -> (dynamic table options, a sequence of updates, lookups,
 * evictions, imports, scatters and exports): never a crash; a failed call leaves the
 * table's export as it was; the export is in increasing id order, holds at most max_rows
 * rows and agrees with emb_table_dynamic_contains(); an imported row reads back as given
 * (rounded to the dtype).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "embtables/embtables.h"
#include "fuzz_input.h"

#define MAX_N 24
#define MAX_ROWS 64
#define MAX_D 20

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Snap {
    int64_t n;
    int64_t ids[MAX_ROWS + MAX_N];
    float rows[(MAX_ROWS + MAX_N) * MAX_D];
} Snap;

/* The export, checked: ordered, within the cap, agreeing with contains(). */
static void snap(const EmbTable *t, int32_t D, int64_t cap, Snap *s)
{
    FUZZ_ASSERT(emb_table_dynamic_export(t, s->ids, s->rows, D, MAX_ROWS + MAX_N, &s->n) == 0);
    FUZZ_ASSERT(cap == 0 || s->n <= cap);
    for (int64_t k = 0; k < s->n; k++) {
        FUZZ_ASSERT(k == 0 || s->ids[k - 1] < s->ids[k]);
        FUZZ_ASSERT(emb_table_dynamic_contains(t, s->ids[k]) == 1);
    }
}

static int same(const Snap *a, const Snap *b, int32_t D)
{
    return a->n == b->n && !memcmp(a->ids, b->ids, (size_t)a->n * sizeof a->ids[0]) &&
           !memcmp(a->rows, b->rows, (size_t)(a->n * D) * sizeof a->rows[0]);
}

/* A small id space most of the time (rows repeat), anything sometimes. */
static int64_t dyn_id(FuzzInput *in)
{
    const uint8_t sel = fuzz_u8(in);
    if (sel >= 0xf8)
        return fuzz_i64(in);
    return (int64_t)(sel % 40) * 1000003 - (sel == 0xf7 ? 5000000 : 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzInput in = {data, size};
    const uint8_t shape = fuzz_u8(&in);
    const int32_t D = 1 + shape % MAX_D;
    const EmbDtype dtype = (EmbDtype)((shape >> 5) % 3);
    const uint8_t o8 = fuzz_u8(&in);
    EmbDynamicOptions o = {.capacity = o8 & 15, .max_rows = (o8 >> 4) ? (o8 >> 4) * 4 : 0,
                           .missing = (EmbDynamicMissing)(fuzz_u8(&in) % 3),
                           .missing_value = 0.5f, .admit_after = fuzz_u8(&in) % 4,
                           .sketch_width = 16,
                           .init = {(EmbInitKind)(fuzz_u8(&in) % 7), -0.5f, 0.5f, 3}};
    EmbTable *t = NULL;
    if (emb_table_dynamic_create(&t, D, dtype, &o) != 0)
        return 0;
    EmbOptimizerConfig cfg = emb_optimizer_defaults((EmbOptimizerKind)(fuzz_u8(&in) % 5), 0.1f);
    EmbOptimizer *opt = NULL;
    EmbIndexer *ix = NULL;
    EmbGrad *g = NULL;
    FUZZ_ASSERT(emb_optimizer_create(&opt, &cfg) == 0);
    FUZZ_ASSERT(emb_indexer_create(&ix) == 0 && emb_grad_create(&g) == 0);
    static Snap before, after;
    int64_t ids[MAX_N];
    float rows[MAX_N * MAX_D], out[MAX_N * MAX_D];
    for (int op = 0; op < 12 && in.n > 0; op++) {
        const uint8_t sel = fuzz_u8(&in);
        const int n = 1 + (sel >> 3) % MAX_N;
        for (int k = 0; k < n; k++)
            ids[k] = dyn_id(&in);
        for (int k = 0; k < n * D; k++)
            rows[k] = (float)(int8_t)fuzz_u8(&in) / 16.0f;
        snap(t, D, o.max_rows, &before);
        int r = 0;
        switch (sel & 7) {
        case 0:
        case 1: {
            const EmbSparseGrad sp = {.ids = ids, .n = n, .featuresize = D, .values = rows,
                                      .stride = D};
            r = emb_grad_set_sparse(g, t, &sp);
            r = r ? r : emb_update(opt, t, g, ix, 0);
            break;
        }
        case 2:
            r = emb_lookup_sum(t, ids, n, 1, out, D);
            break;
        case 3: {
            const EmbDynamicEvict ev = {.ttl = fuzz_u8(&in) % 4,
                                        .min_norm = (float)(fuzz_u8(&in) % 4) * 0.5f,
                                        .flags = fuzz_u8(&in) & 1};
            int64_t ne = 0;
            r = emb_table_dynamic_evict(t, &ev, &ne);
            snap(t, D, o.max_rows, &after);
            FUZZ_ASSERT(r != 0 || after.n == before.n - ne);
            continue;
        }
        case 4:
            r = emb_table_dynamic_import(t, ids, rows, D, n);
            if (r == 0)
                for (int k = 0; k < n; k++) {
                    void *col;
                    FUZZ_ASSERT(emb_table_column_pointer(t, ids[k], EMB_CTX_FORWARD, &col) == 0);
                    float v[MAX_D];
                    FUZZ_ASSERT(emb_gather(t, &ids[k], 1, v, D) == 0);
                    for (int i = 0; i < D; i++)
                        FUZZ_ASSERT(fabsf(v[i] - rows[k * D + i]) <= fabsf(rows[k * D + i]) / 64);
                }
            break;
        case 5:
            r = emb_table_scatter_add(t, ids, n, rows, D);
            break;
        default: {
            const EmbBatch b = {.ids = ids, .nnz = n, .nbags = 1, .bag_size = n};
            r = emb_lookup_backward(t, &b, NULL, rows, D, g);
            r = r ? r : emb_update(opt, t, g, ix, 0);
            break;
        }
        }
        snap(t, D, o.max_rows, &after);
        if (r != 0 || (sel & 7) == 2)
            FUZZ_ASSERT(same(&before, &after, D));
    }
    emb_grad_destroy(&g);
    emb_indexer_destroy(&ix);
    if (fuzz_u8(&in) & 1) { /* either order of destruction */
        emb_table_destroy(&t);
        emb_optimizer_destroy(&opt);
    } else {
        emb_optimizer_destroy(&opt);
        emb_table_destroy(&t);
    }
    return 0;
}
