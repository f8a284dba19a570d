#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Reads embtables checkpoints (safetensors files) into numpy arrays, with numpy alone.

    import embtables_ckpt
    ck = embtables_ckpt.read("ckpt/model-1000.safetensors")
    ck.global_step, ck.optimizer          # 1000, {"kind": "adam", "lr": ..., ...}
    ck.tensors["user"]                     # (ncolumns, featuresize) array
    ck.tensors["user/adam.m"]              # optimizer state (float32)
    ck.tables["user"]                      # {"nshards": 4, "partition": "mod", "step": 1000}

bf16 tensors come back as float32 (exact) unless bf16="uint16" (the raw bits). A
quantized table's values (its table entry has "format": "int8" or "int4": U8 rows as
torch's embedding_bag_byte_prepack / embedding_bag_4bit_prepack pack them) come back
dequantized as float32 (q * scale + bias, as the library computes it) unless
quantized="raw" (the U8 rows). The
checksums (XXH3-64 of the header and of every tensor) are verified with the `xxhash`
module or, without it, the system's libxxhash through ctypes; `ck.verified` says whether
they were (neither found: read unverified).
A delta checkpoint (ck.delta: {"base": NAME, "base_xxh3": HEX}) holds only touched rows:
read_chain(path) follows its links back to the full checkpoint, checks each (the base's
header checksum must be the one its successor names) and returns the model at that step.
Run as a script: `embtables_ckpt.py [--inspect] FILE` lists the tensors.
"""
import ctypes
import ctypes.util
import json
import os
import struct
import sys

import numpy as np

__all__ = ["Checkpoint", "read", "read_chain", "load", "dequantize"]

# I64 / U16: a dynamic table's ids and last update steps ([rows, 1], rows in id order) and
# its admission counts ([4, width]), as "<table>/dynamic.ids", ".last", ".sketch"; I32: a
# pruned export's "<table>/export.remap" ([ncolumns, 1]: each id's row, or -1: zeros)
_DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"),
           "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "U16": np.dtype("<u2"), "U8": np.dtype("u1")}
_HEADER_MAX = 64 << 20


class Checkpoint:
    """A read checkpoint: tensors (name -> array), tables, optimizer, global_step."""

    def __init__(self, tensors, meta, dtypes):
        self.tensors = tensors
        self.dtypes = dtypes  # name -> "F32" / "F16" / "BF16" / "U8"
        self.global_step = meta.get("global_step")
        self.optimizer = meta.get("optimizer")
        self.tables = {t["name"]: {k: v for k, v in t.items() if k != "name"}
                       for t in meta.get("tables", [])}
        self.checksums = meta.get("xxh3", {})
        self.delta = meta.get("delta")  # a delta's link, or None
        self.header_xxh3 = None


def _xxh3_function():
    """XXH3-64 of bytes as an int, or None when no implementation is found."""
    try:
        import xxhash
        return xxhash.xxh3_64_intdigest
    except ImportError:
        pass
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
    except OSError:
        return None
    f = lib.XXH3_64bits
    f.restype, f.argtypes = ctypes.c_uint64, [ctypes.c_char_p, ctypes.c_size_t]
    return lambda b: f(bytes(b), len(b))


_XXH3 = _xxh3_function()
_HH_KEY = b'"header_xxh3":"'


def _check(what, got, want):
    if f"{got:016x}" != want:
        raise ValueError(f"{what}: checksum {got:016x} != {want} (a damaged file)")


def dequantize(rows, fmt):
    """Quantized rows (uint8, [n, row bytes]) of `fmt` "int8" (D values, f32 scale and bias)
    or "int4" (D / 2 bytes, element 2j the low nibble of byte j, f16 scale and bias) as
    float32 [n, D]: q * scale + bias, multiplied then added in float32."""
    rows = np.ascontiguousarray(rows)
    if fmt == "int8":
        q, sb = rows[:, :-8], rows[:, -8:].copy().view("<f4")
    elif fmt == "int4":
        packed, sb = rows[:, :-4], rows[:, -4:].copy().view("<f2").astype(np.float32)
        q = np.empty((rows.shape[0], 2 * packed.shape[1]), dtype=np.uint8)
        q[:, 0::2], q[:, 1::2] = packed & 15, packed >> 4
    else:
        raise ValueError(f"unknown quantized format {fmt!r}")
    scale, bias = sb[:, 0:1].astype(np.float32), sb[:, 1:2].astype(np.float32)
    return (q.astype(np.float32) * scale + bias).astype(np.float32)


def read(path, bf16="float32", quantized="float32"):
    """Reads the checkpoint at `path`; raises ValueError for a file that is not one."""
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:8] == b"EMBCKPT\x01":
        raise ValueError(f"{path}: the older embtables format (EMBCKPT), not safetensors")
    if len(blob) < 8:
        raise ValueError(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > min(len(blob) - 8, _HEADER_MAX):
        raise ValueError(f"{path}: header length {n} in a file of {len(blob)} bytes")
    raw_header = blob[8:8 + n]
    header = json.loads(raw_header)
    md = header.pop("__metadata__", {})
    meta = json.loads(md.get("embtables", "{}"))
    verify = _XXH3 is not None and "header_xxh3" in md
    if verify:  # the header with its own 16 digits as zeros
        at = raw_header.index(_HH_KEY) + len(_HH_KEY)
        zeroed = raw_header[:at] + b"0" * 16 + raw_header[at + 16:]
        _check(f"{path}: header", _XXH3(zeroed), md["header_xxh3"])
    data = memoryview(blob)[8 + n:]
    tensors, dtypes = {}, {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        if not 0 <= begin <= end <= len(data):
            raise ValueError(f"{path}: tensor {name!r} lies outside the file")
        raw = data[begin:end]
        if verify:
            _check(f"{path}: tensor {name!r}", _XXH3(raw), meta["xxh3"][name])
        a = np.frombuffer(raw, dtype=_DTYPES[t["dtype"]]).reshape(t["shape"])
        if t["dtype"] == "BF16" and bf16 == "float32":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = a
        dtypes[name] = t["dtype"]
    ck = Checkpoint(tensors, meta, dtypes)
    ck.verified = verify
    ck.header_xxh3 = md.get("header_xxh3")
    for name, t in ck.tables.items():
        if "format" in t and quantized == "float32" and name in tensors:
            tensors[name] = dequantize(tensors[name], t["format"])
        remap = tensors.get(name + "/export.remap")
        if remap is not None and tensors[name].dtype.kind == "f":  # a pruned export: dense
            tensors[name] = _unprune(tensors[name], remap[:, 0], f"{path}: {name!r}")
    return ck


def _unprune(rows, remap, what):
    """The rows of every id of a pruned table: its row, or zeros where remap is -1."""
    if remap.size and (remap.min() < -1 or remap.max() >= len(rows)):
        raise ValueError(f"{what}: its remapping names rows outside [0, {len(rows)})")
    out = np.zeros((len(remap), rows.shape[1]), dtype=rows.dtype)
    out[remap >= 0] = rows[remap[remap >= 0]]
    return out


def _state_fill(slot, optimizer):
    """The initial value of a state slot (a table's state made at its first update)."""
    acc = slot in ("adagrad.h", "rowwise_adagrad.h", "ftrl.accum")
    return float(optimizer.get("initial_accumulator", 0.0)) if acc and optimizer else 0.0


def read_chain(path, bf16="float32", quantized="float32"):
    """The model at `path`, a full checkpoint or a delta: its chain read back to the full
    checkpoint, each link checked, the deltas' rows written over it oldest first. Raises
    ValueError for a missing or foreign link."""
    chain = [read(path, bf16, quantized)]
    names = [str(path)]
    while chain[-1].delta:
        base = os.path.join(os.path.dirname(str(path)), chain[-1].delta["base"])
        try:
            b = read(base, bf16, quantized)
        except OSError as e:
            raise ValueError(f"{names[-1]} extends {base}, which is missing ({e})") from e
        if b.header_xxh3 != chain[-1].delta["base_xxh3"]:
            raise ValueError(f"{names[-1]} extends {base}, which is not the file it was "
                             "saved after (a foreign link)")
        chain.append(b)
        names.append(base)
    model = chain[-1]
    tensors = {k: np.array(v) for k, v in model.tensors.items()}
    for d in reversed(chain[:-1]):
        kind = (d.optimizer or {}).get("kind", "")
        for name, t in d.tables.items():
            ids = d.tensors[name + "/delta.ids"][:, 0]
            for tname, rows in d.tensors.items():
                slot = tname[len(name) + 1:] if tname.startswith(name + "/") else None
                if tname != name and not (slot and slot.startswith(kind + ".")):
                    continue
                if tname not in tensors:  # state made after the full checkpoint
                    tensors[tname] = np.full((t["ncolumns"], rows.shape[1]),
                                             _state_fill(slot, d.optimizer), rows.dtype)
                tensors[tname][ids] = rows
            model.tables[name]["step"] = t["step"]
    model.tensors = tensors
    model.global_step = chain[0].global_step
    return model


def load(path):
    """The tensors of the checkpoint at `path` as a dict of numpy arrays."""
    return read(path).tensors


def _inspect(path):
    ck = read(path, bf16="uint16", quantized="raw")
    print(f"{path}: global step {ck.global_step}, optimizer "
          f"{ck.optimizer['kind'] if ck.optimizer else 'none'}")
    for name, a in ck.tensors.items():
        print(f"  {name:40s} {ck.dtypes[name]:5s} {a.shape[0]} x {a.shape[1]}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--inspect"]
    if len(args) != 1:
        sys.exit("usage: embtables_ckpt.py [--inspect] FILE")
    _inspect(args[0])
