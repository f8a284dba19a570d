/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * update_impl.h — the insides of the update layer: gradients, the indexer, the optimizer
 * state and the per-table plan that emb_update executes; the contract the ensemble
 * operations of strategies/ (emb_update_many) use to run the same phases on many tables.
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
#include "kernels/kernels.h"
#include "tables/table_ops.h"
#include "update/pullback.h"

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
/* The counter optimizer's half-life decay factors kept per plan (EmbPlan.counter_decay). */
#define EMB_COUNTER_DECAYS 64

struct EmbIndexer {
    /* hash of id -> distinct index */
    EmbSlot *slots;
    int64_t nslots; /* capacity: any size (a partitioned call's regions side by side) */
    int64_t hslots; /* the region of the last emb__indexer_group (a power of two), or 0 */
    uint32_t gen;
    /* per gradient row */
    int32_t *row_dist;
    int64_t *idbuf;     /* int64 copy of int32 ids */
    uint64_t *sbuf;     /* 2 per row: emb__indexer_group_sorted's radix sort */
    const uint64_t *sorted; /* after it, the rows in group order (low 32 bits: the row) */
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
    /* result: emb_indexer_distinct's arrays are ids / counts, or after a partitioned
       grouping idbuf / cursor (free then), where the apply tasks compact the partitions'
       distinct lists (pindex.c), so that no serial pass over them remains */
    int64_t nrows, ndistinct;
    const int64_t *res_ids, *res_counts;
    /* partitioned indexing (pindex.c): each chunk's rows sorted by partition (pid / prow
       / pcoef, in the chunk's own range); per partition its row range in the grouping,
       hash region and distinct count; per chunk its entry range and, per partition, the
       start of its segment (pseg[c * nparts + p], counts until the chunk converts them) */
    int64_t *pid;
    const void **prow;
    float *pcoef;
    int64_t part_start[EMB_MAX_PARTS + 1], slot_start[EMB_MAX_PARTS + 1];
    int64_t pdist[EMB_MAX_PARTS], pent0[EMB_MAX_PARTS], pentn[EMB_MAX_PARTS];
    int64_t pout[EMB_MAX_PARTS]; /* partition p's first index in the compacted result */
    int64_t pseg[EMB_MAX_PARTS * EMB_MAX_PARTS];
    int prc[EMB_MAX_PARTS]; /* per chunk: its ids' check (0 or an error code) */
    /* per distinct id, the handle of a planned table's row (table_ops.h: EmbRowPlan),
       from emb__plan_rows_prepare / _commit */
    int64_t *handle;
    int64_t handle_cap;
    /* MAX pooling's routing (emb__plan_max_prepare): per bag and element the id that gave
       the forward's maximum (nbags x D), and one row of running maxima */
    int64_t *maxid;
    float *maxval;
    int64_t max_cap;
    int32_t maxval_d;
    /* emb_update's scratch: three rows of the largest feature size */
    float *scratch;
    int32_t scratch_d;
    /* the global norm's pass (clip_norm.c): each distinct column's summed gradient, for
       the apply to read instead of summing its rows again. Per column index d < sum_cap:
       sum_grow[d] is the sum (in sum_rows + d * sum_d) or the column's one row in place,
       sum_starts[d] = d and sum_coef[d] = 1 (a column of one row, coefficient 1) */
    float *sum_rows;
    const void **sum_grow;
    int64_t *sum_starts;
    float *sum_coef;
    int64_t sum_cap;
    int32_t sum_d;
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
};

struct EmbPlan {
    EmbTable *table;
    const EmbGrad *grad;
    EmbIndexer *ix;
    EmbOptimizerKind kind;
    EmbOptimParams params;
    float decay_l2;            /* weight decay: g += decay_l2 * w (0: none) */
    float decay_scale;         /* decoupled weight decay: w *= decay_scale (1: none) */
    EmbTable *state;           /* shadow table or NULL */
    emb_sgd_row_fn sgd;
    emb_rows_fn range;         /* the optimizer on a range of columns (or NULL) */
    emb_opt_row_fn row;
    emb_pool_fn pool;          /* sums a column's gradient rows (f32) */
    bool max_norm;             /* rows need emb__pullback_row (max_norm or MAX pooling) */
    const int64_t *maxid;      /* MAX pooling: the indexer's routing, else NULL */
    int nparts;                /* partitions of the parallel indexing (pindex.c) */
    bool sort_ids;             /* distinct ids ascending whatever the rows (plan.c) */
    bool planned;              /* rows by the table's update_rows (emb__plan_rows_commit) */
    EmbRowPlan rp;             /* the table's row plan, for a planned table */
    int64_t ost_index;         /* emb_update_many: the optimizer state's index in states */
    bool requant;              /* quantized rows: the kernels run on the row as f32, which
                                  is then quantized again, rounded stochastically by the
                                  generator at (qseed, column, step) */
    emb_requant_fn requant_row; /* the re-quantization kernel (with requant) */
    uint64_t qseed;            /* the table's seed: a hash of its name */
    int64_t step;              /* the optimizer's step count of the table before this one */
    /* low-precision state and rounding (lowp.c) */
    bool state_lowp;           /* the state is f16 / bf16: stepped as f32 in scratch */
    emb_requant_fn state_store; /* writes a state row back (with state_lowp) */
    bool sround;               /* f16 / bf16 rows and state rounded stochastically */
    int rc;                    /* emb_update_many: phase 1 result */
    /* gradient clipping (clip.c): EmbOptimizerConfig's max_gradient and max_row_norm (0:
       off), the call's global-norm factor (1: none), whether any is on */
    float clip_value, clip_norm, clip_scale;
    bool clip;
    /* EMB_OPT_ROWWISE_ADAGRAD_COUNTER (counter.c): the optimizer's config, else NULL */
    const EmbOptimizerConfig *counter;
    emb_sgd_row_fn counter_sgd; /* its step without weight decay: w -= adj * g */
    /* the half-life decay's log_rho = ln 2 / halflife and its factors exp(-k log_rho) for
       k < EMB_COUNTER_DECAYS, the same bits as computed per row (counter.c) */
    float counter_log_rho;
    float counter_decay[EMB_COUNTER_DECAYS];
    /* the global norm's pass keeps every column's summed gradient (ix->sum_grow; when the
       sums are no more rows than the gradient's source: emb__clip_sums_reserve), and once
       it ran the apply reads them as columns of one row (summed) */
    bool keep_sums, summed;
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
/* A run of rows: elements [start, start + n) of an array. */
typedef struct EmbSeg {
    int64_t start, n;
} EmbSeg;
/*
 * Groups the ids (int64 at `base + k * stride` bytes) of @nseg segments, in order, as rows
 * r0, r0 + 1, ... of the indexer, hashing into slots [slot0, slot0 + nslots) (a power of
 * two): the distinct ids go to ids / counts / starts / cursor from index r0 on, with starts
 * counted from r0, and row_dist[r0 + k] is the k-th row's distinct index relative to r0.
 * Returns the distinct count.
 */
int64_t emb__indexer_group_at(EmbIndexer *ix, const void *base, size_t stride,
                              const EmbSeg *segs, int nseg, int64_t slot0, int64_t nslots,
                              int64_t r0);
/* Room for @n pullback entries; 0 or EMB_ENOMEM. */
/* Room for MAX pooling's routing: @n ids and @D running maxima (EMB_ENOMEM). */
int emb__indexer_reserve_max(EmbIndexer *ix, int64_t n, int32_t D);
int emb__indexer_reserve_entries(EmbIndexer *ix, int64_t n);
/*
 * Groups @n ids read at `base + k * stride` bytes (int64) after emb__indexer_reserve:
 * ids / counts / starts of the distinct ids, row_dist of every row, and cursor[d] =
 * starts[d], ready for the caller's scatter of rows into grow / gcoef.
 */
void emb__indexer_group(EmbIndexer *ix, const void *base, size_t stride, int64_t n);
/*
 * Groups as emb__indexer_group does, but by sorting the rows by id (an LSD radix sort of
 * id << 32 | row: stable, so each id's rows stay in row order) where the ids are columns
 * of a table of @ncolumns <= 2^32: the distinct ids come in ascending order and
 * `ix->sorted[pos]`'s low 32 bits are the row at group position pos (the caller gathers;
 * no row_dist, cursor or hash: emb__indexer_find finds nothing). Returns false, having
 * grouped nothing, where it does not apply.
 */
bool emb__indexer_group_sorted(EmbIndexer *ix, const void *base, size_t stride, int64_t n,
                               int64_t ncolumns);
/* The distinct index of @id in the last emb__indexer_group, or -1. */
int64_t emb__indexer_find(const EmbIndexer *ix, int64_t id);

/* ---- update (update.c) ----------------------------------------------------------------- */

/* Checks emb_update's / emb_update_many's flags (EMB_EINVAL for unknown bits). */
int emb__update_flags_check(unsigned flags);

/* ---- gradients (grad.c) ---------------------------------------------------------------- */

/*
 * Checks @g against @t without writing anything: bound to @t, batch / ids in range, sizes.
 * Sets the thread's error message. Returns 0 or an error code.
 */
int emb__grad_check(const EmbTable *t, const EmbGrad *g);
/* emb__grad_check, but the ids are not checked unless @check_ids (the partitioned
   indexing checks them in its parallel chunks: emb__grad_check_ids). */
int emb__grad_check_ex(const EmbTable *t, const EmbGrad *g, bool check_ids);
/* Ids [k0, k1) of @g (the batch's ids of a pullback, pruned ones skipped, or the sparse
   rows' ids) in range; 0 or EMB_ERANGE naming the first bad one. */
int emb__grad_check_ids(const EmbTable *t, const EmbGrad *g, int64_t k0, int64_t k1);
/* emb_lookup_backward in two parts: every check (the ids too when @ids), then the
   recording (which checks nothing): emb_maplookup_backward checks every table before it
   records any, and leaves the ids to the update (its parallel chunks or index tasks). */
int emb__lookup_backward_check(const EmbTable *table, const EmbBatch *batch,
                               const EmbPooling *pooling, const float *grad_out,
                               int64_t grad_stride, bool ids);
void emb__lookup_backward_record(const EmbTable *table, const EmbBatch *batch,
                                 const EmbPooling *pooling, const float *grad_out,
                                 int64_t grad_stride, EmbGrad *grad);
/* Rows of @g (pullback: at most emb__pullback_max_entries). */
int64_t emb__grad_max_rows(const EmbGrad *g);

/* ---- optimizer (optimizer.c) ----------------------------------------------------------- */

/* The state of @t, created when missing (0, EMB_ENOMEM, EMB_EOVERFLOW). */
int emb__optimizer_state(EmbOptimizer *opt, const EmbTable *t, EmbOptState **out);
/* The state of @t, or NULL (creates nothing, sets no message). */
EmbOptState *emb__optimizer_find(const EmbOptimizer *opt, const EmbTable *t);

/* One slot of a kind's per-column state: elements [off, off + width) of a state column. */
typedef struct EmbOptSlot {
    const char *name;
    int32_t off, width;
} EmbOptSlot;

/* The slots of @kind for feature size @D into @slots; returns their number (0 to 2). */
int emb__optimizer_slots(EmbOptimizerKind kind, int32_t D, EmbOptSlot slots[2]);
/* "sgd", "adagrad", "rowwise_adagrad", "ftrl", "adam"; NULL for another value. */
const char *emb__optimizer_kind_name(EmbOptimizerKind kind);

/* Fills the optimizer part of @plan for @st's next step (increments nothing). */
/* ---- low-precision state and rounding (lowp.c) ------------------------------------------ */

/* Floats of update scratch per element of featuresize: acc, tmp, the row as f32 (D each)
 * and a 16-bit state row as f32 (up to 2 D). */
#define EMB_PLAN_SCRATCH_ROWS 5
/* Sets @plan's rounding and state fields from @c (after its state and requant fields);
 * f16 / bf16 rows rounded stochastically then compute in f32 (*cdt). */
void emb__plan_lowp(const EmbOptimizerConfig *c, EmbPlan *plan, EmbDtype *cdt);
/* A 16-bit state row (of distinct id @id) written back from its f32 copy @x. */
void emb__plan_state_store(const EmbPlan *plan, int64_t id, void *state, const float *x);
/* Whether @plan's step takes emb__lowp_apply: a 16-bit state or an f16 / bf16 row rounded
 * stochastically, on in-memory tables, with none of the general loop's per-column work
 * (max_norm, weight decay, the counter optimizer). */
bool emb__lowp_fast(const EmbPlan *plan);
/* emb__plan_apply for such a plan: the same kernels, rows and order as its general loop,
 * with SIMD row conversions (the gather kernels) and no per-column tests. */
void emb__lowp_apply(const EmbPlan *plan, int64_t d0, int64_t d1, float *scratch);

void emb__plan_optimizer(const EmbOptimizer *opt, const EmbOptState *st, EmbPlan *plan,
                         unsigned flags);

/* ---- plan (plan.c) --------------------------------------------------------------------- */

/* Checks plan->grad (message on the calling thread) and makes room in plan->ix. */
int emb__plan_prepare(EmbPlan *plan);
/* emb__plan_prepare, leaving the ids to the chunks when @check_ids is false (the caller
   then calls emb__plan_max_prepare once they are checked). */
int emb__plan_prepare_ex(EmbPlan *plan, bool check_ids);
/* A MAX pooling's gradient (after its ids are checked, before any apply): its routing into
   the indexer (emb__pullback_max_ids), plan->maxid set; 0 for any other gradient. */
int emb__plan_max_prepare(EmbPlan *plan);
/*
 * Phase 1: checks and indexes plan->grad into plan->ix. Thread-safe across plans.
 * Returns 0 or an error code (its message only on the calling thread).
 */
int emb__plan_index(EmbPlan *plan);
/*
 * Between the phases, for a table whose rows its update steps resolve (table_ops.h:
 * update_prepare / update_commit; dynamic tables), serially: prepare decides every
 * distinct id's row (dynamic: existing, to create, not admitted) and makes room (0 or
 * EMB_ENOMEM / EMB_EIO, nothing of the table written); commit creates the rows and sets
 * plan->planned; cancel (a prepared step that will not commit) drops what prepare
 * reserved. For another table all three do nothing. emb_update_many prepares every table
 * before it commits any.
 */
int emb__plan_rows_prepare(EmbPlan *plan);
void emb__plan_rows_commit(EmbPlan *plan);
void emb__plan_rows_cancel(EmbPlan *plan);
/* The summed gradient of distinct column @d of an indexed plan (plan->pool set): a row of
   the gradient itself, or @acc (featuresize floats; @tmp as many, used with max_norm).
   The apply phase's sum, exposed for emb_collection_grad_rows. */
const float *emb__plan_column_grad(const EmbPlan *plan, int64_t d, float *acc, float *tmp);
/* Phase 2: applies distinct columns [d0, d1) using @scratch (3 * featuresize floats: the
 * column's gradient, a second row for weight decay, the f32 row of a quantized one). */
void emb__plan_apply(const EmbPlan *plan, int64_t d0, int64_t d1, float *scratch);

/* Gradient, table and state rows into L2 (prefetcht1): on this EPYC, 16 columns ahead into
 * L1 stalls on fill buffers and runs the update 1.4x slower. The asm form because GCC 12 at -O3 drops __builtin_prefetch
 * in this loop nest (kept with -fno-aggressive-loop-optimizations). */
static inline void emb__prefetch_line(const char *p)
{
#if EMB_ARCH_X86 && defined(__GNUC__)
    __asm__ volatile("prefetcht1 %0" : : "m"(*p));
#else
    __builtin_prefetch(p, 0, 2);
#endif
}

static inline void emb__prefetch_rows(const char *p, size_t bytes)
{
    for (size_t o = 0; o < bytes; o += 64)
        emb__prefetch_line(p + o);
}

/* ---- gradient clipping (clip.c, clip_norm.c) ----------------------------------------------- */

/* An exact sum of non-negative f32 terms: limb k holds bits [32k, 32k + 32) of the
   fixed-point sum in units of 2^-149 (beyond 32 bits until normalized); non-finite terms
   summed apart in @special. Integer addition: any order of terms gives the same sum. */
#define EMB_NORM_LIMBS 10
typedef struct EmbNormAcc {
    uint64_t limb[EMB_NORM_LIMBS];
    double special;
} EmbNormAcc;

/* The clipping part of @plan from @c (clip_scale 1): emb__plan_optimizer calls it. */
void emb__plan_clip(const EmbOptimizerConfig *c, EmbPlan *plan);
/* The clipped gradient of a column whose summed gradient is @g, into @out (may be @g). */
const float *emb__clip_grad(const EmbPlan *plan, const float *g, float *out);
/* Σ g² of @g clipped as emb__clip_grad clips it, the same bits, without writing it (into
   @row: D floats) where it is not row-clipped (clip.c; the global norm's terms). */
float emb__clip_sumsq(const EmbPlan *plan, const float *g, float *row, int32_t D);
/* Whether @plan's norm pass keeps its column sums (plan->keep_sums), and room in its
   indexer for them (clip_norm.c), before it runs; 0 or EMB_ENOMEM (nothing written). */
int emb__clip_sums_reserve(EmbPlan *plan);
/* Adds Σ g² of the element- and row-clipped gradient of distinct columns [d0, d1) of an
   indexed plan into @acc (@scratch: 3 * featuresize floats), and keeps each column's summed
   gradient for the apply (ix->sum_grow; emb__clip_sums_reserve first); nothing without
   clipping. */
void emb__clip_norm_range(const EmbPlan *plan, int64_t d0, int64_t d1, float *scratch,
                          EmbNormAcc *acc);
/* @dst += @src. */
void emb__norm_acc_merge(EmbNormAcc *dst, const EmbNormAcc *src);
/* The global factor for the norm sqrt(@acc): min(1, max_norm / (norm + 1e-6)); 1 when
   @max_norm is 0. */
float emb__clip_global_scale(const EmbNormAcc *acc, float max_norm);

/* ---- counter-based row-wise Adagrad (counter.c) ----------------------------------------- */

/* The counter fields of @c (kind EMB_OPT_ROWWISE_ADAGRAD_COUNTER): 0, EMB_EINVAL,
   EMB_ENOTSUP (learning_rate_mode 0 or 1), naming the field. */
int emb__counter_check(const EmbOptimizerConfig *c);
/* The counter optimizer's part of @plan (plan->counter; the generic weight decay off); @cdt:
   the dtype its rows are stepped in (f32 for quantized rows and stochastic rounding). */
void emb__plan_counter(const EmbOptimizerConfig *c, EmbPlan *plan, EmbDtype cdt);
/* One column's step: row @w (of dtype @dt), its state @s ([h, prev_iter, counter]), its
   gradient @g (clipped, summed). */
void emb__counter_row(const EmbPlan *plan, EmbDtype dt, void *w, float *s, const float *g);
/* The counter's row rate (emb_rows_rate_fn; @ctx the EmbPlan): counts, adds Σ g² / D to h. */
float emb__counter_rate(const void *ctx, float *s, float sumsq);

/* ---- parallel indexing (pindex.c) -------------------------------------------------------
 * The index phase of one table cut into @nparts chunks of rows and @nparts partitions of
 * ids (by hash): prepare (serial: checks, room), chunk c (checks its ids, expands its rows
 * and sorts them by partition within its own range), offsets (serial, nparts^2: where each
 * partition's rows go), group p (partition p over its segment of every chunk, in chunk
 * order, i.e. row order: a stable radix sort by hash when most ids are distinct, else a
 * hash), finish (serial, nparts: where each partition's distinct ids
 * go). Partition p's distinct ids stay at index part_start[p] on (ids / counts / starts),
 * and its last one's rows end at starts[part_start[p] + pdist[p]], so the apply tasks work
 * on them in place (emb__pindex_apply_range) and each compacts the ids it applied into the
 * result (emb__pindex_compact): no serial pass grows with the batch, and the phase has two
 * parallel steps. Each distinct id lives in one partition and its rows keep their order,
 * so every column's sum is the same as with emb__plan_index; only the order of the
 * distinct ids differs (partition-major).
 */
int emb__pindex_prepare(EmbPlan *plan, int nparts);
void emb__pindex_chunk(EmbPlan *plan, int c);
/* After every chunk: 0, or the first failed chunk's code with the whole check re-run on
   the calling thread for its message (nothing but the indexer has been written). */
int emb__pindex_checked(EmbPlan *plan);
int emb__pindex_offsets(EmbPlan *plan);
void emb__pindex_group(EmbPlan *plan, int p);
void emb__pindex_finish(EmbPlan *plan);
/* The distinct indices [*d0, *d1) of apply task @s of @a of partition @p (balanced by
   rows); with one partition (an unsplit grouping) of the whole table. */
void emb__pindex_apply_range(const EmbPlan *plan, int p, int64_t s, int64_t a, int64_t *d0,
                             int64_t *d1);
/* After applying [d0, d1) of partition @p: their ids and counts into the result. */
void emb__pindex_compact(const EmbPlan *plan, int p, int64_t d0, int64_t d1);

#endif
