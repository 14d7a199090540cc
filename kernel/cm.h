/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The iWARP connection manager: TCP endpoints, the MPA request/reply
 * exchange (RFC 5044, RFC 6581) and CM events. ucm.c is its ioctl face;
 * the CM itself knows no file descriptors and no handle table.
 * Files: cm.c (ids and their state machine), cm_sock.c (the TCP endpoint
 * and the MPA frames), cm_connect.c (the active side: connect, convert,
 * the request and the reply), cm_listen.c (listeners and the passive side),
 * cm_end.c (connections ended by the QP's owner or the device's removal),
 * mpa.c (what the frames negotiate), cm_channel.c (event channels),
 * addr.c (addresses and the device's route policy). The functions are
 * documented (kernel-doc) at their definitions; Documentation/cm.rst has
 * the protocol choices and the states.
 *
 * The commands (vd_cm_listen() to vd_cm_ack()) are those of
 * include/uapi/viaduct/viaduct-abi.h on an id the caller holds a reference
 * on, with private data already copied in; they run in process context.
 *
 * Locking
 * -------
 * Each id has a mutex serialising its state machine (commands and its work
 * item). Socket callbacks run in softirq context: they only take
 * sk_callback_lock to find the id and queue its work on the CM workqueue,
 * taking a reference for the work; sk_user_data is set "nocopy", so
 * sockets accepted from a listener name nobody until they are attached to
 * their own id. A listener keeps its pending children on a list under a
 * spinlock of its own, so a child never takes its listener's mutex (the
 * order is listener -> child, the child's mutex taken with
 * SINGLE_DEPTH_NESTING). The owner's locks may be taken under an id mutex
 * (@owner->publish), never the other way round: the owner destroys ids
 * after it dropped its own locks. A channel's spinlock protects its queue
 * and the unacknowledged event lists of the ids reporting to it; it is a
 * leaf. Nothing sleeps under a spinlock; sockets are created, sent on, shut
 * down and released under an id mutex only.
 *
 * Lifetimes
 * ---------
 * The owner holds one reference per id it published; a listener's list one
 * per pending child; each queued work item and armed timeout one. A child
 * holds its listener (for its CONNECT_REQUEST's listen_handle), every id
 * its channel. vd_cm_id_destroy() detaches the socket callbacks before it
 * closes the socket, then cancels the work and the timeout synchronously,
 * so nothing of the id runs afterwards except work items that already held
 * their reference (they find no socket and do nothing). Contexts destroy
 * their ids at release; the module cannot be unloaded while a context or a
 * channel is open, and vd_cm_uninit() drains the workqueue.
 */
#ifndef _VD_CM_H
#define _VD_CM_H

#include <linux/types.h>
#include <net/net_namespace.h>
#include <viaduct/viaduct-abi.h>

struct vd_cm_channel;
struct vd_cm_id;
struct vd_device;
struct vd_qp;
struct socket;
struct sockaddr_storage;
struct vd_stream_ops;

/**
 * struct vd_cm_owner - what an id needs of its owner; the owner outlives it
 * @net: the namespace of the id's sockets and routes
 * @dev: the device whose addresses and interface the id uses
 * @publish: gives a listener's new connection a handle. Runs from the CM's
 *	work item with the child's mutex held when the child's MPA request
 *	came; calls vd_cm_id_set_handle() and takes over the child's
 *	reference, or returns an error and the child goes away (its peer
 *	gets an RST). Must not call back into the CM.
 * @arg: the first argument of @publish
 */
struct vd_cm_owner {
	struct net *net;
	struct vd_device *dev;
	int (*publish)(void *arg, struct vd_cm_id *child);
	void *arg;
};

/**
 * struct vd_cm_param - a command's connection parameters, copied in
 * @flags: VIADUCT_CM_F_*
 * @ird: the IRD to offer; 0 for the QP's (capped at VD_MAX_IRD)
 * @ord: the ORD to offer; 0 for the QP's (capped at VD_MAX_ORD)
 * @timeout_ms: connect, convert: the time for TCP and the MPA exchange;
 *	0 for VD_CM_TIMEOUT_MS
 * @pd_len: bytes of @pd; the command checks them against the frame
 * @pd: the private data of our request or reply
 */
struct vd_cm_param {
	u32 flags;
	u32 ird;
	u32 ord;
	u32 timeout_ms;
	u32 pd_len;
	u8 pd[VIADUCT_CM_PRIVATE_DATA_MAX];
};

/**
 * struct vd_cm_convert - what a conversion carries besides the socket
 * @claim: takes the socket away from its user, called with the id locked
 *	once every check passed and before the CM installs its callbacks;
 *	returns 0, or an error with which the conversion fails (see
 *	vd_cm_convert()). Must not call back into the CM.
 * @claim_arg: its first argument
 * @send: the last streaming-mode message, sent before the MPA exchange
 * @send_len: bytes of @send; at most VIADUCT_CM_CONVERT_SEND_MAX
 * @recv: bytes the user already read from the socket that belong to the
 *	MPA exchange, consumed before anything is read from the socket
 * @recv_len: bytes of @recv; at most VIADUCT_CM_CONVERT_RECV_MAX
 */
struct vd_cm_convert {
	int (*claim)(void *claim_arg, struct socket *sock);
	void *claim_arg;
	const u8 *send;
	u32 send_len;
	const u8 *recv;
	u32 recv_len;
};

int vd_cm_init(void);
void vd_cm_uninit(void);
void vd_cm_set_stream_ops(const struct vd_stream_ops *ops);

struct vd_cm_id *vd_cm_id_create(const struct vd_cm_owner *owner,
				 struct vd_cm_channel *ch, u64 user_data);
void vd_cm_id_set_handle(struct vd_cm_id *id, u32 handle);
int vd_cm_id_busy(struct vd_cm_id *id);
void vd_cm_id_destroy(struct vd_cm_id *id);
void vd_cm_id_device_removed(struct vd_cm_id *id);
struct vd_cm_id *vd_cm_id_get(struct vd_cm_id *id);
void vd_cm_id_put(struct vd_cm_id *id);

int vd_cm_listen(struct vd_cm_id *id, struct viaduct_sockaddr *addr,
		 u32 backlog);
int vd_cm_connect(struct vd_cm_id *id, const struct viaduct_sockaddr *dst,
		  struct vd_qp *qp, const struct vd_cm_param *p);
int vd_cm_accept(struct vd_cm_id *id, struct vd_qp *qp,
		 const struct vd_cm_param *p);
int vd_cm_reject(struct vd_cm_id *id, const u8 *pd, u32 pd_len);
int vd_cm_disconnect(struct vd_cm_id *id, bool abort);
int vd_cm_convert(struct vd_cm_id *id, struct socket *sock, struct vd_qp *qp,
		  const struct vd_cm_param *p, const struct vd_cm_convert *cv);
int vd_cm_handoff(struct vd_cm_id *id, const struct sockaddr_storage *addr,
		  __be16 port);
int vd_cm_ack(struct vd_cm_id *id, u32 seq);

#endif /* _VD_CM_H */
