/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier_map.c — the mapped read engine's pieces (tier_io.h; tier_io.c drives them): a
 * read-only MAP_SHARED mapping of a tiered table's file, grown when the file grows; the
 * populate of a range of it (MADV_POPULATE_READ: an error where a fault would raise SIGBUS);
 * and the guarded copy out of it, which turns a SIGBUS (a page the disk cannot read, a file
 * truncated by someone else) into -EIO instead of the death of the process.
 *
 * The guard: a SIGBUS handler installed while mapped engines exist (counted; the previous
 * handler is restored by the last), with SA_NODEFER so that the siglongjmp out of it leaves
 * the signal unblocked (sigsetjmp saves no mask: no system call a record; a fault sets the
 * mask of its time back, one system call). A fault in a
 * guarded copy (this thread's guard_jb set) jumps back to it; any other SIGBUS goes to the
 * previous handler (its default: the process dies, as it would have without us).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <unistd.h>

#include "internal.h"
#include "platform.h"
#include "tables/tiered/tier_io.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14; older kernels: EINVAL, the copy faults instead */
#endif

/* ---- the guard --------------------------------------------------------------------------- */

static pthread_mutex_t guard_mu = PTHREAD_MUTEX_INITIALIZER;
static int guard_users;
static struct sigaction guard_prev; /* the handler before ours (read by the handler) */
static _Thread_local sigjmp_buf *volatile guard_jb;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    sigjmp_buf *jb = guard_jb;
    if (jb) {
        guard_jb = NULL;
        /* the mask of the fault's time back: a wrapper of ours (ThreadSanitizer's) may block
           more than SA_NODEFER lets through, and a SIGBUS blocked then kills */
        if (uc)
            pthread_sigmask(SIG_SETMASK, &((const ucontext_t *)uc)->uc_sigmask, NULL);
        siglongjmp(*jb, 1);
    }
    if (guard_prev.sa_flags & SA_SIGINFO) {
        guard_prev.sa_sigaction(sig, si, uc);
    } else if (guard_prev.sa_handler != SIG_DFL && guard_prev.sa_handler != SIG_IGN) {
        guard_prev.sa_handler(sig);
    } else { /* the default: die of it (a fault re-raises on return anyway) */
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

int emb__tier_guard_acquire(void)
{
    int r = 0;
    pthread_mutex_lock(&guard_mu);
    if (guard_users == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGBUS, &sa, &guard_prev))
            r = emb__fail(EMB_ENOTSUP, "tiered table: cannot install a SIGBUS handler: %s",
                          strerror(errno));
    }
    guard_users += !r;
    pthread_mutex_unlock(&guard_mu);
    return r;
}

void emb__tier_guard_release(void)
{
    pthread_mutex_lock(&guard_mu);
    if (--guard_users == 0) {
        struct sigaction now;
        /* someone who installed a handler after ours keeps it (ours chains to theirs' prev) */
        if (!sigaction(SIGBUS, NULL, &now) && (now.sa_flags & SA_SIGINFO) &&
            now.sa_sigaction == on_sigbus)
            sigaction(SIGBUS, &guard_prev, NULL);
    }
    pthread_mutex_unlock(&guard_mu);
}

int32_t emb__tier_guarded_copy(void *dst, const void *src, size_t len)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EIO; /* the handler cleared guard_jb */
    guard_jb = &jb;
    memcpy(dst, src, len);
    guard_jb = NULL;
    return 0;
}

/* ---- the mapping ------------------------------------------------------------------------- */

static size_t page_size(void)
{
    static size_t ps;
    if (!ps) {
        const long p = sysconf(_SC_PAGESIZE);
        ps = p > 0 ? (size_t)p : 4096;
    }
    return ps;
}

int64_t emb__tier_map_page(void)
{
    return (int64_t)page_size();
}

void emb__tier_map_drop(EmbTierMap *m)
{
    if (m->base)
        munmap(m->base, m->len);
    m->base = NULL, m->len = 0, m->fsize = 0;
}

/*
 * The file's bytes [0, @end) covered: 0, -ENODATA (the file is shorter) or -errno (no mapping
 * of it: the caller reads otherwise). A mapping shorter than @end is replaced by one of the
 * whole file, at least twice as large as before so that a growing file is remapped a
 * logarithmic number of times (the pages past its end are never touched: end <= fsize is
 * checked first). Nothing may use the old mapping then (no populate or copy in flight: the
 * caller waited, where @end > m->len).
 */
int emb__tier_map_cover(EmbTierMap *m, int fd, int64_t end)
{
    struct stat st;
    if (fstat(fd, &st))
        return -errno;
    if (st.st_size < end)
        return -ENODATA;
    if ((int64_t)m->len >= end) { /* fsize: what the mapping holds of the file */
        m->fsize = EMB_MIN((int64_t)st.st_size, (int64_t)m->len);
        return 0;
    }
    m->fsize = st.st_size;
    const size_t ps = page_size();
    size_t want = EMB_MAX((size_t)st.st_size, 2 * m->len);
    want = (want + ps - 1) / ps * ps;
    void *p = mmap(NULL, want, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        m->fsize = 0;
        return -errno;
    }
    madvise(p, want, MADV_RANDOM); /* records at random: no read-around of a fault (advice) */
    if (m->base)
        munmap(m->base, m->len);
    m->base = p, m->len = want;
    return 0;
}

int32_t emb__tier_populate(const void *addr, size_t len)
{
    int e;
    do
        e = madvise((void *)(uintptr_t)addr, len, MADV_POPULATE_READ) ? errno : 0;
    while (e == EINTR || e == EAGAIN);
    return e == EINVAL ? 0 : -e; /* EINVAL: a kernel without it; the copy faults instead */
}

/* ---- the memory a populated mapping may take ------------------------------------------- */

/* The memory limit of the process's own memory cgroup (v2 memory.max, v1
   memory.limit_in_bytes), or -1 where there is none or it cannot be read: the page cache
   the mapping holds is charged to the group, so a file populated whole in a group smaller
   than it would only thrash. */
static int64_t cgroup_limit(void)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return -1;
    char line[512], v1[700] = "", v2[700] = "";
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = 0;
        const char *ctl = c1 + 1, *grp = c2 + 1;
        if (!*ctl) /* v2 (a hybrid host lists it too: v1's memory line first) */
            snprintf(v2, sizeof v2, "/sys/fs/cgroup%s/memory.max", grp);
        else if (strstr(ctl, "memory")) /* v1 (the controller's list may name others) */
            snprintf(v1, sizeof v1, "/sys/fs/cgroup/memory%s/memory.limit_in_bytes", grp);
    }
    fclose(f);
    f = fopen(v1[0] ? v1 : v2, "r");
    if (!f)
        return -1;
    char v[64] = "";
    const bool ok = fgets(v, sizeof v, f) != NULL;
    fclose(f);
    char *end;
    const long long n = ok ? strtoll(v, &end, 10) : -1;
    return ok && end != v && n > 0 ? (int64_t)n : -1; /* "max": none */
}

int64_t emb__tier_map_memory(void)
{
    const size_t ram = emb__platform_memory_bytes();
    int64_t m = ram > (size_t)INT64_MAX ? INT64_MAX : (int64_t)ram;
    const int64_t g = cgroup_limit();
    return g > 0 ? EMB_MIN(m, g) : m;
}
