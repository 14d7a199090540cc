// SPDX-License-Identifier: GPL-2.0
/*
 * Per-context object limits: the module parameters ctx_max_pd, ctx_max_mr,
 * ctx_max_cq, ctx_max_qp and ctx_max_srq bound how many objects one open
 * file of /dev/viaduct may hold. The test lowers each (and restores it), fills a
 * context up to the limit, and checks that one more fails with ENOSPC
 * (twice: the failed attempt took nothing), that freeing one makes room
 * for exactly one, and that another context is not affected. The
 * defaults are the device limits that QUERY_DEVICE reports (for SRQs, as
 * many as QPs).
 *
 * Ring memory is charged to the memory cgroup of the process that creates
 * the ring: in a cgroup of its own, the test's memory.current grows by
 * most of a large CQ's ring while it exists, and falls back when it goes.
 * So are the buffers of a connection's stream, which the connection
 * manager allocates in its own work for the QP: connecting a few QPs grows
 * the creator's memory.current by most of their streams' buffers. So are
 * the window bindings and fast-register page lists that the transmit work
 * builds for Bind MW and Fast-Register work requests; a page list is as
 * long as its registration, not as its slot's capacity.
 */
#include <sys/mount.h>
#include <sys/stat.h>

#include "xfer_util.h"

#define LIM	3

static const char *const params[] = {
	"ctx_max_pd", "ctx_max_mr", "ctx_max_cq", "ctx_max_qp", "ctx_max_srq",
};

#define NKINDS	((int)(sizeof(params) / sizeof(params[0])))

FIXTURE(lim)
{
	struct vd_testdev d;
	long saved[NKINDS];
	unsigned char *buf;
};

FIXTURE_SETUP(lim)
{
	int i;

	for (i = 0; i < NKINDS; i++)
		self->saved[i] = -1;
	self->buf = NULL;
	ASSERT_EQ(0, vd_testdev_up(&self->d, "lim"));
	self->buf = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, self->buf);
}

FIXTURE_TEARDOWN(lim)
{
	int i;

	for (i = 0; i < NKINDS; i++)
		if (self->saved[i] >= 0)
			vd_param_swap(params[i], self->saved[i]);
	vd_testdev_down(&self->d);
	if (self->buf && self->buf != MAP_FAILED)
		munmap(self->buf, 1 << 16);
}

TEST_F(lim, defaults_are_the_device_limits)
{
	EXPECT_EQ((long)self->d.attr.max_pd, vd_param_swap("ctx_max_pd", -1));
	EXPECT_EQ((long)self->d.attr.max_mr, vd_param_swap("ctx_max_mr", -1));
	EXPECT_EQ((long)self->d.attr.max_cq, vd_param_swap("ctx_max_cq", -1));
	EXPECT_EQ((long)self->d.attr.max_qp, vd_param_swap("ctx_max_qp", -1));
	EXPECT_EQ((long)self->d.attr.max_qp, vd_param_swap("ctx_max_srq", -1));
	EXPECT_EQ((long)self->d.attr.max_mw, vd_param_swap("ctx_max_mw", -1));
	EXPECT_LT(0, self->d.attr.max_mw);
}

/* A program built before max_mw asks with the 512-byte structure: served. */
TEST_F(lim, query_device_of_the_first_size)
{
	struct {
		struct viaduct_device_attr attr;
		unsigned char tail[8];
	} q;
	const unsigned long query0 = _IOC(_IOC_READ | _IOC_WRITE, VIADUCT_IOCTL_MAGIC,
					  _IOC_NR(VIADUCT_IOCTL_QUERY_DEVICE),
					  VIADUCT_DEVICE_ATTR_SIZE_VER0);
	unsigned int i;

	memset(&q, 0xa5, sizeof(q));
	memset(&q.attr, 0, VIADUCT_DEVICE_ATTR_SIZE_VER0);
	q.attr.index = VIADUCT_INDEX_SELECTED;
	ASSERT_EQ(0, vd_ioctl(self->d.fd, query0, &q));
	EXPECT_EQ(self->d.attr.max_mr, q.attr.max_mr);
	EXPECT_EQ(self->d.attr.caps, q.attr.caps);
	/* nothing written past the size the caller gave */
	for (i = 0; i < 8; i++)
		EXPECT_EQ(0xa5, ((unsigned char *)&q.attr)[VIADUCT_DEVICE_ATTR_SIZE_VER0 + i]);
}

/* Creates an object of kind @k in @fd (on PD @pd): its handle or -errno. */
static int lim_create(FIXTURE_DATA(lim) *self, int fd, int k, __u32 pd)
{
	struct viaduct_create_srq srq;
	struct viaduct_create_cq cq;
	struct vd_qp q;
	int ret;

	switch (k) {
	case 0:
		return vd_create_pd(fd);
	case 1:
		return vd_reg_mr(fd, pd, self->buf, 4096, VIADUCT_ACCESS_LOCAL_WRITE, NULL);
	case 2:
		ret = vd_create_cq(fd, 16, -1, 0, &cq);
		return ret ? ret : (int)cq.handle;
	case 4:
		memset(&srq, 0, sizeof(srq));
		srq.pd_handle = pd;
		srq.depth = 16;
		srq.max_sge = 1;
		ret = vd_ioctl(fd, VIADUCT_IOCTL_CREATE_SRQ, &srq);
		return ret ? ret : (int)srq.handle;
	default:
		memset(&q, 0, sizeof(q));
		vd_qp_args(&q.c, pd, 0, 0);
		ret = vd_qp_create(fd, &q);
		if (ret)
			return ret;
		vd_qp_unmap(&q);
		return q.c.handle;
	}
}

static const unsigned long destroy_cmd[] = {
	VIADUCT_IOCTL_DESTROY_PD, VIADUCT_IOCTL_DEREG_MR, VIADUCT_IOCTL_DESTROY_CQ,
	VIADUCT_IOCTL_DESTROY_QP, VIADUCT_IOCTL_DESTROY_SRQ,
};

TEST_F(lim, each_limit_holds_per_context)
{
	int k, i, h[LIM], other, pd, pd2;

	other = vd_testdev_open_selected(&self->d);
	ASSERT_LE(0, other);
	for (k = 0; k < NKINDS; k++) {
		/* the PD the MRs, QPs and SRQs need, before the PD limit is low */
		pd = k ? vd_create_pd(self->d.fd) : 0;
		ASSERT_LE(0, pd);
		self->saved[k] = vd_param_swap(params[k], LIM);
		ASSERT_LE(0, self->saved[k]) TH_LOG("no parameter %s", params[k]);
		for (i = 0; i < LIM; i++) {
			h[i] = lim_create(self, self->d.fd, k, pd);
			ASSERT_LT(0, h[i]) TH_LOG("%s: object %d: %d", params[k], i, h[i]);
		}
		EXPECT_EQ(-ENOSPC, lim_create(self, self->d.fd, k, pd)) TH_LOG("%s", params[k]);
		EXPECT_EQ(-ENOSPC, lim_create(self, self->d.fd, k, pd)) TH_LOG("%s", params[k]);
		/* another context has its own */
		pd2 = k ? vd_create_pd(other) : 0;
		ASSERT_LE(0, pd2);
		i = lim_create(self, other, k, pd2);
		EXPECT_LT(0, i) TH_LOG("%s: other context: %d", params[k], i);
		if (i > 0)
			EXPECT_EQ(0, vd_destroy(other, destroy_cmd[k], i));
		if (k)
			EXPECT_EQ(0, vd_destroy_pd(other, pd2));
		/* one freed, one more fits, and no more */
		EXPECT_EQ(0, vd_destroy(self->d.fd, destroy_cmd[k], h[0]));
		h[0] = lim_create(self, self->d.fd, k, pd);
		EXPECT_LT(0, h[0]) TH_LOG("%s: after a destroy: %d", params[k], h[0]);
		EXPECT_EQ(-ENOSPC, lim_create(self, self->d.fd, k, pd));
		for (i = 0; i < LIM; i++)
			if (h[i] > 0)
				EXPECT_EQ(0, vd_destroy(self->d.fd, destroy_cmd[k], h[i]));
		vd_param_swap(params[k], self->saved[k]);
		self->saved[k] = -1;
		if (k)
			EXPECT_EQ(0, vd_destroy_pd(self->d.fd, pd));
	}
	close(other);
}

/* Writes @v to @path: 0 or -errno. */
static int lim_write(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, v, strlen(v)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Where cgroup v2 is mounted, in @root; mounted at @tmp if nowhere. */
static int lim_cgroup_root(char *root, size_t n, const char *tmp, int *mounted)
{
	char dev[64], dir[256], type[64];
	FILE *f = fopen("/proc/self/mounts", "r");

	*mounted = 0;
	while (f && fscanf(f, "%63s %255s %63s %*[^\n]", dev, dir, type) == 3) {
		if (!strcmp(type, "cgroup2")) {
			snprintf(root, n, "%s", dir);
			fclose(f);
			return 0;
		}
	}
	if (f)
		fclose(f);
	if (mkdir(tmp, 0755) && errno != EEXIST)
		return -errno;
	if (mount("none", tmp, "cgroup2", 0, NULL))
		return -errno;
	*mounted = 1;
	snprintf(root, n, "%s", tmp);
	return 0;
}

TEST_F(lim, rings_are_charged_to_the_memcg)
{
	char root[256], tmp[64], cg[320], procs[400], cur[400], ctl[300];
	struct viaduct_create_cq cq;
	long long before, during, after, half;
	int mounted;

	snprintf(tmp, sizeof(tmp), "/tmp/vdlim-cg%d", getpid());
	ASSERT_EQ(0, lim_cgroup_root(root, sizeof(root), tmp, &mounted));
	snprintf(ctl, sizeof(ctl), "%s/cgroup.subtree_control", root);
	ASSERT_EQ(0, lim_write(ctl, "+memory"));
	snprintf(cg, sizeof(cg), "%s/vdlim%d", root, getpid());
	ASSERT_EQ(0, mkdir(cg, 0755));
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	snprintf(cur, sizeof(cur), "%s/memory.current", cg);
	ASSERT_EQ(0, lim_write(procs, "0"));

	before = vd_read_long(cur);
	ASSERT_LE(0, before);
	ASSERT_EQ(0, vd_create_cq(self->d.fd, self->d.attr.max_cqe, -1, 0, &cq));
	during = vd_read_long(cur);
	/*
	 * Charges move in per-CPU batches (64 pages): half the ring is the
	 * bar, which uncharged ring memory (a few slab objects) never meets.
	 */
	half = (long long)cq.mmap_size / 2;
	EXPECT_LE(half, during - before)
		TH_LOG("ring %llu bytes, memory.current %lld -> %lld",
		       (unsigned long long)cq.mmap_size, before, during);
	EXPECT_EQ(0, vd_destroy_cq(self->d.fd, cq.handle));
	after = vd_read_long(cur);
	EXPECT_GE(during - half, after)
		TH_LOG("memory.current %lld after the CQ went", after);

	/* back to the root cgroup, which keeps no record of us */
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", root);
	EXPECT_EQ(0, lim_write(procs, "0"));
	EXPECT_EQ(0, rmdir(cg));
	if (mounted) {
		umount(tmp);
		rmdir(tmp);
	}
}

#define LIM_STREAMS	8
/* A stream's receive and transmit buffers: 64 KiB and a bit each. */
#define LIM_STREAM_BUFS	(2 * 65536LL)

/* Moves us to a memory cgroup of our own; its memory.current path in @cur. */
static int lim_cgroup_enter(struct __test_metadata *_metadata, char *root, size_t rn,
			    char *cg, size_t cn, char *cur, size_t curn, int *mounted)
{
	char tmp[64], path[400];

	snprintf(tmp, sizeof(tmp), "/tmp/vdlim-cg%d", getpid());
	if (lim_cgroup_root(root, rn, tmp, mounted))
		return -1;
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", root);
	if (lim_write(path, "+memory"))
		return -2;
	snprintf(cg, cn, "%s/vdlim%d", root, getpid());
	if (mkdir(cg, 0755))
		return -3;
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	snprintf(cur, curn, "%s/memory.current", cg);
	return lim_write(path, "0") ? -4 : 0;
}

static void lim_cgroup_leave(const char *root, const char *cg, int mounted)
{
	char path[400], tmp[64];

	snprintf(path, sizeof(path), "%s/cgroup.procs", root);
	lim_write(path, "0");
	rmdir(cg);
	if (mounted) {
		snprintf(tmp, sizeof(tmp), "/tmp/vdlim-cg%d", getpid());
		umount(tmp);
		rmdir(tmp);
	}
}

TEST_F_TIMEOUT(lim, streams_are_charged_to_the_memcg, 600)
{
	char root[256], cg[320], cur[400];
	struct vd_qp qa[LIM_STREAMS], qb[LIM_STREAMS];
	struct viaduct_cm_listen l = { 0 };
	long long before, during, after, half;
	struct viaduct_cm_event ev;
	struct xf_side a, b;
	int mounted = 0, up = 0, i, id;

	ASSERT_EQ(0, lim_cgroup_enter(_metadata, root, sizeof(root), cg, sizeof(cg), cur,
				      sizeof(cur), &mounted));
	/* everything from here on is created by a process of the cgroup */
	xf_pair_up(_metadata, &a, &b, &up);
	for (i = 0; i < LIM_STREAMS; i++) {
		ASSERT_EQ(0, xf_qp_up(&a, &qa[i]));
		ASSERT_EQ(0, xf_qp_up(&b, &qb[i]));
	}
	l.handle = b.id;
	xf_addr(&l.addr, 2, 0);
	ASSERT_EQ(0, vd_ioctl(b.fd, VIADUCT_IOCTL_CM_LISTEN, &l));

	before = vd_read_long(cur);
	ASSERT_LE(0, before);
	for (i = 0; i < LIM_STREAMS; i++) {
		struct viaduct_cm_connect c = { 0 };
		struct viaduct_cm_accept acc = { 0 };

		id = xf_create_id(&a, i);
		ASSERT_LT(0, id);
		c.handle = id;
		xf_addr(&c.dst, 2, ntohs(l.addr.port));
		c.param.qp_handle = qa[i].c.handle;
		ASSERT_EQ(0, vd_ioctl(a.fd, VIADUCT_IOCTL_CM_CONNECT, &c));
		ASSERT_EQ(0, xf_cm_event(&b, &ev, XF_WAIT_MS));
		ASSERT_EQ(VIADUCT_CM_EVENT_CONNECT_REQUEST, ev.type);
		acc.handle = ev.handle;
		acc.param.qp_handle = qb[i].c.handle;
		ASSERT_EQ(0, vd_ioctl(b.fd, VIADUCT_IOCTL_CM_ACCEPT, &acc));
		ASSERT_EQ(0, xf_cm_event(&a, &ev, XF_WAIT_MS));
		ASSERT_EQ(VIADUCT_CM_EVENT_ESTABLISHED, ev.type) TH_LOG("status %d", ev.status);
		ASSERT_EQ(0, xf_cm_event(&b, &ev, XF_WAIT_MS));
		ASSERT_EQ(VIADUCT_CM_EVENT_ESTABLISHED, ev.type) TH_LOG("status %d", ev.status);
	}
	during = vd_read_long(cur);
	/*
	 * Two streams per connection. Charges move in per-CPU batches of 64
	 * pages: half the buffers is the bar, which uncharged streams (a few
	 * slab objects each) never meet.
	 */
	half = LIM_STREAMS * 2 * LIM_STREAM_BUFS / 2;
	EXPECT_LE(half, during - before)
		TH_LOG("%d connections: memory.current %lld -> %lld", LIM_STREAMS, before,
		       during);
	for (i = 0; i < LIM_STREAMS; i++) {
		vd_qp_unmap(&qa[i]);
		vd_qp_unmap(&qb[i]);
	}
	xf_pair_down(&a, &b, up);
	/* the streams end in the CM's work after the files closed */
	for (i = 0; i < 300; i++) {
		after = vd_read_long(cur);
		if (after <= during - half)
			break;
		vd_sleep_ms(100);
	}
	EXPECT_GE(during - half, after) TH_LOG("memory.current %lld after the streams went", after);
	lim_cgroup_leave(root, cg, mounted);
}

#define LIM_BINDS	4096
#define LIM_BIND_BATCH	32

/*
 * A Bind MW work request runs in the transmit work item, not in the
 * process that posted it; the binding it allocates is charged to the memory
 * cgroup of the process that created the QP all the same. Each binding is
 * a region instance (a few hundred bytes of slab); LIM_BINDS of them are
 * over 1 MiB, and half of a conservative 128 bytes each is the bar, which a
 * charge to the worker's cgroup (nothing in ours) never meets.
 */
TEST_F_TIMEOUT(lim, window_binds_are_charged_to_the_memcg, 600)
{
	char root[256], cg[320], cur[400];
	long long before, during, after, bar;
	struct viaduct_cqe cqe;
	struct xf_side a, b;
	int mounted = 0, up = 0, mr, i, k;
	__u32 mr_stag, *stags;

	stags = calloc(LIM_BINDS, sizeof(*stags));
	ASSERT_NE(NULL, stags);
	ASSERT_EQ(0, lim_cgroup_enter(_metadata, root, sizeof(root), cg, sizeof(cg), cur,
				      sizeof(cur), &mounted));
	xf_pair_up(_metadata, &a, &b, &up);
	xf_pair_connect(_metadata, &a, &b, 0, NULL, NULL, NULL);
	mr = vd_reg_mr(b.fd, b.pd, b.buf, b.len,
		       VIADUCT_ACCESS_MW_BIND | VIADUCT_ACCESS_LOCAL_WRITE, &mr_stag);
	ASSERT_LT(0, mr);
	for (i = 0; i < LIM_BINDS; i++) {
		struct viaduct_alloc_mw w = {
			.pd_handle = b.pd, .type = VIADUCT_MW_TYPE_2, .key = 0x11,
		};

		ASSERT_EQ(0, vd_ioctl(b.fd, VIADUCT_IOCTL_ALLOC_MW, &w)) TH_LOG("window %d", i);
		stags[i] = (w.stag & ~VIADUCT_STAG_KEY_MASK) | 0x55;
	}

	before = vd_read_long(cur);
	ASSERT_LE(0, before);
	for (i = 0; i < LIM_BINDS; i += LIM_BIND_BATCH) {
		for (k = i; k < i + LIM_BIND_BATCH; k++) {
			struct viaduct_sqe *e = vd_sq_slot(&b.q, b.q.sq_prod);
			struct viaduct_sge *g = (struct viaduct_sge *)(e + 1);

			memset(e, 0, b.q.c.sq_wqe_size);
			e->wr_id = k;
			e->opcode = VIADUCT_OP_BIND_MW;
			e->flags = VIADUCT_SQE_SIGNALED;
			e->num_sge = 1;
			e->imm_data = VIADUCT_ACCESS_REMOTE_READ;
			e->remote_stag = stags[k];
			g->addr = (unsigned long)b.buf + (k % 256) * 4096UL;
			g->length = 4096;
			g->stag = mr_stag;
			b.q.sq_prod++;
		}
		__atomic_store_n(&b.q.db->sq_producer, b.q.sq_prod, __ATOMIC_RELEASE);
		ASSERT_EQ(0, vd_doorbell(b.fd, b.q.c.handle, VIADUCT_DOORBELL_SQ));
		for (k = i; k < i + LIM_BIND_BATCH; k++) {
			ASSERT_EQ(1, vd_cring_wait(&b.q.scq, &cqe, 1, XF_WAIT_MS))
				TH_LOG("no completion for bind %d", k);
			ASSERT_EQ(VIADUCT_WC_SUCCESS, cqe.status) TH_LOG("bind %d", k);
		}
	}
	during = vd_read_long(cur);
	bar = LIM_BINDS * 128LL / 2;
	EXPECT_LE(bar, during - before)
		TH_LOG("%d bindings: memory.current %lld -> %lld", LIM_BINDS, before, during);

	vd_qp_unmap(&a.q);
	vd_qp_unmap(&b.q);
	xf_pair_down(&a, &b, up);
	for (i = 0; i < 300; i++) {
		after = vd_read_long(cur);
		if (after <= during - bar)
			break;
		vd_sleep_ms(100);
	}
	EXPECT_GE(during - bar, after) TH_LOG("memory.current %lld after the windows went", after);
	lim_cgroup_leave(root, cg, mounted);
	free(stags);
}

#define LIM_FRS		64
#define LIM_FR_CAP	(1U << 18)	/* a slot's pages: 2 MiB of list if sized by it */

/*
 * A Fast-Register work request builds its page list in the transmit work
 * item; the list stays with the registration and is charged to the memory
 * cgroup of the process that created the QP. It holds the pages the
 * registration spans, not the slot's capacity: LIM_FRS slots of
 * LIM_FR_CAP pages each register the whole 2 MiB buffer (512 pages, a
 * 4 KiB list). Charged, the lists are at least LIM_FRS * 4 KiB; sized by
 * the capacity they would be LIM_FRS * 2 MiB. The bars are half and a
 * quarter of those.
 */
TEST_F_TIMEOUT(lim, fast_reg_lists_are_charged_and_sized_by_the_registration, 600)
{
	char root[256], cg[320], cur[400];
	long long before, during, after, low, high;
	struct viaduct_cqe cqe;
	struct xf_side a, b;
	int mounted = 0, up = 0, i;
	__u32 stags[LIM_FRS];

	ASSERT_EQ(0, lim_cgroup_enter(_metadata, root, sizeof(root), cg, sizeof(cg), cur,
				      sizeof(cur), &mounted));
	xf_pair_up(_metadata, &a, &b, &up);
	xf_pair_connect(_metadata, &a, &b, 0, NULL, NULL, NULL);
	for (i = 0; i < LIM_FRS; i++) {
		struct viaduct_alloc_mr r = {
			.pd_handle = b.pd, .max_pages = LIM_FR_CAP, .key = 0x11,
		};

		ASSERT_EQ(0, vd_ioctl(b.fd, VIADUCT_IOCTL_ALLOC_MR, &r)) TH_LOG("slot %d", i);
		stags[i] = (r.stag & ~VIADUCT_STAG_KEY_MASK) | 0x66;
	}

	before = vd_read_long(cur);
	ASSERT_LE(0, before);
	for (i = 0; i < LIM_FRS; i++) {
		struct viaduct_sqe *e = vd_sq_slot(&b.q, b.q.sq_prod);
		struct viaduct_sge *g = (struct viaduct_sge *)(e + 1);

		memset(e, 0, b.q.c.sq_wqe_size);
		e->wr_id = i;
		e->opcode = VIADUCT_OP_FAST_REG;
		e->flags = VIADUCT_SQE_SIGNALED;
		e->num_sge = 1;
		e->imm_data = VIADUCT_ACCESS_LOCAL_WRITE | VIADUCT_ACCESS_REMOTE_WRITE;
		e->remote_stag = stags[i];
		e->remote_addr = 0x7700000000ULL;
		g->addr = (unsigned long)b.buf;
		g->length = b.len;
		g->stag = b.stag;
		b.q.sq_prod++;
		__atomic_store_n(&b.q.db->sq_producer, b.q.sq_prod, __ATOMIC_RELEASE);
		ASSERT_EQ(0, vd_doorbell(b.fd, b.q.c.handle, VIADUCT_DOORBELL_SQ));
		ASSERT_EQ(1, vd_cring_wait(&b.q.scq, &cqe, 1, XF_WAIT_MS))
			TH_LOG("no completion for fast-register %d", i);
		ASSERT_EQ(VIADUCT_WC_SUCCESS, cqe.status) TH_LOG("fast-register %d", i);
	}
	during = vd_read_long(cur);
	low = LIM_FRS * (long long)(b.len / 4096) * 8 / 2;
	high = LIM_FRS * (long long)LIM_FR_CAP * 8 / 4;
	EXPECT_LE(low, during - before)
		TH_LOG("%d registrations: memory.current %lld -> %lld", LIM_FRS, before, during);
	EXPECT_GT(high, during - before)
		TH_LOG("%d registrations: memory.current %lld -> %lld", LIM_FRS, before, during);

	vd_qp_unmap(&a.q);
	vd_qp_unmap(&b.q);
	xf_pair_down(&a, &b, up);
	for (i = 0; i < 300; i++) {
		after = vd_read_long(cur);
		if (after <= during - low)
			break;
		vd_sleep_ms(100);
	}
	EXPECT_GE(during - low, after) TH_LOG("memory.current %lld after the registrations went",
					      after);
	lim_cgroup_leave(root, cg, mounted);
}

TEST_HARNESS_MAIN
