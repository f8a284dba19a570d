/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * partition_impl.h — inside tables/ only: a partitioned table's private state, shared by
 * partition.c (the table over dense shards, and the build), partition_dyn.c (the contract of
 * a table partitioned over dynamic shards) and partitioned.c (emb_table_partitioned(), the
 * one file that names both).
 */
#ifndef EMB_PARTITION_IMPL_H
#define EMB_PARTITION_IMPL_H

#include "tables/table_impl.h"

typedef struct Partition {
    unsigned mode;    /* EMB_PARTITION_MOD or EMB_PARTITION_DIV */
    bool own;         /* destroy the shards with the table */
    bool dynamic;     /* dynamic shards (or their state views): mod, each keyed by the id */
    int32_t nshards;
    int64_t q, r;     /* rows per shard, shards with one more */
    int64_t split;    /* r * (q + 1): the first id of the shards holding q rows */
    EmbTable *shards[];
} Partition;

EMB_INLINE const Partition *emb__partition(const EmbTable *t)
{
    return (const Partition *)t->impl;
}

/* The shard of @id of a table partitioned over dynamic shards (mod; ids kept as they are). */
EMB_INLINE EmbTable *emb__partition_home(const EmbTable *t, int64_t id)
{
    const Partition *p = emb__partition(t);
    return p->shards[id % p->nshards];
}

/* The entries every partitioned kind shares, the operations of a table partitioned over
   dense shards (partition.c), and those over dynamic shards (partition_dyn.c). */
int32_t emb__partition_nshards(const EmbTable *t);
EmbTable *emb__partition_shard(const EmbTable *t, int32_t i);
void emb__partition_destroy(EmbTable *t);
extern const EmbTableOps emb__partition_mod_ops, emb__partition_div_ops;
extern const EmbTableOps emb__partition_dyn_ops;

/* emb_table_partitioned()'s checks of @shards and @flags (nothing allocated), the total rows
   into *nrows (INT64_MAX over dynamic shards). */
int emb__partition_check(EmbTable *const *shards, int32_t nshards, unsigned flags,
                         const EmbTableOptions *opts, int64_t *nrows);
/* A partitioned table of @ops over @shards, checked (partition.c), into *out. */
int emb__partition_build(EmbTable **out, EmbTable *const *shards, int32_t nshards,
                         unsigned flags, const EmbTableOptions *opts, int64_t nrows,
                         const EmbTableOps *ops);

#endif
