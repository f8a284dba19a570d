/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * py_collection.c — the training hot path of embtables._embtables: a Collection (tables,
 * their poolings, a strategy, an optional fused optimizer, per-table gradients and
 * indexers) whose forward turns one step's ids into EmbBatch descriptors without copying
 * the ids (PyTorch per-table lists, FBGEMM's flat indices + T*B+1 offsets, or TorchRec's
 * jagged values + lengths) and runs emb_maplookup into the DLRM concat output; the Step it
 * returns keeps those buffers alive until the backward records the pullback and runs
 * emb_update_many. Also the single-table lookup().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "py_embtables.h"

/* The per-step memory: the buffers held, the batch descriptors and rebased offsets. */
typedef struct StepMem {
    Py_buffer *bufs;  /* 3 per table (ids, offsets, weights) */
    EmbBatch *batches;
    int64_t *pos;     /* per table: where its offsets start in offs, or -1 */
    int64_t *offs;    /* rebased / widened offsets */
    size_t noffs, cap;
} StepMem;

typedef struct CollectionObject {
    PyObject_HEAD
    int64_t n;
    PyObject *tables; /* tuple of TableObject (borrowed by c) */
    EmbCollection *c; /* the tables, poolings, gradient holders and indexers of a step */
    int64_t width;    /* Σ featuresize */
    StrategyObject *strategy; /* borrowed by c */
    OptimizerObject *opt;     /* borrowed by c (shared_optimizer); NULL: no fused update */
    StepMem spare;    /* a finished step's memory, reused by the next forward */
    int has_spare;
    int full_every;   /* EmbCollectionOptions::full_every: delta checkpoints */
} CollectionObject;

typedef struct StepObject {
    PyObject_HEAD
    CollectionObject *coll;
    StepMem mem;
    int64_t nbags;
    int form;         /* forward()'s: 0 per-table buffers, else one ids buffer (bufs[0]) */
} StepObject;

/* ---- step memory ---------------------------------------------------------------------- */

static void mem_release_bufs(StepMem *m, int64_t n)
{
    for (int64_t i = 0; i < 3 * n; i++)
        py_buf_release(&m->bufs[i]);
}

static void mem_free(StepMem *m)
{
    free(m->bufs);
    free(m->batches);
    free(m->pos);
    free(m->offs);
    memset(m, 0, sizeof *m);
}

static int mem_init(StepMem *m, int64_t n)
{
    memset(m, 0, sizeof *m);
    m->bufs = calloc((size_t)(3 * n), sizeof *m->bufs);
    m->batches = calloc((size_t)n, sizeof *m->batches);
    m->pos = calloc((size_t)n, sizeof *m->pos);
    if (!m->bufs || !m->batches || !m->pos) {
        mem_free(m);
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* Room for @k more offsets; the position of the first, or -1 with MemoryError. */
static int64_t mem_offsets(StepMem *m, size_t k)
{
    if (m->noffs + k > m->cap) {
        size_t cap = m->cap ? m->cap : 1024;
        while (cap < m->noffs + k)
            cap *= 2;
        int64_t *p = realloc(m->offs, cap * sizeof *p);
        if (!p) {
            PyErr_NoMemory();
            return -1;
        }
        m->offs = p, m->cap = cap;
    }
    m->noffs += k;
    return (int64_t)(m->noffs - k);
}

/* Points every batch with rebased offsets at them (offs may have moved while growing). */
static void mem_fix_offsets(StepMem *m, int64_t n)
{
    for (int64_t t = 0; t < n; t++)
        if (m->pos[t] >= 0)
            m->batches[t].offsets = m->offs + m->pos[t];
}

static int64_t get_index(const Py_buffer *b, int kind, int64_t k)
{
    return kind == K_I64 ? ((const int64_t *)b->buf)[k] : ((const int32_t *)b->buf)[k];
}

/* ---- filling batches ------------------------------------------------------------------ */

/* Table t's weights, from @at in @wo, which holds one weight per id of the indices it
 * goes with (@total ids; the table's are among them): a shorter or a longer one is
 * refused. */
static int weights_into(StepMem *m, int64_t t, PyObject *wo, int64_t at, int64_t total,
                        Py_buffer *wb)
{
    if (wo == Py_None)
        return 0;
    if (!wb->obj && py_buf_get(wo, wb, K_F32, NULL, 1, "per_sample_weights") < 0)
        return -1;
    if (wb->shape[0] != total) {
        py_emb_invalid("tables[%lld]: %zd per_sample_weights for %lld ids (one per id)",
                       (long long)t, wb->shape[0], (long long)total);
        return -1;
    }
    m->batches[t].weights = (const float *)wb->buf + at;
    return 0;
}

/*
 * PyTorch's form for table t: ids 1-D with offsets (nbags starts, or nbags + 1 with
 * include_last), 1-D without offsets (one id per bag), or 2-D (fixed bags).
 */
static int fill_list(StepMem *m, int64_t t, PyObject *io, PyObject *oo, PyObject *wo,
                     int include_last)
{
    Py_buffer *ib = &m->bufs[3 * t], *ob = ib + 1;
    EmbBatch *b = &m->batches[t];
    int ik, ok;
    memset(b, 0, sizeof *b);
    m->pos[t] = -1;
    if (py_buf_get(io, ib, K_I64 | K_I32, &ik, 0, "indices") < 0)
        return -1;
    b->ids = ib->buf;
    b->id_type = ik == K_I32 ? EMB_ID_I32 : EMB_ID_I64;
    b->nnz = ib->ndim == 2 ? ib->shape[0] * ib->shape[1] : ib->shape[0];
    if (ib->ndim == 2 || oo == Py_None) {
        if (ib->ndim == 2 && oo != Py_None) {
            py_emb_invalid("tables[%lld]: 2-D indices take no offsets", (long long)t);
            return -1;
        }
        b->nbags = ib->shape[0];
        b->bag_size = ib->ndim == 2 ? ib->shape[1] : 1;
        return weights_into(m, t, wo, 0, b->nnz, ib + 2);
    }
    if (py_buf_get(oo, ob, K_I64 | K_I32, &ok, 1, "offsets") < 0)
        return -1;
    const int64_t len = ob->shape[0];
    b->nbags = include_last ? len - 1 : len;
    if (b->nbags < 0)
        return py_emb_invalid("tables[%lld]: empty offsets with include_last_offset",
                              (long long)t), -1;
    if (ok == K_I64 && include_last) {
        b->offsets = ob->buf; /* zero-copy: the library validates them */
    } else {
        const int64_t at = mem_offsets(m, (size_t)b->nbags + 1);
        if (at < 0)
            return -1;
        for (int64_t k = 0; k < b->nbags; k++)
            m->offs[at + k] = get_index(ob, ok, k);
        m->offs[at + b->nbags] = include_last ? get_index(ob, ok, b->nbags) : b->nnz;
        m->pos[t] = at;
    }
    return weights_into(m, t, wo, 0, b->nnz, ib + 2);
}

/* Bag starts of n tables in one array (flat: T*B+1 offsets; jagged: T*B lengths). */
static int fill_flat(StepMem *m, int64_t n, PyObject *io, PyObject *oo, PyObject *wo,
                     int jagged)
{
    Py_buffer *ib = &m->bufs[0], *ob = &m->bufs[1], *wb = &m->bufs[2];
    int ik, ok;
    if (py_buf_get(io, ib, K_I64 | K_I32, &ik, 1, jagged ? "values" : "indices") < 0 ||
        py_buf_get(oo, ob, K_I64 | K_I32, &ok, 1, jagged ? "lengths" : "offsets") < 0)
        return -1;
    const int64_t nnz = ib->shape[0], len = ob->shape[0] - !jagged;
    if (len < 0 || len % n)
        return py_emb_invalid("%s: %lld entries for %lld tables (expected T*B%s)",
                              jagged ? "lengths" : "offsets", (long long)ob->shape[0],
                              (long long)n, jagged ? "" : "+1"), -1;
    const int64_t nb = len / n;
    const int64_t at = mem_offsets(m, (size_t)(n * (nb + 1)));
    if (at < 0)
        return -1;
    int64_t total = jagged ? 0 : get_index(ob, ok, 0);
    for (int64_t t = 0; t < n; t++) {
        int64_t *off = m->offs + at + t * (nb + 1);
        const int64_t start = jagged ? total : get_index(ob, ok, t * nb);
        if (start < 0 || start > nnz)
            return py_emb_invalid("offsets[%lld] = %lld is not in [0, %lld]",
                                  (long long)(t * nb), (long long)start, (long long)nnz), -1;
        off[0] = 0;
        for (int64_t k = 1; k <= nb; k++) {
            const int64_t v = get_index(ob, ok, t * nb + k - jagged);
            if (jagged ? v < 0 || v > nnz - total : v < start || v > nnz)
                return py_emb_invalid("%s[%lld] = %lld: not in [%lld, %lld] (table %lld)",
                                      jagged ? "lengths" : "offsets",
                                      (long long)(t * nb + k - jagged), (long long)v,
                                      (long long)(jagged ? 0 : start),
                                      (long long)(jagged ? nnz - total : nnz), (long long)t),
                       -1;
            total = jagged ? total + v : v;
            off[k] = total - start;
        }
        EmbBatch *b = &m->batches[t];
        memset(b, 0, sizeof *b);
        b->ids = (const char *)ib->buf + start * ib->itemsize;
        b->id_type = ik == K_I32 ? EMB_ID_I32 : EMB_ID_I64;
        b->nnz = off[nb];
        b->nbags = nb;
        m->pos[t] = at + t * (nb + 1);
        if (weights_into(m, t, wo, start, nnz, wb) < 0)
            return -1;
    }
    if (total != nnz)
        return py_emb_invalid("%s cover %lld of %lld %s", jagged ? "lengths" : "offsets",
                              (long long)total, (long long)nnz,
                              jagged ? "values" : "indices"), -1;
    return 0;
}

/* ---- Step ----------------------------------------------------------------------------- */

static void step_dealloc(StepObject *self)
{
    CollectionObject *c = self->coll;
    if (self->mem.bufs) { /* NULL when mem_init failed */
        mem_release_bufs(&self->mem, c->n);
        if (!c->has_spare) {
            c->spare = self->mem;
            c->has_spare = 1;
        } else {
            mem_free(&self->mem);
        }
    }
    Py_DECREF(c);
    PyObject_Free(self);
}

PyTypeObject Step_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "embtables._embtables.Step",
    .tp_basicsize = sizeof(StepObject),
    .tp_dealloc = (destructor)step_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One forward's batches, kept for its backward.",
};

static StepObject *step_new(CollectionObject *c)
{
    StepObject *s = PyObject_New(StepObject, &Step_Type);
    if (!s)
        return NULL;
    s->coll = (CollectionObject *)Py_NewRef((PyObject *)c);
    s->nbags = 0;
    if (c->has_spare) {
        s->mem = c->spare;
        c->has_spare = 0;
        s->mem.noffs = 0;
        memset(s->mem.bufs, 0, (size_t)(3 * c->n) * sizeof *s->mem.bufs);
    } else if (mem_init(&s->mem, c->n) < 0) {
        s->mem.bufs = NULL;
        Py_DECREF(s);
        return NULL;
    }
    return s;
}

/* ---- Collection ----------------------------------------------------------------------- */

static void collection_dealloc(CollectionObject *self)
{
    if (self->has_spare)
        mem_free(&self->spare);
    emb_collection_destroy(&self->c); /* before what it borrows */
    Py_XDECREF(self->opt);
    Py_XDECREF(self->strategy);
    Py_XDECREF(self->tables);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The EmbCollection over the tables (borrowed; unnamed ones called "tables[i]"), with the
 * strategy and optimizer borrowed too. */
static int collection_setup(CollectionObject *self, PyObject *poolings)
{
    const int64_t n = self->n;
    EmbCollectionTable *ts = calloc((size_t)n, sizeof *ts);
    char (*names)[32] = calloc((size_t)n, sizeof *names);
    int rc = -1;
    if (!ts || !names) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        TableObject *t = py_as_table(PyTuple_GET_ITEM(self->tables, i));
        if (!t || py_parse_pooling(PySequence_Fast_GET_ITEM(poolings, i), &ts[i].pooling) < 0)
            goto done;
        const char *own = emb_table_name(t->t);
        snprintf(names[i], sizeof names[i], "tables[%lld]", (long long)i);
        ts[i].name = own && *own ? NULL : names[i];
        ts[i].table = t->t;
        self->width += emb_table_featuresize(t->t);
        if (self->opt && py_optimizer_hold(self->opt, (PyObject *)t) < 0)
            goto done;
    }
    const EmbCollectionOptions o = {.strategy = self->strategy->s,
                                    .shared_optimizer = self->opt ? self->opt->opt : NULL,
                                    .full_every = self->full_every};
    const int err = emb_collection_create(&self->c, ts, n, &o);
    rc = err ? (py_emb_raise(err), -1) : 0;
done:
    free(ts);
    free(names);
    return rc;
}

/* Collection(tables, poolings, strategy, optimizer=None, full_every=0) */
static PyObject *collection_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"tables", "poolings", "strategy", "optimizer", "full_every", NULL};
    PyObject *tables, *poolings, *opt = Py_None;
    StrategyObject *strategy;
    int full_every = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO!|Oi", kwlist, &tables, &poolings,
                                     &Strategy_Type, &strategy, &opt, &full_every))
        return NULL;
    if (opt != Py_None && !PyObject_TypeCheck(opt, &Optimizer_Type)) {
        PyErr_SetString(PyExc_TypeError, "optimizer: an embtables Optimizer or None");
        return NULL;
    }
    CollectionObject *self = (CollectionObject *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    self->tables = PySequence_Tuple(tables);
    self->strategy = (StrategyObject *)Py_NewRef((PyObject *)strategy);
    self->opt = opt == Py_None ? NULL : (OptimizerObject *)Py_NewRef(opt);
    self->full_every = full_every;
    PyObject *pf = self->tables ? PySequence_Fast(poolings, "poolings: a sequence") : NULL;
    if (!pf)
        goto fail;
    self->n = PyTuple_GET_SIZE(self->tables);
    if (self->n == 0 || PySequence_Fast_GET_SIZE(pf) != self->n) {
        py_emb_invalid("%lld tables and %zd poolings", (long long)self->n,
                       PySequence_Fast_GET_SIZE(pf));
        goto fail;
    }
    if (collection_setup(self, pf) < 0)
        goto fail;
    Py_DECREF(pf);
    return (PyObject *)self;
fail:
    Py_XDECREF(pf);
    Py_DECREF(self);
    return NULL;
}

static int claim(StrategyObject *s, OptimizerObject *o)
{
    if (s->busy || (o && o->busy)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "the strategy or optimizer is in use by another thread");
        return -1;
    }
    s->busy = 1;
    if (o)
        o->busy = 1;
    return 0;
}

static void unclaim(StrategyObject *s, OptimizerObject *o)
{
    s->busy = 0;
    if (o)
        o->busy = 0;
}

static int fill_step(CollectionObject *self, StepMem *m, int form, PyObject *ids, PyObject *offs,
                     PyObject *wts, int include_last)
{
    if (form != 0)
        return fill_flat(m, self->n, ids, offs, wts, form == 2);
    PyObject *is = PySequence_Fast(ids, "indices: a list of one array per table");
    PyObject *os = offs == Py_None ? NULL : PySequence_Fast(offs, "offsets: a list or None");
    PyObject *ws = wts == Py_None ? NULL : PySequence_Fast(wts, "weights: a list or None");
    int rc = -1;
    if (!is || (offs != Py_None && !os) || (wts != Py_None && !ws))
        goto done;
    if (PySequence_Fast_GET_SIZE(is) != self->n ||
        (os && PySequence_Fast_GET_SIZE(os) != self->n) ||
        (ws && PySequence_Fast_GET_SIZE(ws) != self->n)) {
        py_emb_invalid("one indices (offsets, weights) entry per table: %lld tables",
                       (long long)self->n);
        goto done;
    }
    for (int64_t t = 0; t < self->n; t++)
        if (fill_list(m, t, PySequence_Fast_GET_ITEM(is, t),
                      os ? PySequence_Fast_GET_ITEM(os, t) : Py_None,
                      ws ? PySequence_Fast_GET_ITEM(ws, t) : Py_None, include_last) < 0)
            goto done;
    rc = 0;
done:
    Py_XDECREF(is);
    Py_XDECREF(os);
    Py_XDECREF(ws);
    return rc;
}

/*
 * forward(form, indices, offsets, weights, out, include_last=0, prepend=0) -> Step:
 * form 0 per-table lists, 1 flat (FBGEMM), 2 jagged (TorchRec). Writes out[:, prepend:].
 */
static PyObject *collection_forward(CollectionObject *self, PyObject *args)
{
    int form, include_last = 0;
    long long prepend = 0;
    PyObject *ids, *offs, *wts, *out;
    if (!PyArg_ParseTuple(args, "iOOOO|iL", &form, &ids, &offs, &wts, &out, &include_last,
                          &prepend))
        return NULL;
    StepObject *step = step_new(self);
    if (!step)
        return NULL;
    Py_buffer ob = {0};
    int64_t stride;
    if (fill_step(self, &step->mem, form, ids, offs, wts, include_last) < 0)
        goto fail;
    mem_fix_offsets(&step->mem, self->n);
    step->nbags = step->mem.batches[0].nbags;
    step->form = form;
    if (py_buf_get_rows(out, &ob, K_F32, NULL, &stride, "out") < 0)
        goto fail;
    if (ob.shape[0] != step->nbags || prepend < 0 || ob.shape[1] < prepend + self->width) {
        py_emb_invalid("out has shape (%zd, %zd): expected (%lld, %lld + %lld)", ob.shape[0],
                       ob.shape[1], (long long)step->nbags, prepend, (long long)self->width);
        goto fail;
    }
    const EmbOutputs o = {.concat = ob.buf, .concat_stride = stride, .prependrows = prepend};
    if (claim(self->strategy, NULL) < 0)
        goto fail;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = emb_collection_forward(self->c, step->mem.batches, &o);
    Py_END_ALLOW_THREADS
    unclaim(self->strategy, NULL);
    PyBuffer_Release(&ob);
    if (rc) {
        Py_DECREF(step);
        return py_emb_raise(rc);
    }
    return (PyObject *)step;
fail:
    py_buf_release(&ob);
    Py_DECREF(step);
    return NULL;
}

/* backward(step, grad_out, prepend=0): pullback + fused optimizer on every table. */
static PyObject *collection_backward(CollectionObject *self, PyObject *args)
{
    StepObject *step;
    PyObject *go;
    long long prepend = 0;
    if (!PyArg_ParseTuple(args, "O!O|L", &Step_Type, &step, &go, &prepend))
        return NULL;
    if (!self->opt || step->coll != self) {
        PyErr_SetString(PyExc_RuntimeError, self->opt ? "a step of another collection"
                                                      : "this collection has no optimizer");
        return NULL;
    }
    Py_buffer gb;
    int64_t stride;
    if (py_buf_get_rows_ro(go, &gb, K_F32, NULL, &stride, "grad_output", 0) < 0)
        return NULL;
    if (gb.shape[0] != step->nbags || prepend < 0 || gb.shape[1] < prepend + self->width) {
        PyBuffer_Release(&gb);
        return py_emb_invalid("grad_output has shape (%zd, %zd): expected (%lld, %lld + %lld)",
                              gb.shape[0], gb.shape[1], (long long)step->nbags, prepend,
                              (long long)self->width);
    }
    const EmbOutputs o = {.concat = gb.buf, .concat_stride = stride, .prependrows = prepend};
    if (claim(self->strategy, self->opt) < 0) {
        PyBuffer_Release(&gb);
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = emb_collection_backward_batches(self->c, step->mem.batches, &o);
    Py_END_ALLOW_THREADS
    unclaim(self->strategy, self->opt);
    PyBuffer_Release(&gb);
    return rc ? py_emb_raise(rc) : Py_NewRef(Py_None);
}

static PyObject *collection_batch(CollectionObject *self, PyObject *args)
{
    (void)self;
    StepObject *step;
    long long t;
    if (!PyArg_ParseTuple(args, "O!L", &Step_Type, &step, &t))
        return NULL;
    if (t < 0 || t >= step->coll->n)
        return PyErr_Format(PyExc_IndexError, "table %lld", t);
    /* (nnz, nbags, bag_size, offsets as bytes or None): for the plain (sparse) backward */
    const EmbBatch *b = &step->mem.batches[t];
    PyObject *off = b->offsets ? PyBytes_FromStringAndSize((const char *)b->offsets,
                                                           (Py_ssize_t)(b->nbags + 1) * 8)
                               : Py_NewRef(Py_None);
    if (!off)
        return NULL;
    const char *base = step->mem.bufs[step->form == 0 ? 3 * t : 0].buf;
    const int64_t first = ((const char *)b->ids - base) /
                          (b->id_type == EMB_ID_I32 ? 4 : 8);
    return Py_BuildValue("(LLLLN)", (long long)first, (long long)b->nnz, (long long)b->nbags,
                         (long long)b->bag_size, off);
}

/* save(directory, prefix, global_step, max_to_keep) -> the checkpoint's path
   (emb_collection_save: with full_every, a delta of the previous save's) */
static PyObject *collection_save(CollectionObject *self, PyObject *args)
{
    const char *dir, *prefix;
    long long step;
    int keep;
    if (!PyArg_ParseTuple(args, "ssLi", &dir, &prefix, &step, &keep))
        return NULL;
    if (claim(self->strategy, self->opt) < 0)
        return NULL;
    char path[4096];
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = emb_collection_save(self->c, dir, prefix, step, keep, path, sizeof path);
    Py_END_ALLOW_THREADS
    unclaim(self->strategy, self->opt);
    return rc ? py_emb_raise(rc) : PyUnicode_DecodeFSDefault(path);
}

/* restore(path) -> the global step (emb_collection_restore: a delta's chain followed) */
static PyObject *collection_restore(CollectionObject *self, PyObject *args)
{
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path))
        return NULL;
    if (claim(self->strategy, self->opt) < 0)
        return NULL;
    int64_t step = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = emb_collection_restore(self->c, path, &step);
    Py_END_ALLOW_THREADS
    unclaim(self->strategy, self->opt);
    return rc ? py_emb_raise(rc) : PyLong_FromLongLong(step);
}

static PyObject *collection_width(CollectionObject *self, PyObject *args)
{
    (void)args;
    return PyLong_FromLongLong(self->width);
}

static PyMethodDef collection_methods[] = {
    {"forward", (PyCFunction)collection_forward, METH_VARARGS,
     "forward(form, indices, offsets, weights, out, include_last=0, prepend=0) -> Step"},
    {"backward", (PyCFunction)collection_backward, METH_VARARGS,
     "backward(step, grad_output, prepend=0): fused update of every table"},
    {"width", (PyCFunction)collection_width, METH_NOARGS, "Σ feature sizes"},
    {"save", (PyCFunction)collection_save, METH_VARARGS,
     "save(directory, prefix, global_step, max_to_keep) -> path"},
    {"restore", (PyCFunction)collection_restore, METH_VARARGS, "restore(path) -> global step"},
    {"batch", (PyCFunction)collection_batch, METH_VARARGS,
     "batch(step, t) -> (first, nnz, nbags, bag_size, offsets bytes or None)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject Collection_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "embtables._embtables.Collection",
    .tp_basicsize = sizeof(CollectionObject),
    .tp_dealloc = (destructor)collection_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Collection(tables, poolings, strategy, optimizer=None, full_every=0)",
    .tp_methods = collection_methods,
    .tp_new = collection_new,
};

/* ---- single-table lookup -------------------------------------------------------------- */

int py_parse_pooling(PyObject *o, EmbPooling *p)
{
    int combiner;
    float max_norm;
    long long default_id;
    unsigned flags;
    if (!PyArg_ParseTuple(o, "ifLI;pooling: (combiner, max_norm, default_id, flags)",
                          &combiner, &max_norm, &default_id, &flags))
        return -1;
    *p = (EmbPooling){.combiner = (EmbCombiner)combiner, .max_norm = max_norm,
                      .default_id = default_id, .flags = flags};
    return 0;
}

/* lookup(table, indices, offsets, weights, pooling, out, include_last=0) */
static PyObject *mod_lookup(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *to, *io, *oo, *wo, *po, *out;
    int include_last = 0;
    if (!PyArg_ParseTuple(args, "OOOOOO|i", &to, &io, &oo, &wo, &po, &out, &include_last))
        return NULL;
    TableObject *t = py_as_table(to);
    EmbPooling pool;
    if (!t || py_parse_pooling(po, &pool) < 0)
        return NULL;
    StepMem m;
    if (mem_init(&m, 1) < 0)
        return NULL;
    PyObject *ret = NULL;
    Py_buffer ob = {0};
    int64_t stride;
    if (fill_list(&m, 0, io, oo, wo, include_last) < 0)
        goto done;
    mem_fix_offsets(&m, 1);
    const int64_t rows = m.batches[0].nbags;
    if (py_buf_get_rows(out, &ob, K_F32, NULL, &stride, "out") < 0)
        goto done;
    if (ob.shape[0] != rows || ob.shape[1] < emb_table_featuresize(t->t)) {
        py_emb_invalid("out has shape (%zd, %zd): expected (%lld, %d)", ob.shape[0],
                       ob.shape[1], (long long)rows, emb_table_featuresize(t->t));
        goto done;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = emb_lookup(t->t, &m.batches[0], &pool, ob.buf, stride);
    Py_END_ALLOW_THREADS
    ret = rc ? py_emb_raise(rc) : Py_NewRef(Py_None);
done:
    py_buf_release(&ob);
    mem_release_bufs(&m, 1);
    mem_free(&m);
    return ret;
}

static PyMethodDef lookup_methods[] = {
    {"lookup", mod_lookup, METH_VARARGS,
     "lookup(table, indices, offsets, weights, pooling, out, include_last=0)"},
    {NULL, NULL, 0, NULL},
};

int py_collection_init_types(PyObject *m)
{
    if (PyType_Ready(&Step_Type) < 0 || PyType_Ready(&Collection_Type) < 0)
        return -1;
    Py_INCREF(&Collection_Type);
    if (PyModule_AddObject(m, "Collection", (PyObject *)&Collection_Type) < 0)
        return -1;
    return PyModule_AddFunctions(m, lookup_methods);
}
