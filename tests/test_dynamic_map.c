/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_dynamic_map.c — the dynamic kind's id -> row map alone (src/tables/dynamic/
 * dynamic_map.h; internal: the static library), as test_tier_core.c tests the tiered
 * cache: insert / find / erase against a reference array, growth (entries kept, the old
 * index kept when it fails), the slot order of colliding ids (probe order, backward shift
 * on erase) and determinism (the same operations give the same bytes).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "rng.h"
#include "tables/dynamic/dynamic_map.h"

enum { NREF = 4096 };

/* A sparse 63-bit id for reference entry i. */
static int64_t id_of(int64_t i)
{
    return (int64_t)(emb__mix64((uint64_t)i + 12345u) >> 1);
}

/* Occupied slots of @x; each live id found exactly once and at its row. */
static int64_t walk(const DynIndex *x, const int64_t *row_of_ref, int64_t nref)
{
    int64_t n = 0;
    for (int64_t s = 0; s < x->nslots; s++) {
        if (x->slots[s].id < 0)
            continue;
        n++;
        int64_t hits = 0;
        for (int64_t i = 0; i < nref; i++)
            if (row_of_ref[i] >= 0 && id_of(i) == x->slots[s].id) {
                hits++;
                cr_assert_eq(x->slots[s].row, row_of_ref[i]);
            }
        cr_assert_eq(hits, 1, "slot %lld holds id %lld, not a live entry", (long long)s,
                     (long long)x->slots[s].id);
    }
    return n;
}

/* Random inserts and erases with growth at a load of 7/10 against a reference array;
   returns the map (the caller frees it). */
static DynIndex run_ops(uint64_t seed, int64_t *row_of_ref, int64_t *live)
{
    DynIndex x;
    cr_assert_eq(emb__dyn_index_init(&x, 16), 0);
    *live = 0;
    for (int64_t i = 0; i < NREF; i++)
        row_of_ref[i] = -1;
    uint64_t s = seed;
    for (int op = 0; op < 20000; op++) {
        s = emb__mix64(s + 1);
        const int64_t i = (int64_t)(s % NREF);
        if (row_of_ref[i] < 0) {
            cr_assert_eq(emb__dyn_index_grow(&x, emb__dyn_slots_for(*live + 1)), 0);
            emb__dyn_slot_insert(x.slots, x.nslots, id_of(i), op);
            row_of_ref[i] = op;
            ++*live;
        } else if ((s >> 32) % 3 == 0) {
            emb__dyn_slot_remove(&x, id_of(i));
            row_of_ref[i] = -1;
            --*live;
        }
        const int64_t j = (int64_t)((s >> 20) % NREF); /* any entry, live or not */
        cr_assert_eq(emb__dyn_index_find(&x, id_of(j)), row_of_ref[j], "op %d", op);
    }
    return x;
}

Test(dynamic_map, insert_find_erase_against_a_reference)
{
    static int64_t ref[NREF];
    int64_t live;
    DynIndex x = run_ops(1, ref, &live);
    cr_assert_gt(live, 100);
    cr_assert_leq(live * MAX_LOAD_DEN, x.nslots * MAX_LOAD_NUM, "load above 7/10");
    cr_assert_eq(x.nslots & (x.nslots - 1), 0, "nslots %lld", (long long)x.nslots);
    for (int64_t i = 0; i < NREF; i++)
        cr_assert_eq(emb__dyn_index_find(&x, id_of(i)), ref[i]);
    cr_assert_eq(emb__dyn_index_find(&x, INT64_MAX - 1), -1);
    cr_assert_eq(walk(&x, ref, NREF), live, "a walk over the slots sees every live entry once");
    emb__dyn_index_free(&x);
    cr_assert_null(x.slots);
}

Test(dynamic_map, grow_keeps_entries_and_a_failed_grow_keeps_the_index)
{
    DynIndex x;
    cr_assert_eq(emb__dyn_index_init(&x, 16), 0);
    static int64_t ref[NREF];
    for (int64_t i = 0; i < NREF; i++)
        ref[i] = i < 7 ? 100 + i : -1;
    for (int64_t i = 0; i < 7; i++)
        emb__dyn_slot_insert(x.slots, x.nslots, id_of(i), 100 + i);
    cr_assert_eq(emb__dyn_index_grow(&x, 16), 0); /* no-op */
    cr_assert_eq(x.nslots, 16);
    DynSlot *before = x.slots;
    cr_assert_eq(emb__dyn_index_grow(&x, (int64_t)1 << 61), EMB_ENOMEM);
    cr_assert(strstr(emb_last_error(), "index"), "%s", emb_last_error());
    cr_assert_eq(x.slots, before, "a failed grow replaced the index");
    cr_assert_eq(x.nslots, 16);
    cr_assert_eq(emb__dyn_index_grow(&x, 100), 0);
    cr_assert_eq(x.nslots, 128);
    cr_assert_eq(walk(&x, ref, NREF), 7);
    for (int64_t i = 0; i < 20; i++)
        cr_assert_eq(emb__dyn_index_find(&x, id_of(i)), ref[i]);
    cr_assert_eq(emb__dyn_slots_for(0), 16);
    cr_assert_eq(emb__dyn_slots_for(7), 16);
    cr_assert_eq(emb__dyn_slots_for(8), 32);
    emb__dyn_index_free(&x);
}

/* Ids whose home slot in 16 slots is @home, the first @n found from @from. */
static void colliding(uint64_t home, int64_t from, int64_t *out, int n)
{
    for (int64_t id = from, k = 0; k < n; id++)
        if ((slot_hash(id) & 15) == home)
            out[k++] = id;
}

Test(dynamic_map, colliding_ids_in_probe_order_and_backward_shift)
{
    DynIndex x;
    cr_assert_eq(emb__dyn_index_init(&x, 16), 0);
    int64_t a[3];
    colliding(15, 0, a, 3); /* the last slot: probes wrap around to slot 0 */
    for (int k = 0; k < 3; k++)
        emb__dyn_slot_insert(x.slots, x.nslots, a[k], k);
    cr_assert_eq(x.slots[15].id, a[0]);
    cr_assert_eq(x.slots[0].id, a[1]);
    cr_assert_eq(x.slots[1].id, a[2]);
    emb__dyn_slot_remove(&x, a[0]); /* the others shift back, no tombstone */
    cr_assert_eq(x.slots[15].id, a[1]);
    cr_assert_eq(x.slots[0].id, a[2]);
    cr_assert_lt(x.slots[1].id, 0);
    cr_assert_eq(emb__dyn_index_find(&x, a[0]), -1);
    cr_assert_eq(emb__dyn_index_find(&x, a[1]), 1);
    cr_assert_eq(emb__dyn_index_find(&x, a[2]), 2);
    /* an entry at its home slot stays where it is when an earlier cluster shrinks */
    int64_t b;
    colliding(0, a[2] + 1, &b, 1);
    emb__dyn_slot_insert(x.slots, x.nslots, b, 7); /* home 0 is taken by a[2]: slot 1 */
    cr_assert_eq(x.slots[1].id, b);
    emb__dyn_slot_remove(&x, a[1]);
    cr_assert_eq(x.slots[15].id, a[2]);
    cr_assert_eq(x.slots[0].id, b, "b moves back to its home slot");
    cr_assert_eq(emb__dyn_index_find(&x, b), 7);
    emb__dyn_index_free(&x);
}

Test(dynamic_map, the_same_operations_give_the_same_bytes)
{
    static int64_t ref1[NREF], ref2[NREF], ref3[NREF];
    int64_t l1, l2, l3;
    DynIndex x1 = run_ops(7, ref1, &l1), x2 = run_ops(7, ref2, &l2), x3 = run_ops(8, ref3, &l3);
    cr_assert_eq(l1, l2);
    cr_assert_eq(x1.nslots, x2.nslots);
    cr_assert_eq(memcmp(x1.slots, x2.slots, (size_t)x1.nslots * sizeof *x1.slots), 0);
    cr_assert(x1.nslots != x3.nslots ||
                  memcmp(x1.slots, x3.slots, (size_t)x1.nslots * sizeof *x1.slots) != 0,
              "another sequence gave the same layout: the comparison tests nothing");
    emb__dyn_index_free(&x1);
    emb__dyn_index_free(&x2);
    emb__dyn_index_free(&x3);
}
