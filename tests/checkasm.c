/*
 * checkasm.c — the kernel checker (dav1d's checkasm habit): every kernel family of every
 * dispatch level this CPU has (C, AVX2, AVX-512), generic and static-size entries, run on
 * seeded random input against the C reference and compared bit for bit, with outputs
 * poisoned including PAD elements past the vector.
 *
 *   checkasm [--seed N]               check (the seed is printed; --seed N replays it)
 *   checkasm --bench [--seed N]       time every level against C (see checkasm_bench.c)
 *   checkasm --cold MiB               cold pooled gather through emb_lookup, 1 and 2 threads
 *
 * Every comparison is exact: the SIMD kernels claim bit-identical results (kernels.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checkasm.h"
#include "kernels/convert.h"

#define PAD 32     /* elements past every output that must stay poisoned */
#define NCOLS 24   /* distinct columns the bags draw from */
#define AHEAD 3    /* columns after a bag handed to the pool kernels to prefetch */
#define MAXD 512
#define MAXLEN 20

static const int32_t dims[] = {1, 3, 8, 15, 16, 17, 31, 32, 33, 64, 65, 100, 128, 256, 257, 512};
static const int64_t lens[] = {0, 1, 2, 7, 20};

static int failures, reported;
static long checks;

/* What one comparison is about, for the failure message. */
typedef struct Ctx {
    const char *level, *family, *variant;
    int dt;
    int32_t D;
    int64_t n;
} Ctx;

static void report(const Ctx *c, const char *what, size_t at)
{
    failures++;
    if (reported++ < 20)
        fprintf(stderr, "FAIL %s %s%s %s D=%d n=%lld: %s (element %zu)\n", c->level, c->family,
                c->variant, ca_dtype_name(c->dt), c->D, (long long)c->n, what, at);
}

/* Compares two buffers of @n elements of @esize bytes, reporting the first difference. */
static void expect_same(const Ctx *c, const void *ref, const void *got, size_t n, size_t esize)
{
    checks++;
    const unsigned char *a = ref, *b = got;
    for (size_t i = 0; i < n; i++)
        if (memcmp(a + i * esize, b + i * esize, esize)) {
            report(c, "differs from the C reference", i);
            return;
        }
}

/* ---- levels and data ------------------------------------------------------------------ */

void ca_levels_init(Level levels[NLEVELS])
{
    static const char *names[NLEVELS] = {"c", "avx2", "avx512"};
    static const unsigned need[NLEVELS] = {
        0, EMB_CPU_AVX2 | EMB_CPU_F16C,
        EMB_CPU_AVX2 | EMB_CPU_F16C | EMB_CPU_AVX512 | EMB_CPU_AVX512BF16};
    const unsigned have = emb_cpu_detected();
    for (int l = 0; l < NLEVELS; l++) {
        Level *v = &levels[l];
        v->name = names[l];
        v->flags = need[l] & have;
        v->available = l == LEVEL_C || ((need[l] & ~EMB_CPU_AVX512BF16 & ~have) == 0 &&
                                         EMB_HAVE_X86_KERNELS);
        emb__kernels_init_c(&v->k);
#if EMB_HAVE_X86_KERNELS
        if (v->available)
            emb__kernels_init_x86(&v->k, v->flags);
#endif
    }
}

float ca_value(uint64_t *s)
{
    float x = tu_randf(s) * ldexpf(1.0f, -(int)(tu_rand(s) % 28));
    if (tu_rand(s) % 64 == 0)
        x *= 0x1p-120f; /* f32 values whose bf16 rounding meets subnormals */
    return x;
}

void ca_fill(void *p, EmbDtype dt, int64_t n, uint64_t *s)
{
    for (int64_t i = 0; i < n; i++) {
        const float x = ca_value(s);
        if (dt == EMB_F32)
            ((float *)p)[i] = x;
        else if (dt == EMB_F16)
            ((uint16_t *)p)[i] = emb__f32_to_f16(x);
        else
            ((uint16_t *)p)[i] = emb__f32_to_bf16(x);
    }
}

static void poison_bytes(void *p, size_t bytes)
{
    memset(p, 0xa5, bytes);
}

/* ---- the data of one (D, dtype) ------------------------------------------------------- */

typedef struct Data {
    int dt;
    int32_t D;
    size_t esize;
    unsigned char *store;                 /* NCOLS columns, stride D + 3, misaligned */
    const void *cols[MAXLEN + AHEAD];     /* a bag's columns, then AHEAD more */
    float w[MAXLEN];
    float *out_ref, *out_got;             /* MAXLEN * (MAXD + 3) + PAD floats, aligned */
} Data;

static void data_bag(Data *d, uint64_t *s)
{
    const size_t stride = ((size_t)d->D + 3) * d->esize;
    const size_t skew = (tu_rand(s) % 4) * d->esize;
    for (int k = 0; k < MAXLEN + AHEAD; k++)
        d->cols[k] = d->store + skew + (tu_rand(s) % NCOLS) * stride;
    for (int k = 0; k < MAXLEN; k++)
        d->w[k] = tu_randf(s);
}

/* Both outputs poisoned; with @prefill their first D elements get the same values. */
static void data_outputs(Data *d, size_t n, int prefill, uint64_t *s)
{
    tu_poison(d->out_ref, n);
    if (prefill)
        for (int32_t i = 0; i < d->D; i++)
            d->out_ref[i] = ca_value(s);
    memcpy(d->out_got, d->out_ref, n * sizeof(float));
}

/* ---- the families ---------------------------------------------------------------------- */

static void check_gather(Ctx *c, Data *d, emb_gather_fn ref, emb_gather_fn got, uint64_t *s)
{
    if (!got)
        return;
    const int64_t stride = d->D + 3;
    const size_t total = (size_t)(c->n * stride + PAD);
    data_outputs(d, total, 0, s);
    ref(d->out_ref, stride, d->cols, c->n, d->D);
    got(d->out_got, stride, d->cols, c->n, d->D);
    expect_same(c, d->out_ref, d->out_got, total, sizeof(float));
}

static void check_pool(Ctx *c, Data *d, emb_pool_fn ref, emb_pool_fn got, uint64_t *s)
{
    if (!got)
        return;
    const size_t total = (size_t)d->D + PAD;
    for (int weighted = 0; weighted < 2; weighted++)
        for (int acc = 0; acc < 2; acc++) {
            const float *w = weighted ? d->w : NULL;
            data_outputs(d, total, acc, s);
            const int64_t ahead = acc ? -1 : AHEAD; /* -1: no prefetch */
            ref(d->out_ref, d->cols, w, c->n, ahead, d->D, acc);
            got(d->out_got, d->cols, w, c->n, ahead, d->D, acc);
            expect_same(c, d->out_ref, d->out_got, total, sizeof(float));
        }
}

/* sgd_row on a column (aligned or not) followed by PAD poisoned elements. */
static void check_sgd(Ctx *c, Data *d, emb_sgd_row_fn ref, emb_sgd_row_fn got, uint64_t *s)
{
    if (!got)
        return;
    const size_t bytes = ((size_t)d->D + PAD) * d->esize, skew = (tu_rand(s) % 2) * d->esize;
    unsigned char *a = (unsigned char *)d->out_ref + skew, *b = (unsigned char *)d->out_got + skew;
    float g[MAXD];
    poison_bytes(a, bytes);
    ca_fill(a, d->dt, d->D, s);
    memcpy(b, a, bytes);
    for (int32_t i = 0; i < d->D; i++)
        g[i] = ca_value(s);
    const float lr = tu_randf(s);
    ref(a, g, lr, d->D);
    got(b, g, lr, d->D);
    emb__sfence();
    expect_same(c, a, b, bytes, 1);
}

static void check_sumsq(Ctx *c, Data *d, emb_sumsq_fn ref, emb_sumsq_fn got)
{
    const float x = ref(d->cols[0], d->D), y = got(d->cols[0], d->D);
    expect_same(c, &x, &y, 1, sizeof x);
}

static void check_scale(Ctx *c, Data *d, emb_scale_fn ref, emb_scale_fn got, uint64_t *s)
{
    const size_t total = (size_t)d->D + PAD;
    data_outputs(d, total, 1, s);
    const float f = tu_randf(s);
    ref(d->out_ref, f, d->D);
    got(d->out_got, f, d->D);
    expect_same(c, d->out_ref, d->out_got, total, sizeof(float));
}

/* The bag-length dependent families of one (level, D, dtype). */
static void check_bags(const Level *lv, const EmbKernels *r, Data *d, uint64_t *s)
{
    const int dt = d->dt, dc = emb__dclass(d->D);
    const EmbKernels *k = &lv->k;
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
        Ctx c = {lv->name, "gather", "", dt, d->D, lens[li]};
        data_bag(d, s);
        check_gather(&c, d, r->gather[dt], k->gather[dt], s);
        c.family = "pool";
        check_pool(&c, d, r->pool[dt], k->pool[dt], s);
        c.family = "pool_nt";
        check_pool(&c, d, r->pool[dt], k->pool_nt[dt], s);
        emb__sfence();
        if (dc < 0)
            continue;
        c.variant = "_dN";
        c.family = "gather";
        check_gather(&c, d, r->gather[dt], k->gather_d[dc][dt], s);
        c.family = "pool";
        check_pool(&c, d, r->pool[dt], k->pool_d[dc][dt], s);
    }
}

/* The row families of one (level, D, dtype). */
static void check_rows(const Level *lv, const EmbKernels *r, Data *d, uint64_t *s)
{
    const int dt = d->dt, dc = emb__dclass(d->D);
    const EmbKernels *k = &lv->k;
    Ctx c = {lv->name, "sgd_row", "", dt, d->D, 1};
    check_sgd(&c, d, r->sgd_row[dt], k->sgd_row[dt], s);
    c.family = "sgd_row_nt";
    check_sgd(&c, d, r->sgd_row[dt], k->sgd_row_nt[dt], s);
    if (dc >= 0) {
        c.family = "sgd_row";
        c.variant = "_dN";
        check_sgd(&c, d, r->sgd_row[dt], k->sgd_row_d[dc][dt], s);
    }
    c.family = "sumsq";
    c.variant = "";
    data_bag(d, s);
    check_sumsq(&c, d, r->sumsq[dt], k->sumsq[dt]);
    if (dt == EMB_F32) {
        c.family = "scale";
        check_scale(&c, d, r->scale, k->scale, s);
    }
}

static void check_level(const Level *lv, const EmbKernels *ref, Data *d, uint64_t *s)
{
    for (size_t di = 0; di < sizeof dims / sizeof *dims; di++)
        for (int dt = 0; dt < EMB_NDTYPES; dt++) {
            d->dt = dt;
            d->D = dims[di];
            d->esize = emb_dtype_size((EmbDtype)dt);
            ca_fill(d->store, (EmbDtype)dt, (int64_t)NCOLS * (d->D + 3) + 3, s);
            check_bags(lv, ref, d, s);
            check_rows(lv, ref, d, s);
        }
}

/* Entries of @k that differ from @below: the variants this level adds. */
static int count_new(const EmbKernels *k, const EmbKernels *below)
{
    const unsigned char *a = (const unsigned char *)k, *b = (const unsigned char *)below;
    const size_t slot = sizeof(emb_pool_fn);
    int n = 0;
    for (size_t i = 0; i + slot <= sizeof *k; i += slot)
        n += memcmp(a + i, b + i, slot) != 0;
    return n;
}

/* The dispatch table follows the mask: 0 gives the C references, all flags the best. */
static void check_dispatch(const Level *levels)
{
    Ctx c = {"dispatch", "mask", "", EMB_F32, 64, 0};
    const unsigned saved = emb_cpu_flags();
    emb_set_cpu_mask(0);
    checks++;
    if (emb__kernels()->pool[EMB_F32] != levels[LEVEL_C].k.pool[EMB_F32] ||
        emb__kernel_pool(EMB_F32, 64, 0) != levels[LEVEL_C].k.pool_d[2][EMB_F32] ||
        emb__kernel_pool(EMB_F32, 65, 0) != levels[LEVEL_C].k.pool[EMB_F32])
        report(&c, "mask 0 does not select the C pool", 0);
    emb_set_cpu_mask(~0u);
    const Level *best = &levels[LEVEL_C];
    for (int l = 0; l < NLEVELS; l++)
        best = levels[l].available ? &levels[l] : best;
    checks++;
    if (emb__kernel_pool(EMB_F32, 64, 0) != best->k.pool_d[2][EMB_F32])
        report(&c, "D = 64 does not select the best _d64 pool", 0);
    emb_set_cpu_mask(saved);
}

static int run_checks(const Level *levels, uint64_t seed)
{
    Data d;
    const size_t outn = (size_t)MAXLEN * (MAXD + 3) + PAD;
    d.store = malloc(((size_t)NCOLS * (MAXD + 3) + 8) * sizeof(float));
    const size_t outbytes = ((outn + 16) * sizeof(float) + 63) & ~(size_t)63;
    d.out_ref = aligned_alloc(64, outbytes);
    d.out_got = aligned_alloc(64, outbytes);
    if (!d.store || !d.out_ref || !d.out_got) {
        fprintf(stderr, "checkasm: out of memory\n");
        return 2;
    }
    for (int l = 0; l < NLEVELS; l++) {
        if (!levels[l].available) {
            printf("  %-7s skipped (not on this CPU or not built)\n", levels[l].name);
            continue;
        }
        const int before = failures;
        const long c0 = checks;
        uint64_t s = seed + (uint64_t)l;
        check_level(&levels[l], &levels[LEVEL_C].k, &d, &s);
        printf("  %-7s %3d new entries, %6ld comparisons: %s\n", levels[l].name,
               l ? count_new(&levels[l].k, &levels[l - 1].k) : 0, checks - c0,
               failures == before ? "ok" : "FAILED");
    }
    check_dispatch(levels);
    free(d.store);
    free(d.out_ref);
    free(d.out_got);
    printf("checkasm: %ld comparisons, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
    int bench = 0;
    int64_t cold = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--bench"))
            bench = 1;
        else if (!strcmp(argv[i], "--cold") && i + 1 < argc)
            cold = strtoll(argv[++i], NULL, 0);
        else {
            fprintf(stderr, "usage: %s [--seed N] [--bench] [--cold MiB]\n", argv[0]);
            return 2;
        }
    }
    static Level levels[NLEVELS];
    ca_levels_init(levels);
    printf("checkasm: seed %llu (replay with --seed %llu), cpu flags 0x%x\n",
           (unsigned long long)seed, (unsigned long long)seed, emb_cpu_detected());
    if (cold)
        return ca_cold(cold, seed);
    if (bench)
        return ca_bench(levels, seed);
    return run_checks(levels, seed);
}
