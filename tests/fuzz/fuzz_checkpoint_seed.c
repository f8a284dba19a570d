/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_checkpoint_seed.c — writes a valid checkpoint of fuzz_store.h's store, in the
 * library's current format, with Adagrad state, into DIR (the checkpoint fuzzer's seed;
 * built with FUZZ_STORE_QUANT, the quantized-checkpoint fuzzer's).
 * Usage: fuzz_checkpoint_seed DIR
 */
#include <stdio.h>

#include "fuzz_store.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    EmbStore *s;
    EmbOptimizer *opt = NULL;
    EmbSaver *sv = NULL;
    char path[4096];
    int rc = fuzz_store_create(&s, &opt);
    const EmbSaverOptions so = {.optimizer = opt};
    if (!rc)
        rc = emb_saver_create(&sv, argv[1], "seed", &so);
    if (!rc)
        rc = emb_saver_save(sv, s, 42, path, sizeof path);
    if (rc)
        fprintf(stderr, "%s: %s\n", argv[0], emb_last_error());
    else
        printf("%s\n", path);
    emb_saver_destroy(&sv);
    emb_optimizer_destroy(&opt);
    emb_store_destroy(&s);
    return rc ? 1 : 0;
}
