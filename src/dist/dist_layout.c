/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist_layout.c — the placement's arithmetic: which placements are valid, which rank holds
 * a row and where, and the names of a table's parts (local tables, checkpoint tensors).
 * Used by creation (dist.c), the planner (dist_plan.c) and the checkpoints
 * (dist_checkpoint.c); calls no other file of the folder.
 */
#include <stdio.h>

#include "dist/dist_impl.h"

int dist_placement_valid(const EmbDistPlacement *p, int32_t nranks)
{
    if (p->kind == EMB_DIST_TABLEWISE)
        return p->rank >= 0 && p->rank < nranks;
    if (p->kind == EMB_DIST_REPLICATED)
        return 1;
    return (p->kind == EMB_DIST_COLUMNWISE ||
            (p->kind == EMB_DIST_ROWWISE &&
             (p->partition == EMB_PARTITION_MOD || p->partition == EMB_PARTITION_DIV))) &&
           (p->nshards == 0 || (p->nshards >= 1 && p->rank >= 0 &&
                                p->rank <= nranks - p->nshards));
}

void dist_locate(const EmbDist *d, const DistTable *t, int64_t id, int32_t *rank,
                 int64_t *column)
{
    if (t->place.kind == EMB_DIST_REPLICATED || t->place.kind == EMB_DIST_COLUMNWISE) {
        /* here when this rank holds (part of) every row, else the first holder */
        *rank = dist_whole_on(t, d->rank) ? d->rank : t->place.rank;
        *column = id;
        return;
    }
    if (t->place.kind == EMB_DIST_TABLEWISE) {
        *rank = t->place.rank;
        *column = id;
        return;
    }
    int32_t shard;
    emb_partition_locate(t->desc.nrows, t->place.nshards, t->place.partition, id, &shard,
                         column);
    *rank = t->place.rank + shard;
}

void dist_part_name(const EmbDist *d, int64_t i, EmbDistKind kind, int32_t rank, char *name)
{
    const char *n = d->t[i].name;
    if (kind == EMB_DIST_ROWWISE)
        snprintf(name, EMB_NAME_MAX + 1, "%lld:%.24s/part_%d", (long long)i, n, (int)rank);
    else
        snprintf(name, EMB_NAME_MAX + 1, "%lld:%.40s", (long long)i, n);
}
