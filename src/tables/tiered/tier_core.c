/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_core.c — a tiered table's life (tier.h): its memory and engine set up and freed, the
 * file switched under it (a whole-file pass's copy, a restore), whole-file reads and writes
 * that bypass the cache, the resident records walked, the counters; and the two entries the
 * kind and its state view share (the span resolve, the reference count).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtype.h"
#include "internal.h"
#include "tables/tiered/tier.h"

/* ---- the file -------------------------------------------------------------------------- */

/* Records are read at random: no readahead (the kernel's default reads up to 128 KiB
   around each missing page, 256 records of 512 bytes for one). Advice only. */
static void random_access(int fd)
{
    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
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
        r = emb__tier_log_init(x, create);
    }
    return r;
}

void emb__tier_fini(Tier *x)
{
    emb__tier_io_destroy(&x->io);
    emb__tier_cache_free(&x->cache);
    emb__tier_sp_free(&x->sp);
    emb__tier_log_free(&x->lg);
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
                        .offset = emb__tier_rec_offset(x, r0 + done), .write = write,
                        .len = (uint32_t)(k * (int64_t)x->recbytes), .tag = r0 + done};
        if (fd < 0)
            emb__tier_io_run(x->io, &q, 1);
        else
            emb__tier_io_rw_fd(fd, &q);
        if (!q.res && fd < 0 && !write) { /* the newest copies of rows in the log */
            const int r = emb__tier_log_read_rows(x, r0 + done, k, q.buf);
            if (r)
                return r;
        }
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

void emb__tier_each_resident(Tier *x, emb_tier_rec_fn fn, const void *arg)
{
    pthread_mutex_lock(&x->mu);
    emb__tier_pf_settle(x, true);
    for (int64_t s = 0; s < x->cache.nslots; s++)
        if (x->cache.slots[s].flags & EMB_TIER_VALID)
            fn(x, emb__tier_cache_row(&x->cache, s), x->cache.slots[s].id, arg);
    for (int64_t k = 0; k < x->sp.n; k++)
        if (x->sp.ids[k] >= 0) /* (-1: a row dropped, till the next release) */
            fn(x, emb__tier_sp_row(x, k), x->sp.ids[k], arg);
    pthread_mutex_unlock(&x->mu);
}

void emb__tier_drop(Tier *x)
{
    pthread_mutex_lock(&x->mu);
    emb__tier_pf_settle(x, true);
    for (int64_t s = 0; s < x->cache.nslots; s++)
        if (!(x->cache.slots[s].flags & EMB_TIER_DIRTY) && !x->cache.slots[s].pins)
            x->cache.slots[s].flags = 0;
    pthread_mutex_unlock(&x->mu);
}

/* ---- the rest -------------------------------------------------------------------------- */

void emb__tier_replace_fd(Tier *x, int fd)
{
    pthread_mutex_lock(&x->mu);
    emb__tier_pf_settle(x, true);
    emb__tier_log_quiesce(x); /* nothing in flight on the file closed */
    emb__tier_io_set_fd(x->io, fd);
    random_access(fd);
    close(x->fd);
    x->fd = fd;
    emb__tier_log_reset(x); /* the copy holds every row at its home */
    pthread_mutex_unlock(&x->mu);
}

void emb__tier_swap_file(Tier *x, int fd, char *path)
{
    pthread_mutex_lock(&x->mu);
    emb__tier_pf_settle(x, true);
    emb__tier_log_quiesce(x); /* nothing in flight on the file closed */
    emb__tier_io_set_fd(x->io, fd);
    random_access(fd);
    close(x->fd);
    free(x->path);
    x->fd = fd, x->path = path;
    emb__tier_log_reset(x);
    for (int64_t s = 0; s < x->cache.nslots; s++)
        x->cache.slots[s].flags = 0, x->cache.slots[s].pins = 0;
    x->npinned = 0;
    x->held = false, x->step_nd = -1, x->nbr = x->nbrow = 0, x->wb_failed = false;
    x->sp.n = 0;
    emb__tier_sp_rehash(&x->sp, 0);
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
    emb__tier_log_stats(x, out);
    pthread_mutex_unlock(&x->mu);
}

/* ---- shared by the kind and its state view ------------------------------------------ */

int emb__tier_resolve_span(Tier *x, const EmbIdSpan *s, EmbContext ctx, const void **cols,
                           size_t offset)
{
    int64_t ids[EMB_SPAN_MAX];
    int r = 0;
    for (int64_t k0 = 0; k0 < s->n && !r; k0 += EMB_SPAN_MAX) { /* any span length */
        const int64_t n = EMB_MIN(EMB_SPAN_MAX, s->n - k0);
        char **rows = (char **)cols + k0;
        /* pinned by the lookup's batch resolve: its pointers copied */
        const bool done = ctx != EMB_CTX_UPDATE &&
                          emb__tier_resolved_span(x, s->ids, s->k0 + k0, n, rows);
        for (int64_t k = 0; k < n && !done; k++)
            ids[k] = emb__span_id(s, k0 + k);
        r = done ? 0 : emb__tier_resolve(x, ids, n, rows, ctx == EMB_CTX_UPDATE);
        for (int64_t k = 0; k < n && !r && offset; k++)
            cols[k0 + k] = (const char *)cols[k0 + k] + offset;
    }
    return r;
}

void emb__tier_unref(Tier *x)
{
    if (!x || --x->refs > 0)
        return;
    /* best effort: _flush() reports errors. A create not committed leaves no file to flush
       (and its error message stands) */
    if (x->fd >= 0 && x->io && x->cache.slots && !x->tmp_path)
        emb__tier_flush(x);
    emb__tier_fini(x);
    free(x->sink);
    free(x->ids), free(x->uid), free(x->sbuf), free(x->urow), free(x->uslot);
    free(x);
}
