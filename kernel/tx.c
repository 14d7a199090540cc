// SPDX-License-Identifier: GPL-2.0
/*
 * The transmit half of the iWARP transport: messages sent as FPDUs, RDMA
 * Read Responses, Terminate, and SQ completions in order. tx_wr.c picks
 * the next message (a response, the RTR or an SQ work request, checked);
 * fpdu.c builds the FPDUs of a message by copy, zcopy.c by
 * reference; stream.c starts and stops a stream.
 * transport.h has the structures and the locking,
 * Documentation/transport.rst the design.
 */
#include <linux/bvec.h>
#include <linux/hashtable.h>
#include <linux/highmem.h>
#include <linux/memcontrol.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/net.h>
#include <linux/netdev_features.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/tcp.h>
#include <linux/uio.h>
#include <linux/workqueue.h>
#include <net/sock.h>

#include "device.h"
#include "mem.h"
#include "qp.h"
#include "stats.h"
#include "tpt.h"
#include "transport.h"
#include "zcopy.h"

/* Our own segments when the socket has no MSS yet: the IPv4 minimum. */
static void tp_set_terminate(struct vd_qp *qp, u16 code)
{
	spin_lock_bh(&qp->lock);
	qp->terminate = code;
	spin_unlock_bh(&qp->lock);
}

/* --- SQ completions, in order ---------------------------------------- */

/*
 * Hands every finished SQ WR at the head to the QP, oldest first: a Send
 * done behind an RDMA Read still in flight waits for it. Returns true if
 * it retired a WR that failed; the caller then fails the stream.
 */
static bool tp_retire(struct vd_tp *tp)
{
	lockdep_assert_held(&tp->lock);

	while (tp->sq_retired != tp->sq_started) {
		struct vd_sq_rec *rec = &tp->sq_rec[tp->sq_retired & tp->sq_mask];
		struct viaduct_cqe cqe = {};

		if (!rec->done)
			break;
		cqe.status = rec->status;
		cqe.byte_len = rec->byte_len;
		cqe.vendor_err = rec->vendor_err;
		tp->sq_retired++;
		vd_qp_complete(tp->qp, VD_QP_SQ, &cqe, false);
		if (cqe.status)
			return true;
	}
	return false;
}

/* A local failure (our WR, our memory): Terminate, local catastrophic. */
static void tp_local_failure(struct vd_tp *tp)
{
	vd_tp_terminate(tp, vd_term_code(VD_IW_RDMAP_CATASTROPHIC),
			VIADUCT_EVENT_QP_FATAL, NULL, 0, 0);
}

void vd_tp_wr_finish(struct vd_tp *tp, u32 seq, u8 status, u32 len)
{
	struct vd_sq_rec *rec;
	bool failed;

	spin_lock_bh(&tp->lock);
	/* a received Terminate may have ended it already */
	if (seq - tp->sq_retired >= tp->sq_started - tp->sq_retired) {
		spin_unlock_bh(&tp->lock);
		return;
	}
	rec = &tp->sq_rec[seq & tp->sq_mask];
	rec->status = status;
	rec->byte_len = status ? 0 : len;
	rec->done = true;
	failed = tp_retire(tp);
	spin_unlock_bh(&tp->lock);
	if (failed)
		tp_local_failure(tp);
	else if (READ_ONCE(tp->tx_fenced))
		vd_tp_queue_tx(tp);
}

/*
 * RDMA Read with local invalidate: the sink STag becomes INVALID once the
 * response is placed, before the WR completes. Returns the CQE status.
 */
static u8 tp_read_invalidate(struct vd_tp *tp, u32 stag)
{
	enum vd_access_status st;

	st = vd_tpt_invalidate_sync(&tp->dev->tpt, stag, tp->qp->pd,
				    tp->qp->qpn, false);
	return vd_access_wc_status(st, false);
}

/* rx.c: the last segment of the RDMA Read Response at the ORQ's head. */
void vd_tp_read_done(struct vd_tp *tp)
{
	struct vd_orq_entry *e;
	bool failed = false;
	u8 status = VIADUCT_WC_SUCCESS;

	/* only rx.c moves the head: the entry stays ours until then */
	e = &tp->orq[tp->orq_head % VD_MAX_ORD];
	if (e->inv)
		status = tp_read_invalidate(tp, e->sink_stag);
	spin_lock_bh(&tp->lock);
	tp->orq_head++;
	if (!e->rtr) {
		struct vd_sq_rec *rec = &tp->sq_rec[e->seq & tp->sq_mask];

		rec->status = status;
		rec->byte_len = status ? 0 : e->size;
		rec->done = true;
		failed = tp_retire(tp);
	}
	spin_unlock_bh(&tp->lock);
	if (failed)
		tp_local_failure(tp);
	/* ORD room, or a read fence lifted */
	vd_tp_queue_tx(tp);
}

/* --- Terminate ------------------------------------------------------- */

/*
 * We found a violation (rx.c) or failed locally: build a Terminate about
 * the segment whose headers are at @bad, send it at the next FPDU
 * boundary, and move the QP to Error with @event. Then the stream ends as
 * one its QP's owner ends (conn.h, struct vd_conn.end): the CM stops the
 * transport, whose last FPDU is this Terminate, sends our FIN and waits
 * for the peer's (DISCONNECTED), resetting the connection if it does not
 * come in time, as the RDMA verbs draft's Terminate state has it (section
 * 6.2.3: send the Terminate, begin the LLP Close, bound it by a timeout).
 * A peer that sent something bad cannot keep the connection open. Only
 * the first call of a stream does anything; after a received Terminate
 * none does.
 */
/* Builds the stream's Terminate (PENDING), or gives up on it (DONE). */
static void tp_term_build(struct vd_tp *tp, u16 code, const void *bad,
			  u32 bad_len, u32 seg_len)
{
	u8 *ulpdu = tp->term_fpdu + VD_MPA_LEN_SIZE;
	int len;

	lockdep_assert_held(&tp->lock);
	len = vd_term_build(ulpdu, sizeof(tp->term_fpdu) - VD_MPA_LEN_SIZE,
			    code, VD_MSN_INITIAL, bad, bad_len, seg_len);
	if (len >= 0)
		len = vd_mpa_fpdu_seal(tp->term_fpdu, sizeof(tp->term_fpdu),
				       len, tp->crc_tx);
	tp->term_len = max(len, 0);
	tp->term = len > 0 ? VD_TP_TERM_PENDING : VD_TP_TERM_DONE;
}

void vd_tp_terminate(struct vd_tp *tp, u16 code, u32 event,
		     const void *bad, u32 bad_len, u32 seg_len)
{
	spin_lock_bh(&tp->lock);
	if (tp->term != VD_TP_TERM_NONE) {
		spin_unlock_bh(&tp->lock);
		return;
	}
	tp_term_build(tp, code, bad, bad_len, seg_len);
	/*
	 * Not sent before the QP is in Error with @code: the peer may close
	 * the stream the moment the Terminate arrives, and the connection
	 * manager would then move the QP first, its event without the code.
	 */
	if (tp->term == VD_TP_TERM_PENDING)
		tp->term = VD_TP_TERM_HELD;
	spin_unlock_bh(&tp->lock);

	pr_debug("qp%u: sending Terminate 0x%04x (%s)\n", tp->qp->qpn, code,
		 vd_term_name(code));
	tp_set_terminate(tp->qp, code);
	vd_qp_enter_error(tp->qp, event, code);
	spin_lock_bh(&tp->lock);
	if (tp->term == VD_TP_TERM_HELD)
		tp->term = VD_TP_TERM_PENDING;
	spin_unlock_bh(&tp->lock);
	vd_tp_queue_tx(tp);
	tp->conn->end(tp->conn, VD_CONN_END_TERMINATE);
}

/*
 * rx.c: the peer sent a Terminate. Never answered; it ends the oldest
 * SQ WR in flight with the status the code implies, and the QP enters
 * Error, which flushes the rest.
 */
void vd_tp_terminated(struct vd_tp *tp, const struct vd_term_msg *msg)
{
	spin_lock_bh(&tp->lock);
	tp->term = VD_TP_TERM_DONE;
	if (tp->sq_retired != tp->sq_started) {
		struct vd_sq_rec *rec =
			&tp->sq_rec[tp->sq_retired & tp->sq_mask];

		rec->status = vd_term_remote_wc_status(msg);
		rec->vendor_err = msg->code;
		rec->byte_len = 0;
		rec->done = true;
		tp_retire(tp);
	}
	spin_unlock_bh(&tp->lock);

	pr_info_ratelimited("qp%u: Terminate received: 0x%04x (%s)\n",
			    tp->qp->qpn, msg->code, vd_term_name(msg->code));
	tp_set_terminate(tp->qp, msg->code);
	vd_qp_enter_error(tp->qp, VIADUCT_EVENT_QP_FATAL, msg->code);
	vd_tp_queue_tx(tp);
	vd_conn_closed(tp->conn, -ECONNRESET);
}

/* --- FPDUs ----------------------------------------------------------- */

/*
 * An RDMA Write with immediate data is in the socket: its Immediate Data
 * message goes next, on the Send queue's MSNs, and the WR completes when
 * that one is out too.
 */
static void tx_start_imm(struct vd_tp *tp)
{
	struct vd_tx_msg *msg = &tp->msg;
	u32 seq = msg->seq, wr_len = msg->wr_len, imm = msg->imm;
	bool se = msg->imm_se;

	vd_tx_msg_init(tp, se ? VD_OP_IMM_SE : VD_OP_IMM, 0);
	msg->hdr.msn = tp->msn[VD_QN_SEND]++;
	msg->hdr.imm = imm;
	msg->wr = true;
	msg->seq = seq;
	msg->wr_len = wr_len;
}

/*
 * Builds the next batch of FPDUs of the message, by reference when the
 * message is sent that way and the headers found a page; else over the
 * payload's pages for sendmsg() to copy (one copy), or copied into
 * @tp->tx_buf.
 */
static int tx_build(struct vd_tp *tp)
{
	int ret;

	tp->tx_off = 0;
	tp->tx_left = 0;
	if (!tp->msg.index)
		vd_zc_begin(tp);
	if (tp->zmsg) {
		ret = vd_zc_build(tp);
		if (ret != -ENOMEM)
			return ret;
	}
	if (vd_fpdu_pages_ok(tp))
		return vd_fpdu_build_pages(tp);
	return vd_fpdu_build_copy(tp);
}

/*
 * Retires the WRs of messages sent by reference whose pages TCP has let
 * go of: they complete now, in order with the others (tp_retire()).
 */
void vd_tx_zc_retire(struct vd_tp *tp)
{
	struct vd_zc_msg *zm, *next;
	LIST_HEAD(done);

	vd_zc_take_done(tp->zc, &done);
	list_for_each_entry_safe(zm, next, &done, node) {
		list_del(&zm->node);
		if (zm->wr)
			vd_tp_wr_finish(tp, zm->seq, VIADUCT_WC_SUCCESS, zm->len);
		vd_zc_msg_free(zm);
	}
}

/*
 * A Read Response's last FPDU is about to go into the socket: its IRQ
 * slot is given back first. Once the bytes are in the socket the peer may
 * place them, free its ORD slot and send its next Read Request, which can
 * be handled here (in the receive upcall) before this thread goes on: the
 * slot must be free by then, or that request finds the IRD full. The
 * message keeps the entry's reference on the region until it is done.
 */
static void tx_response_pop(struct vd_tp *tp)
{
	struct vd_tx_msg *msg = &tp->msg;

	if (!msg->response || msg->irq_popped)
		return;
	spin_lock_bh(&tp->lock);
	/* @msg->mr is the entry's region: its reference moves to @msg */
	tp->irq[tp->irq_head % VD_MAX_IRD].mr = NULL;
	tp->irq_head++;
	spin_unlock_bh(&tp->lock);
	msg->irq_popped = true;
}

/* A Read Response ends, sent or not: the region's reference goes. */
static void tx_response_release(struct vd_tp *tp)
{
	struct vd_tx_msg *msg = &tp->msg;

	if (msg->irq_popped && msg->mr)
		vd_mr_put(msg->mr);
	msg->irq_popped = false;
	msg->mr = NULL;
}

/* The message's last FPDU is in the socket. */
static void tx_msg_done(struct vd_tp *tp)
{
	struct vd_tx_msg *msg = &tp->msg;

	if (msg->response) {
		tx_response_pop(tp);
		tx_response_release(tp);
	}
	msg->active = false;
	if (tp->zmsg) {
		/* its WR completes when TCP has let go of the pages */
		vd_zc_msg_put(tp->zmsg);
		tp->zmsg = NULL;
		return;
	}
	if (msg->imm_follows) {
		tx_start_imm(tp);
		return;
	}
	/* A Read completes when its response is placed. */
	if (msg->wr && msg->hdr.opcode != VD_OP_READ_REQ)
		vd_tp_wr_finish(tp, msg->seq, VIADUCT_WC_SUCCESS, msg->wr_len);
}

/*
 * The source of the Read Response being streamed was invalidated or
 * deregistered: the rest is not sent, and the requester learns that its
 * source STag is no longer valid (RDMAP, remote protection, invalid STag).
 */
static void tp_response_source_gone(struct vd_tp *tp)
{
	vd_tp_terminate(tp, vd_access_term_rdmap(VD_ACCESS_INVALID_STATE),
			VIADUCT_EVENT_QP_ACCESS_ERR, NULL, 0, 0);
}

/* A message could not be built (its memory went away): fail it. */
static void tx_msg_failed(struct vd_tp *tp, int err)
{
	struct vd_tx_msg *msg = &tp->msg;

	pr_debug("qp%u: message failed: %d\n", tp->qp->qpn, err);
	msg->active = false;
	/* a popped response's region reference is the message's to drop */
	tx_response_release(tp);
	tp->tx_failed = true;
	/* what was built of the batch is not sent */
	vd_zc_release_batch(tp);
	vd_fpdu_pages_settle(tp, false);
	tp->tx_left = 0;
	if (tp->zmsg) {
		/* the WR fails now; TCP may still hold earlier FPDUs */
		tp->zmsg->wr = false;
		vd_zc_msg_put(tp->zmsg);
		tp->zmsg = NULL;
	}
	if (msg->wr) {
		if (msg->hdr.opcode == VD_OP_READ_REQ) {
			/* never sent: take it back from the ORQ */
			spin_lock_bh(&tp->lock);
			tp->orq_tail--;
			spin_unlock_bh(&tp->lock);
		}
		vd_tp_wr_finish(tp, msg->seq, VIADUCT_WC_LOC_PROT_ERR, 0);
	}
	/* part of the message may be out: the peer must learn */
	if (msg->response && err == -ESTALE)
		tp_response_source_gone(tp);
	else
		tp_local_failure(tp);
}

/* Counts FPDU bytes the socket took, by where it copied them from. */
static void tx_count_bytes(struct vd_tp *tp, int n)
{
	if (tp->tx_npages)
		vd_stat_add(tx_onecopy_bytes, n);
	else if (!tp->tx_nbvec)
		vd_stat_add(tx_buffered_bytes, n);
}

/*
 * Sends the batch: from @tp->tx_buf; or over the payload's pages, which
 * sendmsg() copies into TCP's skbs before it returns (the rest, if the
 * socket has no room, goes to @tp->tx_buf: vd_fpdu_pages_settle()); or by
 * reference with MSG_ZEROCOPY and the message's ubuf, which every skb
 * holding its pages references.
 */
static int tx_push(struct vd_tp *tp)
{
	if (tp->msg.active && tp->msg.finished)
		tx_response_pop(tp);
	while (tp->tx_left) {
		struct kvec kv = {
			.iov_base = tp->tx_buf + tp->tx_off,
			.iov_len = tp->tx_left,
		};
		struct msghdr m = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
		int ret;

		if (tp->msg.active && !tp->msg.finished)
			m.msg_flags |= MSG_MORE;
		if (tp->tx_nbvec) {
			iov_iter_bvec(&m.msg_iter, ITER_SOURCE, tp->tx_bvec,
				      tp->tx_nbvec, tp->tx_off + tp->tx_left);
			iov_iter_advance(&m.msg_iter, tp->tx_off);
			m.msg_flags |= MSG_ZEROCOPY;
			m.msg_ubuf = &tp->zmsg->ubuf;
			ret = sock_sendmsg(tp->sock, &m);
		} else if (tp->tx_npages) {
			/* a plain sendmsg(): copied before it returns */
			iov_iter_bvec(&m.msg_iter, ITER_SOURCE, tp->tx_bvec,
				      tp->tx_npages, tp->tx_off + tp->tx_left);
			iov_iter_advance(&m.msg_iter, tp->tx_off);
			ret = sock_sendmsg(tp->sock, &m);
		} else {
			ret = kernel_sendmsg(tp->sock, &m, &kv, 1, kv.iov_len);
		}
		if (ret < 0) {
			vd_fpdu_pages_settle(tp, ret == -EAGAIN);
			return ret;
		}
		tx_count_bytes(tp, ret);
		tp->tx_off += ret;
		tp->tx_left -= ret;
	}
	/* TCP has its own references, or its copy, now */
	vd_zc_release_batch(tp);
	vd_fpdu_pages_settle(tp, false);
	return 0;
}

/* A whole FPDU went into the socket. */
static void tx_sent(struct vd_tp *tp)
{
	if (tp->tx_term) {
		spin_lock_bh(&tp->lock);
		tp->term = VD_TP_TERM_DONE;
		spin_unlock_bh(&tp->lock);
		/*
		 * The peer closes the stream when the Terminate arrives; an
		 * abortive close from here could drop it from the send queue.
		 */
		tp->tx_dead = true;
		/*
		 * The connection manager may be waiting for it to end the
		 * stream (vd_tp_terminate(); struct vd_stream_ops.term_pending).
		 * Not from stop() itself: the CM is ending the stream then.
		 */
		if (!READ_ONCE(tp->stopping))
			tp->conn->end(tp->conn, VD_CONN_END_TERMINATE);
		return;
	}
	if (tp->msg.active && tp->msg.finished)
		tx_msg_done(tp);
}

/* A message starts: count who carries it (stats.h). */
static void tx_count_msg(struct vd_tp *tp)
{
	if (tp->tx_direct)
		vd_stat_inc(tx_direct);
	else
		vd_stat_inc(tx_deferred);
}

/*
 * One turn of the transmitter, @tx_mutex held. At FPDU boundaries a
 * pending Terminate goes first; otherwise one FPDU after the other, a
 * message at a time, never interleaved, until there is nothing to send,
 * the socket is full (its write_space callback queues the work) or the
 * turn's @budget is spent (the work is queued behind the other streams).
 */
static void tx_run(struct vd_tp *tp, int budget)
{
	enum vd_tp_term term;
	int ret;

	lockdep_assert_held(&tp->tx_mutex);

	if (tp->zc)
		vd_tx_zc_retire(tp);
	while (!tp->tx_dead && !READ_ONCE(tp->stopping)) {
		if (tp->tx_left) {
			ret = tx_push(tp);
			if (ret == -EAGAIN)
				return;
			if (ret < 0) {
				pr_debug("qp%u: send failed: %d\n",
					 tp->qp->qpn, ret);
				tp->tx_dead = true;
				vd_conn_closed(tp->conn, ret);
				return;
			}
			tx_sent(tp);
			continue;
		}

		spin_lock_bh(&tp->lock);
		term = tp->term;
		if (term == VD_TP_TERM_PENDING) {
			memcpy(tp->tx_buf, tp->term_fpdu, tp->term_len);
			tp->tx_off = 0;
			tp->tx_left = tp->term_len;
			tp->term = VD_TP_TERM_SENDING;
			tp->tx_term = true;
		}
		spin_unlock_bh(&tp->lock);
		if (term == VD_TP_TERM_PENDING)
			continue;
		/* vd_tp_terminate() queues us again once it is released */
		if (term == VD_TP_TERM_HELD)
			return;
		if (term != VD_TP_TERM_NONE) {
			tp->tx_dead = true;
			return;
		}

		if (budget <= 0) {
			vd_tp_queue_tx(tp);
			return;
		}
		if (!tp->msg.active) {
			if (!vd_tx_next_msg(tp))
				return;
			if (!tp->msg.active)
				continue;
			tx_count_msg(tp);
		}
		ret = tx_build(tp);
		if (ret) {
			tx_msg_failed(tp, ret);
			continue;
		}
		budget -= tp->tx_left;
	}
	/* stopping between build and send: no region stays held */
	vd_fpdu_pages_settle(tp, true);
}

/* The transmit work item: backlog, socket space, the other side's needs. */
void vd_tx_work(struct work_struct *work)
{
	struct vd_tp *tp = container_of(work, struct vd_tp, tx_work);

	mutex_lock(&tp->tx_mutex);
	tp->tx_direct = false;
	tx_run(tp, VD_TP_BUDGET);
	mutex_unlock(&tp->tx_mutex);
}

/*
 * The posting context (DOORBELL, the polling worker) took new SQ WRs:
 * sends them from here, without waking a worker, when the stream is idle:
 * no work queued ahead (whatever queued it, the work goes first, in its
 * turn behind the other streams), no transmitter at work (@tx_mutex: the
 * work item, or another posting context, is queued again and sees the new
 * WRs), no batch waiting for socket space (sk_write_space queues the
 * work). At most VD_TP_DIRECT_BUDGET bytes; tx_run() queues the work for
 * the rest.
 */
void vd_tx_direct(struct vd_tp *tp)
{
	if (READ_ONCE(tp->stopping))
		return;
	if (work_pending(&tp->tx_work))
		return;
	if (!mutex_trylock(&tp->tx_mutex)) {
		vd_tp_queue_tx(tp);
		return;
	}
	/* a batch waits for socket space: write_space queues the work */
	if (tp->tx_left) {
		mutex_unlock(&tp->tx_mutex);
		return;
	}
	tp->tx_direct = true;
	tx_run(tp, VD_TP_DIRECT_BUDGET);
	tp->tx_direct = false;
	mutex_unlock(&tp->tx_mutex);
}

/**
 * vd_tx_final_terminate() - a Terminate as the last words of a stream we end
 * @tp: the stream, stopping, its work items cancelled
 * @code: the Terminate code
 *
 * For a stream our side ends (its QP destroyed or moved to Error or
 * Terminate, its device removed): unless a Terminate was sent or received
 * already, the FPDU under way is finished and the Terminate follows, as far
 * as the socket takes them without waiting (else the close alone tells the
 * peer). The QP is not touched: the caller moved it on.
 *
 * Context: Process context, from the transport's stop().
 */
void vd_tx_final_terminate(struct vd_tp *tp, u16 code)
{
	mutex_lock(&tp->tx_mutex);
	if (tp->tx_dead)
		goto out;
	if (tp->tx_left) {
		/* a Terminate goes only at an FPDU boundary */
		if (tx_push(tp))
			goto out;
		tx_sent(tp);	/* if it was a Terminate, the stream is dead */
	}
	spin_lock_bh(&tp->lock);
	if (tp->term == VD_TP_TERM_NONE)
		tp_term_build(tp, code, NULL, 0, 0);
	/* the stream ends here: a held Terminate goes now */
	tp->tx_term = (tp->term == VD_TP_TERM_PENDING ||
		       tp->term == VD_TP_TERM_HELD) && !tp->tx_dead;
	if (tp->tx_term) {
		memcpy(tp->tx_buf, tp->term_fpdu, tp->term_len);
		tp->tx_off = 0;
		tp->tx_left = tp->term_len;
		tp->term = VD_TP_TERM_SENDING;
	}
	spin_unlock_bh(&tp->lock);
	if (tp->tx_term && !tx_push(tp))
		tx_sent(tp);
out:
	tp->tx_dead = true;
	mutex_unlock(&tp->tx_mutex);
}
