#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""peer_torch.py — PyTorch on emb-bench's workload: the same tables and the same ids.

Usage: /usr/bin/python3 perf/peer_torch.py /dev/shm/emb-bench-PID/manifest.json
(emb-bench --peer torch runs it). The tables are the file emb-bench maps (torch maps it
too, shared, so both work on the very same bytes); the ids and CSR offsets of every id set
are files next to it. Per bag variant, phase and thread count it times, like emb-bench:
  forward      F.embedding_bag(mode='sum') per table, torch.cat into the concat output
  update:OPT   backward of that output (sparse gradients) + optimizer step (SGD, Adagrad,
               SparseAdam for adam; rowwise_adagrad and ftrl: no torch optimizer, no line);
               the forward runs untimed before each iteration
  train:OPT    forward + backward + step: one training step
and prints one line per row: "peer BAGS PHASE THREADS MEDIAN_S P90_S".
"""
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def load(manifest):
    """Tables (views of the shared file) and id sets [(ids, offsets) per table] per variant."""
    base = os.path.dirname(manifest)
    with open(manifest) as f:
        m = json.load(f)
    path = os.path.join(base, m["tables_file"])
    size = os.path.getsize(path)
    flat32 = torch.from_file(path, shared=True, size=size // 4, dtype=torch.float32)
    flat16 = torch.from_file(path, shared=True, size=size // 2, dtype=torch.int16)
    tables = []
    for rows, dim, off, *dt in m["tables"]:
        dt = dt[0] if dt else "f32"
        if dt == "f32":
            tables.append(flat32[off:off + rows * dim].view(rows, dim))
        else:  # off counts 4-byte units; the 16-bit bits seen as torch's half / bfloat16
            t16 = flat16[2 * off:2 * off + rows * dim].view(rows, dim)
            tables.append(t16.view(torch.float16 if dt == "f16" else torch.bfloat16))
    batch = m["batch"]
    variants = []
    for v in m["variants"]:
        sets = []
        for s in v["sets"]:
            ids = torch.from_numpy(np.fromfile(os.path.join(base, s["ids"]), dtype=np.int64))
            off = np.fromfile(os.path.join(base, s["offsets"]), dtype=np.int64)
            off = off.reshape(len(tables), batch + 1)
            per_table, at = [], 0
            for t in range(len(tables)):
                n = int(off[t, -1])
                per_table.append((ids[at:at + n], torch.from_numpy(off[t].copy())))
                at += n
            sets.append(per_table)
        variants.append((v["name"], sets))
    return m, tables, variants


def output_grad(batch, width):
    """The output gradient emb-bench uses: (i % 17) * 1e-3 - 8e-3, row-major."""
    i = torch.arange(batch * width, dtype=torch.int64)
    return ((i % 17).float() * 1e-3 - 8e-3).view(batch, width)


def forward(weights, id_set):
    outs = [F.embedding_bag(ids, w, off, mode="sum", sparse=True, include_last_offset=True)
            for w, (ids, off) in zip(weights, id_set)]
    return torch.cat(outs, dim=1)


def make_optimizer(name, params, lr):
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr)
    if name == "adagrad":
        return torch.optim.Adagrad(params, lr=lr)
    if name == "adam":
        return torch.optim.SparseAdam(params, lr=lr)
    return None  # rowwise_adagrad, ftrl: torch has no such optimizer


class Step:
    """One iteration of a phase; `prepare` runs untimed before each timed call."""

    def __init__(self, phase, tables, params, grad, lr):
        self.kind, _, opt = phase.partition(":")
        self.tables, self.params, self.grad = tables, params, grad
        self.opt = make_optimizer(opt, params, lr) if opt else None
        self.out = None

    def prepare(self, id_set):
        if self.kind == "update":
            self.out = forward(self.params, id_set)

    def __call__(self, id_set):
        if self.kind == "forward":
            with torch.no_grad():
                forward(self.tables, id_set)
            return
        out = self.out if self.kind == "update" else forward(self.params, id_set)
        out.backward(self.grad)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)


def time_row(step, sets, iters, warmup):
    it, times = 0, []
    for _ in range(warmup):
        step.prepare(sets[it % len(sets)])
        step(sets[it % len(sets)])
        it += 1
    for _ in range(iters):
        s = sets[it % len(sets)]
        step.prepare(s)
        t0 = time.perf_counter()
        step(s)
        times.append(time.perf_counter() - t0)
        it += 1
    times.sort()
    n = len(times)
    median = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    return median, times[math.ceil(0.9 * n) - 1]


def supported(tables):
    """Whether this torch's CPU embedding_bag takes every table's dtype (1.13: no bfloat16)."""
    for t in tables:
        try:
            F.embedding_bag(torch.zeros(1, dtype=torch.int64), t[:1],
                            torch.tensor([0, 1]), mode="sum", include_last_offset=True)
        except RuntimeError as e:
            print(f"peer_torch: torch {torch.__version__} has no CPU embedding_bag for "
                  f"{t.dtype}: {str(e).splitlines()[0]}", file=sys.stderr)
            return False
    return True


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: peer_torch.py MANIFEST")
    m, tables, variants = load(sys.argv[1])
    if not supported(tables):
        return
    params = [torch.nn.Parameter(t) for t in tables]
    width = sum(t.shape[1] for t in tables)
    grad = output_grad(m["batch"], width)
    for name, sets in variants:
        for phase in m["phases"]:
            for threads in m["threads"]:
                torch.set_num_threads(threads)
                step = Step(phase, tables, params, grad, m["lr"])
                if step.kind != "forward" and step.opt is None:
                    continue
                med, p90 = time_row(step, sets, m["iters"], m["warmup"])
                print(f"peer {name} {phase} {threads} {med:.9f} {p90:.9f}", flush=True)


if __name__ == "__main__":
    main()
