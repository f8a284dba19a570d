/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * export.c — the serving export (issue 45): the tables of a store (or a var_list) written as
 * one checkpoint without optimizer state, their rows as stored or quantized row-wise to
 * int8 / int4 (emb_table_quantize: torch's prepacked rows), written under a temporary name
 * and renamed into place. emb_checkpoint_open(EMB_CHECKPOINT_MMAP) serves it with no copy.
 * Pruning keeps a table's rows that were written (touched-row tracking) or whose L2 norm
 * reaches a threshold, listed in id order, with "<name>/export.remap" (I32, id -> row or -1).
 */
#include <math.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/model.h"
#include "store/store_impl.h"
#include "tables/table_impl.h"

/* ---- pruning: the kept rows as a row list (model.h emb__ckpt_add_listed) ---------------- */

typedef struct Pruned {
    const EmbTable *t; /* the rows as exported (quantized or not) */
    int64_t *kept;     /* the kept ids, increasing */
    int32_t *remap;    /* [ncolumns]: id -> kept row, or -1 */
} Pruned;

static const void *pruned_row(const EmbRowList *l, int64_t k)
{
    const Pruned *p = l->priv;
    return emb__column(p->t, p->kept[k], EMB_CTX_NONE);
}

static const float *pruned_state(const EmbRowList *l, int64_t k)
{
    (void)l, (void)k;
    return NULL;
}

static const void *pruned_remap(const EmbRowList *l, int e, int64_t j, int64_t *tmp)
{
    (void)e, (void)tmp;
    return &((const Pruned *)l->priv)->remap[j];
}

static void pruned_close(EmbRowList *l)
{
    Pruned *p = l->priv;
    free(p->kept);
    free(p->remap);
    free(p);
}

static double row_norm(const float *x, int32_t n)
{
    double s = 0;
    for (int32_t k = 0; k < n; k++)
        s += (double)x[k] * x[k];
    return sqrt(s);
}

/* Whether the export prunes rows. */
static bool prunes(const EmbExportOptions *o)
{
    return o && (o->prune_untouched || o->prune_norm > 0);
}

/* The rows of @src that pruning keeps, listed over @t (@src as exported) into *out (new). */
static int prune_list(const EmbTable *src, const EmbTable *t, const EmbExportOptions *o,
                      EmbRowList **out)
{
    if (!src->data || emb__table_rows_appear(src) || src->ncolumns > INT32_MAX ||
        (o->prune_norm > 0 && src->dtype != EMB_F32))
        return emb__fail(EMB_ENOTSUP, "%s cannot be pruned: only tables of the simple kind of "
                         "at most INT32_MAX columns (f32 ones for prune_norm)",
                         emb__table_label(src));
    const int64_t n = src->ncolumns;
    Pruned *p = calloc(1, sizeof *p);
    EmbRowList *l = calloc(1, sizeof *l);
    int64_t *touched = o->prune_untouched ? malloc((size_t)EMB_MAX(n, 1) * sizeof *touched)
                                          : NULL;
    if (p) {
        p->kept = malloc((size_t)EMB_MAX(n, 1) * sizeof *p->kept);
        p->remap = malloc((size_t)EMB_MAX(n, 1) * sizeof *p->remap);
    }
    if (!p || !l || !p->kept || !p->remap || (o->prune_untouched && !touched)) {
        free(touched);
        free(l);
        if (p) {
            free(p->kept);
            free(p->remap);
        }
        free(p);
        return emb__fail(EMB_ENOMEM, "out of memory pruning %s", emb__table_label(src));
    }
    const int64_t nt = touched ? emb__touched_list(src, touched, n) : 0;
    int64_t kept = 0, next = 0; /* next: index into touched */
    for (int64_t c = 0; c < n; c++) {
        bool keep = true;
        if (touched) {
            while (next < nt && touched[next] < c)
                next++;
            keep = next < nt && touched[next] == c;
        }
        if (keep && o->prune_norm > 0)
            keep = row_norm(emb__column(src, c, EMB_CTX_NONE), src->featuresize) >= o->prune_norm;
        p->remap[c] = keep ? (int32_t)kept : -1;
        if (keep)
            p->kept[kept++] = c;
    }
    free(touched);
    p->t = t;
    *l = (EmbRowList){.n = kept, .nextra = 1, .row = pruned_row, .state = pruned_state,
                      .extra_column = pruned_remap, .close = pruned_close, .priv = p};
    l->extra[0] = (EmbExtraTensor){"export.remap", EMB_ELEM_I32, n, 1, false};
    *out = l;
    return 0;
}

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
    if (opts && !(opts->prune_norm >= 0 && opts->prune_norm < INFINITY))
        return emb__fail(EMB_EINVAL, "export prune_norm %g: a finite norm >= 0 (0: none)",
                         (double)opts->prune_norm);
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
        EmbRowList *l = NULL;
        if (!r && prunes(opts))
            r = prune_list(src, t, opts, &l);
        if (!r)
            r = l ? emb__ckpt_add_listed(&c, name ? name : src->name, t, l)
                  : emb__ckpt_add(&c, name ? name : src->name, t, NULL);
    }
    r = r ? r : write_file(&c, path);
    emb__ckpt_free(&c);
    for (int64_t i = 0; i < n; i++)
        emb_table_destroy(&q[i]);
    free(q);
    return r;
}
