/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_manifest.c — the manifest of a tiered table's log (tier.h): `<path>.manifest`, a
 * header and the row map (4 bytes a row), checksummed. A flush writes it after the file's
 * sync, atomically: a new file beside it (O_EXCL), written, synced, renamed over the old one
 * and the directory synced. It names the file it belongs to by the uid in the file's header:
 * a manifest of a file since replaced (a whole-file pass's copy, a restore) is stale and
 * ignored, every row then at its home. A manifest that fails its checks is EMB_ECORRUPT
 * naming it: a file read is untrusted input.
 *
 * An older file has uid 0 in its header: its first flush gives it one, so that its manifest
 * names no other file. In an order a crash cannot break: the rows synced (the flush), the
 * header's new uid written and synced with its uid0 flag (a manifest of uid 0, the one an
 * earlier flush may have left, still names the file), the manifest of the new uid put in
 * place, then the flag cleared (advice: a failure leaves it set, harmlessly).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "tables/tiered/tier.h"

#define MAN_MAGIC "EMBTMAN1"

typedef struct ManHeader {
    char magic[8];
    uint32_t version, zero;
    uint64_t uid; /* the table file's (its header's) */
    int64_t nrows, recbytes, seg_recs, base, nseg;
    uint64_t sum; /* of this header (sum 0) and the map */
} ManHeader;

/* A 64-bit checksum of @n bytes (words mixed by multiplication; a tail byte by byte). */
static uint64_t checksum(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (; n >= 8; n -= 8, b += 8) {
        uint64_t w;
        memcpy(&w, b, 8);
        h = (h ^ w) * 0x100000001b3u;
        h ^= h >> 29;
    }
    for (; n; n--, b++)
        h = (h ^ *b) * 0x100000001b3u;
    return h;
}

static uint64_t sum_of(ManHeader h, const uint32_t *map, int64_t nrows)
{
    h.sum = 0;
    return checksum(checksum(0xcbf29ce484222325u, &h, sizeof h), map,
                    (size_t)nrows * sizeof *map);
}

/* "<path>.manifest", malloc'd (NULL: no memory). */
static char *man_path(const Tier *x)
{
    const size_t n = strlen(x->path) + sizeof ".manifest";
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s.manifest", x->path);
    return p;
}

static int write_all(int fd, const void *p, size_t n, off_t at)
{
    for (size_t done = 0; done < n;) {
        const ssize_t k = pwrite(fd, (const char *)p + done, n - done, at + (off_t)done);
        if (k <= 0)
            return k < 0 ? -errno : -EIO;
        done += (size_t)k;
    }
    return 0;
}

/* fsync of the directory of @path (the rename in it made durable): advice, errors ignored. */
static void sync_dir(const char *path)
{
    char *d = strdup(path);
    const int fd = d ? open(dirname(d), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd >= 0)
        fsync(fd), close(fd);
    free(d);
}

int emb__tier_manifest_write(Tier *x)
{
    TierLog *lg = &x->lg;
    if (!lg->dirty)
        return 0;
    if (!lg->uid) { /* an older file: its uid first (the file's comment) */
        const int r = emb__tier_file_set_uid(x, &lg->uid, true);
        if (r)
            return r;
        lg->uid0 = true;
    }
    char *mp = man_path(x), *tmp = NULL;
    if (!mp)
        return emb__fail(EMB_ENOMEM, "%s: out of memory for a file name", x->label);
    const int fd = emb__tier_tmp_create(x, mp, &tmp);
    if (fd < 0) {
        free(mp);
        return fd;
    }
    ManHeader h = {.version = 1, .uid = lg->uid, .nrows = x->nrows,
                   .recbytes = (int64_t)x->recbytes, .seg_recs = lg->seg_recs,
                   .base = lg->base, .nseg = lg->nseg};
    memcpy(h.magic, MAN_MAGIC, 8);
    h.sum = sum_of(h, lg->loc, x->nrows);
    int e = write_all(fd, &h, sizeof h, 0);
    e = e ? e : write_all(fd, lg->loc, (size_t)x->nrows * sizeof *lg->loc, sizeof h);
    e = e ? e : emb__tier_io_sync(fd);
    e = e ? e : rename(tmp, mp) ? -errno : 0;
    close(fd);
    int r = 0;
    if (e) {
        unlink(tmp);
        r = emb__fail(EMB_EIO, "%s: writing the manifest %s: %s (the last one stands)",
                      x->label, mp, strerror(-e));
    } else {
        sync_dir(mp);
        lg->dirty = false;
        if (lg->uid0 && !emb__tier_file_set_uid(x, &lg->uid, false))
            lg->uid0 = false;
        emb__clear_error(); /* (a flag left set is harmless) */
        for (int64_t s = 0; s < lg->nseg; s++) /* what a crash from now on must find */
            lg->kept[s] = lg->live[s] > 0;
    }
    free(tmp), free(mp);
    return r;
}

/* Whether a manifest of @uid names the log's file. */
static bool names_file(const TierLog *lg, uint64_t uid)
{
    return uid == lg->uid || (uid == 0 && lg->uid0);
}

/* Checks the manifest @h (its map in lg->loc) against the table: 0 or a reason. */
static const char *check(const Tier *x, const ManHeader *h)
{
    if (memcmp(h->magic, MAN_MAGIC, 8) || h->version != 1)
        return "not a tiered table's manifest";
    if (h->sum != sum_of(*h, x->lg.loc, x->nrows))
        return "its checksum does not match";
    if (!names_file(&x->lg, h->uid))
        return NULL; /* another file's: checked no further (stale) */
    if (h->nrows != x->nrows || h->recbytes != (int64_t)x->recbytes || h->base != x->lg.base)
        return "its shape is not the table's";
    if (h->seg_recs < 1 || h->nseg < 0 || h->nseg > ((int64_t)UINT32_MAX - 1) / h->seg_recs)
        return "its segments are out of range";
    uint64_t last = 0; /* the highest slot + 1 a row's copy is in */
    for (int64_t r = 0; r < x->nrows; r++) {
        if (x->lg.loc[r] > (uint64_t)(h->nseg * h->seg_recs))
            return "a row's copy is past its last segment";
        last = EMB_MAX(last, x->lg.loc[r]);
    }
    struct stat st; /* a copy must lie in the file (a file replaced under an old manifest) */
    if (last && (fstat(x->fd, &st) != 0 ||
                 (uint64_t)x->lg.base + last * (uint64_t)x->recbytes > (uint64_t)st.st_size))
        return "a row's copy lies past the end of the table's file";
    return NULL;
}

int emb__tier_manifest_read(Tier *x)
{
    TierLog *lg = &x->lg;
    char *mp = man_path(x);
    if (!mp)
        return emb__fail(EMB_ENOMEM, "%s: out of memory for a file name", x->label);
    const int fd = open(mp, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        const int e = errno;
        const int r = e == ENOENT ? 0
                      : emb__fail(EMB_EIO, "%s: cannot open %s: %s", x->label, mp, strerror(e));
        free(mp);
        return r;
    }
    ManHeader h;
    struct stat st;
    const size_t mapb = (size_t)x->nrows * sizeof *lg->loc;
    const char *why = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        why = "not a regular file";
    else if ((uint64_t)st.st_size != sizeof h + mapb)
        why = "its size is not the table's";
    else if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h ||
             pread(fd, lg->loc, mapb, sizeof h) != (ssize_t)mapb)
        why = "it cannot be read whole";
    else
        why = check(x, &h);
    close(fd);
    int r = 0;
    if (why) {
        memset(lg->loc, 0, mapb);
        r = emb__fail(EMB_ECORRUPT, "%s: the manifest %s is corrupt: %s", x->label, mp, why);
    } else if (!names_file(lg, h.uid)) {
        memset(lg->loc, 0, mapb); /* stale: every row at its home */
    } else if (emb__tier_log_segs(lg, h.nseg)) {
        memset(lg->loc, 0, mapb);
        r = emb__fail(EMB_ENOMEM, "%s: out of memory for the log of %s", x->label, x->path);
    } else {
        lg->seg_recs = h.seg_recs;
        for (int64_t row = 0; row < x->nrows; row++)
            if (lg->loc[row])
                lg->live[(lg->loc[row] - 1) / lg->seg_recs]++;
        for (int64_t s = 0; s < lg->nseg; s++)
            lg->kept[s] = lg->live[s] > 0;
    }
    free(mp);
    return r;
}

/* The log's per-segment arrays grown to @n segments (here, below the log: the manifest
   restores them, the log grows them): 0 or EMB_ENOMEM. */
int emb__tier_log_segs(TierLog *lg, int64_t n)
{
    if (n > lg->seg_cap) {
        const int64_t cap = EMB_MAX(n, 2 * lg->seg_cap);
        int32_t *live = realloc(lg->live, (size_t)cap * sizeof *live);
        lg->live = live ? live : lg->live;
        int32_t *pend = live ? realloc(lg->pending, (size_t)cap * sizeof *pend) : NULL;
        lg->pending = pend ? pend : lg->pending;
        uint8_t *kept = pend ? realloc(lg->kept, (size_t)cap) : NULL;
        if (!kept)
            return EMB_ENOMEM;
        lg->kept = kept, lg->seg_cap = cap;
    }
    for (int64_t s = lg->nseg; s < n; s++)
        lg->live[s] = lg->pending[s] = 0, lg->kept[s] = 0;
    lg->nseg = EMB_MAX(lg->nseg, n);
    return 0;
}

int emb__tier_manifest_forge_uid(const char *path, int64_t nrows, uint64_t uid)
{
    ManHeader h;
    uint32_t *map = malloc((size_t)EMB_MAX(1, nrows) * sizeof *map);
    const int fd = open(path, O_RDWR | O_CLOEXEC);
    const size_t mapb = (size_t)nrows * sizeof *map;
    int r = -1;
    if (map && fd >= 0 && pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
        pread(fd, map, mapb, sizeof h) == (ssize_t)mapb) {
        h.uid = uid;
        h.sum = sum_of(h, map, nrows);
        r = write_all(fd, &h, sizeof h, 0) ? -1 : 0;
    }
    if (fd >= 0)
        close(fd);
    free(map);
    return r;
}
