/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * touched.c — touched-row tracking (delta checkpoints, table_impl.h): one bit per column,
 * set by the update's commit and the variable ops, cleared by a save. A table whose ids
 * are keys (rows appear), or whose writes were not tracked (emb_table_initialize, a
 * restore, emb_table_column_pointer with UPDATE, a whole-table op), is "all touched": a
 * delta of it holds every row. The bitmap is allocated at the first tracked write; when
 * that allocation fails the table becomes all touched, so tracking never fails a write.
 */
#include <stdlib.h>
#include <string.h>

#include "tables/table_impl.h"

static size_t words(const EmbTable *t)
{
    return (size_t)((t->ncolumns + 63) / 64);
}

void emb__touched_all(EmbTable *t)
{
    __atomic_store_n(&t->touched_all, true, __ATOMIC_RELAXED);
}

void emb__touched_set(EmbTable *t, const int64_t *ids, int64_t n)
{
    if (n <= 0)
        return;
    if (emb__table_rows_appear(t) || t->ncolumns <= 0) {
        emb__touched_all(t);
        return;
    }
    if (!t->touched && !(t->touched = calloc(words(t), sizeof *t->touched))) {
        emb__touched_all(t);
        return;
    }
    uint64_t *b = t->touched;
    for (int64_t k = 0; k < n; k++)
        b[(uint64_t)ids[k] >> 6] |= UINT64_C(1) << (ids[k] & 63);
}

void emb__touched_clear(EmbTable *t)
{
    __atomic_store_n(&t->touched_all, false, __ATOMIC_RELAXED);
    if (t->touched)
        memset(t->touched, 0, words(t) * sizeof *t->touched);
}

int64_t emb__touched_list(const EmbTable *t, int64_t *ids, int64_t cap)
{
    if (__atomic_load_n(&t->touched_all, __ATOMIC_RELAXED)) {
        for (int64_t c = 0; c < EMB_MIN(cap, t->ncolumns); c++)
            ids[c] = c;
        return t->ncolumns;
    }
    int64_t n = 0;
    for (size_t w = 0; t->touched && w < words(t); w++)
        for (uint64_t b = t->touched[w]; b; b &= b - 1, n++)
            if (n < cap)
                ids[n] = (int64_t)(w * 64) + __builtin_ctzll(b);
    return n;
}

bool emb__touched_is_all(const EmbTable *t)
{
    return __atomic_load_n(&t->touched_all, __ATOMIC_RELAXED);
}
