/* SPDX-License-Identifier: BSD-2-Clause */
/**
 * @file batch.h
 * A batch of ids grouped into bags and the pooling that reduces each bag: the types a
 * lookup (lookup.h), its backward (update.h) and every back end read, with no table in
 * them. Their meaning is lookup.h's.
 */
#ifndef EMBTABLES_BATCH_H
#define EMBTABLES_BATCH_H

#include "embtables/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Integer type of a batch's ids. */
typedef enum EmbIdType {
    EMB_ID_I64 = 0,
    EMB_ID_I32 = 1,
} EmbIdType;

/**
 * A batch of ids for one table, grouped into bags.
 * Either fixed-size bags (`offsets == NULL`, `nnz == nbags * bag_size`, the ids of bag b at
 * [b*bag_size, (b+1)*bag_size)) or ragged bags (`offsets` has nbags+1 entries,
 * offsets[0] = 0, monotone, offsets[nbags] = nnz). Zero-initialise and fill.
 */
typedef struct EmbBatch {
    const void *ids;        /**< nnz ids of type id_type (may be NULL when nnz == 0) */
    EmbIdType id_type;      /**< EMB_ID_I64 (default) or EMB_ID_I32 */
    int64_t nnz;            /**< number of ids */
    int64_t nbags;          /**< number of bags = number of output vectors */
    int64_t bag_size;       /**< fixed bag size when offsets == NULL */
    const int64_t *offsets; /**< CSR bag offsets (nbags + 1) or NULL */
    const float *weights;   /**< nnz per-id weights or NULL (all 1) */
} EmbBatch;


/** Pooling flags. */
enum {
    EMB_PRUNE_INVALID = 1 << 0,             /**< drop ids < 0 */
    EMB_PRUNE_NONPOSITIVE_WEIGHTS = 1 << 1, /**< drop ids whose weight is <= 0 */
    EMB_USE_DEFAULT_ID = 1 << 2,            /**< empty bags yield column default_id */
    EMB_OUT_NONTEMPORAL = 1 << 3,           /**< stream output vectors past the caches */
};

/** The pooling descriptor. Zero-initialised it means plain SUM, empty bags give zeros. */
typedef struct EmbPooling {
    EmbCombiner combiner; /**< combiner */
    float max_norm;       /**< > 0: clip every looked-up column to this l2 norm */
    int64_t default_id;   /**< the column an empty bag yields with EMB_USE_DEFAULT_ID */
    unsigned flags;       /**< EMB_PRUNE_* | EMB_USE_DEFAULT_ID | EMB_OUT_NONTEMPORAL */
} EmbPooling;

/** Initialiser: gather, one output per id. */
#define EMB_POOLING_GATHER ((EmbPooling){EMB_COMBINER_NONE, 0.0f, 0, 0})
/** Initialiser: sum of each bag's columns. */
#define EMB_POOLING_SUM ((EmbPooling){EMB_COMBINER_SUM, 0.0f, 0, 0})
/** Initialiser: weighted mean of each bag's columns. */
#define EMB_POOLING_MEAN ((EmbPooling){EMB_COMBINER_MEAN, 0.0f, 0, 0})
/** Initialiser: sum divided by the l2 norm of the bag's weights. */
#define EMB_POOLING_SQRTN ((EmbPooling){EMB_COMBINER_SQRTN, 0.0f, 0, 0})
/** Initialiser: element-wise maximum of each bag's columns (no weights). */
#define EMB_POOLING_MAX ((EmbPooling){EMB_COMBINER_MAX, 0.0f, 0, 0})

#ifdef __cplusplus
}
#endif

#endif
