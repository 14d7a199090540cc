// SPDX-License-Identifier: GPL-2.0
/*
 * The TCP endpoint of a CM id: its socket, the callbacks the CM installs on
 * it, closing it, and the MPA request and reply frames sent and read on it
 * (cm_priv.h). Every function but the socket callback runs under the id's
 * mutex.
 */
#include <linux/err.h>
#include <linux/net.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <net/sock.h>
#include <net/tcp_states.h>

#include "cm_priv.h"

/*
 * Socket callbacks: softirq context, under the socket lock or not, never
 * sleep. They only queue the id's work. sk_user_data is written under
 * sk_callback_lock, and the id it names stays allocated until the CM has
 * detached under that lock. It is set "nocopy": a socket accepted from a
 * listener does not inherit it (but does inherit these callbacks), so an
 * accepted socket reports nothing until vd_cm_sock_attach() made it ours, and
 * an orphaned one never names a freed listener.
 */
static void cm_sk_event(struct sock *sk)
{
	struct vd_cm_id *id;

	rcu_read_lock();
	read_lock_bh(&sk->sk_callback_lock);
	id = rcu_dereference_sk_user_data(sk);
	if (id)
		vd_cm_queue(id);
	read_unlock_bh(&sk->sk_callback_lock);
	rcu_read_unlock();
}

/**
 * vd_cm_sock_attach() - take over a socket's callbacks
 * @id: the id, locked (or not yet visible to anyone)
 * @sock: the socket
 * @listener: the listener @sock was accepted from, or NULL; an accepted
 *            socket carries copies of the listener's callbacks, whose
 *            originals the listener saved
 *
 * Return: 0, or -EBUSY if another kernel user (or another id) has the
 * socket already (its sk_user_data is set).
 */
int vd_cm_sock_attach(struct vd_cm_id *id, struct socket *sock,
		      const struct vd_cm_id *listener)
{
	struct sock *sk = sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	if (sk->sk_user_data) {
		write_unlock_bh(&sk->sk_callback_lock);
		return -EBUSY;
	}
	if (listener) {
		id->saved_data_ready = listener->saved_data_ready;
		id->saved_state_change = listener->saved_state_change;
		id->saved_write_space = listener->saved_write_space;
	} else {
		id->saved_data_ready = sk->sk_data_ready;
		id->saved_state_change = sk->sk_state_change;
		id->saved_write_space = sk->sk_write_space;
	}
	id->sock = sock;
	id->sk = sk;
	__rcu_assign_sk_user_data_with_flags(sk, id, SK_USER_DATA_NOCOPY);
	sk->sk_data_ready = cm_sk_event;
	sk->sk_state_change = cm_sk_event;
	sk->sk_write_space = cm_sk_event;
	write_unlock_bh(&sk->sk_callback_lock);
	return 0;
}

/**
 * vd_cm_sock_detach() - give a socket its callbacks back
 * @id: the id, locked
 *
 * Under sk_callback_lock, so that no callback names the id afterwards.
 */
void vd_cm_sock_detach(struct vd_cm_id *id)
{
	struct sock *sk = id->sk;

	write_lock_bh(&sk->sk_callback_lock);
	rcu_assign_sk_user_data(sk, NULL);
	sk->sk_data_ready = id->saved_data_ready;
	sk->sk_state_change = id->saved_state_change;
	sk->sk_write_space = id->saved_write_space;
	write_unlock_bh(&sk->sk_callback_lock);
}

/**
 * vd_cm_sock_move() - give an id's socket to another id
 * @from: the id that has the socket, locked
 * @to: an id without a socket, locked (or not yet visible to anyone)
 *
 * The callbacks stay installed; from the moment sk_user_data names @to
 * (under sk_callback_lock) the socket's events queue @to's work. The
 * saved callbacks and the file ownership go along.
 */
void vd_cm_sock_move(struct vd_cm_id *from, struct vd_cm_id *to)
{
	struct sock *sk = from->sk;

	write_lock_bh(&sk->sk_callback_lock);
	to->saved_data_ready = from->saved_data_ready;
	to->saved_state_change = from->saved_state_change;
	to->saved_write_space = from->saved_write_space;
	to->sock = from->sock;
	to->sk = sk;
	to->converted = from->converted;
	__rcu_assign_sk_user_data_with_flags(sk, to, SK_USER_DATA_NOCOPY);
	from->sock = NULL;
	from->sk = NULL;
	from->converted = false;
	write_unlock_bh(&sk->sk_callback_lock);
}

/**
 * vd_cm_sock_abort() - close a socket with RST
 * @sock: the socket
 *
 * The socket is closed right away and unsent data is dropped. Used for a
 * socket no id owns (a refused accept) and by vd_cm_sock_close().
 */
void vd_cm_sock_abort(struct socket *sock)
{
	struct sock *sk = sock->sk;

	if (sk->sk_prot->diag_destroy)
		sk->sk_prot->diag_destroy(sk, ECONNABORTED);
	else
		sock_no_linger(sk);
}

/**
 * vd_cm_sock_close() - close the id's socket
 * @id: the id, locked; nothing if it has no socket
 * @abort: RST, else FIN after what was sent
 *
 * Detaches the callbacks first. A converted socket's file reference is
 * dropped, any other socket released.
 */
void vd_cm_sock_close(struct vd_cm_id *id, bool abort)
{
	struct socket *sock = id->sock;

	lockdep_assert_held(&id->lock);
	if (!sock)
		return;
	vd_cm_sock_detach(id);
	id->sock = NULL;
	if (abort)
		vd_cm_sock_abort(sock);
	else
		kernel_sock_shutdown(sock, SHUT_WR);
	if (id->converted)
		fput(sock->file);
	else
		sock_release(sock);
	id->converted = false;
}

/**
 * vd_cm_sock_create() - a TCP socket in the owner's namespace
 * @id: the id
 * @family: AF_INET or AF_INET6
 * @res: set to the socket
 *
 * Created as the caller's own socket would be (not a kernel socket): it
 * holds a reference on the namespace, so that a connection still closing
 * after the CM let go of it (FIN_WAIT, TIME_WAIT) never outlives the
 * namespace, and the caller's security context applies.
 *
 * Context: Process context, in the caller's task.
 * Return: 0 or an error of __sock_create().
 */
int vd_cm_sock_create(struct vd_cm_id *id, int family, struct socket **res)
{
	return __sock_create(id->owner.net, family, SOCK_STREAM, IPPROTO_TCP,
			     res, 0);
}

/**
 * vd_cm_sock_gone() - whether the connection ended
 * @id: the id, with a socket
 * @err: set to 0 for the peer's FIN, else the socket's error (RST, ICMP,
 *       a timeout) or -ECONNRESET
 *
 * A socket that went from FIN_WAIT2 to TIME_WAIT is in TCP_CLOSE without
 * an error: a completed graceful close, told by the FIN it received. The
 * socket's error is read once by whoever reads or writes the socket first
 * (the transport's work items, sock_error()): a reset whose error is gone
 * already shows as a shut down socket that got no FIN, which only a FIN
 * marks done.
 *
 * Return: true if the peer closed or the connection failed.
 */
bool vd_cm_sock_gone(struct vd_cm_id *id, int *err)
{
	struct sock *sk = id->sk;

	*err = -READ_ONCE(sk->sk_err);
	if (*err)
		return true;
	if (READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN) {
		if (!sock_flag(sk, SOCK_DONE))
			*err = -ECONNRESET;
		return true;
	}
	if (READ_ONCE(sk->sk_state) == TCP_CLOSE) {
		*err = -ECONNRESET;
		return true;
	}
	return false;
}

/* What one call of vd_cm_sock_discard() reads at most. */
#define VD_CM_DISCARD_BUDGET	SZ_1M

/**
 * vd_cm_sock_discard() - drop what the peer still sends after our close
 * @id: a CM id in Closing: its transport stopped and our FIN is queued
 *
 * The peer's FIN arrives behind whatever it sent before it saw ours. A
 * peer still streaming when we closed would wait for window space we never
 * open if we stopped reading, and its FIN with it: the close would end
 * only by the CM's timeout. Closing processes no incoming segment (RDMA
 * verbs, Closing state), so they are read and dropped, up to
 * %VD_CM_DISCARD_BUDGET bytes per call: MSG_TRUNC makes TCP drop them
 * without copying them anywhere.
 *
 * Context: process, under the id's mutex.
 * Return: true if the budget was spent and more may be waiting.
 */
bool vd_cm_sock_discard(struct vd_cm_id *id)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_TRUNC };
	/* never written: TCP skips the copy for MSG_TRUNC */
	struct kvec kv = { .iov_base = NULL, .iov_len = VD_CM_DISCARD_BUDGET };
	int ret;

	/* <= 0: nothing more now, the FIN, or an error */
	ret = kernel_recvmsg(id->sock, &msg, &kv, 1, kv.iov_len,
			     MSG_DONTWAIT | MSG_TRUNC);
	return ret == VD_CM_DISCARD_BUDGET;
}

static int cm_send(struct vd_cm_id *id, const void *buf, size_t len)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	struct kvec kv = { .iov_base = (void *)buf, .iov_len = len };
	int ret;

	ret = kernel_sendmsg(id->sock, &msg, &kv, 1, len);
	if (ret < 0)
		return ret;
	/* a fresh connection has room for 532 bytes */
	return ret == len ? 0 : -EIO;
}

/**
 * vd_cm_send_frame() - send an MPA request or reply
 * @id: the id, locked, with a connected socket
 * @info: the frame (vd_mpa_rr_build() checks it, and the length)
 * @pd: @info->pd_len bytes of private data that follow the header
 *
 * Return: 0; -ENOMEM; an error of vd_mpa_rr_build() or of the socket;
 * -EIO if the socket took only part of the frame (a fresh connection has
 * room for 532 bytes).
 */
int vd_cm_send_frame(struct vd_cm_id *id, const struct vd_mpa_info *info,
		     const u8 *pd)
{
	u8 *buf;
	int len;

	buf = kmalloc(VD_MPA_FRAME_MAX, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	len = vd_mpa_rr_build(buf, VD_MPA_FRAME_MAX, info);
	if (len >= 0) {
		memcpy(buf + len, pd, info->pd_len);
		len = cm_send(id, buf, len + info->pd_len);
	}
	kfree(buf);
	return len;
}

/**
 * vd_cm_recv_frame() - read the peer's MPA request or reply
 * @id: the id, locked, with a connected socket
 * @reply: a reply is expected, else a request
 *
 * Reads as far as the frame arrived, never beyond its end: what follows
 * belongs to the transport. The header is validated by vd_mpa_rr_parse()
 * (key, revision, flags, lengths) as soon as its 20 bytes are in, before
 * its length is used, and decoded into @id->peer_info; the IRD/ORD words
 * of an enhanced frame once the frame is complete.
 *
 * Return: 0 when the frame is complete; -EAGAIN while more is to come;
 * -EPROTO for a frame that is not valid; -ECONNRESET if the peer closed;
 * another error of the socket.
 */
int vd_cm_recv_frame(struct vd_cm_id *id, bool reply)
{
	const struct vd_mpa_rr *hdr = (const void *)id->rx;
	struct vd_mpa_info *info = &id->peer_info;
	size_t want;
	int ret;

	for (;;) {
		struct msghdr msg = { .msg_flags = MSG_DONTWAIT };
		struct kvec kv;

		want = sizeof(*hdr);
		if (id->rx_len >= sizeof(*hdr)) {
			if (vd_mpa_rr_parse(hdr, reply, info) != VD_IW_OK)
				return -EPROTO;
			/* at most VD_MPA_MAX_PD: the frame fits in @rx */
			want += be16_to_cpu(hdr->pd_len);
			if (id->rx_len == want)
				break;
			/* a conversion's bytes already read went past it */
			if (id->rx_len > want)
				return -EPROTO;
		}
		kv.iov_base = id->rx + id->rx_len;
		kv.iov_len = want - id->rx_len;
		ret = kernel_recvmsg(id->sock, &msg, &kv, 1, kv.iov_len,
				     MSG_DONTWAIT);
		if (ret == 0)
			return -ECONNRESET;
		if (ret < 0)
			return ret;
		id->rx_len += ret;
	}
	if (info->enhanced)
		vd_mpa_v2_parse((const struct vd_mpa_v2 *)(hdr + 1), info);
	return 0;
}

/**
 * vd_cm_frame_pd() - the ULP's private data of the received frame
 * @id: the id, locked, with a complete frame
 *
 * Return: @id->peer_info.pd_len bytes in @id->rx, after the IRD/ORD words
 * of an enhanced frame.
 */
const u8 *vd_cm_frame_pd(struct vd_cm_id *id)
{
	return id->rx + sizeof(struct vd_mpa_rr) +
	       (id->peer_info.enhanced ? sizeof(struct vd_mpa_v2) : 0);
}
