/*
 * test_gpu.c — the CUDA back end against the CPU library on seeded random inputs.
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
 * (a rounding that falls the other way can carry into the next step) of the
 * double-precision host reference (gpu_reference.c).
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

#include "gpu_reference.h"

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
    const EmbGpuOptimizer sgd = {EMB_GPU_SGD, 0.1f, 0, 0, 0};
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
    for (int64_t c = 0; c < ncol; c++) {
        void *col = NULL;
        emb_table_column_pointer(t, c, EMB_CTX_NONE, &col);
        for (int32_t i = 0; i < D; i++)
            ref_store(dt, col, i, rndf());
    }
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
    for (int64_t c = 0; c < n; c++) {
        void *col = NULL;
        emb_table_column_pointer(t, c, EMB_CTX_NONE, &col);
        for (int32_t i = 0; i < D; i++)
            v[c * D + i] = ref_load(emb_table_dtype(t), col, i);
    }
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

static void check_backward(const Case *c, EmbGpuOptKind kind, EmbGpuWorkspace *ws)
{
    EmbTable *h = host_table(NCOL, c->D, c->dt);
    EmbGpuTable *g = gpu_copy(h), *g2 = gpu_copy(h);
    const EmbGpuOptimizer opt = {kind, kind == EMB_GPU_SGD ? 0.5f : 0.05f, 0, 0, 0};
    RefState st;
    ref_state_init(&st, NCOL, c->D);
    const EmbPooling p = pooling_of(c);
    for (int step = 0; step < 3; step++) {
        HBatch hb;
        make_batch(&hb, c, 300, 8);
        const int64_t ds = c->D + 1, n = hb.h.nbags * ds;
        float *dy = malloc((size_t)(n ? n : 1) * 4);
        for (int64_t i = 0; i < n; i++)
            dy[i] = rndf();
        float *ddy = to_dev(dy, (size_t)n * 4);
        CHECK(ref_backward_update(h, &hb.h, &p, dy, ds, &opt, &st) == 0, "reference");
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
    CHECK(bad == 0, "backward %s D=%d opt=%d comb=%d max_norm=%g: %lld elements differ",
          emb_dtype_name(c->dt), c->D, (int)kind, c->comb, (double)c->max_norm, (long long)bad);
    CHECK(memcmp(got, got2, (size_t)NCOL * c->D * 4) == 0, "backward not deterministic");
    free(ref);
    free(got);
    free(got2);
    ref_state_free(&st);
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
    for (int kind = 0; kind <= 2; kind++)
        for (int di = 0; di < 3; di++)
            for (int k = 0; k < nd; k++) {
                Case c = {dts[di], dims[k], (EmbCombiner)(1 + (k % 3)), k & 1, (k >> 1) & 1,
                          k == 4, 0.0f, 0};
                check_backward(&c, (EmbGpuOptKind)kind, ws);
                c = (Case){dts[di], dims[k], EMB_COMBINER_MEAN, 1, 1, 0, 0.8f,
                           EMB_PRUNE_INVALID | EMB_PRUNE_NONPOSITIVE_WEIGHTS | EMB_USE_DEFAULT_ID};
                check_backward(&c, (EmbGpuOptKind)kind, ws);
                count += 2;
            }
    printf("backward: %d cases (3 steps each)\n", count);
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
    const EmbGpuOptimizer sgd = {EMB_GPU_SGD, 1.0f, 0, 0, 0};
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
