// SPDX-License-Identifier: GPL-2.0
/*
 * The receive path against a hand-made MPA peer. viaduct connects from
 * netns xa<pid> to a plain TCP socket in xb<pid>, which answers with an MPA
 * Reply and writes FPDUs it built itself, so the test decides how the
 * byte stream is cut:
 *
 *   netns xa<pid>: vd0 on eth0 192.0.2.1  <-- veth -->  192.0.2.2 raw TCP :xb<pid>
 *
 * The namespaces and vd0 serve every test (xf_net_share()); each test has
 * its own context, listener and connection.
 *
 * The receive side reads the stream in large chunks and cuts whole FPDUs
 * out of them, keeping the bytes of an FPDU that is not whole for the next
 * read. The tests:
 *
 * coalesced      the Reply and some 700 FPDUs (RDMA Writes of 0 to 70
 *                bytes, Sends of one and of several segments between
 *                them) in one write(): every byte placed where its FPDU
 *                says, the receives complete in order, no Terminate.
 * straddled      FPDUs of every size up to the largest (a 65535-byte
 *                ULPDU) written in pieces cut inside the length field, the
 *                headers, the payload and the CRC; after each piece the
 *                test waits until viaduct's socket is empty (its Recv-Q in
 *                /proc/net/tcp), so each cut really is one between reads.
 * bad_crc, bad_stag, terminate
 *                an FPDU with a corrupt CRC, one naming an invalid STag, or
 *                a Terminate from the peer, between valid FPDUs of the same
 *                write(): what precedes it is placed, nothing that follows
 *                it is, the QP enters Error, and viaduct's Terminate (for
 *                the first two) reaches the peer with the right code.
 * slow_reader    viaduct sends RDMA Writes to a peer with a small receive
 *                buffer that reads slowly: back-pressure, and every byte
 *                arrives once, in order, with the right TO and CRC.
 * closed_in_length, closed_in_crc
 *                the peer closes the stream after a valid FPDU and the
 *                start of another (one byte of its length field, or all
 *                of it but the last CRC byte): the first is placed, the
 *                second is not, and the connection ends DISCONNECTED.
 * reset_after_data
 *                the peer writes thousands of FPDUs and a Send, then
 *                resets the connection while viaduct's receive work is
 *                still reading them: all are placed before the QP enters
 *                Error, and the connection ends DISCONNECTED -ECONNRESET.
 *
 * Variants run with and without the MPA CRC (bad_crc needs it).
 */
#include <linux/sockios.h>
#include <netinet/tcp.h>

#include "mpa_peer.h"

#define RX_REGION	(1U << 20)	/* Write targets: [0, 1 MiB) of a's buffer */
#define RX_RECV_AREA	(RX_REGION)	/* receives: 64 KiB each from here */
#define RX_RECV_SIZE	65536U
#define RX_NRECV	12
#define RX_UPCALL_PARAM	"rx_upcall_on"

/* --- The fixture ----------------------------------------------------- */

FIXTURE(rx)
{
	struct xf_side a;	/* viaduct: connects */
	struct xf_side b;	/* only its namespace: the raw peer lives there */
	int lfd;		/* the peer's listener, 192.0.2.2 */
	int port;
	int fd;			/* the peer's end of the connection */
	int a_port;		/* viaduct's end */
	int upcall_saved;	/* rx_upcall_on to put back, or -1 */
	struct rx_stream st;
	unsigned char *src;	/* payload the peer sends: a copy of a's buffer */
};

FIXTURE_VARIANT(rx)
{
	int crc;
};

FIXTURE_VARIANT_ADD(rx, crc)
{
	.crc = 1,
};

FIXTURE_VARIANT_ADD(rx, nocrc)
{
	.crc = 0,
};


FIXTURE_SETUP(rx)
{
	crc32c_init();
	ASSERT_EQ(0xe3069283U, crc32c((const unsigned char *)"123456789", 9));
	self->lfd = self->fd = -1;
	self->upcall_saved = -1;
	memset(&self->st, 0, sizeof(self->st));
	self->st.crc = variant->crc;
	ASSERT_EQ(0, xf_net_share(&self->a, &self->b));
	self->a.len = 2 * RX_REGION;
	ASSERT_EQ(0, xf_in_ns(self->a.ns, xf_side_up, &self->a));
	self->lfd = rx_listener(self->b.ns, &self->port);
	ASSERT_LE(0, self->lfd);
	self->src = malloc(self->a.len);
	ASSERT_NE(NULL, self->src);
	xf_fill(self->src, self->a.len, 3);
}

FIXTURE_TEARDOWN(rx)
{
	if (self->upcall_saved >= 0)
		vd_param_swap(RX_UPCALL_PARAM, self->upcall_saved);
	if (self->fd >= 0)
		close(self->fd);
	if (self->lfd >= 0)
		close(self->lfd);
	free(self->st.p);
	free(self->src);
	xf_side_down(&self->a);
}


/*
 * viaduct connects (CRC as the variant says) to the peer, which reads the
 * MPA Request and keeps the connection; the Reply is the first thing of
 * self->st, sent by the test with the first FPDUs behind it.
 */
static void rx_connect(struct __test_metadata *_metadata, FIXTURE_DATA(rx) *self, int crc)
{
	struct viaduct_cm_connect c = { 0 };
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	unsigned char req[20 + 512];
	struct pollfd p = { .fd = self->lfd, .events = POLLIN };
	size_t pd;
	int one = 1;

	c.handle = self->a.id;
	xf_addr(&c.dst, 2, self->port);
	c.param.qp_handle = self->a.q.c.handle;
	c.param.flags = crc ? VIADUCT_CM_F_CRC : 0;
	ASSERT_EQ(0, vd_ioctl(self->a.fd, VIADUCT_IOCTL_CM_CONNECT, &c));
	ASSERT_EQ(1, poll(&p, 1, XF_WAIT_MS));
	self->fd = accept4(self->lfd, (struct sockaddr *)&sin, &sl, SOCK_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->a_port = ntohs(sin.sin_port);
	/* every write() goes out at once: the cuts are the test's */
	setsockopt(self->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

	ASSERT_EQ(0, rx_read_full(self->fd, req, 20, XF_WAIT_MS));
	ASSERT_EQ(0, memcmp(req, "MPA ID Req Frame", 16));
	EXPECT_EQ(crc ? 0x40 : 0, req[16] & 0x40);
	pd = (size_t)req[18] << 8 | req[19];
	ASSERT_GE(512U, pd);
	ASSERT_EQ(0, rx_read_full(self->fd, req + 20, pd, XF_WAIT_MS));
	st_reply(&self->st);
}

static void rx_established(struct __test_metadata *_metadata, FIXTURE_DATA(rx) *self)
{
	struct viaduct_cm_event ev;

	ASSERT_EQ(0, xf_cm_event(&self->a, &ev, XF_WAIT_MS));
	ASSERT_EQ(VIADUCT_CM_EVENT_ESTABLISHED, ev.type) TH_LOG("status %d", ev.status);
	EXPECT_EQ(self->st.crc ? VIADUCT_CM_F_CRC : 0, ev.flags & VIADUCT_CM_F_CRC);
}


/*
 * viaduct's end of the connection in its /proc/net/tcp: the Recv-Q, what
 * arrived and the transport did not read yet. -1 if it is not there.
 */
static long rx_recvq(FIXTURE_DATA(rx) *self)
{
	unsigned int lport, rport, st;
	unsigned long txq, rxq;
	long q = -1;
	char line[256];
	FILE *f;
	int ns = rx_enter(self->a.ns);

	if (ns < 0)
		return -1;
	f = fopen("/proc/self/net/tcp", "r");
	rx_leave(ns);
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " %*d: %*x:%x %*x:%x %x %lx:%lx", &lport, &rport, &st, &txq,
			   &rxq) == 5 && st == 1 /* ESTABLISHED */ &&
		    lport == (unsigned int)self->a_port &&
		    rport == (unsigned int)self->port)
			q = rxq;
	fclose(f);
	return q;
}

/*
 * Waits until everything the peer wrote was acknowledged and read out of
 * viaduct's socket by the transport: 0, or -ETIMEDOUT.
 */
static int rx_wait_read(FIXTURE_DATA(rx) *self)
{
	uint64_t end = vd_now_ms() + XF_WAIT_MS;
	int outq;

	do {
		if (ioctl(self->fd, SIOCOUTQ, &outq))
			return -errno;
		if (!outq && rx_recvq(self) == 0)
			return 0;
		vd_sleep_ms(2);
	} while (vd_now_ms() < end);
	return -ETIMEDOUT;
}

/* Posts RX_NRECV receives of RX_RECV_SIZE, wr_id 100 + i. */
static void rx_post_recvs(FIXTURE_DATA(rx) *self)
{
	int i;

	for (i = 0; i < RX_NRECV; i++) {
		struct xf_sge d = { RX_RECV_AREA + (size_t)i * RX_RECV_SIZE, RX_RECV_SIZE };

		xf_post_recv(&self->a, 100 + i, &d, 1);
	}
}

static __u64 rx_to(FIXTURE_DATA(rx) *self, size_t off)
{
	return (unsigned long)(self->a.buf + off);
}

static int rx_zero(const unsigned char *p, size_t len)
{
	while (len--)
		if (*p++)
			return 0;
	return 1;
}

/* Nothing came from viaduct: no Terminate, no close. */
static void rx_expect_silence(struct __test_metadata *_metadata, int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	EXPECT_EQ(0, poll(&p, 1, 0)) TH_LOG("revents 0x%x", p.revents);
}

/* --- Tests ----------------------------------------------------------- */

TEST_F_TIMEOUT(rx, coalesced, XF_TIMEOUT_S)
{
	struct rx_stream *s = &self->st;
	struct viaduct_cqe cqe;
	size_t woff = 0, w = 0, i, k;
	__u32 msn = 1, nsend = 0, rlen[RX_NRECV];
	struct { size_t off, len; } wr[800];

	rx_post_recvs(self);
	rx_connect(_metadata, self, variant->crc);
	/* Writes of 0..70 bytes, every pad; a Send every 60, some in pieces */
	for (i = 0; i < 700; i++) {
		size_t len = (i * 37) % 71;

		wr[w].off = woff;
		wr[w].len = len;
		st_write(s, self->a.stag, rx_to(self, woff), self->src + woff, len);
		woff += 128;
		w++;
		if (i % 60 == 59 && nsend < RX_NRECV - 1) {
			size_t mlen = 100 + nsend * 997, seg = nsend % 2 ? 400 : mlen;
			size_t base = RX_RECV_AREA + (size_t)nsend * RX_RECV_SIZE;

			for (k = 0; k < mlen; k += seg) {
				size_t n = mlen - k < seg ? mlen - k : seg;

				st_send(s, msn, k, k + n == mlen, self->src + base + k, n);
				/* a Write between the segments of a Send */
				if (k + n < mlen) {
					wr[w].off = woff;
					wr[w].len = 8;
					st_write(s, self->a.stag, rx_to(self, woff),
						 self->src + woff, 8);
					woff += 128;
					w++;
				}
			}
			rlen[nsend++] = mlen;
			msn++;
		}
	}
	ASSERT_GE(RX_REGION, woff);
	ASSERT_GE(VD_ARRAY_SIZE(wr), w);
	/* the last Send: when it completes, everything before it is placed */
	rlen[nsend] = 4;
	st_send(s, msn, 0, 1, self->src + RX_RECV_AREA + (size_t)nsend * RX_RECV_SIZE, 4);
	nsend++;

	/* the Reply and every FPDU in one write() */
	ASSERT_EQ(0, rx_write_all(self->fd, s->p, s->len));
	rx_established(_metadata, self);
	for (i = 0; i < nsend; i++) {
		ASSERT_EQ(1U, vd_cring_wait(&self->a.q.rcq, &cqe, 1, XF_WAIT_MS))
			TH_LOG("receive %zu of %u", i, nsend);
		EXPECT_EQ(100 + i, cqe.wr_id);
		EXPECT_EQ(VIADUCT_WC_SUCCESS, cqe.status);
		EXPECT_EQ(rlen[i], cqe.byte_len);
		EXPECT_EQ(0, memcmp(self->a.buf + RX_RECV_AREA + i * RX_RECV_SIZE,
				    self->src + RX_RECV_AREA + i * RX_RECV_SIZE, rlen[i]))
			TH_LOG("receive %zu", i);
	}
	for (i = 0; i < w; i++) {
		EXPECT_EQ(0, memcmp(self->a.buf + wr[i].off, self->src + wr[i].off, wr[i].len))
			TH_LOG("write %zu", i);
		/* and not a byte beyond */
		EXPECT_TRUE(rx_zero(self->a.buf + wr[i].off + wr[i].len, 128 - wr[i].len))
			TH_LOG("write %zu", i);
	}
	EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->a.fd, self->a.q.c.handle));
	rx_expect_silence(_metadata, self->fd);
}

TEST_F_TIMEOUT(rx, straddled, XF_TIMEOUT_S)
{
	/* payload sizes: tiny, one MSS, the largest ULPDU, odd ones */
	static const size_t sizes[] = { 1, 1434, 65521, 3, 40000, 65521, 2, 0, 65521, 7 };
	/* where each piece ends: FPDU index, bytes into it (-N: N before its end) */
	static const struct { int fpdu; long at; } cuts[] = {
		{ 0, 1 },	/* one byte of the length field */
		{ 0, 2 },	/* the length field, nothing more */
		{ 0, 9 },	/* into the headers */
		{ 1, -3 },	/* the first byte of the next CRC */
		{ 2, 30000 },	/* a 64 KiB FPDU, behind a small one */
		{ 2, -1 },	/* all of it but the last CRC byte */
		{ 4, 0 },	/* at an FPDU boundary */
		{ 5, 65000 },	/* a 64 KiB FPDU read in two */
		{ 6, 17 },
		{ 8, 1 },	/* behind two short ones */
		{ 8, 60000 },
	};
	struct rx_stream *s = &self->st;
	struct viaduct_cqe cqe;
	size_t off[VD_ARRAY_SIZE(sizes) + 1], to[VD_ARRAY_SIZE(sizes)], woff = 0, prev, end;
	size_t i;

	rx_post_recvs(self);
	rx_connect(_metadata, self, variant->crc);
	for (i = 0; i < VD_ARRAY_SIZE(sizes); i++) {
		to[i] = woff;
		off[i] = st_write(s, self->a.stag, rx_to(self, woff), self->src + woff, sizes[i]);
		woff += (sizes[i] + 4096) & ~4095UL;
	}
	ASSERT_GE(RX_REGION, woff);
	off[i] = st_send(s, 1, 0, 1, self->src + RX_RECV_AREA, 5);

	prev = 0;
	for (i = 0; i < VD_ARRAY_SIZE(cuts); i++) {
		size_t f = off[cuts[i].fpdu];

		end = cuts[i].at >= 0 ? f + cuts[i].at : f + fpdu_len(s, f) + cuts[i].at;
		ASSERT_LT(prev, end);
		ASSERT_EQ(0, rx_write_all(self->fd, s->p + prev, end - prev));
		if (!i)
			rx_established(_metadata, self);
		ASSERT_EQ(0, rx_wait_read(self)) TH_LOG("piece %zu, up to byte %zu", i, end);
		prev = end;
	}
	ASSERT_EQ(0, rx_write_all(self->fd, s->p + prev, s->len - prev));

	ASSERT_EQ(1U, vd_cring_wait(&self->a.q.rcq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(100U, cqe.wr_id);
	EXPECT_EQ(VIADUCT_WC_SUCCESS, cqe.status);
	EXPECT_EQ(5U, cqe.byte_len);
	EXPECT_EQ(0, memcmp(self->a.buf + RX_RECV_AREA, self->src + RX_RECV_AREA, 5));
	for (i = 0; i < VD_ARRAY_SIZE(sizes); i++) {
		EXPECT_EQ(0, memcmp(self->a.buf + to[i], self->src + to[i], sizes[i]))
			TH_LOG("write %zu", i);
		EXPECT_TRUE(rx_zero(self->a.buf + to[i] + sizes[i], 4)) TH_LOG("write %zu", i);
	}
	EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->a.fd, self->a.q.c.handle));
	rx_expect_silence(_metadata, self->fd);
}

/*
 * Two good Writes, the bad FPDU @kind builds, a Write and a Send behind it,
 * all in one write(): the first two placed, nothing of the rest.
 */
enum { RX_BAD_CRC, RX_BAD_STAG, RX_PEER_TERMINATE };

static void rx_stops_at(struct __test_metadata *_metadata, FIXTURE_DATA(rx) *self, int kind,
			__u32 code, __u32 event)
{
	struct rx_stream *s = &self->st;
	struct viaduct_async_event ev;
	struct viaduct_query_qp q;
	struct viaduct_cqe cqe;
	unsigned char t[256];
	size_t bad, tlen;
	int ret;

	rx_post_recvs(self);
	rx_connect(_metadata, self, s->crc);
	st_write(s, self->a.stag, rx_to(self, 0), self->src, 1000);
	st_write(s, self->a.stag, rx_to(self, 4096), self->src + 4096, 3);
	switch (kind) {
	case RX_BAD_CRC:
		bad = st_write(s, self->a.stag, rx_to(self, 8192), self->src + 8192, 500);
		s->p[bad + fpdu_len(s, bad) - 2] ^= 0x10;
		break;
	case RX_BAD_STAG:
		st_write(s, self->a.stag ^ 0x100, rx_to(self, 8192), self->src + 8192, 500);
		break;
	default:
		st_terminate(s);
		break;
	}
	st_write(s, self->a.stag, rx_to(self, 12288), self->src + 12288, 700);
	st_send(s, 1, 0, 1, self->src + RX_RECV_AREA, 64);
	ASSERT_EQ(0, rx_write_all(self->fd, s->p, s->len));
	rx_established(_metadata, self);

	ASSERT_EQ(0, vd_wait_async(self->a.fd, event, self->a.q.c.handle, &ev, XF_WAIT_MS));
	EXPECT_EQ(code, ev.detail);
	ASSERT_EQ(0, vd_query_qp(self->a.fd, self->a.q.c.handle, &q));
	EXPECT_EQ(VIADUCT_QPS_ERROR, q.state);
	EXPECT_EQ(code, q.terminate);
	/* the receive the Send would have taken is flushed, not filled */
	ASSERT_EQ(1U, vd_cring_wait(&self->a.q.rcq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(100U, cqe.wr_id);
	EXPECT_EQ(VIADUCT_WC_FLUSHED, cqe.status);

	EXPECT_EQ(0, memcmp(self->a.buf, self->src, 1000));
	EXPECT_EQ(0, memcmp(self->a.buf + 4096, self->src + 4096, 3));
	EXPECT_TRUE(rx_zero(self->a.buf + 8192, 500));
	EXPECT_TRUE(rx_zero(self->a.buf + 12288, 700));
	EXPECT_TRUE(rx_zero(self->a.buf + RX_RECV_AREA, RX_RECV_SIZE));

	if (kind == RX_PEER_TERMINATE) {
		/* never answered: the stream just ends */
		ret = rx_read_full(self->fd, t, 1, XF_WAIT_MS);
		EXPECT_EQ(-ECONNRESET, ret);
		return;
	}
	/* viaduct's Terminate: untagged, queue 2, MSN 1, the code */
	ASSERT_EQ(0, rx_read_full(self->fd, t, 2, XF_WAIT_MS));
	tlen = 2 + ((size_t)t[0] << 8 | t[1]);
	tlen += (-tlen & 3) + 4;
	ASSERT_GE(sizeof(t), tlen);
	ASSERT_LE(2 + 22U + 4, tlen);
	ASSERT_EQ(0, rx_read_full(self->fd, t + 2, tlen - 2, XF_WAIT_MS));
	EXPECT_EQ(0x41, t[2]);
	EXPECT_EQ(0x47, t[3]);
	EXPECT_EQ(2, t[11]);
	EXPECT_EQ(1, t[15]);
	EXPECT_EQ(code, (__u32)t[20] << 8 | t[21]);
	if (s->crc) {
		__u32 c = crc32c(t, tlen - 4);

		EXPECT_EQ(c, (__u32)t[tlen - 4] | (__u32)t[tlen - 3] << 8 |
			     (__u32)t[tlen - 2] << 16 | (__u32)t[tlen - 1] << 24);
	}
}

TEST_F_TIMEOUT(rx, bad_crc, XF_TIMEOUT_S)
{
	if (!variant->crc)
		SKIP(return, "no CRC to get wrong");
	/* LLP, MPA: CRC error */
	rx_stops_at(_metadata, self, RX_BAD_CRC, 0x2002, VIADUCT_EVENT_QP_FATAL);
}

TEST_F_TIMEOUT(rx, bad_stag, XF_TIMEOUT_S)
{
	/* DDP tagged: invalid STag */
	rx_stops_at(_metadata, self, RX_BAD_STAG, 0x1100, VIADUCT_EVENT_QP_ACCESS_ERR);
}

TEST_F_TIMEOUT(rx, terminate, XF_TIMEOUT_S)
{
	rx_stops_at(_metadata, self, RX_PEER_TERMINATE, 0x1202, VIADUCT_EVENT_QP_FATAL);
}

/*
 * A Write, a Send, then @keep bytes of another Write (-N: all of it but
 * N), and the peer closes: the first two are done, the third never
 * touches memory, and the connection ends as any graceful close does.
 */
static void rx_closed_in(struct __test_metadata *_metadata, FIXTURE_DATA(rx) *self, long keep)
{
	struct rx_stream *s = &self->st;
	struct viaduct_cm_event ev;
	struct viaduct_cqe cqe;
	size_t last, cut;
	char c;

	rx_post_recvs(self);
	rx_connect(_metadata, self, s->crc);
	st_write(s, self->a.stag, rx_to(self, 0), self->src, 2000);
	st_send(s, 1, 0, 1, self->src + RX_RECV_AREA, 10);
	last = st_write(s, self->a.stag, rx_to(self, 8192), self->src + 8192, 1200);
	cut = keep >= 0 ? last + keep : last + fpdu_len(s, last) + keep;
	ASSERT_EQ(0, rx_write_all(self->fd, s->p, cut));
	rx_established(_metadata, self);
	ASSERT_EQ(1U, vd_cring_wait(&self->a.q.rcq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(100U, cqe.wr_id);
	EXPECT_EQ(VIADUCT_WC_SUCCESS, cqe.status);
	ASSERT_EQ(0, rx_wait_read(self));
	ASSERT_EQ(0, shutdown(self->fd, SHUT_WR));

	ASSERT_EQ(0, xf_cm_event(&self->a, &ev, XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_CM_EVENT_DISCONNECTED, ev.type);
	EXPECT_EQ(0, ev.status);
	/* viaduct closes its end too, with nothing sent before */
	EXPECT_EQ(-ECONNRESET, rx_read_full(self->fd, &c, 1, XF_WAIT_MS));
	EXPECT_EQ(0, memcmp(self->a.buf, self->src, 2000));
	EXPECT_EQ(0, memcmp(self->a.buf + RX_RECV_AREA, self->src + RX_RECV_AREA, 10));
	EXPECT_TRUE(rx_zero(self->a.buf + 8192, 1200));
	EXPECT_NE(VIADUCT_QPS_RTS, vd_qp_state(self->a.fd, self->a.q.c.handle));
}

TEST_F_TIMEOUT(rx, closed_in_length, XF_TIMEOUT_S)
{
	rx_closed_in(_metadata, self, 1);
}

TEST_F_TIMEOUT(rx, closed_in_crc, XF_TIMEOUT_S)
{
	rx_closed_in(_metadata, self, -1);
}

/*
 * The peer's last messages, then its RST: what TCP delivered before the
 * reset is placed and completed before the QP enters Error, as for a FIN.
 * A peer that saw its Send complete and then aborts has sent it. The
 * receive work does the reading here (rx_upcall_on off) and still has
 * thousands of small FPDUs in the socket when the reset arrives, so the
 * connection manager learns of the reset long before the transport has
 * read up to it: the Writes are all placed, the Send behind them fills
 * its receive, the receives after it are flushed, and DISCONNECTED says
 * -ECONNRESET.
 */
#define RX_RST_WRITES	8000U		/* of 8 bytes, 128 apart */

TEST_F_TIMEOUT(rx, reset_after_data, XF_TIMEOUT_S)
{
	struct rx_stream *s = &self->st;
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct viaduct_async_event aev;
	struct viaduct_cm_event ev;
	struct viaduct_cqe cqe;
	uint64_t end;
	size_t i;
	int outq = -1;

	ASSERT_GE(RX_REGION, RX_RST_WRITES * 128);
	rx_post_recvs(self);
	rx_connect(_metadata, self, s->crc);
	for (i = 0; i < RX_RST_WRITES; i++)
		st_write(s, self->a.stag, rx_to(self, i * 128), self->src + i * 128, 8);
	st_send(s, 1, 0, 1, self->src + RX_RECV_AREA, 64);

	self->upcall_saved = vd_param_swap(RX_UPCALL_PARAM, 0);
	ASSERT_LE(0, self->upcall_saved) TH_LOG("no %s", RX_UPCALL_PARAM);
	ASSERT_EQ(0, rx_write_all(self->fd, s->p, s->len));
	/* all of it acknowledged, i.e. in viaduct's socket: then RST */
	end = vd_now_ms() + XF_WAIT_MS;
	while (!ioctl(self->fd, SIOCOUTQ, &outq) && outq && vd_now_ms() < end)
		vd_sleep_ms(1);
	EXPECT_EQ(0, outq);
	ASSERT_EQ(0, setsockopt(self->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	close(self->fd);
	self->fd = -1;
	rx_established(_metadata, self);

	ASSERT_EQ(1U, vd_cring_wait(&self->a.q.rcq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(100U, cqe.wr_id);
	EXPECT_EQ(VIADUCT_WC_SUCCESS, cqe.status) TH_LOG("the Send before the RST was lost");
	EXPECT_EQ(64U, cqe.byte_len);
	EXPECT_EQ(0, memcmp(self->a.buf + RX_RECV_AREA, self->src + RX_RECV_AREA, 64));
	for (i = 1; i < RX_NRECV; i++) {
		ASSERT_EQ(1U, vd_cring_wait(&self->a.q.rcq, &cqe, 1, XF_WAIT_MS));
		EXPECT_EQ(100 + i, cqe.wr_id);
		EXPECT_EQ(VIADUCT_WC_FLUSHED, cqe.status);
	}
	for (i = 0; i < RX_RST_WRITES; i++)
		if (memcmp(self->a.buf + i * 128, self->src + i * 128, 8) ||
		    !rx_zero(self->a.buf + i * 128 + 8, 120))
			break;
	EXPECT_EQ(RX_RST_WRITES, i) TH_LOG("Writes placed before the RST: %zu", i);

	ASSERT_EQ(0, xf_cm_event(&self->a, &ev, XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_CM_EVENT_DISCONNECTED, ev.type);
	EXPECT_EQ(-ECONNRESET, ev.status);
	EXPECT_EQ(0, vd_wait_async(self->a.fd, VIADUCT_EVENT_QP_FATAL, self->a.q.c.handle, &aev,
				   XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(self->a.fd, self->a.q.c.handle));
}

/*
 * Back-pressure: the peer's receive buffer is small and it reads nothing
 * at first, then slowly, a few KiB at a time. viaduct's RDMA Writes fill
 * the sockets, sendmsg() finds no room, and transmission goes on from
 * the work item when the socket has room again (sk_write_space). The peer
 * parses every FPDU: the bytes of every Write arrive once, in order, with
 * the right TO and CRC, and every WR completes successfully in order.
 */
#define RX_BP_WRS	24U
#define RX_BP_LEN	(64U << 10)

static __u64 rx_get64(const unsigned char *p)
{
	__u64 v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* The whole FPDU's length if @have bytes at @in hold it, else 0. */
static size_t rx_whole(const unsigned char *in, size_t have)
{
	size_t ulen, flen;

	if (have < 2)
		return 0;
	ulen = (size_t)in[0] << 8 | in[1];
	flen = 2 + ulen + (-(2 + ulen) & 3) + 4;
	return flen <= have ? flen : 0;
}

TEST_F_TIMEOUT(rx, slow_reader, XF_TIMEOUT_S)
{
	unsigned int wrs = vd_scaled(RX_BP_WRS, 8, "RDMA Writes");
	size_t total = (size_t)wrs * RX_BP_LEN, got = 0, have = 0, flen, ulen, plen;
	int small = 16384, nfpdu = 0;
	__u64 base = 0x100000, next = base;
	unsigned char *in = malloc(2 * 65536 + 16);
	struct viaduct_cqe cqe;
	unsigned int k;
	__u32 c;

	ASSERT_NE(NULL, in);
	/* the accepted socket inherits it: a small window from the start */
	ASSERT_EQ(0, setsockopt(self->lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)));
	rx_connect(_metadata, self, variant->crc);
	ASSERT_EQ(0, rx_write_all(self->fd, self->st.p, self->st.len));
	rx_established(_metadata, self);

	xf_fill(self->a.buf, total, 11);
	for (k = 0; k < wrs; k++) {
		struct xf_sge w = { (size_t)k * RX_BP_LEN, RX_BP_LEN };

		xf_post_send(&self->a, k, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED, &w, 1,
			     0x1234, base + (size_t)k * RX_BP_LEN);
	}
	/* let the sockets fill up */
	vd_sleep_ms(300);
	while (got < total) {
		flen = rx_whole(in, have);
		if (!flen) {
			struct pollfd p = { .fd = self->fd, .events = POLLIN };
			ssize_t n;

			/* slowly: at most 4 KiB per read */
			ASSERT_EQ(1, poll(&p, 1, XF_WAIT_MS)) TH_LOG("%zu of %zu bytes", got, total);
			n = read(self->fd, in + have, 4096);
			ASSERT_LT(0, n) TH_LOG("%zu of %zu bytes", got, total);
			have += n;
			if (nfpdu % 8 == 0)
				usleep(500);
			continue;
		}
		ulen = (size_t)in[0] << 8 | in[1];
		ASSERT_LE(14U, ulen);
		/* a tagged RDMA Write to our STag, at the next TO */
		ASSERT_EQ(0x80, in[2] & 0x80);
		ASSERT_EQ(0, in[3] & 0x0f);
		ASSERT_EQ(0x1234U, (__u32)in[4] << 24 | in[5] << 16 | in[6] << 8 | in[7]);
		ASSERT_EQ(next, rx_get64(in + 8)) TH_LOG("FPDU %d", nfpdu);
		plen = ulen - 14;
		ASSERT_EQ(0, memcmp(in + 16, self->a.buf + (next - base), plen))
			TH_LOG("FPDU %d: payload", nfpdu);
		if (variant->crc) {
			c = crc32c(in, flen - 4);
			ASSERT_EQ(c, (__u32)in[flen - 4] | in[flen - 3] << 8 |
				     in[flen - 2] << 16 | (__u32)in[flen - 1] << 24)
				TH_LOG("FPDU %d: CRC", nfpdu);
		}
		next += plen;
		got += plen;
		nfpdu++;
		memmove(in, in + flen, have - flen);
		have -= flen;
	}
	EXPECT_EQ(0U, have);
	for (k = 0; k < wrs; k++) {
		ASSERT_EQ(1U, vd_cring_wait(&self->a.q.scq, &cqe, 1, XF_WAIT_MS)) TH_LOG("WR %u", k);
		EXPECT_EQ(k, cqe.wr_id);
		EXPECT_EQ(VIADUCT_WC_SUCCESS, cqe.status);
	}
	TH_LOG("%d FPDUs, %zu bytes", nfpdu, got);
	free(in);
}

TEST_HARNESS_MAIN
