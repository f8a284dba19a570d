/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gpu_lookup.cu — pooled and table-batched lookups on the device.
 *
 * One launch serves every table of a call: the grid is cut into per-table runs of blocks
 * (GpuDesc::block0), each block holds GPU_THREADS / G groups of G lanes and a group pools
 * one bag. The group reads a bag's ids and weights a window of G at a time (one per lane,
 * pruned entries dropped from a ballot mask; the next window's loaded ahead), then takes
 * the kept entries U at a time: their ids are broadcast by shuffles, all their row loads
 * issued (U x NV independent 16-byte loads per lane in flight: 4 f32 or 8 f16 / bf16
 * elements, so a half-precision row needs half the lanes and a warp pools two bags of
 * D = 128 at once), and they are accumulated in bag order with the
 * max_norm clip and the weight, as the CPU library does. The combiner's
 * factor (Σw and Σw² summed in double in bag order) scales the finished row; an empty bag
 * gives the default column or zeros.
 */
#include <stdio.h>
#include <string.h>

#include "gpu_internal.cuh"

/* Entries taken at once per lane holding NV chunks: about 4 16-byte loads in flight. */
template <int NV> struct Unroll {
    static constexpr int U = NV >= 4 ? 1 : 4 / NV;
};

/* Elements per chunk (one 16-byte load) and float4s per lane of a row, by dtype. */
template <int DT> struct Chunk {
    static constexpr int CW = DT == EMB_F32 ? 4 : 8;
};
template <int DT, int NV> struct Row {
    static constexpr int NQ = NV * Chunk<DT>::CW / 4;
};

/* Column of float4 q (of NQ) of this lane: chunk q / (CW / 4), its (q % (CW / 4))-th four. */
template <int DT>
__device__ __forceinline__ int64_t quad_col(int q, int lane, int G)
{
    constexpr int CW = Chunk<DT>::CW, PER = CW / 4;
    return ((int64_t)(q / PER) * G + lane) * CW + 4 * (q % PER);
}

/* Loads the chunks of row @id this lane holds, raw (16 bytes each: the loads in flight
   take 4 registers whatever the dtype), zeros beyond the padded row. */
template <int DT, int NV>
__device__ __forceinline__ void load_row(const GpuDesc &d, int64_t id, int lane, int G,
                                         uint4 (&r)[NV])
{
    constexpr int CW = Chunk<DT>::CW;
    const char *row = (const char *)d.data + (size_t)id * (size_t)d.stride * gpu_elsize<DT>();
#pragma unroll
    for (int v = 0; v < NV; v++) {
        const int64_t col = ((int64_t)v * G + lane) * CW;
        r[v] = col < d.stride ? __ldg((const uint4 *)(row + col * gpu_elsize<DT>()))
                              : make_uint4(0u, 0u, 0u, 0u);
    }
}

/* The max_norm clip factor of a row held by the group: min(1, c / ||x||). */
template <int DT, int NV>
__device__ __forceinline__ float clip(const uint4 (&r)[NV], float c, int G, unsigned mask)
{
    constexpr int PER = Chunk<DT>::CW / 4;
    float ss = 0.0f;
#pragma unroll
    for (int v = 0; v < NV; v++) {
        float4 q[PER];
        gpu_unpack<DT>(r[v], q);
#pragma unroll
        for (int h = 0; h < PER; h++)
            ss += gpu_dot4(q[h], q[h]);
    }
    ss = gpu_group_sum(ss, G, mask);
    return ss > c * c ? c / sqrtf(ss) : 1.0f;
}

template <int DT, int NV>
__device__ __forceinline__ void accumulate(float4 (&acc)[Row<DT, NV>::NQ], const uint4 (&r)[NV],
                                           float f)
{
    constexpr int PER = Chunk<DT>::CW / 4;
#pragma unroll
    for (int v = 0; v < NV; v++) {
        float4 q[PER];
        gpu_unpack<DT>(r[v], q);
#pragma unroll
        for (int h = 0; h < PER; h++)
            acc[v * PER + h] = gpu_fma4(f, q[h], acc[v * PER + h]);
    }
}

template <int DT, int NQ>
__device__ __forceinline__ void write_row(const GpuDesc &d, int64_t bag, int lane, int G,
                                          const float4 (&acc)[NQ], float s)
{
    float *o = d.out + bag * d.out_stride;
    const bool nt = (d.flags & EMB_OUT_NONTEMPORAL) != 0;
#pragma unroll
    for (int v = 0; v < NQ; v++) {
        const int64_t col = quad_col<DT>(v, lane, G);
        if (col >= d.D)
            continue;
        const float4 y = gpu_scale4(s, acc[v]);
        if (d.out_vec) {
            if (nt)
                __stcs((float4 *)(o + col), y);
            else
                *(float4 *)(o + col) = y;
            continue;
        }
        const float e[4] = {y.x, y.y, y.z, y.w};
#pragma unroll
        for (int j = 0; j < 4; j++)
            if (col + j < d.D)
                o[col + j] = e[j];
    }
}

/* Entry k of a bag (k < end): its id and weight, loaded for a later window. */
__device__ __forceinline__ void load_entry(const GpuDesc &d, int64_t k, int64_t end,
                                           int64_t &id, float &w)
{
    id = k < end ? gpu_id(d.ids, d.id32, k) : 0;
    w = k < end && d.weights ? __ldg(d.weights + k) : 1.0f;
}

/* Pools bag @bag of table @d with the G lanes of this group. */
template <int DT, int NV>
__device__ void pool_bag(const GpuDesc &d, int64_t bag, int lane, int G, unsigned mask)
{
    constexpr int U = Unroll<NV>::U, NQ = Row<DT, NV>::NQ;
    float4 acc[NQ];
#pragma unroll
    for (int v = 0; v < NQ; v++)
        acc[v] = make_float4(0.f, 0.f, 0.f, 0.f);
    const int64_t end = gpu_bag_end(d, bag);
    const unsigned base = (threadIdx.x & 31u) & ~(unsigned)(G - 1); /* group's first lane */
    int64_t kept = 0;
    double sw = 0.0, sw2 = 0.0;
    int64_t k0 = gpu_bag_start(d, bag), my_id;
    float my_w;
    load_entry(d, k0 + lane, end, my_id, my_w);
    for (; k0 < end; k0 += G) {
        /* a window of G entries: lane i holds entry k0 + i; the next window's entry is
           loaded now, so that its latency overlaps this window's rows */
        const bool mine = k0 + lane < end && !gpu_pruned(d, my_id, my_w);
        int64_t next_id;
        float next_w;
        load_entry(d, k0 + G + lane, end, next_id, next_w);
        unsigned keep = (__ballot_sync(mask, mine) >> base) & (G == 32 ? 0xffffffffu : (1u << G) - 1u);
        while (keep) { /* U kept entries at a time, in bag order */
            int64_t id[U];
            float w[U];
            bool ok[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                ok[u] = keep != 0;
                const int src = ok[u] ? __ffs(keep) - 1 : 0;
                keep &= keep - 1;
                id[u] = __shfl_sync(mask, (long long)my_id, src, G);
                w[u] = __shfl_sync(mask, my_w, src, G);
            }
            uint4 x[U][NV];
#pragma unroll
            for (int u = 0; u < U; u++)
                if (ok[u])
                    load_row<DT, NV>(d, id[u], lane, G, x[u]);
#pragma unroll
            for (int u = 0; u < U; u++) {
                if (!ok[u])
                    continue;
                kept++;
                sw += w[u];
                sw2 += (double)w[u] * w[u];
                const float f = d.max_norm > 0.0f ? w[u] * clip<DT, NV>(x[u], d.max_norm, G, mask) : w[u];
                accumulate<DT, NV>(acc, x[u], f);
            }
        }
        my_id = next_id;
        my_w = next_w;
    }
    float s = 1.0f;
    if (kept > 0) {
        s = gpu_combiner_scale(d.combiner, sw, sw2);
    } else if (d.flags & EMB_USE_DEFAULT_ID) {
        uint4 x[NV];
        load_row<DT, NV>(d, d.default_id, lane, G, x);
        accumulate<DT, NV>(acc, x, d.max_norm > 0.0f ? clip<DT, NV>(x, d.max_norm, G, mask) : 1.0f);
    }
    write_row<DT, NQ>(d, bag, lane, G, acc, s);
}

/* The table whose run of blocks holds block @b (descs sorted by block0). */
__device__ __forceinline__ int find_table(const GpuDesc *descs, int n, int64_t b)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (descs[mid].block0 <= b)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

template <int NV>
__global__ void __launch_bounds__(GPU_THREADS, NV >= 8 ? 1 : NV >= 4 ? 2 : 3) lookup_kernel(const GpuDesc *descs, int n,
                                                             const GpuErr *err)
{
    if (gpu_failed(err))
        return;
    const int t = find_table(descs, n, blockIdx.x);
    const GpuDesc &d = descs[t]; /* fields read where used: fewer registers */
    const int G = d.G;
    const int64_t bag = (blockIdx.x - d.block0) * (GPU_THREADS / G) + threadIdx.x / G;
    if (bag >= d.nbags)
        return; /* whole groups leave together */
    const int lane = threadIdx.x & (G - 1);
    const unsigned mask = gpu_group_mask(G);
    GPU_DTYPE_SWITCH(d.dtype, (pool_bag<DT, NV>(d, bag, lane, G, mask)));
}

/* Sets each table's first block; returns the grid size. */
static int64_t plan_blocks(GpuDesc *descs, int64_t n)
{
    int64_t blocks = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t per = GPU_THREADS / descs[i].G;
        descs[i].block0 = blocks;
        blocks += (descs[i].nbags + per - 1) / per;
    }
    return blocks;
}

static int launch(EmbGpuWorkspace *ws, int64_t n, int nv, cudaStream_t s)
{
    const int64_t blocks = plan_blocks(ws->hdesc, n);
    int r = emb__gpu_validate(ws, n, s);
    if (r || blocks == 0)
        return r;
    if (blocks > 0x7fffffff)
        return emb__gpu_fail(EMB_ENOTSUP, "lookup of %lld blocks is above the grid limit",
                             (long long)blocks);
    const dim3 grid((unsigned)blocks);
    switch (nv) {
    case 1: GPU_LAUNCH(lookup_kernel<1>, grid, GPU_THREADS, s, ws->ddesc, (int)n, ws->derr); break;
    case 2: GPU_LAUNCH(lookup_kernel<2>, grid, GPU_THREADS, s, ws->ddesc, (int)n, ws->derr); break;
    case 4: GPU_LAUNCH(lookup_kernel<4>, grid, GPU_THREADS, s, ws->ddesc, (int)n, ws->derr); break;
    default: GPU_LAUNCH(lookup_kernel<8>, grid, GPU_THREADS, s, ws->ddesc, (int)n, ws->derr); break;
    }
    return emb__gpu_cuda(cudaGetLastError(), "lookup kernel");
}

/* Checks one output of nbags rows of D floats at stride. */
static int check_out(const float *out, int64_t nbags, int64_t stride, int32_t D, int64_t i)
{
    if (stride < D)
        return emb__gpu_fail(EMB_ESTRIDE, "output stride %lld < featuresize %d (table #%lld)",
                             (long long)stride, (int)D, (long long)i);
    if (nbags > 0 && !out)
        return emb__gpu_fail(EMB_ENULL, "output is NULL for %lld rows (table #%lld)",
                             (long long)nbags, (long long)i);
    int64_t span;
    if (nbags > 0 && (__builtin_mul_overflow(nbags - 1, stride, &span) ||
                      span > INT64_MAX / 4 - D))
        return emb__gpu_fail(EMB_EOVERFLOW, "output of %lld rows of stride %lld overflows "
                             "(table #%lld)", (long long)nbags, (long long)stride, (long long)i);
    return 0;
}

static void set_out(GpuDesc *d, float *out, int64_t stride)
{
    d->out = out;
    d->out_stride = stride;
    d->out_vec = d->D % 4 == 0 && stride % 4 == 0 && ((uintptr_t)out & 15) == 0;
}

static void set_label(EmbGpuWorkspace *ws, EmbGpuTable *const *tables, int64_t n)
{
    ws->label[0] = 0;
    size_t len = 0;
    for (int64_t i = 0; i < n && len + 2 < sizeof ws->label; i++) {
        const char *nm = tables[i]->name[0] ? tables[i]->name : "unnamed";
        const int w = snprintf(ws->label + len, sizeof ws->label - len, "%s%s",
                               i ? "," : "", nm);
        len += w > 0 ? (size_t)w : 0;
    }
}

/* Table i's output rows and stride; col = its first column in the concat layout. */
static float *out_of(const EmbOutputs *o, int64_t i, int64_t col, int32_t D, int64_t *stride)
{
    *stride = o->concat ? o->concat_stride : o->strides ? o->strides[i] : D;
    return o->concat ? o->concat + col : o->per_table[i];
}

/* Every host-side check of a maplookup, before any CUDA call; *nv: the launch's NV. */
static int check_call(EmbGpuTable *const *tables, int64_t n, const EmbBatch *batches,
                      const EmbPooling *poolings, const EmbOutputs *outputs, int *nv)
{
    if (!outputs->concat && !outputs->per_table)
        return emb__gpu_fail(EMB_ENULL, "outputs: neither concat nor per_table is given");
    if (outputs->concat && outputs->prependrows < 0)
        return emb__gpu_fail(EMB_ESHAPE, "prependrows %lld < 0", (long long)outputs->prependrows);
    int64_t width = outputs->prependrows;
    *nv = 1;
    for (int64_t i = 0; i < n; i++) {
        const int r = emb__gpu_batch_check(tables[i], &batches[i], poolings ? &poolings[i] : NULL, i);
        if (r)
            return r;
        const int nvi = emb__gpu_nv(tables[i]->featuresize, emb__gpu_chunk((int)tables[i]->dtype));
        *nv = nvi > *nv ? nvi : *nv;
        if (outputs->concat && batches[i].nbags != batches[0].nbags)
            return emb__gpu_fail(EMB_ESHAPE, "concat output: table #%lld has %lld bags, "
                                 "table #0 %lld", (long long)i, (long long)batches[i].nbags,
                                 (long long)batches[0].nbags);
        width += tables[i]->featuresize;
    }
    if (outputs->concat && outputs->concat_stride < width)
        return emb__gpu_fail(EMB_ESHAPE, "concat_stride %lld < prependrows + sum of feature "
                             "sizes %lld", (long long)outputs->concat_stride, (long long)width);
    for (int64_t i = 0, col = outputs->prependrows; i < n; col += tables[i]->featuresize, i++) {
        int64_t st;
        float *o = out_of(outputs, i, col, tables[i]->featuresize, &st);
        const int r = check_out(o, batches[i].nbags, st, tables[i]->featuresize, i);
        if (r)
            return r;
    }
    return 0;
}

int emb_gpu_maplookup(EmbGpuTable *const *tables, int64_t ntables, const EmbBatch *batches,
                      const EmbPooling *poolings, const EmbOutputs *outputs, unsigned flags,
                      EmbGpuWorkspace *ws, void *stream)
{
    GPU_CHECK_NULL(tables);
    GPU_CHECK_NULL(batches);
    GPU_CHECK_NULL(outputs);
    GPU_CHECK_NULL(ws);
    GPU_CHECK_FLAGS(flags);
    if (ntables <= 0 || ntables > GPU_MAX_TABLES)
        return emb__gpu_fail(EMB_EINVAL, "ntables %lld is not in 1..%d", (long long)ntables,
                             GPU_MAX_TABLES);
    int nv = 1;
    int r = check_call(tables, ntables, batches, poolings, outputs, &nv);
    if (r || (r = emb__gpu_descs(ws, ntables)))
        return r;
    for (int64_t i = 0, col = outputs->prependrows; i < ntables; col += tables[i]->featuresize, i++) {
        int64_t st;
        float *o = out_of(outputs, i, col, tables[i]->featuresize, &st);
        emb__gpu_desc_fill(&ws->hdesc[i], tables[i], &batches[i], poolings ? &poolings[i] : NULL);
        set_out(&ws->hdesc[i], o, st);
    }
    set_label(ws, tables, ntables);
    const cudaStream_t s = (cudaStream_t)stream;
    r = launch(ws, ntables, nv, s);
    return r ? r : emb__gpu_finish(ws, flags, s);
}

int emb_gpu_lookup(const EmbGpuTable *table, const EmbBatch *batch, const EmbPooling *pooling,
                   float *out, int64_t out_stride, unsigned flags, EmbGpuWorkspace *ws,
                   void *stream)
{
    GPU_CHECK_NULL(table);
    float *const per[1] = {out};
    const int64_t strides[1] = {out_stride};
    const EmbOutputs o = {per, strides, NULL, 0, 0};
    EmbGpuTable *const t[1] = {(EmbGpuTable *)table};
    return emb_gpu_maplookup(t, 1, batch, pooling, &o, flags, ws, stream);
}
