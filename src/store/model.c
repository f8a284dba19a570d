/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * model.c — the table model of checkpoints (model.h): what a table and its optimizer
 * state become in the file and back (the reading: model_read.c), through the table
 * contract; format.c writes and reads the tensors. A dense table is its values tensor
 * (column c of the table at row c) and one tensor per optimizer slot (elements
 * [off, off + width) of its state table's columns); a kind that lists its rows (save_list)
 * gives the rows in its order, their state rows and its extra tensors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embtables/partition.h"
#include "store/model.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

#define NAME_BYTES_MAX 4096
#define MAX_TENSORS (3 + EMB_EXTRA_MAX) /* values, two slots, the kind's extra tensors */

/* What a tensor's columns are when written (EmbCkptTensor.src_what). */
enum { SRC_TABLE = 0, SRC_ROWS, SRC_STATE, SRC_EXTRA /* + the extra tensor's index */ };

static const char *partition_name(unsigned p)
{
    return p == EMB_PARTITION_MOD ? "mod" : p == EMB_PARTITION_DIV ? "div" : "none";
}

/* The bytes of column @col of tensor @t (@tmp: room for an int64). */
static const void *tensor_column(const EmbCkptTensor *t, int64_t col, int64_t *tmp)
{
    const size_t off = (size_t)t->src_off * emb__ckpt_el_size(t->dtype);
    if (t->src_what == SRC_TABLE)
        return (const char *)emb__column(t->src, col, EMB_CTX_NONE) + off;
    const EmbRowList *l = t->src;
    if (t->src_what == SRC_ROWS)
        return l->row(l, col);
    if (t->src_what == SRC_STATE) {
        const float *st = l->state(l, col);
        return st ? (const char *)st + off : NULL;
    }
    return l->extra_column(l, t->src_what - SRC_EXTRA, col, tmp);
}

/* The tensor of table @name: its values (@slot NULL) or `<name>/<kind>.<slot>`. */
static void tensor_name(char *out, size_t cap, const char *name, const EmbOptimizer *opt,
                        const char *slot)
{
    if (slot)
        snprintf(out, cap, "%s/%s.%s", name, emb__optimizer_kind_name(opt->cfg.kind), slot);
    else
        snprintf(out, cap, "%s", name);
}

/* The tensors of a table saved as @name (its rows as @l lists them, or NULL: dense):
   protos[k] and their names (names[k], NAME_BYTES_MAX each); returns their number. */
static int table_tensors(const EmbTable *t, const char *name, const EmbOptimizer *opt,
                         const EmbOptState *st, const EmbRowList *l, EmbCkptTensor *protos,
                         char (*names)[NAME_BYTES_MAX])
{
    EmbOptSlot slots[2];
    const int nslots = st ? emb__optimizer_slots(opt->cfg.kind, t->featuresize, slots) : 0;
    int n = 0;
    for (int k = -1; k < nslots; k++, n++) {
        tensor_name(names[n], NAME_BYTES_MAX, name, opt, k < 0 ? NULL : slots[k].name);
        protos[n] = (EmbCkptTensor){
                .dtype = k < 0 ? t->dtype : l ? EMB_F32 : st->slot->dtype, /* the state's */
                .ncolumns = l ? l->n : t->ncolumns,
                .width = k < 0 ? t->featuresize : slots[k].width, .slot = k,
                .column = tensor_column, .src = l ? (const void *)l : k < 0 ? t : st->slot,
                .src_off = k < 0 ? 0 : slots[k].off,
                .src_what = !l ? SRC_TABLE : k < 0 ? SRC_ROWS : SRC_STATE};
    }
    for (int e = 0; l && e < l->nextra; e++, n++) {
        const EmbExtraTensor *x = &l->extra[e];
        snprintf(names[n], NAME_BYTES_MAX, "%s/%s", name, x->suffix);
        protos[n] = (EmbCkptTensor){.dtype = (EmbDtype)x->elem, .ncolumns = x->ncolumns,
                                    .width = x->width, .slot = -1, .column = tensor_column,
                                    .src = l, .src_what = SRC_EXTRA + e};
    }
    return n;
}

/* Every name new (in @c and among the @n of @names). */
static int names_check(const EmbCkpt *c, char (*names)[NAME_BYTES_MAX], int n)
{
    for (int k = 0; k < n; k++)
        for (int j = 0; j <= k; j++)
            if ((j < k && strcmp(names[j], names[k]) == 0) ||
                emb__ckpt_tensor_find(c, names[k]) >= 0 ||
                strcmp(names[k], "__metadata__") == 0)
                return emb__fail(EMB_EINVAL, "checkpoint tensor name \"%.200s\" is used twice",
                                 names[k]);
    return 0;
}

/* The rows of @t as its kind lists them (NULL: a dense table), or for a delta (@delta) the
   rows touched since its last save. */
static int list_rows(const EmbTable *t, const EmbOptState *st, bool delta, EmbRowList **out)
{
    *out = NULL;
    if (!emb__table_listed(t) && !delta)
        return 0;
    EmbRowList *l = calloc(1, sizeof *l);
    if (!l)
        return emb__fail(EMB_ENOMEM, "out of memory listing %s", emb__table_label(t));
    const int r = delta ? emb__delta_list(t, st, l) : emb__table_list(t, st != NULL, l);
    if (r)
        free(l);
    else
        *out = l;
    return r;
}

/* Tensor @k of the table just pushed: its index in the table's entry. */
static void note_tensor(EmbCkptTable *tb, const EmbCkptTensor *p, const char *name, int64_t k)
{
    const char *suffix = strrchr(name, '/');
    if (p->slot >= 0)
        tb->state[p->slot] = k;
    else if (p->src_what >= SRC_EXTRA && strcmp(suffix, "/dynamic.ids") == 0)
        tb->ids = k;
    else if (p->src_what >= SRC_EXTRA && strcmp(suffix, "/dynamic.last") == 0)
        tb->last = k;
    else if (p->src_what >= SRC_EXTRA && strcmp(suffix, "/dynamic.sketch") == 0)
        tb->sketch = k;
    else if (p->src_what >= SRC_EXTRA && (strcmp(suffix, "/delta.ids") == 0 ||
                                          strcmp(suffix, "/delta.gone") == 0))
        tb->delta_ids = k;
    else if (p->src_what >= SRC_EXTRA && strcmp(suffix, "/export.remap") == 0)
        tb->remap = k;
}

/* Appends the table entry (@name taken) and its @nt tensors; nothing added on failure. */
static int push_table(EmbCkpt *c, const EmbTable *t, char *name, const EmbOptState *st,
                      EmbRowList *l, EmbCkptTensor *protos, char (*names)[NAME_BYTES_MAX],
                      int nt)
{
    int r = emb__grow(&c->tables, c->ntables, &c->cap, sizeof *c->tables, "checkpoint tables");
    if (r)
        return r;
    EmbCkptTable *tb = &c->tables[c->ntables];
    *tb = (EmbCkptTable){name, EMB_MAX(emb_table_nshards(t), 1), emb_table_partition_mode(t),
                         st ? st->step : -1, c->ntensors, {-1, -1},
                         .dynamic = l != NULL && emb__table_rows_appear(t),
                         .dyn_step = l ? l->step : 0, .ids = -1, .last = -1, .sketch = -1,
                         .list = l, .delta_ncolumns = t->ncolumns, .delta_ids = -1, .remap = -1};
    const int64_t first = c->ntensors;
    for (int k = 0; k < nt && !r; k++) {
        protos[k].table = c->ntables;
        note_tensor(tb, &protos[k], names[k], c->ntensors);
        r = emb__ckpt_tensor_push(c, emb__ckpt_strdup(names[k]), &protos[k]);
    }
    if (r) { /* roll back */
        while (c->ntensors > first)
            free(c->tensors[--c->ntensors].name);
        return r;
    }
    c->ntables++;
    return 0;
}

/* @given: the rows to write, listed by the caller (taken, closed on failure), or NULL. */
static int add_table(EmbCkpt *c, const char *name, const EmbTable *t, const EmbOptimizer *opt,
                     bool delta, EmbRowList *given)
{
    if (!name)
        name = t->name;
    int r = emb__table_save_check(t);
    if (!r && (!name[0] || strlen(name) > NAME_BYTES_MAX - 64))
        r = emb__fail(EMB_EINVAL, "a table saved in a checkpoint needs a name (1 to %d "
                      "bytes): %s has none", NAME_BYTES_MAX - 64, emb__table_label(t));
    if (r && given) {
        given->close(given);
        free(given);
    }
    if (r)
        return r;
    const EmbOptState *st = opt ? emb__optimizer_find(opt, t) : NULL;
    EmbCkptTensor protos[MAX_TENSORS];
    char (*names)[NAME_BYTES_MAX] = malloc(MAX_TENSORS * sizeof *names);
    EmbRowList *l = given;
    if (!names)
        r = emb__fail(EMB_ENOMEM, "out of memory for tensor names");
    else if (!given)
        r = list_rows(t, st, delta, &l);
    const int nt = r ? 0 : table_tensors(t, name, opt, st, l, protos, names);
    r = r ? r : names_check(c, names, nt);
    char *tabname = r ? NULL : emb__ckpt_strdup(name);
    if (!r && !tabname)
        r = emb__fail(EMB_ENOMEM, "out of memory for a table name");
    r = r ? r : push_table(c, t, tabname, st, l, protos, names, nt);
    free(names);
    if (r) {
        free(tabname);
        if (l) {
            l->close(l);
            free(l);
        }
    }
    return r;
}

int emb__ckpt_add(EmbCkpt *c, const char *name, const EmbTable *t, const EmbOptimizer *opt)
{
    return add_table(c, name, t, opt, false, NULL);
}

int emb__ckpt_add_listed(EmbCkpt *c, const char *name, const EmbTable *t, EmbRowList *l)
{
    return add_table(c, name, t, NULL, false, l);
}

int emb__ckpt_add_delta(EmbCkpt *c, const char *name, const EmbTable *t,
                        const EmbOptimizer *opt)
{
    return add_table(c, name, t, opt, true, NULL);
}

static json_t *optimizer_json(const EmbOptimizerConfig *o, int *err)
{
    json_t *j = json_object();
    emb__json_set(j, "kind", json_string(emb__optimizer_kind_name(o->kind)), err);
    emb__json_set(j, "lr", json_real(o->lr), err);
    emb__json_set(j, "eps", json_real(o->eps), err);
    emb__json_set(j, "initial_accumulator", json_real(o->initial_accumulator), err);
    emb__json_set(j, "lr_power", json_real(o->lr_power), err);
    emb__json_set(j, "l1", json_real(o->l1), err);
    emb__json_set(j, "l2", json_real(o->l2), err);
    emb__json_set(j, "beta1", json_real(o->beta1), err);
    emb__json_set(j, "beta2", json_real(o->beta2), err);
    emb__json_set(j, "bias_correction", json_integer(o->bias_correction), err);
    emb__json_set(j, "weight_decay", json_real(o->weight_decay), err);
    emb__json_set(j, "weight_decay_mode",
        json_string(o->weight_decay_mode == EMB_DECAY_DECOUPLED ? "decoupled" : "l2"), err);
    /* clipping only when on: a file of an optimizer without it has the bytes it had before */
    if (o->max_gradient != 0.0f)
        emb__json_set(j, "max_gradient", json_real(o->max_gradient), err);
    if (o->max_row_norm != 0.0f)
        emb__json_set(j, "max_row_norm", json_real(o->max_row_norm), err);
    if (o->max_global_norm != 0.0f)
        emb__json_set(j, "max_global_norm", json_real(o->max_global_norm), err);
    if (o->kind == EMB_OPT_ROWWISE_ADAGRAD_COUNTER) {
        emb__json_set(j, "counter_halflife", json_integer(o->counter_halflife), err);
        emb__json_set(j, "adjustment_iter", json_integer(o->adjustment_iter), err);
        emb__json_set(j, "adjustment_ub", json_real(o->adjustment_ub), err);
        emb__json_set(j, "learning_rate_mode", json_integer(o->learning_rate_mode), err);
        emb__json_set(j, "tail_id_threshold", json_real(o->tail_id_threshold), err);
    }
    return j;
}

/* The "embtables" metadata object but the checksums (format_write.c adds them). */
static json_t *meta_json(const EmbCkpt *c, int *err)
{
    json_t *m = json_object(), *tables = json_array();
    emb__json_set(m, "version", json_integer(EMB_CKPT_VERSION), err);
    emb__json_set(m, "global_step", json_integer(c->global_step), err);
    for (int64_t i = 0; i < c->ntables; i++) {
        const EmbCkptTable *t = &c->tables[i];
        json_t *jt = json_object();
        emb__json_set(jt, "name", json_string(t->name), err);
        emb__json_set(jt, "nshards", json_integer(t->nshards), err);
        emb__json_set(jt, "partition", json_string(partition_name(t->partition)), err);
        emb__json_set(jt, "step", json_integer(t->step), err);
        const EmbDtype vd = c->tensors[t->values].dtype;
        if (emb__dtype_quantized(vd)) /* its U8 tensor holds rows of this format */
            emb__json_set(jt, "format", json_string(emb_dtype_name(vd)), err);
        if (c->delta_base || t->remap >= 0)
            emb__json_set(jt, "ncolumns", json_integer(t->delta_ncolumns), err);
        if (t->dynamic) {
            json_t *jd = json_object();
            emb__json_set(jd, "step", json_integer(t->dyn_step), err);
            emb__json_set(jt, "dynamic", jd, err);
        }
        if (!tables || json_array_append_new(tables, jt) != 0)
            *err = 1;
    }
    emb__json_set(m, "tables", tables, err);
    if (c->delta_base) {
        json_t *jd = json_object();
        char hex[17];
        emb__ckpt_hex16(hex, c->delta_base_hash);
        emb__json_set(jd, "base", json_string(c->delta_base), err);
        emb__json_set(jd, "base_xxh3", json_string(hex), err);
        emb__json_set(m, "delta", jd, err);
    }
    if (c->has_opt)
        emb__json_set(m, "optimizer", optimizer_json(&c->opt, err), err);
    return m;
}

int emb__ckpt_save(EmbCkpt *c, int fd, const char *path)
{
    int err = 0;
    json_t *meta = meta_json(c, &err);
    const int r = err ? emb__fail(EMB_ENOMEM, "out of memory for a checkpoint header")
                      : emb__ckpt_write(c, meta, fd, path);
    json_decref(meta);
    return r;
}
