# SPDX-License-Identifier: BSD-2-Clause
"""embtables from Python: embedding tables over numpy arrays and torch CPU tensors (no
copy), pooled lookups in PyTorch's conventions, lookups over many tables under a
threading strategy, and the library's fused, deduplicating optimizers.

    import numpy as np, embtables
    w = np.random.rand(1000, 64).astype(np.float32)
    t = embtables.Table(w)                       # wraps w: no copy, writes show both ways
    out = t.lookup(np.array([3, 17, 17, 99]), offsets=np.array([0, 1]), mode="mean")

Errors are raised as embtables.Error subclasses (RangeError is an IndexError,
InvalidError a ValueError, ...) carrying the library's message, which names the culprit;
a failed call writes nothing. `embtables.torch` has the nn.Module.
"""
import sys as _sys

import numpy as _np

from . import _embtables as _C
from ._embtables import (Error, FileError, InvalidError, NoMemoryError, NotFoundError,
                         RangeError)

__version__ = _C.version()
"""The library's version (emb_version()), which is also the package's."""

__all__ = ["__version__", "Table", "Strategy", "Optimizer", "lookup", "lookup_jagged", "maplookup",
           "Saver", "restore", "latest_checkpoint", "read_checkpoint",
           "pooling", "as_array", "Error", "RangeError", "InvalidError", "NoMemoryError",
           "FileError", "NotFoundError", "physical_cores", "cpu_flags", "COMBINERS", "DTYPES",
           "QUANTIZED",
           "OPTIMIZERS", "INITIALIZERS", "PRUNE_INVALID", "PRUNE_NONPOSITIVE_WEIGHTS",
           "USE_DEFAULT_ID"]

COMBINERS = {"none": 0, "gather": 0, "sum": 1, "mean": 2, "sqrtn": 3, "max": 4}
PRUNE_INVALID, PRUNE_NONPOSITIVE_WEIGHTS, USE_DEFAULT_ID = 1, 2, 4
DTYPES = {"f32": 0, "f16": 1, "bf16": 2, "int8": 3, "int4": 4}
QUANTIZED = ("int8", "int4")
OPTIMIZERS = {"sgd": 0, "adagrad": 1, "rowwise_adagrad": 2, "ftrl": 3, "adam": 4,
              "rowwise_adagrad_counter": 5}
INITIALIZERS = {"none": 0, "zeros": 1, "ones": 2, "constant": 3, "uniform": 4, "normal": 5,
                "truncated_normal": 6, "uniform_unit_scaling": 7}


def physical_cores():
    """The number of physical cores (the default thread count of a Strategy)."""
    return _C.physical_cores()


def cpu_flags(mask=-1):
    """The CPU features the kernels use (bit flags); mask >= 0 restricts them first (for
    tests: 0 = the C reference kernels)."""
    return _C.cpu_flags(mask)


def _is_torch(x):
    return type(x).__module__.startswith("torch")


def as_array(x):
    """A numpy view of x (numpy array, torch CPU tensor, or anything array-like): no copy
    for arrays and CPU tensors (bfloat16 tensors are viewed as int16)."""
    if isinstance(x, _np.ndarray):
        return x
    if _is_torch(x):
        torch = _sys.modules["torch"]
        if x.device.type != "cpu":
            raise InvalidError(f"a {x.device.type} tensor: CPU tables and ids need CPU "
                               "tensors (see embtables.gpu)")
        x = x.detach()
        if x.dtype == torch.bfloat16:
            x = x.view(torch.int16)
        return x.numpy()
    return _np.asarray(x)


def _ids(x, what="ids", t=None):
    """Ids as a C-contiguous int32 / int64 array (a view when they already are). Other
    integer types are widened to int64; float, bool and anything else are a TypeError
    (torch's embedding_bag refuses them too: no silent truncation of 1.7 to 1)."""
    a = x
    if type(a) is not _np.ndarray:
        try:
            a = x.numpy()  # the common case, a torch CPU tensor: a view
        except (AttributeError, TypeError, RuntimeError):
            a = as_array(x)
    if a.dtype != _np.int64 and a.dtype != _np.int32:
        if a.dtype.kind not in "iu" or a.dtype == _np.uint64:
            raise TypeError(f"{_what(what, t)}: ids must be integers (int32 or int64), "
                            f"not {a.dtype}")
        a = a.astype(_np.int64)
    return a if a.flags.c_contiguous else _np.ascontiguousarray(a)


def _what(what, t):
    """The argument's name in a message (formatted only on errors: the calls are hot)."""
    return what if t is None else f"{what}[{t}]"


def _floats(x, what, t=None):
    """x as a C-contiguous float32 array: arrays and tensors of another dtype are a
    TypeError, as torch raises (a Python list is converted)."""
    if isinstance(x, (list, tuple)):
        return _np.ascontiguousarray(x, dtype=_np.float32)
    a = as_array(x)
    if a.dtype != _np.float32:
        raise TypeError(f"{_what(what, t)}: expected float32, got {a.dtype}")
    return _np.ascontiguousarray(a)


def _weights(x, what="per_sample_weights", t=None):
    return None if x is None else _floats(x, what, t)


def pooling(mode="sum", max_norm=None, default_id=None, prune_invalid=False,
            prune_nonpositive_weights=False):
    """The pooling descriptor: mode sum / mean / sqrtn / max / none (gather); max_norm clips every
    looked-up column to that l2 norm; TF's safe lookup: prune_invalid drops ids < 0,
    prune_nonpositive_weights drops ids with weight <= 0, and an empty bag yields column
    default_id (else zeros)."""
    if isinstance(mode, tuple):
        return mode
    if mode not in COMBINERS:
        raise InvalidError(f"mode '{mode}' is not one of {', '.join(COMBINERS)}")
    flags = (PRUNE_INVALID if prune_invalid else 0) | \
        (PRUNE_NONPOSITIVE_WEIGHTS if prune_nonpositive_weights else 0) | \
        (USE_DEFAULT_ID if default_id is not None else 0)
    return (COMBINERS[mode], float(max_norm or 0.0), int(default_id or 0), flags)


class Table:
    """An embedding table: num_embeddings rows ("columns" in the C API) of dim elements.

    Table(array) wraps a 2-D array or torch CPU tensor (f32, f16; bf16 tensors, or uint16
    arrays with dtype="bf16") without copying: the library reads and writes its memory,
    whose rows may be strided. Table.create() makes an owned table; .numpy() is a view.
    dtype="int8" / "int4": array is uint8 rows in torch's prepacked layouts (the output
    of torch.ops.quantized.embedding_bag_byte_prepack / embedding_bag_4bit_prepack: D
    bytes then f32 scale and bias; D / 2 bytes, low nibble first, then f16 scale and bias),
    wrapped without a copy; dim is D, .numpy() gives the rows' bytes.
    """

    def __init__(self, array, name=None, dtype=None):
        self.source = array
        a = as_array(array)
        if dtype in QUANTIZED:
            if a.dtype != _np.uint8:
                raise InvalidError(f"table: dtype {dtype} wraps uint8 rows, not {a.dtype}")
            self._array = a
            self._t = _C.table_wrap(a, name, DTYPES[dtype])
            return
        if dtype == "bf16" or (dtype is None and a.dtype == _np.int16 and _is_torch(array)):
            a = a.view(_np.uint16)
        elif dtype is not None and _np.dtype({"f32": _np.float32, "f16": _np.float16}
                                            .get(dtype, dtype)) != a.dtype:
            raise InvalidError(f"table: dtype {dtype} but the array holds {a.dtype}")
        self._array = a
        self._t = _C.table_wrap(a, name)

    @classmethod
    def create(cls, num_embeddings, dim, dtype="f32", name=None, init=None, seed=0):
        """An owned, zeroed table; init = (kind, a, b) with TF's kinds (uniform: [a, b),
        normal: mean a, stddev b, ...), counter-based so any thread count gives the same."""
        self = cls.__new__(cls)
        self._t = _C.table_create(int(num_embeddings), int(dim), DTYPES[dtype], name)
        self._array = None
        self.source = None
        if init is not None:
            self.initialize(*init, seed=seed)
        return self

    @classmethod
    def tiered(cls, path, num_embeddings, dim, dtype="f32", cache_bytes=64 << 20,
               optimizer=None, name=None, init=None, seed=0):
        """A table larger than memory (tiered.h): its rows, and the state of optimizer (a
        kind name or an Optimizer: the room is kept beside each row), in the file path
        (created, or truncated); a DRAM cache of cache_bytes holds the hot rows. Every
        lookup, Collection and optimizer gives the bits of the same table in memory. The
        file is a working store: flush() writes the dirty rows back; checkpoint with
        Saver. A read or write the disk refuses raises FileError naming the file."""
        kind = optimizer.kind if isinstance(optimizer, Optimizer) else optimizer
        if kind is not None and kind not in OPTIMIZERS:
            raise InvalidError(f"optimizer '{kind}' is not one of {', '.join(OPTIMIZERS)}")
        width = _C.state_width(OPTIMIZERS[kind], int(dim)) if kind else 0
        self = cls.__new__(cls)
        self._t = _C.table_tiered(str(path), int(num_embeddings), int(dim), DTYPES[dtype],
                                  int(cache_bytes), width, name)
        self._array = None
        self.source = None
        if init is not None:
            self.initialize(*init, seed=seed)
        return self

    def flush(self):
        """A tiered table's dirty rows written back to its file (Table.tiered)."""
        _C.table_tiered_flush(self._t)

    def tiered_stats(self):
        """A tiered table's counters: a dict of hits, misses, rows_read, rows_written,
        cache_rows and the I/O engine."""
        keys = ("hits", "misses", "rows_read", "rows_written", "cache_rows", "engine")
        return dict(zip(keys, _C.table_tiered_stats(self._t)))

    def initialize(self, kind, a=0.0, b=0.0, seed=0):
        """Fills the table by an initializer (INITIALIZERS: TF's kinds; uniform [a, b),
        normal mean a stddev b, ...), counter-based: the same bits for any thread count."""
        self._t.initialize(INITIALIZERS[kind], a, b, seed)

    def quantize_from(self, src):
        """Sets every row from the same row of src (a Table of the same shape), converted:
        an f32 / f16 / bf16 table quantized into this int8 / int4 one, rounded to nearest
        (bias = the row's minimum, emb_table_quantize), or any other pair of dtypes."""
        _C.table_quantize(self._t, src._t)

    def numpy(self):
        """The table's memory as a 2-D array (bf16 as uint16, int8 / int4 rows as their
        uint8 bytes): a view, not a copy."""
        if self._array is not None:
            return self._array
        return _np.asarray(memoryview(self._t))  # BufferError where there is no memory (tiered)

    def to_float(self):
        """A copy of the table as f32."""
        out = _np.empty((self.num_embeddings, self.dim), dtype=_np.float32)
        self._t.read(out)
        return out

    def changed_since(self, since=0):
        """The rows written after write count `since` (0: every row, the first call),
        for publishing increments to a server: (ids int64, rows float32 n x dim, now),
        `now` the write count to pass next time (emb_table_changed_since)."""
        n, _ = _C.changed_since(self._t, int(since), None, None)
        ids = _np.empty(n, dtype=_np.int64)
        rows = _np.empty((n, self.dim), dtype=_np.float32)
        n, now = _C.changed_since(self._t, int(since), ids, rows)
        return ids[:n], rows[:n], now

    num_embeddings = property(lambda self: self._t.info()[0], doc="The number of rows.")
    dim = property(lambda self: self._t.info()[1], doc="The row width (embedding_dim).")
    dtype = property(lambda self: self._t.info()[2], doc="'f32', 'f16', 'bf16', 'int8' or 'int4'.")
    name = property(lambda self: self._t.info()[3], doc="The table's name, or None.")

    def __repr__(self):
        return (f"embtables.Table({self.num_embeddings}x{self.dim} {self.dtype}"
                + (f", name={self.name!r})" if self.name else ")"))

    def lookup(self, input, offsets=None, per_sample_weights=None, mode="sum",
               max_norm=None, include_last_offset=False, prune_invalid=False,
               prune_nonpositive_weights=False, default_id=None, out=None):
        """torch.nn.functional.embedding_bag's conventions: 2-D input = fixed bags; 1-D
        input with offsets (bag starts; include_last_offset: plus the end); 1-D input
        without offsets = one id per bag. mode 'none' gathers. Returns a float32 array
        (a tensor when input is a tensor), or writes into out."""
        p = pooling(mode, max_norm, default_id, prune_invalid, prune_nonpositive_weights)
        ids = _ids(input)
        if offsets is not None:
            offsets = _ids(offsets)
            nbags = len(offsets) - (1 if include_last_offset else 0)
        else:
            nbags = ids.shape[0]
        out_t, out_a = _output(out, (nbags, self.dim), _is_torch(input))
        _C.lookup(self._t, ids, offsets, _weights(per_sample_weights), p, out_a,
                  1 if include_last_offset else 0)
        return out_t

    def lookup_jagged(self, values, lengths, weights=None, **kw):
        """TorchRec's jagged form: bag b has lengths[b] ids, in order, in values."""
        return self.lookup(values, _offsets_of_lengths(lengths), weights,
                           include_last_offset=True, **kw)


def _offsets_of_lengths(lengths):
    lengths = as_array(lengths)
    off = _np.zeros(len(lengths) + 1, dtype=_np.int64)
    _np.cumsum(lengths, out=off[1:])
    return off


def _output(out, shape, as_torch):
    """(what to return, its numpy view) for an output of shape."""
    if out is not None:
        return out, as_array(out)
    if as_torch:
        t = _sys.modules["torch"].empty(shape, dtype=_sys.modules["torch"].float32)
        return t, t.numpy()
    a = _np.empty(shape, dtype=_np.float32)
    return a, a


def lookup(table, *args, **kw):
    """Table(table).lookup(...) for an array / tensor, or table.lookup(...)."""
    if not isinstance(table, Table):
        table = Table(table)
    return table.lookup(*args, **kw)


def lookup_jagged(table, values, lengths, weights=None, **kw):
    """Table(table).lookup_jagged(...) for an array / tensor, or table.lookup_jagged(...):
    TorchRec's jagged form, bag b holding lengths[b] ids of values."""
    if not isinstance(table, Table):
        table = Table(table)
    return table.lookup_jagged(values, lengths, weights, **kw)


class Strategy:
    """How lookups and updates over many tables use threads: 'sequential', 'parallel'
    (whole tables over threads), 'prealloc-concat' (bag chunks of every table) or 'auto'
    (per call: a small one on the caller, else the better of the two); threads 0 = the
    physical cores. Every strategy and thread count gives the same bits."""

    def __init__(self, name="prealloc-concat", threads=0, pinning=None, chunks=0,
                 num_splits=0):
        pin = {None: 0, "none": 0, "compact": 1, "scatter": 2}[pinning]
        self._s = _C.Strategy(name, int(threads), pin, int(chunks), int(num_splits))

    name = property(lambda self: self._s.info()[0], doc="The strategy's name.")
    threads = property(lambda self: self._s.info()[1], doc="Its thread count.")

    def __repr__(self):
        return f"embtables.Strategy({self.name!r}, threads={self.threads})"


def _strategy(s, threads=0):
    if isinstance(s, Strategy):
        return s
    return Strategy(s or "prealloc-concat", threads)


class Optimizer:
    """A fused, deduplicating optimizer: 'sgd', 'adagrad' (PyTorch's), 'rowwise_adagrad'
    (FBGEMM's), 'adam' (PyTorch's SparseAdam: lazy moments) or 'ftrl' (TF's). Keyword
    hyper-parameters: eps, initial_accumulator, beta1, beta2, bias_correction, lr_power,
    l1, l2; state_dtype ("f32", "f16" or "bf16": the state kept in half the bytes) and
    stochastic_rounding (True: f16 / bf16 rows and state rounded stochastically, the same
    bits for any thread count); gradient clipping (0: off) max_gradient (element-wise
    clamp), max_row_norm (each row's L2 norm), max_global_norm (over every table of a step,
    as torch.nn.utils.clip_grad_norm_); 'rowwise_adagrad_counter' (FBGEMM's
    rowwise_adagrad_with_counter): counter_halflife, adjustment_iter, adjustment_ub,
    learning_rate_mode (-1 or 2), tail_id_threshold. lr can be changed between steps; the
    state is kept."""

    def __init__(self, kind="sgd", lr=0.01, **hyper):
        if kind not in OPTIMIZERS:
            raise InvalidError(f"optimizer '{kind}' is not one of {', '.join(OPTIMIZERS)}")
        if "betas" in hyper:
            hyper["beta1"], hyper["beta2"] = hyper.pop("betas")
        if "initial_accumulator_value" in hyper:
            hyper["initial_accumulator"] = hyper.pop("initial_accumulator_value")
        self.kind = kind
        self.hyper = dict(hyper)
        if "state_dtype" in hyper:
            if hyper["state_dtype"] not in ("f32", "f16", "bf16"):
                raise InvalidError(f"optimizer state_dtype {hyper['state_dtype']!r} is not "
                                   "'f32', 'f16' or 'bf16'")
            hyper["state_dtype"] = DTYPES[hyper["state_dtype"]]
        self._o = _C.Optimizer(OPTIMIZERS[kind], float(lr), **hyper)

    @property
    def lr(self):
        """The learning rate; may be set between steps (the state is kept)."""
        return self._o.lr

    @lr.setter
    def lr(self, value):
        self._o.lr = float(value)

    def state(self, table, slot=0):
        """(state array or None, steps) of table: adagrad h (N x D), rowwise_adagrad h
        (N x 1), adam [m | v] (N x 2D), ftrl [accumulator | linear]. A view (with
        state_dtype "bf16": uint16, as Table.numpy gives bf16)."""
        st, step = self._o.state(table._t if isinstance(table, Table) else table, slot)
        return (_np.asarray(st) if st is not None else None), step

    def set_step(self, table, step):
        """Sets the number of updates applied to table (Adam's t), as a restore does."""
        self._o.set_step(table._t if isinstance(table, Table) else table, int(step))

    def apply_sparse(self, table, ids, rows):
        """One step from a sparse gradient (ids, rows): duplicates summed, then the
        optimizer once per distinct row."""
        self._o.apply_sparse(table._t, _ids(ids), _floats(rows, "rows"))

    def __repr__(self):
        return f"embtables.Optimizer({self.kind!r}, lr={self.lr:g})"


def _optimizer(o, lr=0.01, **hyper):
    if o is None or isinstance(o, Optimizer):
        return o
    return Optimizer(o, lr, **hyper)


class Collection:
    """Tables looked up together into the DLRM concat layout (nbags x (prepend + ΣD)),
    and, with an optimizer, updated together by a fused backward. The numpy core of
    embtables.torch.EmbeddingBagCollection. save() / restore() checkpoint every table (under
    its name, or "tables[i]") with the optimizer's state; full_every N > 0: a save writes
    only the rows touched since the previous one and every (N + 1)-th is full (as Saver)."""

    def __init__(self, tables, poolings=None, strategy="prealloc-concat", threads=0,
                 optimizer=None, include_last_offset=False, full_every=0):
        self.tables = [t if isinstance(t, Table) else Table(t) for t in tables]
        if poolings is None or isinstance(poolings, (str, tuple)):
            poolings = [poolings or "sum"] * len(self.tables)
        self.poolings = [pooling(p) for p in poolings]
        self.strategy = _strategy(strategy, threads)
        self.optimizer = _optimizer(optimizer)
        self.include_last_offset = bool(include_last_offset)
        self._c = _C.Collection([t._t for t in self.tables], self.poolings, self.strategy._s,
                                self.optimizer._o if self.optimizer else None, int(full_every))
        self.width = self._c.width()

    def save(self, directory, global_step, prefix="ckpt", max_to_keep=5):
        """Writes `<directory>/<prefix>-<global_step>.safetensors` (a delta with full_every)
        and updates the index `<directory>/checkpoint`, keeping the max_to_keep most recent
        (0: all); returns its path."""
        return self._c.save(str(directory), prefix, int(global_step), int(max_to_keep))

    def restore(self, path):
        """Restores every table and the optimizer's state from a checkpoint save() wrote
        (a delta's chain followed); returns its global step. The whole chain is verified
        first: on any error nothing is changed."""
        return self._c.restore(str(path))

    def nbags(self, form, indices, offsets):
        if form == 0:
            i0 = indices[0]
            if i0.ndim == 2 or offsets is None or offsets[0] is None:
                return i0.shape[0]
            return len(offsets[0]) - (1 if self.include_last_offset else 0)
        return (len(offsets) - (form == 1)) // len(self.tables)

    def forward(self, form, indices, offsets, weights, out, prepend=0):
        """Runs the lookup into out (numpy view); returns the step for backward()."""
        return self._c.forward(form, indices, offsets, weights, out,
                               1 if self.include_last_offset else 0, prepend)

    def backward(self, step, grad_output, prepend=0):
        """The fused update of every table from grad_output (float32, nbags x (prepend +
        width)) of the step forward() returned."""
        if step is None:
            raise RuntimeError("backward: this step's update was applied already (a step "
                               "updates the tables once: run a new forward)")
        if as_array(grad_output).dtype != _np.float32:
            raise TypeError(f"grad_output: expected float32, got {as_array(grad_output).dtype}")
        self._c.backward(step, grad_output, prepend)


def _prepare(indices, offsets=None, per_sample_weights=None, lengths=None):
    """(form, indices, offsets, weights) as numpy: form 0 per-table lists (PyTorch), 1 flat
    indices with T*B+1 offsets (FBGEMM), 2 values with T*B lengths (TorchRec)."""
    if isinstance(indices, (list, tuple)):
        ids = [_ids(x, "indices", t) for t, x in enumerate(indices)]
        off = None if offsets is None else \
            [None if o is None else _ids(o, "offsets", t) for t, o in enumerate(offsets)]
        w = None if per_sample_weights is None else \
            [_weights(x, "per_sample_weights", t) for t, x in enumerate(per_sample_weights)]
        return 0, ids, off, w
    if lengths is not None:
        return 2, _ids(indices, "values"), _ids(lengths, "lengths"), \
            _weights(per_sample_weights)
    if offsets is None:
        raise InvalidError("flat indices need offsets (T*B+1) or lengths (T*B)")
    return 1, _ids(indices, "indices"), _ids(offsets, "offsets"), \
        _weights(per_sample_weights)


def maplookup(tables, indices, offsets=None, per_sample_weights=None, lengths=None,
              mode="sum", strategy="prealloc-concat", threads=0, include_last_offset=False,
              out=None, prepend=0, split=False):
    """Looks up one batch per table (per-table lists; or flat indices with FBGEMM's T*B+1
    offsets; or TorchRec's values with T*B lengths) under a strategy, into the DLRM
    concat matrix (B x (prepend + ΣD), the first prepend columns untouched). mode: one
    for all tables or a list (or pooling() tuples). split=True returns the per-table
    views instead."""
    poolings = mode if isinstance(mode, list) else [mode] * len(tables)
    c = Collection(tables, poolings, strategy, threads, None, include_last_offset)
    form, ids, off, w = _prepare(indices, offsets, per_sample_weights, lengths)
    nbags = c.nbags(form, ids, off)
    as_torch = _is_torch(indices[0] if form == 0 else indices)
    out_t, out_a = _output(out, (nbags, prepend + c.width), as_torch)
    c.forward(form, ids, off, w, out_a, prepend)
    if not split:
        return out_t
    views, at = [], prepend
    for t in c.tables:
        views.append(out_t[:, at:at + t.dim])
        at += t.dim
    return views


# ---- checkpoints (the C saver's safetensors files) --------------------------------------

def _named(tables):
    """[(name, Table)] from a dict name -> table / array / tensor, or a list of named
    Tables."""
    if isinstance(tables, dict):
        items = list(tables.items())
    else:
        items = [(t.name, t) for t in tables]
    out = []
    for name, t in items:
        t = t if isinstance(t, Table) else Table(t, name=name)
        if not name:
            raise InvalidError("a checkpoint needs a name for every table")
        out.append((name, t))
    return out


class Saver:
    """tf.train.Saver over tables (a dict name -> Table / array / tensor): save(step)
    writes `<directory>/<prefix>-<step>.safetensors` atomically with the optimizer's state
    of those tables, updates the index `<directory>/checkpoint` and keeps the max_to_keep
    most recent (0 or < 0: all; plus one per keep_every_n_hours). With full_every N > 0 a
    save is a delta (the rows written since the previous save, with their state and ids)
    and every (N + 1)-th a full save; `restore` of a delta reads its chain, and the saver
    never deletes a file a kept chain needs. numpy, torch and safetensors read the files;
    `read_checkpoint` needs numpy alone."""

    def __init__(self, directory, tables, optimizer=None, prefix="ckpt", max_to_keep=5,
                 keep_every_n_hours=0.0, full_every=0):
        self.tables = _named(tables)
        self.optimizer = optimizer
        self._s = _C.Saver(str(directory), prefix, [(n, t._t) for n, t in self.tables],
                           optimizer._o if optimizer is not None else None, int(max_to_keep),
                           float(keep_every_n_hours), int(full_every))

    def save(self, global_step):
        """Writes a checkpoint; returns its path."""
        return self._s.save(int(global_step))


def restore(path, tables, optimizer=None):
    """Restores tables (as Saver names them; each must be in the file) and, with an
    optimizer of the saved kind, its state, from the checkpoint at path. The whole file is
    verified first: on any error nothing is changed. Returns the global step."""
    named = _named(tables)
    return _C.restore(str(path), [(n, t._t) for n, t in named],
                      optimizer._o if optimizer is not None else None)


def latest_checkpoint(directory):
    """The path of the most recent checkpoint of directory's index, or None."""
    return _C.latest_checkpoint(str(directory))


def read_checkpoint(path, bf16="float32"):
    """Reads a checkpoint with numpy alone (python/embtables_ckpt.py): .tensors (name ->
    array, optimizer state as `<table>/<kind>.<slot>`), .tables, .optimizer,
    .global_step."""
    import embtables_ckpt
    return embtables_ckpt.read(str(path), bf16=bf16)
