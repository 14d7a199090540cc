// SPDX-License-Identifier: GPL-2.0
/*
 * The pure rules of queue pairs (qp.c): which state transitions a consumer
 * may ask for, what create attributes mean in sizes, and which SQ and RQ
 * WQEs are well formed. No QP, no locks; the KUnit suite viaduct_qp
 * checks them against tables of its own.
 */
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/overflow.h>
#include <kunit/visibility.h>

#include "qp.h"
#include "ring.h"
#include "viaduct.h"

#define VD_QP_ATTR_VALUES	(VIADUCT_QP_ATTR_ACCESS | VIADUCT_QP_ATTR_ORD | \
				 VIADUCT_QP_ATTR_IRD)
#define VD_QP_ACCESS_ALL	(VIADUCT_QP_ACCESS_REMOTE_WRITE | \
				 VIADUCT_QP_ACCESS_REMOTE_READ)
#define VD_RELIABILITY_ALL	(VIADUCT_RELIABILITY_UNRELIABLE | \
				 VIADUCT_RELIABILITY_RELIABLE_DELIVERY | \
				 VIADUCT_RELIABILITY_RELIABLE_RECEPTION)
#define VD_QP_FLAGS_ALL		VIADUCT_QP_F_POLLED

/**
 * vd_qp_check_transition() - whether MODIFY_QP may move a QP
 * @cur: the current state (VIADUCT_QPS_*)
 * @next: the state asked for (@cur if the mask has no state)
 * @mask: the request's VIADUCT_QP_ATTR_* mask
 * @has_llp: the QP is bound to an LLP stream
 *
 * The modify rules of the verbs draft (QP state table): which (cur, next)
 * pairs a consumer may ask for, and whether the request may also change
 * attributes. Closing and Terminate are left by the transport only.
 *
 * Context: Any context; a pure function.
 * Return: 0 or -EINVAL.
 */
int vd_qp_check_transition(u32 cur, u32 next, u32 mask, bool has_llp)
{
	bool attrs = mask & VD_QP_ATTR_VALUES;

	if (!mask || mask & ~VIADUCT_QP_ATTR_ALL)
		return -EINVAL;
	if (cur > VIADUCT_QPS_MAX || next > VIADUCT_QPS_MAX)
		return -EINVAL;

	switch (cur) {
	case VIADUCT_QPS_IDLE:
		switch (next) {
		case VIADUCT_QPS_IDLE:
			return 0;
		case VIADUCT_QPS_RTS:
			return has_llp ? 0 : -EINVAL;
		case VIADUCT_QPS_ERROR:
			return attrs ? -EINVAL : 0;
		default:
			return -EINVAL;
		}
	case VIADUCT_QPS_RTS:
		switch (next) {
		case VIADUCT_QPS_RTS:
			return 0;
		case VIADUCT_QPS_CLOSING:
		case VIADUCT_QPS_TERMINATE:
		case VIADUCT_QPS_ERROR:
			return attrs ? -EINVAL : 0;
		default:
			return -EINVAL;
		}
	case VIADUCT_QPS_ERROR:
		return next == VIADUCT_QPS_IDLE && !attrs ? 0 : -EINVAL;
	default:
		return -EINVAL;
	}
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_check_transition);

/**
 * vd_qp_check_modify() - MODIFY_QP's values
 * @m: the request
 *
 * Checks the attributes of @m->mask: access bits of VIADUCT_QP_ACCESS_*
 * only, ORD and IRD up to the device limits.
 *
 * Context: Any context; a pure function.
 * Return: 0 or -EINVAL.
 */
int vd_qp_check_modify(const struct viaduct_modify_qp *m)
{
	if (m->mask & VIADUCT_QP_ATTR_ACCESS && m->access & ~VD_QP_ACCESS_ALL)
		return -EINVAL;
	if (m->mask & VIADUCT_QP_ATTR_ORD && m->ord > VD_MAX_ORD)
		return -EINVAL;
	if (m->mask & VIADUCT_QP_ATTR_IRD && m->ird > VD_MAX_IRD)
		return -EINVAL;
	return 0;
}

static u32 wqe_size(u32 hdr, u32 payload)
{
	return max_t(u32, VD_QP_MIN_WQE_SIZE, roundup_pow_of_two(hdr + payload));
}

/**
 * vd_qp_caps() - the sizes of a create request
 * @a: the request
 * @c: filled with the depths (in flight and ring slots), slot sizes and
 *     the limits the slots can really hold (none for an RQ on an SRQ)
 *
 * Context: Any context; a pure function.
 * Return: 0; -EOPNOTSUPP for Reliable Reception; -EINVAL for anything else
 * out of range.
 */
int vd_qp_caps(const struct viaduct_create_qp *a, struct vd_qp_caps *c)
{
	const u32 sqe = sizeof(struct viaduct_sqe);
	const u32 rqe = sizeof(struct viaduct_rqe);
	const u32 sge = sizeof(struct viaduct_sge);
	u32 msg = a->max_msg_size ? a->max_msg_size : (u32)VD_MAX_MSG_SIZE;

	if (!is_power_of_2(a->reliability) ||
	    a->reliability & ~VD_RELIABILITY_ALL)
		return -EINVAL;
	/* completions come when the data is in TCP, not placed at the peer */
	if (a->reliability == VIADUCT_RELIABILITY_RELIABLE_RECEPTION)
		return -EOPNOTSUPP;
	if (a->flags & ~VD_QP_FLAGS_ALL || a->access & ~VD_QP_ACCESS_ALL)
		return -EINVAL;
	if (!a->sq_depth || a->sq_depth > VD_MAX_QP_WR)
		return -EINVAL;
	/* on an SRQ the QP has no receive queue of its own */
	if (a->srq_handle ? a->rq_depth || a->max_recv_sge :
	    !a->rq_depth || a->rq_depth > VD_MAX_QP_WR)
		return -EINVAL;
	if (a->max_send_sge > VD_MAX_SGE || a->max_recv_sge > VD_MAX_SGE ||
	    a->max_inline > VD_MAX_INLINE)
		return -EINVAL;
	if (a->ord > VD_MAX_ORD || a->ird > VD_MAX_IRD ||
	    a->max_msg_size > VD_MAX_MSG_SIZE)
		return -EINVAL;

	c->sq_depth = roundup_pow_of_two(a->sq_depth);
	c->rq_depth = a->rq_depth ? roundup_pow_of_two(a->rq_depth) : 0;
	/* a ring of fewer slots than WRs in flight, or as many */
	if (a->sq_ring_depth > c->sq_depth || a->rq_ring_depth > c->rq_depth)
		return -EINVAL;
	c->sq_ring_depth = a->sq_ring_depth ?
			   roundup_pow_of_two(a->sq_ring_depth) : c->sq_depth;
	c->rq_ring_depth = a->rq_ring_depth ?
			   roundup_pow_of_two(a->rq_ring_depth) : c->rq_depth;
	c->sq_wqe_size = wqe_size(sqe, max(a->max_send_sge * sge,
					   a->max_inline));
	c->rq_wqe_size = wqe_size(rqe, a->max_recv_sge * sge);
	/* Report what the slots can really hold, within the device limits. */
	c->sq.max_sge = min(VD_MAX_SGE, (c->sq_wqe_size - sqe) / sge);
	c->sq.max_inline = min(VD_MAX_INLINE, c->sq_wqe_size - sqe);
	c->sq.max_msg_size = msg;
	c->rq.max_sge = min(VD_MAX_SGE, (c->rq_wqe_size - rqe) / sge);
	c->rq.max_inline = 0;
	c->rq.max_msg_size = msg;
	if (a->srq_handle) {
		/* the SRQ's slots and limits apply */
		c->rq_depth = 0;
		c->rq_ring_depth = 0;
		c->rq_wqe_size = 0;
		c->rq.max_sge = 0;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_caps);

static bool sum_sges(const struct viaduct_sge *sge, u32 n, u32 *total)
{
	u32 i, sum = 0;

	for (i = 0; i < n; i++)
		if (check_add_overflow(sum, sge[i].length, &sum))
			return false;
	*total = sum;
	return true;
}

/*
 * Local Invalidate, Fast-Register and Bind MW move no data: no inline
 * payload, no solicited event. A Local Invalidate has no SGE and no
 * address; a Fast-Register's SGEs are its page list (at least one), a
 * bind's one SGE the range of the region; their access bits ride in
 * @imm_data without VIADUCT_SQE_IMMEDIATE (frmr.c, mw.c check them).
 * Neither has a message length: *len is 0.
 */
static u8 check_local_op(const struct viaduct_sqe *sqe,
			 const struct vd_wqe_limits *lim, u32 *len)
{
	const struct viaduct_sge *sge = (const void *)(sqe + 1);
	u32 total;

	if (sqe->flags & (VIADUCT_SQE_SOLICITED | VIADUCT_SQE_INLINE |
			  VIADUCT_SQE_IMMEDIATE) || sqe->length)
		return VIADUCT_WC_LOC_QP_OP_ERR;
	if (sqe->opcode == VIADUCT_OP_LOCAL_INV) {
		if (sqe->num_sge || sqe->remote_addr || sqe->imm_data)
			return VIADUCT_WC_LOC_QP_OP_ERR;
	} else if (sqe->opcode == VIADUCT_OP_BIND_MW) {
		/* one SGE: the region's range; the rights in @imm_data */
		if (sqe->num_sge != 1 || sqe->remote_addr)
			return VIADUCT_WC_LOC_QP_OP_ERR;
	} else {
		if (!sqe->num_sge || sqe->num_sge > lim->max_sge)
			return VIADUCT_WC_LOC_LEN_ERR;
		if (!sum_sges(sge, sqe->num_sge, &total))
			return VIADUCT_WC_LOC_LEN_ERR;
	}
	*len = 0;
	return VIADUCT_WC_SUCCESS;
}

/**
 * vd_qp_check_sqe() - validate a private copy of an SQ slot
 * @slot: the copy (vd_qp_copy_wqe()): the header and what it declares
 *        within @lim; nothing behind that is read
 * @lim: the SQ's limits
 * @len: set to the message length (0 for a local operation)
 *
 * Context: Any context; a pure function.
 * Return: 0 (VIADUCT_WC_SUCCESS) or the CQE status the WQE completes with.
 */
u8 vd_qp_check_sqe(const void *slot, const struct vd_wqe_limits *lim,
		   u32 *len)
{
	const struct viaduct_sqe *sqe = slot;
	const struct viaduct_sge *sge = slot + sizeof(*sqe);
	u8 op = sqe->opcode, flags = sqe->flags;
	u32 total;

	if (op > VIADUCT_OP_MAX || flags & ~VIADUCT_SQE_FLAGS_ALL)
		return VIADUCT_WC_LOC_QP_OP_ERR;
	if (op == VIADUCT_OP_LOCAL_INV || op == VIADUCT_OP_FAST_REG ||
	    op == VIADUCT_OP_BIND_MW)
		return check_local_op(sqe, lim, len);
	if (op == VIADUCT_OP_RDMA_READ_INV)
		op = VIADUCT_OP_RDMA_READ;	/* the same rules */
	/* a solicited event needs a receive at the peer to complete */
	if (flags & VIADUCT_SQE_SOLICITED && op != VIADUCT_OP_SEND &&
	    op != VIADUCT_OP_SEND_INV &&
	    !(op == VIADUCT_OP_RDMA_WRITE && flags & VIADUCT_SQE_IMMEDIATE))
		return VIADUCT_WC_LOC_QP_OP_ERR;
	/* Send with Invalidate carries the STag where immediate data goes */
	if (flags & VIADUCT_SQE_IMMEDIATE ?
	    op == VIADUCT_OP_RDMA_READ || op == VIADUCT_OP_SEND_INV :
	    sqe->imm_data != 0)
		return VIADUCT_WC_LOC_QP_OP_ERR;
	if (op == VIADUCT_OP_SEND && (sqe->remote_stag || sqe->remote_addr))
		return VIADUCT_WC_LOC_QP_OP_ERR;
	if (op == VIADUCT_OP_SEND_INV && sqe->remote_addr)
		return VIADUCT_WC_LOC_QP_OP_ERR;

	if (flags & VIADUCT_SQE_INLINE) {
		if (op == VIADUCT_OP_RDMA_READ || sqe->num_sge)
			return VIADUCT_WC_LOC_QP_OP_ERR;
		if (sqe->length > lim->max_inline)
			return VIADUCT_WC_LOC_LEN_ERR;
		total = sqe->length;
	} else {
		if (sqe->length)
			return VIADUCT_WC_LOC_QP_OP_ERR;
		if (sqe->num_sge > lim->max_sge)
			return VIADUCT_WC_LOC_LEN_ERR;
		if (op == VIADUCT_OP_RDMA_READ && sqe->num_sge != 1)
			return VIADUCT_WC_LOC_LEN_ERR;
		if (!sum_sges(sge, sqe->num_sge, &total))
			return VIADUCT_WC_LOC_LEN_ERR;
	}
	if (total > lim->max_msg_size)
		return VIADUCT_WC_LOC_LEN_ERR;
	*len = total;
	return VIADUCT_WC_SUCCESS;
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_check_sqe);

/**
 * vd_qp_check_rqe() - validate a private copy of an RQ slot
 * @slot: the copy (vd_qp_copy_wqe()), as for vd_qp_check_sqe()
 * @lim: the RQ's (or SRQ's) limits
 * @len: set to the total length of its SGEs
 *
 * Context: Any context; a pure function.
 * Return: 0 (VIADUCT_WC_SUCCESS) or the CQE status the WQE completes with.
 */
u8 vd_qp_check_rqe(const void *slot, const struct vd_wqe_limits *lim,
		   u32 *len)
{
	const struct viaduct_rqe *rqe = slot;
	const struct viaduct_sge *sge = slot + sizeof(*rqe);
	u32 total;

	if (rqe->reserved0 || rqe->reserved1)
		return VIADUCT_WC_LOC_QP_OP_ERR;
	if (rqe->num_sge > lim->max_sge)
		return VIADUCT_WC_LOC_LEN_ERR;
	if (!sum_sges(sge, rqe->num_sge, &total) || total > lim->max_msg_size)
		return VIADUCT_WC_LOC_LEN_ERR;
	*len = total;
	return VIADUCT_WC_SUCCESS;
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_check_rqe);

/**
 * vd_qp_wqe_len() - how many bytes of its slot a WQE occupies
 * @wqe: a private copy of at least the WQE's header (struct viaduct_rqe if
 *       @rq, else struct viaduct_sqe)
 * @rq: the WQE is a receive
 * @lim: the queue's limits
 *
 * The header and what it declares behind it: @num_sge SGEs, or for an SQ
 * WQE with VIADUCT_SQE_INLINE @length bytes of payload. A count beyond
 * @lim declares nothing: vd_qp_check_sqe() and vd_qp_check_rqe() fail such
 * a WQE on its header alone and read nothing behind it. Within @lim the
 * WQE fits its slot (vd_qp_caps(), and the SRQ's caps likewise).
 *
 * Context: Any context; a pure function.
 * Return: the WQE's length in bytes, at least its header's.
 */
u32 vd_qp_wqe_len(const void *wqe, bool rq, const struct vd_wqe_limits *lim)
{
	const struct viaduct_sqe *sqe = wqe;
	const struct viaduct_rqe *rqe = wqe;
	const u32 sge = sizeof(struct viaduct_sge);

	if (rq)
		return sizeof(*rqe) +
		       (rqe->num_sge > lim->max_sge ? 0 : rqe->num_sge * sge);
	if (sqe->flags & VIADUCT_SQE_INLINE)
		return sizeof(*sqe) +
		       (sqe->length > lim->max_inline ? 0 : sqe->length);
	return sizeof(*sqe) +
	       (sqe->num_sge > lim->max_sge ? 0 : sqe->num_sge * sge);
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_wqe_len);

/**
 * vd_qp_copy_wqe() - copy a WQE from its ring slot into private memory
 * @dst: the private copy, room for a whole slot
 * @slots: the ring's slots, which userspace fills
 * @idx: the WQE's free-running index
 * @entries: the ring's slots, a power of two
 * @slot_size: bytes per slot
 * @rq: the ring is an RQ or SRQ, else an SQ
 * @lim: the queue's limits
 *
 * Copies the header, then only what the copied header declares within
 * @lim (vd_qp_wqe_len()), so that a queue with room for hundreds of SGEs
 * per WQE does not pay for a whole slot on a WQE that uses a few. Each
 * byte of the slot is read once, and the count that sizes the second
 * copy is the one in @dst, which the checks then read: a concurrent
 * rewrite of the slot cannot make them disagree. Bytes of @dst behind the
 * WQE keep what they held; nothing reads them.
 *
 * Context: Any context.
 * Return: the bytes copied, vd_qp_wqe_len() of @dst.
 */
u32 vd_qp_copy_wqe(void *dst, const void *slots, u32 idx, u32 entries,
		   u32 slot_size, bool rq, const struct vd_wqe_limits *lim)
{
	const u32 hdr = rq ? sizeof(struct viaduct_rqe) :
			     sizeof(struct viaduct_sqe);
	u32 len;

	vd_ring_copy_part(dst, slots, idx, entries, slot_size, 0, hdr);
	len = vd_qp_wqe_len(dst, rq, lim);
	vd_ring_copy_part(dst, slots, idx, entries, slot_size, hdr, len - hdr);
	return len;
}
EXPORT_SYMBOL_IF_KUNIT(vd_qp_copy_wqe);
