/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The iWARP transport: RDMAP/DDP/MPA on the LLP stream of a connected QP.
 * stream.c starts and stops a stream, tx.c sends (SQ work requests, RDMA
 * Read Responses, Terminate) with FPDUs that fpdu.c builds by copy and
 * zcopy.c by reference, rx.c receives and places; all work on one
 * struct vd_tp per stream. The connection manager starts and stops a
 * stream through vd_transport_ops (struct vd_stream_ops, conn.h), which
 * main.c gives it; the stream installs its ops on the QP (struct
 * vd_qp_tp_ops, qp.h). Documentation/transport.rst has the design; the
 * functions are documented at their definitions.
 *
 * Locking
 * -------
 * Each stream has two work items, one for transmit and one for receive,
 * on one unbound workqueue; each runs in process context, never
 * concurrently with itself. Transmit also runs in the posting context
 * (vd_tx_direct(): the DOORBELL call, the polling worker) when the stream
 * is idle; @tx_mutex makes that and the work item one transmitter, and
 * every "transmit work only" field is under it. Receive also runs in the
 * socket's sk_data_ready (rx.c, softirq or the socket owner's
 * release_sock(), socket locked, sk_callback_lock read-held); the bit
 * VD_TP_RX_BUSY of @rx_busy makes that and the work item one receiver,
 * and every "receive work only" field is under it. Both read with
 * tcp_read_sock() (the work item under lock_sock()) and place an FPDU
 * that is whole in the receive queue straight from its skbs, under the
 * socket lock; what must sleep (an invalidation) runs after the work item
 * released the socket. Transmit keeps the use brackets of the regions it
 * sends from open across its sendmsg() (fpdu.c). What they share is
 * under @lock (taken with bottom halves disabled): the outbound and
 * inbound RDMA Read queues, the SQ completion records and counters, the
 * Terminate state and @stopping.
 * Lock order: @lock -> QP locks -> CQ locks. qp->lock protects qp->tp
 * and conn->tp, so that vd_qp_sq_work() never finds a freed stream. The
 * socket callbacks find their stream under sk_callback_lock (read) in a
 * hash table keyed by the socket; start() and stop() change it under the
 * same lock (write).
 */
#ifndef _VD_TRANSPORT_H
#define _VD_TRANSPORT_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <viaduct/viaduct-abi.h>

#include "conn.h"
#include "iwarp.h"
#include "terminate.h"
#include "viaduct.h"

struct bio_vec;
struct page;
struct sk_buff;
struct sock;
struct vd_mr;
struct vd_qp;
struct vd_umem;
struct vd_zc;
struct vd_zc_msg;

/* A whole FPDU of the largest ULPDU, with pad and CRC. */
#define VD_TP_BUF_SIZE		(VD_MPA_LEN_SIZE + VD_MPA_ULPDU_MAX + 3 + \
				 VD_MPA_CRC_SIZE)
#define VD_TP_TERM_SIZE		(VD_MPA_LEN_SIZE + VD_TERM_ULPDU_MAX + 3 + \
				 VD_MPA_CRC_SIZE)
/*
 * Pieces of one batch of FPDUs sent by reference: a header, a trailer and
 * the payload's page pieces per FPDU (see zc_segs() in zcopy.c).
 */
#define VD_TP_ZC_SEGS		256U
/* Bytes one work item moves per turn before it lets other streams run. */
#define VD_TP_BUDGET		(256U * 1024)
/* Bytes a posting context sends before it leaves the rest to the work. */
#define VD_TP_DIRECT_BUDGET	(64U * 1024)
/* FPDU bytes the data_ready upcall handles before it leaves the rest. */
#define VD_TP_UPCALL_BUDGET	(64U * 1024)
/* @rx_busy: the upcall or the work item is receiving */
#define VD_TP_RX_BUSY		0
/* @rx_busy: data came while the work item had VD_TP_RX_BUSY (vd_rx_work()) */
#define VD_TP_RX_AGAIN		1
/* Turns of the receive work item for VD_TP_RX_AGAIN before it queues itself. */
#define VD_TP_RX_TURNS		4

/* Terminate state of a stream; only ever moves forward. */
enum vd_tp_term {
	VD_TP_TERM_NONE,
	VD_TP_TERM_HELD,	/* built, held until the QP is in Error */
	VD_TP_TERM_PENDING,	/* built, waits for an FPDU boundary */
	VD_TP_TERM_SENDING,	/* on its way into the socket */
	VD_TP_TERM_DONE,	/* sent or received: the stream is dead */
};

/* An RDMA Read we requested (the ORQ). */
struct vd_orq_entry {
	u32 seq;		/* the SQ WR's sequence number */
	u32 sink_stag;
	u64 sink_to;
	u32 size;
	u32 done;		/* bytes of the response placed */
	bool rtr;		/* the zero-length ready-to-receive Read */
	bool inv;		/* RDMA Read with local invalidate of the sink */
};

/* An RDMA Read Request we serve (the IRQ). */
struct vd_irq_entry {
	struct vd_mr *mr;	/* source region, referenced; NULL if size 0 */
	u32 sink_stag;
	u64 sink_to;
	u64 src_to;
	u32 size;
};

/* Per SQ WR started: what its completion will say once it is done. */
struct vd_sq_rec {
	u32 byte_len;
	u32 vendor_err;
	u8 status;
	bool done;
};

/* The message being transmitted. */
struct vd_tx_msg {
	bool active;
	bool finished;		/* its last FPDU is built */
	bool wr;		/* carries SQ WR @seq (else a response, an RTR) */
	u32 seq;
	u32 wr_len;		/* the WR's bytes, for its completion */
	bool imm_follows;	/* RDMA Write: Immediate Data @imm comes next */
	bool imm_se;		/* ... with Solicited Event */
	u32 imm;
	struct vd_iw_hdr hdr;	/* template: last, to and mo are per FPDU */
	u64 base_to;		/* tagged: TO of byte 0 */
	u32 len;
	u32 hdr_len;
	u32 max_payload;
	u32 index;		/* next FPDU */
	/* payload source: one of these */
	const u8 *inline_data;
	const struct viaduct_sge *sge;
	u32 num_sge;
	struct vd_mr *mr;	/* Read Response: the IRQ entry's */
	u64 mr_addr;
	bool response;		/* pop the IRQ when done */
	bool irq_popped;	/* popped already: @mr's reference is ours */
};

struct vd_tp {
	struct vd_conn *conn;		/* referenced */
	struct vd_qp *qp;		/* conn->qp */
	struct vd_device *dev;		/* conn->dev */
	struct socket *sock;
	struct sock *sk;
	struct hlist_node node;		/* the socket -> stream table */
	struct rcu_head rcu;
	void (*saved_data_ready)(struct sock *sk);
	void (*saved_write_space)(struct sock *sk);
	struct work_struct tx_work;
	struct work_struct rx_work;
	bool crc_tx;
	bool crc_rx;
	bool imm;			/* immediate data negotiated in MPA */
	u32 ord;			/* reads we may have outstanding */
	u32 ird;			/* reads we serve at once */

	spinlock_t lock;		/* see "Locking" */
	bool stopping;
	enum vd_tp_term term;
	u8 term_fpdu[VD_TP_TERM_SIZE];
	u32 term_len;
	struct vd_orq_entry orq[VD_MAX_ORD];
	u32 orq_head, orq_tail;		/* free-running */
	struct vd_irq_entry irq[VD_MAX_IRD];
	u32 irq_head, irq_tail;		/* free-running */
	struct vd_sq_rec *sq_rec;	/* sq depth entries */
	u32 sq_mask;
	u32 sq_started;			/* SQ WRs started (free-running) */
	u32 sq_retired;			/* SQ WRs completed to the QP */

	/* who transmits: the work item or a posting context (tx.c) */
	struct mutex tx_mutex;		/* held by the one that does */
	atomic_t tx_direct_users;	/* posting contexts that may take it */
	bool tx_direct;			/* the holder is a posting context */

	/* transmit work only */
	bool tx_dead;
	bool tx_failed;			/* a WR failed: start no more */
	bool tx_term;			/* @tx_buf holds the Terminate */
	bool tx_hold;			/* passive P2P: until the RTR came */
	bool tx_fenced;			/* a local fence waits for completions */
	bool tx_rtr;			/* active P2P: the RTR is still to send */
	u32 msn[VD_QN_NR];		/* next MSN per untagged queue */
	struct vd_tx_msg msg;
	u8 *sqe;			/* copy of the SQ WR being sent */
	u8 *tx_buf;			/* VD_TP_BUF_SIZE */
	u32 tx_off, tx_left;		/* of the FPDUs in @tx_buf or @tx_bvec */
	/* zero-copy transmit (zcopy.h) */
	struct vd_zc *zc;		/* NULL: this stream always copies */
	struct vd_zc_msg *zmsg;		/* the message sent by reference */
	struct bio_vec *tx_bvec;	/* VD_TP_ZC_SEGS, each a page ref */
	u32 tx_nbvec;			/* in use: the batch is by reference */
	struct page *hdr_page;		/* headers and trailers of those */
	u32 hdr_off;			/* bytes of @hdr_page handed to TCP */
	/*
	 * one copy (fpdu.c): the batch is @tx_bvec over the payload's own
	 * pages, which sendmsg() copies; the regions' use brackets stay open
	 * until it did
	 */
	u32 tx_npages;			/* @tx_bvec entries; 0: not this way */
	struct page *tx_hdr;		/* the batch's headers and trailers */
	u32 tx_hdr_off;			/* bytes of @tx_hdr in use */
	struct vd_mr **tx_mrs;		/* VD_TP_ZC_SEGS, bracket + reference */
	u32 tx_nmrs;

	/* who receives: the data_ready upcall or the work item (rx.c) */
	unsigned long rx_busy;		/* VD_TP_RX_BUSY, VD_TP_RX_AGAIN */

	/* the receiver stopped for good (its writes; drain() reads it) */
	bool rx_dead;

	/* receive work only */
	bool rx_rtr;			/* passive P2P: the RTR is still to come */
	u32 rx_msn[VD_QN_NR];		/* next expected MSN per queue */
	bool rx_recv;			/* a Send is being placed into @rqe */
	u32 rx_recv_len;		/* its bytes placed */
	u32 rx_recv_cap;		/* the receive's length */
	u8 *rqe;			/* copy of the receive WR in use */
	bool rx_write_open;		/* an RDMA Write's last segment is due */
	u32 rx_write_len;		/* bytes of the last RDMA Write */
	u8 *rx_buf;			/* VD_TP_BUF_SIZE, read ahead */
	u32 rx_start;			/* the next FPDU starts here */
	u32 rx_end;			/* what was read ends here */
	u32 rx_skip;			/* bytes of an FPDU handled in place */
	/* an FPDU not whole: when it must be (rx_stall_ms) */
	struct timer_list rx_stall;
	unsigned long rx_stall_at;
	bool rx_stall_armed;
};

/*
 * Where the payload of the FPDU being handled is: in @tp->rx_buf, or,
 * when the data_ready upcall handles it in place (rx_read.c), still in
 * the socket's receive queue, whose lock the upcall holds.
 */
struct vd_rx_payload {
	const u8 *buf;		/* the payload, linear; or NULL, and then */
	struct sock *sk;	/* in @sk's receive queue */
	struct sk_buff *skb;	/* from this skb on */
	u32 seq;		/* the TCP sequence number of its first byte */
};

extern const struct vd_stream_ops vd_transport_ops;

int vd_transport_init(void);
void vd_transport_uninit(void);

/* Among the files of the transport */
extern struct workqueue_struct *vd_tp_wq;
void vd_tx_work(struct work_struct *work);
void vd_tx_direct(struct vd_tp *tp);
void vd_tx_zc_retire(struct vd_tp *tp);
/* @mr: the region the bytes are in, inside its use bracket; @umem: its pages */
typedef int (*vd_fpdu_umem_fn)(struct vd_tp *tp, struct vd_mr *mr,
			       const struct vd_umem *umem, u64 umem_off,
			       u32 len, void *arg);
int vd_fpdu_walk_payload(struct vd_tp *tp, u32 off, u32 len,
			 vd_fpdu_umem_fn fn, void *arg);
void vd_fpdu_seg_hdr(const struct vd_tx_msg *msg,
		     const struct vd_fpdu_seg *seg, struct vd_iw_hdr *hdr);
int vd_fpdu_build_copy(struct vd_tp *tp);
bool vd_fpdu_pages_ok(const struct vd_tp *tp);
int vd_fpdu_build_pages(struct vd_tp *tp);
void vd_fpdu_pages_settle(struct vd_tp *tp, bool keep);
void vd_tp_queue_tx(struct vd_tp *tp);
void vd_tp_queue_rx(struct vd_tp *tp);
void vd_tp_terminate(struct vd_tp *tp, u16 code, u32 event,
		     const void *bad, u32 bad_len, u32 seg_len);
void vd_tp_terminated(struct vd_tp *tp, const struct vd_term_msg *msg);
void vd_tx_final_terminate(struct vd_tp *tp, u16 code);
void vd_tp_read_done(struct vd_tp *tp);
void vd_tp_wr_finish(struct vd_tp *tp, u32 seq, u8 status, u32 len);
/* tx_wr.c, for tx.c */
void vd_tx_msg_init(struct vd_tp *tp, u8 opcode, u32 len);
bool vd_tx_next_msg(struct vd_tp *tp);
/* rx.c, for rx_read.c */
u32 vd_rx_be16(const u8 *p);
u32 vd_rx_event(u16 code);
void vd_rx_fail(struct vd_tp *tp, enum vd_iw_err err, const u8 *ulpdu,
		u32 ulpdu_len);
struct sk_buff *vd_rx_skb_at(struct sock *sk, struct sk_buff *skb, u32 seq);
int vd_rx_skb_copy(struct sock *sk, struct sk_buff *skb, u32 seq, void *dst,
		   u32 len);
void vd_rx_dispatch(struct vd_tp *tp, const struct vd_iw_hdr *hdr,
		    const u8 *ulpdu, u32 ulpdu_len,
		    const struct vd_rx_payload *pl);
void vd_rx_fpdu(struct vd_tp *tp, const u8 *fpdu, u32 len);
void vd_rx_work(struct work_struct *work);
void vd_rx_data_ready(struct sock *sk);
void vd_rx_stall_timer(struct timer_list *t);
struct vd_tp *vd_tp_lookup(struct sock *sk);

#endif /* _VD_TRANSPORT_H */
