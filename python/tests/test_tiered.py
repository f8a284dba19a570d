# SPDX-License-Identifier: BSD-2-Clause
"""Tiered tables from Python (Table.tiered): a Collection trained over tiered tables (f32
and int8, caches of a few rows) gives the bits of the same tables in memory; lookups,
to_float, flush and the counters; a file in a missing folder raises NotFoundError naming it."""
import os

import numpy as np
import pytest

import embtables as et


def _train(tables, opt, steps=4):
    c = et.Collection(tables, "sum", "prealloc-concat", 2, opt)
    rng = np.random.default_rng(3)
    outs = []
    for _ in range(steps):
        ids = [rng.integers(0, t.num_embeddings, (32, 5)) for t in tables]
        out = np.empty((32, sum(t.dim for t in tables)), np.float32)
        step = c.forward(0, ids, None, None, out)
        outs.append(out.copy())
        c.backward(step, rng.standard_normal(out.shape).astype(np.float32))
    return outs


@pytest.mark.parametrize("dtype", ["f32", "int8"])
@pytest.mark.parametrize("kind", ["sgd", "adagrad", "adam"])
def test_tiered_collection_gives_the_bits_of_memory(tmp_path, dtype, kind):
    shapes = [(300, 16), (90, 8)]
    init = ("uniform", -0.5, 0.5)
    mem = [et.Table.create(n, d, dtype, name=f"t{i}", init=init, seed=i)
           for i, (n, d) in enumerate(shapes)]
    tier = [et.Table.tiered(tmp_path / f"t{i}", n, d, dtype, cache_bytes=1024,
                            optimizer=kind, name=f"t{i}", init=init, seed=i)
            for i, (n, d) in enumerate(shapes)]
    want = _train(mem, et.Optimizer(kind, lr=0.05))
    got = _train(tier, et.Optimizer(kind, lr=0.05))
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)
    for m, t in zip(mem, tier):
        np.testing.assert_array_equal(m.to_float(), t.to_float())
        np.testing.assert_array_equal(m.lookup(np.arange(m.num_embeddings)[:, None]),
                                      t.lookup(np.arange(t.num_embeddings)[:, None]))
        st = t.tiered_stats()
        assert st["misses"] > 0 and st["rows_written"] > 0 and st["cache_rows"] < t.num_embeddings
        t.flush()


def test_tiered_errors(tmp_path):
    with pytest.raises(et.NotFoundError, match="nowhere"):
        et.Table.tiered(tmp_path / "nowhere" / "t", 10, 4)
    with pytest.raises(et.InvalidError):
        et.Table.tiered(tmp_path / "t", 10, 4, optimizer="lion")
    t = et.Table.tiered(tmp_path / "t", 10, 4)
    with pytest.raises(BufferError):
        t.numpy()
    with pytest.raises(et.InvalidError):
        et.Table.create(10, 4).flush()


def test_tiered_file_cut_or_shared(tmp_path):
    """A save of a file cut by another process raises FileError naming it (it was a
    SIGBUS); a second table on the same file raises Error naming it (EMB_EBUSY)."""
    path = tmp_path / "cut"
    t = et.Table.tiered(path, 3000, 16)
    t.flush()
    with pytest.raises(et.Error, match="in use"):
        et.Table.tiered(path, 10, 4)
    os.truncate(path, 4096 + 100 * 64)
    with pytest.raises(et.FileError, match=str(path)):
        et.Saver(tmp_path, {"t": t}).save(1)
