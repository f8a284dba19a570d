# SPDX-License-Identifier: BSD-2-Clause
"""The lookups of tables that take several features or pool none, for embtables.torch:
a shared table (TorchRec's feature_names=[f1, f2]) of an EmbeddingBagCollection pools each
of its features separately, and an EmbeddingCollection gives every id its row. Each table
is looked up by a collection of its own over the bags of all its features at once (feature
after feature, or one id a bag when unpooled), so that the fused optimizer applies one
deduplicated update to a shared table per step, as TorchRec's table-batched kernels do.
The outputs of every table go into one flat tensor, cut into the module's outputs by
torch's own (differentiable) views."""
import torch as _torch

import embtables as _et
from embtables._jagged import JaggedTensor, KeyedTensor


def collections(module):
    """One collection per table, every one with the module's optimizer (shared)."""
    return [_et.Collection([t], [pool], module._strategy, 0, module.optimizer, False)
            for t, pool in zip(module.tables, module.poolings)]


class _Batch:
    """One table's batch of a step: the prepared ids, and what its output is cut into."""

    def __init__(self, prepared, nbags, counts, lengths):
        self.prepared, self.nbags = prepared, nbags
        self.counts, self.lengths = counts, lengths  # each feature's ids and bag sizes


def batches(module, kjt):
    """Each table's batch of a KeyedJaggedTensor: its features' bags one after another
    (pooled), or each of their ids a bag of one (unpooled)."""
    keys, v = list(kjt.keys()), kjt.values()
    w = kjt.weights_or_none() if hasattr(kjt, "weights_or_none") else None
    module._check_kjt(kjt, keys, v, w)
    pos = {k: i for i, k in enumerate(keys)}
    off, s, lengths = kjt.offsets(), kjt.stride(), kjt.lengths()
    out = []
    for i, feats in enumerate(module._table_features):
        ids, starts, ws, counts, lens, at = [], [], [], [], [], 0
        for f in feats:
            if f not in pos:
                raise KeyError(f"{module._who(i)}: the KeyedJaggedTensor has no feature "
                               f"'{f}' (its keys: {keys})")
            k = pos[f]
            a, b = int(off[k * s]), int(off[(k + 1) * s])
            ids.append(v[a:b])
            starts.append(off[k * s:(k + 1) * s] - a + at)
            ws.append(None if w is None else w[a:b])
            counts.append(b - a)
            lens.append(lengths[k * s:(k + 1) * s])
            at += b - a
        cat = _torch.cat(ids)
        if module._unpooled:
            prepared = _et._prepare([cat])
            out.append(_Batch(prepared, len(cat), counts, lens))
        else:
            wt = None if w is None else [_torch.cat(ws)]
            prepared = _et._prepare([cat], [_torch.cat(starts)], wt)
            out.append(_Batch(prepared, len(feats) * s, counts, lens))
    return out


def _views(module, flat, bs):
    """Each table's nbags x D output, a view of flat."""
    out, at = [], 0
    for i, b in enumerate(bs):
        n = b.nbags * module.dims[i]
        out.append(flat[at:at + n].view(b.nbags, module.dims[i]))
        at += n
    return out


def lookup(module, bs):
    """Every table's lookup into one flat float32 tensor; returns it and the steps."""
    total = sum(b.nbags * d for b, d in zip(bs, module.dims))
    flat = _torch.empty(total, dtype=_torch.float32)
    steps = []
    for i, (coll, b, out) in enumerate(zip(module._colls, bs, _views(module, flat, bs))):
        form, ids, off, w = b.prepared
        steps.append(_named(module, i, coll.forward, form, ids, off, w, out.numpy()))
    return flat, steps


def backward(module, steps, bs, grad):
    """The fused update of every table from the flat output's gradient, or (plain mode)
    each table's sparse gradient."""
    grads = []
    for i, (coll, step, b, dy) in enumerate(zip(module._colls, steps, bs,
                                                _views(module, grad, bs))):
        if module.optimizer is not None:
            _named(module, i, coll.backward, step, dy.contiguous().numpy())
        else:
            grads.append(module._table_grad(coll, step, 0, i, b.prepared, dy))
    return grads


def _named(module, i, fn, *args):
    """fn(*args), its error naming table i and its features (its collection's only
    table is "table 0" to the library)."""
    try:
        return fn(*args)
    except (_et.Error, TypeError) as e:
        raise type(e)(f"{module._who(i)}: {e}") from None


def once(ctx, name):
    """ctx.<name>, a forward's step(s), taken by its backward: a second backward through
    the same forward is refused (the step updated the tables already)."""
    value = getattr(ctx, name)
    if value is None:
        raise RuntimeError(f"{ctx.module._label()}: backward a second time through the same "
                           "forward (its step updated the tables already: run a new "
                           "forward)")
    setattr(ctx, name, None)
    return value


class Lookup(_torch.autograd.Function):
    """forward: every table's lookup (a flat output); backward: the fused update, or the
    tables' sparse gradients."""

    @staticmethod
    def forward(ctx, placeholder, module, bs, *weights):
        flat, steps = lookup(module, bs)
        ctx.module, ctx.steps, ctx.bs = module, steps, bs
        return flat

    @staticmethod
    def backward(ctx, grad):
        module, steps = ctx.module, once(ctx, "steps")
        grads = backward(module, steps, ctx.bs, grad.contiguous())
        if module.optimizer is not None:
            return (None, None, None) + (None,) * len(module._weights)
        return (None, None, None) + tuple(grads)


def outputs(module, flat, bs, kjt):
    """The module's outputs cut from flat: a KeyedTensor (pooled: each feature's B x D
    columns, in table order then feature order) or {feature: JaggedTensor of its rows}."""
    views = _views(module, flat, bs)
    if module._unpooled:
        out = {}
        for feats, rows, b in zip(module._table_features, views, bs):
            for f, part, n in zip(feats, _torch.split(rows, b.counts), b.lengths):
                out[f] = JaggedTensor(part, lengths=n)
        return out
    s = kjt.stride()
    cols = [rows.view(len(feats), s, rows.shape[1]).transpose(0, 1).reshape(s, -1)
            for feats, rows in zip(module._table_features, views)]
    keys = [f for feats in module._table_features for f in feats]
    dims = [d for feats, d in zip(module._table_features, module.dims) for _ in feats]
    return KeyedTensor(keys, dims, _torch.cat(cols, dim=1))

