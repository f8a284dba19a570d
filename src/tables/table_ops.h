/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * table_ops.h — the table contract: what every layer above src/tables/ may ask of a table,
 * whatever its kind. ARCHITECTURE.md "The table contract" is the overview and has the
 * checklist for a new kind; this header is the reference.
 *
 * Every EmbTable points at one EmbTableOps (t->ops, never NULL): three facets of function
 * pointers that the kind fills (dav1d / BLIS style: const static structs per kind), each
 * absent or complete — `rows` (every kind: acquire / column / release), `keyed` (rows
 * created by updates, state with the rows) and `listed` (rows listed in a checkpoint).
 * The defaults are provided once (table_impl.h: emb__rows_dense, emb__rows_release_none,
 * ...): a kind points at them, no entry is NULL. lookup/, update/, strategies/ and store/
 * call only the emb__table_* wrappers of table_impl.h, never `ops->` and never ask what
 * kind a table is; they test a facet at most once per operation.
 *
 * The fast path stays free: a simple (owned or wrapped) table sets t->data, and the hot
 * loops compute `data + column * stride` without any call (emb__column in table_impl.h).
 *
 * ---- Vocabulary ----
 * id        what a caller passes: a column index for dense kinds (0 <= id < ncolumns), a
 *           key for kinds whose rows appear (dynamic: 0 <= id < INT64_MAX).
 * row       the bytes of one id's values (featuresize elements of t->dtype); a row pointer
 *           is what the kernels read and write.
 * resident  a row pointer may be dereferenced. Rows of in-memory kinds are always resident;
 *           a kind whose rows facet pins (tiered: disk + DRAM cache) makes rows resident
 *           and pins them when they are acquired, and unpins them in `release`.
 * operation one public call that reads or writes rows: a lookup (emb_lookup, one table of
 *           emb_maplookup), an update step (emb_update, one table of emb_update_many), a
 *           checkpoint save or restore. Row pointers obtained in an operation are valid
 *           until its `release` (or, for kinds that do not pin, until the next
 *           operation that changes the table's structure: an update's commit, evict, import,
 *           restore).
 * serial    an entry marked [serial] runs on one thread with no other entry of the same
 *           table running; [parallel] entries may run on many threads at once over
 *           disjoint spans (they must not change the structure; they may pin).
 *
 * ---- Who calls what, when ----
 * lookup (lookup/lookup.c): acquire without rows over the whole batch (its kept ids, and
 *   the default id) before any output is written: where the kind pins it pins, where it
 *   refuses unknown ids it fails (EMB_ENOTFOUND); then per range of bags: acquire in spans
 *   of a chunk's kept ids (or the batch's ids: the gather), the pool or gather kernel over
 *   the row pointers (the owned table's contiguous data, data + id * stride, is the one
 *   fast path that skips the acquire: the bags kernel); release once per table when every
 *   range is done (emb_lookup, emb_maplookup).
 * update (update/plan.c): update_prepare for every table of the call (emb_update_many:
 *   all before any commit; update_cancel when the call is cancelled or another table
 *   failed), update_commit, then update_rows in spans of 64 distinct ids on the apply
 *   threads (or column(UPDATE) for kinds without update entries); release after the
 *   apply.
 * store (store/model.c, restore.c): save_check, listed->list ... close; extras,
 *   stage, stage_dst, then stage_commit (after every table of the restore staged) or
 *   stage_free.
 *
 * ---- A tiered kind (disk + DRAM cache), for example ----
 * acquire fetches missing rows synchronously and pins them (EMB_EIO when a read fails);
 * prefetch starts an asynchronous read; update_prepare fetches and pins every distinct
 * id's row (the step's only failure point) and marks it dirty, update_rows returns the
 * pinned rows, update_cancel and release unpin; list reads dirty rows
 * through the cache; stage builds the new content aside (a new file) and stage_commit
 * swaps it in. The rows it hands out are featuresize elements of t->dtype, as every kind's.
 *
 * ---- Errors ----
 * Fallible entries return 0 or a negative EMB_E* code set through emb__fail with a message
 * naming the table (emb__table_label) and the culprit (the id, the byte count, the file).
 * An entry that fails leaves the table as it was (nothing visible changes: a reservation
 * may stay, invisible). Entries documented "cannot fail" return void.
 */
#ifndef EMB_TABLE_OPS_H
#define EMB_TABLE_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "embtables/table.h"

struct EmbInitializer;

/* ---- spans ----------------------------------------------------------------------------- */

/* The most ids one acquire call is given (the lookup's spans). */
#define EMB_SPAN_MAX 128

/* Ids k0 .. k0 + n - 1 of a batch's id array (int32 when id32, else int64); n <= EMB_SPAN_MAX.
   Ids are validated by the caller (in range for dense kinds, >= 0 for keyed kinds). */
typedef struct EmbIdSpan {
    const void *ids;
    int id32;
    int64_t k0, n;
    /* acquire without rows: NULL, or weights of the batch's ids (w[k0 + k] for id k) whose
       entries <= 0 (or NaN) are pruned (EMB_PRUNE_NONPOSITIVE_WEIGHTS): not read */
    const float *pruned_w;
} EmbIdSpan;

EMB_INLINE int64_t emb__span_id(const EmbIdSpan *s, int64_t k)
{
    return s->id32 ? (int64_t)((const int32_t *)s->ids)[s->k0 + k]
                   : ((const int64_t *)s->ids)[s->k0 + k];
}

/* Bits an acquire may report in *hint. */
#define EMB_RESOLVE_PREFETCHED 1u /* the rows' lines were prefetched: the kernel need not */

/* ---- the update's row plan ------------------------------------------------------------- */

/*
 * What an update step tells a kind whose rows appear, move or must be resident
 * (update_prepare / update_commit / update_rows): the step's distinct ids, in parts (the
 * parallel indexing's partitions, processed in part order so that decisions and created
 * rows do not depend on the thread count), and one int64 handle per distinct id that the
 * kind owns (prepare and commit write it; update_rows reads it). A negative handle after
 * the commit means "skip this id" (dynamic: not admitted yet; the gradient is dropped).
 */
typedef struct EmbRowPlan {
    const int64_t *ids;        /* distinct ids, ndistinct of them */
    int64_t ndistinct;
    int nparts;                /* >= 1 */
    const int64_t *part_start; /* part p: ids[part_start[p] .. + part_len[p]); NULL: one part */
    const int64_t *part_len;
    int64_t *handle;           /* ndistinct entries, kind-owned meaning */
} EmbRowPlan;

EMB_INLINE void emb__rowplan_part(const EmbRowPlan *rp, int p, int64_t *d0, int64_t *n)
{
    *d0 = rp->part_start ? rp->part_start[p] : 0;
    *n = rp->part_start ? rp->part_len[p] : rp->ndistinct;
}

/* ---- checkpoints: rows listed for a save ----------------------------------------------- */

/* Element types of a kind's extra tensors (beside EmbDtype's F32 / F16 / BF16). */
typedef enum EmbElem {
    EMB_ELEM_I64 = 16, /* safetensors "I64" */
    EMB_ELEM_U16 = 17, /* safetensors "U16" */
    EMB_ELEM_I32 = 19, /* safetensors "I32" (an export's id remapping) */
} EmbElem;

/*
 * A kind's own tensor in a checkpoint, beside the values and the optimizer slots: saved as
 * "<table>/<suffix>" with ncolumns x width elements of `elem` (dynamic: "dynamic.ids" I64
 * [rows, 1], "dynamic.last" I64 [rows, 1], "dynamic.sketch" U16 [4 * shards, width]).
 * ncolumns < 0: one per listed row.
 */
typedef struct EmbExtraTensor {
    const char *suffix;
    int elem;          /* EmbElem or EmbDtype */
    int64_t ncolumns;
    int32_t width;
    bool optional;     /* restore: the file may lack it */
} EmbExtraTensor;

#define EMB_EXTRA_MAX 4

/*
 * The rows of a table in the fixed order a checkpoint holds them, as a kind lists them
 * (save_list); the store writes the values, the optimizer slots and the extra tensors from
 * it and then calls `close`. The order is a function of the table's content only (dynamic:
 * increasing id). A listing is a snapshot: nothing changes the table while it is open.
 * A tiered kind flushes or reads through its dirty rows here, and may fail (EMB_EIO); its
 * row() and state() may return NULL (a row that cannot be read: EMB_EIO, message set),
 * which fails the save.
 */
typedef struct EmbRowList {
    int64_t n;                                          /* rows listed */
    int64_t step;                                       /* the kind's update count (dynamic) */
    int nextra;
    EmbExtraTensor extra[EMB_EXTRA_MAX];
    /* row k's values, its optimizer state row (NULL: no state kept by the kind) */
    const void *(*row)(const struct EmbRowList *l, int64_t k);
    const float *(*state)(const struct EmbRowList *l, int64_t k);
    /* column j of extra tensor e (into *tmp when it is computed); cannot fail */
    const void *(*extra_column)(const struct EmbRowList *l, int e, int64_t j, int64_t *tmp);
    void (*close)(struct EmbRowList *l);
    void *priv;                                         /* the kind's */
} EmbRowList;

/*
 * A restore into a kind that lists its rows: the store reads the file's extra tensors for
 * the table (restore_extras names them) into memory and hands them to `stage`, which
 * checks them (EMB_ECORRUPT: ids or steps that cannot be; EMB_ESHAPE: a sketch of another
 * width) and allocates EVERYTHING the new content needs (EMB_ENOMEM): the only step that
 * may fail. The store then fills the rows and state rows through stage_dst (file order),
 * and either every staged table commits (stage_commit: swaps in, cannot fail) or every
 * stage is freed (stage_free): a failed restore changes no table.
 */
typedef struct EmbRowStage EmbRowStage;

typedef struct EmbStageIn {
    int64_t nrows;                     /* rows in the file */
    int64_t step;                      /* the kind's update count saved (EmbRowList.step) */
    const void *extra[EMB_EXTRA_MAX];  /* restore_extras' tensors as read (NULL: not in
                                          the file, for an optional one) */
    EmbExtraTensor shape[EMB_EXTRA_MAX]; /* their shapes in the file */
    const char *path, *name;           /* the file and the table's name in it: messages */
} EmbStageIn;

/* What stage_dst addresses: the values of row k, or its optimizer state row. */
enum { EMB_STAGE_VALUES = 0, EMB_STAGE_STATE = 1 };

/* ---- the three facets ------------------------------------------------------------------ */

/*
 * `rows` — every kind has it, complete (no NULL entry). Dense kinds point at a provided
 * implementation (emb__rows_dense in table_impl.h, or EMB_ROWS_BY_COLUMN for a kind with
 * its own column function); the provided defaults of single entries are declared there.
 */
typedef struct EmbRowsFacet {
    bool pins; /* rows must be made resident: acquire pins them until release (tiered) */
    bool keys; /* ids are keys and rows appear (dynamic): no ncolumns bound on ids */

    /* [parallel] The row of one in-range id for @ctx; cannot fail. On a kind that pins,
       valid only for ids acquired in the current operation. FORWARD of an id without a row
       gives the kind's default row (dynamic: the initial value). */
    void *(*column)(const EmbTable *t, int64_t id, EmbContext ctx);

    /* [parallel] Batched, fallible acquisition: cols[k] = the row of span id k for @ctx
       (FORWARD or NONE: reads only, never creates; UPDATE on a kind that pins: the rows are
       also marked dirty, for the variable ops' writes), k < s->n <= EMB_SPAN_MAX. A kind
       hashes, prefetches or fetches the whole span at once (dynamic: its index slots and
       rows); it may set EMB_RESOLVE_PREFETCHED in *hint. Returns 0, or EMB_EIO / EMB_ENOMEM
       (tiered: a fetch failed; cols undefined; what the call pinned is unpinned).
       With cols == NULL (then hint may be NULL) [serial]: the check of a read of the ids of
       @s (any length, not bound by EMB_SPAN_MAX; ids < 0 and entries s->pruned_w prunes
       are not read) before the lookup writes any output: a kind that pins makes the rows
       resident and pins them (EMB_EIO, EMB_ENOMEM); a kind whose FORWARD of an unknown id
       is refused (dynamic with EMB_DYN_MISSING_ERROR) returns EMB_ENOTFOUND naming the id;
       every other kind returns 0. */
    int (*acquire)(const EmbTable *t, const EmbIdSpan *s, EmbContext ctx, const void **cols,
                   unsigned *hint);

    /* [serial] The end of an operation: unpin what it acquired (tiered: dirty rows stay
       cached and are written back when evicted or saved). */
    void (*release)(const EmbTable *t);
} EmbRowsFacet;

/*
 * `keyed` — kinds whose rows are created, moved or fetched by updates and that keep the
 * optimizer state with their rows (dynamic, partitioned over dynamic shards, tiered).
 * Absent (NULL): the update writes column(t, id, UPDATE) in place and the optimizer keeps a
 * dense state table of ncolumns x width beside the table.
 */
typedef struct EmbKeyedFacet {
    /* [serial] emb_table_column_pointer with UPDATE: the row of @id for writing, created
       when missing (no admission). 0, EMB_ENOMEM, EMB_EIO. emb__keyed_column_acquire: one
       acquire with UPDATE. */
    int (*column_create)(EmbTable *t, int64_t id, void **out);
    /* [serial] Room for the rows of @n ids so that column(t, id, UPDATE) of any of them
       cannot fail afterwards (variable_ops' scatter writes). 0 or EMB_ENOMEM.
       emb__keyed_reserve_none: none needed. */
    int (*reserve_ids)(EmbTable *t, const int64_t *ids, int64_t n);
    /* [serial] emb_table_initialize for kinds whose rows are made later (every row as if
       created under @in, which also initialises rows created afterwards). */
    int (*initialize)(EmbTable *t, const struct EmbInitializer *in);

    /* [serial] Decide and reserve: per distinct id its handle (dynamic: its row index, -2
       to be created, -1 not admitted), room for every new row, pins / fetches (tiered).
       The only step of an update that may fail (EMB_ENOMEM, EMB_EIO); nothing visible
       changes. */
    int (*update_prepare)(EmbTable *t, EmbRowPlan *rp);
    /* [serial] Cannot fail: create the rows decided, count the step, mark rows dirty. */
    void (*update_commit)(EmbTable *t, EmbRowPlan *rp);
    /* [serial] A prepared step that will not commit (another table of the same
       emb_update_many / another rank failed): drop reservations and pins.
       emb__keyed_cancel_none: nothing to drop. */
    void (*update_cancel)(EmbTable *t, EmbRowPlan *rp);
    /* [parallel] After the commit: cols[k] / states[k] = the row and the optimizer state
       row of distinct ids d0 .. d0 + n - 1 (NULL col: skip it; states NULL when the caller
       asks no state). Cannot fail. */
    void (*update_rows)(const EmbTable *t, const EmbRowPlan *rp, int64_t d0, int64_t n,
                        void **cols, float **states);

    /* [serial] Keep @width floats of optimizer state with every row, each initialised from
       @init (rows created later too); *view = a table (f32, width wide) whose column(id) is
       id's state row, owned by the caller. 0, EMB_ENOMEM, EMB_ENOTSUP (state kept already). */
    int (*state_attach)(EmbTable *t, int32_t width, const float *init, EmbTable **view);
    /* Whether @view (an optimizer's state of the table) is the view state_attach made that
       is still attached. emb__keyed_state_unchecked: not checked. */
    bool (*state_is)(const EmbTable *t, const EmbTable *view);
} EmbKeyedFacet;

/*
 * `listed` — kinds that list their own rows in a checkpoint (dynamic, partitioned over
 * dynamic shards, tiered). Absent (NULL): a dense table: rows 0 .. ncolumns - 1 by column(),
 * state in the optimizer's dense state table, no extra tensor.
 */
typedef struct EmbListedFacet {
    /* [serial] Lists the rows for a save (EmbRowList above; with the optimizer state rows
       when @state and the kind keeps state). 0, EMB_ENOMEM, EMB_EIO. */
    int (*list)(const EmbTable *t, bool state, EmbRowList *out);
    /* [serial] For a delta (store/delta.c) of a kind whose ids are columns: lists only the
       rows of the @n increasing in-range @ids (tiered: those rows alone are read, never the
       untouched ones). 0, EMB_ENOMEM, EMB_EIO; emb__listed_ids_none: EMB_ENOTSUP (keyed
       kinds, whose deltas are found from their listing: store/delta_keyed.c). */
    int (*list_ids)(const EmbTable *t, const int64_t *ids, int64_t n, bool state,
                    EmbRowList *out);
    /* [serial] The extra tensors a restore reads for this table (suffix, element type;
       ncolumns < 0: one per row; `optional` ones may be absent), *n of them. */
    void (*extras)(const EmbTable *t, EmbExtraTensor *extra, int *n);
    /* [serial] Stage the new content (EmbStageIn above): 0, EMB_ECORRUPT, EMB_ESHAPE,
       EMB_ENOMEM. Then stage_dst (cannot fail; STATE: NULL when the table keeps no state),
       and stage_commit (cannot fail) or stage_free. */
    int (*stage)(const EmbTable *t, const EmbStageIn *in, EmbRowStage **out);
    void *(*stage_dst)(EmbRowStage *s, int what, int64_t k);
    void (*stage_commit)(EmbTable *t, EmbRowStage *s);
    void (*stage_free)(EmbRowStage *s);
} EmbListedFacet;

/* ---- the operations table -------------------------------------------------------------- */

typedef struct EmbTableOps {
    const char *kind;              /* "simple", "custom", "dynamic", ...: for messages */
    const EmbRowsFacet *rows;      /* never NULL */
    const EmbKeyedFacet *keyed;    /* NULL: dense rows, updated in place */
    const EmbListedFacet *listed;  /* NULL: a dense checkpoint */

    /* [serial] Checks that the table can be saved (0 or EMB_ENOTSUP / EMB_EINVAL with the
       reason: dynamic shards with different sketch widths; a state view). NULL: it can. */
    int (*save_check)(const EmbTable *t);
    /* Shards of a partitioned kind (NULL: none): emb_table_nshards / emb_table_shard, and
       the dynamic tables' public functions over a table partitioned over dynamic shards. */
    int32_t (*nshards)(const EmbTable *t);
    EmbTable *(*shard)(const EmbTable *t, int32_t i);
    /* Frees the kind's private state (t->impl); NULL: nothing. */
    void (*destroy)(EmbTable *t);
} EmbTableOps;

#endif
