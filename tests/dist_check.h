/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist_check.h — what the MPI tests (test_dist.c, test_dist_collection.c; run under
 * mpirun: tests/run_mpi.sh) share: this rank, the rank count and the failures counted on
 * it; CHECK, which counts a failure and prints it with the rank and the library's last
 * error; the deterministic table values every rank computes alike; the programs' end.
 */
#ifndef EMB_TESTS_DIST_CHECK_H
#define EMB_TESTS_DIST_CHECK_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <embtables/embtables.h>

static int rank, nranks, failures;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            failures++;                                                                    \
            fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__);                 \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, " [%s]\n", emb_last_error());                                  \
        }                                                                                  \
    } while (0)

static inline uint64_t hash3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t z = a * 0x9e3779b97f4a7c15ull ^ b * 0xbf58476d1ce4e5b9ull ^ c * 0x94d049bb133111ebull;
    z = (z ^ (z >> 31)) * 0xd6e8feb86659fd93ull;
    return z ^ (z >> 29);
}

/* Column j of row id of table t: a value in [-2000/997, 2000/997]. */
static inline float value(int64_t t, int64_t id, int64_t j)
{
    return (float)((int64_t)(hash3(t + 1, id, j) % 4001) - 2000) / 997.0f;
}

/* The end of a test program: @dir removed (by rank 0, when set), the failures of every
   rank summed and said, MPI finalized; the exit status. */
static inline int dist_finish(const char *prog, const char *dir)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && dir && dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0, "cleanup");
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %d ranks: %s (%d failures)\n", prog, nranks, total ? "FAIL" : "ok", total);
    MPI_Finalize();
    return total ? 1 : 0;
}

#endif
