/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lookup_impl.h — the lookup's inner entry point for the strategies: look up a range of
 * bags of an already validated batch.
 */
#ifndef EMB_LOOKUP_IMPL_H
#define EMB_LOOKUP_IMPL_H

#include "embtables/lookup.h"

/*
 * The fallible part of a lookup: a kind whose rows must be fetched (its rows facet pins: tiered)
 * resolves and pins every row of the validated batch @b (and @p's default id), until the
 * caller's emb__table_release. 0 for every other kind; else 0 or the table's error
 * (table_ops.h: EMB_EIO, EMB_ENOMEM) with nothing pinned that the caller's release would
 * not drop. Every writer of a lookup's output calls it for every table of the operation
 * before it writes anything (emb_lookup, emb_maplookup): a failed lookup writes nothing.
 * Serial per table; tables are independent.
 */
int emb__lookup_pin(const EmbTable *t, const EmbBatch *b, const EmbPooling *p);

/*
 * Looks up bags [bag0, bag1) of a validated batch, whose rows emb__lookup_pin pinned,
 * into out + bag * stride (rows of other bags untouched). Thread-safe: several threads
 * may run disjoint ranges of one batch. @p p NULL means SUM. Returns 0; a nonzero return
 * (a kind's resolve failing although its rows are pinned: none does) may leave the
 * range's rows written. The caller releases the table (emb__table_release) once every
 * range of the operation is done.
 */
int emb__lookup_range(const EmbTable *t, const EmbBatch *b, const EmbPooling *p, float *out,
                      int64_t stride, int64_t bag0, int64_t bag1);

#endif
