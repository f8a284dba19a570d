/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_tiered.c — bytes -> a tiered table's backing file (after two bytes of options: the
 * cache size and the operations): emb_table_tiered_open() of it never crashes and either
 * fails with an EMB_E* code or gives a table whose rows all read; then an update of a row,
 * a flush, a checkpoint of the table restored into it (the rows read back the same), and
 * a reopen of the flushed file (the same rows again).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "embtables/embtables.h"
#include "fuzz_input.h"

#define MAX_ELEMS (1 << 16) /* rows x D read whole; larger tables only opened */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

/* Removes @d and the files in it (the checkpoints' folder too). */
static void remove_dir(const char *d)
{
    DIR *h = opendir(d);
    for (struct dirent *e; h && (e = readdir(h));) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", d, e->d_name);
        if (e->d_name[0] == '.')
            continue;
        if (unlink(p) != 0)
            remove_dir(p);
    }
    if (h)
        closedir(h);
    rmdir(d);
}

static void remove_scratch(void)
{
    remove_dir(dir);
}

/* This process's scratch directory (made once, removed at exit). */
static const char *scratch(void)
{
    if (!dir[0]) {
        strcpy(dir, "/tmp/emb-fuzz-tiered-XXXXXX");
        FUZZ_ASSERT(mkdtemp(dir));
        atexit(remove_scratch);
    }
    return dir;
}

/* Every row of @t, as floats (malloc'd), or NULL when the table is too large to read. */
static float *rows_of(const EmbTable *t)
{
    const int64_t n = emb_table_ncolumns(t) * emb_table_featuresize(t);
    if (n > MAX_ELEMS)
        return NULL;
    float *rows = malloc((size_t)(n ? n : 1) * sizeof *rows);
    FUZZ_ASSERT(rows);
    FUZZ_ASSERT(emb_table_read(t, rows, emb_table_featuresize(t)) == 0);
    return rows;
}

/* A checkpoint of @t (in @dir) restored into it: the same rows. */
static void save_restore(EmbTable *t, const char *dir, const float *rows)
{
    EmbCheckpointVar var = {"t", t};
    const EmbSaverOptions so = {.var_list = &var, .nvars = 1, .max_to_keep = 1};
    EmbSaver *sv = NULL;
    char ck[512];
    FUZZ_ASSERT(emb_saver_create(&sv, dir, "ck", &so) == 0);
    FUZZ_ASSERT(emb_saver_save(sv, NULL, 1, ck, sizeof ck) == 0);
    emb_saver_destroy(&sv);
    const EmbRestoreOptions ro = {.var_list = &var, .nvars = 1};
    FUZZ_ASSERT(emb_checkpoint_restore_ex(NULL, ck, &ro, NULL) == 0);
    float *again = rows_of(t);
    const int64_t n = emb_table_ncolumns(t) * emb_table_featuresize(t);
    FUZZ_ASSERT(!memcmp(again, rows, (size_t)n * sizeof *rows));
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzInput in = {data, size};
    const uint8_t opts = fuzz_u8(&in), ops = fuzz_u8(&in);
    char path[128];
    snprintf(path, sizeof path, "%s/t", scratch());
    FILE *f = fopen(path, "wb");
    FUZZ_ASSERT(f);
    FUZZ_ASSERT(fwrite(in.p, 1, in.n, f) == in.n);
    FUZZ_ASSERT(fclose(f) == 0);
    const EmbTieredOptions o = {.cache_bytes = (opts & 0x7f) * (int64_t)4096,
                                .engine = (opts & 0x80) ? EMB_TIER_ENGINE_PREAD
                                                        : EMB_TIER_ENGINE_AUTO};
    EmbTable *t = NULL;
    const int r = emb_table_tiered_open(&t, path, &o);
    FUZZ_ASSERT(r <= 0 && (r == 0) == (t != NULL));
    float *rows = t ? rows_of(t) : NULL;
    if (rows && emb_table_ncolumns(t) > 0 && (ops & 1)) { /* a row updated, then flushed */
        const int64_t id = (int64_t)(ops >> 1) % emb_table_ncolumns(t);
        const int32_t D = emb_table_featuresize(t);
        float *v = calloc((size_t)D, sizeof *v);
        FUZZ_ASSERT(v);
        FUZZ_ASSERT(emb_table_scatter_update(t, &id, 1, v, D) == 0);
        free(v);
        FUZZ_ASSERT(emb_table_tiered_flush(t) == 0);
        free(rows);
        rows = rows_of(t);
    }
    if (rows && (ops & 2)) {
        char ck[160];
        snprintf(ck, sizeof ck, "%s/ck", scratch());
        mkdir(ck, 0755);
        save_restore(t, ck, rows);
    }
    emb_table_destroy(&t);
    if (rows) { /* the flushed file reopens to the same rows */
        FUZZ_ASSERT(emb_table_tiered_open(&t, path, &o) == 0);
        float *again = rows_of(t);
        const int64_t n = emb_table_ncolumns(t) * emb_table_featuresize(t);
        FUZZ_ASSERT(!memcmp(again, rows, (size_t)n * sizeof *rows));
        free(again);
        emb_table_destroy(&t);
    }
    free(rows);
    unlink(path);
    return 0;
}
