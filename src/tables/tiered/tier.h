/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier.h — the inside of a tiered table (public tiered.h), the one private header of
 * src/tables/tiered/: the backing file, the I/O engine, the DRAM cache, the scratch pad, the
 * current operation's pins and the prefetch requests in flight. The files, bottom up (each
 * calls only the ones above it; tier_io.c (with tier_pool.c and tier_map.c) and tier_cache.c
 * are units of their own, with their own headers, unit-tested alone):
 *   tier_file.c       the file format: header, layout, open / create / commit
 *   tier_log.c        the write-back log: the row map, appends, compaction
 *   tier_manifest.c   the log's manifest (<path>.manifest): written at a flush, read at open
 *   tier_scratch.c    the scratch pad and the operation's pins
 *   tier_writeback.c  the one write-back path (park, settle, retry, release, flush)
 *   tier_dedup.c      a batch's distinct ids and the dedup ring
 *   tier_resolve.c    resolving rows (hits, misses, an update's rows), the release entries
 *   tier_batch.c      a lookup's batch resolves and the held step
 *   tier_prefetch.c   the look-ahead prefetch
 *   tier_core.c       the table's life, file switches, counters, the span resolve, unref
 *   tier_passes.c     whole-file passes: initialize, the state view, checkpoints
 *   tier_kind.c       the kind: constructors, public calls, the contract's entries
 *
 * File layout: a 4096-byte header (struct TierHeader), then record r's home at
 * EMB_TIER_HEADER + r * recbytes: the row (rowbytes, padded to 16) then state_room floats
 * of optimizer state; then (4096-aligned) the log: fixed-size segments of seg_recs records
 * each, where evicted dirty rows are appended (tier_log.c). A row's newest copy is its home
 * or the log slot the row map (TierLog::loc) names. A record in DRAM (a cache slot or a
 * scratch row) has the same bytes. docs/design/tiered-tables.md has the log's design.
 *
 * Pins: every row a resolve or an update's prepare hands out is pinned (its slot cannot be
 * evicted) until release() ends the operation; the pinned slots are listed once each in
 * `pinned`. A row that finds its cache set full of pinned rows goes to the scratch pad
 * (FBGEMM's SSD-TBE habit): a growable side store, pinned the same way; at release its
 * clean rows are dropped and dirty ones written back (kept, still dirty, if that fails),
 * so a step's working set may exceed the cache and results never depend on its size.
 */
#ifndef EMB_TIER_H
#define EMB_TIER_H

#include <pthread.h>
#include <stdbool.h>

#include "embtables/tiered.h"
#include "internal.h"
#include "tables/table_ops.h"
#include "tables/tiered/tier_cache.h"
#include "tables/tiered/tier_io.h"

#define EMB_TIER_HEADER 4096
#define EMB_TIER_MAGIC "EMBTIER1"

/* Ids whose cache set (or pinned slot) is prefetched ahead of its find in the loops over
 * a batch (resolve, prefetch, release): a set is 2 random lines of an index of megabytes.
 * emb-bench tier:1x500000x64:25%, Adagrad, 3 interleaved pairs: tiered step 2.78-2.89 ms
 * against 2.97-3.29 without. */
#define SET_AHEAD 16

#define SP_BLOCK 64         /* scratch rows per block */
#define TIER_SP_PINNED 0x80 /* a scratch row's flag: pinned by the operation */
#define TIER_SP_WB 0x40     /* a prefetch's write-back of the row is in flight (x->pfw) */
/* A row a prefetch read into the scratch pad (its set had no slot it could take: admission
   or protection said no), kept for the lookup of its batch, which takes it (tier_resolve.c:
   into the cache when the lookup's own victim choice admits it) instead of reading it
   again. TIER_SP_AGE counts the prefetches since (one TIER_SP_AGE1 each): a row aged past a
   prefetch depth of TIER_DEDUPS - 1 is an ordinary clean row (dropped at the next release).
   EMB_TIER_LOADING: its read is in flight. */
#define TIER_SP_PF 0x20
#define TIER_SP_AGE 0x18
#define TIER_SP_AGE1 0x08

/* The distinct ids of a batch a prefetch deduplicated (distinct_ids), kept for the lookup of
   the same ids, which takes them instead of sorting again (dd_take: compared id for id).
   The buffers are swapped with the Tier's working ones, never copied. */
typedef struct TierDedup {
    int64_t *ids, *uid;      /* the batch's in-range ids; the distinct ones, ascending */
    int64_t *slot;           /* the slot the prefetch found or gave each distinct id, or -1 */
    uint64_t *sbuf;          /* the radix sort's buffer (2 per id); sorted points into it */
    const uint64_t *sorted;
    int64_t ids_cap, u_cap, m, nd;
    bool valid;
} TierDedup;
#define TIER_DEDUPS 4 /* batches prefetched and not looked up yet (a prefetch depth of 3) */

/* The scratch pad: rows that did not fit their cache set. */
typedef struct TierScratch {
    int64_t *ids;
    uint8_t *flags;     /* EMB_TIER_* (VALID, DIRTY), plus TIER_SP_PINNED */
    char **blocks;      /* row k at blocks[k / SP_BLOCK] + (k % SP_BLOCK) * stride */
    int64_t n, cap, nblocks;
    int64_t *map;       /* open addressing: id -> k + 1 (0 empty); mapcap a power of two */
    int64_t mapcap;
} TierScratch;

/* The write-back log (tier_log.c): segments of seg_recs records from file offset base. */
#define TIER_LOG_SYNC 0 /* the staging of writes waited for in the call (resolve, release, flush) */
#define TIER_LOG_BG 1   /* of the prefetch's write-backs (settled by emb__tier_pf_settle) */
#define TIER_LOG_MOVE 2 /* of a compaction's appends (settled by a later emb__tier_log_compact) */
#define TIER_LOG_STAGES 3
#define TIER_LOG_VICTIMS 2 /* segments compacted at once at most (each read whole) */
typedef struct TierLog {
    uint32_t *loc;       /* per row: 0 its home, else 1 + its log slot (the newest copy) */
    int32_t *live;       /* per segment: the rows whose newest copy it holds */
    int32_t *pending;    /* per segment: slots appended (or read by compaction), not settled */
    uint8_t *kept;       /* per segment: named by the manifest on disk (not reused till the next) */
    int64_t nseg, seg_cap, seg_recs, base;
    int64_t head, fill;  /* the segment appended to (-1: none) and its records used */
    uint64_t uid;        /* the file's (its header): a manifest of another file is stale */
    bool uid0;           /* a manifest of uid 0 names the file too (tier_manifest.c) */
    bool dirty;          /* the map changed since the manifest was written */
    char *buf[TIER_LOG_STAGES]; /* staging of the appends in flight (TIER_LOG_*) */
    size_t buf_cap[TIER_LOG_STAGES];
    EmbTierReq *runs[TIER_LOG_STAGES]; /* their writes: one per run of consecutive slots */
    int64_t nruns[TIER_LOG_STAGES], runs_cap[TIER_LOG_STAGES];
    /* counters (EmbTieredStats' log_*): records appended, segments begun, compactions
       completed, records they moved, ns the table's calls spent on compaction */
    int64_t appended, begun, compactions, compacted, compact_ns;
    /* a compaction under way (tier_log.c): its victims' whole reads into cbuf (cnv > 0),
       then (moving) the appends of their live records, cq[0, ncq), each valid only while
       its row's map entry is still cold[i] (the copy read) */
    EmbTierReq crd[TIER_LOG_VICTIMS];
    int64_t cseg[TIER_LOG_VICTIMS];
    int cnv;
    bool moving;
    char *cbuf;
    size_t cbuf_cap;
    EmbTierReq *cq;
    uint32_t *cold;
    int64_t ncq, cq_cap;
} TierLog;

typedef struct Tier {
    pthread_mutex_t mu;  /* every entry below runs under it */
    int fd;
    char *path;
    /* a create until emb__tier_commit: fd is the new file, named tmp_path; hold_fd the file
       at path (locked), made_path when the create made it (tier_file.c) */
    char *tmp_path;
    int hold_fd;
    bool made_path;
    EmbTierIo *io;
    EmbTierCache cache;
    TierScratch sp;
    int64_t nrows;
    int32_t D;
    int32_t dtype;       /* EmbDtype */
    size_t rowbytes;     /* a row's bytes (emb__row_bytes: quantized rows too) */
    size_t state_off;    /* the state's offset in a record (rowbytes padded to 16) */
    size_t recbytes;     /* state_off + state_room x 4 */
    int32_t state_room;  /* floats of state a record has room for */
    int32_t state_width; /* floats attached (0: none) */
    /* the current operation's pins: cache slots s >= 0, scratch rows as -1 - k */
    int64_t *pinned;
    int64_t npinned, pinned_cap;
    bool release_pending; /* emb__tier_release_later: unpin before the next operation */
    bool counted;        /* the operation's rows were resolved (and counted) as a batch */
    bool wb_failed;      /* a write-back of scratch rows failed: retried at the next resolve */
    /* the operation's batch resolves: range i covers ids [k0, k1) of the id array `ids`,
       their records at brow[at ..] (NULL: an id out of range), so that the lookup's span
       resolves of them copy pointers instead of probing the cache again */
    struct TierRange { const void *ids; int64_t k0, k1, at; } *br;
    int64_t nbr, br_cap;
    char **brow;
    int64_t nbrow, brow_cap;
    int64_t release_mark; /* the pins [0, release_mark) are the update's */
    /* requests of one resolve / flush (grown), and the prefetch's in flight */
    EmbTierReq *rq;
    int64_t *wslot;      /* a resolve's write-backs: the slot each victim came from */
    int64_t rq_cap;
    EmbTierReq *pf;
    int64_t *pf_order;   /* pf's indices in slot order (a resolve waits for one of them) */
    int64_t npf, pf_cap;
    EmbTierReq *pfw;     /* the prefetch's write-backs of parked dirty victims in flight */
    int64_t npfw, pfw_cap;
    EmbTieredStats st;
    TierLog lg;
    char label[96];      /* the table's label for messages */
    /* tier_kind.c's */
    int refs;            /* the table and its state view */
    struct EmbTable *view; /* the optimizer's state view (NULL: no state attached) */
    char *sink;          /* a zero record: column() of a row that could not be read */
    int64_t *ids;        /* a batch's ids (emb_table_prefetch, the lookup's resolve_batch) */
    int64_t ids_cap;
    /* their distinct ids (distinct_ids): ascending in uid, the batch's rows in id order in
       sorted (low 32 bits: the position), the distinct ids' records in urow */
    int64_t *uid;
    uint64_t *sbuf;      /* 2 per id: the radix sort's */
    const uint64_t *sorted;
    char **urow;
    int64_t *uslot;      /* a prefetch's slot of each distinct id (TierDedup::slot) */
    int64_t u_cap, urow_cap; /* uid, uslot and sbuf's; urow's */
    TierDedup dd[TIER_DEDUPS]; /* the prefetched batches' (round robin from dd_next) */
    int dd_next;
    /* the held step: a lookup whose one batch range was deduplicated keeps its pins past
       its release (held), until the next operation other than its update, a prefetch, a
       flush or column(): no eviction moves a row between a step's lookup and its update,
       and the update takes its rows from the lookup's distinct ids (step_uid, ascending;
       their records step_urow) instead of finding them again */
    bool held;
    int64_t step_nd;     /* the distinct ids of the operation's batch range (-1: none) */
    int64_t *step_uid;
    char **step_urow;
    int64_t step_cap;
    char **mrow;         /* the update's rows that the held step does not have */
    int64_t mrow_cap;
} Tier;

/* A tiered table file's shape (its header). */
typedef struct EmbTierShape {
    int64_t nrows;
    int32_t D, dtype, state_room;
} EmbTierShape;

/* ---- the backing file (tier_file.c) ---- */
/* The shape in the header of the file @path: 0, EMB_ENOTFOUND, EMB_EIO, EMB_ECORRUPT,
   EMB_EINVAL (not a regular file). */
int emb__tier_read_shape(const char *path, EmbTierShape *sh);
/* Writes @x's header into the file @fd and sizes it for x->nrows records: 0 or EMB_EIO. */
int emb__tier_format(const Tier *x, int fd, const char *path);
/* The uid in the header of the file @fd (0: none, or an older file); *@uid0: a manifest of
   uid 0 names it too (emb__tier_file_set_uid). */
uint64_t emb__tier_file_uid(int fd, bool *uid0);
/* Writes *@uid (0: a new one, stored there) and the @uid0 flag into x->fd's header and
   syncs: 0 or EMB_EIO naming the file. */
int emb__tier_file_set_uid(const Tier *x, uint64_t *uid, bool uid0);
/* The file offset of record @row's home. */
int64_t emb__tier_rec_offset(const Tier *x, int64_t row);
/* Opens x->path (regular files only), locked for the table (EMB_EBUSY when another holds
   it): the existing file, its shape read into @x; or, with @create, a new file formatted
   beside it (x->tmp_path) that replaces it on emb__tier_commit. 0 or an error naming it. */
int emb__tier_open_file(Tier *x, bool create);
/* A create's new file renamed over x->path (nothing to do after an open): 0 or EMB_EIO. */
int emb__tier_commit(Tier *x);
/* Closes the files; a create not committed removes its new file (and its placeholder). */
void emb__tier_close_file(Tier *x);
/* A new file beside @path, created (O_EXCL) and locked, its malloc'd name in *@name: an fd,
   or a negative EMB_EIO / EMB_ENOMEM naming @path. */
int emb__tier_tmp_create(const Tier *x, const char *path, char **name);
/* 0, or EMB_EIO naming the file when it is shorter than the table (cut by someone else). */
int emb__tier_check_size(const Tier *x);
/* state_off and recbytes from rowbytes and state_room. */
void emb__tier_set_layout(Tier *x);

/* Switches @x to the file @fd (a restored copy, named @path; @x takes both): every cached
   and scratch row is dropped, dirty or not. */
void emb__tier_swap_file(Tier *x, int fd, char *path);
/* The counters (the dirty rows counted now). */
void emb__tier_stats(Tier *x, EmbTieredStats *out);
/* emb__tier_prefetch of the in-range ids of a batch (int32 when @id32). */
void emb__tier_prefetch_batch(Tier *x, const void *ids, bool id32, int64_t n);

/* Opens (or, with @create, creates and sizes) the file and the engine, sets up the cache.
   With @create, nrows, D, dtype, rowbytes and state_room are the caller's; else read from
   the file's header (rowbytes from D and dtype). 0 or an error naming the file; on error
   nothing is left open. @policy: an EmbTierPolicy. */
int emb__tier_init(Tier *x, const char *path, bool create, int64_t cache_bytes, int policy,
                   EmbTierIoKind kind);
void emb__tier_fini(Tier *x);
/* Pins and makes resident the rows of @n ids (repeats allowed); rows[k] receives id k's
   record. 0, or EMB_EIO / EMB_ENOMEM naming the file and rows: what this call pinned is
   unpinned, nothing is lost (dirty rows stay). With @dirty the rows are marked dirty. */
int emb__tier_resolve(Tier *x, const int64_t *ids, int64_t n, char **rows, bool dirty);
/* emb__tier_resolve of the in-range ids [k0, k1) of a batch's ids (int32 when @id32), no
   rows handed out: the lookup's resolve of its whole range before it writes output. */
int emb__tier_resolve_batch(Tier *x, const void *ids, bool id32, int64_t k0, int64_t k1);
/* The records of span ids [k0, k0 + n) of the id array @ids when this operation's batch
   resolves hold them all (then true; rows[k] = the record), else false. */
bool emb__tier_resolved_span(Tier *x, const void *ids, int64_t k0, int64_t n, char **rows);
/* emb__tier_resolve of one id for column(): never ends a pending release (it runs inside an
   update's apply phase, or early in the next operation). */
int emb__tier_column(Tier *x, int64_t id, char **row, bool dirty);
/* Ends the operation: unpins its rows; writes back the scratch pad's dirty rows. A lookup
   whose batch was resolved as one deduplicated range (resolve_batch) is held instead: its
   rows stay pinned for its update (emb__tier_resolve_update) until the next operation. */
void emb__tier_release(Tier *x);
/* emb__tier_resolve of an update's rows (marked dirty): those of the held lookup are taken
   from it without a find, the rest resolved as usual. */
int emb__tier_resolve_update(Tier *x, const int64_t *ids, int64_t n, char **rows);
/* Ends the operation when the next one starts (an update's commit: its apply phase still
   uses the rows; the update path calls no release). */
void emb__tier_release_later(Tier *x);
/* Starts asynchronous reads of the missing rows of @n ids (a hint: never fails). */
void emb__tier_prefetch(Tier *x, const int64_t *ids, int64_t n);
/* Writes every dirty row back: 0 or EMB_EIO naming the file and rows (those stay dirty). */
int emb__tier_flush(Tier *x);
/* Calls @fn on every resident record (cache and scratch pad; prefetches waited for) with
   its row: whole-file passes change these as they change the file. */
typedef void (*emb_tier_rec_fn)(const Tier *x, char *rec, int64_t row, const void *arg);
void emb__tier_each_resident(Tier *x, emb_tier_rec_fn fn, const void *arg);
/* Drops every cached row (after a flush): the next resolve reads from the file. */
void emb__tier_drop(Tier *x);
/* Reads / writes @n records from row @r0 directly (no cache) of the table's file (@fd -1)
   or of the file @fd (a copy of it): 0 or EMB_EIO naming the rows. */
int emb__tier_file_rw(Tier *x, int fd, int64_t r0, int64_t n, void *buf, bool write);
/* Switches @x to the file @fd, a copy of its file with the same rows as the cache holds
   (renamed over x->path already): the cache is kept. */
void emb__tier_replace_fd(Tier *x, int fd);

/* ---- the scratch pad and pins (tier_scratch.c) ---- */
static inline char *emb__tier_sp_row(const Tier *x, int64_t k)
{
    return x->sp.blocks[k / SP_BLOCK] + (size_t)(k % SP_BLOCK) * x->recbytes;
}
/* The scratch row of @id, or -1. */
int64_t emb__tier_sp_find(const TierScratch *sp, int64_t id);
/* Enters scratch row @k (its id set) in the map (room made by emb__tier_sp_room). */
void emb__tier_sp_map_put(TierScratch *sp, int64_t k);
/* Rebuilds the map for @need rows: 0 or EMB_ENOMEM (never for fewer rows than it had). */
int emb__tier_sp_rehash(TierScratch *sp, int64_t need);
/* Room for one more scratch row: 0 or EMB_ENOMEM (nothing changed). */
int emb__tier_sp_room(Tier *x);
void emb__tier_sp_free(TierScratch *sp);
/* Room for @n more pins: 0 or EMB_ENOMEM. */
int emb__tier_pin_room(Tier *x, int64_t n);
/* Pins cache slot @s / scratch row @k (once per operation; room made by pin_room). */
void emb__tier_pin_slot(Tier *x, int64_t s);
void emb__tier_pin_sp(Tier *x, int64_t k);
/* Unpins the pins of indices [from, to) (the list itself is the caller's). */
void emb__tier_unpin_from(Tier *x, int64_t from, int64_t to);

/* The cache slot of the record @buf (one of the cache's). */
static inline int64_t emb__tier_slot_of(const Tier *x, const void *buf)
{
    return (int64_t)(((const char *)buf - x->cache.data) / (ptrdiff_t)x->cache.stride);
}
/* Whether the record @buf is a cache slot's (else the scratch pad's). */
static inline bool emb__tier_in_cache(const Tier *x, const void *buf)
{
    const char *p = buf;
    return p >= x->cache.data && p < x->cache.data + (size_t)x->cache.nslots * x->cache.stride;
}
/* Marks cache slot @s used (its LRU tick or LFU count), no longer only read ahead, and
   dirty with @dirty. */
static inline void emb__tier_use_slot(Tier *x, int64_t s, uint8_t dirty)
{
    emb__tier_cache_touch(&x->cache, s);
    x->cache.slots[s].flags = (uint8_t)((x->cache.slots[s].flags & ~EMB_TIER_AHEAD) | dirty);
}

/* ---- requests and the write-back path (tier_writeback.c) ---- */
/* The file offset of row @row's newest copy (its home or its log slot). */
static inline int64_t emb__tier_row_offset(const Tier *x, int64_t row)
{
    const uint32_t l = x->lg.loc ? x->lg.loc[row] : 0;
    return l ? x->lg.base + (int64_t)(l - 1) * (int64_t)x->recbytes
             : emb__tier_rec_offset(x, row);
}
/* A read of row @row's newest copy, or a write-back of it (its offset chosen by the log's
   append: emb__tier_log_submit). */
static inline EmbTierReq emb__tier_req(const Tier *x, int64_t row, void *buf, bool write)
{
    return (EmbTierReq){.buf = buf, .offset = write ? -1 : emb__tier_row_offset(x, row),
                        .len = (uint32_t)x->recbytes, .write = write, .tag = row};
}
static inline int64_t emb__tier_count_failed(const EmbTierReq *r, int64_t n)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad += r[i].res != 0;
    return bad;
}
static inline bool emb__tier_any_failed(const EmbTierReq *r, int64_t n)
{
    return emb__tier_count_failed(r, n) != 0;
}
/* EMB_EIO naming the file, the rows of the failed requests among @n and the first errno. */
/* (tier_file.c) */
int emb__tier_io_fail(const Tier *x, const EmbTierReq *r, int64_t n, const char *what);
/* Room for @n requests in x->rq (and x->wslot): 0 or EMB_ENOMEM. */
int emb__tier_rq_room(Tier *x, int64_t n);
bool emb__tier_wb_park(Tier *x, int64_t v, EmbTierReq *q, uint8_t flags);
/* Settles the prefetch's reads and parked writes once all are done (with @wait: waits). */
void emb__tier_pf_settle(Tier *x, bool wait);
/* Waits for the prefetch's read into slot @s and settles that slot alone. */
void emb__tier_pf_wait_slot(Tier *x, int64_t s);
/* Writes back the scratch pad's unpinned dirty rows, drops its clean unpinned ones: the
   writes it made (x->rq). */
int64_t emb__tier_wb_settle(Tier *x);
/* The scratch rows whose write-back failed written again: 0, or the error (nothing done). */
int emb__tier_wb_retry(Tier *x);
/* Ends the operation (pins, held step, scratch pad); the lock held. */
void emb__tier_release_locked(Tier *x);

/* ---- the write-back log (tier_log.c, tier_manifest.c) ---- */
/* Sets up the log of the file x->fd (its uid read; an open reads the manifest): 0, or
   EMB_ENOMEM / EMB_ECORRUPT (a corrupt manifest, named) / EMB_EIO. */
int emb__tier_log_init(Tier *x, bool create);
/* The log emptied for a new file x->fd (every row at its home): a whole-file pass's copy. */
void emb__tier_log_reset(Tier *x);
void emb__tier_log_free(TierLog *lg);
/* Appends the records of the @n write requests @w (buf, tag = row) to the log: staged in
   buffer @which (TIER_LOG_*), one write per run of consecutive slots, submitted (in the
   background with @bg). Where that cannot be, every w[i].res is set (-ENOMEM / -ENOSPC)
   and nothing is submitted. */
void emb__tier_log_submit(Tier *x, EmbTierReq *w, int64_t n, int which, bool bg);
/* Waits for the writes of buffer @which. */
void emb__tier_log_wait(Tier *x, int which);
/* After their writes completed: each w[i].res set from its run's; the map names the new
   copies of the rows written (the old ones stale). */
void emb__tier_log_settle(Tier *x, EmbTierReq *w, int64_t n, int which);
/* submit + wait + settle (TIER_LOG_SYNC). */
void emb__tier_log_run(Tier *x, EmbTierReq *w, int64_t n);
/* Compaction of segments whose live fraction fell below the threshold, one step a call, each
   on the pool's threads: starts one (the victims read in the background); once read, queues
   the appends of their live records (in the background); once written and none of the
   prefetch's I/O is in flight, settles them (the map names the moved copies, the segments
   are recycled). The calling thread never waits for its I/O. */
void emb__tier_log_compact(Tier *x);
/* Waits for a compaction's I/O in flight and drops it (nothing moved): before the file is
   switched or closed. */
void emb__tier_log_quiesce(Tier *x);
/* The log's counters into @out (EmbTieredStats' log_*). */
void emb__tier_log_stats(const Tier *x, EmbTieredStats *out);
/* Writes the manifest (the row map) atomically when the map changed since the last: 0 or
   EMB_EIO naming it (tier_manifest.c). */
int emb__tier_manifest_write(Tier *x);
/* Reads the manifest of x->path into the log, if there is one for this file: 0, or
   EMB_ECORRUPT naming it / EMB_EIO / EMB_ENOMEM. */
int emb__tier_manifest_read(Tier *x);
/* Tests: rewrites the uid in the manifest file @path of a table of @nrows rows, its checksum
   with it (an older file's manifest): 0 or -1. */
int emb__tier_manifest_forge_uid(const char *path, int64_t nrows, uint64_t uid);
/* Reads the log's copies of rows [r0, r0 + n) over their homes' in @buf: 0 or EMB_EIO /
   EMB_ENOMEM naming them. */
int emb__tier_log_read_rows(Tier *x, int64_t r0, int64_t n, char *buf);
/* The log's segment array grown to @n segments (tier_manifest.c): 0 or EMB_ENOMEM. */
int emb__tier_log_segs(TierLog *lg, int64_t n);

/* ---- a batch's distinct ids (tier_dedup.c) ---- */
/* The in-range ids of a batch's ids [k0, k1) into x->ids: their count, or -1 (no memory). */
int64_t emb__tier_batch_ids(Tier *x, const void *ids, bool id32, int64_t k0, int64_t k1);
/* The distinct ids of x->ids[0, m) ascending into x->uid (x->sorted: the batch in id order):
   their count, or -1 where it does not apply (the caller goes on with every id). */
int64_t emb__tier_distinct_ids(Tier *x, int64_t m);
/* Keeps the working batch (a prefetch's: @m ids, @nd distinct) for its lookup. */
void emb__tier_dd_keep(Tier *x, int64_t m, int64_t nd);
/* The distinct ids of the working batch x->ids[0, m) when a prefetch kept them, else -1. */
int64_t emb__tier_dd_take(Tier *x, int64_t m);

/* ---- resolve (tier_resolve.c) ---- */
/* emb__tier_resolve with the lock held; @hint (NULL: none): each id's slot from its prefetch. */
int emb__tier_resolve_locked(Tier *x, const int64_t *ids, int64_t n, char **rows, bool dirty,
                             const int64_t *hint);

/* ---- shared by the kind and its state view (tier_core.c) ---- */
/* Drops one reference (the table's or its state view's); the last flushes and frees. */
void emb__tier_unref(Tier *x);
/* The rows of span @s resolved (pinned) into cols, each plus @offset bytes (the state view:
   its records' state); spans of any length. 0 or EMB_EIO / EMB_ENOMEM. */
int emb__tier_resolve_span(Tier *x, const EmbIdSpan *s, EmbContext ctx, const void **cols,
                           size_t offset);

/* ---- the kind's entries of the table contract (tier_passes.c) ---- */
int emb__tiered_initialize(EmbTable *t, const struct EmbInitializer *in);
int emb__tiered_state_attach(EmbTable *t, int32_t width, const float *init, EmbTable **view);
const EmbTable *emb__tiered_state_view(const EmbTable *t);
int emb__tiered_save_list(const EmbTable *t, bool state, EmbRowList *out);
int emb__tiered_list_ids(const EmbTable *t, const int64_t *ids, int64_t n, bool state,
                         EmbRowList *out);
void emb__tiered_restore_extras(const EmbTable *t, EmbExtraTensor *extra, int *n);
int emb__tiered_stage(const EmbTable *t, const EmbStageIn *in, EmbRowStage **out);
void *emb__tiered_stage_dst(EmbRowStage *s, int what, int64_t k);
void emb__tiered_stage_commit(EmbTable *t, EmbRowStage *s);
void emb__tiered_stage_free(EmbRowStage *s);

#endif
