#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""A TorchRec tutorial-style training step (EmbeddingBagCollection + KeyedJaggedTensor +
dense MLPs + apply_optimizer_in_backward for the tables, Adam for the dense part), timed
with embtables.torch and with plain torch (python/tests/ref_torchrec.py: TorchRec's API
over nn.EmbeddingBag), the script's code the same for both but its imports. Runs
alternate (ours, torch, ours, torch, ...) so that both see the same machine load; prints
each one's step time, median (range), and the speedup's median and range over the pairs.

Usage: examples/torchrec_speed.py [--bags 20] [--repeat 5] [--steps 20] [--threads 2]
       [--tables 8] [--rows 100000] [--dim 64] [--batch 512]
(PYTHONPATH=build/python, Debian's /usr/bin/python3 with torch.)
"""
import argparse
import os
import statistics
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "tests"))


def build(mod, a):
    """The model, its dense optimizer and a batch maker, from module mod's TorchRec API."""
    torch.manual_seed(0)
    feats = [f"f{t}" for t in range(a.tables)]
    ebc = mod.EmbeddingBagCollection(tables=[
        mod.EmbeddingBagConfig(name=f"t{t}", embedding_dim=a.dim, num_embeddings=a.rows,
                               feature_names=[f]) for t, f in enumerate(feats)])

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.ebc = ebc
            self.dense = nn.Sequential(nn.Linear(13, 256), nn.ReLU(), nn.Linear(256, a.dim),
                                       nn.ReLU())
            self.over = nn.Sequential(nn.Linear(a.dim * (a.tables + 1), 256), nn.ReLU(),
                                      nn.Linear(256, 1))

        def forward(self, dense, kjt):
            emb = mod.KeyedTensor.regroup([self.ebc(kjt)], [feats])[0]
            return self.over(torch.cat([self.dense(dense), emb], dim=1)).squeeze(1)

    model = Model()
    mod.apply_optimizer_in_backward(torch.optim.Adagrad, model.ebc.parameters(), {"lr": 0.05})
    dense_opt = torch.optim.Adam(
        [p for _, p in mod.in_backward_optimizer_filter(model.named_parameters())], lr=1e-3)
    gen = torch.Generator().manual_seed(1)

    def batch():
        lengths = torch.full((a.tables * a.batch,), a.bags, dtype=torch.int64)
        values = torch.randint(0, a.rows, (int(lengths.sum()),), generator=gen)
        kjt = mod.KeyedJaggedTensor(feats, values, None, lengths)
        return torch.randn(a.batch, 13, generator=gen), kjt, \
            torch.randint(0, 2, (a.batch,), generator=gen).float()
    return model, dense_opt, batch


def step(model, dense_opt, b):
    dense, kjt, label = b
    loss = nn.functional.binary_cross_entropy_with_logits(model(dense, kjt), label)
    dense_opt.zero_grad()
    loss.backward()
    dense_opt.step()


def timed(setup, a):
    """Seconds a step, over a.steps steps (batches made beforehand)."""
    model, dense_opt, batch = setup
    bs = [batch() for _ in range(a.steps)]
    step(model, dense_opt, batch())  # warm-up
    t = time.perf_counter()
    for b in bs:
        step(model, dense_opt, b)
    return (time.perf_counter() - t) / a.steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bags", type=int, default=20, help="ids a bag (1: one-hot)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2,
                    help="torch's threads (embtables' tables: the physical cores)")
    ap.add_argument("--tables", type=int, default=8)
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--batch", type=int, default=512)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    import embtables.torch as ours
    import ref_torchrec as ref
    setups = {"embtables": build(ours, a), "torch": build(ref, a)}
    assert setups["embtables"][0].ebc.optimizer is not None  # the fused path
    times = {k: [] for k in setups}
    for _ in range(a.repeat):
        for k, s in setups.items():
            times[k].append(timed(s, a))
    print(f"# {a.tables} tables of {a.rows} x {a.dim}, batch {a.batch}, bags of {a.bags}, "
          f"{a.threads} threads, {a.repeat} interleaved runs of {a.steps} steps; "
          f"torch {torch.__version__}; load {os.getloadavg()[0]:.1f}")
    for k, v in times.items():
        print(f"{k:10s} ms/step median {1e3 * statistics.median(v):8.2f}  "
              f"range {1e3 * min(v):.2f}-{1e3 * max(v):.2f}")
    ratios = [t / o for o, t in zip(times["embtables"], times["torch"])]
    print(f"speedup (torch / embtables) median {statistics.median(ratios):.2f}x  "
          f"range {min(ratios):.2f}-{max(ratios):.2f}x")


if __name__ == "__main__":
    main()
