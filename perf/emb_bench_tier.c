/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_tier.c — emb-bench's tiered tables (tier:NxROWSxD[:dtype]:CACHE, tiered.h):
 * their files (in --tier-dir) and the header lines: the I/O engine, the caches and the
 * disk's own random-read rate for the record size, measured in the run (bench_disk.c).
 * The step against the same ensemble in memory: emb_bench_tier_compare.c.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_disk.h"
#include "emb_bench.h"

#define TIER_FILE_HEADER 4096 /* a tiered table's file: this header, then the records */

/* ---- the tables --------------------------------------------------------------------- */

EmbInitializer bench_tier_initializer(const BenchConfig *c, int t)
{
    return (EmbInitializer){EMB_INIT_UNIFORM, -0.05f, 0.05f, c->seed * 1000003u + (uint64_t)t};
}

/* The state room of table @t: the widest state of the phases' optimizers. */
static int32_t state_width(const BenchConfig *c, int t)
{
    int32_t w = 0;
    for (int p = 0; p < c->nphases; p++) {
        const int32_t k = c->phases[p].opt == OPT_NONE ? 0
                          : emb_optimizer_state_width(bench_opt_kind(c->phases[p].opt),
                                                      c->tables[t].dim);
        w = k > w ? k : w;
    }
    return w;
}

/* A record: the row padded to 16 bytes, then room for the optimizers' state. */
static int64_t record_bytes(const BenchConfig *c, int t)
{
    const BenchTableSpec *s = &c->tables[t];
    return ((int64_t)emb_dtype_row_bytes(s->dtype, s->dim) + 15) / 16 * 16 +
           4 * (int64_t)state_width(c, t);
}

static const char *tier_dir(const BenchConfig *c)
{
    const char *tmp = getenv("TMPDIR");
    return c->tier_dir ? c->tier_dir : tmp && *tmp ? tmp : "/var/tmp";
}

int bench_tier_make(BenchWorkload *w, const BenchConfig *c, int t, const char *name)
{
    const BenchTableSpec *s = &c->tables[t];
    for (int p = 0; p < c->nphases; p++)
        for (int q = 0; q < p; q++)
            if (c->phases[p].opt && c->phases[q].opt && c->phases[p].opt != c->phases[q].opt) {
                fprintf(stderr, "emb-bench: a tiered table keeps one optimizer's state: "
                        "%s and %s cannot both train it (one optimizer in --phases)\n",
                        c->phases[q].name, c->phases[p].name);
                return EMB_EINVAL;
            }
    if (!w->tier_paths && !(w->tier_paths = calloc((size_t)c->ntables, sizeof *w->tier_paths)))
        return EMB_ENOMEM;
    const size_t len = strlen(tier_dir(c)) + 48;
    if (!(w->tier_paths[t] = malloc(len)))
        return EMB_ENOMEM;
    snprintf(w->tier_paths[t], len, "%s/emb-bench-%ld-%s.tier", tier_dir(c), (long)getpid(), name);
    const int64_t rec = record_bytes(c, t);
    int64_t cache = s->cache_frac > 0 ? (int64_t)(s->cache_frac * (double)(s->rows * rec))
                                      : s->cache_bytes;
    const EmbTieredOptions o = {.table = {.name = name}, .cache_bytes = cache < rec ? rec : cache,
                                .state_width = state_width(c, t)};
    int rc = emb_table_tiered_create(&w->tables[t], w->tier_paths[t], s->rows, s->dim, s->dtype, &o);
    const EmbInitializer in = bench_tier_initializer(c, t);
    rc = rc ? rc : emb_table_initialize(w->tables[t], &in);
    rc = rc ? rc : emb_table_tiered_flush(w->tables[t]);
    if (rc)
        fprintf(stderr, "emb-bench: tiered table %d: %s\n", t, emb_last_error());
    w->table_bytes += s->rows * (int64_t)emb_dtype_row_bytes(s->dtype, s->dim);
    w->ntiered++;
    return rc;
}

void bench_tier_unlink(BenchWorkload *w)
{
    for (int t = 0; w->tier_paths && t < w->ntables; t++) {
        if (w->tier_paths[t])
            unlink(w->tier_paths[t]);
        free(w->tier_paths[t]);
    }
    free(w->tier_paths);
    w->tier_paths = NULL;
}

void bench_tier_header(BenchWorkload *w, const BenchConfig *c, FILE *f)
{
    int first = -1;
    double cache = 0, file = 0;
    EmbTieredStats st = {0};
    for (int t = 0; t < w->ntables; t++) {
        if (!c->tables[t].tiered || emb_table_tiered_stats(w->tables[t], &st) != 0)
            continue;
        first = first < 0 ? t : first;
        cache += (double)(st.cache_rows * st.record_bytes);
        file += (double)(c->tables[t].rows * st.record_bytes);
    }
    if (first < 0)
        return;
    emb_table_tiered_stats(w->tables[first], &st);
    fprintf(f, "# tiered: %d tables, files in %s; I/O engine %s; caches %.1f of %.1f MiB of "
            "records (%.1f%%); records of %lld bytes (row + optimizer state); every step "
            "prefetches the next batch\n", w->ntiered, tier_dir(c), st.engine, cache / 1048576.0,
            file / 1048576.0, 100.0 * cache / file, (long long)st.record_bytes);
    const int64_t n = c->quick ? 256 : 20000, rows = c->tables[first].rows;
    const char *path = w->tier_paths[first];
    w->disk_rate[0] = bench_disk_rate(path, TIER_FILE_HEADER, rows, st.record_bytes, n, 1);
    w->disk_rate[1] = bench_disk_rate(path, TIER_FILE_HEADER, rows, st.record_bytes, 4 * n, 16);
    fprintf(f, "# disk: random reads of %lld-byte records of %s (pread, its pages dropped "
            "first): %.0f /s at depth 1, %.0f /s at depth 16\n", (long long)st.record_bytes,
            path, w->disk_rate[0], w->disk_rate[1]);
    bench_disk_cached_cost(path, TIER_FILE_HEADER, rows, st.record_bytes, n, &w->cached_cost[0],
                           &w->cached_cost[1]);
    fprintf(f, "# page cache: a record's pread %.2f us, pwrite %.2f us (its page cached, one "
            "thread): the I/O roof of a tiered step is the in-memory step plus its reads and "
            "writes at these costs\n", 1e6 * w->cached_cost[0], 1e6 * w->cached_cost[1]);
}

