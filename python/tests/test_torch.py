# SPDX-License-Identifier: BSD-2-Clause
"""embtables.torch.EmbeddingBagCollection against torch.nn.EmbeddingBag + torch.optim:
pooled outputs and weights after 10 training steps within 1e-5, for every combiner and
optimizer; the fused contract (no weight gradient), plain mode's sparse gradients, the
input forms, lr changes, errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import embtables as et
from embtables.torch import EmbeddingBagCollection

SIZES = [(50, 8), (30, 4), (20, 16)]
B = 8
TOL = dict(rtol=0, atol=1e-5)


@pytest.fixture(autouse=True)
def _seeded():
    """nn.EmbeddingBag draws its weights from torch's global generator: seed it, so that
    every test starts from the same weights on every run (Adam's step amplifies the order
    of a nearly cancelling gradient sum: random weights made one element in thousands of
    runs differ by 4e-5)."""
    torch.manual_seed(1234)


def batch(gen, maxlen=4, weighted=False):
    ids, offs, wts = [], [], []
    for n, _ in SIZES:
        lens = torch.randint(0, maxlen + 1, (B,), generator=gen)
        off = torch.zeros(B + 1, dtype=torch.int64)
        off[1:] = torch.cumsum(lens, 0)
        ids.append(torch.randint(0, n, (int(off[-1]),), generator=gen))
        offs.append(off[:-1].clone())
        wts.append(torch.rand(int(off[-1]), generator=gen) + 0.1 if weighted else None)
    return ids, offs, (wts if weighted else None)


def combiner_weights(ids, off, w, mode):
    """per-id weights that make torch's mode='sum' compute mean / sqrtn (constants)."""
    w = torch.ones(len(ids)) if w is None else w
    if mode == "sum":
        return w
    ends = torch.cat([off[1:], torch.tensor([len(ids)])])
    bag = torch.repeat_interleave(torch.arange(len(off)), ends - off)
    s = torch.zeros(len(off)).index_add_(0, bag, w if mode == "mean" else w * w)
    return w / (s if mode == "mean" else s.sqrt())[bag]


class RowwiseAdagrad:
    """FBGEMM's row-wise Adagrad on coalesced sparse gradients (the reference)."""

    def __init__(self, params, lr, eps=1e-10):
        self.params, self.lr, self.eps = params, lr, eps
        self.h = [torch.zeros(p.shape[0]) for p in params]

    def step(self):
        with torch.no_grad():
            for p, h in zip(self.params, self.h):
                g = p.grad.coalesce()
                rows, vals = g.indices()[0], g.values()
                h[rows] += (vals * vals).mean(1)
                p[rows] -= self.lr * vals / (h[rows].sqrt() + self.eps)[:, None]

    def zero_grad(self):
        for p in self.params:
            p.grad = None


def torch_optimizer(name, params, lr):
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr)
    if name == "adagrad":
        return torch.optim.Adagrad(params, lr=lr)
    if name == "adam":
        return torch.optim.SparseAdam(params, lr=lr)
    return RowwiseAdagrad(params, lr)


FORMS = ("lists", "flat", "jagged", "kjt")


class KJT:
    """TorchRec's KeyedJaggedTensor, as far as the module reads it."""

    def __init__(self, values, lengths, weights):
        self._v, self._l, self._w = values, lengths, weights

    def values(self):
        return self._v

    def lengths(self):
        return self._l

    def weights_or_none(self):
        return self._w


def call_in_form(ebc, form, ids, offs, wts):
    """ebc on one batch given in one of the input forms (same bags, same order)."""
    if form == "lists":
        return ebc(ids, offs, wts)
    values = torch.cat(ids)
    w = None if wts is None else torch.cat(wts)
    nnz = [len(i) for i in ids]
    if form == "flat":                                   # FBGEMM: T*B+1 offsets
        starts = [0] + list(np.cumsum(nnz))
        flat_off = torch.cat([o + s for o, s in zip(offs, starts)] + [torch.tensor([starts[-1]])])
        return ebc(values, flat_off, w)
    lengths = torch.cat([torch.diff(torch.cat([o, torch.tensor([n])])) for o, n in zip(offs, nnz)])
    if form == "jagged":                                 # TorchRec: values + T*B lengths
        return ebc(values, per_sample_weights=w, lengths=lengths)
    return ebc(KJT(values, lengths, w))


def clipped_bag(weight, ids, off, coef, max_norm):
    """A differentiable reference of max_norm with a sparse weight gradient: every
    looked-up row scaled to the norm, times its coefficient, summed per bag."""
    e = F.embedding(ids, weight, sparse=True)
    n = e.norm(dim=1, keepdim=True)
    e = torch.where(n > max_norm, e * (max_norm / n), e)
    ends = torch.cat([off[1:], torch.tensor([len(ids)])])
    bag = torch.repeat_interleave(torch.arange(len(off)), ends - off)
    return torch.zeros(len(off), weight.shape[1]).index_add(0, bag, coef[:, None] * e)


def train_pair(optimizer, mode, weighted=False, steps=10, lr=0.05, lr_after=None,
               max_norm=None, forms=("lists",), **kw):
    """10 steps of ours and of torch's nn.EmbeddingBag (mode='sum' with the combiner's
    constants as per_sample_weights) + torch.optim on sparse gradients, from the same
    weights and batches; the batch's input form cycles through forms; lr changes to
    lr_after at half way. Returns (ebc, torch's weights, worst output difference)."""
    gen = torch.Generator().manual_seed(42)
    bags = [torch.nn.EmbeddingBag(n, d, mode="sum", sparse=True) for n, d in SIZES]
    ebc = EmbeddingBagCollection([b.weight.detach().clone() for b in bags], optimizer=optimizer,
                                 lr=lr, mode=mode, max_norm=max_norm, **kw)
    ref_opt = torch_optimizer(optimizer, [b.weight for b in bags], lr)
    worst = 0.0
    for step in range(steps):
        if lr_after is not None and step == steps // 2:
            ebc.lr = lr_after
            if isinstance(ref_opt, RowwiseAdagrad):
                ref_opt.lr = lr_after
            else:
                for g in ref_opt.param_groups:
                    g["lr"] = lr_after
        ids, offs, wts = batch(gen, weighted=weighted)
        out = call_in_form(ebc, forms[step % len(forms)], ids, offs, wts)
        coefs = [combiner_weights(i, o, None if wts is None else wts[k], mode)
                 for k, (i, o) in enumerate(zip(ids, offs))]
        if max_norm is None:
            ref = torch.cat([b(i, o, per_sample_weights=c)
                             for b, i, o, c in zip(bags, ids, offs, coefs)], dim=1)
        else:
            ref = torch.cat([clipped_bag(b.weight, i, o, c, max_norm)
                             for b, i, o, c in zip(bags, ids, offs, coefs)], dim=1)
        worst = max(worst, (out - ref).abs().max().item())
        dy = torch.randn(out.shape, generator=gen)
        (out * dy).sum().backward()
        (ref * dy).sum().backward()
        assert all(b.weight.grad.is_sparse for b in bags)  # torch's sparse path
        ref_opt.step()
        ref_opt.zero_grad()
    return ebc, [b.weight.detach() for b in bags], worst


OPTIMIZERS = ["sgd", "adagrad", "rowwise_adagrad", "adam"]


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
@pytest.mark.parametrize("mode", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("weighted", [False, True])
def test_ten_steps_match_torch(optimizer, mode, weighted):
    """Every optimizer x combiner, with and without per_sample_weights; the steps cycle
    through the input forms (lists, FBGEMM flat, TorchRec values/lengths, KJT) and the
    learning rate changes after step 5."""
    ebc, ref, worst = train_pair(optimizer, mode, weighted=weighted, lr_after=0.12,
                                 forms=FORMS, threads=2)
    assert worst <= 1e-5
    for w, r in zip(ebc.weights, ref):
        torch.testing.assert_close(w, r, **TOL)
    assert all(w.grad is None for w in ebc.weights)        # FBGEMM's contract: no gradient
    assert ebc.lr == pytest.approx(0.12)


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
@pytest.mark.parametrize("mode", ["sum", "mean", "sqrtn"])
def test_max_norm_ten_steps_match_torch(optimizer, mode):
    """max_norm (every looked-up row clipped, gradient through the clipping) against a
    torch reference built on F.embedding(sparse=True), weighted, lr changed midway.
    (nn.EmbeddingBag(max_norm=) renormalises the stored rows in place instead: its
    forward is compared in test_numpy.py.)"""
    ebc, ref, worst = train_pair(optimizer, mode, weighted=True, lr_after=0.12, max_norm=1.5,
                                 forms=FORMS, threads=2)
    assert worst <= 1e-5
    for w, r in zip(ebc.weights, ref):
        torch.testing.assert_close(w, r, **TOL)


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_ten_steps_match_torch_own_modes(optimizer, mode):
    """Against nn.EmbeddingBag(mode='sum' / 'mean' / 'max') as torch computes them (no
    per_sample_weights): outputs and weights after 10 steps within 1e-5. torch's 'max'
    has no sparse gradient: its dense one is made sparse over the batch's distinct ids
    (the rows the library steps, a row that gave no maximum with a zero gradient)."""
    gen = torch.Generator().manual_seed(17)
    sparse = mode != "max"
    bags = [torch.nn.EmbeddingBag(n, d, mode=mode, sparse=sparse) for n, d in SIZES]
    ebc = EmbeddingBagCollection([b.weight.detach().clone() for b in bags], optimizer=optimizer,
                                 lr=0.05, mode=mode, threads=2)
    ref_opt = torch_optimizer(optimizer, [b.weight for b in bags], 0.05)
    for _ in range(10):
        ids, offs, _ = batch(gen)
        out = ebc(ids, offs)
        ref = torch.cat([b(i, o) for b, i, o in zip(bags, ids, offs)], dim=1)
        torch.testing.assert_close(out, ref, **TOL)
        dy = torch.randn(out.shape, generator=gen)
        (out * dy).sum().backward()
        (ref * dy).sum().backward()
        if not sparse:
            for b, i in zip(bags, ids):
                u = torch.unique(i)
                b.weight.grad = torch.sparse_coo_tensor(u[None], b.weight.grad[u],
                                                        b.weight.shape)
        ref_opt.step()
        ref_opt.zero_grad()
    for w, b in zip(ebc.weights, bags):
        torch.testing.assert_close(w, b.weight.detach(), **TOL)


def test_max_plain_mode_sparse_grads():
    """optimizer=None with mode='max': the module's sparse gradients are torch's dense
    ones (nn.EmbeddingBag mode='max') on the batch's rows, through torch's Adagrad."""
    gen = torch.Generator().manual_seed(5)
    bags = [torch.nn.EmbeddingBag(n, d, mode="max") for n, d in SIZES]
    ebc = EmbeddingBagCollection([b.weight.detach().clone() for b in bags], optimizer=None,
                                 mode="max")
    opt = torch.optim.Adagrad(ebc.parameters(), lr=0.1)
    ref_opt = torch.optim.Adagrad([b.weight for b in bags], lr=0.1)
    for _ in range(10):
        ids, offs, _ = batch(gen)
        out = ebc(ids, offs)
        ref = torch.cat([b(i, o) for b, i, o in zip(bags, ids, offs)], dim=1)
        torch.testing.assert_close(out, ref, **TOL)
        dy = torch.randn(out.shape, generator=gen)
        (out * dy).sum().backward()
        (ref * dy).sum().backward()
        for p, b in zip(ebc.parameters(), bags):
            torch.testing.assert_close(p.grad.to_dense(), b.weight.grad, **TOL)
        opt.step(), ref_opt.step(), opt.zero_grad(), ref_opt.zero_grad()
    for w, b in zip(ebc.weights, bags):
        torch.testing.assert_close(w.detach(), b.weight.detach(), **TOL)


def test_lr_between_steps_and_state():
    ebc, ref, _ = train_pair("adagrad", "sum", lr=0.05, lr_after=0.2, steps=6)
    assert ebc.lr == pytest.approx(0.2)
    for w, r in zip(ebc.weights, ref):
        torch.testing.assert_close(w, r, **TOL)
    h, steps = ebc.optimizer_state(0)
    assert h.shape == (50, 8) and steps == 6 and h.sum() > 0


@pytest.mark.parametrize("mode", ["sum", "mean", "sqrtn"])
def test_plain_mode_sparse_grads(mode):
    gen = torch.Generator().manual_seed(3)
    bags = [torch.nn.EmbeddingBag(n, d, mode="sum", sparse=True) for n, d in SIZES]
    ebc = EmbeddingBagCollection([b.weight.detach().clone() for b in bags], optimizer=None,
                                 mode=mode)
    opt = torch.optim.Adagrad(ebc.parameters(), lr=0.1)
    ref_opt = torch.optim.Adagrad([b.weight for b in bags], lr=0.1)
    for _ in range(10):
        ids, offs, wts = batch(gen, weighted=True)
        out = ebc(ids, offs, wts)
        ref = torch.cat([b(i, o, per_sample_weights=combiner_weights(i, o, wts[k], mode))
                         for k, (b, i, o) in enumerate(zip(bags, ids, offs))], dim=1)
        torch.testing.assert_close(out, ref, **TOL)
        dy = torch.randn(out.shape, generator=gen)
        (out * dy).sum().backward()
        (ref * dy).sum().backward()
        assert all(p.grad.is_sparse for p in ebc.parameters())
        opt.step(), ref_opt.step(), opt.zero_grad(), ref_opt.zero_grad()
    for w, b in zip(ebc.weights, bags):
        torch.testing.assert_close(w.detach(), b.weight.detach(), **TOL)


def test_max_norm_plain_mode():
    """optimizer=None with max_norm: the sparse gradients go through the clipping."""
    gen = torch.Generator().manual_seed(11)
    weights = [torch.randn(n, d, generator=gen) for n, d in SIZES]
    ebc = EmbeddingBagCollection([w.clone() for w in weights], optimizer=None, max_norm=1.5)
    params = [torch.nn.Parameter(w.clone()) for w in weights]
    ref_opt = torch.optim.SGD(params, lr=0.1)
    opt = torch.optim.SGD(ebc.parameters(), lr=0.1)
    for _ in range(10):
        ids, offs, _ = batch(gen)
        out = ebc(ids, offs)
        ref = torch.cat([clipped_bag(p, i, o, torch.ones(len(i)), 1.5)
                         for p, i, o in zip(params, ids, offs)], 1)
        torch.testing.assert_close(out, ref, **TOL)
        dy = torch.randn(out.shape, generator=gen)
        (out * dy).sum().backward()
        (ref * dy).sum().backward()
        ref_opt.step(), ref_opt.zero_grad(), opt.step(), opt.zero_grad()
    for w, p in zip(ebc.weights, params):
        torch.testing.assert_close(w.detach(), p.detach(), **TOL)


def test_input_forms_agree():
    gen = torch.Generator().manual_seed(5)
    ids, offs, wts = batch(gen, weighted=True)
    ebc = EmbeddingBagCollection(SIZES, optimizer="sgd", threads=2)
    ref = ebc(ids, offs, wts).detach()
    for form in FORMS[1:]:
        assert torch.equal(call_in_form(ebc, form, ids, offs, wts).detach(), ref)
    with torch.no_grad():
        assert torch.equal(ebc(ids, offs, wts), ref)
    ebc2 = EmbeddingBagCollection(SIZES, include_last_offset=True)
    ebc2(ids, [torch.cat([o, torch.tensor([len(i)])]) for o, i in zip(offs, ids)])


def test_errors_leave_tables_alone():
    ebc = EmbeddingBagCollection(SIZES, optimizer="adagrad")
    before = [w.clone() for w in ebc.weights]
    ids = [torch.tensor([1, 2]), torch.tensor([3, 30]), torch.tensor([4, 5])]
    with pytest.raises(et.RangeError, match=r"table 'table_1', feature 'table_1'"):
        ebc(ids, [torch.tensor([0, 1])] * 3)
    with pytest.raises(et.InvalidError):
        ebc(torch.tensor([1, 2, 3]), torch.tensor([0, 1, 2, 5]))   # offsets beyond the ids
    with pytest.raises(et.InvalidError):
        EmbeddingBagCollection(SIZES, optimizer="lamb")
    for w, b in zip(ebc.weights, before):
        assert torch.equal(w, b)


def test_thread_counts_same_bits():
    results = []
    for strategy, threads in (("sequential", 1), ("parallel", 2), ("prealloc-concat", 3),
                              ("auto", 2)):
        torch.manual_seed(0)
        ebc, _, _ = train_pair("adam", "mean", steps=4, strategy=strategy, threads=threads)
        results.append([w.clone() for w in ebc.weights])
    for other in results[1:]:
        assert all(torch.equal(a, b) for a, b in zip(results[0], other))


def test_default_strategy_is_auto_on_torchs_threads():
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = EmbeddingBagCollection(SIZES)
        torch.set_num_threads(2)
        two = EmbeddingBagCollection(SIZES)
    finally:
        torch.set_num_threads(old)
    assert (one._strategy.name, one._strategy.threads) == ("auto", 1)
    assert (two._strategy.name, two._strategy.threads) == ("auto", 2)
    assert EmbeddingBagCollection(SIZES, threads=3)._strategy.threads == 3


def test_embedding_bag_modules_and_dense_model():
    bags = [torch.nn.EmbeddingBag(n, d, mode="mean") for n, d in SIZES]
    ebc = EmbeddingBagCollection(bags, optimizer="sgd", lr=0.5)
    assert ebc.weights[0].data_ptr() == bags[0].weight.data_ptr()   # shared, no copy
    top = torch.nn.Linear(28, 1)
    ids, offs, _ = batch(torch.Generator().manual_seed(1))
    before = bags[0].weight.detach().clone()
    loss = top(ebc(ids, offs)).square().mean()
    loss.backward()
    assert top.weight.grad is not None
    assert not torch.equal(bags[0].weight.detach(), before)        # updated in place
    assert F.embedding_bag(ids[0], bags[0].weight.detach(), offs[0], mode="mean").shape == (B, 8)


def test_gather_mode_and_state_dict():
    gen = torch.Generator().manual_seed(8)
    embs = [torch.nn.Embedding(n, d, sparse=True) for n, d in SIZES]
    ebc = EmbeddingBagCollection([e.weight.detach().clone() for e in embs], optimizer="sgd",
                                 lr=0.1, mode="none")
    ref_opt = torch.optim.SGD([e.weight for e in embs], lr=0.1)
    for _ in range(5):
        ids = [torch.randint(0, n, (B,), generator=gen) for n, _ in SIZES]
        out = ebc(ids)                                   # one id per row: B x ΣD
        ref = torch.cat([e(i) for e, i in zip(embs, ids)], dim=1)
        torch.testing.assert_close(out, ref, **TOL)
        dy = torch.randn(out.shape, generator=gen)
        (out * dy).sum().backward()
        (ref * dy).sum().backward()
        ref_opt.step(), ref_opt.zero_grad()
    for w, e in zip(ebc.weights, embs):
        torch.testing.assert_close(w, e.weight.detach(), **TOL)
    other = EmbeddingBagCollection(SIZES, optimizer="sgd", mode="none")
    ptr = other.weights[0].data_ptr()
    other.load_state_dict(ebc.state_dict())              # copied in place: still wrapped
    assert other.weights[0].data_ptr() == ptr
    ids = [torch.arange(B) % n for n, _ in SIZES]
    assert torch.equal(other(ids), ebc(ids))
