/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * format.h — the checkpoint file: safetensors with our metadata (README: "Checkpoint
 * format"). format.c writes one and parses one (untrusted: every size is bounded by the
 * file's). It knows named 2-D tensors (ncolumns x width elements), their checksums and
 * alignment, and the "embtables" metadata object as the table model (store/model.h) makes
 * it: which tensors a table and its optimizer state become is the model's.
 */
#ifndef EMB_STORE_FORMAT_H
#define EMB_STORE_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "embtables/store.h"
#include "embtables/update.h"
#include "internal.h"

#define EMB_CKPT_EXT EMB_CHECKPOINT_EXT
#define EMB_CKPT_VERSION 2
#define EMB_CKPT_HEADER_MAX (64 << 20) /* bytes of JSON header read at most */
#define EMB_CKPT_ALIGN 64              /* the data start at a multiple of this */
#define EMB_CKPT_CHUNK (1 << 20)       /* bytes per read or write */

/* Integer element types (safetensors "I64", "U16"), beside EmbDtype's float types in a
   tensor's dtype (the same values as table_ops.h's EmbElem). */
#define EMB_CKPT_I64 ((EmbDtype)16)
#define EMB_CKPT_U16 ((EmbDtype)17)
#define EMB_CKPT_I32 ((EmbDtype)19) /* an export's id remapping (store/export.c) */
/* A "U8" tensor as parsed, before its table's "format" (int8 / int4) makes it a quantized
   table's rows: a tensor of dtype EMB_INT8 / EMB_INT4 and width D is saved as U8 of shape
   [ncolumns, emb_dtype_row_bytes(dtype, D)], the rows' bytes as they are. */
#define EMB_CKPT_U8 ((EmbDtype)18)
/* Bytes per element of a tensor's dtype (0: unknown; 1 for the quantized types), and
   whether it is a table's float type. */
size_t emb__ckpt_el_size(EmbDtype dt);
bool emb__ckpt_is_float(EmbDtype dt);
/* Whether a table's values may be of @dt (a float type or a quantized one). */
bool emb__ckpt_is_table_type(EmbDtype dt);
/* Bytes of one row (tensor column) of a tensor of @dt and @width, and its columns in the
   file (the row bytes of a quantized tensor, else width). */
size_t emb__ckpt_row_bytes(EmbDtype dt, int32_t width);
int64_t emb__ckpt_file_cols(EmbDtype dt, int32_t width);
/* The safetensors name of a tensor's dtype ("F32", "F16", "BF16", "I64", "U16", "U8"). */
const char *emb__ckpt_dtype_code(EmbDtype dt);

typedef struct EmbCkptTensor {
    char *name;           /* owned */
    EmbDtype dtype;
    int64_t ncolumns;
    int32_t width;
    uint64_t begin, end;  /* bytes in the data section */
    uint64_t hash;        /* XXH3-64 of its bytes */
    /* the table model's (store/model.c; format.c only sets them to -1 when parsing): its
       table's index in EmbCkpt.tables and its optimizer slot (-1: none) */
    int64_t table;
    int slot;
    /* writing: the bytes of column @col (width elements; @tmp: room for an int64), from
       the model's source */
    const void *(*column)(const struct EmbCkptTensor *t, int64_t col, int64_t *tmp);
    const void *src;
    int32_t src_off;      /* elements into a source row */
    int src_what;         /* the model's */
} EmbCkptTensor;

struct EmbCkptTable;      /* the table model's (store/model.h) */

typedef struct EmbCkpt {
    EmbCkptTensor *tensors;
    int64_t ntensors, tcap;
    uint64_t data_start;  /* 8 + header bytes */
    uint64_t data_size;
    uint64_t header_hash; /* header_xxh3: set by a write and a read (a delta's link) */
    /* the table model's (store/model.h) */
    int64_t global_step;
    bool has_opt;
    EmbOptimizerConfig opt;
    struct EmbCkptTable *tables;
    int64_t ntables, cap;
    char *delta_base;     /* a delta (store/delta.c): the file name it extends (owned), or NULL */
    uint64_t delta_base_hash; /* that file's header_xxh3 */
} EmbCkpt;

/* Frees the tensors (names and array). */
void emb__ckpt_tensors_free(EmbCkpt *c);
/* The index of tensor @name, or -1. */
int64_t emb__ckpt_tensor_find(const EmbCkpt *c, const char *name);
/* Appends a tensor named @name (taken: freed on failure; NULL: EMB_ENOMEM). */
int emb__ckpt_tensor_push(EmbCkpt *c, char *name, const EmbCkptTensor *proto);
char *emb__ckpt_strdup(const char *s);

/* Writes @c's tensors to the open file @fd, with @meta (the model's "embtables" metadata
   object; "xxh3" is added to it) in the header. */
int emb__ckpt_write(EmbCkpt *c, json_t *meta, int fd, const char *path);

/*
 * Reads and checks the header of the file @fd of @size bytes (its checksum, the format
 * version, every tensor's shape and offsets): 0 and *meta (the "embtables" metadata object,
 * the caller's to json_decref), EMB_ECORRUPT, EMB_ENOTSUP (the older format, a foreign
 * safetensors file), EMB_EIO, EMB_ENOMEM.
 */
int emb__ckpt_read(EmbCkpt *c, int fd, uint64_t size, const char *path, json_t **meta);

/* Checks every tensor's checksum, reading @fd (or @map, when not NULL). */
int emb__ckpt_verify(const EmbCkpt *c, int fd, const unsigned char *map, const char *path);

/* Reads tensor @k from @fd, column j (width elements) to dst(ctx, j), through @buf
   (EMB_CKPT_CHUNK bytes, the caller's: a restore allocates it before its first write). */
int emb__ckpt_load_fn(const EmbCkpt *c, int64_t k, int fd, void *(*dst)(void *ctx, int64_t j),
                      void *ctx, unsigned char *buf, const char *path);

/* 16 lowercase hex digits of @h; parsing them back (0, or -1 when not 16 such digits). */
void emb__ckpt_hex16(char out[17], uint64_t h);
int emb__ckpt_parse_hex16(const char *s, uint64_t *out);
/* The header's checksum: where the 16 digits of header_xxh3 are in the @n header bytes
 * @h (exactly one occurrence), or NULL; the XXH3-64 of @h with those digits read as '0'. */
char *emb__ckpt_header_digits(char *h, size_t n);
uint64_t emb__ckpt_header_hash(const char *h, size_t n, const char *digits);

/* EMB_ECORRUPT with "checkpoint PATH is corrupt or truncated: ...". */
int emb__ckpt_corrupt(const char *path, const char *fmt, ...) EMB_PRINTF(2, 3);

/* JSON helpers: o[key] = v (v may be NULL after a failed allocation: *err = 1); an
   integer member in [lo, hi] (0, else -1); a string member without NUL bytes (or NULL). */
void emb__json_set(json_t *o, const char *key, json_t *v, int *err);
int emb__json_int(json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out);
const char *emb__json_str(json_t *o, const char *key);

#endif
