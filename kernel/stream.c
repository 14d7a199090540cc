// SPDX-License-Identifier: GPL-2.0
/*
 * The life of a stream: start() and stop() for the connection manager
 * (struct vd_stream_ops, conn.h), the table that leads socket callbacks to
 * their stream, the ops installed on the QP, and the transport's
 * workqueue. tx.c and rx.c do the work. transport.h has the locking,
 * Documentation/transport.rst the design.
 */
#include <linux/bvec.h>
#include <linux/hashtable.h>
#include <linux/memcontrol.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/net.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>
#include <net/sock.h>

#include "mem.h"
#include "qp.h"
#include "transport.h"
#include "zcopy.h"

struct workqueue_struct *vd_tp_wq;

/*
 * Socket -> stream. The connection manager keeps sk_user_data, so the
 * callbacks find their stream here. Lookups run under sk_callback_lock
 * (read) and RCU; start() and stop() change the table under that socket's
 * sk_callback_lock (write) and the table lock.
 */
static DEFINE_HASHTABLE(vd_tp_table, 6);
static DEFINE_SPINLOCK(vd_tp_table_lock);

/**
 * vd_tp_queue_tx() - queue the stream's transmit work
 * @tp: the stream
 *
 * Nothing once the stream is stopping.
 *
 * Context: Any context.
 */
void vd_tp_queue_tx(struct vd_tp *tp)
{
	if (!READ_ONCE(tp->stopping))
		queue_work(vd_tp_wq, &tp->tx_work);
}

/**
 * vd_tp_queue_rx() - queue the stream's receive work
 * @tp: the stream
 *
 * Nothing once the stream is stopping.
 *
 * Context: Any context.
 */
void vd_tp_queue_rx(struct vd_tp *tp)
{
	if (!READ_ONCE(tp->stopping))
		queue_work(vd_tp_wq, &tp->rx_work);
}

/**
 * vd_tp_lookup() - the stream of a socket, for its callbacks
 * @sk: the socket
 *
 * Context: sk_callback_lock read-held, inside an RCU read-side section.
 * Return: the stream, or NULL if none is started on @sk.
 */
struct vd_tp *vd_tp_lookup(struct sock *sk)
{
	struct vd_tp *tp;

	hash_for_each_possible_rcu(vd_tp_table, tp, node, (unsigned long)sk)
		if (tp->sk == sk)
			return tp;
	return NULL;
}

/*
 * struct vd_qp_tp_ops.sq_work, under qp->lock: the SQ has new WRs, or the
 * QP's state changed. The stream is found through the QP, never through
 * qp->conn, which the transport does not own.
 */
static void tp_sq_work(void *tp)
{
	vd_tp_queue_tx(tp);
}

static bool tx_direct_on = true;
module_param(tx_direct_on, bool, 0644);
MODULE_PARM_DESC(tx_direct_on,
		 "Transmit from the posting context when the stream is idle (else always in a work item)");

/*
 * struct vd_qp_tp_ops.sq_get, under qp->lock: while qp->tp is this
 * stream, stop() has not unpublished it; it waits for @tx_direct_users
 * before it frees the stream.
 */
static bool tp_sq_get(void *arg)
{
	struct vd_tp *tp = arg;

	if (!READ_ONCE(tx_direct_on)) {
		vd_tp_queue_tx(tp);
		return false;
	}
	atomic_inc(&tp->tx_direct_users);
	return true;
}

/* struct vd_qp_tp_ops.sq_send: the posting context, no QP lock held. */
static void tp_sq_send(void *arg)
{
	struct vd_tp *tp = arg;

	vd_tx_direct(tp);
	/* wake_up_var() only hashes the address: @tp may be gone by then */
	if (atomic_dec_and_test(&tp->tx_direct_users))
		wake_up_var(&tp->tx_direct_users);
}

static const struct vd_qp_tp_ops tp_qp_ops = {
	.sq_work = tp_sq_work,
	.sq_get = tp_sq_get,
	.sq_send = tp_sq_send,
};

/* The zero-copy completion of a message: its WR may retire now. */
static void tp_zc_ready(struct vd_tp *tp)
{
	vd_tp_queue_tx(tp);
}

/*
 * A stream that stops gracefully waits until TCP let go of the pages of
 * the messages it sent by reference: their WRs then complete (the peer
 * acknowledged them) and none is flushed while TCP may still send its
 * pages. The current message (@zmsg) is the stream's own and is not
 * waited for: its WR is flushed, after the last FPDU of it that TCP has.
 * An abortive stop does not wait: the RST that follows drops what TCP
 * still holds. The wait is bounded for a peer that stopped acknowledging
 * (Documentation/memory.rst).
 */
#define VD_TP_ZC_STOP_TIMEOUT	(10 * HZ)

static void tp_zc_wait(struct vd_tp *tp, bool abort)
{
	if (!abort &&
	    !vd_zc_wait_idle(tp->zc, tp->zmsg ? 1 : 0, VD_TP_ZC_STOP_TIMEOUT))
		pr_debug("qp%u: TCP still holds messages sent by reference\n",
			 tp->qp->qpn);
}

static void tp_write_space(struct sock *sk)
{
	struct vd_tp *tp;

	read_lock_bh(&sk->sk_callback_lock);
	rcu_read_lock();
	tp = vd_tp_lookup(sk);
	if (tp && sk_stream_is_writeable(sk)) {
		clear_bit(SOCK_NOSPACE, &sk->sk_socket->flags);
		vd_tp_queue_tx(tp);
	}
	rcu_read_unlock();
	read_unlock_bh(&sk->sk_callback_lock);
}

static void tp_free(struct vd_tp *tp)
{
	u32 i;

	for (i = tp->irq_head; i != tp->irq_tail; i++)
		if (tp->irq[i % VD_MAX_IRD].mr)
			vd_mr_put(tp->irq[i % VD_MAX_IRD].mr);
	/* a Read Response cut short after its IRQ slot was given back */
	if (tp->msg.irq_popped && tp->msg.mr)
		vd_mr_put(tp->msg.mr);
	if (tp->tx_bvec)
		vd_zc_release_batch(tp);
	vd_fpdu_pages_settle(tp, false);
	if (tp->zmsg)
		vd_zc_msg_put(tp->zmsg);
	if (tp->zc)
		vd_zc_release(tp->zc);
	if (tp->hdr_page)
		put_page(tp->hdr_page);
	if (tp->tx_hdr)
		__free_page(tp->tx_hdr);
	kfree(tp->tx_mrs);
	kfree(tp->tx_bvec);
	kvfree(tp->sq_rec);
	kvfree(tp->tx_buf);
	kvfree(tp->rx_buf);
	kfree(tp->sqe);
	kfree(tp->rqe);
	if (tp->conn)
		vd_conn_put(tp->conn);
	kfree_rcu(tp, rcu);
}

/*
 * The stream's memory, charged to the memory cgroup of the process that
 * created the QP (struct vd_qp.memcg), not to whoever runs the CM's work
 * item: about 140 KiB of buffers per stream that a user makes the kernel
 * allocate by connecting, and cannot be allowed outside its cgroup's
 * limit.
 */
static struct vd_tp *tp_alloc(struct vd_qp *qp)
{
	struct mem_cgroup *old = set_active_memcg(qp->memcg);
	struct vd_tp *tp;

	tp = kzalloc(sizeof(*tp), GFP_KERNEL_ACCOUNT);
	if (!tp)
		goto out;
	tp->tx_buf = kvmalloc(VD_TP_BUF_SIZE, GFP_KERNEL_ACCOUNT);
	tp->rx_buf = kvmalloc(VD_TP_BUF_SIZE, GFP_KERNEL_ACCOUNT);
	tp->sqe = kmalloc(qp->sq.wqe_size, GFP_KERNEL_ACCOUNT);
	tp->rqe = kmalloc(qp->rq.wqe_size, GFP_KERNEL_ACCOUNT);
	tp->sq_rec = kvcalloc(qp->sq.depth, sizeof(*tp->sq_rec),
			      GFP_KERNEL_ACCOUNT);
	if (!tp->tx_buf || !tp->rx_buf || !tp->sqe || !tp->rqe ||
	    !tp->sq_rec) {
		tp_free(tp);
		tp = NULL;
		goto out;
	}
	/* without them, every message is copied into @tx_buf first */
	tp->tx_bvec = kcalloc(VD_TP_ZC_SEGS, sizeof(*tp->tx_bvec),
			      GFP_KERNEL_ACCOUNT);
	if (tp->tx_bvec)
		tp->zc = vd_zc_create(tp, tp_zc_ready);
	tp->tx_mrs = kcalloc(VD_TP_ZC_SEGS, sizeof(*tp->tx_mrs),
			     GFP_KERNEL_ACCOUNT);
	tp->tx_hdr = alloc_page(GFP_KERNEL_ACCOUNT);
out:
	set_active_memcg(old);
	return tp;
}

static int tp_start(struct vd_conn *conn)
{
	struct vd_qp *qp = conn->qp;
	struct sock *sk = conn->sock->sk;
	struct vd_tp *tp;
	u32 i;

	tp = tp_alloc(qp);
	if (!tp)
		return -ENOMEM;
	tp->conn = vd_conn_get(conn);
	tp->qp = qp;
	tp->dev = conn->dev;
	tp->sock = conn->sock;
	tp->sk = sk;
	tp->sq_mask = qp->sq.depth - 1;
	spin_lock_init(&tp->lock);
	mutex_init(&tp->tx_mutex);
	atomic_set(&tp->tx_direct_users, 0);
	INIT_WORK(&tp->tx_work, vd_tx_work);
	INIT_WORK(&tp->rx_work, vd_rx_work);
	timer_setup(&tp->rx_stall, vd_rx_stall_timer, 0);
	tp->crc_tx = conn->mpa.crc_tx;
	tp->crc_rx = conn->mpa.crc_rx;
	tp->imm = conn->mpa.imm;
	tp->ord = min_t(u32, conn->mpa.ord, VD_MAX_ORD);
	tp->ird = min_t(u32, conn->mpa.ird, VD_MAX_IRD);
	for (i = 0; i < VD_QN_NR; i++) {
		tp->msn[i] = VD_MSN_INITIAL;
		tp->rx_msn[i] = VD_MSN_INITIAL;
	}
	if (conn->mpa.rtr != VD_RTR_NONE) {
		if (conn->mpa.active) {
			tp->tx_rtr = true;
		} else {
			/* RFC 6581: the responder waits for the RTR */
			tp->tx_hold = true;
			tp->rx_rtr = true;
		}
	}

	write_lock_bh(&sk->sk_callback_lock);
	tp->saved_data_ready = sk->sk_data_ready;
	tp->saved_write_space = sk->sk_write_space;
	spin_lock(&vd_tp_table_lock);
	hash_add_rcu(vd_tp_table, &tp->node, (unsigned long)sk);
	spin_unlock(&vd_tp_table_lock);
	sk->sk_data_ready = vd_rx_data_ready;
	sk->sk_write_space = tp_write_space;
	write_unlock_bh(&sk->sk_callback_lock);

	spin_lock_bh(&qp->lock);
	conn->tp = tp;
	qp->tp_ops = &tp_qp_ops;
	qp->tp = tp;
	spin_unlock_bh(&qp->lock);

	pr_debug("qp%u: transport started: crc %d/%d ord %u ird %u rtr %d\n",
		 qp->qpn, tp->crc_tx, tp->crc_rx, tp->ord, tp->ird,
		 conn->mpa.rtr);
	/* FPDUs may be waiting behind the MPA exchange, WRs in the SQ */
	vd_tp_queue_rx(tp);
	vd_tp_queue_tx(tp);
	return 0;
}

static void tp_stop(struct vd_conn *conn, bool abort)
{
	struct vd_qp *qp = conn->qp;
	struct vd_tp *tp;
	struct sock *sk;

	spin_lock_bh(&qp->lock);
	tp = conn->tp;
	conn->tp = NULL;
	if (tp && qp->tp == tp)
		qp->tp = NULL;
	spin_unlock_bh(&qp->lock);
	if (!tp)
		return;

	WRITE_ONCE(tp->stopping, true);
	sk = tp->sk;
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_data_ready = tp->saved_data_ready;
	sk->sk_write_space = tp->saved_write_space;
	spin_lock(&vd_tp_table_lock);
	hash_del_rcu(&tp->node);
	spin_unlock(&vd_tp_table_lock);
	write_unlock_bh(&sk->sk_callback_lock);

	/* posting contexts that found the stream before it was unpublished */
	wait_var_event(&tp->tx_direct_users,
		       !atomic_read(&tp->tx_direct_users));
	/* rx queues tx, tx never queues rx; each may requeue itself */
	del_timer_sync(&tp->rx_stall);
	cancel_work_sync(&tp->rx_work);
	/* rx may have armed it again; firing now, it queues nothing */
	del_timer_sync(&tp->rx_stall);
	cancel_work_sync(&tp->tx_work);
	/* our side ends the stream: the peer learns why (conn.h) */
	if (conn->terminate && !abort)
		vd_tx_final_terminate(tp, vd_term_code(VD_IW_RDMAP_CATASTROPHIC));
	if (tp->zc) {
		tp_zc_wait(tp, abort);
		/* completions no longer reach the stream */
		vd_zc_detach(tp->zc);
		/* one that came meanwhile may have queued it */
		cancel_work_sync(&tp->tx_work);
	}
	/* WRs whose pages TCP released before: they are done */
	if (tp->zc)
		vd_tx_zc_retire(tp);
	pr_debug("qp%u: transport stopped%s\n", qp->qpn,
		 abort ? " (abort)" : "");
	tp_free(tp);
}

static bool tp_term_pending(struct vd_conn *conn)
{
	struct vd_tp *tp = conn->tp;
	enum vd_tp_term term;

	if (!tp)
		return false;
	spin_lock_bh(&tp->lock);
	term = tp->term;
	spin_unlock_bh(&tp->lock);
	/* a stream whose sending failed sends nothing more */
	return term != VD_TP_TERM_NONE && term != VD_TP_TERM_DONE &&
	       !READ_ONCE(tp->tx_dead);
}

/*
 * The stream was reset: what TCP delivered before the reset is still in
 * the socket's receive queue (recvmsg() returns it before the error), and
 * the receive work reads it, handles it and then reports the end
 * (rx_run()). Nothing to wait for once the receiver stopped: it reported
 * the end already, or the QP left RTS.
 */
static bool tp_drain(struct vd_conn *conn)
{
	struct vd_tp *tp = conn->tp;

	if (!tp || READ_ONCE(tp->rx_dead))
		return false;
	vd_tp_queue_rx(tp);
	return true;
}

/*
 * The transport as the connection manager sees it (main.c hands it over):
 * start() takes over the socket's sk_data_ready and sk_write_space,
 * installs the stream's ops on the QP and starts moving data; stop() gives
 * the callbacks back, takes the ops off the QP and waits for the
 * transport's work items.
 */
const struct vd_stream_ops vd_transport_ops = {
	.start = tp_start,
	.stop = tp_stop,
	.term_pending = tp_term_pending,
	.drain = tp_drain,
};

/**
 * vd_transport_init() - create the transport's workqueue
 *
 * Context: Module init, process context.
 * Return: 0 or -ENOMEM.
 */
int vd_transport_init(void)
{
	vd_tp_wq = alloc_workqueue("viaduct_tp", WQ_UNBOUND | WQ_MEM_RECLAIM,
				   0);
	if (!vd_tp_wq)
		return -ENOMEM;
	return 0;
}

/**
 * vd_transport_uninit() - destroy the transport's workqueue
 *
 * Runs when no stream is left; then waits until TCP let go of every
 * message sent by reference (vd_zc_drain()).
 *
 * Context: Module exit, process context; sleeps.
 */
void vd_transport_uninit(void)
{
	destroy_workqueue(vd_tp_wq);
	/* skbs of closed sockets may still hold our ubufs */
	vd_zc_drain();
}
