#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Weak scaling of the MPI ensemble on this machine: dist-bench on 1..MAX ranks (the same
# per-rank batch, the same tables), REPEAT interleaved rounds, and per rank count the
# median step time over the rounds with its min..max, and the efficiency T(1) / T(P).
# Usage: perf/dist_scaling.sh [BUILD=build] [MAX=4] [REPEAT=3] [dist-bench options ...]
# (not --compare-groups: its second ensemble's RESULT lines would mix with the first's)
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}; max=${2:-4}; rep=${3:-3}
if [ $# -ge 3 ]; then shift 3; else shift $#; fi
out=$(mktemp)
i=0
while [ $i -lt "$rep" ]; do
    p=1
    while [ $p -le "$max" ]; do
        tests/run_mpi.sh $p "$build/perf/dist-bench" "$@" | grep '^RESULT ' >> "$out"
        p=$((p + 1))
    done
    i=$((i + 1))
done
awk '
function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j] < a[j-1]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t } return a[int((n + 1) / 2)] }
{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
  p = v["ranks"]; n[p]++; s[p, n[p]] = v["step_ms"]; q[p, n[p]] = v["step_p10_ms"]; po[p, n[p]] = v["pool_ms"]; x[p, n[p]] = v["exchange_ms"]
  b[p, n[p]] = v["backward_ms"]; u[p, n[p]] = v["update_ms"]; rb[p] = v["rows_bytes"] + v["ids_bytes"] + v["grad_bytes"] }
END {
  printf "%5s %10s %17s %8s %9s %11s %11s %9s %14s %10s %12s\n", "ranks", "step ms", "(min..max)", "p10 ms", "pool ms", "exchange ms", "backward ms", "update ms", "bytes/step", "weak eff", "eff (p10)"
  for (p = 1; p in n; p++) {
    lo = 1e30; hi = 0; for (k = 1; k <= n[p]; k++) { t[k] = s[p, k]; if (t[k] < lo) lo = t[k]; if (t[k] > hi) hi = t[k] }
    m = med(t, n[p]); if (p == 1) m1 = m
    for (k = 1; k <= n[p]; k++) t[k] = q[p, k]; mq = med(t, n[p]); if (p == 1) q1 = mq
    for (k = 1; k <= n[p]; k++) t[k] = po[p, k]; mp = med(t, n[p])
    for (k = 1; k <= n[p]; k++) t[k] = x[p, k]; mx = med(t, n[p])
    for (k = 1; k <= n[p]; k++) t[k] = b[p, k]; mb = med(t, n[p])
    for (k = 1; k <= n[p]; k++) t[k] = u[p, k]; mu = med(t, n[p])
    printf "%5d %10.2f %8.2f..%-8.2f %8.2f %9.2f %11.2f %11.2f %9.2f %14d %9.0f%% %11.0f%%\n", p, m, lo, hi, mq, mp, mx, mb, mu, rb[p], 100 * m1 / m, 100 * q1 / mq
  }
}' "$out"
rm -f "$out"
