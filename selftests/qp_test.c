// SPDX-License-Identifier: GPL-2.0
/*
 * Queue pairs and doorbells: the errno of every bad argument of CREATE_QP,
 * MODIFY_QP, QUERY_QP, DESTROY_QP and DOORBELL (table); QPs on a shared CQ,
 * on two CQs and on private rings, with every key mapped; WQE intake from
 * the rings (consumer indices, outstanding counts) and flushing in order;
 * the state machine without a peer; malformed WQEs (error CQE, Error
 * state, async event); the polled doorbell with NEED_WAKEUP against the
 * system-call doorbell.
 *
 * Without a peer the QP stays Idle or goes to Error, where every WQE
 * completes as VIADUCT_WC_FLUSHED. The tests assume that an Idle QP takes
 * WQEs in and holds them (VIPL lets receives, and sends, be posted before
 * the connection is made) and flushes them on entering Error.
 */
#include <sched.h>
#include <sys/time.h>

#include "badarg.h"

/* ---- CREATE_QP ---------------------------------------------------- */

static void qp_base(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	vd_qp_args(&a->qp, s->pd_free, s->cq_free, s->cq_free);
}

static void f_qp(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); }
static void f_qp_sep(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.recv_cq = s->cq_chan; }
static void f_qp_priv(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.send_cq = a->qp.recv_cq = 0; }
static void f_qp_spriv(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.send_cq = 0; }
static void f_qp_polled(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.flags = VIADUCT_QP_F_POLLED; }
static void f_qp_rr(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	qp_base(s, a);
	a->qp.reliability = VIADUCT_RELIABILITY_RELIABLE_RECEPTION;
}
static void f_qp_unrel(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	qp_base(s, a);
	a->qp.reliability = VIADUCT_RELIABILITY_UNRELIABLE;
}
static void f_qp_limits(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	const struct viaduct_device_attr *d = &s->dev.attr;

	qp_base(s, a);
	a->qp.sq_depth = d->max_qp_wr;
	a->qp.rq_depth = d->max_qp_wr;
	a->qp.max_send_sge = d->max_sge;
	a->qp.max_recv_sge = d->max_sge;
	a->qp.max_inline = d->max_inline;
	a->qp.ord = d->max_ord;
	a->qp.ird = d->max_ird;
	a->qp.access = VIADUCT_QP_ACCESS_REMOTE_WRITE | VIADUCT_QP_ACCESS_REMOTE_READ;
}
static void f_qp_rings(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	qp_base(s, a);
	a->qp.sq_ring_depth = 3;	/* rounded up to 4 */
	a->qp.rq_ring_depth = 16;	/* as deep as the queue */
}
static void f_qp_sring_over(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	qp_base(s, a);
	a->qp.sq_ring_depth = 17;
}
static void f_qp_rring_over(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	qp_base(s, a);
	a->qp.rq_ring_depth = 0x80000000U;
}
static void f_qp_sq0(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.sq_depth = 0; }
static void f_qp_rq0(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.rq_depth = 0; }
static void f_qp_sqbig(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	qp_base(s, a);
	a->qp.sq_depth = s->dev.attr.max_qp_wr + 1;
}
static void f_qp_rqbig(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	qp_base(s, a);
	a->qp.rq_depth = s->dev.attr.max_qp_wr + 1;
}
static void f_qp_sqhuge(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.sq_depth = 0x80000001U; }
static void f_qp_ssge(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	qp_base(s, a);
	a->qp.max_send_sge = s->dev.attr.max_sge + 1;
}
static void f_qp_rsge(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	qp_base(s, a);
	a->qp.max_recv_sge = s->dev.attr.max_sge + 1;
}
static void f_qp_sgehuge(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.max_send_sge = 0xffffffffU; }
static void f_qp_inline(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	qp_base(s, a);
	a->qp.max_inline = s->dev.attr.max_inline + 1;
}
static void f_qp_ord(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.ord = s->dev.attr.max_ord + 1; }
static void f_qp_ird(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.ird = s->dev.attr.max_ird + 1; }
static void f_qp_msg(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	qp_base(s, a);
	if (s->dev.attr.max_msg_size >= 0xffffffffULL)
		s->skip = "max_msg_size does not fit the 32-bit field";
	else
		a->qp.max_msg_size = s->dev.attr.max_msg_size + 1;
}
static void f_qp_flag1(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.flags = 2; }
static void f_qp_flag31(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.flags = 0x80000000U; }
static void f_qp_rel0(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.reliability = 0; }
static void f_qp_rel2(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	qp_base(s, a);
	a->qp.reliability = VIADUCT_RELIABILITY_RELIABLE_DELIVERY | VIADUCT_RELIABILITY_RELIABLE_RECEPTION;
}
static void f_qp_rel8(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.reliability = 8; }
static void f_qp_access(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.access = 4; }
static void f_qp_srq_never(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	qp_base(s, a);
	a->qp.rq_depth = 0;
	a->qp.max_recv_sge = 0;
	a->qp.srq_handle = 0x7ffff00;
}
static void f_qp_pd0(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.pd_handle = 0; }
static void f_qp_pd_stale(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.pd_handle = s->stale_pd; }
static void f_qp_pd_cq(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	qp_base(s, a);
	a->qp.pd_handle = s->cq_free;
	VD_WRONG_TYPE(s, pd, a->qp.pd_handle);
}
static void f_qp_scq_stale(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.send_cq = s->stale_cq; }
static void f_qp_rcq_never(FIXTURE_DATA(badarg) *s, union vd_arg *a) { qp_base(s, a); a->qp.recv_cq = 0x7ffff00; }
static void f_qp_rcq_pd(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	qp_base(s, a);
	a->qp.recv_cq = s->pd_free;
	VD_WRONG_TYPE(s, cq, a->qp.recv_cq);
}

static void check_qp_reply(struct __test_metadata *_metadata, const union vd_arg *a)
{
	const struct viaduct_create_qp *c = &a->qp;

	EXPECT_NE(0, c->handle);
	EXPECT_EQ(0, c->sq_depth & (c->sq_depth - 1));
	EXPECT_EQ(0, c->rq_depth & (c->rq_depth - 1));
	EXPECT_LE(sizeof(struct viaduct_doorbell), c->db_size);
	/* rings of a power of two slots, at most the queue's depth */
	EXPECT_EQ(0, c->sq_ring_depth & (c->sq_ring_depth - 1));
	EXPECT_EQ(0, c->rq_ring_depth & (c->rq_ring_depth - 1));
	EXPECT_LE(1, c->sq_ring_depth);
	EXPECT_LE(1, c->rq_ring_depth);
	EXPECT_GE(c->sq_depth, c->sq_ring_depth);
	EXPECT_GE(c->rq_depth, c->rq_ring_depth);
	EXPECT_LE((__u64)c->sq_ring_depth * c->sq_wqe_size, c->sq_size);
	EXPECT_LE((__u64)c->rq_ring_depth * c->rq_wqe_size, c->rq_size);
	EXPECT_LE(sizeof(struct viaduct_sqe) + c->max_send_sge * sizeof(struct viaduct_sge),
		  c->sq_wqe_size);
	EXPECT_LE(sizeof(struct viaduct_sqe) + c->max_inline, c->sq_wqe_size);
	EXPECT_LE(sizeof(struct viaduct_rqe) + c->max_recv_sge * sizeof(struct viaduct_sge),
		  c->rq_wqe_size);
	EXPECT_EQ(0, c->srq_handle);
	if (!c->send_cq)
		EXPECT_LE(VIADUCT_RING_HDR_SIZE + (__u64)c->scq_entries * sizeof(struct viaduct_cqe),
			  c->scq_size);
	if (!c->recv_cq)
		EXPECT_LE(VIADUCT_RING_HDR_SIZE + (__u64)c->rcq_entries * sizeof(struct viaduct_cqe),
			  c->rcq_size);
}

/* A QP made without ring depths: rings as deep as the queues. */
static void check_qp_created(struct __test_metadata *_metadata,
			     FIXTURE_DATA(badarg) *s, const union vd_arg *a, int ret)
{
	if (ret)
		return;
	check_qp_reply(_metadata, a);
	EXPECT_EQ(a->qp.sq_depth, a->qp.sq_ring_depth);
	EXPECT_EQ(a->qp.rq_depth, a->qp.rq_ring_depth);
}

/* f_qp_rings: an SQ ring of 4 slots (3 rounded up), an RQ ring of 16. */
static void check_qp_rings(struct __test_metadata *_metadata,
			   FIXTURE_DATA(badarg) *s, const union vd_arg *a, int ret)
{
	if (ret)
		return;
	check_qp_reply(_metadata, a);
	EXPECT_EQ(16, a->qp.sq_depth);
	EXPECT_EQ(4, a->qp.sq_ring_depth);
	EXPECT_EQ(16, a->qp.rq_ring_depth);
	/* the SQ ring's memory is its four slots, not the queue's sixteen */
	EXPECT_EQ(((__u64)4 * a->qp.sq_wqe_size + VD_PAGE - 1) / VD_PAGE * VD_PAGE,
		  a->qp.sq_size);
}

VD_ROW_CHECK(create_qp_shared_cq, VIADUCT_IOCTL_CREATE_QP, f_qp, check_qp_created, 0,
	     "CREATE_QP on one CQ");
VD_ROW_CHECK(create_qp_two_cqs, VIADUCT_IOCTL_CREATE_QP, f_qp_sep, check_qp_created, 0,
	     "CREATE_QP on two CQs");
VD_ROW_CHECK(create_qp_private, VIADUCT_IOCTL_CREATE_QP, f_qp_priv, check_qp_created, 0,
	     "CREATE_QP with private rings");
VD_ROW_CHECK(create_qp_send_private, VIADUCT_IOCTL_CREATE_QP, f_qp_spriv, check_qp_created, 0,
	     "CREATE_QP with a private send ring and a receive CQ");
VD_ROW_CHECK(create_qp_polled, VIADUCT_IOCTL_CREATE_QP, f_qp_polled, check_qp_created, 0,
	     "CREATE_QP polled");
VD_ROW_CHECK(create_qp_short_rings, VIADUCT_IOCTL_CREATE_QP, f_qp_rings, check_qp_rings, 0,
	     "CREATE_QP with a ring shorter than its queue");
VD_ROW(create_qp_sq_ring_over, VIADUCT_IOCTL_CREATE_QP, f_qp_sring_over, -EINVAL,
       "CREATE_QP SQ ring deeper than the queue");
VD_ROW(create_qp_rq_ring_over, VIADUCT_IOCTL_CREATE_QP, f_qp_rring_over, -EINVAL,
       "CREATE_QP RQ ring of 2^31 slots");
VD_ROW(create_qp_reliable_reception, VIADUCT_IOCTL_CREATE_QP, f_qp_rr, -EOPNOTSUPP,
       "CREATE_QP reliable reception: not given by the module");
VD_ROW_CHECK(create_qp_unreliable, VIADUCT_IOCTL_CREATE_QP, f_qp_unrel, check_qp_created, 0,
	     "CREATE_QP unreliable (served by reliable delivery)");
VD_ROW_CHECK(create_qp_at_limits, VIADUCT_IOCTL_CREATE_QP, f_qp_limits, check_qp_created, 0,
	     "CREATE_QP with every limit of the device");
VD_ROW(create_qp_sq_0, VIADUCT_IOCTL_CREATE_QP, f_qp_sq0, -EINVAL, "CREATE_QP SQ depth 0");
VD_ROW(create_qp_rq_0, VIADUCT_IOCTL_CREATE_QP, f_qp_rq0, -EINVAL, "CREATE_QP RQ depth 0");
VD_ROW(create_qp_sq_over, VIADUCT_IOCTL_CREATE_QP, f_qp_sqbig, -EINVAL,
       "CREATE_QP SQ depth max_qp_wr + 1");
VD_ROW(create_qp_rq_over, VIADUCT_IOCTL_CREATE_QP, f_qp_rqbig, -EINVAL,
       "CREATE_QP RQ depth max_qp_wr + 1");
VD_ROW(create_qp_sq_huge, VIADUCT_IOCTL_CREATE_QP, f_qp_sqhuge, -EINVAL,
       "CREATE_QP SQ depth 2^31 + 1");
VD_ROW(create_qp_send_sge_over, VIADUCT_IOCTL_CREATE_QP, f_qp_ssge, -EINVAL,
       "CREATE_QP send SGEs max_sge + 1");
VD_ROW(create_qp_recv_sge_over, VIADUCT_IOCTL_CREATE_QP, f_qp_rsge, -EINVAL,
       "CREATE_QP receive SGEs max_sge + 1");
VD_ROW(create_qp_sge_huge, VIADUCT_IOCTL_CREATE_QP, f_qp_sgehuge, -EINVAL,
       "CREATE_QP send SGEs 2^32 - 1");
VD_ROW(create_qp_inline_over, VIADUCT_IOCTL_CREATE_QP, f_qp_inline, -EINVAL,
       "CREATE_QP inline max_inline + 1");
VD_ROW(create_qp_ord_over, VIADUCT_IOCTL_CREATE_QP, f_qp_ord, -EINVAL, "CREATE_QP ord max_ord + 1");
VD_ROW(create_qp_ird_over, VIADUCT_IOCTL_CREATE_QP, f_qp_ird, -EINVAL, "CREATE_QP ird max_ird + 1");
VD_ROW(create_qp_msg_over, VIADUCT_IOCTL_CREATE_QP, f_qp_msg, -EINVAL,
       "CREATE_QP max_msg_size beyond the device's");
VD_ROW(create_qp_flag1, VIADUCT_IOCTL_CREATE_QP, f_qp_flag1, -EINVAL, "CREATE_QP unknown flag 1");
VD_ROW(create_qp_flag31, VIADUCT_IOCTL_CREATE_QP, f_qp_flag31, -EINVAL, "CREATE_QP unknown flag 31");
VD_ROW(create_qp_reliability_0, VIADUCT_IOCTL_CREATE_QP, f_qp_rel0, -EINVAL,
       "CREATE_QP without a reliability level");
VD_ROW(create_qp_reliability_2, VIADUCT_IOCTL_CREATE_QP, f_qp_rel2, -EINVAL,
       "CREATE_QP with two reliability levels");
VD_ROW(create_qp_reliability_8, VIADUCT_IOCTL_CREATE_QP, f_qp_rel8, -EINVAL,
       "CREATE_QP with an unknown reliability level");
VD_ROW(create_qp_access, VIADUCT_IOCTL_CREATE_QP, f_qp_access, -EINVAL,
       "CREATE_QP with an unknown access bit");
VD_ROW(create_qp_srq_never, VIADUCT_IOCTL_CREATE_QP, f_qp_srq_never, -ENOENT,
       "CREATE_QP on an SRQ handle never given out");
VD_ROW(create_qp_pd0, VIADUCT_IOCTL_CREATE_QP, f_qp_pd0, -ENOENT, "CREATE_QP on PD handle 0");
VD_ROW(create_qp_pd_stale, VIADUCT_IOCTL_CREATE_QP, f_qp_pd_stale, -ENOENT,
       "CREATE_QP on a destroyed PD");
VD_ROW(create_qp_pd_cq, VIADUCT_IOCTL_CREATE_QP, f_qp_pd_cq, -ENOENT, "CREATE_QP on a CQ as PD");
VD_ROW(create_qp_scq_stale, VIADUCT_IOCTL_CREATE_QP, f_qp_scq_stale, -ENOENT,
       "CREATE_QP with a destroyed send CQ");
VD_ROW(create_qp_rcq_never, VIADUCT_IOCTL_CREATE_QP, f_qp_rcq_never, -ENOENT,
       "CREATE_QP with a receive CQ never allocated");
VD_ROW(create_qp_rcq_pd, VIADUCT_IOCTL_CREATE_QP, f_qp_rcq_pd, -ENOENT,
       "CREATE_QP with a PD as receive CQ");
VD_ROWS_COMMON(create_qp, VIADUCT_IOCTL_CREATE_QP, f_qp);
VD_ROW_RO_ARG(create_qp, VIADUCT_IOCTL_CREATE_QP, f_qp);
VD_ROW_OTHER_PROCESS(create_qp, VIADUCT_IOCTL_CREATE_QP, f_qp);

/* ---- MODIFY_QP ---------------------------------------------------- */

static void mod(FIXTURE_DATA(badarg) *s, union vd_arg *a, __u32 mask, __u32 state)
{
	a->mod.handle = s->qp;
	a->mod.mask = mask;
	a->mod.state = state;
}

static void f_mod_err(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mod(s, a, VIADUCT_QP_ATTR_STATE, VIADUCT_QPS_ERROR); }
static void f_mod_rts(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mod(s, a, VIADUCT_QP_ATTR_STATE, VIADUCT_QPS_RTS); }
static void f_mod_closing(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mod(s, a, VIADUCT_QP_ATTR_STATE, VIADUCT_QPS_CLOSING); }
static void f_mod_term(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mod(s, a, VIADUCT_QP_ATTR_STATE, VIADUCT_QPS_TERMINATE); }
static void f_mod_state5(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mod(s, a, VIADUCT_QP_ATTR_STATE, VIADUCT_QPS_MAX + 1); }
static void f_mod_statex(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mod(s, a, VIADUCT_QP_ATTR_STATE, 0xffffffffU); }
static void f_mod_mask(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mod(s, a, 0x10, 0); }
static void f_mod_mask31(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mod(s, a, VIADUCT_QP_ATTR_STATE | 0x80000000U, VIADUCT_QPS_ERROR); }
static void f_mod_access(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	mod(s, a, VIADUCT_QP_ATTR_ACCESS, 0);
	a->mod.access = VIADUCT_QP_ACCESS_REMOTE_READ | VIADUCT_QP_ACCESS_REMOTE_WRITE;
}
static void f_mod_access_bad(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_mod_access(s, a); a->mod.access = 8; }
static void f_mod_ord(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	mod(s, a, VIADUCT_QP_ATTR_ORD | VIADUCT_QP_ATTR_IRD, 0);
	a->mod.ord = 1;
	a->mod.ird = 1;
}
static void f_mod_ord_over(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	mod(s, a, VIADUCT_QP_ATTR_ORD, 0);
	a->mod.ord = s->dev.attr.max_ord + 1;
}
static void f_mod_ird_over(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	mod(s, a, VIADUCT_QP_ATTR_IRD, 0);
	a->mod.ird = s->dev.attr.max_ird + 1;
}
/* a bad part makes the whole call fail: the good state change is not applied */
static void f_mod_mixed(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	mod(s, a, VIADUCT_QP_ATTR_STATE | VIADUCT_QP_ATTR_IRD, VIADUCT_QPS_ERROR);
	a->mod.ird = s->dev.attr.max_ird + 1;
}
static void f_mod_h0(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_mod_err(s, a); a->mod.handle = 0; }
static void f_mod_stale(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_mod_err(s, a); a->mod.handle = s->stale_qp; }
static void f_mod_cq(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	f_mod_err(s, a);
	a->mod.handle = s->cq_qp;
	VD_WRONG_TYPE(s, qp, a->mod.handle);
}

/* After a failed MODIFY_QP the QP is as it was: Idle. */
static void check_still_idle(struct __test_metadata *_metadata,
			     FIXTURE_DATA(badarg) *s, const union vd_arg *a, int ret)
{
	struct viaduct_query_qp q;

	ASSERT_EQ(0, vd_query_qp(s->fd, s->qp, &q));
	EXPECT_EQ(VIADUCT_QPS_IDLE, q.state);
	EXPECT_GE(s->dev.attr.max_ord, q.ord);
	EXPECT_GE(s->dev.attr.max_ird, q.ird);
	EXPECT_EQ(0, q.access & ~(__u32)(VIADUCT_QP_ACCESS_REMOTE_READ | VIADUCT_QP_ACCESS_REMOTE_WRITE));
}

static void check_mod_applied(struct __test_metadata *_metadata,
			      FIXTURE_DATA(badarg) *s, const union vd_arg *a, int ret)
{
	struct viaduct_query_qp q;

	ASSERT_EQ(0, vd_query_qp(s->fd, s->qp, &q));
	if (a->mod.mask & VIADUCT_QP_ATTR_STATE)
		EXPECT_EQ(a->mod.state, q.state);
	if (a->mod.mask & VIADUCT_QP_ATTR_ACCESS)
		EXPECT_EQ(a->mod.access, q.access);
	if (a->mod.mask & VIADUCT_QP_ATTR_ORD)
		EXPECT_EQ(a->mod.ord, q.ord);
	if (a->mod.mask & VIADUCT_QP_ATTR_IRD)
		EXPECT_EQ(a->mod.ird, q.ird);
}

VD_ROW_CHECK(modify_qp_error, VIADUCT_IOCTL_MODIFY_QP, f_mod_err, check_mod_applied, 0,
	     "MODIFY_QP Idle -> Error");
VD_ROW_CHECK(modify_qp_access, VIADUCT_IOCTL_MODIFY_QP, f_mod_access, check_mod_applied, 0,
	     "MODIFY_QP access");
VD_ROW_CHECK(modify_qp_ord_ird, VIADUCT_IOCTL_MODIFY_QP, f_mod_ord, check_mod_applied, 0,
	     "MODIFY_QP ord and ird");
VD_ROW_CHECK(modify_qp_rts, VIADUCT_IOCTL_MODIFY_QP, f_mod_rts, check_still_idle, -EINVAL,
	     "MODIFY_QP Idle -> RTS without a connection");
VD_ROW_CHECK(modify_qp_closing, VIADUCT_IOCTL_MODIFY_QP, f_mod_closing, check_still_idle, -EINVAL,
	     "MODIFY_QP Idle -> Closing");
VD_ROW_CHECK(modify_qp_terminate, VIADUCT_IOCTL_MODIFY_QP, f_mod_term, check_still_idle, -EINVAL,
	     "MODIFY_QP Idle -> Terminate");
VD_ROW_CHECK(modify_qp_state_5, VIADUCT_IOCTL_MODIFY_QP, f_mod_state5, check_still_idle, -EINVAL,
	     "MODIFY_QP to state MAX + 1");
VD_ROW_CHECK(modify_qp_state_x, VIADUCT_IOCTL_MODIFY_QP, f_mod_statex, check_still_idle, -EINVAL,
	     "MODIFY_QP to state 2^32 - 1");
VD_ROW_CHECK(modify_qp_mask, VIADUCT_IOCTL_MODIFY_QP, f_mod_mask, check_still_idle, -EINVAL,
	     "MODIFY_QP unknown mask bit 4");
VD_ROW_CHECK(modify_qp_mask31, VIADUCT_IOCTL_MODIFY_QP, f_mod_mask31, check_still_idle, -EINVAL,
	     "MODIFY_QP unknown mask bit 31 with a valid state change");
VD_ROW_CHECK(modify_qp_access_bad, VIADUCT_IOCTL_MODIFY_QP, f_mod_access_bad, check_still_idle,
	     -EINVAL, "MODIFY_QP unknown access bit");
VD_ROW_CHECK(modify_qp_ord_over, VIADUCT_IOCTL_MODIFY_QP, f_mod_ord_over, check_still_idle, -EINVAL,
	     "MODIFY_QP ord max_ord + 1");
VD_ROW_CHECK(modify_qp_ird_over, VIADUCT_IOCTL_MODIFY_QP, f_mod_ird_over, check_still_idle, -EINVAL,
	     "MODIFY_QP ird max_ird + 1");
VD_ROW_CHECK(modify_qp_partly_bad, VIADUCT_IOCTL_MODIFY_QP, f_mod_mixed, check_still_idle, -EINVAL,
	     "MODIFY_QP Error with a bad ird: nothing applied");
VD_ROW(modify_qp_zero, VIADUCT_IOCTL_MODIFY_QP, f_mod_h0, -ENOENT, "MODIFY_QP handle 0");
VD_ROW(modify_qp_stale, VIADUCT_IOCTL_MODIFY_QP, f_mod_stale, -ENOENT,
       "MODIFY_QP of a destroyed QP");
VD_ROW(modify_qp_cq, VIADUCT_IOCTL_MODIFY_QP, f_mod_cq, -ENOENT, "MODIFY_QP with a CQ handle");
VD_ROWS_COMMON(modify_qp, VIADUCT_IOCTL_MODIFY_QP, f_mod_err);
VD_ROW_OTHER_PROCESS(modify_qp, VIADUCT_IOCTL_MODIFY_QP, f_mod_err);

/* ---- QUERY_QP ----------------------------------------------------- */

static void f_q(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->qq.handle = s->qp; }
static void f_q_garbage_out(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	memset(&a->qq, 0x5a, sizeof(a->qq));
	a->qq.handle = s->qp;
	a->qq.reserved = 0;
}
static void f_q_res(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->qq.handle = s->qp; a->qq.reserved = 1; }
static void f_q0(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->qq.handle = 0; }
static void f_q_stale(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->qq.handle = s->stale_qp; }
static void f_q_pd(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	a->qq.handle = s->pd_qp;
	VD_WRONG_TYPE(s, qp, a->qq.handle);
}

static void check_query(struct __test_metadata *_metadata,
			FIXTURE_DATA(badarg) *s, const union vd_arg *a, int ret)
{
	if (ret)
		return;
	EXPECT_EQ(s->qp, a->qq.handle);
	EXPECT_EQ(VIADUCT_QPS_IDLE, a->qq.state);
	EXPECT_LE(16, a->qq.sq_depth);
	EXPECT_LE(16, a->qq.rq_depth);
	EXPECT_EQ(0, a->qq.sq_outstanding);
	EXPECT_EQ(0, a->qq.rq_outstanding);
	EXPECT_EQ(0, a->qq.terminate);
	EXPECT_EQ(0, a->qq.reserved);
}

VD_ROW_CHECK(query_qp_ok, VIADUCT_IOCTL_QUERY_QP, f_q, check_query, 0, "QUERY_QP works");
VD_ROW_CHECK(query_qp_ignores_outputs, VIADUCT_IOCTL_QUERY_QP, f_q_garbage_out, check_query, 0,
	     "QUERY_QP ignores what its output fields held");
VD_ROW(query_qp_reserved, VIADUCT_IOCTL_QUERY_QP, f_q_res, -EINVAL,
       "QUERY_QP with a nonzero reserved field");
VD_ROW(query_qp_zero, VIADUCT_IOCTL_QUERY_QP, f_q0, -ENOENT, "QUERY_QP handle 0");
VD_ROW(query_qp_stale, VIADUCT_IOCTL_QUERY_QP, f_q_stale, -ENOENT, "QUERY_QP of a destroyed QP");
VD_ROW(query_qp_pd, VIADUCT_IOCTL_QUERY_QP, f_q_pd, -ENOENT, "QUERY_QP with a PD handle");
VD_ROWS_COMMON(query_qp, VIADUCT_IOCTL_QUERY_QP, f_q);
VD_ROW_RO_ARG(query_qp, VIADUCT_IOCTL_QUERY_QP, f_q);
VD_ROW_OTHER_PROCESS(query_qp, VIADUCT_IOCTL_QUERY_QP, f_q);

/* ---- DESTROY_QP --------------------------------------------------- */

static void f_dq(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->h.handle = s->qp; }
static void f_dq_stale(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->h.handle = s->stale_qp; }
static void f_dq_res(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->h.handle = s->qp; a->h.reserved = 1; }
static void f_dq_cq(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	a->h.handle = s->cq_qp;
	VD_WRONG_TYPE(s, qp, a->h.handle);
}
static void f_dq_pd(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	a->h.handle = s->pd_qp;
	VD_WRONG_TYPE(s, qp, a->h.handle);
}

VD_ROW(destroy_qp_ok, VIADUCT_IOCTL_DESTROY_QP, f_dq, 0, "DESTROY_QP works");
VD_ROW(destroy_qp_zero, VIADUCT_IOCTL_DESTROY_QP, vd_fill_h0, -ENOENT, "DESTROY_QP handle 0");
VD_ROW(destroy_qp_never, VIADUCT_IOCTL_DESTROY_QP, vd_fill_hnever, -ENOENT,
       "DESTROY_QP of a handle never allocated");
VD_ROW(destroy_qp_max, VIADUCT_IOCTL_DESTROY_QP, vd_fill_hmax, -ENOENT, "DESTROY_QP handle ~0");
VD_ROW(destroy_qp_stale, VIADUCT_IOCTL_DESTROY_QP, f_dq_stale, -ENOENT,
       "DESTROY_QP of a destroyed QP");
VD_ROW(destroy_qp_cq, VIADUCT_IOCTL_DESTROY_QP, f_dq_cq, -ENOENT, "DESTROY_QP with a CQ handle");
VD_ROW(destroy_qp_pd, VIADUCT_IOCTL_DESTROY_QP, f_dq_pd, -ENOENT, "DESTROY_QP with a PD handle");
VD_ROW(destroy_qp_reserved, VIADUCT_IOCTL_DESTROY_QP, f_dq_res, -EINVAL,
       "DESTROY_QP with a nonzero reserved field");
VD_ROWS_COMMON(destroy_qp, VIADUCT_IOCTL_DESTROY_QP, f_dq);
VD_ROW_OTHER_PROCESS(destroy_qp, VIADUCT_IOCTL_DESTROY_QP, f_dq);

/* ---- DOORBELL ----------------------------------------------------- */

static void f_db(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	a->db.handle = s->qp;
	a->db.flags = VIADUCT_DOORBELL_SQ | VIADUCT_DOORBELL_RQ;
}
static void f_db_sq(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_db(s, a); a->db.flags = VIADUCT_DOORBELL_SQ; }
static void f_db_f0(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_db(s, a); a->db.flags = 0; }
static void f_db_f4(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_db(s, a); a->db.flags = 4; }
static void f_db_f31(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_db(s, a); a->db.flags |= 0x80000000U; }
static void f_db_h0(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_db(s, a); a->db.handle = 0; }
static void f_db_stale(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_db(s, a); a->db.handle = s->stale_qp; }
static void f_db_cq(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	f_db(s, a);
	a->db.handle = s->cq_qp;
	VD_WRONG_TYPE(s, qp, a->db.handle);
}

VD_ROW(doorbell_ok, VIADUCT_IOCTL_DOORBELL, f_db, 0, "DOORBELL SQ | RQ with nothing posted");
VD_ROW(doorbell_sq, VIADUCT_IOCTL_DOORBELL, f_db_sq, 0, "DOORBELL SQ");
VD_ROW(doorbell_no_flag, VIADUCT_IOCTL_DOORBELL, f_db_f0, -EINVAL, "DOORBELL without a queue");
VD_ROW(doorbell_flag2, VIADUCT_IOCTL_DOORBELL, f_db_f4, -EINVAL, "DOORBELL unknown flag 2");
VD_ROW(doorbell_flag31, VIADUCT_IOCTL_DOORBELL, f_db_f31, -EINVAL, "DOORBELL unknown flag 31");
VD_ROW(doorbell_zero, VIADUCT_IOCTL_DOORBELL, f_db_h0, -ENOENT, "DOORBELL handle 0");
VD_ROW(doorbell_stale, VIADUCT_IOCTL_DOORBELL, f_db_stale, -ENOENT, "DOORBELL of a destroyed QP");
VD_ROW(doorbell_cq, VIADUCT_IOCTL_DOORBELL, f_db_cq, -ENOENT, "DOORBELL with a CQ handle");
VD_ROWS_COMMON(doorbell, VIADUCT_IOCTL_DOORBELL, f_db);
VD_ROW_OTHER_PROCESS(doorbell, VIADUCT_IOCTL_DOORBELL, f_db);

/* ------------------------------------------------------------------ */
/* QPs on shared, separate and private completion rings               */
/* ------------------------------------------------------------------ */

enum { CQ_SHARED, CQ_SEPARATE, CQ_PRIVATE, CQ_SEND_PRIVATE };

FIXTURE(qpl)
{
	struct vd_testdev dev;
	struct vd_snap before;
	int fd;
	int pd;
	struct viaduct_create_cq scq, rcq;	/* handle 0: none */
	struct vd_cring scr, rcr;		/* mapped CQs, if any */
	struct vd_qp q;
	struct vd_cring *sring, *rring;		/* where SQ and RQ complete */
};

FIXTURE_VARIANT(qpl)
{
	int layout;
};

FIXTURE_VARIANT_ADD(qpl, shared_cq) { .layout = CQ_SHARED };
FIXTURE_VARIANT_ADD(qpl, two_cqs) { .layout = CQ_SEPARATE };
FIXTURE_VARIANT_ADD(qpl, private_rings) { .layout = CQ_PRIVATE };
FIXTURE_VARIANT_ADD(qpl, send_private) { .layout = CQ_SEND_PRIVATE };

FIXTURE_SETUP(qpl)
{
	int ret = vd_testdev_up(&self->dev, "ql");

	self->fd = self->dev.fd;
	ASSERT_EQ(0, ret) TH_LOG("test device %s: step %d", self->dev.name, -ret);
	vd_snap_take(&self->before);
	self->pd = vd_create_pd(self->fd);
	ASSERT_LT(0, self->pd);
	memset(&self->scq, 0, sizeof(self->scq));
	memset(&self->rcq, 0, sizeof(self->rcq));
	if (variant->layout != CQ_PRIVATE && variant->layout != CQ_SEND_PRIVATE) {
		ASSERT_EQ(0, vd_create_cq(self->fd, 64, -1, 0x5c, &self->scq));
		ASSERT_EQ(0, vd_cring_map(&self->scr, self->fd, self->scq.mmap_key,
					  self->scq.mmap_size, self->scq.entries));
	}
	if (variant->layout == CQ_SEPARATE || variant->layout == CQ_SEND_PRIVATE) {
		ASSERT_EQ(0, vd_create_cq(self->fd, 64, -1, 0x7c, &self->rcq));
		ASSERT_EQ(0, vd_cring_map(&self->rcr, self->fd, self->rcq.mmap_key,
					  self->rcq.mmap_size, self->rcq.entries));
	}
	switch (variant->layout) {
	case CQ_SHARED:
		ret = vd_qp_make(self->fd, &self->q, self->pd, self->scq.handle,
				 self->scq.handle, 16, 0, 0);
		self->sring = self->rring = &self->scr;
		break;
	case CQ_SEPARATE:
		ret = vd_qp_make(self->fd, &self->q, self->pd, self->scq.handle,
				 self->rcq.handle, 16, 0, 0);
		self->sring = &self->scr;
		self->rring = &self->rcr;
		break;
	case CQ_PRIVATE:
		ret = vd_qp_make(self->fd, &self->q, self->pd, 0, 0, 16, 0, 0);
		self->sring = &self->q.scq;
		self->rring = &self->q.rcq;
		break;
	case CQ_SEND_PRIVATE:
		ret = vd_qp_make(self->fd, &self->q, self->pd, 0, self->rcq.handle, 16, 0, 0);
		self->sring = &self->q.scq;
		self->rring = &self->rcr;
		break;
	}
	ASSERT_EQ(0, ret) TH_LOG("QP: %s", strerror(-ret));
}

FIXTURE_TEARDOWN(qpl)
{
	vd_qp_unmap(&self->q);
	vd_cring_unmap(&self->scr);
	vd_cring_unmap(&self->rcr);
	vd_testdev_down(&self->dev);
}

static void qpl_destroy_all(struct __test_metadata *_metadata, FIXTURE_DATA(qpl) *self)
{
	vd_qp_unmap(&self->q);
	vd_cring_unmap(&self->scr);
	vd_cring_unmap(&self->rcr);
	EXPECT_EQ(0, vd_destroy_qp(self->fd, self->q.c.handle));
	if (self->scq.handle)
		EXPECT_EQ(0, vd_destroy_cq(self->fd, self->scq.handle));
	if (self->rcq.handle)
		EXPECT_EQ(0, vd_destroy_cq(self->fd, self->rcq.handle));
	EXPECT_EQ(0, vd_destroy_pd(self->fd, self->pd));
	vd_snap_expect_back(&self->before, 3000, "QP and CQs destroyed");
}

TEST_F(qpl, keys_and_sizes)
{
	const struct viaduct_create_qp *c = &self->q.c;
	struct viaduct_query_qp q;

	EXPECT_LE(16, c->sq_depth);
	EXPECT_LE(16, c->rq_depth);
	EXPECT_EQ(0, c->sq_depth & (c->sq_depth - 1));
	EXPECT_EQ(0, c->rq_depth & (c->rq_depth - 1));
	EXPECT_LE(1, c->max_send_sge);
	EXPECT_LE(1, c->max_recv_sge);
	EXPECT_LE((__u64)c->sq_depth * c->sq_wqe_size, c->sq_size);
	EXPECT_LE((__u64)c->rq_depth * c->rq_wqe_size, c->rq_size);
	/* every key distinct */
	EXPECT_NE(c->db_key, c->sq_key);
	EXPECT_NE(c->db_key, c->rq_key);
	EXPECT_NE(c->sq_key, c->rq_key);
	if (!c->send_cq) {
		EXPECT_NE(0, c->scq_entries);
		EXPECT_EQ(c->scq_entries, self->q.scq.hdr->entries);
		EXPECT_LE(c->sq_depth, c->scq_entries) TH_LOG("private send ring smaller than the SQ");
	}
	if (!c->recv_cq) {
		EXPECT_NE(0, c->rcq_entries);
		EXPECT_EQ(c->rcq_entries, self->q.rcq.hdr->entries);
		EXPECT_LE(c->rq_depth, c->rcq_entries);
	}
	if (!c->send_cq && !c->recv_cq)
		EXPECT_NE(c->scq_key, c->rcq_key);
	if (self->scq.handle)
		EXPECT_EQ(self->scq.entries, self->scr.hdr->entries);
	/* a fresh doorbell page */
	EXPECT_EQ(0, self->q.db->sq_producer);
	EXPECT_EQ(0, self->q.db->rq_producer);
	EXPECT_EQ(0, self->q.db->sq_consumer);
	EXPECT_EQ(0, self->q.db->rq_consumer);
	ASSERT_EQ(0, vd_query_qp(self->fd, c->handle, &q));
	EXPECT_EQ(VIADUCT_QPS_IDLE, q.state);
	EXPECT_EQ(c->qpn, q.qpn);
	EXPECT_EQ(c->sq_depth, q.sq_depth);
	EXPECT_EQ(c->rq_depth, q.rq_depth);
	/* no key maps larger than its size */
	EXPECT_EQ(MAP_FAILED, vd_mmap_key(self->fd, c->db_key, c->db_size + VD_PAGE));
	EXPECT_EQ(MAP_FAILED, vd_mmap_key(self->fd, c->sq_key, c->sq_size + VD_PAGE));
	qpl_destroy_all(_metadata, self);
}

/* Reads @n CQEs from @r and checks them against wr_ids first..first+n-1. */
static void expect_flushed(struct __test_metadata *_metadata, struct vd_cring *r,
			   struct vd_qp *q, int recv, __u64 first, unsigned int n)
{
	struct viaduct_cqe e;
	unsigned int i;

	for (i = 0; i < n; i++) {
		ASSERT_EQ(1, vd_cring_wait(r, &e, 1, 3000))
			TH_LOG("%s CQE %u of %u missing", recv ? "receive" : "send", i, n);
		EXPECT_EQ(first + i, e.wr_id);
		EXPECT_EQ(VIADUCT_WC_FLUSHED, e.status);
		EXPECT_EQ(q->c.handle, e.qp_handle);
		EXPECT_EQ(recv ? VIADUCT_WC_F_RECV : 0, e.flags & VIADUCT_WC_F_RECV);
		EXPECT_EQ(0, e.reserved);
		EXPECT_EQ(0, e.invalidated_stag);
	}
}

/*
 * Reads @ns send and @nr receive completions from one ring: each queue's
 * in order, the two interleaved as the kernel likes.
 */
static void expect_flushed_shared(struct __test_metadata *_metadata, struct vd_cring *r,
				  struct vd_qp *q, __u64 sfirst, unsigned int ns,
				  __u64 rfirst, unsigned int nr)
{
	unsigned int s = 0, rv = 0;
	struct viaduct_cqe e;

	while (s + rv < ns + nr) {
		ASSERT_EQ(1, vd_cring_wait(r, &e, 1, 3000))
			TH_LOG("%u sends, %u receives of %u, %u", s, rv, ns, nr);
		EXPECT_EQ(VIADUCT_WC_FLUSHED, e.status);
		EXPECT_EQ(q->c.handle, e.qp_handle);
		if (e.flags & VIADUCT_WC_F_RECV) {
			EXPECT_EQ(rfirst + rv, e.wr_id);
			rv++;
		} else {
			EXPECT_EQ(sfirst + s, e.wr_id);
			s++;
		}
	}
	EXPECT_EQ(ns, s);
	EXPECT_EQ(nr, rv);
}

static void expect_all_flushed(struct __test_metadata *_metadata, FIXTURE_DATA(qpl) *self,
			       __u64 sfirst, unsigned int ns, __u64 rfirst, unsigned int nr)
{
	if (self->sring == self->rring) {
		expect_flushed_shared(_metadata, self->sring, &self->q, sfirst, ns, rfirst, nr);
	} else {
		expect_flushed(_metadata, self->sring, &self->q, 0, sfirst, ns);
		expect_flushed(_metadata, self->rring, &self->q, 1, rfirst, nr);
	}
	/* exactly that many */
	vd_sleep_ms(50);
	EXPECT_EQ(0, vd_cring_avail(self->sring));
	EXPECT_EQ(0, vd_cring_avail(self->rring));
}

TEST_F(qpl, post_then_flush)
{
	const unsigned int N = 5, M = 7;
	struct viaduct_query_qp qq;
	unsigned int i;

	for (i = 0; i < N; i++)
		vd_post_sqe(&self->q, 1000 + i, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED);
	for (i = 0; i < M; i++)
		vd_post_rqe(&self->q, 2000 + i, NULL, 0, 0);
	ASSERT_EQ(0, vd_doorbell(self->fd, self->q.c.handle,
				 VIADUCT_DOORBELL_SQ | VIADUCT_DOORBELL_RQ));
	ASSERT_EQ(0, vd_qp_wait_consumed(&self->q, 2000))
		TH_LOG("consumers %u/%u, producers %u/%u", vd_sq_consumer(&self->q),
		       vd_rq_consumer(&self->q), self->q.sq_prod, self->q.rq_prod);
	ASSERT_EQ(0, vd_query_qp(self->fd, self->q.c.handle, &qq));
	EXPECT_EQ(VIADUCT_QPS_IDLE, qq.state);
	EXPECT_EQ(N, qq.sq_outstanding);
	EXPECT_EQ(M, qq.rq_outstanding);
	/* held, not completed */
	EXPECT_EQ(0, vd_cring_avail(self->sring));
	EXPECT_EQ(0, vd_cring_avail(self->rring));

	ASSERT_EQ(0, vd_modify_state(self->fd, self->q.c.handle, VIADUCT_QPS_ERROR));
	expect_all_flushed(_metadata, self, 1000, N, 2000, M);
	ASSERT_EQ(0, vd_query_qp(self->fd, self->q.c.handle, &qq));
	EXPECT_EQ(VIADUCT_QPS_ERROR, qq.state);
	EXPECT_EQ(0, qq.sq_outstanding);
	EXPECT_EQ(0, qq.rq_outstanding);

	/* in Error, new WQEs complete at once */
	for (i = 0; i < 3; i++)
		vd_post_sqe(&self->q, 3000 + i, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED);
	for (i = 0; i < 2; i++)
		vd_post_rqe(&self->q, 4000 + i, NULL, 0, 0);
	ASSERT_EQ(0, vd_doorbell(self->fd, self->q.c.handle,
				 VIADUCT_DOORBELL_SQ | VIADUCT_DOORBELL_RQ));
	expect_all_flushed(_metadata, self, 3000, 3, 4000, 2);

	/* Error -> Idle: held again */
	ASSERT_EQ(0, vd_modify_state(self->fd, self->q.c.handle, VIADUCT_QPS_IDLE));
	vd_post_rqe(&self->q, 5000, NULL, 0, 0);
	ASSERT_EQ(0, vd_doorbell(self->fd, self->q.c.handle, VIADUCT_DOORBELL_RQ));
	ASSERT_EQ(0, vd_qp_wait_consumed(&self->q, 2000));
	ASSERT_EQ(0, vd_query_qp(self->fd, self->q.c.handle, &qq));
	EXPECT_EQ(VIADUCT_QPS_IDLE, qq.state);
	EXPECT_EQ(1, qq.rq_outstanding);
	vd_sleep_ms(50);
	EXPECT_EQ(0, vd_cring_avail(self->rring));
	qpl_destroy_all(_metadata, self);
}

TEST_F(qpl, unsignaled_sends_flush_too)
{
	unsigned int i;

	/* a flushed WR always completes, signaled or not */
	for (i = 0; i < 4; i++)
		vd_post_sqe(&self->q, 10 + i, VIADUCT_OP_SEND, 0);
	ASSERT_EQ(0, vd_doorbell(self->fd, self->q.c.handle, VIADUCT_DOORBELL_SQ));
	ASSERT_EQ(0, vd_qp_wait_consumed(&self->q, 2000));
	ASSERT_EQ(0, vd_modify_state(self->fd, self->q.c.handle, VIADUCT_QPS_ERROR));
	expect_all_flushed(_metadata, self, 10, 4, 0, 0);
	qpl_destroy_all(_metadata, self);
}

TEST_F(qpl, full_queues)
{
	const struct viaduct_create_qp *c = &self->q.c;
	struct viaduct_query_qp qq;
	unsigned int i;
	__u32 ns = c->sq_depth, nr = c->rq_depth;

	/* fill both queues to the brim; the CQs hold it all (64 >= 16) */
	if (self->sring->entries < ns + (self->sring == self->rring ? nr : 0) ||
	    self->rring->entries < nr)
		SKIP(return, "completion rings too small for full queues");
	for (i = 0; i < ns; i++)
		vd_post_sqe(&self->q, i, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED);
	for (i = 0; i < nr; i++)
		vd_post_rqe(&self->q, 100 + i, NULL, 0, 0);
	ASSERT_EQ(0, vd_doorbell(self->fd, c->handle, VIADUCT_DOORBELL_SQ | VIADUCT_DOORBELL_RQ));
	ASSERT_EQ(0, vd_qp_wait_consumed(&self->q, 2000));
	ASSERT_EQ(0, vd_query_qp(self->fd, c->handle, &qq));
	EXPECT_EQ(ns, qq.sq_outstanding);
	EXPECT_EQ(nr, qq.rq_outstanding);
	/* one more than the queue holds: the kernel must not take it */
	vd_post_sqe(&self->q, 999, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED);
	EXPECT_EQ(0, vd_doorbell(self->fd, c->handle, VIADUCT_DOORBELL_SQ));
	ASSERT_EQ(0, vd_query_qp(self->fd, c->handle, &qq));
	EXPECT_GE(ns, qq.sq_outstanding);
	EXPECT_GE(ns, vd_sq_consumer(&self->q));
	qpl_destroy_all(_metadata, self);
}

/* ------------------------------------------------------------------ */
/* State machine, malformed WQEs, destroy with work outstanding       */
/* ------------------------------------------------------------------ */

VD_RES_FIXTURE("qp")

TEST_F(res, state_machine)
{
	static const struct { __u32 from, to; int ret; } steps[] = {
		{ VIADUCT_QPS_IDLE, VIADUCT_QPS_RTS, -EINVAL },
		{ VIADUCT_QPS_IDLE, VIADUCT_QPS_CLOSING, -EINVAL },
		{ VIADUCT_QPS_IDLE, VIADUCT_QPS_TERMINATE, -EINVAL },
		{ VIADUCT_QPS_IDLE, VIADUCT_QPS_ERROR, 0 },
		{ VIADUCT_QPS_ERROR, VIADUCT_QPS_RTS, -EINVAL },
		{ VIADUCT_QPS_ERROR, VIADUCT_QPS_CLOSING, -EINVAL },
		{ VIADUCT_QPS_ERROR, VIADUCT_QPS_TERMINATE, -EINVAL },
		{ VIADUCT_QPS_ERROR, VIADUCT_QPS_MAX + 1, -EINVAL },
		/* Error -> Error: verbs allow it, the iWARP verbs draft does not; either will do */
		{ VIADUCT_QPS_ERROR, VIADUCT_QPS_ERROR, 1 },
		{ VIADUCT_QPS_ERROR, VIADUCT_QPS_IDLE, 0 },
		{ VIADUCT_QPS_IDLE, VIADUCT_QPS_ERROR, 0 },
		{ VIADUCT_QPS_ERROR, VIADUCT_QPS_IDLE, 0 },
		{ VIADUCT_QPS_IDLE, VIADUCT_QPS_RTS, -EINVAL },
	};
	struct viaduct_create_cq cq;
	struct vd_qp q;
	unsigned int i;
	int pd = vd_create_pd(self->fd);

	ASSERT_LT(0, pd);
	ASSERT_EQ(0, vd_create_cq(self->fd, 16, -1, 0, &cq));
	ASSERT_EQ(0, vd_qp_make(self->fd, &q, pd, cq.handle, cq.handle, 8, 0, 0));
	for (i = 0; i < VD_ARRAY_SIZE(steps); i++) {
		__u32 from = steps[i].from, to = steps[i].to;
		int want = steps[i].ret;

		int got;

		ASSERT_EQ((int)from, vd_qp_state(self->fd, q.c.handle)) TH_LOG("step %u", i);
		got = vd_modify_state(self->fd, q.c.handle, to);
		if (want == 1) {
			EXPECT_TRUE(got == 0 || got == -EINVAL) TH_LOG("step %u: %d", i, got);
			want = got;
		}
		EXPECT_EQ(want, got) TH_LOG("step %u: %u -> %u", i, from, to);
		EXPECT_EQ(want ? (int)from : (int)to, vd_qp_state(self->fd, q.c.handle))
			TH_LOG("step %u: state after %u -> %u", i, from, to);
	}
	vd_qp_unmap(&q);
	EXPECT_EQ(0, vd_destroy_qp(self->fd, q.c.handle));
	EXPECT_EQ(0, vd_destroy_cq(self->fd, cq.handle));
	EXPECT_EQ(0, vd_destroy_pd(self->fd, pd));
	vd_snap_expect_back(&self->before, 3000, "state_machine");
}

TEST_F(res, destroy_with_work_outstanding)
{
	struct viaduct_create_cq cq;
	struct vd_qp q;
	unsigned int i;
	int pd = vd_create_pd(self->fd);

	ASSERT_LT(0, pd);
	ASSERT_EQ(0, vd_create_cq(self->fd, 64, -1, 0, &cq));
	ASSERT_EQ(0, vd_qp_make(self->fd, &q, pd, cq.handle, cq.handle, 16, 0, 0));
	for (i = 0; i < 10; i++) {
		vd_post_sqe(&q, i, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED);
		vd_post_rqe(&q, i, NULL, 0, 0);
	}
	ASSERT_EQ(0, vd_doorbell(self->fd, q.c.handle, VIADUCT_DOORBELL_SQ | VIADUCT_DOORBELL_RQ));
	ASSERT_EQ(0, vd_qp_wait_consumed(&q, 2000));
	/* the mappings stay while the QP goes */
	EXPECT_EQ(0, vd_destroy_qp(self->fd, q.c.handle));
	q.db->sq_producer = 12345;
	vd_qp_unmap(&q);
	EXPECT_EQ(0, vd_destroy_cq(self->fd, cq.handle));
	EXPECT_EQ(0, vd_destroy_pd(self->fd, pd));
	vd_snap_expect_back(&self->before, 3000, "destroy_with_work_outstanding");
}

TEST_F(res, close_with_everything_live)
{
	struct viaduct_create_cq cq;
	struct vd_qp q[4];
	unsigned int i, j;
	int pd = vd_create_pd(self->fd);
	char *buf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ch = vd_comp_channel(self->fd);

	ASSERT_LT(0, pd);
	ASSERT_LE(0, ch);
	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_LT(0, vd_reg_mr(self->fd, pd, buf, 1 << 20, VIADUCT_ACCESS_LOCAL_WRITE, NULL));
	ASSERT_EQ(0, vd_create_cq(self->fd, 64, ch, 0, &cq));
	ASSERT_EQ(0, vd_arm_cq(self->fd, cq.handle, VIADUCT_ARM_NEXT));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, vd_qp_make(self->fd, &q[i], pd, i & 1 ? cq.handle : 0, cq.handle, 8,
					i & 2 ? VIADUCT_QP_F_POLLED : 0, 0));
		for (j = 0; j < 4; j++) {
			vd_post_sqe(&q[i], j, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED);
			vd_post_rqe(&q[i], j, NULL, 0, 0);
		}
		EXPECT_EQ(0, vd_doorbell(self->fd, q[i].c.handle,
					 VIADUCT_DOORBELL_SQ | VIADUCT_DOORBELL_RQ));
	}
	/* close with all of it live and mapped; the channel outlives the file */
	vd_testdev_close(&self->dev);
	EXPECT_EQ(0, vd_wait_readable(ch, 100));
	for (i = 0; i < 4; i++)
		vd_qp_unmap(&q[i]);
	close(ch);
	vd_snap_drop_file(&self->before);
	vd_snap_expect_back(&self->before, 5000, "close_with_everything_live");
}

/* Malformed WQEs: each makes an error CQE, puts the QP in Error, and raises an event. */
FIXTURE(badwqe)
{
	struct vd_testdev dev;
	struct vd_snap before;
	int fd;
	int pd;
	struct viaduct_create_cq cq;
	struct vd_cring ring;
	struct vd_qp q;
};

FIXTURE_VARIANT(badwqe)
{
	int recv;		/* an RQE, else an SQE */
	__u8 opcode;
	__u8 flags;
	__u16 num_sge;		/* 0xffff: max_send_sge/max_recv_sge + 1 */
	__u32 length;		/* 0xffffffff: max_inline + 1 */
	__u8 status;		/* the error CQE's */
	__u32 event;
};

FIXTURE_VARIANT_ADD(badwqe, bad_opcode) {
	.opcode = VIADUCT_OP_MAX + 1, .flags = VIADUCT_SQE_SIGNALED,
	.status = VIADUCT_WC_LOC_QP_OP_ERR, .event = VIADUCT_EVENT_QP_REQ_ERR,
};
FIXTURE_VARIANT_ADD(badwqe, opcode_255) {
	.opcode = 255, .status = VIADUCT_WC_LOC_QP_OP_ERR, .event = VIADUCT_EVENT_QP_REQ_ERR,
};
FIXTURE_VARIANT_ADD(badwqe, unknown_flag) {
	.opcode = VIADUCT_OP_SEND, .flags = VIADUCT_SQE_SIGNALED | 0x80,
	.status = VIADUCT_WC_LOC_QP_OP_ERR, .event = VIADUCT_EVENT_QP_REQ_ERR,
};
FIXTURE_VARIANT_ADD(badwqe, too_many_sges) {
	.opcode = VIADUCT_OP_SEND, .flags = VIADUCT_SQE_SIGNALED, .num_sge = 0xffff,
	.status = VIADUCT_WC_LOC_LEN_ERR, .event = VIADUCT_EVENT_QP_REQ_ERR,
};
FIXTURE_VARIANT_ADD(badwqe, inline_too_long) {
	.opcode = VIADUCT_OP_SEND, .flags = VIADUCT_SQE_SIGNALED | VIADUCT_SQE_INLINE,
	.length = 0xffffffff,
	.status = VIADUCT_WC_LOC_LEN_ERR, .event = VIADUCT_EVENT_QP_REQ_ERR,
};
FIXTURE_VARIANT_ADD(badwqe, recv_too_many_sges) {
	.recv = 1, .num_sge = 0xffff,
	.status = VIADUCT_WC_LOC_LEN_ERR, .event = VIADUCT_EVENT_QP_REQ_ERR,
};

FIXTURE_SETUP(badwqe)
{
	int ret = vd_testdev_up(&self->dev, "bw");

	self->fd = self->dev.fd;
	ASSERT_EQ(0, ret) TH_LOG("test device %s: step %d", self->dev.name, -ret);
	vd_snap_take(&self->before);
	self->pd = vd_create_pd(self->fd);
	ASSERT_LT(0, self->pd);
	ASSERT_EQ(0, vd_create_cq(self->fd, 64, -1, 0, &self->cq));
	ASSERT_EQ(0, vd_cring_map(&self->ring, self->fd, self->cq.mmap_key, self->cq.mmap_size,
				  self->cq.entries));
	vd_qp_args(&self->q.c, self->pd, self->cq.handle, self->cq.handle);
	self->q.c.user_data = 0xabad1dea;
	self->q.c.max_inline = 16;
	ASSERT_EQ(0, vd_qp_create(self->fd, &self->q));
}

FIXTURE_TEARDOWN(badwqe)
{
	vd_qp_unmap(&self->q);
	vd_cring_unmap(&self->ring);
	vd_testdev_down(&self->dev);
}

TEST_F(badwqe, error_cqe_state_event)
{
	struct viaduct_async_event ev;
	struct viaduct_query_qp qq;
	struct viaduct_cqe e;
	struct vd_qp *q = &self->q;
	int seen_bad = 0, seen_7 = 0, seen_8 = 0;

	/* a good receive first: it is flushed when the QP fails */
	vd_post_rqe(q, 7, NULL, 0, 0);
	ASSERT_EQ(0, vd_doorbell(self->fd, q->c.handle, VIADUCT_DOORBELL_RQ));
	ASSERT_EQ(0, vd_qp_wait_consumed(q, 2000));

	if (variant->recv) {
		struct viaduct_rqe *r = vd_rq_slot(q, q->rq_prod);

		memset(r, 0, q->c.rq_wqe_size);
		r->wr_id = 0xbad;
		r->num_sge = variant->num_sge == 0xffff ? q->c.max_recv_sge + 1 : variant->num_sge;
		q->rq_prod++;
		__atomic_store_n(&q->db->rq_producer, q->rq_prod, __ATOMIC_RELEASE);
	} else {
		struct viaduct_sqe *s = vd_sq_slot(q, q->sq_prod);

		memset(s, 0, q->c.sq_wqe_size);
		s->wr_id = 0xbad;
		s->opcode = variant->opcode;
		s->flags = variant->flags;
		s->num_sge = variant->num_sge == 0xffff ? q->c.max_send_sge + 1 : variant->num_sge;
		s->length = variant->length == 0xffffffff ? q->c.max_inline + 1 : variant->length;
		q->sq_prod++;
		__atomic_store_n(&q->db->sq_producer, q->sq_prod, __ATOMIC_RELEASE);
	}
	/* and a good send after it, which must be flushed */
	vd_post_sqe(q, 8, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED);
	ASSERT_EQ(0, vd_doorbell(self->fd, q->c.handle, VIADUCT_DOORBELL_SQ | VIADUCT_DOORBELL_RQ));

	ASSERT_EQ(0, vd_wait_async(self->fd, variant->event, q->c.handle, &ev, 3000))
		TH_LOG("no async event %u for the QP", variant->event);
	EXPECT_EQ(0xabad1dea, ev.user_data);
	EXPECT_EQ(0, ev.reserved);
	ASSERT_EQ(0, vd_query_qp(self->fd, q->c.handle, &qq));
	EXPECT_EQ(VIADUCT_QPS_ERROR, qq.state);

	/* the bad one completes with its error; the rest are flushed */
	while (vd_cring_wait(&self->ring, &e, 1, 500) == 1) {
		if (e.wr_id == 0xbad) {
			seen_bad++;
			EXPECT_EQ(variant->status, e.status);
			EXPECT_EQ(variant->recv ? VIADUCT_WC_F_RECV : 0, e.flags & VIADUCT_WC_F_RECV);
		} else if (e.wr_id == 7) {
			seen_7++;
			EXPECT_EQ(VIADUCT_WC_FLUSHED, e.status);
		} else if (e.wr_id == 8) {
			seen_8++;
			EXPECT_EQ(VIADUCT_WC_FLUSHED, e.status);
		} else {
			EXPECT_TRUE(0) TH_LOG("unexpected CQE wr_id %#llx", (unsigned long long)e.wr_id);
		}
	}
	EXPECT_EQ(1, seen_bad);
	EXPECT_EQ(1, seen_7);
	EXPECT_EQ(1, seen_8);
	/* the QP can be brought back and destroyed */
	EXPECT_EQ(0, vd_modify_state(self->fd, q->c.handle, VIADUCT_QPS_IDLE));
	vd_qp_unmap(q);
	EXPECT_EQ(0, vd_destroy_qp(self->fd, q->c.handle));
	vd_cring_unmap(&self->ring);
	EXPECT_EQ(0, vd_destroy_cq(self->fd, self->cq.handle));
	EXPECT_EQ(0, vd_destroy_pd(self->fd, self->pd));
	vd_snap_expect_back(&self->before, 3000, "malformed WQE");
}

/* A malformed SQE: the QP goes to Error and raises QP_REQ_ERR. */
static int break_qp(int fd, struct vd_qp *q)
{
	struct viaduct_query_qp qq;
	uint64_t end = vd_now_ms() + 3000;

	vd_post_sqe(q, 0xbad, 255, VIADUCT_SQE_SIGNALED);
	if (vd_doorbell(fd, q->c.handle, VIADUCT_DOORBELL_SQ))
		return -1;
	/* the event is queued with the state change, under the QP's locks */
	while (!vd_query_qp(fd, q->c.handle, &qq) && qq.state != VIADUCT_QPS_ERROR) {
		if (vd_now_ms() > end)
			return -1;
		usleep(1000);
	}
	return qq.state == VIADUCT_QPS_ERROR ? 0 : -1;
}

/*
 * Handles are reused, so an event of a destroyed QP that was not read yet
 * goes with it: read later, it would name the QP that got the handle next.
 * The events of the others stay, in order.
 */
TEST(destroyed_qps_events_go_with_it)
{
	struct vd_testdev dev;
	struct viaduct_async_event ev;
	struct viaduct_create_cq cq;
	struct vd_qp a = {}, b = {}, c = {};
	int fd, pd, n = 0;

	ASSERT_EQ(0, vd_testdev_up(&dev, "ev"));
	fd = dev.fd;
	pd = vd_create_pd(fd);
	ASSERT_LT(0, pd);
	ASSERT_EQ(0, vd_create_cq(fd, 64, -1, 0, &cq));
	vd_qp_args(&b.c, pd, cq.handle, cq.handle);
	b.c.user_data = 0xb;
	ASSERT_EQ(0, vd_qp_create(fd, &b));
	vd_qp_args(&a.c, pd, cq.handle, cq.handle);
	a.c.user_data = 0xa;
	ASSERT_EQ(0, vd_qp_create(fd, &a));
	ASSERT_EQ(0, break_qp(fd, &a));
	ASSERT_EQ(0, break_qp(fd, &b));
	vd_qp_unmap(&a);
	ASSERT_EQ(0, vd_destroy_qp(fd, a.c.handle));
	vd_qp_args(&c.c, pd, cq.handle, cq.handle);
	c.c.user_data = 0xc;
	ASSERT_EQ(0, vd_qp_create(fd, &c));
	/* the lowest free handle: the destroyed QP's */
	ASSERT_EQ(a.c.handle, c.c.handle);
	while (vd_read_async(fd, &ev, 200) == 0) {
		n++;
		EXPECT_NE(0xa, ev.user_data);
		EXPECT_FALSE(ev.handle == c.c.handle)
			TH_LOG("event %u of the destroyed QP read as the new one's", ev.type);
		EXPECT_EQ(b.c.handle, ev.handle);
		EXPECT_EQ(VIADUCT_EVENT_QP_REQ_ERR, ev.type);
		EXPECT_EQ(0xb, ev.user_data);
	}
	EXPECT_EQ(1, n) TH_LOG("the other QP's event is kept");
	vd_qp_unmap(&b);
	vd_qp_unmap(&c);
	EXPECT_EQ(0, vd_destroy_qp(fd, b.c.handle));
	EXPECT_EQ(0, vd_destroy_qp(fd, c.c.handle));
	EXPECT_EQ(0, vd_destroy_cq(fd, cq.handle));
	EXPECT_EQ(0, vd_destroy_pd(fd, pd));
	vd_testdev_down(&dev);
}

/* ------------------------------------------------------------------ */
/* Doorbells: system call and polled with NEED_WAKEUP                 */
/* ------------------------------------------------------------------ */

#define BURST 1000

struct burst_res {
	int pd;
	struct viaduct_create_cq cq;
	struct vd_cring ring;
	struct vd_qp q;
};

static int burst_setup(int fd, struct burst_res *b, __u32 flags)
{
	struct viaduct_device_attr a = { .index = VIADUCT_INDEX_SELECTED };
	__u32 entries;
	int ret;

	if (vd_ioctl(fd, VIADUCT_IOCTL_QUERY_DEVICE, &a))
		return -errno;
	entries = a.max_cqe < 256 ? a.max_cqe : 256;
	b->pd = vd_create_pd(fd);
	if (b->pd < 0)
		return b->pd;
	ret = vd_create_cq(fd, entries, -1, 0, &b->cq);
	if (ret)
		return ret;
	ret = vd_cring_map(&b->ring, fd, b->cq.mmap_key, b->cq.mmap_size, b->cq.entries);
	if (ret)
		return ret;
	/* an SQ smaller than the burst: the kernel must keep consuming */
	return vd_qp_make(fd, &b->q, b->pd, b->cq.handle, b->cq.handle, 64, flags, 1);
}

static void burst_teardown(int fd, struct burst_res *b)
{
	vd_qp_unmap(&b->q);
	vd_cring_unmap(&b->ring);
	vd_destroy_qp(fd, b->q.c.handle);
	vd_destroy_cq(fd, b->cq.handle);
	vd_destroy_pd(fd, b->pd);
}

/*
 * Posts BURST flushed sends to a polled QP, ringing DOORBELL only when the
 * kernel asks for it; reads the completions as it goes. Returns 0 and the
 * number of DOORBELL calls in *@doorbells, or a negative step.
 */
static int polled_burst(int fd, struct burst_res *b, unsigned int *doorbells,
			unsigned int *bad_cqes)
{
	struct vd_qp *q = &b->q;
	unsigned int posted = 0, done = 0;
	uint64_t end = vd_now_ms() + 60000;
	__u32 base = q->sq_prod;
	struct viaduct_cqe e;

	*doorbells = 0;
	*bad_cqes = 0;
	while (done < BURST) {
		int progress = 0;

		while (posted < BURST && !vd_sq_full(q) &&
		       q->sq_prod - base - done < b->ring.entries) {
			vd_post_sqe(q, posted, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED);
			posted++;
			progress = 1;
		}
		/* pairs with the worker's store of NEED_WAKEUP before its last look */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&q->db->flags, __ATOMIC_RELAXED) & VIADUCT_DB_F_NEED_WAKEUP) {
			if (vd_doorbell(fd, q->c.handle, VIADUCT_DOORBELL_SQ))
				return -1;
			(*doorbells)++;
		}
		while (vd_cring_poll(&b->ring, &e)) {
			if (e.wr_id != done || e.status != VIADUCT_WC_FLUSHED ||
			    (e.flags & VIADUCT_WC_F_RECV))
				(*bad_cqes)++;
			done++;
			progress = 1;
		}
		if (!progress) {
			if (vd_now_ms() > end)
				return -2;
			sched_yield();
		}
	}
	return vd_sq_consumer(q) == q->sq_prod ? 0 : -3;
}

/* Waits until the polling worker has cleared NEED_WAKEUP in @q's page. */
static int wait_worker_awake(struct vd_qp *q, unsigned int ms)
{
	uint64_t end = vd_now_ms() + ms;

	while (__atomic_load_n(&q->db->flags, __ATOMIC_ACQUIRE) & VIADUCT_DB_F_NEED_WAKEUP) {
		if (vd_now_ms() > end)
			return -1;
		vd_sleep_ms(1);
	}
	return 0;
}

/*
 * How many DOORBELL calls the first burst needs depends on how soon the
 * worker gets a CPU (the poster rings while NEED_WAKEUP is still set), so
 * only the protocol is checked there (none at all if the kick of the QP's
 * registration already woke it). Once the worker is known to be awake
 * and its idle time is far longer than the burst, a burst needs none.
 */
TEST_F_TIMEOUT(res, polled_doorbell_burst, 180)
{
	long long db0 = vd_stat(VD_ST_DOORBELLS), db1;
	unsigned int doorbells, awake_doorbells, bad;
	struct burst_res b;
	int ret;

	ASSERT_EQ(0, vd_poll_idle_raise(60000000));
	ASSERT_EQ(0, burst_setup(self->fd, &b, VIADUCT_QP_F_POLLED));
	ret = polled_burst(self->fd, &b, &doorbells, &bad);
	ASSERT_EQ(0, ret) TH_LOG("burst failed at step %d (consumer %u, producer %u)", -ret,
				 vd_sq_consumer(&b.q), b.q.sq_prod);
	EXPECT_EQ(0, bad) TH_LOG("CQEs out of order or not flushed");
	TH_LOG("%u WQEs took %u DOORBELL calls (the worker asleep at first)", BURST, doorbells);
	db1 = vd_stat(VD_ST_DOORBELLS);
	if (db0 >= 0 && db1 >= 0) {
		EXPECT_EQ(db0 + doorbells, db1) TH_LOG("module counted other doorbells");
	} else {
		TH_LOG("viaductctl reports no doorbell counter: only the test's own count checked");
	}

	ASSERT_EQ(0, wait_worker_awake(&b.q, 60000)) TH_LOG("the worker never cleared NEED_WAKEUP");
	ret = polled_burst(self->fd, &b, &awake_doorbells, &bad);
	ASSERT_EQ(0, ret) TH_LOG("second burst failed at step %d", -ret);
	EXPECT_EQ(0, bad) TH_LOG("second burst: CQEs out of order or not flushed");
	EXPECT_EQ(0, awake_doorbells) TH_LOG("DOORBELL rung while the worker was awake");
	burst_teardown(self->fd, &b);
	vd_snap_expect_back(&self->before, 3000, "polled_doorbell_burst");
}

/* The same burst in a child under strace, which counts DOORBELL calls independently. */
static void __attribute__((constructor)) burst_child(void)
{
	const char *dev = getenv("VD_QP_BURST_DEVICE");
	struct vd_testdev d = { 0 };
	unsigned int doorbells, bad;
	struct burst_res b;
	int fd;

	if (!dev)
		return;
	snprintf(d.name, sizeof(d.name), "%s", dev);
	fd = vd_testdev_open_selected(&d);
	if (fd < 0 || burst_setup(fd, &b, VIADUCT_QP_F_POLLED))
		_exit(2);
	if (polled_burst(fd, &b, &doorbells, &bad) || bad)
		_exit(3);
	burst_teardown(fd, &b);
	printf("doorbells %u\n", doorbells);
	/* _exit() does not flush stdio, and stdout is a pipe here */
	fflush(stdout);
	_exit(0);
}

static const char *find_strace(void)
{
	static const char *const paths[] = { "/usr/bin/strace", "/bin/strace", "/usr/local/bin/strace" };
	unsigned int i;

	for (i = 0; i < VD_ARRAY_SIZE(paths); i++)
		if (!access(paths[i], X_OK))
			return paths[i];
	return NULL;
}

TEST_F_TIMEOUT(res, polled_doorbell_burst_strace, 180)
{
	char cmd[1024], out[] = "/tmp/vd_burst_XXXXXX", line[512];
	unsigned int own = ~0U, traced = 0;
	const char *strace = find_strace();
	FILE *f;
	int tfd, st;

	if (!strace)
		SKIP(return, "no strace");
	ASSERT_EQ(0, vd_poll_idle_raise(60000000));
	tfd = mkstemp(out);
	ASSERT_LE(0, tfd);
	close(tfd);
	/* DOORBELL is _IOW(0xd6, 0x1c, 8 bytes) */
	snprintf(cmd, sizeof(cmd),
		 "VD_QP_BURST_DEVICE=%s %s -f -qq -e trace=ioctl -o %s /proc/%d/exe",
		 self->dev.name, strace, out, getpid());
	f = popen(cmd, "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		sscanf(line, "doorbells %u", &own);
	st = pclose(f);
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("burst child status %#x", st);
	f = fopen(out, "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "0xd6, 0x1c,"))
			traced++;
	fclose(f);
	unlink(out);
	TH_LOG("under strace: %u DOORBELL calls counted by the child, %u traced", own, traced);
	/* how many depends on scheduling; that strace sees each one does not */
	EXPECT_EQ(own, traced);
	vd_snap_expect_back(&self->before, 3000, "polled_doorbell_burst_strace");
}

TEST_F(res, syscall_doorbell)
{
	unsigned int i, round, n = 0;
	struct viaduct_cqe e;
	struct burst_res b;
	__u32 c0;

	ASSERT_EQ(0, burst_setup(self->fd, &b, 0));
	for (round = 0; round < 8; round++) {
		unsigned int k = round % 2 ? b.q.c.sq_depth : 1 + round;

		c0 = vd_sq_consumer(&b.q);
		for (i = 0; i < k; i++)
			vd_post_sqe(&b.q, n + i, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED);
		/* nobody polls a syscall-mode QP */
		vd_sleep_ms(30);
		EXPECT_EQ(c0, vd_sq_consumer(&b.q)) TH_LOG("round %u: consumed without a doorbell",
							   round);
		ASSERT_EQ(0, vd_doorbell(self->fd, b.q.c.handle, VIADUCT_DOORBELL_SQ));
		/* taken by the time the call returns */
		EXPECT_EQ(b.q.sq_prod, vd_sq_consumer(&b.q)) TH_LOG("round %u", round);
		for (i = 0; i < k; i++) {
			ASSERT_EQ(1, vd_cring_wait(&b.ring, &e, 1, 3000));
			EXPECT_EQ(n + i, e.wr_id);
			EXPECT_EQ(VIADUCT_WC_FLUSHED, e.status);
		}
		n += k;
	}
	burst_teardown(self->fd, &b);
	vd_snap_expect_back(&self->before, 3000, "syscall_doorbell");
}

TEST_F(res, garbage_indices)
{
	static const __u32 bad[] = { 0x80000000U, 0xffffffffU, 1000000, 17 };
	struct burst_res b;
	unsigned int i;

	ASSERT_EQ(0, burst_setup(self->fd, &b, 0));
	/* producer indices far beyond the ring, and garbage in every slot */
	for (i = 0; i < VD_ARRAY_SIZE(bad); i++) {
		memset(b.q.sq, 0xa5 + i, b.q.c.sq_size);
		memset(b.q.rq, 0x3c + i, b.q.c.rq_size);
		__atomic_store_n(&b.q.db->sq_producer, bad[i], __ATOMIC_RELEASE);
		__atomic_store_n(&b.q.db->rq_producer, bad[i] * 3, __ATOMIC_RELEASE);
		vd_doorbell(self->fd, b.q.c.handle, VIADUCT_DOORBELL_SQ | VIADUCT_DOORBELL_RQ);
		/* the kernel owns the consumers: never past its own ring */
		EXPECT_GE(b.q.c.sq_depth * (i + 1), vd_sq_consumer(&b.q))
			TH_LOG("sq_consumer %u", vd_sq_consumer(&b.q));
		/* and the CQ never claims more than it holds */
		EXPECT_GE(b.ring.entries, vd_cring_avail(&b.ring));
		b.ring.consumer = __atomic_load_n(&b.ring.hdr->producer, __ATOMIC_ACQUIRE);
		__atomic_store_n(&b.ring.hdr->consumer, b.ring.consumer, __ATOMIC_RELEASE);
	}
	EXPECT_LE(0, vd_qp_state(self->fd, b.q.c.handle));
	burst_teardown(self->fd, &b);
	vd_snap_expect_back(&self->before, 3000, "garbage_indices");
}

/*
 * A ring shorter than its queue: SQ and RQ of 16 in flight behind rings of
 * 4 and 2 slots. Each doorbell frees the slots, so the queues fill through
 * the short rings; with the queue full the ring keeps what it holds (the
 * producer may not pass the ring), and a flush completes everything, the
 * queue's and the ring's, in posting order. A caller built before the
 * ring fields (the first published size) gets rings as deep as its queues.
 */
TEST_F(res, short_ring)
{
	unsigned int i, ns = 0, nr = 0;
	struct viaduct_create_qp old;
	struct viaduct_create_cq cq;
	struct viaduct_query_qp qq;
	struct viaduct_cqe e;
	struct vd_cring ring;
	struct vd_qp q;
	int pd;

	pd = vd_create_pd(self->fd);
	ASSERT_LT(0, pd);
	ASSERT_EQ(0, vd_create_cq(self->fd, 64, -1, 0, &cq));
	ASSERT_EQ(0, vd_cring_map(&ring, self->fd, cq.mmap_key, cq.mmap_size, cq.entries));
	memset(&q, 0, sizeof(q));
	vd_qp_args(&q.c, pd, cq.handle, cq.handle);
	q.c.sq_ring_depth = 4;
	q.c.rq_ring_depth = 2;
	ASSERT_EQ(0, vd_qp_create(self->fd, &q));
	ASSERT_EQ(16, q.c.sq_depth);
	ASSERT_EQ(4, q.c.sq_ring_depth);
	ASSERT_EQ(2, q.c.rq_ring_depth);
	EXPECT_EQ(MAP_FAILED, vd_mmap_key(self->fd, q.c.sq_key, q.c.sq_size + VD_PAGE));

	for (i = 0; i < 20; i++) {
		vd_post_sqe(&q, 100 + i, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED);
		if (i % 4 == 3)
			ASSERT_EQ(0, vd_doorbell(self->fd, q.c.handle, VIADUCT_DOORBELL_SQ));
	}
	for (i = 0; i < 18; i++) {
		vd_post_rqe(&q, 200 + i, NULL, 0, 0);
		if (i % 2)
			ASSERT_EQ(0, vd_doorbell(self->fd, q.c.handle, VIADUCT_DOORBELL_RQ));
	}
	/* sixteen each in flight, the last four and two waiting in the rings */
	EXPECT_EQ(16, vd_sq_consumer(&q));
	EXPECT_EQ(16, vd_rq_consumer(&q));
	EXPECT_TRUE(vd_sq_full(&q));
	EXPECT_TRUE(vd_rq_full(&q));
	ASSERT_EQ(0, vd_query_qp(self->fd, q.c.handle, &qq));
	EXPECT_EQ(VIADUCT_QPS_IDLE, qq.state);
	EXPECT_EQ(16, qq.sq_outstanding);
	EXPECT_EQ(16, qq.rq_outstanding);
	EXPECT_EQ(0, vd_cring_avail(&ring));

	ASSERT_EQ(0, vd_modify_state(self->fd, q.c.handle, VIADUCT_QPS_ERROR));
	while (ns + nr < 20 + 18) {
		ASSERT_EQ(1, vd_cring_wait(&ring, &e, 1, 3000))
			TH_LOG("%u sends, %u receives flushed of 20, 18", ns, nr);
		EXPECT_EQ(VIADUCT_WC_FLUSHED, e.status);
		if (e.flags & VIADUCT_WC_F_RECV) {
			EXPECT_EQ(200 + nr, e.wr_id);
			nr++;
		} else {
			EXPECT_EQ(100 + ns, e.wr_id);
			ns++;
		}
	}
	EXPECT_EQ(20, vd_sq_consumer(&q));
	EXPECT_EQ(18, vd_rq_consumer(&q));
	vd_qp_unmap(&q);
	EXPECT_EQ(0, vd_destroy_qp(self->fd, q.c.handle));

	/* the first published size: no ring fields, rings of the queues */
	vd_qp_args(&old, pd, cq.handle, cq.handle);
	old.sq_ring_depth = 0xa5a5a5a5U;
	old.rq_ring_depth = 0x5a5a5a5aU;
	ASSERT_EQ(0, ioctl(self->fd, _IOC(_IOC_READ | _IOC_WRITE, _IOC_TYPE(VIADUCT_IOCTL_CREATE_QP),
					  _IOC_NR(VIADUCT_IOCTL_CREATE_QP),
					  VIADUCT_CREATE_QP_SIZE_VER0), &old));
	/* the module neither read nor wrote past that size */
	EXPECT_EQ(0xa5a5a5a5U, old.sq_ring_depth);
	EXPECT_EQ(0x5a5a5a5aU, old.rq_ring_depth);
	EXPECT_EQ((16 * (__u64)old.sq_wqe_size + VD_PAGE - 1) / VD_PAGE * VD_PAGE, old.sq_size);
	EXPECT_EQ(0, vd_destroy_qp(self->fd, old.handle));

	vd_cring_unmap(&ring);
	EXPECT_EQ(0, vd_destroy_cq(self->fd, cq.handle));
	EXPECT_EQ(0, vd_destroy_pd(self->fd, pd));
	vd_snap_expect_back(&self->before, 3000, "short_ring");
}

TEST_HARNESS_MAIN
