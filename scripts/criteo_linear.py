#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""criteo_linear.py: the linear baseline on Criteo-format files, what a DLRM must beat.

Hashed logistic regression: the 26 categorical values hashed (per table) into 2^22
weights, the 13 dense features as DLRM transforms them (log(1 + max(x, 0)), then
standardised), a bias; Adagrad, batch 64, --epochs passes in file order. The last line
of stdout has dlrm_train's form:  test auc=<x> logloss=<y>
Usage: criteo_linear.py [--lr X (0.1)] [--epochs N (2)] TRAIN TEST
Needs numpy (Debian: python3-numpy; run with /usr/bin/python3).
"""
import argparse
import gzip

import numpy as np

NDENSE, NCAT, HASH = 13, 26, 1 << 22


def read(path):
    y, dense, cat = [], [], []
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    with (gzip.open(path, "rt") if gz else open(path)) as f:
        for line in f:
            v = line.rstrip("\r\n").split("\t")
            if len(v) != 1 + NDENSE + NCAT:
                continue
            y.append(int(v[0]))
            dense.append([np.log1p(max(int(x), 0)) if x else 0.0 for x in v[1:1 + NDENSE]])
            cat.append([int(x, 16) if x else 0 for x in v[1 + NDENSE:]])
    cat = np.array(cat, np.int64)
    slots = (cat * 2654435761 + np.arange(NCAT) * 1000003) % HASH  # per-table hashing
    return np.array(y, np.float64), np.array(dense), slots


def auc(scores, labels):
    order = np.argsort(scores, kind="mergesort")
    s, y = scores[order], labels[order]
    _, start, counts = np.unique(s, return_index=True, return_counts=True)
    ranks = np.repeat(start + (counts + 1) / 2.0, counts)  # mean 1-based rank of ties
    pos = y.sum()
    return float((ranks[y > 0].sum() - pos * (pos + 1) / 2) / (pos * (len(y) - pos)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("train")
    ap.add_argument("test")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--epochs", type=int, default=2)
    a = ap.parse_args()
    y, x, idx = read(a.train)
    ty, tx, tidx = read(a.test)
    mean, std = x.mean(0), x.std(0) + 1e-6
    x, tx = (x - mean) / std, (tx - mean) / std
    w, wd, b = np.zeros(HASH), np.zeros(NDENSE), np.zeros(1)
    gw, gwd, gb = np.full(HASH, 1e-8), np.full(NDENSE, 1e-8), np.full(1, 1e-8)
    for _ in range(a.epochs):
        for s in range(0, len(y), 64):
            ii, xx, yy = idx[s:s + 64], x[s:s + 64], y[s:s + 64]
            g = 1 / (1 + np.exp(-(w[ii].sum(1) + xx @ wd + b))) - yy
            u, inv = np.unique(ii, return_inverse=True)
            gu = np.bincount(inv.ravel(), np.repeat(g, NCAT), len(u))
            gw[u] += gu * gu
            w[u] -= a.lr * gu / np.sqrt(gw[u])
            gd = xx.T @ g
            gwd += gd * gd
            wd -= a.lr * gd / np.sqrt(gwd)
            gb += g.sum() ** 2
            b -= a.lr * g.sum() / np.sqrt(gb)
    z = w[tidx].sum(1) + tx @ wd + b
    print("test auc=%.6f logloss=%.6f" % (auc(z, ty), np.mean(np.logaddexp(0, z) - ty * z)))


if __name__ == "__main__":
    main()
