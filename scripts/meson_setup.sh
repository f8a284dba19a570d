#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Configures a build directory (meson setup, or --reconfigure when it exists) and shows
# what matters of meson's output: its warnings and the summary of what this configuration
# builds (features, the BLAS of examples/dlrm_train), not every probe. The whole output is
# in DIR/meson-logs/meson-log.txt; on failure it is printed in full.
# Usage: scripts/meson_setup.sh DIR [meson setup options ...]
set -e
dir=$1
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ -d "$dir" ]; then set -- --reconfigure "$dir" "$@"; else set -- "$dir" "$@"; fi
if ! meson setup "$@" >"$log" 2>&1; then
    cat "$log" >&2
    exit 1
fi
# ninja's log still holds build.ninja's time before this reconfiguration, so that the next
# ninja would configure again, printing all of meson's output: record the new one
[ "$1" = --reconfigure ] && ninja -C "$dir" -t restat build.ninja >/dev/null 2>&1 || true
# the summary starts at the project's name and version, and ends before "Found ninja"
awk '/^(WARNING|DEPRECATION)|: (WARNING|DEPRECATION):/ { print; next }
     /^embtables [0-9]/ { on = 1 }
     /^Found ninja/ { on = 0 }
     on && NF' "$log"
