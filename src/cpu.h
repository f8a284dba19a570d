/* SPDX-License-Identifier: BSD-2-Clause */
/* cpu.h — private CPU-feature control (see cpu.c). */
#ifndef EMB_CPU_H
#define EMB_CPU_H

/* Replaces the feature mask; kernels/dispatch.c re-selects kernels after calling it. */
void emb__cpu_set_mask(unsigned mask);

#endif
