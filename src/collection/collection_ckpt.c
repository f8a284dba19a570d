/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * collection_ckpt.c — a collection's checkpoint in one call: store.h's saver and restore
 * over the collection's tables under their names (a var_list), with its optimizer. With
 * deltas on (EmbCollectionOptions.full_every) the saver is kept between saves to one
 * directory, prefix and max_to_keep, so that a save can extend the file it wrote last.
 */
#include <stdlib.h>
#include <string.h>

#include "collection/collection_impl.h"

struct EmbCollSaver {
    EmbSaver *saver;
    char *dir, *prefix;
    int32_t max_to_keep;
};

/* The saver of @k destroyed and forgotten. */
static void saver_close(EmbCollSaver *k)
{
    emb_saver_destroy(&k->saver);
    free(k->dir);
    free(k->prefix);
    *k = (EmbCollSaver){0};
}

int emb__collection_saver_init(EmbCollection *c)
{
    c->saver = calloc(1, sizeof *c->saver);
    return c->saver ? 0 : emb__fail(EMB_ENOMEM, "out of memory for a collection's saver");
}

void emb__collection_saver_free(EmbCollection *c)
{
    if (c->saver)
        saver_close(c->saver);
    free(c->saver);
    c->saver = NULL;
}

/* The saver kept in @k for @dir, @prefix and @max_to_keep, made when there is none. */
static int kept_saver(EmbCollSaver *k, const char *dir, const char *prefix,
                      int32_t max_to_keep, const EmbSaverOptions *o, EmbSaver **out)
{
    if (k->saver && (strcmp(k->dir, dir) || strcmp(k->prefix, prefix) ||
                     k->max_to_keep != max_to_keep))
        saver_close(k);
    if (!k->saver) {
        char *d = strdup(dir), *p = strdup(prefix);
        EmbSaver *s = NULL;
        int r = d && p ? emb_saver_create(&s, dir, prefix, o)
                       : emb__fail(EMB_ENOMEM, "out of memory for a collection's saver");
        if (r) {
            free(d), free(p);
            return r;
        }
        *k = (EmbCollSaver){s, d, p, max_to_keep};
    }
    *out = k->saver;
    return 0;
}

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
                               .nvars = c->n, .optimizer = c->opt,
                               .full_every = c->full_every};
    EmbSaver *s = NULL;
    int r = c->saver ? kept_saver(c->saver, dir, prefix, max_to_keep, &o, &s)
                              : emb_saver_create(&s, dir, prefix, &o);
    if (!r)
        r = emb_saver_save(s, NULL, global_step, path, cap);
    if (!c->saver)
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
