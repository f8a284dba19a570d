/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * update.c — emb_update: one table's step on the calling thread, the two phases of plan.c
 * back to back (emb_update_many, in strategies/, runs the same phases over many tables).
 */
#include "tables/table_impl.h"
#include "update/update_impl.h"

#define KNOWN_FLAGS EMB_UPDATE_NONTEMPORAL

int emb__update_flags_check(unsigned flags)
{
    if (flags & ~(unsigned)KNOWN_FLAGS)
        return emb__fail(EMB_EINVAL, "update flags 0x%x have unknown bits", flags);
    return 0;
}

/* Makes room for EMB_PLAN_SCRATCH_ROWS rows of @D floats in the indexer's own scratch (emb__plan_apply). */
static int indexer_scratch(EmbIndexer *ix, int32_t D)
{
    if (ix->scratch_d >= D)
        return 0;
    float *s = emb__aligned_alloc(EMB_ALIGN, EMB_PLAN_SCRATCH_ROWS * (size_t)D * sizeof(float));
    if (!s)
        return emb__fail(EMB_ENOMEM, "out of memory for update scratch");
    emb__aligned_free(ix->scratch);
    ix->scratch = s;
    ix->scratch_d = D;
    return 0;
}

int emb_update(EmbOptimizer *opt, EmbTable *table, const EmbGrad *grad, EmbIndexer *ix,
               unsigned flags)
{
    EMB_CHECK_NULL(opt);
    EMB_CHECK_NULL(table);
    EMB_CHECK_NULL(grad);
    EMB_CHECK_NULL(ix);
    int r = emb__update_flags_check(flags);
    EmbPlan plan = {.table = table, .grad = grad, .ix = ix};
    r = r ? r : emb__plan_index(&plan);
    r = r ? r : indexer_scratch(ix, table->featuresize);
    EmbOptState *st = NULL;
    r = r ? r : emb__optimizer_state(opt, table, &st);
    if (opt->cfg.max_global_norm > 0.0f)
        r = r ? r : emb__clip_sums_reserve(&plan);
    r = r ? r : emb__plan_rows_prepare(&plan);
    if (r)
        return r;
    emb__plan_rows_commit(&plan);
    emb__plan_optimizer(opt, st, &plan, flags);
    if (opt->cfg.max_global_norm > 0.0f) {
        EmbNormAcc acc = {{0}, 0.0};
        emb__clip_norm_range(&plan, 0, ix->ndistinct, ix->scratch, &acc);
        plan.clip_scale = emb__clip_global_scale(&acc, opt->cfg.max_global_norm);
        plan.summed = plan.clip && plan.keep_sums;
    }
    emb__plan_apply(&plan, 0, ix->ndistinct, ix->scratch);
    if (flags & EMB_UPDATE_NONTEMPORAL)
        emb__sfence();
    emb__table_release(table);
    st->step++;
    return 0;
}
