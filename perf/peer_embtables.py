#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""peer_embtables.py — emb-bench's workload from Python: embtables.torch against torch.

Usage (scripts/bench_python.sh runs it):
  emb-bench --peer torch --peer-script perf/peer_embtables.py [emb-bench flags]
emb-bench writes the tables (shared memory), the ids and a manifest, times its own C
rows, then runs this script on the very same tables and ids. Per bag variant, phase and
thread count this script times python and c-call alternating iteration by iteration (so
both see the same machine and caches; which of the two goes first alternates too, since
the second finds the rows of the same ids in cache), then torch (interleaving torch with ours would
evict our hot rows: a harness effect, not a cost of either):
  python  embtables.torch.EmbeddingBagCollection(optimizer=OPT, strategy=$EMB_PY_STRATEGY
          [prealloc-concat], threads): forward (the concat output) + backward, whose fused
          optimizer updates the tables in place: one training step of the embedding part
  c-call  the same collection's C forward + backward called directly with ready numpy
          arrays (the C call as Python makes it: the floor of the python row)
  torch   perf/peer_torch.py's step: F.embedding_bag(sparse=True) per table, torch.cat,
          backward, torch.optim.SGD / Adagrad step (forward-only phases: no grad)
It prints the python medians as emb-bench's "peer" lines (so emb-bench's last column
reads Python's median over C's: 1 + the Python overhead) and, on stderr, one line per row:
  py-vs-torch BAGS PHASE THREADS  python MED [P10-P90] ms  c-call MED [...] ms
              torch MED [...] ms  overhead% [P10..P90 ms]  SPEEDUP-over-torch
(overhead: each iteration's python minus c-call time, the median of those where python
ran first and of those where c-call did, averaged, over c-call's median; in brackets the
differences' 10th and 90th percentiles)
and, at 1 thread, the same from this thread's CPU time (time.thread_time: all the work
runs on the calling thread, and CPU time does not count the waits of a loaded machine):
  py-vs-torch-cpu BAGS PHASE 1  python MED ms  c-call MED ms  torch MED ms  overhead  SPEEDUP
"""
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import embtables  # noqa: F401
except ImportError:  # the build tree of the source checkout
    sys.path.insert(0, os.path.join(HERE, "..", os.environ.get("EMB_BUILD", "build"), "python"))
from embtables.torch import EmbeddingBagCollection  # noqa: E402

import peer_torch  # noqa: E402  (the same workload loader and torch step)


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


class PyStep:
    """One embtables training step (or forward) from Python."""

    def __init__(self, phase, weights, threads, lr, strategy):
        self.kind, _, opt = phase.partition(":")
        self.ebc = EmbeddingBagCollection(weights, optimizer=opt or "sgd", lr=lr,
                                          strategy=strategy, threads=threads)
        self.out = None

    def prepare(self, id_set, grad):
        if self.kind == "update":
            self.out = self.ebc([i for i, _ in id_set], [o for _, o in id_set])

    def __call__(self, id_set, grad):
        if self.kind == "forward":
            with torch.no_grad():
                self.ebc([i for i, _ in id_set], [o for _, o in id_set])
            return
        out = self.out if self.kind == "update" else \
            self.ebc([i for i, _ in id_set], [o for _, o in id_set])
        out.backward(grad)

    def c_call(self, id_set, grad_np):
        """The C forward (+ backward) alone, as the module calls it."""
        c = self.ebc._coll
        out = np.empty((grad_np.shape[0], c.width), np.float32)
        step = c.forward(0, [i.numpy() for i, _ in id_set], [o.numpy() for _, o in id_set],
                         None, out)
        if self.kind != "forward":
            c.backward(step, grad_np)


def paired(a, b, warmup):
    """Mean over the two orders of the median of a[i] - b[i] (a ran first in timed
    iteration i when warmup + i is even)."""
    meds = []
    for first in (0, 1):
        d = [x - y for i, (x, y) in enumerate(zip(a, b)) if (warmup + i) % 2 == first]
        if d:
            meds.append(percentile(d, 0.5))
    return sum(meds) / len(meds)


def fmt(name, ts):
    return (f"{name} {percentile(ts, 0.5)*1e3:8.3f} [{percentile(ts, 0.1)*1e3:.3f}-"
            f"{percentile(ts, 0.9)*1e3:.3f}] ms")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: peer_embtables.py MANIFEST")
    # as peer_torch does: without it every step of torch's bags of 20 got its sparse
    # gradients (10 MiB a table) as fresh mmaps, thousands of page faults a step, 4x its
    # CPU time (docs/bench/2026-11-28-python-torch-steady.md); the same process runs ours
    peer_torch.keep_freed_memory()
    m, tables, variants = peer_torch.load(sys.argv[1])
    # the torch peer uses offsets of B+1 entries (include_last_offset); ours: B starts.
    # Every row here cycles through the same warmup + iters sets (the first ones)
    n = m["warmup"] + m["iters"]
    variants = [(name, [[(ids, off[:-1]) for ids, off in s.read()] for s in sets[:n]])
                for name, sets in variants]
    with torch.no_grad():  # fault every page of the shared tables in now, for writing,
        for t in tables:   # as emb-bench's process has (else the first steps pay for it)
            t.view(-1)[::1024].add_(0.0)
    params = [torch.nn.Parameter(t) for t in tables]
    grad = peer_torch.output_grad(m["batch"], sum(t.shape[1] for t in tables))
    strategy = os.environ.get("EMB_PY_STRATEGY", "prealloc-concat")
    for name, sets in variants:
        torch_sets = [[(i, torch.cat([o, torch.tensor([len(i)])])) for i, o in s] for s in sets]
        for phase in m["phases"]:
            for threads in m["threads"]:
                torch.set_num_threads(threads)
                py = PyStep(phase, tables, threads, m["lr"], strategy)
                tp = peer_torch.Step(phase, tables, params, grad, m["lr"])
                grad_np = grad.numpy()
                warmup = max(m["warmup"], len(sets))  # every id set once: pages mapped
                tpy, tc, ttorch = [], [], []
                cpy, cc, ctorch = [], [], []  # this thread's CPU time: no preemption
                clock = time.thread_time
                for it in range(warmup + m["iters"]):  # ours: python and c-call alternate,
                    k = it % len(sets)                 # and so does which goes first: the
                    for first in (it % 2 == 0, it % 2 == 1):  # second finds the first's rows
                        if first:                      # in cache (one-hot: up to 12% faster)
                            py.prepare(sets[k], grad)
                            c0, t0 = clock(), time.perf_counter()
                            py(sets[k], grad)
                            c1, t1 = clock(), time.perf_counter()
                            if it >= warmup:
                                tpy.append(t1 - t0)
                                cpy.append(c1 - c0)
                        else:
                            c0, t0 = clock(), time.perf_counter()
                            py.c_call(sets[k], grad_np)
                            c1, t1 = clock(), time.perf_counter()
                            if it >= warmup:
                                tc.append(t1 - t0)
                                cc.append(c1 - c0)
                for it in range(warmup + m["iters"]):  # then torch (its caches, not ours)
                    k = it % len(sets)
                    tp.prepare(torch_sets[k])
                    c0, t0 = clock(), time.perf_counter()
                    tp(torch_sets[k])
                    if it >= warmup:
                        ttorch.append(time.perf_counter() - t0)
                        ctorch.append(clock() - c0)
                med_py, med_c, med_t = (percentile(x, 0.5) for x in (tpy, tc, ttorch))
                # the overhead from the pairs (python, c-call) of one iteration (a change of
                # the machine's load between rounds hits both halves of a pair alike): the
                # mean of the median differences with python first and with c-call first,
                # so that what the second of a pair gains from the first cancels out
                pairs = [a - b for a, b in zip(tpy, tc)]
                ovh = paired(tpy, tc, warmup) / med_c
                print(f"peer {name} {phase} {threads} {med_py:.9f} {percentile(tpy, 0.9):.9f}",
                      flush=True)
                print(f"py-vs-torch {name} {phase} {threads}  {fmt('python', tpy)}  "
                      f"{fmt('c-call', tc)}  {fmt('torch', ttorch)}  "
                      f"overhead {100 * ovh:+.1f}% [{percentile(pairs, 0.1)*1e3:+.3f}.."
                      f"{percentile(pairs, 0.9)*1e3:+.3f} ms]  {med_t / med_py:.2f}x",
                      file=sys.stderr, flush=True)
                if threads == 1:  # all work on this thread: CPU times resist the load
                    mc = [percentile(x, 0.5) for x in (cpy, cc, ctorch)]
                    cpairs = paired(cpy, cc, warmup)
                    print(f"py-vs-torch-cpu {name} {phase} 1  python {mc[0]*1e3:.3f} ms  "
                          f"c-call {mc[1]*1e3:.3f} ms  torch {mc[2]*1e3:.3f} ms  "
                          f"overhead {100 * cpairs / mc[1]:+.1f}%  {mc[2] / mc[0]:.2f}x",
                          file=sys.stderr, flush=True)
                del py, tp


if __name__ == "__main__":
    main()
