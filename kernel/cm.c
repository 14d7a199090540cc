// SPDX-License-Identifier: GPL-2.0
/*
 * The iWARP connection manager: TCP endpoints in the context's namespace,
 * the MPA request/reply exchange (RFC 5044, enhanced by RFC 6581), CM event
 * channels, and the hand-over of an established stream to the transport.
 * See cm.h for the API and the locking, conn.h for the transport contract
 * and Documentation/cm.rst for the protocol choices.
 *
 * Every id runs one state machine under its mutex, from its commands and
 * from its work item. Socket callbacks only queue the work item; the work
 * item looks at the socket's state and reads what arrived, so a burst of
 * callbacks costs one pass.
 */
#include <linux/anon_inodes.h>
#include <linux/err.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/inetdevice.h>
#include <linux/net.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <net/inet_connection_sock.h>
#include <net/ip6_route.h>
#include <net/route.h>
#include <net/sock.h>
#include <net/tcp_states.h>

#include "cm.h"
#include "conn.h"
#include "device.h"
#include "iwarp.h"
#include "qp.h"
#include "viaduct.h"

#define VD_CM_TIMEOUT_MS	30000	/* connect, close: default */
#define VD_CM_REQ_TIMEOUT_MS	10000	/* passive: the MPA request must come */
#define VD_CM_BACKLOG		64
#define VD_CM_BACKLOG_MAX	1024
#define VD_CM_CHANNEL_MAX	4096	/* events queued per channel */

/* The largest MPA request or reply: the header and 512 bytes of data. */
#define VD_MPA_FRAME_MAX	(sizeof(struct vd_mpa_rr) + VD_MPA_MAX_PD)

/* Private data of the ULP in an enhanced frame: the IRD/ORD words go first. */
#define VD_MPA_V2_PD_MAX	(VD_MPA_MAX_PD - sizeof(struct vd_mpa_v2))

static_assert(VIADUCT_CM_PRIVATE_DATA_MAX == VD_MPA_MAX_PD);

enum vd_cm_state {
	VD_CM_IDLE,
	VD_CM_LISTEN,
	VD_CM_CONNECTING,	/* active: TCP handshake under way */
	VD_CM_REP_WAIT,		/* active: request sent, reply awaited */
	VD_CM_REQ_WAIT,		/* passive: request awaited */
	VD_CM_REQ_RCVD,		/* passive: CONNECT_REQUEST raised */
	VD_CM_ESTABLISHED,
	VD_CM_CLOSING,		/* our FIN sent, the peer's awaited */
	VD_CM_CLOSED,
	VD_CM_DEAD,		/* destroyed */
};

struct vd_cm_channel {
	struct kref ref;
	spinlock_t lock;		/* @queue, @queued, ids' @unacked */
	struct mutex read_lock;		/* one reader at a time */
	wait_queue_head_t wait;
	struct list_head queue;		/* struct vd_cm_event, unread */
	u32 queued;
	u32 next_seq;
	bool warned;
};

struct vd_cm_event {
	struct list_head id_node;	/* on the id's @unacked until acked */
	struct list_head ch_node;	/* on the channel's @queue until read */
	struct viaduct_cm_event ev;
};

struct vd_cm_id {
	struct kref ref;
	struct mutex lock;		/* the state machine */
	enum vd_cm_state state;
	struct vd_cm_owner owner;
	struct vd_cm_channel *ch;	/* referenced */
	struct list_head unacked;	/* under @ch->lock */
	u64 user_data;
	u32 handle;			/* 0 until published */
	bool active;
	bool converted;			/* @sock is a user's socket */
	bool auto_accept;		/* passive convert: no CONNECT_REQUEST */
	bool peer_closed;		/* REQ_RCVD: the peer went away */

	/* listener */
	struct vd_cm_id *parent;	/* a child's listener, referenced */
	spinlock_t children_lock;	/* @children, @nchildren, @closing */
	struct list_head children;	/* pending children, referenced */
	struct list_head child_node;
	u32 nchildren;
	u32 backlog;
	bool closing;

	/* endpoint */
	struct socket *sock;
	struct sock *sk;
	void (*saved_data_ready)(struct sock *sk);
	void (*saved_state_change)(struct sock *sk);
	void (*saved_write_space)(struct sock *sk);
	struct work_struct work;
	struct delayed_work timeout;
	struct sockaddr_storage local;
	struct sockaddr_storage peer;

	/* connection */
	struct vd_qp *qp;		/* referenced, registered in vd_cm_qps */
	struct vd_conn *conn;
	/* vd_cm_stream_closed(): 0, 1 for a FIN, or a negative errno */
	int tp_closed;
	struct vd_cm_param param;	/* ours */
	struct vd_mpa_params mpa;
	struct vd_mpa_info peer_info;	/* the peer's frame, once parsed */
	u32 rx_len;
	u8 rx[VD_MPA_FRAME_MAX];	/* the peer's frame as it arrives */
};

static struct workqueue_struct *vd_cm_wq;
static const struct vd_stream_ops *vd_cm_stream_ops;
/* QP number -> the id the QP is bound to: one connection per QP */
static DEFINE_XARRAY(vd_cm_qps);

#define vd_dbg_cm(id, fmt, ...)						\
	pr_debug("cm%u %s: " fmt, (id)->handle, __func__, ##__VA_ARGS__)

void vd_cm_set_stream_ops(const struct vd_stream_ops *ops)
{
	WRITE_ONCE(vd_cm_stream_ops, ops);
}

/* --- Channels ------------------------------------------------------- */

static void vd_cm_channel_free(struct kref *ref)
{
	struct vd_cm_channel *ch = container_of(ref, struct vd_cm_channel, ref);

	/* events belong to ids, and every id holds a channel reference */
	WARN_ON_ONCE(!list_empty(&ch->queue));
	mutex_destroy(&ch->read_lock);
	kfree(ch);
}

void vd_cm_channel_put(struct vd_cm_channel *ch)
{
	if (ch)
		kref_put(&ch->ref, vd_cm_channel_free);
}

static bool channel_empty(struct vd_cm_channel *ch)
{
	return !READ_ONCE(ch->queued);
}

/*
 * Queues @e on the channel of @id and on the id's unacknowledged list, and
 * gives it the next sequence number. A full channel drops the event.
 */
static void channel_push(struct vd_cm_id *id, struct vd_cm_event *e)
{
	struct vd_cm_channel *ch = id->ch;
	bool warn = false;

	spin_lock_bh(&ch->lock);
	if (ch->queued >= VD_CM_CHANNEL_MAX) {
		warn = !ch->warned;
		ch->warned = true;
		spin_unlock_bh(&ch->lock);
		kfree(e);
		if (warn)
			pr_warn("CM channel full: events are being dropped\n");
		return;
	}
	e->ev.seq = ++ch->next_seq;
	list_add_tail(&e->ch_node, &ch->queue);
	list_add_tail(&e->id_node, &id->unacked);
	WRITE_ONCE(ch->queued, ch->queued + 1);
	spin_unlock_bh(&ch->lock);
	wake_up_interruptible_poll(&ch->wait, EPOLLIN | EPOLLRDNORM);
}

static void event_unlink(struct vd_cm_channel *ch, struct vd_cm_event *e)
{
	lockdep_assert_held(&ch->lock);
	if (!list_empty(&e->ch_node)) {
		list_del_init(&e->ch_node);
		WRITE_ONCE(ch->queued, ch->queued - 1);
	}
	list_del(&e->id_node);
}

static ssize_t vd_cm_channel_read(struct file *file, char __user *buf,
				  size_t len, loff_t *ppos)
{
	struct vd_cm_channel *ch = file->private_data;
	struct viaduct_cm_event *ev;
	struct vd_cm_event *e;
	size_t done = 0;
	int ret;

	if (len < sizeof(*ev))
		return -EINVAL;
	for (;;) {
		if (mutex_lock_interruptible(&ch->read_lock))
			return -ERESTARTSYS;
		if (!channel_empty(ch))
			break;
		mutex_unlock(&ch->read_lock);
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(ch->wait, !channel_empty(ch));
		if (ret)
			return ret;
	}

	ret = -ENOMEM;
	ev = kmalloc(sizeof(*ev), GFP_KERNEL);
	if (!ev)
		goto out;
	ret = 0;
	while (len - done >= sizeof(*ev)) {
		/* peek, copy, then consume: a fault loses nothing */
		spin_lock_bh(&ch->lock);
		e = list_first_entry_or_null(&ch->queue, struct vd_cm_event,
					     ch_node);
		if (e)
			*ev = e->ev;
		spin_unlock_bh(&ch->lock);
		if (!e)
			break;
		if (copy_to_user(buf + done, ev, sizeof(*ev))) {
			ret = -EFAULT;
			break;
		}
		done += sizeof(*ev);
		/*
		 * The event may have been acked or its id destroyed meanwhile;
		 * sequence numbers are unique per channel, so comparing them
		 * finds out whether it is still the head.
		 */
		spin_lock_bh(&ch->lock);
		e = list_first_entry_or_null(&ch->queue, struct vd_cm_event,
					     ch_node);
		if (e && e->ev.seq == ev->seq) {
			list_del_init(&e->ch_node);
			WRITE_ONCE(ch->queued, ch->queued - 1);
		}
		spin_unlock_bh(&ch->lock);
	}
	kfree(ev);
out:
	mutex_unlock(&ch->read_lock);
	return done ? done : ret;
}

static __poll_t vd_cm_channel_poll(struct file *file, poll_table *wait)
{
	struct vd_cm_channel *ch = file->private_data;

	poll_wait(file, &ch->wait, wait);
	return channel_empty(ch) ? 0 : EPOLLIN | EPOLLRDNORM;
}

static int vd_cm_channel_release(struct inode *inode, struct file *file)
{
	vd_cm_channel_put(file->private_data);
	return 0;
}

static const struct file_operations vd_cm_channel_fops = {
	.owner = THIS_MODULE,
	.read = vd_cm_channel_read,
	.poll = vd_cm_channel_poll,
	.release = vd_cm_channel_release,
	.llseek = noop_llseek,
};

struct file *vd_cm_channel_create_file(void)
{
	struct vd_cm_channel *ch;
	struct file *file;

	ch = kzalloc(sizeof(*ch), GFP_KERNEL_ACCOUNT);
	if (!ch)
		return ERR_PTR(-ENOMEM);
	kref_init(&ch->ref);
	spin_lock_init(&ch->lock);
	mutex_init(&ch->read_lock);
	init_waitqueue_head(&ch->wait);
	INIT_LIST_HEAD(&ch->queue);
	/* on success the file owns the only reference */
	file = anon_inode_getfile("[viaduct-cm-channel]", &vd_cm_channel_fops,
				  ch, O_RDWR);
	if (IS_ERR(file))
		vd_cm_channel_put(ch);
	return file;
}

struct vd_cm_channel *vd_cm_channel_fdget(int fd)
{
	struct vd_cm_channel *ch = ERR_PTR(-EINVAL);
	struct file *file;

	file = fget(fd);
	if (!file)
		return ERR_PTR(-EBADF);
	if (file->f_op == &vd_cm_channel_fops) {
		ch = file->private_data;
		kref_get(&ch->ref);
	}
	fput(file);
	return ch;
}

/* --- Addresses ------------------------------------------------------ */

static int addr_from_user(const struct viaduct_sockaddr *a,
			  struct sockaddr_storage *ss, int *len)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == VIADUCT_AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		if (a->scope_id || memchr_inv(a->addr + 4, 0, 12))
			return -EINVAL;
		sin->sin_family = AF_INET;
		sin->sin_port = a->port;
		memcpy(&sin->sin_addr, a->addr, 4);
		*len = sizeof(*sin);
		return 0;
	}
	if (a->family == VIADUCT_AF_INET6 && IS_ENABLED(CONFIG_IPV6)) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = a->port;
		sin6->sin6_scope_id = a->scope_id;
		memcpy(&sin6->sin6_addr, a->addr, 16);
		*len = sizeof(*sin6);
		return 0;
	}
	return -EAFNOSUPPORT;
}

static void addr_to_user(const struct sockaddr_storage *ss,
			 struct viaduct_sockaddr *a)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)ss;

		a->family = VIADUCT_AF_INET;
		a->port = sin->sin_port;
		memcpy(a->addr, &sin->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)ss;

		a->family = VIADUCT_AF_INET6;
		a->port = sin6->sin6_port;
		a->scope_id = sin6->sin6_scope_id;
		memcpy(a->addr, &sin6->sin6_addr, 16);
	}
}

static bool addr_is_any(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return ipv6_addr_any(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

/* Whether @ss (its address part) is one of the addresses in @attr. */
static bool addr_on_device(const struct viaduct_device_attr *attr,
			   const struct sockaddr_storage *ss)
{
	const void *ip;
	u16 family;
	size_t n;
	u32 i;

	if (ss->ss_family == AF_INET) {
		family = VIADUCT_AF_INET;
		ip = &((const struct sockaddr_in *)ss)->sin_addr;
		n = 4;
	} else {
		family = VIADUCT_AF_INET6;
		ip = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		n = 16;
	}
	for (i = 0; i < min(attr->num_addrs, VIADUCT_MAX_ADDRS); i++)
		if (attr->addrs[i].family == family &&
		    !memcmp(attr->addrs[i].addr, ip, n))
			return true;
	return false;
}

/* The egress interface of a route to @dst in @net, or a negative errno. */
static int route_ifindex(struct net *net, const struct sockaddr_storage *dst)
{
	int ifindex;

	if (dst->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)dst;
		struct flowi4 fl4 = { .daddr = sin->sin_addr.s_addr };
		struct rtable *rt = ip_route_output_key(net, &fl4);

		if (IS_ERR(rt))
			return PTR_ERR(rt);
		ifindex = rt->dst.dev->ifindex;
		ip_rt_put(rt);
		return ifindex;
	}
#if IS_ENABLED(CONFIG_IPV6)
	{
		const struct sockaddr_in6 *sin6 = (const void *)dst;
		struct flowi6 fl6 = {
			.daddr = sin6->sin6_addr,
			.flowi6_oif = sin6->sin6_scope_id,
		};
		struct dst_entry *d = ip6_route_output(net, NULL, &fl6);

		ifindex = d->error ? d->error : d->dev->ifindex;
		dst_release(d);
		return ifindex;
	}
#else
	return -EAFNOSUPPORT;
#endif
}

/*
 * A listener's address must be one of the device's (or the any-address);
 * a connection's destination must be routed out of the device's interface
 * (or be one of its addresses). Returns the interface index to bind to.
 */
static int check_device(struct vd_cm_id *id, const struct sockaddr_storage *ss,
			bool listen)
{
	struct viaduct_device_attr *attr;
	int ret;

	attr = kzalloc(sizeof(*attr), GFP_KERNEL);
	if (!attr)
		return -ENOMEM;
	ret = vd_device_query(id->owner.dev, attr);
	if (ret)
		goto out;
	if (listen) {
		ret = addr_is_any(ss) || addr_on_device(attr, ss) ?
		      (int)attr->ifindex : -EADDRNOTAVAIL;
		goto out;
	}
	if (addr_on_device(attr, ss)) {
		ret = attr->ifindex;
		goto out;
	}
	ret = route_ifindex(id->owner.net, ss);
	if (ret >= 0)
		ret = ret == attr->ifindex ? ret : -EADDRNOTAVAIL;
	else if (ret != -ENOMEM)
		ret = -ENETUNREACH;
out:
	kfree(attr);
	return ret;
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
	kfree(id);
}

struct vd_cm_id *vd_cm_id_get(struct vd_cm_id *id)
{
	kref_get(&id->ref);
	return id;
}

void vd_cm_id_put(struct vd_cm_id *id)
{
	kref_put(&id->ref, cm_id_free);
}

static void cm_work(struct work_struct *work);
static void cm_timeout(struct work_struct *work);

struct vd_cm_id *vd_cm_id_create(const struct vd_cm_owner *owner,
				 struct vd_cm_channel *ch, u64 user_data)
{
	struct vd_cm_id *id;

	id = kzalloc(sizeof(*id), GFP_KERNEL_ACCOUNT);
	if (!id)
		return ERR_PTR(-ENOMEM);
	kref_init(&id->ref);
	mutex_init(&id->lock);
	id->owner = *owner;
	kref_get(&ch->ref);
	id->ch = ch;
	id->user_data = user_data;
	INIT_LIST_HEAD(&id->unacked);
	spin_lock_init(&id->children_lock);
	INIT_LIST_HEAD(&id->children);
	INIT_LIST_HEAD(&id->child_node);
	INIT_WORK(&id->work, cm_work);
	INIT_DELAYED_WORK(&id->timeout, cm_timeout);
	return id;
}

void vd_cm_id_set_handle(struct vd_cm_id *id, u32 handle)
{
	id->handle = handle;
}

int vd_cm_id_busy(struct vd_cm_id *id)
{
	int ret;

	spin_lock_bh(&id->ch->lock);
	ret = list_empty(&id->unacked) ? 0 : -EBUSY;
	spin_unlock_bh(&id->ch->lock);
	return ret;
}

/* Queues the id's work with a reference for it. Any context. */
static void cm_queue(struct vd_cm_id *id)
{
	kref_get(&id->ref);
	if (!queue_work(vd_cm_wq, &id->work))
		kref_put(&id->ref, cm_id_free);	/* never the last: caller's */
}

static void cm_arm_timeout(struct vd_cm_id *id, u32 ms)
{
	lockdep_assert_held(&id->lock);
	kref_get(&id->ref);
	/* a pending timeout had its reference already: keep only one */
	if (mod_delayed_work(vd_cm_wq, &id->timeout, msecs_to_jiffies(ms)))
		vd_cm_id_put(id);	/* never the last: the caller's */
}

static void cm_disarm_timeout(struct vd_cm_id *id)
{
	lockdep_assert_held(&id->lock);
	if (cancel_delayed_work(&id->timeout))
		vd_cm_id_put(id);	/* the caller still holds one */
}

/*
 * Socket callbacks: softirq context, under the socket lock or not, never
 * sleep. They only queue the id's work. sk_user_data is written under
 * sk_callback_lock, and the id it names stays allocated until the CM has
 * detached under that lock. It is set "nocopy": a socket accepted from a
 * listener does not inherit it (but does inherit these callbacks), so an
 * accepted socket reports nothing until cm_sock_attach() made it ours, and
 * an orphaned one never names a freed listener.
 */
static void cm_sk_event(struct sock *sk)
{
	struct vd_cm_id *id;

	rcu_read_lock();
	read_lock_bh(&sk->sk_callback_lock);
	id = rcu_dereference_sk_user_data(sk);
	if (id)
		cm_queue(id);
	read_unlock_bh(&sk->sk_callback_lock);
	rcu_read_unlock();
}

/*
 * Takes over the socket's callbacks. -EBUSY if another kernel user (or
 * another id) has it already. @listener: the socket was accepted from it
 * and carries copies of its callbacks, whose originals it saved.
 */
static int cm_sock_attach(struct vd_cm_id *id, struct socket *sock,
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

static void cm_sock_detach(struct vd_cm_id *id)
{
	struct sock *sk = id->sk;

	write_lock_bh(&sk->sk_callback_lock);
	rcu_assign_sk_user_data(sk, NULL);
	sk->sk_data_ready = id->saved_data_ready;
	sk->sk_state_change = id->saved_state_change;
	sk->sk_write_space = id->saved_write_space;
	write_unlock_bh(&sk->sk_callback_lock);
}

/* Sends RST: the socket is closed right away, unsent data is dropped. */
static void cm_sock_abort(struct socket *sock)
{
	struct sock *sk = sock->sk;

	if (sk->sk_prot->diag_destroy)
		sk->sk_prot->diag_destroy(sk, ECONNABORTED);
	else
		sock_no_linger(sk);
}

/* Closes the id's socket: FIN (after what was sent) or RST. */
static void cm_sock_close(struct vd_cm_id *id, bool abort)
{
	struct socket *sock = id->sock;

	lockdep_assert_held(&id->lock);
	if (!sock)
		return;
	cm_sock_detach(id);
	id->sock = NULL;
	if (abort)
		cm_sock_abort(sock);
	else
		kernel_sock_shutdown(sock, SHUT_WR);
	if (id->converted)
		fput(sock->file);
	else
		sock_release(sock);
	id->converted = false;
}

/* --- Events --------------------------------------------------------- */

static void cm_event(struct vd_cm_id *id, u32 type, int status,
		     const u8 *pd, u32 pd_len)
{
	struct vd_cm_id *rep = id;	/* whose handle and user data */
	struct vd_cm_event *e;

	/* small, and an event must not get lost: the id would hang */
	e = kzalloc(sizeof(*e), GFP_KERNEL | __GFP_NOFAIL);
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
	} else {
		if (id->mpa.crc_tx)
			e->ev.flags |= VIADUCT_CM_F_CRC;
		if (id->mpa.rtr != VD_RTR_NONE)
			e->ev.flags |= VIADUCT_CM_F_P2P;
	}
	if (id->mpa.active)
		e->ev.flags |= VIADUCT_CM_F_ACTIVE;
	addr_to_user(&id->local, &e->ev.local);
	addr_to_user(&id->peer, &e->ev.peer);
	if (pd_len) {
		/* the frame parser bounds it; never trust a caller blindly */
		pd_len = min_t(u32, pd_len, VIADUCT_CM_PRIVATE_DATA_MAX);
		e->ev.private_data_len = pd_len;
		memcpy(e->ev.private_data, pd, pd_len);
	}
	vd_dbg_cm(id, "event %u status %d\n", type, status);
	channel_push(id, e);
}

int vd_cm_ack(struct vd_cm_id *id, u32 seq)
{
	struct vd_cm_channel *ch = id->ch;
	struct vd_cm_event *e, *found = NULL;

	spin_lock_bh(&ch->lock);
	list_for_each_entry(e, &id->unacked, id_node) {
		if (e->ev.seq == seq) {
			found = e;
			event_unlink(ch, e);
			break;
		}
	}
	spin_unlock_bh(&ch->lock);
	kfree(found);
	return found ? 0 : -EINVAL;
}

static void cm_forget_events(struct vd_cm_id *id)
{
	struct vd_cm_channel *ch = id->ch;
	struct vd_cm_event *e, *tmp;
	LIST_HEAD(gone);

	spin_lock_bh(&ch->lock);
	list_for_each_entry_safe(e, tmp, &id->unacked, id_node) {
		event_unlink(ch, e);
		list_add(&e->id_node, &gone);
	}
	spin_unlock_bh(&ch->lock);
	list_for_each_entry_safe(e, tmp, &gone, id_node)
		kfree(e);
}

/* --- Connections ---------------------------------------------------- */

static void vd_conn_free(struct kref *ref)
{
	struct vd_conn *conn = container_of(ref, struct vd_conn, ref);

	vd_qp_put(conn->qp);
	vd_device_put(conn->dev);
	kfree(conn);
}

void vd_conn_put(struct vd_conn *conn)
{
	if (conn)
		kref_put(&conn->ref, vd_conn_free);
}

/* Binds a QP to the id: one id per QP at a time. */
static int cm_take_qp(struct vd_cm_id *id, struct vd_qp *qp)
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

static void cm_release_qp(struct vd_cm_id *id)
{
	lockdep_assert_held(&id->lock);
	if (!id->qp)
		return;
	xa_erase(&vd_cm_qps, id->qp->qpn);
	vd_qp_put(id->qp);
	id->qp = NULL;
}

/*
 * Ends the stream: the transport lets go of the socket, the QP leaves RTS
 * (a graceful close takes it through Closing to Idle, if its SQ is empty;
 * otherwise it ends in Error), the socket is closed (FIN or RST) and the QP
 * released. The id's state is the caller's to set.
 */
static void cm_teardown(struct vd_cm_id *id, bool abort)
{
	struct viaduct_modify_qp closing = {
		.mask = VIADUCT_QP_ATTR_STATE,
		.state = VIADUCT_QPS_CLOSING,
	};
	struct vd_conn *conn = id->conn;

	lockdep_assert_held(&id->lock);
	cm_disarm_timeout(id);
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
	cm_sock_close(id, abort);
	cm_release_qp(id);
}

/* The MPA exchange succeeded: bind the QP and hand over to the transport. */
static int cm_establish(struct vd_cm_id *id)
{
	struct vd_conn *conn;
	int ret;

	lockdep_assert_held(&id->lock);
	conn = kzalloc(sizeof(*conn), GFP_KERNEL);
	if (!conn)
		return -ENOMEM;
	kref_init(&conn->ref);
	conn->sock = id->sock;
	conn->dev = vd_device_get(id->owner.dev);
	conn->qp = vd_qp_get(id->qp);
	conn->ops = READ_ONCE(vd_cm_stream_ops);
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
	if (conn->ops) {
		ret = conn->ops->start(conn);
		if (ret) {
			/* a failed start left nothing to stop */
			conn->ops = NULL;
			return ret;	/* the caller tears down */
		}
	}
	cm_disarm_timeout(id);
	id->state = VD_CM_ESTABLISHED;
	return 0;
}

void vd_cm_stream_closed(struct vd_conn *conn, int reason)
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
	cm_queue(id);
}

/* --- MPA ------------------------------------------------------------ */

static void cm_fail(struct vd_cm_id *id, u32 type, int status);

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

/*
 * Sends the request or reply @info describes, followed by @info->pd_len
 * bytes of private data from @pd (vd_mpa_rr_build() checks the length).
 */
static int cm_send_frame(struct vd_cm_id *id, const struct vd_mpa_info *info,
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

/*
 * Reads the peer's request (@reply false) or reply as far as it arrived,
 * never beyond its end: what follows belongs to the transport. The header
 * is validated by vd_mpa_rr_parse() (key, revision, flags, lengths) as soon
 * as its 20 bytes are in, before its length is used, and decoded into
 * @id->peer_info; the IRD/ORD words of an enhanced frame once the frame is
 * complete. 0: complete; -EAGAIN: more to come; -EPROTO: not a valid
 * frame; -ECONNRESET: the peer closed; another error of the socket.
 */
static int cm_recv_frame(struct vd_cm_id *id, bool reply)
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

/* The ULP's private data of the received frame (@id->peer_info.pd_len). */
static const u8 *frame_pd(struct vd_cm_id *id)
{
	return id->rx + sizeof(struct vd_mpa_rr) +
	       (id->peer_info.enhanced ? sizeof(struct vd_mpa_v2) : 0);
}

static u32 our_ird(struct vd_cm_id *id)
{
	return min_t(u32, id->param.ird ?: READ_ONCE(id->qp->ird), VD_MAX_IRD);
}

static u32 our_ord(struct vd_cm_id *id)
{
	return min_t(u32, id->param.ord ?: READ_ONCE(id->qp->ord), VD_MAX_ORD);
}

/* The RTR both offered, in our order of preference; NONE if none. */
static enum vd_rtr pick_rtr(u8 rtr)
{
	if (rtr & VD_MPA_RTR_WRITE)
		return VD_RTR_WRITE;
	if (rtr & VD_MPA_RTR_READ)
		return VD_RTR_READ;
	if (rtr & VD_MPA_RTR_SEND)
		return VD_RTR_SEND;
	return VD_RTR_NONE;
}

static u8 rtr_bit(enum vd_rtr rtr)
{
	switch (rtr) {
	case VD_RTR_WRITE:
		return VD_MPA_RTR_WRITE;
	case VD_RTR_READ:
		return VD_MPA_RTR_READ;
	case VD_RTR_SEND:
		return VD_MPA_RTR_SEND;
	default:
		return 0;
	}
}

/* The most private data a frame of ours may carry. */
static u32 pd_max(bool enhanced)
{
	return enhanced ? VD_MPA_V2_PD_MAX : VD_MPA_MAX_PD;
}

static int cm_send_request(struct vd_cm_id *id)
{
	struct vd_mpa_info info = {
		.crc = id->param.flags & VIADUCT_CM_F_CRC,
		.rev = VD_MPA_REV1,
		.pd_len = id->param.pd_len,
	};

	if (!(id->param.flags & VIADUCT_CM_F_MPA_V1)) {
		info.rev = VD_MPA_REV2;
		info.enhanced = true;
		info.ird = our_ird(id);
		info.ord = our_ord(id);
		if (id->param.flags & VIADUCT_CM_F_P2P) {
			/* every RTR we can take; the responder picks one */
			info.p2p = true;
			info.rtr = VD_MPA_RTR_SEND | VD_MPA_RTR_WRITE |
				   VD_MPA_RTR_READ;
		}
	}
	id->rx_len = 0;
	return cm_send_frame(id, &info, id->param.pd);
}

/* Active side: the reply in @id->peer_info is complete. */
static void cm_got_reply(struct vd_cm_id *id)
{
	const struct vd_mpa_info *rep = &id->peer_info;
	bool v1 = id->param.flags & VIADUCT_CM_F_MPA_V1;
	int ret = -EPROTO;

	/*
	 * A revision 1 responder may answer a revision 2 request (RFC 6581
	 * section 5), never the other way round.
	 */
	if (rep->rev > (v1 ? VD_MPA_REV1 : VD_MPA_REV2))
		goto fail;
	id->mpa.revision = rep->rev;
	id->mpa.enhanced = rep->enhanced;
	id->mpa.peer_ird = rep->ird;
	id->mpa.peer_ord = rep->ord;
	if (rep->reject) {
		/*
		 * Let go of the QP before the event: whoever reads REJECTED
		 * may connect another id with the same QP at once. The
		 * private data stays in @id->rx, which teardown leaves alone.
		 */
		cm_teardown(id, false);
		id->state = VD_CM_CLOSED;
		cm_event(id, VIADUCT_CM_EVENT_REJECTED, -ECONNREFUSED,
			 frame_pd(id), rep->pd_len);
		return;
	}
	/* CRC in both directions if either side asked for it (RFC 5044) */
	id->mpa.crc_tx = rep->crc || id->param.flags & VIADUCT_CM_F_CRC;
	id->mpa.crc_rx = id->mpa.crc_tx;
	id->mpa.ird = our_ird(id);
	id->mpa.ord = our_ord(id);
	id->mpa.rtr = VD_RTR_NONE;
	if (rep->enhanced) {
		/* relaxed: read no more than the responder will serve */
		id->mpa.ord = min_t(u32, id->mpa.ord, rep->ird);
		if (rep->p2p && id->param.flags & VIADUCT_CM_F_P2P) {
			id->mpa.rtr = pick_rtr(rep->rtr);
			/* P2P without one of the RTRs we offered */
			if (id->mpa.rtr == VD_RTR_NONE)
				goto fail;
		}
	}
	ret = cm_establish(id);
	if (ret)
		goto fail;
	cm_event(id, VIADUCT_CM_EVENT_ESTABLISHED, 0, frame_pd(id),
		 rep->pd_len);
	return;
fail:
	cm_fail(id, VIADUCT_CM_EVENT_CONNECT_ERROR, ret);
}

/*
 * Passive side: the revision of our reply to the request in
 * @id->peer_info. It is the request's, unless the acceptor asked for
 * revision 1; the reply is enhanced if both are revision 2 and the request
 * was enhanced.
 */
static void cm_reply_info(struct vd_cm_id *id, bool reject, u32 flags,
			  struct vd_mpa_info *info)
{
	const struct vd_mpa_info *req = &id->peer_info;

	memset(info, 0, sizeof(*info));
	info->reply = true;
	info->reject = reject;
	info->rev = req->rev == VD_MPA_REV2 && !(flags & VIADUCT_CM_F_MPA_V1) ?
		    VD_MPA_REV2 : VD_MPA_REV1;
	info->enhanced = req->enhanced && info->rev == VD_MPA_REV2;
}

/*
 * Passive side: sends the reply to the request in @id->peer_info,
 * accepting with @flags (the negotiated parameters go to @id->mpa) or
 * rejecting. @pd_len is within pd_max() of the reply (checked by the
 * caller; vd_mpa_rr_build() checks it again).
 */
static int cm_send_reply(struct vd_cm_id *id, bool reject, u32 flags,
			 const u8 *pd, u32 pd_len)
{
	const struct vd_mpa_info *req = &id->peer_info;
	struct vd_mpa_info info;

	cm_reply_info(id, reject, flags, &info);
	info.pd_len = pd_len;
	if (reject)
		return cm_send_frame(id, &info, pd);

	id->mpa.revision = info.rev;
	id->mpa.enhanced = info.enhanced;
	id->mpa.crc_tx = req->crc || flags & VIADUCT_CM_F_CRC;
	id->mpa.crc_rx = id->mpa.crc_tx;
	info.crc = id->mpa.crc_tx;
	id->mpa.ird = our_ird(id);
	id->mpa.ord = our_ord(id);
	id->mpa.rtr = VD_RTR_NONE;
	if (info.enhanced) {
		/* relaxed: read no more than the initiator will serve */
		id->mpa.ord = min_t(u32, id->mpa.ord, req->ird);
		info.ird = id->mpa.ird;
		info.ord = id->mpa.ord;
		if (req->p2p && flags & VIADUCT_CM_F_P2P) {
			id->mpa.rtr = pick_rtr(req->rtr);
			/* no RTR in common: client-server after all */
			info.p2p = id->mpa.rtr != VD_RTR_NONE;
			info.rtr = rtr_bit(id->mpa.rtr);
		}
	}
	return cm_send_frame(id, &info, pd);
}

/* --- The state machine ---------------------------------------------- */

/* The QP is free again by the time the user reads the event. */
static void cm_fail(struct vd_cm_id *id, u32 type, int status)
{
	cm_teardown(id, true);
	id->state = VD_CM_CLOSED;
	cm_event(id, type, status, NULL, 0);
}

/* A child that never became a CONNECT_REQUEST: gone without a trace. */
static void cm_child_drop(struct vd_cm_id *id)
{
	struct vd_cm_id *l = id->parent;
	bool listed = false;

	lockdep_assert_held(&id->lock);
	cm_teardown(id, true);
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

/* Leaves the listener's list once answered (or published and closed). */
static void cm_child_unlist(struct vd_cm_id *id)
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

static void cm_got_request(struct vd_cm_id *id)
{
	const struct vd_mpa_info *req = &id->peer_info;
	struct vd_mpa_info rep;
	int ret;

	id->mpa.revision = req->rev;
	id->mpa.enhanced = req->enhanced;
	id->mpa.peer_ird = req->ird;
	id->mpa.peer_ord = req->ord;

	if (id->auto_accept) {
		/* CONVERT_SOCKET as responder: accept with our parameters */
		cm_reply_info(id, false, id->param.flags, &rep);
		ret = -EINVAL;
		if (id->param.pd_len <= pd_max(rep.enhanced))
			ret = cm_send_reply(id, false, id->param.flags,
					    id->param.pd, id->param.pd_len);
		if (!ret)
			ret = cm_establish(id);
		if (ret) {
			cm_fail(id, VIADUCT_CM_EVENT_CONNECT_ERROR, ret);
			return;
		}
		cm_event(id, VIADUCT_CM_EVENT_ESTABLISHED, 0, frame_pd(id),
			 req->pd_len);
		return;
	}

	cm_disarm_timeout(id);
	/* the owner's reference becomes the table's */
	ret = vd_uobj_cm_id_publish(id->owner.objs, id);
	if (ret) {
		cm_child_drop(id);
		return;
	}
	id->state = VD_CM_REQ_RCVD;
	cm_event(id, VIADUCT_CM_EVENT_CONNECT_REQUEST, 0, frame_pd(id),
		 req->pd_len);
}

/*
 * Whether the peer closed (FIN: *@err 0) or the connection failed (RST,
 * ICMP, a timeout: *@err the socket's error). A socket that went from
 * FIN_WAIT2 to TIME_WAIT is in TCP_CLOSE without an error: a completed
 * graceful close, told by the FIN it received. The socket's error is
 * read once by whoever reads or writes the socket first (the transport's
 * work items, sock_error()): a reset whose error is gone already shows as
 * a shut down socket that got no FIN, which only a FIN marks done.
 */
static bool cm_sock_gone(struct vd_cm_id *id, int *err)
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

static void cm_listen_work(struct vd_cm_id *l);

/* Established or closing: watch for the peer's FIN or RST. */
static void cm_watch(struct vd_cm_id *id)
{
	bool closing = id->state == VD_CM_CLOSING;
	int tp = READ_ONCE(id->tp_closed);
	int err;

	if (tp)
		err = tp == 1 ? 0 : tp;	/* what the transport saw */
	else if (!cm_sock_gone(id, &err))
		return;
	/* a graceful close answers the peer's FIN with ours */
	cm_teardown(id, err != 0);
	id->state = VD_CM_CLOSED;
	cm_event(id, VIADUCT_CM_EVENT_DISCONNECTED, closing ? 0 : err, NULL,
		 0);
}

static void cm_step(struct vd_cm_id *id)
{
	int err, ret;

	switch (id->state) {
	case VD_CM_LISTEN:
		cm_listen_work(id);
		return;
	case VD_CM_CONNECTING:
		if (READ_ONCE(id->sk->sk_state) != TCP_ESTABLISHED) {
			/* RST (nobody listens), ICMP errors, SYN retries */
			if (cm_sock_gone(id, &err))
				cm_fail(id, err == -ETIMEDOUT ?
					VIADUCT_CM_EVENT_TIMEOUT :
					VIADUCT_CM_EVENT_UNREACHABLE,
					err ?: -ECONNRESET);
			return;
		}
		kernel_getsockname(id->sock, (struct sockaddr *)&id->local);
		ret = cm_send_request(id);
		if (ret) {
			cm_fail(id, VIADUCT_CM_EVENT_UNREACHABLE, ret);
			return;
		}
		id->state = VD_CM_REP_WAIT;
		fallthrough;
	case VD_CM_REP_WAIT:
		ret = cm_recv_frame(id, true);
		if (ret == -EAGAIN)
			return;
		if (ret)
			cm_fail(id, VIADUCT_CM_EVENT_CONNECT_ERROR, ret);
		else
			cm_got_reply(id);
		return;
	case VD_CM_REQ_WAIT:
		ret = cm_recv_frame(id, false);
		if (ret == -EAGAIN)
			return;
		if (!ret)
			cm_got_request(id);
		else if (id->auto_accept)
			cm_fail(id, VIADUCT_CM_EVENT_CONNECT_ERROR, ret);
		else
			cm_child_drop(id);
		return;
	case VD_CM_REQ_RCVD:
		if (cm_sock_gone(id, &err))
			id->peer_closed = true;
		return;
	case VD_CM_ESTABLISHED:
	case VD_CM_CLOSING:
		cm_watch(id);
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
		cm_fail(id, VIADUCT_CM_EVENT_TIMEOUT, -ETIMEDOUT);
		break;
	case VD_CM_REQ_WAIT:
		if (id->auto_accept)
			cm_fail(id, VIADUCT_CM_EVENT_TIMEOUT, -ETIMEDOUT);
		else
			cm_child_drop(id);
		break;
	case VD_CM_CLOSING:
		/* the peer never sent its FIN */
		cm_teardown(id, true);
		id->state = VD_CM_CLOSED;
		cm_event(id, VIADUCT_CM_EVENT_DISCONNECTED, -ETIMEDOUT, NULL,
			 0);
		break;
	default:
		break;
	}
	mutex_unlock(&id->lock);
	vd_cm_id_put(id);
}

/* --- Listening ------------------------------------------------------ */

/*
 * A TCP socket in the owner's namespace, created as the caller's own
 * socket would be (not a kernel socket): it holds a reference on the
 * namespace, so that a connection still closing after the CM let go of it
 * (FIN_WAIT, TIME_WAIT) never outlives the namespace, and the caller's
 * security context applies. Process context, in the caller's task.
 */
static int cm_sock_create(struct vd_cm_id *id, int family,
			  struct socket **res)
{
	return __sock_create(id->owner.net, family, SOCK_STREAM, IPPROTO_TCP,
			     res, 0);
}

static void cm_accept_one(struct vd_cm_id *l, struct socket *nsock)
{
	struct vd_cm_id *c;
	bool full;

	spin_lock_bh(&l->children_lock);
	full = l->nchildren >= l->backlog;
	spin_unlock_bh(&l->children_lock);
	if (full)
		goto drop;
	c = vd_cm_id_create(&l->owner, l->ch, l->user_data);
	if (IS_ERR(c))
		goto drop;
	c->parent = vd_cm_id_get(l);
	kernel_getsockname(nsock, (struct sockaddr *)&c->local);
	kernel_getpeername(nsock, (struct sockaddr *)&c->peer);

	/* a fresh socket has no other user: attaching cannot fail */
	if (WARN_ON_ONCE(cm_sock_attach(c, nsock, l))) {
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
	cm_arm_timeout(c, VD_CM_REQ_TIMEOUT_MS);
	/* the request may be there already */
	cm_queue(c);
	mutex_unlock(&c->lock);
	return;
drop:
	cm_sock_abort(nsock);
	sock_release(nsock);
}

static void cm_listen_work(struct vd_cm_id *l)
{
	struct socket *nsock;

	lockdep_assert_held(&l->lock);
	while (!kernel_accept(l->sock, &nsock, O_NONBLOCK))
		cm_accept_one(l, nsock);
}

int vd_cm_listen(struct vd_cm_id *id, struct viaduct_sockaddr *addr,
		 u32 backlog)
{
	struct sockaddr_storage ss;
	struct socket *sock;
	int len, ifindex, ret;

	ret = addr_from_user(addr, &ss, &len);
	if (ret)
		return ret;
	if (backlog > VD_CM_BACKLOG_MAX)
		backlog = VD_CM_BACKLOG_MAX;
	mutex_lock(&id->lock);
	ret = -EINVAL;
	if (id->state != VD_CM_IDLE)
		goto out;
	ifindex = check_device(id, &ss, true);
	if (ifindex < 0) {
		ret = ifindex;
		goto out;
	}
	ret = cm_sock_create(id, ss.ss_family, &sock);
	if (ret)
		goto out;
	sock_set_reuseaddr(sock->sk);
	/* the any-address means the device's addresses, not every one */
	if (addr_is_any(&ss))
		ret = sock_bindtoindex(sock->sk, ifindex, true);
	if (!ret)
		ret = kernel_bind(sock, (struct sockaddr *)&ss, len);
	if (ret)
		goto release;
	id->backlog = backlog ?: VD_CM_BACKLOG;
	ret = cm_sock_attach(id, sock, NULL);
	if (ret)
		goto release;
	ret = kernel_listen(sock, id->backlog);
	if (ret) {
		cm_sock_detach(id);
		id->sock = NULL;
		goto release;
	}
	kernel_getsockname(sock, (struct sockaddr *)&id->local);
	addr_to_user(&id->local, addr);
	id->state = VD_CM_LISTEN;
	vd_dbg_cm(id, "listening\n");
	goto out;
release:
	sock_release(sock);
out:
	mutex_unlock(&id->lock);
	return ret;
}

/*
 * Closes a listener: no new children; those waiting for their request go
 * away, those whose CONNECT_REQUEST is unanswered are rejected.
 */
static void cm_listener_close(struct vd_cm_id *l)
{
	struct vd_cm_id *c;

	lockdep_assert_held(&l->lock);
	/* nothing is accepted any more: the listener's work needs a socket */
	cm_sock_close(l, false);
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
			cm_child_drop(c);
		} else if (c->state == VD_CM_REQ_RCVD) {
			cm_send_reply(c, true, 0, NULL, 0);
			cm_teardown(c, false);
			c->state = VD_CM_CLOSED;
		}
		mutex_unlock(&c->lock);
		vd_cm_id_put(c);
	}
}

/* --- Connecting ----------------------------------------------------- */

static int cm_start_active(struct vd_cm_id *id, struct vd_qp *qp,
			   const struct vd_cm_param *p)
{
	int ret;

	ret = cm_take_qp(id, qp);
	if (ret)
		return ret;
	id->param = *p;
	id->active = true;
	memset(&id->mpa, 0, sizeof(id->mpa));
	id->mpa.active = true;
	return 0;
}

int vd_cm_connect(struct vd_cm_id *id, const struct viaduct_sockaddr *dst,
		  struct vd_qp *qp, const struct vd_cm_param *p)
{
	struct socket *sock;
	int len, ifindex, ret;

	mutex_lock(&id->lock);
	ret = -EINVAL;
	if (id->state != VD_CM_IDLE)
		goto out;
	ret = addr_from_user(dst, &id->peer, &len);
	if (ret)
		goto out;
	ret = -EINVAL;
	if (addr_is_any(&id->peer) ||
	    (id->peer.ss_family == AF_INET ?
	     !((struct sockaddr_in *)&id->peer)->sin_port :
	     !((struct sockaddr_in6 *)&id->peer)->sin6_port))
		goto out;
	if (p->pd_len > pd_max(!(p->flags & VIADUCT_CM_F_MPA_V1)))
		goto out;
	ifindex = check_device(id, &id->peer, false);
	if (ifindex < 0) {
		ret = ifindex;
		goto out;
	}
	ret = cm_sock_create(id, id->peer.ss_family, &sock);
	if (ret)
		goto out;
	ret = sock_bindtoindex(sock->sk, ifindex, true);
	if (!ret)
		ret = cm_start_active(id, qp, p);
	if (!ret) {
		ret = cm_sock_attach(id, sock, NULL);
		if (ret)
			cm_release_qp(id);
	}
	if (ret) {
		sock_release(sock);
		goto out;
	}
	id->state = VD_CM_CONNECTING;
	cm_arm_timeout(id, p->timeout_ms ?: VD_CM_TIMEOUT_MS);
	ret = kernel_connect(sock, (struct sockaddr *)&id->peer, len,
			     O_NONBLOCK);
	if (ret && ret != -EINPROGRESS) {
		/* failures known at once are still reported as events */
		cm_fail(id, VIADUCT_CM_EVENT_UNREACHABLE, ret);
	} else {
		cm_queue(id);
	}
	ret = 0;
out:
	mutex_unlock(&id->lock);
	return ret;
}

int vd_cm_convert(struct vd_cm_id *id, int fd, struct vd_qp *qp,
		  const struct vd_cm_param *p)
{
	struct socket *sock;
	struct sock *sk;
	int ret;

	sock = sockfd_lookup(fd, &ret);
	if (!sock)
		return ret;
	sk = sock->sk;
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
	    p->pd_len > pd_max(!(p->flags & VIADUCT_CM_F_MPA_V1)))
		goto unlock;
	memset(&id->local, 0, sizeof(id->local));
	memset(&id->peer, 0, sizeof(id->peer));
	if (kernel_getsockname(sock, (struct sockaddr *)&id->local) < 0 ||
	    kernel_getpeername(sock, (struct sockaddr *)&id->peer) < 0)
		goto unlock;
	ret = check_device(id, &id->local, true);
	if (ret >= 0 && addr_is_any(&id->local))
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
	ret = cm_sock_attach(id, sock, NULL);
	if (ret) {
		cm_release_qp(id);
		goto unlock;
	}
	id->active = p->flags & VIADUCT_CM_F_ACTIVE;
	id->mpa.active = id->active;
	/* the socket's file reference is ours until the id lets go */
	id->converted = true;
	cm_arm_timeout(id, p->timeout_ms ?: VD_CM_TIMEOUT_MS);
	if (id->active) {
		ret = cm_send_request(id);
		if (ret) {
			/* this drops the file reference too */
			cm_teardown(id, false);
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
	cm_queue(id);
	mutex_unlock(&id->lock);
	return 0;
unlock:
	mutex_unlock(&id->lock);
put:
	fput(sock->file);
	return ret;
}

/* --- Answering ------------------------------------------------------ */

int vd_cm_accept(struct vd_cm_id *id, struct vd_qp *qp,
		 const struct vd_cm_param *p)
{
	struct vd_mpa_info rep;
	int ret;

	mutex_lock(&id->lock);
	ret = -EINVAL;
	if (id->state != VD_CM_REQ_RCVD)
		goto out;
	if (id->peer_closed) {
		ret = -ECONNRESET;
		goto out;
	}
	cm_reply_info(id, false, p->flags, &rep);
	if (p->pd_len > pd_max(rep.enhanced))
		goto out;
	ret = cm_take_qp(id, qp);
	if (ret)
		goto out;
	id->param = *p;
	ret = cm_send_reply(id, false, p->flags, p->pd, p->pd_len);
	if (!ret)
		ret = cm_establish(id);
	if (ret) {
		/* the peer learns from the RST; this id is done */
		cm_teardown(id, true);
		id->state = VD_CM_CLOSED;
		cm_child_unlist(id);
		goto out;
	}
	cm_child_unlist(id);
	cm_event(id, VIADUCT_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	/* the transport or our watch takes it from here */
	cm_queue(id);
out:
	mutex_unlock(&id->lock);
	return ret;
}

int vd_cm_reject(struct vd_cm_id *id, const u8 *pd, u32 pd_len)
{
	struct vd_mpa_info rep;
	int ret;

	mutex_lock(&id->lock);
	ret = -EINVAL;
	if (id->state != VD_CM_REQ_RCVD)
		goto out;
	cm_reply_info(id, true, 0, &rep);
	if (pd_len > pd_max(rep.enhanced))
		goto out;
	ret = cm_send_reply(id, true, 0, pd, pd_len);
	cm_teardown(id, false);
	id->state = VD_CM_CLOSED;
	cm_child_unlist(id);
	if (id->peer_closed)
		ret = -ECONNRESET;
out:
	mutex_unlock(&id->lock);
	return ret;
}

int vd_cm_disconnect(struct vd_cm_id *id, bool abort)
{
	struct viaduct_modify_qp m = {
		.mask = VIADUCT_QP_ATTR_STATE,
		.state = VIADUCT_QPS_CLOSING,
	};
	int ret = 0;

	mutex_lock(&id->lock);
	switch (id->state) {
	case VD_CM_ESTABLISHED:
		if (abort)
			break;
		/*
		 * Graceful: the transport stops sending, our FIN goes out and
		 * the QP waits in Closing for the peer's.
		 */
		if (id->conn && id->conn->ops)
			id->conn->ops->stop(id->conn, false);
		if (id->conn)
			id->conn->ops = NULL;
		vd_qp_modify(id->qp, &m);
		kernel_sock_shutdown(id->sock, SHUT_WR);
		id->state = VD_CM_CLOSING;
		cm_arm_timeout(id, VD_CM_TIMEOUT_MS);
		cm_queue(id);
		goto out;
	case VD_CM_CLOSING:
		if (abort)
			break;
		goto out;
	default:
		ret = -EINVAL;
		goto out;
	}
	cm_teardown(id, true);
	id->state = VD_CM_CLOSED;
	cm_event(id, VIADUCT_CM_EVENT_DISCONNECTED, 0, NULL, 0);
out:
	mutex_unlock(&id->lock);
	return ret;
}

/* --- Destruction ---------------------------------------------------- */

void vd_cm_id_destroy(struct vd_cm_id *id)
{
	mutex_lock(&id->lock);
	switch (id->state) {
	case VD_CM_LISTEN:
		cm_listener_close(id);
		break;
	case VD_CM_REQ_RCVD:
		/* an unanswered request is rejected */
		cm_send_reply(id, true, 0, NULL, 0);
		cm_teardown(id, false);
		break;
	case VD_CM_CLOSING:
		/* the FIN went out already; the peer's may never come */
		cm_teardown(id, true);
		break;
	default:
		cm_teardown(id, true);
		break;
	}
	cm_child_unlist(id);
	id->state = VD_CM_DEAD;
	mutex_unlock(&id->lock);

	/* nothing queues work any more: the socket is detached */
	if (cancel_work_sync(&id->work))
		vd_cm_id_put(id);
	if (cancel_delayed_work_sync(&id->timeout))
		vd_cm_id_put(id);
	cm_forget_events(id);
	vd_dbg_cm(id, "destroyed\n");
	vd_cm_id_put(id);
}

/* --- Module --------------------------------------------------------- */

int vd_cm_init(void)
{
	vd_cm_wq = alloc_workqueue("viaduct_cm", WQ_MEM_RECLAIM, 0);
	return vd_cm_wq ? 0 : -ENOMEM;
}

void vd_cm_uninit(void)
{
	/* every context is gone, and with it every id */
	destroy_workqueue(vd_cm_wq);
	WARN_ON_ONCE(!xa_empty(&vd_cm_qps));
}
