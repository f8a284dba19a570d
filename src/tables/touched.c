/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * touched.c — touched-row tracking (table_impl.h). Always on, for delta checkpoints: a
 * bitmap of the columns written since the last save with deltas (bit c: column c; 1 bit a
 * column, so that setting it costs a fraction of a percent of an update step), set by
 * every tracked write (an update step's commit, a scatter op). For streaming
 * (emb_table_changed_since), once asked for: a write clock that every tracked write
 * advances and, per column, the clock of its last tracked write (4 bytes a column). A
 * table whose ids are keys (rows appear), or whose writes were not tracked
 * (emb_table_initialize, a restore, a column pointer for UPDATE, a whole-table op), counts
 * every column as touched. Memory is allocated at the first tracked write; when that fails
 * the write counts as untracked, so tracking never fails a write. A keyed table (dynamic)
 * is not tracked by column: its update stamps each row with the kind's step, and a save
 * with deltas keeps its ids and step (saved_keys), against which the next delta finds the
 * rows updated or created since (store/delta_keyed.c) and the ids evicted since.
 */
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "embtables/store.h"
#include "tables/table_impl.h"
#include "tables/table_ops.h"

static size_t words(const EmbTable *t)
{
    return (size_t)((t->ncolumns + 63) / 64);
}

static uint32_t tick(EmbTable *t)
{
    return __atomic_add_fetch(&t->touch_clock, 1, __ATOMIC_RELAXED);
}

void emb__touched_all(EmbTable *t)
{
    __atomic_store_n(&t->touched_all, true, __ATOMIC_RELAXED);
    __atomic_store_n(&t->touch_all_at, tick(t), __ATOMIC_RELAXED);
}

void emb__touched_set(EmbTable *t, const int64_t *ids, int64_t n)
{
    if (n <= 0)
        return;
    if (emb__table_rows_appear(t) || t->ncolumns <= 0 ||
        (!t->touched && !(t->touched = calloc(words(t), sizeof *t->touched)))) {
        emb__touched_all(t);
        return;
    }
    uint64_t *b = t->touched;
    for (int64_t k = 0; k < n; k++)
        b[(uint64_t)ids[k] >> 6] |= UINT64_C(1) << (ids[k] & 63);
    if (t->touched_at) { /* streaming asked for */
        const uint32_t c = tick(t);
        for (int64_t k = 0; k < n; k++)
            t->touched_at[ids[k]] = c;
    }
}

int emb__listed_ids_none(const EmbTable *t, const int64_t *ids, int64_t n, bool state,
                         EmbRowList *out)
{
    (void)ids, (void)n, (void)state, (void)out;
    return emb__fail(EMB_ENOTSUP, "%s lists no rows by id", emb__table_label(t));
}

int emb__listed_extra(const EmbRowList *l, const char *suffix)
{
    for (int e = 0; e < l->nextra; e++)
        if (strcmp(l->extra[e].suffix, suffix) == 0)
            return e;
    return -1;
}

/* A keyed table's ids and step now (its listing's "dynamic.ids"), or NULL (no memory). */
static EmbSavedKeys *keys_now(const EmbTable *t)
{
    EmbRowList l = {0};
    if (!emb__table_listed(t) || emb__table_list(t, false, &l) != 0)
        return NULL;
    const int e = emb__listed_extra(&l, "dynamic.ids");
    EmbSavedKeys *k = e < 0 ? NULL : malloc(sizeof *k + (size_t)l.n * sizeof k->ids[0]);
    if (k) {
        k->step = l.step;
        k->n = l.n;
        for (int64_t j = 0; j < l.n; j++) {
            int64_t tmp;
            k->ids[j] = *(const int64_t *)l.extra_column(&l, e, j, &tmp);
        }
    }
    l.close(&l);
    return k;
}

void emb__touched_clear(EmbTable *t)
{
    if (emb__table_rows_appear(t)) { /* keyed: the ids and step a delta is found against */
        free(t->saved_keys);
        if (!(t->saved_keys = keys_now(t))) /* no memory: the next save is whole */
            return;
    }
    __atomic_store_n(&t->touched_all, false, __ATOMIC_RELAXED);
    if (t->touched)
        memset(t->touched, 0, words(t) * sizeof *t->touched);
}

bool emb__touched_is_all(const EmbTable *t)
{
    return __atomic_load_n(&t->touched_all, __ATOMIC_RELAXED);
}

int64_t emb__touched_list(const EmbTable *t, int64_t *ids, int64_t cap)
{
    if (emb__touched_is_all(t)) {
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

/* The columns whose clock is above @since (all of them when an untracked write is). */
static int64_t list_since(const EmbTable *t, uint32_t since, int64_t *ids, int64_t cap)
{
    if (__atomic_load_n(&t->touch_all_at, __ATOMIC_RELAXED) > since) {
        for (int64_t c = 0; c < EMB_MIN(cap, t->ncolumns); c++)
            ids[c] = c;
        return t->ncolumns;
    }
    int64_t n = 0;
    for (int64_t c = 0; c < t->ncolumns; c++)
        if (t->touched_at[c] > since) {
            if (n < cap)
                ids[n] = c;
            n++;
        }
    return n;
}

int emb_table_changed_since(const EmbTable *table, int64_t since, int64_t *ids, float *rows,
                            int64_t stride, int64_t cap, int64_t *n, int64_t *now)
{
    EMB_CHECK_NULL(table);
    EMB_CHECK_NULL(n);
    const EmbTable *t = table;
    if (cap < 0 || (cap > 0 && !ids))
        return emb__fail(EMB_EINVAL, "emb_table_changed_since: cap %lld with ids %p (%s)",
                         (long long)cap, (const void *)ids, emb__table_label(t));
    const int64_t clock = __atomic_load_n(&t->touch_clock, __ATOMIC_RELAXED);
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
    if (!t->touched_at) { /* streaming starts: before it, every column counts as written */
        EmbTable *w = (EmbTable *)t;
        if (!(w->touched_at = calloc((size_t)EMB_MAX(t->ncolumns, 1), sizeof(uint32_t))))
            return emb__fail(EMB_ENOMEM, "out of memory for the write clocks of %s",
                             emb__table_label(t));
        __atomic_store_n(&w->touch_all_at, tick(w), __ATOMIC_RELAXED);
    }
    *n = list_since(t, (uint32_t)since, ids, cap);
    for (int64_t k = 0; rows && k < EMB_MIN(*n, cap); k++)
        emb__row_load(t->dtype, emb__column(t, ids[k], EMB_CTX_NONE), t->featuresize,
                      rows + k * stride);
    if (now)
        *now = __atomic_load_n(&t->touch_clock, __ATOMIC_RELAXED);
    return 0;
}
