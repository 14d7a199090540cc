/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the transfer selftests: a viaduct side (device, context, PD,
 * registered buffer, QP with private completion rings, CM channel and id)
 * set up inside a named network namespace, CM events, and posting WRs
 * with SGEs into the side's buffer.
 */
#ifndef VD_XFER_UTIL_H
#define VD_XFER_UTIL_H

#include <arpa/inet.h>
#include <sched.h>

#include "res_util.h"

#define XF_BUF		(2UL << 20)	/* registered per side */
#define XF_MAX		(1U << 20)	/* largest message */
#define XF_DEPTH	64
#define XF_ORD		2
#define XF_WAIT_MS	30000
#define XF_TIMEOUT_S	300	/* per test, setup included: TCG is slow */
#define XF_ACCESS	(VIADUCT_ACCESS_LOCAL_WRITE | \
			 VIADUCT_ACCESS_REMOTE_WRITE | \
			 VIADUCT_ACCESS_REMOTE_READ)

struct xf_side {
	char ns[32];
	int fd;			/* /dev/viaduct, opened in @ns */
	int ch;			/* CM channel */
	__u32 pd, mr, stag, id;
	unsigned char *buf;
	size_t len;		/* of @buf: XF_BUF unless set before xf_side_up() */
	struct vd_qp q;
	struct viaduct_device_attr attr;	/* QUERY_DEVICE of vd0 */
};

/* Two sides, nothing open yet, in namespaces xa@id and xb@id. */
static inline void xf_sides_init(struct xf_side *a, struct xf_side *b, int id)
{
	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	a->fd = -1;
	a->ch = -1;
	b->fd = -1;
	b->ch = -1;
	snprintf(a->ns, sizeof(a->ns), "xa%d", id);
	snprintf(b->ns, sizeof(b->ns), "xb%d", id);
}

/* Runs @fn in namespace @ns, then returns to ours. */
static inline int xf_in_ns(const char *ns, int (*fn)(struct xf_side *), struct xf_side *s)
{
	int self = vd_netns_enter(ns), ret, back;

	if (self < 0)
		return self;
	ret = fn(s);
	back = vd_netns_leave(self);
	return back ? back : ret;
}

/* A QP of the side, with private completion rings. */
static inline int xf_qp_up(struct xf_side *s, struct vd_qp *q)
{
	memset(q, 0, sizeof(*q));
	vd_qp_args(&q->c, s->pd, 0, 0);
	q->c.sq_depth = XF_DEPTH;
	q->c.rq_depth = XF_DEPTH;
	q->c.max_send_sge = 4;
	q->c.max_recv_sge = 4;
	q->c.max_inline = 64;
	q->c.ord = XF_ORD;
	q->c.ird = XF_ORD;
	q->c.access = VIADUCT_QP_ACCESS_REMOTE_WRITE |
		      VIADUCT_QP_ACCESS_REMOTE_READ;
	return vd_qp_create(s->fd, q);
}

/* In the side's namespace: the device, the context, the resources. */
static inline int xf_side_up(struct xf_side *s)
{
	struct viaduct_select_device sel = { .name = "vd0" };
	struct viaduct_cm_channel ch = { .fd = -1 };
	struct viaduct_cm_create_id cid = { 0 };
	int ret;

	s->fd = vd_open();
	if (s->fd < 0)
		return -errno;
	/* in the namespaces of xf_net_share(), an earlier test made vd0 */
	ret = vd_ioctl(s->fd, VIADUCT_IOCTL_SELECT_DEVICE, &sel);
	if (ret == -ENODEV) {
		ret = vd_nl_link(VIADUCT_CMD_LINK_ADD, "vd0", "eth0");
		if (ret)
			return ret;
		ret = vd_ioctl(s->fd, VIADUCT_IOCTL_SELECT_DEVICE, &sel);
	}
	if (ret)
		return ret;
	s->attr.index = VIADUCT_INDEX_SELECTED;
	ret = vd_ioctl(s->fd, VIADUCT_IOCTL_QUERY_DEVICE, &s->attr);
	if (ret)
		return ret;
	ret = vd_create_pd(s->fd);
	if (ret < 0)
		return ret;
	s->pd = ret;
	if (!s->len)
		s->len = XF_BUF;
	s->buf = mmap(NULL, s->len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (s->buf == MAP_FAILED)
		return -errno;
	ret = vd_reg_mr(s->fd, s->pd, s->buf, s->len, XF_ACCESS, &s->stag);
	if (ret < 0)
		return ret;
	s->mr = ret;

	ret = xf_qp_up(s, &s->q);
	if (ret)
		return ret;

	ret = vd_ioctl(s->fd, VIADUCT_IOCTL_CREATE_CM_CHANNEL, &ch);
	if (ret)
		return ret;
	s->ch = ch.fd;
	cid.channel_fd = s->ch;
	ret = vd_ioctl(s->fd, VIADUCT_IOCTL_CM_CREATE_ID, &cid);
	if (ret)
		return ret;
	s->id = cid.handle;
	return 0;
}

/* A new CM id of @s on its channel, with @user_data; its handle or -errno. */
static inline int xf_create_id(struct xf_side *s, __u64 user_data)
{
	struct viaduct_cm_create_id cid = { .user_data = user_data };
	int ret;

	cid.channel_fd = s->ch;
	ret = vd_ioctl(s->fd, VIADUCT_IOCTL_CM_CREATE_ID, &cid);
	return ret ? ret : (int)cid.handle;
}

static inline int xf_disconnect(struct xf_side *s, __u32 id, __u32 flags)
{
	struct viaduct_cm_disconnect d = { .handle = id, .flags = flags };

	return vd_ioctl(s->fd, VIADUCT_IOCTL_CM_DISCONNECT, &d);
}

/* Next CM event of a channel (acknowledged), waiting up to @ms. */
static inline int xf_cm_event(struct xf_side *s, struct viaduct_cm_event *ev, int ms)
{
	struct viaduct_cm_ack ack;
	ssize_t n;
	int ret = vd_wait_readable(s->ch, ms);

	if (ret <= 0)
		return ret ? ret : -ETIMEDOUT;
	n = read(s->ch, ev, sizeof(*ev));
	if (n != sizeof(*ev))
		return n < 0 ? -errno : -EIO;
	ack.handle = ev->handle;
	ack.seq = ev->seq;
	return vd_ioctl(s->fd, VIADUCT_IOCTL_CM_ACK_EVENT, &ack);
}

static inline void xf_addr(struct viaduct_sockaddr *a, int host, __u16 port)
{
	memset(a, 0, sizeof(*a));
	a->family = VIADUCT_AF_INET;
	a->port = htons(port);
	a->addr[0] = 192;
	a->addr[1] = 0;
	a->addr[2] = 2;
	a->addr[3] = host;
}

struct xf_sge {
	size_t off;		/* into the side's buffer */
	__u32 len;
};

/* Posts a send WR on @q, one of @s's QPs. */
static inline void xf_post_send_imm_q(struct xf_side *s, struct vd_qp *q, __u64 wr_id,
				      __u8 opcode, __u8 flags, const struct xf_sge *sg,
				      int n, __u32 rstag, __u64 raddr, __u32 imm)
{
	struct viaduct_sqe *e = vd_sq_slot(q, q->sq_prod);
	struct viaduct_sge *sge = (struct viaduct_sge *)(e + 1);
	int i;

	memset(e, 0, q->c.sq_wqe_size);
	e->wr_id = wr_id;
	e->opcode = opcode;
	e->flags = flags;
	e->imm_data = imm;
	e->num_sge = n;
	e->remote_stag = rstag;
	e->remote_addr = raddr;
	for (i = 0; i < n; i++) {
		sge[i].addr = (unsigned long)(s->buf + sg[i].off);
		sge[i].length = sg[i].len;
		sge[i].stag = s->stag;
	}
	q->sq_prod++;
	__atomic_store_n(&q->db->sq_producer, q->sq_prod, __ATOMIC_RELEASE);
	vd_doorbell(s->fd, q->c.handle, VIADUCT_DOORBELL_SQ);
}

static inline void xf_post_send_q(struct xf_side *s, struct vd_qp *q, __u64 wr_id,
				  __u8 opcode, __u8 flags, const struct xf_sge *sg,
				  int n, __u32 rstag, __u64 raddr)
{
	xf_post_send_imm_q(s, q, wr_id, opcode, flags, sg, n, rstag, raddr, 0);
}

/* A Send or RDMA Write with immediate data @imm. */
static inline void xf_post_send_imm(struct xf_side *s, __u64 wr_id, __u8 opcode,
				    __u8 flags, const struct xf_sge *sg, int n,
				    __u32 rstag, __u64 raddr, __u32 imm)
{
	xf_post_send_imm_q(s, &s->q, wr_id, opcode, flags | VIADUCT_SQE_IMMEDIATE, sg, n,
			   rstag, raddr, imm);
}

static inline void xf_post_send(struct xf_side *s, __u64 wr_id, __u8 opcode,
				__u8 flags, const struct xf_sge *sg, int n,
				__u32 rstag, __u64 raddr)
{
	xf_post_send_q(s, &s->q, wr_id, opcode, flags, sg, n, rstag, raddr);
}

/* Writes a receive WR into @q's ring and publishes it, no DOORBELL. */
static inline void xf_write_recv_q(struct xf_side *s, struct vd_qp *q, __u64 wr_id,
				   const struct xf_sge *sg, int n)
{
	struct viaduct_rqe *r = vd_rq_slot(q, q->rq_prod);
	struct viaduct_sge *sge = (struct viaduct_sge *)(r + 1);
	int i;

	memset(r, 0, q->c.rq_wqe_size);
	r->wr_id = wr_id;
	r->num_sge = n;
	for (i = 0; i < n; i++) {
		sge[i].addr = (unsigned long)(s->buf + sg[i].off);
		sge[i].length = sg[i].len;
		sge[i].stag = s->stag;
	}
	q->rq_prod++;
	__atomic_store_n(&q->db->rq_producer, q->rq_prod, __ATOMIC_RELEASE);
}

/* Posts a receive WR on @q, one of @s's QPs. */
static inline void xf_post_recv_q(struct xf_side *s, struct vd_qp *q, __u64 wr_id,
				  const struct xf_sge *sg, int n)
{
	xf_write_recv_q(s, q, wr_id, sg, n);
	vd_doorbell(s->fd, q->c.handle, VIADUCT_DOORBELL_RQ);
}

static inline void xf_post_recv(struct xf_side *s, __u64 wr_id,
				const struct xf_sge *sg, int n)
{
	xf_post_recv_q(s, &s->q, wr_id, sg, n);
}

static inline void xf_fill(unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 8));
}

/*
 * Namespaces @a and @b joined by a veth pair, eth0 on both sides, with
 * 192.0.2.1 in @a and 192.0.2.2 in @b. Leftovers of the same names go
 * first. 0 or the shell's status. Three ip(8) processes in batch mode
 * (the veth ends are made in their namespaces), not one per step: under
 * TCG, and several times more under the debug kernel, each process
 * started costs more than the step it runs.
 */
static inline int xf_net_up(const char *a, const char *b)
{
	return vd_sh("for n in %1$s %2$s; do "
		     "[ ! -e /run/netns/$n ] || ip netns del $n; done; "
		     "printf 'netns add %1$s\nnetns add %2$s\n"
		     "link add eth0 netns %1$s type veth peer name eth0 netns %2$s\n' | "
		     "ip -b - && "
		     "printf 'addr add 192.0.2.1/24 dev eth0\nlink set eth0 up\n"
		     "link set lo up\n' | ip -n %1$s -b - && "
		     "printf 'addr add 192.0.2.2/24 dev eth0\nlink set eth0 up\n"
		     "link set lo up\n' | ip -n %2$s -b -",
		     a, b);
}

static inline void xf_net_down(const char *a, const char *b)
{
	vd_sh("printf 'netns del %s\nnetns del %s\n' | ip -force -b -", a, b);
}

/*
 * The namespace pair of xf_net_up() that every test of the program shares:
 * made by the first test that asks, named after the harness process (each
 * test runs in a child of it), and removed by that process at exit. Under
 * TCG, and more so under the debug kernel, the ip(8) processes and the
 * namespace teardown cost more than most tests. The tests stay independent:
 * each has its own context, PD, MR, QPs, CM ids and connections on the
 * pair's vd0 devices, which xf_side_up() makes once; tests run one at a
 * time. 0 or the shell's status; @a and @b are initialised either way.
 */
#define XF_NET_MARK	"/run/xf-net-%d"

static inline int xf_net_share(struct xf_side *a, struct xf_side *b)
{
	int id = vd_harness_pid % 100000;
	char mark[64], path[2][64];
	int fd;

	xf_sides_init(a, b, id);
	snprintf(mark, sizeof(mark), XF_NET_MARK, id);
	snprintf(path[0], sizeof(path[0]), "/run/netns/%s", a->ns);
	snprintf(path[1], sizeof(path[1]), "/run/netns/%s", b->ns);
	if (!access(mark, F_OK) && !access(path[0], F_OK) && !access(path[1], F_OK))
		return 0;
	if (xf_net_up(a->ns, b->ns))
		return -1;
	fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* In the harness process, at exit: the shared pair goes. */
static void __attribute__((destructor)) xf_net_unshare(void)
{
	int id = vd_harness_pid % 100000;
	char mark[64], a[32], b[32];

	snprintf(mark, sizeof(mark), XF_NET_MARK, id);
	if (getpid() != vd_harness_pid || access(mark, F_OK))
		return;
	snprintf(a, sizeof(a), "xa%d", id);
	snprintf(b, sizeof(b), "xb%d", id);
	xf_net_down(a, b);
	unlink(mark);
}

static inline void xf_side_down(struct xf_side *s)
{
	vd_qp_unmap(&s->q);
	if (s->ch >= 0)
		close(s->ch);
	if (s->fd >= 0)
		close(s->fd);
	if (s->buf && s->buf != MAP_FAILED)
		munmap(s->buf, s->len);
	s->ch = s->fd = -1;
	s->buf = NULL;
}

/* The module parameter zcopy_tx_min: tests set it and restore it. */
#define XF_ZC_PARAM	"zcopy_tx_min"

static inline long xf_zc_get(void)
{
	return vd_param_swap(XF_ZC_PARAM, -1);
}

/* 0 once the module holds @v, else -EIO. */
static inline int xf_zc_set(long v)
{
	return vd_param_swap(XF_ZC_PARAM, v) >= 0 && xf_zc_get() == v ? 0 : -EIO;
}

/* Waits for one CQE of @ring; asserts it is @wr_id with @status. */
#define XF_EXPECT_CQE(ring, id, st, cqe) do {					\
	ASSERT_EQ(1U, vd_cring_wait((ring), (cqe), 1, XF_WAIT_MS))		\
		TH_LOG("no completion for wr %llu", (unsigned long long)(id));	\
	EXPECT_EQ((__u64)(id), (cqe)->wr_id);					\
	EXPECT_EQ((st), (cqe)->status) TH_LOG("wr %llu vendor_err 0x%x",	\
		(unsigned long long)(id), (cqe)->vendor_err);			\
} while (0)

/* A fast-register MR of PD @pd for up to @max_pages pages: its handle, *@stag. */
static inline int xf_alloc_fr(int fd, __u32 pd, __u32 max_pages, __u32 *stag)
{
	struct viaduct_alloc_mr r = {
		.pd_handle = pd, .max_pages = max_pages, .key = 0x11,
	};
	int ret = vd_ioctl(fd, VIADUCT_IOCTL_ALLOC_MR, &r);

	if (ret)
		return ret;
	*stag = r.stag;
	return (int)r.handle;
}

/* @stag with the key @key. */
static inline __u32 xf_with_key(__u32 stag, __u8 key)
{
	return (stag & ~VIADUCT_STAG_KEY_MASK) | key;
}

/*
 * Side @s registers @n SGEs of its buffer in a fast-register MR under
 * @stag (its key included) at @iova with @access, by a FAST_REG WR (wr_id
 * 700) on its QP, and waits for the completion: @want.
 */
static inline void xf_fast_reg(struct __test_metadata *_metadata, struct xf_side *s, __u32 stag,
			       __u64 iova, __u32 access, const struct xf_sge *sg, int n, __u8 want)
{
	struct viaduct_cqe cqe;

	xf_post_send_imm_q(s, &s->q, 700, VIADUCT_OP_FAST_REG, VIADUCT_SQE_SIGNALED, sg, n, stag,
			   iova, access);
	XF_EXPECT_CQE(&s->q.scq, 700, want, &cqe);
	EXPECT_EQ(VIADUCT_WC_FAST_REG, cqe.opcode);
}

/*
 * The two sides of a transfer suite, each up in its namespace, joined by
 * a veth pair; *@up says the namespaces exist (for xf_pair_down()).
 */
static inline void xf_pair_up(struct __test_metadata *_metadata, struct xf_side *a,
			      struct xf_side *b, int *up)
{
	int id = getpid() % 100000;

	xf_sides_init(a, b, id);
	ASSERT_EQ(0, xf_net_up(a->ns, b->ns));
	*up = 1;
	ASSERT_EQ(0, xf_in_ns(a->ns, xf_side_up, a));
	ASSERT_EQ(0, xf_in_ns(b->ns, xf_side_up, b));
}

/*
 * As xf_pair_up(), in the shared pair of xf_net_share(); *@up stays 0:
 * the pair outlives the test. For suites whose tests leave the
 * namespaces and the veth pair alone.
 */
static inline void xf_pair_share(struct __test_metadata *_metadata, struct xf_side *a,
				 struct xf_side *b, int *up)
{
	*up = 0;
	ASSERT_EQ(0, xf_net_share(a, b));
	ASSERT_EQ(0, xf_in_ns(a->ns, xf_side_up, a));
	ASSERT_EQ(0, xf_in_ns(b->ns, xf_side_up, b));
}

/*
 * b listens on 192.0.2.2, a connects its QP with @flags, b accepts with
 * its QP and the same flags; both see ESTABLISHED. *@conn_id is b's id of
 * the connection; @ev_a and @ev_b (if not NULL) get the ESTABLISHED events.
 */
static inline void xf_pair_connect(struct __test_metadata *_metadata, struct xf_side *a,
				   struct xf_side *b, __u32 flags, __u32 *conn_id,
				   struct viaduct_cm_event *ev_a, struct viaduct_cm_event *ev_b)
{
	struct viaduct_cm_listen l = { 0 };
	struct viaduct_cm_connect c = { 0 };
	struct viaduct_cm_accept acc = { 0 };
	struct viaduct_cm_event ev;

	l.handle = b->id;
	xf_addr(&l.addr, 2, 0);
	ASSERT_EQ(0, vd_ioctl(b->fd, VIADUCT_IOCTL_CM_LISTEN, &l));
	ASSERT_NE(0, l.addr.port);
	c.handle = a->id;
	xf_addr(&c.dst, 2, ntohs(l.addr.port));
	c.param.qp_handle = a->q.c.handle;
	c.param.flags = flags;
	ASSERT_EQ(0, vd_ioctl(a->fd, VIADUCT_IOCTL_CM_CONNECT, &c));

	ASSERT_EQ(0, xf_cm_event(b, &ev, XF_WAIT_MS));
	ASSERT_EQ(VIADUCT_CM_EVENT_CONNECT_REQUEST, ev.type);
	if (conn_id)
		*conn_id = ev.handle;
	acc.handle = ev.handle;
	acc.param.qp_handle = b->q.c.handle;
	acc.param.flags = flags;
	ASSERT_EQ(0, vd_ioctl(b->fd, VIADUCT_IOCTL_CM_ACCEPT, &acc));

	ASSERT_EQ(0, xf_cm_event(a, &ev, XF_WAIT_MS));
	ASSERT_EQ(VIADUCT_CM_EVENT_ESTABLISHED, ev.type) TH_LOG("status %d", ev.status);
	if (ev_a)
		*ev_a = ev;
	ASSERT_EQ(0, xf_cm_event(b, &ev, XF_WAIT_MS));
	ASSERT_EQ(VIADUCT_CM_EVENT_ESTABLISHED, ev.type) TH_LOG("status %d", ev.status);
	if (ev_b)
		*ev_b = ev;
}

/* Closing the contexts destroys ids, QPs, MRs and PDs; then the namespaces go. */
static inline void xf_pair_down(struct xf_side *a, struct xf_side *b, int up)
{
	xf_side_down(a);
	xf_side_down(b);
	if (up)
		xf_net_down(a->ns, b->ns);
}

#endif /* VD_XFER_UTIL_H */
