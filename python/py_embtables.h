/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * py_embtables.h — shared declarations of the CPython extension embtables._embtables:
 * errors, buffer access (zero-copy views of numpy arrays and of torch tensors exported
 * as numpy arrays), and the object types (Table, Strategy, Optimizer, Collection, Step).
 */
#ifndef PY_EMBTABLES_H
#define PY_EMBTABLES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <embtables/embtables.h>

/* Element kinds a buffer may hold (bit flags, so callers can accept several). */
enum {
    K_I64 = 1 << 0,
    K_I32 = 1 << 1,
    K_F32 = 1 << 2,
    K_F16 = 1 << 3,
    K_U16 = 1 << 4, /* raw 16-bit storage: bfloat16 tables */
    K_U8 = 1 << 5,  /* bytes: the rows of quantized (EMB_INT8 / EMB_INT4) tables */
};

typedef struct TableObject {
    PyObject_HEAD
    EmbTable *t;
    Py_buffer view;  /* the wrapped memory (view.obj != NULL) */
    PyObject *owner; /* a table borrowed from this object (optimizer state): not destroyed */
} TableObject;

typedef struct StrategyObject {
    PyObject_HEAD
    EmbStrategy *s;
    int busy; /* a call runs with the GIL released */
} StrategyObject;

typedef struct OptimizerObject {
    PyObject_HEAD
    EmbOptimizer *opt;
    PyObject *tables; /* list of the tables it holds state for (they outlive the state) */
    float lr;         /* the learning rate set last */
    int busy;
} OptimizerObject;

extern PyTypeObject Table_Type, Strategy_Type, Optimizer_Type, Collection_Type, Step_Type;

/* Raises the exception class of @rc with emb_last_error() (or emb_strerror(rc)); NULL. */
PyObject *py_emb_raise(int rc);
/* Raises embtables.InvalidError with a formatted message; NULL. */
PyObject *py_emb_invalid(const char *fmt, ...);

/*
 * Gets a C-contiguous buffer of @o whose element kind is one of @kinds (written to
 * *kind), with @ndim dimensions (0: 1 or 2). 0, or -1 with an exception set.
 */
int py_buf_get(PyObject *o, Py_buffer *b, unsigned kinds, int *kind, int ndim,
               const char *what);
/*
 * Gets a writable 2-D buffer whose rows may be strided (elements contiguous); its row
 * stride in elements goes to *stride. 0 or -1.
 */
int py_buf_get_rows(PyObject *o, Py_buffer *b, unsigned kinds, int *kind, int64_t *stride,
                    const char *what);
/* As py_buf_get_rows(), read-only when @writable is 0. */
int py_buf_get_rows_ro(PyObject *o, Py_buffer *b, unsigned kinds, int *kind, int64_t *stride,
                       const char *what, int writable);
void py_buf_release(Py_buffer *b);

/* Takes a borrowed TableObject (type-checked); NULL with TypeError. */
TableObject *py_as_table(PyObject *o);
/* Parses (combiner, max_norm, default_id, flags) into @p; 0 or -1. */
int py_parse_pooling(PyObject *o, EmbPooling *p);

/* Records that @opt holds state for @table (keeps the table alive). 0 or -1. */
int py_optimizer_hold(OptimizerObject *opt, PyObject *table);

int py_collection_init_types(PyObject *m);
/* Checkpoints: Saver, restore, latest_checkpoint (py_store.c). */
int py_store_init(PyObject *m);
/* The GPU types and functions (py_gpu.c; only with EMB_PY_HAVE_GPU). */
int py_gpu_init(PyObject *m);

#endif
