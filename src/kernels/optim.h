/*
 * optim.h — optimizer row kernels (other than SGD, whose sgd_row family is in kernels.h).
 *
 * One kernel updates one column with its accumulated gradient g (f32) and its f32 state
 * row: the column is read once and written once in its dtype (round to nearest even).
 * Formulas (elementwise; see update.h):
 *   ADAGRAD          state = h[D]:            h += g²; w -= lr·(g / (sqrt(h) + eps))
 *   ROWWISE_ADAGRAD  state = h[1]:            h += mean(g²); w -= (lr / (sqrt(h) + eps))·g
 *   FTRL             state = [accum D | linear D]   (TF ApplyFtrl)
 *   ADAM             state = [m D | v D]            (PyTorch SparseAdam, step_size given)
 * mean(g²) is summed in 8 interleaved lanes (lane i % 8) combined as
 * ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)), the order an 8-wide SIMD variant reproduces.
 *
 * The selection is computed into a caller-owned struct from emb__cpu_flags() (no global
 * state to race on after emb_set_cpu_mask).
 */
#ifndef EMB_OPTIM_H
#define EMB_OPTIM_H

#include <stdint.h>

#include "kernels/kernels.h"

/* Per-step hyper-parameters of an optimizer row kernel. */
typedef struct EmbOptimParams {
    float lr, eps;
    float lr_power, l1, l2;     /* FTRL */
    float beta1, beta2;         /* Adam */
    float step_size;            /* Adam: lr · sqrt(1 - beta2^t) / (1 - beta1^t) */
} EmbOptimParams;

typedef void (*emb_optim_row_fn)(void *col, float *state, const float *g,
                                 const EmbOptimParams *p, int32_t D);

enum { EMB_OPTIM_ADAGRAD, EMB_OPTIM_ROWWISE, EMB_OPTIM_FTRL, EMB_OPTIM_ADAM, EMB_NOPTIM };

typedef struct EmbOptimKernels {
    emb_optim_row_fn row[EMB_NOPTIM][EMB_NDTYPES];
    emb_optim_row_fn row_nt[EMB_NOPTIM][EMB_NDTYPES]; /* column written non-temporally;
                                                        the caller issues emb__sfence() */
} EmbOptimKernels;

/* C references (optim_c.c). */
void emb__optim_init_c(EmbOptimKernels *k);
/* AVX2 variants (optim_x86_avx2.c, x86 builds only): override the f32 entries they have. */
void emb__optim_init_avx2(EmbOptimKernels *k);

/* The best kernels for the current CPU flags, into @k (optim_select_x86.c / _c.c). */
void emb__optim_select(EmbOptimKernels *k);

#endif
