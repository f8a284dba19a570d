/* SPDX-License-Identifier: BSD-2-Clause */
/**
 * @file partition.h
 * Partitioned tables: one logical table of R rows split over P shard tables, as
 * TensorFlow's `embedding_lookup(params=[shard_0, ..., shard_{P-1}], partition_strategy)`
 * and a PartitionedVariable do it, and the partitioners that choose P.
 *
 * A partitioned table sits behind the same column-pointer interface as every other table:
 * column `id` of the partitioned table is row `row` of shard `shard`, the context is passed
 * through to the shard, and every lookup, strategy and update works on it unchanged.
 *
 * With q = R / P and r = R % P, both strategies give shard i exactly `q + (i < r ? 1 : 0)`
 * rows (TF: "each of the first (max_id + 1) % len(params) partitions will be assigned one
 * more id"); they differ in which ids a shard holds:
 *  - EMB_PARTITION_MOD: shard = id % P, row = id / P.
 *    13 ids over 5 shards: [[0,5,10],[1,6,11],[2,7,12],[3,8],[4,9]].
 *  - EMB_PARTITION_DIV: contiguous runs; the first r shards hold q + 1 ids.
 *    13 ids over 5 shards: [[0,1,2],[3,4,5],[6,7,8],[9,10],[11,12]].
 * Shards whose sizes do not follow this rule are refused (TF silently returns other rows).
 *
 * Concurrency: a partitioned table and its shards are one table: a write through either
 * needs both to itself. The emb_partition_* helpers are pure functions.
 */
#ifndef EMBTABLES_PARTITION_H
#define EMBTABLES_PARTITION_H

#include "embtables/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Partition flags: exactly one of MOD / DIV, optionally OWN_SHARDS. */
enum {
    EMB_PARTITION_MOD = 1 << 0,        /**< shard = id % P, row = id / P (TF's default) */
    EMB_PARTITION_DIV = 1 << 1,        /**< contiguous runs of ids per shard */
    EMB_PARTITION_OWN_SHARDS = 1 << 2, /**< the partitioned table takes ownership of the
                                            shards and destroys them with itself */
};

/**
 * Creates a partitioned table over @p nshards shard tables.
 *
 * Ownership: by default the partitioned table *borrows* the shards: the caller keeps them
 * alive until the partitioned table is destroyed and destroys them afterwards. With
 * EMB_PARTITION_OWN_SHARDS the partitioned table owns them on success (emb_table_destroy()
 * destroys them); on failure the caller keeps them either way. The array @p shards itself
 * is copied. A shard may be of any table type (simple, custom, partitioned).
 *
 * The table has R = Σ shard rows columns, the shards' feature size and dtype, the name of
 * `opts->name` and is static when `opts->static_size` is set; it checks every write for
 * finite values (EMB_TABLE_CHECK_FINITE) when `opts->flags` or any shard asks for it, so
 * that no write through it puts a NaN in a shard that checks (other options are ignored).
 *
 * Dynamic shards (dynamic.h; all or none, EMB_PARTITION_MOD only): id goes to shard
 * id mod nshards, which keeps it under the id itself (so a row's initial values, and every
 * lookup and update, are those of one dynamic table: bit for bit when the shards have the
 * options of that table and their admission sketches do not collide where its would not).
 * The table has INT64_MAX columns; every update counts a step in every shard;
 * emb_table_dynamic_evict / _contains / _stats / _step take the partitioned table, and
 * export / import and emb_table_read & co. work on the shards (emb_table_shard), not on
 * it (EMB_EINVAL / EMB_ENOTSUP). The optimizer keeps each shard's state beside its rows.
 * A checkpoint saves it as one dynamic table (with each shard's admission counts) that
 * restores into any shard count or one dynamic table (store.h).
 *
 * @param out     receives the table; untouched on failure
 * @param shards  @p nshards distinct, non-NULL tables of one feature size and dtype, whose
 *                row counts follow the size rule above
 * @param flags   EMB_PARTITION_MOD or EMB_PARTITION_DIV, | EMB_PARTITION_OWN_SHARDS
 * @return 0; EMB_ENULL (out, shards, a NULL shard: the message names it); EMB_EINVAL
 *         (nshards < 1, bad flags, a shard given twice, dynamic and other shards mixed,
 *         dynamic shards under EMB_PARTITION_DIV); EMB_ESHAPE (a shard's feature
 *         size or row count does not fit; static_size); EMB_EDTYPE (a shard's dtype
 *         differs); EMB_EOVERFLOW; EMB_ENOMEM
 */
EMB_API int emb_table_partitioned(EmbTable **out, EmbTable *const *shards, int32_t nshards,
                                  unsigned flags, const EmbTableOptions *opts);

/**
 * Creates @p nshards owned, zero-filled shards of a table of @p nrows rows (rows per
 * shard by the size rule) and a partitioned table that owns them. Any nshards >= 1, as in
 * TF: with more shards than rows the last nshards - nrows shards are empty. The memory
 * needed (the rows, and a header per shard, empty ones too) is checked against the
 * machine's before anything is allocated, so an absurd shard count fails at once. Shard i
 * is created with emb_table_create() and @p opts (placement, alignment, static size),
 * named "<name>/part_<i>" as TF names them.
 * @param flags EMB_PARTITION_MOD or EMB_PARTITION_DIV (OWN_SHARDS is implied)
 * @return 0; EMB_ENULL; EMB_EINVAL (nrows < 0, nshards < 1, featuresize < 1, bad flags,
 *         column_align); EMB_EDTYPE; EMB_ESHAPE; EMB_EOVERFLOW; EMB_ENOMEM (also: more than
 *         the machine's memory, the message giving the bytes needed). Nothing is left
 *         allocated on failure.
 */
EMB_API int emb_table_partitioned_create(EmbTable **out, int64_t nrows, int32_t featuresize,
                                         EmbDtype dtype, int32_t nshards, unsigned flags,
                                         const EmbTableOptions *opts);

/** Number of shards of a partitioned table; 0 for NULL or another table type. */
EMB_API int32_t emb_table_nshards(const EmbTable *t);

/**
 * Shard @p i of a partitioned table (borrowed: owned as the table was created), or NULL
 * when @p t is not partitioned or @p i is outside [0, nshards).
 */
EMB_API EmbTable *emb_table_shard(const EmbTable *t, int32_t i);

/** EMB_PARTITION_MOD or EMB_PARTITION_DIV of a partitioned table; 0 otherwise. */
EMB_API unsigned emb_table_partition_mode(const EmbTable *t);

/**
 * Rows of shard @p shard when @p nrows rows are split over @p nshards: >= 0 (an empty
 * shard gives 0), or EMB_EINVAL (negative) when nrows < 0, nshards < 1 or shard is not in
 * [0, nshards).
 */
EMB_API int64_t emb_partition_shard_rows(int64_t nrows, int32_t nshards, int32_t shard);

/**
 * Where id @p id of a table of @p nrows rows split over @p nshards lives.
 * @param flags EMB_PARTITION_MOD or EMB_PARTITION_DIV
 * @return 0; EMB_ENULL (shard, row); EMB_EINVAL (nrows < 0, nshards < 1, bad flags);
 *         EMB_ERANGE (id outside [0, nrows))
 */
EMB_API int emb_partition_locate(int64_t nrows, int32_t nshards, unsigned flags, int64_t id,
                                 int32_t *shard, int64_t *row);

/**
 * TF `fixed_size_partitioner(num_shards)`: P = min(num_shards, nrows), at least 1 (a
 * table of 0 rows gets one empty shard).
 * @return 0; EMB_ENULL; EMB_EINVAL (nrows < 0, num_shards < 1)
 */
EMB_API int emb_partition_fixed_size(int64_t nrows, int32_t num_shards, int32_t *nshards);

/**
 * TF `variable_axis_size_partitioner(max_shard_bytes, max_shards)` along the rows: a row
 * takes `featuresize * sizeof(dtype)` bytes, a shard holds
 * `max(1, floor(max_shard_bytes / row_bytes))` rows, P = ceil(nrows / that), capped by
 * @p max_shards when it is > 0, at least 1. Under the size rule every shard then fits in
 * @p max_shard_bytes unless a single row is larger or the cap bites.
 * @return 0; EMB_ENULL; EMB_EINVAL (nrows < 0, featuresize < 1, max_shard_bytes < 1,
 *         max_shards < 0); EMB_EDTYPE; EMB_EOVERFLOW (P does not fit in int32)
 */
EMB_API int emb_partition_max_shard_bytes(int64_t nrows, int32_t featuresize, EmbDtype dtype,
                                          int64_t max_shard_bytes, int32_t max_shards,
                                          int32_t *nshards);

/**
 * TF `min_max_variable_partitioner(max_partitions, min_slice_size)` along the rows: as
 * many shards as give each at least @p min_slice_bytes of the table's
 * `nrows * featuresize * sizeof(dtype)` bytes, P = ceil(total / min_slice_bytes), capped
 * by @p max_partitions and by @p nrows, at least 1.
 * @return 0; EMB_ENULL; EMB_EINVAL (nrows < 0, featuresize < 1, min_slice_bytes < 1,
 *         max_partitions < 1); EMB_EDTYPE
 */
EMB_API int emb_partition_min_slice_bytes(int64_t nrows, int32_t featuresize, EmbDtype dtype,
                                          int64_t min_slice_bytes, int32_t max_partitions,
                                          int32_t *nshards);

#ifdef __cplusplus
}
#endif
#endif
