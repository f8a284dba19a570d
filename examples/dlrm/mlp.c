/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mlp.c — the MLPs of dlrm_train: layers of single-threaded cblas_sgemm calls on blocks of
 * BLOCK samples, their parameters in the store, trained by SGD.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime, under -std=c11 */
#endif
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "dlrm.h"

int nthreads = 1;

/* A store table initialised uniform in ±bound; its storage and column stride. */
static float *param(EmbStore *store, const char *name, int64_t rows, int cols, float bound,
                    uint64_t seed, int64_t *stride)
{
    EmbTable *t;
    const EmbVariableSpec v = {.name = name,
                               .ncolumns = rows,
                               .featuresize = cols,
                               .dtype = EMB_F32,
                               .trainable = 1,
                               .init = {EMB_INIT_UNIFORM, -bound, bound, seed}};
    CHECK(emb_store_get(store, &v, EMB_REUSE_NO, &t));
    float *data = emb_table_data(t, stride);
    if (!data)
        die("a parameter table has no contiguous storage: ", name);
    return data;
}

void mlp_init(Mlp *m, EmbStore *store, const char *prefix, int in, const int *outs, int n,
              int relu_last, int64_t batch, int first_layer, uint64_t seed)
{
    memset(m, 0, sizeof *m);
    m->nlayers = n;
    m->relu_last = relu_last;
    m->dims[0] = in;
    int widest = in;
    for (int l = 0; l < n; l++) {
        const int fin = m->dims[l], fout = outs[l];
        char name[64];
        int64_t unused;
        m->dims[l + 1] = fout;
        widest = fout > widest ? fout : widest;
        snprintf(name, sizeof name, "%s.%d.weight", prefix, l);
        m->w[l] = param(store, name, fout, fin, sqrtf(6.0f / (float)(fin + fout)),
                        seed + 100 + (uint64_t)(first_layer + l), &m->ldw[l]);
        snprintf(name, sizeof name, "%s.%d.bias", prefix, l);
        m->b[l] = param(store, name, 1, fout, sqrtf(3.0f / (float)fout),
                        seed + 200 + (uint64_t)(first_layer + l), &unused);
        if (l < n - 1) {
            m->own[l + 1] = xcalloc((size_t)(batch * fout), sizeof(float));
            m->act[l + 1] = m->own[l + 1];
            m->ld[l + 1] = fout;
        }
        m->gz[l] = xcalloc((size_t)(batch * fout), sizeof(float));
    }
    m->widest = widest;
    for (int k = 0; k < 2; k++)
        m->g[k] = xcalloc((size_t)(batch * widest), sizeof(float));
}

void mlp_free(Mlp *m)
{
    for (int l = 0; l <= m->nlayers; l++)
        free(m->own[l]);
    for (int l = 0; l < m->nlayers; l++)
        free(m->gz[l]);
    free(m->g[0]);
    free(m->g[1]);
}

static int relu_after(const Mlp *m, int l)
{
    return l < m->nlayers - 1 || m->relu_last;
}

/* Rows [r0, r0 + n) of every layer: act[l + 1] = relu(act[l] W_l^T + b_l); act[0] and
 * the last output (act[nlayers], ld[nlayers]) are set by the caller. */
void mlp_forward_block(Mlp *m, int64_t r0, int n)
{
    for (int l = 0; l < m->nlayers; l++) {
        const int fin = m->dims[l], fout = m->dims[l + 1];
        const int64_t ldy = m->ld[l + 1];
        float *y = (float *)m->act[l + 1] + r0 * ldy;
        for (int s = 0; s < n; s++)
            memcpy(y + s * ldy, m->b[l], (size_t)fout * sizeof(float));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, fout, fin, 1.0f,
                    m->act[l] + r0 * m->ld[l], (int)m->ld[l], m->w[l], (int)m->ldw[l], 1.0f, y,
                    (int)ldy);
        if (!relu_after(m, l))
            continue;
        for (int s = 0; s < n; s++) {
            float *ys = y + s * ldy;
            OMP(simd)
            for (int j = 0; j < fout; j++)
                ys[j] = ys[j] > 0 ? ys[j] : 0;
        }
    }
}

/* One row: gz = g where the layer's output y > 0 (ReLU), or g. */
static void relu_grad(float *restrict gz, const float *restrict g, const float *restrict y,
                      int relu, int n)
{
    if (!relu) {
        memcpy(gz, g, (size_t)n * sizeof(float));
        return;
    }
    OMP(simd)
    for (int j = 0; j < n; j++) {
        const float v = g[j]; /* read whatever y says: a select, not a branch (SSE2 too) */
        gz[j] = y[j] > 0 ? v : 0.0f;
    }
}

/* Rows [r0, r0 + n) of the backward from dL/d(output) (ld dld): every layer's gz, and
 * dL/d(input) into din (ld ldin) when din is not NULL. The weights are the ones of the
 * forward: mlp_update changes them after every row's backward, as autograd +
 * optimizer.step() do. */
void mlp_backward_block(Mlp *m, int64_t r0, int n, const float *dout, int64_t dld, float *din,
                        int64_t ldin)
{
    const float *g = dout + r0 * dld;
    int64_t ldg = dld;
    for (int l = m->nlayers - 1; l >= 0; l--) {
        const int fin = m->dims[l], fout = m->dims[l + 1];
        float *gz = m->gz[l] + r0 * fout;
        const float *y = m->act[l + 1] + r0 * m->ld[l + 1];
        for (int s = 0; s < n; s++)
            relu_grad(gz + s * fout, g + s * ldg, y + s * m->ld[l + 1], relu_after(m, l), fout);
        float *gx = l > 0 ? m->g[l & 1] + r0 * m->widest : din ? din + r0 * ldin : NULL;
        const int64_t ldx = l > 0 ? m->widest : ldin;
        if (gx)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, fin, fout, 1.0f, gz, fout,
                        m->w[l], (int)m->ldw[l], 0.0f, gx, (int)ldx);
        g = gx;
        ldg = ldx;
    }
}

/* b[j] -= lr sum_s gz[s][j] for the n columns j of one block; the sum over the batch's
 * rows in order, so any thread count gives the same bits. */
static void bias_update(float *restrict b, const float *restrict gz, int ldz, int64_t rows, int n,
                        float lr)
{
    float acc[BLOCK] = {0};
    for (int64_t s = 0; s < rows; s++) {
        const float *z = gz + s * ldz;
        OMP(simd)
        for (int j = 0; j < n; j++)
            acc[j] += z[j];
    }
    for (int j = 0; j < n; j++)
        b[j] -= lr * acc[j];
}

/* SGD on every layer after the backward of all @rows rows: W_l -= lr gz_l^T act_l and the
 * bias, in blocks of BLOCK output units spread over the enclosing team (an orphaned
 * OpenMP for: called inside a parallel region; outside one, on the calling thread). */
void mlp_update(Mlp *m, int64_t rows, float lr)
{
    int first[MAXL + 1] = {0};
    for (int l = 0; l < m->nlayers; l++)
        first[l + 1] = first[l] + (m->dims[l + 1] + BLOCK - 1) / BLOCK;
    OMP(for schedule(dynamic, 1))
    for (int k = 0; k < first[m->nlayers]; k++) {
        int l = 0;
        while (k >= first[l + 1])
            l++;
        const int fin = m->dims[l], fout = m->dims[l + 1], j0 = BLOCK * (k - first[l]);
        const int n = min_int(BLOCK, fout - j0);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, fin, (int)rows, -lr, m->gz[l] + j0,
                    fout, m->act[l], (int)m->ld[l], 1.0f, m->w[l] + j0 * m->ldw[l], (int)m->ldw[l]);
        bias_update(m->b[l] + j0, m->gz[l] + j0, fout, rows, n, lr);
    }
}
