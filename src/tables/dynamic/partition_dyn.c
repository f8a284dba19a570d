/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * partition_dyn.c — the table contract of a table partitioned (mod) over dynamic shards:
 * the shards keep ids as they are, so every entry goes to the home shard of an id (shard
 * id mod P) with the id unchanged; an update decides, reserves and creates per shard and
 * counts the step in every shard (as one table would); optimizer state is each shard's,
 * behind a partitioned view of the shards' views; a checkpoint holds it as one dynamic
 * table (dynamic_ckpt.c over the shards).
 */
#include <stdlib.h>

#include "embtables/partition.h"
#include "tables/dynamic/dynamic_impl.h"
#include "tables/partition_impl.h"

#define SHARDS(t) (emb__partition(t)->shards)
#define NSHARDS(t) (emb__partition(t)->nshards)

static void *pdyn_column(const EmbTable *t, int64_t id, EmbContext ctx)
{
    return emb__column(emb__partition_home(t, id), id, ctx);
}

static int pdyn_resolve(const EmbTable *t, const EmbIdSpan *s, EmbContext ctx,
                        const void **cols, unsigned *hint)
{
    if (!cols) { /* rows in memory: nothing to pin, each id checked by its shard */
        for (int64_t k = 0; k < s->n; k++) {
            const int64_t id = emb__span_id(s, k);
            const EmbIdSpan one = {&id, 0, 0, 1, NULL};
            if (id < 0 || (s->pruned_w && !(s->pruned_w[s->k0 + k] > 0.0f)))
                continue;
            const int r = emb__table_acquire_check(emb__partition_home(t, id), &one);
            if (r)
                return r;
        }
        return 0;
    }
    *hint = 0;
    for (int64_t k = 0; k < s->n; k++) {
        const int64_t id = emb__span_id(s, k);
        cols[k] = emb__column(emb__partition_home(t, id), id, ctx);
    }
    return 0;
}

static int pdyn_column_create(EmbTable *t, int64_t id, void **out)
{
    return emb__dynamic_get_or_create(emb__partition_home(t, id), id, out);
}

/* Each shard room for its ids. */
static int pdyn_reserve_ids(EmbTable *t, const int64_t *ids, int64_t n)
{
    int64_t *sub = malloc((size_t)EMB_MAX(n, 1) * sizeof *sub);
    if (!sub)
        return emb__fail(EMB_ENOMEM, "out of memory for %lld ids", (long long)n);
    int r = 0;
    for (int32_t i = 0; i < NSHARDS(t) && !r; i++) {
        int64_t m = 0;
        for (int64_t k = 0; k < n; k++)
            if (emb__partition_home(t, ids[k]) == SHARDS(t)[i])
                sub[m++] = ids[k];
        r = emb__dynamic_reserve_ids(SHARDS(t)[i], sub, m);
    }
    free(sub);
    return r;
}

static int pdyn_initialize(EmbTable *t, const struct EmbInitializer *in)
{
    int r = 0;
    for (int32_t i = 0; i < NSHARDS(t) && !r; i++)
        r = emb__dynamic_initialize(SHARDS(t)[i], in);
    return r;
}

/* ---- the update: each id by its shard; each shard reserves its new rows ---- */

static int pdyn_update_prepare(EmbTable *t, EmbRowPlan *rp)
{
    for (int p = 0; p < rp->nparts; p++) {
        int64_t d0, n, e = 0;
        emb__rowplan_part(rp, p, &d0, &n);
        for (int64_t d = d0; d < d0 + n; d++)
            emb__dynamic_decide(emb__partition_home(t, rp->ids[d]), rp->ids + d, 1,
                                rp->handle + d, &e);
    }
    int r = 0;
    for (int32_t i = 0; i < NSHARDS(t) && !r; i++) {
        EmbTable *s = SHARDS(t)[i];
        int64_t e = 0;
        for (int p = 0; p < rp->nparts; p++) {
            int64_t d0, n;
            emb__rowplan_part(rp, p, &d0, &n);
            for (int64_t d = d0; d < d0 + n; d++)
                e += rp->handle[d] == -2 && emb__partition_home(t, rp->ids[d]) == s;
        }
        r = emb__dynamic_reserve(s, e);
    }
    return r;
}

static void pdyn_update_commit(EmbTable *t, EmbRowPlan *rp)
{
    for (int32_t i = 0; i < NSHARDS(t); i++) /* every shard counts the step */
        emb__dynamic_step(SHARDS(t)[i]);
    for (int p = 0; p < rp->nparts; p++) {
        int64_t d0, n;
        emb__rowplan_part(rp, p, &d0, &n);
        for (int64_t d = d0; d < d0 + n; d++)
            emb__dynamic_commit(emb__partition_home(t, rp->ids[d]), rp->ids + d, 1,
                                rp->handle + d);
    }
}

static void pdyn_update_rows(const EmbTable *t, const EmbRowPlan *rp, int64_t d0, int64_t n,
                             void **cols, float **states)
{
    for (int64_t k = 0; k < n; k++) {
        const int64_t r = rp->handle[d0 + k];
        const EmbTable *h = emb__partition_home(t, rp->ids[d0 + k]);
        cols[k] = r >= 0 ? emb__dynamic_row(h, r) : NULL;
        if (states)
            states[k] = r >= 0 ? emb__dynamic_state_row(h, r) : NULL;
    }
}

/* Each shard's state, behind a partitioned view of them. */
static int pdyn_state_attach(EmbTable *t, int32_t width, const float *init, EmbTable **out)
{
    const int32_t n = NSHARDS(t);
    EmbTable **views = calloc((size_t)n, sizeof *views);
    int r = views ? 0 : emb__fail(EMB_ENOMEM, "out of memory for optimizer state");
    for (int32_t i = 0; i < n && !r; i++)
        r = emb__dynamic_state_attach(SHARDS(t)[i], width, init, &views[i]);
    r = r ? r : emb__partition_build(out, views, n, EMB_PARTITION_MOD | EMB_PARTITION_OWN_SHARDS,
                                     NULL, INT64_MAX, &emb__partition_dyn_ops);
    for (int32_t i = 0; r && views && i < n; i++)
        emb_table_destroy(&views[i]); /* detaches the state made */
    free(views);
    return r;
}

/* ---- checkpoints: one dynamic table over the shards (dynamic_ckpt.c) ---- */

static int pdyn_save_check(const EmbTable *t)
{
    return emb__dynamic_save_check(t, SHARDS(t), NSHARDS(t));
}

static int pdyn_save_list(const EmbTable *t, bool state, EmbRowList *out)
{
    return emb__dynamic_save_list(t, SHARDS(t), NSHARDS(t), state, out);
}

static void pdyn_restore_extras(const EmbTable *t, EmbExtraTensor *extra, int *n)
{
    emb__dynamic_restore_extras(SHARDS(t), NSHARDS(t), extra, n);
}

static int pdyn_stage(const EmbTable *t, const EmbStageIn *in, EmbRowStage **out)
{
    return emb__dynamic_restore_stage(t, SHARDS(t), NSHARDS(t), in, out);
}

static const EmbRowsFacet pdyn_rows = {
    .keys = true,
    .column = pdyn_column,
    .acquire = pdyn_resolve,
    .release = emb__rows_release_none,
};

static const EmbKeyedFacet pdyn_keyed = {
    .column_create = pdyn_column_create,
    .reserve_ids = pdyn_reserve_ids,
    .initialize = pdyn_initialize,
    .update_prepare = pdyn_update_prepare,
    .update_commit = pdyn_update_commit,
    .update_cancel = emb__keyed_cancel_none,
    .update_rows = pdyn_update_rows,
    .state_attach = pdyn_state_attach,
    .state_is = emb__keyed_state_unchecked,
};

static const EmbListedFacet pdyn_listed = {
    .list_ids = emb__listed_ids_none, .list = pdyn_save_list,
    .extras = pdyn_restore_extras,
    .stage = pdyn_stage,
    .stage_dst = emb__dynamic_stage_dst,
    .stage_commit = emb__dynamic_stage_commit_all,
    .stage_free = emb__dynamic_stage_free_all,
};

const EmbTableOps emb__partition_dyn_ops = {
    .kind = "partitioned (dynamic shards)",
    .rows = &pdyn_rows,
    .keyed = &pdyn_keyed,
    .listed = &pdyn_listed,
    .save_check = pdyn_save_check,
    .nshards = emb__partition_nshards,
    .shard = emb__partition_shard,
    .destroy = emb__partition_destroy,
};
