/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_peer.c — the peer comparison. emb-bench writes, next to the shared tables file
 * (/dev/shm/emb-bench-PID/tables.bin, mapped by both processes), a manifest and the ids of
 * every id set, then runs `$PYTHON peer_torch.py MANIFEST` (default python3 on PATH)
 * and reads its lines
 *     peer BAGS PHASE THREADS MEDIAN_S P90_S
 * into the rows of the same bags, phase and thread count. Each table's manifest entry is
 * [rows, D, offset in 4-byte units, dtype]; 16-bit tables are read by torch as its float16
 * and bfloat16 (a torch without that dtype's embedding_bag prints a note and no lines).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emb_bench.h"

#ifndef EMB_BENCH_PEER_SCRIPT /* the source tree's copy */
#define EMB_BENCH_PEER_SCRIPT "perf/peer_torch.py"
#endif
#ifndef EMB_BENCH_PEER_INSTALLED /* the installed copy */
#define EMB_BENCH_PEER_INSTALLED "/usr/local/share/embtables/peer_torch.py"
#endif

/* --peer-script, else the source tree's script when it exists, else the installed one. */
static const char *peer_script(const BenchConfig *c)
{
    if (c->peer_script)
        return c->peer_script;
    return access(EMB_BENCH_PEER_SCRIPT, R_OK) == 0 ? EMB_BENCH_PEER_SCRIPT
                                                      : EMB_BENCH_PEER_INSTALLED;
}

static int write_file(const char *dir, const char *name, const void *data, size_t bytes)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = fwrite(data, 1, bytes, f);
    return fclose(f) == 0 && n == bytes ? 0 : -1;
}

static void write_list_i(FILE *f, const char *key, const int *x, int n)
{
    fprintf(f, "  \"%s\": [", key);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%d", i ? ", " : "", x[i]);
    fprintf(f, "],\n");
}

static void write_tables(FILE *f, const BenchWorkload *w, const BenchConfig *c)
{
    fprintf(f, "  \"tables_file\": \"tables.bin\",\n  \"tables\": [");
    for (int t = 0; t < c->ntables; t++) {
        int64_t stride;
        const char *data = emb_table_data(w->tables[t], &stride);
        fprintf(f, "%s[%lld, %d, %lld, \"%s\"]", t ? ", " : "", (long long)c->tables[t].rows,
                c->tables[t].dim, (long long)((data - (const char *)w->shm) / 4),
                emb_dtype_name(c->tables[t].dtype));
    }
    fprintf(f, "],\n");
}

/* Untimed steps the peer runs before its first row of each variant, so that row does not
   pay the process's first page faults (see peer_torch.py's prime). */
#define BENCH_PEER_PRIME 8

/* One entry per variant: its name and, per id set, the files and per-table nnz. In steady
   state the sets are steps of the stream that none of our rows ran: BENCH_PEER_PRIME, then
   warmup + iters for each of the peer's rows of the variant (phases x thread counts); the
   peer walks them in order across its rows, so no row sees a step an earlier one saw.
   Recycled, the four sets (the peer's rows cycle through them from the first). */
static int write_sets(FILE *f, const BenchWorkload *w, const BenchConfig *c)
{
    const int nsets =
        w->steady ? BENCH_PEER_PRIME + (c->warmup + c->iters) * c->nphases * c->nthreads
                  : BENCH_NSETS;
    fprintf(f, "  \"variants\": [\n");
    for (int v = 0; v < c->nvariants; v++) {
        fprintf(f, "    {\"name\": \"%s\", \"sets\": [", c->variants[v].name);
        for (int s = 0; s < nsets; s++) {
            BenchIdSet fresh = {0};
            const BenchIdSet *set = &w->sets[v][s % BENCH_NSETS];
            if (w->steady) { /* steps past the stream's ring */
                if (bench_idset_create(&fresh, c, v, w->next_step[v] + BENCH_NSETS + s) != 0) {
                    bench_idset_free(&fresh);
                    return -1;
                }
                set = &fresh;
            }
            char ids[64], off[64];
            snprintf(ids, sizeof ids, "ids_%d_%d.i64", v, s);
            snprintf(off, sizeof off, "offsets_%d_%d.i64", v, s);
            const int rc = write_file(w->shm_dir, ids, set->ids, (size_t)set->nnz * 8) != 0 ||
                           write_file(w->shm_dir, off, set->offsets,
                                      (size_t)(c->ntables * (c->batch + 1)) * 8) != 0;
            bench_idset_free(&fresh);
            if (rc)
                return -1;
            fprintf(f, "%s{\"ids\": \"%s\", \"offsets\": \"%s\"}", s ? ", " : "", ids, off);
        }
        fprintf(f, "]}%s\n", v + 1 < c->nvariants ? "," : "");
    }
    fprintf(f, "  ]\n");
    return 0;
}

int bench_workload_export(const BenchWorkload *w, const BenchConfig *c)
{
    char path[160];
    snprintf(path, sizeof path, "%s/manifest.json", w->shm_dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\n  \"batch\": %lld,\n  \"iters\": %d,\n  \"warmup\": %d,\n  \"lr\": %g,\n",
            (long long)c->batch, c->iters, c->warmup, c->lr);
    fprintf(f, "  \"prime\": %d,\n", w->steady ? BENCH_PEER_PRIME : 0);
    write_list_i(f, "threads", c->threads, c->nthreads);
    fprintf(f, "  \"phases\": [");
    for (int p = 0; p < c->nphases; p++)
        fprintf(f, "%s\"%s\"", p ? ", " : "", c->phases[p].name);
    fprintf(f, "],\n");
    write_tables(f, w, c);
    int rc = write_sets(f, w, c);
    fprintf(f, "}\n");
    return fclose(f) == 0 ? rc : -1;
}

static int find_index(const char *name, int n, const char *(*get)(const BenchConfig *, int),
                      const BenchConfig *c)
{
    for (int i = 0; i < n; i++)
        if (strcmp(name, get(c, i)) == 0)
            return i;
    return -1;
}

static const char *variant_name(const BenchConfig *c, int i)
{
    return c->variants[i].name;
}

static const char *phase_name(const BenchConfig *c, int i)
{
    return c->phases[i].name;
}

/* Applies one "peer ..." line to every row of the same bags, phase and threads. */
static void apply_line(BenchResults *r, const BenchConfig *c, const char *line)
{
    char bags[64], phase[64];
    int threads;
    double med, p90;
    if (sscanf(line, "peer %63s %63s %d %lf %lf", bags, phase, &threads, &med, &p90) != 5)
        return;
    int v = find_index(bags, c->nvariants, variant_name, c);
    int ph = find_index(phase, c->nphases, phase_name, c);
    for (int i = 0; i < r->nrows; i++) {
        BenchRow *x = &r->rows[i];
        if (x->variant == v && x->phase == ph && x->threads == threads)
            x->peer_s = med;
    }
}

/* $PYTHON, default python3 on PATH; NULL (printed) when it holds a quote. */
static const char *python(void)
{
    const char *py = getenv("PYTHON");
    py = py && *py ? py : "python3";
    if (strchr(py, '\'')) {
        fprintf(stderr, "emb-bench: $PYTHON must not contain a quote\n");
        return NULL;
    }
    return py;
}

int bench_peer_check(void)
{
    const char *py = python();
    char cmd[512];
    if (!py)
        return -1;
    snprintf(cmd, sizeof cmd, "'%s' -c 'import torch' 2>/dev/null", py);
    FILE *p = popen(cmd, "r");
    if (!p || pclose(p) != 0) {
        fprintf(stderr, "emb-bench: --peer torch: %s cannot import torch; install it for that "
                        "Python (Debian: python3-torch for /usr/bin/python3, or pip install "
                        "torch) or point $PYTHON at one that has it\n", py);
        return -1;
    }
    return 0;
}

int bench_peer_run(BenchResults *r, const BenchConfig *c, const BenchWorkload *w)
{
    if (!w->shm) {
        fprintf(stderr, "emb-bench: the torch peer needs the tables in shared memory\n");
        return -1;
    }
    if (bench_workload_export(w, c) != 0) {
        fprintf(stderr, "emb-bench: cannot write the peer's files in %s\n", w->shm_dir);
        return -1;
    }
    char cmd[1024], line[512];
    const char *py = python();
    if (!py)
        return -1;
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s/manifest.json'", py, peer_script(c), w->shm_dir);
    fprintf(stderr, "emb-bench: running the peer: %s\n", cmd);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    while (fgets(line, sizeof line, p)) {
        if (strncmp(line, "peer ", 5) == 0)
            apply_line(r, c, line);
        else
            fputs(line, stderr);
    }
    int rc = pclose(p);
    if (rc != 0)
        fprintf(stderr, "emb-bench: the peer exited with %d (torch installed for $PYTHON, "
                "default python3 on PATH?)\n", WIFEXITED(rc) ? WEXITSTATUS(rc) : rc);
    return rc == 0 ? 0 : -1;
}
