/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dynamic.c — hash-keyed dynamic tables (dynamic.h): an open-addressing map from id to a
 * row index (linear probing, backward-shift deletion, load <= 0.7), rows in slabs of a
 * power-of-two count of rows (row r at slabs[r >> shift] + (r & mask) * stride), a free
 * list of evicted rows, per-row metadata (id, last update step), a count-min sketch for
 * admission, and the optimizer state in slabs parallel to the rows.
 *
 * The table contract (tables/table_ops.h) is its only door to the layers above: the
 * operations tables at the end of this file. The structure changes only in serial steps
 * (an update's prepare / commit, evict, import, a column pointer with UPDATE of an unknown
 * id, a restore's stage commit); lookups and the update's apply phase only probe, so they
 * may run on many threads. A created row's values depend on its id alone
 * (initval.h), never on the order rows were created in or on the row index it got.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "initval.h"
#include "rng.h"
#include "tables/dynamic_impl.h"

#define MAX_LOAD_NUM 7  /* the index grows past a load of 7/10 */
#define MAX_LOAD_DEN 10
#define SKETCH_DEPTH 4
#define SLAB_BYTES (256 * 1024)

/* The index: slot h holds (id, row index), id -1 when empty. */
typedef struct DynSlot {
    int64_t id;
    int64_t row;
} DynSlot;

typedef struct DynIndex {
    DynSlot *slots;
    int64_t nslots; /* a power of two */
} DynIndex;

typedef struct Dyn {
    DynIndex x;
    int refs;            /* the table and the state view */
    int32_t D;
    EmbDtype dtype;
    size_t stride;       /* bytes from row to row in a slab */
    size_t align;        /* of a slab (column_align, at least 64) */
    int shift;           /* rows per slab = 1 << shift */
    char **slabs;
    float **sslabs;      /* state slabs (entries NULL without state) */
    int64_t nslabs, slabs_cap;
    int64_t *rowid, *last; /* per slab row: its id (-1: free) and last update step */
    int64_t free_head;   /* the last evicted row (-1: none); a free row r's rowid is
                            -2 - (the row freed before it), so rows are reused last-in
                            first-out with no array of their own */
    int64_t nfree;
    int64_t used;        /* slab rows ever used: [0, used) are live or free */
    int64_t nrows;       /* live rows */
    int64_t max_rows;
    EmbInitializer init;
    EmbDynamicMissing missing;
    void *defrow, *sink; /* FORWARD default; a write target that no reader sees */
    int32_t admit_after;
    uint16_t *sketch;    /* SKETCH_DEPTH x sketch_width */
    int64_t sketch_width;
    int64_t step;
    /* optimizer state */
    int32_t swidth;      /* 0: none */
    size_t sstride;      /* bytes */
    float *sinit, *sdefault;
    EmbTable *view;
} Dyn;

static inline Dyn *dyn_of(const EmbTable *t)
{
    return (Dyn *)t->impl;
}

/* The hash of @id; its home slot in an index of n slots is hash & (n - 1). */
static inline uint64_t slot_hash(int64_t id)
{
    return emb__mix64((uint64_t)id ^ 0x5851f42d4c957f2dull);
}

/* The row of @id whose home slot is @h (of an index with @mask), or -1. */
static inline int64_t find_at(const DynSlot *slots, uint64_t mask, uint64_t h, int64_t id)
{
    for (;; h = (h + 1) & mask) {
        const DynSlot *s = &slots[h];
        if (s->id == id)
            return s->row;
        if (s->id < 0)
            return -1;
    }
}

static inline int64_t find(const Dyn *d, int64_t id)
{
    const uint64_t mask = (uint64_t)d->x.nslots - 1;
    return find_at(d->x.slots, mask, slot_hash(id) & mask, id);
}

static inline char *row_ptr(const Dyn *d, int64_t r)
{
    return d->slabs[r >> d->shift] + (size_t)(r & (((int64_t)1 << d->shift) - 1)) * d->stride;
}

static inline float *state_ptr(const Dyn *d, int64_t r)
{
    return (float *)((char *)d->sslabs[r >> d->shift] +
                     (size_t)(r & (((int64_t)1 << d->shift) - 1)) * d->sstride);
}

void *emb__dynamic_row(const EmbTable *t, int64_t r)
{
    return row_ptr(dyn_of(t), r);
}

float *emb__dynamic_state_row(const EmbTable *t, int64_t r)
{
    const Dyn *d = dyn_of(t);
    return d->swidth ? state_ptr(d, r) : NULL;
}

bool emb__dynamic_missing_fails(const EmbTable *t)
{
    return dyn_of(t)->missing == EMB_DYN_MISSING_ERROR;
}

bool emb__dynamic_has(const EmbTable *t, int64_t id)
{
    return id >= 0 && find(dyn_of(t), id) >= 0;
}

static bool dyn_missing_fails(const EmbTable *t)
{
    return emb__dynamic_missing_fails(t);
}

static bool dyn_readable(const EmbTable *t, int64_t id)
{
    return !emb__dynamic_missing_fails(t) || emb__dynamic_has(t, id);
}

static bool dyn_state_is(const EmbTable *t, const EmbTable *view)
{
    return dyn_of(t)->view == view;
}

/* ---- growth (nothing visible changes) ---------------------------------------------------- */

/* Inserts (id, row) into @slots of @nslots (id absent, room guaranteed). */
static void slot_insert(DynSlot *slots, int64_t nslots, int64_t id, int64_t row)
{
    const uint64_t mask = (uint64_t)nslots - 1;
    uint64_t h = slot_hash(id) & mask;
    while (slots[h].id >= 0)
        h = (h + 1) & mask;
    slots[h] = (DynSlot){id, row};
}

/* An index of at least @want slots holding every row; old index kept on failure. */
static int index_grow(Dyn *d, int64_t want)
{
    if (want <= d->x.nslots)
        return 0;
    int64_t n = d->x.nslots;
    while (n < want)
        n *= 2;
    DynSlot *s = (uint64_t)n <= SIZE_MAX / sizeof *s
                     ? emb__big_alloc(EMB_ALIGN, (size_t)n * sizeof *s) : NULL;
    if (!s)
        return emb__fail(EMB_ENOMEM, "out of memory for a dynamic table index of %lld slots",
                         (long long)n);
    for (int64_t i = 0; i < n; i++)
        s[i] = (DynSlot){-1, 0};
    for (int64_t i = 0; i < d->x.nslots; i++)
        if (d->x.slots[i].id >= 0)
            slot_insert(s, n, d->x.slots[i].id, d->x.slots[i].row);
    free(d->x.slots);
    d->x.slots = s;
    d->x.nslots = n;
    return 0;
}

/* Slots needed for @rows rows at a load of at most 7/10. */
static int64_t slots_for(int64_t rows)
{
    int64_t n = 16;
    while (n / MAX_LOAD_DEN * MAX_LOAD_NUM < rows && n < ((int64_t)1 << 60))
        n *= 2;
    return n;
}

static void *zalloc_aligned(size_t align, size_t bytes)
{
    void *p = emb__aligned_alloc(align, bytes ? bytes : align);
    if (p)
        memset(p, 0, bytes);
    return p;
}

static void *zalloc_big(size_t align, size_t bytes)
{
    void *p = emb__big_alloc(align, bytes ? bytes : align);
    if (p)
        memset(p, 0, bytes);
    return p;
}

static void *zalloc(size_t bytes)
{
    return zalloc_aligned(EMB_ALIGN, bytes);
}

static int grow_array(void *pp, int64_t n, size_t size)
{
    void *q = realloc(*(void **)pp, (size_t)n * size);
    if (!q)
        return EMB_ENOMEM;
    *(void **)pp = q;
    return 0;
}

/* One more slab (and state slab); nothing changes on failure. */
static int slab_add(Dyn *d)
{
    const int64_t per = (int64_t)1 << d->shift, rows = (d->nslabs + 1) * per;
    if (d->nslabs == d->slabs_cap) {
        const int64_t cap = EMB_MAX(8, 2 * d->slabs_cap);
        if (grow_array(&d->slabs, cap, sizeof *d->slabs) ||
            grow_array(&d->sslabs, cap, sizeof *d->sslabs))
            return emb__fail(EMB_ENOMEM, "out of memory for a dynamic table's slab list");
        d->slabs_cap = cap;
    }
    if (grow_array(&d->rowid, rows, sizeof(int64_t)) ||
        grow_array(&d->last, rows, sizeof(int64_t)))
        return emb__fail(EMB_ENOMEM, "out of memory for a dynamic table's row metadata");
    char *slab = zalloc_big(d->align, (size_t)per * d->stride);
    float *sslab = d->swidth ? zalloc_big(EMB_ALIGN, (size_t)per * d->sstride) : NULL;
    if (!slab || (d->swidth && !sslab)) {
        emb__aligned_free(slab);
        emb__aligned_free(sslab);
        return emb__fail(EMB_ENOMEM, "out of memory for a dynamic table slab of %lld bytes",
                         (long long)((size_t)per * d->stride));
    }
    for (int64_t r = d->nslabs * per; r < rows; r++)
        d->rowid[r] = -1;
    d->slabs[d->nslabs] = slab;
    d->sslabs[d->nslabs] = sslab;
    d->nslabs++;
    return 0;
}

/* Room for @extra new rows (cap, index, slabs); 0 or EMB_ENOMEM, nothing visible changed. */
static int reserve(Dyn *d, int64_t extra, const EmbTable *t)
{
    if (extra <= 0)
        return 0;
    if (d->max_rows > 0 && d->nrows + extra > d->max_rows)
        return emb__fail(EMB_ENOMEM, "%s: %lld rows and %lld new exceed max_rows %lld",
                         emb__table_label(t), (long long)d->nrows, (long long)extra,
                         (long long)d->max_rows);
    int r = index_grow(d, slots_for(d->nrows + extra));
    while (!r && d->nfree + (d->nslabs << d->shift) - d->used < extra)
        r = slab_add(d);
    return r;
}

/* ---- rows -------------------------------------------------------------------------------- */

/* A new row for @id (after reserve). */
static int64_t create(Dyn *d, int64_t id)
{
    int64_t r = d->used;
    if (d->free_head >= 0) {
        r = d->free_head;
        d->free_head = -2 - d->rowid[r];
        d->nfree--;
    } else {
        d->used++;
    }
    char *row = row_ptr(d, r);
    for (int32_t i = 0; i < d->D; i++)
        emb__store(d->dtype, row, i, emb__init_value(&d->init, INT64_MAX, id, i));
    if (d->swidth)
        memcpy(state_ptr(d, r), d->sinit, (size_t)d->swidth * sizeof(float));
    d->rowid[r] = id;
    d->last[r] = d->step;
    slot_insert(d->x.slots, d->x.nslots, id, r);
    d->nrows++;
    return r;
}

/* Removes @id (present) from the index: backward-shift deletion. */
static void slot_remove(Dyn *d, int64_t id)
{
    const uint64_t mask = (uint64_t)d->x.nslots - 1;
    uint64_t h = slot_hash(id) & mask;
    while (d->x.slots[h].id != id)
        h = (h + 1) & mask;
    for (uint64_t j = (h + 1) & mask;; j = (j + 1) & mask) {
        if (d->x.slots[j].id < 0)
            break;
        const uint64_t home = slot_hash(d->x.slots[j].id) & mask;
        /* move j into the hole h when its home is not in (h, j] cyclically */
        if (((j - home) & mask) >= ((j - h) & mask)) {
            d->x.slots[h] = d->x.slots[j];
            h = j;
        }
    }
    d->x.slots[h] = (DynSlot){-1, 0};
}

static void evict_row(Dyn *d, int64_t r)
{
    slot_remove(d, d->rowid[r]);
    d->rowid[r] = -2 - d->free_head;
    d->free_head = r;
    d->nfree++;
    memset(row_ptr(d, r), 0, d->stride);
    d->nrows--;
}

/* ---- column, column_create (the contract) ----------------------------------------------- */

static void *dynamic_column(const EmbTable *t, int64_t id, EmbContext ctx)
{
    Dyn *d = dyn_of(t);
    int64_t r = find(d, id);
    if (r >= 0)
        return row_ptr(d, r);
    if (ctx != EMB_CTX_UPDATE)
        return d->defrow;
    /* a write to an unknown id outside an update (emb_table_column_pointer checks room
       first; internal writers prepare their rows): serial by the header's contract */
    if (reserve(d, 1, t))
        return d->sink;
    r = create(d, id);
    return row_ptr(d, r);
}

static void *state_column(const EmbTable *t, int64_t id, EmbContext ctx)
{
    (void)ctx;
    const Dyn *d = dyn_of(t);
    if (!d->swidth)
        return d->sdefault;
    const int64_t r = find(d, id);
    return r >= 0 ? (void *)state_ptr(d, r) : (void *)d->sdefault;
}

int emb__dynamic_get_or_create(EmbTable *t, int64_t id, void **col)
{
    Dyn *d = dyn_of(t);
    int64_t r = find(d, id);
    if (r < 0) {
        const int e = reserve(d, 1, t);
        if (e)
            return e;
        r = create(d, id);
    }
    *col = row_ptr(d, r);
    return 0;
}

/* ---- resolve, prefetch (the contract: batched resolution of spans) ---------------------- */

#define SPAN EMB_SPAN_MAX /* ids hashed and probed together */

EMB_INLINE int64_t span_id(const void *ids, int id32, int64_t k)
{
    return id32 ? (int64_t)((const int32_t *)ids)[k] : ((const int64_t *)ids)[k];
}

/*
 * cols[k] = the row of id k0 + k of @ids (the FORWARD default row for an unknown id), for
 * k < n <= SPAN: every id of the span hashed and its home slot prefetched first (the
 * misses overlap, and a slot has arrived by its probe), then each probed and its row's
 * lines prefetched (@pf) so that the kernel that reads the span finds them arriving.
 * Reads the index only.
 */
static void resolve(const Dyn *d, const void *ids, int id32, int64_t k0, int64_t n,
                    size_t rowbytes, bool pf, const char **cols)
{
    uint64_t h[SPAN];
    const DynSlot *slots = d->x.slots;
    const uint64_t mask = (uint64_t)d->x.nslots - 1;
    for (int64_t k = 0; k < n; k++) {
        h[k] = slot_hash(span_id(ids, id32, k0 + k)) & mask;
        __builtin_prefetch(&slots[h[k]]);
    }
    for (int64_t k = 0; k < n; k++) {
        const int64_t r = find_at(slots, mask, h[k], span_id(ids, id32, k0 + k));
        const char *row = r >= 0 ? row_ptr(d, r) : (const char *)d->defrow;
        if (pf)
            for (size_t off = 0; off < rowbytes; off += 64)
                __builtin_prefetch(row + off);
        cols[k] = row;
    }
}

/* The contract's acquire (FORWARD / NONE: reads the index only); n <= SPAN. */
static int dyn_resolve(const EmbTable *t, const EmbIdSpan *sp, EmbContext ctx,
                       const void **cols, unsigned *hint)
{
    (void)ctx;
    if (!cols) /* nothing to pin: rows in memory */
        return 0;
    const Dyn *d = dyn_of(t);
    const size_t rowbytes = (size_t)t->featuresize * t->elsize;
    const bool pf = d->nrows * (int64_t)d->stride > EMB_RESIDENT_BYTES;
    resolve(d, sp->ids, sp->id32, sp->k0, sp->n, rowbytes, pf, (const char **)cols);
    *hint = pf ? EMB_RESOLVE_PREFETCHED : 0;
    return 0;
}

/* The contract's prefetch: the home slot of @id (a lookup, a few ids ahead). */
static void dyn_prefetch(const EmbTable *t, int64_t id)
{
    const DynIndex *x = &dyn_of(t)->x;
    __builtin_prefetch(&x->slots[slot_hash(id) & (uint64_t)(x->nslots - 1)]);
}

/* ---- admission --------------------------------------------------------------------------- */

static inline uint16_t *sketch_cell(const Dyn *d, int k, int64_t id)
{
    const uint64_t h = emb__rng_u64(0x243f6a8885a308d3ull, (uint64_t)k, (uint64_t)id);
    return &d->sketch[(int64_t)k * d->sketch_width + (int64_t)(h & (uint64_t)(d->sketch_width - 1))];
}

/* Whether one more update admits @id: its count so far (the sketch's minimum) + 1. */
static bool admits(const Dyn *d, int64_t id)
{
    if (d->admit_after <= 1)
        return true;
    uint32_t m = UINT16_MAX;
    for (int k = 0; k < SKETCH_DEPTH; k++)
        m = EMB_MIN(m, *sketch_cell(d, k, id));
    return m + 1 >= (uint32_t)d->admit_after;
}

static void count(Dyn *d, int64_t id)
{
    for (int k = 0; k < SKETCH_DEPTH; k++) {
        uint16_t *c = sketch_cell(d, k, id);
        if (*c < UINT16_MAX)
            (*c)++;
    }
}

/* ---- update_prepare / update_commit / update_rows (the contract) ------------------------ */

void emb__dynamic_decide(const EmbTable *t, const int64_t *ids, int64_t n, int64_t *rows,
                         int64_t *extra)
{
    const Dyn *d = dyn_of(t);
    for (int64_t k = 0; k < n; k++) {
        rows[k] = find(d, ids[k]);
        if (rows[k] < 0) {
            rows[k] = admits(d, ids[k]) ? -2 : -1;
            *extra += rows[k] == -2;
        }
    }
}

int emb__dynamic_reserve(EmbTable *t, int64_t extra)
{
    return reserve(dyn_of(t), extra, t);
}

void emb__dynamic_step(EmbTable *t)
{
    dyn_of(t)->step++;
}

void emb__dynamic_commit(EmbTable *t, const int64_t *ids, int64_t n, int64_t *rows)
{
    Dyn *d = dyn_of(t);
    for (int64_t k = 0; k < n; k++) {
        if (rows[k] == -1)
            count(d, ids[k]);
        else if (rows[k] == -2)
            rows[k] = create(d, ids[k]);
        if (rows[k] >= 0)
            d->last[rows[k]] = d->step;
    }
}

/* The contract's update steps: each part's ids decided in part order, then created. */
static int dyn_update_prepare(EmbTable *t, EmbRowPlan *rp)
{
    int64_t extra = 0;
    for (int p = 0; p < rp->nparts; p++) {
        int64_t d0, n;
        emb__rowplan_part(rp, p, &d0, &n);
        if (n > 0) /* an empty update may have no arrays at all */
            emb__dynamic_decide(t, rp->ids + d0, n, rp->handle + d0, &extra);
    }
    return emb__dynamic_reserve(t, extra);
}

static void dyn_update_commit(EmbTable *t, EmbRowPlan *rp)
{
    emb__dynamic_step(t);
    for (int p = 0; p < rp->nparts; p++) {
        int64_t d0, n;
        emb__rowplan_part(rp, p, &d0, &n);
        if (n > 0)
            emb__dynamic_commit(t, rp->ids + d0, n, rp->handle + d0);
    }
}

static void dyn_update_rows(const EmbTable *t, const EmbRowPlan *rp, int64_t d0, int64_t n,
                            void **cols, float **states)
{
    const Dyn *d = dyn_of(t);
    for (int64_t k = 0; k < n; k++) {
        const int64_t r = rp->handle[d0 + k];
        cols[k] = r >= 0 ? row_ptr(d, r) : NULL;
        if (states)
            states[k] = r >= 0 && d->swidth ? state_ptr(d, r) : NULL;
    }
}

/* ---- state_attach (the contract: optimizer state kept with the rows) -------------------- */

static void dyn_unref(Dyn *d)
{
    if (--d->refs > 0)
        return;
    for (int64_t i = 0; i < d->nslabs; i++) {
        emb__aligned_free(d->slabs[i]);
        emb__aligned_free(d->sslabs[i]);
    }
    free(d->slabs);
    free(d->sslabs);
    free(d->rowid);
    free(d->last);
    free(d->x.slots);
    free(d->sketch);
    emb__aligned_free(d->defrow);
    emb__aligned_free(d->sink);
    emb__aligned_free(d->sinit);
    emb__aligned_free(d->sdefault);
    free(d);
}

static void state_free(Dyn *d)
{
    for (int64_t i = 0; i < d->nslabs; i++) {
        emb__aligned_free(d->sslabs[i]);
        d->sslabs[i] = NULL;
    }
    emb__aligned_free(d->sinit);
    emb__aligned_free(d->sdefault);
    d->sinit = d->sdefault = NULL;
    d->swidth = 0;
    d->sstride = 0;
}

static void view_destroy(EmbTable *v)
{
    Dyn *d = v->impl;
    if (d->view == v) {
        state_free(d);
        d->view = NULL;
    }
    dyn_unref(d);
    v->impl = NULL;
}

int emb__dynamic_state_attach(EmbTable *t, int32_t width, const float *init, EmbTable **view)
{
    Dyn *d = dyn_of(t);
    if (d->view)
        return emb__fail(EMB_ENOTSUP, "%s keeps another optimizer's state already (detach it "
                         "first)", emb__table_label(t));
    if (width < 1 || width > (1 << 24))
        return emb__fail(EMB_EINVAL, "optimizer state width %d for %s", (int)width,
                         emb__table_label(t));
    const size_t sstride = ((size_t)width * sizeof(float) + EMB_ALIGN - 1) / EMB_ALIGN * EMB_ALIGN;
    const EmbTableOptions vo = {0};
    EmbTable *v = NULL;
    int r = emb__table_alloc(&v, INT64_MAX, width, EMB_F32, &vo);
    if (r)
        return r;
    float *sinit = zalloc(sstride), *sdef = zalloc(sstride);
    float **sl = calloc((size_t)EMB_MAX(d->nslabs, 1), sizeof *sl);
    bool ok = sinit && sdef && sl;
    for (int64_t i = 0; ok && i < d->nslabs; i++)
        ok = (sl[i] = zalloc_big(EMB_ALIGN, ((size_t)1 << d->shift) * sstride)) != NULL;
    if (!ok) {
        for (int64_t i = 0; sl && i < d->nslabs; i++)
            emb__aligned_free(sl[i]);
        free(sl);
        emb__aligned_free(sinit);
        emb__aligned_free(sdef);
        emb_table_destroy(&v);
        return emb__fail(EMB_ENOMEM, "out of memory for the optimizer state of %s",
                         emb__table_label(t));
    }
    memcpy(sinit, init, (size_t)width * sizeof(float));
    memcpy(sdef, init, (size_t)width * sizeof(float));
    for (int64_t i = 0; i < d->nslabs; i++)
        d->sslabs[i] = sl[i];
    free(sl);
    d->swidth = width;
    d->sstride = sstride;
    d->sinit = sinit;
    d->sdefault = sdef;
    for (int64_t row = 0; row < d->used; row++)
        if (d->rowid[row] >= 0)
            memcpy(state_ptr(d, row), sinit, (size_t)width * sizeof(float));
    v->ops = &emb__dynamic_state_ops;
    v->impl = d;
    d->refs++;
    d->view = v;
    *view = v;
    return 0;
}

/* ---- the public functions ---------------------------------------------------------------- */

static void dyn_destroy(EmbTable *t)
{
    Dyn *d = dyn_of(t);
    if (d)
        dyn_unref(d);
    t->impl = NULL;
}

static int options_check(const EmbDynamicOptions *o, const char *name)
{
    if (o->capacity < 0 || o->max_rows < 0 || o->admit_after < 0 || o->sketch_width < 0)
        return emb__fail(EMB_EINVAL, "dynamic table \"%s\": capacity %lld, max_rows %lld, "
                         "admit_after %d and sketch_width %d must be >= 0", name,
                         (long long)o->capacity, (long long)o->max_rows, (int)o->admit_after,
                         (int)o->sketch_width);
    if (o->sketch_width > EMB_DYN_SKETCH_WIDTH_MAX)
        return emb__fail(EMB_EINVAL, "dynamic table \"%s\": sketch_width %d is more than %d "
                         "(4 rows of 16-bit counters: %d MiB)", name, (int)o->sketch_width,
                         EMB_DYN_SKETCH_WIDTH_MAX, EMB_DYN_SKETCH_WIDTH_MAX * 8 >> 20);
    if ((unsigned)o->missing > EMB_DYN_MISSING_ERROR)
        return emb__fail(EMB_EINVAL, "dynamic table \"%s\": missing mode %d is unknown", name,
                         (int)o->missing);
    if (o->missing == EMB_DYN_MISSING_CONSTANT && (o->table.flags & EMB_TABLE_CHECK_FINITE) &&
        !isfinite(o->missing_value))
        return emb__fail(EMB_ENONFINITE, "dynamic table \"%s\": missing_value %g is not finite "
                         "(the table checks for finite values)", name, (double)o->missing_value);
    if (o->table.placement != EMB_PLACE_DEFAULT)
        return emb__fail(EMB_EINVAL, "dynamic table \"%s\": placement %d is not supported "
                         "(only EMB_PLACE_DEFAULT)", name, (int)o->table.placement);
    char label[EMB_NAME_MAX + 32];
    snprintf(label, sizeof label, "dynamic table \"%s\"", name);
    int r = emb__init_check(&o->init, label);
    if (!r && o->init.kind == EMB_INIT_UNIFORM_UNIT_SCALING)
        r = emb__fail(EMB_EINVAL, "%s: UNIFORM_UNIT_SCALING needs a row count a dynamic table "
                      "does not have", label);
    return r;
}

/* The configuration of a new body @d of rows of @stride bytes (slabs aligned to @align). */
static void dyn_configure(Dyn *d, const EmbDynamicOptions *o, int32_t featuresize,
                          EmbDtype dtype, size_t stride, size_t align)
{
    d->refs = 1;
    d->free_head = -1;
    d->D = featuresize;
    d->dtype = dtype;
    d->stride = stride;
    d->align = EMB_MAX(align, (size_t)EMB_ALIGN);
    /* slabs of 256 KiB, or 2 MiB (huge pages) for a table meant to hold 16 MiB or more */
    const size_t slab_bytes = (double)o->capacity * (double)stride >= 16.0 * 1048576.0
                                  ? EMB_HUGE_BYTES : SLAB_BYTES;
    d->shift = 4;
    while (d->shift < 16 && ((size_t)2 << d->shift) * stride <= slab_bytes)
        d->shift++;
    d->max_rows = o->max_rows;
    d->init = o->init;
    d->missing = o->missing;
    d->admit_after = o->admit_after;
    d->x.nslots = 16;
}

/* The storage of a configured body: index, default and sink rows, the sketch, room for
   the capacity hint. 0 or EMB_ENOMEM. */
static int dyn_allocate(Dyn *d, const EmbDynamicOptions *o)
{
    d->x.slots = malloc((size_t)d->x.nslots * sizeof *d->x.slots);
    d->defrow = zalloc(d->stride);
    d->sink = zalloc(d->stride);
    if (d->admit_after > 1) {
        int64_t w = 1;
        while (w < (o->sketch_width ? o->sketch_width : 65536))
            w *= 2;
        d->sketch_width = w;
        d->sketch = calloc((size_t)(SKETCH_DEPTH * w), sizeof *d->sketch);
    }
    if (!d->x.slots || !d->defrow || !d->sink || (d->admit_after > 1 && !d->sketch))
        return emb__fail(EMB_ENOMEM, "out of memory for a dynamic table");
    for (int64_t i = 0; i < d->x.nslots; i++)
        d->x.slots[i] = (DynSlot){-1, 0};
    if (o->missing == EMB_DYN_MISSING_CONSTANT)
        for (int32_t i = 0; i < d->D; i++)
            emb__store(d->dtype, d->defrow, i, o->missing_value);
    const int64_t cap = o->capacity ? o->capacity : 1024;
    int r = index_grow(d, slots_for(cap));
    while (!r && (d->nslabs << d->shift) < cap)
        r = slab_add(d);
    return r;
}

int emb_table_dynamic_create(EmbTable **out, int32_t featuresize, EmbDtype dtype,
                             const EmbDynamicOptions *opts)
{
    EMB_CHECK_NULL(out);
    const EmbDynamicOptions o = opts ? *opts : (EmbDynamicOptions){0};
    const char *name = o.table.name ? o.table.name : "";
    int r = options_check(&o, name);
    if (!r && emb__dtype_quantized(dtype))
        r = emb__fail(EMB_ENOTSUP, "dtype %s: dynamic tables of quantized rows are not "
                      "supported (table \"%s\")", emb_dtype_name(dtype), name);
    EmbTable *t = NULL;
    r = r ? r : emb__table_alloc(&t, INT64_MAX, featuresize, dtype, &o.table);
    if (r)
        return r;
    size_t stride = 0, align = 0;
    r = emb__column_stride((size_t)featuresize * t->elsize, &o.table, &stride, &align);
    if (!r && stride > (size_t)1 << 30)
        r = emb__fail(EMB_EOVERFLOW, "rows of %zu bytes are too large (%s)", stride,
                      emb__table_label(t));
    Dyn *d = r ? NULL : calloc(1, sizeof *d);
    if (!r && !d)
        r = emb__fail(EMB_ENOMEM, "out of memory for a dynamic table");
    if (!r) {
        dyn_configure(d, &o, featuresize, dtype, stride, align);
        t->ops = &emb__dynamic_ops;
        t->impl = d;
        r = dyn_allocate(d, &o);
    }
    if (r) {
        emb_table_destroy(&t);
        return r;
    }
    *out = t;
    return 0;
}

int emb_table_is_dynamic(const EmbTable *t)
{
    return t && emb__is_dynamic(t);
}

static int dyn_check(const EmbTable *t)
{
    EMB_CHECK_NULL(t);
    if (!emb__is_dynamic(t))
        return emb__fail(EMB_EINVAL, "%s is not a dynamic table", emb__table_label(t));
    return 0;
}

/* Partitioned over dynamic shards (a table with shards, dynamic ones): the shard count,
   else 0. */
static int32_t dyn_parts(const EmbTable *t)
{
    return t && t->ops->shard && emb__is_dynamic(t->ops->shard(t, 0)) ? t->ops->nshards(t)
                                                                      : 0;
}

static EmbTable *dyn_shard(const EmbTable *t, int32_t i)
{
    return t->ops->shard(t, i);
}

int emb_table_dynamic_stats(const EmbTable *t, EmbDynamicStats *out)
{
    if (dyn_parts(t)) { /* the shards' sums; their common step */
        EMB_CHECK_NULL(out);
        EmbDynamicStats sum = {0}, s;
        for (int32_t i = 0; i < dyn_parts(t); i++) {
            emb_table_dynamic_stats(dyn_shard(t, i), &s);
            sum.rows += s.rows;
            sum.slab_rows += s.slab_rows;
            sum.index_slots += s.index_slots;
            sum.bytes += s.bytes;
            sum.step = i == 0 ? s.step : sum.step;
        }
        *out = sum;
        return 0;
    }
    int r = dyn_check(t);
    if (r)
        return r;
    EMB_CHECK_NULL(out);
    const Dyn *d = dyn_of(t);
    const int64_t slab_rows = d->nslabs << d->shift;
    *out = (EmbDynamicStats){
        .rows = d->nrows, .slab_rows = slab_rows, .index_slots = d->x.nslots, .step = d->step,
        .bytes = slab_rows * (int64_t)(d->stride + d->sstride + 2 * sizeof(int64_t)) +
                 d->x.nslots * (int64_t)sizeof(DynSlot) +
                 SKETCH_DEPTH * d->sketch_width * (int64_t)sizeof(uint16_t)};
    return 0;
}

int64_t emb_table_dynamic_step(const EmbTable *t)
{
    if (dyn_parts(t))
        return emb_table_dynamic_step(dyn_shard(t, 0));
    return emb_table_is_dynamic(t) ? dyn_of(t)->step : 0;
}

int emb_table_dynamic_contains(const EmbTable *t, int64_t id)
{
    if (dyn_parts(t))
        return id >= 0 && emb__dynamic_has(dyn_shard(t, (int32_t)(id % dyn_parts(t))), id);
    const int r = dyn_check(t);
    return r ? r : emb__dynamic_has(t, id);
}

/* L2 norm of a row, in double over its elements in order. */
static double row_norm(const Dyn *d, int64_t r)
{
    const char *row = row_ptr(d, r);
    double s = 0.0;
    for (int32_t i = 0; i < d->D; i++) {
        const double x = emb__load(d->dtype, row, i);
        s += x * x;
    }
    return sqrt(s);
}

int emb_table_dynamic_evict(EmbTable *t, const EmbDynamicEvict *ev, int64_t *evicted)
{
    if (dyn_parts(t)) { /* every shard (the first call checks the criteria) */
        int64_t sum = 0, n = 0;
        int r = 0;
        for (int32_t i = 0; i < dyn_parts(t) && !r; i++, sum += n)
            r = emb_table_dynamic_evict(dyn_shard(t, i), ev, &n);
        if (!r && evicted)
            *evicted = sum;
        return r;
    }
    int r = dyn_check(t);
    if (r)
        return r;
    EMB_CHECK_NULL(ev);
    if (ev->ttl < 0 || !(ev->min_norm >= 0.0f) || (ev->flags & ~(unsigned)EMB_DYN_EVICT_ALL))
        return emb__fail(EMB_EINVAL, "evict: ttl %lld, min_norm %g, flags 0x%x: need ttl >= 0, "
                         "min_norm >= 0 and no unknown flag (%s)", (long long)ev->ttl,
                         (double)ev->min_norm, ev->flags, emb__table_label(t));
    Dyn *d = dyn_of(t);
    const bool by_age = ev->ttl > 0, by_norm = ev->min_norm > 0.0f;
    const bool all = (ev->flags & EMB_DYN_EVICT_ALL) != 0;
    int64_t n = 0;
    for (int64_t row = 0; (by_age || by_norm) && row < d->used; row++) {
        if (d->rowid[row] < 0)
            continue;
        const bool old = by_age && d->step - d->last[row] > ev->ttl;
        const bool small = by_norm && row_norm(d, row) < (double)ev->min_norm;
        const bool go = all ? (old || !by_age) && (small || !by_norm) : old || small;
        if (go) {
            evict_row(d, row);
            n++;
        }
    }
    if (evicted)
        *evicted = n;
    return 0;
}

/* Rows in increasing id order: (id, row) pairs sorted. */
typedef struct IdRow {
    int64_t id, row;
} IdRow;

static int idrow_cmp(const void *a, const void *b)
{
    const int64_t x = ((const IdRow *)a)->id, y = ((const IdRow *)b)->id;
    return (x > y) - (x < y);
}

int emb_table_dynamic_export(const EmbTable *t, int64_t *ids, float *rows, int64_t row_stride,
                             int64_t cap, int64_t *n)
{
    int r = dyn_check(t);
    if (r)
        return r;
    EMB_CHECK_NULL(n);
    const Dyn *d = dyn_of(t);
    if (!ids) {
        *n = d->nrows;
        return 0;
    }
    EMB_CHECK_NULL(rows);
    if (row_stride < d->D)
        return emb__fail(EMB_ESTRIDE, "export: row_stride %lld < featuresize %d (%s)",
                         (long long)row_stride, (int)d->D, emb__table_label(t));
    if (!emb__rows_fit(EMB_MAX(cap, d->nrows), row_stride, d->D))
        return emb__fail(EMB_EOVERFLOW, "export: %lld rows of row_stride %lld overflow (%s)",
                         (long long)EMB_MAX(cap, d->nrows), (long long)row_stride,
                         emb__table_label(t));
    if (cap < d->nrows)
        return emb__fail(EMB_ERANGE, "export: room for %lld rows, %s has %lld", (long long)cap,
                         emb__table_label(t), (long long)d->nrows);
    IdRow *v = malloc((size_t)EMB_MAX(d->nrows, 1) * sizeof *v);
    if (!v)
        return emb__fail(EMB_ENOMEM, "out of memory to sort %lld ids", (long long)d->nrows);
    int64_t k = 0;
    for (int64_t row = 0; row < d->used; row++)
        if (d->rowid[row] >= 0)
            v[k++] = (IdRow){d->rowid[row], row};
    qsort(v, (size_t)k, sizeof *v, idrow_cmp);
    for (int64_t j = 0; j < k; j++) {
        ids[j] = v[j].id;
        const char *src = row_ptr(d, v[j].row);
        for (int32_t i = 0; i < d->D; i++)
            rows[j * row_stride + i] = emb__load(d->dtype, src, i);
    }
    free(v);
    *n = k;
    return 0;
}

int emb__dynamic_reserve_ids(EmbTable *t, const int64_t *ids, int64_t n)
{
    Dyn *d = dyn_of(t);
    IdRow *v = malloc((size_t)EMB_MAX(n, 1) * sizeof *v);
    if (!v)
        return emb__fail(EMB_ENOMEM, "out of memory for %lld ids", (long long)n);
    int64_t m = 0;
    for (int64_t k = 0; k < n; k++)
        if (find(d, ids[k]) < 0)
            v[m++] = (IdRow){ids[k], k};
    qsort(v, (size_t)m, sizeof *v, idrow_cmp);
    int64_t extra = 0;
    for (int64_t k = 0; k < m; k++)
        extra += k == 0 || v[k].id != v[k - 1].id;
    free(v);
    return reserve(d, extra, t);
}

int emb_table_dynamic_import(EmbTable *t, const int64_t *ids, const float *rows,
                             int64_t row_stride, int64_t n)
{
    int r = dyn_check(t);
    if (r)
        return r;
    if (n < 0)
        return emb__fail(EMB_EINVAL, "import: n %lld < 0 (%s)", (long long)n,
                         emb__table_label(t));
    if (n == 0)
        return 0;
    EMB_CHECK_NULL(ids);
    EMB_CHECK_NULL(rows);
    Dyn *d = dyn_of(t);
    if (row_stride < d->D)
        return emb__fail(EMB_ESTRIDE, "import: row_stride %lld < featuresize %d (%s)",
                         (long long)row_stride, (int)d->D, emb__table_label(t));
    if (!emb__rows_fit(n, row_stride, d->D))
        return emb__fail(EMB_EOVERFLOW, "import: %lld rows of row_stride %lld overflow (%s)",
                         (long long)n, (long long)row_stride, emb__table_label(t));
    r = emb__finite_check(t, rows, n, d->D, row_stride, "import rows");
    if (r)
        return r;
    IdRow *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return emb__fail(EMB_ENOMEM, "out of memory to sort %lld ids", (long long)n);
    int64_t extra = 0;
    for (int64_t k = 0; k < n; k++) {
        if (ids[k] < 0 || ids[k] == INT64_MAX) { /* as lookups and updates refuse them */
            free(v);
            return emb__fail(EMB_ERANGE, "import: id %lld at position %lld is not in "
                             "[0, %lld) (%s)", (long long)ids[k], (long long)k,
                             (long long)INT64_MAX, emb__table_label(t));
        }
        v[k] = (IdRow){ids[k], k};
        extra += find(d, ids[k]) < 0;
    }
    qsort(v, (size_t)n, sizeof *v, idrow_cmp);
    for (int64_t k = 1; k < n; k++)
        if (v[k].id == v[k - 1].id) {
            const int64_t twice = v[k].id;
            free(v);
            return emb__fail(EMB_EINVAL, "import: id %lld is given twice (%s)",
                             (long long)twice, emb__table_label(t));
        }
    free(v);
    r = reserve(d, extra, t);
    if (r)
        return r;
    for (int64_t k = 0; k < n; k++) {
        int64_t row = find(d, ids[k]);
        if (row < 0)
            row = create(d, ids[k]);
        char *dst = row_ptr(d, row);
        for (int32_t i = 0; i < d->D; i++)
            emb__store(d->dtype, dst, i, rows[k * row_stride + i]);
    }
    return 0;
}

/* ---- rows and stages for dynamic_ckpt.c (the contract's checkpoint entries) ------------- */

void emb__dynamic_each_row(const EmbTable *t, void (*fn)(void *ctx, int64_t row, int64_t id),
                           void *ctx)
{
    const Dyn *d = dyn_of(t);
    for (int64_t row = 0; row < d->used; row++)
        if (d->rowid[row] >= 0)
            fn(ctx, row, d->rowid[row]);
}

int64_t emb__dynamic_row_id(const EmbTable *t, int64_t r)
{
    return dyn_of(t)->rowid[r];
}

int64_t emb__dynamic_row_last(const EmbTable *t, int64_t r)
{
    return dyn_of(t)->last[r];
}

const uint16_t *emb__dynamic_sketch(const EmbTable *t, int64_t *width)
{
    const Dyn *d = dyn_of(t);
    *width = d->sketch ? d->sketch_width : 0;
    return d->sketch;
}

int emb__dynamic_stage(const EmbTable *t, int64_t n, EmbDynStage **out)
{
    const Dyn *d = dyn_of(t);
    if (d->max_rows > 0 && n > d->max_rows)
        return emb__fail(EMB_ENOMEM, "%s: the checkpoint holds %lld rows, more than its "
                         "max_rows %lld", emb__table_label(t), (long long)n,
                         (long long)d->max_rows);
    Dyn *s = calloc(1, sizeof *s);
    if (!s)
        return emb__fail(EMB_ENOMEM, "out of memory restoring %s", emb__table_label(t));
    s->refs = 1;
    s->free_head = -1;
    s->D = d->D;
    s->dtype = d->dtype;
    s->stride = d->stride;
    s->align = d->align;
    s->shift = d->shift;
    s->max_rows = d->max_rows;
    s->sketch_width = d->sketch_width;
    s->swidth = d->swidth;
    s->sstride = d->sstride;
    s->x.nslots = 16;
    s->x.slots = malloc((size_t)s->x.nslots * sizeof *s->x.slots);
    if (d->sketch)
        s->sketch = calloc((size_t)(SKETCH_DEPTH * d->sketch_width), sizeof *s->sketch);
    int r = s->x.slots && (!d->sketch || s->sketch)
                    ? 0 : emb__fail(EMB_ENOMEM, "out of memory restoring %s",
                                    emb__table_label(t));
    for (int64_t i = 0; !r && i < s->x.nslots; i++)
        s->x.slots[i] = (DynSlot){-1, 0};
    r = r ? r : reserve(s, EMB_MAX(n, 1), t);
    for (int64_t row = 0; !r && s->swidth && row < n; row++)
        memcpy(state_ptr(s, row), d->sinit, (size_t)s->swidth * sizeof(float));
    if (r) {
        dyn_unref(s);
        return r;
    }
    s->used = s->nrows = n;
    *out = (EmbDynStage *)s;
    return 0;
}

void *emb__dynamic_stage_row(EmbDynStage *st, int64_t k)
{
    return row_ptr((Dyn *)st, k);
}

float *emb__dynamic_stage_state(EmbDynStage *st, int64_t k)
{
    const Dyn *s = (Dyn *)st;
    return s->swidth ? state_ptr(s, k) : NULL;
}

int64_t *emb__dynamic_stage_last(EmbDynStage *st)
{
    return ((Dyn *)st)->last;
}

uint16_t *emb__dynamic_stage_sketch(EmbDynStage *st, int64_t *width)
{
    Dyn *s = (Dyn *)st;
    *width = s->sketch ? s->sketch_width : 0;
    return s->sketch;
}

int emb__dynamic_stage_ids(EmbDynStage *st, const int64_t *ids, int64_t step)
{
    Dyn *s = (Dyn *)st;
    if (step < 0)
        return -1;
    for (int64_t k = 0; k < s->nrows; k++) {
        if (ids[k] < 0 || (k > 0 && ids[k] <= ids[k - 1]) || s->last[k] < 0 ||
            s->last[k] > step)
            return -1;
        s->rowid[k] = ids[k];
        slot_insert(s->x.slots, s->x.nslots, ids[k], k);
    }
    s->step = step;
    return 0;
}

void emb__dynamic_stage_commit(EmbTable *t, EmbDynStage *st)
{
    Dyn *d = dyn_of(t), *s = (Dyn *)st;
#define SWAP(f)                                                                               \
    do {                                                                                      \
        __typeof__(d->f) tmp_ = d->f;                                                         \
        d->f = s->f;                                                                          \
        s->f = tmp_;                                                                          \
    } while (0)
    SWAP(x);
    SWAP(slabs);
    SWAP(sslabs);
    SWAP(nslabs);
    SWAP(slabs_cap);
    SWAP(rowid);
    SWAP(last);
    SWAP(free_head);
    SWAP(nfree);
    SWAP(used);
    SWAP(nrows);
    SWAP(sketch);
    SWAP(step);
#undef SWAP
    dyn_unref(s); /* the table's old storage */
}

void emb__dynamic_stage_free(EmbDynStage *st)
{
    if (st)
        dyn_unref((Dyn *)st);
}

int emb__dynamic_initialize(EmbTable *t, const EmbInitializer *in)
{
    Dyn *d = dyn_of(t);
    if (in->kind == EMB_INIT_UNIFORM_UNIT_SCALING)
        return emb__fail(EMB_EINVAL, "%s: UNIFORM_UNIT_SCALING needs a row count a dynamic "
                         "table does not have", emb__table_label(t));
    if (in->kind == EMB_INIT_NONE)
        return 0;
    d->init = *in;
    for (int64_t r = 0; r < d->used; r++) {
        if (d->rowid[r] < 0)
            continue;
        char *row = row_ptr(d, r);
        for (int32_t i = 0; i < d->D; i++)
            emb__store(d->dtype, row, i, emb__init_value(&d->init, INT64_MAX, d->rowid[r], i));
    }
    return 0;
}

/* ---- the operations tables -------------------------------------------------------------- */

static int dyn_save_check(const EmbTable *t)
{
    EmbTable *self = (EmbTable *)t;
    return emb__dynamic_save_check(t, &self, 1);
}

static int dyn_save_list(const EmbTable *t, bool state, EmbRowList *out)
{
    EmbTable *self = (EmbTable *)t;
    return emb__dynamic_save_list(t, &self, 1, state, out);
}

static void dyn_restore_extras(const EmbTable *t, EmbExtraTensor *extra, int *n)
{
    EmbTable *self = (EmbTable *)t;
    emb__dynamic_restore_extras(&self, 1, extra, n);
}

static int dyn_stage(const EmbTable *t, const EmbStageIn *in, EmbRowStage **out)
{
    EmbTable *self = (EmbTable *)t;
    return emb__dynamic_restore_stage(t, &self, 1, in, out);
}

static const EmbRowsFacet dyn_rows = {
    .keys = true,
    .column = dynamic_column,
    .acquire = dyn_resolve,
    .prefetch = dyn_prefetch,
    .missing_fails = dyn_missing_fails,
    .readable = dyn_readable,
    .release = emb__rows_release_none,
};

static const EmbKeyedFacet dyn_keyed = {
    .column_create = emb__dynamic_get_or_create,
    .reserve_ids = emb__dynamic_reserve_ids,
    .initialize = emb__dynamic_initialize,
    .update_prepare = dyn_update_prepare,
    .update_commit = dyn_update_commit,
    .update_cancel = emb__keyed_cancel_none,
    .update_rows = dyn_update_rows,
    .state_attach = emb__dynamic_state_attach,
    .state_is = dyn_state_is,
};

static const EmbListedFacet dyn_listed = {
    .list = dyn_save_list,
    .extras = dyn_restore_extras,
    .stage = dyn_stage,
    .stage_dst = emb__dynamic_stage_dst,
    .stage_commit = emb__dynamic_stage_commit_all,
    .stage_free = emb__dynamic_stage_free_all,
};

const EmbTableOps emb__dynamic_ops = {
    .kind = "dynamic",
    .rows = &dyn_rows,
    .keyed = &dyn_keyed,
    .listed = &dyn_listed,
    .save_check = dyn_save_check,
    .destroy = dyn_destroy,
};

static int state_save_check(const EmbTable *t)
{
    return emb__fail(EMB_EINVAL, "%s is the optimizer state of a dynamic table: save the "
                     "table with the optimizer (EmbSaverOptions.optimizer)",
                     emb__table_label(t));
}

static const EmbRowsFacet state_rows = {
    .keys = true,
    .column = state_column,
    .acquire = emb__rows_acquire_by_column,
    .prefetch = emb__rows_no_prefetch,
    .missing_fails = emb__rows_never_missing,
    .readable = emb__rows_all_readable,
    .release = emb__rows_release_none,
};

const EmbTableOps emb__dynamic_state_ops = {
    .kind = "dynamic state",
    .rows = &state_rows,
    .save_check = state_save_check,
    .destroy = view_destroy,
};
