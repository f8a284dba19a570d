/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * strategy.c — the strategy objects: constructors, options, the buffers they own (per-thread
 * scratch, per-call plans) and the entry points of strategy_impl.h.
 */
#include <stdlib.h>
#include <string.h>

#include "platform.h"
#include "strategies/strategy_impl.h"

/* Checks the options of a threaded strategy; NULL stands for all defaults. */
static int check_options(const EmbStrategyOptions *o)
{
    if (!o)
        return 0;
    if (o->nthreads < 0 || o->nthreads > EMB_MAX_THREADS)
        return emb__fail(EMB_EINVAL, "strategy option nthreads = %d is not in [0, %d]",
                         (int)o->nthreads, EMB_MAX_THREADS);
    if (o->pinning != EMB_PIN_NONE && o->pinning != EMB_PIN_COMPACT &&
        o->pinning != EMB_PIN_SCATTER)
        return emb__fail(EMB_EINVAL, "strategy option pinning = %d is not an EmbPinning",
                         (int)o->pinning);
    if (o->chunks < 0)
        return emb__fail(EMB_EINVAL, "strategy option chunks = %d is negative", (int)o->chunks);
    if (o->num_splits < 0)
        return emb__fail(EMB_EINVAL, "strategy option num_splits = %d is negative",
                         (int)o->num_splits);
    return 0;
}

/* Allocates a strategy of @kind with @nthreads threads and the scratch pointer array. */
static int create(EmbStrategy **out, EmbStrategyKind kind, int nthreads)
{
    EmbStrategy *s = calloc(1, sizeof *s);
    void **scratch = calloc((size_t)nthreads, sizeof *scratch);
    if (!s || !scratch) {
        free(s);
        free(scratch);
        return emb__fail(EMB_ENOMEM, "cannot allocate a strategy of %d threads", nthreads);
    }
    s->kind = kind;
    s->nthreads = nthreads;
    s->scratch = scratch;
    s->num_splits = 1;
    *out = s;
    return 0;
}

/* The threaded strategies: options checked, defaults filled in. */
static int create_threaded(EmbStrategy **out, EmbStrategyKind kind, const EmbStrategyOptions *o,
                           int default_splits)
{
    EMB_CHECK_NULL(out);
    int r = check_options(o);
    if (r)
        return r;
    const EmbStrategyOptions opts = o ? *o : (EmbStrategyOptions){0};
    const int n = opts.nthreads > 0 ? opts.nthreads : emb__platform_physical_cores();
    EmbStrategy *s = NULL;
    if ((r = create(&s, kind, n)))
        return r;
    s->pinning = opts.pinning;
    s->chunks = opts.chunks;
    s->num_splits = opts.num_splits > 0 ? opts.num_splits : default_splits;
    s->splits_auto = opts.num_splits == 0;
    *out = s;
    return 0;
}

int emb_strategy_sequential(EmbStrategy **out)
{
    EMB_CHECK_NULL(out);
    return create(out, EMB_STRATEGY_SEQUENTIAL, 1);
}

int emb_strategy_parallel(EmbStrategy **out, const EmbStrategyOptions *opts)
{
    int r = create_threaded(out, EMB_STRATEGY_PARALLEL, opts, 1);
    if (!r)
        (*out)->num_splits = 1; /* whole tables: one split each */
    return r;
}

int emb_strategy_prealloc_concat(EmbStrategy **out, const EmbStrategyOptions *opts)
{
    return create_threaded(out, EMB_STRATEGY_PREALLOC_CONCAT, opts, 4);
}

int emb_strategy_auto(EmbStrategy **out, const EmbStrategyOptions *opts)
{
    return create_threaded(out, EMB_STRATEGY_AUTO, opts, 4);
}

EmbStrategyKind emb__auto_forward_kind(int nthreads, const double *work, int64_t ntables,
                                       size_t work_stride)
{
    if (nthreads <= 1)
        return EMB_STRATEGY_PARALLEL;
    double total = 0.0, most = 0.0;
    for (int64_t i = 0; i < ntables; i++) {
        const double w = *(const double *)((const char *)work + (size_t)i * work_stride);
        total += w;
        most = EMB_MAX(most, w);
    }
    if (total < EMB_AUTO_SERIAL_WORK)
        return EMB_STRATEGY_SEQUENTIAL;
    if (ntables < 4 * (int64_t)nthreads)
        return EMB_STRATEGY_PREALLOC_CONCAT;
    return most * nthreads <= total ? EMB_STRATEGY_PARALLEL : EMB_STRATEGY_PREALLOC_CONCAT;
}

int emb_strategy_custom(EmbStrategy **out, const EmbStrategyCallbacks *cb, void *user)
{
    EMB_CHECK_NULL(out);
    EMB_CHECK_NULL(cb);
    int r = create(out, EMB_STRATEGY_CUSTOM, 1);
    if (r)
        return r;
    (*out)->cb = *cb;
    (*out)->user = user;
    return 0;
}

void emb_strategy_destroy(EmbStrategy **sp)
{
    if (!sp || !*sp)
        return;
    EmbStrategy *s = *sp;
    if (s->kind == EMB_STRATEGY_CUSTOM && s->cb.destroy)
        s->cb.destroy(s->user);
    for (int t = 0; t < s->nthreads; t++)
        emb__aligned_free(s->scratch[t]);
    free(s->scratch);
    emb__aligned_free(s->plan.p);
    emb__aligned_free(s->batches.p);
    emb__aligned_free(s->updates.p);
    free(s);
    *sp = NULL;
}

int emb_strategy_nthreads(const EmbStrategy *s)
{
    return s ? s->nthreads : 0;
}

const char *emb_strategy_name(const EmbStrategy *s)
{
    if (!s)
        return "?";
    switch (s->kind) {
    case EMB_STRATEGY_SEQUENTIAL: return "sequential";
    case EMB_STRATEGY_PARALLEL: return "parallel";
    case EMB_STRATEGY_PREALLOC_CONCAT: return "prealloc-concat";
    case EMB_STRATEGY_AUTO: return "auto";
    case EMB_STRATEGY_CUSTOM: return "custom";
    }
    return "?";
}

/* ---- for the ensemble operations (strategy_impl.h) ----------------------------------- */

EmbStrategyKind emb__strategy_kind(const EmbStrategy *s)
{
    return s->kind;
}

int emb__strategy_num_splits(const EmbStrategy *s)
{
    return s->kind == EMB_STRATEGY_PREALLOC_CONCAT || s->kind == EMB_STRATEGY_AUTO
               ? s->num_splits : 1;
}

int emb__strategy_update_threads(const EmbStrategy *s, double work)
{
    return s->kind == EMB_STRATEGY_AUTO && s->splits_auto && work < EMB_AUTO_SERIAL_WORK
               ? 1 : s->nthreads;
}

int emb__strategy_update_splits(const EmbStrategy *s, int64_t ntables, double work)
{
    if ((s->kind != EMB_STRATEGY_PREALLOC_CONCAT && s->kind != EMB_STRATEGY_AUTO) ||
        !s->splits_auto)
        return emb__strategy_num_splits(s);
    if (s->nthreads <= 1 || ntables >= 4 * s->nthreads ||
        emb__strategy_update_threads(s, work) <= 1)
        return 1; /* one thread, or enough whole tables to balance the threads: splitting
                     only costs (a sorting pass over the ids); or little work for auto */
    /* about two tasks per thread in every phase, at least the default 4 splits */
    const int64_t want = (2 * (int64_t)s->nthreads + ntables - 1) / ntables;
    return (int)EMB_MIN(EMB_MAX(want, s->num_splits), 64);
}

const EmbStrategyCallbacks *emb__strategy_callbacks(const EmbStrategy *s, void **user)
{
    if (s->kind != EMB_STRATEGY_CUSTOM) {
        if (user)
            *user = NULL;
        return NULL;
    }
    if (user)
        *user = s->user;
    return &s->cb;
}

/* Rounds @bytes up to a multiple of EMB_ALIGN; false on overflow. */
static bool round_up(size_t bytes, size_t *r)
{
    if (bytes > SIZE_MAX - (EMB_ALIGN - 1))
        return false;
    *r = (bytes + EMB_ALIGN - 1) & ~(size_t)(EMB_ALIGN - 1);
    return true;
}

int emb__strategy_reserve(EmbStrategy *s, size_t bytes)
{
    if (bytes <= s->scratch_bytes && s->scratch[0])
        return 0;
    size_t size;
    if (!round_up(bytes, &size))
        return emb__fail(EMB_EOVERFLOW, "per-thread scratch of %zu bytes overflows", bytes);
    void *fresh[64];
    void **p = s->nthreads <= 64 ? fresh : calloc((size_t)s->nthreads, sizeof *p);
    if (!p)
        return emb__fail(EMB_ENOMEM, "cannot allocate %d scratch pointers", s->nthreads);
    int t = 0;
    for (; t < s->nthreads; t++)
        if (!(p[t] = emb__aligned_alloc(EMB_ALIGN, size)))
            break;
    const bool ok = t == s->nthreads;
    for (int u = 0; u < s->nthreads && ok; u++) {
        emb__aligned_free(s->scratch[u]);
        s->scratch[u] = p[u];
    }
    while (!ok && t-- > 0)
        emb__aligned_free(p[t]);
    if (p != fresh)
        free(p);
    if (!ok)
        return emb__fail(EMB_ENOMEM, "cannot allocate %zu bytes of scratch for each of %d threads",
                         size, s->nthreads);
    s->scratch_bytes = size;
    return 0;
}

void *emb__strategy_scratch(const EmbStrategy *s, int thread)
{
    return s->scratch[thread];
}

void emb__strategy_run(EmbStrategy *s, int64_t ntasks, emb_task_fn fn, void *ctx)
{
    emb__threads_run(s->nthreads, s->pinning, ntasks, fn, ctx);
}

void emb__strategy_run_on(EmbStrategy *s, int nthreads, int64_t ntasks, emb_task_fn fn,
                          void *ctx)
{
    emb__threads_run(EMB_MAX(1, EMB_MIN(nthreads, s->nthreads)), s->pinning, ntasks, fn, ctx);
}

void emb__strategy_run_phases(EmbStrategy *s, int nthreads, int nphases, emb_step_fn step,
                              void *ctx)
{
    emb__threads_run_phases(EMB_MAX(1, EMB_MIN(nthreads, s->nthreads)), s->pinning, nphases,
                            step, ctx);
}

void *emb__growbuf(EmbGrowBuf *b, size_t bytes)
{
    if (bytes <= b->bytes && b->p)
        return b->p;
    size_t size;
    void *p = round_up(bytes, &size) ? emb__aligned_alloc(EMB_ALIGN, size) : NULL;
    if (!p) {
        emb__fail(EMB_ENOMEM, "cannot allocate %zu bytes of strategy plan", bytes);
        return NULL;
    }
    emb__aligned_free(b->p);
    b->p = p;
    b->bytes = size;
    return p;
}
