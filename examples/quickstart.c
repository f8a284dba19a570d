/* SPDX-License-Identifier: BSD-2-Clause */
/* quickstart.c — the seed's first example in C: a 5x5 table whose column j holds j+1,
 * a gather and a reducing (bag-sum) lookup. */
#include <stdio.h>

#include <embtables/embtables.h>

int main(void)
{
    EmbTable *t = NULL;
    EmbTableOptions opts = {.name = "quickstart"};
    if (emb_table_create(&t, 5, 5, EMB_F32, &opts) != 0) {
        fprintf(stderr, "create: %s\n", emb_last_error());
        return 1;
    }
    for (int64_t j = 0; j < 5; j++) {
        float *col;
        emb_table_column_pointer(t, j, EMB_CTX_NONE, (void **)&col);
        for (int i = 0; i < 5; i++)
            col[i] = (float)(j + 1);
    }

    const int64_t ids[] = {0, 2, 3, 3, 1, 4};
    float out[6 * 5];
    if (emb_gather(t, ids, 6, out, 5) != 0)
        return fprintf(stderr, "gather: %s\n", emb_last_error()), 1;
    printf("gather [0,2,3,3,1,4]:");
    for (int k = 0; k < 6; k++)
        printf(" %g", out[k * 5]);

    const int64_t bags[] = {0, 1, 3, 4}; /* two bags of two ids */
    if (emb_lookup_sum(t, bags, 2, 2, out, 5) != 0)
        return fprintf(stderr, "lookup: %s\n", emb_last_error()), 1;
    printf("\nbag sums [[0,1],[3,4]]: %g %g\n", out[0], out[5]);

    const int64_t bad[] = {0, 5};
    int r = emb_gather(t, bad, 2, out, 5);
    printf("bad id: %s: %s\n", emb_strerror(r), emb_last_error());
    emb_table_destroy(&t);
    return 0;
}
