/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dlrm_export.c — dlrm_train's serving export (dlrm_export.h): emb_store_export() of the
 * collection's tables, mapped back as read-only tables and served by a collection.
 */
#include "dlrm_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int dlrm_export(const EmbCollection *trained, int n, int64_t prependrows, EmbDtype dtype,
                const char *path, DlrmServed *out)
{
    *out = (DlrmServed){0};
    EmbCheckpointVar *vars = calloc((size_t)n, sizeof *vars);
    EmbCollectionTable *ct = calloc((size_t)n, sizeof *ct);
    char (*names)[16] = calloc((size_t)n, sizeof *names);
    int r = vars && ct && names ? 0 : EMB_ENOMEM;
    for (int t = 0; t < n && !r; t++) {
        snprintf(names[t], sizeof names[t], "C%d", t + 1);
        vars[t] = (EmbCheckpointVar){names[t], emb_collection_table(trained, t)};
        out->f32_bytes += emb_table_ncolumns(vars[t].table) *
                          emb_table_featuresize(vars[t].table) * 4;
    }
    const EmbExportOptions eo = {.dtype = dtype, .var_list = vars, .nvars = n};
    r = r ? r : emb_store_export(NULL, path, &eo);
    r = r ? r : emb_checkpoint_open(&out->ck, path, EMB_CHECKPOINT_MMAP);
    for (int t = 0; t < n && !r; t++) {
        ct[t] = (EmbCollectionTable){.name = names[t], .pooling = EMB_POOLING_SUM};
        r = emb_checkpoint_table(out->ck, names[t], &ct[t].table);
    }
    const EmbCollectionOptions co = {.prependrows = prependrows};
    r = r ? r : emb_collection_create(&out->emb, ct, n, &co);
    struct stat st;
    out->bytes = !r && stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
    free(vars), free(ct), free(names);
    if (r)
        dlrm_served_free(out);
    return r;
}

void dlrm_served_free(DlrmServed *s)
{
    emb_collection_destroy(&s->emb); /* before the mapped tables it borrows */
    emb_checkpoint_close(&s->ck);
}
