# SPDX-License-Identifier: BSD-2-Clause
"""GPU tables from Python, when the library was built with its CUDA back end (-Dcuda):
device tables, the table-batched lookup into the concat layout and the fused backward +
optimizer (SGD, row-wise Adagrad, Adam), on torch CUDA tensors (by their data pointers)
and torch's current CUDA stream. available() says whether it can run here.

    ebc = GpuEmbeddingBagCollection([(1000, 64), (500, 64)], optimizer="rowwise_adagrad")
    out = ebc(ids, offsets)          # CUDA tensors; B x 128 on the device
"""
import torch as _torch

import embtables as _et

from . import _embtables as _C

__all__ = ["available", "GpuTable", "GpuEmbeddingBagCollection"]

_GPU_OPTIMIZERS = ("sgd", "rowwise_adagrad", "adam")


def available():
    """True when the extension has the GPU back end and a CUDA device is present."""
    return hasattr(_C, "gpu_table_create") and _C.gpu_device_count() > 0 and \
        _torch.cuda.is_available()


def _stream(stream=None):
    return (stream if stream is not None else _torch.cuda.current_stream()).cuda_stream


class GpuTable:
    """A device table (rows padded to 4 elements). upload / download copy from / to a
    host embtables.Table (or array / tensor) of the same shape and dtype."""

    def __init__(self, num_embeddings, dim, dtype="f32", name=None, stream=None):
        if not hasattr(_C, "gpu_table_create"):
            raise _et.Error("embtables was built without its CUDA back end")
        self._t = _C.gpu_table_create(int(num_embeddings), int(dim), _et.DTYPES[dtype], name,
                                      _stream(stream))

    def _host(self, host):
        return host if isinstance(host, _et.Table) else _et.Table(host)

    def upload(self, host, stream=None):
        """Copies the host table (Table, array or tensor of this shape and dtype) here."""
        self._t.copy(self._host(host)._t, True, _stream(stream))

    def download(self, host, stream=None):
        """Copies this table into the host table (Table, array or tensor)."""
        self._t.copy(self._host(host)._t, False, _stream(stream))

    def to_host(self, stream=None):
        """A new host embtables.Table holding a copy of this table."""
        n, d, dtype, _, _ = self._t.info()
        host = _et.Table.create(n, d, dtype)
        self.download(host, stream)
        return host

    num_embeddings = property(lambda self: self._t.info()[0], doc="The number of rows.")
    dim = property(lambda self: self._t.info()[1], doc="The row width.")


def _device_batch(ids, offsets, weights, include_last, keep):
    """The descriptor tuple of one table's batch of CUDA tensors (kept alive in keep)."""
    ids = ids.contiguous()
    if ids.dtype not in (_torch.int32, _torch.int64):
        ids = ids.long()
    nnz = ids.numel()
    if ids.dim() == 2:
        nbags, bag_size, off = ids.shape[0], ids.shape[1], None
    else:
        off = offsets.to(_torch.int64)
        if not include_last:
            off = _torch.cat([off, _torch.full((1,), nnz, dtype=_torch.int64, device=ids.device)])
        off = off.contiguous()
        nbags, bag_size = off.numel() - 1, 0
    if weights is not None and weights.dtype != _torch.float32:
        raise TypeError(f"per_sample_weights: expected torch.float32, got {weights.dtype}")
    w = None if weights is None else weights.contiguous()
    keep += [ids, off, w]
    return (ids.data_ptr(), ids.dtype == _torch.int32, nnz, nbags,
            None if off is None else off.data_ptr(), bag_size,
            None if w is None else w.data_ptr()), nbags


class _GpuLookup(_torch.autograd.Function):
    @staticmethod
    def forward(ctx, placeholder, module, batches, keep, nbags):
        out = _torch.empty(nbags, module.width, device="cuda", dtype=_torch.float32)
        _C.gpu_maplookup(module._tables_c, batches, module.poolings, out.data_ptr(),
                         module.width, 0, module._ws, _stream())
        ctx.module, ctx.batches, ctx.keep = module, batches, keep
        return out

    @staticmethod
    def backward(ctx, grad):
        m = ctx.module
        grad = grad.to(_torch.float32).contiguous()
        col = 0
        for t, b, p, d in zip(m._tables_c, ctx.batches, m.poolings, m.dims):
            _C.gpu_backward_update(t, b, p, grad.data_ptr() + 4 * col, m.width, m._opt,
                                   m._ws, _stream())
            col += d
        return None, None, None, None, None


class GpuEmbeddingBagCollection(_torch.nn.Module):
    """EmbeddingBagCollection on the device: the same arguments (tables as (rows, dim)
    pairs or host tensors / arrays, uploaded), optimizer 'sgd', 'rowwise_adagrad' or
    'adam' fused into the backward (FBGEMM's contract: no weight gradient). Inputs are
    per-table lists of CUDA tensors in nn.EmbeddingBag's conventions."""

    def __init__(self, tables, optimizer="sgd", lr=0.01, mode="sum", max_norm=None,
                 include_last_offset=False, prune_invalid=False,
                 prune_nonpositive_weights=False, default_id=None, eps=None, betas=(0.9, 0.999),
                 initial_accumulator_value=0.0):
        super().__init__()
        if optimizer not in _GPU_OPTIMIZERS:
            raise _et.InvalidError(f"GPU optimizer '{optimizer}': one of {_GPU_OPTIMIZERS}")
        self.tables, self.dims = [], []
        for spec in tables:
            if isinstance(spec, tuple):
                t = GpuTable(*spec)
            else:
                host = _et.Table(spec)
                t = GpuTable(host.num_embeddings, host.dim, host.dtype)
                t.upload(host)
            self.tables.append(t)
            self.dims.append(t.dim)
        self._tables_c = [t._t for t in self.tables]
        self.width = sum(self.dims)
        modes = mode if isinstance(mode, (list, tuple)) else [mode] * len(self.tables)
        self.poolings = [_et.pooling(md, max_norm, default_id, prune_invalid,
                                     prune_nonpositive_weights) for md in modes]
        kind = _et.OPTIMIZERS[optimizer]
        eps = eps if eps is not None else (1e-8 if optimizer == "adam" else 1e-10)
        self._opt = (kind, float(lr), float(eps), float(betas[0]), float(betas[1]),
                     float(initial_accumulator_value))
        self.include_last_offset = include_last_offset
        self._ws = _C.GpuWorkspace()
        self._placeholder = _torch.zeros(0, requires_grad=True)

    @property
    def lr(self):
        """The optimizer's learning rate (settable between steps)."""
        return self._opt[1]

    @lr.setter
    def lr(self, value):
        self._opt = (self._opt[0], float(value)) + self._opt[2:]

    def forward(self, indices, offsets=None, per_sample_weights=None):
        """The pooled lookup of every table (per-table lists of CUDA tensors in
        nn.EmbeddingBag's conventions) into a B x ΣD CUDA tensor."""
        keep, batches, nbags = [], [], None
        for k, ids in enumerate(indices):
            b, nbags = _device_batch(ids, None if offsets is None else offsets[k],
                                     None if per_sample_weights is None
                                     else per_sample_weights[k], self.include_last_offset, keep)
            batches.append(b)
        return _GpuLookup.apply(self._placeholder, self, batches, keep, nbags)
