#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The Python package as a user installs it: `pip install --no-build-isolation .` (meson-python,
# offline) into a fresh venv over Debian's python3 (--system-site-packages: numpy and torch
# from Debian), then the README's training script run from outside the source tree with
# that venv's python; `python3 -m build --wheel` makes a wheel holding the package only.
# Exits 77 (skipped) under sanitizers (an instrumented extension cannot load into the
# interpreter) and where python3-dev, python3-mesonpy, python3-build, python3-venv, numpy or
# torch is missing (scripts/deps.sh python installs them).
# The wheel's meson build directory is kept in BUILDDIR/python-wheel, so a rerun rebuilds
# only what changed (the first run compiles the library once more, statically).
# Usage: install_python.sh BUILDDIR SOURCEDIR SANITIZE
set -eu
build=$1
src=$2
if [ "${3:-none}" != none ]; then
    echo "install_python: skipped under -Db_sanitize=$3 (the interpreter is not instrumented)"
    exit 77
fi
py=/usr/bin/python3
if ! "$py" -c 'import mesonpy, build, venv, ensurepip, numpy, torch, os, sysconfig
assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' 2>/dev/null ||
    ! command -v patchelf >/dev/null
then
    echo "install_python: skipped: needs python3-dev python3-mesonpy python3-build" \
        "python3-venv python3-numpy python3-torch patchelf (scripts/deps.sh python)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
wheeldir="$(cd "$build" && pwd)/python-wheel"
log="$tmp/log"
fail() {
    cat "$log" >&2
    echo "install_python: $1" >&2
    exit 1
}

"$py" -m venv --system-site-packages "$tmp/venv" >"$log" 2>&1 || fail "venv failed"
(cd "$src" && "$tmp/venv/bin/python" -m pip install --no-build-isolation --no-index --no-deps \
    --config-settings=builddir="$wheeldir" .) >"$log" 2>&1 || fail "pip install . failed"

# the README's first python block, from a directory with no embtables in it
"$py" - "$src/README.md" "$tmp/readme.py" <<'EOF'
import re, sys
blocks = re.findall(r"```python\n(.*?)```", open(sys.argv[1]).read(), re.S)
open(sys.argv[2], "w").write(blocks[0])
EOF
cd "$tmp"
"$tmp/venv/bin/python" - "$tmp/venv" <<'EOF' || exit 1
import os, sys
import embtables, embtables.torch
assert embtables.__file__.startswith(sys.argv[1]), embtables.__file__
from importlib.metadata import version
assert embtables.__version__ == version("embtables"), (embtables.__version__, version("embtables"))
for name in ("np", "sys", "numpy"):
    assert not hasattr(embtables, name), f"embtables.{name} leaks"
for name in ("np", "sys", "torch", "nn", "numpy"):
    assert not hasattr(embtables.torch, name), f"embtables.torch.{name} leaks"
print("installed", embtables.__version__, "at", os.path.dirname(embtables.__file__))
EOF
OMP_NUM_THREADS=2 "$tmp/venv/bin/python" "$tmp/readme.py" || fail "the README script failed"

# a wheel: the package and the extension, no C headers, libraries or pkg-config files
(cd "$src" && "$py" -m build --wheel --no-isolation --outdir "$tmp/dist" \
    --config-setting=builddir="$wheeldir" .) >"$log" 2>&1 || fail "python3 -m build failed"
"$py" - "$tmp"/dist/embtables-*.whl <<'EOF'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
for need in ("embtables/__init__.py", "embtables/torch.py", "embtables/__init__.pyi"):
    assert need in names, f"the wheel lacks {need}: {names}"
assert any(n.startswith("embtables/_embtables.") for n in names), names
bad = [n for n in names if n.endswith((".h", ".pc", ".a")) or "/lib/" in n]
assert not bad, f"the wheel installs C files: {bad}"
print("wheel:", sys.argv[1].rsplit("/", 1)[1], len(names), "files")
EOF
