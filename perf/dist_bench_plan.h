/* SPDX-License-Identifier: BSD-2-Clause */
/* dist_bench_plan.h — dist-bench's plan side: the ids' distinct counts the planner is given,
   and --show-plan (dist_bench_plan.c). */
#ifndef EMB_DIST_BENCH_PLAN_H
#define EMB_DIST_BENCH_PLAN_H

#include <stdint.h>

#include <embtables/dist.h>

/* Sets each table's lookups and distinct (desc[t].distinct: the distinct ids of the first
   step's global batch over @p P ranks, replayed as dist-bench's ranks draw them: seed 1234 +
   rank, tables in order, @p nnz Zipf(@p zipf) ids each, 0: uniform); 0 or EMB_ENOMEM. */
int dist_bench_describe(EmbDistTableDesc *desc, int ntables, int P, int64_t nnz, double zipf);

/* --show-plan: the planner's placement for 2, 4 and 8 ranks and its model, with the fixed
   plans' (rank 0 prints); @p batch bags per rank. 0 or an error code. */
int dist_bench_show_plan(EmbDistTableDesc *desc, int ntables, int batch, int64_t nnz,
                         double zipf);

#endif
