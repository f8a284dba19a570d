#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Prints the version (or, with --soversion, the soname version) from include/embtables/version.h,
# the single place where the version lives.
h="$(dirname "$0")/../include/embtables/version.h"
get() { sed -n "s/^#define EMB_VERSION_$1 \([0-9]*\).*/\1/p" "$h"; }
if [ "$1" = "--soversion" ]; then get SO; else echo "$(get MAJOR).$(get MINOR).$(get PATCH)"; fi
