/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_dist_collection.c — the sharded collection (dist.h's emb_dist_collection_create,
 * run under mpirun: tests/run_mpi.sh) against a one-process EmbCollection running the
 * global batch: the forward's rows and every table after each Adagrad step, bit for bit,
 * with table-wise and row-wise tables; a checkpoint restored into a fresh sharded
 * collection of tiered parts (tiered.h, caches of 2 to 3 rows) trains on with the same bits; a bad id on one rank fails every rank. Exit 0
 * on success, 1 on a failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <embtables/dist.h>
#include <embtables/embtables.h>
#include <embtables/tiered.h>

#include "dist_check.h"

#define NT 3
#define G 24     /* global bags: 24 / ranks each (1, 2, 4 ranks) */
#define BAG 3
#define PRE 2    /* prependrows */
#define W (PRE + 8 + 16 + 4)
static const int64_t nrows[NT] = {50, 200, 3};
static const int32_t dims[NT] = {8, 16, 4};

static void specs(EmbCollectionTable *ct)
{
    static const char *const names[NT] = {"a", "b", "c"};
    const EmbCombiner comb[NT] = {EMB_COMBINER_MEAN, EMB_COMBINER_SUM, EMB_COMBINER_SQRTN};
    for (int t = 0; t < NT; t++)
        ct[t] = (EmbCollectionTable){.name = names[t], .pooling = {.combiner = comb[t]},
                                     .spec = {.ncolumns = nrows[t], .featuresize = dims[t]}};
    ct[0].spec.init = (EmbInitializer){EMB_INIT_CONSTANT, 0.25f, 0, 0};
}

/* Tables 1 and 2 get value(t, id, j) at every id: the reference's whole, the sharded's
 * local parts at their columns. */
static void fill(EmbCollection *c, EmbDist *d)
{
    for (int t = 1; t < NT; t++) {
        EmbTable *lt = emb_collection_table(c, t);
        if (!lt)
            continue;
        for (int64_t id = 0; id < nrows[t]; id++) {
            int32_t owner = 0;
            int64_t col = id;
            if (d)
                emb_dist_locate(d, t, id, &owner, &col);
            float row[16];
            for (int j = 0; j < dims[t]; j++)
                row[j] = value(t, id, j);
            if (!d || owner == rank)
                CHECK(emb_table_scatter_update(lt, &col, 1, row, dims[t]) == 0, "fill");
        }
    }
}

/* The sharded collection; with @tier_dir, every rank's parts are tiered tables in files
   <tier_dir>/<name>.rank<R> with a cache of 2 to 3 records (state room from the
   optimizer). */
static EmbCollection *sharded(const char *tier_dir)
{
    EmbCollectionTable ct[NT];
    specs(ct);
    char paths[NT][128];
    EmbTieredSpec ts[NT];
    for (int t = 0; t < NT && tier_dir; t++) {
        snprintf(paths[t], sizeof paths[t], "%s/%s", tier_dir, ct[t].name);
        ts[t] = (EmbTieredSpec){paths[t], {.cache_bytes = 2 * 4 * 3 * dims[t],
                                           .engine = EMB_TIER_ENGINE_PREAD}};
        ct[t].spec.tiered = &ts[t];
    }
    const EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    const EmbCollectionOptions o = {.optimizer = &oc, .prependrows = PRE};
    const EmbDistOptions dopts = {.place = {.plan = EMB_DIST_PLAN_AUTO,
                                            .rowwise_bytes = 5000}}; /* b by rows */
    EmbCollection *c = NULL;
    CHECK(emb_dist_collection_create(&c, MPI_COMM_WORLD, ct, NT, &o, &dopts) == 0, "create");
    if (c)
        fill(c, emb_dist_of(c));
    return c;
}

static EmbCollection *reference(void)
{
    EmbCollectionTable ct[NT];
    specs(ct);
    const EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    const EmbCollectionOptions o = {.optimizer = &oc, .prependrows = PRE};
    EmbCollection *c = NULL;
    CHECK(emb_collection_create(&c, ct, NT, &o) == 0, "reference");
    fill(c, NULL);
    return c;
}

/* Step @s: the global batch's ids of table t are ids[t]; this rank brings bags [b0, b0+nb). */
static void step(EmbCollection *sh, EmbCollection *ref, int s, int bad)
{
    static int64_t ids[NT][G * BAG];
    static float gout[G * W], lout[G * W];
    const int64_t nb = G / nranks, b0 = rank * nb;
    EmbBatch gb[NT], lb[NT];
    for (int t = 0; t < NT; t++) {
        for (int k = 0; k < G * BAG; k++)
            ids[t][k] = (int64_t)(hash3((uint64_t)s, (uint64_t)t, (uint64_t)k)
                                  % (uint64_t)nrows[t]);
        gb[t] = (EmbBatch){.ids = ids[t], .nnz = G * BAG, .nbags = G, .bag_size = BAG};
        lb[t] = (EmbBatch){.ids = ids[t] + b0 * BAG, .nnz = nb * BAG, .nbags = nb,
                           .bag_size = BAG};
    }
    if (bad && rank == 0)
        ids[1][b0 * BAG + 1] = 1000;
    const EmbOutputs go = emb_collection_concat(ref, gout), lo = emb_collection_concat(sh, lout);
    const int r = emb_collection_forward(sh, lb, &lo);
    if (bad) {
        CHECK(r == EMB_ERANGE && strstr(emb_last_error(), "rank 0"), "bad id: %d", r);
        return;
    }
    CHECK(r == 0, "forward");
    CHECK(emb_collection_forward(ref, gb, &go) == 0, "reference forward");
    for (int64_t b = 0; b < nb; b++)
        CHECK(memcmp(lout + b * W + PRE, gout + (b0 + b) * W + PRE, 4 * (W - PRE)) == 0,
              "step %d: row %lld", s, (long long)b);
    for (int64_t k = 0; k < G * W; k++)
        gout[k] = (float)((int64_t)(hash3(99, (uint64_t)(k / W), (uint64_t)(k % W)) % 201) - 100)
                  / 64;
    memcpy(lout, gout + b0 * W, sizeof(float) * (size_t)(nb * W));
    CHECK(emb_collection_backward(sh, &lo) == 0, "backward");
    CHECK(emb_collection_backward(ref, &go) == 0, "reference backward");
}

/* Every column this rank holds equals the reference's. */
static void compare(EmbCollection *sh, EmbCollection *ref, const char *what)
{
    EmbDist *d = emb_dist_of(sh);
    for (int t = 0; t < NT; t++) {
        EmbTable *lt = emb_collection_table(sh, t);
        if (!lt)
            continue;
        float a[200 * 16], e[200 * 16];
        CHECK(emb_table_read(lt, a, dims[t]) == 0 &&
                  emb_table_read(emb_collection_table(ref, t), e, dims[t]) == 0, "read");
        for (int64_t id = 0; id < nrows[t]; id++) {
            int32_t owner;
            int64_t col;
            emb_dist_locate(d, t, id, &owner, &col);
            if (owner == rank)
                CHECK(!memcmp(a + col * dims[t], e + id * dims[t], 4 * (size_t)dims[t]),
                      "%s: table %d id %lld", what, t, (long long)id);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    EmbCollection *sh = sharded(NULL), *ref = reference();
    for (int s = 0; s < 3 && sh && ref; s++) {
        step(sh, ref, s, 0);
        compare(sh, ref, "train");
    }
    char dir[64] = "/tmp/embtables-distcoll-XXXXXX", path[256] = "";
    if (rank == 0 && !mkdtemp(dir))
        dir[0] = '\0';
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    int64_t gstep = -1;
    EmbCollection *back = sh ? sharded(dir) : NULL; /* tiered parts, restored */
    CHECK(back && emb_collection_save(sh, dir, "ckpt", 3, 0, path, sizeof path) == 0, "save");
    CHECK(back && emb_collection_restore(back, path, &gstep) == 0 && gstep == 3, "restore");
    for (int t = 0; t < NT && back; t++) {
        const EmbTable *lt = emb_collection_table(back, t);
        CHECK(!lt || emb_table_is_tiered(lt), "table %d is not tiered", t);
    }
    if (back) {
        step(back, ref, 3, 0);
        compare(back, ref, "restored");
        step(back, ref, 4, 1); /* a bad id on rank 0: every rank fails */
        compare(back, ref, "after the bad id");
    }
    emb_collection_destroy(&back);
    emb_collection_destroy(&sh);
    emb_collection_destroy(&ref);
    return dist_finish("test_dist_collection", dir);
}
