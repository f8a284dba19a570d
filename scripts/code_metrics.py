#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""code_metrics.py — the shape of src/: what ARCHITECTURE.md promises, measured.

    scripts/code_metrics.py [--check] [-v] SRCDIR [BUILDDIR]

Prints the files of src/ over LIMIT lines, the file circles, the function lengths
(median / p90 / max, from ctags), the raw `ops->` calls above src/tables/ and the
table contract's entries. The file circles come from the object files of BUILDDIR
(`nm`): file A uses a global symbol defined in file B; a circle is a set of two or more
.c files each reachable from the other (a strongly connected component of that graph),
listed with its two-way pairs (-v: and the symbols of each way). Without BUILDDIR the
circles are not measured.

--check exits 1 when a file of src/ outside EXCEPT is over LIMIT lines, or a circle
exists that KNOWN_CIRCLES does not list, or one it lists is gone (the test `code_metrics`,
suite `build`, runs it).
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

LIMIT = 500
# The ISA files: one forced-inline body per kernel family written once (simd_body.h)
# and stamped per ISA (kernels_avx2.c, kernels_avx512.c, each with its own vector
# primitives). Cut into pieces, each piece would need the whole primitive set again;
# their header comments say so too.
EXCEPT = {
    'src/kernels/x86/simd_body.h',
    'src/kernels/x86/kernels_avx2.c',
    'src/kernels/x86/kernels_avx512.c',
}

# Circles left on purpose, each with its reason; the check fails on any other circle and on
# one of these that is gone (then strike it here), so the list only shrinks. None is left:
# the last two (a recursion through a public entry) were broken by the one file above both
# (store/restore_ex.c, tables/partitioned.c). Break a new one that way; do not list it.
KNOWN_CIRCLES = set()


def src_files(root):
    out = []
    for d, _, names in os.walk(os.path.join(root, 'src')):
        for n in names:
            if n.endswith(('.c', '.h')):
                out.append(os.path.relpath(os.path.join(d, n), root))
    return sorted(out)


def line_counts(root, files):
    res = {}
    for f in files:
        with open(os.path.join(root, f), 'rb') as fh:
            res[f] = fh.read().count(b'\n')
    return res


def objects(root, build):
    """{source file relative to root: object path} for every object built from src/."""
    with open(os.path.join(build, 'compile_commands.json')) as fh:
        cmds = json.load(fh)
    res = {}
    for c in cmds:
        src = os.path.relpath(os.path.normpath(os.path.join(c['directory'], c['file'])), root)
        if not src.startswith('src/'):
            continue
        obj = os.path.join(c['directory'], c['output'])
        if os.path.exists(obj):
            res[src] = obj
    return res


def symbols(obj):
    out = subprocess.run(['nm', '-P', obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == 'U':
            used.add(name)
        elif kind in ('T', 'D', 'B', 'R', 'V', 'W', 'C', 'G', 'S'):
            defined.add(name)
    return defined, used


def file_graph(objs):
    defs, uses = {}, {}
    for src, obj in objs.items():
        d, u = symbols(obj)
        uses[src] = u
        for s in d:
            defs.setdefault(s, set()).add(src)
    edges = {src: {} for src in objs}  # edges[a][b]: the symbols a uses from b
    for src, u in uses.items():
        for s in u:
            for dst in defs.get(s, ()):
                if dst != src:
                    edges[src].setdefault(dst, []).append(s)
    return edges


def circles(edges):
    """Strongly connected components of two or more files (Tarjan, iterative)."""
    index, low, onstack, stack, comps = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        onstack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    onstack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if w in onstack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    onstack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
    return sorted(comps)


def function_lengths(root):
    try:
        out = subprocess.run(['ctags', '-R', '--languages=C', '--kinds-C=f', '--fields=+ne',
                              '--output-format=json', '-f', '-', 'src'], cwd=root,
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    lens = []
    for line in out.splitlines():
        tag = json.loads(line)
        # an upper-case name is a run of macro stamps (ROW(...) ...) ctags took for one function
        if tag.get('_type') == 'tag' and 'end' in tag and not tag['name'].isupper():
            lens.append(tag['end'] - tag['line'] + 1)
    return sorted(lens)


def raw_ops_calls(root, files):
    n = 0
    for f in files:
        if f.startswith('src/tables/') or not f.endswith('.c'):
            continue
        with open(os.path.join(root, f), encoding='utf-8') as fh:
            n += sum(1 for line in fh if 'ops->' in line)
    return n


def contract_entries(root):
    """{struct: number of function-pointer entries} of src/tables/table_ops.h."""
    with open(os.path.join(root, 'src/tables/table_ops.h'), encoding='utf-8') as fh:
        text = fh.read()
    res = {}
    for m in re.finditer(r'typedef struct (Emb\w*(?:Facet|Ops)) \{(.*?)\} \1;', text, re.S):
        res[m.group(1)] = len(re.findall(r'\(\*\w+\)\s*\(', m.group(2)))
    return res


def main(argv):
    check = '--check' in argv
    verbose = '-v' in argv
    args = [a for a in argv if a not in ('--check', '-v')]
    if not args:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = os.path.abspath(args[0])
    build = os.path.abspath(args[1]) if len(args) > 1 else None
    files = src_files(root)
    lines = line_counts(root, files)
    bad = []
    print('files over %d lines in src/ (* = ISA exception):' % LIMIT)
    for f in sorted(files, key=lambda f: -lines[f]):
        if lines[f] <= LIMIT:
            break
        print('  %5d %s%s' % (lines[f], f, ' *' if f in EXCEPT else ''))
        if f not in EXCEPT:
            bad.append('%s has %d lines (limit %d)' % (f, lines[f], LIMIT))
    print('largest files:', ', '.join('%s %d' % (f, lines[f])
                                      for f in sorted(files, key=lambda f: -lines[f])[:6]))
    if build and not shutil.which('nm'):
        print('file circles: not measured (no nm)')
    elif build:
        edges = file_graph(objects(root, build))
        comps = circles(edges)
        pairs = sorted((a, b) for a in edges for b in edges[a] if a < b and a in edges[b])
        print('file circles: %d (two-way pairs: %d; %d objects)' % (len(comps), len(pairs),
                                                                   len(edges)))
        for c in comps:
            known = frozenset(c) in KNOWN_CIRCLES
            print('  circle: ' + ', '.join(c) + (' (known, KNOWN_CIRCLES)' if known else ''))
            if not known:
                bad.append('file circle: ' + ', '.join(c))
        for k in sorted(sorted(k) for k in KNOWN_CIRCLES - {frozenset(c) for c in comps}):
            if all(f in edges for f in k):
                bad.append('known circle gone, strike it from KNOWN_CIRCLES: ' + ', '.join(k))
        for a, b in pairs:
            print('  pair: %s <-> %s' % (a, b))
            if verbose:
                print('    %s uses %s' % (a, ' '.join(sorted(edges[a][b]))))
                print('    %s uses %s' % (b, ' '.join(sorted(edges[b][a]))))
    lens = function_lengths(root)
    if lens:
        p90 = lens[min(len(lens) - 1, int(0.9 * len(lens)))]
        print('function lengths (%d functions, ctags): median %g, p90 %d, max %d'
              % (len(lens), statistics.median(lens), p90, lens[-1]))
    print('raw ops-> calls above src/tables/: %d' % raw_ops_calls(root, files))
    ent = contract_entries(root)
    print('contract entries: ' + ', '.join('%s %d' % kv for kv in sorted(ent.items()))
          + ' (total %d)' % sum(ent.values()))
    if check and bad:
        for b in bad:
            print('FAIL: ' + b, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
