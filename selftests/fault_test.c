// SPDX-License-Identifier: GPL-2.0
/*
 * Faults under a connected pair of viaduct QPs (the two namespaces of
 * xfer_util.h, xa<pid> with 192.0.2.1 and xb<pid> with 192.0.2.2):
 *
 *   - the owner's device removed by netlink while RDMA Writes stream into
 *     it: its QPs enter Error with their WRs flushed, it gets
 *     VIADUCT_EVENT_DEVICE_FATAL and each CM id DEVICE_REMOVED, every
 *     destroy command still succeeds, and the peer's QP ends too; and
 *     an id that went through all its events (request, established,
 *     disconnected, removed) gets every one of them;
 *   - the peer's process killed with SIGKILL in the middle of a transfer,
 *     or exiting with its QPs connected and its memory registered;
 *   - the peer's namespace deleted (the veth pair goes, and with it the
 *     survivor's own interface and device);
 *   - a TCP reset injected into the connection (a forged RST with the
 *     sequence number the survivor expects);
 *   - DESTROY_QP and MODIFY_QP to Error, Terminate and Closing of a
 *     connected QP: the peer sees the stream end;
 *   - rmmod refused while a context is open, clean after.
 *
 * In every case the survivor sees its QP in Error, every outstanding WR
 * completed (flushed or failed, in order), an async event and the end of
 * the connection, and once both sides closed their files the module's
 * object, pinned-page and context counters are back where they were.
 */
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/wait.h>

#include "xfer_util.h"

#define FT_NWR		24		/* RDMA Writes in flight */
#define FT_WLEN		(128U << 10)	/* bytes each */
#define FT_NRECV	8
#define FT_BACK_MS	20000		/* counters back after the last close */

FIXTURE(fault)
{
	struct xf_side a;	/* active: connects; the survivor */
	struct xf_side b;	/* passive: listens, accepts; the one that fails */
	__u32 conn_id;		/* b's id of the connection */
	struct viaduct_cm_event ea;	/* a's ESTABLISHED: the ports */
	struct vd_snap before;
	int up;
};

FIXTURE_SETUP(fault)
{
	vd_snap_take(&self->before);
	xf_pair_up(_metadata, &self->a, &self->b, &self->up);
	xf_pair_connect(_metadata, &self->a, &self->b, VIADUCT_CM_F_CRC, &self->conn_id,
			&self->ea, NULL);
	ASSERT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->a.fd, self->a.q.c.handle));
	ASSERT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->b.fd, self->b.q.c.handle));
}

FIXTURE_TEARDOWN(fault)
{
	xf_pair_down(&self->a, &self->b, self->up);
}

/* In a side's namespace: its device goes (netlink LINK_DEL). */
static int ft_dev_del(struct xf_side *s)
{
	return vd_nl_link(VIADUCT_CMD_LINK_DEL, "vd0", NULL);
}

/* @n receives of 4 KiB on @s, wr_id @base + i. */
static void ft_post_recvs(struct xf_side *s, unsigned int n, __u64 base)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct xf_sge d = { XF_BUF - (i + 1) * 4096, 4096 };

		xf_post_recv(s, base + i, &d, 1);
	}
}

/* a streams FT_NWR RDMA Writes into b (wr_id 0..), then one RDMA Read. */
static void ft_stream_writes(struct xf_side *a, struct xf_side *b)
{
	struct xf_sge src = { 0, FT_WLEN }, rd = { FT_WLEN, 4096 };
	unsigned int i;

	for (i = 0; i < FT_NWR; i++)
		xf_post_send(a, i, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED, &src, 1,
			     b->stag, (unsigned long)b->buf + (i % 4) * FT_WLEN);
	xf_post_send(a, FT_NWR, VIADUCT_OP_RDMA_READ, VIADUCT_SQE_SIGNALED, &rd, 1,
		     b->stag, (unsigned long)b->buf);
}

/*
 * Expects @n completions on @ring, wr_id @base.. in order: successes
 * first, then failures only (the first failure ends the QP, the rest are
 * flushed). Returns how many failed.
 */
static unsigned int ft_expect_ended(struct __test_metadata *_metadata, struct vd_cring *ring,
				    unsigned int n, __u64 base)
{
	struct viaduct_cqe cqe = { 0 };
	unsigned int i, failed = 0;

	for (i = 0; i < n; i++) {
		EXPECT_EQ(1U, vd_cring_wait(ring, &cqe, 1, XF_WAIT_MS))
			TH_LOG("completion %u of %u missing", i, n);
		if (_metadata->exit_code)
			return failed;
		EXPECT_EQ(base + i, cqe.wr_id);
		if (cqe.status != VIADUCT_WC_SUCCESS)
			failed++;
		else
			EXPECT_EQ(0U, failed) TH_LOG("wr %llu succeeded after a failure",
						    (unsigned long long)cqe.wr_id);
	}
	/* and nothing more */
	EXPECT_EQ(0, vd_cring_poll(ring, &cqe));
	return failed;
}

/* The next CM event of @s must be @type for @handle. */
static void ft_expect_cm(struct __test_metadata *_metadata, struct xf_side *s, __u32 type,
			 __u32 handle, struct viaduct_cm_event *ev)
{
	ASSERT_EQ(0, xf_cm_event(s, ev, XF_WAIT_MS)) TH_LOG("no CM event %u", type);
	EXPECT_EQ(type, ev->type) TH_LOG("event %u status %d", ev->type, ev->status);
	EXPECT_EQ(handle, ev->handle);
}

/*
 * The survivor's side of every fault: DISCONNECTED (with an error), its QP
 * in Error, an async event for the QP, @nrecv receives flushed and the
 * @nsend WRs posted by ft_stream_writes() all completed, in order.
 */
static void ft_survivor_ends(struct __test_metadata *_metadata, struct xf_side *a,
			     unsigned int nrecv, unsigned int nsend)
{
	struct viaduct_async_event aev;
	struct viaduct_cm_event ev;

	ft_expect_cm(_metadata, a, VIADUCT_CM_EVENT_DISCONNECTED, a->id, &ev);
	EXPECT_NE(0, ev.status) TH_LOG("the connection ended without an error");
	EXPECT_EQ(0, vd_wait_async(a->fd, VIADUCT_EVENT_QP_FATAL, a->q.c.handle, &aev,
				   XF_WAIT_MS))
		TH_LOG("no QP_FATAL for the survivor's QP");
	EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(a->fd, a->q.c.handle));
	if (nrecv)
		EXPECT_EQ(nrecv, ft_expect_ended(_metadata, &a->q.rcq, nrecv, 500));
	if (nsend)
		ft_expect_ended(_metadata, &a->q.scq, nsend, 0);
}

/* Both sides close their files: every counter comes back. */
static void ft_all_back(struct __test_metadata *_metadata, FIXTURE_DATA(fault) *self,
			const char *what)
{
	xf_side_down(&self->a);
	xf_side_down(&self->b);
	vd_snap_expect_back(&self->before, FT_BACK_MS, what);
}

/* --- Device removal ------------------------------------------------- */

TEST_F_TIMEOUT(fault, device_removed_mid_transfer, XF_TIMEOUT_S)
{
	struct viaduct_async_event aev;
	struct viaduct_cm_event ev;
	struct viaduct_cm_create_id cid = { 0 };
	int got_conn = 0, got_listen = 0, i;

	ft_post_recvs(&self->b, FT_NRECV, 1000);
	ft_post_recvs(&self->a, FT_NRECV, 500);
	ft_stream_writes(&self->a, &self->b);
	ASSERT_EQ(0, xf_in_ns(self->b.ns, ft_dev_del, &self->b));

	/* the owner: DEVICE_FATAL, after its QP was flushed */
	ASSERT_EQ(0, vd_wait_async(self->b.fd, VIADUCT_EVENT_DEVICE_FATAL, 0, &aev, XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(self->b.fd, self->b.q.c.handle));
	EXPECT_EQ(FT_NRECV, ft_expect_ended(_metadata, &self->b.q.rcq, FT_NRECV, 1000));
	/* each of its CM ids: DEVICE_REMOVED, the listener too */
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, xf_cm_event(&self->b, &ev, XF_WAIT_MS));
		EXPECT_EQ(VIADUCT_CM_EVENT_DEVICE_REMOVED, ev.type);
		EXPECT_EQ(-ENODEV, ev.status);
		got_conn += ev.handle == self->conn_id;
		got_listen += ev.handle == self->b.id;
	}
	EXPECT_EQ(1, got_conn);
	EXPECT_EQ(1, got_listen);

	/* nothing new on a removed device, but everything can be destroyed */
	EXPECT_EQ(-ENODEV, vd_create_pd(self->b.fd));
	EXPECT_EQ(-ENODEV, vd_doorbell(self->b.fd, self->b.q.c.handle, VIADUCT_DOORBELL_SQ));
	cid.channel_fd = self->b.ch;
	EXPECT_EQ(-ENODEV, vd_ioctl(self->b.fd, VIADUCT_IOCTL_CM_CREATE_ID, &cid));
	EXPECT_EQ(0, vd_destroy(self->b.fd, VIADUCT_IOCTL_CM_DESTROY_ID, self->conn_id));
	EXPECT_EQ(0, vd_destroy(self->b.fd, VIADUCT_IOCTL_CM_DESTROY_ID, self->b.id));
	EXPECT_EQ(0, vd_destroy_qp(self->b.fd, self->b.q.c.handle));
	EXPECT_EQ(0, vd_dereg_mr(self->b.fd, self->b.mr));
	EXPECT_EQ(0, vd_destroy_pd(self->b.fd, self->b.pd));
	EXPECT_EQ(-ENOENT, vd_destroy_qp(self->b.fd, self->b.q.c.handle));

	/* the survivor: its connection ended, everything completed */
	ft_survivor_ends(_metadata, &self->a, FT_NRECV, FT_NWR + 1);
	ft_all_back(_metadata, self, "after the device's removal");
}

/*
 * Every event one id can raise, none of them lost: b's id of the
 * connection had its CONNECT_REQUEST and ESTABLISHED; a closes gracefully
 * (b's id: DISCONNECTED), then b's device goes (DEVICE_REMOVED). The
 * kernel sets aside room for these four when it makes the id, so that no
 * event of a peer's making waits on an allocation that may fail; in the
 * debug flavour a fifth would be a warning, and panic_on_warn ends the run.
 */
TEST_F_TIMEOUT(fault, every_event_of_an_id_delivered, XF_TIMEOUT_S)
{
	struct viaduct_cm_event ev;
	int got_conn = 0, got_listen = 0, i;

	ASSERT_EQ(0, xf_disconnect(&self->a, self->a.id, 0));
	ft_expect_cm(_metadata, &self->b, VIADUCT_CM_EVENT_DISCONNECTED, self->conn_id, &ev);
	EXPECT_EQ(0, ev.status);
	ft_expect_cm(_metadata, &self->a, VIADUCT_CM_EVENT_DISCONNECTED, self->a.id, &ev);
	ASSERT_EQ(0, xf_in_ns(self->b.ns, ft_dev_del, &self->b));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, xf_cm_event(&self->b, &ev, XF_WAIT_MS));
		EXPECT_EQ(VIADUCT_CM_EVENT_DEVICE_REMOVED, ev.type);
		got_conn += ev.handle == self->conn_id;
		got_listen += ev.handle == self->b.id;
	}
	EXPECT_EQ(1, got_conn);
	EXPECT_EQ(1, got_listen);
	/* and nothing more */
	EXPECT_EQ(0, vd_wait_readable(self->b.ch, 200));
}

/* A removed device's QP that was never connected is flushed as well. */
TEST_F_TIMEOUT(fault, device_removed_flushes_unconnected_qp, XF_TIMEOUT_S)
{
	struct viaduct_async_event aev;
	struct vd_qp q;

	ASSERT_EQ(0, xf_qp_up(&self->b, &q));
	vd_post_rqe(&q, 77, self->b.buf, 64, self->b.stag);
	ASSERT_EQ(0, vd_doorbell(self->b.fd, q.c.handle, VIADUCT_DOORBELL_RQ));
	ASSERT_EQ(0, xf_in_ns(self->b.ns, ft_dev_del, &self->b));
	ASSERT_EQ(0, vd_wait_async(self->b.fd, VIADUCT_EVENT_DEVICE_FATAL, 0, &aev, XF_WAIT_MS));
	EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(self->b.fd, q.c.handle));
	EXPECT_EQ(1U, ft_expect_ended(_metadata, &q.rcq, 1, 77));
	EXPECT_EQ(0, vd_destroy_qp(self->b.fd, q.c.handle));
	vd_qp_unmap(&q);
	ft_survivor_ends(_metadata, &self->a, 0, 0);
	ft_all_back(_metadata, self, "after the device's removal");
}

/* --- The peer's process ----------------------------------------------- */

/* The child's own mappings of b's rings: they are not inherited (VM_DONTCOPY). */
static int ft_remap(struct xf_side *b)
{
	struct vd_qp *q = &b->q;

	q->db = vd_mmap_key(b->fd, q->c.db_key, q->c.db_size);
	q->sq = vd_mmap_key(b->fd, q->c.sq_key, q->c.sq_size);
	if (q->db == MAP_FAILED || q->sq == MAP_FAILED)
		return -1;
	return vd_cring_map(&q->scq, b->fd, q->c.scq_key, q->c.scq_size, q->c.scq_entries);
}

/*
 * Forks the process that keeps b: the child has the only reference on
 * b's file once the parent closed its own, and streams RDMA Writes of
 * 0x5a into a's buffer until it is killed or (@writes > 0) until that
 * many completed, and then exits with everything still up.
 */
static pid_t ft_fork_peer(struct __test_metadata *_metadata, FIXTURE_DATA(fault) *self,
			  unsigned int writes)
{
	pid_t pid;

	/* the registered pages are the parent's: the child's copy is not sent */
	memset(self->b.buf, 0x5a, 65536);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct xf_side *b = &self->b;
		struct xf_sge src = { 0, 65536 };
		struct viaduct_cqe cqe;
		unsigned int posted = 0, done = 0;

		if (ft_remap(b))
			_exit(3);
		for (;;) {
			while (posted - done < 8)
				xf_post_send(b, posted++, VIADUCT_OP_RDMA_WRITE,
					     VIADUCT_SQE_SIGNALED, &src, 1, self->a.stag,
					     (unsigned long)self->a.buf);
			if (vd_cring_wait(&b->q.scq, &cqe, 1, XF_WAIT_MS) != 1 ||
			    cqe.status != VIADUCT_WC_SUCCESS)
				_exit(2);
			if (++done == writes)
				_exit(0);	/* QPs connected, memory registered */
		}
	}
	/* b is the child's now */
	vd_qp_unmap(&self->b.q);
	close(self->b.ch);
	close(self->b.fd);
	self->b.ch = self->b.fd = -1;
	return pid;
}

/* Waits until the peer's Writes land in a's buffer. */
static int ft_wait_data(struct xf_side *a)
{
	uint64_t end = vd_now_ms() + XF_WAIT_MS;

	while (__atomic_load_n(&a->buf[65535], __ATOMIC_ACQUIRE) != 0x5a) {
		if (vd_now_ms() > end)
			return -ETIMEDOUT;
		vd_sleep_ms(5);
	}
	return 0;
}

TEST_F_TIMEOUT(fault, peer_killed_mid_transfer, XF_TIMEOUT_S)
{
	int status;
	pid_t pid;

	ft_post_recvs(&self->a, FT_NRECV, 500);
	pid = ft_fork_peer(_metadata, self, 0);
	ASSERT_EQ(0, ft_wait_data(&self->a));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	ft_survivor_ends(_metadata, &self->a, FT_NRECV, 0);
	ft_all_back(_metadata, self, "after the peer was killed");
}

TEST_F_TIMEOUT(fault, peer_exits_connected_with_memory_registered, XF_TIMEOUT_S)
{
	int status;
	pid_t pid;

	ft_post_recvs(&self->a, FT_NRECV, 500);
	pid = ft_fork_peer(_metadata, self, 16);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("the peer's Writes failed");
	ft_survivor_ends(_metadata, &self->a, FT_NRECV, 0);
	ft_all_back(_metadata, self, "after the peer exited");
}

TEST_F_TIMEOUT(fault, peer_namespace_deleted, XF_TIMEOUT_S)
{
	int fatal = 0, qp_fatal = 0, removed = 0, i, status;
	struct viaduct_async_event aev;
	struct viaduct_cm_event ev;
	pid_t pid;

	ft_post_recvs(&self->a, FT_NRECV, 500);
	pid = ft_fork_peer(_metadata, self, 0);
	ASSERT_EQ(0, ft_wait_data(&self->a));
	/* the container goes: its process, then its namespace and the veth */
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, vd_sh("ip netns del %s", self->b.ns));

	/*
	 * The veth's other end was a's interface, so a's device goes too:
	 * the connection's end and the removal race, in either order.
	 */
	while (!(fatal && qp_fatal) && !vd_read_async(self->a.fd, &aev, XF_WAIT_MS)) {
		fatal |= aev.type == VIADUCT_EVENT_DEVICE_FATAL;
		qp_fatal |= aev.type == VIADUCT_EVENT_QP_FATAL &&
			    aev.handle == self->a.q.c.handle;
	}
	EXPECT_TRUE(fatal);
	EXPECT_TRUE(qp_fatal);
	for (i = 0; i < 2 && !removed; i++) {
		ASSERT_EQ(0, xf_cm_event(&self->a, &ev, XF_WAIT_MS));
		EXPECT_EQ(self->a.id, ev.handle);
		EXPECT_TRUE(ev.type == VIADUCT_CM_EVENT_DISCONNECTED ||
			    ev.type == VIADUCT_CM_EVENT_DEVICE_REMOVED) TH_LOG("event %u", ev.type);
		removed = ev.type == VIADUCT_CM_EVENT_DEVICE_REMOVED;
	}
	EXPECT_TRUE(removed);
	EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(self->a.fd, self->a.q.c.handle));
	EXPECT_EQ(FT_NRECV, ft_expect_ended(_metadata, &self->a.q.rcq, FT_NRECV, 500));
	EXPECT_EQ(0, vd_destroy(self->a.fd, VIADUCT_IOCTL_CM_DESTROY_ID, self->a.id));
	EXPECT_EQ(0, vd_destroy_qp(self->a.fd, self->a.q.c.handle));
	EXPECT_EQ(0, vd_dereg_mr(self->a.fd, self->a.mr));
	ft_all_back(_metadata, self, "after the peer's namespace went");
}

/* --- A TCP reset ------------------------------------------------------ */

struct ft_seg {
	__u32 saddr, daddr;
	__u16 sport, dport;
	__u32 seq, ack;
	int has_ack;
};

static __u16 ft_csum(const void *p, size_t len, __u32 sum)
{
	const __u8 *b = p;

	for (; len > 1; len -= 2, b += 2)
		sum += (b[0] << 8) | b[1];
	if (len)
		sum += b[0] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* Opens a packet socket on eth0 of the current namespace. */
static int ft_sniffer;
static int ft_sniff_open(struct xf_side *s)
{
	struct sockaddr_ll ll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP) };

	ft_sniffer = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_IP));
	if (ft_sniffer < 0)
		return -errno;
	ll.sll_ifindex = if_nametoindex("eth0");
	if (!ll.sll_ifindex || bind(ft_sniffer, (struct sockaddr *)&ll, sizeof(ll)))
		return -errno;
	return 0;
}

/* The next TCP segment from @sport to @dport seen by the sniffer. */
static int ft_sniff_seg(__u16 sport, __u16 dport, struct ft_seg *seg)
{
	uint64_t end = vd_now_ms() + XF_WAIT_MS;
	unsigned char pkt[2048];

	while (vd_now_ms() < end) {
		const struct iphdr *ip = (const void *)pkt;
		const struct tcphdr *th;
		ssize_t n;

		if (vd_wait_readable(ft_sniffer, 1000) <= 0)
			continue;
		n = recv(ft_sniffer, pkt, sizeof(pkt), 0);
		if (n < (ssize_t)sizeof(*ip) || ip->protocol != IPPROTO_TCP ||
		    n < ip->ihl * 4 + (ssize_t)sizeof(*th))
			continue;
		th = (const void *)(pkt + ip->ihl * 4);
		if (th->source != sport || th->dest != dport || !th->ack)
			continue;
		seg->saddr = ip->saddr;
		seg->daddr = ip->daddr;
		seg->sport = th->source;
		seg->dport = th->dest;
		seg->seq = ntohl(th->seq);
		seg->ack = ntohl(th->ack_seq);
		seg->has_ack = 1;
		return 0;
	}
	return -ETIMEDOUT;
}

/* The RST to send from b's namespace, built by ft_reset_build(). */
static unsigned char ft_rst[sizeof(struct iphdr) + sizeof(struct tcphdr)];

/* An RST answering @seg: from its destination, with the seq it acknowledges. */
static void ft_reset_build(const struct ft_seg *seg)
{
	struct iphdr *ip = (void *)ft_rst;
	struct tcphdr *th = (void *)(ft_rst + sizeof(*ip));
	struct {
		__u32 saddr, daddr;
		__u8 zero, proto;
		__u16 len;
		struct tcphdr th;
	} __attribute__((packed)) ph;

	memset(ft_rst, 0, sizeof(ft_rst));
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons(sizeof(ft_rst));
	ip->ttl = 64;
	ip->protocol = IPPROTO_TCP;
	ip->saddr = seg->daddr;
	ip->daddr = seg->saddr;
	th->source = seg->dport;
	th->dest = seg->sport;
	th->seq = htonl(seg->ack);	/* exactly what the other end expects */
	th->doff = 5;
	th->rst = 1;
	th->window = 0;
	memset(&ph, 0, sizeof(ph));
	ph.saddr = ip->saddr;
	ph.daddr = ip->daddr;
	ph.proto = IPPROTO_TCP;
	ph.len = htons(sizeof(*th));
	ph.th = *th;
	th->check = htons(ft_csum(&ph, sizeof(ph), 0));
	ip->check = htons(ft_csum(ip, sizeof(*ip), 0));
}

static int ft_reset_send(struct xf_side *s)
{
	const struct iphdr *ip = (const void *)ft_rst;
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = ip->daddr };
	int fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = sendto(fd, ft_rst, sizeof(ft_rst), 0, (struct sockaddr *)&to, sizeof(to));
	close(fd);
	return n == sizeof(ft_rst) ? 0 : -EIO;
}

TEST_F_TIMEOUT(fault, tcp_reset_injected, XF_TIMEOUT_S)
{
	struct xf_sge src = { 0, 8 }, rd = { 4096, 4096 };
	struct viaduct_cm_event ev;
	struct viaduct_cqe cqe;
	struct ft_seg seg;
	__u16 aport = self->ea.local.port, bport = self->ea.peer.port;

	ASSERT_EQ(0, xf_in_ns(self->b.ns, ft_sniff_open, &self->b));
	ft_post_recvs(&self->a, FT_NRECV, 500);
	/* a segment from a, carrying what a expects next from b */
	xf_post_send(&self->a, 1, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED, &src, 1,
		     self->b.stag, (unsigned long)self->b.buf);
	XF_EXPECT_CQE(&self->a.q.scq, 1, VIADUCT_WC_SUCCESS, &cqe);
	ASSERT_EQ(0, ft_sniff_seg(aport, bport, &seg));
	close(ft_sniffer);
	ft_reset_build(&seg);
	/* an RDMA Read b never answers: the reset must end it */
	xf_post_send(&self->a, 2, VIADUCT_OP_RDMA_READ, VIADUCT_SQE_SIGNALED, &rd, 1,
		     self->b.stag + 0x100, (unsigned long)self->b.buf);
	ASSERT_EQ(0, xf_in_ns(self->b.ns, ft_reset_send, &self->b));
	ft_survivor_ends(_metadata, &self->a, FT_NRECV, 0);
	/* the Read: answered with an error before the reset, or flushed */
	ASSERT_EQ(1U, vd_cring_wait(&self->a.q.scq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(2U, cqe.wr_id);
	EXPECT_NE(VIADUCT_WC_SUCCESS, cqe.status);

	/* b learns it when it next sends: a's end answers with a reset */
	xf_post_send(&self->b, 9, VIADUCT_OP_RDMA_WRITE, VIADUCT_SQE_SIGNALED, &src, 1,
		     self->a.stag, (unsigned long)self->a.buf);
	ft_expect_cm(_metadata, &self->b, VIADUCT_CM_EVENT_DISCONNECTED, self->conn_id, &ev);
	EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(self->b.fd, self->b.q.c.handle));
	ft_all_back(_metadata, self, "after the reset");
}

/* --- Destroying or ending a connected QP ------------------------------ */

/* b's QP ends by @how; a's outstanding Read and receives must end too. */
static void ft_end_b(struct __test_metadata *_metadata, FIXTURE_DATA(fault) *self,
		     int (*how)(struct xf_side *b))
{
	struct xf_sge rd = { 4096, FT_WLEN };
	struct viaduct_cm_event ev;

	ft_post_recvs(&self->a, FT_NRECV, 500);
	/* a Read b may or may not serve before it goes */
	xf_post_send(&self->a, 1, VIADUCT_OP_RDMA_READ, VIADUCT_SQE_SIGNALED, &rd, 1,
		     self->b.stag, (unsigned long)self->b.buf);
	ASSERT_EQ(0, how(&self->b));
	ft_expect_cm(_metadata, &self->a, VIADUCT_CM_EVENT_DISCONNECTED, self->a.id, &ev);
	EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(self->a.fd, self->a.q.c.handle));
	EXPECT_EQ(FT_NRECV, ft_expect_ended(_metadata, &self->a.q.rcq, FT_NRECV, 500));
	ft_expect_ended(_metadata, &self->a.q.scq, 1, 1);
}

static int ft_destroy_b_qp(struct xf_side *b)
{
	return vd_destroy_qp(b->fd, b->q.c.handle);
}

static int ft_error_b_qp(struct xf_side *b)
{
	return vd_modify_state(b->fd, b->q.c.handle, VIADUCT_QPS_ERROR);
}

static int ft_terminate_b_qp(struct xf_side *b)
{
	return vd_modify_state(b->fd, b->q.c.handle, VIADUCT_QPS_TERMINATE);
}

TEST_F_TIMEOUT(fault, destroy_connected_qp_ends_stream, XF_TIMEOUT_S)
{
	struct viaduct_async_event aev;
	struct viaduct_cm_event ev;

	ft_end_b(_metadata, self, ft_destroy_b_qp);
	/* the peer got a Terminate: local catastrophic, RDMAP */
	ASSERT_EQ(0, vd_wait_async(self->a.fd, VIADUCT_EVENT_QP_FATAL, self->a.q.c.handle,
				   &aev, XF_WAIT_MS));
	EXPECT_EQ(0x0000U, aev.detail);
	/* b's id learns that its stream ended */
	ft_expect_cm(_metadata, &self->b, VIADUCT_CM_EVENT_DISCONNECTED, self->conn_id, &ev);
	ft_all_back(_metadata, self, "after DESTROY_QP");
}

TEST_F_TIMEOUT(fault, modify_error_sends_terminate, XF_TIMEOUT_S)
{
	struct viaduct_async_event aev;
	struct viaduct_cm_event ev;

	ft_end_b(_metadata, self, ft_error_b_qp);
	ASSERT_EQ(0, vd_wait_async(self->a.fd, VIADUCT_EVENT_QP_FATAL, self->a.q.c.handle,
				   &aev, XF_WAIT_MS));
	EXPECT_EQ(0x0000U, aev.detail);
	ft_expect_cm(_metadata, &self->b, VIADUCT_CM_EVENT_DISCONNECTED, self->conn_id, &ev);
	EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(self->b.fd, self->b.q.c.handle));
	/* and Error is left for Idle, to be connected again */
	EXPECT_EQ(0, vd_modify_state(self->b.fd, self->b.q.c.handle, VIADUCT_QPS_IDLE));
	EXPECT_EQ(VIADUCT_QPS_IDLE, vd_qp_state(self->b.fd, self->b.q.c.handle));
	ft_all_back(_metadata, self, "after MODIFY_QP to Error");
}

TEST_F_TIMEOUT(fault, modify_terminate_sends_terminate, XF_TIMEOUT_S)
{
	struct viaduct_async_event aev;
	struct viaduct_cm_event ev;

	ft_end_b(_metadata, self, ft_terminate_b_qp);
	ASSERT_EQ(0, vd_wait_async(self->a.fd, VIADUCT_EVENT_QP_FATAL, self->a.q.c.handle,
				   &aev, XF_WAIT_MS));
	ft_expect_cm(_metadata, &self->b, VIADUCT_CM_EVENT_DISCONNECTED, self->conn_id, &ev);
	/* Terminate ends in Error once the stream closed */
	EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(self->b.fd, self->b.q.c.handle));
	EXPECT_EQ(0, vd_modify_state(self->b.fd, self->b.q.c.handle, VIADUCT_QPS_IDLE));
	ft_all_back(_metadata, self, "after MODIFY_QP to Terminate");
}

TEST_F_TIMEOUT(fault, modify_closing_closes_gracefully, XF_TIMEOUT_S)
{
	struct viaduct_cm_event ev;
	struct viaduct_cqe cqe;
	struct xf_sge d = { 0, 4096 };

	/* a receive of b's stays posted through a graceful close */
	xf_post_recv(&self->b, 42, &d, 1);
	ASSERT_EQ(0, vd_modify_state(self->b.fd, self->b.q.c.handle, VIADUCT_QPS_CLOSING));
	/* both ends see a clean close, the closer's QP goes back to Idle */
	ft_expect_cm(_metadata, &self->a, VIADUCT_CM_EVENT_DISCONNECTED, self->a.id, &ev);
	EXPECT_EQ(0, ev.status);
	ft_expect_cm(_metadata, &self->b, VIADUCT_CM_EVENT_DISCONNECTED, self->conn_id, &ev);
	EXPECT_EQ(0, ev.status);
	EXPECT_EQ(VIADUCT_QPS_IDLE, vd_qp_state(self->b.fd, self->b.q.c.handle));
	EXPECT_EQ(0, vd_cring_poll(&self->b.q.rcq, &cqe));
	ft_all_back(_metadata, self, "after MODIFY_QP to Closing");
}

/* --- The module ------------------------------------------------------- */

static int ft_holders(void)
{
	DIR *d = opendir("/sys/module/viaduct/holders");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

TEST_F_TIMEOUT(fault, rmmod_refused_while_in_use, XF_TIMEOUT_S)
{
	const char *kmod = getenv("VD_KMOD");
	long base = self->before.refcnt;

	/* connected QPs, registered memory: the module stays */
	ASSERT_NE(0, vd_sh("rmmod viaduct 2>/dev/null"));
	ASSERT_EQ(0, access("/sys/module/viaduct", F_OK));
	EXPECT_EQ(VIADUCT_QPS_RTS, vd_qp_state(self->a.fd, self->a.q.c.handle));
	ft_all_back(_metadata, self, "before rmmod");
	EXPECT_EQ(base, vd_module_refcnt());
	if (!kmod || ft_holders() != 0 || base != 0)
		SKIP(return, "viaduct is held by another module or file: no reload here "
			     "(the harness's own rmmod step checks the unload)");
	xf_net_down(self->a.ns, self->b.ns);
	self->up = 0;
	ASSERT_EQ(0, vd_sh("rmmod viaduct"));
	EXPECT_NE(0, access("/sys/module/viaduct", F_OK));
	ASSERT_EQ(0, vd_sh("insmod %s/viaduct.ko", kmod));
}

TEST_HARNESS_MAIN
