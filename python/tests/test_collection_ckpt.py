# SPDX-License-Identifier: BSD-2-Clause
"""Collection.save / restore (emb_collection_save / _restore): a round trip is bit-identical
and trains on to the same bits, full_every writes deltas whose chain restores, and a bad
path raises the library's error naming the file, leaving the tables as they were."""
import os

import numpy as np
import pytest

import embtables as et

SIZES = [(300, 8), (120, 16)]


def fresh(seed=0, full_every=0):
    tables = [et.Table.create(n, d, name=f"t{i}", seed=seed + i)
              for i, (n, d) in enumerate(SIZES)]
    return et.Collection(tables, "sum", optimizer=et.Optimizer("adam", lr=0.05),
                         full_every=full_every)


def train(c, rng, n):
    for _ in range(n):
        ids = [rng.integers(0, 40, 12).astype(np.int64) for _ in SIZES]
        offs = [np.arange(0, 12, 3, dtype=np.int64) for _ in SIZES]
        out = np.zeros((4, c.width), np.float32)
        step = c.forward(0, ids, offs, None, out)
        c.backward(step, rng.standard_normal((4, c.width)).astype(np.float32))


def weights(c):
    return [t.to_float() for t in c.tables]


def same(a, b):
    for x, y in zip(weights(a), weights(b)):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("full_every", [0, 3])
def test_round_trip_then_train_on_bit_identical(tmp_path, full_every):
    straight = fresh(full_every=full_every)
    rng = np.random.default_rng(1)
    paths = []
    for s in range(4):
        train(straight, rng, 2)
        paths.append(straight.save(tmp_path, s, prefix="m", max_to_keep=0))
    assert paths[3] == str(tmp_path / "m-3.safetensors")
    assert et.latest_checkpoint(tmp_path) == paths[3]
    ck = et.read_checkpoint(paths[3]).tensors
    assert ("t0/delta.ids" in ck) == (full_every > 0)     # a delta of the rows touched
    if full_every:
        assert os.path.getsize(paths[3]) * 2 < os.path.getsize(paths[0])
    resumed = fresh(seed=7)
    assert resumed.restore(paths[3]) == 3
    same(straight, resumed)
    train(straight, np.random.default_rng(2), 3)
    train(resumed, np.random.default_rng(2), 3)
    same(straight, resumed)                               # the Adam state came back too


def test_bad_path_raises_naming_the_file_and_changes_nothing(tmp_path):
    c = fresh()
    before = weights(c)
    missing = tmp_path / "nowhere-5.safetensors"
    with pytest.raises(et.Error, match="nowhere-5.safetensors"):
        c.restore(missing)
    bad = tmp_path / "junk-1.safetensors"
    bad.write_bytes(b"not a checkpoint at all")
    with pytest.raises(et.FileError, match="junk-1.safetensors"):
        c.restore(bad)
    for x, y in zip(before, weights(c)):
        np.testing.assert_array_equal(x, y)
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    with pytest.raises(et.Error, match="file"):
        c.save(blocker / "sub", 1)                        # a directory under a file
