/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gpu_backward.cu — the backward of a lookup fused with its optimizer, deterministic.
 *
 * 1. entries: one slot per batch position and one per bag (the default column of an
 *    empty bag); a kept slot gets key = its id, coef = s·w (the combiner factor times
 *    the weight) and its bag; other slots get the sentinel key ncolumns.
 * 2. CUB's stable radix sort of (key, slot) over the bits ncolumns needs: equal ids stay
 *    in batch order. A run-length encoding gives each distinct id's run of slots.
 * 3. A run longer than SEG slots (a hot row) is cut into pieces of SEG slots; a first
 *    kernel reduces each piece's Σ coef·dy in order into a partial row.
 *    (Before that, the slots' coefficients and bags are permuted into sorted order.)
 * 4. The apply kernel, one group per distinct id: its gradient A = Σ coef·dy over the run
 *    (in order), or the sum of its pieces' partials (in order); with max_norm, the clip's
 *    Jacobian on the column before the update (linear, so applied once to A); then the
 *    optimizer, and the row is written once.
 * No floating-point atomics anywhere: results are bit-identical run to run.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu_internal.cuh"

#ifndef EMB_GPU_EMU
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#endif

#define SEG 128 /* slots per piece of a hot row */

typedef struct BwdArgs {
    GpuDesc d;
    const float *dy;
    int64_t dy_stride;
    int32_t dy_vec;
    uint32_t n;        /* slots: nnz + nbags */
    uint32_t sentinel; /* ncolumns */
    uint32_t *keys_in, *keys_out, *vals_in, *vals_out;
    float *coef, *scoef;   /* by slot; by sorted position */
    int32_t *bagof, *sbag; /* by slot; by sorted position */
    uint32_t *unique, *counts, *nruns, *run_start, *part_start, *mch, *cntz;
    float *partials;
    int32_t kind;      /* EmbOptimizerKind */
    float lr, eps, b1, b2;
    float decay_l2;    /* L2 weight decay: A += wd * w before the step (0: none) */
    float decay_scale; /* decoupled weight decay: w = round(w * (1 - lr * wd)) (1: none) */
    int32_t bias_correction;
    int32_t sr;        /* stochastic rounding of a bf16 table */
    uint64_t sr_key;   /* the table's seed */
    uint64_t sr_step;  /* this call's step: the table's calls before it (the CPU's step) */
    float *s0, *s1;
    int64_t *step;
} BwdArgs;

#define ENTRY_LANES 8 /* lanes per bag of the entries kernel: 4 bags per warp */

/* ENTRY_LANES lanes per bag: Σw and Σw² of its kept entries (lanes, then a fixed tree),
   then its slots. */
__global__ void entries_kernel(BwdArgs a, const GpuErr *err)
{
    const int64_t bag = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / ENTRY_LANES;
    const int lane = threadIdx.x & (ENTRY_LANES - 1);
    const unsigned mask = gpu_group_mask(ENTRY_LANES);
    if (gpu_failed(err) || bag >= a.d.nbags)
        return; /* whole groups leave together */
    const GpuDesc &d = a.d;
    const int64_t start = gpu_bag_start(d, bag), end = gpu_bag_end(d, bag);
    double sw = 0.0, sw2 = 0.0;
    int kept = 0;
    for (int64_t k = start + lane; k < end; k += ENTRY_LANES) {
        const float w = d.weights ? d.weights[k] : 1.0f;
        if (gpu_pruned(d, gpu_id(d.ids, d.id32, k), w))
            continue;
        kept++;
        sw += w;
        sw2 += (double)w * w;
    }
    for (int o = ENTRY_LANES / 2; o > 0; o >>= 1) {
        sw += __shfl_xor_sync(mask, sw, o, ENTRY_LANES);
        sw2 += __shfl_xor_sync(mask, sw2, o, ENTRY_LANES);
        kept += __shfl_xor_sync(mask, kept, o, ENTRY_LANES);
    }
    const float s = kept ? gpu_combiner_scale(d.combiner, sw, sw2) : 1.0f;
    for (int64_t k = start + lane; k < end; k += ENTRY_LANES) {
        const int64_t id = gpu_id(d.ids, d.id32, k);
        const float w = d.weights ? d.weights[k] : 1.0f;
        a.keys_in[k] = gpu_pruned(d, id, w) ? a.sentinel : (uint32_t)id;
        a.vals_in[k] = (uint32_t)k;
        a.coef[k] = w * s;
        a.bagof[k] = (int32_t)bag;
    }
    if (lane == 0) {
        const int64_t slot = d.nnz + bag;
        const bool def = kept == 0 && (d.flags & EMB_USE_DEFAULT_ID);
        a.keys_in[slot] = def ? (uint32_t)d.default_id : a.sentinel;
        a.vals_in[slot] = (uint32_t)slot;
        a.coef[slot] = 1.0f;
        a.bagof[slot] = (int32_t)bag;
    }
}

/* Run lengths padded with zeros, and pieces per run (0 for a run reduced directly). */
__global__ void prep_kernel(BwdArgs a, const GpuErr *err)
{
    if (gpu_failed(err))
        return;
    const uint32_t nr = *a.nruns;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += gridDim.x * blockDim.x) {
        const uint32_t c = i < nr ? a.counts[i] : 0;
        a.cntz[i] = c;
        a.mch[i] = c > SEG ? (c + SEG - 1) / SEG : 0;
    }
}

/* Coefficients and bags in sorted order: the reductions then read them contiguously. */
__global__ void permute_kernel(BwdArgs a, const GpuErr *err)
{
    if (gpu_failed(err))
        return;
    for (uint32_t e = blockIdx.x * blockDim.x + threadIdx.x; e < a.n; e += gridDim.x * blockDim.x) {
        const uint32_t slot = a.vals_out[e];
        a.scoef[e] = a.coef[slot];
        a.sbag[e] = a.bagof[slot];
    }
}

/* This lane's NV vectors of dy row @bag (zeros beyond D). */
template <int NV>
__device__ __forceinline__ void load_dy(const BwdArgs &a, int32_t bag, int lane, int G,
                                        float4 (&g)[NV])
{
    const float *row = a.dy + (int64_t)bag * a.dy_stride;
#pragma unroll
    for (int v = 0; v < NV; v++) {
        const int col = (v * G + lane) * 4;
        if (a.dy_vec && col < a.d.D) {
            g[v] = __ldg((const float4 *)(row + col));
            continue;
        }
        float e[4];
#pragma unroll
        for (int j = 0; j < 4; j++)
            e[j] = col + j < a.d.D ? __ldg(row + col + j) : 0.0f;
        g[v] = make_float4(e[0], e[1], e[2], e[3]);
    }
}

/* A += Σ coef·dy over sorted slots [e0, e1), in order, U rows in flight. */
template <int NV>
__device__ void reduce_slots(const BwdArgs &a, uint32_t e0, uint32_t e1, int lane, int G,
                             float4 (&A)[NV])
{
    constexpr int U = NV >= 8 ? 1 : NV >= 4 ? 2 : 4;
    for (uint32_t e = e0; e < e1; e += U) {
        float c[U];
        float4 g[U][NV];
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (e + u >= e1)
                continue;
            c[u] = __ldg(a.scoef + e + u);
            load_dy<NV>(a, __ldg(a.sbag + e + u), lane, G, g[u]);
        }
#pragma unroll
        for (int u = 0; u < U; u++)
            if (e + u < e1)
#pragma unroll
                for (int v = 0; v < NV; v++)
                    A[v] = gpu_fma4(c[u], g[u][v], A[v]);
    }
}

/* The run r whose pieces hold piece j: the last r with part_start[r] <= j. */
__device__ __forceinline__ uint32_t piece_run(const BwdArgs &a, uint32_t nr, uint32_t j)
{
    uint32_t lo = 0, hi = nr - 1;
    while (lo < hi) {
        const uint32_t mid = (lo + hi + 1) >> 1;
        if (__ldg(a.part_start + mid) <= j)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

template <int NV>
__global__ void __launch_bounds__(GPU_THREADS) partial_kernel(BwdArgs a, const GpuErr *err)
{
    if (gpu_failed(err))
        return;
    const uint32_t nr = *a.nruns;
    if (nr == 0)
        return;
    const uint32_t total = a.part_start[nr - 1] + a.mch[nr - 1];
    const int G = a.d.G, lane = threadIdx.x & (G - 1);
    const uint32_t groups = gridDim.x * (GPU_THREADS / G);
    for (uint32_t j = blockIdx.x * (GPU_THREADS / G) + threadIdx.x / G; j < total; j += groups) {
        const uint32_t r = piece_run(a, nr, j);
        if (a.unique[r] == a.sentinel)
            continue; /* pruned slots */
        const uint32_t e0 = a.run_start[r] + (j - a.part_start[r]) * SEG;
        const uint32_t e1 = min(e0 + SEG, a.run_start[r] + a.counts[r]);
        float4 A[NV];
#pragma unroll
        for (int v = 0; v < NV; v++)
            A[v] = make_float4(0.f, 0.f, 0.f, 0.f);
        reduce_slots<NV>(a, e0, e1, lane, G, A);
        float *p = a.partials + (size_t)j * (size_t)a.d.stride;
#pragma unroll
        for (int v = 0; v < NV; v++) {
            const int col = (v * G + lane) * 4;
            if (col < a.d.stride)
                *(float4 *)(p + col) = A[v];
        }
    }
}

/* max_norm's Jacobian applied to the summed gradient A of column x (see pullback.h). */
template <int NV>
__device__ __forceinline__ void clip_grad(const BwdArgs &a, const float4 (&x)[NV],
                                          float4 (&A)[NV], int G, unsigned mask)
{
    float ss = 0.0f, xa = 0.0f;
#pragma unroll
    for (int v = 0; v < NV; v++) {
        ss += gpu_dot4(x[v], x[v]);
        xa += gpu_dot4(x[v], A[v]);
    }
    ss = gpu_group_sum(ss, G, mask);
    xa = gpu_group_sum(xa, G, mask);
    const float c = a.d.max_norm;
    if (!(ss > c * c))
        return;
    const float f = c / sqrtf(ss), k = xa / ss;
#pragma unroll
    for (int v = 0; v < NV; v++)
        A[v] = make_float4(f * (A[v].x - x[v].x * k), f * (A[v].y - x[v].y * k),
                           f * (A[v].z - x[v].z * k), f * (A[v].w - x[v].w * k));
}

__device__ __forceinline__ float4 adam4(float4 g, float *m, float *v, const BwdArgs &a,
                                        float step_size)
{
    const float gs[4] = {g.x, g.y, g.z, g.w};
    float4 mo = *(float4 *)m, vo = *(float4 *)v;
    float *mp = &mo.x, *vp = &vo.x, r[4];
#pragma unroll
    for (int j = 0; j < 4; j++) { /* PyTorch SparseAdam's operation order */
        const float mu = (gs[j] - mp[j]) * (1.0f - a.b1);
        const float vu = (gs[j] * gs[j] - vp[j]) * (1.0f - a.b2);
        mp[j] = mu + mp[j];
        vp[j] = vu + vp[j];
        r[j] = -step_size * (mp[j] / (sqrtf(vp[j]) + a.eps));
    }
    *(float4 *)m = mo;
    *(float4 *)v = vo;
    return make_float4(r[0], r[1], r[2], r[3]);
}

/* Applies the optimizer to row @id (at @row, its values in x) with gradient A; writes it.
   As the CPU's plan (update/plan.c): the clip's Jacobian, then weight decay, then the step. */
template <int DT, int NV>
__device__ void apply_row(const BwdArgs &a, uint32_t id, char *row, float4 (&x)[NV],
                          float4 (&A)[NV], int lane, int G, unsigned mask)
{
    if (a.d.max_norm > 0.0f)
        clip_grad<NV>(a, x, A, G, mask);
    if (a.decay_l2 != 0.0f) {
#pragma unroll
        for (int v = 0; v < NV; v++)
            A[v] = make_float4(A[v].x + a.decay_l2 * x[v].x, A[v].y + a.decay_l2 * x[v].y,
                               A[v].z + a.decay_l2 * x[v].z, A[v].w + a.decay_l2 * x[v].w);
    } else if (a.decay_scale != 1.0f) { /* the decayed row is rounded to its dtype first */
#pragma unroll
        for (int v = 0; v < NV; v++)
            x[v] = gpu_round4<DT>(gpu_scale4(a.decay_scale, x[v]));
    }
    float scale = -a.lr; /* SGD */
    float step_size = 0.0f;
    if (a.kind == EMB_OPT_ROWWISE_ADAGRAD) {
        float gg = 0.0f;
#pragma unroll
        for (int v = 0; v < NV; v++)
            gg += gpu_dot4(A[v], A[v]);
        gg = gpu_group_sum(gg, G, mask) / (float)a.d.D;
        const float h = a.s0[id] + gg;
        __syncwarp(mask);
        if (lane == 0)
            a.s0[id] = h;
        scale = -a.lr / (sqrtf(h) + a.eps);
    } else if (a.kind == EMB_OPT_ADAM) { /* as emb_update's plan (update/optimizer.c) */
        step_size = a.lr;
        if (a.bias_correction) {
            const double t = (double)(*a.step + 1);
            const double bc1 = 1.0 - pow((double)a.b1, t), bc2 = 1.0 - pow((double)a.b2, t);
            step_size = (float)(a.lr * sqrt(bc2) / bc1);
        }
    }
#pragma unroll
    for (int v = 0; v < NV; v++) {
        const int col = (v * G + lane) * 4;
        if (col >= a.d.stride)
            continue;
        float4 dw;
        if (a.kind == EMB_OPT_ADAM) {
            const size_t off = (size_t)id * (size_t)a.d.stride + col;
            dw = adam4(A[v], a.s0 + off, a.s1 + off, a, step_size);
        } else {
            dw = gpu_scale4(scale, A[v]);
        }
        const float4 w = make_float4(x[v].x + dw.x, x[v].y + dw.y, x[v].z + dw.z, x[v].w + dw.w);
        if (DT == EMB_BF16 && a.sr) /* the CPU's bits: (seed, row, step, element), sround.h */
            gpu_store4_bf16_sr(row + col * gpu_elsize<DT>(), w, gpu_sr_draw(a.sr_key, id,
                               a.sr_step * (uint64_t)((a.d.D + 3) / 4) + (uint64_t)(col / 4)));
        else
            gpu_store4<DT>(row + col * gpu_elsize<DT>(), w);
    }
}

/*
 * Run r (distinct id): the row is loaded first (its latency overlaps the reduction), then
 * its gradient is summed (slots, or the pieces' partials, in order) and applied.
 */
template <int DT, int NV>
__device__ void process_run(const BwdArgs &a, uint32_t r, uint32_t id, int lane, int G,
                            unsigned mask)
{
    char *row = (char *)a.d.data + (size_t)id * (size_t)a.d.stride * gpu_elsize<DT>();
    float4 x[NV], A[NV];
#pragma unroll
    for (int v = 0; v < NV; v++) {
        const int col = (v * G + lane) * 4;
        x[v] = col < a.d.stride ? gpu_load4_rw<DT>(row + col * gpu_elsize<DT>())
                                : make_float4(0.f, 0.f, 0.f, 0.f);
        A[v] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
    const uint32_t m = a.mch[r];
    if (m == 0) {
        reduce_slots<NV>(a, a.run_start[r], a.run_start[r] + a.counts[r], lane, G, A);
    } else {
        const float *p = a.partials + (size_t)a.part_start[r] * (size_t)a.d.stride;
        for (uint32_t q = 0; q < m; q++, p += a.d.stride)
#pragma unroll
            for (int v = 0; v < NV; v++) {
                const int col = (v * G + lane) * 4;
                if (col < a.d.stride) {
                    const float4 y = *(const float4 *)(p + col);
                    A[v] = make_float4(A[v].x + y.x, A[v].y + y.y, A[v].z + y.z, A[v].w + y.w);
                }
            }
    }
    apply_row<DT, NV>(a, id, row, x, A, lane, G, mask);
}

template <int NV>
__global__ void __launch_bounds__(GPU_THREADS) apply_kernel(BwdArgs a, const GpuErr *err)
{
    if (gpu_failed(err))
        return;
    const uint32_t nr = *a.nruns;
    const int G = a.d.G, lane = threadIdx.x & (G - 1);
    const unsigned mask = gpu_group_mask(G);
    const uint32_t groups = gridDim.x * (GPU_THREADS / G);
    for (uint32_t r = blockIdx.x * (GPU_THREADS / G) + threadIdx.x / G; r < nr; r += groups) {
        const uint32_t id = a.unique[r];
        if (id != a.sentinel)
            GPU_DTYPE_SWITCH(a.d.dtype, (process_run<DT, NV>(a, r, id, lane, G, mask)));
    }
}

__global__ void step_kernel(int64_t *step, const GpuErr *err)
{
    if (!gpu_failed(err))
        (*step)++;
}

/* ---- host side ----------------------------------------------------------------------- */

static size_t align256(size_t x)
{
    return (x + 255) & ~(size_t)255;
}

/* Bytes of CUB temporary storage for n slots and keys of @bits bits. */
static int cub_bytes(uint32_t n, int bits, size_t *out)
{
    size_t a = 0, b = 0, c = 0;
    GPU_TRY(cub::DeviceRadixSort::SortPairs(NULL, a, (uint32_t *)NULL, (uint32_t *)NULL,
                                            (uint32_t *)NULL, (uint32_t *)NULL, (int)n, 0, bits));
    GPU_TRY(cub::DeviceRunLengthEncode::Encode(NULL, b, (uint32_t *)NULL, (uint32_t *)NULL,
                                               (uint32_t *)NULL, (uint32_t *)NULL, (int)n));
    GPU_TRY(cub::DeviceScan::ExclusiveSum(NULL, c, (uint32_t *)NULL, (uint32_t *)NULL, (int)n));
    *out = a > b ? (a > c ? a : c) : (b > c ? b : c);
    return 0;
}

/* Lays out the scratch (grown as needed) into the arrays of @a; temp storage in *tmp. */
static int carve(EmbGpuWorkspace *ws, BwdArgs *a, size_t tmp_bytes, void **tmp)
{
    const size_t n = a->n, u32 = align256(n * 4);
    const size_t pieces = 2 * n / SEG + 2;
    const size_t need = 13 * u32 + align256(4) + align256(pieces * (size_t)a->d.stride * 4) +
                        align256(tmp_bytes);
    const int r = emb__gpu_scratch(ws, need);
    if (r)
        return r;
    char *p = (char *)ws->scratch;
    uint32_t **arrays[] = {&a->keys_in, &a->keys_out, &a->vals_in, &a->vals_out,
                           (uint32_t **)&a->coef, (uint32_t **)&a->bagof,
                           (uint32_t **)&a->scoef, (uint32_t **)&a->sbag, &a->unique,
                           &a->counts, &a->run_start, &a->part_start, &a->mch};
    for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++, p += u32)
        *arrays[i] = (uint32_t *)p;
    a->cntz = a->keys_in; /* free once sorted */
    a->nruns = (uint32_t *)p;
    p += align256(4);
    a->partials = (float *)p;
    p += align256(pieces * (size_t)a->d.stride * 4);
    *tmp = p;
    return 0;
}

/* The CPU library's check of the configuration, then what the GPU supports. */
static int check_opt(const EmbGpuTable *t, const EmbOptimizerConfig *o)
{
    const int r = emb_optimizer_config_check(o); /* its message is already the channel's */
    if (r)
        return r;
    if (o->kind != EMB_OPT_SGD && o->kind != EMB_OPT_ROWWISE_ADAGRAD && o->kind != EMB_OPT_ADAM)
        return emb__gpu_fail(EMB_ENOTSUP, "optimizer kind %d: the GPU backward takes SGD, "
                             "ROWWISE_ADAGRAD and ADAM", (int)o->kind);
    if (o->max_gradient > 0.0f || o->max_row_norm > 0.0f || o->max_global_norm > 0.0f)
        return emb__gpu_fail(EMB_ENOTSUP, "optimizer max_gradient / max_row_norm / "
                             "max_global_norm: the GPU backward has no gradient clipping");
    if (t->opt_kind >= 0 && t->opt_kind != (int)o->kind)
        return emb__gpu_fail(EMB_EINVAL, "table \"%s\" holds state of optimizer kind %d, not %d",
                             t->name, t->opt_kind, (int)o->kind);
    return 0;
}

__global__ void fill_kernel(float *p, int64_t n, float v)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        p[i] = v;
}

/* Allocates the table's optimizer state on its first update: row-wise Adagrad's h starts
   at initial_accumulator, Adam's moments and step at zero (as the CPU's make_slot). */
static int ensure_state(EmbGpuTable *t, const EmbOptimizerConfig *o, cudaStream_t s)
{
    if (t->opt_kind >= 0)
        return 0;
    const size_t rows = (size_t)t->ncolumns, full = rows * (size_t)t->stride * 4;
    if (o->kind == EMB_OPT_ROWWISE_ADAGRAD && rows) {
        GPU_TRY(cudaMalloc((void **)&t->state0, rows * 4));
        GPU_TRY(cudaMemsetAsync(t->state0, 0, rows * 4, s));
        if (o->initial_accumulator != 0.0f) {
            const int64_t blocks = ((int64_t)rows + GPU_THREADS - 1) / GPU_THREADS;
            GPU_LAUNCH(fill_kernel, (unsigned)(blocks < 1024 ? blocks : 1024), GPU_THREADS, s,
                       t->state0, (int64_t)rows, o->initial_accumulator);
            GPU_TRY(cudaGetLastError());
        }
    } else if (o->kind == EMB_OPT_ADAM) {
        GPU_TRY(cudaMalloc((void **)&t->step, 8));
        GPU_TRY(cudaMemsetAsync(t->step, 0, 8, s));
        if (rows) {
            GPU_TRY(cudaMalloc((void **)&t->state0, full));
            GPU_TRY(cudaMalloc((void **)&t->state1, full));
            GPU_TRY(cudaMemsetAsync(t->state0, 0, full, s));
            GPU_TRY(cudaMemsetAsync(t->state1, 0, full, s));
        }
    }
    t->opt_kind = (int)o->kind;
    return 0;
}

static int persistent_blocks(void)
{
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        sms = 132;
    }
    return sms * (2048 / GPU_THREADS);
}

template <int NV> static void launch_reduce(const BwdArgs &a, int blocks, GpuErr *err, cudaStream_t s)
{
    GPU_LAUNCH(partial_kernel<NV>, blocks, GPU_THREADS, s, a, err);
    GPU_LAUNCH(apply_kernel<NV>, blocks, GPU_THREADS, s, a, err);
}

static int run_pipeline(BwdArgs *a, void *tmp, size_t tmp_bytes, int bits, GpuErr *err,
                        cudaStream_t s)
{
    const int n = (int)a->n;
    const unsigned bag_blocks =
        (unsigned)((a->d.nbags * ENTRY_LANES + GPU_THREADS - 1) / GPU_THREADS);
    if (bag_blocks)
        GPU_LAUNCH(entries_kernel, bag_blocks, GPU_THREADS, s, *a, err);
    GPU_TRY(cudaGetLastError());
    size_t tb = tmp_bytes;
    GPU_TRY(cub::DeviceRadixSort::SortPairs(tmp, tb, a->keys_in, a->keys_out, a->vals_in,
                                            a->vals_out, n, 0, bits, s));
    const int blocks = persistent_blocks();
    GPU_LAUNCH(permute_kernel, blocks, GPU_THREADS, s, *a, err);
    tb = tmp_bytes;
    GPU_TRY(cub::DeviceRunLengthEncode::Encode(tmp, tb, a->keys_out, a->unique, a->counts,
                                               a->nruns, n, s));
    GPU_LAUNCH(prep_kernel, blocks, GPU_THREADS, s, *a, err);
    GPU_TRY(cudaGetLastError());
    tb = tmp_bytes;
    GPU_TRY(cub::DeviceScan::ExclusiveSum(tmp, tb, a->cntz, a->run_start, n, s));
    tb = tmp_bytes;
    GPU_TRY(cub::DeviceScan::ExclusiveSum(tmp, tb, a->mch, a->part_start, n, s));
    switch (emb__gpu_nv(a->d.D, 4)) {
    case 1: launch_reduce<1>(*a, blocks, err, s); break;
    case 2: launch_reduce<2>(*a, blocks, err, s); break;
    case 4: launch_reduce<4>(*a, blocks, err, s); break;
    default: launch_reduce<8>(*a, blocks, err, s); break;
    }
    GPU_TRY(cudaGetLastError());
    if (a->kind == EMB_OPT_ADAM)
        GPU_LAUNCH(step_kernel, 1, 1, s, a->step, err);
    return emb__gpu_cuda(cudaGetLastError(), "backward kernels");
}

int emb_gpu_backward_update(EmbGpuTable *table, const EmbBatch *batch, const EmbPooling *pooling,
                            const float *dy, int64_t dy_stride, const EmbOptimizerConfig *opt,
                            unsigned flags, EmbGpuWorkspace *ws, void *stream)
{
    GPU_CHECK_NULL(opt);
    GPU_CHECK_NULL(ws);
    GPU_CHECK_FLAGS(flags);
    int r = emb__gpu_batch_check(table, batch, pooling, 0);
    if (r || (r = check_opt(table, opt)))
        return r;
    if (dy_stride < table->featuresize)
        return emb__gpu_fail(EMB_ESTRIDE, "dy stride %lld < featuresize %d",
                             (long long)dy_stride, (int)table->featuresize);
    if (batch->nbags > 0 && !dy)
        return emb__gpu_fail(EMB_ENULL, "dy is NULL for %lld bags", (long long)batch->nbags);
    if (table->ncolumns >= 0xffffffffll || batch->nnz + batch->nbags >= 0x7fffffffll ||
        batch->nbags > INT64_MAX / (dy_stride > 0 ? dy_stride : 1))
        return emb__gpu_fail(EMB_ENOTSUP, "GPU backward takes ncolumns < 2^32 - 1 and "
                             "nnz + nbags < 2^31 (have %lld, %lld)", (long long)table->ncolumns,
                             (long long)(batch->nnz + batch->nbags));
    const cudaStream_t s = (cudaStream_t)stream;
    if (batch->nnz + batch->nbags == 0) { /* still a step for Adam's t, as emb_update */
        if (opt->kind != EMB_OPT_ADAM)
            return 0;
        if ((r = ensure_state(table, opt, s)))
            return r;
        GPU_LAUNCH(step_kernel, 1, 1, s, table->step, ws->derr);
        return emb__gpu_cuda(cudaGetLastError(), "step kernel");
    }
    BwdArgs a;
    memset(&a, 0, sizeof a);
    emb__gpu_desc_fill(&a.d, table, batch, pooling);
    a.dy = dy;
    a.dy_stride = dy_stride;
    a.dy_vec = table->featuresize % 4 == 0 && dy_stride % 4 == 0 && ((uintptr_t)dy & 15) == 0;
    a.d.G = emb__gpu_group(a.d.D, emb__gpu_nv(a.d.D, 4), 4); /* 4-element chunks here */
    a.n = (uint32_t)(batch->nnz + batch->nbags);
    a.sentinel = (uint32_t)table->ncolumns;
    a.kind = (int32_t)opt->kind;
    a.lr = opt->lr;
    a.eps = opt->eps;
    a.b1 = opt->beta1;
    a.b2 = opt->beta2;
    a.bias_correction = opt->bias_correction;
    a.decay_l2 = opt->weight_decay_mode == EMB_DECAY_L2 ? opt->weight_decay : 0.0f;
    a.decay_scale = opt->weight_decay_mode == EMB_DECAY_DECOUPLED
                        ? 1.0f - opt->lr * opt->weight_decay : 1.0f;
    a.sr = (flags & EMB_GPU_STOCHASTIC_ROUNDING) != 0;
    a.sr_key = table->seed;
    a.sr_step = table->calls++;
    int bits = 1;
    while (bits < 32 && ((uint64_t)a.sentinel >> bits) != 0)
        bits++;
    size_t tmp_bytes = 0;
    void *tmp = NULL;
    if ((r = cub_bytes(a.n, bits, &tmp_bytes)) || (r = carve(ws, &a, tmp_bytes, &tmp)) ||
        (r = ensure_state(table, opt, s)) || (r = emb__gpu_descs(ws, 1)))
        return r;
    a.s0 = table->state0;
    a.s1 = table->state1;
    a.step = table->step;
    ws->hdesc[0] = a.d;
    snprintf(ws->label, sizeof ws->label, "%s", table->name[0] ? table->name : "unnamed");
    if ((r = emb__gpu_validate(ws, 1, s)) || (r = run_pipeline(&a, tmp, tmp_bytes, bits, ws->derr, s)))
        return r;
    return emb__gpu_finish(ws, flags, s);
}
