/* optim_select_x86.c — optimizer kernel selection on x86: the C references, then the AVX2
 * variants when the CPU flags (detected & mask) allow them. */
#include "internal.h"
#include "kernels/optim.h"

void emb__optim_select(EmbOptimKernels *k)
{
    emb__optim_init_c(k);
    if (emb__cpu_flags() & EMB_CPU_AVX2)
        emb__optim_init_avx2(k);
}
