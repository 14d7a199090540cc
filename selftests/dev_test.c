// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/viaduct: open/close, device listing, selection and query, bad
 * arguments, module reference counting, and device removal while open.
 */
#include <arpa/inet.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "vd_util.h"
#include "kselftest_harness.h"

/* Loops that run long under TCG, KASAN and lockdep: a generous timeout. */
FIXTURE(heavy) {
	int unused;
};

FIXTURE_SETUP(heavy)
{
}

FIXTURE_TEARDOWN(heavy)
{
}

TEST_F_TIMEOUT(heavy, open_close_repeatedly, 600)
{
	long before = vd_module_refcnt();
	int i, fd;

	ASSERT_LE(0, before);
	for (i = 0; i < 2000; i++) {
		fd = vd_open();
		ASSERT_LE(0, fd) TH_LOG("open #%d: %s", i, strerror(errno));
		ASSERT_EQ(0, close(fd));
	}
	EXPECT_EQ(before, vd_module_refcnt());
}

TEST(abi_version)
{
	struct viaduct_abi_version v = { .reserved = 0xdead };
	int fd = vd_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, vd_ioctl(fd, VIADUCT_IOCTL_GET_ABI_VERSION, &v));
	EXPECT_EQ(VIADUCT_ABI_VERSION, v.abi_version);
	EXPECT_EQ(0, v.reserved);
	close(fd);
}

TEST(unknown_ioctls_are_enotty)
{
	const unsigned long cmds[] = {
		_IO(VIADUCT_IOCTL_MAGIC, 0x7f),
		_IOWR(VIADUCT_IOCTL_MAGIC, 0xff, struct viaduct_device_attr),
		/* a known number with the wrong size is a different command */
		/* ... when smaller than the first published size */
		_IOWR(VIADUCT_IOCTL_MAGIC, 0x03, struct viaduct_abi_version),
		_IOC(_IOC_READ, VIADUCT_IOCTL_MAGIC, 0x00, 1),
		/* ... or with another direction */
		_IOW(VIADUCT_IOCTL_MAGIC, 0x00, struct viaduct_abi_version),
		/* another driver's magic */
		_IOR('T', 0x01, int),
		0,
	};
	char buf[1024] = { 0 };
	unsigned int i;
	int fd = vd_open();

	ASSERT_LE(0, fd);
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		unsigned long cmd = cmds[i];

		EXPECT_EQ(-ENOTTY, vd_ioctl(fd, cmd, buf)) {
			TH_LOG("cmd %#lx", cmd);
		}
	}
	close(fd);
}

/* "Growing the ABI" in viaduct-abi.h: a newer binary's larger structure. */
TEST(argument_may_grow_with_a_zero_tail)
{
	struct {
		struct viaduct_device_attr attr;
		unsigned char tail[24];
	} q;
	struct {
		struct viaduct_abi_version v;
		unsigned char tail[8];
	} a;
	const unsigned long query = _IOC(_IOC_READ | _IOC_WRITE,
					 VIADUCT_IOCTL_MAGIC, 0x03, sizeof(q));
	unsigned int i;
	int fd = vd_open();

	ASSERT_LE(0, fd);

	/* output only: served, and the bytes the module does not know stay */
	memset(&a, 0xa5, sizeof(a));
	ASSERT_EQ(0, vd_ioctl(fd, _IOC(_IOC_READ, VIADUCT_IOCTL_MAGIC, 0x00,
				       sizeof(a)), &a));
	EXPECT_EQ(VIADUCT_ABI_VERSION, a.v.abi_version);
	for (i = 0; i < sizeof(a.tail); i++)
		EXPECT_EQ(0xa5, a.tail[i]);

	/* a zero tail is ignored: the command runs (no such device here) */
	memset(&q, 0, sizeof(q));
	q.attr.index = 0xfffffff0;
	EXPECT_EQ(-ENODEV, vd_ioctl(fd, query, &q));

	/* a field this module does not know is set: refused, nothing done */
	for (i = 0; i < sizeof(q.tail); i += 7) {
		memset(&q, 0, sizeof(q));
		q.attr.index = VIADUCT_INDEX_SELECTED;
		q.tail[i] = 1;
		EXPECT_EQ(-E2BIG, vd_ioctl(fd, query, &q)) {
			TH_LOG("tail byte %u", i);
		}
	}
	close(fd);
}

TEST(bad_pointers_are_efault)
{
	const unsigned long cmds[] = {
		VIADUCT_IOCTL_GET_ABI_VERSION,
		VIADUCT_IOCTL_LIST_DEVICES,
		VIADUCT_IOCTL_SELECT_DEVICE,
		VIADUCT_IOCTL_QUERY_DEVICE,
	};
	void *const ptrs[] = { NULL, (void *)8, (void *)-4096L };
	unsigned int i, j;
	int fd = vd_open();

	ASSERT_LE(0, fd);
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		for (j = 0; j < sizeof(ptrs) / sizeof(ptrs[0]); j++) {
			int ret = vd_ioctl(fd, cmds[i], ptrs[j]);

			unsigned long cmd = cmds[i];
			void *ptr = ptrs[j];

			EXPECT_EQ(-EFAULT, ret) {
				TH_LOG("cmd %#lx ptr %p", cmd, ptr);
			}
		}
	}
	close(fd);
}

TEST(reserved_fields_must_be_zero)
{
	struct viaduct_select_device sel = { .index = 0, .reserved = 1 };
	int fd = vd_open();

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, vd_ioctl(fd, VIADUCT_IOCTL_SELECT_DEVICE, &sel));
	close(fd);
}

TEST(nothing_selected)
{
	struct viaduct_device_attr attr = { .index = VIADUCT_INDEX_SELECTED };
	struct viaduct_select_device sel = { .index = 0x7ffffff0 };
	int fd = vd_open();

	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENODEV, vd_ioctl(fd, VIADUCT_IOCTL_QUERY_DEVICE, &attr));
	EXPECT_EQ(-ENODEV, vd_ioctl(fd, VIADUCT_IOCTL_SELECT_DEVICE, &sel));
	strcpy(sel.name, "nosuchdev");
	EXPECT_EQ(-ENODEV, vd_ioctl(fd, VIADUCT_IOCTL_SELECT_DEVICE, &sel));
	/* an unterminated name is rejected, not read past its end */
	memset(sel.name, 'x', sizeof(sel.name));
	EXPECT_EQ(-EINVAL, vd_ioctl(fd, VIADUCT_IOCTL_SELECT_DEVICE, &sel));
	close(fd);
}

TEST_F_TIMEOUT(heavy, many_files_hold_module_references, 600)
{
	enum { N = 3000 };
	struct rlimit rl = { N + 64, N + 64 };
	static int fds[N];
	long before;
	int i;

	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	before = vd_module_refcnt();
	ASSERT_LE(0, before);
	for (i = 0; i < N; i++) {
		fds[i] = vd_open();
		ASSERT_LE(0, fds[i]) TH_LOG("open #%d: %s", i, strerror(errno));
	}
	EXPECT_EQ(before + N, vd_module_refcnt());
	/* the module cannot go while files are open */
	EXPECT_EQ(-1, syscall(__NR_delete_module, "viaduct", O_NONBLOCK));
	EXPECT_TRUE(errno == EWOULDBLOCK || errno == EBUSY) TH_LOG("errno %d", errno);
	for (i = 0; i < N; i++)
		ASSERT_EQ(0, close(fds[i]));
	EXPECT_EQ(before, vd_module_refcnt());
}

/* @arg points at the number of rounds. */
static void *open_loop(void *arg)
{
	unsigned long i, rounds = *(unsigned long *)arg;
	long fails = 0;

	for (i = 0; i < rounds; i++) {
		struct viaduct_abi_version v;
		struct viaduct_list_devices ld = { 0 };
		int fd = vd_open();

		if (fd < 0) {
			fails++;
			continue;
		}
		if (vd_ioctl(fd, VIADUCT_IOCTL_GET_ABI_VERSION, &v) ||
		    vd_ioctl(fd, VIADUCT_IOCTL_LIST_DEVICES, &ld))
			fails++;
		close(fd);
	}
	return (void *)fails;
}

TEST_F_TIMEOUT(heavy, concurrent_opens, 600)
{
	unsigned long rounds = vd_scaled(1500, 300, "opens per thread");
	pthread_t th[6];
	long before = vd_module_refcnt();
	unsigned int i;
	void *ret;

	for (i = 0; i < 6; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, open_loop, &rounds));
	for (i = 0; i < 6; i++) {
		ASSERT_EQ(0, pthread_join(th[i], &ret));
		EXPECT_EQ(0, (long)ret);
	}
	EXPECT_EQ(before, vd_module_refcnt());
}

/* A device on a fresh veth pair, created and removed around each test. */
FIXTURE(dev)
{
	char name[VIADUCT_NAME_SIZE];
	char ifname[IF_NAMESIZE];
	int fd;
};

FIXTURE_SETUP(dev)
{
	int id = getpid() % 100000;

	snprintf(self->name, sizeof(self->name), "st%d", id);
	snprintf(self->ifname, sizeof(self->ifname), "vst%d", id);
	ASSERT_EQ(0, vd_make_device(self->name, self->ifname, 1))
		TH_LOG("cannot create test device %s on %s", self->name, self->ifname);
	self->fd = vd_open();
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(dev)
{
	close(self->fd);
	vd_drop_device(self->name, self->ifname);
}

static void check_attr(struct __test_metadata *_metadata,
		       const struct viaduct_device_attr *a,
		       const char *name, const char *ifname)
{
	struct in_addr want;
	unsigned int i;
	int found = 0;

	EXPECT_STREQ(name, a->name);
	EXPECT_STREQ(ifname, a->ifname);
	EXPECT_EQ(if_nametoindex(ifname), a->ifindex);
	EXPECT_EQ(VIADUCT_ABI_VERSION, a->abi_version);
	EXPECT_EQ(1500, a->mtu);
	EXPECT_TRUE(a->flags & VIADUCT_DEV_F_UP);
	EXPECT_LT(0, a->num_addrs);
	EXPECT_GE(VIADUCT_MAX_ADDRS, a->num_addrs);
	inet_pton(AF_INET, "198.51.100.1", &want);
	for (i = 0; i < a->num_addrs && i < VIADUCT_MAX_ADDRS; i++)
		if (a->addrs[i].family == VIADUCT_AF_INET &&
		    !memcmp(a->addrs[i].addr, &want, 4) &&
		    a->addrs[i].prefixlen == 24)
			found = 1;
	EXPECT_TRUE(found) TH_LOG("198.51.100.1/24 not reported");
	EXPECT_LT(0, a->max_qp);
	EXPECT_LT(0, a->max_cq);
	EXPECT_LT(0, a->max_mr);
	EXPECT_LT(0, a->max_pd);
	EXPECT_LT(0, a->max_sge);
	EXPECT_LT(0, a->max_qp_wr);
	EXPECT_LT(0, a->max_cqe);
	EXPECT_LT(0, a->max_ord);
	EXPECT_LT(0, a->max_ird);
	EXPECT_LE(a->max_msg_size, a->max_mr_size);
	EXPECT_EQ(getpagesize(), (int)a->page_size);
	/* what the module does, and what it refuses with EOPNOTSUPP */
	EXPECT_TRUE(a->caps & VIADUCT_DEV_CAP_POLLED_DOORBELL);
	EXPECT_TRUE(a->caps & VIADUCT_DEV_CAP_IMM_DATA);
	EXPECT_TRUE(a->caps & VIADUCT_DEV_CAP_CONVERT_SOCKET);
	EXPECT_TRUE(a->caps & VIADUCT_DEV_CAP_P2P);
	EXPECT_TRUE(a->caps & VIADUCT_DEV_CAP_SRQ);
	EXPECT_TRUE(a->caps & VIADUCT_DEV_CAP_FAST_REG);
	EXPECT_TRUE(a->caps & VIADUCT_DEV_CAP_SEND_INV);
	EXPECT_TRUE(a->caps & VIADUCT_DEV_CAP_LOCAL_FENCE);
	EXPECT_TRUE(a->caps & VIADUCT_DEV_CAP_MW);
	EXPECT_TRUE(a->caps & VIADUCT_DEV_CAP_MODIFY_MR);
	EXPECT_TRUE(a->caps & VIADUCT_DEV_CAP_CM_HANDOFF);
	EXPECT_TRUE(a->caps & VIADUCT_DEV_CAP_CONVERT_DATA);
	EXPECT_TRUE(a->caps & VIADUCT_DEV_CAP_CQ_THRESHOLD);
	EXPECT_TRUE(a->caps & VIADUCT_DEV_CAP_RING_DEPTH);
	EXPECT_FALSE(a->caps & VIADUCT_DEV_CAP_RELIABLE_RECEPTION)
		TH_LOG("caps %#x", a->caps);
	/* no bit the ABI does not name (the highest named one last) */
	EXPECT_EQ(0, a->caps & ~((VIADUCT_DEV_CAP_RING_DEPTH << 1) - 1));
}

/* @caps is an output: whatever came in is replaced, nothing is refused. */
TEST_F_TIMEOUT(dev, caps_ignored_on_input, 120)
{
	struct viaduct_device_attr a1 = { 0 }, a2 = { 0 };
	int idx = vd_find_index(self->fd, self->name);

	ASSERT_LE(0, idx);
	a1.index = idx;
	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_QUERY_DEVICE, &a1));
	a2.index = idx;
	a2.caps = 0xffffffffU;
	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_QUERY_DEVICE, &a2));
	EXPECT_EQ(a1.caps, a2.caps);
	check_attr(_metadata, &a2, self->name, self->ifname);
}

TEST_F_TIMEOUT(dev, list_select_query, 120)
{
	struct viaduct_select_device sel = { 0 };
	struct viaduct_device_attr a1 = { .index = VIADUCT_INDEX_SELECTED };
	struct viaduct_device_attr a2 = { 0 };
	int idx = vd_find_index(self->fd, self->name);

	ASSERT_LE(0, idx);
	strcpy(sel.name, self->name);
	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_SELECT_DEVICE, &sel));
	EXPECT_EQ(-EBUSY, vd_ioctl(self->fd, VIADUCT_IOCTL_SELECT_DEVICE, &sel));
	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_QUERY_DEVICE, &a1));
	check_attr(_metadata, &a1, self->name, self->ifname);
	EXPECT_EQ((unsigned int)idx, a1.index);
	a2.index = idx;
	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_QUERY_DEVICE, &a2));
	EXPECT_EQ(0, memcmp(&a1, &a2, sizeof(a1)));
}

TEST_F_TIMEOUT(dev, select_by_index, 120)
{
	struct viaduct_select_device sel = { 0 };
	struct viaduct_device_attr a = { .index = VIADUCT_INDEX_SELECTED };
	int idx = vd_find_index(self->fd, self->name);

	ASSERT_LE(0, idx);
	sel.index = idx;
	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_SELECT_DEVICE, &sel));
	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_QUERY_DEVICE, &a));
	check_attr(_metadata, &a, self->name, self->ifname);
}

TEST_F_TIMEOUT(dev, list_capacity, 120)
{
	struct viaduct_device_entry ents[2];
	struct viaduct_list_devices ld = { 0 };

	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_LIST_DEVICES, &ld));
	ASSERT_LE(1, ld.count);
	/* capacity 0 asks only the count; a bad array is not touched */
	ld.entries = 8;
	ld.capacity = 0;
	EXPECT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_LIST_DEVICES, &ld));
	ld.capacity = 2;
	EXPECT_EQ(-EFAULT, vd_ioctl(self->fd, VIADUCT_IOCTL_LIST_DEVICES, &ld));
	memset(ents, 0xff, sizeof(ents));
	ld.entries = (unsigned long)ents;
	ld.capacity = 1;
	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_LIST_DEVICES, &ld));
	/* only the capacity is written */
	EXPECT_EQ(0xffffffffU, ents[1].index);
	EXPECT_NE(0, ents[0].name[0]);
	EXPECT_EQ(0, ents[0].name[VIADUCT_NAME_SIZE - 1]);
}

TEST_F_TIMEOUT(dev, interface_deleted_while_open, 120)
{
	struct viaduct_select_device sel = { 0 };
	struct viaduct_device_attr a = { .index = VIADUCT_INDEX_SELECTED };

	strcpy(sel.name, self->name);
	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_SELECT_DEVICE, &sel));
	/* the interface goes away under an open, selected context */
	ASSERT_EQ(0, vd_sh("ip link del %s", self->ifname));
	EXPECT_EQ(-ENODEV, vd_ioctl(self->fd, VIADUCT_IOCTL_QUERY_DEVICE, &a));
	EXPECT_EQ(-ENODEV, vd_find_index(self->fd, self->name));
	/* the name is free again */
	EXPECT_NE(0, vd_sh("%s link show %s >/dev/null 2>&1", vd_ctl_path(), self->name));
}

TEST_F_TIMEOUT(dev, device_deleted_while_open, 120)
{
	struct viaduct_select_device sel = { 0 };
	struct viaduct_device_attr a = { .index = VIADUCT_INDEX_SELECTED };

	strcpy(sel.name, self->name);
	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_SELECT_DEVICE, &sel));
	ASSERT_EQ(0, vd_sh("%s link del %s", vd_ctl_path(), self->name));
	EXPECT_EQ(-ENODEV, vd_ioctl(self->fd, VIADUCT_IOCTL_QUERY_DEVICE, &a));
	/* a new device of the same name is a different device */
	ASSERT_EQ(0, vd_sh("%s link add %s netdev %s >/dev/null", vd_ctl_path(),
			   self->name, self->ifname));
	EXPECT_EQ(-ENODEV, vd_ioctl(self->fd, VIADUCT_IOCTL_QUERY_DEVICE, &a));
}

/* Runs in a child moved to a new network namespace: 0 if it sees nothing. */
static int probe_other_namespace(const char *name, int idx)
{
	struct viaduct_select_device sel = { 0 };
	struct viaduct_list_devices ld = { 0 };
	int fd;

	if (unshare(CLONE_NEWNET))
		return 10;
	fd = vd_open();
	if (fd < 0)
		return 11;
	if (vd_ioctl(fd, VIADUCT_IOCTL_LIST_DEVICES, &ld) || ld.count != 0)
		return 12;
	strcpy(sel.name, name);
	if (vd_ioctl(fd, VIADUCT_IOCTL_SELECT_DEVICE, &sel) != -ENODEV)
		return 13;
	sel.name[0] = 0;
	sel.index = idx;
	if (vd_ioctl(fd, VIADUCT_IOCTL_SELECT_DEVICE, &sel) != -ENODEV)
		return 14;
	close(fd);
	return 0;
}

TEST_F_TIMEOUT(dev, other_namespace_sees_nothing, 120)
{
	int idx = vd_find_index(self->fd, self->name);
	int status;
	pid_t pid;

	ASSERT_LE(0, idx);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(probe_other_namespace(self->name, idx));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("probe step %d failed", WEXITSTATUS(status));
	/* a file opened in the original namespace still sees its device */
	EXPECT_EQ(idx, vd_find_index(self->fd, self->name));
}

TEST_HARNESS_MAIN
