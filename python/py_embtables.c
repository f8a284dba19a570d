/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * py_embtables.c — the module embtables._embtables: errors as Python exceptions, buffer
 * access, and the Table, Strategy and Optimizer types. The pure-Python package
 * (embtables/__init__.py) gives them PyTorch's conventions; this file only checks what
 * the library cannot (buffer lengths, element types) and calls it.
 */
#include <stdarg.h>
#include <string.h>

#include "py_embtables.h"

/* ---- errors --------------------------------------------------------------------------- */

static PyObject *Error, *RangeError, *InvalidError, *NoMemoryError, *FileError, *NotFoundError;

static PyObject *error_class(int rc)
{
    switch (rc) {
    case EMB_ERANGE: return RangeError;
    case EMB_ENOMEM: return NoMemoryError;
    case EMB_EIO:
    case EMB_ECORRUPT: return FileError;
    case EMB_ENOTFOUND: return NotFoundError;
    case EMB_ENODEV:
    case EMB_EDEVICE:
    case EMB_ENOTSUP:
    case EMB_EEXIST:
    case EMB_EBUSY: return Error;
    default: return InvalidError;
    }
}

PyObject *py_emb_raise(int rc)
{
    const char *msg = emb_last_error();
    PyObject *cls = error_class(rc);
    PyObject *exc = PyObject_CallFunction(cls, "s", msg && *msg ? msg : emb_strerror(rc));
    if (!exc)
        return NULL;
    PyObject *code = PyLong_FromLong(rc);
    if (code) {
        PyObject_SetAttrString(exc, "code", code);
        Py_DECREF(code);
    }
    PyErr_SetObject(cls, exc);
    Py_DECREF(exc);
    return NULL;
}

PyObject *py_emb_invalid(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg) {
        PyErr_SetObject(InvalidError, msg);
        Py_DECREF(msg);
    }
    return NULL;
}

static int add_error(PyObject *m, PyObject **slot, const char *name, PyObject *bases,
                     const char *doc)
{
    *slot = PyErr_NewExceptionWithDoc(name, doc, bases, NULL);
    Py_XDECREF(bases);
    if (!*slot)
        return -1;
    Py_INCREF(*slot);
    return PyModule_AddObject(m, strrchr(name, '.') + 1, *slot);
}

static int init_errors(PyObject *m)
{
    if (add_error(m, &Error, "embtables.Error", NULL,
                  "An error of the library (its message names the culprit; the failed call "
                  "wrote nothing).") < 0)
        return -1;
    return add_error(m, &RangeError, "embtables.RangeError",
                     Py_BuildValue("(OO)", Error, PyExc_IndexError),
                     "An id, offset or index out of its range (EMB_ERANGE).") |
           add_error(m, &InvalidError, "embtables.InvalidError",
                     Py_BuildValue("(OO)", Error, PyExc_ValueError),
                     "An invalid argument, shape or layout (EMB_EINVAL, EMB_ESHAPE, ...).") |
           add_error(m, &NoMemoryError, "embtables.NoMemoryError",
                     Py_BuildValue("(OO)", Error, PyExc_MemoryError),
                     "An allocation failed (EMB_ENOMEM).") |
           add_error(m, &FileError, "embtables.FileError",
                     Py_BuildValue("(OO)", Error, PyExc_OSError),
                     "A file could not be read or written, or is corrupt (EMB_EIO, "
                     "EMB_ECORRUPT).") |
           add_error(m, &NotFoundError, "embtables.NotFoundError",
                     Py_BuildValue("(OO)", Error, PyExc_KeyError),
                     "A named table or state is not there (EMB_ENOTFOUND).");
}

/* ---- buffers -------------------------------------------------------------------------- */

static int kind_of(const Py_buffer *b)
{
    const char *f = b->format ? b->format : "B";
    while (*f == '@' || *f == '=' || *f == '<' || *f == '!')
        f++;
    if (f[0] && f[1])
        return 0;
    switch (f[0]) {
    case 'q': case 'l': return b->itemsize == 8 ? K_I64 : b->itemsize == 4 ? K_I32 : 0;
    case 'i': return b->itemsize == 4 ? K_I32 : 0;
    case 'f': return b->itemsize == 4 ? K_F32 : 0;
    case 'e': return K_F16;
    case 'H': case 'h': return K_U16;
    case 'B': return b->itemsize == 1 ? K_U8 : 0;
    default: return 0;
    }
}

static int check_kind(Py_buffer *b, unsigned kinds, int *kind, const char *what)
{
    int k = kind_of(b);
    if (!(k & kinds)) {
        py_emb_invalid("%s: element type '%s' (%zd bytes) is not accepted here", what,
                       b->format ? b->format : "B", b->itemsize);
        PyBuffer_Release(b);
        return -1;
    }
    if (kind)
        *kind = k;
    return 0;
}

int py_buf_get(PyObject *o, Py_buffer *b, unsigned kinds, int *kind, int ndim,
               const char *what)
{
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (check_kind(b, kinds, kind, what) < 0)
        return -1;
    if (ndim ? b->ndim != ndim : (b->ndim != 1 && b->ndim != 2)) {
        py_emb_invalid("%s: %d dimensions, expected %s", what, b->ndim,
                       ndim == 1 ? "1" : ndim == 2 ? "2" : "1 or 2");
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

int py_buf_get_rows(PyObject *o, Py_buffer *b, unsigned kinds, int *kind, int64_t *stride,
                    const char *what)
{
    return py_buf_get_rows_ro(o, b, kinds, kind, stride, what, 1);
}

int py_buf_get_rows_ro(PyObject *o, Py_buffer *b, unsigned kinds, int *kind, int64_t *stride,
                       const char *what, int writable)
{
    if (PyObject_GetBuffer(o, b, PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (check_kind(b, kinds, kind, what) < 0)
        return -1;
    const Py_ssize_t es = b->itemsize;
    if (b->ndim != 2 || (b->shape[1] > 1 && b->strides[1] != es) ||
        (b->shape[0] > 1 && (b->strides[0] < 0 || b->strides[0] % es))) {
        py_emb_invalid("%s: needs 2 dimensions with contiguous rows and a non-negative "
                       "row stride", what);
        PyBuffer_Release(b);
        return -1;
    }
    *stride = b->shape[0] > 1 ? b->strides[0] / es : b->shape[1];
    return 0;
}

void py_buf_release(Py_buffer *b)
{
    if (b->obj)
        PyBuffer_Release(b);
}

/* ---- Table ---------------------------------------------------------------------------- */

TableObject *py_as_table(PyObject *o)
{
    if (!PyObject_TypeCheck(o, &Table_Type)) {
        PyErr_Format(PyExc_TypeError, "expected an embtables table, got %s",
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    return (TableObject *)o;
}

static TableObject *table_new(void)
{
    TableObject *self = PyObject_New(TableObject, &Table_Type);
    if (self) {
        self->t = NULL;
        self->owner = NULL;
        memset(&self->view, 0, sizeof self->view);
    }
    return self;
}

static void table_dealloc(TableObject *self)
{
    if (!self->owner)
        emb_table_destroy(&self->t);
    py_buf_release(&self->view);
    Py_XDECREF(self->owner);
    PyObject_Free(self);
}

static const EmbDtype dtype_of_kind[] = {[K_F32] = EMB_F32, [K_F16] = EMB_F16,
                                         [K_U16] = EMB_BF16};

/* The feature size of quantized rows of `cols` bytes (torch's prepacked [n, row bytes]),
 * or 0 when no D gives that row size. */
static int32_t quantized_dim(EmbDtype dt, Py_ssize_t cols)
{
    const Py_ssize_t d = dt == EMB_INT8 ? cols - 8 : (cols - 4) * 2;
    if (d < 1 || d > INT32_MAX || emb_dtype_row_bytes(dt, (int32_t)d) != (size_t)cols)
        return 0;
    return (int32_t)d;
}

/* The dtype and feature size of the wrapped buffer: its element kind, or for quantized
 * rows (qdtype EMB_INT8 / EMB_INT4) bytes whose row size gives D. -1 with an exception. */
static int wrap_shape(const Py_buffer *v, int kind, int qdtype, EmbDtype *dt, int32_t *d)
{
    if (qdtype < 0) {
        *dt = dtype_of_kind[kind];
        *d = (int32_t)v->shape[1];
        return v->shape[1] > INT32_MAX ? (py_emb_invalid("table: feature size too large"), -1)
                                       : 0;
    }
    *dt = (EmbDtype)qdtype;
    *d = quantized_dim(*dt, v->shape[1]);
    if (!*d) {
        py_emb_invalid("table: rows of %zd bytes are no %s rows (%s)", v->shape[1],
                       emb_dtype_name(*dt), *dt == EMB_INT8 ? "D + 8 bytes, D >= 1"
                                                            : "D / 2 + 4 bytes, D even >= 2");
        return -1;
    }
    return 0;
}

/* wrap(array, name=None, qdtype=-1): a table over a 2-D array (rows = columns), without
 * copying; qdtype EMB_INT8 / EMB_INT4: a uint8 array of prepacked rows. */
static PyObject *table_wrap(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *o;
    const char *name = NULL;
    int qdtype = -1;
    if (!PyArg_ParseTuple(args, "O|zi", &o, &name, &qdtype))
        return NULL;
    if (qdtype >= 0 && qdtype != EMB_INT8 && qdtype != EMB_INT4)
        return py_emb_invalid("table: dtype %d is not a quantized one", qdtype);
    TableObject *self = table_new();
    if (!self)
        return NULL;
    int kind;
    int64_t stride;
    const unsigned kinds = qdtype < 0 ? K_F32 | K_F16 | K_U16 : K_U8;
    EmbDtype dt;
    int32_t d;
    if (py_buf_get_rows(o, &self->view, kinds, &kind, &stride, "table") < 0 ||
        wrap_shape(&self->view, kind, qdtype, &dt, &d) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    const EmbTableOptions opts = {.name = name};
    const int rc = emb_table_wrap(&self->t, self->view.buf, self->view.shape[0], d, stride, dt,
                                  &opts);
    if (rc) {
        Py_DECREF(self);
        return py_emb_raise(rc);
    }
    return (PyObject *)self;
}

/* create(ncolumns, featuresize, dtype, name=None): an owned, zeroed table. */
static PyObject *table_create(PyObject *mod, PyObject *args)
{
    (void)mod;
    long long n;
    int d, dtype;
    const char *name = NULL;
    if (!PyArg_ParseTuple(args, "Lii|z", &n, &d, &dtype, &name))
        return NULL;
    TableObject *self = table_new();
    if (!self)
        return NULL;
    const EmbTableOptions opts = {.name = name};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = emb_table_create(&self->t, n, d, (EmbDtype)dtype, &opts);
    Py_END_ALLOW_THREADS
    if (rc) {
        Py_DECREF(self);
        return py_emb_raise(rc);
    }
    return (PyObject *)self;
}

/* table_tiered(path, n, d, dtype, cache_bytes, state_width, name=None): a tiered table
   (tiered.h), its rows in the file path (created), a DRAM cache of cache_bytes. */
static PyObject *table_tiered(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *path, *name = NULL;
    long long n, cache;
    int d, dtype, sw;
    if (!PyArg_ParseTuple(args, "sLiiLi|z", &path, &n, &d, &dtype, &cache, &sw, &name))
        return NULL;
    TableObject *self = table_new();
    if (!self)
        return NULL;
    const EmbTieredOptions o = {.table = {.name = name}, .cache_bytes = cache,
                                .state_width = sw};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = emb_table_tiered_create(&self->t, path, n, d, (EmbDtype)dtype, &o);
    Py_END_ALLOW_THREADS
    if (rc) {
        Py_DECREF(self);
        return py_emb_raise(rc);
    }
    return (PyObject *)self;
}

/* table_tiered_flush(table): emb_table_tiered_flush. */
static PyObject *table_tiered_flush(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *o;
    if (!PyArg_ParseTuple(args, "O!", &Table_Type, &o))
        return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = emb_table_tiered_flush(((TableObject *)o)->t);
    Py_END_ALLOW_THREADS
    if (rc)
        return py_emb_raise(rc);
    Py_RETURN_NONE;
}

/* table_tiered_stats(table): (hits, misses, rows_read, rows_written, cache_rows, engine). */
static PyObject *table_tiered_stats(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *o;
    if (!PyArg_ParseTuple(args, "O!", &Table_Type, &o))
        return NULL;
    EmbTieredStats st;
    const int rc = emb_table_tiered_stats(((TableObject *)o)->t, &st);
    if (rc)
        return py_emb_raise(rc);
    return Py_BuildValue("LLLLLs", (long long)st.hits, (long long)st.misses,
                         (long long)st.rows_read, (long long)st.rows_written,
                         (long long)st.cache_rows, st.engine);
}

/* state_width(optimizer kind, dim): the state room a tiered table keeps for it. */
static PyObject *mod_state_width(PyObject *mod, PyObject *args)
{
    (void)mod;
    int kind, d;
    if (!PyArg_ParseTuple(args, "ii", &kind, &d))
        return NULL;
    return PyLong_FromLong((long)emb_optimizer_state_width((EmbOptimizerKind)kind, d));
}

static const char *buffer_format(EmbDtype dt)
{
    return dt == EMB_F32 ? "f" : dt == EMB_F16 ? "e" : dt == EMB_BF16 ? "H" : "B";
}

/* quantize(dst, src): emb_table_quantize (every row of src converted into dst). */
static PyObject *table_quantize(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "OO", &a, &b))
        return NULL;
    TableObject *dst = py_as_table(a), *src = dst ? py_as_table(b) : NULL;
    if (!src)
        return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = emb_table_quantize(dst->t, src->t);
    Py_END_ALLOW_THREADS
    return rc ? py_emb_raise(rc) : Py_NewRef(Py_None);
}

/* The buffer of a simple table: 2-D, rows = columns, strided; bf16 as uint16, quantized
 * rows as bytes (ncolumns x emb_dtype_row_bytes()). */
static int table_getbuffer(TableObject *self, Py_buffer *view, int flags)
{
    int64_t stride;
    void *data = emb_table_data(self->t, &stride);
    if (!data) {
        PyErr_SetString(PyExc_BufferError, "this table has no contiguous storage");
        return -1;
    }
    const EmbDtype dt = emb_table_dtype(self->t);
    /* quantized rows: [ncolumns, row bytes] of uint8 (torch's prepacked layout) */
    const int quant = dt == EMB_INT8 || dt == EMB_INT4;
    const Py_ssize_t es = quant ? 1 : (Py_ssize_t)emb_dtype_size(dt);
    const Py_ssize_t width = quant ? (Py_ssize_t)emb_dtype_row_bytes(dt, emb_table_featuresize(self->t))
                                   : emb_table_featuresize(self->t);
    if (!(flags & PyBUF_STRIDES) && stride != width) {
        PyErr_SetString(PyExc_BufferError, "the table's columns are padded: ask for strides");
        return -1;
    }
    /* shape and strides live in the Py_buffer's internal slot: two pairs of Py_ssize_t */
    Py_ssize_t *dims = PyMem_Malloc(4 * sizeof *dims);
    if (!dims) {
        PyErr_NoMemory();
        return -1;
    }
    dims[0] = (Py_ssize_t)emb_table_ncolumns(self->t);
    dims[1] = width;
    dims[2] = (Py_ssize_t)stride * es;
    dims[3] = es;
    view->buf = data;
    view->obj = (PyObject *)self;
    Py_INCREF(self);
    view->len = dims[0] * dims[1] * es;
    view->readonly = 0;
    view->itemsize = es;
    view->format = (flags & PyBUF_FORMAT) ? (char *)buffer_format(dt) : NULL;
    view->ndim = 2;
    view->shape = dims;
    view->strides = dims + 2;
    view->suboffsets = NULL;
    view->internal = dims;
    return 0;
}

static void table_releasebuffer(TableObject *self, Py_buffer *view)
{
    (void)self;
    PyMem_Free(view->internal);
}

static PyBufferProcs table_as_buffer = {
    .bf_getbuffer = (getbufferproc)table_getbuffer,
    .bf_releasebuffer = (releasebufferproc)table_releasebuffer,
};

/* info() -> (ncolumns, featuresize, dtype name, name) */
static PyObject *table_info(TableObject *self, PyObject *args)
{
    (void)args;
    return Py_BuildValue("(Liss)", (long long)emb_table_ncolumns(self->t),
                         (int)emb_table_featuresize(self->t),
                         emb_dtype_name(emb_table_dtype(self->t)), emb_table_name(self->t));
}

/* initialize(kind, a, b, seed): emb_table_initialize. */
static PyObject *table_initialize(TableObject *self, PyObject *args)
{
    int kind;
    float a, b;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "iffK", &kind, &a, &b, &seed))
        return NULL;
    const EmbInitializer init = {.kind = (EmbInitKind)kind, .a = a, .b = b, .seed = seed};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = emb_table_initialize(self->t, &init);
    Py_END_ALLOW_THREADS
    return rc ? py_emb_raise(rc) : Py_NewRef(Py_None);
}

/* read(out): copies the table as f32 into the 2-D array out (emb_table_read). */
static PyObject *table_read(TableObject *self, PyObject *args)
{
    PyObject *o;
    if (!PyArg_ParseTuple(args, "O", &o))
        return NULL;
    Py_buffer b;
    int64_t stride;
    if (py_buf_get_rows(o, &b, K_F32, NULL, &stride, "out") < 0)
        return NULL;
    int rc = EMB_ESHAPE;
    if (b.shape[0] == emb_table_ncolumns(self->t) && b.shape[1] == emb_table_featuresize(self->t))
        rc = emb_table_read(self->t, b.buf, stride);
    PyBuffer_Release(&b);
    if (rc == EMB_ESHAPE)
        return py_emb_invalid("read: out has another shape than the table");
    return rc ? py_emb_raise(rc) : Py_NewRef(Py_None);
}

static PyMethodDef table_methods[] = {
    {"info", (PyCFunction)table_info, METH_NOARGS, "(ncolumns, featuresize, dtype, name)"},
    {"initialize", (PyCFunction)table_initialize, METH_VARARGS, "initialize(kind, a, b, seed)"},
    {"read", (PyCFunction)table_read, METH_VARARGS, "read(out): copy out as f32"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject Table_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "embtables._embtables.Table",
    .tp_basicsize = sizeof(TableObject),
    .tp_dealloc = (destructor)table_dealloc,
    .tp_as_buffer = &table_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An embedding table (made by table_wrap or table_create).",
    .tp_methods = table_methods,
};

/* ---- Strategy ------------------------------------------------------------------------- */

static PyObject *strategy_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"name", "threads", "pinning", "chunks", "num_splits", NULL};
    const char *name;
    EmbStrategyOptions o = {0};
    int pin = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|iiii", kwlist, &name, &o.nthreads, &pin,
                                     &o.chunks, &o.num_splits))
        return NULL;
    o.pinning = (EmbPinning)pin;
    StrategyObject *self = (StrategyObject *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    int rc;
    if (strcmp(name, "sequential") == 0)
        rc = emb_strategy_sequential(&self->s);
    else if (strcmp(name, "parallel") == 0)
        rc = emb_strategy_parallel(&self->s, &o);
    else if (strcmp(name, "prealloc-concat") == 0 || strcmp(name, "prealloc_concat") == 0)
        rc = emb_strategy_prealloc_concat(&self->s, &o);
    else if (strcmp(name, "auto") == 0)
        rc = emb_strategy_auto(&self->s, &o);
    else {
        Py_DECREF(self);
        return py_emb_invalid("strategy '%s' is unknown (sequential, parallel, "
                              "prealloc-concat, auto)", name);
    }
    if (rc) {
        Py_DECREF(self);
        return py_emb_raise(rc);
    }
    return (PyObject *)self;
}

static void strategy_dealloc(StrategyObject *self)
{
    emb_strategy_destroy(&self->s);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* info() -> (name, threads) */
static PyObject *strategy_info(StrategyObject *self, PyObject *args)
{
    (void)args;
    return Py_BuildValue("(si)", emb_strategy_name(self->s), emb_strategy_nthreads(self->s));
}

static PyMethodDef strategy_methods[] = {
    {"info", (PyCFunction)strategy_info, METH_NOARGS, "(name, threads)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject Strategy_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "embtables.Strategy",
    .tp_basicsize = sizeof(StrategyObject),
    .tp_dealloc = (destructor)strategy_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Strategy(name, threads=0, pinning=0, chunks=0, num_splits=0): how maplookup "
              "and the update spread tables over threads (sequential, parallel, "
              "prealloc-concat, auto; threads 0 = physical cores).",
    .tp_methods = strategy_methods,
    .tp_new = strategy_new,
};

/* ---- Optimizer ------------------------------------------------------------------------ */

static PyObject *optimizer_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"eps", "initial_accumulator", "beta1", "beta2",
                             "bias_correction", "lr_power", "l1", "l2", "state_dtype",
                             "stochastic_rounding", "max_gradient", "max_row_norm",
                             "max_global_norm", "counter_halflife", "adjustment_iter",
                             "adjustment_ub", "learning_rate_mode", "tail_id_threshold", NULL};
    int kind;
    float lr;
    if (!PyArg_ParseTuple(args, "if", &kind, &lr))
        return NULL;
    EmbOptimizerConfig c = emb_optimizer_defaults((EmbOptimizerKind)kind, lr);
    PyObject *empty = PyTuple_New(0);
    if (!empty)
        return NULL;
    int state_dtype = EMB_F32;
    const int ok = PyArg_ParseTupleAndKeywords(
        empty, kw, "|$ffffpfffipfffiifif", kwlist, &c.eps, &c.initial_accumulator, &c.beta1,
        &c.beta2, &c.bias_correction, &c.lr_power, &c.l1, &c.l2, &state_dtype,
        &c.stochastic_rounding, &c.max_gradient, &c.max_row_norm, &c.max_global_norm,
        &c.counter_halflife, &c.adjustment_iter, &c.adjustment_ub, &c.learning_rate_mode,
        &c.tail_id_threshold);
    c.state_dtype = (EmbDtype)state_dtype;
    Py_DECREF(empty);
    if (!ok)
        return NULL;
    OptimizerObject *self = (OptimizerObject *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    self->tables = PyList_New(0);
    self->lr = c.lr;
    const int rc = self->tables ? emb_optimizer_create(&self->opt, &c) : 0;
    if (!self->tables || rc) {
        Py_DECREF(self);
        return rc ? py_emb_raise(rc) : NULL;
    }
    return (PyObject *)self;
}

static void optimizer_dealloc(OptimizerObject *self)
{
    emb_optimizer_destroy(&self->opt); /* before the tables its state is keyed by */
    Py_XDECREF(self->tables);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

int py_optimizer_hold(OptimizerObject *self, PyObject *table)
{
    const int has = PySequence_Contains(self->tables, table);
    if (has)
        return has < 0 ? -1 : 0;
    const int rc = emb_optimizer_attach(self->opt, ((TableObject *)table)->t);
    if (rc) {
        py_emb_raise(rc);
        return -1;
    }
    return PyList_Append(self->tables, table);
}

static PyObject *optimizer_get_lr(OptimizerObject *self, void *c)
{
    (void)c;
    return PyFloat_FromDouble(self->lr);
}

static int optimizer_set_lr(OptimizerObject *self, PyObject *v, void *c)
{
    (void)c;
    const double lr = v ? PyFloat_AsDouble(v) : -1.0;
    if (lr == -1.0 && PyErr_Occurred())
        return -1;
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the optimizer is running an update");
        return -1;
    }
    const int rc = emb_optimizer_set_lr(self->opt, (float)lr);
    if (rc) {
        py_emb_raise(rc);
        return -1;
    }
    self->lr = (float)lr;
    return 0;
}

static PyGetSetDef optimizer_getset[] = {
    {"lr", (getter)optimizer_get_lr, (setter)optimizer_set_lr, "learning rate", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* state(table, slot=0) -> (Table or None, step): the optimizer's state of table. */
static PyObject *optimizer_state(OptimizerObject *self, PyObject *args)
{
    PyObject *to;
    int slot = 0;
    if (!PyArg_ParseTuple(args, "O|i", &to, &slot) || !py_as_table(to))
        return NULL;
    EmbTable *st = NULL;
    int64_t step = 0;
    const int rc = emb_optimizer_state(self->opt, ((TableObject *)to)->t, slot, &st, &step);
    if (rc)
        return py_emb_raise(rc);
    if (!st)
        return Py_BuildValue("(OL)", Py_None, (long long)step);
    TableObject *t = table_new();
    if (!t)
        return NULL;
    t->t = st;
    t->owner = Py_NewRef((PyObject *)self);
    return Py_BuildValue("(NL)", (PyObject *)t, (long long)step);
}

/* set_step(table, step): the table's update count (a restored state's). */
static PyObject *optimizer_set_step(OptimizerObject *self, PyObject *args)
{
    PyObject *to;
    long long step;
    if (!PyArg_ParseTuple(args, "OL", &to, &step) || !py_as_table(to))
        return NULL;
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the optimizer is running an update");
        return NULL;
    }
    const int rc = emb_optimizer_set_step(self->opt, ((TableObject *)to)->t, step);
    return rc ? py_emb_raise(rc) : Py_NewRef(Py_None);
}

/* apply_sparse(table, ids, rows): one update from a materialised sparse gradient. */
static PyObject *optimizer_apply_sparse(OptimizerObject *self, PyObject *args)
{
    PyObject *to, *io, *vo;
    if (!PyArg_ParseTuple(args, "OOO", &to, &io, &vo) || !py_as_table(to))
        return NULL;
    EmbTable *t = ((TableObject *)to)->t;
    Py_buffer ib, vb;
    int ik;
    int64_t stride;
    if (py_buf_get(io, &ib, K_I64 | K_I32, &ik, 1, "ids") < 0)
        return NULL;
    if (py_buf_get_rows(vo, &vb, K_F32, NULL, &stride, "rows") < 0) {
        PyBuffer_Release(&ib);
        return NULL;
    }
    PyObject *ret = NULL;
    EmbGrad *g = NULL;
    EmbIndexer *ix = NULL;
    if (vb.shape[0] != ib.shape[0] || vb.shape[1] != emb_table_featuresize(t)) {
        py_emb_invalid("apply_sparse: %zd ids and rows of shape (%zd, %zd) for a table of "
                       "feature size %d", ib.shape[0], vb.shape[0], vb.shape[1],
                       emb_table_featuresize(t));
        goto done;
    }
    if (self->busy || py_optimizer_hold(self, to) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "the optimizer is running an update");
        goto done;
    }
    const EmbSparseGrad sg = {.ids = ib.buf, .id_type = ik == K_I32 ? EMB_ID_I32 : EMB_ID_I64,
                              .n = ib.shape[0], .featuresize = emb_table_featuresize(t),
                              .values = vb.buf, .stride = stride};
    int rc = emb_grad_create(&g);
    if (!rc)
        rc = emb_indexer_create(&ix);
    if (!rc)
        rc = emb_grad_set_sparse(g, t, &sg);
    if (!rc) {
        self->busy = 1;
        Py_BEGIN_ALLOW_THREADS
        rc = emb_update(self->opt, t, g, ix, 0);
        Py_END_ALLOW_THREADS
        self->busy = 0;
    }
    ret = rc ? py_emb_raise(rc) : Py_NewRef(Py_None);
done:
    emb_grad_destroy(&g);
    emb_indexer_destroy(&ix);
    PyBuffer_Release(&ib);
    PyBuffer_Release(&vb);
    return ret;
}

static PyMethodDef optimizer_methods[] = {
    {"state", (PyCFunction)optimizer_state, METH_VARARGS,
     "state(table, slot=0) -> (state table or None, steps)"},
    {"set_step", (PyCFunction)optimizer_set_step, METH_VARARGS,
     "set_step(table, step): the number of updates applied to table (Adam's t)"},
    {"apply_sparse", (PyCFunction)optimizer_apply_sparse, METH_VARARGS,
     "apply_sparse(table, ids, rows): dedup + optimizer step from a sparse gradient"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject Optimizer_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "embtables._embtables.Optimizer",
    .tp_basicsize = sizeof(OptimizerObject),
    .tp_dealloc = (destructor)optimizer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Optimizer(kind, lr, **hyper-parameters): a fused, deduplicating optimizer.",
    .tp_getset = optimizer_getset,
    .tp_methods = optimizer_methods,
    .tp_new = optimizer_new,
};

/* ---- module --------------------------------------------------------------------------- */

static PyObject *mod_cpu_mask(PyObject *mod, PyObject *args)
{
    (void)mod;
    long long mask = -1;
    if (!PyArg_ParseTuple(args, "|L", &mask))
        return NULL;
    if (mask >= 0)
        emb_set_cpu_mask((unsigned)mask);
    return PyLong_FromUnsignedLong(emb_cpu_flags());
}

static PyObject *mod_physical_cores(PyObject *mod, PyObject *args)
{
    (void)mod;
    (void)args;
    return PyLong_FromLong(emb_num_physical_cores());
}

static PyObject *mod_version(PyObject *mod, PyObject *args)
{
    (void)mod;
    (void)args;
    return PyUnicode_FromString(emb_version());
}

static PyMethodDef module_methods[] = {
    {"version", mod_version, METH_NOARGS, "version() -> the library's version (emb_version())"},
    {"table_wrap", table_wrap, METH_VARARGS, "table_wrap(array, name=None, qdtype=-1)"},
    {"table_create", table_create, METH_VARARGS, "table_create(n, d, dtype, name=None)"},
    {"table_quantize", table_quantize, METH_VARARGS, "table_quantize(dst, src)"},
    {"table_tiered", table_tiered, METH_VARARGS,
     "table_tiered(path, n, d, dtype, cache_bytes, state_width, name=None)"},
    {"table_tiered_flush", table_tiered_flush, METH_VARARGS, "table_tiered_flush(table)"},
    {"table_tiered_stats", table_tiered_stats, METH_VARARGS, "table_tiered_stats(table)"},
    {"state_width", mod_state_width, METH_VARARGS, "state_width(optimizer kind, dim)"},
    {"cpu_flags", mod_cpu_mask, METH_VARARGS, "cpu_flags(mask=-1): set (>= 0) and get"},
    {"physical_cores", mod_physical_cores, METH_NOARGS, "physical cores"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_embtables",
    "The C side of embtables: use the package embtables.", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__embtables(void);
PyMODINIT_FUNC PyInit__embtables(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    PyTypeObject *types[] = {&Table_Type, &Strategy_Type, &Optimizer_Type};
    const char *names[] = {"Table", "Strategy", "Optimizer"};
    for (int i = 0; i < 3; i++) {
        if (PyType_Ready(types[i]) < 0)
            goto fail;
        Py_INCREF(types[i]);
        if (PyModule_AddObject(m, names[i], (PyObject *)types[i]) < 0)
            goto fail;
    }
    if (init_errors(m) < 0 || py_collection_init_types(m) < 0 || py_store_init(m) < 0)
        goto fail;
#ifdef EMB_PY_HAVE_GPU
    if (py_gpu_init(m) < 0)
        goto fail;
#endif
    if (PyModule_AddIntConstant(m, "version_number", EMB_VERSION_NUMBER) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
