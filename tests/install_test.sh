#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The install test: installs the build into a scratch prefix (DESTDIR), checks that no
# installed library has a RUNPATH and no .pc file names an absolute library path, then
# builds the examples out of tree as a user would (cc -std=c11 -pedantic, pkg-config; mpicc
# for the MPI library's) and runs them against the installed library.
# Usage: install_test.sh BUILDDIR SOURCEDIR
set -eu
build=$1
src=$2
for c in meson pkg-config cc readelf; do
    command -v "$c" >/dev/null 2>&1 || { echo "install_test: needs $c (not found)" >&2; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --no-rebuild --destdir "$tmp/root" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; exit 1; }
pcdir=$(dirname "$(find "$tmp/root" -name embtables.pc | head -n 1)")
[ -f "$pcdir/embtables.pc" ] || { echo "install_test: no embtables.pc installed" >&2; exit 1; }
libdir=$(dirname "$pcdir")
bad=0
nlibs=0
for lib in "$libdir"/libembtables*.so*; do
    [ -f "$lib" ] && [ ! -L "$lib" ] || continue
    nlibs=$((nlibs + 1))
    if readelf -d "$lib" | grep -qE 'RUNPATH|RPATH'; then
        echo "install_test: $lib has a RUNPATH / RPATH" >&2
        bad=1
    fi
done
[ "$nlibs" -gt 0 ] || { echo "install_test: no shared library installed in $libdir" >&2; exit 1; }
# (embtables_gpu.pc when CUDA is built: -lcudart, never this machine's CUDA directory)
if grep -nE '(^|[[:space:]])(-L|-Wl,-rpath,)?/[^[:space:]]*(\.so|lib|lib64)([[:space:]]|$)' \
        "$pcdir"/embtables*.pc; then
    echo "install_test: a .pc file names a library or library directory by absolute path" >&2
    bad=1
fi
export PKG_CONFIG_PATH="$pcdir" PKG_CONFIG_SYSROOT_DIR="$tmp/root"
cflags=$(pkg-config --cflags embtables)
libs=$(pkg-config --libs embtables)
# shellcheck disable=SC2086 # pkg-config output is a list of words
cc -std=c11 -pedantic -Wall -Wextra -Werror $cflags "$src/examples/quickstart.c" \
    -o "$tmp/quickstart" $libs -lm || bad=1
# dlrm_train also needs its reader, its BLAS probe and a CBLAS (OpenBLAS when pkg-config
# knows it)
blas=""
if env -u PKG_CONFIG_PATH -u PKG_CONFIG_SYSROOT_DIR pkg-config --exists openblas; then
    blas=$(env -u PKG_CONFIG_PATH -u PKG_CONFIG_SYSROOT_DIR pkg-config --cflags --libs openblas)
fi
if [ -n "$blas" ]; then
    # shellcheck disable=SC2086
    cc -std=c11 -pedantic -Wall -Wextra -Werror $cflags "$src/examples/dlrm_train.c" \
        "$src"/examples/dlrm/*.c \
        "$src/examples/dlrm_blas.c" "$src/examples/dlrm_export.c" "$src/examples/criteo.c" -o "$tmp/dlrm_train" $libs \
        $blas -ldl -lpthread -lm || bad=1
fi
# the MPI library when it was built: dist_quickstart with mpicc and embtables_mpi.pc
mpi=""
if [ -f "$pcdir/embtables_mpi.pc" ] && command -v mpicc >/dev/null 2>&1; then
    mpi=1
    # shellcheck disable=SC2046 # pkg-config output is a list of words
    mpicc -std=c11 -pedantic -Wall -Wextra -Werror $(pkg-config --cflags embtables_mpi) \
        "$src/examples/dist_quickstart.c" -o "$tmp/dist_quickstart" \
        $(pkg-config --libs embtables_mpi) || bad=1
fi
# the README's two ways to run against a prefix the dynamic linker does not know: an
# rpath from pkg-config's libdir (the sysroot, the scratch prefix, prepended by
# pkg-config itself), and the static library with `pkg-config --static`
# (whose private libraries must all be linkable: no -ludev from hwloc's .pc)
# shellcheck disable=SC2086
cc -std=c11 $cflags "$src/examples/quickstart.c" -o "$tmp/quickstart_rpath" $libs \
    "-Wl,-rpath,$(pkg-config --variable=libdir embtables)" -lm || bad=1
static_libs=$(pkg-config --static --libs embtables | sed "s|-lembtables|$libdir/libembtables.a|")
if [ -f "$libdir/libembtables.a" ]; then
    # shellcheck disable=SC2086
    cc -std=c11 $cflags "$src/examples/quickstart.c" -o "$tmp/quickstart_static" \
        $static_libs -lm || { echo "install_test: pkg-config --static: $static_libs" >&2; bad=1; }
fi
[ "$bad" = 0 ] || exit 1
LD_LIBRARY_PATH="$libdir" "$tmp/quickstart" >/dev/null
"$tmp/quickstart_rpath" >/dev/null
[ ! -f "$tmp/quickstart_static" ] || "$tmp/quickstart_static" >/dev/null
# the HTML reference, when doxygen is here to make it
if command -v doxygen >/dev/null 2>&1 &&
        [ -z "$(find "$tmp/root" -path '*/doc/embtables/html/index.html')" ]; then
    echo "install_test: the API reference (share/doc/embtables/html) is not installed" >&2
    exit 1
fi
if [ -n "$mpi" ]; then
    LD_LIBRARY_PATH="$libdir" "$src/tests/run_mpi.sh" 2 "$tmp/dist_quickstart" >/dev/null
fi
if [ -n "$blas" ] && command -v python3 >/dev/null 2>&1; then
    python3 "$src/scripts/criteo_gen.py" --rows 300 --test-rows 200 --max-card 50 \
        "$tmp/train.tsv" "$tmp/test.tsv" >/dev/null
    LD_LIBRARY_PATH="$libdir" "$tmp/dlrm_train" --train "$tmp/train.tsv" --test "$tmp/test.tsv" \
        --batch 32 --dim 4 --bot 8 --top 8 --max-ind-range 100 --threads 1 >/dev/null
fi
echo "install_test: installed, built out of tree with pkg-config and ran"
