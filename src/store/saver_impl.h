/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * saver_impl.h — the saver's state, shared by the saver (checkpoint.c) and its directory:
 * names, temporaries and the index file (ckpt_index.c, which calls nothing of the saver).
 */
#ifndef EMB_STORE_SAVER_IMPL_H
#define EMB_STORE_SAVER_IMPL_H

#include <pthread.h>

#include "store/model.h"
#include "store/store_impl.h"


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

/* The lists an index names: its `kept` and `pending` entries of this saver's prefix. */
typedef struct Index {
    Kept *kept, *pending;
    int64_t nkept, capkept, npending, cappending;
    bool found; /* the file exists */
} Index;

/* ckpt_index.c: the prefix check, temporaries (created under an exclusive flock(), synced
   and renamed into place), the kept list and the index file. */
int emb__saver_check_prefix(const char *prefix);
int emb__saver_tmp_create(const char *final, char *tmp, size_t cap);
int emb__saver_tmp_commit(int fd, const char *tmp, const char *final, const char *dir);
void emb__saver_clean_temporaries(const EmbSaver *s);
int emb__saver_kept_push(Kept **kept, int64_t *n, int64_t *cap, const char *name, double time);
int emb__saver_read_index(const EmbSaver *s, Index *ix);
void emb__saver_adopt_index(EmbSaver *s, const Index *ix);
char *emb__saver_index_text(const Kept *kept, int64_t n, const Kept *pend, int64_t npend);
int emb__saver_write_index(const EmbSaver *s, const char *text);

#endif
