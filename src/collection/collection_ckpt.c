/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * collection_ckpt.c — a collection's checkpoint in one call: store.h's saver and restore
 * over the collection's tables under their names (a var_list), with its optimizer.
 */
#include "collection/collection_impl.h"

int emb_collection_save(const EmbCollection *c, const char *dir, const char *prefix,
                        int64_t global_step, int32_t max_to_keep, char *path, size_t cap)
{
    EMB_CHECK_NULL(c);
    EMB_CHECK_NULL(dir);
    EMB_CHECK_NULL(prefix);
    if (c->custom)
        return c->ops.save ? c->ops.save(c->user, dir, prefix, global_step, max_to_keep, path,
                                         cap)
                           : emb__collection_notsup("emb_collection_save");
    if (global_step < 0) /* before the saver creates the directory */
        return emb__fail(EMB_EINVAL, "global_step %lld is negative", (long long)global_step);
    const EmbSaverOptions o = {.max_to_keep = max_to_keep, .var_list = c->vars,
                               .nvars = c->n, .optimizer = c->opt};
    EmbSaver *s = NULL;
    int r = emb_saver_create(&s, dir, prefix, &o);
    if (!r)
        r = emb_saver_save(s, NULL, global_step, path, cap);
    emb_saver_destroy(&s);
    return r;
}

int emb_collection_restore(EmbCollection *c, const char *path, int64_t *global_step)
{
    EMB_CHECK_NULL(c);
    EMB_CHECK_NULL(path);
    if (c->custom)
        return c->ops.restore ? c->ops.restore(c->user, path, global_step)
                              : emb__collection_notsup("emb_collection_restore");
    const EmbRestoreOptions o = {.var_list = c->vars, .nvars = c->n, .optimizer = c->opt};
    return emb_checkpoint_restore_ex(NULL, path, &o, global_step);
}
