#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The DLRM example's commands in docs/guide/dlrm.md (the sh block under its title) run as
# written, on small data: in a scratch directory laid out as the source tree (scripts/,
# examples/, build/examples/dlrm_train: links), with build/criteo-gen-200k holding small
# generated files where dlrm_compare.sh looks for its data, and criteo_gen.py's row counts
# made small. Each must exit 0 and print what it promises.
# Usage: test_dlrm_readme.sh DLRM_TRAIN SOURCE_ROOT
set -eu
bin=$1 src=$2
/usr/bin/python3 -c 'import numpy, torch' 2>/dev/null || { echo "skipped: no numpy/torch"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_dlrm_readme.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
ln -s "$src/scripts" "$src/examples" "$tmp/"
mkdir -p "$tmp/build/examples" "$tmp/build/criteo-gen-200k"
ln -s "$(realpath "$bin")" "$tmp/build/examples/dlrm_train"
gen="$tmp/build/criteo-gen-200k"
python3 "$src/scripts/criteo_gen.py" --rows 3000 --test-rows 1000 "$gen/train.tsv" "$gen/test.tsv" >"$gen/summary.txt"
# the block: from the section's first ```sh to its closing ```
awk '/^# The DLRM example/ { on = 1 } on && /^```sh/ { inblock = 1; next }
     inblock && /^```/ { exit } inblock' "$src/docs/guide/dlrm.md" >"$tmp/commands"
[ -s "$tmp/commands" ] || { echo "FAIL: no sh block in docs/guide/dlrm.md"; exit 1; }
cd "$tmp"
n=0
while IFS= read -r line; do
    cmd=$(printf '%s' "$line" | sed 's/ *#.*//; s/--rows [0-9]*/--rows 3000/; s/--test-rows [0-9]*/--test-rows 1000/')
    [ -n "$cmd" ] || continue
    n=$((n + 1))
    echo "\$ $cmd"
    DLRM_TRAIN=$tmp/build/examples/dlrm_train sh -c "$cmd" >"$tmp/out.$n" 2>"$tmp/err.$n" ||
        { echo "FAIL: exit $? from: $cmd"; cat "$tmp/out.$n" "$tmp/err.$n"; exit 1; }
    tail -n 3 "$tmp/out.$n"
    case $cmd in
    *dlrm_train*) grep -q '^test auc=' "$tmp/out.$n" || { echo "FAIL: no test auc line"; exit 1; } ;;
    *dlrm_compare*) grep -q 'median samples/s' "$tmp/out.$n" || { echo "FAIL: no comparison"; exit 1; } ;;
    esac
done <"$tmp/commands"
[ "$n" -ge 3 ] || { echo "FAIL: $n commands in the block"; exit 1; }
echo "ok: the guide's $n DLRM commands"
