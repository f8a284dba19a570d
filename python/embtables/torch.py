# SPDX-License-Identifier: BSD-2-Clause
"""embtables for PyTorch: EmbeddingBagCollection, an nn.Module over many embedding bags.

Its forward returns the pooled outputs of every table side by side (B x ΣD, the layout
DLRM's interaction takes). With an optimizer (the default, FBGEMM's table-batched
embedding contract) its backward applies the library's deduplicating fused optimizer to
the tables in place and returns no weight gradient; with optimizer=None the weights are
Parameters that receive sparse_coo gradients, for torch's own optimizers.
"""
import numpy as np
import torch
from torch import nn

import embtables as _et

__all__ = ["EmbeddingBagCollection"]


def _table_spec(spec, dtype):
    """(weight tensor, mode, max_norm) of one entry of `tables`."""
    if isinstance(spec, nn.EmbeddingBag):
        return spec.weight.data, spec.mode, spec.max_norm
    if isinstance(spec, dict):
        w = spec.get("weight")
        if w is None:
            w = _new_weight(spec["num_embeddings"], spec["embedding_dim"], dtype)
        return w, spec.get("mode"), spec.get("max_norm")
    if isinstance(spec, torch.Tensor):
        return spec.data, None, None
    if isinstance(spec, np.ndarray):
        return torch.from_numpy(spec), None, None
    n, d = spec
    return _new_weight(n, d, dtype), None, None


def _new_weight(n, d, dtype):
    w = torch.empty(int(n), int(d), dtype=torch.float32)
    nn.init.normal_(w)  # nn.EmbeddingBag's initialisation
    return w.to(dtype)


class _Lookup(torch.autograd.Function):
    """forward: the collection's lookup; backward: the fused update (returns no gradient)
    or, in plain mode, sparse gradients of the weights."""

    @staticmethod
    def forward(ctx, placeholder, module, batch, *weights):
        out, step = module._lookup(batch)
        ctx.module, ctx.step, ctx.batch = module, step, batch
        return out

    @staticmethod
    def backward(ctx, grad):
        module, step = ctx.module, ctx.step
        ctx.step = None
        grad = grad.to(torch.float32).contiguous()
        if module.optimizer is not None:
            module._coll.backward(step, grad.numpy())
            return (None, None, None) + (None,) * len(module._weights)
        grads = module._sparse_grads(step, ctx.batch, grad)
        return (None, None, None) + tuple(grads)


class EmbeddingBagCollection(nn.Module):
    """Many embedding bags looked up (and trained) together.

    tables: a list of (num_embeddings, dim) pairs (new weights, N(0, 1) as
    nn.EmbeddingBag), 2-D CPU tensors or numpy arrays (used in place: no copy),
    nn.EmbeddingBag modules (their weight, mode and max_norm), or dicts with
    num_embeddings, embedding_dim, weight, mode, max_norm.
    optimizer: 'sgd', 'adagrad', 'rowwise_adagrad', 'adam', 'ftrl', an
    embtables.Optimizer, or None (plain mode: sparse gradients). lr and the optimizer's
    hyper-parameters (eps, betas, initial_accumulator_value, ...) as keywords.
    strategy / threads: how the tables are spread over threads (embtables.Strategy).
    mode, max_norm, prune_invalid, prune_nonpositive_weights, default_id: the pooling of
    every table (mode may be a list, one per table).

    forward(indices, offsets=None, per_sample_weights=None, lengths=None):
      - lists, one entry per table, in nn.EmbeddingBag's conventions (1-D ids with
        offsets, include_last_offset as given here; 2-D ids for fixed bags);
      - one flat indices tensor with FBGEMM's offsets (T*B+1, bag starts of table 0's
        bags, then table 1's, ...);
      - TorchRec's jagged form: values (flat) with lengths (T*B), or a KeyedJaggedTensor.
    The weights and the ids must stay alive and unchanged until backward.
    """

    def __init__(self, tables, optimizer="sgd", lr=0.01, strategy="prealloc-concat",
                 threads=0, mode="sum", max_norm=None, include_last_offset=False,
                 prune_invalid=False, prune_nonpositive_weights=False, default_id=None,
                 dtype=torch.float32, **hyper):
        super().__init__()
        specs = [_table_spec(s, dtype) for s in tables]
        modes = mode if isinstance(mode, (list, tuple)) else [mode] * len(specs)
        poolings = []
        for (w, m, mn), md in zip(specs, modes):
            poolings.append(_et.pooling(m or md, mn if mn is not None else max_norm,
                                        default_id, prune_invalid, prune_nonpositive_weights))
        self.optimizer = _et._optimizer(optimizer, lr, **hyper)
        self._weights = []
        for i, (w, _, _) in enumerate(specs):
            if w.device.type != "cpu" or w.dim() != 2:
                raise _et.InvalidError(f"tables[{i}]: a 2-D CPU tensor is needed")
            if self.optimizer is None:
                p = w if isinstance(w, nn.Parameter) else nn.Parameter(w)
                self.register_parameter(f"weight_{i}", p)
            else:
                self.register_buffer(f"weight_{i}", w)
            self._weights.append(getattr(self, f"weight_{i}"))
        self.tables = [_et.Table(w) for w in self._weights]
        self._coll = _et.Collection(self.tables, poolings, strategy, threads, self.optimizer,
                                    include_last_offset)
        self.poolings = poolings
        self.dims = [t.dim for t in self.tables]
        self._placeholder = torch.zeros(0, requires_grad=True)

    @property
    def weights(self):
        """The weight tensors (the tables' memory)."""
        return list(self._weights)

    @property
    def lr(self):
        return self.optimizer.lr if self.optimizer else None

    @lr.setter
    def lr(self, value):
        if self.optimizer is None:
            raise _et.InvalidError("plain mode has no optimizer: set your optimizer's lr")
        self.optimizer.lr = value

    def optimizer_state(self, i, slot=0):
        """The optimizer's state of table i as a tensor view (adagrad h, rowwise_adagrad
        h, adam [m | v]) and its step count."""
        st, step = self.optimizer.state(self.tables[i], slot)
        return (None if st is None else torch.from_numpy(st)), step

    def _names(self, names):
        names = names or [t.name or f"table_{i}" for i, t in enumerate(self.tables)]
        if len(names) != len(self.tables):
            raise _et.InvalidError(f"{len(names)} names for {len(self.tables)} tables")
        return dict(zip(names, self.tables))

    def saver(self, directory, names=None, **kw):
        """An embtables.Saver of the tables (named names, default table_0, table_1, ...)
        and the fused optimizer's state: saver.save(step) writes a checkpoint."""
        return _et.Saver(directory, self._names(names), self.optimizer, **kw)

    def restore(self, path, names=None):
        """Restores the tables and the fused optimizer's state from a checkpoint written
        by saver() (or the C saver under the same names); returns its global step. On
        any error nothing is changed."""
        return _et.restore(path, self._names(names), self.optimizer)

    def _lookup(self, batch):
        form, ids, off, w = batch
        nbags = self._coll.nbags(form, ids, off)
        out = torch.empty(nbags, self._coll.width, dtype=torch.float32)
        step = self._coll.forward(form, ids, off, w, out.numpy())
        return out, step

    def forward(self, indices, offsets=None, per_sample_weights=None, lengths=None):
        if hasattr(indices, "values") and hasattr(indices, "lengths") and \
                callable(indices.lengths):  # a KeyedJaggedTensor
            kjt = indices
            indices, lengths = kjt.values(), kjt.lengths()
            per_sample_weights = kjt.weights_or_none() if hasattr(
                kjt, "weights_or_none") else None
        batch = _et._prepare(indices, offsets, per_sample_weights, lengths)
        if not torch.is_grad_enabled():
            return self._lookup(batch)[0]
        weights = self._weights if self.optimizer is None else ()
        return _Lookup.apply(self._placeholder, self, batch, *weights)

    # ---- plain mode: sparse gradients as nn.EmbeddingBag(sparse=True) gives ------------

    def _sparse_grads(self, step, batch, grad):
        form, ids, _, w = batch
        grads, col = [], 0
        for t, (weight, pool) in enumerate(zip(self._weights, self.poolings)):
            first, nnz, nbags, bag_size, off = self._coll._c.batch(step, t)
            flat = ids[t].reshape(-1) if form == 0 else ids[first:first + nnz]
            tw = (w[t] if form == 0 else w[first:first + nnz]) if w is not None else None
            if off is None:
                off = np.arange(0, nnz + 1, max(bag_size, 1), dtype=np.int64)[:nbags + 1]
            else:
                off = np.frombuffer(off, dtype=np.int64)
            dy = grad[:, col:col + weight.shape[1]]
            col += weight.shape[1]
            grads.append(_bag_grad(weight, pool, torch.from_numpy(flat.astype(np.int64)),
                                   None if tw is None else torch.from_numpy(tw),
                                   torch.from_numpy(off.copy()), dy))
        return grads


def _bag_grad(weight, pool, ids, w, off, dy):
    """The sparse gradient of one table: one row per kept id (coefficient x its bag's
    output gradient, through max_norm's clipping), and default_id rows of empty bags."""
    combiner, max_norm, default_id, flags = pool
    counts = off[1:] - off[:-1]
    bag = torch.repeat_interleave(torch.arange(len(counts)), counts)
    w = torch.ones(len(ids)) if w is None else w.to(torch.float32)
    keep = torch.ones(len(ids), dtype=torch.bool)
    if flags & _et.PRUNE_INVALID:
        keep &= ids >= 0
    if flags & _et.PRUNE_NONPOSITIVE_WEIGHTS:
        keep &= w > 0
    ids, w, bag = ids[keep], w[keep], bag[keep]
    coef = w
    if combiner in (2, 3):
        wsum = torch.zeros(len(counts)).index_add_(0, bag, w if combiner == 2 else w * w)
        scale = 1.0 / (wsum if combiner == 2 else wsum.sqrt())
        coef = w * scale[bag]
    rows = coef[:, None] * dy[bag]
    if flags & _et.USE_DEFAULT_ID:
        empty = torch.ones(len(counts), dtype=torch.bool)
        empty[bag] = False
        nd = int(empty.sum())
        ids = torch.cat([ids, torch.full((nd,), default_id, dtype=torch.int64)])
        rows = torch.cat([rows, dy[empty]])
    if max_norm > 0:
        e = weight.detach()[ids].to(torch.float32)
        n = e.norm(dim=1, keepdim=True)
        s = max_norm / n
        clip = (n > max_norm).squeeze(1)
        dot = (e * rows).sum(dim=1, keepdim=True)
        clipped = s * (rows - e * dot / (n * n))
        rows = torch.where(clip[:, None], clipped, rows)
    return torch.sparse_coo_tensor(ids[None], rows, weight.shape).to(weight.dtype)
