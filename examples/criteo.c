/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * criteo.c — the Criteo TSV reader of criteo.h.
 *
 * Threads and slots: a ring of nthreads + 2 batch slots. A worker takes a free slot and
 * the next batch number, copies the batch's raw lines out of the file buffer while it
 * holds the lock (file access is sequential; copying is cheap), then parses them without
 * the lock. The caller takes the slots in batch order. A slot is FREE, FILLING (a worker
 * owns it), READY, or HELD (returned to the caller, recycled by its next call), so the
 * workers parse up to nthreads + 1 batches ahead while the caller trains.
 *
 * Files: plain, or gzip-compressed (the Criteo Terabyte days ship as .gz) where zlib is
 * (CRITEO_HAVE_ZLIB: gzread reads both, telling them apart by their first bytes); without
 * zlib a gzip file is refused at open with a message saying so.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* fileno, ftello, under -std=c11 */
#endif
#include "criteo.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifdef CRITEO_HAVE_ZLIB
#include <zlib.h>
#endif

enum { FREE, FILLING, READY, HELD };
enum { WHY_CAP = 80, READ_CHUNK = 1 << 20 };

typedef struct Bad {
    int64_t line;
    char why[WHY_CAP];
} Bad;

typedef struct Slot {
    int state;
    int64_t seq;        /* batch number */
    int64_t first_line; /* 1-based line of the first line */
    int64_t nlines;     /* raw lines (good and bad) */
    int last;           /* no batch follows this one */
    char *text;         /* the raw lines, back to back */
    size_t text_len, text_cap;
    int64_t *off;       /* nlines starts in text; len < 0: the line was too long */
    int64_t *len;
    /* parsed */
    int64_t n, nbad;
    float *label, *dense;
    int64_t *cat;       /* CRITEO_NCAT x batch, table-major */
    Bad *bad;
} Slot;

struct CriteoReader {
    CriteoOptions o;
#ifdef CRITEO_HAVE_ZLIB
    gzFile f;
#else
    FILE *f;
#endif
    int64_t size;       /* the file's bytes (0: not a regular file) */
    char *buf;          /* file bytes [pos, end) not yet consumed */
    size_t pos, end, cap;
    int file_done;      /* fread returned 0 */
    int reading_done;   /* the last batch has been taken by a worker */
    int io_error;
    char error[160];
    int64_t next_read, next_out, line_no;
    int64_t lines, bad; /* delivered to the caller */
    int nslots;
    Slot *slots;
    int held;           /* slot returned by the last criteo_next, or -1 */
    int stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int nthreads;
    pthread_t *threads;
};

uint64_t criteo_hash(uint32_t v)
{
    uint64_t z = (uint64_t)v + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- one line ------------------------------------------------------------------------- */

static int parse_int(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (n > 0 && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n || n - i > 18)
        return -1;
    int64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = neg ? -v : v;
    return 0;
}

static int parse_hex(const char *s, size_t n, uint32_t *out)
{
    if (n > 8)
        return -1;
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++) {
        const char c = s[i];
        const int d = c >= '0' && c <= '9' ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v << 4 | (uint32_t)d;
    }
    *out = v;
    return 0;
}

/* The tables' sizes, each > 0 (indices are taken mod them); the message names sizes[t]. */
static int check_sizes(const int64_t *sizes, char *why, size_t cap)
{
    if (!sizes) {
        snprintf(why, cap, "criteo: sizes is NULL");
        return -EINVAL;
    }
    for (int t = 0; t < CRITEO_NCAT; t++)
        if (sizes[t] <= 0) {
            snprintf(why, cap, "criteo: sizes[%d] (table C%d) is %lld, not > 0", t, t + 1,
                     (long long)sizes[t]);
            return -EINVAL;
        }
    return 0;
}

/* criteo_parse_line()'s arguments (not the line's bytes), each named when wrong. */
static int check_parse_args(const char *line, int64_t len, const int64_t *sizes,
                            const float *label, const float *dense, const int64_t *cat,
                            int64_t cat_stride, char *why, size_t cap)
{
    const char *bad = len < 0 ? "len is negative"
                    : !line && len > 0 ? "line is NULL with len > 0"
                    : !label ? "label is NULL"
                    : !dense ? "dense is NULL"
                    : !cat ? "cat is NULL"
                    : cat_stride < 1 || cat_stride > INT64_MAX / CRITEO_NCAT
                        ? "cat_stride is not in [1, INT64_MAX / 26]" : NULL;
    if (bad) {
        snprintf(why, cap, "criteo: %s (len %lld, cat_stride %lld)", bad, (long long)len,
                 (long long)cat_stride);
        return -EINVAL;
    }
    return check_sizes(sizes, why, cap);
}

int criteo_parse_line(const char *line, int64_t len, const int64_t *sizes, unsigned flags,
                      float *label, float *dense, int64_t *cat, int64_t cat_stride,
                      char *why, int cap)
{
    char scratch[8];
    if (!why || cap <= 0) {
        why = scratch;
        cap = sizeof scratch;
    }
    const int e = check_parse_args(line, len, sizes, label, dense, cat, cat_stride, why,
                                   (size_t)cap);
    if (e)
        return e;
    if (!line) /* and len 0: an empty line */
        line = "";
    if (len > 0 && line[len - 1] == '\r')
        len--;
    const char *p = line, *const end = line + len;
    for (int field = 0; field < CRITEO_NFIELDS; field++) {
        const char *tab = p < end ? memchr(p, '\t', (size_t)(end - p)) : NULL;
        const char *stop = tab ? tab : end;
        if (!tab && field < CRITEO_NFIELDS - 1) {
            snprintf(why, (size_t)cap, "%d fields, expected %d", field + 1, CRITEO_NFIELDS);
            return -1;
        }
        if (tab && field == CRITEO_NFIELDS - 1) {
            snprintf(why, (size_t)cap, "more than %d fields", CRITEO_NFIELDS);
            return -1;
        }
        const size_t n = (size_t)(stop - p);
        if (field == 0) {
            if (n != 1 || (p[0] != '0' && p[0] != '1')) {
                snprintf(why, (size_t)cap, "label is not 0 or 1");
                return -1;
            }
            *label = (float)(p[0] - '0');
        } else if (field <= CRITEO_NDENSE) {
            int64_t v = 0;
            if (n > 0 && parse_int(p, n, &v) != 0) {
                snprintf(why, (size_t)cap, "I%d is not a decimal integer of at most 18 digits",
                         field);
                return -1;
            }
            dense[field - 1] = (float)log1p((double)(v > 0 ? v : 0));
        } else {
            const int t = field - 1 - CRITEO_NDENSE;
            uint32_t v = 0;
            if (n > 0 && parse_hex(p, n, &v) != 0) {
                snprintf(why, (size_t)cap, "C%d is not a hex string of at most 8 digits", t + 1);
                return -1;
            }
            const uint64_t h = flags & CRITEO_HASH ? criteo_hash(v) : v;
            cat[t * cat_stride] = (int64_t)(h % (uint64_t)sizes[t]);
        }
        p = stop + 1;
    }
    return 0;
}

/* ---- the file: plain or gzip ---------------------------------------------------------- */

/* Up to @n bytes of the (decompressed) file; 0 at its end or on an error (*err set). */
static size_t read_file(CriteoReader *r, char *out, size_t n, const char **err)
{
#ifdef CRITEO_HAVE_ZLIB
    const int got = gzread(r->f, out, (unsigned)(n < (1u << 30) ? n : (1u << 30)));
    int code = Z_OK;
    const char *msg = gzerror(r->f, &code);
    if (got < 0 || (code != Z_OK && code != Z_BUF_ERROR))
        *err = code == Z_ERRNO ? strerror(errno) : msg;
    else if (got == 0 && code == Z_BUF_ERROR)
        *err = "the compressed file ends early (truncated)";
    return got > 0 ? (size_t)got : 0;
#else
    const size_t got = fread(out, 1, n, r->f);
    if (got == 0 && ferror(r->f))
        *err = strerror(errno);
    return got;
#endif
}

/* Opens the file (r->f, r->size); 0 or -errno with the message in @err. */
static int open_file(CriteoReader *r, const char *path, char *err, int cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        const int e = errno;
        snprintf(err, (size_t)cap, "%s: %s", path, strerror(e));
        return -e;
    }
    struct stat st;
    r->size = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) ? (int64_t)st.st_size : 0;
    const int c0 = getc(f), c1 = getc(f);
    const int gzip = c0 == 0x1f && c1 == 0x8b;
#ifdef CRITEO_HAVE_ZLIB
    fclose(f);
    r->f = gzopen(path, "rb");
    if (!r->f) {
        const int e = errno ? errno : ENOMEM;
        snprintf(err, (size_t)cap, "%s: %s", path, strerror(e));
        return -e;
    }
    gzbuffer(r->f, 1 << 17);
    (void)gzip;
    return 0;
#else
    if (gzip) {
        fclose(f);
        snprintf(err, (size_t)cap, "%s: gzip-compressed, and this dlrm_train was built without "
                 "zlib (install zlib1g-dev and rebuild, or gunzip the file)", path);
        return -ENOTSUP;
    }
    rewind(f);
    r->f = f;
    return 0;
#endif
}

static void close_file(CriteoReader *r)
{
    if (!r->f)
        return;
#ifdef CRITEO_HAVE_ZLIB
    gzclose(r->f);
#else
    fclose(r->f);
#endif
    r->f = NULL;
}

/* Bytes of the file read so far (compressed ones for a gzip file). Under the lock. */
static int64_t file_position(CriteoReader *r)
{
#ifdef CRITEO_HAVE_ZLIB
    return (int64_t)gzoffset(r->f);
#else
    return (int64_t)ftello(r->f);
#endif
}

/* ---- raw lines (under the lock) ------------------------------------------------------ */

/* Makes at least one more byte available after pos; 0 at the end of the file. */
static int refill(CriteoReader *r)
{
    if (r->file_done)
        return 0;
    if (r->pos > 0) {
        memmove(r->buf, r->buf + r->pos, r->end - r->pos);
        r->end -= r->pos;
        r->pos = 0;
    }
    const char *err = NULL;
    const size_t got = read_file(r, r->buf + r->end, r->cap - r->end, &err);
    if (got == 0) {
        r->file_done = 1;
        if (err) {
            r->io_error = 1;
            snprintf(r->error, sizeof r->error, "read error after line %lld: %s",
                     (long long)r->line_no, err);
        }
        return 0;
    }
    r->end += got;
    return 1;
}

static int append(Slot *s, const char *p, size_t n)
{
    if (n == 0)
        return 0;
    if (s->text_len + n > s->text_cap) {
        size_t cap = s->text_cap;
        while (cap < s->text_len + n)
            cap *= 2;
        char *t = realloc(s->text, cap);
        if (!t)
            return -1;
        s->text = t;
        s->text_cap = cap;
    }
    memcpy(s->text + s->text_len, p, n);
    s->text_len += n;
    return 0;
}

/* Skips the rest of an overlong line, through its '\n'. */
static void skip_line(CriteoReader *r)
{
    for (;;) {
        const char *nl = memchr(r->buf + r->pos, '\n', r->end - r->pos);
        if (nl) {
            r->pos = (size_t)(nl - r->buf) + 1;
            return;
        }
        r->pos = r->end;
        if (!refill(r))
            return;
    }
}

/* The next line into the slot; 0 when there is none. The buffer holds at least max_line + 1
 * bytes, so a line without '\n' in a full buffer is overlong. */
static int next_line(CriteoReader *r, Slot *s)
{
    const size_t max = (size_t)r->o.max_line;
    for (;;) {
        const size_t avail = r->end - r->pos;
        const char *start = r->buf + r->pos;
        const char *nl = memchr(start, '\n', avail < max + 1 ? avail : max + 1);
        if (nl || avail > max || (r->file_done && avail > 0)) {
            const size_t n = nl ? (size_t)(nl - start) : avail;
            s->off[s->nlines] = (int64_t)s->text_len;
            if (n > max) {
                s->len[s->nlines] = -1;
                skip_line(r);
            } else {
                s->len[s->nlines] = (int64_t)n;
                if (append(s, start, n) != 0)
                    return -1;
                r->pos += n + (nl != NULL);
            }
            s->nlines++;
            r->line_no++;
            return 1;
        }
        if (!refill(r) && r->end == r->pos)
            return 0;
    }
}

static int read_batch(CriteoReader *r, Slot *s)
{
    s->nlines = 0;
    s->text_len = 0;
    s->first_line = r->line_no + 1;
    int got = 1;
    while (s->nlines < r->o.batch && (got = next_line(r, s)) == 1) {
    }
    if (got < 0) {
        r->io_error = 1;
        snprintf(r->error, sizeof r->error, "out of memory at line %lld", (long long)r->line_no);
    }
    s->last = got <= 0 || r->io_error;
    return 0;
}

/* ---- parsing (no lock) --------------------------------------------------------------- */

static void parse_batch(const CriteoReader *r, Slot *s)
{
    const int64_t B = r->o.batch;
    s->n = s->nbad = 0;
    for (int64_t i = 0; i < s->nlines; i++) {
        Bad *b = &s->bad[s->nbad];
        if (s->len[i] < 0) {
            snprintf(b->why, WHY_CAP, "longer than %lld bytes", (long long)r->o.max_line);
        } else if (criteo_parse_line(s->text + s->off[i], s->len[i], r->o.sizes, r->o.flags,
                                     &s->label[s->n], &s->dense[s->n * CRITEO_NDENSE],
                                     &s->cat[s->n], B, b->why, WHY_CAP) == 0) {
            s->n++;
            continue;
        }
        b->line = s->first_line + i;
        s->nbad++;
    }
}

static void *worker(void *arg)
{
    CriteoReader *r = arg;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        if (r->stop || r->reading_done)
            break;
        Slot *s = NULL;
        for (int i = 0; i < r->nslots && !s; i++)
            if (r->slots[i].state == FREE)
                s = &r->slots[i];
        if (!s) {
            pthread_cond_wait(&r->cv, &r->mu);
            continue;
        }
        s->state = FILLING;
        s->seq = r->next_read++;
        read_batch(r, s);
        if (s->last)
            r->reading_done = 1;
        pthread_mutex_unlock(&r->mu);
        parse_batch(r, s);
        pthread_mutex_lock(&r->mu);
        s->state = READY;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* ---- the public calls ---------------------------------------------------------------- */

/* The next slot in batch order, HELD by the caller; NULL after the last one. Under the lock. */
static Slot *take(CriteoReader *r)
{
    if (r->held >= 0) {
        Slot *h = &r->slots[r->held];
        if (h->last)
            return NULL; /* the last batch stays held: every later call is the end */
        h->state = FREE;
        r->held = -1;
        pthread_cond_broadcast(&r->cv);
    }
    for (;;) {
        for (int i = 0; i < r->nslots; i++) {
            Slot *s = &r->slots[i];
            if (s->state == READY && s->seq == r->next_out) {
                s->state = HELD;
                r->held = i;
                r->next_out++;
                r->lines += s->nlines;
                r->bad += s->nbad;
                return s;
            }
        }
        pthread_cond_wait(&r->cv, &r->mu);
    }
}

int criteo_next(CriteoReader *r, CriteoBatch *batch)
{
    memset(batch, 0, sizeof *batch);
    for (;;) { /* batches whose every line is bad are skipped (their lines reported) */
        pthread_mutex_lock(&r->mu);
        const Slot *s = take(r);
        const int err = r->io_error && (!s || s->last);
        pthread_mutex_unlock(&r->mu);
        if (!s)
            return err ? -EIO : 0;
        if (r->o.report)
            for (int64_t i = 0; i < s->nbad; i++)
                r->o.report(r->o.report_user, s->bad[i].line, s->bad[i].why);
        if (s->n == 0 && !s->last)
            continue;
        batch->n = s->n;
        batch->first_line = s->first_line;
        batch->label = s->label;
        batch->dense = s->dense;
        for (int t = 0; t < CRITEO_NCAT; t++)
            batch->cat[t] = s->cat + t * r->o.batch;
        return err ? -EIO : 0;
    }
}

void criteo_counts(const CriteoReader *r, int64_t *lines, int64_t *bad)
{
    if (lines)
        *lines = r ? r->lines : 0;
    if (bad)
        *bad = r ? r->bad : 0;
}

void criteo_position(CriteoReader *r, int64_t *done, int64_t *total)
{
    pthread_mutex_lock(&r->mu);
    *done = r->f ? file_position(r) : 0;
    pthread_mutex_unlock(&r->mu);
    *total = r->size;
}

const char *criteo_error(const CriteoReader *r)
{
    return r ? r->error : "";
}

void criteo_close(CriteoReader **pr)
{
    CriteoReader *r = pr ? *pr : NULL;
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    for (int i = 0; i < r->nthreads; i++)
        pthread_join(r->threads[i], NULL);
    for (int i = 0; r->slots && i < r->nslots; i++) {
        Slot *s = &r->slots[i];
        free(s->text);
        free(s->off);
        free(s->len);
        free(s->label);
        free(s->dense);
        free(s->cat);
        free(s->bad);
    }
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    close_file(r);
    free(r->slots);
    free(r->threads);
    free(r->buf);
    free(r);
    *pr = NULL;
}

static int check_options(const CriteoOptions *o, char *err, int cap)
{
    if (o->batch <= 0 || o->batch > (INT64_C(1) << 24) || o->nthreads < 0 ||
        o->nthreads > 64 || o->max_line < 0 || o->max_line > (INT64_C(1) << 30)) {
        snprintf(err, (size_t)cap, "criteo: batch %lld, nthreads %d or max_line %lld out of range",
                 (long long)o->batch, o->nthreads, (long long)o->max_line);
        return -EINVAL;
    }
    return check_sizes(o->sizes, err, (size_t)cap);
}

static int alloc_slots(CriteoReader *r)
{
    const size_t B = (size_t)r->o.batch;
    r->slots = calloc((size_t)r->nslots, sizeof *r->slots);
    if (!r->slots)
        return -ENOMEM;
    for (int i = 0; i < r->nslots; i++) {
        Slot *s = &r->slots[i];
        s->off = malloc(B * sizeof *s->off);
        s->len = malloc(B * sizeof *s->len);
        s->label = malloc(B * sizeof *s->label);
        s->dense = malloc(B * CRITEO_NDENSE * sizeof *s->dense);
        s->cat = malloc(B * CRITEO_NCAT * sizeof *s->cat);
        s->bad = malloc(B * sizeof *s->bad);
        s->text_cap = 1 << 16;
        s->text = malloc(s->text_cap);
        if (!s->text || !s->off || !s->len || !s->label || !s->dense || !s->cat || !s->bad)
            return -ENOMEM;
    }
    return 0;
}

int criteo_open(CriteoReader **out, const char *path, const CriteoOptions *opts, char *err,
                int cap)
{
    char scratch[8];
    if (!err || cap <= 0) {
        err = scratch;
        cap = sizeof scratch;
    }
    err[0] = '\0';
    if (!out || !path || !opts) {
        snprintf(err, (size_t)cap, "criteo: %s is NULL", !out ? "out" : !path ? "path" : "opts");
        return -EINVAL;
    }
    int ret = check_options(opts, err, cap);
    if (ret)
        return ret;
    CriteoReader *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->o = *opts;
    if (!r->o.max_line)
        r->o.max_line = 65536;
    r->nthreads = r->o.nthreads ? r->o.nthreads : 2;
    r->nslots = r->nthreads + 2;
    r->held = -1;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->cap = (size_t)r->o.max_line + 1 > READ_CHUNK ? (size_t)r->o.max_line + 1 : READ_CHUNK;
    r->buf = malloc(r->cap);
    r->threads = calloc((size_t)r->nthreads, sizeof *r->threads);
    if (!r->buf || !r->threads || alloc_slots(r) != 0) {
        snprintf(err, (size_t)cap, "criteo: out of memory");
        r->nthreads = 0;
        criteo_close(&r);
        return -ENOMEM;
    }
    ret = open_file(r, path, err, cap);
    if (ret) {
        r->nthreads = 0;
        criteo_close(&r);
        return ret;
    }
    for (int i = 0; i < r->nthreads; i++) {
        const int e = pthread_create(&r->threads[i], NULL, worker, r);
        if (e) {
            snprintf(err, (size_t)cap, "criteo: pthread_create: %s", strerror(e));
            r->nthreads = i;
            criteo_close(&r);
            return -e;
        }
    }
    *out = r;
    return 0;
}
