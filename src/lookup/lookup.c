/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lookup.c — single-table lookup: validation, then one fused pass per chunk of bags.
 *
 * The pass resolves the column pointers of as many whole bags as fit in a chunk (the
 * column-pointer interface is asked once per id, with FORWARD), together with each id's
 * weight, prunes what the pooling prunes and substitutes the default column for empty
 * bags. With max_norm, each weight is then multiplied by its column's clip factor in one
 * prefetching pass over the chunk (clip before weighting). Then the pool kernel runs over
 * the chunk bag by bag, able to prefetch the columns of the bags after the current one,
 * and the combiner's factor (1/Σw, 1/sqrt(Σw²)) scales each finished bag. A bag longer
 * than a chunk is pooled in pieces with the kernel's accumulate mode, in the same order.
 * No intermediate nnz x D array exists (DeepRec's three ops, fused). MAX pooling takes its bags
 * kernel where SUM would (a simple table at a static size, a SIMD level), else the generic
 * path with the max kernel in the pool kernel's place.
 */
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "lookup/batch.h"
#include "lookup/lookup_impl.h"
#include "tables/table_impl.h"

#define CHUNK 256
#define CLIP_AHEAD 8 /* columns prefetched ahead of the max_norm pass */
#define SLOT_AHEAD 16 /* ids a table's prefetch hint is given ahead (dynamic: the slot) */
#define DYN_SPAN EMB_SPAN_MAX /* ids per bags-kernel call over a table that resolves spans
                                 (their rows: 32 KiB at D = 64 f32, within L1) */

typedef struct Piece {
    int64_t bag;    /* output row */
    int32_t first;  /* index into the chunk's cols / w */
    int32_t count;  /* entries (0: zeros) */
    float scale;    /* combiner factor, applied after the last piece (1: none) */
    bool accumulate;/* continues a bag started in an earlier chunk */
    bool last;      /* the bag's last piece */
} Piece;

typedef struct Chunk {
    const void *cols[CHUNK];
    float w[CHUNK];
    Piece pieces[CHUNK];
    int32_t ncols, npieces;
} Chunk;

typedef struct Pass {
    const EmbTable *t;
    const EmbBatch *b;
    const EmbPooling *p;
    float *out;
    int64_t stride;
    emb_pool_fn pool;
    emb_scale_fn scale;
    emb_sumsq_fn sumsq;
    bool weighted; /* the kernels need the w array */
    bool resident; /* the table fits in cache: no software prefetch */
    void (*prefetch)(const EmbTable *t, int64_t id); /* the table's hint (NULL: none) */
} Pass;

/* max_norm clip factor of a column: min(1, max_norm / ||x||); 1 for a zero column. */
static float clip_factor(const Pass *ps, const void *col)
{
    const float ss = ps->sumsq(col, ps->t->featuresize);
    const float c = ps->p->max_norm;
    return ss > c * c ? c / sqrtf(ss) : 1.0f;
}

/*
 * max_norm: scales each entry's weight of the chunk by its column's clip factor. The norms
 * are computed chunk-wide, before pooling, with the columns a few entries ahead prefetched
 * so that their misses overlap (the pool kernel then finds them in cache).
 */
static void clip_chunk(const Pass *ps, Chunk *c)
{
    const size_t bytes = emb__row_bytes(ps->t->dtype, ps->t->featuresize);
    for (int32_t j = 0; j < c->ncols; j++) {
        if (j + CLIP_AHEAD < c->ncols)
            for (size_t off = 0; off < bytes; off += 64)
                __builtin_prefetch((const char *)c->cols[j + CLIP_AHEAD] + off);
        c->w[j] *= clip_factor(ps, c->cols[j]);
    }
}

static void flush(const Pass *ps, Chunk *c)
{
    const int32_t D = ps->t->featuresize;
    if (ps->p->max_norm > 0.0f)
        clip_chunk(ps, c);
    for (int32_t i = 0; i < c->npieces; i++) {
        const Piece *pc = &c->pieces[i];
        float *o = ps->out + pc->bag * ps->stride;
        const int64_t ahead = ps->resident ? -1 : c->ncols - pc->first - pc->count;
        ps->pool(o, c->cols + pc->first, ps->weighted ? c->w + pc->first : NULL, pc->count,
                 ahead, D, pc->accumulate);
        if (pc->last && pc->scale != 1.0f)
            ps->scale(o, pc->scale, D);
    }
    c->ncols = c->npieces = 0;
}

static void push(Chunk *c, const void *col, float w)
{
    c->cols[c->ncols] = col;
    c->w[c->ncols] = w;
    c->ncols++;
}

static void open_piece(Chunk *c, int64_t bag, bool accumulate)
{
    Piece *pc = &c->pieces[c->npieces++];
    *pc = (Piece){bag, c->ncols, 0, 1.0f, accumulate, false};
}

/* Appends bag @bag's entries to the chunk, flushing it whenever it fills. */
static void add_bag(const Pass *ps, Chunk *c, int64_t bag)
{
    const EmbBatch *b = ps->b;
    const int64_t end = emb__bag_end(b, bag);
    double sw = 0.0, sw2 = 0.0;
    int64_t kept = 0;
    if (c->npieces == CHUNK || c->ncols == CHUNK)
        flush(ps, c);
    open_piece(c, bag, false);
    for (int64_t k = emb__bag_start(b, bag); k < end; k++) {
        if (ps->prefetch && k + SLOT_AHEAD < b->nnz) /* the table's hint, ids ahead */
            ps->prefetch(ps->t, emb__batch_id(b, k + SLOT_AHEAD));
        const int64_t id = emb__batch_id(b, k);
        if (emb__pruned(b, ps->p, k, id))
            continue;
        if (c->ncols == CHUNK) {
            flush(ps, c);
            open_piece(c, bag, true);
        }
        const float w = b->weights ? b->weights[k] : 1.0f;
        push(c, emb__column(ps->t, id, EMB_CTX_FORWARD), w);
        c->pieces[c->npieces - 1].count++;
        sw += w;
        sw2 += (double)w * w;
        kept++;
    }
    Piece *pc = &c->pieces[c->npieces - 1];
    pc->last = true;
    if (kept == 0) {
        if (ps->p->flags & EMB_USE_DEFAULT_ID) {
            push(c, emb__column(ps->t, ps->p->default_id, EMB_CTX_FORWARD), 1.0f);
            pc->count++;
        }
        return;
    }
    pc->scale = emb__combiner_scale(ps->p->combiner, sw, sw2);
}

/* Whether the whole table fits in cache (its lookups then skip software prefetch). */
static bool resident(const EmbTable *t)
{
    int64_t bytes;
    return emb__mul_ok(t->ncolumns, (int64_t)emb__row_bytes(t->dtype, t->featuresize), &bytes) &&
           bytes <= EMB_RESIDENT_BYTES;
}

/* cols[k] = the FORWARD rows of ids k0 .. k0 + n - 1 of @b, resolved by the table in spans
   (its batched entry, or column() per id); *pf: whether it prefetched their lines. */
static int resolve_rows(const EmbTable *t, const EmbBatch *b, int64_t k0, int64_t n,
                        const void **cols, bool *pf)
{
    unsigned hint = 0;
    int r = 0;
    for (int64_t k = 0; k < n && !r; k += EMB_SPAN_MAX) {
        const EmbIdSpan s = {b->ids, b->id_type == EMB_ID_I32, k0 + k,
                             EMB_MIN(EMB_SPAN_MAX, n - k)};
        r = emb__table_acquire(t, &s, EMB_CTX_FORWARD, cols + k, &hint);
    }
    if (pf)
        *pf = (hint & EMB_RESOLVE_PREFETCHED) != 0;
    return r;
}

/* Gather without weights, clipping or pruning: the gather kernel over runs of ids. */
static int plain_gather(const EmbTable *t, const EmbBatch *b, float *out, int64_t stride)
{
    const void *cols[CHUNK];
    const emb_gather_fn g = emb__kernel_gather(t->dtype, t->featuresize);
    for (int64_t k0 = 0; k0 < b->nnz; k0 += CHUNK) {
        const int64_t n = EMB_MIN(CHUNK, b->nnz - k0);
        const int r = resolve_rows(t, b, k0, n, cols, NULL);
        if (r)
            return r;
        g(out + k0 * stride, stride, cols, n, t->featuresize);
    }
    return 0;
}

/*
 * The bags kernel when it applies: a simple table, D with a copy (16 .. 256), nothing to
 * prune or clip, no streaming stores. One call for the whole range: the ids are read, the
 * columns addressed and pooled in registers, no column array and no call per bag. Returns
 * whether it ran.
 */
static bool bags_path(const EmbTable *t, const EmbBatch *b, const EmbPooling *p, float *out,
                      int64_t stride, int64_t bag0, int64_t bag1)
{
    if (!t->data || p->max_norm != 0.0f ||
        (p->flags & (EMB_PRUNE_INVALID | EMB_PRUNE_NONPOSITIVE_WEIGHTS | EMB_OUT_NONTEMPORAL)))
        return false;
    const emb_bags_fn f = p->combiner == EMB_COMBINER_MAX
                              ? emb__kernel_bags_max(t->dtype, t->featuresize)
                              : emb__kernel_bags(t->dtype, t->featuresize);
    if (!f)
        return false;
    const EmbBagsArgs a = {
        .out = out, .out_stride = stride,
        .data = t->data, .col_stride = (int64_t)t->stride,
        .ids = b->ids, .offsets = b->offsets, .bag_size = b->bag_size,
        .weights = b->weights,
        .defcol = p->flags & EMB_USE_DEFAULT_ID ? emb__column(t, p->default_id, EMB_CTX_FORWARD)
                                                : NULL,
        .bag0 = bag0, .bag1 = bag1,
        .pf_dist = resident(t) ? 0 : emb__pf_rows(
                                         (int64_t)emb__row_bytes(t->dtype, t->featuresize)),
        .D = t->featuresize, .id32 = b->id_type == EMB_ID_I32, .combiner = p->combiner,
    };
    f(&a);
    return true;
}

/* A bag of a span-resolving table with more than DYN_SPAN ids: the pool kernel over spans
   of it (accumulating after the first), then the combiner's factor: the generic path's
   order and arithmetic. */
static int span_long_bag(const EmbTable *t, const EmbBatch *b, const EmbPooling *p,
                             float *o, int64_t start, int64_t end)
{
    const void *cols[DYN_SPAN];
    const emb_pool_fn pool = emb__kernel_pool(t->dtype, t->featuresize, 0);
    double sw = 0.0, sw2 = 0.0;
    for (int64_t k0 = start; k0 < end; k0 += DYN_SPAN) {
        const int64_t n = EMB_MIN(DYN_SPAN, end - k0);
        bool pf;
        const int r = resolve_rows(t, b, k0, n, cols, &pf);
        if (r)
            return r;
        pool(o, cols, b->weights ? b->weights + k0 : NULL, n, pf ? 0 : -1, t->featuresize,
             k0 > start);
        for (int64_t k = k0; k < k0 + n; k++) {
            const float w = b->weights ? b->weights[k] : 1.0f;
            sw += w;
            sw2 += (double)w * w;
        }
    }
    const float f = emb__combiner_scale(p->combiner, sw, sw2);
    if (f != 1.0f)
        emb__kernels()->scale(o, f, t->featuresize);
    return 0;
}

/* Whether span_bags_path applies: a table that resolves spans itself (no contiguous
   storage), bags_path's conditions, a bags kernel for (dtype, D). */
static emb_bags_fn span_bags_kernel(const EmbTable *t, const EmbPooling *p)
{
    if (!emb__table_acquires_spans(t) || p->max_norm != 0.0f || p->combiner == EMB_COMBINER_MAX ||
        (p->flags & (EMB_PRUNE_INVALID | EMB_PRUNE_NONPOSITIVE_WEIGHTS | EMB_OUT_NONTEMPORAL)))
        return NULL;
    return emb__kernel_bags(t->dtype, t->featuresize);
}

/*
 * The bags kernel over a table that resolves spans of ids (dynamic: ids hashed, index
 * slots and rows prefetched), when span_bags_kernel gives one: runs of whole bags of at
 * most DYN_SPAN ids, their rows resolved by the table, then pooled by the kernel. The
 * kernel addresses column c at data + c * col_stride: with data the span's first row and a
 * stride of 1 byte, the "ids" it is given are the rows' byte offsets from that row.
 * Bit-identical to the generic path. 0 or the table's error.
 */
static int span_bags_path(const EmbTable *t, const EmbBatch *b, const EmbPooling *p,
                          emb_bags_fn f, float *out, int64_t stride, int64_t bag0, int64_t bag1)
{
    const void *cols[DYN_SPAN];
    int64_t off[DYN_SPAN], loff[DYN_SPAN + 1];
    EmbBagsArgs a = {
        .out_stride = stride, .col_stride = 1, .ids = off,
        .offsets = b->offsets ? loff : NULL, .bag_size = b->bag_size,
        .defcol = p->flags & EMB_USE_DEFAULT_ID ? emb__column(t, p->default_id, EMB_CTX_FORWARD)
                                                : NULL,
        .pf_dist = 0, .D = t->featuresize, .id32 = 0, .combiner = p->combiner,
    };
    for (int64_t bag = bag0; bag < bag1;) {
        const int64_t k0 = emb__bag_start(b, bag);
        int64_t e = bag; /* bags [bag, e) fit in a span */
        while (e < bag1 && e - bag < DYN_SPAN && emb__bag_end(b, e) - k0 <= DYN_SPAN)
            e++;
        if (e == bag) {
            const int r = span_long_bag(t, b, p, out + bag * stride, k0, emb__bag_end(b, bag));
            if (r)
                return r;
            bag++;
            continue;
        }
        const int64_t n = emb__bag_end(b, e - 1) - k0;
        if (n == 0) { /* empty bags only: no row to address */
            a.data = NULL;
        } else {
            const int r = resolve_rows(t, b, k0, n, cols, NULL);
            if (r)
                return r;
            a.data = cols[0];
            for (int64_t k = 0; k < n; k++)
                off[k] = (int64_t)((intptr_t)cols[k] - (intptr_t)cols[0]);
        }
        if (b->offsets)
            for (int64_t i = 0; i <= e - bag; i++)
                loff[i] = b->offsets[bag + i] - k0;
        a.out = out + bag * stride;
        a.weights = b->weights ? b->weights + k0 : NULL;
        a.bag0 = 0;
        a.bag1 = e - bag;
        f(&a);
        bag = e;
    }
    return 0;
}

/* A table whose rows must be made resident (its rows facet pins): every row of the batch
   resolved (pinned until the caller's release) before any range addresses them, so that a
   failed fetch writes no output (and a tiered table reads the batch's misses at once). */
int emb__lookup_pin(const EmbTable *t, const EmbBatch *b, const EmbPooling *p)
{
    if (!emb__table_pins(t) || b->nbags == 0)
        return 0;
    if (!p)
        p = &emb__pooling_sum;
    const int64_t k0 = emb__bag_start(b, 0), k1 = emb__bag_end(b, b->nbags - 1);
    const EmbIdSpan all = {b->ids, b->id_type == EMB_ID_I32, k0, k1 - k0};
    int r = emb__table_pin(t, &all);
    if (!r && (p->flags & EMB_USE_DEFAULT_ID)) {
        const EmbIdSpan s = {&p->default_id, 0, 0, 1};
        const void *col;
        unsigned hint;
        r = emb__table_acquire(t, &s, EMB_CTX_FORWARD, &col, &hint);
    }
    return r;
}

/* The generic path: chunks of whole bags, the pool kernel over each (MAX: the max kernel,
   which has no streaming stores; its bags have no weights and a factor of 1). */
static void generic_range(const EmbTable *t, const EmbBatch *b, const EmbPooling *p,
                          float *out, int64_t stride, int64_t bag0, int64_t bag1)
{
    const EmbKernels *k = emb__kernels();
    const Pass ps = {
        .t = t, .b = b, .p = p, .out = out, .stride = stride,
        .pool = p->combiner == EMB_COMBINER_MAX
                    ? emb__kernel_pool_max(t->dtype, t->featuresize)
                    : emb__kernel_pool(t->dtype, t->featuresize,
                                       (p->flags & EMB_OUT_NONTEMPORAL) != 0),
        .scale = k->scale, .sumsq = k->sumsq[t->dtype],
        .weighted = b->weights != NULL || p->max_norm > 0.0f,
        .resident = resident(t),
        .prefetch = emb__table_prefetch_fn(t),
    };
    Chunk c;
    c.ncols = c.npieces = 0;
    for (int64_t bag = bag0; bag < bag1; bag++)
        add_bag(&ps, &c, bag);
    flush(&ps, &c);
    if (p->flags & EMB_OUT_NONTEMPORAL)
        emb__sfence();
}

int emb__lookup_range(const EmbTable *t, const EmbBatch *b, const EmbPooling *p, float *out,
                      int64_t stride, int64_t bag0, int64_t bag1)
{
    if (bag0 >= bag1)
        return 0; /* nothing to do (and ids may be NULL: no pointer arithmetic on it) */
    if (!p)
        p = &emb__pooling_sum;
    /* one id per bag, nothing to weigh, clip or prune: every combiner is a copy */
    const bool one_id_bags = p->combiner == EMB_COMBINER_NONE || (!b->offsets && b->bag_size == 1);
    if (one_id_bags && !b->weights && p->max_norm == 0.0f &&
        !(p->flags & (EMB_PRUNE_INVALID | EMB_PRUNE_NONPOSITIVE_WEIGHTS | EMB_OUT_NONTEMPORAL))) {
        EmbBatch sub = *b;
        sub.ids = (const char *)b->ids + bag0 * (b->id_type == EMB_ID_I32 ? 4 : 8);
        sub.nnz = bag1 - bag0;
        return plain_gather(t, &sub, out + bag0 * stride, stride);
    }
    if (bags_path(t, b, p, out, stride, bag0, bag1))
        return 0;
    const emb_bags_fn f = span_bags_kernel(t, p);
    if (f)
        return span_bags_path(t, b, p, f, out, stride, bag0, bag1);
    generic_range(t, b, p, out, stride, bag0, bag1);
    return 0;
}

int emb_lookup(const EmbTable *table, const EmbBatch *batch, const EmbPooling *pooling,
               float *out, int64_t out_stride)
{
    int r = emb__batch_check_forward(table, batch, pooling);
    if (!r)
        r = emb__output_check(table, out, batch->nbags, out_stride, "output");
    if (r)
        return r;
    r = emb__lookup_pin(table, batch, pooling);
    if (!r)
        r = emb__lookup_range(table, batch, pooling, out, out_stride, 0, batch->nbags);
    emb__table_release(table);
    return r;
}

int emb_gather(const EmbTable *table, const int64_t *ids, int64_t n, float *out,
               int64_t out_stride)
{
    const EmbBatch b = {.ids = ids, .id_type = EMB_ID_I64, .nnz = n, .nbags = n, .bag_size = 1};
    const EmbPooling p = EMB_POOLING_GATHER;
    return emb_lookup(table, &b, &p, out, out_stride);
}

int emb_lookup_sum(const EmbTable *table, const int64_t *ids, int64_t nbags, int64_t bag_size,
                   float *out, int64_t out_stride)
{
    int64_t nnz;
    if (nbags < 0 || bag_size < 0)
        return emb__fail(EMB_EINVAL, "nbags %lld / bag_size %lld is negative", (long long)nbags,
                         (long long)bag_size);
    if (!emb__mul_ok(nbags, bag_size, &nnz))
        return emb__fail(EMB_EOVERFLOW, "nbags %lld x bag_size %lld overflows",
                         (long long)nbags, (long long)bag_size);
    const EmbBatch b = {.ids = ids, .nnz = nnz, .nbags = nbags, .bag_size = bag_size};
    return emb_lookup(table, &b, NULL, out, out_stride);
}
