/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the resource selftests (PD, MR, CQ, QP, doorbells, channels):
 * a selected test device, object creation, ring mapping and posting, CQ
 * polling, async events, and the leak check that compares counters before
 * and after.
 *
 * Ring protocol as the uapi header describes it: free-running __u32
 * indices, slot = index & (entries - 1), the writer publishes with a
 * store-release after filling the slot and the reader loads with
 * load-acquire. Every index this file writes is written with
 * __atomic_store_n(..., __ATOMIC_RELEASE).
 */
#ifndef VD_RES_UTIL_H
#define VD_RES_UTIL_H

#include <ctype.h>
#include <dirent.h>
#include <linux/genetlink.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include <viaduct/viaduct-nl.h>

#include "vd_util.h"
#include "kselftest_harness.h"

#define VD_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define VD_PAGE			((unsigned long)getpagesize())

/* A kernel address: beyond TASK_SIZE on every 64-bit architecture. */
#define VD_KERNEL_PTR		((void *)0xffff888000000000UL)

static inline uint64_t vd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void vd_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * @len bytes of read-write anonymous memory followed by an unmapped page
 * that stays unmapped: the memory is placed far below where mmap() puts
 * things, so no later mapping fills the hole. NULL on failure.
 */
static inline char *vd_map_before_hole(size_t len)
{
	unsigned long base = 0x3e0000000000UL;
	unsigned int i;

	for (i = 0; i < 64; i++, base += 1UL << 32) {
		void *p = mmap((void *)base, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

		if (p == MAP_FAILED)
			continue;
		if (p == (void *)base && mmap((char *)p + len, VD_PAGE, PROT_NONE,
					      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
					      -1, 0) != MAP_FAILED) {
			munmap((char *)p + len, VD_PAGE);	/* it was free: the hole */
			return p;
		}
		munmap(p, len);
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Test device                                                        */
/* ------------------------------------------------------------------ */

/*
 * A device of its own on a fresh veth pair, named <tag><pid> (so that a
 * test never meets another test's leftovers), and an open file that has
 * selected it.
 */
struct vd_testdev {
	char name[VIADUCT_NAME_SIZE];
	char ifname[IF_NAMESIZE];
	int fd;
	int made;
	struct viaduct_device_attr attr;
};

static inline int vd_testdev_open_selected(const struct vd_testdev *d)
{
	struct viaduct_select_device sel = { 0 };
	int fd = vd_open();

	if (fd < 0)
		return -errno;
	strcpy(sel.name, d->name);
	if (vd_ioctl(fd, VIADUCT_IOCTL_SELECT_DEVICE, &sel)) {
		int err = -errno;

		close(fd);
		return err ? err : -EIO;
	}
	return fd;
}

/*
 * Netlink without helper processes: under TCG every fork+exec of ip(8) or
 * viaductctl costs a good fraction of a second, and the tables make a
 * device per row. The messages are built by hand into one buffer.
 */
struct vd_nlreq {
	struct nlmsghdr n;
	char buf[1024];
};

static inline void *vd_nl_tail(struct vd_nlreq *r)
{
	/* from the whole request, not its first member: the buffer follows */
	return (char *)r + NLMSG_ALIGN(r->n.nlmsg_len);
}

static inline void vd_nl_init(struct vd_nlreq *r, int type, int flags, const void *hdr,
			      size_t hlen)
{
	memset(r, 0, sizeof(*r));
	r->n.nlmsg_type = type;
	r->n.nlmsg_flags = NLM_F_REQUEST | flags;
	r->n.nlmsg_len = NLMSG_LENGTH(hlen);
	memcpy(NLMSG_DATA(&r->n), hdr, hlen);
}

/* Appends raw bytes (a nested header, say), aligned. */
static inline void vd_nl_raw(struct vd_nlreq *r, const void *data, size_t len)
{
	memcpy(vd_nl_tail(r), data, len);
	r->n.nlmsg_len = NLMSG_ALIGN(r->n.nlmsg_len) + NLA_ALIGN(len);
}

static inline struct nlattr *vd_nl_put(struct vd_nlreq *r, int type, const void *data,
				       size_t len)
{
	struct nlattr *a = vd_nl_tail(r);

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	if (len)
		memcpy((char *)a + NLA_HDRLEN, data, len);
	r->n.nlmsg_len = NLMSG_ALIGN(r->n.nlmsg_len) + NLA_ALIGN(a->nla_len);
	return a;
}

static inline struct nlattr *vd_nl_put_str(struct vd_nlreq *r, int type, const char *str)
{
	return vd_nl_put(r, type, str, strlen(str) + 1);
}

static inline void vd_nl_nest_end(struct vd_nlreq *r, struct nlattr *a)
{
	a->nla_len = (char *)&r->n + r->n.nlmsg_len - (char *)a;
}

/*
 * Sends @r and waits for the acknowledgement: 0 or -errno. With @reply,
 * the first non-error answer is copied there (up to @rlen bytes).
 */
static inline int vd_nl_talk(int proto, struct vd_nlreq *r, void *reply, size_t rlen)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	char ans[8192];
	struct nlmsghdr *h = (struct nlmsghdr *)ans;
	int sock, len, ret = -EIO;

	sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, proto);
	if (sock < 0)
		return -errno;
	r->n.nlmsg_flags |= NLM_F_ACK;
	r->n.nlmsg_seq = 1;
	if (sendto(sock, &r->n, r->n.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		goto out;
	}
	for (;;) {
		len = recv(sock, ans, sizeof(ans), 0);
		if (len < (int)sizeof(*h))
			break;
		if (h->nlmsg_type == NLMSG_ERROR) {
			ret = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
			break;
		}
		if (reply) {
			memcpy(reply, ans, (size_t)len < rlen ? (size_t)len : rlen);
			reply = NULL;
		}
	}
out:
	close(sock);
	return ret;
}

/* The generic-netlink family id of "viaduct", or -errno. */
static inline int vd_nl_family(void)
{
	static int family;
	struct genlmsghdr g = { .cmd = CTRL_CMD_GETFAMILY, .version = 1 };
	char ans[4096] = { 0 };
	struct nlmsghdr *h = (struct nlmsghdr *)ans;
	struct vd_nlreq r;
	struct nlattr *a;
	int ret;

	if (family > 0)
		return family;
	vd_nl_init(&r, GENL_ID_CTRL, 0, &g, sizeof(g));
	vd_nl_put_str(&r, CTRL_ATTR_FAMILY_NAME, VIADUCT_GENL_NAME);
	ret = vd_nl_talk(NETLINK_GENERIC, &r, ans, sizeof(ans));
	if (ret)
		return ret;
	for (a = (struct nlattr *)((char *)NLMSG_DATA(h) + GENL_HDRLEN);
	     (char *)a + NLA_HDRLEN <= ans + h->nlmsg_len && a->nla_len >= NLA_HDRLEN;
	     a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len)))
		if (a->nla_type == CTRL_ATTR_FAMILY_ID)
			family = *(__u16 *)((char *)a + NLA_HDRLEN);
	return family > 0 ? family : -ENOENT;
}

/* VIADUCT_CMD_LINK_ADD (with @ifname) or _DEL: 0 or -errno. */
static inline int vd_nl_link(int cmd, const char *devname, const char *ifname)
{
	struct genlmsghdr g = { .cmd = cmd, .version = VIADUCT_GENL_VERSION };
	int family = vd_nl_family();
	struct vd_nlreq r;

	if (family < 0)
		return family;
	vd_nl_init(&r, family, 0, &g, sizeof(g));
	vd_nl_put_str(&r, VIADUCT_A_DEV_NAME, devname);
	if (ifname)
		vd_nl_put_str(&r, VIADUCT_A_IFNAME, ifname);
	return vd_nl_talk(NETLINK_GENERIC, &r, NULL, 0);
}

/* A veth pair @ifname <-> @ifname"p", both up, 198.51.100.1/24 on @ifname. */
static inline int vd_nl_veth(const char *ifname)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
	struct ifaddrmsg ifa = { .ifa_family = AF_INET, .ifa_prefixlen = 24 };
	struct nlattr *info, *data, *peer;
	char peername[IF_NAMESIZE + 2];
	__u8 addr[4] = { 198, 51, 100, 1 };
	struct vd_nlreq r;
	int ret, idx[2], i;

	snprintf(peername, sizeof(peername), "%sp", ifname);
	vd_nl_init(&r, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof(ifi));
	vd_nl_put_str(&r, IFLA_IFNAME, ifname);
	info = vd_nl_put(&r, IFLA_LINKINFO, NULL, 0);
	vd_nl_put_str(&r, IFLA_INFO_KIND, "veth");
	data = vd_nl_put(&r, IFLA_INFO_DATA, NULL, 0);
	peer = vd_nl_put(&r, VETH_INFO_PEER, NULL, 0);
	vd_nl_raw(&r, &ifi, sizeof(ifi));
	vd_nl_put_str(&r, IFLA_IFNAME, peername);
	vd_nl_nest_end(&r, peer);
	vd_nl_nest_end(&r, data);
	vd_nl_nest_end(&r, info);
	ret = vd_nl_talk(NETLINK_ROUTE, &r, NULL, 0);
	if (ret)
		return ret;
	idx[0] = if_nametoindex(ifname);
	idx[1] = if_nametoindex(peername);
	for (i = 0; i < 2; i++) {
		struct ifinfomsg up = {
			.ifi_family = AF_UNSPEC, .ifi_index = idx[i],
			.ifi_flags = IFF_UP, .ifi_change = IFF_UP,
		};

		vd_nl_init(&r, RTM_NEWLINK, 0, &up, sizeof(up));
		ret = vd_nl_talk(NETLINK_ROUTE, &r, NULL, 0);
		if (ret)
			return ret;
	}
	ifa.ifa_index = idx[0];
	vd_nl_init(&r, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof(ifa));
	vd_nl_put(&r, IFA_LOCAL, addr, 4);
	vd_nl_put(&r, IFA_ADDRESS, addr, 4);
	return vd_nl_talk(NETLINK_ROUTE, &r, NULL, 0);
}

static inline int vd_nl_link_del(const char *ifname)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
	struct vd_nlreq r;

	ifi.ifi_index = if_nametoindex(ifname);
	if (!ifi.ifi_index)
		return -ENODEV;
	vd_nl_init(&r, RTM_DELLINK, 0, &ifi, sizeof(ifi));
	return vd_nl_talk(NETLINK_ROUTE, &r, NULL, 0);
}

/* The selected device's attributes into @d->attr: 0, or -3. */
static inline int vd_testdev_query(struct vd_testdev *d)
{
	d->attr.index = VIADUCT_INDEX_SELECTED;
	return vd_ioctl(d->fd, VIADUCT_IOCTL_QUERY_DEVICE, &d->attr) ? -3 : 0;
}

/* The names of the test device @tag of process @id. */
static inline void vd_testdev_names(struct vd_testdev *d, const char *tag, int id)
{
	snprintf(d->name, sizeof(d->name), "%s%d", tag, id % 100000);
	snprintf(d->ifname, sizeof(d->ifname), "v%s%d", tag, id % 100000);
}

/* 0 or a negative step number, for TH_LOG. */
static inline int vd_testdev_up(struct vd_testdev *d, const char *tag)
{
	memset(d, 0, sizeof(*d));
	d->fd = -1;
	vd_testdev_names(d, tag, getpid());
	/*
	 * The same as vd_make_device(), without helper processes. Leftovers of
	 * a crashed earlier run with the same pid go first.
	 */
	if (if_nametoindex(d->ifname))
		vd_nl_link_del(d->ifname);
	if (vd_nl_veth(d->ifname))
		return -1;
	if (vd_nl_link(VIADUCT_CMD_LINK_ADD, d->name, d->ifname)) {
		vd_nl_link_del(d->ifname);
		return -4;
	}
	d->made = 1;
	d->fd = vd_testdev_open_selected(d);
	if (d->fd < 0)
		return -2;
	return vd_testdev_query(d);
}

/* The harness process: the one main() runs in, before it forks tests. */
static pid_t vd_harness_pid;

static void __attribute__((constructor)) vd_harness_pid_init(void)
{
	vd_harness_pid = getpid();
}

/*
 * Like vd_testdev_up(), but the device serves every test of the program:
 * it is named after the harness process (each test's setup runs in a
 * grandchild of it), made by the first test that asks and left in place;
 * the harness process removes it at exit with vd_testdev_unshare(). For
 * tables whose rows need a fresh context, not a fresh device: making and
 * deleting a veth pair and a device costs more than most rows.
 */
static inline int vd_testdev_share(struct vd_testdev *d, const char *tag)
{
	memset(d, 0, sizeof(*d));
	d->fd = -1;	/* teardown closes nothing if this fails early */
	vd_testdev_names(d, tag, vd_harness_pid);
	if (!if_nametoindex(d->ifname) && vd_nl_veth(d->ifname))
		return -1;
	d->fd = vd_testdev_open_selected(d);
	if (d->fd < 0) {
		if (vd_nl_link(VIADUCT_CMD_LINK_ADD, d->name, d->ifname))
			return -4;
		d->fd = vd_testdev_open_selected(d);
		if (d->fd < 0)
			return -2;
	}
	return vd_testdev_query(d);
}

/*
 * In the harness process: removes the device vd_testdev_share() made for
 * its tests. Elsewhere (a test's process that calls exit()): nothing.
 */
static inline void vd_testdev_unshare(const char *tag)
{
	struct vd_testdev d;

	if (getpid() != vd_harness_pid)
		return;
	vd_testdev_names(&d, tag, vd_harness_pid);
	if (!if_nametoindex(d.ifname))
		return;
	vd_nl_link(VIADUCT_CMD_LINK_DEL, d.name, NULL);
	vd_nl_link_del(d.ifname);
}

/* Closes the selected file, leaving the device. */
static inline void vd_testdev_close(struct vd_testdev *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

/* Removes the device, then its interface (whose removal would do as well). */
static inline void vd_testdev_down(struct vd_testdev *d)
{
	vd_testdev_close(d);
	if (d->made) {
		vd_nl_link(VIADUCT_CMD_LINK_DEL, d->name, NULL);
		vd_nl_link_del(d->ifname);
	}
	d->made = 0;
}

/*
 * Enters the named network namespace @ns (/var/run/netns/@ns): a
 * descriptor of the caller's namespace for vd_netns_leave(), or -errno.
 */
static inline int vd_netns_enter(const char *ns)
{
	int self, fd, err = 0;
	char path[96];

	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return -errno;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET))
		err = -errno;
	if (fd >= 0)
		close(fd);
	if (err) {
		close(self);
		return err;
	}
	return self;
}

/* Back to the namespace vd_netns_enter() left (@self): 0 or -errno. */
static inline int vd_netns_leave(int self)
{
	int ret = setns(self, CLONE_NEWNET) ? -errno : 0;

	close(self);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Counters and the leak check                                        */
/* ------------------------------------------------------------------ */

/* The module-wide counters (kernel/stats.h), by their names in viaductctl. */
static const char *const vd_stat_names[] = {
	"contexts", "pds", "mrs", "cqs", "qps", "pinned_pages",
	"doorbells", "worker_polls", "worker_wakeups", "wqes_consumed",
	"cqes_written", "cq_overflows", "tx_zcopy_msgs", "tx_zcopy_copied",
	"tx_zcopy_fallbacks", "tx_direct", "tx_deferred",
	"rx_upcall", "rx_deferred", "tx_onecopy_bytes", "tx_buffered_bytes",
	"rx_onecopy_bytes", "rx_buffered_bytes",
};

enum {
	VD_ST_CONTEXTS, VD_ST_PDS, VD_ST_MRS, VD_ST_CQS, VD_ST_QPS,
	VD_ST_PINNED, VD_ST_DOORBELLS, VD_ST_WORKER_POLLS,
	VD_ST_WORKER_WAKEUPS, VD_ST_WQES, VD_ST_CQES, VD_ST_CQ_OVERFLOWS,
	VD_ST_TX_ZCOPY_MSGS, VD_ST_TX_ZCOPY_COPIED, VD_ST_TX_ZCOPY_FALLBACKS,
	VD_ST_TX_DIRECT, VD_ST_TX_DEFERRED, VD_ST_RX_UPCALL, VD_ST_RX_DEFERRED,
	VD_ST_TX_ONECOPY, VD_ST_TX_BUFFERED, VD_ST_RX_ONECOPY, VD_ST_RX_BUFFERED,
	VD_ST_NR,
};
/* The VD_ST_* of a VIADUCT_A_STAT_* attribute, or -1 (e.g. a context's "srqs"). */
static inline int vd_stat_index(int attr)
{
	if (attr >= VIADUCT_A_STAT_CONTEXTS && attr <= VIADUCT_A_STAT_RX_DEFERRED)
		return attr - VIADUCT_A_STAT_CONTEXTS;
	switch (attr) {
	case VIADUCT_A_STAT_TX_ONECOPY_BYTES:
		return VD_ST_TX_ONECOPY;
	case VIADUCT_A_STAT_TX_BUFFERED_BYTES:
		return VD_ST_TX_BUFFERED;
	case VIADUCT_A_STAT_RX_ONECOPY_BYTES:
		return VD_ST_RX_ONECOPY;
	case VIADUCT_A_STAT_RX_BUFFERED_BYTES:
		return VD_ST_RX_BUFFERED;
	}
	return -1;
}
_Static_assert(VIADUCT_A_STAT_TX_ZCOPY_FALLBACKS - VIADUCT_A_STAT_CONTEXTS ==
	       VD_ST_TX_ZCOPY_FALLBACKS, "VD_ST_* follow VIADUCT_A_STAT_*");
_Static_assert(VIADUCT_A_STAT_RX_DEFERRED - VIADUCT_A_STAT_CONTEXTS ==
	       VD_ST_RX_DEFERRED, "VD_ST_* follow VIADUCT_A_STAT_*");

/* Counters that must come back to their value after every test. */
static const int vd_level_stats[] = {
	VD_ST_CONTEXTS, VD_ST_PDS, VD_ST_MRS, VD_ST_CQS, VD_ST_QPS, VD_ST_PINNED,
};

/* The counters @lo to @hi (VD_ST_*) of the VIADUCT_A_STATS nest @a into @st. */
static inline void vd_stats_nest(const struct nlattr *a, long long st[VD_ST_NR], int lo, int hi)
{
	const struct nlattr *b;

	for (b = (const struct nlattr *)((const char *)a + NLA_HDRLEN);
	     (const char *)b + NLA_HDRLEN <= (const char *)a + a->nla_len &&
	     b->nla_len >= NLA_HDRLEN;
	     b = (const struct nlattr *)((const char *)b + NLA_ALIGN(b->nla_len))) {
		int i = vd_stat_index(b->nla_type);
		__u64 v;

		if (i < lo || i > hi || b->nla_len < NLA_HDRLEN + sizeof(v))
			continue;
		memcpy(&v, (const char *)b + NLA_HDRLEN, sizeof(v));
		st[i] = (long long)v;
	}
}

/*
 * Reads the module-wide counters (VIADUCT_CMD_STATS_GET) straight from
 * the generic-netlink family: 0, or -errno. A leak check takes two reads
 * per test, and under TCG starting viaductctl for each cost more than
 * most tests. The counters follow VIADUCT_A_STAT_CONTEXTS in the order of
 * VD_ST_*; every one asked for must be there.
 */
static inline int vd_stats_read(long long st[VD_ST_NR])
{
	struct genlmsghdr g = { .cmd = VIADUCT_CMD_STATS_GET, .version = VIADUCT_GENL_VERSION };
	int family = vd_nl_family();
	char ans[8192] = { 0 };
	struct nlmsghdr *h = (struct nlmsghdr *)ans;
	struct nlattr *a;
	struct vd_nlreq r;
	unsigned int k;
	int ret;

	for (k = 0; k < VD_ST_NR; k++)
		st[k] = -1;
	if (family < 0)
		return family;
	vd_nl_init(&r, family, 0, &g, sizeof(g));
	ret = vd_nl_talk(NETLINK_GENERIC, &r, ans, sizeof(ans));
	if (ret)
		return ret;
	for (a = (struct nlattr *)((char *)NLMSG_DATA(h) + GENL_HDRLEN);
	     (char *)a + NLA_HDRLEN <= ans + h->nlmsg_len && a->nla_len >= NLA_HDRLEN;
	     a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len)))
		if ((a->nla_type & NLA_TYPE_MASK) == VIADUCT_A_STATS)
			vd_stats_nest(a, st, 0, VD_ST_NR - 1);
	for (k = 0; k < VD_ST_NR; k++)
		if (st[k] < 0)
			return -ENOENT;
	return 0;
}

static inline long long vd_stat(int which)
{
	long long st[VD_ST_NR];

	if (vd_stats_read(st))
		return -1;
	return st[which];
}

/* A field of /proc/<pid>/status in kB (VmPin, VmLck, ...), or -1. */
static inline long vd_proc_status_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t n = strlen(field);
	long v = -1;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static inline long vd_vmpin_kb(void)
{
	return vd_proc_status_kb(0, "VmPin");
}

static inline int vd_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;	/* the directory's own descriptor */
}

/*
 * The counters of device @name (VIADUCT_CMD_LINK_GET) in namespace @ns
 * ("" or NULL: the caller's): the contexts that selected it in
 * st[VD_ST_CONTEXTS], its objects not yet freed in st[VD_ST_PDS] to
 * st[VD_ST_PINNED], the rest -1. 0, or -errno. A netlink socket belongs
 * to the namespace it was made in: the caller enters @ns for the request.
 */
static inline int vd_dev_stats_read(const char *ns, const char *name, long long st[VD_ST_NR])
{
	struct genlmsghdr g = { .cmd = VIADUCT_CMD_LINK_GET, .version = VIADUCT_GENL_VERSION };
	int family = vd_nl_family(), self = -1, ret, k;
	char ans[8192] = { 0 };
	struct nlmsghdr *h = (struct nlmsghdr *)ans;
	struct vd_nlreq r;
	struct nlattr *a;

	for (k = 0; k < VD_ST_NR; k++)
		st[k] = -1;
	if (family < 0)
		return family;
	if (ns && *ns) {
		self = vd_netns_enter(ns);
		if (self < 0)
			return self;
	}
	vd_nl_init(&r, family, 0, &g, sizeof(g));
	vd_nl_put_str(&r, VIADUCT_A_DEV_NAME, name);
	ret = vd_nl_talk(NETLINK_GENERIC, &r, ans, sizeof(ans));
	if (self >= 0) {
		k = vd_netns_leave(self);
		ret = ret ? ret : k;
	}
	if (ret)
		return ret;
	for (a = (struct nlattr *)((char *)NLMSG_DATA(h) + GENL_HDRLEN);
	     (char *)a + NLA_HDRLEN <= ans + h->nlmsg_len && a->nla_len >= NLA_HDRLEN;
	     a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len))) {
		int type = a->nla_type & NLA_TYPE_MASK;

		if (type == VIADUCT_A_CONTEXTS && a->nla_len >= NLA_HDRLEN + sizeof(__u32)) {
			__u32 v;

			memcpy(&v, (char *)a + NLA_HDRLEN, sizeof(v));
			st[VD_ST_CONTEXTS] = v;
		}
		if (type == VIADUCT_A_STATS)
			vd_stats_nest(a, st, VD_ST_PDS, VD_ST_PINNED);
	}
	for (k = VD_ST_CONTEXTS; k <= VD_ST_PINNED; k++)
		if (st[k] < 0)
			return -ENOENT;
	return 0;
}

/* One counter of device @name of the caller's namespace, or -1. */
static inline long long vd_dev_stat(const char *name, int which)
{
	long long st[VD_ST_NR];

	if (vd_dev_stats_read(NULL, name, st))
		return -1;
	return st[which];
}

/*
 * What a test compares before and after: the process's pinned memory and
 * open descriptors, and either the whole module's reference count and
 * counters (vd_snap_take(); then no other program may use the module
 * meanwhile) or those of the test's own devices (vd_snap_take_dev() and
 * _pair(); programs with devices of their own may run beside it). A
 * device's counts keep an object until it is freed, after its context
 * was closed too, so a leak shows on the device it was made on.
 */
#define VD_SNAP_DEVS	2

struct vd_snap {
	unsigned int ndevs;			/* 0: the whole module */
	char ns[VD_SNAP_DEVS][32];		/* "": the caller's namespace */
	char dev[VD_SNAP_DEVS][VIADUCT_NAME_SIZE];
	long refcnt;				/* the module's; -1 for devices */
	long vmpin_kb;
	int nfds;
	int have_stats;
	long long st[VD_SNAP_DEVS][VD_ST_NR];	/* the module's in [0] */
};

/* Reads the counters of @s's scope again. */
static inline void vd_snap_read(struct vd_snap *s)
{
	unsigned int d;

	s->vmpin_kb = vd_vmpin_kb();
	s->nfds = vd_count_fds();
	if (!s->ndevs) {
		s->refcnt = vd_module_refcnt();
		s->have_stats = !vd_stats_read(s->st[0]);
		return;
	}
	s->refcnt = -1;
	s->have_stats = 1;
	for (d = 0; d < s->ndevs; d++)
		if (vd_dev_stats_read(s->ns[d], s->dev[d], s->st[d]))
			s->have_stats = 0;
}

/* A snapshot of the whole module. */
static inline void vd_snap_take(struct vd_snap *s)
{
	memset(s, 0, sizeof(*s));
	vd_snap_read(s);
}

/* Adds device @dev of namespace @ns ("" or NULL: the caller's) to @s's scope. */
static inline void vd_snap_add_dev(struct vd_snap *s, const char *ns, const char *dev)
{
	unsigned int d = s->ndevs++;

	snprintf(s->ns[d], sizeof(s->ns[d]), "%s", ns ? ns : "");
	snprintf(s->dev[d], sizeof(s->dev[d]), "%s", dev);
}

/* A snapshot of device @dev of namespace @ns ("" or NULL: the caller's). */
static inline void vd_snap_take_dev(struct vd_snap *s, const char *ns, const char *dev)
{
	memset(s, 0, sizeof(*s));
	vd_snap_add_dev(s, ns, dev);
	vd_snap_read(s);
}

/* A snapshot of the devices @dev of namespaces @ns_a and @ns_b. */
static inline void vd_snap_take_pair(struct vd_snap *s, const char *ns_a, const char *ns_b,
				     const char *dev)
{
	memset(s, 0, sizeof(*s));
	vd_snap_add_dev(s, ns_a, dev);
	vd_snap_add_dev(s, ns_b, dev);
	vd_snap_read(s);
}

static inline int vd_snap_same(const struct vd_snap *a, const struct vd_snap *b)
{
	unsigned int d, k;

	if (a->refcnt != b->refcnt || a->vmpin_kb != b->vmpin_kb || a->nfds != b->nfds)
		return 0;
	if (a->have_stats && b->have_stats)
		for (d = 0; d < (a->ndevs ? a->ndevs : 1); d++)
			for (k = 0; k < VD_ARRAY_SIZE(vd_level_stats); k++)
				if (a->st[d][vd_level_stats[k]] != b->st[d][vd_level_stats[k]])
					return 0;
	return 1;
}

/*
 * Expects the state of @before again; releases may finish asynchronously
 * (a worker dropping the last reference), so poll for up to @ms.
 */
static inline void vd_snap_check_back(struct __test_metadata *_metadata,
				       const struct vd_snap *before, unsigned int ms,
				       const char *what)
{
	uint64_t end = vd_now_ms() + ms;
	struct vd_snap now = *before;
	unsigned int d, k;

	for (;;) {
		vd_snap_read(&now);
		if (vd_snap_same(before, &now) || vd_now_ms() > end)
			break;
		vd_sleep_ms(20);
	}
	EXPECT_EQ(before->refcnt, now.refcnt) TH_LOG("%s: module refcnt", what);
	EXPECT_EQ(before->vmpin_kb, now.vmpin_kb) TH_LOG("%s: VmPin (kB)", what);
	EXPECT_EQ(before->nfds, now.nfds) TH_LOG("%s: open descriptors", what);
	ASSERT_TRUE(before->have_stats && now.have_stats)
		TH_LOG("%s: the %s counters could not be read", what,
		       before->ndevs ? "devices' (LINK_GET)" : "module's (STATS_GET)");
	for (d = 0; d < (before->ndevs ? before->ndevs : 1); d++) {
		for (k = 0; k < VD_ARRAY_SIZE(vd_level_stats); k++) {
			int i = vd_level_stats[k];

			EXPECT_EQ(before->st[d][i], now.st[d][i])
				TH_LOG("%s: counter %s of %s%s%s", what, vd_stat_names[i],
				       before->ndevs ? before->dev[d] : "the module",
				       before->ns[d][0] ? " in " : "", before->ns[d]);
		}
	}
}

#define vd_snap_expect_back(before, ms, what) \
	vd_snap_check_back(_metadata, before, ms, what)

/*
 * The snapshot as it would be with one open /dev/viaduct file fewer, one
 * that selected the (first) device of a device snapshot.
 */
static inline void vd_snap_drop_file(struct vd_snap *s)
{
	s->nfds--;
	if (!s->ndevs)
		s->refcnt--;
	if (s->have_stats)
		s->st[0][VD_ST_CONTEXTS]--;
}

/* ------------------------------------------------------------------ */
/* Objects                                                            */
/* ------------------------------------------------------------------ */

/* Handle (> 0) or -errno. */
static inline int vd_create_pd(int fd)
{
	struct viaduct_handle h = { 0 };
	int ret = vd_ioctl(fd, VIADUCT_IOCTL_CREATE_PD, &h);

	return ret ? ret : (int)h.handle;
}

static inline int vd_destroy(int fd, unsigned long cmd, __u32 handle)
{
	struct viaduct_handle h = { .handle = handle };

	return vd_ioctl(fd, cmd, &h);
}

static inline int vd_destroy_pd(int fd, __u32 h) { return vd_destroy(fd, VIADUCT_IOCTL_DESTROY_PD, h); }
static inline int vd_dereg_mr(int fd, __u32 h) { return vd_destroy(fd, VIADUCT_IOCTL_DEREG_MR, h); }
static inline int vd_destroy_cq(int fd, __u32 h) { return vd_destroy(fd, VIADUCT_IOCTL_DESTROY_CQ, h); }
static inline int vd_destroy_qp(int fd, __u32 h) { return vd_destroy(fd, VIADUCT_IOCTL_DESTROY_QP, h); }

/* MR handle or -errno; the STag in *@stag if given. */
static inline int vd_reg_mr(int fd, __u32 pd, const void *addr, __u64 len,
			    __u32 access, __u32 *stag)
{
	struct viaduct_reg_mr r = {
		.addr = (unsigned long)addr, .length = len,
		.pd_handle = pd, .access = access, .key = 0x5a,
	};
	int ret = vd_ioctl(fd, VIADUCT_IOCTL_REG_MR, &r);

	if (ret)
		return ret;
	if (stag)
		*stag = r.stag;
	return (int)r.handle;
}

static inline int vd_create_cq(int fd, __u32 entries, int channel,
			       __u64 user_data, struct viaduct_create_cq *out)
{
	memset(out, 0, sizeof(*out));
	out->entries = entries;
	out->channel_fd = channel;
	out->user_data = user_data;
	return vd_ioctl(fd, VIADUCT_IOCTL_CREATE_CQ, out);
}

/* Sensible create arguments: depth 16, one SGE each way, reliable. */
static inline void vd_qp_args(struct viaduct_create_qp *c, __u32 pd,
			      __u32 scq, __u32 rcq)
{
	memset(c, 0, sizeof(*c));
	c->user_data = 0x9e3779b97f4a7c15ULL ^ pd;
	c->pd_handle = pd;
	c->send_cq = scq;
	c->recv_cq = rcq;
	c->reliability = VIADUCT_RELIABILITY_RELIABLE_DELIVERY;
	c->sq_depth = 16;
	c->rq_depth = 16;
	c->max_send_sge = 1;
	c->max_recv_sge = 1;
}

static inline int vd_query_qp(int fd, __u32 qp, struct viaduct_query_qp *q)
{
	memset(q, 0, sizeof(*q));
	q->handle = qp;
	return vd_ioctl(fd, VIADUCT_IOCTL_QUERY_QP, q);
}

static inline int vd_modify_state(int fd, __u32 qp, __u32 state)
{
	struct viaduct_modify_qp m = {
		.handle = qp, .mask = VIADUCT_QP_ATTR_STATE, .state = state,
	};

	return vd_ioctl(fd, VIADUCT_IOCTL_MODIFY_QP, &m);
}

/* QP state, or -errno */
static inline int vd_qp_state(int fd, __u32 qp)
{
	struct viaduct_query_qp q;
	int ret = vd_query_qp(fd, qp, &q);

	return ret ? ret : (int)q.state;
}

static inline int vd_doorbell(int fd, __u32 qp, __u32 flags)
{
	struct viaduct_doorbell_req d = { .handle = qp, .flags = flags };

	return vd_ioctl(fd, VIADUCT_IOCTL_DOORBELL, &d);
}

/* New channel descriptor or -errno. */
static inline int vd_comp_channel(int fd)
{
	struct viaduct_comp_channel c = { .fd = -1 };
	int ret = vd_ioctl(fd, VIADUCT_IOCTL_CREATE_COMP_CHANNEL, &c);

	return ret ? ret : c.fd;
}

static inline int vd_arm_cq(int fd, __u32 cq, __u32 flags)
{
	struct viaduct_arm_cq a = { .handle = cq, .flags = flags };

	return vd_ioctl(fd, VIADUCT_IOCTL_ARM_CQ, &a);
}

/* ARM_CQ moderated by a count of unread CQEs (VIADUCT_DEV_CAP_CQ_THRESHOLD). */
static inline int vd_arm_cq_threshold(int fd, __u32 cq, __u32 flags, __u32 threshold)
{
	struct viaduct_arm_cq a = { .handle = cq, .flags = flags, .threshold = threshold };

	return vd_ioctl(fd, VIADUCT_IOCTL_ARM_CQ, &a);
}

/* ------------------------------------------------------------------ */
/* Mappings and rings                                                 */
/* ------------------------------------------------------------------ */

static inline void *vd_mmap_key(int fd, __u64 key, size_t size)
{
	return mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)key);
}

/* A completion ring: header + CQEs at VIADUCT_RING_HDR_SIZE. */
struct vd_cring {
	struct viaduct_ring *hdr;
	struct viaduct_cqe *cqe;
	__u32 entries;
	__u32 consumer;		/* our copy of the index we own */
	size_t size;
};

static inline int vd_cring_map(struct vd_cring *r, int fd, __u64 key, size_t size,
			       __u32 entries)
{
	void *p;

	memset(r, 0, sizeof(*r));
	if (!size || !entries)
		return -EINVAL;
	p = vd_mmap_key(fd, key, size);
	if (p == MAP_FAILED)
		return -errno;
	r->hdr = p;
	r->cqe = (struct viaduct_cqe *)((char *)p + VIADUCT_RING_HDR_SIZE);
	r->entries = entries;
	r->size = size;
	r->consumer = __atomic_load_n(&r->hdr->consumer, __ATOMIC_RELAXED);
	return 0;
}

static inline void vd_cring_unmap(struct vd_cring *r)
{
	if (r->hdr)
		munmap(r->hdr, r->size);
	r->hdr = NULL;
}

/* CQEs waiting to be read. */
static inline __u32 vd_cring_avail(const struct vd_cring *r)
{
	return __atomic_load_n(&r->hdr->producer, __ATOMIC_ACQUIRE) - r->consumer;
}

/* 1 and the next CQE in *@out, or 0 if the ring is empty. */
static inline int vd_cring_poll(struct vd_cring *r, struct viaduct_cqe *out)
{
	if (!vd_cring_avail(r))
		return 0;
	*out = r->cqe[r->consumer & (r->entries - 1)];
	r->consumer++;
	__atomic_store_n(&r->hdr->consumer, r->consumer, __ATOMIC_RELEASE);
	return 1;
}

/* Reads up to @n CQEs, waiting up to @ms for them; returns how many. */
static inline unsigned int vd_cring_wait(struct vd_cring *r, struct viaduct_cqe *out,
					 unsigned int n, unsigned int ms)
{
	uint64_t end = vd_now_ms() + ms;
	unsigned int got = 0;

	while (got < n) {
		if (vd_cring_poll(r, &out[got])) {
			got++;
			continue;
		}
		if (vd_now_ms() > end)
			break;
		usleep(200);
	}
	return got;
}

/* A QP with everything of it mapped. */
struct vd_qp {
	struct viaduct_create_qp c;
	struct viaduct_doorbell *db;
	void *sq;
	void *rq;
	struct vd_cring scq;	/* private rings, if the QP has them */
	struct vd_cring rcq;
	__u32 sq_prod;		/* our copies of the indices we own */
	__u32 rq_prod;
};

static inline void vd_qp_unmap(struct vd_qp *q)
{
	if (q->db)
		munmap(q->db, q->c.db_size);
	if (q->sq)
		munmap(q->sq, q->c.sq_size);
	if (q->rq)
		munmap(q->rq, q->c.rq_size);
	vd_cring_unmap(&q->scq);
	vd_cring_unmap(&q->rcq);
	q->db = NULL;
	q->sq = q->rq = NULL;
}

/* Creates the QP from @q->c and maps doorbell, rings and private CQs. */
static inline int vd_qp_create(int fd, struct vd_qp *q)
{
	int ret = vd_ioctl(fd, VIADUCT_IOCTL_CREATE_QP, &q->c);

	q->db = NULL;
	q->sq = q->rq = NULL;
	memset(&q->scq, 0, sizeof(q->scq));
	memset(&q->rcq, 0, sizeof(q->rcq));
	q->sq_prod = q->rq_prod = 0;
	if (ret)
		return ret;
	q->db = vd_mmap_key(fd, q->c.db_key, q->c.db_size);
	q->sq = vd_mmap_key(fd, q->c.sq_key, q->c.sq_size);
	/* a QP on an SRQ has no receive ring */
	q->rq = q->c.rq_size ? vd_mmap_key(fd, q->c.rq_key, q->c.rq_size) : NULL;
	if (q->db == MAP_FAILED || q->sq == MAP_FAILED || q->rq == MAP_FAILED) {
		ret = -errno;
		if (q->db == MAP_FAILED)
			q->db = NULL;
		if (q->sq == MAP_FAILED)
			q->sq = NULL;
		if (q->rq == MAP_FAILED)
			q->rq = NULL;
		vd_qp_unmap(q);
		return ret ? ret : -EIO;
	}
	if (!q->c.send_cq) {
		ret = vd_cring_map(&q->scq, fd, q->c.scq_key, q->c.scq_size, q->c.scq_entries);
		if (ret)
			return ret;
	}
	if (!q->c.recv_cq) {
		ret = vd_cring_map(&q->rcq, fd, q->c.rcq_key, q->c.rcq_size, q->c.rcq_entries);
		if (ret)
			return ret;
	}
	q->sq_prod = __atomic_load_n(&q->db->sq_producer, __ATOMIC_RELAXED);
	q->rq_prod = __atomic_load_n(&q->db->rq_producer, __ATOMIC_RELAXED);
	return 0;
}

/*
 * Creates and maps a QP on @pd with CQs @scq/@rcq (0: a private ring) and
 * queues of at least @depth, with @flags; @to_error moves it to Error.
 */
static inline int vd_qp_make(int fd, struct vd_qp *q, __u32 pd, __u32 scq, __u32 rcq,
			     __u32 depth, __u32 flags, int to_error)
{
	int ret;

	memset(q, 0, sizeof(*q));
	vd_qp_args(&q->c, pd, scq, rcq);
	q->c.sq_depth = depth;
	q->c.rq_depth = depth;
	q->c.flags = flags;
	ret = vd_qp_create(fd, q);
	if (ret)
		return ret;
	if (to_error)
		ret = vd_modify_state(fd, q->c.handle, VIADUCT_QPS_ERROR);
	return ret;
}

static inline struct viaduct_sqe *vd_sq_slot(struct vd_qp *q, __u32 idx)
{
	return (struct viaduct_sqe *)((char *)q->sq +
		(size_t)(idx & (q->c.sq_ring_depth - 1)) * q->c.sq_wqe_size);
}

static inline struct viaduct_rqe *vd_rq_slot(struct vd_qp *q, __u32 idx)
{
	return (struct viaduct_rqe *)((char *)q->rq +
		(size_t)(idx & (q->c.rq_ring_depth - 1)) * q->c.rq_wqe_size);
}

static inline __u32 vd_sq_consumer(const struct vd_qp *q)
{
	return __atomic_load_n(&q->db->sq_consumer, __ATOMIC_ACQUIRE);
}

static inline __u32 vd_rq_consumer(const struct vd_qp *q)
{
	return __atomic_load_n(&q->db->rq_consumer, __ATOMIC_ACQUIRE);
}

static inline int vd_sq_full(const struct vd_qp *q)
{
	return q->sq_prod - vd_sq_consumer(q) >= q->c.sq_ring_depth;
}

static inline int vd_rq_full(const struct vd_qp *q)
{
	return q->rq_prod - vd_rq_consumer(q) >= q->c.rq_ring_depth;
}

/*
 * Writes one SQE without SGEs (a zero-length Send, say) into the next slot
 * and publishes the producer index. No doorbell.
 */
static inline void vd_post_sqe(struct vd_qp *q, __u64 wr_id, __u8 opcode, __u8 flags)
{
	struct viaduct_sqe *s = vd_sq_slot(q, q->sq_prod);

	memset(s, 0, q->c.sq_wqe_size);
	s->wr_id = wr_id;
	s->opcode = opcode;
	s->flags = flags;
	q->sq_prod++;
	__atomic_store_n(&q->db->sq_producer, q->sq_prod, __ATOMIC_RELEASE);
}

/* One RQE with a single SGE (@len bytes at @addr, @stag) or none. */
static inline void vd_post_rqe(struct vd_qp *q, __u64 wr_id, const void *addr,
			       __u32 len, __u32 stag)
{
	struct viaduct_rqe *r = vd_rq_slot(q, q->rq_prod);

	memset(r, 0, q->c.rq_wqe_size);
	r->wr_id = wr_id;
	if (len) {
		struct viaduct_sge *sge = (struct viaduct_sge *)(r + 1);

		r->num_sge = 1;
		sge->addr = (unsigned long)addr;
		sge->length = len;
		sge->stag = stag;
	}
	q->rq_prod++;
	__atomic_store_n(&q->db->rq_producer, q->rq_prod, __ATOMIC_RELEASE);
}

/* Waits up to @ms for the kernel to take everything we posted. */
static inline int vd_qp_wait_consumed(const struct vd_qp *q, unsigned int ms)
{
	uint64_t end = vd_now_ms() + ms;

	for (;;) {
		if (vd_sq_consumer(q) == q->sq_prod && vd_rq_consumer(q) == q->rq_prod)
			return 0;
		if (vd_now_ms() > end)
			return -ETIMEDOUT;
		usleep(500);
	}
}

/* ------------------------------------------------------------------ */
/* Events                                                             */
/* ------------------------------------------------------------------ */

/* Waits up to @ms for @fd to become readable: 1, 0 on timeout, -errno. */
static inline int vd_wait_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int ret = poll(&p, 1, ms);

	if (ret < 0)
		return -errno;
	return ret > 0 && (p.revents & POLLIN);
}

/* Next async event from the context's descriptor, waiting up to @ms. */
static inline int vd_read_async(int fd, struct viaduct_async_event *ev, int ms)
{
	ssize_t n;
	int ret = vd_wait_readable(fd, ms);

	if (ret <= 0)
		return ret ? ret : -ETIMEDOUT;
	n = read(fd, ev, sizeof(*ev));
	if (n < 0)
		return -errno;
	return n == sizeof(*ev) ? 0 : -EIO;
}

/* Reads async events until one of @type for @handle arrives (up to @ms). */
static inline int vd_wait_async(int fd, __u32 type, __u32 handle,
				struct viaduct_async_event *ev, int ms)
{
	uint64_t end = vd_now_ms() + ms;

	for (;;) {
		int left = (int)(end - vd_now_ms());
		int ret;

		if (left < 0)
			return -ETIMEDOUT;
		ret = vd_read_async(fd, ev, left);
		if (ret)
			return ret;
		if (ev->type == type && ev->handle == handle)
			return 0;
	}
}

/* ------------------------------------------------------------------ */
/* The polling worker's idle time                                     */
/* ------------------------------------------------------------------ */

static long vd_poll_idle_saved = -1;

/*
 * Keeps the doorbell worker polling for @us without work before it sleeps
 * and asks for a wakeup (default 2 ms), so that counting doorbell calls
 * does not depend on how slowly the VM runs. Restored by
 * vd_poll_idle_restore(), which the res fixture's teardown calls. Returns
 * 0, or -1 when the parameter cannot be written (not root).
 */
static inline int vd_poll_idle_raise(long us)
{
	long old = vd_param_swap("poll_idle_us", us);

	if (old < 0)
		return -1;
	if (vd_poll_idle_saved < 0)
		vd_poll_idle_saved = old;
	return 0;
}

static inline void vd_poll_idle_restore(void)
{
	if (vd_poll_idle_saved >= 0)
		vd_param_swap("poll_idle_us", vd_poll_idle_saved);
	vd_poll_idle_saved = -1;
}

/* ------------------------------------------------------------------ */
/* A plain fixture: a selected device and a leak check at the end     */
/* ------------------------------------------------------------------ */

/*
 * VD_RES_FIXTURE(tag) defines fixture "res": self->dev (with its selected
 * file self->fd) and self->before, a snapshot taken right after selection.
 * Tests call vd_res_end() at the end to destroy what they made (by closing
 * nothing: they destroy their objects themselves) and to check for leaks.
 */
#define VD_RES_FIXTURE(tag) \
FIXTURE(res) \
{ \
	struct vd_testdev dev; \
	struct vd_snap before; \
	int fd; \
}; \
FIXTURE_SETUP(res) \
{ \
	int ret = vd_testdev_up(&self->dev, tag); \
	self->fd = self->dev.fd; \
	ASSERT_EQ(0, ret) TH_LOG("test device %s: step %d", self->dev.name, -ret); \
	vd_snap_take_dev(&self->before, NULL, self->dev.name); \
} \
FIXTURE_TEARDOWN(res) \
{ \
	vd_poll_idle_restore(); \
	vd_testdev_down(&self->dev); \
}

#endif /* VD_RES_UTIL_H */
