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
    uint32_t gen;
    int32_t dist;
} EmbSlot;

struct EmbIndexer {
    /* hash of id -> distinct index */
    EmbSlot *slots;
    int64_t nslots; /* power of two */
    uint32_t gen;
    /* per gradient row */
    int32_t *row_dist;
    int32_t *order;     /* row indices grouped by distinct id, each group in row order */
    int64_t *idbuf;     /* int64 copy of int32 ids */
    EmbPullEntry *entries;
    int64_t row_cap, entry_cap;
    /* per distinct id */
    int64_t *ids, *counts, *starts, *cursor; /* starts has ndistinct + 1 entries */
    int64_t dist_cap;
    /* result */
    int64_t nrows, ndistinct;
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
    bool max_norm;             /* rows need emb__pullback_row */
    int rc;                    /* emb_update_many: phase 1 result */
};

/* ---- indexer (indexer.c) --------------------------------------------------------------- */

/* Makes room for @rows gradient rows (and as many distinct ids); 0 or EMB_ENOMEM. */
int emb__indexer_reserve(EmbIndexer *ix, int64_t rows);
/* Room for @n pullback entries; 0 or EMB_ENOMEM. */
int emb__indexer_reserve_entries(EmbIndexer *ix, int64_t n);
/* Groups @n ids read at `base + k * stride` bytes (int64) after emb__indexer_reserve. */
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

/*
 * Phase 1: checks and indexes plan->grad into plan->ix. Thread-safe across plans.
 * Returns 0 or an error code (its message only on the calling thread).
 */
int emb__plan_index(EmbPlan *plan);
/* Phase 2: applies distinct columns [d0, d1) using @scratch (2 * featuresize floats). */
void emb__plan_apply(const EmbPlan *plan, int64_t d0, int64_t d1, float *scratch);
/* The distinct index where rows [0, row) end: splits balanced by gradient rows. */
int64_t emb__plan_split(const EmbPlan *plan, int64_t split, int64_t nsplits);

#endif
