/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynamic_impl.h — the dynamic kind's one private header (src/tables/dynamic/ and
 * partition.c only): the body every file of the folder shares (Dyn: the map, the slabs,
 * the sketch, the state), what the files call of each other, and what partition.c (a
 * table partitioned over dynamic shards) and dynamic_ckpt.c use. Layers above tables/
 * reach a dynamic table through the table contract (table_ops.h) alone.
 */
#ifndef EMB_DYNAMIC_IMPL_H
#define EMB_DYNAMIC_IMPL_H

#include "embtables/dynamic.h"
#include "initval.h"
#include "rng.h"
#include "tables/dynamic/dynamic_map.h"
#include "tables/table_impl.h"

/* ---- the body (the files of src/tables/dynamic/) ---------------------------------------- */

#define SKETCH_DEPTH 4
#define SLAB_BYTES (256 * 1024)

typedef struct Dyn {
    DynIndex x;
    int refs;            /* the table and the state view */
    int32_t D;
    EmbDtype dtype;
    size_t stride;       /* bytes from row to row in a slab */
    size_t align;        /* of a slab (column_align, at least 64) */
    int shift;           /* rows per slab = 1 << shift */
    char **slabs;
    float **sslabs;      /* state slabs (entries NULL without state) */
    int64_t nslabs, slabs_cap;
    int64_t *rowid, *last; /* per slab row: its id (-1: free) and last update step */
    int64_t free_head;   /* the last evicted row (-1: none); a free row r's rowid is
                            -2 - (the row freed before it), so rows are reused last-in
                            first-out with no array of their own */
    int64_t nfree;
    int64_t used;        /* slab rows ever used: [0, used) are live or free */
    int64_t nrows;       /* live rows */
    int64_t max_rows;
    EmbInitializer init;
    EmbDynamicMissing missing;
    void *defrow, *sink; /* FORWARD default; a write target that no reader sees */
    int32_t admit_after;
    uint16_t *sketch;    /* SKETCH_DEPTH x sketch_width */
    int64_t sketch_width;
    int64_t step;
    /* optimizer state */
    int32_t swidth;      /* 0: none */
    size_t sstride;      /* bytes */
    float *sinit, *sdefault;
    EmbTable *view;
} Dyn;

static inline Dyn *dyn_of(const EmbTable *t)
{
    return (Dyn *)t->impl;
}

static inline int64_t find(const Dyn *d, int64_t id)
{
    return emb__dyn_index_find(&d->x, id);
}

static inline char *row_ptr(const Dyn *d, int64_t r)
{
    return d->slabs[r >> d->shift] + (size_t)(r & (((int64_t)1 << d->shift) - 1)) * d->stride;
}

static inline float *state_ptr(const Dyn *d, int64_t r)
{
    return (float *)((char *)d->sslabs[r >> d->shift] +
                     (size_t)(r & (((int64_t)1 << d->shift) - 1)) * d->sstride);
}


/* The slabs (dynamic_rows.c; the map: dynamic_map.h). */
void *emb__dyn_zalloc(size_t bytes);
int emb__dyn_slab_add(Dyn *d);
int emb__dyn_reserve(Dyn *d, int64_t extra, const EmbTable *t);
int64_t emb__dyn_create(Dyn *d, int64_t id);
void *emb__dyn_zalloc_big(size_t align, size_t bytes);
void emb__dyn_evict_row(Dyn *d, int64_t r);
/* The admission sketch (dynamic_sketch.c). */
bool emb__dyn_admits(const Dyn *d, int64_t id);
void emb__dyn_count(Dyn *d, int64_t id);
/* Optimizer state with the rows (dynamic_state.c). */
void emb__dyn_unref(Dyn *d);
void emb__dyn_view_destroy(EmbTable *v);

/* The kind's entries (dynamic.c), which its facets (dynamic_kind.c) point at. */
bool emb__dyn_state_is(const EmbTable *t, const EmbTable *view);
void *emb__dyn_column(const EmbTable *t, int64_t id, EmbContext ctx);
int emb__dyn_resolve(const EmbTable *t, const EmbIdSpan *sp, EmbContext ctx,
                     const void **cols, unsigned *hint);
int emb__dyn_update_prepare(EmbTable *t, EmbRowPlan *rp);
void emb__dyn_update_commit(EmbTable *t, EmbRowPlan *rp);
void emb__dyn_update_rows(const EmbTable *t, const EmbRowPlan *rp, int64_t d0, int64_t n,
                          void **cols, float **states);
void emb__dyn_destroy(EmbTable *t);

/* The operations of a dynamic table and of its optimizer state view. */
extern const EmbTableOps emb__dynamic_ops;
extern const EmbTableOps emb__dynamic_state_ops;

EMB_INLINE bool emb__is_dynamic(const EmbTable *t)
{
    return t->ops->destroy == emb__dyn_destroy;
}

/* ---- the update's serial steps, per table (the contract's prepare / commit) ---- */
/* rows[k] = the row of ids[k], -2 (to be created by the commit) or -1 (not admitted yet),
   decided from the admission sketch as it was before the step; *extra (added to) counts
   the -2. Writes nothing. */
void emb__dynamic_decide(const EmbTable *t, const int64_t *ids, int64_t n, int64_t *rows,
                         int64_t *extra);
/* Room for @extra new rows: 0 or EMB_ENOMEM; nothing visible changes. */
int emb__dynamic_reserve(EmbTable *t, int64_t extra);
/* Counts the step (once per update); then per part: counts the ids not admitted, creates
   the rows marked -2 (into rows[k]), stamps every row's last update. Cannot fail after
   emb__dynamic_reserve. */
void emb__dynamic_step(EmbTable *t);
void emb__dynamic_commit(EmbTable *t, const int64_t *ids, int64_t n, int64_t *rows);

/* The row / the optimizer state row (NULL without state) of row index @r. */
void *emb__dynamic_row(const EmbTable *t, int64_t r);
float *emb__dynamic_state_row(const EmbTable *t, int64_t r);

/* The contract's entries of one dynamic table, for partition.c to call on a shard. */
bool emb__dynamic_missing_fails(const EmbTable *t);
bool emb__dynamic_has(const EmbTable *t, int64_t id);
int emb__dynamic_reserve_ids(EmbTable *t, const int64_t *ids, int64_t n);
int emb__dynamic_get_or_create(EmbTable *t, int64_t id, void **col);
int emb__dynamic_state_attach(EmbTable *t, int32_t width, const float *init, EmbTable **view);
int emb__dynamic_initialize(EmbTable *t, const struct EmbInitializer *in);

/* ---- checkpoints (dynamic_ckpt.c) ---- */
/* The id and the last update step of row index @r; the admission sketch (4 rows of
   *width counters) or NULL (width 0). */
int64_t emb__dynamic_row_id(const EmbTable *t, int64_t r);
int64_t emb__dynamic_row_last(const EmbTable *t, int64_t r);
const uint16_t *emb__dynamic_sketch(const EmbTable *t, int64_t *width);
/* Each row index in [0, used) that holds a row: visits @fn(ctx, row, id). */
void emb__dynamic_each_row(const EmbTable *t, void (*fn)(void *ctx, int64_t row, int64_t id),
                           void *ctx);
/*
 * A body like @t's (its configuration, its optimizer state width) with rows 0 .. n-1
 * allocated (state rows set to their initial value, the sketch zero), built aside and
 * swapped in by commit (cannot fail; frees @t's old rows); free discards it. 0 or
 * EMB_ENOMEM (max_rows, memory). stage_ids gives the ids (strictly increasing, >= 0) and
 * step; -1 when they or a `last` outside [0, step] are not.
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

/*
 * The checkpoint entries of @ns dynamic tables @tabs keyed by id mod ns (a dynamic table:
 * ns 1; partitioned over dynamic shards: its shards), saved as one dynamic table: rows in
 * increasing id order, the extra tensors "dynamic.ids", "dynamic.last", "dynamic.sketch"
 * (the shards' sketches stacked). @t is the table saved (for messages).
 */
int emb__dynamic_save_check(const EmbTable *t, EmbTable *const *tabs, int32_t ns);
int emb__dynamic_save_list(const EmbTable *t, EmbTable *const *tabs, int32_t ns, bool state,
                           EmbRowList *out);
void emb__dynamic_restore_extras(EmbTable *const *tabs, int32_t ns, EmbExtraTensor *extra,
                                 int *n);
int emb__dynamic_restore_stage(const EmbTable *t, EmbTable *const *tabs, int32_t ns,
                               const EmbStageIn *in, EmbRowStage **out);
void *emb__dynamic_stage_dst(EmbRowStage *s, int what, int64_t k);
void emb__dynamic_stage_commit_all(EmbTable *t, EmbRowStage *s);
void emb__dynamic_stage_free_all(EmbRowStage *s);

#endif
