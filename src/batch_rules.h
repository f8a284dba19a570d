/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * batch_rules.h — the rules of reading a batch, once, for every back end: the shape check
 * of a batch and its pooling, where a bag starts, which entries a pooling prunes, the
 * combiner's factor, and the pullback's entries (which column receives which output row's
 * gradient, with which coefficient).
 *
 * Header-only and free of library symbols, so that the core (lookup/batch.h, the kernels,
 * update/pullback.c), the MPI library (src/dist/, built on the public API: it links no
 * private symbol) and the CUDA back end (gpu/, compiled by nvcc or as the host emulation)
 * all read a batch by the same code. Functions are `static inline` in C and
 * `__host__ __device__` in CUDA. Messages name no table: each caller adds its label.
 */
#ifndef EMB_BATCH_RULES_H
#define EMB_BATCH_RULES_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "embtables/batch.h" /* EmbBatch, EmbPooling: no table, no lookup */

#if defined(__CUDACC__) || defined(EMB_GPU_EMU)
#define EMB_RULE static __host__ __device__ __forceinline__
#else
#define EMB_RULE static inline
#endif

/* The pooling flags lookup.h defines (other bits are EMB_EINVAL). */
#define EMB_RULE_POOLING_FLAGS                                                              \
    ((unsigned)(EMB_PRUNE_INVALID | EMB_PRUNE_NONPOSITIVE_WEIGHTS | EMB_USE_DEFAULT_ID |    \
                EMB_OUT_NONTEMPORAL))

/* Id k of a batch's int64 or int32 ids. */
EMB_RULE int64_t emb_rule_id(const EmbBatch *b, int64_t k)
{
    return b->id_type == EMB_ID_I32 ? (int64_t)((const int32_t *)b->ids)[k]
                                    : ((const int64_t *)b->ids)[k];
}

/* The first entry of @bag, and one past its last. */
EMB_RULE int64_t emb_rule_bag_start(const EmbBatch *b, int64_t bag)
{
    return b->offsets ? b->offsets[bag] : bag * b->bag_size;
}

EMB_RULE int64_t emb_rule_bag_end(const EmbBatch *b, int64_t bag)
{
    return b->offsets ? b->offsets[bag + 1] : (bag + 1) * b->bag_size;
}

/* Whether a pooling of @flags drops entry @k of id @id (@weights: the batch's weights, or
 * NULL): a negative id with EMB_PRUNE_INVALID, a weight <= 0 (or NaN) with
 * EMB_PRUNE_NONPOSITIVE_WEIGHTS. The weight is read only when that flag is set. */
EMB_RULE bool emb_rule_pruned(unsigned flags, int64_t id, const float *weights, int64_t k)
{
    if (id < 0 && (flags & EMB_PRUNE_INVALID))
        return true;
    return weights && (flags & EMB_PRUNE_NONPOSITIVE_WEIGHTS) && !(weights[k] > 0.0f);
}

/* The factor a finished bag is scaled by: 1 (SUM, NONE, MAX), 1/Σw (MEAN), 1/sqrt(Σw²) (SQRTN);
 * 0 when the denominator is 0 (weights that cancel give zeros, never NaN). */
EMB_RULE float emb_rule_combiner_factor(int combiner, double sum_w, double sum_w2)
{
    if (combiner == EMB_COMBINER_MEAN)
        return sum_w != 0.0 ? (float)(1.0 / sum_w) : 0.0f;
    if (combiner == EMB_COMBINER_SQRTN)
        return sum_w2 > 0.0 ? (float)(1.0 / sqrt(sum_w2)) : 0.0f;
    return 1.0f;
}

/* One entry of a pullback: the column @id receives coef x the output gradient of @bag. */
typedef struct EmbPullEntry {
    int64_t id;    /* column that receives the gradient */
    int64_t bag;   /* output row whose gradient it receives */
    float coef;    /* s * w: the combiner's factor times the entry's weight */
    int32_t owner; /* free for the caller (the MPI library: the rank owning the column) */
} EmbPullEntry;

EMB_RULE EmbPullEntry emb_rule_entry(int64_t id, int64_t bag, float coef)
{
    EmbPullEntry e; /* no compound literal: C++ (gpu/) reads this header too */
    e.id = id, e.bag = bag, e.coef = coef, e.owner = 0;
    return e;
}

/* Whether entries [first, n) of @out hold column @id. */
EMB_RULE bool emb_rule_seen(const EmbPullEntry *out, int64_t first, int64_t n, int64_t id)
{
    for (int64_t i = first; i < n; i++)
        if (out[i].id == id)
            return true;
    return false;
}

/* Upper bound of a batch's pullback entries: nnz + nbags (an empty bag's default id). */
EMB_RULE int64_t emb_rule_pullback_max_entries(const EmbBatch *b)
{
    return b->nnz + b->nbags;
}

/*
 * The pullback entries of a batch the shape check passed, in batch order, into @out (room
 * for emb_rule_pullback_max_entries): a lookup computes y = s · Σ_k w_k · clip(x_k) over
 * a bag's kept entries (an empty bag: the default column with w = 1, or nothing), so entry
 * k's column receives s·w_k · dy (the clip's Jacobian is the caller's). MAX (no weights):
 * one entry per distinct id of a bag, coef 1; which elements of dy it receives (those its
 * column gave the maximum of) is the caller's, as the clip's Jacobian. Returns the count.
 */
EMB_RULE int64_t emb_rule_pullback_entries(const EmbBatch *b, const EmbPooling *p,
                                           EmbPullEntry *out)
{
    int64_t n = 0;
    for (int64_t bag = 0; bag < b->nbags; bag++) {
        const int64_t start = emb_rule_bag_start(b, bag), end = emb_rule_bag_end(b, bag);
        const int64_t first = n;
        double sw = 0.0, sw2 = 0.0;
        for (int64_t k = start; k < end; k++) {
            const int64_t id = emb_rule_id(b, k);
            if (emb_rule_pruned(p->flags, id, b->weights, k))
                continue;
            if (p->combiner == EMB_COMBINER_MAX && emb_rule_seen(out, first, n, id))
                continue; /* MAX: an id once per bag (its first entry takes the ties) */
            const float w = b->weights ? b->weights[k] : 1.0f;
            out[n++] = emb_rule_entry(id, bag, w);
            sw += w;
            sw2 += (double)w * w;
        }
        if (n == first) {
            if (p->flags & EMB_USE_DEFAULT_ID)
                out[n++] = emb_rule_entry(p->default_id, bag, 1.0f);
            continue;
        }
        const float s = emb_rule_combiner_factor(p->combiner, sw, sw2);
        for (int64_t i = first; i < n; i++)
            out[i].coef = out[i].coef * s;
    }
    return n;
}

/*
 * The shape of a batch and its pooling (everything but the ids, the offsets' values and
 * default_id's range): sizes, id type, combiner, flags, max_norm, ids present, the fixed
 * bag size. Returns 0 or the EMB_E* code, with what is wrong in @msg (@cap bytes; no
 * table named: the caller adds its label).
 */
static inline int emb_rule_check_shape(const EmbBatch *b, const EmbPooling *p, char *msg,
                                       size_t cap)
{
    int r = 0;
    int64_t n = 0;
    if (b->nnz < 0 || b->nbags < 0 || (!b->offsets && b->bag_size < 0))
        r = EMB_EINVAL, snprintf(msg, cap, "nnz %lld / nbags %lld / bag_size %lld is negative",
                                 (long long)b->nnz, (long long)b->nbags,
                                 (long long)b->bag_size);
    else if (b->id_type != EMB_ID_I64 && b->id_type != EMB_ID_I32)
        r = EMB_EINVAL, snprintf(msg, cap, "id_type %d is not EMB_ID_I64 or EMB_ID_I32",
                                 (int)b->id_type);
    else if (p->combiner < EMB_COMBINER_NONE || p->combiner > EMB_COMBINER_MAX)
        r = EMB_EINVAL, snprintf(msg, cap, "combiner %d is not NONE, SUM, MEAN, SQRTN or MAX",
                                 (int)p->combiner);
    else if (p->combiner == EMB_COMBINER_MAX && b->weights)
        r = EMB_EINVAL, snprintf(msg, cap, "combiner MAX takes no per-id weights");
    else if (p->combiner == EMB_COMBINER_MAX && p->max_norm != 0.0f)
        r = EMB_EINVAL, snprintf(msg, cap, "combiner MAX takes no max_norm (%g)",
                                 (double)p->max_norm);
    else if (p->flags & ~EMB_RULE_POOLING_FLAGS)
        r = EMB_EINVAL, snprintf(msg, cap, "pooling flags 0x%x have unknown bits", p->flags);
    else if (isnan(p->max_norm) || p->max_norm < 0.0f)
        r = EMB_EINVAL, snprintf(msg, cap, "max_norm %g is not >= 0", (double)p->max_norm);
    else if (b->nnz > 0 && !b->ids)
        r = EMB_ENULL, snprintf(msg, cap, "ids is NULL for nnz %lld", (long long)b->nnz);
    else if (b->offsets && p->combiner == EMB_COMBINER_NONE)
        r = EMB_EINVAL, snprintf(msg, cap, "gather (combiner NONE) takes no offsets");
    else if (b->offsets)
        r = 0;
    else if (b->bag_size < 0 || __builtin_mul_overflow(b->nbags, b->bag_size, &n))
        r = EMB_EOVERFLOW, snprintf(msg, cap, "nbags %lld x bag_size %lld overflows",
                                    (long long)b->nbags, (long long)b->bag_size);
    else if (p->combiner == EMB_COMBINER_NONE && b->bag_size != 1 && b->nbags > 0)
        r = EMB_EINVAL, snprintf(msg, cap, "gather (combiner NONE) needs bag_size 1, not %lld",
                                 (long long)b->bag_size);
    else if (n != b->nnz)
        r = EMB_ESHAPE, snprintf(msg, cap, "nbags %lld x bag_size %lld != nnz %lld",
                                 (long long)b->nbags, (long long)b->bag_size,
                                 (long long)b->nnz);
    return r;
}

#endif
