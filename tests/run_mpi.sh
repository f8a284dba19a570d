#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Runs an MPI program on NP ranks of this machine (loopback only), or skips (77) when MPI
# is not installed. Usage: tests/run_mpi.sh NP PROGRAM [ARGS...]
np=$1
shift
command -v mpirun >/dev/null 2>&1 || { echo "mpirun not found: skipped"; exit 77; }
[ -x "$1" ] || { echo "$1 not built (no MPI found at configure time): skipped"; exit 77; }
if mpirun --version 2>&1 | grep -q "Open MPI"; then
    # CI runs as root; ranks on a 2-core machine share cores (oversubscribe); shared
    # memory and self transports only, copies through the sender (no single-copy
    # mechanism, which containers often forbid); ranks sleep instead of spinning in waits.
    export OMPI_MCA_mpi_yield_when_idle=1
    exec mpirun --allow-run-as-root -np "$np" --oversubscribe --bind-to none \
        --mca btl self,vader --mca btl_vader_single_copy_mechanism none "$@"
fi
# MPICH (Hydra): no root check, oversubscribes by default
exec mpirun -np "$np" "$@"
