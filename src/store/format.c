/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * format.c — writing and parsing checkpoint files (format.h; README "Checkpoint format").
 *
 *   u64 LE  N            header bytes
 *   N bytes              JSON: {"__metadata__": {"format": "embtables",
 *                                                "embtables": "<JSON text, below>",
 *                                                "header_xxh3": "<16 hex>"},
 *                               "<tensor>": {"dtype": "F32", "shape": [ncolumns, width],
 *                                            "data_offsets": [begin, end]}, ...}
 *                        padded with spaces so that the data start at a multiple of 64
 *   data                 the tensors, contiguous, in header order, little-endian
 *
 * The "embtables" text: {"version": 2, "global_step", "tables": [{"name", "nshards",
 * "partition", "step"}], "optimizer": {"kind", hyper-parameters} (when saved with one),
 * "xxh3": {"<tensor>": "<16 hex>"}}. header_xxh3 is the XXH3-64 of the N header bytes
 * with its own 16 digits written as '0'. Slot tensors are `<table>/<kind>.<slot>`.
 *
 * Checksums: XXH3-64 (Debian's libxxhash) rather than zlib's CRC-32: it hashes at memory
 * speed (1.2-2.0 GB/s on the loaded 2-core CI machine, faster than its memcpy; CRC-32 0.44-
 * 0.53 GB/s, so a restore's verification pass would take 3-4x longer) and 64 bits make an
 * undetected change of a large file negligible.
 *
 * Reading trusts nothing: the header length is bounded by the file and by
 * EMB_CKPT_HEADER_MAX, the JSON is parsed by jansson, every shape, offset and name is
 * checked (tensors contiguous, covering the data exactly, the file's size exactly), and
 * the header's checksum is verified before any of its content is believed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

/* The fuzzing build (tests/fuzz/, -Dfuzzing=enabled) compiles a copy of the library with
 * FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, whose checksums always match, so that the
 * fuzzer reaches the parser behind them. Never defined in a library that is installed. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define CHECKSUM_OK(got, want) ((void)(got), (void)(want), 1)
#else
#define CHECKSUM_OK(got, want) ((got) == (want))
#endif

#include "embtables/partition.h"
#include "store/format.h"
#include "tables/dynamic_impl.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

#define OLD_MAGIC "EMBCKPT\1"
#define HH_KEY "\"header_xxh3\":\""
#define NAME_BYTES_MAX 4096

void emb__ckpt_free(EmbCkpt *c)
{
    for (int64_t i = 0; i < c->ntensors; i++)
        free(c->tensors[i].name);
    for (int64_t i = 0; i < c->ntables; i++) {
        free(c->tables[i].name);
        free(c->tables[i].order);
        free(c->tables[i].oshard);
    }
    free(c->tensors);
    free(c->tables);
    *c = (EmbCkpt){0};
}

const char *emb__ckpt_dtype_code(EmbDtype dt)
{
    return dt == EMB_F16 ? "F16" : dt == EMB_BF16 ? "BF16" : dt == EMB_CKPT_I64 ? "I64"
         : dt == EMB_CKPT_U16 ? "U16" : emb__dtype_quantized(dt) || dt == EMB_CKPT_U8 ? "U8"
         : "F32";
}

size_t emb__ckpt_el_size(EmbDtype dt)
{
    if (emb__dtype_quantized(dt) || dt == EMB_CKPT_U8)
        return 1;
    return dt == EMB_CKPT_I64 ? 8 : dt == EMB_CKPT_U16 ? 2 : emb_dtype_size(dt);
}

size_t emb__ckpt_row_bytes(EmbDtype dt, int32_t width)
{
    return emb__dtype_quantized(dt) ? emb__row_bytes(dt, width)
                                    : (size_t)width * emb__ckpt_el_size(dt);
}

int64_t emb__ckpt_file_cols(EmbDtype dt, int32_t width)
{
    return emb__dtype_quantized(dt) ? (int64_t)emb__row_bytes(dt, width) : width;
}

bool emb__ckpt_is_float(EmbDtype dt)
{
    return dt == EMB_F32 || dt == EMB_F16 || dt == EMB_BF16;
}

bool emb__ckpt_is_table_type(EmbDtype dt)
{
    return emb__ckpt_is_float(dt) || emb__dtype_quantized(dt);
}

static int dtype_parse(const char *s, EmbDtype *dt)
{
    static const struct {
        const char *name;
        EmbDtype dt;
    } map[] = {{"F32", EMB_F32}, {"F16", EMB_F16}, {"BF16", EMB_BF16}, {"I64", EMB_CKPT_I64},
               {"U16", EMB_CKPT_U16}, {"U8", EMB_CKPT_U8}};
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strcmp(s, map[i].name) == 0) {
            *dt = map[i].dt;
            return 0;
        }
    return -1;
}

static const char *partition_name(unsigned p)
{
    return p == EMB_PARTITION_MOD ? "mod" : p == EMB_PARTITION_DIV ? "div" : "none";
}

static int64_t tensor_find(const EmbCkpt *c, const char *name)
{
    for (int64_t i = 0; i < c->ntensors; i++)
        if (strcmp(c->tensors[i].name, name) == 0)
            return i;
    return -1;
}

static char *dup_str(const char *s)
{
    const size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* Appends a tensor named @name (taken: freed on failure). */
static int tensor_push(EmbCkpt *c, char *name, const EmbCkptTensor *proto)
{
    int r = name ? emb__grow(&c->tensors, c->ntensors, &c->tcap, sizeof *c->tensors,
                             "checkpoint tensors")
                 : emb__fail(EMB_ENOMEM, "out of memory for a tensor name");
    if (r) {
        free(name);
        return r;
    }
    c->tensors[c->ntensors] = *proto;
    c->tensors[c->ntensors++].name = name;
    return 0;
}

/* ---- writing ----------------------------------------------------------------------- */

/* The tensor of table @name: its values (@slot NULL) or `<name>/<kind>.<slot>`. */
static void tensor_name(char *out, size_t cap, const char *name, const EmbOptimizer *opt,
                        const char *slot)
{
    if (slot)
        snprintf(out, cap, "%s/%s.%s", name, emb__optimizer_kind_name(opt->cfg.kind), slot);
    else
        snprintf(out, cap, "%s", name);
}

/* The tensors of a table saved as @name: protos[k] and their names (names[k], NAME_BYTES_MAX
   each); returns their number (at most 6). */
static int table_tensors(const EmbTable *t, const char *name, const EmbOptimizer *opt,
                         const EmbOptState *st, EmbCkptTensor *protos,
                         char (*names)[NAME_BYTES_MAX])
{
    const bool dyn = emb__is_dynamic_any(t);
    EmbOptSlot slots[2];
    const int nslots = st ? emb__optimizer_slots(opt->cfg.kind, t->featuresize, slots) : 0;
    int n = 0;
    for (int k = -1; k < nslots; k++, n++) {
        tensor_name(names[n], NAME_BYTES_MAX, name, opt, k < 0 ? NULL : slots[k].name);
        protos[n] = (EmbCkptTensor){
                .dtype = k < 0 ? t->dtype : EMB_F32, .ncolumns = t->ncolumns, /* quantized:
                                                   its rows' bytes as U8 (header_text) */
                .width = k < 0 ? t->featuresize : slots[k].width, .slot = k,
                .src = k < 0 || dyn ? t : st->slot, .src_off = k < 0 ? 0 : slots[k].off,
                .src_kind = !dyn ? EMB_CKPT_SRC_TABLE
                          : k < 0 ? EMB_CKPT_SRC_DYN_ROWS : EMB_CKPT_SRC_DYN_STATE};
    }
    if (!dyn)
        return n;
    int64_t width;
    const int32_t ns = emb__is_dynamic(t) ? 1 : emb_table_nshards(t);
    const bool sketch = emb__dynamic_sketch(emb__dynamic_home(t, 0), &width) != NULL;
    static const char *const what[] = {"ids", "last", "sketch"};
    for (int k = 0; k < 2 + sketch; k++, n++) {
        snprintf(names[n], NAME_BYTES_MAX, "%s/dynamic.%s", name, what[k]);
        protos[n] = (EmbCkptTensor){
                .dtype = k < 2 ? EMB_CKPT_I64 : EMB_CKPT_U16, .ncolumns = k < 2 ? 0 : 4 * ns,
                .width = k < 2 ? 1 : (int32_t)width, .slot = -1, .src = t,
                .src_kind = k == 0 ? EMB_CKPT_SRC_DYN_IDS : k == 1 ? EMB_CKPT_SRC_DYN_LAST
                                                                  : EMB_CKPT_SRC_DYN_SKETCH};
    }
    return n;
}

int emb__ckpt_add(EmbCkpt *c, const char *name, const EmbTable *t, const EmbOptimizer *opt)
{
    if (!name)
        name = t->name;
    if (t->kind == EMB_KIND_DYNAMIC_STATE)
        return emb__fail(EMB_EINVAL, "%s is the optimizer state of a dynamic table: save the "
                         "table with the optimizer (EmbSaverOptions.optimizer)",
                         emb__table_label(t));
    if (emb__is_dynamic_part(t)) { /* the shards' sketches alike, to be saved as one */
        int64_t w0, w;
        const bool s0 = emb__dynamic_sketch(emb_table_shard(t, 0), &w0) != NULL;
        for (int32_t i = 1; i < emb_table_nshards(t); i++)
            if ((emb__dynamic_sketch(emb_table_shard(t, i), &w) != NULL) != s0 || w != w0)
                return emb__fail(EMB_ENOTSUP, "%s: its dynamic shards count admissions in "
                                 "sketches of different widths, which a checkpoint cannot "
                                 "hold", emb__table_label(t));
    }
    if (!name[0] || strlen(name) > NAME_BYTES_MAX - 64)
        return emb__fail(EMB_EINVAL, "a table saved in a checkpoint needs a name (1 to %d "
                         "bytes): %s has none", NAME_BYTES_MAX - 64, emb__table_label(t));
    const EmbOptState *st = opt ? emb__optimizer_find(opt, t) : NULL;
    EmbCkptTensor protos[6];
    char (*names)[NAME_BYTES_MAX] = malloc(6 * sizeof *names);
    if (!names)
        return emb__fail(EMB_ENOMEM, "out of memory for tensor names");
    const int nt = table_tensors(t, name, opt, st, protos, names);
    int r = 0;
    /* every name first: nothing is added when one exists */
    for (int k = 0; k < nt && !r; k++)
        for (int j = 0; j <= k && !r; j++)
            if ((j < k && strcmp(names[j], names[k]) == 0) || tensor_find(c, names[k]) >= 0 ||
                strcmp(names[k], "__metadata__") == 0)
                r = emb__fail(EMB_EINVAL, "checkpoint tensor name \"%.200s\" is used twice",
                              names[k]);
    const bool dyn = emb__is_dynamic_any(t);
    int64_t *order = NULL, nrows = t->ncolumns;
    int32_t *oshard = NULL;
    r = r || !dyn ? r : emb__dynamic_sorted_rows(t, &order, &oshard, &nrows);
    r = r ? r : emb__grow(&c->tables, c->ntables, &c->cap, sizeof *c->tables, "checkpoint tables");
    char *tabname = r ? NULL : dup_str(name);
    if (!r && !tabname)
        r = emb__fail(EMB_ENOMEM, "out of memory for a table name");
    if (r) {
        free(order);
        free(oshard);
        free(names);
        return r;
    }
    EmbCkptTable *tb = &c->tables[c->ntables];
    *tb = (EmbCkptTable){tabname, EMB_MAX(emb_table_nshards(t), 1), emb_table_partition_mode(t),
                         st ? st->step : -1, c->ntensors, {-1, -1}, .dynamic = dyn,
                         .dyn_step = emb_table_dynamic_step(t), .ids = -1, .last = -1,
                         .sketch = -1, .order = order, .oshard = oshard};
    const int64_t first = c->ntensors;
    for (int k = 0; k < nt && !r; k++) {
        EmbCkptTensor proto = protos[k];
        proto.table = c->ntables;
        proto.order = order;
        proto.oshard = oshard;
        if (proto.src_kind != EMB_CKPT_SRC_DYN_SKETCH && dyn)
            proto.ncolumns = nrows;
        if (proto.slot >= 0)
            tb->state[proto.slot] = c->ntensors;
        else if (proto.src_kind == EMB_CKPT_SRC_DYN_IDS)
            tb->ids = c->ntensors;
        else if (proto.src_kind == EMB_CKPT_SRC_DYN_LAST)
            tb->last = c->ntensors;
        else if (proto.src_kind == EMB_CKPT_SRC_DYN_SKETCH)
            tb->sketch = c->ntensors;
        r = tensor_push(c, dup_str(names[k]), &proto);
    }
    free(names);
    if (r) { /* roll back */
        while (c->ntensors > first)
            free(c->tensors[--c->ntensors].name);
        free(tabname);
        free(order);
        free(oshard);
        return r;
    }
    c->ntables++;
    return 0;
}

/* Sets o[key] = v (v may be NULL after a failed allocation); records failure in *err. */
static void set(json_t *o, const char *key, json_t *v, int *err)
{
    if (!o || json_object_set_new(o, key, v) != 0)
        *err = 1;
}

static void hex16(char out[17], uint64_t h)
{
    snprintf(out, 17, "%016" PRIx64, h);
}

static json_t *optimizer_json(const EmbOptimizerConfig *o, int *err)
{
    json_t *j = json_object();
    set(j, "kind", json_string(emb__optimizer_kind_name(o->kind)), err);
    set(j, "lr", json_real(o->lr), err);
    set(j, "eps", json_real(o->eps), err);
    set(j, "initial_accumulator", json_real(o->initial_accumulator), err);
    set(j, "lr_power", json_real(o->lr_power), err);
    set(j, "l1", json_real(o->l1), err);
    set(j, "l2", json_real(o->l2), err);
    set(j, "beta1", json_real(o->beta1), err);
    set(j, "beta2", json_real(o->beta2), err);
    set(j, "bias_correction", json_integer(o->bias_correction), err);
    set(j, "weight_decay", json_real(o->weight_decay), err);
    set(j, "weight_decay_mode",
        json_string(o->weight_decay_mode == EMB_DECAY_DECOUPLED ? "decoupled" : "l2"), err);
    return j;
}

/* The "embtables" metadata text. */
static char *meta_text(const EmbCkpt *c, int *err)
{
    json_t *m = json_object(), *tables = json_array(), *sums = json_object();
    set(m, "version", json_integer(EMB_CKPT_VERSION), err);
    set(m, "global_step", json_integer(c->global_step), err);
    for (int64_t i = 0; i < c->ntables; i++) {
        const EmbCkptTable *t = &c->tables[i];
        json_t *jt = json_object();
        set(jt, "name", json_string(t->name), err);
        set(jt, "nshards", json_integer(t->nshards), err);
        set(jt, "partition", json_string(partition_name(t->partition)), err);
        set(jt, "step", json_integer(t->step), err);
        const EmbDtype vd = c->tensors[t->values].dtype;
        if (emb__dtype_quantized(vd)) /* its U8 tensor holds rows of this format */
            set(jt, "format", json_string(emb_dtype_name(vd)), err);
        if (t->dynamic) {
            json_t *jd = json_object();
            set(jd, "step", json_integer(t->dyn_step), err);
            set(jt, "dynamic", jd, err);
        }
        if (!tables || json_array_append_new(tables, jt) != 0)
            *err = 1;
    }
    set(m, "tables", tables, err);
    if (c->has_opt)
        set(m, "optimizer", optimizer_json(&c->opt, err), err);
    char hex[17];
    for (int64_t i = 0; i < c->ntensors; i++) {
        hex16(hex, c->tensors[i].hash);
        set(sums, c->tensors[i].name, json_string(hex), err);
    }
    set(m, "xxh3", sums, err);
    char *text = *err ? NULL : json_dumps(m, JSON_COMPACT);
    json_decref(m);
    if (!text)
        *err = 1;
    return text;
}

/* The whole header (padded; header_xxh3 as zeros) into a malloc'ed buffer. */
static char *header_text(const EmbCkpt *c, size_t *len)
{
    int err = 0;
    char *meta = meta_text(c, &err);
    json_t *root = json_object(), *md = json_object();
    set(md, "format", json_string("embtables"), &err);
    set(md, "embtables", meta ? json_string(meta) : NULL, &err);
    set(md, "header_xxh3", json_string("0000000000000000"), &err);
    set(root, "__metadata__", md, &err);
    free(meta);
    for (int64_t i = 0; i < c->ntensors; i++) {
        const EmbCkptTensor *t = &c->tensors[i];
        json_t *jt = json_object();
        set(jt, "dtype", json_string(emb__ckpt_dtype_code(t->dtype)), &err);
        set(jt, "shape", json_pack("[II]", (json_int_t)t->ncolumns,
                                   (json_int_t)emb__ckpt_file_cols(t->dtype, t->width)), &err);
        set(jt, "data_offsets", json_pack("[II]", (json_int_t)t->begin, (json_int_t)t->end),
            &err);
        set(root, t->name, jt, &err);
    }
    char *text = err ? NULL : json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!text)
        return NULL;
    const size_t n = strlen(text);
    const size_t padded = (8 + n + EMB_CKPT_ALIGN - 1) / EMB_CKPT_ALIGN * EMB_CKPT_ALIGN - 8;
    char *buf = realloc(text, padded + 1);
    if (!buf) {
        free(text);
        return NULL;
    }
    memset(buf + n, ' ', padded - n);
    buf[padded] = '\0';
    *len = padded;
    return buf;
}

/* Where the 16 digits of header_xxh3 are in @h (exactly one occurrence), or NULL. */
static char *header_hash_digits(char *h, size_t n)
{
    const size_t klen = strlen(HH_KEY);
    char *found = NULL;
    for (char *p = h; (size_t)(p - h) + klen + 16 <= n;) {
        char *q = memchr(p, '"', n - (size_t)(p - h));
        if (!q || (size_t)(q - h) + klen + 16 > n)
            break;
        if (memcmp(q, HH_KEY, klen) == 0) {
            if (found)
                return NULL;
            found = q + klen;
        }
        p = q + 1;
    }
    return found;
}

static uint64_t header_hash(const char *h, size_t n, const char *digits)
{
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, h, (size_t)(digits - h));
    XXH3_64bits_update(&st, "0000000000000000", 16);
    XXH3_64bits_update(&st, digits + 16, n - (size_t)(digits - h) - 16);
    return XXH3_64bits_digest(&st);
}

static int write_all(int fd, const void *p, size_t n, uint64_t off)
{
    const char *b = p;
    while (n > 0) {
        const ssize_t w = pwrite(fd, b, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : EIO;
        b += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

static int read_all(int fd, void *p, size_t n, uint64_t off)
{
    char *b = p;
    while (n > 0) {
        const ssize_t r = pread(fd, b, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? errno : -1; /* -1: end of file */
        b += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

/* The bytes of column @col of tensor @t (@tmp: room for an int64). */
static const char *src_column(const EmbCkptTensor *t, int64_t col, size_t el, int64_t *tmp)
{
    /* the dynamic table of row col: the table, or its shard when partitioned */
    const EmbTable *h = t->oshard && t->src_kind != EMB_CKPT_SRC_DYN_SKETCH
                                ? emb_table_shard(t->src, t->oshard[col]) : t->src;
    switch (t->src_kind) {
    case EMB_CKPT_SRC_DYN_ROWS: return emb__dynamic_row(h, t->order[col]);
    case EMB_CKPT_SRC_DYN_STATE:
        return (const char *)emb__dynamic_state_row(h, t->order[col]) + (size_t)t->src_off * el;
    case EMB_CKPT_SRC_DYN_IDS:
        *tmp = emb__dynamic_row_id(h, t->order[col]);
        return (const char *)tmp;
    case EMB_CKPT_SRC_DYN_LAST:
        *tmp = emb__dynamic_row_last(h, t->order[col]);
        return (const char *)tmp;
    case EMB_CKPT_SRC_DYN_SKETCH: { /* shard col / 4's row col % 4 */
        int64_t w;
        const EmbTable *s = emb__is_dynamic(t->src) ? t->src : emb_table_shard(t->src, (int32_t)(col / 4));
        return (const char *)(emb__dynamic_sketch(s, &w) + (col % 4) * w);
    }
    default:
        return (const char *)emb__column(t->src, col, EMB_CTX_NONE) + (size_t)t->src_off * el;
    }
}

/* Writes tensor @t's bytes at file offset @off through @buf, hashing them. */
static int write_tensor(EmbCkptTensor *t, int fd, uint64_t off, unsigned char *buf)
{
    const size_t el = emb__ckpt_el_size(t->dtype);
    const size_t cb = emb__ckpt_row_bytes(t->dtype, t->width);
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    size_t fill = 0;
    int e = 0;
    for (int64_t col = 0; col < t->ncolumns && !e; col++) {
        int64_t tmp;
        const char *src = src_column(t, col, el, &tmp);
        if (fill + cb > EMB_CKPT_CHUNK && fill > 0) {
            XXH3_64bits_update(&st, buf, fill);
            e = write_all(fd, buf, fill, off);
            off += fill;
            fill = 0;
        }
        if (cb > EMB_CKPT_CHUNK) {
            XXH3_64bits_update(&st, src, cb);
            e = e ? e : write_all(fd, src, cb, off);
            off += cb;
        } else {
            memcpy(buf + fill, src, cb);
            fill += cb;
        }
    }
    if (!e && fill > 0) {
        XXH3_64bits_update(&st, buf, fill);
        e = write_all(fd, buf, fill, off);
    }
    t->hash = XXH3_64bits_digest(&st);
    return e;
}

int emb__ckpt_write(EmbCkpt *c, int fd, const char *path)
{
    /* the 8-byte tensors first, then the 4-byte, 2-byte and byte ones: each aligned for its
       type */
    uint64_t pos = 0;
    for (size_t el = 8; el >= 1; el /= 2)
        for (int64_t i = 0; i < c->ntensors; i++) {
            EmbCkptTensor *t = &c->tensors[i];
            if (emb__ckpt_el_size(t->dtype) != el)
                continue;
            t->begin = pos;
            t->end = pos += (uint64_t)t->ncolumns * emb__ckpt_row_bytes(t->dtype, t->width);
            t->hash = 0;
        }
    size_t n = 0, n2 = 0;
    char *h = header_text(c, &n);
    if (!h)
        return emb__fail(EMB_ENOMEM, "out of memory for a checkpoint header");
    unsigned char *buf = malloc(EMB_CKPT_CHUNK);
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)((uint64_t)n >> (8 * i));
    int e = buf ? 0 : ENOMEM;
    e = e ? e : write_all(fd, len, 8, 0);
    e = e ? e : write_all(fd, h, n, 8); /* placeholder: the sizes are final, hashes not */
    for (int64_t i = 0; i < c->ntensors && !e; i++)
        e = write_tensor(&c->tensors[i], fd, 8 + n + c->tensors[i].begin, buf);
    free(buf);
    free(h);
    h = e ? NULL : header_text(c, &n2);
    char *digits = h && n2 == n ? header_hash_digits(h, n) : NULL;
    if (!e && !digits)
        e = h ? EINVAL : ENOMEM;
    if (!e) {
        char hex[17];
        hex16(hex, header_hash(h, n, digits));
        memcpy(digits, hex, 16);
        e = write_all(fd, h, n, 8);
    }
    free(h);
    if (e == ENOMEM)
        return emb__fail(EMB_ENOMEM, "out of memory writing checkpoint %s", path);
    if (e)
        return emb__fail(EMB_EIO, "cannot write checkpoint %s: %s", path, strerror(e));
    c->data_start = 8 + n;
    c->data_size = pos;
    return 0;
}

/* ---- reading ----------------------------------------------------------------------- */

static int corrupt(const char *path, const char *fmt, ...) EMB_PRINTF(2, 3);
static int corrupt(const char *path, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return emb__fail(EMB_ECORRUPT, "checkpoint %s is corrupt or truncated: %s", path, msg);
}

static int io_error(const char *path, int e)
{
    if (e == -1)
        return corrupt(path, "it ends early");
    return emb__fail(EMB_EIO, "cannot read checkpoint %s: %s", path, strerror(e));
}

/* An integer member in [lo, hi]. */
static int get_int(json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return -1;
    *out = json_integer_value(v);
    return 0;
}

/* A string member without NUL bytes, or NULL. */
static const char *get_str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
        return NULL;
    return json_string_value(v);
}

static int parse_hex16(const char *s, uint64_t *out)
{
    if (!s || strlen(s) != 16 || strspn(s, "0123456789abcdef") != 16)
        return -1;
    *out = strtoull(s, NULL, 16);
    return 0;
}

/* One tensor entry of the header. */
static int parse_tensor(EmbCkpt *c, const char *name, json_t *v, json_t *sums, uint64_t size,
                        const char *path)
{
    json_t *shape = json_object_get(v, "shape"), *offs = json_object_get(v, "data_offsets");
    const char *dt = get_str(v, "dtype");
    EmbCkptTensor t = {.table = -1, .slot = -1};
    if (!json_is_object(v) || json_object_size(v) != 3 || !dt || dtype_parse(dt, &t.dtype))
        return corrupt(path, "tensor \"%.200s\" is not an F32, F16, BF16, I64 or U16 tensor",
                       name);
    json_t *s0 = json_array_get(shape, 0), *s1 = json_array_get(shape, 1);
    json_t *o0 = json_array_get(offs, 0), *o1 = json_array_get(offs, 1);
    if (json_array_size(shape) != 2 || json_array_size(offs) != 2 || !json_is_integer(s0) ||
        !json_is_integer(s1) || !json_is_integer(o0) || !json_is_integer(o1))
        return corrupt(path, "tensor \"%.200s\" has no [rows, columns] shape or offsets",
                       name);
    const json_int_t rows = json_integer_value(s0), cols = json_integer_value(s1);
    const json_int_t b = json_integer_value(o0), e = json_integer_value(o1);
    const uint64_t el = emb__ckpt_el_size(t.dtype);
    if (rows < 0 || cols < 1 || cols > INT32_MAX || b < 0 || e < b || (uint64_t)e > size ||
        (uint64_t)rows > size / (uint64_t)cols / el + 1 ||
        (uint64_t)rows * (uint64_t)cols * el != (uint64_t)(e - b))
        return corrupt(path, "tensor \"%.200s\": shape and offsets disagree", name);
    t.ncolumns = rows;
    t.width = (int32_t)cols;
    t.begin = (uint64_t)b;
    t.end = (uint64_t)e;
    if (strlen(name) >= NAME_BYTES_MAX || parse_hex16(get_str(sums, name), &t.hash))
        return corrupt(path, "tensor \"%.200s\" has no checksum", name);
    return tensor_push(c, dup_str(name), &t);
}

static int cmp_begin(const void *a, const void *b)
{
    const EmbCkptTensor *x = *(const EmbCkptTensor *const *)a;
    const EmbCkptTensor *y = *(const EmbCkptTensor *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

/* The tensors tile [0, data_size) exactly and the file ends there. */
static int check_layout(EmbCkpt *c, uint64_t size, const char *path)
{
    const EmbCkptTensor **order = malloc((size_t)EMB_MAX(c->ntensors, 1) * sizeof *order);
    if (!order)
        return emb__fail(EMB_ENOMEM, "out of memory reading checkpoint %s", path);
    for (int64_t i = 0; i < c->ntensors; i++)
        order[i] = &c->tensors[i];
    qsort(order, (size_t)c->ntensors, sizeof *order, cmp_begin);
    uint64_t pos = 0;
    int e = 0;
    for (int64_t i = 0; i < c->ntensors && !e; i++) {
        if (order[i]->begin != pos)
            e = corrupt(path, "tensor \"%.200s\" overlaps another or leaves a hole",
                        order[i]->name);
        pos = order[i]->end;
    }
    free(order);
    if (!e && c->data_start + pos != size)
        e = corrupt(path, "the file has %llu bytes, its header describes %llu",
                    (unsigned long long)size, (unsigned long long)(c->data_start + pos));
    c->data_size = pos;
    return e;
}

static int parse_optimizer(EmbCkpt *c, json_t *o, const char *path)
{
    const char *kind = get_str(o, "kind");
    int k = 0;
    while (k <= EMB_OPT_ADAM && (!kind || strcmp(kind, emb__optimizer_kind_name(k)) != 0))
        k++;
    if (k > EMB_OPT_ADAM)
        return corrupt(path, "unknown optimizer kind");
    EmbOptimizerConfig *cfg = &c->opt;
    *cfg = emb_optimizer_defaults((EmbOptimizerKind)k, 1.0f);
    static const char *const keys[] = {"lr", "eps", "initial_accumulator", "lr_power", "l1",
                                       "l2", "beta1", "beta2", "weight_decay"};
    float *const dst[] = {&cfg->lr, &cfg->eps, &cfg->initial_accumulator, &cfg->lr_power,
                          &cfg->l1, &cfg->l2, &cfg->beta1, &cfg->beta2, &cfg->weight_decay};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        json_t *v = json_object_get(o, keys[i]);
        if (!json_is_number(v))
            return corrupt(path, "optimizer %s is not a number", keys[i]);
        *dst[i] = (float)json_number_value(v);
    }
    int64_t bc;
    const char *mode = get_str(o, "weight_decay_mode");
    if (get_int(o, "bias_correction", 0, 1, &bc) || !mode ||
        (strcmp(mode, "l2") != 0 && strcmp(mode, "decoupled") != 0))
        return corrupt(path, "optimizer bias_correction or weight_decay_mode is invalid");
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
    if (!json_is_object(jd) || get_int(jd, "step", 0, INT64_MAX, &step) ||
        (tb->nshards != 1 && tb->partition != EMB_PARTITION_MOD))
        return corrupt(path, "table \"%.200s\": a bad dynamic table entry", tb->name);
    tb->dynamic = true;
    tb->dyn_step = step;
    const EmbCkptTensor *val = &c->tensors[tb->values];
    static const char *const what[] = {"ids", "last", "sketch"};
    int64_t *const dst[] = {&tb->ids, &tb->last, &tb->sketch};
    for (int k = 0; k < 3; k++) {
        char tname[NAME_BYTES_MAX + 64];
        snprintf(tname, sizeof tname, "%s/dynamic.%s", tb->name, what[k]);
        const int64_t s = tensor_find(c, tname);
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
            return corrupt(path, "dynamic table tensor \"%.200s\" is missing or misshapen",
                           tname);
        c->tensors[s].table = tb - c->tables;
        *dst[k] = s;
    }
    return 0;
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
    const char *name = get_str(jt, "name"), *part = get_str(jt, "partition");
    int64_t nshards, step;
    const int64_t v = name ? tensor_find(c, name) : -1;
    if (v >= 0 && quantized_values(&c->tensors[v], get_str(jt, "format")))
        return corrupt(path, "table \"%.200s\": its format and its tensor disagree", name);
    if (v < 0 || c->tensors[v].table >= 0 || !emb__ckpt_is_table_type(c->tensors[v].dtype) ||
        get_int(jt, "nshards", 1, INT32_MAX, &nshards) ||
        get_int(jt, "step", -1, INT64_MAX, &step) || !part)
        return corrupt(path, "a table entry has no tensor, a bad shard count or step");
    unsigned p = 0;
    if (strcmp(part, "mod") == 0)
        p = EMB_PARTITION_MOD;
    else if (strcmp(part, "div") == 0)
        p = EMB_PARTITION_DIV;
    else if (strcmp(part, "none") != 0)
        return corrupt(path, "table \"%.200s\": unknown partitioning", name);
    int r = emb__grow(&c->tables, c->ntables, &c->cap, sizeof *c->tables, "checkpoint tables");
    char *dup = r ? NULL : dup_str(name);
    if (!r && !dup)
        r = emb__fail(EMB_ENOMEM, "out of memory reading checkpoint %s", path);
    if (r)
        return r;
    EmbCkptTable *tb = &c->tables[c->ntables];
    *tb = (EmbCkptTable){dup, (int32_t)nshards, p, step, v, {-1, -1}, .ids = -1, .last = -1,
                         .sketch = -1};
    c->tensors[v].table = c->ntables++;
    r = parse_dynamic(c, tb, json_object_get(jt, "dynamic"), path);
    if (r || step < 0)
        return r;
    if (!c->has_opt)
        return corrupt(path, "table \"%.200s\" has optimizer state but no optimizer", name);
    EmbOptSlot slots[2];
    const EmbCkptTensor *val = &c->tensors[v];
    const int ns = emb__optimizer_slots(c->opt.kind, val->width, slots);
    for (int k = 0; k < ns; k++) {
        char tname[NAME_BYTES_MAX + 64];
        snprintf(tname, sizeof tname, "%s/%s.%s", name, emb__optimizer_kind_name(c->opt.kind),
                 slots[k].name);
        const int64_t s = tensor_find(c, tname);
        if (s < 0 || c->tensors[s].table >= 0 || c->tensors[s].dtype != EMB_F32 ||
            c->tensors[s].ncolumns != val->ncolumns || c->tensors[s].width != slots[k].width)
            return corrupt(path, "optimizer state \"%.200s\" is missing or misshapen", tname);
        c->tensors[s].table = tb - c->tables;
        c->tensors[s].slot = k;
        tb->state[k] = s;
    }
    return 0;
}

/* The "embtables" metadata text and the tensors. */
static int parse_body(EmbCkpt *c, json_t *root, json_t *meta, uint64_t size, const char *path)
{
    int64_t version, step;
    json_t *sums = json_object_get(meta, "xxh3"), *tables = json_object_get(meta, "tables");
    json_t *opt = json_object_get(meta, "optimizer");
    if (!json_is_object(meta) || get_int(meta, "version", 0, INT32_MAX, &version))
        return corrupt(path, "its embtables metadata is not a JSON object with a version");
    if (version != EMB_CKPT_VERSION)
        return emb__fail(EMB_ENOTSUP, "checkpoint %s has format version %lld; this library "
                         "reads version %d", path, (long long)version, EMB_CKPT_VERSION);
    if (get_int(meta, "global_step", 0, INT64_MAX, &step) || !json_is_object(sums) ||
        !json_is_array(tables) || (opt && !json_is_object(opt)))
        return corrupt(path, "its embtables metadata lacks global_step (>= 0), xxh3 or "
                       "tables");
    c->global_step = step;
    int r = opt ? parse_optimizer(c, opt, path) : 0;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (!r && strcmp(key, "__metadata__") != 0)
            r = parse_tensor(c, key, v, sums, size, path);
    }
    r = r ? r : check_layout(c, size, path);
    for (size_t i = 0; i < json_array_size(tables) && !r; i++)
        r = parse_table(c, json_array_get(tables, i), path);
    for (int64_t i = 0; i < c->ntensors && !r; i++)
        if (c->tensors[i].table < 0)
            r = corrupt(path, "tensor \"%.200s\" belongs to no table", c->tensors[i].name);
    return r;
}

/* The header's own checksum (taken from the raw text: any damage to the header is
 * corruption, the key's included), then the metadata. */
static int parse_header(EmbCkpt *c, char *h, size_t n, uint64_t size, const char *path)
{
    const char *digits = header_hash_digits(h, n);
    char hex[17] = "";
    uint64_t want;
    if (digits)
        memcpy(hex, digits, 16);
    if (!digits && !memmem(h, n, "embtables", 9))
        return emb__fail(EMB_ENOTSUP, "%s is a safetensors file that embtables did not write "
                         "(no __metadata__ format \"embtables\"); only embtables checkpoints "
                         "are restored", path);
    if (!digits || parse_hex16(hex, &want) || !CHECKSUM_OK(header_hash(h, n, digits), want))
        return corrupt(path, "header checksum mismatch");
    json_error_t jerr;
    json_t *root = json_loadb(h, n, JSON_REJECT_DUPLICATES, &jerr);
    json_t *md = json_object_get(root, "__metadata__");
    const char *fmt = get_str(md, "format"), *text = get_str(md, "embtables");
    json_t *meta = text ? json_loads(text, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    int r = 0;
    if (!json_is_object(root) || !fmt || strcmp(fmt, "embtables") != 0 || !meta)
        r = corrupt(path, "its header is not an embtables JSON header (%s)", jerr.text);
    else
        r = parse_body(c, root, meta, size, path);
    json_decref(meta);
    json_decref(root);
    return r;
}

int emb__ckpt_read(EmbCkpt *c, int fd, uint64_t size, const char *path)
{
    unsigned char len[8];
    if (size < 8)
        return corrupt(path, "%llu bytes are too few for a safetensors file",
                       (unsigned long long)size);
    int e = read_all(fd, len, 8, 0);
    if (e)
        return io_error(path, e);
    if (memcmp(len, OLD_MAGIC, 8) == 0)
        return emb__fail(EMB_ENOTSUP, "checkpoint %s is in the embtables 1 format (\"EMBCKPT\", "
                         "before safetensors), which this version no longer reads: restore it "
                         "with the version that wrote it and save it again", path);
    uint64_t n = 0;
    for (int i = 0; i < 8; i++)
        n |= (uint64_t)len[i] << (8 * i);
    if (n < 2 || n > size - 8 || n > EMB_CKPT_HEADER_MAX)
        return corrupt(path, "a header of %llu bytes in a file of %llu",
                       (unsigned long long)n, (unsigned long long)size);
    char *h = malloc((size_t)n);
    if (!h)
        return emb__fail(EMB_ENOMEM, "out of memory for the header of checkpoint %s", path);
    e = read_all(fd, h, (size_t)n, 8);
    c->data_start = 8 + n;
    e = e ? io_error(path, e) : parse_header(c, h, (size_t)n, size, path);
    free(h);
    if (e)
        emb__ckpt_free(c);
    return e;
}

int emb__ckpt_verify(const EmbCkpt *c, int fd, const unsigned char *map, const char *path)
{
    unsigned char *buf = map ? NULL : malloc(EMB_CKPT_CHUNK);
    if (!map && !buf)
        return emb__fail(EMB_ENOMEM, "out of memory reading checkpoint %s", path);
    int e = 0;
    for (int64_t i = 0; i < c->ntensors && !e; i++) {
        const EmbCkptTensor *t = &c->tensors[i];
        XXH3_state_t st;
        XXH3_64bits_reset(&st);
        for (uint64_t o = t->begin; o < t->end && !e; o += EMB_CKPT_CHUNK) {
            const size_t n = (size_t)EMB_MIN((uint64_t)EMB_CKPT_CHUNK, t->end - o);
            if (map) {
                XXH3_64bits_update(&st, map + c->data_start + o, n);
                continue;
            }
            e = read_all(fd, buf, n, c->data_start + o);
            if (e)
                e = io_error(path, e);
            else
                XXH3_64bits_update(&st, buf, n);
        }
        if (!e && !CHECKSUM_OK(XXH3_64bits_digest(&st), t->hash))
            e = corrupt(path, "checksum mismatch in tensor \"%.200s\"", t->name);
    }
    free(buf);
    return e;
}

int emb__ckpt_load_fn(const EmbCkpt *c, int64_t k, int fd, void *(*dst)(void *ctx, int64_t j),
                      void *ctx, const char *path)
{
    const EmbCkptTensor *ts = &c->tensors[k];
    const size_t cb = emb__ckpt_row_bytes(ts->dtype, ts->width);
    const int64_t per = (int64_t)EMB_MAX(EMB_CKPT_CHUNK / cb, 1);
    unsigned char *buf = cb <= EMB_CKPT_CHUNK ? malloc(EMB_CKPT_CHUNK) : NULL;
    if (cb <= EMB_CKPT_CHUNK && !buf)
        return emb__fail(EMB_ENOMEM, "out of memory reading checkpoint %s", path);
    int e = 0;
    for (int64_t c0 = 0; c0 < ts->ncolumns && !e; c0 += per) {
        const int64_t n = EMB_MIN(per, ts->ncolumns - c0);
        const uint64_t pos = c->data_start + ts->begin + (uint64_t)c0 * cb;
        if (!buf) { /* a column larger than a chunk: straight into it */
            e = read_all(fd, dst(ctx, c0), cb, pos);
            continue;
        }
        e = read_all(fd, buf, (size_t)n * cb, pos);
        for (int64_t j = 0; j < n && !e; j++)
            memcpy(dst(ctx, c0 + j), buf + (size_t)j * cb, cb);
    }
    free(buf);
    return e ? emb__fail(EMB_EIO, "checkpoint %s changed while it was restored", path) : 0;
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
                   const char *path)
{
    TableDst d = {t, (size_t)off * emb__ckpt_el_size(c->tensors[k].dtype)};
    return emb__ckpt_load_fn(c, k, fd, table_dst, &d, path);
}

static void *array_dst(void *ctx, int64_t j)
{
    return (int64_t *)ctx + j;
}

int emb__ckpt_check_dynamic(const EmbCkpt *c, int fd, const char *path)
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
        r = r ? r : emb__ckpt_load_fn(c, tb->ids, fd, array_dst, ids, path);
        r = r ? r : emb__ckpt_load_fn(c, tb->last, fd, array_dst, last, path);
        for (int64_t k = 0; k < n && !r; k++) {
            if (ids[k] < 0 || (k > 0 && ids[k] <= ids[k - 1]))
                r = corrupt(path, "dynamic table \"%.200s\": id %lld at row %lld is negative, "
                            "repeated or out of order", tb->name, (long long)ids[k],
                            (long long)k);
            else if (last[k] < 0 || last[k] > tb->dyn_step)
                r = corrupt(path, "dynamic table \"%.200s\": row %lld was last updated at step "
                            "%lld, outside [0, %lld]", tb->name, (long long)k,
                            (long long)last[k], (long long)tb->dyn_step);
        }
    }
    free(ids);
    free(last);
    return r;
}
