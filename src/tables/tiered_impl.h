/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tiered_impl.h — the entries of a tiered table's contract that pass over its whole file
 * (tiered_file.c): initialize, the optimizer state's attach (and its view table),
 * checkpoints (save_list: the flushed file read with pread in windows, so rows stream
 * through the page cache and a file cut meanwhile fails the save; a restore stages into a
 * copy of the file, mapped, that replaces it on commit).
 */
#ifndef EMB_TIERED_IMPL_H
#define EMB_TIERED_IMPL_H

#include "tables/table_ops.h"
#include "tables/tier_impl.h"

/* Drops one reference (the table's or its state view's); the last flushes and frees. */
void emb__tiered_unref(Tier *x);

/* The rows of span @s resolved (pinned) into cols, each plus @offset bytes (the state view:
   its records' state); spans of any length. 0 or EMB_EIO / EMB_ENOMEM. */
int emb__tiered_resolve_span(Tier *x, const EmbIdSpan *s, EmbContext ctx, const void **cols,
                             size_t offset);
int emb__tiered_initialize(EmbTable *t, const struct EmbInitializer *in);
int emb__tiered_state_attach(EmbTable *t, int32_t width, const float *init, EmbTable **view);
const EmbTable *emb__tiered_state_view(const EmbTable *t);
int emb__tiered_save_list(const EmbTable *t, bool state, EmbRowList *out);
void emb__tiered_restore_extras(const EmbTable *t, EmbExtraTensor *extra, int *n);
int emb__tiered_stage(const EmbTable *t, const EmbStageIn *in, EmbRowStage **out);
void *emb__tiered_stage_dst(EmbRowStage *s, int what, int64_t k);
void emb__tiered_stage_commit(EmbTable *t, EmbRowStage *s);
void emb__tiered_stage_free(EmbRowStage *s);

#endif
