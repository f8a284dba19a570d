/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * init.c — initializers (TF's zeros, ones, constant, uniform, normal, truncated normal,
 * uniform unit scaling). Element i of column c is a pure function of (seed, c, i): the
 * same table whatever the order, the thread count or the table type.
 */
#include <stdlib.h>

#include "dtype.h"
#include "initval.h"
#include "tables/table_impl.h"
#include "embtables/store.h"

int emb_table_initialize(EmbTable *t, const EmbInitializer *in)
{
    if (!t || !in)
        return emb__fail(EMB_ENULL, "emb_table_initialize: argument '%s' is NULL",
                         !t ? "table" : "init");
    int r = emb__init_check(in, emb__table_label(t));
    if (r)
        return r;
    if (in->kind == EMB_INIT_NONE)
        return 0;
    const float ab[2] = {in->a, in->b};
    r = emb__finite_check(t, ab, 1, 2, 2, "initializer parameters a, b");
    if (r)
        return r;
    emb__touched_all(t);
    if (emb__table_keyed(t)) /* its rows now, and the rows it creates later */
        return emb__table_keyed_initialize(t, in);
    float *row = malloc((size_t)t->featuresize * sizeof(float));
    if (!row)
        return emb__fail(EMB_ENOMEM, "out of memory for a row of %d floats (%s)",
                         (int)t->featuresize, emb__table_label(t));
    for (int64_t c = 0; c < t->ncolumns; c++) { /* each row computed, then stored whole */
        for (int32_t i = 0; i < t->featuresize; i++)
            row[i] = emb__init_value(in, t->ncolumns, c, i);
        emb__row_store(t->dtype, emb__column(t, c, EMB_CTX_UPDATE), t->featuresize, row);
    }
    free(row);
    return 0;
}
