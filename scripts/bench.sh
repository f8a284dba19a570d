#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The main job: installs what is missing, builds (release) in build/ and runs emb-bench on
# its built-in DLRM-shaped default (26 Criteo-like tables in ~4 GiB, D = 64, batch 2048,
# one-hot and bags of 20, Zipf ids, every strategy, forward and the SGD training step).
# Writes the table to stdout, every row to build/bench.csv and the plot (GB/s against
# threads, gnuplot) beside it, build/bench.png; --csv FILE moves both (FILE's .png).
# OpenMP's idle threads sleep (OMP_WAIT_POLICY=passive) unless you set a policy: on a
# shared machine a spinning idle team takes a core from the next row.
# Extra arguments go to emb-bench, e.g.:
#   scripts/bench.sh --peer torch      # PyTorch side by side (installed where apt-get is)
# Criterion is not needed: the benchmark builds without the test suites.
set -e
cd "$(dirname "$0")/.."
extra=""
case " $* " in *" --peer"*) extra="$extra torch" ;; esac
# shellcheck disable=SC2086 # a list of needs
scripts/deps.sh build hwloc jansson xxhash gnuplot $extra
scripts/meson_setup.sh build
ninja -C build
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
case " $* " in *" --mpi "* | *" --sweep"* | *" --help "* | *" -h "*) exec ./build/perf/emb-bench "$@" ;; esac
csv=build/bench.csv plot=""
prev=""
for a in "$@"; do # the user's --csv / --plot, if any (--csv F or --csv=F)
    case $prev in --csv) csv=$a ;; --plot) plot=$a ;; esac
    case $a in --csv=*) csv=${a#--csv=} ;; --plot=*) plot=${a#--plot=} ;; esac
    prev=$a
done
[ -n "$plot" ] || plot=${csv%.csv}.png
case " $* " in *" --csv"*) ;; *) set -- "$@" --csv "$csv" ;; esac
case " $* " in *" --plot"*) ;; *) set -- "$@" --plot "$plot" ;; esac
./build/perf/emb-bench "$@"
