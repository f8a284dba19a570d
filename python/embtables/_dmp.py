# SPDX-License-Identifier: BSD-2-Clause
"""TorchRec's DistributedModelParallel entry for embtables.torch, single process: the model
is wrapped as TorchRec wraps it (module, plan, device, state_dict keys of the unwrapped
model, fused_optimizer) and its meta-device tables materialised (to_empty, then every
submodule's reset_parameters: TorchRec's init_parameters); nothing is sharded. Several
ranks (torch.distributed of more than one process) are refused: placing tables over ranks
is the MPI library's planner's (embtables.Collection over MPI), not this wrapper's yet."""
import torch as _torch

_nn = _torch.nn


def _world_size():
    dist = _torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return 1


def _materialise(m, device):
    if getattr(m, "is_meta", None) is True:  # an embtables module: its C tables too
        m.to_empty(device=device)
        m.reset_parameters()
        return
    meta = False
    for group in (m._parameters, m._buffers):
        for name, t in group.items():
            if isinstance(t, _torch.Tensor) and t.is_meta:
                new = _torch.empty_like(t, device=device)
                group[name] = _nn.Parameter(new, t.requires_grad) \
                    if isinstance(t, _nn.Parameter) else new
                meta = True
    if meta and hasattr(m, "reset_parameters"):
        m.reset_parameters()
    for child in m.children():
        _materialise(child, device)


class _FusedOptimizer:
    """What DMP's fused_optimizer gives a training loop here: the fused optimizers run in
    the backward, so step() and zero_grad() have nothing to do; params: the tables'."""

    def __init__(self, params):
        self.params = params

    def step(self, closure=None):
        """Nothing: the tables were updated in the backward."""
        return None if closure is None else closure()

    def zero_grad(self, set_to_none=True):
        """Nothing: the tables get no gradient."""

    def __repr__(self):
        return f"FusedOptimizer({len(self.params)} tables, updated in the backward)"


class DistributedModelParallel(_nn.Module):
    """TorchRec's DistributedModelParallel(module, env, device, plan, sharders,
    init_data_parallel, init_parameters, data_parallel_wrapper), one process: forward is
    the module's; .module the model; state_dict / named_parameters use the model's keys;
    init_parameters materialises meta tables on device (the CPU). plan and sharders are
    accepted when None; a world of several processes raises NotImplementedError."""

    def __init__(self, module, env=None, device=None, plan=None, sharders=None,
                 init_data_parallel=True, init_parameters=True, data_parallel_wrapper=None):
        super().__init__()
        n = _world_size()
        if n > 1:
            raise NotImplementedError(f"DistributedModelParallel: {n} processes: tables "
                                      "placed over ranks are not in embtables.torch yet (one "
                                      "process only; MPI training: embtables.Collection)")
        if plan is not None:
            raise NotImplementedError("DistributedModelParallel: a sharding plan over one "
                                      "process places nothing: give plan=None")
        self.device = _torch.device(device if device is not None else "cpu")
        if self.device.type != "cpu":
            raise RuntimeError(f"DistributedModelParallel: device {self.device}: the "
                               "tables run on the CPU")
        self._dmp_wrapped_module = module
        self._env, self.plan = env, plan
        if init_parameters:
            self.init_parameters()

    @property
    def module(self):
        """The wrapped model (TorchRec's)."""
        return self._dmp_wrapped_module

    def forward(self, *args, **kwargs):
        """The model's forward."""
        return self._dmp_wrapped_module(*args, **kwargs)

    def init_parameters(self):
        """Meta tensors materialised on the device, each module holding some then
        reset_parameters() (TorchRec's init_parameters); an embtables module is
        materialised whole (to_empty, then its reset_parameters)."""
        with _torch.no_grad():
            _materialise(self._dmp_wrapped_module, self.device)

    def init_data_parallel(self):
        """Nothing in one process (TorchRec's wraps the dense part for data parallelism)."""

    @property
    def fused_optimizer(self):
        """The tables' optimizer, fused into the backward (step / zero_grad: nothing)."""
        return _FusedOptimizer([p for p in self.module.parameters()
                                if getattr(p, "_in_backward_optimizers", None)])

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """The model's state_dict, its keys (TorchRec's DMP strips its wrapper)."""
        return self._dmp_wrapped_module.state_dict(destination=destination, prefix=prefix,
                                                   keep_vars=keep_vars)

    def load_state_dict(self, state_dict, strict=True):
        """The model's load_state_dict."""
        return self._dmp_wrapped_module.load_state_dict(state_dict, strict)

    def named_parameters(self, prefix="", recurse=True, **kw):
        """The model's named parameters (its keys)."""
        return self._dmp_wrapped_module.named_parameters(prefix, recurse, **kw)

    def named_buffers(self, prefix="", recurse=True, **kw):
        """The model's named buffers (its keys)."""
        return self._dmp_wrapped_module.named_buffers(prefix, recurse, **kw)
