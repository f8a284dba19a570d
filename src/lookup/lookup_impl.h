/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lookup_impl.h — the lookup's inner entry point for the strategies: look up a range of
 * bags of an already validated batch.
 */
#ifndef EMB_LOOKUP_IMPL_H
#define EMB_LOOKUP_IMPL_H

#include "embtables/lookup.h"

/*
 * Looks up bags [bag0, bag1) of a validated batch into out + bag * stride (rows of other
 * bags untouched). Thread-safe: several threads may run disjoint ranges of one batch.
 * @p p NULL means SUM. Returns 0, or the table's error when it resolves rows and that fails
 * (table_ops.h: EMB_EIO, EMB_ENOMEM; never for in-memory kinds). The caller releases the
 * table (emb__table_release) once every range of the operation is done.
 */
int emb__lookup_range(const EmbTable *t, const EmbBatch *b, const EmbPooling *p, float *out,
                       int64_t stride, int64_t bag0, int64_t bag1);

#endif
