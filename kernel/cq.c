// SPDX-License-Identifier: GPL-2.0
/*
 * Completion queues. See cq.h for the rules and Documentation/rings.rst for
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

/**
 * vd_cq_round_entries() - the ring size of a requested CQ size
 * @requested: the entries the user asked for
 * @entries: set to roundup_pow_of_two(@requested)
 *
 * Context: Any context.
 * Return: 0, or -EINVAL for 0 or more than VD_MAX_CQE entries.
 */
int vd_cq_round_entries(u32 requested, u32 *entries)
{
	if (!requested || requested > VD_MAX_CQE)
		return -EINVAL;
	*entries = roundup_pow_of_two(requested);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_round_entries);

/**
 * vd_cq_ring_size() - bytes of ring memory for a CQ
 * @entries: a power of two from vd_cq_round_entries()
 *
 * Return: the header (VIADUCT_RING_HDR_SIZE) plus @entries CQEs.
 */
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
				 struct vd_comp_channel *ch,
				 struct vd_dev_counts *counts)
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
	cq->counts = vd_dev_counts_get(counts);
	vd_stat_inc(cqs);
	vd_dev_count_inc(cq->counts, VD_DEV_CQS);
	return cq;
}

/**
 * vd_cq_create() - a new completion queue
 * @entries: the CQEs asked for; the ring holds roundup_pow_of_two(@entries)
 * @handle: the handle its events report
 * @user_data: the user data its events report
 * @aq: where an overflow is reported, or NULL; the CQ takes a reference
 * @ch: where armed completions are reported, or NULL; the CQ takes a
 *      reference
 * @counts: the device counts that count it, or NULL; the CQ takes a
 *          reference
 *
 * Context: Process context.
 * Return: the CQ with one reference (the creator's) and no user, or
 * ERR_PTR(-EINVAL) for 0 or more than VD_MAX_CQE entries, ERR_PTR(-ENOMEM).
 */
struct vd_cq *vd_cq_create(u32 entries, u32 handle, u64 user_data,
			   struct vd_async_queue *aq,
			   struct vd_comp_channel *ch,
			   struct vd_dev_counts *counts)
{
	return vd_cq_alloc(entries, handle, user_data, aq, ch, counts);
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_create);

/**
 * vd_cq_create_private() - the private completion ring of a QP
 * @entries: the CQEs asked for, as for vd_cq_create()
 * @qp_handle: the QP's handle, which its events report
 * @qp_user_data: the QP's user data, which its events report
 * @aq: where an overflow raises VIADUCT_EVENT_CQ_ERROR for the QP, or NULL
 * @counts: as for vd_cq_create()
 *
 * For a QP whose send or receive queue has no CQ: the same object as
 * vd_cq_create() gives, without a channel. It needs no user count.
 *
 * Context: Process context.
 * Return: as vd_cq_create().
 */
struct vd_cq *vd_cq_create_private(u32 entries, u32 qp_handle,
				   u64 qp_user_data,
				   struct vd_async_queue *aq,
				   struct vd_dev_counts *counts)
{
	/* The same ring; only the names its events carry differ. */
	return vd_cq_alloc(entries, qp_handle, qp_user_data, aq, NULL, counts);
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
	vd_dev_count_dec(cq->counts, VD_DEV_CQS);
	vd_dev_counts_put(cq->counts);
	kfree(cq);
}

/**
 * vd_cq_put() - drop a reference
 * @cq: the CQ, or NULL (a no-op)
 *
 * The last put frees the CQ and drops its ring, channel and queue
 * references.
 *
 * Context: The rules of vd_ring_mem_put(): may sleep, so never with
 * interrupts disabled or under a plain spinlock.
 */
void vd_cq_put(struct vd_cq *cq)
{
	if (cq)
		kref_put(&cq->ref, vd_cq_free);
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_put);

/**
 * vd_cq_attach() - count one more QP completing into the CQ
 * @cq: the CQ, referenced by the caller
 *
 * Context: Any context.
 * Return: 0, or -ENOENT once vd_cq_try_destroy() succeeded.
 */
int vd_cq_attach(struct vd_cq *cq)
{
	return atomic_inc_unless_negative(&cq->users) ? 0 : -ENOENT;
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_attach);

/**
 * vd_cq_detach() - uncount a QP counted by vd_cq_attach()
 * @cq: the CQ, referenced by the caller
 *
 * Context: Any context.
 */
void vd_cq_detach(struct vd_cq *cq)
{
	WARN_ON_ONCE(atomic_dec_return(&cq->users) < 0);
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_detach);

/**
 * vd_cq_try_destroy() - mark the CQ destroyed unless QPs are attached
 * @cq: the CQ, referenced by the caller
 *
 * On success no QP can attach any more; the caller then drops its
 * reference.
 *
 * Context: Any context.
 * Return: 0, -EBUSY while QPs are attached, -ENOENT if it was already
 * destroyed.
 */
int vd_cq_try_destroy(struct vd_cq *cq)
{
	int old = atomic_cmpxchg(&cq->users, 0, VD_CQ_DESTROYED);

	if (old == VD_CQ_DESTROYED)
		return -ENOENT;
	return old ? -EBUSY : 0;
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_try_destroy);

/**
 * vd_cq_mem() - the current ring memory to mmap
 * @cq: the CQ
 *
 * The header is at offset 0, the CQEs at VIADUCT_RING_HDR_SIZE. Only
 * vd_cq_resize() changes the ring.
 *
 * Context: The caller holds a CQ reference and keeps vd_cq_resize() from
 * running (it serialises both).
 * Return: the ring, borrowed: valid as long as the context rule holds; take
 * vd_ring_mem_get() to keep it longer, e.g. for an mmap key.
 */
struct vd_ring_mem *vd_cq_mem(struct vd_cq *cq)
{
	return cq->mem;
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_mem);

/**
 * vd_cq_entries() - the current number of entries
 * @cq: the CQ
 *
 * Context: Any context; read without the lock.
 * Return: the ring's entries, which change with a resize.
 */
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
	cq->threshold = 0;
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

/*
 * Whether @cqe, just written to an armed CQ that now holds @unread
 * unconsumed CQEs, fires the arm (the rules at vd_cq_arm()).
 */
static bool vd_cq_fires(const struct vd_cq *cq, const struct viaduct_cqe *cqe,
			bool solicited, u32 unread)
{
	bool sol = solicited || (cqe->flags & VIADUCT_WC_F_SOLICITED);
	bool bad = cqe->status != VIADUCT_WC_SUCCESS;

	lockdep_assert_held(&cq->lock);
	if (cq->threshold)
		return unread >= cq->threshold || bad ||
		       ((cq->armed & VIADUCT_ARM_SOLICITED) && sol);
	if (cq->armed & VIADUCT_ARM_NEXT)
		return true;
	return (cq->armed & VIADUCT_ARM_SOLICITED) && (sol || bad);
}

/**
 * vd_cq_push() - write one CQE and publish it
 * @cq: the CQ
 * @cqe: the completion
 * @solicited: the completion is solicited (besides VIADUCT_WC_F_SOLICITED
 *             in @cqe)
 *
 * A full ring is never overwritten. The first failure sets
 * VIADUCT_RING_F_OVERFLOW in the ring header, puts the CQ in error for
 * good, counts cq_overflows, raises VIADUCT_EVENT_CQ_ERROR once, and fires
 * a pending arm so that no waiter sleeps on a dead CQ. The caller moves the
 * QP whose CQE was refused to Error. A written CQE fires the arm as
 * vd_cq_arm() describes.
 *
 * Context: Any context; takes cq->lock with interrupts disabled and never
 * sleeps.
 * Return: 0, or -ENOSPC if the CQE was not written: the ring is full (or
 * the user's consumer index is out of range), or the CQ is in error since
 * an earlier overflow.
 */
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
	 * was in the ring before the arm (it does not fire it, or was
	 * counted by it) or comes after it (it is checked here).
	 */
	if (cq->armed && vd_cq_fires(cq, cqe, solicited, cq->prod - cons))
		vd_cq_fire(cq);
	ret = 0;
out:
	spin_unlock_irqrestore(&cq->lock, flags);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_push);

/*
 * The threshold of a pending arm and a new one (@arm_flags, @threshold)
 * together: the arm fires when either would. A plain NEXT (any CQE) covers
 * everything; a plain SOLICITED arm joins a count, whose rules fire on a
 * solicited CQE too once the flags add up; two counts keep the lower.
 */
static u32 vd_cq_merge_threshold(const struct vd_cq *cq, u32 arm_flags,
				 u32 threshold)
{
	lockdep_assert_held(&cq->lock);
	if (!cq->armed)
		return threshold;
	if (((cq->armed & VIADUCT_ARM_NEXT) && !cq->threshold) ||
	    ((arm_flags & VIADUCT_ARM_NEXT) && !threshold))
		return 0;
	if (!cq->threshold || !threshold)
		return max(cq->threshold, threshold);
	return min(cq->threshold, threshold);
}

/**
 * vd_cq_arm() - one-shot arming, or moderated by a count of unread CQEs
 * @cq: the CQ
 * @arm_flags: VIADUCT_ARM_NEXT and/or VIADUCT_ARM_SOLICITED
 * @threshold: 0, or the unread CQEs that fire the arm (1 .. entries)
 *
 * Without a threshold, the next CQE pushed after the arm fires it if the
 * CQ is armed NEXT, or armed SOLICITED and the CQE is solicited or not
 * successful; CQEs pushed before the arm never fire it.
 *
 * With a threshold, the arm fires once the ring holds at least
 * @threshold CQEs the user has not consumed (the consumer index in the
 * ring header), counting those already there: an arm that finds enough
 * fires at once. A CQE pushed after it also fires it if it is not
 * successful, or solicited with VIADUCT_ARM_SOLICITED.
 *
 * Firing disarms and queues one struct viaduct_cq_event on the channel.
 * Arming again before a fire makes one arm that fires when either would
 * (the flags add up; see vd_cq_merge_threshold()); it still fires once.
 * A consumer index out of range fires a threshold arm at once: the next
 * push puts the CQ in error anyway.
 *
 * Context: Any context.
 * Return: 0; -EINVAL for no or unknown flags or a threshold above the
 * CQ's entries; -EIO on a CQ in error.
 */
int vd_cq_arm(struct vd_cq *cq, u32 arm_flags, u32 threshold)
{
	unsigned long flags;
	u32 cons;
	int ret = 0;

	if (!arm_flags || (arm_flags & ~VD_CQ_ARM_ALL))
		return -EINVAL;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->error) {
		ret = -EIO;
		goto out;
	}
	if (threshold > cq->entries) {
		ret = -EINVAL;
		goto out;
	}
	if (threshold &&
	    (vd_ring_load_user_consumer(&cq->hdr->consumer, cq->prod,
					cq->entries, &cons) ||
	     vd_ring_used(cq->prod, cons) >= threshold)) {
		vd_cq_fire(cq);
		goto out;
	}
	cq->threshold = vd_cq_merge_threshold(cq, arm_flags, threshold);
	cq->armed |= arm_flags;
out:
	spin_unlock_irqrestore(&cq->lock, flags);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_arm);

/*
 * CQEs moved per step of a resize outside the lock, and the most moved
 * with the lock held (interrupts off): 2 KiB, not the 2 MiB of a full
 * ring of VD_MAX_CQE.
 */
#define VD_CQ_RESIZE_BATCH	256
#define VD_CQ_RESIZE_LOCKED	64

/* Copies CQEs [@from, @to) of @cq's ring to the start of @cqes + @from - @base. */
static void vd_cq_copy_out(const struct vd_cq *cq, struct viaduct_cqe *cqes,
			   u32 base, u32 from, u32 to)
{
	for (; from != to; from++)
		memcpy(&cqes[from - base],
		       vd_ring_slot_ptr(cq->cqes, from, cq->entries,
					sizeof(*cqes)),
		       sizeof(*cqes));
}

/*
 * Under @cq->lock: -EIO if the CQ is in error, -EBUSY if the consumer
 * index moved from @cons (the user polled during the resize), -EINVAL if
 * the unconsumed CQEs do not fit @entries.
 */
static int vd_cq_resize_check(struct vd_cq *cq, u32 cons, u32 entries)
{
	u32 now;

	lockdep_assert_held(&cq->lock);
	if (cq->error)
		return -EIO;
	if (vd_ring_load_user_consumer(&cq->hdr->consumer, cq->prod,
				       cq->entries, &now))
		return -EINVAL;
	if (now != cons)
		return -EBUSY;
	return vd_ring_used(cq->prod, cons) > entries ? -EINVAL : 0;
}

/**
 * vd_cq_resize() - move the CQ to a ring of another size
 * @cq: the CQ
 * @requested: the CQEs asked for; the new ring holds
 *             roundup_pow_of_two(@requested)
 * @newmem: set to the new ring, with a reference for the caller
 *
 * Moves the unconsumed CQEs, in order, to the start of the new ring and
 * switches to it: the new ring's producer index is the number moved and its
 * consumer index 0. The old ring is never written again and lives on while
 * mapped.
 *
 * Completions keep arriving meanwhile: the CQEs are moved in steps without
 * the lock (a written CQE never changes, and producers write only past
 * it), and the lock is held with interrupts off only for the last few
 * (VD_CQ_RESIZE_LOCKED) and the switch.
 *
 * Context: Process context; sleeps. The caller makes sure userspace does
 * not poll the CQ during the call (the library serialises resize against
 * polling) and that no vd_cq_mem() user runs.
 * Return: 0; -EINVAL for a bad size, for fewer entries than unconsumed
 * CQEs or for a consumer index out of range; -EBUSY if the consumer index
 * moved during the call; -EIO if the CQ is in error; -ENOMEM. On error the
 * CQ is unchanged.
 */
int vd_cq_resize(struct vd_cq *cq, u32 requested,
		 struct vd_ring_mem **newmem)
{
	struct vd_ring_mem *mem, *old;
	struct viaduct_cqe *cqes;
	u32 entries, cons, moved, prod, step;
	unsigned long flags;
	int ret;

	ret = vd_cq_round_entries(requested, &entries);
	if (ret)
		return ret;
	mem = vd_cq_ring_alloc(entries);
	if (IS_ERR(mem))
		return PTR_ERR(mem);
	cqes = mem->va + VIADUCT_RING_HDR_SIZE;

	spin_lock_irqsave(&cq->lock, flags);
	ret = cq->error ? -EIO :
	      vd_ring_load_user_consumer(&cq->hdr->consumer, cq->prod,
					 cq->entries, &cons);
	moved = cons;
	/*
	 * The new ring is not mapped yet: plain writes suffice, and the
	 * mmap() that exposes it orders them before any user access.
	 */
	while (!ret && !(ret = vd_cq_resize_check(cq, cons, entries))) {
		prod = cq->prod;
		if (prod - moved <= VD_CQ_RESIZE_LOCKED)
			break;
		spin_unlock_irqrestore(&cq->lock, flags);
		/* CQEs below @prod were published under the lock we held */
		while (moved != prod) {
			step = min_t(u32, prod - moved, VD_CQ_RESIZE_BATCH);
			vd_cq_copy_out(cq, cqes, cons, moved, moved + step);
			moved += step;
			cond_resched();
		}
		spin_lock_irqsave(&cq->lock, flags);
	}
	if (ret)
		goto unlock;
	vd_cq_copy_out(cq, cqes, cons, moved, cq->prod);
	((struct viaduct_ring *)mem->va)->producer = cq->prod - cons;

	old = cq->mem;
	vd_cq_set_ring(cq, mem, entries);
	cq->prod -= cons;
	mem = old;	/* the CQ's reference on the old ring, dropped below */
	*newmem = vd_ring_mem_get(cq->mem);
	vd_dbg_cq(cq, "resized to %u entries, %u CQEs moved\n", entries,
		  cq->prod);
unlock:
	spin_unlock_irqrestore(&cq->lock, flags);
	/* Either the unused new ring or the CQ's reference on the old one. */
	vd_ring_mem_put(mem);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(vd_cq_resize);
