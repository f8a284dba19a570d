# SPDX-License-Identifier: BSD-2-Clause
"""GPU tables from Python against the CPU module (skipped without the CUDA back end or a
device)."""
import pytest
import torch

import embtables.gpu as eg
from embtables.torch import EmbeddingBagCollection

pytestmark = pytest.mark.skipif(not eg.available(), reason="no CUDA back end or no GPU")


@pytest.mark.parametrize("optimizer", ["sgd", "rowwise_adagrad", "adam"])
def test_gpu_matches_cpu(optimizer):
    gen = torch.Generator().manual_seed(2)
    weights = [torch.randn(n, d, generator=gen) for n, d in ((100, 16), (60, 32))]
    cpu = EmbeddingBagCollection([w.clone() for w in weights], optimizer=optimizer, lr=0.05)
    gpu = eg.GpuEmbeddingBagCollection([w.clone() for w in weights], optimizer=optimizer, lr=0.05)
    for _ in range(3):
        ids = [torch.randint(0, w.shape[0], (24,), generator=gen) for w in weights]
        offs = [torch.arange(0, 24, 3) for _ in weights]
        out_c = cpu(ids, offs)
        out_g = gpu([i.cuda() for i in ids], [o.cuda() for o in offs])
        torch.testing.assert_close(out_g.cpu(), out_c.detach(), rtol=0, atol=1e-5)
        dy = torch.randn(out_c.shape, generator=gen)
        out_c.backward(dy)
        out_g.backward(dy.cuda())
    torch.cuda.synchronize()
    for w, t in zip(cpu.weights, gpu.tables):
        torch.testing.assert_close(torch.from_numpy(t.to_host().numpy()), w, rtol=0, atol=1e-5)
