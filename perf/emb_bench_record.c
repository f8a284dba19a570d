/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * emb_bench_record.c — what makes a result a record a user can keep: the library's
 * version and commit, the machine (CPU model, cores, memory, kernel) and the command
 * line, as the CSV's "# " lines and the JSON's "record" object (jansson). Shared by
 * emb-bench, gpu_bench and dist-bench.
 */
#include <stdio.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench_commit.h" /* BENCH_COMMIT: git describe at build time (vcs_tag) */
#include "emb_bench.h"

void bench_cpu_model(char *buf, size_t n)
{
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        const char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            snprintf(buf, n, "%s", colon + 2);
            buf[strcspn(buf, "\n")] = '\0';
            break;
        }
    }
    fclose(f);
}

void bench_record_fill(BenchRecord *r, const char *program, const char *cmdline)
{
    memset(r, 0, sizeof *r);
    snprintf(r->program, sizeof r->program, "%s", program);
    snprintf(r->version, sizeof r->version, "%s", emb_version());
    snprintf(r->commit, sizeof r->commit, "%s", BENCH_COMMIT);
    bench_cpu_model(r->cpu, sizeof r->cpu);
    r->cores = emb_num_physical_cores();
    r->cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    struct sysinfo si;
    if (sysinfo(&si) == 0)
        r->mem_gib = (double)si.totalram * si.mem_unit / (1 << 30);
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(r->kernel, sizeof r->kernel, "%.64s %.64s %.64s", u.sysname, u.release, u.machine);
    snprintf(r->cmdline, sizeof r->cmdline, "%s", cmdline);
    const time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(r->date, sizeof r->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void bench_record_csv(const BenchRecord *r, FILE *f)
{
    fprintf(f, "# %s: embtables %s, commit %s, %s\n", r->program, r->version, r->commit, r->date);
    fprintf(f, "# machine: %s; %d cores (%d CPUs); %.1f GiB; %s\n", r->cpu, r->cores, r->cpus,
            r->mem_gib, r->kernel);
    fprintf(f, "# command: %s\n", r->cmdline);
}

json_t *bench_record_json(const BenchRecord *r)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:i, s:i, s:f, s:s}, s:s}",
                     "program", r->program, "version", r->version, "commit", r->commit,
                     "date", r->date, "machine", "cpu", r->cpu, "cores", r->cores, "cpus",
                     r->cpus, "memory_gib", r->mem_gib, "kernel", r->kernel, "command",
                     r->cmdline);
}
