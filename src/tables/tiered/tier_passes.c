/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_passes.c — a tiered table's passes over its whole file (tier.h): initialize
 * and the optimizer state's initial values (streamed in 1 MiB chunks of records, the cache
 * flushed and emptied first, into a new copy of the file renamed over it once whole: all
 * or nothing), the state view, and checkpoints. A save reads the flushed file with pread,
 * 1 MiB of records at a time (through the page cache, nothing mapped: a file cut by
 * someone else fails the save with EMB_EIO, never a SIGBUS). A restore maps a new copy of
 * the file (an O_EXCL name, its blocks allocated first, so a full disk fails in stage,
 * before any table changes), the store writes the rows into it, and the commit renames it
 * over the old file and drops the cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dtype.h"
#include "initval.h"
#include "tables/table_impl.h"
#include "tables/tiered/tier.h"

/* ---- whole-file passes ----------------------------------------------------------------- */

/* The new content of the file, written into a copy of it (formatted, its blocks allocated
   first: a full disk fails before anything is written) that is renamed over it once whole,
   then the resident records changed the same way: all or nothing. @name: the file now
   (a create's new file until its commit). */
static int copy_pass(Tier *x, emb_tier_rec_fn fn, const void *arg, const char *name,
                     char *buf, int64_t chunk)
{
    char *tmp = NULL;
    const int fd = emb__tier_tmp_create(x, name, &tmp);
    if (fd < 0)
        return fd;
    int r = emb__tier_format(x, fd, tmp);
    const int64_t bytes = emb__tier_rec_offset(x, x->nrows);
    const int e = r ? 0 : posix_fallocate(fd, 0, (off_t)bytes);
    if (e && e != EOPNOTSUPP && e != EINVAL) /* no room: nothing written */
        r = emb__fail(EMB_EIO, "%s: no room for a new copy of %s (%lld bytes): %s; the table "
                      "is unchanged", x->label, x->path, (long long)bytes, strerror(e));
    for (int64_t r0 = 0; r0 < x->nrows && !r; r0 += chunk) {
        const int64_t n = EMB_MIN(chunk, x->nrows - r0);
        r = emb__tier_file_rw(x, -1, r0, n, buf, false);
        for (int64_t k = 0; k < n && !r; k++)
            fn(x, buf + (size_t)k * x->recbytes, r0 + k, arg);
        r = r ? r : emb__tier_file_rw(x, fd, r0, n, buf, true);
        if (r)
            r = emb__fail(r, "%s (into a new copy: the table is unchanged)", emb_last_error());
    }
    const int se = r ? 0 : emb__tier_io_sync(fd);
    if (se)
        r = emb__fail(EMB_EIO, "%s: syncing %s: %s", x->label, tmp, strerror(-se));
    if (!r && rename(tmp, name) != 0)
        r = emb__fail(EMB_EIO, "%s: cannot rename %s to %s: %s", x->label, tmp, name,
                      strerror(errno));
    if (r) {
        unlink(tmp);
        close(fd);
    } else {
        emb__tier_each_resident(x, fn, arg);
        emb__tier_replace_fd(x, fd);
    }
    free(tmp);
    return r;
}

/* Flushes and empties the cache, then rewrites every record through @fn (copy_pass); the
   records that stay resident (pinned by the operation under way) are changed in place.
   Fails (EMB_EIO, EMB_ENOMEM) with the table and its file unchanged. */
static int each_record(Tier *x, emb_tier_rec_fn fn, const void *arg)
{
    int r = emb__tier_flush(x);
    if (r)
        return r;
    emb__tier_drop(x);
    const int64_t chunk = EMB_MAX(1, (1 << 20) / (int64_t)x->recbytes);
    char *buf = malloc((size_t)chunk * x->recbytes);
    if (!buf)
        return emb__fail(EMB_ENOMEM, "%s: out of memory for a pass over its file", x->label);
    r = copy_pass(x, fn, arg, x->tmp_path ? x->tmp_path : x->path, buf, chunk);
    free(buf);
    return r;
}

typedef struct RowInit {
    const EmbInitializer *in;
    float *row; /* D floats: a row is computed whole, then stored (quantized rows too) */
} RowInit;

static void init_rec(const Tier *x, char *rec, int64_t row, const void *arg)
{
    const RowInit *ri = arg;
    for (int32_t i = 0; i < x->D; i++)
        ri->row[i] = emb__init_value(ri->in, x->nrows, row, i);
    emb__row_store((EmbDtype)x->dtype, rec, x->D, ri->row); /* as store/init.c does */
}

int emb__tiered_initialize(EmbTable *t, const struct EmbInitializer *in)
{
    Tier *x = t->impl;
    const RowInit ri = {in, malloc((size_t)x->D * sizeof(float))};
    if (!ri.row)
        return emb__fail(EMB_ENOMEM, "%s: out of memory for a row of %d floats", x->label,
                         (int)x->D);
    const int r = each_record(x, init_rec, &ri);
    free(ri.row);
    return r;
}

typedef struct StateInit {
    const float *init;
    int32_t width;
} StateInit;

static void state_rec(const Tier *x, char *rec, int64_t row, const void *arg)
{
    (void)row;
    const StateInit *si = arg;
    memcpy(rec + x->state_off, si->init, (size_t)si->width * sizeof(float));
}

/* ---- the state view -------------------------------------------------------------------- */

/* The state rows of a tiered table: the parent's records, offset to their state. */
static void *view_column(const EmbTable *v, int64_t id, EmbContext ctx)
{
    Tier *x = v->impl;
    char *rec;
    if (emb__tier_column(x, id, &rec, ctx == EMB_CTX_UPDATE))
        return x->sink + x->state_off;
    return rec + x->state_off;
}

static int view_resolve(const EmbTable *v, const EmbIdSpan *s, EmbContext ctx,
                        const void **cols, unsigned *hint)
{
    Tier *x = v->impl;
    if (!cols) /* the contract's acquire without rows: pin them span by span */
        return emb__rows_pin_in_spans(v, s);
    *hint = 0;
    return emb__tier_resolve_span(x, s, ctx, cols, x->state_off);
}

static void view_release(const EmbTable *v)
{
    emb__tier_release(v->impl);
}

static void view_destroy(EmbTable *v)
{
    Tier *x = v->impl;
    x->state_width = 0;
    x->view = NULL;
    emb__tier_unref(x);
    v->impl = NULL;
}

static const EmbRowsFacet view_rows = {
    .pins = true, .column = view_column, .acquire = view_resolve,
    .release = view_release,
};
static const EmbTableOps view_ops = {.kind = "tiered state", .rows = &view_rows,
                                     .destroy = view_destroy};

int emb__tiered_state_attach(EmbTable *t, int32_t width, const float *init, EmbTable **view)
{
    Tier *x = t->impl;
    if (x->view)
        return emb__fail(EMB_ENOTSUP, "%s keeps another optimizer's state already", x->label);
    if (width > x->state_room)
        return emb__fail(EMB_ENOTSUP, "%s has room for %d floats of optimizer state per row; "
                         "the optimizer needs %d (EmbTieredOptions::state_width)", x->label,
                         (int)x->state_room, (int)width);
    EmbTable *v = NULL;
    const EmbTableOptions vo = {.name = t->name};
    int r = emb__table_alloc(&v, t->ncolumns, width, EMB_F32, &vo);
    const StateInit si = {init, width};
    r = r ? r : each_record(x, state_rec, &si);
    if (r) {
        emb_table_destroy(&v);
        return r;
    }
    v->ops = &view_ops;
    v->impl = x;
    x->refs++;
    x->view = v;
    x->state_width = width;
    *view = v;
    return 0;
}

const EmbTable *emb__tiered_state_view(const EmbTable *t)
{
    return ((const Tier *)t->impl)->view;
}

/* ---- save ------------------------------------------------------------------------------ */

/* A save reads the flushed file in windows of 1 MiB of records (pread: no mapping, so a file
   cut by someone else fails the save with EMB_EIO instead of a SIGBUS). */
typedef struct Streamed {
    Tier *x;
    char *buf;
    int64_t lo, n, chunk; /* buf holds listed rows [lo, lo + n) */
    /* a delta's listing: row k is id ids[k] (the touched ids, increasing), read in runs of
       consecutive ids, the untouched rows never; NULL: row k is id k */
    int64_t *ids;
} Streamed;

static const void *saved_row(const EmbRowList *l, int64_t k)
{
    Streamed *m = l->priv;
    if (k < m->lo || k >= m->lo + m->n) {
        int64_t n = m->ids ? 1 : EMB_MIN(m->chunk, m->x->nrows - k);
        while (m->ids && n < m->chunk && k + n < l->n && m->ids[k + n] == m->ids[k] + n)
            n++;
        m->n = 0;
        if (emb__tier_file_rw(m->x, -1, m->ids ? m->ids[k] : k, n, m->buf, false))
            return NULL; /* the store fails the save with this message */
        m->lo = k, m->n = n;
    }
    return m->buf + (size_t)(k - m->lo) * m->x->recbytes;
}

static const float *saved_state(const EmbRowList *l, int64_t k)
{
    const Streamed *m = l->priv;
    const char *row = saved_row(l, k);
    return row ? (const float *)(row + m->x->state_off) : NULL;
}

static void saved_close(EmbRowList *l)
{
    Streamed *m = l->priv;
    if (m) {
        free(m->buf);
        free(m->ids);
    }
    free(m);
    l->priv = NULL;
}

int emb__tiered_list_ids(const EmbTable *t, const int64_t *ids, int64_t n, bool state,
                         EmbRowList *out)
{
    Tier *x = t->impl;
    int r = emb__tier_flush(x);
    r = r ? r : emb__tier_check_size(x);
    if (r)
        return r;
    Streamed *m = calloc(1, sizeof *m);
    const int64_t chunk = EMB_MAX(1, (1 << 20) / (int64_t)x->recbytes);
    char *buf = m ? malloc((size_t)chunk * x->recbytes) : NULL;
    if (!buf) {
        free(m);
        return emb__fail(EMB_ENOMEM, "out of memory to save %s", x->label);
    }
    int64_t *own = ids ? malloc((size_t)EMB_MAX(n, 1) * sizeof *own) : NULL;
    if (ids && !own) {
        free(buf);
        free(m);
        return emb__fail(EMB_ENOMEM, "out of memory to save %s", x->label);
    }
    if (ids)
        memcpy(own, ids, (size_t)n * sizeof *own);
    *m = (Streamed){.x = x, .buf = buf, .chunk = chunk, .ids = own};
    *out = (EmbRowList){.n = ids ? n : x->nrows, .row = saved_row, .close = saved_close,
                        .priv = m, .state = state && x->state_width ? saved_state : NULL};
    return 0;
}

int emb__tiered_save_list(const EmbTable *t, bool state, EmbRowList *out)
{
    return emb__tiered_list_ids(t, NULL, 0, state, out);
}

void emb__tiered_restore_extras(const EmbTable *t, EmbExtraTensor *extra, int *n)
{
    (void)t, (void)extra;
    *n = 0;
}

/* ---- restore --------------------------------------------------------------------------- */

struct EmbRowStage {
    Tier *x;
    int fd;
    char *path;
    char *map;
    size_t bytes;
};

void emb__tiered_stage_free(EmbRowStage *s)
{
    if (!s)
        return;
    if (s->map && s->map != MAP_FAILED)
        munmap(s->map, s->bytes);
    if (s->fd >= 0) {
        unlink(s->path);
        close(s->fd);
    }
    free(s->path);
    free(s);
}

/* Creates (a new name beside the file: O_EXCL, no link followed), formats and allocates
   the copy @s->path: 0 or EMB_EIO naming it. */
static int stage_file(EmbRowStage *s)
{
    const Tier *x = s->x;
    s->fd = emb__tier_tmp_create(x, x->path, &s->path);
    if (s->fd < 0)
        return s->fd;
    int r = emb__tier_format(x, s->fd, s->path);
    const int e = r ? 0 : posix_fallocate(s->fd, 0, (off_t)s->bytes);
    if (e)
        r = emb__fail(EMB_EIO, "%s: cannot allocate %zu bytes for %s: %s", x->label, s->bytes,
                      s->path, strerror(e));
    if (r)
        return r;
    s->map = mmap(NULL, s->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
    if (s->map == MAP_FAILED)
        return emb__fail(EMB_EIO, "%s: cannot map %s: %s", x->label, s->path, strerror(errno));
    return 0;
}

int emb__tiered_stage(const EmbTable *t, const EmbStageIn *in, EmbRowStage **out)
{
    Tier *x = t->impl;
    if (in->nrows != x->nrows)
        return emb__fail(EMB_ESHAPE, "%s: %s holds %lld rows for it, the table has %lld",
                         x->label, in->path, (long long)in->nrows, (long long)x->nrows);
    EmbRowStage *s = calloc(1, sizeof *s);
    if (!s)
        return emb__fail(EMB_ENOMEM, "out of memory to restore %s", x->label);
    *s = (EmbRowStage){.x = x, .fd = -1,
                       .bytes = EMB_TIER_HEADER + (size_t)x->nrows * x->recbytes};
    const int r = stage_file(s);
    if (r) {
        emb__tiered_stage_free(s);
        return r;
    }
    *out = s;
    return 0;
}

void *emb__tiered_stage_dst(EmbRowStage *s, int what, int64_t k)
{
    char *rec = s->map + EMB_TIER_HEADER + (size_t)k * s->x->recbytes;
    if (what == EMB_STAGE_STATE)
        return s->x->state_width ? rec + s->x->state_off : NULL;
    return rec;
}

/* The copy replaces the file (renamed over it; where the rename fails the table goes on
   in the copy, under its own name) and every cached row is dropped. */
void emb__tiered_stage_commit(EmbTable *t, EmbRowStage *s)
{
    Tier *x = t->impl;
    munmap(s->map, s->bytes);
    char *path = s->path;
    if (rename(s->path, x->path) == 0) {
        path = x->path;
        x->path = NULL;
        free(s->path);
    }
    emb__tier_swap_file(x, s->fd, path);
    free(s);
}
