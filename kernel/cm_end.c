// SPDX-License-Identifier: GPL-2.0
/*
 * Connections that end for a local reason rather than by a CM command: the
 * QP's owner destroyed it or moved it to Error, Terminate or Closing
 * (struct vd_conn.end, conn.h), or the device went away
 * (vd_cm_id_device_removed()). cm.c's state machine calls in here from the
 * id's work item; Documentation/cm.rst has the rules, cm.h the locking.
 */
#include <linux/net.h>

#include "cm_priv.h"
#include "qp.h"

/**
 * vd_cm_stream_end() - struct vd_conn.end: the QP's owner ends the stream
 * @conn: the stream, bound to its QP (the caller found it in qp->conn)
 * @how: VD_CONN_END_CLOSE or VD_CONN_END_TERMINATE
 *
 * Records the request and queues the id's work, which acts on it
 * (vd_cm_end_requested()). A Terminate wins over a graceful close asked
 * for earlier. The id is alive: the QP names @conn only until the CM's
 * teardown, which runs before the id can go.
 *
 * Context: Any context but hard irq; may be called under the QP's locks.
 */
void vd_cm_stream_end(struct vd_conn *conn, enum vd_conn_end how)
{
	struct vd_cm_id *id = conn->cm;

	if (how == VD_CONN_END_TERMINATE)
		WRITE_ONCE(id->end_req, VD_CONN_END_TERMINATE);
	else
		cmpxchg(&id->end_req, VD_CONN_END_NONE, how);
	vd_cm_queue(id);
}

/*
 * Stops the transport with the stream's last FPDU a Terminate (RDMAP,
 * local catastrophic error; conn.h), unless one was sent or received.
 */
static void cm_stop_terminated(struct vd_cm_id *id)
{
	struct vd_conn *conn = id->conn;

	if (!conn)
		return;
	if (conn->ops) {
		conn->terminate = true;
		conn->ops->stop(conn, false);
	}
	conn->ops = NULL;
}

/**
 * vd_cm_end_requested() - act on what vd_cm_stream_end() recorded
 * @id: the id, locked, established
 *
 * A Terminate: the transport's last FPDU is the Terminate (a Terminate the
 * transport raised itself is waited for until it is out, at most
 * VD_CM_TIMEOUT_MS, then the stream is reset), the QP is in
 * Error (or stays in Terminate, which the close ends in Error), our FIN
 * follows, and the id waits in Closing for the peer's end of the stream,
 * as after a graceful disconnect (DISCONNECTED then). A graceful close:
 * vd_cm_disconnect() without abort.
 *
 * Return: true if a request was handled.
 */
bool vd_cm_end_requested(struct vd_cm_id *id)
{
	int how;

	lockdep_assert_held(&id->lock);
	how = xchg(&id->end_req, VD_CONN_END_NONE);
	switch (how) {
	case VD_CONN_END_TERMINATE:
		if (id->conn && id->conn->ops && id->conn->ops->term_pending &&
		    !READ_ONCE(id->qp->destroyed) &&
		    id->conn->ops->term_pending(id->conn)) {
			/*
			 * The transport's own Terminate is still on its way
			 * (the peer does not read): stopping the transport now
			 * would drop it. It calls end() again once it is out;
			 * the timeout resets the stream should that not come.
			 * A destroyed QP's stream stops at once, as ever.
			 */
			if (!id->term_wait) {
				id->term_wait = true;
				vd_cm_arm_timeout(id, VD_CM_TIMEOUT_MS);
			}
			return true;
		}
		id->term_wait = false;
		cm_stop_terminated(id);
		if (READ_ONCE(id->qp->state) != VIADUCT_QPS_TERMINATE)
			vd_qp_enter_error(id->qp, 0, 0);
		kernel_sock_shutdown(id->sock, SHUT_WR);
		id->state = VD_CM_CLOSING;
		vd_cm_arm_timeout(id, VD_CM_TIMEOUT_MS);
		vd_cm_queue(id);
		return true;
	case VD_CONN_END_CLOSE:
		vd_cm_close_graceful(id);
		return true;
	default:
		return false;
	}
}

/**
 * vd_cm_id_device_removed() - the id's device went away
 * @id: the id, not locked
 *
 * Whatever the id does ends: a listener closes (its pending connections
 * are rejected), an established connection sends its Terminate and our
 * FIN, with the QP in Error, a connection being set up is aborted; then
 * the id is closed and reports VIADUCT_CM_EVENT_DEVICE_REMOVED (status
 * -ENODEV), which every id of the device gets once, whatever its state.
 * Nothing is placed into the QP's memory afterwards.
 *
 * Context: Process context, no lock of the owner held.
 */
void vd_cm_id_device_removed(struct vd_cm_id *id)
{
	mutex_lock(&id->lock);
	switch (id->state) {
	case VD_CM_DEAD:
		mutex_unlock(&id->lock);
		return;
	case VD_CM_IDLE:
	case VD_CM_CLOSED:
		break;
	case VD_CM_LISTEN:
		vd_cm_listener_close(id);
		break;
	case VD_CM_ESTABLISHED:
		cm_stop_terminated(id);
		vd_qp_enter_error(id->qp, 0, 0);
		vd_cm_teardown(id, false);
		break;
	case VD_CM_REQ_RCVD:
		/* an unanswered request is rejected */
		vd_cm_send_reply(id, true, 0, NULL, 0);
		vd_cm_teardown(id, false);
		break;
	default:
		/* being set up, or closing: our FIN went out already */
		vd_cm_teardown(id, true);
		break;
	}
	id->end_req = VD_CONN_END_NONE;
	id->state = VD_CM_CLOSED;
	vd_cm_report(id, VIADUCT_CM_EVENT_DEVICE_REMOVED, -ENODEV, NULL, 0);
	mutex_unlock(&id->lock);
}
