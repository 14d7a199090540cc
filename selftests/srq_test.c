// SPDX-License-Identifier: GPL-2.0
/*
 * Shared receive queues between two viaduct devices in two network
 * namespaces (as xfer_test): side b receives on QPs created on one SRQ,
 * side a sends on QPs of its own.
 *
 * Bad arguments of the SRQ commands and of CREATE_QP on an SRQ, each
 * refused with its errno and leaving the SRQ as it was; eight QPs
 * receiving at once through one SRQ with every byte checked, and the WRs
 * taken FIFO by arrival; the limit event raised once per arming; a QP
 * entering Error leaving the SRQ's WRs on the SRQ (LAST_WQE raised, no
 * flushed completion) for another QP to use; DESTROY_SRQ refused while a
 * QP uses it; a malformed WQE failing the QP that takes it, and a garbage
 * producer index breaking the SRQ; no leak once the contexts are closed.
 */
#include "xfer_util.h"

#define SQ_QPS		8	/* eight_qps_at_once; the others use two */
#define SQ_FIX_QPS	2
#define SQ_DEPTH	128
#define SQ_SLICE	4096	/* receive buffer of one SRQ WR, or one message */
#define SQ_SRC		(1UL << 20)	/* a's send buffers start here */

struct sq_srq {
	struct viaduct_create_srq c;
	struct viaduct_srq_ring *ring;	/* the mapping */
	__u32 prod;			/* our copy of the producer index */
};

FIXTURE(srq)
{
	struct xf_side a;	/* sends */
	struct xf_side b;	/* receives through the SRQ */
	struct sq_srq srq;
	struct viaduct_create_cq rcq_args;
	struct vd_cring rcq;	/* b's receive CQ, shared by its SRQ QPs */
	struct vd_qp aq[SQ_QPS];
	struct vd_qp bq[SQ_QPS];
	int nqp;		/* pairs made so far */
	__u32 listen_id;
	int up;
	struct vd_snap before;
};

static int sq_create_srq(int fd, __u32 pd, __u32 depth, __u32 sge, struct sq_srq *s)
{
	int ret;

	memset(s, 0, sizeof(*s));
	s->c.user_data = 0x5151;
	s->c.pd_handle = pd;
	s->c.depth = depth;
	s->c.max_sge = sge;
	ret = vd_ioctl(fd, VIADUCT_IOCTL_CREATE_SRQ, &s->c);
	if (ret)
		return ret;
	s->ring = vd_mmap_key(fd, s->c.mmap_key, s->c.mmap_size);
	if (s->ring == MAP_FAILED) {
		s->ring = NULL;
		return -errno;
	}
	return 0;
}

static void sq_srq_unmap(struct sq_srq *s)
{
	if (s->ring)
		munmap(s->ring, s->c.mmap_size);
	s->ring = NULL;
}

/* Posts one WR on the SRQ: @len bytes of @side's buffer at @off. */
static void sq_post(struct xf_side *side, struct sq_srq *s, __u64 wr_id, size_t off, __u32 len)
{
	struct viaduct_rqe *r = (struct viaduct_rqe *)((char *)s->ring + VIADUCT_RING_HDR_SIZE +
			(size_t)(s->prod & (s->c.depth - 1)) * s->c.wqe_size);
	struct viaduct_sge *sge = (struct viaduct_sge *)(r + 1);

	memset(r, 0, s->c.wqe_size);
	r->wr_id = wr_id;
	r->num_sge = 1;
	sge->addr = (unsigned long)(side->buf + off);
	sge->length = len;
	sge->stag = side->stag;
	s->prod++;
	/* no system call: the kernel reads the index when a message arrives */
	__atomic_store_n(&s->ring->producer, s->prod, __ATOMIC_RELEASE);
}

static int sq_query(int fd, __u32 h, struct viaduct_query_srq *q)
{
	memset(q, 0, sizeof(*q));
	q->handle = h;
	return vd_ioctl(fd, VIADUCT_IOCTL_QUERY_SRQ, q);
}

static int sq_modify_limit(int fd, __u32 h, __u32 limit)
{
	struct viaduct_modify_srq m = {
		.handle = h, .mask = VIADUCT_SRQ_ATTR_LIMIT, .limit = limit,
	};

	return vd_ioctl(fd, VIADUCT_IOCTL_MODIFY_SRQ, &m);
}

/* A QP of b on the SRQ, completing receives into the shared CQ. */
static int sq_srq_qp(struct xf_side *s, __u32 srq, __u32 rcq, struct vd_qp *q)
{
	memset(q, 0, sizeof(*q));
	vd_qp_args(&q->c, s->pd, 0, rcq);
	q->c.sq_depth = 16;
	q->c.rq_depth = 0;
	q->c.max_recv_sge = 0;
	q->c.srq_handle = srq;
	q->c.ord = XF_ORD;
	q->c.ird = XF_ORD;
	return vd_qp_create(s->fd, q);
}

/* Makes QP pairs (a's own, b's on the SRQ) until there are @n. */
static void sq_make_qps(struct __test_metadata *_metadata, FIXTURE_DATA(srq) *self, int n)
{
	for (; self->nqp < n; self->nqp++) {
		int i = self->nqp;

		ASSERT_EQ(0, sq_srq_qp(&self->b, self->srq.c.handle, self->rcq_args.handle,
				       &self->bq[i]));
		EXPECT_EQ(0U, self->bq[i].c.rq_depth);
		EXPECT_EQ(0U, self->bq[i].c.rq_size);
		EXPECT_EQ(0ULL, self->bq[i].c.rq_key);
		ASSERT_EQ(0, xf_qp_up(&self->a, &self->aq[i]));
	}
}

FIXTURE_SETUP(srq)
{
	struct viaduct_cm_listen l = { 0 };

	vd_snap_take(&self->before);
	self->nqp = 0;
	memset(self->aq, 0, sizeof(self->aq));
	memset(self->bq, 0, sizeof(self->bq));
	xf_pair_share(_metadata, &self->a, &self->b, &self->up);
	ASSERT_NE(0, self->b.attr.caps & VIADUCT_DEV_CAP_SRQ);

	ASSERT_EQ(0, sq_create_srq(self->b.fd, self->b.pd, SQ_DEPTH, 1, &self->srq));
	EXPECT_EQ(SQ_DEPTH, self->srq.c.depth);
	EXPECT_LE(1U, self->srq.c.max_sge);
	EXPECT_LE(VIADUCT_RING_HDR_SIZE + (__u64)SQ_DEPTH * self->srq.c.wqe_size,
		  self->srq.c.mmap_size);
	ASSERT_EQ(0, vd_create_cq(self->b.fd, 4 * SQ_DEPTH, -1, 0, &self->rcq_args));
	ASSERT_EQ(0, vd_cring_map(&self->rcq, self->b.fd, self->rcq_args.mmap_key,
				  self->rcq_args.mmap_size, self->rcq_args.entries));
	sq_make_qps(_metadata, self, SQ_FIX_QPS);
	l.handle = self->b.id;
	xf_addr(&l.addr, 2, 0);
	ASSERT_EQ(0, vd_ioctl(self->b.fd, VIADUCT_IOCTL_CM_LISTEN, &l));
	self->listen_id = ntohs(l.addr.port);
}

FIXTURE_TEARDOWN(srq)
{
	int i;

	for (i = 0; i < SQ_QPS; i++) {
		vd_qp_unmap(&self->aq[i]);
		vd_qp_unmap(&self->bq[i]);
	}
	vd_cring_unmap(&self->rcq);
	sq_srq_unmap(&self->srq);
	xf_pair_down(&self->a, &self->b, self->up);
	/* every object of both contexts is gone with their files */
	vd_snap_expect_back(&self->before, 10000, "srq teardown");
}

/* Connects a's QP @i to b's SRQ QP @i. */
static void sq_connect(struct __test_metadata *_metadata, FIXTURE_DATA(srq) *self, int i)
{
	struct viaduct_cm_connect c = { 0 };
	struct viaduct_cm_accept acc = { 0 };
	struct viaduct_cm_event ev;
	int ret;

	ret = xf_create_id(&self->a, i);
	ASSERT_LT(0, ret);
	c.handle = ret;
	xf_addr(&c.dst, 2, self->listen_id);
	c.param.qp_handle = self->aq[i].c.handle;
	c.param.flags = VIADUCT_CM_F_CRC;
	ASSERT_EQ(0, vd_ioctl(self->a.fd, VIADUCT_IOCTL_CM_CONNECT, &c));
	ASSERT_EQ(0, xf_cm_event(&self->b, &ev, XF_WAIT_MS));
	ASSERT_EQ(VIADUCT_CM_EVENT_CONNECT_REQUEST, ev.type);
	acc.handle = ev.handle;
	acc.param.qp_handle = self->bq[i].c.handle;
	acc.param.flags = VIADUCT_CM_F_CRC;
	ASSERT_EQ(0, vd_ioctl(self->b.fd, VIADUCT_IOCTL_CM_ACCEPT, &acc));
	ASSERT_EQ(0, xf_cm_event(&self->a, &ev, XF_WAIT_MS));
	ASSERT_EQ(VIADUCT_CM_EVENT_ESTABLISHED, ev.type) TH_LOG("status %d", ev.status);
	ASSERT_EQ(0, xf_cm_event(&self->b, &ev, XF_WAIT_MS));
	ASSERT_EQ(VIADUCT_CM_EVENT_ESTABLISHED, ev.type) TH_LOG("status %d", ev.status);
	ASSERT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->b.fd, self->bq[i].c.handle));
}

/* The payload of message @seq of QP @qp: its length, and its bytes at @p. */
static __u32 sq_msg(unsigned char *p, int qp, int seq)
{
	__u32 len = 1 + (__u32)(qp * 997 + seq * 131) % (SQ_SLICE - 1);

	if (p)
		xf_fill(p, len, qp * 64 + seq + 1);
	return len;
}

/*
 * a's QP @qp sends message @seq (signaled, wr_id seq) from a buffer of its
 * own, which no later message of a test rewrites (seq < 32).
 */
static void sq_send(FIXTURE_DATA(srq) *self, int qp, int seq)
{
	size_t off = SQ_SRC + (size_t)(qp * 32 + seq % 32) * SQ_SLICE;
	struct xf_sge src = { off, sq_msg(self->a.buf + off, qp, seq) };

	xf_post_send_q(&self->a, &self->aq[qp], seq, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED,
		       &src, 1, 0, 0);
}

/* Index of b's QP with handle @h, or -1. */
static int sq_bqp(FIXTURE_DATA(srq) *self, __u32 h)
{
	int i;

	for (i = 0; i < SQ_QPS; i++)
		if (self->bq[i].c.handle == h)
			return i;
	return -1;
}

/* Reads async events of b for up to @ms, counting those of @type and @handle. */
static int sq_count_events(int fd, __u32 type, __u32 handle, int ms)
{
	struct viaduct_async_event ev;
	int n = 0;

	while (!vd_read_async(fd, &ev, ms))
		if (ev.type == type && ev.handle == handle)
			n++;
	return n;
}

/* --- Tests ----------------------------------------------------------- */

TEST_F_TIMEOUT(srq, bad_arguments, XF_TIMEOUT_S)
{
	struct viaduct_create_srq c;
	struct viaduct_modify_srq m;
	struct viaduct_query_srq q;
	struct viaduct_handle h;
	struct sq_srq other;
	struct vd_qp qp;
	__u32 srq = self->srq.c.handle;
	int pd2, fd = self->b.fd;

#define CREATE_BAD(field, value, err) do {					\
	memset(&c, 0, sizeof(c));						\
	c.pd_handle = self->b.pd;						\
	c.depth = 4;								\
	c.max_sge = 1;								\
	c.field = (value);							\
	EXPECT_EQ(err, vd_ioctl(fd, VIADUCT_IOCTL_CREATE_SRQ, &c))		\
		TH_LOG("CREATE_SRQ with " #field " = %llu",			\
		       (unsigned long long)(value));				\
} while (0)
	CREATE_BAD(flags, 1, -EINVAL);
	CREATE_BAD(depth, 0, -EINVAL);
	CREATE_BAD(depth, self->b.attr.max_qp_wr + 1, -EINVAL);
	CREATE_BAD(max_sge, self->b.attr.max_sge + 1, -EINVAL);
	CREATE_BAD(max_msg_size, (__u32)(self->b.attr.max_msg_size + 1), -EINVAL);
	CREATE_BAD(pd_handle, 0, -ENOENT);
	CREATE_BAD(pd_handle, self->rcq_args.handle, -ENOENT);	/* a CQ */
#undef CREATE_BAD

	/* MODIFY_SRQ */
	m = (struct viaduct_modify_srq){ .handle = srq };
	EXPECT_EQ(-EINVAL, vd_ioctl(fd, VIADUCT_IOCTL_MODIFY_SRQ, &m)) TH_LOG("empty mask");
	m.mask = 2;
	EXPECT_EQ(-EINVAL, vd_ioctl(fd, VIADUCT_IOCTL_MODIFY_SRQ, &m)) TH_LOG("unknown mask");
	m.mask = VIADUCT_SRQ_ATTR_LIMIT;
	m.limit = SQ_DEPTH + 1;
	EXPECT_EQ(-EINVAL, vd_ioctl(fd, VIADUCT_IOCTL_MODIFY_SRQ, &m)) TH_LOG("limit > depth");
	m.limit = 1;
	m.reserved = 1;
	EXPECT_EQ(-EINVAL, vd_ioctl(fd, VIADUCT_IOCTL_MODIFY_SRQ, &m)) TH_LOG("reserved");
	m.reserved = 0;
	m.handle = self->bq[0].c.handle;
	EXPECT_EQ(-ENOENT, vd_ioctl(fd, VIADUCT_IOCTL_MODIFY_SRQ, &m)) TH_LOG("a QP handle");

	/* QUERY_SRQ */
	memset(&q, 0, sizeof(q));
	q.handle = srq;
	q.reserved = 1;
	EXPECT_EQ(-EINVAL, vd_ioctl(fd, VIADUCT_IOCTL_QUERY_SRQ, &q));
	EXPECT_EQ(-ENOENT, sq_query(fd, 0x7ffff00, &q));
	EXPECT_EQ(-ENOENT, sq_query(fd, self->b.pd, &q));

	/* DESTROY_SRQ */
	h = (struct viaduct_handle){ .handle = srq, .reserved = 1 };
	EXPECT_EQ(-EINVAL, vd_ioctl(fd, VIADUCT_IOCTL_DESTROY_SRQ, &h));
	EXPECT_EQ(-ENOENT, vd_destroy(fd, VIADUCT_IOCTL_DESTROY_SRQ, self->bq[0].c.handle));
	EXPECT_EQ(-ENOENT, vd_destroy(fd, VIADUCT_IOCTL_DESTROY_SRQ, 0x7ffff00));

	/* CREATE_QP on the SRQ */
	EXPECT_EQ(-EINVAL, sq_srq_qp(&self->b, srq, 0, &qp)) TH_LOG("no receive CQ");
	memset(&qp, 0, sizeof(qp));
	vd_qp_args(&qp.c, self->b.pd, 0, self->rcq_args.handle);
	qp.c.srq_handle = srq;
	qp.c.max_recv_sge = 0;
	EXPECT_EQ(-EINVAL, vd_qp_create(fd, &qp)) TH_LOG("with an RQ depth");
	qp.c.rq_depth = 0;
	qp.c.max_recv_sge = 1;
	EXPECT_EQ(-EINVAL, vd_qp_create(fd, &qp)) TH_LOG("with receive SGEs");
	EXPECT_EQ(-ENOENT, sq_srq_qp(&self->b, self->rcq_args.handle, self->rcq_args.handle, &qp))
		TH_LOG("a CQ handle as the SRQ");
	/* an SRQ of another PD */
	pd2 = vd_create_pd(fd);
	ASSERT_LT(0, pd2);
	ASSERT_EQ(0, sq_create_srq(fd, pd2, 4, 1, &other));
	EXPECT_EQ(-EINVAL, sq_srq_qp(&self->b, other.c.handle, self->rcq_args.handle, &qp))
		TH_LOG("an SRQ of another PD");
	EXPECT_EQ(-EBUSY, vd_destroy_pd(fd, pd2)) TH_LOG("a PD with an SRQ");
	sq_srq_unmap(&other);
	EXPECT_EQ(0, vd_destroy(fd, VIADUCT_IOCTL_DESTROY_SRQ, other.c.handle));
	EXPECT_EQ(0, vd_destroy_pd(fd, pd2));

	/* nothing changed the SRQ */
	ASSERT_EQ(0, sq_query(fd, srq, &q));
	EXPECT_EQ(SQ_DEPTH, q.depth);
	EXPECT_EQ(0U, q.limit);
	EXPECT_EQ(0U, q.outstanding);
	EXPECT_EQ(self->nqp, q.num_qps);
	EXPECT_EQ(0U, q.broken);
}

TEST_F_TIMEOUT(srq, eight_qps_at_once, XF_TIMEOUT_S)
{
	const int total = vd_scaled(SQ_DEPTH, 4 * SQ_QPS, "messages through the SRQ");
	const int per_qp = total / SQ_QPS;
	int seq_seen[SQ_QPS] = { 0 };
	unsigned char used[SQ_DEPTH] = { 0 };
	unsigned char want[SQ_SLICE];
	struct viaduct_query_srq q;
	struct viaduct_cqe cqe;
	int i, j, n;

	sq_make_qps(_metadata, self, SQ_QPS);
	for (i = 0; i < SQ_QPS; i++)
		sq_connect(_metadata, self, i);

	/* FIFO by arrival: one message at a time takes the oldest WR */
	for (i = 0; i < 4; i++)
		sq_post(&self->b, &self->srq, 1000 + i, (size_t)i * SQ_SLICE, SQ_SLICE);
	for (i = 0; i < 4; i++) {
		int qp = 7 - 2 * i;

		sq_send(self, qp, 0);
		ASSERT_EQ(1U, vd_cring_wait(&self->rcq, &cqe, 1, XF_WAIT_MS));
		EXPECT_EQ(1000U + i, cqe.wr_id);
		EXPECT_EQ(VIADUCT_WC_SUCCESS, cqe.status);
		EXPECT_EQ(self->bq[qp].c.handle, cqe.qp_handle);
		ASSERT_EQ(1U, vd_cring_wait(&self->aq[qp].scq, &cqe, 1, XF_WAIT_MS));
		EXPECT_EQ(VIADUCT_WC_SUCCESS, cqe.status);
	}

	/* then every QP at once: per_qp messages each, total WRs */
	memset(self->b.buf, 0xee, (size_t)SQ_DEPTH * SQ_SLICE);
	for (i = 0; i < total; i++)
		sq_post(&self->b, &self->srq, i, (size_t)i * SQ_SLICE, SQ_SLICE);
	ASSERT_EQ(0, sq_query(self->b.fd, self->srq.c.handle, &q));
	EXPECT_EQ(total, q.outstanding);
	for (j = 0; j < per_qp; j++)
		for (i = 0; i < SQ_QPS; i++)
			sq_send(self, i, j + 1);

	for (n = 0; n < total; n++) {
		__u32 len;
		int qp;

		ASSERT_EQ(1U, vd_cring_wait(&self->rcq, &cqe, 1, XF_WAIT_MS))
			TH_LOG("%d of %d receives completed", n, total);
		ASSERT_EQ(VIADUCT_WC_SUCCESS, cqe.status);
		ASSERT_EQ(VIADUCT_WC_RECV, cqe.opcode);
		ASSERT_LT(cqe.wr_id, (__u64)total);
		ASSERT_EQ(0, used[cqe.wr_id]) TH_LOG("wr %llu completed twice",
						    (unsigned long long)cqe.wr_id);
		used[cqe.wr_id] = 1;
		qp = sq_bqp(self, cqe.qp_handle);
		ASSERT_LE(0, qp) TH_LOG("qp_handle %u", cqe.qp_handle);
		/* a QP's messages arrive in order, whichever WRs they take */
		len = sq_msg(want, qp, ++seq_seen[qp]);
		ASSERT_EQ(len, cqe.byte_len);
		ASSERT_EQ(0, memcmp(want, self->b.buf + cqe.wr_id * SQ_SLICE, len))
			TH_LOG("qp %d message %d in wr %llu", qp, seq_seen[qp],
			       (unsigned long long)cqe.wr_id);
		EXPECT_EQ(0xee, self->b.buf[cqe.wr_id * SQ_SLICE + len]);
	}
	for (i = 0; i < SQ_QPS; i++) {
		EXPECT_EQ(per_qp, seq_seen[i]);
		for (j = 0; j < per_qp; j++) {
			ASSERT_EQ(1U, vd_cring_wait(&self->aq[i].scq, &cqe, 1, XF_WAIT_MS));
			EXPECT_EQ(VIADUCT_WC_SUCCESS, cqe.status);
		}
	}
	ASSERT_EQ(0, sq_query(self->b.fd, self->srq.c.handle, &q));
	EXPECT_EQ(0U, q.outstanding);
	EXPECT_EQ(0, vd_cring_poll(&self->rcq, &cqe));
}

TEST_F_TIMEOUT(srq, limit_event_once, XF_TIMEOUT_S)
{
	struct viaduct_query_srq q;
	struct viaduct_cqe cqe;
	__u32 srq = self->srq.c.handle;
	int i;

	sq_connect(_metadata, self, 0);
	for (i = 0; i < 8; i++)
		sq_post(&self->b, &self->srq, i, (size_t)i * SQ_SLICE, SQ_SLICE);
	ASSERT_EQ(0, sq_modify_limit(self->b.fd, srq, 4));
	ASSERT_EQ(0, sq_query(self->b.fd, srq, &q));
	EXPECT_EQ(4U, q.limit);

	/* 8 -> 0 WRs: crossing below 4 raises the event, once */
	for (i = 0; i < 8; i++) {
		sq_send(self, 0, i + 1);
		ASSERT_EQ(1U, vd_cring_wait(&self->rcq, &cqe, 1, XF_WAIT_MS));
		EXPECT_EQ((__u64)i, cqe.wr_id);
		EXPECT_EQ(VIADUCT_WC_SUCCESS, cqe.status);
		ASSERT_EQ(1U, vd_cring_wait(&self->aq[0].scq, &cqe, 1, XF_WAIT_MS));
	}
	/* events are queued before the completion of the take that raised them */
	EXPECT_EQ(1, sq_count_events(self->b.fd, VIADUCT_EVENT_SRQ_LIMIT, srq, 0));
	ASSERT_EQ(0, sq_query(self->b.fd, srq, &q));
	EXPECT_EQ(0U, q.limit) TH_LOG("the limit is disarmed once raised");

	/* armed again, it fires again; disarmed, it does not */
	ASSERT_EQ(0, sq_modify_limit(self->b.fd, srq, 2));
	sq_post(&self->b, &self->srq, 100, 0, SQ_SLICE);
	sq_send(self, 0, 9);
	ASSERT_EQ(1U, vd_cring_wait(&self->rcq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(100U, cqe.wr_id);
	EXPECT_EQ(1, sq_count_events(self->b.fd, VIADUCT_EVENT_SRQ_LIMIT, srq, 0));
	ASSERT_EQ(0, sq_modify_limit(self->b.fd, srq, 2));
	ASSERT_EQ(0, sq_modify_limit(self->b.fd, srq, 0));
	sq_post(&self->b, &self->srq, 101, 0, SQ_SLICE);
	sq_send(self, 0, 10);
	ASSERT_EQ(1U, vd_cring_wait(&self->rcq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(101U, cqe.wr_id);
	EXPECT_EQ(0, sq_count_events(self->b.fd, VIADUCT_EVENT_SRQ_LIMIT, srq, 0));
}

TEST_F_TIMEOUT(srq, qp_error_leaves_wrs, XF_TIMEOUT_S)
{
	struct viaduct_async_event ev;
	struct viaduct_query_srq q;
	struct viaduct_cqe cqe;
	unsigned char want[SQ_SLICE];
	__u32 srq = self->srq.c.handle, len;
	int i;

	sq_connect(_metadata, self, 0);
	sq_connect(_metadata, self, 1);
	for (i = 0; i < 4; i++)
		sq_post(&self->b, &self->srq, i, (size_t)i * SQ_SLICE, SQ_SLICE);

	/* QP 0 has taken one WR and completed it; then it errs */
	sq_send(self, 0, 1);
	ASSERT_EQ(1U, vd_cring_wait(&self->rcq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(0U, cqe.wr_id);
	ASSERT_EQ(0, vd_modify_state(self->b.fd, self->bq[0].c.handle, VIADUCT_QPS_ERROR));
	ASSERT_EQ(0, vd_wait_async(self->b.fd, VIADUCT_EVENT_QP_LAST_WQE, self->bq[0].c.handle,
				   &ev, XF_WAIT_MS));
	/* nothing flushed: the SRQ's WRs are not the QP's */
	EXPECT_EQ(0, vd_cring_poll(&self->rcq, &cqe)) TH_LOG("wr %llu status %u",
		(unsigned long long)cqe.wr_id, cqe.status);
	ASSERT_EQ(0, sq_query(self->b.fd, srq, &q));
	EXPECT_EQ(3U, q.outstanding);
	EXPECT_EQ(self->nqp, q.num_qps);

	/* QP 1 receives into them, the oldest first */
	for (i = 1; i < 4; i++) {
		sq_send(self, 1, i);
		ASSERT_EQ(1U, vd_cring_wait(&self->rcq, &cqe, 1, XF_WAIT_MS));
		EXPECT_EQ((__u64)i, cqe.wr_id);
		EXPECT_EQ(VIADUCT_WC_SUCCESS, cqe.status);
		EXPECT_EQ(self->bq[1].c.handle, cqe.qp_handle);
		len = sq_msg(want, 1, i);
		EXPECT_EQ(len, cqe.byte_len);
		EXPECT_EQ(0, memcmp(want, self->b.buf + (size_t)i * SQ_SLICE, len));
	}
	ASSERT_EQ(0, sq_query(self->b.fd, srq, &q));
	EXPECT_EQ(0U, q.outstanding);
	/* Error -> Idle: the QP may receive from the SRQ again later */
	EXPECT_EQ(0, vd_modify_state(self->b.fd, self->bq[0].c.handle, VIADUCT_QPS_IDLE));
}

TEST_F_TIMEOUT(srq, destroy_while_used, XF_TIMEOUT_S)
{
	struct viaduct_query_srq q;
	__u32 srq = self->srq.c.handle;
	int i, fd = self->b.fd;

	EXPECT_EQ(-EBUSY, vd_destroy(fd, VIADUCT_IOCTL_DESTROY_SRQ, srq));
	ASSERT_EQ(0, sq_query(fd, srq, &q));
	EXPECT_EQ(self->nqp, q.num_qps);
	for (i = 0; i < self->nqp - 1; i++) {
		vd_qp_unmap(&self->bq[i]);
		ASSERT_EQ(0, vd_destroy_qp(fd, self->bq[i].c.handle));
	}
	EXPECT_EQ(-EBUSY, vd_destroy(fd, VIADUCT_IOCTL_DESTROY_SRQ, srq)) TH_LOG("one QP left");
	vd_qp_unmap(&self->bq[i]);
	ASSERT_EQ(0, vd_destroy_qp(fd, self->bq[i].c.handle));
	EXPECT_EQ(-EBUSY, vd_destroy_pd(fd, self->b.pd)) TH_LOG("the SRQ uses the PD");
	EXPECT_EQ(0, vd_destroy(fd, VIADUCT_IOCTL_DESTROY_SRQ, srq));
	EXPECT_EQ(-ENOENT, vd_destroy(fd, VIADUCT_IOCTL_DESTROY_SRQ, srq));
	EXPECT_EQ(-ENOENT, sq_query(fd, srq, &q));
	/* the mapping outlives the SRQ, and writing it harms nothing */
	__atomic_store_n(&self->srq.ring->producer, 12345, __ATOMIC_RELEASE);
	sq_srq_unmap(&self->srq);
}

TEST_F_TIMEOUT(srq, garbage_producer_breaks_srq, XF_TIMEOUT_S)
{
	struct viaduct_async_event ev;
	struct viaduct_query_srq q;
	struct viaduct_cqe cqe;
	__u32 srq = self->srq.c.handle;

	sq_connect(_metadata, self, 0);
	/* more than a ring ahead of what the kernel took */
	__atomic_store_n(&self->srq.ring->producer, SQ_DEPTH + 1, __ATOMIC_RELEASE);
	sq_send(self, 0, 1);
	ASSERT_EQ(0, vd_wait_async(self->b.fd, VIADUCT_EVENT_SRQ_ERR, srq, &ev, XF_WAIT_MS));
	EXPECT_EQ(0x5151ULL, ev.user_data);
	ASSERT_EQ(0, sq_query(self->b.fd, srq, &q));
	EXPECT_EQ(1U, q.broken);
	/* the message found no receive: the receiving QP fails, nothing placed */
	ASSERT_EQ(0, vd_wait_async(self->b.fd, VIADUCT_EVENT_QP_LAST_WQE, self->bq[0].c.handle,
				   &ev, XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(self->b.fd, self->bq[0].c.handle));
	EXPECT_EQ(0, vd_cring_poll(&self->rcq, &cqe));
}

/*
 * A malformed WQE in the SRQ (more SGEs than max_sge) is checked on the
 * kernel's copy when a QP takes it: it completes with LOC_LEN_ERR on that
 * QP, which enters Error; the WRs behind it stay on the SRQ.
 */
TEST_F_TIMEOUT(srq, malformed_wqe_fails_its_taker, XF_TIMEOUT_S)
{
	struct viaduct_async_event ev;
	struct viaduct_query_srq q;
	struct viaduct_rqe *r;
	struct viaduct_cqe cqe;
	__u32 srq = self->srq.c.handle;

	sq_connect(_metadata, self, 0);
	sq_post(&self->b, &self->srq, 7, 0, SQ_SLICE);
	r = (struct viaduct_rqe *)((char *)self->srq.ring + VIADUCT_RING_HDR_SIZE);
	r->num_sge = self->srq.c.max_sge + 1;
	sq_post(&self->b, &self->srq, 8, SQ_SLICE, SQ_SLICE);

	sq_send(self, 0, 1);
	ASSERT_EQ(1U, vd_cring_wait(&self->rcq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(7U, cqe.wr_id);
	EXPECT_EQ(VIADUCT_WC_LOC_LEN_ERR, cqe.status);
	EXPECT_EQ(self->bq[0].c.handle, cqe.qp_handle);
	ASSERT_EQ(0, vd_wait_async(self->b.fd, VIADUCT_EVENT_QP_LAST_WQE, self->bq[0].c.handle,
				   &ev, XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(self->b.fd, self->bq[0].c.handle));
	ASSERT_EQ(0, sq_query(self->b.fd, srq, &q));
	EXPECT_EQ(1U, q.outstanding);
	EXPECT_EQ(0U, q.broken);
}

TEST_HARNESS_MAIN
