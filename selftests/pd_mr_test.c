// SPDX-License-Identifier: GPL-2.0
/*
 * Protection domains and memory registration: the errno of every bad
 * argument of CREATE_PD, DESTROY_PD, REG_MR and DEREG_MR (table), destroy
 * order, STags, MODIFY_MR, and what registration pins and charges: one byte at every
 * offset of a page, page-crossing ranges, 64 MiB, overlapping regions, and
 * regions whose memory is unmapped while registered.
 */
#include "badarg.h"

/* ---- CREATE_PD ---------------------------------------------------- */

static void f_none(FIXTURE_DATA(badarg) *s, union vd_arg *a) { }

static void check_pd_created(struct __test_metadata *_metadata,
			     FIXTURE_DATA(badarg) *s, const union vd_arg *a, int ret)
{
	if (ret)
		return;
	EXPECT_NE(0, a->h.handle);
	EXPECT_EQ(0, a->h.reserved);
	EXPECT_FALSE(vd_is_live_pd(s, a->h.handle) || vd_is_live_cq(s, a->h.handle) ||
		     vd_is_live_qp(s, a->h.handle) || vd_is_live_mr(s, a->h.handle))
		TH_LOG("new PD handle %u already names a live object", a->h.handle);
}

VD_ROW_CHECK(create_pd_ok, VIADUCT_IOCTL_CREATE_PD, f_none, check_pd_created, 0,
	     "CREATE_PD works");
VD_ROWS_COMMON(create_pd, VIADUCT_IOCTL_CREATE_PD, f_none);
VD_ROW_RO_ARG(create_pd, VIADUCT_IOCTL_CREATE_PD, f_none);

/* ---- DESTROY_PD --------------------------------------------------- */

static void f_pd_free(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->h.handle = s->pd_free; }
static void f_pd_mr(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->h.handle = s->pd_mr; }
static void f_pd_qp(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->h.handle = s->pd_qp; }
static void f_pd_stale(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->h.handle = s->stale_pd; }

static void f_pd_reserved(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	a->h.handle = s->pd_free;
	a->h.reserved = 1;
}

static void f_cq_as_pd(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	a->h.handle = s->cq_free;
	VD_WRONG_TYPE(s, pd, a->h.handle);
}

static void f_mr_as_pd(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	a->h.handle = s->mr;
	VD_WRONG_TYPE(s, pd, a->h.handle);
}

static void f_qp_as_pd(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	a->h.handle = s->qp;
	VD_WRONG_TYPE(s, pd, a->h.handle);
}

/* A PD that failed to go is still usable. */
static void check_pd_alive(struct __test_metadata *_metadata,
			   FIXTURE_DATA(badarg) *s, const union vd_arg *a, int ret)
{
	int h = vd_reg_mr(s->fd, a->h.handle, s->rw, 1, 0, NULL);

	EXPECT_LT(0, h) TH_LOG("PD %u unusable after a failed destroy", a->h.handle);
	if (h > 0)
		EXPECT_EQ(0, vd_dereg_mr(s->fd, h));
}

VD_ROW(destroy_pd_ok, VIADUCT_IOCTL_DESTROY_PD, f_pd_free, 0, "DESTROY_PD of an unused PD works");
VD_ROW(destroy_pd_zero, VIADUCT_IOCTL_DESTROY_PD, vd_fill_h0, -ENOENT, "DESTROY_PD handle 0");
VD_ROW(destroy_pd_never, VIADUCT_IOCTL_DESTROY_PD, vd_fill_hnever, -ENOENT,
       "DESTROY_PD of a handle never allocated");
VD_ROW(destroy_pd_max, VIADUCT_IOCTL_DESTROY_PD, vd_fill_hmax, -ENOENT, "DESTROY_PD handle ~0");
VD_ROW(destroy_pd_stale, VIADUCT_IOCTL_DESTROY_PD, f_pd_stale, -ENOENT,
       "DESTROY_PD of a destroyed PD");
VD_ROW(destroy_pd_cq, VIADUCT_IOCTL_DESTROY_PD, f_cq_as_pd, -ENOENT,
       "DESTROY_PD with a CQ handle");
VD_ROW(destroy_pd_mr_handle, VIADUCT_IOCTL_DESTROY_PD, f_mr_as_pd, -ENOENT,
       "DESTROY_PD with an MR handle");
VD_ROW(destroy_pd_qp_handle, VIADUCT_IOCTL_DESTROY_PD, f_qp_as_pd, -ENOENT,
       "DESTROY_PD with a QP handle");
VD_ROW_CHECK(destroy_pd_with_mr, VIADUCT_IOCTL_DESTROY_PD, f_pd_mr, check_pd_alive, -EBUSY,
	     "DESTROY_PD of a PD with an MR");
VD_ROW_CHECK(destroy_pd_with_qp, VIADUCT_IOCTL_DESTROY_PD, f_pd_qp, check_pd_alive, -EBUSY,
	     "DESTROY_PD of a PD with a QP");
VD_ROW_CHECK(destroy_pd_reserved, VIADUCT_IOCTL_DESTROY_PD, f_pd_reserved, check_pd_alive,
	     -EINVAL, "DESTROY_PD with a nonzero reserved field");
VD_ROWS_COMMON(destroy_pd, VIADUCT_IOCTL_DESTROY_PD, f_pd_free);
VD_ROW_OTHER_PROCESS(destroy_pd, VIADUCT_IOCTL_DESTROY_PD, f_pd_free);

/* ---- REG_MR ------------------------------------------------------- */

static void mr_args(FIXTURE_DATA(badarg) *s, union vd_arg *a, const void *addr, __u64 len,
		    __u32 access)
{
	a->mr.addr = (unsigned long)addr;
	a->mr.length = len;
	a->mr.pd_handle = s->pd_free;
	a->mr.access = access;
	a->mr.key = 0xa7;
}

#define LW VIADUCT_ACCESS_LOCAL_WRITE
#define RW VIADUCT_ACCESS_REMOTE_WRITE
#define RR VIADUCT_ACCESS_REMOTE_READ
#define MW VIADUCT_ACCESS_MW_BIND

static void f_mr_page(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, s->rw, VD_PAGE, LW); }
static void f_mr_unaligned(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	mr_args(s, a, s->rw + 1, 2 * VD_PAGE + 5, LW | RW | RR);
}
static void f_mr_last_byte(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	mr_args(s, a, s->rw + VD_BUF_PAGES * VD_PAGE - 1, 1, LW);
}
static void f_mr_all(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	mr_args(s, a, s->rw + 3, VD_BUF_PAGES * VD_PAGE - 3, VIADUCT_ACCESS_ALL & ~MW);
}
static void f_mr_mw(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, s->rw, VD_PAGE, LW | MW); }
static void f_mr_ro_mw(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, s->ro + 9, 100, RR | MW); }
static void f_mr_ro_read(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, s->ro, 2 * VD_PAGE, 0); }
static void f_mr_ro_rread(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, s->ro + 9, 100, RR); }
static void f_mr_ro_lw(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, s->ro, VD_PAGE, LW); }
static void f_mr_ro_rw(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, s->ro, VD_PAGE, LW | RW); }
static void f_mr_rw_only(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, s->rw, VD_PAGE, RW); }
static void f_mr_rw_rr(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, s->rw, VD_PAGE, RW | RR); }
static void f_mr_bit4(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, s->rw, VD_PAGE, LW | 0x10); }
static void f_mr_bit31(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, s->rw, VD_PAGE, 0x80000000U); }
static void f_mr_len0(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, s->rw, 0, LW); }
static void f_mr_len_huge(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, s->rw, 1ULL << 62, LW); }
static void f_mr_len_max(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, s->rw, ~0ULL, 0); }
static void f_mr_wrap(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	mr_args(s, a, NULL, 2 * VD_PAGE, 0);
	a->mr.addr = -VD_PAGE;	/* the last page of the 64-bit space, and one more */
}
static void f_mr_wrap_byte(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	mr_args(s, a, NULL, 2, 0);
	a->mr.addr = ~0ULL;
}
static void f_mr_hole(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, s->hole, VD_PAGE, 0); }
static void f_mr_into_hole(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	mr_args(s, a, s->rw + (VD_BUF_PAGES - 1) * VD_PAGE, VD_PAGE + 1, LW);
}
static void f_mr_null(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, NULL, VD_PAGE, 0); }
static void f_mr_kernel(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, VD_KERNEL_PTR, VD_PAGE, 0); }
static void f_mr_none(FIXTURE_DATA(badarg) *s, union vd_arg *a) { mr_args(s, a, s->none, VD_PAGE, 0); }
static void f_mr_pd0(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	f_mr_page(s, a);
	a->mr.pd_handle = 0;
}
static void f_mr_pd_stale(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	f_mr_page(s, a);
	a->mr.pd_handle = s->stale_pd;
}
static void f_mr_pd_cq(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	f_mr_page(s, a);
	a->mr.pd_handle = s->cq_free;
	VD_WRONG_TYPE(s, pd, a->mr.pd_handle);
}
static void f_mr_reserved(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	f_mr_page(s, a);
	a->mr.reserved[2] = 1;
}
static void f_mr_reserved2(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	f_mr_page(s, a);
	a->mr.reserved2 = 0x100;
}

static void check_mr_stag(struct __test_metadata *_metadata,
			  FIXTURE_DATA(badarg) *s, const union vd_arg *a, int ret)
{
	if (ret)
		return;
	EXPECT_NE(0, a->mr.handle);
	EXPECT_EQ(0xa7, a->mr.stag & VIADUCT_STAG_KEY_MASK);
	EXPECT_NE(0, a->mr.stag >> VIADUCT_STAG_INDEX_SHIFT);
	EXPECT_EQ(0, a->mr.reserved2);
}

VD_ROW_CHECK(reg_mr_page, VIADUCT_IOCTL_REG_MR, f_mr_page, check_mr_stag, 0,
	     "REG_MR of a page with LOCAL_WRITE");
VD_ROW_CHECK(reg_mr_unaligned, VIADUCT_IOCTL_REG_MR, f_mr_unaligned, check_mr_stag, 0,
	     "REG_MR at an odd address and length");
VD_ROW_CHECK(reg_mr_last_byte, VIADUCT_IOCTL_REG_MR, f_mr_last_byte, check_mr_stag, 0,
	     "REG_MR of the last byte before a hole");
VD_ROW_CHECK(reg_mr_all_access, VIADUCT_IOCTL_REG_MR, f_mr_all, check_mr_stag, 0,
	     "REG_MR with every access bit the device supports");
VD_ROW_CHECK(reg_mr_mw_bind, VIADUCT_IOCTL_REG_MR, f_mr_mw, check_mr_stag, 0,
	     "REG_MR with MW_BIND: windows may be bound to it");
VD_ROW_CHECK(reg_mr_ro_mw_bind, VIADUCT_IOCTL_REG_MR, f_mr_ro_mw, check_mr_stag, 0,
	     "REG_MR of read-only memory with MW_BIND: read-only windows");
VD_ROW_CHECK(reg_mr_ro_read, VIADUCT_IOCTL_REG_MR, f_mr_ro_read, check_mr_stag, 0,
	     "REG_MR of read-only memory for local read");
VD_ROW_CHECK(reg_mr_ro_remote_read, VIADUCT_IOCTL_REG_MR, f_mr_ro_rread, check_mr_stag, 0,
	     "REG_MR of read-only memory for remote read");
VD_ROW(reg_mr_ro_local_write, VIADUCT_IOCTL_REG_MR, f_mr_ro_lw, -EACCES,
       "REG_MR of read-only memory with LOCAL_WRITE");
VD_ROW(reg_mr_ro_remote_write, VIADUCT_IOCTL_REG_MR, f_mr_ro_rw, -EACCES,
       "REG_MR of read-only memory with LOCAL_WRITE | REMOTE_WRITE");
VD_ROW(reg_mr_prot_none, VIADUCT_IOCTL_REG_MR, f_mr_none, -EACCES,
       "REG_MR of PROT_NONE memory");
VD_ROW(reg_mr_remote_write_alone, VIADUCT_IOCTL_REG_MR, f_mr_rw_only, -EINVAL,
       "REG_MR with REMOTE_WRITE but not LOCAL_WRITE");
VD_ROW(reg_mr_remote_write_read, VIADUCT_IOCTL_REG_MR, f_mr_rw_rr, -EINVAL,
       "REG_MR with REMOTE_WRITE | REMOTE_READ but not LOCAL_WRITE");
VD_ROW(reg_mr_access_bit4, VIADUCT_IOCTL_REG_MR, f_mr_bit4, -EINVAL,
       "REG_MR with unknown access bit 4");
VD_ROW(reg_mr_access_bit31, VIADUCT_IOCTL_REG_MR, f_mr_bit31, -EINVAL,
       "REG_MR with unknown access bit 31");
VD_ROW(reg_mr_len0, VIADUCT_IOCTL_REG_MR, f_mr_len0, -EINVAL, "REG_MR of length 0");
VD_ROW(reg_mr_len_huge, VIADUCT_IOCTL_REG_MR, f_mr_len_huge, -EINVAL, "REG_MR of 2^62 bytes");
VD_ROW(reg_mr_len_max, VIADUCT_IOCTL_REG_MR, f_mr_len_max, -EINVAL, "REG_MR of 2^64-1 bytes");
VD_ROW(reg_mr_wrap, VIADUCT_IOCTL_REG_MR, f_mr_wrap, -EINVAL,
       "REG_MR whose addr + length wraps 2^64");
VD_ROW(reg_mr_wrap_byte, VIADUCT_IOCTL_REG_MR, f_mr_wrap_byte, -EINVAL,
       "REG_MR of 2 bytes at 2^64-1");
VD_ROW(reg_mr_unmapped, VIADUCT_IOCTL_REG_MR, f_mr_hole, -EFAULT, "REG_MR of an unmapped page");
VD_ROW(reg_mr_into_hole, VIADUCT_IOCTL_REG_MR, f_mr_into_hole, -EFAULT,
       "REG_MR of a range running into an unmapped page");
VD_ROW(reg_mr_null, VIADUCT_IOCTL_REG_MR, f_mr_null, -EFAULT, "REG_MR at address 0");
VD_ROW(reg_mr_kernel, VIADUCT_IOCTL_REG_MR, f_mr_kernel, -EFAULT, "REG_MR of kernel memory");
VD_ROW(reg_mr_pd0, VIADUCT_IOCTL_REG_MR, f_mr_pd0, -ENOENT, "REG_MR on PD handle 0");
VD_ROW(reg_mr_pd_stale, VIADUCT_IOCTL_REG_MR, f_mr_pd_stale, -ENOENT,
       "REG_MR on a destroyed PD");
VD_ROW(reg_mr_pd_cq, VIADUCT_IOCTL_REG_MR, f_mr_pd_cq, -ENOENT, "REG_MR on a CQ handle");
VD_ROW(reg_mr_reserved, VIADUCT_IOCTL_REG_MR, f_mr_reserved, -EINVAL,
       "REG_MR with nonzero reserved[]");
VD_ROW(reg_mr_reserved2, VIADUCT_IOCTL_REG_MR, f_mr_reserved2, -EINVAL,
       "REG_MR with nonzero reserved2");
VD_ROWS_COMMON(reg_mr, VIADUCT_IOCTL_REG_MR, f_mr_page);
VD_ROW_RO_ARG(reg_mr, VIADUCT_IOCTL_REG_MR, f_mr_page);
VD_ROW_OTHER_PROCESS(reg_mr, VIADUCT_IOCTL_REG_MR, f_mr_page);

/* ---- DEREG_MR ----------------------------------------------------- */

static void f_mr(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->h.handle = s->mr; }
static void f_mr_stale(FIXTURE_DATA(badarg) *s, union vd_arg *a) { a->h.handle = s->stale_mr; }
static void f_mr_h_reserved(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	a->h.handle = s->mr;
	a->h.reserved = 0x80000000U;
}
static void f_pd_as_mr(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	a->h.handle = s->pd_free;
	VD_WRONG_TYPE(s, mr, a->h.handle);
}
static void f_cq_as_mr(FIXTURE_DATA(badarg) *s, union vd_arg *a)
{
	a->h.handle = s->cq_qp;
	VD_WRONG_TYPE(s, mr, a->h.handle);
}

VD_ROW(dereg_mr_ok, VIADUCT_IOCTL_DEREG_MR, f_mr, 0, "DEREG_MR works");
VD_ROW(dereg_mr_zero, VIADUCT_IOCTL_DEREG_MR, vd_fill_h0, -ENOENT, "DEREG_MR handle 0");
VD_ROW(dereg_mr_never, VIADUCT_IOCTL_DEREG_MR, vd_fill_hnever, -ENOENT,
       "DEREG_MR of a handle never allocated");
VD_ROW(dereg_mr_max, VIADUCT_IOCTL_DEREG_MR, vd_fill_hmax, -ENOENT, "DEREG_MR handle ~0");
VD_ROW(dereg_mr_stale, VIADUCT_IOCTL_DEREG_MR, f_mr_stale, -ENOENT,
       "DEREG_MR of a deregistered MR");
VD_ROW(dereg_mr_pd, VIADUCT_IOCTL_DEREG_MR, f_pd_as_mr, -ENOENT, "DEREG_MR with a PD handle");
VD_ROW(dereg_mr_cq, VIADUCT_IOCTL_DEREG_MR, f_cq_as_mr, -ENOENT, "DEREG_MR with a CQ handle");
VD_ROW(dereg_mr_reserved, VIADUCT_IOCTL_DEREG_MR, f_mr_h_reserved, -EINVAL,
       "DEREG_MR with a nonzero reserved field");
VD_ROWS_COMMON(dereg_mr, VIADUCT_IOCTL_DEREG_MR, f_mr);
VD_ROW_OTHER_PROCESS(dereg_mr, VIADUCT_IOCTL_DEREG_MR, f_mr);

/* ------------------------------------------------------------------ */
/* Sequences                                                          */
/* ------------------------------------------------------------------ */

VD_RES_FIXTURE("pm")

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

TEST_F(res, destroy_order)
{
	struct viaduct_create_qp qc;
	struct viaduct_create_cq cc;
	char *buf = map_anon(VD_PAGE);
	int pd, mr;

	ASSERT_NE(NULL, buf);
	pd = vd_create_pd(self->fd);
	ASSERT_LT(0, pd);
	mr = vd_reg_mr(self->fd, pd, buf, 10, LW, NULL);
	ASSERT_LT(0, mr);
	ASSERT_EQ(0, vd_create_cq(self->fd, 8, -1, 0, &cc));
	vd_qp_args(&qc, pd, cc.handle, cc.handle);
	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_CREATE_QP, &qc));

	EXPECT_EQ(-EBUSY, vd_destroy_pd(self->fd, pd));
	EXPECT_EQ(-EBUSY, vd_destroy_cq(self->fd, cc.handle));
	EXPECT_EQ(0, vd_dereg_mr(self->fd, mr));
	/* the QP still uses the PD */
	EXPECT_EQ(-EBUSY, vd_destroy_pd(self->fd, pd));
	EXPECT_EQ(0, vd_destroy_qp(self->fd, qc.handle));
	EXPECT_EQ(0, vd_destroy_cq(self->fd, cc.handle));
	EXPECT_EQ(0, vd_destroy_pd(self->fd, pd));
	/* all gone: every handle is stale now */
	EXPECT_EQ(-ENOENT, vd_destroy_pd(self->fd, pd));
	EXPECT_EQ(-ENOENT, vd_dereg_mr(self->fd, mr));
	EXPECT_EQ(-ENOENT, vd_destroy_qp(self->fd, qc.handle));
	EXPECT_EQ(-ENOENT, vd_destroy_cq(self->fd, cc.handle));
	EXPECT_EQ(-ENOENT, vd_reg_mr(self->fd, pd, buf, 10, 0, NULL));
	vd_snap_expect_back(&self->before, 3000, "destroy_order");
}

TEST_F(res, stag_keys)
{
	char *buf = map_anon(VD_PAGE);
	unsigned int key, idx[8];
	int pd, i;

	ASSERT_NE(NULL, buf);
	pd = vd_create_pd(self->fd);
	ASSERT_LT(0, pd);
	for (key = 0; key < 256; key += 37) {
		struct viaduct_reg_mr r = {
			.addr = (unsigned long)buf, .length = 64, .pd_handle = pd, .key = key,
		};

		ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_REG_MR, &r));
		EXPECT_EQ(key, r.stag & VIADUCT_STAG_KEY_MASK);
		EXPECT_NE(0, r.stag >> VIADUCT_STAG_INDEX_SHIFT);
		EXPECT_EQ(0, r.reserved2);
		idx[key / 37] = r.stag >> VIADUCT_STAG_INDEX_SHIFT;
		for (i = 0; i < (int)(key / 37); i++)
			EXPECT_NE(idx[i], idx[key / 37]) TH_LOG("two live MRs share an STag index");
		ASSERT_EQ(0, vd_dereg_mr(self->fd, r.handle)) ;
		/* keep the index busy for the uniqueness check: register again */
		r.key = 0;
		ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_REG_MR, &r));
		idx[key / 37] = r.stag >> VIADUCT_STAG_INDEX_SHIFT;
	}
	/* closing the file releases the regions left registered on purpose */
	vd_testdev_close(&self->dev);
	vd_snap_drop_file(&self->before);
	vd_snap_expect_back(&self->before, 3000, "stag_keys, after close");
}

/* Registers [addr, addr + len), expects @pages pages charged, deregisters. */
static void reg_expect_pages(struct __test_metadata *_metadata, int fd, int pd,
			     const char *addr, size_t len, long pages)
{
	long base = vd_vmpin_kb(), kb = VD_PAGE / 1024;
	int mr = vd_reg_mr(fd, pd, addr, len, LW, NULL);

	ASSERT_LT(0, mr) TH_LOG("REG_MR %p+%zu: %s", addr, len, strerror(-mr));
	EXPECT_EQ(base + pages * kb, vd_vmpin_kb()) TH_LOG("REG_MR %p+%zu", addr, len);
	ASSERT_EQ(0, vd_dereg_mr(fd, mr));
	EXPECT_EQ(base, vd_vmpin_kb()) TH_LOG("DEREG_MR %p+%zu", addr, len);
}

TEST_F_TIMEOUT(res, one_byte_at_every_offset, 120)
{
	char *buf = map_anon(2 * VD_PAGE);
	long base = vd_vmpin_kb();
	unsigned long off;
	int pd;

	ASSERT_NE(NULL, buf);
	ASSERT_LE(0, base) TH_LOG("no VmPin in /proc/self/status");
	pd = vd_create_pd(self->fd);
	ASSERT_LT(0, pd);
	for (off = 0; off < VD_PAGE; off++) {
		int mr = vd_reg_mr(self->fd, pd, buf + off, 1, LW | RW, NULL);

		ASSERT_LT(0, mr) TH_LOG("offset %lu: %s", off, strerror(-mr));
		/* one byte costs one page, never two */
		if (off % 61 == 0 || off == VD_PAGE - 1)
			EXPECT_EQ(base + (long)VD_PAGE / 1024, vd_vmpin_kb()) TH_LOG("offset %lu", off);
		ASSERT_EQ(0, vd_dereg_mr(self->fd, mr));
	}
	EXPECT_EQ(base, vd_vmpin_kb());
	EXPECT_EQ(0, vd_destroy_pd(self->fd, pd));
	vd_snap_expect_back(&self->before, 3000, "one_byte_at_every_offset");
}

TEST_F(res, page_crossing)
{
	char *buf = map_anon(4 * VD_PAGE);
	const size_t P = VD_PAGE;
	int pd;

	ASSERT_NE(NULL, buf);
	pd = vd_create_pd(self->fd);
	ASSERT_LT(0, pd);
	reg_expect_pages(_metadata, self->fd, pd, buf, P, 1);
	reg_expect_pages(_metadata, self->fd, pd, buf + P - 1, 2, 2);
	reg_expect_pages(_metadata, self->fd, pd, buf + 1, P, 2);
	reg_expect_pages(_metadata, self->fd, pd, buf + 1, P - 1, 1);
	reg_expect_pages(_metadata, self->fd, pd, buf + 1, 2 * P - 2, 2);
	reg_expect_pages(_metadata, self->fd, pd, buf + P - 1, P + 2, 3);
	reg_expect_pages(_metadata, self->fd, pd, buf + 1, 4 * P - 1, 4);
	reg_expect_pages(_metadata, self->fd, pd, buf, 4 * P, 4);
	EXPECT_EQ(0, vd_destroy_pd(self->fd, pd));
	vd_snap_expect_back(&self->before, 3000, "page_crossing");
}

TEST_F(res, overlapping_regions_charge_twice)
{
	char *buf = map_anon(2 * VD_PAGE);
	long base = vd_vmpin_kb(), kb = VD_PAGE / 1024;
	int pd, a, b;

	ASSERT_NE(NULL, buf);
	pd = vd_create_pd(self->fd);
	ASSERT_LT(0, pd);
	a = vd_reg_mr(self->fd, pd, buf, 2 * VD_PAGE, LW, NULL);
	b = vd_reg_mr(self->fd, pd, buf + 100, 10, 0, NULL);
	ASSERT_LT(0, a);
	ASSERT_LT(0, b);
	EXPECT_NE(a, b);
	EXPECT_EQ(base + 3 * kb, vd_vmpin_kb());
	EXPECT_EQ(0, vd_dereg_mr(self->fd, a));
	EXPECT_EQ(base + kb, vd_vmpin_kb());
	EXPECT_EQ(0, vd_dereg_mr(self->fd, b));
	EXPECT_EQ(0, vd_destroy_pd(self->fd, pd));
	vd_snap_expect_back(&self->before, 3000, "overlapping_regions_charge_twice");
}

TEST_F_TIMEOUT(res, sixty_four_mib, 120)
{
	const size_t len = 64UL << 20;
	long base = vd_vmpin_kb();
	long long pinned0 = vd_dev_stat(self->dev.name, VD_ST_PINNED);
	char *buf = map_anon(len + VD_PAGE);
	int pd, mr;

	ASSERT_NE(NULL, buf);
	pd = vd_create_pd(self->fd);
	ASSERT_LT(0, pd);
	/* not populated: registration faults the pages in */
	mr = vd_reg_mr(self->fd, pd, buf, len, LW | RW | RR, NULL);
	ASSERT_LT(0, mr) TH_LOG("REG_MR 64 MiB: %s", strerror(-mr));
	EXPECT_EQ(base + (long)(len >> 10), vd_vmpin_kb());
	ASSERT_LE(0, pinned0) TH_LOG("device %s: no counters (LINK_GET)", self->dev.name);
	EXPECT_EQ(pinned0 + (long long)(len / VD_PAGE), vd_dev_stat(self->dev.name, VD_ST_PINNED));
	/* the pages are really there: the process can use them */
	memset(buf, 0x5a, len);
	EXPECT_EQ(0, vd_dereg_mr(self->fd, mr));
	EXPECT_EQ(base, vd_vmpin_kb());
	/* unaligned: one page more */
	mr = vd_reg_mr(self->fd, pd, buf + 17, len, LW, NULL);
	ASSERT_LT(0, mr);
	EXPECT_EQ(base + (long)(len >> 10) + (long)VD_PAGE / 1024, vd_vmpin_kb());
	EXPECT_EQ(0, vd_dereg_mr(self->fd, mr));
	EXPECT_EQ(0, vd_destroy_pd(self->fd, pd));
	EXPECT_EQ(pinned0, vd_dev_stat(self->dev.name, VD_ST_PINNED));
	vd_snap_expect_back(&self->before, 3000, "sixty_four_mib");
}

TEST_F(res, memory_unmapped_while_registered)
{
	char *buf = map_anon(8 * VD_PAGE);
	long base = vd_vmpin_kb();
	int pd, mr;

	ASSERT_NE(NULL, buf);
	memset(buf, 1, 8 * VD_PAGE);
	pd = vd_create_pd(self->fd);
	ASSERT_LT(0, pd);
	mr = vd_reg_mr(self->fd, pd, buf, 8 * VD_PAGE, LW, NULL);
	ASSERT_LT(0, mr);
	/* the region keeps its pages; unmapping them is the process's business */
	ASSERT_EQ(0, munmap(buf, 8 * VD_PAGE));
	EXPECT_EQ(base + 8 * (long)VD_PAGE / 1024, vd_vmpin_kb());
	EXPECT_EQ(0, vd_dereg_mr(self->fd, mr));
	EXPECT_EQ(base, vd_vmpin_kb());
	EXPECT_EQ(0, vd_destroy_pd(self->fd, pd));
	vd_snap_expect_back(&self->before, 3000, "memory_unmapped_while_registered");
}

TEST_F(res, mprotect_after_registration)
{
	char *buf = map_anon(2 * VD_PAGE);
	int pd, mr;

	ASSERT_NE(NULL, buf);
	pd = vd_create_pd(self->fd);
	ASSERT_LT(0, pd);
	mr = vd_reg_mr(self->fd, pd, buf, 2 * VD_PAGE, LW, NULL);
	ASSERT_LT(0, mr);
	ASSERT_EQ(0, mprotect(buf, 2 * VD_PAGE, PROT_READ));
	/* a new writable registration now fails, the old one stays */
	EXPECT_EQ(-EACCES, vd_reg_mr(self->fd, pd, buf, VD_PAGE, LW, NULL));
	EXPECT_EQ(0, vd_dereg_mr(self->fd, mr));
	mr = vd_reg_mr(self->fd, pd, buf, VD_PAGE, RR, NULL);
	EXPECT_LT(0, mr);
	EXPECT_EQ(0, vd_dereg_mr(self->fd, mr));
	EXPECT_EQ(0, vd_destroy_pd(self->fd, pd));
	vd_snap_expect_back(&self->before, 3000, "mprotect_after_registration");
}

TEST_F(res, many_pds_and_mrs)
{
	enum { N = 300 };
	static int pds[N], mrs[N];
	char *buf = map_anon(N * 64);
	long base = vd_vmpin_kb();
	int i;

	ASSERT_NE(NULL, buf);
	for (i = 0; i < N; i++) {
		pds[i] = vd_create_pd(self->fd);
		ASSERT_LT(0, pds[i]) TH_LOG("PD #%d: %s", i, strerror(-pds[i]));
		mrs[i] = vd_reg_mr(self->fd, pds[i], buf + i * 64, 64, LW, NULL);
		ASSERT_LT(0, mrs[i]) TH_LOG("MR #%d: %s", i, strerror(-mrs[i]));
	}
	EXPECT_LT(base, vd_vmpin_kb());
	for (i = 0; i < N; i += 2) {
		EXPECT_EQ(0, vd_dereg_mr(self->fd, mrs[i]));
		EXPECT_EQ(0, vd_destroy_pd(self->fd, pds[i]));
	}
	/* the rest goes with the file */
	vd_testdev_close(&self->dev);
	vd_snap_drop_file(&self->before);
	vd_snap_expect_back(&self->before, 3000, "many_pds_and_mrs, after close");
}

static int modify_mr(int fd, __u32 mr, __u32 flags, __u32 access, __u32 pd)
{
	struct viaduct_modify_mr m = {
		.handle = mr, .flags = flags, .access = access, .pd_handle = pd,
	};

	return vd_ioctl(fd, VIADUCT_IOCTL_MODIFY_MR, &m);
}

#define MOD_ACCESS	VIADUCT_MODIFY_MR_ACCESS
#define MOD_PD		VIADUCT_MODIFY_MR_PD

/*
 * MODIFY_MR: rights and PD change in place, the STag stays; every bad
 * argument is refused with nothing changed. (What a peer's access sees
 * after a change is in mem_test.)
 */
TEST_F(res, modify_mr)
{
	char *buf = map_anon(VD_PAGE);
	char *ro = mmap(NULL, VD_PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct viaduct_alloc_mr fr = { .max_pages = 1 };
	struct viaduct_reg_mr r = { .length = 100, .access = LW, .key = 7 };
	int pd, pd2, ro_mr;

	ASSERT_NE(NULL, buf);
	ASSERT_NE(MAP_FAILED, ro);
	pd = vd_create_pd(self->fd);
	ASSERT_LT(0, pd);
	pd2 = vd_create_pd(self->fd);
	ASSERT_LT(0, pd2);
	r.addr = (unsigned long)buf;
	r.pd_handle = pd;
	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_REG_MR, &r));
	ro_mr = vd_reg_mr(self->fd, pd, ro, 64, RR, NULL);
	ASSERT_LT(0, ro_mr);
	fr.pd_handle = pd;
	ASSERT_EQ(0, vd_ioctl(self->fd, VIADUCT_IOCTL_ALLOC_MR, &fr));

	/* every right a region can have, and back */
	EXPECT_EQ(0, modify_mr(self->fd, r.handle, MOD_ACCESS, LW | RW | RR, 0));
	EXPECT_EQ(0, modify_mr(self->fd, r.handle, MOD_ACCESS, 0, 0));
	EXPECT_EQ(0, modify_mr(self->fd, r.handle, MOD_ACCESS, LW | RW, 0));
	EXPECT_EQ(0, modify_mr(self->fd, ro_mr, MOD_ACCESS, 0, 0));
	EXPECT_EQ(0, modify_mr(self->fd, ro_mr, MOD_ACCESS, RR, 0));

	/* refused, nothing changed */
	EXPECT_EQ(-EINVAL, modify_mr(self->fd, r.handle, 0, 0, 0));
	EXPECT_EQ(-EINVAL, modify_mr(self->fd, r.handle, 4, LW, 0));
	EXPECT_EQ(-EINVAL, modify_mr(self->fd, r.handle, MOD_ACCESS, RW, 0));
	EXPECT_EQ(-EINVAL, modify_mr(self->fd, r.handle, MOD_ACCESS, RW | RR, 0));
	EXPECT_EQ(-EINVAL, modify_mr(self->fd, r.handle, MOD_ACCESS, LW | 0x10, 0));
	EXPECT_EQ(-EINVAL, modify_mr(self->fd, r.handle, MOD_ACCESS, 0x80000000U, 0));
	/* the window right, as at REG_MR */
	EXPECT_EQ(0, modify_mr(self->fd, r.handle, MOD_ACCESS, LW | MW, 0));
	/* a field the flags do not name must be zero */
	EXPECT_EQ(-EINVAL, modify_mr(self->fd, r.handle, MOD_PD, LW, pd2));
	EXPECT_EQ(-EINVAL, modify_mr(self->fd, r.handle, MOD_ACCESS, LW, pd2));
	/* pages pinned for reading only take no write right */
	EXPECT_EQ(-EACCES, modify_mr(self->fd, ro_mr, MOD_ACCESS, LW, 0));
	EXPECT_EQ(-EACCES, modify_mr(self->fd, ro_mr, MOD_ACCESS, LW | RW, 0));
	/* only REG_MR's regions */
	EXPECT_EQ(-EINVAL, modify_mr(self->fd, fr.handle, MOD_ACCESS, LW, 0));
	/* handles of nothing, or of the wrong type */
	EXPECT_EQ(-ENOENT, modify_mr(self->fd, 0, MOD_ACCESS, LW, 0));
	EXPECT_EQ(-ENOENT, modify_mr(self->fd, pd, MOD_ACCESS, LW, 0));
	EXPECT_EQ(-ENOENT, modify_mr(self->fd, ~0U, MOD_ACCESS, LW, 0));
	EXPECT_EQ(-ENOENT, modify_mr(self->fd, r.handle, MOD_PD, 0, r.handle));
	EXPECT_EQ(-ENOENT, modify_mr(self->fd, r.handle, MOD_PD, 0, ~0U));

	/* to the other PD: the first loses a user, the second gains one */
	EXPECT_EQ(0, modify_mr(self->fd, r.handle, MOD_PD | MOD_ACCESS, LW, pd2));
	EXPECT_EQ(0, vd_dereg_mr(self->fd, ro_mr));
	EXPECT_EQ(0, vd_dereg_mr(self->fd, fr.handle));
	EXPECT_EQ(0, vd_destroy_pd(self->fd, pd));
	EXPECT_EQ(-EBUSY, vd_destroy_pd(self->fd, pd2));
	/* a destroyed PD takes nothing */
	EXPECT_EQ(-ENOENT, modify_mr(self->fd, r.handle, MOD_PD, 0, pd));
	/* moving to the PD it is on changes nothing */
	EXPECT_EQ(0, modify_mr(self->fd, r.handle, MOD_PD, 0, pd2));
	EXPECT_EQ(0, vd_dereg_mr(self->fd, r.handle));
	EXPECT_EQ(0, vd_destroy_pd(self->fd, pd2));
	EXPECT_EQ(-ENOENT, modify_mr(self->fd, r.handle, MOD_ACCESS, LW, 0));
	munmap(ro, VD_PAGE);
	vd_snap_expect_back(&self->before, 3000, "modify_mr");
}

TEST_HARNESS_MAIN
