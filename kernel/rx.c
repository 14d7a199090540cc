// SPDX-License-Identifier: GPL-2.0
/*
 * The receive half of the iWARP transport: the socket read in large
 * chunks by a work item, cut into whole FPDUs, each checked (MPA length
 * and CRC, DDP and RDMAP headers, MSN, MO, the TPT) and only then placed:
 * tagged data into registered regions, untagged data into posted
 * receives. Any violation ends the stream with a Terminate. transport.h
 * has the structures and the locking, Documentation/transport.rst the
 * design.
 */
#include <linux/jiffies.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/net.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uio.h>
#include <linux/workqueue.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "device.h"
#include "mem.h"
#include "qp.h"
#include "stats.h"
#include "tpt.h"
#include "transport.h"

static unsigned int rx_stall_ms = 60000;
module_param(rx_stall_ms, uint, 0644);
MODULE_PARM_DESC(rx_stall_ms,
		 "Time an FPDU may take to arrive whole once it began, in ms; then the stream ends with a Terminate (0: no limit)");

static bool rx_upcall_on = true;
module_param(rx_upcall_on, bool, 0644);
MODULE_PARM_DESC(rx_upcall_on,
		 "Receive in the socket's data_ready upcall when the stream is idle (else always in a work item)");

/* The MPA ULPDU_Length at the start of an FPDU (big endian). */
static u32 rx_be16(const u8 *p)
{
	return (u32)p[0] << 8 | p[1];
}

/* Access violations raise QP_ACCESS_ERR; every other error QP_FATAL. */
static u32 rx_event(u16 code)
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
	tp->rx_dead = true;
	vd_tp_terminate(tp, code, rx_event(code), ulpdu,
			ulpdu ? min_t(u32, ulpdu_len, VD_HDR_READ_REQ) : 0,
			ulpdu_len);
}

static void rx_fail(struct vd_tp *tp, enum vd_iw_err err, const u8 *ulpdu,
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
 * Copies @len bytes into a region the TPT check returned, unless it was
 * invalidated or deregistered since (-ESTALE): nothing is placed into a
 * region once its access ended.
 */
static int rx_place(struct vd_mr *mr, u64 addr, const void *src, u32 len)
{
	int ret;

	/* what the check lets through has pages (memory.rst, STag types) */
	if (WARN_ON_ONCE(!mr->umem))
		return -EFAULT;
	if (!vd_mr_use_begin(mr))
		return -ESTALE;
	ret = vd_umem_copy_to(mr->umem, vd_mr_offset(mr, addr), src, len);
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
		rx_fail(tp, VD_IW_DDP_CATASTROPHIC, ulpdu, ulpdu_len);
}

/* --- Tagged: RDMA Write, RDMA Read Response -------------------------- */

static void rx_write(struct vd_tp *tp, const struct vd_iw_hdr *hdr,
		     const u8 *ulpdu, u32 ulpdu_len)
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
		int ret = rx_place(mr, hdr->to, ulpdu + hdr->hdr_len, len);

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
			 const u8 *ulpdu, u32 ulpdu_len)
{
	u32 len = hdr->payload_len, stag, room;
	enum vd_access_status st;
	struct vd_orq_entry *e;
	struct vd_mr *mr = NULL;
	u64 to;

	spin_lock_bh(&tp->lock);
	if (tp->orq_head == tp->orq_tail) {
		spin_unlock_bh(&tp->lock);
		rx_fail(tp, VD_IW_RDMAP_OPCODE, ulpdu, ulpdu_len);
		return;
	}
	/* only rx.c moves the head or changes @done: @e stays ours */
	e = &tp->orq[tp->orq_head % VD_MAX_ORD];
	spin_unlock_bh(&tp->lock);
	stag = e->sink_stag;
	to = e->sink_to + e->done;
	room = e->size - e->done;

	if (hdr->stag != stag) {
		rx_fail(tp, VD_IW_DDP_T_STAG, ulpdu, ulpdu_len);
		return;
	}
	if (hdr->to != to || len > room || (hdr->last && len != room)) {
		rx_fail(tp, VD_IW_DDP_T_BOUNDS, ulpdu, ulpdu_len);
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
		int ret = rx_place(mr, to, ulpdu + hdr->hdr_len, len);

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
				memcpy(tp->rqe,
				       wq->copies + (size_t)slot * wq->wqe_size,
				       wq->wqe_size);
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
		rx_fail(tp, err, ulpdu, ulpdu_len);
	return !err;
}

/* Places payload at message offset @mo through the receive's SGEs. */
static u8 rx_place_sges(struct vd_tp *tp, u32 mo, const u8 *src, u32 len)
{
	const struct viaduct_rqe *rqe = (const void *)tp->rqe;
	const struct viaduct_sge *sge = (const void *)(rqe + 1);
	enum vd_access_status st;
	struct vd_mr *mr;
	u32 i, n, off = mo;
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
		ret = rx_place(mr, sge[i].addr + off, src, n);
		vd_mr_put(mr);
		if (ret)
			return VIADUCT_WC_LOC_PROT_ERR;
		src += n;
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
		    const u8 *ulpdu, u32 ulpdu_len)
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
		rx_fail(tp, VD_IW_DDP_UT_MSN_RANGE, ulpdu, ulpdu_len);
		return;
	}
	err = vd_ddp_mo_check(hdr->mo, tp->rx_recv_len);
	if (err) {
		rx_fail(tp, err, ulpdu, ulpdu_len);
		return;
	}
	err = vd_ddp_fits(hdr->mo, len, tp->rx_recv_cap);
	if (err) {
		rx_fail_recv(tp, VIADUCT_WC_LOC_LEN_ERR);
		rx_fail(tp, err, ulpdu, ulpdu_len);
		return;
	}
	status = rx_place_sges(tp, hdr->mo, ulpdu + hdr->hdr_len, len);
	if (status) {
		/* our receive's memory: a local error, not the peer's */
		rx_fail_recv(tp, status);
		rx_fail(tp, VD_IW_RDMAP_CATASTROPHIC, NULL, ulpdu_len);
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
		rx_fail(tp, VD_IW_DDP_UT_MSN_RANGE, ulpdu, ulpdu_len);
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
		rx_fail(tp, err, ulpdu, ulpdu_len);
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
	tp->rx_dead = true;
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

/* One whole FPDU of @len bytes (as its length field says) at @fpdu. */
static void rx_fpdu(struct vd_tp *tp, const u8 *fpdu, u32 len)
{
	const u8 *ulpdu = fpdu + VD_MPA_LEN_SIZE;
	u32 ulpdu_len = rx_be16(fpdu);
	struct vd_iw_hdr hdr;
	enum vd_iw_err err;

	/* CRC first: nothing of a corrupt FPDU is looked at or placed */
	err = vd_mpa_fpdu_verify(fpdu, len, tp->crc_rx);
	if (err) {
		rx_fail(tp, err, NULL, ulpdu_len);
		return;
	}
	err = vd_iw_parse(ulpdu, ulpdu_len, &hdr);
	if (err) {
		rx_fail(tp, err, ulpdu, ulpdu_len);
		return;
	}
	if (tp->rx_rtr && hdr.opcode != VD_OP_TERMINATE &&
	    rx_rtr(tp, &hdr, ulpdu, ulpdu_len))
		return;
	if (!tp->imm && rx_imm_opcode(hdr.opcode)) {
		/* we did not say we take it: as any unexpected opcode */
		rx_fail(tp, VD_IW_RDMAP_OPCODE, ulpdu, ulpdu_len);
		return;
	}

	switch (hdr.opcode) {
	case VD_OP_WRITE:
		rx_write(tp, &hdr, ulpdu, ulpdu_len);
		break;
	case VD_OP_READ_RESP:
		rx_read_resp(tp, &hdr, ulpdu, ulpdu_len);
		break;
	case VD_OP_SEND:
	case VD_OP_SEND_SE:
	case VD_OP_SEND_INV:
	case VD_OP_SEND_SE_INV:
	case VD_OP_SEND_IMM:
	case VD_OP_SEND_SE_IMM:
		rx_send(tp, &hdr, ulpdu, ulpdu_len);
		break;
	case VD_OP_IMM:
	case VD_OP_IMM_SE:
		rx_imm(tp, &hdr, ulpdu, ulpdu_len);
		break;
	case VD_OP_READ_REQ:
		rx_read_req(tp, &hdr, ulpdu, ulpdu_len);
		break;
	case VD_OP_TERMINATE:
		rx_terminate(tp, &hdr, ulpdu);
		break;
	default:
		rx_fail(tp, VD_IW_RDMAP_OPCODE, ulpdu, ulpdu_len);
		break;
	}
}

/*
 * The length of the FPDU at the head of @tp->rx_buf if all of it is
 * there, else 0. The 16-bit length field cannot announce more than
 * VD_TP_BUF_SIZE bytes, so the buffer holds any FPDU whole.
 */
static u32 rx_next(const struct vd_tp *tp)
{
	u32 have = tp->rx_end - tp->rx_start, len;

	if (have < VD_MPA_LEN_SIZE)
		return 0;
	len = vd_mpa_fpdu_len(rx_be16(tp->rx_buf + tp->rx_start));
	return len <= have ? len : 0;
}

/* The bytes of the FPDU not yet whole go to the front of @tp->rx_buf. */
static void rx_compact(struct vd_tp *tp)
{
	u32 have = tp->rx_end - tp->rx_start;

	if (tp->rx_start) {
		memmove(tp->rx_buf, tp->rx_buf + tp->rx_start, have);
		tp->rx_start = 0;
		tp->rx_end = have;
	}
}

/*
 * The ULPDU bytes vd_iw_parse() reads of a ULPDU of @ulpdu_len bytes whose
 * two control bytes are at @ulpdu: those two if the opcode is unknown,
 * else the opcode's headers, and never more than the ULPDU.
 */
static u32 rx_parse_needs(const u8 *ulpdu, u32 ulpdu_len)
{
	u8 op = ulpdu[1] & VD_RDMAP_OP_MASK;
	u32 need = vd_iw_opcode_valid(op) ? vd_iw_opcode_hdr_len(op) : 2;

	return min(need, ulpdu_len);
}

/*
 * The FPDU at the head of @tp->rx_buf is not whole and the socket is
 * empty. Its headers are checked as far as they arrived (the ULPDU length
 * and what vd_iw_parse() checks, which needs no payload): a bad one is
 * answered now, not when (if ever) the rest comes. Returns false if the
 * stream failed.
 */
static bool rx_check_partial(struct vd_tp *tp)
{
	const u8 *ulpdu = tp->rx_buf + tp->rx_start + VD_MPA_LEN_SIZE;
	u32 have = tp->rx_end - tp->rx_start, ulpdu_len, got;
	struct vd_iw_hdr hdr;
	enum vd_iw_err err;

	if (have < VD_MPA_LEN_SIZE + 2)
		return true;
	ulpdu_len = rx_be16(ulpdu - VD_MPA_LEN_SIZE);
	got = have - VD_MPA_LEN_SIZE;
	if (got < rx_parse_needs(ulpdu, ulpdu_len))
		return true;
	err = vd_iw_parse(ulpdu, ulpdu_len, &hdr);
	if (!err)
		return true;
	pr_debug("qp%u: bad headers of an FPDU not whole (%u of %u bytes)\n",
		 tp->qp->qpn, have, vd_mpa_fpdu_len(ulpdu_len));
	tp->rx_dead = true;
	vd_tp_terminate(tp, vd_term_code(err), rx_event(vd_term_code(err)),
			ulpdu, min_t(u32, got, VD_HDR_READ_REQ), ulpdu_len);
	return false;
}

/*
 * An FPDU that is not whole when the socket is empty must become whole
 * within rx_stall_ms of that moment: a timer queues the receive work at
 * the deadline, and the stream ends then with an MPA "ULPDU length
 * mismatch" Terminate. Handling a whole FPDU clears the deadline.
 */
static void rx_check_stall(struct vd_tp *tp)
{
	unsigned int ms = READ_ONCE(rx_stall_ms);

	if (tp->rx_end == tp->rx_start || !ms)
		return;
	if (!tp->rx_stall_armed) {
		tp->rx_stall_armed = true;
		tp->rx_stall_at = jiffies + msecs_to_jiffies(ms);
		if (!READ_ONCE(tp->stopping))
			mod_timer(&tp->rx_stall, tp->rx_stall_at);
		return;
	}
	if (time_before(jiffies, tp->rx_stall_at))
		return;
	pr_debug("qp%u: an FPDU stalled with %u bytes in\n", tp->qp->qpn,
		 tp->rx_end - tp->rx_start);
	rx_fail(tp, VD_IW_MPA_FPDU, NULL,
		tp->rx_end - tp->rx_start >= VD_MPA_LEN_SIZE ?
		rx_be16(tp->rx_buf + tp->rx_start) : 0);
}

void vd_rx_stall_timer(struct timer_list *t)
{
	struct vd_tp *tp = from_timer(tp, t, rx_stall);

	vd_tp_queue_rx(tp);
}

/*
 * Reads as much as the socket has and @tp->rx_buf can take, behind the
 * bytes of the FPDU not yet whole, which go to the front first. Returns
 * what kernel_recvmsg() does: the bytes read, 0 at the end of the stream,
 * -EAGAIN when the socket is empty, or another error.
 */
static int rx_read(struct vd_tp *tp)
{
	struct msghdr m = {};
	struct kvec kv;
	int ret;

	rx_compact(tp);
	/* a partial FPDU is shorter than the buffer: there is room */
	kv.iov_base = tp->rx_buf + tp->rx_end;
	kv.iov_len = VD_TP_BUF_SIZE - tp->rx_end;
	ret = kernel_recvmsg(tp->sock, &m, &kv, 1, kv.iov_len,
			     MSG_DONTWAIT | MSG_NOSIGNAL);
	if (ret > 0)
		tp->rx_end += ret;
	return ret;
}

/* tcp_read_sock() actor: copies what @tp->rx_buf takes of @skb. */
static int rx_actor(read_descriptor_t *desc, struct sk_buff *skb,
		    unsigned int offset, size_t len)
{
	struct vd_tp *tp = desc->arg.data;
	u32 n = min_t(size_t, len, VD_TP_BUF_SIZE - tp->rx_end);

	if (!n || skb_copy_bits(skb, offset, tp->rx_buf + tp->rx_end, n)) {
		desc->count = 0;
		return 0;
	}
	tp->rx_end += n;
	if (tp->rx_end == VD_TP_BUF_SIZE)
		desc->count = 0;
	return n;
}

/*
 * rx_read() for the data_ready upcall, the socket locked by the caller:
 * takes what is queued with tcp_read_sock(). Returns the bytes read,
 * -EAGAIN when the socket is empty, or -EPIPE for what only recvmsg()
 * answers, which the work item then reads: the end of the stream, a
 * socket error, urgent data (tcp_read_sock() stops in front of it).
 */
static int rx_read_sock(struct vd_tp *tp)
{
	read_descriptor_t desc = { .arg.data = tp, .count = 1 };
	struct sock *sk = tp->sk;
	int ret;

	if (READ_ONCE(sk->sk_err) ||
	    (READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN) ||
	    READ_ONCE(tcp_sk(sk)->urg_data))
		return -EPIPE;
	rx_compact(tp);
	ret = tcp_read_sock(sk, &desc, rx_actor);
	if (ret > 0)
		return ret;
	return skb_queue_empty_lockless(&sk->sk_receive_queue) ? -EAGAIN :
								  -EPIPE;
}

/*
 * Whether the whole FPDU at @fpdu must be handled in process context: an
 * invalidation waits for the copies in progress on its region
 * (vd_tpt_invalidate_sync() sleeps), which the receive upcall cannot.
 * That is a Send with Invalidate, and the last segment of a Read
 * Response to a Read that invalidates its sink.
 */
static bool rx_needs_process(const struct vd_tp *tp, const u8 *fpdu, u32 len)
{
	const u8 *ulpdu = fpdu + VD_MPA_LEN_SIZE;
	u8 op;

	if (len < VD_MPA_LEN_SIZE + 2)
		return false;
	op = ulpdu[1] & VD_RDMAP_OP_MASK;
	if (op == VD_OP_SEND_INV || op == VD_OP_SEND_SE_INV)
		return true;
	/* only this receiver moves the ORQ's head */
	return op == VD_OP_READ_RESP && (ulpdu[0] & VD_DDP_L) &&
	       tp->orq_head != READ_ONCE(tp->orq_tail) &&
	       tp->orq[tp->orq_head % VD_MAX_ORD].inv;
}

/* An FPDU was handled: count who did (stats.h). */
static void rx_count(bool upcall)
{
	if (upcall)
		vd_stat_inc(rx_upcall);
	else
		vd_stat_inc(rx_deferred);
}

/*
 * One turn of the receiver, which @tp->rx_busy makes the only one: handles
 * every whole FPDU in @tp->rx_buf, one at a time, and reads the socket
 * again when none is left; until the socket is empty (data_ready comes
 * again) or the turn's @budget is spent. Outside RTS and Closing, once the
 * QP is destroyed, and after the stream died (a Terminate sent or
 * received), nothing more is handled or read: what is buffered stays
 * there and goes with the stream. @upcall: in sk_data_ready (reads with
 * tcp_read_sock()), else the work item (recvmsg()). Returns true if the
 * work item must run (again): budget spent, or what only it reads.
 */
static bool rx_run(struct vd_tp *tp, int budget, bool upcall)
{
	u32 len, state;
	int ret;

	while (!tp->rx_dead && !READ_ONCE(tp->stopping)) {
		state = READ_ONCE(tp->qp->state);
		if ((state != VIADUCT_QPS_RTS && state != VIADUCT_QPS_CLOSING) ||
		    READ_ONCE(tp->qp->destroyed))
			return false;
		if (budget <= 0)
			return true;
		len = rx_next(tp);
		if (len) {
			/* the work item takes it, and what follows, in order */
			if (upcall &&
			    rx_needs_process(tp, tp->rx_buf + tp->rx_start, len))
				return true;
			rx_fpdu(tp, tp->rx_buf + tp->rx_start, len);
			rx_count(upcall);
			tp->rx_start += len;
			budget -= len;
			tp->rx_stall_armed = false;
			continue;
		}
		ret = upcall ? rx_read_sock(tp) : rx_read(tp);
		if (ret == -EAGAIN) {
			if (rx_check_partial(tp))
				rx_check_stall(tp);
			return false;
		}
		if (ret == -EPIPE && upcall)
			return true;
		if (ret <= 0) {
			pr_debug("qp%u: stream %s: %d (%u bytes of an FPDU unread)\n",
				 tp->qp->qpn, ret ? "failed" : "closed by the peer",
				 ret, tp->rx_end - tp->rx_start);
			tp->rx_dead = true;
			vd_conn_closed(tp->conn, ret);
			return false;
		}
	}
	return false;
}

/*
 * The receive work item: what the upcall leaves (a budget spent, the end
 * of the stream, errors, urgent data), and what came while it could not
 * run. If the upcall is at work, it reads until the socket is empty.
 */
void vd_rx_work(struct work_struct *work)
{
	struct vd_tp *tp = container_of(work, struct vd_tp, rx_work);
	bool again;

	if (test_and_set_bit_lock(VD_TP_RX_BUSY, &tp->rx_busy))
		return;
	again = rx_run(tp, VD_TP_BUDGET, false);
	clear_bit_unlock(VD_TP_RX_BUSY, &tp->rx_busy);
	if (again)
		vd_tp_queue_rx(tp);
}

/*
 * sk_data_ready, with the socket locked (bottom half in softirq, or its
 * owner in release_sock()): handles the FPDUs right here when nobody else
 * receives and no work is queued ahead, bounded by VD_TP_UPCALL_BUDGET;
 * else, or for what it leaves, the work item. False: queue the work.
 */
static bool rx_upcall(struct vd_tp *tp)
{
	bool again;

	if (!READ_ONCE(rx_upcall_on) || READ_ONCE(tp->stopping) ||
	    work_pending(&tp->rx_work))
		return false;
	if (test_and_set_bit_lock(VD_TP_RX_BUSY, &tp->rx_busy))
		return false;
	again = rx_run(tp, VD_TP_UPCALL_BUDGET, true);
	clear_bit_unlock(VD_TP_RX_BUSY, &tp->rx_busy);
	return !again;
}

void vd_rx_data_ready(struct sock *sk)
{
	struct vd_tp *tp;

	read_lock_bh(&sk->sk_callback_lock);
	rcu_read_lock();
	tp = vd_tp_lookup(sk);
	if (tp && !rx_upcall(tp))
		vd_tp_queue_rx(tp);
	rcu_read_unlock();
	read_unlock_bh(&sk->sk_callback_lock);
}
