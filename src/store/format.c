/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * format.c — the checkpoint file (format.h; README "Checkpoint format"): a safetensors
 * file of named 2-D tensors with checksums and aligned data. It knows tensors only; what
 * tables and optimizer state become (the tensors' names, the "tables" and "optimizer"
 * metadata) is the table model's (store/model.c). Here the tensor list and the helpers
 * that writing (format_write.c) and parsing (format_read.c) share.
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

#include "dtype.h"
#include "store/format.h"

#define HH_KEY "\"header_xxh3\":\""

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

/* ---- JSON, hex, the header's checksum ---------------------------------------------- */

void emb__json_set(json_t *o, const char *key, json_t *v, int *err)
{
    if (!o || json_object_set_new(o, key, v) != 0)
        *err = 1;
}

void emb__ckpt_hex16(char out[17], uint64_t h)
{
    snprintf(out, 17, "%016" PRIx64, h);
}

/* Where the 16 digits of header_xxh3 are in @h (exactly one occurrence), or NULL. */
char *emb__ckpt_header_digits(char *h, size_t n)
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

uint64_t emb__ckpt_header_hash(const char *h, size_t n, const char *digits)
{
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, h, (size_t)(digits - h));
    XXH3_64bits_update(&st, "0000000000000000", 16);
    XXH3_64bits_update(&st, digits + 16, n - (size_t)(digits - h) - 16);
    return XXH3_64bits_digest(&st);
}

/* ---- errors and JSON fields --------------------------------------------------------- */

int emb__ckpt_corrupt(const char *path, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return emb__fail(EMB_ECORRUPT, "checkpoint %s is corrupt or truncated: %s", path, msg);
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

