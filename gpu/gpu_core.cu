/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gpu_core.cu — the host side shared by the GPU calls: error messages, device discovery,
 * workspaces (scratch, descriptors, the error record) and device tables with their
 * upload and download.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embtables/table.h"
#include "gpu_internal.cuh"

int emb__gpu_cuda(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    (void)cudaGetLastError(); /* clear a non-sticky error so later calls start clean */
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
        return emb__gpu_fail(EMB_ENODEV, "%s: %s (%s)", what, cudaGetErrorName(e),
                             cudaGetErrorString(e));
    if (e == cudaErrorMemoryAllocation)
        return emb__gpu_fail(EMB_ENOMEM, "%s: out of device memory", what);
    return emb__gpu_fail(EMB_EDEVICE, "%s: %s (%s)", what, cudaGetErrorName(e),
                         cudaGetErrorString(e));
}

const char *emb_gpu_last_error(void)
{
    return emb_last_error();
}

int emb_gpu_device_count(int *count)
{
    GPU_CHECK_NULL(count);
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    *count = e == cudaSuccess ? n : 0;
    if (e != cudaSuccess || n == 0) {
        (void)cudaGetLastError();
        return emb__gpu_fail(EMB_ENODEV, "no CUDA device: %s",
                             e == cudaSuccess ? "the driver reports 0 devices"
                                              : cudaGetErrorString(e));
    }
    return 0;
}

static int need_device(void)
{
    int n;
    return emb_gpu_device_count(&n);
}

/* ---- workspaces ---------------------------------------------------------------------- */

int emb_gpu_workspace_create(EmbGpuWorkspace **out)
{
    GPU_CHECK_NULL(out);
    int r = need_device();
    if (r)
        return r;
    EmbGpuWorkspace *ws = (EmbGpuWorkspace *)calloc(1, sizeof *ws);
    if (!ws)
        return emb__gpu_fail(EMB_ENOMEM, "workspace: out of host memory");
    if ((r = emb__gpu_cuda(cudaMalloc((void **)&ws->derr, sizeof(GpuErr)), "cudaMalloc")) ||
        (r = emb__gpu_cuda(cudaMallocHost((void **)&ws->herr, sizeof(GpuErr)), "cudaMallocHost")) ||
        (r = emb__gpu_cuda(cudaEventCreateWithFlags(&ws->done, cudaEventDisableTiming), "event")) ||
        (r = emb__gpu_cuda(cudaEventCreateWithFlags(&ws->desc_done, cudaEventDisableTiming), "event")) ||
        (r = emb__gpu_cuda(cudaMemset(ws->derr, 0xff, sizeof(GpuErr)), "cudaMemset")) ||
        (r = emb__gpu_cuda(cudaMemset(&ws->derr->described, 0, 4), "cudaMemset")) ||
        (r = emb__gpu_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize"))) {
        emb_gpu_workspace_destroy(&ws);
        return r;
    }
    *out = ws;
    return 0;
}

void emb_gpu_workspace_destroy(EmbGpuWorkspace **pws)
{
    if (!pws || !*pws)
        return;
    EmbGpuWorkspace *ws = *pws;
    if (ws->done)
        cudaEventSynchronize(ws->done);
    if (ws->desc_done)
        cudaEventSynchronize(ws->desc_done);
    cudaFree(ws->derr);
    cudaFreeHost(ws->herr);
    cudaFreeHost(ws->hdesc);
    cudaFree(ws->ddesc);
    cudaFree(ws->scratch);
    if (ws->done)
        cudaEventDestroy(ws->done);
    if (ws->desc_done)
        cudaEventDestroy(ws->desc_done);
    free(ws);
    *pws = NULL;
}

int emb__gpu_scratch(EmbGpuWorkspace *ws, size_t bytes)
{
    if (bytes <= ws->scratch_size)
        return 0;
    bytes += bytes / 4; /* room to grow without a new allocation each step */
    GPU_TRY(cudaDeviceSynchronize()); /* work queued earlier may still use the old one */
    GPU_TRY(cudaFree(ws->scratch));
    ws->scratch = NULL;
    ws->scratch_size = 0;
    GPU_TRY(cudaMalloc(&ws->scratch, bytes));
    ws->scratch_size = bytes;
    return 0;
}

int emb__gpu_descs(EmbGpuWorkspace *ws, int64_t n)
{
    GPU_TRY(cudaEventSynchronize(ws->desc_done)); /* the last upload read hdesc */
    if (n <= ws->desc_cap)
        return 0;
    GPU_TRY(cudaDeviceSynchronize());
    cudaFreeHost(ws->hdesc);
    cudaFree(ws->ddesc);
    ws->hdesc = NULL;
    ws->ddesc = NULL;
    ws->desc_cap = 0;
    GPU_TRY(cudaMallocHost((void **)&ws->hdesc, (size_t)n * sizeof(GpuDesc)));
    GPU_TRY(cudaMalloc((void **)&ws->ddesc, (size_t)n * sizeof(GpuDesc)));
    ws->desc_cap = n;
    return 0;
}

/* Message of a record holding an error; the caller resets the device record. */
static int describe(const EmbGpuWorkspace *ws, const GpuErr *e)
{
    const unsigned long long pos = e->key & ((1ull << GPU_POS_BITS) - 1);
    const unsigned long long table = e->key >> (GPU_POS_BITS + 1);
    if (((e->key >> GPU_POS_BITS) & 1) == ERR_ID)
        return emb__gpu_fail(EMB_ERANGE, "id %lld at position %llu is not in [0, %lld) "
                             "(table #%llu of the call%s%s)", (long long)e->v0, pos,
                             (long long)e->limit, table, ws->label[0] ? ": " : "", ws->label);
    if (pos == 0)
        return emb__gpu_fail(EMB_EOFFSETS, "offsets[0] is %lld, not 0 (table #%llu%s%s)",
                             (long long)e->v1, table, ws->label[0] ? ": " : "", ws->label);
    return emb__gpu_fail(EMB_EOFFSETS, "offsets[%llu] = %lld after offsets[%llu] = %lld, "
                         "with nnz %lld: not monotone or not ending at nnz (table #%llu%s%s)",
                         pos, (long long)e->v1, pos - 1, (long long)e->v0, (long long)e->limit,
                         table, ws->label[0] ? ": " : "", ws->label);
}

/* Reads the pinned copy of the record (the caller waited for it); clears a held error. */
static int report(EmbGpuWorkspace *ws)
{
    const GpuErr e = *ws->herr;
    if (e.key == GPU_NOERR)
        return 0;
    const int r = describe(ws, &e);
    GPU_TRY(cudaMemset(ws->derr, 0xff, sizeof(GpuErr)));
    GPU_TRY(cudaMemset(&ws->derr->described, 0, 4));
    GPU_TRY(cudaDeviceSynchronize());
    ws->herr->key = GPU_NOERR;
    return r;
}

int emb__gpu_finish(EmbGpuWorkspace *ws, unsigned flags, cudaStream_t s)
{
    GPU_TRY(cudaGetLastError());
    GPU_TRY(cudaMemcpyAsync(ws->herr, ws->derr, sizeof(GpuErr), cudaMemcpyDeviceToHost, s));
    GPU_TRY(cudaEventRecord(ws->done, s));
    ws->used = true;
    if (flags & EMB_GPU_DEFER_CHECK)
        return 0;
    GPU_TRY(cudaEventSynchronize(ws->done));
    return report(ws);
}

int emb_gpu_workspace_check(EmbGpuWorkspace *ws)
{
    GPU_CHECK_NULL(ws);
    if (!ws->used)
        return 0;
    GPU_TRY(cudaEventSynchronize(ws->done));
    return report(ws);
}

/* ---- tables -------------------------------------------------------------------------- */

int emb_gpu_table_create(EmbGpuTable **out, int64_t ncolumns, int32_t featuresize,
                         EmbDtype dtype, const char *name, void *stream)
{
    GPU_CHECK_NULL(out);
    if (ncolumns < 0 || featuresize < 1 || featuresize > EMB_GPU_MAX_FEATURESIZE)
        return emb__gpu_fail(EMB_EINVAL, "device table of %lld columns of %d: need "
                             "ncolumns >= 0 and featuresize in 1..%d", (long long)ncolumns,
                             (int)featuresize, EMB_GPU_MAX_FEATURESIZE);
    const size_t el = emb_dtype_size(dtype);
    if (!el)
        return emb__gpu_fail(EMB_EDTYPE, "device table: dtype %d is not f32, f16 or bf16",
                             (int)dtype);
    const int cw = emb__gpu_chunk((int)dtype); /* rows padded to 16 bytes */
    const int64_t stride = (featuresize + cw - 1) & ~(int64_t)(cw - 1);
    if (ncolumns > (int64_t)(SIZE_MAX / 2) / stride / (int64_t)el)
        return emb__gpu_fail(EMB_EOVERFLOW, "device table of %lld columns overflows",
                             (long long)ncolumns);
    int r = need_device();
    if (r)
        return r;
    EmbGpuTable *t = (EmbGpuTable *)calloc(1, sizeof *t);
    if (!t)
        return emb__gpu_fail(EMB_ENOMEM, "device table: out of host memory");
    *t = (EmbGpuTable){ncolumns, featuresize, dtype, stride, NULL, {0}, -1, NULL, NULL, NULL, 0, 0};
    if (name)
        snprintf(t->name, sizeof t->name, "%s", name);
    const size_t bytes = (size_t)ncolumns * (size_t)stride * el;
    /* waits for the fill: an upload on another stream must not be overtaken by it */
    if (bytes && ((r = emb__gpu_cuda(cudaMalloc(&t->data, bytes), "cudaMalloc(table)")) ||
                  (r = emb__gpu_cuda(cudaMemsetAsync(t->data, 0, bytes, (cudaStream_t)stream),
                                     "cudaMemsetAsync(table)")) ||
                  (r = emb__gpu_cuda(cudaStreamSynchronize((cudaStream_t)stream),
                                     "cudaStreamSynchronize(table)")))) {
        emb_gpu_table_destroy(&t);
        return r;
    }
    *out = t;
    return 0;
}

void emb_gpu_table_destroy(EmbGpuTable **pt)
{
    if (!pt || !*pt)
        return;
    EmbGpuTable *t = *pt;
    cudaFree(t->data);
    cudaFree(t->state0);
    cudaFree(t->state1);
    cudaFree(t->step);
    free(t);
    *pt = NULL;
}

int64_t emb_gpu_table_ncolumns(const EmbGpuTable *t) { return t ? t->ncolumns : 0; }
int32_t emb_gpu_table_featuresize(const EmbGpuTable *t) { return t ? t->featuresize : 0; }
EmbDtype emb_gpu_table_dtype(const EmbGpuTable *t) { return t ? t->dtype : EMB_F32; }

int emb_gpu_table_set_seed(EmbGpuTable *t, uint64_t seed)
{
    GPU_CHECK_NULL(t);
    t->seed = seed;
    t->calls = 0;
    return 0;
}

void *emb_gpu_table_data(const EmbGpuTable *t, int64_t *column_stride)
{
    if (column_stride)
        *column_stride = t ? t->stride : 0;
    return t ? t->data : NULL;
}

static int match(const EmbGpuTable *g, const EmbTable *h)
{
    if (emb_table_ncolumns(h) != g->ncolumns || emb_table_featuresize(h) != g->featuresize)
        return emb__gpu_fail(EMB_ESHAPE, "host table %lld x %d does not match device table "
                             "%lld x %d", (long long)emb_table_ncolumns(h),
                             (int)emb_table_featuresize(h), (long long)g->ncolumns,
                             (int)g->featuresize);
    if (emb_table_dtype(h) != g->dtype)
        return emb__gpu_fail(EMB_EDTYPE, "host table is %s, device table %s",
                             emb_dtype_name(emb_table_dtype(h)), emb_dtype_name(g->dtype));
    return 0;
}

#define STAGE_BYTES ((size_t)64 << 20)

/*
 * Copies between a host table and a device table: one 2-D copy for a simple table, else
 * columns staged through a host buffer a chunk at a time.
 */
static int transfer(EmbGpuTable *g, EmbTable *h, bool up, cudaStream_t s)
{
    const size_t el = emb_dtype_size(g->dtype), row = (size_t)g->featuresize * el;
    const size_t dpitch = (size_t)g->stride * el;
    int64_t hstride = 0;
    char *hdata = (char *)emb_table_data(h, &hstride);
    if (g->ncolumns == 0)
        return 0;
    if (hdata) {
        const size_t hp = (size_t)hstride * el;
        if (up)
            GPU_TRY(cudaMemcpy2DAsync(g->data, dpitch, hdata, hp, row, g->ncolumns,
                                      cudaMemcpyHostToDevice, s));
        else
            GPU_TRY(cudaMemcpy2DAsync(hdata, hp, g->data, dpitch, row, g->ncolumns,
                                      cudaMemcpyDeviceToHost, s));
        GPU_TRY(cudaStreamSynchronize(s));
        return 0;
    }
    const int64_t per = (int64_t)(STAGE_BYTES / row) > 0 ? (int64_t)(STAGE_BYTES / row) : 1;
    char *stage = (char *)malloc((size_t)(per < g->ncolumns ? per : g->ncolumns) * row);
    if (!stage)
        return emb__gpu_fail(EMB_ENOMEM, "table transfer: out of host memory");
    int r = 0;
    for (int64_t c0 = 0; c0 < g->ncolumns && !r; c0 += per) {
        const int64_t n = per < g->ncolumns - c0 ? per : g->ncolumns - c0;
        char *dev = (char *)g->data + (size_t)c0 * dpitch;
        if (!up)
            r = emb__gpu_cuda(cudaMemcpy2DAsync(stage, row, dev, dpitch, row, n,
                                                cudaMemcpyDeviceToHost, s), "download");
        if (!r && !up)
            r = emb__gpu_cuda(cudaStreamSynchronize(s), "download");
        for (int64_t i = 0; i < n && !r; i++) {
            void *col = NULL;
            r = emb_table_column_pointer(h, c0 + i, up ? EMB_CTX_NONE : EMB_CTX_UPDATE, &col);
            if (r)
                r = emb__gpu_fail(r, "table transfer: column %lld of the host table",
                                  (long long)(c0 + i));
            else if (up)
                memcpy(stage + (size_t)i * row, col, row);
            else
                memcpy(col, stage + (size_t)i * row, row);
        }
        if (!r && up)
            r = emb__gpu_cuda(cudaMemcpy2DAsync(dev, dpitch, stage, row, row, n,
                                                cudaMemcpyHostToDevice, s), "upload");
        if (!r && up)
            r = emb__gpu_cuda(cudaStreamSynchronize(s), "upload");
    }
    free(stage);
    return r;
}

int emb_gpu_table_upload(EmbGpuTable *dst, const EmbTable *src, void *stream)
{
    GPU_CHECK_NULL(dst);
    GPU_CHECK_NULL(src);
    const int r = match(dst, src);
    return r ? r : transfer(dst, (EmbTable *)src, true, (cudaStream_t)stream);
}

int emb_gpu_table_download(const EmbGpuTable *src, EmbTable *dst, void *stream)
{
    GPU_CHECK_NULL(src);
    GPU_CHECK_NULL(dst);
    const int r = match(src, dst);
    return r ? r : transfer((EmbGpuTable *)src, dst, false, (cudaStream_t)stream);
}

/* ---- launch geometry ----------------------------------------------------------------- */

int emb__gpu_chunk(int dtype)
{
    return dtype == EMB_F32 ? 4 : 8;
}

int emb__gpu_nv(int32_t D, int cw)
{
    const int v = (D + 32 * cw - 1) / (32 * cw); /* chunks per lane, a full warp per row */
    return v <= 1 ? 1 : v <= 2 ? 2 : v <= 4 ? 4 : 8;
}

int emb__gpu_group(int32_t D, int nv, int cw)
{
    const int need = (D + cw * nv - 1) / (cw * nv); /* lanes to cover the row */
    int G = 1;
    while (G < need && G < 32)
        G <<= 1;
    return G;
}
