/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * train.c — a complete training loop: three embedding tables in an EmbCollection, trained
 * with Adagrad. The model is y = the sum of the three pooled rows' elements, the target is
 * +1 for an odd user id and -1 for an even one, the loss is the mean squared error.
 * Exits 0 if the loss falls to a tenth of its first value, 1 otherwise.
 */
#include <stdio.h>
#include <embtables/embtables.h>

enum {
    NTABLES = 3,
    ROWS = 1000,                 /* rows per table */
    DIM = 8,                     /* elements per row */
    BATCH = 64,                  /* samples per step */
    WIDTH = NTABLES * DIM,       /* one sample's concatenated output */
    MAX_IDS = BATCH * NTABLES,   /* table t has bags of t + 1 ids */
    STEPS = 300,
};

/* The step's ids: table t gets bags of t + 1 ids, spread over its rows. */
static void make_batches(int step, int64_t ids[NTABLES][MAX_IDS], EmbBatch batch[NTABLES])
{
    for (int t = 0; t < NTABLES; t++) {
        const int bag_size = t + 1;
        for (int k = 0; k < BATCH * bag_size; k++)
            ids[t][k] = (step * 7919 + k * 104729 + t) % ROWS;
        batch[t] = (EmbBatch){.ids = ids[t], .nnz = BATCH * bag_size, .nbags = BATCH,
                              .bag_size = bag_size};
    }
}

/* The loss of the pooled outputs; replaces them by the loss's gradient, in place. */
static double loss_and_gradient(float out[BATCH * WIDTH], const int64_t user_ids[])
{
    double loss = 0;
    for (int s = 0; s < BATCH; s++) {
        float *row = &out[s * WIDTH];
        const float target = user_ids[s] % 2 ? 1.0f : -1.0f;
        float y = 0;
        for (int j = 0; j < WIDTH; j++)
            y += row[j];
        const float err = y - target;
        loss += (double)err * err / BATCH;
        for (int j = 0; j < WIDTH; j++) /* d loss / d row[j] */
            row[j] = 2.0f * err / BATCH;
    }
    return loss;
}

int main(void)
{
    const char *names[NTABLES] = {"user", "item", "city"};
    EmbCollectionTable tables[NTABLES];
    for (int t = 0; t < NTABLES; t++) {
        tables[t] = (EmbCollectionTable){
            .name = names[t],
            .spec = {.ncolumns = ROWS, .featuresize = DIM,
                     .init = {EMB_INIT_UNIFORM, -0.1f, 0.1f, 42}},
            .pooling = EMB_POOLING_SUM,
        };
    }
    const EmbOptimizerConfig adagrad = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    const EmbCollectionOptions options = {.optimizer = &adagrad};

    /* The collection owns the tables, the optimizer's state and the step's buffers. */
    EmbCollection *model = NULL;
    if (emb_collection_create(&model, tables, NTABLES, &options) != 0) {
        fprintf(stderr, "create: %s\n", emb_last_error());
        return 1;
    }

    static float out[BATCH * WIDTH]; /* sample s: [user | item | city], pooled */
    static int64_t ids[NTABLES][MAX_IDS];
    EmbBatch batch[NTABLES];
    const EmbOutputs layout = emb_collection_concat(model, out);
    double first_loss = 0, loss = 0;
    int rc = 0;

    for (int step = 0; step < STEPS; step++) {
        make_batches(step, ids, batch);
        rc = emb_collection_forward(model, batch, &layout);
        if (rc != 0)
            break;
        loss = loss_and_gradient(out, ids[0]);
        if (step == 0)
            first_loss = loss;
        rc = emb_collection_backward(model, &layout); /* the gradient, then Adagrad */
        if (rc != 0)
            break;
    }

    if (rc != 0)
        fprintf(stderr, "training step: %s\n", emb_last_error());
    else
        printf("loss %.4f -> %.4f\n", first_loss, loss);
    emb_collection_destroy(&model);
    return rc == 0 && loss < first_loss / 10 ? 0 : 1;
}
