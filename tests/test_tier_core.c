/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tier_core.c — the parts of a tiered table below the table contract (internal: the
 * static library): the I/O engines (io_uring and the pread pool, forced by kind), the
 * set-associative cache, and the data movement (resolve, pins, the scratch pad, dirty
 * write-back, prefetch, flush) against a reference array, for cache sizes from one row up;
 * faults injected into the I/O (tier_fault.h): nothing lost, errors name file and rows.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "rng.h"
#include "tables/tiered/tier.h"
#include "test_files.h"
#include "tier_fault.h"


static const EmbTierIoKind kinds[] = {EMB_TIER_IO_URING, EMB_TIER_IO_PREAD, EMB_TIER_IO_MAP};
static const char *const kind_names[] = {"io_uring", "pread", "mmap"};
#define NKINDS 3

static bool kind_ok(EmbTierIoKind k)
{
    int fd = open("/dev/null", O_RDONLY);
    EmbTierIo *io = NULL;
    const int r = emb__tier_io_create(&io, fd, k);
    emb__tier_io_destroy(&io);
    close(fd);
    return r == 0;
}

/* ---- the engine ------------------------------------------------------------------------ */

Test(tier_core, engines_read_write_short_and_faults, .init = setup, .fini = teardown)
{
    for (int ki = 0; ki < NKINDS; ki++) {
        if (!kind_ok(kinds[ki]))
            continue;
        char path[128];
        snprintf(path, sizeof path, "%s/io%d", dir, ki);
        const int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        cr_assert(fd >= 0);
        EmbTierIo *io = NULL;
        cr_assert_eq(emb__tier_io_create(&io, fd, kinds[ki]), 0);
        cr_assert_str_eq(emb__tier_io_name(io), kind_names[ki]);
        enum { N = 600, L = 100 };  /* more than the ring holds at once */
        static char src[N][L], dst[N][L];
        static EmbTierReq q[N];
        for (int i = 0; i < N; i++) {
            memset(src[i], i % 251, L);
            q[i] = (EmbTierReq){.buf = src[i], .offset = (int64_t)i * L, .len = L, .write = 1,
                                .tag = i};
        }
        emb__tier_io_run(io, q, N);
        for (int i = 0; i < N; i++) {
            cr_assert_eq(q[i].res, 0);
            q[i] = (EmbTierReq){.buf = dst[N - 1 - i], .offset = (int64_t)(N - 1 - i) * L,
                                .len = L, .tag = N - 1 - i};
        }
        emb__tier_io_submit(io, q, N);
        emb__tier_io_wait(io);
        cr_assert_eq(emb__tier_io_pending(io), 0);
        cr_assert_eq(memcmp(src, dst, sizeof src), 0);
        /* past the end: short */
        EmbTierReq s = {.buf = dst[0], .offset = (int64_t)N * L - 10, .len = L};
        emb__tier_io_run(io, &s, 1);
        cr_assert_eq(s.res, -ENODATA);
        /* injected */
        fault_set(-ENOSPC, 1, 0, 5);
        EmbTierReq f[2] = {{.buf = src[0], .offset = 0, .len = L, .write = 1, .tag = 4},
                           {.buf = src[0], .offset = 0, .len = L, .write = 1, .tag = 5}};
        emb__tier_io_run(io, f, 2);
        cr_assert_eq(f[0].res, 0);
        cr_assert_eq(f[1].res, -ENOSPC);
        fault_set(0, 1, 1, 0);
        emb__tier_io_destroy(&io);
        cr_assert_null(io);
        close(fd);
    }
}

/* ---- the cache ------------------------------------------------------------------------- */

/* Every engine of the process shares one pool: its threads do not grow with the tables
   (16 a table before), and the last engine stops them. */
Test(tier_core, one_pool_for_every_engine, .init = setup, .fini = teardown)
{
    /* engines left by another suite of this process (tests/nofork) keep the pool running */
    const int before = emb__tier_pool_threads();
    enum { NE = 5 };
    EmbTierIo *io[NE] = {0};
    int fd[NE], n1 = 0;
    for (int e = 0; e < NE; e++) {
        char path[128];
        snprintf(path, sizeof path, "%s/pool%d", dir, e);
        fd[e] = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        cr_assert(fd[e] >= 0);
        cr_assert_eq(emb__tier_io_create(&io[e], fd[e], EMB_TIER_IO_PREAD), 0);
        if (e == 0)
            n1 = emb__tier_pool_threads();
    }
    const int n = emb__tier_pool_threads();
    cr_assert(n >= 1 && n <= 16, "%d threads for %d engines", n, NE);
    cr_assert_eq(n, n1, "%d threads for 1 engine, %d for %d: one pool, not one each", n1, n, NE);
    cr_assert(before == 0 || before == n);
    /* each engine writes then reads back its own file through the shared queue */
    static char src[NE][64][32], dst[NE][64][32];
    static EmbTierReq q[NE][64];
    for (int pass = 0; pass < 2; pass++) {
        for (int e = 0; e < NE; e++) {
            for (int i = 0; i < 64; i++) {
                memset(src[e][i], (e * 64 + i) % 251, 32);
                q[e][i] = (EmbTierReq){.buf = pass ? dst[e][i] : src[e][i], .len = 32,
                                       .offset = i * 32, .write = !pass, .tag = i};
            }
            emb__tier_io_submit(io[e], q[e], 64);
        }
        for (int e = NE - 1; e >= 0; e--) {
            emb__tier_io_wait(io[e]);
            cr_assert_eq(emb__tier_io_pending(io[e]), 0);
            for (int i = 0; i < 64; i++)
                cr_assert_eq(q[e][i].res, 0);
        }
    }
    cr_assert_eq(memcmp(src, dst, sizeof src), 0);
    for (int e = 0; e < NE; e++) {
        emb__tier_io_destroy(&io[e]);
        close(fd[e]);
        if (e < NE - 1)
            cr_assert_eq(emb__tier_pool_threads(), n, "the pool lives while an engine does");
    }
    cr_assert_eq(emb__tier_pool_threads(), before ? n : 0, "the last engine stops the pool");
}

Test(tier_core, cache_sets_lru_lfu_and_pins, .init = setup, .fini = teardown)
{
    EmbTierCache c;
    cr_assert_eq(sizeof(EmbTierSlot), 16);
    cr_assert_eq(emb__tier_cache_init(&c, 3, 32, 0), 0);
    cr_assert_eq(c.ways, 3);
    cr_assert_eq(c.nsets, 1);
    for (int64_t id = 0; id < 3; id++) {
        const int64_t v = emb__tier_cache_victim(&c, id, 0);
        cr_assert(v >= 0);
        emb__tier_cache_install(&c, v, id, EMB_TIER_VALID);
    }
    emb__tier_cache_touch(&c, emb__tier_cache_find(&c, 0)); /* 1 is now the oldest */
    cr_assert_eq(emb__tier_cache_victim(&c, 7, 0), emb__tier_cache_find(&c, 1));
    c.slots[emb__tier_cache_find(&c, 1)].pins = 1;            /* pinned: 2 next */
    cr_assert_eq(emb__tier_cache_victim(&c, 7, 0), emb__tier_cache_find(&c, 2));
    for (int64_t s = 0; s < 3; s++)
        c.slots[s].pins = 1;
    cr_assert_eq(emb__tier_cache_victim(&c, 7, 0), -1);
    cr_assert_eq(emb__tier_cache_find(&c, 9), -1);
    emb__tier_cache_free(&c);

    cr_assert_eq(emb__tier_cache_init(&c, 20, 32, 1), 0); /* LFU, 2 sets of 8 */
    cr_assert_eq(c.ways, 8);
    cr_assert_eq(c.nslots, 16);
    for (int64_t s = 0; s < 8; s++) {
        emb__tier_cache_install(&c, s, 100 + s, EMB_TIER_VALID);
        for (int64_t k = 0; k < 8 - s; k++)
            emb__tier_cache_touch(&c, s);
    }
    cr_assert_eq(emb__tier_cache_victim(&c, 100, 0), 7); /* set 0's least used */
    c.slots[7].flags |= EMB_TIER_AHEAD; /* read ahead: last, never for another prefetch */
    cr_assert_eq(emb__tier_cache_victim(&c, 100, 0), 6);
    c.slots[6].stamp = 1000;
    cr_assert_eq(emb__tier_cache_victim(&c, 100, 0), 5);
    for (int64_t s = 0; s < 7; s++)
        c.slots[s].pins = 1;
    cr_assert_eq(emb__tier_cache_victim(&c, 100, 0), 7);
    cr_assert_eq(emb__tier_cache_victim(&c, 100, 1), -1);
    for (int64_t s = 0; s < 7; s++)
        c.slots[s].pins = 0;
    c.slots[3].stamp = UINT32_MAX;                      /* saturates: the set is halved */
    emb__tier_cache_touch(&c, 3);
    cr_assert_eq(c.slots[3].stamp, UINT32_MAX / 2 + 1);
    cr_assert_eq(c.slots[0].stamp, 9 / 2);
    emb__tier_cache_free(&c);
}

Test(tier_core, cache_admission_keeps_hot_rows_from_one_hit_rows, .init = setup, .fini = teardown)
{
    EmbTierCache c;
    cr_assert_eq(emb__tier_cache_init(&c, 8, 32, EMB_TIER_LRU_ADMIT), 0); /* one set */
    cr_assert(c.sketch.count != NULL);
    for (int64_t id = 0; id < 8; id++) {
        for (int k = 0; k < 3; k++)
            emb__tier_cache_count(&c, id);
        const int64_t v = emb__tier_cache_victim(&c, id, 0); /* free slots: no admission */
        cr_assert(v >= 0);
        emb__tier_cache_install(&c, v, id, EMB_TIER_VALID);
    }
    cr_assert_eq(emb__tier_cache_estimate(&c, 3), 3);
    emb__tier_cache_count(&c, 100);                      /* seen once: stays out */
    cr_assert_eq(emb__tier_cache_estimate(&c, 100), 1);
    cr_assert_eq(emb__tier_cache_victim(&c, 100, 0), -1);
    cr_assert_eq(emb__tier_cache_victim(&c, 100, 1), -1);
    for (int k = 0; k < 2; k++)                          /* as often as the victim: still out */
        emb__tier_cache_count(&c, 100);
    cr_assert_eq(emb__tier_cache_victim(&c, 100, 0), -1);
    emb__tier_cache_count(&c, 100);                      /* more often: takes the LRU slot */
    cr_assert_eq(emb__tier_cache_victim(&c, 100, 0), emb__tier_cache_find(&c, 0));
    for (int k = 0; k < 40; k++)                         /* capped at 15 */
        emb__tier_cache_count(&c, 5);
    cr_assert_eq(emb__tier_cache_estimate(&c, 5), 15);
    cr_assert_eq(c.sketch.period, 80);                   /* 10 counts a slot, then halved */
    const unsigned before = emb__tier_cache_estimate(&c, 100);
    while (c.sketch.added != 0)
        emb__tier_cache_count(&c, 1000);
    cr_assert_eq(emb__tier_cache_estimate(&c, 5), 7);
    cr_assert_eq(emb__tier_cache_estimate(&c, 100), before / 2);
    emb__tier_cache_free(&c);

    cr_assert_eq(emb__tier_cache_init(&c, 8, 32, EMB_TIER_LRU), 0); /* no sketch: no admission */
    cr_assert_null(c.sketch.count);
    emb__tier_cache_count(&c, 1);
    cr_assert_eq(emb__tier_cache_estimate(&c, 1), 0);
    emb__tier_cache_free(&c);
}

Test(tier_core, cache_protects_rows_of_batches_not_yet_looked_up, .init = setup, .fini = teardown)
{
    EmbTierCache c;
    cr_assert_eq(emb__tier_cache_init(&c, 8, 32, EMB_TIER_LRU), 0);
    for (int64_t id = 0; id < 8; id++)
        emb__tier_cache_install(&c, emb__tier_cache_victim(&c, id, 0), id, EMB_TIER_VALID);
    const int64_t s0 = emb__tier_cache_find(&c, 0), s1 = emb__tier_cache_find(&c, 1);
    cr_assert_eq(emb__tier_cache_victim(&c, 50, 1), s0); /* the oldest */
    emb__tier_cache_protect(&c, s0, 1);
    emb__tier_cache_protect(&c, s0, 1);                   /* two batches need it */
    cr_assert_eq(emb__tier_cache_victim(&c, 50, 1), s1);
    cr_assert_eq(emb__tier_cache_victim(&c, 50, 0), s1);
    emb__tier_cache_protect(&c, s0, -1);
    cr_assert_eq(emb__tier_cache_victim(&c, 50, 1), s1);  /* one batch still needs it */
    emb__tier_cache_install(&c, s0, 9, EMB_TIER_VALID);   /* (a failed read's slot, reused) */
    cr_assert_eq(c.slots[s0].ahead, 1, "installing keeps the protection");
    int64_t all[8];
    for (int64_t s = 0; s < 8; s++)
        all[s] = s == s0 ? -1 : s;
    emb__tier_cache_protect_all(&c, all, 8, 1);
    cr_assert_eq(emb__tier_cache_victim(&c, 50, 1), -1);   /* a prefetch takes none */
    cr_assert_eq(emb__tier_cache_victim(&c, 50, 0), -1);   /* nor a resolve (scratch pad) */
    c.slots[s1].flags |= EMB_TIER_LOADING;                 /* loaded or not: the same */
    cr_assert_eq(emb__tier_cache_victim(&c, 50, 0), -1);
    c.slots[s1].flags &= (uint8_t)~EMB_TIER_LOADING;
    emb__tier_cache_protect_all(&c, all, 8, -1);
    emb__tier_cache_protect(&c, s0, -1);
    emb__tier_cache_protect(&c, s0, -1);                  /* clamped at 0 */
    for (int64_t s = 0; s < 8; s++)
        cr_assert_eq(c.slots[s].ahead, 0);
    emb__tier_cache_free(&c);
}

/* ---- data movement against a reference ------------------------------------------------- */

enum { ROWS = 97, D = 5 };

static void make(Tier *x, const char *name, int64_t cache_rows, EmbTierIoKind k, int lfu,
                 bool create)
{
    memset(x, 0, sizeof *x);
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(x->label, sizeof x->label, "tiered table \"%s\"", name);
    x->nrows = ROWS, x->D = D, x->dtype = EMB_F32, x->rowbytes = D * 4, x->state_room = 4;
    int r = emb__tier_init(x, path, create, cache_rows * 48, lfu, k);
    r = r ? r : emb__tier_commit(x); /* a create's file replaces the path */
    cr_assert_eq(r, 0, "%s", emb_last_error());
    cr_assert_eq(x->recbytes, 48);
}

/* Resolves @ids (with @write: for an update, marked dirty), checks each against ref, writes
   new values into some. */
static void step(Tier *x, float (*ref)[12], const int64_t *ids, int n, uint64_t seed,
                 bool write)
{
    char *rows[64];
    const int r = emb__tier_resolve(x, ids, n, rows, write);
    cr_assert_eq(r, 0, "%s", emb_last_error());
    for (int k = 0; k < n; k++)
        cr_assert_eq(memcmp(rows[k], ref[ids[k]], 48), 0, "row %lld", (long long)ids[k]);
    for (int k = 0; k < n && write; k++) {
        if (emb__rng_unit(seed, (uint64_t)k, 1) < 0.5)
            continue;
        for (int i = 0; i < 12; i++)
            ref[ids[k]][i] = (float)emb__rng_unit(seed, (uint64_t)ids[k], (uint64_t)i);
        memcpy(rows[k], ref[ids[k]], 48);
    }
    /* the rows stay put while pinned: check them again */
    for (int k = 0; k < n; k++)
        cr_assert_eq(memcmp(rows[k], ref[ids[k]], 48), 0, "row %lld moved", (long long)ids[k]);
}

static void sweep(EmbTierIoKind k, int lfu, int64_t cache_rows)
{
    Tier x;
    make(&x, "t", cache_rows, k, lfu, true);
    static float ref[ROWS][12];
    memset(ref, 0, sizeof ref);
    for (uint64_t it = 0; it < 40; it++) {
        int64_t ids[64];
        const int n = 1 + (int)(emb__rng_unit(it, 0, 0) * 63);
        for (int j = 0; j < n; j++) /* skewed, with repeats */
            ids[j] = (int64_t)(ROWS * emb__rng_unit(it, 1, (uint64_t)j) * emb__rng_unit(it, 2, (uint64_t)j));
        if (it % 3 == 0)
            emb__tier_prefetch(&x, ids, n);
        step(&x, ref, ids, n / 2, it, it % 2 == 0);
        step(&x, ref, ids + n / 2, n - n / 2, it + 1000, it % 4 == 1); /* same operation */
        emb__tier_release(&x);
        cr_assert_eq(x.npinned, 0);
    }
    cr_assert_eq(emb__tier_flush(&x), 0, "%s", emb_last_error());
    static float file[ROWS][12];
    cr_assert_eq(emb__tier_file_rw(&x, -1, 0, ROWS, file, false), 0);
    cr_assert_eq(memcmp(file, ref, sizeof ref), 0);
    cr_assert(x.st.hits > 0 && x.st.rows_read > 0);
    emb__tier_fini(&x);
}

Test(tier_core, bit_exact_for_every_cache_size_engine_and_policy, .init = setup, .fini = teardown)
{
    const int64_t sizes[] = {1, 2, 3, 8, 17, 64, 200};
    for (int ki = 0; ki < NKINDS; ki++)
        for (int lfu = EMB_TIER_LRU; lfu <= EMB_TIER_LFU_ADMIT; lfu++)
            for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
                if (kind_ok(kinds[ki]))
                    sweep(kinds[ki], lfu, sizes[s]);
}

/* A prefetched batch's rows stay protected until its look-up; a batch never looked up
   drops its protection when TIER_DEDUPS later batches have been prefetched. */
Test(tier_core, prefetched_batches_protect_their_rows_until_looked_up, .init = setup,
     .fini = teardown)
{
    Tier x;
    make(&x, "t", 200, kinds[1], EMB_TIER_LRU_ADMIT, true);
    int64_t b[80]; /* batches of 64 ids and more are deduplicated and kept for their look-up */
    for (int k = 0; k < 80; k++)
        b[k] = (k * 7) % 40; /* 40 distinct ids, twice each */
    emb__tier_prefetch_batch(&x, b, false, 80);
    for (int k = 0; k < 80; k++)
        cr_assert_eq(x.cache.slots[emb__tier_cache_find(&x.cache, b[k])].ahead, 1);
    cr_assert_eq(emb__tier_resolve_batch(&x, b, false, 0, 80), 0, "%s", emb_last_error());
    for (int k = 0; k < 80; k++)
        cr_assert_eq(x.cache.slots[emb__tier_cache_find(&x.cache, b[k])].ahead, 0);
    emb__tier_release(&x);
    for (int64_t id = 50; id < 50 + TIER_DEDUPS + 1; id++) { /* prefetched, never looked up */
        for (int k = 0; k < 64; k++)
            b[k] = id;
        emb__tier_prefetch_batch(&x, b, false, 64);
    }
    cr_assert_eq(x.cache.slots[emb__tier_cache_find(&x.cache, 50)].ahead, 0);
    cr_assert_eq(x.cache.slots[emb__tier_cache_find(&x.cache, 50 + TIER_DEDUPS)].ahead, 1);
    int64_t marks = 0;
    for (int64_t s = 0; s < x.cache.nslots; s++)
        marks += x.cache.slots[s].ahead;
    cr_assert_eq(marks, TIER_DEDUPS);
    cr_assert_eq(emb__tier_flush(&x), 0, "%s", emb_last_error());
    emb__tier_fini(&x);
}

/* A prefetch reads the rows whose sets have no slot for them (admission keeps the hot rows)
   into the scratch pad, kept for the lookup of its batch: the lookup reads nothing, its rows
   are the file's; a batch never looked up lets its rows go after TIER_DEDUPS prefetches. */
Test(tier_core, a_prefetch_reads_the_rows_admission_refuses_for_its_lookup, .init = setup,
     .fini = teardown)
{
    for (int ki = 0; ki < NKINDS; ki++) {
        if (!kind_ok(kinds[ki]))
            continue;
        Tier x;
        make(&x, "t", 8, kinds[ki], EMB_TIER_LFU_ADMIT, true);
        static float ref[ROWS][12];
        int64_t all[ROWS], b[64];
        static char *rows[ROWS];
        for (int64_t id = 0; id < ROWS; id++)
            all[id] = id;
        cr_assert_eq(emb__tier_resolve(&x, all, ROWS, rows, true), 0, "%s", emb_last_error());
        for (int64_t id = 0; id < ROWS; id++) {
            for (int i = 0; i < 12; i++)
                ref[id][i] = (float)(id * 100 + i);
            memcpy(rows[id], ref[id], 48);
        }
        emb__tier_release(&x);
        cr_assert_eq(emb__tier_flush(&x), 0, "%s", emb_last_error());
        for (int rep = 0; rep < 4; rep++) { /* rows 0..7 hot, cached */
            cr_assert_eq(emb__tier_resolve(&x, all, 8, rows, false), 0, "%s", emb_last_error());
            emb__tier_release(&x);
        }
        for (int k = 0; k < 64; k++)
            b[k] = 30 + k;
        const int64_t m0 = x.st.misses, p0 = x.st.prefetched;
        emb__tier_prefetch_batch(&x, b, false, 64);
        cr_assert_eq(x.st.prefetched - p0, 64, "%s", kind_names[ki]);
        cr_assert_eq(emb__tier_resolve_batch(&x, b, false, 0, 64), 0, "%s", emb_last_error());
        cr_assert_eq(x.st.misses - m0, 0, "%s: %lld rows read in the lookup", kind_names[ki],
                     (long long)(x.st.misses - m0));
        cr_assert(emb__tier_resolved_span(&x, b, 0, 64, rows));
        for (int k = 0; k < 64; k++)
            cr_assert_eq(memcmp(rows[k], ref[b[k]], 48), 0, "row %lld", (long long)b[k]);
        emb__tier_release(&x);
        emb__tier_release(&x); /* (the held step's) */
        cr_assert_eq(x.sp.n, 0, "the lookup's scratch rows dropped at its release");
        emb__tier_prefetch_batch(&x, b, false, 64); /* never looked up */
        for (int p = 0; p < TIER_DEDUPS; p++) {
            cr_assert_geq(emb__tier_sp_find(&x.sp, 30), 0, "after %d prefetches", p);
            int64_t one[64];
            for (int k = 0; k < 64; k++)
                one[k] = 95;
            emb__tier_prefetch_batch(&x, one, false, 64);
        }
        cr_assert_lt(emb__tier_sp_find(&x.sp, 30), 0);
        cr_assert_eq(emb__tier_flush(&x), 0, "%s", emb_last_error());
        static float file[ROWS][12];
        cr_assert_eq(emb__tier_file_rw(&x, -1, 0, ROWS, file, false), 0);
        cr_assert_eq(memcmp(file, ref, sizeof ref), 0);
        emb__tier_fini(&x);
    }
}

/* ---- files and faults ------------------------------------------------------------------ */

Test(tier_core, missing_short_and_unopenable_files, .init = setup, .fini = teardown)
{
    Tier x;
    memset(&x, 0, sizeof x);
    char path[128];
    snprintf(path, sizeof path, "%s/none", dir);
    strcpy(x.label, "tiered table \"none\"");
    cr_assert_eq(emb__tier_init(&x, path, false, 4096, 0, EMB_TIER_IO_AUTO), EMB_ENOTFOUND);
    cr_assert(strstr(emb_last_error(), path));
    emb__tier_fini(&x);

    make(&x, "short", 4, EMB_TIER_IO_AUTO, 0, true);
    emb__tier_fini(&x);
    snprintf(path, sizeof path, "%s/short", dir);
    cr_assert_eq(truncate(path, EMB_TIER_HEADER + 90 * 48 + 7), 0);
    memset(&x, 0, sizeof x);
    cr_assert_eq(emb__tier_init(&x, path, false, 4096, 0, EMB_TIER_IO_AUTO), EMB_ECORRUPT);
    cr_assert(strstr(emb_last_error(), path) && strstr(emb_last_error(), "rows 90..96"),
              "%s", emb_last_error());
    emb__tier_fini(&x);

    memset(&x, 0, sizeof x); /* a directory cannot be opened for writing */
    x.nrows = 4, x.D = 1, x.dtype = EMB_F32, x.rowbytes = 4;
    cr_assert_eq(emb__tier_init(&x, dir, true, 4096, 0, EMB_TIER_IO_AUTO), EMB_EIO);
    cr_assert(strstr(emb_last_error(), dir));
    emb__tier_fini(&x);
}

/* Writes row @id = @v through the cache (dirty) and releases. */
static void put(Tier *x, int64_t id, float v)
{
    char *row;
    cr_assert_eq(emb__tier_resolve(x, &id, 1, &row, true), 0, "%s", emb_last_error());
    for (int i = 0; i < 12; i++)
        ((float *)row)[i] = v;
    emb__tier_release(x);
}

static float get(Tier *x, int64_t id, int *err)
{
    char *row;
    *err = emb__tier_resolve(x, &id, 1, &row, false);
    const float v = *err ? -1.0f : ((float *)row)[0];
    emb__tier_release(x);
    return v;
}

Test(tier_core, write_back_faults_lose_nothing_and_retry, .init = setup, .fini = teardown)
{
    for (int ki = 0; ki < NKINDS; ki++) {
        if (!kind_ok(kinds[ki]))
            continue;
        Tier x;
        make(&x, (const char *[]){"fu", "fp", "fm"}[ki], 1, kinds[ki], 0, true); /* one row: every miss evicts */
        put(&x, 10, 1.5f);
        fault_set(-ENOSPC, 1, 0, 0);
        int err;
        cr_assert_eq(get(&x, 20, &err), -1.0f);  /* needs row 10's slot: its write fails */
        cr_assert_eq(err, EMB_EIO);
        cr_assert(strstr(emb_last_error(), "rows 10..10") && strstr(emb_last_error(), x.path) &&
                  strstr(emb_last_error(), "No space"), "%s", emb_last_error());
        cr_assert_eq(x.npinned, 0);
        cr_assert_eq(get(&x, 10, &err), 1.5f);   /* still cached, dirty */
        cr_assert_eq(emb__tier_flush(&x), EMB_EIO);
        cr_assert(strstr(emb_last_error(), "rows 10..10"), "%s", emb_last_error());
        fault_set(-EIO, 1, 0, 0);
        cr_assert_eq(emb__tier_flush(&x), EMB_EIO);
        cr_assert(strstr(emb_last_error(), "Input/output error"), "%s", emb_last_error());
        fault_set(0, 1, 1, 0);
        cr_assert_eq(emb__tier_flush(&x), 0);     /* retried */
        cr_assert_eq(get(&x, 20, &err), 0.0f);
        cr_assert_eq(err, 0);
        cr_assert_eq(get(&x, 10, &err), 1.5f);    /* read back from the file */
        /* a failed read: nothing pinned, nothing cached, the message names the row */
        fault_set(-EIO, 0, 1, 30);
        int64_t ids[3] = {5, 31, 40};
        char *rows[3];
        cr_assert_eq(emb__tier_resolve(&x, ids, 3, rows, false), EMB_EIO);
        cr_assert(strstr(emb_last_error(), "reading rows 31..40 (2 failed)"), "%s",
                  emb_last_error());
        cr_assert_eq(x.npinned, 0);
        fault_set(0, 1, 1, 0);
        cr_assert_eq(emb__tier_resolve(&x, ids, 3, rows, false), 0);
        emb__tier_release(&x);
        emb__tier_fini(&x);
    }
}

Test(tier_core, scratch_rows_survive_a_failed_write_back, .init = setup, .fini = teardown)
{
    Tier x;
    make(&x, "sp", 2, EMB_TIER_IO_AUTO, 0, true);
    int64_t ids[6] = {1, 2, 3, 4, 5, 6}; /* 2 cached, 4 in the scratch pad */
    char *rows[6];
    cr_assert_eq(emb__tier_resolve(&x, ids, 6, rows, true), 0);
    for (int k = 0; k < 6; k++)
        ((float *)rows[k])[0] = (float)(k + 1);
    fault_set(-ENOSPC, 1, 0, 0);
    emb__tier_release(&x);               /* scratch write-back fails: rows stay */
    cr_assert_eq(x.sp.n, 4);
    int err;
    for (int k = 0; k < 2; k++) { /* the next resolve writes them first, and says so */
        cr_assert_eq(get(&x, ids[k], &err), -1.0f);
        cr_assert_eq(err, EMB_EIO);
        cr_assert(strstr(emb_last_error(), "writing back rows 3..6") &&
                  strstr(emb_last_error(), "No space"), "%s", emb_last_error());
        cr_assert_eq(x.sp.n, 4);
    }
    fault_set(0, 1, 1, 0);
    for (int k = 0; k < 6; k++)
        cr_assert_eq(get(&x, ids[k], &err), (float)(k + 1));
    cr_assert_eq(emb__tier_flush(&x), 0);
    cr_assert_eq(x.sp.n, 0);
    emb__tier_drop(&x);
    for (int k = 0; k < 6; k++)
        cr_assert_eq(get(&x, ids[k], &err), (float)(k + 1));
    emb__tier_fini(&x);
}

/* Resolves from several threads at once within one operation (the lookup's spans), with a
   prefetch in flight: every row read is the reference's. */
typedef struct Worker {
    Tier *x;
    float (*ref)[12];
    int seed, bad;
} Worker;

static void *worker(void *arg)
{
    Worker *w = arg;
    for (int it = 0; it < 20; it++) {
        int64_t ids[16];
        char *rows[16];
        for (int k = 0; k < 16; k++)
            ids[k] = (int64_t)(ROWS * emb__rng_unit((uint64_t)w->seed, (uint64_t)it, (uint64_t)k));
        if (emb__tier_resolve(w->x, ids, 16, rows, false))
            w->bad++;
        for (int k = 0; k < 16; k++)
            w->bad += memcmp(rows[k], w->ref[ids[k]], 48) != 0;
    }
    return NULL;
}

Test(tier_core, threads_resolve_at_once, .init = setup, .fini = teardown)
{
    for (int ki = 0; ki < NKINDS; ki++) {
        if (!kind_ok(kinds[ki]))
            continue;
        Tier x;
        make(&x, "th", 8, kinds[ki], 0, true);
        static float ref[ROWS][12];
        for (int64_t r = 0; r < ROWS; r++)
            for (int i = 0; i < 12; i++)
                ref[r][i] = (float)(r * 12 + i);
        cr_assert_eq(emb__tier_file_rw(&x, -1, 0, ROWS, ref, true), 0);
        int64_t pre[ROWS];
        for (int64_t r = 0; r < ROWS; r++)
            pre[r] = ROWS - 1 - r;
        emb__tier_prefetch(&x, pre, ROWS);
        pthread_t th[4];
        Worker w[4];
        for (int i = 0; i < 4; i++) {
            w[i] = (Worker){&x, ref, i, 0};
            cr_assert_eq(pthread_create(&th[i], NULL, worker, &w[i]), 0);
        }
        for (int i = 0; i < 4; i++) {
            pthread_join(th[i], NULL);
            cr_assert_eq(w[i].bad, 0);
        }
        emb__tier_release(&x);
        emb__tier_fini(&x);
    }
}
