/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist_quickstart.c — tables sharded over MPI ranks (library embtables_mpi), run as
 * `mpirun -np 2 dist_quickstart` (any rank count). Three tables: two placed whole by
 * emb_dist_place(), the largest split by rows over every rank. Column j of table t holds
 * 100 t + j in every element, so a bag's sum is known: each rank checks its own bags,
 * then runs one SGD step (dy = 1) and checks a column it holds. Exit 0 when every rank
 * saw the expected values.
 */
#include <stdio.h>

#include <embtables/dist.h>
#include <embtables/embtables.h>

#define NT 3
#define D 4

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nranks, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const EmbDistTableDesc desc[NT] = {
        {.name = "small", .nrows = 10, .featuresize = D, .dtype = EMB_F32, .lookups = 2},
        {.name = "medium", .nrows = 20, .featuresize = D, .dtype = EMB_F32, .lookups = 2},
        {.name = "large", .nrows = 1000, .featuresize = D, .dtype = EMB_F32, .lookups = 2}};
    const EmbDistOptions opts = {.place = {.plan = EMB_DIST_PLAN_AUTO}};
    EmbDist *d = NULL;
    int r = emb_dist_create(&d, MPI_COMM_WORLD, desc, NT, &opts);
    if (r) {
        fprintf(stderr, "rank %d: %s\n", rank, emb_dist_last_error());
        MPI_Finalize();
        return 1;
    }
    /* fill what this rank holds: local column c is the table's id located there */
    for (int t = 0; t < NT; t++) {
        EmbTable *local = emb_dist_local_table(d, t);
        for (int64_t id = 0; local && id < desc[t].nrows; id++) {
            int32_t owner;
            int64_t col;
            float *v;
            emb_dist_locate(d, t, id, &owner, &col);
            if (owner != rank)
                continue;
            emb_table_column_pointer(local, col, EMB_CTX_NONE, (void **)&v);
            for (int j = 0; j < D; j++)
                v[j] = (float)(100 * t + id);
        }
    }
    /* this rank's two bags per table: ids {rank, rank + 1} and {rank + 2, rank + 3} */
    int64_t ids[NT][4];
    EmbBatch batches[NT];
    for (int t = 0; t < NT; t++) {
        for (int k = 0; k < 4; k++)
            ids[t][k] = (rank + k) % desc[t].nrows;
        batches[t] = (EmbBatch){.ids = ids[t], .nnz = 4, .nbags = 2, .bag_size = 2};
    }
    float out[2][NT * D], dy[2][NT * D];
    const EmbOutputs o = {.concat = &out[0][0], .concat_stride = NT * D};
    r = emb_dist_maplookup(d, batches, NULL, &o);
    for (int b = 0; b < 2 && !r; b++)
        for (int t = 0; t < NT; t++) {
            const float want = (float)(200 * t + ids[t][2 * b] + ids[t][2 * b + 1]);
            bad += out[b][t * D] != want;
        }
    /* one SGD step with dy = 1: every id looked up once anywhere loses lr per lookup */
    for (int b = 0; b < 2; b++)
        for (int j = 0; j < NT * D; j++)
            dy[b][j] = 1.0f;
    EmbOptimizer *sgd = NULL;
    const EmbOptimizerConfig cfg = emb_optimizer_defaults(EMB_OPT_SGD, 0.5f);
    if (!r)
        r = emb_optimizer_create(&sgd, &cfg);
    if (!r)
        r = emb_dist_backward(d, &(EmbOutputs){.concat = &dy[0][0], .concat_stride = NT * D});
    if (!r)
        r = emb_dist_update(d, sgd, 0);
    if (r) {
        fprintf(stderr, "rank %d: %s\n", rank, emb_dist_last_error());
        bad++;
    }
    /* id 0 of "large" was looked up once, by rank 0 (ids 0..nranks+2 < 1000): 200 - 0.5 */
    int32_t owner;
    int64_t col;
    emb_dist_locate(d, 2, 0, &owner, &col);
    if (!r && owner == rank) {
        float *v;
        emb_table_column_pointer(emb_dist_local_table(d, 2), col, EMB_CTX_NONE, (void **)&v);
        bad += v[0] != 199.5f;
    }
    int total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("dist_quickstart: %d ranks, %s\n", nranks, total ? "wrong values" : "ok");
    emb_optimizer_destroy(&sgd);
    emb_dist_destroy(&d);
    MPI_Finalize();
    return total ? 1 : 0;
}
