/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Completion queues: a ring of struct viaduct_cqe that the kernel produces
 * into and userspace consumes from, one-shot arming, and overflow.
 * Documentation/rings.rst has the ring protocol and the ordering arguments.
 *
 * API
 * ---
 *   vd_cq_create(entries, handle, user_data, aq, ch)
 *       A CQ of roundup_pow_of_two(@entries) CQEs with one reference (the
 *       creator's), or ERR_PTR(-EINVAL) for 0 or more than VD_MAX_CQE
 *       entries, ERR_PTR(-ENOMEM). @handle and @user_data are what its
 *       events report. The CQ takes its own references on @aq (where an
 *       overflow is reported) and @ch (where armed completions are
 *       reported); either may be NULL. Process context.
 *   vd_cq_create_private(entries, qp_handle, qp_user_data, aq)
 *       The private completion ring of a QP whose send or receive queue
 *       has no CQ: the same object without a channel. Its events name the
 *       QP (@qp_handle, @qp_user_data); an overflow raises
 *       VIADUCT_EVENT_CQ_ERROR for the QP on @aq like a CQ does.
 *   vd_cq_get(cq), vd_cq_put(cq)
 *       Memory lifetime. The last put frees the CQ and drops its ring,
 *       channel and queue references, with the rules of
 *       vd_ring_mem_put(). put(NULL) is a no-op.
 *   vd_cq_attach(cq), vd_cq_detach(cq), vd_cq_try_destroy(cq)
 *       The user count, as for PDs (pd.h): a QP attaches to each CQ it
 *       completes into (-ENOENT once destroyed); destroy fails with
 *       -EBUSY while QPs are attached, else marks the CQ destroyed and
 *       returns 0, and the caller then drops its reference. Private rings
 *       need no user count.
 *   vd_cq_mem(cq)
 *       The current ring memory to mmap (header at 0, CQEs at
 *       VIADUCT_RING_HDR_SIZE), borrowed: valid while the caller holds a
 *       CQ reference and keeps vd_cq_resize() from running (the caller
 *       serialises both); take vd_ring_mem_get() to keep it longer, e.g.
 *       for an mmap key.
 *   vd_cq_entries(cq)
 *       The current number of entries (changes with a resize).
 *
 *   vd_cq_push(cq, cqe, solicited)
 *       Writes one CQE and publishes it. Any context; takes cq->lock with
 *       interrupts disabled and never sleeps. Returns 0, or -ENOSPC if the
 *       CQE was not written: the ring is full (or the user's consumer
 *       index is out of range), or the CQ is in error since an earlier
 *       overflow. The first failure sets VIADUCT_RING_F_OVERFLOW in the
 *       ring header, puts the CQ in error for good, counts cq_overflows,
 *       raises VIADUCT_EVENT_CQ_ERROR once, and fires a pending arm so no
 *       waiter sleeps on a dead CQ. A full ring is never overwritten. The
 *       caller moves the QP whose CQE was refused to Error.
 *   vd_cq_arm(cq, flags)
 *       One-shot arming with VIADUCT_ARM_NEXT and/or
 *       VIADUCT_ARM_SOLICITED (-EINVAL for no or unknown flags, -EIO on a
 *       CQ in error). The next CQE pushed after the arm fires it if the
 *       CQ is armed NEXT, or armed SOLICITED and the CQE is solicited
 *       (@solicited or VIADUCT_WC_F_SOLICITED) or not successful; firing
 *       disarms and queues one struct viaduct_cq_event on the channel.
 *       NEXT wins over SOLICITED; arming twice before a fire still fires
 *       once. CQEs pushed before the arm never fire it. Any context.
 *   vd_cq_resize(cq, entries, &newmem)
 *       Moves the unconsumed CQEs, in order, to the start of a new ring of
 *       roundup_pow_of_two(@entries) CQEs and switches to it: the new
 *       ring's producer index is the number moved and its consumer index
 *       0. *newmem is the new ring with a reference for the caller. The
 *       old ring is never written again and lives on while mapped.
 *       -EINVAL: bad size, fewer entries than unconsumed CQEs, or a
 *       consumer index out of range; -EIO: the CQ is in error; -ENOMEM.
 *       The caller must make sure userspace does not poll the CQ during
 *       the call (the library serialises resize against polling).
 *       Process context.
 *
 * Locking: cq->lock (spin_lock_irqsave everywhere, because completions may
 * be pushed from softirq or interrupt context) protects the private
 * producer index, the ring pointers, the arm state and the error state.
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
struct vd_ring_mem;

struct vd_cq {
	struct kref ref;
	atomic_t users;		/* QPs attached; -1 once destroyed */
	u32 handle;
	u64 user_data;
	struct vd_async_queue *aq;	/* may be NULL */
	struct vd_comp_channel *ch;	/* may be NULL */

	spinlock_t lock;		/* producers, arming, resize */
	struct vd_ring_mem *mem;	/* current ring, referenced */
	struct viaduct_ring *hdr;	/* in @mem */
	struct viaduct_cqe *cqes;	/* in @mem */
	u32 entries;
	u32 prod;		/* private producer index */
	u32 flags;		/* private copy of hdr->flags */
	u32 armed;		/* pending VIADUCT_ARM_* */
	bool error;
};

int vd_cq_round_entries(u32 requested, u32 *entries);
size_t vd_cq_ring_size(u32 entries);

struct vd_cq *vd_cq_create(u32 entries, u32 handle, u64 user_data,
			   struct vd_async_queue *aq,
			   struct vd_comp_channel *ch);
struct vd_cq *vd_cq_create_private(u32 entries, u32 qp_handle,
				   u64 qp_user_data,
				   struct vd_async_queue *aq);
void vd_cq_put(struct vd_cq *cq);
int vd_cq_attach(struct vd_cq *cq);
void vd_cq_detach(struct vd_cq *cq);
int vd_cq_try_destroy(struct vd_cq *cq);
struct vd_ring_mem *vd_cq_mem(struct vd_cq *cq);
u32 vd_cq_entries(struct vd_cq *cq);

int vd_cq_push(struct vd_cq *cq, const struct viaduct_cqe *cqe,
	       bool solicited);
int vd_cq_arm(struct vd_cq *cq, u32 flags);
int vd_cq_resize(struct vd_cq *cq, u32 entries,
		 struct vd_ring_mem **newmem);

static inline struct vd_cq *vd_cq_get(struct vd_cq *cq)
{
	kref_get(&cq->ref);
	return cq;
}

#define vd_dbg_cq(cq, fmt, ...)						\
	pr_debug("cq%u %s: " fmt, (cq)->handle, __func__, ##__VA_ARGS__)

#endif /* _VD_CQ_H */
