// SPDX-License-Identifier: GPL-2.0
/*
 * The receive half of the iWARP transport, for one whole FPDU: checked
 * (MPA length and CRC, DDP and RDMAP headers, MSN, MO, the TPT) and only
 * then placed, tagged data into registered regions, untagged data into
 * posted receives; its payload in the receive buffer or still in the
 * socket's skbs. Any violation ends the stream with a Terminate.
 * rx_read.c reads the socket and cuts it into FPDUs. transport.h has the
 * structures and the locking, Documentation/transport.rst the design.
 */
#include <linux/highmem.h>
#include <linux/minmax.h>
#include <linux/net.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "device.h"
#include "mem.h"
#include "qp.h"
#include "stats.h"
#include "tpt.h"
#include "transport.h"

/* The MPA ULPDU_Length at the start of an FPDU (big endian). */
u32 vd_rx_be16(const u8 *p)
{
	return (u32)p[0] << 8 | p[1];
}

/* Access violations raise QP_ACCESS_ERR; every other error QP_FATAL. */
u32 vd_rx_event(u16 code)
{
	u8 layer = vd_term_layer(code), etype = vd_term_etype(code);

	if ((layer == VD_TERM_LAYER_DDP && etype == VD_TERM_DDP_TAGGED) ||
	    (layer == VD_TERM_LAYER_RDMAP &&
	     etype == VD_TERM_RDMAP_REMOTE_PROT))
		return VIADUCT_EVENT_QP_ACCESS_ERR;
	return VIADUCT_EVENT_QP_FATAL;
}

/*
 * Ends the stream: Terminate @code about the segment whose ULPDU is at
 * @ulpdu (NULL: none whose headers can be trusted), and reads nothing
 * more.
 */
static void rx_fail_code(struct vd_tp *tp, u16 code, const u8 *ulpdu,
			 u32 ulpdu_len)
{
	pr_debug("qp%u: receive error 0x%04x (%s)\n", tp->qp->qpn, code,
		 vd_term_name(code));
	WRITE_ONCE(tp->rx_dead, true);
	vd_tp_terminate(tp, code, vd_rx_event(code), ulpdu,
			ulpdu ? min_t(u32, ulpdu_len, VD_HDR_READ_REQ) : 0,
			ulpdu_len);
}

/* rx_fail_code() with the code of @err. */
void vd_rx_fail(struct vd_tp *tp, enum vd_iw_err err, const u8 *ulpdu,
		u32 ulpdu_len)
{
	rx_fail_code(tp, vd_term_code(err), ulpdu, ulpdu_len);
}

/* The receive in use ends with @status (before the QP enters Error). */
static void rx_fail_recv(struct vd_tp *tp, u8 status)
{
	struct viaduct_cqe cqe = { .status = status };

	if (!tp->rx_recv)
		return;
	tp->rx_recv = false;
	vd_qp_complete(tp->qp, VD_QP_RQ, &cqe, false);
}

/*
 * The skb of @sk's receive queue, from @skb on, that holds the byte of
 * sequence number @seq. An skb may begin with bytes an earlier one had
 * (a retransmission TCP queued whole): offsets go by sequence numbers.
 */
struct sk_buff *vd_rx_skb_at(struct sock *sk, struct sk_buff *skb, u32 seq)
{
	while (skb && !before(seq, TCP_SKB_CB(skb)->seq + skb->len))
		skb = skb_peek_next(skb, &sk->sk_receive_queue);
	if (WARN_ON_ONCE(!skb || before(seq, TCP_SKB_CB(skb)->seq)))
		return NULL;
	return skb;
}

/* Copies @len bytes from sequence number @seq of the receive queue on. */
int vd_rx_skb_copy(struct sock *sk, struct sk_buff *skb, u32 seq, void *dst,
		   u32 len)
{
	u32 off, n;

	while (len) {
		skb = vd_rx_skb_at(sk, skb, seq);
		if (!skb)
			return -EFAULT;
		off = seq - TCP_SKB_CB(skb)->seq;
		n = min(len, skb->len - off);
		if (skb_copy_bits(skb, off, dst, n))
			return -EFAULT;
		dst += n;
		seq += n;
		len -= n;
	}
	return 0;
}

/* Copies payload bytes [@at, @at + @len) of @pl to @dst. */
static int rx_payload_copy(const struct vd_rx_payload *pl, u32 at, void *dst,
			   u32 len)
{
	if (pl->buf) {
		memcpy(dst, pl->buf + at, len);
		return 0;
	}
	return vd_rx_skb_copy(pl->sk, pl->skb, pl->seq + at, dst, len);
}

/* Copies payload bytes [@at, @at + @len) of @pl into @umem at @offset. */
static int rx_copy_to_umem(struct vd_umem *umem, u64 offset,
			   const struct vd_rx_payload *pl, u32 at, u32 len)
{
	unsigned int poff;
	struct page *page;
	u32 n;
	u8 *p;
	int ret;

	if (pl->buf)
		return vd_umem_copy_to(umem, offset, pl->buf + at, len);
	if (WARN_ON_ONCE(!umem->writable || offset > umem->length ||
			 len > umem->length - offset))
		return -EFAULT;
	while (len) {
		page = vd_umem_page(umem, offset, &poff);
		n = min_t(u32, len, PAGE_SIZE - poff);
		p = kmap_local_page(page);
		ret = rx_payload_copy(pl, at, p + poff, n);
		kunmap_local(p);
		if (ret)
			return ret;
		flush_dcache_page(page);
		at += n;
		offset += n;
		len -= n;
	}
	return 0;
}

/*
 * Copies payload bytes [@at, @at + @len) of @pl into a region the TPT
 * check returned, unless it was invalidated or deregistered since
 * (-ESTALE): nothing is placed into a region once its access ended.
 */
static int rx_place(struct vd_mr *mr, u64 addr, const struct vd_rx_payload *pl,
		    u32 at, u32 len)
{
	int ret;

	/* what the check lets through has pages (memory.rst, STag types) */
	if (WARN_ON_ONCE(!mr->umem))
		return -EFAULT;
	if (!vd_mr_use_begin(mr))
		return -ESTALE;
	ret = rx_copy_to_umem(mr->umem, vd_mr_offset(mr, addr), pl, at, len);
	vd_mr_use_end(mr);
	return ret;
}

/* A tagged placement failed: its STag ended meanwhile, or worse. */
static void rx_place_failed(struct vd_tp *tp, int ret, const u8 *ulpdu,
			    u32 ulpdu_len)
{
	if (ret == -ESTALE)
		rx_fail_code(tp, vd_term_access_code(VD_ACCESS_INVALID_STATE,
						     true), ulpdu, ulpdu_len);
	else
		vd_rx_fail(tp, VD_IW_DDP_CATASTROPHIC, ulpdu, ulpdu_len);
}

/* --- Tagged: RDMA Write, RDMA Read Response -------------------------- */

static void rx_write(struct vd_tp *tp, const struct vd_iw_hdr *hdr,
		     const u8 *ulpdu, u32 ulpdu_len,
		     const struct vd_rx_payload *pl)
{
	u32 len = hdr->payload_len;
	enum vd_access_status st;
	struct vd_mr *mr = NULL;

	/* a zero-length access is not validated (memory.rst, step 0) */
	if (len && !(READ_ONCE(tp->qp->access) &
		     VIADUCT_QP_ACCESS_REMOTE_WRITE))
		st = VD_ACCESS_RIGHTS;
	else
		st = vd_tpt_check(&tp->dev->tpt, hdr->stag, tp->qp->pd,
				  tp->qp->qpn, VD_RIGHT_REMOTE_WRITE, hdr->to,
				  len, &mr);
	if (st != VD_ACCESS_OK) {
		rx_fail_code(tp, vd_term_access_code(st, true), ulpdu,
			     ulpdu_len);
		return;
	}
	if (mr) {
		int ret = rx_place(mr, hdr->to, pl, 0, len);

		vd_mr_put(mr);
		if (ret) {
			rx_place_failed(tp, ret, ulpdu, ulpdu_len);
			return;
		}
	}
	/* the size of the last Write, for an Immediate Data behind it */
	if (!tp->rx_write_open)
		tp->rx_write_len = 0;
	tp->rx_write_len += len;
	tp->rx_write_open = !hdr->last;
}

static void rx_read_resp(struct vd_tp *tp, const struct vd_iw_hdr *hdr,
			 const u8 *ulpdu, u32 ulpdu_len,
			 const struct vd_rx_payload *pl)
{
	u32 len = hdr->payload_len, stag, room;
	enum vd_access_status st;
	struct vd_orq_entry *e;
	struct vd_mr *mr = NULL;
	u64 to;

	spin_lock_bh(&tp->lock);
	if (tp->orq_head == tp->orq_tail) {
		spin_unlock_bh(&tp->lock);
		vd_rx_fail(tp, VD_IW_RDMAP_OPCODE, ulpdu, ulpdu_len);
		return;
	}
	/* only rx.c moves the head or changes @done: @e stays ours */
	e = &tp->orq[tp->orq_head % VD_MAX_ORD];
	spin_unlock_bh(&tp->lock);
	stag = e->sink_stag;
	to = e->sink_to + e->done;
	room = e->size - e->done;

	if (hdr->stag != stag) {
		vd_rx_fail(tp, VD_IW_DDP_T_STAG, ulpdu, ulpdu_len);
		return;
	}
	if (hdr->to != to || len > room || (hdr->last && len != room)) {
		vd_rx_fail(tp, VD_IW_DDP_T_BOUNDS, ulpdu, ulpdu_len);
		return;
	}
	st = vd_tpt_check(&tp->dev->tpt, stag, tp->qp->pd,
			  tp->qp->qpn, VD_RIGHT_LOCAL_WRITE, to, len, &mr);
	if (st != VD_ACCESS_OK) {
		rx_fail_code(tp, vd_term_access_code(st, true), ulpdu,
			     ulpdu_len);
		return;
	}
	if (mr) {
		int ret = rx_place(mr, to, pl, 0, len);

		vd_mr_put(mr);
		if (ret) {
			rx_place_failed(tp, ret, ulpdu, ulpdu_len);
			return;
		}
	}
	e->done += len;
	if (hdr->last)
		vd_tp_read_done(tp);
}

/* --- Untagged: Send, RDMA Read Request, Terminate -------------------- */

/*
 * Copies the oldest posted receive into @tp->rqe. If none is in flight,
 * takes new ones from the ring first (a polled QP's worker may not have
 * come round yet), or one from the SRQ the QP receives from. Returns
 * how many receives are posted: 0 or 1.
 */
static u32 rx_take_recv(struct vd_tp *tp)
{
	struct vd_qp *qp = tp->qp;
	struct vd_wq *wq = &qp->rq;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		u32 found = 0;

		spin_lock_bh(&wq->lock);
		if (!qp->destroyed && wq->tail != wq->head) {
			u32 slot = wq->head & (wq->depth - 1);

			/* a malformed WR: the QP is entering Error */
			if (!wq->meta[slot].status) {
				const void *copy = wq->copies +
						   (size_t)slot * wq->wqe_size;

				/* the WR's own bytes, not the whole slot */
				memcpy(tp->rqe, copy,
				       vd_qp_wqe_len(copy, true, &wq->lim));
				tp->rx_recv_cap = wq->meta[slot].byte_len;
				found = 1;
			}
			spin_unlock_bh(&wq->lock);
			return found;
		}
		spin_unlock_bh(&wq->lock);
		/* on an SRQ: its oldest WR, for whichever QP asks first */
		if ((qp->srq ? vd_qp_take_srq(qp) :
		     vd_qp_consume(qp, VD_QP_RQ)) <= 0)
			break;
	}
	return 0;
}

/*
 * A message on the Send queue begins: its MSN must be the queue's next,
 * and a receive must be posted for it (copied into @tp->rqe). Else the
 * stream fails and this returns false.
 */
static bool rx_start_recv(struct vd_tp *tp, const struct vd_iw_hdr *hdr,
			  const u8 *ulpdu, u32 ulpdu_len)
{
	enum vd_iw_err err;

	err = vd_ddp_msn_check(hdr->msn, tp->rx_msn[VD_QN_SEND],
			       hdr->msn == tp->rx_msn[VD_QN_SEND] ?
			       rx_take_recv(tp) : 0);
	if (err)
		vd_rx_fail(tp, err, ulpdu, ulpdu_len);
	return !err;
}

/* Places the payload (at message offset @mo) through the receive's SGEs. */
static u8 rx_place_sges(struct vd_tp *tp, u32 mo, const struct vd_rx_payload *pl,
			u32 len)
{
	const struct viaduct_rqe *rqe = (const void *)tp->rqe;
	const struct viaduct_sge *sge = (const void *)(rqe + 1);
	enum vd_access_status st;
	struct vd_mr *mr;
	u32 i, n, off = mo, at = 0;
	int ret;

	for (i = 0; i < rqe->num_sge && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - off);
		st = vd_tpt_check(&tp->dev->tpt, sge[i].stag, tp->qp->pd,
				  tp->qp->qpn, VD_RIGHT_LOCAL_WRITE,
				  sge[i].addr + off, n, &mr);
		if (st != VD_ACCESS_OK)
			return vd_access_wc_status(st, false);
		ret = rx_place(mr, sge[i].addr + off, pl, at, n);
		vd_mr_put(mr);
		if (ret)
			return VIADUCT_WC_LOC_PROT_ERR;
		at += n;
		len -= n;
		off = 0;
	}
	return len ? VIADUCT_WC_LOC_LEN_ERR : VIADUCT_WC_SUCCESS;
}

/*
 * The last segment of a Send with Invalidate arrived: its STag becomes
 * INVALID before the receive completes, and the completion names it. Only
 * an STag of the QP's PD that a peer may invalidate (vd_tpt_invalidate())
 * is; anything else ends the stream with the Terminate RFC 5040 gives.
 */
static bool rx_invalidate(struct vd_tp *tp, const struct vd_iw_hdr *hdr,
			  struct viaduct_cqe *cqe, const u8 *ulpdu,
			  u32 ulpdu_len)
{
	enum vd_access_status st;

	st = vd_tpt_invalidate_sync(&tp->dev->tpt, hdr->inv_stag, tp->qp->pd,
				    tp->qp->qpn, true);
	if (st != VD_ACCESS_OK) {
		rx_fail_recv(tp, VIADUCT_WC_REM_INV_REQ_ERR);
		rx_fail_code(tp, vd_access_term_invalidate(st), ulpdu,
			     ulpdu_len);
		return false;
	}
	cqe->flags |= VIADUCT_WC_F_INVALIDATED;
	cqe->invalidated_stag = hdr->inv_stag;
	return true;
}

static void rx_send(struct vd_tp *tp, const struct vd_iw_hdr *hdr,
		    const u8 *ulpdu, u32 ulpdu_len, const struct vd_rx_payload *pl)
{
	bool se = hdr->opcode == VD_OP_SEND_SE ||
		  hdr->opcode == VD_OP_SEND_SE_INV ||
		  hdr->opcode == VD_OP_SEND_SE_IMM;
	u32 len = hdr->payload_len;
	struct viaduct_cqe cqe = {};
	enum vd_iw_err err;
	u8 status;

	if (!tp->rx_recv) {
		/* the first segment of a message takes a receive */
		if (!rx_start_recv(tp, hdr, ulpdu, ulpdu_len))
			return;
		tp->rx_recv = true;
		tp->rx_recv_len = 0;
	} else if (hdr->msn != tp->rx_msn[VD_QN_SEND]) {
		vd_rx_fail(tp, VD_IW_DDP_UT_MSN_RANGE, ulpdu, ulpdu_len);
		return;
	}
	err = vd_ddp_mo_check(hdr->mo, tp->rx_recv_len);
	if (err) {
		vd_rx_fail(tp, err, ulpdu, ulpdu_len);
		return;
	}
	err = vd_ddp_fits(hdr->mo, len, tp->rx_recv_cap);
	if (err) {
		rx_fail_recv(tp, VIADUCT_WC_LOC_LEN_ERR);
		vd_rx_fail(tp, err, ulpdu, ulpdu_len);
		return;
	}
	status = rx_place_sges(tp, hdr->mo, pl, len);
	if (status) {
		/* our receive's memory: a local error, not the peer's */
		rx_fail_recv(tp, status);
		vd_rx_fail(tp, VD_IW_RDMAP_CATASTROPHIC, NULL, ulpdu_len);
		return;
	}
	tp->rx_recv_len += len;
	if (!hdr->last)
		return;

	if ((hdr->opcode == VD_OP_SEND_INV ||
	     hdr->opcode == VD_OP_SEND_SE_INV) &&
	    !rx_invalidate(tp, hdr, &cqe, ulpdu, ulpdu_len))
		return;
	cqe.byte_len = tp->rx_recv_len;
	if (se)
		cqe.flags |= VIADUCT_WC_F_SOLICITED;
	if (hdr->opcode == VD_OP_SEND_IMM || hdr->opcode == VD_OP_SEND_SE_IMM) {
		cqe.imm_data = hdr->imm;
		cqe.flags |= VIADUCT_WC_F_IMMEDIATE;
	}
	tp->rx_recv = false;
	tp->rx_msn[VD_QN_SEND]++;
	vd_qp_complete(tp->qp, VD_QP_RQ, &cqe, se);
}

/*
 * RFC 7306 Immediate Data: takes a receive like a Send and places nothing
 * in it; the completion carries the data and the size of the RDMA Write
 * that came last before it (0 if none did since the last such message).
 */
static void rx_imm(struct vd_tp *tp, const struct vd_iw_hdr *hdr,
		   const u8 *ulpdu, u32 ulpdu_len)
{
	bool se = hdr->opcode == VD_OP_IMM_SE;
	struct viaduct_cqe cqe = {
		.opcode = VIADUCT_WC_RECV_RDMA_WITH_IMM,
		.flags = VIADUCT_WC_F_IMMEDIATE,
		.imm_data = hdr->imm,
	};

	/* not in the middle of a Send: messages of a queue never interleave */
	if (tp->rx_recv) {
		vd_rx_fail(tp, VD_IW_DDP_UT_MSN_RANGE, ulpdu, ulpdu_len);
		return;
	}
	if (!rx_start_recv(tp, hdr, ulpdu, ulpdu_len))
		return;
	if (!tp->rx_write_open)
		cqe.byte_len = tp->rx_write_len;
	tp->rx_write_len = 0;
	if (se)
		cqe.flags |= VIADUCT_WC_F_SOLICITED;
	tp->rx_msn[VD_QN_SEND]++;
	vd_qp_complete(tp->qp, VD_QP_RQ, &cqe, se);
}

/* The opcodes of immediate data, which need MPA's IMM_OFFER/IMM_ACCEPT. */
static bool rx_imm_opcode(u8 op)
{
	return op == VD_OP_SEND_IMM || op == VD_OP_SEND_SE_IMM ||
	       op == VD_OP_IMM || op == VD_OP_IMM_SE;
}

/* Queues a Read Request for tx.c; the source was checked (or is empty). */
static void rx_queue_read(struct vd_tp *tp, const struct vd_iw_hdr *hdr,
			  struct vd_mr *mr)
{
	spin_lock_bh(&tp->lock);
	tp->irq[tp->irq_tail % VD_MAX_IRD] = (struct vd_irq_entry){
		.mr = mr,
		.sink_stag = hdr->sink_stag,
		.sink_to = hdr->sink_to,
		.src_to = hdr->src_to,
		.size = hdr->size,
	};
	tp->irq_tail++;
	spin_unlock_bh(&tp->lock);
	tp->rx_msn[VD_QN_READ_REQ]++;
	vd_tp_queue_tx(tp);
}

static bool rx_irq_room(struct vd_tp *tp)
{
	bool room;

	spin_lock_bh(&tp->lock);
	room = tp->irq_tail - tp->irq_head < tp->ird;
	spin_unlock_bh(&tp->lock);
	return room;
}

static void rx_read_req(struct vd_tp *tp, const struct vd_iw_hdr *hdr,
			const u8 *ulpdu, u32 ulpdu_len)
{
	enum vd_access_status st;
	struct vd_mr *mr = NULL;
	enum vd_iw_err err;

	/* IRD: a request beyond it finds no room ("no buffer") */
	err = vd_ddp_msn_check(hdr->msn, tp->rx_msn[VD_QN_READ_REQ],
			       rx_irq_room(tp));
	if (err) {
		vd_rx_fail(tp, err, ulpdu, ulpdu_len);
		return;
	}
	if (hdr->size && !(READ_ONCE(tp->qp->access) &
			   VIADUCT_QP_ACCESS_REMOTE_READ))
		st = VD_ACCESS_RIGHTS;
	else
		st = vd_tpt_check(&tp->dev->tpt, hdr->src_stag, tp->qp->pd,
				  tp->qp->qpn, VD_RIGHT_REMOTE_READ,
				  hdr->src_to, hdr->size, &mr);
	if (st != VD_ACCESS_OK) {
		rx_fail_code(tp, vd_term_access_code(st, false), ulpdu,
			     ulpdu_len);
		return;
	}
	rx_queue_read(tp, hdr, mr);
}

static void rx_terminate(struct vd_tp *tp, const struct vd_iw_hdr *hdr,
			 const u8 *ulpdu)
{
	struct vd_term_msg msg;

	/* vd_iw_parse() saw the control word; the rest is best effort */
	vd_term_parse(ulpdu + hdr->hdr_len, hdr->payload_len, &msg);
	WRITE_ONCE(tp->rx_dead, true);
	rx_fail_recv(tp, VIADUCT_WC_REM_TERMINATED);
	vd_tp_terminated(tp, &msg);
}

/*
 * RFC 6581, responder: the first message is the initiator's zero-length
 * RTR, which takes no receive and needs no access right. Until it came
 * we send nothing. Returns true if @hdr was the RTR.
 */
static bool rx_rtr(struct vd_tp *tp, const struct vd_iw_hdr *hdr,
		   const u8 *ulpdu, u32 ulpdu_len)
{
	bool rtr = false;

	tp->rx_rtr = false;
	switch (tp->conn->mpa.rtr) {
	case VD_RTR_WRITE:
		rtr = hdr->opcode == VD_OP_WRITE && !hdr->payload_len &&
		      hdr->last;
		break;
	case VD_RTR_SEND:
		rtr = hdr->opcode == VD_OP_SEND && !hdr->payload_len &&
		      hdr->last && !hdr->mo &&
		      hdr->msn == tp->rx_msn[VD_QN_SEND];
		if (rtr)
			tp->rx_msn[VD_QN_SEND]++;
		break;
	case VD_RTR_READ:
		rtr = hdr->opcode == VD_OP_READ_REQ && !hdr->size &&
		      hdr->msn == tp->rx_msn[VD_QN_READ_REQ];
		if (rtr)
			rx_queue_read(tp, hdr, NULL);
		break;
	default:
		break;
	}
	WRITE_ONCE(tp->tx_hold, false);
	vd_tp_queue_tx(tp);
	if (!rtr)
		pr_debug("qp%u: first message is no RTR: opcode %u\n",
			 tp->qp->qpn, hdr->opcode);
	return rtr;
}

/*
 * A whole FPDU whose CRC was verified and whose headers @hdr parsed from
 * @ulpdu (at least its first VD_HDR_READ_REQ bytes, for a Terminate about
 * it); its payload is at @pl.
 */
void vd_rx_dispatch(struct vd_tp *tp, const struct vd_iw_hdr *hdr,
		    const u8 *ulpdu, u32 ulpdu_len,
		    const struct vd_rx_payload *pl)
{
	if (tp->rx_rtr && hdr->opcode != VD_OP_TERMINATE &&
	    rx_rtr(tp, hdr, ulpdu, ulpdu_len))
		return;
	if (!tp->imm && rx_imm_opcode(hdr->opcode)) {
		/* we did not say we take it: as any unexpected opcode */
		vd_rx_fail(tp, VD_IW_RDMAP_OPCODE, ulpdu, ulpdu_len);
		return;
	}

	switch (hdr->opcode) {
	case VD_OP_WRITE:
		rx_write(tp, hdr, ulpdu, ulpdu_len, pl);
		break;
	case VD_OP_READ_RESP:
		rx_read_resp(tp, hdr, ulpdu, ulpdu_len, pl);
		break;
	case VD_OP_SEND:
	case VD_OP_SEND_SE:
	case VD_OP_SEND_INV:
	case VD_OP_SEND_SE_INV:
	case VD_OP_SEND_IMM:
	case VD_OP_SEND_SE_IMM:
		rx_send(tp, hdr, ulpdu, ulpdu_len, pl);
		break;
	case VD_OP_IMM:
	case VD_OP_IMM_SE:
		rx_imm(tp, hdr, ulpdu, ulpdu_len);
		break;
	case VD_OP_READ_REQ:
		rx_read_req(tp, hdr, ulpdu, ulpdu_len);
		break;
	case VD_OP_TERMINATE:
		/* never handled in place (rx_direct()): the payload is here */
		if (WARN_ON_ONCE(!pl->buf)) {
			vd_rx_fail(tp, VD_IW_RDMAP_CATASTROPHIC, NULL, ulpdu_len);
			break;
		}
		rx_terminate(tp, hdr, ulpdu);
		break;
	default:
		vd_rx_fail(tp, VD_IW_RDMAP_OPCODE, ulpdu, ulpdu_len);
		break;
	}
}

/* One whole FPDU of @len bytes (as its length field says) at @fpdu. */
void vd_rx_fpdu(struct vd_tp *tp, const u8 *fpdu, u32 len)
{
	const u8 *ulpdu = fpdu + VD_MPA_LEN_SIZE;
	u32 ulpdu_len = vd_rx_be16(fpdu);
	struct vd_rx_payload pl = {};
	struct vd_iw_hdr hdr;
	enum vd_iw_err err;

	/* CRC first: nothing of a corrupt FPDU is looked at or placed */
	err = vd_mpa_fpdu_verify(fpdu, len, tp->crc_rx);
	if (err) {
		vd_rx_fail(tp, err, NULL, ulpdu_len);
		return;
	}
	err = vd_iw_parse(ulpdu, ulpdu_len, &hdr);
	if (err) {
		vd_rx_fail(tp, err, ulpdu, ulpdu_len);
		return;
	}
	pl.buf = ulpdu + hdr.hdr_len;
	vd_rx_dispatch(tp, &hdr, ulpdu, ulpdu_len, &pl);
}

