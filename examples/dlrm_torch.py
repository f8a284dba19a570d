#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""dlrm_torch.py: the PyTorch twin of dlrm_train.c, for side-by-side runs.

The same DLRM (bottom MLP, 26 EmbeddingBags with sparse gradients, dot interaction in
DLRM's order, top MLP, sigmoid + binary cross-entropy), the same data transforms (DLRM's:
log(1 + max(x, 0)), hex value mod table size or hashed), the same batches in file order
and the very same initial weights: dlrm_train.c initialises every parameter with the
embtables counter-based uniform initializer, re-computed here bit for bit in numpy.
Embeddings train with SGD or Adagrad (torch.optim, sparse), MLPs with SGD, one learning
rate, as DLRM does. The whole file is parsed before training; samples/s counts the
training loop only. The last line of stdout has dlrm_train's form:
    test auc=<x> logloss=<y> samples_per_s=<z>
Needs Debian's python3-torch (run with /usr/bin/python3).
"""
import argparse
import gzip
import math
import os
import sys
import time

import numpy as np
import torch

NDENSE, NCAT = 13, 26
M64 = (1 << 64) - 1


def mix64(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def uniform(rows, cols, lo, hi, seed):
    """embtables' EMB_INIT_UNIFORM (src/rng.h): element i of column c is
    lo + (hi - lo) * u(seed, c, i), u with 24 random bits, all in float32."""
    with np.errstate(over="ignore"):
        c = np.arange(rows, dtype=np.uint64)[:, None]
        i = np.arange(cols, dtype=np.uint64)[None, :]
        h = mix64(np.uint64(seed) + np.uint64(0x9E3779B97F4A7C15) * (c + np.uint64(1)))
        u = mix64(h ^ (i * np.uint64(0xD1B54A32D192ED03) + np.uint64(0x8CB92BA72F3D8DD7)))
    unit = (u >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / 16777216.0)
    lo, hi = np.float32(lo), np.float32(hi)
    return (lo + (hi - lo) * unit).astype(np.float32)


def criteo_hash(v):
    with np.errstate(over="ignore"):
        return mix64(v.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15))


def open_criteo(path):
    """The file's lines as bytes: gzip-compressed (by its first bytes) or plain."""
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gz else open(path, "rb")


def read_criteo(path, sizes, hashed):
    """Labels, dense (log1p'd) and indices of the file's good lines (bad ones skipped)."""
    labels, dense, cats, bad = [], [], [], 0
    with open_criteo(path) as f:
        for raw in f:
            f_ = raw.rstrip(b"\n").rstrip(b"\r").split(b"\t")
            try:
                if len(f_) != 40 or f_[0] not in (b"0", b"1"):
                    raise ValueError
                d = [int(x) if x else 0 for x in f_[1:14]]
                c = [int(x, 16) if x else 0 for x in f_[14:]]
                if any(len(x) > 8 for x in f_[14:]) or any(v < 0 for v in c):
                    raise ValueError
            except ValueError:
                bad += 1
                continue
            labels.append(int(f_[0]))
            dense.append(d)
            cats.append(c)
    if bad:
        print("%s: %d bad lines skipped" % (path, bad), file=sys.stderr)
    y = np.array(labels, dtype=np.float32)
    x = np.log1p(np.maximum(np.array(dense, dtype=np.float64).reshape(-1, NDENSE), 0))
    c = np.array(cats, dtype=np.uint64).reshape(-1, NCAT)
    if hashed:
        c = criteo_hash(c)
    idx = (c % np.array(sizes, dtype=np.uint64)).astype(np.int64)
    return torch.from_numpy(y), torch.from_numpy(x.astype(np.float32)), torch.from_numpy(idx)


class DLRM(torch.nn.Module):
    def __init__(self, a):
        super().__init__()
        D = a.dim
        self.emb = torch.nn.ModuleList()
        for t in range(NCAT):
            e = torch.nn.EmbeddingBag(a.sizes[t], D, mode="sum", sparse=True)
            bound = np.float32(math.sqrt(1.0 / a.sizes[t]))
            e.weight.data = torch.from_numpy(uniform(a.sizes[t], D, -bound, bound, a.seed + t))
            self.emb.append(e)
        nv = NCAT + 1
        self.li = torch.tensor([i for i in range(nv) for j in range(i)])
        self.lj = torch.tensor([j for i in range(nv) for j in range(i)])
        self.bot = self.mlp([NDENSE] + a.bot + [D], 0, a.seed, relu_last=True)
        self.top = self.mlp([D + nv * (nv - 1) // 2] + a.top + [1], len(a.bot) + 1, a.seed,
                            relu_last=False)

    @staticmethod
    def mlp(dims, first, seed, relu_last):
        layers = []
        for l in range(len(dims) - 1):
            fin, fout = dims[l], dims[l + 1]
            lin = torch.nn.Linear(fin, fout)
            wb = np.sqrt(np.float32(6.0) / np.float32(fin + fout))
            bb = np.sqrt(np.float32(3.0) / np.float32(fout))
            lin.weight.data = torch.from_numpy(uniform(fout, fin, -wb, wb, seed + 100 + first + l))
            lin.bias.data = torch.from_numpy(uniform(1, fout, -bb, bb, seed + 200 + first + l)[0])
            layers.append(lin)
            if l < len(dims) - 2 or relu_last:
                layers.append(torch.nn.ReLU())
        return torch.nn.Sequential(*layers)

    def forward(self, dense, idx, offsets):
        x = self.bot(dense)
        z = torch.stack([x] + [e(idx[:, t], offsets) for t, e in enumerate(self.emb)], dim=1)
        t = torch.bmm(z, z.transpose(1, 2))
        r = torch.cat([x, t[:, self.li, self.lj]], dim=1)
        return self.top(r).squeeze(1)


def auc(scores, labels):
    order = np.argsort(scores, kind="mergesort")
    s, y = scores[order], labels[order]
    _, start, counts = np.unique(s, return_index=True, return_counts=True)
    ranks = np.repeat(start + (counts + 1) / 2.0, counts)  # mean 1-based rank of ties
    pos = y.sum()
    neg = len(y) - pos
    return float((ranks[y > 0].sum() - pos * (pos + 1) / 2) / (pos * neg))


def blas_library():
    """The BLAS library torch runs (Debian's torch calls libblas.so.3, whichever BLAS the
    alternatives system puts behind it: OpenBLAS, BLIS or netlib's reference)."""
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "/" in line}
    for key in ("libblas", "openblas", "blis", "mkl_rt"):
        for p in sorted(paths):
            if key in os.path.basename(p):
                return os.path.realpath(p)
    return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--max-ind-range", type=int, default=None)
    ap.add_argument("--table-sizes", default=None)
    ap.add_argument("--hash", action="store_true")
    ap.add_argument("--optimizer", choices=["sgd", "adagrad"], default="adagrad")
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--bot", default="512-256-64")
    ap.add_argument("--top", default="512-256")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    cards = [int(x) for x in a.table_sizes.split(",")] if a.table_sizes else [0] * NCAT
    # as dlrm_train: the default range (100000) only for tables --table-sizes leaves out
    cap = a.max_ind_range or 100000
    a.sizes = [cap if c <= 0 else min(c, a.max_ind_range) if a.max_ind_range else c
               for c in cards]
    a.bot = [int(x) for x in a.bot.split("-") if x]
    a.top = [int(x) for x in a.top.split("-") if x]
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    print("dlrm_torch: torch %s, D %d, batch %d, %d epoch(s), %s lr %g, %d threads; BLAS: %s"
          % (torch.__version__, a.dim, a.batch, a.epochs, a.optimizer, a.lr,
             torch.get_num_threads(), blas_library()), flush=True)

    y, x, idx = read_criteo(a.train, a.sizes, a.hash)
    ty, tx, tidx = read_criteo(a.test, a.sizes, a.hash)
    model = DLRM(a)
    dense_params = list(model.bot.parameters()) + list(model.top.parameters())
    opt_mlp = torch.optim.SGD(dense_params, lr=a.lr)
    emb_params = list(model.emb.parameters())
    opt_emb = (torch.optim.Adagrad(emb_params, lr=a.lr) if a.optimizer == "adagrad"
               else torch.optim.SGD(emb_params, lr=a.lr))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    n = len(y)
    batches = [(x[s:s + a.batch], idx[s:s + a.batch].contiguous(), y[s:s + a.batch],
                torch.arange(min(a.batch, n - s))) for s in range(0, n, a.batch)]
    train_time = 0.0
    for epoch in range(a.epochs):
        t0 = time.perf_counter()
        total = 0.0
        for bx, bi, by, off in batches:
            opt_mlp.zero_grad(set_to_none=True)
            opt_emb.zero_grad(set_to_none=True)
            loss = loss_fn(model(bx, bi, off), by)
            loss.backward()
            opt_mlp.step()
            opt_emb.step()
            total += loss.item() * len(by)
        dt = time.perf_counter() - t0
        train_time += dt
        print("epoch %d: %d samples, train loss %.4f, %.0f samples/s"
              % (epoch + 1, n, total / max(n, 1), n / dt), flush=True)
    with torch.no_grad():
        logits = torch.cat([model(tx[s:s + a.batch], tidx[s:s + a.batch].contiguous(),
                                  torch.arange(min(a.batch, len(ty) - s)))
                            for s in range(0, len(ty), a.batch)]).double().numpy()
    lab = ty.double().numpy()
    logloss = float(np.mean(np.logaddexp(0, logits) - lab * logits))
    print("test auc=%.6f logloss=%.6f samples_per_s=%.1f"
          % (auc(logits.astype(np.float32), lab), logloss, n * a.epochs / max(train_time, 1e-9)))


if __name__ == "__main__":
    main()
