#!/bin/sh
# The main job: installs what is missing, builds (release) and runs the quickstart.
# Usage: scripts/bench.sh
set -e
cd "$(dirname "$0")/.."
scripts/deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build
./build/examples/quickstart
