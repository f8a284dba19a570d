/*
 * gpu_bench.c — the GPU back end's throughput on one device, against the device-to-device
 * copy bandwidth measured in the same run (bytes read + written), and (through
 * perf/gpu_peer_torch.py, reading the ids this program writes) against PyTorch.
 *
 *   gpu_bench [--tiny] [--rows N] [--dim D] [--bags B] [--bag L] [--dtype f32|f16|bf16]
 *             [--ids FILE] [--iters N]
 *
 * Bytes counted: forward = nnz·D·elsize (row reads) + nbags·D·4 (output) + nnz·8 (ids);
 * backward + SGD = nbags·D·4 (dy) + nnz·8 (ids) + 2·unique·D·elsize (each distinct row
 * read and written once). Times are medians of --iters runs timed with CUDA events, after
 * a warm-up. Exits 77 without a GPU (the tiny run is a meson test).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <embtables/embtables.h>
#include <embtables/gpu.h>

#include "gpu_check.h"

#define EMB(call)                                                                          \
    do {                                                                                   \
        int r_ = (call);                                                                   \
        if (r_) {                                                                          \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                  \
                    emb_gpu_last_error());                                                 \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

typedef struct Opts {
    int64_t rows, bags, bag;
    int32_t dim;
    EmbDtype dtype;
    int iters;
    const char *ids_file;
} Opts;

static uint64_t state = 0x6b656e63ull;
static uint64_t rnd(void)
{
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int cmp_f(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

typedef void (*work_fn)(void *ctx);

/* Median milliseconds of fn over iters runs (one warm-up first). */
static float time_ms(work_fn fn, void *ctx, int iters)
{
    cudaEvent_t a, b;
    float t[64];
    CUDA(cudaEventCreate(&a));
    CUDA(cudaEventCreate(&b));
    fn(ctx);
    CUDA(cudaDeviceSynchronize());
    iters = iters > 64 ? 64 : iters;
    for (int i = 0; i < iters; i++) {
        CUDA(cudaEventRecord(a, NULL));
        fn(ctx);
        CUDA(cudaEventRecord(b, NULL));
        CUDA(cudaEventSynchronize(b));
        CUDA(cudaEventElapsedTime(&t[i], a, b));
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    qsort(t, (size_t)iters, sizeof *t, cmp_f);
    return t[iters / 2];
}

typedef struct Ctx {
    EmbGpuTable *table;
    EmbGpuWorkspace *ws;
    EmbBatch batch;
    float *out, *dy;
    int32_t dim;
    void *src, *dst;
    size_t copy_bytes;
    unsigned flags;
} Ctx;

static void copy_fn(void *p)
{
    Ctx *c = p;
    CUDA(cudaMemcpyAsync(c->dst, c->src, c->copy_bytes, cudaMemcpyDeviceToDevice, NULL));
}

static void fwd_fn(void *p)
{
    Ctx *c = p;
    EMB(emb_gpu_lookup(c->table, &c->batch, NULL, c->out, c->dim, c->flags, c->ws, NULL));
}

static void bwd_fn(void *p)
{
    Ctx *c = p;
    const EmbGpuOptimizer sgd = {EMB_GPU_SGD, 1e-3f, 0, 0, 0};
    EMB(emb_gpu_backward_update(c->table, &c->batch, NULL, c->dy, c->dim, &sgd, c->flags,
                                c->ws, NULL));
}

static void parse(int argc, char **argv, Opts *o)
{
    *o = (Opts){1 << 23, 16384, 64, 128, EMB_F32, 20, NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(a, "--tiny")) {
            o->rows = 1 << 16;
            o->bags = 512;
            o->bag = 8;
            o->iters = 1;
            continue;
        }
        i++;
        if (!strcmp(a, "--rows")) o->rows = atoll(v);
        else if (!strcmp(a, "--dim")) o->dim = atoi(v);
        else if (!strcmp(a, "--bags")) o->bags = atoll(v);
        else if (!strcmp(a, "--bag")) o->bag = atoll(v);
        else if (!strcmp(a, "--iters")) o->iters = atoi(v);
        else if (!strcmp(a, "--ids")) o->ids_file = v;
        else if (!strcmp(a, "--dtype"))
            o->dtype = !strcmp(v, "f16") ? EMB_F16 : !strcmp(v, "bf16") ? EMB_BF16 : EMB_F32;
        else {
            fprintf(stderr, "unknown option %s\n", a);
            exit(2);
        }
    }
}

/* Uniform random ids; returns how many distinct ones. */
static int64_t make_ids(int64_t *ids, int64_t nnz, int64_t rows)
{
    unsigned char *seen = calloc((size_t)rows, 1);
    int64_t unique = 0;
    for (int64_t k = 0; k < nnz; k++) {
        ids[k] = (int64_t)(rnd() % (uint64_t)rows);
        unique += !seen[ids[k]];
        seen[ids[k]] = 1;
    }
    free(seen);
    return unique;
}

int main(int argc, char **argv)
{
    Opts o;
    parse(argc, argv, &o);
    int ndev = 0;
    if (emb_gpu_device_count(&ndev)) {
        printf("SKIP: %s\n", emb_gpu_last_error());
        return 77;
    }
    const int64_t nnz = o.bags * o.bag;
    const double el = (double)emb_dtype_size(o.dtype), D = o.dim;
    int64_t *ids = malloc((size_t)nnz * 8);
    const int64_t unique = make_ids(ids, nnz, o.rows);
    if (o.ids_file) {
        FILE *f = fopen(o.ids_file, "wb");
        if (!f || fwrite(ids, 8, (size_t)nnz, f) != (size_t)nnz) {
            fprintf(stderr, "cannot write %s\n", o.ids_file);
            return 1;
        }
        fclose(f);
    }
    Ctx c = {0};
    c.dim = o.dim;
    c.flags = EMB_GPU_DEFER_CHECK;
    EMB(emb_gpu_table_create(&c.table, o.rows, o.dim, o.dtype, "bench", NULL));
    EMB(emb_gpu_workspace_create(&c.ws));
    void *dids = NULL;
    CUDA(cudaMalloc(&dids, (size_t)nnz * 8));
    CUDA(cudaMemcpy(dids, ids, (size_t)nnz * 8, cudaMemcpyHostToDevice));
    c.batch = (EmbBatch){dids, EMB_ID_I64, nnz, o.bags, o.bag, NULL, NULL};
    CUDA(cudaMalloc((void **)&c.out, (size_t)(o.bags * o.dim) * 4));
    CUDA(cudaMalloc((void **)&c.dy, (size_t)(o.bags * o.dim) * 4));
    CUDA(cudaMemset(c.dy, 0x3c, (size_t)(o.bags * o.dim) * 4)); /* ~0.01, not zeros */
    /* table contents: small non-zero values (timing on zeros is not representative) */
    int64_t stride = 0;
    void *data = emb_gpu_table_data(c.table, &stride);
    CUDA(cudaMemset(data, 0x3c, (size_t)o.rows * (size_t)stride * (size_t)el));

    c.copy_bytes = (size_t)(o.rows * stride * el) / 2;
    c.copy_bytes = c.copy_bytes > ((size_t)1 << 30) ? (size_t)1 << 30 : c.copy_bytes;
    CUDA(cudaMalloc(&c.src, c.copy_bytes));
    CUDA(cudaMalloc(&c.dst, c.copy_bytes));
    CUDA(cudaMemset(c.src, 1, c.copy_bytes));
    const float t_copy = time_ms(copy_fn, &c, o.iters);
    const double copy_gbs = 2.0 * (double)c.copy_bytes / (t_copy * 1e6);

    const double fwd_bytes = nnz * D * el + o.bags * D * 4 + nnz * 8.0;
    const double bwd_bytes = o.bags * D * 4 + nnz * 8.0 + 2.0 * unique * D * el;
    const float t_fwd = time_ms(fwd_fn, &c, o.iters);
    const float t_bwd = time_ms(bwd_fn, &c, o.iters);
    EMB(emb_gpu_workspace_check(c.ws));
    c.flags = 0;
    const float t_fwd_sync = time_ms(fwd_fn, &c, o.iters);
    const float t_bwd_sync = time_ms(bwd_fn, &c, o.iters);

    printf("table %lld x %d %s (%.2f GiB), %lld bags x %lld ids, %lld distinct\n",
           (long long)o.rows, o.dim, emb_dtype_name(o.dtype),
           (double)o.rows * stride * el / (1 << 30), (long long)o.bags, (long long)o.bag,
           (long long)unique);
    printf("RESULT copy_gbs=%.1f fwd_ms=%.4f fwd_gbs=%.1f fwd_sync_ms=%.4f bwd_ms=%.4f "
           "bwd_gbs=%.1f bwd_sync_ms=%.4f fwd_bytes=%.0f bwd_bytes=%.0f\n",
           copy_gbs, t_fwd, fwd_bytes / (t_fwd * 1e6), t_fwd_sync, t_bwd,
           bwd_bytes / (t_bwd * 1e6), t_bwd_sync, fwd_bytes, bwd_bytes);
    printf("forward %.1f%% and backward+SGD %.1f%% of copy bandwidth (goals 80%%, 40%%)\n",
           100.0 * fwd_bytes / (t_fwd * 1e6) / copy_gbs, 100.0 * bwd_bytes / (t_bwd * 1e6) / copy_gbs);
    cudaFree(c.src);
    cudaFree(c.dst);
    cudaFree(dids);
    cudaFree(c.out);
    cudaFree(c.dy);
    emb_gpu_workspace_destroy(&c.ws);
    emb_gpu_table_destroy(&c.table);
    free(ids);
    return 0;
}
