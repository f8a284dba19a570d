# SPDX-License-Identifier: BSD-2-Clause
"""Quantized tables in checkpoints, read by numpy alone (python/embtables_ckpt.py)."""
import os
import subprocess

import numpy as np

import embtables_ckpt


def test_numpy_reader_dequantizes(tmp_path):
    """A checkpoint of an int8 and an int4 table: U8 tensors, the format in the metadata,
    and embtables_ckpt.read gives the values emb_table_read gives, bit for bit."""
    subprocess.run([os.environ["QUANT_FIXTURE"], "--ckpt", str(tmp_path)], check=True)
    path = tmp_path / "q-1.safetensors"
    ck = embtables_ckpt.read(path)
    raw = embtables_ckpt.read(path, quantized="raw")
    for name, shape, fmt, rowbytes in [("q8", (33, 12), "int8", 20), ("q4", (9, 20), "int4", 14)]:
        assert ck.tables[name]["format"] == fmt and ck.dtypes[name] == "U8"
        assert raw.tensors[name].shape == (shape[0], rowbytes)
        want = np.fromfile(tmp_path / f"{name}.f32", dtype="<f4").reshape(shape)
        np.testing.assert_array_equal(ck.tensors[name], want)
