/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_workload.c — the tables and the ids of a run, deterministic from the seed.
 *
 * Ids are drawn per (variant, step, table) from their own seed by the benchmarks' one
 * generator (bench_ids.h: uniform, Zipf by rejection-inversion, or a trace file). With a peer,
 * the tables live in one /dev/shm file that both processes map, and the ids are written
 * next to it: the peer works on the very same bytes.
 */
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_ids.h"
#include "emb_bench.h"

/* ---- ids ------------------------------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The distinct rows of @ids (each in [0, rows)) by a bitmap of the table's rows, @bits
 * (all clear; left clear): a pass over the ids, where the former sort of each step's ids
 * cost ten times the draws and held the default run to 9 rounds of its bags of 20. */
static int64_t count_distinct_bits(const int64_t *ids, int64_t n, uint64_t *bits)
{
    int64_t d = 0;
    for (int64_t i = 0; i < n; i++) {
        const uint64_t r = (uint64_t)ids[i], m = 1ull << (r & 63);
        d += !(bits[r >> 6] & m);
        bits[r >> 6] |= m;
    }
    for (int64_t i = 0; i < n; i++)
        bits[(uint64_t)ids[i] >> 6] = 0;
    return d;
}

/* The same by a sort (a table too large for a bitmap). */
static int64_t count_distinct(const int64_t *ids, int64_t n)
{
    int64_t *tmp = malloc((size_t)(n ? n : 1) * sizeof *tmp), d = 0;
    if (!tmp)
        return n;
    memcpy(tmp, ids, (size_t)n * sizeof *tmp);
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_i64);
    for (int64_t i = 0; i < n; i++)
        d += i == 0 || tmp[i] != tmp[i - 1];
    free(tmp);
    return d;
}

static int32_t bag_length(const BenchBagSpec *b, uint64_t *st)
{
    if (b->kind == BAG_FIXED)
        return b->lo;
    return b->lo + (int32_t)(bench_splitmix(st) % (uint64_t)(b->hi - b->lo + 1));
}

/* Offsets of one table's bags and its rows (from the config's source); returns nnz.
   @rows NULL: count only. */
static int64_t fill_table_ids(const BenchConfig *c, int v, int64_t step, int t, int64_t *off,
                              int64_t *rows)
{
    const int64_t nrows = c->tables[t].rows;
    uint64_t st = c->seed ^ ((uint64_t)(v * BENCH_NSETS) << 48) ^ ((uint64_t)t << 32) ^
                  ((uint64_t)step * 0x9e3779b97f4a7c15ull);
    bench_splitmix(&st);
    BenchIdGen gen;
    if (c->ids == IDS_TRACE)
        bench_idgen_trace(&gen, nrows, c->trace_ids[t], c->trace_n[t]);
    else /* the permutation of ranks is the table's: the same hot rows every step */
        bench_idgen_init(&gen, c->ids == IDS_ZIPF ? BENCH_IDS_ZIPF : BENCH_IDS_UNIFORM, nrows,
                         c->zipf_s, c->seed ^ ((uint64_t)t << 32));
    uint64_t st_len = bench_splitmix(&st); /* lengths: their own stream, ids or not */
    const int64_t trace_at = step * c->batch * c->variants[v].hi; /* a trace: in order */
    off[0] = 0;
    for (int64_t b = 0; b < c->batch; b++) {
        int32_t len = bag_length(&c->variants[v], &st_len);
        for (int32_t i = 0; rows && i < len; i++)
            rows[off[b] + i] = bench_idgen_row(&gen, &st, trace_at + off[b] + i);
        off[b + 1] = off[b] + len;
    }
    return off[c->batch];
}

static int any_dynamic(const BenchConfig *c)
{
    for (int t = 0; t < c->ntables; t++)
        if (c->tables[t].dynamic)
            return 1;
    return 0;
}

/* The (bag, distinct id of the bag) pairs of @nbags bags (CSR @off over @rows): every one
 * a row some kernel must read for that bag. A bag of more than 64 ids counts the distinct
 * of its first 64 (fewer than the truth: the roof stays a bound). */
static int64_t count_pairs(const int64_t *rows, const int64_t *off, int64_t nbags)
{
    int64_t n = 0;
    for (int64_t b = 0; b < nbags; b++) {
        const int64_t *r = rows + off[b];
        const int64_t len = off[b + 1] - off[b] < 64 ? off[b + 1] - off[b] : 64;
        for (int64_t i = 0; i < len; i++) {
            int64_t j = 0;
            while (j < i && r[j] != r[i])
                j++;
            n += j == i;
        }
    }
    return n;
}

int bench_idset_create(BenchIdSet *s, const BenchConfig *c, int v, int64_t step)
{
    const int nt = c->ntables;
    const int64_t nb = c->batch + 1;
    memset(s, 0, sizeof *s);
    s->step = step;
    s->batches = calloc((size_t)nt, sizeof *s->batches);
    s->offsets = malloc((size_t)(nt * nb) * sizeof *s->offsets);
    s->distinct_t = calloc((size_t)nt, sizeof *s->distinct_t);
    s->pairs_t = calloc((size_t)nt, sizeof *s->pairs_t);
    s->lvl_rows = calloc((size_t)nt * BENCH_LEVELS, sizeof *s->lvl_rows);
    if (!s->batches || !s->offsets || !s->distinct_t || !s->pairs_t || !s->lvl_rows)
        return -1;
    int64_t total = 0;
    for (int t = 0; t < nt; t++)
        total += fill_table_ids(c, v, step, t, s->offsets + t * nb, NULL);
    s->rows = malloc((size_t)(total ? total : 1) * sizeof *s->rows);
    s->ids = any_dynamic(c) ? malloc((size_t)(total ? total : 1) * sizeof *s->ids) : s->rows;
    if (!s->rows || !s->ids)
        return -1;
    s->nnz = total;
    s->distinct = 0;
    int64_t maxrows = 1;
    for (int t = 0; t < nt; t++)
        maxrows = c->tables[t].rows > maxrows ? c->tables[t].rows : maxrows;
    uint64_t *bits = calloc((size_t)(maxrows + 63) / 64, sizeof *bits); /* NULL: by sorting */
    for (int64_t t = 0, at = 0; t < nt; t++) {
        int64_t *off = s->offsets + t * nb;
        const int64_t n = fill_table_ids(c, v, step, (int)t, off, s->rows + at);
        for (int64_t i = 0; s->ids != s->rows && i < n; i++) /* dyn: the row's sparse id */
            s->ids[at + i] = c->tables[t].dynamic ? bench_dyn_id(s->rows[at + i]) : s->rows[at + i];
        s->batches[t] = (EmbBatch){.ids = s->ids + at, .id_type = EMB_ID_I64, .nnz = n,
                                   .nbags = c->batch, .offsets = off};
        if (c->variants[v].kind == BAG_FIXED) {
            s->batches[t].offsets = NULL;
            s->batches[t].bag_size = c->variants[v].lo;
        }
        s->distinct_t[t] = bits ? count_distinct_bits(s->rows + at, n, bits)
                                : count_distinct(s->rows + at, n);
        s->pairs_t[t] = count_pairs(s->rows + at, off, c->batch);
        s->distinct += s->distinct_t[t];
        at += n;
    }
    free(bits);
    return 0;
}

/* ---- tables --------------------------------------------------------------------------- */

/* Deterministic small values; every page is written, so no row reads the zero page. */
static void fill_table(void *data, int64_t stride, const BenchTableSpec *s, uint64_t seed)
{
    for (int64_t r = 0; r < s->rows; r++) {
        uint64_t st = seed ^ (uint64_t)r, h = bench_splitmix(&st);
        if (s->dtype == EMB_F32) {
            float *col = (float *)data + r * stride;
            for (int32_t d = 0; d < s->dim; d++)
                col[d] = (float)((h >> (d & 31)) & 0xffff) * (0.1f / 65536) - 0.05f;
        } else { /* small positive halves: f16 exponent 8, bf16 exponent 120 */
            uint16_t *col = (uint16_t *)data + r * stride, base = s->dtype == EMB_F16 ? 0x2000 : 0x3c00;
            for (int32_t d = 0; d < s->dim; d++)
                col[d] = (uint16_t)(base | ((h >> (d & 31)) & 0x3f));
        }
    }
}

/* A quantized table's rows: fill_table's f32 values quantized (emb_table_quantize), a
   chunk of rows at a time. */
static int fill_quantized(EmbTable *t, const BenchTableSpec *s, uint64_t seed)
{
    enum { CHUNK = 4096 };
    int64_t stride; /* bytes */
    char *data = emb_table_data(t, &stride);
    float *rows = malloc((size_t)CHUNK * (size_t)s->dim * sizeof *rows);
    int rc = rows ? 0 : EMB_ENOMEM;
    for (int64_t r0 = 0; !rc && r0 < s->rows; r0 += CHUNK) {
        const int64_t n = s->rows - r0 < CHUNK ? s->rows - r0 : CHUNK;
        const BenchTableSpec f32 = {.rows = n, .dim = s->dim, .dtype = EMB_F32};
        fill_table(rows, s->dim, &f32, seed + (uint64_t)r0); /* as make_dynamic */
        EmbTable *src = NULL, *dst = NULL;
        rc = emb_table_wrap(&src, rows, n, s->dim, s->dim, EMB_F32, NULL);
        rc = rc ? rc : emb_table_wrap(&dst, data + r0 * stride, n, s->dim, stride, s->dtype, NULL);
        rc = rc ? rc : emb_table_quantize(dst, src);
        emb_table_destroy(&src);
        emb_table_destroy(&dst);
    }
    free(rows);
    return rc;
}

static int64_t aligned_elems(const BenchTableSpec *s)
{
    int64_t bytes = s->rows * (int64_t)emb_dtype_row_bytes(s->dtype, s->dim);
    return (bytes + 4095) / 4096 * 4096;
}

static int map_shared(BenchWorkload *w, const BenchConfig *c)
{
    snprintf(w->shm_dir, sizeof w->shm_dir, "/dev/shm/emb-bench-%ld", (long)getpid());
    if (mkdir(w->shm_dir, 0700) != 0)
        return -1;
    char path[160];
    snprintf(path, sizeof path, "%s/tables.bin", w->shm_dir);
    w->shm_bytes = 0;
    for (int t = 0; t < c->ntables; t++)
        w->shm_bytes += (size_t)aligned_elems(&c->tables[t]);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    int rc = ftruncate(fd, (off_t)w->shm_bytes);
    w->shm = rc == 0 ? mmap(NULL, w->shm_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (w->shm == MAP_FAILED) {
        w->shm = NULL;
        return -1;
    }
    return 0;
}

/* A dynamic table holding row r under bench_dyn_id(r), with fill_table's f32 values
   (rounded to the dtype), imported in chunks. */
static int make_dynamic(BenchWorkload *w, const BenchConfig *c, int t, const char *name)
{
    const BenchTableSpec *s = &c->tables[t];
    const EmbDynamicOptions o = {.table = {.name = name}, .capacity = s->rows};
    int rc = emb_table_dynamic_create(&w->tables[t], s->dim, s->dtype, &o);
    enum { CHUNK = 4096 };
    int64_t *ids = malloc(CHUNK * sizeof *ids);
    float *rows = malloc((size_t)CHUNK * (size_t)s->dim * sizeof *rows);
    if (!rc && (!ids || !rows))
        rc = EMB_ENOMEM;
    const BenchTableSpec f32 = {.rows = CHUNK, .dim = s->dim, .dtype = EMB_F32};
    const uint64_t seed = c->seed * 1000003u + (uint64_t)t;
    for (int64_t r0 = 0; !rc && r0 < s->rows; r0 += CHUNK) {
        const int64_t n = s->rows - r0 < CHUNK ? s->rows - r0 : CHUNK;
        fill_table(rows, s->dim, &f32, seed + (uint64_t)r0);
        for (int64_t k = 0; k < n; k++)
            ids[k] = bench_dyn_id(r0 + k);
        rc = emb_table_dynamic_import(w->tables[t], ids, rows, s->dim, n);
    }
    free(ids);
    free(rows);
    if (rc != 0)
        fprintf(stderr, "emb-bench: dynamic table %d: %s\n", t, emb_last_error());
    w->table_bytes += s->rows * (int64_t)emb_dtype_row_bytes(s->dtype, s->dim);
    return rc;
}

static int make_table(BenchWorkload *w, const BenchConfig *c, int t, size_t *shm_at)
{
    const BenchTableSpec *s = &c->tables[t];
    char name[32];
    snprintf(name, sizeof name, "t%02d", t);
    if (s->dynamic)
        return make_dynamic(w, c, t, name);
    if (s->tiered)
        return bench_tier_make(w, c, t, name);
    EmbTableOptions o = {.name = name};
    int rc;
    if (w->shm) {
        void *data = (char *)w->shm + *shm_at;
        *shm_at += (size_t)aligned_elems(s);
        const int64_t stride = emb_dtype_size(s->dtype) ? s->dim /* elements; quantized: bytes */
                                                        : (int64_t)emb_dtype_row_bytes(s->dtype, s->dim);
        rc = emb_table_wrap(&w->tables[t], data, s->rows, s->dim, stride, s->dtype, &o);
    } else {
        rc = emb_table_create(&w->tables[t], s->rows, s->dim, s->dtype, &o);
    }
    if (rc != 0) {
        fprintf(stderr, "emb-bench: table %d: %s\n", t, emb_last_error());
        return rc;
    }
    const uint64_t seed = c->seed * 1000003u + (uint64_t)t;
    if (!emb_dtype_size(s->dtype)) {
        rc = fill_quantized(w->tables[t], s, seed);
        if (rc != 0)
            fprintf(stderr, "emb-bench: table %d: %s\n", t, emb_last_error());
    } else {
        int64_t stride;
        void *data = emb_table_data(w->tables[t], &stride);
        fill_table(data, stride, s, seed);
    }
    w->table_bytes += s->rows * (int64_t)emb_dtype_row_bytes(s->dtype, s->dim);
    return rc;
}

int bench_workload_create(BenchWorkload *w, const BenchConfig *c, int shared)
{
    memset(w, 0, sizeof *w);
    for (int t = 0; shared && t < c->ntables; t++)
        if (c->tables[t].dynamic || c->tables[t].tiered) {
            fprintf(stderr, "emb-bench: %s tables have no memory to share with a peer\n",
                    c->tables[t].dynamic ? "dynamic (dyn:)" : "tiered (tier:)");
            return -1;
        }
    w->ntables = c->ntables;
    w->tables = calloc((size_t)c->ntables, sizeof *w->tables);
    if (!w->tables || (shared && map_shared(w, c) != 0)) {
        fprintf(stderr, "emb-bench: cannot allocate the tables%s\n", shared ? " in /dev/shm" : "");
        return -1;
    }
    size_t shm_at = 0;
    for (int t = 0; t < c->ntables; t++) {
        bench_progress("building table %d/%d", t + 1, c->ntables);
        if (make_table(w, c, t, &shm_at) != 0)
            return -1;
        w->concat_width += c->tables[t].dim;
    }
    w->out = calloc((size_t)(c->batch * w->concat_width), sizeof *w->out);
    w->grad = malloc((size_t)(c->batch * w->concat_width) * sizeof *w->grad);
    if (!w->out || !w->grad)
        return -1;
    for (int64_t i = 0; i < c->batch * w->concat_width; i++)
        w->grad[i] = (float)(i % 17) * 1e-3f - 8e-3f;
    w->steady = !c->recycle;
    for (int v = 0; v < c->nvariants; v++) {
        w->refill[v] = -1;
        for (int s = 0; s < BENCH_NSETS; s++) {
            bench_progress("drawing ids: %s, step %d/%d", c->variants[v].name, s + 1, BENCH_NSETS);
            if (bench_idset_create(&w->sets[v][s], c, v, s) != 0)
                return -1;
        }
    }
    bench_progress_end();
    return bench_stream_create(w, c);
}

void bench_idset_free(BenchIdSet *s)
{
    free(s->batches);
    if (s->ids != s->rows)
        free(s->ids);
    free(s->rows);
    free(s->offsets);
    free(s->distinct_t);
    free(s->pairs_t);
    free(s->lvl_rows);
    memset(s, 0, sizeof *s);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

/* The folder shared with the peer and its files, depth first (nftw: no shell). */
static void remove_shared(BenchWorkload *w)
{
    if (!w->shm_dir[0])
        return;
    if (nftw(w->shm_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "emb-bench: could not remove %s\n", w->shm_dir);
    w->shm_dir[0] = '\0';
}

void bench_workload_destroy(BenchWorkload *w)
{
    for (int t = 0; w->tables && t < w->ntables; t++)
        emb_table_destroy(&w->tables[t]);
    free(w->tables);
    bench_stream_destroy(w, w->ntables);
    bench_tier_unlink(w);
    for (int v = 0; v < BENCH_MAX_VARIANTS; v++)
        for (int s = 0; s < BENCH_NSETS; s++)
            bench_idset_free(&w->sets[v][s]);
    if (w->shm)
        munmap(w->shm, w->shm_bytes);
    remove_shared(w);
    free(w->out);
    free(w->grad);
    memset(w, 0, sizeof *w);
}

/* ---- byte model ----------------------------------------------------------------------- */

static double row_bytes(const BenchConfig *c)
{
    double b = 0, rows = 0;
    for (int t = 0; t < c->ntables; t++) {
        b += (double)emb_dtype_row_bytes(c->tables[t].dtype, c->tables[t].dim);
        rows += 1;
    }
    return b / rows;
}

int32_t bench_roof_dim(const BenchConfig *c)
{
    int32_t d = (int32_t)(row_bytes(c) / 4 + 0.5);
    return d < 1 ? 1 : d;
}

/* Ids read per iteration times each table's row bytes, averaged over the id sets. */
double bench_bytes_read(const BenchWorkload *w, const BenchConfig *c, int v)
{
    double sum = 0;
    for (int s = 0; s < BENCH_NSETS; s++)
        for (int t = 0; t < c->ntables; t++)
            sum += (double)w->sets[v][s].batches[t].nnz *
                   (double)emb_dtype_row_bytes(c->tables[t].dtype, c->tables[t].dim);
    return sum / BENCH_NSETS;
}

/* Distinct rows read and written once each (the optimizer state: bench_bytes_state). */
double bench_bytes_updated(const BenchWorkload *w, const BenchConfig *c, int v)
{
    double sum = 0;
    for (int s = 0; s < BENCH_NSETS; s++)
        sum += 2.0 * (double)w->sets[v][s].distinct * row_bytes(c);
    return sum / BENCH_NSETS;
}

/* Mean state bytes of one distinct row (0: no state). */
static double state_row_bytes(const BenchConfig *c, BenchOpt opt)
{
    double b = 0;
    for (int t = 0; t < c->ntables; t++)
        b += bench_state_row_bytes(&c->tables[t], opt);
    return b / c->ntables;
}

double bench_bytes_state(const BenchWorkload *w, const BenchConfig *c, int v, BenchOpt opt)
{
    double sum = 0;
    for (int s = 0; s < BENCH_NSETS; s++)
        sum += 2.0 * (double)w->sets[v][s].distinct * state_row_bytes(c, opt);
    return sum / BENCH_NSETS;
}
