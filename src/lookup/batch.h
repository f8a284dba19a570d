/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * batch.h — reading and validating EmbBatch / EmbPooling. Shared by the lookup, the
 * backward (update/) and the strategies: the one place that knows where a bag starts,
 * which ids a pooling prunes and what an empty bag yields.
 */
#ifndef EMB_BATCH_H
#define EMB_BATCH_H

#include <math.h>

#include "batch_rules.h"
#include "embtables/lookup.h"
#include "internal.h"
#include "kernels/kernels.h"

/* The rules themselves are batch_rules.h's (shared with src/dist/ and gpu/); these are
 * their forms over a batch. */
EMB_INLINE int64_t emb__batch_id(const EmbBatch *b, int64_t k)
{
    return emb_rule_id(b, k);
}

EMB_INLINE int64_t emb__bag_start(const EmbBatch *b, int64_t bag)
{
    return emb_rule_bag_start(b, bag);
}

EMB_INLINE int64_t emb__bag_end(const EmbBatch *b, int64_t bag)
{
    return emb_rule_bag_end(b, bag);
}

/* Whether the pooling drops entry k (pruned id or pruned weight). */
EMB_INLINE bool emb__pruned(const EmbBatch *b, const EmbPooling *p, int64_t k, int64_t id)
{
    return emb_rule_pruned(p->flags, id, b->weights, k);
}

/* The factor a finished bag is scaled by. Shared by the lookup, its kernels and its
 * pullback. */
EMB_INLINE float emb__combiner_scale(EmbCombiner combiner, double sum_w, double sum_w2)
{
    return emb_rule_combiner_factor(combiner, sum_w, sum_w2);
}

/* The pooling a NULL pointer stands for. */
extern const EmbPooling emb__pooling_sum;

/*
 * Validates batch and pooling against a table (ids in range unless pruned, offsets,
 * sizes, default_id). Does not look at outputs. Returns 0 or an error with its message.
 */
int emb__batch_check(const EmbTable *t, const EmbBatch *b, const EmbPooling *p);
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
