/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_io_impl.h — the state of a tiered table's I/O engine (struct EmbTierIo), shared by
 * the engine (tier_io.c) and its mapped reads (tier_io_map.c) only.
 */
#ifndef EMB_TIER_IO_IMPL_H
#define EMB_TIER_IO_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "tables/tiered/tier_io.h"
#if EMB_HAVE_LIBURING
#include <liburing.h>
#endif

struct EmbTierIo {
    EmbTierIoKind kind;
    int fd;
    int64_t inflight; /* io_uring: submitted, not completed */
#if EMB_HAVE_LIBURING
    struct io_uring ring;
#endif
    int64_t pinflight; /* the pool's requests submitted, not completed (under its lock) */
    bool pooled;       /* a user of the process's pool (tier_pool.c) */
    /* the mapped engine (EMB_TIER_IO_MAP): reads copied from map; a background read waits
       in def (its pages populated by pop) until someone waits for it or pending() */
    bool guarded;    /* a user of the SIGBUS guard (tier_map.c) */
    bool unmappable; /* the file cannot be mapped: reads go through pread */
    EmbTierMap map;
    int64_t hot;         /* the mapping's bytes [0, hot) populated at once (map_hot) */
    int64_t popinflight; /* populates submitted to the pool, not completed */
    EmbTierReq *pop;
    int64_t npop, pop_cap;
    EmbTierReq **def;
    int64_t ndef, def_cap;
};

/* The mapped engine's submit (@bg: background reads deferred, populated and copied on the
   pool) and the copy of its deferred reads, populated by now (tier_io_map.c). */
void emb__tier_iomap_submit(EmbTierIo *io, EmbTierReq *reqs, int64_t n, bool bg);
void emb__tier_iomap_drain(EmbTierIo *io);

#endif
