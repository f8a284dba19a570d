/* SPDX-License-Identifier: BSD-2-Clause */
/* train.c — a training loop: three tables and Adagrad in an EmbCollection; exit 0 iff it learns */
#include <stdio.h>
#include <embtables/embtables.h>
enum { NB = 64, NT = 3, D = 8, W = NT * D }; /* table i: 1000 rows, bags of i + 1 ids */
int main(void)
{
    EmbCollectionTable spec[NT] = {{.name = "user"}, {.name = "item"}, {.name = "city"}};
    for (int i = 0; i < NT; i++) /* the strategy: auto, the default */
        spec[i].spec = (EmbVariableSpec){.ncolumns = 1000, .featuresize = D,
                                         .init = {EMB_INIT_UNIFORM, -0.1f, 0.1f, 42}},
        spec[i].pooling = EMB_POOLING_SUM;
    const EmbOptimizerConfig adagrad = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    EmbCollection *c = NULL; /* owns the tables, Adagrad, the strategy, the step's state */
    int r = emb_collection_create(&c, spec, NT, &(EmbCollectionOptions){.optimizer = &adagrad});
    static float out[NB * W]; /* row s: [user | item | city] pooled for sample s */
    static int64_t ids[NT][NB * NT]; EmbBatch b[NT]; /* a step's ids, one batch per table */
    const EmbOutputs layout = emb_collection_concat(c, out);
    double loss = 0, first = 0;
    for (int step = 0; step < 300 && !r; step++, first = first ? first : loss) {
        for (int i = 0; i < NT; i++) {
            for (int k = 0; k < NB * (i + 1); k++)
                ids[i][k] = (step * 7919 + k * 104729 + i) % 1000;
            b[i] = (EmbBatch){.ids = ids[i], .nnz = NB * (i + 1), .nbags = NB, .bag_size = i + 1};
        }
        r = emb_collection_forward(c, b, &layout), loss = 0; /* out = the pooled rows */
        for (int s = 0; s < NB && !r; s++) { /* y = Σ row, target +1 (even user) or -1 */
            float dy = ids[0][s] % 2 ? 1.0f : -1.0f;
            for (int j = 0; j < W; j++)
                dy += out[s * W + j];
            for (int j = 0; j < W; j++) /* dL/dout, in place: it has out's layout */
                out[s * W + j] = 2.0f * dy / NB;
            loss += (double)dy * dy / NB;
        }
        r = r ? r : emb_collection_backward(c, &layout); /* the pullback, then Adagrad */
    }
    printf("loss %.4f -> %.4f %s\n", first, loss, r ? emb_last_error() : "");
    emb_collection_destroy(&c);
    return !r && loss < first / 10 ? 0 : 1;
}
