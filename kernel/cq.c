// SPDX-License-Identifier: GPL-2.0
/*
 * Completion queues. See cq.h for the API and Documentation/rings.rst for
 * the protocol with userspace.
 */
#include <linux/bug.h>
#include <linux/err.h>
#include <linux/log2.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <kunit/visibility.h>

#include "cq.h"
#include "event.h"
#include "ring.h"
#include "stats.h"
#include "viaduct.h"

#define VD_CQ_DESTROYED		(-1)
#define VD_CQ_ARM_ALL		(VIADUCT_ARM_NEXT | VIADUCT_ARM_SOLICITED)

static_assert(sizeof(struct viaduct_ring) <= VIADUCT_RING_HDR_SIZE);
static_assert(VIADUCT_RING_HDR_SIZE % sizeof(struct viaduct_cqe) == 0);

int vd_cq_round_entries(u32 requested, u32 *entries)
{
	if (!requested || requested > VD_MAX_CQE)
		return -EINVAL;
	*entries = roundup_pow_of_two(requested);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_round_entries);

size_t vd_cq_ring_size(u32 entries)
{
	return VIADUCT_RING_HDR_SIZE +
	       (size_t)entries * sizeof(struct viaduct_cqe);
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_ring_size);

/* A fresh, unmapped ring: nobody else can see the header yet. */
static struct vd_ring_mem *vd_cq_ring_alloc(u32 entries)
{
	struct vd_ring_mem *mem;
	struct viaduct_ring *hdr;

	mem = vd_ring_mem_alloc(vd_cq_ring_size(entries));
	if (IS_ERR(mem))
		return mem;
	hdr = mem->va;
	hdr->entries = entries;
	return mem;
}

static void vd_cq_set_ring(struct vd_cq *cq, struct vd_ring_mem *mem,
			   u32 entries)
{
	cq->mem = mem;
	cq->hdr = mem->va;
	cq->cqes = mem->va + VIADUCT_RING_HDR_SIZE;
	/* Read locklessly by vd_cq_entries(). */
	WRITE_ONCE(cq->entries, entries);
}

static struct vd_cq *vd_cq_alloc(u32 requested, u32 handle, u64 user_data,
				 struct vd_async_queue *aq,
				 struct vd_comp_channel *ch)
{
	struct vd_ring_mem *mem;
	struct vd_cq *cq;
	u32 entries;
	int ret;

	ret = vd_cq_round_entries(requested, &entries);
	if (ret)
		return ERR_PTR(ret);

	cq = kzalloc(sizeof(*cq), GFP_KERNEL_ACCOUNT);
	if (!cq)
		return ERR_PTR(-ENOMEM);
	mem = vd_cq_ring_alloc(entries);
	if (IS_ERR(mem)) {
		kfree(cq);
		return ERR_CAST(mem);
	}

	kref_init(&cq->ref);
	atomic_set(&cq->users, 0);
	spin_lock_init(&cq->lock);
	vd_cq_set_ring(cq, mem, entries);
	cq->handle = handle;
	cq->user_data = user_data;
	cq->aq = aq ? vd_async_queue_get(aq) : NULL;
	cq->ch = ch ? vd_comp_channel_get(ch) : NULL;
	vd_stat_inc(cqs);
	return cq;
}

struct vd_cq *vd_cq_create(u32 entries, u32 handle, u64 user_data,
			   struct vd_async_queue *aq,
			   struct vd_comp_channel *ch)
{
	return vd_cq_alloc(entries, handle, user_data, aq, ch);
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_create);

struct vd_cq *vd_cq_create_private(u32 entries, u32 qp_handle,
				   u64 qp_user_data,
				   struct vd_async_queue *aq)
{
	/* The same ring; only the names its events carry differ. */
	return vd_cq_alloc(entries, qp_handle, qp_user_data, aq, NULL);
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_create_private);

static void vd_cq_free(struct kref *ref)
{
	struct vd_cq *cq = container_of(ref, struct vd_cq, ref);

	/* A CQ freed while counted as used means a QP leaked its count. */
	WARN_ON_ONCE(atomic_read(&cq->users) > 0);
	vd_ring_mem_put(cq->mem);
	vd_comp_channel_put(cq->ch);
	vd_async_queue_put(cq->aq);
	vd_stat_dec(cqs);
	kfree(cq);
}

void vd_cq_put(struct vd_cq *cq)
{
	if (cq)
		kref_put(&cq->ref, vd_cq_free);
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_put);

int vd_cq_attach(struct vd_cq *cq)
{
	return atomic_inc_unless_negative(&cq->users) ? 0 : -ENOENT;
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_attach);

void vd_cq_detach(struct vd_cq *cq)
{
	WARN_ON_ONCE(atomic_dec_return(&cq->users) < 0);
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_detach);

int vd_cq_try_destroy(struct vd_cq *cq)
{
	int old = atomic_cmpxchg(&cq->users, 0, VD_CQ_DESTROYED);

	if (old == VD_CQ_DESTROYED)
		return -ENOENT;
	return old ? -EBUSY : 0;
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_try_destroy);

/* Only vd_cq_resize() changes @mem, and the caller excludes it. */
struct vd_ring_mem *vd_cq_mem(struct vd_cq *cq)
{
	return cq->mem;
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_mem);

u32 vd_cq_entries(struct vd_cq *cq)
{
	return READ_ONCE(cq->entries);
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_entries);

/* Fires the pending arm: disarms and queues one channel event. */
static void vd_cq_fire(struct vd_cq *cq)
{
	lockdep_assert_held(&cq->lock);
	cq->armed = 0;
	if (cq->ch)
		vd_comp_channel_push(cq->ch, cq->handle, cq->user_data);
}

/*
 * The first refused CQE puts the CQ in error for good. The flag is
 * published with release semantics after every CQE that made it, so a
 * consumer that sees it has seen them all.
 */
static void vd_cq_overflow(struct vd_cq *cq)
{
	lockdep_assert_held(&cq->lock);
	cq->error = true;
	cq->flags |= VIADUCT_RING_F_OVERFLOW;
	/* Orders every published CQE before the flag. */
	smp_store_release(&cq->hdr->flags, cq->flags);
	vd_stat_inc(cq_overflows);
	vd_dbg_cq(cq, "overflow at producer %u (%u entries)\n", cq->prod,
		  cq->entries);
	if (cq->aq)
		vd_async_queue_push(cq->aq, VIADUCT_EVENT_CQ_ERROR, cq->handle,
				    cq->user_data, 0);
	/* A thread sleeping on the channel must wake up to see the error. */
	if (cq->armed)
		vd_cq_fire(cq);
}

int vd_cq_push(struct vd_cq *cq, const struct viaduct_cqe *cqe,
	       bool solicited)
{
	unsigned long flags;
	u32 cons;
	int ret;

	spin_lock_irqsave(&cq->lock, flags);
	if (unlikely(cq->error)) {
		ret = -ENOSPC;
		goto out;
	}

	/*
	 * The acquire pairs with the consumer's store-release of @consumer
	 * after it read the CQEs, so its reads of the slot we reuse happened
	 * before our write. A consumer index out of range is treated like a
	 * full ring: the CQ cannot be trusted any more.
	 */
	ret = vd_ring_load_user_consumer(&cq->hdr->consumer, cq->prod,
					 cq->entries, &cons);
	if (unlikely(ret || vd_ring_full(cq->prod, cons, cq->entries))) {
		vd_cq_overflow(cq);
		ret = -ENOSPC;
		goto out;
	}

	memcpy(vd_ring_slot_ptr(cq->cqes, cq->prod, cq->entries,
				sizeof(*cqe)), cqe, sizeof(*cqe));
	cq->prod++;
	/* The CQE is visible before the index that covers it. */
	vd_ring_publish(&cq->hdr->producer, cq->prod);
	vd_stat_inc(cqes_written);

	/*
	 * Arming and pushing are serialised by cq->lock, so this CQE either
	 * was in the ring before the arm (it does not fire it) or comes
	 * after it (it is checked here).
	 */
	if (cq->armed & VIADUCT_ARM_NEXT)
		vd_cq_fire(cq);
	else if ((cq->armed & VIADUCT_ARM_SOLICITED) &&
		 (solicited || (cqe->flags & VIADUCT_WC_F_SOLICITED) ||
		  cqe->status != VIADUCT_WC_SUCCESS))
		vd_cq_fire(cq);
	ret = 0;
out:
	spin_unlock_irqrestore(&cq->lock, flags);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_push);

int vd_cq_arm(struct vd_cq *cq, u32 arm_flags)
{
	unsigned long flags;
	int ret = 0;

	if (!arm_flags || (arm_flags & ~VD_CQ_ARM_ALL))
		return -EINVAL;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->error)
		ret = -EIO;
	else
		cq->armed |= arm_flags;
	spin_unlock_irqrestore(&cq->lock, flags);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_arm);

int vd_cq_resize(struct vd_cq *cq, u32 requested,
		 struct vd_ring_mem **newmem)
{
	struct vd_ring_mem *mem, *old;
	struct viaduct_cqe *cqes;
	unsigned long flags;
	u32 entries, cons, used, i;
	int ret;

	ret = vd_cq_round_entries(requested, &entries);
	if (ret)
		return ret;
	mem = vd_cq_ring_alloc(entries);
	if (IS_ERR(mem))
		return PTR_ERR(mem);
	cqes = mem->va + VIADUCT_RING_HDR_SIZE;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->error) {
		ret = -EIO;
		goto unlock;
	}
	ret = vd_ring_load_user_consumer(&cq->hdr->consumer, cq->prod,
					 cq->entries, &cons);
	if (ret)
		goto unlock;
	used = vd_ring_used(cq->prod, cons);
	if (used > entries) {
		ret = -EINVAL;
		goto unlock;
	}

	/*
	 * The new ring is not mapped yet: plain writes suffice, and the
	 * mmap() that exposes it orders them before any user access.
	 */
	for (i = 0; i < used; i++)
		memcpy(&cqes[i], vd_ring_slot_ptr(cq->cqes, cons + i,
						  cq->entries, sizeof(*cqes)),
		       sizeof(*cqes));
	((struct viaduct_ring *)mem->va)->producer = used;

	old = cq->mem;
	vd_cq_set_ring(cq, mem, entries);
	cq->prod = used;
	mem = old;	/* the CQ's reference on the old ring, dropped below */
	*newmem = vd_ring_mem_get(cq->mem);
	vd_dbg_cq(cq, "resized to %u entries, %u CQEs moved\n", entries, used);
unlock:
	spin_unlock_irqrestore(&cq->lock, flags);
	/* Either the unused new ring or the CQ's reference on the old one. */
	vd_ring_mem_put(mem);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_resize);
