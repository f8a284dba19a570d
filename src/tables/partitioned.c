/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * partitioned.c — emb_table_partitioned(): the shards checked (partition.c), then the
 * contract chosen by their kind — dense shards by mod or div (partition.c), dynamic ones
 * (partition_dyn.c) — and the table built. The one file above both contracts.
 */
#include "embtables/partition.h"
#include "tables/partition_impl.h"

int emb_table_partitioned(EmbTable **out, EmbTable *const *shards, int32_t nshards,
                          unsigned flags, const EmbTableOptions *opts)
{
    EMB_CHECK_NULL(out);
    int64_t nrows = 0;
    const int r = emb__partition_check(shards, nshards, flags, opts, &nrows);
    if (r)
        return r;
    const EmbTableOps *ops = emb__table_rows_appear(shards[0]) ? &emb__partition_dyn_ops
                           : flags & EMB_PARTITION_MOD         ? &emb__partition_mod_ops
                                                               : &emb__partition_div_ops;
    return emb__partition_build(out, shards, nshards, flags, opts, nrows, ops);
}
