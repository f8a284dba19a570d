/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dlrm_export.h — dlrm_train's serving export (--export): the 26 tables written with
 * emb_store_export() (int8 by default, no optimizer state), mapped back with
 * emb_checkpoint_open(EMB_CHECKPOINT_MMAP) and wrapped in a forward-only collection of the
 * training collection's layout, so that the test set is scored through the served rows.
 */
#ifndef DLRM_EXPORT_H
#define DLRM_EXPORT_H

#include <stdint.h>

#include <embtables/collection.h>
#include <embtables/embtables.h>

typedef struct DlrmServed {
    EmbCheckpoint *ck;   /* the mapped file */
    EmbCollection *emb;  /* its tables, forward only (concat layout of the trained one) */
    int64_t bytes;       /* the file's size */
    int64_t f32_bytes;   /* the trained tables' rows as f32: the export's f32 size */
} DlrmServed;

/* Writes the @n tables of @trained (names C1 .. Cn) to @path as @dtype and maps them into
   @out, a collection with @prependrows leading columns. 0, or a library error code. */
int dlrm_export(const EmbCollection *trained, int n, int64_t prependrows, EmbDtype dtype,
                const char *path, DlrmServed *out);
void dlrm_served_free(DlrmServed *s);

#endif
