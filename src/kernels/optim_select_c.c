/* optim_select_c.c — optimizer kernel selection where no SIMD variant is built. */
#include "kernels/optim.h"

void emb__optim_select(EmbOptimKernels *k)
{
    emb__optim_init_c(k);
}
