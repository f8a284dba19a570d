/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * checkpoint.c — the saver (tf.train.Saver): checkpoint files (format.c) and the index
 * (its names, temporaries and the index file: ckpt_index.c).
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

#include "store/saver_impl.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

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
    int r = emb__saver_check_prefix(prefix);
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
    if (!r && (r = emb__saver_read_index(s, &ix)) != 0)
        pthread_mutex_destroy(&s->lock);
    if (r) {
        free(s);
        return r;
    }
    emb__saver_adopt_index(s, &ix);
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
    *fd = r ? -1 : emb__saver_tmp_create(final, tmp, cap);
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
    emb__saver_clean_temporaries(s);
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
        r = emb__saver_kept_push(kept, n, &cap, s->kept[i].name, s->kept[i].time);
    r = r ? r : emb__saver_kept_push(kept, n, &cap, name, (double)time(NULL));
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
    char *old_text = r ? NULL : emb__saver_index_text(s->kept, s->nkept, NULL, 0);
    char *pend_text = old_text ? emb__saver_index_text(s->kept, s->nkept, &self, 1) : NULL;
    char *new_text = pend_text ? emb__saver_index_text(kept, n, retired, nretired) : NULL;
    if (!r && !new_text)
        r = EMB_ENOMEM;
    char tmp[PATH_CAP + FILE_NAME_MAX + 64];
    int fd = -1;
    uint64_t hash = 0;
    r = r ? r : write_temp(s, store, step, final, delta, tmp, sizeof tmp, &fd, &hash);
    r = r ? r : emb__saver_write_index(s, pend_text);
    if (!r) {
        const int e = emb__saver_tmp_commit(fd, tmp, final, s->dir);
        fd = -1;
        if (e)
            r = emb__fail(EMB_EIO, "cannot write checkpoint %s: %s", final, strerror(e));
        else if ((r = emb__saver_write_index(s, new_text)) != 0 && !existed)
            unlink(final);
        if (r) /* back to the old index (best effort: its pending line is harmless) */
            emb__saver_write_index(s, old_text);
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
    const int r = emb__saver_read_index(s, &ix);
    if (r)
        close(*dfd);
    else if (ix.found)
        emb__saver_adopt_index(s, &ix);
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

