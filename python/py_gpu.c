/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * py_gpu.c — GPU tables from Python (built only with the CUDA back end, libembtables_gpu):
 * device tables, the table-batched lookup into the concat layout and the fused backward +
 * optimizer, on device memory given by address (a torch CUDA tensor's data_ptr()) and on
 * the caller's stream (torch.cuda.current_stream().cuda_stream). embtables/gpu.py gives it
 * PyTorch's conventions; this file checks the descriptors' shapes and calls the library.
 */
#include <stdlib.h>
#include <string.h>

#include <embtables/gpu.h>

#include "py_embtables.h"

typedef struct GpuTableObject {
    PyObject_HEAD
    EmbGpuTable *t;
} GpuTableObject;

typedef struct GpuWorkspaceObject {
    PyObject_HEAD
    EmbGpuWorkspace *ws;
} GpuWorkspaceObject;

static PyTypeObject GpuTable_Type, GpuWorkspace_Type;

static PyObject *gpu_raise(int rc)
{
    const char *msg = emb_gpu_last_error();
    PyErr_SetString(PyExc_RuntimeError, msg && *msg ? msg : emb_strerror(rc));
    return NULL;
}

static void *as_ptr(PyObject *o)
{
    return o == Py_None ? NULL : PyLong_AsVoidPtr(o);
}

/* gpu_table_create(n, d, dtype, name, stream) */
static PyObject *gpu_table_create(PyObject *mod, PyObject *args)
{
    (void)mod;
    long long n;
    int d, dtype;
    const char *name;
    PyObject *stream;
    if (!PyArg_ParseTuple(args, "LiizO", &n, &d, &dtype, &name, &stream))
        return NULL;
    GpuTableObject *self = PyObject_New(GpuTableObject, &GpuTable_Type);
    if (!self)
        return NULL;
    self->t = NULL;
    void *s = as_ptr(stream);
    if (PyErr_Occurred()) {
        Py_DECREF(self);
        return NULL;
    }
    const int rc = emb_gpu_table_create(&self->t, n, d, (EmbDtype)dtype, name, s);
    if (rc) {
        Py_DECREF(self);
        return gpu_raise(rc);
    }
    return (PyObject *)self;
}

static void gpu_table_dealloc(GpuTableObject *self)
{
    emb_gpu_table_destroy(&self->t);
    PyObject_Free(self);
}

/* copy(host_table, to_device, stream): upload or download every column. */
static PyObject *gpu_table_copy(GpuTableObject *self, PyObject *args)
{
    PyObject *host, *stream;
    int to_device;
    if (!PyArg_ParseTuple(args, "OpO", &host, &to_device, &stream) || !py_as_table(host))
        return NULL;
    void *s = as_ptr(stream);
    if (PyErr_Occurred())
        return NULL;
    EmbTable *h = ((TableObject *)host)->t;
    const int rc = to_device ? emb_gpu_table_upload(self->t, h, s)
                             : emb_gpu_table_download(self->t, h, s);
    return rc ? gpu_raise(rc) : Py_NewRef(Py_None);
}

/* info() -> (ncolumns, featuresize, dtype, data address, column stride) */
static PyObject *gpu_table_info(GpuTableObject *self, PyObject *args)
{
    (void)args;
    int64_t stride = 0;
    void *data = emb_gpu_table_data(self->t, &stride);
    return Py_BuildValue("(LisNL)", (long long)emb_gpu_table_ncolumns(self->t),
                         (int)emb_gpu_table_featuresize(self->t),
                         emb_dtype_name(emb_gpu_table_dtype(self->t)),
                         PyLong_FromVoidPtr(data), (long long)stride);
}

static PyMethodDef gpu_table_methods[] = {
    {"copy", (PyCFunction)gpu_table_copy, METH_VARARGS, "copy(host, to_device, stream)"},
    {"info", (PyCFunction)gpu_table_info, METH_NOARGS, "(n, d, dtype, data, stride)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject GpuTable_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "embtables._embtables.GpuTable",
    .tp_basicsize = sizeof(GpuTableObject),
    .tp_dealloc = (destructor)gpu_table_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A device table (gpu_table_create).",
    .tp_methods = gpu_table_methods,
};

static PyObject *gpu_workspace_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)args;
    (void)kw;
    GpuWorkspaceObject *self = (GpuWorkspaceObject *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    const int rc = emb_gpu_workspace_create(&self->ws);
    if (rc) {
        Py_DECREF(self);
        return gpu_raise(rc);
    }
    return (PyObject *)self;
}

static void gpu_workspace_dealloc(GpuWorkspaceObject *self)
{
    emb_gpu_workspace_destroy(&self->ws);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject GpuWorkspace_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "embtables._embtables.GpuWorkspace",
    .tp_basicsize = sizeof(GpuWorkspaceObject),
    .tp_dealloc = (destructor)gpu_workspace_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Device scratch of the GPU calls.",
    .tp_new = gpu_workspace_new,
};

/*
 * A batch on the device from (ids address, id_is_i32, nnz, nbags, offsets address or
 * None, bag_size, weights address or None).
 */
static int parse_batch(PyObject *o, EmbBatch *b)
{
    PyObject *ids, *offs, *wts;
    int i32;
    long long nnz, nbags, bag_size;
    if (!PyArg_ParseTuple(o, "OpLLOLO;batch: (ids, i32, nnz, nbags, offsets, bag_size, "
                             "weights)", &ids, &i32, &nnz, &nbags, &offs, &bag_size, &wts))
        return -1;
    *b = (EmbBatch){.ids = as_ptr(ids), .id_type = i32 ? EMB_ID_I32 : EMB_ID_I64,
                    .nnz = nnz, .nbags = nbags, .bag_size = bag_size,
                    .offsets = as_ptr(offs), .weights = as_ptr(wts)};
    return PyErr_Occurred() ? -1 : 0;
}

/* gpu_maplookup(tables, batches, poolings, out address, out stride, prepend, ws, stream) */
static PyObject *gpu_maplookup(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *tl, *bl, *pl, *out, *stream;
    long long stride, prepend;
    GpuWorkspaceObject *ws;
    if (!PyArg_ParseTuple(args, "OOOOLLO!O", &tl, &bl, &pl, &out, &stride, &prepend,
                          &GpuWorkspace_Type, &ws, &stream))
        return NULL;
    PyObject *tf = PySequence_Fast(tl, "tables"), *bf = PySequence_Fast(bl, "batches"),
             *pf = PySequence_Fast(pl, "poolings");
    const Py_ssize_t n = tf ? PySequence_Fast_GET_SIZE(tf) : 0;
    EmbGpuTable **t = calloc((size_t)n + 1, sizeof *t);
    EmbBatch *b = calloc((size_t)n + 1, sizeof *b);
    EmbPooling *p = calloc((size_t)n + 1, sizeof *p);
    PyObject *ret = NULL;
    if (!tf || !bf || !pf || !t || !b || !p) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    if (PySequence_Fast_GET_SIZE(bf) != n || PySequence_Fast_GET_SIZE(pf) != n) {
        py_emb_invalid("one batch and pooling per table");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *ti = PySequence_Fast_GET_ITEM(tf, i);
        if (!PyObject_TypeCheck(ti, &GpuTable_Type)) {
            PyErr_SetString(PyExc_TypeError, "tables: GpuTable objects");
            goto done;
        }
        t[i] = ((GpuTableObject *)ti)->t;
        if (parse_batch(PySequence_Fast_GET_ITEM(bf, i), &b[i]) < 0 ||
            py_parse_pooling(PySequence_Fast_GET_ITEM(pf, i), &p[i]) < 0)
            goto done;
    }
    const EmbOutputs o = {.concat = as_ptr(out), .concat_stride = stride,
                          .prependrows = prepend};
    void *s = as_ptr(stream);
    if (PyErr_Occurred())
        goto done;
    const int rc = emb_gpu_maplookup(t, n, b, p, &o, 0, ws->ws, s);
    ret = rc ? gpu_raise(rc) : Py_NewRef(Py_None);
done:
    free(t);
    free(b);
    free(p);
    Py_XDECREF(tf);
    Py_XDECREF(bf);
    Py_XDECREF(pf);
    return ret;
}

/*
 * gpu_backward_update(table, batch, pooling, dy address, dy stride, (kind, lr, eps, beta1,
 * beta2, initial_accumulator), ws, stream)
 */
static PyObject *gpu_backward_update(PyObject *mod, PyObject *args)
{
    (void)mod;
    GpuTableObject *t;
    GpuWorkspaceObject *ws;
    PyObject *bo, *po, *dy, *stream;
    long long stride;
    int kind;
    float lr, eps, b1, b2, h0;
    if (!PyArg_ParseTuple(args, "O!OOOL(ifffff)O!O", &GpuTable_Type, &t, &bo, &po, &dy,
                          &stride, &kind, &lr, &eps, &b1, &b2, &h0, &GpuWorkspace_Type, &ws,
                          &stream))
        return NULL;
    EmbBatch b;
    EmbPooling p;
    if (parse_batch(bo, &b) < 0 || py_parse_pooling(po, &p) < 0)
        return NULL;
    EmbOptimizerConfig c = emb_optimizer_defaults((EmbOptimizerKind)kind, lr);
    c.eps = eps, c.beta1 = b1, c.beta2 = b2, c.initial_accumulator = h0;
    const float *d = as_ptr(dy);
    void *s = as_ptr(stream);
    if (PyErr_Occurred())
        return NULL;
    const int rc = emb_gpu_backward_update(t->t, &b, &p, d, stride, &c, 0, ws->ws, s);
    return rc ? gpu_raise(rc) : Py_NewRef(Py_None);
}

static PyObject *gpu_device_count(PyObject *mod, PyObject *args)
{
    (void)mod;
    (void)args;
    int n = 0;
    return emb_gpu_device_count(&n) ? PyLong_FromLong(0) : PyLong_FromLong(n);
}

static PyMethodDef gpu_methods[] = {
    {"gpu_table_create", gpu_table_create, METH_VARARGS,
     "gpu_table_create(n, d, dtype, name, stream)"},
    {"gpu_maplookup", gpu_maplookup, METH_VARARGS,
     "gpu_maplookup(tables, batches, poolings, out, stride, prepend, ws, stream)"},
    {"gpu_backward_update", gpu_backward_update, METH_VARARGS,
     "gpu_backward_update(table, batch, pooling, dy, stride, optimizer, ws, stream)"},
    {"gpu_device_count", gpu_device_count, METH_NOARGS, "CUDA devices (0: none)"},
    {NULL, NULL, 0, NULL},
};

int py_gpu_init(PyObject *m)
{
    if (PyType_Ready(&GpuTable_Type) < 0 || PyType_Ready(&GpuWorkspace_Type) < 0)
        return -1;
    Py_INCREF(&GpuWorkspace_Type);
    if (PyModule_AddObject(m, "GpuWorkspace", (PyObject *)&GpuWorkspace_Type) < 0)
        return -1;
    return PyModule_AddFunctions(m, gpu_methods);
}
