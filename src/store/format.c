/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * format.c — the checkpoint file (format.h; README "Checkpoint format"): a safetensors
 * file of named 2-D tensors with checksums and aligned data, writing and parsing. It knows
 * tensors only; what tables and optimizer state become (the tensors' names, the "tables"
 * and "optimizer" metadata) is the table model's (store/model.c).
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

#include "dtype.h"
#include "store/format.h"

#define OLD_MAGIC "EMBCKPT\1"
#define HH_KEY "\"header_xxh3\":\""
#define NAME_BYTES_MAX 4096

void emb__ckpt_tensors_free(EmbCkpt *c)
{
    for (int64_t i = 0; i < c->ntensors; i++)
        free(c->tensors[i].name);
    free(c->tensors);
    c->tensors = NULL;
    c->ntensors = c->tcap = 0;
}

const char *emb__ckpt_dtype_code(EmbDtype dt)
{
    return dt == EMB_F16 ? "F16" : dt == EMB_BF16 ? "BF16" : dt == EMB_CKPT_I64 ? "I64"
         : dt == EMB_CKPT_I32 ? "I32" : dt == EMB_CKPT_U16 ? "U16" : emb__dtype_quantized(dt) || dt == EMB_CKPT_U8 ? "U8"
         : "F32";
}

size_t emb__ckpt_el_size(EmbDtype dt)
{
    if (emb__dtype_quantized(dt) || dt == EMB_CKPT_U8)
        return 1;
    return dt == EMB_CKPT_I64 ? 8 : dt == EMB_CKPT_I32 ? 4 : dt == EMB_CKPT_U16 ? 2 : emb_dtype_size(dt);
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
               {"I32", EMB_CKPT_I32}, {"U16", EMB_CKPT_U16}, {"U8", EMB_CKPT_U8}};
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strcmp(s, map[i].name) == 0) {
            *dt = map[i].dt;
            return 0;
        }
    return -1;
}

int64_t emb__ckpt_tensor_find(const EmbCkpt *c, const char *name)
{
    for (int64_t i = 0; i < c->ntensors; i++)
        if (strcmp(c->tensors[i].name, name) == 0)
            return i;
    return -1;
}

char *emb__ckpt_strdup(const char *s)
{
    const size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

int emb__ckpt_tensor_push(EmbCkpt *c, char *name, const EmbCkptTensor *proto)
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

void emb__json_set(json_t *o, const char *key, json_t *v, int *err)
{
    if (!o || json_object_set_new(o, key, v) != 0)
        *err = 1;
}

void emb__ckpt_hex16(char out[17], uint64_t h)
{
    snprintf(out, 17, "%016" PRIx64, h);
}

/* The "embtables" metadata text: the model's object (@meta) with the tensors' checksums
   ("xxh3", last). */
static char *meta_text(const EmbCkpt *c, json_t *meta, int *err)
{
    json_t *sums = json_object();
    char hex[17];
    for (int64_t i = 0; i < c->ntensors; i++) {
        emb__ckpt_hex16(hex, c->tensors[i].hash);
        emb__json_set(sums, c->tensors[i].name, json_string(hex), err);
    }
    emb__json_set(meta, "xxh3", sums, err);
    char *text = *err ? NULL : json_dumps(meta, JSON_COMPACT);
    if (!text)
        *err = 1;
    return text;
}

/* The whole header (padded; header_xxh3 as zeros) into a malloc'ed buffer. */
static char *header_text(const EmbCkpt *c, json_t *model, size_t *len)
{
    int err = 0;
    char *meta = meta_text(c, model, &err);
    json_t *root = json_object(), *md = json_object();
    emb__json_set(md, "format", json_string("embtables"), &err);
    emb__json_set(md, "embtables", meta ? json_string(meta) : NULL, &err);
    emb__json_set(md, "header_xxh3", json_string("0000000000000000"), &err);
    emb__json_set(root, "__metadata__", md, &err);
    free(meta);
    for (int64_t i = 0; i < c->ntensors; i++) {
        const EmbCkptTensor *t = &c->tensors[i];
        json_t *jt = json_object();
        emb__json_set(jt, "dtype", json_string(emb__ckpt_dtype_code(t->dtype)), &err);
        emb__json_set(jt, "shape",
                      json_pack("[II]", (json_int_t)t->ncolumns,
                                (json_int_t)emb__ckpt_file_cols(t->dtype, t->width)), &err);
        emb__json_set(jt, "data_offsets",
                      json_pack("[II]", (json_int_t)t->begin, (json_int_t)t->end),
            &err);
        emb__json_set(root, t->name, jt, &err);
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

/* Writes tensor @t's bytes at file offset @off through @buf, hashing them. */
static int write_tensor(EmbCkptTensor *t, int fd, uint64_t off, unsigned char *buf)
{
    const size_t cb = emb__ckpt_row_bytes(t->dtype, t->width);
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    size_t fill = 0;
    int e = 0;
    for (int64_t col = 0; col < t->ncolumns && !e; col++) {
        int64_t tmp;
        const char *src = t->column(t, col, &tmp);
        if (!src)
            return -1; /* a row the kind could not read: its message set (EmbRowList) */
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

int emb__ckpt_write(EmbCkpt *c, json_t *meta, int fd, const char *path)
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
    char *h = header_text(c, meta, &n);
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
    h = e ? NULL : header_text(c, meta, &n2);
    char *digits = h && n2 == n ? header_hash_digits(h, n) : NULL;
    if (!e && !digits)
        e = h ? EINVAL : ENOMEM;
    if (!e) {
        char hex[17];
        c->header_hash = header_hash(h, n, digits);
        emb__ckpt_hex16(hex, c->header_hash);
        memcpy(digits, hex, 16);
        e = write_all(fd, h, n, 8);
    }
    free(h);
    if (e < 0)
        return EMB_EIO;
    if (e == ENOMEM)
        return emb__fail(EMB_ENOMEM, "out of memory writing checkpoint %s", path);
    if (e)
        return emb__fail(EMB_EIO, "cannot write checkpoint %s: %s", path, strerror(e));
    c->data_start = 8 + n;
    c->data_size = pos;
    return 0;
}

/* ---- reading ----------------------------------------------------------------------- */

int emb__ckpt_corrupt(const char *path, const char *fmt, ...)
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
        return emb__ckpt_corrupt(path, "it ends early");
    return emb__fail(EMB_EIO, "cannot read checkpoint %s: %s", path, strerror(e));
}

int emb__json_int(json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return -1;
    *out = json_integer_value(v);
    return 0;
}

const char *emb__json_str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
        return NULL;
    return json_string_value(v);
}

int emb__ckpt_parse_hex16(const char *s, uint64_t *out)
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
    const char *dt = emb__json_str(v, "dtype");
    EmbCkptTensor t = {.table = -1, .slot = -1};
    if (!json_is_object(v) || json_object_size(v) != 3 || !dt || dtype_parse(dt, &t.dtype))
        return emb__ckpt_corrupt(path, "tensor \"%.200s\" is not an F32, F16, BF16, I64, I32, U16 or U8 "
                                 "tensor", name);
    json_t *s0 = json_array_get(shape, 0), *s1 = json_array_get(shape, 1);
    json_t *o0 = json_array_get(offs, 0), *o1 = json_array_get(offs, 1);
    if (json_array_size(shape) != 2 || json_array_size(offs) != 2 || !json_is_integer(s0) ||
        !json_is_integer(s1) || !json_is_integer(o0) || !json_is_integer(o1))
        return emb__ckpt_corrupt(path, "tensor \"%.200s\" has no [rows, columns] shape or offsets",
                                 name);
    const json_int_t rows = json_integer_value(s0), cols = json_integer_value(s1);
    const json_int_t b = json_integer_value(o0), e = json_integer_value(o1);
    const uint64_t el = emb__ckpt_el_size(t.dtype);
    if (rows < 0 || cols < 1 || cols > INT32_MAX || b < 0 || e < b || (uint64_t)e > size ||
        (uint64_t)rows > size / (uint64_t)cols / el + 1 ||
        (uint64_t)rows * (uint64_t)cols * el != (uint64_t)(e - b))
        return emb__ckpt_corrupt(path, "tensor \"%.200s\": shape and offsets disagree", name);
    t.ncolumns = rows;
    t.width = (int32_t)cols;
    t.begin = (uint64_t)b;
    t.end = (uint64_t)e;
    if (strlen(name) >= NAME_BYTES_MAX ||
        emb__ckpt_parse_hex16(emb__json_str(sums, name), &t.hash))
        return emb__ckpt_corrupt(path, "tensor \"%.200s\" has no checksum", name);
    return emb__ckpt_tensor_push(c, emb__ckpt_strdup(name), &t);
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
            e = emb__ckpt_corrupt(path, "tensor \"%.200s\" overlaps another or leaves a hole",
                                  order[i]->name);
        pos = order[i]->end;
    }
    free(order);
    if (!e && c->data_start + pos != size)
        e = emb__ckpt_corrupt(path, "the file has %llu bytes, its header describes %llu",
                              (unsigned long long)size,
                              (unsigned long long)(c->data_start + pos));
    c->data_size = pos;
    return e;
}

/* The "embtables" metadata text and the tensors. */
static int parse_body(EmbCkpt *c, json_t *root, json_t *meta, uint64_t size, const char *path)
{
    int64_t version;
    json_t *sums = json_object_get(meta, "xxh3");
    if (!json_is_object(meta) || emb__json_int(meta, "version", 0, INT32_MAX, &version))
        return emb__ckpt_corrupt(path, "its embtables metadata is not a JSON object with a "
                                 "version");
    if (version != EMB_CKPT_VERSION)
        return emb__fail(EMB_ENOTSUP, "checkpoint %s has format version %lld; this library "
                         "reads version %d", path, (long long)version, EMB_CKPT_VERSION);
    if (!json_is_object(sums))
        return emb__ckpt_corrupt(path, "its embtables metadata lacks global_step (>= 0), "
                                 "xxh3 or tables");
    int r = 0;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (!r && strcmp(key, "__metadata__") != 0)
            r = parse_tensor(c, key, v, sums, size, path);
    }
    return r ? r : check_layout(c, size, path);
}

/* The header's own checksum (taken from the raw text: any damage to the header is
 * corruption, the key's included), then the metadata. */
static int parse_header(EmbCkpt *c, char *h, size_t n, uint64_t size, const char *path,
                        json_t **out)
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
    if (!digits || emb__ckpt_parse_hex16(hex, &want) ||
        !CHECKSUM_OK(header_hash(h, n, digits), want))
        return emb__ckpt_corrupt(path, "header checksum mismatch");
    c->header_hash = want;
    json_error_t jerr;
    json_t *root = json_loadb(h, n, JSON_REJECT_DUPLICATES, &jerr);
    json_t *md = json_object_get(root, "__metadata__");
    const char *fmt = emb__json_str(md, "format"), *text = emb__json_str(md, "embtables");
    json_t *meta = text ? json_loads(text, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    int r = 0;
    if (!json_is_object(root) || !fmt || strcmp(fmt, "embtables") != 0 || !meta)
        r = emb__ckpt_corrupt(path, "its header is not an embtables JSON header (%s)", jerr.text);
    else
        r = parse_body(c, root, meta, size, path);
    if (!r) {
        *out = meta;
        meta = NULL;
    }
    json_decref(meta);
    json_decref(root);
    return r;
}

int emb__ckpt_read(EmbCkpt *c, int fd, uint64_t size, const char *path, json_t **meta)
{
    unsigned char len[8];
    if (size < 8)
        return emb__ckpt_corrupt(path, "%llu bytes are too few for a safetensors file",
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
        return emb__ckpt_corrupt(path, "a header of %llu bytes in a file of %llu",
                                 (unsigned long long)n, (unsigned long long)size);
    char *h = malloc((size_t)n);
    if (!h)
        return emb__fail(EMB_ENOMEM, "out of memory for the header of checkpoint %s", path);
    e = read_all(fd, h, (size_t)n, 8);
    c->data_start = 8 + n;
    e = e ? io_error(path, e) : parse_header(c, h, (size_t)n, size, path, meta);
    free(h);
    if (e)
        emb__ckpt_tensors_free(c);
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
            e = emb__ckpt_corrupt(path, "checksum mismatch in tensor \"%.200s\"", t->name);
    }
    free(buf);
    return e;
}

int emb__ckpt_load_fn(const EmbCkpt *c, int64_t k, int fd, void *(*dst)(void *ctx, int64_t j),
                      void *ctx, unsigned char *buf, const char *path)
{
    const EmbCkptTensor *ts = &c->tensors[k];
    const size_t cb = emb__ckpt_row_bytes(ts->dtype, ts->width);
    const int64_t per = (int64_t)EMB_MAX(EMB_CKPT_CHUNK / cb, 1);
    int e = 0;
    for (int64_t c0 = 0; c0 < ts->ncolumns && !e; c0 += per) {
        const int64_t n = EMB_MIN(per, ts->ncolumns - c0);
        const uint64_t pos = c->data_start + ts->begin + (uint64_t)c0 * cb;
        if (cb > EMB_CKPT_CHUNK) { /* a column larger than a chunk: straight into it */
            e = read_all(fd, dst(ctx, c0), cb, pos);
            continue;
        }
        e = read_all(fd, buf, (size_t)n * cb, pos);
        for (int64_t j = 0; j < n && !e; j++)
            memcpy(dst(ctx, c0 + j), buf + (size_t)j * cb, cb);
    }
    return e ? emb__fail(EMB_EIO, "checkpoint %s changed while it was restored", path) : 0;
}
