// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the ring-entry validator, from the module's own
 * qp_rules.c: the create attributes (vd_qp_caps()) and then SQ and RQ
 * slots as a process writes them into its mapped rings
 * (vd_qp_check_sqe(), vd_qp_check_rqe()), and the modify rules. Oracles:
 * the sizes of a valid QP hold their own limits; an entry the validator
 * passes is one the transport may trust: no more SGEs than the slot
 * holds, a length that is the exact (non-wrapping) sum of its SGEs or
 * its inline bytes, within the message size and the inline limit. And
 * the copy out of the ring (vd_qp_copy_wqe()): it takes exactly what
 * vd_qp_wqe_len() says and nothing behind it, and the validators give
 * the copy the verdict and length they give the whole slot, so nothing
 * they read lies beyond what was copied.
 */
#include <viaduct/viaduct-abi.h>

#include "../../kernel/qp.h"
#include "../../kernel/viaduct.h"

static void check_caps(const struct viaduct_create_qp *a, const struct vd_qp_caps *c)
{
	/* a QP on an SRQ has no receive queue: the SRQ's limits apply */
	if (a->srq_handle) {
		if (c->rq_depth || c->rq_wqe_size || c->rq.max_sge)
			abort();
	} else if (!is_power_of_2(c->rq_depth) || c->rq_depth < a->rq_depth ||
		   !is_power_of_2(c->rq_wqe_size)) {
		abort();
	}
	if (!is_power_of_2(c->sq_depth) || c->sq_depth < a->sq_depth)
		abort();
	if (!is_power_of_2(c->sq_wqe_size))
		abort();
	if (sizeof(struct viaduct_sqe) + c->sq.max_sge * sizeof(struct viaduct_sge) >
	    c->sq_wqe_size || c->sq.max_sge < a->max_send_sge || c->sq.max_sge > VD_MAX_SGE)
		abort();
	if (!a->srq_handle &&
	    (sizeof(struct viaduct_rqe) + c->rq.max_sge * sizeof(struct viaduct_sge) >
	     c->rq_wqe_size || c->rq.max_sge < a->max_recv_sge || c->rq.max_sge > VD_MAX_SGE))
		abort();
	if (sizeof(struct viaduct_sqe) + c->sq.max_inline > c->sq_wqe_size ||
	    c->sq.max_inline < a->max_inline)
		abort();
}

static u64 sge_sum(const struct viaduct_sge *sge, u32 n)
{
	u64 sum = 0;
	u32 i;

	for (i = 0; i < n; i++)
		sum += sge[i].length;
	return sum;
}

static void check_sq(const u8 *slot, const struct vd_wqe_limits *lim)
{
	const struct viaduct_sqe *e = (const void *)slot;
	u32 len = 0;

	if (vd_qp_check_sqe(slot, lim, &len) != VIADUCT_WC_SUCCESS)
		return;
	if (e->opcode > VIADUCT_OP_MAX || len > lim->max_msg_size)
		abort();
	/*
	 * local operations move no payload: FAST_REG's SGEs are its page
	 * list, BIND_MW's one SGE the range of its region
	 */
	if (e->opcode == VIADUCT_OP_LOCAL_INV || e->opcode == VIADUCT_OP_FAST_REG ||
	    e->opcode == VIADUCT_OP_BIND_MW) {
		if (e->opcode == VIADUCT_OP_BIND_MW && e->num_sge != 1)
			abort();
		if (len || e->num_sge > lim->max_sge || e->flags & VIADUCT_SQE_INLINE)
			abort();
		return;
	}
	if (e->flags & VIADUCT_SQE_INLINE) {
		if (e->num_sge || len != e->length || len > lim->max_inline)
			abort();
	} else if (e->num_sge > lim->max_sge ||
		   sge_sum((const void *)(slot + sizeof(*e)), e->num_sge) != len) {
		abort();
	}
}

static void check_rq(const u8 *slot, const struct vd_wqe_limits *lim)
{
	const struct viaduct_rqe *e = (const void *)slot;
	u32 len = 0;

	if (vd_qp_check_rqe(slot, lim, &len) != VIADUCT_WC_SUCCESS)
		return;
	if (e->num_sge > lim->max_sge || len > lim->max_msg_size ||
	    sge_sum((const void *)(slot + sizeof(*e)), e->num_sge) != len)
		abort();
}

static void check_copy(const u8 *slot, u32 size, bool rq, const struct vd_wqe_limits *lim)
{
	static u8 copy[8192] __attribute__((aligned(64)));
	u32 n, i, len1 = 0, len2 = 0;
	u8 st1, st2;

	memset(copy, 0xa5, size);
	n = vd_qp_copy_wqe(copy, slot, 0, 1, size, rq, lim);
	if (n > size || n != vd_qp_wqe_len(slot, rq, lim) || memcmp(copy, slot, n))
		abort();
	for (i = n; i < size; i++)
		if (copy[i] != 0xa5)
			abort();
	st1 = rq ? vd_qp_check_rqe(slot, lim, &len1) : vd_qp_check_sqe(slot, lim, &len1);
	st2 = rq ? vd_qp_check_rqe(copy, lim, &len2) : vd_qp_check_sqe(copy, lim, &len2);
	if (st1 != st2 || (st1 == VIADUCT_WC_SUCCESS && len1 != len2))
		abort();
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	static u8 slot[8192] __attribute__((aligned(64)));
	struct viaduct_create_qp a;
	struct viaduct_modify_qp m;
	struct vd_qp_caps c;
	size_t n;

	if (size < sizeof(a))
		return 0;
	memcpy(&a, data, sizeof(a));
	data += sizeof(a);
	size -= sizeof(a);
	if (vd_qp_caps(&a, &c))
		return 0;
	check_caps(&a, &c);
	/* the rest: slots, one of each queue's size after the other */
	while (size) {
		n = min_t(size_t, size, c.sq_wqe_size);
		memset(slot, 0, c.sq_wqe_size);
		memcpy(slot, data, n);
		check_sq(slot, &c.sq);
		check_copy(slot, c.sq_wqe_size, false, &c.sq);
		data += n;
		size -= n;
		if (!c.rq_wqe_size)
			continue;	/* on an SRQ: SQ slots only */
		n = min_t(size_t, size, c.rq_wqe_size);
		memset(slot, 0, c.rq_wqe_size);
		memcpy(slot, data, n);
		check_rq(slot, &c.rq);
		check_copy(slot, c.rq_wqe_size, true, &c.rq);
		data += n;
		size -= n;
	}
	memset(&m, 0, sizeof(m));
	memcpy(&m, &a, min(sizeof(m), sizeof(a)));
	if (!vd_qp_check_modify(&m) &&
	    vd_qp_check_transition(m.state & 7, (m.state >> 3) & 7, m.mask, a.flags & 1) == 0 &&
	    !m.mask)
		abort();
	return 0;
}
