/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_choice.h — the enum-like options of emb-bench and dist-bench (--engine, --plan,
 * --state-dtype, ...): a value outside the accepted ones is refused with a message naming
 * the option and every accepted value; the callers exit 2.
 */
#ifndef EMB_PERF_BENCH_CHOICE_H
#define EMB_PERF_BENCH_CHOICE_H

#include <stdio.h>
#include <string.h>

/* On @f (NULL: silent): "@prog: --@opt: unknown value 'v' (accepted: a, b, ...)". */
static inline void bench_choice_fail(FILE *f, const char *prog, const char *opt,
                                     const char *v, const char *const *names, int n)
{
    if (!f)
        return;
    fprintf(f, "%s: %s%s: unknown value '%s' (accepted:", prog, opt[0] == '-' ? "" : "--",
            opt, v ? v : "");
    for (int k = 0; k < n; k++)
        fprintf(f, "%s %s", k ? "," : "", names[k]);
    fprintf(f, ")\n");
}

/* The index of @v among @names, or -1 after bench_choice_fail(). */
static inline int bench_choice(FILE *f, const char *prog, const char *opt, const char *v,
                               const char *const *names, int n)
{
    for (int k = 0; v && k < n; k++)
        if (!strcmp(v, names[k]))
            return k;
    bench_choice_fail(f, prog, opt, v, names, n);
    return -1;
}

#endif
