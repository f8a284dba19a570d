#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Every source file of the tree (C, C++, CUDA, Python, shell, meson, and any script with a
# shebang) starts with the SPDX licence line: `/* SPDX-License-Identifier: BSD-2-Clause */`
# for C-like files, `# SPDX-License-Identifier: BSD-2-Clause` (after the shebang when there
# is one) for the others. The files are git's tracked files, or without git every file of
# SOURCEDIR outside build directories.
# Usage: spdx_check.sh SOURCEDIR [--fix]    --fix inserts the line where it is missing.
set -eu
cd "$1"
fix=${2:-}
spdx="SPDX-License-Identifier: BSD-2-Clause"
list() {
    if command -v git >/dev/null 2>&1 && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files
    else
        find . -path ./.git -prune -o -path './build*' -prune -o -type f -print | sed 's|^\./||'
    fi
}
bad=0
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
list | {
    while IFS= read -r f; do
        [ -f "$f" ] || continue
        case $f in
        *.c | *.h | *.cu | *.cuh | *.cpp | *.c.in) line="/* $spdx */" ;;
        *.py | *.sh | meson.build | */meson.build | meson_options.txt) line="# $spdx" ;;
        *) head -c 2 "$f" | grep -q '^#!' || continue
           line="# $spdx" ;;
        esac
        first=$(head -n 1 "$f")
        case $first in
        '#!'*) want=2 ;;
        *) want=1 ;;
        esac
        [ "$(sed -n "${want}p" "$f")" = "$line" ] && continue
        if [ "$fix" = --fix ]; then
            { [ "$want" = 2 ] && printf '%s\n' "$first"
              printf '%s\n' "$line"
              tail -n +"$want" "$f"; } >"$tmp"
            cat "$tmp" >"$f" # keeps the file's mode
            echo "spdx: added to $f"
        else
            echo "spdx: $f does not start with '$line'" >&2
            bad=1
        fi
    done
    exit "$bad"
} || { echo "spdx: fix with tests/spdx_check.sh . --fix" >&2; exit 1; }
