# SPDX-License-Identifier: BSD-2-Clause
"""embtables for PyTorch: EmbeddingBagCollection, an nn.Module over many embedding bags,
shaped as TorchRec's (a TorchRec script switches by changing its imports).

    from embtables.torch import (EmbeddingBagCollection, EmbeddingBagConfig,
                                 KeyedJaggedTensor)
    ebc = EmbeddingBagCollection(tables=[
        EmbeddingBagConfig(name="t_user", embedding_dim=16, num_embeddings=1000,
                           feature_names=["user"]),
        EmbeddingBagConfig(name="t_item", embedding_dim=16, num_embeddings=500,
                           feature_names=["item"], pooling=PoolingType.MEAN)],
        optimizer="adagrad", lr=0.05)
    kt = ebc(KeyedJaggedTensor(keys=["user", "item"], values=ids, lengths=lengths))
    kt.to_dict()["item"]                 # B x 16; kt.values() is B x 32

The input's features go to their tables by name; the output is a KeyedTensor (B x ΣD,
DLRM's layout, keys = the features). With an optimizer (FBGEMM's table-batched contract)
the backward applies the library's deduplicating fused optimizer to the tables in place and
returns no weight gradient; with optimizer=None (the default with EmbeddingBagConfig tables,
as TorchRec) the weights are Parameters that receive sparse_coo gradients for torch's
optimizers (SGD, Adagrad, SparseAdam); apply_optimizer_in_backward(torch.optim.Adagrad,
ebc.parameters(), {"lr": 0.05}), as a TorchRec script writes it, switches the module to
the fused optimizer. A table may serve several features (feature_names=[f1, f2]: each
pooled on its own); EmbeddingCollection gives unpooled rows. The older forms (per-table
lists, FBGEMM's flat ids with T*B+1 offsets, values with lengths) are accepted too and
return a plain tensor.
"""
import dataclasses as _dc
import enum as _enum
import math as _math
import re as _re
import warnings as _warnings
import weakref as _weakref

import numpy as _np
import torch as _torch

import embtables as _et
from embtables import _grouped, _meta, _tiered
from embtables._dmp import DistributedModelParallel
from embtables._jagged import JaggedTensor, KeyedJaggedTensor, KeyedTensor
from embtables._optim import (RowWiseAdagrad, apply_optimizer_in_backward,
                              in_backward_optimizer_filter)

__all__ = ["EmbeddingBagCollection", "EmbeddingBagConfig", "EmbeddingCollection",
           "EmbeddingConfig", "BaseEmbeddingConfig", "KeyedJaggedTensor", "KeyedTensor",
           "JaggedTensor", "PoolingType", "DataType", "apply_optimizer_in_backward",
           "in_backward_optimizer_filter", "RowWiseAdagrad", "DistributedModelParallel"]

_nn = _torch.nn


class PoolingType(_enum.Enum):
    """How a bag's rows are combined (TorchRec's PoolingType; SQRTN is TensorFlow's)."""
    SUM = "SUM"
    MEAN = "MEAN"
    SQRTN = "SQRTN"
    NONE = "NONE"


class DataType(_enum.Enum):
    """A table's element type (TorchRec's DataType). INT8 / INT4: row-wise quantized rows
    (torch's prepacked layouts), dequantized in the lookup, trained by the fused optimizer."""
    FP32 = "FP32"
    FP16 = "FP16"
    BF16 = "BF16"
    INT8 = "INT8"
    INT4 = "INT4"


_DTYPES = {"FP32": _torch.float32, "FP16": _torch.float16, "BF16": _torch.bfloat16,
           "INT8": "int8", "INT4": "int4"}
_TABLE_DTYPES = (_torch.float32, _torch.float16, _torch.bfloat16)
# quantized tables: the dtype names, and torch's quantized dtypes of the same rows
_QUANTIZED = {"int8": "int8", "int4": "int4", _torch.quint8: "int8", _torch.quint4x2: "int4"}


@_dc.dataclass
class BaseEmbeddingConfig:
    """The fields of a table's config, in TorchRec's order (EmbeddingBagConfig and
    EmbeddingConfig add theirs)."""
    num_embeddings: int
    embedding_dim: int
    name: str = ""
    data_type: DataType = DataType.FP32
    feature_names: list = _dc.field(default_factory=list)
    weight_init_max: float = None
    weight_init_min: float = None
    num_embeddings_post_pruning: int = None
    init_fn: object = None
    need_pos: bool = False


@_dc.dataclass
class EmbeddingBagConfig(BaseEmbeddingConfig):
    """One table of an EmbeddingBagCollection, as TorchRec's EmbeddingBagConfig.

    num_embeddings x embedding_dim rows; name: the table's (unique); feature_names: the
    input features looked up in it (several: a shared table, each feature pooled on its
    own, side by side in the output); pooling: PoolingType or 'sum' /
    'mean' / 'sqrtn'; data_type (DataType) or dtype (torch.float32, float16, bfloat16;
    "int8" / torch.quint8, "int4" / torch.quint4x2: row-wise quantized): the table's element
    type (a quantized table's weight is its uint8 rows, drawn in f32 then quantized to
    nearest); init_fn(weight) initialises the float32 weight in place, else
    uniform in [weight_init_min, weight_init_max], default ±sqrt(1 / num_embeddings)
    (TorchRec's). need_pos and num_embeddings_post_pruning are accepted and unused.
    """
    pooling: PoolingType = PoolingType.SUM
    dtype: object = None


@_dc.dataclass
class EmbeddingConfig(BaseEmbeddingConfig):
    """One table of an EmbeddingCollection, as TorchRec's EmbeddingConfig: an
    EmbeddingBagConfig without pooling (the rows are not pooled)."""
    dtype: object = None


def _enum_name(x):
    """'SUM' of PoolingType.SUM (ours or TorchRec's), of 'sum' or of 'SUM'."""
    return (x.name if isinstance(x, _enum.Enum) else str(x)).upper()


def _config_dtype(cfg):
    """The torch dtype of a config (dtype wins over data_type)."""
    if getattr(cfg, "dtype", None) is not None:
        return _check_dtype(cfg.dtype, f"table '{cfg.name}'")
    name = _enum_name(getattr(cfg, "data_type", DataType.FP32))
    if name not in _DTYPES:
        raise NotImplementedError(f"table '{cfg.name}': data_type {name} is not supported yet "
                                  "(FP32, FP16, BF16, INT8, INT4)")
    return _DTYPES[name]


def _check_dtype(dtype, what):
    """A table's torch float dtype, or "int8" / "int4" for quantized rows."""
    if isinstance(dtype, (str, _torch.dtype)) and dtype in _QUANTIZED:
        return _QUANTIZED[dtype]
    if dtype not in _TABLE_DTYPES:
        raise TypeError(f"{what}: tables are float32, float16 or bfloat16 (or quantized: "
                        f"'int8' / torch.quint8, 'int4' / torch.quint4x2), not {dtype}")
    return dtype


def _row_bytes(q, d):
    return d + 8 if q == "int8" else d // 2 + 4


def _quantize(w, q, what):
    """The uint8 rows (torch's prepacked layout) of the float weight w quantized by the
    library to nearest (bias = the row's minimum: emb_table_quantize)."""
    n, d = w.shape
    if q == "int4" and d % 2:
        raise _et.InvalidError(f"{what}: int4 rows need an even embedding_dim, not {d}")
    out = _torch.empty(n, _row_bytes(q, d), dtype=_torch.uint8)
    _et.Table(out, dtype=q).quantize_from(_et.Table(w.detach().contiguous()))
    return out


def _dim(weight, q):
    """The embedding_dim of a weight: its width, or for quantized rows the D of their size."""
    return weight.shape[1] if q is None else \
        weight.shape[1] - 8 if q == "int8" else (weight.shape[1] - 4) * 2


def _is_config(spec):
    return hasattr(spec, "num_embeddings") and hasattr(spec, "feature_names")


def _check_config(c):
    """A config's sizes: positive integers (else InvalidError naming the table)."""
    for field in ("num_embeddings", "embedding_dim"):
        n = getattr(c, field)
        if isinstance(n, bool) or not isinstance(n, (int, _np.integer)) or n < 1:
            raise _et.InvalidError(f"table '{c.name}': {field} = {n!r}, expected an integer "
                                   ">= 1")


def _config_weights(configs, normal_first=True):
    """The initial weights of the configs, drawn as TorchRec draws them (the same bits from
    the same seed): every table made as nn.EmbeddingBag makes it (normal; not in
    reset_parameters: normal_first=False), then each one's init_fn, default uniform in
    [weight_init_min, weight_init_max] = ±sqrt(1 / rows)."""
    ws = []
    for c in configs:
        _check_config(c)
    dts = [_config_dtype(c) for c in configs]
    for c, dt in zip(configs, dts):
        w = _torch.empty(int(c.num_embeddings), int(c.embedding_dim),
                         dtype=_torch.float32 if isinstance(dt, str) else dt)
        if normal_first:
            _nn.init.normal_(w)
        ws.append(w)
    with _torch.no_grad():
        for c, w in zip(configs, ws):
            if c.init_fn is not None:
                c.init_fn(w)
                continue
            bound = _math.sqrt(1 / w.shape[0])
            _nn.init.uniform_(w, c.weight_init_min if c.weight_init_min is not None else -bound,
                              c.weight_init_max if c.weight_init_max is not None else bound)
    return [_quantize(w, dt, f"table '{c.name}'") if isinstance(dt, str) else w
            for c, w, dt in zip(configs, ws, dts)]


@_dc.dataclass
class _Spec:
    """One table as the module holds it."""
    name: str
    feature: str
    weight: object
    mode: str
    max_norm: float = None
    qdtype: str = None  # "int8" / "int4": weight is uint8 rows
    features: list = None  # every feature of the table (shared: several); None: [feature]
    tiered: object = None  # a tiered embtables.Table (weight None: its rows are in a file)


def _legacy_spec(i, spec, dtype):
    """_Spec of one entry of the older `tables` forms; with a quantized dtype, uint8
    weights are prepacked rows (wrapped as they are) and float ones are quantized."""
    if isinstance(spec, _et.Table):
        return _table_spec(i, spec)
    s = _legacy_float_spec(i, spec, dtype)
    if isinstance(dtype, str):
        s.qdtype = dtype
        if s.weight.dtype != _torch.uint8:
            s.weight = _quantize(s.weight, dtype, f"table '{s.name}'")
    return s


def _table_spec(i, table):
    """_Spec of an embtables.Table: its memory as the weight (no copy; int8 / int4 rows as
    their uint8 bytes); a tiered table (rows in a file) has no weight tensor (_tiered.py)."""
    name = f"table_{i}"
    q = table.dtype if table.dtype in ("int8", "int4") else None
    try:
        a = table.numpy()
    except BufferError:
        return _Spec(name, name, None, None, qdtype=q, tiered=table)
    src = table.source
    if isinstance(src, _torch.Tensor):
        w = src.data
    elif table.dtype == "bf16":
        w = _torch.from_numpy(a.view(_np.int16)).view(_torch.bfloat16)
    else:
        w = _torch.from_numpy(a)
    return _Spec(name, name, w, None, qdtype=q)


def _legacy_float_spec(i, spec, dtype):
    name = f"table_{i}"
    if isinstance(spec, _nn.EmbeddingBag):
        return _Spec(name, name, spec.weight.data, spec.mode, spec.max_norm)
    if isinstance(spec, dict):
        w = spec.get("weight")
        if w is None:
            w = _new_weight(spec["num_embeddings"], spec["embedding_dim"], dtype)
        return _Spec(name, name, w, spec.get("mode"), spec.get("max_norm"))
    if isinstance(spec, _torch.Tensor):
        return _Spec(name, name, spec.data, None)
    if isinstance(spec, _np.ndarray):
        return _Spec(name, name, _torch.from_numpy(spec), None)
    n, d = spec
    return _Spec(name, name, _new_weight(n, d, dtype), None)


def _config_spec(cfg, weight, unpooled=False):
    q = _config_dtype(cfg)
    pooling = _enum_name(getattr(cfg, "pooling", PoolingType.SUM))
    if pooling == "NONE" and not unpooled:
        raise NotImplementedError(f"table '{cfg.name}': PoolingType.NONE (unpooled rows): "
                                  "use EmbeddingCollection")
    if not cfg.feature_names:
        raise ValueError(f"table '{cfg.name}': no feature_names")
    if not cfg.name:
        raise ValueError(f"a table of feature '{cfg.feature_names[0]}' has no name")
    return _Spec(cfg.name, cfg.feature_names[0], weight, "sum" if unpooled else pooling.lower(),
                 qdtype=q if isinstance(q, str) else None, features=list(cfg.feature_names))


def _new_weight(n, d, dtype):
    w = _torch.empty(int(n), int(d), dtype=_torch.float32)
    _nn.init.normal_(w)  # nn.EmbeddingBag's initialisation
    return w if isinstance(dtype, str) else w.to(dtype)  # quantized by _legacy_spec


class _Lookup(_torch.autograd.Function):
    """forward: the collection's lookup; backward: the fused update (returns no gradient)
    or, in plain mode, sparse gradients of the weights."""

    @staticmethod
    def forward(ctx, placeholder, module, batch, *weights):
        out, step = module._lookup(batch)
        ctx.module, ctx.step, ctx.batch = module, step, batch
        return out

    @staticmethod
    def backward(ctx, grad):
        module, step = ctx.module, _grouped.once(ctx, "step")
        if grad.dtype != _torch.float32:
            raise TypeError(f"{module._label()}: the output gradient is {grad.dtype}, "
                            "expected torch.float32")
        grad = grad.contiguous()
        if module.optimizer is not None:
            module._culprit(module._coll.backward, step, grad.numpy())
            return (None, None, None) + (None,) * len(module._weights)
        grads = module._sparse_grads(step, ctx.batch, grad)
        return (None, None, None) + tuple(grads)


class _Bag(_nn.Module):
    """One table of an EmbeddingBagCollection (embedding_bags[name]): its weight and, with
    a fused optimizer, the optimizer's state (optimizer_state, optimizer_step in the
    state_dict). A quantized table's weight is a buffer of its uint8 rows (no gradient:
    trained by the fused optimizer only)."""

    def __init__(self, spec, parameter):
        super().__init__()
        self.feature, self.mode, self.qdtype = spec.feature, spec.mode, spec.qdtype
        self.features = spec.features or [spec.feature]
        self._table = self._opt = None
        self._tiered = spec.tiered
        if spec.tiered is not None:
            self.weight = None  # the rows are in the table's file: state_dict copies them
        elif parameter and spec.qdtype is None:
            self.weight = spec.weight if isinstance(spec.weight, _nn.Parameter) \
                else _nn.Parameter(spec.weight)
        else:
            self.register_buffer("weight", spec.weight)

    def _attach(self, table, optimizer):
        """Wraps the (new) C table and exposes the optimizer's state as a buffer."""
        self._table, self._opt = table, optimizer
        # a tiered table's state is beside its rows in its file (not a tensor)
        st = optimizer.state(table)[0] if optimizer is not None and self._tiered is None \
            else None
        if st is not None:
            self.register_buffer("optimizer_state", _torch.from_numpy(st))
        elif "optimizer_state" in self._buffers:
            del self._buffers["optimizer_state"]

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        if self._tiered is not None:
            destination[prefix + "weight"] = _tiered.rows(self._tiered)
        if self._opt is not None:
            destination[prefix + "optimizer_step"] = _torch.tensor(
                self._opt.state(self._table)[1], dtype=_torch.int64)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)
        if self._tiered is not None:
            self._load_tiered(state_dict, prefix + "weight", strict, missing_keys,
                              unexpected_keys, error_msgs)
        key = prefix + "optimizer_step"
        if key in unexpected_keys:
            unexpected_keys.remove(key)
        if self._opt is not None and key in state_dict:
            self._opt.set_step(self._table, int(state_dict[key]))
        elif self._opt is not None and strict:
            missing_keys.append(key)

    def _load_tiered(self, state_dict, key, strict, missing_keys, unexpected_keys,
                     error_msgs):
        if key in unexpected_keys:
            unexpected_keys.remove(key)
        if key not in state_dict:
            if strict:
                missing_keys.append(key)
            return
        try:
            _tiered.load(self._tiered, state_dict[key], key)
        except (_et.Error, TypeError) as e:
            error_msgs.append(str(e))

    def extra_repr(self):
        """rows x dim, dtype, pooling, feature."""
        t = self._tiered
        shape = f"{t.num_embeddings} x {t.dim}, tiered {t.dtype}" if t is not None else \
            f"{self.weight.shape[0]} x {_dim(self.weight, self.qdtype)}, " \
            f"{self.qdtype or str(self.weight.dtype)[6:]}"
        return (f"{shape}, {self.mode}, " +
                (f"feature={self.feature!r}" if len(self.features) == 1
                 else f"features={self.features!r}"))


_ABSENT = object()


class EmbeddingBagCollection(_nn.Module):
    """Many embedding bags looked up (and trained) together, TorchRec's module.

    tables: EmbeddingBagConfig objects (ours or TorchRec's), or the older forms: (rows,
    dim) pairs (new N(0, 1) weights as nn.EmbeddingBag), embtables.Table objects (their
    memory is the weight; a tiered one is used as it is, fused optimizer only, its
    state_dict weight a copy of its rows and its optimizer state kept in its file), 2-D CPU tensors or numpy arrays
    (used in place: no copy), nn.EmbeddingBag modules (weight, mode, max_norm) or dicts
    (num_embeddings, embedding_dim, weight, mode, max_norm) -- tables table_0, table_1, ...
    of features of the same names.
    optimizer: 'sgd', 'adagrad', 'rowwise_adagrad', 'adam', 'ftrl', an
    embtables.Optimizer: fused into the backward; or None: Parameters with sparse
    gradients. Default: None with EmbeddingBagConfig tables (TorchRec's), else 'sgd'.
    lr and the optimizer's hyper-parameters (eps, betas, initial_accumulator_value, ...)
    as keywords. strategy / threads: how the tables are spread over threads
    (embtables.Strategy; default 'auto': a small call, such as a one-hot batch, on the
    caller's thread, a large one over threads 0 = torch.get_num_threads()). mode, max_norm, prune_invalid, prune_nonpositive_weights,
    default_id: the pooling of the older forms' tables (mode may be a list).
    is_weighted, device: TorchRec's (the CPU, None, or "meta" with EmbeddingBagConfig
    tables: meta-shaped weights and no table memory until to_empty(device="cpu"), then
    reset_parameters() draws them as TorchRec). In torch.fx.symbolic_trace the module is a
    leaf: one call_module node.

    forward(features) with a KeyedJaggedTensor (ours, or TorchRec's: keys, values,
    lengths / offsets, weights_or_none) returns a KeyedTensor, each feature looked up in
    its table by name; or, returning a B x ΣD tensor: forward(indices, offsets=None,
    per_sample_weights=None, lengths=None) with per-table lists in nn.EmbeddingBag's
    conventions, one flat tensor with FBGEMM's T*B+1 offsets, or values with T*B lengths.
    The ids (and weights) must stay alive and unchanged until backward.

    .half(), .bfloat16(), .float(), .to(dtype) convert the tables in place (the fused
    optimizer's state kept); other dtypes and devices are refused. state_dict() holds
    each table's weight (embedding_bags.<name>.weight) and the fused optimizer's state
    (optimizer_state, optimizer_step), bit for bit; torch.save of the module works.

    Quantized tables (dtype "int8" / torch.quint8 or "int4" / torch.quint4x2, here or in a
    config): the weight is the table's uint8 rows in torch's prepacked layouts
    (embedding_bag_byte_prepack / embedding_bag_4bit_prepack), in the state_dict as such;
    with the older forms a uint8 tensor is such rows, wrapped without a copy (float ones
    are quantized). They keep their dtype through .half() / .float(), are dequantized in
    the lookup and trained by the fused optimizer (f32 update, re-quantized with
    stochastic rounding); in plain mode they get no gradient.
    """

    _TABLES = "embedding_bags"  # the ModuleDict of the tables (state_dict prefix)
    _UNPOOLED = False

    def __init__(self, tables, optimizer=_ABSENT, lr=0.01, strategy="auto",
                 threads=0, mode="sum", max_norm=None, include_last_offset=False,
                 prune_invalid=False, prune_nonpositive_weights=False, default_id=None,
                 dtype=_torch.float32, is_weighted=False, device=None, **hyper):
        super().__init__()
        tables = list(tables)
        configs = bool(tables) and all(_is_config(t) for t in tables)
        meta = _meta.is_meta(device)
        if device is not None and _torch.device(device).type != "cpu" and not meta:
            raise RuntimeError(f"EmbeddingBagCollection: device {device}: the module runs on "
                               "the CPU (GPU tables: embtables.gpu.GpuEmbeddingBagCollection)")
        if meta and not configs:
            raise NotImplementedError("EmbeddingBagCollection: device='meta' takes "
                                      "EmbeddingBagConfig tables")
        if optimizer is _ABSENT:
            optimizer = None if configs else "sgd"
        if configs:
            if meta:
                for c in tables:
                    _check_config(c)
            ws = _meta.empty_weights(tables, [_config_dtype(c) for c in tables], _row_bytes) \
                if meta else _config_weights(tables)
            specs = [_config_spec(c, w, self._UNPOOLED) for c, w in zip(tables, ws)]
        else:
            q = _check_dtype(dtype, "EmbeddingBagCollection")
            specs = [_legacy_spec(i, s, q) for i, s in enumerate(tables)]
            modes = mode if isinstance(mode, (list, tuple)) else [mode] * len(specs)
            for s, m in zip(specs, modes):
                s.mode = s.mode or m
                s.max_norm = s.max_norm if s.max_norm is not None else max_norm
        self._check_specs(specs)
        self.is_weighted = is_weighted
        self._configs = tables if configs else None  # with their init_fn
        # what __setstate__ rebuilds from (the weights come from the state_dict)
        self._args = ([_dc.replace(c, init_fn=None) if _dc.is_dataclass(c) else c
                       for c in tables] if configs else
                      [{"num_embeddings": s.weight.shape[0] if s.tiered is None
                        else s.tiered.num_embeddings,
                        "embedding_dim": _dim(s.weight, s.qdtype) if s.tiered is None
                        else s.tiered.dim,
                        "mode": s.mode, "max_norm": s.max_norm} for s in specs],
                      dict(strategy=strategy, threads=threads, mode=mode, max_norm=max_norm,
                           include_last_offset=include_last_offset, prune_invalid=prune_invalid,
                           prune_nonpositive_weights=prune_nonpositive_weights,
                           default_id=default_id, dtype=dtype, is_weighted=is_weighted))
        self.poolings = [_et.pooling(s.mode, s.max_norm, default_id, prune_invalid,
                                     prune_nonpositive_weights) for s in specs]
        # threads 0: torch's intra-op count, so that the library's parallel regions run on
        # the same OpenMP team torch uses (both link libgomp), not on a larger one
        self._strategy = _et._strategy(strategy, threads or _torch.get_num_threads())
        self._include_last_offset = bool(include_last_offset)
        self.optimizer = _et._optimizer(optimizer, lr, **hyper)
        if self.optimizer is None and any(s.tiered is not None for s in specs):
            raise NotImplementedError("EmbeddingBagCollection: a tiered table trains with the "
                                      "fused optimizer (optimizer='sgd', 'adagrad', ...), not "
                                      "with sparse gradients")
        self.add_module(self._TABLES, _nn.ModuleDict(
            {s.name: _Bag(s, self.optimizer is None) for s in specs}))
        self._table_features = [s.features or [s.feature] for s in specs]
        self._features = [f for fs in self._table_features for f in fs]
        self._unpooled = self._UNPOOLED
        self._grouped = self._unpooled or len(self._features) > len(specs)
        self._placeholder = _torch.zeros(0, requires_grad=True)
        self._build()
        for w in self._weights:  # apply_optimizer_in_backward finds the module by them
            if isinstance(w, _nn.Parameter):
                w._embtables_owner = _weakref.ref(self)

    def _fuse(self, optimizer, given):
        """apply_optimizer_in_backward on the tables' parameters (the ids of given): the
        fused optimizer from now on; the weights stay Parameters (that get no gradient)."""
        params = {id(b.weight): n for n, b in self.embedding_bags.items()
                  if isinstance(b.weight, _nn.Parameter)}
        missing = [n for i, n in params.items() if i not in given]
        if missing:
            raise NotImplementedError(
                f"{self._label()}: apply_optimizer_in_backward without the parameters of "
                f"tables {missing}: the fused optimizer updates every table of the module "
                "(give them all, e.g. ebc.parameters())")
        self.optimizer = optimizer
        self._build()
        for w in self._weights:
            if isinstance(w, _nn.Parameter):
                w._in_backward_optimizers = [optimizer]

    @staticmethod
    def _check_specs(specs):
        seen_t, seen_f = set(), set()
        for s in specs:
            w = s.weight
            if s.tiered is None and (w.device.type not in ("cpu", "meta") or w.dim() != 2):
                raise _et.InvalidError(f"table '{s.name}': a 2-D CPU tensor is needed")
            for f in s.features or [s.feature]:
                if s.name in seen_t or f in seen_f:
                    raise ValueError(f"table '{s.name}' (feature '{f}'): the name or the "
                                     "feature is given twice")
                seen_f.add(f)
            seen_t.add(s.name)

    def _build(self):
        """The C tables over the current weights, and the collection over them (none while
        the weights are on the meta device)."""
        self._feature_key = tuple(self._features)
        if self.is_meta:
            self.tables, self._coll, self._colls = [], None, None
            self.dims = [_dim(b.weight, b.qdtype) for b in self.embedding_bags.values()]
            for b in self.embedding_bags.values():
                b._attach(None, None)
            return
        self.tables = [b._tiered if b._tiered is not None else
                       _et.Table(b.weight.data, name=n, dtype=b.qdtype)
                       for n, b in self.embedding_bags.items()]
        if self._grouped:  # a collection per table (_grouped.py)
            self._coll, self._colls = None, _grouped.collections(self)
        else:
            self._coll = _et.Collection(self.tables, self.poolings, self._strategy, 0,
                                        self.optimizer, self._include_last_offset)
        for b, t in zip(self.embedding_bags.values(), self.tables):
            b._attach(t, self.optimizer)
        self.dims = [t.dim for t in self.tables]

    @property
    def is_meta(self):
        """Whether the tables are on the meta device (shapes, no memory)."""
        return any(b.weight is not None and b.weight.is_meta
                   for b in self.embedding_bags.values())

    @property
    def device(self):
        """The tables' device: cpu, or meta before to_empty(device="cpu")."""
        return _torch.device("meta" if self.is_meta else "cpu")

    def reset_parameters(self):
        """Draws every table again as TorchRec's reset_parameters (each config's init_fn,
        default uniform in ±sqrt(1 / num_embeddings)) and restarts the fused optimizer's
        state; on the meta device it does nothing (TorchRec's). After
        to_empty(device="cpu") it materialises a module built with device="meta"."""
        _meta.reset_parameters(self, self._configs, _config_weights)

    @property
    def _weights(self):
        return [b.weight for b in self.embedding_bags.values()]

    @property
    def weights(self):
        """The weight tensors (the tables' memory), in table order."""
        return self._weights

    def embedding_bag_configs(self):
        """The tables as given (TorchRec's method)."""
        return list(self._args[0])

    @property
    def lr(self):
        """The fused optimizer's learning rate (settable between steps), or None."""
        return self.optimizer.lr if self.optimizer else None

    @lr.setter
    def lr(self, value):
        if self.optimizer is None:
            raise _et.InvalidError("plain mode has no optimizer: set your optimizer's lr")
        self.optimizer.lr = value

    def optimizer_state(self, i, slot=0):
        """The optimizer's state of table i (index or name) as a tensor view (adagrad h,
        rowwise_adagrad h, adam [m | v]) and its step count."""
        t = self.tables[i if isinstance(i, int) else list(self.embedding_bags).index(i)]
        st, step = self.optimizer.state(t, slot)
        return (None if st is None else _torch.from_numpy(st)), step

    def _names(self, names):
        names = names or list(self.embedding_bags)
        if len(names) != len(self.tables):
            raise _et.InvalidError(f"{len(names)} names for {len(self.tables)} tables")
        return dict(zip(names, self.tables))

    def saver(self, directory, names=None, **kw):
        """An embtables.Saver of the tables (under their names, or names) and the fused
        optimizer's state: saver.save(step) writes a checkpoint."""
        return _et.Saver(directory, self._names(names), self.optimizer, **kw)

    def restore(self, path, names=None):
        """Restores the tables and the fused optimizer's state from a checkpoint written
        by saver() (or the C saver under the same names); returns its global step. On
        any error nothing is changed."""
        return _et.restore(path, self._names(names), self.optimizer)

    # ---- errors name the table and the feature ------------------------------------------

    def _label(self):
        return f"{type(self).__name__}(" + ", ".join(self.embedding_bags) + ")"

    def _who(self, i):
        fs = self._table_features[i]
        if len(fs) == 1:
            return f"table '{self.tables[i].name}', feature '{fs[0]}'"
        return f"table '{self.tables[i].name}', features {fs}"

    def _who_at(self, m):
        """A "tables[i]" (or "indices[i]:" ...) match, with the table and feature named."""
        i = int(m.group(2) or m.group(3))
        if i >= len(self.tables):
            return m.group(0)
        if m.group(2):
            return f"{m.group(0)[:-1]} ({self._who(i)}):"
        return f"{m.group(0)} ({self._who(i)})"

    def _culprit(self, fn, *args):
        """fn(*args), its errors' "tables[i]", "(table i)" and 'table "name" (i)' naming the
        table and its feature."""
        try:
            return fn(*args)
        except (_et.Error, TypeError) as e:
            msg = _re.sub(r"^(indices|offsets|per_sample_weights)\[(\d+)\]:|tables\[(\d+)\]",
                          lambda m: self._who_at(m), str(e))
            msg = _re.sub(r"\(table (\d+)\)", lambda m: f"({self._who(int(m.group(1)))})"
                          if int(m.group(1)) < len(self.tables) else m.group(0), msg)
            # EmbCollection's: table "name" (i)
            msg = _re.sub(r'table "[^"]*" \((\d+)\)', lambda m: self._who(int(m.group(1)))
                          if int(m.group(1)) < len(self.tables) else m.group(0), msg)
            raise type(e)(msg) from None

    # ---- forward ------------------------------------------------------------------------

    def _lookup(self, batch):
        form, ids, off, w = batch
        nbags = self._coll.nbags(form, ids, off)
        out = _torch.empty(nbags, self._coll.width, dtype=_torch.float32)
        step = self._culprit(self._coll.forward, form, ids, off, w, out.numpy())
        return out, step

    def _kjt_batch(self, kjt):
        """The batch of a KeyedJaggedTensor: its features routed to the tables by name."""
        keys = tuple(kjt.keys())
        w = kjt.weights_or_none() if hasattr(kjt, "weights_or_none") else None
        v = kjt.values()
        lengths = self._check_kjt(kjt, keys, v, w)
        if keys == self._feature_key:
            return _et._prepare(v, None, w, lengths)
        pos = {k: i for i, k in enumerate(keys)}
        missing = [f for f in self._features if f not in pos]
        if missing:
            i = self._features.index(missing[0])
            raise KeyError(f"{self._who(i)}: the KeyedJaggedTensor has no feature "
                           f"'{missing[0]}' (its keys: {list(keys)})")
        off, values, s = kjt.offsets(), kjt.values(), kjt.stride()
        ids, offs, ws = [], [], []
        for f in self._features:
            k = pos[f]
            a, b = int(off[k * s]), int(off[(k + 1) * s])
            ids.append(values[a:b])
            offs.append(off[k * s:(k + 1) * s] - a)
            ws.append(None if w is None else w[a:b])
        return _et._prepare(ids, offs, None if w is None else ws)

    def _check_kjt(self, kjt, keys, v, w):
        """A KeyedJaggedTensor's ids integers, weights float32 and one per id, stride
        agreeing with its lengths (else an error naming its features and our tables);
        returns its lengths."""
        keys = list(keys)
        if isinstance(v, _torch.Tensor) and (v.is_floating_point() or v.dtype == _torch.bool):
            raise TypeError(f"KeyedJaggedTensor values of features {list(keys)} (tables "
                            f"{list(self.embedding_bags)}): ids must be integers, not {v.dtype}")
        if isinstance(w, _torch.Tensor) and w.dtype != _torch.float32:
            raise TypeError(f"KeyedJaggedTensor weights of features {list(keys)} (tables "
                            f"{list(self.embedding_bags)}): expected torch.float32, got {w.dtype}")
        lengths, s = kjt.lengths(), kjt.stride()
        if len(lengths) != len(keys) * s:
            raise _et.InvalidError(f"KeyedJaggedTensor of features {list(keys)} (tables "
                                   f"{list(self.embedding_bags)}): stride {s} but "
                                   f"{len(lengths)} lengths (expected {len(keys)} x {s})")
        if w is not None and len(w) != len(v):
            raise _et.InvalidError(f"KeyedJaggedTensor of features {list(keys)} (tables "
                                   f"{list(self.embedding_bags)}): {len(w)} weights for "
                                   f"{len(v)} values (one per value)")
        return lengths

    def forward(self, features, offsets=None, per_sample_weights=None, lengths=None):
        """The pooled lookup of every table: a KeyedTensor for a KeyedJaggedTensor, else a
        B x ΣD tensor (see the class's documentation for the input forms)."""
        if isinstance(features, _torch.fx.Proxy):  # fx tracing: a leaf, as TorchRec's
            return _traced(self, features, offsets, per_sample_weights, lengths)
        if self.is_meta:
            raise RuntimeError(f"{self._label()}: the tables are on the meta device (no "
                               "memory): materialise them first with to_empty(device='cpu') "
                               "then reset_parameters()")
        jagged = callable(getattr(features, "lengths", None))
        kjt = jagged and callable(getattr(features, "keys", None))
        if self._grouped:
            return self._grouped_forward(features, kjt)
        if kjt:
            batch = self._culprit(self._kjt_batch, features)
        elif jagged:  # keyless: values with T*B lengths, the tables in order
            w = getattr(features, "weights_or_none", lambda: None)()
            batch = self._culprit(_et._prepare, features.values(), None, w, features.lengths())
        else:
            batch = self._culprit(_et._prepare, features, offsets, per_sample_weights, lengths)
        if not _torch.is_grad_enabled():
            out = self._lookup(batch)[0]
        else:
            weights = self._weights if self.optimizer is None else ()
            out = _Lookup.apply(self._placeholder, self, batch, *weights)
        return KeyedTensor(self._features, self.dims, out) if kjt else out

    def _grouped_forward(self, kjt, is_kjt):
        """A table per collection (shared tables, unpooled rows: _grouped.py)."""
        if not is_kjt:
            raise NotImplementedError(f"{self._label()}: tables of several features (or "
                                      "unpooled) take a KeyedJaggedTensor")
        bs = _grouped.batches(self, kjt)
        if not _torch.is_grad_enabled():
            flat = _grouped.lookup(self, bs)[0]
        else:
            weights = self._weights if self.optimizer is None else ()
            flat = _grouped.Lookup.apply(self._placeholder, self, bs, *weights)
        return _grouped.outputs(self, flat, bs, kjt)

    # ---- dtype and device moves: the tables themselves, or refused -----------------------

    @property
    def _float_weights(self):
        return [b.weight for b in self.embedding_bags.values()
                if b.qdtype is None and b._tiered is None]

    def _apply(self, fn, *args, **kw):
        if self.is_meta:
            return _meta.materialise(self, fn)
        floats = self._float_weights  # quantized and tiered tables keep their dtype
        w = (floats or [x for x in self._weights if x is not None] or [_torch.empty(0)])[0]
        try:
            probe = fn(_torch.empty(0, dtype=w.dtype))
        except Exception as e:  # e.g. .cuda() without CUDA
            raise RuntimeError(f"{self._label()}: cannot move: {e}") from None
        if probe.device.type != "cpu":
            raise RuntimeError(f"{self._label()}: the module's tables stay on the CPU (GPU "
                               "tables: embtables.gpu.GpuEmbeddingBagCollection)")
        if floats and (probe.dtype != w.dtype or any(x.dtype != w.dtype for x in floats)):
            dt = _check_dtype(probe.dtype, self._label())
            if isinstance(dt, str):
                raise TypeError(f"{self._label()}: float tables are not quantized by a move: "
                                "build the module with dtype='int8' / 'int4'")
            self._retype(dt)
        return self

    def _retype(self, dtype):
        """Converts every table to dtype (new memory, the old dropped), keeping the fused
        optimizer's state and step counts."""
        saved = [self.optimizer.state(t) if b._tiered is None else
                 (None, self.optimizer.state(t)[1])
                 for b, t in zip(self.embedding_bags.values(), self.tables)] \
            if self.optimizer else None
        saved = saved and [(None if s is None else s.copy(), n) for s, n in saved]
        for b in self.embedding_bags.values():
            if b.qdtype is not None or b._tiered is not None:
                continue
            new = b.weight.data.to(dtype)
            if isinstance(b.weight, _nn.Parameter):
                b.weight.data = new
            else:
                b.weight = new
        if self.optimizer is not None:
            o = self.optimizer
            self.optimizer = _et.Optimizer(o.kind, o.lr, **o.hyper)
        self._build()
        for t, (st, n) in zip(self.tables, saved or ()):
            if st is not None:
                self.optimizer.state(t)[0][...] = st
            self.optimizer.set_step(t, n)

    # ---- pickling (torch.save / torch.load) ---------------------------------------------

    def __getstate__(self):
        if self.is_meta:
            raise TypeError(f"{self._label()}: its tables are on the meta device (nothing to "
                            "save): materialise them first (to_empty, reset_parameters)")
        if any(b._tiered is not None for b in self.embedding_bags.values()):
            raise TypeError(f"{self._label()}: a module of tiered tables is not pickled (its "
                            "rows are in files): save its state_dict() or use saver()")
        o = self.optimizer
        return {"args": self._args, "training": self.training,
                "optimizer": None if o is None else (o.kind, o.lr, o.hyper),
                "dtype": self._float_weights[0].dtype if self._float_weights else None,
                "state": {k: v.clone() for k, v in self.state_dict().items()}}

    def __setstate__(self, st):
        if "args" not in st:  # not ours (nn.Module's own path)
            return super().__setstate__(st)
        tables, kw = st["args"]
        kind, lr, hyper = st["optimizer"] or (None, 0.01, {})
        EmbeddingBagCollection.__init__(self, tables, optimizer=kind, lr=lr, **kw, **hyper)
        if st["dtype"] is not None and self._float_weights[0].dtype != st["dtype"]:
            self._retype(st["dtype"])
        self.load_state_dict(st["state"])
        self.train(st["training"])

    def extra_repr(self):
        """The optimizer, strategy and output width (nn.Module's repr shows the tables)."""
        o = self.optimizer
        opt = "None (sparse gradients)" if o is None else f"{o.kind}, lr={o.lr:g}"
        return (f"optimizer={opt}, strategy={self._strategy.name}, "
                f"threads={self._strategy.threads}, width={self._width()}")

    def _width(self):
        """The pooled output's columns (a shared table's once per feature)."""
        return sum(d * len(fs) for d, fs in zip(self.dims, self._table_features))

    # ---- plain mode: sparse gradients as nn.EmbeddingBag(sparse=True) gives ------------

    def _sparse_grads(self, step, batch, grad):
        grads, col = [], 0
        for t, bag in enumerate(self.embedding_bags.values()):
            d = self.dims[t]
            grads.append(self._table_grad(self._coll, step, t, t, batch,
                                          grad[:, col:col + d]))
            col += d
        return grads

    def _table_grad(self, coll, step, t, i, batch, dy):
        """The sparse gradient of table i, looked up as table t of coll in the step, from
        its output's gradient dy (None for quantized rows: no gradient)."""
        form, ids, _, w = batch
        bag, pool = list(self.embedding_bags.values())[i], self.poolings[i]
        if bag.qdtype is not None:  # no gradient of quantized rows (a buffer)
            return None
        first, nnz, nbags, bag_size, off = coll._c.batch(step, t)
        flat = ids[t].reshape(-1) if form == 0 else ids[first:first + nnz]
        tw = (w[t] if form == 0 else w[first:first + nnz]) if w is not None else None
        if off is None:
            off = _np.arange(0, nnz + 1, max(bag_size, 1), dtype=_np.int64)[:nbags + 1]
        else:
            off = _np.frombuffer(off, dtype=_np.int64)
        return _bag_grad(bag.weight, pool, _torch.from_numpy(flat.astype(_np.int64)),
                         None if tw is None else _torch.from_numpy(tw),
                         _torch.from_numpy(off.copy()), dy)


class EmbeddingCollection(EmbeddingBagCollection):
    """TorchRec's EmbeddingCollection: every id's row, unpooled. tables: EmbeddingConfig
    objects (a table may serve several features); forward(KeyedJaggedTensor) returns
    {feature: JaggedTensor} whose values() are the ids' rows (n x D) and lengths() the
    input's bags (with need_indices, weights() are the ids). optimizer (fused, or None:
    sparse gradients for torch's optimizers), apply_optimizer_in_backward, dtypes,
    state_dict (embeddings.<name>.weight) and checkpoints as EmbeddingBagCollection's."""

    _TABLES = "embeddings"
    _UNPOOLED = True

    def __init__(self, tables, device=None, need_indices=False, optimizer=_ABSENT, lr=0.01,
                 strategy="auto", threads=0, dtype=_torch.float32, **hyper):
        tables = list(tables)
        if not tables or not all(_is_config(t) for t in tables):
            raise TypeError("EmbeddingCollection: tables are EmbeddingConfig objects")
        super().__init__(tables, optimizer=optimizer, lr=lr, strategy=strategy,
                         threads=threads, dtype=dtype, device=device, **hyper)
        self.need_indices = bool(need_indices)

    @property
    def embedding_bags(self):
        """The tables (TorchRec's name for them here: embeddings)."""
        return self._modules["embeddings"]

    def embedding_configs(self):
        """The tables as given (TorchRec's method)."""
        return list(self._args[0])

    def forward(self, features):
        """{feature: JaggedTensor of its ids' rows} of a KeyedJaggedTensor."""
        if isinstance(features, _torch.fx.Proxy):
            return _traced(self, features)
        out = super().forward(features)
        if getattr(self, "need_indices", False):
            for f, jt in out.items():
                jt._weights = features[f].values()
        return out


def _traced(module, *args):
    """The module's call in a graph being traced by torch.fx (a leaf: the lookup is one
    node; the KeyedTensor / JaggedTensor outputs are fx-proxyable as TorchRec's)."""
    while args and args[-1] is None:
        args = args[:-1]
    tracer = args[0].tracer
    path = tracer.path_of_module(module)
    if not path:
        raise NotImplementedError(f"{module._label()}: fx traces the module inside a model "
                                  "(as a leaf), not as the root")
    return tracer.create_proxy("call_module", path, args, {})


def _max_bag_grad(weight, pool, ids, bag, nbags, dy):
    """MAX pooling's sparse gradient: element i of a bag's dy to the first kept entry whose
    row holds the bag's maximum at i (the library's routing); an empty bag's default_id
    takes its whole row."""
    _, _, default_id, flags = pool
    e = weight.detach()[ids].to(_torch.float32)
    d = e.shape[1]
    pos = _torch.arange(len(ids))[:, None].expand(-1, d)
    with _warnings.catch_warnings():  # index_reduce_ is "beta" in torch 1.13 (it works)
        _warnings.simplefilter("ignore", UserWarning)
        top = _torch.full((nbags, d), float("-inf")).index_reduce_(0, bag, e, "amax")
        cand = _torch.where(e == top[bag], pos, len(ids))
        first = _torch.full((nbags, d), len(ids)).index_reduce_(0, bag, cand, "amin")
    rows = _torch.where(pos == first[bag], dy[bag], _torch.zeros(()))
    if flags & _et.USE_DEFAULT_ID:
        empty = _torch.ones(nbags, dtype=_torch.bool)
        empty[bag] = False
        nd = int(empty.sum())
        ids = _torch.cat([ids, _torch.full((nd,), default_id, dtype=_torch.int64)])
        rows = _torch.cat([rows, dy[empty]])
    return _torch.sparse_coo_tensor(ids[None], rows, weight.shape).to(weight.dtype)


def _bag_grad(weight, pool, ids, w, off, dy):
    """The sparse gradient of one table: one row per kept id (coefficient x its bag's
    output gradient, through max_norm's clipping), and default_id rows of empty bags."""
    combiner, max_norm, default_id, flags = pool
    counts = off[1:] - off[:-1]
    bag = _torch.repeat_interleave(_torch.arange(len(counts)), counts)
    w = _torch.ones(len(ids)) if w is None else w
    keep = _torch.ones(len(ids), dtype=_torch.bool)
    if flags & _et.PRUNE_INVALID:
        keep &= ids >= 0
    if flags & _et.PRUNE_NONPOSITIVE_WEIGHTS:
        keep &= w > 0
    ids, w, bag = ids[keep], w[keep], bag[keep]
    if combiner == 4:  # MAX: each element's gradient to its bag's first maximal entry
        return _max_bag_grad(weight, pool, ids, bag, len(counts), dy)
    coef = w
    if combiner in (2, 3):
        wsum = _torch.zeros(len(counts)).index_add_(0, bag, w if combiner == 2 else w * w)
        scale = 1.0 / (wsum if combiner == 2 else wsum.sqrt())
        coef = w * scale[bag]
    rows = coef[:, None] * dy[bag]
    if flags & _et.USE_DEFAULT_ID:
        empty = _torch.ones(len(counts), dtype=_torch.bool)
        empty[bag] = False
        nd = int(empty.sum())
        ids = _torch.cat([ids, _torch.full((nd,), default_id, dtype=_torch.int64)])
        rows = _torch.cat([rows, dy[empty]])
    if max_norm > 0:
        e = weight.detach()[ids].to(_torch.float32)
        n = e.norm(dim=1, keepdim=True)
        s = max_norm / n
        clip = (n > max_norm).squeeze(1)
        dot = (e * rows).sum(dim=1, keepdim=True)
        clipped = s * (rows - e * dot / (n * n))
        rows = _torch.where(clip[:, None], clipped, rows)
    return _torch.sparse_coo_tensor(ids[None], rows, weight.shape).to(weight.dtype)
