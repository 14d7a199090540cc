// SPDX-License-Identifier: GPL-2.0
/*
 * The transport's fast path between two viaduct devices in two network
 * namespaces (as xfer_test.c): who carries the work, and that it changes
 * nothing of what the work means.
 *
 * idle_pingpong_direct   8-byte Sends back and forth, each posted on an
 *                        idle stream: all of them sent by the DOORBELL
 *                        call that posted them (counter tx_direct), none
 *                        by the transmit work item (tx_deferred), and
 *                        received in the socket's data_ready upcall
 *                        (rx_upcall), none by the receive work item;
 *                        counted once the streams of earlier tests are
 *                        gone (the counters are the module's).
 * doorbell_races_work    RDMA Writes longer than a posting context sends
 *                        (the work item carries their rest) alternating
 *                        with Sends, posted back to back: DOORBELL calls
 *                        and the work item take turns on one QP, and every
 *                        WR completes in post order, every Send finds the
 *                        Write before it placed whole.
 * onecopy_write_send     a 1 MiB RDMA Write and a 512 KiB Send: most of
 *                        their bytes were sent from the pages themselves
 *                        (tx_onecopy_bytes) and placed straight from the
 *                        socket buffers (rx_onecopy_bytes), and every
 *                        byte arrived where it belongs.
 * upcall_races_dereg_mr, upcall_races_destroy_qp
 *                        RDMA Writes stream in while the receiver
 *                        deregisters the target region or destroys its QP
 *                        (then the sender aborts, and the receiver's
 *                        context closes, as at exit):
 *                        every WR completes once, in order, nothing is
 *                        placed once the region is gone, and (debug
 *                        flavour) KASAN and lockdep stay quiet.
 *
 * Variants with and without the MPA CRC. xfer_test.c's xmany.eight_threads
 * posts on 64 QPs from 8 threads at once.
 */
#include "xfer_util.h"

FIXTURE(fast)
{
	struct xf_side a;	/* active: connects */
	struct xf_side b;	/* passive: listens, accepts */
	int up;
};

FIXTURE_VARIANT(fast)
{
	__u32 flags;		/* VIADUCT_CM_F_* for both sides */
};

FIXTURE_VARIANT_ADD(fast, crc)
{
	.flags = VIADUCT_CM_F_CRC,
};

FIXTURE_VARIANT_ADD(fast, nocrc)
{
	.flags = 0,
};

FIXTURE_SETUP(fast)
{
	xf_pair_share(_metadata, &self->a, &self->b, &self->up);
	xf_pair_connect(_metadata, &self->a, &self->b, variant->flags, NULL, NULL, NULL);
}

FIXTURE_TEARDOWN(fast)
{
	xf_pair_down(&self->a, &self->b, self->up);
}

/*
 * Idle ping-pong: 8-byte Sends, each posted when the stream has nothing
 * else to do. Every one of them is sent by the DOORBELL call that posted
 * it (the counter tx_direct), none by the transmit work item, and received
 * in the data_ready upcall (rx_upcall), none by the receive work item.
 */
#define XF_PINGS	32U
#define XF_QUIET_MS	45000	/* the CM's close timeout (30 s) and some */

TEST_F_TIMEOUT(fast, idle_pingpong_direct, XF_TIMEOUT_S)
{
	unsigned int pings = vd_scaled(XF_PINGS, 8, "round trips"), i;
	long long st0[VD_ST_NR], st1[VD_ST_NR];
	uint64_t end = vd_now_ms() + XF_QUIET_MS;
	struct viaduct_cqe cqe;

	/*
	 * The counters are the module's: the streams of earlier tests, whose
	 * connections may still be closing (and reading what reached them
	 * before a reset, in the receive work), must be gone first. Their
	 * QPs go with them; this test has two.
	 */
	if (vd_stats_read(st0))
		SKIP(return, "viaductctl reports no counters");
	while (st0[VD_ST_QPS] > 2 && vd_now_ms() < end) {
		vd_sleep_ms(50);
		ASSERT_EQ(0, vd_stats_read(st0));
	}
	ASSERT_EQ(2LL, st0[VD_ST_QPS]) TH_LOG("QPs of earlier tests still there");

	/* receives for the warm-up round and every ping and pong */
	for (i = 0; i <= pings; i++) {
		struct xf_sge pa = { 4096 + i * 8, 8 }, pb = { 4096 + i * 8, 8 };

		xf_post_recv(&self->a, 1000 + i, &pa, 1);
		xf_post_recv(&self->b, 2000 + i, &pb, 1);
	}
	for (i = 0; i <= pings; i++) {
		struct xf_sge src = { i * 8, 8 };

		if (i == 1 && vd_stats_read(st0))
			SKIP(return, "viaductctl reports no counters");
		xf_fill(self->a.buf + i * 8, 8, i);
		xf_fill(self->b.buf + i * 8, 8, i + 500);
		xf_post_send(&self->a, i, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &src, 1, 0, 0);
		XF_EXPECT_CQE(&self->b.q.rcq, 2000 + i, VIADUCT_WC_SUCCESS, &cqe);
		ASSERT_EQ(8U, cqe.byte_len);
		ASSERT_EQ(0, memcmp(self->a.buf + i * 8, self->b.buf + 4096 + i * 8, 8));
		xf_post_send(&self->b, i, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &src, 1, 0, 0);
		XF_EXPECT_CQE(&self->a.q.rcq, 1000 + i, VIADUCT_WC_SUCCESS, &cqe);
		ASSERT_EQ(0, memcmp(self->b.buf + i * 8, self->a.buf + 4096 + i * 8, 8));
		XF_EXPECT_CQE(&self->a.q.scq, i, VIADUCT_WC_SUCCESS, &cqe);
		XF_EXPECT_CQE(&self->b.q.scq, i, VIADUCT_WC_SUCCESS, &cqe);
	}
	ASSERT_EQ(0, vd_stats_read(st1));
	TH_LOG("%u round trips: tx_direct +%lld, tx_deferred +%lld", pings,
	       st1[VD_ST_TX_DIRECT] - st0[VD_ST_TX_DIRECT],
	       st1[VD_ST_TX_DEFERRED] - st0[VD_ST_TX_DEFERRED]);
	TH_LOG("rx_upcall +%lld, rx_deferred +%lld",
	       st1[VD_ST_RX_UPCALL] - st0[VD_ST_RX_UPCALL],
	       st1[VD_ST_RX_DEFERRED] - st0[VD_ST_RX_DEFERRED]);
	EXPECT_LE(2LL * pings, st1[VD_ST_TX_DIRECT] - st0[VD_ST_TX_DIRECT]);
	EXPECT_EQ(0LL, st1[VD_ST_TX_DEFERRED] - st0[VD_ST_TX_DEFERRED]);
	/* and received in the socket's upcall, without a work item either */
	EXPECT_LE(2LL * pings, st1[VD_ST_RX_UPCALL] - st0[VD_ST_RX_UPCALL]);
	EXPECT_EQ(0LL, st1[VD_ST_RX_DEFERRED] - st0[VD_ST_RX_DEFERRED]);
}

/*
 * The DOORBELL call and the transmit work item on one QP at once: RDMA
 * Writes longer than what a posting context sends (the work item carries
 * their rest) alternate with small Sends, all posted back to back. Every
 * WR completes in post order, and when Send k arrives, Write k is placed
 * whole: nothing overtook anything.
 */
#define XF_RACE_PAIRS	16U
#define XF_RACE_WLEN	(96U << 10)
#define XF_RACE_SOFF	(XF_RACE_PAIRS * XF_RACE_WLEN)

TEST_F_TIMEOUT(fast, doorbell_races_work, XF_TIMEOUT_S)
{
	unsigned int pairs = vd_scaled(XF_RACE_PAIRS, 6, "Write/Send pairs"), k;
	long long st0[VD_ST_NR], st1[VD_ST_NR];
	int have_stats = !vd_stats_read(st0);
	struct viaduct_cqe cqe;

	memset(self->b.buf, 0xee, XF_BUF);
	xf_fill(self->a.buf, XF_RACE_SOFF, 7);
	for (k = 0; k < pairs; k++) {
		struct xf_sge dst = { XF_RACE_SOFF + k * 64, 64 };

		memcpy(self->a.buf + XF_RACE_SOFF + k * 64, &k, sizeof(k));
		xf_post_recv(&self->b, 100 + k, &dst, 1);
	}
	for (k = 0; k < pairs; k++) {
		struct xf_sge w = { k * XF_RACE_WLEN, XF_RACE_WLEN };
		struct xf_sge snd = { XF_RACE_SOFF + k * 64, 16 };

		xf_post_send(&self->a, 2 * k, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED,
			     &w, 1, self->b.stag,
			     (unsigned long)self->b.buf + k * XF_RACE_WLEN);
		xf_post_send(&self->a, 2 * k + 1, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED,
			     &snd, 1, 0, 0);
	}
	for (k = 0; k < pairs; k++) {
		unsigned int got;

		XF_EXPECT_CQE(&self->b.q.rcq, 100 + k, VIADUCT_WC_SUCCESS, &cqe);
		ASSERT_EQ(16U, cqe.byte_len);
		memcpy(&got, self->b.buf + XF_RACE_SOFF + k * 64, sizeof(got));
		ASSERT_EQ(k, got);
		ASSERT_EQ(0, memcmp(self->b.buf + k * XF_RACE_WLEN,
				    self->a.buf + k * XF_RACE_WLEN, XF_RACE_WLEN))
			TH_LOG("Write %u not whole when Send %u arrived", k, k);
	}
	for (k = 0; k < 2 * pairs; k++)
		XF_EXPECT_CQE(&self->a.q.scq, k, VIADUCT_WC_SUCCESS, &cqe);
	if (have_stats && !vd_stats_read(st1))
		TH_LOG("tx_direct +%lld, tx_deferred +%lld",
		       st1[VD_ST_TX_DIRECT] - st0[VD_ST_TX_DIRECT],
		       st1[VD_ST_TX_DEFERRED] - st0[VD_ST_TX_DEFERRED]);
}

/*
 * One copy per side: a large RDMA Write and a large Send go from the
 * sender's pages into TCP's skbs (sendmsg() over the pages), and from the
 * receiver's skbs into the target pages, without the streams' buffers. A
 * batch the socket takes only in part has its rest copied into the
 * transmit buffer, and an FPDU that arrives in pieces goes through the
 * receive buffer, so not every byte takes the one-copy path; most must.
 * The data is checked byte for byte.
 */
#define XF_OC_WLEN	(1U << 20)
#define XF_OC_SLEN	(512U << 10)
#define XF_OC_SOFF	XF_OC_WLEN	/* the Send's source and target */

TEST_F_TIMEOUT(fast, onecopy_write_send, XF_TIMEOUT_S)
{
	struct xf_sge w = { 0, XF_OC_WLEN }, snd = { XF_OC_SOFF, XF_OC_SLEN };
	long long st0[VD_ST_NR], st1[VD_ST_NR], tx, rx, txb, rxb;
	long long total = XF_OC_WLEN + XF_OC_SLEN;
	struct viaduct_cqe cqe;

	if (vd_stats_read(st0))
		SKIP(return, "viaductctl reports no counters");
	memset(self->b.buf, 0xee, XF_OC_WLEN + XF_OC_SLEN);
	xf_fill(self->a.buf, XF_OC_WLEN + XF_OC_SLEN, 61);
	xf_post_recv(&self->b, 7, &snd, 1);
	xf_post_send(&self->a, 1, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED, &w, 1,
		     self->b.stag, (unsigned long)self->b.buf);
	xf_post_send(&self->a, 2, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &snd, 1, 0, 0);
	XF_EXPECT_CQE(&self->b.q.rcq, 7, VIADUCT_WC_SUCCESS, &cqe);
	ASSERT_EQ(XF_OC_SLEN, cqe.byte_len);
	XF_EXPECT_CQE(&self->a.q.scq, 1, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&self->a.q.scq, 2, VIADUCT_WC_SUCCESS, &cqe);
	ASSERT_EQ(0, memcmp(self->a.buf, self->b.buf, XF_OC_WLEN + XF_OC_SLEN));
	ASSERT_EQ(0, vd_stats_read(st1));
	tx = st1[VD_ST_TX_ONECOPY] - st0[VD_ST_TX_ONECOPY];
	txb = st1[VD_ST_TX_BUFFERED] - st0[VD_ST_TX_BUFFERED];
	rx = st1[VD_ST_RX_ONECOPY] - st0[VD_ST_RX_ONECOPY];
	rxb = st1[VD_ST_RX_BUFFERED] - st0[VD_ST_RX_BUFFERED];
	TH_LOG("%lld payload bytes: tx_onecopy_bytes +%lld, tx_buffered_bytes +%lld", total,
	       tx, txb);
	TH_LOG("rx_onecopy_bytes +%lld, rx_buffered_bytes +%lld", rx, rxb);
	/* FPDU bytes: the payload and its framing went one way or the other */
	EXPECT_LE(total, tx + txb);
	EXPECT_LE(total, rx + rxb);
	EXPECT_LE(total / 2, tx);
	EXPECT_LE(total / 2, rx);
}

/*
 * The receiver's resources go while its upcall places data: RDMA Writes
 * stream from a to b, and b deregisters the target region (or destroys
 * its QP) in the middle. Every WR of a completes once, in order; nothing
 * is written into b's memory once the region is gone (Writes posted after
 * the deregistration find their target untouched); the kernel stays clean
 * (the debug flavour's KASAN and lockdep watch the upcall).
 */
#define XF_GONE_WRS	16U
#define XF_GONE_LEN	(64U << 10)
#define XF_GONE_LATE	(XF_BUF / 2)	/* targets of the Writes posted after */

/* Writes per batch: two batches per test */
static unsigned int xf_gone_n = XF_GONE_WRS / 2;

static void xf_gone_writes(struct xf_side *a, struct xf_side *b, __u32 first, size_t at)
{
	__u32 i;

	for (i = 0; i < xf_gone_n; i++) {
		struct xf_sge src = { at + (size_t)i * XF_GONE_LEN, XF_GONE_LEN };

		xf_post_send(a, first + i, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED, &src, 1,
			     b->stag, (unsigned long)b->buf + src.off);
	}
}

/* All of a's WRs complete, in order: successes, then errors or flushes. */
static void xf_gone_complete(struct __test_metadata *_metadata, struct xf_side *a)
{
	unsigned int ok = 0, failed = 0, i;
	struct viaduct_cqe cqe;

	for (i = 0; i < 2 * xf_gone_n; i++) {
		ASSERT_EQ(1U, vd_cring_wait(&a->q.scq, &cqe, 1, XF_WAIT_MS))
			TH_LOG("no completion for wr %u", i);
		EXPECT_EQ(i, cqe.wr_id);
		if (cqe.status == VIADUCT_WC_SUCCESS && !failed)
			ok++;
		else if (cqe.status != VIADUCT_WC_SUCCESS)
			failed++;
		else
			EXPECT_NE(VIADUCT_WC_SUCCESS, cqe.status) TH_LOG("wr %u after a failure", i);
	}
	TH_LOG("%u done, %u failed or flushed", ok, failed);
}

TEST_F_TIMEOUT(fast, upcall_races_dereg_mr, XF_TIMEOUT_S)
{
	size_t i;

	xf_gone_n = vd_scaled(XF_GONE_WRS / 2, 4, "Writes per batch");
	xf_fill(self->a.buf, XF_BUF, 21);
	memset(self->b.buf, 0xee, XF_BUF);
	xf_gone_writes(&self->a, &self->b, 0, 0);
	ASSERT_EQ(0, vd_dereg_mr(self->b.fd, self->b.mr));
	xf_gone_writes(&self->a, &self->b, xf_gone_n, XF_GONE_LATE);
	xf_gone_complete(_metadata, &self->a);
	/* the late Writes found no region: b terminated, nothing placed */
	for (i = XF_GONE_LATE; i < XF_GONE_LATE + (size_t)xf_gone_n * XF_GONE_LEN; i++)
		ASSERT_EQ(0xee, self->b.buf[i]) TH_LOG("byte %zu written after DEREG_MR", i);
	EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(self->b.fd, self->b.q.c.handle));
}

TEST_F_TIMEOUT(fast, upcall_races_destroy_qp, XF_TIMEOUT_S)
{
	int ret;

	xf_gone_n = vd_scaled(XF_GONE_WRS / 2, 4, "Writes per batch");
	xf_fill(self->a.buf, XF_BUF, 22);
	xf_gone_writes(&self->a, &self->b, 0, 0);
	ASSERT_EQ(0, vd_destroy_qp(self->b.fd, self->b.q.c.handle));
	xf_gone_writes(&self->a, &self->b, xf_gone_n, XF_GONE_LATE);
	/*
	 * Destroying b's QP ends its stream (a Terminate, then FIN), which
	 * may have closed a's id already; if not, a aborts (RST). Either way
	 * a's QP enters Error and the rest is flushed; then b's context goes,
	 * as at exit.
	 */
	usleep(20000);
	ret = xf_disconnect(&self->a, self->a.id, VIADUCT_CM_DISC_ABORT);
	ASSERT_TRUE(ret == 0 || ret == -EINVAL) TH_LOG("CM_DISCONNECT: %d", ret);
	xf_gone_complete(_metadata, &self->a);
	close(self->b.fd);
	self->b.fd = -1;
}

TEST_HARNESS_MAIN
