// SPDX-License-Identifier: GPL-2.0
/*
 * Data transfer between two viaduct devices in two network namespaces,
 * connected by the connection manager over a veth pair:
 *
 *   netns xa<pid>: vd0 on eth0 192.0.2.1  <-- veth -->  192.0.2.2 eth0, vd0 :xb<pid>
 *
 * Send/Receive, Send with Solicited Event, RDMA Write and RDMA Read with
 * byte-for-byte checks, sizes from 0 to 1 MiB, scatter/gather on both
 * sides, more RDMA Reads than the ORD allows (they wait, never fail), and
 * a Terminate: an RDMA Write to a bad STag leaves the target untouched and
 * moves both QPs to Error with flushed completions. Variants run with MPA
 * CRC, without, and with the RFC 6581 peer-to-peer RTR.
 */
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
	struct viaduct_cm_listen l = { 0 };
	struct viaduct_cm_connect c = { 0 };
	struct viaduct_cm_accept acc = { 0 };
	struct viaduct_cm_event ev;
	int id = getpid() % 100000;

	memset(&self->a, 0, sizeof(self->a));
	memset(&self->b, 0, sizeof(self->b));
	self->a.fd = self->b.fd = self->a.ch = self->b.ch = -1;
	snprintf(self->a.ns, sizeof(self->a.ns), "xa%d", id);
	snprintf(self->b.ns, sizeof(self->b.ns), "xb%d", id);
	ASSERT_EQ(0, xf_net_up(self->a.ns, self->b.ns, id));
	self->up = 1;
	ASSERT_EQ(0, xf_in_ns(self->a.ns, xf_side_up, &self->a));
	ASSERT_EQ(0, xf_in_ns(self->b.ns, xf_side_up, &self->b));

	/* b listens on 192.0.2.2, a connects, b accepts */
	l.handle = self->b.id;
	xf_addr(&l.addr, 2, 0);
	ASSERT_EQ(0, vd_ioctl(self->b.fd, VIADUCT_IOCTL_CM_LISTEN, &l));
	ASSERT_NE(0, l.addr.port);
	c.handle = self->a.id;
	xf_addr(&c.dst, 2, ntohs(l.addr.port));
	c.param.qp_handle = self->a.q.c.handle;
	c.param.flags = variant->flags;
	ASSERT_EQ(0, vd_ioctl(self->a.fd, VIADUCT_IOCTL_CM_CONNECT, &c));

	ASSERT_EQ(0, xf_cm_event(&self->b, &ev, XF_WAIT_MS));
	ASSERT_EQ(VIADUCT_CM_EVENT_CONNECT_REQUEST, ev.type);
	self->conn_id = ev.handle;
	acc.handle = ev.handle;
	acc.param.qp_handle = self->b.q.c.handle;
	acc.param.flags = variant->flags;
	ASSERT_EQ(0, vd_ioctl(self->b.fd, VIADUCT_IOCTL_CM_ACCEPT, &acc));

	ASSERT_EQ(0, xf_cm_event(&self->a, &ev, XF_WAIT_MS));
	ASSERT_EQ(VIADUCT_CM_EVENT_ESTABLISHED, ev.type) TH_LOG("status %d", ev.status);
	ASSERT_EQ(0, xf_cm_event(&self->b, &ev, XF_WAIT_MS));
	ASSERT_EQ(VIADUCT_CM_EVENT_ESTABLISHED, ev.type) TH_LOG("status %d", ev.status);
	ASSERT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->a.fd, self->a.q.c.handle));
	ASSERT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->b.fd, self->b.q.c.handle));
}

FIXTURE_TEARDOWN(xfer)
{
	/* closing the contexts destroys ids, QPs, MRs and PDs */
	xf_side_down(&self->a);
	xf_side_down(&self->b);
	if (self->up)
		xf_net_down(self->a.ns, self->b.ns);
}

/* Waits for one CQE of @ring; asserts it is @wr_id with @status. */
#define XF_EXPECT_CQE(ring, id, st, cqe) do {					\
	ASSERT_EQ(1U, vd_cring_wait((ring), (cqe), 1, XF_WAIT_MS))		\
		TH_LOG("no completion for wr %llu", (unsigned long long)(id));	\
	EXPECT_EQ((__u64)(id), (cqe)->wr_id);					\
	EXPECT_EQ((st), (cqe)->status) TH_LOG("wr %llu vendor_err 0x%x",	\
		(unsigned long long)(id), (cqe)->vendor_err);			\
} while (0)

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

TEST_HARNESS_MAIN
