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
