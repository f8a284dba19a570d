/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * format_read.c — reading a checkpoint file (format.h; the layout: format.c): the header
 * bounded, parsed and checked before any of it is believed, the tensors verified and
 * loaded. Files read are untrusted input.
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
#define NAME_BYTES_MAX 4096

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

static int io_error(const char *path, int e)
{
    if (e == -1)
        return emb__ckpt_corrupt(path, "it ends early");
    return emb__fail(EMB_EIO, "cannot read checkpoint %s: %s", path, strerror(e));
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
    const char *digits = emb__ckpt_header_digits(h, n);
    char hex[17] = "";
    uint64_t want;
    if (digits)
        memcpy(hex, digits, 16);
    if (!digits && !memmem(h, n, "embtables", 9))
        return emb__fail(EMB_ENOTSUP, "%s is a safetensors file that embtables did not write "
                         "(no __metadata__ format \"embtables\"); only embtables checkpoints "
                         "are restored", path);
    if (!digits || emb__ckpt_parse_hex16(hex, &want) ||
        !CHECKSUM_OK(emb__ckpt_header_hash(h, n, digits), want))
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
