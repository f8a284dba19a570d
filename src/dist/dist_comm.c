/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dist_comm.c — what every step of the ensemble shares between ranks: errors (one message
 * on every rank), the clock, the agreement step, and the word buffers of the all-to-all
 * exchanges. The bottom of src/dist/: it calls no other file of the folder.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist/dist_impl.h"

/* ---- errors -------------------------------------------------------------------------- */

int dist_fail_core(int code, const char *what)
{
    return dist_fail(code, "%s: %s", what, emb_last_error());
}

int dist_mpi_fail(int mpierr, const char *call)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(mpierr, s, &len) != MPI_SUCCESS)
        snprintf(s, sizeof s, "MPI error %d", mpierr);
    return dist_fail(EMB_EIO, "%s failed: %s", call, s);
}

void dist_clear_error(void)
{
    emb_set_error(0, "%s", "");
}

const char *emb_dist_last_error(void)
{
    return emb_last_error();
}

double dist_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/*
 * One MPI_Allgather of (code, value, value2) triples. On failure the first failing rank
 * broadcasts its message, so every rank reports the same code and text.
 */
/* dist_agree; with @p ranked, the failing ranks of the highest value[0] come first. */
static int agree(EmbDist *d, int code, const int64_t value[2], int64_t *values, int ranked)
{
    const double t0 = dist_now();
    const int64_t mine[3] = {code, value ? value[0] : 0, value ? value[1] : 0};
    int64_t *all = d->agree;
    int r = MPI_Allgather(mine, 3, MPI_INT64_T, all, 3, MPI_INT64_T, d->comm);
    if (r != MPI_SUCCESS)
        return dist_mpi_fail(r, "MPI_Allgather (agreement)");
    int first = -1;
    for (int32_t i = 0; i < d->nranks; i++)
        if (all[3 * i] != 0 && (first < 0 || (ranked && all[3 * i + 1] > all[3 * first + 1])))
            first = i;
    if (first < 0 && values)
        for (int32_t i = 0; i < d->nranks; i++)
            values[2 * i] = all[3 * i + 1], values[2 * i + 1] = all[3 * i + 2];
    if (first >= 0) {
        const int agreed = (int)all[3 * first];
        char msg[512];
        snprintf(msg, sizeof msg, "%s", emb_last_error());
        r = MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, d->comm);
        msg[sizeof msg - 1] = '\0';
        if (r != MPI_SUCCESS)
            return dist_mpi_fail(r, "MPI_Bcast (agreement)");
        *d->xclock += dist_now() - t0;
        return dist_fail(agreed, "rank %d: %s", first, msg);
    }
    *d->xclock += dist_now() - t0;
    return 0;
}

int dist_agree(EmbDist *d, int code, const int64_t value[2], int64_t *values)
{
    return agree(d, code, value, values, 0);
}

int dist_agree_ranked(EmbDist *d, int code, int64_t priority)
{
    const int64_t value[2] = {priority, 0};
    return agree(d, code, value, NULL, 1);
}

/* ---- buffers ------------------------------------------------------------------------- */

int dist_grow(void **p, int64_t *cap, int64_t bytes)
{
    if (bytes <= *cap)
        return 0;
    int64_t n = *cap > 0 ? *cap : 256;
    while (n < bytes)
        n *= 2;
    void *q = realloc(*p, (size_t)n);
    if (!q)
        return dist_fail(EMB_ENOMEM, "out of memory for %lld bytes of exchange buffers",
                         (long long)bytes);
    *p = q;
    *cap = n;
    return 0;
}

int dist_words_reserve(Words *b, int64_t add)
{
    int64_t cap = b->cap * (int64_t)sizeof *b->w;
    const int r = dist_grow((void **)&b->w, &cap, (b->n + add) * (int64_t)sizeof *b->w);
    b->cap = cap / (int64_t)sizeof *b->w;
    return r;
}

void dist_put_i64(Words *b, int64_t v)
{
    memcpy(b->w + b->n, &v, sizeof v);
    b->n += 2;
}

void dist_put_f32(Words *b, float v)
{
    memcpy(b->w + b->n, &v, sizeof v);
    b->n += 1;
}

void dist_put_f32s(Words *b, const float *v, int64_t n)
{
    memcpy(b->w + b->n, v, (size_t)n * sizeof *v);
    b->n += n;
}

int64_t dist_get_i64(const uint32_t **p)
{
    int64_t v;
    memcpy(&v, *p, sizeof v);
    *p += 2;
    return v;
}

float dist_get_f32(const uint32_t **p)
{
    float v;
    memcpy(&v, *p, sizeof v);
    *p += 1;
    return v;
}

int dist_pack_sendbuf(EmbDist *d, int code, int64_t *sent_bytes)
{
    int64_t total = 0;
    for (int32_t r = 0; r < d->nranks && !code; r++)
        total += d->send[r].n;
    if (!code && total > INT32_MAX)
        code = dist_fail(EMB_EOVERFLOW, "%lld words exceed MPI's int counts", (long long)total);
    if (!code)
        code = dist_grow((void **)&d->sendbuf, &d->sendbuf_cap, 4 * total + 4);
    total = 0;
    for (int32_t k = 0; k < d->nranks; k++) {
        d->scount[k] = code ? 0 : (int)d->send[k].n;
        d->sdispl[k] = (int)total;
        if (d->scount[k])
            memcpy(d->sendbuf + total, d->send[k].w, 4 * (size_t)d->send[k].n);
        total += d->scount[k];
        if (k != d->rank)
            *sent_bytes += 4 * (int64_t)d->scount[k];
    }
    return code;
}

int dist_size_recvbuf(EmbDist *d, int code)
{
    int64_t rtotal = 0;
    for (int32_t k = 0; k < d->nranks; k++) {
        d->rdispl[k] = rtotal > INT32_MAX ? 0 : (int)rtotal;
        rtotal += d->rcount[k];
    }
    if (!code && rtotal > INT32_MAX)
        code = dist_fail(EMB_EOVERFLOW, "%lld words received exceed MPI's int counts",
                         (long long)rtotal);
    if (!code)
        code = dist_grow((void **)&d->recvbuf, &d->recvbuf_cap, 4 * rtotal + 4);
    return code;
}

/*
 * The packers' all-to-all with the agreement folded in: the counts go first
 * (MPI_Alltoall; a rank that failed sends none), every rank sizes its receive buffer,
 * the ranks agree on @p code (and exchange @p value, into d->vals), then the words
 * travel (MPI_Alltoallv) into d->recvbuf, source k's at d->rdispl[k].
 */
int dist_exchange_words(EmbDist *d, int code, const int64_t value[2], int64_t *sent_bytes)
{
    code = dist_pack_sendbuf(d, code, sent_bytes);
    double t0 = dist_now();
    int r = MPI_Alltoall(d->scount, 1, MPI_INT, d->rcount, 1, MPI_INT, d->comm);
    *d->xclock += dist_now() - t0;
    if (r != MPI_SUCCESS)
        return dist_mpi_fail(r, "MPI_Alltoall (counts)");
    if ((r = dist_agree(d, dist_size_recvbuf(d, code), value, d->vals)))
        return r;
    t0 = dist_now();
    r = MPI_Alltoallv(d->sendbuf, d->scount, d->sdispl, MPI_UINT32_T, d->recvbuf, d->rcount,
                      d->rdispl, MPI_UINT32_T, d->comm);
    *d->xclock += dist_now() - t0;
    return r == MPI_SUCCESS ? 0 : dist_mpi_fail(r, "MPI_Alltoallv");
}
