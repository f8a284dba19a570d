/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynamic_ckpt.c — a dynamic table's checkpoint entries of the table contract (save_list,
 * restore_extras, stage ...), for one dynamic table or for the shards of a table
 * partitioned over dynamic shards (keyed by id mod shards), saved as one dynamic table:
 * its rows in increasing id order, their ids and last update steps ("dynamic.ids",
 * "dynamic.last": I64 [rows, 1]) and the admission counts ("dynamic.sketch": U16
 * [4 * shards, width], the shards' sketches stacked; absent without admission).
 * A restore stages one body per target shard (row j of the file to shard id mod Q) and
 * commits them all, or none.
 */
#include <stdlib.h>
#include <string.h>

#include "tables/dynamic/dynamic_impl.h"

#define SKETCH_ROWS 4
enum { X_IDS = 0, X_LAST = 1, X_SKETCH = 2 };

/* ---- saving ------------------------------------------------------------------------------ */

typedef struct IdRowShard {
    int64_t id, row;
    int32_t shard;
} IdRowShard;

typedef struct Listing {
    EmbTable **tabs;     /* a copy of the caller's */
    int32_t ns;
    bool state;
    int64_t n, *order, *ids;
    int32_t *shard;
    int64_t sketch_width;
    IdRowShard *v; /* while listing */
    int32_t cur;
} Listing;

static int idrowshard_cmp(const void *a, const void *b)
{
    const int64_t x = ((const IdRowShard *)a)->id, y = ((const IdRowShard *)b)->id;
    return (x > y) - (x < y);
}

static void collect(void *ctx, int64_t row, int64_t id)
{
    Listing *l = ctx;
    l->v[l->n++] = (IdRowShard){id, row, l->cur};
}

int emb__dynamic_save_check(const EmbTable *t, EmbTable *const *tabs, int32_t ns)
{
    int64_t w0 = 0, w;
    for (int32_t i = 0; i < ns; i++) {
        if (!emb__is_dynamic(tabs[i])) /* a state view (or a view of them) */
            return tabs[i]->ops->save_check(t);
        const bool s = emb__dynamic_sketch(tabs[i], &w) != NULL;
        if (i == 0)
            w0 = s ? w : -1;
        else if ((s ? w : -1) != w0)
            return emb__fail(EMB_ENOTSUP, "%s: its dynamic shards count admissions in "
                             "sketches of different widths, which a checkpoint cannot hold",
                             emb__table_label(t));
    }
    return 0;
}

static const void *list_row(const EmbRowList *rl, int64_t k)
{
    const Listing *l = rl->priv;
    return emb__dynamic_row(l->tabs[l->shard[k]], l->order[k]);
}

static const float *list_state(const EmbRowList *rl, int64_t k)
{
    const Listing *l = rl->priv;
    return l->state ? emb__dynamic_state_row(l->tabs[l->shard[k]], l->order[k]) : NULL;
}

static const void *list_extra(const EmbRowList *rl, int e, int64_t j, int64_t *tmp)
{
    const Listing *l = rl->priv;
    if (e == X_SKETCH) { /* shard j / 4's row j % 4 */
        int64_t w;
        const uint16_t *sk = emb__dynamic_sketch(l->tabs[j / SKETCH_ROWS], &w);
        return sk + (j % SKETCH_ROWS) * w;
    }
    const EmbTable *h = l->tabs[l->shard[j]];
    *tmp = e == X_IDS ? emb__dynamic_row_id(h, l->order[j]) : emb__dynamic_row_last(h, l->order[j]);
    return tmp;
}

static void list_close(EmbRowList *rl)
{
    Listing *l = rl->priv;
    if (l) {
        free(l->order);
        free(l->shard);
        free(l->tabs);
        free(l);
    }
    rl->priv = NULL;
}

/* The rows of the tables in increasing id order: l->order / l->shard (l->n of them). */
static int sort_rows(const EmbTable *t, Listing *l)
{
    int64_t total = 0;
    EmbDynamicStats st;
    for (int32_t i = 0; i < l->ns; i++) {
        emb_table_dynamic_stats(l->tabs[i], &st);
        total += st.rows;
    }
    const size_t cap = (size_t)EMB_MAX(total, 1);
    l->v = malloc(cap * sizeof *l->v);
    l->order = malloc(cap * sizeof *l->order);
    l->shard = malloc(cap * sizeof *l->shard);
    if (!l->v || !l->order || !l->shard) {
        free(l->v);
        return emb__fail(EMB_ENOMEM, "out of memory to sort the %lld ids of %s",
                         (long long)total, emb__table_label(t));
    }
    for (l->cur = 0; l->cur < l->ns; l->cur++)
        emb__dynamic_each_row(l->tabs[l->cur], collect, l);
    qsort(l->v, (size_t)l->n, sizeof *l->v, idrowshard_cmp);
    for (int64_t j = 0; j < l->n; j++) {
        l->order[j] = l->v[j].row;
        l->shard[j] = l->v[j].shard;
    }
    free(l->v);
    l->v = NULL;
    return 0;
}

int emb__dynamic_save_list(const EmbTable *t, EmbTable *const *tabs, int32_t ns, bool state,
                           EmbRowList *out)
{
    Listing *l = calloc(1, sizeof *l);
    if (!l)
        return emb__fail(EMB_ENOMEM, "out of memory listing %s", emb__table_label(t));
    *l = (Listing){.tabs = malloc((size_t)ns * sizeof *l->tabs), .ns = ns, .state = state};
    *out = (EmbRowList){.priv = l, .row = list_row, .state = list_state,
                        .extra_column = list_extra, .close = list_close};
    if (l->tabs)
        memcpy(l->tabs, tabs, (size_t)ns * sizeof *l->tabs);
    const int r = l->tabs ? sort_rows(t, l)
                          : emb__fail(EMB_ENOMEM, "out of memory listing %s", emb__table_label(t));
    if (r) {
        list_close(out);
        return r;
    }
    out->n = l->n;
    out->step = emb_table_dynamic_step(tabs[0]);
    emb__dynamic_restore_extras(tabs, ns, out->extra, &out->nextra);
    out->extra[X_IDS].ncolumns = out->extra[X_LAST].ncolumns = l->n;
    return 0;
}

void emb__dynamic_restore_extras(EmbTable *const *tabs, int32_t ns, EmbExtraTensor *extra,
                                 int *n)
{
    int64_t w;
    const bool sketch = emb__dynamic_sketch(tabs[0], &w) != NULL;
    extra[X_IDS] = (EmbExtraTensor){"dynamic.ids", EMB_ELEM_I64, -1, 1, false};
    extra[X_LAST] = (EmbExtraTensor){"dynamic.last", EMB_ELEM_I64, -1, 1, false};
    extra[X_SKETCH] = (EmbExtraTensor){"dynamic.sketch", EMB_ELEM_U16,
                                       (int64_t)SKETCH_ROWS * ns, (int32_t)w, true};
    *n = sketch ? 3 : 2;
}

/* ---- restoring ---------------------------------------------------------------------------- */

struct EmbRowStage {
    EmbTable **tabs;     /* a copy of the caller's */
    int32_t Q;
    EmbDynStage **st;
    int32_t *q;   /* file row j: stage q[j], row pos[j] */
    int64_t *pos;
};

void emb__dynamic_stage_free_all(EmbRowStage *s)
{
    if (!s)
        return;
    for (int32_t k = 0; s->st && k < s->Q; k++)
        emb__dynamic_stage_free(s->st[k]);
    free(s->st);
    free(s->tabs);
    free(s->q);
    free(s->pos);
    free(s);
}

void *emb__dynamic_stage_dst(EmbRowStage *s, int what, int64_t j)
{
    EmbDynStage *st = s->st[s->q[j]];
    return what == EMB_STAGE_VALUES ? emb__dynamic_stage_row(st, s->pos[j])
                                    : (void *)emb__dynamic_stage_state(st, s->pos[j]);
}

void emb__dynamic_stage_commit_all(EmbTable *t, EmbRowStage *s)
{
    (void)t;
    for (int32_t k = 0; k < s->Q; k++) {
        emb__dynamic_stage_commit(s->tabs[k], s->st[k]);
        s->st[k] = NULL;
    }
    emb__dynamic_stage_free_all(s);
}

/* The file's admission counts (P sketches of 4 rows of @w) into the Q stages: shard by
   shard when P == Q, else every stage the sum (saturated) of the P, which is exactly one
   table's counts when Q == 1 (an id counts in one shard, at the cells one table uses). */
static void spread_sketch(EmbRowStage *s, const uint16_t *file, int32_t P, int64_t w)
{
    for (int32_t q = 0; q < s->Q; q++) {
        int64_t width;
        uint16_t *dst = emb__dynamic_stage_sketch(s->st[q], &width);
        for (int64_t i = 0; i < SKETCH_ROWS * w; i++) {
            uint32_t v = 0;
            for (int32_t p = 0; p < P; p++)
                v += P == s->Q && p != q ? 0 : file[(int64_t)p * SKETCH_ROWS * w + i];
            dst[i] = (uint16_t)EMB_MIN(v, UINT16_MAX);
        }
    }
}

/* Each stage's rows: allocated for the file's ids (row j to stage id mod Q). */
static int stage_bodies(EmbRowStage *s, const EmbStageIn *in, const int64_t *ids)
{
    const int64_t n = in->nrows;
    int64_t *count = calloc((size_t)s->Q, sizeof *count);
    int r = count ? 0 : emb__fail(EMB_ENOMEM, "out of memory restoring %s", in->path);
    for (int64_t j = 0; j < n && !r; j++) {
        s->q[j] = (int32_t)(ids[j] >= 0 ? ids[j] % s->Q : 0);
        s->pos[j] = count[s->q[j]]++;
    }
    for (int32_t k = 0; k < s->Q && !r; k++)
        r = emb__dynamic_stage(s->tabs[k], count[k], &s->st[k]);
    free(count);
    return r;
}

/* Each stage's ids, last update steps and step, checked. */
static int stage_ids(EmbRowStage *s, const EmbStageIn *in, const int64_t *ids)
{
    const int64_t *last = in->extra[X_LAST];
    int64_t *sub = malloc((size_t)EMB_MAX(in->nrows, 1) * sizeof *sub);
    if (!sub)
        return emb__fail(EMB_ENOMEM, "out of memory restoring %s", in->path);
    for (int64_t j = 0; j < in->nrows; j++)
        emb__dynamic_stage_last(s->st[s->q[j]])[s->pos[j]] = last[j];
    int r = 0;
    for (int32_t k = 0; k < s->Q && !r; k++) {
        int64_t m = 0;
        for (int64_t j = 0; j < in->nrows; j++)
            if (s->q[j] == k)
                sub[m++] = ids[j];
        if (emb__dynamic_stage_ids(s->st[k], sub, in->step) != 0)
            r = emb__fail(EMB_ECORRUPT, "checkpoint %s: the ids or update steps of \"%s\" "
                          "are not strictly increasing ids >= 0 and steps in [0, %lld]",
                          in->path, in->name, (long long)in->step);
    }
    free(sub);
    return r;
}

/* The sketch: the file's, when both the file and the target count admissions. */
static int stage_sketch(EmbRowStage *s, const EmbTable *t, const EmbStageIn *in)
{
    int64_t width = 0;
    const bool sketch = emb__dynamic_stage_sketch(s->st[0], &width) != NULL;
    const int64_t fwidth = in->extra[X_SKETCH] ? in->shape[X_SKETCH].width : 0;
    if (!sketch || !fwidth)
        return 0;
    if (fwidth != width)
        return emb__fail(EMB_ESHAPE, "checkpoint %s counts admissions of \"%s\" in a sketch "
                         "%lld wide; %s's is %lld wide", in->path, in->name, (long long)fwidth,
                         emb__table_label(t), (long long)width);
    spread_sketch(s, in->extra[X_SKETCH], (int32_t)(in->shape[X_SKETCH].ncolumns / SKETCH_ROWS),
                  fwidth);
    return 0;
}

int emb__dynamic_restore_stage(const EmbTable *t, EmbTable *const *tabs, int32_t ns,
                               const EmbStageIn *in, EmbRowStage **out)
{
    const size_t n = (size_t)EMB_MAX(in->nrows, 1);
    EmbRowStage *s = calloc(1, sizeof *s);
    if (s) {
        *s = (EmbRowStage){.tabs = malloc((size_t)ns * sizeof *s->tabs), .Q = ns,
                           .st = calloc((size_t)ns, sizeof *s->st),
                           .q = malloc(n * sizeof *s->q), .pos = malloc(n * sizeof *s->pos)};
        if (s->tabs)
            memcpy(s->tabs, tabs, (size_t)ns * sizeof *s->tabs);
    }
    int r = s && s->tabs && s->st && s->q && s->pos
                    ? 0 : emb__fail(EMB_ENOMEM, "out of memory restoring %s", in->path);
    const int64_t *ids = in->extra[X_IDS];
    r = r ? r : stage_bodies(s, in, ids);
    r = r ? r : stage_sketch(s, t, in);
    r = r ? r : stage_ids(s, in, ids);
    if (r) {
        emb__dynamic_stage_free_all(s);
        return r;
    }
    *out = s;
    return 0;
}
