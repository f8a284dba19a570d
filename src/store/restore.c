/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * restore.c — reading checkpoints back (format.c): into a store's tables and an
 * optimizer's state, or opened for listing and as tables mapped over the file.
 *
 * A restore first reads and checks the header (its checksum, then its content), then
 * verifies every tensor's checksum, then matches the file's tables with the targets
 * (names, shapes, dtypes, the optimizer's kind) and creates missing optimizer state; only
 * then is the first table written. Integrity comes before meaning: a damaged file is
 * EMB_ECORRUPT whatever it damaged, and no failure before the writes touches a table.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "embtables/partition.h"
#include "store/format.h"
#include "store/store_impl.h"
#include "tables/dynamic_impl.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

/* Opens @path and reads its header into @c; returns the fd or an error (< 0, in *err). */
static int open_checkpoint(const char *path, EmbCkpt *c, uint64_t *size, int *err)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        *err = emb__fail(EMB_EIO, "cannot open checkpoint %s: %s", path,
                         fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *size = (uint64_t)st.st_size;
    *err = emb__ckpt_read(c, fd, *size, path);
    if (*err) {
        close(fd);
        return -1;
    }
    return fd;
}

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
    EmbDynStage **stages; /* a dynamic table's new content (one per shard when partitioned
                             over dynamic shards), swapped in by load() */
    int32_t nstages;
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
            tg[i] = (Target){table_find(c, name), v->table, NULL, 0};
            if (tg[i].table < 0)
                return emb__fail(EMB_ENOTFOUND, "checkpoint %s has no table \"%s\"", path,
                                 name);
        } else {
            const EmbStoreEntry *en = emb__store_entry(s, c->tables[i].name);
            if (!en)
                return emb__fail(EMB_ENOTFOUND, "checkpoint %s has table \"%s\", which the "
                                 "store lacks", path, c->tables[i].name);
            tg[i] = (Target){i, en->table, NULL, 0};
        }
        const EmbCkptTensor *v = &c->tensors[c->tables[tg[i].table].values];
        const EmbTable *t = tg[i].t;
        const bool dyn = emb__is_dynamic_any(t);
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
        EmbOptState *st;
        const int r = c->tables[tg[i].table].step >= 0
                              ? emb__optimizer_state(opt, tg[i].t, &st) : 0;
        if (r)
            return r;
    }
    return 0;
}

/* Where row j of a dynamic table's tensors goes: stage q[j], row pos[j] (a target
   partitioned over Q dynamic shards takes id j into shard id mod Q). */
typedef struct StageDst {
    EmbDynStage **st;
    const int32_t *q;
    const int64_t *pos;
    size_t off; /* bytes into a state row */
} StageDst;

static void *stage_row_dst(void *ctx, int64_t j)
{
    const StageDst *d = ctx;
    return emb__dynamic_stage_row(d->st[d->q[j]], d->pos[j]);
}

static void *stage_state_dst(void *ctx, int64_t j)
{
    const StageDst *d = ctx;
    return (char *)emb__dynamic_stage_state(d->st[d->q[j]], d->pos[j]) + d->off;
}

static void *stage_last_dst(void *ctx, int64_t j)
{
    const StageDst *d = ctx;
    return emb__dynamic_stage_last(d->st[d->q[j]]) + d->pos[j];
}

static void *ids_dst(void *ctx, int64_t j)
{
    return (int64_t *)ctx + j;
}

typedef struct RawDst {
    uint16_t *p;
    int64_t width;
} RawDst;

static void *u16_dst(void *ctx, int64_t j)
{
    const RawDst *d = ctx;
    return d->p + j * d->width;
}

/* The file's admission counts (P sketches of 4 rows of @w) into the Q stages: shard by
   shard when P == Q, else every stage the sum (saturated) of the P, which is exactly one
   table's counts when Q == 1 (an id counts in one shard, at the cells one table uses). */
static void spread_sketch(EmbDynStage **st, int32_t Q, const uint16_t *file, int32_t P,
                          int64_t w)
{
    for (int32_t q = 0; q < Q; q++) {
        int64_t width;
        uint16_t *dst = emb__dynamic_stage_sketch(st[q], &width);
        for (int64_t i = 0; i < 4 * w; i++) {
            uint32_t v = 0;
            for (int32_t p = 0; p < P; p++)
                v += P == Q && p != q ? 0 : file[(int64_t)p * 4 * w + i];
            dst[i] = (uint16_t)EMB_MIN(v, UINT16_MAX);
        }
    }
}

/* The new content of dynamic target @g (a dynamic table or one partitioned over dynamic
   shards), read from the file into a stage per table (nothing of the tables is written). */
static int stage_dynamic(const EmbCkpt *c, int fd, const EmbOptimizer *opt, Target *g,
                         const char *path)
{
    const EmbCkptTable *tb = &c->tables[g->table];
    const int64_t n = c->tensors[tb->values].ncolumns;
    const int32_t Q = emb__is_dynamic(g->t) ? 1 : emb_table_nshards(g->t), P = tb->nshards;
    const int64_t fwidth = tb->sketch >= 0 ? c->tensors[tb->sketch].width : 0;
    g->stages = calloc((size_t)Q, sizeof *g->stages);
    g->nstages = g->stages ? Q : 0;
    int64_t *ids = malloc((size_t)EMB_MAX(n, 1) * sizeof *ids);
    int64_t *pos = malloc((size_t)EMB_MAX(n, 1) * sizeof *pos);
    int64_t *sub = malloc((size_t)EMB_MAX(n, 1) * sizeof *sub);
    int32_t *q = malloc((size_t)EMB_MAX(n, 1) * sizeof *q);
    int64_t *count = calloc((size_t)Q, sizeof *count);
    uint16_t *sk = NULL;
    int r = g->stages && ids && pos && sub && q && count
                    ? emb__ckpt_load_fn(c, tb->ids, fd, ids_dst, ids, path)
                    : emb__fail(EMB_ENOMEM, "out of memory restoring %s", path);
    for (int64_t j = 0; j < n && !r; j++) {
        q[j] = (int32_t)(ids[j] >= 0 ? ids[j] % Q : 0);
        pos[j] = count[q[j]]++;
    }
    for (int32_t k = 0; k < Q && !r; k++)
        r = emb__dynamic_stage(emb__dynamic_home(g->t, k), count[k], &g->stages[k]);
    int64_t width = 0;
    const bool sketch = !r && emb__dynamic_stage_sketch(g->stages[0], &width) != NULL;
    if (!r && sketch && fwidth && fwidth != width)
        r = emb__fail(EMB_ESHAPE, "checkpoint %s counts admissions of \"%s\" in a sketch "
                      "%lld wide; %s's is %lld wide", path, tb->name, (long long)fwidth,
                      emb__table_label(g->t), (long long)width);
    StageDst d = {g->stages, q, pos, 0};
    r = r ? r : emb__ckpt_load_fn(c, tb->last, fd, stage_last_dst, &d, path);
    r = r ? r : emb__ckpt_load_fn(c, tb->values, fd, stage_row_dst, &d, path);
    if (!r && sketch && fwidth) {
        sk = malloc((size_t)(4 * P * fwidth) * sizeof *sk);
        RawDst raw = {sk, fwidth};
        r = sk ? emb__ckpt_load_fn(c, tb->sketch, fd, u16_dst, &raw, path)
               : emb__fail(EMB_ENOMEM, "out of memory restoring %s", path);
        if (!r)
            spread_sketch(g->stages, Q, sk, P, fwidth);
    }
    for (int32_t k = 0; k < Q && !r; k++) { /* each stage its ids, in order */
        int64_t m = 0;
        for (int64_t j = 0; j < n; j++)
            if (q[j] == k)
                sub[m++] = ids[j];
        if (emb__dynamic_stage_ids(g->stages[k], sub, tb->dyn_step) != 0)
            r = emb__fail(EMB_EIO, "checkpoint %s changed while it was restored", path);
    }
    if (!r && opt && tb->step >= 0) {
        EmbOptSlot slots[2];
        const int ns = emb__optimizer_slots(opt->cfg.kind, g->t->featuresize, slots);
        for (int k = 0; k < ns && !r; k++) {
            d.off = (size_t)slots[k].off * sizeof(float);
            r = emb__ckpt_load_fn(c, tb->state[k], fd, stage_state_dst, &d, path);
        }
    }
    free(ids);
    free(pos);
    free(sub);
    free(q);
    free(count);
    free(sk);
    return r;
}

static int load(const EmbCkpt *c, int fd, EmbStore *s, EmbOptimizer *opt, Target *tg,
                int64_t n, const char *path)
{
    for (int64_t i = 0; i < n; i++) {
        const EmbCkptTable *tb = &c->tables[tg[i].table];
        int r = 0;
        if (tg[i].stages) { /* swapped in whole: state and all */
            for (int32_t k = 0; k < tg[i].nstages; k++) {
                emb__dynamic_stage_commit(emb__dynamic_home(tg[i].t, k), tg[i].stages[k]);
                tg[i].stages[k] = NULL;
            }
        } else {
            r = emb__ckpt_load(c, tb->values, fd, tg[i].t, 0, path);
        }
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
        const int ns = emb__is_dynamic_any(tg[i].t)
                               ? 0 : emb__optimizer_slots(opt->cfg.kind, tg[i].t->featuresize,
                                                          slots);
        for (int k = 0; k < ns && !r; k++)
            r = emb__ckpt_load(c, tb->state[k], fd, st->slot, slots[k].off, path);
        if (r)
            return r;
        st->step = tb->step;
    }
    return 0;
}

int emb_checkpoint_restore_ex(EmbStore *s, const char *path, const EmbRestoreOptions *o,
                              int64_t *global_step)
{
    EMB_CHECK_NULL(path);
    if (o && (o->nvars < 0 || (o->nvars > 0 && !o->var_list)))
        return emb__fail(EMB_EINVAL, "restore var_list: %lld entries at %p", (long long)o->nvars,
                         (const void *)o->var_list);
    if (!s && !(o && o->nvars > 0))
        return emb__fail(EMB_ENULL, "emb_checkpoint_restore: no store and no var_list");
    EmbCkpt c = {0};
    uint64_t size;
    int r;
    const int fd = open_checkpoint(path, &c, &size, &r);
    if (fd < 0)
        return r;
    r = emb__ckpt_verify(&c, fd, NULL, path);
    r = r ? r : emb__ckpt_check_dynamic(&c, fd, path);
    const int64_t ntg = o && o->nvars > 0 ? o->nvars : c.ntables;
    Target *tg = r ? NULL : calloc((size_t)EMB_MAX(ntg, 1), sizeof *tg);
    if (!r && !tg)
        r = emb__fail(EMB_ENOMEM, "out of memory restoring %s", path);
    int64_t n = 0;
    EmbOptimizer *opt = o ? o->optimizer : NULL;
    r = r ? r : match(&c, s, o, tg, &n, path);
    r = r || !opt ? r : prepare_state(&c, opt, tg, n, path);
    for (int64_t i = 0; i < n && !r; i++)
        if (emb__is_dynamic_any(tg[i].t))
            r = stage_dynamic(&c, fd, opt, &tg[i], path);
    r = r ? r : load(&c, fd, s, opt, tg, n, path);
    if (!r && global_step)
        *global_step = c.global_step;
    for (int64_t i = 0; tg && i < n; i++) {
        for (int32_t k = 0; k < tg[i].nstages; k++)
            emb__dynamic_stage_free(tg[i].stages[k]);
        free(tg[i].stages);
    }
    free(tg);
    emb__ckpt_free(&c);
    close(fd);
    return r;
}

int emb_checkpoint_restore(EmbStore *s, const char *path, int64_t *global_step)
{
    if (!s)
        return emb__fail(EMB_ENULL, "emb_checkpoint_restore: argument 'store' is NULL");
    return emb_checkpoint_restore_ex(s, path, NULL, global_step);
}

/* ---- opened checkpoints ------------------------------------------------------------ */

struct EmbCheckpoint {
    EmbCkpt c;
    unsigned char *map; /* MAP_FAILED-free: NULL when not mapped */
    size_t size;
    EmbTable **tables;  /* per tensor, when mapped */
};

void emb_checkpoint_close(EmbCheckpoint **pck)
{
    if (!pck || !*pck)
        return;
    EmbCheckpoint *ck = *pck;
    for (int64_t i = 0; ck->tables && i < ck->c.ntensors; i++)
        emb_table_destroy(&ck->tables[i]);
    free(ck->tables);
    if (ck->map)
        munmap(ck->map, ck->size);
    emb__ckpt_free(&ck->c);
    free(ck);
    *pck = NULL;
}

/* Maps the file and wraps every tensor in a table. */
static int map_tables(EmbCheckpoint *ck, int fd, const char *path)
{
    void *m = mmap(NULL, ck->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED)
        return emb__fail(EMB_EIO, "cannot map checkpoint %s: %s", path, strerror(errno));
    ck->map = m;
    int r = emb__ckpt_verify(&ck->c, fd, ck->map, path);
    ck->tables = r ? NULL : calloc((size_t)EMB_MAX(ck->c.ntensors, 1), sizeof *ck->tables);
    if (!r && !ck->tables)
        r = emb__fail(EMB_ENOMEM, "out of memory for the tables of %s", path);
    for (int64_t i = 0; i < ck->c.ntensors && !r; i++) {
        const EmbCkptTensor *t = &ck->c.tensors[i];
        const uint64_t at = ck->c.data_start + t->begin;
        if (!emb__ckpt_is_table_type(t->dtype))
            continue; /* a dynamic table's ids, steps or counts: no table */
        if (at % emb__ckpt_el_size(t->dtype) != 0)
            return emb__fail(EMB_ENOTSUP, "tensor \"%.200s\" of %s is not aligned for its type "
                             "and cannot be mapped", t->name, path);
        const EmbTableOptions to = {.name = t->name};
        r = emb_table_wrap(&ck->tables[i], ck->map + at, t->ncolumns, t->width,
                           emb__ckpt_file_cols(t->dtype, t->width), t->dtype, &to);
    }
    return r;
}

int emb_checkpoint_open(EmbCheckpoint **out, const char *path, unsigned flags)
{
    EMB_CHECK_NULL(out);
    EMB_CHECK_NULL(path);
    if (flags & ~(unsigned)EMB_CHECKPOINT_MMAP)
        return emb__fail(EMB_EINVAL, "emb_checkpoint_open: unknown flags 0x%x", flags);
    EmbCheckpoint *ck = calloc(1, sizeof *ck);
    if (!ck)
        return emb__fail(EMB_ENOMEM, "out of memory opening %s", path);
    uint64_t size;
    int r;
    const int fd = open_checkpoint(path, &ck->c, &size, &r);
    if (fd >= 0) {
        ck->size = (size_t)size;
        r = flags & EMB_CHECKPOINT_MMAP ? map_tables(ck, fd, path) : 0;
        close(fd);
    }
    if (r) {
        emb_checkpoint_close(&ck);
        return r;
    }
    *out = ck;
    return 0;
}

int64_t emb_checkpoint_count(const EmbCheckpoint *ck)
{
    return ck ? ck->c.ntensors : 0;
}

int64_t emb_checkpoint_global_step(const EmbCheckpoint *ck)
{
    return ck ? ck->c.global_step : 0;
}

int emb_checkpoint_entry(const EmbCheckpoint *ck, int64_t i, EmbCheckpointEntry *out)
{
    EMB_CHECK_NULL(ck);
    EMB_CHECK_NULL(out);
    if (i < 0 || i >= ck->c.ntensors)
        return emb__fail(EMB_ERANGE, "checkpoint entry %lld is outside [0, %lld)", (long long)i,
                         (long long)ck->c.ntensors);
    const EmbCkptTensor *t = &ck->c.tensors[i];
    const EmbCkptTable *tb = &ck->c.tables[t->table];
    EmbOptSlot slots[2];
    if (t->slot >= 0)
        emb__optimizer_slots(ck->c.opt.kind, ck->c.tensors[tb->values].width, slots);
    const int64_t k = t - ck->c.tensors;
    const char *slot = t->slot >= 0 ? slots[t->slot].name : k == tb->ids ? "dynamic.ids"
                     : k == tb->last ? "dynamic.last" : k == tb->sketch ? "dynamic.sketch"
                                                                          : NULL;
    *out = (EmbCheckpointEntry){.name = t->name, .table = tb->name, .slot = slot,
                                .ncolumns = t->ncolumns, .featuresize = t->width,
                                .dtype = emb__ckpt_is_table_type(t->dtype) ? t->dtype : EMB_F32,
                                .nshards = tb->nshards, .partition = tb->partition,
                                .step = tb->step, .dynamic = tb->dynamic,
                                .dyn_step = tb->dynamic ? tb->dyn_step : -1,
                                .type = emb__ckpt_dtype_code(t->dtype)};
    return 0;
}

int emb_checkpoint_optimizer(const EmbCheckpoint *ck, EmbOptimizerConfig *out)
{
    EMB_CHECK_NULL(ck);
    EMB_CHECK_NULL(out);
    if (!ck->c.has_opt)
        return emb__fail(EMB_ENOTFOUND, "the checkpoint was saved without an optimizer");
    *out = ck->c.opt;
    return 0;
}

int emb_checkpoint_table(const EmbCheckpoint *ck, const char *name, EmbTable **out)
{
    EMB_CHECK_NULL(ck);
    EMB_CHECK_NULL(name);
    EMB_CHECK_NULL(out);
    if (!ck->tables)
        return emb__fail(EMB_EINVAL, "the checkpoint was not opened with EMB_CHECKPOINT_MMAP");
    for (int64_t i = 0; i < ck->c.ntensors; i++)
        if (strcmp(ck->c.tensors[i].name, name) == 0) {
            if (!ck->tables[i])
                return emb__fail(EMB_EINVAL, "tensor \"%s\" holds a dynamic table's ids, "
                                 "steps or counts (%s), not a table", name,
                                 emb__ckpt_dtype_code(ck->c.tensors[i].dtype));
            *out = ck->tables[i];
            return 0;
        }
    return emb__fail(EMB_ENOTFOUND, "the checkpoint has no tensor \"%s\"", name);
}
