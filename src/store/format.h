/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * format.h — the checkpoint file: safetensors with our metadata (README: "Checkpoint
 * format"). format.c writes one and parses one (untrusted: every size is bounded by the
 * file's). A tensor is elements [off, off + width) of every column of a table: a table's
 * values (off 0, width featuresize) or one optimizer slot of its state table.
 */
#ifndef EMB_STORE_FORMAT_H
#define EMB_STORE_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

#include "embtables/store.h"
#include "internal.h"

#define EMB_CKPT_EXT EMB_CHECKPOINT_EXT
#define EMB_CKPT_VERSION 2
#define EMB_CKPT_HEADER_MAX (64 << 20) /* bytes of JSON header read at most */
#define EMB_CKPT_ALIGN 64              /* the data start at a multiple of this */
#define EMB_CKPT_CHUNK (1 << 20)       /* bytes per read or write */

/* The element types of a dynamic table's ids and last update steps (safetensors "I64") and
   of its admission counts ("U16"), beside the tables' EmbDtype values in tensors' dtype. */
#define EMB_CKPT_I64 ((EmbDtype)16)
#define EMB_CKPT_U16 ((EmbDtype)17)
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

/* Where a tensor's columns come from when it is written. */
typedef enum EmbCkptSource {
    EMB_CKPT_SRC_TABLE = 0, /* column k of src, from element src_off */
    EMB_CKPT_SRC_DYN_ROWS,  /* row order[k] of the dynamic table src */
    EMB_CKPT_SRC_DYN_STATE, /* its optimizer state row, from element src_off */
    EMB_CKPT_SRC_DYN_IDS,   /* its id (width 1) */
    EMB_CKPT_SRC_DYN_LAST,  /* its last update step (width 1) */
    EMB_CKPT_SRC_DYN_SKETCH /* row k of its admission sketch */
} EmbCkptSource;

typedef struct EmbCkptTensor {
    char *name;           /* owned */
    EmbDtype dtype;
    int64_t ncolumns;
    int32_t width;
    uint64_t begin, end;  /* bytes in the data section */
    uint64_t hash;        /* XXH3-64 of its bytes */
    int64_t table;        /* index in tables */
    int slot;             /* -1: the table's values or a dynamic table's ids, steps or
                             counts; else its optimizer slot */
    /* writing: the source */
    const EmbTable *src;
    int32_t src_off;
    EmbCkptSource src_kind;
    const int64_t *order; /* a dynamic table's rows in id order (its EmbCkptTable's) */
    const int32_t *oshard; /* partitioned over dynamic shards: each row's shard, else NULL */
} EmbCkptTensor;

typedef struct EmbCkptTable {
    char *name;           /* owned */
    int32_t nshards;      /* 1: not partitioned */
    unsigned partition;
    int64_t step;         /* optimizer updates; -1: no state */
    int64_t values;       /* tensor index */
    int64_t state[2];     /* tensor indices of the slots (-1: none) */
    /* a dynamic table (dynamic.h): its update step count and the tensor indices of its
       ids and last update steps (I64, [rows, 1], rows in increasing id order) and of its
       admission counts (U16, [4 * nshards, width]: each shard's sketch when partitioned
       over dynamic shards, mod; -1: none) */
    bool dynamic;
    int64_t dyn_step;
    int64_t ids, last, sketch;
    int64_t *order;       /* writing: its rows in id order (owned) */
    int32_t *oshard;      /* writing: their shards when partitioned (owned), else NULL */
} EmbCkptTable;

typedef struct EmbCkpt {
    int64_t global_step;
    bool has_opt;
    EmbOptimizerConfig opt;
    EmbCkptTensor *tensors;
    int64_t ntensors, tcap;
    EmbCkptTable *tables;
    int64_t ntables, cap;
    uint64_t data_start;  /* 8 + header bytes */
    uint64_t data_size;
} EmbCkpt;

void emb__ckpt_free(EmbCkpt *c);

/*
 * Adds table @t under @name (NULL: its name) to @c for writing, with @opt's state of it
 * when @opt is not NULL. Returns 0, EMB_EINVAL (no name, a name twice), EMB_ENOMEM.
 */
int emb__ckpt_add(EmbCkpt *c, const char *name, const EmbTable *t, const EmbOptimizer *opt);

/* Writes @c (tables added, global_step, has_opt / opt set) to the open file @fd. */
int emb__ckpt_write(EmbCkpt *c, int fd, const char *path);

/*
 * Reads and checks the header of the file @fd of @size bytes: 0, EMB_ECORRUPT,
 * EMB_ENOTSUP (the older format, a foreign safetensors file), EMB_EIO, EMB_ENOMEM.
 */
int emb__ckpt_read(EmbCkpt *c, int fd, uint64_t size, const char *path);

/* Checks every tensor's checksum, reading @fd (or @map, when not NULL). */
int emb__ckpt_verify(const EmbCkpt *c, int fd, const unsigned char *map, const char *path);

/* Reads tensor @k from @fd into elements [off, off + width) of every column of @t. */
int emb__ckpt_load(const EmbCkpt *c, int64_t k, int fd, EmbTable *t, int32_t off,
                   const char *path);
/* Reads tensor @k from @fd, column j (width elements) to dst(ctx, j). */
int emb__ckpt_load_fn(const EmbCkpt *c, int64_t k, int fd, void *(*dst)(void *ctx, int64_t j),
                      void *ctx, const char *path);
/* Reads every dynamic table's ids and last update steps: ids strictly increasing and
   >= 0, steps in [0, the table's step]; 0, EMB_ECORRUPT, EMB_EIO, EMB_ENOMEM. */
int emb__ckpt_check_dynamic(const EmbCkpt *c, int fd, const char *path);

#endif
