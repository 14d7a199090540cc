/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The iWARP connection manager: TCP endpoints, the MPA request/reply
 * exchange (RFC 5044, RFC 6581) and CM events. ucm.c is its ioctl face.
 *
 * API
 * ---
 *   vd_cm_init(), vd_cm_uninit()
 *       Module lifetime: the CM workqueue.
 *   vd_cm_set_stream_ops(ops)
 *       The transport's struct vd_stream_ops, given to every new conn.
 *
 *   vd_cm_channel_create_file(), vd_cm_channel_fdget(fd), vd_cm_channel_put()
 *       CM event channels: an anon-inode file (installed by the caller,
 *       vd_uobj_give_fd()) that read()s whole
 *       struct viaduct_cm_event records and polls readable while one is
 *       queued. fdget: ERR_PTR(-EBADF) or -EINVAL (not a CM channel).
 *
 *   vd_cm_id_create(owner, ch, user_data)
 *       A new idle id with one reference (the handle table's, once
 *       vd_uobj_cm_id_add() took it), reporting to @ch (referenced).
 *       @owner names the context's namespace, device and handle table.
 *   vd_cm_id_set_handle(id, handle)
 *       The handle the table gave the id (before it is published).
 *   vd_cm_id_busy(id)
 *       -EBUSY while the id has unacknowledged events. Any context.
 *   vd_cm_id_destroy(id)
 *       Closes whatever the id does (a listener closes and rejects its
 *       pending requests; a connection is aborted), forgets its events and
 *       drops the table's reference. Process context, no table lock held.
 *   vd_cm_id_put(id)
 *
 *   vd_cm_listen(), vd_cm_connect(), vd_cm_accept(), vd_cm_reject(),
 *   vd_cm_disconnect(), vd_cm_convert(), vd_cm_ack()
 *       The commands of include/uapi/viaduct.h on an id the caller holds a
 *       reference on; private data already copied in. Process context.
 *
 * Locking
 * -------
 * Each id has a mutex serialising its state machine (commands and its work
 * item). Socket callbacks run in softirq context under sk_callback_lock:
 * they only queue the id's work on the CM workqueue, taking a reference
 * for the work; sk_user_data is set "nocopy", so sockets accepted from a
 * listener name nobody until they are attached to their own id. A
 * listener keeps its pending children on a list under a spinlock of its
 * own, so a child never takes its listener's mutex (the order is listener
 * -> child, the child's mutex taken with SINGLE_DEPTH_NESTING). The table
 * lock is taken under an id mutex (publishing a child's handle), never the
 * other way round: ids are erased from the table under the table lock and
 * destroyed after it is dropped. A channel's spinlock protects its queue
 * and the unacknowledged event lists of the ids reporting to it; it is a
 * leaf. Nothing sleeps under a spinlock; sockets are created, sent on,
 * shut down and released under an id mutex only.
 *
 * Lifetimes
 * ---------
 * The table holds one reference per published id; a listener's list one
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
#include <uapi/viaduct.h>

struct vd_cm_channel;
struct vd_cm_id;
struct vd_device;
struct vd_qp;
struct vd_stream_ops;
struct vd_uobj_table;

/* What an id needs of the context that owns it; the context outlives it. */
struct vd_cm_owner {
	struct net *net;
	struct vd_device *dev;
	struct vd_uobj_table *objs;
};

/* A command's connection parameters, validated and copied in. */
struct vd_cm_param {
	u32 flags;		/* VIADUCT_CM_F_* */
	u32 ird;
	u32 ord;
	u32 timeout_ms;
	u32 pd_len;
	u8 pd[VIADUCT_CM_PRIVATE_DATA_MAX];
};

int vd_cm_init(void);
void vd_cm_uninit(void);
void vd_cm_set_stream_ops(const struct vd_stream_ops *ops);

struct file *vd_cm_channel_create_file(void);
struct vd_cm_channel *vd_cm_channel_fdget(int fd);
void vd_cm_channel_put(struct vd_cm_channel *ch);

struct vd_cm_id *vd_cm_id_create(const struct vd_cm_owner *owner,
				 struct vd_cm_channel *ch, u64 user_data);
void vd_cm_id_set_handle(struct vd_cm_id *id, u32 handle);
int vd_cm_id_busy(struct vd_cm_id *id);
void vd_cm_id_destroy(struct vd_cm_id *id);
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
int vd_cm_convert(struct vd_cm_id *id, int fd, struct vd_qp *qp,
		  const struct vd_cm_param *p);
int vd_cm_ack(struct vd_cm_id *id, u32 seq);

/* uobj.c: the table side of CM ids (see uobj.h for the table's rules) */
int vd_uobj_cm_id_publish(struct vd_uobj_table *t, struct vd_cm_id *id);

#endif /* _VD_CM_H */
