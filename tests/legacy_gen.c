/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * legacy_gen.c — writes DIR/legacy-0.safetensors (Adam) and DIR/legacy-1.safetensors (FTRL)
 * from legacy_model.h. Built against the library of ce17ca2 to make tests/data/'s files
 * (kept as they were written: test_ckpt_legacy.c checks today's library against them).
 * Usage: legacy_gen DIR
 */
#include <string.h>

#include "legacy_model.h"

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    for (int which = 0; which < 2; which++) {
        EmbTable *t[LEGACY_NT];
        EmbOptimizer *opt = NULL;
        EmbCheckpointVar v[LEGACY_NT];
        legacy_model(which, t, &opt);
        legacy_vars(t, v);
        char prefix[32];
        snprintf(prefix, sizeof prefix, "legacy%d", which);
        const EmbSaverOptions so = {.var_list = v, .nvars = LEGACY_NT, .optimizer = opt,
                                    .max_to_keep = 0};
        EmbSaver *sv = NULL;
        LEGACY_CHECK(emb_saver_create(&sv, argv[1], prefix, &so));
        char path[512];
        LEGACY_CHECK(emb_saver_save(sv, NULL, 7, path, sizeof path));
        printf("%s\n", path);
        emb_saver_destroy(&sv);
        legacy_free(t, &opt);
    }
    return 0;
}
