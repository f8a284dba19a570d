/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist_plan.c — emb_dist_place() and its planner (EMB_DIST_PLAN_AUTO), with the cost
 * model emb_dist_plan_cost() prints. The model and its constants are written down in
 * docs/design/mpi.md ("The planner"); change both together.
 *
 * A table's cost on a rank is the modelled seconds of one step: rows gathered and updated
 * (at the LLC rate for the part of the rank's share of the table that fits its cache, at
 * the DRAM rate for the rest), pooled rows and their gradients streamed, ids kept, and
 * bytes sent and received in the all-to-alls. The planner minimises the largest rank's
 * sum (every rank waits for the slowest in the next collective), within each rank's memory.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_impl.h"

/* Measured on the development machine (AMD EPYC, 2 ranks on loopback; docs/design/mpi.md,
   "The planner", and docs/bench/2026-11-28-mpi-planner-calibrated.md): */
#define DRAM_BW 20e9  /* bytes/s of random rows one thread reads from DRAM (emb-bench roof,
                         1 GiB buffer: 17.4-21.3) */
#define LLC_BW 60e9   /* bytes/s of random rows one thread reads from its cache share (the
                         roof with --llc-mib 16: an 8 MiB buffer; 80 at 2 MiB, 38 at 16) */
#define LLC_SHARE 8e6 /* bytes of a table's rows a rank's cache share keeps (the rate falls
                         past 8 MiB: 60 GB/s at 8 MiB, 30 at 32 MiB, as DRAM) */
#define STREAM_BW 8e9 /* bytes/s of pooled rows and their gradients written and read (fitted
                         with ID_S to the measured table-wise steps of dist-bench's two
                         ensembles, D 64 and D 256) */
#define NET_BW 7e9    /* bytes/s one rank sends plus receives in the all-to-alls (loopback,
                         Open MPI vader: dist-bench table-wise, 3.4 MB each way per rank in
                         0.99 ms forward, 0.87 ms backward) */
#define ID_S 60e-9    /* an id's bookkeeping on the rank that pools or records it: its bag,
                         hashing it into the distinct rows of the update */
#define UPDATE_PASSES 3.0 /* an updated row is read and written, its state read and written
                             (about one more row's bytes): three row-sized passes */
#define ENTRY_BYTES 12.0  /* a row-wise gradient entry: column (8) and coefficient (4) */
#define COPY_BW 14e9  /* bytes/s of the row-wise path's raw rows and gradient entries (with
                         their dy rows) copied on their way: packed, through the shared
                         memory, unpacked, pooled or grouped by owner (fitted to the measured
                         row-wise step of dist-bench --mix, D 256, relative to table-wise's) */
#define COL_ID_S 75e-9 /* an id's extra bookkeeping on each column-wise holder (the global
                          batch's ids gathered, its bags rebuilt and deduplicated once per
                          slice; fitted likewise to the measured column-wise step of --mix) */

/* One table's quantities for the model. */
typedef struct Model {
    double rowb, outb;  /* bytes of a stored row, of a pooled f32 row */
    double L, B, U;     /* ids, bags and distinct rows per step (global batch) */
    int64_t bytes, nrows;
    unsigned uses;      /* EmbDistTableDesc::uses */
} Model;

static Model model_of(const EmbDistTableDesc *t, int64_t bytes, int64_t batch)
{
    Model m = {.rowb = (double)emb_dtype_size(t->dtype) * t->featuresize,
               .outb = 4.0 * t->featuresize, .bytes = bytes, .nrows = t->nrows,
               .uses = t->uses};
    m.L = t->lookups > 0 ? t->lookups : 1.0;
    m.B = batch > 0 ? (double)batch : m.L;
    m.U = t->distinct > 0 && t->distinct < m.L ? t->distinct : m.L;
    m.U = m.U < (double)t->nrows ? m.U : (double)t->nrows;
    return m;
}

/*
 * Seconds per byte of rows a rank reads or updates in a table of which it holds @p held
 * bytes: the part of them that fits its cache share comes at the LLC rate, the rest from
 * DRAM (hit fraction h = min(1, LLC_SHARE / held); a small table's rows stay cached).
 */
static double row_s(double held)
{
    const double h = held <= LLC_SHARE ? 1.0 : LLC_SHARE / held;
    return h / LLC_BW + (1.0 - h) / DRAM_BW;
}

/*
 * Adds table @p m placed as @p p to every rank's @p load (seconds) and @p mem (bytes held;
 * may be NULL). Exchange bytes count only the part that crosses to other ranks, (P-1)/P.
 * A holder of `held` bytes of the table pays, for L ids, B bags and U distinct rows of it:
 * (L + 3U) rows at row_s(held), 2B pooled rows and their gradients at STREAM_BW, L ids at
 * ID_S; the exchange at NET_BW.
 */
static void add_cost(const Model *m, const EmbDistPlacement *p, int32_t P, double *load,
                     double *mem)
{
    const double f = (P - 1.0) / P, ids = (m->L + m->B) * 8.0, rows = m->L + UPDATE_PASSES * m->U;
    if (p->kind == EMB_DIST_TABLEWISE || p->kind == EMB_DIST_COLUMNWISE) {
        /* each holder (the owner; a column slice's owner): pools its share of the global
           batch's rows, sends pooled rows, takes ids and dy, updates; every rank: sends its
           ids (to every holder) and dy rows, receives its pooled rows */
        const int col = p->kind == EMB_DIST_COLUMNWISE;
        const int32_t S = col && p->nshards > 0 ? p->nshards : col ? P : 1;
        const int32_t first = col && p->nshards == 0 ? 0 : p->rank;
        const double hold = rows * m->rowb / S * row_s((double)m->bytes / S) +
                            2.0 * m->B * m->outb / S / STREAM_BW +
                            m->L * (col ? ID_S + COL_ID_S : ID_S) +
                            f * (ids + 2.0 * m->B * m->outb / S) / NET_BW;
        for (int32_t r = 0; r < P; r++)
            load[r] += f * (ids * S + 2.0 * m->B * m->outb) / P / NET_BW;
        for (int32_t s = 0; s < S; s++) {
            load[first + s] += hold;
            if (mem)
                mem[first + s] += (double)m->bytes / S;
        }
        return;
    }
    if (p->kind == EMB_DIST_REPLICATED) {
        /* every rank: pools its own bags, receives (and sends its share of) the global
           batch's ids and dy, records and applies the whole gradient */
        const double each = (m->L / P + UPDATE_PASSES * m->U) * m->rowb * row_s((double)m->bytes) +
                            (m->B * m->outb / P + m->B * m->outb) / STREAM_BW + m->L * ID_S +
                            2.0 * f * (ids + m->B * m->outb) / NET_BW;
        for (int32_t r = 0; r < P; r++) {
            load[r] += each;
            if (mem)
                mem[r] += (double)m->bytes;
        }
        return;
    }
    const int32_t first = p->nshards > 0 ? p->rank : 0, S = p->nshards > 0 ? p->nshards : P;
    /* holders: gather the rows asked (each distinct id once per asking rank), take the
       gradient entries with their bags' dy rows, update their share */
    const double u = m->U / S, l = m->L / S;
    const double hmoved = u * m->rowb + l * (ENTRY_BYTES + m->outb);
    const double hold = (1.0 + UPDATE_PASSES) * u * m->rowb * row_s((double)m->bytes / S) +
                        l * m->outb / STREAM_BW + l * ID_S + f * (u * 8.0 + hmoved) / NET_BW +
                        hmoved / COPY_BW;
    /* every rank: asks for its ids, pools its bags from the rows received (cached: just
       arrived), sends entries; the rows and entries copied on their way */
    const double moved = (m->U * m->rowb + m->L * (ENTRY_BYTES + m->outb)) / P;
    const double all = m->L / P * ID_S + m->L * m->rowb / P / LLC_BW +
                       m->B * m->outb / P / STREAM_BW + f * (m->U * 8.0 / P + moved) / NET_BW +
                       moved / COPY_BW;
    for (int32_t r = 0; r < P; r++)
        load[r] += all;
    for (int32_t s = 0; s < S; s++) {
        load[first + s] += hold;
        if (mem) /* the largest shard */
            mem[first + s] += (double)((m->nrows + S - 1) / S) * m->rowb;
    }
}

static int check_common(const EmbDistTableDesc *tables, int64_t n, int32_t nranks,
                        const EmbDistPlaceOptions *o, const char *what)
{
    const unsigned part = o->partition ? o->partition : EMB_PARTITION_MOD;
    if (n < 1 || nranks < 1 || o->plan < EMB_DIST_PLAN_AUTO || o->plan > EMB_DIST_PLAN_ROWWISE ||
        (part != EMB_PARTITION_MOD && part != EMB_PARTITION_DIV) || o->rowwise_bytes < 0 ||
        o->memory_per_rank < 0 || o->batch < 0)
        return dist_fail(EMB_EINVAL, "%s: n %lld, nranks %d, plan %d, partition %u, "
                         "rowwise_bytes, memory_per_rank or batch out of range", what,
                         (long long)n, (int)nranks, (int)o->plan, part);
    for (int64_t i = 0; i < n; i++) {
        int64_t b;
        const int r = dist_desc_check(&tables[i], i, &b);
        if (r)
            return r;
    }
    return 0;
}

int emb_dist_plan_cost(const EmbDistTableDesc *tables, int64_t n, int32_t nranks,
                       const EmbDistPlaceOptions *opts, const EmbDistPlacement *placement,
                       double *load, int64_t *bytes)
{
    const EmbDistPlaceOptions o = opts ? *opts : (EmbDistPlaceOptions){0};
    if (!tables || !placement || !load)
        return dist_fail(EMB_ENULL, "emb_dist_plan_cost: tables, placement or load is NULL");
    int r = check_common(tables, n, nranks, &o, "emb_dist_plan_cost");
    for (int64_t i = 0; i < n && !r; i++)
        if (!dist_placement_valid(&placement[i], nranks))
            r = dist_fail(EMB_EINVAL, "emb_dist_plan_cost: placement[%lld] is not valid over "
                          "%d ranks", (long long)i, (int)nranks);
    double *mem = r ? NULL : calloc((size_t)nranks, sizeof *mem);
    if (!r && !mem)
        r = dist_fail(EMB_ENOMEM, "emb_dist_plan_cost: out of memory");
    if (r)
        return r;
    for (int32_t k = 0; k < nranks; k++)
        load[k] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t b;
        dist_desc_check(&tables[i], i, &b);
        const Model m = model_of(&tables[i], b, o.batch);
        add_cost(&m, &placement[i], nranks, load, mem);
    }
    for (int32_t k = 0; bytes && k < nranks; k++)
        bytes[k] = (int64_t)mem[k];
    free(mem);
    return 0;
}

/* ---- the fixed plans ----------------------------------------------------------------- */

/* PLAN_TABLEWISE / PLAN_ROWWISE (and 1 rank): LPT on bytes and lookups fractions. */
static int place_fixed(const EmbDistTableDesc *tables, int64_t n, int32_t nranks,
                       const EmbDistPlaceOptions *o, unsigned part, EmbDistPlacement *out)
{
    double total_bytes = 0, total_lookups = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t b;
        dist_desc_check(&tables[i], i, &b);
        total_bytes += (double)b;
        total_lookups += tables[i].lookups > 0 ? tables[i].lookups : 1.0;
    }
    double *load = calloc((size_t)nranks, sizeof *load);
    double *cost = malloc((size_t)n * sizeof *cost);
    int64_t *order = malloc((size_t)n * sizeof *order);
    if (!load || !cost || !order) {
        free(load), free(cost), free(order);
        return dist_fail(EMB_ENOMEM, "emb_dist_place: out of memory");
    }
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t b;
        dist_desc_check(&tables[i], i, &b);
        const double l = tables[i].lookups > 0 ? tables[i].lookups : 1.0;
        cost[i] = (total_bytes > 0 ? b / total_bytes : 0) + l / total_lookups;
        if (nranks > 1 && o->plan == EMB_DIST_PLAN_ROWWISE &&
            !(tables[i].uses & EMB_DIST_USES_MAX)) /* MAX: whole, by LPT */
            out[i] = (EmbDistPlacement){EMB_DIST_ROWWISE, 0, part, 0};
        else
            order[m++] = i;
    }
    /* LPT: decreasing cost, ties by index (insertion sort: n is small) */
    for (int64_t a = 1; a < m; a++)
        for (int64_t b = a; b > 0 && cost[order[b]] > cost[order[b - 1]]; b--) {
            const int64_t x = order[b];
            order[b] = order[b - 1], order[b - 1] = x;
        }
    for (int64_t k = 0; k < m; k++) {
        int32_t best = 0;
        for (int32_t r = 1; r < nranks; r++)
            if (load[r] < load[best])
                best = r;
        out[order[k]] = (EmbDistPlacement){EMB_DIST_TABLEWISE, best, 0, 0};
        load[best] += cost[order[k]];
    }
    free(load), free(cost), free(order);
    return 0;
}

/* ---- the planner --------------------------------------------------------------------- */

typedef struct Plan {
    int32_t P;
    double *load, *mem, *tl, *tm; /* per rank: load, bytes held; scratch copies */
    double limit;                 /* bytes per rank (INFINITY: none) */
} Plan;

/* Max load after adding @p m as @p p, or INFINITY when a rank's memory would overflow;
   @p added: the sum of the loads added. */
static double try_place(Plan *pl, const Model *m, const EmbDistPlacement *p, double *added)
{
    memcpy(pl->tl, pl->load, sizeof(double) * (size_t)pl->P);
    memcpy(pl->tm, pl->mem, sizeof(double) * (size_t)pl->P);
    add_cost(m, p, pl->P, pl->tl, pl->tm);
    double mx = 0, sum = 0;
    for (int32_t r = 0; r < pl->P; r++) {
        if (pl->tm[r] > pl->limit)
            return INFINITY;
        mx = pl->tl[r] > mx ? pl->tl[r] : mx;
        sum += pl->tl[r] - pl->load[r];
    }
    *added = sum;
    return mx;
}

/* Keeps @p p in @p out when it beats the best so far (the lowest max load, then the least
   load added). */
static void consider(Plan *pl, const Model *m, const EmbDistPlacement *p, double *best,
                     double *best_add, EmbDistPlacement *out)
{
    double add;
    const double mx = try_place(pl, m, p, &add);
    if (mx < *best || (mx == *best && add < *best_add))
        *best = mx, *best_add = add, *out = *p;
}

/* The best placement of @p m given the loads so far: table-wise on a rank, row-wise or
   column-wise over a range of ranks (each where the table's uses allow), or replicated. */
static int best_place(Plan *pl, const Model *m, unsigned part, EmbDistPlacement *out)
{
    const int by_rows = !(m->uses & EMB_DIST_USES_MAX);
    const int by_cols = !(m->uses & (EMB_DIST_USES_MAX_NORM | EMB_DIST_USES_ROWWISE_ADAGRAD));
    double best = INFINITY, best_add = INFINITY;
    const int32_t P = pl->P;
    const int64_t rmax = !by_rows ? 1 : m->nrows < P ? (m->nrows > 1 ? m->nrows : 1) : P;
    const int64_t cmax = !by_cols ? 1 : m->outb / 4 < P ? (int64_t)(m->outb / 4) : P;
    for (int32_t S = 1; S <= (rmax > cmax ? rmax : cmax); S++)
        for (int32_t first = 0; first + S <= P; first++) {
            if (S == 1) {
                consider(pl, m, &(EmbDistPlacement){EMB_DIST_TABLEWISE, first, 0, 0}, &best,
                         &best_add, out);
                continue;
            }
            if (S <= rmax)
                consider(pl, m, &(EmbDistPlacement){EMB_DIST_ROWWISE, first, part, S}, &best,
                         &best_add, out);
            if (S <= cmax)
                consider(pl, m, &(EmbDistPlacement){EMB_DIST_COLUMNWISE, first, 0, S}, &best,
                         &best_add, out);
        }
    consider(pl, m, &(EmbDistPlacement){EMB_DIST_REPLICATED, 0, 0, 0}, &best, &best_add, out);
    return best < INFINITY ? 0 : -1;
}

/* LPT over the tables @order[0..nfree) while one fits whole under @cap (the mean load) and
   in memory; the others marked in @deferred. */
static void place_whole(Plan *pl, const Model *m, const int64_t *order, int64_t nfree,
                        double cap, unsigned char *deferred, EmbDistPlacement *out)
{
    for (int64_t k = 0; k < nfree; k++) {
        const int64_t i = order[k];
        int32_t best = -1;
        for (int32_t q = 0; q < pl->P; q++)
            if (pl->mem[q] + (double)m[i].bytes <= pl->limit &&
                (best < 0 || pl->load[q] < pl->load[best]))
                best = q;
        const EmbDistPlacement tw = {EMB_DIST_TABLEWISE, best, 0, 0};
        double add;
        if (best < 0 || try_place(pl, &m[i], &tw, &add) > cap) {
            deferred[i] = 1;
            continue;
        }
        out[i] = tw;
        add_cost(&m[i], &tw, pl->P, pl->load, pl->mem);
    }
}

static int plan_auto(const EmbDistTableDesc *tables, int64_t n, int32_t P,
                     const EmbDistPlaceOptions *o, unsigned part, EmbDistPlacement *out)
{
    Plan pl = {.P = P, .limit = o->memory_per_rank > 0 ? (double)o->memory_per_rank
                                                       : INFINITY};
    pl.load = calloc(4 * (size_t)P, sizeof(double));
    Model *m = malloc((size_t)n * sizeof *m);
    int64_t *order = malloc((size_t)n * sizeof *order);
    unsigned char *deferred = calloc((size_t)n, 1);
    double *own = malloc((size_t)n * sizeof *own);
    int r = 0;
    if (!pl.load || !m || !order || !deferred || !own) {
        r = dist_fail(EMB_ENOMEM, "emb_dist_place: out of memory");
        goto done;
    }
    pl.mem = pl.load + P, pl.tl = pl.mem + P, pl.tm = pl.tl + P;
    /* pinned tables first; the others' table-wise cost (the sum over ranks) for order */
    double total = 0;
    int64_t nfree = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t b;
        dist_desc_check(&tables[i], i, &b);
        m[i] = model_of(&tables[i], b, o->batch);
        if (o->pins && o->pins[i].kind != EMB_DIST_ANY) {
            out[i] = o->pins[i];
            add_cost(&m[i], &out[i], P, pl.load, pl.mem);
            continue;
        }
        const EmbDistPlacement tw = {EMB_DIST_TABLEWISE, 0, 0, 0};
        memset(pl.tl, 0, sizeof(double) * (size_t)P);
        add_cost(&m[i], &tw, P, pl.tl, NULL);
        own[i] = 0;
        for (int32_t k = 0; k < P; k++)
            own[i] += pl.tl[k];
        total += own[i];
        order[nfree++] = i;
    }
    for (int32_t k = 0; k < P; k++)
        total += pl.load[k];
    for (int64_t a = 1; a < nfree; a++) /* decreasing cost, ties by index */
        for (int64_t b = a; b > 0 && own[order[b]] > own[order[b - 1]]; b--) {
            const int64_t x = order[b];
            order[b] = order[b - 1], order[b - 1] = x;
        }
    place_whole(&pl, m, order, nfree, total / P, deferred, out);
    /* the rest, largest first: whichever placement keeps the maximum lowest */
    for (int64_t k = 0; k < nfree && !r; k++) {
        const int64_t i = order[k];
        if (!deferred[i])
            continue;
        if (best_place(&pl, &m[i], part, &out[i]))
            r = dist_fail(EMB_ENOMEM, "emb_dist_place: table %lld (%lld bytes) fits in no "
                          "rank's remaining memory (memory_per_rank %lld), %s", (long long)i,
                          (long long)m[i].bytes, (long long)o->memory_per_rank,
                          m[i].uses & EMB_DIST_USES_MAX
                              ? "whole or by columns (MAX pooling: never by rows)"
                              : "even split over every rank");
        else
            add_cost(&m[i], &out[i], P, pl.load, pl.mem);
    }
done:
    free(pl.load), free(m), free(order), free(deferred), free(own);
    return r;
}

/* The modelled maximum rank load of placement @p p (INFINITY: a rank's memory overflows);
   @p load, @p mem: nranks scratch. */
static double max_load(const EmbDistTableDesc *tables, int64_t n, int32_t P,
                       const EmbDistPlaceOptions *o, const EmbDistPlacement *p, double *load,
                       double *mem)
{
    const double limit = o->memory_per_rank > 0 ? (double)o->memory_per_rank : INFINITY;
    for (int32_t k = 0; k < P; k++)
        load[k] = mem[k] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t b;
        dist_desc_check(&tables[i], i, &b);
        const Model m = model_of(&tables[i], b, o->batch);
        add_cost(&m, &p[i], P, load, mem);
    }
    double mx = 0;
    for (int32_t k = 0; k < P; k++) {
        if (mem[k] > limit)
            return INFINITY;
        mx = load[k] > mx ? load[k] : mx;
    }
    return mx;
}

/* The model tells plans apart no finer than this: a fixed plan within it of the best
   modelled plan is taken (measured steps of plans the model puts within 1 % of each
   other differ by noise; the fixed plan is the simpler and the measured best on the
   Criteo-shaped ensemble: docs/bench/2026-11-28-mpi-planner-calibrated.md). */
#define FIXED_TIE 0.02

/* The planner's greedy result in @p out is replaced by a fixed plan (every table whole by
   LPT, then every table by rows; pins kept) whose slowest rank is modelled within
   FIXED_TIE of the best of the three: AUTO is never modelled more than FIXED_TIE slower
   than either fixed plan. */
static int best_of_fixed(const EmbDistTableDesc *tables, int64_t n, int32_t P,
                         const EmbDistPlaceOptions *o, unsigned part, EmbDistPlacement *out)
{
    double *load = malloc(2 * (size_t)P * sizeof *load), mx[2] = {0, 0};
    EmbDistPlacement *alt = malloc(2 * (size_t)n * sizeof *alt);
    int r = 0;
    if (!load || !alt) {
        r = dist_fail(EMB_ENOMEM, "emb_dist_place: out of memory");
        goto done;
    }
    double best = max_load(tables, n, P, o, out, load, load + P);
    for (int k = 0; k < 2 && !r; k++) {
        EmbDistPlaceOptions f = *o;
        EmbDistPlacement *a = alt + k * n;
        f.plan = k ? EMB_DIST_PLAN_ROWWISE : EMB_DIST_PLAN_TABLEWISE;
        if ((r = place_fixed(tables, n, P, &f, part, a)))
            break;
        for (int64_t i = 0; o->pins && i < n; i++)
            if (o->pins[i].kind != EMB_DIST_ANY)
                a[i] = o->pins[i];
        mx[k] = max_load(tables, n, P, o, a, load, load + P);
        best = mx[k] < best ? mx[k] : best;
    }
    for (int k = 0; k < 2 && !r; k++)
        if (mx[k] <= best * (1.0 + FIXED_TIE)) {
            memcpy(out, alt + k * n, (size_t)n * sizeof *out);
            break;
        }
done:
    free(load), free(alt);
    return r;
}

int emb_dist_place(const EmbDistTableDesc *tables, int64_t n, int32_t nranks,
                   const EmbDistPlaceOptions *opts, EmbDistPlacement *out)
{
    const EmbDistPlaceOptions o = opts ? *opts : (EmbDistPlaceOptions){0};
    if (!tables || !out)
        return dist_fail(EMB_ENULL, "emb_dist_place: tables or out is NULL");
    int r = check_common(tables, n, nranks, &o, "emb_dist_place");
    if (r)
        return r;
    const unsigned part = o.partition ? o.partition : EMB_PARTITION_MOD;
    for (int64_t i = 0; o.pins && i < n; i++) {
        if (o.pins[i].kind == EMB_DIST_ANY)
            continue;
        if (!dist_placement_valid(&o.pins[i], nranks))
            return dist_fail(EMB_EINVAL, "emb_dist_place: pins[%lld] (kind %d, rank %d, "
                             "nshards %d) is not valid over %d ranks", (long long)i,
                             (int)o.pins[i].kind, (int)o.pins[i].rank,
                             (int)o.pins[i].nshards, (int)nranks);
        if ((r = dist_placement_allowed(&tables[i], &o.pins[i], i, "emb_dist_place: pins")))
            return r;
    }
    if (o.plan != EMB_DIST_PLAN_AUTO || (nranks == 1 && !o.pins))
        return place_fixed(tables, n, nranks, &o, part, out);
    if ((r = plan_auto(tables, n, nranks, &o, part, out)))
        return r;
    return best_of_fixed(tables, n, nranks, &o, part, out);
}
