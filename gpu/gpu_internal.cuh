/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gpu_internal.cuh — what the CUDA back end's files share: the device objects, the
 * per-table launch descriptor, the device error record, element loads and stores for
 * each dtype, and group (sub-warp) reductions. Private: never installed.
 *
 * Work is done by *groups* of G lanes (G a power of two <= 32): a group owns one bag (the
 * forward) or one distinct row (the backward); each lane holds NV chunks of the row,
 * columns (v * G + lane) * CW .. + CW - 1. The forward loads 16 bytes per chunk (CW = 4
 * f32 or 8 f16 / bf16 elements), the backward 4 elements (CW = 4) whatever the dtype. Rows
 * of device tables are padded to 16 bytes (zeros), so every chunk load is in bounds and
 * aligned. GpuDesc::G is the forward's group size; the backward sets its own.
 */
#ifndef EMB_GPU_INTERNAL_CUH
#define EMB_GPU_INTERNAL_CUH

#include <stdint.h>
#include <string.h>

#ifdef EMB_GPU_EMU /* the host emulation of the device (gpu/emu/), for tests without a GPU */
#include "emu/emu_device.h"
#define GPU_LAUNCH(kernel, grid, block, stream, ...)                                       \
    emu_launch(dim3(grid), dim3(block), [=]() { kernel(__VA_ARGS__); })
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#define GPU_LAUNCH(kernel, grid, block, stream, ...)                                       \
    kernel<<<(grid), (block), 0, (stream)>>>(__VA_ARGS__)
#endif

#include "batch_rules.h" /* the batch rules every back end shares (src/) */
#include "embtables/gpu.h"

#define GPU_THREADS 256
#define GPU_NOERR 0xffffffffffffffffull
#define GPU_POS_BITS 40
#define GPU_MAX_POS ((int64_t)1 << GPU_POS_BITS)
#define GPU_MAX_TABLES 65535

struct EmbGpuTable {
    int64_t ncolumns;
    int32_t featuresize;
    EmbDtype dtype;
    int64_t stride;   /* elements, featuresize rounded up to 4 */
    void *data;
    char name[EMB_NAME_MAX + 1];
    int opt_kind;     /* -1: no optimizer state yet */
    float *state0;    /* row-wise Adagrad: ncolumns; Adam: first moments (stride) */
    float *state1;    /* Adam: second moments */
    int64_t *step;    /* Adam: updates applied (device) */
    uint64_t seed;    /* stochastic rounding: emb_gpu_table_set_seed() */
    uint64_t calls;   /* backward calls since the seed was set */
};

/*
 * The device error record of a workspace. key == GPU_NOERR: no error; else
 * (table << 41) | (kind << 40) | position, kind 0 = offsets, 1 = id, so that atomicMin
 * keeps the error the CPU library would report first. The validation kernel collects the
 * call's error in `cur` (reset before each call); the describe kernel moves it to `key`
 * when no older error is held (sticky) and fills the values (`described` = 1).
 */
typedef struct GpuErr {
    unsigned long long key;
    unsigned long long cur;
    int64_t v0, v1;   /* the id (v0), or offsets[pos - 1] and offsets[pos] */
    int64_t limit;    /* ncolumns, or nnz for offsets */
    int32_t described;
    int32_t pad;
} GpuErr;

enum { ERR_OFFSETS = 0, ERR_ID = 1 };

/* One table's part of a launch (copied to the device). */
typedef struct GpuDesc {
    const void *data;   /* table rows */
    int64_t ncolumns, stride;
    int32_t D, dtype;
    const void *ids;
    const int64_t *offsets;
    const float *weights;
    int64_t nnz, nbags, bag_size, default_id;
    int32_t id32, combiner;
    uint32_t flags;
    float max_norm;
    float *out;
    int64_t out_stride;
    int32_t out_vec;    /* out rows 16-byte aligned and D % 4 == 0 */
    int32_t G;          /* lanes per group */
    int64_t block0;     /* first block of this table in the forward grid */
} GpuDesc;

struct EmbGpuWorkspace {
    GpuErr *derr;       /* device record */
    GpuErr *herr;       /* pinned copy, written after every call */
    cudaEvent_t done;   /* after the copy of the record */
    bool used;
    GpuDesc *hdesc, *ddesc;
    int64_t desc_cap;
    cudaEvent_t desc_done; /* after the upload of hdesc */
    void *scratch;
    size_t scratch_size;
    char label[96];     /* names of the last call's tables, for messages */
};

/* ---- host helpers (gpu_core.cu) ------------------------------------------------------ */

/* One error channel: the core's (emb_set_error(), read with emb_last_error()). */
#define emb__gpu_fail(code, ...) emb_set_error((code), __VA_ARGS__)
/* EMB_EDEVICE with the CUDA error's name, or 0 for cudaSuccess. */
int emb__gpu_cuda(cudaError_t e, const char *what);
#define GPU_TRY(call)                                                                      \
    do {                                                                                   \
        int r_ = emb__gpu_cuda((call), #call);                                             \
        if (r_)                                                                            \
            return r_;                                                                     \
    } while (0)
#define GPU_CHECK_NULL(p)                                                                  \
    do {                                                                                   \
        if (!(p))                                                                          \
            return emb__gpu_fail(EMB_ENULL, "%s: argument '%s' is NULL", __func__, #p);    \
    } while (0)

/* Fails with EMB_EINVAL when @flags has bits other than the EMB_GPU_* flags. */
#define GPU_CHECK_FLAGS(flags)                                                             \
    do {                                                                                   \
        if ((flags) & ~(unsigned)(EMB_GPU_DEFER_CHECK | EMB_GPU_STOCHASTIC_ROUNDING))      \
            return emb__gpu_fail(EMB_EINVAL, "%s: flags 0x%x have unknown bits", __func__, \
                                 (unsigned)(flags));                                       \
    } while (0)

/* Grows the workspace's scratch to @bytes (waits for the device first when it must). */
int emb__gpu_scratch(EmbGpuWorkspace *ws, size_t bytes);
/* Grows the pinned and device descriptor arrays to @n (waits for the last upload). */
int emb__gpu_descs(EmbGpuWorkspace *ws, int64_t n);
/* Checks a batch's host-visible shape and pooling against a table (no device reads). */
int emb__gpu_batch_check(const EmbGpuTable *t, const EmbBatch *b, const EmbPooling *p,
                         int64_t index);
/* Fills @d for table @t, batch @b, pooling @p (NULL: SUM); output fields left zero. */
void emb__gpu_desc_fill(GpuDesc *d, const EmbGpuTable *t, const EmbBatch *b,
                        const EmbPooling *p);
/* Uploads ws->hdesc[0..n) and launches the validation and describe kernels. */
int emb__gpu_validate(EmbGpuWorkspace *ws, int64_t n, cudaStream_t s);
/* Copies the record back; unless deferred, waits and returns the error it holds. */
int emb__gpu_finish(EmbGpuWorkspace *ws, unsigned flags, cudaStream_t s);
/* Elements per lane chunk (one 16-byte load) of a dtype: 4 (f32) or 8 (f16, bf16). */
int emb__gpu_chunk(int dtype);
/* Lanes per group for feature size D when each lane holds at most nv chunks of cw. */
int emb__gpu_group(int32_t D, int nv, int cw);
/* Chunks of cw elements per lane (1, 2, 4, 8) a launch needs for feature size D. */
int emb__gpu_nv(int32_t D, int cw);

/* ---- device helpers ------------------------------------------------------------------ */

__device__ __forceinline__ bool gpu_failed(const GpuErr *e)
{
    return *(volatile const unsigned long long *)&e->key != GPU_NOERR;
}

__device__ __forceinline__ int64_t gpu_id(const void *ids, int32_t id32, int64_t k)
{
    return id32 ? (int64_t)__ldg((const int32_t *)ids + k) : __ldg((const long long *)ids + k);
}

__device__ __forceinline__ int64_t gpu_bag_start(const GpuDesc &d, int64_t bag)
{
    return d.offsets ? __ldg((const long long *)d.offsets + bag) : bag * d.bag_size;
}

__device__ __forceinline__ int64_t gpu_bag_end(const GpuDesc &d, int64_t bag)
{
    return d.offsets ? __ldg((const long long *)d.offsets + bag + 1) : (bag + 1) * d.bag_size;
}

/* Whether entry k (id, weight w) is pruned by the pooling. */
__device__ __forceinline__ bool gpu_pruned(const GpuDesc &d, int64_t id, float w)
{
    return emb_rule_pruned(d.flags, id, d.weights ? &w : nullptr, 0); /* w: loaded by __ldg */
}

__device__ __forceinline__ float gpu_combiner_scale(int32_t combiner, double sw, double sw2)
{
    return emb_rule_combiner_factor(combiner, sw, sw2);
}

/* The bits of @v as a To (memcpy: no aliasing trouble on the host emulation either). */
template <class To, class From> __device__ __forceinline__ To gpu_bitcast(const From &v)
{
    static_assert(sizeof(To) == sizeof(From), "same size");
    To r;
    memcpy(&r, &v, sizeof r);
    return r;
}

/* 4 elements at p (aligned to 4 elements) as floats. */
template <int DT> __device__ __forceinline__ float4 gpu_load4(const void *p);
template <> __device__ __forceinline__ float4 gpu_load4<EMB_F32>(const void *p)
{
    return __ldg((const float4 *)p);
}
template <> __device__ __forceinline__ float4 gpu_load4<EMB_F16>(const void *p)
{
    const uint2 u = __ldg((const uint2 *)p);
    const float2 a = __half22float2(gpu_bitcast<__half2>(u.x));
    const float2 b = __half22float2(gpu_bitcast<__half2>(u.y));
    return make_float4(a.x, a.y, b.x, b.y);
}
template <> __device__ __forceinline__ float4 gpu_load4<EMB_BF16>(const void *p)
{
    const uint2 u = __ldg((const uint2 *)p);
    return make_float4(__uint_as_float(u.x << 16), __uint_as_float(u.x & 0xffff0000u),
                       __uint_as_float(u.y << 16), __uint_as_float(u.y & 0xffff0000u));
}

/* The elements of a raw 16-byte chunk as floats: 4 f32, or 8 f16 / bf16 (two float4s). */
template <int DT> __device__ __forceinline__ void gpu_unpack(uint4 u, float4 (&q)[DT == EMB_F32 ? 1 : 2]);
template <> __device__ __forceinline__ void gpu_unpack<EMB_F32>(uint4 u, float4 (&q)[1])
{
    q[0] = make_float4(__uint_as_float(u.x), __uint_as_float(u.y), __uint_as_float(u.z),
                       __uint_as_float(u.w));
}
template <> __device__ __forceinline__ void gpu_unpack<EMB_F16>(uint4 u, float4 (&q)[2])
{
    const float2 a = __half22float2(gpu_bitcast<__half2>(u.x));
    const float2 b = __half22float2(gpu_bitcast<__half2>(u.y));
    const float2 c = __half22float2(gpu_bitcast<__half2>(u.z));
    const float2 e = __half22float2(gpu_bitcast<__half2>(u.w));
    q[0] = make_float4(a.x, a.y, b.x, b.y);
    q[1] = make_float4(c.x, c.y, e.x, e.y);
}
template <> __device__ __forceinline__ void gpu_unpack<EMB_BF16>(uint4 u, float4 (&q)[2])
{
    q[0] = make_float4(__uint_as_float(u.x << 16), __uint_as_float(u.x & 0xffff0000u),
                       __uint_as_float(u.y << 16), __uint_as_float(u.y & 0xffff0000u));
    q[1] = make_float4(__uint_as_float(u.z << 16), __uint_as_float(u.z & 0xffff0000u),
                       __uint_as_float(u.w << 16), __uint_as_float(u.w & 0xffff0000u));
}

/* The same, through the coherent path (rows the same launch writes elsewhere). */
template <int DT> __device__ __forceinline__ float4 gpu_load4_rw(const void *p);
template <> __device__ __forceinline__ float4 gpu_load4_rw<EMB_F32>(const void *p)
{
    return *(const float4 *)p;
}
template <> __device__ __forceinline__ float4 gpu_load4_rw<EMB_F16>(const void *p)
{
    const uint2 u = *(const uint2 *)p;
    const float2 a = __half22float2(gpu_bitcast<__half2>(u.x));
    const float2 b = __half22float2(gpu_bitcast<__half2>(u.y));
    return make_float4(a.x, a.y, b.x, b.y);
}
template <> __device__ __forceinline__ float4 gpu_load4_rw<EMB_BF16>(const void *p)
{
    const uint2 u = *(const uint2 *)p;
    return make_float4(__uint_as_float(u.x << 16), __uint_as_float(u.x & 0xffff0000u),
                       __uint_as_float(u.y << 16), __uint_as_float(u.y & 0xffff0000u));
}

/* Stores 4 floats at p in the table's dtype, rounding to nearest even. */
template <int DT> __device__ __forceinline__ void gpu_store4(void *p, float4 v);
template <> __device__ __forceinline__ void gpu_store4<EMB_F32>(void *p, float4 v)
{
    *(float4 *)p = v;
}
template <> __device__ __forceinline__ void gpu_store4<EMB_F16>(void *p, float4 v)
{
    __half2 a = __floats2half2_rn(v.x, v.y), b = __floats2half2_rn(v.z, v.w);
    uint2 u;
    u.x = gpu_bitcast<uint32_t>(a);
    u.y = gpu_bitcast<uint32_t>(b);
    *(uint2 *)p = u;
}
template <> __device__ __forceinline__ void gpu_store4<EMB_BF16>(void *p, float4 v)
{
    __nv_bfloat162 a = __floats2bfloat162_rn(v.x, v.y), b = __floats2bfloat162_rn(v.z, v.w);
    uint2 u;
    u.x = gpu_bitcast<uint32_t>(a);
    u.y = gpu_bitcast<uint32_t>(b);
    *(uint2 *)p = u;
}

/* v rounded to the table's dtype (nearest even) and read back, as a store and a load. */
template <int DT> __device__ __forceinline__ float4 gpu_round4(float4 v)
{
    if (DT == EMB_F32)
        return v;
    uint4 u; /* 16 bytes: room for any dtype's 4 elements */
    gpu_store4<DT>(&u, v);
    return gpu_load4_rw<DT>(&u);
}

/* splitmix64's finaliser: the counter-based hash of stochastic rounding. */
__host__ __device__ __forceinline__ uint64_t gpu_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* x to bf16 bits, rounded up in magnitude with probability (cut-off bits) / 2^16 given 16
   uniform random bits r: the random bits added below the kept ones carry into them exactly
   that often. Inf and NaN are kept (NaN stays a NaN). */
__device__ __forceinline__ uint32_t gpu_bf16_sr(float x, uint32_t r)
{
    const uint32_t u = gpu_bitcast<uint32_t>(x);
    if ((u & 0x7f800000u) == 0x7f800000u)
        return (u >> 16) | ((u & 0xffffu) ? 0x40u : 0u);
    return (u + (r & 0xffffu)) >> 16;
}

/* The stochastic rounding's draw @counter of row @id: src/rng.h's emb__rng_u64(seed, id,
   counter), as the CPU's update draws it (src/sround.h): the same bits on both. */
__host__ __device__ __forceinline__ uint64_t gpu_sr_draw(uint64_t seed, uint64_t id,
                                                         uint64_t counter)
{
    const uint64_t h = gpu_mix64(seed + 0x9e3779b97f4a7c15ull * (id + 1));
    return gpu_mix64(h ^ (counter * 0xd1b54a32d192ed03ull + 0x8cb92ba72f3d8dd7ull));
}

/* Stores 4 floats at p as bf16 with stochastic rounding, 16 random bits each from h. */
__device__ __forceinline__ void gpu_store4_bf16_sr(void *p, float4 v, uint64_t h)
{
    uint2 u;
    u.x = gpu_bf16_sr(v.x, (uint32_t)h) | gpu_bf16_sr(v.y, (uint32_t)(h >> 16)) << 16;
    u.y = gpu_bf16_sr(v.z, (uint32_t)(h >> 32)) | gpu_bf16_sr(v.w, (uint32_t)(h >> 48)) << 16;
    *(uint2 *)p = u;
}

template <int DT> __device__ __forceinline__ size_t gpu_elsize()
{
    return DT == EMB_F32 ? 4 : 2;
}

/* Mask of the lanes of this thread's group of G lanes within its warp. */
__device__ __forceinline__ unsigned gpu_group_mask(int G)
{
    if (G == 32)
        return 0xffffffffu;
    const unsigned lane = threadIdx.x & 31u;
    return ((1u << G) - 1u) << (lane & ~(unsigned)(G - 1));
}

/* Sum over the G lanes of a group (the same result in every lane, fixed order). */
__device__ __forceinline__ float gpu_group_sum(float x, int G, unsigned mask)
{
    for (int o = G >> 1; o > 0; o >>= 1)
        x += __shfl_xor_sync(mask, x, o, G);
    return x;
}

__device__ __forceinline__ float gpu_dot4(float4 a, float4 b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}

__device__ __forceinline__ float4 gpu_fma4(float s, float4 x, float4 acc)
{
    return make_float4(fmaf(s, x.x, acc.x), fmaf(s, x.y, acc.y), fmaf(s, x.z, acc.z),
                       fmaf(s, x.w, acc.w));
}

__device__ __forceinline__ float4 gpu_scale4(float s, float4 x)
{
    return make_float4(s * x.x, s * x.y, s * x.z, s * x.w);
}

/* Dispatch a templated call on a runtime dtype. */
#define GPU_DTYPE_SWITCH(dt, CALL)                                                         \
    switch (dt) {                                                                          \
    case EMB_F16: { constexpr int DT = EMB_F16; CALL; } break;                            \
    case EMB_BF16: { constexpr int DT = EMB_BF16; CALL; } break;                          \
    default: { constexpr int DT = EMB_F32; CALL; } break;                                 \
    }

#endif
