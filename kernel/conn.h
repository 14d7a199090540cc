/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The LLP stream of a connected QP: the contract between the connection
 * manager (cm.c), which builds the stream, and the transport, which moves
 * RDMAP/DDP/MPA frames on it. Neither side calls the other by name: the CM
 * reaches the transport through @ops (struct vd_stream_ops, documented
 * below), the transport the CM through @closed (vd_conn_closed()).
 * Documentation/transport.rst and Documentation/cm.rst have both sides.
 *
 * Lifetime
 * --------
 * The CM creates a struct vd_conn when the MPA exchange succeeded, binds
 * its QP with vd_qp_enter_rts() and calls @ops->start(). The conn holds a
 * reference on the QP and on the device; the QP's @conn pointer holds none
 * and is cleared by vd_qp_llp_closed() (qp.h), when the stream is gone,
 * before the CM drops its own conn reference, so qp->conn is valid whenever
 * it is not NULL. @sock belongs to the CM's endpoint: it stays valid until
 * @ops->stop() has returned, after which the transport must not touch it.
 * @ops is set for every stream (there is no stream without a transport)
 * and becomes NULL once stop() was called, so that it is called once. The
 * transport may keep @conn past stop() with vd_conn_get().
 */
#ifndef _VD_CONN_H
#define _VD_CONN_H

#include <linux/kref.h>
#include <linux/net.h>
#include <linux/socket.h>
#include <linux/types.h>

struct vd_conn;
struct vd_device;
struct vd_qp;

/* Peer-to-peer ready-to-receive message (RFC 6581), as negotiated */
enum vd_rtr {
	VD_RTR_NONE,		/* not peer-to-peer */
	VD_RTR_WRITE,		/* zero-length RDMA Write */
	VD_RTR_READ,		/* zero-length RDMA Read */
	VD_RTR_SEND,		/* zero-length Send */
};

/* How the QP's owner ends a stream (struct vd_conn.end) */
enum vd_conn_end {
	VD_CONN_END_NONE,
	VD_CONN_END_CLOSE,	/* graceful: the QP went to Closing */
	VD_CONN_END_TERMINATE,	/* a Terminate, then our FIN: Error, Terminate, destroyed */
};

struct vd_mpa_params {
	u8 revision;		/* 1 or 2 */
	bool enhanced;		/* RFC 6581 IRD/ORD exchanged */
	bool crc_tx;		/* we append CRC32c to our FPDUs */
	bool crc_rx;		/* the peer appends CRC32c to its FPDUs */
	bool active;		/* we sent the MPA request */
	enum vd_rtr rtr;	/* P2P: which RTR the initiator sends */
	bool imm;		/* both ends take immediate data */
	u32 ird;		/* ours after negotiation: reads we serve */
	u32 ord;		/* reads we may have outstanding */
	u32 peer_ird;		/* as the peer announced (0: not announced) */
	u32 peer_ord;
};

/**
 * struct vd_stream_ops - what the CM asks of the transport
 * @start: Process context, CM endpoint lock held. The transport takes over
 *	sk_data_ready/sk_write_space (the CM keeps sk_state_change and
 *	sk_user_data, which names the CM endpoint) and may start sending;
 *	the MPA parameters in @conn->mpa are final, and nothing of the
 *	peer's FPDUs has been read (the CM reads exactly the MPA frame).
 *	A negative errno aborts the connection; start() must then have
 *	undone whatever it did (stop() is not called).
 * @stop: Process context, CM endpoint lock held. Stop using @conn->sock,
 *	put back the callbacks that start() found (the CM's) and wait for
 *	the transport's work on @conn; never calls into the CM. The CM then
 *	closes the socket gracefully or with RST (@abort), or, for a
 *	graceful disconnect, sends its FIN and waits for the peer's itself.
 *	With @conn->terminate set and not @abort, the stream's last FPDU
 *	is a Terminate (RDMAP, local catastrophic error) unless one was
 *	sent or received already, if the socket takes it without waiting.
 * @term_pending: CM endpoint lock held, between start() and stop(). True
 *	while a Terminate the transport raised itself (a peer's violation)
 *	has not wholly gone into the socket: stop() now would lose it behind
 *	a full socket, and the peer would see our FIN alone. The CM then
 *	waits (bounded) until the transport calls @conn->end again, which
 *	it does once that Terminate is out.
 * @drain: CM endpoint lock held, between start() and stop(). The peer
 *	reset the stream (or it failed), and TCP may hold bytes that arrived
 *	before that and that the transport has not read: it reads and
 *	handles them as it would have, then reports the end with
 *	@conn->closed. True if the transport is still to report that (the
 *	CM waits, bounded); false once its receiver has stopped.
 */
struct vd_stream_ops {
	int (*start)(struct vd_conn *conn);
	void (*stop)(struct vd_conn *conn, bool abort);
	bool (*term_pending)(struct vd_conn *conn);
	bool (*drain)(struct vd_conn *conn);
};

struct vd_conn {
	struct kref ref;
	struct socket *sock;		/* the CM endpoint's; see above */
	struct vd_device *dev;		/* referenced */
	struct vd_qp *qp;		/* referenced */
	const struct vd_stream_ops *ops;	/* NULL once stopped */
	/* the CM's, for vd_conn_closed() */
	void (*closed)(struct vd_conn *conn, int reason);
	/*
	 * The CM's, for the QP (which names the stream in qp->conn, under
	 * its lock): its owner ended the stream. VD_CONN_END_CLOSE for a
	 * graceful close (MODIFY_QP to Closing), VD_CONN_END_TERMINATE for
	 * a Terminate and then our FIN (MODIFY_QP to Error or Terminate,
	 * DESTROY_QP); a Terminate wins. Only schedules CM work, which stops
	 * the transport, closes the stream and reports DISCONNECTED once the
	 * peer's end came (or the close timed out). Any context but hard
	 * irq, the QP's locks may be held.
	 */
	void (*end)(struct vd_conn *conn, enum vd_conn_end how);
	void *tp;			/* the transport's */
	void *cm;			/* the CM endpoint, for callbacks */
	/* set by the CM before stop(): our side ends the stream (see stop()) */
	bool terminate;
	struct vd_mpa_params mpa;
	struct sockaddr_storage local;
	struct sockaddr_storage peer;
};

void vd_conn_put(struct vd_conn *conn);

/**
 * vd_conn_get() - take a reference
 * @conn: the stream; from start() until stop() returns, the CM's own
 *        reference keeps it alive
 *
 * The transport may keep @conn past stop() this way (it takes one in
 * start()); it then drops the reference with vd_conn_put().
 *
 * Context: Any context.
 * Return: @conn.
 */
static inline struct vd_conn *vd_conn_get(struct vd_conn *conn)
{
	kref_get(&conn->ref);
	return conn;
}

/**
 * vd_conn_closed() - tell the CM that the stream ended
 * @conn: the stream
 * @reason: 0 for the peer's FIN, else a negative errno (-ECONNRESET,
 *          -EPROTO for a framing error, -ETIMEDOUT); a positive value is
 *          taken as -EIO
 *
 * Called by the transport between start() and the end of stop(), when the
 * stream failed or the peer closed it. The first report counts. The CM's
 * @closed callback only schedules CM work, which calls stop(), closes the
 * stream and reports DISCONNECTED with @reason as status (0 if we had
 * started a graceful disconnect ourselves): FIN for 0 (the QP goes
 * Closing, then Idle if its SQ is empty, else Error), RST otherwise (the
 * QP goes to Error).
 *
 * Context: Any context.
 */
static inline void vd_conn_closed(struct vd_conn *conn, int reason)
{
	conn->closed(conn, reason);
}

#endif /* _VD_CONN_H */
