# SPDX-License-Identifier: BSD-2-Clause
"""Checkpoints from Python through the C saver: read back with numpy alone, resume bit
for bit with the optimizer's state, max_to_keep, errors that change nothing."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import embtables as et
from embtables.torch import EmbeddingBagCollection

SIZES = [(40, 8), (25, 16)]


def steps(ebc, gen, n):
    for _ in range(n):
        ids = [torch.randint(0, rows, (12,), generator=gen) for rows, _ in SIZES]
        offs = [torch.arange(0, 12, 3) for _ in SIZES]
        out = ebc(ids, offs)
        out.backward(torch.randn(out.shape, generator=gen))


def fresh(optimizer):
    hyper = (dict(counter_halflife=2, learning_rate_mode=2, adjustment_ub=0.5)
             if optimizer == "rowwise_adagrad_counter" else {})
    return EmbeddingBagCollection([torch.randn(n, d, generator=torch.Generator().manual_seed(n))
                                   for n, d in SIZES], optimizer=optimizer, lr=0.05, **hyper)


@pytest.mark.parametrize("optimizer", ["adagrad", "adam", "rowwise_adagrad_counter"])
def test_resume_bit_for_bit_and_numpy_reader(tmp_path, optimizer):
    straight, resumed = fresh(optimizer), fresh(optimizer)
    steps(straight, torch.Generator().manual_seed(1), 3)
    path = straight.saver(tmp_path).save(3)
    assert os.path.basename(path) == "ckpt-3.safetensors"
    assert et.latest_checkpoint(tmp_path) == path

    ck = et.read_checkpoint(path)                        # numpy alone
    assert ck.global_step == 3 and ck.optimizer["kind"] == optimizer
    for i, w in enumerate(straight.weights):
        np.testing.assert_array_equal(ck.tensors[f"table_{i}"], w.numpy())
    state = [k for k in ck.tensors if k.startswith("table_0/")]
    assert state, "the optimizer's state is in the file"

    assert resumed.restore(path) == 3
    for a, b in zip(straight.weights, resumed.weights):
        assert torch.equal(a, b)
    steps(straight, torch.Generator().manual_seed(2), 3)
    steps(resumed, torch.Generator().manual_seed(2), 3)
    for a, b in zip(straight.weights, resumed.weights):
        assert torch.equal(a, b)                         # the state came back too


def test_numpy_tables_max_to_keep_and_errors(tmp_path):
    w = {"user": np.arange(20, dtype=np.float32).reshape(5, 4),
         "item": np.ones((3, 2), np.float16)}
    saver = et.Saver(tmp_path, w, prefix="m", max_to_keep=2)
    paths = [saver.save(s) for s in (10, 20, 30)]
    assert not os.path.exists(paths[0]) and all(os.path.exists(p) for p in paths[1:])
    assert et.latest_checkpoint(tmp_path) == paths[2]
    back = {"user": np.zeros((5, 4), np.float32), "item": np.zeros((3, 2), np.float16)}
    assert et.restore(paths[2], back) == 30
    for k in w:
        np.testing.assert_array_equal(back[k], w[k])

    wrong = {"user": np.zeros((6, 4), np.float32)}       # another shape: nothing written
    with pytest.raises(et.Error):
        et.restore(paths[2], wrong)
    assert np.all(wrong["user"] == 0)
    raw = bytearray(open(paths[2], "rb").read())
    raw[-3] ^= 0xFF                                      # a flipped byte in a tensor
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(bytes(raw))
    back["user"][:] = 7
    with pytest.raises(et.FileError):
        et.restore(bad, back)
    assert np.all(back["user"] == 7)
    with pytest.raises(et.NotFoundError):
        et.restore(paths[2], {"nobody": np.zeros((5, 4), np.float32)})
    assert et.latest_checkpoint(tmp_path / "nothing-here") is None


NUMPY_ONLY = """
import json, sys
sys.modules["torch"] = None          # import torch fails, and so does the extension
sys.modules["embtables"] = None
import embtables_ckpt
ck = embtables_ckpt.read(sys.argv[1])
print(json.dumps([ck.global_step, ck.optimizer["kind"], sorted(ck.tensors),
                  float(ck.tensors["table_1"].astype("float64").sum()), "torch" in sys.modules
                  and sys.modules["torch"] is not None]))
"""


def test_numpy_only_reader_in_a_process_without_torch(tmp_path):
    """embtables_ckpt reads a checkpoint written from Python with numpy alone."""
    ebc = fresh("rowwise_adagrad")
    steps(ebc, torch.Generator().manual_seed(4), 2)
    path = ebc.saver(tmp_path).save(2)
    r = subprocess.run([sys.executable, "-c", NUMPY_ONLY, path], capture_output=True,
                       text=True, check=True)
    step, kind, names, total, had_torch = json.loads(r.stdout)
    assert step == 2 and kind == "rowwise_adagrad" and not had_torch
    assert {"table_0", "table_1"} <= set(names) and any(n.startswith("table_0/") for n in names)
    assert total == pytest.approx(float(ebc.weights[1].double().sum()), abs=1e-3)


def test_savers_create_their_directory(tmp_path):
    """Saver (and EmbeddingBagCollection.saver) make the directory and its missing parents
    (mkdir -p); one that cannot be made is a FileError naming it, nothing created."""
    ebc = fresh("adagrad")
    deep = tmp_path / "runs" / "a" / "ckpt"
    path = ebc.saver(deep).save(1)
    assert os.path.dirname(path) == str(deep) and os.path.isfile(path)
    assert ebc.saver(deep).save(2)                      # an existing directory is fine
    t = et.Table.create(4, 2)
    et.Saver(tmp_path / "x" / "y", {"t": t}).save(0)
    assert (tmp_path / "x" / "y" / "checkpoint").is_file()
    (tmp_path / "file").write_text("")
    with pytest.raises(et.FileError, match=f"{tmp_path / 'file'}.*not a directory"):
        et.Saver(tmp_path / "file" / "sub", {"t": t})
    with pytest.raises(et.InvalidError, match="prefix"):
        et.Saver(tmp_path / "new", {"t": t}, prefix="a b")
    assert not (tmp_path / "new").exists()


def _write_safetensors(path, tensors, meta):
    """A checkpoint file by hand (no checksums): {name: array} and the embtables metadata."""
    header, blobs, at = {}, [], 0
    for name, a in tensors.items():
        b = a.tobytes()
        header[name] = {"dtype": {"<f4": "F32", "<i4": "I32"}[a.dtype.str],
                        "shape": list(a.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    header["__metadata__"] = {"embtables": json.dumps(meta)}
    h = json.dumps(header).encode()
    path.write_bytes(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def test_reader_expands_a_pruned_export(tmp_path):
    """A pruned export (docs/format.md "Pruned tables") reads as every id's row, zeros for
    the pruned ids; a remapping naming a row outside the values is a ValueError."""
    import embtables_ckpt
    rows = np.arange(8, dtype=np.float32).reshape(2, 4) + 1
    meta = {"version": 1, "global_step": 0, "tables": [
        {"name": "w", "nshards": 1, "partition": "none", "step": -1, "ncolumns": 4}]}
    path = tmp_path / "pruned.safetensors"
    _write_safetensors(path, {"w": rows, "w/export.remap": np.array(
        [[-1], [0], [-1], [1]], dtype=np.int32)}, meta)
    want = np.zeros((4, 4), np.float32)
    want[1], want[3] = rows[0], rows[1]
    np.testing.assert_array_equal(embtables_ckpt.read(path).tensors["w"], want)
    _write_safetensors(path, {"w": rows, "w/export.remap": np.array(
        [[-1], [0], [2], [1]], dtype=np.int32)}, meta)
    with pytest.raises(ValueError, match="outside"):
        embtables_ckpt.read(path)
