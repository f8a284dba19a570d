/*
 * dlrm_train.c — a DLRM-style training loop in C, the one to copy.
 *
 * Model: 8 categorical features, each embedded by its own table (D = 16, Criteo-like
 * skewed cardinalities; one table partitioned mod 4 to show it changes nothing), plus 4
 * dense features. Per sample the interaction row is [dense | e_0 | ... | e_7], written by
 * one prealloc-concat emb_maplookup straight into the row (the dense features sit in the
 * prependrows columns, never touched by the lookup). A logistic top layer on that row
 * predicts a click; the loss is binary cross-entropy.
 *
 * Per step: forward (emb_maplookup), top layer, dL/drow, backward of the concat output
 * (emb_maplookup_backward), one fused, deduplicating row-wise-Adagrad update of every
 * table (emb_update_many) on the same strategy, SGD on the top layer. Steady-state steps
 * allocate nothing in the library. At the end the store is checkpointed and restored.
 *
 * Labels come from a hidden model of the same shape, so the loss can fall well below
 * log 2 = 0.693. Usage: dlrm_train [steps=300] [threads=0 (all cores)]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <embtables/embtables.h>
#include <embtables/partition.h>
#include <embtables/update.h>

enum { NT = 8, D = 16, NDENSE = 4, BATCH = 256, WIDTH = NDENSE + NT * D };

static const int64_t cardinality[NT] = {1000, 50000, 20, 3000, 200000, 8, 700, 12000};

#define CHECK(call)                                                                        \
    do {                                                                                   \
        int r_ = (call);                                                                   \
        if (r_ != 0) {                                                                     \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, emb_strerror(r_),         \
                    emb_last_error());                                                     \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static uint64_t rng = 0x5eed;
static uint64_t next_u64(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double unit(void) { return (double)(next_u64() >> 11) * (1.0 / 9007199254740992.0); }

/* A skewed id: popular ids come often (an inverse power law, as click logs are). */
static int64_t skewed_id(int64_t n)
{
    return (int64_t)((double)n * pow(unit(), 3.0)) % n;
}

/* The hidden model: one score per (table, id), a dense weight vector. */
static double hidden_score(int t, int64_t id)
{
    uint64_t z = (uint64_t)id * 0x9e3779b97f4a7c15ull + (uint64_t)t * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 31)) * 0x94d049bb133111ebull;
    return ((double)(z >> 11) * (1.0 / 9007199254740992.0) - 0.5) * 1.5;
}

typedef struct Batch {
    int64_t ids[NT][BATCH];
    float dense[BATCH][NDENSE];
    float label[BATCH];
} Batch;

static void make_batch(Batch *b)
{
    for (int s = 0; s < BATCH; s++) {
        double logit = 0;
        for (int k = 0; k < NDENSE; k++) {
            b->dense[s][k] = (float)(unit() * 2 - 1);
            logit += (k + 1) * 0.3 * b->dense[s][k];
        }
        for (int t = 0; t < NT; t++) {
            b->ids[t][s] = skewed_id(cardinality[t]);
            logit += hidden_score(t, b->ids[t][s]);
        }
        b->label[s] = unit() < 1.0 / (1.0 + exp(-logit)) ? 1.0f : 0.0f;
    }
}

int main(int argc, char **argv)
{
    const int steps = argc > 1 ? atoi(argv[1]) : 300;
    const int threads = argc > 2 ? atoi(argv[2]) : 0;

    /* tables, from a store: named, initialised, checkpointable */
    EmbStore *store;
    EmbTable *tables[NT];
    CHECK(emb_store_create(&store));
    for (int t = 0; t < NT; t++) {
        char name[32];
        snprintf(name, sizeof name, "C%d", t + 1);
        EmbVariableSpec v = {.name = name, .ncolumns = cardinality[t], .featuresize = D,
                             .dtype = EMB_F32, .trainable = 1,
                             .init = {EMB_INIT_UNIFORM, -0.05f, 0.05f, 1234}};
        if (t == 4) { /* the largest table, sharded as TF's fixed_size_partitioner would */
            v.nshards = 4;
            v.partition = EMB_PARTITION_MOD;
        }
        CHECK(emb_store_get(store, &v, EMB_REUSE_NO, &tables[t]));
    }

    /* one strategy for forward and update; one gradient holder and indexer per table */
    EmbStrategy *strategy;
    EmbStrategyOptions so = {.nthreads = threads};
    CHECK(emb_strategy_prealloc_concat(&strategy, &so));
    EmbOptimizer *opt;
    EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_ROWWISE_ADAGRAD, 0.05f);
    CHECK(emb_optimizer_create(&opt, &oc));
    EmbGrad *grads[NT];
    EmbIndexer *indexers[NT];
    for (int t = 0; t < NT; t++) {
        CHECK(emb_grad_create(&grads[t]));
        CHECK(emb_indexer_create(&indexers[t]));
        CHECK(emb_optimizer_attach(opt, tables[t]));
    }

    static Batch batch;
    static float rows[BATCH][WIDTH], drows[BATCH][WIDTH];
    float top[WIDTH] = {0}, bias = 0;
    EmbBatch batches[NT];
    const EmbOutputs out = {.concat = &rows[0][0], .concat_stride = WIDTH, .prependrows = NDENSE};
    const EmbOutputs dout = {.concat = &drows[0][0], .concat_stride = WIDTH, .prependrows = NDENSE};
    double first = 0, last = 0, avg = 0;

    for (int step = 1; step <= steps; step++) {
        make_batch(&batch);
        for (int t = 0; t < NT; t++)
            batches[t] = (EmbBatch){.ids = batch.ids[t], .nnz = BATCH, .nbags = BATCH, .bag_size = 1};
        for (int s = 0; s < BATCH; s++) /* the dense features go in the prepended columns */
            memcpy(rows[s], batch.dense[s], sizeof batch.dense[s]);

        CHECK(emb_maplookup(strategy, tables, NT, batches, NULL, &out));

        /* top layer: p = sigmoid(top . row + bias); dL/drow = (p - y) top / BATCH */
        double loss = 0, gbias = 0;
        static float gtop[WIDTH];
        memset(gtop, 0, sizeof gtop);
        for (int s = 0; s < BATCH; s++) {
            double z = bias;
            for (int i = 0; i < WIDTH; i++)
                z += (double)top[i] * rows[s][i];
            const double p = 1.0 / (1.0 + exp(-z)), y = batch.label[s];
            loss -= y * log(p + 1e-12) + (1 - y) * log(1 - p + 1e-12);
            const float e = (float)((p - y) / BATCH);
            for (int i = 0; i < WIDTH; i++) {
                drows[s][i] = e * top[i];
                gtop[i] += e * rows[s][i];
            }
            gbias += e;
        }
        loss /= BATCH;

        /* backward into the tables (lazy: no per-id work until the update) and update */
        CHECK(emb_maplookup_backward(tables, NT, batches, NULL, &dout, grads));
        CHECK(emb_update_many(strategy, opt, tables, (const EmbGrad *const *)grads, NT,
                              indexers, 0));
        for (int i = 0; i < WIDTH; i++)
            top[i] -= 0.5f * gtop[i];
        bias -= 0.5f * (float)gbias;

        avg = step == 1 ? loss : 0.95 * avg + 0.05 * loss;
        if (step == 20)
            first = avg;
        last = avg;
        if (step % 50 == 0 || step == steps)
            printf("step %4d  loss %.4f (moving average)\n", step, avg);
    }

    /* checkpoint the store, scramble a table, restore it */
    char dir[] = "/tmp/dlrm_train-XXXXXX", path[512];
    if (mkdtemp(dir)) {
        EmbSaver *saver;
        CHECK(emb_saver_create(&saver, dir, "dlrm", NULL));
        CHECK(emb_saver_save(saver, store, steps, path, sizeof path));
        const EmbInitializer zero = {EMB_INIT_ZEROS, 0, 0, 0};
        CHECK(emb_table_initialize(tables[0], &zero));
        int64_t restored_step;
        CHECK(emb_checkpoint_restore(store, path, &restored_step));
        printf("checkpoint %s (step %lld) saved and restored\n", path, (long long)restored_step);
        emb_saver_destroy(&saver);
        unlink(path);
        char index[600];
        snprintf(index, sizeof index, "%s/checkpoint", dir);
        unlink(index);
        rmdir(dir);
    }

    for (int t = 0; t < NT; t++) {
        emb_grad_destroy(&grads[t]);
        emb_indexer_destroy(&indexers[t]);
    }
    emb_optimizer_destroy(&opt);
    emb_strategy_destroy(&strategy);
    emb_store_destroy(&store);
    if (steps >= 100 && !(last < first - 0.02)) {
        fprintf(stderr, "the loss did not fall: %.4f -> %.4f\n", first, last);
        return 1;
    }
    return 0;
}
