# SPDX-License-Identifier: BSD-2-Clause
"""Quantized (int8 / int4) tables through the Python API, against torch's quantized
embedding bags on the same prepacked rows.

Sum order: the library adds a bag's rows in bag order, each element as
acc + fma(q, w * scale, w * bias) in f32 (kernels/quant_c.c); Debian's torch 1.13 adds the
same terms per row with its own fusion of the multiply-add, so the results agree within
f32 rounding (rtol 1e-5), as tests/python_quant/test_quant_torch.py finds in C."""
import numpy as np
import pytest
import torch

import embtables as et
from embtables.torch import EmbeddingBagCollection, EmbeddingBagConfig, DataType

PREPACK = {"int8": torch.ops.quantized.embedding_bag_byte_prepack,
           "int4": torch.ops.quantized.embedding_bag_4bit_prepack}
BAG = {"int8": torch.ops.quantized.embedding_bag_byte_rowwise_offsets,
       "int4": torch.ops.quantized.embedding_bag_4bit_rowwise_offsets}
ROW_BYTES = {"int8": lambda d: d + 8, "int4": lambda d: d // 2 + 4}


def bags(g, nrows, nbags, maxlen=25):
    lens = torch.randint(0, maxlen, (nbags,), generator=g)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(lens, 0)])
    ids = torch.randint(0, nrows, (int(offsets[-1]),), generator=g)
    return ids, offsets


def assert_close(got, want):
    """Within f32 rounding of sums of terms up to max |want| (test_quant_torch.py's rule)."""
    got, want = np.asarray(got), np.asarray(want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * (np.abs(want).max() + 1))


def torch_bags(dt, packed, ids, offsets, psw=None):
    return BAG[dt](packed, ids, offsets, mode=0, per_sample_weights=psw,
                   include_last_offset=True)


@pytest.mark.parametrize("dt", ["int8", "int4"])
@pytest.mark.parametrize("D", [16, 64, 100])
@pytest.mark.parametrize("weighted", [False, True])
def test_table_wraps_prepacked_rows_and_equals_torch(dt, D, weighted):
    g = torch.Generator().manual_seed(D + 3 * weighted + len(dt))
    packed = PREPACK[dt](torch.randn(300, D, generator=g))
    t = et.Table(packed, dtype=dt)
    assert (t.dim, t.num_embeddings, t.dtype) == (D, 300, dt)
    assert t.numpy().shape == (300, ROW_BYTES[dt](D))
    assert np.shares_memory(t.numpy(), packed.numpy())  # wrapped, not copied
    ids, offsets = bags(g, 300, 40)
    psw = torch.rand(ids.numel(), generator=g) * 2 - 0.5 if weighted else None
    got = t.lookup(ids, offsets, per_sample_weights=psw, include_last_offset=True)
    want = torch_bags(dt, packed, ids, offsets, psw)
    assert_close(got.numpy(), want.numpy())


@pytest.mark.parametrize("dt", ["int8", "int4"])
def test_owned_table_exports_its_rows(dt):
    """The buffer of an owned quantized table is its rows' bytes (row size, not D x 0)."""
    t = et.Table.create(10, 12, dtype=dt)
    a = t.numpy()
    assert a.dtype == np.uint8 and a.shape == (10, ROW_BYTES[dt](12))
    src = et.Table(np.linspace(-1, 2, 120, dtype=np.float32).reshape(10, 12))
    t.quantize_from(src)
    assert a.any()  # the view sees the rows quantize_from wrote
    step = 3 / 255 if dt == "int8" else 3 / 15
    np.testing.assert_allclose(t.to_float(), src.numpy(), atol=step / 2 + 1e-3)


def test_wrap_refuses_what_is_not_quantized_rows():
    with pytest.raises(et.InvalidError, match="uint8"):
        et.Table(np.zeros((4, 16), np.float32), dtype="int8")
    with pytest.raises(et.InvalidError, match="int4 rows"):
        et.Table(np.zeros((4, 4), np.uint8), dtype="int4")  # D = 0
    with pytest.raises(et.InvalidError, match="int8 rows"):
        et.Table(np.zeros((4, 8), np.uint8), dtype="int8")


@pytest.mark.parametrize("dt,dtype", [("int8", "int8"), ("int4", torch.quint4x2),
                                      ("int8", torch.quint8)])
def test_collection_wraps_prepacked_tensors(dt, dtype):
    g = torch.Generator().manual_seed(5)
    packed = [PREPACK[dt](torch.randn(n, d, generator=g)) for n, d in [(200, 16), (90, 32)]]
    ebc = EmbeddingBagCollection(packed, dtype=dtype, optimizer=None)
    assert [w.data_ptr() for w in ebc.weights] == [p.data_ptr() for p in packed]
    assert ebc.dims == [16, 32]
    ids, offs = zip(*(bags(g, p.shape[0], 30) for p in packed))
    with torch.no_grad():
        out = ebc(list(ids), [o[:-1] for o in offs])
    want = torch.cat([torch_bags(dt, p, i, o) for p, i, o in zip(packed, ids, offs)], 1)
    assert_close(out.numpy(), want.numpy())
    sd = ebc.state_dict()
    assert sd["embedding_bags.table_1.weight"].dtype == torch.uint8
    assert torch.equal(sd["embedding_bags.table_1.weight"], packed[1])


def config_module(dt, threads, seed=11):
    torch.manual_seed(seed)
    cfgs = [EmbeddingBagConfig(name="a", embedding_dim=16, num_embeddings=300,
                               feature_names=["fa"], dtype=dt),
            EmbeddingBagConfig(name="b", embedding_dim=8, num_embeddings=50,
                               feature_names=["fb"], data_type=DataType.INT4)]
    return EmbeddingBagCollection(cfgs, optimizer="adagrad", lr=0.1, threads=threads)


def train(ebc, steps=5):
    from embtables.torch import KeyedJaggedTensor
    g = torch.Generator().manual_seed(2)
    for _ in range(steps):
        lengths = torch.randint(0, 6, (2 * 32,), generator=g)
        n = int(lengths.sum())
        values = torch.cat([torch.randint(0, 300, (int(lengths[:32].sum()),), generator=g),
                            torch.randint(0, 50, (int(lengths[32:].sum()),), generator=g)])
        assert values.numel() == n
        kt = ebc(KeyedJaggedTensor(["fa", "fb"], values, lengths=lengths))
        (kt.values() ** 2).sum().backward()


@pytest.mark.parametrize("dt", ["int8", torch.quint8])
def test_config_tables_train_deterministically(dt):
    """Config tables of int8 / int4 rows: uint8 weights whose lookup equals torch's on
    the same bytes; trained by the fused optimizer (requantized with stochastic rounding)
    to the same bits at 1 and 2 threads; the state_dict restores them exactly."""
    one, two = config_module(dt, 1), config_module(dt, 2)
    w0 = [w.clone() for w in one.weights]
    assert [w.dtype for w in w0] == [torch.uint8, torch.uint8]
    assert [w.shape[1] for w in w0] == [16 + 8, 8 // 2 + 4]
    train(one)
    train(two)
    for a, b, c in zip(one.weights, two.weights, w0):
        assert torch.equal(a, b) and not torch.equal(a, c)
    ids = torch.arange(0, 300, 3)
    offs = torch.arange(0, 101, 5)
    got = one.tables[0].lookup(ids, offs, include_last_offset=True)
    want = torch_bags("int8", one.weights[0], ids, offs)
    assert_close(got.numpy(), want.numpy())
    fresh = config_module(dt, 1, seed=12)
    fresh.load_state_dict(one.state_dict())
    for a, b in zip(one.weights, fresh.weights):
        assert torch.equal(a, b)
    fresh.half()  # quantized tables keep their rows
    assert torch.equal(fresh.weights[0], one.weights[0])


def test_plain_mode_mixed_tables():
    """optimizer=None with a float and an int8 config table: the float table's Parameter
    gets its sparse gradient, the quantized one (a buffer) none; .half() converts the
    float table only; float weights quantized in the older forms."""
    from embtables.torch import KeyedJaggedTensor
    torch.manual_seed(3)
    cfgs = [EmbeddingBagConfig(name="f", embedding_dim=8, num_embeddings=30,
                               feature_names=["x"]),
            EmbeddingBagConfig(name="q", embedding_dim=8, num_embeddings=40,
                               feature_names=["y"], dtype="int8")]
    ebc = EmbeddingBagCollection(cfgs)
    assert [n for n, _ in ebc.named_parameters()] == ["embedding_bags.f.weight"]
    kjt = KeyedJaggedTensor(["x", "y"], torch.tensor([1, 2, 3, 4, 5]),
                            lengths=torch.tensor([1, 2, 2, 0]))
    ebc(kjt).values().sum().backward()
    assert ebc.embedding_bags["f"].weight.grad is not None
    ebc.half()
    assert [w.dtype for w in ebc.weights] == [torch.float16, torch.uint8]
    q = EmbeddingBagCollection([torch.randn(30, 8)], dtype="int4")
    assert q.weights[0].shape == (30, 8) and q.weights[0].dtype == torch.uint8
    with pytest.raises(et.InvalidError, match="even"):
        EmbeddingBagCollection([(10, 7)], dtype="int4")


def test_saver_round_trip(tmp_path):
    """A trained int4 config table and its Adagrad state through saver() / restore(): the
    same rows and state; read_checkpoint dequantizes them as the table does."""
    from embtables.torch import KeyedJaggedTensor

    def make(seed):
        torch.manual_seed(seed)
        return EmbeddingBagCollection([EmbeddingBagConfig(
            name="a", embedding_dim=8, num_embeddings=10, feature_names=["a"], dtype="int4")],
            optimizer="adagrad", lr=0.1)
    e = make(0)
    e(KeyedJaggedTensor(["a"], torch.tensor([1, 2, 3]), lengths=torch.tensor([2, 1]))) \
        .values().sum().backward()
    e.saver(tmp_path).save(1)
    f = make(5)
    assert not torch.equal(f.weights[0], e.weights[0])
    path = et.latest_checkpoint(tmp_path)
    assert f.restore(path) == 1
    assert torch.equal(f.weights[0], e.weights[0])
    assert torch.equal(f.optimizer_state(0)[0], e.optimizer_state(0)[0])
    np.testing.assert_array_equal(et.read_checkpoint(path).tensors["a"], e.tables[0].to_float())
