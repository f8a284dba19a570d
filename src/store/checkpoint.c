/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * checkpoint.c — the saver (tf.train.Saver): checkpoint files (format.c) and the index.
 *
 * The index `<dir>/checkpoint` is text: a line `latest NAME`, then `kept NAME UNIX_TIME`
 * per managed checkpoint, oldest first, and during a save `pending NAME`. A save, in this
 * order:
 *   1. deletes the temporaries of crashed saves of this prefix (and of the index): a
 *      temporary is held under an exclusive flock() by the save writing it, so one whose
 *      lock can be taken has no writer left; and the checkpoints an index read at the
 *      start of the save lists as pending but not kept (a save killed after its rename);
 *   2. writes the checkpoint under a temporary name unique to the call
 *      (`<name>.tmp-<pid>-<n>`) and syncs it;
 *   3. replaces the index (through a temporary, synced, renamed) by the old one plus
 *      `pending NAME`, then renames the checkpoint into place;
 *   4. replaces the index by the new list (so it names only files that exist), with the
 *      checkpoints it retires as pending;
 *   5. only then deletes those.
 * A kill at any point leaves an index whose every entry exists, and the next saver of the
 * directory removes what the killed save left. Saves are serialised: threads sharing a
 * saver by its mutex, and every saver of the directory, in any process, by an exclusive
 * flock() of the directory held for the whole save, under which the saver re-reads the
 * index (another saver may have changed it), so savers of one directory and prefix keep
 * one list; where the index was deleted, a saver keeps the list it remembers. Index entries are trusted
 * only as plain file names of this saver's prefix (`<prefix>-<step>.safetensors`, or .emb
 * of the older format): anything else in the index is ignored and never deleted.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/model.h"
#include "store/store_impl.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

#define PATH_CAP 4096
#define PREFIX_MAX 100
#define FILE_NAME_MAX EMB_CKPT_FILE_NAME_MAX
#define INDEX_NAME "checkpoint"
#define TMP_TAG ".tmp-"
#define INDEX_LINE_MAX 1024

typedef EmbKept Kept;

struct EmbSaver {
    char dir[PATH_CAP];
    char prefix[PREFIX_MAX + 1];
    int32_t max_to_keep; /* 0: all */
    double keep_hours;
    double last_preserved;
    Kept *kept; /* oldest first */
    int64_t nkept, capkept;
    Kept *pending; /* pending entries of the index last read */
    int64_t npending, cappending;
    const EmbCheckpointVar *vars;
    int64_t nvars;
    const EmbOptimizer *opt;
    int32_t full_every;   /* deltas between full saves (0: every save is full) */
    int32_t ndeltas;      /* deltas written since the last full save */
    char last[FILE_NAME_MAX + 1]; /* the file this saver wrote last ("": none) */
    uint64_t last_hash;   /* its header_xxh3: a delta's link */
    pthread_mutex_t lock; /* one save at a time per saver (the kept list, the index) */
};

static atomic_uint_fast64_t tmp_counter;

/* ---- names ------------------------------------------------------------------------- */

/* A plain file name: no '/', not "." or "..", no control character, not too long. */
static bool plain_name(const char *s)
{
    const size_t n = strlen(s);
    if (n == 0 || n > FILE_NAME_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p == '/' || *p < 0x20 || *p == 0x7f)
            return false;
    return true;
}

/* `<prefix>-<integer>.safetensors` or `.emb`: a checkpoint this saver manages. */
static bool own_name(const EmbSaver *s, const char *name)
{
    const size_t pl = strlen(s->prefix);
    if (!plain_name(name) || strncmp(name, s->prefix, pl) != 0 || name[pl] != '-')
        return false;
    const char *p = name + pl + 1;
    p += *p == '-';
    const size_t nd = strspn(p, "0123456789");
    return nd > 0 && nd <= 20 && (strcmp(p + nd, EMB_CKPT_EXT) == 0 || strcmp(p + nd, ".emb") == 0);
}

static int check_prefix(const char *prefix)
{
    const size_t n = strlen(prefix);
    bool ok = n > 0 && n <= PREFIX_MAX && prefix[0] != '.';
    for (const unsigned char *p = (const unsigned char *)prefix; ok && *p; p++)
        ok = *p > 0x20 && *p != 0x7f && *p != '/' && *p != '\\';
    if (!ok)
        return emb__fail(EMB_EINVAL, "checkpoint prefix \"%.120s\" must be 1 to %d bytes, not "
                         "start with '.' and have no '/', '\\', space or control character",
                         prefix, PREFIX_MAX);
    return 0;
}

/* ---- temporaries ------------------------------------------------------------------- */

/* Creates and locks a temporary for @final; its name goes to @tmp. Returns an fd or -1. */
static int tmp_create(const char *final, char *tmp, size_t cap)
{
    for (int attempt = 0; attempt < 16; attempt++) {
        const unsigned long long n = (unsigned long long)atomic_fetch_add(&tmp_counter, 1);
        snprintf(tmp, cap, "%s" TMP_TAG "%ld-%llu", final, (long)getpid(), n);
        const int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) {
            if (errno == EEXIST)
                continue;
            return -1;
        }
        struct stat st;
        if (flock(fd, LOCK_EX) == 0 && fstat(fd, &st) == 0 && st.st_nlink > 0)
            return fd;
        close(fd); /* a cleaner took it before we locked it: another name */
    }
    errno = EEXIST;
    return -1;
}

/* Syncs and closes @fd, renames @tmp to @final and syncs the directory; 0 or an errno. */
static int tmp_commit(int fd, const char *tmp, const char *final, const char *dir)
{
    int e = fsync(fd) == 0 ? 0 : errno;
    if (!e && rename(tmp, final) != 0)
        e = errno;
    close(fd); /* after the rename: the lock protects the temporary until then */
    if (e) {
        unlink(tmp);
        return e;
    }
    const int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

/* A temporary of a save of this prefix or of the index (this or the older naming). */
static bool is_temporary(const EmbSaver *s, const char *name)
{
    const size_t pl = strlen(s->prefix);
    if (strncmp(name, INDEX_NAME ".tmp", strlen(INDEX_NAME ".tmp")) == 0)
        return true;
    return strncmp(name, s->prefix, pl) == 0 && name[pl] == '-' && strstr(name + pl, ".tmp");
}

/* Deletes the temporaries no save holds (their writer crashed). */
static void clean_temporaries(const EmbSaver *s)
{
    DIR *d = opendir(s->dir);
    if (!d)
        return;
    const int dfd = dirfd(d);
    for (struct dirent *de; (de = readdir(d));) {
        if (!is_temporary(s, de->d_name))
            continue;
        const int fd = openat(dfd, de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            continue;
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0)
            unlinkat(dfd, de->d_name, 0); /* no writer holds it */
        close(fd);
    }
    closedir(d);
}

/* ---- the index --------------------------------------------------------------------- */

static int kept_push(Kept **kept, int64_t *n, int64_t *cap, const char *name, double time)
{
    for (int64_t i = 0; i < *n; i++)
        if (strcmp((*kept)[i].name, name) == 0) { /* re-saved: it becomes the newest */
            memmove(&(*kept)[i], &(*kept)[i + 1], (size_t)(*n - i - 1) * sizeof(Kept));
            (*n)--;
            break;
        }
    int r = emb__grow(kept, *n, cap, sizeof **kept, "the saver's index");
    if (r)
        return r;
    Kept *k = &(*kept)[(*n)++];
    snprintf(k->name, sizeof k->name, "%s", name);
    k->time = time;
    return 0;
}

/* Splits "WORD NAME[ TIME]\n" (nothing more); returns the field count (0: malformed). */
static int index_line(char *line, const char *word, char **name, double *time)
{
    const size_t wl = strlen(word);
    if (strncmp(line, word, wl) != 0 || line[wl] != ' ')
        return 0;
    line[strcspn(line, "\n")] = '\0';
    *name = line + wl + 1;
    char *sp = strchr(*name, ' ');
    if (!sp)
        return 1;
    *sp = '\0';
    char *end;
    errno = 0;
    *time = strtod(sp + 1, &end);
    return errno == 0 && end != sp + 1 && *end == '\0' ? 2 : 0;
}

/* The lists an index names: its `kept` and `pending` entries of this saver's prefix. */
typedef struct Index {
    Kept *kept, *pending;
    int64_t nkept, capkept, npending, cappending;
    bool found; /* the file exists */
} Index;

/* Reads the index into @ix (zeroed first; freed on failure). */
static int read_index(const EmbSaver *s, Index *ix)
{
    char path[PATH_CAP + 16], line[INDEX_LINE_MAX];
    memset(ix, 0, sizeof *ix);
    snprintf(path, sizeof path, "%s/" INDEX_NAME, s->dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? 0 : emb__fail(EMB_EIO, "cannot read %s: %s", path,
                                               strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return emb__fail(EMB_EIO, "checkpoint index %s is not a regular file", path);
    }
    ix->found = true;
    int r = 0;
    bool whole = true;
    while (!r && fgets(line, sizeof line, f)) {
        const bool complete = strchr(line, '\n') != NULL || feof(f);
        char *name;
        double t;
        if (whole && complete && index_line(line, "kept", &name, &t) == 2 && own_name(s, name))
            r = kept_push(&ix->kept, &ix->nkept, &ix->capkept, name, t);
        else if (whole && complete && index_line(line, "pending", &name, &t) == 1 &&
                 own_name(s, name))
            r = kept_push(&ix->pending, &ix->npending, &ix->cappending, name, 0.0);
        whole = complete; /* the rest of an over-long line is no line */
    }
    fclose(f);
    if (r) {
        free(ix->kept);
        free(ix->pending);
    }
    return r;
}

/* Makes the lists of @ix the saver's (frees its old ones). */
static void adopt_index(EmbSaver *s, const Index *ix)
{
    free(s->kept);
    free(s->pending);
    s->kept = ix->kept;
    s->nkept = ix->nkept;
    s->capkept = ix->capkept;
    s->pending = ix->pending;
    s->npending = ix->npending;
    s->cappending = ix->cappending;
}

/* The index text of @kept and `pending` lines for the @npend names of @pend (malloc'ed;
 * NULL: out of memory, with the message set). */
static char *index_text(const Kept *kept, int64_t n, const Kept *pend, int64_t npend)
{
    const size_t cap = 300 + (size_t)(n + npend + 1) * (FILE_NAME_MAX + 40);
    char *text = malloc(cap);
    if (!text) {
        emb__fail(EMB_ENOMEM, "out of memory for the checkpoint index");
        return NULL;
    }
    size_t len = 0;
    text[0] = '\0';
    if (n > 0)
        len += (size_t)snprintf(text + len, cap - len, "latest %s\n", kept[n - 1].name);
    for (int64_t i = 0; i < n; i++)
        len += (size_t)snprintf(text + len, cap - len, "kept %s %.3f\n", kept[i].name,
                                kept[i].time);
    for (int64_t i = 0; i < npend; i++)
        len += (size_t)snprintf(text + len, cap - len, "pending %s\n", pend[i].name);
    return text;
}

/* Replaces the index by @text (allocates nothing). */
static int write_index(const EmbSaver *s, const char *text)
{
    char path[PATH_CAP + 16], tmp[PATH_CAP + 64];
    snprintf(path, sizeof path, "%s/" INDEX_NAME, s->dir);
    const size_t len = strlen(text);
    const int fd = tmp_create(path, tmp, sizeof tmp);
    int e = fd < 0 ? errno : 0;
    for (size_t off = 0; !e && off < len;) {
        const ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        e = w < 0 ? errno : 0;
        off += w > 0 ? (size_t)w : 0;
    }
    if (fd >= 0 && e) {
        close(fd);
        unlink(tmp);
    } else if (fd >= 0) {
        e = tmp_commit(fd, tmp, path, s->dir);
    }
    return e ? emb__fail(EMB_EIO, "cannot write %s: %s", path, strerror(e)) : 0;
}

/* ---- the saver --------------------------------------------------------------------- */

/* Creates @dir and its missing parents as `mkdir -p` does (mode 0777 less the umask); an
 * existing directory is fine. The error names the path that could not be made. */
static int make_dirs(const char *dir)
{
    char path[PATH_CAP];
    struct stat st;
    snprintf(path, sizeof path, "%s", dir); /* the caller checked its length */
    for (char *p = path + 1;; p++) {
        const char c = *p;
        if (c != '/' && c != '\0')
            continue;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return emb__fail(EMB_EIO, "cannot create checkpoint directory \"%.200s\": %s",
                             path, strerror(errno));
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            return emb__fail(EMB_EIO, "checkpoint directory \"%.200s\": %s", path,
                             stat(path, &st) != 0 ? strerror(errno) : "not a directory");
        *p = c;
        if (c == '\0')
            return 0;
    }
}

int emb_saver_create(EmbSaver **out, const char *dir, const char *prefix,
                     const EmbSaverOptions *opts)
{
    EMB_CHECK_NULL(out);
    EMB_CHECK_NULL(dir);
    EMB_CHECK_NULL(prefix);
    struct stat st;
    if (opts && !(opts->keep_every_n_hours >= 0.0 && opts->keep_every_n_hours <= 1e9))
        return emb__fail(EMB_EINVAL, "keep_every_n_hours %g is not a number in [0, 1e9]",
                         opts->keep_every_n_hours);
    int r = check_prefix(prefix);
    if (r)
        return r;
    if (!dir[0] || strlen(dir) >= PATH_CAP - FILE_NAME_MAX - 64)
        return emb__fail(EMB_EINVAL, "checkpoint directory \"%.200s\": empty or longer "
                         "than %d bytes", dir, PATH_CAP - FILE_NAME_MAX - 65);
    if (opts && opts->full_every < 0)
        return emb__fail(EMB_EINVAL, "saver full_every %d is negative", (int)opts->full_every);
    if (opts && (opts->nvars < 0 || (opts->nvars > 0 && !opts->var_list)))
        return emb__fail(EMB_EINVAL, "saver var_list: %lld entries at %p",
                         (long long)opts->nvars, (const void *)(opts ? opts->var_list : NULL));
    for (int64_t i = 0; opts && i < opts->nvars; i++)
        if (!opts->var_list[i].table)
            return emb__fail(EMB_ENULL, "saver var_list entry %lld has no table", (long long)i);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        if ((r = make_dirs(dir)) != 0) /* after every check of the arguments */
            return r;
    EmbSaver *s = calloc(1, sizeof *s);
    if (!s)
        return emb__fail(EMB_ENOMEM, "out of memory for a saver");
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(s->prefix, sizeof s->prefix, "%s", prefix);
    s->max_to_keep = !opts ? EMB_SAVER_DEFAULT_MAX_TO_KEEP : EMB_MAX(opts->max_to_keep, 0);
    s->keep_hours = opts ? opts->keep_every_n_hours : 0.0;
    s->vars = opts ? opts->var_list : NULL;
    s->nvars = opts ? opts->nvars : 0;
    s->opt = opts ? opts->optimizer : NULL;
    s->full_every = opts ? opts->full_every : 0;
    s->last_preserved = (double)time(NULL);
    Index ix;
    r = pthread_mutex_init(&s->lock, NULL) ? emb__fail(EMB_ENOMEM, "cannot make a mutex") : 0;
    if (!r && (r = read_index(s, &ix)) != 0)
        pthread_mutex_destroy(&s->lock);
    if (r) {
        free(s);
        return r;
    }
    adopt_index(s, &ix);
    *out = s;
    return 0;
}

void emb_saver_destroy(EmbSaver **ps)
{
    if (!ps || !*ps)
        return;
    pthread_mutex_destroy(&(*ps)->lock);
    free((*ps)->kept);
    free((*ps)->pending);
    free(*ps);
    *ps = NULL;
}

/* The tables a save writes: the var_list's, or the store's (NULL: none; *n 0). */
static EmbTable *saved_table(const EmbSaver *s, const EmbStore *store, int64_t i,
                             const char **name)
{
    *name = s->nvars > 0 ? s->vars[i].name : NULL;
    return s->nvars > 0 ? s->vars[i].table : store->entries[i].table;
}

static int64_t saved_count(const EmbSaver *s, const EmbStore *store)
{
    return s->nvars > 0 ? s->nvars : store ? store->n : 0;
}

/* The tables to save, with their state, into @c (a delta when c->delta_base is set). */
static int collect(const EmbSaver *s, const EmbStore *store, EmbCkpt *c)
{
    int r = 0;
    if (s->nvars == 0 && !store)
        r = emb__fail(EMB_ENULL, "emb_saver_save: no store and no var_list");
    for (int64_t i = 0; i < saved_count(s, store) && !r; i++) {
        const char *name;
        const EmbTable *t = saved_table(s, store, i, &name);
        r = c->delta_base ? emb__ckpt_add_delta(c, name, t, s->opt)
                          : emb__ckpt_add(c, name, t, s->opt);
    }
    if (!r && s->opt) {
        c->has_opt = true;
        c->opt = s->opt->cfg;
    }
    return r;
}

/* Writes the checkpoint for @final to a temporary, synced: its name into @tmp, its open
 * and locked descriptor into *fd. */
static int write_temp(const EmbSaver *s, const EmbStore *store, int64_t step, const char *final,
                      bool delta, char *tmp, size_t cap, int *fd, uint64_t *hash)
{
    EmbCkpt c = {.global_step = step, .delta_base_hash = s->last_hash};
    int r = delta && !(c.delta_base = emb__ckpt_strdup(s->last))
                    ? emb__fail(EMB_ENOMEM, "out of memory for a delta's link") : 0;
    r = r ? r : collect(s, store, &c);
    *fd = r ? -1 : tmp_create(final, tmp, cap);
    if (!r && *fd < 0)
        r = emb__fail(EMB_EIO, "cannot create a temporary for %s: %s", final, strerror(errno));
    r = r ? r : emb__ckpt_save(&c, *fd, final);
    if (!r && fsync(*fd) != 0)
        r = emb__fail(EMB_EIO, "cannot write checkpoint %s: %s", final, strerror(errno));
    if (r && *fd >= 0) {
        close(*fd);
        unlink(tmp);
        *fd = -1;
    }
    *hash = c.header_hash;
    emb__ckpt_free(&c);
    return r;
}

/* Step 1 of a save: what crashed saves left. */
static void clean_leftovers(EmbSaver *s)
{
    clean_temporaries(s);
    for (int64_t i = 0; i < s->npending; i++) {
        bool kept = false;
        for (int64_t k = 0; k < s->nkept; k++)
            kept |= strcmp(s->kept[k].name, s->pending[i].name) == 0;
        char p[PATH_CAP + FILE_NAME_MAX + 2];
        snprintf(p, sizeof p, "%s/%s", s->dir, s->pending[i].name);
        if (!kept)
            unlink(p);
    }
    s->npending = 0;
}

/* The list after adding @name: oldest beyond max_to_keep dropped (into @retired, unless
 * keep_every_n_hours preserves them). */
static int plan_kept(EmbSaver *s, const char *name, Kept **kept, int64_t *n, Kept **retired,
                     int64_t *nretired, double *preserved)
{
    int64_t cap = 0, rcap = 0;
    *kept = NULL;
    *n = 0;
    *retired = NULL;
    *nretired = 0;
    *preserved = s->last_preserved;
    int r = 0;
    for (int64_t i = 0; i < s->nkept && !r; i++)
        r = kept_push(kept, n, &cap, s->kept[i].name, s->kept[i].time);
    r = r ? r : kept_push(kept, n, &cap, name, (double)time(NULL));
    while (!r && s->max_to_keep > 0 && *n > s->max_to_keep) {
        const Kept old = (*kept)[0];
        memmove(&(*kept)[0], &(*kept)[1], (size_t)(*n - 1) * sizeof(Kept));
        (*n)--;
        char base[FILE_NAME_MAX + 1];
        if (s->keep_hours > 0 && old.time - *preserved >= s->keep_hours * 3600.0 &&
            (s->full_every == 0 || emb__delta_base_of(s->dir, old.name, base, sizeof base) == 0)) {
            /* a delta alone cannot be restored: only full checkpoints are preserved */
            *preserved = old.time;
            continue;
        }
        r = emb__grow(retired, *nretired, &rcap, sizeof **retired, "the saver's index");
        if (!r)
            (*retired)[(*nretired)++] = old;
    }
    return r;
}

/* Deletes the @n checkpoints @retired (but @name, just written) after a save; frees it. */
static void delete_retired(const EmbSaver *s, Kept *retired, int64_t n, const char *name)
{
    for (int64_t i = 0; i < n; i++) {
        char old[PATH_CAP + FILE_NAME_MAX + 2];
        snprintf(old, sizeof old, "%s/%s", s->dir, retired[i].name);
        if (strcmp(retired[i].name, name) != 0 && unlink(old) != 0 && errno != ENOENT)
            emb__log(EMB_LOG_WARN, "could not delete old checkpoint %s: %s", old,
                     strerror(errno));
    }
    free(retired);
}

/* Whether the save of @name is a delta: deltas on, fewer than full_every since the last full
   save, the index's latest is this saver's last file, and every table can be in a delta. */
static bool delta_save(const EmbSaver *s, const EmbStore *store, const char *name)
{
    if (s->full_every == 0 || !s->last[0] || s->ndeltas >= s->full_every || s->nkept == 0 ||
        strcmp(s->kept[s->nkept - 1].name, s->last) != 0 || strcmp(name, s->last) == 0 ||
        (s->nvars == 0 && !store))
        return false;
    for (int64_t i = 0; i < saved_count(s, store); i++) {
        const char *tname;
        if (!emb__delta_possible(saved_table(s, store, i, &tname)))
            return false;
    }
    return true;
}

/* After a save with deltas on: the chain's new end, and nothing touched. */
static void saved(EmbSaver *s, const EmbStore *store, const char *name, uint64_t hash,
                  bool delta)
{
    snprintf(s->last, sizeof s->last, "%s", name);
    s->last_hash = hash;
    s->ndeltas = delta ? s->ndeltas + 1 : 0;
    for (int64_t i = 0; i < saved_count(s, store); i++) {
        const char *tname;
        emb__touched_clear(saved_table(s, store, i, &tname));
    }
}

static int save_locked(EmbSaver *s, const EmbStore *store, int64_t step, char *path,
                       size_t cap)
{
    char name[FILE_NAME_MAX + 1], final[PATH_CAP + FILE_NAME_MAX + 2];
    snprintf(name, sizeof name, "%s-%lld" EMB_CKPT_EXT, s->prefix, (long long)step);
    snprintf(final, sizeof final, "%s/%s", s->dir, name);
    if (path && strlen(final) >= cap)
        return emb__fail(EMB_EINVAL, "checkpoint path %s does not fit in %zu bytes", final, cap);
    clean_leftovers(s);
    bool existed = false;
    for (int64_t i = 0; i < s->nkept; i++)
        existed |= strcmp(s->kept[i].name, name) == 0;
    Kept *kept = NULL, *retired = NULL;
    int64_t n = 0, nretired = 0;
    double preserved;
    const bool delta = delta_save(s, store, name);
    int r = plan_kept(s, name, &kept, &n, &retired, &nretired, &preserved);
    r = r || s->full_every == 0 ? r : emb__delta_keep_chains(s->dir, delta ? s->last : NULL,
                                                              s->full_every, &kept, &n,
                                                              retired, &nretired);
    /* every index text before the first write: past it, only I/O can fail */
    Kept self;
    snprintf(self.name, sizeof self.name, "%s", name);
    char *old_text = r ? NULL : index_text(s->kept, s->nkept, NULL, 0);
    char *pend_text = old_text ? index_text(s->kept, s->nkept, &self, 1) : NULL;
    char *new_text = pend_text ? index_text(kept, n, retired, nretired) : NULL;
    if (!r && !new_text)
        r = EMB_ENOMEM;
    char tmp[PATH_CAP + FILE_NAME_MAX + 64];
    int fd = -1;
    uint64_t hash = 0;
    r = r ? r : write_temp(s, store, step, final, delta, tmp, sizeof tmp, &fd, &hash);
    r = r ? r : write_index(s, pend_text);
    if (!r) {
        const int e = tmp_commit(fd, tmp, final, s->dir);
        fd = -1;
        if (e)
            r = emb__fail(EMB_EIO, "cannot write checkpoint %s: %s", final, strerror(e));
        else if ((r = write_index(s, new_text)) != 0 && !existed)
            unlink(final);
        if (r) /* back to the old index (best effort: its pending line is harmless) */
            write_index(s, old_text);
    }
    if (fd >= 0) {
        close(fd);
        unlink(tmp);
    }
    free(old_text);
    free(pend_text);
    free(new_text);
    if (r) {
        free(kept);
        free(retired);
        return r;
    }
    free(s->kept);
    s->kept = kept;
    s->nkept = s->capkept = n;
    s->last_preserved = preserved;
    delete_retired(s, retired, nretired, name);
    if (s->full_every > 0)
        saved(s, store, name, hash, delta);
    if (path)
        snprintf(path, cap, "%s", final);
    return 0;
}

/* Serialises the saves of every saver of the directory, in any process (an exclusive
 * flock() of the directory itself, released when @*dfd is closed), and re-reads the index
 * they share: it may have changed since this saver last saw it. */
static int lock_directory(EmbSaver *s, int *dfd)
{
    *dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int e = *dfd < 0 ? errno : 0;
    while (!e && flock(*dfd, LOCK_EX) != 0)
        e = errno == EINTR ? 0 : errno;
    if (e) {
        if (*dfd >= 0)
            close(*dfd);
        return emb__fail(EMB_EIO, "cannot lock checkpoint directory %s: %s", s->dir,
                         strerror(e));
    }
    Index ix;
    const int r = read_index(s, &ix);
    if (r)
        close(*dfd);
    else if (ix.found)
        adopt_index(s, &ix);
    /* no index (deleted by hand): the saver goes on with the list it remembers */
    return r;
}

int emb_saver_save(EmbSaver *s, const EmbStore *store, int64_t global_step, char *path,
                   size_t cap)
{
    EMB_CHECK_NULL(s);
    if (global_step < 0) /* a restore refuses it (EMB_ECORRUPT) */
        return emb__fail(EMB_EINVAL, "global_step %lld is negative", (long long)global_step);
    pthread_mutex_lock(&s->lock);
    int dfd;
    int r = lock_directory(s, &dfd);
    if (!r) {
        r = save_locked(s, store, global_step, path, cap);
        close(dfd);
    }
    pthread_mutex_unlock(&s->lock);
    return r;
}

int emb_checkpoint_latest(const char *dir, char *path, size_t cap)
{
    EMB_CHECK_NULL(dir);
    EMB_CHECK_NULL(path);
    char ipath[PATH_CAP + 16], line[INDEX_LINE_MAX], found[FILE_NAME_MAX + 1] = "";
    if (strlen(dir) >= PATH_CAP)
        return emb__fail(EMB_EINVAL, "directory name is too long");
    snprintf(ipath, sizeof ipath, "%s/" INDEX_NAME, dir);
    FILE *f = fopen(ipath, "r");
    if (!f)
        return errno == ENOENT ? emb__fail(EMB_ENOTFOUND, "no checkpoint index in %s", dir)
                               : emb__fail(EMB_EIO, "cannot read %s: %s", ipath, strerror(errno));
    int r = 0;
    while (!r && !found[0] && fgets(line, sizeof line, f)) {
        char *name;
        double t;
        if (strncmp(line, "latest ", 7) != 0)
            continue;
        if (index_line(line, "latest", &name, &t) != 1 || !plain_name(name))
            r = emb__fail(EMB_ECORRUPT, "the index %s names \"%.200s\" as the latest "
                          "checkpoint, which is no plain file name", ipath, line + 7);
        else
            snprintf(found, sizeof found, "%s", name);
    }
    fclose(f);
    if (r)
        return r;
    if (!found[0])
        return emb__fail(EMB_ENOTFOUND, "the checkpoint index of %s lists none", dir);
    if (strlen(dir) + 1 + strlen(found) >= cap)
        return emb__fail(EMB_EINVAL, "the latest checkpoint's path does not fit in %zu bytes",
                         cap);
    snprintf(path, cap, "%s/%s", dir, found);
    return 0;
}
