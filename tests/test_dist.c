/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_dist.c — the MPI ensemble (run under mpirun: tests/run_mpi.sh) against the
 * single-process library on the same global batch, bit for bit: every placement
 * (table-wise, row-wise mod / div, the automatic mix, explicit), every combiner, weights,
 * pruning, default ids, max_norm, int32 / int64 ids, fixed and ragged bags, f32 / f16 /
 * bf16, every optimizer, one and several table groups, concat and per-table outputs, over
 * two training steps; then the error agreement (a bad id on one rank, differing
 * poolings) and the placement function. Every rank checks its own part; the ranks sum
 * their failures. Exit 0 on success, 1 on a failure.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <embtables/dist.h>
#include <embtables/embtables.h>

#include "dist_check.h"

#define NT 4

typedef struct Case {
    const char *name;
    EmbDistPlan plan;
    unsigned partition;
    int explicit_place;     /* 1: a fixed mix given explicitly; 2: with table-row-wise;
                               3: with replicated (data-parallel) tables; 4: column-wise */
    EmbCombiner combiner;
    int weights;            /* 1: positive, 2: some <= 0 (with pruning) */
    unsigned flags;         /* pooling flags */
    float max_norm;
    int ragged, i32;
    EmbDtype dtype;
    EmbOptimizerKind opt;
    int groups;
    int per_table;
    int ckpt;               /* 1: save, restore into other rank counts, compare */
    int strategy;           /* owners' strategy: 0 sequential (one group) or prealloc-concat,
                               1 parallel, 2 auto (2 threads) */
} Case;

/* table 2 has fewer rows than 4 ranks: row-wise, some ranks hold an empty shard */
static const int64_t nrows_of[NT] = {50, 200, 3, 1000};
static const int32_t D_of[NT] = {8, 16, 4, 12};

/* The global batch of table t: G bags; rank r brings bags [off[r], off[r+1]). */
typedef struct Global {
    int64_t G, nnz, bag_size;
    int64_t *ids, *offsets; /* offsets: G + 1 */
    int32_t *ids32;
    float *weights;
} Global;

static void make_global(Global *g, const Case *c, int64_t t, int64_t G, uint64_t seed)
{
    const int fixed = !c->ragged;
    g->G = G;
    g->bag_size = c->combiner == EMB_COMBINER_NONE ? 1 : 3;
    g->offsets = malloc(sizeof(int64_t) * (G + 1));
    g->offsets[0] = 0;
    for (int64_t b = 0; b < G; b++) {
        const int64_t len = c->combiner == EMB_COMBINER_NONE ? 1
                            : fixed ? g->bag_size : (int64_t)(hash3(seed, t, b) % 6);
        g->offsets[b + 1] = g->offsets[b] + len;
    }
    g->nnz = g->offsets[G];
    g->ids = malloc(sizeof(int64_t) * (g->nnz + 1));
    g->ids32 = malloc(sizeof(int32_t) * (g->nnz + 1));
    g->weights = c->weights ? malloc(sizeof(float) * (g->nnz + 1)) : NULL;
    for (int64_t k = 0; k < g->nnz; k++) {
        const uint64_t h = hash3(seed + 7, t, k);
        const int64_t hot = nrows_of[t] < 7 ? nrows_of[t] : 7; /* skew: ids below 7 */
        int64_t id = (int64_t)(h % 3 == 0 ? (h >> 8) % nrows_of[t] : (h >> 8) % hot);
        if ((c->flags & EMB_PRUNE_INVALID) && h % 11 == 0)
            id = -1 - (int64_t)(h % 3);
        g->ids[k] = id;
        g->ids32[k] = (int32_t)id;
        if (g->weights)
            g->weights[k] = c->weights == 2 && h % 7 == 0 ? -0.5f * (float)(h % 2)
                            : 0.25f + (float)((h >> 20) % 8) / 4.0f;
    }
}

static void free_global(Global *g)
{
    free(g->ids), free(g->offsets), free(g->ids32), free(g->weights);
}

static EmbBatch slice(const Global *g, const Case *c, int64_t b0, int64_t nb, int64_t *offs)
{
    const int64_t k0 = g->offsets[b0];
    EmbBatch b = {.nnz = g->offsets[b0 + nb] - k0, .nbags = nb,
                  .id_type = c->i32 ? EMB_ID_I32 : EMB_ID_I64,
                  .weights = g->weights ? g->weights + k0 : NULL};
    b.ids = c->i32 ? (const void *)(g->ids32 + k0) : (const void *)(g->ids + k0);
    if (c->ragged && c->combiner != EMB_COMBINER_NONE) {
        for (int64_t i = 0; i <= nb; i++)
            offs[i] = g->offsets[b0 + i] - k0;
        b.offsets = offs;
    } else {
        b.bag_size = g->bag_size;
    }
    return b;
}

/* Columns c0 .. c0 + D - 1 of the reference rows @p ids into @p t. */
static void fill_cols(EmbTable *t, int64_t ti, const int64_t *ids, int64_t n, int32_t c0,
                      int32_t D)
{
    float *v = malloc(sizeof(float) * (size_t)(n * D + 1));
    for (int64_t c = 0; c < n; c++)
        for (int32_t j = 0; j < D; j++)
            v[c * D + j] = value(ti, ids[c], c0 + j);
    emb_table_assign(t, v, n, D, D);
    free(v);
}

static void fill(EmbTable *t, int64_t ti, const int64_t *ids, int64_t n, int32_t D)
{
    fill_cols(t, ti, ids, n, 0, D);
}

static float dyval(int64_t bag, int64_t col)
{
    return (float)((int64_t)(hash3(99, bag, col) % 201) - 100) / 64.0f;
}

/* Every column @p d holds equals the reference's. */
static int64_t diff_tables(EmbDist *d, EmbTable *const *ref)
{
    int64_t diff = 0;
    for (int t = 0; t < NT; t++) {
        EmbTable *lt = emb_dist_local_table(d, t);
        if (!lt)
            continue;
        float *a = malloc(sizeof(float) * (size_t)(nrows_of[t] * D_of[t] + 1));
        float *e = malloc(sizeof(float) * (size_t)(nrows_of[t] * D_of[t] + 1));
        int32_t c0, w; /* a column-wise slice, or every column */
        emb_dist_local_columns(d, t, &c0, &w);
        emb_table_read(ref[t], e, D_of[t]);
        emb_table_read(lt, a, w);
        for (int64_t id = 0; id < nrows_of[t]; id++) {
            int32_t owner;
            int64_t col;
            emb_dist_locate(d, t, id, &owner, &col);
            if (owner == emb_dist_rank(d))
                diff += memcmp(a + col * w, e + id * D_of[t] + c0, 4 * (size_t)w) != 0;
        }
        free(a), free(e);
    }
    return diff;
}

/* @p opt's state of every column @p d holds (and its update count) equals @p ropt's. */
static int64_t diff_state(EmbDist *d, EmbOptimizer *opt, EmbTable *const *ref,
                          const EmbOptimizer *ropt)
{
    int64_t diff = 0;
    for (int t = 0; t < NT; t++) {
        EmbTable *lt = emb_dist_local_table(d, t), *ls = NULL, *rs = NULL;
        int64_t lstep = -1, rstep = -2;
        if (!lt)
            continue;
        emb_optimizer_state(ropt, ref[t], 0, &rs, &rstep);
        if (emb_optimizer_state(opt, lt, 0, &ls, &lstep) != 0 || lstep != rstep) {
            diff++;
            continue;
        }
        if (!rs || !ls)
            continue; /* SGD: no slot */
        /* planes of D elements (Adam's m, v), of which a column-wise part holds its slice */
        const int32_t SD = emb_table_featuresize(rs), LD = emb_table_featuresize(ls);
        int32_t c0, w;
        emb_dist_local_columns(d, t, &c0, &w);
        const int32_t planes = SD % D_of[t] ? 1 : SD / D_of[t], pw = planes > 1 || w < D_of[t]
                               ? w : SD, rw = pw == SD ? SD : D_of[t];
        float *a = malloc(sizeof(float) * (size_t)(emb_table_ncolumns(ls) * LD + 1));
        float *e = malloc(sizeof(float) * (size_t)(nrows_of[t] * SD + 1));
        emb_table_read(rs, e, SD);
        emb_table_read(ls, a, LD);
        for (int64_t id = 0; id < nrows_of[t]; id++) {
            int32_t owner;
            int64_t col;
            emb_dist_locate(d, t, id, &owner, &col);
            for (int32_t p = 0; owner == emb_dist_rank(d) && p < planes; p++)
                diff += memcmp(a + col * LD + p * pw, e + id * SD + p * rw + (pw == SD ? 0 : c0),
                               4 * (size_t)pw) != 0;
        }
        free(a), free(e);
    }
    return diff;
}

/*
 * Damaged copies of step 7's index (steps 11..14: no ranks, a table line of an unknown
 * kind, a file outside the directory, no file lines): every rank of @p e fails with
 * EMB_ECORRUPT and no table changes.
 */
static double local_sum(EmbDist *d);

static void damaged_indexes(const char *name, EmbDist *e, const char *dir)
{
    char path[128], text[4096] = "";
    if (rank == 0) {
        snprintf(path, sizeof path, "%s/dist-7.index", dir);
        FILE *f = fopen(path, "r");
        const size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
        text[n] = '\0';
        if (f)
            fclose(f);
        for (int k = 0; k < 4; k++) {
            char bad[4096 + 64], *p;
            snprintf(bad, sizeof bad, "%s", text);
            if (k == 0 && (p = strstr(bad, "ranks ")))
                memcpy(p, "ranks 0\n", 8), memmove(p + 8, strchr(p, '\n') + 1,
                                                 strlen(strchr(p, '\n') + 1) + 1);
            long long rows;
            int D, dt, kind, rk;
            unsigned part;
            if (k == 1 && (p = strstr(bad, "\n0 ")) &&
                sscanf(p + 1, "0 %lld %d %d %d %d %u", &rows, &D, &dt, &kind, &rk, &part) == 6) {
                char line[96]; /* table 0's line with kind 7 */
                const int len = snprintf(line, sizeof line, "0 %lld %d %d 7 %d %u", rows, D,
                                         dt, rk, part);
                char *end = strchr(p + 1, '\n');
                memmove(p + 1 + len, end, strlen(end) + 1);
                memcpy(p + 1, line, (size_t)len);
            }
            if (k == 2 && (p = strstr(bad, "file 0 rank0/")))
                memmove(p + 13 + 6, p + 13, strlen(p + 13) + 1), memcpy(p + 13, "../../", 6);
            if (k == 3 && (p = strstr(bad, "file 0")))
                *p = '\0';
            snprintf(path, sizeof path, "%s/dist-%d.index", dir, 11 + k);
            f = fopen(path, "w");
            if (f)
                fputs(bad, f), fclose(f);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double before = local_sum(e);
    for (int k = 0; k < 4; k++) {
        const int r = emb_dist_restore(e, dir, 11 + k, NULL);
        CHECK(r == EMB_ECORRUPT, "%s: damaged index %d gives %d", name, k, r);
    }
    CHECK(local_sum(e) == before, "%s: a damaged index changed a table", name);
}

/*
 * Saves @p d, restores into one process (MPI_COMM_SELF, table-wise) and into halves of
 * the world (row-wise div), compares with the reference; then a damaged file and a
 * missing step fail on every rank without changing a table.
 */
static void checkpoint(const char *name, EmbDist *d, const EmbDistTableDesc *desc,
                       EmbTable *const *ref, EmbOptimizer *dopt, const EmbOptimizer *ropt)
{
    EmbOptimizerConfig cfg;
    emb_optimizer_get_config(ropt, &cfg);
    char dir[64] = "";
    if (rank == 0 && !mkdtemp(strcpy(dir, "/tmp/embdist-XXXXXX")))
        dir[0] = '\0';
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    int r = emb_dist_save(d, dir, 7, dopt);
    CHECK(r == 0, "%s: emb_dist_save %d", name, r);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    const EmbDistOptions tw = {.place = {.plan = EMB_DIST_PLAN_TABLEWISE}};
    const EmbDistOptions rw = {.place = {.plan = EMB_DIST_PLAN_ROWWISE,
                                         .partition = EMB_PARTITION_DIV}};
    const EmbDistPlacement cwp[NT] = {{EMB_DIST_COLUMNWISE, 0, 0, 0},
                                      {EMB_DIST_COLUMNWISE, 0, 0, 0},
                                      {EMB_DIST_COLUMNWISE, 0, 0, 0},
                                      {EMB_DIST_COLUMNWISE, 0, 0, 0}};
    const EmbDistOptions cw = {.placement = cwp};
    const struct { MPI_Comm comm; const EmbDistOptions *o; const char *what; } into[3] = {
        {MPI_COMM_SELF, &tw, "one process"}, {half, &rw, "half the ranks, row-wise"},
        {half, &cw, "half the ranks, column-wise"}};
    /* the one-process copy is saved again (rank 0's, into dir/one), for the way back */
    char one[80];
    snprintf(one, sizeof one, "%s/one", dir);
    if (rank == 0)
        mkdir(one, 0777);
    for (int k = 0; k < 3 && !r; k++) {
        EmbDist *e;
        r = emb_dist_create(&e, into[k].comm, desc, NT, into[k].o);
        CHECK(r == 0, "%s: create (%s) %d", name, into[k].what, r);
        if (r)
            break;
        EmbOptimizer *fresh;
        emb_optimizer_create(&fresh, &cfg);
        r = emb_dist_restore(e, dir, 7, fresh);
        CHECK(r == 0, "%s: restore into %s: %d", name, into[k].what, r);
        CHECK(diff_tables(e, ref) == 0, "%s: restored into %s: columns differ", name,
              into[k].what);
        CHECK(diff_state(e, fresh, ref, ropt) == 0, "%s: restored into %s: optimizer state "
              "differs", name, into[k].what);
        if (k == 0 && rank == 0)
            CHECK(emb_dist_save(e, one, 9, fresh) == 0, "%s: saving one process", name);
        emb_optimizer_destroy(&fresh);
        emb_dist_destroy(&e);
    }
    /* one process -> every rank, row-wise mod */
    MPI_Barrier(MPI_COMM_WORLD);
    const EmbDistOptions rwm = {.place = {.plan = EMB_DIST_PLAN_ROWWISE}};
    EmbDist *all;
    if (!r && emb_dist_create(&all, MPI_COMM_WORLD, desc, NT, &rwm) == 0) {
        EmbOptimizer *fresh;
        emb_optimizer_create(&fresh, &cfg);
        r = emb_dist_restore(all, one, 9, fresh);
        CHECK(r == 0, "%s: one process restored into %d ranks: %d", name, nranks, r);
        CHECK(diff_tables(all, ref) == 0 && diff_state(all, fresh, ref, ropt) == 0,
              "%s: one process restored into %d ranks: columns or state differ", name, nranks);
        emb_optimizer_destroy(&fresh);
        emb_dist_destroy(&all);
    }
    /* failures: a missing step, then rank 0's file damaged (one byte flipped) */
    EmbDist *e;
    if (emb_dist_create(&e, MPI_COMM_WORLD, desc, NT, &tw) == 0) {
        r = emb_dist_restore(e, dir, 8, NULL);
        CHECK(r == EMB_EIO, "%s: a missing step gives %d", name, r);
        damaged_indexes(name, e, dir);
        if (cfg.kind != EMB_OPT_SGD) { /* state of another kind */
            EmbOptimizer *other;
            const EmbOptimizerConfig oc = emb_optimizer_defaults(
                cfg.kind == EMB_OPT_ADAM ? EMB_OPT_ADAGRAD : EMB_OPT_ADAM, 0.1f);
            emb_optimizer_create(&other, &oc);
            r = emb_dist_restore(e, dir, 7, other);
            CHECK(r == EMB_EINVAL, "%s: another optimizer kind gives %d", name, r);
            emb_optimizer_destroy(&other);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            char path[256] = "", line[200], file[160];
            snprintf(line, sizeof line, "%s/dist-7.index", dir);
            FILE *f = fopen(line, "r"); /* rank 0's file, as the index names it */
            while (f && fgets(line, sizeof line, f))
                if (sscanf(line, "file 0 %159s", file) == 1)
                    snprintf(path, sizeof path, "%s/%s", dir, file);
            if (f)
                fclose(f);
            f = fopen(path, "r+b");
            CHECK(f != NULL, "%s: rank 0's checkpoint file '%s' not found", name, path);
            if (f) {
                fseek(f, -3, SEEK_END);
                const int ch = fgetc(f);
                fseek(f, -3, SEEK_END);
                fputc(ch ^ 0x5a, f);
                fclose(f);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        r = emb_dist_restore(e, dir, 7, NULL);
        CHECK(r == EMB_ECORRUPT, "%s: a damaged file gives %d", name, r);
        int64_t nonzero = 0;
        for (int t = 0; t < NT; t++) {
            EmbTable *lt = emb_dist_local_table(e, t);
            const int64_t n = emb_table_ncolumns(lt) * D_of[t];
            float *a = calloc((size_t)n + 1, sizeof(float));
            if (lt)
                emb_table_read(lt, a, D_of[t]);
            for (int64_t i = 0; i < n; i++)
                nonzero += a[i] != 0.0f;
            free(a);
        }
        CHECK(nonzero == 0, "%s: a failed restore wrote %lld elements", name,
              (long long)nonzero);
        emb_dist_destroy(&e);
    }
    MPI_Comm_free(&half);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0, "cleanup");
    }
}

/* 1 while main() reruns cases with EmbDistOptions::exchange_bf16: the reference's
   outputs and output gradients then go through emb_dist_bf16_round() (its table columns;
   the ensemble gets the unrounded gradients and must round them itself). */
static int bf16_mode;

static void round_cols(float *m, int64_t rows, int32_t stride, int32_t c0, int32_t c1)
{
    for (int64_t b = 0; b < rows; b++)
        for (int32_t j = c0; j < c1; j++)
            m[b * stride + j] = emb_dist_bf16_round(m[b * stride + j]);
}

static void run_case(const Case *c)
{
    const int steps = 2, pre = 3;
    EmbDistTableDesc desc[NT];
    int32_t W = pre;
    for (int t = 0; t < NT; t++) {
        desc[t] = (EmbDistTableDesc){.name = "t", .nrows = nrows_of[t], .featuresize = D_of[t],
                                     .dtype = c->dtype, .lookups = 0};
        W += D_of[t];
    }
    const int32_t stride = W + 1;
    int64_t *nb = malloc(sizeof(int64_t) * nranks), *off = malloc(sizeof(int64_t) * (nranks + 1));
    off[0] = 0;
    for (int r = 0; r < nranks; r++) {
        nb[r] = c->groups == 4 ? 3 * r : 5 + 3 * r; /* the 4-group case: rank 0 brings no bag */
        off[r + 1] = off[r] + nb[r];
    }
    const int64_t G = off[nranks], mynb = nb[rank];

    /* the reference: whole tables, the global batch, prealloc-concat */
    EmbTable *ref[NT];
    EmbStrategy *pc;
    EmbStrategyOptions so = {.nthreads = 2};
    emb_strategy_prealloc_concat(&pc, &so);
    EmbOptimizerConfig ocfg = emb_optimizer_defaults(c->opt, 0.05f);
    EmbOptimizer *ropt, *dopt;
    emb_optimizer_create(&ropt, &ocfg);
    emb_optimizer_create(&dopt, &ocfg);
    for (int t = 0; t < NT; t++) {
        emb_table_create(&ref[t], nrows_of[t], D_of[t], c->dtype, NULL);
        int64_t *all = malloc(sizeof(int64_t) * nrows_of[t]);
        for (int64_t i = 0; i < nrows_of[t]; i++)
            all[i] = i;
        fill(ref[t], t, all, nrows_of[t], D_of[t]);
        free(all);
    }

    /* the ensemble */
    const int32_t last = nranks > 1 ? nranks - 1 : 1, two = nranks > 2 ? 2 : nranks;
    EmbDistPlacement pl[4][NT] = {
        {{EMB_DIST_ROWWISE, 0, EMB_PARTITION_DIV, 0}, {EMB_DIST_TABLEWISE, nranks - 1, 0, 0},
         {EMB_DIST_TABLEWISE, 0, 0, 0}, {EMB_DIST_ROWWISE, 0, EMB_PARTITION_MOD, 0}},
        /* table-row-wise: rows over ranks 1.. (or 0 alone), over ranks 0..1, 1 rank */
        {{EMB_DIST_ROWWISE, nranks - last, EMB_PARTITION_DIV, last},
         {EMB_DIST_ROWWISE, 0, EMB_PARTITION_MOD, two},
         {EMB_DIST_ROWWISE, nranks - 1, EMB_PARTITION_MOD, 1},
         {EMB_DIST_ROWWISE, nranks - two, EMB_PARTITION_MOD, two}},
        {{EMB_DIST_REPLICATED, 0, 0, 0}, {EMB_DIST_TABLEWISE, nranks - 1, 0, 0},
         {EMB_DIST_REPLICATED, 0, 0, 0}, {EMB_DIST_ROWWISE, 0, EMB_PARTITION_DIV, two}},
        /* column-wise: D 16 over the last two ranks, D 12 over every rank */
        {{EMB_DIST_TABLEWISE, 0, 0, 0}, {EMB_DIST_COLUMNWISE, nranks - two, 0, two},
         {EMB_DIST_REPLICATED, 0, 0, 0}, {EMB_DIST_COLUMNWISE, 0, 0, 0}}};
    EmbDistOptions dopts = {.place = {.plan = c->plan, .partition = c->partition},
                            .groups = c->groups,
                            .placement = c->explicit_place ? pl[c->explicit_place - 1] : NULL,
                            .strategy = c->groups > 1 ? pc : NULL, /* else sequential */
                            .exchange_bf16 = bf16_mode};
    EmbStrategy *own = NULL;
    if (c->strategy == 1)
        emb_strategy_parallel(&own, &so);
    else if (c->strategy == 2)
        emb_strategy_auto(&own, &so);
    if (own)
        dopts.strategy = own;
    EmbDist *d = NULL;
    int r = emb_dist_create(&d, MPI_COMM_WORLD, desc, NT, &dopts);
    CHECK(r == 0, "%s: emb_dist_create %d", c->name, r);
    if (r)
        goto done;
    for (int t = 0; t < NT; t++) {
        EmbTable *lt = emb_dist_local_table(d, t);
        if (!lt)
            continue;
        const int64_t n = emb_table_ncolumns(lt);
        int64_t *ids = malloc(sizeof(int64_t) * (n + 1)), found = 0;
        for (int64_t id = 0; id < nrows_of[t]; id++) {
            int32_t owner;
            int64_t col;
            emb_dist_locate(d, t, id, &owner, &col);
            if (owner == rank)
                ids[col] = id, found++;
        }
        CHECK(found == n, "%s: table %d: local table has %lld columns, %lld ids located",
              c->name, t, (long long)n, (long long)found);
        int32_t c0, w;
        emb_dist_local_columns(d, t, &c0, &w);
        fill_cols(lt, t, ids, n, c0, w);
        free(ids);
    }

    EmbPooling pool[NT];
    for (int t = 0; t < NT; t++)
        pool[t] = (EmbPooling){c->combiner, c->max_norm, (1 + t % 3) % nrows_of[t], c->flags};
    float *rout = calloc((size_t)(G * stride), sizeof(float));
    float *rdy = calloc((size_t)(G * stride), sizeof(float));
    float *dout = malloc(sizeof(float) * (size_t)(mynb * stride + 1));
    float *ddy = calloc((size_t)(mynb * stride + 1), sizeof(float));
    float *pt[NT], *ptdy[NT];
    int64_t pstr[NT];
    for (int t = 0; t < NT; t++) {
        pstr[t] = D_of[t] + 2;
        pt[t] = malloc(sizeof(float) * (size_t)(mynb * pstr[t] + 1));
        ptdy[t] = calloc((size_t)(mynb * pstr[t] + 1), sizeof(float));
    }
    for (int step = 0; step < steps && !failures; step++) {
        Global g[NT];
        EmbBatch rb[NT], lb[NT];
        int64_t *roffs[NT], *loffs[NT];
        EmbGrad *rg[NT];
        EmbIndexer *rix[NT];
        for (int t = 0; t < NT; t++) {
            make_global(&g[t], c, t, G, 1000 * step + 17);
            roffs[t] = malloc(sizeof(int64_t) * (G + 1));
            loffs[t] = malloc(sizeof(int64_t) * (mynb + 1));
            rb[t] = slice(&g[t], c, 0, G, roffs[t]);
            lb[t] = slice(&g[t], c, off[rank], mynb, loffs[t]);
            emb_grad_create(&rg[t]);
            emb_indexer_create(&rix[t]);
        }
        const EmbOutputs ro = {.concat = rout, .concat_stride = stride, .prependrows = pre};
        r = emb_maplookup(pc, ref, NT, rb, pool, &ro);
        CHECK(r == 0, "%s: reference maplookup %d (%s)", c->name, r, emb_last_error());
        if (bf16_mode)
            round_cols(rout, G, stride, pre, W);
        for (int64_t i = 0; i < mynb * stride; i++)
            dout[i] = -7.0f;
        for (int t = 0; t < NT; t++)
            for (int64_t i = 0; i < mynb * pstr[t]; i++)
                pt[t][i] = -7.0f;
        const EmbOutputs lo = c->per_table
            ? (EmbOutputs){.per_table = pt, .strides = pstr}
            : (EmbOutputs){.concat = dout, .concat_stride = stride, .prependrows = pre};
        r = emb_dist_maplookup(d, lb, pool, &lo);
        CHECK(r == 0, "%s: step %d: emb_dist_maplookup %d", c->name, step, r);
        /* bit for bit: this rank's rows of the reference, prepend columns untouched */
        int64_t bad = 0;
        for (int64_t b = 0; b < mynb; b++) {
            int64_t col = pre;
            for (int t = 0; t < NT; t++) {
                const float *got = c->per_table ? pt[t] + b * pstr[t] : dout + b * stride + col;
                if (memcmp(got, rout + (off[rank] + b) * stride + col, 4 * (size_t)D_of[t]))
                    bad++;
                col += D_of[t];
            }
            if (!c->per_table)
                for (int j = 0; j < pre; j++)
                    bad += dout[b * stride + j] != -7.0f;
        }
        CHECK(bad == 0, "%s: step %d: %lld output rows differ from the reference", c->name,
              step, (long long)bad);
        /* backward + update */
        for (int64_t b = 0; b < G; b++)
            for (int32_t j = 0; j < stride; j++)
                rdy[b * stride + j] = dyval(b, j);
        for (int64_t b = 0; b < mynb; b++) {
            int64_t col = pre;
            for (int32_t j = 0; j < stride; j++)
                ddy[b * stride + j] = dyval(off[rank] + b, j);
            for (int t = 0; t < NT; t++) {
                for (int32_t j = 0; j < D_of[t]; j++)
                    ptdy[t][b * pstr[t] + j] = dyval(off[rank] + b, col + j);
                col += D_of[t];
            }
        }
        if (bf16_mode)
            round_cols(rdy, G, stride, pre, W);
        const EmbOutputs rgo = {.concat = rdy, .concat_stride = stride, .prependrows = pre};
        r = emb_maplookup_backward(ref, NT, rb, pool, &rgo, rg);
        if (!r)
            r = emb_update_many(pc, ropt, ref, (const EmbGrad *const *)rg, NT, rix, 0);
        CHECK(r == 0, "%s: reference update %d (%s)", c->name, r, emb_last_error());
        const EmbOutputs lgo = c->per_table
            ? (EmbOutputs){.per_table = ptdy, .strides = pstr}
            : (EmbOutputs){.concat = ddy, .concat_stride = stride, .prependrows = pre};
        r = emb_dist_backward(d, &lgo);
        CHECK(r == 0, "%s: step %d: emb_dist_backward %d", c->name, step, r);
        r = emb_dist_update(d, dopt, 0);
        CHECK(r == 0, "%s: step %d: emb_dist_update %d", c->name, step, r);
        for (int t = 0; t < NT; t++) {
            free_global(&g[t]);
            free(roffs[t]), free(loffs[t]);
            emb_grad_destroy(&rg[t]);
            emb_indexer_destroy(&rix[t]);
        }
        /* the tables: every column this rank holds equals the reference's */
        const int64_t diff = diff_tables(d, ref);
        CHECK(diff == 0, "%s: step %d: %lld columns differ after the update", c->name, step,
              (long long)diff);
    }
    if (c->ckpt && !failures)
        checkpoint(c->name, d, desc, ref, dopt, ropt);
    free(rout), free(rdy), free(dout), free(ddy);
    for (int t = 0; t < NT; t++)
        free(pt[t]), free(ptdy[t]);
done:
    emb_dist_destroy(&d);
    emb_optimizer_destroy(&ropt);
    emb_optimizer_destroy(&dopt);
    for (int t = 0; t < NT; t++)
        emb_table_destroy(&ref[t]);
    emb_strategy_destroy(&pc);
    emb_strategy_destroy(&own);
    free(nb), free(off);
}

/* A bad id on the last rank: every rank gets EMB_ERANGE naming it; nothing is written. */
/* MAX pooling of a row-wise table: EMB_ENOTSUP on every rank, the output untouched (one
   rank holds the table whole: pooled). */
static void max_rowwise(void)
{
    EmbDistTableDesc desc[1] = {{.name = "m", .nrows = 40, .featuresize = 4}};
    EmbDistOptions o = {.place = {.plan = EMB_DIST_PLAN_ROWWISE}};
    EmbDist *d;
    int r = emb_dist_create(&d, MPI_COMM_WORLD, desc, 1, &o);
    CHECK(r == 0, "max row-wise: create %d", r);
    if (r)
        return;
    int64_t ids[6] = {1, 2, 3, 4, 5, 6};
    const EmbBatch b = {.ids = ids, .nnz = 6, .nbags = 3, .bag_size = 2};
    const EmbPooling p = EMB_POOLING_MAX;
    float out[3 * 4];
    for (int i = 0; i < 12; i++)
        out[i] = 5.0f;
    const EmbOutputs eo = {.concat = out, .concat_stride = 4};
    EmbDistPlacement pl;
    CHECK(emb_dist_placement(d, 0, &pl) == 0, "max row-wise: placement");
    r = emb_dist_maplookup(d, &b, &p, &eo);
    if (pl.kind != EMB_DIST_ROWWISE) {
        CHECK(r == 0, "max table-wise: %d (%s)", r, emb_dist_last_error());
        emb_dist_destroy(&d);
        return;
    }
    CHECK(r == EMB_ENOTSUP && strstr(emb_dist_last_error(), "row-wise"),
          "max row-wise: %d (%s)", r, emb_dist_last_error());
    int untouched = 1;
    for (int i = 0; i < 12; i++)
        untouched &= out[i] == 5.0f;
    CHECK(untouched, "max row-wise: the output was written");
    emb_dist_destroy(&d);
}

static void bad_id(void)
{
    EmbDistTableDesc desc[2] = {{.name = "a", .nrows = 40, .featuresize = 4},
                                {.name = "b", .nrows = 90, .featuresize = 8}};
    EmbDistOptions o = {.place = {.plan = EMB_DIST_PLAN_AUTO}};
    EmbDist *d;
    int r = emb_dist_create(&d, MPI_COMM_WORLD, desc, 2, &o);
    CHECK(r == 0, "bad id: create %d", r);
    if (r)
        return;
    int64_t ids0[6] = {1, 2, 3, 4, 5, 6}, ids1[6] = {7, 8, 9, 10, 11, 12};
    if (rank == nranks - 1)
        ids1[4] = 90;
    const EmbBatch b[2] = {{.ids = ids0, .nnz = 6, .nbags = 3, .bag_size = 2},
                           {.ids = ids1, .nnz = 6, .nbags = 3, .bag_size = 2}};
    float out[3 * 12];
    for (int i = 0; i < 36; i++)
        out[i] = 5.0f;
    const EmbOutputs eo = {.concat = out, .concat_stride = 12};
    r = emb_dist_maplookup(d, b, NULL, &eo);
    CHECK(r == EMB_ERANGE, "bad id: %d, not EMB_ERANGE", r);
    char want[64];
    snprintf(want, sizeof want, "rank %d:", nranks - 1);
    CHECK(strstr(emb_dist_last_error(), want) && strstr(emb_dist_last_error(), "id 90"),
          "bad id: message names the rank and the id");
    int untouched = 1;
    for (int i = 0; i < 36; i++)
        untouched &= out[i] == 5.0f;
    CHECK(untouched, "bad id: the output was written");
    float dy[36] = {0};
    const EmbOutputs go = {.concat = dy, .concat_stride = 12};
    r = emb_dist_backward(d, &go);
    CHECK(r == EMB_EINVAL, "backward after a failed forward: %d", r);
    /* poolings that differ between ranks */
    EmbPooling p[2] = {EMB_POOLING_SUM, EMB_POOLING_SUM};
    if (rank == 0)
        p[1] = EMB_POOLING_MEAN;
    ids1[4] = 11;
    r = emb_dist_maplookup(d, b, p, &eo);
    CHECK(nranks == 1 ? r == 0 : r == EMB_EINVAL, "differing poolings: %d", r);
    /* and a good call still works afterwards */
    r = emb_dist_maplookup(d, b, NULL, &eo);
    CHECK(r == 0, "good call after failures: %d", r);
    emb_dist_destroy(&d);
}

/* A bad id in the last rank's prefetched batch: the prefetch starts on every rank (it
   does not block to agree), the update between runs, and the forward reports the last
   rank's error on every rank, with or without an update in between; the forward after
   it runs whole. */
static void prefetch_bad_id(void)
{
    EmbDistTableDesc desc[2] = {{.name = "a", .nrows = 40, .featuresize = 4},
                                {.name = "b", .nrows = 90, .featuresize = 8}};
    const EmbDistPlacement pl[2] = {{EMB_DIST_ROWWISE, 0, EMB_PARTITION_MOD, 0},
                                    {EMB_DIST_TABLEWISE, nranks - 1, 0, 0}};
    EmbDist *d;
    EmbOptimizer *opt = NULL;
    const EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_SGD, 0.1f);
    int r = emb_dist_create(&d, MPI_COMM_WORLD, desc, 2, &(EmbDistOptions){.placement = pl});
    CHECK(r == 0 && !emb_optimizer_create(&opt, &oc), "prefetch bad id: create %d", r);
    if (r)
        return;
    int64_t ids0[6] = {1, 2, 3, 4, 5, 6}, ids1[6] = {7, 8, 9, 10, 11, 12};
    int64_t bad0[6] = {1, 2, 3, 4, 5, 6}, bad1[6] = {7, 8, 9, 10, 11, 12};
    if (rank == nranks - 1)
        bad1[4] = 90;
    const EmbBatch b[2] = {{.ids = ids0, .nnz = 6, .nbags = 3, .bag_size = 2},
                           {.ids = ids1, .nnz = 6, .nbags = 3, .bag_size = 2}};
    const EmbBatch bad[2] = {{.ids = bad0, .nnz = 6, .nbags = 3, .bag_size = 2},
                             {.ids = bad1, .nnz = 6, .nbags = 3, .bag_size = 2}};
    float out[36], dy[36];
    for (int i = 0; i < 36; i++)
        dy[i] = 0.25f;
    const EmbOutputs eo = {.concat = out, .concat_stride = 12};
    const EmbOutputs go = {.concat = dy, .concat_stride = 12};
    char want[64];
    snprintf(want, sizeof want, "rank %d:", nranks - 1);
    for (int update = 1; update >= 0; update--) {
        r = emb_dist_maplookup(d, b, NULL, &eo);
        if (!r)
            r = emb_dist_backward(d, &go);
        CHECK(r == 0, "prefetch bad id: step %d (%s)", r, emb_dist_last_error());
        r = emb_dist_prefetch(d, bad, NULL);
        CHECK(r == 0, "prefetch bad id: the prefetch %d, not 0: it does not agree", r);
        if (update) {
            r = emb_dist_update(d, opt, 0);
            CHECK(r == 0, "prefetch bad id: the update %d (%s)", r, emb_dist_last_error());
        }
        for (int i = 0; i < 36; i++)
            out[i] = 5.0f;
        r = emb_dist_maplookup(d, bad, NULL, &eo);
        CHECK(r == EMB_ERANGE, "prefetch bad id (update %d): %d, not EMB_ERANGE", update, r);
        CHECK(strstr(emb_dist_last_error(), want) && strstr(emb_dist_last_error(), "id 90"),
              "prefetch bad id: the message names the rank and the id: %s",
              emb_dist_last_error());
        int untouched = 1;
        for (int i = 0; i < 36; i++)
            untouched &= out[i] == 5.0f;
        CHECK(untouched, "prefetch bad id: the output was written");
        r = emb_dist_maplookup(d, bad, NULL, &eo); /* no prefetch pending: runs whole */
        CHECK(r == EMB_ERANGE, "prefetch bad id: the forward after: %d", r);
    }
    r = emb_dist_maplookup(d, b, NULL, &eo);
    CHECK(r == 0, "prefetch bad id: a good forward afterwards: %d", r);
    emb_dist_destroy(&d);
    emb_optimizer_destroy(&opt);
}

/* Sums every element this rank holds (a table changed when its sum did, here). */
static double local_sum(EmbDist *d)
{
    double sum = 0;
    for (int64_t t = 0; t < emb_dist_ntables(d); t++) {
        EmbTable *lt = emb_dist_local_table(d, t);
        const int64_t n = emb_table_ncolumns(lt), D = emb_table_featuresize(lt);
        float *a = malloc(sizeof(float) * (size_t)(n * D + 1));
        if (lt)
            emb_table_read(lt, a, (int32_t)D);
        for (int64_t i = 0; lt && i < n * D; i++)
            sum += a[i] * (double)(i + 1);
        free(a);
    }
    return sum;
}

/*
 * Two tables, "a" (40 x @p scale rows, D 4, table-wise on the last rank) and "b" (90 x
 * @p scale rows, D 8, row-wise mod), uniformly initialised, with table @p flags, and an
 * Adagrad optimizer; NULL *d after a failure.
 */
static void small_ensemble(const char *what, int64_t scale, unsigned flags, EmbDist **d,
                           EmbOptimizer **opt)
{
    EmbDistTableDesc desc[2] = {{.name = "a", .nrows = 40 * scale, .featuresize = 4},
                                {.name = "b", .nrows = 90 * scale, .featuresize = 8}};
    const EmbDistPlacement pl[2] = {{EMB_DIST_TABLEWISE, nranks - 1, 0, 0},
                                    {EMB_DIST_ROWWISE, 0, EMB_PARTITION_MOD, 0}};
    EmbDistOptions o = {.placement = pl, .table = {.flags = flags}};
    *d = NULL;
    const int r = emb_dist_create(d, MPI_COMM_WORLD, desc, 2, &o);
    CHECK(r == 0, "%s: create %d", what, r);
    if (r)
        return;
    const EmbInitializer init = {.kind = EMB_INIT_UNIFORM, .a = -1.0f, .b = 1.0f, .seed = 5};
    for (int t = 0; t < 2; t++)
        if (emb_dist_local_table(*d, t))
            emb_table_initialize(emb_dist_local_table(*d, t), &init);
    const EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    emb_optimizer_create(opt, &oc);
}

/*
 * Tables that check for finite values: a NaN output gradient on the last rank makes every
 * rank's emb_dist_update() fail with EMB_ENONFINITE naming that rank, and no rank's
 * table changes; a finite gradient then updates.
 */
static void nonfinite(void)
{
    EmbDist *d;
    EmbOptimizer *opt;
    small_ensemble("nonfinite", 1, EMB_TABLE_CHECK_FINITE, &d, &opt);
    if (!d)
        return;
    int r;
    int64_t ids0[6] = {1, 2, 3, 4, 5, 6}, ids1[6] = {7, 8, 9, 10, 11, 12};
    const EmbBatch b[2] = {{.ids = ids0, .nnz = 6, .nbags = 3, .bag_size = 2},
                           {.ids = ids1, .nnz = 6, .nbags = 3, .bag_size = 2}};
    float out[3 * 12], dy[3 * 12];
    const EmbOutputs eo = {.concat = out, .concat_stride = 12};
    const EmbOutputs go = {.concat = dy, .concat_stride = 12};
    for (int i = 0; i < 36; i++)
        dy[i] = 0.5f;
    const double before = local_sum(d);
    for (int k = 0; k < 2; k++) { /* k = 0: table-wise column 1; k = 1: row-wise column 9 */
        dy[k ? 2 * 12 + 9 : 12 + 1] = rank == nranks - 1 ? NAN : 0.5f;
        r = emb_dist_maplookup(d, b, NULL, &eo);
        CHECK(r == 0, "nonfinite: forward %d", r);
        r = emb_dist_backward(d, &go);
        CHECK(r == 0, "nonfinite: backward %d", r);
        r = emb_dist_update(d, opt, 0);
        CHECK(r == EMB_ENONFINITE, "nonfinite %d: update gives %d", k, r);
        char want[64];
        snprintf(want, sizeof want, "rank %d:", nranks - 1);
        CHECK(strstr(emb_dist_last_error(), want) != NULL, "nonfinite: the message names the "
              "rank");
        CHECK(local_sum(d) == before, "nonfinite %d: a table changed", k);
        dy[k ? 2 * 12 + 9 : 12 + 1] = 0.5f;
    }
    r = emb_dist_maplookup(d, b, NULL, &eo);
    if (!r)
        r = emb_dist_backward(d, &go);
    if (!r)
        r = emb_dist_update(d, opt, 0);
    CHECK(r == 0, "nonfinite: a finite step afterwards: %d", r);
    int changed = local_sum(d) != before, any = 0;
    MPI_Allreduce(&changed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(any, "nonfinite: the finite step changed no table");
    emb_optimizer_destroy(&opt);
    emb_dist_destroy(&d);
}

/* max_global_norm (a norm over every rank's tables, not implemented): EMB_ENOTSUP on
 * every rank, no table changed; element and row clipping (per column) apply. */
static void global_norm_refused(void)
{
    EmbDist *d;
    EmbOptimizer *opt;
    small_ensemble("global_norm", 1, 0, &d, &opt);
    if (!d)
        return;
    int64_t ids0[6] = {1, 2, 3, 4, 5, 6}, ids1[6] = {7, 8, 9, 10, 11, 12};
    const EmbBatch b[2] = {{.ids = ids0, .nnz = 6, .nbags = 3, .bag_size = 2},
                           {.ids = ids1, .nnz = 6, .nbags = 3, .bag_size = 2}};
    float out[3 * 12], dy[3 * 12];
    const EmbOutputs eo = {.concat = out, .concat_stride = 12};
    const EmbOutputs go = {.concat = dy, .concat_stride = 12};
    for (int i = 0; i < 36; i++)
        dy[i] = 0.5f;
    const double before = local_sum(d);
    EmbOptimizerConfig c = emb_optimizer_defaults(EMB_OPT_ADAGRAD, 0.1f);
    for (int k = 0; k < 2; k++) {
        c.max_global_norm = k ? 0.0f : 1.0f;
        c.max_gradient = 0.25f;
        emb_optimizer_set_config(opt, &c);
        int r = emb_dist_maplookup(d, b, NULL, &eo);
        r = r ? r : emb_dist_backward(d, &go);
        r = r ? r : emb_dist_update(d, opt, 0);
        CHECK(r == (k ? 0 : EMB_ENOTSUP), "global_norm %d: update gives %d", k, r);
        CHECK(k || strstr(emb_dist_last_error(), "max_global_norm"), "global_norm: message");
        CHECK(k || local_sum(d) == before, "global_norm: a table changed");
    }
    emb_optimizer_destroy(&opt);
    emb_dist_destroy(&d);
}

/* A rank describing another ensemble: every rank's emb_dist_create fails the same way. */
static void mismatch(void)
{
    EmbDistTableDesc desc[2] = {{.name = "a", .nrows = 40, .featuresize = 4},
                                {.name = "b", .nrows = 90, .featuresize = 8}};
    for (int k = 0; k < 3 && nranks > 1; k++) {
        EmbDistOptions o = {.place = {.plan = EMB_DIST_PLAN_TABLEWISE}};
        if (rank == nranks - 1 && k == 0)
            desc[1].nrows = 91;
        if (rank == nranks - 1 && k == 1)
            o.groups = 2;
        if (rank == nranks - 1 && k == 2) /* one rank with the bf16 exchange */
            o.exchange_bf16 = 1;
        EmbDist *d = NULL;
        const int r = emb_dist_create(&d, MPI_COMM_WORLD, desc, 2, &o);
        char want[64];
        snprintf(want, sizeof want, "rank %d", nranks - 1);
        CHECK(r == EMB_EINVAL && !d && strstr(emb_dist_last_error(), want),
              "mismatch %d: emb_dist_create gives %d", k, r);
        emb_dist_destroy(&d);
        desc[1].nrows = 90;
    }
}

/* Every table's local part of @p d, and @p opt's update count, in one float array. */
static float *parts(EmbDist *d, int64_t *len)
{
    int64_t n = 0;
    for (int t = 0; t < NT; t++) {
        EmbTable *lt = emb_dist_local_table(d, t);
        n += lt ? emb_table_ncolumns(lt) * emb_table_featuresize(lt) : 0;
    }
    float *v = malloc(sizeof(float) * (size_t)(n + 1));
    n = 0;
    for (int t = 0; t < NT; t++) {
        EmbTable *lt = emb_dist_local_table(d, t);
        if (!lt)
            continue;
        emb_table_read(lt, v + n, emb_table_featuresize(lt));
        n += emb_table_ncolumns(lt) * emb_table_featuresize(lt);
    }
    *len = n;
    return v;
}

/* Pipelining: an ensemble whose next batch's ids travel during the update
   (emb_dist_prefetch) gives the outputs and tables of one that does not, bit for bit,
   over every placement kind, also when no update runs between the prefetch and the
   forward (step 1: a forward only); a backward while a prefetch is pending is refused. */
static void prefetch(void)
{
    EmbDistTableDesc desc[NT];
    for (int t = 0; t < NT; t++)
        desc[t] = (EmbDistTableDesc){.name = "p", .nrows = nrows_of[t], .featuresize = D_of[t]};
    const EmbDistPlacement pl[NT] = {
        {EMB_DIST_ROWWISE, 0, EMB_PARTITION_MOD, 0}, {EMB_DIST_TABLEWISE, nranks - 1, 0, 0},
        {EMB_DIST_REPLICATED, 0, 0, 0}, {EMB_DIST_COLUMNWISE, 0, 0, 0}};
    const EmbDistOptions o = {.placement = pl, .groups = 2};
    EmbDist *d[2] = {NULL, NULL};
    EmbOptimizer *opt[2] = {NULL, NULL};
    const EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_ADAM, 0.05f);
    for (int k = 0; k < 2; k++) {
        CHECK(emb_dist_create(&d[k], MPI_COMM_WORLD, desc, NT, &o) == 0, "prefetch: create");
        emb_optimizer_create(&opt[k], &oc);
        for (int t = 0; d[k] && t < NT; t++)
            if (emb_dist_local_table(d[k], t))
                emb_table_initialize(emb_dist_local_table(d[k], t), &(EmbInitializer){
                    .kind = EMB_INIT_UNIFORM, .a = -1.0f, .b = 1.0f, .seed = 3});
    }
    enum { STEPS = 4, BAG = 3 };
    const int64_t nb = 4 + rank;
    int64_t W = 0;
    for (int t = 0; t < NT; t++)
        W += D_of[t];
    int64_t *ids = malloc(sizeof(int64_t) * (size_t)(STEPS * NT * nb * BAG));
    float *wts = malloc(sizeof(float) * (size_t)(STEPS * NT * nb * BAG));
    EmbBatch b[STEPS][NT];
    for (int s = 0; s < STEPS; s++)
        for (int t = 0; t < NT; t++) {
            int64_t *x = ids + (s * NT + t) * nb * BAG;
            float *w = wts + (s * NT + t) * nb * BAG;
            for (int64_t k = 0; k < nb * BAG; k++) {
                x[k] = (int64_t)(hash3((uint64_t)(s * 7 + rank), (uint64_t)t, (uint64_t)k) %
                                 (uint64_t)nrows_of[t]);
                w[k] = 0.25f + (float)(k % 5) * 0.5f;
            }
            b[s][t] = (EmbBatch){.ids = x, .nnz = nb * BAG, .nbags = nb, .bag_size = BAG,
                                 .weights = w};
        }
    EmbPooling pool[NT];
    for (int t = 0; t < NT; t++)
        pool[t] = EMB_POOLING_MEAN;
    float *out[2], *dy = malloc(sizeof(float) * (size_t)(nb * W));
    for (int64_t i = 0; i < nb * W; i++)
        dy[i] = (float)((i % 9) - 4) * 0.125f;
    out[0] = malloc(sizeof(float) * (size_t)(nb * W));
    out[1] = malloc(sizeof(float) * (size_t)(nb * W));
    int r = d[0] && d[1] ? 0 : -1;
    for (int s = 0; s < STEPS && !r; s++) {
        for (int k = 0; k < 2 && !r; k++) {
            const EmbOutputs eo = {.concat = out[k], .concat_stride = W};
            const EmbOutputs go = {.concat = dy, .concat_stride = W};
            const int train = s != 1; /* step 1: forward only, the prefetch's two legs
                                             both run in the next forward */
            r = emb_dist_maplookup(d[k], b[s], pool, &eo);
            if (!r && train)
                r = emb_dist_backward(d[k], &go);
            if (!r && k == 1 && s + 1 < STEPS) {
                r = emb_dist_prefetch(d[k], b[s + 1], pool);
                CHECK(r == 0, "prefetch: step %d: %d (%s)", s, r, emb_last_error());
                CHECK(emb_dist_backward(d[k], &go) == EMB_EINVAL,
                      "prefetch: a backward while pending refused");
            }
            if (!r && train)
                r = emb_dist_update(d[k], opt[k], 0);
            CHECK(r == 0, "prefetch: step %d, ensemble %d: %d (%s)", s, k, r, emb_last_error());
        }
        CHECK(!memcmp(out[0], out[1], sizeof(float) * (size_t)(nb * W)),
              "prefetch: step %d: outputs differ", s);
    }
    int64_t n0 = 0, n1 = 0;
    float *p0 = d[0] ? parts(d[0], &n0) : NULL, *p1 = d[1] ? parts(d[1], &n1) : NULL;
    CHECK(p0 && p1 && n0 == n1 && !memcmp(p0, p1, sizeof(float) * (size_t)n0),
          "prefetch: the tables differ");
    EmbDistStats st;
    if (d[1] && !emb_dist_stats(d[1], &st))
        CHECK(st.ids_wait_s >= 0, "prefetch: ids_wait_s %g", st.ids_wait_s);
    free(p0), free(p1), free(ids), free(wts), free(dy), free(out[0]), free(out[1]);
    for (int k = 0; k < 2; k++) {
        emb_dist_destroy(&d[k]);
        emb_optimizer_destroy(&opt[k]);
    }
}

/* A column-wise table refuses what needs a whole row on one rank: max_norm, row-wise
   Adagrad, checkpoints (EMB_ENOTSUP, the same on every rank), and more slices than D. */
static void columnwise_limits(void)
{
    EmbDistTableDesc desc[1] = {{.name = "c", .nrows = 30, .featuresize = 4}};
    EmbDistPlacement pl = {EMB_DIST_COLUMNWISE, 0, 0, 0};
    EmbDistOptions o = {.placement = &pl};
    EmbDist *d = NULL;
    int r = emb_dist_create(&d, MPI_COMM_WORLD, desc, 1, &o);
    CHECK(r == 0, "column-wise limits: create %d", r);
    if (r)
        return;
    int64_t ids[4] = {1, 2, 3, 4};
    const EmbBatch b = {.ids = ids, .nnz = 4, .nbags = 2, .bag_size = 2};
    float out[2 * 4], dy[2 * 4] = {1, 1, 1, 1, 1, 1, 1, 1};
    const EmbOutputs eo = {.concat = out, .concat_stride = 4};
    const EmbOutputs go = {.concat = dy, .concat_stride = 4};
    EmbPooling p = EMB_POOLING_SUM;
    p.max_norm = 1.0f;
    CHECK(emb_dist_maplookup(d, &b, &p, &eo) == EMB_ENOTSUP, "column-wise max_norm refused");
    EmbOptimizerConfig oc = emb_optimizer_defaults(EMB_OPT_ROWWISE_ADAGRAD, 0.1f);
    EmbOptimizer *opt = NULL;
    emb_optimizer_create(&opt, &oc);
    r = emb_dist_maplookup(d, &b, NULL, &eo);
    if (!r)
        r = emb_dist_backward(d, &go);
    CHECK(r == 0, "column-wise limits: forward / backward %d", r);
    CHECK(emb_dist_update(d, opt, 0) == EMB_ENOTSUP, "column-wise row-wise Adagrad refused");
    emb_optimizer_destroy(&opt);
    emb_dist_destroy(&d);
    pl.nshards = nranks;
    desc[0].featuresize = nranks > 1 ? nranks - 1 : 0;
    if (nranks > 1)
        CHECK(emb_dist_create(&d, MPI_COMM_WORLD, desc, 1, &o) == EMB_EINVAL,
              "more column slices than columns refused");
}

/* Max / mean of the modelled loads of placement @p p over @p P ranks; @p max: the max. */
static double model_ratio(const EmbDistTableDesc *t, int64_t n, int32_t P,
                          const EmbDistPlaceOptions *o, const EmbDistPlacement *p, double *max)
{
    double load[8], sum = 0;
    *max = 0;
    if (emb_dist_plan_cost(t, n, P, o, p, load, NULL))
        return 99.0;
    for (int32_t k = 0; k < P; k++)
        sum += load[k], *max = load[k] > *max ? load[k] : *max;
    return *max * P / sum;
}

/* The planner (PLAN_AUTO) on the Criteo-shaped ensemble: modelled max/mean <= 1.1 on 2, 4
   and 8 ranks and a slowest rank no slower than either fixed plan's (within FIXED_TIE); pins kept; memory
   respected; a table that cannot fit refused. */
static void planner(void)
{
    static const int64_t criteo[26] = {1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3,
                                       93145, 5683, 8351593, 3194, 27, 14992, 5461306, 10,
                                       5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572};
    EmbDistTableDesc t[26];
    EmbDistPlacement p[26], q[26];
    for (int32_t P = 2; P <= 8; P *= 2) {
        for (int i = 0; i < 26; i++)
            t[i] = (EmbDistTableDesc){.nrows = criteo[i] < 200000 ? criteo[i] : 200000,
                                      .featuresize = 64, .lookups = 1024.0 * P};
        EmbDistPlaceOptions o = {.plan = EMB_DIST_PLAN_AUTO, .batch = 1024 * P};
        int r = emb_dist_place(t, 26, P, &o, p);
        double mx = 0, fixed_mx = 0;
        const double ratio = r ? 99.0 : model_ratio(t, 26, P, &o, p, &mx);
        CHECK(ratio <= 1.1, "planner on %d ranks: max/mean %.3f (%d)", (int)P, ratio, r);
        for (int k = 1; k <= 2 && !r; k++) {
            EmbDistPlaceOptions f = o;
            f.plan = (EmbDistPlan)k;
            emb_dist_place(t, 26, P, &f, q);
            model_ratio(t, 26, P, &o, q, &fixed_mx);
            CHECK(mx <= fixed_mx * 1.02, "planner on %d ranks: max %.4g ms > plan %d's "
                  "%.4g ms (+ the 2 %% the model cannot resolve)",
                  (int)P, 1e3 * mx, k, 1e3 * fixed_mx);
        }
        /* pins: table 2 row-wise over the last two ranks, table 5 whole on rank 1 */
        EmbDistPlacement pins[26];
        for (int i = 0; i < 26; i++)
            pins[i] = (EmbDistPlacement){EMB_DIST_ANY, 0, 0, 0};
        pins[2] = (EmbDistPlacement){EMB_DIST_ROWWISE, P - 2, EMB_PARTITION_DIV, 2};
        pins[5] = (EmbDistPlacement){EMB_DIST_TABLEWISE, 1, 0, 0};
        o.pins = pins;
        r = emb_dist_place(t, 26, P, &o, p);
        CHECK(r == 0 && !memcmp(&p[2], &pins[2], sizeof *p) &&
              !memcmp(&p[5], &pins[5], sizeof *p), "planner on %d ranks: pins not kept (%d)",
              (int)P, r);
        /* memory: 15 % above an even share fits; 10 % below it cannot */
        o.pins = NULL;
        int64_t total = 0, bytes[8];
        for (int i = 0; i < 26; i++)
            total += t[i].nrows * 64 * 4;
        o.memory_per_rank = total / P + total / P * 15 / 100;
        double load[8];
        r = emb_dist_place(t, 26, P, &o, p);
        int over = 0;
        if (!r)
            emb_dist_plan_cost(t, 26, P, &o, p, load, bytes);
        for (int32_t k = 0; !r && k < P; k++)
            over += bytes[k] > o.memory_per_rank;
        CHECK(r == 0 && !over, "planner on %d ranks within memory: %d (%d ranks over)",
              (int)P, r, over);
        o.memory_per_rank = total / P - total / P / 10;
        r = emb_dist_place(t, 26, P, &o, p);
        CHECK(r == EMB_ENOMEM, "planner on %d ranks: %d, not EMB_ENOMEM for too little "
              "memory", (int)P, r);
    }
    EmbDistPlacement bad[26];
    for (int i = 0; i < 26; i++)
        bad[i] = (EmbDistPlacement){EMB_DIST_ANY, 0, 0, 0};
    bad[3] = (EmbDistPlacement){EMB_DIST_ROWWISE, 1, EMB_PARTITION_MOD, 2};
    const EmbDistPlaceOptions o = {.pins = bad};
    CHECK(emb_dist_place(t, 26, 2, &o, p) == EMB_EINVAL, "a pin outside the ranks refused");
}

/* The model's cache term (issue 43): a table whose rows fit a rank's cache share is
   modelled cheaper than the same lookups of a table of the same D whose rows come from
   DRAM; past the share, more rows cost more (until every row misses). */
static void planner_cache(void)
{
    const EmbDistPlacement p[1] = {{EMB_DIST_TABLEWISE, 0, 0, 0}};
    const EmbDistPlaceOptions o = {.batch = 2048};
    double small[2], large[2], larger[2];
    EmbDistTableDesc t = {.nrows = 1000, .featuresize = 64, .lookups = 2048};
    int r = emb_dist_plan_cost(&t, 1, 2, &o, p, small, NULL);
    t.nrows = 1000000; /* 256 MB of rows: beyond any cache share */
    r = r ? r : emb_dist_plan_cost(&t, 1, 2, &o, p, large, NULL);
    t.nrows = 4000000;
    r = r ? r : emb_dist_plan_cost(&t, 1, 2, &o, p, larger, NULL);
    CHECK(r == 0 && small[0] < large[0] && large[0] <= larger[0] && small[1] == large[1],
          "cache term: %.4g ms (1000 rows) < %.4g ms (1 M rows) <= %.4g (4 M), others' "
          "%.4g == %.4g (%d)", 1e3 * small[0], 1e3 * large[0], 1e3 * larger[0], 1e3 * small[1],
          1e3 * large[1], r);
}

/* The planner chooses column-wise where its model says it wins (issue 43): a very wide
   table of uniform ids (every id distinct), D 512 on 2 ranks and D 1024 on 4, whose
   row-wise raw rows would cost more to move and copy than each slice's holder spends on
   the global batch's ids; with max_norm it may not, and with skewed ids (few distinct
   rows) the row-wise split is cheaper. Plan only, no timing. */
static void planner_columnwise(void)
{
    static const int32_t dim[2] = {512, 1024}, ranks[2] = {2, 4};
    for (int k = 0; k < 2; k++) {
        const int32_t P = ranks[k];
        EmbDistTableDesc t[2] = {{.nrows = 1000000, .featuresize = dim[k],
                                  .lookups = 1024.0 * P},
                                 {.nrows = 1000, .featuresize = 16, .lookups = 1024.0 * P}};
        const EmbDistPlaceOptions o = {.batch = 1024 * P};
        EmbDistPlacement p[2];
        int r = emb_dist_place(t, 2, P, &o, p);
        CHECK(r == 0 && p[0].kind == EMB_DIST_COLUMNWISE && p[0].rank == 0 &&
              p[0].nshards == P, "planner on %d ranks, D %d: kind %d over %d ranks, not "
              "column-wise over every rank (%d)", (int)P, (int)dim[k], (int)p[0].kind,
              (int)p[0].nshards, r);
        t[0].uses = EMB_DIST_USES_MAX_NORM;
        r = emb_dist_place(t, 2, P, &o, p);
        CHECK(r == 0 && p[0].kind != EMB_DIST_COLUMNWISE, "planner on %d ranks: max_norm "
              "table placed column-wise (%d)", (int)P, r);
        t[0].uses = 0, t[0].distinct = 400.0 * P; /* skewed: 400 distinct rows per rank */
        r = emb_dist_place(t, 2, P, &o, p);
        CHECK(r == 0 && p[0].kind == EMB_DIST_ROWWISE, "planner on %d ranks, skewed ids: kind "
              "%d, not row-wise (%d)", (int)P, (int)p[0].kind, r);
        t[0].distinct = -1;
        CHECK(emb_dist_place(t, 2, P, &o, p) == EMB_EINVAL, "distinct < 0 not refused");
    }
}

/* The planner knows what a table runs with (issue 43): AUTO and PLAN_ROWWISE never place a
   MAX-pooled table by rows (AUTO splits the large table when it fits no rank whole: by rows
   or columns, with MAX by columns); a pin or an explicit placement the pooling or optimizer cannot
   run is refused at plan time, naming the table. */
static void planner_uses(void)
{
    static const int64_t rows[6] = {2000000, 1000, 100, 30, 5, 5};
    EmbDistTableDesc t[6];
    EmbDistPlacement p[6];
    for (int32_t P = 2; P <= 4; P++)
        for (int flag = 0; flag <= 1; flag++) {
            for (int i = 0; i < 6; i++)
                t[i] = (EmbDistTableDesc){.name = "t", .nrows = rows[i], .featuresize = 64,
                                          .lookups = 4096.0 * P,
                                          .uses = flag ? EMB_DIST_USES_MAX : 0u};
            for (int k = 0; k <= 2; k += 2) {
                /* AUTO: too little memory per rank to hold the large table whole */
                const EmbDistPlaceOptions o = {.plan = (EmbDistPlan)k, .batch = 1024 * P,
                                               .memory_per_rank = k ? 0 : rows[0] * 256 * 7 / 10};
                const int r = emb_dist_place(t, 6, P, &o, p);
                int byrows = 0, split = 0;
                for (int i = 0; !r && i < 6; i++)
                    byrows += p[i].kind == EMB_DIST_ROWWISE,
                    split += p[i].kind == EMB_DIST_ROWWISE || p[i].kind == EMB_DIST_COLUMNWISE;
                /* AUTO splits the large table (by columns with MAX: never by rows) */
                CHECK(r == 0 && (flag ? byrows == 0 : k ? byrows > 0 : split > 0) &&
                      (k || p[0].kind == EMB_DIST_ROWWISE || p[0].kind == EMB_DIST_COLUMNWISE),
                      "plan %d on %d ranks, uses %d: %d, %d tables by rows, %d split", k,
                      (int)P, flag, r, byrows, split);
            }
        }
    /* MAX and max_norm: neither by rows nor by columns, so too large for a rank: refused */
    t[0].uses = EMB_DIST_USES_MAX | EMB_DIST_USES_MAX_NORM;
    const EmbDistPlaceOptions tight = {.batch = 2048, .memory_per_rank = rows[0] * 256 * 7 / 10};
    CHECK(emb_dist_place(t, 6, 2, &tight, p) == EMB_ENOMEM, "a MAX, max_norm table larger "
          "than a rank's memory not refused");
    EmbDistPlacement pins[6];
    for (int i = 0; i < 6; i++)
        pins[i] = (EmbDistPlacement){EMB_DIST_ANY, 0, 0, 0};
    static const struct {
        unsigned uses;
        EmbDistKind kind;
    } bad[3] = {{EMB_DIST_USES_MAX, EMB_DIST_ROWWISE},
                {EMB_DIST_USES_MAX_NORM, EMB_DIST_COLUMNWISE},
                {EMB_DIST_USES_ROWWISE_ADAGRAD, EMB_DIST_COLUMNWISE}};
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 6; i++)
            t[i].uses = 0, t[i].name = "other";
        t[4].uses = bad[k].uses, t[4].name = "culprit";
        pins[4] = (EmbDistPlacement){bad[k].kind, 0, EMB_PARTITION_MOD, 0};
        const EmbDistPlaceOptions o = {.pins = pins};
        int r = emb_dist_place(t, 6, 2, &o, p);
        CHECK(r == EMB_ENOTSUP && strstr(emb_last_error(), "pins[4]") &&
                  strstr(emb_last_error(), "culprit"),
              "pin %d of a table with uses %u: %d (%s)", (int)bad[k].kind, bad[k].uses, r,
              emb_last_error());
        /* the same placement given explicitly to emb_dist_create */
        for (int i = 0; i < 6; i++)
            p[i] = (EmbDistPlacement){EMB_DIST_TABLEWISE, 0, 0, 0};
        p[4] = pins[4];
        const EmbDistOptions dopts = {.placement = p};
        EmbDist *d = NULL;
        r = emb_dist_create(&d, MPI_COMM_WORLD, t, 6, &dopts);
        CHECK(r == EMB_ENOTSUP && !d && strstr(emb_last_error(), "culprit"),
              "explicit placement %d of a table with uses %u: %d (%s)", (int)bad[k].kind,
              bad[k].uses, r, emb_last_error());
        emb_dist_destroy(&d);
    }
    t[0].uses = 8;
    CHECK(emb_dist_place(t, 6, 2, NULL, p) == EMB_EINVAL, "unknown uses flags refused");
}

static void placement(void)
{
    /* bytes 4000 / 400 / 400 / 400 and lookups 1 / 10 / 10 / 10 over 2 ranks, table-wise */
    const EmbDistTableDesc t[4] = {{.nrows = 1000, .featuresize = 1, .lookups = 1},
                                   {.nrows = 100, .featuresize = 1, .lookups = 10},
                                   {.nrows = 100, .featuresize = 1, .lookups = 10},
                                   {.nrows = 100, .featuresize = 1, .lookups = 10}};
    EmbDistPlacement p[4];
    EmbDistPlaceOptions o = {.plan = EMB_DIST_PLAN_TABLEWISE};
    int r = emb_dist_place(t, 4, 2, &o, p);
    /* costs: 4000/5200 + 1/31 = .8015 (t0), 400/5200 + 10/31 = .3995 (t1..t3): t0 -> 0,
       t1 -> 1, t2 -> 1 (.799 < .8015), t3 -> 1 */
    CHECK(r == 0 && p[0].rank == 0 && p[1].rank == 1 && p[2].rank == 1 && p[3].rank == 1,
          "LPT placement: %d %d %d %d", p[0].rank, p[1].rank, p[2].rank, p[3].rank);
    o.plan = EMB_DIST_PLAN_AUTO;
    CHECK(emb_dist_place(t, 4, 2, &o, p) == 0, "auto placement: %s", emb_last_error());
    planner();
    planner_cache();
    planner_columnwise();
    planner_uses();
    o.plan = 7;
    CHECK(emb_dist_place(t, 4, 2, &o, p) == EMB_EINVAL, "bad plan refused");
    CHECK(emb_dist_place(NULL, 4, 2, NULL, p) == EMB_ENULL, "NULL refused");
}

#ifdef EMB_DIST_ALLOC
/*
 * The allocation-failure hook of test_ckpt_alloc.c (alloc_fail.h): this build
 * (test_dist_alloc) links the library's and the ensemble's static objects with --wrap for
 * the allocator, so that the k-th allocation of a call can fail.
 */
#define ALLOC_FAIL_MEMALIGN
#include "alloc_fail.h"

/* Every value this rank holds: its tables, their optimizer slot 0 and step count. */
static float *snapshot(EmbDist *d, EmbOptimizer *opt, int64_t *len)
{
    int64_t n = 0;
    for (int pass = 0; pass < 2; pass++) {
        float *v = pass ? malloc(sizeof(float) * (size_t)(n + 1)) : NULL;
        n = 0;
        for (int64_t t = 0; t < emb_dist_ntables(d); t++) {
            EmbTable *lt = emb_dist_local_table(d, t), *st = NULL;
            int64_t step = -1;
            if (!lt)
                continue;
            const int64_t c = emb_table_ncolumns(lt);
            const int32_t D = emb_table_featuresize(lt);
            if (v)
                emb_table_read(lt, v + n, D);
            n += c * D;
            emb_optimizer_state(opt, lt, 0, &st, &step);
            if (v)
                v[n] = (float)step;
            n++;
            if (st) {
                if (v)
                    emb_table_read(st, v + n, emb_table_featuresize(st));
                n += emb_table_ncolumns(st) * emb_table_featuresize(st);
            }
        }
        if (v) {
            *len = n;
            return v;
        }
    }
    return NULL;
}

/*
 * An allocation failing on the last rank during emb_dist_update() (the k-th of the call,
 * for every k until the update succeeds, in the indexing of a batch larger than the last
 * one): every rank gets EMB_ENOMEM and no rank's table or optimizer state changes; the
 * update then succeeds.
 */
static void alloc_failure(void)
{
    EmbDist *d;
    EmbOptimizer *opt;
    small_ensemble("alloc", 10, 0, &d, &opt);
    if (!d)
        return;
    int r = 0;
    enum { NB = 64, BS = 4 };
    int64_t ids0[NB * BS], ids1[NB * BS];
    float out[NB * 12], dy[NB * 12];
    for (int i = 0; i < NB * 12; i++)
        dy[i] = (float)(i % 7 - 3) / 8.0f;
    const EmbOutputs eo = {.concat = out, .concat_stride = 12};
    const EmbOutputs go = {.concat = dy, .concat_stride = 12};
    int64_t nb = 2; /* the first step: 2 bags; the second: 64, more ids than any before */
    for (int step = 0; step < 2 && !r; step++, nb = NB) {
        for (int i = 0; i < NB * BS; i++) {
            ids0[i] = (i * 37 + rank * 11 + step) % 400;
            ids1[i] = (i * 53 + rank * 13 + step) % 900;
        }
        const EmbBatch b[2] = {{.ids = ids0, .nnz = nb * BS, .nbags = nb, .bag_size = BS},
                               {.ids = ids1, .nnz = nb * BS, .nbags = nb, .bag_size = BS}};
        r = emb_dist_maplookup(d, b, NULL, &eo);
        CHECK(r == 0, "alloc: forward %d", r);
        r = r ? r : emb_dist_backward(d, &go);
        CHECK(r == 0, "alloc: backward %d", r);
        if (r || step == 0) {
            r = r ? r : emb_dist_update(d, opt, 0);
            CHECK(r == 0, "alloc: first update %d", r);
            continue;
        }
        int64_t n0, n1;
        float *before = snapshot(d, opt, &n0);
        int nfail = 0;
        for (long k = 0; k < 1000; k++) {
            fail_in = rank == nranks - 1 ? k : -1;
            r = emb_dist_update(d, opt, 0);
            fail_in = -1;
            int lo, hi;
            MPI_Allreduce(&r, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            MPI_Allreduce(&r, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            CHECK(lo == hi, "alloc %ld: the ranks got %d and %d", k, lo, hi);
            if (r == 0)
                break;
            nfail++;
            CHECK(r == EMB_ENOMEM, "alloc %ld: update gives %d", k, r);
            float *now = snapshot(d, opt, &n1);
            CHECK(n0 == n1 && !memcmp(before, now, sizeof(float) * (size_t)n0),
                  "alloc %ld: a table or an optimizer state changed", k);
            free(now);
            if (r != EMB_ENOMEM || lo != hi)
                break;
        }
        CHECK(r == 0, "alloc: the update never succeeded: %d", r);
        CHECK(nfail > 0, "alloc: no allocation failed");
        float *after = snapshot(d, opt, &n1);
        int changed = n0 != n1 || memcmp(before, after, sizeof(float) * (size_t)n0), all = 0;
        MPI_Allreduce(&changed, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        CHECK(all, "alloc: the successful update changed nothing on a rank");
        free(before), free(after);
    }
    emb_optimizer_destroy(&opt);
    emb_dist_destroy(&d);
}
#endif

/* emb_dist_bf16_round(): nearest, ties to even, NaN and overflow. */
static void bf16_round(void)
{
    static const uint32_t in[6] = {0x3f800000u, 0x3f808000u, 0x3f818000u, 0x3f808001u,
                                   0x7f7fffffu, 0xbf7fffffu};
    static const uint32_t want[6] = {0x3f800000u, 0x3f800000u, 0x3f820000u, 0x3f810000u,
                                     0x7f800000u, 0xbf800000u};
    for (int k = 0; k < 6; k++) {
        float x, y;
        uint32_t u;
        memcpy(&x, &in[k], 4);
        y = emb_dist_bf16_round(x);
        memcpy(&u, &y, 4);
        CHECK(u == want[k], "bf16 round of 0x%08x: 0x%08x, want 0x%08x", (unsigned)in[k],
              (unsigned)u, (unsigned)want[k]);
    }
    CHECK(isnan(emb_dist_bf16_round(NAN)), "bf16 round of NaN is not NaN");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
#ifdef EMB_DIST_ALLOC
    alloc_failure();
    int ftotal = 0;
    MPI_Allreduce(&failures, &ftotal, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_dist_alloc: %d ranks: %s (%d failures)\n", nranks, ftotal ? "FAIL" : "ok",
               ftotal);
    MPI_Finalize();
    return ftotal ? 1 : 0;
#else
    const Case cases[] = {
        {"tablewise sum sgd", EMB_DIST_PLAN_TABLEWISE, 0, 0, EMB_COMBINER_SUM, 0, 0, 0, 0, 0,
         EMB_F32, EMB_OPT_SGD, 1, 0, 0, 0},
        {"rowwise-mod mean weights adagrad parallel", EMB_DIST_PLAN_ROWWISE,
         EMB_PARTITION_MOD, 0, EMB_COMBINER_MEAN, 1, 0, 0, 1, 0, EMB_F32, EMB_OPT_ADAGRAD, 1,
         0, 0, 1},
        {"tablewise sqrtn weights rowwise-adagrad auto groups", EMB_DIST_PLAN_TABLEWISE, 0, 0,
         EMB_COMBINER_SQRTN, 1, 0, 0, 1, 0, EMB_F32, EMB_OPT_ROWWISE_ADAGRAD, 2, 0, 0, 2},
        {"rowwise-div sqrtn max_norm rowwise-adagrad i32", EMB_DIST_PLAN_ROWWISE,
         EMB_PARTITION_DIV, 0, EMB_COMBINER_SQRTN, 1, 0, 1.5f, 1, 1, EMB_F32,
         EMB_OPT_ROWWISE_ADAGRAD, 2, 0, 0, 0},
        {"auto mix pruning default adam groups", EMB_DIST_PLAN_AUTO, 0, 0, EMB_COMBINER_MEAN,
         2, EMB_PRUNE_INVALID | EMB_PRUNE_NONPOSITIVE_WEIGHTS | EMB_USE_DEFAULT_ID, 0, 1, 0,
         EMB_F32, EMB_OPT_ADAM, 2, 0, 1, 0},
        {"explicit mix gather ftrl f16", 0, 0, 1, EMB_COMBINER_NONE, 1, 0, 0, 0, 0, EMB_F16,
         EMB_OPT_FTRL, 1, 0, 1, 0},
        {"explicit mix sum max_norm bf16 per-table groups", 0, 0, 1, EMB_COMBINER_SUM, 0,
         EMB_USE_DEFAULT_ID, 2.0f, 1, 0, EMB_BF16, EMB_OPT_SGD, 3, 1, 0, 0},
        {"rowwise sqrtn default adagrad f16", EMB_DIST_PLAN_ROWWISE, EMB_PARTITION_MOD, 0,
         EMB_COMBINER_SQRTN, 0, EMB_USE_DEFAULT_ID, 0, 1, 0, EMB_F16, EMB_OPT_ADAGRAD, 4, 0, 0,
         0},
        {"tablewise max default adagrad", EMB_DIST_PLAN_TABLEWISE, 0, 0, EMB_COMBINER_MAX, 0,
         EMB_USE_DEFAULT_ID, 0, 1, 0, EMB_F32, EMB_OPT_ADAGRAD, 1, 0, 0, 0},
        {"table-row-wise mean weights adam ckpt", 0, 0, 2, EMB_COMBINER_MEAN, 1,
         EMB_USE_DEFAULT_ID, 0, 1, 0, EMB_F32, EMB_OPT_ADAM, 2, 0, 1, 0},
        {"table-row-wise sqrtn max_norm rowwise-adagrad per-table", 0, 0, 2,
         EMB_COMBINER_SQRTN, 0, 0, 1.5f, 1, 1, EMB_F32, EMB_OPT_ROWWISE_ADAGRAD, 1, 1, 0, 1},
        {"replicated mix mean pruning default adam ckpt", 0, 0, 3, EMB_COMBINER_MEAN, 2,
         EMB_PRUNE_INVALID | EMB_PRUNE_NONPOSITIVE_WEIGHTS | EMB_USE_DEFAULT_ID, 0, 1, 0,
         EMB_F32, EMB_OPT_ADAM, 2, 0, 1, 0},
        {"replicated mix sum max_norm bf16 ftrl per-table", 0, 0, 3, EMB_COMBINER_SUM, 1, 0,
         2.0f, 1, 0, EMB_BF16, EMB_OPT_FTRL, 1, 1, 0, 2},
        {"replicated mix gather sgd f16", 0, 0, 3, EMB_COMBINER_NONE, 0, 0, 0, 0, 0, EMB_F16,
         EMB_OPT_SGD, 1, 0, 0, 0},
        {"column-wise mix sum weights adam groups ckpt", 0, 0, 4, EMB_COMBINER_SUM, 1, 0, 0, 1,
         0, EMB_F32, EMB_OPT_ADAM, 2, 0, 1, 1},
        {"column-wise mix mean pruning default adagrad per-table", 0, 0, 4, EMB_COMBINER_MEAN,
         2, EMB_PRUNE_INVALID | EMB_PRUNE_NONPOSITIVE_WEIGHTS | EMB_USE_DEFAULT_ID, 0, 1, 1,
         EMB_F32, EMB_OPT_ADAGRAD, 1, 1, 0, 0},
        {"column-wise mix max sgd bf16", 0, 0, 4, EMB_COMBINER_MAX, 0, EMB_USE_DEFAULT_ID, 0, 1,
         0, EMB_BF16, EMB_OPT_SGD, 1, 0, 0, 0},
        {"column-wise mix gather ftrl f16", 0, 0, 4, EMB_COMBINER_NONE, 1, 0, 0, 0, 0, EMB_F16,
         EMB_OPT_FTRL, 3, 0, 0, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        run_case(&cases[i]);
    /* the bf16 exchange: every placement kind equals one process with the outputs and
       output gradients rounded (exactly) */
    static const int bf16_cases[] = {0, 1, 6, 11, 14, 15};
    bf16_mode = 1;
    for (size_t i = 0; i < sizeof bf16_cases / sizeof *bf16_cases; i++)
        run_case(&cases[bf16_cases[i]]);
    bf16_mode = 0;
    bf16_round();
    max_rowwise();
    columnwise_limits();
    prefetch();
    prefetch_bad_id();
    bad_id();
    nonfinite();
    global_norm_refused();
    mismatch();
    placement();
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_dist: %d ranks, %zu cases: %s (%d failures)\n", nranks,
               sizeof cases / sizeof *cases, total ? "FAIL" : "ok", total);
    MPI_Finalize();
    return total ? 1 : 0;
#endif
}
