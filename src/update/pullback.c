/* SPDX-License-Identifier: BSD-2-Clause */
/* pullback.c — entries and rows of the exact lookup pullback (see pullback.h). */
#include <math.h>

#include "dtype.h"
#include "kernels/kernels.h"
#include "lookup/batch.h"
#include "tables/table_impl.h"
#include "update/pullback.h"

int64_t emb__pullback_max_entries(const EmbBatch *b)
{
    return emb_rule_pullback_max_entries(b);
}

int64_t emb__pullback_entries(const EmbTable *t, const EmbBatch *b, const EmbPooling *p,
                              EmbPullEntry *out)
{
    (void)t;
    return emb_rule_pullback_entries(b, p ? p : &emb__pooling_sum, out);
}

int emb__pullback_needs_column(const EmbPooling *p)
{
    return p && (p->max_norm > 0.0f || p->combiner == EMB_COMBINER_MAX);
}

/* The maximum of a bag's kept entries so far (@val, @mi) with the row of @id: the first row
   sets them, a later one takes the elements where it compares greater (branch-free selects,
   an f32 row read directly, so that the compiler vectorizes the loop). */
static void max_take(const EmbTable *t, const void *row, int64_t id, bool first, float *val,
                     int64_t *mi)
{
    const int32_t D = t->featuresize;
    float s = 1.0f, b = 0.0f;
    if (emb__dtype_quantized(t->dtype))
        emb__q_params(t->dtype, row, D, &s, &b);
    if (first) {
        for (int32_t i = 0; i < D; i++)
            val[i] = emb__max_elem(t->dtype, row, i, s, b), mi[i] = id;
        return;
    }
    if (t->dtype == EMB_F32) {
        const float *x = row;
        for (int32_t i = 0; i < D; i++) {
            const int64_t gt = -(int64_t)(x[i] > val[i]); /* a mask: random data mispredicts */
            val[i] = x[i] > val[i] ? x[i] : val[i];
            mi[i] = (mi[i] & ~gt) | (id & gt);
        }
        return;
    }
    for (int32_t i = 0; i < D; i++) {
        const float x = emb__max_elem(t->dtype, row, i, s, b);
        const int64_t gt = -(int64_t)(x > val[i]);
        val[i] = x > val[i] ? x : val[i];
        mi[i] = (mi[i] & ~gt) | (id & gt);
    }
}

#define MAX_AHEAD 16 /* ids ahead whose rows the routing prefetches (a simple table) */

static inline void prefetch_row(const EmbTable *t, int64_t id)
{
    if (id < 0 || id >= t->ncolumns)
        return; /* pruned */
    const char *r = t->data + (size_t)id * t->stride;
    const size_t bytes = emb__row_bytes(t->dtype, t->featuresize);
    for (size_t o = 0; o < bytes; o += 64)
        __builtin_prefetch(r + o);
}

int emb__pullback_max_ids(const EmbTable *t, const EmbBatch *b, const EmbPooling *p,
                          int64_t *maxid, float *val)
{
    const int32_t D = t->featuresize;
    for (int64_t bag = 0; bag < b->nbags; bag++) {
        int64_t *mi = maxid + bag * D;
        bool any = false;
        for (int64_t k = emb__bag_start(b, bag); k < emb__bag_end(b, bag); k++) {
            if (t->data && k + MAX_AHEAD < b->nnz) /* rows at random: their lines ahead */
                prefetch_row(t, emb__batch_id(b, k + MAX_AHEAD));
            const int64_t id = emb__batch_id(b, k);
            if (emb__pruned(b, p, k, id))
                continue;
            const EmbIdSpan one = {b->ids, b->id_type == EMB_ID_I32, k, 1, NULL};
            const void *row;
            unsigned hint;
            const int r = emb__table_acquire(t, &one, EMB_CTX_FORWARD, &row, &hint);
            if (r)
                return r;
            max_take(t, row, id, !any, val, mi);
            any = true;
        }
        if (!any)
            for (int32_t i = 0; i < D; i++)
                mi[i] = p->flags & EMB_USE_DEFAULT_ID ? p->default_id : -1;
    }
    return 0;
}

void emb__pullback_row(const EmbTable *t, const EmbPooling *p, const EmbPullEntry *e,
                       const float *dy, const int64_t *maxid, float *g)
{
    const int32_t D = t->featuresize;
    if (p && p->combiner == EMB_COMBINER_MAX) {
        for (int32_t i = 0; i < D; i++)
            g[i] = maxid[i] == e->id ? dy[i] : 0.0f;
        return;
    }
    for (int32_t i = 0; i < D; i++)
        g[i] = e->coef * dy[i];
    if (!emb__pullback_needs_column(p))
        return;
    const void *col = emb__column(t, e->id, EMB_CTX_NONE);
    double ss = 0.0, xg = 0.0;
    for (int32_t i = 0; i < D; i++) {
        const double x = emb__row_elem(t->dtype, col, D, i);
        ss += x * x;
        xg += x * g[i];
    }
    /* the forward clips when the f32 sum of squares exceeds c²; decide the same way */
    const float ssf = emb__kernels()->sumsq[t->dtype](col, D);
    const double c = p->max_norm;
    if (!(ssf > (float)(c * c)))
        return;
    const double n = sqrt(ss), k = xg / ss;
    for (int32_t i = 0; i < D; i++)
        g[i] = (float)(c / n * (g[i] - emb__row_elem(t->dtype, col, D, i) * k));
}
