/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * model_read.c — the table model read back (model.h; written: model.c): the "embtables"
 * metadata parsed into tables, their optimizer and their tensors, every field checked
 * (files read are untrusted), then the rows loaded through a destination callback.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embtables/partition.h"
#include "store/model.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

#define NAME_BYTES_MAX 4096

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

