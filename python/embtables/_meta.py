# SPDX-License-Identifier: BSD-2-Clause
"""TorchRec's meta-device flow for embtables.torch: a module built with device="meta" holds
meta-shaped weights and no table memory (no C tables); to_empty(device="cpu") gives it
uninitialised CPU tables and reset_parameters() draws them as TorchRec does (each table's
init_fn, default uniform in +-sqrt(1 / num_embeddings)), the module then the same as one
built on the CPU."""
import torch as _torch


def is_meta(device):
    """Whether device (a torch.device, a string or None) is the meta device."""
    return device is not None and _torch.device(device).type == "meta"


def empty_weights(configs, dtypes, row_bytes):
    """Meta tensors of the configs' shapes (quantized tables: their uint8 rows)."""
    out = []
    for c, dt in zip(configs, dtypes):
        n, d = int(c.num_embeddings), int(c.embedding_dim)
        shape, dtype = ((n, row_bytes(dt, d)), _torch.uint8) if isinstance(dt, str) \
            else ((n, d), dt)
        out.append(_torch.empty(shape, dtype=dtype, device="meta"))
    return out


def materialise(module, fn):
    """module._apply(fn) of a meta module: to_empty(device="cpu") (fn: empty_like) gives
    each table new CPU memory (uninitialised) and the C tables over it; a move to the meta
    device keeps it as it is; anything else (a copy of meta data) is refused."""
    try:
        probe = fn(_torch.empty(0, device="meta"))
    except Exception as e:
        raise RuntimeError(f"{module._label()}: its tables are on the meta device (no "
                           f"data to move: {e}); materialise them with "
                           "to_empty(device='cpu') then reset_parameters()") from None
    if probe.device.type == "meta":
        return module
    if probe.device.type != "cpu":
        raise RuntimeError(f"{module._label()}: the module's tables go to the CPU, not "
                           f"{probe.device}")
    new = [fn(b.weight) for b in module.embedding_bags.values()]
    if any(w.device.type != "cpu" or w.shape != b.weight.shape
           for w, b in zip(new, module.embedding_bags.values())):
        raise RuntimeError(f"{module._label()}: materialise the meta tables with "
                           "to_empty(device='cpu')")
    for b, w in zip(module.embedding_bags.values(), new):
        old = b.weight
        if isinstance(old, _torch.nn.Parameter):
            p = _torch.nn.Parameter(w, requires_grad=old.requires_grad)
            p.__dict__.update(old.__dict__)  # apply_optimizer_in_backward's tags, owner
            b.weight = p
        else:
            b.weight = w
    module._build()
    return module


def reset_parameters(module, configs, draw):
    """Draws every table of a config-built module again (TorchRec's reset_parameters: each
    table's init_fn; a meta module is left as it is) and restarts the fused optimizer's
    state and step counts."""
    if module.is_meta:
        return
    if configs is None:
        raise NotImplementedError(f"{module._label()}: reset_parameters needs tables given "
                                  "as EmbeddingBagConfig / EmbeddingConfig")
    with _torch.no_grad():
        for b, w in zip(module.embedding_bags.values(), draw(configs, normal_first=False)):
            b.weight.copy_(w)
    if module.optimizer is not None:
        o = module.optimizer
        module.optimizer = type(o)(o.kind, o.lr, **o.hyper)
        module._build()
        for w in module._weights:
            if hasattr(w, "_in_backward_optimizers"):
                w._in_backward_optimizers = [module.optimizer]
