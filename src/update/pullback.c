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
    return b->nnz + b->nbags;
}

int64_t emb__pullback_entries(const EmbTable *t, const EmbBatch *b, const EmbPooling *p,
                              EmbPullEntry *out)
{
    (void)t;
    if (!p)
        p = &emb__pooling_sum;
    int64_t n = 0;
    for (int64_t bag = 0; bag < b->nbags; bag++) {
        const int64_t start = emb__bag_start(b, bag), end = emb__bag_end(b, bag), first = n;
        double sw = 0.0, sw2 = 0.0;
        for (int64_t k = start; k < end; k++) {
            const int64_t id = emb__batch_id(b, k);
            if (emb__pruned(b, p, k, id))
                continue;
            const float w = b->weights ? b->weights[k] : 1.0f;
            out[n++] = (EmbPullEntry){id, bag, w};
            sw += w;
            sw2 += (double)w * w;
        }
        if (n == first) {
            if (p->flags & EMB_USE_DEFAULT_ID)
                out[n++] = (EmbPullEntry){p->default_id, bag, 1.0f};
            continue;
        }
        const float s = emb__combiner_scale(p->combiner, sw, sw2);
        for (int64_t i = first; i < n; i++)
            out[i].coef = out[i].coef * s;
    }
    return n;
}

int emb__pullback_needs_column(const EmbPooling *p)
{
    return p && p->max_norm > 0.0f;
}

void emb__pullback_row(const EmbTable *t, const EmbPooling *p, const EmbPullEntry *e,
                       const float *dy, float *g)
{
    const int32_t D = t->featuresize;
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
