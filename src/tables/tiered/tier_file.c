/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_file.c — a tiered table's backing file (tier.h): its header, opening it
 * (regular files only, locked for the table's life), creating it, and the new files that
 * replace it (a create's, a restore's).
 *
 * Ownership: the table holds an exclusive flock() on its file from open to destroy, so a
 * second table or process that opens or creates the same path gets EMB_EBUSY naming it. A
 * lock taken on a path that was renamed over meanwhile is given up (EMB_EBUSY too): the
 * lock-file habit of checking that the path still names the locked file.
 *
 * A create never destroys what is at the path before it succeeds: it locks the existing
 * file (or a placeholder it makes where there is none), formats a new file under a unique
 * name beside it (`<path>.tier-<pid>-<n>`, O_EXCL: no link is followed) and renames that
 * over the path on commit. A create that fails or is never committed removes its new file
 * (and its placeholder), leaving the path as it found it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dtype.h"
#include "internal.h"
#include "tables/tiered/tier.h"

typedef struct TierHeader {
    char magic[8];
    uint32_t version;
    int32_t dtype, D, state_room;
    int64_t nrows, recbytes;
    uint64_t uid; /* this file's, at random: names it in the manifest (0 in older files) */
    uint32_t uid0; /* 1: a manifest of uid 0 still names this file too (an older file given
                      its uid by a flush whose manifest is not written yet) */
    uint32_t pad;
} TierHeader;

static atomic_uint_fast64_t tmp_counter;

int64_t emb__tier_rec_offset(const Tier *x, int64_t row)
{
    return EMB_TIER_HEADER + row * (int64_t)x->recbytes;
}

void emb__tier_set_layout(Tier *x)
{
    x->state_off = (x->rowbytes + 15) / 16 * 16;
    x->recbytes = x->state_off + 4 * (size_t)x->state_room;
}

/* A new file's uid: distinct for the files of one process and, very likely, of others. */
static uint64_t new_uid(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t z = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    z ^= (uint64_t)getpid() << 40 ^ (uint64_t)atomic_fetch_add(&tmp_counter, 1) << 20;
    z += 0x9e3779b97f4a7c15u; /* splitmix64's finaliser */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return (z ^ (z >> 31)) | 1;
}

uint64_t emb__tier_file_uid(int fd, bool *uid0)
{
    TierHeader h;
    const bool ok = pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h;
    *uid0 = ok && h.uid0 == 1;
    return ok ? h.uid : 0;
}

int emb__tier_file_set_uid(const Tier *x, uint64_t *uid, bool uid0)
{
    TierHeader h;
    int e = pread(x->fd, &h, sizeof h, 0) == (ssize_t)sizeof h ? 0 : errno ? errno : EIO;
    if (!e) {
        h.uid = *uid ? *uid : new_uid(), h.uid0 = uid0;
        e = pwrite(x->fd, &h, sizeof h, 0) == (ssize_t)sizeof h ? 0 : errno ? errno : EIO;
    }
    e = e ? e : -emb__tier_io_sync(x->fd);
    if (e)
        return emb__fail(EMB_EIO, "%s: writing the header of %s: %s", x->label, x->path,
                         strerror(e));
    *uid = h.uid;
    return 0;
}

int emb__tier_format(const Tier *x, int fd, const char *path)
{
    char page[EMB_TIER_HEADER] = {0};
    TierHeader h = {.version = 1, .dtype = x->dtype, .D = x->D, .state_room = x->state_room,
                    .nrows = x->nrows, .recbytes = (int64_t)x->recbytes, .uid = new_uid()};
    memcpy(h.magic, EMB_TIER_MAGIC, 8);
    memcpy(page, &h, sizeof h);
    if (pwrite(fd, page, sizeof page, 0) != (ssize_t)sizeof page ||
        ftruncate(fd, emb__tier_rec_offset(x, x->nrows)) != 0)
        return emb__fail(EMB_EIO, "%s: cannot size %s for %lld rows: %s", x->label, path,
                         (long long)x->nrows, strerror(errno));
    return 0;
}

/* Rows of @recbytes a file of @size bytes holds whole. */
static int64_t rows_held(int64_t size, int64_t recbytes)
{
    return size < EMB_TIER_HEADER ? 0 : (size - EMB_TIER_HEADER) / recbytes;
}

/* Reads and checks the header of @fd (@path for messages) into @sh and @recbytes. */
static int read_header(int fd, const char *path, EmbTierShape *sh, int64_t *recbytes)
{
    TierHeader h;
    struct stat st;
    if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h.magic, EMB_TIER_MAGIC, 8))
        return emb__fail(EMB_ECORRUPT, "%s is not a tiered table's file (no header)", path);
    size_t rb = 0;
    if (h.version != 1 || h.D < 1 || h.nrows < 0 || h.state_room < 0 ||
        (rb = emb__row_bytes((EmbDtype)h.dtype, h.D)) == 0 ||
        (int64_t)((rb + 15) / 16 * 16 + 4 * (size_t)h.state_room) != h.recbytes)
        return emb__fail(EMB_ECORRUPT, "%s: the header of a tiered table is corrupt", path);
    if (fstat(fd, &st) != 0)
        return emb__fail(EMB_EIO, "%s: %s", path, strerror(errno));
    const int64_t have = rows_held(st.st_size, h.recbytes);
    if (have < h.nrows)
        return emb__fail(EMB_ECORRUPT, "%s is short: rows %lld..%lld of %lld are missing",
                         path, (long long)have, (long long)h.nrows - 1, (long long)h.nrows);
    *sh = (EmbTierShape){.nrows = h.nrows, .D = h.D, .dtype = h.dtype,
                         .state_room = h.state_room};
    *recbytes = h.recbytes;
    return 0;
}

/* Opens @path into *@fd (@flags besides O_CLOEXEC | O_NONBLOCK: a FIFO does not block the
   open; blocking again after) and refuses anything but a regular file: 0, an error naming
   @path (@label: the message's), or 1 with no message where O_EXCL found a file there. */
static int open_regular(const char *label, const char *path, int flags, int *fd)
{
    *fd = open(path, flags | O_CLOEXEC | O_NONBLOCK, 0644);
    if (*fd < 0 && errno == EEXIST && (flags & O_EXCL))
        return 1;
    if (*fd < 0)
        return emb__fail(errno == ENOENT ? EMB_ENOTFOUND : EMB_EIO, "%s: cannot open %s: %s",
                         label, path, strerror(errno));
    struct stat st;
    if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(*fd);
        *fd = -1;
        return emb__fail(EMB_EINVAL, "%s: %s is not a regular file", label, path);
    }
    fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL) & ~O_NONBLOCK);
    return 0;
}

int emb__tier_read_shape(const char *path, EmbTierShape *sh)
{
    int fd;
    int r = open_regular("tiered table", path, O_RDONLY, &fd);
    if (r)
        return r;
    int64_t rec;
    r = read_header(fd, path, sh, &rec);
    close(fd);
    return r;
}

/* Locks the file @fd opened as @path for this table alone: 0, or EMB_EBUSY naming it when
   another table or process holds it, or @path no longer names it (renamed over). */
static int lock_file(const Tier *x, int fd, const char *path)
{
    struct stat a, b;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0)
        return emb__fail(errno == EWOULDBLOCK ? EMB_EBUSY : EMB_EIO,
                         "%s: %s is in use by another tiered table (locked): %s", x->label,
                         path, strerror(errno));
    if (fstat(fd, &a) != 0 || stat(path, &b) != 0 || a.st_dev != b.st_dev ||
        a.st_ino != b.st_ino)
        return emb__fail(EMB_EBUSY, "%s: %s was replaced while it was opened", x->label, path);
    return 0;
}

int emb__tier_tmp_create(const Tier *x, const char *path, char **name)
{
    const size_t cap = strlen(path) + 64;
    char *tmp = malloc(cap);
    if (!tmp)
        return emb__fail(EMB_ENOMEM, "%s: out of memory for a file name", x->label);
    for (int attempt = 0; attempt < 16; attempt++) {
        const unsigned long long n = (unsigned long long)atomic_fetch_add(&tmp_counter, 1);
        snprintf(tmp, cap, "%s.tier-%ld-%llu", path, (long)getpid(), n);
        const int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0)
            break;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            *name = tmp;
            return fd;
        }
        close(fd);
        unlink(tmp);
    }
    const int r = emb__fail(EMB_EIO, "%s: cannot create a file beside %s: %s", x->label, path,
                            strerror(errno));
    free(tmp);
    return r;
}

/* An existing file: opened, locked, its shape read into @x. */
static int open_existing(Tier *x)
{
    EmbTierShape sh = {0};
    int64_t rec = 0;
    int r = open_regular(x->label, x->path, O_RDWR, &x->fd);
    r = r ? r : lock_file(x, x->fd, x->path);
    r = r ? r : read_header(x->fd, x->path, &sh, &rec);
    if (r)
        return r;
    x->nrows = sh.nrows, x->D = sh.D, x->dtype = sh.dtype, x->state_room = sh.state_room;
    x->rowbytes = emb__row_bytes((EmbDtype)sh.dtype, sh.D);
    emb__tier_set_layout(x);
    return 0;
}

/* A create: what is at the path locked (hold_fd; a placeholder made where there is none),
   the new file formatted under a unique name (tmp_path) until emb__tier_commit. */
static int create_new(Tier *x)
{
    int r = open_regular(x->label, x->path, O_RDWR | O_CREAT | O_EXCL, &x->hold_fd);
    x->made_path = r == 0;
    if (r == 1) /* a file there: kept until the commit */
        r = open_regular(x->label, x->path, O_RDWR, &x->hold_fd);
    r = r ? r : lock_file(x, x->hold_fd, x->path);
    if (r)
        return r;
    x->fd = emb__tier_tmp_create(x, x->path, &x->tmp_path);
    if (x->fd < 0)
        return x->fd;
    return emb__tier_format(x, x->fd, x->tmp_path);
}

int emb__tier_open_file(Tier *x, bool create)
{
    x->fd = x->hold_fd = -1;
    return create ? create_new(x) : open_existing(x);
}

int emb__tier_commit(Tier *x)
{
    if (!x->tmp_path)
        return 0;
    if (rename(x->tmp_path, x->path) != 0)
        return emb__fail(EMB_EIO, "%s: cannot rename %s to %s: %s", x->label, x->tmp_path,
                         x->path, strerror(errno));
    free(x->tmp_path);
    x->tmp_path = NULL;
    close(x->hold_fd); /* the file renamed over: its lock goes with it */
    x->hold_fd = -1;
    x->made_path = false;
    return 0;
}

void emb__tier_close_file(Tier *x)
{
    if (x->tmp_path) /* a create not committed: the path as it was found */
        unlink(x->tmp_path);
    struct stat a, b;
    if (x->made_path && fstat(x->hold_fd, &a) == 0 && stat(x->path, &b) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        unlink(x->path);
    if (x->hold_fd >= 0)
        close(x->hold_fd);
    if (x->fd >= 0)
        close(x->fd);
    free(x->tmp_path);
    x->fd = x->hold_fd = -1, x->tmp_path = NULL, x->made_path = false;
}

int emb__tier_check_size(const Tier *x)
{
    struct stat st;
    if (fstat(x->fd, &st) != 0)
        return emb__fail(EMB_EIO, "%s: %s: %s", x->label, x->path, strerror(errno));
    const int64_t have = rows_held(st.st_size, (int64_t)x->recbytes);
    if (have < x->nrows)
        return emb__fail(EMB_EIO, "%s: %s is short (%lld bytes): rows %lld..%lld of %lld are "
                         "missing", x->label, x->path, (long long)st.st_size, (long long)have,
                         (long long)x->nrows - 1, (long long)x->nrows);
    return 0;
}

/* EMB_EIO naming the file, the rows of the failed requests among @n and the first errno. */
int emb__tier_io_fail(const Tier *x, const EmbTierReq *r, int64_t n, const char *what)
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
