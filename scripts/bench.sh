#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The main job: installs what is missing, builds emb-bench (release, in build/: that one
# program, not the tree) and runs it on its built-in DLRM-shaped default (26 Criteo-like
# tables in ~4 GiB, D = 64, batch 2048, one-hot and bags of 20, Zipf ids in steady state:
# fresh ids every step, every strategy, forward and the SGD training step).
# Writes the table to stdout and keeps every run: its rows (CSV, with the version, commit,
# machine and command line in its "# " head), the same as JSON and the plot (GB/s against
# threads, gnuplot) under a dated name, build/bench-YYYYmmdd-HHMMSS.{csv,json,png}, or
# as bench.{csv,json,png} in --out DIR (created; an existing run there is refused).
# --csv FILE names the CSV (its .json and .png beside it); --plot / --json name those.
# OpenMP's idle threads sleep (OMP_WAIT_POLICY=passive) unless you set a policy: on a
# shared machine a spinning idle team takes a core from the next row.
# Extra arguments go to emb-bench, e.g.:
#   scripts/bench.sh --peer torch      # PyTorch side by side ($PYTHON, or a python3 with torch)
#   scripts/bench.sh --out runs/today  # the files in runs/today/
#   build/perf/emb-bench compare A.csv B.csv   # two runs row by row
# Criterion is not needed: the benchmark builds without the test suites.
set -e
cd "$(dirname "$0")/.."

usage() {
    echo "usage: scripts/bench.sh [--out DIR] [emb-bench options]"
    sed -n '3,18s/^# \{0,1\}//p' "$0"
}

# --help answers at once, building nothing: emb-bench's options too when it is built
case " $* " in *" --help "* | *" -h "*)
    usage
    echo
    if [ -x build/perf/emb-bench ]; then
        exec ./build/perf/emb-bench --help
    fi
    echo "emb-bench's options: build/perf/emb-bench --help once it is built (scripts/bench.sh"
    echo "builds it on its first run; or: scripts/meson_setup.sh build && ninja -C build"
    echo "perf/emb-bench)"
    exit 0 ;;
esac

# --out DIR: taken here, not passed on
out=""
prev=""
for a in "$@"; do
    [ "$prev" = --out ] && out=$a
    case $a in --out=*) out=${a#--out=} ;; esac
    prev=$a
done
if [ -n "$out" ]; then
    skip=0
    for a in "$@"; do
        shift
        if [ $skip = 1 ]; then
            skip=0
            continue
        fi
        case $a in --out) skip=1; continue ;; --out=*) continue ;; esac
        set -- "$@" "$a"
    done
fi

# --peer torch: the Python that runs the peer must have torch, before anything is built
case " $* " in *" --peer"*)
    if [ -z "$PYTHON" ] && ! python3 -c 'import torch' 2>/dev/null &&
        /usr/bin/python3 -c 'import torch' 2>/dev/null; then
        export PYTHON=/usr/bin/python3
        echo "bench.sh: the peer runs with /usr/bin/python3 (python3 on PATH has no torch)"
    fi
    if ! "${PYTHON:-python3}" -c 'import torch' 2>/dev/null; then
        echo "bench.sh: --peer torch: ${PYTHON:-python3} cannot import torch; install it" \
            "(scripts/deps.sh torch: python3-torch for /usr/bin/python3, or pip install torch)" \
            "or set PYTHON to a Python that has it" >&2
        exit 1
    fi ;;
esac

# shellcheck disable=SC2086 # a list of needs
scripts/deps.sh build hwloc jansson xxhash gnuplot
scripts/meson_setup.sh build
targets=perf/emb-bench
case " $* " in *" --mpi "*) targets="$targets perf/dist-bench" ;; esac
# shellcheck disable=SC2086 # a list of targets
ninja -C build $targets
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
case " $* " in *" --mpi "* | *" --sweep"*) exec ./build/perf/emb-bench "$@" ;; esac

if [ -n "$out" ]; then
    mkdir -p "$out"
    if [ -e "$out/bench.csv" ]; then
        echo "bench.sh: $out/bench.csv exists: a previous run is kept; choose another --out" >&2
        exit 1
    fi
    base=$out/bench
else
    base=build/bench-$(date +%Y%m%d-%H%M%S)
fi
csv=""
prev=""
for a in "$@"; do # the user's --csv (--csv F or --csv=F): its plot beside it
    [ "$prev" = --csv ] && csv=$a
    case $a in --csv=*) csv=${a#--csv=} ;; esac
    prev=$a
done
[ -z "$csv" ] || base=${csv%.csv}
case " $* " in *" --csv"*) ;; *) set -- "$@" --csv "$base.csv" ;; esac
case " $* " in *" --json"*) ;; *) set -- "$@" --json "$base.json" ;; esac
case " $* " in *" --plot"*) ;; *) set -- "$@" --plot "$base.png" ;; esac
./build/perf/emb-bench "$@"
