# SPDX-License-Identifier: BSD-2-Clause
"""TorchRec's jagged inputs and keyed outputs (torchrec.sparse.jagged_tensor), as
embtables.torch exports them: JaggedTensor (one feature's bags), KeyedJaggedTensor (several
features' bags, keys / values / weights / lengths / offsets / stride in TorchRec's order)
and KeyedTensor (pooled outputs side by side). As TorchRec's, they are fx-proxyable (built
from traced tensors they are a node of the graph) and regroup is a wrapped node."""
import torch as _torch
from torch.fx._symbolic_trace import ProxyableClassMeta as _Proxyable

import embtables as _et

__all__ = ["JaggedTensor", "KeyedJaggedTensor", "KeyedTensor"]


def _starts(lengths):
    """The bag starts of lengths, plus the end (an int64 tensor one longer)."""
    out = _torch.zeros(len(lengths) + 1, dtype=_torch.int64)
    _torch.cumsum(lengths, 0, out=out[1:])
    return out


class _Bags(metaclass=_Proxyable):
    """What JaggedTensor and KeyedJaggedTensor share: values in bags given by lengths or
    offsets (each computed from the other when asked), optional per-entry weights."""

    def __init__(self, values, weights, lengths, offsets):
        if lengths is None and offsets is None:
            raise ValueError(f"{type(self).__name__}: lengths or offsets are needed")
        self._values, self._weights = values, weights
        self._lengths, self._offsets = lengths, offsets

    def values(self):
        """The entries, bag after bag (feature after feature)."""
        return self._values

    def weights(self):
        """The per-entry weights (an error when there are none, as TorchRec)."""
        if self._weights is None:
            raise ValueError(f"{type(self).__name__}: no weights")
        return self._weights

    def weights_or_none(self):
        """The per-entry weights or None."""
        return self._weights

    def lengths(self):
        """The bag sizes."""
        if self._lengths is None:
            self._lengths = self._offsets[1:] - self._offsets[:-1]
        return self._lengths

    def offsets(self):
        """The bag starts, plus the end."""
        if self._offsets is None:
            self._offsets = _starts(self._lengths)
        return self._offsets


class JaggedTensor(_Bags):
    """Bags of one feature (TorchRec's JaggedTensor): bag b holds lengths[b] entries of
    values (ids, or for EmbeddingCollection's outputs rows of embeddings), in order; give
    lengths or offsets; weights: one per entry."""

    def __init__(self, values, weights=None, lengths=None, offsets=None):
        super().__init__(values, weights, lengths, offsets)

    def to_dense(self):
        """One tensor per bag."""
        return list(_torch.split(self._values, self.lengths().tolist()))

    def to(self, device, non_blocking=False):
        """The same bags with every tensor moved to device (see KeyedJaggedTensor.to)."""
        mv = _mover(device, non_blocking)
        return JaggedTensor(mv(self._values), mv(self._weights), mv(self._lengths),
                            mv(self._offsets))

    def __repr__(self):
        return f"JaggedTensor(bags={len(self.lengths())}, values={len(self._values)})"


def _mover(device, non_blocking, dtype=None):
    """tensor.to(device) (weights also to dtype) that passes None through."""
    def move(x, weights=False):
        if x is None:
            return None
        return x.to(device, dtype=dtype if weights else None, non_blocking=non_blocking)
    return move


class KeyedJaggedTensor(_Bags):
    """Jagged ids of several features (TorchRec's KeyedJaggedTensor): feature keys[k] has
    stride() bags, bag b of it holding lengths[k * stride + b] ids, in order, in values.
    Give lengths or offsets (len(lengths) + 1 bag starts); weights: per-id float32."""

    def __init__(self, keys, values, weights=None, lengths=None, offsets=None, stride=None):
        super().__init__(values, weights, lengths, offsets)
        self._keys = list(keys)
        n = len(lengths) if lengths is not None else len(offsets) - 1
        self._stride = stride if stride is not None else (n // len(self._keys)
                                                          if self._keys else 0)

    @classmethod
    def from_lengths_sync(cls, keys, values, lengths, weights=None, stride=None):
        """TorchRec's constructor of the same name."""
        return cls(keys, values, weights, lengths=lengths, stride=stride)

    @classmethod
    def from_offsets_sync(cls, keys, values, offsets, weights=None, stride=None):
        """TorchRec's constructor of the same name."""
        return cls(keys, values, weights, offsets=offsets, stride=stride)

    @staticmethod
    def from_jt_dict(jt_dict):
        """One KeyedJaggedTensor of {feature: JaggedTensor} (same bag count each)."""
        keys = list(jt_dict)
        jts = [jt_dict[k] for k in keys]
        ws = [j.weights_or_none() for j in jts]
        return KeyedJaggedTensor(keys, _torch.cat([j.values() for j in jts]),
                                 None if any(w is None for w in ws) else _torch.cat(ws),
                                 _torch.cat([j.lengths() for j in jts]))

    def keys(self):
        """The feature names."""
        return self._keys

    def stride(self):
        """The batch size (bags per feature)."""
        return self._stride

    def _check_stride(self):
        n, k = len(self.lengths()), len(self._keys)
        if n != k * self._stride:
            raise _et.InvalidError(f"KeyedJaggedTensor(keys={self._keys}): stride "
                                   f"{self._stride} but {n} lengths (expected {k} keys x "
                                   f"{self._stride} bags)")

    def length_per_key(self):
        """The number of ids of each feature."""
        self._check_stride()
        if not self._keys:
            return []
        return [int(x) for x in self.lengths().reshape(len(self._keys), -1).sum(1)]

    def offset_per_key(self):
        """Each feature's first id in values(), plus the total."""
        out = [0]
        for n in self.length_per_key():
            out.append(out[-1] + n)
        return out

    def __getitem__(self, key):
        """The JaggedTensor of feature key."""
        if key not in self._keys:
            raise KeyError(f"KeyedJaggedTensor: no feature '{key}' (its keys: {self._keys})")
        k, s, o = self._keys.index(key), self._stride, self.offset_per_key()
        w = self._weights
        return JaggedTensor(self._values[o[k]:o[k + 1]],
                            None if w is None else w[o[k]:o[k + 1]],
                            self.lengths()[k * s:(k + 1) * s])

    def to_dict(self):
        """{feature: JaggedTensor} of each feature (TorchRec's)."""
        return {k: self[k] for k in self._keys}

    def permute(self, indices, indices_tensor=None):
        """The features keys()[i] for i in indices, in that order (repeats allowed)."""
        return self._repeat([self._keys[i] for i in indices])

    def _repeat(self, keys):
        jts = [self[k] for k in keys]
        w = None if self._weights is None else _torch.cat([j.weights() for j in jts])
        return KeyedJaggedTensor(keys, _torch.cat([j.values() for j in jts]), w,
                                 _torch.cat([j.lengths() for j in jts]), stride=self._stride)

    def split(self, segments):
        """KeyedJaggedTensors of consecutive features, segments[i] features each."""
        if sum(segments) != len(self._keys):
            raise _et.InvalidError(f"KeyedJaggedTensor.split: segments {list(segments)} "
                                   f"do not add up to its {len(self._keys)} keys")
        out, at = [], 0
        for n in segments:
            out.append(self._repeat(self._keys[at:at + n]))
            at += n
        return out

    def to(self, device, non_blocking=False, dtype=None):
        """The same features with every tensor moved to device (weights also to dtype)."""
        mv = _mover(device, non_blocking, dtype)
        return KeyedJaggedTensor(self._keys, mv(self._values), mv(self._weights, True),
                                 mv(self._lengths), mv(self._offsets), self._stride)

    def __repr__(self):
        return (f"KeyedJaggedTensor(keys={self._keys}, stride={self._stride}, "
                f"values={len(self._values)}, weighted={self._weights is not None})")


class KeyedTensor(metaclass=_Proxyable):
    """Pooled outputs of several features side by side (TorchRec's KeyedTensor): values()
    is B x sum(length_per_key()), feature keys()[k] in its length_per_key()[k] columns."""

    def __init__(self, keys, length_per_key, values, key_dim=1):
        self._keys, self._lengths, self._values = list(keys), list(length_per_key), values
        self._key_dim = key_dim

    def keys(self):
        """The feature names, in column order."""
        return self._keys

    def values(self):
        """The B x ΣD tensor (autograd flows through it)."""
        return self._values

    def length_per_key(self):
        """Each feature's width."""
        return self._lengths

    def offset_per_key(self):
        """Each feature's first column, plus the total width."""
        out = [0]
        for n in self._lengths:
            out.append(out[-1] + n)
        return out

    def key_dim(self):
        """The dimension the features are side by side in (1)."""
        return self._key_dim

    def to_dict(self):
        """{feature: B x D view of its columns}."""
        parts = _torch.split(self._values, self._lengths, dim=self._key_dim)
        return dict(zip(self._keys, parts))

    def __getitem__(self, key):
        i = self._keys.index(key)
        o = self.offset_per_key()
        return self._values.narrow(self._key_dim, o[i], o[i + 1] - o[i])

    @staticmethod
    def regroup(keyed_tensors, groups):
        """One tensor per group of keys (TorchRec's): the keys' columns, taken from any of
        keyed_tensors, side by side in the group's order."""
        return _regroup(keyed_tensors, groups)

    def __repr__(self):
        return (f"KeyedTensor(keys={self._keys}, length_per_key={self._lengths}, "
                f"values={tuple(self._values.shape)})")


@_torch.fx.wrap
def _regroup(keyed_tensors, groups):
    """KeyedTensor.regroup (a node of its own in an fx graph)."""
    cols = {}
    for kt in keyed_tensors:
        cols.update(kt.to_dict())
    out = []
    for g in groups:
        missing = [k for k in g if k not in cols]
        if missing:
            raise KeyError(f"KeyedTensor.regroup: no key {missing[0]!r} in the "
                           f"keyed tensors (keys: {list(cols)})")
        out.append(_torch.cat([cols[k] for k in g], dim=keyed_tensors[0].key_dim()))
    return out
