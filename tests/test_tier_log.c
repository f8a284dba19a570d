/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_tier_log.c — a tiered table's write-back log (src/tables/tiered/tier_log.c,
 * tier_manifest.c): evicted rows appended past the homes and found there again, after a
 * flush and a reopen; compaction keeping the log bounded while the same rows are rewritten;
 * the manifest checked (corrupt: EMB_ECORRUPT naming it; another file's: ignored); a log
 * write that fails keeps the rows dirty and the call retryable; an older file (uid 0) given
 * a uid at its first flush, its earlier manifest standing until then, even across a crash.
 * Internal (tier_fault.h).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "embtables/store.h"
#include "embtables/tiered.h"
#include "embtables/update.h"
#include "tables/tiered/tier.h" /* EMB_TIER_HEADER */
#include "tier_fault.h"

enum { R = 4000, D = 16, CACHE = 64 }; /* records of 64 bytes; a cache of 64 of them */

/* The live fraction the passes' churn keeps the file's log at, at least: compaction's
   threshold is 2/3 a segment, but the head, the victims under way and the segments free at
   the moment (compaction starts only when none is) count too: 0.47 measured. */
#define LIVE_MIN 0.4

#define HOME_END (EMB_TIER_HEADER + (int64_t)R * D * 4)

static void path_of(char *path, const char *name)
{
    snprintf(path, 128, "%s/%s", dir, name);
}

/* The table's file @name and its manifest (@man: 160 bytes). */
static void paths_of(char *path, char *man, const char *name)
{
    path_of(path, name);
    snprintf(man, 160, "%s.manifest", path);
}

static EmbTable *make(const char *path, float v)
{
    EmbTable *t = NULL;
    const EmbTieredOptions o = {.cache_bytes = CACHE * D * 4};
    cr_assert_eq(emb_table_tiered_create(&t, path, R, D, EMB_F32, &o), 0, "%s",
                 emb_last_error());
    const EmbInitializer in = {EMB_INIT_CONSTANT, v, 0, 0};
    cr_assert_eq(emb_table_initialize(t, &in), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_tiered_flush(t), 0, "%s", emb_last_error());
    return t;
}

static EmbTable *reopen(const char *path)
{
    EmbTable *t = NULL;
    const EmbTieredOptions o = {.cache_bytes = CACHE * D * 4};
    cr_assert_eq(emb_table_tiered_open(&t, path, &o), 0, "%s", emb_last_error());
    return t;
}

/* Every row r set to r + @v, in batches of 100 rows (each evicts the last's dirty rows):
   the code of the first update that fails, or 0. */
static int write_all(EmbTable *t, float v)
{
    static float rows[100 * D];
    int64_t ids[100];
    for (int64_t r0 = 0; r0 < R; r0 += 100) {
        for (int k = 0; k < 100; k++) {
            ids[k] = r0 + k;
            for (int j = 0; j < D; j++)
                rows[k * D + j] = (float)(r0 + k) + v;
        }
        const int r = emb_table_scatter_update(t, ids, 100, rows, D);
        if (r)
            return r;
    }
    return 0;
}

/* Every row r of @t is r x @slope + @v. */
static void check_rows(const EmbTable *t, float slope, float v, const char *what)
{
    float *rows = malloc((size_t)R * D * sizeof *rows);
    cr_assert_eq(emb_table_read(t, rows, D), 0, "%s", emb_last_error());
    for (int64_t k = 0; k < (int64_t)R * D; k++)
        cr_assert_eq(rows[k], (float)(k / D) * slope + v, "%s: element %lld is %g", what,
                     (long long)k, (double)rows[k]);
    free(rows);
}

/* Every row r of @t is r + @v (write_all's). */
static void check_all(const EmbTable *t, float v, const char *what)
{
    check_rows(t, 1.0f, v, what);
}

static int64_t size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

Test(tier_log, evicted_rows_are_appended_and_found_after_a_reopen, .init = setup,
     .fini = teardown)
{
    char path[128], man[160];
    paths_of(path, man, "t");
    EmbTable *t = make(path, 0.0f);
    cr_assert_eq(size_of(path), HOME_END, "a fresh file has no log");
    cr_assert_eq(write_all(t, 0.5f), 0, "%s", emb_last_error());
    cr_assert_gt(size_of(path), HOME_END, "the evicted rows were not appended");
    check_all(t, 0.5f, "after the writes");
    cr_assert_eq(emb_table_tiered_flush(t), 0, "%s", emb_last_error());
    cr_assert_gt(size_of(man), 0, "a flush of a log writes its manifest");
    emb_table_destroy(&t);
    t = reopen(path);
    check_all(t, 0.5f, "reopened");
    cr_assert_eq(write_all(t, 1.5f), 0, "%s", emb_last_error());
    emb_table_destroy(&t);
    t = reopen(path);
    check_all(t, 1.5f, "reopened twice");
    emb_table_destroy(&t);
}

/* Pass m (0..39) sets the rows r with r % 40 >= m to r + m: row r is last written by pass
   r % 40, so every pass leaves a few rows live in each segment it fills for ever. Without
   compaction the log would hold about 20 homes' worth of records. */
static void write_pass(EmbTable *t, int m)
{
    static float rows[100 * D];
    int64_t ids[100];
    int n = 0;
    for (int64_t r = 0; r < R; r++) {
        if (r % 40 < m)
            continue;
        ids[n] = r;
        for (int j = 0; j < D; j++)
            rows[n * D + j] = (float)(r + m);
        if (++n == 100 || r == R - 1) {
            cr_assert_eq(emb_table_scatter_update(t, ids, n, rows, D), 0, "%s",
                         emb_last_error());
            n = 0;
        }
    }
}

static void check_passes(const EmbTable *t, const char *what)
{
    float *rows = malloc((size_t)R * D * sizeof *rows);
    cr_assert_eq(emb_table_read(t, rows, D), 0, "%s", emb_last_error());
    for (int64_t k = 0; k < (int64_t)R * D; k++)
        cr_assert_eq(rows[k], (float)(k / D + (k / D) % 40), "%s: element %lld is %g", what,
                     (long long)k, (double)rows[k]);
    free(rows);
}

Test(tier_log, compaction_bounds_the_log, .init = setup, .fini = teardown)
{
    char path[128];
    path_of(path, "c");
    EmbTable *t = make(path, 0.0f);
    for (int m = 0; m < 40; m++)
        write_pass(t, m);
    check_passes(t, "after 40 passes");
    const int64_t log = size_of(path) - HOME_END;
    cr_assert_lt(log, 3 * (HOME_END - EMB_TIER_HEADER), "a log of %lld bytes", (long long)log);
    cr_assert_eq(emb_table_tiered_flush(t), 0, "%s", emb_last_error());
    emb_table_destroy(&t);
    t = reopen(path);
    check_passes(t, "reopened after compactions");
    emb_table_destroy(&t);
}

/* The log's counters: evictions append (a record's bytes each, segments begun); the
   passes' churn runs compactions that rewrite records and keep the log mostly live. */
Test(tier_log, the_log_counters_move, .init = setup, .fini = teardown)
{
    char path[128];
    path_of(path, "k");
    EmbTable *t = make(path, 0.0f);
    EmbTieredStats st;
    cr_assert_eq(emb_table_tiered_stats(t, &st), 0);
    cr_assert_eq(st.log_bytes_appended, 0, "a fresh table has appended nothing");
    cr_assert_eq(st.log_live_fraction, 1.0);
    cr_assert_eq(write_all(t, 0.5f), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_tiered_stats(t, &st), 0);
    cr_assert_gt(st.log_bytes_appended, 0, "evictions appended nothing");
    cr_assert_eq(st.log_bytes_appended % st.record_bytes, 0, "whole records are appended");
    cr_assert_geq(st.log_bytes_appended, st.rows_written * st.record_bytes);
    cr_assert_gt(st.log_segments, 0);
    for (int m = 0; m < 40; m++)
        write_pass(t, m);
    cr_assert_eq(emb_table_tiered_stats(t, &st), 0);
    cr_log_info("appended %lld bytes, %lld segments, %lld compactions moving %lld bytes, "
                "live %.3f, %lld ns", (long long)st.log_bytes_appended,
                (long long)st.log_segments, (long long)st.log_compactions,
                (long long)st.log_bytes_compacted, st.log_live_fraction,
                (long long)st.log_compact_ns);
    cr_assert_gt(st.log_compactions, 0, "no compaction ran");
    cr_assert_gt(st.log_bytes_compacted, 0, "compaction moved nothing");
    cr_assert_geq(st.log_bytes_appended, st.rows_written * st.record_bytes + st.log_bytes_compacted);
    cr_assert_geq(st.log_live_fraction, LIVE_MIN, "the log is %.3f live", st.log_live_fraction);
    cr_assert_leq(st.log_live_fraction, 1.0);
    emb_table_destroy(&t);
}

/* A manifest changed on disk is EMB_ECORRUPT naming it, and so is one cut short. */
Test(tier_log, a_corrupt_manifest_is_refused, .init = setup, .fini = teardown)
{
    char path[128], man[160];
    paths_of(path, man, "m");
    EmbTable *t = make(path, 0.0f);
    cr_assert_eq(write_all(t, 2.0f), 0, "%s", emb_last_error());
    emb_table_destroy(&t); /* flushes */
    FILE *f = fopen(man, "r+b");
    cr_assert(f);
    cr_assert_eq(fseek(f, 200, SEEK_SET), 0);
    const int c = fgetc(f);
    cr_assert_eq(fseek(f, 200, SEEK_SET), 0);
    fputc(c ^ 1, f);
    fclose(f);
    const EmbTieredOptions o = {.cache_bytes = CACHE * D * 4};
    cr_assert_eq(emb_table_tiered_open(&t, path, &o), EMB_ECORRUPT);
    cr_assert(strstr(emb_last_error(), man), "%s", emb_last_error());
    cr_assert_null(t);
    cr_assert_eq(truncate(man, 100), 0);
    cr_assert_eq(emb_table_tiered_open(&t, path, &o), EMB_ECORRUPT);
    cr_assert(strstr(emb_last_error(), man), "%s", emb_last_error());
}

/* A table created anew over a path keeps nothing of the old file's manifest. */
Test(tier_log, the_manifest_of_a_replaced_file_is_ignored, .init = setup, .fini = teardown)
{
    char path[128];
    path_of(path, "s");
    EmbTable *t = make(path, 0.0f);
    cr_assert_eq(write_all(t, 3.0f), 0, "%s", emb_last_error());
    emb_table_destroy(&t);
    t = make(path, 7.0f); /* no row of the new file is in its log: the manifest stays */
    emb_table_destroy(&t);
    t = reopen(path);
    check_rows(t, 0.0f, 7.0f, "reopened");
    emb_table_destroy(&t);
}

/* A log write that fails (a full disk) fails the update with EMB_EIO; the dirty rows stay
   cached and the retried updates end with the bits of a run without faults. */
Test(tier_log, a_failed_log_write_loses_nothing, .init = setup, .fini = teardown)
{
    char path[128];
    path_of(path, "f");
    EmbTable *t = make(path, 0.0f);
    cr_assert_eq(write_all(t, 1.0f), 0, "%s", emb_last_error());
    fault_set(-ENOSPC, 1, 0, 0);
    cr_assert_eq(write_all(t, 2.0f), EMB_EIO);
    cr_assert(strstr(emb_last_error(), path), "%s", emb_last_error());
    EmbTieredStats st;
    cr_assert_eq(emb_table_tiered_stats(t, &st), 0);
    cr_assert_gt(st.dirty_rows, 0);
    cr_assert_eq(emb_table_tiered_flush(t), EMB_EIO);
    fault_set(0, 1, 1, 0);
    cr_assert_eq(write_all(t, 2.0f), 0, "%s", emb_last_error());
    check_all(t, 2.0f, "after the retry");
    cr_assert_eq(emb_table_tiered_flush(t), 0, "%s", emb_last_error());
    emb_table_destroy(&t);
    t = reopen(path);
    check_all(t, 2.0f, "reopened");
    emb_table_destroy(&t);
}

/* The uid fields: the file's header (TierHeader: magic 8, version 4, dtype, D and state_room
   12, nrows and recbytes 16; then uid and the uid0 flag) and the manifest's (ManHeader:
   magic 8, version and zero 8). */
#define FILE_UID 40
#define FILE_UID0 48
#define MAN_UID 16

static uint64_t u64_at(const char *path, off_t at)
{
    uint64_t v = 0;
    const int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0 && pread(fd, &v, sizeof v, at) == (ssize_t)sizeof v, "%s", path);
    close(fd);
    return v;
}

static void u64_put(const char *path, off_t at, uint64_t v)
{
    const int fd = open(path, O_WRONLY);
    cr_assert(fd >= 0 && pwrite(fd, &v, sizeof v, at) == (ssize_t)sizeof v, "%s", path);
    close(fd);
}

/* An older file (uid 0 in its header, no manifest) gets a uid of its own at the first flush
   that writes a manifest, and the manifest names it: no uid-0 manifest is ever written. */
Test(tier_log, an_older_file_gets_a_uid_at_its_first_flush, .init = setup, .fini = teardown)
{
    char path[128], man[160];
    paths_of(path, man, "o");
    EmbTable *t = make(path, 0.0f);
    emb_table_destroy(&t);
    cr_assert_neq(access(man, F_OK), 0, "no log yet, no manifest");
    u64_put(path, FILE_UID, 0);
    t = reopen(path);
    cr_assert_eq(write_all(t, 1.0f), 0, "%s", emb_last_error());
    cr_assert_eq(emb_table_tiered_flush(t), 0, "%s", emb_last_error());
    const uint64_t uid = u64_at(path, FILE_UID);
    cr_assert_neq(uid, 0, "the first flush gave the file no uid");
    cr_assert_eq(u64_at(man, MAN_UID), uid, "the manifest does not name the file");
    cr_assert_eq(u64_at(path, FILE_UID0) & 0xffffffffu, 0, "the uid0 flag is left set");
    emb_table_destroy(&t);
    t = reopen(path);
    check_all(t, 1.0f, "reopened");
    emb_table_destroy(&t);
}

static int syncs_ok, nsync; /* syncs from the (syncs_ok + 1)th on fail */

static int late_sync_fault(const EmbTierReq *r)
{
    return r->tag == EMB_TIER_SYNC_TAG && ++nsync > syncs_ok ? -EIO : 0;
}

/* An older file whose manifest has uid 0 (the defect's: written by an earlier flush): the
   manifest stands until the first flush's new one is in place. A crash after the header got
   its uid and before the manifest (here: the manifest's sync fails, then the table is closed
   with every sync failing) finds the rows of the earlier flush, not their homes'. */
Test(tier_log, an_older_manifest_stands_until_the_first_flush_replaces_it, .init = setup,
     .fini = teardown)
{
    char path[128], man[160];
    paths_of(path, man, "u");
    EmbTable *t = make(path, 0.0f);
    cr_assert_eq(write_all(t, 1.0f), 0, "%s", emb_last_error());
    emb_table_destroy(&t); /* flushed: rows in the log, a manifest */
    u64_put(path, FILE_UID, 0); /* as the defect left an older file */
    cr_assert_eq(emb__tier_manifest_forge_uid(man, R, 0), 0);
    t = reopen(path);
    check_all(t, 1.0f, "the older manifest applies");
    cr_assert_eq(write_all(t, 2.0f), 0, "%s", emb_last_error());
    nsync = 0, syncs_ok = 2; /* the rows' sync, the header's; not the manifest's */
    emb__tier_io_set_fault(late_sync_fault);
    cr_assert_eq(emb_table_tiered_flush(t), EMB_EIO);
    cr_assert(strstr(emb_last_error(), man), "%s", emb_last_error());
    cr_assert_neq(u64_at(path, FILE_UID), 0, "the header has no uid before the manifest");
    emb_table_destroy(&t); /* its flush fails too: the crash's state */
    fault_set(0, 1, 1, 0);
    cr_assert_eq(u64_at(man, MAN_UID), 0, "the older manifest was replaced");
    t = reopen(path);
    check_all(t, 1.0f, "after the crash");
    cr_assert_eq(write_all(t, 3.0f), 0, "%s", emb_last_error());
    emb_table_destroy(&t);
    cr_assert_eq(u64_at(man, MAN_UID), u64_at(path, FILE_UID));
    cr_assert_eq(u64_at(path, FILE_UID0) & 0xffffffffu, 0, "the uid0 flag is left set");
    t = reopen(path);
    check_all(t, 3.0f, "reopened");
    emb_table_destroy(&t);
}

/* A flush of a cache full of dirty rows writes them in pieces of 8 MiB (tier_writeback.c's
   FLUSH_PIECE, tier_log.c's RUN_STAGE): its staging buffer and requests, kept for the
   table's life, are not a second copy of the cache nor 56 bytes a slot. */
Test(tier_log, a_flush_stages_a_full_cache_in_pieces, .init = setup, .fini = teardown)
{
    enum { NR = 300000, DD = 16, BATCH = 10000 };
    Tier x;
    memset(&x, 0, sizeof x);
    char path[128];
    path_of(path, "p");
    snprintf(x.label, sizeof x.label, "tiered table \"p\"");
    x.nrows = NR, x.D = DD, x.dtype = EMB_F32, x.rowbytes = DD * 4;
    int r = emb__tier_init(&x, path, true, (int64_t)16 << 20, 0, EMB_TIER_IO_PREAD);
    r = r ? r : emb__tier_commit(&x);
    cr_assert_eq(r, 0, "%s", emb_last_error());
    static int64_t ids[BATCH];
    static char *rows[BATCH];
    for (int64_t b = 0; b < 15; b++) { /* 150 000 dirty rows, 9.6 MB of records */
        for (int k = 0; k < BATCH; k++)
            ids[k] = b * BATCH + k;
        cr_assert_eq(emb__tier_resolve(&x, ids, BATCH, rows, true), 0, "%s", emb_last_error());
        for (int k = 0; k < BATCH; k++)
            ((float *)rows[k])[0] = (float)ids[k];
        emb__tier_release(&x);
    }
    cr_assert_eq(emb__tier_flush(&x), 0, "%s", emb_last_error());
    const size_t staged = x.lg.buf_cap[TIER_LOG_SYNC];
    const int64_t reqs = x.rq_cap;
    emb__tier_fini(&x);
    cr_assert_leq(staged, (size_t)8 << 20, "a flush staged %zu bytes at once", staged);
    cr_assert_leq(reqs, (8 << 20) / (DD * 4), "a flush made room for %lld requests at once",
                  (long long)reqs);
}
