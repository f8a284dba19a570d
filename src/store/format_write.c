/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * format_write.c — writing a checkpoint file (format.h; the layout: format.c): the header
 * text with the tensors' checksums, then the tensors, each hashed as it is written.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "dtype.h"
#include "store/format.h"

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
    char *digits = h && n2 == n ? emb__ckpt_header_digits(h, n) : NULL;
    if (!e && !digits)
        e = h ? EINVAL : ENOMEM;
    if (!e) {
        char hex[17];
        c->header_hash = emb__ckpt_header_hash(h, n, digits);
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
