// SPDX-License-Identifier: GPL-2.0
/*
 * Data transfer between two viaduct devices in two network namespaces,
 * connected by the connection manager over a veth pair:
 *
 *   netns xa<pid>: vd0 on eth0 192.0.2.1  <-- veth -->  192.0.2.2 eth0, vd0 :xb<pid>
 *
 * The namespaces and devices serve every test of the program (made by the
 * first, removed at exit: xf_net_share()); each test has its own contexts,
 * QPs and connections.
 *
 * Send/Receive, Send with Solicited Event, RDMA Write and RDMA Read with
 * byte-for-byte checks, sizes from 0 to 1 MiB, scatter/gather on both
 * sides, more RDMA Reads than the ORD allows (they wait, never fail), and
 * a Terminate: an RDMA Write to a bad STag leaves the target untouched and
 * moves both QPs to Error with flushed completions. Immediate data on
 * Sends and RDMA Writes, with and without a solicited event. A receive
 * only written into the ring of a QP in RTS (rq_on_demand), and one left
 * there when the QP entered Error. Variants run
 * with MPA CRC, without, and with the RFC 6581 peer-to-peer RTR.
 *
 * xbig: one connection (with CRC) and buffers of 16 MiB and guards, every
 * message copied, and again with those of 16 KiB and more sent by
 * reference: the largest message for Send, RDMA Write and RDMA Read;
 * graceful disconnects from either side after traffic; a reset or a
 * graceful close from either side in the middle of a stream of RDMA
 * Writes (a quarter of the largest message in the debug flavour).
 *
 * xmany: 64 connections (16 in the debug flavour) through one listener,
 * every QP moving RDMA Writes and Sends both ways at the same time, posted
 * by one thread or by eight at once.
 *
 * xzc: zero-copy transmit (module parameter zcopy_tx_min, set by the tests
 * and restored): transfers above and below the threshold with zero copy on
 * and off, a source buffer rewritten as soon as its WR completed, and the
 * MR deregistered, the QP destroyed or the process killed while messages
 * are still in TCP by reference; the counters tx_zcopy_* follow.
 */
#include <pthread.h>

#include "xfer_util.h"

FIXTURE(xfer)
{
	struct xf_side a;	/* active: connects */
	struct xf_side b;	/* passive: listens, accepts */
	__u32 conn_id;		/* b's id of the connection */
	int up;
};

FIXTURE_VARIANT(xfer)
{
	__u32 flags;		/* VIADUCT_CM_F_* for both sides */
};

FIXTURE_VARIANT_ADD(xfer, crc)
{
	.flags = VIADUCT_CM_F_CRC,
};

FIXTURE_VARIANT_ADD(xfer, nocrc)
{
	.flags = 0,
};

FIXTURE_VARIANT_ADD(xfer, p2p)
{
	.flags = VIADUCT_CM_F_CRC | VIADUCT_CM_F_P2P,
};

FIXTURE_SETUP(xfer)
{
	struct viaduct_cm_event ea, eb;

	xf_pair_share(_metadata, &self->a, &self->b, &self->up);
	xf_pair_connect(_metadata, &self->a, &self->b, variant->flags, &self->conn_id, &ea, &eb);
	/* two viaduct ends negotiate immediate data (immediate_data uses it) */
	EXPECT_NE(0, ea.flags & VIADUCT_CM_F_IMM_DATA);
	EXPECT_NE(0, eb.flags & VIADUCT_CM_F_IMM_DATA);
	ASSERT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->a.fd, self->a.q.c.handle));
	ASSERT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->b.fd, self->b.q.c.handle));
}

FIXTURE_TEARDOWN(xfer)
{
	xf_pair_down(&self->a, &self->b, self->up);
}

/*
 * The WR a Terminate is about: it completes successfully if it was all
 * in the socket before the Terminate came back, else with @blamed.
 */
static void xf_expect_done_or_blamed(struct __test_metadata *_metadata,
				     struct vd_cring *ring, __u64 wr_id, __u8 blamed)
{
	struct viaduct_cqe cqe;

	ASSERT_EQ(1U, vd_cring_wait(ring, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(wr_id, cqe.wr_id);
	EXPECT_TRUE(cqe.status == VIADUCT_WC_SUCCESS || cqe.status == blamed)
		TH_LOG("status %u", cqe.status);
}

static const __u32 xf_sizes[] = {
	0, 1, 3, 4, 63, 1447, 1448, 4096, 65535, 65536, 300001, XF_MAX,
};

/* --- Tests ----------------------------------------------------------- */

TEST_F_TIMEOUT(xfer, send_recv, XF_TIMEOUT_S)
{
	struct viaduct_cqe cqe;
	unsigned int i;

	for (i = 0; i < VD_ARRAY_SIZE(xf_sizes); i++) {
		__u32 len = xf_sizes[i];
		struct xf_sge src = { 0, len }, dst = { 0, XF_MAX + 100 };

		memset(self->b.buf, 0xee, XF_BUF);
		xf_fill(self->a.buf, len, i);
		xf_post_recv(&self->b, 100 + i, &dst, 1);
		xf_post_send(&self->a, i, VIADUCT_OP_SEND,
			     VIADUCT_SQE_SIGNALED, &src, 1, 0, 0);
		XF_EXPECT_CQE(&self->a.q.scq, i, VIADUCT_WC_SUCCESS, &cqe);
		EXPECT_EQ(VIADUCT_WC_SEND, cqe.opcode);
		XF_EXPECT_CQE(&self->b.q.rcq, 100 + i, VIADUCT_WC_SUCCESS, &cqe);
		EXPECT_EQ(VIADUCT_WC_RECV, cqe.opcode);
		EXPECT_EQ(len, cqe.byte_len);
		EXPECT_EQ(0, cqe.flags & VIADUCT_WC_F_SOLICITED);
		ASSERT_EQ(0, memcmp(self->a.buf, self->b.buf, len))
			TH_LOG("payload of %u bytes differs", len);
		EXPECT_EQ(0xee, self->b.buf[len]);
	}
}

TEST_F_TIMEOUT(xfer, send_solicited_inline_unsignaled, XF_TIMEOUT_S)
{
	struct viaduct_sqe *e;
	struct xf_sge dst = { 0, 4096 }, src = { 0, 10 };
	struct viaduct_cqe cqe;

	/* an inline Send with the Solicited Event bit */
	xf_post_recv(&self->b, 1, &dst, 1);
	e = vd_sq_slot(&self->a.q, self->a.q.sq_prod);
	memset(e, 0, self->a.q.c.sq_wqe_size);
	e->wr_id = 7;
	e->opcode = VIADUCT_OP_SEND;
	e->flags = VIADUCT_SQE_SIGNALED | VIADUCT_SQE_SOLICITED | VIADUCT_SQE_INLINE;
	e->length = 5;
	memcpy(e + 1, "hello", 5);
	self->a.q.sq_prod++;
	__atomic_store_n(&self->a.q.db->sq_producer, self->a.q.sq_prod, __ATOMIC_RELEASE);
	vd_doorbell(self->a.fd, self->a.q.c.handle, VIADUCT_DOORBELL_SQ);
	XF_EXPECT_CQE(&self->a.q.scq, 7, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&self->b.q.rcq, 1, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_EQ(5U, cqe.byte_len);
	EXPECT_NE(0, cqe.flags & VIADUCT_WC_F_SOLICITED);
	EXPECT_EQ(0, memcmp(self->b.buf, "hello", 5));

	/* unsignaled, then signaled: one CQE, the receiver gets both */
	xf_post_recv(&self->b, 2, &dst, 1);
	xf_post_recv(&self->b, 3, &dst, 1);
	xf_fill(self->a.buf, 10, 9);
	xf_post_send(&self->a, 8, VIADUCT_OP_SEND, 0, &src, 1, 0, 0);
	xf_post_send(&self->a, 9, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &src, 1, 0, 0);
	XF_EXPECT_CQE(&self->a.q.scq, 9, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&self->b.q.rcq, 2, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&self->b.q.rcq, 3, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_EQ(0, memcmp(self->a.buf, self->b.buf, 10));
}

TEST_F_TIMEOUT(xfer, sgl, XF_TIMEOUT_S)
{
	/* 3 + 4000 + 70000 bytes into receive SGEs of 1000, 5, 100000 */
	struct xf_sge src[3] = { { 17, 3 }, { 8192, 4000 }, { 200001, 70000 } };
	struct xf_sge dst[3] = { { 1, 1000 }, { 4093, 5 }, { 300000, 100000 } };
	unsigned char *want = malloc(74003), *p;
	struct viaduct_cqe cqe;
	__u32 off, i, left;

	ASSERT_NE(NULL, want);
	xf_fill(self->a.buf, XF_BUF, 3);
	memset(self->b.buf, 0xee, XF_BUF);
	for (off = 0, i = 0; i < 3; off += src[i].len, i++)
		memcpy(want + off, self->a.buf + src[i].off, src[i].len);
	xf_post_recv(&self->b, 1, dst, 3);
	xf_post_send(&self->a, 2, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, src, 3, 0, 0);
	XF_EXPECT_CQE(&self->a.q.scq, 2, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&self->b.q.rcq, 1, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_EQ(74003U, cqe.byte_len);
	for (p = want, left = 74003, i = 0; i < 3 && left; i++) {
		__u32 n = left < dst[i].len ? left : dst[i].len;

		EXPECT_EQ(0, memcmp(self->b.buf + dst[i].off, p, n)) TH_LOG("SGE %u", i);
		EXPECT_EQ(0xee, self->b.buf[dst[i].off + n]);
		p += n;
		left -= n;
	}
	EXPECT_EQ(0xee, self->b.buf[0]);
	free(want);

	/* RDMA Write from three SGEs */
	memset(self->b.buf, 0xee, XF_BUF);
	xf_post_send(&self->a, 3, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED, src, 3,
		     self->b.stag, (unsigned long)self->b.buf + 5);
	XF_EXPECT_CQE(&self->a.q.scq, 3, VIADUCT_WC_SUCCESS, &cqe);
	usleep(200000);	/* a Write completes at the sender only */
	for (off = 5, i = 0; i < 3; off += src[i].len, i++)
		EXPECT_EQ(0, memcmp(self->b.buf + off, self->a.buf + src[i].off, src[i].len));
	EXPECT_EQ(0xee, self->b.buf[4]);
	EXPECT_EQ(0xee, self->b.buf[5 + 74003]);
}

TEST_F_TIMEOUT(xfer, rdma_write, XF_TIMEOUT_S)
{
	struct viaduct_cqe cqe;
	unsigned int i;

	for (i = 0; i < VD_ARRAY_SIZE(xf_sizes); i++) {
		__u32 len = xf_sizes[i];
		struct xf_sge src = { 1, len };
		struct xf_sge mark = { 0, 1 }, dst = { XF_BUF - 16, 16 };
		size_t at = 333;

		memset(self->b.buf, 0xee, XF_BUF - 16);
		xf_fill(self->a.buf + 1, len, i + 50);
		xf_post_send(&self->a, i, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED,
			     &src, 1, self->b.stag, (unsigned long)self->b.buf + at);
		/* a Send behind it arrives after the Write's data is placed */
		xf_post_recv(&self->b, 100 + i, &dst, 1);
		xf_post_send(&self->a, 1000 + i, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED,
			     &mark, 1, 0, 0);
		XF_EXPECT_CQE(&self->a.q.scq, i, VIADUCT_WC_SUCCESS, &cqe);
		EXPECT_EQ(VIADUCT_WC_RDMA_WRITE, cqe.opcode);
		XF_EXPECT_CQE(&self->a.q.scq, 1000 + i, VIADUCT_WC_SUCCESS, &cqe);
		XF_EXPECT_CQE(&self->b.q.rcq, 100 + i, VIADUCT_WC_SUCCESS, &cqe);
		ASSERT_EQ(0, memcmp(self->b.buf + at, self->a.buf + 1, len))
			TH_LOG("RDMA Write of %u bytes differs", len);
		EXPECT_EQ(0xee, self->b.buf[at - 1]);
		EXPECT_EQ(0xee, self->b.buf[at + len]);
	}
}

TEST_F_TIMEOUT(xfer, rdma_read, XF_TIMEOUT_S)
{
	struct viaduct_cqe cqe;
	unsigned int i;

	for (i = 0; i < VD_ARRAY_SIZE(xf_sizes); i++) {
		__u32 len = xf_sizes[i];
		struct xf_sge dst = { 7, len };

		memset(self->a.buf, 0xee, XF_BUF);
		xf_fill(self->b.buf + 100, len, i + 90);
		xf_post_send(&self->a, i, VIADUCT_OP_RDMA_READ, VIADUCT_SQE_SIGNALED,
			     &dst, 1, self->b.stag, (unsigned long)self->b.buf + 100);
		XF_EXPECT_CQE(&self->a.q.scq, i, VIADUCT_WC_SUCCESS, &cqe);
		EXPECT_EQ(VIADUCT_WC_RDMA_READ, cqe.opcode);
		EXPECT_EQ(len, cqe.byte_len);
		ASSERT_EQ(0, memcmp(self->a.buf + 7, self->b.buf + 100, len))
			TH_LOG("RDMA Read of %u bytes differs", len);
		EXPECT_EQ(0xee, self->a.buf[6]);
		EXPECT_EQ(0xee, self->a.buf[7 + len]);
	}
}

TEST_F_TIMEOUT(xfer, rdma_read_beyond_ord, XF_TIMEOUT_S)
{
	/* 12 Reads with ORD 2 and a fenced Send: all succeed, in order */
	struct xf_sge src = { 0, 8 }, rdst = { XF_BUF - 16, 8 };
	struct viaduct_cqe cqe;
	unsigned int i;

	xf_fill(self->b.buf, XF_BUF, 77);
	memset(self->a.buf, 0xee, XF_BUF);
	xf_post_recv(&self->b, 1, &rdst, 1);
	for (i = 0; i < 12; i++) {
		struct xf_sge dst = { 4096 + i * 20000, 20000 };

		xf_post_send(&self->a, i, VIADUCT_OP_RDMA_READ, VIADUCT_SQE_SIGNALED,
			     &dst, 1, self->b.stag, (unsigned long)self->b.buf + i * 20000);
	}
	xf_post_send(&self->a, 99, VIADUCT_OP_SEND,
		     VIADUCT_SQE_SIGNALED | VIADUCT_SQE_READ_FENCE, &src, 1, 0, 0);
	for (i = 0; i < 12; i++) {
		XF_EXPECT_CQE(&self->a.q.scq, i, VIADUCT_WC_SUCCESS, &cqe);
		EXPECT_EQ(0, memcmp(self->a.buf + 4096 + i * 20000,
				    self->b.buf + i * 20000, 20000));
	}
	XF_EXPECT_CQE(&self->a.q.scq, 99, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&self->b.q.rcq, 1, VIADUCT_WC_SUCCESS, &cqe);
}

TEST_F_TIMEOUT(xfer, terminate_bad_stag, XF_TIMEOUT_S)
{
	struct xf_sge src = { 0, 4096 }, dst = { 0, 4096 };
	struct viaduct_async_event ev;
	struct viaduct_query_qp q;
	struct viaduct_cqe cqe;
	__u32 bad = self->b.stag ^ 0x100;	/* another index, same key */
	int i;

	memset(self->b.buf, 0xee, XF_BUF);
	xf_fill(self->a.buf, 4096, 5);
	xf_post_recv(&self->b, 50, &dst, 1);
	xf_post_send(&self->a, 1, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED,
		     &src, 1, bad, (unsigned long)self->b.buf);

	/* the target: Terminate sent, access error, Error, receive flushed */
	ASSERT_EQ(0, vd_wait_async(self->b.fd, VIADUCT_EVENT_QP_ACCESS_ERR,
				   self->b.q.c.handle, &ev, XF_WAIT_MS));
	EXPECT_EQ(0x1100U, ev.detail);	/* DDP tagged: invalid STag */
	ASSERT_EQ(0, vd_query_qp(self->b.fd, self->b.q.c.handle, &q));
	EXPECT_EQ(VIADUCT_QPS_ERROR, q.state);
	EXPECT_EQ(0x1100U, q.terminate);
	XF_EXPECT_CQE(&self->b.q.rcq, 50, VIADUCT_WC_FLUSHED, &cqe);
	for (i = 0; i < (int)XF_BUF; i++)
		if (self->b.buf[i] != 0xee)
			break;
	EXPECT_EQ((int)XF_BUF, i) TH_LOG("byte %d was written", i);

	/* the source: the Terminate arrives, QP in Error, later WRs flushed */
	ASSERT_EQ(0, vd_wait_async(self->a.fd, VIADUCT_EVENT_QP_FATAL,
				   self->a.q.c.handle, &ev, XF_WAIT_MS));
	ASSERT_EQ(0, vd_query_qp(self->a.fd, self->a.q.c.handle, &q));
	EXPECT_EQ(VIADUCT_QPS_ERROR, q.state);
	EXPECT_EQ(0x1100U, q.terminate);
	xf_expect_done_or_blamed(_metadata, &self->a.q.scq, 1, VIADUCT_WC_REM_ACCESS_ERR);
	xf_post_send(&self->a, 2, VIADUCT_OP_SEND, 0, &src, 1, 0, 0);
	XF_EXPECT_CQE(&self->a.q.scq, 2, VIADUCT_WC_FLUSHED, &cqe);
}

/*
 * The peer sends, sees its Sends complete and closes gracefully: by the
 * time DISCONNECTED reaches the receiver, every one of those Sends has
 * been placed and completed there (the FIN comes behind them on the
 * stream), none flushed.
 */
#define XF_LAST_N	32U
#define XF_LAST_LEN	60000U

TEST_F_TIMEOUT(xfer, sends_placed_before_disconnected, XF_TIMEOUT_S)
{
	struct viaduct_cm_event ev;
	struct viaduct_cqe cqe;
	unsigned int i;

	memset(self->b.buf, 0xee, XF_BUF);
	xf_fill(self->a.buf, XF_BUF, 9);
	for (i = 0; i < XF_LAST_N; i++) {
		struct xf_sge dst = { (size_t)i * XF_LAST_LEN, XF_LAST_LEN };

		xf_post_recv(&self->b, 100 + i, &dst, 1);
	}
	for (i = 0; i < XF_LAST_N; i++) {
		struct xf_sge src = { (size_t)i * XF_LAST_LEN, XF_LAST_LEN };

		xf_post_send(&self->a, i, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &src, 1, 0, 0);
	}
	for (i = 0; i < XF_LAST_N; i++)
		XF_EXPECT_CQE(&self->a.q.scq, i, VIADUCT_WC_SUCCESS, &cqe);
	ASSERT_EQ(0, xf_disconnect(&self->a, self->a.id, 0));

	ASSERT_EQ(0, xf_cm_event(&self->b, &ev, XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_CM_EVENT_DISCONNECTED, ev.type);
	EXPECT_EQ(0, ev.status);
	/* already there: no waiting */
	ASSERT_EQ(XF_LAST_N, vd_cring_avail(&self->b.q.rcq));
	for (i = 0; i < XF_LAST_N; i++) {
		ASSERT_EQ(1, vd_cring_poll(&self->b.q.rcq, &cqe));
		EXPECT_EQ(100 + i, cqe.wr_id);
		EXPECT_EQ(VIADUCT_WC_SUCCESS, cqe.status) TH_LOG("receive %u", i);
		EXPECT_EQ(XF_LAST_LEN, cqe.byte_len);
	}
	EXPECT_EQ(0, memcmp(self->a.buf, self->b.buf, XF_LAST_N * XF_LAST_LEN));
	EXPECT_EQ(0xee, self->b.buf[XF_LAST_N * XF_LAST_LEN]);
}

TEST_F_TIMEOUT(xfer, no_receive_posted, XF_TIMEOUT_S)
{
	struct xf_sge src = { 0, 100 };
	struct viaduct_async_event ev;

	/* a Send without a posted receive: DDP "no buffer", both in Error */
	xf_post_send(&self->a, 1, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &src, 1, 0, 0);
	ASSERT_EQ(0, vd_wait_async(self->b.fd, VIADUCT_EVENT_QP_FATAL,
				   self->b.q.c.handle, &ev, XF_WAIT_MS));
	EXPECT_EQ(0x1202U, ev.detail);
	ASSERT_EQ(0, vd_wait_async(self->a.fd, VIADUCT_EVENT_QP_FATAL,
				   self->a.q.c.handle, &ev, XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(self->a.fd, self->a.q.c.handle));
	xf_expect_done_or_blamed(_metadata, &self->a.q.scq, 1, VIADUCT_WC_REM_INV_REQ_ERR);
}

/*
 * Receives without a doorbell (Documentation/rings.rst): in RTS the
 * kernel says rq_on_demand, and a receive only written into the ring gets
 * its message; once the QP leaves RTS the flag is clear, and a receive
 * left in the ring when it entered Error is flushed all the same.
 */
TEST_F_TIMEOUT(xfer, receive_without_doorbell, XF_TIMEOUT_S)
{
	struct viaduct_modify_qp m = {
		.handle = self->b.q.c.handle, .mask = VIADUCT_QP_ATTR_STATE,
		.state = VIADUCT_QPS_ERROR,
	};
	struct xf_sge src = { 0, 700 }, dst = { 0, 4096 };
	struct viaduct_cqe cqe;

	EXPECT_EQ(1U, __atomic_load_n(&self->b.q.db->rq_on_demand, __ATOMIC_ACQUIRE));
	xf_fill(self->a.buf, 700, 7);
	xf_write_recv_q(&self->b, &self->b.q, 100, &dst, 1);
	xf_post_send(&self->a, 1, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &src, 1, 0, 0);
	XF_EXPECT_CQE(&self->a.q.scq, 1, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&self->b.q.rcq, 100, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_EQ(700U, cqe.byte_len);
	EXPECT_EQ(0, memcmp(self->a.buf, self->b.buf, 700));

	/* one taken by DOORBELL, one left in the ring: both flushed, in order */
	xf_post_recv(&self->b, 101, &dst, 1);
	xf_write_recv_q(&self->b, &self->b.q, 102, &dst, 1);
	ASSERT_EQ(0, vd_ioctl(self->b.fd, VIADUCT_IOCTL_MODIFY_QP, &m));
	EXPECT_EQ(0U, __atomic_load_n(&self->b.q.db->rq_on_demand, __ATOMIC_ACQUIRE));
	XF_EXPECT_CQE(&self->b.q.rcq, 101, VIADUCT_WC_FLUSHED, &cqe);
	XF_EXPECT_CQE(&self->b.q.rcq, 102, VIADUCT_WC_FLUSHED, &cqe);
}

/*
 * Immediate data: a Send carries it in its own header (one receive, the
 * payload placed as usual); an RDMA Write is followed by an RFC 7306
 * Immediate Data message, which takes a receive, places nothing in it and
 * reports the Write's size. Both may ask for a solicited event.
 */
TEST_F_TIMEOUT(xfer, immediate_data, XF_TIMEOUT_S)
{
	static const __u32 sizes[] = { 0, 5, 1448, 65536, 300001 };
	struct viaduct_cqe cqe;
	unsigned int i;

	for (i = 0; i < VD_ARRAY_SIZE(sizes); i++) {
		__u32 len = sizes[i], imm = 0x80000001U + i * 0x01010101U;
		struct xf_sge src = { 3, len }, dst = { 0, XF_MAX + 100 };
		struct xf_sge none = { XF_BUF - 64, 64 };
		size_t at = 4096;
		__u8 se = i & 1 ? VIADUCT_SQE_SOLICITED : 0;

		/* Send with immediate data */
		memset(self->b.buf, 0xee, XF_BUF);
		xf_fill(self->a.buf + 3, len, i + 20);
		xf_post_recv(&self->b, 100 + i, &dst, 1);
		xf_post_send_imm(&self->a, i, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED | se,
				 &src, 1, 0, 0, imm);
		XF_EXPECT_CQE(&self->a.q.scq, i, VIADUCT_WC_SUCCESS, &cqe);
		EXPECT_EQ(VIADUCT_WC_SEND, cqe.opcode);
		XF_EXPECT_CQE(&self->b.q.rcq, 100 + i, VIADUCT_WC_SUCCESS, &cqe);
		EXPECT_EQ(VIADUCT_WC_RECV, cqe.opcode);
		EXPECT_EQ(len, cqe.byte_len);
		EXPECT_NE(0, cqe.flags & VIADUCT_WC_F_IMMEDIATE);
		EXPECT_EQ(imm, cqe.imm_data);
		EXPECT_EQ(!!se, !!(cqe.flags & VIADUCT_WC_F_SOLICITED));
		ASSERT_EQ(0, memcmp(self->b.buf, self->a.buf + 3, len))
			TH_LOG("Send with immediate data, %u bytes", len);
		EXPECT_EQ(0xee, self->b.buf[len]);

		/* RDMA Write with immediate data: the receive stays untouched */
		memset(self->b.buf, 0xee, XF_BUF);
		xf_fill(self->a.buf + 3, len, i + 40);
		xf_post_recv(&self->b, 200 + i, &none, 1);
		xf_post_send_imm(&self->a, 10 + i, VIADUCT_OP_RDMA_WRITE,
				 VIADUCT_SQE_SIGNALED | se, &src, 1, self->b.stag,
				 (unsigned long)self->b.buf + at, ~imm);
		XF_EXPECT_CQE(&self->a.q.scq, 10 + i, VIADUCT_WC_SUCCESS, &cqe);
		EXPECT_EQ(VIADUCT_WC_RDMA_WRITE, cqe.opcode);
		EXPECT_EQ(len, cqe.byte_len);
		XF_EXPECT_CQE(&self->b.q.rcq, 200 + i, VIADUCT_WC_SUCCESS, &cqe);
		EXPECT_EQ(VIADUCT_WC_RECV_RDMA_WITH_IMM, cqe.opcode);
		EXPECT_EQ(len, cqe.byte_len);
		EXPECT_NE(0, cqe.flags & VIADUCT_WC_F_IMMEDIATE);
		EXPECT_EQ(~imm, cqe.imm_data);
		EXPECT_EQ(!!se, !!(cqe.flags & VIADUCT_WC_F_SOLICITED));
		/* the data is in place when the receive completes */
		ASSERT_EQ(0, memcmp(self->b.buf + at, self->a.buf + 3, len))
			TH_LOG("RDMA Write with immediate data, %u bytes", len);
		EXPECT_EQ(0xee, self->b.buf[at - 1]);
		EXPECT_EQ(0xee, self->b.buf[at + len]);
		EXPECT_EQ(0xee, self->b.buf[none.off]);
	}
}

/* An RDMA Write with immediate data but no receive: both QPs in Error. */
TEST_F_TIMEOUT(xfer, immediate_without_receive, XF_TIMEOUT_S)
{
	struct xf_sge src = { 0, 100 };
	struct viaduct_async_event ev;

	memset(self->b.buf, 0xee, XF_BUF);
	xf_fill(self->a.buf, 100, 3);
	xf_post_send_imm(&self->a, 1, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED, &src, 1,
			 self->b.stag, (unsigned long)self->b.buf, 9);
	ASSERT_EQ(0, vd_wait_async(self->b.fd, VIADUCT_EVENT_QP_FATAL,
				   self->b.q.c.handle, &ev, XF_WAIT_MS));
	EXPECT_EQ(0x1202U, ev.detail);	/* DDP untagged: no buffer */
	/* the Write before it was placed */
	EXPECT_EQ(0, memcmp(self->b.buf, self->a.buf, 100));
	ASSERT_EQ(0, vd_wait_async(self->a.fd, VIADUCT_EVENT_QP_FATAL,
				   self->a.q.c.handle, &ev, XF_WAIT_MS));
	xf_expect_done_or_blamed(_metadata, &self->a.q.scq, 1, VIADUCT_WC_REM_INV_REQ_ERR);
}

/* --- One connection with big buffers: large messages, disconnects --- */

#define XF_BIG		(16U << 20)	/* largest message tested */
#define XF_GUARD	4096U		/* untouched bytes around a target */

/*
 * The device allows messages of up to 2 GiB; the VM has 2 GiB of RAM and
 * each side registers (pins) a buffer of the message's size, so the test
 * stops at 16 MiB, which is still 16 times the largest of the tests above.
 */
static __u32 xf_big_len(const struct viaduct_device_attr *attr)
{
	return attr->max_msg_size < XF_BIG ? (__u32)attr->max_msg_size : XF_BIG;
}

/* b listens, a connects with its QP, b accepts with its own: ESTABLISHED. */
static void xf_establish(struct __test_metadata *_metadata, struct xf_side *a,
			 struct xf_side *b, __u32 flags, __u32 *conn_id)
{
	struct viaduct_cm_listen l = { .handle = b->id };
	struct viaduct_cm_connect c = { .handle = a->id };
	struct viaduct_cm_accept acc = { 0 };
	struct viaduct_cm_event ev;

	xf_addr(&l.addr, 2, 0);
	ASSERT_EQ(0, vd_ioctl(b->fd, VIADUCT_IOCTL_CM_LISTEN, &l));
	xf_addr(&c.dst, 2, ntohs(l.addr.port));
	c.param.qp_handle = a->q.c.handle;
	c.param.flags = flags;
	ASSERT_EQ(0, vd_ioctl(a->fd, VIADUCT_IOCTL_CM_CONNECT, &c));
	ASSERT_EQ(0, xf_cm_event(b, &ev, XF_WAIT_MS));
	ASSERT_EQ(VIADUCT_CM_EVENT_CONNECT_REQUEST, ev.type);
	*conn_id = ev.handle;
	acc.handle = ev.handle;
	acc.param.qp_handle = b->q.c.handle;
	acc.param.flags = flags;
	ASSERT_EQ(0, vd_ioctl(b->fd, VIADUCT_IOCTL_CM_ACCEPT, &acc));
	ASSERT_EQ(0, xf_cm_event(a, &ev, XF_WAIT_MS));
	ASSERT_EQ(VIADUCT_CM_EVENT_ESTABLISHED, ev.type) TH_LOG("status %d", ev.status);
	ASSERT_EQ(0, xf_cm_event(b, &ev, XF_WAIT_MS));
	ASSERT_EQ(VIADUCT_CM_EVENT_ESTABLISHED, ev.type) TH_LOG("status %d", ev.status);
	ASSERT_EQ(VIADUCT_QPS_RTS, vd_qp_state(a->fd, a->q.c.handle));
	ASSERT_EQ(VIADUCT_QPS_RTS, vd_qp_state(b->fd, b->q.c.handle));
}

/* Index of the first byte of @p[0..@len) that is not @c, or @len. */
static size_t xf_first_not(const unsigned char *p, size_t len, unsigned char c)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != c)
			break;
	return i;
}

FIXTURE(xbig)
{
	struct xf_side a;	/* active */
	struct xf_side b;	/* passive */
	__u32 conn_id;		/* b's id of the connection */
	__u32 msg;		/* largest message tested */
	long zc_saved;		/* zcopy_tx_min before the test */
};

/* Everything of xbig copied, and sent by reference from 16 KiB on. */
FIXTURE_VARIANT(xbig)
{
	long zc_min;
};

FIXTURE_VARIANT_ADD(xbig, copy)
{
	.zc_min = 0,
};

FIXTURE_VARIANT_ADD(xbig, zcopy)
{
	.zc_min = 16384,
};

FIXTURE_SETUP(xbig)
{
	self->zc_saved = xf_zc_get();
	ASSERT_LE(0, self->zc_saved) TH_LOG("no %s", XF_ZC_PARAM);
	ASSERT_EQ(0, xf_zc_set(variant->zc_min));

	ASSERT_EQ(0, xf_net_share(&self->a, &self->b));
	/* guard, message, guard, and a page for receives that must not land */
	self->a.len = XF_BIG + 3 * XF_GUARD;
	self->b.len = XF_BIG + 3 * XF_GUARD;
	ASSERT_EQ(0, xf_in_ns(self->a.ns, xf_side_up, &self->a));
	ASSERT_EQ(0, xf_in_ns(self->b.ns, xf_side_up, &self->b));
	self->msg = xf_big_len(&self->a.attr);
	ASSERT_GE(self->msg, 1U << 20);
	/* the same paths, a quarter of the volume, under KASAN */
	self->msg = vd_scaled(self->msg, self->msg / 4, "largest message (bytes)");
	xf_establish(_metadata, &self->a, &self->b, VIADUCT_CM_F_CRC, &self->conn_id);
}

FIXTURE_TEARDOWN(xbig)
{
	xf_side_down(&self->a);
	xf_side_down(&self->b);
	if (self->zc_saved >= 0)
		xf_zc_set(self->zc_saved);
}

TEST_F_TIMEOUT(xbig, max_message, XF_TIMEOUT_S)
{
	__u32 len = self->msg;
	struct xf_sge src = { XF_GUARD, len }, dst = { XF_GUARD, len };
	unsigned char *a = self->a.buf, *b = self->b.buf;
	size_t tail = XF_GUARD + (size_t)len;
	struct viaduct_cqe cqe;

	TH_LOG("max_msg_size %llu, testing %u bytes",
	       (unsigned long long)self->a.attr.max_msg_size, len);

	/* Send into a receive of exactly that size */
	xf_fill(a, self->a.len, 1);
	memset(b, 0xee, self->b.len);
	xf_post_recv(&self->b, 1, &dst, 1);
	xf_post_send(&self->a, 2, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &src, 1, 0, 0);
	XF_EXPECT_CQE(&self->a.q.scq, 2, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&self->b.q.rcq, 1, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_EQ(len, cqe.byte_len);
	ASSERT_EQ(0, memcmp(a + XF_GUARD, b + XF_GUARD, len));
	EXPECT_EQ(XF_GUARD, xf_first_not(b, XF_GUARD, 0xee));
	EXPECT_EQ(XF_GUARD, xf_first_not(b + tail, XF_GUARD, 0xee));

	/* RDMA Write, then a Send behind it to know it is placed */
	xf_fill(a, self->a.len, 2);
	memset(b, 0xee, self->b.len);
	dst.off = self->b.len - XF_GUARD;
	dst.len = 1;
	xf_post_recv(&self->b, 3, &dst, 1);
	xf_post_send(&self->a, 4, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED, &src, 1,
		     self->b.stag, (unsigned long)b + XF_GUARD);
	src.len = 0;
	xf_post_send(&self->a, 5, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &src, 1, 0, 0);
	XF_EXPECT_CQE(&self->a.q.scq, 4, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_EQ(VIADUCT_WC_RDMA_WRITE, cqe.opcode);
	XF_EXPECT_CQE(&self->a.q.scq, 5, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&self->b.q.rcq, 3, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_EQ(0U, cqe.byte_len);
	ASSERT_EQ(0, memcmp(a + XF_GUARD, b + XF_GUARD, len));
	EXPECT_EQ(XF_GUARD, xf_first_not(b, XF_GUARD, 0xee));
	EXPECT_EQ(XF_GUARD, xf_first_not(b + tail, XF_GUARD, 0xee));

	/* RDMA Read of all of it back into a */
	xf_fill(b, self->b.len, 3);
	memset(a, 0xee, self->a.len);
	src.len = len;
	xf_post_send(&self->a, 6, VIADUCT_OP_RDMA_READ, VIADUCT_SQE_SIGNALED, &src, 1,
		     self->b.stag, (unsigned long)b + XF_GUARD);
	XF_EXPECT_CQE(&self->a.q.scq, 6, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_EQ(VIADUCT_WC_RDMA_READ, cqe.opcode);
	EXPECT_EQ(len, cqe.byte_len);
	ASSERT_EQ(0, memcmp(a + XF_GUARD, b + XF_GUARD, len));
	EXPECT_EQ(XF_GUARD, xf_first_not(a, XF_GUARD, 0xee));
	EXPECT_EQ(XF_GUARD, xf_first_not(a + tail, XF_GUARD, 0xee));
}

/*
 * Graceful disconnect by @x (its id @xid) after a Send from @y to @x;
 * each side has a receive still posted. Both see DISCONNECTED with status
 * 0 and end Idle (cm.rst); an Idle QP holds its receives (qp.rst), and
 * moving it to Error flushes them.
 */
static void xf_graceful(struct __test_metadata *_metadata, struct xf_side *x,
			__u32 xid, struct xf_side *y)
{
	struct xf_sge src = { 0, 3000 }, dst = { 8192, 4096 };
	struct viaduct_cm_event ev;
	struct viaduct_cqe cqe;
	int st;

	xf_fill(y->buf, 3000, 4);
	xf_post_recv(x, 10, &dst, 1);
	xf_post_recv(x, 11, &dst, 1);
	xf_post_recv(y, 20, &dst, 1);
	xf_post_send(y, 21, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &src, 1, 0, 0);
	XF_EXPECT_CQE(&y->q.scq, 21, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&x->q.rcq, 10, VIADUCT_WC_SUCCESS, &cqe);
	ASSERT_EQ(0, memcmp(x->buf + 8192, y->buf, 3000));

	ASSERT_EQ(0, xf_disconnect(x, xid, 0));
	st = vd_qp_state(x->fd, x->q.c.handle);
	EXPECT_TRUE(st == VIADUCT_QPS_CLOSING || st == VIADUCT_QPS_IDLE) TH_LOG("state %d", st);
	ASSERT_EQ(0, xf_cm_event(y, &ev, XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_CM_EVENT_DISCONNECTED, ev.type);
	EXPECT_EQ(0, ev.status);
	ASSERT_EQ(0, xf_cm_event(x, &ev, XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_CM_EVENT_DISCONNECTED, ev.type);
	EXPECT_EQ(xid, ev.handle);
	EXPECT_EQ(0, ev.status);
	EXPECT_EQ(VIADUCT_QPS_IDLE, vd_qp_state(x->fd, x->q.c.handle));
	EXPECT_EQ(VIADUCT_QPS_IDLE, vd_qp_state(y->fd, y->q.c.handle));
	EXPECT_EQ(0U, vd_cring_avail(&x->q.rcq));
	EXPECT_EQ(0U, vd_cring_avail(&y->q.rcq));
	EXPECT_EQ(0U, vd_cring_avail(&x->q.scq));
	EXPECT_EQ(0U, vd_cring_avail(&y->q.scq));

	/* the receives left come back flushed, in order */
	ASSERT_EQ(0, vd_modify_state(x->fd, x->q.c.handle, VIADUCT_QPS_ERROR));
	ASSERT_EQ(0, vd_modify_state(y->fd, y->q.c.handle, VIADUCT_QPS_ERROR));
	XF_EXPECT_CQE(&x->q.rcq, 11, VIADUCT_WC_FLUSHED, &cqe);
	XF_EXPECT_CQE(&y->q.rcq, 20, VIADUCT_WC_FLUSHED, &cqe);
	usleep(100000);
	EXPECT_EQ(0U, vd_cring_avail(&x->q.rcq) + vd_cring_avail(&y->q.rcq));
	EXPECT_EQ(0, vd_modify_state(x->fd, x->q.c.handle, VIADUCT_QPS_IDLE));
	EXPECT_EQ(0, vd_modify_state(y->fd, y->q.c.handle, VIADUCT_QPS_IDLE));
}

TEST_F_TIMEOUT(xbig, graceful_disconnect_by_active, XF_TIMEOUT_S)
{
	xf_graceful(_metadata, &self->a, self->a.id, &self->b);
}

TEST_F_TIMEOUT(xbig, graceful_disconnect_by_passive, XF_TIMEOUT_S)
{
	xf_graceful(_metadata, &self->b, self->conn_id, &self->a);
}

#define XF_ABORT_WRS	32U

/*
 * a streams RDMA Writes into b's buffer, between guards; once the first
 * has completed, @x closes the connection: with a reset (@how
 * VIADUCT_CM_DISC_ABORT) or gracefully (0) with the Writes still in
 * flight. Every WR completes once and in order (successes, then flushes),
 * the posted receives are flushed, and nothing outside the targets
 * changed. After a reset both QPs are in Error; after a graceful close
 * the writer's QP is in Error if any of its WRs was flushed (cm.rst), and
 * the other side's is Idle or in Error.
 */
static void xf_close_mid_writes(struct __test_metadata *_metadata, struct xf_side *wr,
				struct xf_side *tgt, __u32 msg, struct xf_side *x, __u32 xid,
				__u32 how)
{
	struct xf_side *y = x == wr ? tgt : wr;
	__u32 chunk = msg / XF_ABORT_WRS, ok = 0, flushed = 0, i;
	struct xf_sge dst = { wr->len - XF_GUARD, 16 };
	unsigned char *a = wr->buf, *b = tgt->buf;
	size_t tail = XF_GUARD + (size_t)msg, bad;
	struct viaduct_cm_event ev;
	struct viaduct_cqe cqe;
	int st;

	xf_fill(a, wr->len, 6);
	memset(b, 0xee, tgt->len);
	xf_post_recv(wr, 100, &dst, 1);
	xf_post_recv(tgt, 200, &dst, 1);
	for (i = 0; i < XF_ABORT_WRS; i++) {
		struct xf_sge src = { XF_GUARD + (size_t)i * chunk, chunk };

		xf_post_send(wr, i, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED,
			     &src, 1, tgt->stag, (unsigned long)b + src.off);
	}
	XF_EXPECT_CQE(&wr->q.scq, 0, VIADUCT_WC_SUCCESS, &cqe);
	ASSERT_EQ(0, xf_disconnect(x, xid, how));
	st = vd_qp_state(x->fd, x->q.c.handle);
	if (how) {
		EXPECT_EQ(VIADUCT_QPS_ERROR, st);
	} else {
		EXPECT_TRUE(st == VIADUCT_QPS_CLOSING || st == VIADUCT_QPS_IDLE ||
			    st == VIADUCT_QPS_ERROR) TH_LOG("state %d", st);
	}
	/*
	 * A graceful closer drops what its peer still writes until the
	 * peer's FIN, which comes behind it: the close completes (status 0),
	 * not by the CM's close timeout (-ETIMEDOUT).
	 */
	ASSERT_EQ(0, xf_cm_event(x, &ev, XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_CM_EVENT_DISCONNECTED, ev.type);
	if (!how)
		EXPECT_EQ(0, ev.status);
	ASSERT_EQ(0, xf_cm_event(y, &ev, XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_CM_EVENT_DISCONNECTED, ev.type);
	EXPECT_EQ(how ? -ECONNRESET : 0, ev.status);
	if (how)
		EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(y->fd, y->q.c.handle));

	/* every Write completes once, in order: successes, then flushes */
	for (i = 1, ok = 1; i < XF_ABORT_WRS; i++) {
		ASSERT_EQ(1U, vd_cring_wait(&wr->q.scq, &cqe, 1, XF_WAIT_MS))
			TH_LOG("no completion for wr %u", i);
		EXPECT_EQ(i, cqe.wr_id);
		if (cqe.status == VIADUCT_WC_SUCCESS && !flushed)
			ok++;
		else if (cqe.status == VIADUCT_WC_FLUSHED)
			flushed++;
		else
			EXPECT_EQ(VIADUCT_WC_FLUSHED, cqe.status)
				TH_LOG("wr %u after %u flushed", i, flushed);
	}
	TH_LOG("%u Writes of %u bytes done, %u flushed", ok, chunk, flushed);
	if (!how) {
		st = vd_qp_state(wr->fd, wr->q.c.handle);
		if (flushed) {
			EXPECT_EQ(VIADUCT_QPS_ERROR, st);
		} else {
			EXPECT_TRUE(st == VIADUCT_QPS_IDLE || st == VIADUCT_QPS_ERROR)
				TH_LOG("state %d", st);
		}
		st = vd_qp_state(tgt->fd, tgt->q.c.handle);
		EXPECT_TRUE(st == VIADUCT_QPS_IDLE || st == VIADUCT_QPS_ERROR)
			TH_LOG("state %d", st);
		/* an Idle QP keeps its receives: Error flushes them */
		vd_modify_state(wr->fd, wr->q.c.handle, VIADUCT_QPS_ERROR);
		vd_modify_state(tgt->fd, tgt->q.c.handle, VIADUCT_QPS_ERROR);
	}
	XF_EXPECT_CQE(&wr->q.rcq, 100, VIADUCT_WC_FLUSHED, &cqe);
	XF_EXPECT_CQE(&tgt->q.rcq, 200, VIADUCT_WC_FLUSHED, &cqe);
	usleep(100000);
	EXPECT_EQ(0U, vd_cring_avail(&wr->q.scq) + vd_cring_avail(&wr->q.rcq) +
		      vd_cring_avail(&tgt->q.scq) + vd_cring_avail(&tgt->q.rcq));

	/* the guards are intact; the target holds old or written bytes only */
	EXPECT_EQ(XF_GUARD, xf_first_not(b, XF_GUARD, 0xee));
	EXPECT_EQ(XF_GUARD, xf_first_not(b + tail, XF_GUARD, 0xee));
	for (bad = XF_GUARD; bad < tail; bad++)
		if (b[bad] != 0xee && b[bad] != a[bad])
			break;
	EXPECT_EQ(tail, bad) TH_LOG("byte %zu is neither", bad);

	/* and new WRs are flushed as they are posted */
	xf_post_send(y, 300, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &dst, 1, 0, 0);
	XF_EXPECT_CQE(&y->q.scq, 300, VIADUCT_WC_FLUSHED, &cqe);
}

TEST_F_TIMEOUT(xbig, abort_by_writer_mid_stream, XF_TIMEOUT_S)
{
	xf_close_mid_writes(_metadata, &self->a, &self->b, self->msg, &self->a, self->a.id,
			    VIADUCT_CM_DISC_ABORT);
}

TEST_F_TIMEOUT(xbig, abort_by_target_mid_stream, XF_TIMEOUT_S)
{
	xf_close_mid_writes(_metadata, &self->a, &self->b, self->msg, &self->b, self->conn_id,
			    VIADUCT_CM_DISC_ABORT);
}

TEST_F_TIMEOUT(xbig, graceful_by_writer_mid_stream, XF_TIMEOUT_S)
{
	xf_close_mid_writes(_metadata, &self->a, &self->b, self->msg, &self->a, self->a.id, 0);
}

TEST_F_TIMEOUT(xbig, graceful_by_target_mid_stream, XF_TIMEOUT_S)
{
	xf_close_mid_writes(_metadata, &self->a, &self->b, self->msg, &self->b, self->conn_id, 0);
}

/* --- Many connections through one listener, all moving data at once --- */

#define XF_NQP		64U	/* connections, or fewer if the device says so */
#define XF_WLEN		(16U << 10)	/* per RDMA Write */
#define XF_SLEN		(8U << 10)	/* per Send */
#define XF_ROUNDS	2U
/* per QP in each side's buffer: Write targets, receive buffers, sources */
#define XF_WTGT		0U
#define XF_RTGT		(XF_WTGT + XF_ROUNDS * XF_WLEN)
#define XF_WSRC		(XF_RTGT + XF_ROUNDS * XF_SLEN)
#define XF_SSRC		(XF_WSRC + XF_ROUNDS * XF_WLEN)
#define XF_BLOCK	(XF_SSRC + XF_ROUNDS * XF_SLEN)

FIXTURE(xmany)
{
	struct xf_side a;	/* active: one id per QP */
	struct xf_side b;	/* passive: a listener, one id per connection */
	struct vd_qp aq[XF_NQP], bq[XF_NQP];
	__u32 n;		/* connections */
};

FIXTURE_SETUP(xmany)
{
	struct viaduct_cm_listen l = { .backlog = 2 * XF_NQP };
	struct viaduct_cm_event ev;
	__u32 i, req = 0, est = 0;
	int ret;

	memset(self->aq, 0, sizeof(self->aq));
	memset(self->bq, 0, sizeof(self->bq));
	ASSERT_EQ(0, xf_net_share(&self->a, &self->b));
	self->a.len = XF_NQP * XF_BLOCK;
	self->b.len = XF_NQP * XF_BLOCK;
	ASSERT_EQ(0, xf_in_ns(self->a.ns, xf_side_up, &self->a));
	ASSERT_EQ(0, xf_in_ns(self->b.ns, xf_side_up, &self->b));

	/*
	 * The side's own QP counts; everything else is within the limits.
	 * Under KASAN, 16 connections take the same paths as 64 (a listener's
	 * backlog, eight threads posting at once, two QPs each).
	 */
	self->n = vd_scaled(XF_NQP, 16, "connections");
	if (self->n > self->a.attr.max_qp - 1)
		self->n = self->a.attr.max_qp - 1;
	ASSERT_GE(self->a.attr.max_qp_wr, XF_DEPTH);
	TH_LOG("%u connections (max_qp %u)", self->n, self->a.attr.max_qp);
	for (i = 0; i < self->n; i++) {
		ASSERT_EQ(0, xf_qp_up(&self->a, &self->aq[i]));
		ASSERT_EQ(0, xf_qp_up(&self->b, &self->bq[i]));
	}

	l.handle = self->b.id;
	xf_addr(&l.addr, 2, 0);
	ASSERT_EQ(0, vd_ioctl(self->b.fd, VIADUCT_IOCTL_CM_LISTEN, &l));
	for (i = 0; i < self->n; i++) {
		struct viaduct_cm_connect c = { 0 };

		ret = xf_create_id(&self->a, i);
		ASSERT_LE(0, ret);
		c.handle = ret;
		xf_addr(&c.dst, 2, ntohs(l.addr.port));
		c.param.qp_handle = self->aq[i].c.handle;
		c.param.flags = VIADUCT_CM_F_CRC;
		c.param.private_data = (unsigned long)&i;
		c.param.private_data_len = sizeof(i);
		ASSERT_EQ(0, vd_ioctl(self->a.fd, VIADUCT_IOCTL_CM_CONNECT, &c)) TH_LOG("%u", i);
	}

	/* b accepts each request with the QP its private data names */
	while (req < self->n || est < self->n) {
		struct viaduct_cm_accept acc = { 0 };
		__u32 k;

		ASSERT_EQ(0, xf_cm_event(&self->b, &ev, XF_WAIT_MS))
			TH_LOG("%u requests, %u established", req, est);
		if (ev.type == VIADUCT_CM_EVENT_ESTABLISHED) {
			est++;
			continue;
		}
		ASSERT_EQ(VIADUCT_CM_EVENT_CONNECT_REQUEST, ev.type) TH_LOG("status %d", ev.status);
		ASSERT_EQ(sizeof(k), ev.private_data_len);
		memcpy(&k, ev.private_data, sizeof(k));
		ASSERT_LT(k, self->n);
		acc.handle = ev.handle;
		acc.param.qp_handle = self->bq[k].c.handle;
		acc.param.flags = VIADUCT_CM_F_CRC;
		ASSERT_EQ(0, vd_ioctl(self->b.fd, VIADUCT_IOCTL_CM_ACCEPT, &acc)) TH_LOG("%u", k);
		req++;
	}
	for (i = 0; i < self->n; i++) {
		ASSERT_EQ(0, xf_cm_event(&self->a, &ev, XF_WAIT_MS));
		ASSERT_EQ(VIADUCT_CM_EVENT_ESTABLISHED, ev.type) TH_LOG("status %d", ev.status);
	}
	for (i = 0; i < self->n; i++) {
		ASSERT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->a.fd, self->aq[i].c.handle));
		ASSERT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->b.fd, self->bq[i].c.handle));
	}
}

FIXTURE_TEARDOWN(xmany)
{
	__u32 i;

	for (i = 0; i < XF_NQP; i++) {
		vd_qp_unmap(&self->aq[i]);
		vd_qp_unmap(&self->bq[i]);
	}
	xf_side_down(&self->a);
	xf_side_down(&self->b);
}

/* wr_id: QP, round, kind */
#define XF_ID(q, r, k)	((__u64)(q) << 16 | (r) << 8 | (k))
enum { XF_K_WRITE = 1, XF_K_SEND, XF_K_RECV };

/*
 * Every QP, both ways: per round an RDMA Write then a Send, posted QP
 * after QP so that all connections carry data at the same time. Each
 * completion must come, once, in order, on its own QP.
 */
static void xf_many_fill(FIXTURE_DATA(xmany) *self)
{
	struct xf_side *side[2] = { &self->a, &self->b };
	__u32 i, r, d;

	for (d = 0; d < 2; d++) {
		for (i = 0; i < self->n; i++) {
			unsigned char *blk = side[d]->buf + (size_t)i * XF_BLOCK;

			memset(blk, 0xee, XF_WSRC);
			for (r = 0; r < XF_ROUNDS; r++) {
				xf_fill(blk + XF_WSRC + r * XF_WLEN, XF_WLEN, d * 1000 + i * 4 + r);
				xf_fill(blk + XF_SSRC + r * XF_SLEN, XF_SLEN,
					d * 1000 + i * 4 + r + 500);
			}
		}
	}
}

/* The receives, then per round a Write and a Send, on QPs @first, +@step... */
static void xf_many_post(FIXTURE_DATA(xmany) *self, __u32 first, __u32 step)
{
	struct xf_side *side[2] = { &self->a, &self->b };
	struct vd_qp *qs[2] = { self->aq, self->bq };
	__u32 i, r, d;

	for (d = 0; d < 2; d++)
		for (i = first; i < self->n; i += step)
			for (r = 0; r < XF_ROUNDS; r++) {
				struct xf_sge dst = { (size_t)i * XF_BLOCK + XF_RTGT + r * XF_SLEN,
						      XF_SLEN };

				xf_post_recv_q(side[d], &qs[d][i], XF_ID(i, r, XF_K_RECV),
					       &dst, 1);
			}
	for (r = 0; r < XF_ROUNDS; r++)
		for (i = first; i < self->n; i += step)
			for (d = 0; d < 2; d++) {
				size_t blk = (size_t)i * XF_BLOCK;
				struct xf_sge w = { blk + XF_WSRC + r * XF_WLEN, XF_WLEN };
				struct xf_sge snd = { blk + XF_SSRC + r * XF_SLEN, XF_SLEN };
				struct xf_side *peer = side[!d];

				xf_post_send_q(side[d], &qs[d][i], XF_ID(i, r, XF_K_WRITE),
					       VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED,
					       &w, 1, peer->stag,
					       (unsigned long)peer->buf + blk + XF_WTGT +
					       r * XF_WLEN);
				xf_post_send_q(side[d], &qs[d][i], XF_ID(i, r, XF_K_SEND),
					       VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED,
					       &snd, 1, 0, 0);
			}
}

struct xf_poster {
	FIXTURE_DATA(xmany) *self;
	__u32 first, step;
};

static void *xf_poster_fn(void *arg)
{
	struct xf_poster *p = arg;

	xf_many_post(p->self, p->first, p->step);
	return NULL;
}

static void xf_many_check(struct __test_metadata *_metadata, FIXTURE_DATA(xmany) *self);

/*
 * 8 threads post at once, each on its own QPs (a QP's rings have one
 * producer), both sides: DOORBELL calls of different QPs send from
 * several CPUs at the same time, beside the work items. Every completion
 * comes, once, in order, on its own QP, every byte where it belongs.
 */
#define XF_POSTERS	8U

TEST_F_TIMEOUT(xmany, eight_threads, XF_TIMEOUT_S)
{
	struct xf_poster p[XF_POSTERS];
	pthread_t t[XF_POSTERS];
	__u32 k;

	xf_many_fill(self);
	for (k = 0; k < XF_POSTERS; k++) {
		p[k] = (struct xf_poster){ self, k, XF_POSTERS };
		ASSERT_EQ(0, pthread_create(&t[k], NULL, xf_poster_fn, &p[k]));
	}
	for (k = 0; k < XF_POSTERS; k++)
		ASSERT_EQ(0, pthread_join(t[k], NULL));
	xf_many_check(_metadata, self);
}

TEST_F_TIMEOUT(xmany, all_at_once, XF_TIMEOUT_S)
{
	struct xf_side *side[2] = { &self->a, &self->b };
	struct vd_qp *qs[2] = { self->aq, self->bq };
	__u32 n = self->n, i, r, d;

	xf_many_fill(self);
	/* the receives first, on both sides */
	for (d = 0; d < 2; d++)
		for (i = 0; i < n; i++)
			for (r = 0; r < XF_ROUNDS; r++) {
				struct xf_sge dst = { (size_t)i * XF_BLOCK + XF_RTGT + r * XF_SLEN,
						      XF_SLEN };

				xf_post_recv_q(side[d], &qs[d][i], XF_ID(i, r, XF_K_RECV),
					       &dst, 1);
			}
	for (r = 0; r < XF_ROUNDS; r++) {
		for (i = 0; i < n; i++)
			for (d = 0; d < 2; d++) {
				size_t blk = (size_t)i * XF_BLOCK;
				struct xf_sge src = { blk + XF_WSRC + r * XF_WLEN, XF_WLEN };
				struct xf_side *peer = side[!d];

				xf_post_send_q(side[d], &qs[d][i], XF_ID(i, r, XF_K_WRITE),
					       VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED,
					       &src, 1, peer->stag,
					       (unsigned long)peer->buf + blk + XF_WTGT +
					       r * XF_WLEN);
			}
		for (i = 0; i < n; i++)
			for (d = 0; d < 2; d++) {
				struct xf_sge src = { (size_t)i * XF_BLOCK + XF_SSRC + r * XF_SLEN,
						      XF_SLEN };

				xf_post_send_q(side[d], &qs[d][i], XF_ID(i, r, XF_K_SEND),
					       VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED,
					       &src, 1, 0, 0);
			}
	}

	xf_many_check(_metadata, self);
}

static void xf_many_check(struct __test_metadata *_metadata, FIXTURE_DATA(xmany) *self)
{
	struct xf_side *side[2] = { &self->a, &self->b };
	struct vd_qp *qs[2] = { self->aq, self->bq };
	__u32 n = self->n, i, d, want, got = 0;
	unsigned char got_s[2][XF_NQP] = { 0 }, got_r[2][XF_NQP] = { 0 };
	struct viaduct_cqe cqe;
	__u64 end;

	/* 2 sides x n QPs x rounds x (Write, Send, Receive) */
	want = 2 * n * XF_ROUNDS * 3;
	end = vd_now_ms() + XF_WAIT_MS * 2;
	while (got < want && vd_now_ms() < end) {
		int any = 0;

		for (d = 0; d < 2; d++)
			for (i = 0; i < n; i++) {
				while (vd_cring_poll(&qs[d][i].scq, &cqe)) {
					unsigned char k = got_s[d][i]++;

					any = 1;
					got++;
					ASSERT_EQ(XF_ID(i, k / 2, k % 2 ? XF_K_SEND : XF_K_WRITE),
						  cqe.wr_id) TH_LOG("side %u QP %u", d, i);
					ASSERT_EQ(VIADUCT_WC_SUCCESS, cqe.status)
						TH_LOG("side %u QP %u vendor_err 0x%x", d, i,
						       cqe.vendor_err);
				}
				while (vd_cring_poll(&qs[d][i].rcq, &cqe)) {
					unsigned char k = got_r[d][i]++;

					any = 1;
					got++;
					ASSERT_EQ(XF_ID(i, k, XF_K_RECV), cqe.wr_id);
					ASSERT_EQ(VIADUCT_WC_SUCCESS, cqe.status);
					ASSERT_EQ(XF_SLEN, cqe.byte_len);
				}
			}
		if (!any)
			usleep(1000);
	}
	ASSERT_EQ(want, got);

	/* a Send follows its Write: all of it is placed; check every byte */
	for (d = 0; d < 2; d++) {
		for (i = 0; i < n; i++) {
			unsigned char *dst = side[!d]->buf + (size_t)i * XF_BLOCK;
			unsigned char *src = side[d]->buf + (size_t)i * XF_BLOCK;

			ASSERT_EQ(0, memcmp(dst + XF_WTGT, src + XF_WSRC, XF_ROUNDS * XF_WLEN))
				TH_LOG("Writes of side %u QP %u", d, i);
			ASSERT_EQ(0, memcmp(dst + XF_RTGT, src + XF_SSRC, XF_ROUNDS * XF_SLEN))
				TH_LOG("Sends of side %u QP %u", d, i);
		}
	}
	/* and nothing more completes */
	usleep(100000);
	for (d = 0; d < 2; d++)
		for (i = 0; i < n; i++)
			EXPECT_EQ(0U, vd_cring_avail(&qs[d][i].scq) +
				      vd_cring_avail(&qs[d][i].rcq));
}

/* --- Zero-copy transmit --------------------------------------------- */

#define XF_ZC_BUF	(8UL << 20)	/* registered per side */
#define XF_ZC_WRS	16U		/* in flight in the teardown tests */
#define XF_ZC_CHUNK	(96U << 10)	/* bytes per WR there */

/* The counters tx_zcopy_{msgs,copied,fallbacks}. */
struct xf_zc_st {
	long long msgs, copied, fallbacks;
};

static int xf_zc_stats(struct xf_zc_st *z)
{
	long long st[VD_ST_NR];

	if (vd_stats_read(st) || st[VD_ST_TX_ZCOPY_MSGS] < 0 ||
	    st[VD_ST_TX_ZCOPY_COPIED] < 0 || st[VD_ST_TX_ZCOPY_FALLBACKS] < 0)
		return -1;
	z->msgs = st[VD_ST_TX_ZCOPY_MSGS];
	z->copied = st[VD_ST_TX_ZCOPY_COPIED];
	z->fallbacks = st[VD_ST_TX_ZCOPY_FALLBACKS];
	return 0;
}

/*
 * A message's counters move when TCP lets go of its pages, just after its
 * WR completed (and a Read Response's completes nothing): wait for
 * @want messages more than @base, then for the count to stay put.
 */
static void xf_zc_expect(struct __test_metadata *_metadata, const struct xf_zc_st *base,
			 long long want, struct xf_zc_st *now)
{
	__u64 end = vd_now_ms() + 5000;

	for (;;) {
		ASSERT_EQ(0, xf_zc_stats(now)) TH_LOG("viaductctl reports no tx_zcopy_* counters");
		if (now->msgs - base->msgs >= want || vd_now_ms() > end)
			break;
		vd_sleep_ms(20);
	}
	vd_sleep_ms(100);
	ASSERT_EQ(0, xf_zc_stats(now));
	EXPECT_EQ(want, now->msgs - base->msgs) TH_LOG("messages sent by reference");
	/* veth copies the frags of every skb entering the peer's namespace */
	EXPECT_EQ(now->msgs - base->msgs, now->copied - base->copied)
		TH_LOG("messages whose pages veth copied");
	EXPECT_EQ(0, now->fallbacks - base->fallbacks) TH_LOG("fallbacks to copying");
}

FIXTURE(xzc)
{
	struct xf_side a;	/* active */
	struct xf_side b;	/* passive */
	__u32 conn_id;
	long saved;		/* zcopy_tx_min before the test */
	struct vd_snap start;	/* the module before either side */
};

FIXTURE_VARIANT(xzc)
{
	__u32 flags;
};

FIXTURE_VARIANT_ADD(xzc, crc)
{
	.flags = VIADUCT_CM_F_CRC,
};

FIXTURE_VARIANT_ADD(xzc, nocrc)
{
	.flags = 0,
};

FIXTURE_SETUP(xzc)
{
	self->saved = xf_zc_get();
	ASSERT_LE(0, self->saved) TH_LOG("no %s", XF_ZC_PARAM);
	vd_snap_take(&self->start);
	ASSERT_EQ(0, xf_net_share(&self->a, &self->b));
	self->a.len = XF_ZC_BUF;
	self->b.len = XF_ZC_BUF;
	ASSERT_EQ(0, xf_in_ns(self->a.ns, xf_side_up, &self->a));
	ASSERT_EQ(0, xf_in_ns(self->b.ns, xf_side_up, &self->b));
	xf_establish(_metadata, &self->a, &self->b, variant->flags, &self->conn_id);
}

FIXTURE_TEARDOWN(xzc)
{
	xf_side_down(&self->a);
	xf_side_down(&self->b);
	if (self->saved >= 0)
		xf_zc_set(self->saved);
}

/*
 * Send, RDMA Write (three SGEs, page-unaligned) and RDMA Read of @len
 * bytes, each checked byte for byte with guards around the target.
 * Returns the messages of at least @min bytes it sent (0: none counts).
 */
static long long xf_zc_round(struct __test_metadata *_metadata, struct xf_side *a,
			     struct xf_side *b, __u32 len, unsigned int seed, long min)
{
	__u32 l1 = len / 3, l2 = len / 3, l3 = len - l1 - l2;
	struct xf_sge src = { 1, len }, dst = { 4093, len };
	struct xf_sge sg[3] = { { 4093, l1 }, { 1 + 600000, l2 }, { 7 + 1200000, l3 } };
	struct xf_sge mark = { 0, 1 }, mdst = { XF_BUF - 16, 16 };
	struct viaduct_cqe cqe;
	long long zc = 0;
	size_t off;
	int i;

	/* Send */
	xf_fill(a->buf, XF_BUF, seed);
	memset(b->buf, 0xee, XF_BUF);
	xf_post_recv(b, 1, &dst, 1);
	xf_post_send(a, 2, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &src, 1, 0, 0);
	XF_EXPECT_CQE(&a->q.scq, 2, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&b->q.rcq, 1, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_EQ(len, cqe.byte_len);
	EXPECT_EQ(0, memcmp(a->buf + 1, b->buf + 4093, len)) TH_LOG("Send of %u bytes", len);
	EXPECT_EQ(0xee, b->buf[4092]);
	EXPECT_EQ(0xee, b->buf[4093 + len]);
	zc += min && len >= min;

	/* RDMA Write from three SGEs, then a Send: all of it is placed */
	xf_fill(a->buf, XF_BUF, seed + 1);
	memset(b->buf, 0xee, XF_BUF);
	xf_post_recv(b, 3, &mdst, 1);
	xf_post_send(a, 4, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED, sg, 3,
		     b->stag, (unsigned long)b->buf + 3);
	xf_post_send(a, 5, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &mark, 1, 0, 0);
	XF_EXPECT_CQE(&a->q.scq, 4, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&a->q.scq, 5, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&b->q.rcq, 3, VIADUCT_WC_SUCCESS, &cqe);
	for (off = 3, i = 0; i < 3; off += sg[i].len, i++)
		EXPECT_EQ(0, memcmp(b->buf + off, a->buf + sg[i].off, sg[i].len))
			TH_LOG("Write of %u bytes, SGE %d", len, i);
	EXPECT_EQ(0xee, b->buf[2]);
	EXPECT_EQ(0xee, b->buf[3 + len]);
	zc += min && len >= min;
	zc += min && 1 >= min;

	/* RDMA Read: b's response is the message */
	xf_fill(b->buf, XF_BUF, seed + 2);
	memset(a->buf, 0xee, XF_BUF);
	xf_post_send(a, 6, VIADUCT_OP_RDMA_READ, VIADUCT_SQE_SIGNALED, &dst, 1, b->stag,
		     (unsigned long)b->buf + 5);
	XF_EXPECT_CQE(&a->q.scq, 6, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_EQ(len, cqe.byte_len);
	EXPECT_EQ(0, memcmp(a->buf + 4093, b->buf + 5, len)) TH_LOG("Read of %u bytes", len);
	EXPECT_EQ(0xee, a->buf[4092]);
	EXPECT_EQ(0xee, a->buf[4093 + len]);
	zc += min && len >= min;
	return zc;
}

TEST_F_TIMEOUT(xzc, sizes_on_off, XF_TIMEOUT_S)
{
	static const __u32 sizes[] = { 1, 4095, 65535, 65536, 65537, 300001, XF_MAX / 2 };
	static const long mins[] = { 0, 1, 65536 };
	struct xf_zc_st base, now;
	unsigned int m, i;

	for (m = 0; m < VD_ARRAY_SIZE(mins); m++) {
		long long want = 0;

		ASSERT_EQ(0, xf_zc_set(mins[m]));
		ASSERT_EQ(0, xf_zc_stats(&base)) TH_LOG("viaductctl reports no tx_zcopy_* counters");
		for (i = 0; i < VD_ARRAY_SIZE(sizes); i++)
			want += xf_zc_round(_metadata, &self->a, &self->b, sizes[i], m * 10 + i,
					    mins[m]);
		TH_LOG("zcopy_tx_min %ld: %lld messages by reference", mins[m], want);
		xf_zc_expect(_metadata, &base, want, &now);
	}
}

/*
 * Every WR's source is overwritten the moment its completion is seen: the
 * peer still gets what was there when it was posted. 7 MiB are more than
 * TCP's send buffer holds, so a WR sent by reference that completed when
 * its last FPDU was in the socket, with its pages still to be sent, would
 * lose that race (it did, when the code was made to do so).
 */
TEST_F_TIMEOUT(xzc, reuse_after_completion, XF_TIMEOUT_S)
{
	const __u32 n = 14, chunk = XF_ZC_BUF / 16;
	struct xf_sge mark = { XF_ZC_BUF - 32, 1 }, mdst = { XF_ZC_BUF - 16, 16 };
	unsigned char *want = malloc((size_t)n * chunk);
	struct xf_zc_st base, now;
	struct viaduct_cqe cqe;
	__u32 i;

	ASSERT_NE(NULL, want);
	ASSERT_EQ(0, xf_zc_set(4096));
	ASSERT_EQ(0, xf_zc_stats(&base));
	xf_fill(self->a.buf, XF_ZC_BUF, 21);
	memcpy(want, self->a.buf, (size_t)n * chunk);
	memset(self->b.buf, 0xee, XF_ZC_BUF);
	xf_post_recv(&self->b, 1, &mdst, 1);
	for (i = 0; i < n; i++) {
		struct xf_sge src = { (size_t)i * chunk, chunk };

		xf_post_send(&self->a, i, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED, &src, 1,
			     self->b.stag, (unsigned long)self->b.buf + src.off);
	}
	for (i = 0; i < n; i++) {
		XF_EXPECT_CQE(&self->a.q.scq, i, VIADUCT_WC_SUCCESS, &cqe);
		memset(self->a.buf + (size_t)i * chunk, 0x5a, chunk);
	}
	xf_post_send(&self->a, 100, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &mark, 1, 0, 0);
	XF_EXPECT_CQE(&self->a.q.scq, 100, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&self->b.q.rcq, 1, VIADUCT_WC_SUCCESS, &cqe);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, memcmp(self->b.buf + (size_t)i * chunk, want + (size_t)i * chunk,
				    chunk)) TH_LOG("Write %u", i);
	xf_zc_expect(_metadata, &base, n, &now);
	free(want);
}

/*
 * Both sides go: every object, pinned page and module reference comes
 * back, although TCP may have held pages of a's messages until now.
 */
#define xf_zc_all_gone(self) do {						\
	xf_side_down(&(self)->a);						\
	xf_side_down(&(self)->b);						\
	vd_snap_expect_back(&(self)->start, 10000, "both sides closed");	\
} while (0)

/*
 * XF_ZC_WRS RDMA Writes by reference from a to b, between guards, and the
 * first one completed: the rest are in TCP or still to be built.
 */
static void xf_zc_stream(struct __test_metadata *_metadata, struct xf_side *a,
			 struct xf_side *b)
{
	struct viaduct_cqe cqe;
	__u32 i;

	ASSERT_EQ(0, xf_zc_set(4096));
	xf_fill(a->buf, XF_BUF, 33);
	memset(b->buf, 0xee, XF_BUF);
	for (i = 0; i < XF_ZC_WRS; i++) {
		struct xf_sge src = { 4096 + (size_t)i * XF_ZC_CHUNK, XF_ZC_CHUNK };

		xf_post_send(a, i, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED, &src, 1,
			     b->stag, (unsigned long)b->buf + src.off);
	}
	XF_EXPECT_CQE(&a->q.scq, 0, VIADUCT_WC_SUCCESS, &cqe);
}

/* b's view after a's end went away: disconnected, nothing but a's bytes. */
static void xf_zc_target_ok(struct __test_metadata *_metadata, struct xf_side *b,
			    const unsigned char *want)
{
	size_t end = 4096 + (size_t)XF_ZC_WRS * XF_ZC_CHUNK, i;
	struct viaduct_cm_event ev;

	ASSERT_EQ(0, xf_cm_event(b, &ev, XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_CM_EVENT_DISCONNECTED, ev.type);
	EXPECT_EQ(4096U, xf_first_not(b->buf, 4096, 0xee));
	EXPECT_EQ(4096U, xf_first_not(b->buf + end, 4096, 0xee));
	for (i = 4096; i < end; i++)
		if (b->buf[i] != 0xee && b->buf[i] != want[i])
			break;
	EXPECT_EQ(end, i) TH_LOG("byte %zu is neither", i);
}

/*
 * The source MR goes while Writes are in flight: the pages TCP holds stay
 * valid, the WRs complete in order (successes, one protection error when
 * a WR not yet built finds the region gone, then flushes), nothing leaks.
 */
TEST_F_TIMEOUT(xzc, dereg_mr_in_flight, XF_TIMEOUT_S)
{
	unsigned int ok = 1, prot = 0, flushed = 0, i;
	struct viaduct_cqe cqe;

	xf_zc_stream(_metadata, &self->a, &self->b);
	ASSERT_EQ(0, vd_dereg_mr(self->a.fd, self->a.mr));
	for (i = 1; i < XF_ZC_WRS; i++) {
		ASSERT_EQ(1U, vd_cring_wait(&self->a.q.scq, &cqe, 1, XF_WAIT_MS))
			TH_LOG("no completion for wr %u", i);
		EXPECT_EQ(i, cqe.wr_id);
		if (cqe.status == VIADUCT_WC_SUCCESS && !prot && !flushed)
			ok++;
		else if (cqe.status == VIADUCT_WC_LOC_PROT_ERR && !prot && !flushed)
			prot++;
		else if (cqe.status == VIADUCT_WC_FLUSHED)
			flushed++;
		else
			EXPECT_EQ(VIADUCT_WC_FLUSHED, cqe.status) TH_LOG("wr %u", i);
	}
	TH_LOG("%u done, %u protection error, %u flushed", ok, prot, flushed);
	EXPECT_EQ(XF_ZC_WRS, ok + prot + flushed);
	if (ok < XF_ZC_WRS) {
		struct viaduct_async_event ev;

		/* the region's loss is a local failure: Terminate, Error */
		ASSERT_EQ(0, vd_wait_async(self->a.fd, VIADUCT_EVENT_QP_FATAL,
					   self->a.q.c.handle, &ev, XF_WAIT_MS));
		EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(self->a.fd, self->a.q.c.handle));
	}
	xf_zc_all_gone(self);
}

TEST_F_TIMEOUT(xzc, destroy_qp_in_flight, XF_TIMEOUT_S)
{
	unsigned char *want = malloc(XF_BUF);
	struct viaduct_handle h = { .handle = self->a.id };

	ASSERT_NE(NULL, want);
	xf_zc_stream(_metadata, &self->a, &self->b);
	memcpy(want, self->a.buf, XF_BUF);
	/* the id keeps the QP until it lets go of the connection */
	ASSERT_EQ(0, vd_destroy_qp(self->a.fd, self->a.q.c.handle));
	ASSERT_EQ(0, vd_ioctl(self->a.fd, VIADUCT_IOCTL_CM_DESTROY_ID, &h));
	xf_zc_target_ok(_metadata, &self->b, want);
	free(want);
	xf_zc_all_gone(self);
}

/*
 * The process that holds the last reference to a's context is killed
 * while its Writes are in TCP by reference: its exit closes the file
 * (destroying id, QP and MR) and tears down its memory.
 */
TEST_F_TIMEOUT(xzc, kill_process_in_flight, XF_TIMEOUT_S)
{
	unsigned char *want = malloc(XF_BUF);
	pid_t child;
	int st;

	ASSERT_NE(NULL, want);
	xf_zc_stream(_metadata, &self->a, &self->b);
	memcpy(want, self->a.buf, XF_BUF);
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		pause();
		_exit(0);
	}
	xf_side_down(&self->a);
	usleep(10000);
	ASSERT_EQ(0, kill(child, SIGKILL));
	ASSERT_EQ(child, waitpid(child, &st, 0));
	xf_zc_target_ok(_metadata, &self->b, want);
	free(want);
	xf_zc_all_gone(self);
}

TEST_HARNESS_MAIN
