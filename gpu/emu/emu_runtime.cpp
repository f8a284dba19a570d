/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emu_runtime.cpp — the host emulation behind emu/cuda_runtime.h and emu/emu_device.h:
 * runtime calls on host memory, and kernel launches warp by warp, the 32 lanes of a warp
 * run as coroutines (ucontext) on the calling thread. A lane runs until it reaches a warp
 * operation (shuffle, ballot, __syncwarp) and waits there until every lane of the
 * operation's mask has arrived; no runnable lane while some wait is a deadlock (a lane of
 * the mask left early), reported and aborted. Deterministic, single-threaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "emu_device.h"

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif
#ifdef EMU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

thread_local EmuIdx threadIdx, blockIdx;
EmuIdx blockDim, gridDim;

namespace {

constexpr size_t STACK = 256 << 10;

struct Lane {
    ucontext_t ctx;
    char *stack;
    bool done, waiting;
    unsigned mask;
    void *fake; /* ASan's fake stack of this lane while it is switched out */
    bool started;
    void *jb[5];
};

struct Warp {
    ucontext_t sched;
    Lane lane[32];
    int cur = -1;
    unsigned base = 0; /* threadIdx.x of lane 0 */
    EmuIdx block{};
    const std::function<void()> *job = nullptr;
    struct Arrival {
        unsigned mask;
        int count;
    } arrived[32]; /* lanes waiting per mask of a warp operation in progress */
    int narrived = 0;
    uint64_t slot[2][32]; /* exchange buffers, alternating (see emu_exchange) */
    unsigned gen[32];     /* exchanges each lane has made */
    void *sched_jb[5];
    void *sched_fake = nullptr;
    const void *main_bottom = nullptr; /* the scheduler's stack, for ASan */
    size_t main_size = 0;
};

Warp W;

/*
 * Fiber switches: swapcontext once to start a lane (its stack set up by makecontext), then
 * __builtin_setjmp / __builtin_longjmp both ways (no signal-mask system calls); lanes live
 * for the whole process and run one job per warp. Annotated for AddressSanitizer.
 */
void lane_entry(int i);

/* __builtin_longjmp may not share a function with __builtin_setjmp. */
__attribute__((noinline, noreturn)) void jump(void **jb)
{
    __builtin_longjmp(jb, 1);
}

void sched_to_lane(int i)
{
    Lane &l = W.lane[i];
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(&W.sched_fake, l.stack, STACK);
#endif
    if (__builtin_setjmp(W.sched_jb) == 0) {
        if (!l.started) {
            l.started = true;
            swapcontext(&W.sched, &l.ctx);
        } else {
            jump(l.jb);
        }
    }
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(W.sched_fake, nullptr, nullptr);
#endif
}

void lane_to_sched(int i)
{
    Lane &l = W.lane[i];
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(&l.fake, W.main_bottom, W.main_size);
#endif
    if (__builtin_setjmp(l.jb) == 0)
        jump(W.sched_jb);
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(l.fake, &W.main_bottom, &W.main_size);
#endif
}

void lane_entry(int i)
{
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &W.main_bottom, &W.main_size);
#endif
    for (;;) {
        (*W.job)();
        W.lane[i].done = true;
        lane_to_sched(i);
    }
}

void enter(int i)
{
    W.cur = i;
    threadIdx = {W.base + (unsigned)i, 0, 0};
    blockIdx = W.block;
    sched_to_lane(i);
}

/* First use of lane i: its stack and context (getcontext returns twice: kept apart). */
__attribute__((noinline)) void make_lane(int i)
{
    Lane &l = W.lane[i];
    if (!(l.stack = (char *)malloc(STACK))) {
        fprintf(stderr, "emu: out of memory for lane stacks\n");
        abort();
    }
    getcontext(&l.ctx);
    l.ctx.uc_stack.ss_sp = l.stack;
    l.ctx.uc_stack.ss_size = STACK;
    l.ctx.uc_link = nullptr;
    makecontext(&l.ctx, (void (*)())lane_entry, 1, i);
}

void run_warp(const std::function<void()> &body, EmuIdx b, unsigned w, int n)
{
    W.job = &body;
    W.block = b;
    W.base = w * 32;
    W.narrived = 0;
    memset(W.gen, 0, sizeof W.gen);
    for (int i = 0; i < n; i++) {
        Lane &l = W.lane[i];
        if (!l.stack)
            make_lane(i);
        l.done = l.waiting = false;
    }
    for (;;) {
        bool ran = false, all_done = true;
        for (int i = 0; i < n; i++) {
            if (W.lane[i].done)
                continue;
            all_done = false;
            if (!W.lane[i].waiting) {
                enter(i);
                ran = true;
            }
        }
        if (all_done)
            return;
        if (!ran) {
            for (int i = 0; i < n; i++)
                if (W.lane[i].waiting)
                    fprintf(stderr, "emu: deadlock: thread %u of block %u waits on mask "
                            "0x%08x whose other lanes never arrive\n", W.base + i, b.x,
                            W.lane[i].mask);
            abort();
        }
    }
}

} // namespace

void emu_syncwarp(unsigned mask)
{
    const int i = W.cur;
    if (!(mask >> i & 1u)) {
        fprintf(stderr, "emu: lane %d is not in the mask 0x%08x of its warp operation\n", i, mask);
        abort();
    }
    int a = 0;
    while (a < W.narrived && W.arrived[a].mask != mask)
        a++;
    if (a == W.narrived)
        W.arrived[W.narrived++] = {mask, 0};
    if (++W.arrived[a].count == __builtin_popcount(mask)) { /* the last lane: release all */
        W.arrived[a] = W.arrived[--W.narrived];
        for (int k = 0; k < 32; k++)
            if (W.lane[k].waiting && W.lane[k].mask == mask)
                W.lane[k].waiting = false;
        return;
    }
    W.lane[i].waiting = true;
    W.lane[i].mask = mask;
    lane_to_sched(i);
    W.cur = i;
}

/*
 * One barrier per exchange: exchange k of a lane writes and reads buffer k % 2. A lane
 * writes that buffer again only at exchange k + 2, after the barrier of k + 1, which every
 * lane of the mask reaches only after its read of k: no read sees a later write.
 */
uint64_t emu_exchange(unsigned mask, uint64_t v, unsigned src)
{
    uint64_t *buf = W.slot[W.gen[W.cur]++ & 1u];
    buf[W.cur] = v;
    emu_syncwarp(mask);
    return buf[src & 31u];
}

unsigned emu_ballot(unsigned mask, int pred)
{
    uint64_t *buf = W.slot[W.gen[W.cur]++ & 1u];
    buf[W.cur] = pred != 0;
    emu_syncwarp(mask);
    unsigned bits = 0;
    for (unsigned i = 0; i < 32; i++)
        bits |= (mask >> i & 1u) && buf[i] ? 1u << i : 0u;
    return bits;
}

void emu_launch(dim3 grid, dim3 block, const std::function<void()> &body)
{
    gridDim = {grid.x, grid.y, grid.z};
    blockDim = {block.x, block.y, block.z};
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++)
                for (unsigned w = 0; w * 32 < block.x; w++)
                    run_warp(body, EmuIdx{x, y, z}, w,
                             (int)(block.x - w * 32 < 32 ? block.x - w * 32 : 32));
}

/* ---- the runtime API ------------------------------------------------------------------ */

extern "C" {

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = getenv("EMB_EMU_NODEV") ? 0 : 1;
    return *count ? cudaSuccess : cudaErrorNoDevice;
}
cudaError_t cudaGetDevice(int *device) { *device = 0; return cudaSuccess; }
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int)
{
    *value = attr == cudaDevAttrMultiProcessorCount ? 1 : 0;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "embtables host emulation");
    p->multiProcessorCount = 1;
    return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int *v) { *v = 0; return cudaSuccess; }
cudaError_t cudaRuntimeGetVersion(int *v) { *v = 0; return cudaSuccess; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char *cudaGetErrorName(cudaError_t e) { return e ? "cudaErrorEmulated" : "cudaSuccess"; }
const char *cudaGetErrorString(cudaError_t e) { return e ? "emulated error" : "no error"; }

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    *p = aligned_alloc(256, (bytes + 255) & ~(size_t)255);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaMallocHost(void **p, size_t bytes) { return cudaMalloc(p, bytes); }
cudaError_t cudaFree(void *p) { free(p); return cudaSuccess; }
cudaError_t cudaFreeHost(void *p) { free(p); return cudaSuccess; }
cudaError_t cudaMemset(void *p, int value, size_t bytes)
{
    memset(p, value, bytes);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t)
{
    return cudaMemset(p, value, bytes);
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind)
{
    memmove(dst, src, bytes);
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind k,
                            cudaStream_t)
{
    return cudaMemcpy(dst, src, bytes, k);
}
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind, cudaStream_t)
{
    if (width > dpitch || width > spitch)
        return cudaErrorInvalidValue;
    for (size_t r = 0; r < height; r++)
        memcpy((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    *e = (cudaEvent_t)malloc(1);
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) { return cudaEventCreate(e); }
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t, cudaEvent_t)
{
    *ms = 1.0f;
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) { free(e); return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

} /* extern "C" */
