// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite viaduct_cq: completion rings, overflow, arming and resize,
 * and the event queues they report to.
 *
 * The test plays the consumer: it reads CQEs straight from the ring memory
 * and moves the header's consumer index as the library would.
 */
#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/mm.h>

#include "../cq.h"
#include "../event.h"
#include "../ring.h"
#include "../viaduct.h"

#define HANDLE		7
#define USER_DATA	0x1122334455667788ULL
#define QP_HANDLE	9

struct cq_fixture {
	struct vd_async_queue *aq;
	struct vd_comp_channel *ch;
};

static int cq_test_init(struct kunit *test)
{
	struct cq_fixture *f;

	f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, f);
	f->aq = vd_async_queue_create();
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, f->aq);
	f->ch = vd_comp_channel_create();
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, f->ch);
	test->priv = f;
	return 0;
}

static void cq_test_exit(struct kunit *test)
{
	struct cq_fixture *f = test->priv;

	vd_comp_channel_put(f->ch);
	vd_async_queue_put(f->aq);
}

static struct vd_cq *new_cq(struct kunit *test, u32 entries)
{
	struct cq_fixture *f = test->priv;
	struct vd_cq *cq;

	cq = vd_cq_create(entries, HANDLE, USER_DATA, f->aq, f->ch, NULL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, cq);
	return cq;
}

static struct viaduct_ring *hdr_of(struct vd_cq *cq)
{
	return cq->mem->va;
}

static struct viaduct_cqe *cqe_at(struct vd_cq *cq, u32 idx)
{
	return vd_ring_slot_ptr(cq->mem->va + VIADUCT_RING_HDR_SIZE, idx,
				cq->entries, sizeof(struct viaduct_cqe));
}

/* The library's side of the ring. */
static void consume_to(struct vd_cq *cq, u32 cons)
{
	/* After reading the CQEs, as the library does. */
	smp_store_release(&hdr_of(cq)->consumer, cons);
}

static int push(struct vd_cq *cq, u64 wr_id, u8 status, bool solicited)
{
	struct viaduct_cqe cqe = {
		.wr_id = wr_id,
		.qp_handle = QP_HANDLE,
		.status = status,
	};

	return vd_cq_push(cq, &cqe, solicited);
}

static unsigned int count_cq_events(struct kunit *test)
{
	struct cq_fixture *f = test->priv;
	struct viaduct_cq_event ev;
	unsigned int n = 0;

	while (!vd_comp_channel_pop(f->ch, &ev)) {
		KUNIT_EXPECT_EQ(test, ev.cq_handle, HANDLE);
		KUNIT_EXPECT_EQ(test, ev.user_data, USER_DATA);
		KUNIT_EXPECT_EQ(test, ev.reserved, 0U);
		n++;
	}
	return n;
}

static void cq_test_sizes(struct kunit *test)
{
	struct cq_fixture *f = test->priv;
	struct vd_ring_mem *mem;
	struct vd_cq *cq;
	u32 n;

	KUNIT_EXPECT_EQ(test, PTR_ERR(vd_cq_create(0, 1, 0, f->aq, NULL, NULL)),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(vd_cq_create(VD_MAX_CQE + 1, 1, 0,
						   f->aq, NULL, NULL)), -EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(vd_cq_create(U32_MAX, 1, 0, NULL, NULL, NULL)),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, vd_cq_round_entries(1, &n), 0);
	KUNIT_EXPECT_EQ(test, n, 1U);
	KUNIT_EXPECT_EQ(test, vd_cq_round_entries(VD_MAX_CQE / 2 + 1, &n), 0);
	KUNIT_EXPECT_EQ(test, n, VD_MAX_CQE);

	cq = new_cq(test, 3);
	KUNIT_EXPECT_EQ(test, vd_cq_entries(cq), 4U);
	mem = vd_cq_mem(cq);
	KUNIT_EXPECT_GE(test, mem->size, vd_cq_ring_size(4));
	KUNIT_EXPECT_EQ(test, mem->size % PAGE_SIZE, 0UL);
	KUNIT_EXPECT_EQ(test, hdr_of(cq)->entries, 4U);
	KUNIT_EXPECT_EQ(test, hdr_of(cq)->producer, 0U);
	KUNIT_EXPECT_EQ(test, hdr_of(cq)->flags, 0U);
	vd_cq_put(cq);

	cq = vd_cq_create(VD_MAX_CQE, 1, 0, NULL, NULL, NULL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, cq);
	KUNIT_EXPECT_EQ(test, vd_cq_entries(cq), VD_MAX_CQE);
	vd_cq_put(cq);
}

static void cq_test_overflow(struct kunit *test)
{
	struct cq_fixture *f = test->priv;
	struct viaduct_async_event ev;
	struct vd_cq *cq = new_cq(test, 4);
	u32 i;

	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test, push(cq, 100 + i, 0, false), 0);
	KUNIT_EXPECT_EQ(test, hdr_of(cq)->producer, 4U);
	KUNIT_EXPECT_EQ(test, hdr_of(cq)->flags, 0U);
	KUNIT_EXPECT_EQ(test, vd_async_queue_pop(f->aq, &ev), -EAGAIN);

	KUNIT_EXPECT_EQ(test, push(cq, 200, 0, false), -ENOSPC);
	KUNIT_EXPECT_EQ(test, hdr_of(cq)->flags, VIADUCT_RING_F_OVERFLOW);
	KUNIT_EXPECT_EQ(test, hdr_of(cq)->producer, 4U);

	/* Exactly one event, naming the CQ. */
	KUNIT_ASSERT_EQ(test, vd_async_queue_pop(f->aq, &ev), 0);
	KUNIT_EXPECT_EQ(test, ev.type, VIADUCT_EVENT_CQ_ERROR);
	KUNIT_EXPECT_EQ(test, ev.handle, HANDLE);
	KUNIT_EXPECT_EQ(test, ev.user_data, USER_DATA);

	/* In error for good: even with room again, nothing is written. */
	consume_to(cq, 4);
	KUNIT_EXPECT_EQ(test, push(cq, 201, 0, false), -ENOSPC);
	KUNIT_EXPECT_EQ(test, push(cq, 202, 1, true), -ENOSPC);
	KUNIT_EXPECT_EQ(test, vd_async_queue_pop(f->aq, &ev), -EAGAIN);
	KUNIT_EXPECT_EQ(test, hdr_of(cq)->producer, 4U);

	/* Nothing was overwritten. */
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test, cqe_at(cq, i)->wr_id, 100ULL + i);

	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 0), -EIO);
	vd_cq_put(cq);
}

static void cq_test_consumer_frees_space(struct kunit *test)
{
	struct cq_fixture *f = test->priv;
	struct viaduct_async_event ev;
	struct vd_cq *cq = new_cq(test, 4);
	u32 i;

	/* Ten laps of a four-entry ring, the consumer two behind. */
	for (i = 0; i < 40; i++) {
		KUNIT_ASSERT_EQ(test, push(cq, i, 0, false), 0);
		if (i >= 1)
			consume_to(cq, i - 1);
		KUNIT_EXPECT_EQ(test, hdr_of(cq)->producer, i + 1);
		KUNIT_EXPECT_EQ(test, cqe_at(cq, i)->wr_id, (u64)i);
	}
	/* Consumer at 39, producer at 40: three free slots, then full. */
	consume_to(cq, 39);
	for (i = 40; i < 43; i++)
		KUNIT_EXPECT_EQ(test, push(cq, i, 0, false), 0);
	KUNIT_EXPECT_EQ(test, push(cq, 43, 0, false), -ENOSPC);
	for (i = 39; i < 43; i++)
		KUNIT_EXPECT_EQ(test, cqe_at(cq, i)->wr_id, (u64)i);
	KUNIT_EXPECT_EQ(test, vd_async_queue_pop(f->aq, &ev), 0);
	vd_cq_put(cq);
}

static void cq_test_garbage_consumer(struct kunit *test)
{
	struct cq_fixture *f = test->priv;
	struct viaduct_async_event ev;
	struct vd_cq *cq = new_cq(test, 8);

	KUNIT_EXPECT_EQ(test, push(cq, 1, 0, false), 0);
	/* Ahead of the producer: userspace wrote garbage. */
	consume_to(cq, 5);
	KUNIT_EXPECT_EQ(test, push(cq, 2, 0, false), -ENOSPC);
	KUNIT_EXPECT_EQ(test, hdr_of(cq)->flags, VIADUCT_RING_F_OVERFLOW);
	KUNIT_EXPECT_EQ(test, hdr_of(cq)->producer, 1U);
	KUNIT_EXPECT_EQ(test, vd_async_queue_pop(f->aq, &ev), 0);
	KUNIT_EXPECT_EQ(test, vd_async_queue_pop(f->aq, &ev), -EAGAIN);
	vd_cq_put(cq);
}

static void cq_test_arm_next(struct kunit *test)
{
	struct vd_cq *cq = new_cq(test, 16);

	/* Not armed: nothing. */
	KUNIT_EXPECT_EQ(test, push(cq, 1, 0, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 0U);

	/* The CQE already in the ring does not fire the arm. */
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 0), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 0U);

	/* The next one does, once. */
	KUNIT_EXPECT_EQ(test, push(cq, 2, 0, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);
	KUNIT_EXPECT_EQ(test, push(cq, 3, 0, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 0U);

	/* Arming twice before a completion still gives one event. */
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 0), 0);
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 0), 0);
	KUNIT_EXPECT_EQ(test, push(cq, 4, 0, false), 0);
	KUNIT_EXPECT_EQ(test, push(cq, 5, 0, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);

	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, 0, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, 1U << 2, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT | (1U << 5), 0),
			-EINVAL);
	vd_cq_put(cq);
}

static void cq_test_arm_solicited(struct kunit *test)
{
	struct viaduct_cqe cqe = { .wr_id = 9, .flags = VIADUCT_WC_F_SOLICITED };
	struct vd_cq *cq = new_cq(test, 16);

	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_SOLICITED, 0), 0);
	/* An unsolicited successful completion does not fire it... */
	KUNIT_EXPECT_EQ(test, push(cq, 1, VIADUCT_WC_SUCCESS, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 0U);
	/* ...a solicited one does, once. */
	KUNIT_EXPECT_EQ(test, push(cq, 2, VIADUCT_WC_SUCCESS, true), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);
	KUNIT_EXPECT_EQ(test, push(cq, 3, VIADUCT_WC_SUCCESS, true), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 0U);

	/* Any error completion fires a solicited arm. */
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_SOLICITED, 0), 0);
	KUNIT_EXPECT_EQ(test, push(cq, 4, VIADUCT_WC_FLUSHED, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);

	/* So does a CQE flagged solicited by the receive path. */
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_SOLICITED, 0), 0);
	KUNIT_EXPECT_EQ(test, vd_cq_push(cq, &cqe, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);

	/* NEXT wins over SOLICITED, whatever the order of the arms. */
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_SOLICITED, 0), 0);
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 0), 0);
	KUNIT_EXPECT_EQ(test, push(cq, 5, VIADUCT_WC_SUCCESS, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 0), 0);
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_SOLICITED, 0), 0);
	KUNIT_EXPECT_EQ(test, push(cq, 6, VIADUCT_WC_SUCCESS, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT |
				       VIADUCT_ARM_SOLICITED, 0), 0);
	KUNIT_EXPECT_EQ(test, push(cq, 7, VIADUCT_WC_SUCCESS, false), 0);
	KUNIT_EXPECT_EQ(test, push(cq, 8, VIADUCT_WC_SUCCESS, true), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);
	vd_cq_put(cq);
}

/* A threshold arm: one event for N unread CQEs, counting those already in. */
static void cq_test_arm_threshold(struct kunit *test)
{
	struct vd_cq *cq = new_cq(test, 16);
	u32 i;

	/* Out of range: nothing armed. */
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 17), -EINVAL);
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, 0, 4), -EINVAL);
	KUNIT_EXPECT_EQ(test, push(cq, 0, 0, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 0U);

	/* One unread, armed for 4: three more CQEs give exactly one event. */
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 4), 0);
	for (i = 1; i < 3; i++)
		KUNIT_EXPECT_EQ(test, push(cq, i, 0, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 0U);
	KUNIT_EXPECT_EQ(test, push(cq, 3, 0, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);
	KUNIT_EXPECT_EQ(test, push(cq, 4, 0, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 0U);

	/* Five unread: an arm for 5 fires at once, one for 6 does not. */
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 5), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 6), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 0U);

	/* Consuming counts: the user read all five, so six more are needed. */
	consume_to(cq, 5);
	for (i = 5; i < 10; i++)
		KUNIT_EXPECT_EQ(test, push(cq, i, 0, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 0U);
	KUNIT_EXPECT_EQ(test, push(cq, 10, 0, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);
	consume_to(cq, 11);

	/* An error completion fires it whatever the count. */
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 8), 0);
	KUNIT_EXPECT_EQ(test, push(cq, 11, 0, true), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 0U);
	KUNIT_EXPECT_EQ(test, push(cq, 12, VIADUCT_WC_FLUSHED, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);
	consume_to(cq, 13);

	/* A solicited one only with VIADUCT_ARM_SOLICITED. */
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_SOLICITED, 8), 0);
	KUNIT_EXPECT_EQ(test, push(cq, 13, 0, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 0U);
	KUNIT_EXPECT_EQ(test, push(cq, 14, 0, true), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);
	consume_to(cq, 15);

	/* Arming again keeps the earlier condition: the lower threshold... */
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 3), 0);
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 8), 0);
	for (i = 15; i < 17; i++)
		KUNIT_EXPECT_EQ(test, push(cq, i, 0, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 0U);
	KUNIT_EXPECT_EQ(test, push(cq, 17, 0, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);
	consume_to(cq, 18);
	/* ...and 0, the next CQE, is the lowest. */
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 0), 0);
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 8), 0);
	KUNIT_EXPECT_EQ(test, push(cq, 18, 0, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);
	consume_to(cq, 19);

	/* A plain SOLICITED arm and a count: either fires it. */
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_SOLICITED, 0), 0);
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 2), 0);
	KUNIT_EXPECT_EQ(test, push(cq, 19, 0, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 0U);
	KUNIT_EXPECT_EQ(test, push(cq, 20, 0, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);
	consume_to(cq, 21);
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 4), 0);
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_SOLICITED, 0), 0);
	KUNIT_EXPECT_EQ(test, push(cq, 21, 0, true), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);
	consume_to(cq, 22);

	/* A garbage consumer index fires a threshold arm at once. */
	consume_to(cq, 40);
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 2), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);
	vd_cq_put(cq);
}

/* A thread waiting on the channel learns of an overflow. */
static void cq_test_overflow_fires_arm(struct kunit *test)
{
	struct vd_cq *cq = new_cq(test, 1);

	KUNIT_EXPECT_EQ(test, push(cq, 1, 0, false), 0);
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_SOLICITED, 0), 0);
	KUNIT_EXPECT_EQ(test, push(cq, 2, 0, false), -ENOSPC);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);
	vd_cq_put(cq);
}

static void cq_test_resize(struct kunit *test)
{
	struct vd_ring_mem *old, *mem, *mem2;
	struct viaduct_ring *nhdr;
	struct viaduct_cqe *ncqes;
	struct vd_cq *cq = new_cq(test, 4);
	u32 i;

	/* Producer at 6, consumer at 3: slots 3, 0, 1 hold wr_ids 3, 4, 5. */
	for (i = 0; i < 3; i++)
		KUNIT_ASSERT_EQ(test, push(cq, i, 0, false), 0);
	consume_to(cq, 3);
	for (i = 3; i < 6; i++)
		KUNIT_ASSERT_EQ(test, push(cq, i, 0, false), 0);

	/* Held as an mmap key would hold it. */
	old = vd_ring_mem_get(vd_cq_mem(cq));
	KUNIT_EXPECT_EQ(test, vd_cq_arm(cq, VIADUCT_ARM_NEXT, 0), 0);

	/* Too small for three unconsumed CQEs; nothing changes. */
	KUNIT_EXPECT_EQ(test, vd_cq_resize(cq, 2, &mem), -EINVAL);
	KUNIT_EXPECT_EQ(test, vd_cq_resize(cq, 0, &mem), -EINVAL);
	KUNIT_EXPECT_EQ(test, vd_cq_resize(cq, VD_MAX_CQE + 1, &mem), -EINVAL);
	KUNIT_EXPECT_PTR_EQ(test, cq->mem, old);
	KUNIT_EXPECT_EQ(test, vd_cq_entries(cq), 4U);

	KUNIT_ASSERT_EQ(test, vd_cq_resize(cq, 5, &mem), 0);
	KUNIT_EXPECT_PTR_NE(test, mem, old);
	KUNIT_EXPECT_EQ(test, vd_cq_entries(cq), 8U);
	nhdr = mem->va;
	ncqes = mem->va + VIADUCT_RING_HDR_SIZE;
	KUNIT_EXPECT_EQ(test, nhdr->entries, 8U);
	KUNIT_EXPECT_EQ(test, nhdr->producer, 3U);
	KUNIT_EXPECT_EQ(test, nhdr->consumer, 0U);
	KUNIT_EXPECT_EQ(test, nhdr->flags, 0U);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, ncqes[i].wr_id, 3ULL + i);

	/* The old ring is no longer written; the arm carried over. */
	KUNIT_EXPECT_EQ(test, push(cq, 6, 0, false), 0);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 1U);
	KUNIT_EXPECT_EQ(test, ((struct viaduct_ring *)old->va)->producer, 6U);
	KUNIT_EXPECT_EQ(test, nhdr->producer, 4U);
	KUNIT_EXPECT_EQ(test, ncqes[3].wr_id, 6ULL);

	/* Exactly as many unconsumed CQEs as the new size: fits. */
	smp_store_release(&nhdr->consumer, 0);
	KUNIT_ASSERT_EQ(test, vd_cq_resize(cq, 4, &mem2), 0);
	ncqes = mem2->va + VIADUCT_RING_HDR_SIZE;
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test, ncqes[i].wr_id, 3ULL + i);
	KUNIT_EXPECT_EQ(test, push(cq, 7, 0, false), -ENOSPC);
	KUNIT_EXPECT_EQ(test, vd_cq_resize(cq, 8, &mem), -EIO);

	vd_ring_mem_put(mem2);
	vd_ring_mem_put(mem);
	vd_ring_mem_put(old);
	vd_cq_put(cq);
}

static void cq_test_resize_garbage_consumer(struct kunit *test)
{
	struct vd_ring_mem *mem;
	struct vd_cq *cq = new_cq(test, 4);

	KUNIT_EXPECT_EQ(test, push(cq, 1, 0, false), 0);
	consume_to(cq, 2);
	KUNIT_EXPECT_EQ(test, vd_cq_resize(cq, 8, &mem), -EINVAL);
	KUNIT_EXPECT_EQ(test, vd_cq_entries(cq), 4U);
	vd_cq_put(cq);
}

static void cq_test_private(struct kunit *test)
{
	struct cq_fixture *f = test->priv;
	struct viaduct_async_event ev;
	struct vd_cq *cq;

	cq = vd_cq_create_private(2, QP_HANDLE, 42, f->aq, NULL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, cq);
	KUNIT_EXPECT_EQ(test, push(cq, 1, 0, false), 0);
	KUNIT_EXPECT_EQ(test, push(cq, 2, 0, false), 0);
	KUNIT_EXPECT_EQ(test, push(cq, 3, 0, false), -ENOSPC);
	KUNIT_ASSERT_EQ(test, vd_async_queue_pop(f->aq, &ev), 0);
	KUNIT_EXPECT_EQ(test, ev.type, VIADUCT_EVENT_CQ_ERROR);
	KUNIT_EXPECT_EQ(test, ev.handle, QP_HANDLE);
	KUNIT_EXPECT_EQ(test, ev.user_data, 42ULL);
	KUNIT_EXPECT_EQ(test, count_cq_events(test), 0U);
	vd_cq_put(cq);
}

static void cq_test_users(struct kunit *test)
{
	struct vd_cq *cq = new_cq(test, 1);

	KUNIT_EXPECT_EQ(test, vd_cq_attach(cq), 0);
	KUNIT_EXPECT_EQ(test, vd_cq_attach(cq), 0);
	KUNIT_EXPECT_EQ(test, vd_cq_try_destroy(cq), -EBUSY);
	vd_cq_detach(cq);
	KUNIT_EXPECT_EQ(test, vd_cq_try_destroy(cq), -EBUSY);
	vd_cq_detach(cq);
	KUNIT_EXPECT_EQ(test, vd_cq_try_destroy(cq), 0);
	KUNIT_EXPECT_EQ(test, vd_cq_try_destroy(cq), -ENOENT);
	KUNIT_EXPECT_EQ(test, vd_cq_attach(cq), -ENOENT);
	vd_cq_put(cq);
}

/* A ring owned by a CQ outlives it while someone (a mapping) holds it. */
static void cq_test_mem_outlives_cq(struct kunit *test)
{
	struct vd_cq *cq = new_cq(test, 4);
	struct vd_ring_mem *mem = vd_ring_mem_get(vd_cq_mem(cq));

	KUNIT_EXPECT_EQ(test, push(cq, 77, 0, false), 0);
	vd_cq_put(cq);
	KUNIT_EXPECT_EQ(test, kref_read(&mem->ref), 1U);
	KUNIT_EXPECT_EQ(test, ((struct viaduct_cqe *)(mem->va +
			VIADUCT_RING_HDR_SIZE))->wr_id, 77ULL);
	vd_ring_mem_put(mem);
}

static void cq_test_event_queue_bound(struct kunit *test)
{
	struct cq_fixture *f = test->priv;
	struct viaduct_async_event ev;
	u32 i;

	for (i = 0; i < VD_ASYNC_QUEUE_LEN; i++)
		KUNIT_ASSERT_EQ(test, vd_async_queue_push(f->aq, 2, i, i, 0), 0);
	/* Full: a new event is dropped and counted... */
	KUNIT_EXPECT_EQ(test, vd_async_queue_push(f->aq, 2, i, i, 0), -ENOSPC);
	KUNIT_EXPECT_EQ(test, vd_async_queue_dropped(f->aq), 1ULL);
	/* ...one equal to a queued event merges into it. */
	KUNIT_EXPECT_EQ(test, vd_async_queue_push(f->aq, 2, 5, 5, 0), 0);
	KUNIT_EXPECT_EQ(test, vd_async_queue_dropped(f->aq), 1ULL);

	for (i = 0; i < VD_ASYNC_QUEUE_LEN; i++) {
		KUNIT_ASSERT_EQ(test, vd_async_queue_pop(f->aq, &ev), 0);
		KUNIT_EXPECT_EQ(test, ev.handle, i);
		KUNIT_EXPECT_EQ(test, ev.user_data, (u64)i);
		KUNIT_EXPECT_EQ(test, ev.type, 2U);
		KUNIT_EXPECT_EQ(test, ev.reserved, 0U);
	}
	KUNIT_EXPECT_EQ(test, vd_async_queue_pop(f->aq, &ev), -EAGAIN);
	/* Room again. */
	KUNIT_EXPECT_EQ(test, vd_async_queue_push(f->aq, 3, 1, 1, 0), 0);
	KUNIT_EXPECT_EQ(test, vd_async_queue_pop(f->aq, &ev), 0);
	KUNIT_EXPECT_EQ(test, ev.type, 3U);
}

/* A destroyed object's unread events go; the others keep their order. */
static void cq_test_event_queue_forget(struct kunit *test)
{
	static const u32 handles[] = { 7, 3, 7, 0, 9, 7 };
	struct cq_fixture *f = test->priv;
	struct viaduct_async_event ev;
	u32 i;

	for (i = 0; i < ARRAY_SIZE(handles); i++)
		KUNIT_ASSERT_EQ(test, vd_async_queue_push(f->aq, 2, handles[i], i, 0), 0);
	/* a record already read is not touched: the head moved past it */
	KUNIT_ASSERT_EQ(test, vd_async_queue_pop(f->aq, &ev), 0);
	KUNIT_EXPECT_EQ(test, ev.handle, 7U);
	vd_async_queue_forget(f->aq, 7);
	vd_async_queue_forget(f->aq, 42);	/* none: nothing changes */
	for (i = 1; i < ARRAY_SIZE(handles); i++) {
		if (handles[i] == 7)
			continue;
		KUNIT_ASSERT_EQ(test, vd_async_queue_pop(f->aq, &ev), 0);
		KUNIT_EXPECT_EQ(test, ev.handle, handles[i]);
		KUNIT_EXPECT_EQ(test, ev.user_data, (u64)i);
	}
	KUNIT_EXPECT_EQ(test, vd_async_queue_pop(f->aq, &ev), -EAGAIN);

	/* across the ring's wrap, with the queue full */
	for (i = 0; i < VD_ASYNC_QUEUE_LEN; i++)
		KUNIT_ASSERT_EQ(test, vd_async_queue_push(f->aq, 2, 1 + i % 2, i, 0), 0);
	vd_async_queue_forget(f->aq, 2);
	/* room for half a queue again, after the survivors */
	for (i = 0; i < VD_ASYNC_QUEUE_LEN / 2; i++)
		KUNIT_ASSERT_EQ(test, vd_async_queue_push(f->aq, 3, 5, i, 0), 0);
	KUNIT_EXPECT_EQ(test, vd_async_queue_push(f->aq, 3, 6, 0, 0), -ENOSPC);
	for (i = 0; i < VD_ASYNC_QUEUE_LEN; i += 2) {
		KUNIT_ASSERT_EQ(test, vd_async_queue_pop(f->aq, &ev), 0);
		KUNIT_EXPECT_EQ(test, ev.handle, 1U);
		KUNIT_EXPECT_EQ(test, ev.user_data, (u64)i);
	}
	for (i = 0; i < VD_ASYNC_QUEUE_LEN / 2; i++) {
		KUNIT_ASSERT_EQ(test, vd_async_queue_pop(f->aq, &ev), 0);
		KUNIT_EXPECT_EQ(test, ev.handle, 5U);
		KUNIT_EXPECT_EQ(test, ev.user_data, (u64)i);
	}
	KUNIT_EXPECT_EQ(test, vd_async_queue_pop(f->aq, &ev), -EAGAIN);
}

static void cq_test_channel_bound(struct kunit *test)
{
	struct cq_fixture *f = test->priv;
	struct viaduct_cq_event ev;
	u32 i;

	for (i = 0; i < VD_COMP_CHANNEL_LEN; i++)
		KUNIT_ASSERT_EQ(test, vd_comp_channel_push(f->ch, i + 1, i), 0);
	KUNIT_EXPECT_EQ(test, vd_comp_channel_push(f->ch, 1, 0), 0);
	KUNIT_EXPECT_EQ(test, vd_comp_channel_push(f->ch, 1, 1), -ENOSPC);
	KUNIT_EXPECT_EQ(test, vd_comp_channel_dropped(f->ch), 1ULL);
	for (i = 0; i < VD_COMP_CHANNEL_LEN; i++) {
		KUNIT_ASSERT_EQ(test, vd_comp_channel_pop(f->ch, &ev), 0);
		KUNIT_EXPECT_EQ(test, ev.cq_handle, i + 1);
	}
	KUNIT_EXPECT_EQ(test, vd_comp_channel_pop(f->ch, &ev), -EAGAIN);
}

#define STRESS_CQES	20000U

struct stress_producer {
	struct vd_cq *cq;
	struct completion done;
	u32 failed_at;		/* 0: no push failed */
};

/*
 * Pushes STRESS_CQES CQEs in order, waiting for room as a QP with a
 * correctly sized CQ never has to, and pausing now and then so that the
 * consumer finds the ring empty and sleeps on the channel.
 */
static int stress_produce(void *arg)
{
	struct stress_producer *sp = arg;
	struct viaduct_ring *hdr = hdr_of(sp->cq);
	u32 i;

	for (i = 1; i <= STRESS_CQES; i++) {
		struct viaduct_cqe cqe = { .wr_id = i };

		/* Wait for room; vd_cq_push() checks again itself. */
		while (i - 1 - smp_load_acquire(&hdr->consumer) >=
		       sp->cq->entries)
			cond_resched();
		if (vd_cq_push(sp->cq, &cqe, false)) {
			sp->failed_at = i;
			break;
		}
		if (!(i % 512))
			usleep_range(200, 400);
	}
	complete(&sp->done);
	return 0;
}

/* Polls everything there is; returns how many CQEs it took. */
static u32 stress_poll(struct kunit *test, struct vd_cq *cq, u32 *next)
{
	struct viaduct_ring *hdr = hdr_of(cq);
	u32 cons = hdr->consumer, prod, n = 0;

	/* Pairs with the producer's store-release of @producer. */
	prod = smp_load_acquire(&hdr->producer);
	for (; cons != prod; cons++, n++) {
		u64 wr_id = cqe_at(cq, cons)->wr_id;

		if (wr_id != *next)
			KUNIT_FAIL(test, "CQE %u: wr_id %llu, expected %u",
				   cons, wr_id, *next);
		(*next)++;
	}
	consume_to(cq, cons);
	return n;
}

/*
 * A producer thread against the test as consumer, with the loop a library
 * uses to sleep: poll until empty, arm, poll again, then wait for the
 * channel. Every CQE arrives once and in order, and no wait misses a
 * completion (a lost wakeup shows up as a timeout).
 */
static void cq_test_concurrent(struct kunit *test)
{
	struct cq_fixture *f = test->priv;
	struct stress_producer sp = { };
	struct task_struct *task;
	struct viaduct_cq_event ev;
	unsigned long deadline;
	u32 next = 1, sleeps = 0;

	sp.cq = new_cq(test, 64);
	init_completion(&sp.done);
	task = kthread_run(stress_produce, &sp, "vd_cq_stress");
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, task);

	while (next <= STRESS_CQES) {
		if (stress_poll(test, sp.cq, &next))
			continue;
		KUNIT_ASSERT_EQ(test, vd_cq_arm(sp.cq, VIADUCT_ARM_NEXT, 0), 0);
		if (stress_poll(test, sp.cq, &next))
			continue;	/* the arm stays pending: harmless */
		if (next > STRESS_CQES)
			break;
		sleeps++;
		deadline = jiffies + 5 * HZ;
		while (vd_comp_channel_pop(f->ch, &ev)) {
			if (time_after(jiffies, deadline)) {
				KUNIT_FAIL(test, "lost wakeup at wr_id %u", next);
				goto out;
			}
			usleep_range(50, 100);
		}
	}
out:
	wait_for_completion(&sp.done);
	KUNIT_EXPECT_EQ(test, sp.failed_at, 0U);
	KUNIT_EXPECT_EQ(test, next, STRESS_CQES + 1);
	KUNIT_EXPECT_EQ(test, hdr_of(sp.cq)->flags, 0U);
	kunit_info(test, "%u CQEs, consumer slept %u times\n", next - 1, sleeps);
	vd_cq_put(sp.cq);
}

static void cq_test_fdget_rejects(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, PTR_ERR(vd_comp_channel_fdget(-1)), -EBADF);
}

static struct kunit_case cq_test_cases[] = {
	KUNIT_CASE(cq_test_sizes),
	KUNIT_CASE(cq_test_overflow),
	KUNIT_CASE(cq_test_consumer_frees_space),
	KUNIT_CASE(cq_test_garbage_consumer),
	KUNIT_CASE(cq_test_arm_next),
	KUNIT_CASE(cq_test_arm_solicited),
	KUNIT_CASE(cq_test_arm_threshold),
	KUNIT_CASE(cq_test_overflow_fires_arm),
	KUNIT_CASE(cq_test_resize),
	KUNIT_CASE(cq_test_resize_garbage_consumer),
	KUNIT_CASE(cq_test_private),
	KUNIT_CASE(cq_test_users),
	KUNIT_CASE(cq_test_mem_outlives_cq),
	KUNIT_CASE(cq_test_event_queue_bound),
	KUNIT_CASE(cq_test_event_queue_forget),
	KUNIT_CASE(cq_test_channel_bound),
	KUNIT_CASE(cq_test_fdget_rejects),
	KUNIT_CASE(cq_test_concurrent),
	{}
};

static struct kunit_suite cq_test_suite = {
	.name = "viaduct_cq",
	.init = cq_test_init,
	.exit = cq_test_exit,
	.test_cases = cq_test_cases,
};

kunit_test_suite(cq_test_suite);
