#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The main job: installs what is missing, builds (release) in build/ and runs emb-bench on
# its built-in DLRM-shaped default (26 Criteo-like tables in ~4 GiB, D = 64, batch 2048,
# one-hot and bags of 20, Zipf ids, every strategy, forward and the SGD training step).
# Extra arguments go to emb-bench, e.g.:
#   scripts/bench.sh --peer torch --plot bench.png     # PyTorch side by side, and a plot
# (--peer torch needs PyTorch, --plot gnuplot: installed with apt-get where there is one.)
# Criterion is not needed: the benchmark builds without the test suites.
set -e
cd "$(dirname "$0")/.."
extra=""
case " $* " in *" --peer"*) extra="$extra torch" ;; esac
case " $* " in *" --plot"*) extra="$extra gnuplot" ;; esac
# shellcheck disable=SC2086 # a list of needs
scripts/deps.sh build hwloc jansson xxhash $extra
if [ -d build ]; then meson setup --reconfigure build >/dev/null; else meson setup build >/dev/null; fi
ninja -C build
exec ./build/perf/emb-bench "$@"
