/* gpu_reference.c — host reference of the GPU backward (see gpu_reference.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_reference.h"
#include "kernels/convert.h"

int ref_state_init(RefState *s, int64_t ncolumns, int32_t featuresize)
{
    const size_t n = (size_t)(ncolumns > 0 ? ncolumns : 1);
    s->h = calloc(n, sizeof(float));
    s->m = calloc(n * (size_t)featuresize, sizeof(float));
    s->v = calloc(n * (size_t)featuresize, sizeof(float));
    s->step = 0;
    return s->h && s->m && s->v ? 0 : EMB_ENOMEM;
}

void ref_state_free(RefState *s)
{
    free(s->h);
    free(s->m);
    free(s->v);
    memset(s, 0, sizeof *s);
}

float ref_load(EmbDtype dt, const void *col, int32_t i)
{
    return emb__load(dt, col, i);
}

void ref_store(EmbDtype dt, void *col, int32_t i, float x)
{
    emb__store(dt, col, i, x);
}

static int64_t id_at(const EmbBatch *b, int64_t k)
{
    return b->id_type == EMB_ID_I32 ? ((const int32_t *)b->ids)[k] : ((const int64_t *)b->ids)[k];
}

static int pruned(const EmbBatch *b, const EmbPooling *p, int64_t k, int64_t id)
{
    if (id < 0 && (p->flags & EMB_PRUNE_INVALID))
        return 1;
    return b->weights && (p->flags & EMB_PRUNE_NONPOSITIVE_WEIGHTS) && !(b->weights[k] > 0.0f);
}

static float scale_of(EmbCombiner c, double sw, double sw2)
{
    if (c == EMB_COMBINER_MEAN)
        return sw != 0.0 ? (float)(1.0 / sw) : 0.0f;
    if (c == EMB_COMBINER_SQRTN)
        return sw2 > 0.0 ? (float)(1.0 / sqrt(sw2)) : 0.0f;
    return 1.0f;
}

/* g[id] += coef · J(id)ᵀ dy: the pullback row of one entry, in double. */
static void add_entry(EmbTable *t, const EmbPooling *p, int64_t id, float coef, const float *dy,
                      double *g)
{
    const int32_t D = emb_table_featuresize(t);
    void *col = NULL;
    emb_table_column_pointer(t, id, EMB_CTX_NONE, &col);
    double ss = 0.0, xg = 0.0;
    float ssf = 0.0f;
    for (int32_t i = 0; i < D; i++) {
        const double x = ref_load(emb_table_dtype(t), col, i);
        ss += x * x;
        ssf += (float)(x * x);
        xg += x * coef * dy[i];
    }
    const double c = p->max_norm;
    const int clipped = c > 0.0 && ssf > (float)(c * c);
    for (int32_t i = 0; i < D; i++) {
        const double gi = (double)coef * dy[i];
        g[i] += clipped ? c / sqrt(ss) * (gi - ref_load(emb_table_dtype(t), col, i) * xg / ss) : gi;
    }
}

static void apply(EmbTable *t, int64_t id, const double *g, const EmbGpuOptimizer *o,
                  RefState *s)
{
    const int32_t D = emb_table_featuresize(t);
    const EmbDtype dt = emb_table_dtype(t);
    const float eps = o->eps > 0.0f ? o->eps : 1e-8f;
    const float b1 = o->beta1 > 0.0f ? o->beta1 : 0.9f, b2 = o->beta2 > 0.0f ? o->beta2 : 0.999f;
    void *col = NULL;
    emb_table_column_pointer(t, id, EMB_CTX_UPDATE, &col);
    double gg = 0.0;
    for (int32_t i = 0; i < D; i++)
        gg += g[i] * g[i];
    if (o->kind == EMB_GPU_ROWWISE_ADAGRAD)
        s->h[id] += (float)(gg / D);
    const double t1 = (double)s->step + 1;
    const double step = o->lr * sqrt(1.0 - pow(b2, t1)) / (1.0 - pow(b1, t1));
    for (int32_t i = 0; i < D; i++) {
        const float gi = (float)g[i], x = ref_load(dt, col, i);
        float w = x - o->lr * gi;
        if (o->kind == EMB_GPU_ROWWISE_ADAGRAD) {
            w = x - o->lr * gi / (sqrtf(s->h[id]) + eps);
        } else if (o->kind == EMB_GPU_ADAM) {
            float *m = &s->m[id * D + i], *v = &s->v[id * D + i];
            *m += (gi - *m) * (1.0f - b1);
            *v += (gi * gi - *v) * (1.0f - b2);
            w = x - (float)step * (*m / (sqrtf(*v) + eps));
        }
        ref_store(dt, col, i, w);
    }
}

int ref_backward_update(EmbTable *t, const EmbBatch *b, const EmbPooling *p, const float *dy,
                        int64_t dy_stride, const EmbGpuOptimizer *opt, RefState *s)
{
    const EmbPooling sum = EMB_POOLING_SUM;
    if (!p)
        p = &sum;
    int r = emb_batch_validate(t, b, p);
    if (r)
        return r;
    const int64_t ncol = emb_table_ncolumns(t);
    const int32_t D = emb_table_featuresize(t);
    double *g = calloc((size_t)(ncol > 0 ? ncol : 1) * (size_t)D, sizeof(double));
    char *touched = calloc((size_t)(ncol > 0 ? ncol : 1), 1);
    if (!g || !touched) {
        free(g);
        free(touched);
        return EMB_ENOMEM;
    }
    for (int64_t bag = 0; bag < b->nbags; bag++) {
        const int64_t k0 = b->offsets ? b->offsets[bag] : bag * b->bag_size;
        const int64_t k1 = b->offsets ? b->offsets[bag + 1] : (bag + 1) * b->bag_size;
        double sw = 0.0, sw2 = 0.0;
        int64_t kept = 0;
        for (int64_t k = k0; k < k1; k++)
            if (!pruned(b, p, k, id_at(b, k))) {
                const float w = b->weights ? b->weights[k] : 1.0f;
                kept++;
                sw += w;
                sw2 += (double)w * w;
            }
        const float sc = scale_of(p->combiner, sw, sw2);
        const float *d = dy + bag * dy_stride;
        for (int64_t k = k0; k < k1; k++) {
            const int64_t id = id_at(b, k);
            if (pruned(b, p, k, id))
                continue;
            add_entry(t, p, id, (b->weights ? b->weights[k] : 1.0f) * sc, d, g + id * D);
            touched[id] = 1;
        }
        if (kept == 0 && (p->flags & EMB_USE_DEFAULT_ID)) {
            add_entry(t, p, p->default_id, 1.0f, d, g + p->default_id * D);
            touched[p->default_id] = 1;
        }
    }
    for (int64_t id = 0; id < ncol; id++)
        if (touched[id])
            apply(t, id, g + id * D, opt, s);
    if (opt->kind == EMB_GPU_ADAM && b->nnz + b->nbags > 0)
        s->step++;
    free(g);
    free(touched);
    return 0;
}
