// SPDX-License-Identifier: GPL-2.0
/*
 * The connection manager: listen/connect/accept/reject, private data both
 * ways, MPA revision 1 and enhanced (RFC 6581), CRC and peer-to-peer
 * negotiation, unreachable and blackholed peers, disconnects from either
 * side, a listener with many connections, event channels (poll, ack,
 * EBUSY), socket conversion, a hand-made MPA peer on either side feeding
 * valid and malformed frames, and the errno of every bad argument.
 *
 * The world, made once by main() for all tests:
 *
 *   +---------------------------+            +---------------------------+
 *   | netns cma<pid>            |            | netns cmb<pid>            |
 *   |  cma<pid> -> cva<pid>     |<--veth---->|  cvb<pid> <- cmb<pid>     |
 *   |  198.51.100.1/24          |            |  198.51.100.2/24          |
 *   |  2001:db8:51::1/64        |            |  2001:db8:51::2/64        |
 *   |  203.0.113.0/24 via .2    |            |  203.0.113.0/24 via .1    |
 *   |  (neither forwards: what  |            |                           |
 *   |  goes there is dropped)   |            |                           |
 *   |  cmx<pid> -> cvx<pid>     |            |                           |
 *   |  192.0.2.77/24 (veth to   |            |                           |
 *   |  cvy<pid>, same netns)    |            |                           |
 *   +---------------------------+            +---------------------------+
 *
 * One process drives both sides: a context sees the namespace its opener
 * was in at open() (the tests setns() before opening), and the CM's
 * sockets live there whatever namespace the caller is in later.
 */
#include <arpa/inet.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>

#include "res_util.h"

#define A 0
#define B 1

#define IP_A		"198.51.100.1"
#define IP_B		"198.51.100.2"
#define IP6_A		"2001:db8:51::1"
#define IP6_B		"2001:db8:51::2"
#define IP_X		"192.0.2.77"
#define IP_BLACKHOLE	"203.0.113.9"
#define IP_NOROUTE	"10.213.0.1"

#define EV_WAIT_MS	15000	/* TCG and the debug kernel are slow */

static char ns_name[2][32], dev_name[2][VIADUCT_NAME_SIZE], x_name[VIADUCT_NAME_SIZE];
static int ns_fd[2] = { -1, -1 };
static int root_ns = -1;

/* ------------------------------------------------------------------ */
/* The world                                                          */
/* ------------------------------------------------------------------ */

static void world_down(void)
{
	vd_sh("ip netns del %s >/dev/null 2>&1", ns_name[A]);
	vd_sh("ip netns del %s >/dev/null 2>&1", ns_name[B]);
}

static int world_up(void)
{
	int id = getpid() % 100000;
	char path[128];
	int i;

	snprintf(ns_name[A], sizeof(ns_name[A]), "cma%d", id);
	snprintf(ns_name[B], sizeof(ns_name[B]), "cmb%d", id);
	snprintf(dev_name[A], sizeof(dev_name[A]), "cma%d", id);
	snprintf(dev_name[B], sizeof(dev_name[B]), "cmb%d", id);
	snprintf(x_name, sizeof(x_name), "cmx%d", id);
	world_down();
	if (vd_sh("set -e; a=%s; b=%s; i=%d\n"
		  "ip netns add $a; ip netns add $b\n"
		  "ip -n $a link set lo up; ip -n $b link set lo up\n"
		  "ip -n $a link add cva$i type veth peer name cvb$i netns $b\n"
		  "ip -n $a addr add " IP_A "/24 dev cva$i\n"
		  "ip -n $b addr add " IP_B "/24 dev cvb$i\n"
		  "ip -n $a addr add " IP6_A "/64 dev cva$i nodad\n"
		  "ip -n $b addr add " IP6_B "/64 dev cvb$i nodad\n"
		  "ip -n $a link set cva$i up; ip -n $b link set cvb$i up\n"
		  "ip -n $a route add 203.0.113.0/24 via " IP_B "\n"
		  "ip -n $b route add 203.0.113.0/24 via " IP_A "\n"
		  "ip -n $a link add cvx$i type veth peer name cvy$i\n"
		  "ip -n $a addr add " IP_X "/24 dev cvx$i\n"
		  "ip -n $a link set cvx$i up; ip -n $a link set cvy$i up\n"
		  "ip netns exec $a %s link add $a netdev cva$i >/dev/null\n"
		  "ip netns exec $a %s link add cmx$i netdev cvx$i >/dev/null\n"
		  "ip netns exec $b %s link add $b netdev cvb$i >/dev/null\n",
		  ns_name[A], ns_name[B], id, vd_ctl_path(), vd_ctl_path(),
		  vd_ctl_path()))
		return -1;
	root_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/run/netns/%s", ns_name[i]);
		ns_fd[i] = open(path, O_RDONLY | O_CLOEXEC);
		if (ns_fd[i] < 0)
			return -1;
	}
	return root_ns < 0 ? -1 : 0;
}

static int enter_ns(int side)
{
	return setns(side < 0 ? root_ns : ns_fd[side], CLONE_NEWNET);
}

/* ------------------------------------------------------------------ */
/* Helpers                                                            */
/* ------------------------------------------------------------------ */

struct side {
	int fd;		/* /dev/viaduct, device selected */
	int ch;		/* a CM channel */
	__u32 pd;
};

/* A context in namespace @ns that selected @dev: the file or -errno. */
static int open_ctx(int ns, const char *dev)
{
	struct viaduct_select_device sel = { 0 };
	int fd, ret;

	if (enter_ns(ns))
		return -errno;
	fd = vd_open();
	ret = fd < 0 ? -errno : 0;
	enter_ns(-1);
	if (ret)
		return ret;
	strcpy(sel.name, dev);
	ret = vd_ioctl(fd, VIADUCT_IOCTL_SELECT_DEVICE, &sel);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

static int cm_channel(int fd)
{
	struct viaduct_cm_channel c = { .fd = -1 };
	int ret = vd_ioctl(fd, VIADUCT_IOCTL_CREATE_CM_CHANNEL, &c);

	return ret ? ret : c.fd;
}

static int side_open(struct side *s, int ns, const char *dev)
{
	int ret;

	memset(s, 0, sizeof(*s));
	s->ch = -1;
	s->fd = open_ctx(ns, dev);
	if (s->fd < 0)
		return s->fd;
	s->ch = cm_channel(s->fd);
	if (s->ch < 0)
		return s->ch;
	ret = vd_create_pd(s->fd);
	if (ret < 0)
		return ret;
	s->pd = ret;
	return 0;
}

static void side_close(struct side *s)
{
	if (s->ch >= 0)
		close(s->ch);
	if (s->fd >= 0)
		close(s->fd);
	s->ch = s->fd = -1;
}

/* A QP with private completion rings (nothing is mapped): handle or -errno. */
static int make_qp(struct side *s)
{
	struct viaduct_create_qp c;
	int ret;

	vd_qp_args(&c, s->pd, 0, 0);
	c.ord = 8;
	c.ird = 16;
	ret = vd_ioctl(s->fd, VIADUCT_IOCTL_CREATE_QP, &c);
	return ret ? ret : (int)c.handle;
}

static int create_id_on(int fd, int ch, __u64 user_data)
{
	struct viaduct_cm_create_id c = { .user_data = user_data, .channel_fd = ch };
	int ret = vd_ioctl(fd, VIADUCT_IOCTL_CM_CREATE_ID, &c);

	return ret ? ret : (int)c.handle;
}

static int create_id(struct side *s, __u64 user_data)
{
	return create_id_on(s->fd, s->ch, user_data);
}

static int destroy_id(int fd, __u32 h)
{
	struct viaduct_handle a = { .handle = h };

	return vd_ioctl(fd, VIADUCT_IOCTL_CM_DESTROY_ID, &a);
}

static struct viaduct_sockaddr sa(const char *ip, int port)
{
	struct viaduct_sockaddr a;

	memset(&a, 0, sizeof(a));
	a.port = htons(port);
	if (strchr(ip, ':')) {
		a.family = VIADUCT_AF_INET6;
		inet_pton(AF_INET6, ip, a.addr);
	} else {
		a.family = VIADUCT_AF_INET;
		inet_pton(AF_INET, ip, a.addr);
	}
	return a;
}

/* Listens on @ip, port chosen by the kernel: the port, or -errno. */
static int listen_on(struct side *s, __u32 id, const char *ip, __u32 backlog)
{
	struct viaduct_cm_listen l = { .handle = id, .backlog = backlog };
	int ret;

	l.addr = sa(ip, 0);
	ret = vd_ioctl(s->fd, VIADUCT_IOCTL_CM_LISTEN, &l);
	return ret ? ret : ntohs(l.addr.port);
}

static void param(struct viaduct_cm_conn_param *p, __u32 qp, __u32 flags,
		  const void *pd, __u32 len)
{
	memset(p, 0, sizeof(*p));
	p->qp_handle = qp;
	p->flags = flags;
	p->private_data = (unsigned long)pd;
	p->private_data_len = len;
}

static int connect_to(struct side *s, __u32 id, __u32 qp, const char *ip, int port,
		      __u32 flags, const void *pd, __u32 len, __u32 timeout_ms)
{
	struct viaduct_cm_connect c = { .handle = id };

	c.dst = sa(ip, port);
	param(&c.param, qp, flags, pd, len);
	c.param.timeout_ms = timeout_ms;
	return vd_ioctl(s->fd, VIADUCT_IOCTL_CM_CONNECT, &c);
}

static int accept_id(struct side *s, __u32 id, __u32 qp, __u32 flags,
		     const void *pd, __u32 len)
{
	struct viaduct_cm_accept a = { .handle = id };

	param(&a.param, qp, flags, pd, len);
	return vd_ioctl(s->fd, VIADUCT_IOCTL_CM_ACCEPT, &a);
}

static int reject_id(struct side *s, __u32 id, const void *pd, __u32 len)
{
	struct viaduct_cm_reject r = {
		.handle = id, .private_data = (unsigned long)pd, .private_data_len = len,
	};

	return vd_ioctl(s->fd, VIADUCT_IOCTL_CM_REJECT, &r);
}

static int disconnect_id(struct side *s, __u32 id, __u32 flags)
{
	struct viaduct_cm_disconnect d = { .handle = id, .flags = flags };

	return vd_ioctl(s->fd, VIADUCT_IOCTL_CM_DISCONNECT, &d);
}

static int ack_event(int fd, __u32 handle, __u32 seq)
{
	struct viaduct_cm_ack a = { .handle = handle, .seq = seq };

	return vd_ioctl(fd, VIADUCT_IOCTL_CM_ACK_EVENT, &a);
}

/* The next event of a channel within @ms: 0, or -ETIMEDOUT / -errno. */
static int read_event(int ch, struct viaduct_cm_event *ev, int ms)
{
	struct pollfd p = { .fd = ch, .events = POLLIN };
	ssize_t n;
	int ret;

	ret = poll(&p, 1, ms);
	if (ret < 0)
		return -errno;
	if (ret == 0)
		return -ETIMEDOUT;
	n = read(ch, ev, sizeof(*ev));
	if (n < 0)
		return -errno;
	return n == sizeof(*ev) ? 0 : -EIO;
}

static const char *ev_name(__u32 t)
{
	static const char *const names[] = {
		"none", "CONNECT_REQUEST", "ESTABLISHED", "REJECTED", "UNREACHABLE",
		"DISCONNECTED", "TIMEOUT", "CONNECT_ERROR", "DEVICE_REMOVED",
	};

	return t < VD_ARRAY_SIZE(names) ? names[t] : "?";
}

/* Reads the next event of @s, which must be @type, and acks it. */
#define EXPECT_EVENT(s_, type_, ev_) do {					\
	int __r = read_event((s_)->ch, (ev_), EV_WAIT_MS);			\
	ASSERT_EQ(0, __r) TH_LOG("waiting for %s: %s", ev_name(type_),		\
				 strerror(-__r));				\
	ASSERT_EQ(type_, (ev_)->type) TH_LOG("got %s (status %d), wanted %s",	\
					     ev_name((ev_)->type),		\
					     (ev_)->status, ev_name(type_));	\
	ASSERT_EQ(0, ack_event((s_)->fd, (ev_)->handle, (ev_)->seq));		\
} while (0)

static void fill(unsigned char *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 8));
}

/* A user's TCP socket made in namespace @ns. */
static int tcp_socket_in(int ns, int family)
{
	int fd, err;

	if (enter_ns(ns))
		return -errno;
	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	err = errno;
	enter_ns(-1);
	return fd < 0 ? -err : fd;
}

static int tcp_listener(int ns, const char *ip, int *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fd = tcp_socket_in(ns, AF_INET), one = 1;

	if (fd < 0)
		return fd;
	inet_pton(AF_INET, ip, &sin.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) || listen(fd, 16) ||
	    getsockname(fd, (struct sockaddr *)&sin, &len)) {
		close(fd);
		return -errno;
	}
	*port = ntohs(sin.sin_port);
	return fd;
}

static int tcp_connect(int ns, const char *ip, int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = tcp_socket_in(ns, AF_INET);

	if (fd < 0)
		return fd;
	inet_pton(AF_INET, ip, &sin.sin_addr);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		close(fd);
		return -errno;
	}
	return fd;
}

static int accept_timeout(int lfd, int ms)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };

	if (poll(&p, 1, ms) != 1)
		return -ETIMEDOUT;
	return accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
}

/* Reads exactly @len bytes within @ms: 0, -ETIMEDOUT, -ECONNRESET (EOF/RST). */
static int read_full(int fd, void *buf, size_t len, int ms)
{
	uint64_t end = vd_now_ms() + ms;
	size_t got = 0;

	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = (int64_t)(end - vd_now_ms());
		ssize_t n;

		if (left <= 0 || poll(&p, 1, left) != 1)
			return -ETIMEDOUT;
		n = read(fd, (char *)buf + got, len - got);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return -ECONNRESET;
		if (n < 0)
			return -errno;
		got += n;
	}
	return 0;
}

/* Waits until the peer closes (EOF or RST): 0, or -ETIMEDOUT. */
static int wait_closed(int fd, int ms)
{
	char buf[256];
	uint64_t end = vd_now_ms() + ms;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = (int64_t)(end - vd_now_ms());
		ssize_t n;

		if (left <= 0 || poll(&p, 1, left) != 1)
			return -ETIMEDOUT;
		n = read(fd, buf, sizeof(buf));
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return 0;
	}
}

/* MPA request/reply header as RFC 5044 draws it. */
struct mpa_rr {
	char key[16];
	__u8 flags;
	__u8 rev;
	__be16 pd_len;
} __attribute__((packed));

#define MPA_M		0x80
#define MPA_C		0x40
#define MPA_R		0x20
#define MPA_H		0x10
#define MPA_IMM_OFFER	0x02	/* viaduct's request: immediate data taken (cm.rst) */
#define MPA_REQ_KEY	"MPA ID Req Frame"
#define MPA_REP_KEY	"MPA ID Rep Frame"

/* Builds a frame into @buf: the header, IRD/ORD words if @v2, then @pdl bytes. */
static size_t mpa_frame(unsigned char *buf, const char *key, __u8 flags, __u8 rev,
			int v2, __u16 ird, __u16 ord, __u32 pdl, unsigned int seed)
{
	struct mpa_rr *h = (struct mpa_rr *)buf;
	size_t off = sizeof(*h);

	memcpy(h->key, key, 16);
	h->flags = flags;
	h->rev = rev;
	if (v2) {
		__be16 w[2] = { htons(ird), htons(ord) };

		memcpy(buf + off, w, 4);
		off += 4;
	}
	fill(buf + off, pdl, seed);
	off += pdl;
	h->pd_len = htons(off - sizeof(*h));
	return off;
}

/* ------------------------------------------------------------------ */
/* The fixture: a side in each namespace                              */
/* ------------------------------------------------------------------ */

FIXTURE(cm) {
	struct side a, b;
};

FIXTURE_SETUP(cm)
{
	self->a.fd = self->b.fd = self->a.ch = self->b.ch = -1;
	ASSERT_EQ(0, side_open(&self->a, A, dev_name[A]));
	ASSERT_EQ(0, side_open(&self->b, B, dev_name[B]));
}

FIXTURE_TEARDOWN(cm)
{
	side_close(&self->a);
	side_close(&self->b);
}

/* A connection A (listener) <- B (initiator); the handles it took. */
struct conn {
	int lid, aid, bid;	/* A's listener and accepted id, B's id */
	int aqp, bqp;
	int port;
};

static void establish(struct __test_metadata *_metadata, FIXTURE_DATA(cm) *self,
		      struct conn *c, __u32 bflags, __u32 aflags, const char *ip)
{
	unsigned char req[64], rep[48];
	struct viaduct_cm_event ev;

	fill(req, sizeof(req), 1);
	fill(rep, sizeof(rep), 2);
	c->lid = create_id(&self->a, 0xa11);
	ASSERT_LT(0, c->lid);
	c->port = listen_on(&self->a, c->lid, ip, 0);
	ASSERT_LT(0, c->port);
	c->aqp = make_qp(&self->a);
	c->bqp = make_qp(&self->b);
	ASSERT_LT(0, c->aqp);
	ASSERT_LT(0, c->bqp);
	c->bid = create_id(&self->b, 0xb0b);
	ASSERT_LT(0, c->bid);
	ASSERT_EQ(0, connect_to(&self->b, c->bid, c->bqp, strchr(ip, ':') ? IP6_A : IP_A,
				c->port, bflags, req, sizeof(req), 0));
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_CONNECT_REQUEST, &ev);
	EXPECT_EQ(c->lid, ev.listen_handle);
	EXPECT_EQ(0xa11, ev.user_data);
	ASSERT_EQ(sizeof(req), ev.private_data_len);
	EXPECT_EQ(0, memcmp(req, ev.private_data, sizeof(req)));
	EXPECT_EQ(ntohs(ev.local.port), c->port);
	c->aid = ev.handle;
	ASSERT_EQ(0, accept_id(&self->a, c->aid, c->aqp, aflags, rep, sizeof(rep)));
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_ESTABLISHED, &ev);
	EXPECT_EQ(c->aid, ev.handle);
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_ESTABLISHED, &ev);
	EXPECT_EQ(c->bid, ev.handle);
	EXPECT_EQ(0xb0b, ev.user_data);
	ASSERT_EQ(sizeof(rep), ev.private_data_len);
	EXPECT_EQ(0, memcmp(rep, ev.private_data, sizeof(rep)));
	EXPECT_EQ(c->port, ntohs(ev.peer.port));
	EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->a.fd, c->aqp));
	EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->b.fd, c->bqp));
}

/* ------------------------------------------------------------------ */
/* Connections                                                        */
/* ------------------------------------------------------------------ */

FIXTURE(neg) {
	struct side a, b;
};

FIXTURE_VARIANT(neg) {
	__u32 bflags, aflags;		/* initiator's, acceptor's */
	__u32 want;			/* VIADUCT_CM_F_* in both ESTABLISHED events */
	int enhanced;			/* IRD/ORD reported */
};

FIXTURE_VARIANT_ADD(neg, v1) {
	.bflags = VIADUCT_CM_F_MPA_V1, .want = VIADUCT_CM_F_MPA_V1,
};
FIXTURE_VARIANT_ADD(neg, v1_crc) {
	.bflags = VIADUCT_CM_F_MPA_V1 | VIADUCT_CM_F_CRC,
	.want = VIADUCT_CM_F_MPA_V1 | VIADUCT_CM_F_CRC,
};
FIXTURE_VARIANT_ADD(neg, v1_crc_by_acceptor) {
	.bflags = VIADUCT_CM_F_MPA_V1, .aflags = VIADUCT_CM_F_CRC,
	.want = VIADUCT_CM_F_MPA_V1 | VIADUCT_CM_F_CRC,
};
FIXTURE_VARIANT_ADD(neg, enhanced) {
	.enhanced = 1,
};
FIXTURE_VARIANT_ADD(neg, enhanced_crc) {
	.bflags = VIADUCT_CM_F_CRC, .want = VIADUCT_CM_F_CRC, .enhanced = 1,
};
FIXTURE_VARIANT_ADD(neg, enhanced_p2p) {
	.bflags = VIADUCT_CM_F_P2P, .aflags = VIADUCT_CM_F_P2P,
	.want = VIADUCT_CM_F_P2P, .enhanced = 1,
};
FIXTURE_VARIANT_ADD(neg, p2p_declined) {
	.bflags = VIADUCT_CM_F_P2P, .enhanced = 1,
};
FIXTURE_VARIANT_ADD(neg, acceptor_v1) {
	.aflags = VIADUCT_CM_F_MPA_V1, .want = VIADUCT_CM_F_MPA_V1, .enhanced = 1,
};

FIXTURE_SETUP(neg)
{
	self->a.fd = self->b.fd = self->a.ch = self->b.ch = -1;
	ASSERT_EQ(0, side_open(&self->a, A, dev_name[A]));
	ASSERT_EQ(0, side_open(&self->b, B, dev_name[B]));
}

FIXTURE_TEARDOWN(neg)
{
	side_close(&self->a);
	side_close(&self->b);
}

TEST_F_TIMEOUT(neg, connect_accept_disconnect, 120)
{
	unsigned char req[512], rep[300];
	__u32 mask = VIADUCT_CM_F_MPA_V1 | VIADUCT_CM_F_CRC | VIADUCT_CM_F_P2P;
	struct viaduct_cm_event ev;
	int lid, port, aid, bid, aqp, bqp;
	__u32 reqlen = variant->bflags & VIADUCT_CM_F_MPA_V1 ? 512 : 508;

	fill(req, sizeof(req), 11);
	fill(rep, sizeof(rep), 12);
	lid = create_id(&self->a, 1);
	ASSERT_LT(0, lid);
	port = listen_on(&self->a, lid, IP_A, 0);
	ASSERT_LT(0, port);
	aqp = make_qp(&self->a);
	bqp = make_qp(&self->b);
	bid = create_id(&self->b, 2);
	ASSERT_LT(0, aqp);
	ASSERT_LT(0, bqp);
	ASSERT_LT(0, bid);
	/* the most private data the frame can carry */
	ASSERT_EQ(0, connect_to(&self->b, bid, bqp, IP_A, port, variant->bflags, req,
				reqlen, 0));
	EXPECT_EQ(VIADUCT_QPS_IDLE, vd_qp_state(self->b.fd, bqp));
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_CONNECT_REQUEST, &ev);
	ASSERT_EQ(reqlen, ev.private_data_len);
	EXPECT_EQ(0, memcmp(req, ev.private_data, reqlen));
	EXPECT_EQ(variant->bflags & mask, ev.flags & mask);
	if (variant->enhanced) {
		EXPECT_EQ(16, ev.ird);
		EXPECT_EQ(8, ev.ord);
	} else {
		EXPECT_EQ(0, ev.ird);
		EXPECT_EQ(0, ev.ord);
	}
	aid = ev.handle;
	EXPECT_NE(lid, aid);
	ASSERT_EQ(0, accept_id(&self->a, aid, aqp, variant->aflags, rep, sizeof(rep)));
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_ESTABLISHED, &ev);
	EXPECT_EQ(variant->want, ev.flags & mask);
	EXPECT_EQ(0, ev.flags & VIADUCT_CM_F_ACTIVE);
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_ESTABLISHED, &ev);
	EXPECT_EQ(variant->want, ev.flags & mask);
	EXPECT_EQ(VIADUCT_CM_F_ACTIVE, ev.flags & VIADUCT_CM_F_ACTIVE);
	ASSERT_EQ(sizeof(rep), ev.private_data_len);
	EXPECT_EQ(0, memcmp(rep, ev.private_data, sizeof(rep)));
	if (variant->enhanced && !(variant->aflags & VIADUCT_CM_F_MPA_V1)) {
		EXPECT_EQ(16, ev.ird);
		EXPECT_EQ(8, ev.ord);
	}
	EXPECT_EQ(VIADUCT_AF_INET, ev.local.family);
	EXPECT_EQ(port, ntohs(ev.peer.port));
	EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->a.fd, aqp));
	EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->b.fd, bqp));

	/* graceful, from the initiator: both report it, both QPs end Idle */
	ASSERT_EQ(0, disconnect_id(&self->b, bid, 0));
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
	EXPECT_EQ(aid, ev.handle);
	EXPECT_EQ(0, ev.status);
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
	EXPECT_EQ(0, ev.status);
	EXPECT_EQ(VIADUCT_QPS_IDLE, vd_qp_state(self->a.fd, aqp));
	EXPECT_EQ(VIADUCT_QPS_IDLE, vd_qp_state(self->b.fd, bqp));
	/* a disconnected id is done; its QP is free for a new one */
	EXPECT_EQ(-EINVAL, disconnect_id(&self->b, bid, 0));
	EXPECT_EQ(0, destroy_id(self->a.fd, aid));
	EXPECT_EQ(0, destroy_id(self->b.fd, bid));
	EXPECT_EQ(0, destroy_id(self->a.fd, lid));
}

TEST_F_TIMEOUT(cm, ipv6, 120)
{
	struct viaduct_cm_event ev;
	struct conn c;

	establish(_metadata, self, &c, 0, 0, IP6_A);
	ASSERT_EQ(0, disconnect_id(&self->a, c.aid, 0));
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
	EXPECT_EQ(VIADUCT_AF_INET6, ev.peer.family);
}

TEST_F_TIMEOUT(cm, reject_with_private_data, 120)
{
	unsigned char req[16], rej[508], big[509];
	struct viaduct_cm_event ev;
	int lid, port, bid, bqp;

	fill(req, sizeof(req), 3);
	fill(rej, sizeof(rej), 4);
	lid = create_id(&self->a, 1);
	port = listen_on(&self->a, lid, "0.0.0.0", 0);
	ASSERT_LT(0, port);
	bqp = make_qp(&self->b);
	bid = create_id(&self->b, 2);
	ASSERT_EQ(0, connect_to(&self->b, bid, bqp, IP_A, port, 0, req, sizeof(req), 0));
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_CONNECT_REQUEST, &ev);
	/* an enhanced reply has room for 508 bytes after IRD and ORD */
	EXPECT_EQ(-EINVAL, reject_id(&self->a, ev.handle, big, sizeof(big)));
	ASSERT_EQ(0, reject_id(&self->a, ev.handle, rej, sizeof(rej)));
	/* answered once only */
	EXPECT_EQ(-EINVAL, reject_id(&self->a, ev.handle, NULL, 0));
	EXPECT_EQ(-EINVAL, accept_id(&self->a, ev.handle, make_qp(&self->a), 0, NULL, 0));
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_REJECTED, &ev);
	EXPECT_EQ(-ECONNREFUSED, ev.status);
	ASSERT_EQ(sizeof(rej), ev.private_data_len);
	EXPECT_EQ(0, memcmp(rej, ev.private_data, sizeof(rej)));
	EXPECT_EQ(VIADUCT_QPS_IDLE, vd_qp_state(self->b.fd, bqp));
	/* the QP is free again: a new id may use it */
	bid = create_id(&self->b, 3);
	ASSERT_EQ(0, connect_to(&self->b, bid, bqp, IP_A, port, VIADUCT_CM_F_MPA_V1, NULL, 0,
				0));
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_CONNECT_REQUEST, &ev);
	EXPECT_EQ(0, ev.private_data_len);
	/* revision 1: all 512 bytes */
	ASSERT_EQ(0, reject_id(&self->a, ev.handle, big, 509));
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_REJECTED, &ev);
	EXPECT_EQ(509, ev.private_data_len);
	EXPECT_EQ(0, memcmp(big, ev.private_data, 509));
}

TEST_F_TIMEOUT(cm, nobody_listens_is_unreachable, 60)
{
	struct viaduct_cm_event ev;
	int bid = create_id(&self->b, 7), bqp = make_qp(&self->b);

	ASSERT_EQ(0, connect_to(&self->b, bid, bqp, IP_A, 9, 0, NULL, 0, 0));
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_UNREACHABLE, &ev);
	EXPECT_EQ(-ECONNREFUSED, ev.status);
	EXPECT_EQ(7, ev.user_data);
	EXPECT_EQ(VIADUCT_QPS_IDLE, vd_qp_state(self->b.fd, bqp));
}

TEST_F_TIMEOUT(cm, blackhole_times_out, 60)
{
	struct viaduct_cm_event ev;
	int aid = create_id(&self->a, 7), aqp = make_qp(&self->a);
	uint64_t t0 = vd_now_ms(), dt;

	ASSERT_EQ(0, connect_to(&self->a, aid, aqp, IP_BLACKHOLE, 4791, 0, NULL, 0, 1500));
	ASSERT_EQ(0, read_event(self->a.ch, &ev, 30000));
	dt = vd_now_ms() - t0;
	EXPECT_EQ(VIADUCT_CM_EVENT_TIMEOUT, ev.type) TH_LOG("got %s", ev_name(ev.type));
	EXPECT_EQ(-ETIMEDOUT, ev.status);
	EXPECT_LE(1400, dt);
	EXPECT_GE(15000, dt);
	EXPECT_EQ(0, ack_event(self->a.fd, ev.handle, ev.seq));
	EXPECT_EQ(VIADUCT_QPS_IDLE, vd_qp_state(self->a.fd, aqp));
}

TEST_F_TIMEOUT(cm, disconnect_from_acceptor, 120)
{
	struct viaduct_cm_event ev;
	struct conn c;
	int ret;

	establish(_metadata, self, &c, 0, 0, IP_A);
	ASSERT_EQ(0, disconnect_id(&self->a, c.aid, 0));
	/* Closing until the peer's FIN is in (which may be at once) */
	ret = vd_qp_state(self->a.fd, c.aqp);
	EXPECT_TRUE(ret == VIADUCT_QPS_CLOSING || ret == VIADUCT_QPS_IDLE);
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
	EXPECT_EQ(0, ev.status);
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
	EXPECT_EQ(VIADUCT_QPS_IDLE, vd_qp_state(self->a.fd, c.aqp));
	EXPECT_EQ(VIADUCT_QPS_IDLE, vd_qp_state(self->b.fd, c.bqp));
}

TEST_F_TIMEOUT(cm, abort_from_initiator, 120)
{
	struct viaduct_cm_event ev;
	struct conn c;

	establish(_metadata, self, &c, 0, 0, IP_A);
	ASSERT_EQ(0, disconnect_id(&self->b, c.bid, VIADUCT_CM_DISC_ABORT));
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
	EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(self->b.fd, c.bqp));
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
	EXPECT_EQ(-ECONNRESET, ev.status);
	EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(self->a.fd, c.aqp));
	/* Error -> Idle, and the QP connects again with a new id */
	EXPECT_EQ(0, vd_modify_state(self->b.fd, c.bqp, VIADUCT_QPS_IDLE));
	c.bid = create_id(&self->b, 5);
	ASSERT_EQ(0, connect_to(&self->b, c.bid, c.bqp, IP_A, c.port, 0, NULL, 0, 0));
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_CONNECT_REQUEST, &ev);
}

TEST_F_TIMEOUT(cm, closing_the_context_disconnects, 120)
{
	struct viaduct_cm_event ev;
	struct conn c;
	long ref;

	establish(_metadata, self, &c, 0, 0, IP_A);
	ref = vd_module_refcnt();
	side_close(&self->b);
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
	EXPECT_EQ(-ECONNRESET, ev.status);
	EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(self->a.fd, c.aqp));
	/* the context and its channel held the module: both gone */
	EXPECT_EQ(ref - 2, vd_module_refcnt());
	/* and the listener too: a new connection is refused */
	side_close(&self->a);
	ASSERT_EQ(0, side_open(&self->b, B, dev_name[B]));
	c.bid = create_id(&self->b, 5);
	ASSERT_EQ(0, connect_to(&self->b, c.bid, make_qp(&self->b), IP_A, c.port, 0, NULL,
				0, 0));
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_UNREACHABLE, &ev);
}

TEST_F_TIMEOUT(cm, listener_serves_many, 240)
{
	enum { N = 16 };
	int lid, port, bid[N], bqp[N], aqp[N], aid[N], i, seen = 0;
	struct viaduct_cm_event ev;
	unsigned char pd[32];

	lid = create_id(&self->a, 0x1157);
	port = listen_on(&self->a, lid, IP_A, N);
	ASSERT_LT(0, port);
	for (i = 0; i < N; i++) {
		bqp[i] = make_qp(&self->b);
		aqp[i] = make_qp(&self->a);
		bid[i] = create_id(&self->b, 100 + i);
		ASSERT_LT(0, bqp[i]);
		ASSERT_LT(0, aqp[i]);
		ASSERT_LT(0, bid[i]);
		fill(pd, sizeof(pd), 100 + i);
		ASSERT_EQ(0, connect_to(&self->b, bid[i], bqp[i], IP_A, port, 0, pd,
					sizeof(pd), 0));
	}
	/*
	 * Requests come in any order, the private data says whose; each
	 * accept adds an ESTABLISHED to the same channel.
	 */
	for (i = 0; i < 2 * N; i++) {
		unsigned int k;

		ASSERT_EQ(0, read_event(self->a.ch, &ev, EV_WAIT_MS));
		ASSERT_EQ(0, ack_event(self->a.fd, ev.handle, ev.seq));
		if (ev.type == VIADUCT_CM_EVENT_ESTABLISHED)
			continue;
		ASSERT_EQ(VIADUCT_CM_EVENT_CONNECT_REQUEST, ev.type);
		EXPECT_EQ(0x1157, ev.user_data);
		for (k = 0; k < N; k++) {
			fill(pd, sizeof(pd), 100 + k);
			if (!memcmp(pd, ev.private_data, sizeof(pd)))
				break;
		}
		ASSERT_GT(N, k);
		ASSERT_EQ(0, seen & (1 << k));
		seen |= 1 << k;
		aid[k] = ev.handle;
		fill(pd, sizeof(pd), 200 + k);
		ASSERT_EQ(0, accept_id(&self->a, aid[k], aqp[k], 0, pd, sizeof(pd)));
	}
	ASSERT_EQ((1 << N) - 1, seen);
	for (i = 0; i < N; i++) {
		int k;

		EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_ESTABLISHED, &ev);
		k = ev.user_data - 100;
		ASSERT_LE(0, k);
		ASSERT_GT(N, k);
		fill(pd, sizeof(pd), 200 + k);
		EXPECT_EQ(0, memcmp(pd, ev.private_data, sizeof(pd)));
	}
	for (i = 0; i < N; i++) {
		EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->a.fd, aqp[i]));
		EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->b.fd, bqp[i]));
	}
	/* closing the listener leaves its connections alone */
	EXPECT_EQ(0, destroy_id(self->a.fd, lid));
	EXPECT_EQ(-ETIMEDOUT, read_event(self->b.ch, &ev, 300));
	for (i = 0; i < N; i++)
		EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->b.fd, bqp[i]));
	/* destroying the accepted ids aborts them */
	for (i = 0; i < N; i++)
		EXPECT_EQ(0, destroy_id(self->a.fd, aid[i]));
	for (i = 0; i < N; i++) {
		EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
		EXPECT_EQ(-ECONNRESET, ev.status);
	}
}

TEST_F_TIMEOUT(cm, unanswered_requests_die_with_the_listener, 120)
{
	struct viaduct_cm_event ev;
	int lid, port, bid, aid;

	lid = create_id(&self->a, 1);
	port = listen_on(&self->a, lid, IP_A, 0);
	bid = create_id(&self->b, 2);
	ASSERT_EQ(0, connect_to(&self->b, bid, make_qp(&self->b), IP_A, port, 0, NULL, 0, 0));
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_CONNECT_REQUEST, &ev);
	aid = ev.handle;
	ASSERT_EQ(0, destroy_id(self->a.fd, lid));
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_REJECTED, &ev);
	EXPECT_EQ(0, ev.private_data_len);
	/* the request's id is still there, answered */
	EXPECT_EQ(-EINVAL, accept_id(&self->a, aid, make_qp(&self->a), 0, NULL, 0));
	EXPECT_EQ(0, destroy_id(self->a.fd, aid));
}

TEST_F_TIMEOUT(cm, accept_after_the_peer_left, 120)
{
	struct viaduct_cm_event ev;
	int lid, port, bid, aid;

	lid = create_id(&self->a, 1);
	port = listen_on(&self->a, lid, IP_A, 0);
	bid = create_id(&self->b, 2);
	ASSERT_EQ(0, connect_to(&self->b, bid, make_qp(&self->b), IP_A, port, 0, NULL, 0, 0));
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_CONNECT_REQUEST, &ev);
	aid = ev.handle;
	ASSERT_EQ(0, destroy_id(self->b.fd, bid));
	vd_sleep_ms(500);
	EXPECT_EQ(-ECONNRESET, accept_id(&self->a, aid, make_qp(&self->a), 0, NULL, 0));
}

/*
 * Ids destroyed, listeners closed and contexts closed (in either order)
 * while connections are half way through their handshake; then a killed
 * process. Under the debug kernel this is what lockdep and KASAN watch.
 */
TEST_F_TIMEOUT(cm, churn, 300)
{
	long ref = vd_module_refcnt();
	struct viaduct_cm_event ev;
	unsigned char pd[32];
	int round, i, status;
	struct conn c;
	pid_t pid;

	fill(pd, sizeof(pd), 8);
	for (round = 0; round < 12; round++) {
		struct side a2, b2;
		int lid, port, id[4];

		ASSERT_EQ(0, side_open(&a2, A, dev_name[A]));
		ASSERT_EQ(0, side_open(&b2, B, dev_name[B]));
		lid = create_id(&a2, 1);
		port = listen_on(&a2, lid, round & 4 ? "0.0.0.0" : IP_A, 2);
		ASSERT_LT(0, port);
		for (i = 0; i < 4; i++) {
			id[i] = create_id(&b2, i);
			ASSERT_EQ(0, connect_to(&b2, id[i], make_qp(&b2), IP_A, port,
						i & 1 ? VIADUCT_CM_F_MPA_V1 : VIADUCT_CM_F_CRC,
						pd, sizeof(pd), 0));
		}
		vd_sleep_ms(round * 25);
		/* answer whatever arrived: accept, reject, or leave it */
		while (!read_event(a2.ch, &ev, 0)) {
			if (ev.type != VIADUCT_CM_EVENT_CONNECT_REQUEST)
				continue;
			if (round % 3 == 0)
				accept_id(&a2, ev.handle, make_qp(&a2), 0, pd, 8);
			else if (round % 3 == 1)
				reject_id(&a2, ev.handle, pd, 8);
		}
		if (round & 1)
			EXPECT_EQ(0, destroy_id(a2.fd, lid));
		if (round & 2)
			destroy_id(b2.fd, id[round & 3]);
		if (round & 1) {
			side_close(&a2);
			side_close(&b2);
		} else {
			side_close(&b2);
			side_close(&a2);
		}
	}

	/* a process killed in the middle of it all */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct side a2, b2;
		int lid, port;

		if (side_open(&a2, A, dev_name[A]) || side_open(&b2, B, dev_name[B]))
			_exit(1);
		lid = create_id(&a2, 1);
		port = listen_on(&a2, lid, IP_A, 0);
		for (i = 0; i < 8; i++)
			connect_to(&b2, create_id(&b2, i), make_qp(&b2), IP_A, port, 0, NULL,
				   0, 0);
		for (;;)
			pause();
	}
	vd_sleep_ms(300);
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));

	/* everything let go of the module, and the CM still works */
	EXPECT_EQ(ref, vd_module_refcnt());
	establish(_metadata, self, &c, 0, 0, IP_A);
	ASSERT_EQ(0, disconnect_id(&self->b, c.bid, 0));
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
}

/* ------------------------------------------------------------------ */
/* Event channels                                                     */
/* ------------------------------------------------------------------ */

TEST_F_TIMEOUT(cm, events_poll_ack_busy, 120)
{
	struct pollfd p = { .fd = self->b.ch, .events = POLLIN };
	struct viaduct_cm_event ev, evs[2];
	int bid, ch2, lid, port;
	char small[8];

	EXPECT_EQ(0, poll(&p, 1, 0));
	EXPECT_EQ(-1, read(self->b.ch, small, sizeof(small)));
	EXPECT_EQ(EINVAL, errno);
	bid = create_id(&self->b, 9);
	ASSERT_EQ(0, connect_to(&self->b, bid, make_qp(&self->b), IP_A, 9, 0, NULL, 0, 0));
	ASSERT_EQ(1, poll(&p, 1, EV_WAIT_MS));
	EXPECT_EQ(POLLIN, p.revents);
	ASSERT_EQ(sizeof(ev), read(self->b.ch, &ev, sizeof(ev)));
	EXPECT_EQ(VIADUCT_CM_EVENT_UNREACHABLE, ev.type);
	EXPECT_EQ(0, poll(&p, 1, 0));
	/* read but not acknowledged: the id stays */
	EXPECT_EQ(-EBUSY, destroy_id(self->b.fd, bid));
	EXPECT_EQ(-EINVAL, ack_event(self->b.fd, bid, ev.seq + 1000));
	EXPECT_EQ(0, ack_event(self->b.fd, bid, ev.seq));
	EXPECT_EQ(-EINVAL, ack_event(self->b.fd, bid, ev.seq));
	EXPECT_EQ(0, destroy_id(self->b.fd, bid));
	EXPECT_EQ(-ENOENT, ack_event(self->b.fd, bid, ev.seq));

	/* non-blocking read: EAGAIN; several events in one read */
	ch2 = cm_channel(self->a.fd);
	ASSERT_LE(0, ch2);
	fcntl(ch2, F_SETFL, O_NONBLOCK);
	EXPECT_EQ(-1, read(ch2, &ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	lid = create_id_on(self->a.fd, ch2, 1);
	port = listen_on(&self->a, lid, IP_A, 0);
	ASSERT_LT(0, port);
	bid = create_id(&self->b, 2);
	ASSERT_EQ(0, connect_to(&self->b, bid, make_qp(&self->b), IP_A, port, 0, NULL, 0, 0));
	bid = create_id(&self->b, 3);
	ASSERT_EQ(0, connect_to(&self->b, bid, make_qp(&self->b), IP_A, port, 0, NULL, 0, 0));
	vd_sleep_ms(1000);
	p.fd = ch2;
	ASSERT_EQ(1, poll(&p, 1, EV_WAIT_MS));
	vd_sleep_ms(1000);
	ASSERT_EQ(sizeof(evs), read(ch2, evs, sizeof(evs)));
	EXPECT_EQ(VIADUCT_CM_EVENT_CONNECT_REQUEST, evs[0].type);
	EXPECT_EQ(VIADUCT_CM_EVENT_CONNECT_REQUEST, evs[1].type);
	EXPECT_NE(evs[0].seq, evs[1].seq);
	/* an unacknowledged request keeps its id, not the listener */
	EXPECT_EQ(-EBUSY, destroy_id(self->a.fd, evs[0].handle));
	EXPECT_EQ(0, destroy_id(self->a.fd, lid));
	/* a channel closed while ids report to it stays until they go */
	close(ch2);
	EXPECT_EQ(0, ack_event(self->a.fd, evs[0].handle, evs[0].seq));
	EXPECT_EQ(0, destroy_id(self->a.fd, evs[0].handle));
	/* the other one is left to the context's close */
}

/* ------------------------------------------------------------------ */
/* Socket conversion (IT-API it_socket_convert)                       */
/* ------------------------------------------------------------------ */

TEST_F_TIMEOUT(cm, convert_connected_sockets, 120)
{
	int lfd, port, sa_fd, sb_fd, aid, bid, aqp, bqp, udp, x;
	unsigned char apd[40], bpd[24];
	struct viaduct_cm_convert_socket cv;
	struct viaduct_cm_event ev;

	fill(apd, sizeof(apd), 5);
	fill(bpd, sizeof(bpd), 6);
	lfd = tcp_listener(A, IP_A, &port);
	ASSERT_LE(0, lfd);
	sb_fd = tcp_connect(B, IP_A, port);
	ASSERT_LE(0, sb_fd);
	sa_fd = accept_timeout(lfd, EV_WAIT_MS);
	ASSERT_LE(0, sa_fd);
	aid = create_id(&self->a, 0xa);
	bid = create_id(&self->b, 0xb);
	aqp = make_qp(&self->a);
	bqp = make_qp(&self->b);

	memset(&cv, 0, sizeof(cv));
	/* a socket of another namespace is not this context's */
	cv.sockfd = sb_fd;
	cv.handle = aid;
	param(&cv.param, aqp, 0, NULL, 0);
	EXPECT_EQ(-EINVAL, vd_ioctl(self->a.fd, VIADUCT_IOCTL_CM_CONVERT_SOCKET, &cv));
	/* not a socket; not TCP; not connected */
	cv.sockfd = self->a.ch;
	EXPECT_EQ(-ENOTSOCK, vd_ioctl(self->a.fd, VIADUCT_IOCTL_CM_CONVERT_SOCKET, &cv));
	cv.sockfd = 9999;
	EXPECT_EQ(-EBADF, vd_ioctl(self->a.fd, VIADUCT_IOCTL_CM_CONVERT_SOCKET, &cv));
	ASSERT_EQ(0, enter_ns(A));
	udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ASSERT_EQ(0, enter_ns(-1));
	cv.sockfd = udp;
	EXPECT_EQ(-EINVAL, vd_ioctl(self->a.fd, VIADUCT_IOCTL_CM_CONVERT_SOCKET, &cv));
	close(udp);
	cv.sockfd = lfd;
	EXPECT_EQ(-ENOTCONN, vd_ioctl(self->a.fd, VIADUCT_IOCTL_CM_CONVERT_SOCKET, &cv));

	/* the responder first: it waits for the request */
	cv.sockfd = sa_fd;
	param(&cv.param, aqp, 0, apd, sizeof(apd));
	ASSERT_EQ(0, vd_ioctl(self->a.fd, VIADUCT_IOCTL_CM_CONVERT_SOCKET, &cv));
	/* taken: the descriptor is gone, so another id cannot have it */
	EXPECT_EQ(-1, fcntl(sa_fd, F_GETFD));
	x = create_id(&self->a, 0xc);
	cv.handle = x;
	param(&cv.param, make_qp(&self->a), 0, NULL, 0);
	EXPECT_EQ(-EBADF, vd_ioctl(self->a.fd, VIADUCT_IOCTL_CM_CONVERT_SOCKET, &cv));
	cv.sockfd = sb_fd;
	cv.handle = bid;
	param(&cv.param, bqp, VIADUCT_CM_F_ACTIVE | VIADUCT_CM_F_CRC, bpd, sizeof(bpd));
	ASSERT_EQ(0, vd_ioctl(self->b.fd, VIADUCT_IOCTL_CM_CONVERT_SOCKET, &cv));
	EXPECT_EQ(-1, fcntl(sb_fd, F_GETFD));
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_ESTABLISHED, &ev);
	EXPECT_EQ(aid, ev.handle);
	ASSERT_EQ(sizeof(bpd), ev.private_data_len);
	EXPECT_EQ(0, memcmp(bpd, ev.private_data, sizeof(bpd)));
	EXPECT_EQ(VIADUCT_CM_F_CRC, ev.flags & (VIADUCT_CM_F_CRC | VIADUCT_CM_F_ACTIVE));
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_ESTABLISHED, &ev);
	ASSERT_EQ(sizeof(apd), ev.private_data_len);
	EXPECT_EQ(0, memcmp(apd, ev.private_data, sizeof(apd)));
	EXPECT_EQ(VIADUCT_CM_F_CRC | VIADUCT_CM_F_ACTIVE,
		  ev.flags & (VIADUCT_CM_F_CRC | VIADUCT_CM_F_ACTIVE));
	EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->a.fd, aqp));
	EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->b.fd, bqp));
	ASSERT_EQ(0, disconnect_id(&self->a, aid, 0));
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
	EXPECT_EQ(VIADUCT_QPS_IDLE, vd_qp_state(self->a.fd, aqp));
	close(lfd);
}

/* CM_CONVERT_SOCKET with its data: 0 or -errno. */
static int convert_sock(struct side *s, int sockfd, __u32 id, __u32 qp,
			__u32 flags, const void *send, __u32 send_len,
			const void *recv, __u32 recv_len)
{
	struct viaduct_cm_convert_socket cv = { .sockfd = sockfd, .handle = id };

	param(&cv.param, qp, flags, NULL, 0);
	cv.send_data = (unsigned long)send;
	cv.send_len = send_len;
	cv.recv_data = (unsigned long)recv;
	cv.recv_len = recv_len;
	return vd_ioctl(s->fd, VIADUCT_IOCTL_CM_CONVERT_SOCKET, &cv);
}

/* A connected pair of user sockets, A's accepted from @lfd: 0 or -errno. */
static int tcp_pair(int lfd, int port, int *sa_fd, int *sb_fd)
{
	*sb_fd = tcp_connect(B, IP_A, port);
	if (*sb_fd < 0)
		return *sb_fd;
	*sa_fd = accept_timeout(lfd, EV_WAIT_MS);
	return *sa_fd < 0 ? -errno : 0;
}

/* The descriptor still names a TCP socket. */
static int is_socket(int fd)
{
	socklen_t len = sizeof(int);
	int type = 0;

	return !getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) &&
	       type == SOCK_STREAM;
}

TEST_F_TIMEOUT(cm, convert_takes_the_socket_away, 120)
{
	int lfd, port, sa_fd, sb_fd, d, aid, bid, aqp, bqp, pp[2], type = 0;
	socklen_t len = sizeof(type);
	int ta, tb;
	struct viaduct_cm_event ev;
	pid_t pid;
	char c;

	lfd = tcp_listener(A, IP_A, &port);
	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, tcp_pair(lfd, port, &sa_fd, &sb_fd));
	aid = create_id(&self->a, 1);
	bid = create_id(&self->b, 2);
	aqp = make_qp(&self->a);
	bqp = make_qp(&self->b);

	/* a dup()ed descriptor: refused, and both still reach the socket */
	d = dup(sa_fd);
	ASSERT_LE(0, d);
	EXPECT_EQ(-EBUSY, convert_sock(&self->a, sa_fd, aid, aqp, 0, NULL, 0, NULL, 0));
	EXPECT_TRUE(is_socket(sa_fd));
	EXPECT_TRUE(is_socket(d));
	close(d);
	/* another process holds it (fork()): refused */
	ASSERT_EQ(0, pipe(pp));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(pp[1]);
		_exit(read(pp[0], &c, 1) < 0);
	}
	close(pp[0]);
	EXPECT_EQ(-EBUSY, convert_sock(&self->a, sa_fd, aid, aqp, 0, NULL, 0, NULL, 0));
	close(pp[1]);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	EXPECT_TRUE(is_socket(sa_fd));

	/* an upper layer protocol (kTLS), where the kernel has one */
	ASSERT_EQ(0, tcp_pair(lfd, port, &ta, &tb));
	if (!setsockopt(ta, SOL_TCP, TCP_ULP, "tls", sizeof("tls"))) {
		EXPECT_EQ(-EBUSY, convert_sock(&self->a, ta, aid, aqp, 0, NULL, 0,
					       NULL, 0));
		EXPECT_TRUE(is_socket(ta));
	} else {
		TH_LOG("no kTLS here (%s): the ULP refusal is not exercised",
		       strerror(errno));
	}
	close(ta);
	close(tb);

	/* alone: taken, and the descriptor is gone */
	ASSERT_EQ(0, convert_sock(&self->a, sa_fd, aid, aqp, 0, NULL, 0, NULL, 0));
	EXPECT_EQ(-1, read(sa_fd, &c, 1));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, write(sa_fd, "x", 1));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, getsockopt(sa_fd, SOL_SOCKET, SO_TYPE, &type, &len));
	EXPECT_EQ(EBADF, errno);
	ASSERT_EQ(0, convert_sock(&self->b, sb_fd, bid, bqp, VIADUCT_CM_F_ACTIVE,
				  NULL, 0, NULL, 0));
	EXPECT_EQ(-1, fcntl(sb_fd, F_GETFD));
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_ESTABLISHED, &ev);
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_ESTABLISHED, &ev);
	ASSERT_EQ(0, disconnect_id(&self->a, aid, 0));
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
	close(lfd);
}

/*
 * Writes to @fd, whose peer reads nothing, until its send buffer is full
 * for good: a write finds no room, and nothing is in flight any more (all
 * that was sent is acknowledged, the rest waits for a window the peer
 * never opens), so no acknowledgement can free room later. 0, or -errno.
 */
static int fill_send_buffer(int fd)
{
	static const char junk[4096];
	int i, outq, unsent, sndbuf = 4096;

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)))
		return -errno;
	for (i = 0; i < 600; i++) {
		while (send(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0)
			;
		if (errno != EAGAIN)
			return -errno;
		if (ioctl(fd, SIOCOUTQ, &outq) || ioctl(fd, SIOCOUTQNSD, &unsent))
			return -errno;
		if (outq > 0 && outq == unsent)
			return 0;
		vd_sleep_ms(50);
	}
	return -ETIMEDOUT;
}

/* The MPA frame at the start of @fd's stream, read exactly: its length. */
static int read_mpa_frame(int fd, unsigned char *buf, size_t size)
{
	int pdl, ret;

	ret = read_full(fd, buf, 20, EV_WAIT_MS);
	if (ret)
		return ret;
	pdl = buf[18] << 8 | buf[19];
	if (20 + pdl > (int)size)
		return -E2BIG;
	ret = read_full(fd, buf + 20, pdl, EV_WAIT_MS);
	return ret ? ret : 20 + pdl;
}

/*
 * One conversion of a fresh pair: A converts first with @a_flags and the
 * last message @msg (if @msg_by_a), B reads that message off its socket
 * (IT-API's conversion responder), then as MPA responder reads @b_read
 * bytes of A's request (-1: all of it, -2: all and one more byte of its
 * own) and converts with them. Both must be established, or with
 * @b_read == -2 both fail.
 */
static void convert_case(struct __test_metadata *_metadata, struct side *a,
			 struct side *b, int lfd, int port, __u32 a_flags,
			 int msg_by_a, int b_read, int msg_by_b)
{
	unsigned char msg[300], got[sizeof(msg)], frame[600];
	int sa_fd, sb_fd, aid, bid, aqp, bqp, n = 0, flen;
	struct viaduct_cm_event ev;
	__u32 b_flags = a_flags & VIADUCT_CM_F_ACTIVE ? 0 : VIADUCT_CM_F_ACTIVE;

	fill(msg, sizeof(msg), a_flags + b_read * 3 + msg_by_b);
	ASSERT_EQ(0, tcp_pair(lfd, port, &sa_fd, &sb_fd));
	aid = create_id(a, 0x10);
	bid = create_id(b, 0x20);
	aqp = make_qp(a);
	bqp = make_qp(b);

	if (msg_by_b) {
		/* B, the conversion initiator, sends the message first */
		ASSERT_EQ(0, convert_sock(b, sb_fd, bid, bqp, b_flags, msg,
					  sizeof(msg), NULL, 0));
		ASSERT_EQ(0, read_full(sa_fd, got, sizeof(got), EV_WAIT_MS));
		EXPECT_EQ(0, memcmp(msg, got, sizeof(msg)));
		ASSERT_EQ(0, convert_sock(a, sa_fd, aid, aqp, a_flags, NULL, 0,
					  NULL, 0));
		goto established;
	}
	ASSERT_EQ(0, convert_sock(a, sa_fd, aid, aqp, a_flags,
				  msg_by_a ? msg : NULL,
				  msg_by_a ? sizeof(msg) : 0, NULL, 0));
	if (msg_by_a) {
		/* read exactly the message: the MPA frame follows it */
		ASSERT_EQ(0, read_full(sb_fd, got, sizeof(got), EV_WAIT_MS));
		EXPECT_EQ(0, memcmp(msg, got, sizeof(msg)));
	}
	if (b_read) {
		/* B read (part of) A's request with its own protocol */
		ASSERT_TRUE(a_flags & VIADUCT_CM_F_ACTIVE);
		if (b_read > 0) {
			ASSERT_EQ(0, read_full(sb_fd, frame, b_read, EV_WAIT_MS));
			n = b_read;
		} else {
			flen = read_mpa_frame(sb_fd, frame, sizeof(frame));
			ASSERT_LT(20, flen);
			n = flen;
			if (b_read == -2)
				frame[n++] = 0x5a;
		}
	}
	ASSERT_EQ(0, convert_sock(b, sb_fd, bid, bqp, b_flags, NULL, 0,
				  n ? frame : NULL, n));
	if (b_read == -2) {
		/* bytes past the request: nothing to give the transport */
		EXPECT_EVENT(b, VIADUCT_CM_EVENT_CONNECT_ERROR, &ev);
		EXPECT_EQ(-EPROTO, ev.status);
		EXPECT_EVENT(a, VIADUCT_CM_EVENT_CONNECT_ERROR, &ev);
		return;
	}
established:
	EXPECT_EVENT(a, VIADUCT_CM_EVENT_ESTABLISHED, &ev);
	EXPECT_EQ(aid, ev.handle);
	EXPECT_EVENT(b, VIADUCT_CM_EVENT_ESTABLISHED, &ev);
	EXPECT_EQ(bid, ev.handle);
	EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(a->fd, aqp));
	EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(b->fd, bqp));
	ASSERT_EQ(0, disconnect_id(a, aid, 0));
	EXPECT_EVENT(b, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
	EXPECT_EVENT(a, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
}

TEST_F_TIMEOUT(cm, convert_carries_messages_and_bytes_read, 240)
{
	static const struct {
		const char *what;
		__u32 a_flags;
		int msg_by_a, b_read, msg_by_b;
	} cases[] = {
		{ "IT-API: B sends the message, answers A's request",
		  VIADUCT_CM_F_ACTIVE, 0, 0, 1 },
		{ "B sends the message, then the request", 0, 0, 0, 1 },
		{ "message from the MPA initiator", VIADUCT_CM_F_ACTIVE, 1, 0, 0 },
		{ "message from the MPA responder", 0, 1, 0, 0 },
		{ "7 bytes of the request read", VIADUCT_CM_F_ACTIVE, 0, 7, 0 },
		{ "the whole request read", VIADUCT_CM_F_ACTIVE, 0, -1, 0 },
		{ "message, then the request read", VIADUCT_CM_F_ACTIVE, 1, -1, 0 },
		{ "a byte past the request read", VIADUCT_CM_F_ACTIVE, 0, -2, 0 },
	};
	unsigned char big[VIADUCT_CM_CONVERT_SEND_MAX + 1] = { 0 };
	struct viaduct_cm_convert_socket cv;
	int lfd, port, sa_fd, sb_fd, aid, aqp;
	unsigned int i;

	lfd = tcp_listener(A, IP_A, &port);
	ASSERT_LE(0, lfd);
	for (i = 0; i < VD_ARRAY_SIZE(cases); i++) {
		TH_LOG("case: %s", cases[i].what);
		convert_case(_metadata, &self->a, &self->b, lfd, port,
			     cases[i].a_flags, cases[i].msg_by_a,
			     cases[i].b_read, cases[i].msg_by_b);
	}

	/* bad data: refused, and the descriptor is left alone */
	ASSERT_EQ(0, tcp_pair(lfd, port, &sa_fd, &sb_fd));
	aid = create_id(&self->a, 1);
	aqp = make_qp(&self->a);
	EXPECT_EQ(-EINVAL, convert_sock(&self->a, sa_fd, aid, aqp, 0, big,
					sizeof(big), NULL, 0));
	EXPECT_EQ(-EINVAL, convert_sock(&self->a, sa_fd, aid, aqp, 0, NULL, 0,
					big, VIADUCT_CM_CONVERT_RECV_MAX + 1));
	/* an initiator cannot have read a reply it has not asked for */
	EXPECT_EQ(-EINVAL, convert_sock(&self->a, sa_fd, aid, aqp,
					VIADUCT_CM_F_ACTIVE, NULL, 0, big, 4));
	EXPECT_EQ(-EFAULT, convert_sock(&self->a, sa_fd, aid, aqp, 0,
					(void *)8, 4, NULL, 0));
	EXPECT_EQ(-EFAULT, convert_sock(&self->a, sa_fd, aid, aqp, 0, NULL, 0,
					(void *)8, 4));
	EXPECT_TRUE(is_socket(sa_fd));
	/* an older binary's argument (without the data) still converts */
	memset(&cv, 0, sizeof(cv));
	cv.sockfd = sa_fd;
	cv.handle = aid;
	param(&cv.param, aqp, 0, NULL, 0);
	EXPECT_EQ(0, vd_ioctl(self->a.fd,
			      _IOC(_IOC_WRITE, VIADUCT_IOCTL_MAGIC, 0x28,
				   VIADUCT_CM_CONVERT_SOCKET_SIZE_VER0), &cv));
	EXPECT_EQ(-1, fcntl(sa_fd, F_GETFD));
	close(sb_fd);

	/* no room for the message now: EAGAIN, nothing taken or sent */
	ASSERT_EQ(0, tcp_pair(lfd, port, &sa_fd, &sb_fd));
	ASSERT_EQ(0, fill_send_buffer(sa_fd));
	aid = create_id(&self->a, 2);
	EXPECT_EQ(-EAGAIN, convert_sock(&self->a, sa_fd, aid, make_qp(&self->a), 0,
					big, VIADUCT_CM_CONVERT_SEND_MAX, NULL, 0));
	EXPECT_TRUE(is_socket(sa_fd));
	close(sa_fd);
	close(sb_fd);
	close(lfd);
}

/* ------------------------------------------------------------------ */
/* Hand-off (IT-API it_handoff)                                       */
/* ------------------------------------------------------------------ */

static int handoff(struct side *s, __u32 id, struct viaduct_sockaddr to)
{
	struct viaduct_cm_handoff h = { .handle = id, .addr = to };

	return vd_ioctl(s->fd, VIADUCT_IOCTL_CM_HANDOFF, &h);
}

/*
 * Another process with a context of its own listening on A: it reports
 * its port on @port_fd, expects one CONNECT_REQUEST carrying @pd and
 * accepts it, then waits for the disconnect. Exit status 0, or the step
 * that failed.
 */
static int handoff_child(int port_fd, const unsigned char *pd, size_t len)
{
	struct viaduct_cm_event ev;
	struct side s;
	int lid, port, qp;

	if (side_open(&s, A, dev_name[A]))
		return 10;
	lid = create_id(&s, 0x77);
	port = listen_on(&s, lid, IP_A, 0);
	if (port < 0)
		return 11;
	if (write(port_fd, &port, sizeof(port)) != sizeof(port))
		return 12;
	if (read_event(s.ch, &ev, 4 * EV_WAIT_MS))
		return 13;
	if (ev.type != VIADUCT_CM_EVENT_CONNECT_REQUEST ||
	    ev.listen_handle != (__u32)lid || ev.user_data != 0x77 ||
	    ev.private_data_len != len || memcmp(ev.private_data, pd, len))
		return 14;
	if (ack_event(s.fd, ev.handle, ev.seq))
		return 15;
	qp = make_qp(&s);
	if (qp < 0 || accept_id(&s, ev.handle, qp, 0, NULL, 0))
		return 16;
	if (read_event(s.ch, &ev, EV_WAIT_MS) ||
	    ev.type != VIADUCT_CM_EVENT_ESTABLISHED)
		return 17;
	ack_event(s.fd, ev.handle, ev.seq);
	if (read_event(s.ch, &ev, EV_WAIT_MS) ||
	    ev.type != VIADUCT_CM_EVENT_DISCONNECTED)
		return 18;
	ack_event(s.fd, ev.handle, ev.seq);
	side_close(&s);
	return 0;
}

TEST_F_TIMEOUT(cm, handoff_to_another_process, 120)
{
	struct viaduct_sockaddr any = { .family = 0 }, bad;
	struct viaduct_cm_handoff h;
	int lid, port, cport, bid, bqp, pp[2], status, req;
	struct viaduct_cm_event ev;
	unsigned char pd[48];
	pid_t pid, unpriv;

	fill(pd, sizeof(pd), 11);
	lid = create_id(&self->a, 1);
	port = listen_on(&self->a, lid, IP_A, 0);
	ASSERT_LT(0, port);
	ASSERT_EQ(0, pipe(pp));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(pp[0]);
		_exit(handoff_child(pp[1], pd, sizeof(pd)));
	}
	close(pp[1]);
	ASSERT_EQ(sizeof(cport), read(pp[0], &cport, sizeof(cport)));
	close(pp[0]);

	bid = create_id(&self->b, 2);
	bqp = make_qp(&self->b);
	ASSERT_EQ(0, connect_to(&self->b, bid, bqp, IP_A, port, 0, pd, sizeof(pd), 0));
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_CONNECT_REQUEST, &ev);
	req = ev.handle;

	/* bad arguments */
	EXPECT_EQ(-EINVAL, handoff(&self->a, req, sa(IP_A, 0)));
	memset(&h, 0, sizeof(h));
	h.handle = req;
	h.reserved = 1;
	h.addr = sa(IP_A, cport);
	EXPECT_EQ(-EINVAL, vd_ioctl(self->a.fd, VIADUCT_IOCTL_CM_HANDOFF, &h));
	bad = sa(IP_A, cport);
	bad.family = 0;		/* any address, yet one is given */
	EXPECT_EQ(-EINVAL, handoff(&self->a, req, bad));
	EXPECT_EQ(-EINVAL, handoff(&self->a, lid, sa(IP_A, cport)));
	EXPECT_EQ(-ENOENT, handoff(&self->a, 0x7ffffff0, sa(IP_A, cport)));
	/* nobody listens there: refused, and the request stays */
	EXPECT_EQ(-ENOENT, handoff(&self->a, req, sa(IP_A, 9)));
	EXPECT_EQ(-ENOENT, handoff(&self->a, req, sa(IP6_A, cport)));
	EXPECT_EQ(-ENOENT, handoff(&self->a, req, sa(IP_X, cport)));

	/* another user without CAP_NET_ADMIN may not hand to root's listener */
	unpriv = fork();
	ASSERT_LE(0, unpriv);
	if (!unpriv) {
		if (setresuid(65534, 65534, 65534))
			_exit(2);
		_exit(handoff(&self->a, req, sa(IP_A, cport)) == -EPERM ? 0 : 1);
	}
	ASSERT_EQ(unpriv, waitpid(unpriv, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	any.port = htons(cport);
	ASSERT_EQ(0, handoff(&self->a, req, any));
	/* the request is gone for its first owner */
	EXPECT_EQ(-ENOENT, accept_id(&self->a, req, make_qp(&self->a), 0, NULL, 0));
	EXPECT_EQ(-ENOENT, reject_id(&self->a, req, NULL, 0));
	EXPECT_EQ(-ENOENT, destroy_id(self->a.fd, req));
	/* the other process accepted it */
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_ESTABLISHED, &ev);
	EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->b.fd, bqp));
	ASSERT_EQ(0, disconnect_id(&self->b, bid, 0));
	EXPECT_EVENT(&self->b, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* and the first listener heard nothing more of it */
	EXPECT_EQ(-ETIMEDOUT, read_event(self->a.ch, &ev, 500));
}

/* ------------------------------------------------------------------ */
/* A hand-made MPA initiator against a CM listener                    */
/* ------------------------------------------------------------------ */

FIXTURE(rawreq) {
	struct side a;
	int lid, port;
	long req_tmo_saved;	/* mpa_req_timeout_ms to restore, or -1 */
};

/*
 * A listener's child waits mpa_req_timeout_ms (10 s by default) for the
 * rest of a truncated request; the truncated variants lower it to this
 * while their own connection waits, and restore it before the next.
 */
#define REQ_TMO_PARAM	"mpa_req_timeout_ms"
#define REQ_TMO_TEST_MS	1000

FIXTURE_VARIANT(rawreq) {
	const char *key;
	__u8 flags, rev;
	int v2;			/* IRD/ORD words */
	__u32 pdl;		/* private data after them */
	int pd_len_override;	/* > 0: the header's PD_Length */
	int truncate;		/* > 0: send this many bytes, then wait */
	int valid;		/* a CONNECT_REQUEST must come */
};

FIXTURE_VARIANT_ADD(rawreq, v1_512) {
	.key = MPA_REQ_KEY, .rev = 1, .pdl = 512, .valid = 1,
};
FIXTURE_VARIANT_ADD(rawreq, v1_h_ignored) {
	.key = MPA_REQ_KEY, .rev = 1, .flags = MPA_H, .pdl = 100, .valid = 1,
};
FIXTURE_VARIANT_ADD(rawreq, v2_enhanced_508) {
	.key = MPA_REQ_KEY, .rev = 2, .flags = MPA_H, .v2 = 1, .pdl = 508, .valid = 1,
};
FIXTURE_VARIANT_ADD(rawreq, v2_plain) {
	.key = MPA_REQ_KEY, .rev = 2, .pdl = 7, .valid = 1,
};
FIXTURE_VARIANT_ADD(rawreq, v2_crc_p2p) {
	.key = MPA_REQ_KEY, .rev = 2, .flags = MPA_H | MPA_C, .v2 = 1, .pdl = 1, .valid = 1,
};
FIXTURE_VARIANT_ADD(rawreq, reply_key) {
	.key = MPA_REP_KEY, .rev = 1, .pdl = 4,
};
FIXTURE_VARIANT_ADD(rawreq, garbage_key) {
	.key = "GET / HTTP/1.1\r\n", .rev = 1,
};
FIXTURE_VARIANT_ADD(rawreq, rev0) {
	.key = MPA_REQ_KEY, .rev = 0,
};
FIXTURE_VARIANT_ADD(rawreq, rev3) {
	.key = MPA_REQ_KEY, .rev = 3,
};
FIXTURE_VARIANT_ADD(rawreq, markers) {
	.key = MPA_REQ_KEY, .rev = 1, .flags = MPA_M,
};
FIXTURE_VARIANT_ADD(rawreq, reject_flag_in_request) {
	.key = MPA_REQ_KEY, .rev = 1, .flags = MPA_R,
};
FIXTURE_VARIANT_ADD(rawreq, pd_513) {
	.key = MPA_REQ_KEY, .rev = 1, .pdl = 513,
};
FIXTURE_VARIANT_ADD(rawreq, pd_65535) {
	.key = MPA_REQ_KEY, .rev = 1, .pdl = 0, .pd_len_override = 65535,
};
FIXTURE_VARIANT_ADD(rawreq, enhanced_too_short) {
	.key = MPA_REQ_KEY, .rev = 2, .flags = MPA_H, .pdl = 2,
};
FIXTURE_VARIANT_ADD(rawreq, truncated_header) {
	.key = MPA_REQ_KEY, .rev = 1, .pdl = 10, .truncate = 11,
};
FIXTURE_VARIANT_ADD(rawreq, truncated_private_data) {
	.key = MPA_REQ_KEY, .rev = 1, .pdl = 100, .truncate = 60,
};

FIXTURE_SETUP(rawreq)
{
	self->a.fd = self->a.ch = -1;
	self->req_tmo_saved = -1;
	ASSERT_EQ(0, side_open(&self->a, A, dev_name[A]));
	self->lid = create_id(&self->a, 0x5eed);
	ASSERT_LT(0, self->lid);
	self->port = listen_on(&self->a, self->lid, IP_A, 0);
	ASSERT_LT(0, self->port);
}

FIXTURE_TEARDOWN(rawreq)
{
	if (self->req_tmo_saved >= 0)
		vd_param_swap(REQ_TMO_PARAM, self->req_tmo_saved);
	side_close(&self->a);
}

TEST_F_TIMEOUT(rawreq, request, 90)
{
	unsigned char buf[1024], rep[1024];
	struct viaduct_cm_event ev;
	struct mpa_rr *h = (struct mpa_rr *)buf;
	size_t len;
	int fd, ret;

	len = mpa_frame(buf, variant->key, variant->flags, variant->rev, variant->v2, 5, 3,
			variant->pdl, 77);
	if (variant->pd_len_override)
		h->pd_len = htons(variant->pd_len_override);
	if (variant->flags & MPA_C && variant->v2) {
		/* P2P with a zero-length Write as RTR */
		buf[20] |= 0x80;
		buf[22] |= 0x80;
	}
	if (variant->truncate) {
		self->req_tmo_saved = vd_param_swap(REQ_TMO_PARAM, REQ_TMO_TEST_MS);
		ASSERT_LE(0, self->req_tmo_saved) TH_LOG("no %s", REQ_TMO_PARAM);
	}
	fd = tcp_connect(B, IP_A, self->port);
	ASSERT_LE(0, fd);
	if (variant->truncate)
		len = variant->truncate;
	ASSERT_EQ(len, write(fd, buf, len));

	if (!variant->valid) {
		/*
		 * Dropped without a trace: the connection closes, no event
		 * (a truncated request once the child's timeout fired).
		 */
		ret = wait_closed(fd, EV_WAIT_MS);
		EXPECT_EQ(0, ret);
		EXPECT_EQ(-ETIMEDOUT, read_event(self->a.ch, &ev, 200));
		close(fd);
		if (self->req_tmo_saved >= 0) {
			vd_param_swap(REQ_TMO_PARAM, self->req_tmo_saved);
			self->req_tmo_saved = -1;
		}
		/* and the listener still works */
		len = mpa_frame(buf, MPA_REQ_KEY, 0, 1, 0, 0, 0, 3, 1);
		fd = tcp_connect(B, IP_A, self->port);
		ASSERT_LE(0, fd);
		ASSERT_EQ(len, write(fd, buf, len));
		EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_CONNECT_REQUEST, &ev);
		close(fd);
		return;
	}

	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_CONNECT_REQUEST, &ev);
	ASSERT_EQ(variant->pdl, ev.private_data_len);
	fill(rep, variant->pdl, 77);
	EXPECT_EQ(0, memcmp(rep, ev.private_data, variant->pdl));
	if (variant->v2) {
		EXPECT_EQ(5, ev.ird);
		EXPECT_EQ(3, ev.ord);
	}
	EXPECT_EQ(variant->rev == 1 ? VIADUCT_CM_F_MPA_V1 : 0, ev.flags & VIADUCT_CM_F_MPA_V1);
	ASSERT_EQ(0, accept_id(&self->a, ev.handle, make_qp(&self->a), VIADUCT_CM_F_P2P,
			       "ok", 2));
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_ESTABLISHED, &ev);

	/* the reply, as the RFCs have it */
	h = (struct mpa_rr *)rep;
	ASSERT_EQ(0, read_full(fd, rep, sizeof(*h), EV_WAIT_MS));
	EXPECT_EQ(0, memcmp(h->key, MPA_REP_KEY, 16));
	EXPECT_EQ(variant->rev, h->rev);
	EXPECT_EQ(0, h->flags & (MPA_M | MPA_R));
	EXPECT_EQ(variant->flags & MPA_C, h->flags & MPA_C);
	if (variant->v2) {
		__u16 w[2];

		EXPECT_EQ(MPA_H, h->flags & MPA_H);
		ASSERT_EQ(6, ntohs(h->pd_len));
		ASSERT_EQ(0, read_full(fd, rep + sizeof(*h), 6, EV_WAIT_MS));
		memcpy(w, rep + sizeof(*h), 4);
		/* ours: IRD 16; ORD min(8, the initiator's IRD 5) */
		EXPECT_EQ(16, ntohs(w[0]) & 0x3fff);
		EXPECT_EQ(5, ntohs(w[1]) & 0x3fff);
		if (variant->flags & MPA_C) {
			EXPECT_EQ(0x8000, ntohs(w[0]) & 0xc000);
			EXPECT_EQ(0x8000, ntohs(w[1]) & 0xc000);
		}
		EXPECT_EQ(0, memcmp(rep + sizeof(*h) + 4, "ok", 2));
	} else {
		EXPECT_EQ(0, h->flags & MPA_H);
		ASSERT_EQ(2, ntohs(h->pd_len));
		ASSERT_EQ(0, read_full(fd, rep + sizeof(*h), 2, EV_WAIT_MS));
		EXPECT_EQ(0, memcmp(rep + sizeof(*h), "ok", 2));
	}
	close(fd);
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_DISCONNECTED, &ev);
}

/* ------------------------------------------------------------------ */
/* A hand-made MPA responder against a CM initiator                   */
/* ------------------------------------------------------------------ */

FIXTURE(rawrep) {
	struct side a;
	int lfd, port;
};

FIXTURE_VARIANT(rawrep) {
	__u32 cflags;		/* the initiator's */
	const char *key;
	__u8 flags, rev;
	int v2;
	__u16 ird, ord;
	__u32 pdl;
	int pd_len_override;
	int action;		/* 0: send the reply; 1: close; 2: stay silent */
	__u32 timeout_ms;
	__u32 expect;		/* the initiator's event */
	int status;
	__u32 want_flags;	/* ESTABLISHED: VIADUCT_CM_F_* in effect */
};

FIXTURE_VARIANT_ADD(rawrep, enhanced) {
	.key = MPA_REP_KEY, .rev = 2, .flags = MPA_H, .v2 = 1, .ird = 4, .ord = 2, .pdl = 33,
	.expect = VIADUCT_CM_EVENT_ESTABLISHED,
};
FIXTURE_VARIANT_ADD(rawrep, rev1_answers_rev2) {
	.key = MPA_REP_KEY, .rev = 1, .pdl = 512,
	.expect = VIADUCT_CM_EVENT_ESTABLISHED, .want_flags = VIADUCT_CM_F_MPA_V1,
};
FIXTURE_VARIANT_ADD(rawrep, crc_insisted) {
	.key = MPA_REP_KEY, .rev = 2, .flags = MPA_H | MPA_C, .v2 = 1,
	.expect = VIADUCT_CM_EVENT_ESTABLISHED, .want_flags = VIADUCT_CM_F_CRC,
};
FIXTURE_VARIANT_ADD(rawrep, p2p_write_rtr) {
	.cflags = VIADUCT_CM_F_P2P, .key = MPA_REP_KEY, .rev = 2, .flags = MPA_H, .v2 = 1,
	.ird = 0x8000 | 1, .ord = 0x8000 | 1,
	.expect = VIADUCT_CM_EVENT_ESTABLISHED, .want_flags = VIADUCT_CM_F_P2P,
};
FIXTURE_VARIANT_ADD(rawrep, p2p_without_rtr) {
	.cflags = VIADUCT_CM_F_P2P, .key = MPA_REP_KEY, .rev = 2, .flags = MPA_H, .v2 = 1,
	.ird = 0x8000 | 1, .ord = 1,
	.expect = VIADUCT_CM_EVENT_CONNECT_ERROR, .status = -EPROTO,
};
FIXTURE_VARIANT_ADD(rawrep, reject) {
	.key = MPA_REP_KEY, .rev = 2, .flags = MPA_H | MPA_R, .v2 = 1, .pdl = 508,
	.expect = VIADUCT_CM_EVENT_REJECTED, .status = -ECONNREFUSED,
};
FIXTURE_VARIANT_ADD(rawrep, rev2_to_rev1_request) {
	.cflags = VIADUCT_CM_F_MPA_V1, .key = MPA_REP_KEY, .rev = 2, .flags = MPA_H, .v2 = 1,
	.expect = VIADUCT_CM_EVENT_CONNECT_ERROR, .status = -EPROTO,
};
FIXTURE_VARIANT_ADD(rawrep, request_key) {
	.key = MPA_REQ_KEY, .rev = 2, .flags = MPA_H, .v2 = 1,
	.expect = VIADUCT_CM_EVENT_CONNECT_ERROR, .status = -EPROTO,
};
FIXTURE_VARIANT_ADD(rawrep, markers) {
	.key = MPA_REP_KEY, .rev = 2, .flags = MPA_H | MPA_M, .v2 = 1,
	.expect = VIADUCT_CM_EVENT_CONNECT_ERROR, .status = -EPROTO,
};
FIXTURE_VARIANT_ADD(rawrep, rev3) {
	.key = MPA_REP_KEY, .rev = 3,
	.expect = VIADUCT_CM_EVENT_CONNECT_ERROR, .status = -EPROTO,
};
FIXTURE_VARIANT_ADD(rawrep, pd_600) {
	.key = MPA_REP_KEY, .rev = 1, .pdl = 600,
	.expect = VIADUCT_CM_EVENT_CONNECT_ERROR, .status = -EPROTO,
};
FIXTURE_VARIANT_ADD(rawrep, enhanced_pd_3) {
	.key = MPA_REP_KEY, .rev = 2, .flags = MPA_H, .pd_len_override = 3, .pdl = 3,
	.expect = VIADUCT_CM_EVENT_CONNECT_ERROR, .status = -EPROTO,
};
FIXTURE_VARIANT_ADD(rawrep, closed_without_reply) {
	.action = 1, .expect = VIADUCT_CM_EVENT_CONNECT_ERROR, .status = -ECONNRESET,
};
FIXTURE_VARIANT_ADD(rawrep, silent) {
	.action = 2, .timeout_ms = 3000, .expect = VIADUCT_CM_EVENT_TIMEOUT, .status = -ETIMEDOUT,
};

FIXTURE_SETUP(rawrep)
{
	self->a.fd = self->a.ch = -1;
	self->lfd = -1;
	ASSERT_EQ(0, side_open(&self->a, A, dev_name[A]));
	self->lfd = tcp_listener(B, IP_B, &self->port);
	ASSERT_LE(0, self->lfd);
}

FIXTURE_TEARDOWN(rawrep)
{
	side_close(&self->a);
	if (self->lfd >= 0)
		close(self->lfd);
}

TEST_F_TIMEOUT(rawrep, reply, 90)
{
	unsigned char req[64], buf[1024];
	struct mpa_rr *h = (struct mpa_rr *)buf;
	struct viaduct_cm_event ev;
	int aid, aqp, fd, v1 = variant->cflags & VIADUCT_CM_F_MPA_V1;
	__u16 w[2];
	size_t len;

	fill(req, sizeof(req), 9);
	aid = create_id(&self->a, 0xfeed);
	aqp = make_qp(&self->a);
	ASSERT_EQ(0, connect_to(&self->a, aid, aqp, IP_B, self->port, variant->cflags, req,
				sizeof(req), variant->timeout_ms));
	fd = accept_timeout(self->lfd, EV_WAIT_MS);
	ASSERT_LE(0, fd);

	/* the request, as the RFCs have it */
	ASSERT_EQ(0, read_full(fd, buf, sizeof(*h), EV_WAIT_MS));
	EXPECT_EQ(0, memcmp(h->key, MPA_REQ_KEY, 16));
	EXPECT_EQ(v1 ? 1 : 2, h->rev);
	EXPECT_EQ((v1 ? 0 : MPA_H) | MPA_IMM_OFFER, h->flags);
	ASSERT_EQ(sizeof(req) + (v1 ? 0 : 4), ntohs(h->pd_len));
	ASSERT_EQ(0, read_full(fd, buf + sizeof(*h), ntohs(h->pd_len), EV_WAIT_MS));
	if (!v1) {
		memcpy(w, buf + sizeof(*h), 4);
		EXPECT_EQ(16, ntohs(w[0]) & 0x3fff);
		EXPECT_EQ(8, ntohs(w[1]) & 0x3fff);
		/* P2P: every RTR offered */
		if (variant->cflags & VIADUCT_CM_F_P2P) {
			EXPECT_EQ(0xc000, ntohs(w[0]) & 0xc000);
			EXPECT_EQ(0xc000, ntohs(w[1]) & 0xc000);
		} else {
			EXPECT_EQ(0, ntohs(w[0]) & 0xc000);
			EXPECT_EQ(0, ntohs(w[1]) & 0xc000);
		}
	}
	EXPECT_EQ(0, memcmp(req, buf + sizeof(*h) + (v1 ? 0 : 4), sizeof(req)));

	if (variant->action == 0) {
		len = mpa_frame(buf, variant->key, variant->flags, variant->rev, variant->v2,
				variant->ird, variant->ord, variant->pdl, 21);
		if (variant->pd_len_override)
			h->pd_len = htons(variant->pd_len_override);
		ASSERT_EQ(len, write(fd, buf, len));
	} else if (variant->action == 1) {
		close(fd);
		fd = -1;
	}
	ASSERT_EQ(0, read_event(self->a.ch, &ev, EV_WAIT_MS));
	EXPECT_EQ(variant->expect, ev.type) TH_LOG("got %s", ev_name(ev.type));
	EXPECT_EQ(variant->status, ev.status);
	EXPECT_EQ(0, ack_event(self->a.fd, ev.handle, ev.seq));
	if (ev.type == VIADUCT_CM_EVENT_ESTABLISHED ||
	    ev.type == VIADUCT_CM_EVENT_REJECTED) {
		ASSERT_EQ(variant->pdl, ev.private_data_len);
		fill(buf, variant->pdl, 21);
		EXPECT_EQ(0, memcmp(buf, ev.private_data, variant->pdl));
	}
	if (ev.type == VIADUCT_CM_EVENT_ESTABLISHED) {
		__u32 m = VIADUCT_CM_F_MPA_V1 | VIADUCT_CM_F_CRC | VIADUCT_CM_F_P2P;

		EXPECT_EQ(variant->want_flags, ev.flags & m);
		EXPECT_EQ(variant->v2 ? variant->ird & 0x3fff : 0, ev.ird);
		EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->a.fd, aqp));
	} else {
		EXPECT_EQ(VIADUCT_QPS_IDLE, vd_qp_state(self->a.fd, aqp));
		/* a failed id is done with its peer */
		if (fd >= 0)
			EXPECT_EQ(0, wait_closed(fd, EV_WAIT_MS));
	}
	if (fd >= 0)
		close(fd);
}

/* ------------------------------------------------------------------ */
/* Bad arguments                                                      */
/* ------------------------------------------------------------------ */

struct bad {
	struct side a;
	int other_fd;		/* a context on the other device of A */
	int unsel_fd;		/* a context that selected nothing */
	__u32 id;		/* fresh */
	__u32 lid;		/* listening */
	__u32 qp, err_qp;	/* Idle; Error */
	__u32 stale;		/* a destroyed id */
	int comp_ch, null_fd, closed_fd, udp, tcp;
	int port;
};

union cmarg {
	struct viaduct_handle h;
	struct viaduct_cm_channel ch;
	struct viaduct_cm_create_id cid;
	struct viaduct_cm_listen l;
	struct viaduct_cm_connect c;
	struct viaduct_cm_accept a;
	struct viaduct_cm_reject r;
	struct viaduct_cm_disconnect d;
	struct viaduct_cm_convert_socket cv;
	struct viaduct_cm_ack ack;
	struct viaduct_cm_handoff ho;
	char raw[1024];
};

enum { P_ARG, P_NULL, P_LOW, P_KERNEL };
enum { C_SEL, C_UNSEL, C_OTHER };

struct row {
	const char *desc;
	unsigned long cmd;
	void (*fill)(struct bad *s, union cmarg *a);
	int ptr, ctx;
	int expect;
};

static unsigned char big_pd[1024];

static void f_none(struct bad *s, union cmarg *a) { }
static void f_cid(struct bad *s, union cmarg *a) { a->cid.channel_fd = s->a.ch; }
static void f_cid_neg(struct bad *s, union cmarg *a) { a->cid.channel_fd = -1; }
static void f_cid_closed(struct bad *s, union cmarg *a) { a->cid.channel_fd = s->closed_fd; }
static void f_cid_null(struct bad *s, union cmarg *a) { a->cid.channel_fd = s->null_fd; }
static void f_cid_comp(struct bad *s, union cmarg *a) { a->cid.channel_fd = s->comp_ch; }
static void f_cid_self(struct bad *s, union cmarg *a) { a->cid.channel_fd = s->a.fd; }
static void f_h(struct bad *s, union cmarg *a) { a->h.handle = s->id; }
static void f_h_zero(struct bad *s, union cmarg *a) { a->h.handle = 0; }
static void f_h_qp(struct bad *s, union cmarg *a) { a->h.handle = s->qp; }
static void f_h_stale(struct bad *s, union cmarg *a) { a->h.handle = s->stale; }
static void f_h_huge(struct bad *s, union cmarg *a) { a->h.handle = 0xfffffff0; }
static void f_h_rsvd(struct bad *s, union cmarg *a) { a->h.handle = s->id; a->h.reserved = 1; }

static void f_l(struct bad *s, union cmarg *a, const char *ip)
{
	a->l.handle = s->id;
	a->l.addr = sa(ip, 0);
}
static void f_l_fam0(struct bad *s, union cmarg *a) { f_l(s, a, IP_A); a->l.addr.family = 0; }
static void f_l_fam99(struct bad *s, union cmarg *a) { f_l(s, a, IP_A); a->l.addr.family = 99; }
static void f_l_tail(struct bad *s, union cmarg *a) { f_l(s, a, IP_A); a->l.addr.addr[9] = 1; }
static void f_l_scope(struct bad *s, union cmarg *a) { f_l(s, a, IP_A); a->l.addr.scope_id = 1; }
static void f_l_peer(struct bad *s, union cmarg *a) { f_l(s, a, IP_B); }
static void f_l_x(struct bad *s, union cmarg *a) { f_l(s, a, IP_X); }
static void f_l_lo(struct bad *s, union cmarg *a) { f_l(s, a, "127.0.0.1"); }
static void f_l_again(struct bad *s, union cmarg *a) { f_l(s, a, IP_A); a->l.handle = s->lid; }
static void f_l_inuse(struct bad *s, union cmarg *a)
{
	f_l(s, a, IP_A);
	a->l.addr.port = htons(s->port);
}
static void f_l_qp(struct bad *s, union cmarg *a) { f_l(s, a, IP_A); a->l.handle = s->qp; }

static void f_c(struct bad *s, union cmarg *a, const char *ip)
{
	a->c.handle = s->id;
	a->c.dst = sa(ip, 4791);
	a->c.param.qp_handle = s->qp;
}
static void f_c_rsvd(struct bad *s, union cmarg *a) { f_c(s, a, IP_B); a->c.reserved = 1; }
static void f_c_flags(struct bad *s, union cmarg *a) { f_c(s, a, IP_B); a->c.param.flags = 0x10; }
static void f_c_active(struct bad *s, union cmarg *a)
{
	f_c(s, a, IP_B);
	a->c.param.flags = VIADUCT_CM_F_ACTIVE;
}
static void f_c_pd513(struct bad *s, union cmarg *a)
{
	f_c(s, a, IP_B);
	a->c.param.private_data = (unsigned long)big_pd;
	a->c.param.private_data_len = 513;
}
static void f_c_pd509(struct bad *s, union cmarg *a)
{
	f_c_pd513(s, a);
	a->c.param.private_data_len = 509;
}
static void f_c_pd_fault(struct bad *s, union cmarg *a)
{
	f_c(s, a, IP_B);
	a->c.param.private_data = 8;
	a->c.param.private_data_len = 16;
}
static void f_c_pd_kernel(struct bad *s, union cmarg *a)
{
	f_c(s, a, IP_B);
	a->c.param.private_data = (unsigned long)VD_KERNEL_PTR;
	a->c.param.private_data_len = 16;
}
static void f_c_ird(struct bad *s, union cmarg *a) { f_c(s, a, IP_B); a->c.param.ird = 33; }
static void f_c_ord(struct bad *s, union cmarg *a) { f_c(s, a, IP_B); a->c.param.ord = 33; }
static void f_c_noqp(struct bad *s, union cmarg *a) { f_c(s, a, IP_B); a->c.param.qp_handle = 0; }
static void f_c_idqp(struct bad *s, union cmarg *a)
{
	f_c(s, a, IP_B);
	a->c.param.qp_handle = s->id;
}
static void f_c_noid(struct bad *s, union cmarg *a) { f_c(s, a, IP_B); a->c.handle = s->qp; }
static void f_c_errqp(struct bad *s, union cmarg *a)
{
	f_c(s, a, IP_B);
	a->c.param.qp_handle = s->err_qp;
}
static void f_c_any(struct bad *s, union cmarg *a) { f_c(s, a, "0.0.0.0"); }
static void f_c_port0(struct bad *s, union cmarg *a) { f_c(s, a, IP_B); a->c.dst.port = 0; }
static void f_c_fam(struct bad *s, union cmarg *a) { f_c(s, a, IP_B); a->c.dst.family = 1; }
static void f_c_noroute(struct bad *s, union cmarg *a) { f_c(s, a, IP_NOROUTE); }
static void f_c_x(struct bad *s, union cmarg *a) { f_c(s, a, "192.0.2.1"); }
static void f_c_listener(struct bad *s, union cmarg *a) { f_c(s, a, IP_B); a->c.handle = s->lid; }

static void f_acc(struct bad *s, union cmarg *a)
{
	a->a.handle = s->id;
	a->a.param.qp_handle = s->qp;
}
static void f_acc_rsvd(struct bad *s, union cmarg *a) { f_acc(s, a); a->a.reserved = 1; }
static void f_acc_l(struct bad *s, union cmarg *a) { f_acc(s, a); a->a.handle = s->lid; }
static void f_acc_flags(struct bad *s, union cmarg *a)
{
	f_acc(s, a);
	a->a.param.flags = VIADUCT_CM_F_ACTIVE;
}
static void f_acc_pd(struct bad *s, union cmarg *a)
{
	f_acc(s, a);
	a->a.param.private_data_len = 1000;
}
static void f_rej(struct bad *s, union cmarg *a) { a->r.handle = s->id; }
static void f_rej_l(struct bad *s, union cmarg *a) { a->r.handle = s->lid; }
static void f_rej_pd(struct bad *s, union cmarg *a)
{
	a->r.handle = s->id;
	a->r.private_data_len = 513;
	a->r.private_data = (unsigned long)big_pd;
}
static void f_rej_fault(struct bad *s, union cmarg *a)
{
	a->r.handle = s->id;
	a->r.private_data_len = 3;
	a->r.private_data = 8;
}
static void f_disc(struct bad *s, union cmarg *a) { a->d.handle = s->id; }
static void f_disc_l(struct bad *s, union cmarg *a) { a->d.handle = s->lid; }
static void f_disc_flags(struct bad *s, union cmarg *a) { a->d.handle = s->id; a->d.flags = 2; }
static void f_disc_stale(struct bad *s, union cmarg *a) { a->d.handle = s->stale; }

static void f_cv(struct bad *s, union cmarg *a, int fd)
{
	a->cv.sockfd = fd;
	a->cv.handle = s->id;
	a->cv.param.qp_handle = s->qp;
}
static void f_cv_neg(struct bad *s, union cmarg *a) { f_cv(s, a, -1); }
static void f_cv_null(struct bad *s, union cmarg *a) { f_cv(s, a, s->null_fd); }
static void f_cv_udp(struct bad *s, union cmarg *a) { f_cv(s, a, s->udp); }
static void f_cv_unconn(struct bad *s, union cmarg *a) { f_cv(s, a, s->tcp); }
static void f_cv_flags(struct bad *s, union cmarg *a) { f_cv(s, a, s->tcp); a->cv.param.flags = 0x100; }
static void f_cv_noqp(struct bad *s, union cmarg *a) { f_cv(s, a, s->tcp); a->cv.param.qp_handle = 0; }
static void f_ho(struct bad *s, union cmarg *a)
{
	a->ho.handle = s->id;
	a->ho.addr = sa(IP_A, 4791);
}
static void f_ho_rsvd(struct bad *s, union cmarg *a) { f_ho(s, a); a->ho.reserved = 1; }
static void f_ho_port0(struct bad *s, union cmarg *a) { f_ho(s, a); a->ho.addr.port = 0; }
static void f_ho_any_addr(struct bad *s, union cmarg *a) { f_ho(s, a); a->ho.addr.family = 0; }
static void f_ho_fam(struct bad *s, union cmarg *a) { f_ho(s, a); a->ho.addr.family = 99; }
static void f_ho_qp(struct bad *s, union cmarg *a) { f_ho(s, a); a->ho.handle = s->qp; }
static void f_ho_fresh(struct bad *s, union cmarg *a)
{
	f_ho(s, a);
	a->ho.addr.port = htons(s->port);
}
static void f_ho_l(struct bad *s, union cmarg *a) { f_ho_fresh(s, a); a->ho.handle = s->lid; }
static void f_ack(struct bad *s, union cmarg *a) { a->ack.handle = s->id; a->ack.seq = 1; }
static void f_ack_stale(struct bad *s, union cmarg *a) { a->ack.handle = s->stale; }
static void f_ack_qp(struct bad *s, union cmarg *a) { a->ack.handle = s->qp; }

#define CH VIADUCT_IOCTL_CREATE_CM_CHANNEL
#define CID VIADUCT_IOCTL_CM_CREATE_ID
#define DID VIADUCT_IOCTL_CM_DESTROY_ID
#define LSN VIADUCT_IOCTL_CM_LISTEN
#define CON VIADUCT_IOCTL_CM_CONNECT
#define ACC VIADUCT_IOCTL_CM_ACCEPT
#define REJ VIADUCT_IOCTL_CM_REJECT
#define DIS VIADUCT_IOCTL_CM_DISCONNECT
#define CNV VIADUCT_IOCTL_CM_CONVERT_SOCKET
#define ACK VIADUCT_IOCTL_CM_ACK_EVENT
#define HO VIADUCT_IOCTL_CM_HANDOFF

static const struct row rows[] = {
	{ "CREATE_CM_CHANNEL, nothing selected", CH, f_none, P_ARG, C_UNSEL, -ENODEV },
	{ "CM_CREATE_ID, nothing selected", CID, f_cid, P_ARG, C_UNSEL, -ENODEV },
	{ "CM_CREATE_ID, channel -1", CID, f_cid_neg, P_ARG, C_SEL, -EBADF },
	{ "CM_CREATE_ID, closed descriptor", CID, f_cid_closed, P_ARG, C_SEL, -EBADF },
	{ "CM_CREATE_ID, /dev/null", CID, f_cid_null, P_ARG, C_SEL, -EINVAL },
	{ "CM_CREATE_ID, a completion channel", CID, f_cid_comp, P_ARG, C_SEL, -EINVAL },
	{ "CM_CREATE_ID, the /dev/viaduct file", CID, f_cid_self, P_ARG, C_SEL, -EINVAL },
	{ "CM_DESTROY_ID, handle 0", DID, f_h_zero, P_ARG, C_SEL, -ENOENT },
	{ "CM_DESTROY_ID, a QP's handle", DID, f_h_qp, P_ARG, C_SEL, -ENOENT },
	{ "CM_DESTROY_ID, destroyed", DID, f_h_stale, P_ARG, C_SEL, -ENOENT },
	{ "CM_DESTROY_ID, never allocated", DID, f_h_huge, P_ARG, C_SEL, -ENOENT },
	{ "CM_DESTROY_ID, reserved", DID, f_h_rsvd, P_ARG, C_SEL, -EINVAL },
	{ "CM_DESTROY_ID, another context's", DID, f_h, P_ARG, C_OTHER, -ENOENT },
	{ "CM_DESTROY_ID, nothing selected", DID, f_h, P_ARG, C_UNSEL, -ENODEV },
	{ "CM_LISTEN, family 0", LSN, f_l_fam0, P_ARG, C_SEL, -EAFNOSUPPORT },
	{ "CM_LISTEN, family 99", LSN, f_l_fam99, P_ARG, C_SEL, -EAFNOSUPPORT },
	{ "CM_LISTEN, IPv4 with bytes past 4", LSN, f_l_tail, P_ARG, C_SEL, -EINVAL },
	{ "CM_LISTEN, IPv4 with a scope", LSN, f_l_scope, P_ARG, C_SEL, -EINVAL },
	{ "CM_LISTEN, the peer's address", LSN, f_l_peer, P_ARG, C_SEL, -EADDRNOTAVAIL },
	{ "CM_LISTEN, another device's address", LSN, f_l_x, P_ARG, C_SEL, -EADDRNOTAVAIL },
	{ "CM_LISTEN, on the other device's context", LSN, f_l_x, P_ARG, C_OTHER, -ENOENT },
	{ "CM_LISTEN, loopback", LSN, f_l_lo, P_ARG, C_SEL, -EADDRNOTAVAIL },
	{ "CM_LISTEN, twice", LSN, f_l_again, P_ARG, C_SEL, -EINVAL },
	{ "CM_LISTEN, port in use", LSN, f_l_inuse, P_ARG, C_SEL, -EADDRINUSE },
	{ "CM_LISTEN, a QP's handle", LSN, f_l_qp, P_ARG, C_SEL, -ENOENT },
	{ "CM_CONNECT, reserved", CON, f_c_rsvd, P_ARG, C_SEL, -EINVAL },
	{ "CM_CONNECT, unknown flag", CON, f_c_flags, P_ARG, C_SEL, -EINVAL },
	{ "CM_CONNECT, F_ACTIVE", CON, f_c_active, P_ARG, C_SEL, -EINVAL },
	{ "CM_CONNECT, 513 bytes of private data", CON, f_c_pd513, P_ARG, C_SEL, -EINVAL },
	{ "CM_CONNECT, enhanced, 509 bytes", CON, f_c_pd509, P_ARG, C_SEL, -EINVAL },
	{ "CM_CONNECT, private data unreadable", CON, f_c_pd_fault, P_ARG, C_SEL, -EFAULT },
	{ "CM_CONNECT, private data in the kernel", CON, f_c_pd_kernel, P_ARG, C_SEL, -EFAULT },
	{ "CM_CONNECT, IRD 33", CON, f_c_ird, P_ARG, C_SEL, -EINVAL },
	{ "CM_CONNECT, ORD 33", CON, f_c_ord, P_ARG, C_SEL, -EINVAL },
	{ "CM_CONNECT, QP handle 0", CON, f_c_noqp, P_ARG, C_SEL, -ENOENT },
	{ "CM_CONNECT, an id as QP", CON, f_c_idqp, P_ARG, C_SEL, -ENOENT },
	{ "CM_CONNECT, a QP as id", CON, f_c_noid, P_ARG, C_SEL, -ENOENT },
	{ "CM_CONNECT, QP in Error", CON, f_c_errqp, P_ARG, C_SEL, -EINVAL },
	{ "CM_CONNECT, to the any-address", CON, f_c_any, P_ARG, C_SEL, -EINVAL },
	{ "CM_CONNECT, to port 0", CON, f_c_port0, P_ARG, C_SEL, -EINVAL },
	{ "CM_CONNECT, family 1", CON, f_c_fam, P_ARG, C_SEL, -EAFNOSUPPORT },
	{ "CM_CONNECT, no route", CON, f_c_noroute, P_ARG, C_SEL, -ENETUNREACH },
	{ "CM_CONNECT, routed out of another device", CON, f_c_x, P_ARG, C_SEL,
	  -EADDRNOTAVAIL },
	{ "CM_CONNECT, on a listener", CON, f_c_listener, P_ARG, C_SEL, -EINVAL },
	{ "CM_ACCEPT, a fresh id", ACC, f_acc, P_ARG, C_SEL, -EINVAL },
	{ "CM_ACCEPT, a listener", ACC, f_acc_l, P_ARG, C_SEL, -EINVAL },
	{ "CM_ACCEPT, reserved", ACC, f_acc_rsvd, P_ARG, C_SEL, -EINVAL },
	{ "CM_ACCEPT, F_ACTIVE", ACC, f_acc_flags, P_ARG, C_SEL, -EINVAL },
	{ "CM_ACCEPT, 1000 bytes", ACC, f_acc_pd, P_ARG, C_SEL, -EINVAL },
	{ "CM_REJECT, a fresh id", REJ, f_rej, P_ARG, C_SEL, -EINVAL },
	{ "CM_REJECT, a listener", REJ, f_rej_l, P_ARG, C_SEL, -EINVAL },
	{ "CM_REJECT, 513 bytes", REJ, f_rej_pd, P_ARG, C_SEL, -EINVAL },
	{ "CM_REJECT, private data unreadable", REJ, f_rej_fault, P_ARG, C_SEL, -EFAULT },
	{ "CM_DISCONNECT, a fresh id", DIS, f_disc, P_ARG, C_SEL, -EINVAL },
	{ "CM_DISCONNECT, a listener", DIS, f_disc_l, P_ARG, C_SEL, -EINVAL },
	{ "CM_DISCONNECT, unknown flag", DIS, f_disc_flags, P_ARG, C_SEL, -EINVAL },
	{ "CM_DISCONNECT, destroyed", DIS, f_disc_stale, P_ARG, C_SEL, -ENOENT },
	{ "CM_CONVERT_SOCKET, descriptor -1", CNV, f_cv_neg, P_ARG, C_SEL, -EBADF },
	{ "CM_CONVERT_SOCKET, /dev/null", CNV, f_cv_null, P_ARG, C_SEL, -ENOTSOCK },
	{ "CM_CONVERT_SOCKET, UDP", CNV, f_cv_udp, P_ARG, C_SEL, -EINVAL },
	{ "CM_CONVERT_SOCKET, not connected", CNV, f_cv_unconn, P_ARG, C_SEL, -ENOTCONN },
	{ "CM_CONVERT_SOCKET, unknown flag", CNV, f_cv_flags, P_ARG, C_SEL, -EINVAL },
	{ "CM_CONVERT_SOCKET, QP handle 0", CNV, f_cv_noqp, P_ARG, C_SEL, -ENOENT },
	{ "CM_HANDOFF, reserved", HO, f_ho_rsvd, P_ARG, C_SEL, -EINVAL },
	{ "CM_HANDOFF, port 0", HO, f_ho_port0, P_ARG, C_SEL, -EINVAL },
	{ "CM_HANDOFF, family 0 with an address", HO, f_ho_any_addr, P_ARG, C_SEL, -EINVAL },
	{ "CM_HANDOFF, family 99", HO, f_ho_fam, P_ARG, C_SEL, -EAFNOSUPPORT },
	{ "CM_HANDOFF, a QP's handle", HO, f_ho_qp, P_ARG, C_SEL, -ENOENT },
	{ "CM_HANDOFF, nobody listens there", HO, f_ho, P_ARG, C_SEL, -ENOENT },
	{ "CM_HANDOFF, a fresh id", HO, f_ho_fresh, P_ARG, C_SEL, -EINVAL },
	{ "CM_HANDOFF, a listener", HO, f_ho_l, P_ARG, C_SEL, -EINVAL },
	{ "CM_HANDOFF, nothing selected", HO, f_ho, P_ARG, C_UNSEL, -ENODEV },
	{ "CM_ACK_EVENT, no such event", ACK, f_ack, P_ARG, C_SEL, -EINVAL },
	{ "CM_ACK_EVENT, destroyed id", ACK, f_ack_stale, P_ARG, C_SEL, -ENOENT },
	{ "CM_ACK_EVENT, a QP's handle", ACK, f_ack_qp, P_ARG, C_SEL, -ENOENT },
	{ "CM_ACK_EVENT, nothing selected", ACK, f_ack, P_ARG, C_UNSEL, -ENODEV },
};

static const unsigned long all_cmds[] = { CH, CID, DID, LSN, CON, ACC, REJ, DIS, CNV, ACK };

FIXTURE(badarg) {
	struct bad s;
};

FIXTURE_SETUP(badarg)
{
	struct bad *s = &self->s;
	struct viaduct_comp_channel cc = { 0 };
	int lid;

	memset(s, 0, sizeof(*s));
	ASSERT_EQ(0, side_open(&s->a, A, dev_name[A]));
	s->other_fd = open_ctx(A, x_name);
	ASSERT_LE(0, s->other_fd);
	ASSERT_EQ(0, enter_ns(A));
	s->unsel_fd = vd_open();
	s->udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	s->tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_EQ(0, enter_ns(-1));
	ASSERT_LE(0, s->unsel_fd);
	s->id = create_id(&s->a, 1);
	s->lid = create_id(&s->a, 2);
	ASSERT_LT(0, s->id);
	s->port = listen_on(&s->a, s->lid, IP_A, 0);
	ASSERT_LT(0, s->port);
	s->qp = make_qp(&s->a);
	s->err_qp = make_qp(&s->a);
	ASSERT_LT(0, s->qp);
	ASSERT_EQ(0, vd_modify_state(s->a.fd, s->err_qp, VIADUCT_QPS_ERROR));
	lid = create_id(&s->a, 3);
	ASSERT_EQ(0, destroy_id(s->a.fd, lid));
	s->stale = lid;
	ASSERT_EQ(0, vd_ioctl(s->a.fd, VIADUCT_IOCTL_CREATE_COMP_CHANNEL, &cc));
	s->comp_ch = cc.fd;
	s->null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	s->closed_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	close(s->closed_fd);
}

FIXTURE_TEARDOWN(badarg)
{
	struct bad *s = &self->s;

	side_close(&s->a);
	close(s->other_fd);
	close(s->unsel_fd);
	close(s->comp_ch);
	close(s->null_fd);
	close(s->udp);
	close(s->tcp);
}

TEST_F_TIMEOUT(badarg, table, 120)
{
	struct bad *s = &self->s;
	struct viaduct_cm_event ev;
	union cmarg arg;
	unsigned int i, j;
	long ref = vd_module_refcnt();

	for (i = 0; i < VD_ARRAY_SIZE(rows); i++) {
		const struct row *r = &rows[i];
		int fd = r->ctx == C_SEL ? s->a.fd : r->ctx == C_UNSEL ? s->unsel_fd :
			 s->other_fd;
		int ret;

		memset(&arg, 0, sizeof(arg));
		r->fill(s, &arg);
		ret = vd_ioctl(fd, r->cmd, &arg);
		EXPECT_EQ(r->expect, ret) TH_LOG("%s: got %s", r->desc, strerror(-ret));
	}
	/* no bad argument made anything happen */
	EXPECT_EQ(-ETIMEDOUT, read_event(s->a.ch, &ev, 300));
	EXPECT_EQ(VIADUCT_QPS_IDLE, vd_qp_state(s->a.fd, s->qp));

	/* unreadable or unwritable argument pointers, every command */
	for (i = 0; i < VD_ARRAY_SIZE(all_cmds); i++) {
		void *const ptrs[] = { NULL, (void *)8, VD_KERNEL_PTR };

		for (j = 0; j < VD_ARRAY_SIZE(ptrs); j++) {
			int ret = vd_ioctl(s->a.fd, all_cmds[i], ptrs[j]);

			EXPECT_EQ(-EFAULT, ret) TH_LOG("cmd %#lx ptr %p: %s", all_cmds[i],
						       ptrs[j], strerror(-ret));
		}
	}
	/* and nothing selected comes before anything else */
	for (i = 0; i < VD_ARRAY_SIZE(all_cmds); i++) {
		memset(&arg, 0, sizeof(arg));
		EXPECT_EQ(-ENODEV, vd_ioctl(s->unsel_fd, all_cmds[i], &arg))
			TH_LOG("cmd %#lx", all_cmds[i]);
	}
	EXPECT_EQ(ref, vd_module_refcnt());
}

/* A QP serves one connection at a time; a busy id takes no second one. */
TEST_F_TIMEOUT(cm, qp_and_id_busy, 120)
{
	struct viaduct_cm_event ev;
	struct conn c;
	int id2, qp2;

	establish(_metadata, self, &c, 0, 0, IP_A);
	id2 = create_id(&self->b, 1);
	/* the connected QP is in RTS: not Idle */
	EXPECT_EQ(-EINVAL, connect_to(&self->b, id2, c.bqp, IP_A, c.port, 0, NULL, 0, 0));
	/* an Idle QP already taken by a connecting id */
	qp2 = make_qp(&self->b);
	ASSERT_EQ(0, connect_to(&self->b, id2, qp2, IP_BLACKHOLE, 1, 0, NULL, 0, 20000));
	EXPECT_EQ(-EBUSY, connect_to(&self->b, create_id(&self->b, 2), qp2, IP_A, c.port, 0,
				     NULL, 0, 0));
	/* the id is busy itself */
	EXPECT_EQ(-EINVAL, connect_to(&self->b, id2, make_qp(&self->b), IP_A, c.port, 0, NULL,
				      0, 0));
	EXPECT_EQ(-EINVAL, connect_to(&self->b, c.bid, make_qp(&self->b), IP_A, c.port, 0, NULL,
				      0, 0));
	/* destroying a connecting id is fine, and frees its QP */
	EXPECT_EQ(0, destroy_id(self->b.fd, id2));
	EXPECT_EQ(VIADUCT_QPS_IDLE, vd_qp_state(self->b.fd, qp2));
	id2 = create_id(&self->b, 3);
	ASSERT_EQ(0, connect_to(&self->b, id2, qp2, IP_A, c.port, 0, NULL, 0, 0));
	EXPECT_EVENT(&self->a, VIADUCT_CM_EVENT_CONNECT_REQUEST, &ev);
}

int main(int argc, char **argv)
{
	int ret;

	if (world_up()) {
		world_down();
		ksft_print_header();
		ksft_exit_fail_msg("could not build the two namespaces\n");
	}
	ret = test_harness_run(argc, argv);
	world_down();
	return ret;
}
