// SPDX-License-Identifier: GPL-2.0
/*
 * Listeners and the passive side of the connection manager (cm_priv.h): a
 * listener accepts TCP connections as children, each child waits for the
 * initiator's MPA request, which becomes a CONNECT_REQUEST (the owner
 * gives the child a handle) and is then accepted or rejected.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/err.h>
#include <linux/fcntl.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <net/ipv6.h>
#include <net/sock.h>

#include "addr.h"
#include "cm_channel.h"
#include "cm_priv.h"

#define VD_CM_BACKLOG		64
#define VD_CM_BACKLOG_MAX	1024

/*
 * Every listener of every context, for CM_HANDOFF to find one by device and
 * port. A listener is on the list from the moment it listens until
 * vd_cm_listener_close(), both under its own mutex (which comes before
 * this one); whoever finds it here takes a reference.
 */
static LIST_HEAD(vd_cm_listeners);
static DEFINE_MUTEX(vd_cm_listeners_lock);

/**
 * vd_cm_send_reply() - send the reply to the request in @id->peer_info (passive side)
 * @id: the id, locked
 * @reject: the reply rejects
 * @flags: the responder's VIADUCT_CM_F_*
 * @pd: the private data of the reply
 * @pd_len: its bytes; within vd_mpa_pd_max() of the reply (checked by the
 *          caller; vd_mpa_rr_build() checks it again)
 *
 * Accepting settles the parameters into @id->mpa (vd_mpa_accept()).
 *
 * Return: as vd_cm_send_frame().
 */
int vd_cm_send_reply(struct vd_cm_id *id, bool reject, u32 flags,
		     const u8 *pd, u32 pd_len)
{
	struct vd_mpa_info info;
	struct vd_mpa_ours ours;

	vd_mpa_reply_info(&id->peer_info, reject, flags, &info);
	info.pd_len = pd_len;
	if (!reject) {
		vd_cm_ours(id, flags, &ours);
		vd_mpa_accept(&id->peer_info, &ours, &info, &id->mpa);
	}
	return vd_cm_send_frame(id, &info, pd);
}

/* The reply's private data fits the reply @flags ask for. */
static bool reply_pd_fits(struct vd_cm_id *id, u32 flags, u32 pd_len)
{
	struct vd_mpa_info rep;

	vd_mpa_reply_info(&id->peer_info, false, flags, &rep);
	return pd_len <= vd_mpa_pd_max(rep.enhanced);
}

/**
 * vd_cm_child_drop() - forget a child that never became a CONNECT_REQUEST
 * @id: the child, locked, never published
 *
 * Gone without a trace: RST to the peer, off the listener's list, and both
 * the list's and the owner's references dropped.
 */
void vd_cm_child_drop(struct vd_cm_id *id)
{
	struct vd_cm_id *l = id->parent;
	bool listed = false;

	lockdep_assert_held(&id->lock);
	vd_cm_teardown(id, true);
	id->state = VD_CM_DEAD;
	spin_lock_bh(&l->children_lock);
	if (!list_empty(&id->child_node)) {
		list_del_init(&id->child_node);
		l->nchildren--;
		listed = true;
	}
	spin_unlock_bh(&l->children_lock);
	if (listed)
		vd_cm_id_put(id);	/* the listener's list reference */
	vd_cm_id_put(id);		/* the owner's, never published */
}

/**
 * vd_cm_child_unlist() - take a child off its listener's list
 * @id: the id, locked; nothing for an id that is no child
 *
 * Once the child's request was answered (or the child was published and
 * closed). Drops the list's reference; the caller holds another.
 */
void vd_cm_child_unlist(struct vd_cm_id *id)
{
	struct vd_cm_id *l = id->parent;
	bool listed = false;

	if (!l)
		return;
	spin_lock_bh(&l->children_lock);
	if (!list_empty(&id->child_node)) {
		list_del_init(&id->child_node);
		l->nchildren--;
		listed = true;
	}
	spin_unlock_bh(&l->children_lock);
	if (listed)
		vd_cm_id_put(id);	/* the caller holds another */
}

/**
 * vd_cm_got_request() - the peer's MPA request in @id->peer_info is complete
 * @id: the child, locked
 *
 * A converted socket (auto-accept) is accepted with the id's own
 * parameters and reports ESTABLISHED or CONNECT_ERROR. Any other child is
 * published through the owner (whose reference becomes the table's) and
 * reports CONNECT_REQUEST; if publishing fails it is dropped.
 */
void vd_cm_got_request(struct vd_cm_id *id)
{
	const struct vd_mpa_info *req = &id->peer_info;
	int ret;

	id->mpa.revision = req->rev;
	id->mpa.enhanced = req->enhanced;
	id->mpa.peer_ird = req->ird;
	id->mpa.peer_ord = req->ord;

	if (id->auto_accept) {
		/* CONVERT_SOCKET as responder: accept with our parameters */
		ret = -EINVAL;
		if (reply_pd_fits(id, id->param.flags, id->param.pd_len))
			ret = vd_cm_send_reply(id, false, id->param.flags,
					       id->param.pd, id->param.pd_len);
		if (!ret)
			ret = vd_cm_establish(id);
		if (ret) {
			vd_cm_fail(id, VIADUCT_CM_EVENT_CONNECT_ERROR, ret);
			return;
		}
		vd_cm_report(id, VIADUCT_CM_EVENT_ESTABLISHED, 0,
			     vd_cm_frame_pd(id), req->pd_len);
		return;
	}

	vd_cm_disarm_timeout(id);
	/* the owner's reference becomes the table's */
	ret = id->owner.publish(id->owner.arg, id);
	if (ret) {
		vd_cm_child_drop(id);
		return;
	}
	id->state = VD_CM_REQ_RCVD;
	vd_cm_report(id, VIADUCT_CM_EVENT_CONNECT_REQUEST, 0,
		     vd_cm_frame_pd(id), req->pd_len);
}

static void cm_accept_one(struct vd_cm_id *l, struct socket *nsock)
{
	struct vd_cm_id *c;
	bool full;

	spin_lock_bh(&l->children_lock);
	full = l->nchildren >= l->backlog;
	spin_unlock_bh(&l->children_lock);
	/* events of the ids we have are never dropped: take no more ids */
	if (full || vd_cm_channel_full(l->ch))
		goto drop;
	c = vd_cm_id_create(&l->owner, l->ch, l->user_data);
	if (IS_ERR(c))
		goto drop;
	c->parent = vd_cm_id_get(l);
	kernel_getsockname(nsock, (struct sockaddr *)&c->local);
	kernel_getpeername(nsock, (struct sockaddr *)&c->peer);

	/* a fresh socket has no other user: attaching cannot fail */
	if (WARN_ON_ONCE(vd_cm_sock_attach(c, nsock, l))) {
		vd_cm_id_put(c);
		goto drop;
	}
	/* listener -> child, the only place two ids are locked */
	mutex_lock_nested(&c->lock, SINGLE_DEPTH_NESTING);
	c->state = VD_CM_REQ_WAIT;
	spin_lock_bh(&l->children_lock);
	list_add_tail(&c->child_node, &l->children);
	l->nchildren++;
	vd_cm_id_get(c);		/* the list's */
	spin_unlock_bh(&l->children_lock);
	vd_cm_arm_timeout(c, VD_CM_REQ_TIMEOUT_MS);
	/* the request may be there already */
	vd_cm_queue(c);
	mutex_unlock(&c->lock);
	return;
drop:
	vd_cm_sock_abort(nsock);
	sock_release(nsock);
}

/**
 * vd_cm_listen_work() - accept what the listener's socket has
 * @l: the listener, locked
 *
 * Each new connection becomes a child waiting for its MPA request (for
 * VD_CM_REQ_TIMEOUT_MS), or is reset when the backlog is full or memory
 * is short.
 */
void vd_cm_listen_work(struct vd_cm_id *l)
{
	struct socket *nsock;

	lockdep_assert_held(&l->lock);
	while (!kernel_accept(l->sock, &nsock, O_NONBLOCK))
		cm_accept_one(l, nsock);
}

/**
 * vd_cm_listen() - listen on an address of the id's device
 * @id: an idle id
 * @addr: the local address; the any-address means the device's
 *        addresses, not every one; set to the address bound (with the
 *        port chosen for port 0)
 * @backlog: pending connections at most: 0 for 64, at most 1024
 *
 * Context: Process context.
 * Return: 0; -EINVAL for an id that is not idle; the errors of
 * vd_addr_from_user() and vd_addr_check(); those of creating, binding or
 * listening on the socket (-EADDRINUSE and the like).
 */
int vd_cm_listen(struct vd_cm_id *id, struct viaduct_sockaddr *addr,
		 u32 backlog)
{
	struct sockaddr_storage ss;
	struct socket *sock;
	int len, ifindex, ret;

	ret = vd_addr_from_user(addr, &ss, &len);
	if (ret)
		return ret;
	if (backlog > VD_CM_BACKLOG_MAX)
		backlog = VD_CM_BACKLOG_MAX;
	mutex_lock(&id->lock);
	ret = -EINVAL;
	if (id->state != VD_CM_IDLE)
		goto out;
	ifindex = vd_addr_check(id->owner.dev, id->owner.net, &ss, true);
	if (ifindex < 0) {
		ret = ifindex;
		goto out;
	}
	ret = vd_cm_sock_create(id, ss.ss_family, &sock);
	if (ret)
		goto out;
	sock_set_reuseaddr(sock->sk);
	/* the any-address means the device's addresses, not every one */
	if (vd_addr_is_any(&ss))
		ret = sock_bindtoindex(sock->sk, ifindex, true);
	if (!ret)
		ret = kernel_bind(sock, (struct sockaddr *)&ss, len);
	if (ret)
		goto release;
	id->backlog = backlog ?: VD_CM_BACKLOG;
	ret = vd_cm_sock_attach(id, sock, NULL);
	if (ret)
		goto release;
	ret = kernel_listen(sock, id->backlog);
	if (ret) {
		vd_cm_sock_detach(id);
		id->sock = NULL;
		goto release;
	}
	kernel_getsockname(sock, (struct sockaddr *)&id->local);
	vd_addr_to_user(&id->local, addr);
	id->state = VD_CM_LISTEN;
	id->listen_uid = current_euid();
	mutex_lock(&vd_cm_listeners_lock);
	list_add_tail(&id->listen_node, &vd_cm_listeners);
	mutex_unlock(&vd_cm_listeners_lock);
	vd_dbg_cm(id, "listening\n");
	goto out;
release:
	sock_release(sock);
out:
	mutex_unlock(&id->lock);
	return ret;
}

/**
 * vd_cm_listener_close() - close a listener
 * @l: the listener, locked
 *
 * No new children; those waiting for their request go away, those whose
 * CONNECT_REQUEST is unanswered are rejected.
 */
void vd_cm_listener_close(struct vd_cm_id *l)
{
	struct vd_cm_id *c;

	lockdep_assert_held(&l->lock);
	mutex_lock(&vd_cm_listeners_lock);
	list_del_init(&l->listen_node);
	mutex_unlock(&vd_cm_listeners_lock);
	/* nothing is accepted any more: the listener's work needs a socket */
	vd_cm_sock_close(l, false);
	spin_lock_bh(&l->children_lock);
	l->closing = true;
	spin_unlock_bh(&l->children_lock);

	/*
	 * One child at a time off the list, under the lock under which
	 * children take themselves off, so that each is handled once.
	 */
	for (;;) {
		spin_lock_bh(&l->children_lock);
		c = list_first_entry_or_null(&l->children, struct vd_cm_id,
					     child_node);
		if (c) {
			list_del_init(&c->child_node);
			l->nchildren--;
		}
		spin_unlock_bh(&l->children_lock);
		if (!c)
			break;
		/* the list's reference is ours now */
		mutex_lock_nested(&c->lock, SINGLE_DEPTH_NESTING);
		if (c->state == VD_CM_REQ_WAIT) {
			vd_cm_child_drop(c);
		} else if (c->state == VD_CM_REQ_RCVD) {
			vd_cm_send_reply(c, true, 0, NULL, 0);
			vd_cm_teardown(c, false);
			c->state = VD_CM_CLOSED;
		}
		mutex_unlock(&c->lock);
		vd_cm_id_put(c);
	}
}

/**
 * vd_cm_accept() - accept a CONNECT_REQUEST
 * @id: the child that reported the request
 * @qp: the QP to connect, Idle and bound to no other id
 * @p: the responder's parameters; @p->pd_len within vd_mpa_pd_max() of
 *     the reply
 *
 * Sends the reply, hands the stream to the transport and reports
 * ESTABLISHED. If the reply or the hand-over fails the id is closed with
 * RST.
 *
 * Context: Process context.
 * Return: 0; -EINVAL for an id that has no unanswered request or too much
 * private data; -ECONNRESET if the peer went away meanwhile; those of
 * vd_cm_take_qp(); those of vd_cm_send_reply() and vd_cm_establish().
 */
int vd_cm_accept(struct vd_cm_id *id, struct vd_qp *qp,
		 const struct vd_cm_param *p)
{
	int ret;

	mutex_lock(&id->lock);
	ret = -EINVAL;
	if (id->state != VD_CM_REQ_RCVD)
		goto out;
	if (id->peer_closed) {
		ret = -ECONNRESET;
		goto out;
	}
	if (!reply_pd_fits(id, p->flags, p->pd_len))
		goto out;
	ret = vd_cm_take_qp(id, qp);
	if (ret)
		goto out;
	id->param = *p;
	ret = vd_cm_send_reply(id, false, p->flags, p->pd, p->pd_len);
	if (!ret)
		ret = vd_cm_establish(id);
	if (ret) {
		/* the peer learns from the RST; this id is done */
		vd_cm_teardown(id, true);
		id->state = VD_CM_CLOSED;
		vd_cm_child_unlist(id);
		goto out;
	}
	vd_cm_child_unlist(id);
	vd_cm_report(id, VIADUCT_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	/* the transport or our watch takes it from here */
	vd_cm_queue(id);
out:
	mutex_unlock(&id->lock);
	return ret;
}

/**
 * vd_cm_reject() - reject a CONNECT_REQUEST
 * @id: the child that reported the request
 * @pd: the private data of the reply
 * @pd_len: its bytes; within vd_mpa_pd_max() of the reply
 *
 * Sends a rejecting reply and closes the connection gracefully; the id is
 * closed whatever the reply's fate.
 *
 * Context: Process context.
 * Return: 0; -EINVAL for an id that has no unanswered request or too much
 * private data; -ECONNRESET if the peer went away meanwhile; an error of
 * vd_cm_send_reply().
 */
int vd_cm_reject(struct vd_cm_id *id, const u8 *pd, u32 pd_len)
{
	int ret;

	mutex_lock(&id->lock);
	ret = -EINVAL;
	if (id->state != VD_CM_REQ_RCVD)
		goto out;
	if (!reply_pd_fits(id, 0, pd_len))
		goto out;
	ret = vd_cm_send_reply(id, true, 0, pd, pd_len);
	vd_cm_teardown(id, false);
	id->state = VD_CM_CLOSED;
	vd_cm_child_unlist(id);
	if (id->peer_closed)
		ret = -ECONNRESET;
out:
	mutex_unlock(&id->lock);
	return ret;
}

/* --- Hand-off ------------------------------------------------------- */

static __be16 cm_port(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ?
	       ((const struct sockaddr_in *)ss)->sin_port :
	       ((const struct sockaddr_in6 *)ss)->sin6_port;
}

/* @l listens on @port and @addr (NULL: any address) of @c's device. */
static bool cm_listener_matches(const struct vd_cm_id *l,
				const struct vd_cm_id *c,
				const struct sockaddr_storage *addr,
				__be16 port)
{
	const struct sockaddr_in6 *a6, *l6;
	const struct sockaddr_in *a4, *l4;

	if (l->owner.dev != c->owner.dev ||
	    !net_eq(l->owner.net, c->owner.net) || cm_port(&l->local) != port)
		return false;
	/* a listener on the any-address takes every address of the device */
	if (!addr || vd_addr_is_any(&l->local))
		return true;
	if (addr->ss_family != l->local.ss_family)
		return false;
	if (addr->ss_family == AF_INET) {
		a4 = (const struct sockaddr_in *)addr;
		l4 = (const struct sockaddr_in *)&l->local;
		return a4->sin_addr.s_addr == l4->sin_addr.s_addr;
	}
	a6 = (const struct sockaddr_in6 *)addr;
	l6 = (const struct sockaddr_in6 *)&l->local;
	return ipv6_addr_equal(&a6->sin6_addr, &l6->sin6_addr);
}

/* The listener of @c's device on @addr/@port, referenced, or NULL. */
static struct vd_cm_id *cm_listener_find(const struct vd_cm_id *c,
					 const struct sockaddr_storage *addr,
					 __be16 port)
{
	struct vd_cm_id *l, *found = NULL;

	mutex_lock(&vd_cm_listeners_lock);
	list_for_each_entry(l, &vd_cm_listeners, listen_node) {
		if (cm_listener_matches(l, c, addr, port)) {
			found = vd_cm_id_get(l);
			break;
		}
	}
	mutex_unlock(&vd_cm_listeners_lock);
	return found;
}

/* The request of @c, locked, becomes @n's, a new child of @l, locked. */
static int cm_handoff_move(struct vd_cm_id *l, struct vd_cm_id *c,
			   struct vd_cm_id *n)
{
	bool full;
	int ret;

	if (l->state != VD_CM_LISTEN)
		return -ENOENT;		/* closed since it was found */
	if (c->state != VD_CM_REQ_RCVD)
		return -EINVAL;
	if (c->peer_closed)
		return -ECONNRESET;
	spin_lock_bh(&l->children_lock);
	full = l->closing || l->nchildren >= l->backlog;
	spin_unlock_bh(&l->children_lock);
	if (full || vd_cm_channel_full(l->ch))
		return -EBUSY;

	n->parent = vd_cm_id_get(l);
	n->local = c->local;
	n->peer = c->peer;
	n->peer_info = c->peer_info;
	n->mpa = c->mpa;
	n->rx_len = c->rx_len;
	memcpy(n->rx, c->rx, c->rx_len);
	n->state = VD_CM_REQ_RCVD;
	vd_cm_sock_move(c, n);
	/* the owner's reference becomes the other table's */
	ret = l->owner.publish(l->owner.arg, n);
	if (ret) {
		vd_cm_sock_move(n, c);
		n->state = VD_CM_DEAD;
		return ret;
	}
	spin_lock_bh(&l->children_lock);
	list_add_tail(&n->child_node, &l->children);
	l->nchildren++;
	vd_cm_id_get(n);		/* the list's */
	spin_unlock_bh(&l->children_lock);
	vd_cm_report(n, VIADUCT_CM_EVENT_CONNECT_REQUEST, 0,
		     vd_cm_frame_pd(n), n->peer_info.pd_len);
	/* the peer may have gone while the socket changed hands */
	vd_cm_queue(n);

	vd_cm_child_unlist(c);
	c->state = VD_CM_CLOSED;
	vd_dbg_cm(c, "handed off as cm%u\n", n->handle);
	return 0;
}

/**
 * vd_cm_handoff() - move an unanswered CONNECT_REQUEST to another listener
 * @id: the id of the request (a child in REQ_RCVD)
 * @addr: the target listener's address, or NULL for any
 * @port: its port
 *
 * The listener of @id's device on @addr and @port (which may be another
 * context's) gets a new child with @id's socket, request and addresses,
 * published through its owner, and reports CONNECT_REQUEST with the same
 * private data. @id is left CLOSED without a socket, for its owner to
 * destroy. The caller must have the target listener's creator's euid or
 * CAP_NET_ADMIN in the namespace: a listener bound to one address is then
 * given only connections its own user chose to pass it.
 *
 * Locking: the target listener, then @id and the new child, in the
 * listener -> child order of cm.h (the new child one level deeper).
 *
 * Context: Process context.
 * Return: 0; -ENOENT if no such listener listens (any more); -EPERM if it
 * is another user's; -EINVAL if @id has no unanswered request;
 * -ECONNRESET if its peer went away; -EBUSY if the listener's backlog or
 * channel is full; -ENOMEM; an error of the owner's publish callback.
 * @id is untouched on error.
 */
int vd_cm_handoff(struct vd_cm_id *id, const struct sockaddr_storage *addr,
		  __be16 port)
{
	struct vd_cm_id *l, *n;
	int ret;

	l = cm_listener_find(id, addr, port);
	if (!l)
		return -ENOENT;
	/* a listener is no request (and its mutex is taken once only) */
	ret = -EINVAL;
	if (l == id)
		goto put;
	ret = -EPERM;
	if (!uid_eq(l->listen_uid, current_euid()) &&
	    !ns_capable(id->owner.net->user_ns, CAP_NET_ADMIN))
		goto put;
	n = vd_cm_id_create(&l->owner, l->ch, l->user_data);
	if (IS_ERR(n)) {
		ret = PTR_ERR(n);
		goto put;
	}
	mutex_lock(&l->lock);
	mutex_lock_nested(&id->lock, SINGLE_DEPTH_NESTING);
	mutex_lock_nested(&n->lock, SINGLE_DEPTH_NESTING + 1);
	ret = cm_handoff_move(l, id, n);
	mutex_unlock(&n->lock);
	mutex_unlock(&id->lock);
	mutex_unlock(&l->lock);
	if (ret)
		vd_cm_id_put(n);	/* never published: the owner's */
put:
	vd_cm_id_put(l);
	return ret;
}
