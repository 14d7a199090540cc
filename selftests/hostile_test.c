// SPDX-License-Identifier: GPL-2.0
/*
 * A hostile peer: a plain TCP socket that speaks MPA to a viaduct QP and
 * sends one violation per test. viaduct connects from netns xa<pid> to
 * the peer in xb<pid> (the rx_test topology). Behind the MPA Reply the
 * peer writes, in one write(): a valid RDMA Write, the offending FPDU, and
 * a valid Write and Send behind it. For each violation the test checks:
 *
 *   - the Terminate viaduct sends back: Layer, EType and ErrorCode (RFC
 *     5040 section 4.8 and 7, RFC 5041 section 7, RFC 5044 section 8),
 *     the copy of the offending DDP header (and Read Request) with its
 *     segment length where the RFCs call for one, and a valid CRC;
 *   - our FIN right behind the Terminate: the stream ends there;
 *   - the QP is in Error with that code, and the application got the
 *     asynchronous event (QP_ACCESS_ERR for tagged-buffer and protection
 *     errors, QP_FATAL for the others) with the code as its detail;
 *   - the Write before the violation is placed, nothing behind it is, the
 *     posted receive is flushed (or fails with the status the violation
 *     gives it), and the canary pages around each of the registered
 *     regions are untouched;
 *   - a new QP of the same context is then connected to the same peer and
 *     placed data: the host still serves new connections.
 *
 * The classes, each with its own test: STags unknown, wrongly keyed,
 * deregistered, of another PD, or invalidated by the peer's own Send with
 * Invalidate (a fast-register MR that a registers once connected: the
 * Reply goes first, the rest of the stream once the FAST_REG WR
 * completed), and a plain MR the peer may not invalidate; every missing
 * right; offsets beyond either end and TOs wrapping 2^64; Read Responses
 * nobody asked for, unknown opcodes, a T flag on a Send, bad RDMAP and
 * DDP versions, bad queue numbers, Read Requests with payload or with the
 * L flag clear, or beyond IRD; MSNs out of window, bad MO, Sends longer
 * than or without a receive; bad CRC, a length beyond the frame,
 * truncated and empty ULPDUs, the largest ULPDU MPA can frame (65535
 * bytes) beyond its region; a flood of small frames.
 *
 * The MPA negotiation cases (oversized private data, bad revision, markers
 * requested, bad key) answer viaduct's Request with a bad Reply: the
 * connection must end with CONNECT_ERROR and the socket closed. A stalled
 * frame is ended by the rx_stall_ms timeout (lowered for that test), and
 * a bad header is answered before the rest of its FPDU arrives.
 */
#include <netinet/tcp.h>

#include "mpa_peer.h"

#define PG		4096UL
#define HP_REG		(2 * PG)	/* each region */
#define HP_NREG		5
#define HP_CANARY	0xc5
#define HP_RECV_OFF	(1UL << 20)	/* the receive, in a's own buffer */
#define HP_RECV_LEN	1000U
#define HP_STALL_PARAM	"rx_stall_ms"
#define HP_CHAN_PARAM	"cm_channel_events"

/*
 * The regions, each between canary pages of one mapping:
 * [C][R0][C][R1][C][R2][C][R3][C][R4][C]
 */
enum {
	HP_RW,		/* remote read and write */
	HP_RO,		/* remote read only */
	HP_LOCAL,	/* no remote right */
	HP_OTHER_PD,	/* remote read and write, in another PD */
	HP_GONE,	/* deregistered before the test */
};

static const __u32 hp_access[HP_NREG] = {
	[HP_RW] = VIADUCT_ACCESS_LOCAL_WRITE | VIADUCT_ACCESS_REMOTE_WRITE |
		  VIADUCT_ACCESS_REMOTE_READ,
	[HP_RO] = VIADUCT_ACCESS_REMOTE_READ,
	[HP_LOCAL] = VIADUCT_ACCESS_LOCAL_WRITE,
	[HP_OTHER_PD] = VIADUCT_ACCESS_LOCAL_WRITE | VIADUCT_ACCESS_REMOTE_WRITE |
			VIADUCT_ACCESS_REMOTE_READ,
	[HP_GONE] = VIADUCT_ACCESS_LOCAL_WRITE | VIADUCT_ACCESS_REMOTE_WRITE |
		    VIADUCT_ACCESS_REMOTE_READ,
};

/*
 * One pair of namespaces for the whole program (made before the first
 * test, removed after the last): under TCG, ip(8) is most of what a
 * fixture would cost. Each test makes the device anew.
 */
static pid_t hp_main;
static int hp_id, hp_net_ok;

static void __attribute__((constructor)) hp_net_up(void)
{
	char a[32], b[32];

	hp_main = getpid();
	hp_id = hp_main % 100000;
	snprintf(a, sizeof(a), "xa%d", hp_id);
	snprintf(b, sizeof(b), "xb%d", hp_id);
	hp_net_ok = !xf_net_up(a, b);
}

static void __attribute__((destructor)) hp_net_down(void)
{
	char a[32], b[32];

	if (getpid() != hp_main || !hp_net_ok)
		return;
	snprintf(a, sizeof(a), "xa%d", hp_id);
	snprintf(b, sizeof(b), "xb%d", hp_id);
	xf_net_down(a, b);
}

/* In the side's namespace: the device of an earlier test goes. */
static int hp_dev_del(struct xf_side *s)
{
	vd_nl_link(VIADUCT_CMD_LINK_DEL, "vd0", NULL);
	return 0;
}

FIXTURE(hp)
{
	struct xf_side a;	/* viaduct: connects */
	struct xf_side b;	/* only its namespace: the raw peer lives there */
	int lfd, port, fd;
	struct rx_stream st;
	unsigned char *arena;	/* canaries and regions */
	size_t arena_len;
	__u32 pd2;
	__u32 stag[HP_NREG];
	unsigned char src[HP_REG];
	long stall_saved;
	long chan_saved;
	char wmem[64];		/* tcp_wmem of a's namespace, to restore */
};

static unsigned char *hp_reg(FIXTURE_DATA(hp) *self, int i)
{
	return self->arena + PG + (size_t)i * (HP_REG + PG);
}

static __u64 hp_to(FIXTURE_DATA(hp) *self, int i, size_t off)
{
	return (unsigned long)(hp_reg(self, i) + off);
}

FIXTURE_SETUP(hp)
{
	int i, ret;

	crc32c_init();
	xf_sides_init(&self->a, &self->b, hp_id);
	self->lfd = self->fd = -1;
	self->stall_saved = -1;
	self->chan_saved = -1;
	self->wmem[0] = 0;
	memset(&self->st, 0, sizeof(self->st));
	self->st.crc = 1;
	xf_fill(self->src, sizeof(self->src), 9);
	ASSERT_TRUE(hp_net_ok);
	xf_in_ns(self->a.ns, hp_dev_del, &self->a);
	ASSERT_EQ(0, xf_in_ns(self->a.ns, xf_side_up, &self->a));
	self->lfd = rx_listener(self->b.ns, &self->port);
	ASSERT_LE(0, self->lfd);

	self->arena_len = PG + HP_NREG * (HP_REG + PG);
	self->arena = mmap(NULL, self->arena_len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, self->arena);
	memset(self->arena, HP_CANARY, self->arena_len);
	ret = vd_create_pd(self->a.fd);
	ASSERT_LT(0, ret);
	self->pd2 = ret;
	for (i = 0; i < HP_NREG; i++) {
		memset(hp_reg(self, i), 0, HP_REG);
		ret = vd_reg_mr(self->a.fd, i == HP_OTHER_PD ? self->pd2 : self->a.pd,
				hp_reg(self, i), HP_REG, hp_access[i], &self->stag[i]);
		ASSERT_LT(0, ret) TH_LOG("region %d", i);
		if (i == HP_GONE)
			ASSERT_EQ(0, vd_dereg_mr(self->a.fd, ret));
	}
}

FIXTURE_TEARDOWN(hp)
{
	if (self->wmem[0]) {
		int ns = rx_enter(self->a.ns);
		FILE *f = NULL;

		if (ns >= 0) {
			f = fopen("/proc/sys/net/ipv4/tcp_wmem", "w");
			rx_leave(ns);
		}
		if (f) {
			fputs(self->wmem, f);
			fclose(f);
		}
	}
	if (self->stall_saved >= 0)
		vd_param_swap(HP_STALL_PARAM, self->stall_saved);
	if (self->chan_saved >= 0)
		vd_param_swap(HP_CHAN_PARAM, self->chan_saved);
	if (self->fd >= 0)
		close(self->fd);
	if (self->lfd >= 0)
		close(self->lfd);
	free(self->st.p);
	xf_side_down(&self->a);
	if (self->arena && self->arena != MAP_FAILED)
		munmap(self->arena, self->arena_len);
}

/*
 * viaduct connects QP @qp with CM id @cm; the peer accepts, reads the MPA
 * Request and returns its socket (the Reply is the test's to send).
 */
static int hp_accept(struct __test_metadata *_metadata, FIXTURE_DATA(hp) *self, __u32 cm,
		     __u32 qp)
{
	struct viaduct_cm_connect c = { 0 };
	struct pollfd p = { .fd = self->lfd, .events = POLLIN };
	unsigned char req[20 + 512];
	size_t pd;
	int fd, one = 1;

	c.handle = cm;
	xf_addr(&c.dst, 2, self->port);
	c.param.qp_handle = qp;
	c.param.flags = VIADUCT_CM_F_CRC;
	if (vd_ioctl(self->a.fd, VIADUCT_IOCTL_CM_CONNECT, &c) || poll(&p, 1, XF_WAIT_MS) != 1)
		return -1;
	fd = accept4(self->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (rx_read_full(fd, req, 20, XF_WAIT_MS) || memcmp(req, "MPA ID Req Frame", 16))
		goto fail;
	pd = (size_t)req[18] << 8 | req[19];
	if (pd > 512 || rx_read_full(fd, req + 20, pd, XF_WAIT_MS))
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

static void hp_connect(struct __test_metadata *_metadata, FIXTURE_DATA(hp) *self)
{
	self->fd = hp_accept(_metadata, self, self->a.id, self->a.q.c.handle);
	ASSERT_LE(0, self->fd);
	st_reply(&self->st);
}

/* The next CM event of id @id (those of other ids are passed over). */
static int hp_cm_event(struct xf_side *a, __u32 id, struct viaduct_cm_event *ev)
{
	int ret;

	do
		ret = xf_cm_event(a, ev, XF_WAIT_MS);
	while (!ret && ev->handle != id);
	return ret;
}

static void hp_established(struct __test_metadata *_metadata, struct xf_side *a, __u32 id)
{
	struct viaduct_cm_event ev;

	ASSERT_EQ(0, hp_cm_event(a, id, &ev));
	ASSERT_EQ(VIADUCT_CM_EVENT_ESTABLISHED, ev.type) TH_LOG("status %d", ev.status);
}

static void hp_post_recv(FIXTURE_DATA(hp) *self)
{
	struct xf_sge d = { HP_RECV_OFF, HP_RECV_LEN };

	xf_post_recv(&self->a, 100, &d, 1);
}

/* The valid Write that opens every stream: 100 bytes at the start of R0. */
static void hp_prologue(FIXTURE_DATA(hp) *self)
{
	st_write(&self->st, self->stag[HP_RW], hp_to(self, HP_RW, 0), self->src, 100);
}

/* A Write and a Send that must never be placed. */
static void hp_epilogue(FIXTURE_DATA(hp) *self)
{
	st_write(&self->st, self->stag[HP_RW], hp_to(self, HP_RW, PG), self->src, 300);
	st_send(&self->st, 1, 0, 1, self->src, 64);
}

static int hp_all(const unsigned char *p, size_t len, unsigned char v)
{
	while (len--)
		if (*p++ != v)
			return 0;
	return 1;
}

/*
 * Every canary page intact; R0 holds the prologue's 100 bytes (if @placed)
 * and zeroes; the other regions and the receive are untouched.
 */
static void hp_check_memory(struct __test_metadata *_metadata, FIXTURE_DATA(hp) *self,
			    int placed)
{
	int i;

	for (i = 0; i <= HP_NREG; i++)
		EXPECT_TRUE(hp_all(self->arena + (size_t)i * (HP_REG + PG), PG, HP_CANARY))
			TH_LOG("canary page %d", i);
	if (placed)
		EXPECT_EQ(0, memcmp(hp_reg(self, HP_RW), self->src, 100));
	EXPECT_TRUE(hp_all(hp_reg(self, HP_RW) + (placed ? 100 : 0), HP_REG - (placed ? 100 : 0), 0));
	for (i = HP_RW + 1; i < HP_NREG; i++)
		EXPECT_TRUE(hp_all(hp_reg(self, i), HP_REG, 0)) TH_LOG("region %d", i);
	EXPECT_TRUE(hp_all(self->a.buf + HP_RECV_OFF, HP_RECV_LEN, 0));
}

/*
 * A new QP and CM id of the same context connect to the same peer, which
 * writes 64 bytes into R0 at 2 KiB and then a Send: both arrive.
 */
static void hp_still_serves(struct __test_metadata *_metadata, FIXTURE_DATA(hp) *self)
{
	struct rx_stream s = { .crc = 1 };
	struct xf_sge d = { HP_RECV_OFF + 4096, 64 };
	struct viaduct_cqe cqe;
	struct vd_qp q;
	int id, fd;

	ASSERT_EQ(0, xf_qp_up(&self->a, &q));
	id = xf_create_id(&self->a, 7);
	ASSERT_LT(0, id);
	xf_post_recv_q(&self->a, &q, 200, &d, 1);
	fd = hp_accept(_metadata, self, id, q.c.handle);
	ASSERT_LE(0, fd);
	st_reply(&s);
	st_write(&s, self->stag[HP_RW], hp_to(self, HP_RW, 2048), self->src + 2048, 64);
	st_send(&s, 1, 0, 1, self->src, 16);
	EXPECT_EQ(0, rx_write_all(fd, s.p, s.len));
	free(s.p);
	hp_established(_metadata, &self->a, id);
	ASSERT_EQ(1U, vd_cring_wait(&q.rcq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(200U, cqe.wr_id);
	EXPECT_EQ(VIADUCT_WC_SUCCESS, cqe.status);
	EXPECT_EQ(0, memcmp(hp_reg(self, HP_RW) + 2048, self->src + 2048, 64));
	EXPECT_EQ(0, memcmp(self->a.buf + HP_RECV_OFF + 4096, self->src, 16));
	EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->a.fd, q.c.handle));
	/* for the memory checks that follow */
	memset(hp_reg(self, HP_RW) + 2048, 0, 64);
	close(fd);
	vd_qp_unmap(&q);
}

/* What the Terminate copies of the offending segment. */
enum { HP_NOHDR, HP_DDP, HP_RREQ };

/*
 * The stream was written; the FPDU at @bad in it is the offending one.
 * Checks the Terminate, the QP, the event, the memory, and a new
 * connection. @recv_status: what the posted receive completes with.
 */
static void hp_expect(struct __test_metadata *_metadata, FIXTURE_DATA(hp) *self, size_t bad,
		      __u16 code, int hdr, __u8 recv_status)
{
	const unsigned char *u = self->st.p + bad + 2;
	__u32 event = (code >> 8 == 0x11 || code >> 8 == 0x01) ? VIADUCT_EVENT_QP_ACCESS_ERR :
								   VIADUCT_EVENT_QP_FATAL;
	struct viaduct_async_event ev;
	struct viaduct_query_qp q;
	struct viaduct_cqe cqe;
	struct peer_term t;

	ASSERT_EQ(0, peer_read_terminate(self->fd, 1, &t, XF_WAIT_MS));
	/* the Terminate is the stream's last FPDU, our FIN follows it */
	EXPECT_EQ(0, peer_read_end(self->fd, XF_WAIT_MS)) TH_LOG("no FIN after the Terminate");
	EXPECT_TRUE(t.crc_ok);
	EXPECT_EQ(code, t.code) TH_LOG("Terminate 0x%04x, expected 0x%04x", t.code, code);
	EXPECT_EQ(hdr != HP_NOHDR, t.d);
	EXPECT_EQ(hdr != HP_NOHDR, t.m);
	EXPECT_EQ(hdr == HP_RREQ, t.r);
	if (hdr != HP_NOHDR && t.d) {
		EXPECT_EQ((__u16)((size_t)self->st.p[bad] << 8 | self->st.p[bad + 1]), t.seg_len);
		EXPECT_EQ(u[0] & 0x80 ? 14U : 18U, t.ddp_len);
		EXPECT_EQ(0, memcmp(t.ddp, u, t.ddp_len));
	}
	if (hdr == HP_RREQ && t.r)
		EXPECT_EQ(0, memcmp(t.rreq, u + 18, 28));

	ASSERT_EQ(0, vd_wait_async(self->a.fd, event, self->a.q.c.handle, &ev, XF_WAIT_MS))
		TH_LOG("no async event %u for 0x%04x", event, code);
	EXPECT_EQ(code, ev.detail);
	ASSERT_EQ(0, vd_query_qp(self->a.fd, self->a.q.c.handle, &q));
	EXPECT_EQ(VIADUCT_QPS_ERROR, q.state);
	EXPECT_EQ(code, q.terminate);
	if (recv_status != 0xff) {
		ASSERT_EQ(1U, vd_cring_wait(&self->a.q.rcq, &cqe, 1, XF_WAIT_MS));
		EXPECT_EQ(100U, cqe.wr_id);
		EXPECT_EQ(recv_status, cqe.status);
		/* a failed receive names no invalidation */
		EXPECT_FALSE(cqe.flags & VIADUCT_WC_F_INVALIDATED);
	}
	hp_check_memory(_metadata, self, 1);
	hp_still_serves(_metadata, self);
	hp_check_memory(_metadata, self, 1);
}

/*
 * The common case: a receive posted, the prologue, the FPDU @build
 * appends (its offset is the offending one), the epilogue, one write().
 */
#define HP_CASE(name, code, hdr, recv_status, ...)					\
	TEST_F_TIMEOUT(hp, name, XF_TIMEOUT_S)						\
	{										\
		struct rx_stream *s = &self->st;					\
		size_t bad;								\
											\
		hp_post_recv(self);							\
		hp_connect(_metadata, self);						\
		hp_prologue(self);							\
		bad = s->len;								\
		__VA_ARGS__;								\
		hp_epilogue(self);							\
		ASSERT_EQ(0, rx_write_all(self->fd, s->p, s->len));			\
		hp_established(_metadata, &self->a, self->a.id);					\
		hp_expect(_metadata, self, bad, code, hdr, recv_status);		\
	}

/* --- FPDU builders --------------------------------------------------- */

/* A tagged segment: DDP control @ddp, RDMAP control @rdmap. */
static size_t hp_tagged(struct rx_stream *s, __u8 ddp, __u8 rdmap, __u32 stag, __u64 to,
			const unsigned char *src, size_t len)
{
	unsigned char h[14];

	h[0] = ddp;
	h[1] = rdmap;
	put32(h + 2, stag);
	put64(h + 6, to);
	return st_fpdu(s, h, sizeof(h), src, len);
}

/* An untagged segment: queue @qn, @msn, MO 0. */
static size_t hp_untagged(struct rx_stream *s, __u8 ddp, __u8 rdmap, __u32 qn, __u32 msn,
			  const unsigned char *payload, size_t len)
{
	unsigned char h[18] = { 0 };

	h[0] = ddp;
	h[1] = rdmap;
	put32(h + 6, qn);
	put32(h + 10, msn);
	return st_fpdu(s, h, sizeof(h), payload, len);
}

/* A Send with Invalidate (RDMAP opcode 4) naming @stag, one segment. */
static size_t hp_send_inv(struct rx_stream *s, __u32 stag, __u32 msn,
			  const unsigned char *payload, size_t len)
{
	unsigned char h[18] = { 0 };

	h[0] = 0x41;			/* L, DDP version 1 */
	h[1] = 0x44;			/* RDMAP version 1, Send with Invalidate */
	put32(h + 2, stag);		/* Invalidate STag */
	put32(h + 10, msn);		/* QN 0, MO 0 */
	return st_fpdu(s, h, sizeof(h), payload, len);
}

/* An RDMA Read Request, DDP control @ddp, for @size bytes of @stag at @to. */
static size_t hp_read_req_ddp(struct rx_stream *s, __u8 ddp, __u32 msn, __u32 stag, __u64 to,
			      __u32 size)
{
	unsigned char r[28];

	put32(r, 0x1234500);		/* the sink: the peer's, never checked */
	put64(r + 4, 0x10000);
	put32(r + 12, size);
	put32(r + 16, stag);
	put64(r + 20, to);
	return hp_untagged(s, ddp, 0x41, 1, msn, r, sizeof(r));
}

/* An RDMA Read Request (one segment, L set) for @size bytes of @stag at @to. */
static size_t hp_read_req(struct rx_stream *s, __u32 msn, __u32 stag, __u64 to, __u32 size)
{
	return hp_read_req_ddp(s, 0x41, msn, stag, to, size);
}

#define W(stag, to, len) st_write(s, stag, to, self->src, len)
#define RW	self->stag[HP_RW]

/* --- Protection: STags, keys, PDs, rights, bounds -------------------- */

/* DDP tagged 0x1100: invalid STag */
HP_CASE(unknown_stag, 0x1100, HP_DDP, VIADUCT_WC_FLUSHED,
	W(0x7ffff05a, hp_to(self, HP_RW, 0), 16))
HP_CASE(wrong_key, 0x1100, HP_DDP, VIADUCT_WC_FLUSHED,
	W(RW ^ 0x01, hp_to(self, HP_RW, 0), 16))
HP_CASE(deregistered_stag, 0x1100, HP_DDP, VIADUCT_WC_FLUSHED,
	W(self->stag[HP_GONE], hp_to(self, HP_GONE, 0), 16))
/* 0x1102: STag not associated with the stream (another PD, no right) */
HP_CASE(wrong_pd, 0x1102, HP_DDP, VIADUCT_WC_FLUSHED,
	W(self->stag[HP_OTHER_PD], hp_to(self, HP_OTHER_PD, 0), 16))
HP_CASE(write_read_only, 0x1102, HP_DDP, VIADUCT_WC_FLUSHED,
	W(self->stag[HP_RO], hp_to(self, HP_RO, 0), 16))
HP_CASE(write_no_remote_right, 0x1102, HP_DDP, VIADUCT_WC_FLUSHED,
	W(self->stag[HP_LOCAL], hp_to(self, HP_LOCAL, 0), 16))
/* RDMAP remote protection 0x0102: access rights */
HP_CASE(read_no_remote_right, 0x0102, HP_RREQ, VIADUCT_WC_FLUSHED,
	hp_read_req(s, 1, self->stag[HP_LOCAL], hp_to(self, HP_LOCAL, 0), 64))
HP_CASE(read_wrong_pd, 0x0103, HP_RREQ, VIADUCT_WC_FLUSHED,
	hp_read_req(s, 1, self->stag[HP_OTHER_PD], hp_to(self, HP_OTHER_PD, 0), 64))
HP_CASE(read_unknown_stag, 0x0100, HP_RREQ, VIADUCT_WC_FLUSHED,
	hp_read_req(s, 1, 0x7ffff05a, hp_to(self, HP_RW, 0), 64))
/* 0x1101 / 0x0101: base or bounds */
HP_CASE(write_beyond_end, 0x1101, HP_DDP, VIADUCT_WC_FLUSHED,
	W(RW, hp_to(self, HP_RW, HP_REG - 50), 100))
HP_CASE(write_before_start, 0x1101, HP_DDP, VIADUCT_WC_FLUSHED,
	W(RW, hp_to(self, HP_RW, 0) - 8, 16))
HP_CASE(read_beyond_end, 0x0101, HP_RREQ, VIADUCT_WC_FLUSHED,
	hp_read_req(s, 1, RW, hp_to(self, HP_RW, HP_REG - 10), 64))
/* 0x1103 / 0x0104: TO wraps 2^64 */
HP_CASE(write_to_wraps, 0x1103, HP_DDP, VIADUCT_WC_FLUSHED,
	W(RW, ~0ULL - 15, 100))
HP_CASE(read_to_wraps, 0x0104, HP_RREQ, VIADUCT_WC_FLUSHED,
	hp_read_req(s, 1, RW, ~0ULL - 15, 100))
/*
 * 0x0109: a Send with Invalidate naming a plain MR (R0), which no peer may
 * invalidate; the receive fails (REM_INV_REQ_ERR), R0 stays valid (the new
 * connection of hp_still_serves() writes through it). No payload: a failed
 * receive's bytes are undefined, and hp_check_memory() wants it untouched.
 */
HP_CASE(send_inv_plain_mr, 0x0109, HP_DDP, VIADUCT_WC_REM_INV_REQ_ERR,
	hp_send_inv(s, RW, 1, NULL, 0))

#define HP_FR_OFF	(64 * PG)	/* the fast-register pages, in a's own buffer */
#define HP_FR_LEN	(2 * PG)
#define HP_FR_BYTE	0x5a
#define HP_FR_IOVA	0x7700000000ULL
#define HP_RECV2_OFF	(HP_RECV_OFF + 2 * PG)	/* receive 101, for the epilogue's Send */

/*
 * 0x1100: an STag the peer invalidated itself. Once the connection is up,
 * a registers two pages of its own buffer (filled with HP_FR_BYTE) in a
 * fast-register MR of its PD. The peer writes 32 bytes through the STag
 * (placed: the registration works), invalidates it with a Send with
 * Invalidate that takes receive 100 (which completes naming the STag),
 * then writes through it again: refused, nothing of it in the pages, and
 * nothing behind it placed (a Write into R0 and a Send with the next MSN
 * for receive 101, which is flushed).
 */
TEST_F_TIMEOUT(hp, invalidated_stag, XF_TIMEOUT_S)
{
	struct xf_sge list = { HP_FR_OFF, HP_FR_LEN }, d = { HP_RECV2_OFF, HP_RECV_LEN };
	unsigned char *pages = self->a.buf + HP_FR_OFF;
	struct rx_stream *s = &self->st;
	struct viaduct_cqe cqe;
	__u32 fr = 0, stag;
	size_t sent, bad;

	hp_post_recv(self);
	xf_post_recv(&self->a, 101, &d, 1);
	hp_connect(_metadata, self);
	/* the Reply alone first: the FAST_REG WR goes on the established QP */
	ASSERT_EQ(0, rx_write_all(self->fd, s->p, s->len));
	sent = s->len;
	hp_established(_metadata, &self->a, self->a.id);
	ASSERT_LT(0, xf_alloc_fr(self->a.fd, self->a.pd, 2, &fr));
	stag = xf_with_key(fr, 0x42);
	memset(pages, HP_FR_BYTE, HP_FR_LEN);
	xf_fast_reg(_metadata, &self->a, stag, HP_FR_IOVA, XF_ACCESS, &list, 1,
		    VIADUCT_WC_SUCCESS);

	hp_prologue(self);
	st_write(s, stag, HP_FR_IOVA + 8, self->src, 32);
	hp_send_inv(s, stag, 1, self->src + 64, 48);
	bad = st_write(s, stag, HP_FR_IOVA + PG, self->src + 128, 64);
	st_write(s, RW, hp_to(self, HP_RW, PG), self->src, 300);
	st_send(s, 2, 0, 1, self->src, 64);
	ASSERT_EQ(0, rx_write_all(self->fd, s->p + sent, s->len - sent));

	ASSERT_EQ(1U, vd_cring_wait(&self->a.q.rcq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(100U, cqe.wr_id);
	EXPECT_EQ(VIADUCT_WC_SUCCESS, cqe.status);
	EXPECT_EQ(48U, cqe.byte_len);
	EXPECT_TRUE(cqe.flags & VIADUCT_WC_F_INVALIDATED);
	EXPECT_EQ(stag, cqe.invalidated_stag);
	EXPECT_EQ(0, memcmp(self->a.buf + HP_RECV_OFF, self->src + 64, 48));
	/* for hp_check_memory(): receive 100 was used rightly */
	memset(self->a.buf + HP_RECV_OFF, 0, 48);
	hp_expect(_metadata, self, bad, 0x1100, HP_DDP, 0xff);

	ASSERT_EQ(1U, vd_cring_wait(&self->a.q.rcq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(101U, cqe.wr_id);
	EXPECT_EQ(VIADUCT_WC_FLUSHED, cqe.status);
	EXPECT_TRUE(hp_all(self->a.buf + HP_RECV2_OFF, HP_RECV_LEN, 0));
	EXPECT_TRUE(hp_all(pages, 8, HP_FR_BYTE));
	EXPECT_EQ(0, memcmp(pages + 8, self->src, 32));
	EXPECT_TRUE(hp_all(pages + 40, HP_FR_LEN - 40, HP_FR_BYTE));
}

/* --- Operations: opcodes, versions, flags, queues -------------------- */

/* RDMAP remote operation 0x0206: unexpected opcode */
HP_CASE(unsolicited_read_response, 0x0206, HP_DDP, VIADUCT_WC_FLUSHED,
	hp_tagged(s, 0xc1, 0x42, RW, hp_to(self, HP_RW, 0), self->src, 32))
HP_CASE(unknown_opcode, 0x0206, HP_DDP, VIADUCT_WC_FLUSHED,
	hp_untagged(s, 0x41, 0x4a, 0, 1, NULL, 0))
HP_CASE(tagged_flag_on_send, 0x0206, HP_DDP, VIADUCT_WC_FLUSHED,
	hp_tagged(s, 0xc1, 0x43, RW, hp_to(self, HP_RW, 0), self->src, 32))
/* 0x0205: RDMAP version */
HP_CASE(bad_rdmap_version, 0x0205, HP_DDP, VIADUCT_WC_FLUSHED,
	hp_tagged(s, 0xc1, 0x80, RW, hp_to(self, HP_RW, 0), self->src, 32))
/* DDP version: 0x1104 tagged, 0x1206 untagged; no header copy */
HP_CASE(bad_ddp_version_tagged, 0x1104, HP_NOHDR, VIADUCT_WC_FLUSHED,
	hp_tagged(s, 0xc2, 0x40, RW, hp_to(self, HP_RW, 0), self->src, 32))
HP_CASE(bad_ddp_version_untagged, 0x1206, HP_NOHDR, VIADUCT_WC_FLUSHED,
	hp_untagged(s, 0x40, 0x43, 0, 1, self->src, 32))
/* DDP untagged 0x1201: queue number */
HP_CASE(bad_queue_number, 0x1201, HP_DDP, VIADUCT_WC_FLUSHED,
	hp_untagged(s, 0x41, 0x43, 5, 1, self->src, 32))
/* 0x0207: a Read Request carrying payload, or not Last */
HP_CASE(read_request_with_payload, 0x0207, HP_RREQ, VIADUCT_WC_FLUSHED,
	{
		unsigned char r[28 + 8] = { 0 };

		put32(r + 12, 8);
		put32(r + 16, RW);
		put64(r + 20, hp_to(self, HP_RW, 0));
		hp_untagged(s, 0x41, 0x41, 1, 1, r, sizeof(r));
	})

/*
 * 0x0207 as well: a Read Request with the L flag clear (DDP control 0x01),
 * for 64 bytes of R0, which it may read: a Read Request is one segment.
 */
HP_CASE(read_request_not_last, 0x0207, HP_RREQ, VIADUCT_WC_FLUSHED,
	hp_read_req_ddp(s, 0x01, 1, RW, hp_to(self, HP_RW, 0), 64))

/* --- Untagged queues: MSN, receives, lengths ------------------------- */

/* DDP untagged 0x1203: MSN out of range */
HP_CASE(msn_out_of_window, 0x1203, HP_DDP, VIADUCT_WC_FLUSHED,
	st_send(s, 7, 0, 1, self->src, 32))
HP_CASE(read_msn_out_of_window, 0x1203, HP_DDP, VIADUCT_WC_FLUSHED,
	hp_read_req(s, 9, RW, hp_to(self, HP_RW, 0), 8))
/* 0x1204: MO of a first segment not 0 */
HP_CASE(bad_mo, 0x1204, HP_DDP, VIADUCT_WC_FLUSHED,
	st_send(s, 1, 64, 1, self->src, 32))
/* 0x1205: a Send longer than the receive, which ends with a length error */
HP_CASE(send_too_long, 0x1205, HP_DDP, VIADUCT_WC_LOC_LEN_ERR,
	st_send(s, 1, 0, 1, self->src, HP_RECV_LEN + 4))

/* 0x1202: a Send with no receive posted */
TEST_F_TIMEOUT(hp, send_no_receive, XF_TIMEOUT_S)
{
	struct rx_stream *s = &self->st;
	size_t bad;

	hp_connect(_metadata, self);
	hp_prologue(self);
	bad = st_send(s, 1, 0, 1, self->src, 32);
	st_write(s, RW, hp_to(self, HP_RW, PG), self->src, 300);
	ASSERT_EQ(0, rx_write_all(self->fd, s->p, s->len));
	hp_established(_metadata, &self->a, self->a.id);
	hp_expect(_metadata, self, bad, 0x1202, HP_DDP, 0xff);
}

/* --- MPA framing ----------------------------------------------------- */

/* LLP 0x2002: CRC error; nothing of the FPDU is trusted, nothing copied */
HP_CASE(bad_crc, 0x2002, HP_NOHDR, VIADUCT_WC_FLUSHED,
	{
		size_t f = W(RW, hp_to(self, HP_RW, PG), 40);

		s->p[f + fpdu_len(s, f) - 1] ^= 0x01;
	})
/* a length field beyond its frame: the CRC no longer matches */
HP_CASE(mpa_length_beyond_frame, 0x2002, HP_NOHDR, VIADUCT_WC_FLUSHED,
	{
		size_t f = W(RW, hp_to(self, HP_RW, PG), 40);

		put16(s->p + f, 2 + 14 + 40 + 8);
	})
/* LLP 0x2003: a ULPDU shorter than its headers (a truncated frame) */
HP_CASE(truncated_headers, 0x2003, HP_NOHDR, VIADUCT_WC_FLUSHED,
	{
		unsigned char h[6] = { 0xc1, 0x40, 0, 0, 0, 1 };

		st_fpdu(s, h, sizeof(h), NULL, 0);
	})
HP_CASE(empty_ulpdu, 0x2003, HP_NOHDR, VIADUCT_WC_FLUSHED,
	st_fpdu(s, NULL, 0, NULL, 0))

/*
 * DDP tagged 0x1101: the largest ULPDU MPA can frame (ULPDU_Length 65535:
 * a Write of 65521 bytes, 65544 bytes on the wire with pad and CRC) aimed
 * at R0 (8 KiB). viaduct's receive buffer holds exactly one such FPDU
 * (VD_TP_BUF_SIZE). Its headers parse, so the early check of a partial
 * FPDU lets it pass; the bounds are checked against the TPT once it is
 * whole and its CRC verified (rx.c uses nothing of an FPDU before), so
 * the whole frame is read and the answer is the RFC 5041 bounds error,
 * with the segment length 65535. Nothing of it is placed.
 */
HP_CASE(oversized_ulpdu, 0x1101, HP_DDP, VIADUCT_WC_FLUSHED,
	{
		size_t len = 65535 - 14;
		unsigned char *big = malloc(len);

		ASSERT_NE(NULL, big);
		xf_fill(big, len, 5);
		st_write(s, RW, hp_to(self, HP_RW, 0), big, len);
		free(big);
		ASSERT_EQ(0xff, s->p[bad]);
		ASSERT_EQ(0xff, s->p[bad + 1]);
	})

/*
 * A flood of small frames: 20000 zero-length Writes and a Send. All are
 * taken, in order, the QP stays in RTS, nothing comes back.
 */
TEST_F_TIMEOUT(hp, flood_of_small_frames, XF_TIMEOUT_S)
{
	struct rx_stream *s = &self->st;
	struct viaduct_cqe cqe;
	struct pollfd p;
	int i;

	hp_post_recv(self);
	hp_connect(_metadata, self);
	hp_prologue(self);
	for (i = 0; i < 20000; i++)
		W(RW, hp_to(self, HP_RW, (i % 64) * 64), 0);
	st_send(s, 1, 0, 1, self->src, 48);
	ASSERT_EQ(0, rx_write_all(self->fd, s->p, s->len));
	hp_established(_metadata, &self->a, self->a.id);
	ASSERT_EQ(1U, vd_cring_wait(&self->a.q.rcq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_WC_SUCCESS, cqe.status);
	EXPECT_EQ(48U, cqe.byte_len);
	EXPECT_EQ(0, memcmp(self->a.buf + HP_RECV_OFF, self->src, 48));
	EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->a.fd, self->a.q.c.handle));
	p.fd = self->fd;
	p.events = POLLIN;
	EXPECT_EQ(0, poll(&p, 1, 0));
	memset(self->a.buf + HP_RECV_OFF, 0, 48);
	hp_check_memory(_metadata, self, 1);
}

/*
 * More Read Requests than the IRD (2) at once: the first response cannot
 * leave (viaduct's send buffer and the peer's receive buffer are small and
 * the peer reads nothing until all three are sent), so the third finds no
 * room: DDP untagged 0x1202, no buffer for the MSN.
 */
TEST_F_TIMEOUT(hp, read_requests_beyond_ird, XF_TIMEOUT_S)
{
	struct rx_stream *s = &self->st;
	int self_ns, small = 4096, i;
	size_t bad = 0;
	FILE *f;

	self_ns = rx_enter(self->a.ns);
	ASSERT_LE(0, self_ns);
	f = fopen("/proc/sys/net/ipv4/tcp_wmem", "r+");
	rx_leave(self_ns);
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(self->wmem, sizeof(self->wmem), f));
	rewind(f);
	fprintf(f, "4096 16384 65536\n");
	ASSERT_EQ(0, fclose(f));
	ASSERT_EQ(0, setsockopt(self->lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)));
	hp_post_recv(self);
	hp_connect(_metadata, self);
	hp_prologue(self);
	for (i = 1; i <= 3; i++) {
		/* 1 MiB from a's own buffer (remote read allowed) */
		bad = hp_read_req(s, i, self->a.stag, (unsigned long)self->a.buf, 1U << 20);
	}
	hp_epilogue(self);
	ASSERT_EQ(0, rx_write_all(self->fd, s->p, s->len));
	hp_established(_metadata, &self->a, self->a.id);
	/*
	 * Read nothing for a while: the Terminate then waits behind the Read
	 * Responses in a full socket when the connection manager comes to end
	 * the stream, which must wait for it rather than send its FIN alone.
	 */
	usleep(500 * 1000);
	hp_expect(_metadata, self, bad, 0x1202, HP_DDP, VIADUCT_WC_FLUSHED);
}

/*
 * A frame whose headers are bad, of which only the headers arrived: it is
 * answered at once, not when (never) the rest comes. The stall timeout is
 * raised so that only the early check can answer within the wait.
 */
TEST_F_TIMEOUT(hp, bad_header_answered_early, XF_TIMEOUT_S)
{
	struct rx_stream *s = &self->st;
	size_t bad;

	self->stall_saved = vd_param_swap(HP_STALL_PARAM, 600000);
	ASSERT_LE(0, self->stall_saved) TH_LOG("no %s", HP_STALL_PARAM);
	hp_post_recv(self);
	hp_connect(_metadata, self);
	hp_prologue(self);
	bad = hp_untagged(s, 0x41, 0x4b, 0, 1, self->src, 1000);
	ASSERT_EQ(0, rx_write_all(self->fd, s->p, bad + 2 + 18 + 10));
	hp_established(_metadata, &self->a, self->a.id);
	hp_expect(_metadata, self, bad, 0x0206, HP_DDP, VIADUCT_WC_FLUSHED);
}

/*
 * A frame that stalls half-way: the stall timeout (lowered to 1 s) ends
 * it with LLP 0x2003, the ULPDU length not matching what arrived.
 */
TEST_F_TIMEOUT(hp, stall_mid_frame, XF_TIMEOUT_S)
{
	struct rx_stream *s = &self->st;
	size_t bad;

	self->stall_saved = vd_param_swap(HP_STALL_PARAM, 1000);
	ASSERT_LE(0, self->stall_saved) TH_LOG("no %s", HP_STALL_PARAM);
	hp_post_recv(self);
	hp_connect(_metadata, self);
	hp_prologue(self);
	bad = W(RW, hp_to(self, HP_RW, PG), 2000);
	ASSERT_EQ(0, rx_write_all(self->fd, s->p, bad + 1000));
	hp_established(_metadata, &self->a, self->a.id);
	hp_expect(_metadata, self, bad, 0x2003, HP_NOHDR, VIADUCT_WC_FLUSHED);
}

/* --- MPA negotiation abuse -------------------------------------------- */

/*
 * viaduct's Request is answered with the 20 bytes @rep (and @pd_len bytes
 * of private data): the connection fails with CONNECT_ERROR, viaduct
 * closes it, the QP never reaches RTS, and a new connection works.
 */
static void hp_bad_reply(struct __test_metadata *_metadata, FIXTURE_DATA(hp) *self,
			 const unsigned char *rep, size_t pd_len)
{
	struct viaduct_cm_event ev;
	unsigned char buf[20 + 1024] = { 0 };
	char c;
	int ret;

	hp_post_recv(self);
	self->fd = hp_accept(_metadata, self, self->a.id, self->a.q.c.handle);
	ASSERT_LE(0, self->fd);
	memcpy(buf, rep, 20);
	ASSERT_EQ(0, rx_write_all(self->fd, buf, 20 + pd_len));
	ASSERT_EQ(0, hp_cm_event(&self->a, self->a.id, &ev));
	EXPECT_EQ(VIADUCT_CM_EVENT_CONNECT_ERROR, ev.type) TH_LOG("event %u", ev.type);
	ret = rx_read_full(self->fd, &c, 1, XF_WAIT_MS);
	EXPECT_EQ(-ECONNRESET, ret);
	EXPECT_NE(VIADUCT_QPS_RTS, vd_qp_state(self->a.fd, self->a.q.c.handle));
	hp_check_memory(_metadata, self, 0);
	hp_still_serves(_metadata, self);
}

static void hp_rep(unsigned char *r, __u8 flags, __u8 rev, __u16 pd_len)
{
	memcpy(r, "MPA ID Rep Frame", 16);
	r[16] = flags;
	r[17] = rev;
	put16(r + 18, pd_len);
}

TEST_F_TIMEOUT(hp, mpa_oversized_private_data, XF_TIMEOUT_S)
{
	unsigned char r[20];

	hp_rep(r, 0x40, 1, 1000);
	hp_bad_reply(_metadata, self, r, 1000);
}

TEST_F_TIMEOUT(hp, mpa_bad_revision, XF_TIMEOUT_S)
{
	unsigned char r[20];

	hp_rep(r, 0x40, 3, 0);
	hp_bad_reply(_metadata, self, r, 0);
}

TEST_F_TIMEOUT(hp, mpa_markers_requested, XF_TIMEOUT_S)
{
	unsigned char r[20];

	hp_rep(r, 0x80 | 0x40, 1, 0);
	hp_bad_reply(_metadata, self, r, 0);
}

TEST_F_TIMEOUT(hp, mpa_bad_key, XF_TIMEOUT_S)
{
	unsigned char r[20];

	hp_rep(r, 0x40, 1, 0);
	memcpy(r, "MPA ID Req Frame", 16);
	hp_bad_reply(_metadata, self, r, 0);
}

/* --- A listener flooded --------------------------------------------- */

/* The peer connects to viaduct's listener at @port and sends a Request. */
static int hp_peer_connect(FIXTURE_DATA(hp) *self, int port)
{
	static const unsigned char req[20] = "MPA ID Req Frame\x40\x01\x00\x00";
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int ns = rx_enter(self->b.ns), fd;

	if (ns < 0)
		return ns;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	rx_leave(ns);
	if (fd < 0)
		return -errno;
	inet_pton(AF_INET, "192.0.2.1", &sin.sin_addr);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    rx_write_all(fd, req, sizeof(req))) {
		close(fd);
		return -errno;
	}
	return fd;
}

/*
 * A peer floods a listener while the application reads no events. With
 * cm_channel_events at 1, once a connection request waits unread the
 * listener takes no new connection (the peer's is reset), yet an event of
 * an id that exists (the CONNECT_ERROR of an active connect on the same
 * channel) is delivered, not dropped. Once the application read the
 * request, the listener takes connections again.
 */
TEST_F_TIMEOUT(hp, listener_flood_loses_no_event, XF_TIMEOUT_S)
{
	struct viaduct_cm_listen l = { 0 };
	struct viaduct_cm_event ev;
	unsigned char r[20];
	int lid, c1, c2, c3;
	char c;

	self->chan_saved = vd_param_swap(HP_CHAN_PARAM, 1);
	ASSERT_LE(0, self->chan_saved) TH_LOG("no %s", HP_CHAN_PARAM);
	lid = xf_create_id(&self->a, 9);
	ASSERT_LT(0, lid);
	l.handle = lid;
	l.backlog = 8;
	xf_addr(&l.addr, 1, 0);
	ASSERT_EQ(0, vd_ioctl(self->a.fd, VIADUCT_IOCTL_CM_LISTEN, &l));

	c1 = hp_peer_connect(self, ntohs(l.addr.port));
	ASSERT_LE(0, c1);
	ASSERT_LT(0, vd_wait_readable(self->a.ch, XF_WAIT_MS));
	/* the channel is full: the next connection is refused */
	c2 = hp_peer_connect(self, ntohs(l.addr.port));
	if (c2 >= 0) {
		EXPECT_EQ(-ECONNRESET, rx_read_full(c2, &c, 1, XF_WAIT_MS));
		close(c2);
	}
	/* an existing id's event is still queued */
	self->fd = hp_accept(_metadata, self, self->a.id, self->a.q.c.handle);
	ASSERT_LE(0, self->fd);
	hp_rep(r, 0x40, 3, 0);
	ASSERT_EQ(0, rx_write_all(self->fd, r, sizeof(r)));
	EXPECT_EQ(-ECONNRESET, rx_read_full(self->fd, &c, 1, XF_WAIT_MS));

	ASSERT_EQ(0, xf_cm_event(&self->a, &ev, XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_CM_EVENT_CONNECT_REQUEST, ev.type);
	EXPECT_EQ((__u32)lid, ev.listen_handle);
	ASSERT_EQ(0, xf_cm_event(&self->a, &ev, XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_CM_EVENT_CONNECT_ERROR, ev.type);
	EXPECT_EQ(self->a.id, ev.handle);

	/* read: connections are taken again */
	c3 = hp_peer_connect(self, ntohs(l.addr.port));
	ASSERT_LE(0, c3);
	ASSERT_EQ(0, xf_cm_event(&self->a, &ev, XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_CM_EVENT_CONNECT_REQUEST, ev.type);
	EXPECT_EQ((__u32)lid, ev.listen_handle);
	close(c1);
	close(c3);
	vd_param_swap(HP_CHAN_PARAM, self->chan_saved);
	self->chan_saved = -1;
	hp_check_memory(_metadata, self, 0);
	hp_still_serves(_metadata, self);
}

TEST_HARNESS_MAIN
