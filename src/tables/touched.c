/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * touched.c — touched-row tracking (delta checkpoints and streaming, table_impl.h). A table
 * keeps a write clock that every tracked write advances (an update step's commit, a
 * scatter op) and, per column, the clock of its last tracked write; a column was touched
 * since clock value S when its clock is above S. A table whose ids are keys (rows appear),
 * or whose writes were not tracked (emb_table_initialize, a restore, a column pointer for
 * UPDATE, a whole-table op), counts every column as touched at that write's clock
 * (`all_at`). The clocks are allocated at the first tracked write (4 bytes a column); when
 * that allocation fails the write counts as untracked, so tracking never fails a write.
 */
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "embtables/store.h"
#include "tables/table_impl.h"

static uint32_t tick(EmbTable *t)
{
    return __atomic_add_fetch(&t->touch_clock, 1, __ATOMIC_RELAXED);
}

void emb__touched_all(EmbTable *t)
{
    __atomic_store_n(&t->touch_all_at, tick(t), __ATOMIC_RELAXED);
}

void emb__touched_set(EmbTable *t, const int64_t *ids, int64_t n)
{
    if (n <= 0)
        return;
    if (emb__table_rows_appear(t) || t->ncolumns <= 0 ||
        (!t->touched_at && !(t->touched_at = calloc((size_t)t->ncolumns, sizeof(uint32_t))))) {
        emb__touched_all(t);
        return;
    }
    const uint32_t c = tick(t);
    uint32_t *at = t->touched_at;
    for (int64_t k = 0; k < n; k++)
        at[ids[k]] = c;
}

void emb__touched_clear(EmbTable *t)
{
    t->touch_saved_at = __atomic_load_n(&t->touch_clock, __ATOMIC_RELAXED);
}

bool emb__touched_is_all(const EmbTable *t)
{
    return __atomic_load_n(&t->touch_all_at, __ATOMIC_RELAXED) > t->touch_saved_at;
}

int64_t emb__touched_list_since(const EmbTable *t, uint32_t since, int64_t *ids, int64_t cap)
{
    if (__atomic_load_n(&t->touch_all_at, __ATOMIC_RELAXED) > since) {
        for (int64_t c = 0; c < EMB_MIN(cap, t->ncolumns); c++)
            ids[c] = c;
        return t->ncolumns;
    }
    int64_t n = 0;
    for (int64_t c = 0; t->touched_at && c < t->ncolumns; c++)
        if (t->touched_at[c] > since) {
            if (n < cap)
                ids[n] = c;
            n++;
        }
    return n;
}

int64_t emb__touched_list(const EmbTable *t, int64_t *ids, int64_t cap)
{
    return emb__touched_list_since(t, t->touch_saved_at, ids, cap);
}

int emb_table_changed_since(const EmbTable *table, int64_t since, int64_t *ids, float *rows,
                            int64_t stride, int64_t cap, int64_t *n, int64_t *now)
{
    EMB_CHECK_NULL(table);
    EMB_CHECK_NULL(n);
    const EmbTable *t = table;
    const int64_t clock = __atomic_load_n(&t->touch_clock, __ATOMIC_RELAXED);
    if (cap < 0 || (cap > 0 && !ids))
        return emb__fail(EMB_EINVAL, "emb_table_changed_since: cap %lld with ids %p (%s)",
                         (long long)cap, (const void *)ids, emb__table_label(t));
    if (since < 0 || since > clock)
        return emb__fail(EMB_EINVAL, "emb_table_changed_since: since %lld is not a write "
                         "count of %s (now %lld)", (long long)since, emb__table_label(t),
                         (long long)clock);
    if (rows && cap > 0 && stride < t->featuresize)
        return emb__fail(EMB_ESTRIDE, "emb_table_changed_since: stride %lld < featuresize %d "
                         "(%s)", (long long)stride, (int)t->featuresize, emb__table_label(t));
    if (rows && cap > 0 && stride > INT64_MAX / 4 / cap)
        return emb__fail(EMB_EOVERFLOW, "emb_table_changed_since: %lld rows of stride %lld "
                         "overflow (%s)", (long long)cap, (long long)stride,
                         emb__table_label(t));
    if (emb__table_rows_appear(t) || (rows && cap > 0 && emb__table_pins(t)))
        return emb__fail(EMB_ENOTSUP, "emb_table_changed_since: %s is %s: %s", emb__table_label(t),
                         t->ops->kind, emb__table_rows_appear(t)
                                 ? "its rows are not tracked by column"
                                 : "read its rows with a lookup (rows NULL)");
    *n = emb__touched_list_since(t, (uint32_t)since, ids, cap);
    for (int64_t k = 0; rows && k < EMB_MIN(*n, cap); k++)
        emb__row_load(t->dtype, emb__column(t, ids[k], EMB_CTX_NONE), t->featuresize,
                      rows + k * stride);
    if (now)
        *now = clock;
    return 0;
}
