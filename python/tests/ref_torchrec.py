# SPDX-License-Identifier: BSD-2-Clause
"""A stand-in for TorchRec's unsharded modules (torchrec is not in Debian), in plain torch,
with TorchRec's signatures: the configs' fields in TorchRec's order (num_embeddings,
embedding_dim, name, data_type, feature_names, weight_init_max, weight_init_min,
num_embeddings_post_pruning, init_fn, need_pos, ..., pooling), KeyedJaggedTensor(keys,
values, weights, lengths, offsets, stride), JaggedTensor(values, weights, lengths, offsets),
KeyedTensor(keys, length_per_key, values, key_dim), KeyedTensor.regroup, and
apply_optimizer_in_backward (a torch optimizer per parameter, stepped from a gradient hook:
torch 1.13 has no torch.distributed.optim._apply_optimizer_in_backward). The modules are
nn.EmbeddingBag / nn.Embedding per table with torch's own autograd and TorchRec's
initialisation (every table made as nn.EmbeddingBag makes it, then each config's init_fn,
default uniform in ±sqrt(1 / rows)); a shared table (feature_names=[f1, f2]) pools each
feature separately. As TorchRec's, the jagged / keyed classes are fx-proxyable and regroup
a wrapped function (torch.fx.symbolic_trace traces a model through them), and the modules
built with device="meta" are materialised by to_empty(device="cpu") then reset_parameters()
(each config's init_fn: what DistributedModelParallel's sharded modules draw). The reference
the TorchRec-style scripts of test_torchrec.py are compared with."""
import enum
import math
from dataclasses import dataclass, field
from functools import partial

import torch
from torch import nn
from torch.fx._symbolic_trace import ProxyableClassMeta


class PoolingType(enum.Enum):
    SUM = "SUM"
    MEAN = "MEAN"
    NONE = "NONE"


class DataType(enum.Enum):
    FP32 = "FP32"


@dataclass
class BaseEmbeddingConfig:
    num_embeddings: int
    embedding_dim: int
    name: str = ""
    data_type: DataType = DataType.FP32
    feature_names: list = field(default_factory=list)
    weight_init_max: float = None
    weight_init_min: float = None
    num_embeddings_post_pruning: int = None
    init_fn: object = None
    need_pos: bool = False

    def __post_init__(self):
        if self.init_fn is None:
            b = math.sqrt(1 / self.num_embeddings)
            lo = -b if self.weight_init_min is None else self.weight_init_min
            hi = b if self.weight_init_max is None else self.weight_init_max
            self.init_fn = partial(nn.init.uniform_, a=lo, b=hi)


@dataclass
class EmbeddingBagConfig(BaseEmbeddingConfig):
    pooling: PoolingType = PoolingType.SUM


@dataclass
class EmbeddingConfig(BaseEmbeddingConfig):
    pass


def _starts(lengths):
    return torch.cat([torch.zeros(1, dtype=lengths.dtype), torch.cumsum(lengths, 0)])


class JaggedTensor(metaclass=ProxyableClassMeta):
    def __init__(self, values, weights=None, lengths=None, offsets=None):
        self._values, self._weights = values, weights
        self._lengths = lengths if lengths is not None else offsets[1:] - offsets[:-1]

    def values(self):
        return self._values

    def weights(self):
        return self._weights

    def weights_or_none(self):
        return self._weights

    def lengths(self):
        return self._lengths

    def offsets(self):
        return _starts(self._lengths)

    def to_dense(self):
        return list(torch.split(self._values, self._lengths.tolist()))


class KeyedJaggedTensor(JaggedTensor):  # (TorchRec's are separate; the accessors agree)
    def __init__(self, keys, values, weights=None, lengths=None, offsets=None, stride=None):
        super().__init__(values, weights, lengths, offsets)
        self._keys = list(keys)
        self._stride = stride if stride is not None else \
            (len(self._lengths) // len(self._keys) if self._keys else 0)

    @classmethod
    def from_lengths_sync(cls, keys, values, lengths, weights=None, stride=None):
        return cls(keys, values, weights, lengths, None, stride)

    @classmethod
    def from_offsets_sync(cls, keys, values, offsets, weights=None, stride=None):
        return cls(keys, values, weights, None, offsets, stride)

    def keys(self):
        return self._keys

    def stride(self):
        return self._stride

    def length_per_key(self):
        return [int(x) for x in self._lengths.view(len(self._keys), -1).sum(1)] \
            if self._keys else []

    def offset_per_key(self):
        out = [0]
        for n in self.length_per_key():
            out.append(out[-1] + n)
        return out

    def __getitem__(self, key):
        k, s, o = self._keys.index(key), self._stride, self.offset_per_key()
        w = None if self._weights is None else self._weights[o[k]:o[k + 1]]
        return JaggedTensor(self._values[o[k]:o[k + 1]], w, self._lengths[k * s:(k + 1) * s])

    def to_dict(self):
        return {k: self[k] for k in self._keys}

    def permute(self, indices, indices_tensor=None):
        parts = [self[self._keys[i]] for i in indices]
        w = None if self._weights is None else torch.cat([p.weights() for p in parts])
        return KeyedJaggedTensor([self._keys[i] for i in indices],
                                 torch.cat([p.values() for p in parts]), w,
                                 torch.cat([p.lengths() for p in parts]), stride=self._stride)

    def split(self, segments):
        out, at = [], 0
        for n in segments:
            out.append(self.permute(range(at, at + n)))
            at += n
        return out

    def to(self, device, non_blocking=False, dtype=None):
        w = self._weights
        return KeyedJaggedTensor(self._keys, self._values.to(device),
                                 None if w is None else w.to(device, dtype=dtype),
                                 self._lengths.to(device), stride=self._stride)


class KeyedTensor(metaclass=ProxyableClassMeta):
    def __init__(self, keys, length_per_key, values, key_dim=1):
        self._keys, self._lengths, self._values = keys, length_per_key, values
        self._key_dim = key_dim

    def keys(self):
        return self._keys

    def values(self):
        return self._values

    def length_per_key(self):
        return self._lengths

    def key_dim(self):
        return self._key_dim

    def to_dict(self):
        return dict(zip(self._keys, torch.split(self._values, self._lengths,
                                                dim=self._key_dim)))

    def __getitem__(self, key):
        return self.to_dict()[key]

    @staticmethod
    def regroup(keyed_tensors, groups):
        return _regroup(keyed_tensors, groups)


@torch.fx.wrap
def _regroup(keyed_tensors, groups):
    parts = {}
    for kt in keyed_tensors:
        parts.update(kt.to_dict())
    return [torch.cat([parts[k] for k in g], dim=keyed_tensors[0].key_dim())
            for g in groups]


def _init(tables, modules):
    """TorchRec's reset_parameters: each table's init_fn (nothing on the meta device)."""
    with torch.no_grad():
        for c in tables:
            if not modules[c.name].weight.is_meta:
                c.init_fn(modules[c.name].weight)


class EmbeddingBagCollection(nn.Module):
    def __init__(self, tables, is_weighted=False, device=None):
        super().__init__()
        self._configs = tables
        self.embedding_bags = nn.ModuleDict({
            c.name: nn.EmbeddingBag(c.num_embeddings, c.embedding_dim,
                                    mode=c.pooling.name.lower(), include_last_offset=True,
                                    sparse=True, device=device) for c in tables})
        _init(tables, self.embedding_bags)

    def reset_parameters(self):
        _init(self._configs, self.embedding_bags)

    def forward(self, features):
        outs, names, dims = [], [], []
        for c in self._configs:
            for f in c.feature_names:
                jt = features[f]
                outs.append(self.embedding_bags[c.name](jt.values(), jt.offsets(),
                                                        jt.weights_or_none()))
                names.append(f)
                dims.append(c.embedding_dim)
        return KeyedTensor(names, dims, torch.cat(outs, dim=1))


class EmbeddingCollection(nn.Module):
    def __init__(self, tables, device=None, need_indices=False):
        super().__init__()
        self._configs = tables
        self.embeddings = nn.ModuleDict({
            c.name: nn.Embedding(c.num_embeddings, c.embedding_dim, sparse=True,
                                 device=device) for c in tables})
        _init(tables, self.embeddings)

    def reset_parameters(self):
        _init(self._configs, self.embeddings)

    def forward(self, features):
        out = {}
        for c in self._configs:
            for f in c.feature_names:
                jt = features[f]
                out[f] = JaggedTensor(self.embeddings[c.name](jt.values()),
                                      lengths=jt.lengths())
        return out


def apply_optimizer_in_backward(optimizer_class, params, optimizer_kwargs):
    """Each parameter gets its own optimizer_class(param, **optimizer_kwargs), stepped when
    its gradient is computed; the gradient is then dropped (TorchRec's contract)."""
    for p in params:
        opt = optimizer_class([p], **optimizer_kwargs)
        p._in_backward_optimizers = [opt]
        p._optimizer_classes = [optimizer_class]
        p._optimizer_kwargs = [optimizer_kwargs]

        def step(grad, p=p, opt=opt):
            p.grad = grad
            opt.step()
            p.grad = None
            return torch.zeros_like(grad)

        p.register_hook(step)


def in_backward_optimizer_filter(named_parameters, include=False):
    for name, p in named_parameters:
        if hasattr(p, "_in_backward_optimizers") == include:
            yield name, p
