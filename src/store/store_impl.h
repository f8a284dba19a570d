/* SPDX-License-Identifier: BSD-2-Clause */
/* store_impl.h — the inside of EmbStore, shared by store.c and checkpoint.c. */
#ifndef EMB_STORE_IMPL_H
#define EMB_STORE_IMPL_H

#include "embtables/store.h"
#include "internal.h"

typedef struct EmbStoreEntry {
    EmbTable *table; /* owned */
    bool trainable;
    bool initialized;
} EmbStoreEntry;

struct EmbStore {
    EmbStoreEntry *entries; /* creation order */
    int64_t n, cap;
    bool defer_commit; /* tiered tables left uncommitted (a collection's: it commits them) */
};

/* The entry named @name, or NULL. */
EmbStoreEntry *emb__store_entry(const EmbStore *s, const char *name);

#endif
