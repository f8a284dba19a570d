/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * collection_step.c — a collection's training step: the forward is emb_maplookup, the
 * backward emb_maplookup_backward then emb_update_many, with the collection's strategy,
 * optimizer, gradient holders and indexers (so the same bits as those calls). Each lower
 * call checks everything before it writes; this file adds the step's order (a backward
 * needs a forward) and names a failing table by its collection name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collection/collection_impl.h"
#include "embtables/tiered.h"
#include "kernels/kernels.h"

/* ---- naming the culprit -------------------------------------------------------------- */

int emb__collection_named(const EmbCollection *c, int code, const char *op, int64_t i)
{
    char msg[400];
    const char *m = emb_last_error();
    const char *tail = strstr(m, "tables[");
    if (tail && (tail = strstr(tail, "]: "))) /* emb_maplookup's own "tables[i]: " prefix */
        m = tail + 3;
    snprintf(msg, sizeof msg, "%s", m);
    return emb__fail(code, "%s: table \"%s\" (%lld): %s", op, c->names[i], (long long)i, msg);
}

int emb__collection_notsup(const char *op)
{
    return emb__fail(EMB_ENOTSUP, "%s: this collection's implementation has no such call",
                     op);
}

/* The table the current error is about: "tables[i]" in it (the strategies' form), or the
 * one whose own label it names; -1 when neither tells. */
static int64_t culprit(const EmbCollection *c)
{
    const char *m = emb_last_error();
    const char *p = strstr(m, "tables[");
    if (p) {
        const int64_t i = strtoll(p + 7, NULL, 10);
        return i >= 0 && i < c->n ? i : -1;
    }
    for (int64_t i = 0; i < c->n; i++) {
        const char *own = emb_table_name(c->tables[i]);
        char label[EMB_NAME_MAX + 16];
        snprintf(label, sizeof label, "table \"%s\"", own);
        if (own[0] && strstr(m, label))
            return i;
    }
    return c->n == 1 ? 0 : -1;
}

/* An update's failure: its table found by checking each gradient again (failure path). */
static int64_t update_culprit(const EmbCollection *c)
{
    int64_t i = culprit(c);
    for (int64_t k = 0; k < c->n && i < 0; k++)
        if (emb__grad_check(c->tables[k], c->grads[k]))
            i = k;
    return i;
}

static int failed(const EmbCollection *c, int code, const char *op, int64_t i)
{
    if (i < 0)
        return code; /* a call-wide mistake (layout, flags): the message says it */
    return emb__collection_named(c, code, op, i);
}

/* ---- the step ------------------------------------------------------------------------ */

/* A concat layout's equal bag counts, the two tables named by their collection names
   (emb_maplookup's own check names them by index). */
static int bags_check(const EmbCollection *c, const EmbBatch *b, const EmbOutputs *o,
                      const char *op)
{
    for (int64_t i = 1; o->concat && i < c->n; i++)
        if (b[i].nbags != b[0].nbags)
            return emb__fail(EMB_ESHAPE, "%s: table \"%s\" (%lld) has %lld bags, but table "
                             "\"%s\" (0) has %lld: a concat output needs equal bag counts",
                             op, c->names[i], (long long)i, (long long)b[i].nbags,
                             c->names[0], (long long)b[0].nbags);
    return 0;
}

int emb_collection_forward(EmbCollection *c, const EmbBatch *batches, const EmbOutputs *out)
{
    EMB_CHECK_NULL(c);
    EMB_CHECK_NULL(batches);
    EMB_CHECK_NULL(out);
    if (c->custom)
        return c->ops.forward ? c->ops.forward(c->user, batches, out)
                              : emb__collection_notsup("emb_collection_forward");
    int r = bags_check(c, batches, out, "emb_collection_forward");
    if (r)
        return r;
    r = emb_maplookup(c->strategy, c->tables, c->n, batches, c->poolings, out);
    if (r)
        return failed(c, r, "emb_collection_forward", culprit(c));
    memcpy(c->batches, batches, (size_t)c->n * sizeof *batches);
    c->step = EMB_COLL_FORWARD;
    return 0;
}

/* The backward of @batches: records every pullback (then *recorded), then the fused
 * update (with an optimizer). */
static int backward(EmbCollection *c, const EmbBatch *batches, const EmbOutputs *grad_out,
                    bool *recorded)
{
    int r = bags_check(c, batches, grad_out, "emb_collection_backward");
    if (r)
        return r;
    r = emb_maplookup_backward(c->tables, c->n, batches, c->poolings, grad_out, c->grads);
    if (r)
        return failed(c, r, "emb_collection_backward", culprit(c));
    *recorded = true;
    if (!c->opt)
        return 0;
    r = emb_update_many(c->strategy, c->opt, c->tables, (const EmbGrad *const *)c->grads,
                        c->n, c->ix, c->flags);
    return r ? failed(c, r, "emb_collection_backward", update_culprit(c)) : 0;
}

int emb_collection_backward(EmbCollection *c, const EmbOutputs *grad_out)
{
    EMB_CHECK_NULL(c);
    EMB_CHECK_NULL(grad_out);
    if (c->custom)
        return c->ops.backward ? c->ops.backward(c->user, NULL, grad_out)
                               : emb__collection_notsup("emb_collection_backward");
    if (c->step == EMB_COLL_IDLE)
        return emb__fail(EMB_EINVAL, "emb_collection_backward: no forward since the last "
                         "update");
    bool recorded = false;
    const int r = backward(c, c->batches, grad_out, &recorded);
    if (recorded) /* after a failed update, the step stays recorded (it may be retried) */
        c->step = r == 0 && c->opt ? EMB_COLL_IDLE : EMB_COLL_RECORDED;
    return r;
}

int emb_collection_backward_batches(EmbCollection *c, const EmbBatch *batches,
                                    const EmbOutputs *grad_out)
{
    EMB_CHECK_NULL(c);
    EMB_CHECK_NULL(batches);
    EMB_CHECK_NULL(grad_out);
    if (c->custom)
        return c->ops.backward ? c->ops.backward(c->user, batches, grad_out)
                               : emb__collection_notsup("emb_collection_backward_batches");
    bool recorded = false;
    const int r = backward(c, batches, grad_out, &recorded);
    if (recorded && !c->opt)
        c->step = EMB_COLL_RECORDED;
    return r;
}

int emb_collection_prefetch(EmbCollection *c, const EmbBatch *next_batches)
{
    EMB_CHECK_NULL(c);
    EMB_CHECK_NULL(next_batches);
    if (c->custom)
        return c->ops.prefetch ? c->ops.prefetch(c->user, next_batches) : 0;
    /* Each table starts reading the rows its next batch misses (tiered tables; a no-op for
     * tables held in memory). A hint: it never fails and never changes results. */
    for (int64_t i = 0; i < c->n; i++)
        emb_table_prefetch(c->tables[i], &next_batches[i]);
    return 0;
}

/* ---- coalesced gradients ------------------------------------------------------------- */

static int rows_room(EmbCollection *c, int64_t nd, int32_t D)
{
    const size_t need = ((size_t)nd + 2) * (size_t)D; /* the rows, then acc and tmp */
    if (need <= c->rows_cap)
        return 0;
    float *p = realloc(c->rows, need * sizeof *p);
    if (!p)
        return emb__fail(EMB_ENOMEM, "emb_collection_grad_rows: out of memory for %lld rows",
                         (long long)nd);
    c->rows = p, c->rows_cap = need;
    return 0;
}

/* Indexes table i's gradient into rows_ix as an update's index phase does. */
static int index_rows(EmbCollection *c, int64_t i, EmbPlan *plan)
{
    int r = c->rows_ix ? 0 : emb_indexer_create(&c->rows_ix);
    memset(plan, 0, sizeof *plan);
    plan->table = c->tables[i];
    plan->grad = c->grads[i];
    plan->ix = c->rows_ix;
    plan->pool = emb__kernel_pool(EMB_F32, emb_table_featuresize(c->tables[i]), 0);
    plan->sort_ids = true; /* ascending ids, as PyTorch's coalesce() */
    if (!r)
        r = emb__plan_index(plan);
    return r ? emb__collection_named(c, r, "emb_collection_grad_rows", i) : 0;
}

int emb_collection_grad_rows(EmbCollection *c, int64_t i, const int64_t **ids,
                             const float **rows, int64_t *n)
{
    EMB_CHECK_NULL(c);
    EMB_CHECK_NULL(ids);
    EMB_CHECK_NULL(rows);
    EMB_CHECK_NULL(n);
    if (c->custom)
        return emb__collection_notsup("emb_collection_grad_rows");
    if (i < 0 || i >= c->n)
        return emb__fail(EMB_EINVAL, "emb_collection_grad_rows: table %lld is not in "
                         "[0, %lld)", (long long)i, (long long)c->n);
    if (c->step != EMB_COLL_RECORDED)
        return emb__fail(EMB_EINVAL, "emb_collection_grad_rows: no gradient recorded "
                         "since the last forward");
    EmbPlan plan;
    int r = index_rows(c, i, &plan);
    const int32_t D = emb_table_featuresize(c->tables[i]);
    const int64_t *dids = NULL;
    const int64_t nd = r ? 0 : emb_indexer_distinct(c->rows_ix, &dids, NULL);
    if (!r)
        r = rows_room(c, nd, D);
    if (r)
        return r;
    float *acc = c->rows + nd * D, *tmp = acc + D;
    for (int64_t d = 0; d < nd; d++) {
        const float *g = emb__plan_column_grad(&plan, d, acc, tmp);
        memcpy(c->rows + d * D, g, (size_t)D * sizeof *g);
    }
    *ids = dids;
    *rows = c->rows;
    *n = nd;
    return 0;
}
