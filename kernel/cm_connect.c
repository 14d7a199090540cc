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

/*
 * The socket a conversion may take: TCP over IPv4 or IPv6 in the id's
 * namespace, established, with no upper layer protocol (kTLS, ...) and no
 * other kernel user (a BPF sockmap's psock uses sk_user_data). Checked
 * before the socket is claimed, so that a refusal leaves the caller's
 * descriptor alone, and again after: only then can nobody else reach it.
 */
static int cm_convert_check(struct vd_cm_id *id, struct sock *sk)
{
	if (sk->sk_type != SOCK_STREAM || sk->sk_protocol != IPPROTO_TCP ||
	    (sk->sk_family != AF_INET && sk->sk_family != AF_INET6) ||
	    !net_eq(sock_net(sk), id->owner.net))
		return -EINVAL;
	if (READ_ONCE(sk->sk_state) != TCP_ESTABLISHED)
		return -ENOTCONN;
	if (READ_ONCE(inet_csk(sk)->icsk_ulp_ops) ||
	    rcu_access_pointer(sk->sk_user_data))
		return -EBUSY;
	return 0;
}

/* Sends the last streaming-mode message: all of it, or the exchange fails. */
static int cm_convert_send(struct vd_cm_id *id, const struct vd_cm_convert *cv)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	struct kvec kv = { .iov_base = (void *)cv->send,
			   .iov_len = cv->send_len };
	int ret;

	ret = kernel_sendmsg(id->sock, &msg, &kv, 1, cv->send_len);
	if (ret < 0)
		return ret;
	return ret == cv->send_len ? 0 : -EIO;
}

/**
 * vd_cm_convert() - take over a connected TCP socket of the user's
 * @id: an idle id
 * @sock: a connected TCP socket (IPv4 or IPv6) in the owner's namespace;
 *        the id takes over the caller's reference on its file, whatever
 *        this returns
 * @qp: the QP to connect, Idle and bound to no other id
 * @p: the parameters; VIADUCT_CM_F_ACTIVE makes us the MPA initiator
 * @cv: the claim callback and the data the conversion carries
 *
 * Everything is checked first; then @cv->claim takes the socket away from
 * its user (ucm.c: out of the caller's descriptor table, refused if
 * anyone else holds the file), the socket is checked again (nobody can
 * install an upper layer protocol on it from now on: that needs a
 * descriptor) and the CM installs its callbacks. @cv->send goes out
 * first; @cv->recv is taken as the start of what the peer sent. The MPA
 * exchange then runs on @sock: as initiator the request is sent at once;
 * as responder the id waits for the request and accepts it with @p
 * without a CONNECT_REQUEST. The outcome is an event, as for
 * vd_cm_connect().
 *
 * Return: 0; -EINVAL for a socket that is not TCP in the namespace, an id
 * that is not idle, too much private data or bytes already read for an
 * initiator (the reply comes after our request); -ENOTCONN for a socket that
 * is not connected; -EADDRNOTAVAIL (or another error of vd_addr_check())
 * if its local address is not the device's; -EBUSY if it has an upper
 * layer protocol or another kernel user; -EAGAIN if its send buffer has
 * no room for @cv->send now; those of vd_cm_take_qp(); those of the
 * claim (after which the caller's descriptor may be gone); those of
 * sending @cv->send and the request.
 */
int vd_cm_convert(struct vd_cm_id *id, struct socket *sock, struct vd_qp *qp,
		  const struct vd_cm_param *p, const struct vd_cm_convert *cv)
{
	struct sock *sk = sock->sk;
	int ret;

	ret = cm_convert_check(id, sk);
	if (ret)
		goto put;
	ret = -EINVAL;
	if (WARN_ON_ONCE(cv->recv_len > sizeof(id->rx)))
		goto put;

	mutex_lock(&id->lock);
	ret = -EINVAL;
	if (id->state != VD_CM_IDLE)
		goto unlock;
	if (p->flags & VIADUCT_CM_F_ACTIVE &&
	    p->pd_len > vd_mpa_pd_max(!(p->flags & VIADUCT_CM_F_MPA_V1)))
		goto unlock;
	/* the peer's reply cannot have come before our request */
	if (p->flags & VIADUCT_CM_F_ACTIVE && cv->recv_len)
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
	/* the message goes out whole or the socket stays the caller's */
	ret = -EAGAIN;
	if (cv->send_len && sk_stream_wspace(sk) < (int)cv->send_len)
		goto unlock;
	ret = cm_start_active(id, qp, p);
	if (ret)
		goto unlock;
	ret = cv->claim(cv->claim_arg, sock);
	/* nobody else reaches the socket now: this check is final */
	if (!ret)
		ret = cm_convert_check(id, sk);
	/* a socket some other kernel user (or id) drives is not ours */
	if (!ret)
		ret = vd_cm_sock_attach(id, sock, NULL);
	if (ret) {
		vd_cm_release_qp(id);
		goto unlock;
	}
	id->active = p->flags & VIADUCT_CM_F_ACTIVE;
	id->mpa.active = id->active;
	/* the socket's file reference is ours until the id lets go */
	id->converted = true;
	if (cv->recv_len)
		memcpy(id->rx, cv->recv, cv->recv_len);
	id->rx_len = cv->recv_len;
	vd_cm_arm_timeout(id, p->timeout_ms ?: VD_CM_TIMEOUT_MS);
	ret = cv->send_len ? cm_convert_send(id, cv) : 0;
	if (!ret && id->active)
		ret = vd_cm_send_request(id);
	if (ret) {
		/* this drops the file reference too */
		vd_cm_teardown(id, true);
		id->state = VD_CM_IDLE;
		mutex_unlock(&id->lock);
		return ret;
	}
	if (id->active) {
		id->state = VD_CM_REP_WAIT;
	} else {
		id->auto_accept = true;
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
