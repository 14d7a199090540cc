// SPDX-License-Identifier: GPL-2.0
/*
 * The memory operations between two viaduct devices in two network
 * namespaces, connected over a veth pair as in xfer_test:
 *
 *   netns xa<pid>: vd0 on eth0 192.0.2.1  <-- veth -->  192.0.2.2 eth0, vd0 :xb<pid>
 *
 * Send with Invalidate (and with SE): what a peer may invalidate and what
 * it may not. An STag that is no fast-register MR or window of the
 * receiving QP's PD is refused with the Terminate of RFC 5040 section 7.4
 * ("STag cannot be invalidated"), both QPs go to Error and the STag stays
 * as it was. Documentation/memory.rst has the rules.
 *
 * Fast registration: ALLOC_MR, a Fast-Register WR over pages of the
 * side's own MR, an RDMA Write through the new STag with the bytes checked
 * where they land, a Local Invalidate, and a Write refused after it with
 * the Terminate; a peer's Send with Invalidate of it, reported in the
 * receive completion; RDMA Read with local invalidate of the sink; the
 * local fence; page lists that are refused (not contiguous, too long,
 * memory of no MR of the PD).
 *
 * MODIFY_MR: a peer's RDMA Write allowed once the region's remote write
 * right is given, refused with the Terminate once it is taken away.
 *
 * Access ends when the application ends it: DEREG_MR of the source of a
 * 16 MiB RDMA Read Response being streamed, then a canary written over
 * it, which never reaches the reader.
 *
 * Memory windows: a type-1 window bound by a call and through the send
 * queue, a type-2 window bound by a WR; RDMA Write and Read through them
 * with the bytes checked; the window's bounds and rights (not the
 * region's) with the Terminates security.rst lists; a type-2 window used
 * through another connection refused; Local Invalidate and a peer's Send
 * with Invalidate ending it; DEREG_MR of its region refused while it is
 * bound; bind WRs that are refused, each with its status.
 */
#include "xfer_util.h"

FIXTURE(mem)
{
	struct xf_side a;	/* active: connects */
	struct xf_side b;	/* passive: listens, accepts */
	int up;
	long zc_saved;		/* zcopy_tx_min to restore, or -1 */
};

FIXTURE_SETUP(mem)
{
	self->zc_saved = -1;
	xf_pair_share(_metadata, &self->a, &self->b, &self->up);
	xf_pair_connect(_metadata, &self->a, &self->b, VIADUCT_CM_F_CRC, NULL, NULL, NULL);
}

FIXTURE_TEARDOWN(mem)
{
	xf_pair_down(&self->a, &self->b, self->up);
	if (self->zc_saved >= 0)
		xf_zc_set(self->zc_saved);
}

/* Zero copy on for messages of at least @min bytes, until the teardown. */
static void zc_on(struct __test_metadata *_metadata, FIXTURE_DATA(mem) *self,
		  long min)
{
	self->zc_saved = xf_zc_get();
	ASSERT_LE(0, self->zc_saved) TH_LOG("no zcopy_tx_min parameter");
	ASSERT_EQ(0, xf_zc_set(min));
}

/*
 * a sends a Send with Invalidate (@flags: with SE or not) naming @stag at
 * b; b refuses with @term: a Terminate, the receive failed, both in Error.
 */
static void refused_invalidate(struct __test_metadata *_metadata,
			       FIXTURE_DATA(mem) *self, __u8 flags, __u32 stag,
			       __u16 term)
{
	struct xf_sge src = { 0, 100 }, dst = { 4096, 4096 };
	struct viaduct_async_event ev;
	struct viaduct_query_qp q;
	struct viaduct_cqe cqe;

	xf_fill(self->a.buf, 100, 3);
	xf_post_recv(&self->b, 50, &dst, 1);
	xf_post_send_q(&self->a, &self->a.q, 1, VIADUCT_OP_SEND_INV,
		       VIADUCT_SQE_SIGNALED | flags, &src, 1, stag, 0);

	/* b: a protection error is an access error; the receive failed */
	ASSERT_EQ(0, vd_wait_async(self->b.fd, (term >> 8) == 0x01 ?
				   VIADUCT_EVENT_QP_ACCESS_ERR :
				   VIADUCT_EVENT_QP_FATAL,
				   self->b.q.c.handle, &ev, XF_WAIT_MS));
	EXPECT_EQ(term, ev.detail);
	ASSERT_EQ(0, vd_query_qp(self->b.fd, self->b.q.c.handle, &q));
	EXPECT_EQ(VIADUCT_QPS_ERROR, q.state);
	EXPECT_EQ(term, q.terminate);
	XF_EXPECT_CQE(&self->b.q.rcq, 50, VIADUCT_WC_REM_INV_REQ_ERR, &cqe);
	EXPECT_FALSE(cqe.flags & VIADUCT_WC_F_INVALIDATED);

	/* a: the Terminate arrives; the WR is done or blamed for it */
	ASSERT_EQ(0, vd_wait_async(self->a.fd, VIADUCT_EVENT_QP_FATAL,
				   self->a.q.c.handle, &ev, XF_WAIT_MS));
	EXPECT_EQ(term, ev.detail);
	ASSERT_EQ(0, vd_query_qp(self->a.fd, self->a.q.c.handle, &q));
	EXPECT_EQ(VIADUCT_QPS_ERROR, q.state);
	EXPECT_EQ(term, q.terminate);
	ASSERT_EQ(1U, vd_cring_wait(&self->a.q.scq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(1U, cqe.wr_id);
	EXPECT_EQ(VIADUCT_WC_SEND, cqe.opcode);
	/*
	 * Blamed if the Terminate came before the Send was done, with the
	 * status of the Terminate's class: a protection error (type 1) is an
	 * access error, a remote operation error (type 2) an operation error.
	 */
	EXPECT_TRUE(cqe.status == VIADUCT_WC_SUCCESS ||
		    cqe.status == ((term >> 8) == 0x01 ?
				   VIADUCT_WC_REM_ACCESS_ERR :
				   VIADUCT_WC_REM_OP_ERR))
		TH_LOG("status %u", cqe.status);
}

/* A plain MR, registered by a call, is never invalidated by a peer. */
TEST_F_TIMEOUT(mem, send_inv_plain_mr_refused, XF_TIMEOUT_S)
{
	/* RDMAP, remote protection error, STag cannot be invalidated */
	refused_invalidate(_metadata, self, 0, self->b.stag, 0x0109);
}

/* No such STag: a remote operation error, "cannot be invalidated". */
TEST_F_TIMEOUT(mem, send_inv_unknown_stag_refused, XF_TIMEOUT_S)
{
	refused_invalidate(_metadata, self, 0, self->b.stag ^ 0x100, 0x0209);
}

#define PG		4096UL
#define FR_KEY		0x42
#define FR_IOVA		0x7700000000ULL
#define FR_ACCESS	XF_ACCESS

/*
 * Side @s registers @n SGEs of its buffer in its fast-register MR
 * @frstag under key FR_KEY at FR_IOVA and waits for the completion.
 */
static void fast_reg(struct __test_metadata *_metadata, struct xf_side *s,
		     __u32 frstag, const struct xf_sge *sg, int n, __u8 want)
{
	xf_fast_reg(_metadata, s, xf_with_key(frstag, FR_KEY), FR_IOVA,
		    FR_ACCESS, sg, n, want);
}

static void local_inv(struct __test_metadata *_metadata, struct xf_side *s,
		      __u32 stag, __u8 want)
{
	struct viaduct_cqe cqe;

	xf_post_send_q(s, &s->q, 701, VIADUCT_OP_LOCAL_INV,
		       VIADUCT_SQE_SIGNALED, NULL, 0, stag, 0);
	XF_EXPECT_CQE(&s->q.scq, 701, want, &cqe);
	EXPECT_EQ(VIADUCT_WC_LOCAL_INV, cqe.opcode);
}

/* a writes @len bytes of pattern @seed at @to of @stag at b, then a Send
 * behind it: once b has received the Send, the Write is placed. */
static void write_then_mark(struct __test_metadata *_metadata,
			    FIXTURE_DATA(mem) *self, __u32 stag, __u64 to,
			    __u32 len, unsigned int seed)
{
	struct xf_sge src = { 0, len }, mark = { XF_BUF - 8, 8 };
	struct xf_sge rdst = { XF_BUF - 64, 64 };
	struct viaduct_cqe cqe;

	xf_fill(self->a.buf, len, seed);
	xf_post_recv(&self->b, 60, &rdst, 1);
	xf_post_send(&self->a, 61, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED,
		     &src, 1, stag, to);
	xf_post_send(&self->a, 62, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED,
		     &mark, 1, 0, 0);
	XF_EXPECT_CQE(&self->a.q.scq, 61, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&self->a.q.scq, 62, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&self->b.q.rcq, 60, VIADUCT_WC_SUCCESS, &cqe);
}

TEST_F_TIMEOUT(mem, alloc_mr_args, XF_TIMEOUT_S)
{
	struct viaduct_alloc_mr r = { .pd_handle = self->b.pd, .max_pages = 1 };
	__u32 stag;

	EXPECT_TRUE(self->b.attr.caps & VIADUCT_DEV_CAP_SEND_INV);
	EXPECT_TRUE(self->b.attr.caps & VIADUCT_DEV_CAP_FAST_REG);
	EXPECT_TRUE(self->b.attr.caps & VIADUCT_DEV_CAP_LOCAL_FENCE);
	EXPECT_EQ(-EINVAL, xf_alloc_fr(self->b.fd, self->b.pd, 0, &stag));
	EXPECT_EQ(-EINVAL, xf_alloc_fr(self->b.fd, self->b.pd, 0xffffffffU, &stag));
	EXPECT_EQ(-ENOENT, xf_alloc_fr(self->b.fd, self->b.pd + 100, 4, &stag));
	r.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, vd_ioctl(self->b.fd, VIADUCT_IOCTL_ALLOC_MR, &r));
	r.reserved[1] = 0;
	r.reserved2 = 1;
	EXPECT_EQ(-EINVAL, vd_ioctl(self->b.fd, VIADUCT_IOCTL_ALLOC_MR, &r));
	r.reserved2 = 0;
	ASSERT_EQ(0, vd_ioctl(self->b.fd, VIADUCT_IOCTL_ALLOC_MR, &r));
	EXPECT_NE(0U, r.handle);
	EXPECT_EQ(0U, r.stag & VIADUCT_STAG_KEY_MASK);
	/* the PD is in use until the region goes */
	EXPECT_EQ(-EBUSY, vd_destroy(self->b.fd, VIADUCT_IOCTL_DESTROY_PD, self->b.pd));
	EXPECT_EQ(0, vd_destroy(self->b.fd, VIADUCT_IOCTL_DEREG_MR, r.handle));
}

/*
 * Fast-register over two pieces of b's buffer, Write through it (the
 * bytes land where the page list says), Local Invalidate, and the next
 * Write is refused with a Terminate and places nothing.
 */
TEST_F_TIMEOUT(mem, fast_reg_write_invalidate_write, XF_TIMEOUT_S)
{
	/* pages 2-3 then page 6 of b's buffer: 3 pages, 100 bytes in */
	struct xf_sge list[2] = { { 2 * PG + 100, 2 * PG - 100 }, { 6 * PG, PG } };
	__u32 fr = 0, stag, len = 2 * PG;
	int h, i;

	h = xf_alloc_fr(self->b.fd, self->b.pd, 4, &fr);
	ASSERT_LT(0, h);
	memset(self->b.buf, 0xee, 8 * PG);
	fast_reg(_metadata, &self->b, fr, list, 2, VIADUCT_WC_SUCCESS);
	stag = xf_with_key(fr, FR_KEY);

	/* 2 pages from offset 1000 of the registration: across the seam */
	write_then_mark(_metadata, self, stag, FR_IOVA + 1000, len, 7);
	for (i = 0; i < (int)len; i++) {
		size_t off = 100 + 1000 + i;	/* in the registration */
		size_t at = off < 2 * PG ? 2 * PG + off : 6 * PG + off - 2 * PG;

		if (self->b.buf[at] != self->a.buf[i])
			break;
	}
	EXPECT_EQ((int)len, i) TH_LOG("byte %d misplaced", i);
	EXPECT_EQ(0xee, self->b.buf[2 * PG + 1099]);
	EXPECT_EQ(0xee, self->b.buf[4 * PG]);	/* the hole between */
	EXPECT_EQ(0xee, self->b.buf[6 * PG + 100 + 1000 + len - 2 * PG]);
	local_inv(_metadata, &self->b, stag, VIADUCT_WC_SUCCESS);
	/* the key ALLOC_MR gave names nothing now */
	local_inv(_metadata, &self->b, fr, VIADUCT_WC_LOC_PROT_ERR);
}

TEST_F_TIMEOUT(mem, fast_reg_invalidate_then_write_refused, XF_TIMEOUT_S)
{
	struct xf_sge list = { 4 * PG, 2 * PG }, src = { 0, 64 };
	struct viaduct_async_event ev;
	struct viaduct_query_qp q;
	__u32 fr = 0, stag;
	int h, i;

	h = xf_alloc_fr(self->b.fd, self->b.pd, 2, &fr);
	ASSERT_LT(0, h);
	fast_reg(_metadata, &self->b, fr, &list, 1, VIADUCT_WC_SUCCESS);
	stag = xf_with_key(fr, FR_KEY);
	write_then_mark(_metadata, self, stag, FR_IOVA + 8, 64, 9);
	EXPECT_EQ(0, memcmp(self->b.buf + 4 * PG + 8, self->a.buf, 64));

	local_inv(_metadata, &self->b, stag, VIADUCT_WC_SUCCESS);
	memset(self->b.buf + 4 * PG, 0xcc, 2 * PG);
	xf_fill(self->a.buf, 64, 10);
	xf_post_send(&self->a, 63, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED,
		     &src, 1, stag, FR_IOVA + 8);
	/* DDP tagged buffer error, invalid STag; nothing placed */
	ASSERT_EQ(0, vd_wait_async(self->b.fd, VIADUCT_EVENT_QP_ACCESS_ERR,
				   self->b.q.c.handle, &ev, XF_WAIT_MS));
	EXPECT_EQ(0x1100U, ev.detail);
	ASSERT_EQ(0, vd_query_qp(self->b.fd, self->b.q.c.handle, &q));
	EXPECT_EQ(VIADUCT_QPS_ERROR, q.state);
	for (i = 0; i < (int)(2 * PG); i++)
		if (self->b.buf[4 * PG + i] != 0xcc)
			break;
	EXPECT_EQ((int)(2 * PG), i) TH_LOG("byte %d was written", i);
}

/* The peer invalidates it: the receive completion names the STag. */
TEST_F_TIMEOUT(mem, send_inv_fast_reg, XF_TIMEOUT_S)
{
	struct xf_sge list = { 4 * PG, PG }, src = { 0, 300 };
	struct xf_sge dst = { 8 * PG, 4096 };
	struct viaduct_cqe cqe;
	__u32 fr = 0, stag;
	int h, i;

	h = xf_alloc_fr(self->b.fd, self->b.pd, 1, &fr);
	ASSERT_LT(0, h);
	fast_reg(_metadata, &self->b, fr, &list, 1, VIADUCT_WC_SUCCESS);
	stag = xf_with_key(fr, FR_KEY);

	for (i = 0; i < 2; i++) {
		__u8 se = i ? VIADUCT_SQE_SOLICITED : 0;

		xf_fill(self->a.buf, 300, 20 + i);
		xf_post_recv(&self->b, 70 + i, &dst, 1);
		xf_post_send(&self->a, 80 + i, VIADUCT_OP_SEND_INV,
			     VIADUCT_SQE_SIGNALED | se, &src, 1, stag, 0);
		XF_EXPECT_CQE(&self->a.q.scq, 80 + i, VIADUCT_WC_SUCCESS, &cqe);
		EXPECT_EQ(VIADUCT_WC_SEND, cqe.opcode);
		XF_EXPECT_CQE(&self->b.q.rcq, 70 + i, VIADUCT_WC_SUCCESS, &cqe);
		EXPECT_EQ(300U, cqe.byte_len);
		EXPECT_TRUE(cqe.flags & VIADUCT_WC_F_INVALIDATED);
		EXPECT_EQ(stag, cqe.invalidated_stag);
		EXPECT_EQ(!!se, !!(cqe.flags & VIADUCT_WC_F_SOLICITED));
		EXPECT_EQ(0, memcmp(self->b.buf + 8 * PG, self->a.buf, 300));
		/* INVALID: it registers again (a VALID one would not) */
		fast_reg(_metadata, &self->b, fr, &list, 1, VIADUCT_WC_SUCCESS);
	}
	/* a plain Send reports no invalidation */
	xf_post_recv(&self->b, 72, &dst, 1);
	xf_post_send(&self->a, 82, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &src, 1, 0, 0);
	XF_EXPECT_CQE(&self->b.q.rcq, 72, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_FALSE(cqe.flags & VIADUCT_WC_F_INVALIDATED);
	EXPECT_EQ(0U, cqe.invalidated_stag);
	/* registering over a VALID registration fails, and the QP with it */
	fast_reg(_metadata, &self->b, fr, &list, 1, VIADUCT_WC_LOC_PROT_ERR);
}

/*
 * RDMA Read into a fast-registered sink with local invalidate: the data
 * arrives, and the sink is INVALID when the Read completes. The local
 * fence holds a Send until the Read completed.
 */
TEST_F_TIMEOUT(mem, read_inv_and_local_fence, XF_TIMEOUT_S)
{
	struct xf_sge list = { 0, 64 * PG }, mark = { 0, 16 };
	struct xf_sge rdst = { 0, 64 };
	struct viaduct_cqe cqe;
	__u32 fr = 0, stag, len = 64 * PG - 12;
	struct viaduct_sqe *e;
	struct viaduct_sge *sge;

	ASSERT_LT(0, xf_alloc_fr(self->a.fd, self->a.pd, 64, &fr));
	memset(self->a.buf, 0, 64 * PG);
	xf_fill(self->b.buf + 12345, len, 31);
	fast_reg(_metadata, &self->a, fr, &list, 1, VIADUCT_WC_SUCCESS);
	stag = xf_with_key(fr, FR_KEY);

	/* the sink is named by the fast-register STag */
	e = vd_sq_slot(&self->a.q, self->a.q.sq_prod);
	memset(e, 0, self->a.q.c.sq_wqe_size);
	e->wr_id = 90;
	e->opcode = VIADUCT_OP_RDMA_READ_INV;
	e->flags = VIADUCT_SQE_SIGNALED;
	e->num_sge = 1;
	e->remote_stag = self->b.stag;
	e->remote_addr = (unsigned long)self->b.buf + 12345;
	sge = (struct viaduct_sge *)(e + 1);
	sge->addr = FR_IOVA + 12;
	sge->length = len;
	sge->stag = stag;
	self->a.q.sq_prod++;
	/* behind it, with a local fence: a Send */
	xf_post_recv(&self->b, 91, &rdst, 1);
	xf_post_send(&self->a, 92, VIADUCT_OP_SEND,
		     VIADUCT_SQE_SIGNALED | VIADUCT_SQE_LOCAL_FENCE, &mark, 1, 0, 0);

	XF_EXPECT_CQE(&self->a.q.scq, 90, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_EQ(VIADUCT_WC_RDMA_READ, cqe.opcode);
	EXPECT_EQ(len, cqe.byte_len);
	XF_EXPECT_CQE(&self->a.q.scq, 92, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&self->b.q.rcq, 91, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_EQ(0, memcmp(self->a.buf + 12, self->b.buf + 12345, len));
	/* the Send was built after the Read's data arrived */
	EXPECT_EQ(0, memcmp(self->b.buf + 12, self->b.buf + 12345, 4));
	/* INVALID: registering again succeeds */
	fast_reg(_metadata, &self->a, fr, &list, 1, VIADUCT_WC_SUCCESS);
}

/* Page lists that are no page list: each fails the WR and the QP. */
struct bad_list {
	const char *what;
	struct xf_sge sg[2];
	int n;
	__u32 max_pages;
	__u8 status;
};

static const struct bad_list bad_lists[] = {
	{ "gap: first ends mid-page", { { 0, 100 }, { PG, PG } }, 2, 4,
	  VIADUCT_WC_LOC_PROT_ERR },
	{ "3 pages into 2", { { 100, 2 * PG } }, 1, 2, VIADUCT_WC_LOC_LEN_ERR },
	{ "beyond the MR", { { XF_BUF - PG, 2 * PG } }, 1, 4,
	  VIADUCT_WC_LOC_PROT_ERR },
};

static void bad_list(struct __test_metadata *_metadata,
		     FIXTURE_DATA(mem) *self, const struct bad_list *c)
{
	struct viaduct_async_event ev;
	__u32 fr = 0;

	ASSERT_LT(0, xf_alloc_fr(self->b.fd, self->b.pd, c->max_pages, &fr));
	fast_reg(_metadata, &self->b, fr, c->sg, c->n, c->status);
	ASSERT_EQ(0, vd_wait_async(self->b.fd, VIADUCT_EVENT_QP_FATAL,
				   self->b.q.c.handle, &ev, XF_WAIT_MS))
		TH_LOG("%s", c->what);
}

TEST_F_TIMEOUT(mem, fast_reg_gap_end_refused, XF_TIMEOUT_S)
{
	bad_list(_metadata, self, &bad_lists[0]);
}

TEST_F_TIMEOUT(mem, fast_reg_too_long_refused, XF_TIMEOUT_S)
{
	bad_list(_metadata, self, &bad_lists[1]);
}

TEST_F_TIMEOUT(mem, fast_reg_beyond_mr_refused, XF_TIMEOUT_S)
{
	bad_list(_metadata, self, &bad_lists[2]);
}

/* Posts one send WR with a single SGE of any memory and STag. */
static void post_raw(struct xf_side *s, __u64 wr_id, __u8 opcode, __u8 flags,
		     void *addr, __u32 len, __u32 lstag, __u32 rstag, __u64 raddr)
{
	struct vd_qp *q = &s->q;
	struct viaduct_sqe *e = vd_sq_slot(q, q->sq_prod);
	struct viaduct_sge *sge = (struct viaduct_sge *)(e + 1);

	memset(e, 0, q->c.sq_wqe_size);
	e->wr_id = wr_id;
	e->opcode = opcode;
	e->flags = flags;
	e->num_sge = 1;
	e->remote_stag = rstag;
	e->remote_addr = raddr;
	sge->addr = (unsigned long)addr;
	sge->length = len;
	sge->stag = lstag;
	q->sq_prod++;
	__atomic_store_n(&q->db->sq_producer, q->sq_prod, __ATOMIC_RELEASE);
	vd_doorbell(s->fd, q->c.handle, VIADUCT_DOORBELL_SQ);
}

#define BIG		(16UL << 20)
#define SRC_BYTE	0x11
#define CANARY		0xca

/*
 * b deregisters the source of a 16 MiB RDMA Read Response while it is
 * being streamed to a, then writes a canary over the memory: no canary
 * byte ever reaches a, whatever part of the response got there. The Read
 * completes in full (if it was all out before) or fails with b's
 * Terminate: invalid STag. With zero copy on, the response's pages are
 * in TCP's queues by reference: DEREG_MR returns only once TCP let go of
 * them, so the canary cannot be sent (or sent again) either.
 */
static void dereg_during_read_response(struct __test_metadata *_metadata,
				       FIXTURE_DATA(mem) *self, long zc_min)
{
	long long st0[VD_ST_NR], st[VD_ST_NR];
	unsigned char *src, *sink;
	__u32 src_stag = 0, sink_stag = 0;
	struct viaduct_cqe cqe;
	int src_mr, sink_mr, spins;
	size_t i, got = 0, bad = 0;

	src = mmap(NULL, BIG, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	sink = mmap(NULL, BIG, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, src);
	ASSERT_NE(MAP_FAILED, sink);
	memset(src, SRC_BYTE, BIG);
	src_mr = vd_reg_mr(self->b.fd, self->b.pd, src, BIG, XF_ACCESS, &src_stag);
	ASSERT_LT(0, src_mr);
	sink_mr = vd_reg_mr(self->a.fd, self->a.pd, sink, BIG, XF_ACCESS, &sink_stag);
	ASSERT_LT(0, sink_mr);
	if (zc_min)
		zc_on(_metadata, self, zc_min);
	ASSERT_EQ(0, vd_stats_read(st0));

	post_raw(&self->a, 1, VIADUCT_OP_RDMA_READ, VIADUCT_SQE_SIGNALED, sink,
		 BIG, sink_stag, src_stag, (unsigned long)src);
	/* the response is streaming once its first bytes landed */
	for (spins = 0; spins < XF_WAIT_MS; spins++) {
		if (__atomic_load_n(&sink[0], __ATOMIC_ACQUIRE))
			break;
		usleep(1000);
	}
	ASSERT_EQ(SRC_BYTE, sink[0]);
	ASSERT_EQ(0, vd_destroy(self->b.fd, VIADUCT_IOCTL_DEREG_MR, src_mr));
	memset(src, CANARY, BIG);

	ASSERT_EQ(1U, vd_cring_wait(&self->a.q.scq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(1U, cqe.wr_id);
	EXPECT_TRUE(cqe.status == VIADUCT_WC_SUCCESS ||
		    cqe.status == VIADUCT_WC_REM_ACCESS_ERR)
		TH_LOG("status %u vendor_err 0x%x", cqe.status, cqe.vendor_err);
	if (cqe.status != VIADUCT_WC_SUCCESS)
		EXPECT_EQ(0x0100U, cqe.vendor_err);
	for (i = 0; i < BIG; i++) {
		if (sink[i] == SRC_BYTE)
			got++;
		else if (sink[i])
			bad++;
	}
	EXPECT_EQ(0U, bad) TH_LOG("%zu bytes neither source nor untouched", bad);
	if (cqe.status == VIADUCT_WC_SUCCESS)
		EXPECT_EQ(BIG, got);
	TH_LOG("%zu of %lu bytes arrived before the deregistration", got, BIG);
	ASSERT_EQ(0, vd_stats_read(st));
	/* the response went by reference */
	if (zc_min) {
		EXPECT_EQ(st0[VD_ST_TX_ZCOPY_FALLBACKS], st[VD_ST_TX_ZCOPY_FALLBACKS]);
		EXPECT_LT(st0[VD_ST_TX_ZCOPY_MSGS], st[VD_ST_TX_ZCOPY_MSGS]);
	}
	munmap(src, BIG);
	munmap(sink, BIG);
}

TEST_F_TIMEOUT(mem, dereg_during_read_response, XF_TIMEOUT_S)
{
	dereg_during_read_response(_metadata, self, 0);
}

TEST_F_TIMEOUT(mem, dereg_during_read_response_zcopy, XF_TIMEOUT_S)
{
	dereg_during_read_response(_metadata, self, 1);
}

#define ZC_LEN		(1U << 20)
#define ZC_SENDS	8

/*
 * Zero copy: a 1 MiB Send from its own MR completes only once TCP let go
 * of its pages, so deregistering right after the completion and writing
 * a canary over the memory changes nothing the peer receives.
 */
TEST_F_TIMEOUT(mem, zcopy_send_dereg_after_completion, XF_TIMEOUT_S)
{
	long long st0[VD_ST_NR], st[VD_ST_NR];
	struct xf_sge dst = { 0, ZC_LEN };
	struct viaduct_cqe cqe;
	unsigned char *src;
	__u32 stag;
	int mr, i;

	src = mmap(NULL, ZC_LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, src);
	mr = vd_reg_mr(self->a.fd, self->a.pd, src, ZC_LEN, XF_ACCESS, &stag);
	ASSERT_LT(0, mr);
	zc_on(_metadata, self, 16384);
	ASSERT_EQ(0, vd_stats_read(st0));

	for (i = 0; i < 4; i++) {
		xf_fill(src, ZC_LEN, 90 + i);
		memset(self->b.buf, 0, ZC_LEN);
		xf_post_recv(&self->b, 10 + i, &dst, 1);
		post_raw(&self->a, 20 + i, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED,
			 src, ZC_LEN, stag, 0, 0);
		XF_EXPECT_CQE(&self->a.q.scq, 20 + i, VIADUCT_WC_SUCCESS, &cqe);
		/* the last: its memory goes right after the completion */
		if (i == 3)
			ASSERT_EQ(0, vd_dereg_mr(self->a.fd, mr));
		memset(src, CANARY, ZC_LEN);
		XF_EXPECT_CQE(&self->b.q.rcq, 10 + i, VIADUCT_WC_SUCCESS, &cqe);
		EXPECT_EQ(ZC_LEN, cqe.byte_len);
		xf_fill(src, ZC_LEN, 90 + i);
		EXPECT_EQ(0, memcmp(self->b.buf, src, ZC_LEN)) TH_LOG("send %d", i);
	}
	ASSERT_EQ(0, vd_stats_read(st));
	EXPECT_EQ(st0[VD_ST_TX_ZCOPY_FALLBACKS], st[VD_ST_TX_ZCOPY_FALLBACKS]);
	EXPECT_LE(st0[VD_ST_TX_ZCOPY_MSGS] + 4, st[VD_ST_TX_ZCOPY_MSGS]);
	munmap(src, ZC_LEN);
}

/*
 * Zero copy: eight 1 MiB Sends in flight when a closes the connection,
 * right after b received the first. Every WR completes, in order, as sent
 * or flushed; either only once TCP let go of its pages, so a canary
 * written over a WR's memory as soon as it completed never reaches b,
 * which receives only whole, correct messages.
 */
TEST_F_TIMEOUT(mem, zcopy_flush_in_flight, XF_TIMEOUT_S)
{
	struct viaduct_cm_event ev;
	struct viaduct_cqe cqe, first;
	unsigned char *src, *want;
	__u32 stag, i;
	int mr, ok = 0;

	src = mmap(NULL, ZC_SENDS * ZC_LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, src);
	want = malloc(ZC_LEN);
	ASSERT_NE(NULL, want);
	mr = vd_reg_mr(self->a.fd, self->a.pd, src, ZC_SENDS * ZC_LEN, XF_ACCESS, &stag);
	ASSERT_LT(0, mr);
	zc_on(_metadata, self, 16384);
	/* b takes the first two */
	for (i = 0; i < ZC_SENDS; i++) {
		struct xf_sge dst = { i * ZC_LEN, ZC_LEN };

		xf_fill(src + i * ZC_LEN, ZC_LEN, 100 + i);
		if (i < 2)
			xf_post_recv(&self->b, 30 + i, &dst, 1);
	}
	for (i = 0; i < ZC_SENDS; i++)
		post_raw(&self->a, 40 + i, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED,
			 src + i * ZC_LEN, ZC_LEN, stag, 0, 0);
	XF_EXPECT_CQE(&self->b.q.rcq, 30, VIADUCT_WC_SUCCESS, &first);
	ASSERT_EQ(0, xf_disconnect(&self->a, self->a.id, 0));

	for (i = 0; i < ZC_SENDS; i++) {
		ASSERT_EQ(1U, vd_cring_wait(&self->a.q.scq, &cqe, 1, XF_WAIT_MS));
		EXPECT_EQ(40U + i, cqe.wr_id);
		EXPECT_TRUE(cqe.status == VIADUCT_WC_SUCCESS ||
			    cqe.status == VIADUCT_WC_FLUSHED)
			TH_LOG("wr %u status %u", i, cqe.status);
		/* its pages are the application's again */
		memset(src + i * ZC_LEN, CANARY, ZC_LEN);
	}
	/*
	 * b's DISCONNECTED comes once its transport read up to a's FIN, after
	 * the completions of everything a sent before (cm.rst): a receive
	 * not completed by then never completes with data, so there is
	 * nothing more to wait for.
	 */
	do {
		ASSERT_EQ(0, xf_cm_event(&self->b, &ev, XF_WAIT_MS));
	} while (ev.type != VIADUCT_CM_EVENT_DISCONNECTED);
	/* b: what arrived is whole and is the source, never the canary */
	cqe = first;
	for (i = 0; i < 2; i++) {
		if (i && (vd_cring_wait(&self->b.q.rcq, &cqe, 1, 0) != 1 ||
			  cqe.status != VIADUCT_WC_SUCCESS))
			break;
		EXPECT_EQ(30U + i, cqe.wr_id);
		EXPECT_EQ(ZC_LEN, cqe.byte_len);
		xf_fill(want, ZC_LEN, 100 + i);
		EXPECT_EQ(0, memcmp(self->b.buf + i * ZC_LEN, want, ZC_LEN))
			TH_LOG("message %u", i);
		ok++;
	}
	TH_LOG("%d of 2 receives completed", ok);
	ASSERT_EQ(0, vd_dereg_mr(self->a.fd, mr));
	free(want);
	munmap(src, ZC_SENDS * ZC_LEN);
}

/* A plain MR is not invalidated locally either. */
TEST_F_TIMEOUT(mem, local_inv_plain_mr_refused, XF_TIMEOUT_S)
{
	local_inv(_metadata, &self->b, self->b.stag, VIADUCT_WC_LOC_PROT_ERR);
}

/*
 * MODIFY_MR on a live connection: a region of b registered without remote
 * rights takes a peer's RDMA Write once the right is given, keeping its
 * STag, and refuses the next one, with the Terminate of a tagged buffer
 * whose STag the stream may not use (DDP 0x1102), once it is taken away;
 * nothing is placed.
 */
TEST_F_TIMEOUT(mem, modify_mr_rights, XF_TIMEOUT_S)
{
	struct viaduct_modify_mr m = { .flags = VIADUCT_MODIFY_MR_ACCESS };
	struct xf_sge src = { 0, 256 };
	unsigned char *dst = self->b.buf + 4 * PG;
	struct viaduct_async_event ev;
	struct viaduct_query_qp q;
	__u32 stag = 0;
	int h, i;

	EXPECT_TRUE(self->b.attr.caps & VIADUCT_DEV_CAP_MODIFY_MR);
	h = vd_reg_mr(self->b.fd, self->b.pd, dst, 2 * PG,
		      VIADUCT_ACCESS_LOCAL_WRITE, &stag);
	ASSERT_LT(0, h);
	m.handle = h;
	m.access = VIADUCT_ACCESS_LOCAL_WRITE | VIADUCT_ACCESS_REMOTE_WRITE;
	ASSERT_EQ(0, vd_ioctl(self->b.fd, VIADUCT_IOCTL_MODIFY_MR, &m));
	memset(dst, 0xcc, 2 * PG);
	write_then_mark(_metadata, self, stag, (unsigned long)dst + 100, 256, 11);
	EXPECT_EQ(0, memcmp(dst + 100, self->a.buf, 256));
	EXPECT_EQ(0xcc, dst[99]);
	EXPECT_EQ(0xcc, dst[356]);

	/* local write only again: the same STag no longer takes a Write */
	m.access = VIADUCT_ACCESS_LOCAL_WRITE;
	ASSERT_EQ(0, vd_ioctl(self->b.fd, VIADUCT_IOCTL_MODIFY_MR, &m));
	memset(dst, 0xcc, 2 * PG);
	xf_fill(self->a.buf, 256, 12);
	xf_post_send(&self->a, 64, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED,
		     &src, 1, stag, (unsigned long)dst + 100);
	ASSERT_EQ(0, vd_wait_async(self->b.fd, VIADUCT_EVENT_QP_ACCESS_ERR,
				   self->b.q.c.handle, &ev, XF_WAIT_MS));
	EXPECT_EQ(0x1102U, ev.detail);
	ASSERT_EQ(0, vd_query_qp(self->b.fd, self->b.q.c.handle, &q));
	EXPECT_EQ(VIADUCT_QPS_ERROR, q.state);
	EXPECT_EQ(0x1102U, q.terminate);
	for (i = 0; i < (int)(2 * PG); i++)
		if (dst[i] != 0xcc)
			break;
	EXPECT_EQ((int)(2 * PG), i) TH_LOG("byte %d was written", i);
	EXPECT_EQ(0, vd_dereg_mr(self->b.fd, h));
}

/* Memory windows. b binds windows onto its buffer through a second MR. */
#define MW_OFF		(3 * PG + 10)	/* where the windows start in b's buf */
#define MW_LEN		(2 * PG)
#define RR_		VIADUCT_ACCESS_REMOTE_READ
#define RW_		VIADUCT_ACCESS_REMOTE_WRITE

/* b's region over its whole buffer that windows may bind to. */
static __u32 bind_region(struct __test_metadata *_metadata, struct xf_side *s,
			 __u32 access, int *handle)
{
	__u32 stag = 0;

	*handle = vd_reg_mr(s->fd, s->pd, s->buf, s->len, access, &stag);
	EXPECT_LT(0, *handle);
	return stag;
}

static int alloc_mw(int fd, __u32 pd, __u32 type, __u32 *stag)
{
	struct viaduct_alloc_mw r = { .pd_handle = pd, .type = type, .key = 0x11 };
	int ret = vd_ioctl(fd, VIADUCT_IOCTL_ALLOC_MW, &r);

	if (ret)
		return ret;
	*stag = r.stag;
	return (int)r.handle;
}

static int bind_call(int fd, __u32 mw, __u32 mr_stag, __u64 addr, __u64 len,
		     __u32 access, __u8 key, __u32 *stag)
{
	struct viaduct_bind_mw b = {
		.mw_handle = mw, .mr_stag = mr_stag, .addr = addr,
		.length = len, .access = access, .key = key,
	};
	int ret = vd_ioctl(fd, VIADUCT_IOCTL_BIND_MW, &b);

	if (!ret && stag)
		*stag = b.stag;
	return ret;
}

/* Posts a bind WR on @q of @s: @mw_stag to [@addr, +@len) of @mr_stag. */
static void post_bind_q(struct xf_side *s, struct vd_qp *q, __u64 wr_id,
			__u32 mw_stag, __u32 mr_stag, __u64 addr, __u32 len,
			__u32 access, __u16 nsge)
{
	struct viaduct_sqe *e = vd_sq_slot(q, q->sq_prod);
	struct viaduct_sge *sge = (struct viaduct_sge *)(e + 1);
	__u16 i;

	memset(e, 0, q->c.sq_wqe_size);
	e->wr_id = wr_id;
	e->opcode = VIADUCT_OP_BIND_MW;
	e->flags = VIADUCT_SQE_SIGNALED;
	e->num_sge = nsge;
	e->imm_data = access;
	e->remote_stag = mw_stag;
	for (i = 0; i < nsge; i++) {
		sge[i].addr = addr;
		sge[i].length = len;
		sge[i].stag = mr_stag;
	}
	q->sq_prod++;
	__atomic_store_n(&q->db->sq_producer, q->sq_prod, __ATOMIC_RELEASE);
	vd_doorbell(s->fd, q->c.handle, VIADUCT_DOORBELL_SQ);
}

static void bind_wr(struct __test_metadata *_metadata, struct xf_side *s,
		    __u32 mw_stag, __u32 mr_stag, __u64 addr, __u32 len,
		    __u32 access, __u8 want)
{
	struct viaduct_cqe cqe;

	post_bind_q(s, &s->q, 800, mw_stag, mr_stag, addr, len, access, 1);
	XF_EXPECT_CQE(&s->q.scq, 800, want, &cqe);
	EXPECT_EQ(VIADUCT_WC_BIND_MW, cqe.opcode);
}

static __u64 b_addr(FIXTURE_DATA(mem) *self, size_t off)
{
	return (unsigned long)(self->b.buf + off);
}

/* a reads @len bytes at @to of @stag at b into its buffer at 0. */
static void read_through(struct __test_metadata *_metadata, FIXTURE_DATA(mem) *self,
			 __u32 stag, __u64 to, __u32 len, __u8 want)
{
	struct xf_sge dst = { 0, len };
	struct viaduct_cqe cqe;

	memset(self->a.buf, 0, len);
	xf_post_send(&self->a, 90, VIADUCT_OP_RDMA_READ, VIADUCT_SQE_SIGNALED,
		     &dst, 1, stag, to);
	XF_EXPECT_CQE(&self->a.q.scq, 90, want, &cqe);
}

/*
 * The capability, REG_MR with MW_BIND, and ALLOC_MW and BIND_MW's
 * refusals: each bad argument gets its errno and changes nothing.
 */
TEST_F_TIMEOUT(mem, mw_args, XF_TIMEOUT_S)
{
	struct viaduct_alloc_mw r = { .pd_handle = self->b.pd, .type = 1 };
	__u32 mw_stag = 0, mr_stag, stag;
	int mr, mw, mw2;

	EXPECT_TRUE(self->b.attr.caps & VIADUCT_DEV_CAP_MW);
	mr_stag = bind_region(_metadata, &self->b, VIADUCT_ACCESS_MW_BIND, &mr);
	EXPECT_EQ(-EINVAL, alloc_mw(self->b.fd, self->b.pd, 0, &mw_stag));
	EXPECT_EQ(-EINVAL, alloc_mw(self->b.fd, self->b.pd, 3, &mw_stag));
	EXPECT_EQ(-ENOENT, alloc_mw(self->b.fd, self->b.pd + 100, 1, &mw_stag));
	r.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, vd_ioctl(self->b.fd, VIADUCT_IOCTL_ALLOC_MW, &r));
	r.reserved[0] = 0;
	r.reserved2 = 1;
	EXPECT_EQ(-EINVAL, vd_ioctl(self->b.fd, VIADUCT_IOCTL_ALLOC_MW, &r));
	mw = alloc_mw(self->b.fd, self->b.pd, VIADUCT_MW_TYPE_1, &mw_stag);
	ASSERT_LT(0, mw);
	EXPECT_EQ(0x11U, mw_stag & VIADUCT_STAG_KEY_MASK);
	mw2 = alloc_mw(self->b.fd, self->b.pd, VIADUCT_MW_TYPE_2, &stag);
	ASSERT_LT(0, mw2);
	/* a window is no MR, an MR no window */
	EXPECT_EQ(-ENOENT, vd_destroy(self->b.fd, VIADUCT_IOCTL_DEREG_MR, mw));
	EXPECT_EQ(-ENOENT, vd_destroy(self->b.fd, VIADUCT_IOCTL_DEALLOC_MW, mr));

	/* the call binds type 1 only */
	EXPECT_EQ(-EINVAL, bind_call(self->b.fd, mw2, mr_stag, b_addr(self, 0),
				     8, RR_, 1, NULL));
	EXPECT_EQ(-ENOENT, bind_call(self->b.fd, mw + 100, mr_stag,
				     b_addr(self, 0), 8, RR_, 1, NULL));
	/* rights: remote ones only, at least one; remote write needs LW */
	EXPECT_EQ(-EINVAL, bind_call(self->b.fd, mw, mr_stag, b_addr(self, 0),
				     8, 0, 1, NULL));
	EXPECT_EQ(-EINVAL, bind_call(self->b.fd, mw, mr_stag, b_addr(self, 0),
				     8, VIADUCT_ACCESS_LOCAL_WRITE | RR_, 1, NULL));
	EXPECT_EQ(-EACCES, bind_call(self->b.fd, mw, mr_stag, b_addr(self, 0),
				     8, RW_, 1, NULL));
	/* the region: MW_BIND, its key, its range */
	EXPECT_EQ(-EACCES, bind_call(self->b.fd, mw, self->b.stag,
				     b_addr(self, 0), 8, RR_, 1, NULL));
	EXPECT_EQ(-EACCES, bind_call(self->b.fd, mw, mr_stag ^ 1,
				     b_addr(self, 0), 8, RR_, 1, NULL));
	EXPECT_EQ(-EACCES, bind_call(self->b.fd, mw, mr_stag,
				     b_addr(self, XF_BUF - 4), 8, RR_, 1, NULL));
	EXPECT_EQ(-EACCES, bind_call(self->b.fd, mw, mr_stag,
				     b_addr(self, 0) - 1, 8, RR_, 1, NULL));
	EXPECT_EQ(0, bind_call(self->b.fd, mw, mr_stag, b_addr(self, 0), 8,
			       RR_, 0x33, &stag));
	EXPECT_EQ(xf_with_key(mw_stag, 0x33), stag);
	/* the region is in use by the window; the PD by both */
	EXPECT_EQ(-EBUSY, vd_destroy(self->b.fd, VIADUCT_IOCTL_DEREG_MR, mr));
	EXPECT_EQ(0, vd_destroy(self->b.fd, VIADUCT_IOCTL_DEALLOC_MW, mw));
	EXPECT_EQ(0, vd_destroy(self->b.fd, VIADUCT_IOCTL_DEREG_MR, mr));
	EXPECT_EQ(0, vd_destroy(self->b.fd, VIADUCT_IOCTL_DEALLOC_MW, mw2));
	EXPECT_EQ(-ENOENT, vd_destroy(self->b.fd, VIADUCT_IOCTL_DEALLOC_MW, mw2));
}

/*
 * Type 1 bound by a call: a Writes through it and the bytes land at the
 * window's place in b's buffer; a Reads them back. Bound again through
 * the send queue, zero based and read-only: the old STag names nothing,
 * address 0 is the window's first byte. Unbound: nothing through it.
 */
TEST_F_TIMEOUT(mem, mw_type1_write_read, XF_TIMEOUT_S)
{
	__u32 mw_stag, mr_stag, stag, stag2;
	int mr, mw, i;

	mr_stag = bind_region(_metadata, &self->b, VIADUCT_ACCESS_MW_BIND |
			      VIADUCT_ACCESS_LOCAL_WRITE, &mr);
	mw = alloc_mw(self->b.fd, self->b.pd, VIADUCT_MW_TYPE_1, &mw_stag);
	ASSERT_LT(0, mw);
	memset(self->b.buf, 0xee, 8 * PG);
	ASSERT_EQ(0, bind_call(self->b.fd, mw, mr_stag, b_addr(self, MW_OFF),
			       MW_LEN, RR_ | RW_, 0x44, &stag));

	write_then_mark(_metadata, self, stag, b_addr(self, MW_OFF + 100),
			MW_LEN - 100, 5);
	EXPECT_EQ(0, memcmp(self->b.buf + MW_OFF + 100, self->a.buf, MW_LEN - 100));
	EXPECT_EQ(0xee, self->b.buf[MW_OFF + 99]);
	EXPECT_EQ(0xee, self->b.buf[MW_OFF + MW_LEN]);
	xf_fill(self->b.buf + MW_OFF, MW_LEN, 6);
	read_through(_metadata, self, stag, b_addr(self, MW_OFF), MW_LEN,
		     VIADUCT_WC_SUCCESS);
	EXPECT_EQ(0, memcmp(self->a.buf, self->b.buf + MW_OFF, MW_LEN));

	/* bound again through the send queue: zero based, read only */
	stag2 = xf_with_key(mw_stag, 0x45);
	bind_wr(_metadata, &self->b, stag2, mr_stag, b_addr(self, MW_OFF + 8),
		64, RR_ | VIADUCT_ACCESS_ZERO_BASED, VIADUCT_WC_SUCCESS);
	read_through(_metadata, self, stag2, 0, 64, VIADUCT_WC_SUCCESS);
	for (i = 0; i < 64; i++)
		if (self->a.buf[i] != self->b.buf[MW_OFF + 8 + i])
			break;
	EXPECT_EQ(64, i) TH_LOG("byte %d differs", i);

	/* unbound: the region may go; the old key is refused (0x0100) */
	ASSERT_EQ(0, bind_call(self->b.fd, mw, 0, 0, 0, 0, 0, &stag));
	EXPECT_EQ(mw_stag, stag);
	EXPECT_EQ(0, vd_destroy(self->b.fd, VIADUCT_IOCTL_DEREG_MR, mr));
	read_through(_metadata, self, stag2, 0, 64, VIADUCT_WC_REM_ACCESS_ERR);
}

/*
 * Type 2 bound by a WR to b's QP: Write and Read through it with the
 * bytes checked; DEREG_MR of its region refused while it is bound; a's
 * Send with Invalidate ends it (reported in b's receive completion), and
 * the next Write through it is refused with the DDP Terminate for an
 * invalid STag, placing nothing.
 */
TEST_F_TIMEOUT(mem, mw_type2_send_inv, XF_TIMEOUT_S)
{
	struct xf_sge src = { 0, 64 }, dst = { 8 * PG, 4096 };
	struct viaduct_async_event ev;
	__u32 mw_stag = 0, mr_stag, stag;
	struct viaduct_cqe cqe;
	int mr, mw, i;

	mr_stag = bind_region(_metadata, &self->b, VIADUCT_ACCESS_MW_BIND |
			      VIADUCT_ACCESS_LOCAL_WRITE, &mr);
	mw = alloc_mw(self->b.fd, self->b.pd, VIADUCT_MW_TYPE_2, &mw_stag);
	ASSERT_LT(0, mw);
	stag = xf_with_key(mw_stag, 0x55);
	bind_wr(_metadata, &self->b, stag, mr_stag, b_addr(self, MW_OFF),
		MW_LEN, RR_ | RW_, VIADUCT_WC_SUCCESS);

	write_then_mark(_metadata, self, stag, b_addr(self, MW_OFF), MW_LEN, 8);
	EXPECT_EQ(0, memcmp(self->b.buf + MW_OFF, self->a.buf, MW_LEN));
	read_through(_metadata, self, stag, b_addr(self, MW_OFF + 1), 1000,
		     VIADUCT_WC_SUCCESS);
	EXPECT_EQ(0, memcmp(self->a.buf, self->b.buf + MW_OFF + 1, 1000));
	EXPECT_EQ(-EBUSY, vd_destroy(self->b.fd, VIADUCT_IOCTL_DEREG_MR, mr));

	xf_post_recv(&self->b, 70, &dst, 1);
	xf_post_send(&self->a, 71, VIADUCT_OP_SEND_INV, VIADUCT_SQE_SIGNALED,
		     &src, 1, stag, 0);
	XF_EXPECT_CQE(&self->a.q.scq, 71, VIADUCT_WC_SUCCESS, &cqe);
	XF_EXPECT_CQE(&self->b.q.rcq, 70, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_TRUE(cqe.flags & VIADUCT_WC_F_INVALIDATED);
	EXPECT_EQ(stag, cqe.invalidated_stag);
	/* unbound now: its region may go (the window keeps the pages) */
	EXPECT_EQ(0, vd_destroy(self->b.fd, VIADUCT_IOCTL_DEREG_MR, mr));

	memset(self->b.buf + MW_OFF, 0xcc, MW_LEN);
	xf_post_send(&self->a, 72, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED,
		     &src, 1, stag, b_addr(self, MW_OFF));
	ASSERT_EQ(0, vd_wait_async(self->b.fd, VIADUCT_EVENT_QP_ACCESS_ERR,
				   self->b.q.c.handle, &ev, XF_WAIT_MS));
	EXPECT_EQ(0x1100U, ev.detail);
	for (i = 0; i < (int)MW_LEN; i++)
		if (self->b.buf[MW_OFF + i] != 0xcc)
			break;
	EXPECT_EQ((int)MW_LEN, i) TH_LOG("byte %d was written", i);
}

/* A Local Invalidate of a type-2 window: the next Read is refused. */
TEST_F_TIMEOUT(mem, mw_type2_local_inv, XF_TIMEOUT_S)
{
	__u32 mw_stag = 0, mr_stag, stag;
	int mr, mw;

	mr_stag = bind_region(_metadata, &self->b, VIADUCT_ACCESS_MW_BIND, &mr);
	mw = alloc_mw(self->b.fd, self->b.pd, VIADUCT_MW_TYPE_2, &mw_stag);
	ASSERT_LT(0, mw);
	stag = xf_with_key(mw_stag, 0x56);
	bind_wr(_metadata, &self->b, stag, mr_stag, b_addr(self, MW_OFF), 100,
		RR_, VIADUCT_WC_SUCCESS);
	xf_fill(self->b.buf + MW_OFF, 100, 9);
	read_through(_metadata, self, stag, b_addr(self, MW_OFF), 100,
		     VIADUCT_WC_SUCCESS);
	EXPECT_EQ(0, memcmp(self->a.buf, self->b.buf + MW_OFF, 100));
	local_inv(_metadata, &self->b, stag, VIADUCT_WC_SUCCESS);
	/* INVALID again: it binds again (a VALID one would not) */
	stag = xf_with_key(mw_stag, 0x57);
	bind_wr(_metadata, &self->b, stag, mr_stag, b_addr(self, MW_OFF), 100,
		RR_, VIADUCT_WC_SUCCESS);
	local_inv(_metadata, &self->b, stag, VIADUCT_WC_SUCCESS);
	/* RDMAP remote protection error, invalid STag */
	read_through(_metadata, self, stag, b_addr(self, MW_OFF), 100,
		     VIADUCT_WC_REM_ACCESS_ERR);
}

/* a does @op of @len bytes at @to through @stag; b ends it with @term. */
static void refused_through(struct __test_metadata *_metadata,
			    FIXTURE_DATA(mem) *self, __u8 op, __u32 stag,
			    __u64 to, __u32 len, __u16 term)
{
	struct xf_sge src = { 0, len };
	struct viaduct_async_event ev;
	struct viaduct_query_qp q;
	struct viaduct_cqe cqe;
	int i;

	memset(self->b.buf, 0xcc, 8 * PG);
	xf_fill(self->a.buf, len, 11);
	xf_post_send(&self->a, 95, op, VIADUCT_SQE_SIGNALED, &src, 1, stag, to);
	ASSERT_EQ(0, vd_wait_async(self->b.fd, VIADUCT_EVENT_QP_ACCESS_ERR,
				   self->b.q.c.handle, &ev, XF_WAIT_MS));
	EXPECT_EQ(term, ev.detail);
	ASSERT_EQ(0, vd_query_qp(self->b.fd, self->b.q.c.handle, &q));
	EXPECT_EQ(VIADUCT_QPS_ERROR, q.state);
	/* a Write completes once sent: done, or blamed for the Terminate */
	ASSERT_EQ(1U, vd_cring_wait(&self->a.q.scq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(95U, cqe.wr_id);
	EXPECT_TRUE(cqe.status == VIADUCT_WC_SUCCESS ||
		    cqe.status == VIADUCT_WC_REM_ACCESS_ERR)
		TH_LOG("status %u", cqe.status);
	for (i = 0; i < (int)(8 * PG); i++)
		if (self->b.buf[i] != 0xcc)
			break;
	EXPECT_EQ((int)(8 * PG), i) TH_LOG("byte %d was written", i);
}

/* One byte beyond the window, well inside its region: DDP bounds. */
TEST_F_TIMEOUT(mem, mw_write_beyond_window_refused, XF_TIMEOUT_S)
{
	__u32 mw_stag = 0, mr_stag, stag;
	int mr, mw;

	mr_stag = bind_region(_metadata, &self->b, VIADUCT_ACCESS_MW_BIND |
			      VIADUCT_ACCESS_LOCAL_WRITE, &mr);
	mw = alloc_mw(self->b.fd, self->b.pd, VIADUCT_MW_TYPE_1, &mw_stag);
	ASSERT_LT(0, mw);
	ASSERT_EQ(0, bind_call(self->b.fd, mw, mr_stag, b_addr(self, MW_OFF),
			       100, RW_, 0x61, &stag));
	refused_through(_metadata, self, VIADUCT_OP_RDMA_WRITE, stag,
			b_addr(self, MW_OFF), 101, 0x1101);
}

/*
 * A read-only window onto a region that grants remote write itself: the
 * window's rights count, not the region's (DDP: not associated, 0x1102).
 */
TEST_F_TIMEOUT(mem, mw_write_without_right_refused, XF_TIMEOUT_S)
{
	__u32 mw_stag = 0, mr_stag, stag;
	int mr, mw;

	mr_stag = bind_region(_metadata, &self->b, VIADUCT_ACCESS_MW_BIND |
			      XF_ACCESS, &mr);
	mw = alloc_mw(self->b.fd, self->b.pd, VIADUCT_MW_TYPE_1, &mw_stag);
	ASSERT_LT(0, mw);
	ASSERT_EQ(0, bind_call(self->b.fd, mw, mr_stag, b_addr(self, MW_OFF),
			       MW_LEN, RR_, 0x62, &stag));
	refused_through(_metadata, self, VIADUCT_OP_RDMA_WRITE, stag,
			b_addr(self, MW_OFF), 8, 0x1102);
}

/* A Read Request beyond the window: RDMAP base or bounds (0x0101). */
TEST_F_TIMEOUT(mem, mw_read_beyond_window_refused, XF_TIMEOUT_S)
{
	struct viaduct_async_event ev;
	__u32 mw_stag = 0, mr_stag, stag;
	int mr, mw;

	mr_stag = bind_region(_metadata, &self->b, VIADUCT_ACCESS_MW_BIND, &mr);
	mw = alloc_mw(self->b.fd, self->b.pd, VIADUCT_MW_TYPE_1, &mw_stag);
	ASSERT_LT(0, mw);
	ASSERT_EQ(0, bind_call(self->b.fd, mw, mr_stag, b_addr(self, MW_OFF),
			       100, RR_, 0x63, &stag));
	read_through(_metadata, self, stag, b_addr(self, MW_OFF) - 1, 2,
		     VIADUCT_WC_REM_ACCESS_ERR);
	ASSERT_EQ(0, vd_wait_async(self->b.fd, VIADUCT_EVENT_QP_ACCESS_ERR,
				   self->b.q.c.handle, &ev, XF_WAIT_MS));
	EXPECT_EQ(0x0101U, ev.detail);
}

/*
 * A type-2 window is reached only through the QP it is bound to: a Write
 * through it arriving on a second connection between the same two
 * contexts is refused (DDP: STag not associated, 0x1102).
 */
TEST_F_TIMEOUT(mem, mw_type2_other_qp_refused, XF_TIMEOUT_S)
{
	struct xf_side a2 = self->a, b2 = self->b;
	struct xf_sge src = { 0, 64 };
	struct viaduct_async_event ev;
	__u32 mw_stag = 0, mr_stag, stag;
	int mr, mw, id, i;

	mr_stag = bind_region(_metadata, &self->b, VIADUCT_ACCESS_MW_BIND |
			      VIADUCT_ACCESS_LOCAL_WRITE, &mr);
	mw = alloc_mw(self->b.fd, self->b.pd, VIADUCT_MW_TYPE_2, &mw_stag);
	ASSERT_LT(0, mw);
	stag = xf_with_key(mw_stag, 0x64);
	bind_wr(_metadata, &self->b, stag, mr_stag, b_addr(self, MW_OFF),
		MW_LEN, RW_, VIADUCT_WC_SUCCESS);

	/* a second connection: new QPs and ids on the same contexts */
	ASSERT_EQ(0, xf_qp_up(&a2, &a2.q));
	ASSERT_EQ(0, xf_qp_up(&b2, &b2.q));
	id = xf_create_id(&a2, 2);
	ASSERT_LT(0, id);
	a2.id = id;
	id = xf_create_id(&b2, 2);
	ASSERT_LT(0, id);
	b2.id = id;
	xf_pair_connect(_metadata, &a2, &b2, VIADUCT_CM_F_CRC, NULL, NULL, NULL);

	memset(self->b.buf + MW_OFF, 0xcc, MW_LEN);
	xf_fill(a2.buf, 64, 12);
	xf_post_send(&a2, 96, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED,
		     &src, 1, stag, b_addr(self, MW_OFF));
	ASSERT_EQ(0, vd_wait_async(b2.fd, VIADUCT_EVENT_QP_ACCESS_ERR,
				   b2.q.c.handle, &ev, XF_WAIT_MS));
	EXPECT_EQ(0x1102U, ev.detail);
	for (i = 0; i < (int)MW_LEN; i++)
		if (self->b.buf[MW_OFF + i] != 0xcc)
			break;
	EXPECT_EQ((int)MW_LEN, i) TH_LOG("byte %d was written", i);
	/* through its own QP the window works */
	write_then_mark(_metadata, self, stag, b_addr(self, MW_OFF), 64, 13);
	EXPECT_EQ(0, memcmp(self->b.buf + MW_OFF, self->a.buf, 64));
	vd_qp_unmap(&a2.q);
	vd_qp_unmap(&b2.q);
}

/* One bad bind WR on b's QP: its status, and the QP in Error. */
static void bad_bind(struct __test_metadata *_metadata, FIXTURE_DATA(mem) *self,
		     __u32 type, __u32 region_access, bool use_plain, __u64 off,
		     __u32 len, __u32 access, __u16 nsge, __u8 want)
{
	__u32 mw_stag = 0, mr_stag, stag;
	struct viaduct_query_qp q;
	struct viaduct_cqe cqe;
	int mr, mw, i;

	mr_stag = bind_region(_metadata, &self->b, region_access, &mr);
	if (use_plain)
		mr_stag = self->b.stag;
	mw = alloc_mw(self->b.fd, self->b.pd, type, &mw_stag);
	ASSERT_LT(0, mw);
	stag = xf_with_key(mw_stag, 0x70);
	post_bind_q(&self->b, &self->b.q, 801, stag, mr_stag,
		    b_addr(self, 0) + off, len, access, nsge);
	XF_EXPECT_CQE(&self->b.q.scq, 801, want, &cqe);
	/* the failed WR completes first, then the QP enters Error */
	for (i = 0; i < XF_WAIT_MS / 10; i++) {
		ASSERT_EQ(0, vd_query_qp(self->b.fd, self->b.q.c.handle, &q));
		if (q.state == VIADUCT_QPS_ERROR)
			break;
		vd_sleep_ms(10);
	}
	EXPECT_EQ(VIADUCT_QPS_ERROR, q.state);
	/* nothing was bound: the region goes */
	EXPECT_EQ(0, vd_destroy(self->b.fd, VIADUCT_IOCTL_DEREG_MR, mr));
}

#define MWB	(VIADUCT_ACCESS_MW_BIND | VIADUCT_ACCESS_LOCAL_WRITE)

TEST_F_TIMEOUT(mem, mw_bind_no_mw_bind_right, XF_TIMEOUT_S)
{
	bad_bind(_metadata, self, 2, MWB, true, 0, 64, RR_, 1,
		 VIADUCT_WC_LOC_PROT_ERR);
}

TEST_F_TIMEOUT(mem, mw_bind_beyond_region, XF_TIMEOUT_S)
{
	bad_bind(_metadata, self, 2, MWB, false, XF_BUF - 10, 11, RR_, 1,
		 VIADUCT_WC_LOC_PROT_ERR);
}

TEST_F_TIMEOUT(mem, mw_bind_write_without_local_write, XF_TIMEOUT_S)
{
	bad_bind(_metadata, self, 1, VIADUCT_ACCESS_MW_BIND, false, 0, 64, RW_,
		 1, VIADUCT_WC_LOC_PROT_ERR);
}

TEST_F_TIMEOUT(mem, mw_bind_bad_rights, XF_TIMEOUT_S)
{
	bad_bind(_metadata, self, 2, MWB, false, 0, 64,
		 VIADUCT_ACCESS_LOCAL_WRITE, 1, VIADUCT_WC_LOC_QP_OP_ERR);
}

TEST_F_TIMEOUT(mem, mw_bind_two_sges, XF_TIMEOUT_S)
{
	bad_bind(_metadata, self, 2, MWB, false, 0, 64, RR_, 2,
		 VIADUCT_WC_LOC_QP_OP_ERR);
}

TEST_F_TIMEOUT(mem, mw_bind_type2_length_0, XF_TIMEOUT_S)
{
	bad_bind(_metadata, self, 2, MWB, false, 0, 0, RR_, 1,
		 VIADUCT_WC_LOC_LEN_ERR);
}

/*
 * The per-context limit of windows (module parameter ctx_max_mw): the
 * window beyond it fails with ENOSPC and takes nothing; one deallocated
 * makes room for one.
 */
#define MW_LIMIT_PARAM	"ctx_max_mw"

TEST_F_TIMEOUT(mem, mw_ctx_limit, XF_TIMEOUT_S)
{
	long old = vd_param_swap(MW_LIMIT_PARAM, -1);
	__u32 stag;
	int mw[3], i;

	ASSERT_LT(0, old);
	EXPECT_EQ(self->b.attr.max_mr, (__u32)old);
	ASSERT_EQ(old, vd_param_swap(MW_LIMIT_PARAM, 2));
	ASSERT_EQ(2, vd_param_swap(MW_LIMIT_PARAM, -1));
	for (i = 0; i < 2; i++) {
		mw[i] = alloc_mw(self->b.fd, self->b.pd, VIADUCT_MW_TYPE_1 + i, &stag);
		EXPECT_LT(0, mw[i]);
	}
	EXPECT_EQ(-ENOSPC, alloc_mw(self->b.fd, self->b.pd, VIADUCT_MW_TYPE_1, &stag));
	EXPECT_EQ(-ENOSPC, alloc_mw(self->b.fd, self->b.pd, VIADUCT_MW_TYPE_2, &stag));
	/* other contexts are not affected; MRs are not windows */
	mw[2] = alloc_mw(self->a.fd, self->a.pd, VIADUCT_MW_TYPE_1, &stag);
	EXPECT_LT(0, mw[2]);
	EXPECT_EQ(0, vd_destroy(self->b.fd, VIADUCT_IOCTL_DEALLOC_MW, mw[0]));
	mw[0] = alloc_mw(self->b.fd, self->b.pd, VIADUCT_MW_TYPE_2, &stag);
	EXPECT_LT(0, mw[0]);
	EXPECT_EQ(-ENOSPC, alloc_mw(self->b.fd, self->b.pd, VIADUCT_MW_TYPE_1, &stag));
	EXPECT_EQ(2, vd_param_swap(MW_LIMIT_PARAM, old));
	EXPECT_EQ(old, vd_param_swap(MW_LIMIT_PARAM, -1));
}

/* A bound type-2 window is not bound again: LOC_PROT_ERR. */
TEST_F_TIMEOUT(mem, mw_bind_type2_twice, XF_TIMEOUT_S)
{
	__u32 mw_stag = 0, mr_stag;
	int mr, mw;

	mr_stag = bind_region(_metadata, &self->b, MWB, &mr);
	mw = alloc_mw(self->b.fd, self->b.pd, VIADUCT_MW_TYPE_2, &mw_stag);
	ASSERT_LT(0, mw);
	bind_wr(_metadata, &self->b, xf_with_key(mw_stag, 1), mr_stag,
		b_addr(self, 0), 64, RR_, VIADUCT_WC_SUCCESS);
	bind_wr(_metadata, &self->b, xf_with_key(mw_stag, 2), mr_stag,
		b_addr(self, 0), 64, RR_, VIADUCT_WC_LOC_PROT_ERR);
}

TEST_HARNESS_MAIN
