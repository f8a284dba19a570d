/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_checkpoint.c — bytes -> a checkpoint file, read through the store's public API only
 * (so the target follows any change of the file format): emb_checkpoint_restore(),
 * emb_checkpoint_restore_ex() with an optimizer's state, and emb_checkpoint_open() with
 * and without mapping (every entry listed, every mapped table read). Nothing may crash,
 * and a failed restore must leave every table and the optimizer's state as they were.
 * In the fuzzing build the library's checksums always match (see tests/fuzz/meson.build).
 * Built with FUZZ_STORE_QUANT it is fuzz_quant_checkpoint: the store's tables are int8 and
 * int4 (fuzz_store.h), and a restore that succeeds must leave the table that checks for
 * finite values reading finite.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_store.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ELEMS 64
#define SNAP (2 * FUZZ_STORE_NTABLES * MAX_ELEMS)

static EmbStore *store;
static EmbOptimizer *opt;
static EmbTable *tables[FUZZ_STORE_NTABLES];
static int fd = -1;
static char path[64];

static void setup(void)
{
    FUZZ_ASSERT(fuzz_store_create(&store, &opt) == 0);
    int64_t n;
    FUZZ_ASSERT(emb_store_list(store, 0, tables, FUZZ_STORE_NTABLES, &n) == 0 &&
                n == FUZZ_STORE_NTABLES);
    fd = memfd_create("fuzz_checkpoint", 0);
    FUZZ_ASSERT(fd >= 0);
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
}

/* Every table and its optimizer state, as f32. */
static void snapshot(float *buf)
{
    memset(buf, 0, SNAP * sizeof *buf);
    for (int i = 0; i < FUZZ_STORE_NTABLES; i++) {
        const int32_t D = emb_table_featuresize(tables[i]);
        FUZZ_ASSERT(emb_table_ncolumns(tables[i]) * D <= MAX_ELEMS);
        FUZZ_ASSERT(emb_table_read(tables[i], buf + 2 * i * MAX_ELEMS, D) == 0);
        EmbTable *st = NULL;
        FUZZ_ASSERT(emb_optimizer_state(opt, tables[i], 0, &st, NULL) == 0 && st);
        const int32_t W = emb_table_featuresize(st);
        FUZZ_ASSERT(emb_table_ncolumns(st) * W <= MAX_ELEMS);
        FUZZ_ASSERT(emb_table_read(st, buf + (2 * i + 1) * MAX_ELEMS, W) == 0);
    }
}

/* A restore: on failure nothing changed. */
static void restore(int with_state)
{
    static float before[SNAP], after[SNAP];
    snapshot(before);
    int64_t step = -7;
    const EmbRestoreOptions ro = {.optimizer = opt};
    const int rc = with_state ? emb_checkpoint_restore_ex(store, path, &ro, &step)
                              : emb_checkpoint_restore(store, path, &step);
    FUZZ_ASSERT(rc <= 0);
    snapshot(after);
    if (rc)
        FUZZ_ASSERT(memcmp(before, after, sizeof before) == 0);
#ifdef FUZZ_STORE_CHECKED
    for (int i = 0; i < FUZZ_STORE_NTABLES && !rc; i++) /* the checked table reads finite */
        for (int k = 0; k < MAX_ELEMS && !strcmp(emb_table_name(tables[i]), FUZZ_STORE_CHECKED);
             k++)
            FUZZ_ASSERT(k >= emb_table_ncolumns(tables[i]) * emb_table_featuresize(tables[i]) ||
                        isfinite(after[2 * i * MAX_ELEMS + k]));
#endif
}

/* Opens the file, lists it, reads every mapped table. */
static void inspect(unsigned flags)
{
    EmbCheckpoint *ck = NULL;
    const int rc = emb_checkpoint_open(&ck, path, flags);
    FUZZ_ASSERT(rc <= 0);
    if (rc) {
        FUZZ_ASSERT(ck == NULL);
        return;
    }
    const int64_t n = emb_checkpoint_count(ck);
    FUZZ_ASSERT(n >= 0);
    (void)emb_checkpoint_global_step(ck);
    EmbOptimizerConfig cfg;
    (void)emb_checkpoint_optimizer(ck, &cfg);
    for (int64_t i = 0; i < n; i++) {
        EmbCheckpointEntry e;
        FUZZ_ASSERT(emb_checkpoint_entry(ck, i, &e) == 0);
        FUZZ_ASSERT(e.name && e.table && e.ncolumns >= 0 && e.featuresize >= 1);
        EmbTable *t = NULL;
        if (!(flags & EMB_CHECKPOINT_MMAP) || emb_checkpoint_table(ck, e.name, &t) != 0)
            continue;
        const int64_t cols = emb_table_ncolumns(t) < 4 ? emb_table_ncolumns(t) : 4;
        float *row = malloc((size_t)emb_table_featuresize(t) * sizeof *row);
        FUZZ_ASSERT(row != NULL);
        for (int64_t c = 0; c < cols; c++) {
            const EmbBatch b = {.ids = &c, .nnz = 1, .nbags = 1, .bag_size = 1};
            FUZZ_ASSERT(emb_lookup(t, &b, NULL, row, emb_table_featuresize(t)) == 0);
        }
        free(row);
    }
    FUZZ_ASSERT(emb_checkpoint_entry(ck, n, &(EmbCheckpointEntry){0}) != 0);
    emb_checkpoint_close(&ck);
    FUZZ_ASSERT(ck == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!store)
        setup();
    FUZZ_ASSERT(ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0);
    for (size_t done = 0; done < size;) {
        const ssize_t k = write(fd, data + done, size - done);
        FUZZ_ASSERT(k > 0);
        done += (size_t)k;
    }
    restore(0);
    restore(1);
    inspect(0);
    inspect(EMB_CHECKPOINT_MMAP);
    return 0;
}
