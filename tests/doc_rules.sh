#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The documentation's house rules (../shared/STYLE.md, "Documents and examples"): the
# README at most 200 lines, ARCHITECTURE.md at most 300, and neither they nor the guide
# naming an issue or a work round: history goes to the git log, measurements to dated
# records under docs/bench/. Usage: doc_rules.sh SOURCEDIR
set -u
src=$1
bad=0
lines() { wc -l <"$src/$1"; }
[ "$(lines README.md)" -le 200 ] ||
    { echo "README.md has $(lines README.md) lines (at most 200)"; bad=1; }
[ "$(lines ARCHITECTURE.md)" -le 300 ] ||
    { echo "ARCHITECTURE.md has $(lines ARCHITECTURE.md) lines (at most 300)"; bad=1; }
if grep -Hni 'wave\|issue [0-9]' "$src/README.md" "$src/ARCHITECTURE.md" "$src"/docs/guide/*.md; then
    echo "the lines above name an issue or a wave: say what is, not how it came to be"
    bad=1
fi
[ "$bad" = 0 ] && echo "doc_rules: README, ARCHITECTURE.md and the guide keep the rules"
exit "$bad"
