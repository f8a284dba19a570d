# SPDX-License-Identifier: BSD-2-Clause
"""Quantized tables against torch's quantized embedding bags on the same prepacked rows.

torch.ops.quantized.embedding_bag_byte_prepack / embedding_bag_4bit_prepack pack the rows;
the library wraps those bytes unchanged (tests/quant_fixture.c) and pools them with
emb_lookup. Sum order: the library adds a bag's rows in bag order, each element as
acc + fma(q, w * scale, w * bias) in f32 (kernels/quant_c.c); torch's reference loop
(Debian's torch 1.13) adds the same terms row by row in f32, with its own fusion of the
multiply-add, so results agree within f32 rounding (rtol 1e-5)."""
import os
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch")

OPS = {
    "int8": (torch.ops.quantized.embedding_bag_byte_prepack,
             torch.ops.quantized.embedding_bag_byte_rowwise_offsets),
    "int4": (torch.ops.quantized.embedding_bag_4bit_prepack,
             torch.ops.quantized.embedding_bag_4bit_rowwise_offsets),
}


def run_fixture(d, dt, D, nrows, nbags, mode, weighted):
    subprocess.run([os.environ["QUANT_FIXTURE"], str(d), dt, str(D), str(nrows), str(nbags),
                    mode, "1" if weighted else "0"], check=True)
    return np.fromfile(d / "out.bin", dtype="<f4").reshape(nbags, D)


@pytest.mark.parametrize("dt", ["int8", "int4"])
@pytest.mark.parametrize("D", [16, 64, 100, 256])
@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_pooled_lookup_equals_torch(tmp_path, dt, D, mode, weighted):
    if mode == "mean" and weighted:
        pytest.skip("torch: per_sample_weights only with mode='sum'")
    prepack, bag = OPS[dt]
    g = torch.Generator().manual_seed(D * 7 + len(mode) + weighted)
    nrows, nbags = 300, 40
    w = torch.randn(nrows, D, generator=g)
    packed = prepack(w)
    lens = torch.randint(0, 25, (nbags,), generator=g)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(lens, 0)])
    ids = torch.randint(0, nrows, (int(offsets[-1]),), generator=g)
    psw = torch.rand(ids.numel(), generator=g) * 2 - 0.5 if weighted else None
    want = bag(packed, ids, offsets, mode=0, per_sample_weights=psw,
               include_last_offset=True).numpy()
    if mode == "mean":  # torch 1.13's CPU op ignores mode=1 (it sums): its sum / length
        n = lens.numpy().astype(np.float32)[:, None]
        want = np.where(n > 0, want * (np.float32(1) / np.maximum(n, 1)), 0).astype(np.float32)
    packed.numpy().tofile(tmp_path / "rows.bin")
    ids.numpy().astype("<i8").tofile(tmp_path / "ids.bin")
    offsets.numpy().astype("<i8").tofile(tmp_path / "offsets.bin")
    if weighted:
        psw.numpy().astype("<f4").tofile(tmp_path / "weights.bin")
    got = run_fixture(tmp_path, dt, D, nrows, nbags, mode, weighted)
    assert packed.shape[1] == {"int8": D + 8, "int4": D // 2 + 4}[dt]
    scale = np.abs(want).max() + 1.0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale)

