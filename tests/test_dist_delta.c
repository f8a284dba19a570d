/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_dist_delta.c — sharded delta checkpoints (emb_dist_set_full_every(), through a
 * sharded collection's full_every; run under mpirun: tests/run_mpi.sh on 1, 2, 4 ranks):
 * Adam training saved every step as full + deltas per rank; the files are deltas where
 * they should be and smaller than the full ones; a chain restored into another placement
 * over the same ranks and into one process per rank (MPI_COMM_SELF) has, table and
 * optimizer state, the bits of a one-process collection trained straight through (what a
 * full save of that step restores); a missing or foreign link is EMB_ECORRUPT naming it
 * and changes nothing. Exit 0 on success, 1 on a failure.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <embtables/dist.h>
#include <embtables/embtables.h>

#include "dist_check.h"

#define NT 3
#define G 24   /* global bags: 24 / ranks each */
#define BAG 2
#define W (8 + 16 + 4)
#define FULL_EVERY 3
static const int64_t nrows[NT] = {2000, 300, 40};
static const int32_t dims[NT] = {8, 16, 4};

static void specs(EmbCollectionTable *ct)
{
    static const char *const names[NT] = {"big", "mid", "small"};
    for (int t = 0; t < NT; t++)
        ct[t] = (EmbCollectionTable){.name = names[t],
                                     .pooling = {.combiner = EMB_COMBINER_SUM},
                                     .spec = {.ncolumns = nrows[t], .featuresize = dims[t],
                                              .init = {EMB_INIT_CONSTANT, 0.125f, 0, 0}}};
}

/* A collection over @comm (@by_rows: "big" by rows over every rank, the rest the planner's;
   else every table whole; with @tier_dir, every rank's parts tiered tables there) or, with
   comm MPI_COMM_NULL, the one-process reference; Adam, deltas every save but every
   FULL_EVERY + 1-th. */
static EmbCollection *make(MPI_Comm comm, bool by_rows, const char *tier_dir)
{
    EmbCollectionTable ct[NT];
    specs(ct);
    char paths[NT][128];
    EmbTieredSpec ts[NT];
    for (int t = 0; t < NT && tier_dir; t++) { /* tiered parts, a cache of 2 records */
        snprintf(paths[t], sizeof paths[t], "%s/tier-%s", tier_dir, ct[t].name);
        ts[t] = (EmbTieredSpec){paths[t], {.cache_bytes = 2 * 4 * 3 * dims[t],
                                           .engine = EMB_TIER_ENGINE_PREAD}};
        ct[t].spec.tiered = &ts[t];
    }
    const EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_ADAM, 0.05f);
    const EmbCollectionOptions o = {.optimizer = &oc, .full_every = FULL_EVERY};
    /* "big" by rows over every rank pinned, so that every rank holds a part (a delta of
       its own) whatever the planner makes of the rest */
    const EmbDistPlacement pins[NT] = {{EMB_DIST_ROWWISE, 0, EMB_PARTITION_MOD, 0},
                                       {EMB_DIST_ANY, 0, 0, 0}, {EMB_DIST_ANY, 0, 0, 0}};
    const EmbDistOptions dopts = {.place = {.plan = by_rows ? EMB_DIST_PLAN_AUTO
                                                    : EMB_DIST_PLAN_TABLEWISE,
                                            .pins = by_rows ? pins : NULL}};
    EmbCollection *c = NULL;
    const int r = comm == MPI_COMM_NULL ? emb_collection_create(&c, ct, NT, &o)
                  : emb_dist_collection_create(&c, comm, ct, NT, &o, &dopts);
    CHECK(r == 0, "create");
    return c;
}

/* Step @s on @c, whose ranks are @nr, this one @r; with @ref, the reference too. Ids are
   skewed (most under 40) so that a delta holds a small part of the big table. */
static void step(EmbCollection *c, int r, int nr, EmbCollection *ref, int s)
{
    static int64_t ids[NT][G * BAG];
    static float gout[G * W], lout[G * W];
    const int64_t nb = G / nr, b0 = r * nb;
    EmbBatch gb[NT], lb[NT];
    for (int t = 0; t < NT; t++) {
        for (int k = 0; k < G * BAG; k++) {
            const uint64_t h = hash3((uint64_t)s, (uint64_t)t, (uint64_t)k);
            ids[t][k] = (int64_t)((h & 7) ? (h >> 8) % 40 : (h >> 8) % (uint64_t)nrows[t]);
        }
        gb[t] = (EmbBatch){.ids = ids[t], .nnz = G * BAG, .nbags = G, .bag_size = BAG};
        lb[t] = (EmbBatch){.ids = ids[t] + b0 * BAG, .nnz = nb * BAG, .nbags = nb,
                           .bag_size = BAG};
    }
    const EmbOutputs go = emb_collection_concat(ref ? ref : c, gout);
    const EmbOutputs lo = emb_collection_concat(c, lout);
    CHECK(emb_collection_forward(c, lb, &lo) == 0, "forward");
    CHECK(!ref || emb_collection_forward(ref, gb, &go) == 0, "reference forward");
    for (int64_t k = 0; k < G * W; k++)
        gout[k] = (float)((int64_t)(hash3(99 + s, (uint64_t)(k / W), (uint64_t)(k % W)) % 201)
                          - 100) / 64;
    memcpy(lout, gout + b0 * W, sizeof(float) * (size_t)(nb * W));
    CHECK(emb_collection_backward(c, &lo) == 0, "backward");
    CHECK(!ref || emb_collection_backward(ref, &go) == 0, "reference backward");
}

/* Every column (and Adam state column) @c holds on this rank equals @ref's. */
static void compare(EmbCollection *c, EmbCollection *ref, const char *what)
{
    EmbDist *d = emb_dist_of(c);
    const EmbOptimizer *o = emb_collection_optimizer(c), *ro = emb_collection_optimizer(ref);
    for (int t = 0; t < NT; t++) {
        EmbTable *lt = emb_collection_table(c, t), *st = NULL, *rst = NULL;
        if (!lt)
            continue;
        int64_t n = -1, rn = -2;
        CHECK(emb_optimizer_state(o, lt, 0, &st, &n) == 0 &&
                  emb_optimizer_state(ro, emb_collection_table(ref, t), 0, &rst, &rn) == 0 &&
                  st && rst && n == rn, "%s: table %d: Adam's state or its count (%lld, %lld)",
              what, t, (long long)n, (long long)rn);
        for (int64_t id = 0; id < nrows[t] && st && rst; id++) {
            int32_t owner;
            int64_t col;
            emb_dist_locate(d, t, id, &owner, &col);
            if (owner != emb_dist_rank(d))
                continue;
            float *a, *e, *as, *es;
            emb_table_column_pointer(lt, col, EMB_CTX_NONE, (void **)&a);
            emb_table_column_pointer(emb_collection_table(ref, t), id, EMB_CTX_NONE,
                                     (void **)&e);
            emb_table_column_pointer(st, col, EMB_CTX_NONE, (void **)&as);
            emb_table_column_pointer(rst, id, EMB_CTX_NONE, (void **)&es);
            CHECK(!memcmp(a, e, 4 * (size_t)dims[t]) &&
                      !memcmp(as, es, 4 * (size_t)emb_table_featuresize(st)),
                  "%s: table %d id %lld", what, t, (long long)id);
        }
    }
}

static void rank_file(char *out, size_t cap, const char *dir, int r, int s)
{
    snprintf(out, cap, "%s/rank%d/ckpt-%d" EMB_CHECKPOINT_EXT, dir, r, s);
}

/* delta.ids tensors in this rank's file of step @s (0: a full checkpoint); its size. */
static int deltas_in(const char *dir, int s, long long *bytes)
{
    char p[256];
    rank_file(p, sizeof p, dir, rank, s);
    struct stat sb;
    *bytes = stat(p, &sb) == 0 ? (long long)sb.st_size : -1;
    EmbCheckpoint *ck = NULL;
    CHECK(emb_checkpoint_open(&ck, p, 0) == 0, "open %s", p);
    int n = 0;
    for (int64_t i = 0; ck && i < emb_checkpoint_count(ck); i++) {
        EmbCheckpointEntry e;
        n += emb_checkpoint_entry(ck, i, &e) == 0 && e.slot && !strcmp(e.slot, "delta.ids");
    }
    emb_checkpoint_close(&ck);
    return n;
}

/* A restore of step @s into a fresh one-process collection of this rank fails with
   EMB_ECORRUPT naming @culprit and leaves it as it was. */
static void restore_fails(const char *dir, int s, const char *culprit, const char *what)
{
    EmbCollection *one = make(MPI_COMM_SELF, true, NULL);
    EmbCollection *same = make(MPI_COMM_NULL, false, NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/dist-%d.index", dir, s);
    const int r = one ? emb_collection_restore(one, path, NULL) : -1;
    CHECK(r == EMB_ECORRUPT && strstr(emb_last_error(), culprit), "%s: %d, not EMB_ECORRUPT "
          "naming %s", what, r, culprit);
    if (one && same) {
        step(one, 0, 1, NULL, 0); /* unchanged: the same step as a fresh one */
        step(same, 0, 1, NULL, 0);
        compare(one, same, what);
    }
    emb_collection_destroy(&one);
    emb_collection_destroy(&same);
}

static void copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    char buf[4096];
    size_t n;
    while (a && b && (n = fread(buf, 1, sizeof buf, a)) > 0)
        CHECK(fwrite(buf, 1, n, b) == n, "copy");
    CHECK(a && b, "copy %s to %s", from, to);
    if (a)
        fclose(a);
    if (b)
        fclose(b);
}

/* Missing and foreign links of rank 0's chain of step 4 (full 1, deltas 2 3 4). */
static void bad_links(const char *dir)
{
    char f1[256], f3[256], f5[256], moved[300];
    rank_file(f1, sizeof f1, dir, 0, 1);
    rank_file(f3, sizeof f3, dir, 0, 3);
    rank_file(f5, sizeof f5, dir, 0, 5);
    snprintf(moved, sizeof moved, "%s.moved", f3);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(rename(f3, moved) == 0, "rename");
    MPI_Barrier(MPI_COMM_WORLD);
    restore_fails(dir, 4, "ckpt-3" EMB_CHECKPOINT_EXT, "a missing link");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CHECK(rename(moved, f3) == 0, "rename back");
        snprintf(moved, sizeof moved, "%s.moved", f1); /* another full file in its place */
        CHECK(rename(f1, moved) == 0, "rename");
        copy_file(f5, f1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    restore_fails(dir, 4, "ckpt-1" EMB_CHECKPOINT_EXT, "a foreign link");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(rename(moved, f1) == 0, "rename back");
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Step @s restored from @dir into @c: no failure, the step it holds. */
static void restore(EmbCollection *c, const char *dir, int s)
{
    char path[256];
    snprintf(path, sizeof path, "%s/dist-%d.index", dir, s);
    int64_t got = -1;
    CHECK(c && emb_collection_restore(c, path, &got) == 0 && got == s, "restore %d", s);
}

/* Six steps of @sh against the reference, saved with deltas; the chains restored into one
   process and into another placement, trained on. With @tiered, the sharded collection's
   parts are tiered tables (their deltas list the touched rows without reading the rest). */
static void scenario(const char *dir, bool tiered)
{
    EmbCollection *sh = make(MPI_COMM_WORLD, true, tiered ? dir : NULL);
    EmbCollection *ref = make(MPI_COMM_NULL, false, NULL);
    long long full_bytes = -1;
    for (int s = 0; s < 6 && sh && ref; s++) {
        step(sh, rank, nranks, ref, s);
        char path[256];
        CHECK(emb_collection_save(sh, dir, "ckpt", s + 1, 0, path, sizeof path) == 0,
              "save %d", s + 1);
        long long bytes;
        const int nd = deltas_in(dir, s + 1, &bytes);
        const int delta = s % (FULL_EVERY + 1) != 0; /* steps 1 and 5 full */
        CHECK(delta ? nd > 0 && bytes < full_bytes : nd == 0, "%sstep %d: %d delta tensors, "
              "%lld bytes (the full: %lld)", tiered ? "tiered: " : "", s + 1, nd, bytes,
              full_bytes);
        full_bytes = delta ? full_bytes : bytes;
        if (s + 1 == 4) { /* the chain full 1 + deltas 2, 3, 4 into one process */
            EmbCollection *one = make(MPI_COMM_SELF, true, NULL);
            restore(one, dir, 4);
            if (one)
                compare(one, ref, tiered ? "tiered: step 4 in one process"
                                         : "step 4 in one process");
            emb_collection_destroy(&one);
        }
    }
    /* full 5 + delta 6: into another placement over these ranks (every table whole on
       one rank) and into one process, then one more step each */
    EmbCollection *back = make(MPI_COMM_WORLD, false, NULL);
    EmbCollection *one = make(MPI_COMM_SELF, false, NULL);
    restore(back, dir, 6);
    restore(one, dir, 6);
    if (back && one && ref) {
        compare(back, ref, "step 6, another placement");
        compare(one, ref, "step 6 in one process");
        step(one, 0, 1, NULL, 6);
        step(back, rank, nranks, ref, 6);
        compare(back, ref, "trained on, another placement");
        compare(one, ref, "trained on in one process");
    }
    if (dir[0] && !tiered)
        bad_links(dir);
    emb_collection_destroy(&one);
    emb_collection_destroy(&back);
    emb_collection_destroy(&sh);
    emb_collection_destroy(&ref);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    char dir[2][64] = {"/tmp/embtables-distdelta-XXXXXX", "/tmp/embtables-distdelta-XXXXXX"};
    for (int k = 0; k < 2; k++) {
        if (rank == 0 && !mkdtemp(dir[k]))
            dir[k][0] = '\0';
        MPI_Bcast(dir[k], sizeof dir[k], MPI_CHAR, 0, MPI_COMM_WORLD);
    }
    scenario(dir[0], false);
    if (dir[1][0])
        scenario(dir[1], true);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && dir[1][0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir[1]);
        CHECK(system(cmd) == 0, "cleanup");
    }
    return dist_finish("test_dist_delta", dir[0]);
}
