#!/usr/bin/env python3
"""The PyTorch peer of perf/gpu_bench.c: torch.nn.functional.embedding_bag (sum, fixed
bags) forward, and backward + SGD (sparse gradient, torch.optim.SGD), on the same GPU,
table shape, dtype and ids (read from the file gpu_bench --ids wrote). Prints one line
`TORCH fwd_ms=... bwd_ms=...`; bwd_ms = time(forward + backward + step) - time(forward),
the part comparable with emb_gpu_backward_update. Medians of CUDA-event timings."""
import argparse
import statistics

import numpy as np
import torch
import torch.nn.functional as F


def median_ms(fn, iters):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=1 << 23)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--bags", type=int, default=16384)
    p.add_argument("--bag", type=int, default=64)
    p.add_argument("--dtype", default="f32", choices=["f32", "f16", "bf16"])
    p.add_argument("--ids", required=True)
    p.add_argument("--iters", type=int, default=20)
    a = p.parse_args()
    dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[a.dtype]
    dev = torch.device("cuda")
    ids = torch.from_numpy(np.fromfile(a.ids, dtype=np.int64)).to(dev)
    assert ids.numel() == a.bags * a.bag, "ids file does not match --bags x --bag"
    offsets = torch.arange(0, ids.numel(), a.bag, device=dev)
    weight = torch.full((a.rows, a.dim), 0.0115, dtype=dt, device=dev, requires_grad=True)
    dy = torch.full((a.bags, a.dim), 0.0115, dtype=dt, device=dev)
    opt = torch.optim.SGD([weight], lr=1e-3)

    def fwd():
        with torch.no_grad():
            F.embedding_bag(ids, weight, offsets, mode="sum")

    def fwd_only_graph():
        F.embedding_bag(ids, weight, offsets, mode="sum", sparse=True)

    def train():
        out = F.embedding_bag(ids, weight, offsets, mode="sum", sparse=True)
        out.backward(dy)
        opt.step()
        opt.zero_grad(set_to_none=True)

    t_fwd = median_ms(fwd, a.iters)
    t_fwd_graph = median_ms(fwd_only_graph, a.iters)
    t_train = median_ms(train, a.iters)
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    print(f"TORCH fwd_ms={t_fwd:.4f} bwd_ms={max(t_train - t_fwd_graph, 1e-6):.4f} "
          f"train_ms={t_train:.4f}")


if __name__ == "__main__":
    main()
