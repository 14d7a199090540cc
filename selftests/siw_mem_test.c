// SPDX-License-Identifier: GPL-2.0
/*
 * The memory operations against Linux's soft-iWARP (siw), both ways:
 *
 *   netns sa<pid>: vd0 on eth0 192.0.2.1  <-- veth -->  192.0.2.2 eth0, siw<pid> :sb<pid>
 *
 * viaduct's side is this process, on the raw ABI as in mem_test. siw's
 * side is a child process in the other namespace, an rdma_cm server on
 * rdma-core's own libibverbs and libsiw, which does what the parent tells
 * it over a socketpair (Write, Read, Send with Invalidate, receive) and
 * answers with what it saw: the completion's status, length, flags and
 * whether the bytes are the ones expected.
 *
 * What siw offers its user-space consumers decides what can be tested:
 * libsiw takes IBV_WR_SEND, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ and
 * IBV_WR_SEND_WITH_INV, and refuses IBV_WR_LOCAL_INV, IBV_WR_BIND_MW and
 * the rest; libibverbs has no fast registration at all. A fast-registered
 * siw STag (and siw's Local Invalidate) exists only for kernel consumers,
 * so here siw's STags are plain MRs, and the fast-registered STags are
 * viaduct's. Two more facts of siw, asserted below:
 *  - libsiw sends as the STag to invalidate the WR's wr.rdma.rkey, not
 *    invalidate_rkey; the agent sets both;
 *  - siw invalidates any STag of the receiving QP's PD, a plain MR too,
 *    and reports the invalidation only to kernel consumers: a user-space
 *    receive completion has no IBV_WC_WITH_INV;
 *  - an STag it cannot invalidate fails siw's receive with
 *    IBV_WC_REM_INV_REQ_ERR, but siw sends no Terminate and stays
 *    connected.
 *
 * Skipped when siw is not available.
 */
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "xfer_util.h"

#define SM_PORT		7175
#define SM_BUF		(1UL << 20)	/* siw's registered buffer */
#define SM_RECV_OFF	(SM_BUF / 2)	/* receives and Read sinks land here */
#define PG		4096UL
#define FR_KEY		0x5a
#define FR_IOVA		0x6600000000ULL

/* ------------------------------------------------------------------ */
/* siw's side: the agent                                              */
/* ------------------------------------------------------------------ */

enum {
	AG_ACCEPT = 1,	/* -> addr, rkey of its MR */
	AG_WRITE,	/* RDMA Write @len bytes of pattern @seed to @stag/@addr */
	AG_READ,	/* RDMA Read @len bytes from @stag/@addr, check @seed */
	AG_SEND_INV,	/* Send @len bytes of @seed, invalidating @stag */
	AG_POST_RECV,	/* a receive of @len bytes at SM_RECV_OFF */
	AG_WAIT_RECV,	/* the receive's completion; checks @len bytes of @seed */
	AG_CHECK,	/* its buffer at @addr (an offset) holds @len bytes of @seed */
	AG_QP_ERR,	/* waits until its QP is in Error */
	AG_QUIT,
};

struct ag_cmd {
	int op;
	__u32 stag;
	__u64 addr;
	__u32 len;
	__u32 seed;
};

struct ag_reply {
	int ret;		/* 0, or -errno of the verbs call */
	int status;		/* the completion's ibv_wc_status */
	int opcode;
	__u32 byte_len;
	__u32 wc_flags;
	__u32 inv_rkey;
	int bad;		/* first byte not as expected, or -1 */
	__u64 addr;
	__u32 rkey;
};

struct agent {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen, *id;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *scq, *rcq;
	unsigned char *buf;
};

static int ag_first_bad(const unsigned char *p, size_t len, unsigned int seed)
{
	unsigned char want[4096];
	size_t i, n;

	for (i = 0; i < len; i += n) {
		n = len - i < sizeof(want) ? len - i : sizeof(want);
		/* the pattern of xf_fill() at offset i */
		for (size_t k = 0; k < n; k++)
			want[k] = (unsigned char)(seed * 131 + (i + k) * 7 + ((i + k) >> 8));
		for (size_t k = 0; k < n; k++)
			if (p[i + k] != want[k])
				return (int)(i + k);
	}
	return -1;
}

static int ag_cm_event(struct agent *g, enum rdma_cm_event_type type,
		       struct rdma_cm_event *out)
{
	struct pollfd pfd = { .fd = g->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int ret;

	if (poll(&pfd, 1, XF_WAIT_MS) != 1)
		return -ETIMEDOUT;
	if (rdma_get_cm_event(g->ch, &ev))
		return -errno;
	*out = *ev;
	ret = ev->event == type ? 0 : -EPROTO;
	rdma_ack_cm_event(ev);
	return ret;
}

static int ag_poll(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t end = vd_now_ms() + XF_WAIT_MS;
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0 && vd_now_ms() < end)
		usleep(1000);
	return n == 1 ? 0 : n < 0 ? -EIO : -ETIMEDOUT;
}

static int ag_listen(struct agent *g)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET, .sin_port = htons(SM_PORT),
		.sin_addr.s_addr = htonl(0xc0000202),	/* 192.0.2.2 */
	};

	g->ch = rdma_create_event_channel();
	if (!g->ch || rdma_create_id(g->ch, &g->listen, NULL, RDMA_PS_TCP))
		return -errno;
	if (rdma_bind_addr(g->listen, (struct sockaddr *)&sin) ||
	    rdma_listen(g->listen, 1))
		return -errno;
	return 0;
}

static void ag_accept(struct agent *g, struct ag_reply *r)
{
	struct rdma_conn_param cp = { .responder_resources = 2, .initiator_depth = 2 };
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_cm_event ev;

	r->ret = ag_cm_event(g, RDMA_CM_EVENT_CONNECT_REQUEST, &ev);
	if (r->ret)
		return;
	g->id = ev.id;
	g->pd = ibv_alloc_pd(g->id->verbs);
	g->scq = ibv_create_cq(g->id->verbs, 16, NULL, NULL, 0);
	g->rcq = ibv_create_cq(g->id->verbs, 16, NULL, NULL, 0);
	g->buf = mmap(NULL, SM_BUF, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (!g->pd || !g->scq || !g->rcq || g->buf == MAP_FAILED) {
		r->ret = -ENOMEM;
		return;
	}
	g->mr = ibv_reg_mr(g->pd, g->buf, SM_BUF, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	qa.send_cq = g->scq;
	qa.recv_cq = g->rcq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 8;
	qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (!g->mr || rdma_create_qp(g->id, g->pd, &qa) || rdma_accept(g->id, &cp)) {
		r->ret = -errno;
		return;
	}
	r->ret = ag_cm_event(g, RDMA_CM_EVENT_ESTABLISHED, &ev);
	r->addr = (unsigned long)g->buf;
	r->rkey = g->mr->rkey;
}

static void ag_post(struct agent *g, const struct ag_cmd *c, struct ag_reply *r)
{
	struct ibv_sge sge = { .addr = (unsigned long)g->buf, .length = c->len,
			       .lkey = g->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc = { 0 };

	wr.wr_id = c->op;
	wr.wr.rdma.rkey = c->stag;
	wr.wr.rdma.remote_addr = c->addr;
	switch (c->op) {
	case AG_WRITE:
		wr.opcode = IBV_WR_RDMA_WRITE;
		xf_fill(g->buf, c->len, c->seed);
		break;
	case AG_READ:
		wr.opcode = IBV_WR_RDMA_READ;
		sge.addr += SM_RECV_OFF;
		memset(g->buf + SM_RECV_OFF, 0, c->len);
		break;
	default:
		wr.opcode = IBV_WR_SEND_WITH_INV;
		/* libsiw takes the STag from wr.rdma.rkey */
		wr.invalidate_rkey = c->stag;
		xf_fill(g->buf, c->len, c->seed);
		break;
	}
	r->ret = ibv_post_send(g->id->qp, &wr, &bad) ? -EINVAL : 0;
	if (!r->ret)
		r->ret = ag_poll(g->scq, &wc);
	r->status = wc.status;
	r->opcode = wc.opcode;
	if (!r->ret && c->op == AG_READ && wc.status == IBV_WC_SUCCESS)
		r->bad = ag_first_bad(g->buf + SM_RECV_OFF, c->len, c->seed);
}

static void ag_recv(struct agent *g, const struct ag_cmd *c, struct ag_reply *r)
{
	struct ibv_sge sge = { .addr = (unsigned long)g->buf + SM_RECV_OFF,
			       .length = c->len, .lkey = g->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_wc wc = { 0 };

	if (c->op == AG_POST_RECV) {
		memset(g->buf + SM_RECV_OFF, 0, c->len);
		r->ret = ibv_post_recv(g->id->qp, &wr, &bad) ? -EINVAL : 0;
		return;
	}
	r->ret = ag_poll(g->rcq, &wc);
	r->status = wc.status;
	r->opcode = wc.opcode;
	r->byte_len = wc.byte_len;
	r->wc_flags = wc.wc_flags;
	r->inv_rkey = wc.wc_flags & IBV_WC_WITH_INV ? wc.invalidated_rkey : 0;
	if (!r->ret && wc.status == IBV_WC_SUCCESS)
		r->bad = ag_first_bad(g->buf + SM_RECV_OFF, c->len, c->seed);
}

static void ag_qp_err(struct agent *g, struct ag_reply *r)
{
	uint64_t end = vd_now_ms() + XF_WAIT_MS;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;

	do {
		r->ret = ibv_query_qp(g->id->qp, &a, IBV_QP_STATE, &ia) ? -errno : 0;
		if (r->ret || a.qp_state == IBV_QPS_ERR)
			return;
		usleep(5000);
	} while (vd_now_ms() < end);
	r->ret = -ETIMEDOUT;
}

static void ag_down(struct agent *g)
{
	if (g->id && g->id->qp)
		rdma_destroy_qp(g->id);
	if (g->mr)
		ibv_dereg_mr(g->mr);
	if (g->scq)
		ibv_destroy_cq(g->scq);
	if (g->rcq)
		ibv_destroy_cq(g->rcq);
	if (g->pd)
		ibv_dealloc_pd(g->pd);
	if (g->id)
		rdma_destroy_id(g->id);
	if (g->listen)
		rdma_destroy_id(g->listen);
	if (g->ch)
		rdma_destroy_event_channel(g->ch);
}

/* The child: in namespace @ns, serves commands on @sock until AG_QUIT. */
static void agent_main(const char *ns, int sock)
{
	struct agent g = { 0 };
	struct ag_reply r;
	struct ag_cmd c;
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	memset(&r, 0, sizeof(r));
	r.ret = fd < 0 || setns(fd, CLONE_NEWNET) ? -errno : ag_listen(&g);
	/* the first reply: listening, or why not */
	if (write(sock, &r, sizeof(r)) != sizeof(r) || r.ret)
		_exit(1);
	while (read(sock, &c, sizeof(c)) == sizeof(c) && c.op != AG_QUIT) {
		memset(&r, 0, sizeof(r));
		r.bad = -1;
		switch (c.op) {
		case AG_ACCEPT:
			ag_accept(&g, &r);
			break;
		case AG_WRITE:
		case AG_READ:
		case AG_SEND_INV:
			ag_post(&g, &c, &r);
			break;
		case AG_POST_RECV:
		case AG_WAIT_RECV:
			ag_recv(&g, &c, &r);
			break;
		case AG_CHECK:
			r.bad = ag_first_bad(g.buf + c.addr, c.len, c.seed);
			break;
		case AG_QP_ERR:
			ag_qp_err(&g, &r);
			break;
		default:
			r.ret = -EINVAL;
		}
		if (write(sock, &r, sizeof(r)) != sizeof(r))
			break;
	}
	ag_down(&g);
	_exit(0);
}

/* ------------------------------------------------------------------ */
/* viaduct's side                                                     */
/* ------------------------------------------------------------------ */

FIXTURE(siw_mem)
{
	struct xf_side a;	/* viaduct, connects */
	char nsb[32];
	int id, up, siw;
	int sock;		/* to the agent */
	pid_t agent;
	__u64 siw_addr;		/* siw's MR */
	__u32 siw_rkey;
};

static struct ag_reply ag(struct __test_metadata *_metadata,
			  FIXTURE_DATA(siw_mem) *self, int op, __u32 stag,
			  __u64 addr, __u32 len, __u32 seed)
{
	struct ag_cmd c = { .op = op, .stag = stag, .addr = addr, .len = len, .seed = seed };
	struct ag_reply r = { .ret = -EPIPE };

	if (write(self->sock, &c, sizeof(c)) != sizeof(c) ||
	    read(self->sock, &r, sizeof(r)) != sizeof(r))
		r.ret = -EPIPE;
	return r;
}

FIXTURE_SETUP(siw_mem)
{
	struct viaduct_cm_connect c = { 0 };
	struct viaduct_cm_event ev;
	struct ag_reply r;
	int sv[2];

	self->a.fd = self->a.ch = self->sock = -1;
	self->agent = -1;
	if (vd_sh("modprobe siw 2>/dev/null"))
		return;
	self->siw = 1;
	self->id = getpid() % 100000;
	snprintf(self->a.ns, sizeof(self->a.ns), "sa%d", self->id);
	snprintf(self->nsb, sizeof(self->nsb), "sb%d", self->id);
	ASSERT_EQ(0, xf_net_up(self->a.ns, self->nsb));
	self->up = 1;
	ASSERT_EQ(0, vd_sh("ip netns exec %s rdma link add siw%d type siw netdev eth0",
			   self->nsb, self->id));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv));
	self->agent = fork();
	ASSERT_LE(0, self->agent);
	if (!self->agent) {
		close(sv[0]);
		agent_main(self->nsb, sv[1]);
	}
	close(sv[1]);
	self->sock = sv[0];
	ASSERT_EQ(sizeof(r), read(self->sock, &r, sizeof(r)));
	ASSERT_EQ(0, r.ret) TH_LOG("siw agent: listen: %d", r.ret);

	ASSERT_EQ(0, xf_in_ns(self->a.ns, xf_side_up, &self->a));
	c.handle = self->a.id;
	xf_addr(&c.dst, 2, SM_PORT);
	c.param.qp_handle = self->a.q.c.handle;
	c.param.flags = VIADUCT_CM_F_CRC;
	ASSERT_EQ(0, vd_ioctl(self->a.fd, VIADUCT_IOCTL_CM_CONNECT, &c));
	r = ag(_metadata, self, AG_ACCEPT, 0, 0, 0, 0);
	ASSERT_EQ(0, r.ret) TH_LOG("siw agent: accept: %d", r.ret);
	self->siw_addr = r.addr;
	self->siw_rkey = r.rkey;
	ASSERT_EQ(0, xf_cm_event(&self->a, &ev, XF_WAIT_MS));
	ASSERT_EQ(VIADUCT_CM_EVENT_ESTABLISHED, ev.type) TH_LOG("status %d", ev.status);
}

FIXTURE_TEARDOWN(siw_mem)
{
	int st;

	xf_side_down(&self->a);
	if (self->agent > 0) {
		ag(_metadata, self, AG_QUIT, 0, 0, 0, 0);
		close(self->sock);
		waitpid(self->agent, &st, 0);
	}
	if (self->up) {
		vd_sh("ip netns exec %s rdma link del siw%d 2>/dev/null", self->nsb, self->id);
		xf_net_down(self->a.ns, self->nsb);
	}
}

#define SKIP_NO_SIW() do {						\
	if (!self->siw)							\
		SKIP(return, "siw not available");			\
} while (0)

/* A fast-register MR of viaduct's side, @len bytes at @off of its buffer. */
static __u32 fr_up(struct __test_metadata *_metadata, struct xf_side *s,
		   size_t off, __u32 len)
{
	struct viaduct_alloc_mr m = { .pd_handle = s->pd, .key = 0x11,
				      .max_pages = len / PG + 1 };
	struct xf_sge list = { off, len };
	struct viaduct_cqe cqe;
	__u32 stag;

	EXPECT_EQ(0, vd_ioctl(s->fd, VIADUCT_IOCTL_ALLOC_MR, &m));
	stag = (m.stag & ~VIADUCT_STAG_KEY_MASK) | FR_KEY;
	xf_post_send_imm_q(s, &s->q, 700, VIADUCT_OP_FAST_REG, VIADUCT_SQE_SIGNALED,
			   &list, 1, stag, FR_IOVA, XF_ACCESS);
	XF_EXPECT_CQE(&s->q.scq, 700, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_EQ(VIADUCT_WC_FAST_REG, cqe.opcode);
	return stag;
}

/* viaduct's QP goes to Error with the Terminate @term. */
static void expect_terminated(struct __test_metadata *_metadata, struct xf_side *s,
			      __u16 term)
{
	uint64_t end = vd_now_ms() + XF_WAIT_MS;
	struct viaduct_query_qp q;

	do {
		ASSERT_EQ(0, vd_query_qp(s->fd, s->q.c.handle, &q));
		if (q.state == VIADUCT_QPS_ERROR)
			break;
		usleep(5000);
	} while (vd_now_ms() < end);
	EXPECT_EQ(VIADUCT_QPS_ERROR, q.state);
	EXPECT_EQ(term, q.terminate) TH_LOG("Terminate 0x%04x", q.terminate);
}

/* a's bytes [@off, @off + @len) are all @c. */
static int first_not(const unsigned char *p, size_t len, unsigned char c)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != c)
			return (int)i;
	return -1;
}

/*
 * siw writes into and reads from a fast-registered viaduct STag, then
 * invalidates it with a Send with Invalidate: viaduct's receive completion
 * names it. siw's next Write through it is refused: viaduct answers with
 * the Terminate for an invalid STag, places nothing, and siw's QP enters
 * Error.
 */
TEST_F_TIMEOUT(siw_mem, siw_writes_reads_then_invalidates_fast_reg, XF_TIMEOUT_S)
{
	struct xf_sge dst = { 64 * PG, 4096 };
	struct viaduct_cqe cqe;
	struct ag_reply r;
	__u32 stag, len = 3 * PG;

	SKIP_NO_SIW();
	memset(self->a.buf + 16 * PG, 0xee, 8 * PG);
	stag = fr_up(_metadata, &self->a, 16 * PG + 100, 4 * PG);

	r = ag(_metadata, self, AG_WRITE, stag, FR_IOVA + 300, len, 41);
	ASSERT_EQ(0, r.ret);
	EXPECT_EQ(IBV_WC_SUCCESS, r.status) TH_LOG("%s", ibv_wc_status_str(r.status));
	/* the Write is placed once siw's Read behind it has its answer */
	r = ag(_metadata, self, AG_READ, stag, FR_IOVA + 300, len, 41);
	ASSERT_EQ(0, r.ret);
	EXPECT_EQ(IBV_WC_SUCCESS, r.status) TH_LOG("%s", ibv_wc_status_str(r.status));
	EXPECT_EQ(-1, r.bad) TH_LOG("siw read back byte %d wrong", r.bad);
	xf_fill(self->a.buf + 32 * PG, len, 41);
	EXPECT_EQ(0, memcmp(self->a.buf + 16 * PG + 400, self->a.buf + 32 * PG, len));
	EXPECT_EQ(-1, first_not(self->a.buf + 16 * PG, 400, 0xee));
	EXPECT_EQ(-1, first_not(self->a.buf + 16 * PG + 400 + len, 4 * PG - 400 - len, 0xee));

	xf_post_recv(&self->a, 50, &dst, 1);
	r = ag(_metadata, self, AG_SEND_INV, stag, 0, 200, 42);
	ASSERT_EQ(0, r.ret);
	EXPECT_EQ(IBV_WC_SUCCESS, r.status) TH_LOG("%s", ibv_wc_status_str(r.status));
	EXPECT_EQ(IBV_WC_SEND, r.opcode);
	XF_EXPECT_CQE(&self->a.q.rcq, 50, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_EQ(200U, cqe.byte_len);
	EXPECT_TRUE(cqe.flags & VIADUCT_WC_F_INVALIDATED);
	EXPECT_EQ(stag, cqe.invalidated_stag);
	xf_fill(self->a.buf + 32 * PG, 200, 42);
	EXPECT_EQ(0, memcmp(self->a.buf + 64 * PG, self->a.buf + 32 * PG, 200));

	/* invalid now: siw's Write is refused and places nothing */
	memset(self->a.buf + 16 * PG, 0xcc, 8 * PG);
	r = ag(_metadata, self, AG_WRITE, stag, FR_IOVA + 300, 64, 43);
	ASSERT_EQ(0, r.ret);
	/* DDP tagged buffer error, invalid STag */
	expect_terminated(_metadata, &self->a, 0x1100);
	r = ag(_metadata, self, AG_QP_ERR, 0, 0, 0, 0);
	EXPECT_EQ(0, r.ret) TH_LOG("siw's QP is not in Error: %d", r.ret);
	EXPECT_EQ(-1, first_not(self->a.buf + 16 * PG, 8 * PG, 0xcc));
}

/*
 * viaduct invalidates its fast-registered STag locally: siw's Read through
 * it is refused with the Terminate for a Read Request's invalid source
 * STag (RDMAP, remote protection error, invalid STag), and siw flushes
 * its Read: nothing is read.
 */
TEST_F_TIMEOUT(siw_mem, local_invalidate_then_siw_read_refused, XF_TIMEOUT_S)
{
	struct viaduct_cqe cqe;
	struct ag_reply r;
	__u32 stag;

	SKIP_NO_SIW();
	xf_fill(self->a.buf + 16 * PG, 2 * PG, 51);
	stag = fr_up(_metadata, &self->a, 16 * PG, 2 * PG);
	r = ag(_metadata, self, AG_READ, stag, FR_IOVA, 2 * PG, 51);
	ASSERT_EQ(0, r.ret);
	EXPECT_EQ(IBV_WC_SUCCESS, r.status) TH_LOG("%s", ibv_wc_status_str(r.status));
	EXPECT_EQ(-1, r.bad) TH_LOG("siw read byte %d wrong", r.bad);

	xf_post_send_q(&self->a, &self->a.q, 701, VIADUCT_OP_LOCAL_INV,
		       VIADUCT_SQE_SIGNALED, NULL, 0, stag, 0);
	XF_EXPECT_CQE(&self->a.q.scq, 701, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_EQ(VIADUCT_WC_LOCAL_INV, cqe.opcode);

	r = ag(_metadata, self, AG_READ, stag, FR_IOVA, 2 * PG, 51);
	ASSERT_EQ(0, r.ret);
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, r.status) TH_LOG("%s", ibv_wc_status_str(r.status));
	expect_terminated(_metadata, &self->a, 0x0100);
	r = ag(_metadata, self, AG_QP_ERR, 0, 0, 0, 0);
	EXPECT_EQ(0, r.ret);
}

/* The same with a Write: nothing placed after the local invalidation. */
TEST_F_TIMEOUT(siw_mem, local_invalidate_then_siw_write_refused, XF_TIMEOUT_S)
{
	struct viaduct_cqe cqe;
	struct ag_reply r;
	__u32 stag;

	SKIP_NO_SIW();
	stag = fr_up(_metadata, &self->a, 16 * PG, 2 * PG);
	r = ag(_metadata, self, AG_WRITE, stag, FR_IOVA + 8, 1000, 61);
	ASSERT_EQ(0, r.ret);
	r = ag(_metadata, self, AG_READ, stag, FR_IOVA + 8, 1000, 61);
	ASSERT_EQ(0, r.ret);
	EXPECT_EQ(-1, r.bad);
	xf_fill(self->a.buf + 32 * PG, 1000, 61);
	EXPECT_EQ(0, memcmp(self->a.buf + 16 * PG + 8, self->a.buf + 32 * PG, 1000));

	xf_post_send_q(&self->a, &self->a.q, 701, VIADUCT_OP_LOCAL_INV,
		       VIADUCT_SQE_SIGNALED, NULL, 0, stag, 0);
	XF_EXPECT_CQE(&self->a.q.scq, 701, VIADUCT_WC_SUCCESS, &cqe);
	memset(self->a.buf + 16 * PG, 0xcc, 2 * PG);
	r = ag(_metadata, self, AG_WRITE, stag, FR_IOVA + 8, 1000, 62);
	ASSERT_EQ(0, r.ret);
	expect_terminated(_metadata, &self->a, 0x1100);
	EXPECT_EQ(0, ag(_metadata, self, AG_QP_ERR, 0, 0, 0, 0).ret);
	EXPECT_EQ(-1, first_not(self->a.buf + 16 * PG, 2 * PG, 0xcc));
}

/*
 * viaduct's Send with Invalidate names siw's STag, a plain MR. siw takes
 * it (it invalidates any STag of the QP's PD) and completes the receive
 * without telling its user-space consumer (no IBV_WC_WITH_INV); viaduct's
 * next Write to that STag is refused by siw with the Terminate for an
 * invalid STag, which viaduct takes: its QP enters Error.
 */
TEST_F_TIMEOUT(siw_mem, viaduct_invalidates_siw_stag, XF_TIMEOUT_S)
{
	struct xf_sge src = { 0, 3000 }, wsrc = { 8 * PG, 2000 };
	struct viaduct_cqe cqe;
	struct ag_reply r;

	SKIP_NO_SIW();
	/* a Write that siw places, checked there */
	xf_fill(self->a.buf + 8 * PG, 2000, 71);
	xf_post_send(&self->a, 1, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED,
		     &wsrc, 1, self->siw_rkey, self->siw_addr + 4 * PG);
	XF_EXPECT_CQE(&self->a.q.scq, 1, VIADUCT_WC_SUCCESS, &cqe);

	ASSERT_EQ(0, ag(_metadata, self, AG_POST_RECV, 0, 0, 3000, 0).ret);
	xf_fill(self->a.buf, 3000, 72);
	xf_post_send(&self->a, 2, VIADUCT_OP_SEND_INV, VIADUCT_SQE_SIGNALED,
		     &src, 1, self->siw_rkey, 0);
	XF_EXPECT_CQE(&self->a.q.scq, 2, VIADUCT_WC_SUCCESS, &cqe);
	EXPECT_EQ(VIADUCT_WC_SEND, cqe.opcode);
	r = ag(_metadata, self, AG_WAIT_RECV, 0, 0, 3000, 72);
	ASSERT_EQ(0, r.ret);
	EXPECT_EQ(IBV_WC_SUCCESS, r.status) TH_LOG("%s", ibv_wc_status_str(r.status));
	EXPECT_EQ(IBV_WC_RECV, r.opcode);
	EXPECT_EQ(3000U, r.byte_len);
	EXPECT_EQ(-1, r.bad) TH_LOG("siw received byte %d wrong", r.bad);
	/* siw reports invalidations to kernel consumers only */
	EXPECT_EQ(0U, r.wc_flags & IBV_WC_WITH_INV);
	/* the Write before it was placed (the receive completed after it) */
	r = ag(_metadata, self, AG_CHECK, 0, 4 * PG, 2000, 71);
	EXPECT_EQ(-1, r.bad) TH_LOG("siw's byte %d wrong", r.bad);

	/* the STag is invalid at siw now */
	xf_post_send(&self->a, 3, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED,
		     &wsrc, 1, self->siw_rkey, self->siw_addr + 4 * PG);
	expect_terminated(_metadata, &self->a, 0x1100);
	EXPECT_EQ(0, ag(_metadata, self, AG_QP_ERR, 0, 0, 0, 0).ret);
}

/*
 * viaduct's Send with Invalidate names an STag siw does not have. siw
 * fails its receive with IBV_WC_REM_INV_REQ_ERR but, unlike RFC 5040
 * section 7.4 (and viaduct), sends no Terminate and stays connected: it
 * records the Terminate and sends it only if the QP enters Error later.
 * So viaduct's QP stays connected too, and the next Send arrives.
 */
TEST_F_TIMEOUT(siw_mem, viaduct_invalidates_unknown_siw_stag, XF_TIMEOUT_S)
{
	struct xf_sge src = { 0, 100 };
	struct viaduct_cqe cqe;
	struct ag_reply r;

	SKIP_NO_SIW();
	ASSERT_EQ(0, ag(_metadata, self, AG_POST_RECV, 0, 0, 3000, 0).ret);
	xf_fill(self->a.buf, 100, 81);
	xf_post_send(&self->a, 2, VIADUCT_OP_SEND_INV, VIADUCT_SQE_SIGNALED,
		     &src, 1, self->siw_rkey ^ 0x7f00, 0);
	r = ag(_metadata, self, AG_WAIT_RECV, 0, 0, 100, 81);
	ASSERT_EQ(0, r.ret);
	EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, r.status) TH_LOG("%s", ibv_wc_status_str(r.status));
	XF_EXPECT_CQE(&self->a.q.scq, 2, VIADUCT_WC_SUCCESS, &cqe);

	ASSERT_EQ(0, ag(_metadata, self, AG_POST_RECV, 0, 0, 3000, 0).ret);
	xf_fill(self->a.buf, 100, 82);
	xf_post_send(&self->a, 3, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &src, 1, 0, 0);
	XF_EXPECT_CQE(&self->a.q.scq, 3, VIADUCT_WC_SUCCESS, &cqe);
	r = ag(_metadata, self, AG_WAIT_RECV, 0, 0, 100, 82);
	ASSERT_EQ(0, r.ret);
	EXPECT_EQ(IBV_WC_SUCCESS, r.status) TH_LOG("%s", ibv_wc_status_str(r.status));
	EXPECT_EQ(100U, r.byte_len);
	EXPECT_EQ(-1, r.bad);
	EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->a.fd, self->a.q.c.handle));
}

TEST_HARNESS_MAIN
