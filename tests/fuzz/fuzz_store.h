/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_store.h — the store the checkpoint fuzzer restores into, shared with the program
 * that writes its seed checkpoint (so a seed in the current format always exists). Built
 * with FUZZ_STORE_QUANT (the quantized-checkpoint target, fuzz_quant_checkpoint), its
 * tables are int8 and int4 ones, one of them with EMB_TABLE_CHECK_FINITE.
 */
#ifndef EMB_FUZZ_STORE_H
#define EMB_FUZZ_STORE_H

#include "embtables/embtables.h"

#define FUZZ_STORE_NTABLES 3
#ifdef FUZZ_STORE_QUANT
#define FUZZ_STORE_CHECKED "ctx/bias" /* the table with EMB_TABLE_CHECK_FINITE */
#endif

/* Tables of every dtype, one of them partitioned (FUZZ_STORE_QUANT: int8, int4 and a
 * checked int8), and (when @opt is not NULL) an Adagrad optimizer with state for each of
 * them. @return 0 or an EMB_E* code */
static inline int fuzz_store_create(EmbStore **out, EmbOptimizer **opt)
{
#ifdef FUZZ_STORE_QUANT
    static const EmbVariableSpec specs[FUZZ_STORE_NTABLES] = {
        {.name = "user", .ncolumns = 5, .featuresize = 4, .dtype = EMB_INT8,
         .init = {EMB_INIT_UNIFORM, -1.0f, 1.0f, 1}, .trainable = 1},
        {.name = "item", .ncolumns = 7, .featuresize = 6, .dtype = EMB_INT4,
         .init = {EMB_INIT_NORMAL, 0.0f, 1.0f, 2}, .trainable = 1},
        {.name = "ctx/bias", .ncolumns = 2, .featuresize = 2, .dtype = EMB_INT8,
         .init = {EMB_INIT_CONSTANT, 0.5f, 0.0f, 0},
         .options = {.flags = EMB_TABLE_CHECK_FINITE}},
    };
#else
    static const EmbVariableSpec specs[FUZZ_STORE_NTABLES] = {
        {.name = "user", .ncolumns = 5, .featuresize = 3, .dtype = EMB_F32,
         .init = {EMB_INIT_UNIFORM, -1.0f, 1.0f, 1}, .trainable = 1},
        {.name = "item", .ncolumns = 7, .featuresize = 4, .dtype = EMB_F16,
         .init = {EMB_INIT_NORMAL, 0.0f, 1.0f, 2}, .trainable = 1, .nshards = 2,
         .partition = EMB_PARTITION_MOD},
        {.name = "ctx/bias", .ncolumns = 2, .featuresize = 1, .dtype = EMB_BF16,
         .init = {EMB_INIT_CONSTANT, 0.5f, 0.0f, 0}},
    };
#endif
    EmbStore *s;
    int rc = emb_store_create(&s);
    for (int i = 0; !rc && i < FUZZ_STORE_NTABLES; i++) {
        EmbTable *t;
        rc = emb_store_get(s, &specs[i], EMB_REUSE_NO, &t);
    }
    if (!rc && opt) {
        const EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
        EmbTable *tables[FUZZ_STORE_NTABLES];
        int64_t n = 0;
        rc = emb_optimizer_create(opt, &c);
        rc = rc ? rc : emb_store_list(s, 0, tables, FUZZ_STORE_NTABLES, &n);
        for (int64_t i = 0; !rc && i < n; i++)
            rc = emb_optimizer_attach(*opt, tables[i]);
        if (rc)
            emb_optimizer_destroy(opt);
    }
    if (rc)
        emb_store_destroy(&s);
    *out = s;
    return rc;
}

#endif
