// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite viaduct_qp: the QP state table (every pair, against an
 * explicit matrix), all-or-nothing modify, WQE validation over tables of
 * good and bad WQEs, copying a WQE out of its slot (header, then what it
 * declares within the limits), creation limits, and real QPs driven through their
 * kernel-allocated rings: taking WQEs in Idle, flushing on Error in post
 * order, malformed WQEs and indices, completions in RTS, CQ overflow, and
 * the polling worker with its NEED_WAKEUP protocol.
 *
 * The tests play the user: they write WQEs into the ring memory and move
 * the producer index with a store-release, as a mapped process would.
 */
#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/processor.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "../conn.h"
#include "../cq.h"
#include "../doorbell.h"
#include "../event.h"
#include "../pd.h"
#include "../qp.h"
#include "../ring.h"
#include "../viaduct.h"

#define IDLE	VIADUCT_QPS_IDLE
#define RTS	VIADUCT_QPS_RTS
#define CLOS	VIADUCT_QPS_CLOSING
#define TERM	VIADUCT_QPS_TERMINATE
#define ERR	VIADUCT_QPS_ERROR
#define NSTATES	(VIADUCT_QPS_MAX + 1)

#define OK	0
#define BAD	(-EINVAL)

/* --- The state table ---------------------------------------------------- */

/* { without an LLP stream, with one } */
#define YY	{ OK, OK }
#define NY	{ BAD, OK }
#define NN	{ BAD, BAD }

/*
 * expect_state[cur][next][has_llp] for a request that changes the state
 * only. Idle -> RTS needs an LLP stream; Closing and Terminate accept
 * nothing (the transport moves them on).
 */
static const int expect_state[NSTATES][NSTATES][2] = {
	/*	  IDLE RTS CLOSING TERMINATE ERROR */
	[IDLE] = { YY, NY, NN, NN, YY },
	[RTS]  = { NN, YY, YY, YY, YY },
	[CLOS] = { NN, NN, NN, NN, NN },
	[TERM] = { NN, NN, NN, NN, NN },
	[ERR]  = { YY, NN, NN, NN, NN },
};

/* The same with attributes (ORD) changed along: only into Idle or RTS. */
static const int expect_attrs[NSTATES][NSTATES][2] = {
	[IDLE] = { YY, NY, NN, NN, NN },
	[RTS]  = { NN, YY, NN, NN, NN },
	[CLOS] = { NN, NN, NN, NN, NN },
	[TERM] = { NN, NN, NN, NN, NN },
	[ERR]  = { NN, NN, NN, NN, NN },
};

static void qp_test_transition_table(struct kunit *test)
{
	const u32 st = VIADUCT_QP_ATTR_STATE;
	const u32 with_attrs = st | VIADUCT_QP_ATTR_ORD;
	const u32 attrs_only = VIADUCT_QP_ATTR_ALL & ~st;
	u32 cur, next, llp;
	int got;

	for (cur = 0; cur < NSTATES; cur++) {
		for (next = 0; next < NSTATES; next++) {
			for (llp = 0; llp < 2; llp++) {
				got = vd_qp_check_transition(cur, next, st, llp);
				KUNIT_EXPECT_EQ_MSG(test, got,
						    expect_state[cur][next][llp],
						    "state only: %u -> %u, llp %u",
						    cur, next, llp);
				got = vd_qp_check_transition(cur, next,
							     with_attrs, llp);
				KUNIT_EXPECT_EQ_MSG(test, got,
						    expect_attrs[cur][next][llp],
						    "with ORD: %u -> %u, llp %u",
						    cur, next, llp);
			}
		}
		/* States beyond the last, either way. */
		KUNIT_EXPECT_EQ(test,
				vd_qp_check_transition(cur, NSTATES, st, true),
				BAD);
		KUNIT_EXPECT_EQ(test,
				vd_qp_check_transition(NSTATES, cur, st, true),
				BAD);
		KUNIT_EXPECT_EQ(test,
				vd_qp_check_transition(cur, U32_MAX, st, true),
				BAD);
		/* An empty mask, an unknown bit. */
		KUNIT_EXPECT_EQ(test, vd_qp_check_transition(cur, cur, 0, true),
				BAD);
		KUNIT_EXPECT_EQ(test,
				vd_qp_check_transition(cur, cur, st | 0x10, true),
				BAD);
		/* Attributes alone keep the state: as X -> X with them. */
		KUNIT_EXPECT_EQ_MSG(test,
				    vd_qp_check_transition(cur, cur, attrs_only,
							   false),
				    expect_attrs[cur][cur][0], "state %u", cur);
	}
}

/* --- Creation limits ------------------------------------------------------ */

static void good_attr(struct viaduct_create_qp *a)
{
	memset(a, 0, sizeof(*a));
	a->reliability = VIADUCT_RELIABILITY_RELIABLE_DELIVERY;
	a->sq_depth = 8;
	a->rq_depth = 8;
	a->max_send_sge = 2;
	a->max_recv_sge = 2;
	a->max_inline = 32;
	a->ord = 4;
	a->ird = 4;
}

static void qp_test_caps(struct kunit *test)
{
	struct viaduct_create_qp a;
	struct vd_qp_caps c;

	good_attr(&a);
	a.sq_depth = 5;
	a.rq_depth = 1;
	a.max_send_sge = 1;
	a.max_inline = 0;
	a.max_recv_sge = 0;
	KUNIT_ASSERT_EQ(test, vd_qp_caps(&a, &c), 0);
	KUNIT_EXPECT_EQ(test, c.sq_depth, 8U);
	KUNIT_EXPECT_EQ(test, c.rq_depth, 1U);
	/* 32 + 16 -> the 64-byte minimum, which holds two SGEs */
	KUNIT_EXPECT_EQ(test, c.sq_wqe_size, 64U);
	KUNIT_EXPECT_EQ(test, c.sq.max_sge, 2U);
	KUNIT_EXPECT_EQ(test, c.sq.max_inline, 32U);
	KUNIT_EXPECT_EQ(test, c.rq_wqe_size, 64U);
	KUNIT_EXPECT_EQ(test, c.rq.max_sge, 3U);
	KUNIT_EXPECT_EQ(test, c.sq.max_msg_size, (u32)VD_MAX_MSG_SIZE);

	good_attr(&a);
	a.max_send_sge = VD_MAX_SGE;
	a.max_inline = VD_MAX_INLINE;
	a.max_recv_sge = VD_MAX_SGE;
	a.sq_depth = VD_MAX_QP_WR;
	a.max_msg_size = 4096;
	KUNIT_ASSERT_EQ(test, vd_qp_caps(&a, &c), 0);
	KUNIT_EXPECT_EQ(test, c.sq_depth, VD_MAX_QP_WR);
	KUNIT_EXPECT_EQ(test, c.sq_wqe_size,
			(u32)roundup_pow_of_two(32 + VD_MAX_SGE * 16));
	KUNIT_EXPECT_EQ(test, c.sq.max_sge, VD_MAX_SGE);
	KUNIT_EXPECT_EQ(test, c.sq.max_inline, VD_MAX_INLINE);
	KUNIT_EXPECT_EQ(test, c.rq.max_sge, VD_MAX_SGE);
	KUNIT_EXPECT_EQ(test, c.rq.max_msg_size, 4096U);

#define EXPECT_BAD(field, value) do {					\
		good_attr(&a);						\
		a.field = (value);					\
		KUNIT_EXPECT_EQ_MSG(test, vd_qp_caps(&a, &c), -EINVAL,	\
				    #field " = " #value);		\
	} while (0)
	EXPECT_BAD(reliability, 0);
	EXPECT_BAD(reliability, VIADUCT_RELIABILITY_UNRELIABLE |
		   VIADUCT_RELIABILITY_RELIABLE_DELIVERY);
	EXPECT_BAD(reliability, 1U << 3);
	EXPECT_BAD(flags, 1U << 1);
	EXPECT_BAD(access, 1U << 2);
	EXPECT_BAD(sq_depth, 0);
	EXPECT_BAD(rq_depth, 0);
	EXPECT_BAD(sq_depth, VD_MAX_QP_WR + 1);
	EXPECT_BAD(rq_depth, U32_MAX);
	EXPECT_BAD(max_send_sge, VD_MAX_SGE + 1);
	EXPECT_BAD(max_recv_sge, VD_MAX_SGE + 1);
	EXPECT_BAD(max_inline, VD_MAX_INLINE + 1);
	EXPECT_BAD(ord, VD_MAX_ORD + 1);
	EXPECT_BAD(ird, VD_MAX_IRD + 1);
	EXPECT_BAD(max_msg_size, (u32)VD_MAX_MSG_SIZE + 1);
	EXPECT_BAD(srq_handle, 1);	/* on an SRQ, with an RQ depth */
	EXPECT_BAD(sq_ring_depth, 9);	/* more slots than WRs in flight */
	EXPECT_BAD(rq_ring_depth, U32_MAX);
#undef EXPECT_BAD

	/* the rings: as deep as the queues, or fewer slots (rounded up) */
	good_attr(&a);
	KUNIT_ASSERT_EQ(test, vd_qp_caps(&a, &c), 0);
	KUNIT_EXPECT_EQ(test, c.sq_ring_depth, 8U);
	KUNIT_EXPECT_EQ(test, c.rq_ring_depth, 8U);
	a.sq_depth = 5;
	a.sq_ring_depth = 8;		/* the depth as rounded */
	a.rq_ring_depth = 3;
	KUNIT_ASSERT_EQ(test, vd_qp_caps(&a, &c), 0);
	KUNIT_EXPECT_EQ(test, c.sq_depth, 8U);
	KUNIT_EXPECT_EQ(test, c.sq_ring_depth, 8U);
	KUNIT_EXPECT_EQ(test, c.rq_depth, 8U);
	KUNIT_EXPECT_EQ(test, c.rq_ring_depth, 4U);
	/* on an SRQ there is no RQ ring to size */
	good_attr(&a);
	a.rq_depth = 0;
	a.max_recv_sge = 0;
	a.srq_handle = 1;
	KUNIT_ASSERT_EQ(test, vd_qp_caps(&a, &c), 0);
	KUNIT_EXPECT_EQ(test, c.rq_ring_depth, 0U);
	a.rq_ring_depth = 1;
	KUNIT_EXPECT_EQ(test, vd_qp_caps(&a, &c), -EINVAL);

	/* valid, but not what the module gives: refused, not ignored */
	good_attr(&a);
	a.reliability = VIADUCT_RELIABILITY_RELIABLE_RECEPTION;
	KUNIT_EXPECT_EQ(test, vd_qp_caps(&a, &c), -EOPNOTSUPP);
	a.reliability = VIADUCT_RELIABILITY_UNRELIABLE;
	KUNIT_EXPECT_EQ(test, vd_qp_caps(&a, &c), 0);
}

/* --- WQE validation ----------------------------------------------------- */

#define SLOT	512

struct sqe_case {
	const char *name;
	u8 opcode;
	u8 flags;
	u16 num_sge;
	u32 length;
	u32 imm_data;
	u32 remote_stag;
	u64 remote_addr;
	u32 sge_len[6];
	u8 status;
	u32 total;
};

#define SIG	VIADUCT_SQE_SIGNALED
#define SOL	VIADUCT_SQE_SOLICITED
#define FEN	VIADUCT_SQE_READ_FENCE
#define INL	VIADUCT_SQE_INLINE
#define IMM	VIADUCT_SQE_IMMEDIATE
#define SND	VIADUCT_OP_SEND
#define WR	VIADUCT_OP_RDMA_WRITE
#define RD	VIADUCT_OP_RDMA_READ
#define SINV	VIADUCT_OP_SEND_INV
#define LINV	VIADUCT_OP_LOCAL_INV
#define FREG	VIADUCT_OP_FAST_REG
#define RINV	VIADUCT_OP_RDMA_READ_INV
#define LFEN	VIADUCT_SQE_LOCAL_FENCE
#define OPERR	VIADUCT_WC_LOC_QP_OP_ERR
#define LENERR	VIADUCT_WC_LOC_LEN_ERR

/* Limits: 4 SGEs, 64 bytes inline, messages up to 1 MiB. */
static const struct vd_wqe_limits lim = {
	.max_sge = 4, .max_inline = 64, .max_msg_size = 1U << 20,
};

static const struct sqe_case sqe_cases[] = {
	{ "send, 2 SGEs", SND, SIG, 2, 0, 0, 0, 0, { 100, 200 }, 0, 300 },
	{ "send, no SGE", SND, SIG, 0, 0, 0, 0, 0, { }, 0, 0 },
	{ "send, 4 SGEs", SND, 0, 4, 0, 0, 0, 0, { 1, 2, 3, 4 }, 0, 10 },
	{ "send, all flags", SND, SIG | SOL | FEN | IMM, 1, 0, 7, 0, 0, { 5 },
	  0, 5 },
	{ "send inline 64", SND, INL | SIG, 0, 64, 0, 0, 0, { }, 0, 64 },
	{ "write inline, imm", WR, INL | IMM, 0, 10, 9, 0x100, 0x1000,
	  { }, 0, 10 },
	{ "write, 1 SGE", WR, SIG, 1, 0, 0, 0x100, 0x1000, { 4096 }, 0,
	  4096 },
	{ "read, 1 SGE", RD, SIG | FEN, 1, 0, 0, 0x100, 0x1000, { 8 }, 0, 8 },
	{ "send, 1 MiB", SND, 0, 2, 0, 0, 0, 0, { 1U << 19, 1U << 19 }, 0,
	  1U << 20 },
	{ "send inv", SINV, SIG, 1, 0, 0, 0x1234, 0, { 8 }, 0, 8 },
	{ "send se inv, inline", SINV, SOL | INL, 0, 6, 0, 0x1234, 0, { }, 0,
	  6 },
	{ "send inv, no SGE", SINV, 0, 0, 0, 0, 0x1234, 0, { }, 0, 0 },
	{ "send inv with imm", SINV, IMM, 0, 0, 5, 0x1234, 0, { }, OPERR },
	{ "send inv with remote addr", SINV, 0, 0, 0, 0, 0x1234, 0x10, { },
	  OPERR },
	{ "opcode past the last", VIADUCT_OP_MAX + 1, 0, 0, 0, 0, 0, 0, { },
	  OPERR },
	{ "opcode 255", 255, 0, 0, 0, 0, 0, 0, { }, OPERR },
	{ "flag 0x40", SND, 0x40, 0, 0, 0, 0, 0, { }, OPERR },
	{ "send, local fence", SND, SIG | LFEN, 1, 0, 0, 0, 0, { 5 }, 0, 5 },
	{ "local inv", LINV, SIG | LFEN, 0, 0, 0, 0x1234, 0, { }, 0, 0 },
	{ "local inv with an SGE", LINV, 0, 1, 0, 0, 0x1234, 0, { 8 },
	  OPERR },
	{ "local inv with addr", LINV, 0, 0, 0, 0, 0x1234, 0x10, { }, OPERR },
	{ "local inv, solicited", LINV, SOL, 0, 0, 0, 0x1234, 0, { }, OPERR },
	{ "local inv, imm", LINV, IMM, 0, 0, 1, 0x1234, 0, { }, OPERR },
	{ "fast reg, 2 SGEs", FREG, SIG, 2, 0, 7, 0x1234, 0x5000,
	  { 4096, 100 }, 0, 0 },
	{ "fast reg, 4 GiB", FREG, 0, 4, 0, 1, 0x1234, 0,
	  { 1U << 30, 1U << 30, 1U << 30, (1U << 30) - 1 }, 0, 0 },
	{ "fast reg, no SGE", FREG, 0, 0, 0, 7, 0x1234, 0, { }, LENERR },
	{ "fast reg, 5 SGEs", FREG, 0, 5, 0, 7, 0x1234, 0,
	  { 1, 1, 1, 1, 1 }, LENERR },
	{ "fast reg, inline", FREG, INL, 0, 8, 7, 0x1234, 0, { }, OPERR },
	{ "fast reg, imm flag", FREG, IMM, 1, 0, 7, 0x1234, 0, { 8 }, OPERR },
	{ "fast reg wraps u32", FREG, 0, 2, 0, 7, 0x1234, 0, { U32_MAX, 1 },
	  LENERR },
	{ "read inv", RINV, SIG | FEN, 1, 0, 0, 0x100, 0x1000, { 8 }, 0, 8 },
	{ "read inv, 2 SGEs", RINV, 0, 2, 0, 0, 0x100, 0, { 8, 8 }, LENERR },
	{ "read inv with imm", RINV, IMM, 1, 0, 1, 0x100, 0, { 8 }, OPERR },
	{ "read inv, inline", RINV, INL, 0, 8, 0, 0x100, 0, { }, OPERR },
	{ "flag 0x80", WR, SIG | 0x80, 0, 0, 0, 0, 0, { }, OPERR },
	{ "5 SGEs", SND, 0, 5, 0, 0, 0, 0, { 1, 1, 1, 1, 1 }, LENERR },
	{ "65535 SGEs", WR, 0, 0xffff, 0, 0, 0, 0, { }, LENERR },
	{ "inline 65", SND, INL, 0, 65, 0, 0, 0, { }, LENERR },
	{ "inline with an SGE", SND, INL, 1, 8, 0, 0, 0, { 8 }, OPERR },
	{ "inline read", RD, INL, 0, 8, 0, 0x100, 0, { }, OPERR },
	{ "read, 2 SGEs", RD, 0, 2, 0, 0, 0x100, 0, { 8, 8 }, LENERR },
	{ "read, no SGE", RD, 0, 0, 0, 0, 0x100, 0, { }, LENERR },
	{ "length wraps u32", SND, 0, 2, 0, 0, 0, 0, { U32_MAX, 1 }, LENERR },
	{ "length wraps late", WR, 0, 4, 0, 0, 0, 0,
	  { 1U << 31, 1U << 30, 1U << 30, 1 }, LENERR },
	{ "over max_msg_size", SND, 0, 2, 0, 0, 0, 0, { 1U << 20, 1 },
	  LENERR },
	{ "length without inline", SND, 0, 0, 4, 0, 0, 0, { }, OPERR },
	{ "send with remote STag", SND, 0, 0, 0, 0, 0x100, 0, { }, OPERR },
	{ "send with remote addr", SND, 0, 0, 0, 0, 0, 0x10, { }, OPERR },
	{ "imm_data without flag", SND, 0, 0, 0, 5, 0, 0, { }, OPERR },
	{ "solicited write", WR, SOL, 0, 0, 0, 0, 0, { }, OPERR },
	{ "solicited write, imm", WR, SOL | IMM, 1, 0, 3, 0x100, 0x1000, { 8 },
	  0, 8 },
	{ "solicited read, imm", RD, SOL | IMM, 1, 0, 3, 0x100, 0, { 8 },
	  OPERR },
	{ "read with imm", RD, IMM, 1, 0, 1, 0x100, 0, { 8 }, OPERR },
};

static void build_sqe(u8 *slot, const struct sqe_case *c)
{
	struct viaduct_sqe *sqe = (struct viaduct_sqe *)slot;
	struct viaduct_sge *sge = (struct viaduct_sge *)(sqe + 1);
	unsigned int i;

	memset(slot, 0, SLOT);
	sqe->wr_id = 0x1234;
	sqe->opcode = c->opcode;
	sqe->flags = c->flags;
	sqe->num_sge = c->num_sge;
	sqe->length = c->length;
	sqe->imm_data = c->imm_data;
	sqe->remote_stag = c->remote_stag;
	sqe->remote_addr = c->remote_addr;
	for (i = 0; i < ARRAY_SIZE(c->sge_len); i++) {
		sge[i].addr = 0x10000 * (i + 1);
		sge[i].length = c->sge_len[i];
		sge[i].stag = 0x100;
	}
}

static void qp_test_sqe_table(struct kunit *test)
{
	u8 *slot = kunit_kzalloc(test, SLOT, GFP_KERNEL);
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, slot);
	for (i = 0; i < ARRAY_SIZE(sqe_cases); i++) {
		const struct sqe_case *c = &sqe_cases[i];
		u32 len = 0xdead;

		build_sqe(slot, c);
		KUNIT_EXPECT_EQ_MSG(test, vd_qp_check_sqe(slot, &lim, &len),
				    c->status, "%s", c->name);
		if (!c->status)
			KUNIT_EXPECT_EQ_MSG(test, len, c->total, "%s", c->name);
	}
}

struct rqe_case {
	const char *name;
	u16 num_sge;
	u16 reserved0;
	u32 reserved1;
	u32 sge_len[5];
	u8 status;
	u32 total;
};

static const struct rqe_case rqe_cases[] = {
	{ "3 SGEs", 3, 0, 0, { 10, 20, 30 }, 0, 60 },
	{ "no SGE", 0, 0, 0, { }, 0, 0 },
	{ "4 SGEs, 1 MiB", 4, 0, 0, { 1U << 18, 1U << 18, 1U << 18, 1U << 18 },
	  0, 1U << 20 },
	{ "reserved0", 1, 1, 0, { 8 }, OPERR },
	{ "reserved1", 1, 0, 0x80000000, { 8 }, OPERR },
	{ "5 SGEs", 5, 0, 0, { 1, 1, 1, 1, 1 }, LENERR },
	{ "length wraps u32", 2, 0, 0, { U32_MAX, 1 }, LENERR },
	{ "over max_msg_size", 1, 0, 0, { (1U << 20) + 1 }, LENERR },
};

static void qp_test_rqe_table(struct kunit *test)
{
	u8 *slot = kunit_kzalloc(test, SLOT, GFP_KERNEL);
	unsigned int i, j;

	KUNIT_ASSERT_NOT_NULL(test, slot);
	for (i = 0; i < ARRAY_SIZE(rqe_cases); i++) {
		const struct rqe_case *c = &rqe_cases[i];
		struct viaduct_rqe *rqe = (struct viaduct_rqe *)slot;
		struct viaduct_sge *sge = (struct viaduct_sge *)(rqe + 1);
		u32 len = 0xdead;

		memset(slot, 0, SLOT);
		rqe->wr_id = 7;
		rqe->num_sge = c->num_sge;
		rqe->reserved0 = c->reserved0;
		rqe->reserved1 = c->reserved1;
		for (j = 0; j < ARRAY_SIZE(c->sge_len); j++)
			sge[j].length = c->sge_len[j];
		KUNIT_EXPECT_EQ_MSG(test, vd_qp_check_rqe(slot, &lim, &len),
				    c->status, "%s", c->name);
		if (!c->status)
			KUNIT_EXPECT_EQ_MSG(test, len, c->total, "%s", c->name);
	}
}

/* --- Copying WQEs out of the ring ----------------------------------------- */

#define POISON	0x5a

/*
 * Whether @dst holds the first @len bytes of @src and, behind them up to
 * @size, still the poison it was filled with: nothing past the WQE was
 * copied.
 */
static bool copied_exactly(const u8 *dst, const u8 *src, u32 len, u32 size)
{
	return !memcmp(dst, src, len) &&
	       !memchr_inv(dst + len, POISON, size - len);
}

/*
 * Every WQE of the tables, copied out of a ring slot header first: the
 * checks give what they give on the whole slot, and only the bytes the
 * header declares within the limits are copied.
 */
static void qp_test_copy_wqe_tables(struct kunit *test)
{
	u8 *ring = kunit_kzalloc(test, 4 * SLOT, GFP_KERNEL);
	u8 *dst = kunit_kmalloc(test, SLOT, GFP_KERNEL);
	const u32 idx = 0xffffffffU;	/* slot 3 */
	u8 *slot = ring + 3 * SLOT;
	unsigned int i, j;

	KUNIT_ASSERT_NOT_NULL(test, ring);
	KUNIT_ASSERT_NOT_NULL(test, dst);
	for (i = 0; i < ARRAY_SIZE(sqe_cases); i++) {
		const struct sqe_case *c = &sqe_cases[i];
		u32 len = 0xdead, n;

		build_sqe(slot, c);
		memset(dst, POISON, SLOT);
		n = vd_qp_copy_wqe(dst, ring, idx, 4, SLOT, false, &lim);
		KUNIT_EXPECT_EQ_MSG(test, n, vd_qp_wqe_len(slot, false, &lim),
				    "%s", c->name);
		KUNIT_EXPECT_TRUE_MSG(test, copied_exactly(dst, slot, n, SLOT),
				      "%s", c->name);
		KUNIT_EXPECT_EQ_MSG(test, vd_qp_check_sqe(dst, &lim, &len),
				    c->status, "%s", c->name);
		if (!c->status)
			KUNIT_EXPECT_EQ_MSG(test, len, c->total, "%s", c->name);
	}
	for (i = 0; i < ARRAY_SIZE(rqe_cases); i++) {
		const struct rqe_case *c = &rqe_cases[i];
		struct viaduct_rqe *rqe = (struct viaduct_rqe *)slot;
		struct viaduct_sge *sge = (struct viaduct_sge *)(rqe + 1);
		u32 len = 0xdead, n;

		memset(slot, 0, SLOT);
		rqe->wr_id = 7;
		rqe->num_sge = c->num_sge;
		rqe->reserved0 = c->reserved0;
		rqe->reserved1 = c->reserved1;
		for (j = 0; j < ARRAY_SIZE(c->sge_len); j++)
			sge[j].length = c->sge_len[j];
		memset(dst, POISON, SLOT);
		n = vd_qp_copy_wqe(dst, ring, idx, 4, SLOT, true, &lim);
		KUNIT_EXPECT_EQ_MSG(test, n, vd_qp_wqe_len(slot, true, &lim),
				    "%s", c->name);
		KUNIT_EXPECT_TRUE_MSG(test, copied_exactly(dst, slot, n, SLOT),
				      "%s", c->name);
		KUNIT_EXPECT_EQ_MSG(test, vd_qp_check_rqe(dst, &lim, &len),
				    c->status, "%s", c->name);
		if (!c->status)
			KUNIT_EXPECT_EQ_MSG(test, len, c->total, "%s", c->name);
	}
}

struct copy_case {
	const char *name;
	bool rq;
	u8 opcode;
	u8 flags;
	u16 num_sge;
	u32 length;
	u32 bytes;		/* what is copied */
	u8 status;
};

#define SQH	((u32)sizeof(struct viaduct_sqe))
#define RQH	((u32)sizeof(struct viaduct_rqe))
#define SGES(n)	((n) * (u32)sizeof(struct viaduct_sge))
#define BIND	VIADUCT_OP_BIND_MW

/* On queues of 252 SGEs and 256 inline bytes per WQE (4 KiB slots). */
static const struct copy_case copy_cases[] = {
	{ "send, 252 SGEs (the limit)", false, SND, 0, 252, 0,
	  SQH + SGES(252), 0 },
	{ "send, 253 SGEs", false, SND, 0, 253, 0, SQH, LENERR },
	{ "send, 254 SGEs (fit the slot)", false, SND, 0, 254, 0, SQH,
	  LENERR },
	{ "send, 65535 SGEs", false, SND, 0, 0xffff, 0, SQH, LENERR },
	{ "send, no SGE", false, SND, 0, 0, 0, SQH, 0 },
	{ "write, 1 SGE", false, WR, 0, 1, 0, SQH + SGES(1), 0 },
	{ "fast reg, 252 SGEs", false, FREG, 0, 252, 0, SQH + SGES(252), 0 },
	{ "fast reg, 253 SGEs", false, FREG, 0, 253, 0, SQH, LENERR },
	{ "bind, 1 SGE", false, BIND, 0, 1, 0, SQH + SGES(1), 0 },
	{ "bind, 2 SGEs", false, BIND, 0, 2, 0, SQH + SGES(2), OPERR },
	{ "local inv", false, LINV, 0, 0, 0, SQH, 0 },
	{ "inline 0", false, SND, INL, 0, 0, SQH, 0 },
	{ "inline 1", false, SND, INL, 0, 1, SQH + 1, 0 },
	{ "inline 255", false, WR, INL, 0, 255, SQH + 255, 0 },
	{ "inline 256 (the limit)", false, SND, INL, 0, 256, SQH + 256, 0 },
	{ "inline 257", false, SND, INL, 0, 257, SQH, LENERR },
	{ "inline 4 GiB - 1", false, SND, INL, 0, U32_MAX, SQH, LENERR },
	{ "inline with 252 SGEs", false, SND, INL, 252, 8, SQH + 8, OPERR },
	{ "recv, 252 SGEs (the limit)", true, 0, 0, 252, 0, RQH + SGES(252),
	  0 },
	{ "recv, 253 SGEs", true, 0, 0, 253, 0, RQH, LENERR },
	{ "recv, 65535 SGEs", true, 0, 0, 0xffff, 0, RQH, LENERR },
	{ "recv, no SGE", true, 0, 0, 0, 0, RQH, 0 },
};

/* A slot full of SGEs of one byte each behind a header of @c. */
static void build_copy_case(u8 *slot, u32 size, const struct copy_case *c,
			    u64 wr_id)
{
	u32 hdr = c->rq ? RQH : SQH, i;

	memset(slot, 0, hdr);
	for (i = 0; hdr + SGES(i + 1) <= size; i++) {
		struct viaduct_sge *sge = (void *)slot + hdr + SGES(i);

		sge->addr = 0x10000 + i;
		sge->length = 1;
		sge->stag = 0x100 + i;
	}
	if (c->rq) {
		struct viaduct_rqe *rqe = (struct viaduct_rqe *)slot;

		rqe->wr_id = wr_id;
		rqe->num_sge = c->num_sge;
	} else {
		struct viaduct_sqe *sqe = (struct viaduct_sqe *)slot;

		sqe->wr_id = wr_id;
		sqe->opcode = c->opcode;
		sqe->flags = c->flags;
		sqe->num_sge = c->num_sge;
		sqe->length = c->length;
		/* a Send names no remote STag */
		sqe->remote_stag = c->opcode == SND ? 0 : 0x1234;
	}
}

/*
 * The shape of a VIPL QP (252 SGEs per WQE): counts at, one beyond and far
 * beyond the limit, no SGE, inline lengths around the limit, each opcode
 * that carries SGEs; each WQE at the next index of a ring whose indices
 * wrap at 2^32, so the copies also go through the wrap. The slots of the
 * other indices hold other WQEs, which must not be copied.
 */
static void qp_test_copy_wqe_limits(struct kunit *test)
{
	struct viaduct_create_qp a;
	struct vd_qp_caps caps;
	u32 idx = 0xfffffffdU, size, n, i;
	u8 *ring, *dst;

	good_attr(&a);
	a.max_send_sge = VD_MAX_SGE;
	a.max_recv_sge = VD_MAX_SGE;
	a.max_inline = 0;
	KUNIT_ASSERT_EQ(test, vd_qp_caps(&a, &caps), 0);
	KUNIT_ASSERT_EQ(test, caps.sq_wqe_size, 4096U);
	KUNIT_ASSERT_EQ(test, caps.rq_wqe_size, 4096U);
	KUNIT_ASSERT_EQ(test, caps.sq.max_sge, 252U);
	KUNIT_ASSERT_EQ(test, caps.sq.max_inline, 256U);
	KUNIT_ASSERT_EQ(test, caps.rq.max_sge, 252U);
	size = caps.sq_wqe_size;
	caps.sq.max_msg_size = 1U << 20;
	caps.rq.max_msg_size = 1U << 20;

	ring = kunit_kmalloc(test, 4 * size, GFP_KERNEL);
	dst = kunit_kmalloc(test, size, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ring);
	KUNIT_ASSERT_NOT_NULL(test, dst);

	for (i = 0; i < ARRAY_SIZE(copy_cases); i++, idx++) {
		const struct copy_case *c = &copy_cases[i];
		const struct vd_wqe_limits *l = c->rq ? &caps.rq : &caps.sq;
		u8 *slot = vd_ring_slot_ptr(ring, idx, 4, size);
		u32 k, len = 0xdead;
		u8 st;

		for (k = 0; k < 4; k++)
			build_copy_case(ring + k * size, size, c, 1000 + k);
		build_copy_case(slot, size, c, i);
		memset(dst, POISON, size);
		n = vd_qp_copy_wqe(dst, ring, idx, 4, size, c->rq, l);
		KUNIT_EXPECT_EQ_MSG(test, n, c->bytes, "%s", c->name);
		KUNIT_EXPECT_TRUE_MSG(test, copied_exactly(dst, slot, n, size),
				      "%s", c->name);
		/* the slot of @idx: its wr_id is @i */
		KUNIT_EXPECT_EQ_MSG(test, *(u64 *)dst, (u64)i, "%s", c->name);
		st = c->rq ? vd_qp_check_rqe(dst, l, &len) :
			     vd_qp_check_sqe(dst, l, &len);
		KUNIT_EXPECT_EQ_MSG(test, st, c->status, "%s", c->name);
	}
	KUNIT_EXPECT_EQ(test, idx, 0xfffffffdU + (u32)ARRAY_SIZE(copy_cases));
}

/*
 * What vd_qp_copy_wqe() relies on: a WQE within the limits vd_qp_caps()
 * reports fits the slot it computes, for every SGE count and inline size.
 */
static void qp_test_caps_fit_slot(struct kunit *test)
{
	struct viaduct_create_qp a;
	struct vd_qp_caps c;
	u32 n;

	for (n = 0; n <= VD_MAX_SGE; n++) {
		good_attr(&a);
		a.max_send_sge = n;
		a.max_recv_sge = n;
		a.max_inline = min(n * 2, VD_MAX_INLINE);
		KUNIT_ASSERT_EQ(test, vd_qp_caps(&a, &c), 0);
		KUNIT_EXPECT_LE(test, SQH + SGES(c.sq.max_sge), c.sq_wqe_size);
		KUNIT_EXPECT_LE(test, SQH + c.sq.max_inline, c.sq_wqe_size);
		KUNIT_EXPECT_LE(test, RQH + SGES(c.rq.max_sge), c.rq_wqe_size);
		KUNIT_EXPECT_GE(test, c.sq.max_sge, n);
		KUNIT_EXPECT_GE(test, c.rq.max_sge, n);
	}
}

/* --- Real QPs ------------------------------------------------------------ */

struct qp_fixture {
	struct vd_pd *pd;
	struct vd_async_queue *aq;
	struct vd_qp *qp;
	struct viaduct_create_qp attr;
	u32 seen[2];			/* CQEs read so far, per queue */
};

/*
 * The stream a QP in RTS names. The QP only records it and, when its owner
 * leaves RTS or destroys it, asks the connection manager to end it
 * (struct vd_conn.end): here that call is recorded, one test at a time.
 */
static int fake_conn_ended = -1;

static void fake_conn_end(struct vd_conn *conn, enum vd_conn_end how)
{
	fake_conn_ended = how;
}

static struct vd_conn fake_conn = { .end = fake_conn_end };

static int qp_test_init(struct kunit *test)
{
	struct qp_fixture *f;

	f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	f->pd = vd_pd_create(NULL, NULL);
	if (IS_ERR(f->pd))
		return PTR_ERR(f->pd);
	f->aq = vd_async_queue_create();
	if (IS_ERR(f->aq)) {
		vd_pd_put(f->pd);
		return PTR_ERR(f->aq);
	}
	test->priv = f;
	return 0;
}

static void qp_test_exit(struct kunit *test)
{
	struct qp_fixture *f = test->priv;

	if (f->qp)
		vd_qp_destroy(f->qp);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->pd->users), 0);
	vd_pd_put(f->pd);
	vd_async_queue_put(f->aq);
}

/* The next async event must be @type, for the test QP. */
static void expect_event(struct kunit *test, u32 type)
{
	struct qp_fixture *f = test->priv;
	struct viaduct_async_event ev;

	KUNIT_ASSERT_EQ(test, vd_async_queue_pop(f->aq, &ev), 0);
	KUNIT_EXPECT_EQ(test, ev.type, type);
	KUNIT_EXPECT_EQ(test, ev.handle, 42U);
	KUNIT_EXPECT_EQ(test, ev.user_data, 0x5eedULL);
}

static void expect_no_event(struct kunit *test)
{
	struct qp_fixture *f = test->priv;
	struct viaduct_async_event ev;

	KUNIT_EXPECT_EQ(test, vd_async_queue_pop(f->aq, &ev), -EAGAIN);
}

/*
 * A QP with private CQs (handles 0), SQ and RQ of 8, whose rings have
 * @ring slots each (0: eight).
 */
static struct vd_qp *make_qp_ring(struct kunit *test,
				  struct vd_doorbell_worker *worker, u32 ring)
{
	struct qp_fixture *f = test->priv;
	struct vd_qp_init init = {
		.pd = f->pd,
		.aq = f->aq,
		.handle = 42,
		.worker = worker,
		.attr = &f->attr,
	};
	struct vd_qp *qp;

	good_attr(&f->attr);
	f->attr.user_data = 0x5eed;
	f->attr.sq_ring_depth = ring;
	f->attr.rq_ring_depth = ring;
	if (worker)
		f->attr.flags = VIADUCT_QP_F_POLLED;
	if (!ring)
		ring = 8;
	qp = vd_qp_create(&init);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, qp);
	f->qp = qp;
	KUNIT_EXPECT_EQ(test, qp->state, (u32)IDLE);
	KUNIT_EXPECT_EQ(test, f->attr.sq_depth, 8U);
	KUNIT_EXPECT_EQ(test, f->attr.handle, 42U);
	KUNIT_EXPECT_NE(test, f->attr.qpn, 0U);
	KUNIT_EXPECT_EQ(test, f->attr.db_size, (u32)PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, f->attr.sq_ring_depth, ring);
	KUNIT_EXPECT_EQ(test, f->attr.rq_ring_depth, ring);
	KUNIT_EXPECT_EQ(test, f->attr.sq_size,
			(u32)PAGE_ALIGN(ring * f->attr.sq_wqe_size));
	KUNIT_EXPECT_EQ(test, f->attr.rq_size,
			(u32)PAGE_ALIGN(ring * f->attr.rq_wqe_size));
	/* completions: as many as WRs in flight, whatever the ring */
	KUNIT_EXPECT_EQ(test, f->attr.scq_entries, 8U);
	KUNIT_EXPECT_EQ(test, f->attr.rcq_entries, 8U);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->pd->users), 1);
	return qp;
}

static struct vd_qp *make_qp(struct kunit *test,
			     struct vd_doorbell_worker *worker)
{
	return make_qp_ring(test, worker, 0);
}

/*
 * The user's side of the index protocol (Documentation/rings.rst), as the
 * library does it on the mapped pages.
 */
static void user_publish(u32 *index, u32 value)
{
	/* Slots before index; pairs with vd_ring_load_user_index(). */
	smp_store_release(index, value);
}

static u32 user_load(const u32 *index)
{
	/* Pairs with the kernel's vd_ring_publish(). */
	return smp_load_acquire(index);
}

static void user_fence(void)
{
	/*
	 * Between publishing a producer index and reading the doorbell
	 * flags; pairs with the worker's smp_mb() before its last look.
	 */
	smp_mb();
}

/* Plays the user: fills the next SQ slot and publishes it. */
static void post_send(struct vd_qp *qp, u64 wr_id, u8 opcode, u8 flags)
{
	struct vd_wq *wq = &qp->sq;
	u32 prod = READ_ONCE(*wq->producer);
	u8 *slot = wq->mem->va + (prod & (wq->ring_depth - 1)) * wq->wqe_size;
	struct viaduct_sqe *sqe = (struct viaduct_sqe *)slot;
	struct viaduct_sge *sge = (struct viaduct_sge *)(sqe + 1);

	memset(slot, 0, wq->wqe_size);
	sqe->wr_id = wr_id;
	sqe->opcode = opcode;
	sqe->flags = flags;
	sqe->num_sge = 1;
	sge->addr = 0x1000;
	sge->length = 64;
	sge->stag = 0x100;
	if (opcode != VIADUCT_OP_SEND)
		sqe->remote_stag = 0x200;
	user_publish(wq->producer, prod + 1);
}

static void post_recv(struct vd_qp *qp, u64 wr_id)
{
	struct vd_wq *wq = &qp->rq;
	u32 prod = READ_ONCE(*wq->producer);
	u8 *slot = wq->mem->va + (prod & (wq->ring_depth - 1)) * wq->wqe_size;
	struct viaduct_rqe *rqe = (struct viaduct_rqe *)slot;
	struct viaduct_sge *sge = (struct viaduct_sge *)(rqe + 1);

	memset(slot, 0, wq->wqe_size);
	rqe->wr_id = wr_id;
	rqe->num_sge = 1;
	sge->addr = 0x2000;
	sge->length = 128;
	sge->stag = 0x100;
	user_publish(wq->producer, prod + 1);
}

/* CQEs written to the queue's CQ that the test has not looked at yet. */
static u32 cqes_new(struct kunit *test, unsigned int which)
{
	struct qp_fixture *f = test->priv;
	struct vd_cq *cq = which == VD_QP_RQ ? f->qp->rq.cq : f->qp->sq.cq;
	struct viaduct_ring *ring = vd_cq_mem(cq)->va;

	return user_load(&ring->producer) - f->seen[which];
}

/* The next CQE of the queue's CQ, which must be there. */
static struct viaduct_cqe next_cqe(struct kunit *test, unsigned int which)
{
	struct qp_fixture *f = test->priv;
	struct vd_cq *cq = which == VD_QP_RQ ? f->qp->rq.cq : f->qp->sq.cq;
	struct viaduct_ring *ring = vd_cq_mem(cq)->va;
	struct viaduct_cqe *cqes = (void *)ring + VIADUCT_RING_HDR_SIZE;
	struct viaduct_cqe cqe;

	KUNIT_ASSERT_GT(test, cqes_new(test, which), 0U);
	cqe = cqes[f->seen[which] & (READ_ONCE(ring->entries) - 1)];
	f->seen[which]++;
	/* Free the slot, as the user would. */
	user_publish(&ring->consumer, f->seen[which]);
	return cqe;
}

static void expect_cqe(struct kunit *test, unsigned int which, u64 wr_id,
		       u8 opcode, u8 status)
{
	struct viaduct_cqe cqe = next_cqe(test, which);

	KUNIT_EXPECT_EQ(test, cqe.wr_id, wr_id);
	KUNIT_EXPECT_EQ(test, cqe.opcode, opcode);
	KUNIT_EXPECT_EQ(test, cqe.status, status);
	KUNIT_EXPECT_EQ(test, cqe.qp_handle, 42U);
	KUNIT_EXPECT_EQ(test, cqe.flags,
			which == VD_QP_RQ ? VIADUCT_WC_F_RECV : 0);
}

static u32 qp_state(struct vd_qp *qp)
{
	struct viaduct_query_qp q = { };

	vd_qp_query(qp, &q);
	return q.state;
}

static void qp_test_modify_all_or_nothing(struct kunit *test)
{
	struct vd_qp *qp = make_qp(test, NULL);
	struct viaduct_modify_qp m = { };
	struct viaduct_query_qp q = { };

	/* A forbidden transition with valid attributes changes nothing. */
	m.mask = VIADUCT_QP_ATTR_ALL;
	m.state = RTS;
	m.access = VIADUCT_QP_ACCESS_REMOTE_READ;
	m.ord = 1;
	m.ird = 2;
	KUNIT_EXPECT_EQ(test, vd_qp_modify(qp, &m), -EINVAL);
	/* A valid transition with one bad value changes nothing. */
	m.state = IDLE;
	m.ird = VD_MAX_IRD + 1;
	KUNIT_EXPECT_EQ(test, vd_qp_modify(qp, &m), -EINVAL);
	m.ird = 2;
	m.access = 0x4;
	KUNIT_EXPECT_EQ(test, vd_qp_modify(qp, &m), -EINVAL);
	m.access = VIADUCT_QP_ACCESS_REMOTE_READ;
	m.ord = VD_MAX_ORD + 1;
	KUNIT_EXPECT_EQ(test, vd_qp_modify(qp, &m), -EINVAL);
	/* To Error with attributes: refused as a whole. */
	m.ord = 1;
	m.state = ERR;
	KUNIT_EXPECT_EQ(test, vd_qp_modify(qp, &m), -EINVAL);

	vd_qp_query(qp, &q);
	KUNIT_EXPECT_EQ(test, q.state, (u32)IDLE);
	KUNIT_EXPECT_EQ(test, q.access, 0U);
	KUNIT_EXPECT_EQ(test, q.ord, 4U);
	KUNIT_EXPECT_EQ(test, q.ird, 4U);

	/* Now the valid request: all of it applies. */
	m.state = IDLE;
	KUNIT_EXPECT_EQ(test, vd_qp_modify(qp, &m), 0);
	vd_qp_query(qp, &q);
	KUNIT_EXPECT_EQ(test, q.state, (u32)IDLE);
	KUNIT_EXPECT_EQ(test, q.access, (u32)VIADUCT_QP_ACCESS_REMOTE_READ);
	KUNIT_EXPECT_EQ(test, q.ord, 1U);
	KUNIT_EXPECT_EQ(test, q.ird, 2U);
	KUNIT_EXPECT_EQ(test, q.qpn, qp->qpn);
	KUNIT_EXPECT_EQ(test, q.sq_depth, 8U);

	/* Attributes alone, in RTS; then Closing accepts nothing. */
	KUNIT_ASSERT_EQ(test, vd_qp_enter_rts(qp, &fake_conn), 0);
	KUNIT_EXPECT_EQ(test, vd_qp_enter_rts(qp, &fake_conn),
			-EINVAL);
	m.mask = VIADUCT_QP_ATTR_ORD;
	m.ord = 3;
	KUNIT_EXPECT_EQ(test, vd_qp_modify(qp, &m), 0);
	m.mask = VIADUCT_QP_ATTR_STATE;
	m.state = CLOS;
	fake_conn_ended = -1;
	KUNIT_EXPECT_EQ(test, vd_qp_modify(qp, &m), 0);
	KUNIT_EXPECT_EQ(test, qp_state(qp), (u32)CLOS);
	/* leaving RTS for Closing asked for a graceful close */
	KUNIT_EXPECT_EQ(test, fake_conn_ended, (int)VD_CONN_END_CLOSE);
	m.state = ERR;
	KUNIT_EXPECT_EQ(test, vd_qp_modify(qp, &m), -EINVAL);
	m.mask = VIADUCT_QP_ATTR_ORD;
	KUNIT_EXPECT_EQ(test, vd_qp_modify(qp, &m), -EINVAL);
	vd_qp_query(qp, &q);
	KUNIT_EXPECT_EQ(test, q.state, (u32)CLOS);
	KUNIT_EXPECT_EQ(test, q.ord, 3U);

	/* The transport may still end it; then Error -> Idle. */
	vd_qp_enter_error(qp, 0, 0);
	KUNIT_EXPECT_EQ(test, qp_state(qp), (u32)ERR);
	m.mask = VIADUCT_QP_ATTR_STATE;
	m.state = ERR;
	KUNIT_EXPECT_EQ(test, vd_qp_modify(qp, &m), -EINVAL);
	m.state = RTS;
	KUNIT_EXPECT_EQ(test, vd_qp_modify(qp, &m), -EINVAL);
	m.state = IDLE;
	KUNIT_EXPECT_EQ(test, vd_qp_modify(qp, &m), 0);
	KUNIT_EXPECT_EQ(test, qp_state(qp), (u32)IDLE);
	/* The LLP stream is forgotten: RTS needs a new one. */
	m.state = RTS;
	KUNIT_EXPECT_EQ(test, vd_qp_modify(qp, &m), -EINVAL);
	/* Error by request (or without an event from the transport). */
	expect_no_event(test);
}

/*
 * N sends and M receives posted in Idle are taken but not processed; two
 * more sends wait in the ring. Error flushes all of them, in post order,
 * unsignaled ones included; what is posted in Error is flushed at once.
 */
static void qp_test_flush(struct kunit *test)
{
	struct qp_fixture *f = test->priv;
	struct vd_qp *qp = make_qp(test, NULL);
	struct viaduct_modify_qp m = { .mask = VIADUCT_QP_ATTR_STATE };
	struct viaduct_query_qp q = { };
	static const u8 ops[] = { SND, WR, RD, SND, WR };
	const u32 n = ARRAY_SIZE(ops), m_recv = 3;
	u32 i;

	for (i = 0; i < n; i++)
		post_send(qp, 100 + i, ops[i], i % 2 ? 0 : SIG);
	for (i = 0; i < m_recv; i++)
		post_recv(qp, 200 + i);

	KUNIT_EXPECT_EQ(test, vd_qp_consume(qp, VD_QP_SQ), (int)n);
	KUNIT_EXPECT_EQ(test, vd_qp_consume(qp, VD_QP_RQ), (int)m_recv);
	KUNIT_EXPECT_EQ(test, vd_qp_consume(qp, VD_QP_SQ), 0);
	KUNIT_EXPECT_EQ(test, user_load(&qp->db->sq_consumer), n);
	KUNIT_EXPECT_EQ(test, user_load(&qp->db->rq_consumer), m_recv);
	vd_qp_query(qp, &q);
	KUNIT_EXPECT_EQ(test, q.sq_outstanding, n);
	KUNIT_EXPECT_EQ(test, q.rq_outstanding, m_recv);
	/* Idle processes nothing and completes nothing. */
	KUNIT_EXPECT_EQ(test, cqes_new(test, VD_QP_SQ), 0U);
	KUNIT_EXPECT_EQ(test, cqes_new(test, VD_QP_RQ), 0U);

	/* Posted, but no doorbell yet. */
	post_send(qp, 100 + n, SND, 0);
	post_send(qp, 101 + n, SND, SIG);

	m.state = ERR;
	KUNIT_ASSERT_EQ(test, vd_qp_modify(qp, &m), 0);
	KUNIT_EXPECT_EQ(test, cqes_new(test, VD_QP_SQ), n + 2);
	KUNIT_EXPECT_EQ(test, cqes_new(test, VD_QP_RQ), m_recv);
	for (i = 0; i < n; i++)
		expect_cqe(test, VD_QP_SQ, 100 + i, ops[i], VIADUCT_WC_FLUSHED);
	expect_cqe(test, VD_QP_SQ, 100 + n, SND, VIADUCT_WC_FLUSHED);
	expect_cqe(test, VD_QP_SQ, 101 + n, SND, VIADUCT_WC_FLUSHED);
	for (i = 0; i < m_recv; i++)
		expect_cqe(test, VD_QP_RQ, 200 + i, VIADUCT_WC_RECV,
			   VIADUCT_WC_FLUSHED);
	KUNIT_EXPECT_EQ(test, user_load(&qp->db->sq_consumer), n + 2);

	/* Posting in Error is safe: flushed at the doorbell. */
	post_recv(qp, 300);
	KUNIT_EXPECT_EQ(test, vd_qp_doorbell(qp, VIADUCT_DOORBELL_RQ), 0);
	expect_cqe(test, VD_QP_RQ, 300, VIADUCT_WC_RECV, VIADUCT_WC_FLUSHED);
	KUNIT_EXPECT_EQ(test, vd_qp_doorbell(qp, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, vd_qp_doorbell(qp, 4), -EINVAL);

	/* Error -> Idle: flushes what the ring still holds, then reuse. */
	post_send(qp, 400, WR, 0);
	m.state = IDLE;
	KUNIT_ASSERT_EQ(test, vd_qp_modify(qp, &m), 0);
	expect_cqe(test, VD_QP_SQ, 400, WR, VIADUCT_WC_FLUSHED);
	vd_qp_query(qp, &q);
	KUNIT_EXPECT_EQ(test, q.sq_outstanding, 0U);
	KUNIT_EXPECT_EQ(test, q.rq_outstanding, 0U);
	post_send(qp, 401, SND, SIG);
	KUNIT_EXPECT_EQ(test, vd_qp_doorbell(qp, VIADUCT_DOORBELL_SQ |
					     VIADUCT_DOORBELL_RQ), 0);
	vd_qp_query(qp, &q);
	KUNIT_EXPECT_EQ(test, q.sq_outstanding, 1U);
	KUNIT_EXPECT_EQ(test, cqes_new(test, VD_QP_SQ), 0U);
	KUNIT_EXPECT_EQ(test, f->seen[VD_QP_SQ], n + 3);
	expect_no_event(test);
}

/* A malformed WQE completes with its error, in order, and errors the QP. */
static void qp_test_bad_wqe(struct kunit *test)
{
	struct vd_qp *qp = make_qp(test, NULL);
	struct viaduct_sqe *sqe;

	post_send(qp, 1, SND, SIG);
	post_send(qp, 2, WR, SIG);
	sqe = qp->sq.mem->va + 1 * qp->sq.wqe_size;
	sqe->num_sge = 99;
	post_send(qp, 3, SND, SIG);
	sqe = qp->sq.mem->va + 2 * qp->sq.wqe_size;
	sqe->opcode = 9;
	post_send(qp, 4, SND, 0);
	post_recv(qp, 10);
	KUNIT_EXPECT_EQ(test, vd_qp_consume(qp, VD_QP_RQ), 1);

	/* Taken up to the bad one; the QP is then in Error. */
	KUNIT_EXPECT_EQ(test, vd_qp_consume(qp, VD_QP_SQ), 2);
	KUNIT_EXPECT_EQ(test, qp_state(qp), (u32)ERR);
	expect_event(test, VIADUCT_EVENT_QP_REQ_ERR);
	expect_no_event(test);
	expect_cqe(test, VD_QP_SQ, 1, SND, VIADUCT_WC_FLUSHED);
	expect_cqe(test, VD_QP_SQ, 2, WR, VIADUCT_WC_LOC_LEN_ERR);
	/* Flushing takes the rest: a malformed one still says why. */
	expect_cqe(test, VD_QP_SQ, 3, 9, VIADUCT_WC_LOC_QP_OP_ERR);
	expect_cqe(test, VD_QP_SQ, 4, SND, VIADUCT_WC_FLUSHED);
	KUNIT_EXPECT_EQ(test, cqes_new(test, VD_QP_SQ), 0U);
	expect_cqe(test, VD_QP_RQ, 10, VIADUCT_WC_RECV, VIADUCT_WC_FLUSHED);
}

/* A producer index more than a ring ahead is garbage: Error. */
static void qp_test_bad_index(struct kunit *test)
{
	struct vd_qp *qp = make_qp(test, NULL);
	u32 i;

	post_recv(qp, 1);
	KUNIT_EXPECT_EQ(test, vd_qp_consume(qp, VD_QP_RQ), 1);
	for (i = 0; i < 8; i++)
		post_recv(qp, 2 + i);
	/* A full ring is fine... */
	KUNIT_EXPECT_EQ(test, vd_qp_consume(qp, VD_QP_RQ), 7);
	KUNIT_EXPECT_EQ(test, qp_state(qp), (u32)IDLE);
	/* ...but the private FIFO is full now: nothing more is taken. */
	KUNIT_EXPECT_EQ(test, vd_qp_consume(qp, VD_QP_RQ), 0);

	user_publish(qp->rq.producer, qp->rq.consumer + 9);
	KUNIT_EXPECT_EQ(test, vd_qp_consume(qp, VD_QP_RQ), 0);
	KUNIT_EXPECT_EQ(test, qp_state(qp), (u32)ERR);
	/* The FIFO is flushed; the garbage ring part is not touched. */
	for (i = 0; i < 8; i++)
		expect_cqe(test, VD_QP_RQ, 1 + i, VIADUCT_WC_RECV,
			   VIADUCT_WC_FLUSHED);
	KUNIT_EXPECT_EQ(test, cqes_new(test, VD_QP_RQ), 0U);

	expect_event(test, VIADUCT_EVENT_QP_REQ_ERR);

	/* Going backwards is garbage too, but Error does not change. */
	user_publish(qp->rq.producer, qp->rq.consumer - 1);
	KUNIT_EXPECT_EQ(test, vd_qp_consume(qp, VD_QP_RQ), 0);
	KUNIT_EXPECT_EQ(test, qp_state(qp), (u32)ERR);
	expect_no_event(test);
}

/*
 * A ring of two slots in front of a FIFO of eight: each doorbell frees
 * the slots, so the ring wraps as often as WRs pass and eight are in
 * flight through it; two more wait in the ring, a retired WR takes the
 * next, and a flush completes the rest in order. An index more than the
 * ring (not the FIFO) ahead is garbage.
 */
static void qp_test_short_ring(struct kunit *test)
{
	struct vd_qp *qp = make_qp_ring(test, NULL, 2);
	struct viaduct_cqe cqe = { .byte_len = 64 };
	u32 i;

	KUNIT_ASSERT_EQ(test, vd_qp_enter_rts(qp, &fake_conn), 0);
	for (i = 0; i < 40; i++) {
		post_send(qp, i, SND, SIG);
		KUNIT_EXPECT_EQ(test, vd_qp_consume(qp, VD_QP_SQ), 1);
		KUNIT_EXPECT_EQ(test, vd_qp_complete(qp, VD_QP_SQ, &cqe,
						     false), 0);
		expect_cqe(test, VD_QP_SQ, i, SND, VIADUCT_WC_SUCCESS);
	}
	KUNIT_EXPECT_EQ(test, user_load(&qp->db->sq_consumer), 40U);

	for (i = 0; i < 10; i += 2) {
		int taken = i < 8 ? 2 : 0;

		post_send(qp, 100 + i, SND, SIG);
		post_send(qp, 101 + i, SND, SIG);
		KUNIT_EXPECT_EQ(test, vd_qp_consume(qp, VD_QP_SQ), taken);
	}
	KUNIT_EXPECT_EQ(test, user_load(&qp->db->sq_consumer), 48U);
	/* four receives in flight, two in the ring without a doorbell */
	for (i = 0; i < 6; i++) {
		post_recv(qp, 200 + i);
		if (i % 2 && i < 4)
			KUNIT_EXPECT_EQ(test, vd_qp_consume(qp, VD_QP_RQ), 2);
	}
	KUNIT_EXPECT_EQ(test, user_load(&qp->db->rq_consumer), 4U);
	KUNIT_EXPECT_EQ(test, qp_state(qp), (u32)RTS);

	/* the oldest retires: WR 108 takes its place, 109 still waits */
	KUNIT_EXPECT_EQ(test, vd_qp_complete(qp, VD_QP_SQ, &cqe, false), 0);
	expect_cqe(test, VD_QP_SQ, 100, SND, VIADUCT_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, user_load(&qp->db->sq_consumer), 49U);

	/* three ahead of the consumer in a ring of two: garbage */
	user_publish(qp->sq.producer, qp->sq.consumer + 3);
	KUNIT_EXPECT_EQ(test, vd_qp_consume(qp, VD_QP_SQ), 0);
	KUNIT_EXPECT_EQ(test, qp_state(qp), (u32)ERR);
	expect_event(test, VIADUCT_EVENT_QP_REQ_ERR);
	/* the SQ's FIFO is flushed, its garbage ring is not touched */
	for (i = 101; i < 109; i++)
		expect_cqe(test, VD_QP_SQ, i, SND, VIADUCT_WC_FLUSHED);
	KUNIT_EXPECT_EQ(test, cqes_new(test, VD_QP_SQ), 0U);
	/* the RQ's FIFO, then the two its ring still held */
	for (i = 200; i < 206; i++)
		expect_cqe(test, VD_QP_RQ, i, VIADUCT_WC_RECV,
			   VIADUCT_WC_FLUSHED);
	KUNIT_EXPECT_EQ(test, cqes_new(test, VD_QP_RQ), 0U);
}

/*
 * RTS: the transport retires WRs; unsignaled successes write no CQE, a
 * retired slot is refilled from the ring, and a CQ overflow errors the QP.
 */
static void qp_test_complete(struct kunit *test)
{
	struct vd_qp *qp = make_qp(test, NULL);
	struct viaduct_cqe cqe = { };
	u32 i;

	KUNIT_ASSERT_EQ(test, vd_qp_enter_rts(qp, &fake_conn), 0);
	KUNIT_EXPECT_EQ(test, vd_qp_complete(qp, VD_QP_SQ, &cqe, false),
			-ENOENT);
	post_send(qp, 1, SND, 0);
	post_send(qp, 2, WR, SIG);
	KUNIT_EXPECT_EQ(test, vd_qp_doorbell(qp, VIADUCT_DOORBELL_SQ), 0);
	cqe.status = VIADUCT_WC_SUCCESS;
	cqe.byte_len = 64;
	KUNIT_EXPECT_EQ(test, vd_qp_complete(qp, VD_QP_SQ, &cqe, false), 0);
	KUNIT_EXPECT_EQ(test, cqes_new(test, VD_QP_SQ), 0U);
	memset(&cqe, 0, sizeof(cqe));
	cqe.byte_len = 64;
	KUNIT_EXPECT_EQ(test, vd_qp_complete(qp, VD_QP_SQ, &cqe, false), 0);
	expect_cqe(test, VD_QP_SQ, 2, WR, VIADUCT_WC_SUCCESS);

	/* Nine receives: eight fill the FIFO, one waits in the ring. */
	for (i = 0; i < 8; i++)
		post_recv(qp, 10 + i);
	KUNIT_EXPECT_EQ(test, vd_qp_consume(qp, VD_QP_RQ), 8);
	post_recv(qp, 18);
	KUNIT_EXPECT_EQ(test, vd_qp_consume(qp, VD_QP_RQ), 0);
	/* Retiring one takes the waiting one; eight CQEs fill the CQ. */
	for (i = 0; i < 8; i++) {
		memset(&cqe, 0, sizeof(cqe));
		cqe.byte_len = i;
		KUNIT_EXPECT_EQ(test, vd_qp_complete(qp, VD_QP_RQ, &cqe,
						     false), 0);
	}
	KUNIT_EXPECT_EQ(test, READ_ONCE(qp->db->rq_consumer), 9U);
	KUNIT_EXPECT_EQ(test, qp_state(qp), (u32)RTS);
	/* The ninth does not fit: the QP enters Error on its own. */
	memset(&cqe, 0, sizeof(cqe));
	KUNIT_EXPECT_EQ(test, vd_qp_complete(qp, VD_QP_RQ, &cqe, false), 0);
	KUNIT_EXPECT_EQ(test, qp_state(qp), (u32)ERR);
	/* The private CQ reports its overflow for the QP, then the QP. */
	expect_event(test, VIADUCT_EVENT_CQ_ERROR);
	expect_event(test, VIADUCT_EVENT_QP_FATAL);
	expect_no_event(test);
	KUNIT_EXPECT_EQ(test, cqes_new(test, VD_QP_RQ), 8U);
	for (i = 0; i < 8; i++) {
		cqe = next_cqe(test, VD_QP_RQ);
		KUNIT_EXPECT_EQ(test, cqe.wr_id, 10ULL + i);
		KUNIT_EXPECT_EQ(test, cqe.byte_len, i);
		KUNIT_EXPECT_EQ(test, cqe.status, VIADUCT_WC_SUCCESS);
	}
}

/* Shared CQs count the QP as a user until it is destroyed. */
static void qp_test_shared_cq(struct kunit *test)
{
	struct qp_fixture *f = test->priv;
	struct vd_qp_init init = { .pd = f->pd, .handle = 42, .attr = &f->attr };
	struct vd_cq *cq;
	struct vd_qp *qp;

	cq = vd_cq_create(16, 7, 0, NULL, NULL, NULL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, cq);
	init.send_cq = cq;
	init.recv_cq = cq;
	good_attr(&f->attr);
	qp = vd_qp_create(&init);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, qp);
	KUNIT_EXPECT_EQ(test, atomic_read(&cq->users), 2);
	KUNIT_EXPECT_EQ(test, f->attr.scq_size, 0U);
	KUNIT_EXPECT_EQ(test, f->attr.rcq_entries, 0U);
	post_send(qp, 5, SND, 0);
	post_recv(qp, 6);
	KUNIT_EXPECT_EQ(test, vd_qp_doorbell(qp, VIADUCT_DOORBELL_SQ |
					     VIADUCT_DOORBELL_RQ), 0);
	/* Destroyed with WRs outstanding: no CQEs, users back to 0. */
	vd_qp_destroy(qp);
	KUNIT_EXPECT_EQ(test, atomic_read(&cq->users), 0);
	KUNIT_EXPECT_EQ(test, ((struct viaduct_ring *)vd_cq_mem(cq)->va)->producer,
			0U);
	vd_cq_put(cq);

	/* Bad attributes and a POLLED QP without a worker fail cleanly. */
	init.send_cq = NULL;
	init.recv_cq = NULL;
	f->attr.sq_depth = 0;
	KUNIT_EXPECT_EQ(test, PTR_ERR(vd_qp_create(&init)), -EINVAL);
	good_attr(&f->attr);
	f->attr.flags = VIADUCT_QP_F_POLLED;
	KUNIT_EXPECT_EQ(test, PTR_ERR(vd_qp_create(&init)), -EOPNOTSUPP);
	/* A destroyed PD takes no new QP. */
	good_attr(&f->attr);
	init.pd = vd_pd_create(NULL, NULL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, init.pd);
	KUNIT_EXPECT_EQ(test, vd_pd_try_destroy(init.pd), 0);
	KUNIT_EXPECT_EQ(test, PTR_ERR(vd_qp_create(&init)), -ENOENT);
	vd_pd_put(init.pd);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->pd->users), 0);
}

static bool wait_for(bool (*cond)(struct vd_qp *qp), struct vd_qp *qp)
{
	unsigned long end = jiffies + 5 * HZ;

	while (!cond(qp)) {
		if (time_after(jiffies, end))
			return false;
		usleep_range(200, 400);
	}
	return true;
}

/* The same without sleeping, to catch the worker's short awake window. */
static bool spin_until(bool (*cond)(struct vd_qp *qp), struct vd_qp *qp)
{
	unsigned long end = jiffies + 2 * HZ;

	while (!cond(qp)) {
		if (time_after(jiffies, end))
			return false;
		cpu_relax();
		cond_resched();
	}
	return true;
}

static bool need_wakeup(struct vd_qp *qp)
{
	return READ_ONCE(qp->db->flags) & VIADUCT_DB_F_NEED_WAKEUP;
}

static bool awake(struct vd_qp *qp)
{
	return !need_wakeup(qp);
}

static bool sq_taken(struct vd_qp *qp)
{
	return user_load(&qp->db->sq_consumer) ==
	       READ_ONCE(qp->db->sq_producer);
}

/*
 * The polling worker and NEED_WAKEUP, as a user sees them: a user that
 * finds the flag clear after its fence may rely on the worker; one that
 * finds it set rings DOORBELL.
 */
static void qp_test_polled(struct kunit *test)
{
	struct qp_fixture *f = test->priv;
	struct vd_doorbell_worker *w;
	struct vd_qp *qp;
	int i, polled = 0;

	w = kunit_kzalloc(test, sizeof(*w), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, w);
	KUNIT_ASSERT_EQ(test, vd_doorbell_worker_start(w, "kunit"), 0);
	qp = make_qp(test, w);

	/* Registration kicked the worker; idle, it sleeps after 2 ms. */
	msleep(100);
	KUNIT_EXPECT_TRUE(test, wait_for(need_wakeup, qp));
	post_send(qp, 1, SND, SIG);
	user_fence();
	KUNIT_EXPECT_TRUE(test, need_wakeup(qp));
	/* DOORBELL takes the WQE itself, and wakes the worker. */
	KUNIT_EXPECT_EQ(test, vd_qp_doorbell(qp, VIADUCT_DOORBELL_SQ), 0);
	KUNIT_EXPECT_TRUE(test, sq_taken(qp));

	/*
	 * Six more posts (the FIFO holds eight), each while it is awake: for
	 * a minute of idle polling, so that a preempted vCPU of a loaded
	 * host does not put it to sleep between the check and the post.
	 */
	WRITE_ONCE(w->idle_us, 60 * USEC_PER_SEC);
	for (i = 0; i < 6; i++) {
		vd_doorbell_kick(w);
		spin_until(awake, qp);
		post_send(qp, 10 + i, SND, 0);
		user_fence();
		if (need_wakeup(qp))
			vd_qp_doorbell(qp, VIADUCT_DOORBELL_SQ);
		else
			polled++;
		KUNIT_EXPECT_TRUE_MSG(test, wait_for(sq_taken, qp),
				      "post %d, polled %d", i, polled);
	}
	/* awake, it took every one: nobody had to ring */
	KUNIT_EXPECT_EQ(test, polled, 6);

	/* Destroying unregisters; stopping leaves no thread behind. */
	vd_qp_destroy(qp);
	f->qp = NULL;
	vd_doorbell_worker_stop(w);
	KUNIT_EXPECT_TRUE(test, xa_empty(&w->clients));
	KUNIT_EXPECT_NULL(test, w->task);
}

static struct kunit_case qp_test_cases[] = {
	KUNIT_CASE(qp_test_transition_table),
	KUNIT_CASE(qp_test_caps),
	KUNIT_CASE(qp_test_sqe_table),
	KUNIT_CASE(qp_test_rqe_table),
	KUNIT_CASE(qp_test_copy_wqe_tables),
	KUNIT_CASE(qp_test_copy_wqe_limits),
	KUNIT_CASE(qp_test_caps_fit_slot),
	KUNIT_CASE(qp_test_modify_all_or_nothing),
	KUNIT_CASE(qp_test_flush),
	KUNIT_CASE(qp_test_bad_wqe),
	KUNIT_CASE(qp_test_bad_index),
	KUNIT_CASE(qp_test_short_ring),
	KUNIT_CASE(qp_test_complete),
	KUNIT_CASE(qp_test_shared_cq),
	KUNIT_CASE(qp_test_polled),
	{}
};

static struct kunit_suite qp_test_suite = {
	.name = "viaduct_qp",
	.init = qp_test_init,
	.exit = qp_test_exit,
	.test_cases = qp_test_cases,
};

kunit_test_suite(qp_test_suite);
