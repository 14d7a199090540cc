// SPDX-License-Identifier: GPL-2.0
/*
 * The next message of the transmit half (tx.c): an RDMA Read Response the
 * peer asked for, the RTR of a peer-to-peer start, or the SQ's next work
 * request, read once from the shared ring and checked (opcode, segments,
 * fences, rights), or run here when it is a local memory operation (fast
 * registration, invalidation, window binding). Called with tx_mutex held
 * (transport.h).
 */
#include <linux/memcontrol.h>
#include <linux/minmax.h>
#include <linux/sched/mm.h>
#include <linux/string.h>
#include <linux/tcp.h>
#include <net/sock.h>

#include "device.h"
#include "mem.h"
#include "qp.h"
#include "stats.h"
#include "tpt.h"
#include "transport.h"

/* Our own segments when the socket has no MSS yet: the IPv4 minimum. */
#define VD_TP_DEFAULT_MSS	536U

static u32 tp_mss(struct vd_tp *tp)
{
	u32 mss = READ_ONCE(tcp_sk(tp->sk)->mss_cache);

	return mss ? mss : VD_TP_DEFAULT_MSS;
}

void vd_tx_msg_init(struct vd_tp *tp, u8 opcode, u32 len)
{
	struct vd_tx_msg *msg = &tp->msg;

	memset(msg, 0, sizeof(*msg));
	msg->active = true;
	msg->hdr.opcode = opcode;
	msg->len = len;
	msg->hdr_len = vd_iw_opcode_hdr_len(opcode);
	msg->max_payload = vd_fpdu_max_payload(tp_mss(tp), msg->hdr_len);
}

/* The RDMA Read Response at the head of the IRQ, if one waits. */
static bool tx_next_response(struct vd_tp *tp)
{
	struct vd_irq_entry e;

	spin_lock_bh(&tp->lock);
	if (tp->irq_head == tp->irq_tail) {
		spin_unlock_bh(&tp->lock);
		return false;
	}
	e = tp->irq[tp->irq_head % VD_MAX_IRD];
	spin_unlock_bh(&tp->lock);

	vd_tx_msg_init(tp, VD_OP_READ_RESP, e.size);
	tp->msg.hdr.stag = e.sink_stag;
	tp->msg.base_to = e.sink_to;
	tp->msg.mr = e.mr;
	tp->msg.mr_addr = e.src_to;
	tp->msg.response = true;
	return true;
}

/* RFC 6581: the initiator's zero-length ready-to-receive message. */
static void tx_start_rtr(struct vd_tp *tp)
{
	tp->tx_rtr = false;
	switch (tp->conn->mpa.rtr) {
	case VD_RTR_READ:
		vd_tx_msg_init(tp, VD_OP_READ_REQ, 0);
		tp->msg.hdr.msn = tp->msn[VD_QN_READ_REQ]++;
		spin_lock_bh(&tp->lock);
		tp->orq[tp->orq_tail % VD_MAX_ORD] =
			(struct vd_orq_entry){ .rtr = true };
		tp->orq_tail++;
		spin_unlock_bh(&tp->lock);
		break;
	case VD_RTR_SEND:
		vd_tx_msg_init(tp, VD_OP_SEND, 0);
		tp->msg.hdr.msn = tp->msn[VD_QN_SEND]++;
		break;
	default:
		vd_tx_msg_init(tp, VD_OP_WRITE, 0);
		break;
	}
}

/*
 * Copies the SQ WR @n places behind the oldest in flight into @tp->sqe,
 * under the SQ lock as qp.h asks. -ENOENT: none; -EIO: malformed (the QP
 * is entering Error, nothing from it on may run).
 */
static int tx_peek_wr(struct vd_tp *tp, u32 n, u32 *byte_len)
{
	struct vd_qp *qp = tp->qp;
	struct vd_wq *wq = &qp->sq;
	int ret = -ENOENT;

	spin_lock_bh(&wq->lock);
	if (!qp->destroyed && wq->tail - wq->head > n) {
		u32 slot = (wq->head + n) & (wq->depth - 1);

		if (wq->meta[slot].status) {
			ret = -EIO;
		} else {
			const void *copy = wq->copies +
					   (size_t)slot * wq->wqe_size;

			/* the WR's own bytes, not the whole slot */
			memcpy(tp->sqe, copy,
			       vd_qp_wqe_len(copy, false, &wq->lim));
			*byte_len = wq->meta[slot].byte_len;
			ret = 0;
		}
	}
	spin_unlock_bh(&wq->lock);
	return ret;
}

static bool tx_is_read(u8 op)
{
	return op == VIADUCT_OP_RDMA_READ || op == VIADUCT_OP_RDMA_READ_INV;
}

static bool tx_is_local(u8 op)
{
	return op == VIADUCT_OP_LOCAL_INV || op == VIADUCT_OP_FAST_REG ||
	       op == VIADUCT_OP_BIND_MW;
}

/* What qp.c does not check: the SGEs against the TPT, and what we lack. */
static u8 tx_check_wr(struct vd_tp *tp, const struct viaduct_sqe *sqe)
{
	const struct viaduct_sge *sge = (const void *)(sqe + 1);
	u32 rights = tx_is_read(sqe->opcode) ?
		     VD_RIGHT_LOCAL_WRITE : VD_RIGHT_LOCAL_READ;
	enum vd_access_status st;
	u32 i;

	if (tx_is_read(sqe->opcode) && !tp->ord)
		return VIADUCT_WC_LOC_QP_OP_ERR;
	/* opcodes the peer may not know: only where it said it does */
	if (sqe->flags & VIADUCT_SQE_IMMEDIATE && !tp->imm)
		return VIADUCT_WC_LOC_QP_OP_ERR;
	/* a local operation checks what it uses itself */
	if (tx_is_local(sqe->opcode) || (sqe->flags & VIADUCT_SQE_INLINE))
		return VIADUCT_WC_SUCCESS;
	for (i = 0; i < sqe->num_sge; i++) {
		st = vd_tpt_check(&tp->dev->tpt, sge[i].stag, tp->qp->pd,
				  tp->qp->qpn, rights, sge[i].addr,
				  sge[i].length, NULL);
		if (st != VD_ACCESS_OK)
			return vd_access_wc_status(st, false);
	}
	return VIADUCT_WC_SUCCESS;
}

static u8 tx_send_opcode(u8 op, u8 flags)
{
	bool se = flags & VIADUCT_SQE_SOLICITED;

	if (op == VIADUCT_OP_SEND_INV)
		return se ? VD_OP_SEND_SE_INV : VD_OP_SEND_INV;
	if (flags & VIADUCT_SQE_IMMEDIATE)
		return se ? VD_OP_SEND_SE_IMM : VD_OP_SEND_IMM;
	return se ? VD_OP_SEND_SE : VD_OP_SEND;
}

/* A window's bind: its one SGE names the range of the region. */
/*
 * The binding's memory (GFP_KERNEL_ACCOUNT in vd_mw_bind()) is charged to
 * the memory cgroup of the process that created the QP, as the stream's
 * buffers are (tp_alloc()), not to the transmit worker's.
 */
static u8 tx_bind_mw(struct vd_tp *tp, const struct viaduct_sqe *sqe)
{
	const struct viaduct_sge *sge = (const void *)(sqe + 1);
	struct mem_cgroup *old = set_active_memcg(tp->qp->memcg);
	int ret;

	ret = vd_mw_bind(&tp->dev->tpt, tp->qp->pd, tp->qp->qpn,
			 sqe->remote_stag, sge->stag, sge->addr, sge->length,
			 sqe->imm_data);
	set_active_memcg(old);
	return vd_mw_bind_status(ret);
}

/* A Fast-Register: its page list is charged like a window's binding. */
static u8 tx_fast_reg(struct vd_tp *tp, const struct viaduct_sqe *sqe)
{
	struct mem_cgroup *old = set_active_memcg(tp->qp->memcg);
	u8 status;

	status = vd_frmr_register(&tp->dev->tpt, tp->qp->pd, tp->qp->qpn,
				  sqe->remote_stag, sqe->remote_addr,
				  sqe->imm_data,
				  (const struct viaduct_sge *)(sqe + 1),
				  sqe->num_sge);
	set_active_memcg(old);
	return status;
}

/*
 * Local Invalidate, Fast-Register and Bind MW: executed here, in SQ order,
 * so that every later WR sees their effect. Returns the CQE status.
 */
static u8 tx_local_op(struct vd_tp *tp, const struct viaduct_sqe *sqe)
{
	struct vd_tpt *tpt = &tp->dev->tpt;
	enum vd_access_status st;

	if (sqe->opcode == VIADUCT_OP_BIND_MW)
		return tx_bind_mw(tp, sqe);
	if (sqe->opcode == VIADUCT_OP_FAST_REG)
		return tx_fast_reg(tp, sqe);
	st = vd_tpt_invalidate_sync(tpt, sqe->remote_stag, tp->qp->pd,
				    tp->qp->qpn, false);
	return vd_access_wc_status(st, false);
}

/*
 * A local fence holds a WR until every earlier one completed (the read
 * fence only waits for RDMA Reads); vd_tp_wr_finish() and
 * vd_tp_read_done() let it go.
 */
static bool tx_fence_holds(struct vd_tp *tp, const struct viaduct_sqe *sqe)
{
	bool hold;

	if (!(sqe->flags & VIADUCT_SQE_LOCAL_FENCE))
		return false;
	/* under @lock: a completion after it sees the flag and wakes us */
	spin_lock_bh(&tp->lock);
	hold = tp->sq_retired != tp->sq_started;
	WRITE_ONCE(tp->tx_fenced, hold);
	spin_unlock_bh(&tp->lock);
	return hold;
}

/*
 * Starts the next SQ WR, unless the read fence or the ORD holds it back
 * (it then waits for a Read Response; it never fails for that). Returns
 * true if it started or failed one.
 */
static bool tx_next_wr(struct vd_tp *tp)
{
	const struct viaduct_sqe *sqe = (const void *)tp->sqe;
	struct vd_tx_msg *msg = &tp->msg;
	u32 seq, reads, len = 0;
	u8 status;
	int ret;

	spin_lock_bh(&tp->lock);
	/* under @lock: rx.c may retire WRs, which moves the FIFO's head */
	ret = tx_peek_wr(tp, tp->sq_started - tp->sq_retired, &len);
	reads = tp->orq_tail - tp->orq_head;
	spin_unlock_bh(&tp->lock);
	if (ret)
		return false;
	if ((sqe->flags & VIADUCT_SQE_READ_FENCE) && reads)
		return false;
	if (tx_is_read(sqe->opcode) && tp->ord && reads >= tp->ord)
		return false;
	if (tx_fence_holds(tp, sqe))
		return false;

	status = tx_check_wr(tp, sqe);

	spin_lock_bh(&tp->lock);
	seq = tp->sq_started++;
	tp->sq_rec[seq & tp->sq_mask] = (struct vd_sq_rec){};
	if (!status && tx_is_read(sqe->opcode)) {
		const struct viaduct_sge *sge = (const void *)(sqe + 1);

		tp->orq[tp->orq_tail % VD_MAX_ORD] = (struct vd_orq_entry){
			.seq = seq,
			.sink_stag = sge->stag,
			.sink_to = sge->addr,
			.size = sge->length,
			.inv = sqe->opcode == VIADUCT_OP_RDMA_READ_INV,
		};
		tp->orq_tail++;
	}
	spin_unlock_bh(&tp->lock);

	if (!status && tx_is_local(sqe->opcode))
		status = tx_local_op(tp, sqe);

	if (status) {
		pr_debug("qp%u: SQ WR %u failed: status %u\n", tp->qp->qpn, seq,
			 status);
		tp->tx_failed = true;
		vd_tp_wr_finish(tp, seq, status, 0);
		return true;
	}
	if (tx_is_local(sqe->opcode)) {
		vd_tp_wr_finish(tp, seq, VIADUCT_WC_SUCCESS, 0);
		return true;
	}

	switch (sqe->opcode) {
	case VIADUCT_OP_SEND:
	case VIADUCT_OP_SEND_INV:
		vd_tx_msg_init(tp, tx_send_opcode(sqe->opcode, sqe->flags), len);
		msg->hdr.msn = tp->msn[VD_QN_SEND]++;
		msg->hdr.imm = sqe->imm_data;
		msg->hdr.inv_stag = sqe->remote_stag;
		break;
	case VIADUCT_OP_RDMA_WRITE:
		vd_tx_msg_init(tp, VD_OP_WRITE, len);
		msg->hdr.stag = sqe->remote_stag;
		msg->base_to = sqe->remote_addr;
		/* RFC 7306: an Immediate Data message follows the Write */
		if (sqe->flags & VIADUCT_SQE_IMMEDIATE) {
			msg->imm_follows = true;
			msg->imm = sqe->imm_data;
			msg->imm_se = sqe->flags & VIADUCT_SQE_SOLICITED;
		}
		break;
	default: {
		const struct viaduct_sge *sge = (const void *)(sqe + 1);

		vd_tx_msg_init(tp, VD_OP_READ_REQ, 0);
		msg->hdr.msn = tp->msn[VD_QN_READ_REQ]++;
		msg->hdr.sink_stag = sge->stag;
		msg->hdr.sink_to = sge->addr;
		msg->hdr.size = sge->length;
		msg->hdr.src_stag = sqe->remote_stag;
		msg->hdr.src_to = sqe->remote_addr;
		break;
	}
	}
	msg->wr = true;
	msg->seq = seq;
	msg->wr_len = len;
	if (sqe->flags & VIADUCT_SQE_INLINE) {
		msg->inline_data = (const u8 *)(sqe + 1);
	} else {
		msg->sge = (const struct viaduct_sge *)(sqe + 1);
		msg->num_sge = sqe->num_sge;
	}
	return true;
}

/* Responses first, then the RTR, then the SQ; true if there is work. */
bool vd_tx_next_msg(struct vd_tp *tp)
{
	if (READ_ONCE(tp->qp->state) != VIADUCT_QPS_RTS ||
	    READ_ONCE(tp->qp->destroyed) || READ_ONCE(tp->tx_hold))
		return false;
	if (tx_next_response(tp))
		return true;
	if (tp->tx_rtr) {
		tx_start_rtr(tp);
		return true;
	}
	if (tp->tx_failed)
		return false;
	return tx_next_wr(tp);
}
