/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Completion queues: a ring of struct viaduct_cqe that the kernel produces
 * into and userspace consumes from, one-shot arming (optionally moderated
 * by a count of unread CQEs), and overflow.
 * Documentation/rings.rst has the ring protocol and the ordering arguments;
 * the functions are documented at their definitions in cq.c.
 *
 * A CQ has a reference count (memory lifetime) and, like a PD (pd.h), a
 * user count: a QP attaches to each CQ it completes into, and a CQ with
 * users cannot be destroyed. The private completion ring of a QP whose send
 * or receive queue has no CQ is the same object without a channel and
 * without a user count. A CQ that refused a CQE is in error for good.
 *
 * Locking: cq->lock (spin_lock_irqsave everywhere, because completions may
 * be pushed from softirq or interrupt context) protects the private
 * producer index, the ring pointers, the arm state (flags and threshold)
 * and the error state.
 * The async queue and channel locks nest inside it and are leaves. The
 * shared header fields userspace can write are read only with acquire
 * loads, validated, and never written by the kernel except the producer
 * index and flags (and every field of a fresh ring before it is mapped).
 */
#ifndef _VD_CQ_H
#define _VD_CQ_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/printk.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <viaduct/viaduct-abi.h>

struct vd_async_queue;
struct vd_comp_channel;
struct vd_dev_counts;
struct vd_ring_mem;

struct vd_cq {
	struct kref ref;
	atomic_t users;		/* QPs attached; -1 once destroyed */
	u32 handle;
	u64 user_data;
	struct vd_async_queue *aq;	/* may be NULL */
	struct vd_comp_channel *ch;	/* may be NULL */
	struct vd_dev_counts *counts;	/* referenced; may be NULL */

	spinlock_t lock;		/* producers, arming, resize */
	struct vd_ring_mem *mem;	/* current ring, referenced */
	struct viaduct_ring *hdr;	/* in @mem */
	struct viaduct_cqe *cqes;	/* in @mem */
	u32 entries;
	u32 prod;		/* private producer index */
	u32 flags;		/* private copy of hdr->flags */
	u32 armed;		/* pending VIADUCT_ARM_* */
	u32 threshold;		/* of the pending arm; 0: none */
	bool error;
};

int vd_cq_round_entries(u32 requested, u32 *entries);
size_t vd_cq_ring_size(u32 entries);

struct vd_cq *vd_cq_create(u32 entries, u32 handle, u64 user_data,
			   struct vd_async_queue *aq,
			   struct vd_comp_channel *ch,
			   struct vd_dev_counts *counts);
struct vd_cq *vd_cq_create_private(u32 entries, u32 qp_handle,
				   u64 qp_user_data,
				   struct vd_async_queue *aq,
				   struct vd_dev_counts *counts);
void vd_cq_put(struct vd_cq *cq);
int vd_cq_attach(struct vd_cq *cq);
void vd_cq_detach(struct vd_cq *cq);
int vd_cq_try_destroy(struct vd_cq *cq);
struct vd_ring_mem *vd_cq_mem(struct vd_cq *cq);
u32 vd_cq_entries(struct vd_cq *cq);

int vd_cq_push(struct vd_cq *cq, const struct viaduct_cqe *cqe,
	       bool solicited);
int vd_cq_arm(struct vd_cq *cq, u32 flags, u32 threshold);
int vd_cq_resize(struct vd_cq *cq, u32 entries,
		 struct vd_ring_mem **newmem);

/**
 * vd_cq_get() - take a reference
 * @cq: the CQ, on which the caller holds a reference
 *
 * Context: Any context.
 * Return: @cq.
 */
static inline struct vd_cq *vd_cq_get(struct vd_cq *cq)
{
	kref_get(&cq->ref);
	return cq;
}

#define vd_dbg_cq(cq, fmt, ...)						\
	pr_debug("cq%u %s: " fmt, (cq)->handle, __func__, ##__VA_ARGS__)

#endif /* _VD_CQ_H */
