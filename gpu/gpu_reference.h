/*
 * gpu_reference.h — host reference of the GPU backward with fused optimizers, written
 * from the semantics in DESIGN.md §4 and src/lookup/pullback.h (double accumulation), for
 * the GPU tests. Once the CPU update layer (update.h) is merged the tests can compare
 * against emb_update() directly.
 */
#ifndef EMB_GPU_REFERENCE_H
#define EMB_GPU_REFERENCE_H

#include <embtables/gpu.h>

/* Optimizer state of one host table (allocated by ref_state_init). */
typedef struct RefState {
    float *h;     /* row-wise Adagrad: ncolumns */
    float *m, *v; /* Adam: ncolumns x featuresize */
    int64_t step;
} RefState;

int ref_state_init(RefState *s, int64_t ncolumns, int32_t featuresize);
void ref_state_free(RefState *s);

/* Element i of a column of dtype dt, as f32, and the store with round-to-nearest-even. */
float ref_load(EmbDtype dt, const void *col, int32_t i);
void ref_store(EmbDtype dt, void *col, int32_t i, float x);

/*
 * Backward of emb_lookup(t, b, p) for output gradient dy (host, nbags rows at dy_stride)
 * followed by the optimizer on every distinct column: the reference of
 * emb_gpu_backward_update. Returns 0 or an EMB_E* code.
 */
int ref_backward_update(EmbTable *t, const EmbBatch *b, const EmbPooling *p, const float *dy,
                        int64_t dy_stride, const EmbGpuOptimizer *opt, RefState *s);

#endif
