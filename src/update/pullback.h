/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pullback.h — the exact pullback (backward) of emb_lookup: what a recorded gradient
 * expands into when the update layer (plan.c, pindex.c) indexes it.
 *
 * A lookup computes, per bag, y = s · Σ_k w_k · clip(x_k) over the kept entries (s the
 * combiner factor, clip the max_norm clip, an empty bag's default column with w = 1). Its
 * pullback sends to the column of entry k the gradient  s·w_k · J_clip(x_k)ᵀ · dy  where dy
 * is the output gradient of the bag; pruned ids and zero-filled empty bags receive nothing.
 * Entries carry `coef = s·w_k`; the Jacobian (identity unless the column was clipped) is
 * applied by emb__pullback_row. MAX pooling sends element i of dy to the one entry whose
 * column gave the bag's maximum at i (emb__pullback_max_ids, computed before the update).
 */
#ifndef EMB_PULLBACK_H
#define EMB_PULLBACK_H

#include "batch_rules.h" /* EmbPullEntry, emb_rule_pullback_entries */
#include "embtables/lookup.h"

/* Upper bound of the entries of a batch: nnz + nbags. */
int64_t emb__pullback_max_entries(const EmbBatch *b);

/*
 * Writes the entries of a validated (table, batch, pooling) into @out (room for
 * emb__pullback_max_entries), in batch order, and returns their number. @p p NULL: SUM.
 */
int64_t emb__pullback_entries(const EmbTable *t, const EmbBatch *b, const EmbPooling *p,
                              EmbPullEntry *out);

/* Whether emb__pullback_row is more than coef * dy (max_norm is on, or MAX pooling). */
int emb__pullback_needs_column(const EmbPooling *p);

/*
 * MAX pooling's routing of a validated batch: maxid[bag * D + i] = the id whose column gave
 * element i of the bag's maximum (the forward's comparison, x > max, from the first kept
 * entry: the first entry on ties), an empty bag's default id (or -1 without one). Reads
 * the rows through the table's resolve (FORWARD, as the lookup), so call it before any
 * column is updated; @val: room for D floats. 0 or the table's error (nothing written to
 * the table).
 */
int emb__pullback_max_ids(const EmbTable *t, const EmbBatch *b, const EmbPooling *p,
                          int64_t *maxid, float *val);

/*
 * The gradient of entry @e's column: g = coef·dy, or with max_norm and a clipped column
 * x of norm n > c:  g = (c/n)·(coef·dy − x·(x·coef·dy)/n²). Reads the column's current
 * values (so call it before the column is updated). MAX pooling: g[i] = dy[i] where
 * @maxid (the bag's row of emb__pullback_max_ids) names the entry's id, else 0.
 * @g has featuresize elements.
 */
void emb__pullback_row(const EmbTable *t, const EmbPooling *p, const EmbPullEntry *e,
                       const float *dy, const int64_t *maxid, float *g);

#endif
