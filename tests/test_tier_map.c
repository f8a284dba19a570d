/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tier_map.c — the mapped read engine of tiered tables (tier_map.c, tier_io.c):
 * background reads populated and copied, a file that grows under the mapping, and a file
 * truncated by someone else under a running table: EMB_EIO naming the file and rows, never a
 * crash (the SIGBUS guard), and the guard chaining to the previous SIGBUS handler and
 * restoring it. Internal (the static library).
 *
 * The tests that take a SIGBUS restore the process's handler before asserting (the nofork
 * runner of the TSan build runs every suite in one process).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "tables/tiered/tier.h"
#include "tier_fault.h"

enum { N = 3000, L = 100 }; /* records of the engine's tests: 73 pages */

/* A file of N records of L bytes, record i all i % 251, and a mapped engine on it. */
static int fill(const char *name, EmbTierIo **io)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    const int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    cr_assert(fd >= 0);
    static char rec[L];
    for (int i = 0; i < N; i++) {
        memset(rec, i % 251, L);
        cr_assert_eq(pwrite(fd, rec, L, (off_t)i * L), L);
    }
    cr_assert_eq(emb__tier_io_create(io, fd, EMB_TIER_IO_MAP), 0, "%s", emb_last_error());
    cr_assert_str_eq(emb__tier_io_name(*io), "mmap");
    return fd;
}

static bool is_rec(const char *p, int i)
{
    for (int k = 0; k < L; k++)
        if (p[k] != (char)(i % 251))
            return false;
    return true;
}

Test(tier_map, background_reads_populate_then_copy_and_follow_a_growing_file, .init = setup,
     .fini = teardown)
{
    EmbTierIo *io = NULL;
    const int fd = fill("grow", &io);
    static char dst[N][L];
    static EmbTierReq q[N];
    for (int i = 0; i < N; i++) /* every third record, ascending (a prefetch's order) */
        q[i] = (EmbTierReq){.buf = dst[i], .offset = (int64_t)(3 * i % N) * L, .len = L,
                            .tag = 3 * i % N};
    emb__tier_io_submit_background(io, q, N / 3);
    emb__tier_io_submit(io, q + N / 3, N / 3); /* copied at once */
    for (int i = N / 3; i < 2 * N / 3; i++)
        cr_assert(q[i].complete && !q[i].res && is_rec(dst[i], (int)q[i].tag), "read %d", i);
    emb__tier_io_wait_one(io, &q[5]); /* the step's copy of every background read */
    emb__tier_io_wait(io);
    cr_assert_eq(emb__tier_io_pending(io), 0);
    for (int i = 0; i < N / 3; i++)
        cr_assert(q[i].complete && !q[i].res && is_rec(dst[i], (int)q[i].tag), "read %d", i);
    /* past the end: -ENODATA, as pread; then the file grows (a log's append) and is read */
    EmbTierReq s = {.buf = dst[0], .offset = (int64_t)N * L + 5000, .len = L, .tag = 1};
    emb__tier_io_run(io, &s, 1);
    cr_assert_eq(s.res, -ENODATA);
    static char big[64 * 1024];
    memset(big, 7, sizeof big);
    cr_assert_eq(pwrite(fd, big, sizeof big, (off_t)N * L), (ssize_t)sizeof big);
    emb__tier_io_submit_background(io, &s, 1);
    emb__tier_io_wait(io);
    cr_assert_eq(s.res, 0);
    cr_assert_eq(dst[0][0], 7);
    /* a write through the page cache is seen by the next mapped read */
    EmbTierReq w = {.buf = big, .offset = 10 * L, .len = L, .write = 1, .tag = 10};
    emb__tier_io_run(io, &w, 1);
    EmbTierReq r = {.buf = dst[1], .offset = 10 * L, .len = L, .tag = 10};
    emb__tier_io_run(io, &r, 1);
    cr_assert(!w.res && !r.res && dst[1][0] == 7 && dst[1][L - 1] == 7);
    /* the fault hook sees the mapped reads too */
    fault_set(-EIO, 0, 1, 0);
    emb__tier_io_run(io, &r, 1);
    cr_assert_eq(r.res, -EIO);
    fault_set(0, 1, 1, 0);
    emb__tier_io_destroy(&io);
    close(fd);
}

/* Reads of every record after the file was cut to @keep bytes: the ones whose page lies
   past the cut fail with -EIO (foreground: a SIGBUS caught; background: the populate's
   EFAULT), the ones past the cut inside its last page with -ENODATA (as pread: the mapping
   reads zeros there), the others read. The process's SIGBUS handler is as it was when the
   engine is gone. */
static void cut_reads(bool bg, off_t keep)
{
    struct sigaction before, after;
    sigaction(SIGBUS, NULL, &before);
    EmbTierIo *io = NULL;
    const int fd = fill(bg ? "cutb" : "cutf", &io);
    static char dst[N][L];
    static EmbTierReq q[N];
    for (int i = 0; i < N; i++)
        q[i] = (EmbTierReq){.buf = dst[i], .offset = (int64_t)i * L, .len = L, .tag = i};
    emb__tier_io_run(io, q, N); /* mapped, every page touched */
    cr_assert_eq(ftruncate(fd, keep), 0); /* someone else cuts the file */
    if (bg)
        emb__tier_io_submit_background(io, q, N);
    else
        emb__tier_io_submit(io, q, N);
    emb__tier_io_wait(io);
    const int64_t page_end = (keep + 4095) / 4096 * 4096;
    int ok = 0, eio = 0, short_ = 0, other = 0;
    for (int i = 0; i < N; i++) {
        const int64_t end = q[i].offset + L;
        if (end <= keep && !q[i].res && is_rec(dst[i], i))
            ok++;
        else if (end > page_end && q[i].res == -EIO)
            eio++;
        else if (end > keep && end <= page_end && q[i].res == -ENODATA)
            short_++;
        else
            other++;
    }
    emb__tier_io_destroy(&io);
    close(fd);
    sigaction(SIGBUS, NULL, &after);
    const int in_page = (int)(page_end / L - keep / L); /* records ending in (keep, page_end] */
    cr_assert(ok == keep / L && eio == N - ok - in_page && short_ == in_page && !other,
              "ok %d, eio %d, past the end in its last page %d (of %d), other %d", ok, eio,
              short_, in_page, other);
    cr_assert(after.sa_handler == before.sa_handler,
              "the SIGBUS handler was not restored");
}

Test(tier_map, a_file_cut_under_the_engine_fails_reads_with_eio, .init = setup,
     .fini = teardown)
{
    cut_reads(false, 8192);
}

Test(tier_map, a_file_cut_under_a_prefetch_fails_its_reads_with_eio, .init = setup,
     .fini = teardown)
{
    cut_reads(true, 8192);
}

/* Cut inside a page: the records past the cut in its last page (zeros in the mapping) fail
   as a pread's would, in the foreground and in the background. */
Test(tier_map, a_file_cut_inside_a_page_fails_the_reads_past_its_end, .init = setup,
     .fini = teardown)
{
    cut_reads(false, 8192 + 250);
    cut_reads(true, 3 * 4096 + 1010);
}

/* A file cut to nothing while the pool's threads copy a prefetch's records from the populated
   mapping: each read either copied its record before the cut or fails with -EIO (a SIGBUS in
   a pool thread, caught); the process lives and its SIGBUS handler is as it was. */
Test(tier_map, a_file_cut_while_the_pool_copies_fails_reads_with_eio, .init = setup,
     .fini = teardown)
{
    struct sigaction before, after;
    sigaction(SIGBUS, NULL, &before);
    EmbTierIo *io = NULL;
    const int fd = fill("cutp", &io);
    static char dst[N][L];
    static EmbTierReq q[N];
    for (int i = 0; i < N; i++)
        q[i] = (EmbTierReq){.buf = dst[i], .offset = (int64_t)i * L, .len = L, .tag = i};
    emb__tier_io_run(io, q, 1); /* mapped and populated */
    int ok = 0, eio = 0, other = 0;
    for (int pass = 0; pass < 2; pass++) {
        emb__tier_io_submit_background(io, q, N);
        cr_assert_eq(ftruncate(fd, 0), 0); /* someone else cuts the file meanwhile */
        emb__tier_io_wait(io);
        for (int i = 0; i < N; i++) {
            if (!q[i].res && is_rec(dst[i], i))
                ok++;
            else if (q[i].res == -EIO || q[i].res == -ENODATA)
                eio++;
            else
                other++;
        }
        memset(dst, 0xff, sizeof dst);
    }
    emb__tier_io_destroy(&io);
    close(fd);
    sigaction(SIGBUS, NULL, &after);
    cr_assert(!other && ok + eio == 2 * N, "ok %d, eio %d, other %d", ok, eio, other);
    cr_assert_geq(eio, N, "ok %d, eio %d: the second pass reads a file of nothing", ok, eio);
    cr_assert(after.sa_handler == before.sa_handler, "the SIGBUS handler was not restored");
}

/* The fault hook cuts the file at its first call: on the pool's thread, after the batch was
   submitted (and checked against the file's size) and before its first copy. */
enum { CUT = 2 * 4096 + 1000 }; /* inside the mapping's third page: records 91.. past it */
static int cut_fd = -1;
static atomic_int cut_done;

static int cut_once(const EmbTierReq *r)
{
    (void)r;
    if (!atomic_exchange(&cut_done, 1) && ftruncate(cut_fd, CUT))
        return -EIO;
    return 0;
}

Test(tier_map, a_file_cut_inside_a_page_after_the_submit_never_reads_zeros, .init = setup,
     .fini = teardown)
{
    struct sigaction before, after;
    sigaction(SIGBUS, NULL, &before);
    EmbTierIo *io = NULL;
    cut_fd = fill("cutin", &io);
    enum { LO = 80, HI = 120 };
    static char dst[HI - LO][L];
    static EmbTierReq q[HI - LO];
    for (int i = LO; i < HI; i++)
        q[i - LO] = (EmbTierReq){.buf = dst[i - LO], .offset = (int64_t)i * L, .len = L, .tag = i};
    emb__tier_io_run(io, q, 1); /* mapped and populated */
    atomic_store(&cut_done, 0);
    emb__tier_io_set_fault(cut_once);
    emb__tier_io_submit_background(io, q, HI - LO);
    emb__tier_io_wait(io);
    emb__tier_io_set_fault(NULL);
    emb__tier_io_destroy(&io);
    close(cut_fd);
    sigaction(SIGBUS, NULL, &after);
    cr_assert(after.sa_handler == before.sa_handler, "the SIGBUS handler was not restored");
    cr_assert(atomic_load(&cut_done), "the file was not cut");
    for (int i = LO; i < HI; i++) {
        const EmbTierReq *r = &q[i - LO];
        if (r->offset + L <= CUT)
            cr_assert(!r->res && is_rec(dst[i - LO], i), "record %d before the cut: %d", i,
                      r->res);
        else
            cr_assert(r->res == -ENODATA || r->res == -EIO,
                      "record %d past the cut read as a row (res %d): zeros taken for data", i,
                      r->res);
    }
}

enum { ROWS = 4096, D = 12 };

static float get(Tier *x, int64_t id, int *err)
{
    char *row;
    *err = emb__tier_resolve(x, &id, 1, &row, false);
    const float v = *err ? -1.0f : ((float *)row)[0];
    emb__tier_release(x);
    return v;
}

Test(tier_map, a_table_whose_file_is_cut_fails_with_eio_naming_file_and_rows, .init = setup,
     .fini = teardown)
{
    struct sigaction before, after;
    sigaction(SIGBUS, NULL, &before);
    Tier x;
    memset(&x, 0, sizeof x);
    char path[128];
    snprintf(path, sizeof path, "%s/t", dir);
    snprintf(x.label, sizeof x.label, "tiered table \"t\"");
    x.nrows = ROWS, x.D = D, x.dtype = EMB_F32, x.rowbytes = D * 4;
    int r = emb__tier_init(&x, path, true, 8 * D * 4, 0, EMB_TIER_IO_MAP);
    r = r ? r : emb__tier_commit(&x);
    cr_assert_eq(r, 0, "%s", emb_last_error());
    int err[6];
    float v[6];
    v[0] = get(&x, 3000, &err[0]); /* through the mapping */
    cr_assert_eq(truncate(x.path, 4096), 0);
    v[1] = get(&x, 3500, &err[1]);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", emb_last_error());
    const int64_t ids[3] = {3601, 3700, 3800};
    emb__tier_prefetch(&x, ids, 3); /* populates fail: a hint, never an error */
    char *rows[3];
    err[2] = emb__tier_resolve(&x, ids, 3, rows, false);
    emb__tier_release(&x);
    cr_assert_eq(truncate(x.path, (off_t)ROWS * D * 4 + 65536), 0); /* and back */
    v[3] = get(&x, 3500, &err[3]);
    emb__tier_fini(&x);
    sigaction(SIGBUS, NULL, &after);
    cr_assert(!err[0] && v[0] == 0.0f);
    cr_assert_eq(err[1], EMB_EIO);
    cr_assert(strstr(msg, "rows 3500..3500") && strstr(msg, path), "%s", msg);
    cr_assert_eq(err[2], EMB_EIO);
    cr_assert(!err[3] && v[3] == 0.0f, "%d", err[3]);
    cr_assert(after.sa_handler == before.sa_handler, "the SIGBUS handler was not restored");
}

static volatile sig_atomic_t prev_hits;

static void prev_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si, (void)uc;
    prev_hits++;
}

Test(tier_map, the_guard_chains_to_the_previous_handler_and_restores_it, .init = setup,
     .fini = teardown)
{
    struct sigaction mine, saved, during, after;
    memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = prev_handler;
    mine.sa_flags = SA_SIGINFO;
    sigemptyset(&mine.sa_mask);
    sigaction(SIGBUS, &mine, &saved);
    prev_hits = 0;
    const int r0 = emb__tier_guard_acquire();
    const int r1 = emb__tier_guard_acquire(); /* counted */
    emb__tier_guard_release();
    sigaction(SIGBUS, NULL, &during);
    raise(SIGBUS); /* outside a guarded copy: the previous handler's */
    const int hits = prev_hits;
    emb__tier_guard_release();
    sigaction(SIGBUS, &saved, &after); /* the process's handler back, before asserting */
    cr_assert(!r0 && !r1);
    cr_assert(during.sa_sigaction != prev_handler, "the guard is not installed");
    cr_assert_eq(hits, 1);
    cr_assert(after.sa_sigaction == prev_handler, "the guard did not restore the handler");
}
