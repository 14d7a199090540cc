/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared receive queues: a receive ring on a PD that QPs of that PD take
 * their receives from. The semantics are in Documentation/qp.rst
 * ("Shared receive queues"). An SRQ is created with one reference, the
 * creator's, and counts the QPs attached to it as users, as a PD does
 * (pd.h); it can be destroyed only while no QP uses it. The functions are
 * documented (kernel-doc) at their definitions in srq.c.
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

/**
 * vd_srq_get() - take a reference
 * @srq: the SRQ, on which the caller holds a reference
 *
 * Context: Any context.
 * Return: @srq.
 */
static inline struct vd_srq *vd_srq_get(struct vd_srq *srq)
{
	kref_get(&srq->ref);
	return srq;
}

#endif /* _VD_SRQ_H */
