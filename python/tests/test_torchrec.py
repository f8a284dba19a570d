# SPDX-License-Identifier: BSD-2-Clause
"""The TorchRec-shaped API: a TorchRec-style DLRM script run twice with only its imports
changed (embtables.torch, and ref_torchrec: nn.EmbeddingBag + torch.optim) gives the same
losses within 1e-5 over 10 steps; features routed by name; dtype moves; state_dict and
torch.save round trips bit for bit; errors that name the table and the feature."""
import io
import os
import sys

import pytest
import torch

import embtables as et
from embtables.torch import (DataType, EmbeddingBagCollection, EmbeddingBagConfig,
                             KeyedJaggedTensor, KeyedTensor, PoolingType)

sys.path.insert(0, os.path.dirname(__file__))

DLRM = '''
import torch
from torch import nn
IMPORTS

FEATURES = {"user": 60, "item": 40, "ctx": 25}
D, B = 8, 16
torch.manual_seed(0)
tables = [EmbeddingBagConfig(name=f"t_{f}", embedding_dim=D, num_embeddings=n,
                             feature_names=[f], pooling=PoolingType.SUM if f != "ctx"
                             else PoolingType.MEAN) for f, n in FEATURES.items()]


class DLRM(nn.Module):
    def __init__(self, ebc):
        super().__init__()
        self.ebc = ebc
        self.bot = nn.Sequential(nn.Linear(4, D), nn.ReLU())
        n = len(FEATURES) + 1
        self.top = nn.Sequential(nn.Linear(D + n * (n - 1) // 2, 16), nn.ReLU(),
                                 nn.Linear(16, 1))

    def forward(self, dense, kjt):
        d = self.bot(dense)
        kt = self.ebc(kjt).to_dict()
        x = torch.stack([d] + [kt[f] for f in FEATURES], dim=1)      # B x (F+1) x D
        inter = torch.bmm(x, x.transpose(1, 2))
        i, j = torch.triu_indices(x.shape[1], x.shape[1], 1)
        return self.top(torch.cat([d, inter[:, i, j]], dim=1)).squeeze(1)


model = DLRM(EmbeddingBagCollection(tables=tables, device=torch.device("cpu")))
opt = torch.optim.OPTIMIZER(model.parameters(), lr=0.05)
gen = torch.Generator().manual_seed(1)
losses = []
for step in range(10):
    lengths = torch.randint(0, 4, (len(FEATURES) * B,), generator=gen)
    values = torch.cat([torch.randint(0, n, (int(lengths[k * B:(k + 1) * B].sum()),),
                                      generator=gen) for k, n in enumerate(FEATURES.values())])
    keys = list(FEATURES)[::-1] if step % 2 else list(FEATURES)    # any key order
    if step % 2:
        perm = [2, 1, 0]
        parts = torch.split(values, [int(lengths[k * B:(k + 1) * B].sum()) for k in range(3)])
        values = torch.cat([parts[k] for k in perm])
        lengths = torch.cat([lengths[k * B:(k + 1) * B] for k in perm])
    kjt = KeyedJaggedTensor.from_lengths_sync(keys=keys, values=values, lengths=lengths)
    dense, label = torch.randn(B, 4, generator=gen), torch.randint(0, 2, (B,), generator=gen)
    loss = nn.functional.binary_cross_entropy_with_logits(model(dense, kjt), label.float())
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
'''
OURS = "from embtables.torch import (EmbeddingBagCollection, EmbeddingBagConfig, " \
       "KeyedJaggedTensor, PoolingType)"
REF = "from ref_torchrec import (EmbeddingBagCollection, EmbeddingBagConfig, " \
      "KeyedJaggedTensor, PoolingType)"


def run_script(imports, optimizer):
    env = {}
    exec(compile(DLRM.replace("IMPORTS", imports).replace("OPTIMIZER", optimizer),
                 "dlrm", "exec"), env)
    return env


@pytest.mark.parametrize("optimizer", ["SGD", "Adagrad"])
def test_dlrm_script_same_losses_as_torch(optimizer):
    ours, ref = run_script(OURS, optimizer), run_script(REF, optimizer)
    assert len(ours["losses"]) == 10
    for a, b in zip(ours["losses"], ref["losses"]):
        assert abs(a - b) <= 1e-5, (ours["losses"], ref["losses"])
    for name, bag in ref["model"].ebc.embedding_bags.items():
        w = ours["model"].ebc.embedding_bags[name].weight
        torch.testing.assert_close(w.detach(), bag.weight.detach(), rtol=0, atol=1e-5)


def test_torchrec_initialisation_bits():
    """The same seed gives TorchRec's initial weights; init_fn and weight_init_* apply."""
    cfg = [EmbeddingBagConfig(num_embeddings=100, embedding_dim=4, name="a",
                              feature_names=["fa"]),
           EmbeddingBagConfig(num_embeddings=10, embedding_dim=4, name="b",
                              feature_names=["fb"], init_fn=torch.nn.init.ones_),
           EmbeddingBagConfig(num_embeddings=10, embedding_dim=4, name="c",
                              feature_names=["fc"], weight_init_min=2, weight_init_max=3)]
    torch.manual_seed(3)
    ebc = EmbeddingBagCollection(tables=cfg)
    torch.manual_seed(3)
    import ref_torchrec as rt
    ref = rt.EmbeddingBagCollection([
        rt.EmbeddingBagConfig(100, 4, "a", feature_names=["fa"]),
        rt.EmbeddingBagConfig(10, 4, "b", feature_names=["fb"], init_fn=torch.nn.init.ones_),
        rt.EmbeddingBagConfig(10, 4, "c", feature_names=["fc"], weight_init_min=2,
                              weight_init_max=3)])
    for name, bag in ref.embedding_bags.items():
        assert torch.equal(ebc.embedding_bags[name].weight, bag.weight)
    assert ebc.weights[0].abs().max() <= 0.1
    assert torch.equal(ebc.weights[1], torch.ones(10, 4))
    assert 2 <= float(ebc.weights[2].min()) and float(ebc.weights[2].max()) <= 3


def small(optimizer="adam", dtype=None, **kw):
    torch.manual_seed(7)
    cfg = [EmbeddingBagConfig(num_embeddings=n, embedding_dim=d, name=f"t{i}",
                              feature_names=[f"f{i}"], dtype=dtype)
           for i, (n, d) in enumerate([(30, 4), (20, 8)])]
    return EmbeddingBagCollection(tables=cfg, optimizer=optimizer, lr=0.05, **kw)


def kjt_batch(gen, weighted=False, keys=("f0", "f1")):
    lengths = torch.randint(0, 4, (2 * 6,), generator=gen)
    values = torch.randint(0, 20, (int(lengths.sum()),), generator=gen)
    w = torch.rand(len(values), generator=gen) if weighted else None
    return KeyedJaggedTensor(keys=list(keys), values=values, lengths=lengths, weights=w)


def train(ebc, gen, steps):
    for _ in range(steps):
        kt = ebc(kjt_batch(gen))
        kt.values().backward(torch.randn(kt.values().shape, generator=gen))


def test_keyed_tensor_and_routing_by_name():
    ebc = small()
    gen = torch.Generator().manual_seed(2)
    kjt = kjt_batch(gen)
    kt = ebc(kjt)
    assert isinstance(kt, KeyedTensor)
    assert kt.keys() == ["f0", "f1"] and kt.length_per_key() == [4, 8]
    assert kt.values().shape == (6, 12) and kt.offset_per_key() == [0, 4, 12]
    d = kt.to_dict()
    assert torch.equal(d["f1"], kt["f1"])
    # the same bags given in the other key order (and with offsets): the same output
    vals = {k: (jt.values(), jt.lengths()) for k, jt in kjt.to_dict().items()}
    swapped = KeyedJaggedTensor(keys=["f1", "f0"],
                                values=torch.cat([vals["f1"][0], vals["f0"][0]]),
                                offsets=torch.cat([torch.tensor([0]), torch.cumsum(
                                    torch.cat([vals["f1"][1], vals["f0"][1]]), 0)]))
    with torch.no_grad():
        assert torch.equal(ebc(swapped).values(), kt.values().detach())
    extra = KeyedJaggedTensor(keys=["f0", "x", "f1"],
                              values=torch.cat([vals["f0"][0], torch.tensor([1]),
                                                vals["f1"][0]]),
                              lengths=torch.cat([vals["f0"][1], torch.tensor([1, 0, 0, 0, 0, 0]),
                                                 vals["f1"][1]]))
    with torch.no_grad():
        assert torch.equal(ebc(extra).values(), kt.values().detach())


@pytest.mark.parametrize("optimizer", ["adam", "rowwise_adagrad", "sgd", None])
def test_state_dict_and_torch_save_round_trip_bit_for_bit(optimizer):
    a = small(optimizer)
    gen = torch.Generator().manual_seed(4)
    if optimizer is not None:
        train(a, gen, 3)
    sd = a.state_dict()
    assert "embedding_bags.t0.weight" in sd
    if optimizer == "adam":
        assert sd["embedding_bags.t0.optimizer_state"].shape == (30, 8)
        assert int(sd["embedding_bags.t0.optimizer_step"]) == 3
    b = small(optimizer)
    torch.manual_seed(99)
    b.load_state_dict({k: v.clone() for k, v in sd.items()})
    buf = io.BytesIO()
    torch.save(a, buf)
    c = torch.load(io.BytesIO(buf.getvalue()))
    assert repr(c) == repr(a)
    for m in (b, c):
        for k, v in m.state_dict().items():
            assert torch.equal(v, sd[k]), k
    if optimizer is None:
        return
    for m in (a, b, c):   # the next steps: the same bits (Adam's step count restored)
        train(m, torch.Generator().manual_seed(5), 2)
    for m in (b, c):
        for x, y in zip(a.weights, m.weights):
            assert torch.equal(x, y)


@pytest.mark.parametrize("move,dtype", [("half", torch.float16), ("bfloat16", torch.bfloat16),
                                        ("to", torch.float16)])
def test_dtype_moves_convert_the_tables(move, dtype):
    ebc = small("adagrad")
    gen = torch.Generator().manual_seed(6)
    train(ebc, gen, 2)
    state = ebc.optimizer_state(0)[0].clone()
    before = ebc.weights[0].to(dtype)
    model = torch.nn.Sequential(ebc)
    out = getattr(model, move)(dtype) if move == "to" else getattr(model, move)()
    assert out is model
    assert all(w.dtype == dtype for w in ebc.weights)
    assert torch.equal(ebc.weights[0], before)
    assert torch.equal(ebc.optimizer_state(0)[0], state)        # kept
    assert ebc.optimizer_state(0)[1] == 2
    assert ebc.state_dict()["embedding_bags.t0.weight"].dtype == dtype
    # one memory: the library's table is the module's weight
    assert ebc.tables[0].numpy().ctypes.data == ebc.weights[0].data_ptr()
    train(ebc, gen, 1)                                          # training goes on, in dtype
    assert not torch.equal(ebc.weights[0], before)
    assert "float16" in repr(ebc) or "bfloat16" in repr(ebc)
    ebc.float()
    assert ebc.weights[0].dtype == torch.float32
    train(ebc, gen, 1)


def test_plain_mode_dtype_move_keeps_the_parameters():
    ebc = small(None)
    p = list(ebc.parameters())
    ebc.half()
    assert list(ebc.parameters())[0] is p[0] and p[0].dtype == torch.float16
    opt = torch.optim.SGD(ebc.parameters(), lr=0.1)
    kt = ebc(kjt_batch(torch.Generator().manual_seed(1)))
    kt.values().sum().backward()
    before = p[0].detach().clone()
    opt.step()
    assert not torch.equal(p[0].detach(), before)


def test_refused_moves():
    ebc = small("sgd")
    with pytest.raises(TypeError, match="float32, float16 or bfloat16"):
        ebc.double()
    with pytest.raises(RuntimeError, match="CPU|cannot move"):
        ebc.to("cuda")
    with pytest.raises(ValueError, match="even embedding_dim"):  # INT8 / INT4: test_quant.py
        EmbeddingBagCollection(tables=[EmbeddingBagConfig(
            num_embeddings=4, embedding_dim=5, name="q", feature_names=["q"],
            data_type=DataType.INT4)])
    assert ebc.weights[0].dtype == torch.float32


def test_no_silent_conversions_and_errors_name_table_and_feature():
    ebc = small("adagrad")
    gen = torch.Generator().manual_seed(3)
    kjt = kjt_batch(gen)
    before = [w.clone() for w in ebc.weights]
    for bad in (kjt.values().float() + 0.7, kjt.values() > 3):
        with pytest.raises(TypeError, match="t0.*f0|f0.*t0"):
            ebc(KeyedJaggedTensor(keys=["f0", "f1"], values=bad, lengths=kjt.lengths()))
    with pytest.raises(TypeError, match=r"features \['f1', 'f0'\] \(tables"):
        ebc(KeyedJaggedTensor(keys=["f1", "f0"], values=kjt.values().double(),
                              lengths=kjt.lengths()))
    for keys in (["f0", "f1"], ["f1", "f0"]):
        with pytest.raises(TypeError, match="float32.*float64|float64.*float32"):
            ebc(KeyedJaggedTensor(keys=keys, values=kjt.values(), lengths=kjt.lengths(),
                                  weights=torch.rand(len(kjt.values()), dtype=torch.float64)))
    with pytest.raises(et.RangeError, match="table 't0', feature 'f0'"):
        ebc(KeyedJaggedTensor(keys=["f0", "f1"], values=kjt.values() + 100,
                              lengths=kjt.lengths()))
    with pytest.raises(KeyError, match="table 't1', feature 'f1'"):
        ebc(KeyedJaggedTensor(keys=["f0", "g"], values=kjt.values(), lengths=kjt.lengths()))
    with pytest.raises(TypeError, match=r"indices\[1\] \(table 't1', feature 'f1'\)"):
        ebc([torch.tensor([1, 2]), torch.tensor([1.5, 2.0])],
            [torch.tensor([0, 1]), torch.tensor([0, 1])])
    for w, b in zip(ebc.weights, before):
        assert torch.equal(w, b)
    out = ebc(kjt).values().sum()
    out.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="second time"):
        out.backward()


def test_repr_help_and_docstrings():
    ebc = small("adagrad")
    r = repr(ebc)
    assert "30 x 4, float32, sum, feature='f0'" in r and "adagrad" in r
    import embtables.torch as m
    for name in m.__all__:
        assert getattr(m, name).__doc__, name
    for name in et.__all__:
        obj = getattr(et, name)
        if callable(obj):
            assert obj.__doc__, name
