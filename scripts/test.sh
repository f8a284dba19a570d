#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The test command: installs what is missing, builds (release) in build/, runs every test.
# Usage: scripts/test.sh [builddir] [extra meson setup options ...]
set -e
case " $* " in *" --help "* | *" -h "*)
    sed -n '3,4s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
cd "$(dirname "$0")/.."
scripts/deps.sh tests jansson xxhash hwloc liburing cxx python mpi blas zlib
dir=${1:-build}
[ $# -gt 0 ] && shift
scripts/meson_setup.sh "$dir" "$@"
ninja -C "$dir"
# shellcheck disable=SC2086 # MESON_TEST_ARGS: extra words for meson test (e.g. --setup tsan)
meson test -C "$dir" --print-errorlogs ${MESON_TEST_ARGS:-}
