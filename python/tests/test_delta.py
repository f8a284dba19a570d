# SPDX-License-Identifier: BSD-2-Clause
"""Delta checkpoints from Python (issue 45): Saver(full_every=N) writes deltas of the rows
written since the previous save, a restore of a delta reads its chain bit for bit, and
Table.changed_since streams the rows written after a write count."""
import os

import numpy as np
import torch

import embtables as et
from embtables.torch import EmbeddingBagCollection

SIZES = [(400, 8), (250, 16)]


def steps(ebc, gen, n):
    for _ in range(n):
        ids = [torch.randint(0, 30, (12,), generator=gen) for _ in SIZES]
        offs = [torch.arange(0, 12, 3) for _ in SIZES]
        out = ebc(ids, offs)
        out.backward(torch.randn(out.shape, generator=gen))


def fresh(seed=0):
    return EmbeddingBagCollection([torch.randn(n, d, generator=torch.Generator().manual_seed(n + seed))
                                   for n, d in SIZES], optimizer="adam", lr=0.05)


def test_full_every_writes_deltas_that_restore_bit_for_bit(tmp_path):
    straight = fresh()
    saver = straight.saver(tmp_path, full_every=3, max_to_keep=0)
    gen = torch.Generator().manual_seed(1)
    paths = []
    for s in range(4):
        steps(straight, gen, 2)
        paths.append(saver.save(s))
    full, delta = (os.path.getsize(p) for p in (paths[0], paths[3]))
    assert delta * 4 < full, "a delta holds the rows written since the previous save"
    ck = et.read_checkpoint(paths[3])                    # numpy alone reads a delta too
    ids = ck.tensors["table_0/delta.ids"].reshape(-1)
    assert 0 < len(ids) <= 30 and np.all(np.diff(ids) > 0)
    assert "table_0/delta.ids" not in et.read_checkpoint(paths[0]).tensors
    resumed = fresh(seed=7)
    assert resumed.restore(paths[3]) == 3                # the full file and its chain
    for a, b in zip(straight.weights, resumed.weights):
        assert torch.equal(a, b)
    steps(straight, torch.Generator().manual_seed(2), 2)
    steps(resumed, torch.Generator().manual_seed(2), 2)
    for a, b in zip(straight.weights, resumed.weights):
        assert torch.equal(a, b)                         # the Adam state came back too


def test_full_every_numpy_saver_and_a_missing_link(tmp_path):
    t = et.Table.create(50, 4, name="w", seed=3)
    opt = et.Optimizer("adagrad", lr=0.1)
    saver = et.Saver(tmp_path, {"w": t}, opt, prefix="m", max_to_keep=0, full_every=5)
    for s in range(3):
        opt.apply_sparse(t, np.array([s, 10 + s]), np.ones((2, 4), np.float32))
        saver.save(s)
    assert len(et.read_checkpoint(tmp_path / "m-2.safetensors").tensors["w/delta.ids"]) == 2
    want = t.to_float()
    back = et.Table.create(50, 4, name="w", seed=9)
    assert et.restore(tmp_path / "m-2.safetensors", {"w": back}, et.Optimizer("adagrad", lr=0.1)) == 2
    np.testing.assert_array_equal(back.to_float(), want)
    os.unlink(tmp_path / "m-1.safetensors")
    other = et.Table.create(50, 4, name="w", seed=9)
    before = other.to_float()
    try:
        et.restore(tmp_path / "m-2.safetensors", {"w": other})
        raise AssertionError("a chain with a missing link restored")
    except et.Error as e:
        assert "m-1.safetensors" in str(e)
    np.testing.assert_array_equal(other.to_float(), before)


def test_changed_since_streams_the_rows_written_after_a_write_count():
    t = et.Table.create(100, 8, seed=1)
    ids, rows, now = t.changed_since(0)                  # the first call: every row
    assert len(ids) == 100 and rows.shape == (100, 8)
    opt = et.Optimizer("sgd", lr=0.5)
    opt.apply_sparse(t, np.array([42, 7, 42]), np.ones((3, 8), np.float32))
    ids, rows, later = t.changed_since(now)
    assert list(ids) == [7, 42] and later > now
    np.testing.assert_array_equal(rows, t.to_float()[[7, 42]])
    ids, rows, _ = t.changed_since(later)
    assert len(ids) == 0 and rows.shape == (0, 8)
