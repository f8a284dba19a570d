#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# One training step of the embedding part on emb-bench's Criteo workload, three ways on
# the same tables and ids: C (emb-bench's rows), Python (embtables.torch; emb-bench's
# last column = Python's median over C's) and torch (nn.EmbeddingBag(sparse=True) +
# optim.SGD / Adagrad; the "py-vs-torch" lines). Extra flags go to emb-bench.
# Usage: scripts/bench_python.sh [builddir] [emb-bench flags ...]
set -e
case " $* " in *" --help "* | *" -h "*)
    sed -n '3,7s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
cd "$(dirname "$0")/.."
scripts/deps.sh
dir=${1:-build}
[ $# -gt 0 ] && shift
[ -d "$dir" ] || meson setup "$dir" >/dev/null
ninja -C "$dir" >/dev/null
# the peer runs with the interpreter the package is built for (meson's default)
# idle OpenMP teams sleep (spinning ones take the core of the next row or of torch on a
# loaded machine: emb-bench warns); set OMP_WAIT_POLICY=active to time spinning teams
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
export PYTHON="${PYTHON:-/usr/bin/python3}" EMB_BUILD="$dir" PYTHONPATH="$dir/python${PYTHONPATH:+:$PYTHONPATH}"
exec "$dir/perf/emb-bench" --strategies prealloc-concat --phases train:sgd,train:adagrad \
    --peer torch --peer-script perf/peer_embtables.py "$@"
