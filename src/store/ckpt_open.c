/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ckpt_open.c — a checkpoint file opened (its header read and checked: the table model,
 * model_read.c) for a restore (restore.c, delta.c), for listing its entries, or as tables
 * mapped over the file (emb_checkpoint_open ...). Calls neither restore.c nor delta.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtype.h"
#include "store/model.h"
#include "store/store_impl.h"
#include "tables/table_impl.h"
#include "update/update_impl.h"

int emb__ckpt_open_path(const char *path, EmbCkpt *c, uint64_t *size, int *err)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        *err = emb__fail(EMB_EIO, "cannot open checkpoint %s: %s", path,
                         fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *size = (uint64_t)st.st_size;
    *err = emb__ckpt_open(c, fd, *size, path);
    if (*err) {
        close(fd);
        return -1;
    }
    return fd;
}

/* ---- opened checkpoints ------------------------------------------------------------ */

struct EmbCheckpoint {
    EmbCkpt c;
    unsigned char *map; /* MAP_FAILED-free: NULL when not mapped */
    size_t size;
    EmbTable **tables;  /* per tensor, when mapped */
};

void emb_checkpoint_close(EmbCheckpoint **pck)
{
    if (!pck || !*pck)
        return;
    EmbCheckpoint *ck = *pck;
    for (int64_t i = 0; ck->tables && i < ck->c.ntensors; i++)
        emb_table_destroy(&ck->tables[i]);
    free(ck->tables);
    if (ck->map)
        munmap(ck->map, ck->size);
    emb__ckpt_free(&ck->c);
    free(ck);
    *pck = NULL;
}

/* A pruned export's table (store/export.c): its rows in the map, its id remapping (checked:
   every entry -1 or a row) and the zero row a pruned id reads. */
typedef struct Remapped {
    char *base;
    size_t stride;
    const int32_t *remap;
    char *zero;
} Remapped;

static void *remapped_column(void *user, int64_t column, EmbContext ctx)
{
    (void)ctx;
    const Remapped *m = user;
    const int32_t r = m->remap[column];
    return r < 0 ? m->zero : m->base + (size_t)r * m->stride;
}

static void remapped_free(void *user)
{
    Remapped *m = user;
    free(m->zero);
    free(m);
}

/* The table of values tensor @t over @data whose ids @rm remaps (table @tb's "export.remap"). */
static int wrap_remapped(EmbCheckpoint *ck, const EmbCkptTensor *t, char *data,
                         const EmbCkptTensor *rm, EmbTable **out, const char *path)
{
    const int32_t *remap = (const int32_t *)(ck->map + ck->c.data_start + rm->begin);
    if ((ck->c.data_start + rm->begin) % sizeof *remap != 0)
        return emb__fail(EMB_ENOTSUP, "tensor \"%.200s\" of %s is not aligned for its type "
                         "and cannot be mapped", rm->name, path);
    for (int64_t c = 0; c < rm->ncolumns; c++)
        if (remap[c] < -1 || remap[c] >= t->ncolumns)
            return emb__ckpt_corrupt(path, "tensor \"%.200s\" maps id %lld to row %ld of %lld",
                                     rm->name, (long long)c, (long)remap[c],
                                     (long long)t->ncolumns);
    const size_t stride = (size_t)emb__ckpt_file_cols(t->dtype, t->width) *
                          emb__ckpt_el_size(t->dtype);
    Remapped *m = calloc(1, sizeof *m);
    char *zero = calloc(1, stride);
    if (!m || !zero) {
        free(m);
        free(zero);
        return emb__fail(EMB_ENOMEM, "out of memory for the tables of %s", path);
    }
    *m = (Remapped){data, stride, remap, zero};
    const EmbTableOptions to = {.name = t->name};
    const int r = emb_table_custom(out, rm->ncolumns, t->width, t->dtype, remapped_column, m,
                                   remapped_free, &to);
    if (r)
        remapped_free(m);
    return r;
}

/* Maps the file and wraps every tensor in a table. */
static int map_tables(EmbCheckpoint *ck, int fd, const char *path)
{
    void *m = mmap(NULL, ck->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED)
        return emb__fail(EMB_EIO, "cannot map checkpoint %s: %s", path, strerror(errno));
    ck->map = m;
    int r = emb__ckpt_verify(&ck->c, fd, ck->map, path);
    ck->tables = r ? NULL : calloc((size_t)EMB_MAX(ck->c.ntensors, 1), sizeof *ck->tables);
    if (!r && !ck->tables)
        r = emb__fail(EMB_ENOMEM, "out of memory for the tables of %s", path);
    for (int64_t i = 0; i < ck->c.ntensors && !r; i++) {
        const EmbCkptTensor *t = &ck->c.tensors[i];
        const uint64_t at = ck->c.data_start + t->begin;
        if (!emb__ckpt_is_table_type(t->dtype))
            continue; /* a dynamic table's ids, steps or counts: no table */
        if (at % emb__ckpt_el_size(t->dtype) != 0)
            return emb__fail(EMB_ENOTSUP, "tensor \"%.200s\" of %s is not aligned for its type "
                             "and cannot be mapped", t->name, path);
        const int64_t rm = ck->c.tables[t->table].remap;
        if (rm >= 0 && ck->c.tables[t->table].values == i) {
            r = wrap_remapped(ck, t, (char *)ck->map + at, &ck->c.tensors[rm], &ck->tables[i],
                              path);
            continue;
        }
        const EmbTableOptions to = {.name = t->name};
        r = emb_table_wrap(&ck->tables[i], ck->map + at, t->ncolumns, t->width,
                           emb__ckpt_file_cols(t->dtype, t->width), t->dtype, &to);
    }
    return r;
}

int emb_checkpoint_open(EmbCheckpoint **out, const char *path, unsigned flags)
{
    EMB_CHECK_NULL(out);
    EMB_CHECK_NULL(path);
    if (flags & ~(unsigned)EMB_CHECKPOINT_MMAP)
        return emb__fail(EMB_EINVAL, "emb_checkpoint_open: unknown flags 0x%x", flags);
    EmbCheckpoint *ck = calloc(1, sizeof *ck);
    if (!ck)
        return emb__fail(EMB_ENOMEM, "out of memory opening %s", path);
    uint64_t size;
    int r;
    const int fd = emb__ckpt_open_path(path, &ck->c, &size, &r);
    if (fd >= 0) {
        ck->size = (size_t)size;
        r = flags & EMB_CHECKPOINT_MMAP ? map_tables(ck, fd, path) : 0;
        close(fd);
    }
    if (r) {
        emb_checkpoint_close(&ck);
        return r;
    }
    *out = ck;
    return 0;
}

int64_t emb_checkpoint_count(const EmbCheckpoint *ck)
{
    return ck ? ck->c.ntensors : 0;
}

int64_t emb_checkpoint_global_step(const EmbCheckpoint *ck)
{
    return ck ? ck->c.global_step : 0;
}

int emb_checkpoint_entry(const EmbCheckpoint *ck, int64_t i, EmbCheckpointEntry *out)
{
    EMB_CHECK_NULL(ck);
    EMB_CHECK_NULL(out);
    if (i < 0 || i >= ck->c.ntensors)
        return emb__fail(EMB_ERANGE, "checkpoint entry %lld is outside [0, %lld)", (long long)i,
                         (long long)ck->c.ntensors);
    const EmbCkptTensor *t = &ck->c.tensors[i];
    const EmbCkptTable *tb = &ck->c.tables[t->table];
    EmbOptSlot slots[2];
    if (t->slot >= 0)
        emb__optimizer_slots(ck->c.opt.kind, ck->c.tensors[tb->values].width, slots);
    const int64_t k = t - ck->c.tensors;
    const char *slot = t->slot >= 0 ? slots[t->slot].name : k == tb->ids ? "dynamic.ids"
                     : k == tb->last ? "dynamic.last" : k == tb->sketch ? "dynamic.sketch"
                     : k == tb->delta_ids ? "delta.ids" : NULL;
    *out = (EmbCheckpointEntry){.name = t->name, .table = tb->name, .slot = slot,
                                .ncolumns = t->ncolumns, .featuresize = t->width,
                                .dtype = emb__ckpt_is_table_type(t->dtype) ? t->dtype : EMB_F32,
                                .nshards = tb->nshards, .partition = tb->partition,
                                .step = tb->step, .dynamic = tb->dynamic,
                                .dyn_step = tb->dynamic ? tb->dyn_step : -1,
                                .type = emb__ckpt_dtype_code(t->dtype)};
    return 0;
}

int emb_checkpoint_optimizer(const EmbCheckpoint *ck, EmbOptimizerConfig *out)
{
    EMB_CHECK_NULL(ck);
    EMB_CHECK_NULL(out);
    if (!ck->c.has_opt)
        return emb__fail(EMB_ENOTFOUND, "the checkpoint was saved without an optimizer");
    *out = ck->c.opt;
    return 0;
}

int emb_checkpoint_table(const EmbCheckpoint *ck, const char *name, EmbTable **out)
{
    EMB_CHECK_NULL(ck);
    EMB_CHECK_NULL(name);
    EMB_CHECK_NULL(out);
    if (!ck->tables)
        return emb__fail(EMB_EINVAL, "the checkpoint was not opened with EMB_CHECKPOINT_MMAP");
    for (int64_t i = 0; i < ck->c.ntensors; i++)
        if (strcmp(ck->c.tensors[i].name, name) == 0) {
            if (!ck->tables[i])
                return emb__fail(EMB_EINVAL, "tensor \"%s\" holds a dynamic table's ids, "
                                 "steps or counts (%s), not a table", name,
                                 emb__ckpt_dtype_code(ck->c.tensors[i].dtype));
            *out = ck->tables[i];
            return 0;
        }
    return emb__fail(EMB_ENOTFOUND, "the checkpoint has no tensor \"%s\"", name);
}

