/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside the connection manager: the id and what its files share. cm.c runs
 * an id's state machine, cm_sock.c its TCP endpoint and MPA frames,
 * cm_connect.c the active side, cm_listen.c listeners and the passive
 * side. cm.h has the locking and the lifetimes; the functions are
 * documented at their definitions. Nothing outside these four files
 * includes this header.
 */
#ifndef _VD_CM_PRIV_H
#define _VD_CM_PRIV_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/spinlock.h>
#include <linux/uidgid.h>
#include <linux/workqueue.h>
#include <net/sock.h>

#include "cm.h"
#include "conn.h"
#include "iwarp.h"
#include "mpa.h"

#define VD_CM_TIMEOUT_MS	30000	/* connect, close: default */
/*
 * The most events one id raises in its life, each at most once: its
 * CONNECT_REQUEST (an id a listener made), the outcome of its connection
 * (ESTABLISHED, REJECTED or an error), DISCONNECTED and DEVICE_REMOVED.
 */
#define VD_CM_ID_EVENTS		4
#define VD_CM_REQ_TIMEOUT_MS	10000	/* passive: the MPA request must come */

/* The largest MPA request or reply: the header and 512 bytes of data. */
#define VD_MPA_FRAME_MAX	(sizeof(struct vd_mpa_rr) + VD_MPA_MAX_PD)

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

struct vd_cm_id {
	struct kref ref;
	struct mutex lock;		/* the state machine */
	enum vd_cm_state state;
	struct vd_cm_owner owner;
	struct vd_cm_channel *ch;	/* referenced */
	struct list_head unacked;	/* under @ch->lock */
	/* the events the id can still raise, allocated with it: cm.c */
	struct vd_cm_event *reserve[VD_CM_ID_EVENTS];
	unsigned int reserved;		/* of @reserve, under @lock */
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
	struct list_head listen_node;	/* vd_cm_listeners, for CM_HANDOFF */
	kuid_t listen_uid;		/* its creator's euid */

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
	struct vd_qp *qp;		/* referenced, registered with the CM */
	struct vd_conn *conn;
	/* vd_conn_closed(): 0, 1 for a FIN, or a negative errno */
	int tp_closed;
	/* struct vd_conn.end: enum vd_conn_end, taken by the work (cm_end.c) */
	int end_req;
	/* ESTABLISHED: a Terminate was asked for and is not out yet (cm_end.c) */
	bool term_wait;
	struct vd_cm_param param;	/* ours */
	struct vd_mpa_params mpa;
	struct vd_mpa_info peer_info;	/* the peer's frame, once parsed */
	u32 rx_len;
	u8 rx[VD_MPA_FRAME_MAX];	/* the peer's frame as it arrives */
};

#define vd_dbg_cm(id, fmt, ...)						\
	pr_debug("cm%u %s: " fmt, (id)->handle, __func__, ##__VA_ARGS__)

/* cm.c: the state machine */
void vd_cm_queue(struct vd_cm_id *id);
void vd_cm_arm_timeout(struct vd_cm_id *id, u32 ms);
void vd_cm_disarm_timeout(struct vd_cm_id *id);
void vd_cm_report(struct vd_cm_id *id, u32 type, int status,
		  const u8 *pd, u32 pd_len);
int vd_cm_take_qp(struct vd_cm_id *id, struct vd_qp *qp);
int vd_cm_establish(struct vd_cm_id *id);
void vd_cm_release_qp(struct vd_cm_id *id);
void vd_cm_teardown(struct vd_cm_id *id, bool abort);
void vd_cm_fail(struct vd_cm_id *id, u32 type, int status);
void vd_cm_ours(struct vd_cm_id *id, u32 flags, struct vd_mpa_ours *ours);

void vd_cm_close_graceful(struct vd_cm_id *id);

/* cm_end.c: connections ended for local reasons */
void vd_cm_stream_end(struct vd_conn *conn, enum vd_conn_end how);
bool vd_cm_end_requested(struct vd_cm_id *id);

/* cm_sock.c: the id's TCP endpoint and the MPA frames on it */
int vd_cm_sock_create(struct vd_cm_id *id, int family, struct socket **res);
int vd_cm_sock_attach(struct vd_cm_id *id, struct socket *sock,
		      const struct vd_cm_id *listener);
void vd_cm_sock_detach(struct vd_cm_id *id);
void vd_cm_sock_move(struct vd_cm_id *from, struct vd_cm_id *to);
void vd_cm_sock_abort(struct socket *sock);
void vd_cm_sock_close(struct vd_cm_id *id, bool abort);
bool vd_cm_sock_gone(struct vd_cm_id *id, int *err);
bool vd_cm_sock_discard(struct vd_cm_id *id);
int vd_cm_send_frame(struct vd_cm_id *id, const struct vd_mpa_info *info,
		     const u8 *pd);
int vd_cm_recv_frame(struct vd_cm_id *id, bool reply);
const u8 *vd_cm_frame_pd(struct vd_cm_id *id);

/* cm_connect.c: the active side */
int vd_cm_send_request(struct vd_cm_id *id);
void vd_cm_got_reply(struct vd_cm_id *id);

/* cm_listen.c: listeners, their children, the passive side */
void vd_cm_listen_work(struct vd_cm_id *l);
void vd_cm_listener_close(struct vd_cm_id *l);
void vd_cm_child_drop(struct vd_cm_id *id);
void vd_cm_child_unlist(struct vd_cm_id *id);
void vd_cm_got_request(struct vd_cm_id *id);
int vd_cm_send_reply(struct vd_cm_id *id, bool reject, u32 flags,
		     const u8 *pd, u32 pd_len);

#endif /* _VD_CM_PRIV_H */
