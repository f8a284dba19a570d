/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * delta_keyed.h — delta checkpoints of keyed tables (delta_keyed.c), for store/delta.c.
 */
#ifndef EMB_STORE_DELTA_KEYED_H
#define EMB_STORE_DELTA_KEYED_H

#include "store/model.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

/* One opened delta of a chain. */
typedef struct EmbKeyedLink {
    const EmbCkpt *c;
    int fd;
    const char *path;
} EmbKeyedLink;

/* Whether keyed table @t can be saved as a delta (its ids kept at its last save). */
bool emb__delta_keyed_possible(const EmbTable *t);
/* The rows of keyed @t created or updated since its last save, and the tombstones. */
int emb__delta_keyed_list(const EmbTable *t, const EmbOptState *st, EmbRowList *out);
/* Delta table @tb of @l, for keyed target @t, checked whole (EMB_ESHAPE, EMB_ECORRUPT). */
int emb__delta_keyed_check(const EmbKeyedLink *l, const EmbCkptTable *tb, const EmbTable *t,
                           unsigned char *buf);
/* After the full checkpoint's restore: the @n deltas @links (oldest first) merged into
   keyed @t (table @name in them) and swapped in. Only ENOMEM and read errors fail. */
int emb__delta_keyed_restore(EmbTable *t, const char *name, const EmbKeyedLink *links,
                             int64_t n, EmbOptimizer *opt, unsigned char *buf);

#endif
