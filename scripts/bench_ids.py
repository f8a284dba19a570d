#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The benchmarks' generator of ids (perf/bench_ids.c) in Python, for the examples' data
generator (scripts/criteo_gen.py): the same method, so the same ids for the same seed.

  uniform: splitmix64(state) mod rows.
  zipf:S:  rank k in 1..n with probability k^-S / H(n, S), drawn exactly by
           rejection-inversion (Hoermann & Derflinger, ACM TOMACS 6(3), 1996), then
           scattered over the rows as ((k - 1) * (2^31 - 1) + shift) mod rows.

IdGen(kind, rows, s, seed) is one table's source; row(state) its next row, where state is
a one-element list holding the splitmix64 state (advanced in place); Ids(kind, rows, s,
seed).next() gives the ids `emb-bench ids` writes for those options, in order. As a command it
prints what `emb-bench ids ... --out FILE.txt` writes (one id a line), so a test can
check that the two agree:

  bench_ids.py --rows N --count M [--ids uniform|zipf:S] [--seed X]
Standard library only (any python3).
"""
import argparse
import math
import sys

M64 = (1 << 64) - 1
RANK_MULT = 2147483647  # 2^31 - 1, prime: rank * P + shift mod rows permutes


def splitmix(state):
    """splitmix64's next value; state is a one-element list, advanced in place."""
    state[0] = (state[0] + 0x9E3779B97F4A7C15) & M64
    z = state[0]
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def _helper1(x):
    return math.log1p(x) / x if abs(x) > 1e-8 else 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x))


def _helper2(x):
    return math.expm1(x) / x if abs(x) > 1e-8 else 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x))


class Zipf:
    """Zipf(s) over ranks 1..n by rejection-inversion (perf/bench_ids.c's constants)."""

    def __init__(self, n, s):
        self.s, self.n = s, n
        self.hx1 = self._hint(1.5) - 1
        self.hn = self._hint(n + 0.5)
        self.sq = 2 - self._hinv(self._hint(2.5) - self._h(2))

    def _h(self, x):
        return math.exp(-self.s * math.log(x))

    def _hint(self, x):
        lx = math.log(x)
        return _helper2((1 - self.s) * lx) * lx

    def _hinv(self, x):
        t = max(x * (1 - self.s), -1.0)
        return math.exp(_helper1(t) * x)

    def rank(self, state):
        """A rank in [0, n): 0 is the most frequent."""
        while True:
            u = self.hn + (splitmix(state) >> 11) * 2.0 ** -53 * (self.hx1 - self.hn)
            x = self._hinv(u)
            k = min(max(int(x + 0.5), 1), self.n)
            if k - x <= self.sq or u >= self._hint(k + 0.5) - self._h(k):
                return k - 1


class IdGen:
    """One table's source of rows in [0, rows): 'uniform' or 'zipf' (exponent s)."""

    def __init__(self, kind, rows, s, seed):
        self.kind, self.rows = kind, rows
        self.zipf = Zipf(rows, s if kind == "zipf" else 1.0)
        self.shift = splitmix([seed & M64]) % rows

    def row(self, state):
        if self.kind == "zipf":
            return (self.zipf.rank(state) * RANK_MULT + self.shift) % self.rows
        return splitmix(state) % self.rows


class Ids:
    """The ids `emb-bench ids --rows rows --ids kind[:s] --seed seed` writes, one by one."""

    def __init__(self, kind, rows, s, seed):
        self.gen, self.state = IdGen(kind, rows, s, seed), [(seed ^ 0x6964735F) & M64]

    def next(self):
        return self.gen.row(self.state)


def ids(kind, rows, s, seed, count):
    """The count ids `emb-bench ids` writes for these options."""
    src = Ids(kind, rows, s, seed)
    return [src.next() for _ in range(count)]


def main():
    ap = argparse.ArgumentParser(description="the ids `emb-bench ids` writes, one a line")
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--ids", default="zipf:1.05", help="uniform or zipf:S (zipf:1.05)")
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    if a.ids == "uniform":
        kind, s = "uniform", 1.0
    elif a.ids.startswith("zipf:") and float(a.ids[5:]) > 0:
        kind, s = "zipf", float(a.ids[5:])
    else:
        sys.exit("bench_ids.py: --ids uniform or zipf:S (S > 0)")
    if a.rows < 1 or a.count < 1:
        sys.exit("bench_ids.py: --rows and --count must be >= 1")
    sys.stdout.write("".join("%d\n" % i for i in ids(kind, a.rows, s, a.seed, a.count)))


if __name__ == "__main__":
    main()
