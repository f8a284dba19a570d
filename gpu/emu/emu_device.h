/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emu_device.h — a host emulation of the device side the CUDA back end uses, so that the
 * real kernels of the gpu_*.cu files run (compiled as C++ with -DEMB_GPU_EMU) in the test without a
 * GPU. A launch runs its blocks one after another and each block's warps one after
 * another; the 32 lanes of a warp run on 32 host threads, so warp-synchronous code
 * (shuffles, ballots, __syncwarp with sub-warp masks) really synchronises: a lane that
 * misses a shuffle of its mask is reported as a deadlock. No shared memory or
 * __syncthreads (the kernels use none). CUB's device algorithms are replaced by host
 * algorithms with the same results (stable radix sort = stable sort on the key bits).
 */
#ifndef EMB_EMU_DEVICE_H
#define EMB_EMU_DEVICE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <vector>

#include "cuda_runtime.h"
#include "dtype.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct EmuIdx {
    unsigned x, y, z;
};
extern thread_local EmuIdx threadIdx, blockIdx;
extern EmuIdx blockDim, gridDim;

struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) float2 { float x, y; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct __half2 { uint16_t x, y; };
struct __nv_bfloat162 { uint16_t x, y; };

static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static inline float2 make_float2(float x, float y) { return {x, y}; }
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
static inline float __uint_as_float(unsigned u) { return emb__u32_as_f32(u); }
static inline float2 __half22float2(__half2 h)
{
    return {emb__f16_to_f32(h.x), emb__f16_to_f32(h.y)};
}
static inline __half2 __floats2half2_rn(float a, float b)
{
    return {emb__f32_to_f16(a), emb__f32_to_f16(b)};
}
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b)
{
    return {emb__f32_to_bf16(a), emb__f32_to_bf16(b)};
}
template <class T> static inline T __ldg(const T *p) { return *p; }
template <class T> static inline void __stcs(T *p, T v) { *p = v; }
static inline int __ffs(unsigned x) { return x ? __builtin_ctz(x) + 1 : 0; }
static inline uint32_t min(uint32_t a, uint32_t b) { return a < b ? a : b; }
static inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v)
{
    unsigned long long old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED)) {
    }
    return old;
}

/* warp synchronisation (emu_runtime.cpp) */
uint64_t emu_exchange(unsigned mask, uint64_t v, unsigned src_lane);
unsigned emu_ballot(unsigned mask, int pred);
void emu_syncwarp(unsigned mask);
void emu_launch(dim3 grid, dim3 block, const std::function<void()> &body);

template <class T> static inline T emu_shfl_abs(unsigned mask, T v, unsigned src)
{
    static_assert(sizeof(T) <= 8, "shuffle of at most 8 bytes");
    uint64_t u = 0;
    memcpy(&u, &v, sizeof v);
    u = emu_exchange(mask, u, src);
    T r;
    memcpy(&r, &u, sizeof r);
    return r;
}
template <class T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32)
{
    const unsigned lane = threadIdx.x & 31u;
    return emu_shfl_abs(mask, v, (lane & ~(unsigned)(width - 1)) + ((unsigned)src & (width - 1)));
}
template <class T> static inline T __shfl_xor_sync(unsigned mask, T v, int o, int width = 32)
{
    const unsigned lane = threadIdx.x & 31u;
    const unsigned base = lane & ~(unsigned)(width - 1);
    return emu_shfl_abs(mask, v, base + ((lane - base) ^ (unsigned)o) % (unsigned)width);
}
static inline unsigned __ballot_sync(unsigned mask, int pred) { return emu_ballot(mask, pred); }
static inline void __syncwarp(unsigned mask = 0xffffffffu) { emu_syncwarp(mask); }

/* CUB's device algorithms, on the host, with CUB's results. */
namespace cub {
struct DeviceRadixSort {
    template <class K, class V>
    static cudaError_t SortPairs(void *tmp, size_t &bytes, const K *kin, K *kout, const V *vin,
                                 V *vout, int n, int begin_bit = 0, int end_bit = 8 * sizeof(K),
                                 cudaStream_t = 0)
    {
        if (!tmp) {
            bytes = 16;
            return cudaSuccess;
        }
        const K m = end_bit >= 8 * (int)sizeof(K) ? (K)~(K)0 : (K)(((K)1 << end_bit) - 1);
        std::vector<int> idx((size_t)n);
        std::iota(idx.begin(), idx.end(), 0);
        std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) {
            return ((kin[a] & m) >> begin_bit) < ((kin[b] & m) >> begin_bit);
        });
        std::vector<K> k2((size_t)n);
        std::vector<V> v2((size_t)n);
        for (int i = 0; i < n; i++) {
            k2[(size_t)i] = kin[idx[(size_t)i]];
            v2[(size_t)i] = vin[idx[(size_t)i]];
        }
        std::copy(k2.begin(), k2.end(), kout);
        std::copy(v2.begin(), v2.end(), vout);
        return cudaSuccess;
    }
};
struct DeviceRunLengthEncode {
    template <class T, class C, class N>
    static cudaError_t Encode(void *tmp, size_t &bytes, const T *in, T *unique, C *counts,
                              N *nruns, int n, cudaStream_t = 0)
    {
        if (!tmp) {
            bytes = 16;
            return cudaSuccess;
        }
        N r = 0;
        for (int i = 0; i < n; i++) {
            if (i == 0 || in[i] != in[i - 1]) {
                unique[r] = in[i];
                counts[r++] = 0;
            }
            counts[r - 1]++;
        }
        *nruns = r;
        return cudaSuccess;
    }
};
struct DeviceScan {
    template <class T>
    static cudaError_t ExclusiveSum(void *tmp, size_t &bytes, const T *in, T *out, int n,
                                    cudaStream_t = 0)
    {
        if (!tmp) {
            bytes = 16;
            return cudaSuccess;
        }
        T acc = 0;
        for (int i = 0; i < n; i++) {
            const T x = in[i];
            out[i] = acc;
            acc += x;
        }
        return cudaSuccess;
    }
};
} // namespace cub

#endif
