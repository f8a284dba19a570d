/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gpu_batch.cu — validation of GPU batches: the host checks what the host can see (sizes,
 * enums, pointers, default_id), a validation kernel checks what lives on the device (ids
 * in range unless pruned, offsets starting at 0, monotone, ending at nnz) and records the
 * first error in the workspace's record; a one-thread kernel then reads the culprit's
 * values for the message. Kernels that write check the record first and exit on an error,
 * so a failed call writes nothing. The checks and their order are the CPU library's
 * (src/lookup/batch.c).
 */
#include <math.h>
#include <string.h>

#include "gpu_internal.cuh"

static const EmbPooling pooling_sum = {EMB_COMBINER_SUM, 0.0f, 0, 0};

/* The shape rule (batch_rules.h), then the device's limit on positions. */
static int check_shape(const EmbBatch *b, const EmbPooling *p, int64_t i)
{
    char msg[160];
    const int r = emb_rule_check_shape(b, p, msg, sizeof msg);
    if (r)
        return emb__gpu_fail(r, "%s (table #%lld)", msg, (long long)i);
    if (p->combiner == EMB_COMBINER_MAX)
        return emb__gpu_fail(EMB_ENOTSUP, "combiner MAX (table #%lld) has no GPU kernel: "
                             "pool on the CPU library", (long long)i);
    if (b->nnz >= GPU_MAX_POS || b->nbags >= GPU_MAX_POS)
        return emb__gpu_fail(EMB_ENOTSUP, "batch of table #%lld: nnz %lld / nbags %lld "
                             "above the GPU limit 2^40", (long long)i, (long long)b->nnz,
                             (long long)b->nbags);
    return 0;
}

int emb__gpu_batch_check(const EmbGpuTable *t, const EmbBatch *b, const EmbPooling *p,
                         int64_t i)
{
    if (!t)
        return emb__gpu_fail(EMB_ENULL, "table #%lld is NULL", (long long)i);
    if (!b)
        return emb__gpu_fail(EMB_ENULL, "batch of table #%lld is NULL", (long long)i);
    if (!p)
        p = &pooling_sum;
    const int r = check_shape(b, p, i);
    if (r)
        return r;
    if ((p->flags & EMB_USE_DEFAULT_ID) && (p->default_id < 0 || p->default_id >= t->ncolumns))
        return emb__gpu_fail(EMB_ERANGE, "default_id %lld is not in [0, %lld) (table #%lld)",
                             (long long)p->default_id, (long long)t->ncolumns, (long long)i);
    return 0;
}

void emb__gpu_desc_fill(GpuDesc *d, const EmbGpuTable *t, const EmbBatch *b,
                        const EmbPooling *p)
{
    if (!p)
        p = &pooling_sum;
    memset(d, 0, sizeof *d);
    d->data = t->data;
    d->ncolumns = t->ncolumns;
    d->stride = t->stride;
    d->D = t->featuresize;
    d->dtype = (int32_t)t->dtype;
    d->ids = b->ids;
    d->offsets = b->offsets;
    d->weights = b->weights;
    d->nnz = b->nnz;
    d->nbags = b->nbags;
    d->bag_size = b->bag_size;
    d->default_id = p->default_id;
    d->id32 = b->id_type == EMB_ID_I32;
    d->combiner = (int32_t)p->combiner;
    d->flags = p->flags;
    d->max_norm = p->max_norm;
    const int cw = emb__gpu_chunk((int)t->dtype);
    d->G = emb__gpu_group(t->featuresize, emb__gpu_nv(t->featuresize, cw), cw);
}

static __device__ __forceinline__ void record(GpuErr *e, int64_t table, int kind, int64_t pos)
{
    const unsigned long long key = ((unsigned long long)table << (GPU_POS_BITS + 1)) |
                                   ((unsigned long long)kind << GPU_POS_BITS) |
                                   (unsigned long long)pos;
    atomicMin(&e->cur, key);
}

/* blockIdx.y = table; a grid-stride loop over its ids and offsets. */
__global__ void validate_kernel(const GpuDesc *descs, GpuErr *err)
{
    const GpuDesc d = descs[blockIdx.y];
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    const int64_t k0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int64_t k = k0; k < d.nnz; k += step) {
        const int64_t id = gpu_id(d.ids, d.id32, k);
        if ((uint64_t)id < (uint64_t)d.ncolumns)
            continue;
        const float w = d.weights ? d.weights[k] : 1.0f;
        if (!gpu_pruned(d, id, w))
            record(err, blockIdx.y, ERR_ID, k);
    }
    if (!d.offsets)
        return;
    for (int64_t i = k0; i <= d.nbags; i += step) {
        const int64_t o = d.offsets[i];
        const bool bad = i == 0 ? o != 0 : (o < d.offsets[i - 1] || (i == d.nbags && o != d.nnz));
        if (bad)
            record(err, blockIdx.y, ERR_OFFSETS, i);
    }
}

/* Makes this call's error the held one unless an older one is held; reads the culprit. */
__global__ void describe_kernel(const GpuDesc *descs, GpuErr *err)
{
    if (gpu_failed(err) || err->cur == GPU_NOERR)
        return; /* sticky: an older error stays until it is reported */
    const unsigned long long key = err->cur;
    err->key = key;
    const int64_t pos = (int64_t)(key & ((1ull << GPU_POS_BITS) - 1));
    const GpuDesc &d = descs[key >> (GPU_POS_BITS + 1)];
    if (((key >> GPU_POS_BITS) & 1) == ERR_ID) {
        err->v0 = gpu_id(d.ids, d.id32, pos);
        err->limit = d.ncolumns;
    } else {
        err->v0 = pos > 0 ? d.offsets[pos - 1] : 0;
        err->v1 = d.offsets[pos];
        err->limit = d.nnz;
    }
    err->described = 1;
}

int emb__gpu_validate(EmbGpuWorkspace *ws, int64_t n, cudaStream_t s)
{
    int64_t work = 1;
    for (int64_t i = 0; i < n; i++) {
        const GpuDesc *d = &ws->hdesc[i];
        work = d->nnz > work ? d->nnz : work;
        work = d->offsets && d->nbags + 1 > work ? d->nbags + 1 : work;
    }
    GPU_TRY(cudaMemcpyAsync(ws->ddesc, ws->hdesc, (size_t)n * sizeof(GpuDesc),
                            cudaMemcpyHostToDevice, s));
    GPU_TRY(cudaEventRecord(ws->desc_done, s));
    GPU_TRY(cudaMemsetAsync(&ws->derr->cur, 0xff, sizeof ws->derr->cur, s));
    int64_t blocks = (work + GPU_THREADS - 1) / GPU_THREADS;
    blocks = blocks < 1024 ? blocks : 1024;
    GPU_LAUNCH(validate_kernel, dim3((unsigned)blocks, (unsigned)n), GPU_THREADS, s,
               ws->ddesc, ws->derr);
    GPU_TRY(cudaGetLastError());
    GPU_LAUNCH(describe_kernel, 1, 1, s, ws->ddesc, ws->derr);
    GPU_TRY(cudaGetLastError());
    return 0;
}
