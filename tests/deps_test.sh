#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# scripts/deps.sh checks for the commands and libraries a script needs, not for Debian
# package names, and where apt-get is absent (meson and ninja from pip) it says what is
# missing and how to get it. Run here on a PATH of stub commands: no apt-get, no dpkg.
# Usage: deps_test.sh SOURCEDIR
set -u
deps=$1/scripts/deps.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/empty" "$tmp/stubs"
fail() { echo "deps_test: $*" >&2; [ -f "$tmp/out" ] && sed 's/^/  | /' "$tmp/out" >&2; exit 1; }

# nothing installed, no apt-get: fails and names each missing command with a way to get it
PATH="$tmp/empty" /bin/sh "$deps" tests doxygen >"$tmp/out" 2>&1 && fail "succeeded with nothing on PATH"
for want in "missing:" "pip install meson" "pip install ninja" "a C11 compiler" "pkg-config" \
            "Criterion" "doxygen"; do
    grep -qF "$want" "$tmp/out" || fail "no mention of '$want'"
done
grep -q "installing" "$tmp/out" && fail "tried to install without apt-get"

# the commands present (stubs; pkg-config finds every library): nothing missing, silent
for c in meson ninja cc doxygen; do
    printf '#!/bin/sh\nexit 0\n' >"$tmp/stubs/$c"
done
printf '#!/bin/sh\nexit 0\n' >"$tmp/stubs/pkg-config"
chmod +x "$tmp/stubs/"*
PATH="$tmp/stubs" /bin/sh "$deps" build tests jansson xxhash doxygen >"$tmp/out" 2>&1 ||
    fail "failed with every command present"
[ -s "$tmp/out" ] && fail "printed something with every command present"

# pkg-config finds nothing: the libraries are missing (named), an optional one only reported
printf '#!/bin/sh\nexit 1\n' >"$tmp/stubs/pkg-config"
PATH="$tmp/stubs" /bin/sh "$deps" build hwloc >"$tmp/out" 2>&1 || fail "a missing optional hwloc failed"
grep -q "optional, not found.*" "$tmp/out" && grep -q "hwloc" "$tmp/out" ||
    fail "a missing optional hwloc is not reported"
PATH="$tmp/stubs" /bin/sh "$deps" build jansson >"$tmp/out" 2>&1 && fail "a missing jansson passed"
grep -q "jansson" "$tmp/out" || fail "a missing jansson is not named"
echo "deps_test: commands checked, misses named with their hints, no apt-get needed"
