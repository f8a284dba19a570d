/*
 * init.c — initializers (TF's zeros, ones, constant, uniform, normal, truncated normal,
 * uniform unit scaling). Element i of column c is a pure function of (seed, c, i): the
 * same table whatever the order, the thread count or the table type.
 */
#include <math.h>

#include "kernels/convert.h"
#include "rng.h"
#include "tables/table_impl.h"
#include "embtables/store.h"

/* A standard normal from the attempt-th pair of uniforms of (c, i) (Box-Muller). */
static double std_normal(uint64_t seed, int64_t c, int64_t i, uint64_t attempt)
{
    const uint64_t k = ((uint64_t)i << 1) + (attempt << 40);
    const double u = emb__rng_open01(seed, (uint64_t)c, k);
    const double v = emb__rng_open01(seed, (uint64_t)c, k + 1);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static float value(const EmbInitializer *in, const EmbTable *t, int64_t c, int64_t i)
{
    switch (in->kind) {
    case EMB_INIT_ONES: return 1.0f;
    case EMB_INIT_CONSTANT: return in->a;
    case EMB_INIT_UNIFORM:
        return in->a + (in->b - in->a) * emb__rng_unit(in->seed, (uint64_t)c, (uint64_t)i);
    case EMB_INIT_NORMAL: return (float)(in->a + in->b * std_normal(in->seed, c, i, 0));
    case EMB_INIT_TRUNCATED_NORMAL:
        for (uint64_t attempt = 0;; attempt++) {
            const double z = std_normal(in->seed, c, i, attempt);
            if (fabs(z) <= 2.0 || attempt == 1000)
                return (float)(in->a + in->b * (fabs(z) <= 2.0 ? z : 0.0));
        }
    case EMB_INIT_UNIFORM_UNIT_SCALING: {
        const double m = in->a * sqrt(3.0 / (double)(t->ncolumns > 0 ? t->ncolumns : 1));
        return (float)(m * (2.0 * emb__rng_unit(in->seed, (uint64_t)c, (uint64_t)i) - 1.0));
    }
    default: return 0.0f; /* NONE, ZEROS */
    }
}

static void store_value(const EmbTable *t, void *col, int32_t i, float v)
{
    switch (t->dtype) {
    case EMB_F16: ((uint16_t *)col)[i] = emb__f32_to_f16(v); break;
    case EMB_BF16: ((uint16_t *)col)[i] = emb__f32_to_bf16(v); break;
    default: ((float *)col)[i] = v; break;
    }
}

int emb_table_initialize(EmbTable *t, const EmbInitializer *in)
{
    EMB_CHECK_NULL(t);
    EMB_CHECK_NULL(in);
    if (in->kind < EMB_INIT_NONE || in->kind > EMB_INIT_UNIFORM_UNIT_SCALING)
        return emb__fail(EMB_EINVAL, "initializer kind %d is unknown (%s)", (int)in->kind,
                         emb__table_label(t));
    if (in->kind == EMB_INIT_UNIFORM && !(in->b >= in->a))
        return emb__fail(EMB_EINVAL, "uniform initializer: maxval %g < minval %g (%s)",
                         (double)in->b, (double)in->a, emb__table_label(t));
    if ((in->kind == EMB_INIT_NORMAL || in->kind == EMB_INIT_TRUNCATED_NORMAL) && !(in->b >= 0))
        return emb__fail(EMB_EINVAL, "normal initializer: stddev %g < 0 (%s)", (double)in->b,
                         emb__table_label(t));
    if (in->kind == EMB_INIT_NONE)
        return 0;
    for (int64_t c = 0; c < t->ncolumns; c++) {
        void *col = emb__column(t, c, EMB_CTX_UPDATE);
        for (int32_t i = 0; i < t->featuresize; i++)
            store_value(t, col, i, value(in, t, c, i));
    }
    return 0;
}
