#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Runs every libFuzzer target of tests/fuzz/ for SECONDS each (default 60) from the seed
# corpus in the tree, in a clang build configured with -Dfuzzing=enabled. A crash, a
# sanitizer report or a broken contract (FUZZ_ASSERT) fails the script; the input that
# found it is left in BUILDDIR/fuzz-artifacts/ (replay: BUILDDIR/tests/fuzz/fuzz_T FILE).
# Usage: scripts/fuzz.sh BUILDDIR [SECONDS]
set -eu
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/fuzz.sh BUILDDIR [SECONDS]}
secs=${2:-60}
ninja -C "$dir" >/dev/null
mkdir -p "$dir/fuzz-artifacts"
for t in lookup update checkpoint criteo dynamic tiered collection quant_checkpoint; do
    work="$dir/fuzz-corpus/$t"
    mkdir -p "$work"
    # a checkpoint in the library's current format, whatever the tree's seeds hold
    case $t in *checkpoint) "$dir/tests/fuzz/fuzz_${t}_seed" "$work" >/dev/null ;; esac
    log="$dir/fuzz-$t.log"
    if ! "$dir/tests/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
            -print_final_stats=1 -artifact_prefix="$dir/fuzz-artifacts/$t-" \
            "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
        tail -n 60 "$log" >&2
        echo "fuzz_$t: FINDING (log $log, input in $dir/fuzz-artifacts/)" >&2
        exit 1
    fi
    echo "fuzz_$t: $(grep -m1 -o 'Done [0-9]* runs in [0-9]* second' "$log"), no finding"
done
