# SPDX-License-Identifier: BSD-2-Clause
"""TorchRec parity beyond the module: a TorchRec tutorial-style training script (EBC + KJT +
dense MLP + apply_optimizer_in_backward + state_dict) run with only its imports changed
against ref_torchrec (TorchRec's signatures in plain torch) gives the same losses and takes
the fused path; KeyedJaggedTensor's and KeyedTensor's methods agree with the stand-in's;
bad KeyedJaggedTensors and configs are refused with a message naming the culprit."""
import os
import sys

import pytest
import torch

import embtables as et
from embtables.torch import (EmbeddingBagCollection, EmbeddingBagConfig, JaggedTensor,
                             KeyedJaggedTensor, KeyedTensor, PoolingType)

sys.path.insert(0, os.path.dirname(__file__))
import ref_torchrec as rt  # noqa: E402

TUTORIAL = '''
import torch
from torch import nn
IMPORTS

torch.manual_seed(0)
FEATURES = {"user": 50, "item": 30, "cat": 20}
D, B = 8, 12
ebc = EmbeddingBagCollection(
    tables=[EmbeddingBagConfig(name=f"t_{f}", embedding_dim=D, num_embeddings=n,
                               feature_names=[f], pooling=PoolingType.SUM)
            for f, n in FEATURES.items()],
    device=torch.device("cpu"))


class Model(nn.Module):
    def __init__(self, ebc):
        super().__init__()
        self.ebc = ebc
        self.dense = nn.Sequential(nn.Linear(3, D), nn.ReLU())
        self.over = nn.Linear(D * (len(FEATURES) + 1), 1)

    def forward(self, dense, kjt):
        kt = self.ebc(kjt)
        emb = KeyedTensor.regroup([kt], [list(FEATURES)])[0]
        return self.over(torch.cat([self.dense(dense), emb], dim=1)).squeeze(1)


model = Model(ebc)
apply_optimizer_in_backward(OPTIMIZER, model.ebc.parameters(), KWARGS)
dense_opt = torch.optim.Adam(
    [p for _, p in in_backward_optimizer_filter(model.named_parameters())], lr=0.01)
gen = torch.Generator().manual_seed(1)
losses = []
for step in range(8):
    lengths = torch.randint(0, 5, (len(FEATURES) * B,), generator=gen)
    values = torch.cat([torch.randint(0, n, (int(lengths[k * B:(k + 1) * B].sum()),),
                                      generator=gen) for k, n in enumerate(FEATURES.values())])
    kjt = KeyedJaggedTensor(list(FEATURES), values, None, lengths).to(torch.device("cpu"))
    dense, label = torch.randn(B, 3, generator=gen), torch.randint(0, 2, (B,), generator=gen)
    loss = nn.functional.binary_cross_entropy_with_logits(model(dense, kjt), label.float())
    dense_opt.zero_grad()
    loss.backward()
    dense_opt.step()
    losses.append(loss.item())
state = model.state_dict()
'''
COMMON = "apply_optimizer_in_backward, in_backward_optimizer_filter, EmbeddingBagCollection, " \
         "EmbeddingBagConfig, KeyedJaggedTensor, KeyedTensor, PoolingType"
OURS = f"from embtables.torch import ({COMMON})"
REF = f"from ref_torchrec import ({COMMON})"


def run_tutorial(imports, optimizer, kwargs):
    env = {}
    code = TUTORIAL.replace("IMPORTS", imports).replace("OPTIMIZER", optimizer) \
        .replace("KWARGS", kwargs)
    exec(compile(code, "tutorial", "exec"), env)
    return env


@pytest.mark.parametrize("optimizer,kwargs", [
    ("torch.optim.SGD", '{"lr": 0.1}'), ("torch.optim.Adagrad", '{"lr": 0.05}'),
    ("torch.optim.Adagrad", '{"lr": 0.05, "eps": 1e-8, "initial_accumulator_value": 0.1}')])
def test_tutorial_script_takes_the_fused_path_with_torchs_losses(optimizer, kwargs):
    ours, ref = run_tutorial(OURS, optimizer, kwargs), run_tutorial(REF, optimizer, kwargs)
    assert ours["model"].ebc.optimizer is not None      # the fused path
    assert len(ours["losses"]) == 8
    for a, b in zip(ours["losses"], ref["losses"]):
        assert abs(a - b) <= 1e-5, (ours["losses"], ref["losses"])
    for name, bag in ref["model"].ebc.embedding_bags.items():
        w = ours["model"].ebc.embedding_bags[name].weight
        assert w.grad is None                            # no gradient: updated in backward
        torch.testing.assert_close(w.detach(), bag.weight.detach(), rtol=0, atol=1e-5)
    for key in ref["state"]:
        assert key in ours["state"], key


def test_apply_optimizer_in_backward_refusals():
    ebc = EmbeddingBagCollection(tables=[
        EmbeddingBagConfig(num_embeddings=10, embedding_dim=4, name=n, feature_names=[n])
        for n in ("a", "b")])
    from embtables.torch import apply_optimizer_in_backward
    with pytest.raises(NotImplementedError, match="momentum"):
        apply_optimizer_in_backward(torch.optim.SGD, ebc.parameters(),
                                    {"lr": 0.1, "momentum": 0.9})
    with pytest.raises(NotImplementedError, match=r"tables \['b'\]"):
        apply_optimizer_in_backward(torch.optim.SGD, [ebc.embedding_bags["a"].weight],
                                    {"lr": 0.1})
    assert ebc.optimizer is None
    apply_optimizer_in_backward(torch.optim.Adam, ebc.parameters(), {"lr": 0.01})
    assert ebc.optimizer.kind == "adam"


def kjt_pair(weighted=True):
    gen = torch.Generator().manual_seed(5)
    lengths = torch.randint(0, 4, (3 * 4,), generator=gen)
    values = torch.randint(0, 9, (int(lengths.sum()),), generator=gen)
    w = torch.rand(len(values), generator=gen) if weighted else None
    keys = ["a", "b", "c"]
    return KeyedJaggedTensor(keys, values, w, lengths), \
        rt.KeyedJaggedTensor(keys, values, w, lengths)


def same_kjt(x, y):
    assert x.keys() == y.keys() and x.stride() == y.stride()
    assert torch.equal(x.values(), y.values()) and torch.equal(x.lengths(), y.lengths())
    assert torch.equal(x.offsets(), y.offsets())
    assert torch.equal(x.weights(), y.weights())


def test_kjt_methods_agree_with_torchrecs():
    ours, ref = kjt_pair()
    assert ours.length_per_key() == ref.length_per_key()
    assert ours.offset_per_key() == ref.offset_per_key()
    for k in ours.keys():
        a, b = ours[k], ref[k]
        assert isinstance(a, JaggedTensor)
        assert torch.equal(a.values(), b.values()) and torch.equal(a.lengths(), b.lengths())
        assert torch.equal(a.offsets(), b.offsets()) and torch.equal(a.weights(), b.weights())
        assert [t.tolist() for t in a.to_dense()] == [t.tolist() for t in b.to_dense()]
        assert torch.equal(ours.to_dict()[k].values(), a.values())
    same_kjt(ours.permute([2, 0, 1]), ref.permute([2, 0, 1]))
    same_kjt(ours.permute([1, 1]), ref.permute([1, 1]))
    for x, y in zip(ours.split([1, 2]), ref.split([1, 2])):
        same_kjt(x, y)
    same_kjt(ours.to("cpu"), ref.to("cpu"))
    assert ours.to("cpu", dtype=torch.float64).weights().dtype == torch.float64
    with pytest.raises(ValueError, match="do not add up"):
        ours.split([1, 1])
    with pytest.raises(KeyError, match="no feature 'z'"):
        ours["z"]
    with pytest.raises(ValueError, match="lengths or offsets"):
        JaggedTensor(torch.tensor([1]))


def test_permuted_kjt_gives_the_same_pooling():
    ebc = EmbeddingBagCollection(tables=[
        EmbeddingBagConfig(num_embeddings=9, embedding_dim=4, name=f"t{k}",
                           feature_names=[k]) for k in "abc"])
    ours, _ = kjt_pair()
    with torch.no_grad():
        a = ebc(ours).to_dict()
        b = ebc(ours.permute([2, 0, 1])).to_dict()
    for k in "abc":
        assert torch.equal(a[k], b[k])


def test_keyed_tensor_regroup():
    v1, v2 = torch.randn(3, 5), torch.randn(3, 2)
    ours = [KeyedTensor(["x", "y"], [2, 3], v1), KeyedTensor(["z"], [2], v2)]
    ref = [rt.KeyedTensor(["x", "y"], [2, 3], v1), rt.KeyedTensor(["z"], [2], v2)]
    groups = [["z", "x"], ["y"]]
    for a, b in zip(KeyedTensor.regroup(ours, groups), rt.KeyedTensor.regroup(ref, groups)):
        assert torch.equal(a, b)
    with pytest.raises(KeyError, match="no key 'w'"):
        KeyedTensor.regroup(ours, [["w"]])


# ---- refusals (each of these was accepted, or failed obscurely, before) ------------------

def two_tables():
    return EmbeddingBagCollection(tables=[
        EmbeddingBagConfig(num_embeddings=10, embedding_dim=4, name=n, feature_names=[n])
        for n in ("a", "b")], optimizer="sgd", lr=0.1)


@pytest.mark.parametrize("keys", [["a", "b"], ["b", "a"]])
def test_kjt_weights_longer_than_values_refused(keys):
    ebc = two_tables()
    before = [w.clone() for w in ebc.weights]
    lengths = torch.tensor([1, 2, 0, 1])
    values = torch.tensor([1, 2, 3, 4])
    for n in (5, 3):
        kjt = KeyedJaggedTensor(keys, values, torch.ones(n), lengths)
        with pytest.raises(et.InvalidError, match=f"{n} weights for 4 values"):
            ebc(kjt).values().sum().backward()
    for w, b in zip(ebc.weights, before):
        assert torch.equal(w, b)


def test_collection_weights_longer_than_ids_refused():
    c = et.Collection([et.Table.create(10, 4)], "sum")
    out = torch.zeros(2, 4)
    form, ids, off, w = et._prepare(torch.tensor([1, 2, 3]), torch.tensor([0, 1, 3]),
                                    torch.ones(4))
    with pytest.raises(et.InvalidError, match="4 per_sample_weights for 3 ids"):
        c.forward(form, ids, off, w, out.numpy())


@pytest.mark.parametrize("keys", [["a", "b"], ["b", "a"]])
def test_kjt_stride_disagreeing_with_lengths_refused(keys):
    ebc = two_tables()
    lengths = torch.tensor([1, 1, 1, 1, 1, 1])
    kjt = KeyedJaggedTensor(keys, torch.arange(6), None, lengths, stride=2)
    with pytest.raises(et.InvalidError, match="stride 2 but 6 lengths"):
        ebc(kjt)
    with pytest.raises(et.InvalidError, match="stride 2 but 6 lengths"):
        kjt.length_per_key()


@pytest.mark.parametrize("field,value", [("num_embeddings", 0), ("embedding_dim", 0),
                                         ("num_embeddings", -3), ("num_embeddings", 2.5)])
def test_bad_config_sizes_refused(field, value):
    kw = {"num_embeddings": 10, "embedding_dim": 4, field: value}
    with pytest.raises(et.InvalidError, match=f"table 'bad': {field} = {value}"):
        EmbeddingBagCollection(tables=[EmbeddingBagConfig(name="bad", feature_names=["x"],
                                                          **kw)])


def test_pooling_none_refused_by_the_bag_collection():
    assert PoolingType.NONE.value == "NONE"
    with pytest.raises(NotImplementedError, match="PoolingType.NONE"):
        EmbeddingBagCollection(tables=[EmbeddingBagConfig(
            num_embeddings=4, embedding_dim=4, name="n", feature_names=["n"],
            pooling=PoolingType.NONE)])


# ---- shared tables and EmbeddingCollection, against the stand-in -------------------------

def shared_configs(mod, cls="EmbeddingBagConfig", **kw):
    cfg = getattr(mod, cls)
    return [cfg(num_embeddings=30, embedding_dim=4, name="t_ab", feature_names=["a", "b"], **kw),
            cfg(num_embeddings=20, embedding_dim=6, name="t_c", feature_names=["c"], **kw)]


def batches(n, weighted=False):
    gen = torch.Generator().manual_seed(9)
    for _ in range(n):
        lengths = torch.randint(0, 4, (3 * 5,), generator=gen)
        values = torch.randint(0, 20, (int(lengths.sum()),), generator=gen)
        w = torch.rand(len(values), generator=gen) if weighted else None
        yield ["c", "a", "b"], values, w, lengths, torch.randn(5, 3 * 4 + 2, generator=gen)


@pytest.mark.parametrize("fused", [False, True])
def test_shared_table_pools_each_feature_as_torchrec(fused):
    import embtables.torch as ours_mod
    models = []
    for mod in (ours_mod, rt):
        torch.manual_seed(3)
        ebc = mod.EmbeddingBagCollection(tables=shared_configs(mod))
        if fused:
            mod.apply_optimizer_in_backward(torch.optim.Adagrad, ebc.parameters(), {"lr": 0.1})
            opt = None
        else:
            opt = torch.optim.Adagrad(ebc.parameters(), lr=0.1)
        outs = []
        for keys, values, w, lengths, dy in batches(4, weighted=True):
            kt = ebc(mod.KeyedJaggedTensor(keys, values, w, lengths))
            assert kt.keys() == ["a", "b", "c"] and kt.length_per_key() == [4, 4, 6]
            outs.append(kt.values().detach().clone())
            (kt.values() * dy[:, :14]).sum().backward()
            if opt:
                opt.step()
                opt.zero_grad()
        models.append((ebc, outs))
    (a, oa), (b, ob) = models
    assert a.optimizer is not None if fused else a.optimizer is None
    assert "features=['a', 'b']" in repr(a) and "width=14" in repr(a)
    for x, y in zip(oa, ob):
        torch.testing.assert_close(x, y, rtol=0, atol=1e-5)
    for name in ("t_ab", "t_c"):
        torch.testing.assert_close(a.embedding_bags[name].weight.detach(),
                                   b.embedding_bags[name].weight.detach(), rtol=0, atol=1e-5)


@pytest.mark.parametrize("fused", [False, True])
def test_embedding_collection_rows_as_torchrec(fused):
    import embtables.torch as ours_mod
    models = []
    for mod in (ours_mod, rt):
        torch.manual_seed(4)
        ec = mod.EmbeddingCollection(tables=shared_configs(mod, "EmbeddingConfig"))
        if fused:
            mod.apply_optimizer_in_backward(torch.optim.SGD, ec.parameters(), {"lr": 0.5})
            opt = None
        else:
            opt = torch.optim.SGD(ec.parameters(), lr=0.5)
        outs = []
        for keys, values, _, lengths, _ in batches(3):
            d = ec(mod.KeyedJaggedTensor(keys, values, None, lengths))
            assert sorted(d) == ["a", "b", "c"]
            loss = 0
            for f, jt in d.items():
                assert jt.values().shape[0] == int(jt.lengths().sum())
                outs.append((f, jt.values().detach().clone(), jt.lengths().clone()))
                loss = loss + (jt.values() * torch.arange(jt.values().shape[1])).sum()
            loss.backward()
            if opt:
                opt.step()
                opt.zero_grad()
        models.append((ec, outs))
    (a, oa), (b, ob) = models
    for (fa, va, la), (fb, vb, lb) in zip(sorted(oa, key=lambda x: x[0]),
                                          sorted(ob, key=lambda x: x[0])):
        assert fa == fb and torch.equal(la, lb)
        torch.testing.assert_close(va, vb, rtol=0, atol=1e-5)
    sd = a.state_dict()
    assert "embeddings.t_ab.weight" in sd and "embeddings.t_c.weight" in sd
    for name in ("t_ab", "t_c"):
        torch.testing.assert_close(a.embeddings[name].weight.detach(),
                                   b.embeddings[name].weight.detach(), rtol=0, atol=1e-5)


def test_embedding_collection_need_indices_and_errors():
    from embtables.torch import EmbeddingCollection, EmbeddingConfig
    ec = EmbeddingCollection(tables=[EmbeddingConfig(num_embeddings=10, embedding_dim=2,
                                                     name="t", feature_names=["x"])],
                             need_indices=True, optimizer="sgd")
    kjt = KeyedJaggedTensor(["x"], torch.tensor([3, 1, 3]), None, torch.tensor([2, 1]))
    jt = ec(kjt)["x"]
    assert torch.equal(jt.weights(), torch.tensor([3, 1, 3]))
    assert torch.equal(jt.values()[0], ec.embeddings["t"].weight[3])
    with pytest.raises(KeyError, match="table 't', feature 'x'.*no feature 'x'"):
        ec(KeyedJaggedTensor(["y"], torch.tensor([1]), None, torch.tensor([1])))
    with pytest.raises(et.RangeError, match="table 't', feature 'x'"):
        ec(KeyedJaggedTensor(["x"], torch.tensor([10]), None, torch.tensor([1])))
    with pytest.raises(NotImplementedError, match="take a KeyedJaggedTensor"):
        ec([torch.tensor([1])])


def test_embtables_tables_in_the_module(tmp_path):
    """An embtables.Table (f32, or int8 rows) is a module table over its own memory; a
    tiered one is the table itself (test_torchrec_meta.py trains it)."""
    from embtables.torch import EmbeddingBagCollection as EBC
    f = et.Table.create(20, 4, init=("uniform", -1, 1))
    q = et.Table.create(20, 4, dtype="int8")
    q.quantize_from(f)
    ebc = EBC([f, q], optimizer="sgd", lr=0.1)
    assert ebc.weights[0].data_ptr() == f.numpy().ctypes.data
    assert ebc.embedding_bags["table_1"].qdtype == "int8"
    with torch.no_grad():
        out = ebc([torch.tensor([3, 5]), torch.tensor([3, 5])],
                  [torch.tensor([0, 1]), torch.tensor([0, 1])])
    torch.testing.assert_close(out[:, 4:], out[:, :4], rtol=0, atol=0.02)  # int8 of the same rows
    tiered = et.Table.tiered(tmp_path / "t.tier", 20, 4)
    assert EBC([tiered]).tables[0] is tiered
