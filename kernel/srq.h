/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared receive queues: a receive ring on a PD that QPs of that PD take
 * their receives from. The semantics are in Documentation/qp.rst
 * ("Shared receive queues").
 *
 * API
 * ---
 *   vd_srq_create(pd, aq, handle, attr)
 *       Validates @attr (struct viaduct_create_srq, in/out), allocates the
 *       mapped ring (struct viaduct_srq_ring, then the slots), attaches to
 *       the PD, fills the reply (everything but the mmap key) and returns
 *       the SRQ with one reference, the creator's. ERR_PTR(-EINVAL) for bad
 *       attributes, -ENOENT (the PD was destroyed), -ENOMEM. Process
 *       context.
 *   vd_srq_try_destroy(srq)
 *       -EBUSY while QPs receive from it; otherwise marks it destroyed (no
 *       QP can attach any more) and returns 0.
 *   vd_srq_destroy(srq)
 *       After a successful vd_srq_try_destroy(): stops raising events,
 *       detaches from the PD and drops the creator's reference.
 *   vd_srq_get(srq), vd_srq_put(srq)
 *       Memory lifetime; the last put frees the ring (mappings hold their
 *       own reference). Never put under a spinlock.
 *   vd_srq_attach(srq), vd_srq_detach(srq)
 *       Counts a QP as a user (-ENOENT once destroyed) and uncounts it.
 *   vd_srq_modify(srq, m)  MODIFY_SRQ; -EINVAL for bad values.
 *   vd_srq_query(srq, q)   QUERY_SRQ: fills everything but @q->handle.
 *   vd_srq_take(srq, copy, meta)
 *       For a QP whose message needs a receive: copies the oldest posted
 *       WR into @copy (wqe_size bytes), validates the copy into @meta and
 *       frees its slot. Returns true if it took one, false if none is
 *       posted (or the SRQ is broken). Raises VIADUCT_EVENT_SRQ_LIMIT when
 *       an armed limit is crossed. Any context but hard irq; the caller
 *       may hold its QP's @rq.lock (the SRQ's lock nests inside it).
 *
 * Locking
 * -------
 * @lock (taken with bottom halves disabled: the transport takes receives
 * in its work items and softirq-driven paths) covers the private consumer
 * index, the limit, @broken and @aq. It nests inside a QP's @rq.lock and
 * outside the async queue's lock. Consumption is FIFO by arrival: whichever
 * QP asks first under @lock gets the oldest WR.
 */
#ifndef _VD_SRQ_H
#define _VD_SRQ_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <viaduct/viaduct-abi.h>

#include "qp.h"

struct vd_async_queue;
struct vd_pd;
struct vd_ring_mem;

struct vd_srq {
	struct kref ref;
	spinlock_t lock;		/* see "Locking" */
	struct vd_pd *pd;
	struct vd_async_queue *aq;	/* NULL once destroyed */
	struct vd_ring_mem *mem;	/* header, then the slots */
	struct viaduct_srq_ring *ring;	/* = mem->va */
	void *slots;
	struct vd_wqe_limits lim;
	atomic_t users;			/* QPs attached; -1 once destroyed */
	u64 user_data;
	u32 handle;
	u32 depth;			/* power of two */
	u32 wqe_size;			/* power of two */
	u32 consumer;			/* slots taken (private copy) */
	u32 limit;			/* armed limit, 0: none */
	bool broken;			/* garbage producer index seen */
};

struct vd_srq *vd_srq_create(struct vd_pd *pd, struct vd_async_queue *aq,
			     u32 handle, struct viaduct_create_srq *attr);
int vd_srq_try_destroy(struct vd_srq *srq);
void vd_srq_destroy(struct vd_srq *srq);
void vd_srq_put(struct vd_srq *srq);
int vd_srq_attach(struct vd_srq *srq);
void vd_srq_detach(struct vd_srq *srq);
int vd_srq_modify(struct vd_srq *srq, const struct viaduct_modify_srq *m);
void vd_srq_query(struct vd_srq *srq, struct viaduct_query_srq *q);
bool vd_srq_take(struct vd_srq *srq, void *copy, struct vd_wqe_meta *meta);

static inline struct vd_srq *vd_srq_get(struct vd_srq *srq)
{
	kref_get(&srq->ref);
	return srq;
}

#endif /* _VD_SRQ_H */
