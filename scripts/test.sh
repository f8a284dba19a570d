#!/bin/sh
# The test command: installs what is missing, builds (release) in build/, runs every test.
# Usage: scripts/test.sh [builddir] [extra meson setup options ...]
set -e
cd "$(dirname "$0")/.."
scripts/deps.sh
dir=${1:-build}
[ $# -gt 0 ] && shift
if [ -d "$dir" ]; then meson setup --reconfigure "$dir" "$@" >/dev/null; else meson setup "$dir" "$@" >/dev/null; fi
ninja -C "$dir"
meson test -C "$dir" --print-errorlogs
