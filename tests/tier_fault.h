/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_fault.h — the I/O-fault hook of the tiered-table tests (as alloc_fail.h is for
 * allocations): with fault_err set (a negative errno), the requests that match (reads,
 * writes or both; rows from fault_row_lo on) complete with it and do no I/O, on either
 * engine; a sync (EMB_TIER_SYNC_TAG) fails only with fault_sync_set. Set it only while no
 * I/O is in flight. Also each test's scratch directory
 * (setup / teardown). Include once.
 */
#ifndef EMB_TEST_TIER_FAULT_H
#define EMB_TEST_TIER_FAULT_H

#include <errno.h>

#include "tables/tiered/tier_io.h"
#include "test_files.h"

static int fault_err;           /* 0: no fault */
static int fault_writes = 1;    /* writes fail */
static int fault_reads = 1;     /* reads fail */
static int64_t fault_row_lo;    /* from this row (the request's tag) on */
static int fault_sync;          /* syncs fail with this (0: they do not) */

static int tier_fault(const EmbTierReq *r)
{
    if (r->tag == EMB_TIER_SYNC_TAG)
        return fault_sync;
    if (!fault_err || r->tag < fault_row_lo)
        return 0;
    return (r->write ? fault_writes : fault_reads) ? fault_err : 0;
}

static void fault_set(int err, int writes, int reads, int64_t row_lo)
{
    fault_err = err, fault_writes = writes, fault_reads = reads, fault_row_lo = row_lo;
    fault_sync = 0;
    emb__tier_io_set_fault(err ? tier_fault : NULL);
}

/* Syncs fail with @err (0: none), nothing else. */
static inline void fault_sync_set(int err)
{
    fault_set(0, 1, 1, 0);
    fault_sync = err;
    emb__tier_io_set_fault(err ? tier_fault : NULL);
}

/* The suites' scratch directory, made fresh for each test; the fault reset after it. */
static char dir[64];

static void setup(void)
{
    tmpdir(dir);
}

static void teardown(void)
{
    fault_set(0, 1, 1, 0);
    rmdir_all(dir);
}

#endif
