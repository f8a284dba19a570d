/* SPDX-License-Identifier: BSD-2-Clause */
/**
 * @file lookup.h
 * Single-table lookups: gather, fixed-size bags (the Julia matrix form) and ragged bags
 * (CSR offsets, the TF SparseTensor / PyTorch offsets form), with optional per-id weights,
 * the combiners SUM / MEAN / SQRTN / MAX, max_norm and TF's safe-lookup semantics.
 *
 * Semantics (w = 1 without weights; e_i = the column of id i, clipped by max_norm):
 *  - max_norm > 0: a column whose l2 norm n exceeds max_norm is scaled by max_norm / n,
 *    before weighting and combining; a zero column stays zero.
 *  - SUM = Σ w·e;  MEAN = Σ w·e / Σ w;  SQRTN = Σ w·e / sqrt(Σ w²).  Within a bag the sum
 *    runs in bag order and a duplicate id counts each time.
 *  - MAX = element-wise max over the bag's kept columns (acc = x > acc ? x : acc, from the
 *    first); no weights and no max_norm (EMB_EINVAL). Quantized rows: each element as
 *    fma(q, scale, bias), the value a one-row SUM bag gives.
 *  - NONE (gather) = one output per id: the batch must have bag_size 1 (nbags == nnz);
 *    a weight, if given, multiplies the column.
 *  - EMB_PRUNE_INVALID drops ids < 0; EMB_PRUNE_NONPOSITIVE_WEIGHTS drops ids whose weight
 *    is <= 0. Without pruning a negative id is an out-of-range error.
 *  - An empty bag (from the start or after pruning) yields column `default_id` (clipped by
 *    max_norm, weight 1) when flags has EMB_USE_DEFAULT_ID, else zeros; never NaN.
 *
 * Concurrency: lookups only read the table: any number may run at once on one table (into
 * different outputs), but not at the same time as a call that writes it (update.h's
 * updates, assign and scatter; store.h's initialize and restore).
 */
#ifndef EMBTABLES_LOOKUP_H
#define EMBTABLES_LOOKUP_H

#include "embtables/batch.h"
#include "embtables/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Looks up @p batch in @p table and writes one f32 vector of featuresize elements per bag
 * (per id for NONE) at `out + b * out_stride`. Elements of a row beyond featuresize are
 * never written.
 * @param pooling NULL means SUM
 * @param out_stride elements between output vectors (>= featuresize)
 * @return 0; EMB_ENULL (table, batch, out, ids, offsets), EMB_EINVAL (negative sizes, bad
 *         combiner, unknown flag bits, bag_size with NONE != 1, NaN max_norm, MAX with
 *         weights or max_norm), EMB_EOFFSETS, EMB_ERANGE (an id
 *         or default_id), EMB_ESTRIDE, EMB_EOVERFLOW. Nothing is written on failure.
 */
EMB_API int emb_lookup(const EmbTable *table, const EmbBatch *batch, const EmbPooling *pooling,
                       float *out, int64_t out_stride);

/**
 * Julia `lookup(A, ids::Vector)`: out[i] = column ids[i], for n int64 ids.
 * @return as emb_lookup() (EMB_EINVAL: n negative)
 */
EMB_API int emb_gather(const EmbTable *table, const int64_t *ids, int64_t n, float *out,
                       int64_t out_stride);

/**
 * Julia `lookup(A, ids::Matrix)`: nbags fixed bags of bag_size int64 ids (bag b's ids
 * contiguous), out[b] = Σ its columns.
 * @return as emb_lookup(); EMB_EINVAL (nbags or bag_size negative), EMB_EOVERFLOW (their
 *         product overflows)
 */
EMB_API int emb_lookup_sum(const EmbTable *table, const int64_t *ids, int64_t nbags,
                           int64_t bag_size, float *out, int64_t out_stride);

/**
 * Checks @p batch (and @p pooling, may be NULL) against @p table without looking anything
 * up: the validation emb_lookup() does first. Useful before a multi-step operation.
 * @return as emb_lookup()
 */
EMB_API int emb_batch_validate(const EmbTable *table, const EmbBatch *batch,
                               const EmbPooling *pooling);

#ifdef __cplusplus
}
#endif
#endif
