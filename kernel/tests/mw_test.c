// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite viaduct_mw: memory windows (mw.c). Binding by call and by
 * work request, the rights of a window against its region's (verbs figure
 * 20), bounds at both ends, the type-2 window's QP, rebinding and
 * unbinding, invalidation ending the binding, DEREG_MR refused while a
 * window is bound, and the address a window reaches in its region's pages.
 *
 * Regions here have a umem without pages (a view with a page array of
 * NULLs): the table and the offsets are what is tested; the selftests move
 * real data through windows.
 */
#include <kunit/test.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "../mem.h"
#include "../pd.h"
#include "../tpt.h"

#define BASE	0x7f0000001123ULL
#define LEN	(3 * 4096ULL + 7)
#define KEY	0x5a
#define QPA	11
#define QPB	12

#define LW	VIADUCT_ACCESS_LOCAL_WRITE
#define RWA	VIADUCT_ACCESS_REMOTE_WRITE
#define RRA	VIADUCT_ACCESS_REMOTE_READ
#define BIND	VIADUCT_ACCESS_MW_BIND
#define ZB	VIADUCT_ACCESS_ZERO_BASED

struct mw_fixture {
	struct vd_tpt tpt;
	struct vd_pd *pd;
	struct vd_pd *pd2;
};

static int mw_test_init(struct kunit *test)
{
	struct mw_fixture *f;

	f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, f);
	vd_tpt_init(&f->tpt, 0);
	f->pd = vd_pd_create(NULL, NULL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, f->pd);
	f->pd2 = vd_pd_create(NULL, NULL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, f->pd2);
	test->priv = f;
	return 0;
}

static void mw_test_exit(struct kunit *test)
{
	struct mw_fixture *f = test->priv;

	vd_pd_put(f->pd);
	vd_pd_put(f->pd2);
	vd_tpt_uninit(&f->tpt);
}

/* A region of [BASE, BASE + LEN) with a page-less umem (a view). */
static struct vd_mr *region(struct kunit *test, struct vd_pd *pd, u32 access)
{
	struct mw_fixture *f = test->priv;
	struct vd_umem *umem;
	struct vd_mr *mr;

	umem = kzalloc(sizeof(*umem), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, umem);
	umem->addr = BASE;
	umem->length = LEN;
	umem->first_offset = BASE & ~PAGE_MASK;
	umem->npages = vd_umem_num_pages(BASE, LEN);
	umem->pages = kvcalloc(umem->npages, sizeof(*umem->pages), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, umem->pages);
	mr = vd_mr_insert(&f->tpt, pd, umem, BASE, LEN, access, KEY);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, mr);
	return mr;
}

static struct vd_mr *window(struct kunit *test, enum vd_stag_type type)
{
	struct mw_fixture *f = test->priv;
	struct vd_mr *mw = vd_mw_alloc(&f->tpt, f->pd, type, 0x11);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, mw);
	KUNIT_EXPECT_EQ(test, mw->state, (u8)VD_MR_INVALID);
	KUNIT_EXPECT_EQ(test, mw->length, 0ULL);
	return mw;
}

static u32 with_key(u32 stag, u8 key)
{
	return (stag & ~VIADUCT_STAG_KEY_MASK) | key;
}

static enum vd_access_status check(struct kunit *test, u32 stag, u32 qpn,
				   u32 rights, u64 addr, u64 len)
{
	struct mw_fixture *f = test->priv;

	return vd_tpt_check(&f->tpt, stag, f->pd, qpn, rights, addr, len,
			    NULL);
}

/* Windows are typed; only window types are allocated as windows. */
static void mw_test_alloc(struct kunit *test)
{
	struct mw_fixture *f = test->priv;
	struct vd_mr *mw;

	KUNIT_EXPECT_EQ(test, PTR_ERR(vd_mw_alloc(&f->tpt, f->pd, VD_STAG_MR,
						  1)), -EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(vd_mw_alloc(&f->tpt, f->pd,
						  VD_STAG_FAST_REG, 1)),
			-EINVAL);
	mw = window(test, VD_STAG_MW1);
	/* an unbound window reaches nothing, and counts as a PD user */
	KUNIT_EXPECT_EQ(test, check(test, mw->stag, 0, VD_RIGHT_REMOTE_READ,
				    0, 1), VD_ACCESS_INVALID_STATE);
	KUNIT_EXPECT_EQ(test, vd_pd_try_destroy(f->pd), -EBUSY);
	vd_mr_deregister(mw);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->tpt.nr_mrs), 0);
}

/*
 * Verbs figure 20, over every region access with MW_BIND and every window
 * access: remote read needs local read (every region has it), remote
 * write local write; no remote right, or a bit that is no window right,
 * is malformed. The region's own remote rights do not matter.
 */
static void mw_test_rights(struct kunit *test)
{
	struct mw_fixture *f = test->priv;
	static const u32 regions[] = {
		BIND, BIND | LW, BIND | LW | RWA, BIND | RRA, BIND | LW | RRA | RWA,
	};
	u32 r, a;

	for (r = 0; r < ARRAY_SIZE(regions); r++) {
		struct vd_mr *mr = region(test, f->pd, regions[r]);

		for (a = 0; a < 64; a++) {
			struct vd_mr *mw = window(test, VD_STAG_MW1);
			u32 stag = with_key(mw->stag, 0x22);
			int want, got;

			if (a & ~(RRA | RWA | ZB) || !(a & (RRA | RWA)))
				want = -EINVAL;
			else if ((a & RWA) && !(regions[r] & LW))
				want = -EACCES;
			else
				want = 0;
			got = vd_mw_bind(&f->tpt, f->pd, 0, stag, mr->stag,
					 BASE, LEN, a);
			KUNIT_EXPECT_EQ_MSG(test, got, want,
					    "region %#x window %#x",
					    regions[r], a);
			if (!got) {
				u64 at = a & ZB ? 0 : BASE;

				/* exactly the window's rights, nothing local */
				KUNIT_EXPECT_EQ(test,
						check(test, stag, QPB,
						      VD_RIGHT_REMOTE_READ,
						      at, LEN),
						a & RRA ? VD_ACCESS_OK :
							  VD_ACCESS_RIGHTS);
				KUNIT_EXPECT_EQ(test,
						check(test, stag, QPB,
						      VD_RIGHT_REMOTE_WRITE,
						      at, LEN),
						a & RWA ? VD_ACCESS_OK :
							  VD_ACCESS_RIGHTS);
				KUNIT_EXPECT_EQ(test,
						check(test, stag, QPB,
						      VD_RIGHT_LOCAL_READ,
						      at, 1),
						VD_ACCESS_RIGHTS);
			}
			vd_mr_deregister(mw);
		}
		KUNIT_EXPECT_EQ(test, vd_mr_refuse_binds(mr), 0);
		vd_mr_deregister(mr);
	}
}

/* A region without MW_BIND, of another PD, or not a plain MR: refused. */
static void mw_test_region_refused(struct kunit *test)
{
	struct mw_fixture *f = test->priv;
	struct vd_mr *plain = region(test, f->pd, LW | RWA | RRA);
	struct vd_mr *other = region(test, f->pd2, BIND | LW);
	struct vd_mr *mr = region(test, f->pd, BIND | LW);
	struct vd_mr *mw = window(test, VD_STAG_MW1);
	struct vd_mr *mw2 = window(test, VD_STAG_MW2);
	u32 stag = with_key(mw->stag, 1);

	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, 0, stag, plain->stag,
					 BASE, 1, RRA), -EACCES);
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, 0, stag, other->stag,
					 BASE, 1, RRA), -EACCES);
	/* a wrong key of the region, or of the window's index */
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, 0, stag,
					 mr->stag ^ 1, BASE, 1, RRA), -EACCES);
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, 0,
					 stag + (0x1000 << VIADUCT_STAG_INDEX_SHIFT),
					 mr->stag, BASE, 1, RRA), -EPERM);
	/* a window of another PD, a region as the window, a window as region */
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd2, 0, stag, other->stag,
					 BASE, 1, RRA), -EPERM);
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, 0, mr->stag,
					 mr->stag, BASE, 1, RRA), -EPERM);
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, QPA, mw2->stag,
					 mw->stag, BASE, 1, RRA), -EACCES);
	/* type 2: never by a call, never of length 0 */
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, 0, mw2->stag,
					 mr->stag, BASE, 1, RRA), -EINVAL);
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, QPA, mw2->stag,
					 mr->stag, BASE, 0, RRA), -ERANGE);
	KUNIT_EXPECT_EQ(test, vd_mw_bind_status(-ERANGE),
			VIADUCT_WC_LOC_LEN_ERR);
	KUNIT_EXPECT_EQ(test, vd_mw_bind_status(-EINVAL),
			VIADUCT_WC_LOC_QP_OP_ERR);
	KUNIT_EXPECT_EQ(test, vd_mw_bind_status(-EACCES),
			VIADUCT_WC_LOC_PROT_ERR);
	KUNIT_EXPECT_EQ(test, vd_mw_bind_status(-EPERM),
			VIADUCT_WC_LOC_PROT_ERR);
	/* nothing was bound */
	KUNIT_EXPECT_EQ(test, atomic_read(&mr->mw_bound), 0);
	vd_mr_deregister(mw2);
	vd_mr_deregister(mw);
	vd_mr_deregister(mr);
	vd_mr_deregister(other);
	vd_mr_deregister(plain);
}

/*
 * Bounds: a window at either end of its region binds, one byte beyond
 * does not; an access through the window is held to the window's range,
 * not the region's; and it reaches the right bytes of the region's pages.
 */
static void mw_test_bounds(struct kunit *test)
{
	struct mw_fixture *f = test->priv;
	struct vd_mr *mr = region(test, f->pd, BIND | LW);
	struct vd_mr *mw = window(test, VD_STAG_MW1), *inst = NULL;
	u32 stag = with_key(mw->stag, 2);
	u64 wa = BASE + 100, wl = 5000;

	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, 0, stag, mr->stag,
					 BASE - 1, 2, RRA), -EACCES);
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, 0, stag, mr->stag,
					 BASE + LEN - 1, 2, RRA), -EACCES);
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, 0, stag, mr->stag,
					 BASE + LEN - 1, 1, RRA), 0);
	KUNIT_EXPECT_EQ(test, check(test, stag, 0, VD_RIGHT_REMOTE_READ,
				    BASE + LEN - 1, 1), VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, 0, stag, mr->stag,
					 wa, wl, RRA | RWA), 0);
	KUNIT_EXPECT_EQ(test, check(test, stag, 0, VD_RIGHT_REMOTE_WRITE,
				    wa, wl), VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, stag, 0, VD_RIGHT_REMOTE_WRITE,
				    wa - 1, 1), VD_ACCESS_BOUNDS);
	KUNIT_EXPECT_EQ(test, check(test, stag, 0, VD_RIGHT_REMOTE_WRITE,
				    wa + wl - 1, 2), VD_ACCESS_BOUNDS);
	KUNIT_EXPECT_EQ(test, check(test, stag, 0, VD_RIGHT_REMOTE_READ,
				    BASE, 1), VD_ACCESS_BOUNDS);
	/* the bytes it reaches: the region's, from the window's start */
	KUNIT_ASSERT_EQ(test, vd_tpt_check(&f->tpt, stag, f->pd, 0,
					   VD_RIGHT_REMOTE_READ, wa + 10, 1,
					   &inst), VD_ACCESS_OK);
	KUNIT_EXPECT_PTR_EQ(test, inst->umem, mr->umem);
	KUNIT_EXPECT_EQ(test, vd_mr_offset(inst, wa + 10), 110ULL);
	vd_mr_put(inst);

	/* zero based: address 0 is the window's first byte */
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, 0, stag, mr->stag,
					 wa, wl, RRA | ZB), 0);
	KUNIT_EXPECT_EQ(test, check(test, stag, 0, VD_RIGHT_REMOTE_READ, 0,
				    wl), VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, stag, 0, VD_RIGHT_REMOTE_READ, wa,
				    1), VD_ACCESS_BOUNDS);
	KUNIT_ASSERT_EQ(test, vd_tpt_check(&f->tpt, stag, f->pd, 0,
					   VD_RIGHT_REMOTE_READ, 7, 1, &inst),
			VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, vd_mr_offset(inst, 7), 107ULL);
	vd_mr_put(inst);
	vd_mr_deregister(mw);
	KUNIT_EXPECT_EQ(test, vd_mr_refuse_binds(mr), 0);
	vd_mr_deregister(mr);
}

/*
 * Type 2: bound to the QP of the WR, reached only through it, bound only
 * while INVALID, invalidated by its QP (and only then bound again).
 */
static void mw_test_type2(struct kunit *test)
{
	struct mw_fixture *f = test->priv;
	struct vd_mr *mr = region(test, f->pd, BIND | LW);
	struct vd_mr *mw = window(test, VD_STAG_MW2);
	u32 stag = with_key(mw->stag, 3), stag2 = with_key(mw->stag, 4);

	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, QPA, stag, mr->stag,
					 BASE, LEN, RWA), 0);
	KUNIT_EXPECT_EQ(test, check(test, stag, QPA, VD_RIGHT_REMOTE_WRITE,
				    BASE, LEN), VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, stag, QPB, VD_RIGHT_REMOTE_WRITE,
				    BASE, 1), VD_ACCESS_QP_MISMATCH);
	/* the ALLOC_MW key names nothing now */
	KUNIT_EXPECT_EQ(test, check(test, mw->stag, QPA,
				    VD_RIGHT_REMOTE_WRITE, BASE, 1),
			VD_ACCESS_INVALID_STAG);
	/* VALID: no second bind, no invalidation by another QP */
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, QPA, stag2, mr->stag,
					 BASE, 1, RWA), -EPERM);
	KUNIT_EXPECT_EQ(test, vd_tpt_invalidate_sync(&f->tpt, stag, f->pd, QPB,
						     false),
			VD_ACCESS_QP_MISMATCH);
	KUNIT_EXPECT_EQ(test, vd_tpt_invalidate_sync(&f->tpt, stag, f->pd, QPB,
						     true),
			VD_ACCESS_QP_MISMATCH);
	KUNIT_EXPECT_EQ(test, vd_mr_refuse_binds(mr), -EBUSY);
	KUNIT_EXPECT_EQ(test, atomic_read(&mr->mw_bound), 1);
	/* its QP's peer invalidates it: unbound, and DEREG_MR may go */
	KUNIT_EXPECT_EQ(test, vd_tpt_invalidate_sync(&f->tpt, stag, f->pd, QPA,
						     true), VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, stag, QPA, VD_RIGHT_REMOTE_WRITE,
				    BASE, 1), VD_ACCESS_INVALID_STATE);
	KUNIT_EXPECT_EQ(test, atomic_read(&mr->mw_bound), 0);
	/* bound again, by another QP of the PD, with a new key */
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, QPB, stag2, mr->stag,
					 BASE + 8, 8, RRA), 0);
	KUNIT_EXPECT_EQ(test, check(test, stag, QPB, VD_RIGHT_REMOTE_READ,
				    BASE + 8, 1), VD_ACCESS_INVALID_STAG);
	KUNIT_EXPECT_EQ(test, check(test, stag2, QPB, VD_RIGHT_REMOTE_READ,
				    BASE + 8, 8), VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, stag2, QPA, VD_RIGHT_REMOTE_READ,
				    BASE + 8, 8), VD_ACCESS_QP_MISMATCH);
	/* a Local Invalidate by its QP */
	KUNIT_EXPECT_EQ(test, vd_tpt_invalidate_sync(&f->tpt, stag2, f->pd,
						     QPB, false),
			VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, vd_mr_refuse_binds(mr), 0);
	/* DEREG_MR has begun: no bind takes the region any more */
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, QPA, stag, mr->stag,
					 BASE, 1, RRA), -EACCES);
	vd_mr_deregister(mr);
	vd_mr_deregister(mw);
}

/*
 * Type 1: any QP of the PD; never invalidated; bound again while bound
 * (the old binding ends), unbound by a bind of length 0; deallocation
 * ends the binding.
 */
static void mw_test_type1(struct kunit *test)
{
	struct mw_fixture *f = test->priv;
	struct vd_mr *mr = region(test, f->pd, BIND | LW);
	struct vd_mr *mr2 = region(test, f->pd, BIND | LW);
	struct vd_mr *mw = window(test, VD_STAG_MW1);
	u32 stag = with_key(mw->stag, 5), stag2 = with_key(mw->stag, 6);

	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, QPA, stag, mr->stag,
					 BASE, LEN, RRA), 0);
	KUNIT_EXPECT_EQ(test, check(test, stag, QPB, VD_RIGHT_REMOTE_READ,
				    BASE, LEN), VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, vd_tpt_invalidate_sync(&f->tpt, stag, f->pd, QPA,
						     false),
			VD_ACCESS_INVALIDATE);
	KUNIT_EXPECT_EQ(test, vd_tpt_invalidate_sync(&f->tpt, stag, f->pd, QPA,
						     true),
			VD_ACCESS_INVALIDATE);
	/* rebind onto another region: the first is free again */
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, 0, stag2, mr2->stag,
					 BASE, 10, RRA), 0);
	KUNIT_EXPECT_EQ(test, check(test, stag, QPB, VD_RIGHT_REMOTE_READ,
				    BASE, 1), VD_ACCESS_INVALID_STAG);
	KUNIT_EXPECT_EQ(test, check(test, stag2, QPB, VD_RIGHT_REMOTE_READ,
				    BASE, 10), VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, atomic_read(&mr->mw_bound), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&mr2->mw_bound), 1);
	/* unbind: nothing through it, the region is free */
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, 0, stag2, 0, 0, 0,
					 RRA), 0);
	KUNIT_EXPECT_EQ(test, check(test, stag2, QPB, VD_RIGHT_REMOTE_READ,
				    BASE, 1), VD_ACCESS_INVALID_STAG);
	KUNIT_EXPECT_EQ(test, check(test, mw->stag, QPB, VD_RIGHT_REMOTE_READ,
				    BASE, 1), VD_ACCESS_INVALID_STATE);
	KUNIT_EXPECT_EQ(test, atomic_read(&mr2->mw_bound), 0);
	/* unbinding an unbound window is no error; it needs no rights */
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, 0, stag2, 0, 0, 0,
					 0), 0);
	/* deallocation of a bound window ends its binding */
	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, 0, stag, mr->stag,
					 BASE, 1, RRA), 0);
	KUNIT_EXPECT_EQ(test, vd_mr_refuse_binds(mr), -EBUSY);
	vd_mr_deregister(mw);
	KUNIT_EXPECT_EQ(test, check(test, stag, QPB, VD_RIGHT_REMOTE_READ,
				    BASE, 1), VD_ACCESS_INVALID_STAG);
	KUNIT_EXPECT_EQ(test, vd_mr_refuse_binds(mr), 0);
	vd_mr_deregister(mr);
	KUNIT_EXPECT_EQ(test, vd_mr_refuse_binds(mr2), 0);
	vd_mr_deregister(mr2);
}

/* A reference to a binding outlives its window: the region stays. */
static void mw_test_ref_outlives(struct kunit *test)
{
	struct mw_fixture *f = test->priv;
	struct vd_mr *mr = region(test, f->pd, BIND | LW);
	struct vd_mr *mw = window(test, VD_STAG_MW1), *inst = NULL;
	u32 stag = with_key(mw->stag, 7);

	KUNIT_EXPECT_EQ(test, vd_mw_bind(&f->tpt, f->pd, 0, stag, mr->stag,
					 BASE, LEN, RRA), 0);
	KUNIT_ASSERT_EQ(test, vd_tpt_check(&f->tpt, stag, f->pd, 0,
					   VD_RIGHT_REMOTE_READ, BASE, 1,
					   &inst), VD_ACCESS_OK);
	vd_mr_deregister(mw);
	KUNIT_EXPECT_FALSE(test, vd_mr_use_begin(inst));
	KUNIT_EXPECT_EQ(test, vd_mr_refuse_binds(mr), 0);
	vd_mr_deregister(mr);
	/* the binding's reference keeps the region's pages */
	KUNIT_EXPECT_EQ(test, atomic_read(&f->tpt.nr_alive), 2);
	vd_mr_put(inst);
	/*
	 * The binding's release puts the region: the same run releases it,
	 * and leaves the work item neither queued nor running (else the
	 * table's teardown could free it under a run still to come).
	 */
	flush_work(&f->tpt.release_work);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->tpt.nr_alive), 0);
	KUNIT_EXPECT_EQ(test, work_busy(&f->tpt.release_work), 0U);
}

static struct kunit_case mw_test_cases[] = {
	KUNIT_CASE(mw_test_alloc),
	KUNIT_CASE(mw_test_rights),
	KUNIT_CASE(mw_test_region_refused),
	KUNIT_CASE(mw_test_bounds),
	KUNIT_CASE(mw_test_type2),
	KUNIT_CASE(mw_test_type1),
	KUNIT_CASE(mw_test_ref_outlives),
	{}
};

static struct kunit_suite mw_test_suite = {
	.name = "viaduct_mw",
	.init = mw_test_init,
	.exit = mw_test_exit,
	.test_cases = mw_test_cases,
};

kunit_test_suite(mw_test_suite);
