// SPDX-License-Identifier: GPL-2.0
/*
 * Interoperation with Linux's soft-iWARP (siw): rping(1) from rdma-core
 * serves on an siw device in one namespace, and this program is its client
 * on a viaduct device in the other, speaking rping's protocol:
 *
 *   client: Send {addr, rkey, len} of its source buffer
 *   server: RDMA Read of the source, then Send "go ahead"
 *   client: Send {addr, rkey, len} of its sink buffer
 *   server: RDMA Write into the sink, then Send "go ahead"
 *   client: the sink must equal the source
 *
 * So every opcode crosses the wire both ways between the two stacks:
 * Sends both ways, an RDMA Read served by viaduct, an RDMA Write placed by
 * viaduct. Skipped when siw or rping is not available.
 *
 * The zcopy variants send messages by reference (module parameter
 * zcopy_tx_min, restored afterwards) and check the counters: every message
 * (1), or only the Read Responses of rping's 65000-byte buffer (16384).
 */
#include <endian.h>

#include "xfer_util.h"

#define SIW_PORT	7174
#define SIW_SIZE	65000	/* rping's largest buffer is 64 KiB - 1 */
#define SIW_COUNT	5

/* rping's advertisement of a buffer, big endian on the wire. */
struct siw_rping_info {
	__u64 buf;
	__u32 rkey;
	__u32 size;
};

/* Connects @a to rping; the ESTABLISHED event's flags in *@ev_flags. */
static int siw_connect(struct xf_side *a, __u32 flags, __u32 *ev_flags)
{
	struct viaduct_cm_connect c = { 0 };
	struct viaduct_cm_event ev;
	int ret;

	c.handle = a->id;
	xf_addr(&c.dst, 2, SIW_PORT);
	c.param.qp_handle = a->q.c.handle;
	c.param.flags = flags;
	ret = vd_ioctl(a->fd, VIADUCT_IOCTL_CM_CONNECT, &c);
	if (ret)
		return ret;
	ret = xf_cm_event(a, &ev, XF_WAIT_MS);
	if (ret)
		return ret;
	*ev_flags = ev.flags;
	return ev.type == VIADUCT_CM_EVENT_ESTABLISHED ? 0 : -(int)ev.type;
}

/* Advertises @len bytes at @off with a Send; waits for the Send's CQE. */
static int siw_advertise(struct __test_metadata *_metadata, struct xf_side *a,
			 size_t off, __u32 len, __u64 wr_id)
{
	struct siw_rping_info *info = (void *)(a->buf + XF_BUF - 4096);
	struct xf_sge sge = { XF_BUF - 4096, sizeof(*info) };
	struct viaduct_cqe cqe;

	info->buf = htobe64((unsigned long)(a->buf + off));
	info->rkey = htobe32(a->stag);
	info->size = htobe32(len);
	xf_post_send(a, wr_id, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &sge, 1, 0, 0);
	if (vd_cring_wait(&a->q.scq, &cqe, 1, XF_WAIT_MS) != 1)
		return -ETIMEDOUT;
	EXPECT_EQ(wr_id, cqe.wr_id);
	EXPECT_EQ(VIADUCT_WC_SUCCESS, cqe.status) TH_LOG("vendor_err 0x%x", cqe.vendor_err);
	return cqe.status ? -EIO : 0;
}

/* The server's "go ahead": a Send of its own advertisement. */
static int siw_go_ahead(struct __test_metadata *_metadata, struct xf_side *a, __u64 wr_id)
{
	struct viaduct_cqe cqe;

	if (vd_cring_wait(&a->q.rcq, &cqe, 1, XF_WAIT_MS) != 1)
		return -ETIMEDOUT;
	EXPECT_EQ(wr_id, cqe.wr_id);
	EXPECT_EQ(VIADUCT_WC_SUCCESS, cqe.status);
	EXPECT_EQ(sizeof(struct siw_rping_info), cqe.byte_len);
	return cqe.status ? -EIO : 0;
}

/* rping serving on siw in namespace @nsb, for a client in @nsa. */
struct siw_peer {
	char nsa[32], nsb[32], log[64];
	int id;
	pid_t server;
};

/*
 * Whether a TCP socket in the network namespace of process @pid listens
 * on @port: read from /proc, as ss(8) would be a process per look.
 */
static bool siw_listening(pid_t pid, unsigned int port)
{
	static const char *const tables[] = { "tcp", "tcp6" };
	unsigned int lport, st;
	bool found = false;
	char path[64], line[512];
	FILE *f;
	int i;

	for (i = 0; i < 2 && !found; i++) {
		snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, tables[i]);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (!found && fgets(line, sizeof(line), f))
			found = sscanf(line, " %*u: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x",
				       &lport, &st) == 2 && lport == port && st == 0x0a;
		fclose(f);
	}
	return found;
}

/* 0, or 1 if siw or rping is missing (skip); asserts the rest. */
static int siw_peer_up(struct __test_metadata *_metadata, struct siw_peer *p)
{
	char *nsa = p->nsa, *nsb = p->nsb, *log = p->log;
	int id = getpid() % 100000, i;
	pid_t server;

	p->server = -1;
	if (vd_sh("modprobe siw 2>/dev/null") || vd_sh("command -v rping >/dev/null"))
		return 1;
	p->id = id;
	snprintf(nsa, sizeof(p->nsa), "sa%d", id);
	snprintf(nsb, sizeof(p->nsb), "sb%d", id);
	snprintf(log, sizeof(p->log), "/tmp/rping-%d.log", id);
	/* an ASSERT leaves the test from here (longjmp) */
	ASSERT_EQ(0, xf_net_up(nsa, nsb));
	ASSERT_EQ(0, vd_sh("ip netns exec %s rdma link add siw%d type siw netdev eth0", nsb, id));

	server = fork();
	ASSERT_LE(0, server);
	if (!server) {
		char port[16], count[16], size[16];

		snprintf(port, sizeof(port), "%d", SIW_PORT);
		snprintf(count, sizeof(count), "%d", SIW_COUNT);
		snprintf(size, sizeof(size), "%d", SIW_SIZE);
		if (!freopen(log, "w", stdout) || dup2(1, 2) < 0)
			_exit(126);
		execlp("ip", "ip", "netns", "exec", nsb, "rping", "-s", "-v", "-a", "192.0.2.2",
		       "-p", port, "-C", count, "-S", size, (char *)NULL);
		_exit(127);
	}

	p->server = server;
	/* the server listens once rping has set up its rdma_cm id (15 s at most) */
	for (i = 0; i < 750 && !siw_listening(server, SIW_PORT); i++)
		usleep(20000);
	return 0;
}

static void siw_peer_down(struct siw_peer *p)
{
	unlink(p->log);
	vd_sh("ip netns exec %s rdma link del siw%d 2>/dev/null", p->nsb, p->id);
	xf_net_down(p->nsa, p->nsb);
}

/*
 * @zc_min: zcopy_tx_min for the run (restored by the caller), or -1 to
 * leave it.
 */
static void siw_rping(struct __test_metadata *_metadata, __u32 flags, long zc_min)
{
	long long st0[VD_ST_NR], st[VD_ST_NR], want;
	struct xf_side a = { .fd = -1, .ch = -1 };
	struct xf_sge go = { XF_BUF - 8192, 64 };
	struct siw_peer p;
	char *nsa = p.nsa, *log = p.log;
	__u32 ev_flags = 0;
	int i, ret;

	if (siw_peer_up(_metadata, &p))
		SKIP(return, "siw or rping not available");
	ASSERT_LE(0, p.server);
	if (zc_min >= 0) {
		ASSERT_EQ(0, xf_zc_set(zc_min));
		ASSERT_EQ(0, vd_stats_read(st0));
		ASSERT_LE(0, st0[VD_ST_TX_ZCOPY_MSGS]) TH_LOG("no tx_zcopy_* counters");
	}
	snprintf(a.ns, sizeof(a.ns), "%s", nsa);
	ASSERT_EQ(0, xf_in_ns(nsa, xf_side_up, &a));
	ret = siw_connect(&a, flags, &ev_flags);
	ASSERT_EQ(0, ret) TH_LOG("connect to rping on siw: %d", ret);
	/* siw does not know viaduct's immediate data */
	EXPECT_EQ(0, ev_flags & VIADUCT_CM_F_IMM_DATA);

	for (i = 0; i < SIW_COUNT; i++) {
		size_t src = 4096, dst = 4096 + 2 * SIW_SIZE;
		int n = snprintf((char *)a.buf + src, SIW_SIZE, "rdma-ping-%d: ", i);

		/* rping prints the data: text, cut at its size */
		xf_fill(a.buf + src + n, SIW_SIZE - n - 1, i);
		for (int k = n; k < SIW_SIZE - 1; k++)
			a.buf[src + k] = 'A' + a.buf[src + k] % 26;
		a.buf[src + SIW_SIZE - 1] = 0;
		memset(a.buf + dst, 0, SIW_SIZE);

		xf_post_recv(&a, 2 * i, &go, 1);
		ASSERT_EQ(0, siw_advertise(_metadata, &a, src, SIW_SIZE, 10 * i));
		ASSERT_EQ(0, siw_go_ahead(_metadata, &a, 2 * i));	/* it read */
		xf_post_recv(&a, 2 * i + 1, &go, 1);
		ASSERT_EQ(0, siw_advertise(_metadata, &a, dst, SIW_SIZE, 10 * i + 1));
		ASSERT_EQ(0, siw_go_ahead(_metadata, &a, 2 * i + 1));	/* it wrote */
		ASSERT_EQ(0, memcmp(a.buf + src, a.buf + dst, SIW_SIZE))
			TH_LOG("round %d: what siw wrote back differs", i);
	}

	if (zc_min > 0) {
		/* per round the Read Response, and two advertisements */
		want = st0[VD_ST_TX_ZCOPY_MSGS] + (zc_min == 1 ? 3 : 1) * SIW_COUNT;
		for (i = 0; i < 250; i++) {
			ASSERT_EQ(0, vd_stats_read(st));
			if (st[VD_ST_TX_ZCOPY_MSGS] >= want)
				break;
			usleep(20000);
		}
		EXPECT_EQ(want, st[VD_ST_TX_ZCOPY_MSGS]);
		EXPECT_EQ(st0[VD_ST_TX_ZCOPY_FALLBACKS], st[VD_ST_TX_ZCOPY_FALLBACKS]);
	}

	xf_side_down(&a);
	waitpid(p.server, &ret, 0);
	vd_sh("sed 's/^/# rping: /' %s | cut -c1-100 | tail -n 12", log);
	EXPECT_EQ(SIW_COUNT, vd_sh("exit $(grep -c 'server ping data: rdma-ping-' %s)", log));
	siw_peer_down(&p);
}

/*
 * Immediate data is viaduct's own: siw left it out of the MPA exchange,
 * so a Send with Immediate and an RDMA Write with Immediate are refused
 * on our side (LOC_QP_OP_ERR) and never reach siw. The QP then enters
 * Error, and the next WR is flushed.
 */
static void siw_imm_refused(struct __test_metadata *_metadata, __u8 opcode)
{
	struct xf_side a = { .fd = -1, .ch = -1 };
	struct xf_sge src = { 0, 16 };
	struct viaduct_cqe cqe;
	struct siw_peer p;
	__u32 ev_flags = 0;
	int ret;

	if (siw_peer_up(_metadata, &p))
		SKIP(return, "siw or rping not available");
	ASSERT_LE(0, p.server);
	snprintf(a.ns, sizeof(a.ns), "%s", p.nsa);
	ASSERT_EQ(0, xf_in_ns(p.nsa, xf_side_up, &a));
	ret = siw_connect(&a, VIADUCT_CM_F_CRC, &ev_flags);
	ASSERT_EQ(0, ret) TH_LOG("connect to rping on siw: %d", ret);
	EXPECT_EQ(0, ev_flags & VIADUCT_CM_F_IMM_DATA);

	xf_post_send_imm(&a, 1, opcode, VIADUCT_SQE_SIGNALED, &src, 1,
			 opcode == VIADUCT_OP_RDMA_WRITE ? a.stag : 0,
			 opcode == VIADUCT_OP_RDMA_WRITE ? (unsigned long)a.buf : 0, 0x1234);
	xf_post_send(&a, 2, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED, &src, 1, 0, 0);
	ASSERT_EQ(1U, vd_cring_wait(&a.q.scq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(1U, cqe.wr_id);
	EXPECT_EQ(VIADUCT_WC_LOC_QP_OP_ERR, cqe.status);
	ASSERT_EQ(1U, vd_cring_wait(&a.q.scq, &cqe, 1, XF_WAIT_MS));
	EXPECT_EQ(2U, cqe.wr_id);
	EXPECT_EQ(VIADUCT_WC_FLUSHED, cqe.status);
	EXPECT_EQ(VIADUCT_QPS_ERROR, vd_qp_state(a.fd, a.q.c.handle));

	xf_side_down(&a);
	/* rping got nothing it could use: end it */
	kill(p.server, SIGTERM);
	waitpid(p.server, &ret, 0);
	siw_peer_down(&p);
}

FIXTURE(siw)
{
	long zc_saved;
};

FIXTURE_SETUP(siw)
{
	self->zc_saved = xf_zc_get();
}

FIXTURE_TEARDOWN(siw)
{
	if (self->zc_saved >= 0)
		xf_zc_set(self->zc_saved);
}

TEST_F_TIMEOUT(siw, rping_crc, XF_TIMEOUT_S)
{
	siw_rping(_metadata, VIADUCT_CM_F_CRC, -1);
}

TEST_F_TIMEOUT(siw, rping_nocrc, XF_TIMEOUT_S)
{
	siw_rping(_metadata, 0, -1);
}

TEST_F_TIMEOUT(siw, rping_crc_zcopy_all, XF_TIMEOUT_S)
{
	siw_rping(_metadata, VIADUCT_CM_F_CRC, 1);
}

TEST_F_TIMEOUT(siw, rping_nocrc_zcopy_large, XF_TIMEOUT_S)
{
	siw_rping(_metadata, 0, 16384);
}

TEST_F_TIMEOUT(siw, send_with_immediate_refused, XF_TIMEOUT_S)
{
	siw_imm_refused(_metadata, VIADUCT_OP_SEND);
}

TEST_F_TIMEOUT(siw, write_with_immediate_refused, XF_TIMEOUT_S)
{
	siw_imm_refused(_metadata, VIADUCT_OP_RDMA_WRITE);
}

TEST_HARNESS_MAIN
