/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * maplookup.c — emb_maplookup(): many tables, each with its own batch, under a strategy.
 *
 * A call has four steps. (1) The layout is checked on the caller (cheap: table pointers,
 * bag counts of a concat output, widths). (2) Every table's batch and output are
 * validated, on the strategy's threads (the id scan is O(nnz) and would otherwise be a
 * serial fraction of every call); a failure is re-checked on the caller so that the
 * message of the first failing table, in table order, is the one reported. (3) Every
 * table's rows are acquired (emb__lookup_acquire: a tiered table reads its misses and
 * pins them, a dynamic table that refuses unknown ids checks them), the one step that
 * may fail on a valid call, on the strategy's threads too: a failure is
 * reported as the first failing table's, in table order, its code with its own message
 * (kept in the slot by the thread that failed), and nothing has been written. So a
 * failed call writes no output, under every strategy. (4) The work runs: sequential = tables in order on the caller; parallel = whole tables, largest
 * first, handed out dynamically (list scheduling in LPT order); prealloc-concat = every
 * table cut into bag chunks, handed out table-major (the chunks of the largest table
 * first, in row order): a thread's next task is usually the rows after its last one, and
 * the threads share one or two tables at a time (measured: chunk-major order, chunk c of
 * every table before chunk c + 1, loses 10-30% even on one thread, as every task then
 * moves to another table's pages). Each piece of work is
 * emb__lookup_range() on its own rows, so results do not depend on the strategy or thread
 * count. The per-call plan lives in a strategy-owned buffer: no allocation once warm.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lookup/batch.h"
#include "lookup/lookup_impl.h"
#include "strategies/strategy_impl.h"
#include "tables/table_impl.h"

/* Fewest bags an automatic prealloc-concat chunk holds. */
#define MIN_CHUNK_BAGS 32
/* Automatic chunking aims at this many tasks per thread. */
#define TASKS_PER_THREAD 8

/* One table's part of a call: where its rows go and what it costs. */
typedef struct Slot {
    float *out;
    int64_t stride;
    double work; /* bytes moved: nnz x row bytes + nbags x 4 x D */
    int result;  /* validation result, then the pin's, then the lookup's */
    int failed;  /* a thread claimed msg (chunks of one table may fail at once) */
    char msg[512]; /* the message of the failure in result, from the thread that had it */
} Slot;

typedef struct Call {
    EmbTable *const *tables;
    const EmbBatch *batches;
    const EmbPooling *poolings;
    const EmbOutputs *outputs;
    Slot *slots;
    int64_t *order; /* parallel: table indices, most work first */
    int64_t ntables;
    int64_t chunks; /* prealloc-concat: chunks per table */
} Call;

static const EmbPooling *pooling_of(const Call *c, int64_t i)
{
    return c->poolings ? &c->poolings[i] : NULL;
}

/* ---- validation ---------------------------------------------------------------------- */

/* Re-issues the current error with "maplookup: tables[i]: " in front. */
static int prefixed(int code, int64_t i)
{
    char msg[400];
    snprintf(msg, sizeof msg, "%s", emb_last_error());
    return emb__fail(code, "emb_maplookup: tables[%lld]: %s", (long long)i, msg);
}

/* A failure @r of slot @s on this thread: its code and this thread's message, kept
   together (the first of the slot's failures to claim it). */
static void slot_fail(Slot *s, int r)
{
    if (__atomic_exchange_n(&s->failed, 1, __ATOMIC_ACQ_REL))
        return;
    snprintf(s->msg, sizeof s->msg, "%s", emb_last_error());
    __atomic_store_n(&s->result, r, __ATOMIC_RELEASE);
}

/* The first failed slot in table order (its code and its own message), after @c's
   tables are released; 0 when none failed. */
static int first_failure(const Call *c)
{
    for (int64_t i = 0; i < c->ntables; i++)
        emb__table_release(c->tables[i]);
    for (int64_t i = 0; i < c->ntables; i++)
        if (c->slots[i].result)
            return emb__fail(c->slots[i].result, "emb_maplookup: tables[%lld]: %s",
                             (long long)i, c->slots[i].msg);
    return 0;
}

/* What can be checked without reading ids, on the caller; fills the slots. */
static int check_layout(Call *c)
{
    const int r = emb__outputs_check("emb_maplookup", c->tables, c->ntables, c->batches,
                                     c->outputs);
    if (r)
        return r;
    int64_t col = 0;
    for (int64_t i = 0; i < c->ntables; i++) {
        const EmbTable *t = c->tables[i];
        const EmbBatch *b = &c->batches[i];
        Slot *s = &c->slots[i];
        s->out = emb__outputs_next(c->outputs, c->tables, i, &col, &s->stride);
        s->work = (double)b->nnz * (double)emb__row_bytes(t->dtype, t->featuresize) +
                  (double)b->nbags * 4.0 * t->featuresize;
        s->failed = 0;
    }
    return 0;
}

static void check_task(void *ctx, int64_t i, int thread)
{
    (void)thread;
    const Call *c = ctx;
    Slot *s = &c->slots[i];
    s->result = emb__batch_check(c->tables[i], &c->batches[i], pooling_of(c, i));
    if (!s->result)
        s->result = emb__output_check(c->tables[i], s->out, c->batches[i].nbags, s->stride,
                                      c->outputs->concat ? "concat output" : "per_table output");
}

/* Validates every batch on @nthreads of the strategy's threads; reports the first
   failure in order. */
static int check_batches(EmbStrategy *st, int nthreads, Call *c)
{
    emb__strategy_run_on(st, nthreads, c->ntables, check_task, c);
    for (int64_t i = 0; i < c->ntables; i++)
        if (c->slots[i].result) {
            check_task(c, i, 0); /* again on this thread, for the message */
            return prefixed(c->slots[i].result, i);
        }
    return 0;
}

/* ---- acquiring: the fallible part --------------------------------------------------- */

static void acquire_task(void *ctx, int64_t i, int thread)
{
    (void)thread;
    const Call *c = ctx;
    const int r = emb__lookup_acquire(c->tables[i], &c->batches[i], pooling_of(c, i));
    if (r)
        slot_fail(&c->slots[i], r);
}

/* Every table's acquire without rows (emb__lookup_acquire: a table that pins reads its
   misses, one that refuses unknown ids checks them; the others return at once), on
   @nthreads of the strategy's threads when more than one table pins, else on one; 0, or
   the first failure in table order with every table released. */
static int acquire_tables(EmbStrategy *st, int nthreads, Call *c)
{
    int64_t npins = 0;
    for (int64_t i = 0; i < c->ntables; i++)
        npins += emb__table_pins(c->tables[i]);
    emb__strategy_run_on(st, npins > 1 ? nthreads : 1, c->ntables, acquire_task, c);
    for (int64_t i = 0; i < c->ntables; i++)
        if (c->slots[i].result)
            return first_failure(c);
    return 0;
}

/* ---- the strategies ------------------------------------------------------------------ */

static void table_task(void *ctx, int64_t k, int thread)
{
    (void)thread;
    const Call *c = ctx;
    const int64_t i = c->order ? c->order[k] : k;
    Slot *s = &c->slots[i];
    const int r = emb__lookup_range(c->tables[i], &c->batches[i], pooling_of(c, i), s->out,
                                    s->stride, 0, c->batches[i].nbags);
    if (r)
        slot_fail(s, r);
}

/* Bags [*b0, *b1) of chunk @k when @n bags are cut into @chunks near-equal chunks. */
static void chunk_range(int64_t n, int64_t chunks, int64_t k, int64_t *b0, int64_t *b1)
{
    const int64_t q = n / chunks, r = n % chunks;
    *b0 = k * q + EMB_MIN(k, r);
    *b1 = *b0 + q + (k < r);
}

static void chunk_task(void *ctx, int64_t task, int thread)
{
    (void)thread;
    const Call *c = ctx;
    const int64_t i = c->order[task / c->chunks];
    Slot *s = &c->slots[i];
    int64_t b0, b1;
    chunk_range(c->batches[i].nbags, c->chunks, task % c->chunks, &b0, &b1);
    const int r = b0 < b1 ? emb__lookup_range(c->tables[i], &c->batches[i], pooling_of(c, i),
                                              s->out, s->stride, b0, b1)
                          : 0;
    if (r) /* one of the table's errors (chunks may race: the first to claim the slot) */
        slot_fail(s, r);
}

/* Whether table a goes before table b: more work first, then lower index. */
static bool before(const Slot *slots, int64_t a, int64_t b)
{
    return slots[a].work > slots[b].work || (slots[a].work == slots[b].work && a < b);
}

static void sift_down(const Slot *slots, int64_t *h, int64_t root, int64_t n)
{
    for (int64_t child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && before(slots, h[child], h[child + 1]))
            child++;
        if (!before(slots, h[root], h[child]))
            return;
        const int64_t tmp = h[root];
        h[root] = h[child];
        h[child] = tmp;
    }
}

/* c->order = the tables sorted by `before` (a heap sort: no allocation, deterministic). */
static void sort_by_work(Call *c)
{
    int64_t *h = c->order;
    const int64_t n = c->ntables;
    for (int64_t i = 0; i < n; i++)
        h[i] = i;
    for (int64_t i = n / 2; i-- > 0;)
        sift_down(c->slots, h, i, n);
    for (int64_t end = n; end-- > 1;) {
        const int64_t tmp = h[0];
        h[0] = h[end];
        h[end] = tmp;
        sift_down(c->slots, h, 0, end);
    }
}

/* Automatic chunk count: about TASKS_PER_THREAD tasks per thread, the largest table cut
 * finest, never below MIN_CHUNK_BAGS bags a chunk. */
static int64_t auto_chunks(const Call *c, int nthreads)
{
    double total = 0.0, most = 0.0;
    int64_t maxbags = 0;
    for (int64_t i = 0; i < c->ntables; i++) {
        total += c->slots[i].work;
        most = EMB_MAX(most, c->slots[i].work);
        maxbags = EMB_MAX(maxbags, c->batches[i].nbags);
    }
    if (nthreads <= 1 || total <= 0.0)
        return 1;
    const double want = ceil(most * TASKS_PER_THREAD * nthreads / total);
    const int64_t cap = EMB_MAX(maxbags / MIN_CHUNK_BAGS, 1);
    return want < (double)cap ? EMB_MAX((int64_t)want, 1) : cap;
}

/* The strategy's way for this call (auto: emb__auto_forward_kind, from the slots' work). */
static EmbStrategyKind kind_of(const EmbStrategy *st, const Call *c)
{
    if (st->kind != EMB_STRATEGY_AUTO)
        return st->kind;
    return emb__auto_forward_kind(st->nthreads, &c->slots[0].work, c->ntables, sizeof(Slot));
}

static void run(EmbStrategy *st, Call *c, EmbStrategyKind kind)
{
    switch (kind) {
    case EMB_STRATEGY_PARALLEL:
        sort_by_work(c);
        emb__strategy_run(st, c->ntables, table_task, c);
        return;
    case EMB_STRATEGY_PREALLOC_CONCAT:
        sort_by_work(c);
        c->chunks = st->chunks > 0 ? st->chunks : auto_chunks(c, st->nthreads);
        emb__strategy_run(st, c->chunks * c->ntables, chunk_task, c);
        return;
    default: /* sequential, or auto with little work: the tables in order */
        c->order = NULL;
        for (int64_t i = 0; i < c->ntables; i++)
            table_task(c, i, 0);
        return;
    }
}

/* Sets up the call's plan in the strategy's buffer. */
static int plan(EmbStrategy *st, Call *c)
{
    const size_t n = (size_t)c->ntables;
    if (n > (SIZE_MAX / 2) / (sizeof(Slot) + sizeof(int64_t)))
        return emb__fail(EMB_EOVERFLOW, "emb_maplookup: %zu tables overflow the plan", n);
    char *p = emb__growbuf(&st->plan, n * (sizeof(Slot) + sizeof(int64_t)));
    if (!p)
        return EMB_ENOMEM;
    c->slots = (Slot *)p;
    c->order = st->kind == EMB_STRATEGY_PARALLEL || st->kind == EMB_STRATEGY_PREALLOC_CONCAT ||
                       st->kind == EMB_STRATEGY_AUTO
                   ? (int64_t *)(p + n * sizeof(Slot)) : NULL;
    return 0;
}

int emb_maplookup(EmbStrategy *strategy, EmbTable *const *tables, int64_t ntables,
                  const EmbBatch *batches, const EmbPooling *poolings, const EmbOutputs *outputs)
{
    EMB_CHECK_NULL(strategy);
    EMB_CHECK_NULL(tables);
    EMB_CHECK_NULL(batches);
    EMB_CHECK_NULL(outputs);
    if (ntables <= 0)
        return emb__fail(EMB_EINVAL, "emb_maplookup: ntables = %lld, not >= 1",
                         (long long)ntables);
    if (strategy->kind == EMB_STRATEGY_CUSTOM && !strategy->cb.maplookup)
        return emb__fail(EMB_ENOTSUP, "emb_maplookup: the custom strategy has no maplookup");
    Call c = {.tables = tables, .batches = batches, .poolings = poolings,
              .outputs = outputs, .ntables = ntables};
    int r = plan(strategy, &c);
    if (!r)
        r = check_layout(&c);
    const EmbStrategyKind kind = r ? EMB_STRATEGY_SEQUENTIAL : kind_of(strategy, &c);
    if (!r) /* a call auto keeps on the caller checks there too: no team to wake */
        r = check_batches(strategy, kind == EMB_STRATEGY_SEQUENTIAL ? 1 : strategy->nthreads,
                          &c);
    if (r)
        return r;
    if (strategy->kind == EMB_STRATEGY_CUSTOM)
        return strategy->cb.maplookup(strategy->user, tables, ntables, batches, poolings,
                                      outputs);
    r = acquire_tables(strategy, kind == EMB_STRATEGY_SEQUENTIAL ? 1 : strategy->nthreads, &c);
    if (r)
        return r;
    run(strategy, &c, kind);
    return first_failure(&c); /* every table released; none fails once pinned */
}

/* ---- the Julia forms ----------------------------------------------------------------- */

/* The Julia forms: fixed-bag SUM batches built in the strategy's batch buffer, table i's
 * ids at ids[i] (one matrix per table) or at ids3 + i * nbags * bag_size (one 3-D array). */
static int maplookup_fixed(EmbStrategy *s, EmbTable *const *tables, int64_t ntables,
                           const int64_t *const *ids, const int64_t *ids3, int64_t nbags,
                           int64_t bag_size, const EmbOutputs *outputs)
{
    if (!s)
        return emb__fail(EMB_ENULL, "emb_maplookup_ids: argument 'strategy' is NULL");
    if (!ids && !ids3)
        return emb__fail(EMB_ENULL, "emb_maplookup_ids: ids is NULL");
    int64_t nnz, all;
    if (ntables <= 0)
        return emb__fail(EMB_EINVAL, "emb_maplookup: ntables = %lld, not >= 1",
                         (long long)ntables);
    if (nbags < 0 || bag_size < 0 || !emb__mul_ok(nbags, bag_size, &nnz) ||
        !emb__mul_ok(nnz, ntables, &all) || (uint64_t)ntables > SIZE_MAX / sizeof(EmbBatch))
        return emb__fail(EMB_EOVERFLOW, "emb_maplookup: %lld tables x %lld bags x %lld ids "
                         "is negative or overflows", (long long)ntables, (long long)nbags,
                         (long long)bag_size);
    EmbBatch *b = emb__growbuf(&s->batches, (size_t)ntables * sizeof(EmbBatch));
    if (!b)
        return EMB_ENOMEM;
    for (int64_t i = 0; i < ntables; i++)
        b[i] = (EmbBatch){.ids = ids ? ids[i] : ids3 + i * nnz, .id_type = EMB_ID_I64,
                          .nnz = nnz, .nbags = nbags, .bag_size = bag_size};
    return emb_maplookup(s, tables, ntables, b, NULL, outputs);
}

int emb_maplookup_ids(EmbStrategy *strategy, EmbTable *const *tables, int64_t ntables,
                      const int64_t *const *ids, int64_t nbags, int64_t bag_size,
                      const EmbOutputs *outputs)
{
    return maplookup_fixed(strategy, tables, ntables, ids, NULL, nbags, bag_size, outputs);
}

int emb_maplookup_ids3(EmbStrategy *strategy, EmbTable *const *tables, int64_t ntables,
                       const int64_t *ids, int64_t nbags, int64_t bag_size,
                       const EmbOutputs *outputs)
{
    return maplookup_fixed(strategy, tables, ntables, NULL, ids, nbags, bag_size, outputs);
}
