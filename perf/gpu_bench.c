/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gpu_bench.c — the GPU back end's throughput on one device, against the device-to-device
 * copy bandwidth measured in the same run (bytes read + written), and (through
 * perf/gpu_peer_torch.py, reading the ids this program exports) against PyTorch.
 *
 *   gpu_bench [--tiny] [--rows N] [--dim D] [--nbags B] [--bag L] [--dtype f32|f16|bf16]
 *             [--opts sgd,rowwise,adam] [--iters N] [--reps R] [--export DIR]
 *       one table, fixed bags of uniform ids: forward, and backward fused with each
 *       optimizer (state bytes counted);
 *   gpu_bench --tables criteo[:MiB[:D[:dtype]]] [--batch N] [--bags 1,20] [--ids zipf:1.05]
 *             [--seed N] [--iters N] [--reps R] [--export DIR] [--csv FILE]
 *       emb-bench's ensemble (the same configuration parser, the same ids): every table
 *       looked up in one emb_gpu_maplookup launch into the concat output, then the backward
 *       + SGD of every table. Steady state, as emb-bench's stream: every call gets its own
 *       step's ids (step k drawn from its own seed by perf/bench_ids.c, the same ids as
 *       emb-bench's k-th step), all of a variant's 1 + R x N steps drawn and copied to the
 *       device before any timing (a pool in which no step repeats within the run; the
 *       host cannot draw between back-to-back calls). --export writes the first
 *       BENCH_NSETS steps for the torch peer, which rotates them. --csv FILE: the rows
 *       (forward; backward + SGD as update:sgd) in emb-bench's CSV columns and record
 *       (strategy "gpu", threads 0), for `emb-bench compare`.
 *
 * Timing: a warm-up call first (never timed), then R repetitions of CUDA events around N
 * back-to-back calls (EMB_GPU_DEFER_CHECK, no host wait inside); the time per call of each
 * repetition, their median and range are printed. The first lines name the GPU, its clocks,
 * the driver and the runtime. Bytes counted: forward = Σ nnz·D·elsize (rows) + nbags·ΣD·4
 * (output) + nnz·8 (ids); backward = dy + ids + 2·distinct·D·elsize (each distinct row read
 * and written once) + the optimizer state read and written (row-wise Adagrad 4 B per
 * distinct row, Adam 2·D·4 B). Exits 77 without a GPU (the tiny runs are meson tests).
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <embtables/embtables.h>
#include <embtables/gpu.h>

#include "emb_bench.h"
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

#define MAX_REPS 64

typedef struct Opts {
    int64_t rows, bags, bag;
    int32_t dim;
    EmbDtype dtype;
    int iters, reps;
    unsigned opts; /* bit k: optimizer kind k */
    const char *export_dir;
    const char *csv;   /* --csv FILE: the ensemble's rows in emb-bench's columns */
    char cmdline[1024]; /* for the CSV's record */
    int nbench;    /* ensemble options for emb-bench's parser */
    const char *bench_argv[32];
} Opts;

/* ---- timing -------------------------------------------------------------------------- */

typedef void (*work_fn)(void *ctx, int iter);

typedef struct Timing {
    double med, lo, hi; /* ms per call */
    double spread;      /* the median's 95% interval / median (1.57 IQR / sqrt(n)), as emb-bench */
    int n;              /* repetitions */
} Timing;

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One untimed warm-up call, then reps x (events around iters calls). */
static Timing time_calls(work_fn fn, void *ctx, int iters, int reps)
{
    cudaEvent_t a, b;
    double t[MAX_REPS];
    CUDA(cudaEventCreate(&a));
    CUDA(cudaEventCreate(&b));
    fn(ctx, 0);
    CUDA(cudaDeviceSynchronize());
    reps = reps > MAX_REPS ? MAX_REPS : reps;
    for (int r = 0; r < reps; r++) {
        CUDA(cudaEventRecord(a, NULL));
        for (int i = 0; i < iters; i++)
            fn(ctx, r * iters + i + 1);
        CUDA(cudaEventRecord(b, NULL));
        CUDA(cudaEventSynchronize(b));
        float ms = 0;
        CUDA(cudaEventElapsedTime(&ms, a, b));
        t[r] = ms / iters;
    }
    CUDA(cudaGetLastError());
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    qsort(t, (size_t)reps, sizeof *t, cmp_d);
    const double iqr = t[(3 * reps) / 4 < reps ? (3 * reps) / 4 : reps - 1] - t[reps / 4];
    return (Timing){t[reps / 2], t[0], t[reps - 1], 1.57 * iqr / sqrt((double)reps) / t[reps / 2],
                    reps};
}

static void print_timing(const char *what, Timing t, double bytes, double copy_gbs)
{
    const double gbs = bytes / (t.med * 1e6);
    printf("%-28s %9.4f ms  [%.4f .. %.4f]  %8.1f GB/s  %5.1f%% of copy\n", what, t.med, t.lo,
           t.hi, gbs, 100.0 * gbs / copy_gbs);
}

/* ---- the device, and the copy bandwidth ----------------------------------------------- */

static void print_device(void)
{
    int dev = 0, sms = 0, clk = 0, mclk = 0, l2 = 0, drv = 0, rt = 0;
    struct cudaDeviceProp p;
    CUDA(cudaGetDevice(&dev));
    CUDA(cudaGetDeviceProperties(&p, dev));
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, dev);
    cudaDeviceGetAttribute(&mclk, cudaDevAttrMemoryClockRate, dev);
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    (void)cudaGetLastError();
    printf("GPU %s: %d SMs, L2 %d MiB, peak SM clock %d MHz, memory clock %d MHz, CUDA "
           "driver API %d, runtime %d\n", p.name, sms, l2 >> 20, clk / 1000, mclk / 1000,
           drv, rt);
    /* the clocks now and the driver's version, as the driver reports them */
    FILE *f = popen("nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm,clocks.mem,"
                    "power.draw,temperature.gpu --format=csv,noheader 2>/dev/null", "r");
    char line[256];
    if (f && fgets(line, sizeof line, f))
        printf("nvidia-smi: driver, SM clock, max SM clock, memory clock, power, temp: %s", line);
    if (f)
        pclose(f);
}

typedef struct CopyCtx {
    void *src, *dst;
    size_t bytes;
} CopyCtx;

static void copy_fn(void *p, int iter)
{
    (void)iter;
    const CopyCtx *c = p;
    CUDA(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, NULL));
}

/* Device-to-device copy of @bytes (capped at 1 GiB): GB/s of bytes read + written. */
static double copy_bandwidth(size_t bytes, int iters, int reps)
{
    CopyCtx c = {NULL, NULL, bytes > ((size_t)1 << 30) ? (size_t)1 << 30 : bytes};
    CUDA(cudaMalloc(&c.src, c.bytes));
    CUDA(cudaMalloc(&c.dst, c.bytes));
    CUDA(cudaMemset(c.src, 1, c.bytes));
    const Timing t = time_calls(copy_fn, &c, iters, reps);
    const double gbs = 2.0 * (double)c.bytes / (t.med * 1e6);
    printf("%-28s %9.4f ms  [%.4f .. %.4f]  %8.1f GB/s  (%zu MiB, read + written)\n",
           "device-to-device copy", t.med, t.lo, t.hi, gbs, c.bytes >> 20);
    printf("COPY gbs=%.1f\n", gbs);
    cudaFree(c.src);
    cudaFree(c.dst);
    return gbs;
}

/* ---- tables -------------------------------------------------------------------------- */

static uint64_t rnd_state = 0x6b656e63ull;

/* A device table of small random values (never zeros: they time differently). */
static EmbGpuTable *make_table(int64_t rows, int32_t dim, EmbDtype dt, const char *name)
{
    EmbGpuTable *t = NULL;
    EMB(emb_gpu_table_create(&t, rows, dim, dt, name, NULL));
    int64_t stride = 0;
    char *data = emb_gpu_table_data(t, &stride);
    const size_t total = (size_t)rows * (size_t)stride * emb_dtype_size(dt);
    const size_t chunk = total < ((size_t)64 << 20) ? total : (size_t)64 << 20;
    uint16_t *h = malloc(chunk ? chunk : 2);
    for (size_t i = 0; i < chunk / 2; i++) /* halves of f32 / f16 / bf16 around 0.01 */
        h[i] = (uint16_t)((dt == EMB_F16 ? 0x2000 : 0x3c00) | (bench_splitmix(&rnd_state) & 0x3f));
    for (size_t at = 0; at < total; at += chunk)
        CUDA(cudaMemcpy(data + at, h, total - at < chunk ? total - at : chunk,
                        cudaMemcpyHostToDevice));
    free(h);
    return t;
}

static float *device_floats(size_t n, float value)
{
    float *d = NULL, *h = malloc((n ? n : 1) * 4);
    for (size_t i = 0; i < n; i++)
        h[i] = value * (float)(1 + (int)(i % 7)) / 4;
    CUDA(cudaMalloc((void **)&d, (n ? n : 1) * 4));
    CUDA(cudaMemcpy(d, h, n * 4, cudaMemcpyHostToDevice));
    free(h);
    return d;
}

static void *to_device(const void *h, size_t bytes)
{
    void *d = NULL;
    CUDA(cudaMalloc(&d, bytes ? bytes : 8));
    if (bytes)
        CUDA(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

static const char *opt_name(EmbOptimizerKind k)
{
    return k == EMB_OPT_SGD ? "sgd" : k == EMB_OPT_ROWWISE_ADAGRAD ? "rowwise" : "adam";
}

/* Optimizer state bytes read + written per distinct row. */
static double state_bytes(EmbOptimizerKind k, int32_t dim)
{
    return k == EMB_OPT_ROWWISE_ADAGRAD ? 8.0 : k == EMB_OPT_ADAM ? 16.0 * dim : 0.0;
}

static int write_file(const char *dir, const char *name, const void *p, size_t bytes)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    const int ok = f && fwrite(p, 1, bytes, f) == bytes;
    if (f)
        fclose(f);
    if (!ok)
        fprintf(stderr, "gpu_bench: cannot write %s\n", path);
    return ok ? 0 : -1;
}

/* ---- one table ----------------------------------------------------------------------- */

typedef struct OneCtx {
    EmbGpuTable *table;
    EmbGpuWorkspace *ws;
    EmbBatch batch;
    float *out, *dy;
    int32_t dim;
    unsigned flags;
    EmbOptimizerConfig opt;
} OneCtx;

static void one_fwd(void *p, int iter)
{
    (void)iter;
    OneCtx *c = p;
    EMB(emb_gpu_lookup(c->table, &c->batch, NULL, c->out, c->dim, c->flags, c->ws, NULL));
}

static void one_bwd(void *p, int iter)
{
    (void)iter;
    OneCtx *c = p;
    EMB(emb_gpu_backward_update(c->table, &c->batch, NULL, c->dy, c->dim, &c->opt, c->flags,
                                c->ws, NULL));
}

static int run_one(const Opts *o)
{
    const int64_t nnz = o->bags * o->bag;
    const double el = (double)emb_dtype_size(o->dtype), D = o->dim;
    int64_t *ids = malloc((size_t)nnz * 8);
    unsigned char *seen = calloc((size_t)o->rows, 1);
    int64_t unique = 0;
    for (int64_t k = 0; k < nnz; k++) { /* uniform ids */
        ids[k] = (int64_t)(bench_splitmix(&rnd_state) % (uint64_t)o->rows);
        unique += !seen[ids[k]];
        seen[ids[k]] = 1;
    }
    free(seen);
    if (o->export_dir && write_file(o->export_dir, "ids.bin", ids, (size_t)nnz * 8))
        return 1;
    OneCtx c = {0};
    c.dim = o->dim;
    c.flags = EMB_GPU_DEFER_CHECK;
    EMB(emb_gpu_workspace_create(&c.ws));
    c.batch = (EmbBatch){to_device(ids, (size_t)nnz * 8), EMB_ID_I64, nnz, o->bags, o->bag,
                         NULL, NULL};
    CUDA(cudaMalloc((void **)&c.out, (size_t)(o->bags * o->dim) * 4));
    c.dy = device_floats((size_t)(o->bags * o->dim), 0.01f);
    c.table = make_table(o->rows, o->dim, o->dtype, "bench");
    int64_t stride = 0;
    emb_gpu_table_data(c.table, &stride);
    printf("table %lld x %d %s (%.2f GiB), %lld bags x %lld ids, %lld distinct\n",
           (long long)o->rows, o->dim, emb_dtype_name(o->dtype),
           (double)o->rows * stride * el / (1 << 30), (long long)o->bags, (long long)o->bag,
           (long long)unique);
    const double copy_gbs = copy_bandwidth((size_t)(o->rows * stride * el) / 2, o->iters, o->reps);

    const double fwd_bytes = nnz * D * el + o->bags * D * 4 + nnz * 8.0;
    const double bwd_bytes = o->bags * D * 4 + nnz * 8.0 + 2.0 * unique * D * el;
    const Timing fwd = time_calls(one_fwd, &c, o->iters, o->reps);
    print_timing("forward", fwd, fwd_bytes, copy_gbs);
    c.flags = 0;
    const Timing fwd_sync = time_calls(one_fwd, &c, o->iters, o->reps);
    print_timing("forward, waiting each call", fwd_sync, fwd_bytes, copy_gbs);
    c.flags = EMB_GPU_DEFER_CHECK;
    Timing bwd[3] = {{0}};
    for (int k = 0; k < 5; k++) {
        if (!(o->opts >> k & 1))
            continue;
        const int i = k == EMB_OPT_SGD ? 0 : k == EMB_OPT_ROWWISE_ADAGRAD ? 1 : 2;
        if (k != EMB_OPT_SGD) { /* a table keeps one optimizer's state: a fresh one */
            emb_gpu_table_destroy(&c.table);
            c.table = make_table(o->rows, o->dim, o->dtype, "bench");
        }
        c.opt = emb_optimizer_defaults((EmbOptimizerKind)k, 1e-3f);
        bwd[i] = time_calls(one_bwd, &c, o->iters, o->reps);
        char what[64];
        snprintf(what, sizeof what, "backward + %s", opt_name((EmbOptimizerKind)k));
        print_timing(what, bwd[i], bwd_bytes + unique * state_bytes((EmbOptimizerKind)k, o->dim),
                     copy_gbs);
        printf("BWD opt=%s ms=%.4f gbs=%.1f\n", opt_name((EmbOptimizerKind)k), bwd[i].med,
               (bwd_bytes + unique * state_bytes((EmbOptimizerKind)k, o->dim)) / (bwd[i].med * 1e6));
    }
    EMB(emb_gpu_workspace_check(c.ws));
    printf("RESULT copy_gbs=%.1f fwd_ms=%.4f fwd_gbs=%.1f fwd_sync_ms=%.4f bwd_ms=%.4f "
           "bwd_gbs=%.1f fwd_bytes=%.0f bwd_bytes=%.0f\n", copy_gbs, fwd.med,
           fwd_bytes / (fwd.med * 1e6), fwd_sync.med, bwd[0].med,
           bwd[0].med > 0 ? bwd_bytes / (bwd[0].med * 1e6) : 0.0, fwd_bytes, bwd_bytes);
    cudaFree((void *)c.batch.ids);
    cudaFree(c.out);
    cudaFree(c.dy);
    emb_gpu_workspace_destroy(&c.ws);
    emb_gpu_table_destroy(&c.table);
    free(ids);
    return 0;
}

/* ---- the Criteo ensemble ------------------------------------------------------------- */

typedef struct EnsCtx {
    int n;
    EmbGpuTable **tables;
    EmbGpuWorkspace *ws;
    int nsteps;                        /* steps of the pool: every call its own */
    EmbBatch *batches;                 /* [table * nsteps + step]: device views of one variant */
    EmbBatch *cur;                     /* n batches of the set in use */
    float *out, *dy;
    int64_t width;
    EmbOptimizerConfig opt;
} EnsCtx;

static void use_set(EnsCtx *c, int iter)
{
    for (int t = 0; t < c->n; t++)
        c->cur[t] = c->batches[(size_t)t * (size_t)c->nsteps + (size_t)(iter % c->nsteps)];
}

static void ens_fwd(void *p, int iter)
{
    EnsCtx *c = p;
    use_set(c, iter);
    const EmbOutputs o = {NULL, NULL, c->out, c->width, 0};
    EMB(emb_gpu_maplookup(c->tables, c->n, c->cur, NULL, &o, EMB_GPU_DEFER_CHECK, c->ws, NULL));
}

static void ens_bwd(void *p, int iter)
{
    EnsCtx *c = p;
    use_set(c, iter);
    for (int t = 0, col = 0; t < c->n; col += emb_gpu_table_featuresize(c->tables[t]), t++)
        EMB(emb_gpu_backward_update(c->tables[t], &c->cur[t], NULL, c->dy + col, c->width,
                                    &c->opt, EMB_GPU_DEFER_CHECK, c->ws, NULL));
}

/* Writes the manifest and id files gpu_peer_torch.py --manifest reads. */
static int export_ensemble(const char *dir, const BenchConfig *bc, BenchIdSet (*sets)[BENCH_NSETS])
{
    char path[512];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return fprintf(stderr, "gpu_bench: cannot write %s\n", path), -1;
    fprintf(f, "{\"batch\": %lld, \"dtype\": \"%s\", \"tables\": [", (long long)bc->batch,
            emb_dtype_name(bc->tables[0].dtype));
    for (int t = 0; t < bc->ntables; t++)
        fprintf(f, "%s[%lld, %d]", t ? ", " : "", (long long)bc->tables[t].rows, bc->tables[t].dim);
    fprintf(f, "],\n \"variants\": [");
    int rc = 0;
    for (int v = 0; v < bc->nvariants; v++) {
        fprintf(f, "%s{\"name\": \"%s\", \"sets\": [", v ? ", " : "", bc->variants[v].name);
        for (int s = 0; s < BENCH_NSETS; s++) {
            char ids[64], off[64];
            snprintf(ids, sizeof ids, "ids_%d_%d.bin", v, s);
            snprintf(off, sizeof off, "offsets_%d_%d.bin", v, s);
            fprintf(f, "%s{\"ids\": \"%s\", \"offsets\": \"%s\"}", s ? ", " : "", ids, off);
            rc |= write_file(dir, ids, sets[v][s].ids, (size_t)sets[v][s].nnz * 8);
            rc |= write_file(dir, off, sets[v][s].offsets,
                             (size_t)(bc->ntables * (bc->batch + 1)) * 8);
        }
        fprintf(f, "]}");
    }
    fprintf(f, "]}\n");
    fclose(f);
    return rc;
}

/* One row of the ensemble in emb-bench's CSV columns (BENCH_CSV_COLUMNS): strategy "gpu",
   threads 0, the columns a GPU run has no value for empty. */
static void csv_row(FILE *f, const char *bags, const char *phase, Timing t, double bytes,
                    double distinct)
{
    fprintf(f, "%s,%s,gpu,0,%.6f,%.4f,,,%.6f,%d,%.0f,%.4f,,,,,,,,,,,,,,,%.1f,,,,,1\n", bags,
            phase, t.med, t.spread, t.hi, t.n, bytes, bytes / (t.med * 1e6), distinct);
}

static int run_ensemble(const Opts *o)
{
    BenchConfig bc;
    bench_config_default(&bc);
    if (bench_config_parse(&bc, o->nbench, (char **)o->bench_argv) != 0)
        return 2;
    const int n = bc.ntables, nv = bc.nvariants;
    const int reps = o->reps > MAX_REPS ? MAX_REPS : o->reps;
    if (o->export_dir) { /* the peer's ids: the stream's first BENCH_NSETS steps */
        BenchIdSet (*sets)[BENCH_NSETS] = calloc((size_t)nv, sizeof *sets);
        int rc = sets ? 0 : -1;
        for (int v = 0; v < nv && !rc; v++)
            for (int k = 0; k < BENCH_NSETS && !rc; k++)
                rc = bench_idset_create(&sets[v][k], &bc, v, k);
        if (!rc)
            rc = export_ensemble(o->export_dir, &bc, sets);
        for (int v = 0; sets && v < nv; v++)
            for (int k = 0; k < BENCH_NSETS; k++)
                bench_idset_free(&sets[v][k]);
        free(sets);
        if (rc)
            return fprintf(stderr, "gpu_bench: the ids for --export failed\n"), 1;
    }
    EnsCtx c = {0};
    c.n = n;
    c.nsteps = 1 + reps * o->iters; /* the warm-up call, then reps x iters */
    c.tables = calloc((size_t)n, sizeof *c.tables);
    c.batches = calloc((size_t)n * (size_t)c.nsteps, sizeof *c.batches);
    c.cur = calloc((size_t)n, sizeof *c.cur);
    void **dev = calloc(2 * (size_t)c.nsteps, sizeof *dev);
    if (!c.tables || !c.batches || !c.cur || !dev)
        return fprintf(stderr, "gpu_bench: out of memory\n"), 1;
    EMB(emb_gpu_workspace_create(&c.ws));
    double table_bytes = 0, row_bytes = 0;
    for (int t = 0; t < n; t++) {
        char name[16];
        snprintf(name, sizeof name, "t%02d", t);
        c.tables[t] = make_table(bc.tables[t].rows, bc.tables[t].dim, bc.tables[t].dtype, name);
        c.width += bc.tables[t].dim;
        table_bytes += (double)bc.tables[t].rows * bc.tables[t].dim *
                       (double)emb_dtype_size(bc.tables[t].dtype);
        row_bytes += bc.tables[t].dim * (double)emb_dtype_size(bc.tables[t].dtype);
    }
    printf("ensemble: %d tables (%s), %.2f GiB, concat width %lld, batch %lld\n", n,
           bc.tables_desc, table_bytes / (1 << 30), (long long)c.width, (long long)bc.batch);
    const double copy_gbs = copy_bandwidth((size_t)(table_bytes / 2), o->iters, reps);
    CUDA(cudaMalloc((void **)&c.out, (size_t)(bc.batch * c.width) * 4));
    c.dy = device_floats((size_t)(bc.batch * c.width), 0.01f);
    c.opt = emb_optimizer_defaults(EMB_OPT_SGD, (float)bc.lr);
    FILE *csv = NULL;
    if (o->csv) {
        if (!(csv = fopen(o->csv, "w")))
            return fprintf(stderr, "gpu_bench: cannot write %s\n", o->csv), 1;
        bench_record_fill(&bc.record, "gpu_bench", o->cmdline);
        bench_record_csv(&bc.record, csv);
        fprintf(csv, "# ids: steady state (a pool of %d steps, each call its own)\n%s\n",
                c.nsteps, BENCH_CSV_COLUMNS);
    }
    for (int v = 0; v < nv; v++) {
        double fwd_bytes = 0, bwd_bytes = 0, nnz = 0, distinct = 0; /* means over the steps */
        for (int k = 0; k < c.nsteps; k++) {
            BenchIdSet is;
            if (bench_idset_create(&is, &bc, v, k) != 0)
                return fprintf(stderr, "gpu_bench: out of memory for the ids\n"), 1;
            int64_t *dids = to_device(is.ids, (size_t)is.nnz * 8);
            int64_t *doff = to_device(is.offsets, (size_t)(n * (bc.batch + 1)) * 8);
            dev[2 * k] = dids;
            dev[2 * k + 1] = doff;
            for (int t = 0; t < n; t++) {
                EmbBatch b = is.batches[t];
                const double el = (double)emb_dtype_size(bc.tables[t].dtype);
                b.ids = dids + ((const int64_t *)is.batches[t].ids - is.ids);
                if (b.offsets)
                    b.offsets = doff + (is.batches[t].offsets - is.offsets);
                c.batches[(size_t)t * (size_t)c.nsteps + (size_t)k] = b;
                fwd_bytes += (b.nnz * bc.tables[t].dim * el + b.nnz * 8.0) / c.nsteps;
                bwd_bytes += b.nnz * 8.0 / c.nsteps;
            }
            /* each distinct row read + written (Σ over tables), at the mean row size */
            bwd_bytes += 2.0 * (double)is.distinct * row_bytes / n / c.nsteps;
            nnz += (double)is.nnz / c.nsteps;
            distinct += (double)is.distinct / c.nsteps;
            bench_idset_free(&is);
        }
        fwd_bytes += bc.batch * c.width * 4.0;
        bwd_bytes += bc.batch * c.width * 4.0;
        printf("-- %s: steady state, %d steps (every call its own ids): %.0f ids and %.0f "
               "distinct rows per step (mean)\n", bc.variants[v].name, c.nsteps, nnz, distinct);
        const Timing fwd = time_calls(ens_fwd, &c, o->iters, reps);
        print_timing("forward (one launch)", fwd, fwd_bytes, copy_gbs);
        const Timing bwd = time_calls(ens_bwd, &c, o->iters, reps);
        print_timing("backward + sgd (per table)", bwd, bwd_bytes, copy_gbs);
        EMB(emb_gpu_workspace_check(c.ws));
        printf("ENSEMBLE variant=%s fwd_ms=%.4f fwd_gbs=%.1f bwd_ms=%.4f bwd_gbs=%.1f "
               "copy_gbs=%.1f steps=%d\n", bc.variants[v].name, fwd.med,
               fwd_bytes / (fwd.med * 1e6), bwd.med, bwd_bytes / (bwd.med * 1e6), copy_gbs,
               c.nsteps);
        if (csv) {
            csv_row(csv, bc.variants[v].name, "forward", fwd, fwd_bytes, distinct);
            csv_row(csv, bc.variants[v].name, "update:sgd", bwd, bwd_bytes, distinct);
        }
        for (int k = 0; k < 2 * c.nsteps; k++)
            cudaFree(dev[k]);
    }
    if (csv && fclose(csv) != 0)
        return fprintf(stderr, "gpu_bench: cannot write %s\n", o->csv), 1;
    if (csv)
        printf("# rows: %s\n", o->csv);
    for (int t = 0; t < n; t++)
        emb_gpu_table_destroy(&c.tables[t]);
    emb_gpu_workspace_destroy(&c.ws);
    cudaFree(c.out);
    cudaFree(c.dy);
    free(dev);
    free(c.tables);
    free(c.batches);
    free(c.cur);
    return 0;
}

/* ---- options ------------------------------------------------------------------------- */

static unsigned parse_opts(const char *v)
{
    unsigned m = 0;
    m |= strstr(v, "sgd") ? 1u << EMB_OPT_SGD : 0;
    m |= strstr(v, "rowwise") ? 1u << EMB_OPT_ROWWISE_ADAGRAD : 0;
    m |= strstr(v, "adam") ? 1u << EMB_OPT_ADAM : 0;
    return m ? m : 1u << EMB_OPT_SGD;
}

static void parse(int argc, char **argv, Opts *o)
{
    *o = (Opts){.rows = 1 << 23, .bags = 16384, .bag = 64, .dim = 128, .dtype = EMB_F32,
                .iters = 20, .reps = 7,
                .opts = 1u << EMB_OPT_SGD | 1u << EMB_OPT_ROWWISE_ADAGRAD | 1u << EMB_OPT_ADAM};
    o->bench_argv[o->nbench++] = argv[0];
    for (int i = 0, at = 0; i < argc && at + 2 < (int)sizeof o->cmdline; i++)
        at += snprintf(o->cmdline + at, sizeof o->cmdline - (size_t)at, "%s%s", i ? " " : "",
                       argv[i]);
    int tiny = 0;
    for (int i = 1; i < argc; i++)
        tiny |= !strcmp(argv[i], "--tiny");
    if (tiny) {
        o->rows = 1 << 14;
        o->bags = 256;
        o->bag = 8;
        o->iters = 2;
        o->reps = 2;
        o->bench_argv[o->nbench++] = "--quick"; /* emb-bench's small ensemble, then ours */
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(a, "--tiny"))
            continue;
        i++;
        if (!strcmp(a, "--rows")) o->rows = atoll(v);
        else if (!strcmp(a, "--dim")) o->dim = atoi(v);
        else if (!strcmp(a, "--bag")) o->bag = atoll(v);
        else if (!strcmp(a, "--iters")) o->iters = atoi(v) > 0 ? atoi(v) : 1;
        else if (!strcmp(a, "--reps")) o->reps = atoi(v) > 0 ? atoi(v) : 1;
        else if (!strcmp(a, "--export")) o->export_dir = v;
        else if (!strcmp(a, "--csv")) o->csv = v;
        else if (!strcmp(a, "--opts")) o->opts = parse_opts(v);
        else if (!strcmp(a, "--dtype"))
            o->dtype = !strcmp(v, "f16") ? EMB_F16 : !strcmp(v, "bf16") ? EMB_BF16 : EMB_F32;
        else if (!strcmp(a, "--nbags")) o->bags = atoll(v);
        else if (o->nbench + 2 < 32 && (!strcmp(a, "--tables") || !strcmp(a, "--batch") ||
                                       !strcmp(a, "--bags") || !strcmp(a, "--ids") ||
                                       !strcmp(a, "--seed") || !strcmp(a, "--lr"))) {
            o->bench_argv[o->nbench++] = argv[i - 1];
            o->bench_argv[o->nbench++] = argv[i];
        } else {
            fprintf(stderr, "gpu_bench: unknown option %s (see the head of perf/gpu_bench.c)\n", a);
            exit(2);
        }
    }
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    Opts o;
    parse(argc, argv, &o);
    int ndev = 0;
    if (emb_gpu_device_count(&ndev)) {
        printf("SKIP: %s\n", emb_gpu_last_error());
        return 77;
    }
    if (o.export_dir)
        mkdir(o.export_dir, 0700);
    print_device();
    int ensemble = 0;
    for (int i = 1; i < o.nbench; i++)
        ensemble |= !strcmp(o.bench_argv[i], "--tables");
    return ensemble ? run_ensemble(&o) : run_one(&o);
}
