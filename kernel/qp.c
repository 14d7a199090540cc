// SPDX-License-Identifier: GPL-2.0
/*
 * Queue pairs: the state machine, taking WQEs from the shared rings (copy
 * first, then validate), and flushing. Creation and destruction are in
 * qp_create.c, the pure rules they follow (transitions, create
 * attributes, WQE checks) in qp_rules.c.
 * qp.h has the locking rules, Documentation/qp.rst the semantics; each
 * function has kernel-doc at its definition.
 */
#include <linux/bug.h>
#include <linux/err.h>
#include <linux/lockdep.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <kunit/visibility.h>

#include "conn.h"
#include "cq.h"
#include "doorbell.h"
#include "event.h"
#include "qp.h"
#include "ring.h"
#include "srq.h"
#include "stats.h"
#include "viaduct.h"

/* The opcodes of the basic WRs are their CQE opcodes; vd_sq_wc_opcode(). */
static_assert(VIADUCT_WC_SEND == VIADUCT_OP_SEND);
static_assert(VIADUCT_WC_RDMA_WRITE == VIADUCT_OP_RDMA_WRITE);
static_assert(VIADUCT_WC_RDMA_READ == VIADUCT_OP_RDMA_READ);
static_assert(sizeof(struct viaduct_doorbell) <= PAGE_SIZE);
/* A private CQ has as many entries as its queue has slots. */
static_assert(VD_MAX_QP_WR <= VD_MAX_CQE);
static_assert(VD_MAX_MSG_SIZE <= U32_MAX);

/* --- Work queues ---------------------------------------------------- */

static struct vd_wq *qp_wq(struct vd_qp *qp, unsigned int which)
{
	return which == VD_QP_RQ ? &qp->rq : &qp->sq;
}

static void *wq_copy(const struct vd_wq *wq, u32 idx)
{
	return wq->copies + (size_t)(idx & (wq->depth - 1)) * wq->wqe_size;
}

static struct vd_wqe_meta *wq_meta(const struct vd_wq *wq, u32 idx)
{
	return &wq->meta[idx & (wq->depth - 1)];
}

static u8 wq_check(const struct vd_wq *wq, const void *copy, u32 *len)
{
	*len = 0;
	if (wq->is_rq)
		return vd_qp_check_rqe(copy, &wq->lim, len);
	return vd_qp_check_sqe(copy, &wq->lim, len);
}

/* The CQE opcode of an SQ WR, executed, failed or flushed. */
static u8 vd_sq_wc_opcode(u8 op)
{
	switch (op) {
	case VIADUCT_OP_SEND_INV:
		return VIADUCT_WC_SEND;
	case VIADUCT_OP_RDMA_READ_INV:
		return VIADUCT_WC_RDMA_READ;
	case VIADUCT_OP_LOCAL_INV:
		return VIADUCT_WC_LOCAL_INV;
	case VIADUCT_OP_FAST_REG:
		return VIADUCT_WC_FAST_REG;
	case VIADUCT_OP_BIND_MW:
		return VIADUCT_WC_BIND_MW;
	default:
		return op;
	}
}

/*
 * Writes the CQE of the WR whose private copy is @copy. The caller fills
 * status, byte_len and whatever else the transport knows; the WR's own
 * fields come from the copy, never from the ring.
 */
static int wq_push(struct vd_qp *qp, struct vd_wq *wq, const void *copy,
		   struct viaduct_cqe *cqe, bool solicited)
{
	if (wq->is_rq) {
		const struct viaduct_rqe *rqe = copy;

		cqe->wr_id = rqe->wr_id;
		if (cqe->opcode != VIADUCT_WC_RECV_RDMA_WITH_IMM)
			cqe->opcode = VIADUCT_WC_RECV;
		cqe->flags |= VIADUCT_WC_F_RECV;
	} else {
		const struct viaduct_sqe *sqe = copy;

		cqe->wr_id = sqe->wr_id;
		cqe->opcode = vd_sq_wc_opcode(sqe->opcode);
	}
	cqe->qp_handle = qp->handle;
	return vd_cq_push(wq->cq, cqe, solicited);
}

/*
 * Completes a WR that never ran: flushed, or malformed. The QP is in Error
 * (or entering it): an overflow of the CQ is reported by the CQ itself and
 * changes nothing more here.
 */
static void wq_push_unexecuted(struct vd_qp *qp, struct vd_wq *wq,
			       const void *copy, u8 status)
{
	struct viaduct_cqe cqe = { .status = status };

	wq_push(qp, wq, copy, &cqe, false);
}

/*
 * Takes new WQEs from the ring: copies each WQE (its header, then what the
 * header declares: vd_qp_copy_wqe()) into private memory, then validates
 * the copy, then frees the slot by publishing the consumer index.
 * Valid WQEs join the in-flight FIFO (Idle, RTS; the RQ also in Closing)
 * or, in Error, complete as flushed at once. A malformed WQE joins the FIFO
 * with its error status and stops the queue; the caller then moves the QP
 * to Error (*@bad), which completes it in order with the others. A
 * producer index that is not within one ring of the consumer index is
 * garbage and stops the queue the same way. Takes at most @budget: the
 * caller holds @wq->lock with bottom halves off, and a ring holds up to
 * 8 MiB of WQEs (VD_WQ_TAKE_BATCH).
 */
static int wq_take(struct vd_qp *qp, struct vd_wq *wq, bool *bad,
		   u32 budget)
{
	u32 state = qp->state, prod;
	bool error = state == VIADUCT_QPS_ERROR;
	int n = 0;

	lockdep_assert_held(&wq->lock);

	if (qp->destroyed)
		return 0;
	/* on an SRQ, receives are taken one by one as messages arrive */
	if (wq->is_rq && qp->srq)
		return 0;
	if (!error) {
		if (wq->stopped || state == VIADUCT_QPS_TERMINATE)
			return 0;
		if (state == VIADUCT_QPS_CLOSING && !wq->is_rq)
			return 0;
	}

	if (unlikely(vd_ring_load_user_index(wq->producer, wq->consumer,
					     wq->ring_depth, &prod))) {
		if (!error) {
			wq->stopped = true;
			*bad = true;
		}
		return 0;
	}

	while (wq->consumer != prod && n < budget) {
		struct vd_wqe_meta *meta;
		void *copy;
		u8 status;

		/* In Error the FIFO is empty: its tail entry is scratch. */
		if (!error && wq->tail - wq->head == wq->depth)
			break;
		copy = wq_copy(wq, wq->tail);
		vd_qp_copy_wqe(copy, wq->mem->va, wq->consumer, wq->ring_depth,
			       wq->wqe_size, wq->is_rq, &wq->lim);
		WRITE_ONCE(wq->consumer, wq->consumer + 1);
		n++;

		meta = wq_meta(wq, wq->tail);
		status = wq_check(wq, copy, &meta->byte_len);
		if (error) {
			/* a completion says its slot is free: publish first */
			vd_ring_publish(wq->consumer_pub, wq->consumer);
			wq_push_unexecuted(qp, wq, copy,
					   status ? status : VIADUCT_WC_FLUSHED);
			continue;
		}
		meta->status = status;
		wq->tail++;
		if (unlikely(status)) {
			vd_dbg_qp(qp, "malformed %s WQE: status %u\n",
				  wq->is_rq ? "RQ" : "SQ", status);
			wq->stopped = true;
			*bad = true;
			break;
		}
	}

	if (n) {
		/* Every copy is done: the slots may be reused. */
		vd_ring_publish(wq->consumer_pub, wq->consumer);
		vd_stat_add(wqes_consumed, n);
	}
	return n;
}

/*
 * WQEs taken from a ring with its lock held (bottom halves off): a ring of
 * 16384 WQEs of 512 bytes is 8 MiB, taken in steps of 32 KiB at most.
 */
#define VD_WQ_TAKE_BATCH	64

/*
 * Completes everything the queue holds as flushed; the QP is in Error.
 * Of what is still in the ring, at most @budget WQEs; whoever moved the QP
 * to Error flushes the rest without the lock (qp_state_changed()).
 */
static void wq_flush(struct vd_qp *qp, struct vd_wq *wq, u32 budget)
{
	bool bad = false;

	lockdep_assert_held(&wq->lock);

	for (; wq->head != wq->tail; wq->head++) {
		u8 status = wq_meta(wq, wq->head)->status;

		wq_push_unexecuted(qp, wq, wq_copy(wq, wq->head),
				   status ? status : VIADUCT_WC_FLUSHED);
	}
	/* Then what is still in the ring, up to the producer index. */
	wq_take(qp, wq, &bad, budget);
}

/* --- State ---------------------------------------------------------- */

/**
 * vd_qp_lock_all() - take the QP's three locks in their order
 * @qp: the QP
 *
 * @qp->lock (with bottom halves disabled), then @qp->sq.lock and
 * @qp->rq.lock, as the locking rules of qp.h say.
 */
void vd_qp_lock_all(struct vd_qp *qp)
	__acquires(&qp->lock) __acquires(&qp->sq.lock) __acquires(&qp->rq.lock)
{
	spin_lock_bh(&qp->lock);
	spin_lock(&qp->sq.lock);
	spin_lock(&qp->rq.lock);
}

/**
 * vd_qp_unlock_all() - release what vd_qp_lock_all() took
 * @qp: the QP
 */
void vd_qp_unlock_all(struct vd_qp *qp)
	__releases(&qp->rq.lock) __releases(&qp->sq.lock) __releases(&qp->lock)
{
	spin_unlock(&qp->rq.lock);
	spin_unlock(&qp->sq.lock);
	spin_unlock_bh(&qp->lock);
}

static void qp_set_state(struct vd_qp *qp, u32 state)
{
	lockdep_assert_held(&qp->lock);
	lockdep_assert_held(&qp->sq.lock);
	lockdep_assert_held(&qp->rq.lock);

	vd_dbg_qp(qp, "state %u -> %u\n", qp->state, state);
	WRITE_ONCE(qp->state, state);
	/*
	 * In RTS a message that finds no receive in the FIFO takes the new
	 * ones from the ring (rx_take_recv()), so the library may leave the
	 * RQ's DOORBELL out. Leaving RTS the flag goes before anything takes
	 * from the ring again (the flush of Error, a DOORBELL): either that
	 * sees a WQE published meanwhile, or the library sees the flag clear
	 * and rings (its fence between the producer store and this load;
	 * Documentation/rings.rst). Only written here: what the user may
	 * write into the page is never read back.
	 */
	WRITE_ONCE(qp->db->rq_on_demand, !qp->srq && state == VIADUCT_QPS_RTS);
	/* flag before producer: pairs with the library's fence */
	smp_mb();
}

/* Entering Error: every outstanding WR completes, in post order per queue. */
static void qp_flush(struct vd_qp *qp)
{
	wq_flush(qp, &qp->sq, VD_WQ_TAKE_BATCH);
	wq_flush(qp, &qp->rq, VD_WQ_TAKE_BATCH);
}

/*
 * A QP on an SRQ entered Error and was flushed: it takes no more WRs from
 * the SRQ, which the verbs report as the last WQE reached.
 */
static void qp_last_wqe(struct vd_qp *qp)
{
	if (qp->srq && qp->aq)
		vd_async_queue_push(qp->aq, VIADUCT_EVENT_QP_LAST_WQE,
				    qp->handle, qp->user_data, 0);
}

static int qp_consume(struct vd_qp *qp, unsigned int which, bool direct,
		      u32 budget);

/*
 * Tells the transport and the polling worker that the state changed: the
 * transport may have to start, stop or close; WQEs that waited in the ring
 * may be takeable now (in Error: are flushed, here).
 */
static void qp_state_changed(struct vd_qp *qp)
{
	vd_qp_sq_work(qp);
	/* Error: what qp_flush() left in the rings, in batches */
	if (READ_ONCE(qp->state) == VIADUCT_QPS_ERROR) {
		qp_consume(qp, VD_QP_SQ, false, qp->sq.depth);
		qp_consume(qp, VD_QP_RQ, false, qp->rq.depth);
	}
	if (qp->worker)
		vd_doorbell_kick(qp->worker);
}

/**
 * vd_qp_enter_error() - move the QP to Error on its own
 * @qp: the QP
 * @event: the async event to raise (VIADUCT_EVENT_*), 0 for none
 * @detail: the event's detail
 *
 * For Error entered on the QP's own (a malformed WQE, a garbage index, a
 * CQ overflow, or the transport) rather than by MODIFY_QP. Unless the QP is
 * in Error already or destroyed: flushes every outstanding WR, raises
 * @event, and for a QP on an SRQ VIADUCT_EVENT_QP_LAST_WQE.
 *
 * Context: Process or softirq context, no QP lock held.
 */
void vd_qp_enter_error(struct vd_qp *qp, u32 event, u32 detail)
{
	bool changed = false;

	vd_qp_lock_all(qp);
	if (!qp->destroyed && qp->state != VIADUCT_QPS_ERROR) {
		qp_set_state(qp, VIADUCT_QPS_ERROR);
		qp_flush(qp);
		if (event && qp->aq)
			vd_async_queue_push(qp->aq, event, qp->handle,
					    qp->user_data, detail);
		qp_last_wqe(qp);
		changed = true;
	}
	vd_qp_unlock_all(qp);
	if (changed)
		qp_state_changed(qp);
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_enter_error);

/**
 * vd_qp_enter_rts() - Idle to RTS, bound to an LLP stream
 * @qp: the QP
 * @conn: the stream, owned by the connection manager
 *
 * For the connection manager.
 *
 * Context: Process or softirq context, no QP lock held.
 * Return: 0; -EINVAL for no @conn, or a QP not in Idle or destroyed.
 */
int vd_qp_enter_rts(struct vd_qp *qp, struct vd_conn *conn)
{
	int err = -EINVAL;

	if (!conn)
		return -EINVAL;
	vd_qp_lock_all(qp);
	if (!qp->destroyed && qp->state == VIADUCT_QPS_IDLE) {
		qp->conn = conn;
		qp_set_state(qp, VIADUCT_QPS_RTS);
		err = 0;
	}
	vd_qp_unlock_all(qp);
	if (!err)
		qp_state_changed(qp);
	return err;
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_enter_rts);

/**
 * vd_qp_llp_closed() - the QP's LLP stream is closed
 * @qp: the QP
 * @conn: the stream the connection manager closed
 *
 * A QP still bound to @conn forgets it and leaves RTS, Closing or
 * Terminate: Closing, with nothing left in flight on the SQ, ends in Idle
 * (a completed graceful close; posted receives stay for the next
 * connection); everything else ends in Error, flushing what is
 * outstanding. A QP bound to another stream, or to none (Error -> Idle
 * forgot it), is left alone.
 *
 * Context: Process or softirq context, no QP lock held.
 */
void vd_qp_llp_closed(struct vd_qp *qp, struct vd_conn *conn)
{
	bool changed = false;
	u32 next;

	vd_qp_lock_all(qp);
	if (qp->conn != conn)
		goto out;
	qp->conn = NULL;
	if (qp->destroyed)
		goto out;
	switch (qp->state) {
	case VIADUCT_QPS_CLOSING:
		next = qp->sq.tail == qp->sq.head ? VIADUCT_QPS_IDLE :
		       VIADUCT_QPS_ERROR;
		break;
	case VIADUCT_QPS_RTS:
	case VIADUCT_QPS_TERMINATE:
		next = VIADUCT_QPS_ERROR;
		break;
	default:
		goto out;
	}
	qp_set_state(qp, next);
	if (next == VIADUCT_QPS_ERROR) {
		qp_flush(qp);
		qp_last_wqe(qp);
	}
	changed = true;
out:
	vd_qp_unlock_all(qp);
	if (changed)
		qp_state_changed(qp);
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_llp_closed);

/**
 * vd_qp_modify() - MODIFY_QP
 * @qp: the QP
 * @m: the request: the attributes of @m->mask, checked as at creation
 *
 * All or nothing. Leaving RTS asks the CM to end the stream
 * (struct vd_conn.end: a graceful close for Closing, a Terminate and our FIN
 * for Terminate and Error; Documentation/qp.rst); Error flushes; Error ->
 * Idle forgets the stream and the last Terminate, and restarts the queues
 * at the current indices.
 *
 * Context: Process context.
 * Return: 0; -EINVAL for a transition or value the rules forbid (nothing
 * changed); -ENOENT once the QP was destroyed.
 */
int vd_qp_modify(struct vd_qp *qp, const struct viaduct_modify_qp *m)
{
	u32 cur, next;
	bool changed = false;
	int err;

	vd_qp_lock_all(qp);
	if (qp->destroyed) {
		err = -ENOENT;
		goto out;
	}
	cur = qp->state;
	next = m->mask & VIADUCT_QP_ATTR_STATE ? m->state : cur;
	err = vd_qp_check_transition(cur, next, m->mask, !!qp->conn);
	if (!err)
		err = vd_qp_check_modify(m);
	if (err)
		goto out;

	/* Everything is checked: nothing below can fail. */
	if (m->mask & VIADUCT_QP_ATTR_ACCESS)
		qp->access = m->access;
	if (m->mask & VIADUCT_QP_ATTR_ORD)
		qp->ord = m->ord;
	if (m->mask & VIADUCT_QP_ATTR_IRD)
		qp->ird = m->ird;
	if (next == cur)
		goto out;

	/* leaving RTS ends the stream: the CM closes it (conn.h) */
	if (qp->conn && cur == VIADUCT_QPS_RTS && next != VIADUCT_QPS_IDLE)
		qp->conn->end(qp->conn, next == VIADUCT_QPS_CLOSING ?
			      VD_CONN_END_CLOSE : VD_CONN_END_TERMINATE);

	switch (next) {
	case VIADUCT_QPS_ERROR:
		qp_set_state(qp, next);
		qp_flush(qp);
		qp_last_wqe(qp);
		break;
	case VIADUCT_QPS_IDLE:
		/*
		 * From Error: what was posted since is flushed too (the FIFOs
		 * are empty already), then the queues start afresh at the
		 * current indices, which userspace keeps.
		 */
		wq_flush(qp, &qp->sq, qp->sq.depth);
		wq_flush(qp, &qp->rq, qp->rq.depth);
		qp->sq.stopped = false;
		qp->rq.stopped = false;
		qp->conn = NULL;
		qp->terminate = 0;
		qp_set_state(qp, next);
		break;
	default:
		/* RTS (with an LLP stream), Closing, Terminate */
		qp_set_state(qp, next);
		break;
	}
	changed = true;
out:
	vd_qp_unlock_all(qp);
	if (changed)
		qp_state_changed(qp);
	return err;
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_modify);

/**
 * vd_qp_query() - QUERY_QP
 * @qp: the QP
 * @q: filled, all but @q->handle (an RQ depth of 0 on an SRQ)
 *
 * Context: Process context.
 */
void vd_qp_query(struct vd_qp *qp, struct viaduct_query_qp *q)
{
	vd_qp_lock_all(qp);
	q->state = qp->state;
	q->access = qp->access;
	q->ord = qp->ord;
	q->ird = qp->ird;
	q->qpn = qp->qpn;
	q->sq_depth = qp->sq.depth;
	q->rq_depth = qp->srq ? 0 : qp->rq.depth;
	q->sq_outstanding = qp->sq.tail - qp->sq.head;
	q->rq_outstanding = qp->rq.tail - qp->rq.head;
	q->terminate = qp->terminate;
	q->reserved = 0;
	vd_qp_unlock_all(qp);
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_query);

/* --- Consuming and completing --------------------------------------- */

static void qp_sq_send(struct vd_qp *qp);

/*
 * Takes at most @budget WQEs, VD_WQ_TAKE_BATCH at a time with the queue's
 * lock dropped (bottom halves on) in between. @direct: the caller is a
 * posting context (DOORBELL, the polling worker) that may send the new SQ
 * WRs itself (qp_sq_send()).
 */
static int qp_consume(struct vd_qp *qp, unsigned int which, bool direct,
		      u32 budget)
{
	struct vd_wq *wq = qp_wq(qp, which);
	bool bad = false, work = false;
	int n = 0, got;
	u32 step;

	do {
		step = min_t(u32, budget - n, VD_WQ_TAKE_BATCH);
		spin_lock_bh(&wq->lock);
		if (unlikely(qp->destroyed)) {
			spin_unlock_bh(&wq->lock);
			return -ENOENT;
		}
		got = wq_take(qp, wq, &bad, step);
		work |= got && !wq->is_rq && qp->state == VIADUCT_QPS_RTS;
		spin_unlock_bh(&wq->lock);
		n += got;
	} while (got == step && n < budget && !bad);

	if (unlikely(bad))
		vd_qp_enter_error(qp, VIADUCT_EVENT_QP_REQ_ERR, 0);
	else if (work && direct)
		qp_sq_send(qp);
	else if (work)
		vd_qp_sq_work(qp);
	return n;
}

/**
 * vd_qp_consume() - take new WQEs from a ring
 * @qp: the QP
 * @which: VD_QP_SQ or VD_QP_RQ
 *
 * Copies the new WQEs into the in-flight FIFO and validates the copies; a
 * malformed one moves the QP to Error (VIADUCT_EVENT_QP_REQ_ERR). New SQ
 * WRs in RTS are handed to the transport's work (vd_qp_sq_work()). A QP on
 * an SRQ takes nothing for its RQ here: see vd_qp_take_srq().
 *
 * Context: Any context but hard irq, with no QP lock held.
 * Return: how many were taken (>= 0), or -ENOENT once the QP was
 * destroyed.
 */
int vd_qp_consume(struct vd_qp *qp, unsigned int which)
{
	return qp_consume(qp, which, false, qp_wq(qp, which)->depth);
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_consume);

/**
 * vd_qp_take_srq() - take a receive from the QP's SRQ
 * @qp: a QP whose arriving message needs a receive
 *
 * For a QP on an SRQ, in RTS or Closing: takes the SRQ's oldest WR into
 * the (empty) RQ FIFO. A malformed one completes with its status and moves
 * the QP to Error, as on an RQ.
 *
 * Context: As vd_qp_consume().
 * Return: 1 if it took one; 0 if none (or the QP is not on an SRQ, not in
 * RTS or Closing, or its RQ FIFO is not empty or stopped); -ENOENT once
 * the QP was destroyed.
 */
int vd_qp_take_srq(struct vd_qp *qp)
{
	struct vd_wq *wq = &qp->rq;
	struct vd_wqe_meta *meta;
	bool bad = false;
	int n = 0;

	spin_lock_bh(&wq->lock);
	if (unlikely(qp->destroyed)) {
		n = -ENOENT;
		goto out;
	}
	if (!qp->srq || wq->stopped || wq->tail != wq->head ||
	    (qp->state != VIADUCT_QPS_RTS && qp->state != VIADUCT_QPS_CLOSING))
		goto out;
	meta = wq_meta(wq, wq->tail);
	if (!vd_srq_take(qp->srq, wq_copy(wq, wq->tail), meta))
		goto out;
	wq->tail++;
	n = 1;
	if (unlikely(meta->status)) {
		/* as on an RQ: it completes with its status, the QP errs */
		vd_dbg_qp(qp, "malformed SRQ WQE: status %u\n", meta->status);
		wq->stopped = true;
		bad = true;
	}
out:
	spin_unlock_bh(&wq->lock);
	if (unlikely(bad))
		vd_qp_enter_error(qp, VIADUCT_EVENT_QP_REQ_ERR, 0);
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_take_srq);

/**
 * vd_qp_complete() - retire the oldest in-flight WR of a queue
 * @qp: the QP
 * @which: VD_QP_SQ or VD_QP_RQ
 * @cqe: the CQE the transport prepared (status, byte_len, imm_data, flags,
 *       vendor_err; the rest is filled here)
 * @solicited: the completion is solicited (for the CQ's arm)
 *
 * A successful unsignaled SQ WR writes no CQE. If the CQ overflowed, the
 * QP enters Error with VIADUCT_EVENT_QP_FATAL. The slot freed in the FIFO
 * is refilled from the ring at once.
 *
 * Context: Process or softirq context, no QP lock held.
 * Return: 0, or -ENOENT if nothing was in flight (the QP was flushed or
 * destroyed meanwhile).
 */
int vd_qp_complete(struct vd_qp *qp, unsigned int which,
		   struct viaduct_cqe *cqe, bool solicited)
{
	struct vd_wq *wq = qp_wq(qp, which);
	bool bad = false, overflow = false, work = false;
	const void *copy;
	int err = 0;

	spin_lock_bh(&wq->lock);
	if (qp->destroyed || wq->head == wq->tail) {
		err = -ENOENT;
		goto out;
	}
	copy = wq_copy(wq, wq->head);
	if (wq->is_rq || cqe->status != VIADUCT_WC_SUCCESS ||
	    ((const struct viaduct_sqe *)copy)->flags & VIADUCT_SQE_SIGNALED)
		overflow = wq_push(qp, wq, copy, cqe, solicited) == -ENOSPC;
	wq->head++;
	work = wq_take(qp, wq, &bad, VD_WQ_TAKE_BATCH) && !wq->is_rq &&
	       qp->state == VIADUCT_QPS_RTS;
out:
	spin_unlock_bh(&wq->lock);

	if (overflow)
		vd_qp_enter_error(qp, VIADUCT_EVENT_QP_FATAL, 0);
	else if (bad)
		vd_qp_enter_error(qp, VIADUCT_EVENT_QP_REQ_ERR, 0);
	else if (work)
		vd_qp_sq_work(qp);
	return err;
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_complete);

/**
 * vd_qp_sq_work() - tell the transport about the SQ
 * @qp: the QP
 *
 * The transport hook, called whenever the SQ got WRs to execute in RTS or
 * the state changed. It reaches the transport only through the ops the
 * transport installed with its stream (struct vd_qp_tp_ops), which must
 * only schedule work, never execute WRs inline: vd_qp_complete() calls it
 * too. The transport walks the SQ FIFO from its own cursor under
 * @sq.lock; an entry whose meta status is nonzero is malformed, and
 * nothing from it on may be executed (the QP is about to enter Error).
 *
 * Context: Process or softirq context, no QP lock held.
 */
void vd_qp_sq_work(struct vd_qp *qp)
{
	spin_lock_bh(&qp->lock);
	if (qp->tp)
		qp->tp_ops->sq_work(qp->tp);
	spin_unlock_bh(&qp->lock);
}

/*
 * The posting context took new SQ WRs: the transport sends them from here
 * if its stream is idle (struct vd_qp_tp_ops.sq_get/sq_send), else its
 * work does. Process context, no QP lock held.
 */
static void qp_sq_send(struct vd_qp *qp)
{
	const struct vd_qp_tp_ops *ops;
	void *tp;

	spin_lock_bh(&qp->lock);
	ops = qp->tp_ops;
	tp = qp->tp;
	if (tp && !ops->sq_get(tp))
		tp = NULL;
	spin_unlock_bh(&qp->lock);
	if (tp)
		ops->sq_send(tp);
}

/* --- Doorbells ------------------------------------------------------ */

#define VD_DOORBELL_ALL		(VIADUCT_DOORBELL_SQ | VIADUCT_DOORBELL_RQ)

/**
 * vd_qp_doorbell() - DOORBELL
 * @qp: the QP
 * @flags: VIADUCT_DOORBELL_SQ and/or VIADUCT_DOORBELL_RQ
 *
 * Takes the new WQEs of those queues at once, and for a polled QP also
 * wakes the worker so that it resumes polling. New SQ WRs may be sent from
 * here if the stream is idle (struct vd_qp_tp_ops.sq_get/sq_send).
 *
 * Context: Process context, no QP lock held.
 * Return: 0; -EINVAL for no flag or an unknown one; -ENOENT once the QP
 * was destroyed.
 */
int vd_qp_doorbell(struct vd_qp *qp, u32 flags)
{
	int n;

	if (!flags || flags & ~VD_DOORBELL_ALL)
		return -EINVAL;
	vd_stat_inc(doorbells);

	/*
	 * A polled QP's user rings only while the worker sleeps: wake it so
	 * that it polls again, and take the WQEs here as well, so that they
	 * do not wait for the worker to be scheduled.
	 */
	if (qp->worker)
		vd_doorbell_kick(qp->worker);
	if (flags & VIADUCT_DOORBELL_SQ) {
		n = qp_consume(qp, VD_QP_SQ, true, qp->sq.depth);
		if (n < 0)
			return n;
	}
	if (flags & VIADUCT_DOORBELL_RQ) {
		n = vd_qp_consume(qp, VD_QP_RQ);
		if (n < 0)
			return n;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_doorbell);

/**
 * vd_qp_db_poll() - struct vd_db_client.poll of a POLLED QP
 * @c: the QP's doorbell client
 * @budget: the most WQEs to take from each queue
 *
 * One turn of the worker at the QP: takes what the user posted, at most
 * @budget per queue. WQEs flushed into a QP in Error are taken, but are
 * not work: they must not keep the worker spinning for whoever posts them.
 *
 * Return: whether WQEs to execute were taken.
 */
bool vd_qp_db_poll(struct vd_db_client *c, unsigned int budget)
{
	struct vd_qp *qp = container_of(c, struct vd_qp, db_client);
	bool work = false;

	if (vd_qp_db_pending(qp, VD_QP_SQ) &&
	    qp_consume(qp, VD_QP_SQ, true, budget) > 0)
		work = true;
	if (vd_qp_db_pending(qp, VD_QP_RQ) &&
	    qp_consume(qp, VD_QP_RQ, false, budget) > 0)
		work = true;
	return work && READ_ONCE(qp->state) != VIADUCT_QPS_ERROR;
}
