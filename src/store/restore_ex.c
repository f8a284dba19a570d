/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * restore_ex.c — emb_checkpoint_restore_ex(): the arguments checked, then a full
 * checkpoint restored (restore.c) or a delta's chain (delta.c), which restores its full
 * base through restore.c as well. The one file above both, so neither calls the other.
 */
#include "store/model.h"
#include "store/store_impl.h"

int emb_checkpoint_restore_ex(EmbStore *s, const char *path, const EmbRestoreOptions *o,
                              int64_t *global_step)
{
    EMB_CHECK_NULL(path);
    if (o && (o->nvars < 0 || (o->nvars > 0 && !o->var_list)))
        return emb__fail(EMB_EINVAL, "restore var_list: %lld entries at %p", (long long)o->nvars,
                         (const void *)o->var_list);
    if (!s && !(o && o->nvars > 0))
        return emb__fail(EMB_ENULL, "emb_checkpoint_restore: no store and no var_list");
    const int r = emb__restore_full(s, path, o, global_step);
    return r == EMB__RESTORE_IS_DELTA ? emb__delta_restore(s, path, o, global_step) : r;
}

int emb_checkpoint_restore(EmbStore *s, const char *path, int64_t *global_step)
{
    if (!s)
        return emb__fail(EMB_ENULL, "emb_checkpoint_restore: argument 'store' is NULL");
    return emb_checkpoint_restore_ex(s, path, NULL, global_step);
}
