/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_mem.c — the process's resident set and its memory cgroup's charges (bench_mem.h).
 * The group is the process's line of /proc/self/cgroup: the v2 one ("0::/path", files
 * memory.stat "anon" / "file" and memory.max), else the v1 memory controller's
 * ("N:memory:/path", memory.stat "rss" / "cache" and memory.limit_in_bytes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_mem.h"

/* The value of the line "@key N" (or "@key: N kB" with @kb) of the file @path, or -1. */
static int64_t field(const char *path, const char *key, int kb)
{
    FILE *f = fopen(path, "r");
    char line[256];
    int64_t v = -1;
    const size_t n = strlen(key);
    while (f && v < 0 && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && (line[n] == ' ' || line[n] == ':'))
            v = strtoll(line + n + 1, NULL, 10) * (kb ? 1024 : 1);
    if (f)
        fclose(f);
    return v;
}

/* The one number in the file @path ("max": -1), or -1. */
static int64_t number(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[64] = "";
    const int ok = f && fgets(line, sizeof line, f);
    if (f)
        fclose(f);
    return ok && line[0] >= '0' && line[0] <= '9' ? strtoll(line, NULL, 10) : -1;
}

/* The memory cgroup's directory into @dir (@v2: which hierarchy): 0, or -1 (none). */
static int group_dir(char *dir, size_t cap, int *v2)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[512], v1[512] = "", u[512] = "";
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        const char *p = strstr(line, ":memory:");
        if (p)
            snprintf(v1, sizeof v1, "%s", p + 8);
        else if (!strncmp(line, "0::", 3))
            snprintf(u, sizeof u, "%s", line + 3);
    }
    if (f)
        fclose(f);
    if (v1[0]) { /* a v1 memory controller (a hybrid host: the unified tree has none) */
        snprintf(dir, cap, "/sys/fs/cgroup/memory%s", v1);
        *v2 = 0;
        return 0;
    }
    if (u[0] && strcmp(u, "/")) {
        snprintf(dir, cap, "/sys/fs/cgroup%s", u);
        *v2 = 1;
        return 0;
    }
    return -1;
}

BenchMem bench_mem_now(void)
{
    BenchMem m = {field("/proc/self/status", "VmRSS", 1), -1, -1, -1,
                  field("/proc/self/io", "read_bytes", 0)};
    char dir[600], p[700];
    int v2 = 0;
    if (group_dir(dir, sizeof dir, &v2))
        return m;
    snprintf(p, sizeof p, "%s/memory.stat", dir);
    m.anon = field(p, v2 ? "anon" : "rss", 0);
    m.file = field(p, v2 ? "file" : "cache", 0);
    snprintf(p, sizeof p, "%s/%s", dir, v2 ? "memory.max" : "memory.limit_in_bytes");
    m.limit = number(p);
    if (m.limit >= (int64_t)1 << 60) /* v1's "no limit" */
        m.limit = -1;
    return m;
}
