/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * batch.h — reading and validating EmbBatch / EmbPooling. Shared by the lookup, the
 * backward (update/) and the strategies: the one place that knows where a bag starts,
 * which ids a pooling prunes and what an empty bag yields.
 */
#ifndef EMB_BATCH_H
#define EMB_BATCH_H

#include <math.h>

#include "embtables/lookup.h"
#include "internal.h"
#include "kernels/kernels.h"

EMB_INLINE int64_t emb__batch_id(const EmbBatch *b, int64_t k)
{
    return b->id_type == EMB_ID_I32 ? (int64_t)((const int32_t *)b->ids)[k]
                                    : ((const int64_t *)b->ids)[k];
}

EMB_INLINE int64_t emb__bag_start(const EmbBatch *b, int64_t bag)
{
    return b->offsets ? b->offsets[bag] : bag * b->bag_size;
}

EMB_INLINE int64_t emb__bag_end(const EmbBatch *b, int64_t bag)
{
    return b->offsets ? b->offsets[bag + 1] : (bag + 1) * b->bag_size;
}

/* Whether the pooling drops entry k (pruned id or pruned weight). */
EMB_INLINE bool emb__pruned(const EmbBatch *b, const EmbPooling *p, int64_t k, int64_t id)
{
    if (id < 0 && (p->flags & EMB_PRUNE_INVALID))
        return true;
    return b->weights && (p->flags & EMB_PRUNE_NONPOSITIVE_WEIGHTS) && !(b->weights[k] > 0.0f);
}

/* The factor a finished bag is scaled by (emb__combiner_factor). Shared by the lookup, its
 * kernels and its pullback. */
EMB_INLINE float emb__combiner_scale(EmbCombiner combiner, double sum_w, double sum_w2)
{
    return emb__combiner_factor(combiner, sum_w, sum_w2);
}

/* The pooling a NULL pointer stands for. */
extern const EmbPooling emb__pooling_sum;

/*
 * Validates batch and pooling against a table (ids in range unless pruned, offsets,
 * sizes, default_id). Does not look at outputs. Returns 0 or an error with its message.
 */
int emb__batch_check(const EmbTable *t, const EmbBatch *b, const EmbPooling *p);
/* emb__batch_check for a lookup (a read): also, for a dynamic table whose unknown ids fail
   (EMB_DYN_MISSING_ERROR), EMB_ENOTFOUND naming the first id that has no row. */
int emb__batch_check_forward(const EmbTable *t, const EmbBatch *b, const EmbPooling *p);
/*
 * emb__batch_check in two parts, for callers that check ids on several threads: the shape
 * (everything but the ids: sizes, offsets, default_id), then the ids at positions
 * [k0, k1) (after a successful shape check). Both together check what emb__batch_check
 * does; the message of the ids part is set on the thread that runs it.
 */
int emb__batch_check_shape(const EmbTable *t, const EmbBatch *b, const EmbPooling *p);
int emb__batch_check_ids(const EmbTable *t, const EmbBatch *b, const EmbPooling *p, int64_t k0,
                         int64_t k1);

/*
 * Validates an output of nbags rows of featuresize at @out with @stride: non-NULL when
 * rows exist, stride >= featuresize, no overflow. @what names the output in messages.
 */
int emb__output_check(const EmbTable *t, const float *out, int64_t nbags, int64_t stride,
                      const char *what);

#endif
