#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Checks that what a script needs is here (commands, libraries found by pkg-config, compiler
# features), by what it does, not by package name. Where apt-get exists (Debian, Ubuntu)
# it installs what is missing; elsewhere it says what is missing and how to get it, and
# fails.
# Usage: scripts/deps.sh NEED ...    NEED is one of:
#   build      meson, ninja, a C compiler, pkg-config      tests   the above + Criterion
#   jansson xxhash doxygen torch clang clang-fuzzer clang-openmp
#   optional (the build goes on without them; installed where apt-get is):
#   hwloc  liburing (tiered tables' io_uring)  cxx (the GPU emulation's tests)  python (the Python package: headers, numpy,
#   pytest, torch for /usr/bin/python3)  mpi (the MPI library and its tests)
#   blas (a fast CBLAS for examples/dlrm_train: OpenBLAS or BLIS; netlib's does not count)
#   zlib (examples/dlrm_train's .gz input)
#   gnuplot (the main job's plot)
set -e
missing_debs=""
missing_hints=""
optional_debs=""
optional_hints=""

have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_pc() { have_cmd pkg-config && pkg-config --exists "$1"; }
# Debian's libblis-dev has no blis.pc: its library where the linker looks
have_blis() { ls /usr/lib/*/libblis.so /usr/lib/libblis.so >/dev/null 2>&1; }
# compiles and links a small program with clang and the given flags (stdin: the source)
clang_links() { have_cmd clang && clang -x c - -o /dev/null "$@" >/dev/null 2>&1; }

# need CHECK "DEBIAN-PACKAGES" HINT: records a miss when the check fails
need() {
    if ! eval "$1"; then
        missing_debs="$missing_debs $2"
        missing_hints="$missing_hints
  - $3"
    fi
}
# optional CHECK "DEBIAN-PACKAGES" HINT: installed where apt-get is, else only reported
optional() {
    if ! eval "$1"; then
        optional_debs="$optional_debs $2"
        optional_hints="$optional_hints
  - $3"
    fi
}

for n in "$@"; do
    case $n in
    build | tests)
        need "have_cmd meson" meson "meson (>= 0.63): pip install meson"
        need "have_cmd ninja" ninja-build "ninja: pip install ninja"
        need "have_cmd cc || have_cmd gcc || have_cmd clang" gcc "a C11 compiler (gcc or clang)"
        need "have_cmd pkg-config" pkg-config "pkg-config (or pkgconf) from your package manager"
        [ "$n" = tests ] && need "have_pc criterion" libcriterion-dev \
            "Criterion (the test framework): libcriterion-dev, or https://github.com/Snaipe/Criterion"
        ;;
    hwloc) optional "have_pc hwloc" libhwloc-dev "hwloc (topology, NUMA): libhwloc-dev / hwloc-devel" ;;
    liburing) optional "have_pc liburing" liburing-dev "liburing (io_uring for tiered tables; else pread threads): liburing-dev / liburing-devel" ;;
    cxx) optional "have_cmd c++ || have_cmd g++ || have_cmd clang++" g++ "a C++ compiler (the GPU emulation's tests)" ;;
    python) optional "have_cmd python3-config && have_cmd patchelf && /usr/bin/python3 -c 'import numpy, pytest, torch, mesonpy, build, venv, ensurepip' 2>/dev/null" \
        "python3-dev python3-numpy python3-pytest python3-torch python3-mesonpy python3-build python3-venv patchelf" \
        "the Python package: python3-dev, numpy, pytest and torch for /usr/bin/python3; meson-python, build, venv and patchelf (meson-python asks for it when it builds a wheel) to install it (pip install .)" ;;
    mpi) optional "have_cmd mpicc && have_cmd mpirun" "openmpi-bin libopenmpi-dev" \
        "MPI (library embtables_mpi): Open MPI or MPICH with mpicc and mpirun" ;;
    jansson) need "have_pc jansson" libjansson-dev "jansson (checkpoint headers): libjansson-dev / jansson-devel" ;;
    xxhash) need "have_pc libxxhash" libxxhash-dev "xxHash (checkpoint checksums): libxxhash-dev / xxhash-devel" ;;
    blas) optional "have_pc openblas || have_pc blis || have_blis" libopenblas-dev \
        "a fast CBLAS for examples/dlrm_train (OpenBLAS: libopenblas-dev / openblas-devel; or BLIS)" ;;
    zlib) optional "have_pc zlib" zlib1g-dev "zlib (examples/dlrm_train reads .gz files; without it, plain files only): zlib1g-dev / zlib-devel" ;;
    doxygen) need "have_cmd doxygen" doxygen "doxygen (the API reference)" ;;
    gnuplot) optional "have_cmd gnuplot" gnuplot-nox "gnuplot (emb-bench --plot; the table and CSV need none)" ;;
    torch) need "/usr/bin/python3 -c 'import torch' 2>/dev/null" python3-torch \
        "PyTorch for /usr/bin/python3 (emb-bench --peer torch): python3-torch, or pip install torch" ;;
    clang) need "have_cmd clang" clang "clang (the fuzzing and ThreadSanitizer builds)" ;;
    clang-fuzzer) need "echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' | clang_links -fsanitize=fuzzer,address,undefined" \
        libclang-rt-14-dev "clang's sanitizer and libFuzzer runtimes (libclang-rt-dev / compiler-rt)" ;;
    clang-openmp) need "echo 'int main(void) { return 0; }' | clang_links -fopenmp -fsanitize=thread" \
        libomp-dev "LLVM's OpenMP runtime and its Archer tool, for clang (libomp-dev)" ;;
    *) echo "deps.sh: unknown need '$n'" >&2; exit 2 ;;
    esac
done
[ -z "$missing_debs$optional_debs" ] && exit 0

if have_cmd apt-get && have_cmd dpkg-query; then
    missing_debs="$missing_debs$optional_debs"
    echo "installing:$missing_debs" >&2
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    export DEBIAN_FRONTEND=noninteractive
    # shellcheck disable=SC2086 # a list of package names
    if $SUDO apt-get update -q >/dev/null && \
       $SUDO apt-get install -y -q --no-install-recommends $missing_debs >/dev/null; then
        exit 0
    fi
    echo "deps.sh: apt-get could not install:$missing_debs" >&2
fi
[ -n "$optional_hints" ] && echo "deps.sh: optional, not found (built without):$optional_hints" >&2
[ -z "$missing_hints" ] && exit 0
echo "deps.sh: missing:$missing_hints" >&2
exit 1
