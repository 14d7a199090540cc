// SPDX-License-Identifier: GPL-2.0
/*
 * One user cannot reach, block or see another: the tests of the local-user
 * isolation rules in Documentation/security.rst.
 *
 * - A registration whose page fault never completes blocks nobody else.
 *   The pages come from a 9p file system whose server is this test (9p
 *   over a socket, trans=fd): it answers everything but reads, as a FUSE
 *   daemon that stopped answering would. While one process is stuck in
 *   REG_MR on such a mapping, another opens, registers and closes, and the
 *   resource report completes and lists the stuck process's context; then
 *   the server answers and the stuck registration completes.
 * - The resource and counter reports show, in a child pid namespace, only
 *   the contexts of that namespace, with their pids as seen there; the
 *   parent namespace sees them too, with its own pids.
 * - A user-namespace root cannot create devices (CAP_NET_ADMIN in the
 *   initial user namespace, as rdma's nldev wants).
 * - The polled doorbell's kernel thread cannot be monopolized: while one
 *   user floods a polled QP in Error, the thread still goes to sleep
 *   (flushing is not work it spins for: the flooder sees NEED_WAKEUP), and
 *   another user's polled QP gets every WQE completed.
 */
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "res_util.h"

/* ------------------------------------------------------------------ */
/* The report, read as a dump                                          */

#define ISO_MAX_ENTRIES	256

struct iso_entry {
	__u32 ctx, pid, type, handle;
};

struct iso_dump {
	int n;
	struct iso_entry e[ISO_MAX_ENTRIES];
};

/* A dump of @cmd (VIADUCT_CMD_RES_GET or _STATS_GET) into @d: 0 or -errno. */
static int iso_dump(int cmd, struct iso_dump *d)
{
	struct genlmsghdr g = { .cmd = cmd, .version = VIADUCT_GENL_VERSION };
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int family = vd_nl_family(), sock, len, ret = -EIO;
	static char ans[65536];
	struct vd_nlreq r;

	d->n = 0;
	if (family < 0)
		return family;
	sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (sock < 0)
		return -errno;
	vd_nl_init(&r, family, NLM_F_DUMP, &g, sizeof(g));
	r.n.nlmsg_seq = 7;
	if (sendto(sock, &r.n, r.n.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		goto out;
	}
	for (;;) {
		struct nlmsghdr *h;

		len = recv(sock, ans, sizeof(ans), 0);
		if (len < 0) {
			ret = -errno;
			goto out;
		}
		for (h = (struct nlmsghdr *)ans; NLMSG_OK(h, (unsigned int)len);
		     h = NLMSG_NEXT(h, len)) {
			struct iso_entry e = { 0 };
			struct nlattr *a;

			if (h->nlmsg_type == NLMSG_DONE) {
				ret = 0;
				goto out;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				ret = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
				goto out;
			}
			for (a = (struct nlattr *)((char *)NLMSG_DATA(h) + GENL_HDRLEN);
			     (char *)a + NLA_HDRLEN <= (char *)h + h->nlmsg_len &&
			     a->nla_len >= NLA_HDRLEN;
			     a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len))) {
				__u32 v = 0;

				if (a->nla_len >= NLA_HDRLEN + 4)
					memcpy(&v, (char *)a + NLA_HDRLEN, 4);
				switch (a->nla_type & NLA_TYPE_MASK) {
				case VIADUCT_A_CTX_ID: e.ctx = v; break;
				case VIADUCT_A_PID: e.pid = v; break;
				case VIADUCT_A_RES_TYPE: e.type = v; break;
				case VIADUCT_A_RES_HANDLE: e.handle = v; break;
				}
			}
			/* the module-wide counters carry no context */
			if (e.ctx && d->n < ISO_MAX_ENTRIES)
				d->e[d->n++] = e;
		}
	}
out:
	close(sock);
	return ret;
}

static int iso_dump_has_pid(const struct iso_dump *d, pid_t pid)
{
	int i;

	for (i = 0; i < d->n; i++)
		if (d->e[i].pid == (__u32)pid)
			return 1;
	return 0;
}

/* A context on the test device with one PD: the fd, or -errno. */
static int iso_ctx_with_pd(const struct vd_testdev *d, int *pd)
{
	int fd = vd_testdev_open_selected(d);

	if (fd < 0)
		return fd;
	*pd = vd_create_pd(fd);
	if (*pd <= 0) {
		close(fd);
		return *pd < 0 ? *pd : -EIO;
	}
	return fd;
}

/* Waits up to @ms for @pid: its wait status, or -1 (then it is killed). */
static int iso_wait(pid_t pid, unsigned int ms)
{
	uint64_t end = vd_now_ms() + ms;
	int status;

	do {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		vd_sleep_ms(20);
	} while (vd_now_ms() < end);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/* Waits up to @ms for @pid: 1 and its status in *@status, or 0 (still running). */
static int iso_wait_until(pid_t pid, unsigned int ms, int *status)
{
	uint64_t end = vd_now_ms() + ms;

	do {
		if (waitpid(pid, status, WNOHANG) == pid)
			return 1;
		vd_sleep_ms(20);
	} while (vd_now_ms() < end);
	return 0;
}

static int iso_read_byte(int fd, unsigned int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&p, 1, ms) != 1 || read(fd, &c, 1) != 1)
		return -1;
	return (unsigned char)c;
}

/* ------------------------------------------------------------------ */
/* A 9P2000.L server that does not answer reads until it is told to   */

#define P9_RLERROR	7
#define P9_TLOPEN	12
#define P9_TGETATTR	24
#define P9_TVERSION	100
#define P9_TATTACH	104
#define P9_TFLUSH	108
#define P9_TWALK	110
#define P9_TREAD	116
#define P9_TCLUNK	120

#define P9_MSIZE	65536
#define P9_FILE_SIZE	(1 << 20)
#define P9_MAX_FIDS	64
#define P9_MAX_READS	64
#define P9_PATTERN(off)	((unsigned char)((off) * 7 + 3))

struct p9msg {
	unsigned char b[P9_MSIZE];
	size_t len;
};

static void p9_put(struct p9msg *m, const void *v, size_t n)
{
	memcpy(m->b + m->len, v, n);
	m->len += n;
}

static void p9_u8(struct p9msg *m, __u8 v) { p9_put(m, &v, 1); }
static void p9_u16(struct p9msg *m, __u16 v) { p9_put(m, &v, 2); }
static void p9_u32(struct p9msg *m, __u32 v) { p9_put(m, &v, 4); }
static void p9_u64(struct p9msg *m, __u64 v) { p9_put(m, &v, 8); }

static void p9_str(struct p9msg *m, const char *s)
{
	p9_u16(m, strlen(s));
	p9_put(m, s, strlen(s));
}

static void p9_qid(struct p9msg *m, __u64 path)
{
	p9_u8(m, path == 1 ? 0x80 : 0);	/* QTDIR for the root */
	p9_u32(m, 0);
	p9_u64(m, path);
}

static void p9_begin(struct p9msg *m, __u8 type, __u16 tag)
{
	m->len = 4;
	p9_u8(m, type);
	p9_u16(m, tag);
}

static int p9_send(int fd, struct p9msg *m)
{
	__u32 size = m->len;

	memcpy(m->b, &size, 4);
	return write(fd, m->b, m->len) == (ssize_t)m->len ? 0 : -1;
}

static int p9_lerror(int fd, __u16 tag, __u32 err)
{
	struct p9msg m;

	p9_begin(&m, P9_RLERROR, tag);
	p9_u32(&m, err);
	return p9_send(fd, &m);
}

static int read_full(int fd, void *buf, size_t n)
{
	size_t done = 0;
	ssize_t r;

	while (done < n) {
		r = read(fd, (char *)buf + done, n - done);
		if (r <= 0)
			return -1;
		done += r;
	}
	return 0;
}

struct p9read {
	__u16 tag;
	__u64 off;
	__u32 count;
};

static int p9_answer_read(int fd, const struct p9read *rd)
{
	static struct p9msg m;
	__u32 n = rd->count, i;

	if (rd->off >= P9_FILE_SIZE)
		n = 0;
	else if (n > P9_FILE_SIZE - rd->off)
		n = P9_FILE_SIZE - rd->off;
	if (n > P9_MSIZE - 11)
		n = P9_MSIZE - 11;
	p9_begin(&m, P9_TREAD + 1, rd->tag);
	p9_u32(&m, n);
	for (i = 0; i < n; i++)
		m.b[m.len + i] = P9_PATTERN(rd->off + i);
	m.len += n;
	return p9_send(fd, &m);
}

/*
 * Serves one client on @fd: a root directory holding one file "f" of
 * P9_FILE_SIZE bytes. Reads are held until a byte arrives on @ctl; the
 * first held read writes 'R' to @note. Returns when the client goes.
 */
static void p9_serve(int fd, int ctl, int note)
{
	static struct p9msg in, out;
	struct p9read held[P9_MAX_READS];
	__u64 fids[P9_MAX_FIDS] = { 0 };
	int nheld = 0, answering = 0, noted = 0, i;

	for (;;) {
		struct pollfd p[2] = {
			{ .fd = fd, .events = POLLIN },
			{ .fd = answering ? -1 : ctl, .events = POLLIN },
		};
		__u32 size, fid, newfid;
		unsigned char *q;
		__u16 tag, nw;
		__u8 type;

		if (poll(p, 2, -1) < 0)
			return;
		if (p[1].revents) {
			/* released: every held read is answered, and later ones at once */
			answering = 1;
			for (i = 0; i < nheld; i++)
				if (p9_answer_read(fd, &held[i]))
					return;
			nheld = 0;
		}
		if (!p[0].revents)
			continue;
		if (read_full(fd, &size, 4) || size < 7 || size > P9_MSIZE ||
		    read_full(fd, in.b, size - 4))
			return;
		type = in.b[0];
		memcpy(&tag, in.b + 1, 2);
		q = in.b + 3;
		memcpy(&fid, q, 4);
		switch (type) {
		case P9_TVERSION:
			p9_begin(&out, P9_TVERSION + 1, tag);
			p9_u32(&out, P9_MSIZE);
			p9_str(&out, "9P2000.L");
			break;
		case P9_TATTACH:
			if (fid < P9_MAX_FIDS)
				fids[fid] = 1;
			p9_begin(&out, P9_TATTACH + 1, tag);
			p9_qid(&out, 1);
			break;
		case P9_TWALK:
			memcpy(&newfid, q + 4, 4);
			memcpy(&nw, q + 8, 2);
			if (fid >= P9_MAX_FIDS || newfid >= P9_MAX_FIDS || !fids[fid] || nw > 1 ||
			    (nw == 1 && (fids[fid] != 1 || memcmp(q + 10, "\1\0f", 3)))) {
				if (p9_lerror(fd, tag, ENOENT))
					return;
				continue;
			}
			fids[newfid] = nw ? 2 : fids[fid];
			p9_begin(&out, P9_TWALK + 1, tag);
			p9_u16(&out, nw);
			if (nw)
				p9_qid(&out, 2);
			break;
		case P9_TGETATTR:
			if (fid >= P9_MAX_FIDS || !fids[fid]) {
				if (p9_lerror(fd, tag, EBADF))
					return;
				continue;
			}
			p9_begin(&out, P9_TGETATTR + 1, tag);
			p9_u64(&out, 0x7ff);			/* P9_STATS_BASIC */
			p9_qid(&out, fids[fid]);
			p9_u32(&out, fids[fid] == 1 ? (S_IFDIR | 0755) : (S_IFREG | 0644));
			p9_u32(&out, 0);			/* uid */
			p9_u32(&out, 0);			/* gid */
			p9_u64(&out, 1);			/* nlink */
			p9_u64(&out, 0);			/* rdev */
			p9_u64(&out, fids[fid] == 1 ? 0 : P9_FILE_SIZE);
			p9_u64(&out, 4096);			/* blksize */
			p9_u64(&out, fids[fid] == 1 ? 0 : P9_FILE_SIZE / 512);
			for (i = 0; i < 10; i++)		/* times, gen, data_version */
				p9_u64(&out, 0);
			break;
		case P9_TLOPEN:
			if (fid >= P9_MAX_FIDS || !fids[fid]) {
				if (p9_lerror(fd, tag, EBADF))
					return;
				continue;
			}
			p9_begin(&out, P9_TLOPEN + 1, tag);
			p9_qid(&out, fids[fid]);
			p9_u32(&out, 0);			/* iounit */
			break;
		case P9_TREAD: {
			struct p9read rd = { .tag = tag };

			memcpy(&rd.off, q + 4, 8);
			memcpy(&rd.count, q + 12, 4);
			if (answering) {
				if (p9_answer_read(fd, &rd))
					return;
				continue;
			}
			if (nheld < P9_MAX_READS)
				held[nheld++] = rd;
			if (!noted && write(note, "R", 1) == 1)
				noted = 1;
			continue;
		}
		case P9_TFLUSH: {
			__u16 old;

			memcpy(&old, q, 2);
			for (i = 0; i < nheld; i++)
				if (held[i].tag == old)
					held[i--] = held[--nheld];
			p9_begin(&out, P9_TFLUSH + 1, tag);
			break;
		}
		case P9_TCLUNK:
			if (fid < P9_MAX_FIDS)
				fids[fid] = 0;
			p9_begin(&out, P9_TCLUNK + 1, tag);
			break;
		default:
			if (p9_lerror(fd, tag, EOPNOTSUPP))
				return;
			continue;
		}
		if (p9_send(fd, &out))
			return;
	}
}

/* ------------------------------------------------------------------ */

FIXTURE(iso)
{
	struct vd_testdev d;
};

FIXTURE_SETUP(iso)
{
	ASSERT_EQ(0, vd_testdev_up(&self->d, "iso"));
}

FIXTURE_TEARDOWN(iso)
{
	vd_testdev_down(&self->d);
}

#define ISO_STUCK_LEN	(64 * 1024)

/*
 * The stuck process: registers ISO_STUCK_LEN bytes of @path mapped
 * privately, read-only; writes its pid, then 0 or the errno of REG_MR, then
 * whether the registered bytes are the server's.
 */
static int iso_stuck_child(const struct vd_testdev *d, const char *path, int res)
{
	unsigned char *p;
	int fd, pd, mr, f;
	pid_t me = getpid();
	char ok;

	fd = iso_ctx_with_pd(d, &pd);
	f = open(path, O_RDONLY);
	if (fd < 0 || f < 0)
		return 10;
	p = mmap(NULL, ISO_STUCK_LEN, PROT_READ, MAP_PRIVATE, f, 0);
	if (p == MAP_FAILED)
		return 11;
	if (write(res, &me, sizeof(me)) != sizeof(me))
		return 12;
	/* the pin faults the pages in: the server holds the reads */
	mr = vd_reg_mr(fd, pd, p, ISO_STUCK_LEN, 0, NULL);
	ok = mr > 0 && p[0] == P9_PATTERN(0) &&
	     p[ISO_STUCK_LEN - 1] == P9_PATTERN(ISO_STUCK_LEN - 1);
	mr = mr > 0 ? 0 : -mr;
	if (write(res, &mr, sizeof(mr)) != sizeof(mr) || write(res, &ok, 1) != 1)
		return 13;
	close(fd);
	return 0;
}

/* Another user: open, PD, register 64 KiB, deregister, close. */
static int iso_other_user(const struct vd_testdev *d)
{
	void *buf = mmap(NULL, ISO_STUCK_LEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	int fd, pd, mr;

	if (buf == MAP_FAILED)
		return 20;
	fd = iso_ctx_with_pd(d, &pd);
	if (fd < 0)
		return 21;
	mr = vd_reg_mr(fd, pd, buf, ISO_STUCK_LEN, VIADUCT_ACCESS_LOCAL_WRITE, NULL);
	if (mr <= 0)
		return 22;
	if (vd_dereg_mr(fd, mr))
		return 23;
	if (close(fd))
		return 24;
	return 0;
}

/* The report: 0 if it completed and lists @pid's context. */
static int iso_report_lists(pid_t pid)
{
	static struct iso_dump dump;

	if (iso_dump(VIADUCT_CMD_RES_GET, &dump))
		return 30;
	if (!iso_dump_has_pid(&dump, pid))
		return 31;
	if (iso_dump(VIADUCT_CMD_STATS_GET, &dump))
		return 32;
	return iso_dump_has_pid(&dump, pid) ? 0 : 33;
}

TEST_F_TIMEOUT(iso, stuck_registration_blocks_nobody, 600)
{
	int sv[2], ctl[2], note[2], res[2], mounted = 0, status, err = -1;
	pid_t server = -1, stuck = -1, other, report, stuck_pid = 0;
	int done_other, done_report, st_other = 0, st_report = 0;
	char dir[64], path[80], opts[160];
	char ok = 0;

	snprintf(dir, sizeof(dir), "/tmp/vdiso%d", getpid());
	snprintf(path, sizeof(path), "%s/f", dir);
	ASSERT_EQ(0, mkdir(dir, 0755));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	ASSERT_EQ(0, pipe2(ctl, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(note, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(res, O_CLOEXEC));

	server = fork();
	ASSERT_LE(0, server);
	if (server == 0) {
		close(sv[0]);
		p9_serve(sv[1], ctl[0], note[1]);
		_exit(0);
	}
	close(sv[1]);
	snprintf(opts, sizeof(opts),
		 "trans=fd,rfdno=%d,wfdno=%d,version=9p2000.L,cache=none,access=any",
		 sv[0], sv[0]);
	if (mount("vdiso", dir, "9p", 0, opts)) {
		TH_LOG("mount 9p over a socket: %s", strerror(errno));
		goto out;
	}
	mounted = 1;
	/* the mount holds the socket itself */
	close(sv[0]);
	sv[0] = -1;

	stuck = fork();
	ASSERT_LE(0, stuck);
	if (stuck == 0)
		_exit(iso_stuck_child(&self->d, path, res[1]));
	ASSERT_EQ(sizeof(stuck_pid), read(res[0], &stuck_pid, sizeof(stuck_pid)));
	/* the registration is waiting for the server */
	ASSERT_EQ('R', iso_read_byte(note[0], 120000))
		TH_LOG("the stuck process's page fault never reached the server");
	/* and is still waiting: nothing came back */
	ASSERT_EQ(-1, iso_read_byte(res[0], 200));

	/* the report runs, and meanwhile another user opens, registers and closes */
	report = fork();
	ASSERT_LE(0, report);
	if (report == 0)
		_exit(iso_report_lists(stuck_pid));
	other = fork();
	ASSERT_LE(0, other);
	if (other == 0)
		_exit(iso_other_user(&self->d));
	/*
	 * Both finish while the registration is stuck. The bound is not a
	 * speed: both take well under a second, and if they wait for the
	 * stuck context they never finish. It stays below the kernel's hung
	 * task timeout (120 s), which the stuck registration would trip.
	 */
	done_other = iso_wait_until(other, 45000, &st_other);
	done_report = iso_wait_until(report, 45000, &st_report);
	/* still stuck then; released, its registration completes with the server's bytes */
	EXPECT_EQ(-1, iso_read_byte(res[0], 10));
	ASSERT_EQ(1, write(ctl[1], "G", 1));
	if (!done_other)
		waitpid(other, &st_other, 0);
	if (!done_report)
		waitpid(report, &st_report, 0);
	EXPECT_TRUE(done_other) TH_LOG("another user's open/register/close waited for the stuck one");
	EXPECT_TRUE(WIFEXITED(st_other) && WEXITSTATUS(st_other) == 0)
		TH_LOG("another user's open/register/close: status %#x", st_other);
	EXPECT_TRUE(done_report) TH_LOG("the resource report waited for the stuck one");
	EXPECT_TRUE(WIFEXITED(st_report) && WEXITSTATUS(st_report) == 0)
		TH_LOG("the resource report: status %#x (31, 33: the stuck context not listed)",
		       st_report);
	ASSERT_EQ(sizeof(err), read(res[0], &err, sizeof(err)));
	EXPECT_EQ(0, err) TH_LOG("REG_MR after the release: %s", strerror(err));
	ASSERT_EQ(1, read(res[0], &ok, 1));
	EXPECT_EQ(1, ok);
	status = iso_wait(stuck, 120000);
	EXPECT_TRUE(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	stuck = -1;
out:
	if (stuck > 0) {
		kill(stuck, SIGKILL);
		waitpid(stuck, NULL, 0);
	}
	if (mounted)
		umount2(dir, MNT_DETACH);
	if (server > 0) {
		kill(server, SIGKILL);
		waitpid(server, NULL, 0);
	}
	rmdir(dir);
	ASSERT_EQ(1, mounted);
}

/*
 * In a child pid namespace: a context of its own, and the reports show it
 * alone, with pid 1. Tells @sync its pid seen from the parent namespace
 * (through its parent) and waits for a byte on @go before it goes.
 */
static int iso_pidns_child(const struct vd_testdev *d, int go)
{
	static struct iso_dump dump;
	int fd, pd, i, cmd;

	fd = iso_ctx_with_pd(d, &pd);
	if (fd < 0)
		return 40;
	if (getpid() != 1)
		return 41;
	for (cmd = VIADUCT_CMD_STATS_GET; cmd <= VIADUCT_CMD_RES_GET; cmd++) {
		if (iso_dump(cmd, &dump))
			return 42;
		/* our context, and nothing of the parent namespace's */
		if (!iso_dump_has_pid(&dump, 1))
			return 43;
		for (i = 0; i < dump.n; i++)
			if (dump.e[i].pid != 1)
				return 44;
	}
	if (iso_read_byte(go, 300000) < 0)
		return 45;
	close(fd);
	return 0;
}

TEST_F_TIMEOUT(iso, report_follows_pid_namespaces, 600)
{
	static struct iso_dump dump;
	int go[2], sync[2], status, pd;
	pid_t mid, inner = 0;

	pd = vd_create_pd(self->d.fd);
	ASSERT_LT(0, pd);
	ASSERT_EQ(0, pipe2(go, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(sync, O_CLOEXEC));
	mid = fork();
	ASSERT_LE(0, mid);
	if (mid == 0) {
		pid_t c;

		if (unshare(CLONE_NEWPID))
			_exit(50);
		c = fork();
		if (c < 0)
			_exit(51);
		if (c == 0)
			_exit(iso_pidns_child(&self->d, go[0]));
		if (write(sync[1], &c, sizeof(c)) != sizeof(c))
			_exit(52);
		if (waitpid(c, &status, 0) != c || !WIFEXITED(status))
			_exit(53);
		_exit(WEXITSTATUS(status));
	}
	ASSERT_EQ(sizeof(inner), read(sync[0], &inner, sizeof(inner)));
	/* the parent namespace sees the child's context under its own pid */
	for (status = 0; status < 600; status++) {
		ASSERT_EQ(0, iso_dump(VIADUCT_CMD_RES_GET, &dump));
		if (iso_dump_has_pid(&dump, inner))
			break;
		vd_sleep_ms(100);
	}
	EXPECT_TRUE(iso_dump_has_pid(&dump, inner));
	EXPECT_TRUE(iso_dump_has_pid(&dump, getpid()));
	EXPECT_FALSE(iso_dump_has_pid(&dump, 1));
	ASSERT_EQ(1, write(go[1], "G", 1));
	status = iso_wait(mid, 300000);
	ASSERT_TRUE(status >= 0 && WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("child namespace step %d", WEXITSTATUS(status));
}

/*
 * A new user namespace's root, with a network namespace of its own: 0 if
 * refused with EPERM, 70 if the kernel has no user namespaces.
 */
static int iso_userns_link_add(void)
{
	int ret;

	if (unshare(CLONE_NEWUSER | CLONE_NEWNET))
		return errno == EINVAL ? 70 : 60;
	ret = vd_nl_link(VIADUCT_CMD_LINK_ADD, "isouns0", "lo");
	if (ret == 0)
		return 61;
	return ret == -EPERM ? 0 : 62;
}

/*
 * An unprivileged user in the initial namespaces: 0 if creating a device on
 * @ifname and removing @devname are refused with EPERM.
 */
static int iso_user_link_add(const char *ifname, const char *devname)
{
	int ret;

	if (setgid(65534) || setuid(65534))
		return 63;
	ret = vd_nl_link(VIADUCT_CMD_LINK_ADD, "isousr0", ifname);
	if (ret == 0)
		return 64;
	ret = ret == -EPERM ? 0 : 65;
	if (!ret && vd_nl_link(VIADUCT_CMD_LINK_DEL, devname, NULL) != -EPERM)
		ret = 66;
	return ret;
}

static int iso_child_status(pid_t pid)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

TEST_F(iso, only_initial_namespace_admins_create_devices)
{
	pid_t pid;
	int st;

	pid = fork();
	if (pid == 0)
		_exit(iso_user_link_add(self->d.ifname, self->d.name));
	st = iso_child_status(pid);
	EXPECT_EQ(0, st) TH_LOG("unprivileged user: step %d (64: created)", st);

	pid = fork();
	if (pid == 0)
		_exit(iso_userns_link_add());
	st = iso_child_status(pid);
	if (st == 70)
		SKIP(return, "the kernel has no user namespaces (CONFIG_USER_NS)");
	EXPECT_EQ(0, st) TH_LOG("user-namespace root: step %d (61: created, 62: other error)", st);
}

/* Posts @n signaled Sends to a polled QP, ringing only when the worker sleeps. */
static int iso_post_polled(int fd, struct vd_qp *q, __u64 first, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n && !vd_sq_full(q); i++)
		vd_post_sqe(q, first + i, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED);
	/* the producer store before the flags load (Documentation/rings.rst) */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (i && (__atomic_load_n(&q->db->flags, __ATOMIC_ACQUIRE) & VIADUCT_DB_F_NEED_WAKEUP) &&
	    vd_doorbell(fd, q->c.handle, VIADUCT_DOORBELL_SQ))
		return -1;
	return i;
}

/*
 * The flooder: a polled QP in Error, its SQ refilled as fast as the worker
 * takes it, never rung. Writes 'W' to @note once it saw NEED_WAKEUP (the
 * worker went to sleep while it flooded), then floods on until @stop
 * becomes readable.
 */
static int iso_flooder(const struct vd_testdev *d, int note, int stop)
{
	struct pollfd p = { .fd = stop, .events = POLLIN };
	uint64_t end = vd_now_ms() + 60000;
	struct viaduct_cqe e;
	int fd, pd, noted = 0;
	unsigned long i = 0, n;
	struct vd_qp q;

	fd = iso_ctx_with_pd(d, &pd);
	if (fd < 0 || vd_qp_make(fd, &q, pd, 0, 0, 256, VIADUCT_QP_F_POLLED, 1))
		return 70;
	while (poll(&p, 1, 0) == 0) {
		for (n = 0; !vd_sq_full(&q); n++)
			vd_post_sqe(&q, i++, VIADUCT_OP_SEND, VIADUCT_SQE_SIGNALED);
		while (vd_cring_poll(&q.scq, &e))
			;
		if (!noted && (__atomic_load_n(&q.db->flags, __ATOMIC_ACQUIRE) &
			       VIADUCT_DB_F_NEED_WAKEUP)) {
			if (write(note, "W", 1) != 1)
				return 71;
			noted = 1;
		}
		if (!noted && vd_now_ms() > end) {
			if (write(note, "N", 1) != 1)
				return 72;
			noted = 1;
		}
		if (!n)
			sched_yield();
	}
	return 0;
}

TEST_F_TIMEOUT(iso, flooded_poller_serves_others, 600)
{
	unsigned int n = vd_scaled(4096, 1024, "WQEs of the second user"), sent = 0, got = 0;
	int note[2], stop[2], pd, r, status, bad = 0;
	struct viaduct_cqe e = { 0 };
	struct vd_qp q;
	uint64_t end;
	pid_t flooder;

	ASSERT_EQ(0, pipe2(note, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(stop, O_CLOEXEC));
	flooder = fork();
	ASSERT_LE(0, flooder);
	if (flooder == 0)
		_exit(iso_flooder(&self->d, note[1], stop[0]));
	/* the worker went to sleep while the flood went on */
	r = iso_read_byte(note[0], 120000);
	EXPECT_EQ('W', r) TH_LOG("the flooder never saw NEED_WAKEUP (%d)", r);

	/* another user's polled QP, while the flood goes on */
	pd = vd_create_pd(self->d.fd);
	ASSERT_LT(0, pd);
	ASSERT_EQ(0, vd_qp_make(self->d.fd, &q, pd, 0, 0, 64, VIADUCT_QP_F_POLLED, 1));
	end = vd_now_ms() + 120000;
	while (got < n && vd_now_ms() < end) {
		if (sent < n) {
			r = iso_post_polled(self->d.fd, &q, sent, n - sent < 16 ? n - sent : 16);
			ASSERT_LE(0, r);
			sent += r;
		}
		while (!bad && vd_cring_poll(&q.scq, &e)) {
			bad = e.wr_id != got || e.status != VIADUCT_WC_FLUSHED;
			got += !bad;
		}
		if (bad)
			break;
		usleep(100);
	}
	EXPECT_FALSE(bad) TH_LOG("CQE %u: wr_id %llu status %u", got,
				 (unsigned long long)e.wr_id, e.status);
	EXPECT_EQ(n, got) TH_LOG("%u of %u WQEs completed", got, n);
	ASSERT_EQ(1, write(stop[1], "S", 1));
	status = iso_wait(flooder, 120000);
	EXPECT_TRUE(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("flooder status %#x", status);
	vd_qp_unmap(&q);
	EXPECT_EQ(0, vd_destroy_qp(self->d.fd, q.c.handle));
	EXPECT_EQ(0, vd_destroy_pd(self->d.fd, pd));
}

TEST_HARNESS_MAIN
