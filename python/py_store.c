/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * py_store.c — checkpoints from Python, through the C saver (store.h): the same
 * safetensors files, tables named by a var_list, the optimizer's state saved and restored
 * with them. embtables/__init__.py gives them their Python form (Saver, restore,
 * latest_checkpoint); python/embtables_ckpt.py reads the files with numpy alone.
 */
#include <stdlib.h>
#include <string.h>

#include "py_embtables.h"

/* A var_list: names (owned copies) and tables, kept alive by `refs`. */
typedef struct VarList {
    EmbCheckpointVar *vars;
    char **names;
    int64_t n;
    PyObject *refs; /* tuple of the TableObjects */
} VarList;

static void varlist_free(VarList *v)
{
    for (int64_t i = 0; v->names && i < v->n; i++)
        free(v->names[i]);
    free(v->names);
    free(v->vars);
    Py_CLEAR(v->refs);
    memset(v, 0, sizeof *v);
}

/* From a sequence of (name, Table) pairs. 0 or -1. */
static int varlist_parse(VarList *v, PyObject *items)
{
    memset(v, 0, sizeof *v);
    PyObject *f = PySequence_Fast(items, "tables: a sequence of (name, table) pairs");
    if (!f)
        return -1;
    v->n = PySequence_Fast_GET_SIZE(f);
    v->vars = calloc((size_t)v->n + 1, sizeof *v->vars);
    v->names = calloc((size_t)v->n + 1, sizeof *v->names);
    v->refs = PyTuple_New(v->n);
    if (!v->vars || !v->names || !v->refs) {
        Py_DECREF(f);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return -1;
    }
    for (int64_t i = 0; i < v->n; i++) {
        const char *name;
        PyObject *to;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(f, i), "sO;(name, table)", &name, &to) ||
            !py_as_table(to) || !(v->names[i] = strdup(name))) {
            if (!PyErr_Occurred())
                PyErr_NoMemory();
            Py_DECREF(f);
            return -1;
        }
        PyTuple_SET_ITEM(v->refs, i, Py_NewRef(to));
        v->vars[i] = (EmbCheckpointVar){.name = v->names[i], .table = ((TableObject *)to)->t};
    }
    Py_DECREF(f);
    return 0;
}

static EmbOptimizer *optimizer_of(PyObject *o, PyObject **hold)
{
    *hold = NULL;
    if (o == Py_None)
        return NULL;
    if (!PyObject_TypeCheck(o, &Optimizer_Type)) {
        PyErr_SetString(PyExc_TypeError, "optimizer: an embtables Optimizer or None");
        return NULL;
    }
    *hold = Py_NewRef(o);
    return ((OptimizerObject *)o)->opt;
}

typedef struct SaverObject {
    PyObject_HEAD
    EmbSaver *s;
    VarList vars;
    PyObject *opt;
} SaverObject;

static void saver_dealloc(SaverObject *self)
{
    emb_saver_destroy(&self->s);
    varlist_free(&self->vars);
    Py_XDECREF(self->opt);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Saver(directory, prefix, tables, optimizer=None, max_to_keep=5, keep_every_n_hours=0,
         full_every=0) */
static PyObject *saver_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"directory", "prefix", "tables", "optimizer", "max_to_keep",
                             "keep_every_n_hours", "full_every", NULL};
    const char *dir, *prefix;
    PyObject *tables, *opt = Py_None;
    EmbSaverOptions o = {.max_to_keep = EMB_SAVER_DEFAULT_MAX_TO_KEEP};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ssO|Oidi", kwlist, &dir, &prefix, &tables,
                                     &opt, &o.max_to_keep, &o.keep_every_n_hours,
                                     &o.full_every))
        return NULL;
    SaverObject *self = (SaverObject *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    if (varlist_parse(&self->vars, tables) < 0)
        goto fail;
    o.optimizer = optimizer_of(opt, &self->opt);
    if (PyErr_Occurred())
        goto fail;
    o.var_list = self->vars.vars;
    o.nvars = self->vars.n;
    const int rc = emb_saver_create(&self->s, dir, prefix, &o);
    if (rc) {
        py_emb_raise(rc);
        goto fail;
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

/* save(global_step) -> the checkpoint's path */
static PyObject *saver_save(SaverObject *self, PyObject *args)
{
    long long step;
    if (!PyArg_ParseTuple(args, "L", &step))
        return NULL;
    char path[4096];
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = emb_saver_save(self->s, NULL, step, path, sizeof path);
    Py_END_ALLOW_THREADS
    return rc ? py_emb_raise(rc) : PyUnicode_DecodeFSDefault(path);
}

static PyMethodDef saver_methods[] = {
    {"save", (PyCFunction)saver_save, METH_VARARGS, "save(global_step) -> path"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject Saver_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "embtables._embtables.Saver",
    .tp_basicsize = sizeof(SaverObject),
    .tp_dealloc = (destructor)saver_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Saver(directory, prefix, [(name, table)], optimizer=None, max_to_keep=5, "
              "keep_every_n_hours=0, full_every=0)",
    .tp_methods = saver_methods,
    .tp_new = saver_new,
};

/* restore(path, [(name, table)], optimizer=None) -> global step */
static PyObject *mod_restore(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *path;
    PyObject *tables, *opt = Py_None, *hold = NULL;
    if (!PyArg_ParseTuple(args, "sO|O", &path, &tables, &opt))
        return NULL;
    VarList v;
    if (varlist_parse(&v, tables) < 0) {
        varlist_free(&v);
        return NULL;
    }
    EmbRestoreOptions o = {.var_list = v.vars, .nvars = v.n};
    o.optimizer = optimizer_of(opt, &hold);
    PyObject *ret = NULL;
    if (!PyErr_Occurred()) {
        int64_t step = 0;
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = emb_checkpoint_restore_ex(NULL, path, &o, &step);
        Py_END_ALLOW_THREADS
        ret = rc ? py_emb_raise(rc) : PyLong_FromLongLong(step);
    }
    Py_XDECREF(hold);
    varlist_free(&v);
    return ret;
}

/* latest_checkpoint(directory) -> path or None */
static PyObject *mod_latest(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *dir;
    if (!PyArg_ParseTuple(args, "s", &dir))
        return NULL;
    char path[4096];
    const int rc = emb_checkpoint_latest(dir, path, sizeof path);
    if (rc == EMB_ENOTFOUND)
        return Py_NewRef(Py_None);
    return rc ? py_emb_raise(rc) : PyUnicode_DecodeFSDefault(path);
}

/* changed_since(table, since, ids, rows) -> (n, now): emb_table_changed_since into the
   int64 array ids and the f32 rows (both None: only counts) */
static PyObject *mod_changed_since(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *to, *io, *ro;
    long long since;
    if (!PyArg_ParseTuple(args, "OLOO", &to, &since, &io, &ro))
        return NULL;
    TableObject *t = py_as_table(to);
    if (!t)
        return NULL;
    Py_buffer ib = {0}, rb = {0};
    int64_t stride = 0, cap = 0, n = 0, now = 0;
    if (io != Py_None) {
        if (py_buf_get(io, &ib, K_I64, NULL, 1, "ids") < 0)
            return NULL;
        if (py_buf_get_rows(ro, &rb, K_F32, NULL, &stride, "rows") < 0) {
            PyBuffer_Release(&ib);
            return NULL;
        }
        cap = ib.shape[0] < rb.shape[0] ? ib.shape[0] : rb.shape[0];
    }
    const int rc = emb_table_changed_since(t->t, since, cap ? ib.buf : NULL,
                                           cap ? rb.buf : NULL, stride, cap, &n, &now);
    if (io != Py_None) {
        PyBuffer_Release(&ib);
        PyBuffer_Release(&rb);
    }
    return rc ? py_emb_raise(rc) : Py_BuildValue("(LL)", (long long)n, (long long)now);
}

static PyMethodDef store_methods[] = {
    {"changed_since", mod_changed_since, METH_VARARGS,
     "changed_since(table, since, ids, rows) -> (n, now)"},
    {"restore", mod_restore, METH_VARARGS, "restore(path, [(name, table)], optimizer=None)"},
    {"latest_checkpoint", mod_latest, METH_VARARGS, "latest_checkpoint(directory)"},
    {NULL, NULL, 0, NULL},
};

int py_store_init(PyObject *m)
{
    if (PyType_Ready(&Saver_Type) < 0)
        return -1;
    Py_INCREF(&Saver_Type);
    if (PyModule_AddObject(m, "Saver", (PyObject *)&Saver_Type) < 0)
        return -1;
    return PyModule_AddFunctions(m, store_methods);
}
