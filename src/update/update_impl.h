/*
 * update_impl.h — the insides of the update layer: gradients, the indexer, the optimizer
 * state and the per-table plan that emb_update / emb_update_many execute.
 *
 * A step for one table has two phases:
 *   index  (emb__plan_index)  validate the gradient, expand a lazy pullback into entries,
 *                             group the gradient rows by distinct id (the indexer);
 *   apply  (emb__plan_apply)  for a range of distinct columns: sum the column's rows in
 *                             row order and apply the optimizer row kernel once.
 * Indexing writes only the indexer; applying writes only its own columns and their state,
 * so ranges of distinct columns can run on any threads in any order with identical
 * results.
 */
#ifndef EMB_UPDATE_IMPL_H
#define EMB_UPDATE_IMPL_H

#include "embtables/update.h"
#include "internal.h"
#include "kernels/optim.h"
#include "lookup/pullback.h"

typedef enum EmbGradKind {
    EMB_GRAD_EMPTY = 0,
    EMB_GRAD_PULLBACK = 1, /* lazy: batch + pooling + output gradient */
    EMB_GRAD_SPARSE = 2,   /* materialised ids + rows */
} EmbGradKind;

struct EmbGrad {
    EmbGradKind kind;
    const EmbTable *table;
    /* pullback */
    EmbBatch batch;
    EmbPooling pooling;
    const float *dy;
    int64_t dy_stride;
    /* sparse */
    EmbSparseGrad sparse;
};

/* Open-addressing slot: valid when gen equals the indexer's generation. */
typedef struct EmbSlot {
    int64_t id;
    uint32_t gen;
    int32_t dist;
} EmbSlot;

#define EMB_MAX_PARTS 64

struct EmbIndexer {
    /* hash of id -> distinct index */
    EmbSlot *slots;
    int64_t nslots; /* power of two */
    uint32_t gen;
    /* per gradient row */
    int32_t *row_dist;
    int64_t *idbuf;     /* int64 copy of int32 ids */
    /* gradient rows grouped by distinct id (group d at [starts[d], starts[d+1]), each in
       row order): the row's f32 values and its coefficient (filled by plan.c); void
       pointers, as the pool kernel that sums them takes */
    const void **grow;
    float *gcoef;
    EmbPullEntry *entries;
    int64_t row_cap, entry_cap;
    /* per distinct id */
    int64_t *ids, *counts, *starts, *cursor; /* starts has ndistinct + 1 entries */
    int64_t dist_cap;
    /* result */
    int64_t nrows, ndistinct;
    /* partitioned indexing (pindex.c): rows regrouped by partition, then per partition
       its row range, hash region and distinct count; per chunk its entry range and its
       row counts per partition (then scatter offsets) */
    int64_t *pid;
    const void **prow;
    float *pcoef;
    int64_t part_start[EMB_MAX_PARTS + 1], slot_start[EMB_MAX_PARTS + 1];
    int64_t pdist[EMB_MAX_PARTS], pent0[EMB_MAX_PARTS], pentn[EMB_MAX_PARTS];
    int64_t pcnt[EMB_MAX_PARTS * EMB_MAX_PARTS];
    /* emb_update's scratch: two rows of the largest feature size */
    float *scratch;
    int32_t scratch_d;
};

/* Per-table optimizer state. */
typedef struct EmbOptState {
    const EmbTable *table;
    EmbTable *slot;   /* shadow table (NULL for SGD) */
    int32_t width;    /* f32 per column in slot */
    int64_t step;     /* updates applied */
} EmbOptState;

/* Everything the apply phase needs for one table in one call. */
typedef struct EmbPlan EmbPlan;

struct EmbOptimizer {
    EmbOptimizerConfig cfg;
    EmbOptState *states;
    int64_t nstates, cap;
    EmbPlan *plans;    /* emb_update_many's per-table plans, grown, reused */
    int64_t plan_cap;
};

struct EmbPlan {
    EmbTable *table;
    const EmbGrad *grad;
    EmbIndexer *ix;
    EmbOptimizerKind kind;
    EmbOptimParams params;
    EmbTable *state;           /* shadow table or NULL */
    emb_sgd_row_fn sgd;
    emb_optim_row_fn row;
    emb_pool_fn pool;          /* sums a column's gradient rows (f32) */
    bool max_norm;             /* rows need emb__pullback_row */
    int nparts;                /* partitions of the parallel indexing (pindex.c) */
    int rc;                    /* emb_update_many: phase 1 result */
};

/* ---- indexer (indexer.c) --------------------------------------------------------------- */

/* Makes room for @rows gradient rows (and as many distinct ids); 0 or EMB_ENOMEM. */
int emb__indexer_reserve(EmbIndexer *ix, int64_t rows);
/* Slots of a hash for @rows rows (a power of two, load <= 1/2). */
int64_t emb__indexer_hash_size(int64_t rows);
/* At least @nslots hash slots (all free afterwards when it grows); 0 or EMB_ENOMEM. */
int emb__indexer_reserve_slots(EmbIndexer *ix, int64_t nslots);
/* Starts a new step: every slot becomes free. */
void emb__indexer_next_generation(EmbIndexer *ix);
/*
 * Groups @n ids (int64 at `base + k * stride` bytes) as rows r0 .. r0+n of the indexer,
 * hashing into slots [slot0, slot0 + nslots) (a power of two): the distinct ids go to
 * ids / counts / starts / cursor from index r0 on, with starts counted from r0, and
 * row_dist[r0 + k] is row k's distinct index relative to r0. Returns the distinct count.
 */
int64_t emb__indexer_group_at(EmbIndexer *ix, const void *base, size_t stride, int64_t n,
                              int64_t slot0, int64_t nslots, int64_t r0);
/* Room for @n pullback entries; 0 or EMB_ENOMEM. */
int emb__indexer_reserve_entries(EmbIndexer *ix, int64_t n);
/*
 * Groups @n ids read at `base + k * stride` bytes (int64) after emb__indexer_reserve:
 * ids / counts / starts of the distinct ids, row_dist of every row, and cursor[d] =
 * starts[d], ready for the caller's scatter of rows into grow / gcoef.
 */
void emb__indexer_group(EmbIndexer *ix, const void *base, size_t stride, int64_t n);
/* The distinct index of @id in the last grouping, or -1. */
int64_t emb__indexer_find(const EmbIndexer *ix, int64_t id);

/* ---- gradients (grad.c) ---------------------------------------------------------------- */

/*
 * Checks @g against @t without writing anything: bound to @t, batch / ids in range, sizes.
 * Sets the thread's error message. Returns 0 or an error code.
 */
int emb__grad_check(const EmbTable *t, const EmbGrad *g);
/* Rows of @g (pullback: at most emb__pullback_max_entries). */
int64_t emb__grad_max_rows(const EmbGrad *g);

/* ---- optimizer (optimizer.c) ----------------------------------------------------------- */

/* The state of @t, created when missing (0, EMB_ENOMEM, EMB_EOVERFLOW). */
int emb__optimizer_state(EmbOptimizer *opt, const EmbTable *t, EmbOptState **out);
/* Fills the optimizer part of @plan for @st's next step (increments nothing). */
void emb__plan_optimizer(const EmbOptimizer *opt, const EmbOptState *st, EmbPlan *plan,
                         const EmbOptimKernels *k, unsigned flags);

/* ---- plan (plan.c) --------------------------------------------------------------------- */

/* Checks plan->grad (message on the calling thread) and makes room in plan->ix. */
int emb__plan_prepare(EmbPlan *plan);
/*
 * Phase 1: checks and indexes plan->grad into plan->ix. Thread-safe across plans.
 * Returns 0 or an error code (its message only on the calling thread).
 */
int emb__plan_index(EmbPlan *plan);
/* Phase 2: applies distinct columns [d0, d1) using @scratch (2 * featuresize floats). */
void emb__plan_apply(const EmbPlan *plan, int64_t d0, int64_t d1, float *scratch);
/* The distinct index where rows [0, row) end: splits balanced by gradient rows. */
int64_t emb__plan_split(const EmbPlan *plan, int64_t split, int64_t nsplits);

/* ---- parallel indexing (pindex.c) -------------------------------------------------------
 * The index phase of one table cut into @nparts chunks of rows and @nparts partitions of
 * ids (by hash): prepare (serial: checks, room), chunk c (entries, counts per partition),
 * offsets (serial), scatter c (rows into partitions, in row order), group p (hash of
 * partition p), finish (serial: distinct ids made contiguous). Each distinct id lives in
 * one partition and its rows keep their order, so every column's sum is the same as with
 * emb__plan_index; only the order of the distinct ids differs (partition-major).
 */
int emb__pindex_prepare(EmbPlan *plan, int nparts);
void emb__pindex_chunk(EmbPlan *plan, int c);
int emb__pindex_offsets(EmbPlan *plan);
void emb__pindex_scatter(EmbPlan *plan, int c);
void emb__pindex_group(EmbPlan *plan, int p);
void emb__pindex_finish(EmbPlan *plan);

#endif
