/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * delta.c — delta checkpoints (docs/format.md "Delta checkpoints"). A delta holds, per
 * table, only the rows touched since the table's previous save (tables/touched.c), their
 * optimizer state rows and their ids ("<name>/delta.ids"), with the file name and the
 * header checksum of the checkpoint it extends. A restore of a delta opens its chain back
 * to a full checkpoint, checks every link (the base's header_xxh3 must be the one the
 * delta names) and every delta whole (checksums, ids, shapes) before it writes anything,
 * restores the full checkpoint and then writes the deltas' rows in order, oldest first.
 * A kind that lists its rows by column (tiered) lists the touched ids itself (list_ids:
 * the untouched rows are never read) and is written back span by span through acquire;
 * keyed kinds (dynamic) have their own deltas: delta_keyed.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/delta_keyed.h"
#include "store/model.h"
#include "store/store_impl.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

#define CHAIN_MAX 100000 /* links followed before a chain is called corrupt (a loop) */
#define PATH_CAP 8192

/* ---- writing: the touched rows of a dense table ---------------------------------------- */

typedef struct DeltaRows {
    const EmbTable *t;
    const EmbTable *state; /* the optimizer's state table of t, or NULL */
    int64_t *ids;          /* increasing */
    EmbRowList kind;       /* a listing kind (tiered): its listing of the ids (kind.priv) */
} DeltaRows;

static const void *delta_row(const EmbRowList *l, int64_t k)
{
    DeltaRows *d = l->priv;
    return d->kind.priv ? d->kind.row(&d->kind, k) : emb__column(d->t, d->ids[k], EMB_CTX_NONE);
}

static const float *delta_state(const EmbRowList *l, int64_t k)
{
    DeltaRows *d = l->priv;
    if (d->kind.priv)
        return d->kind.state ? d->kind.state(&d->kind, k) : NULL;
    return d->state ? emb__column(d->state, d->ids[k], EMB_CTX_NONE) : NULL;
}

static const void *delta_id(const EmbRowList *l, int e, int64_t j, int64_t *tmp)
{
    (void)e;
    (void)tmp;
    return &((const DeltaRows *)l->priv)->ids[j];
}

static void delta_close(EmbRowList *l)
{
    DeltaRows *d = l->priv;
    if (d->kind.priv)
        d->kind.close(&d->kind);
    free(d->ids);
    free(d);
}

int emb__delta_list(const EmbTable *t, const EmbOptState *st, EmbRowList *out)
{
    if (emb__table_rows_appear(t)) /* keyed: delta_keyed.c */
        return emb__delta_keyed_list(t, st, out);
    const int64_t n = emb__touched_list(t, NULL, 0);
    DeltaRows *d = calloc(1, sizeof *d);
    int64_t *ids = d ? malloc((size_t)EMB_MAX(n, 1) * sizeof *ids) : NULL;
    if (!ids) {
        free(d);
        return emb__fail(EMB_ENOMEM, "out of memory listing the %lld touched rows of %s",
                         (long long)n, emb__table_label(t));
    }
    emb__touched_list(t, ids, n);
    *d = (DeltaRows){t, st ? st->slot : NULL, ids, {0}};
    const int r = emb__table_listed(t) ? emb__table_list_ids(t, ids, n, st != NULL, &d->kind) : 0;
    if (r) {
        free(ids);
        free(d);
        return r;
    }
    *out = (EmbRowList){.n = n, .nextra = 1, .row = delta_row, .state = delta_state,
                        .extra_column = delta_id, .close = delta_close, .priv = d};
    out->extra[0] = (EmbExtraTensor){"delta.ids", EMB_ELEM_I64, n, 1, false};
    return 0;
}

bool emb__delta_possible(const EmbTable *t)
{
    if (emb__table_rows_appear(t))
        return emb__delta_keyed_possible(t);
    return !emb__touched_is_all(t); /* a listing kind lists the ids (list_ids) */
}

/* ---- reading: a chain ------------------------------------------------------------------- */

typedef struct Link {
    EmbCkpt c;
    int fd;
    char path[PATH_CAP];
    int64_t **ids; /* per table of c: its delta's ids (deltas only) */
} Link;

static void links_free(Link *ch, int64_t n)
{
    for (int64_t k = 0; k < n; k++) {
        for (int64_t i = 0; ch[k].ids && i < ch[k].c.ntables; i++)
            free(ch[k].ids[i]);
        free(ch[k].ids);
        emb__ckpt_free(&ch[k].c);
        if (ch[k].fd >= 0)
            close(ch[k].fd);
    }
    free(ch);
}

/* The path of the file that the delta at @path extends (in its directory), into @out. */
static int base_path(const char *path, const char *base, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    const int dl = slash ? (int)(slash - path) + 1 : 0;
    if (snprintf(out, cap, "%.*s%s", dl, path, base) >= (int)cap)
        return emb__fail(EMB_ECORRUPT, "delta checkpoint %s: its base's path is too long", path);
    return 0;
}

/* Opens the chain of @path: ch[0] the delta, ch[n - 1] the full checkpoint; each link's
   base is the file of the name and header checksum the link names. */
static int open_chain(const char *path, Link **out, int64_t *n)
{
    Link *ch = NULL;
    int64_t cap = 0;
    *n = 0;
    char p[PATH_CAP];
    snprintf(p, sizeof p, "%s", path);
    int r = 0;
    while (!r) {
        r = emb__grow(&ch, *n, &cap, sizeof *ch, "a checkpoint chain");
        if (r)
            break;
        Link *l = &ch[(*n)++], *prev = *n > 1 ? l - 1 : NULL;
        *l = (Link){.fd = -1};
        snprintf(l->path, sizeof l->path, "%s", p);
        uint64_t size;
        l->fd = emb__ckpt_open_path(p, &l->c, &size, &r);
        if (r && prev)
            r = emb__fail(EMB_ECORRUPT, "delta checkpoint %s extends %s, which is missing or "
                          "unreadable (%s)", prev->path, p, emb_strerror(r));
        else if (!r && prev && l->c.header_hash != prev->c.delta_base_hash)
            r = emb__fail(EMB_ECORRUPT, "delta checkpoint %s extends %s, which is not the file "
                          "it was saved after (a foreign link: its checksum differs)",
                          prev->path, p);
        else if (!r && *n > CHAIN_MAX)
            r = emb__fail(EMB_ECORRUPT, "delta checkpoint %s: its chain is longer than %d "
                          "links (a loop)", path, CHAIN_MAX);
        if (r || !l->c.delta_base)
            break;
        r = base_path(l->path, l->c.delta_base, p, sizeof p);
    }
    *out = ch;
    return r;
}

/* The table named @name that a restore writes (NULL: skipped, with a var_list). */
static EmbTable *target(EmbStore *s, const EmbRestoreOptions *o, const char *name)
{
    if (o && o->nvars > 0) {
        for (int64_t i = 0; i < o->nvars; i++) {
            const EmbCheckpointVar *v = &o->var_list[i];
            if (v->table && strcmp(v->name ? v->name : v->table->name, name) == 0)
                return v->table;
        }
        return NULL;
    }
    const EmbStoreEntry *en = emb__store_entry(s, name);
    return en ? en->table : NULL;
}

static void *array_dst(void *ctx, int64_t j)
{
    return (int64_t *)ctx + j;
}

/* The ids of dense table @i of delta @l, into l->ids[i], checked. */
static int dense_ids(Link *l, int64_t i, const EmbTable *t, unsigned char *buf)
{
    const EmbCkptTable *tb = &l->c.tables[i];
    const int64_t n = l->c.tensors[tb->values].ncolumns;
    int64_t *ids = malloc((size_t)EMB_MAX(n, 1) * sizeof *ids);
    l->ids[i] = ids;
    int r = ids ? emb__ckpt_load_fn(&l->c, tb->delta_ids, l->fd, array_dst, ids, buf, l->path)
                : emb__fail(EMB_ENOMEM, "out of memory restoring %s", l->path);
    for (int64_t k = 0; k < n && !r; k++)
        if (ids[k] < 0 || ids[k] >= t->ncolumns || (k > 0 && ids[k] <= ids[k - 1]))
            r = emb__ckpt_corrupt(l->path, "delta table \"%.200s\": id %lld at row %lld is "
                                  "outside [0, %lld), repeated or out of order", tb->name,
                                  (long long)ids[k], (long long)k, (long long)t->ncolumns);
    return r;
}

/* Delta @l checked whole: checksums, its tables' targets and shapes, its ids (kept in
   l->ids), the optimizer's kind. */
static int check_delta(Link *l, EmbStore *s, const EmbRestoreOptions *o, unsigned char *buf)
{
    int r = emb__ckpt_verify(&l->c, l->fd, NULL, l->path);
    l->ids = r ? NULL : calloc((size_t)EMB_MAX(l->c.ntables, 1), sizeof *l->ids);
    if (!r && !l->ids)
        r = emb__fail(EMB_ENOMEM, "out of memory restoring %s", l->path);
    EmbOptimizer *opt = o ? o->optimizer : NULL;
    for (int64_t i = 0; i < l->c.ntables && !r; i++) {
        const EmbCkptTable *tb = &l->c.tables[i];
        const EmbCkptTensor *v = &l->c.tensors[tb->values];
        EmbTable *t = target(s, o, tb->name);
        if (!t && !(o && o->nvars > 0))
            return emb__fail(EMB_ENOTFOUND, "checkpoint %s has table \"%s\", which the store "
                             "lacks", l->path, tb->name);
        if (!t)
            continue;
        const EmbKeyedLink kl = {&l->c, l->fd, l->path};
        if (emb__table_rows_appear(t)) /* keyed: delta_keyed.c */
            r = emb__delta_keyed_check(&kl, tb, t, buf);
        else if (tb->dynamic ||
            t->ncolumns != tb->delta_ncolumns || t->featuresize != v->width ||
            t->dtype != v->dtype)
            return emb__fail(EMB_ESHAPE, "delta checkpoint %s has \"%s\" as %lld x %d %s; %s "
                             "is %lld x %d %s", l->path, tb->name,
                             (long long)tb->delta_ncolumns, (int)v->width,
                             emb_dtype_name(v->dtype), emb__table_label(t),
                             (long long)t->ncolumns, (int)t->featuresize,
                             emb_dtype_name(t->dtype));
        if (!emb__table_rows_appear(t))
            r = dense_ids(l, i, t, buf);
        if (r || !opt || tb->step < 0)
            continue;
        if (!l->c.has_opt || l->c.opt.kind != opt->cfg.kind)
            return emb__fail(EMB_EINVAL, "delta checkpoint %s holds %s state of \"%s\"; the "
                             "optimizer is %s", l->path,
                             l->c.has_opt ? emb__optimizer_kind_name(l->c.opt.kind) : "no",
                             tb->name, emb__optimizer_kind_name(opt->cfg.kind));
    }
    return r;
}

#define PIN_SPAN 64

typedef struct IdDst {
    const EmbTable *t;
    const int64_t *ids;
    size_t off; /* bytes */
    /* a kind that pins (tiered): the rows of ids [j0, j0 + PIN_SPAN) acquired for UPDATE
       (marked dirty), released span by span; r: an acquire failed (then scratch) */
    int64_t n0, j0, n;
    int r;
    const void *cols[PIN_SPAN];
    unsigned char *scratch;
} IdDst;

static void *id_dst(void *ctx, int64_t j)
{
    IdDst *d = ctx;
    if (!emb__table_pins(d->t))
        return (char *)emb__column(d->t, d->ids[j], EMB_CTX_UPDATE) + d->off;
    if (j < d->j0 || j >= d->j0 + d->n) {
        emb__table_release(d->t);
        d->j0 = j;
        d->n = EMB_MIN(PIN_SPAN, d->n0 - j);
        const EmbIdSpan sp = {d->ids, 0, j, d->n, NULL};
        unsigned hint = 0;
        const int r = d->r ? d->r : emb__table_acquire(d->t, &sp, EMB_CTX_UPDATE, d->cols, &hint);
        if (r) {
            d->r = r;
            d->n = 0;
            return d->scratch;
        }
    }
    return (char *)d->cols[j - d->j0] + d->off;
}

/* Tensor @k of delta @l (rows of ids @ids) into table @t at byte @off of each row. */
static int load_ids(const Link *l, int64_t k, const EmbTable *t, const int64_t *ids,
                    size_t off, unsigned char *buf)
{
    const EmbCkptTensor *ts = &l->c.tensors[k];
    IdDst d = {t, ids, off, ts->ncolumns, 0, 0, 0, {NULL}, NULL};
    if (emb__table_pins(t) && !(d.scratch = malloc(emb__ckpt_row_bytes(ts->dtype, ts->width))))
        return emb__fail(EMB_ENOMEM, "out of memory restoring %s", l->path);
    const int r = emb__ckpt_load_fn(&l->c, k, l->fd, id_dst, &d, buf, l->path);
    if (emb__table_pins(t))
        emb__table_release(t);
    free(d.scratch);
    return r ? r : d.r;
}

/* Writes delta @l's rows (and state) into their tables: only a read error can stop it. */
static int apply_delta(const Link *l, EmbStore *s, const EmbRestoreOptions *o,
                       unsigned char *buf)
{
    EmbOptimizer *opt = o ? o->optimizer : NULL;
    int r = 0;
    for (int64_t i = 0; i < l->c.ntables && !r; i++) {
        const EmbCkptTable *tb = &l->c.tables[i];
        EmbTable *t = target(s, o, tb->name);
        if (!t || emb__table_rows_appear(t)) /* keyed: merged after (keyed_restore) */
            continue;
        r = load_ids(l, tb->values, t, l->ids[i], 0, buf);
        if (r || !opt)
            continue;
        if (tb->step < 0) {
            emb_optimizer_detach(opt, t);
            continue;
        }
        /* a table first updated after the full save has no state restored from it: fresh
           state (as its first update made), then the delta's rows (only ENOMEM can fail) */
        EmbOptState *st = emb__optimizer_find(opt, t);
        if (!st && (r = emb__optimizer_state(opt, t, &st)) != 0)
            return r;
        EmbOptSlot slots[2];
        const int ns = emb__optimizer_slots(opt->cfg.kind, t->featuresize, slots);
        for (int k = 0; k < ns && !r; k++)
            r = load_ids(l, tb->state[k], st->slot, l->ids[i],
                         (size_t)slots[k].off * sizeof(float), buf);
        st->step = tb->step;
    }
    return r;
}

/* The keyed tables of the @n deltas of @ch (newest first), each merged in (delta_keyed.c). */
static int keyed_restore(const Link *ch, int64_t n, EmbStore *s, const EmbRestoreOptions *o,
                         unsigned char *buf)
{
    EmbKeyedLink *kl = malloc((size_t)EMB_MAX(n, 1) * sizeof *kl);
    if (!kl)
        return emb__fail(EMB_ENOMEM, "out of memory restoring %s", ch[0].path);
    for (int64_t k = 0; k < n; k++) /* oldest first */
        kl[k] = (EmbKeyedLink){&ch[n - 1 - k].c, ch[n - 1 - k].fd, ch[n - 1 - k].path};
    int r = 0;
    for (int64_t i = 0; n > 0 && i < ch[0].c.ntables && !r; i++) {
        EmbTable *t = target(s, o, ch[0].c.tables[i].name);
        if (t && emb__table_rows_appear(t))
            r = emb__delta_keyed_restore(t, ch[0].c.tables[i].name, kl, n,
                                         o ? o->optimizer : NULL, buf);
    }
    free(kl);
    return r;
}

int emb__delta_restore(EmbStore *s, const char *path, const EmbRestoreOptions *o,
                       int64_t *global_step)
{
    Link *ch;
    int64_t n;
    int r = open_chain(path, &ch, &n);
    unsigned char *buf = r ? NULL : malloc(EMB_CKPT_CHUNK);
    if (!r && !buf)
        r = emb__fail(EMB_ENOMEM, "out of memory restoring %s", path);
    for (int64_t k = 0; k + 1 < n && !r; k++)
        r = check_delta(&ch[k], s, o, buf);
    r = r ? r : emb__restore_full(s, ch[n - 1].path, o, NULL);
    if (r == EMB__RESTORE_IS_DELTA) /* open_chain saw a full one: replaced since */
        r = emb__fail(EMB_ECORRUPT, "%s: the chain's base is a delta", ch[n - 1].path);
    for (int64_t k = n - 2; k >= 0 && !r; k--)
        r = apply_delta(&ch[k], s, o, buf);
    r = r ? r : keyed_restore(ch, n - 1, s, o, buf);
    if (!r && global_step)
        *global_step = ch[0].c.global_step;
    free(buf);
    links_free(ch, n);
    return r;
}

/* ---- the saver: what a chain needs -------------------------------------------------------- */

int emb__delta_base_of(const char *dir, const char *name, char *base, size_t cap)
{
    char p[PATH_CAP];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    EmbCkpt c = {0};
    uint64_t size;
    int r;
    const int fd = emb__ckpt_open_path(p, &c, &size, &r);
    if (fd < 0)
        return r;
    close(fd);
    r = c.delta_base ? 1 : 0;
    if (r)
        snprintf(base, cap, "%s", c.delta_base);
    emb__ckpt_free(&c);
    return r;
}

/* Whether @name is in the chain of one of the @n kept checkpoints or of @head (the base of
   the delta being saved: itself included). */
static bool needed(const char *dir, const char *head, int32_t depth, const char *name,
                   const EmbKept *kept, int64_t n)
{
    char cur[EMB_CKPT_FILE_NAME_MAX + 1], base[EMB_CKPT_FILE_NAME_MAX + 1];
    for (int64_t i = head ? -1 : 0; i < n; i++) {
        snprintf(cur, sizeof cur, "%s", i < 0 ? head : kept[i].name);
        if (i < 0 && strcmp(cur, name) == 0)
            return true;
        for (int k = 0; k <= depth; k++) { /* a chain is at most depth deltas long */
            if (emb__delta_base_of(dir, cur, base, sizeof base) != 1)
                break;
            if (strcmp(base, name) == 0)
                return true;
            snprintf(cur, sizeof cur, "%s", base);
        }
    }
    return false;
}

int emb__delta_keep_chains(const char *dir, const char *head, int32_t depth, EmbKept **kept,
                           int64_t *n, EmbKept *retired, int64_t *nretired)
{
    EmbKept *back = malloc((size_t)EMB_MAX(*nretired, 1) * sizeof *back);
    if (!back)
        return emb__fail(EMB_ENOMEM, "out of memory for the saver's index");
    int64_t nback = 0, nleft = 0;
    for (int64_t i = 0; i < *nretired; i++) /* kept[n - 1]: the new file, not written yet */
        if (needed(dir, head, depth, retired[i].name, *kept, *n - 1))
            back[nback++] = retired[i];
        else
            retired[nleft++] = retired[i];
    EmbKept *k = nback ? realloc(*kept, (size_t)(*n + nback) * sizeof *k) : *kept;
    if (!k) {
        free(back);
        return emb__fail(EMB_ENOMEM, "out of memory for the saver's index");
    }
    memmove(k + nback, k, (size_t)*n * sizeof *k);
    memcpy(k, back, (size_t)nback * sizeof *k);
    *kept = k;
    *n += nback;
    *nretired = nleft;
    free(back);
    return 0;
}
