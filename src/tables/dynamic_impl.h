/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynamic_impl.h — what the layers above tables/ use of a dynamic table (dynamic.c): the
 * two serial steps of an update (prepare: decide and reserve; commit: count, create), row
 * and state pointers by row index, the optimizer state kept beside the rows, and the
 * forward check of EMB_DYN_MISSING_ERROR.
 */
#ifndef EMB_DYNAMIC_IMPL_H
#define EMB_DYNAMIC_IMPL_H

#include "embtables/dynamic.h"
#include "rng.h"
#include "tables/table_impl.h"

/* The index of a dynamic table: slot h holds (id, row index), id -1 when empty; the first
   member of the table's private state, so that a lookup can prefetch an id's home slot. */
typedef struct EmbDynSlot {
    int64_t id;
    int64_t row;
} EmbDynSlot;

typedef struct EmbDynIndex {
    EmbDynSlot *slots;
    int64_t nslots; /* a power of two */
} EmbDynIndex;

/* The hash of @id; its home slot in an index of n slots is hash & (n - 1). */
EMB_INLINE uint64_t emb__dynamic_hash(int64_t id)
{
    return emb__mix64((uint64_t)id ^ 0x5851f42d4c957f2dull);
}

/* Prefetches the home slot of @id of dynamic table @t (a lookup, a few ids ahead). */
EMB_INLINE void emb__dynamic_prefetch(const EmbTable *t, int64_t id)
{
    const EmbDynIndex *x = (const EmbDynIndex *)t->impl;
    __builtin_prefetch(&x->slots[emb__dynamic_hash(id) & (uint64_t)(x->nslots - 1)]);
}

/* Whether @t is a dynamic table. */
EMB_INLINE bool emb__is_dynamic(const EmbTable *t)
{
    return t->kind == EMB_KIND_DYNAMIC;
}

/*
 * An update's first serial step, over its distinct ids (in parts): rows[k] = the row of
 * ids[k], or -2 (to be created by the commit), or -1 (not admitted yet: the update skips
 * it); *extra (added to) counts the -2. Decisions use the admission sketch as it was before
 * the step, so no order of the ids changes them. Writes nothing of the table.
 */
void emb__dynamic_decide(const EmbTable *t, const int64_t *ids, int64_t n, int64_t *rows,
                         int64_t *extra);
/* Room for @extra new rows (max_rows, index, slabs): 0 or EMB_ENOMEM with its message;
   nothing visible changes. */
int emb__dynamic_reserve(EmbTable *t, int64_t extra);
/* The second step: counts the step (once per update), then per part: counts the ids not
   admitted in the sketch, creates the rows marked -2 (into rows[k]) and stamps every
   row's last update. Cannot fail after emb__dynamic_reserve. */
void emb__dynamic_step(EmbTable *t);
void emb__dynamic_commit(EmbTable *t, const int64_t *ids, int64_t n, int64_t *rows);
/* The row / the optimizer state row (NULL without state) of row index @r. */
void *emb__dynamic_row(const EmbTable *t, int64_t r);
float *emb__dynamic_state_row(const EmbTable *t, int64_t r);
/*
 * Keeps optimizer state of @width floats per row beside the rows of @t, each row's
 * initialised from @init (existing rows now, new rows when created); *view receives a
 * table (f32, width wide) whose column pointer of an id is that id's state row, owned by
 * the caller (destroying it frees the state). 0, EMB_ENOMEM, EMB_ENOTSUP (state kept
 * already).
 */
int emb__dynamic_state_attach(EmbTable *t, int32_t width, const float *init, EmbTable **view);
/* The state view of @t, or NULL. */
const EmbTable *emb__dynamic_state_view(const EmbTable *t);
/* Whether FORWARD reads of unknown ids fail (EMB_DYN_MISSING_ERROR), and whether @id has a
   row. */
bool emb__dynamic_missing_fails(const EmbTable *t);
bool emb__dynamic_has(const EmbTable *t, int64_t id);
/* Room for the rows of those of @n ids (>= 0, repeats allowed) that have none, so that
   column pointers with UPDATE of them create rows; 0 or EMB_ENOMEM. */
int emb__dynamic_reserve_ids(EmbTable *t, const int64_t *ids, int64_t n);
/* The row of @id for writing, created when missing (no admission); 0 or EMB_ENOMEM. */
int emb__dynamic_get_or_create(EmbTable *t, int64_t id, void **col);

#endif
