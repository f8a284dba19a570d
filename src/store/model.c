/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * model.c — the table model of checkpoints (model.h): what a table and its optimizer
 * state become in the file and back, through the table contract; format.c writes and
 * reads the tensors. A dense table is its values tensor (column c of the table at row c)
 * and one tensor per optimizer slot (elements [off, off + width) of its state table's
 * columns); a kind that lists its rows (save_list) gives the rows in its order, their
 * state rows and its extra tensors.
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

void emb__ckpt_free(EmbCkpt *c)
{
    emb__ckpt_tensors_free(c);
    for (int64_t i = 0; i < c->ntables; i++) {
        free(c->tables[i].name);
        if (c->tables[i].list) {
            c->tables[i].list->close(c->tables[i].list);
            free(c->tables[i].list);
        }
    }
    free(c->tables);
    free(c->delta_base);
    *c = (EmbCkpt){0};
}

static const char *partition_name(unsigned p)
{
    return p == EMB_PARTITION_MOD ? "mod" : p == EMB_PARTITION_DIV ? "div" : "none";
}

/* ---- writing ----------------------------------------------------------------------- */

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

/* The "embtables" metadata object but the checksums (format.c adds them). */
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

/* ---- reading ----------------------------------------------------------------------- */

static int parse_optimizer(EmbCkpt *c, json_t *o, const char *path)
{
    const char *kind = emb__json_str(o, "kind");
    int k = 0;
    while (k <= EMB_OPT_ROWWISE_ADAGRAD_COUNTER &&
           (!kind || strcmp(kind, emb__optimizer_kind_name(k)) != 0))
        k++;
    if (k > EMB_OPT_ROWWISE_ADAGRAD_COUNTER)
        return emb__ckpt_corrupt(path, "unknown optimizer kind");
    EmbOptimizerConfig *cfg = &c->opt;
    *cfg = emb_optimizer_defaults((EmbOptimizerKind)k, 1.0f);
    static const char *const keys[] = {"lr", "eps", "initial_accumulator", "lr_power", "l1",
                                       "l2", "beta1", "beta2", "weight_decay"};
    float *const dst[] = {&cfg->lr, &cfg->eps, &cfg->initial_accumulator, &cfg->lr_power,
                          &cfg->l1, &cfg->l2, &cfg->beta1, &cfg->beta2, &cfg->weight_decay};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        json_t *v = json_object_get(o, keys[i]);
        if (!json_is_number(v))
            return emb__ckpt_corrupt(path, "optimizer %s is not a number", keys[i]);
        *dst[i] = (float)json_number_value(v);
    }
    /* gradient clipping: absent from checkpoints written before it (0: off) */
    static const char *const clip_keys[] = {"max_gradient", "max_row_norm", "max_global_norm"};
    float *const clip_dst[] = {&cfg->max_gradient, &cfg->max_row_norm, &cfg->max_global_norm};
    for (size_t i = 0; i < sizeof clip_keys / sizeof *clip_keys; i++) {
        json_t *v = json_object_get(o, clip_keys[i]);
        if (v && !json_is_number(v))
            return emb__ckpt_corrupt(path, "optimizer %s is not a number", clip_keys[i]);
        *clip_dst[i] = v ? (float)json_number_value(v) : 0.0f;
    }
    if (k == EMB_OPT_ROWWISE_ADAGRAD_COUNTER) {
        int64_t hl, ai, lm;
        json_t *ub = json_object_get(o, "adjustment_ub"), *tt = json_object_get(o, "tail_id_threshold");
        if (emb__json_int(o, "counter_halflife", INT32_MIN, INT32_MAX, &hl) ||
            emb__json_int(o, "adjustment_iter", INT32_MIN, INT32_MAX, &ai) ||
            emb__json_int(o, "learning_rate_mode", -1, 2, &lm) || !json_is_number(ub) ||
            !json_is_number(tt))
            return emb__ckpt_corrupt(path, "optimizer counter fields are missing or invalid");
        cfg->counter_halflife = (int32_t)hl;
        cfg->adjustment_iter = (int32_t)ai;
        cfg->learning_rate_mode = (int32_t)lm;
        cfg->adjustment_ub = (float)json_number_value(ub);
        cfg->tail_id_threshold = (float)json_number_value(tt);
    }
    int64_t bc;
    const char *mode = emb__json_str(o, "weight_decay_mode");
    if (emb__json_int(o, "bias_correction", 0, 1, &bc) || !mode ||
        (strcmp(mode, "l2") != 0 && strcmp(mode, "decoupled") != 0))
        return emb__ckpt_corrupt(path, "optimizer bias_correction or weight_decay_mode is invalid");
    cfg->bias_correction = (int)bc;
    cfg->weight_decay_mode = mode[0] == 'd' ? EMB_DECAY_DECOUPLED : EMB_DECAY_L2;
    c->has_opt = true;
    return 0;
}

/* The dynamic table's part of a "tables" entry (@jd: its "dynamic" object, or NULL for
   another table): its step and its ids, steps and counts tensors. */
static int parse_dynamic(EmbCkpt *c, EmbCkptTable *tb, json_t *jd, const char *path)
{
    if (!jd)
        return 0;
    int64_t step;
    if (!json_is_object(jd) || emb__json_int(jd, "step", 0, INT64_MAX, &step) ||
        (tb->nshards != 1 && tb->partition != EMB_PARTITION_MOD))
        return emb__ckpt_corrupt(path, "table \"%.200s\": a bad dynamic table entry", tb->name);
    tb->dynamic = true;
    tb->dyn_step = step;
    const EmbCkptTensor *val = &c->tensors[tb->values];
    static const char *const what[] = {"ids", "last", "sketch"};
    int64_t *const dst[] = {&tb->ids, &tb->last, &tb->sketch};
    for (int k = 0; k < 3; k++) {
        char tname[NAME_BYTES_MAX + 64];
        snprintf(tname, sizeof tname, "%s/dynamic.%s", tb->name, what[k]);
        const int64_t s = emb__ckpt_tensor_find(c, tname);
        if (s < 0 && k == 2)
            break; /* no admission counts */
        const EmbCkptTensor *ts = s >= 0 ? &c->tensors[s] : NULL;
        const bool ok = ts && ts->table < 0 &&
                        (k < 2 ? ts->dtype == EMB_CKPT_I64 && ts->width == 1 &&
                                         ts->ncolumns == val->ncolumns
                               : ts->dtype == EMB_CKPT_U16 &&
                                         ts->ncolumns == 4 * (int64_t)tb->nshards &&
                                         (ts->width & (ts->width - 1)) == 0);
        if (!ok)
            return emb__ckpt_corrupt(path, "dynamic table tensor \"%.200s\" is missing or "
                                     "misshapen", tname);
        c->tensors[s].table = tb - c->tables;
        *dst[k] = s;
    }
    return 0;
}

/* A delta's table (c->delta_base set): its columns and the ids of the rows it holds. */
static int parse_delta_table(EmbCkpt *c, EmbCkptTable *tb, json_t *jt, const char *path)
{
    if (!c->delta_base)
        return 0;
    char tname[NAME_BYTES_MAX + 64];
    snprintf(tname, sizeof tname, "%s/delta.%s", tb->name, tb->dynamic ? "gone" : "ids");
    const int64_t s = emb__ckpt_tensor_find(c, tname);
    const EmbCkptTensor *ts = s >= 0 ? &c->tensors[s] : NULL;
    if (tb->dynamic && ts && ts->table < 0 && ts->dtype == EMB_CKPT_I64 && ts->width == 1) {
        c->tensors[s].table = tb - c->tables; /* a keyed table's tombstones */
        tb->delta_ids = s;
        return 0;
    }
    if (tb->dynamic || emb__json_int(jt, "ncolumns", 0, INT64_MAX, &tb->delta_ncolumns) ||
        !ts || ts->table >= 0 || ts->dtype != EMB_CKPT_I64 || ts->width != 1 ||
        ts->ncolumns != c->tensors[tb->values].ncolumns)
        return emb__ckpt_corrupt(path, "delta table \"%.200s\": its ncolumns or tensor "
                                 "\"%.200s\" is missing or misshapen", tb->name, tname);
    c->tensors[s].table = tb - c->tables;
    tb->delta_ids = s;
    return 0;
}

/* An export's pruned table: its columns and its id remapping "<name>/export.remap" (I32,
   [ncolumns, 1]: each id's row in the values, or -1: pruned; map_tables checks them). */
static int parse_remap(EmbCkpt *c, EmbCkptTable *tb, json_t *jt, const char *path)
{
    char tname[NAME_BYTES_MAX + 64];
    snprintf(tname, sizeof tname, "%s/export.remap", tb->name);
    const int64_t s = emb__ckpt_tensor_find(c, tname);
    if (s < 0)
        return 0;
    const EmbCkptTensor *ts = &c->tensors[s];
    if (c->delta_base || tb->dynamic || tb->step >= 0 ||
        emb__json_int(jt, "ncolumns", 0, INT32_MAX, &tb->delta_ncolumns) || ts->table >= 0 ||
        ts->dtype != EMB_CKPT_I32 || ts->width != 1 || ts->ncolumns != tb->delta_ncolumns)
        return emb__ckpt_corrupt(path, "pruned table \"%.200s\": its ncolumns or tensor "
                                 "\"%.200s\" is missing or misshapen", tb->name, tname);
    c->tensors[s].table = tb - c->tables;
    tb->remap = s;
    return 0;
}

/* A delta's link (its "delta" object, or NULL in a full checkpoint): the file it extends. */
static int parse_delta(EmbCkpt *c, json_t *jd, const char *path)
{
    if (!jd)
        return 0;
    const char *base = emb__json_str(jd, "base");
    if (!json_is_object(jd) || !base || !base[0] || strchr(base, '/') ||
        strcmp(base, ".") == 0 || strcmp(base, "..") == 0 ||
        emb__ckpt_parse_hex16(emb__json_str(jd, "base_xxh3"), &c->delta_base_hash))
        return emb__ckpt_corrupt(path, "its delta link (base, base_xxh3) is invalid");
    c->delta_base = emb__ckpt_strdup(base);
    return c->delta_base ? 0 : emb__fail(EMB_ENOMEM, "out of memory reading checkpoint %s", path);
}

/* A table's "format" (int8 / int4: its values are U8 rows of that layout) or none: makes
   the U8 tensor @v a quantized one of featuresize D. 0, or -1 when they disagree. */
static int quantized_values(EmbCkptTensor *v, const char *format)
{
    if (!format)
        return v->dtype == EMB_CKPT_U8 ? -1 : 0;
    const EmbDtype dt = strcmp(format, "int8") == 0 ? EMB_INT8
                      : strcmp(format, "int4") == 0 ? EMB_INT4 : EMB_F32;
    if (dt == EMB_F32 || v->dtype != EMB_CKPT_U8)
        return -1;
    const int64_t D = dt == EMB_INT8 ? (int64_t)v->width - 8 : ((int64_t)v->width - 4) * 2;
    if (D < 1 || D > INT32_MAX || emb__row_bytes(dt, (int32_t)D) != (size_t)v->width)
        return -1;
    v->dtype = dt;
    v->width = (int32_t)D;
    return 0;
}

/* One entry of "tables": its values tensor and, with a step, its slot tensors. */
static int parse_table(EmbCkpt *c, json_t *jt, const char *path)
{
    const char *name = emb__json_str(jt, "name"), *part = emb__json_str(jt, "partition");
    int64_t nshards, step;
    const int64_t v = name ? emb__ckpt_tensor_find(c, name) : -1;
    if (v >= 0 && quantized_values(&c->tensors[v], emb__json_str(jt, "format")))
        return emb__ckpt_corrupt(path, "table \"%.200s\": its format and its tensor disagree",
                                 name);
    if (v < 0 || c->tensors[v].table >= 0 || !emb__ckpt_is_table_type(c->tensors[v].dtype) ||
        emb__json_int(jt, "nshards", 1, INT32_MAX, &nshards) ||
        emb__json_int(jt, "step", -1, INT64_MAX, &step) || !part)
        return emb__ckpt_corrupt(path, "a table entry has no tensor, a bad shard count or step");
    unsigned p = 0;
    if (strcmp(part, "mod") == 0)
        p = EMB_PARTITION_MOD;
    else if (strcmp(part, "div") == 0)
        p = EMB_PARTITION_DIV;
    else if (strcmp(part, "none") != 0)
        return emb__ckpt_corrupt(path, "table \"%.200s\": unknown partitioning", name);
    int r = emb__grow(&c->tables, c->ntables, &c->cap, sizeof *c->tables, "checkpoint tables");
    char *dup = r ? NULL : emb__ckpt_strdup(name);
    if (!r && !dup)
        r = emb__fail(EMB_ENOMEM, "out of memory reading checkpoint %s", path);
    if (r)
        return r;
    EmbCkptTable *tb = &c->tables[c->ntables];
    *tb = (EmbCkptTable){dup, (int32_t)nshards, p, step, v, {-1, -1}, .ids = -1, .last = -1,
                         .sketch = -1, .delta_ncolumns = c->tensors[v].ncolumns,
                         .delta_ids = -1, .remap = -1};
    c->tensors[v].table = c->ntables++;
    r = parse_dynamic(c, tb, json_object_get(jt, "dynamic"), path);
    r = r ? r : parse_delta_table(c, tb, jt, path);
    r = r ? r : parse_remap(c, tb, jt, path);
    if (r || step < 0)
        return r;
    if (!c->has_opt)
        return emb__ckpt_corrupt(path, "table \"%.200s\" has optimizer state but no "
                                 "optimizer", name);
    EmbOptSlot slots[2];
    const EmbCkptTensor *val = &c->tensors[v];
    const int ns = emb__optimizer_slots(c->opt.kind, val->width, slots);
    for (int k = 0; k < ns; k++) {
        char tname[NAME_BYTES_MAX + 64];
        snprintf(tname, sizeof tname, "%s/%s.%s", name, emb__optimizer_kind_name(c->opt.kind),
                 slots[k].name);
        const int64_t s = emb__ckpt_tensor_find(c, tname);
        const EmbDtype sdt = s < 0 ? EMB_F32 : c->tensors[s].dtype; /* state_dtype */
        if (s < 0 || c->tensors[s].table >= 0 ||
            (sdt != EMB_F32 && sdt != EMB_F16 && sdt != EMB_BF16) ||
            c->tensors[s].ncolumns != val->ncolumns || c->tensors[s].width != slots[k].width)
            return emb__ckpt_corrupt(path, "optimizer state \"%.200s\" is missing or "
                                     "misshapen", tname);
        c->tensors[s].table = tb - c->tables;
        c->tensors[s].slot = k;
        c->opt.state_dtype = sdt; /* the file records it as its state tensors' dtype */
        tb->state[k] = s;
    }
    return 0;
}

/* The tables and the optimizer of the "embtables" metadata @meta. */
static int parse_model(EmbCkpt *c, json_t *meta, const char *path)
{
    int64_t step;
    json_t *tables = json_object_get(meta, "tables"), *opt = json_object_get(meta, "optimizer");
    if (emb__json_int(meta, "global_step", 0, INT64_MAX, &step) || !json_is_array(tables) ||
        (opt && !json_is_object(opt)))
        return emb__ckpt_corrupt(path, "its embtables metadata lacks global_step (>= 0), xxh3 "
                                 "or tables");
    c->global_step = step;
    int r = opt ? parse_optimizer(c, opt, path) : 0;
    r = r ? r : parse_delta(c, json_object_get(meta, "delta"), path);
    for (size_t i = 0; i < json_array_size(tables) && !r; i++)
        r = parse_table(c, json_array_get(tables, i), path);
    for (int64_t i = 0; i < c->ntensors && !r; i++)
        if (c->tensors[i].table < 0)
            r = emb__ckpt_corrupt(path, "tensor \"%.200s\" belongs to no table",
                                  c->tensors[i].name);
    return r;
}

int emb__ckpt_open(EmbCkpt *c, int fd, uint64_t size, const char *path)
{
    json_t *meta = NULL;
    int r = emb__ckpt_read(c, fd, size, path, &meta);
    r = r ? r : parse_model(c, meta, path);
    json_decref(meta);
    if (r)
        emb__ckpt_free(c);
    return r;
}

typedef struct TableDst {
    EmbTable *t;
    size_t off; /* bytes */
} TableDst;

static void *table_dst(void *ctx, int64_t j)
{
    const TableDst *d = ctx;
    return (char *)emb__column(d->t, j, EMB_CTX_UPDATE) + d->off;
}

int emb__ckpt_load(const EmbCkpt *c, int64_t k, int fd, EmbTable *t, int32_t off,
                   unsigned char *buf, const char *path)
{
    TableDst d = {t, (size_t)off * emb__ckpt_el_size(c->tensors[k].dtype)};
    return emb__ckpt_load_fn(c, k, fd, table_dst, &d, buf, path);
}

static void *array_dst(void *ctx, int64_t j)
{
    return (int64_t *)ctx + j;
}

int emb__ckpt_check_rows(const EmbCkpt *c, int fd, unsigned char *buf, const char *path)
{
    int64_t cap = 0, *ids = NULL, *last = NULL;
    int r = 0;
    for (int64_t i = 0; i < c->ntables && !r; i++) {
        const EmbCkptTable *tb = &c->tables[i];
        if (!tb->dynamic)
            continue;
        const int64_t n = c->tensors[tb->ids].ncolumns;
        if (n > cap) {
            free(ids);
            free(last);
            ids = malloc((size_t)n * sizeof *ids);
            last = malloc((size_t)n * sizeof *last);
            cap = ids && last ? n : 0;
            if (!cap)
                r = emb__fail(EMB_ENOMEM, "out of memory reading checkpoint %s", path);
        }
        r = r ? r : emb__ckpt_load_fn(c, tb->ids, fd, array_dst, ids, buf, path);
        r = r ? r : emb__ckpt_load_fn(c, tb->last, fd, array_dst, last, buf, path);
        for (int64_t k = 0; k < n && !r; k++) {
            if (ids[k] < 0 || (k > 0 && ids[k] <= ids[k - 1]))
                r = emb__ckpt_corrupt(path, "dynamic table \"%.200s\": id %lld at row %lld is "
                                      "negative, repeated or out of order", tb->name,
                                      (long long)ids[k], (long long)k);
            else if (last[k] < 0 || last[k] > tb->dyn_step)
                r = emb__ckpt_corrupt(path, "dynamic table \"%.200s\": row %lld was last updated "
                                      "at step %lld, outside [0, %lld]", tb->name, (long long)k,
                                      (long long)last[k], (long long)tb->dyn_step);
        }
    }
    free(ids);
    free(last);
    return r;
}
