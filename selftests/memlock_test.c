// SPDX-License-Identifier: GPL-2.0
/*
 * Pinned memory accounting: RLIMIT_MEMLOCK for a process without
 * CAP_IPC_LOCK, its bypass with CAP_IPC_LOCK, and release of every pin when
 * a process holding registrations is killed, when it is killed in the
 * middle of registering, and when a region was registered by a child on a
 * file it shares with its parent.
 *
 * Children report by exit status (0 or the number of the failed step):
 * they must not use the harness's ASSERTs, which would run the fixture's
 * teardown in the child.
 */
#include <grp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/capability.h>

#include "res_util.h"

VD_RES_FIXTURE("ml")

/*
 * The test device's open contexts and pinned pages (LINK_GET), or -1: the
 * children open files of their own on it, and other programs may run
 * beside this one on devices of theirs.
 */
static long long dev_ctxs(FIXTURE_DATA(res) *self)
{
	return vd_dev_stat(self->dev.name, VD_ST_CONTEXTS);
}

static long long dev_pinned(FIXTURE_DATA(res) *self)
{
	return vd_dev_stat(self->dev.name, VD_ST_PINNED);
}

#define KB		1024UL
#define NOBODY		65534

/* Drops CAP_IPC_LOCK for good: out of the bounding set, then to an unprivileged uid. */
static int drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (prctl(PR_CAPBSET_DROP, CAP_IPC_LOCK, 0, 0, 0))
		return -1;
	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY))
		return -1;
	/* changing uid from 0 cleared the sets; make sure */
	if (syscall(SYS_capget, &h, d))
		return -1;
	if ((d[0].effective | d[0].permitted) & (1U << CAP_IPC_LOCK))
		return -1;
	return 0;
}

static int set_memlock(unsigned long bytes)
{
	struct rlimit rl = { bytes, bytes };

	return setrlimit(RLIMIT_MEMLOCK, &rl);
}

static int child_memlock(const struct vd_testdev *dev)
{
	const unsigned long P = VD_PAGE;
	int fd, pd, a, b, c;
	char *buf;

	fd = vd_testdev_open_selected(dev);
	if (fd < 0)
		return 1;
	pd = vd_create_pd(fd);
	if (pd < 0)
		return 2;
	buf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return 3;
	if (set_memlock(256 * KB) || drop_ipc_lock())
		return 4;

	a = vd_reg_mr(fd, pd, buf, 128 * KB, VIADUCT_ACCESS_LOCAL_WRITE, NULL);
	if (a <= 0)
		return 10;
	if (vd_vmpin_kb() != 128)
		return 11;
	if (vd_reg_mr(fd, pd, buf + 128 * KB, 512 * KB, VIADUCT_ACCESS_LOCAL_WRITE, NULL) != -ENOMEM)
		return 12;
	/* a failed registration takes nothing */
	if (vd_vmpin_kb() != 128)
		return 13;
	if (vd_reg_mr(fd, pd, buf + 128 * KB, 192 * KB, 0, NULL) != -ENOMEM)
		return 14;
	/* exactly up to the limit */
	b = vd_reg_mr(fd, pd, buf + 128 * KB, 128 * KB, 0, NULL);
	if (b <= 0)
		return 15;
	if (vd_reg_mr(fd, pd, buf + 256 * KB, 1, 0, NULL) != -ENOMEM)
		return 16;
	/* regions sharing a page are each charged for it */
	if (vd_reg_mr(fd, pd, buf, 1, 0, NULL) != -ENOMEM)
		return 17;
	if (vd_dereg_mr(fd, a) || vd_dereg_mr(fd, b))
		return 18;
	if (vd_vmpin_kb() != 0)
		return 19;
	/* the whole budget is back */
	c = vd_reg_mr(fd, pd, buf, 256 * KB, VIADUCT_ACCESS_LOCAL_WRITE, NULL);
	if (c <= 0)
		return 20;
	if (vd_dereg_mr(fd, c))
		return 21;
	/* charged by pages touched: 64 pages at an offset fit, 65 do not */
	c = vd_reg_mr(fd, pd, buf + P - 1, 63 * P + 1, 0, NULL);
	if (c <= 0)
		return 22;
	if (vd_dereg_mr(fd, c))
		return 23;
	if (vd_reg_mr(fd, pd, buf + 1, 256 * KB, 0, NULL) != -ENOMEM)
		return 24;
	if (vd_vmpin_kb() != 0)
		return 25;
	/* a lower limit below what is pinned: existing regions stay, new ones fail */
	a = vd_reg_mr(fd, pd, buf, 64 * KB, 0, NULL);
	if (a <= 0)
		return 26;
	if (set_memlock(32 * KB))
		return 27;
	if (vd_reg_mr(fd, pd, buf, 1, 0, NULL) != -ENOMEM)
		return 28;
	if (vd_dereg_mr(fd, a) || vd_destroy_pd(fd, pd))
		return 29;
	close(fd);
	return 0;
}

static int wait_child(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	if (WIFSIGNALED(st))
		return 1000 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

TEST_F(res, memlock_enforced)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(child_memlock(&self->dev));
	EXPECT_EQ(0, wait_child(pid)) TH_LOG("unprivileged child failed (step number above)");
	vd_snap_expect_back(&self->before, 3000, "memlock_enforced");
}

static int child_cap_bypass(const struct vd_testdev *dev)
{
	int fd = vd_testdev_open_selected(dev), pd, mr;
	char *buf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (fd < 0 || buf == MAP_FAILED)
		return 1;
	if (set_memlock(64 * KB))
		return 2;
	pd = vd_create_pd(fd);
	mr = vd_reg_mr(fd, pd, buf, 1 << 20, VIADUCT_ACCESS_LOCAL_WRITE, NULL);
	if (mr <= 0)
		return 3;
	/* still charged, only not refused */
	if (vd_vmpin_kb() != 1024)
		return 4;
	if (vd_dereg_mr(fd, mr) || vd_vmpin_kb() != 0)
		return 5;
	close(fd);
	return 0;
}

TEST_F(res, cap_ipc_lock_bypasses_limit)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(child_cap_bypass(&self->dev));
	EXPECT_EQ(0, wait_child(pid));
	vd_snap_expect_back(&self->before, 3000, "cap_ipc_lock_bypasses_limit");
}

/*
 * A child with 64 MiB registered (and a CQ and a polled QP mapped) tells
 * its parent, then waits to be killed.
 */
static void child_pin_and_wait(const struct vd_testdev *dev, int wfd, size_t len)
{
	struct viaduct_create_cq cq;
	struct vd_qp q;
	char ok = 1;
	char *buf;
	int fd, pd;

	fd = vd_testdev_open_selected(dev);
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fd < 0 || buf == MAP_FAILED)
		_exit(1);
	pd = vd_create_pd(fd);
	if (vd_reg_mr(fd, pd, buf, len, VIADUCT_ACCESS_LOCAL_WRITE, NULL) <= 0)
		_exit(2);
	if (vd_create_cq(fd, 64, -1, 0, &cq) ||
	    vd_qp_make(fd, &q, pd, cq.handle, cq.handle, 16, VIADUCT_QP_F_POLLED, 0))
		_exit(3);
	vd_post_rqe(&q, 1, NULL, 0, 0);
	vd_doorbell(fd, q.c.handle, VIADUCT_DOORBELL_RQ);
	if (write(wfd, &ok, 1) != 1)
		_exit(4);
	for (;;)
		pause();
}

TEST_F_TIMEOUT(res, killed_child_releases_pins, 120)
{
	const size_t len = 64UL << 20;
	long long pinned0 = dev_pinned(self), pinned;
	long long ctxs0 = dev_ctxs(self);
	long vmpin;
	uint64_t end;
	int p[2], st;
	pid_t pid;
	char c;

	ASSERT_LE(0, pinned0) TH_LOG("device %s: no counters (LINK_GET)", self->dev.name);

	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(p[0]);
		child_pin_and_wait(&self->dev, p[1], len);
	}
	close(p[1]);
	ASSERT_EQ(1, read(p[0], &c, 1)) TH_LOG("child did not get its memory registered");
	close(p[0]);
	/* at least the region (ring memory may be charged too) */
	vmpin = vd_proc_status_kb(pid, "VmPin");
	EXPECT_LE((long)(len >> 10), vmpin);
	EXPECT_EQ(ctxs0 + 1, dev_ctxs(self));
	EXPECT_EQ(pinned0 + (long long)(len / VD_PAGE), dev_pinned(self));

	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* the file's release runs at exit; allow a worker some seconds */
	end = vd_now_ms() + 5000;
	do {
		pinned = dev_pinned(self);
		if (dev_ctxs(self) == ctxs0 && pinned == pinned0)
			break;
		vd_sleep_ms(50);
	} while (vd_now_ms() < end);
	EXPECT_EQ(ctxs0, dev_ctxs(self));
	EXPECT_EQ(pinned0, pinned);
	vd_snap_expect_back(&self->before, 5000, "killed_child_releases_pins");
}

/* Killed at random points while registering and deregistering. */
TEST_F_TIMEOUT(res, killed_while_registering, 120)
{
	long long pinned0 = dev_pinned(self);
	long long ctxs0 = dev_ctxs(self);
	unsigned int i;
	uint64_t end;

	ASSERT_LE(0, pinned0) TH_LOG("device %s: no counters (LINK_GET)", self->dev.name);

	for (i = 0; i < 10; i++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (pid == 0) {
			int fd = vd_testdev_open_selected(&self->dev), pd;
			size_t len = (size_t)(1 + i) << 20;
			char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (fd < 0 || buf == MAP_FAILED)
				_exit(1);
			pd = vd_create_pd(fd);
			for (;;) {
				int mr = vd_reg_mr(fd, pd, buf, len, VIADUCT_ACCESS_LOCAL_WRITE, NULL);

				if (mr > 0)
					vd_dereg_mr(fd, mr);
			}
		}
		vd_sleep_ms(20 + 37 * i);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(SIGKILL + 1000, wait_child(pid));
	}
	end = vd_now_ms() + 5000;
	while (vd_now_ms() < end && (dev_ctxs(self) != ctxs0 || dev_pinned(self) != pinned0))
		vd_sleep_ms(50);
	EXPECT_EQ(ctxs0, dev_ctxs(self));
	EXPECT_EQ(pinned0, dev_pinned(self));
	vd_snap_expect_back(&self->before, 5000, "killed_while_registering");
}

/*
 * A child registers its own memory on the file it shares with its parent
 * and exits. The region belongs to the file: the parent deregisters it,
 * and the charge goes back to the child's (gone) address space.
 */
TEST_F(res, region_of_exited_child)
{
	long long pinned0 = dev_pinned(self);
	int p[2], mr = 0, pd = vd_create_pd(self->fd);
	pid_t pid;

	ASSERT_LT(0, pd);
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		char *buf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int h = vd_reg_mr(self->fd, pd, buf, 1 << 20, VIADUCT_ACCESS_LOCAL_WRITE, NULL);

		if (write(p[1], &h, sizeof(h)) != sizeof(h))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	ASSERT_EQ((ssize_t)sizeof(mr), read(p[0], &mr, sizeof(mr)));
	close(p[0]);
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_LT(0, mr) TH_LOG("child's REG_MR: %s", strerror(-mr));
	/* nothing of it is charged to the parent */
	EXPECT_EQ(self->before.vmpin_kb, vd_vmpin_kb());
	EXPECT_LE(0, pinned0) TH_LOG("device %s: no counters (LINK_GET)", self->dev.name);
	EXPECT_EQ(pinned0 + 256 * 4096 / VD_PAGE, dev_pinned(self));
	EXPECT_EQ(-EBUSY, vd_destroy_pd(self->fd, pd));
	EXPECT_EQ(0, vd_dereg_mr(self->fd, mr));
	EXPECT_EQ(0, vd_destroy_pd(self->fd, pd));
	vd_snap_expect_back(&self->before, 3000, "region_of_exited_child");
}

/* The same, but the parent closes the file instead of deregistering. */
TEST_F(res, region_of_exited_child_closed)
{
	int p[2], mr = 0, pd = vd_create_pd(self->fd);
	pid_t pid;

	ASSERT_LT(0, pd);
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		char *buf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int h = vd_reg_mr(self->fd, pd, buf, 1 << 20, 0, NULL);

		if (write(p[1], &h, sizeof(h)) != sizeof(h))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	ASSERT_EQ((ssize_t)sizeof(mr), read(p[0], &mr, sizeof(mr)));
	close(p[0]);
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_LT(0, mr);
	vd_testdev_close(&self->dev);
	vd_snap_drop_file(&self->before);
	vd_snap_expect_back(&self->before, 3000, "region_of_exited_child_closed");
}

TEST_HARNESS_MAIN
