/*
 * lookup_impl.h — the lookup's inner entry points for the strategies: look up a range of
 * bags of an already validated batch, and the combiner factor shared with the backward.
 */
#ifndef EMB_LOOKUP_IMPL_H
#define EMB_LOOKUP_IMPL_H

#include "embtables/lookup.h"

/*
 * Looks up bags [bag0, bag1) of a validated batch into out + bag * stride (rows of other
 * bags untouched). Thread-safe: several threads may run disjoint ranges of one batch.
 * @p p NULL means SUM.
 */
void emb__lookup_range(const EmbTable *t, const EmbBatch *b, const EmbPooling *p, float *out,
                       int64_t stride, int64_t bag0, int64_t bag1);

/* The factor a finished bag is scaled by: 1 (SUM, NONE), 1/Σw (MEAN), 1/sqrt(Σw²) (SQRTN);
 * 0 when the denominator is 0 (weights that cancel give zeros, never NaN). */
float emb__combiner_scale(EmbCombiner combiner, double sum_w, double sum_w2);

#endif
