# SPDX-License-Identifier: BSD-2-Clause
"""TorchRec's model lifecycle with embtables.torch, each checked against the stand-in
(ref_torchrec.py): modules built on the meta device (shapes, no table memory), then
materialised as TorchRec does (to_empty(device="cpu") and reset_parameters(), or
DistributedModelParallel's init_parameters) train as one built on the CPU; a model traced by
torch.fx.symbolic_trace gives the same outputs and trains the same; a tiered table in the
module trains bit for bit as the same table in memory."""
import os
import sys

import pytest
import torch
from torch import nn

import embtables as et
import embtables.torch as ours

sys.path.insert(0, os.path.dirname(__file__))
import ref_torchrec as ref  # noqa: E402

FEATURES = {"user": 40, "item": 30, "cat": 20}
D, B = 8, 10


def make_model(mod, device=None, shared=False):
    """A tutorial model: an EmbeddingBagCollection (optionally a table of two features), a
    dense MLP and an over arch on KeyedTensor.regroup's output."""
    names = list(FEATURES)
    cfgs = [mod.EmbeddingBagConfig(name=f"t_{f}", embedding_dim=D, num_embeddings=n,
                                   feature_names=[f]) for f, n in FEATURES.items()]
    if shared:
        cfgs = [mod.EmbeddingBagConfig(name="t_shared", embedding_dim=D, num_embeddings=40,
                                       feature_names=names[:2]), cfgs[2]]
    ebc = mod.EmbeddingBagCollection(tables=cfgs, device=device)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.ebc = ebc
            self.dense = nn.Linear(3, D)
            self.over = nn.Linear(D * (len(names) + 1), 1)

        def forward(self, dense, kjt):
            emb = mod.KeyedTensor.regroup([self.ebc(kjt)], [names])[0]
            return self.over(torch.cat([torch.relu(self.dense(dense)), emb], 1)).squeeze(1)
    return Model()


def batches(mod, n, seed=1):
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        lengths = torch.randint(0, 4, (len(FEATURES) * B,), generator=gen)
        values = torch.cat([torch.randint(0, n, (int(lengths[k * B:(k + 1) * B].sum()),),
                                          generator=gen)
                            for k, n in enumerate(FEATURES.values())])
        out.append((torch.randn(B, 3, generator=gen),
                     mod.KeyedJaggedTensor(list(FEATURES), values, None, lengths),
                     torch.randint(0, 2, (B,), generator=gen).float()))
    return out


def train(mod, model, steps=6, optimizer=torch.optim.Adagrad, forward=None):
    """The tutorial's loop (tables: apply_optimizer_in_backward); the losses."""
    mod.apply_optimizer_in_backward(optimizer, model.ebc.parameters(), {"lr": 0.05})
    forward = forward or model
    dense_opt = torch.optim.SGD(
        [p for _, p in mod.in_backward_optimizer_filter(model.named_parameters())], lr=0.05)
    losses = []
    for dense, kjt, label in batches(mod, steps):
        loss = nn.functional.binary_cross_entropy_with_logits(forward(dense, kjt), label)
        dense_opt.zero_grad()
        loss.backward()
        dense_opt.step()
        losses.append(loss.item())
    return losses


def materialise(model):
    model.ebc.to_empty(device="cpu")
    torch.manual_seed(7)
    model.ebc.reset_parameters()


@pytest.mark.parametrize("shared", [False, True])
def test_meta_module_has_shapes_and_no_memory(shared):
    m, r = make_model(ours, "meta", shared), make_model(ref, "meta", shared)
    assert m.ebc.is_meta and m.ebc.tables == [] and m.ebc.device.type == "meta"
    want = {k: tuple(v.shape) for k, v in r.state_dict().items()}
    got = m.state_dict()
    assert {k: tuple(v.shape) for k, v in got.items()} == want
    assert all(got[k].is_meta for k in got if ".ebc." in "." + k)
    dense, kjt, _ = batches(ours, 1)[0]
    with pytest.raises(RuntimeError, match="meta device.*to_empty"):
        m(dense, kjt)
    with pytest.raises(RuntimeError, match="to_empty"):
        m.ebc.to("cpu")  # a copy of no data


@pytest.mark.parametrize("shared", [False, True])
def test_meta_materialised_trains_as_torchrec_and_as_built_on_cpu(shared):
    """meta -> to_empty -> reset_parameters: TorchRec's bits (the stand-in's, same seed),
    then the same losses as the stand-in and, bit for bit, as a module built on the CPU
    whose reset_parameters drew the same."""
    torch.manual_seed(0)
    m, r, c = make_model(ours, "meta", shared), make_model(ref, "meta", shared), \
        make_model(ours, None, shared)
    for mod_model in (m, r, c):
        materialise(mod_model)
    assert not m.ebc.is_meta and len(m.ebc.tables) == len(r.ebc.embedding_bags)
    for name, bag in r.ebc.embedding_bags.items():
        assert torch.equal(m.ebc.embedding_bags[name].weight, bag.weight.detach())
    for x in (c, r):  # the same dense layers
        x.dense.load_state_dict(m.dense.state_dict())
        x.over.load_state_dict(m.over.state_dict())
    lm, lr_, lc = train(ours, m), train(ref, r), train(ours, c)
    assert m.ebc.optimizer is not None and lm == lc
    assert max(abs(a - b) for a, b in zip(lm, lr_)) <= 1e-5, (lm, lr_)
    for k, v in c.state_dict().items():
        assert torch.equal(m.state_dict()[k], v), k


def test_distributed_model_parallel_materialises_and_keeps_keys():
    torch.manual_seed(0)
    model = make_model(ours, "meta")
    ours.apply_optimizer_in_backward(torch.optim.Adagrad, model.ebc.parameters(),
                                     {"lr": 0.05})
    keys = list(model.state_dict())
    torch.manual_seed(7)
    dmp = ours.DistributedModelParallel(model, device=torch.device("cpu"))
    assert dmp.module is model and not model.ebc.is_meta
    assert list(dmp.state_dict()) == list(model.state_dict())
    assert set(keys) <= set(dmp.state_dict())  # optimizer_state appears with the tables
    assert [n for n, _ in dmp.named_parameters()] == [n for n, _ in model.named_parameters()]
    r = make_model(ref, "meta")
    torch.manual_seed(7)
    r.ebc.to_empty(device="cpu")
    r.ebc.reset_parameters()
    for name, bag in r.ebc.embedding_bags.items():
        assert torch.equal(model.ebc.embedding_bags[name].weight, bag.weight.detach())
    dense, kjt, _ = batches(ours, 1)[0]
    torch.testing.assert_close(dmp(dense, kjt), model(dense, kjt), rtol=0, atol=0)
    assert len(dmp.fused_optimizer.params) == len(FEATURES)
    dmp.fused_optimizer.zero_grad()
    dmp.fused_optimizer.step()
    with pytest.raises(NotImplementedError, match="plan=None"):
        ours.DistributedModelParallel(make_model(ours), plan=object())
    with pytest.raises(RuntimeError, match="CPU"):
        ours.DistributedModelParallel(make_model(ours), device="cuda")


def test_meta_embedding_collection_as_torchrec(tmp_path):
    def make(mod):
        return mod.EmbeddingCollection([mod.EmbeddingConfig(
            num_embeddings=30, embedding_dim=4, name="t", feature_names=["a", "b"])],
            device="meta")
    m, r = make(ours), make(ref)
    assert m.embeddings["t"].weight.is_meta and m.tables == []
    with pytest.raises(TypeError, match="meta device"):
        torch.save(m, tmp_path / "m.pt")
    for x in (m, r):
        x.to_empty(device="cpu")
        torch.manual_seed(3)
        x.reset_parameters()
    assert torch.equal(m.embeddings["t"].weight, r.embeddings["t"].weight.detach())
    kjt = ours.KeyedJaggedTensor(["a", "b"], torch.tensor([1, 2, 29]), None,
                                 torch.tensor([1, 1, 0, 1]))
    with torch.no_grad():
        got = m(kjt)["b"].values()
    assert torch.equal(got, r.embeddings["t"].weight.detach()[torch.tensor([29])])


def test_meta_refusals():
    with pytest.raises(NotImplementedError, match="meta.*EmbeddingBagConfig"):
        ours.EmbeddingBagCollection([(10, 4)], device="meta")
    with pytest.raises(et.InvalidError, match="num_embeddings"):
        ours.EmbeddingBagCollection([ours.EmbeddingBagConfig(0, 4, "t", feature_names=["f"])],
                                    device="meta")
    ebc = ours.EmbeddingBagCollection([(10, 4)], optimizer="sgd")
    with pytest.raises(NotImplementedError, match="EmbeddingBagConfig"):
        ebc.reset_parameters()


# ---- fx ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shared", [False, True])
def test_fx_traced_model_same_outputs_and_trains(shared):
    """torch.fx.symbolic_trace of the tutorial model: the module a leaf (one node), regroup
    a node; the traced GraphModule's losses are the model's bit for bit, and the stand-in's
    traced the same way agree."""
    torch.manual_seed(0)
    plain = make_model(ours, shared=shared)
    torch.manual_seed(0)
    model = make_model(ours, shared=shared)
    gm = torch.fx.symbolic_trace(model)
    nodes = {(n.op, str(n.target)) for n in gm.graph.nodes}
    assert ("call_module", "ebc") in nodes
    assert any(op == "call_function" and "regroup" in t for op, t in nodes)
    torch.manual_seed(0)
    r = make_model(ref, shared=shared)
    rgm = torch.fx.symbolic_trace(r)
    dense, kjt, _ = batches(ours, 1, seed=5)[0]
    torch.testing.assert_close(gm(dense, kjt), model(dense, kjt), rtol=0, atol=0)
    got, want = train(ours, model, forward=gm), train(ours, plain)
    assert got == want
    lr_ = train(ref, r, forward=rgm)
    assert max(abs(a - b) for a, b in zip(got, lr_)) <= 1e-5, (got, lr_)


def test_fx_kjt_built_in_the_graph_and_embedding_collection():
    """A KeyedJaggedTensor made inside the traced forward is a node (TorchRec's
    proxyable classes); EmbeddingCollection traces as a leaf too."""
    cfg = [ours.EmbeddingConfig(num_embeddings=20, embedding_dim=4, name="t",
                                feature_names=["a", "b"])]

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.ec = ours.EmbeddingCollection(cfg, optimizer="sgd", lr=0.1)

        def forward(self, values, lengths):
            kjt = ours.KeyedJaggedTensor.from_lengths_sync(["a", "b"], values, lengths)
            out = self.ec(kjt)
            return out["a"].values().sum(1).sum() + out["b"].values().sum()

    m = M()
    gm = torch.fx.symbolic_trace(m)
    values, lengths = torch.tensor([1, 2, 3, 4, 5]), torch.tensor([2, 1, 0, 2])
    want = m(values, lengths)
    assert torch.equal(gm(values, lengths), want)
    gm(values, lengths).backward()  # the fused update through the graph
    assert not torch.equal(m(values, lengths), want)


def test_fx_tracing_the_module_itself_is_refused_clearly():
    ebc = ours.EmbeddingBagCollection([ours.EmbeddingBagConfig(10, 4, "t", feature_names=["f"])])
    with pytest.raises(NotImplementedError, match="inside a model"):
        torch.fx.symbolic_trace(ebc)


# ---- tiered tables ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["f32", "int8"])
@pytest.mark.parametrize("kind", ["sgd", "adagrad"])
def test_tiered_table_in_the_module_bit_for_bit(tmp_path, dtype, kind):
    """A tiered table (rows in a file, a cache of a few rows) in the module: the outputs,
    the fused updates and the state_dict's weights are the in-memory table's bits; its
    state_dict loads into another tiered module."""
    shapes, init = [(300, 16), (90, 8)], ("uniform", -0.5, 0.5)
    mem = [et.Table.create(n, d, dtype, name=f"table_{i}", init=init, seed=i)
           for i, (n, d) in enumerate(shapes)]
    tier = [et.Table.tiered(tmp_path / f"t{i}", n, d, dtype, cache_bytes=1024, optimizer=kind,
                            name=f"table_{i}", init=init, seed=i)
            for i, (n, d) in enumerate(shapes)]
    a = ours.EmbeddingBagCollection(mem, optimizer=kind, lr=0.05)
    b = ours.EmbeddingBagCollection(tier, optimizer=kind, lr=0.05)
    assert b.embedding_bags["table_0"].weight is None and "tiered" in repr(b)
    gen = torch.Generator().manual_seed(3)
    for _ in range(4):
        lengths = torch.randint(0, 5, (2 * 16,), generator=gen)
        values = torch.cat([torch.randint(0, n, (int(lengths[k * 16:(k + 1) * 16].sum()),),
                                          generator=gen) for k, (n, _) in enumerate(shapes)])
        kjt = ours.KeyedJaggedTensor(["table_0", "table_1"], values, None, lengths)
        ya, yb = a(kjt).values(), b(kjt).values()
        assert torch.equal(ya, yb)
        g = torch.randn(ya.shape, generator=gen)
        (ya * g).sum().backward()
        (yb * g).sum().backward()
    sa, sb = a.state_dict(), b.state_dict()
    for k in sb:
        assert torch.equal(sa[k], sb[k]), k
    c = ours.EmbeddingBagCollection(
        [et.Table.tiered(tmp_path / f"c{i}", n, d, dtype, optimizer=kind)
         for i, (n, d) in enumerate(shapes)], optimizer=kind, lr=0.05)
    c.load_state_dict(sb, strict=False)
    for k, v in c.state_dict().items():
        assert torch.equal(v, sb[k]), k


def test_tiered_table_refusals(tmp_path):
    t = et.Table.tiered(tmp_path / "t", 20, 4)
    with pytest.raises(NotImplementedError, match="tiered table trains with the fused"):
        ours.EmbeddingBagCollection([t], optimizer=None)
    ebc = ours.EmbeddingBagCollection([t], optimizer="sgd")
    with pytest.raises(TypeError, match="tiered"):
        torch.save(ebc, tmp_path / "m.pt")
    with pytest.raises(RuntimeError, match=r"shape \(3, 4\)"):
        ebc.load_state_dict({"embedding_bags.table_0.weight": torch.zeros(3, 4)},
                            strict=False)
