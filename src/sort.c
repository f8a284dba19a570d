/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sort.c — the LSD radix sort of keyed rows that groups ids (update/indexer.c,
 * update/pindex.c) and deduplicates a tiered table's batch (tables/tiered/tier_dedup.c).
 */
#include <string.h>

#include "internal.h"

/* Digits of at most 11 bits: 2048 counters (8 KiB) a pass, in L1. */
#define DIGIT_BITS 11
#define MAX_PASSES 3

int emb__radix_bits(int64_t n)
{
    int kb = 1;
    while (kb < 32 && ((int64_t)1 << kb) < n)
        kb++;
    return kb;
}

uint64_t *emb__radix_sort(uint64_t *a, uint64_t *b, int64_t n, int kb)
{
    if (kb < 1)
        kb = 1;
    const int passes = (kb + DIGIT_BITS - 1) / DIGIT_BITS;
    const int w = (kb + passes - 1) / passes;
    const uint64_t mask = ((uint64_t)1 << w) - 1;
    uint32_t cnt[MAX_PASSES][1 << DIGIT_BITS];
    memset(cnt, 0, sizeof cnt);
    for (int64_t j = 0; j < n; j++) {
        const uint64_t key = a[j] >> 32;
        for (int t = 0; t < passes; t++)
            cnt[t][key >> (t * w) & mask]++;
    }
    for (int t = 0; t < passes; t++) {
        uint32_t sum = 0;
        for (uint64_t d = 0; d <= mask; d++) {
            const uint32_t c = cnt[t][d];
            cnt[t][d] = sum;
            sum += c;
        }
        const int shift = 32 + t * w;
        for (int64_t j = 0; j < n; j++)
            b[cnt[t][a[j] >> shift & mask]++] = a[j];
        uint64_t *x = a;
        a = b;
        b = x;
    }
    return a;
}
