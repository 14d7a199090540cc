// SPDX-License-Identifier: GPL-2.0
/*
 * The receive half of the iWARP transport, reading: where receive runs
 * (the socket's data_ready upcall, or a work item), the socket read with
 * tcp_read_sock() and cut into whole FPDUs, each handled where it lies in
 * the socket's receive queue when it arrived whole (one copy, from the
 * skbs into the target pages), else through the stream's receive buffer;
 * FPDUs that do not arrive whole in time. rx.c checks and places each
 * FPDU. transport.h has the structures and the locking,
 * Documentation/transport.rst the design.
 */
#include <linux/jiffies.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/net.h>
#include <linux/skbuff.h>
#include <linux/string.h>
#include <linux/uio.h>
#include <linux/workqueue.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "qp.h"
#include "stats.h"
#include "transport.h"

static unsigned int rx_stall_ms = 60000;
module_param(rx_stall_ms, uint, 0644);
MODULE_PARM_DESC(rx_stall_ms,
		 "Time an FPDU may take to arrive whole once it began, in ms; then the stream ends with a Terminate (0: no limit)");

static bool rx_upcall_on = true;
module_param(rx_upcall_on, bool, 0644);
MODULE_PARM_DESC(rx_upcall_on,
		 "Receive in the socket's data_ready upcall when the stream is idle (else always in a work item)");

static bool rx_onecopy_on = true;
module_param(rx_onecopy_on, bool, 0644);
MODULE_PARM_DESC(rx_onecopy_on,
		 "In the data_ready upcall, place whole FPDUs straight from the socket buffers (else through the receive buffer)");

/*
 * The length of the FPDU at the head of @tp->rx_buf if all of it is
 * there, else 0. The 16-bit length field cannot announce more than
 * VD_TP_BUF_SIZE bytes, so the buffer holds any FPDU whole.
 */
static u32 rx_next(const struct vd_tp *tp)
{
	u32 have = tp->rx_end - tp->rx_start, len;

	if (have < VD_MPA_LEN_SIZE)
		return 0;
	len = vd_mpa_fpdu_len(vd_rx_be16(tp->rx_buf + tp->rx_start));
	return len <= have ? len : 0;
}

/* The bytes of the FPDU not yet whole go to the front of @tp->rx_buf. */
static void rx_compact(struct vd_tp *tp)
{
	u32 have = tp->rx_end - tp->rx_start;

	if (tp->rx_start) {
		memmove(tp->rx_buf, tp->rx_buf + tp->rx_start, have);
		tp->rx_start = 0;
		tp->rx_end = have;
	}
}

/*
 * The ULPDU bytes vd_iw_parse() reads of a ULPDU of @ulpdu_len bytes whose
 * two control bytes are at @ulpdu: those two if the opcode is unknown,
 * else the opcode's headers, and never more than the ULPDU.
 */
static u32 rx_parse_needs(const u8 *ulpdu, u32 ulpdu_len)
{
	u8 op = ulpdu[1] & VD_RDMAP_OP_MASK;
	u32 need = vd_iw_opcode_valid(op) ? vd_iw_opcode_hdr_len(op) : 2;

	return min(need, ulpdu_len);
}

/*
 * The FPDU at the head of @tp->rx_buf is not whole and the socket is
 * empty. Its headers are checked as far as they arrived (the ULPDU length
 * and what vd_iw_parse() checks, which needs no payload): a bad one is
 * answered now, not when (if ever) the rest comes. Returns false if the
 * stream failed.
 */
static bool rx_check_partial(struct vd_tp *tp)
{
	const u8 *ulpdu = tp->rx_buf + tp->rx_start + VD_MPA_LEN_SIZE;
	u32 have = tp->rx_end - tp->rx_start, ulpdu_len, got;
	struct vd_iw_hdr hdr;
	enum vd_iw_err err;

	if (have < VD_MPA_LEN_SIZE + 2)
		return true;
	ulpdu_len = vd_rx_be16(ulpdu - VD_MPA_LEN_SIZE);
	got = have - VD_MPA_LEN_SIZE;
	if (got < rx_parse_needs(ulpdu, ulpdu_len))
		return true;
	err = vd_iw_parse(ulpdu, ulpdu_len, &hdr);
	if (!err)
		return true;
	pr_debug("qp%u: bad headers of an FPDU not whole (%u of %u bytes)\n",
		 tp->qp->qpn, have, vd_mpa_fpdu_len(ulpdu_len));
	WRITE_ONCE(tp->rx_dead, true);
	vd_tp_terminate(tp, vd_term_code(err), vd_rx_event(vd_term_code(err)),
			ulpdu, min_t(u32, got, VD_HDR_READ_REQ), ulpdu_len);
	return false;
}

/*
 * An FPDU that is not whole when the socket is empty must become whole
 * within rx_stall_ms of that moment: a timer queues the receive work at
 * the deadline, and the stream ends then with an MPA "ULPDU length
 * mismatch" Terminate. Handling a whole FPDU clears the deadline.
 */
static void rx_check_stall(struct vd_tp *tp)
{
	unsigned int ms = READ_ONCE(rx_stall_ms);

	if (tp->rx_end == tp->rx_start || !ms)
		return;
	if (!tp->rx_stall_armed) {
		tp->rx_stall_armed = true;
		tp->rx_stall_at = jiffies + msecs_to_jiffies(ms);
		if (!READ_ONCE(tp->stopping))
			mod_timer(&tp->rx_stall, tp->rx_stall_at);
		return;
	}
	if (time_before(jiffies, tp->rx_stall_at))
		return;
	pr_debug("qp%u: an FPDU stalled with %u bytes in\n", tp->qp->qpn,
		 tp->rx_end - tp->rx_start);
	vd_rx_fail(tp, VD_IW_MPA_FPDU, NULL,
		   tp->rx_end - tp->rx_start >= VD_MPA_LEN_SIZE ?
		   vd_rx_be16(tp->rx_buf + tp->rx_start) : 0);
}

void vd_rx_stall_timer(struct timer_list *t)
{
	struct vd_tp *tp = from_timer(tp, t, rx_stall);

	vd_tp_queue_rx(tp);
}

/*
 * Reads as much as the socket has and @tp->rx_buf can take, behind the
 * bytes of the FPDU not yet whole, which go to the front first. Returns
 * what kernel_recvmsg() does: the bytes read, 0 at the end of the stream,
 * -EAGAIN when the socket is empty, or another error.
 */
static int rx_read(struct vd_tp *tp)
{
	struct msghdr m = {};
	struct kvec kv;
	int ret;

	rx_compact(tp);
	/* a partial FPDU is shorter than the buffer: there is room */
	kv.iov_base = tp->rx_buf + tp->rx_end;
	kv.iov_len = VD_TP_BUF_SIZE - tp->rx_end;
	ret = kernel_recvmsg(tp->sock, &m, &kv, 1, kv.iov_len,
			     MSG_DONTWAIT | MSG_NOSIGNAL);
	if (ret > 0)
		tp->rx_end += ret;
	return ret;
}

/*
 * Whether the whole FPDU at @fpdu must be handled in process context: an
 * invalidation waits for the copies in progress on its region
 * (vd_tpt_invalidate_sync() sleeps), which the receive upcall cannot.
 * That is a Send with Invalidate, and the last segment of a Read
 * Response to a Read that invalidates its sink.
 */
static bool rx_needs_process(const struct vd_tp *tp, const u8 *fpdu, u32 len)
{
	const u8 *ulpdu = fpdu + VD_MPA_LEN_SIZE;
	u8 op;

	if (len < VD_MPA_LEN_SIZE + 2)
		return false;
	op = ulpdu[1] & VD_RDMAP_OP_MASK;
	if (op == VD_OP_SEND_INV || op == VD_OP_SEND_SE_INV)
		return true;
	/* only this receiver moves the ORQ's head */
	return op == VD_OP_READ_RESP && (ulpdu[0] & VD_DDP_L) &&
	       tp->orq_head != READ_ONCE(tp->orq_tail) &&
	       tp->orq[tp->orq_head % VD_MAX_ORD].inv;
}

/* An FPDU was handled: count who did (stats.h). */
static void rx_count(bool upcall)
{
	if (upcall)
		vd_stat_inc(rx_upcall);
	else
		vd_stat_inc(rx_deferred);
}

/* A whole FPDU of @len bytes at the head of @tp->rx_buf: handle it. */
static void rx_buffered(struct vd_tp *tp, u32 len, bool upcall)
{
	vd_rx_fpdu(tp, tp->rx_buf + tp->rx_start, len);
	rx_count(upcall);
	vd_stat_add(rx_buffered_bytes, len);
	tp->rx_start += len;
	tp->rx_stall_armed = false;
}

/*
 * Whether another FPDU may be handled now: the stream alive, the QP in
 * RTS or Closing and not destroyed, budget left (rx_run() checks the same
 * at the top of its loop and decides what follows).
 */
static bool rx_may_go(const struct vd_tp *tp, int budget)
{
	u32 state = READ_ONCE(tp->qp->state);

	return !tp->rx_dead && !READ_ONCE(tp->stopping) &&
	       (state == VIADUCT_QPS_RTS || state == VIADUCT_QPS_CLOSING) &&
	       !READ_ONCE(tp->qp->destroyed) && budget > 0;
}

/*
 * How many bytes the receive queue holds from sequence number @seq on
 * (the byte is in @skb), counting no further than @need.
 */
static u32 rx_skb_avail(struct sock *sk, struct sk_buff *skb, u32 seq,
			u32 need)
{
	u32 end = seq;

	while (skb && !after(TCP_SKB_CB(skb)->seq, end) && end - seq < need) {
		if (after(TCP_SKB_CB(skb)->seq + skb->len, end))
			end = TCP_SKB_CB(skb)->seq + skb->len;
		skb = skb_peek_next(skb, &sk->sk_receive_queue);
	}
	return end - seq;
}

/* CRC32c of @len bytes from sequence number @seq on, read in place. */
static int rx_skb_crc(struct sock *sk, struct sk_buff *skb, u32 seq, u32 len,
		      u32 *crc)
{
	struct skb_seq_state st;
	u32 off, n, got, done;
	const u8 *data;

	while (len) {
		skb = vd_rx_skb_at(sk, skb, seq);
		if (!skb)
			return -EFAULT;
		off = seq - TCP_SKB_CB(skb)->seq;
		n = min(len, skb->len - off);
		skb_prepare_seq_read(skb, off, off + n, &st);
		for (done = 0; done < n; done += got) {
			/* a block may run past the end asked for */
			got = min(skb_seq_read(done, &data, &st), n - done);
			if (!got)
				break;
			*crc = vd_mpa_crc(*crc, data, got);
		}
		skb_abort_seq_read(&st);
		if (done < n)
			return -EFAULT;
		seq += n;
		len -= n;
	}
	return 0;
}

/*
 * One copy on receive, in the data_ready upcall: the FPDU that begins at
 * sequence number @seq of the receive queue (in @skb) is handled where it
 * is, if all of it has arrived. Its CRC is computed over the skbs in
 * place and compared first; then its headers are copied out and parsed,
 * and it goes through the same checks as from @tp->rx_buf, its payload
 * copied from the skbs straight into the pages the TPT check named.
 * A Terminate (its payload is parsed) and what must run in process
 * context (rx_needs_process()) go through the buffer, as does anything
 * whose CRC or headers are wrong, which is then answered from there.
 * Returns the FPDU's length if it handled it, else 0.
 */
static u32 rx_direct(struct vd_tp *tp, struct sk_buff *skb, u32 seq,
		     bool upcall)
{
	u8 head[VD_MPA_LEN_SIZE + VD_HDR_READ_REQ] = {};
	struct vd_rx_payload pl = { .sk = tp->sk, .skb = skb };
	struct sock *sk = tp->sk;
	u32 have, ulpdu_len, len, crc = VD_MPA_CRC_SEED;
	struct vd_iw_hdr hdr;
	__le32 wire;

	if (TCP_SKB_CB(skb)->tcp_flags & TCPHDR_SYN)
		return 0;
	have = rx_skb_avail(sk, skb, seq, sizeof(head));
	if (have < VD_MPA_LEN_SIZE + 2 ||
	    vd_rx_skb_copy(sk, skb, seq, head, min_t(u32, have, sizeof(head))))
		return 0;
	ulpdu_len = vd_rx_be16(head);
	len = vd_mpa_fpdu_len(ulpdu_len);
	if (rx_skb_avail(sk, skb, seq, len) < len)
		return 0;
	if ((head[VD_MPA_LEN_SIZE + 1] & VD_RDMAP_OP_MASK) == VD_OP_TERMINATE ||
	    rx_needs_process(tp, head, len))
		return 0;
	/* CRC first: nothing of a corrupt FPDU is looked at or placed */
	if (tp->crc_rx &&
	    (rx_skb_crc(sk, skb, seq, len - VD_MPA_CRC_SIZE, &crc) ||
	     vd_rx_skb_copy(sk, skb, seq + len - VD_MPA_CRC_SIZE, &wire,
			    sizeof(wire)) ||
	     le32_to_cpu(wire) != ~crc))
		return 0;
	if (vd_iw_parse(head + VD_MPA_LEN_SIZE, ulpdu_len, &hdr))
		return 0;
	pl.seq = seq + VD_MPA_LEN_SIZE + hdr.hdr_len;
	vd_rx_dispatch(tp, &hdr, head + VD_MPA_LEN_SIZE, ulpdu_len, &pl);
	rx_count(upcall);
	vd_stat_add(rx_onecopy_bytes, len);
	tp->rx_stall_armed = false;
	return len;
}

/* What rx_read_sock() hands its actor. */
struct rx_reader {
	struct vd_tp *tp;
	int *budget;		/* the turn's, in FPDU bytes */
	bool upcall;		/* in sk_data_ready, else the work item */
	bool stopped;		/* at an FPDU that may not be handled now */
	bool failed;		/* an skb could not be read: a bug */
};

/* Bytes the FPDU begun in @tp->rx_buf still lacks (its length, or all). */
static u32 rx_want(const struct vd_tp *tp)
{
	u32 have = tp->rx_end - tp->rx_start;

	if (have < VD_MPA_LEN_SIZE)
		return VD_MPA_LEN_SIZE - have;
	return vd_mpa_fpdu_len(vd_rx_be16(tp->rx_buf + tp->rx_start)) - have;
}

/*
 * tcp_read_sock() actor of the data_ready upcall: handles the FPDUs in
 * @skb, in order. One that lies whole in the receive queue is handled in
 * place (rx_direct()), and the bytes of it that are in later skbs are
 * skipped when the actor gets to them (@tp->rx_skip). Any other goes
 * through @tp->rx_buf: its bytes are copied there up to its end, and it
 * is handled once whole. Stops before an FPDU that may not be handled now
 * (rx_may_go(), or one for process context), leaving it in the socket or
 * whole in the buffer.
 */
static int rx_actor(read_descriptor_t *desc, struct sk_buff *skb,
		    unsigned int offset, size_t len)
{
	struct rx_reader *rd = desc->arg.data;
	struct vd_tp *tp = rd->tp;
	u32 seq = TCP_SKB_CB(skb)->seq + offset, used = 0, n, flen;

	while (used < len) {
		if (tp->rx_skip) {
			n = min_t(size_t, tp->rx_skip, len - used);
			tp->rx_skip -= n;
			used += n;
			continue;
		}
		if (!rx_may_go(tp, *rd->budget)) {
			rd->stopped = true;
			break;
		}
		if (tp->rx_start == tp->rx_end && READ_ONCE(rx_onecopy_on)) {
			flen = rx_direct(tp, skb, seq + used, rd->upcall);
			if (flen) {
				*rd->budget -= flen;
				n = min_t(size_t, flen, len - used);
				tp->rx_skip = flen - n;
				used += n;
				continue;
			}
		}
		n = min_t(size_t, rx_want(tp), len - used);
		if (skb_copy_bits(skb, offset + used, tp->rx_buf + tp->rx_end,
				  n)) {
			rd->failed = true;
			break;
		}
		tp->rx_end += n;
		used += n;
		flen = rx_next(tp);
		if (!flen)
			continue;
		/* the work item takes it, and what follows, in order */
		if (rx_needs_process(tp, tp->rx_buf + tp->rx_start, flen)) {
			rd->stopped = true;
			break;
		}
		rx_buffered(tp, flen, rd->upcall);
		*rd->budget -= flen;
		if (tp->rx_start == tp->rx_end) {
			tp->rx_start = 0;
			tp->rx_end = 0;
		}
	}
	if (rd->stopped || rd->failed)
		desc->count = 0;
	return used;
}

/*
 * Reads with tcp_read_sock() and rx_actor(), which handle what is queued
 * within @budget, the socket locked by the caller: the data_ready upcall
 * (@upcall), or the work item (rx_read_locked()). Returns a positive
 * number when it got on (FPDUs handled or bytes buffered, or it stopped
 * at an FPDU that rx_run() then looks at), -EAGAIN when the socket is
 * empty, or -EPIPE for what only recvmsg() answers (rx_read()): the end
 * of the stream, a socket error, urgent data (tcp_read_sock() stops in
 * front of it).
 */
static int rx_read_sock(struct vd_tp *tp, int *budget, bool upcall)
{
	struct rx_reader rd = { .tp = tp, .budget = budget, .upcall = upcall };
	read_descriptor_t desc = { .arg.data = &rd, .count = 1 };
	struct sock *sk = tp->sk;
	int ret;

	if (READ_ONCE(sk->sk_err) ||
	    (READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN) ||
	    READ_ONCE(tcp_sk(sk)->urg_data))
		return -EPIPE;
	rx_compact(tp);
	ret = tcp_read_sock(sk, &desc, rx_actor);
	/* what an FPDU handled in place had in later skbs was skipped */
	if (WARN_ON_ONCE(tp->rx_skip) || rd.failed) {
		vd_rx_fail(tp, VD_IW_DDP_CATASTROPHIC, NULL, 0);
		return 1;
	}
	if (ret > 0 || rd.stopped)
		return 1;
	return skb_queue_empty_lockless(&sk->sk_receive_queue) ? -EAGAIN :
								  -EPIPE;
}

/*
 * The work item's read: rx_read_sock() under lock_sock(), as splice
 * reads a TCP socket, so that the work item places from the skbs too; at
 * most VD_TP_UPCALL_BUDGET bytes of FPDUs per hold, so that the socket's
 * backlog is processed in between. What only recvmsg() answers, and
 * everything when rx_onecopy_on is off, goes through rx_read().
 */
static int rx_read_locked(struct vd_tp *tp, int *budget)
{
	int chunk = min_t(int, *budget, VD_TP_UPCALL_BUDGET), left = chunk;
	int ret = -EPIPE;

	if (READ_ONCE(rx_onecopy_on)) {
		lock_sock(tp->sk);
		ret = rx_read_sock(tp, &left, false);
		release_sock(tp->sk);
		*budget -= chunk - left;
	}
	return ret == -EPIPE ? rx_read(tp) : ret;
}

/*
 * One turn of the receiver, which @tp->rx_busy makes the only one: handles
 * every whole FPDU in @tp->rx_buf, one at a time, and reads the socket
 * again when none is left; until the socket is empty (data_ready comes
 * again) or the turn's @budget is spent. Outside RTS and Closing, once the
 * QP is destroyed, and after the stream died (a Terminate sent or
 * received), nothing more is handled or read: what is buffered stays
 * there and goes with the stream. @upcall: in sk_data_ready (reads with
 * tcp_read_sock()), else the work item (recvmsg()). Returns true if the
 * work item must run (again): budget spent, or what only it reads.
 */
static bool rx_run(struct vd_tp *tp, int budget, bool upcall)
{
	u32 len, state;
	int ret;

	while (!tp->rx_dead && !READ_ONCE(tp->stopping)) {
		state = READ_ONCE(tp->qp->state);
		if ((state != VIADUCT_QPS_RTS && state != VIADUCT_QPS_CLOSING) ||
		    READ_ONCE(tp->qp->destroyed))
			return false;
		if (budget <= 0)
			return true;
		len = rx_next(tp);
		if (len) {
			/* the work item takes it, and what follows, in order */
			if (upcall &&
			    rx_needs_process(tp, tp->rx_buf + tp->rx_start, len))
				return true;
			rx_buffered(tp, len, upcall);
			budget -= len;
			continue;
		}
		ret = upcall ? rx_read_sock(tp, &budget, true) :
			       rx_read_locked(tp, &budget);
		if (ret == -EAGAIN) {
			if (rx_check_partial(tp))
				rx_check_stall(tp);
			return false;
		}
		if (ret == -EPIPE && upcall)
			return true;
		if (ret <= 0) {
			pr_debug("qp%u: stream %s: %d (%u bytes of an FPDU unread)\n",
				 tp->qp->qpn, ret ? "failed" : "closed by the peer",
				 ret, tp->rx_end - tp->rx_start);
			WRITE_ONCE(tp->rx_dead, true);
			vd_conn_closed(tp->conn, ret);
			return false;
		}
	}
	return false;
}

/*
 * The receive work item: what the upcall leaves (a budget spent, the end
 * of the stream, errors, urgent data), and what came while it could not
 * run. If the upcall is at work, it reads until the socket is empty.
 *
 * An upcall that finds VD_TP_RX_BUSY taken by this run sets
 * VD_TP_RX_AGAIN instead of queueing the work once more: this run reads
 * again if that came after its last read, unless the upcall took the bit
 * back meanwhile. (Queued again, a running work item would run once more
 * later, maybe much later on a busy workqueue, and take from the upcall
 * the first FPDU that arrives while it runs or is queued.) Either this
 * run sees VD_TP_RX_AGAIN after it released the bit, or the upcall sees
 * the bit released after it set VD_TP_RX_AGAIN: full barriers on both
 * sides between the store and the load. After VD_TP_RX_TURNS turns it
 * queues itself instead, as before, so that a stream that keeps it busy
 * does not keep its worker.
 */
void vd_rx_work(struct work_struct *work)
{
	struct vd_tp *tp = container_of(work, struct vd_tp, rx_work);
	unsigned int turn;
	bool again;

	if (test_and_set_bit_lock(VD_TP_RX_BUSY, &tp->rx_busy))
		return;
	for (turn = 1;; turn++) {
		/* what came before this is read by this turn */
		clear_bit(VD_TP_RX_AGAIN, &tp->rx_busy);
		again = rx_run(tp, VD_TP_BUDGET, false);
		clear_bit_unlock(VD_TP_RX_BUSY, &tp->rx_busy);
		if (again)
			break;
		/* orders the release above before the load of AGAIN: rx_upcall() */
		smp_mb__after_atomic();
		if (!test_bit(VD_TP_RX_AGAIN, &tp->rx_busy))
			return;
		/* a stream that keeps it busy: queued, the work lets others run */
		if (turn == VD_TP_RX_TURNS)
			break;
		if (test_and_set_bit_lock(VD_TP_RX_BUSY, &tp->rx_busy))
			return;
	}
	vd_tp_queue_rx(tp);
}

/*
 * sk_data_ready, with the socket locked (bottom half in softirq, or its
 * owner in release_sock()): handles the FPDUs right here when nobody else
 * receives and no work is queued ahead, bounded by VD_TP_UPCALL_BUDGET;
 * else, or for what it leaves, the work item: a running one reads again
 * (vd_rx_work()). False: queue the work.
 */
static bool rx_upcall(struct vd_tp *tp)
{
	bool again;

	if (!READ_ONCE(rx_upcall_on) || READ_ONCE(tp->stopping) ||
	    work_pending(&tp->rx_work))
		return false;
	while (test_and_set_bit_lock(VD_TP_RX_BUSY, &tp->rx_busy)) {
		/* the work item runs: it reads again before it stops */
		set_bit(VD_TP_RX_AGAIN, &tp->rx_busy);
		/* orders the store of AGAIN before the load of BUSY: vd_rx_work() */
		smp_mb__after_atomic();
		if (test_bit(VD_TP_RX_BUSY, &tp->rx_busy))
			return true;
	}
	/* this turn reads what a work item would have read again */
	clear_bit(VD_TP_RX_AGAIN, &tp->rx_busy);
	again = rx_run(tp, VD_TP_UPCALL_BUDGET, true);
	clear_bit_unlock(VD_TP_RX_BUSY, &tp->rx_busy);
	return !again;
}

void vd_rx_data_ready(struct sock *sk)
{
	struct vd_tp *tp;

	read_lock_bh(&sk->sk_callback_lock);
	rcu_read_lock();
	tp = vd_tp_lookup(sk);
	if (tp && !rx_upcall(tp))
		vd_tp_queue_rx(tp);
	rcu_read_unlock();
	read_unlock_bh(&sk->sk_callback_lock);
}
