# SPDX-License-Identifier: BSD-2-Clause
"""A checkpoint written by the library (tests/ckpt_fixture.c) read with numpy alone
(python/embtables_ckpt.py), and with torch when it is installed, value for value."""
import json
import os
import struct
import subprocess

import numpy as np
import pytest

import embtables_ckpt

NAMES = {"user/f32": (37, 5, "F32"), "f16": (11, 8, "F16"), "bf16": (13, 3, "BF16")}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    d = tmp_path_factory.mktemp("ckpt")
    subprocess.run([os.environ["CKPT_FIXTURE"], str(d)], check=True)
    return d


def expected(d, name, shape):
    raw = np.fromfile(d / (name.replace("/", "_") + ".f32"), dtype="<f4")
    return raw.reshape(shape)


def test_numpy_reads_tables_state_and_metadata(written):
    ck = embtables_ckpt.read(written / "fixture-2.safetensors")
    assert ck.global_step == 2
    assert ck.optimizer["kind"] == "adam"
    assert ck.tables["user/f32"] == {"nshards": 3, "partition": "mod", "step": 2}
    assert sorted(ck.tensors) == sorted(
        [n for n in NAMES] + [f"{n}/adam.{s}" for n in NAMES for s in "mv"])
    for name, (rows, cols, dt) in NAMES.items():
        a = ck.tensors[name]
        assert ck.dtypes[name] == dt and a.shape == (rows, cols)
        np.testing.assert_array_equal(a.astype(np.float32), expected(written, name, (rows, cols)))
        mv = expected(written, name + "/adam.mv", (rows, 2 * cols))
        np.testing.assert_array_equal(ck.tensors[name + "/adam.m"], mv[:, :cols])
        np.testing.assert_array_equal(ck.tensors[name + "/adam.v"], mv[:, cols:])
    raw = embtables_ckpt.read(written / "fixture-2.safetensors", bf16="uint16").tensors["bf16"]
    assert raw.dtype == np.uint16


def test_readme_snippet_format(written):
    """The layout the README documents: 8-byte length, JSON header, raw tensors."""
    blob = (written / "fixture-2.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    assert (8 + n) % 64 == 0
    header = json.loads(blob[8:8 + n])
    meta = json.loads(header.pop("__metadata__")["embtables"])
    assert meta["version"] == 2 and set(meta["xxh3"]) == set(header)
    ends = sorted(tuple(t["data_offsets"]) for t in header.values())
    assert ends[0][0] == 0 and ends[-1][1] == len(blob) - 8 - n
    assert all(a[1] == b[0] for a, b in zip(ends, ends[1:]))


def test_torch_agrees(written):
    torch = pytest.importorskip("torch")
    blob = (written / "fixture-2.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__")
    dtypes = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
    ck = embtables_ckpt.read(written / "fixture-2.safetensors")
    for name, t in header.items():
        b, e = t["data_offsets"]
        x = torch.frombuffer(bytearray(blob[8 + n + b:8 + n + e]), dtype=dtypes[t["dtype"]])
        x = x.reshape(t["shape"]).float().numpy()
        np.testing.assert_array_equal(x, ck.tensors[name].astype(np.float32))


def test_damaged_and_old_files_are_refused(tmp_path):
    old = tmp_path / "old.emb"
    old.write_bytes(b"EMBCKPT\x01" + bytes(16))
    with pytest.raises(ValueError, match="older embtables format"):
        embtables_ckpt.read(old)
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(struct.pack("<Q", 1 << 40) + b"{}")
    with pytest.raises(ValueError, match="header length"):
        embtables_ckpt.read(bad)


def test_checksums_are_verified(written, tmp_path):
    blob = bytearray((written / "fixture-2.safetensors").read_bytes())
    ck = embtables_ckpt.read(written / "fixture-2.safetensors")
    if not ck.verified:
        pytest.skip("no XXH3 implementation (xxhash module or libxxhash)")
    for at in (len(blob) - 3, 40):  # a data byte, a header byte
        bad = bytearray(blob)
        bad[at] ^= 0x04
        (tmp_path / "bad.safetensors").write_bytes(bad)
        with pytest.raises(ValueError):
            embtables_ckpt.read(tmp_path / "bad.safetensors")


def test_readme_numpy_snippet(written):
    """docs/format.md's ten-line numpy reader gives the same arrays."""
    readme = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "format.md")
    with open(readme) as f:
        section = f.read().split("### Reading a checkpoint with numpy", 1)[1]
    code = section.split("```py\n", 1)[1].split("```", 1)[0]
    env = {}
    exec(compile(code, "docs/format.md", "exec"), env)
    arrays, meta = env["load"](str(written / "fixture-2.safetensors"))
    ck = embtables_ckpt.read(written / "fixture-2.safetensors")
    assert meta["global_step"] == 2 and sorted(arrays) == sorted(ck.tensors)
    for name, a in arrays.items():
        np.testing.assert_array_equal(a, ck.tensors[name])


def test_numpy_reads_a_dynamic_table(written):
    """A dynamic table's rows in id order, its ids and last update steps (int64) and its
    admission counts (uint16), as the library exports them."""
    ck = embtables_ckpt.read(written / "dynfixture-3.safetensors")
    ids = np.fromfile(written / "dyn.ids", dtype="<i8")
    assert ck.tables["dyn"]["dynamic"] == {"step": 3}
    assert ck.dtypes["dyn/dynamic.ids"] == "I64" and ck.dtypes["dyn/dynamic.sketch"] == "U16"
    np.testing.assert_array_equal(ck.tensors["dyn/dynamic.ids"].ravel(), ids)
    np.testing.assert_array_equal(
        ck.tensors["dyn"], np.fromfile(written / "dyn.f32", dtype="<f4").reshape(len(ids), 4))
    assert ck.tensors["dyn/adagrad.h"].shape == (len(ids), 4)
    last = ck.tensors["dyn/dynamic.last"].ravel()
    assert len(ids) >= 2 and ((last >= 0) & (last <= 3)).all()
    assert ck.tensors["dyn/dynamic.sketch"].shape == (4, 16)


def test_numpy_reads_a_delta_chain(written, tmp_path):
    """A full checkpoint and two deltas (the touched rows, their state and ids, linked by
    name and checksum): read_chain gives the model at the last step, value for value."""
    head = written / "deltafix-5.safetensors"
    d = embtables_ckpt.read(head)
    assert d.delta["base"] == "deltafix-4.safetensors"
    assert d.tensors["f16/delta.ids"].ravel().tolist() == [1, 4, 6]
    assert embtables_ckpt.read(written / "deltafix-2.safetensors").delta is None
    ck = embtables_ckpt.read_chain(head)
    assert ck.global_step == 5 and ck.tables["f16"]["step"] == 5
    for name, (rows, cols, _) in NAMES.items():
        np.testing.assert_array_equal(ck.tensors[name].astype(np.float32),
                                      expected(written, "d5/" + name, (rows, cols)))
        mv = expected(written, "d5/" + name + "/adam.mv", (rows, 2 * cols))
        np.testing.assert_array_equal(ck.tensors[name + "/adam.m"], mv[:, :cols])
        np.testing.assert_array_equal(ck.tensors[name + "/adam.v"], mv[:, cols:])
    # a foreign link (another file under the base's name) and a missing one are refused
    for f in ("deltafix-2.safetensors", "deltafix-4.safetensors", "deltafix-5.safetensors"):
        (tmp_path / f).write_bytes((written / f).read_bytes())
    (tmp_path / "deltafix-4.safetensors").write_bytes((written / "fixture-2.safetensors")
                                                       .read_bytes())
    with pytest.raises(ValueError, match="foreign"):
        embtables_ckpt.read_chain(tmp_path / "deltafix-5.safetensors")
    (tmp_path / "deltafix-4.safetensors").unlink()
    with pytest.raises(ValueError, match="missing"):
        embtables_ckpt.read_chain(tmp_path / "deltafix-5.safetensors")


def test_numpy_reads_the_serving_export(written):
    """The int8 serving export: no optimizer state, U8 rows dequantized near the values."""
    ck = embtables_ckpt.read(written / "serve-int8.safetensors")
    assert ck.optimizer is None and ck.global_step == 5
    assert sorted(ck.tensors) == sorted(NAMES)
    for name, (rows, cols, _) in NAMES.items():
        assert ck.dtypes[name] == "U8" and ck.tables[name]["format"] == "int8"
        want = expected(written, "d5/" + name, (rows, cols))
        span = want.max(axis=1, keepdims=True) - want.min(axis=1, keepdims=True)
        assert (np.abs(ck.tensors[name] - want) <= span / 255 * 0.51 + 1e-6).all()
