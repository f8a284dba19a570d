/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ckpt_index.c — the saver's directory (checkpoint.c has the save's order): which names it
 * trusts, the temporaries of a save (unique names under an exclusive flock(), synced, then
 * renamed into place), the index file `<dir>/checkpoint` read and written, and
 * emb_checkpoint_latest. Calls nothing of the saver.
 */
#include <dirent.h>
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

#include "store/saver_impl.h"

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

int emb__saver_check_prefix(const char *prefix)
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

/* Creates and locks a temporary for @final; its name goes to @tmp. Returns an fd or -1. */
/* ---- temporaries ------------------------------------------------------------------- */

int emb__saver_tmp_create(const char *final, char *tmp, size_t cap)
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
int emb__saver_tmp_commit(int fd, const char *tmp, const char *final, const char *dir)
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
void emb__saver_clean_temporaries(const EmbSaver *s)
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

int emb__saver_kept_push(Kept **kept, int64_t *n, int64_t *cap, const char *name, double time)
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

/* Reads the index into @ix (zeroed first; freed on failure). */
int emb__saver_read_index(const EmbSaver *s, Index *ix)
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
            r = emb__saver_kept_push(&ix->kept, &ix->nkept, &ix->capkept, name, t);
        else if (whole && complete && index_line(line, "pending", &name, &t) == 1 &&
                 own_name(s, name))
            r = emb__saver_kept_push(&ix->pending, &ix->npending, &ix->cappending, name, 0.0);
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
void emb__saver_adopt_index(EmbSaver *s, const Index *ix)
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
char *emb__saver_index_text(const Kept *kept, int64_t n, const Kept *pend, int64_t npend)
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
int emb__saver_write_index(const EmbSaver *s, const char *text)
{
    char path[PATH_CAP + 16], tmp[PATH_CAP + 64];
    snprintf(path, sizeof path, "%s/" INDEX_NAME, s->dir);
    const size_t len = strlen(text);
    const int fd = emb__saver_tmp_create(path, tmp, sizeof tmp);
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
        e = emb__saver_tmp_commit(fd, tmp, path, s->dir);
    }
    return e ? emb__fail(EMB_EIO, "cannot write %s: %s", path, strerror(e)) : 0;
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
