// SPDX-License-Identifier: GPL-2.0
/*
 * Shared receive queues: the object, its mapped ring, and the intake of
 * its WQEs for the QPs that receive from it (copy first, then validate, as
 * for a QP's own rings). srq.h has the locking, Documentation/qp.rst the
 * semantics; each function has kernel-doc at its definition.
 */
#include <linux/err.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "event.h"
#include "pd.h"
#include "qp.h"
#include "ring.h"
#include "srq.h"
#include "stats.h"
#include "viaduct.h"

static_assert(sizeof(struct viaduct_srq_ring) == VIADUCT_RING_HDR_SIZE);

#define VD_SRQ_DESTROYED	(-1)

/* struct viaduct_create_srq -> depth, slot size and limits, or -EINVAL */
static int srq_caps(const struct viaduct_create_srq *a, u32 *depth,
		    u32 *wqe_size, struct vd_wqe_limits *lim)
{
	const u32 rqe = sizeof(struct viaduct_rqe);
	const u32 sge = sizeof(struct viaduct_sge);

	if (a->flags || !a->depth || a->depth > VD_MAX_QP_WR ||
	    a->max_sge > VD_MAX_SGE || a->max_msg_size > VD_MAX_MSG_SIZE)
		return -EINVAL;
	*depth = roundup_pow_of_two(a->depth);
	*wqe_size = max_t(u32, VD_QP_MIN_WQE_SIZE,
			  roundup_pow_of_two(rqe + a->max_sge * sge));
	lim->max_sge = min(VD_MAX_SGE, (*wqe_size - rqe) / sge);
	lim->max_inline = 0;
	lim->max_msg_size = a->max_msg_size ? a->max_msg_size :
			    (u32)VD_MAX_MSG_SIZE;
	return 0;
}

static void vd_srq_free(struct kref *ref)
{
	struct vd_srq *srq = container_of(ref, struct vd_srq, ref);

	/* an SRQ freed while counted as used means a QP leaked its count */
	WARN_ON_ONCE(atomic_read(&srq->users) > 0);
	vd_ring_mem_put(srq->mem);
	vd_dev_count_dec(vd_pd_counts(srq->pd), VD_DEV_SRQS);
	vd_pd_put(srq->pd);
	vd_async_queue_put(srq->aq);
	kfree(srq);
}

/**
 * vd_srq_put() - drop a reference
 * @srq: the SRQ, or NULL (a no-op)
 *
 * The last put frees the ring (mappings hold their own reference) and
 * drops the PD and async queue references.
 *
 * Context: Never under a spinlock (the rules of vd_ring_mem_put()).
 */
void vd_srq_put(struct vd_srq *srq)
{
	if (srq)
		kref_put(&srq->ref, vd_srq_free);
}
EXPORT_SYMBOL_IF_KUNIT(vd_srq_put);

/**
 * vd_srq_create() - a new shared receive queue
 * @pd: the PD it belongs to; it is counted as a user of it
 * @aq: where its events are raised, or NULL; the SRQ takes a reference
 * @handle: the handle its events report
 * @a: the request (struct viaduct_create_srq) in, the reply out
 *
 * Validates @a, allocates the mapped ring (struct viaduct_srq_ring, then
 * the slots), attaches to the PD and fills the reply (everything but the
 * mmap key, which the caller owns).
 *
 * Context: Process context.
 * Return: the SRQ with one reference, the creator's; ERR_PTR(-EINVAL) for
 * bad attributes (flags, a depth of 0 or beyond VD_MAX_QP_WR, too many
 * SGEs, too long a message); ERR_PTR(-ENOENT) if the PD was destroyed;
 * ERR_PTR(-ENOMEM).
 */
struct vd_srq *vd_srq_create(struct vd_pd *pd, struct vd_async_queue *aq,
			     u32 handle, struct viaduct_create_srq *a)
{
	struct vd_wqe_limits lim;
	struct vd_ring_mem *mem;
	u32 depth, wqe_size;
	struct vd_srq *srq;
	int err;

	err = srq_caps(a, &depth, &wqe_size, &lim);
	if (err)
		return ERR_PTR(err);
	srq = kzalloc(sizeof(*srq), GFP_KERNEL_ACCOUNT);
	if (!srq)
		return ERR_PTR(-ENOMEM);
	kref_init(&srq->ref);
	spin_lock_init(&srq->lock);
	atomic_set(&srq->users, 0);
	srq->handle = handle;
	srq->user_data = a->user_data;
	srq->depth = depth;
	srq->wqe_size = wqe_size;
	srq->lim = lim;
	if (aq)
		srq->aq = vd_async_queue_get(aq);

	mem = vd_ring_mem_alloc(VIADUCT_RING_HDR_SIZE + (size_t)depth * wqe_size);
	if (IS_ERR(mem)) {
		err = PTR_ERR(mem);
		goto put;
	}
	srq->mem = mem;
	srq->ring = mem->va;
	srq->slots = mem->va + VIADUCT_RING_HDR_SIZE;

	err = vd_pd_attach(pd);
	if (err)
		goto put;
	srq->pd = vd_pd_get(pd);
	vd_dev_count_inc(vd_pd_counts(srq->pd), VD_DEV_SRQS);

	a->depth = depth;
	a->max_sge = lim.max_sge;
	a->max_msg_size = lim.max_msg_size;
	a->handle = handle;
	a->wqe_size = wqe_size;
	a->mmap_size = mem->size;
	a->mmap_key = 0;
	pr_debug("srq %u created: %u x %u\n", handle, depth, wqe_size);
	return srq;

put:
	vd_srq_put(srq);
	return ERR_PTR(err);
}
EXPORT_SYMBOL_IF_KUNIT(vd_srq_create);

/**
 * vd_srq_try_destroy() - mark the SRQ destroyed unless QPs use it
 * @srq: the SRQ, referenced by the caller
 *
 * On success no QP can attach any more; the caller then calls
 * vd_srq_destroy().
 *
 * Context: Any context.
 * Return: 0, -EBUSY while QPs receive from it, -ENOENT if it was already
 * destroyed.
 */
int vd_srq_try_destroy(struct vd_srq *srq)
{
	int old = atomic_cmpxchg(&srq->users, 0, VD_SRQ_DESTROYED);

	if (old == VD_SRQ_DESTROYED)
		return -ENOENT;
	return old ? -EBUSY : 0;
}
EXPORT_SYMBOL_IF_KUNIT(vd_srq_try_destroy);

/**
 * vd_srq_destroy() - finish destroying the SRQ
 * @srq: the SRQ, after a successful vd_srq_try_destroy(); the creator's
 *       reference is consumed
 *
 * Stops raising events, detaches from the PD and drops the reference.
 *
 * Context: Process context.
 */
void vd_srq_destroy(struct vd_srq *srq)
{
	struct vd_async_queue *aq;

	spin_lock_bh(&srq->lock);
	aq = srq->aq;
	srq->aq = NULL;
	spin_unlock_bh(&srq->lock);
	vd_async_queue_put(aq);
	vd_pd_detach(srq->pd);
	vd_srq_put(srq);
}
EXPORT_SYMBOL_IF_KUNIT(vd_srq_destroy);

/**
 * vd_srq_attach() - count one more QP receiving from the SRQ
 * @srq: the SRQ, referenced by the caller
 *
 * Context: Any context.
 * Return: 0, or -ENOENT once vd_srq_try_destroy() succeeded.
 */
int vd_srq_attach(struct vd_srq *srq)
{
	return atomic_inc_unless_negative(&srq->users) ? 0 : -ENOENT;
}
EXPORT_SYMBOL_IF_KUNIT(vd_srq_attach);

/**
 * vd_srq_detach() - uncount a QP counted by vd_srq_attach()
 * @srq: the SRQ, referenced by the caller
 *
 * Context: Any context.
 */
void vd_srq_detach(struct vd_srq *srq)
{
	WARN_ON_ONCE(atomic_dec_return(&srq->users) < 0);
}
EXPORT_SYMBOL_IF_KUNIT(vd_srq_detach);

/**
 * vd_srq_modify() - MODIFY_SRQ: arm the limit
 * @srq: the SRQ
 * @m: the request; only VIADUCT_SRQ_ATTR_LIMIT may be set
 *
 * A limit of 0 disarms it.
 *
 * Context: Any context but hard irq.
 * Return: 0, or -EINVAL for another mask, a reserved field that is not
 * zero, or a limit beyond the depth.
 */
int vd_srq_modify(struct vd_srq *srq, const struct viaduct_modify_srq *m)
{
	if (m->mask != VIADUCT_SRQ_ATTR_LIMIT || m->reserved ||
	    m->limit > srq->depth)
		return -EINVAL;
	spin_lock_bh(&srq->lock);
	srq->limit = m->limit;
	spin_unlock_bh(&srq->lock);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(vd_srq_modify);

/**
 * vd_srq_query() - QUERY_SRQ
 * @srq: the SRQ
 * @q: filled, all but @q->handle; the outstanding count is what the
 *     user's producer index says, 0 if it is garbage
 *
 * Context: Any context but hard irq.
 */
void vd_srq_query(struct vd_srq *srq, struct viaduct_query_srq *q)
{
	u32 prod;

	spin_lock_bh(&srq->lock);
	q->depth = srq->depth;
	q->max_sge = srq->lim.max_sge;
	q->limit = srq->limit;
	/* the user's index is a hint: report what it says, if it is sane */
	prod = READ_ONCE(srq->ring->producer);
	q->outstanding = vd_ring_valid(prod, srq->consumer, srq->depth) ?
			 vd_ring_used(prod, srq->consumer) : 0;
	q->broken = srq->broken;
	spin_unlock_bh(&srq->lock);
	q->num_qps = max(atomic_read(&srq->users), 0);
	q->reserved = 0;
}
EXPORT_SYMBOL_IF_KUNIT(vd_srq_query);

static void srq_event(struct vd_srq *srq, u32 type, u32 detail)
{
	lockdep_assert_held(&srq->lock);
	if (srq->aq)
		vd_async_queue_push(srq->aq, type, srq->handle,
				    srq->user_data, detail);
}

/**
 * vd_srq_take() - take the oldest posted receive
 * @srq: the SRQ
 * @copy: where the WR is copied (room for wqe_size bytes)
 * @meta: filled with the copy's validation (vd_qp_check_rqe())
 *
 * For a QP whose message needs a receive: copies the oldest posted WR,
 * frees its slot and validates the copy. Raises VIADUCT_EVENT_SRQ_LIMIT
 * (once per arming) when fewer WRs than an armed limit are left. A garbage
 * producer index breaks the SRQ for good and raises
 * VIADUCT_EVENT_SRQ_ERR.
 *
 * Context: Any context but hard irq; the caller may hold its QP's
 * @rq.lock (the SRQ's lock nests inside it).
 * Return: true if it took one; false if none is posted or the SRQ is
 * broken.
 */
bool vd_srq_take(struct vd_srq *srq, void *copy, struct vd_wqe_meta *meta)
{
	bool taken = false;
	u32 prod, left;

	spin_lock_bh(&srq->lock);
	if (srq->broken)
		goto out;
	if (unlikely(vd_ring_load_user_index(&srq->ring->producer,
					     srq->consumer, srq->depth,
					     &prod))) {
		pr_debug("srq %u: garbage producer index\n", srq->handle);
		srq->broken = true;
		srq_event(srq, VIADUCT_EVENT_SRQ_ERR, 0);
		goto out;
	}
	if (prod == srq->consumer)
		goto out;

	vd_qp_copy_wqe(copy, srq->slots, srq->consumer, srq->depth,
		       srq->wqe_size, true, &srq->lim);
	srq->consumer++;
	/* the copy is done: the slot may be reused */
	vd_ring_publish(&srq->ring->consumer, srq->consumer);
	meta->byte_len = 0;
	meta->status = vd_qp_check_rqe(copy, &srq->lim, &meta->byte_len);
	taken = true;

	left = vd_ring_used(prod, srq->consumer);
	if (srq->limit && left < srq->limit) {
		/* one event per arming */
		srq->limit = 0;
		srq_event(srq, VIADUCT_EVENT_SRQ_LIMIT, left);
	}
out:
	spin_unlock_bh(&srq->lock);
	return taken;
}
EXPORT_SYMBOL_IF_KUNIT(vd_srq_take);
