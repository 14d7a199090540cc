/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Table-driven argument checks for the resource ioctls.
 *
 * A test file includes this header and adds rows with
 * FIXTURE_VARIANT_ADD(badarg, name) { ... }: a description, the command,
 * a function that fills in the argument from the fixture's objects, the
 * pointer actually passed (the argument, NULL, a low or kernel address, or
 * a read-only copy), the context the call runs in, and the expected result
 * (0 or -errno). The one test, badarg.run, runs each row in a fresh
 * context with a fresh set of objects, then destroys them all and checks
 * that nothing leaked: module references, open descriptors, the process's
 * VmPin and, when viaductctl reports them, the module's object and
 * pinned-page counters. The rows share one device (vd_testdev_share()):
 * making a veth pair and a device per row cost more than the rows.
 *
 * Errno choices this table assumes where the uapi header leaves room:
 *  - a handle that names nothing of the right type in this context
 *    (0, never allocated, destroyed, another type's, another file's) is
 *    ENOENT; a wrong-type row is skipped when the handle happens to be a
 *    live handle of the expected type too (per-type handle spaces);
 *  - a context that has not selected a device gets ENODEV from every
 *    resource command, before any argument is looked at;
 *  - a closed descriptor as a CQ's channel_fd is EBADF, an open descriptor
 *    that is not a completion channel EINVAL;
 *  - ARM_CQ and DOORBELL with no flag, or unknown flags, are EINVAL.
 */
#ifndef VD_BADARG_H
#define VD_BADARG_H

#include "res_util.h"

enum vd_row_ctx {
	VD_CTX_SELECTED,	/* the fixture's file */
	VD_CTX_UNSELECTED,	/* a new file that selected nothing */
	VD_CTX_CHILD,		/* a forked child's own file, same device */
};

enum vd_row_ptr {
	VD_PTR_ARG,		/* the filled-in argument */
	VD_PTR_NULL,
	VD_PTR_LOW,		/* (void *)8 */
	VD_PTR_KERNEL,
	VD_PTR_RO,		/* a read-only copy: output cannot be written */
};

union vd_arg {
	struct viaduct_handle h;
	struct viaduct_reg_mr mr;
	struct viaduct_create_cq cq;
	struct viaduct_resize_cq rcq;
	struct viaduct_arm_cq arm;
	struct viaduct_create_qp qp;
	struct viaduct_modify_qp mod;
	struct viaduct_query_qp qq;
	struct viaduct_doorbell_req db;
	struct viaduct_comp_channel ch;
	char raw[512];
};

#define VD_BUF_PAGES	4

FIXTURE(badarg)
{
	struct vd_testdev dev;
	struct vd_snap before;
	int fd;
	const char *skip;	/* set by a fill function: row not applicable */

	/* live objects */
	__u32 pd_mr;		/* holds @mr */
	__u32 pd_qp;		/* holds @qp */
	__u32 pd_free;		/* holds nothing */
	__u32 mr;
	__u32 cq_qp;		/* send and receive CQ of @qp */
	__u32 cq_free;		/* used by nothing */
	__u32 cq_chan;		/* attached to @channel */
	__u32 qp;
	int channel;
	/* handles that were valid once */
	__u32 stale_pd, stale_mr, stale_cq, stale_qp;
	/* descriptors that are not completion channels */
	int closed_fd;
	int null_fd;

	/* memory */
	char *rw;		/* VD_BUF_PAGES read-write pages, then @hole */
	char *hole;		/* one unmapped page */
	char *ro;		/* two PROT_READ pages */
	char *none;		/* one PROT_NONE page */
	void *argpage;		/* becomes read-only for VD_PTR_RO rows */
};

FIXTURE_VARIANT(badarg)
{
	const char *desc;
	unsigned long cmd;
	void (*fill)(FIXTURE_DATA(badarg) *self, union vd_arg *a);
	/* optional: more checks after the call, on the fixture's file */
	void (*check)(struct __test_metadata *_metadata,
		      FIXTURE_DATA(badarg) *self, const union vd_arg *a, int ret);
	enum vd_row_ctx ctx;
	enum vd_row_ptr ptr;
	int expect;
};

/* Destroys the fixture's objects (children first); idempotent. */
static inline void vd_badarg_release(FIXTURE_DATA(badarg) *self)
{
	if (self->fd < 0)
		return;
	if (self->qp)
		vd_destroy_qp(self->fd, self->qp);
	if (self->mr)
		vd_dereg_mr(self->fd, self->mr);
	if (self->cq_qp)
		vd_destroy_cq(self->fd, self->cq_qp);
	if (self->cq_free)
		vd_destroy_cq(self->fd, self->cq_free);
	if (self->cq_chan)
		vd_destroy_cq(self->fd, self->cq_chan);
	if (self->pd_mr)
		vd_destroy_pd(self->fd, self->pd_mr);
	if (self->pd_qp)
		vd_destroy_pd(self->fd, self->pd_qp);
	if (self->pd_free)
		vd_destroy_pd(self->fd, self->pd_free);
	if (self->channel >= 0)
		close(self->channel);
	if (self->null_fd >= 0)
		close(self->null_fd);
	self->qp = self->mr = 0;
	self->cq_qp = self->cq_free = self->cq_chan = 0;
	self->pd_mr = self->pd_qp = self->pd_free = 0;
	self->channel = self->null_fd = -1;
}

FIXTURE_SETUP(badarg)
{
	struct viaduct_create_qp qc;
	struct viaduct_create_cq cc;
	int ret, h;

	self->fd = -1;
	self->channel = -1;
	self->null_fd = -1;
	ret = vd_testdev_share(&self->dev, "ba");
	ASSERT_EQ(0, ret) TH_LOG("test device %s: step %d", self->dev.name, -ret);
	self->fd = self->dev.fd;

	/* memory first: the snapshot must not see the fixture's own mappings change */
	self->rw = vd_map_before_hole(VD_BUF_PAGES * VD_PAGE);
	ASSERT_NE(NULL, self->rw);
	memset(self->rw, 1, VD_BUF_PAGES * VD_PAGE);
	self->hole = self->rw + VD_BUF_PAGES * VD_PAGE;
	self->ro = mmap(NULL, 2 * VD_PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
			-1, 0);
	ASSERT_NE(MAP_FAILED, self->ro);
	self->none = mmap(NULL, VD_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->none);
	self->argpage = mmap(NULL, VD_PAGE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, self->argpage);
	/* a descriptor number nothing here opens: far above the ones in use */
	self->closed_fd = 900;
	close(self->closed_fd);
	ASSERT_EQ(-1, fcntl(self->closed_fd, F_GETFD));

	vd_snap_take_dev(&self->before, NULL, self->dev.name);

	self->null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->null_fd);
	self->channel = vd_comp_channel(self->fd);
	ASSERT_LE(0, self->channel) TH_LOG("CREATE_COMP_CHANNEL: %s", strerror(-self->channel));

	h = vd_create_pd(self->fd);
	ASSERT_LT(0, h) TH_LOG("CREATE_PD: %s", strerror(-h));
	self->pd_mr = h;
	h = vd_create_pd(self->fd);
	ASSERT_LT(0, h);
	self->pd_qp = h;
	h = vd_create_pd(self->fd);
	ASSERT_LT(0, h);
	self->pd_free = h;
	h = vd_reg_mr(self->fd, self->pd_mr, self->rw, VD_PAGE, VIADUCT_ACCESS_LOCAL_WRITE, NULL);
	ASSERT_LT(0, h) TH_LOG("REG_MR: %s", strerror(-h));
	self->mr = h;
	ASSERT_EQ(0, vd_create_cq(self->fd, 16, -1, 1, &cc)) TH_LOG("CREATE_CQ: %s", strerror(errno));
	self->cq_qp = cc.handle;
	ASSERT_EQ(0, vd_create_cq(self->fd, 16, -1, 2, &cc));
	self->cq_free = cc.handle;
	ASSERT_EQ(0, vd_create_cq(self->fd, 16, self->channel, 3, &cc));
	self->cq_chan = cc.handle;
	vd_qp_args(&qc, self->pd_qp, self->cq_qp, self->cq_qp);
	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_CREATE_QP, &qc))
		TH_LOG("CREATE_QP: %s", strerror(errno));
	self->qp = qc.handle;

	/* stale handles, made last so that no live object reuses them */
	h = vd_create_pd(self->fd);
	ASSERT_LT(0, h);
	self->stale_pd = h;
	h = vd_reg_mr(self->fd, self->stale_pd, self->rw, 1, 0, NULL);
	ASSERT_LT(0, h);
	self->stale_mr = h;
	ASSERT_EQ(0, vd_create_cq(self->fd, 4, -1, 4, &cc));
	self->stale_cq = cc.handle;
	vd_qp_args(&qc, self->stale_pd, self->stale_cq, self->stale_cq);
	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_CREATE_QP, &qc));
	self->stale_qp = qc.handle;
	ASSERT_EQ(0, vd_destroy_qp(self->fd, self->stale_qp));
	ASSERT_EQ(0, vd_dereg_mr(self->fd, self->stale_mr));
	ASSERT_EQ(0, vd_destroy_cq(self->fd, self->stale_cq));
	ASSERT_EQ(0, vd_destroy_pd(self->fd, self->stale_pd));
}

FIXTURE_TEARDOWN(badarg)
{
	vd_badarg_release(self);
	vd_testdev_close(&self->dev);
}

/* In the harness process, at exit: the rows' shared device goes. */
static void __attribute__((destructor)) vd_badarg_unshare(void)
{
	vd_testdev_unshare("ba");
}

/* The live handles of one kind, for the wrong-type rows. */
static inline int vd_is_live_pd(FIXTURE_DATA(badarg) *s, __u32 h)
{
	return h == s->pd_mr || h == s->pd_qp || h == s->pd_free;
}

static inline int vd_is_live_cq(FIXTURE_DATA(badarg) *s, __u32 h)
{
	return h == s->cq_qp || h == s->cq_free || h == s->cq_chan;
}

static inline int vd_is_live_mr(FIXTURE_DATA(badarg) *s, __u32 h)
{
	return h == s->mr;
}

static inline int vd_is_live_qp(FIXTURE_DATA(badarg) *s, __u32 h)
{
	return h == s->qp;
}

/* For wrong-type rows: skip when @h is also a live handle of the kind wanted. */
#define VD_WRONG_TYPE(self, want, h) do { \
	if (vd_is_live_##want(self, h)) \
		self->skip = "handle spaces are per type: the value names a live " #want; \
} while (0)

/* Runs the call in a forked child with its own file on the same device. */
static inline int vd_badarg_in_child(FIXTURE_DATA(badarg) *self, unsigned long cmd, void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1000;
	if (pid == 0) {
		int fd = vd_testdev_open_selected(&self->dev);

		if (fd < 0)
			_exit(255);
		_exit(-vd_ioctl(fd, cmd, arg));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1001;
	if (WEXITSTATUS(status) == 255)
		return -1002;
	return -WEXITSTATUS(status);
}

/* Undoes a successful create so that the leak check sees nothing. */
static inline void vd_badarg_undo(FIXTURE_DATA(badarg) *self, unsigned long cmd,
				  const union vd_arg *a)
{
	switch (cmd) {
	case VIADUCT_IOCTL_CREATE_PD:
		vd_destroy_pd(self->fd, a->h.handle);
		break;
	case VIADUCT_IOCTL_REG_MR:
		vd_dereg_mr(self->fd, a->mr.handle);
		break;
	case VIADUCT_IOCTL_CREATE_CQ:
		vd_destroy_cq(self->fd, a->cq.handle);
		break;
	case VIADUCT_IOCTL_CREATE_QP:
		vd_destroy_qp(self->fd, a->qp.handle);
		break;
	case VIADUCT_IOCTL_CREATE_COMP_CHANNEL:
		close(a->ch.fd);
		break;
	case VIADUCT_IOCTL_DESTROY_PD:
		if (a->h.handle == self->pd_free)
			self->pd_free = 0;
		break;
	case VIADUCT_IOCTL_DEREG_MR:
		if (a->h.handle == self->mr)
			self->mr = 0;
		break;
	case VIADUCT_IOCTL_DESTROY_CQ:
		if (a->h.handle == self->cq_free)
			self->cq_free = 0;
		if (a->h.handle == self->cq_chan)
			self->cq_chan = 0;
		break;
	case VIADUCT_IOCTL_DESTROY_QP:
		if (a->h.handle == self->qp)
			self->qp = 0;
		break;
	}
}

TEST_F_TIMEOUT(badarg, run, 60)
{
	union vd_arg a, *out = &a;
	void *arg = &a;
	int ret = -1;

	memset(&a, 0, sizeof(a));
	self->skip = NULL;
	variant->fill(self, &a);
	if (self->skip)
		SKIP(goto out, "%s", self->skip);

	switch (variant->ptr) {
	case VD_PTR_ARG:
		break;
	case VD_PTR_NULL:
		arg = NULL;
		break;
	case VD_PTR_LOW:
		arg = (void *)8;
		break;
	case VD_PTR_KERNEL:
		arg = VD_KERNEL_PTR;
		break;
	case VD_PTR_RO:
		memcpy(self->argpage, &a, sizeof(a));
		ASSERT_EQ(0, mprotect(self->argpage, VD_PAGE, PROT_READ));
		arg = self->argpage;
		out = self->argpage;
		break;
	}

	switch (variant->ctx) {
	case VD_CTX_SELECTED:
		ret = vd_ioctl(self->fd, variant->cmd, arg);
		break;
	case VD_CTX_UNSELECTED: {
		int fd = vd_open();

		ASSERT_LE(0, fd);
		ret = vd_ioctl(fd, variant->cmd, arg);
		close(fd);
		break;
	}
	case VD_CTX_CHILD:
		ret = vd_badarg_in_child(self, variant->cmd, arg);
		ASSERT_GT(1000, -ret) TH_LOG("child failed to run (%d)", ret);
		break;
	}

	EXPECT_EQ(variant->expect, ret) {
		TH_LOG("%s: expected %s, got %s", variant->desc,
		       variant->expect ? strerror(-variant->expect) : "success",
		       ret ? strerror(-ret) : "success");
	}
	if (ret == 0 && variant->ctx == VD_CTX_SELECTED)
		vd_badarg_undo(self, variant->cmd, out);
	if (variant->check)
		variant->check(_metadata, self, out, ret);
out:
	vd_badarg_release(self);
	vd_snap_expect_back(&self->before, 3000, variant->desc);
}

/* Row builders: a row in the fixture's own context, and its variants. */
#define VD_ROW(_name, _cmd, _fill, _err, _desc) \
	FIXTURE_VARIANT_ADD(badarg, _name) { \
		.desc = _desc, .cmd = _cmd, .fill = _fill, .expect = _err, \
	}
#define VD_ROW_CHECK(_name, _cmd, _fill, _check, _err, _desc) \
	FIXTURE_VARIANT_ADD(badarg, _name) { \
		.desc = _desc, .cmd = _cmd, .fill = _fill, .check = _check, .expect = _err, \
	}
#define VD_ROW_PTR(_name, _cmd, _fill, _ptr, _err, _desc) \
	FIXTURE_VARIANT_ADD(badarg, _name) { \
		.desc = _desc, .cmd = _cmd, .fill = _fill, .ptr = _ptr, .expect = _err, \
	}
#define VD_ROW_CTX(_name, _cmd, _fill, _ctx, _err, _desc) \
	FIXTURE_VARIANT_ADD(badarg, _name) { \
		.desc = _desc, .cmd = _cmd, .fill = _fill, .ctx = _ctx, .expect = _err, \
	}

/*
 * The rows every command gets: unreadable argument pointers, a context with
 * no device, and (for commands that take handles) another process's file.
 */
#define VD_ROWS_COMMON(_pfx, _cmd, _fill) \
	VD_ROW_PTR(_pfx##_ptr_null, _cmd, _fill, VD_PTR_NULL, -EFAULT, #_cmd ": NULL argument"); \
	VD_ROW_PTR(_pfx##_ptr_low, _cmd, _fill, VD_PTR_LOW, -EFAULT, #_cmd ": argument at 8"); \
	VD_ROW_PTR(_pfx##_ptr_kernel, _cmd, _fill, VD_PTR_KERNEL, -EFAULT, \
		   #_cmd ": kernel address as argument"); \
	VD_ROW_CTX(_pfx##_unselected, _cmd, _fill, VD_CTX_UNSELECTED, -ENODEV, \
		   #_cmd ": no device selected")

#define VD_ROW_OTHER_PROCESS(_pfx, _cmd, _fill) \
	VD_ROW_CTX(_pfx##_other_process, _cmd, _fill, VD_CTX_CHILD, -ENOENT, \
		   #_cmd ": handles of another process's file")

/* Commands that write a result: a read-only argument is EFAULT, and leaks nothing. */
#define VD_ROW_RO_ARG(_pfx, _cmd, _fill) \
	VD_ROW_PTR(_pfx##_ro_arg, _cmd, _fill, VD_PTR_RO, -EFAULT, \
		   #_cmd ": read-only argument (result cannot be written)")

/* Simple fills shared by the handle-taking destroy commands. */
static inline void vd_fill_h0(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->h.handle = 0; }
static inline void vd_fill_hnever(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->h.handle = 0x7ffff00; }
static inline void vd_fill_hmax(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->h.handle = 0xffffffffU; }

#endif /* VD_BADARG_H */
