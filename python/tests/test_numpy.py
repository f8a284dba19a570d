# SPDX-License-Identifier: BSD-2-Clause
"""embtables from numpy: zero-copy tables, lookups against torch's embedding_bag, the
safe-lookup options, maplookup's forms, strategies and thread counts, errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import embtables as et

RNG = np.random.default_rng(1234)


def rand_table(n=40, d=8):
    return RNG.standard_normal((n, d)).astype(np.float32)


def rand_bags(n, nbags, maxlen=5):
    lens = RNG.integers(0, maxlen + 1, nbags)
    off = np.zeros(nbags + 1, dtype=np.int64)
    np.cumsum(lens, out=off[1:])
    return RNG.integers(0, n, off[-1]).astype(np.int64), off


def test_zero_copy_numpy_both_ways():
    w = rand_table()
    t = et.Table(w)
    w[5] = 2.0                                          # a write to the array ...
    np.testing.assert_array_equal(t.lookup(np.array([5]))[0], np.full(8, 2.0))  # ... is seen
    assert t.numpy() is w
    row7 = w[7].copy()
    et.Optimizer("sgd", lr=1.0).apply_sparse(t, np.array([7, 7]), np.ones((2, 8), np.float32))
    np.testing.assert_array_equal(w[7], row7 - 2.0)     # the table's writes land in w


def test_zero_copy_strided_rows_and_torch():
    big = rand_table(30, 12)
    t = et.Table(big[:, :8])                             # rows 12 apart, 8 used
    ids = np.array([1, 2, 29])
    np.testing.assert_array_equal(t.lookup(ids, np.array([0, 2])),
                                  np.stack([big[1, :8] + big[2, :8], big[29, :8]]))
    x = torch.zeros(10, 4)
    tt = et.Table(x)
    x[3] += 1.5
    assert torch.equal(tt.lookup(torch.tensor([3, 3]), torch.tensor([0]))[0], torch.full((4,), 3.0))
    et.Optimizer("sgd", lr=0.5).apply_sparse(tt, np.array([0]), np.ones((1, 4), np.float32))
    assert torch.equal(x[0], torch.full((4,), -0.5))


def test_owned_table_view_and_init():
    t = et.Table.create(100, 16, init=("uniform", -0.5, 0.5), seed=7)
    a = t.numpy()
    assert a.shape == (100, 16) and a.min() >= -0.5 and a.max() < 0.5
    a[0] = 1.0
    np.testing.assert_array_equal(t.lookup(np.array([0]))[0], np.ones(16))
    t2 = et.Table.create(100, 16, init=("uniform", -0.5, 0.5), seed=7)
    np.testing.assert_array_equal(t2.numpy()[1:], a[1:])


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_lookup_matches_torch(mode, weighted):
    w = rand_table()
    ids, off = rand_bags(40, 9)
    psw = RNG.random(len(ids)).astype(np.float32) if weighted else None
    got = et.lookup(w, ids, off[:-1], psw, mode=mode)
    if weighted and mode == "mean":  # torch's per_sample_weights need mode='sum'
        ref = np.stack([(psw[a:b, None] * w[ids[a:b]]).sum(0) / max(psw[a:b].sum(), 1e-30)
                        for a, b in zip(off[:-1], off[1:])])
    else:
        ref = F.embedding_bag(torch.from_numpy(ids), torch.from_numpy(w), torch.from_numpy(off[:-1]),
                              mode=mode, per_sample_weights=None if psw is None else
                              torch.from_numpy(psw)).numpy()
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5)
    # include_last_offset, int32 ids, and a torch input giving a torch output
    got2 = et.lookup(w, torch.from_numpy(ids.astype(np.int32)), torch.from_numpy(off), psw,
                     mode=mode, include_last_offset=True)
    assert isinstance(got2, torch.Tensor)
    np.testing.assert_array_equal(got2.numpy(), got)


def test_lookup_sqrtn_fixed_bags_gather_max_norm():
    w = rand_table()
    ids = RNG.integers(0, 40, (6, 3))
    got = et.lookup(w, ids, mode="sqrtn")
    np.testing.assert_allclose(got, w[ids].sum(1) / np.sqrt(3), atol=1e-5)
    np.testing.assert_array_equal(et.lookup(w, ids[:, 0], mode="none"), w[ids[:, 0]])
    ref = F.embedding_bag(torch.from_numpy(ids), torch.from_numpy(w.copy()), mode="sum",
                          max_norm=1.0)
    np.testing.assert_allclose(et.lookup(w, ids, max_norm=1.0), ref.numpy(), atol=1e-5)


def test_jagged_and_safe_lookup():
    w = rand_table()
    values = np.array([1, -1, 2, 3, 4])
    lengths = np.array([2, 0, 1, 2])
    psw = np.array([1.0, 1.0, 0.0, 2.0, -1.0], np.float32)
    got = et.lookup_jagged(w, values, lengths, psw, prune_invalid=True,
                           prune_nonpositive_weights=True, default_id=0)
    np.testing.assert_allclose(got, np.stack([w[1], w[0], w[0], 2 * w[3]]), atol=1e-6)
    with pytest.raises(et.RangeError):
        et.lookup_jagged(w, values, lengths)            # -1 without pruning


def test_bad_ids_raise_and_write_nothing():
    w = rand_table()
    t = et.Table(w, name="user_id")
    out = np.full((2, 8), 7.0, np.float32)
    with pytest.raises(et.RangeError) as e:
        t.lookup(np.array([3, 40]), np.array([0, 1]), out=out)
    assert "40" in str(e.value) and "user_id" in str(e.value) and e.value.code == -4
    assert isinstance(e.value, IndexError) and np.all(out == 7.0)
    before = w.copy()
    opt = et.Optimizer("adagrad", lr=0.1)
    with pytest.raises(et.RangeError):
        opt.apply_sparse(t, np.array([1, 2, 99]), np.ones((3, 8), np.float32))
    np.testing.assert_array_equal(w, before)
    with pytest.raises(et.InvalidError):
        t.lookup(np.array([1, 2]), np.array([0, 3]), include_last_offset=True)
    with pytest.raises(et.InvalidError):  # MAX takes no per-id weights
        t.lookup(np.array([1, 2]), np.array([0]), per_sample_weights=np.ones(2, np.float32),
                 mode="max")


def test_maplookup_forms_strategies_threads():
    tables = [rand_table(50, d) for d in (4, 8, 16)]
    batches = [rand_bags(50, 33) for _ in tables]
    ids = [b[0] for b in batches]
    offs = [b[1] for b in batches]
    ref = np.concatenate([et.lookup(t, i, o[:-1], mode="mean") for t, i, o in
                          zip(tables, ids, offs)], axis=1)
    flat_off = np.concatenate([offs[0]] + [o[1:] + sum(len(i) for i in ids[:k])
                                           for k, o in enumerate(offs) if k > 0])
    lengths = np.concatenate([np.diff(o) for o in offs])
    for strategy in ("sequential", "parallel", "prealloc-concat"):
        for threads in (1, 2, 3):
            kw = dict(mode="mean", strategy=strategy, threads=threads)
            np.testing.assert_array_equal(et.maplookup(tables, ids, [o[:-1] for o in offs], **kw), ref)
            np.testing.assert_array_equal(et.maplookup(tables, np.concatenate(ids), flat_off, **kw), ref)
            np.testing.assert_array_equal(et.maplookup(tables, np.concatenate(ids),
                                                       lengths=lengths, **kw), ref)
    out = np.full((33, 5 + 28), 3.0, np.float32)
    et.maplookup(tables, ids, [o[:-1] for o in offs], mode="mean", out=out, prepend=5)
    assert np.all(out[:, :5] == 3.0)
    np.testing.assert_array_equal(out[:, 5:], ref)
    bad = list(ids)
    bad[2] = bad[2].copy()
    bad[2][0] = -3
    out[:] = 1.0
    with pytest.raises(et.RangeError, match=r"tables\[2\]"):
        et.maplookup(tables, bad, [o[:-1] for o in offs], out=out)
    assert np.all(out == 1.0)


def test_training_bits_independent_of_threads():
    results = []
    for strategy, threads in (("sequential", 1), ("parallel", 2), ("prealloc-concat", 3)):
        tables = [np.random.default_rng(5).standard_normal((60, d)).astype(np.float32)
                  for d in (8, 16)]
        c = et.Collection(tables, "sum", strategy, threads, et.Optimizer("adagrad", lr=0.1))
        rng = np.random.default_rng(9)
        for _ in range(3):
            ids = [rng.integers(0, 60, 64) for _ in tables]
            out = np.empty((64, 24), np.float32)
            step = c.forward(0, ids, None, None, out)
            c.backward(step, rng.standard_normal((64, 24)).astype(np.float32))
        results.append(tables)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


def test_half_tables():
    w = rand_table()
    t = et.Table(w.astype(np.float16))
    ids, off = rand_bags(40, 5)
    np.testing.assert_allclose(t.lookup(ids, off[:-1]), et.lookup(w, ids, off[:-1]), atol=2e-2)
    tb = torch.from_numpy(w).to(torch.bfloat16)
    got = et.lookup(tb, torch.from_numpy(ids), torch.from_numpy(off[:-1]))
    ref = F.embedding_bag(torch.from_numpy(ids), tb.float(), torch.from_numpy(off[:-1]), mode="sum")
    torch.testing.assert_close(got, ref, rtol=0, atol=1e-5)
    assert et.Table(tb).dtype == "bf16"
