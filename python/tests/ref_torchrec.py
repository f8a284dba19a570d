# SPDX-License-Identifier: BSD-2-Clause
"""A stand-in for TorchRec's unsharded modules (torchrec is not in Debian), in plain torch:
nn.EmbeddingBag per table with torch's own autograd, TorchRec's initialisation (every
table made as nn.EmbeddingBag makes it, then each config's init_fn, default uniform in
±sqrt(1 / rows)) and its KeyedJaggedTensor / KeyedTensor as far as a DLRM reads them. The
reference the TorchRec-style scripts of test_torchrec.py are compared with."""
import enum
import math
from dataclasses import dataclass, field
from functools import partial

import torch
from torch import nn


class PoolingType(enum.Enum):
    SUM = "SUM"
    MEAN = "MEAN"


@dataclass
class EmbeddingBagConfig:
    num_embeddings: int
    embedding_dim: int
    name: str = ""
    feature_names: list = field(default_factory=list)
    init_fn: object = None
    pooling: PoolingType = PoolingType.SUM

    def __post_init__(self):
        if self.init_fn is None:
            b = math.sqrt(1 / self.num_embeddings)
            self.init_fn = partial(nn.init.uniform_, a=-b, b=b)


class KeyedJaggedTensor:
    def __init__(self, keys, values, lengths, weights=None):
        self._keys, self._values, self._lengths, self._weights = keys, values, lengths, weights

    @classmethod
    def from_lengths_sync(cls, keys, values, lengths, weights=None):
        return cls(keys, values, lengths, weights)

    def keys(self):
        return self._keys

    def values(self):
        return self._values

    def lengths(self):
        return self._lengths

    def weights_or_none(self):
        return self._weights

    def stride(self):
        return len(self._lengths) // len(self._keys)


class KeyedTensor:
    def __init__(self, keys, length_per_key, values):
        self._keys, self._lengths, self._values = keys, length_per_key, values

    def keys(self):
        return self._keys

    def values(self):
        return self._values

    def length_per_key(self):
        return self._lengths

    def to_dict(self):
        return dict(zip(self._keys, torch.split(self._values, self._lengths, dim=1)))


class EmbeddingBagCollection(nn.Module):
    def __init__(self, tables, is_weighted=False, device=None):
        super().__init__()
        self._configs = tables
        self.embedding_bags = nn.ModuleDict({
            c.name: nn.EmbeddingBag(c.num_embeddings, c.embedding_dim,
                                    mode=c.pooling.name.lower(), include_last_offset=True,
                                    sparse=True, device=device) for c in tables})
        with torch.no_grad():
            for c in tables:
                c.init_fn(self.embedding_bags[c.name].weight)

    def forward(self, features):
        keys, s = features.keys(), features.stride()
        off = torch.zeros(len(features.lengths()) + 1, dtype=torch.int64)
        off[1:] = torch.cumsum(features.lengths(), 0)
        w = features.weights_or_none()
        outs, names, dims = [], [], []
        for c in self._configs:
            f = c.feature_names[0]
            k = keys.index(f)
            o = off[k * s:(k + 1) * s + 1]
            a, b = int(o[0]), int(o[-1])
            outs.append(self.embedding_bags[c.name](features.values()[a:b], o - a,
                                                    None if w is None else w[a:b]))
            names.append(f)
            dims.append(c.embedding_dim)
        return KeyedTensor(names, dims, torch.cat(outs, dim=1))
