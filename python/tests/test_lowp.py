# SPDX-License-Identifier: BSD-2-Clause
"""Low-precision optimizer state (state_dtype) and stochastic rounding of f16 / bf16 rows
from the Python module (issue 42)."""
import numpy as np
import pytest

import embtables as et


def _grads(step, n=40, d=8, rows=30, scale=1.0):
    rng = np.random.default_rng(step)
    return (rng.integers(0, rows, n).astype(np.int64),
            (rng.standard_normal((n, d)) * scale).astype(np.float32))


def test_state_dtype_halves_the_state_and_trains_close_to_f32():
    w0 = np.random.default_rng(0).uniform(-1, 1, (30, 8)).astype(np.float32)
    tables, states = {}, {}
    for sdt in ("f32", "bf16", "f16"):
        t = et.Table(w0.copy())
        opt = et.Optimizer("adam", lr=0.01, state_dtype=sdt)
        for k in range(20):
            opt.apply_sparse(t, *_grads(k))
        tables[sdt], states[sdt] = t.to_float(), opt.state(t)[0]
    assert states["f32"].itemsize == 4
    assert states["bf16"].itemsize == 2 and states["f16"].itemsize == 2
    assert states["bf16"].nbytes * 2 == states["f32"].nbytes
    moved = np.abs(tables["f32"] - w0).sum()
    for sdt in ("bf16", "f16"):
        diff = np.abs(tables[sdt] - tables["f32"]).sum()
        assert 0 < diff < 0.05 * moved, sdt


def test_stochastic_rounding_moves_bf16_rows_that_nearest_leaves():
    def run(sr):
        t = et.Table.create(30, 8, dtype="bf16", init=("constant", 1.0))
        opt = et.Optimizer("sgd", lr=1e-4, stochastic_rounding=sr)
        for k in range(200):
            ids = np.arange(30, dtype=np.int64)
            opt.apply_sparse(t, ids, np.ones((30, 8), np.float32))
        return t.to_float()
    nearest, sr, again = run(False), run(True), run(True)
    assert np.all(nearest == 1.0)                  # 1e-4 steps vanish to nearest
    np.testing.assert_array_equal(sr, again)       # the same bits every run
    assert abs(sr.mean() - (1.0 - 200 * 1e-4)) < 0.002


def test_bad_state_dtype_is_refused():
    with pytest.raises(et.InvalidError):
        et.Optimizer("adam", lr=0.01, state_dtype="int8")
    with pytest.raises(et.InvalidError):
        et.Optimizer("adam", lr=0.01, state_dtype="f64")
