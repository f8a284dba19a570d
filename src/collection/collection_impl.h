/* SPDX-License-Identifier: BSD-2-Clause */
/* collection_impl.h — the EmbCollection object, shared by collection.c (lifetime,
   accessors), collection_step.c (forward, backward, gradients) and collection_ckpt.c. */
#ifndef EMB_COLLECTION_IMPL_H
#define EMB_COLLECTION_IMPL_H

#include <stdbool.h>

#include "embtables/collection.h"
#include "internal.h"
#include "update/update_impl.h"

/* Where a collection is in its step. */
typedef enum EmbCollStep {
    EMB_COLL_IDLE = 0,     /* no forward since the last applied backward */
    EMB_COLL_FORWARD = 1,  /* a forward's batches held, not backed yet */
    EMB_COLL_RECORDED = 2, /* a backward recorded (no optimizer, or its update failed) */
} EmbCollStep;

typedef struct EmbCollSaver EmbCollSaver;

struct EmbCollection {
    int64_t n;
    EmbTable **tables;          /* borrowed or owned by `store` */
    bool *owned;                /* tables[i] created (in `store`) */
    EmbPooling *poolings;
    char (*names)[EMB_NAME_MAX + 1];
    EmbCheckpointVar *vars;     /* every table under its name, for checkpoints */
    EmbStore *store;            /* the tables created from specs, or NULL */
    EmbStrategy *strategy;
    bool own_strategy;
    EmbOptimizer *opt;          /* NULL: the backward only records */
    bool own_opt;
    unsigned flags;             /* emb_update_many flags */
    int64_t prependrows, width; /* the concat layout */
    /* the step */
    EmbGrad **grads;
    EmbIndexer **ix;
    EmbBatch *batches;          /* the last forward's batches (descriptors) */
    EmbCollStep step;
    /* emb_collection_custom: the calls are ops's, on user */
    bool custom;
    EmbCollectionOps ops;
    void *user;
    /* emb_collection_grad_rows */
    EmbIndexer *rows_ix;
    float *rows;
    size_t rows_cap;            /* floats */
    /* emb_collection_save with deltas on (full_every > 0): the saver kept between saves to
       one directory, prefix and max_to_keep (collection_ckpt.c) */
    int32_t full_every;
    EmbCollSaver *saver;        /* made at create (so a const collection saves through it) */
};

int emb__collection_saver_init(EmbCollection *c);
void emb__collection_saver_free(EmbCollection *c);

/* For a custom collection: ops.<fn> is NULL, so the call @op is EMB_ENOTSUP (collection_step.c). */
int emb__collection_notsup(const char *op);

/* Re-issues the current error as "<op>: table "<name>" (<i>): <message>"; returns @code. */
int emb__collection_named(const EmbCollection *c, int code, const char *op, int64_t i);

#endif
