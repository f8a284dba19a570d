/* SPDX-License-Identifier: BSD-2-Clause */
/* emb_bench_tier_model.h — emb-bench tier's ideal cache and step model (emb_bench_tier_model.c). */
#ifndef EMB_BENCH_TIER_MODEL_H
#define EMB_BENCH_TIER_MODEL_H

#include <stdint.h>

/* One run's figures, a step's means. */
typedef struct BenchTierModel {
    double distinct, reads, writes;  /* distinct ids, rows read, rows written back */
    double ideal_run, ideal_dist;    /* the ideal caches' misses */
    double moved;                    /* records compaction rewrote */
    double read_s, write_s;          /* a record's cached pread, its share of a batched log
                                        append (bench_tier_append_cost), seconds */
    double bookkeeping_ms, mem_ms, step_ms;
} BenchTierModel;

/* A map of the @rows rows (1: hot): the @c most frequent ranks of the Zipf source whose
   scatter offset is @shift (BenchIdGen::shift). NULL: no memory. */
uint8_t *bench_tier_hot_ranks(int64_t rows, int64_t c, uint64_t shift);
/* A map of the @c rows most frequent in @ids[0, @n) (ties: the lower rows). NULL: no memory. */
uint8_t *bench_tier_hot_run(const int64_t *ids, int64_t n, int64_t rows, int64_t c);
/* The misses a step of the static cache @hot over @nsteps batches of @nnz ids: each batch's
   distinct ids not in it; @distinct (may be NULL): the distinct ids a step. */
double bench_tier_ideal_misses(const int64_t *ids, int64_t nsteps, int64_t nnz, int64_t rows,
                               const uint8_t *hot, double *distinct);
/* A record's share, in seconds, of appending batches of @batch records of @rec bytes (one
   pwrite each, pages cached, no sync) to a scratch file in @dir, cycling over 64 MiB as the
   log's recycled segments do: what a write-back costs the engine. 0 when it cannot. */
double bench_tier_append_cost(const char *dir, int64_t rec, int64_t batch);
/* Prints @m's line: the figures, the model 1 + (bookkeeping + reads x read cost +
   (write-backs + moves) x append cost) / W and the measured step beside it. */
void bench_tier_model_print(const BenchTierModel *m);

#endif
