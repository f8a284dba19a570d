/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_gpu.c — the CUDA back end against the CPU library itself (emb_lookup,
 * emb_lookup_backward + emb_update) on seeded random inputs.
 *
 *   test_gpu --host   checks that need no GPU (argument validation before any CUDA call,
 *                     EMB_ENODEV without a device); always runs.
 *   test_gpu          the GPU checks; exits 77 (skipped) when no CUDA device is present.
 *   test_gpu_emu      the same checks on the host emulation of the device (gpu/emu/);
 *                     --quick: fewer feature sizes (the sanitizer build).
 *
 * Tolerances (stated here, used below): gather without max_norm is exact (bit equal);
 * pooled f32 results within 1e-5 · (1 + Σ|w·e|) of emb_lookup (fma vs mul+add, the
 * max_norm sum of squares in another order); tables after several backward + optimizer
 * steps within 1e-4 · (1 + |w|) for f32 and (2 storage ulps + 1e-4) · (1 + |w|) for f16 / bf16
 * (a rounding that falls the other way can carry into the next step) of the CPU library's
 * emb_update with the same EmbOptimizerConfig (sums in another order; Adam: at most 1 in
 * 10^4 elements outside, see check_backward).
 * The seed is printed; EMB_TEST_SEED=<n> replays a run.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <embtables/embtables.h>
#include <embtables/gpu.h>

#include "gpu_check.h"

static int failures;
static int quick; /* --quick: a subset of the feature sizes (sanitizer builds) */
static uint64_t seed_state;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            failures++;                                                                    \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                           \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, " [%s]\n", emb_gpu_last_error());                              \
        }                                                                                  \
    } while (0)

static uint64_t rnd(void)
{
    uint64_t z = (seed_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float rndf(void) /* uniform in [-1, 1) */
{
    return (float)((rnd() >> 40) * (1.0 / (1ull << 24))) * 2.0f - 1.0f;
}

static void *to_dev(const void *h, size_t bytes)
{
    void *d = NULL;
    CUDA(cudaMalloc(&d, bytes ? bytes : 4));
    if (bytes)
        CUDA(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* ---- host-only checks ---------------------------------------------------------------- */

static int host_checks(void)
{
    EmbGpuTable *t = NULL;
    EmbGpuWorkspace *ws = NULL;
    const EmbBatch b = {0};
    const EmbOptimizerConfig sgd = emb_optimizer_defaults(EMB_OPT_SGD, 0.1f);
    CHECK(emb_gpu_table_create(NULL, 4, 4, EMB_F32, NULL, NULL) == EMB_ENULL, "NULL out");
    CHECK(emb_gpu_table_create(&t, -1, 4, EMB_F32, NULL, NULL) == EMB_EINVAL, "ncolumns -1");
    CHECK(emb_gpu_table_create(&t, 4, 0, EMB_F32, NULL, NULL) == EMB_EINVAL, "featuresize 0");
    CHECK(emb_gpu_table_create(&t, 4, EMB_GPU_MAX_FEATURESIZE + 1, EMB_F32, NULL, NULL) ==
          EMB_EINVAL, "featuresize too large");
    CHECK(emb_gpu_table_create(&t, 4, 4, (EmbDtype)7, NULL, NULL) == EMB_EDTYPE, "dtype 7");
    CHECK(t == NULL, "table created on failure");
    CHECK(emb_gpu_lookup(NULL, &b, NULL, NULL, 4, 0, NULL, NULL) == EMB_ENULL, "NULL table");
    CHECK(emb_gpu_maplookup(NULL, 1, &b, NULL, NULL, 0, NULL, NULL) == EMB_ENULL, "NULL tables");
    CHECK(emb_gpu_backward_update(NULL, &b, NULL, NULL, 4, NULL, 0, NULL, NULL) == EMB_ENULL,
          "NULL opt");
    CHECK(emb_gpu_backward_update(NULL, &b, NULL, NULL, 4, &sgd, 0, NULL, NULL) == EMB_ENULL,
          "NULL ws");
    CHECK(emb_gpu_workspace_check(NULL) == EMB_ENULL, "NULL ws check");
    CHECK(emb_gpu_device_count(NULL) == EMB_ENULL, "NULL count");
    CHECK(strlen(emb_gpu_last_error()) > 0, "a message is recorded");
    emb_gpu_table_destroy(NULL);
    emb_gpu_workspace_destroy(NULL);
    emb_gpu_table_destroy(&t);
    int n = -1;
    const int r = emb_gpu_device_count(&n);
    if (r == EMB_ENODEV) {
        CHECK(n == 0, "count %d without a device", n);
        CHECK(emb_gpu_table_create(&t, 4, 4, EMB_F32, "x", NULL) == EMB_ENODEV, "ENODEV table");
        CHECK(emb_gpu_workspace_create(&ws) == EMB_ENODEV, "ENODEV workspace");
        CHECK(t == NULL && ws == NULL, "objects created without a device");
        printf("host checks: no CUDA device (%s)\n", emb_gpu_last_error());
    } else {
        CHECK(r == 0 && n > 0, "device count %d, r %d", n, r);
    }
    printf("host checks: %s\n", failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}

/* ---- random inputs ------------------------------------------------------------------- */

typedef struct Case {
    EmbDtype dt;
    int32_t D;
    EmbCombiner comb;
    int ragged, weighted, i32;
    float max_norm;
    unsigned flags;
} Case;

#define NCOL 1000

static EmbTable *host_table(int64_t ncol, int32_t D, EmbDtype dt)
{
    EmbTable *t = NULL;
    if (emb_table_create(&t, ncol, D, dt, NULL)) {
        fprintf(stderr, "emb_table_create: %s\n", emb_last_error());
        exit(1);
    }
    float *v = malloc((size_t)(ncol * D) * 4);
    for (int64_t i = 0; i < ncol * D; i++)
        v[i] = rndf();
    emb_table_assign(t, v, ncol, D, D); /* rounded to the dtype */
    free(v);
    return t;
}

static EmbGpuTable *gpu_copy(const EmbTable *h)
{
    EmbGpuTable *g = NULL;
    int r = emb_gpu_table_create(&g, emb_table_ncolumns(h), emb_table_featuresize(h),
                                 emb_table_dtype(h), "test", NULL);
    if (!r)
        r = emb_gpu_table_upload(g, h, NULL);
    if (r) {
        fprintf(stderr, "gpu table: %s\n", emb_gpu_last_error());
        exit(1);
    }
    return g;
}

typedef struct HBatch {
    EmbBatch h, d; /* host and device views */
} HBatch;

/* nbags bags of about avg ids (ragged: 0 .. 2avg), a quarter of them the hot id 0. */
static void make_batch(HBatch *hb, const Case *c, int64_t nbags, int avg)
{
    const int64_t bag = c->comb == EMB_COMBINER_NONE ? 1 : avg;
    int64_t *off = NULL, nnz = nbags * bag;
    if (c->ragged && c->comb != EMB_COMBINER_NONE) {
        off = malloc((size_t)(nbags + 1) * 8);
        off[0] = 0;
        for (int64_t i = 0; i < nbags; i++)
            off[i + 1] = off[i] + (int64_t)(rnd() % (uint64_t)(2 * avg + 1));
        nnz = off[nbags];
    }
    int64_t *ids = malloc((size_t)(nnz ? nnz : 1) * 8);
    float *w = c->weighted ? malloc((size_t)(nnz ? nnz : 1) * 4) : NULL;
    for (int64_t k = 0; k < nnz; k++) {
        ids[k] = rnd() % 4 == 0 ? 0 : (int64_t)(rnd() % NCOL);
        if ((c->flags & EMB_PRUNE_INVALID) && rnd() % 8 == 0)
            ids[k] = -1 - (int64_t)(rnd() % 5);
        if (w)
            w[k] = (c->flags & EMB_PRUNE_NONPOSITIVE_WEIGHTS) ? rndf() + 0.5f : rndf() * 0.5f + 1.0f;
    }
    if (c->i32)
        for (int64_t k = 0; k < nnz; k++)
            ((int32_t *)ids)[k] = (int32_t)ids[k];
    hb->h = (EmbBatch){ids, c->i32 ? EMB_ID_I32 : EMB_ID_I64, nnz, nbags, off ? 0 : bag, off, w};
    hb->d = hb->h;
    hb->d.ids = to_dev(ids, (size_t)nnz * (c->i32 ? 4 : 8));
    hb->d.offsets = off ? to_dev(off, (size_t)(nbags + 1) * 8) : NULL;
    hb->d.weights = w ? to_dev(w, (size_t)nnz * 4) : NULL;
}

static void free_batch(HBatch *hb)
{
    free((void *)hb->h.ids);
    free((void *)hb->h.offsets);
    free((void *)hb->h.weights);
    cudaFree((void *)hb->d.ids);
    cudaFree((void *)hb->d.offsets);
    cudaFree((void *)hb->d.weights);
}

static EmbPooling pooling_of(const Case *c)
{
    return (EmbPooling){c->comb, c->max_norm, 3, c->flags};
}

static int64_t bag_len(const EmbBatch *b, int64_t i)
{
    return b->offsets ? b->offsets[i + 1] - b->offsets[i] : b->bag_size;
}

/* Compares GPU rows with CPU rows; poison (0xff bytes) must remain past D. */
static void compare_rows(const float *gpu, const float *cpu, const EmbBatch *b, int32_t D,
                         int64_t stride, int exact, const char *what)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < b->nbags; i++)
        for (int64_t j = 0; j < stride; j++) {
            const float g = gpu[i * stride + j], c = cpu[i * stride + j];
            const int ok = j >= D ? isnan(g)
                         : exact ? memcmp(&g, &c, 4) == 0
                                 : fabsf(g - c) <= 2e-5f * (1.0f + (float)bag_len(b, i));
            if (!ok && bad++ < 3)
                fprintf(stderr, "  %s: bag %lld col %lld gpu %.9g cpu %.9g\n", what,
                        (long long)i, (long long)j, (double)g, (double)c);
        }
    CHECK(bad == 0, "%s: %lld elements differ", what, (long long)bad);
}

static void check_lookup(const Case *c, EmbGpuWorkspace *ws)
{
    EmbTable *h = host_table(NCOL, c->D, c->dt);
    EmbGpuTable *g = gpu_copy(h);
    HBatch hb;
    make_batch(&hb, c, 257, 9);
    const EmbPooling p = pooling_of(c);
    const int64_t stride = c->D + 3, n = hb.h.nbags * stride;
    float *cpu = malloc((size_t)(n ? n : 1) * 4), *back = malloc((size_t)(n ? n : 1) * 4);
    memset(cpu, 0xff, (size_t)n * 4);
    int r = emb_lookup(h, &hb.h, &p, cpu, stride);
    CHECK(r == 0, "cpu lookup: %s", emb_last_error());
    float *out = NULL;
    CUDA(cudaMalloc((void **)&out, (size_t)(n ? n : 1) * 4));
    CUDA(cudaMemset(out, 0xff, (size_t)n * 4));
    r = emb_gpu_lookup(g, &hb.d, &p, out, stride, 0, ws, NULL);
    char what[160];
    snprintf(what, sizeof what, "lookup %s D=%d comb=%d ragged=%d w=%d i32=%d max_norm=%g flags=%u",
             emb_dtype_name(c->dt), c->D, c->comb, c->ragged, c->weighted, c->i32,
             (double)c->max_norm, c->flags);
    CHECK(r == 0, "%s: %d", what, r);
    CUDA(cudaMemcpy(back, out, (size_t)n * 4, cudaMemcpyDeviceToHost));
    compare_rows(back, cpu, &hb.h, c->D, stride, c->comb == EMB_COMBINER_NONE && c->max_norm == 0.0f, what);
    cudaFree(out);
    free(cpu);
    free(back);
    free_batch(&hb);
    emb_gpu_table_destroy(&g);
    emb_table_destroy(&h);
}

static void lookup_cases(EmbGpuWorkspace *ws)
{
    static const int32_t dims[] = {3, 64, 520, 1, 16, 130, 256};
    const int nd = quick ? 3 : 7;
    static const EmbDtype dts[] = {EMB_F32, EMB_F16, EMB_BF16};
    int count = 0;
    for (int di = 0; di < 3; di++)
        for (int k = 0; k < nd; k++)
            for (int comb = 0; comb <= 3; comb++)
                for (int var = 0; var < 4; var++) {
                    Case c = {dts[di], dims[k], (EmbCombiner)comb, var & 1, (var >> 1) & 1,
                              (var == 3), 0.0f, 0};
                    check_lookup(&c, ws);
                    count++;
                }
    /* max_norm, pruning, default id, non-temporal stores */
    for (int di = 0; di < 3; di++)
        for (int k = 0; k < nd; k++) {
            Case c = {dts[di], dims[k], EMB_COMBINER_MEAN, 1, 1, 0, 0.7f,
                      EMB_PRUNE_INVALID | EMB_PRUNE_NONPOSITIVE_WEIGHTS | EMB_USE_DEFAULT_ID};
            check_lookup(&c, ws);
            c.comb = EMB_COMBINER_SQRTN;
            c.flags = EMB_PRUNE_INVALID | EMB_OUT_NONTEMPORAL;
            check_lookup(&c, ws);
            c.comb = EMB_COMBINER_NONE;
            c.flags = EMB_PRUNE_INVALID | EMB_USE_DEFAULT_ID;
            check_lookup(&c, ws);
            count += 3;
        }
    printf("lookup: %d cases\n", count);
}

/* Three tables of different D and dtype into one concat matrix with prependrows. */
static void maplookup_case(EmbGpuWorkspace *ws)
{
    const int32_t dims[3] = {16, 50, 128};
    const EmbDtype dts[3] = {EMB_F32, EMB_F16, EMB_BF16};
    const int64_t nbags = 300, pre = 5, stride = pre + 16 + 50 + 128 + 3;
    EmbTable *h[3];
    EmbGpuTable *g[3];
    HBatch hb[3];
    EmbBatch hbs[3], dbs[3];
    EmbPooling ps[3];
    float *cpu = malloc((size_t)(nbags * stride) * 4), *back = malloc((size_t)(nbags * stride) * 4);
    memset(cpu, 0xff, (size_t)(nbags * stride) * 4);
    int64_t col = pre;
    for (int i = 0; i < 3; i++) {
        const Case c = {dts[i], dims[i], (EmbCombiner)(1 + i), i & 1, i == 2, i == 1, 0.0f, 0};
        h[i] = host_table(NCOL, dims[i], dts[i]);
        g[i] = gpu_copy(h[i]);
        make_batch(&hb[i], &c, nbags, 7);
        hbs[i] = hb[i].h;
        dbs[i] = hb[i].d;
        ps[i] = pooling_of(&c);
        CHECK(emb_lookup(h[i], &hbs[i], &ps[i], cpu + col, stride) == 0, "cpu lookup");
        col += dims[i];
    }
    float *out = NULL;
    CUDA(cudaMalloc((void **)&out, (size_t)(nbags * stride) * 4));
    CUDA(cudaMemset(out, 0xff, (size_t)(nbags * stride) * 4));
    const EmbOutputs o = {NULL, NULL, out, stride, pre};
    CHECK(emb_gpu_maplookup(g, 3, dbs, ps, &o, 0, ws, NULL) == 0, "maplookup");
    CUDA(cudaMemcpy(back, out, (size_t)(nbags * stride) * 4, cudaMemcpyDeviceToHost));
    int64_t bad = 0;
    for (int64_t b = 0; b < nbags; b++)
        for (int64_t j = 0; j < stride; j++) {
            const float x = back[b * stride + j], y = cpu[b * stride + j];
            if (isnan(y) ? !isnan(x) : !(fabsf(x - y) <= 2e-5f * (1.0f + 2 * 7)))
                bad++;
        }
    CHECK(bad == 0, "maplookup concat: %lld elements differ or prepend/tail written", (long long)bad);
    printf("maplookup: concat of 3 tables checked\n");
    cudaFree(out);
    free(cpu);
    free(back);
    for (int i = 0; i < 3; i++) {
        free_batch(&hb[i]);
        emb_gpu_table_destroy(&g[i]);
        emb_table_destroy(&h[i]);
    }
}

/* ---- backward + optimizers ----------------------------------------------------------- */

/* Host table contents as f32, for comparisons. */
static float *table_values(const EmbTable *t)
{
    const int64_t n = emb_table_ncolumns(t);
    const int32_t D = emb_table_featuresize(t);
    float *v = malloc((size_t)(n * D) * 4);
    emb_table_read(t, v, D);
    return v;
}

static float *gpu_values(const EmbGpuTable *g)
{
    EmbTable *h = NULL;
    emb_table_create(&h, emb_gpu_table_ncolumns(g), emb_gpu_table_featuresize(g),
                     emb_gpu_table_dtype(g), NULL);
    CHECK(emb_gpu_table_download(g, h, NULL) == 0, "download");
    float *v = table_values(h);
    emb_table_destroy(&h);
    return v;
}

/* @decay: 0 none, 1 L2, 2 decoupled (AdamW's), each at weight_decay 0.3. */
static void check_backward(const Case *c, EmbOptimizerKind kind, int decay, EmbGpuWorkspace *ws)
{
    EmbTable *h = host_table(NCOL, c->D, c->dt);
    EmbGpuTable *g = gpu_copy(h), *g2 = gpu_copy(h);
    EmbOptimizerConfig opt = emb_optimizer_defaults(kind, kind == EMB_OPT_SGD ? 0.5f : 0.05f);
    if (decay) {
        opt.weight_decay = 0.3f;
        opt.weight_decay_mode = decay == 1 ? EMB_DECAY_L2 : EMB_DECAY_DECOUPLED;
    }
    if (kind == EMB_OPT_ROWWISE_ADAGRAD && c->D % 2)
        opt.initial_accumulator = 0.25f; /* the state's start value travels too */
    EmbOptimizer *cpu = NULL;
    EmbIndexer *ix = NULL;
    EmbGrad *grad = NULL;
    if (emb_optimizer_create(&cpu, &opt) || emb_indexer_create(&ix) || emb_grad_create(&grad)) {
        fprintf(stderr, "cpu optimizer: %s\n", emb_last_error());
        exit(1);
    }
    const EmbPooling p = pooling_of(c);
    for (int step = 0; step < 3; step++) {
        if (step == 1) { /* an empty batch: no column changes, but Adam's t counts it */
            const EmbBatch e = {NULL, EMB_ID_I64, 0, 0, 1, NULL, NULL};
            CHECK(emb_lookup_backward(h, &e, &p, NULL, c->D, grad) == 0 &&
                  emb_update(cpu, h, grad, ix, 0) == 0, "cpu empty update: %s", emb_last_error());
            CHECK(emb_gpu_backward_update(g, &e, &p, NULL, c->D, &opt, 0, ws, NULL) == 0 &&
                  emb_gpu_backward_update(g2, &e, &p, NULL, c->D, &opt, 0, ws, NULL) == 0,
                  "empty backward");
        }
        HBatch hb;
        make_batch(&hb, c, 300, 8);
        const int64_t ds = c->D + 1, n = hb.h.nbags * ds;
        float *dy = malloc((size_t)(n ? n : 1) * 4);
        for (int64_t i = 0; i < n; i++)
            dy[i] = rndf();
        float *ddy = to_dev(dy, (size_t)n * 4);
        CHECK(emb_lookup_backward(h, &hb.h, &p, dy, ds, grad) == 0 &&
              emb_update(cpu, h, grad, ix, 0) == 0, "cpu update: %s", emb_last_error());
        CHECK(emb_gpu_backward_update(g, &hb.d, &p, ddy, ds, &opt, 0, ws, NULL) == 0, "backward");
        CHECK(emb_gpu_backward_update(g2, &hb.d, &p, ddy, ds, &opt, EMB_GPU_DEFER_CHECK, ws,
                                      NULL) == 0, "backward deferred");
        CHECK(emb_gpu_workspace_check(ws) == 0, "deferred check");
        cudaFree(ddy);
        free(dy);
        free_batch(&hb);
    }
    float *ref = table_values(h), *got = gpu_values(g), *got2 = gpu_values(g2);
    const float ulp = c->dt == EMB_BF16 ? 1.0f / 128 : c->dt == EMB_F16 ? 1.0f / 1024 : 0.0f;
    int64_t bad = 0;
    for (int64_t i = 0; i < (int64_t)NCOL * c->D; i++)
        if (!(fabsf(got[i] - ref[i]) <= (2 * ulp + 1e-4f) * (1.0f + fabsf(ref[i]))) && bad++ < 3)
            fprintf(stderr, "  element %lld: gpu %.9g ref %.9g\n", (long long)i,
                    (double)got[i], (double)ref[i]);
    /* Adam divides each element's gradient by its own magnitude: where the summed gradient
       nearly cancels, the order of the sum (GPU vs CPU) decides the step. A few such
       elements (at most 1 in 10^4) may differ; everything else is held to the tolerance. */
    const int64_t allowed = kind == EMB_OPT_ADAM ? (int64_t)NCOL * c->D / 10000 : 0;
    CHECK(bad <= allowed, "backward %s D=%d opt=%d decay=%d comb=%d max_norm=%g: %lld elements "
          "differ", emb_dtype_name(c->dt), c->D, (int)kind, decay, c->comb, (double)c->max_norm,
          (long long)bad);
    CHECK(memcmp(got, got2, (size_t)NCOL * c->D * 4) == 0, "backward not deterministic");
    free(ref);
    free(got);
    free(got2);
    emb_grad_destroy(&grad);
    emb_indexer_destroy(&ix);
    emb_optimizer_destroy(&cpu);
    emb_gpu_table_destroy(&g);
    emb_gpu_table_destroy(&g2);
    emb_table_destroy(&h);
}

static void backward_cases(EmbGpuWorkspace *ws)
{
    static const int32_t dims[] = {3, 200, 520, 16, 64};
    const int nd = quick ? 2 : 5;
    static const EmbDtype dts[] = {EMB_F32, EMB_F16, EMB_BF16};
    int count = 0;
    static const EmbOptimizerKind kinds[] = {EMB_OPT_SGD, EMB_OPT_ROWWISE_ADAGRAD, EMB_OPT_ADAM};
    for (int ki = 0; ki < 3; ki++)
        for (int di = 0; di < 3; di++)
            for (int k = 0; k < nd; k++) {
                Case c = {dts[di], dims[k], (EmbCombiner)(1 + (k % 3)), k & 1, (k >> 1) & 1,
                          k == 4, 0.0f, 0};
                check_backward(&c, kinds[ki], 0, ws);
                /* weight decay, L2 and decoupled, with and without max_norm's clip */
                check_backward(&c, kinds[ki], 1 + (k & 1), ws);
                c = (Case){dts[di], dims[k], EMB_COMBINER_MEAN, 1, 1, 0, 0.8f,
                           EMB_PRUNE_INVALID | EMB_PRUNE_NONPOSITIVE_WEIGHTS | EMB_USE_DEFAULT_ID};
                check_backward(&c, kinds[ki], 0, ws);
                check_backward(&c, kinds[ki], 2 - (k & 1), ws);
                count += 4;
            }
    printf("backward: %d cases (3 steps each)\n", count);
}

/* ---- stochastic rounding ------------------------------------------------------------- */

/* The CPU's update with stochastic_rounding of bf16 table @h by @steps steps of rows @dy
   on ids 0 .. N-1 (@bt, @ddy on the device) gives the bits of the GPU's with the CPU's seed
   (FNV-1a of the table's name, src/update/optimizer.c): one definition, src/sround.h. */
static void sr_cpu_case(EmbGpuWorkspace *ws, const EmbTable *h, const EmbBatch *bt,
                        const void *ddy, const int64_t *ids, const float *dy, int steps)
{
    const int64_t N = emb_table_ncolumns(h);
    const int32_t D = emb_table_featuresize(h);
    EmbTable *t = NULL;
    emb_table_create(&t, N, D, EMB_BF16, NULL);
    float *v = malloc((size_t)(N * D) * 4), *rows = malloc((size_t)(N * D) * 4);
    emb_table_read(h, v, D);
    emb_table_assign(t, v, N, D, D);
    for (int64_t i = 0; i < N * D; i++)
        rows[i] = dy[i % D];
    EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_SGD, 1.0f);
    c.stochastic_rounding = 1;
    EmbOptimizer *o = NULL;
    EmbIndexer *ix = NULL;
    EmbGrad *g = NULL;
    emb_optimizer_create(&o, &c);
    emb_indexer_create(&ix);
    emb_grad_create(&g);
    uint64_t seed = 0xcbf29ce484222325ull; /* the CPU's seed of the table */
    for (const char *p = emb_table_name(t); *p; p++)
        seed = (seed ^ (unsigned char)*p) * 0x100000001b3ull;
    EmbGpuTable *gt = gpu_copy(h);
    emb_gpu_table_set_seed(gt, seed);
    const EmbSparseGrad sg = {.ids = ids, .n = N, .featuresize = D, .values = rows, .stride = D};
    for (int s = 0; s < steps; s++) {
        CHECK(emb_grad_set_sparse(g, t, &sg) == 0, "cpu sr grad");
        CHECK(emb_update(o, t, g, ix, 0) == 0, "cpu sr update: %s", emb_last_error());
        CHECK(emb_gpu_backward_update(gt, bt, NULL, ddy, D, &c, EMB_GPU_STOCHASTIC_ROUNDING,
                                      ws, NULL) == 0, "gpu sr");
    }
    emb_table_read(t, v, D);
    float *vg = gpu_values(gt);
    CHECK(memcmp(v, vg, (size_t)(N * D) * 4) == 0, "stochastic rounding: CPU and GPU differ");
    free(vg);
    free(rows);
    free(v);
    emb_gpu_table_destroy(&gt);
    emb_optimizer_destroy(&o);
    emb_indexer_destroy(&ix);
    emb_grad_destroy(&g);
    emb_table_destroy(&t);
}

/* 16 SGD steps of -2^-10 on bf16 ones (a quarter of the bf16 ulp 2^-8 below 1): rounding to
   nearest loses every step (1.0), truncation would give 1 - 16 / 256, stochastic rounding
   keeps them on average (mean 1 - 16 / 1024, standard error ~1e-4 over the 256 x 32
   elements); the same bits for the same seed. */
static void sr_case(EmbGpuWorkspace *ws)
{
    enum { N = 256, D = 32, STEPS = 16 };
    EmbTable *h = NULL, *hf = NULL;
    emb_table_create(&h, N, D, EMB_BF16, NULL);
    emb_table_create(&hf, N, D, EMB_F32, NULL);
    float *v = malloc(N * D * 4);
    for (int i = 0; i < N * D; i++)
        v[i] = 1.0f;
    emb_table_assign(h, v, N, D, D);
    for (int i = 0; i < N * D; i++)
        v[i] = rndf();
    emb_table_assign(hf, v, N, D, D);
    EmbGpuTable *a = gpu_copy(h), *b = gpu_copy(h), *c = gpu_copy(h), *rne = gpu_copy(h);
    EmbGpuTable *f = gpu_copy(hf), *f_sr = gpu_copy(hf);
    CHECK(emb_gpu_table_set_seed(NULL, 1) == EMB_ENULL, "set_seed NULL");
    emb_gpu_table_set_seed(a, 7);
    emb_gpu_table_set_seed(b, 7);
    emb_gpu_table_set_seed(c, 8);
    emb_gpu_table_set_seed(f_sr, 7);
    int64_t ids[N];
    float dy[D];
    for (int i = 0; i < N; i++)
        ids[i] = i;
    for (int i = 0; i < D; i++)
        dy[i] = 1.0f / 1024;
    void *dids = to_dev(ids, sizeof ids), *ddy = to_dev(dy, sizeof dy);
    const EmbBatch bt = {dids, EMB_ID_I64, N, 1, N, NULL, NULL};
    const EmbOptimizerConfig sgd = emb_optimizer_defaults(EMB_OPT_SGD, 1.0f);
    const unsigned sr = EMB_GPU_STOCHASTIC_ROUNDING | EMB_GPU_DEFER_CHECK;
    for (int s = 0; s < STEPS; s++) {
        CHECK(emb_gpu_backward_update(a, &bt, NULL, ddy, D, &sgd, sr, ws, NULL) == 0, "sr a");
        CHECK(emb_gpu_backward_update(b, &bt, NULL, ddy, D, &sgd, sr, ws, NULL) == 0, "sr b");
        CHECK(emb_gpu_backward_update(c, &bt, NULL, ddy, D, &sgd, sr, ws, NULL) == 0, "sr c");
        CHECK(emb_gpu_backward_update(rne, &bt, NULL, ddy, D, &sgd, EMB_GPU_DEFER_CHECK, ws,
                                      NULL) == 0, "rne");
        if (s < 2) { /* f32 tables ignore the flag */
            CHECK(emb_gpu_backward_update(f, &bt, NULL, ddy, D, &sgd, 0, ws, NULL) == 0, "f32");
            CHECK(emb_gpu_backward_update(f_sr, &bt, NULL, ddy, D, &sgd, sr, ws, NULL) == 0,
                  "f32 sr");
        }
    }
    CHECK(emb_gpu_workspace_check(ws) == 0, "stochastic rounding calls");
    float *va = gpu_values(a), *vb = gpu_values(b), *vc = gpu_values(c), *vr = gpu_values(rne);
    float *vf = gpu_values(f), *vfs = gpu_values(f_sr);
    double mean = 0.0;
    int ones = 0, bad = 0;
    for (int i = 0; i < N * D; i++) {
        mean += va[i];
        ones += vr[i] == 1.0f;
        bad += !(va[i] >= 0.9f && va[i] <= 1.0f);
    }
    mean /= N * D;
    CHECK(ones == N * D, "round to nearest keeps 1.0: %d of %d", ones, N * D);
    CHECK(fabs(mean - (1.0 - STEPS / 1024.0)) < 1e-3, "stochastic rounding mean %.5f, expected "
          "%.5f", mean, 1.0 - STEPS / 1024.0);
    CHECK(bad == 0, "%d elements out of [0.9, 1]", bad);
    CHECK(memcmp(va, vb, N * D * 4) == 0, "stochastic rounding differs for the same seed");
    CHECK(memcmp(va, vc, N * D * 4) != 0, "stochastic rounding is the same for another seed");
    CHECK(memcmp(vf, vfs, N * D * 4) == 0, "an f32 table rounded stochastically");
    printf("stochastic rounding: mean %.5f after %d steps of -2^-10 (nearest: 1.0)\n", mean, STEPS);
    sr_cpu_case(ws, h, &bt, ddy, ids, dy, STEPS);
    free(va);
    free(vb);
    free(vc);
    free(vr);
    free(vf);
    free(vfs);
    free(v);
    cudaFree(dids);
    cudaFree(ddy);
    EmbGpuTable *all[] = {a, b, c, rne, f, f_sr};
    for (int i = 0; i < 6; i++)
        emb_gpu_table_destroy(&all[i]);
    emb_table_destroy(&h);
    emb_table_destroy(&hf);
}

/* ---- errors -------------------------------------------------------------------------- */

static void error_cases(EmbGpuWorkspace *ws)
{
    EmbTable *h = host_table(100, 8, EMB_F32);
    EmbGpuTable *g = gpu_copy(h);
    int64_t ids[16];
    for (int i = 0; i < 16; i++)
        ids[i] = i;
    ids[7] = 100;
    int64_t *dids = to_dev(ids, sizeof ids);
    float *out = NULL, back[16 * 8], *before = gpu_values(g);
    CUDA(cudaMalloc((void **)&out, sizeof back));
    CUDA(cudaMemset(out, 0xff, sizeof back));
    EmbBatch b = {dids, EMB_ID_I64, 16, 4, 4, NULL, NULL};
    const EmbOptimizerConfig sgd = emb_optimizer_defaults(EMB_OPT_SGD, 1.0f);
    int r = emb_gpu_lookup(g, &b, NULL, out, 8, 0, ws, NULL);
    CHECK(r == EMB_ERANGE && strstr(emb_gpu_last_error(), "id 100 at position 7"),
          "out-of-range id: %d", r);
    CUDA(cudaMemcpy(back, out, sizeof back, cudaMemcpyDeviceToHost));
    int written = 0;
    for (int i = 0; i < 16 * 8; i++)
        written += !isnan(back[i]);
    CHECK(written == 0, "failed lookup wrote %d elements", written);
    r = emb_gpu_backward_update(g, &b, NULL, out, 8, &sgd, 0, ws, NULL);
    CHECK(r == EMB_ERANGE, "backward out-of-range id: %d", r);
    float *after = gpu_values(g);
    CHECK(memcmp(before, after, 100 * 8 * 4) == 0, "failed backward changed the table");
    free(after);
    /* deferred: the call returns 0, the error is sticky (a good call after it writes
       nothing), the check reports the first error, the next call works */
    CHECK(emb_gpu_lookup(g, &b, NULL, out, 8, EMB_GPU_DEFER_CHECK, ws, NULL) == 0, "deferred");
    EmbBatch good = b;
    good.nnz = 4;
    good.nbags = 1;
    CHECK(emb_gpu_lookup(g, &good, NULL, out, 8, EMB_GPU_DEFER_CHECK, ws, NULL) == 0, "sticky");
    CHECK(emb_gpu_workspace_check(ws) == EMB_ERANGE &&
          strstr(emb_gpu_last_error(), "position 7"), "deferred error reported");
    CUDA(cudaMemcpy(back, out, sizeof back, cudaMemcpyDeviceToHost));
    written = 0;
    for (int i = 0; i < 16 * 8; i++)
        written += !isnan(back[i]);
    CHECK(written == 0, "a call after a held error wrote %d elements", written);
    CHECK(emb_gpu_workspace_check(ws) == 0, "error cleared");
    ids[7] = -3;
    CUDA(cudaMemcpy(dids, ids, sizeof ids, cudaMemcpyHostToDevice));
    CHECK(emb_gpu_lookup(g, &b, NULL, out, 8, 0, ws, NULL) == EMB_ERANGE, "negative id");
    EmbPooling prune = {EMB_COMBINER_SUM, 0.0f, 0, EMB_PRUNE_INVALID};
    CHECK(emb_gpu_lookup(g, &b, &prune, out, 8, 0, ws, NULL) == 0, "pruned negative id");
    prune.flags = EMB_USE_DEFAULT_ID;
    prune.default_id = 100;
    CHECK(emb_gpu_lookup(g, &b, &prune, out, 8, 0, ws, NULL) == EMB_ERANGE, "default_id");
    int64_t off[5] = {0, 4, 3, 12, 16};
    ids[7] = 7;
    CUDA(cudaMemcpy(dids, ids, sizeof ids, cudaMemcpyHostToDevice));
    int64_t *doff = to_dev(off, sizeof off);
    EmbBatch rb = {dids, EMB_ID_I64, 16, 4, 0, doff, NULL};
    CHECK(emb_gpu_lookup(g, &rb, NULL, out, 8, 0, ws, NULL) == EMB_EOFFSETS, "offsets not monotone");
    off[2] = 8;
    off[0] = 1;
    CUDA(cudaMemcpy(doff, off, sizeof off, cudaMemcpyHostToDevice));
    CHECK(emb_gpu_lookup(g, &rb, NULL, out, 8, 0, ws, NULL) == EMB_EOFFSETS, "offsets[0] != 0");
    off[0] = 0;
    CUDA(cudaMemcpy(doff, off, sizeof off, cudaMemcpyHostToDevice));
    CHECK(emb_gpu_lookup(g, &rb, NULL, out, 8, 0, ws, NULL) == 0, "good offsets");
    CHECK(emb_gpu_lookup(g, &rb, NULL, out, 7, 0, ws, NULL) == EMB_ESTRIDE, "stride");
    b.nnz = 15;
    CHECK(emb_gpu_lookup(g, &b, NULL, out, 8, 0, ws, NULL) == EMB_ESHAPE, "nnz != nbags x bag");
    b.nnz = 0;
    b.nbags = 0;
    CHECK(emb_gpu_lookup(g, &b, NULL, out, 8, 0, ws, NULL) == 0, "empty batch");
    CHECK(emb_gpu_backward_update(g, &b, NULL, out, 8, &sgd, 0, ws, NULL) == 0, "empty backward");
    /* the CPU library's optimizer configuration and checks */
    b.nnz = 4;
    b.nbags = 1;
    ids[7] = 7;
    CUDA(cudaMemcpy(dids, ids, sizeof ids, cudaMemcpyHostToDevice));
    /* unknown bits of the pooling flags and of the call's flags: EMB_EINVAL, nothing written */
    CUDA(cudaMemset(out, 0xff, sizeof back));
    EmbPooling badp = {EMB_COMBINER_SUM, 0.0f, 0, 1u << 4};
    CHECK(emb_gpu_lookup(g, &b, &badp, out, 8, 0, ws, NULL) == EMB_EINVAL &&
          strstr(emb_gpu_last_error(), "pooling flags 0x10"), "unknown pooling flag bits");
    CHECK(emb_gpu_backward_update(g, &b, &badp, out, 8, &sgd, 0, ws, NULL) == EMB_EINVAL,
          "backward: unknown pooling flag bits");
    CHECK(emb_gpu_lookup(g, &b, NULL, out, 8, 1u << 5, ws, NULL) == EMB_EINVAL &&
          strstr(emb_gpu_last_error(), "flags 0x20"), "lookup: unknown flag bits");
    /* MAX pooling has no GPU kernel: EMB_ENOTSUP, forward and backward */
    const EmbPooling maxp = EMB_POOLING_MAX;
    CHECK(emb_gpu_lookup(g, &b, &maxp, out, 8, 0, ws, NULL) == EMB_ENOTSUP &&
          strstr(emb_gpu_last_error(), "MAX"), "lookup: MAX pooling");
    CHECK(emb_gpu_backward_update(g, &b, &maxp, out, 8, &sgd, 0, ws, NULL) == EMB_ENOTSUP,
          "backward: MAX pooling");
    EmbGpuTable *const one[1] = {g};
    float *const per[1] = {out};
    const EmbOutputs po = {per, NULL, NULL, 0, 0};
    CHECK(emb_gpu_maplookup(one, 1, &b, NULL, &po, 1u << 31, ws, NULL) == EMB_EINVAL,
          "maplookup: unknown flag bits");
    CHECK(emb_gpu_backward_update(g, &b, NULL, out, 8, &sgd, 1u << 2, ws, NULL) == EMB_EINVAL,
          "backward: unknown flag bits");
    CUDA(cudaMemcpy(back, out, sizeof back, cudaMemcpyDeviceToHost));
    written = 0;
    for (int i = 0; i < 16 * 8; i++)
        written += !isnan(back[i]);
    CHECK(written == 0, "a call with unknown flags wrote %d elements", written);
    EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    CHECK(emb_gpu_backward_update(g, &b, NULL, out, 8, &oc, 0, ws, NULL) == EMB_ENOTSUP,
          "Adagrad is not on the GPU");
    oc = emb_optimizer_defaults(EMB_OPT_FTRL, 0.1f);
    CHECK(emb_gpu_backward_update(g, &b, NULL, out, 8, &oc, 0, ws, NULL) == EMB_ENOTSUP, "FTRL");
    oc = emb_optimizer_defaults(EMB_OPT_ROWWISE_ADAGRAD, 0.0f);
    CHECK(emb_gpu_backward_update(g, &b, NULL, out, 8, &oc, 0, ws, NULL) == EMB_EINVAL &&
          strstr(emb_gpu_last_error(), "lr"), "lr 0");
    oc = emb_optimizer_defaults(EMB_OPT_ADAM, 0.1f);
    oc.beta2 = 1.0f;
    CHECK(emb_gpu_backward_update(g, &b, NULL, out, 8, &oc, 0, ws, NULL) == EMB_EINVAL, "beta2 1");
    oc = emb_optimizer_defaults(EMB_OPT_ADAM, 0.1f);
    CHECK(emb_gpu_backward_update(g, &b, NULL, out, 8, &oc, 0, ws, NULL) == EMB_EINVAL,
          "a table holding SGD state takes no Adam step");
    float *unchanged = gpu_values(g);
    CHECK(memcmp(before, unchanged, 100 * 8 * 4) == 0, "a rejected optimizer changed the table");
    free(unchanged);
    printf("errors: checked\n");
    cudaFree(doff);
    cudaFree(dids);
    cudaFree(out);
    free(before);
    emb_gpu_table_destroy(&g);
    emb_table_destroy(&h);
}

/* Upload from and download to a custom (callback) table: the staged path. */
static float custom_store[50 * 6];
static void *custom_col(void *user, int64_t column, EmbContext ctx)
{
    (void)user;
    (void)ctx;
    return custom_store + column * 6;
}

static void transfer_case(void)
{
    for (int i = 0; i < 50 * 6; i++)
        custom_store[i] = rndf();
    EmbTable *c = NULL, *h = NULL;
    CHECK(emb_table_custom(&c, 50, 6, EMB_F32, custom_col, NULL, NULL, NULL) == 0, "custom");
    EmbGpuTable *g = gpu_copy(c);
    emb_table_create(&h, 50, 6, EMB_F32, NULL);
    CHECK(emb_gpu_table_download(g, h, NULL) == 0, "download");
    int64_t st = 0;
    const float *d = emb_table_data(h, &st);
    int bad = 0;
    for (int i = 0; i < 50; i++)
        bad += memcmp(d + i * st, custom_store + i * 6, 6 * 4) != 0;
    CHECK(bad == 0, "custom table round trip: %d columns differ", bad);
    memset(custom_store, 0, sizeof custom_store);
    CHECK(emb_gpu_table_download(g, c, NULL) == 0, "download to custom");
    bad = 0;
    for (int i = 0; i < 50; i++)
        bad += memcmp(d + i * st, custom_store + i * 6, 6 * 4) != 0;
    CHECK(bad == 0, "download into a custom table: %d columns differ", bad);
    EmbTable *wrong = NULL;
    emb_table_create(&wrong, 50, 7, EMB_F32, NULL);
    CHECK(emb_gpu_table_upload(g, wrong, NULL) == EMB_ESHAPE, "shape mismatch");
    emb_table_destroy(&wrong);
    emb_table_destroy(&h);
    emb_table_destroy(&c);
    emb_gpu_table_destroy(&g);
    printf("transfer: checked\n");
}

static void run_gpu_cases(void)
{
    EmbGpuWorkspace *ws = NULL;
    if (emb_gpu_workspace_create(&ws)) {
        CHECK(0, "workspace");
        return;
    }
    error_cases(ws);
    transfer_case();
    lookup_cases(ws);
    maplookup_case(ws);
    backward_cases(ws);
    sr_case(ws);
    emb_gpu_workspace_destroy(&ws);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *env = getenv("EMB_TEST_SEED");
    seed_state = env ? strtoull(env, NULL, 0) : 0x5eed0001ull;
    printf("seed %llu (EMB_TEST_SEED replays)\n", (unsigned long long)seed_state);
    for (int i = 1; i < argc; i++)
        quick |= !strcmp(argv[i], "--quick");
    if (argc > 1 && !strcmp(argv[1], "--host"))
        return host_checks();
    int n = 0;
    if (emb_gpu_device_count(&n) != 0) {
        printf("SKIP: %s\n", emb_gpu_last_error());
        return 77;
    }
    if (host_checks())
        return 1;
    run_gpu_cases();
    printf("gpu checks: %s (%d failures)\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
