/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_table.c — a tiered table's data movement (tier_impl.h): the file and its header,
 * resolving rows into the cache (batched reads, dirty victims written back first), the
 * scratch pad, release, prefetch and flush. Every entry runs under the table's lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtype.h"
#include "internal.h"
#include "tables/tier_impl.h"

/* Ids whose cache set (or pinned slot) is prefetched ahead of its find in the loops over
 * a batch (resolve, prefetch, release): a set is 2 random lines of an index of megabytes.
 * emb-bench tier:1x500000x64:25%, Adagrad, 3 interleaved pairs: tiered step 2.78-2.89 ms
 * against 2.97-3.29 without. */
#define SET_AHEAD 16

#define SP_BLOCK 64
#define TIER_SP_PINNED 0x80
#define TIER_SP_WB 0x40 /* a prefetch's write-back of the row is in flight (x->pfw) */

/* ---- errors ---------------------------------------------------------------------------- */

/* EMB_EIO naming the file, the rows of the failed requests among @n and the first errno. */
static int io_fail(const Tier *x, const EmbTierReq *r, int64_t n, const char *what)
{
    int64_t lo = INT64_MAX, hi = -1, bad = 0;
    int err = 0;
    for (int64_t i = 0; i < n; i++)
        if (r[i].res) {
            lo = EMB_MIN(lo, r[i].tag), hi = EMB_MAX(hi, r[i].tag), bad++;
            err = err ? err : -r[i].res;
        }
    const char *why = err == ENODATA ? "the file is shorter than the table" : strerror(err);
    return emb__fail(EMB_EIO, "%s: %s rows %lld..%lld (%lld failed) of %s: %s", x->label, what,
                     (long long)lo, (long long)hi, (long long)bad, x->path, why);
}

static int64_t count_failed(const EmbTierReq *r, int64_t n)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad += r[i].res != 0;
    return bad;
}

static bool any_failed(const EmbTierReq *r, int64_t n)
{
    return count_failed(r, n) != 0;
}

/* ---- the file -------------------------------------------------------------------------- */

/* Records are read at random: no readahead (the kernel's default reads up to 128 KiB
   around each missing page, 256 records of 512 bytes for one). Advice only. */
static void random_access(int fd)
{
    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
}

static int64_t rec_offset(const Tier *x, int64_t row)
{
    return emb__tier_rec_offset(x, row);
}

void emb__tier_set_layout(Tier *x)
{
    x->state_off = (x->rowbytes + 15) / 16 * 16;
    x->recbytes = x->state_off + 4 * (size_t)x->state_room;
}

/* The cache and the engine (on no file yet: fd -1 until the file is opened). */
static int setup_memory(Tier *x, int64_t cache_bytes, int policy, EmbTierIoKind kind)
{
    if (cache_bytes < (int64_t)x->recbytes || !x->recbytes)
        return emb__fail(EMB_EINVAL, "%s: a cache of %lld bytes (cache_bytes) holds no "
                         "record of %zu bytes", x->label, (long long)cache_bytes, x->recbytes);
    const int r = emb__tier_io_create(&x->io, -1, kind);
    /* no more rows than the table has: a larger cache would never fill */
    const int64_t rows = EMB_MAX(1, EMB_MIN(x->nrows, cache_bytes / (int64_t)x->recbytes));
    return r ? r : emb__tier_cache_init(&x->cache, rows, x->recbytes, policy);
}

int emb__tier_init(Tier *x, const char *path, bool create, int64_t cache_bytes, int policy,
                   EmbTierIoKind kind)
{
    x->fd = x->hold_fd = -1;
    x->step_nd = -1;
    pthread_mutex_init(&x->mu, NULL);
    x->path = strdup(path);
    if (!x->path)
        return emb__fail(EMB_ENOMEM, "out of memory for a tiered table");
    int r = 0;
    if (create) { /* everything that can fail but the file first */
        emb__tier_set_layout(x);
        r = setup_memory(x, cache_bytes, policy, kind);
        r = r ? r : emb__tier_open_file(x, true);
    } else {
        r = emb__tier_open_file(x, false);
        r = r ? r : setup_memory(x, cache_bytes, policy, kind);
    }
    if (!r) {
        emb__tier_io_set_fd(x->io, x->fd);
        posix_fadvise(x->fd, 0, 0, POSIX_FADV_RANDOM);
    }
    return r;
}

static void sp_free(TierScratch *sp)
{
    for (int64_t b = 0; b < sp->nblocks; b++)
        free(sp->blocks[b]);
    free(sp->blocks), free(sp->ids), free(sp->flags), free(sp->map);
    memset(sp, 0, sizeof *sp);
}

void emb__tier_fini(Tier *x)
{
    emb__tier_io_destroy(&x->io);
    emb__tier_cache_free(&x->cache);
    sp_free(&x->sp);
    emb__tier_close_file(x);
    free(x->path), free(x->pinned), free(x->rq), free(x->pf), free(x->pf_order), free(x->pfw);
    free(x->wslot), free(x->br), free(x->brow), free(x->step_uid), free(x->step_urow);
    free(x->mrow);
    for (int i = 0; i < TIER_DEDUPS; i++)
        free(x->dd[i].ids), free(x->dd[i].uid), free(x->dd[i].sbuf), free(x->dd[i].slot);
    pthread_mutex_destroy(&x->mu);
}

int emb__tier_file_rw(Tier *x, int fd, int64_t r0, int64_t n, void *buf, bool write)
{
    int64_t done = 0;
    while (done < n) { /* requests of at most 1 MiB */
        const int64_t k = EMB_MIN(n - done, EMB_MAX(1, (1 << 20) / (int64_t)x->recbytes));
        EmbTierReq q = {.buf = (char *)buf + done * (int64_t)x->recbytes,
                        .offset = rec_offset(x, r0 + done), .write = write,
                        .len = (uint32_t)(k * (int64_t)x->recbytes), .tag = r0 + done};
        if (fd < 0)
            emb__tier_io_run(x->io, &q, 1);
        else
            emb__tier_io_rw_fd(fd, &q);
        if (q.res) {
            const int e = -q.res;
            return emb__fail(EMB_EIO, "%s: %s rows %lld..%lld of %s: %s", x->label,
                             write ? "writing" : "reading", (long long)(r0 + done),
                             (long long)(r0 + done + k - 1), x->path,
                             e == ENODATA ? "the file is shorter than the table" : strerror(e));
        }
        done += k;
    }
    return 0;
}

/* ---- requests -------------------------------------------------------------------------- */

/* Room for @n requests in x->rq: 0 or EMB_ENOMEM. */
static int rq_room(Tier *x, int64_t n)
{
    if (n <= x->rq_cap)
        return 0;
    EmbTierReq *q = realloc(x->rq, (size_t)n * sizeof *q);
    x->rq = q ? q : x->rq;
    int64_t *v = q ? realloc(x->wslot, (size_t)n * sizeof *v) : NULL;
    if (!v)
        return emb__fail(EMB_ENOMEM, "%s: out of memory for %lld I/O requests", x->label,
                         (long long)n);
    x->wslot = v, x->rq_cap = n;
    return 0;
}

static EmbTierReq req(const Tier *x, int64_t row, void *buf, bool write)
{
    return (EmbTierReq){.buf = buf, .offset = rec_offset(x, row), .len = (uint32_t)x->recbytes,
                        .write = write, .tag = row};
}

/* ---- the scratch pad ------------------------------------------------------------------- */

static uint64_t mix(int64_t id)
{
    uint64_t z = (uint64_t)id * 0x9e3779b97f4a7c15ull;
    return z ^ (z >> 29);
}

static char *sp_row(const Tier *x, int64_t k)
{
    return x->sp.blocks[k / SP_BLOCK] + (size_t)(k % SP_BLOCK) * x->recbytes;
}

static int64_t sp_find(const TierScratch *sp, int64_t id)
{
    if (!sp->n)
        return -1;
    for (uint64_t h = mix(id) & (uint64_t)(sp->mapcap - 1);; h = (h + 1) & (uint64_t)(sp->mapcap - 1)) {
        const int64_t v = sp->map[h];
        if (!v)
            return -1;
        if (sp->ids[v - 1] == id)
            return v - 1;
    }
}

static void sp_map_put(TierScratch *sp, int64_t k)
{
    uint64_t h = mix(sp->ids[k]) & (uint64_t)(sp->mapcap - 1);
    while (sp->map[h])
        h = (h + 1) & (uint64_t)(sp->mapcap - 1);
    sp->map[h] = k + 1;
}

/* Rebuilds the map for the n rows (at a load <= 1/2); it never shrinks, so a rebuild for
   fewer rows cannot fail. */
static int sp_rehash(TierScratch *sp, int64_t need)
{
    int64_t cap = EMB_MAX(16, sp->mapcap);
    while (cap < 2 * need)
        cap *= 2;
    if (cap != sp->mapcap) {
        int64_t *m = calloc((size_t)cap, sizeof *m);
        if (!m)
            return EMB_ENOMEM;
        free(sp->map);
        sp->map = m, sp->mapcap = cap;
    } else {
        memset(sp->map, 0, (size_t)cap * sizeof *sp->map);
    }
    for (int64_t k = 0; k < sp->n; k++)
        sp_map_put(sp, k);
    return 0;
}

/* Room for one more scratch row: 0 or EMB_ENOMEM (nothing changed). */
static int sp_room(Tier *x)
{
    TierScratch *sp = &x->sp;
    if (sp->n == sp->cap) {
        const int64_t cap = sp->cap ? 2 * sp->cap : SP_BLOCK;
        int64_t *ids = realloc(sp->ids, (size_t)cap * sizeof *ids);
        sp->ids = ids ? ids : sp->ids;
        uint8_t *fl = ids ? realloc(sp->flags, (size_t)cap) : NULL;
        sp->flags = fl ? fl : sp->flags;
        char **bl = fl ? realloc(sp->blocks, (size_t)(cap / SP_BLOCK) * sizeof *bl) : NULL;
        sp->blocks = bl ? bl : sp->blocks;
        if (!bl)
            return EMB_ENOMEM;
        sp->cap = cap;
    }
    if (sp->n == sp->nblocks * SP_BLOCK) {
        char *b = malloc((size_t)SP_BLOCK * x->recbytes);
        if (!b)
            return EMB_ENOMEM;
        sp->blocks[sp->nblocks++] = b;
    }
    return 2 * (sp->n + 1) > sp->mapcap ? sp_rehash(sp, sp->n + 1) : 0;
}

/* ---- pins ------------------------------------------------------------------------------ */

static int pin_room(Tier *x, int64_t n)
{
    if (x->npinned + n <= x->pinned_cap)
        return 0;
    const int64_t cap = EMB_MAX(2 * x->pinned_cap, x->npinned + n + 64);
    int64_t *p = realloc(x->pinned, (size_t)cap * sizeof *p);
    if (!p)
        return EMB_ENOMEM;
    x->pinned = p, x->pinned_cap = cap;
    return 0;
}

/* Pins cache slot @s (once per operation); the room was made by pin_room. */
static void pin_slot(Tier *x, int64_t s)
{
    if (!x->cache.slots[s].pins) {
        x->cache.slots[s].pins = 1;
        x->pinned[x->npinned++] = s;
    }
}

static void pin_sp(Tier *x, int64_t k)
{
    if (!(x->sp.flags[k] & TIER_SP_PINNED)) {
        x->sp.flags[k] |= TIER_SP_PINNED;
        x->pinned[x->npinned++] = -1 - k;
    }
}

/* Unpins the pins of indices [from, to) (the list itself is the caller's). */
static void unpin_from(Tier *x, int64_t from, int64_t to)
{
    for (int64_t i = from; i < to; i++) {
        if (i + SET_AHEAD < to && x->pinned[i + SET_AHEAD] >= 0)
            __builtin_prefetch(&x->cache.slots[x->pinned[i + SET_AHEAD]], 1);
        const int64_t p = x->pinned[i];
        if (p >= 0)
            x->cache.slots[p].pins = 0;
        else
            x->sp.flags[-1 - p] &= (uint8_t)~TIER_SP_PINNED;
    }
}

/* ---- prefetch bookkeeping -------------------------------------------------------------- */

static int64_t slot_of(const Tier *x, const void *buf)
{
    return (int64_t)(((const char *)buf - x->cache.data) / (ptrdiff_t)x->cache.stride);
}

/* Whether the record @buf is a cache slot's (else the scratch pad's). */
static bool in_cache(const Tier *x, const void *buf)
{
    const char *p = buf;
    return p >= x->cache.data && p < x->cache.data + (size_t)x->cache.nslots * x->cache.stride;
}

/* Marks cache slot @s used (its LRU tick or LFU count), no longer only read ahead, and
   dirty with @dirty. */
static void use_slot(Tier *x, int64_t s, uint8_t dirty)
{
    emb__tier_cache_touch(&x->cache, s);
    x->cache.slots[s].flags = (uint8_t)((x->cache.slots[s].flags & ~EMB_TIER_AHEAD) | dirty);
}

/* Settles the prefetch's reads once they are all done (with @wait, waits for them): each
   slot becomes valid, or free when its read failed (a resolve reads it again and reports). */
static void pf_settle(Tier *x, bool wait)
{
    if ((!x->npf && !x->npfw) || (!wait && emb__tier_io_pending(x->io)))
        return;
    emb__tier_io_wait(x->io);
    for (int64_t i = 0; i < x->npfw; i++) { /* parked victims: clean, or dirty to retry */
        const int64_t k = sp_find(&x->sp, x->pfw[i].tag);
        if (k < 0)
            continue; /* cannot happen: a parked row stays until its write is settled */
        x->sp.flags[k] &= (uint8_t)~TIER_SP_WB;
        x->sp.flags[k] |= x->pfw[i].res ? EMB_TIER_DIRTY : 0;
        x->wb_failed |= x->pfw[i].res != 0;
        x->st.rows_written += !x->pfw[i].res;
    }
    x->npfw = 0;
    for (int64_t i = 0; i < x->npf; i++) {
        EmbTierSlot *e = &x->cache.slots[slot_of(x, x->pf[i].buf)];
        if (!(e->flags & EMB_TIER_LOADING) || e->id != x->pf[i].tag)
            continue;
        e->flags = x->pf[i].res ? 0 : EMB_TIER_VALID | EMB_TIER_AHEAD;
        x->st.rows_read += !x->pf[i].res;
    }
    x->npf = 0;
}

/* ---- resolve --------------------------------------------------------------------------- */

/* Undoes a failed resolve: the rows this call started loading are dropped, the victims
   (parked in the scratch pad) go back to their slots (dirty where their write failed), the
   call's scratch rows and pins are dropped. */
static void resolve_undo(Tier *x, const EmbTierReq *w, int64_t nw, const EmbTierReq *rd,
                         int64_t nr, int64_t mark, int64_t sp0)
{
    unpin_from(x, mark, x->npinned);
    x->npinned = mark;
    for (int64_t i = 0; i < nr; i++)
        if (in_cache(x, rd[i].buf))
            x->cache.slots[slot_of(x, rd[i].buf)].flags = 0;
    for (int64_t i = 0; i < nw; i++) {
        EmbTierSlot *e = &x->cache.slots[x->wslot[i]];
        memcpy(emb__tier_cache_row(&x->cache, x->wslot[i]), w[i].buf, x->recbytes);
        e->id = w[i].tag;
        e->flags = EMB_TIER_VALID | (w[i].res ? EMB_TIER_DIRTY : 0);
    }
    if (x->sp.n != sp0) {
        x->sp.n = sp0;
        sp_rehash(&x->sp, sp0); /* cannot fail: the map only shrinks or stays */
    }
}

/* Waits for the prefetch's read into slot @s (its index found by bisection of pf_order)
   and settles that slot alone: the step waits only for the rows it needs. */
static void pf_wait_slot(Tier *x, int64_t s)
{
    int64_t lo = 0, hi = x->npf;
    while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        if (slot_of(x, x->pf[x->pf_order[mid]].buf) < s)
            lo = mid + 1;
        else
            hi = mid;
    }
    EmbTierReq *q = lo < x->npf ? &x->pf[x->pf_order[lo]] : NULL;
    if (!q || slot_of(x, q->buf) != s) {
        pf_settle(x, true); /* cannot happen: every LOADING slot not pinned is the prefetch's */
        return;
    }
    emb__tier_io_wait_one(x->io, q);
    EmbTierSlot *e = &x->cache.slots[s];
    e->flags = q->res ? 0 : EMB_TIER_VALID | EMB_TIER_AHEAD;
    x->st.rows_read += !q->res;
    q->tag = -1; /* settled */
}

/* Row of a hit (cache or scratch, pinned; @dirty: marked dirty), or NULL for a miss. @s0:
   the slot a prefetch found or gave @id (-1: none), looked at before the id's set. */
static char *hit(Tier *x, int64_t id, uint8_t dirty, int64_t s0)
{
    int64_t s = s0 >= 0 && x->cache.slots[s0].id == id &&
                        (x->cache.slots[s0].flags & (EMB_TIER_VALID | EMB_TIER_LOADING))
                    ? s0
                    : emb__tier_cache_find(&x->cache, id);
    if (s >= 0 && (x->cache.slots[s].flags & EMB_TIER_LOADING) && !x->cache.slots[s].pins) {
        pf_wait_slot(x, s); /* a prefetched row still in flight */
        s = emb__tier_cache_find(&x->cache, id);
    }
    if (s >= 0) {
        use_slot(x, s, dirty);
        pin_slot(x, s);
        return emb__tier_cache_row(&x->cache, s);
    }
    int64_t k = sp_find(&x->sp, id);
    if (k >= 0 && (x->sp.flags[k] & TIER_SP_WB)) {
        /* a row a prefetch parked, its write-back still in flight from these bytes: the
           caller may write the row, so that write completes first */
        pf_settle(x, true);
        k = sp_find(&x->sp, id);
    }
    if (k < 0)
        return NULL;
    x->sp.flags[k] |= dirty;
    pin_sp(x, k);
    return sp_row(x, k);
}

/* Copies the dirty row of slot @v into the scratch pad, its write-back queued in w (slot
   in x->wslot): sent with the reads, as the slot is free. false: no memory. */
static bool park(Tier *x, int64_t v, EmbTierReq *w, int64_t *nw)
{
    if (sp_room(x))
        return false;
    const int64_t k = x->sp.n++;
    x->sp.ids[k] = x->cache.slots[v].id;
    x->sp.flags[k] = EMB_TIER_VALID;
    sp_map_put(&x->sp, k);
    memcpy(sp_row(x, k), emb__tier_cache_row(&x->cache, v), x->recbytes);
    x->wslot[*nw] = v;
    w[(*nw)++] = req(x, x->sp.ids[k], sp_row(x, k), true);
    return true;
}

/* A slot (or a scratch row) for the missing row @id, pinned, its read queued in rd and a
   dirty victim parked (park). NULL: out of memory for the scratch pad. */
static char *place(Tier *x, int64_t id, uint8_t dirty, EmbTierReq *w, int64_t *nw,
                   EmbTierReq *rd, int64_t *nr)
{
    char *row;
    const int64_t v = emb__tier_cache_victim(&x->cache, id, 0);
    if (v >= 0) {
        EmbTierSlot *e = &x->cache.slots[v];
        row = emb__tier_cache_row(&x->cache, v);
        if ((e->flags & EMB_TIER_DIRTY) && !park(x, v, w, nw))
            return NULL;
        x->st.evictions += (e->flags & EMB_TIER_VALID) != 0;
        emb__tier_cache_install(&x->cache, v, id, EMB_TIER_LOADING);
        pin_slot(x, v);
    } else {
        if (sp_room(x))
            return NULL;
        const int64_t k = x->sp.n++;
        x->sp.ids[k] = id;
        x->sp.flags[k] = EMB_TIER_VALID | dirty;
        sp_map_put(&x->sp, k);
        pin_sp(x, k);
        row = sp_row(x, k);
        x->st.scratch_rows++;
    }
    rd[(*nr)++] = req(x, id, row, false);
    return row;
}

static void release_locked(Tier *x);
static int wb_retry(Tier *x);

/* Resolves and pins the rows of @ids into @rows (NULL: not handed out); with @dirty they
   are marked dirty as they are found or read (an UPDATE: one pass, no second find).
   @hint (NULL: none): each id's slot when its prefetch found or gave it one (hit()). */
static int resolve_locked(Tier *x, const int64_t *ids, int64_t n, char **rows, bool dirty,
                          const int64_t *hint)
{
    const uint8_t d = dirty ? EMB_TIER_DIRTY : 0;
    if (pin_room(x, n) || rq_room(x, 2 * n))
        return emb__fail(EMB_ENOMEM, "%s: out of memory for %lld rows", x->label, (long long)n);
    const int64_t mark = x->npinned, sp0 = x->sp.n;
    EmbTierReq *w = x->rq, *rd = x->rq + n;
    int64_t nw = 0, nr = 0;
    for (int64_t k = 0; k < n; k++) {
        if (k + SET_AHEAD < n && hint && hint[k + SET_AHEAD] >= 0)
            __builtin_prefetch(&x->cache.slots[hint[k + SET_AHEAD]], 1);
        else if (k + SET_AHEAD < n)
            emb__tier_cache_prefetch(&x->cache, ids[k + SET_AHEAD]);
        if (!x->counted) /* admission counts each distinct id once an operation */
            emb__tier_cache_count(&x->cache, ids[k]);
        char *row = hit(x, ids[k], d, hint ? hint[k] : -1);
        x->st.hits += row && !x->counted;
        if (!row && !(row = place(x, ids[k], d, w, &nw, rd, &nr))) {
            for (int64_t i = 0; i < nw; i++)
                w[i].res = -ENOMEM; /* not written: the victims go back dirty */
            resolve_undo(x, w, nw, rd, nr, mark, sp0);
            return emb__fail(EMB_ENOMEM, "%s: out of memory for the scratch pad", x->label);
        }
        if (rows)
            rows[k] = row;
    }
    /* a write-back into a file cut by someone else would leave a hole of rows reading 0 */
    const int cut = nw ? emb__tier_check_size(x) : 0;
    if (cut) {
        for (int64_t i = 0; i < nw; i++)
            w[i].res = -EIO; /* not written: the victims go back dirty */
        resolve_undo(x, w, nw, rd, nr, mark, sp0);
        return cut;
    }
    x->st.misses += nr;
    emb__tier_io_submit(x->io, w, nw); /* from the parked copies: with the reads */
    emb__tier_io_run(x->io, rd, nr);
    for (int64_t i = 0; i < nw; i++)
        emb__tier_io_wait_one(x->io, &w[i]);
    int r = any_failed(w, nw) ? io_fail(x, w, nw, "writing back") : 0;
    r = r ? r : any_failed(rd, nr) ? io_fail(x, rd, nr, "reading") : 0;
    pf_settle(x, false);
    x->st.rows_written += nw - count_failed(w, nw);
    if (r) {
        resolve_undo(x, w, nw, rd, nr, mark, sp0);
        return r;
    }
    for (int64_t i = 0; i < nr; i++)
        if (in_cache(x, rd[i].buf))
            x->cache.slots[slot_of(x, rd[i].buf)].flags = EMB_TIER_VALID | d;
    x->st.rows_read += nr;
    return 0;
}

int emb__tier_resolve(Tier *x, const int64_t *ids, int64_t n, char **rows, bool dirty)
{
    pthread_mutex_lock(&x->mu);
    if (x->release_pending || x->held)
        release_locked(x);
    int r = wb_retry(x);
    r = r ? r : resolve_locked(x, ids, n, rows, dirty, NULL);
    pthread_mutex_unlock(&x->mu);
    return r;
}

/* The in-range ids of a batch's ids [k0, k1) into x->ids: their count, or -1 (no memory). */
static int64_t batch_ids(Tier *x, const void *ids, bool id32, int64_t k0, int64_t k1)
{
    if (k1 - k0 > x->ids_cap) {
        int64_t *p = realloc(x->ids, (size_t)(k1 - k0) * sizeof *p);
        if (!p)
            return -1;
        x->ids = p, x->ids_cap = k1 - k0;
    }
    int64_t m = 0;
    for (int64_t k = k0; k < k1; k++) {
        const int64_t id = id32 ? ((const int32_t *)ids)[k] : ((const int64_t *)ids)[k];
        if (id >= 0 && id < x->nrows)
            x->ids[m++] = id;
    }
    return m;
}

/* Batches of fewer ids are resolved as they come (a sort of so few would not pay; the
   tests' batches, 168 ids, are deduplicated). */
#define DEDUP_MIN 64

/*
 * The distinct ids of x->ids[0, m) (emb_table_prefetch's, a lookup's batch), so that a
 * batch's passes find each row once rather than at each of its ids (Zipf(1.05) batches of
 * bags of 20: a third of the ids distinct): sorted by a radix sort of id << 32 | position
 * (sort.c) into x->sorted, the distinct ids ascending into x->uid. Returns their count, or
 * -1 where it does not apply (a small batch, ids of 2^32 and up, no memory: the caller goes
 * on with every id).
 */
static int64_t distinct_ids(Tier *x, int64_t m)
{
    if (m < DEDUP_MIN || m > UINT32_MAX || x->nrows > ((int64_t)1 << 32))
        return -1;
    if (m > x->u_cap) {
        int64_t *u = realloc(x->uid, (size_t)m * sizeof *u);
        if (u)
            x->uid = u;
        uint64_t *b = realloc(x->sbuf, (size_t)(2 * m) * sizeof *b);
        if (b)
            x->sbuf = b;
        int64_t *sl = realloc(x->uslot, (size_t)m * sizeof *sl);
        if (sl)
            x->uslot = sl;
        if (!u || !b || !sl)
            return -1;
        x->u_cap = m;
    }
    if (m > x->urow_cap) {
        char **r = realloc(x->urow, (size_t)m * sizeof *r);
        if (!r)
            return -1;
        x->urow = r, x->urow_cap = m;
    }
    for (int64_t k = 0; k < m; k++)
        x->sbuf[k] = (uint64_t)x->ids[k] << 32 | (uint64_t)k;
    const uint64_t *a = emb__radix_sort(x->sbuf, x->sbuf + m, m, emb__radix_bits(x->nrows));
    int64_t nd = 0;
    for (int64_t j = 0; j < m; j++)
        if (j == 0 || a[j] >> 32 != a[j - 1] >> 32)
            x->uid[nd++] = (int64_t)(a[j] >> 32);
    x->sorted = a;
    return nd;
}

/* Swaps the working buffers of a batch's ids and distinct ids with @e's. */
static void dd_swap(Tier *x, TierDedup *e)
{
    int64_t *ids = x->ids, *uid = x->uid, *sl = x->uslot, ids_cap = x->ids_cap, u_cap = x->u_cap;
    uint64_t *sbuf = x->sbuf;
    x->ids = e->ids, x->uid = e->uid, x->uslot = e->slot, x->sbuf = e->sbuf;
    x->ids_cap = e->ids_cap, x->u_cap = e->u_cap;
    e->ids = ids, e->uid = uid, e->slot = sl, e->sbuf = sbuf, e->ids_cap = ids_cap;
    e->u_cap = u_cap;
}

/* Keeps the working batch (a prefetch's: @m ids, @nd distinct) for its lookup. */
static void dd_keep(Tier *x, int64_t m, int64_t nd)
{
    TierDedup *e = &x->dd[x->dd_next];
    x->dd_next = (x->dd_next + 1) % TIER_DEDUPS;
    if (e->valid) /* never looked up: its rows no longer protected */
        emb__tier_cache_protect_all(&x->cache, e->slot, e->nd, -1);
    dd_swap(x, e);
    e->sorted = x->sorted, e->m = m, e->nd = nd, e->valid = true;
    emb__tier_cache_protect_all(&x->cache, e->slot, nd, 1); /* kept until its look-up */
    x->sorted = NULL;
}

/* The distinct ids of the working batch x->ids[0, m) when a prefetch kept them (then in the
   working buffers, as distinct_ids leaves them), else -1. */
static int64_t dd_take(Tier *x, int64_t m)
{
    for (int i = 0; i < TIER_DEDUPS; i++) {
        TierDedup *e = &x->dd[i];
        if (!e->valid || e->m != m || memcmp(e->ids, x->ids, (size_t)m * sizeof *x->ids))
            continue;
        if (m > x->urow_cap) {
            char **r = realloc(x->urow, (size_t)m * sizeof *r);
            if (!r)
                return -1;
            x->urow = r, x->urow_cap = m;
        }
        emb__tier_cache_protect_all(&x->cache, e->slot, e->nd, -1);
        dd_swap(x, e);
        x->sorted = e->sorted;
        e->valid = false, e->sorted = NULL;
        return e->nd;
    }
    return -1;
}

/* Room for one more batch range of @n records: 0 or EMB_ENOMEM. */
static int range_room(Tier *x, int64_t n)
{
    if (x->nbr == x->br_cap) {
        const int64_t cap = EMB_MAX(8, 2 * x->br_cap);
        struct TierRange *b = realloc(x->br, (size_t)cap * sizeof *b);
        if (!b)
            return EMB_ENOMEM;
        x->br = b, x->br_cap = cap;
    }
    if (x->nbrow + n > x->brow_cap) {
        const int64_t cap = EMB_MAX(2 * x->brow_cap, x->nbrow + n);
        char **r = realloc(x->brow, (size_t)cap * sizeof *r);
        if (!r)
            return EMB_ENOMEM;
        x->brow = r, x->brow_cap = cap;
    }
    return 0;
}

/* Spreads the @m records of the in-range ids of [k0, k1) (at brow[at ..]) to their
   positions, NULL at ids out of range (backwards: in place). */
static void spread_rows(Tier *x, const void *ids, bool id32, int64_t k0, int64_t k1, int64_t m)
{
    char **r = x->brow + x->nbrow;
    for (int64_t k = k1 - 1, j = m - 1; k >= k0; k--) {
        const int64_t id = id32 ? ((const int32_t *)ids)[k] : ((const int64_t *)ids)[k];
        r[k - k0] = id >= 0 && id < x->nrows ? r[j--] : NULL;
    }
}

/* Keeps the distinct ids of the operation's first batch range and their records (urow) for
   a held step; a second range ends that (step_nd -1). */
static void keep_step(Tier *x, int64_t nd)
{
    x->step_nd = -1;
    if (nd < 0 || x->nbr)
        return;
    if (nd > x->step_cap) {
        int64_t *u = realloc(x->step_uid, (size_t)nd * sizeof *u);
        if (u)
            x->step_uid = u;
        char **r = u ? realloc(x->step_urow, (size_t)nd * sizeof *r) : NULL;
        if (!r)
            return; /* no memory: no held step, the update finds its rows */
        x->step_urow = r, x->step_cap = nd;
    }
    memcpy(x->step_uid, x->uid, (size_t)nd * sizeof *x->uid);
    memcpy(x->step_urow, x->urow, (size_t)nd * sizeof *x->urow);
    x->step_nd = nd;
}

int emb__tier_resolve_batch(Tier *x, const void *ids, bool id32, int64_t k0, int64_t k1)
{
    pthread_mutex_lock(&x->mu);
    if (x->release_pending || x->held)
        release_locked(x);
    int r = wb_retry(x);
    const int64_t m = r || range_room(x, k1 - k0) ? -1 : batch_ids(x, ids, id32, k0, k1);
    int64_t nd = m < 0 ? -1 : dd_take(x, m); /* sorted by its prefetch, slots found */
    const bool taken = nd >= 0;
    nd = m < 0 || taken ? nd : distinct_ids(x, m);
    r = r        ? r
        : m < 0  ? emb__fail(EMB_ENOMEM, "%s: out of memory for %lld ids", x->label,
                             (long long)(k1 - k0))
        : nd < 0 ? resolve_locked(x, x->ids, m, x->brow + x->nbrow, false, NULL)
                 : resolve_locked(x, x->uid, nd, x->urow, false, taken ? x->uslot : NULL);
    if (!r && nd >= 0) { /* each id's record, in the batch's order */
        char **row = x->brow + x->nbrow;
        for (int64_t j = 0, d = -1; j < m; j++) {
            d += j == 0 || x->sorted[j] >> 32 != x->sorted[j - 1] >> 32;
            row[(uint32_t)x->sorted[j]] = x->urow[d];
        }
    }
    if (!r) {
        keep_step(x, nd);
        spread_rows(x, ids, id32, k0, k1, m);
        x->br[x->nbr++] = (struct TierRange){ids, k0, k1, x->nbrow};
        x->nbrow += k1 - k0;
        x->counted = true; /* the operation's resolves of these rows are not counted again */
    }
    pthread_mutex_unlock(&x->mu);
    return r;
}

bool emb__tier_resolved_span(Tier *x, const void *ids, int64_t k0, int64_t n, char **rows)
{
    pthread_mutex_lock(&x->mu);
    const struct TierRange *g = NULL;
    for (int64_t i = 0; i < x->nbr && !g; i++)
        if (x->br[i].ids == ids && x->br[i].k0 <= k0 && k0 + n <= x->br[i].k1)
            g = &x->br[i];
    bool all = g != NULL;
    for (int64_t k = 0; all && k < n; k++)
        all = (rows[k] = x->brow[g->at + k0 - g->k0 + k]) != NULL;
    pthread_mutex_unlock(&x->mu);
    return all;
}

int emb__tier_column(Tier *x, int64_t id, char **row, bool dirty)
{
    pthread_mutex_lock(&x->mu);
    const int r = resolve_locked(x, &id, 1, row, dirty, NULL);
    pthread_mutex_unlock(&x->mu);
    return r;
}

/* ---- release, flush, prefetch ---------------------------------------------------------- */

/* Writes back the scratch pad's unpinned dirty rows and drops its clean unpinned ones;
   rows whose write fails stay (dirty, x->wb_failed), to be retried by the next operation
   (wb_retry) or flush. Returns the writes it made (x->rq). */
static int64_t sp_settle(Tier *x)
{
    TierScratch *sp = &x->sp;
    int64_t nw = 0;
    x->wb_failed &= sp->n > 0; /* nothing left to write */
    if (!sp->n || rq_room(x, sp->n))
        return 0;
    for (int64_t k = 0; k < sp->n; k++)
        if ((sp->flags[k] & (EMB_TIER_DIRTY | TIER_SP_PINNED | TIER_SP_WB)) == EMB_TIER_DIRTY)
            x->rq[nw++] = req(x, sp->ids[k], sp_row(x, k), true);
    emb__tier_io_run(x->io, x->rq, nw);
    for (int64_t i = 0, k = 0; i < nw; i++) {
        while (sp_row(x, k) != x->rq[i].buf)
            k++;
        if (!x->rq[i].res)
            sp->flags[k] &= (uint8_t)~EMB_TIER_DIRTY, x->st.rows_written++;
    }
    x->wb_failed = any_failed(x->rq, nw);
    for (int64_t k = 0; k < sp->n; k++)
        if (sp->flags[k] & (TIER_SP_PINNED | TIER_SP_WB))
            return nw; /* rows handed out or being written stay where they are */
    int64_t m = 0;
    for (int64_t k = 0; k < sp->n; k++) {
        if (!(sp->flags[k] & (EMB_TIER_DIRTY | TIER_SP_PINNED)))
            continue;
        if (m != k) {
            memcpy(sp_row(x, m), sp_row(x, k), x->recbytes);
            sp->ids[m] = sp->ids[k], sp->flags[m] = sp->flags[k];
        }
        m++;
    }
    sp->n = m;
    sp_rehash(sp, m);
    return nw;
}

/* At a resolve: the scratch rows whose write-back failed (at a release or under a
   prefetch) are written again; if that fails, an error naming the file and rows, and the
   resolve does nothing (the rows stay dirty; the call can be retried). A disk that takes
   no write-backs stops the training at the next step rather than filling the pad. */
static int wb_retry(Tier *x)
{
    if (!x->wb_failed)
        return 0;
    pf_settle(x, true);
    const int64_t nw = sp_settle(x);
    if (!x->wb_failed)
        return 0;
    return nw ? io_fail(x, x->rq, nw, "writing back")
              : emb__fail(EMB_ENOMEM, "%s: out of memory for a write-back", x->label);
}

/* Ends the operation: unpins its rows (with release_pending, only those pinned before the
   update's commit: column() calls since then may belong to the next operation). */
static void release_locked(Tier *x)
{
    const int64_t upto = x->release_pending ? x->release_mark : x->npinned;
    x->release_pending = false;
    x->counted = false;
    x->held = false;
    x->step_nd = -1;
    x->nbr = x->nbrow = 0;
    pf_settle(x, false);
    const int64_t rest = x->npinned - upto;
    unpin_from(x, 0, upto);
    memmove(x->pinned, x->pinned + upto, (size_t)rest * sizeof *x->pinned);
    x->npinned = rest;
    sp_settle(x);
}

void emb__tier_release(Tier *x)
{
    pthread_mutex_lock(&x->mu);
    if (x->nbr == 1 && x->step_nd >= 0 && !x->release_pending) {
        /* a lookup of one deduplicated range: held (its pins kept) for its update */
        x->held = true;
        x->counted = false;
        x->nbr = x->nbrow = 0; /* no span of a later operation takes these pointers */
    } else {
        release_locked(x);
    }
    pthread_mutex_unlock(&x->mu);
}

/* The index in the held step's distinct ids of @id, or -1; @cur: where the last search
   ended (an update's ids come ascending: the next one is there). */
static int64_t step_find(const Tier *x, int64_t id, int64_t *cur)
{
    const int64_t *u = x->step_uid, nd = x->step_nd;
    const int64_t c = *cur;
    if (c < nd && u[c] == id) {
        *cur = c + 1;
        return c;
    }
    int64_t lo = c > 0 && c <= nd && u[c - 1] < id ? c : 0, hi = nd;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (u[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < nd && u[lo] == id) {
        *cur = lo + 1;
        return lo;
    }
    return -1;
}

/* The update's resolve: rows of the held step are pinned already and found in its distinct
   ids (marked dirty and used, as hit() does); the others, if any, go through resolve. */
static int resolve_update_locked(Tier *x, const int64_t *ids, int64_t n, char **rows)
{
    if (!x->held)
        return resolve_locked(x, ids, n, rows, true, NULL);
    int64_t cur = 0, nmiss = 0;
    for (int64_t k = 0; k < n; k++) {
        if (cur + SET_AHEAD < x->step_nd && in_cache(x, x->step_urow[cur + SET_AHEAD]))
            __builtin_prefetch(&x->cache.slots[slot_of(x, x->step_urow[cur + SET_AHEAD])], 1);
        const int64_t j = step_find(x, ids[k], &cur);
        char *row = j < 0 ? NULL : x->step_urow[j];
        rows[k] = row;
        if (!row)
            nmiss++;
        else if (in_cache(x, row))
            use_slot(x, slot_of(x, row), EMB_TIER_DIRTY);
        else
            x->sp.flags[sp_find(&x->sp, ids[k])] |= EMB_TIER_DIRTY;
    }
    x->st.hits += n - nmiss;
    if (!nmiss)
        return 0;
    if (nmiss > x->mrow_cap) {
        char **mr = realloc(x->mrow, (size_t)nmiss * sizeof *mr);
        if (!mr)
            return emb__fail(EMB_ENOMEM, "%s: out of memory for %lld rows", x->label,
                             (long long)n);
        x->mrow = mr, x->mrow_cap = nmiss;
    }
    if (nmiss > x->ids_cap) {
        int64_t *mi = realloc(x->ids, (size_t)nmiss * sizeof *mi);
        if (!mi)
            return emb__fail(EMB_ENOMEM, "%s: out of memory for %lld rows", x->label,
                             (long long)n);
        x->ids = mi, x->ids_cap = nmiss;
    }
    for (int64_t k = 0, i = 0; k < n; k++)
        if (!rows[k])
            x->ids[i++] = ids[k];
    const int r = resolve_locked(x, x->ids, nmiss, x->mrow, true, NULL);
    for (int64_t k = 0, i = 0; k < n && !r; k++)
        if (!rows[k])
            rows[k] = x->mrow[i++];
    return r;
}

int emb__tier_resolve_update(Tier *x, const int64_t *ids, int64_t n, char **rows)
{
    pthread_mutex_lock(&x->mu);
    if (x->release_pending)
        release_locked(x);
    int r = wb_retry(x);
    r = r ? r : resolve_update_locked(x, ids, n, rows);
    pthread_mutex_unlock(&x->mu);
    return r;
}

void emb__tier_release_later(Tier *x)
{
    pthread_mutex_lock(&x->mu);
    x->release_pending = true;
    x->release_mark = x->npinned;
    pthread_mutex_unlock(&x->mu);
}

/* Writes the dirty rows back and syncs; they are marked clean only once the sync has
   succeeded (a failed write-back or sync may have lost any of them: all are written again). */
static int flush_locked(Tier *x)
{
    pf_settle(x, true);
    if (rq_room(x, x->cache.nslots + x->sp.n))
        return emb__fail(EMB_ENOMEM, "%s: out of memory for a flush", x->label);
    const int cut = emb__tier_check_size(x); /* a write past its end would leave holes */
    if (cut)
        return cut;
    int64_t nw = 0;
    for (int64_t s = 0; s < x->cache.nslots; s++)
        if (x->cache.slots[s].flags & EMB_TIER_DIRTY)
            x->rq[nw++] = req(x, x->cache.slots[s].id, emb__tier_cache_row(&x->cache, s), true);
    const int64_t ncache = nw;
    for (int64_t k = 0; k < x->sp.n; k++)
        if (x->sp.flags[k] & EMB_TIER_DIRTY)
            x->rq[nw++] = req(x, x->sp.ids[k], sp_row(x, k), true);
    emb__tier_io_run(x->io, x->rq, nw);
    x->st.rows_written += nw - count_failed(x->rq, nw);
    if (any_failed(x->rq, nw))
        return io_fail(x, x->rq, nw, "writing back");
    const int e = emb__tier_io_sync(x->fd);
    if (e)
        return emb__fail(EMB_EIO, "%s: syncing %s: %s (its %lld dirty rows stay dirty)",
                         x->label, x->path, strerror(-e), (long long)nw);
    for (int64_t i = 0; i < nw; i++)
        if (i < ncache)
            x->cache.slots[slot_of(x, x->rq[i].buf)].flags &= (uint8_t)~EMB_TIER_DIRTY;
        else
            x->sp.flags[sp_find(&x->sp, x->rq[i].tag)] &= (uint8_t)~EMB_TIER_DIRTY;
    return 0;
}

int emb__tier_flush(Tier *x)
{
    pthread_mutex_lock(&x->mu);
    if (x->release_pending)
        release_locked(x);
    const int r = flush_locked(x);
    if (!r && !x->npinned)
        sp_settle(x);
    pthread_mutex_unlock(&x->mu);
    return r;
}

void emb__tier_each_resident(Tier *x, emb_tier_rec_fn fn, const void *arg)
{
    pthread_mutex_lock(&x->mu);
    pf_settle(x, true);
    for (int64_t s = 0; s < x->cache.nslots; s++)
        if (x->cache.slots[s].flags & EMB_TIER_VALID)
            fn(x, emb__tier_cache_row(&x->cache, s), x->cache.slots[s].id, arg);
    for (int64_t k = 0; k < x->sp.n; k++)
        fn(x, sp_row(x, k), x->sp.ids[k], arg);
    pthread_mutex_unlock(&x->mu);
}

void emb__tier_drop(Tier *x)
{
    pthread_mutex_lock(&x->mu);
    pf_settle(x, true);
    for (int64_t s = 0; s < x->cache.nslots; s++)
        if (!(x->cache.slots[s].flags & EMB_TIER_DIRTY) && !x->cache.slots[s].pins)
            x->cache.slots[s].flags = 0;
    pthread_mutex_unlock(&x->mu);
}

/* Room for @n more prefetch requests (the array is not in flight): false when none. */
static bool pf_room(Tier *x, int64_t n)
{
    if (x->npf + n <= x->pf_cap)
        return true;
    const int64_t cap = EMB_MAX(2 * x->pf_cap, x->npf + n);
    EmbTierReq *p = realloc(x->pf, (size_t)cap * sizeof *p);
    if (p)
        x->pf = p;
    int64_t *o = p ? realloc(x->pf_order, (size_t)cap * sizeof *o) : NULL;
    if (!o)
        return false;
    x->pf_order = o, x->pf_cap = cap;
    return true;
}

/* Sorts @n indices of x->pf by their slots (heapsort: n log n, in place, no allocation). */
static void sift(const Tier *x, int64_t *a, int64_t i, int64_t n)
{
    for (int64_t c; (c = 2 * i + 1) < n; i = c) {
        if (c + 1 < n && x->pf[a[c + 1]].buf > x->pf[a[c]].buf)
            c++;
        if (x->pf[a[c]].buf <= x->pf[a[i]].buf)
            return;
        const int64_t t = a[i];
        a[i] = a[c], a[c] = t;
    }
}

static void sort_by_slot(const Tier *x, int64_t *a, int64_t n)
{
    for (int64_t i = n / 2 - 1; i >= 0; i--)
        sift(x, a, i, n);
    for (int64_t k = n - 1; k > 0; k--) {
        const int64_t t = a[0];
        a[0] = a[k], a[k] = t;
        sift(x, a, 0, k);
    }
}

/* Room for @n parked write-backs in x->pfw (none in flight): false when none. */
static bool pfw_room(Tier *x, int64_t n)
{
    if (n <= x->pfw_cap)
        return true;
    EmbTierReq *p = realloc(x->pfw, (size_t)n * sizeof *p);
    if (!p)
        return false;
    x->pfw = p, x->pfw_cap = n;
    return true;
}

/* Parks the dirty row of slot @v in the scratch pad, its write-back queued in x->pfw (sent
   with the prefetch's reads): the slot is free at once and the row stays found (hit()
   looks in the scratch pad) until the write has landed; a write that fails leaves it
   there, dirty (pf_settle). false: no memory for it (the slot is not taken). */
static bool park_victim(Tier *x, int64_t v)
{
    if (sp_room(x))
        return false;
    const int64_t k = x->sp.n++;
    x->sp.ids[k] = x->cache.slots[v].id;
    x->sp.flags[k] = EMB_TIER_VALID | TIER_SP_WB;
    sp_map_put(&x->sp, k);
    memcpy(sp_row(x, k), emb__tier_cache_row(&x->cache, v), x->recbytes);
    x->pfw[x->npfw++] = req(x, x->sp.ids[k], sp_row(x, k), true);
    return true;
}

/* A slot for the prefetch of @id: a free or evictable one (a dirty victim parked), or -1. */
static int64_t pf_slot(Tier *x, int64_t id)
{
    const int64_t v = emb__tier_cache_victim(&x->cache, id, 1);
    if (v < 0 || ((x->cache.slots[v].flags & EMB_TIER_DIRTY) && !park_victim(x, v)))
        return -1;
    x->st.evictions += (x->cache.slots[v].flags & EMB_TIER_VALID) != 0;
    emb__tier_cache_install(&x->cache, v, id, EMB_TIER_LOADING);
    return v;
}

/* Queues reads of the missing rows of @ids into free or evictable slots, dirty victims'
   write-backs in the same submission (park_victim); the resident rows of @ids are marked
   as read ahead, so that the next prefetch does not evict them before they are used. */
static void prefetch_locked(Tier *x, const int64_t *ids, int64_t n, int64_t *slot)
{
    if (x->release_pending)
        release_locked(x);
    pf_settle(x, true);
    if (!x->npinned) /* between operations: the last prefetch's parked rows dropped */
        sp_settle(x);
    for (int64_t k = 0; slot && k < n; k++)
        slot[k] = -1;
    if (!pf_room(x, n) || !pfw_room(x, n))
        return;
    for (int64_t k = 0; k < n; k++) {
        if (k + SET_AHEAD < n)
            emb__tier_cache_prefetch(&x->cache, ids[k + SET_AHEAD]);
        const int64_t s = emb__tier_cache_find(&x->cache, ids[k]);
        if (s >= 0 && (x->cache.slots[s].flags & EMB_TIER_VALID)) {
            emb__tier_cache_touch(&x->cache, s);
            x->cache.slots[s].flags |= EMB_TIER_AHEAD;
        }
        if (slot)
            slot[k] = s;
        if (s >= 0 || sp_find(&x->sp, ids[k]) >= 0)
            continue;
        const int64_t v = pf_slot(x, ids[k]);
        if (v >= 0)
            x->pf[x->npf++] = req(x, ids[k], emb__tier_cache_row(&x->cache, v), false);
        if (slot)
            slot[k] = v;
    }
    x->st.prefetched += x->npf;
    emb__tier_io_submit_background(x->io, x->pfw, x->npfw);
    emb__tier_io_submit_background(x->io, x->pf, x->npf);
    for (int64_t i = 0; i < x->npf; i++)
        x->pf_order[i] = i;
    sort_by_slot(x, x->pf_order, x->npf);
}

void emb__tier_prefetch(Tier *x, const int64_t *ids, int64_t n)
{
    pthread_mutex_lock(&x->mu);
    prefetch_locked(x, ids, n, NULL);
    pthread_mutex_unlock(&x->mu);
}

/* ---- the rest -------------------------------------------------------------------------- */

void emb__tier_replace_fd(Tier *x, int fd)
{
    pthread_mutex_lock(&x->mu);
    pf_settle(x, true);
    emb__tier_io_set_fd(x->io, fd);
    random_access(fd);
    close(x->fd);
    x->fd = fd;
    pthread_mutex_unlock(&x->mu);
}

void emb__tier_swap_file(Tier *x, int fd, char *path)
{
    pthread_mutex_lock(&x->mu);
    pf_settle(x, true);
    emb__tier_io_set_fd(x->io, fd);
    random_access(fd);
    close(x->fd);
    free(x->path);
    x->fd = fd, x->path = path;
    for (int64_t s = 0; s < x->cache.nslots; s++)
        x->cache.slots[s].flags = 0, x->cache.slots[s].pins = 0;
    x->npinned = 0;
    x->held = false, x->step_nd = -1, x->nbr = x->nbrow = 0, x->wb_failed = false;
    x->sp.n = 0;
    sp_rehash(&x->sp, 0);
    pthread_mutex_unlock(&x->mu);
}

void emb__tier_stats(Tier *x, EmbTieredStats *out)
{
    pthread_mutex_lock(&x->mu);
    *out = x->st;
    out->dirty_rows = 0;
    for (int64_t s = 0; s < x->cache.nslots; s++)
        out->dirty_rows += (x->cache.slots[s].flags & EMB_TIER_DIRTY) != 0;
    for (int64_t k = 0; k < x->sp.n; k++)
        out->dirty_rows += (x->sp.flags[k] & EMB_TIER_DIRTY) != 0;
    out->cache_rows = x->cache.nslots;
    out->record_bytes = (int64_t)x->recbytes;
    out->engine = emb__tier_io_name(x->io);
    pthread_mutex_unlock(&x->mu);
}

void emb__tier_prefetch_batch(Tier *x, const void *ids, bool id32, int64_t n)
{
    pthread_mutex_lock(&x->mu);
    const int64_t m = batch_ids(x, ids, id32, 0, n);
    const int64_t nd = m < 0 ? -1 : distinct_ids(x, m);
    if (nd >= 0) { /* ascending: the reads go in file order */
        prefetch_locked(x, x->uid, nd, x->uslot);
        dd_keep(x, m, nd); /* for the lookup of these ids */
    }
    else if (m >= 0) /* else out of memory: a hint */
        prefetch_locked(x, x->ids, m, NULL);
    pthread_mutex_unlock(&x->mu);
}
