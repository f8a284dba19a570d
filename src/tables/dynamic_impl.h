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

/* cols[k] = the FORWARD column of id k0 + k of @ids (int32 when @id32; the default row for
   an unknown id), k < n: the ids hashed and their index slots prefetched first, then probed,
   and each row's lines prefetched when the rows outgrow the cache. Reads the index only.
   Returns whether it prefetched the rows (the table is larger than EMB_RESIDENT_BYTES). */
bool emb__dynamic_columns(const EmbTable *t, const void *ids, int id32, int64_t k0, int64_t n,
                          const void **cols);

/* A partitioned table over dynamic shards (partition.c: mod, each shard keeping its ids
   as they are), and the shard of @id. */
bool emb__is_dynamic_part(const EmbTable *t);
EmbTable *emb__dynamic_part_shard(const EmbTable *t, int64_t id);

/* Dynamic, or partitioned over dynamic shards: rows are created by updates. */
EMB_INLINE bool emb__is_dynamic_any(const EmbTable *t)
{
    return t->kind == EMB_KIND_DYNAMIC || emb__is_dynamic_part(t);
}

/* The dynamic table that holds @id: @t itself or its shard. */
EMB_INLINE EmbTable *emb__dynamic_home(const EmbTable *t, int64_t id)
{
    return t->kind == EMB_KIND_DYNAMIC ? (EmbTable *)t : emb__dynamic_part_shard(t, id);
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

/* emb_table_initialize of a dynamic table: every row set as if created under @in (checked
   by the caller; UNIFORM_UNIT_SCALING: EMB_EINVAL), which initialises later rows too;
   EMB_INIT_NONE changes nothing. */
int emb__dynamic_initialize(EmbTable *t, const EmbInitializer *in);

/* ---- checkpoints (store/) ---- */
/* The row indices of @t's rows in increasing id order (malloc'ed, *n of them) and, for a
   table partitioned over dynamic shards, each one's shard (*shards malloc'ed; else NULL);
   0 or EMB_ENOMEM. */
int emb__dynamic_sorted_rows(const EmbTable *t, int64_t **rows, int32_t **shards, int64_t *n);
/* The id and the last update step of row index @r. */
int64_t emb__dynamic_row_id(const EmbTable *t, int64_t r);
int64_t emb__dynamic_row_last(const EmbTable *t, int64_t r);
/* The admission sketch (SKETCH_DEPTH = 4 rows of *width counters), or NULL (width 0). */
const uint16_t *emb__dynamic_sketch(const EmbTable *t, int64_t *width);
/*
 * A restore builds the new content of a dynamic table aside (a stage), then swaps it in:
 * emb__dynamic_stage makes an empty body like @t's (its configuration, its optimizer state
 * width) with rows 0 .. n-1 allocated (optimizer state rows set to their initial value,
 * the sketch zero); the caller fills the rows, state rows, the `last` array (n entries) and
 * the sketch, then gives the ids (strictly increasing, >= 0; -1 when they or a `last`
 * outside [0, step] are not) and the table's step; commit swaps it into @t (cannot fail)
 * and frees @t's old rows; free discards a stage. 0 or EMB_ENOMEM (max_rows, memory).
 */
typedef struct EmbDynStage EmbDynStage;
int emb__dynamic_stage(const EmbTable *t, int64_t n, EmbDynStage **out);
void *emb__dynamic_stage_row(EmbDynStage *st, int64_t k);
float *emb__dynamic_stage_state(EmbDynStage *st, int64_t k);
int64_t *emb__dynamic_stage_last(EmbDynStage *st);
uint16_t *emb__dynamic_stage_sketch(EmbDynStage *st, int64_t *width);
int emb__dynamic_stage_ids(EmbDynStage *st, const int64_t *ids, int64_t step);
void emb__dynamic_stage_commit(EmbTable *t, EmbDynStage *st);
void emb__dynamic_stage_free(EmbDynStage *st);

#endif
