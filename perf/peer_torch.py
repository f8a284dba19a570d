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
and prints one line per row: "peer BAGS PHASE THREADS MEDIAN_S P90_S". int8 / int4 tables
(torch's prepacked row formats, as emb-bench stores them) are looked up by
torch.ops.quantized.embedding_bag_byte / _4bit_rowwise_offsets, forward only: torch does not
train quantized rows.
"""
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


# Row bytes of torch's prepacked formats: int8 D + f32 scale and bias, int4 D / 2 + f16 ones.
QUANT_BYTES = {"int8": lambda d: d + 8, "int4": lambda d: d // 2 + 4}


class Prepacked:
    """A table of prepacked rows (uint8, rows x row bytes) and its lookup op."""

    def __init__(self, rows, kind, dim):
        self.rows, self.kind, self.dim = rows, kind, dim
        q = torch.ops.quantized
        self.op = q.embedding_bag_byte_rowwise_offsets if kind == "int8" \
            else q.embedding_bag_4bit_rowwise_offsets


class IdSet:
    """One id set's files; read() gives [(ids, offsets) per table]. A row reads only its
    own sets (untimed), so the peer holds one row's sets at a time."""

    def __init__(self, base, entry, ntables, batch):
        self.ids = os.path.join(base, entry["ids"])
        self.offsets = os.path.join(base, entry["offsets"])
        self.ntables, self.batch = ntables, batch

    def read(self):
        ids = torch.from_numpy(np.fromfile(self.ids, dtype=np.int64))
        off = np.fromfile(self.offsets, dtype=np.int64).reshape(self.ntables, self.batch + 1)
        per_table, at = [], 0
        for t in range(self.ntables):
            n = int(off[t, -1])
            per_table.append((ids[at:at + n], torch.from_numpy(off[t].copy())))
            at += n
        return per_table


def load(manifest):
    """Tables (views of the shared file) and, per variant, its name and IdSets."""
    base = os.path.dirname(manifest)
    with open(manifest) as f:
        m = json.load(f)
    path = os.path.join(base, m["tables_file"])
    size = os.path.getsize(path)
    flat32 = torch.from_file(path, shared=True, size=size // 4, dtype=torch.float32)
    flat16 = torch.from_file(path, shared=True, size=size // 2, dtype=torch.int16)
    flat8 = torch.from_file(path, shared=True, size=size, dtype=torch.uint8)
    prefault(flat8)
    tables = []
    for rows, dim, off, *dt in m["tables"]:
        dt = dt[0] if dt else "f32"
        if dt in QUANT_BYTES:  # off counts 4-byte units; rows of the prepacked formats
            rb = QUANT_BYTES[dt](dim)
            tables.append(Prepacked(flat8[4 * off:4 * off + rows * rb].view(rows, rb), dt, dim))
        elif dt == "f32":
            tables.append(flat32[off:off + rows * dim].view(rows, dim))
        else:  # off counts 4-byte units; the 16-bit bits seen as torch's half / bfloat16
            t16 = flat16[2 * off:2 * off + rows * dim].view(rows, dim)
            tables.append(t16.view(torch.float16 if dt == "f16" else torch.bfloat16))
    variants = [(v["name"], [IdSet(base, s, len(tables), m["batch"]) for s in v["sets"]])
                for v in m["variants"]]
    return m, tables, variants


def output_grad(batch, width):
    """The output gradient emb-bench uses: (i % 17) * 1e-3 - 8e-3, row-major."""
    i = torch.arange(batch * width, dtype=torch.int64)
    return ((i % 17).float() * 1e-3 - 8e-3).view(batch, width)


def bag(w, ids, off):
    if isinstance(w, Prepacked):
        return w.op(w.rows, ids, off, False, 0, False, None, None, True)
    return F.embedding_bag(ids, w, off, mode="sum", sparse=True, include_last_offset=True)


def forward(weights, id_set):
    return torch.cat([bag(w, ids, off) for w, (ids, off) in zip(weights, id_set)], dim=1)


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


def time_row(step, sets, iters, warmup, it=0):
    """Median and p90 of @iters steps after @warmup, on the sets from @it on (cycling);
    returns them and the next set's index, where the next row starts."""
    times = []
    mine = [sets[(it + k) % len(sets)].read() for k in range(warmup + iters)]
    for s in mine[:warmup]:
        step.prepare(s)
        step(s)
    for s in mine[warmup:]:
        step.prepare(s)
        t0 = time.perf_counter()
        step(s)
        times.append(time.perf_counter() - t0)
    times.sort()
    n = len(times)
    median = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    return median, times[math.ceil(0.9 * n) - 1], it + warmup + iters


def keep_freed_memory():
    """Has glibc's malloc keep what torch frees instead of handing it back to the kernel.

    By default a block above the mmap threshold (128 KiB, raised on the fly up to 32 MiB)
    is a fresh mmap and the top of the heap is trimmed past 2x that threshold, so a step's
    sparse gradient (batch x bag x D x 4 bytes: 10 MiB for 2048 bags of 20 at D 64) often
    lands on pages never touched: thousands of page faults in a step, 30-60 ms on a
    virtual machine, more in a process's first steps (the threshold has not yet risen), so
    a row's time depended on its position in the run. Fixed thresholds end that: blocks up
    to 32 MiB come from the heap and the heap is never trimmed. Larger blocks stay mmaps
    (glibc's cap): their faults are then part of every step alike. Not glibc: no change."""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
        libc.mallopt(m_mmap_threshold, 32 << 20)
        libc.mallopt(m_trim_threshold, 2**31 - 1)
        libc.mallopt(m_top_pad, 64 << 20)
    except (OSError, AttributeError):
        pass


def prefault(flat8):
    """Maps every page of the shared tables file into this process for writing, so the
    first row does not pay for the faults (a read maps a page read-only: the optimizer's
    first write to it faults again). Adds 0 to one byte a page: the bytes do not change,
    and emb-bench does not touch the file while the peer runs."""
    flat8[::4096] += 0


def prime(m, tables, params, grad, sets, trainable):
    """Runs the manifest's "prime" untimed steps of the first phase the rows run, at the
    most threads, on the first sets, and returns the index of the first set the rows use:
    each row then goes on where the previous one stopped, so every row sees fresh ids.

    Without it the process's first steps are slow: thousands of page faults as torch's
    heap grows (measured: 6 500 in the first step, 2 500 in several next ones, 30-400 ms
    a step against 8), which one warm-up step does not absorb, so the first row timed
    3-8x slower than the same row timed later (docs/bench/2026-11-28-peer-first-row.md)."""
    n = m.get("prime", 0)
    runs = [p for p in m["phases"] if trainable or p.startswith("forward")]
    steps = [Step(p, tables, params, grad, m["lr"]) for p in runs]
    steps = [s for s in steps if s.kind == "forward" or s.opt is not None]
    if n and steps:
        torch.set_num_threads(max(m["threads"]))
        for i in range(n):
            s = sets[i % len(sets)].read()
            steps[0].prepare(s)
            steps[0](s)
    return n


def supported(tables):
    """Whether this torch's CPU embedding_bag takes every table's dtype (1.13: no bfloat16)."""
    for t in tables:
        one = Prepacked(t.rows[:1], t.kind, t.dim) if isinstance(t, Prepacked) else t[:1]
        try:
            bag(one, torch.zeros(1, dtype=torch.int64), torch.tensor([0, 1]))
        except RuntimeError as e:
            what = t.kind if isinstance(t, Prepacked) else t.dtype
            print(f"peer_torch: torch {torch.__version__} has no CPU embedding_bag for "
                  f"{what}: {str(e).splitlines()[0]}", file=sys.stderr)
            return False
    return True


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: peer_torch.py MANIFEST")
    keep_freed_memory()
    m, tables, variants = load(sys.argv[1])
    if not supported(tables):
        return
    trainable = not any(isinstance(t, Prepacked) for t in tables)
    if not trainable:
        print("peer_torch: torch does not train quantized rows: forward only", file=sys.stderr)
    params = [torch.nn.Parameter(t) for t in tables] if trainable else tables
    width = sum(t.dim if isinstance(t, Prepacked) else t.shape[1] for t in tables)
    grad = output_grad(m["batch"], width)
    for name, sets in variants:
        it = prime(m, tables, params, grad, sets, trainable)
        for phase in m["phases"]:
            for threads in m["threads"]:
                torch.set_num_threads(threads)
                if not trainable and not phase.startswith("forward"):
                    continue
                step = Step(phase, tables, params, grad, m["lr"])
                if step.kind != "forward" and step.opt is None:
                    continue
                med, p90, it = time_row(step, sets, m["iters"], m["warmup"], it)
                print(f"peer {name} {phase} {threads} {med:.9f} {p90:.9f}", flush=True)


if __name__ == "__main__":
    main()
