/*
 * checkpoint.c — checkpoints of a store (tf.train.Saver).
 *
 * File format (little-endian, as the host writes it):
 *   "EMBCKPT\1"  u32 version = 1  u32 ntables  i64 global_step
 *   per table:   u16 name length, the name, u8 dtype, i64 ncolumns, i32 featuresize,
 *                then ncolumns x featuresize elements, column by column
 *   trailer:     u32 CRC-32 (zlib) of every byte before it, "EMBEND\0\0"
 * Files are written to a temporary name, flushed, fsync'ed and renamed into place, so a
 * reader sees a whole checkpoint or none. The index `<dir>/checkpoint` (text: a line
 * `latest NAME`, then `kept NAME UNIX_TIME` per managed checkpoint) is replaced the same
 * way. Restoring verifies the structure, the store's tables and the checksum of the whole
 * file before the first table is written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "store/store_impl.h"
#include "tables/table_impl.h"

#define MAGIC "EMBCKPT\1"
#define END_MAGIC "EMBEND\0\0"
#define VERSION 1u
#define PATH_CAP 4096
#define IO_BUF (1u << 20)

typedef struct Kept {
    char name[256];
    double time;
} Kept;

struct EmbSaver {
    char dir[PATH_CAP];
    char prefix[128];
    int32_t max_to_keep; /* < 0: all */
    double keep_hours;
    double last_preserved;
    Kept *kept; /* oldest first */
    int64_t nkept, capkept;
};

/* ---- writing ----------------------------------------------------------------------- */

typedef struct Writer {
    FILE *f;
    uLong crc;
    int err;
} Writer;

static void put(Writer *w, const void *p, size_t n)
{
    if (w->err || n == 0)
        return;
    w->crc = crc32_z(w->crc, p, n);
    if (fwrite(p, 1, n, w->f) != n)
        w->err = errno ? errno : EIO;
}

static void put_table(Writer *w, const EmbTable *t)
{
    const uint16_t len = (uint16_t)strlen(t->name);
    const uint8_t dt = (uint8_t)t->dtype;
    put(w, &len, 2);
    put(w, t->name, len);
    put(w, &dt, 1);
    put(w, &t->ncolumns, 8);
    put(w, &t->featuresize, 4);
    const size_t row = (size_t)t->featuresize * t->elsize;
    for (int64_t c = 0; c < t->ncolumns && !w->err; c++)
        put(w, emb__column(t, c, EMB_CTX_NONE), row);
}

/* Writes the store to @tmp; returns 0 or an errno. */
static int write_file(const char *tmp, const EmbStore *s, int64_t step)
{
    Writer w = {fopen(tmp, "wb"), crc32_z(0, NULL, 0), 0};
    if (!w.f)
        return errno;
    setvbuf(w.f, NULL, _IOFBF, IO_BUF);
    const uint32_t version = VERSION, n = (uint32_t)s->n;
    put(&w, MAGIC, 8);
    put(&w, &version, 4);
    put(&w, &n, 4);
    put(&w, &step, 8);
    for (int64_t i = 0; i < s->n; i++)
        put_table(&w, s->entries[i].table);
    const uint32_t crc = (uint32_t)w.crc;
    put(&w, &crc, 4);
    put(&w, END_MAGIC, 8);
    if (!w.err && (fflush(w.f) != 0 || fsync(fileno(w.f)) != 0))
        w.err = errno;
    if (fclose(w.f) != 0 && !w.err)
        w.err = errno;
    return w.err;
}

/* Writes @data to @path through a temporary file renamed into place. */
static int atomic_write_text(const char *path, const char *data)
{
    char tmp[PATH_CAP + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return emb__fail(EMB_EIO, "cannot write %s: %s", tmp, strerror(errno));
    int ok = fputs(data, f) >= 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return emb__fail(EMB_EIO, "cannot write %s: %s", path, strerror(errno));
    }
    return 0;
}

/* ---- the saver --------------------------------------------------------------------- */

static int kept_push(EmbSaver *s, const char *name, double time)
{
    for (int64_t i = 0; i < s->nkept; i++)
        if (strcmp(s->kept[i].name, name) == 0) { /* re-saved: it becomes the newest */
            memmove(&s->kept[i], &s->kept[i + 1], (size_t)(s->nkept - i - 1) * sizeof(Kept));
            s->nkept--;
            break;
        }
    if (s->nkept == s->capkept) {
        const int64_t cap = s->capkept ? 2 * s->capkept : 8;
        Kept *k = realloc(s->kept, (size_t)cap * sizeof *k);
        if (!k)
            return emb__fail(EMB_ENOMEM, "out of memory for the saver's index");
        s->kept = k;
        s->capkept = cap;
    }
    Kept *k = &s->kept[s->nkept++];
    snprintf(k->name, sizeof k->name, "%s", name);
    k->time = time;
    return 0;
}

static void read_index(EmbSaver *s)
{
    char path[PATH_CAP + 16], line[512], name[256];
    snprintf(path, sizeof path, "%s/checkpoint", s->dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    double t;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "kept %255s %lf", name, &t) == 2)
            kept_push(s, name, t);
    fclose(f);
}

int emb_saver_create(EmbSaver **out, const char *dir, const char *prefix,
                     const EmbSaverOptions *opts)
{
    EMB_CHECK_NULL(out);
    EMB_CHECK_NULL(dir);
    EMB_CHECK_NULL(prefix);
    struct stat st;
    if (!prefix[0] || strchr(prefix, '/') || strlen(prefix) >= 128)
        return emb__fail(EMB_EINVAL, "checkpoint prefix \"%.80s\" is empty, too long or has a '/'",
                         prefix);
    if (strlen(dir) >= PATH_CAP - 300 || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return emb__fail(EMB_EIO, "checkpoint directory \"%.200s\" does not exist", dir);
    EmbSaver *s = calloc(1, sizeof *s);
    if (!s)
        return emb__fail(EMB_ENOMEM, "out of memory for a saver");
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(s->prefix, sizeof s->prefix, "%s", prefix);
    s->max_to_keep = !opts || opts->max_to_keep == 0 ? 5 : opts->max_to_keep;
    s->keep_hours = opts ? opts->keep_every_n_hours : 0.0;
    s->last_preserved = (double)time(NULL);
    read_index(s);
    *out = s;
    return 0;
}

void emb_saver_destroy(EmbSaver **ps)
{
    if (!ps || !*ps)
        return;
    free((*ps)->kept);
    free(*ps);
    *ps = NULL;
}

/* Drops the oldest checkpoints beyond max_to_keep, preserving one per keep_hours. */
static void retire(EmbSaver *s)
{
    while (s->max_to_keep >= 0 && s->nkept > s->max_to_keep) {
        const Kept old = s->kept[0];
        memmove(&s->kept[0], &s->kept[1], (size_t)(s->nkept - 1) * sizeof(Kept));
        s->nkept--;
        if (s->keep_hours > 0 && old.time - s->last_preserved >= s->keep_hours * 3600.0) {
            s->last_preserved = old.time;
            continue;
        }
        char path[PATH_CAP + 300];
        snprintf(path, sizeof path, "%s/%s", s->dir, old.name);
        if (unlink(path) != 0 && errno != ENOENT)
            emb__log(EMB_LOG_WARN, "could not delete old checkpoint %s: %s", path,
                     strerror(errno));
    }
}

static int write_index(const EmbSaver *s)
{
    char path[PATH_CAP + 16];
    size_t cap = 300 + (size_t)s->nkept * 300, len = 0;
    char *text = malloc(cap);
    if (!text)
        return emb__fail(EMB_ENOMEM, "out of memory for the checkpoint index");
    if (s->nkept > 0)
        len += (size_t)snprintf(text + len, cap - len, "latest %s\n", s->kept[s->nkept - 1].name);
    for (int64_t i = 0; i < s->nkept; i++)
        len += (size_t)snprintf(text + len, cap - len, "kept %s %.3f\n", s->kept[i].name,
                                s->kept[i].time);
    text[len] = '\0';
    snprintf(path, sizeof path, "%s/checkpoint", s->dir);
    int r = atomic_write_text(path, text);
    free(text);
    return r;
}

int emb_saver_save(EmbSaver *s, const EmbStore *store, int64_t step, char *path, size_t cap)
{
    EMB_CHECK_NULL(s);
    EMB_CHECK_NULL(store);
    char name[256], full[PATH_CAP + 300], tmp[PATH_CAP + 340];
    snprintf(name, sizeof name, "%s-%lld.emb", s->prefix, (long long)step);
    snprintf(full, sizeof full, "%s/%s", s->dir, name);
    if (path && strlen(full) >= cap)
        return emb__fail(EMB_EINVAL, "checkpoint path %s does not fit in %zu bytes", full, cap);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", full, (long)getpid());
    int e = write_file(tmp, store, step);
    if (e || rename(tmp, full) != 0) {
        e = e ? e : errno;
        unlink(tmp);
        return emb__fail(EMB_EIO, "cannot write checkpoint %s: %s", full, strerror(e));
    }
    int r = kept_push(s, name, (double)time(NULL));
    if (r)
        return r;
    retire(s);
    r = write_index(s);
    if (!r && path)
        snprintf(path, cap, "%s", full);
    return r;
}

int emb_checkpoint_latest(const char *dir, char *path, size_t cap)
{
    EMB_CHECK_NULL(dir);
    EMB_CHECK_NULL(path);
    char index[PATH_CAP + 16], line[512], name[256];
    snprintf(index, sizeof index, "%s/checkpoint", dir);
    FILE *f = fopen(index, "r");
    if (!f)
        return emb__fail(EMB_ENOTFOUND, "no checkpoint index in %s", dir);
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = sscanf(line, "latest %255s", name) == 1;
    fclose(f);
    if (!found)
        return emb__fail(EMB_ENOTFOUND, "the checkpoint index in %s lists none", dir);
    if (strlen(dir) + 1 + strlen(name) >= cap)
        return emb__fail(EMB_EINVAL, "the latest checkpoint's path does not fit in %zu bytes",
                         cap);
    snprintf(path, cap, "%s/%s", dir, name);
    return 0;
}
