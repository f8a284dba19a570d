# SPDX-License-Identifier: BSD-2-Clause
"""Tiered tables (embtables.Table.tiered: rows in a file, hot rows cached) as tables of an
embtables.torch module: the lookup and the fused optimizer run on the table itself; its
state_dict "weight" is a copy of its rows in the form an in-memory table of the same dtype
has (f32 / f16 / bf16 rows, int8 / int4 prepacked uint8 rows), loaded back row by row."""
import numpy as _np
import torch as _torch

import embtables as _et


def rows(table):
    """A tensor copy of every row of table, as the weight of the same table in memory."""
    copy = _et.Table.create(table.num_embeddings, table.dim, table.dtype)
    copy.quantize_from(table)
    a = copy.numpy().copy()
    if table.dtype == "bf16":
        return _torch.from_numpy(a.view(_np.int16)).view(_torch.bfloat16)
    return _torch.from_numpy(a)


def load(table, weight, what):
    """Sets every row of table from weight (a tensor as rows() gives), or raises naming
    what before anything is written."""
    want = tuple(rows_shape(table))
    if tuple(weight.shape) != want:
        raise _et.InvalidError(f"{what}: a weight of shape {tuple(weight.shape)} for a "
                               f"tiered table of {want}")
    q = table.dtype if table.dtype in ("int8", "int4") else None
    table.quantize_from(_et.Table(weight.detach().contiguous(), dtype=q))


def rows_shape(table):
    """The weight's shape: rows x dim, or rows x the bytes of a quantized row."""
    n, d, q = table.num_embeddings, table.dim, table.dtype
    return (n, d + 8 if q == "int8" else d // 2 + 4 if q == "int4" else d)
