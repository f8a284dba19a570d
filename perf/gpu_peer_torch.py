#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The PyTorch peer of perf/gpu_bench.c, on the same GPU, table shapes, dtype and ids.

One table (ids from gpu_bench --export DIR, DIR/ids.bin): torch.nn.functional.embedding_bag
(sum, fixed bags) forward, and backward + SGD (sparse gradient, torch.optim.SGD). Prints
`TORCH fwd_ms=... bwd_ms=...`; bwd_ms = time(forward + backward + step) - time(forward),
the part comparable with emb_gpu_backward_update.

The Criteo ensemble (--manifest DIR/manifest.json from gpu_bench --tables ... --export DIR):
per bag variant, torch's per-table loop (F.embedding_bag per table, torch.cat into the
concat output) and its backward + SGD, the id sets rotating as in gpu_bench. Prints
`TORCH_ENSEMBLE variant=... fwd_ms=... bwd_ms=...`.

Timing as gpu_bench: one warm-up call, then --reps repetitions of CUDA events around
--iters calls; the median of the repetitions' time per call."""
import argparse
import json
import os
import statistics

import numpy as np
import torch
import torch.nn.functional as F


def median_ms(fn, iters, reps=7):
    """fn(i) once untimed, then reps x (events around iters calls): median ms per call."""
    fn(0)
    torch.cuda.synchronize()
    times = []
    for r in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        for i in range(iters):
            fn(r * iters + i + 1)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / iters)
    return statistics.median(times)


def ensemble(a):
    """torch's per-table loop on gpu_bench's Criteo workload (see the module's doc)."""
    base = os.path.dirname(a.manifest)
    with open(a.manifest) as f:
        m = json.load(f)
    dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[m["dtype"]]
    dev = torch.device("cuda")
    batch, shapes = m["batch"], m["tables"]
    gen = torch.Generator(device=dev).manual_seed(1)
    weights = [(torch.rand(r, d, device=dev, generator=gen, dtype=torch.float32) * 0.02)
               .to(dt).requires_grad_() for r, d in shapes]
    width = sum(d for _, d in shapes)
    dy = torch.full((batch, width), 0.01, dtype=dt, device=dev)
    opt = torch.optim.SGD(weights, lr=a.lr)
    for v in m["variants"]:
        sets = []
        for s in v["sets"]:
            ids = torch.from_numpy(np.fromfile(os.path.join(base, s["ids"]), dtype=np.int64))
            off = np.fromfile(os.path.join(base, s["offsets"]), dtype=np.int64)
            off = off.reshape(len(shapes), batch + 1)
            per, at = [], 0
            for t in range(len(shapes)):
                n = int(off[t, -1])
                per.append((ids[at:at + n].to(dev), torch.from_numpy(off[t].copy()).to(dev)))
                at += n
            sets.append(per)

        def fwd_out(i, sparse):
            return torch.cat([F.embedding_bag(ids, w, o, mode="sum", sparse=sparse,
                                              include_last_offset=True)
                              for w, (ids, o) in zip(weights, sets[i % len(sets)])], dim=1)

        def fwd(i):
            with torch.no_grad():
                fwd_out(i, False)

        def fwd_graph(i):
            fwd_out(i, True)

        def train(i):
            fwd_out(i, True).backward(dy)
            opt.step()
            opt.zero_grad(set_to_none=True)

        t_fwd = median_ms(fwd, a.iters, a.reps)
        t_graph = median_ms(fwd_graph, a.iters, a.reps)
        t_train = median_ms(train, a.iters, a.reps)
        print(f"TORCH_ENSEMBLE variant={v['name']} fwd_ms={t_fwd:.4f} "
              f"bwd_ms={max(t_train - t_graph, 1e-6):.4f} train_ms={t_train:.4f}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=1 << 23)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--nbags", type=int, default=16384)
    p.add_argument("--bag", type=int, default=64)
    p.add_argument("--dtype", default="f32", choices=["f32", "f16", "bf16"])
    p.add_argument("--ids", help="DIR/ids.bin of gpu_bench --export DIR")
    p.add_argument("--manifest", help="DIR/manifest.json of gpu_bench --tables --export DIR")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--lr", type=float, default=0.01)
    a = p.parse_args()
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    if a.manifest:
        ensemble(a)
        return
    a.bags = a.nbags
    dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[a.dtype]
    dev = torch.device("cuda")
    ids = torch.from_numpy(np.fromfile(a.ids, dtype=np.int64)).to(dev)
    assert ids.numel() == a.bags * a.bag, "ids file does not match --bags x --bag"
    offsets = torch.arange(0, ids.numel(), a.bag, device=dev)
    weight = torch.full((a.rows, a.dim), 0.0115, dtype=dt, device=dev, requires_grad=True)
    dy = torch.full((a.bags, a.dim), 0.0115, dtype=dt, device=dev)
    opt = torch.optim.SGD([weight], lr=1e-3)

    def fwd(_):
        with torch.no_grad():
            F.embedding_bag(ids, weight, offsets, mode="sum")

    def fwd_only_graph(_):
        F.embedding_bag(ids, weight, offsets, mode="sum", sparse=True)

    def train(_):
        out = F.embedding_bag(ids, weight, offsets, mode="sum", sparse=True)
        out.backward(dy)
        opt.step()
        opt.zero_grad(set_to_none=True)

    t_fwd = median_ms(fwd, a.iters, a.reps)
    t_fwd_graph = median_ms(fwd_only_graph, a.iters, a.reps)
    t_train = median_ms(train, a.iters, a.reps)
    print(f"TORCH fwd_ms={t_fwd:.4f} bwd_ms={max(t_train - t_fwd_graph, 1e-6):.4f} "
          f"train_ms={t_train:.4f}")


if __name__ == "__main__":
    main()
