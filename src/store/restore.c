/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * restore.c — reading checkpoints back (format.c): into a store's tables and an
 * optimizer's state (opening the file, and opened for listing and as tables mapped over
 * it: ckpt_open.c).
 *
 * A restore first reads and checks the header (its checksum, then its content), then
 * verifies every tensor's checksum, then matches the file's tables with the targets
 * (names, shapes, dtypes, the optimizer's kind) and creates missing optimizer state; only
 * then is the first table written. Integrity comes before meaning: a damaged file is
 * EMB_ECORRUPT whatever it damaged, and no failure before the writes touches a table.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtype.h"
#include "store/model.h"
#include "store/store_impl.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

static int64_t table_find(const EmbCkpt *c, const char *name)
{
    for (int64_t i = 0; i < c->ntables; i++)
        if (strcmp(c->tables[i].name, name) == 0)
            return i;
    return -1;
}

typedef struct Target {
    int64_t table; /* in the file */
    EmbTable *t;
    EmbRowStage *stage; /* a row-listing kind's new content (table_ops.h: stage), swapped
                           in by load() */
} Target;

/* The file's tables matched with the caller's (var_list or store), shapes checked. */
static int match(const EmbCkpt *c, EmbStore *s, const EmbRestoreOptions *o, Target *tg,
                 int64_t *n, const char *path)
{
    const bool vars = o && o->nvars > 0;
    *n = vars ? o->nvars : c->ntables;
    for (int64_t i = 0; i < *n; i++) {
        if (vars) {
            const EmbCheckpointVar *v = &o->var_list[i];
            if (!v->table)
                return emb__fail(EMB_ENULL, "restore var_list entry %lld has no table",
                                 (long long)i);
            const char *name = v->name ? v->name : v->table->name;
            tg[i] = (Target){table_find(c, name), v->table, NULL};
            if (tg[i].table < 0)
                return emb__fail(EMB_ENOTFOUND, "checkpoint %s has no table \"%s\"", path,
                                 name);
        } else {
            const EmbStoreEntry *en = emb__store_entry(s, c->tables[i].name);
            if (!en)
                return emb__fail(EMB_ENOTFOUND, "checkpoint %s has table \"%s\", which the "
                                 "store lacks", path, c->tables[i].name);
            tg[i] = (Target){i, en->table, NULL};
        }
        const EmbCkptTensor *v = &c->tensors[c->tables[tg[i].table].values];
        const EmbTable *t = tg[i].t;
        const bool dyn = emb__table_rows_appear(t); /* keyed rows (a tiered table lists
                                                       its rows but is plain) */
        if (dyn != c->tables[tg[i].table].dynamic)
            return emb__fail(EMB_ESHAPE, "checkpoint %s has \"%s\" as a %s table; %s is %s",
                             path, v->name, dyn ? "plain" : "dynamic", emb__table_label(t),
                             dyn ? "dynamic (it restores only a dynamic table's checkpoint)"
                                 : "not dynamic");
        if ((!dyn && t->ncolumns != v->ncolumns) || t->featuresize != v->width || t->dtype != v->dtype)
            return emb__fail(EMB_ESHAPE, "checkpoint %s has \"%s\" as %lld x %d %s; the "
                             "table's is %lld x %d %s", path, v->name, (long long)v->ncolumns,
                             (int)v->width, emb_dtype_name(v->dtype), (long long)t->ncolumns,
                             (int)t->featuresize, emb_dtype_name(t->dtype));
    }
    return 0;
}

/* The optimizer matches the file's and has state for every table saved with some. */
static int prepare_state(const EmbCkpt *c, EmbOptimizer *opt, const Target *tg, int64_t n,
                         const char *path)
{
    if (!c->has_opt)
        return emb__fail(EMB_ENOTFOUND, "checkpoint %s was saved without optimizer state",
                         path);
    if (c->opt.kind != opt->cfg.kind)
        return emb__fail(EMB_EINVAL, "checkpoint %s holds %s state; the optimizer is %s", path,
                         emb__optimizer_kind_name(c->opt.kind),
                         emb__optimizer_kind_name(opt->cfg.kind));
    for (int64_t i = 0; i < n; i++) {
        const EmbCkptTable *tb = &c->tables[tg[i].table];
        const EmbDtype sdt = tb->step >= 0 && tb->state[0] >= 0 ? c->tensors[tb->state[0]].dtype
                                                                : opt->cfg.state_dtype;
        if (sdt != opt->cfg.state_dtype) /* refused, not converted: docs/design/lowp.md */
            return emb__fail(EMB_EINVAL, "checkpoint %s holds %s optimizer state of table "
                             "\"%.200s\"; the optimizer keeps %s (state_dtype)", path,
                             emb_dtype_name(sdt), tb->name, emb_dtype_name(opt->cfg.state_dtype));
    }
    for (int64_t i = 0; i < n; i++) {
        EmbOptState *st;
        const int r = c->tables[tg[i].table].step >= 0
                              ? emb__optimizer_state(opt, tg[i].t, &st) : 0;
        if (r)
            return r;
    }
    return 0;
}

/* Row j of a staged table's tensor: the stage's row (VALUES) or state row + off bytes. */
typedef struct StageDst {
    const EmbTable *t;
    EmbRowStage *st;
    int what;
    size_t off;
} StageDst;

static void *stage_dst(void *ctx, int64_t j)
{
    const StageDst *d = ctx;
    return (char *)emb__table_stage_dst(d->t, d->st, d->what, j) + d->off;
}

typedef struct RawDst {
    unsigned char *p;
    size_t cb; /* bytes per column */
} RawDst;

static void *raw_dst(void *ctx, int64_t j)
{
    const RawDst *d = ctx;
    return d->p + (size_t)j * d->cb;
}

/* Tensor @k read whole into *out (malloc'ed). */
static int read_tensor(const EmbCkpt *c, int64_t k, int fd, unsigned char *buf, void **out,
                       const char *path)
{
    const EmbCkptTensor *ts = &c->tensors[k];
    RawDst d = {NULL, (size_t)ts->width * emb__ckpt_el_size(ts->dtype)};
    d.p = malloc(EMB_MAX((size_t)ts->ncolumns * d.cb, 1));
    *out = d.p;
    return d.p ? emb__ckpt_load_fn(c, k, fd, raw_dst, &d, buf, path)
               : emb__fail(EMB_ENOMEM, "out of memory restoring %s", path);
}

/* The file's extra tensors of the table that target @g restores (the kind's
   restore_extras, "<name>/<suffix>"), read into @in (each malloc'ed). */
static int read_extras(const EmbCkpt *c, int fd, const Target *g, unsigned char *buf,
                       EmbStageIn *in, const char *path)
{
    EmbExtraTensor want[EMB_EXTRA_MAX];
    int nx = 0, r = 0;
    emb__table_extras(g->t, want, &nx);
    for (int e = 0; e < nx && !r; e++) {
        char name[4200];
        snprintf(name, sizeof name, "%s/%s", in->name, want[e].suffix);
        const int64_t k = emb__ckpt_tensor_find(c, name);
        if (k < 0 && !want[e].optional)
            return emb__ckpt_corrupt(path, "tensor \"%.200s\" is missing", name);
        if (k < 0)
            continue;
        const EmbCkptTensor *ts = &c->tensors[k];
        in->shape[e] = (EmbExtraTensor){want[e].suffix, (int)ts->dtype, ts->ncolumns, ts->width,
                                        want[e].optional};
        r = read_tensor(c, k, fd, buf, (void **)&in->extra[e], path);
    }
    return r;
}

/* ---- EMB_TABLE_CHECK_FINITE: the file's rows read before anything is written ---------- */

/* The values of one target read a row at a time into @row, each checked once the next is
   asked for (or the read ends). */
typedef struct FiniteDst {
    const EmbTable *t;
    unsigned char *row;
    int64_t j; /* the row in @row; -1: none yet */
    int r;
    const char *path, *name;
} FiniteDst;

static void finite_row(FiniteDst *d)
{
    const EmbTable *t = d->t;
    int32_t i = -1;
    if (d->j < 0 || d->r)
        return;
    if (emb__dtype_quantized(t->dtype))
        i = emb__q_row_nonfinite(t->dtype, d->row, t->featuresize);
    for (int32_t k = 0; k < t->featuresize && i < 0 && !emb__dtype_quantized(t->dtype); k++)
        if (!isfinite(emb__row_elem(t->dtype, d->row, t->featuresize, k)))
            i = k;
    if (i >= 0)
        d->r = emb__fail(EMB_ENONFINITE, "checkpoint %s: table \"%.200s\": element %d of row "
                         "%lld reads %g (%s checks for finite values)", d->path, d->name,
                         (int)i, (long long)d->j,
                         (double)emb__row_elem(t->dtype, d->row, t->featuresize, i),
                         emb__table_label(t));
}

static void *finite_dst(void *ctx, int64_t j)
{
    FiniteDst *d = ctx;
    finite_row(d);
    d->j = j;
    return d->row;
}

/* Every row the restore would write into a table with EMB_TABLE_CHECK_FINITE reads finite
   (EMB_ENONFINITE naming the table, row and element): a restore does not bypass the
   check that every other write into such a table makes. */
static int finite_rows(const EmbCkpt *c, int fd, const Target *tg, int64_t n,
                       unsigned char *buf, const char *path)
{
    int r = 0;
    for (int64_t i = 0; i < n && !r; i++) {
        if (!tg[i].t->check_finite)
            continue;
        const EmbCkptTable *tb = &c->tables[tg[i].table];
        const EmbCkptTensor *ts = &c->tensors[tb->values];
        FiniteDst d = {tg[i].t, malloc(emb__ckpt_row_bytes(ts->dtype, ts->width)), -1, 0, path,
                       tb->name};
        if (!d.row)
            return emb__fail(EMB_ENOMEM, "out of memory restoring %s", path);
        r = emb__ckpt_load_fn(c, tb->values, fd, finite_dst, &d, buf, path);
        finite_row(&d);
        r = r ? r : d.r;
        free(d.row);
    }
    return r;
}

/* The new content of a row-listing target @g, read from the file into the stage its kind
   makes (nothing of the table is written). */
static int stage_rows(const EmbCkpt *c, int fd, const EmbOptimizer *opt, Target *g,
                      unsigned char *buf, const char *path)
{
    const EmbCkptTable *tb = &c->tables[g->table];
    EmbStageIn in = {.nrows = c->tensors[tb->values].ncolumns, .step = tb->dyn_step,
                     .path = path, .name = tb->name};
    int r = read_extras(c, fd, g, buf, &in, path);
    r = r ? r : emb__table_stage(g->t, &in, &g->stage);
    StageDst d = {g->t, g->stage, EMB_STAGE_VALUES, 0};
    r = r ? r : emb__ckpt_load_fn(c, tb->values, fd, stage_dst, &d, buf, path);
    if (!r && opt && tb->step >= 0) {
        EmbOptSlot slots[2];
        const int ns = emb__optimizer_slots(opt->cfg.kind, g->t->featuresize, slots);
        d.what = EMB_STAGE_STATE;
        for (int k = 0; k < ns && !r; k++) {
            d.off = (size_t)slots[k].off * sizeof(float);
            r = emb__ckpt_load_fn(c, tb->state[k], fd, stage_dst, &d, buf, path);
        }
    }
    for (int e = 0; e < EMB_EXTRA_MAX; e++)
        free((void *)in.extra[e]);
    return r;
}

/* Writes every target (the stages swapped in, the dense tables read in place): allocates
   nothing (@buf is the restore's chunk buffer), so that only a read error can stop it. */
static int load(const EmbCkpt *c, int fd, EmbStore *s, EmbOptimizer *opt, Target *tg,
                int64_t n, unsigned char *buf, const char *path)
{
    for (int64_t i = 0; i < n; i++) {
        const EmbCkptTable *tb = &c->tables[tg[i].table];
        int r = 0;
        const bool staged = tg[i].stage != NULL;
        if (staged) { /* swapped in whole: state and all */
            emb__table_stage_commit(tg[i].t, tg[i].stage);
            tg[i].stage = NULL;
        } else {
            r = emb__ckpt_load(c, tb->values, fd, tg[i].t, 0, buf, path);
        }
        emb__touched_all(tg[i].t); /* the next save of it is whole */
        if (r)
            return r;
        EmbStoreEntry *en = s ? emb__store_entry(s, tg[i].t->name) : NULL;
        if (en && en->table == tg[i].t)
            en->initialized = true;
        if (!opt)
            continue;
        if (tb->step < 0) {
            emb_optimizer_detach(opt, tg[i].t);
            continue;
        }
        EmbOptState *st = emb__optimizer_find(opt, tg[i].t);
        EmbOptSlot slots[2];
        const int ns = staged ? 0 : emb__optimizer_slots(opt->cfg.kind,
                                                               tg[i].t->featuresize, slots);
        for (int k = 0; k < ns && !r; k++)
            r = emb__ckpt_load(c, tb->state[k], fd, st->slot, slots[k].off, buf, path);
        if (r)
            return r;
        st->step = tb->step;
    }
    return 0;
}

int emb__restore_full(EmbStore *s, const char *path, const EmbRestoreOptions *o,
                      int64_t *global_step)
{
    EmbCkpt c = {0};
    uint64_t size;
    int r;
    const int fd = emb__ckpt_open_path(path, &c, &size, &r);
    if (fd < 0)
        return r;
    if (c.delta_base) { /* the caller restores the chain (restore_ex.c, delta.c) */
        emb__ckpt_free(&c);
        close(fd);
        return EMB__RESTORE_IS_DELTA;
    }
    unsigned char *buf = malloc(EMB_CKPT_CHUNK); /* every read's: allocated before a write */
    r = buf ? emb__ckpt_verify(&c, fd, NULL, path)
            : emb__fail(EMB_ENOMEM, "out of memory restoring %s", path);
    r = r ? r : emb__ckpt_check_rows(&c, fd, buf, path);
    const int64_t ntg = o && o->nvars > 0 ? o->nvars : c.ntables;
    Target *tg = r ? NULL : calloc((size_t)EMB_MAX(ntg, 1), sizeof *tg);
    if (!r && !tg)
        r = emb__fail(EMB_ENOMEM, "out of memory restoring %s", path);
    int64_t n = 0;
    EmbOptimizer *opt = o ? o->optimizer : NULL;
    r = r ? r : match(&c, s, o, tg, &n, path);
    r = r || !opt ? r : prepare_state(&c, opt, tg, n, path);
    r = r ? r : finite_rows(&c, fd, tg, n, buf, path);
    for (int64_t i = 0; i < n && !r; i++)
        if (emb__table_listed(tg[i].t))
            r = stage_rows(&c, fd, opt, &tg[i], buf, path);
    r = r ? r : load(&c, fd, s, opt, tg, n, buf, path);
    if (!r && global_step)
        *global_step = c.global_step;
    for (int64_t i = 0; tg && i < n; i++)
        if (tg[i].stage)
            emb__table_stage_free(tg[i].t, tg[i].stage);
    free(tg);
    free(buf);
    emb__ckpt_free(&c);
    close(fd);
    return r;
}
