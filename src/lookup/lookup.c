/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lookup.c — single-table lookup: validation, then acquire -> kernel over row pointers ->
 * release, one fused pass per chunk of bags.
 *
 * The pass collects the kept ids of as many whole bags as fit in a chunk, together with
 * each id's weight, pruning what the pooling prunes and substituting the default id for
 * empty bags; then the rows of the chunk's ids are acquired (the table's batched acquire,
 * table_ops.h: a dynamic table hashes the span and prefetches its slots and rows at once;
 * the owned table's contiguous data, data + id * stride, is the one fast path). With
 * max_norm, each weight is then multiplied by its row's clip factor in one prefetching pass
 * over the chunk (clip before weighting). Then the pool kernel runs over the chunk's row
 * pointers bag by bag, able to prefetch the rows of the bags after the current one, and
 * the combiner's factor (1/Σw, 1/sqrt(Σw²)) scales each finished bag. A bag longer than a
 * chunk is pooled in pieces with the kernel's accumulate mode, in the same order. No
 * intermediate nnz x D array exists (DeepRec's three ops, fused). Over contiguous data the
 * bags kernel (ids read, rows addressed and pooled in registers) replaces the pass when
 * nothing is pruned or clipped; MAX pooling takes its bags kernel where SUM would, else
 * the pass with the max kernel in the pool kernel's place.
 */
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "lookup/batch.h"
#include "lookup/lookup_impl.h"
#include "tables/table_impl.h"

#define CHUNK 256
#define CLIP_AHEAD 8 /* columns prefetched ahead of the max_norm pass */

typedef struct Piece {
    int64_t bag;    /* output row */
    int32_t first;  /* index into the chunk's cols / w */
    int32_t count;  /* entries (0: zeros) */
    float scale;    /* combiner factor, applied after the last piece (1: none) */
    bool accumulate;/* continues a bag started in an earlier chunk */
    bool last;      /* the bag's last piece */
} Piece;

typedef struct Chunk {
    int64_t ids[CHUNK]; /* kept ids, acquired into cols when the chunk is flushed */
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
} Pass;

/* Whether the whole table fits in cache (its lookups then skip software prefetch). */
static bool resident(const EmbTable *t)
{
    int64_t bytes;
    return emb__mul_ok(t->ncolumns, (int64_t)emb__row_bytes(t->dtype, t->featuresize), &bytes) &&
           bytes <= EMB_RESIDENT_BYTES;
}

/* cols[k] = the FORWARD rows of ids k0 .. k0 + n - 1 of @ids (int32 when @id32): the
   owned table's contiguous data computed here (the one fast path), else the table's
   acquire in spans. *pf: whether the acquire prefetched the rows' lines. 0 or the table's
   error. */
static int acquire_rows(const EmbTable *t, const void *ids, int id32, int64_t k0, int64_t n,
                        const void **cols, bool *pf)
{
    *pf = false;
    if (t->data) {
        const EmbIdSpan s = {ids, id32, k0, n, NULL};
        for (int64_t k = 0; k < n; k++)
            cols[k] = t->data + (size_t)emb__span_id(&s, k) * t->stride;
        return 0;
    }
    unsigned hint = 0;
    int r = 0;
    for (int64_t k = 0; k < n && !r; k += EMB_SPAN_MAX) {
        const EmbIdSpan s = {ids, id32, k0 + k, EMB_MIN(EMB_SPAN_MAX, n - k), NULL};
        r = emb__table_acquire(t, &s, EMB_CTX_FORWARD, cols + k, &hint);
        *pf = *pf || (hint & EMB_RESOLVE_PREFETCHED);
    }
    return r;
}

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

/* Acquires the chunk's rows, clips and pools them; 0 or the table's error (the chunk is
   emptied either way). */
static int flush(const Pass *ps, Chunk *c)
{
    const int32_t D = ps->t->featuresize;
    bool pf;
    const int r = acquire_rows(ps->t, c->ids, 0, 0, c->ncols, c->cols, &pf);
    if (r) {
        c->ncols = c->npieces = 0;
        return r;
    }
    if (ps->p->max_norm > 0.0f)
        clip_chunk(ps, c);
    for (int32_t i = 0; i < c->npieces; i++) {
        const Piece *pc = &c->pieces[i];
        float *o = ps->out + pc->bag * ps->stride;
        const int64_t ahead = ps->resident ? -1 : pf ? 0 : c->ncols - pc->first - pc->count;
        ps->pool(o, c->cols + pc->first, ps->weighted ? c->w + pc->first : NULL, pc->count,
                 ahead, D, pc->accumulate);
        if (pc->last && pc->scale != 1.0f)
            ps->scale(o, pc->scale, D);
    }
    c->ncols = c->npieces = 0;
    return 0;
}

static void push(Chunk *c, int64_t id, float w)
{
    c->ids[c->ncols] = id;
    c->w[c->ncols] = w;
    c->ncols++;
}

static void open_piece(Chunk *c, int64_t bag, bool accumulate)
{
    Piece *pc = &c->pieces[c->npieces++];
    *pc = (Piece){bag, c->ncols, 0, 1.0f, accumulate, false};
}

/* Appends bag @bag's kept ids to the chunk, flushing it whenever it fills; 0 or the
   table's error. */
static int add_bag(const Pass *ps, Chunk *c, int64_t bag)
{
    const EmbBatch *b = ps->b;
    const int64_t end = emb__bag_end(b, bag);
    double sw = 0.0, sw2 = 0.0;
    int64_t kept = 0;
    int r = 0;
    if (c->npieces == CHUNK || c->ncols == CHUNK)
        r = flush(ps, c);
    open_piece(c, bag, false);
    for (int64_t k = emb__bag_start(b, bag); k < end && !r; k++) {
        const int64_t id = emb__batch_id(b, k);
        if (emb__pruned(b, ps->p, k, id))
            continue;
        if (c->ncols == CHUNK) {
            r = flush(ps, c);
            open_piece(c, bag, true);
        }
        const float w = b->weights ? b->weights[k] : 1.0f;
        push(c, id, w);
        c->pieces[c->npieces - 1].count++;
        sw += w;
        sw2 += (double)w * w;
        kept++;
    }
    Piece *pc = &c->pieces[c->npieces - 1];
    pc->last = true;
    if (kept == 0) {
        if (ps->p->flags & EMB_USE_DEFAULT_ID) {
            push(c, ps->p->default_id, 1.0f);
            pc->count++;
        }
        return r;
    }
    pc->scale = emb__combiner_scale(ps->p->combiner, sw, sw2);
    return r;
}

/* Gather without weights, clipping or pruning: the gather kernel over runs of ids. */
static int plain_gather(const EmbTable *t, const EmbBatch *b, float *out, int64_t stride)
{
    const void *cols[CHUNK];
    const emb_gather_fn g = emb__kernel_gather(t->dtype, t->featuresize);
    for (int64_t k0 = 0; k0 < b->nnz; k0 += CHUNK) {
        const int64_t n = EMB_MIN(CHUNK, b->nnz - k0);
        bool pf;
        const int r = acquire_rows(t, b->ids, b->id_type == EMB_ID_I32, k0, n, cols, &pf);
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

/* The lookup's acquire without rows (table_ops.h) over the whole batch: its ids (those a
   pooling prunes left out) and the default id; a kind that pins has every row resident
   and pinned (until the caller's release) before any range addresses them, and a kind
   that refuses unknown ids refuses them here, so that a failed lookup writes no output. */
int emb__lookup_acquire(const EmbTable *t, const EmbBatch *b, const EmbPooling *p)
{
    if (b->nbags == 0 || t->data) /* contiguous data: nothing to acquire */
        return 0;
    if (!p)
        p = &emb__pooling_sum;
    const int64_t k0 = emb__bag_start(b, 0), k1 = emb__bag_end(b, b->nbags - 1);
    const EmbIdSpan all = {b->ids, b->id_type == EMB_ID_I32, k0, k1 - k0,
                           p->flags & EMB_PRUNE_NONPOSITIVE_WEIGHTS ? b->weights : NULL};
    int r = emb__table_acquire_check(t, &all);
    if (!r && (p->flags & EMB_USE_DEFAULT_ID)) {
        const EmbIdSpan s = {&p->default_id, 0, 0, 1, NULL};
        r = emb__table_acquire_check(t, &s);
    }
    return r;
}

/* The pass: chunks of whole bags, their rows acquired, the pool kernel over each (MAX: the
   max kernel, which has no streaming stores; its bags have no weights and a factor of 1).
   0 or the table's error. */
static int generic_range(const EmbTable *t, const EmbBatch *b, const EmbPooling *p,
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
    };
    Chunk c;
    c.ncols = c.npieces = 0;
    int r = 0;
    for (int64_t bag = bag0; bag < bag1 && !r; bag++)
        r = add_bag(&ps, &c, bag);
    if (!r)
        r = flush(&ps, &c);
    if (p->flags & EMB_OUT_NONTEMPORAL)
        emb__sfence();
    return r;
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
    return generic_range(t, b, p, out, stride, bag0, bag1);
}

int emb_lookup(const EmbTable *table, const EmbBatch *batch, const EmbPooling *pooling,
               float *out, int64_t out_stride)
{
    int r = emb__batch_check(table, batch, pooling);
    if (!r)
        r = emb__output_check(table, out, batch->nbags, out_stride, "output");
    if (r)
        return r;
    r = emb__lookup_acquire(table, batch, pooling);
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
