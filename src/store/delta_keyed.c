/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * delta_keyed.c — delta checkpoints of keyed tables (dynamic, partitioned over dynamic
 * shards), through the `listed` facet. A delta of such a table is a dynamic table entry
 * (values, state, "dynamic.ids", "dynamic.last", "dynamic.sketch" as a full save has them)
 * holding only the rows updated or created since the table's previous save with deltas
 * (their `last` stamp above the step kept then, or an id not kept then), plus the
 * tombstones "<name>/delta.gone" (I64 [n, 1], increasing): the ids kept then and absent now.
 * A restore lists the table as the full checkpoint restored it, merges every delta into
 * that listing in memory (oldest first: tombstones out, rows in) and stages the result
 * through the facet, exactly as a full restore stages a file's rows: the same content,
 * layout and all.
 */
#include <stdlib.h>
#include <string.h>

#include "store/delta_keyed.h"
#include "store/store_impl.h"
#include "update/update_impl.h"

/* ---- writing ------------------------------------------------------------------------------ */

typedef struct KeyedDelta {
    EmbRowList full;   /* the table's listing */
    int64_t *sel;      /* its rows in the delta, increasing */
    int64_t *gone;     /* tombstones, increasing */
    int e_gone;        /* the tombstones' extra index */
    bool per_row[EMB_EXTRA_MAX];
} KeyedDelta;

static const void *kd_row(const EmbRowList *l, int64_t k)
{
    KeyedDelta *d = l->priv;
    return d->full.row(&d->full, d->sel[k]);
}

static const float *kd_state(const EmbRowList *l, int64_t k)
{
    KeyedDelta *d = l->priv;
    return d->full.state(&d->full, d->sel[k]);
}

static const void *kd_extra(const EmbRowList *l, int e, int64_t j, int64_t *tmp)
{
    KeyedDelta *d = l->priv;
    if (e == d->e_gone)
        return &d->gone[j];
    return d->full.extra_column(&d->full, e, d->per_row[e] ? d->sel[j] : j, tmp);
}

static void kd_close(EmbRowList *l)
{
    KeyedDelta *d = l->priv;
    d->full.close(&d->full);
    free(d->sel);
    free(d->gone);
    free(d);
}

bool emb__delta_keyed_possible(const EmbTable *t)
{
    return emb__table_listed(t) && t->saved_keys && !emb__touched_is_all(t);
}

/* The rows of @d->full in the delta and the tombstones, against the ids kept at the last
   save (both lists increasing: one merge walk). */
static void select_rows(const EmbSavedKeys *sk, KeyedDelta *d, int ei, int el, int64_t *nsel,
                        int64_t *ngone)
{
    const EmbRowList *f = &d->full;
    int64_t i = 0, tmp;
    *nsel = *ngone = 0;
    for (int64_t j = 0; j < f->n; j++) {
        const int64_t id = *(const int64_t *)f->extra_column(f, ei, j, &tmp);
        const int64_t last = *(const int64_t *)f->extra_column(f, el, j, &tmp);
        while (i < sk->n && sk->ids[i] < id)
            d->gone[(*ngone)++] = sk->ids[i++];
        const bool kept = i < sk->n && sk->ids[i] == id;
        i += kept;
        if (!kept || last > sk->step)
            d->sel[(*nsel)++] = j;
    }
    while (i < sk->n)
        d->gone[(*ngone)++] = sk->ids[i++];
}

int emb__delta_keyed_list(const EmbTable *t, const EmbOptState *st, EmbRowList *out)
{
    const EmbSavedKeys *sk = t->saved_keys;
    KeyedDelta *d = calloc(1, sizeof *d);
    if (!d)
        return emb__fail(EMB_ENOMEM, "out of memory listing %s", emb__table_label(t));
    int r = emb__table_list(t, st != NULL, &d->full);
    if (r) {
        free(d);
        return r;
    }
    const EmbRowList *f = &d->full;
    const int ei = emb__listed_extra(f, "dynamic.ids"), el = emb__listed_extra(f, "dynamic.last");
    d->sel = malloc((size_t)EMB_MAX(f->n, 1) * sizeof *d->sel);
    d->gone = malloc((size_t)EMB_MAX(sk->n, 1) * sizeof *d->gone);
    if (ei < 0 || el < 0 || f->nextra >= EMB_EXTRA_MAX)
        r = emb__fail(EMB_ENOTSUP, "a delta of %s: its kind lists no ids and steps",
                      emb__table_label(t));
    else if (!d->sel || !d->gone)
        r = emb__fail(EMB_ENOMEM, "out of memory listing the changed rows of %s",
                      emb__table_label(t));
    if (r) {
        *out = (EmbRowList){.priv = d};
        kd_close(out);
        return r;
    }
    int64_t nsel, ngone;
    select_rows(sk, d, ei, el, &nsel, &ngone);
    *out = (EmbRowList){.n = nsel, .step = f->step, .nextra = f->nextra + 1, .row = kd_row,
                        .state = kd_state, .extra_column = kd_extra, .close = kd_close,
                        .priv = d};
    for (int e = 0; e < f->nextra; e++) {
        out->extra[e] = f->extra[e];
        d->per_row[e] = f->extra[e].ncolumns == f->n && (e == ei || e == el);
        if (d->per_row[e])
            out->extra[e].ncolumns = nsel;
    }
    d->e_gone = f->nextra;
    out->extra[d->e_gone] = (EmbExtraTensor){"delta.gone", EMB_ELEM_I64, ngone, 1, false};
    return 0;
}

/* ---- reading ------------------------------------------------------------------------------ */

typedef struct Strided {
    char *base;
    size_t stride, off;
} Strided;

static void *strided_dst(void *ctx, int64_t j)
{
    const Strided *s = ctx;
    return s->base + (size_t)j * s->stride + s->off;
}

/* Tensor @k of @c whole into a new array of its rows @stride bytes apart, at @off. */
static int load_rows(const EmbKeyedLink *l, int64_t k, size_t stride, size_t off, char *dst,
                     unsigned char *buf)
{
    Strided s = {dst, stride, off};
    return emb__ckpt_load_fn(l->c, k, l->fd, strided_dst, &s, buf, l->path);
}

static int64_t *load_i64(const EmbKeyedLink *l, int64_t k, unsigned char *buf, int *r)
{
    const int64_t n = l->c->tensors[k].ncolumns;
    int64_t *v = malloc((size_t)EMB_MAX(n, 1) * sizeof *v);
    *r = v ? load_rows(l, k, sizeof *v, 0, (char *)v, buf)
           : emb__fail(EMB_ENOMEM, "out of memory restoring %s", l->path);
    if (*r) {
        free(v);
        return NULL;
    }
    return v;
}

static bool increasing(const int64_t *v, int64_t n)
{
    for (int64_t k = 0; k < n; k++)
        if (v[k] < 0 || (k > 0 && v[k] <= v[k - 1]))
            return false;
    return true;
}

int emb__delta_keyed_check(const EmbKeyedLink *l, const EmbCkptTable *tb, const EmbTable *t,
                           unsigned char *buf)
{
    const EmbCkptTensor *v = &l->c->tensors[tb->values];
    if (!tb->dynamic || tb->delta_ids < 0 || t->featuresize != v->width || t->dtype != v->dtype)
        return emb__fail(EMB_ESHAPE, "delta checkpoint %s has \"%s\" as %s rows of %d %s; %s "
                         "is a table of keys, %d %s wide", l->path, tb->name,
                         tb->dynamic ? "keyed" : "dense", (int)v->width,
                         emb_dtype_name(v->dtype), emb__table_label(t), (int)t->featuresize,
                         emb_dtype_name(t->dtype));
    int r;
    int64_t *ids = load_i64(l, tb->ids, buf, &r), *last = r ? NULL : load_i64(l, tb->last, buf, &r);
    int64_t *gone = r ? NULL : load_i64(l, tb->delta_ids, buf, &r);
    bool ok = !r && increasing(ids, v->ncolumns) &&
              increasing(gone, l->c->tensors[tb->delta_ids].ncolumns);
    for (int64_t k = 0; ok && k < v->ncolumns; k++)
        ok = last[k] >= 0 && last[k] <= tb->dyn_step;
    if (!r && !ok)
        r = emb__ckpt_corrupt(l->path, "delta table \"%.200s\": its ids, tombstones or update "
                              "steps are not increasing ids >= 0 and steps in [0, %lld]",
                              tb->name, (long long)tb->dyn_step);
    free(ids);
    free(last);
    free(gone);
    return r;
}

/* A keyed table's content in memory, rows in increasing id order. */
typedef struct Content {
    int64_t n, *ids, *last;
    char *vals;    /* n rows of rb bytes */
    float *state;  /* n rows of sw floats, or NULL */
} Content;

static void content_free(Content *c)
{
    free(c->ids);
    free(c->last);
    free(c->vals);
    free(c->state);
    *c = (Content){0};
}

static int content_alloc(Content *c, int64_t n, size_t rb, int32_t sw, const char *path)
{
    const size_t m = (size_t)EMB_MAX(n, 1);
    *c = (Content){n, malloc(m * sizeof *c->ids), malloc(m * sizeof *c->last), malloc(m * rb),
                   sw ? malloc(m * (size_t)sw * sizeof(float)) : NULL};
    if (c->ids && c->last && c->vals && (!sw || c->state))
        return 0;
    content_free(c);
    return emb__fail(EMB_ENOMEM, "out of memory restoring %s", path);
}

/* Row @k of @src as row @j of @dst. */
static void content_copy(Content *dst, int64_t j, const Content *src, int64_t k, size_t rb,
                         int32_t sw)
{
    dst->ids[j] = src->ids[k];
    dst->last[j] = src->last[k];
    memcpy(dst->vals + (size_t)j * rb, src->vals + (size_t)k * rb, rb);
    if (sw)
        memcpy(dst->state + (size_t)j * sw, src->state + (size_t)k * sw, (size_t)sw * 4);
}

/* The table as it is now (the full checkpoint restored), listed. */
static int content_list(const EmbTable *t, bool state, size_t rb, int32_t sw, Content *c,
                        const char *path)
{
    EmbRowList l = {0};
    int r = emb__table_list(t, state, &l);
    if (r)
        return r;
    const int ei = emb__listed_extra(&l, "dynamic.ids"), el = emb__listed_extra(&l, "dynamic.last");
    r = ei < 0 || el < 0 ? emb__fail(EMB_ENOTSUP, "%s lists no ids", emb__table_label(t))
                         : content_alloc(c, l.n, rb, state ? sw : 0, path);
    for (int64_t k = 0; k < l.n && !r; k++) {
        int64_t tmp;
        c->ids[k] = *(const int64_t *)l.extra_column(&l, ei, k, &tmp);
        c->last[k] = *(const int64_t *)l.extra_column(&l, el, k, &tmp);
        memcpy(c->vals + (size_t)k * rb, l.row(&l, k), rb);
        const float *s = state ? l.state(&l, k) : NULL;
        if (s)
            memcpy(c->state + (size_t)k * sw, s, (size_t)sw * sizeof(float));
    }
    l.close(&l);
    return r;
}

/* Delta table @tb of link @l read into @d (its rows) and @gone (its tombstones). */
static int content_read(const EmbKeyedLink *l, const EmbCkptTable *tb, const EmbTable *t,
                        const EmbOptimizer *opt, size_t rb, int32_t sw, Content *d,
                        int64_t **gone, unsigned char *buf)
{
    const int64_t n = l->c->tensors[tb->values].ncolumns;
    const bool state = sw && opt && tb->step >= 0;
    int r = content_alloc(d, n, rb, sw, l->path);
    r = r ? r : load_rows(l, tb->ids, sizeof(int64_t), 0, (char *)d->ids, buf);
    r = r ? r : load_rows(l, tb->last, sizeof(int64_t), 0, (char *)d->last, buf);
    r = r ? r : load_rows(l, tb->values, rb, 0, d->vals, buf);
    if (!r && sw)
        memset(d->state, 0, (size_t)EMB_MAX(n, 1) * (size_t)sw * sizeof(float));
    EmbOptSlot slots[2];
    const int ns = state ? emb__optimizer_slots(opt->cfg.kind, t->featuresize, slots) : 0;
    for (int k = 0; k < ns && !r; k++)
        r = load_rows(l, tb->state[k], (size_t)sw * sizeof(float),
                      (size_t)slots[k].off * sizeof(float), (char *)d->state, buf);
    *gone = r ? NULL : load_i64(l, tb->delta_ids, buf, &r);
    return r;
}

/* @cur with delta @d merged in: the tombstones' rows out, the delta's rows in (replacing). */
static int merge(Content *cur, const Content *d, const int64_t *gone, int64_t ngone, size_t rb,
                 int32_t sw, const char *path)
{
    Content m;
    int r = content_alloc(&m, cur->n + d->n, rb, sw, path);
    if (r)
        return r;
    int64_t i = 0, j = 0, g = 0, n = 0;
    while (i < cur->n || j < d->n) {
        if (j < d->n && (i >= cur->n || d->ids[j] <= cur->ids[i])) {
            i += i < cur->n && cur->ids[i] == d->ids[j];
            content_copy(&m, n++, d, j++, rb, sw);
            continue;
        }
        while (g < ngone && gone[g] < cur->ids[i])
            g++;
        if (!(g < ngone && gone[g] == cur->ids[i]))
            content_copy(&m, n++, cur, i, rb, sw);
        i++;
    }
    m.n = n;
    content_free(cur);
    *cur = m;
    return 0;
}

/* @c staged into @t (as a full restore stages a file's rows) and swapped in. */
static int stage(EmbTable *t, const Content *c, int64_t step, const void *sketch,
                 const EmbCkptTensor *sketch_shape, size_t rb, int32_t sw, const char *path,
                 const char *name)
{
    EmbExtraTensor ex[EMB_EXTRA_MAX];
    int ne = 0;
    emb__table_extras(t, ex, &ne);
    EmbStageIn in = {.nrows = c->n, .step = step, .path = path, .name = name};
    for (int e = 0; e < ne; e++) {
        const bool is_ids = strcmp(ex[e].suffix, "dynamic.ids") == 0;
        if (is_ids || strcmp(ex[e].suffix, "dynamic.last") == 0) {
            in.extra[e] = is_ids ? c->ids : c->last;
            in.shape[e] = (EmbExtraTensor){ex[e].suffix, EMB_ELEM_I64, c->n, 1, false};
        } else if (strcmp(ex[e].suffix, "dynamic.sketch") == 0 && sketch) {
            in.extra[e] = sketch;
            in.shape[e] = (EmbExtraTensor){ex[e].suffix, EMB_ELEM_U16, sketch_shape->ncolumns,
                                           sketch_shape->width, true};
        }
    }
    EmbRowStage *s;
    int r = emb__table_stage(t, &in, &s);
    if (r)
        return r;
    for (int64_t k = 0; k < c->n; k++) {
        memcpy(emb__table_stage_dst(t, s, EMB_STAGE_VALUES, k), c->vals + (size_t)k * rb, rb);
        float *dst = c->state ? emb__table_stage_dst(t, s, EMB_STAGE_STATE, k) : NULL;
        if (dst)
            memcpy(dst, c->state + (size_t)k * sw, (size_t)sw * sizeof(float));
    }
    emb__table_stage_commit(t, s);
    emb__touched_all(t); /* the next save of it is whole, as after a full restore */
    return 0;
}

static const EmbCkptTable *table_in(const EmbCkpt *c, const char *name)
{
    for (int64_t i = 0; i < c->ntables; i++)
        if (strcmp(c->tables[i].name, name) == 0)
            return &c->tables[i];
    return NULL;
}

int emb__delta_keyed_restore(EmbTable *t, const char *name, const EmbKeyedLink *links,
                             int64_t n, EmbOptimizer *opt, unsigned char *buf)
{
    const size_t rb = emb__ckpt_row_bytes(t->dtype, t->featuresize);
    EmbOptSlot slots[2];
    const int ns = opt ? emb__optimizer_slots(opt->cfg.kind, t->featuresize, slots) : 0;
    const int32_t sw = ns ? slots[ns - 1].off + slots[ns - 1].width : 0;
    const EmbCkptTable *newest = table_in(links[n - 1].c, name);
    EmbOptState *st = opt ? emb__optimizer_find(opt, t) : NULL;
    int r = 0;
    if (opt && newest && newest->step >= 0 && !st) /* first updated after the full save */
        r = emb__optimizer_state(opt, t, &st);
    Content cur = {0}, d = {0};
    r = r ? r : content_list(t, st != NULL, rb, sw, &cur, links[n - 1].path);
    void *sketch = NULL;
    for (int64_t k = 0; k < n && !r; k++) {
        const EmbCkptTable *tb = table_in(links[k].c, name);
        if (!tb)
            continue;
        int64_t *gone = NULL;
        r = content_read(&links[k], tb, t, st ? opt : NULL, rb, st ? sw : 0, &d, &gone, buf);
        r = r ? r : merge(&cur, &d, gone, links[k].c->tensors[tb->delta_ids].ncolumns, rb,
                          st ? sw : 0, links[k].path);
        free(gone);
        content_free(&d);
    }
    if (!r && newest && newest->sketch >= 0) {
        const EmbCkptTensor *ts = &links[n - 1].c->tensors[newest->sketch];
        const size_t row = (size_t)ts->width * sizeof(uint16_t);
        sketch = malloc((size_t)EMB_MAX(ts->ncolumns, 1) * row);
        r = sketch ? load_rows(&links[n - 1], newest->sketch, row, 0, sketch, buf)
                   : emb__fail(EMB_ENOMEM, "out of memory restoring %s", links[n - 1].path);
    }
    if (!r && newest)
        r = stage(t, &cur, newest->dyn_step, sketch,
                  newest->sketch >= 0 ? &links[n - 1].c->tensors[newest->sketch] : NULL, rb,
                  st ? sw : 0, links[n - 1].path, name);
    if (!r && st && newest)
        st->step = newest->step;
    if (!r && opt && newest && newest->step < 0)
        emb_optimizer_detach(opt, t);
    free(sketch);
    content_free(&cur);
    return r;
}
