# SPDX-License-Identifier: BSD-2-Clause
"""TorchRec's optimizer in backward (torchrec.optim.apply_optimizer_in_backward), as
embtables.torch exports it: on an EmbeddingBagCollection's tables it selects the library's
fused optimizer (the fast path), so that a ported TorchRec script gets it unchanged."""
import torch as _torch

import embtables as _et

__all__ = ["RowWiseAdagrad", "apply_optimizer_in_backward", "in_backward_optimizer_filter"]


class RowWiseAdagrad:
    """TorchRec's (FBGEMM's) row-wise Adagrad, for apply_optimizer_in_backward on an
    EmbeddingBagCollection's tables (one accumulator per row: the fused
    'rowwise_adagrad'). It is not a torch optimizer of its own."""

    def __init__(self, params, lr=0.01, eps=1e-10, **kw):
        raise NotImplementedError("RowWiseAdagrad runs fused on embtables tables: give it to "
                                  "apply_optimizer_in_backward with their parameters")


# torch optimizer class name -> (fused kind, its default lr, the kwargs that must be at
# their default to match: name -> default)
_IN_BACKWARD = {
    "SGD": ("sgd", None, {"momentum": 0, "dampening": 0, "weight_decay": 0,
                          "nesterov": False, "maximize": False}),
    "Adagrad": ("adagrad", 0.01, {"lr_decay": 0, "weight_decay": 0, "maximize": False}),
    "RowWiseAdagrad": ("rowwise_adagrad", 0.01, {"weight_decay": 0}),
    "Adam": ("adam", 0.001, {"weight_decay": 0, "amsgrad": False, "maximize": False}),
    "SparseAdam": ("adam", 0.001, {"maximize": False}),
}
_HYPER = {"eps": "eps", "initial_accumulator_value": "initial_accumulator",
          "betas": "betas"}


def _fused_optimizer(optimizer_class, kwargs):
    """The embtables.Optimizer doing what optimizer_class(params, **kwargs) does to an
    embedding table, or NotImplementedError naming what it cannot do."""
    name = getattr(optimizer_class, "__name__", str(optimizer_class))
    if name not in _IN_BACKWARD:
        raise NotImplementedError(f"apply_optimizer_in_backward: {name} has no fused form "
                                  f"on embtables tables ({', '.join(_IN_BACKWARD)})")
    kind, default_lr, fixed = _IN_BACKWARD[name]
    kwargs = dict(kwargs)
    lr = kwargs.pop("lr", default_lr)
    if lr is None:
        raise TypeError(f"apply_optimizer_in_backward: {name} needs an lr")
    hyper = {}
    for k, v in kwargs.items():
        if k in _HYPER:
            hyper[_HYPER[k]] = v
        elif k in fixed and v == fixed[k]:
            continue
        elif k not in ("foreach", "differentiable", "capture_graph", "fused"):
            raise NotImplementedError(f"apply_optimizer_in_backward: {name}'s {k}={v!r} "
                                      "has no fused form (the fused optimizer takes lr, "
                                      f"{', '.join(_HYPER)})")
    return _et.Optimizer(kind, lr, **hyper)


def apply_optimizer_in_backward(optimizer_class, params, optimizer_kwargs):
    """TorchRec's: optimizer_class(**optimizer_kwargs) applied to params in the backward,
    their gradients dropped. The parameters of an EmbeddingBagCollection's tables switch
    it to the library's fused optimizer (sgd, adagrad, RowWiseAdagrad, Adam / SparseAdam
    as lazy Adam; all of a module's tables at once); any other parameter gets
    optimizer_class stepped from a gradient hook. Each parameter is tagged as torch tags
    it (_in_backward_optimizers, _optimizer_classes, _optimizer_kwargs)."""
    params = list(params)
    owners, others = {}, []
    for p in params:
        ref = getattr(p, "_embtables_owner", None)
        module = ref() if ref is not None else None
        if module is None:
            others.append(p)
        else:
            owners.setdefault(id(module), (module, set()))[1].add(id(p))
    for module, given in owners.values():
        module._fuse(_fused_optimizer(optimizer_class, optimizer_kwargs), given)
    for p in others:
        _hook_optimizer(p, optimizer_class, optimizer_kwargs)
    for p in params:
        p._optimizer_classes = [optimizer_class]
        p._optimizer_kwargs = [dict(optimizer_kwargs)]
        if not hasattr(p, "_in_backward_optimizers"):
            p._in_backward_optimizers = []


def _hook_optimizer(p, optimizer_class, kwargs):
    """optimizer_class over p alone, stepped when p's gradient arrives (which is then
    dropped): torch.distributed's _apply_optimizer_in_backward where torch has none."""
    opt = optimizer_class([p], **kwargs)
    p._in_backward_optimizers = [opt]

    def step(grad):
        p.grad = grad
        opt.step()
        p.grad = None
        return _torch.zeros_like(grad)

    p.register_hook(step)


def in_backward_optimizer_filter(named_parameters, include=False):
    """TorchRec's: the (name, parameter) pairs without an optimizer in backward (with
    one: include=True)."""
    for name, p in named_parameters:
        if hasattr(p, "_in_backward_optimizers") == include:
            yield name, p
