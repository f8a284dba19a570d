/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist_impl.h — the sharded ensemble's private state, the message buffers and the
 * agreement step (dist_comm.c) shared by dist.c (setup), dist_forward.c and dist_backward.c.
 *
 * Messages are arrays of 32-bit words (MPI_UINT32_T): int64 values take two words, f32
 * one, so that one all-to-all carries ids, bag lengths, weights and gradient rows. Raw
 * table rows (row-wise gathers) go as bytes, one all-to-all per table, so that the rows a
 * rank receives from owners 0, 1, ... form one contiguous table it can wrap.
 */
#ifndef EMBTABLES_DIST_IMPL_H
#define EMBTABLES_DIST_IMPL_H

#include <stdint.h>

#include "embtables/dist.h"
#include "embtables/embtables.h"

/* A growable array of 32-bit words (one per destination rank while packing). */
typedef struct Words {
    uint32_t *w;
    int64_t n, cap;
} Words;

int dist_words_reserve(Words *b, int64_t add);
void dist_put_i64(Words *b, int64_t v);
void dist_put_f32s(Words *b, const float *v, int64_t n);
void dist_put_f32(Words *b, float v);
int64_t dist_get_i64(const uint32_t **p);
float dist_get_f32(const uint32_t **p);

/* The bf16 exchange (dist_bf16.c): values rounded in place; converted to and from bf16
   bits; packed two per word (an odd count's last word half empty). */
void dist_round_bf16(float *x, int64_t n);
/* The outputs this rank pooled itself (row-wise, replicated tables), rounded as if they
   had travelled. */
void dist_round_local_outputs(EmbDist *d, const EmbOutputs *out);
void dist_to_bf16(uint16_t *dst, const float *src, int64_t n);
void dist_from_bf16(float *dst, const uint16_t *src, int64_t n);
void dist_put_bf16s(Words *b, const float *v, int64_t n);
void dist_get_bf16s(const uint32_t **p, float *dst, int64_t n);
static inline int64_t dist_bf16_words(int64_t n)
{
    return (n + 1) / 2;
}
/* Words of @p n gradient values in the exchange: bf16 pairs or f32. */
static inline int64_t dist_grad_words(const EmbDist *d, int64_t n);

/* A grow-only byte buffer. */
int dist_grow(void **p, int64_t *cap, int64_t bytes);

/* One table of the ensemble on this rank. */
#define DIST_PATH_MAX 4000 /* bytes of a tiered part's path prefix (EmbTieredSpec::path) */

/* emb_dist_save()'s saver, kept between saves when deltas are on (full_every > 0): a
   delta extends the file this saver wrote last (dist_checkpoint.c). */
typedef struct EmbDistSaver {
    int32_t full_every;
    EmbSaver *saver;        /* NULL: none kept */
    char *dir;              /* its directory, `<dir>/rank<r>` */
    const EmbOptimizer *opt;
} EmbDistSaver;

void dist_saver_free(EmbDistSaver *s);

typedef struct DistTable {
    EmbDistTableDesc desc;  /* desc.tiered is the caller's: read while creating only */
    char name[EMB_NAME_MAX + 1];
    EmbDistPlacement place;
    EmbTable *proxy;   /* a custom table of the whole shape: validates ids, reads nothing */
    EmbTable *local;   /* the whole table (owner) or this rank's shard, else NULL */
    int32_t group;
    size_t rowbytes;   /* featuresize x element size */
    int64_t col;       /* Σ featuresize of the tables before: the concat column */

    /* the last forward, this rank's bags (requester side) */
    int64_t *ids, *offsets; /* int64 copies, offsets always (nbags + 1) */
    float *weights;         /* valid when has_weights */
    int has_weights, g_has_weights;
    int64_t ids_cap, offsets_cap, weights_cap;
    EmbPooling pooling;

    /* row-wise, requester: distinct ids by owner, each position's compact column */
    int64_t *distinct;      /* compact column -> id; owner-major, first appearance inside */
    int64_t *remap;         /* nnz compact columns (-1: pruned) */
    int64_t *nreq;          /* nranks: distinct ids asked of each owner */
    int64_t ndistinct, distinct_cap, remap_cap, default_col;
    unsigned char *rows;    /* the gathered rows, ndistinct x rowbytes */
    int64_t rows_cap;
    EmbTable *compact;      /* rows wrapped as a table (compact_cols columns) */
    const void *compact_data;
    int64_t compact_cols;

    /* owner side of the last forward: the global batch (table-wise) */
    int64_t *g_ids, *g_offsets;
    float *g_weights;
    int64_t g_nnz, g_ids_cap, g_offsets_cap, g_weights_cap;
    /* owner, row-wise: where each source rank's requested rows start in the request */
    const uint32_t **req_rows; /* nranks pointers into the received request buffer */
    int64_t *req_n;            /* nranks row counts */

    /* owner side of the backward */
    float *g_dy;               /* table-wise: global nbags x featuresize */
    int64_t g_dy_cap;
    int64_t *b_ids, *b_offsets; /* row-wise: the shard's entries as a SUM batch */
    float *b_coef, *b_dy;
    int64_t b_ids_cap, b_offsets_cap, b_coef_cap, b_dy_cap, b_nnz, b_nbags;
    EmbGrad *grad;
    EmbIndexer *indexer;
    int recorded;
} DistTable;

struct EmbDist {
    MPI_Comm comm;
    int32_t rank, nranks;
    int64_t ntables;
    DistTable *t;
    int32_t ngroups;
    int64_t *group_start;  /* ngroups + 1 */
    EmbStrategy *strategy;
    int own_strategy;
    EmbStore *store;       /* owns the local tables and shards (checkpoints save it) */
    EmbDistSaver ckpt;     /* delta saves: the saver kept between saves (dist_checkpoint.c) */
    void *zero;            /* one zero column for the proxies */

    /* the last forward */
    int forward_done, backward_done;
    int64_t nbags;         /* this rank's bags */
    int64_t *rank_nbags;   /* nranks */
    int64_t *rank_off;     /* nranks + 1: global bag offsets */
    int64_t global_nbags;

    /* exchange scratch */
    Words *send;           /* nranks packers */
    uint32_t *sendbuf, *recvbuf;
    int64_t sendbuf_cap, recvbuf_cap;
    int *scount, *sdispl, *rcount, *rdispl; /* nranks each */
    float *pooled, *pooled_recv;            /* table-wise rows, all groups */
    int64_t pooled_cap, pooled_recv_cap;
    int bf16;                               /* EmbDistOptions::exchange_bf16 */
    uint16_t *pooled16, *pooled16_recv;     /* bf16: the pooled rows as they travel */
    int64_t pooled16_cap, pooled16_recv_cap;
    unsigned char *gather;                  /* owner: raw rows to send, all tables */
    int64_t gather_cap;
    int *gcount, *gdispl, *grcount, *grdispl; /* per group / table: nranks each, stacked */
    MPI_Request *req;
    int64_t nreq_cap;

    int64_t *agree;        /* 3 x nranks */
    int64_t *vals;         /* 2 x nranks */
    int64_t *hash;         /* row-wise planning: open addressing (id, first index) */
    int64_t hash_cap;
    void *ent;             /* backward entries scratch */
    int64_t ent_cap;

    EmbTable **tmp_tables; /* ntables each: arguments of the core's ensemble calls */
    EmbBatch *tmp_batches;
    EmbPooling *tmp_poolings;
    EmbGrad **tmp_grads;
    EmbIndexer **tmp_indexers;
    int64_t *tmp_cols;     /* 2 x nranks + 1: per-owner offsets (forward) or counts
                              (backward) */

    /* EMB_TABLE_CHECK_FINITE tables: this rank's output gradients or weights were not
       finite (found by the backward, reported by the update's agreement, as the core
       reports them from emb_update_many) */
    unsigned table_flags;  /* the local tables' options' flags */
    int check_finite, nonfinite;
    char nonfinite_msg[256];

    EmbDistStats stats;
    /* emb_dist_prefetch(): the next forward's exchange in flight (dist_prefetch.c) */
    int prefetched;
    int pf_phase;          /* DIST_PF_*: what d->pf_req is */
    int pf_code;           /* this rank's failure of the prefetch's checks (pf_msg) */
    char pf_msg[512];
    const EmbBatch *pf_batches;
    const EmbPooling *pf_poolings;
    MPI_Request pf_req;
    int64_t *pf_hdr;       /* 8 x nranks: the headers sent (count, code, nbags, hash per
                              destination), then those received */
    double pf_blocking;    /* seconds the prefetch has spent in MPI calls so far */
    double *xclock;        /* where MPI time goes: stats.exchange_s or grad_exchange_s */
};

static inline int64_t dist_grad_words(const EmbDist *d, int64_t n)
{
    return d->bf16 ? dist_bf16_words(n) : n;
}

/* Message of the last failure on this thread ("" after success): the core's one error
   channel, emb_set_error() (read with emb_last_error()). */
#define dist_fail(code, ...) emb_set_error((code), __VA_ARGS__)
/* The core library's last message, prefixed. */
int dist_fail_core(int code, const char *what);
/* An MPI error: EMB_EIO naming the call and MPI's string. */
int dist_mpi_fail(int mpierr, const char *call);
void dist_clear_error(void);

/*
 * The agreement step: every rank brings its local result @p code and two 64-bit values
 * (NULL: zeros); returns 0 when every rank succeeded (and fills @p values, 2 x nranks,
 * when non-NULL), else the first failing rank's code on every rank, with its message.
 */
int dist_agree(EmbDist *d, int code, const int64_t value[2], int64_t *values);
/* dist_agree, but the error is the first failing rank's among those of the highest
   @p priority (a check before the update's preparation outranks the preparation). */
int dist_agree_ranked(EmbDist *d, int code, int64_t priority);

/* The store name of table @p i's part on @p rank ("i:name" or "i:name/part_r"). */
void dist_part_name(const EmbDist *d, int64_t i, EmbDistKind kind, int32_t rank, char *name);

/* Seconds of a monotonic clock. */
double dist_now(void);

/* Whether placement @p p is valid over @p nranks ranks (row-wise: nshards 0 or a range
   of ranks inside). The ensemble keeps row-wise placements with their range spelt out
   (rank, nshards = 0, nranks for "every rank"), table-wise ones with 0 for the rest. */
int dist_placement_valid(const EmbDistPlacement *p, int32_t nranks);
/* Checks table description @p t (tables[@p i]) and gives its bytes (dist_plan.c). */
int dist_desc_check(const EmbDistTableDesc *t, int64_t i, int64_t *bytes);
/* A lookup's local side (dist_prefetch.c): checks @p batches (and @p outputs when
   @p check_outputs), saves them, plans the row-wise requests and packs them. */
int dist_prepare(EmbDist *d, const EmbBatch *batches, const EmbPooling *poolings,
                 const EmbOutputs *outputs, int check_outputs);
/* A hash of @p poolings (NULL: SUM for every table), for the ranks to compare. */
uint64_t dist_pooling_hash(const EmbDist *d, const EmbPooling *poolings);
/* Packs this rank's requests for the ids exchange (dist_forward.c); nonzero: no memory. */
int dist_pack_requests(EmbDist *d);
/* Whether tables[@p i] = @p t can run placed as @p p (its uses flags); an EMB_ENOTSUP
   naming the table and @p what otherwise (dist_plan.c). */
int dist_placement_allowed(const EmbDistTableDesc *t, const EmbDistPlacement *p, int64_t i,
                           const char *what);

/* Column-wise placement @p p of D columns: the slice rank @p o holds (from *@p c0), 0 when
   none (the first D mod S slices take one column more). */
static inline int32_t dist_slice(const EmbDistPlacement *p, int32_t D, int32_t o, int32_t *c0)
{
    const int32_t s = o - p->rank, S = p->nshards;
    *c0 = 0;
    if (s < 0 || s >= S)
        return 0;
    *c0 = s * (D / S) + (s < D % S ? s : D % S);
    return D / S + (s < D % S);
}

/* How many feature columns of every row of table @p t rank @p o holds (table-wise owner,
   replica: all; column-wise holder: its slice, from column *c0; else 0). Such a rank
   receives the global batch's ids and its columns of the output gradients. */
static inline int32_t dist_cols(const DistTable *t, int32_t o, int32_t *c0)
{
    const int32_t D = t->desc.featuresize;
    *c0 = 0;
    if (t->place.kind == EMB_DIST_REPLICATED)
        return D;
    if (t->place.kind == EMB_DIST_TABLEWISE)
        return t->place.rank == o ? D : 0;
    if (t->place.kind != EMB_DIST_COLUMNWISE)
        return 0;
    return dist_slice(&t->place, D, o, c0);
}

/* The columns rank @p o pools for the other ranks (table-wise, column-wise; 0 else). */
static inline int32_t dist_pooled_cols(const DistTable *t, int32_t o, int32_t *c0)
{
    *c0 = 0;
    return t->place.kind == EMB_DIST_REPLICATED ? 0 : dist_cols(t, o, c0);
}

/* Whether rank @p rank receives the global batch of table @p t (dist_cols > 0). */
static inline int dist_whole_on(const DistTable *t, int32_t rank)
{
    int32_t c0;
    return dist_cols(t, rank, &c0) > 0;
}

/* Owner rank and column in its local table of @p id of table @p t (id in range). */
void dist_locate(const EmbDist *d, const DistTable *t, int64_t id, int32_t *rank,
                 int64_t *column);

/* Row r of table i in @p o (per-table buffers or the concat matrix). */
float *dist_out_row(const EmbDist *d, const EmbOutputs *o, int64_t i, int64_t row,
                    int64_t *stride);
/* Checks @p o for this rank's nbags rows of every table. */
int dist_outputs_check(const EmbDist *d, const EmbOutputs *o, int64_t nbags, const char *what);

/*
 * The all-to-all of the d->send[*] packers: counts first, then an agreement on @p code
 * (with @p value, gathered into d->vals), then the words, into d->recvbuf (source k's
 * part at d->rdispl[k]). Returns the agreed code.
 */
int dist_exchange_words(EmbDist *d, int code, const int64_t value[2], int64_t *sent_bytes);
/* Its halves: the packers into d->sendbuf with d->scount / sdispl (none after a failure
   @p code; returns @p code or the packing's), and d->recvbuf sized for d->rcount with
   d->rdispl (returns @p code or the sizing's). */
int dist_pack_sendbuf(EmbDist *d, int code, int64_t *sent_bytes);
int dist_size_recvbuf(EmbDist *d, int code);

/* The prefetch's phases (dist_prefetch.c): the headers in flight, then the words (or
   nothing: a rank's checks failed, reported by the forward). */
enum { DIST_PF_HEADERS = 1, DIST_PF_SIZED, DIST_PF_WORDS, DIST_PF_FAILED };
/* emb_dist_update()'s progress points. After its first agreement (@p agreed its code): a
   pending prefetch's headers waited for, its receive buffer sized (@p ready[0]: whether
   it could), dropped when the update failed; returns whether @p ready is to be shared
   (in the last agreement, into d->vals). After the last agreement: the words'
   MPI_Ialltoallv started when every rank was ready (else the forward does it), the
   prefetch dropped when the update failed (the next forward runs whole). */
int dist_prefetch_progress(EmbDist *d, int agreed, int64_t ready[2]);
void dist_prefetch_start(EmbDist *d, int agreed);
/* emb_dist_maplookup()'s side: completes the prefetched exchange; returns the agreed
   code of the prefetch's checks, @p code's (this rank's checks of the call) and the
   exchange's, d->vals filled. */
int dist_prefetch_finish(EmbDist *d, int code);

/* Batch of table @p t over arrays: offsets, or bag_size 1 for gather (no offsets). */
EmbBatch dist_batch(const DistTable *t, const int64_t *ids, const int64_t *offsets,
                    const float *weights, int64_t nnz, int64_t nbags);
/* Whether position @p k (id @p id) of this rank's saved batch of @p t is pruned. */
int dist_pruned(const DistTable *t, int64_t k, int64_t id);

#endif
