# SPDX-License-Identifier: BSD-2-Clause
"""Builds and runs every C block of the documentation (README.md, docs/guide/*.md).

Each ```c block must be a whole program (it has a main()): it is compiled as a user would
(-std=c11 -pedantic -Wall -Wextra -Werror) against the library of this build, then run in
a scratch directory, where it must exit 0 within a minute. A block whose first line is
`/* doc: needs mpi */` is built with the MPI library and run on 2 ranks, `/* doc: needs
gpu */` is built against the CUDA library only; both are skipped (and said so) when this
build has no such library. The Python blocks are run by python/tests/test_guide.py.

Usage: doc_blocks.py --cc CC --include DIR --lib LIBFILE [--mpi-lib F --mpicc CC
       --mpirun SCRIPT] [--gpu-lib F --gpu-cflags FLAGS] FILE.md|DIR ...
"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

BLOCK = re.compile(r"^```c\n(.*?)^```", re.S | re.M)
NEEDS = re.compile(r"^/\* doc: needs (\w+) \*/")


def blocks(path):
    """(line number, text) of every ```c block of a markdown file."""
    text = open(path, encoding="utf-8").read()
    for m in BLOCK.finditer(text):
        yield text.count("\n", 0, m.start()) + 2, m.group(1)


def link_args(lib):
    d = os.path.dirname(os.path.abspath(lib))
    return [os.path.abspath(lib), "-Wl,-rpath," + d]


def build_and_run(args, where, code, tmp):
    """None when the block passed, 'skipped: ...' or an error message."""
    if not re.search(r"\bint\s+main\s*\(", code):
        return "not a whole program (no main): a block must compile and run on its own"
    needs = NEEDS.match(code)
    needs = needs.group(1) if needs else None
    src = os.path.join(tmp, "block.c")
    exe = os.path.join(tmp, "block")
    with open(src, "w") as f:
        f.write(code)
    cc = shlex.split(args.cc)
    libs = link_args(args.lib)
    run = [exe]
    extra = []
    if needs == "mpi":
        if not (args.mpi_lib and args.mpicc):
            return "skipped: this build has no MPI library"
        cc = shlex.split(args.mpicc)
        libs = link_args(args.mpi_lib) + libs
        run = [os.path.abspath(args.mpirun), "2", exe]
    elif needs == "gpu":
        if not args.gpu_lib:
            return "skipped: this build has no CUDA library"
        libs = link_args(args.gpu_lib) + libs
        extra = shlex.split(args.gpu_cflags or "")
        run = None
    elif needs is not None:
        return "unknown need '%s' (mpi or gpu)" % needs
    cmd = cc + ["-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror"] + extra + \
        ["-I" + d for d in args.include] + [src, "-o", exe] + libs + ["-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return "does not compile:\n" + r.stdout + r.stderr
    if run is None:
        return "built (not run: needs a GPU)"
    work = tempfile.mkdtemp(dir=tmp)
    try:
        r = subprocess.run(run, cwd=work, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "ran past 60 s"
    if r.returncode != 0:
        return "exits %d:\n%s%s" % (r.returncode, r.stdout, r.stderr)
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cc", required=True)
    p.add_argument("--include", action="append", default=[])
    p.add_argument("--lib", required=True)
    p.add_argument("--mpi-lib")
    p.add_argument("--mpicc")
    p.add_argument("--mpirun")
    p.add_argument("--gpu-lib")
    p.add_argument("--gpu-cflags")
    p.add_argument("files", nargs="+")
    args = p.parse_args()
    failed = 0
    count = 0
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for f in args.files:  # a folder stands for its *.md files
            paths += sorted(glob.glob(os.path.join(f, "*.md"))) if os.path.isdir(f) else [f]
        for path in paths:
            for line, code in blocks(path):
                count += 1
                where = "%s:%d" % (os.path.relpath(path), line)
                msg = build_and_run(args, where, code, tmp)
                if msg is None:
                    print("ok   %s" % where)
                elif msg.startswith(("skipped", "built")):
                    print("ok   %s (%s)" % (where, msg))
                else:
                    failed += 1
                    print("FAIL %s: %s" % (where, msg))
    print("%d C blocks, %d failed" % (count, failed))
    if count == 0:
        print("no C block found: the documentation's examples are gone")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
