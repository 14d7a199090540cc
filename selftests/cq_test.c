// SPDX-License-Identifier: GPL-2.0
/*
 * Completion queues and completion channels: the errno of every bad
 * argument of CREATE_CQ, RESIZE_CQ, DESTROY_CQ, ARM_CQ and
 * CREATE_COMP_CHANNEL (table); ring mapping and the mmap errors; RESIZE_CQ
 * moving unread CQEs; overflow (flag, async event, other CQs unaffected);
 * arming, one-shot events, poll timeouts and EINTR on a channel.
 *
 * Completions come from flushing: a QP in Error completes every WQE posted
 * to it as VIADUCT_WC_FLUSHED, which needs no peer.
 */
#include <pthread.h>
#include <sys/time.h>

#include "badarg.h"

/* ---- CREATE_CQ ---------------------------------------------------- */

static void cq_args(FIXTURE_DATA(badarg) *s, union vd_arg *a, __u32 entries)
{
	a->cq.entries = entries;
	a->cq.channel_fd = -1;
	a->cq.user_data = 0x1122334455667788ULL;
}

static void f_cq_1(FIXTURE_DATA(badarg) *s, union vd_arg *a) { cq_args(s, a, 1); }
static void f_cq_5(FIXTURE_DATA(badarg) *s, union vd_arg *a) { cq_args(s, a, 5); }
static void f_cq_max(FIXTURE_DATA(badarg) *s, union vd_arg *a) { cq_args(s, a, s->dev.attr.max_cqe); }
static void f_cq_0(FIXTURE_DATA(badarg) *s, union vd_arg *a) { cq_args(s, a, 0); }
static void f_cq_over(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	cq_args(s, a, s->dev.attr.max_cqe + 1);
	if (!a->cq.entries)
		s->skip = "max_cqe is 2^32-1";
}
static void f_cq_huge(FIXTURE_DATA(badarg) *s, union vd_arg *a) { cq_args(s, a, 0x80000001U); }
static void f_cq_all(FIXTURE_DATA(badarg) *s, union vd_arg *a) { cq_args(s, a, 0xffffffffU); }
static void f_cq_flags(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	cq_args(s, a, 8);
	a->cq.flags = 1;
}
static void f_cq_chan(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	cq_args(s, a, 8);
	a->cq.channel_fd = s->channel;
}
static void f_cq_chan_closed(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	cq_args(s, a, 8);
	a->cq.channel_fd = s->closed_fd;
}
static void f_cq_chan_null(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	cq_args(s, a, 8);
	a->cq.channel_fd = s->null_fd;
}
static void f_cq_chan_self(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	cq_args(s, a, 8);
	a->cq.channel_fd = s->fd;
}

static void check_cq_created(struct __test_metadata *_metadata,
			     FIXTURE_DATA(badarg) *s, const union vd_arg *a, int ret)
{
	__u32 e = a->cq.entries;

	if (ret)
		return;
	EXPECT_NE(0, a->cq.handle);
	EXPECT_NE(0, e);
	EXPECT_EQ(0, e & (e - 1)) TH_LOG("entries %u not a power of two", e);
	EXPECT_LE(VIADUCT_RING_HDR_SIZE + (__u64)e * sizeof(struct viaduct_cqe), a->cq.mmap_size);
	EXPECT_EQ(0, a->cq.mmap_size % VD_PAGE);
	EXPECT_EQ(0, a->cq.mmap_key % VD_PAGE);
}

VD_ROW_CHECK(create_cq_1, VIADUCT_IOCTL_CREATE_CQ, f_cq_1, check_cq_created, 0,
	     "CREATE_CQ of 1 entry");
VD_ROW_CHECK(create_cq_5, VIADUCT_IOCTL_CREATE_CQ, f_cq_5, check_cq_created, 0,
	     "CREATE_CQ of 5 entries");
VD_ROW_CHECK(create_cq_max, VIADUCT_IOCTL_CREATE_CQ, f_cq_max, check_cq_created, 0,
	     "CREATE_CQ of max_cqe entries");
VD_ROW_CHECK(create_cq_channel, VIADUCT_IOCTL_CREATE_CQ, f_cq_chan, check_cq_created, 0,
	     "CREATE_CQ on a completion channel");
VD_ROW(create_cq_0, VIADUCT_IOCTL_CREATE_CQ, f_cq_0, -EINVAL, "CREATE_CQ of 0 entries");
VD_ROW(create_cq_over_max, VIADUCT_IOCTL_CREATE_CQ, f_cq_over, -EINVAL,
       "CREATE_CQ of max_cqe + 1 entries");
VD_ROW(create_cq_2_31_plus_1, VIADUCT_IOCTL_CREATE_CQ, f_cq_huge, -EINVAL,
       "CREATE_CQ of 2^31 + 1 entries (rounding overflows)");
VD_ROW(create_cq_2_32_minus_1, VIADUCT_IOCTL_CREATE_CQ, f_cq_all, -EINVAL,
       "CREATE_CQ of 2^32 - 1 entries");
VD_ROW(create_cq_flags, VIADUCT_IOCTL_CREATE_CQ, f_cq_flags, -EINVAL,
       "CREATE_CQ with nonzero flags");
VD_ROW(create_cq_closed_fd, VIADUCT_IOCTL_CREATE_CQ, f_cq_chan_closed, -EBADF,
       "CREATE_CQ with a closed descriptor as channel");
VD_ROW(create_cq_not_channel, VIADUCT_IOCTL_CREATE_CQ, f_cq_chan_null, -EINVAL,
       "CREATE_CQ with /dev/null as channel");
VD_ROW(create_cq_viaduct_fd, VIADUCT_IOCTL_CREATE_CQ, f_cq_chan_self, -EINVAL,
       "CREATE_CQ with the /dev/viaduct descriptor as channel");
VD_ROWS_COMMON(create_cq, VIADUCT_IOCTL_CREATE_CQ, f_cq_5);
VD_ROW_RO_ARG(create_cq, VIADUCT_IOCTL_CREATE_CQ, f_cq_5);

/* ---- RESIZE_CQ ---------------------------------------------------- */

static void f_rs(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->rcq.handle = s->cq_free; a->rcq.entries = 64; }
static void f_rs_qp(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->rcq.handle = s->cq_qp; a->rcq.entries = 100; }
static void f_rs_0h(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_rs(s, a); a->rcq.handle = 0; }
static void f_rs_never(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_rs(s, a); a->rcq.handle = 0x7ffff00; }
static void f_rs_stale(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_rs(s, a); a->rcq.handle = s->stale_cq; }
static void f_rs_pd(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	f_rs(s, a);
	a->rcq.handle = s->pd_free;
	VD_WRONG_TYPE(s, cq, a->rcq.handle);
}
static void f_rs_qph(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	f_rs(s, a);
	a->rcq.handle = s->qp;
	VD_WRONG_TYPE(s, cq, a->rcq.handle);
}
static void f_rs_0(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_rs(s, a); a->rcq.entries = 0; }
static void f_rs_over(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	f_rs(s, a);
	a->rcq.entries = s->dev.attr.max_cqe + 1;
	if (!a->rcq.entries)
		s->skip = "max_cqe is 2^32-1";
}
static void f_rs_huge(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_rs(s, a); a->rcq.entries = 0x80000001U; }

static void check_resized(struct __test_metadata *_metadata,
			  FIXTURE_DATA(badarg) *s, const union vd_arg *a, int ret)
{
	__u32 e = a->rcq.entries;

	if (ret)
		return;
	EXPECT_LE(64, e);
	EXPECT_EQ(0, e & (e - 1));
	EXPECT_LE(VIADUCT_RING_HDR_SIZE + (__u64)e * sizeof(struct viaduct_cqe), a->rcq.mmap_size);
}

VD_ROW_CHECK(resize_cq_ok, VIADUCT_IOCTL_RESIZE_CQ, f_rs, check_resized, 0, "RESIZE_CQ works");
VD_ROW_CHECK(resize_cq_in_use, VIADUCT_IOCTL_RESIZE_CQ, f_rs_qp, check_resized, 0,
	     "RESIZE_CQ of a CQ used by a QP works");
VD_ROW(resize_cq_zero, VIADUCT_IOCTL_RESIZE_CQ, f_rs_0h, -ENOENT, "RESIZE_CQ handle 0");
VD_ROW(resize_cq_never, VIADUCT_IOCTL_RESIZE_CQ, f_rs_never, -ENOENT,
       "RESIZE_CQ of a handle never allocated");
VD_ROW(resize_cq_stale, VIADUCT_IOCTL_RESIZE_CQ, f_rs_stale, -ENOENT,
       "RESIZE_CQ of a destroyed CQ");
VD_ROW(resize_cq_pd, VIADUCT_IOCTL_RESIZE_CQ, f_rs_pd, -ENOENT, "RESIZE_CQ with a PD handle");
VD_ROW(resize_cq_qp, VIADUCT_IOCTL_RESIZE_CQ, f_rs_qph, -ENOENT, "RESIZE_CQ with a QP handle");
VD_ROW(resize_cq_0, VIADUCT_IOCTL_RESIZE_CQ, f_rs_0, -EINVAL, "RESIZE_CQ to 0 entries");
VD_ROW(resize_cq_over_max, VIADUCT_IOCTL_RESIZE_CQ, f_rs_over, -EINVAL,
       "RESIZE_CQ to max_cqe + 1 entries");
VD_ROW(resize_cq_huge, VIADUCT_IOCTL_RESIZE_CQ, f_rs_huge, -EINVAL,
       "RESIZE_CQ to 2^31 + 1 entries");
VD_ROWS_COMMON(resize_cq, VIADUCT_IOCTL_RESIZE_CQ, f_rs);
VD_ROW_RO_ARG(resize_cq, VIADUCT_IOCTL_RESIZE_CQ, f_rs);
VD_ROW_OTHER_PROCESS(resize_cq, VIADUCT_IOCTL_RESIZE_CQ, f_rs);

/* ---- DESTROY_CQ --------------------------------------------------- */

static void f_cq_free(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->h.handle = s->cq_free; }
static void f_cq_qp(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->h.handle = s->cq_qp; }
static void f_cq_chanh(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->h.handle = s->cq_chan; }
static void f_cq_stale(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->h.handle = s->stale_cq; }
static void f_cq_reserved(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	a->h.handle = s->cq_free;
	a->h.reserved = 2;
}
static void f_pd_as_cq(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	a->h.handle = s->pd_free;
	VD_WRONG_TYPE(s, cq, a->h.handle);
}
static void f_qp_as_cq(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	a->h.handle = s->qp;
	VD_WRONG_TYPE(s, cq, a->h.handle);
}
static void f_mr_as_cq(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	a->h.handle = s->mr;
	VD_WRONG_TYPE(s, cq, a->h.handle);
}

/* A CQ that failed to go still works: it can be resized. */
static void check_cq_alive(struct __test_metadata *_metadata,
			   FIXTURE_DATA(badarg) *s, const union vd_arg *a, int ret)
{
	struct viaduct_resize_cq r = { .handle = a->h.handle, .entries = 32 };

	EXPECT_EQ(0, vd_ioctl(s->fd, VIADUCT_IOCTL_RESIZE_CQ, &r));
}

VD_ROW(destroy_cq_ok, VIADUCT_IOCTL_DESTROY_CQ, f_cq_free, 0, "DESTROY_CQ of an unused CQ");
VD_ROW(destroy_cq_channel, VIADUCT_IOCTL_DESTROY_CQ, f_cq_chanh, 0,
       "DESTROY_CQ of a CQ on a channel");
VD_ROW_CHECK(destroy_cq_with_qp, VIADUCT_IOCTL_DESTROY_CQ, f_cq_qp, check_cq_alive, -EBUSY,
	     "DESTROY_CQ of a CQ used by a QP");
VD_ROW(destroy_cq_zero, VIADUCT_IOCTL_DESTROY_CQ, vd_fill_h0, -ENOENT, "DESTROY_CQ handle 0");
VD_ROW(destroy_cq_never, VIADUCT_IOCTL_DESTROY_CQ, vd_fill_hnever, -ENOENT,
       "DESTROY_CQ of a handle never allocated");
VD_ROW(destroy_cq_max, VIADUCT_IOCTL_DESTROY_CQ, vd_fill_hmax, -ENOENT, "DESTROY_CQ handle ~0");
VD_ROW(destroy_cq_stale, VIADUCT_IOCTL_DESTROY_CQ, f_cq_stale, -ENOENT,
       "DESTROY_CQ of a destroyed CQ");
VD_ROW(destroy_cq_pd, VIADUCT_IOCTL_DESTROY_CQ, f_pd_as_cq, -ENOENT, "DESTROY_CQ with a PD handle");
VD_ROW(destroy_cq_qp, VIADUCT_IOCTL_DESTROY_CQ, f_qp_as_cq, -ENOENT, "DESTROY_CQ with a QP handle");
VD_ROW(destroy_cq_mr, VIADUCT_IOCTL_DESTROY_CQ, f_mr_as_cq, -ENOENT,
       "DESTROY_CQ with an MR handle");
VD_ROW_CHECK(destroy_cq_reserved, VIADUCT_IOCTL_DESTROY_CQ, f_cq_reserved, check_cq_alive,
	     -EINVAL, "DESTROY_CQ with a nonzero reserved field");
VD_ROWS_COMMON(destroy_cq, VIADUCT_IOCTL_DESTROY_CQ, f_cq_free);
VD_ROW_OTHER_PROCESS(destroy_cq, VIADUCT_IOCTL_DESTROY_CQ, f_cq_free);

/* ---- ARM_CQ ------------------------------------------------------- */

static void f_arm(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	a->arm.handle = s->cq_chan;
	a->arm.flags = VIADUCT_ARM_NEXT;
}
static void f_arm_sol(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_arm(s, a); a->arm.flags = VIADUCT_ARM_SOLICITED; }
static void f_arm_0h(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_arm(s, a); a->arm.handle = 0; }
static void f_arm_stale(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_arm(s, a); a->arm.handle = s->stale_cq; }
static void f_arm_pd(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	f_arm(s, a);
	a->arm.handle = s->pd_free;
	VD_WRONG_TYPE(s, cq, a->arm.handle);
}
static void f_arm_f0(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_arm(s, a); a->arm.flags = 0; }
static void f_arm_f4(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_arm(s, a); a->arm.flags = 4; }
static void f_arm_f31(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	f_arm(s, a);
	a->arm.flags = VIADUCT_ARM_NEXT | 0x80000000U;
}

static void f_arm_thr(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_arm(s, a); a->arm.threshold = 16; }
static void f_arm_thr17(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_arm(s, a); a->arm.threshold = 17; }
static void f_arm_thr_max(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_arm(s, a); a->arm.threshold = ~0U; }
static void f_arm_thr_f0(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_arm_thr(s, a); a->arm.flags = 0; }
static void f_arm_rsv(FIXTURE_DATA(badarg) *s, union vd_arg *a) { f_arm(s, a); a->arm.reserved = 1; }

VD_ROW(arm_cq_next, VIADUCT_IOCTL_ARM_CQ, f_arm, 0, "ARM_CQ NEXT");
VD_ROW(arm_cq_threshold, VIADUCT_IOCTL_ARM_CQ, f_arm_thr, 0, "ARM_CQ NEXT for 16 of 16 entries");
VD_ROW(arm_cq_threshold_over, VIADUCT_IOCTL_ARM_CQ, f_arm_thr17, -EINVAL,
       "ARM_CQ for 17 CQEs on a CQ of 16");
VD_ROW(arm_cq_threshold_max, VIADUCT_IOCTL_ARM_CQ, f_arm_thr_max, -EINVAL,
       "ARM_CQ for 2^32-1 CQEs");
VD_ROW(arm_cq_threshold_no_flag, VIADUCT_IOCTL_ARM_CQ, f_arm_thr_f0, -EINVAL,
       "ARM_CQ with a threshold and no flag");
VD_ROW(arm_cq_reserved, VIADUCT_IOCTL_ARM_CQ, f_arm_rsv, -EINVAL,
       "ARM_CQ with a nonzero reserved field");
VD_ROW(arm_cq_solicited, VIADUCT_IOCTL_ARM_CQ, f_arm_sol, 0, "ARM_CQ SOLICITED");
VD_ROW(arm_cq_zero, VIADUCT_IOCTL_ARM_CQ, f_arm_0h, -ENOENT, "ARM_CQ handle 0");
VD_ROW(arm_cq_stale, VIADUCT_IOCTL_ARM_CQ, f_arm_stale, -ENOENT, "ARM_CQ of a destroyed CQ");
VD_ROW(arm_cq_pd, VIADUCT_IOCTL_ARM_CQ, f_arm_pd, -ENOENT, "ARM_CQ with a PD handle");
VD_ROW(arm_cq_no_flag, VIADUCT_IOCTL_ARM_CQ, f_arm_f0, -EINVAL, "ARM_CQ without a flag");
VD_ROW(arm_cq_flag2, VIADUCT_IOCTL_ARM_CQ, f_arm_f4, -EINVAL, "ARM_CQ with unknown flag 2");
VD_ROW(arm_cq_flag31, VIADUCT_IOCTL_ARM_CQ, f_arm_f31, -EINVAL, "ARM_CQ with unknown flag 31");
VD_ROWS_COMMON(arm_cq, VIADUCT_IOCTL_ARM_CQ, f_arm);
VD_ROW_OTHER_PROCESS(arm_cq, VIADUCT_IOCTL_ARM_CQ, f_arm);

/* ---- CREATE_COMP_CHANNEL ------------------------------------------ */

static void f_none(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->ch.fd = -1; }

static void check_channel(struct __test_metadata *_metadata,
			  FIXTURE_DATA(badarg) *s, const union vd_arg *a, int ret)
{
	if (ret)
		return;
	/* undone (closed) already; it was a fresh, close-on-exec descriptor */
	EXPECT_LE(0, a->ch.fd);
	EXPECT_NE(s->fd, a->ch.fd);
	EXPECT_EQ(0, a->ch.reserved);
}

VD_ROW_CHECK(comp_channel_ok, VIADUCT_IOCTL_CREATE_COMP_CHANNEL, f_none, check_channel, 0,
	     "CREATE_COMP_CHANNEL works");
VD_ROWS_COMMON(comp_channel, VIADUCT_IOCTL_CREATE_COMP_CHANNEL, f_none);
VD_ROW_RO_ARG(comp_channel, VIADUCT_IOCTL_CREATE_COMP_CHANNEL, f_none);

/* ------------------------------------------------------------------ */
/* Rings, mmap, resize, overflow, channels                            */
/* ------------------------------------------------------------------ */

VD_RES_FIXTURE("cq")

TEST_F(res, ring_mapping)
{
	const __u32 asks[] = { 1, 3, 4, 100, 1024 };
	unsigned int i;

	for (i = 0; i < VD_ARRAY_SIZE(asks); i++) {
		struct viaduct_create_cq c;
		struct vd_cring r;
		__u32 e;

		if (asks[i] > self->dev.attr.max_cqe)
			continue;
		ASSERT_EQ(0, vd_create_cq(self->fd, asks[i], -1, i, &c));
		e = c.entries;
		EXPECT_LE(asks[i], e);
		EXPECT_EQ(0, e & (e - 1));
		ASSERT_EQ(0, vd_cring_map(&r, self->fd, c.mmap_key, c.mmap_size, e))
			TH_LOG("mmap key %#llx size %llu", (unsigned long long)c.mmap_key,
			       (unsigned long long)c.mmap_size);
		EXPECT_EQ(e, r.hdr->entries);
		EXPECT_EQ(0, r.hdr->producer);
		EXPECT_EQ(0, r.hdr->consumer);
		EXPECT_EQ(0, r.hdr->flags);
		/* the consumer index is ours to write */
		__atomic_store_n(&r.hdr->consumer, 0, __ATOMIC_RELEASE);
		vd_cring_unmap(&r);
		EXPECT_EQ(0, vd_destroy_cq(self->fd, c.handle));
	}
	vd_snap_expect_back(&self->before, 3000, "ring_mapping");
}

static int try_mmap(int fd, __u64 key, size_t size)
{
	void *p = vd_mmap_key(fd, key, size);

	if (p == MAP_FAILED)
		return -errno;
	munmap(p, size);
	return 0;
}

TEST_F(res, mmap_errors)
{
	struct viaduct_create_cq c, c2;
	struct vd_cring r;
	__u64 bogus;
	void *p;
	int fd2;

	ASSERT_EQ(0, vd_create_cq(self->fd, 16, -1, 7, &c));
	ASSERT_EQ(0, vd_create_cq(self->fd, 16, -1, 8, &c2));
	bogus = (c.mmap_key > c2.mmap_key ? c.mmap_key : c2.mmap_key) + (256UL << 20);
	EXPECT_EQ(-EINVAL, try_mmap(self->fd, bogus, VD_PAGE));
	EXPECT_EQ(-EINVAL, try_mmap(self->fd, c.mmap_key + c.mmap_size + (64UL << 20), VD_PAGE));
	EXPECT_EQ(-EINVAL, try_mmap(self->fd, c.mmap_key, c.mmap_size + VD_PAGE));
	EXPECT_EQ(-EINVAL, try_mmap(self->fd, c.mmap_key, 1UL << 30));
	/* another file's keys name nothing here */
	fd2 = vd_testdev_open_selected(&self->dev);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-EINVAL, try_mmap(fd2, c.mmap_key, c.mmap_size));
	close(fd2);
	/* a private mapping of a shared ring makes no sense */
	p = mmap(NULL, c.mmap_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd, c.mmap_key);
	EXPECT_EQ(MAP_FAILED, p);
	if (p != MAP_FAILED)
		munmap(p, c.mmap_size);

	/* a mapping outlives its object; the key does not */
	ASSERT_EQ(0, vd_cring_map(&r, self->fd, c.mmap_key, c.mmap_size, c.entries));
	ASSERT_EQ(0, vd_destroy_cq(self->fd, c.handle));
	EXPECT_EQ(-EINVAL, try_mmap(self->fd, c.mmap_key, c.mmap_size));
	EXPECT_EQ(c.entries, r.hdr->entries);
	r.hdr->consumer = 12345;
	memset(r.cqe, 0xee, c.entries * sizeof(struct viaduct_cqe));
	EXPECT_EQ(12345, r.hdr->consumer);
	/* the other CQ is untouched and still maps */
	EXPECT_EQ(0, try_mmap(self->fd, c2.mmap_key, c2.mmap_size));
	vd_cring_unmap(&r);
	EXPECT_EQ(0, vd_destroy_cq(self->fd, c2.handle));
	vd_snap_expect_back(&self->before, 3000, "mmap_errors");
}

TEST_F(res, mapping_outlives_file)
{
	struct viaduct_create_cq c;
	struct vd_cring r;

	ASSERT_EQ(0, vd_create_cq(self->fd, 64, -1, 7, &c));
	ASSERT_EQ(0, vd_cring_map(&r, self->fd, c.mmap_key, c.mmap_size, c.entries));
	vd_testdev_close(&self->dev);
	/* the file is gone, the pages are not */
	EXPECT_EQ(c.entries, r.hdr->entries);
	memset(r.cqe, 0x11, c.entries * sizeof(struct viaduct_cqe));
	vd_cring_unmap(&r);
	vd_snap_drop_file(&self->before);
	vd_snap_expect_back(&self->before, 3000, "mapping_outlives_file");
}

TEST_F(res, mapping_not_inherited)
{
	struct viaduct_create_cq c;
	struct vd_cring r;
	int status;
	pid_t pid;

	ASSERT_EQ(0, vd_create_cq(self->fd, 8, -1, 7, &c));
	ASSERT_EQ(0, vd_cring_map(&r, self->fd, c.mmap_key, c.mmap_size, c.entries));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		volatile __u32 *p = &r.hdr->entries;

		signal(SIGSEGV, SIG_DFL);
		(void)*p;
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
		TH_LOG("a child could read the parent's ring (status %#x)", status);
	EXPECT_EQ(c.entries, r.hdr->entries);
	vd_cring_unmap(&r);
	EXPECT_EQ(0, vd_destroy_cq(self->fd, c.handle));
	vd_snap_expect_back(&self->before, 3000, "mapping_not_inherited");
}

/* Posts @n receives (no SGE) to an Error QP and rings the doorbell. */
static int flush_recvs(int fd, struct vd_qp *q, __u64 first_wr_id, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		vd_post_rqe(q, first_wr_id + i, NULL, 0, 0);
	return vd_doorbell(fd, q->c.handle, VIADUCT_DOORBELL_RQ);
}

TEST_F(res, resize_moves_unread_cqes)
{
	struct viaduct_create_cq c;
	struct viaduct_resize_cq rs = { 0 };
	struct vd_cring old, cur;
	struct viaduct_cqe e[8];
	struct vd_qp q;
	unsigned int i;
	__u32 old_prod;
	int pd = vd_create_pd(self->fd);

	ASSERT_LT(0, pd);
	ASSERT_EQ(0, vd_create_cq(self->fd, 8, -1, 7, &c));
	ASSERT_EQ(0, vd_qp_make(self->fd, &q, pd, c.handle, c.handle, 8, 0, 1));
	ASSERT_EQ(0, vd_cring_map(&old, self->fd, c.mmap_key, c.mmap_size, c.entries));
	ASSERT_EQ(0, flush_recvs(self->fd, &q, 100, 3));
	ASSERT_EQ(0, vd_qp_wait_consumed(&q, 2000));
	/* wait until the three are in the ring, read one */
	for (i = 0; i < 200 && vd_cring_avail(&old) < 3; i++)
		vd_sleep_ms(10);
	ASSERT_EQ(3, vd_cring_avail(&old));
	ASSERT_EQ(1, vd_cring_poll(&old, &e[0]));
	EXPECT_EQ(100, e[0].wr_id);

	rs.handle = c.handle;
	rs.entries = 64;
	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_RESIZE_CQ, &rs));
	EXPECT_LE(64, rs.entries);
	EXPECT_NE(c.mmap_key, rs.mmap_key);
	ASSERT_EQ(0, vd_cring_map(&cur, self->fd, rs.mmap_key, rs.mmap_size, rs.entries));
	EXPECT_EQ(rs.entries, cur.hdr->entries);
	/* the two unread ones moved, in order */
	ASSERT_EQ(2, vd_cring_wait(&cur, e, 2, 1000));
	EXPECT_EQ(101, e[0].wr_id);
	EXPECT_EQ(102, e[1].wr_id);
	EXPECT_EQ(VIADUCT_WC_FLUSHED, e[0].status);
	EXPECT_EQ(VIADUCT_WC_FLUSHED, e[1].status);
	/* new completions go to the new ring only */
	old_prod = old.hdr->producer;
	ASSERT_EQ(0, flush_recvs(self->fd, &q, 200, 2));
	ASSERT_EQ(2, vd_cring_wait(&cur, e, 2, 2000));
	EXPECT_EQ(200, e[0].wr_id);
	EXPECT_EQ(201, e[1].wr_id);
	EXPECT_EQ(old_prod, old.hdr->producer);
	vd_cring_unmap(&old);
	vd_cring_unmap(&cur);
	vd_qp_unmap(&q);
	EXPECT_EQ(0, vd_destroy_qp(self->fd, q.c.handle));
	EXPECT_EQ(0, vd_destroy_cq(self->fd, c.handle));
	EXPECT_EQ(0, vd_destroy_pd(self->fd, pd));
	vd_snap_expect_back(&self->before, 3000, "resize_moves_unread_cqes");
}

/*
 * A full large CQ resized again and again while another thread's flushes
 * keep completing into it: every CQE is kept, once, in order. The resize
 * moves the CQEs in steps with completions arriving between them.
 */
struct resize_load {
	int fd;
	struct vd_qp *q;
	__u32 first, total;		/* completions before the go, in all */
	volatile int go, resized, done, err;
};

/* Posts @to - @from receives to the Error QP, in batches, ringing for each. */
static int resize_load_post(struct resize_load *l, __u32 from, __u32 to, __u32 batch)
{
	while (from < to) {
		__u32 n = 0;

		while (from < to && n < batch && !vd_rq_full(l->q)) {
			vd_post_rqe(l->q, from++, NULL, 0, 0);
			n++;
		}
		if (vd_doorbell(l->fd, l->q->c.handle, VIADUCT_DOORBELL_RQ))
			return -1;
		if (!n)
			usleep(100);
	}
	return 0;
}

static void *resize_load_thread(void *arg)
{
	struct resize_load *l = arg;

	while (!__atomic_load_n(&l->go, __ATOMIC_ACQUIRE))
		usleep(100);
	/* the first ones fit the small ring: they race with the first resize */
	if (resize_load_post(l, l->first, l->first + 16, 1))
		l->err = 1;
	while (!__atomic_load_n(&l->resized, __ATOMIC_ACQUIRE))
		usleep(100);
	if (resize_load_post(l, l->first + 16, l->total, 16))
		l->err = 1;
	__atomic_store_n(&l->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

TEST_F_TIMEOUT(res, resize_full_cq_while_completions_arrive, 600)
{
	__u32 big = self->dev.attr.max_cqe, small = big / 2, i, got = 0, resizes = 0;
	struct viaduct_resize_cq rs = { 0 };
	struct viaduct_create_cq c;
	struct resize_load l = { 0 };
	struct viaduct_cqe e;
	struct vd_cring cur;
	struct vd_qp q;
	pthread_t t;
	int pd = vd_create_pd(self->fd);

	ASSERT_LT(0, pd);
	ASSERT_LE(1024, small);
	ASSERT_EQ(0, vd_create_cq(self->fd, small, -1, 1, &c));
	ASSERT_EQ(small, c.entries);
	ASSERT_EQ(0, vd_qp_make(self->fd, &q, pd, c.handle, c.handle, 256, 0, 1));
	l.fd = self->fd;
	l.q = &q;
	/* the small ring all but full before the first resize */
	l.first = small - 32;
	l.total = big - 256;
	ASSERT_EQ(0, resize_load_post(&l, 0, l.first, 256));
	ASSERT_EQ(0, vd_qp_wait_consumed(&q, 30000));
	ASSERT_EQ(0, pthread_create(&t, NULL, resize_load_thread, &l));
	__atomic_store_n(&l.go, 1, __ATOMIC_RELEASE);
	/* nothing is polled: every resize moves everything so far */
	rs.handle = c.handle;
	do {
		rs.entries = big;
		ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_RESIZE_CQ, &rs))
			TH_LOG("resize %u", resizes);
		ASSERT_EQ(big, rs.entries);
		resizes++;
		__atomic_store_n(&l.resized, 1, __ATOMIC_RELEASE);
	} while (!__atomic_load_n(&l.done, __ATOMIC_ACQUIRE));
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_EQ(0, l.err);
	ASSERT_EQ(0, vd_qp_wait_consumed(&q, 30000));
	TH_LOG("%u resizes of up to %u CQEs while %u completions arrived", resizes,
	       l.total, l.total - l.first);

	ASSERT_EQ(0, vd_cring_map(&cur, self->fd, rs.mmap_key, rs.mmap_size, rs.entries));
	EXPECT_EQ(0, cur.hdr->flags & VIADUCT_RING_F_OVERFLOW);
	for (i = 0; i < l.total; i++) {
		if (vd_cring_wait(&cur, &e, 1, 10000) != 1)
			break;
		got++;
		if (e.wr_id != i || e.status != VIADUCT_WC_FLUSHED)
			break;
	}
	EXPECT_EQ(l.total, got) TH_LOG("CQE %u: wr_id %llu status %u", got - 1,
				       (unsigned long long)e.wr_id, e.status);
	EXPECT_EQ(0, vd_cring_avail(&cur));
	vd_cring_unmap(&cur);
	vd_qp_unmap(&q);
	EXPECT_EQ(0, vd_destroy_qp(self->fd, q.c.handle));
	EXPECT_EQ(0, vd_destroy_cq(self->fd, c.handle));
	EXPECT_EQ(0, vd_destroy_pd(self->fd, pd));
	vd_snap_expect_back(&self->before, 3000, "resize_full_cq_while_completions_arrive");
}

TEST_F(res, resize_never_loses_cqes)
{
	struct viaduct_create_cq c;
	struct viaduct_resize_cq rs = { 0 };
	struct viaduct_cqe e[20];
	struct vd_cring r;
	struct vd_qp q;
	unsigned int i;
	int ret, pd = vd_create_pd(self->fd);

	ASSERT_LT(0, pd);
	ASSERT_EQ(0, vd_create_cq(self->fd, 32, -1, 7, &c));
	ASSERT_EQ(0, vd_qp_make(self->fd, &q, pd, c.handle, c.handle, 32, 0, 1));
	ASSERT_EQ(0, flush_recvs(self->fd, &q, 1, 20));
	ASSERT_EQ(0, vd_qp_wait_consumed(&q, 2000));
	vd_sleep_ms(100);
	/* 20 unread CQEs do not fit into 4: refused, or a ring that holds them */
	rs.handle = c.handle;
	rs.entries = 4;
	ret = vd_ioctl(self->fd, VIADUCT_IOCTL_RESIZE_CQ, &rs);
	if (ret) {
		EXPECT_EQ(-EINVAL, ret);
		ASSERT_EQ(0, vd_cring_map(&r, self->fd, c.mmap_key, c.mmap_size, c.entries));
	} else {
		EXPECT_LE(20, rs.entries) TH_LOG("resized to %u below 20 unread CQEs", rs.entries);
		ASSERT_EQ(0, vd_cring_map(&r, self->fd, rs.mmap_key, rs.mmap_size, rs.entries));
	}
	ASSERT_EQ(20, vd_cring_wait(&r, e, 20, 1000));
	for (i = 0; i < 20; i++)
		EXPECT_EQ(1 + i, e[i].wr_id);
	vd_cring_unmap(&r);
	vd_qp_unmap(&q);
	EXPECT_EQ(0, vd_destroy_qp(self->fd, q.c.handle));
	EXPECT_EQ(0, vd_destroy_cq(self->fd, c.handle));
	EXPECT_EQ(0, vd_destroy_pd(self->fd, pd));
	vd_snap_expect_back(&self->before, 3000, "resize_never_loses_cqes");
}

TEST_F(res, overflow)
{
	struct viaduct_create_cq small, other;
	struct viaduct_async_event ev;
	struct viaduct_query_qp qq;
	struct viaduct_cqe e[64];
	struct vd_cring rs, ro;
	struct vd_qp qa, qb;
	unsigned int i, n, got;
	int pd = vd_create_pd(self->fd);

	ASSERT_LT(0, pd);
	ASSERT_EQ(0, vd_create_cq(self->fd, 4, -1, 0xc0ffee, &small));
	TH_LOG("a CQ of 4 entries has %u", small.entries);
	ASSERT_GE(32, small.entries) TH_LOG("CQ too large for this test");
	ASSERT_EQ(0, vd_create_cq(self->fd, 64, -1, 0xbeef, &other));
	ASSERT_EQ(0, vd_cring_map(&rs, self->fd, small.mmap_key, small.mmap_size, small.entries));
	ASSERT_EQ(0, vd_cring_map(&ro, self->fd, other.mmap_key, other.mmap_size, other.entries));
	n = small.entries + 3;
	ASSERT_EQ(0, vd_qp_make(self->fd, &qa, pd, small.handle, small.handle, n, 0, 0));
	ASSERT_EQ(0, vd_qp_make(self->fd, &qb, pd, other.handle, other.handle, 8, 0, 0));

	/* more receives outstanding than the CQ holds, and a few on the other QP */
	for (i = 0; i < n; i++)
		vd_post_rqe(&qa, i, NULL, 0, 0);
	ASSERT_EQ(0, vd_doorbell(self->fd, qa.c.handle, VIADUCT_DOORBELL_RQ));
	for (i = 0; i < 5; i++)
		vd_post_rqe(&qb, 1000 + i, NULL, 0, 0);
	ASSERT_EQ(0, vd_doorbell(self->fd, qb.c.handle, VIADUCT_DOORBELL_RQ));
	ASSERT_EQ(0, vd_qp_wait_consumed(&qa, 2000));
	ASSERT_EQ(0, vd_query_qp(self->fd, qa.c.handle, &qq));
	EXPECT_EQ(n, qq.rq_outstanding);

	/* the flush overflows the small CQ */
	ASSERT_EQ(0, vd_modify_state(self->fd, qa.c.handle, VIADUCT_QPS_ERROR));
	ASSERT_EQ(0, vd_wait_async(self->fd, VIADUCT_EVENT_CQ_ERROR, small.handle, &ev, 3000))
		TH_LOG("no CQ_ERROR event for the overflowed CQ");
	EXPECT_EQ(0xc0ffee, ev.user_data);
	EXPECT_TRUE(__atomic_load_n(&rs.hdr->flags, __ATOMIC_ACQUIRE) & VIADUCT_RING_F_OVERFLOW);
	/* never more CQEs in the ring than it holds, and those are sane */
	got = vd_cring_wait(&rs, e, small.entries + 3, 200);
	EXPECT_GE(small.entries, got);
	for (i = 0; i < got; i++) {
		EXPECT_EQ(i, e[i].wr_id);
		EXPECT_EQ(VIADUCT_WC_FLUSHED, e[i].status);
	}

	/* the other QP and CQ are unaffected */
	EXPECT_EQ(VIADUCT_QPS_IDLE, vd_qp_state(self->fd, qb.c.handle));
	ASSERT_EQ(0, vd_modify_state(self->fd, qb.c.handle, VIADUCT_QPS_ERROR));
	ASSERT_EQ(5, vd_cring_wait(&ro, e, 5, 3000));
	for (i = 0; i < 5; i++) {
		EXPECT_EQ(1000 + i, e[i].wr_id);
		EXPECT_EQ(VIADUCT_WC_FLUSHED, e[i].status);
		EXPECT_TRUE(e[i].flags & VIADUCT_WC_F_RECV);
	}
	EXPECT_EQ(0, ro.hdr->flags & VIADUCT_RING_F_OVERFLOW);

	vd_cring_unmap(&rs);
	vd_cring_unmap(&ro);
	vd_qp_unmap(&qa);
	vd_qp_unmap(&qb);
	EXPECT_EQ(0, vd_destroy_qp(self->fd, qa.c.handle));
	EXPECT_EQ(0, vd_destroy_qp(self->fd, qb.c.handle));
	EXPECT_EQ(0, vd_destroy_cq(self->fd, small.handle));
	EXPECT_EQ(0, vd_destroy_cq(self->fd, other.handle));
	EXPECT_EQ(0, vd_destroy_pd(self->fd, pd));
	vd_snap_expect_back(&self->before, 3000, "overflow");
}

/* A channel, a CQ on it, and an Error QP whose receives complete at once. */
struct chan_setup {
	int ch;
	int pd;
	struct viaduct_create_cq cq;
	struct vd_cring ring;
	struct vd_qp q;
};

static int chan_up(int fd, struct chan_setup *c)
{
	int ret;

	c->ch = vd_comp_channel(fd);
	if (c->ch < 0)
		return c->ch;
	c->pd = vd_create_pd(fd);
	if (c->pd < 0)
		return c->pd;
	ret = vd_create_cq(fd, 64, c->ch, 0xfeedface00000001ULL, &c->cq);
	if (ret)
		return ret;
	ret = vd_cring_map(&c->ring, fd, c->cq.mmap_key, c->cq.mmap_size, c->cq.entries);
	if (ret)
		return ret;
	return vd_qp_make(fd, &c->q, c->pd, c->cq.handle, c->cq.handle, 16, 0, 1);
}

static void chan_down(struct __test_metadata *_metadata, int fd, struct chan_setup *c)
{
	vd_cring_unmap(&c->ring);
	vd_qp_unmap(&c->q);
	EXPECT_EQ(0, vd_destroy_qp(fd, c->q.c.handle));
	EXPECT_EQ(0, vd_destroy_cq(fd, c->cq.handle));
	EXPECT_EQ(0, vd_destroy_pd(fd, c->pd));
	if (c->ch >= 0)
		close(c->ch);
}

TEST_F(res, channel_armed_event)
{
	struct viaduct_cq_event ev;
	struct viaduct_cqe e;
	struct chan_setup c;
	int fl;

	ASSERT_EQ(0, chan_up(self->fd, &c));
	fl = fcntl(c.ch, F_GETFD);
	EXPECT_TRUE(fl >= 0 && (fl & FD_CLOEXEC)) TH_LOG("channel is not close-on-exec");
	/* nothing pending */
	EXPECT_EQ(0, vd_wait_readable(c.ch, 0));

	ASSERT_EQ(0, vd_arm_cq(self->fd, c.cq.handle, VIADUCT_ARM_NEXT));
	ASSERT_EQ(0, flush_recvs(self->fd, &c.q, 77, 1));
	ASSERT_EQ(1, vd_wait_readable(c.ch, 3000)) TH_LOG("no event on the armed CQ");
	ASSERT_EQ((ssize_t)sizeof(ev), read(c.ch, &ev, sizeof(ev)));
	EXPECT_EQ(0xfeedface00000001ULL, ev.user_data);
	EXPECT_EQ(c.cq.handle, ev.cq_handle);
	EXPECT_EQ(0, ev.reserved);
	ASSERT_EQ(1, vd_cring_wait(&c.ring, &e, 1, 1000));
	EXPECT_EQ(77, e.wr_id);
	EXPECT_EQ(VIADUCT_WC_FLUSHED, e.status);
	/* one-shot: the next completion, unarmed, fires nothing */
	EXPECT_EQ(0, vd_wait_readable(c.ch, 0));
	ASSERT_EQ(0, flush_recvs(self->fd, &c.q, 78, 1));
	ASSERT_EQ(1, vd_cring_wait(&c.ring, &e, 1, 2000));
	EXPECT_EQ(0, vd_wait_readable(c.ch, 300));
	/* armed again, it fires again */
	ASSERT_EQ(0, vd_arm_cq(self->fd, c.cq.handle, VIADUCT_ARM_NEXT));
	ASSERT_EQ(0, flush_recvs(self->fd, &c.q, 79, 1));
	ASSERT_EQ(1, vd_wait_readable(c.ch, 3000));
	ASSERT_EQ((ssize_t)sizeof(ev), read(c.ch, &ev, sizeof(ev)));
	EXPECT_EQ(c.cq.handle, ev.cq_handle);
	chan_down(_metadata, self->fd, &c);
	vd_snap_expect_back(&self->before, 3000, "channel_armed_event");
}

TEST_F(res, channel_unarmed_is_silent)
{
	struct viaduct_cqe e;
	struct chan_setup c;

	ASSERT_EQ(0, chan_up(self->fd, &c));
	ASSERT_EQ(0, flush_recvs(self->fd, &c.q, 5, 3));
	ASSERT_EQ(3, vd_cring_wait(&c.ring, (struct viaduct_cqe[3]){ 0 }, 3, 2000));
	EXPECT_EQ(0, vd_wait_readable(c.ch, 300));
	/* CQEs already in the ring do not fire a later arm */
	ASSERT_EQ(0, flush_recvs(self->fd, &c.q, 8, 1));
	vd_sleep_ms(100);
	ASSERT_EQ(0, vd_arm_cq(self->fd, c.cq.handle, VIADUCT_ARM_NEXT));
	EXPECT_EQ(0, vd_wait_readable(c.ch, 300));
	ASSERT_EQ(1, vd_cring_wait(&c.ring, &e, 1, 1000));
	chan_down(_metadata, self->fd, &c);
	vd_snap_expect_back(&self->before, 3000, "channel_unarmed_is_silent");
}

/*
 * A threshold arm counts the CQEs already in the ring: one that finds
 * enough fires at once, from ARM_CQ itself, and one that does not waits.
 * ARM_CQ serialises with the producers on the CQ's lock, so once it
 * returned, an event it fired is on the channel already.
 */
TEST_F(res, channel_threshold_counts_unread)
{
	struct viaduct_cq_event ev;
	struct viaduct_cqe e[4];
	struct chan_setup c;
	unsigned int waited;

	ASSERT_EQ(0, chan_up(self->fd, &c));
	ASSERT_EQ(0, flush_recvs(self->fd, &c.q, 10, 3));
	/* three in the ring, none read */
	for (waited = 0; vd_cring_avail(&c.ring) < 3 && waited < 3000; waited += 5)
		vd_sleep_ms(5);
	ASSERT_EQ(3, vd_cring_avail(&c.ring));
	ASSERT_EQ(0, vd_arm_cq_threshold(self->fd, c.cq.handle, VIADUCT_ARM_NEXT, 4));
	EXPECT_EQ(0, vd_wait_readable(c.ch, 0)) TH_LOG("3 unread fired an arm for 4");
	ASSERT_EQ(0, vd_arm_cq_threshold(self->fd, c.cq.handle, VIADUCT_ARM_NEXT, 3));
	ASSERT_EQ(1, vd_wait_readable(c.ch, 0)) TH_LOG("3 unread did not fire an arm for 3");
	ASSERT_EQ((ssize_t)sizeof(ev), read(c.ch, &ev, sizeof(ev)));
	EXPECT_EQ(c.cq.handle, ev.cq_handle);
	EXPECT_EQ(0, vd_wait_readable(c.ch, 0)) TH_LOG("the arm fired twice");

	/* read: the count restarts from the consumer index */
	ASSERT_EQ(3, vd_cring_wait(&c.ring, e, 3, 1000));
	ASSERT_EQ(0, vd_arm_cq_threshold(self->fd, c.cq.handle, VIADUCT_ARM_NEXT, 1));
	EXPECT_EQ(0, vd_wait_readable(c.ch, 0)) TH_LOG("an empty ring fired an arm for 1");
	ASSERT_EQ(0, flush_recvs(self->fd, &c.q, 20, 1));
	ASSERT_EQ(1, vd_wait_readable(c.ch, 3000)) TH_LOG("one CQE did not fire an arm for 1");
	ASSERT_EQ((ssize_t)sizeof(ev), read(c.ch, &ev, sizeof(ev)));
	ASSERT_EQ(1, vd_cring_wait(&c.ring, e, 1, 1000));
	EXPECT_EQ(20, e[0].wr_id);
	/* a flushed completion is an error: it fires whatever the count */
	ASSERT_EQ(0, vd_arm_cq_threshold(self->fd, c.cq.handle, VIADUCT_ARM_NEXT, 16));
	ASSERT_EQ(0, flush_recvs(self->fd, &c.q, 21, 1));
	ASSERT_EQ(1, vd_wait_readable(c.ch, 3000)) TH_LOG("an error CQE did not fire");
	ASSERT_EQ((ssize_t)sizeof(ev), read(c.ch, &ev, sizeof(ev)));
	ASSERT_EQ(1, vd_cring_wait(&c.ring, e, 1, 1000));
	EXPECT_EQ(21, e[0].wr_id);
	chan_down(_metadata, self->fd, &c);
	vd_snap_expect_back(&self->before, 3000, "channel_threshold_counts_unread");
}

/* A program built before the threshold passes 8 bytes: armed as it was. */
TEST_F(res, channel_arm_of_the_first_size)
{
	const unsigned long arm0 = _IOC(_IOC_WRITE, VIADUCT_IOCTL_MAGIC,
					_IOC_NR(VIADUCT_IOCTL_ARM_CQ),
					VIADUCT_ARM_CQ_SIZE_VER0);
	struct { __u32 handle, flags; } a;
	struct viaduct_device_attr attr = { .index = VIADUCT_INDEX_SELECTED };
	struct viaduct_cq_event ev;
	struct viaduct_cqe e;
	struct chan_setup c;

	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_QUERY_DEVICE, &attr));
	EXPECT_TRUE(attr.caps & VIADUCT_DEV_CAP_CQ_THRESHOLD);
	ASSERT_EQ(0, chan_up(self->fd, &c));
	ASSERT_EQ(0, flush_recvs(self->fd, &c.q, 1, 1));
	ASSERT_EQ(1, vd_cring_wait(&c.ring, &e, 1, 2000));
	a.handle = c.cq.handle;
	a.flags = VIADUCT_ARM_NEXT;
	ASSERT_EQ(0, vd_ioctl(self->fd, arm0, &a));
	EXPECT_EQ(0, vd_wait_readable(c.ch, 0));
	ASSERT_EQ(0, flush_recvs(self->fd, &c.q, 2, 1));
	ASSERT_EQ(1, vd_wait_readable(c.ch, 3000));
	ASSERT_EQ((ssize_t)sizeof(ev), read(c.ch, &ev, sizeof(ev)));
	EXPECT_EQ(c.cq.handle, ev.cq_handle);
	/* a size short of the first published one is not the command */
	EXPECT_EQ(-ENOTTY, vd_ioctl(self->fd, _IOC(_IOC_WRITE, VIADUCT_IOCTL_MAGIC,
						   _IOC_NR(VIADUCT_IOCTL_ARM_CQ), 4), &a));
	ASSERT_EQ(1, vd_cring_wait(&c.ring, &e, 1, 2000));
	chan_down(_metadata, self->fd, &c);
	vd_snap_expect_back(&self->before, 3000, "channel_arm_of_the_first_size");
}

TEST_F(res, channel_solicited_fires_on_error)
{
	struct viaduct_cq_event ev;
	struct chan_setup c;

	ASSERT_EQ(0, chan_up(self->fd, &c));
	/* a flushed completion is an error completion */
	ASSERT_EQ(0, vd_arm_cq(self->fd, c.cq.handle, VIADUCT_ARM_SOLICITED));
	ASSERT_EQ(0, flush_recvs(self->fd, &c.q, 5, 1));
	ASSERT_EQ(1, vd_wait_readable(c.ch, 3000));
	ASSERT_EQ((ssize_t)sizeof(ev), read(c.ch, &ev, sizeof(ev)));
	EXPECT_EQ(c.cq.handle, ev.cq_handle);
	chan_down(_metadata, self->fd, &c);
	vd_snap_expect_back(&self->before, 3000, "channel_solicited_fires_on_error");
}

TEST_F(res, channel_two_cqs)
{
	struct viaduct_create_cq c2;
	struct viaduct_cq_event ev;
	struct chan_setup c;
	struct vd_qp q2;

	ASSERT_EQ(0, chan_up(self->fd, &c));
	ASSERT_EQ(0, vd_create_cq(self->fd, 16, c.ch, 0x2222, &c2));
	ASSERT_EQ(0, vd_qp_make(self->fd, &q2, c.pd, c2.handle, c2.handle, 8, 0, 1));
	ASSERT_EQ(0, vd_arm_cq(self->fd, c2.handle, VIADUCT_ARM_NEXT));
	/* the unarmed CQ completes first: no event for it */
	ASSERT_EQ(0, flush_recvs(self->fd, &c.q, 1, 1));
	ASSERT_EQ(0, flush_recvs(self->fd, &q2, 2, 1));
	ASSERT_EQ(1, vd_wait_readable(c.ch, 3000));
	ASSERT_EQ((ssize_t)sizeof(ev), read(c.ch, &ev, sizeof(ev)));
	EXPECT_EQ(c2.handle, ev.cq_handle);
	EXPECT_EQ(0x2222, ev.user_data);
	EXPECT_EQ(0, vd_wait_readable(c.ch, 200));
	vd_qp_unmap(&q2);
	EXPECT_EQ(0, vd_destroy_qp(self->fd, q2.c.handle));
	EXPECT_EQ(0, vd_destroy_cq(self->fd, c2.handle));
	chan_down(_metadata, self->fd, &c);
	vd_snap_expect_back(&self->before, 3000, "channel_two_cqs");
}

static void on_alarm(int sig) { }

TEST_F(res, channel_read_interrupted)
{
	struct itimerval it = { .it_value = { 0, 200000 } };
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART */
	struct viaduct_cq_event ev;
	struct chan_setup c;
	uint64_t t0;
	ssize_t n;

	ASSERT_EQ(0, chan_up(self->fd, &c));
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	t0 = vd_now_ms();
	n = read(c.ch, &ev, sizeof(ev));
	EXPECT_EQ(-1, n);
	EXPECT_EQ(EINTR, errno);
	EXPECT_LE(150, vd_now_ms() - t0);
	/* non-blocking: nothing there is EAGAIN */
	ASSERT_EQ(0, fcntl(c.ch, F_SETFL, O_NONBLOCK));
	EXPECT_EQ(-1, read(c.ch, &ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	chan_down(_metadata, self->fd, &c);
	vd_snap_expect_back(&self->before, 3000, "channel_read_interrupted");
}

TEST_F(res, channel_poll_timeout)
{
	struct chan_setup c;
	uint64_t t0, dt;

	ASSERT_EQ(0, chan_up(self->fd, &c));
	ASSERT_EQ(0, vd_arm_cq(self->fd, c.cq.handle, VIADUCT_ARM_NEXT));
	t0 = vd_now_ms();
	EXPECT_EQ(0, vd_wait_readable(c.ch, 500));
	dt = vd_now_ms() - t0;
	EXPECT_LE(490, dt);
	EXPECT_GE(5000, dt);
	/* the async descriptor has nothing either */
	EXPECT_EQ(0, vd_wait_readable(self->fd, 100));
	chan_down(_metadata, self->fd, &c);
	vd_snap_expect_back(&self->before, 3000, "channel_poll_timeout");
}

TEST_F(res, channel_closed_while_attached)
{
	struct chan_setup c;
	struct viaduct_cqe e;

	ASSERT_EQ(0, chan_up(self->fd, &c));
	ASSERT_EQ(0, vd_arm_cq(self->fd, c.cq.handle, VIADUCT_ARM_NEXT));
	close(c.ch);
	c.ch = -1;
	/* the CQ keeps working; the event has nowhere to go */
	ASSERT_EQ(0, flush_recvs(self->fd, &c.q, 9, 1));
	ASSERT_EQ(1, vd_cring_wait(&c.ring, &e, 1, 2000));
	EXPECT_EQ(0, vd_arm_cq(self->fd, c.cq.handle, VIADUCT_ARM_NEXT));
	ASSERT_EQ(0, flush_recvs(self->fd, &c.q, 10, 1));
	ASSERT_EQ(1, vd_cring_wait(&c.ring, &e, 1, 2000));
	chan_down(_metadata, self->fd, &c);
	vd_snap_expect_back(&self->before, 3000, "channel_closed_while_attached");
}

TEST_HARNESS_MAIN
