#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Writes Criteo-format click logs (label, 13 integers, 26 hex categoricals, TAB-separated,
empty fields for missing values) with a planted, learnable signal, and prints what the
signal allows: the Bayes-optimal AUC and log loss of the true click probabilities.

The planted model (fixed by --model-seed, so train and test files share it):
  logit = b + sum_k w_k (log(1 + max(I_k, 0)) - m_k)        13 dense features
            + sum_{t in informative} s_t[C_t]                per-value effects
            + sum_{(a, c) in pairs} g <u_a[C_a], u_c[C_c]>   rank-2 interactions
  label ~ Bernoulli(sigmoid(logit))
Category values are Zipf(1.1)-distributed over Criteo-Kaggle-like cardinalities (capped by
--max-card), drawn by the benchmarks' generator (scripts/bench_ids.py, the Python twin of
perf/bench_ids.c, tested to draw emb-bench's ids): value v of table t is rank v of its
Zipf (0 the most frequent, the same values in the training and the test file), from the
splitmix64 state 1000 S + t, S = 2 seed for the training file and 2 seed + 1 for the test
file; the values are written as 32-bit hashes in hex, as in the real logs; a missing value is an
empty field with effect 0. Everything the model uses is what a reader sees after DLRM's
transforms, so sigmoid(logit) is the Bayes-optimal predictor: no model can beat its AUC
in expectation (index collisions from --max-ind-range can only lower what is reachable).

Usage: criteo_gen.py [--rows N] [--test-rows M] [--seed S] [--model-seed S]
                     [--max-card C] TRAIN [TEST]   (a name ending in .gz: gzip-compressed)
Standard library only (any python3).
"""
import argparse
import gzip
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_ids  # noqa: E402  (beside this script)

KAGGLE_CARD = [1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683,
               8351593, 3194, 27, 14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15,
               286181, 105, 142572]
NDENSE, NCAT, RANK = 13, 26, 2
MASK32 = 0xFFFFFFFF


def hash32(t, v):
    """The hex value written for value v of table t (an invertible 32-bit mix)."""
    z = (v * 0x9E3779B1 + (t + 1) * 0x85EBCA77) & MASK32
    z ^= z >> 16
    z = (z * 0x7FEB352D) & MASK32
    z ^= z >> 15
    z = (z * 0x846CA68B) & MASK32
    return z ^ (z >> 16)


class Model:
    def __init__(self, seed, max_card):
        r = random.Random(seed)
        self.card = [min(c, max_card) for c in KAGGLE_CARD]
        # dense: log-normal counts, a missing rate, a weight
        self.dense_mu = [r.uniform(0.5, 3.0) for _ in range(NDENSE)]
        self.dense_sigma = [r.uniform(0.5, 1.5) for _ in range(NDENSE)]
        self.dense_miss = [r.choice([0.0, 0.05, 0.2, 0.4]) for _ in range(NDENSE)]
        self.dense_w = [r.gauss(0, 0.25) for _ in range(NDENSE)]
        self.dense_m = [mu for mu in self.dense_mu]  # centre of log1p(x), roughly
        # categorical: Zipf(1.1) over the values (the samples' ids: bench_ids), a missing rate
        self.cat_miss = [r.choice([0.0, 0.0, 0.03, 0.15]) for _ in range(NCAT)]
        self.informative = sorted(r.sample(range(NCAT), 14))
        self.effect = [[r.gauss(0, 0.45) for _ in range(c)] if t in self.informative else None
                       for t, c in enumerate(self.card)]
        self.pairs = [tuple(r.sample(self.informative, 2)) for _ in range(8)]
        in_pair = sorted({t for p in self.pairs for t in p})
        self.factor = {t: [[r.gauss(0, 0.8) for _ in range(RANK)] for _ in range(self.card[t])]
                       for t in in_pair}
        self.bias = -1.3

    def sample(self, r, ids):
        """One (fields, probability): fields as the strings of a line; ids: each table's
        source of values (ZipfValues)."""
        logit = self.bias
        fields = [None] * (1 + NDENSE + NCAT)
        for k in range(NDENSE):
            if r.random() < self.dense_miss[k]:
                fields[1 + k] = ""
                x = 0
            else:
                x = int(math.exp(r.gauss(self.dense_mu[k], self.dense_sigma[k]))) - 1
                if k == 1 and r.random() < 0.05:
                    x = -r.randint(1, 3)  # Criteo's I2 has small negatives
                fields[1 + k] = str(x)
            logit += self.dense_w[k] * (math.log1p(max(x, 0)) - self.dense_m[k])
        vals = [None] * NCAT
        for t in range(NCAT):
            if r.random() < self.cat_miss[t]:
                fields[1 + NDENSE + t] = ""
                continue
            v = ids[t].next()
            vals[t] = v
            fields[1 + NDENSE + t] = "%08x" % hash32(t, v)
            if self.effect[t] is not None:
                logit += self.effect[t][v]
        for a, c in self.pairs:
            if vals[a] is not None and vals[c] is not None:
                ua, uc = self.factor[a][vals[a]], self.factor[c][vals[c]]
                logit += 0.5 * sum(x * y for x, y in zip(ua, uc))
        p = 1.0 / (1.0 + math.exp(-logit))
        return fields, p


def auc(scores, labels):
    """Exact AUC (ties count one half) by sorting."""
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    npos = sum(labels)
    nneg = len(labels) - npos
    if npos == 0 or nneg == 0:
        return float("nan")
    rank_sum, i = 0.0, 0
    while i < len(order):
        j = i
        while j < len(order) and scores[order[j]] == scores[order[i]]:
            j += 1
        mid = (i + j + 1) / 2.0  # average 1-based rank of the tie group
        rank_sum += mid * sum(labels[order[k]] for k in range(i, j))
        i = j
    return (rank_sum - npos * (npos + 1) / 2.0) / (npos * nneg)


def expected_auc(p):
    """The AUC the scores p reach in expectation when label i ~ Bernoulli(p_i): the
    expected number of correctly ordered (positive, negative) pairs over the expected
    number of pairs (exact for large files)."""
    ps = sorted(p)
    num, den, neg_below, i = 0.0, 0.0, 0.0, 0
    total_neg = sum(1 - x for x in ps)
    while i < len(ps):
        j = i
        while j < len(ps) and ps[j] == ps[i]:
            j += 1
        grp_pos = sum(ps[i:j])
        grp_neg = (j - i) - grp_pos
        num += grp_pos * (neg_below + 0.5 * grp_neg)
        neg_below += grp_neg
        i = j
    den = sum(ps) * total_neg - sum(x * (1 - x) for x in ps)
    num -= 0.5 * sum(x * (1 - x) for x in ps)  # a sample is never paired with itself
    return num / den


class ZipfValues:
    """A table's values: the ranks of bench_ids' Zipf(1.1) over its card values (no
    scatter: the rank is the value, the same hot values in every file), from @seed."""

    def __init__(self, card, seed):
        self.zipf, self.state = bench_ids.Zipf(card, 1.1), [seed]

    def next(self):
        return self.zipf.rank(self.state)


def write(path, model, rows, seed):
    r = random.Random(seed)
    ids = [ZipfValues(c, 1000 * seed + t) for t, c in enumerate(model.card)]
    probs, labels = [], []
    opener = gzip.open if path.endswith(".gz") else open  # .gz: gzip-compressed
    with opener(path, "wt", newline="\n") as f:
        for _ in range(rows):
            fields, p = model.sample(r, ids)
            y = 1 if r.random() < p else 0
            fields[0] = str(y)
            f.write("\t".join(fields) + "\n")
            probs.append(p)
            labels.append(y)
    ll = -sum(math.log(p) if y else math.log(1 - p) for p, y in zip(probs, labels)) / max(rows, 1)
    print("%s: rows=%d ctr=%.4f bayes_auc=%.4f oracle_auc=%.4f oracle_logloss=%.4f"
          % (path, rows, sum(labels) / max(rows, 1), expected_auc(probs), auc(probs, labels), ll))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("train")
    ap.add_argument("test", nargs="?")
    ap.add_argument("--rows", type=int, default=100000, help="training rows (100000)")
    ap.add_argument("--test-rows", type=int, default=20000, help="test rows (20000)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the samples (1)")
    ap.add_argument("--model-seed", type=int, default=17, help="seed of the planted model (17)")
    ap.add_argument("--max-card", type=int, default=20000,
                    help="cap on each table's number of distinct values (20000)")
    a = ap.parse_args()
    if a.rows < 0 or a.test_rows < 0 or a.max_card < 1:
        sys.exit("criteo_gen.py: rows must be >= 0 and --max-card >= 1")
    model = Model(a.model_seed, a.max_card)
    write(a.train, model, a.rows, a.seed * 2)
    if a.test:
        write(a.test, model, a.test_rows, a.seed * 2 + 1)


if __name__ == "__main__":
    main()
