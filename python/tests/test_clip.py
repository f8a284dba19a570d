# SPDX-License-Identifier: BSD-2-Clause
"""Gradient clipping of the fused optimizer (max_gradient, max_row_norm, max_global_norm)
against torch: nn.EmbeddingBag with dense gradients, clamped (Tensor.clamp_), rows
renormalised (Tensor.renorm_) and clipped over every table by
torch.nn.utils.clip_grad_norm_, then torch.optim; weights after 10 steps within 1e-5."""
import pytest
import torch

import embtables as et
from embtables.torch import EmbeddingBagCollection

SIZES = [(50, 8), (30, 4), (20, 16)]
B = 8


def batch(gen):
    ids, offs = [], []
    for n, _ in SIZES:
        lens = torch.randint(0, 5, (B,), generator=gen)
        offs.append(torch.cat([torch.zeros(1, dtype=torch.long), lens.cumsum(0)[:-1]]))
        ids.append(torch.randint(0, n, (int(lens.sum()),), generator=gen))
    return ids, offs


CASES = {"element": dict(max_gradient=0.3), "row": dict(max_row_norm=0.5),
         "global": dict(max_global_norm=1.0),
         "all": dict(max_gradient=0.4, max_row_norm=0.8, max_global_norm=1.5)}


@pytest.mark.parametrize("optimizer", ["sgd", "adagrad"])
@pytest.mark.parametrize("case", list(CASES))
def test_clipping_matches_torch(optimizer, case):
    torch.manual_seed(7)
    clip = CASES[case]
    gen = torch.Generator().manual_seed(3)
    bags = [torch.nn.EmbeddingBag(n, d, mode="sum") for n, d in SIZES]
    ebc = EmbeddingBagCollection([b.weight.detach().clone() for b in bags],
                                 optimizer=optimizer, lr=0.1, mode="sum", threads=2, **clip)
    params = [b.weight for b in bags]
    ref_opt = (torch.optim.SGD if optimizer == "sgd" else torch.optim.Adagrad)(params, lr=0.1)
    bites = False
    for _ in range(10):
        ids, offs = batch(gen)
        out = ebc(ids, offs)
        ref = torch.cat([b(i, o) for b, i, o in zip(bags, ids, offs)], dim=1)
        dy = 3 * torch.randn(out.shape, generator=gen)
        (out * dy).sum().backward()
        (ref * dy).sum().backward()
        with torch.no_grad():
            before = [p.grad.clone() for p in params]
            for p in params:
                if "max_gradient" in clip:
                    p.grad.clamp_(-clip["max_gradient"], clip["max_gradient"])
                if "max_row_norm" in clip:
                    p.grad.renorm_(2, 0, clip["max_row_norm"])
        if "max_global_norm" in clip:
            torch.nn.utils.clip_grad_norm_(params, clip["max_global_norm"])
        bites |= any(not torch.equal(p.grad, g) for p, g in zip(params, before))
        ref_opt.step()
        ref_opt.zero_grad()
    assert bites, "the clipping never changed torch's gradient: the test cannot fail"
    for w, b in zip(ebc.weights, bags):
        torch.testing.assert_close(w, b.weight.detach(), rtol=0, atol=1e-5)


@pytest.mark.parametrize("field", ["max_gradient", "max_row_norm", "max_global_norm"])
def test_bad_value_names_the_field(field):
    with pytest.raises(et.InvalidError, match=field):
        et.Optimizer("sgd", 0.1, **{field: -1.0})
