/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Queue pairs: the objects, the state machine, the consumption of work
 * queue entries from the shared rings, and flushing. The rules are in
 * Documentation/qp.rst. A QP is created in Idle with one reference, the
 * creator's, which vd_qp_destroy() consumes; the connection manager binds
 * it to an LLP stream, and the transport installs its ops with the stream
 * (struct vd_qp_tp_ops). The functions are documented (kernel-doc) at their
 * definitions in qp_create.c (creation and destruction), qp.c (the rest)
 * and, for the pure rules, qp_rules.c (the KUnit suite viaduct_qp tests
 * them).
 *
 * Locking
 * -------
 * Three spinlocks per QP, always taken with bottom halves disabled because
 * the transport completes WRs from softirq context:
 *   @lock      the attributes, @conn, the async queue pointer;
 *   @sq.lock   the SQ's private consumer index and in-flight FIFO;
 *   @rq.lock   the same for the RQ.
 * The order is @lock -> @sq.lock -> @rq.lock -> (the SRQ's lock) -> (CQ and
 * async queue locks).
 * @state and @destroyed are written with all three held and may be read
 * under any one of them, so the SQ and RQ consumers (holding only their
 * own queue's lock) run independently of each other yet see a stable
 * state. A consumer that must change the state (a malformed WQE) marks its
 * queue stopped, drops its lock and calls vd_qp_enter_error(), which takes
 * all three in order.
 *
 * Lifetime
 * --------
 * The QP holds references to its PD, SRQ and CQs (attached: they count it
 * as a user until vd_qp_destroy()), its ring memory and the async queue
 * (until vd_qp_destroy()). The caller guarantees that the polling worker
 * (embedded in the device) outlives vd_qp_destroy(). The last put drops
 * CQ references, which may sleep: never put a QP under a spinlock.
 */
#ifndef _VD_QP_H
#define _VD_QP_H

#include <linux/bits.h>
#include <linux/compiler.h>
#include <linux/kref.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <viaduct/viaduct-abi.h>

#include "doorbell.h"

struct mem_cgroup;
struct vd_async_queue;
struct vd_conn;
struct vd_cq;
struct vd_device;
struct vd_doorbell_worker;
struct vd_pd;
struct vd_ring_mem;
struct vd_srq;

/* vd_qp_consume() and friends: which queue */
#define VD_QP_SQ		0U
#define VD_QP_RQ		1U

/* The smallest WQE slot; slots are powers of two. */
#define VD_QP_MIN_WQE_SIZE	64U

/* QP numbers: one space for the whole module, 0 is never used. */
#define VD_QPN_MAX		((1U << 24) - 1)

/* What a WQE may carry, as fixed at creation (the values reported back). */
struct vd_wqe_limits {
	u32 max_sge;
	u32 max_inline;		/* SQ only */
	u32 max_msg_size;
};

/* vd_qp_caps(): the sizes a valid struct viaduct_create_qp leads to. */
struct vd_qp_caps {
	u32 sq_depth;
	u32 rq_depth;
	u32 sq_ring_depth;
	u32 rq_ring_depth;
	u32 sq_wqe_size;
	u32 rq_wqe_size;
	struct vd_wqe_limits sq;
	struct vd_wqe_limits rq;
};

/* Per in-flight WR state, next to its private copy. */
struct vd_wqe_meta {
	u32 byte_len;		/* message length, validated */
	u8 status;		/* 0, or the status a malformed WQE completes with */
	u8 reserved[3];
};

/* One work queue: the shared ring and the kernel's private side of it. */
struct vd_wq {
	spinlock_t lock;		/* the fields below that change */
	struct vd_ring_mem *mem;	/* the shared slots, @ring_depth */
	u8 *copies;			/* depth private copies of taken slots */
	struct vd_wqe_meta *meta;	/* depth entries, parallel to @copies */
	struct vd_cq *cq;
	u32 *producer;			/* user's index, in the doorbell page */
	u32 *consumer_pub;		/* kernel's index, in the doorbell page */
	struct vd_wqe_limits lim;
	u32 depth;			/* in-flight copies, power of two */
	u32 ring_depth;			/* ring slots, power of two <= @depth */
	u32 wqe_size;			/* power of two */
	u32 consumer;			/* slots taken (private copy) */
	u32 head;			/* oldest in-flight copy */
	u32 tail;			/* next free copy; tail - head in flight */
	bool is_rq;
	bool private_cq;		/* @cq was created for this queue */
	bool stopped;			/* a malformed WQE waits for Error */
};

/*
 * What the transport installs with its stream (qp->tp, under qp->lock)
 * while the QP is bound to it; the QP never calls the transport by name.
 *   sq_work(tp)   the SQ got WRs to execute or the QP's state changed:
 *                 only schedule work. Called with qp->lock held, bottom
 *                 halves disabled.
 *   sq_get(tp)    a posting context (DOORBELL, the polling worker) took
 *                 new SQ WRs: true if it may call sq_send(tp) once, after
 *                 it dropped qp->lock (the stream stays until then);
 *                 false if the transport queued its work instead. Called
 *                 like sq_work().
 *   sq_send(tp)   sends from the posting context, bounded; process
 *                 context, no QP lock held.
 */
struct vd_qp_tp_ops {
	void (*sq_work)(void *tp);
	bool (*sq_get)(void *tp);
	void (*sq_send)(void *tp);
};

struct vd_qp {
	struct kref ref;
	spinlock_t lock;		/* attributes; see "Locking" */
	struct vd_device *dev;		/* not dereferenced here */
	struct vd_pd *pd;
	struct vd_async_queue *aq;	/* NULL once destroyed */
	struct vd_doorbell_worker *worker;	/* set iff POLLED */
	struct vd_db_client db_client;		/* registered with @worker */
	struct vd_conn *conn;		/* LLP stream, owned by the CM */
	/* the transport's stream and its ops, installed under @lock */
	void *tp;
	const struct vd_qp_tp_ops *tp_ops;
	struct vd_ring_mem *db_mem;
	struct viaduct_doorbell *db;	/* = db_mem->va */
	struct vd_wq sq;
	struct vd_wq rq;
	struct vd_srq *srq;		/* receives come from it, or NULL */
	/*
	 * The creator's memory cgroup, referenced (NULL without memcg): the
	 * stream made for the QP later, in the CM's work, is charged there.
	 */
	struct mem_cgroup *memcg;
	u64 user_data;
	u32 handle;			/* the creator's name for it */
	u32 qpn;
	u32 flags;			/* VIADUCT_QP_F_* */
	u32 reliability;
	u32 access;			/* VIADUCT_QP_ACCESS_* */
	u32 ord;
	u32 ird;
	u32 terminate;			/* last Terminate code, for QUERY_QP */
	u32 state;			/* VIADUCT_QPS_* */
	bool destroyed;
};

struct vd_qp_init {
	struct vd_device *dev;
	struct vd_pd *pd;
	struct vd_cq *send_cq;		/* NULL: a private completion ring */
	struct vd_cq *recv_cq;		/* likewise */
	struct vd_async_queue *aq;
	struct vd_doorbell_worker *worker;	/* the device's, for POLLED */
	struct vd_srq *srq;		/* NULL: an RQ of its own */
	u32 handle;
	struct viaduct_create_qp *attr;	/* in: the request; out: the reply */
};

struct vd_qp *vd_qp_create(const struct vd_qp_init *init);
void vd_qp_destroy(struct vd_qp *qp);
void vd_qp_put(struct vd_qp *qp);

/* Between qp.c and qp_create.c only. */
void vd_qp_lock_all(struct vd_qp *qp)
	__acquires(&qp->lock) __acquires(&qp->sq.lock) __acquires(&qp->rq.lock);
void vd_qp_unlock_all(struct vd_qp *qp)
	__releases(&qp->rq.lock) __releases(&qp->sq.lock) __releases(&qp->lock);
bool vd_qp_db_poll(struct vd_db_client *c, unsigned int budget);

/**
 * vd_qp_get() - take a reference
 * @qp: the QP, on which the caller holds a reference
 *
 * Memory lifetime only: a destroyed QP stays allocated while referenced,
 * and calls on it fail or do nothing.
 *
 * Context: Any context.
 * Return: @qp.
 */
static inline struct vd_qp *vd_qp_get(struct vd_qp *qp)
{
	kref_get(&qp->ref);
	return qp;
}

int vd_qp_modify(struct vd_qp *qp, const struct viaduct_modify_qp *m);
void vd_qp_query(struct vd_qp *qp, struct viaduct_query_qp *q);
int vd_qp_consume(struct vd_qp *qp, unsigned int which);
int vd_qp_take_srq(struct vd_qp *qp);

int vd_qp_enter_rts(struct vd_qp *qp, struct vd_conn *conn);
void vd_qp_enter_error(struct vd_qp *qp, u32 event, u32 detail);
void vd_qp_llp_closed(struct vd_qp *qp, struct vd_conn *conn);
int vd_qp_complete(struct vd_qp *qp, unsigned int which,
		   struct viaduct_cqe *cqe, bool solicited);
void vd_qp_sq_work(struct vd_qp *qp);
int vd_qp_doorbell(struct vd_qp *qp, u32 flags);

int vd_qp_check_transition(u32 cur, u32 next, u32 mask, bool has_llp);
int vd_qp_check_modify(const struct viaduct_modify_qp *m);
int vd_qp_caps(const struct viaduct_create_qp *attr, struct vd_qp_caps *caps);
u8 vd_qp_check_sqe(const void *slot, const struct vd_wqe_limits *lim,
		   u32 *len);
u8 vd_qp_check_rqe(const void *slot, const struct vd_wqe_limits *lim,
		   u32 *len);
u32 vd_qp_wqe_len(const void *wqe, bool rq, const struct vd_wqe_limits *lim);
u32 vd_qp_copy_wqe(void *dst, const void *slots, u32 idx, u32 entries,
		   u32 slot_size, bool rq, const struct vd_wqe_limits *lim);

/**
 * vd_qp_db_pending() - whether the user posted WQEs the kernel did not take
 * @qp: the QP
 * @which: VD_QP_SQ or VD_QP_RQ
 *
 * For the polling worker: whether the user moved the producer index of
 * @which past what the kernel took. A racy hint (the worker confirms it
 * under the queue lock in vd_qp_consume()), so a plain READ_ONCE().
 *
 * Context: Any context.
 * Return: true if the indices differ.
 */
static inline bool vd_qp_db_pending(const struct vd_qp *qp, unsigned int which)
{
	const struct vd_wq *wq = which == VD_QP_RQ ? &qp->rq : &qp->sq;

	return READ_ONCE(*wq->producer) != READ_ONCE(wq->consumer);
}

#define vd_dbg_qp(qp, fmt, ...)						\
	pr_debug("qp%u %s: " fmt, (qp)->qpn, __func__, ##__VA_ARGS__)

#endif /* _VD_QP_H */
