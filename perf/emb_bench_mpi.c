/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_mpi.c — `emb-bench --mpi [dist-bench options]`: the MPI ensemble's benchmark
 * (perf/dist_bench.c, its own program because it links MPI, which emb-bench does not).
 * Under mpirun every rank's emb-bench replaces itself with the dist-bench installed or
 * built beside it, before anything else runs, so the ranks start MPI in dist-bench.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "emb_bench.h"

int bench_exec_mpi(int argc, char **argv)
{
    char path[4096];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 16);
    if (n > 0 && path[0] == '/') {
        path[n] = '\0';
        strcpy(strrchr(path, '/') + 1, "dist-bench");
        argv[1] = path; /* dist-bench's argv[0]; its options follow */
        execv(path, argv + 1);
    }
    argv[1] = "dist-bench"; /* not beside us: on PATH */
    execvp("dist-bench", argv + 1);
    fprintf(stderr, "emb-bench --mpi: cannot run dist-bench (%s): embtables was built "
            "without MPI, or dist-bench is neither beside emb-bench nor on PATH\n",
            strerror(errno));
    (void)argc;
    return 2;
}
