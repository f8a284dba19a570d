/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_lookup.c — bytes -> (small table of any dtype, quantized ones included, batch,
 * pooling): emb_batch_validate() and
 * emb_lookup() must agree, a failed lookup must leave the output untouched, and a lookup
 * that succeeds must write only its rows' first featuresize elements.
 */
#include <stdlib.h>

#include "embtables/embtables.h"
#include "fuzz_input.h"

#define MAX_NNZ 64
#define MAX_BAGS 32
#define PAD 3
#define SENTINEL (-1234.5f)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzInput in = {data, size};
    const uint8_t shape = fuzz_u8(&in);
    const int64_t ncols = shape & 15;                 /* 0 .. 15 columns */
    const int32_t D = 1 + ((shape >> 4) & 7) * 5;     /* 1 .. 36 */
    const EmbDtype dtype = (EmbDtype)(fuzz_u8(&in) % 6); /* 5: invalid; int4: even D only */

    EmbTable *t = NULL;
    const int rc_create = emb_table_create(&t, ncols, D, dtype, NULL);
    FUZZ_ASSERT((rc_create == 0) == (dtype <= EMB_INT8 || (dtype == EMB_INT4 && D % 2 == 0)));
    if (rc_create)
        return 0;
    EmbInitializer init = {EMB_INIT_UNIFORM, -2.0f, 2.0f, fuzz_u8(&in)};
    FUZZ_ASSERT(emb_table_initialize(t, &init) == 0);

    /* the batch */
    EmbBatch b = {0};
    const uint8_t bsel = fuzz_u8(&in);
    b.id_type = (EmbIdType)(bsel & 3);                /* 2, 3: invalid */
    const int ragged = (bsel >> 2) & 1;
    const int weighted = (bsel >> 3) & 1;
    const int null_ids = (bsel >> 4) & 1;
    b.nnz = (int64_t)(fuzz_u8(&in) % (MAX_NNZ + 2)) - 1;
    b.nbags = (int64_t)(fuzz_u8(&in) % (MAX_BAGS + 2)) - 1;
    b.bag_size = (int64_t)(fuzz_u8(&in) % 10) - 1;

    int64_t ids64[MAX_NNZ];
    int32_t ids32[MAX_NNZ];
    float w[MAX_NNZ];
    int64_t offsets[MAX_BAGS + 1];
    for (int i = 0; i < MAX_NNZ; i++) {
        ids64[i] = fuzz_id(&in, ncols);
        ids32[i] = (int32_t)ids64[i];
        w[i] = (fuzz_u8(&in) % 5 == 0) ? fuzz_f32(&in) : (float)(fuzz_u8(&in) % 7) - 2.0f;
    }
    for (int i = 0; i <= MAX_BAGS; i++)
        offsets[i] = fuzz_u8(&in) == 0xff ? fuzz_i64(&in) : (int64_t)(fuzz_u8(&in) % (MAX_NNZ + 1));
    b.ids = null_ids ? NULL : (b.id_type == EMB_ID_I32 ? (const void *)ids32 : (const void *)ids64);
    b.offsets = ragged ? offsets : NULL;
    b.weights = weighted ? w : NULL;

    /* the pooling */
    EmbPooling p = {0};
    const uint8_t psel = fuzz_u8(&in);
    p.combiner = (EmbCombiner)(psel % 5);             /* 4: invalid */
    p.flags = fuzz_u8(&in);                           /* bits above 3: invalid */
    p.default_id = fuzz_id(&in, ncols);
    const uint8_t nsel = fuzz_u8(&in);
    p.max_norm = nsel < 128 ? 0.0f : nsel < 250 ? (float)(nsel - 127) / 16.0f : fuzz_f32(&in);
    const int null_pool = (psel >> 4) == 15;

    const int64_t stride = D + (fuzz_u8(&in) % 4) - 1; /* D - 1 is invalid */
    const size_t nout = (size_t)(MAX_NNZ > MAX_BAGS ? MAX_NNZ : MAX_BAGS) * (size_t)(D + PAD);
    float *out = malloc(nout * sizeof *out);
    FUZZ_ASSERT(out != NULL);
    for (size_t i = 0; i < nout; i++)
        out[i] = SENTINEL;

    const EmbPooling *pp = null_pool ? NULL : &p;
    const int rc_valid = emb_batch_validate(t, &b, pp);
    /* the output buffer holds MAX(nnz, nbags) rows: larger batches are never valid here */
    const int rc = emb_lookup(t, &b, pp, out, stride);
    if (stride >= D)
        FUZZ_ASSERT(rc == rc_valid);
    FUZZ_ASSERT(rc <= 0);
    if (rc) {
        for (size_t i = 0; i < nout; i++)
            FUZZ_ASSERT(out[i] == SENTINEL);
    } else {
        for (int64_t r = 0; r < b.nbags; r++)
            for (int64_t j = D; j < stride; j++)
                FUZZ_ASSERT(out[r * stride + j] == SENTINEL);
        for (size_t i = (size_t)(b.nbags * stride); i < nout; i++)
            FUZZ_ASSERT(out[i] == SENTINEL);
    }
    (void)emb_strerror(rc);
    (void)emb_last_error();
    free(out);
    emb_table_destroy(&t);
    return 0;
}
