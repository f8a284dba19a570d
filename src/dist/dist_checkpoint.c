/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist_checkpoint.c — sharded checkpoints on the store's public checkpoint API.
 *
 * emb_dist_save(): each rank saves the store holding its tables and shards with an
 * EmbSaver in `<dir>/rank<r>/` (prefix `ckpt`: the store's format, atomic, checksummed),
 * the ranks agree, and rank 0 writes the index `<dir>/dist-<step>.index` (atomically: a
 * temporary file renamed), which records the rank count, every table's shape and
 * placement, and each rank's file as its saver named it. emb_dist_restore(): every rank reads the index (untrusted: every field is
 * checked), restores each old rank's file that holds part of a table it now holds into a
 * temporary store of that old rank's tables (emb_checkpoint_restore() verifies the whole
 * file), the ranks agree, and only then each rank copies the columns it now holds, located
 * by the old placement and the new one. So any rank count and placement restore any
 * other, one process included (an ensemble over MPI_COMM_SELF), and a failure anywhere
 * leaves every table as it was. With an optimizer, its state of the tables is saved with
 * them (the saver's option) and restored the same way, column by column of slot 0 (every
 * kind keeps one state column per table column), with the update count (Adam's t).
 * Deltas (emb_dist_set_full_every): each rank's saver is kept between saves (d->ckpt) so
 * that its file can be a delta of its previous one; the restore of a rank's file follows
 * its chain (store/delta.c) into the temporary store, so nothing else changes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dist/dist_impl.h"

#define INDEX_MAGIC "embtables-dist 2"   /* table lines: 8 fields (nshards last) */
#define INDEX_MAGIC_1 "embtables-dist 1" /* 7 fields: row-wise over every rank */
#define PATH_CAP 4096
#define FILE_CAP 128 /* a rank's checkpoint file name, in the index */

static int path_of(char *out, const char *dir, const char *fmt, int64_t a, int64_t b)
{
    char tail[128];
    snprintf(tail, sizeof tail, fmt, (long long)a, (long long)b);
    if (snprintf(out, PATH_CAP, "%s/%s", dir, tail) >= PATH_CAP)
        return dist_fail(EMB_EINVAL, "checkpoint path under '%s' is too long", dir);
    return 0;
}

static int write_index(const EmbDist *d, const char *dir, int64_t step, const char *files)
{
    char path[PATH_CAP], tmp[PATH_CAP + 8];
    int r = path_of(path, dir, "dist-%lld.index", step, 0);
    if (r)
        return r;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return dist_fail(EMB_EIO, "cannot write '%s': %s", tmp, strerror(errno));
    fprintf(f, "%s\nranks %d\nstep %lld\ntables %lld\n", INDEX_MAGIC, (int)d->nranks,
            (long long)step, (long long)d->ntables);
    for (int64_t i = 0; i < d->ntables; i++) {
        const DistTable *t = &d->t[i];
        fprintf(f, "%lld %lld %d %d %d %d %u %d\n", (long long)i, (long long)t->desc.nrows,
                (int)t->desc.featuresize, (int)t->desc.dtype, (int)t->place.kind,
                (int)t->place.rank, t->place.partition, (int)t->place.nshards);
    }
    for (int32_t q = 0; q < d->nranks; q++)
        fprintf(f, "file %d rank%d/%.*s\n", (int)q, (int)q, FILE_CAP - 1, files + q * FILE_CAP);
    const int bad = ferror(f) | fflush(f) | fclose(f);
    if (bad || rename(tmp, path) != 0) {
        remove(tmp);
        return dist_fail(EMB_EIO, "cannot write '%s'", path);
    }
    return 0;
}

void dist_saver_free(EmbDistSaver *s)
{
    emb_saver_destroy(&s->saver);
    free(s->dir);
    s->dir = NULL;
}

int emb_dist_set_full_every(EmbDist *d, int32_t full_every)
{
    dist_clear_error();
    if (!d)
        return dist_fail(EMB_ENULL, "emb_dist_set_full_every: d is NULL");
    if (full_every < 0)
        return dist_fail(EMB_EINVAL, "emb_dist_set_full_every: full_every %d is negative",
                         (int)full_every);
    dist_saver_free(&d->ckpt); /* a new chain: the next save is full */
    d->ckpt.full_every = full_every;
    return 0;
}

/* The saver of this rank's file in @sub: with deltas on, the one kept from the previous
   save of the same directory and optimizer (so that this save can extend its file). */
static int rank_saver(EmbDist *d, const char *sub, const EmbOptimizer *opt, EmbSaver **out)
{
    EmbDistSaver *k = &d->ckpt;
    if (k->saver && (strcmp(k->dir, sub) != 0 || k->opt != opt))
        dist_saver_free(k);
    if (k->saver) {
        *out = k->saver;
        return 0;
    }
    const EmbSaverOptions so = {.max_to_keep = -1, /* keeps all: the caller prunes old steps */
                                .optimizer = opt, .full_every = k->full_every};
    int r = emb_saver_create(out, sub, "ckpt", &so);
    if (r)
        return dist_fail_core(r, "emb_saver_create");
    if (k->full_every > 0 && !(k->dir = strdup(sub))) {
        emb_saver_destroy(out);
        return dist_fail(EMB_ENOMEM, "out of memory for the saver");
    }
    if (k->full_every > 0)
        k->saver = *out, k->opt = opt;
    return 0;
}

int emb_dist_save(EmbDist *d, const char *dir, int64_t step, const EmbOptimizer *opt)
{
    dist_clear_error();
    if (!d)
        return dist_fail(EMB_ENULL, "emb_dist_save: d is NULL");
    char sub[PATH_CAP];
    int r = !dir ? dist_fail(EMB_ENULL, "emb_dist_save: dir is NULL")
            : step < 0 ? dist_fail(EMB_EINVAL, "emb_dist_save: step %lld < 0", (long long)step)
            : path_of(sub, dir, "rank%lld", d->rank, 0);
    if (!r && mkdir(sub, 0777) != 0 && errno != EEXIST)
        r = dist_fail(EMB_EIO, "cannot create '%s': %s", sub, strerror(errno));
    EmbSaver *s = NULL;
    if (!r)
        r = rank_saver(d, sub, opt, &s);
    char path[PATH_CAP] = "";
    if (!r && (r = emb_saver_save(s, d->store, step, path, sizeof path)))
        r = dist_fail_core(r, "emb_saver_save");
    if (s != d->ckpt.saver)
        emb_saver_destroy(&s);
    /* the index names each rank's file as the saver named it (its format's extension) */
    char *files = NULL;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (!r && strlen(base) >= FILE_CAP)
        r = dist_fail(EMB_EINVAL, "checkpoint file name '%s' is too long", base);
    if (!r && !(files = calloc((size_t)d->nranks, FILE_CAP)))
        r = dist_fail(EMB_ENOMEM, "out of memory for the index");
    if ((r = dist_agree(d, r, NULL, NULL))) {
        free(files);
        return r;
    }
    char mine[FILE_CAP] = "";
    memcpy(mine, base, strlen(base) + 1); /* shorter than FILE_CAP: checked above */
    r = MPI_Gather(mine, FILE_CAP, MPI_CHAR, files, FILE_CAP, MPI_CHAR, 0, d->comm);
    r = r != MPI_SUCCESS ? dist_mpi_fail(r, "MPI_Gather (checkpoint files)")
        : d->rank == 0 ? write_index(d, dir, step, files) : 0;
    free(files);
    return dist_agree(d, r, NULL, NULL);
}

/* ---- restore ------------------------------------------------------------------------- */

/* The old ensemble, from the index. */
typedef struct Old {
    int32_t nranks;
    EmbDistPlacement *place; /* ntables */
    EmbStore **stores;       /* nranks: the old ranks' files this rank needs, else NULL */
    EmbOptimizer **opts;     /* nranks: their optimizer state (with an optimizer) */
    char (*files)[FILE_CAP + 16]; /* nranks: each old rank's file, relative to dir */
} Old;

/* The index's table lines: each table's old placement, checked against the ensemble. */
static int read_placements(const EmbDist *d, FILE *f, const char *path, int ranks, int64_t n,
                           int version, Old *old)
{
    int r = 0;
    for (int64_t i = 0; i < n && !r; i++) {
        long long idx = -1, rows = -1;
        int D = 0, dtype = 0, kind = -1, rank = -1, nshards = 0;
        unsigned part = 0;
        const DistTable *t = &d->t[i];
        const int got = version == 1
            ? fscanf(f, "%lld %lld %d %d %d %d %u", &idx, &rows, &D, &dtype, &kind, &rank,
                     &part)
            : fscanf(f, "%lld %lld %d %d %d %d %u %d", &idx, &rows, &D, &dtype, &kind, &rank,
                     &part, &nshards) - 1;
        EmbDistPlacement p = {(EmbDistKind)kind, rank, part, nshards};
        if (got != 7 || idx != i || kind < 0 || kind > 3 || !dist_placement_valid(&p, ranks))
            r = dist_fail(EMB_ECORRUPT, "'%s': table line %lld is malformed", path,
                          (long long)i);
        else if (rows != t->desc.nrows || D != t->desc.featuresize || dtype != (int)t->desc.dtype)
            r = dist_fail(EMB_ESHAPE, "'%s': table %lld is %lld x %d of dtype %d, the "
                          "ensemble's %lld x %d of dtype %d", path, (long long)i, rows, D,
                          dtype, (long long)t->desc.nrows, (int)t->desc.featuresize,
                          (int)t->desc.dtype);
        else {
            if ((p.kind == EMB_DIST_ROWWISE || p.kind == EMB_DIST_COLUMNWISE) &&
                p.nshards == 0) /* version 1: every rank */
                p.rank = 0, p.nshards = ranks;
            if (p.kind == EMB_DIST_COLUMNWISE && p.nshards > D)
                r = dist_fail(EMB_ECORRUPT, "'%s': table line %lld is malformed", path,
                              (long long)i);
            old->place[i] = p;
        }
    }
    return r;
}

/* The index's file lines: each old rank's file, relative to the directory. */
static int read_files(FILE *f, const char *path, int ranks, Old *old)
{
    int r = 0;
    for (int32_t q = 0; q < ranks && !r; q++) {
        int qq;
        char name[FILE_CAP + 16];
        if (fscanf(f, " file %d %143s", &qq, name) != 2 || qq != q ||
            strncmp(name, "rank", 4) || strstr(name, ".."))
            r = dist_fail(EMB_ECORRUPT, "'%s': file line %d is malformed", path, (int)q);
        else
            memcpy(old->files[q], name, sizeof name);
    }
    return r;
}

static int read_index(const EmbDist *d, const char *dir, int64_t step, Old *old)
{
    char path[PATH_CAP], magic[32] = "";
    int r = path_of(path, dir, "dist-%lld.index", step, 0);
    if (r)
        return r;
    FILE *f = fopen(path, "r");
    if (!f)
        return dist_fail(EMB_EIO, "cannot read '%s': %s", path, strerror(errno));
    int ranks = 0;
    long long st = -1, n = -1;
    const int version = !fgets(magic, sizeof magic, f) ? 0
                        : !strcmp(magic, INDEX_MAGIC "\n") ? 2
                        : !strcmp(magic, INDEX_MAGIC_1 "\n") ? 1 : 0;
    if (!version ||
        fscanf(f, "ranks %d step %lld tables %lld", &ranks, &st, &n) != 3 || ranks < 1 ||
        ranks > (1 << 24) || st != step) {
        fclose(f);
        return dist_fail(EMB_ECORRUPT, "'%s' is not a dist index of step %lld", path,
                         (long long)step);
    }
    if (n != d->ntables) {
        fclose(f);
        return dist_fail(EMB_ESHAPE, "'%s' has %lld tables, the ensemble %lld", path, n,
                         (long long)d->ntables);
    }
    old->nranks = ranks;
    old->place = calloc((size_t)n, sizeof *old->place);
    old->stores = calloc((size_t)ranks, sizeof *old->stores);
    old->files = calloc((size_t)ranks, sizeof *old->files);
    old->opts = calloc((size_t)ranks, sizeof *old->opts);
    if (!old->place || !old->stores || !old->files || !old->opts) {
        fclose(f);
        return dist_fail(EMB_ENOMEM, "out of memory for the index");
    }
    r = read_placements(d, f, path, ranks, n, version, old);
    if (!r)
        r = read_files(f, path, ranks, old);
    fclose(f);
    return r;
}

/* Columns of table @p i's part on old rank @p q (-1: q held none). */
static int64_t old_rows(const EmbDist *d, const Old *old, int64_t i, int32_t q)
{
    const EmbDistPlacement *p = &old->place[i];
    int32_t c0;
    if (p->kind == EMB_DIST_COLUMNWISE)
        return dist_slice(p, d->t[i].desc.featuresize, q, &c0) ? d->t[i].desc.nrows : -1;
    if (p->kind != EMB_DIST_ROWWISE) /* a replica: read rank 0's */
        return p->rank == q ? d->t[i].desc.nrows : -1;
    if (q < p->rank || q >= p->rank + p->nshards)
        return -1;
    return emb_partition_shard_rows(d->t[i].desc.nrows, p->nshards, q - p->rank);
}

/* Feature columns of table @p i's part on old rank @p q: all, or a column-wise slice
   (from *c0). */
static int32_t old_cols(const EmbDist *d, const Old *old, int64_t i, int32_t q, int32_t *c0)
{
    *c0 = 0;
    if (old->place[i].kind != EMB_DIST_COLUMNWISE)
        return d->t[i].desc.featuresize;
    return dist_slice(&old->place[i], d->t[i].desc.featuresize, q, c0);
}

/* The id of column c of table @p i's part on old rank @p q is `c * step + base`. */
static void old_ids(const EmbDist *d, const Old *old, int64_t i, int32_t q, int64_t *step,
                    int64_t *base)
{
    const EmbDistPlacement *p = &old->place[i];
    *step = 1, *base = 0;
    if (p->kind != EMB_DIST_ROWWISE)
        return;
    if (p->partition == EMB_PARTITION_MOD) {
        *step = p->nshards, *base = q - p->rank;
        return;
    }
    for (int32_t s = 0; s < q - p->rank; s++)
        *base += emb_partition_shard_rows(d->t[i].desc.nrows, p->nshards, s);
}

/*
 * Restores, from old rank @p q's file, the parts of the tables this rank now holds part
 * of (a var_list: the file's other tables are skipped, so a rank's memory holds only the
 * old parts it copies from) into a store, if there are any.
 */
static int load_old(EmbDist *d, const char *dir, int64_t step, Old *old, int32_t q,
                    const EmbOptimizer *opt)
{
    int64_t need = 0;
    for (int64_t i = 0; i < d->ntables; i++)
        need += d->t[i].local && old_rows(d, old, i, q) > 0;
    if (!need)
        return 0;
    EmbCheckpointVar *vars = calloc((size_t)need, sizeof *vars);
    if (!vars)
        return dist_fail(EMB_ENOMEM, "out of memory for the restore");
    int r = emb_store_create(&old->stores[q]);
    if (r)
        r = dist_fail_core(r, "store");
    int64_t n = 0;
    for (int64_t i = 0; i < d->ntables && !r; i++) {
        const int64_t rows = old_rows(d, old, i, q);
        if (!d->t[i].local || rows <= 0)
            continue;
        char name[EMB_NAME_MAX + 1];
        dist_part_name(d, i, old->place[i].kind, q, name);
        const EmbVariableSpec spec = {.name = name, .ncolumns = rows,
                                      .featuresize = old_cols(d, old, i, q, &(int32_t){0}),
                                      .dtype = d->t[i].desc.dtype};
        if ((r = emb_store_get(old->stores[q], &spec, EMB_REUSE_NO, &vars[n].table)))
            r = dist_fail_core(r, "restore store");
        n++;
    }
    char path[PATH_CAP];
    if (!r && snprintf(path, sizeof path, "%s/%s", dir, old->files[q]) >= (int)sizeof path)
        r = dist_fail(EMB_EINVAL, "checkpoint path under '%s' is too long", dir);
    EmbOptimizerConfig cfg;
    if (!r && opt && ((r = emb_optimizer_get_config(opt, &cfg)) ||
                      (r = emb_optimizer_create(&old->opts[q], &cfg))))
        r = dist_fail_core(r, "restore optimizer");
    int64_t got = -1;
    const EmbRestoreOptions ro = {.var_list = vars, .nvars = n, .optimizer = old->opts[q]};
    if (!r && (r = emb_checkpoint_restore_ex(NULL, path, &ro, &got)))
        r = dist_fail(r, "'%s': %s", path, emb_last_error());
    free(vars);
    if (!r && got != step)
        r = dist_fail(EMB_ECORRUPT, "'%s' holds step %lld, not %lld", path, (long long)got,
                      (long long)step);
    return r;
}

/*
 * Copies column @p from of @p src (feature columns oc0 .. oc0 + ow - 1 of the table) to
 * column @p to of @p dst (columns nc0 .. nc0 + nw - 1): the columns both hold, in each of
 * @p planes planes (a table: 1; optimizer state: its width over the part's, Adam's m and
 * v one after the other).
 */
static void copy_column(const EmbTable *src, int64_t from, int32_t oc0, int32_t ow,
                        EmbTable *dst, int64_t to, int32_t nc0, int32_t nw, int32_t planes)
{
    unsigned char *a, *b;
    emb_table_column_pointer(src, from, EMB_CTX_NONE, (void **)&a);
    emb_table_column_pointer(dst, to, EMB_CTX_UPDATE, (void **)&b);
    const size_t es = emb_dtype_size(emb_table_dtype(dst));
    const int32_t lo = oc0 > nc0 ? oc0 : nc0, hi = oc0 + ow < nc0 + nw ? oc0 + ow : nc0 + nw;
    for (int32_t p = 0; p < planes && lo < hi; p++)
        memcpy(b + es * (size_t)(p * nw + lo - nc0), a + es * (size_t)(p * ow + lo - oc0),
               es * (size_t)(hi - lo));
}

/* Copies, from every loaded old part, the columns this rank now holds (and their
 * optimizer state when @p opt is given). */
static void copy_columns(EmbDist *d, const Old *old, EmbOptimizer *opt)
{
    for (int32_t q = 0; q < old->nranks; q++) {
        if (!old->stores[q])
            continue;
        for (int64_t i = 0; i < d->ntables; i++) {
            DistTable *t = &d->t[i];
            const int64_t rows = old_rows(d, old, i, q);
            if (!t->local || rows <= 0)
                continue;
            char name[EMB_NAME_MAX + 1];
            EmbTable *src;
            dist_part_name(d, i, old->place[i].kind, q, name);
            emb_store_find(old->stores[q], name, &src);
            EmbTable *ss = NULL, *ds = NULL; /* the state, when both have one */
            if (opt && old->opts[q] &&
                emb_optimizer_state(old->opts[q], src, 0, &ss, NULL) == 0 && ss)
                emb_optimizer_state(opt, t->local, 0, &ds, NULL);
            int32_t oc0, nc0 = 0, nw = emb_table_featuresize(t->local);
            const int32_t ow = old_cols(d, old, i, q, &oc0);
            if (t->place.kind == EMB_DIST_COLUMNWISE)
                dist_cols(t, d->rank, &nc0);
            const int32_t planes = ss && ds ? emb_table_featuresize(ss) / ow : 0;
            int64_t step, base;
            old_ids(d, old, i, q, &step, &base);
            for (int64_t c = 0; c < rows; c++) {
                int32_t owner;
                int64_t col;
                dist_locate(d, t, c * step + base, &owner, &col);
                if (owner != d->rank)
                    continue;
                copy_column(src, c, oc0, ow, t->local, col, nc0, nw, 1);
                if (ss && ds)
                    copy_column(ss, c, oc0, ow, ds, col, nc0, nw, planes);
            }
        }
    }
}

/*
 * The optimizer's update count of table @p i as saved (the old parts agree: every part is
 * updated every step), -1 when none was saved; and this rank's state made ready.
 */
static int prepare_state(EmbDist *d, const Old *old, int64_t i, EmbOptimizer *opt,
                         int64_t *saved)
{
    *saved = -1;
    for (int32_t q = 0; q < old->nranks; q++) {
        char name[EMB_NAME_MAX + 1];
        EmbTable *src;
        int64_t st;
        dist_part_name(d, i, old->place[i].kind, q, name);
        if (old->opts[q] && emb_store_find(old->stores[q], name, &src) == 0 &&
            emb_optimizer_state(old->opts[q], src, 0, &(EmbTable *){NULL}, &st) == 0)
            *saved = st;
    }
    int64_t now = 0;
    int r = emb_optimizer_attach(opt, d->t[i].local);
    if (!r)
        r = emb_optimizer_state(opt, d->t[i].local, 0, &(EmbTable *){NULL}, &now);
    if (r)
        return dist_fail_core(r, "optimizer state");
    if (*saved >= 0 && now > *saved)
        return dist_fail(EMB_EINVAL, "table %lld: the optimizer has applied %lld updates, "
                         "more than the checkpoint's %lld (restore into a fresh one)",
                         (long long)i, (long long)now, (long long)*saved);
    return 0;
}

/*
 * Brings the optimizer's update count of this rank's part of table @p i to @p saved
 * (Adam's bias correction depends on it; there is no setter): empty gradients, each a
 * valid no-op that counts as a step.
 */
static void set_steps(EmbDist *d, int64_t i, EmbOptimizer *opt, int64_t saved)
{
    DistTable *t = &d->t[i];
    int64_t now = 0;
    emb_optimizer_state(opt, t->local, 0, &(EmbTable *){NULL}, &now);
    const EmbSparseGrad none = {.featuresize = emb_table_featuresize(t->local),
                                .stride = t->desc.featuresize};
    if (now < saved && emb_grad_set_sparse(t->grad, t->local, &none) == 0)
        for (; now < saved; now++)
            emb_update(opt, t->local, t->grad, t->indexer, 0);
    t->recorded = 0;
}

int emb_dist_restore(EmbDist *d, const char *dir, int64_t step, EmbOptimizer *opt)
{
    dist_clear_error();
    if (!d)
        return dist_fail(EMB_ENULL, "emb_dist_restore: d is NULL");
    Old old = {0};
    int r = !dir ? dist_fail(EMB_ENULL, "emb_dist_restore: dir is NULL")
            : read_index(d, dir, step, &old);
    EmbOptimizerConfig cfg;
    for (int64_t i = 0; !r && opt && i < d->ntables; i++) /* one accumulator per row */
        if ((d->t[i].place.kind == EMB_DIST_COLUMNWISE ||
             old.place[i].kind == EMB_DIST_COLUMNWISE) && !emb_optimizer_get_config(opt, &cfg) &&
            cfg.kind == EMB_OPT_ROWWISE_ADAGRAD)
            r = dist_fail(EMB_ENOTSUP, "emb_dist_restore: table %lld is column-wise: row-wise "
                          "Adagrad's state cannot be split by columns", (long long)i);
    for (int32_t q = 0; q < old.nranks && !r; q++)
        r = load_old(d, dir, step, &old, q, opt);
    int64_t *saved = !r && opt ? calloc((size_t)d->ntables, sizeof *saved) : NULL;
    if (!r && opt && !saved)
        r = dist_fail(EMB_ENOMEM, "out of memory for the restore");
    for (int64_t i = 0; i < d->ntables && !r && opt; i++)
        if (d->t[i].local)
            r = prepare_state(d, &old, i, opt, &saved[i]);
    if (!(r = dist_agree(d, r, NULL, NULL))) {
        copy_columns(d, &old, opt);
        for (int64_t i = 0; i < d->ntables && opt; i++)
            if (d->t[i].local)
                set_steps(d, i, opt, saved[i]);
    }
    for (int32_t q = 0; old.stores && q < old.nranks; q++) {
        emb_store_destroy(&old.stores[q]);
        emb_optimizer_destroy(&old.opts[q]);
    }
    free(saved), free(old.place), free(old.stores), free(old.files), free(old.opts);
    return r;
}
