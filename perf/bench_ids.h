/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_ids.h — the one generator of ids of the benchmarks (emb-bench and its
 * subcommands, dist-bench, gpu_bench; `emb-bench ids` writes its ids for the examples'
 * data generator).
 *
 * Three sources, each deterministic from a seed:
 *   uniform:  every row with probability 1 / rows (splitmix64 modulo rows).
 *   zipf:S:   rank k in 1..n with probability k^-S / H(n, S), S > 0, drawn EXACTLY by
 *             rejection-inversion (W. Hörmann, G. Derflinger, "Rejection-inversion to
 *             generate variates from monotone discrete distributions", ACM TOMACS 6(3),
 *             1996): a continuous inversion of the hat h(x) = x^-S, accepted or rejected
 *             per draw, so the draws follow the discrete pmf itself (no table, no
 *             truncated sum); about 1.1 uniforms per id. Rank k is then scattered over the
 *             table as row ((k - 1) * (2^31 - 1) + shift) mod rows, a permutation for
 *             rows < 2^31 - 1, so hot rows are not neighbours.
 *   trace:    ids read from a file per table (int64 little-endian binary, or decimal
 *             text one id a line when the name ends in ".txt"), taken in order and
 *             wrapping around at the end; every id is checked against the table's rows
 *             when the file is loaded.
 */
#ifndef BENCH_IDS_H
#define BENCH_IDS_H

#include <stddef.h>
#include <stdint.h>

typedef enum BenchIdKind { BENCH_IDS_UNIFORM = 0, BENCH_IDS_ZIPF = 1, BENCH_IDS_TRACE = 2 } BenchIdKind;

/* Zipf(s) over ranks 1..n: rejection-inversion's constants. */
typedef struct BenchZipf {
    double s, hx1, hn, sq;
    int64_t n;
} BenchZipf;

void bench_zipf_init(BenchZipf *z, int64_t n, double s);
/* A rank in [0, n): 0 is the most frequent. */
int64_t bench_zipf_rank(const BenchZipf *z, uint64_t *state);

/* splitmix64's next value of @state. */
uint64_t bench_ids_splitmix(uint64_t *state);

/* One table's source of row indices. */
typedef struct BenchIdGen {
    BenchIdKind kind;
    int64_t rows;
    BenchZipf zipf;
    uint64_t shift;       /* zipf: the rank permutation's offset */
    const int64_t *trace; /* trace: the file's ids (borrowed) */
    int64_t ntrace;
} BenchIdGen;

/* A source of rows in [0, rows): uniform or zipf (@s its exponent), scattered by @seed.
   A trace source is made by bench_idgen_trace. */
void bench_idgen_init(BenchIdGen *g, BenchIdKind kind, int64_t rows, double s, uint64_t seed);
void bench_idgen_trace(BenchIdGen *g, int64_t rows, const int64_t *ids, int64_t n);
/* The next row: from @state (uniform, zipf), or the trace's id at position @pos modulo
   its length (trace). */
int64_t bench_idgen_row(const BenchIdGen *g, uint64_t *state, int64_t pos);

/*
 * Loads the ids of a trace file (binary int64 little-endian, or text when @path ends in
 * ".txt") into a new array (*ids, *n, the caller frees it), each checked to lie in
 * [0, rows). 0, or -1 with a message naming the file (and the line or id at fault) in
 * @err.
 */
int bench_trace_load(const char *path, int64_t rows, int64_t **ids, int64_t *n, char *err,
                     size_t errlen);

/* The name of the source, e.g. "zipf(s=1.05, rejection-inversion)", into @buf. */
const char *bench_ids_describe(BenchIdKind kind, double s, const char *trace, char *buf,
                               size_t n);

#endif
