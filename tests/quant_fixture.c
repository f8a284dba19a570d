/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * quant_fixture.c — the library's pooled lookup over rows prepacked elsewhere, for
 * tests/python_quant (torch's quantized embedding bags on the same bytes):
 *
 *   quant_fixture DIR int8|int4 D NROWS NBAGS sum|mean WEIGHTED
 *
 * reads DIR/rows.bin (NROWS rows as prepacked), DIR/ids.bin and DIR/offsets.bin (int64,
 * NBAGS + 1 offsets), DIR/weights.bin (f32, when WEIGHTED is 1), wraps the rows without a
 * copy, and writes the NBAGS x D f32 outputs of emb_lookup to DIR/out.bin.
 *
 *   quant_fixture --ckpt DIR
 *
 * saves a checkpoint DIR/q-1.safetensors of an int8 table "q8" (33 x 12) and an int4 table
 * "q4" (9 x 20) initialised uniformly, and each table's values as emb_table_read gives them
 * to DIR/q8.f32 and DIR/q4.f32 (for the numpy reader, python/embtables_ckpt.py).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embtables/embtables.h"
#include "embtables/store.h"

static void *slurp(const char *dir, const char *name, size_t *n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc(*n ? *n : 1);
    if (p && fread(p, 1, *n, f) != *n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    return p;
}

static int dump(const char *dir, EmbTable *t)
{
    const int64_t n = emb_table_ncolumns(t) * emb_table_featuresize(t);
    float *v = malloc((size_t)n * sizeof *v);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.f32", dir, emb_table_name(t));
    FILE *f = fopen(path, "wb");
    const int ok = v && f && !emb_table_read(t, v, emb_table_featuresize(t)) &&
                   fwrite(v, sizeof *v, (size_t)n, f) == (size_t)n;
    if (f)
        fclose(f);
    free(v);
    return ok ? 0 : 1;
}

static int ckpt(const char *dir)
{
    EmbStore *s = NULL;
    EmbSaver *sv = NULL;
    EmbTable *t[2];
    static const char *names[2] = {"q8", "q4"};
    int r = emb_store_create(&s);
    for (int i = 0; i < 2 && !r; i++) {
        const EmbVariableSpec v = {.name = names[i], .ncolumns = i ? 9 : 33,
                                   .featuresize = i ? 20 : 12, .dtype = i ? EMB_INT4 : EMB_INT8,
                                   .init = {EMB_INIT_UNIFORM, -2, 3, 5 + (uint64_t)i}};
        r = emb_store_get(s, &v, EMB_REUSE_NO, &t[i]);
        r = r ? r : dump(dir, t[i]);
    }
    char path[4096];
    r = r ? r : emb_saver_create(&sv, dir, "q", NULL);
    r = r ? r : emb_saver_save(sv, s, 1, path, sizeof path);
    if (r)
        fprintf(stderr, "quant_fixture: %s\n", emb_last_error());
    emb_saver_destroy(&sv);
    emb_store_destroy(&s);
    return r ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--ckpt"))
        return ckpt(argv[2]);
    if (argc != 8)
        return fprintf(stderr, "usage: %s DIR int8|int4 D NROWS NBAGS sum|mean WEIGHTED\n",
                       argv[0]), 2;
    const char *dir = argv[1];
    const EmbDtype dt = strcmp(argv[2], "int4") ? EMB_INT8 : EMB_INT4;
    const int32_t D = atoi(argv[3]);
    const int64_t nrows = atoll(argv[4]), nbags = atoll(argv[5]);
    size_t nr, ni, no, nw = 0;
    void *rows = slurp(dir, "rows.bin", &nr);
    int64_t *ids = slurp(dir, "ids.bin", &ni), *offs = slurp(dir, "offsets.bin", &no);
    float *w = atoi(argv[7]) ? slurp(dir, "weights.bin", &nw) : NULL;
    float *out = malloc((size_t)nbags * (size_t)D * sizeof *out);
    const size_t rb = emb_dtype_row_bytes(dt, D);
    if (!rows || !ids || !offs || !out || nr != (size_t)nrows * rb || no != (size_t)(nbags + 1) * 8)
        return fprintf(stderr, "quant_fixture: bad input files\n"), 1;
    EmbTable *t = NULL;
    const EmbBatch b = {.ids = ids, .nnz = (int64_t)(ni / 8), .nbags = nbags, .offsets = offs,
                        .weights = w};
    const EmbPooling p = {.combiner = strcmp(argv[6], "mean") ? EMB_COMBINER_SUM
                                                              : EMB_COMBINER_MEAN};
    if (emb_table_wrap(&t, rows, nrows, D, (int64_t)rb, dt, NULL) ||
        emb_lookup(t, &b, &p, out, D))
        return fprintf(stderr, "quant_fixture: %s\n", emb_last_error()), 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/out.bin", dir);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(out, sizeof *out, (size_t)(nbags * D), f) != (size_t)(nbags * D))
        return fprintf(stderr, "quant_fixture: cannot write %s\n", path), 1;
    fclose(f);
    emb_table_destroy(&t);
    free(rows), free(ids), free(offs), free(w), free(out);
    return 0;
}
