// SPDX-License-Identifier: GPL-2.0
/*
 * The iWARP connection manager's state machine: ids, their events, and the
 * hand-over of an established stream to the transport. cm_sock.c keeps the
 * TCP endpoint and the MPA frames, cm_connect.c the active side,
 * cm_listen.c listeners and the passive side, mpa.c decides what the
 * frames negotiate, cm_channel.c queues the events. See cm.h for the
 * locking and the lifetimes, conn.h for the transport contract and
 * Documentation/cm.rst for the protocol choices.
 *
 * Every id runs one state machine under its mutex, from its commands and
 * from its work item. Socket callbacks only queue the work item; the work
 * item looks at the socket's state and reads what arrived, so a burst of
 * callbacks costs one pass. The CM knows no file descriptors and no
 * handle table: its owner (ucm.c) looks sockets up and publishes ids.
 */
#include <linux/err.h>
#include <linux/file.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <net/inet_connection_sock.h>
#include <net/sock.h>
#include <net/tcp_states.h>

#include "addr.h"
#include "cm_channel.h"
#include "cm_priv.h"
#include "device.h"
#include "qp.h"
#include "viaduct.h"

static_assert(VIADUCT_CM_PRIVATE_DATA_MAX == VD_MPA_MAX_PD);

static struct workqueue_struct *vd_cm_wq;
static const struct vd_stream_ops *vd_cm_stream_ops;
/* QP number -> the id the QP is bound to: one connection per QP */
static DEFINE_XARRAY(vd_cm_qps);

/**
 * vd_cm_set_stream_ops() - give the CM its transport
 * @ops: the transport's operations, given to every new stream
 *
 * Called by module init before any context can exist.
 */
void vd_cm_set_stream_ops(const struct vd_stream_ops *ops)
{
	WRITE_ONCE(vd_cm_stream_ops, ops);
}

/* --- Ids ------------------------------------------------------------ */

static void cm_id_free(struct kref *ref)
{
	struct vd_cm_id *id = container_of(ref, struct vd_cm_id, ref);

	WARN_ON_ONCE(id->sock || id->qp || id->conn);
	WARN_ON_ONCE(!list_empty(&id->unacked));
	if (id->parent)
		vd_cm_id_put(id->parent);
	vd_cm_channel_put(id->ch);
	mutex_destroy(&id->lock);
	while (id->reserved)
		kfree(id->reserve[--id->reserved]);
	kfree(id);
}

/**
 * vd_cm_id_get() - take a reference
 * @id: the id, on which the caller holds a reference
 *
 * Return: @id.
 */
struct vd_cm_id *vd_cm_id_get(struct vd_cm_id *id)
{
	kref_get(&id->ref);
	return id;
}

/**
 * vd_cm_id_put() - drop a reference
 * @id: the id
 *
 * The last put frees the id and drops its listener and channel references.
 *
 * Context: Any context but hard irq.
 */
void vd_cm_id_put(struct vd_cm_id *id)
{
	kref_put(&id->ref, cm_id_free);
}

static void cm_work(struct work_struct *work);
static void cm_timeout(struct work_struct *work);

/**
 * vd_cm_id_create() - a new, idle id
 * @owner: the id's namespace, device and publisher of a listener's new
 *         connections (struct vd_cm_owner); copied
 * @ch: the event channel the id reports to (cm_channel.h); referenced
 * @user_data: what its events report
 *
 * Context: Process context.
 * Return: the id with one reference (the owner's), or ERR_PTR(-ENOMEM).
 */
struct vd_cm_id *vd_cm_id_create(const struct vd_cm_owner *owner,
				 struct vd_cm_channel *ch, u64 user_data)
{
	struct vd_cm_id *id;

	id = kzalloc(sizeof(*id), GFP_KERNEL_ACCOUNT);
	if (!id)
		return ERR_PTR(-ENOMEM);
	/* every event the id will raise: none is allocated when raised */
	for (; id->reserved < VD_CM_ID_EVENTS; id->reserved++) {
		id->reserve[id->reserved] =
			kmalloc(sizeof(struct vd_cm_event), GFP_KERNEL_ACCOUNT);
		if (!id->reserve[id->reserved]) {
			while (id->reserved)
				kfree(id->reserve[--id->reserved]);
			kfree(id);
			return ERR_PTR(-ENOMEM);
		}
	}
	kref_init(&id->ref);
	mutex_init(&id->lock);
	id->owner = *owner;
	id->ch = vd_cm_channel_get(ch);
	id->user_data = user_data;
	INIT_LIST_HEAD(&id->unacked);
	spin_lock_init(&id->children_lock);
	INIT_LIST_HEAD(&id->children);
	INIT_LIST_HEAD(&id->child_node);
	INIT_LIST_HEAD(&id->listen_node);
	INIT_WORK(&id->work, cm_work);
	INIT_DELAYED_WORK(&id->timeout, cm_timeout);
	return id;
}

/**
 * vd_cm_id_set_handle() - record the handle the owner's table gave the id
 * @id: the id, before it is published
 * @handle: the handle its events report
 */
void vd_cm_id_set_handle(struct vd_cm_id *id, u32 handle)
{
	id->handle = handle;
}

/**
 * vd_cm_id_busy() - whether the id has unacknowledged events
 * @id: the id
 *
 * Context: Any context but hard irq.
 * Return: -EBUSY while the id has unacknowledged events, else 0.
 */
int vd_cm_id_busy(struct vd_cm_id *id)
{
	return vd_cm_channel_busy(id->ch, &id->unacked) ? -EBUSY : 0;
}

/**
 * vd_cm_queue() - queue the id's work with a reference for it
 * @id: the id, on which the caller holds a reference
 *
 * If the work is queued already, the new reference is dropped at once.
 *
 * Context: Any context but hard irq.
 */
void vd_cm_queue(struct vd_cm_id *id)
{
	kref_get(&id->ref);
	if (!queue_work(vd_cm_wq, &id->work))
		kref_put(&id->ref, cm_id_free);	/* never the last: caller's */
}

/**
 * vd_cm_arm_timeout() - (re)arm the id's timeout
 * @id: the id, locked
 * @ms: milliseconds from now
 *
 * A pending timeout is moved, and keeps the one reference it holds.
 */
void vd_cm_arm_timeout(struct vd_cm_id *id, u32 ms)
{
	lockdep_assert_held(&id->lock);
	kref_get(&id->ref);
	/* a pending timeout had its reference already: keep only one */
	if (mod_delayed_work(vd_cm_wq, &id->timeout, msecs_to_jiffies(ms)))
		vd_cm_id_put(id);	/* never the last: the caller's */
}

/**
 * vd_cm_disarm_timeout() - cancel a pending timeout, without waiting for one that runs
 * @id: the id, locked
 */
void vd_cm_disarm_timeout(struct vd_cm_id *id)
{
	lockdep_assert_held(&id->lock);
	if (cancel_delayed_work(&id->timeout))
		vd_cm_id_put(id);	/* the caller still holds one */
}

/* --- Events --------------------------------------------------------- */

/*
 * An event must not get lost (its id would wait for it), yet most are
 * raised by what a peer does, where an allocation may fail and
 * __GFP_NOFAIL has no place. So none is allocated then: an id is created
 * with room for every event it can raise (VD_CM_ID_EVENTS, each kind at
 * most once, for its state machine never goes back to IDLE after an
 * event), charged to its creator, and each event takes one. An id found
 * to raise more is a bug in the state machine: it warns, and the event is
 * allocated as a last resort.
 */
static struct vd_cm_event *cm_event_alloc(struct vd_cm_id *id)
{
	lockdep_assert_held(&id->lock);
	if (!WARN_ON_ONCE(!id->reserved))
		return id->reserve[--id->reserved];
	return kmalloc(sizeof(struct vd_cm_event), GFP_KERNEL);
}

/**
 * vd_cm_report() - queue an event on the id's channel
 * @id: the id, locked
 * @type: VIADUCT_CM_EVENT_*
 * @status: 0 or a negative errno
 * @pd: private data to report, or NULL
 * @pd_len: bytes of @pd (capped at VIADUCT_CM_PRIVATE_DATA_MAX)
 *
 * The event carries the id's handle and user data (a CONNECT_REQUEST: the
 * listener's user data and its handle as listen_handle), the addresses,
 * the peer's IRD/ORD and the negotiated (a CONNECT_REQUEST: requested)
 * CRC, P2P and MPA revision. The event was allocated with the id
 * (cm_event_alloc()); the channel never drops it (vd_cm_channel_push()).
 *
 * Context: Process context.
 */
void vd_cm_report(struct vd_cm_id *id, u32 type, int status,
		  const u8 *pd, u32 pd_len)
{
	struct vd_cm_id *rep = id;	/* whose handle and user data */
	struct vd_cm_event *e;

	e = cm_event_alloc(id);
	if (!e) {
		pr_warn_ratelimited("cm%u: event %u lost: out of memory\n",
				    id->handle, type);
		return;
	}
	memset(e, 0, sizeof(*e));
	INIT_LIST_HEAD(&e->ch_node);
	e->ev.type = type;
	e->ev.handle = id->handle;
	if (type == VIADUCT_CM_EVENT_CONNECT_REQUEST && id->parent) {
		rep = id->parent;
		e->ev.listen_handle = rep->handle;
	}
	e->ev.user_data = rep->user_data;
	e->ev.status = status;
	e->ev.ird = id->mpa.peer_ird;
	e->ev.ord = id->mpa.peer_ord;
	if (id->mpa.revision == VD_MPA_REV1)
		e->ev.flags |= VIADUCT_CM_F_MPA_V1;
	if (type == VIADUCT_CM_EVENT_CONNECT_REQUEST) {
		/* what the initiator asks for */
		if (id->peer_info.crc)
			e->ev.flags |= VIADUCT_CM_F_CRC;
		if (id->peer_info.p2p)
			e->ev.flags |= VIADUCT_CM_F_P2P;
		if (id->peer_info.imm)
			e->ev.flags |= VIADUCT_CM_F_IMM_DATA;
	} else {
		if (id->mpa.crc_tx)
			e->ev.flags |= VIADUCT_CM_F_CRC;
		if (id->mpa.rtr != VD_RTR_NONE)
			e->ev.flags |= VIADUCT_CM_F_P2P;
		if (id->mpa.imm)
			e->ev.flags |= VIADUCT_CM_F_IMM_DATA;
	}
	if (id->mpa.active)
		e->ev.flags |= VIADUCT_CM_F_ACTIVE;
	vd_addr_to_user(&id->local, &e->ev.local);
	vd_addr_to_user(&id->peer, &e->ev.peer);
	if (pd_len) {
		/* the frame parser bounds it; never trust a caller blindly */
		pd_len = min_t(u32, pd_len, VIADUCT_CM_PRIVATE_DATA_MAX);
		e->ev.private_data_len = pd_len;
		memcpy(e->ev.private_data, pd, pd_len);
	}
	vd_dbg_cm(id, "event %u status %d\n", type, status);
	vd_cm_channel_push(id->ch, &id->unacked, e);
}

/**
 * vd_cm_ack() - acknowledge an event
 * @id: the id the event is about
 * @seq: the event's sequence number
 *
 * Context: Process context.
 * Return: 0, or -EINVAL if the id has no unacknowledged event @seq.
 */
int vd_cm_ack(struct vd_cm_id *id, u32 seq)
{
	return vd_cm_channel_ack(id->ch, &id->unacked, seq);
}

/* --- Connections ---------------------------------------------------- */

/**
 * vd_cm_take_qp() - bind a QP to the id: one id per QP at a time
 * @id: the id, locked
 * @qp: the QP; the id takes a reference
 *
 * Return: 0; -EINVAL if the QP is not Idle or has a stream; -EBUSY if
 * another id holds it; -ENOMEM.
 */
int vd_cm_take_qp(struct vd_cm_id *id, struct vd_qp *qp)
{
	int ret;

	lockdep_assert_held(&id->lock);
	if (READ_ONCE(qp->state) != VIADUCT_QPS_IDLE || READ_ONCE(qp->conn))
		return -EINVAL;
	ret = xa_insert(&vd_cm_qps, qp->qpn, id, GFP_KERNEL);
	if (ret)
		return ret == -EBUSY ? -EBUSY : ret;
	id->qp = vd_qp_get(qp);
	return 0;
}

/**
 * vd_cm_release_qp() - let go of the id's QP, if it holds one
 * @id: the id, locked
 */
void vd_cm_release_qp(struct vd_cm_id *id)
{
	lockdep_assert_held(&id->lock);
	if (!id->qp)
		return;
	xa_erase(&vd_cm_qps, id->qp->qpn);
	vd_qp_put(id->qp);
	id->qp = NULL;
}

/**
 * vd_cm_teardown() - end the id's stream
 * @id: the id, locked
 * @abort: close with RST and move the QP to Error, else gracefully
 *
 * The transport lets go of the socket, the QP leaves RTS (a graceful close
 * takes it through Closing to Idle, if its SQ is empty; otherwise it ends
 * in Error), the socket is closed (FIN or RST) and the QP released. Also
 * disarms the timeout. The id's state is the caller's to set.
 */
void vd_cm_teardown(struct vd_cm_id *id, bool abort)
{
	struct viaduct_modify_qp closing = {
		.mask = VIADUCT_QP_ATTR_STATE,
		.state = VIADUCT_QPS_CLOSING,
	};
	struct vd_conn *conn = id->conn;

	lockdep_assert_held(&id->lock);
	vd_cm_disarm_timeout(id);
	if (conn) {
		if (conn->ops)
			conn->ops->stop(conn, abort);
		conn->ops = NULL;
		if (abort)
			vd_qp_enter_error(conn->qp, 0, 0);
		else if (READ_ONCE(conn->qp->state) == VIADUCT_QPS_RTS)
			/* fails harmlessly if the QP moved on meanwhile */
			vd_qp_modify(conn->qp, &closing);
		vd_qp_llp_closed(conn->qp, conn);
		id->conn = NULL;
		vd_conn_put(conn);
	}
	vd_cm_sock_close(id, abort);
	vd_cm_release_qp(id);
}

static void cm_stream_closed(struct vd_conn *conn, int reason);

/**
 * vd_cm_establish() - hand an established stream over to the transport
 * @id: the id, locked, whose MPA exchange succeeded (@id->mpa settled)
 *
 * Builds the struct vd_conn, binds the QP (vd_qp_enter_rts()) and calls
 * the transport's start(); on success the id is ESTABLISHED and its
 * timeout disarmed.
 *
 * Return: 0, or a negative errno after which the caller tears down:
 * -ENOMEM, an error of vd_qp_enter_rts() or of start().
 */
int vd_cm_establish(struct vd_cm_id *id)
{
	const struct vd_stream_ops *ops;
	struct vd_conn *conn;
	int ret;

	lockdep_assert_held(&id->lock);
	/* main.c gives the CM the transport before any context can exist */
	ops = READ_ONCE(vd_cm_stream_ops);
	if (WARN_ON_ONCE(!ops))
		return -EOPNOTSUPP;
	conn = kzalloc(sizeof(*conn), GFP_KERNEL);
	if (!conn)
		return -ENOMEM;
	kref_init(&conn->ref);
	conn->sock = id->sock;
	conn->dev = vd_device_get(id->owner.dev);
	conn->qp = vd_qp_get(id->qp);
	conn->ops = ops;
	conn->closed = cm_stream_closed;
	conn->end = vd_cm_stream_end;
	conn->cm = id;
	conn->mpa = id->mpa;
	conn->local = id->local;
	conn->peer = id->peer;

	ret = vd_qp_enter_rts(id->qp, conn);
	if (ret) {
		vd_conn_put(conn);
		return ret;
	}
	id->conn = conn;
	WRITE_ONCE(id->tp_closed, 0);
	WRITE_ONCE(id->end_req, VD_CONN_END_NONE);
	ret = conn->ops->start(conn);
	if (ret) {
		/* a failed start left nothing to stop */
		conn->ops = NULL;
		return ret;	/* the caller tears down */
	}
	vd_cm_disarm_timeout(id);
	id->state = VD_CM_ESTABLISHED;
	return 0;
}

/* struct vd_conn.closed: the transport saw the stream end. */
static void cm_stream_closed(struct vd_conn *conn, int reason)
{
	struct vd_cm_id *id = conn->cm;

	/*
	 * The CM finds out from the socket's state in its work item. The id
	 * is alive: the transport calls this only before its stop() returned,
	 * and the CM calls stop() before it lets go of the id.
	 */
	pr_debug("cm%u: stream closed by the transport: %d\n", id->handle,
		 reason);
	/* the first report wins */
	cmpxchg(&id->tp_closed, 0, reason ? (reason < 0 ? reason : -EIO) : 1);
	vd_cm_queue(id);
}

/* --- Our side of the MPA negotiation -------------------------------- */

static u32 cm_our_ird(struct vd_cm_id *id)
{
	return min_t(u32, id->param.ird ?: READ_ONCE(id->qp->ird), VD_MAX_IRD);
}

static u32 cm_our_ord(struct vd_cm_id *id)
{
	return min_t(u32, id->param.ord ?: READ_ONCE(id->qp->ord), VD_MAX_ORD);
}

/**
 * vd_cm_ours() - our side of the negotiation
 * @id: the id, locked, with its QP
 * @flags: the command's VIADUCT_CM_F_*
 * @ours: filled with @flags, the IRD/ORD of the command or else the QP's
 *        (capped at VD_MAX_IRD/VD_MAX_ORD) and the private data length
 */
void vd_cm_ours(struct vd_cm_id *id, u32 flags, struct vd_mpa_ours *ours)
{
	ours->flags = flags;
	ours->ird = cm_our_ird(id);
	ours->ord = cm_our_ord(id);
	ours->pd_len = id->param.pd_len;
}

/* --- The state machine ---------------------------------------------- */

/**
 * vd_cm_fail() - abort the id and report why
 * @id: the id, locked
 * @type: the event to report (CONNECT_ERROR, UNREACHABLE, TIMEOUT)
 * @status: its status
 *
 * The QP is released (and in Error) by the time the user reads the event.
 */
void vd_cm_fail(struct vd_cm_id *id, u32 type, int status)
{
	vd_cm_teardown(id, true);
	id->state = VD_CM_CLOSED;
	vd_cm_report(id, type, status, NULL, 0);
}

/* The transport runs and its QP takes what arrives: it reads up to a FIN. */
static bool cm_tp_reading(struct vd_cm_id *id)
{
	return id->conn && id->conn->ops &&
	       READ_ONCE(id->qp->state) == VIADUCT_QPS_RTS;
}

/*
 * Established or closing: watch for the peer's FIN or RST. Closing, we
 * read and drop what the peer sends until its FIN: our close began, so
 * nothing more is processed, but the FIN comes only after those bytes.
 *
 * Established, the socket shows the peer's FIN as soon as it arrived, but
 * the transport may not have placed the FPDUs before it yet: a report now
 * would tell the application the connection ended before its last
 * completions. So the transport reports the end itself once it read up to
 * the FIN (vd_conn_closed()); @force (the timeout) ends the wait should it
 * not. A reset is no different: the bytes TCP delivered before it are
 * the peer's last messages (a peer that completed a Send and then aborts
 * has sent it), so the transport is asked to read those first (drain())
 * and the QP enters Error after them, not over them.
 */
static void cm_watch(struct vd_cm_id *id, bool force)
{
	bool closing = id->state == VD_CM_CLOSING;
	int tp = READ_ONCE(id->tp_closed);
	int err, sock_err;
	bool gone;

	if (closing && vd_cm_sock_discard(id))
		vd_cm_queue(id);	/* more to drop: after the others' turn */
	gone = vd_cm_sock_gone(id, &sock_err);
	if (!tp && !gone)
		return;
	/*
	 * What the transport saw; but an end of stream it read after a reset
	 * is the reset (the error went to whoever read it first).
	 */
	err = tp < 0 ? tp : sock_err;
	if (!closing && !force && cm_tp_reading(id) &&
	    (sock_err ? id->conn->ops->drain(id->conn) : !tp)) {
		if (!delayed_work_pending(&id->timeout))
			vd_cm_arm_timeout(id, VD_CM_TIMEOUT_MS);
		return;
	}
	/* a reset or a failure: the QP's owner learns it as an async event */
	if (err && !closing && id->qp)
		vd_qp_enter_error(id->qp, VIADUCT_EVENT_QP_FATAL, 0);
	/* a graceful close answers the peer's FIN with ours */
	vd_cm_teardown(id, err != 0);
	id->state = VD_CM_CLOSED;
	vd_cm_report(id, VIADUCT_CM_EVENT_DISCONNECTED, closing ? 0 : err,
		     NULL, 0);
}

static void cm_step(struct vd_cm_id *id)
{
	int err, ret;

	switch (id->state) {
	case VD_CM_LISTEN:
		vd_cm_listen_work(id);
		return;
	case VD_CM_CONNECTING:
		if (READ_ONCE(id->sk->sk_state) != TCP_ESTABLISHED) {
			/* RST (nobody listens), ICMP errors, SYN retries */
			if (vd_cm_sock_gone(id, &err))
				vd_cm_fail(id, err == -ETIMEDOUT ?
					VIADUCT_CM_EVENT_TIMEOUT :
					VIADUCT_CM_EVENT_UNREACHABLE,
					err ?: -ECONNRESET);
			return;
		}
		kernel_getsockname(id->sock, (struct sockaddr *)&id->local);
		ret = vd_cm_send_request(id);
		if (ret) {
			vd_cm_fail(id, VIADUCT_CM_EVENT_UNREACHABLE, ret);
			return;
		}
		id->state = VD_CM_REP_WAIT;
		fallthrough;
	case VD_CM_REP_WAIT:
		ret = vd_cm_recv_frame(id, true);
		if (ret == -EAGAIN)
			return;
		if (ret)
			vd_cm_fail(id, VIADUCT_CM_EVENT_CONNECT_ERROR, ret);
		else
			vd_cm_got_reply(id);
		return;
	case VD_CM_REQ_WAIT:
		ret = vd_cm_recv_frame(id, false);
		if (ret == -EAGAIN)
			return;
		if (!ret)
			vd_cm_got_request(id);
		else if (id->auto_accept)
			vd_cm_fail(id, VIADUCT_CM_EVENT_CONNECT_ERROR, ret);
		else
			vd_cm_child_drop(id);
		return;
	case VD_CM_REQ_RCVD:
		if (vd_cm_sock_gone(id, &err))
			id->peer_closed = true;
		return;
	case VD_CM_ESTABLISHED:
		/* the QP's owner ended the stream (cm_end.c) */
		if (vd_cm_end_requested(id))
			return;
		fallthrough;
	case VD_CM_CLOSING:
		cm_watch(id, false);
		return;
	default:
		return;
	}
}

static void cm_work(struct work_struct *work)
{
	struct vd_cm_id *id = container_of(work, struct vd_cm_id, work);

	mutex_lock(&id->lock);
	if (id->sock)
		cm_step(id);
	mutex_unlock(&id->lock);
	vd_cm_id_put(id);
}

static void cm_timeout(struct work_struct *work)
{
	struct vd_cm_id *id = container_of(to_delayed_work(work),
					   struct vd_cm_id, timeout);

	mutex_lock(&id->lock);
	switch (id->state) {
	case VD_CM_CONNECTING:
	case VD_CM_REP_WAIT:
		vd_cm_fail(id, VIADUCT_CM_EVENT_TIMEOUT, -ETIMEDOUT);
		break;
	case VD_CM_REQ_WAIT:
		if (id->auto_accept)
			vd_cm_fail(id, VIADUCT_CM_EVENT_TIMEOUT, -ETIMEDOUT);
		else
			vd_cm_child_drop(id);
		break;
	case VD_CM_ESTABLISHED:
		if (id->term_wait) {
			/* our Terminate never went out: the peer does not read */
			id->term_wait = false;
			vd_cm_teardown(id, true);
			id->state = VD_CM_CLOSED;
			vd_cm_report(id, VIADUCT_CM_EVENT_DISCONNECTED,
				     -ETIMEDOUT, NULL, 0);
			break;
		}
		/* the transport never reported the FIN it was to read */
		cm_watch(id, true);
		break;
	case VD_CM_CLOSING:
		/* the peer never sent its FIN */
		vd_cm_teardown(id, true);
		id->state = VD_CM_CLOSED;
		vd_cm_report(id, VIADUCT_CM_EVENT_DISCONNECTED, -ETIMEDOUT,
			     NULL, 0);
		break;
	default:
		break;
	}
	mutex_unlock(&id->lock);
	vd_cm_id_put(id);
}

/* --- Disconnecting -------------------------------------------------- */

/**
 * vd_cm_close_graceful() - start the graceful close of an established id
 * @id: the id, locked, established
 *
 * The transport stops sending, the QP goes to Closing (if it is in RTS),
 * our FIN goes out and the id waits in Closing for the peer's, reading and
 * dropping what comes before it (cm_watch()).
 */
void vd_cm_close_graceful(struct vd_cm_id *id)
{
	struct viaduct_modify_qp m = {
		.mask = VIADUCT_QP_ATTR_STATE,
		.state = VIADUCT_QPS_CLOSING,
	};

	lockdep_assert_held(&id->lock);
	if (id->conn && id->conn->ops)
		id->conn->ops->stop(id->conn, false);
	if (id->conn)
		id->conn->ops = NULL;
	/* the QP's owner may have moved it to Closing already */
	if (READ_ONCE(id->qp->state) == VIADUCT_QPS_RTS)
		vd_qp_modify(id->qp, &m);
	kernel_sock_shutdown(id->sock, SHUT_WR);
	id->state = VD_CM_CLOSING;
	vd_cm_arm_timeout(id, VD_CM_TIMEOUT_MS);
	vd_cm_queue(id);
}

/**
 * vd_cm_disconnect() - close an established connection
 * @id: the id
 * @abort: close with RST at once, else gracefully
 *
 * Graceful: the transport stops, the QP goes to Closing, our FIN goes out,
 * and DISCONNECTED comes with the peer's FIN (status 0) or after
 * VD_CM_TIMEOUT_MS (-ETIMEDOUT, and then RST); what the peer sends
 * meanwhile is read and dropped (vd_cm_sock_discard()). Again on a
 * closing id it does nothing. Abort (also of a closing id): RST, the QP to Error, and
 * DISCONNECTED with status 0 at once.
 *
 * Context: Process context.
 * Return: 0, or -EINVAL if the id is neither established nor closing.
 */
int vd_cm_disconnect(struct vd_cm_id *id, bool abort)
{
	int ret = 0;

	mutex_lock(&id->lock);
	switch (id->state) {
	case VD_CM_ESTABLISHED:
		if (abort)
			break;
		vd_cm_close_graceful(id);
		goto out;
	case VD_CM_CLOSING:
		if (abort)
			break;
		goto out;
	default:
		ret = -EINVAL;
		goto out;
	}
	vd_cm_teardown(id, true);
	id->state = VD_CM_CLOSED;
	vd_cm_report(id, VIADUCT_CM_EVENT_DISCONNECTED, 0, NULL, 0);
out:
	mutex_unlock(&id->lock);
	return ret;
}

/* --- Destruction ---------------------------------------------------- */

/**
 * vd_cm_id_destroy() - close whatever the id does and drop the owner's reference
 * @id: the id
 *
 * A listener closes, drops the connections still waiting for their
 * request and rejects those whose CONNECT_REQUEST is unanswered; an
 * unanswered CONNECT_REQUEST of its own is rejected; a connection is
 * aborted (RST). Then the id's events are forgotten and nothing of it runs
 * any more (see Lifetimes in cm.h).
 *
 * Context: Process context, no lock of the owner held.
 */
void vd_cm_id_destroy(struct vd_cm_id *id)
{
	mutex_lock(&id->lock);
	switch (id->state) {
	case VD_CM_LISTEN:
		vd_cm_listener_close(id);
		break;
	case VD_CM_REQ_RCVD:
		/* an unanswered request is rejected */
		vd_cm_send_reply(id, true, 0, NULL, 0);
		vd_cm_teardown(id, false);
		break;
	case VD_CM_CLOSING:
		/* the FIN went out already; the peer's may never come */
		vd_cm_teardown(id, true);
		break;
	default:
		vd_cm_teardown(id, true);
		break;
	}
	vd_cm_child_unlist(id);
	id->state = VD_CM_DEAD;
	mutex_unlock(&id->lock);

	/* nothing queues work any more: the socket is detached */
	if (cancel_work_sync(&id->work))
		vd_cm_id_put(id);
	if (cancel_delayed_work_sync(&id->timeout))
		vd_cm_id_put(id);
	vd_cm_channel_forget(id->ch, &id->unacked);
	vd_dbg_cm(id, "destroyed\n");
	vd_cm_id_put(id);
}

/* --- Module --------------------------------------------------------- */

/**
 * vd_cm_init() - module init: the CM workqueue
 *
 * Return: 0 or -ENOMEM.
 */
int vd_cm_init(void)
{
	vd_cm_wq = alloc_workqueue("viaduct_cm", WQ_MEM_RECLAIM, 0);
	return vd_cm_wq ? 0 : -ENOMEM;
}

/**
 * vd_cm_uninit() - module exit: drain and destroy the CM workqueue
 *
 * Every context is gone, and with it every id.
 */
void vd_cm_uninit(void)
{
	/* every context is gone, and with it every id */
	destroy_workqueue(vd_cm_wq);
	WARN_ON_ONCE(!xa_empty(&vd_cm_qps));
}
