/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist_desc.c — a table's description checked (its shape, flags and tiered path) and a
 * placement checked against what the table uses: for emb_dist_create() (dist.c) and the
 * planner (dist_plan.c).
 */
#include <string.h>

#include "dist/dist_impl.h"

int dist_desc_check(const EmbDistTableDesc *t, int64_t i, int64_t *bytes)
{
    const size_t es = emb_dtype_size(t->dtype);
    if (es == 0)
        return dist_fail(EMB_EDTYPE, "tables[%lld]: dtype %d is not f32, f16 or bf16",
                         (long long)i, (int)t->dtype);
    if (t->nrows < 0 || t->featuresize < 1 || !(t->lookups >= 0.0) || !(t->distinct >= 0.0))
        return dist_fail(EMB_EINVAL, "tables[%lld]: nrows %lld, featuresize %d, lookups %g "
                         "or distinct %g out of range", (long long)i, (long long)t->nrows,
                         (int)t->featuresize, t->lookups, t->distinct);
    if (t->nrows > INT64_MAX / ((int64_t)es * t->featuresize))
        return dist_fail(EMB_EOVERFLOW, "tables[%lld]: %lld rows of %d elements overflow",
                         (long long)i, (long long)t->nrows, (int)t->featuresize);
    if (t->uses & ~(unsigned)(EMB_DIST_USES_MAX | EMB_DIST_USES_MAX_NORM |
                              EMB_DIST_USES_ROWWISE_ADAGRAD))
        return dist_fail(EMB_EINVAL, "tables[%lld]: uses 0x%x has unknown flags",
                         (long long)i, t->uses);
    if (t->tiered && (!t->tiered->path || strlen(t->tiered->path) > DIST_PATH_MAX))
        return dist_fail(t->tiered->path ? EMB_EINVAL : EMB_ENULL, "tables[%lld]: "
                         "tiered->path is %s", (long long)i,
                         t->tiered->path ? "too long" : "NULL");
    *bytes = t->nrows * (int64_t)es * t->featuresize;
    return 0;
}

int dist_placement_allowed(const EmbDistTableDesc *t, const EmbDistPlacement *p, int64_t i,
                           const char *what)
{
    const char *why = NULL;
    if (p->kind == EMB_DIST_ROWWISE && (t->uses & EMB_DIST_USES_MAX))
        why = "row-wise: MAX pooling's backward needs each element's owner";
    else if (p->kind == EMB_DIST_COLUMNWISE && (t->uses & EMB_DIST_USES_MAX_NORM))
        why = "column-wise: a row's max_norm spans the ranks";
    else if (p->kind == EMB_DIST_COLUMNWISE && (t->uses & EMB_DIST_USES_ROWWISE_ADAGRAD))
        why = "column-wise: row-wise Adagrad's one accumulator per row spans the ranks";
    if (!why)
        return 0;
    return dist_fail(EMB_ENOTSUP, "%s[%lld] (table \"%s\") cannot be %s", what, (long long)i,
                     t->name ? t->name : "", why);
}
