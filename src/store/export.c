/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * export.c — the serving export (issue 45): the tables of a store (or a var_list) written as
 * one checkpoint without optimizer state, their rows as stored or quantized row-wise to
 * int8 / int4 (emb_table_quantize: torch's prepacked rows), written under a temporary name
 * and renamed into place. emb_checkpoint_open(EMB_CHECKPOINT_MMAP) serves it with no copy.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/model.h"
#include "store/store_impl.h"
#include "tables/table_impl.h"

/* The checkpoint @c written to @path: a temporary of this process, synced, renamed. */
static int write_file(EmbCkpt *c, const char *path)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-export-%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return emb__fail(EMB_EINVAL, "export path %.200s... is too long", path);
    const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return emb__fail(EMB_EIO, "cannot create %s: %s", tmp, strerror(errno));
    int r = emb__ckpt_save(c, fd, path);
    if (!r && fsync(fd) != 0)
        r = emb__fail(EMB_EIO, "cannot write %s: %s", path, strerror(errno));
    close(fd);
    if (!r && rename(tmp, path) != 0)
        r = emb__fail(EMB_EIO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    if (r)
        unlink(tmp);
    return r;
}

int emb_store_export(const EmbStore *store, const char *path, const EmbExportOptions *opts)
{
    EMB_CHECK_NULL(path);
    const int64_t nvars = opts ? opts->nvars : 0;
    if (nvars < 0 || (nvars > 0 && !opts->var_list))
        return emb__fail(EMB_EINVAL, "export var_list: %lld entries at %p", (long long)nvars,
                         (const void *)(opts ? opts->var_list : NULL));
    if (!store && nvars == 0)
        return emb__fail(EMB_ENULL, "emb_store_export: no store and no var_list");
    const EmbDtype dt = opts ? opts->dtype : EMB_F32;
    if (dt != EMB_F32 && dt != EMB_INT8 && dt != EMB_INT4)
        return emb__fail(EMB_EINVAL, "export dtype %d: EMB_F32 (rows as stored), EMB_INT8 or "
                         "EMB_INT4", (int)dt);
    if (opts && opts->global_step < 0)
        return emb__fail(EMB_EINVAL, "export global_step %lld is negative",
                         (long long)opts->global_step);
    const int64_t n = nvars > 0 ? nvars : store->n;
    EmbTable **q = calloc((size_t)EMB_MAX(n, 1), sizeof *q);
    if (!q)
        return emb__fail(EMB_ENOMEM, "out of memory exporting %s", path);
    EmbCkpt c = {.global_step = opts ? opts->global_step : 0};
    int r = 0;
    for (int64_t i = 0; i < n && !r; i++) {
        EmbTable *src = nvars > 0 ? opts->var_list[i].table : store->entries[i].table;
        const char *name = nvars > 0 ? opts->var_list[i].name : NULL;
        if (!src) {
            r = emb__fail(EMB_ENULL, "export var_list entry %lld has no table", (long long)i);
            break;
        }
        const EmbTable *t = src;
        if (dt != EMB_F32 && src->dtype != dt) { /* the rows quantized aside */
            const EmbTableOptions to = {.name = src->name};
            r = emb_table_create(&q[i], src->ncolumns, src->featuresize, dt, &to);
            r = r ? r : emb_table_quantize(q[i], src);
            t = q[i];
        }
        r = r ? r : emb__ckpt_add(&c, name ? name : src->name, t, NULL);
    }
    r = r ? r : write_file(&c, path);
    emb__ckpt_free(&c);
    for (int64_t i = 0; i < n; i++)
        emb_table_destroy(&q[i]);
    free(q);
    return r;
}
