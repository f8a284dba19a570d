#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# dlrm_train (C, embtables) and examples/dlrm_torch.py (PyTorch) on the same files, with
# the same model, initial weights, batches and threads; prints AUC, log loss and samples/s
# side by side. Without files, generates 200k training and 40k test rows
# (scripts/criteo_gen.py) and prints the AUC the planted signal allows. --linear adds the
# hashed logistic regression (scripts/criteo_linear.py), the baseline a DLRM must beat.
# Usage: scripts/dlrm_compare.sh [--train F --test F] [--repeat N] [--linear]
#                                [dlrm_train options...]
#   (options in any order; DLRM_TRAIN=PATH runs that dlrm_train instead of building one)
#   e.g. scripts/dlrm_compare.sh --epochs 2 --threads 2
# Runs alternate (ours, torch, ours, torch, ...) --repeat times (default 1); OpenMP waits
# are passive for both (a shared machine; set OMP_WAIT_POLICY to override).
set -eu
case " $* " in *" --help "* | *" -h "*)
    sed -n '3,13s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
cd "$(dirname "$0")/.."
if [ -z "${DLRM_TRAIN:-}" ]; then
    scripts/deps.sh build blas zlib torch
    setup=$(scripts/meson_setup.sh build)
    printf '%s\n' "$setup" | grep -E 'WARNING|BLAS' || true # which BLAS, or why none
    ninja -C build examples/dlrm_train >/dev/null
    DLRM_TRAIN=build/examples/dlrm_train
fi
train="" test="" repeat=1 linear=0
# this script's options anywhere on the line; the rest, in order, go to both programs
left=$#
while [ "$left" -gt 0 ]; do
    case $1 in
    --train | --test | --repeat)
        [ "$left" -ge 2 ] || { echo "dlrm_compare.sh: $1 needs a value" >&2; exit 2; }
        case $1 in --train) train=$2 ;; --test) test=$2 ;; --repeat) repeat=$2 ;; esac
        shift 2
        left=$((left - 2)) ;;
    --linear) linear=1; shift; left=$((left - 1)) ;;
    *) set -- "$@" "$1"; shift; left=$((left - 1)) ;;
    esac
done
if [ -z "$train" ]; then
    dir=build/criteo-gen-200k
    mkdir -p "$dir"
    train=$dir/train.tsv test=$dir/test.tsv
    if [ ! -s "$dir/summary.txt" ]; then
        python3 scripts/criteo_gen.py --rows 200000 --test-rows 40000 "$train" "$test" >"$dir/summary.txt"
    fi
    echo "generated data (bayes_auc: what the planted signal allows):"
    sed 's/^/  /' "$dir/summary.txt"
fi
[ -n "$test" ] || { echo "--train needs --test" >&2; exit 2; }
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
i=1
while [ "$i" -le "$repeat" ]; do
    "$DLRM_TRAIN" --train "$train" --test "$test" "$@" >"$out/ours.$i"
    /usr/bin/python3 examples/dlrm_torch.py --train "$train" --test "$test" "$@" >"$out/torch.$i"
    i=$((i + 1))
done
field() { tail -n 1 "$1" | sed -n "s/.*$2=\([^ ]*\).*/\1/p"; }
for f in "$out"/ours.* "$out"/torch.*; do # a run that printed no result line is an error
    [ -n "$(field "$f" samples_per_s)" ] || {
        echo "dlrm_compare.sh: $(basename "$f" | sed 's/ours/dlrm_train/; s/torch/dlrm_torch.py/') printed no result; its output:" >&2
        cat "$f" >&2; exit 1; }
done
head -n 1 "$out/ours.1" "$out/torch.1" | grep -v '^==> ' | grep . # models, threads, BLAS
printf "%-10s %-4s %10s %10s %14s\n" program run auc logloss samples/s
for who in ours torch; do
    i=1
    while [ "$i" -le "$repeat" ]; do
        f=$out/$who.$i
        printf "%-10s %-4s %10s %10s %14s\n" "$([ $who = ours ] && echo embtables || echo pytorch)" \
            "$i" "$(field "$f" auc)" "$(field "$f" logloss)" "$(field "$f" samples_per_s)"
        i=$((i + 1))
    done
done
if [ "$linear" = 1 ]; then
    /usr/bin/python3 scripts/criteo_linear.py "$train" "$test" >"$out/linear"
    printf "%-10s %-4s %10s %10s %14s\n" linear 1 "$(field "$out/linear" auc)" \
        "$(field "$out/linear" logloss)" -
fi
median() { # median samples/s of one program's runs
    for f in "$out/$1".*; do field "$f" samples_per_s; done | sort -g |
        awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
o=$(median ours) t=$(median torch)
awk -v o="$o" -v t="$t" 'BEGIN { printf "median samples/s: embtables %.0f, pytorch %.0f: %.2fx\n", o, t, o / t }'
