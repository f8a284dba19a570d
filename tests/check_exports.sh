#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The shared library exports only emb_* symbols (everything else is hidden).
lib="$1"
bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | grep -v '^emb_' | grep -v '^_' )
if [ -n "$bad" ]; then
    echo "non-emb_ exports in $lib:"; echo "$bad"; exit 1
fi
n=$(nm -D --defined-only "$lib" | grep -c ' emb_')
echo "$n emb_ exports, nothing else"
[ "$n" -gt 0 ]
