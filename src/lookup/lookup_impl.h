/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lookup_impl.h — the lookup's inner entry point for the strategies: look up a range of
 * bags of an already validated batch.
 */
#ifndef EMB_LOOKUP_IMPL_H
#define EMB_LOOKUP_IMPL_H

#include "embtables/lookup.h"

/*
 * The fallible part of a lookup: the table's acquire without rows (table_ops.h) over the
 * validated batch @b (its kept ids and @p's default id): a kind that pins (tiered) makes
 * every row resident and pins it until the caller's emb__table_release; a kind that
 * refuses unknown ids (dynamic with EMB_DYN_MISSING_ERROR) returns EMB_ENOTFOUND naming
 * one. 0 for every other kind; else the table's error (EMB_ENOTFOUND, EMB_EIO,
 * EMB_ENOMEM) with nothing pinned that the caller's release would not drop. Every writer
 * of a lookup's output calls it for every table of the operation before it writes
 * anything (emb_lookup, emb_maplookup): a failed lookup writes nothing. Serial per table;
 * tables are independent.
 */
int emb__lookup_acquire(const EmbTable *t, const EmbBatch *b, const EmbPooling *p);

/*
 * Looks up bags [bag0, bag1) of a validated batch, whose rows emb__lookup_acquire acquired,
 * into out + bag * stride (rows of other bags untouched). Thread-safe: several threads
 * may run disjoint ranges of one batch. @p p NULL means SUM. Returns 0; a nonzero return
 * (a kind's acquire failing although its rows are pinned: none does) may leave the
 * range's rows written. The caller releases the table (emb__table_release) once every
 * range of the operation is done.
 */
int emb__lookup_range(const EmbTable *t, const EmbBatch *b, const EmbPooling *p, float *out,
                      int64_t stride, int64_t bag0, int64_t bag1);

#endif
