// SPDX-License-Identifier: GPL-2.0
/*
 * The active side of the connection manager (cm_priv.h): an id connects
 * to a listening peer or takes over a connected socket of the user's,
 * sends the MPA request and settles what the peer's reply negotiates.
 * Its mirror, the passive side, is in cm_listen.c.
 */
#include <linux/err.h>
#include <linux/file.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/net.h>
#include <net/inet_connection_sock.h>
#include <net/sock.h>
#include <net/tcp_states.h>

#include "addr.h"
#include "cm_priv.h"
#include "qp.h"

/* --- The MPA exchange ------------------------------------------------ */

/**
 * vd_cm_send_request() - send the MPA request of an active id
 * @id: the id, locked, with its QP and a connected socket
 *
 * Return: 0, or the error of vd_cm_send_frame().
 */
int vd_cm_send_request(struct vd_cm_id *id)
{
	struct vd_mpa_info info;
	struct vd_mpa_ours ours;

	vd_cm_ours(id, id->param.flags, &ours);
	vd_mpa_request(&ours, &info);
	id->rx_len = 0;
	return vd_cm_send_frame(id, &info, id->param.pd);
}

/**
 * vd_cm_got_reply() - settle the exchange once the peer's reply is read
 * @id: the id, locked, whose reply in @id->peer_info is complete
 *
 * Establishes the connection, or reports why not (REJECTED,
 * CONNECT_ERROR).
 */
void vd_cm_got_reply(struct vd_cm_id *id)
{
	const struct vd_mpa_info *rep = &id->peer_info;
	struct vd_mpa_ours ours;
	int ret;

	vd_cm_ours(id, id->param.flags, &ours);
	ret = vd_mpa_settle(&ours, rep, &id->mpa);
	if (ret == -ECONNREFUSED) {
		/*
		 * Let go of the QP before the event: whoever reads REJECTED
		 * may connect another id with the same QP at once. The
		 * private data stays in @id->rx, which teardown leaves alone.
		 */
		vd_cm_teardown(id, false);
		id->state = VD_CM_CLOSED;
		vd_cm_report(id, VIADUCT_CM_EVENT_REJECTED, -ECONNREFUSED,
			     vd_cm_frame_pd(id), rep->pd_len);
		return;
	}
	if (!ret)
		ret = vd_cm_establish(id);
	if (ret) {
		vd_cm_fail(id, VIADUCT_CM_EVENT_CONNECT_ERROR, ret);
		return;
	}
	vd_cm_report(id, VIADUCT_CM_EVENT_ESTABLISHED, 0, vd_cm_frame_pd(id),
		     rep->pd_len);
}

/* --- Connecting ----------------------------------------------------- */

static int cm_start_active(struct vd_cm_id *id, struct vd_qp *qp,
			   const struct vd_cm_param *p)
{
	int ret;

	ret = vd_cm_take_qp(id, qp);
	if (ret)
		return ret;
	id->param = *p;
	id->active = true;
	memset(&id->mpa, 0, sizeof(id->mpa));
	id->mpa.active = true;
	return 0;
}

/**
 * vd_cm_connect() - connect to a listening peer (active side)
 * @id: an idle id
 * @dst: the peer's address, not the wildcard, with a port
 * @qp: the QP to connect, Idle and bound to no other id
 * @p: the parameters; @p->pd_len within vd_mpa_pd_max() of the request
 *
 * Binds a new TCP socket to @id's device's interface and connects without
 * waiting; the MPA request follows when TCP is up. The outcome is an
 * event: ESTABLISHED, REJECTED, CONNECT_ERROR, UNREACHABLE (also for a
 * failure known at once) or TIMEOUT (after @p->timeout_ms, by default
 * VD_CM_TIMEOUT_MS).
 *
 * Return: 0 once the attempt is under way; -EINVAL for an id that is not
 * idle, a wildcard destination, port 0 or too much private data; the
 * errors of vd_addr_from_user() and vd_addr_check(); those of
 * vd_cm_take_qp(); those of creating and binding the socket.
 */
int vd_cm_connect(struct vd_cm_id *id, const struct viaduct_sockaddr *dst,
		  struct vd_qp *qp, const struct vd_cm_param *p)
{
	struct socket *sock;
	int len, ifindex, ret;

	mutex_lock(&id->lock);
	ret = -EINVAL;
	if (id->state != VD_CM_IDLE)
		goto out;
	ret = vd_addr_from_user(dst, &id->peer, &len);
	if (ret)
		goto out;
	ret = -EINVAL;
	if (vd_addr_is_any(&id->peer) ||
	    (id->peer.ss_family == AF_INET ?
	     !((struct sockaddr_in *)&id->peer)->sin_port :
	     !((struct sockaddr_in6 *)&id->peer)->sin6_port))
		goto out;
	if (p->pd_len > vd_mpa_pd_max(!(p->flags & VIADUCT_CM_F_MPA_V1)))
		goto out;
	ifindex = vd_addr_check(id->owner.dev, id->owner.net, &id->peer,
				false);
	if (ifindex < 0) {
		ret = ifindex;
		goto out;
	}
	ret = vd_cm_sock_create(id, id->peer.ss_family, &sock);
	if (ret)
		goto out;
	ret = sock_bindtoindex(sock->sk, ifindex, true);
	if (!ret)
		ret = cm_start_active(id, qp, p);
	if (!ret) {
		ret = vd_cm_sock_attach(id, sock, NULL);
		if (ret)
			vd_cm_release_qp(id);
	}
	if (ret) {
		sock_release(sock);
		goto out;
	}
	id->state = VD_CM_CONNECTING;
	vd_cm_arm_timeout(id, p->timeout_ms ?: VD_CM_TIMEOUT_MS);
	ret = kernel_connect(sock, (struct sockaddr *)&id->peer, len,
			     O_NONBLOCK);
	if (ret && ret != -EINPROGRESS) {
		/* failures known at once are still reported as events */
		vd_cm_fail(id, VIADUCT_CM_EVENT_UNREACHABLE, ret);
	} else {
		vd_cm_queue(id);
	}
	ret = 0;
out:
	mutex_unlock(&id->lock);
	return ret;
}

/**
 * vd_cm_convert() - take over a connected TCP socket of the user's
 * @id: an idle id
 * @sock: a connected TCP socket (IPv4 or IPv6) in the owner's namespace;
 *        the id takes over the caller's reference on its file, whatever
 *        this returns
 * @qp: the QP to connect, Idle and bound to no other id
 * @p: the parameters; VIADUCT_CM_F_ACTIVE makes us the MPA initiator
 *
 * The MPA exchange runs on @sock: as initiator the request is sent at
 * once; as responder the id waits for the request and accepts it with @p
 * without a CONNECT_REQUEST. The outcome is an event, as for
 * vd_cm_connect().
 *
 * Return: 0; -EINVAL for a socket that is not TCP in the namespace, an id
 * that is not idle or too much private data; -ENOTCONN for a socket that
 * is not connected; -EADDRNOTAVAIL (or another error of vd_addr_check())
 * if its local address is not the device's; -EBUSY if it has an upper
 * layer protocol or another kernel user; those of vd_cm_take_qp(); those
 * of sending the request.
 */
int vd_cm_convert(struct vd_cm_id *id, struct socket *sock, struct vd_qp *qp,
		  const struct vd_cm_param *p)
{
	struct sock *sk = sock->sk;
	int ret;

	ret = -EINVAL;
	if (sk->sk_type != SOCK_STREAM || sk->sk_protocol != IPPROTO_TCP ||
	    (sk->sk_family != AF_INET && sk->sk_family != AF_INET6) ||
	    !net_eq(sock_net(sk), id->owner.net))
		goto put;
	ret = -ENOTCONN;
	if (READ_ONCE(sk->sk_state) != TCP_ESTABLISHED)
		goto put;

	mutex_lock(&id->lock);
	ret = -EINVAL;
	if (id->state != VD_CM_IDLE)
		goto unlock;
	if (p->flags & VIADUCT_CM_F_ACTIVE &&
	    p->pd_len > vd_mpa_pd_max(!(p->flags & VIADUCT_CM_F_MPA_V1)))
		goto unlock;
	memset(&id->local, 0, sizeof(id->local));
	memset(&id->peer, 0, sizeof(id->peer));
	if (kernel_getsockname(sock, (struct sockaddr *)&id->local) < 0 ||
	    kernel_getpeername(sock, (struct sockaddr *)&id->peer) < 0)
		goto unlock;
	ret = vd_addr_check(id->owner.dev, id->owner.net, &id->local, true);
	if (ret >= 0 && vd_addr_is_any(&id->local))
		ret = -EADDRNOTAVAIL;
	if (ret < 0)
		goto unlock;
	/* nor one with an upper layer protocol (TLS, MPTCP's, ...) */
	ret = -EBUSY;
	if (inet_csk(sk)->icsk_ulp_ops)
		goto unlock;
	ret = cm_start_active(id, qp, p);
	if (ret)
		goto unlock;
	/* a socket some other kernel user (or id) drives is not ours */
	ret = vd_cm_sock_attach(id, sock, NULL);
	if (ret) {
		vd_cm_release_qp(id);
		goto unlock;
	}
	id->active = p->flags & VIADUCT_CM_F_ACTIVE;
	id->mpa.active = id->active;
	/* the socket's file reference is ours until the id lets go */
	id->converted = true;
	vd_cm_arm_timeout(id, p->timeout_ms ?: VD_CM_TIMEOUT_MS);
	if (id->active) {
		ret = vd_cm_send_request(id);
		if (ret) {
			/* this drops the file reference too */
			vd_cm_teardown(id, false);
			id->state = VD_CM_IDLE;
			mutex_unlock(&id->lock);
			return ret;
		}
		id->state = VD_CM_REP_WAIT;
	} else {
		id->auto_accept = true;
		id->rx_len = 0;
		id->state = VD_CM_REQ_WAIT;
	}
	vd_cm_queue(id);
	mutex_unlock(&id->lock);
	return 0;
unlock:
	mutex_unlock(&id->lock);
put:
	fput(sock->file);
	return ret;
}
