// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite viaduct_ring: the index arithmetic of shared rings, around
 * the 2^32 wrap in particular, the validation of indices written by
 * userspace, the slot copy, and the reference counting of ring memory.
 */
#include <kunit/test.h>
#include <linux/mm.h>

#include "../ring.h"

static const u32 ring_sizes[] = { 1, 2, 4, 64, 1024, 65536 };

/* Starting points: zero, the middle, and just before the 2^32 wrap. */
static const u32 ring_bases[] = {
	0, 1, 0x7fffffffU, 0x80000000U, 0xfffffffeU, 0xffffffffU,
};

static void ring_test_slot(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, vd_ring_slot(0, 8), 0U);
	KUNIT_EXPECT_EQ(test, vd_ring_slot(7, 8), 7U);
	KUNIT_EXPECT_EQ(test, vd_ring_slot(8, 8), 0U);
	KUNIT_EXPECT_EQ(test, vd_ring_slot(0xffffffffU, 8), 7U);
	KUNIT_EXPECT_EQ(test, vd_ring_slot(0xffffffffU, 1), 0U);
	KUNIT_EXPECT_EQ(test, vd_ring_slot(0xffffffffU, 65536), 0xffffU);
	/* Consecutive indices hit consecutive slots across the wrap. */
	KUNIT_EXPECT_EQ(test, vd_ring_slot(0xffffffffU + 1U, 8),
			(vd_ring_slot(0xffffffffU, 8) + 1) % 8);
}

/*
 * For every size and base, walk the producer from the consumer to a full
 * ring: used, free, full and valid must agree with plain arithmetic no
 * matter where 2^32 falls.
 */
static void ring_test_used_free_wrap(struct kunit *test)
{
	unsigned int s, b;
	u32 n;

	for (s = 0; s < ARRAY_SIZE(ring_sizes); s++) {
		u32 entries = ring_sizes[s];

		for (b = 0; b < ARRAY_SIZE(ring_bases); b++) {
			u32 cons = ring_bases[b];
			u32 step = entries > 64 ? entries / 16 : 1;

			for (n = 0; n <= entries; n += step) {
				u32 prod = cons + n;

				KUNIT_EXPECT_EQ(test, vd_ring_used(prod, cons), n);
				KUNIT_EXPECT_TRUE(test, vd_ring_valid(prod, cons, entries));
				KUNIT_EXPECT_EQ(test,
						vd_ring_free(prod, cons, entries),
						entries - n);
				KUNIT_EXPECT_EQ(test,
						vd_ring_full(prod, cons, entries),
						n == entries);
			}
			/* One past full, and a producer behind the consumer. */
			KUNIT_EXPECT_FALSE(test, vd_ring_valid(cons + entries + 1,
							       cons, entries));
			KUNIT_EXPECT_FALSE(test, vd_ring_valid(cons - 1, cons,
							       entries));
			KUNIT_EXPECT_FALSE(test, vd_ring_valid(cons + 0x80000000U,
							       cons, entries));
		}
	}
}

/* Every slot of a small ring is used exactly once per lap, across 2^32. */
static void ring_test_slots_cover_across_wrap(struct kunit *test)
{
	const u32 entries = 16;
	unsigned int hits[16] = { };
	u32 idx = 0xffffffffU - 20;
	unsigned int i;

	for (i = 0; i < 4 * entries; i++, idx++)
		hits[vd_ring_slot(idx, entries)]++;
	for (i = 0; i < entries; i++)
		KUNIT_EXPECT_EQ(test, hits[i], 4U);
}

/*
 * Exhaustive over a window around the wrap: every consumer position in it,
 * every distance up to two past a full ring of 8, checked against 64-bit
 * arithmetic that cannot wrap.
 */
static void ring_test_window_exhaustive(struct kunit *test)
{
	const u32 entries = 8;
	u64 c;
	u32 n;

	for (c = 0x100000000ULL - 512; c < 0x100000000ULL + 512; c++) {
		u32 cons = (u32)c;

		for (n = 0; n <= entries + 2; n++) {
			u32 prod = (u32)(c + n);
			u32 shared = prod, out;
			bool ok = n <= entries;

			KUNIT_ASSERT_EQ(test, vd_ring_used(prod, cons), n);
			KUNIT_ASSERT_EQ(test, vd_ring_slot(prod, entries),
					(u32)((c + n) % entries));
			KUNIT_ASSERT_EQ(test, vd_ring_valid(prod, cons, entries), ok);
			KUNIT_ASSERT_EQ(test, vd_ring_full(prod, cons, entries),
					n >= entries);
			KUNIT_ASSERT_EQ(test,
					vd_ring_load_user_index(&shared, cons,
								entries, &out),
					ok ? 0 : -EINVAL);
			shared = cons;
			KUNIT_ASSERT_EQ(test,
					vd_ring_load_user_consumer(&shared, prod,
								   entries, &out),
					ok ? 0 : -EINVAL);
		}
	}
}

static void ring_test_load_user_index(struct kunit *test)
{
	unsigned int s, b;

	for (s = 0; s < ARRAY_SIZE(ring_sizes); s++) {
		u32 entries = ring_sizes[s];

		for (b = 0; b < ARRAY_SIZE(ring_bases); b++) {
			u32 cons = ring_bases[b];
			u32 shared, out = 0xdeadbeefU;

			/* Empty, full: accepted and returned as is. */
			shared = cons;
			KUNIT_EXPECT_EQ(test, vd_ring_load_user_index(&shared, cons,
								      entries, &out), 0);
			KUNIT_EXPECT_EQ(test, out, cons);
			shared = cons + entries;
			KUNIT_EXPECT_EQ(test, vd_ring_load_user_index(&shared, cons,
								      entries, &out), 0);
			KUNIT_EXPECT_EQ(test, out, cons + entries);

			/* Garbage: beyond a full ring, or behind the kernel. */
			out = 0xdeadbeefU;
			shared = cons + entries + 1;
			KUNIT_EXPECT_EQ(test, vd_ring_load_user_index(&shared, cons,
								      entries, &out),
					-EINVAL);
			shared = cons - 1;
			KUNIT_EXPECT_EQ(test, vd_ring_load_user_index(&shared, cons,
								      entries, &out),
					-EINVAL);
			shared = cons ^ 0x80000000U;
			KUNIT_EXPECT_EQ(test, vd_ring_load_user_index(&shared, cons,
								      entries, &out),
					-EINVAL);
			KUNIT_EXPECT_EQ(test, out, 0xdeadbeefU);
		}
	}
}

static void ring_test_load_user_consumer(struct kunit *test)
{
	unsigned int s, b;

	for (s = 0; s < ARRAY_SIZE(ring_sizes); s++) {
		u32 entries = ring_sizes[s];

		for (b = 0; b < ARRAY_SIZE(ring_bases); b++) {
			u32 prod = ring_bases[b];
			u32 shared, out = 0xdeadbeefU;

			/* Caught up (empty) and a whole ring behind (full). */
			shared = prod;
			KUNIT_EXPECT_EQ(test, vd_ring_load_user_consumer(&shared, prod,
									 entries, &out), 0);
			KUNIT_EXPECT_EQ(test, out, prod);
			shared = prod - entries;
			KUNIT_EXPECT_EQ(test, vd_ring_load_user_consumer(&shared, prod,
									 entries, &out), 0);
			KUNIT_EXPECT_EQ(test, out, prod - entries);

			/* Ahead of the producer, or more than a ring behind. */
			out = 0xdeadbeefU;
			shared = prod + 1;
			KUNIT_EXPECT_EQ(test, vd_ring_load_user_consumer(&shared, prod,
									 entries, &out),
					-EINVAL);
			shared = prod - entries - 1;
			KUNIT_EXPECT_EQ(test, vd_ring_load_user_consumer(&shared, prod,
									 entries, &out),
					-EINVAL);
			KUNIT_EXPECT_EQ(test, out, 0xdeadbeefU);
		}
	}
}

static void ring_test_publish(struct kunit *test)
{
	u32 shared = 0;

	vd_ring_publish(&shared, 0xffffffffU);
	KUNIT_EXPECT_EQ(test, shared, 0xffffffffU);
	vd_ring_publish(&shared, shared + 1);
	KUNIT_EXPECT_EQ(test, shared, 0U);
}

struct ring_test_slot {
	u64 a;
	u32 b;
	u32 c;
};

static void ring_test_copy_part(struct kunit *test)
{
	struct ring_test_slot slots[4] = {
		{ 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 }, { 10, 11, 12 },
	};
	const size_t size = sizeof(slots[0]);
	struct ring_test_slot copy = { 0, 0, 0 };

	/* The whole slot, at an index just before the wrap. */
	vd_ring_copy_part(&copy, slots, 0xfffffffeU, 4, size, 0, size);
	KUNIT_EXPECT_EQ(test, copy.a, 7ULL);
	KUNIT_EXPECT_EQ(test, copy.c, 9U);
	/* The copy is private: changing the ring afterwards changes nothing. */
	slots[2].a = 100;
	KUNIT_EXPECT_EQ(test, copy.a, 7ULL);

	/* Part of a slot lands at its offset; the rest of the copy stays. */
	vd_ring_copy_part(&copy, slots, 0xffffffffU + 2U, 4, size,
			  offsetof(struct ring_test_slot, b), sizeof(u32));
	KUNIT_EXPECT_EQ(test, copy.a, 7ULL);
	KUNIT_EXPECT_EQ(test, copy.b, 5U);
	KUNIT_EXPECT_EQ(test, copy.c, 9U);

	/* A length past the slot's end stops there: slot 1 of index 5. */
	copy = (struct ring_test_slot){ 0, 0, 0 };
	vd_ring_copy_part(&copy, slots, 5, 4, size,
			  offsetof(struct ring_test_slot, c), 4 * size);
	KUNIT_EXPECT_EQ(test, copy.a, 0ULL);
	KUNIT_EXPECT_EQ(test, copy.b, 0U);
	KUNIT_EXPECT_EQ(test, copy.c, 6U);
	/* Nothing at all. */
	vd_ring_copy_part(&copy, slots, 3, 4, size, 0, 0);
	KUNIT_EXPECT_EQ(test, copy.a, 0ULL);
	vd_ring_copy_part(&copy, slots, 3, 4, size, size, 16);
	KUNIT_EXPECT_EQ(test, copy.a, 0ULL);
	KUNIT_EXPECT_EQ(test, copy.c, 6U);

	KUNIT_EXPECT_PTR_EQ(test,
			    vd_ring_slot_ptr(slots, 5, 4, sizeof(slots[0])),
			    (void *)&slots[1]);
}

static void ring_test_mem(struct kunit *test)
{
	struct vd_ring_mem *mem;
	unsigned int i;
	u8 *p;

	KUNIT_EXPECT_EQ(test, PTR_ERR(vd_ring_mem_alloc(0)), -EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(vd_ring_mem_alloc(SIZE_MAX)), -EINVAL);

	mem = vd_ring_mem_alloc(PAGE_SIZE + 1);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, mem);
	KUNIT_EXPECT_EQ(test, mem->size, 2 * PAGE_SIZE);
	p = mem->va;
	for (i = 0; i < mem->size; i++)
		if (p[i])
			break;
	KUNIT_EXPECT_EQ(test, i, (unsigned int)mem->size);
	KUNIT_EXPECT_EQ(test, kref_read(&mem->ref), 1U);
	vd_ring_mem_get(mem);
	KUNIT_EXPECT_EQ(test, kref_read(&mem->ref), 2U);
	vd_ring_mem_put(mem);
	vd_ring_mem_put(mem);
	vd_ring_mem_put(NULL);
}

static struct kunit_case ring_test_cases[] = {
	KUNIT_CASE(ring_test_slot),
	KUNIT_CASE(ring_test_used_free_wrap),
	KUNIT_CASE(ring_test_slots_cover_across_wrap),
	KUNIT_CASE(ring_test_window_exhaustive),
	KUNIT_CASE(ring_test_load_user_index),
	KUNIT_CASE(ring_test_load_user_consumer),
	KUNIT_CASE(ring_test_publish),
	KUNIT_CASE(ring_test_copy_part),
	KUNIT_CASE(ring_test_mem),
	{}
};

static struct kunit_suite ring_test_suite = {
	.name = "viaduct_ring",
	.test_cases = ring_test_cases,
};

kunit_test_suite(ring_test_suite);
