// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite viaduct_tpt: the access check, exhaustively, the region and
 * PD lifetime rules around it, the Terminate/CQE maps, and the address
 * arithmetic of pinned regions.
 *
 * Regions here are entered with vd_mr_insert() and no pages: the check only
 * looks at the table. Pinning real user memory is tested by the selftests.
 */
#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/gfp.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/sched.h>

#include "../mem.h"
#include "../pd.h"
#include "../tpt.h"

/* An unaligned region of 3 pages and 7 bytes, and its last byte. */
#define BASE	0x7f0000001123ULL
#define LEN	(3 * 4096ULL + 7)
#define LAST	(BASE + LEN - 1)
#define KEY	0x5a

#define RALL	(VD_RIGHT_LOCAL_READ | VD_RIGHT_LOCAL_WRITE | \
		 VD_RIGHT_REMOTE_READ | VD_RIGHT_REMOTE_WRITE)
#define AALL	(VIADUCT_ACCESS_LOCAL_WRITE | VIADUCT_ACCESS_REMOTE_WRITE | \
		 VIADUCT_ACCESS_REMOTE_READ)

#define MAX_TRACKED	16

struct tpt_fixture {
	struct vd_tpt tpt;
	struct vd_pd *pd;
	struct vd_pd *pd2;
	struct vd_mr *mrs[MAX_TRACKED];	/* deregistered at exit if left */
};

static int tpt_test_init(struct kunit *test)
{
	struct tpt_fixture *f;

	f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, f);
	vd_tpt_init(&f->tpt, 0);
	f->pd = vd_pd_create(NULL, NULL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, f->pd);
	f->pd2 = vd_pd_create(NULL, NULL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, f->pd2);
	KUNIT_EXPECT_NE(test, f->pd->pdn, f->pd2->pdn);
	test->priv = f;
	return 0;
}

static void tpt_test_exit(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	int i;

	for (i = 0; i < MAX_TRACKED; i++)
		if (f->mrs[i])
			vd_mr_deregister(f->mrs[i]);
	vd_pd_put(f->pd);
	vd_pd_put(f->pd2);
	vd_tpt_uninit(&f->tpt);
}

/* A VALID STag of @type (a type-2 window bound to QP @qpn). */
static struct vd_mr *reg_type(struct kunit *test, struct vd_pd *pd, u64 addr,
			      u64 len, u32 access, u8 key,
			      enum vd_stag_type type, u32 qpn)
{
	struct tpt_fixture *f = test->priv;
	struct vd_mr *mr;
	int i;

	mr = vd_stag_insert(&f->tpt, pd, NULL, addr, len, access, key, type,
			    qpn, true);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, mr);
	for (i = 0; i < MAX_TRACKED; i++) {
		if (!f->mrs[i]) {
			f->mrs[i] = mr;
			return mr;
		}
	}
	vd_mr_deregister(mr);
	KUNIT_ASSERT_TRUE_MSG(test, false, "too many regions");
	return NULL;
}

static struct vd_mr *reg(struct kunit *test, struct vd_pd *pd, u64 addr,
			 u64 len, u32 access, u8 key)
{
	return reg_type(test, pd, addr, len, access, key, VD_STAG_MR, 0);
}

/* A fast-register MR, registered: the STag type that invalidates. */
static struct vd_mr *reg_fr(struct kunit *test, struct vd_pd *pd, u64 addr,
			    u64 len, u32 access, u8 key)
{
	return reg_type(test, pd, addr, len, access, key, VD_STAG_FAST_REG,
			0);
}

static void dereg(struct kunit *test, struct vd_mr *mr)
{
	struct tpt_fixture *f = test->priv;
	int i;

	for (i = 0; i < MAX_TRACKED; i++)
		if (f->mrs[i] == mr)
			f->mrs[i] = NULL;
	vd_mr_deregister(mr);
}

/* Check through QP @qpn, and drop the reference an OK check returns. */
static enum vd_access_status check_qp(struct kunit *test, u32 stag,
				      const struct vd_pd *pd, u32 qpn,
				      u32 rights, u64 addr, u64 len)
{
	struct tpt_fixture *f = test->priv;
	enum vd_access_status st;
	struct vd_mr *mr = ERR_PTR(-EINVAL);

	st = vd_tpt_check(&f->tpt, stag, pd, qpn, rights, addr, len, &mr);
	if (st == VD_ACCESS_OK && len) {
		KUNIT_EXPECT_NOT_ERR_OR_NULL(test, mr);
		if (!IS_ERR_OR_NULL(mr)) {
			KUNIT_EXPECT_EQ(test, mr->stag, stag);
			vd_mr_put(mr);
		}
	} else {
		KUNIT_EXPECT_NULL(test, mr);
	}
	return st;
}

static enum vd_access_status check(struct kunit *test, u32 stag,
				   const struct vd_pd *pd, u32 rights,
				   u64 addr, u64 len)
{
	return check_qp(test, stag, pd, 0, rights, addr, len);
}

/*
 * Registration access bits -> rights granted, written out for every value
 * of the four defined bits (LW = 1, RW = 2, RR = 4, MW = 8); -1 is EINVAL
 * (remote write without local write).
 */
#define LR	VD_RIGHT_LOCAL_READ
#define LW	VD_RIGHT_LOCAL_WRITE
#define RR	VD_RIGHT_REMOTE_READ
#define RW	VD_RIGHT_REMOTE_WRITE
#define MW	VD_RIGHT_MW_BIND
static const int access_table[16] = {
	[0x0] = LR,
	[0x1] = LR | LW,
	[0x2] = -1,
	[0x3] = LR | LW | RW,
	[0x4] = LR | RR,
	[0x5] = LR | LW | RR,
	[0x6] = -1,
	[0x7] = LR | LW | RW | RR,
	[0x8] = LR | MW,
	[0x9] = LR | LW | MW,
	[0xa] = -1,
	[0xb] = LR | LW | RW | MW,
	[0xc] = LR | RR | MW,
	[0xd] = LR | LW | RR | MW,
	[0xe] = -1,
	[0xf] = LR | LW | RW | RR | MW,
};

static void tpt_test_access_rights(struct kunit *test)
{
	static const u32 bad[] = { 0x10, 0x11, 0x1f, 0x80, 0x80000000,
				   0xfffffff0, 0xffffffff };
	struct tpt_fixture *f = test->priv;
	struct vd_mr *mr;
	u32 a;
	int i;

	for (a = 0; a < 16; a++) {
		int want = access_table[a];

		KUNIT_EXPECT_EQ_MSG(test, vd_mr_access_rights(a),
				    want < 0 ? -EINVAL : want, "access %#x", a);
		mr = vd_mr_insert(&f->tpt, f->pd, NULL, BASE, LEN, a, KEY);
		if (want < 0) {
			KUNIT_EXPECT_EQ_MSG(test, PTR_ERR(mr), -EINVAL,
					    "access %#x", a);
			continue;
		}
		KUNIT_ASSERT_NOT_ERR_OR_NULL(test, mr);
		KUNIT_EXPECT_EQ(test, mr->rights, (u32)want);
		KUNIT_EXPECT_EQ(test, mr->access, a);
		vd_mr_deregister(mr);
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		KUNIT_EXPECT_EQ_MSG(test, vd_mr_access_rights(bad[i]), -EINVAL,
				    "access %#x", bad[i]);
		mr = vd_mr_insert(&f->tpt, f->pd, NULL, BASE, LEN, bad[i], KEY);
		KUNIT_EXPECT_EQ(test, PTR_ERR(mr), -EINVAL);
	}
	/* Refused registrations leave nothing behind. */
	KUNIT_EXPECT_EQ(test, atomic_read(&f->pd->users), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->tpt.nr_mrs), 0);
	KUNIT_EXPECT_TRUE(test, xa_empty(&f->tpt.mrs));
}

/* Every granted set against every needed set, including invalid ones. */
static void tpt_test_rights_matrix(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	struct vd_mr *mr;
	u32 a, need;

	for (a = 0; a < 16; a++) {
		u32 granted = access_table[a];

		if (access_table[a] < 0)
			continue;
		mr = reg(test, f->pd, BASE, LEN, a, KEY);
		for (need = 0; need <= 2 * VD_RIGHT_ALL + 1; need++) {
			enum vd_access_status want = VD_ACCESS_RIGHTS;

			if (need && !(need & ~granted))
				want = VD_ACCESS_OK;
			KUNIT_EXPECT_EQ_MSG(test,
					    check(test, mr->stag, f->pd, need,
						  BASE, LEN),
					    want, "access %#x need %#x", a, need);
		}
		KUNIT_EXPECT_EQ(test, check(test, mr->stag, f->pd, 0x80000000,
					    BASE, 1), VD_ACCESS_RIGHTS);
		dereg(test, mr);
	}
}

struct bounds_case {
	u64 addr;
	u64 len;
	enum vd_access_status want;
};

static const struct bounds_case bounds_cases[] = {
	{ BASE, 1, VD_ACCESS_OK },		/* first byte */
	{ BASE, LEN, VD_ACCESS_OK },		/* all of it */
	{ LAST, 1, VD_ACCESS_OK },		/* last byte */
	{ BASE + 4096, 4096, VD_ACCESS_OK },	/* a middle page */
	{ BASE + 5, LEN - 5, VD_ACCESS_OK },	/* exactly the rest */
	{ BASE + 5, LEN - 4, VD_ACCESS_BOUNDS },	/* one more */
	{ BASE, LEN + 1, VD_ACCESS_BOUNDS },
	{ LAST, 2, VD_ACCESS_BOUNDS },
	{ LAST + 1, 1, VD_ACCESS_BOUNDS },	/* one past */
	{ LAST + 1, LEN, VD_ACCESS_BOUNDS },
	{ BASE - 1, 1, VD_ACCESS_BOUNDS },	/* below the base */
	{ BASE - 1, 2, VD_ACCESS_BOUNDS },
	{ BASE - 1, LEN + 1, VD_ACCESS_BOUNDS },
	{ BASE - LEN, LEN, VD_ACCESS_BOUNDS },
	{ 0, 1, VD_ACCESS_BOUNDS },
	{ 0, BASE + 1, VD_ACCESS_BOUNDS },
	{ 0, U64_MAX, VD_ACCESS_BOUNDS },	/* last byte is 2^64 - 2 */
	{ BASE + 1, U64_MAX - BASE, VD_ACCESS_BOUNDS },	/* ends at 2^64 - 1 */
	{ U64_MAX, 1, VD_ACCESS_BOUNDS },	/* the very last byte */
	{ BASE + LEN / 2, U64_MAX / 2, VD_ACCESS_BOUNDS },
	/* addr + len - 1 beyond 2^64 - 1 */
	{ BASE + 1, U64_MAX - BASE + 1, VD_ACCESS_WRAP },
	{ BASE, U64_MAX, VD_ACCESS_WRAP },
	{ LAST, U64_MAX, VD_ACCESS_WRAP },
	{ U64_MAX, 2, VD_ACCESS_WRAP },
	{ U64_MAX, U64_MAX, VD_ACCESS_WRAP },
	{ BASE - 1, U64_MAX, VD_ACCESS_WRAP },	/* wrap wins over bounds */
	/* zero length is never checked */
	{ BASE, 0, VD_ACCESS_OK },
	{ LAST + 1, 0, VD_ACCESS_OK },
	{ 0, 0, VD_ACCESS_OK },
	{ U64_MAX, 0, VD_ACCESS_OK },
};

static void tpt_test_bounds(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	struct vd_mr *mr = reg(test, f->pd, BASE, LEN, AALL, KEY);
	int i;

	for (i = 0; i < ARRAY_SIZE(bounds_cases); i++) {
		const struct bounds_case *c = &bounds_cases[i];

		KUNIT_EXPECT_EQ_MSG(test,
				    check(test, mr->stag, f->pd, RALL, c->addr,
					  c->len),
				    c->want, "case %d: addr %#llx len %#llx", i,
				    c->addr, c->len);
	}
}

/* A region whose last byte is the last byte of the 64-bit space. */
static void tpt_test_bounds_top(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	u64 base = U64_MAX - 99;
	struct vd_mr *mr = reg(test, f->pd, base, 100, 0, KEY);
	u32 s = mr->stag;
	u32 r = VD_RIGHT_LOCAL_READ;

	KUNIT_EXPECT_EQ(test, check(test, s, f->pd, r, base, 100), VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd, r, U64_MAX, 1), VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd, r, base + 50, 50),
			VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd, r, base + 50, 51),
			VD_ACCESS_WRAP);
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd, r, U64_MAX, 2),
			VD_ACCESS_WRAP);
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd, r, base, 101),
			VD_ACCESS_WRAP);
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd, r, base - 1, 1),
			VD_ACCESS_BOUNDS);
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd, r, base - 1, 100),
			VD_ACCESS_BOUNDS);
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd, r, 0, 1),
			VD_ACCESS_BOUNDS);
}

static void tpt_test_insert_args(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	struct vd_mr *mr;

	mr = vd_mr_insert(&f->tpt, f->pd, NULL, BASE, 0, 0, KEY);
	KUNIT_EXPECT_EQ(test, PTR_ERR(mr), -EINVAL);
	mr = vd_mr_insert(&f->tpt, f->pd, NULL, U64_MAX, 2, 0, KEY);
	KUNIT_EXPECT_EQ(test, PTR_ERR(mr), -EINVAL);
	mr = vd_mr_insert(&f->tpt, f->pd, NULL, 2, U64_MAX, 0, KEY);
	KUNIT_EXPECT_EQ(test, PTR_ERR(mr), -EINVAL);
	/* Ending exactly at 2^64 is fine, and so is starting at 0. */
	mr = reg(test, f->pd, 0, U64_MAX, 0, KEY);
	KUNIT_EXPECT_EQ(test, check(test, mr->stag, f->pd, LR, 0, U64_MAX),
			VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, mr->stag, f->pd, LR, 1, U64_MAX),
			VD_ACCESS_BOUNDS);
	KUNIT_EXPECT_EQ(test, check(test, mr->stag, f->pd, LR, 2, U64_MAX),
			VD_ACCESS_WRAP);
	mr = reg(test, f->pd, 1, U64_MAX, 0, KEY);
	KUNIT_EXPECT_EQ(test, check(test, mr->stag, f->pd, LR, U64_MAX, 1),
			VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, mr->stag, f->pd, LR, 0, 1),
			VD_ACCESS_BOUNDS);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->pd->users), 2);
}

/* Zero-length accesses are not validated: not the STag, PD, rights. */
static void tpt_test_zero_length(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	struct vd_mr *mr = reg_fr(test, f->pd, BASE, LEN, 0, KEY);
	static const u32 stags[] = { 0, 0xff, 0x100, 0xdeadbeef, 0xffffffff };
	struct vd_mr *got;
	int i;

	for (i = 0; i < ARRAY_SIZE(stags); i++) {
		got = ERR_PTR(-EINVAL);
		KUNIT_EXPECT_EQ(test,
				vd_tpt_check(&f->tpt, stags[i], NULL, 0, 0,
					     U64_MAX, 0, &got),
				VD_ACCESS_OK);
		KUNIT_EXPECT_NULL(test, got);
	}
	/* Even a valid STag yields no region for a zero-length access. */
	got = ERR_PTR(-EINVAL);
	KUNIT_EXPECT_EQ(test, vd_tpt_check(&f->tpt, mr->stag, f->pd2, 0,
					   RALL, BASE - 1, 0, &got), VD_ACCESS_OK);
	KUNIT_EXPECT_NULL(test, got);
	KUNIT_EXPECT_EQ(test, vd_tpt_invalidate(&f->tpt, mr->stag, f->pd, 0,
						false), VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, mr->stag, f->pd, LR, BASE, 0),
			VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, vd_tpt_check(&f->tpt, 0, NULL, 0, 0, 0, 0, NULL),
			VD_ACCESS_OK);
}

static void tpt_test_keys(struct kunit *test)
{
	static const u8 keys[] = { 0x00, 0x01, 0x5a, 0x80, 0xa5, 0xfe, 0xff };
	struct tpt_fixture *f = test->priv;
	struct vd_mr *mr;
	int i, j;

	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		mr = reg(test, f->pd, BASE, LEN, 0, keys[i]);
		KUNIT_EXPECT_EQ(test, vd_stag_key(mr->stag), keys[i]);
		KUNIT_EXPECT_NE(test, vd_stag_index(mr->stag), 0U);
		for (j = 0; j < ARRAY_SIZE(keys); j++) {
			u32 s = vd_stag_make(vd_stag_index(mr->stag), keys[j]);

			KUNIT_EXPECT_EQ_MSG(test,
					    check(test, s, f->pd, LR, BASE, 1),
					    i == j ? VD_ACCESS_OK :
						     VD_ACCESS_INVALID_STAG,
					    "key %#x, tried %#x", keys[i],
					    keys[j]);
		}
		/* One flipped bit of the key, or of the index, misses. */
		for (j = 0; j < 32; j++)
			KUNIT_EXPECT_EQ_MSG(test,
					    check(test, mr->stag ^ BIT(j),
						  f->pd, LR, BASE, 1),
					    VD_ACCESS_INVALID_STAG, "bit %d", j);
		dereg(test, mr);
	}
}

static void tpt_test_unknown_stags(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	struct vd_mr *mr = reg(test, f->pd, BASE, LEN, AALL, KEY);
	u32 index = vd_stag_index(mr->stag);
	static const u32 stags[] = { 0, KEY, 0xff, 0x00000001 };
	int i;

	/* STag 0 and every key with index 0: index 0 is never handed out. */
	for (i = 0; i < ARRAY_SIZE(stags); i++)
		KUNIT_EXPECT_EQ_MSG(test, check(test, stags[i], f->pd, LR,
						BASE, 1),
				    VD_ACCESS_INVALID_STAG, "stag %#x",
				    stags[i]);
	/* Indices never allocated. */
	KUNIT_EXPECT_EQ(test, check(test, vd_stag_make(index + 1, KEY), f->pd,
				    LR, BASE, 1), VD_ACCESS_INVALID_STAG);
	KUNIT_EXPECT_EQ(test, check(test, vd_stag_make(index + 1000, KEY),
				    f->pd, LR, BASE, 1),
			VD_ACCESS_INVALID_STAG);
	KUNIT_EXPECT_EQ(test, check(test, vd_stag_make(VD_STAG_INDEX_MAX, KEY),
				    f->pd, LR, BASE, 1),
			VD_ACCESS_INVALID_STAG);
	KUNIT_EXPECT_EQ(test, check(test, 0xffffffff, f->pd, LR, BASE, 1),
			VD_ACCESS_INVALID_STAG);
	KUNIT_EXPECT_EQ(test, check(test, mr->stag, f->pd, LR, BASE, 1),
			VD_ACCESS_OK);
}

static void tpt_test_wrong_pd(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	struct vd_mr *mr = reg(test, f->pd, BASE, LEN, AALL, KEY);
	struct vd_mr *mr2 = reg(test, f->pd2, BASE, LEN, AALL, KEY);

	KUNIT_EXPECT_EQ(test, check(test, mr->stag, f->pd2, LR, BASE, 1),
			VD_ACCESS_PD_MISMATCH);
	KUNIT_EXPECT_EQ(test, check(test, mr->stag, NULL, LR, BASE, 1),
			VD_ACCESS_PD_MISMATCH);
	KUNIT_EXPECT_EQ(test, check(test, mr2->stag, f->pd, LR, BASE, 1),
			VD_ACCESS_PD_MISMATCH);
	KUNIT_EXPECT_EQ(test, check(test, mr2->stag, f->pd2, LR, BASE, 1),
			VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, mr->stag, f->pd, LR, BASE, 1),
			VD_ACCESS_OK);
}

static enum vd_access_status inv(struct kunit *test, u32 stag,
				 const struct vd_pd *pd, u32 qpn, bool remote)
{
	struct tpt_fixture *f = test->priv;

	return vd_tpt_invalidate(&f->tpt, stag, pd, qpn, remote);
}

static void tpt_test_invalidate(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	struct vd_mr *mr = reg_fr(test, f->pd, BASE, LEN, AALL, KEY);
	struct vd_mr *other = reg_fr(test, f->pd, BASE, LEN, AALL, KEY);
	u32 s = mr->stag;

	KUNIT_EXPECT_EQ(test, inv(test, s ^ 1, f->pd, 0, false),
			VD_ACCESS_INVALID_STAG);
	KUNIT_EXPECT_EQ(test, inv(test, 0, f->pd, 0, false),
			VD_ACCESS_INVALID_STAG);
	KUNIT_EXPECT_EQ(test, inv(test, s, f->pd2, 0, false),
			VD_ACCESS_PD_MISMATCH);
	KUNIT_EXPECT_EQ(test, inv(test, s, f->pd2, 0, true),
			VD_ACCESS_PD_MISMATCH);
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd, LR, BASE, 1), VD_ACCESS_OK);

	KUNIT_EXPECT_EQ(test, inv(test, s, f->pd, 0, false), VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd, LR, BASE, 1),
			VD_ACCESS_INVALID_STATE);
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd, RALL, BASE, LEN),
			VD_ACCESS_INVALID_STATE);
	/* Idempotent; the other region is untouched. */
	KUNIT_EXPECT_EQ(test, inv(test, s, f->pd, 0, false), VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, inv(test, s, f->pd, 0, true), VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd, LR, BASE, 1),
			VD_ACCESS_INVALID_STATE);
	KUNIT_EXPECT_EQ(test, check(test, other->stag, f->pd, LR, BASE, 1),
			VD_ACCESS_OK);
	/* A remote invalidation does the same. */
	KUNIT_EXPECT_EQ(test, inv(test, other->stag, f->pd, 7, true),
			VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, other->stag, f->pd, LR, BASE, 1),
			VD_ACCESS_INVALID_STATE);
}

/* When several steps would fail, the first in the documented order wins. */
static void tpt_test_order(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	struct vd_mr *mr = reg(test, f->pd, BASE, LEN, 0, KEY);
	struct vd_mr *bad = reg_fr(test, f->pd, BASE, LEN, 0, KEY);
	u32 s = mr->stag;
	u32 w = VD_RIGHT_REMOTE_WRITE;

	/* wrong key beats invalid state, PD, rights and bounds */
	KUNIT_EXPECT_EQ(test, inv(test, bad->stag, f->pd, 0, false),
			VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, bad->stag ^ 0x80, f->pd2, w, 0,
				    U64_MAX), VD_ACCESS_INVALID_STAG);
	/* invalid state beats PD, rights, wrap and bounds */
	KUNIT_EXPECT_EQ(test, check(test, bad->stag, f->pd2, w, U64_MAX, 2),
			VD_ACCESS_INVALID_STATE);
	/* PD beats rights, wrap and bounds */
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd2, w, U64_MAX, 2),
			VD_ACCESS_PD_MISMATCH);
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd2, w, 0, 1),
			VD_ACCESS_PD_MISMATCH);
	/* rights beat wrap and bounds */
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd, w, U64_MAX, 2),
			VD_ACCESS_RIGHTS);
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd, w, 0, 1),
			VD_ACCESS_RIGHTS);
	/* wrap beats bounds */
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd, LR, U64_MAX, 2),
			VD_ACCESS_WRAP);
	KUNIT_EXPECT_EQ(test, check(test, s, f->pd, LR, 0, 1),
			VD_ACCESS_BOUNDS);
	/* and zero length beats everything */
	KUNIT_EXPECT_EQ(test, check(test, bad->stag ^ 0x80, f->pd2, w, 0, 0),
			VD_ACCESS_OK);
}

/* A stale STag fails, also when its index is handed out again. */
static void tpt_test_stale_stag(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	struct vd_mr *mr = reg(test, f->pd, BASE, LEN, AALL, 0x11);
	u32 old = mr->stag;
	u32 index = vd_stag_index(old);

	dereg(test, mr);
	KUNIT_EXPECT_EQ(test, check(test, old, f->pd, LR, BASE, 1),
			VD_ACCESS_INVALID_STAG);
	KUNIT_EXPECT_EQ(test, inv(test, old, f->pd, 0, false),
			VD_ACCESS_INVALID_STAG);

	/* Allocation is cyclic: the next region gets another index. */
	mr = reg(test, f->pd, BASE, LEN, AALL, 0x11);
	KUNIT_EXPECT_NE(test, vd_stag_index(mr->stag), index);
	KUNIT_EXPECT_EQ(test, check(test, old, f->pd, LR, BASE, 1),
			VD_ACCESS_INVALID_STAG);
	dereg(test, mr);

	/* Force the old index to be reused, with another key. */
	f->tpt.next = index;
	mr = reg(test, f->pd2, BASE + 1, LEN, AALL, 0x22);
	KUNIT_ASSERT_EQ(test, vd_stag_index(mr->stag), index);
	KUNIT_EXPECT_EQ(test, check(test, old, f->pd, LR, BASE + 1, 1),
			VD_ACCESS_INVALID_STAG);
	KUNIT_EXPECT_EQ(test, check(test, old, f->pd2, LR, BASE + 1, 1),
			VD_ACCESS_INVALID_STAG);
	KUNIT_EXPECT_EQ(test, check(test, mr->stag, f->pd2, LR, BASE + 1, 1),
			VD_ACCESS_OK);
}

/* The index space wraps to 1, never to 0. */
static void tpt_test_index_wrap(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	struct vd_mr *a, *b;

	f->tpt.next = VD_STAG_INDEX_MAX;
	a = reg(test, f->pd, BASE, LEN, 0, KEY);
	b = reg(test, f->pd, BASE, LEN, 0, KEY);
	KUNIT_EXPECT_EQ(test, vd_stag_index(a->stag), VD_STAG_INDEX_MAX);
	KUNIT_EXPECT_EQ(test, vd_stag_index(b->stag), 1U);
	KUNIT_EXPECT_EQ(test, a->stag, 0xffffff00U | KEY);
	KUNIT_EXPECT_EQ(test, check(test, a->stag, f->pd, LR, BASE, 1),
			VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, b->stag, f->pd, LR, BASE, 1),
			VD_ACCESS_OK);
}

/* A reference from the check keeps the region, not its STag, alive. */
static void tpt_test_ref_outlives_dereg(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	struct vd_pd *pd = vd_pd_create(NULL, NULL);
	struct vd_mr *mr, *held = NULL;
	u32 s;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, pd);
	mr = vd_mr_insert(&f->tpt, pd, NULL, BASE, LEN, AALL, KEY);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, mr);
	s = mr->stag;
	KUNIT_EXPECT_EQ(test, vd_pd_try_destroy(pd), -EBUSY);

	KUNIT_ASSERT_EQ(test, vd_tpt_check(&f->tpt, s, pd, 0, LW, BASE, 8,
					   &held),
			VD_ACCESS_OK);
	KUNIT_ASSERT_PTR_EQ(test, held, mr);
	KUNIT_EXPECT_EQ(test, kref_read(&mr->ref), 2U);

	vd_mr_deregister(mr);
	KUNIT_EXPECT_EQ(test, check(test, s, pd, LW, BASE, 8),
			VD_ACCESS_INVALID_STAG);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->tpt.nr_alive), 1);
	/* The PD is free to go although the region still points to it. */
	KUNIT_EXPECT_EQ(test, vd_pd_try_destroy(pd), 0);
	KUNIT_EXPECT_EQ(test, vd_pd_attach(pd), -ENOENT);
	vd_pd_put(pd);
	KUNIT_EXPECT_PTR_EQ(test, held->pd, pd);
	KUNIT_EXPECT_EQ(test, held->length, LEN);

	/* The last put defers the release to the table's work item. */
	vd_mr_put(held);
	flush_work(&f->tpt.release_work);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->tpt.nr_alive), 0);
}

/* Without @mrp the check takes no reference. */
static void tpt_test_check_without_ref(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	struct vd_mr *mr = vd_mr_insert(&f->tpt, f->pd, NULL, BASE, LEN, 0,
					KEY);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, mr);
	KUNIT_EXPECT_EQ(test, vd_tpt_check(&f->tpt, mr->stag, f->pd, 0, LR,
					   BASE, LEN, NULL), VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, kref_read(&mr->ref), 1U);
	vd_mr_deregister(mr);
	/* Released synchronously: nobody else held it. */
	KUNIT_EXPECT_EQ(test, atomic_read(&f->tpt.nr_alive), 0);
}

static void tpt_test_pd_users(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	struct vd_pd *pd = vd_pd_create(NULL, NULL);
	struct vd_mr *a, *b;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, pd);
	a = vd_mr_insert(&f->tpt, pd, NULL, BASE, LEN, 0, KEY);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, a);
	b = vd_mr_insert(&f->tpt, pd, NULL, BASE, LEN, 0, KEY);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, b);
	KUNIT_EXPECT_EQ(test, atomic_read(&pd->users), 2);
	KUNIT_EXPECT_EQ(test, vd_pd_try_destroy(pd), -EBUSY);
	vd_mr_deregister(a);
	KUNIT_EXPECT_EQ(test, vd_pd_try_destroy(pd), -EBUSY);
	/* A QP attaching counts too. */
	KUNIT_EXPECT_EQ(test, vd_pd_attach(pd), 0);
	vd_mr_deregister(b);
	KUNIT_EXPECT_EQ(test, vd_pd_try_destroy(pd), -EBUSY);
	vd_pd_detach(pd);
	KUNIT_EXPECT_EQ(test, vd_pd_try_destroy(pd), 0);
	KUNIT_EXPECT_EQ(test, vd_pd_try_destroy(pd), -ENOENT);
	/* A destroyed PD takes no new regions. */
	a = vd_mr_insert(&f->tpt, pd, NULL, BASE, LEN, 0, KEY);
	KUNIT_EXPECT_EQ(test, PTR_ERR(a), -ENOENT);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->tpt.nr_mrs), 0);
	vd_pd_put(pd);
}

static void tpt_test_max_mr(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	struct vd_tpt *tpt = &f->tpt;
	struct vd_mr *a, *b, *c;

	tpt->max_mr = 2;
	a = reg(test, f->pd, BASE, LEN, 0, KEY);
	b = reg(test, f->pd, BASE, LEN, 0, KEY);
	c = vd_mr_insert(tpt, f->pd, NULL, BASE, LEN, 0, KEY);
	KUNIT_EXPECT_EQ(test, PTR_ERR(c), -ENOMEM);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->pd->users), 2);
	dereg(test, a);
	c = reg(test, f->pd, BASE, LEN, 0, KEY);
	KUNIT_EXPECT_EQ(test, check(test, c->stag, f->pd, LR, BASE, 1),
			VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, b->stag, f->pd, LR, BASE, 1),
			VD_ACCESS_OK);
}

static void tpt_test_status_maps(struct kunit *test)
{
	static const struct {
		enum vd_access_status st;
		u16 rdmap, ddp;
	} map[] = {
		{ VD_ACCESS_OK,			0,	0 },
		{ VD_ACCESS_INVALID_STAG,	0x0100,	0x1100 },
		{ VD_ACCESS_INVALID_STATE,	0x0100,	0x1100 },
		{ VD_ACCESS_BOUNDS,		0x0101,	0x1101 },
		{ VD_ACCESS_RIGHTS,		0x0102,	0x1102 },
		{ VD_ACCESS_PD_MISMATCH,	0x0103,	0x1102 },
		{ VD_ACCESS_WRAP,		0x0104,	0x1103 },
		{ VD_ACCESS_QP_MISMATCH,	0x0103,	0x1102 },
		{ VD_ACCESS_INVALIDATE,		0x0109,	0x1100 },
	};
	/* RFC 5040 7.4: "cannot be invalidated", protection or operation */
	static const struct {
		enum vd_access_status st;
		u16 term;
	} inv_map[] = {
		{ VD_ACCESS_OK,			0 },
		{ VD_ACCESS_INVALID_STAG,	0x0209 },
		{ VD_ACCESS_PD_MISMATCH,	0x0109 },
		{ VD_ACCESS_INVALIDATE,		0x0109 },
		{ VD_ACCESS_QP_MISMATCH,	0x0109 },
	};
	int i;

	KUNIT_EXPECT_EQ(test, ARRAY_SIZE(map), (size_t)VD_ACCESS_NR);
	for (i = 0; i < ARRAY_SIZE(map); i++) {
		bool ok = map[i].st == VD_ACCESS_OK;

		KUNIT_EXPECT_EQ_MSG(test, vd_access_term_rdmap(map[i].st),
				    map[i].rdmap, "status %d", map[i].st);
		KUNIT_EXPECT_EQ_MSG(test, vd_access_term_ddp(map[i].st),
				    map[i].ddp, "status %d", map[i].st);
		KUNIT_EXPECT_EQ(test, vd_access_wc_status(map[i].st, false),
				ok ? VIADUCT_WC_SUCCESS :
				     VIADUCT_WC_LOC_PROT_ERR);
		KUNIT_EXPECT_EQ(test, vd_access_wc_status(map[i].st, true),
				ok ? VIADUCT_WC_SUCCESS :
				     VIADUCT_WC_REM_ACCESS_ERR);
	}
	for (i = 0; i < ARRAY_SIZE(inv_map); i++)
		KUNIT_EXPECT_EQ_MSG(test,
				    vd_access_term_invalidate(inv_map[i].st),
				    inv_map[i].term, "status %d", inv_map[i].st);
}

/*
 * Lookups on one CPU while another CPU registers and deregisters: a lookup
 * sees the region whole or not at all, and a region it holds stays usable
 * after deregistration. Run with KASAN to catch a use after free.
 */
struct race {
	struct tpt_fixture *f;
	u32 stag;		/* the newest STag, READ_ONCE/WRITE_ONCE */
	unsigned long ok, gone, bad;
	int bad_status;
};

static int race_reader(void *arg)
{
	struct race *r = arg;
	struct vd_tpt *tpt = &r->f->tpt;
	enum vd_access_status st;
	struct vd_mr *mr;
	u32 stag;

	while (!kthread_should_stop()) {
		stag = READ_ONCE(r->stag);
		st = vd_tpt_check(tpt, stag, r->f->pd, 0, LW, BASE + 8, 8,
				  &mr);
		if (st == VD_ACCESS_OK) {
			if (mr->stag != stag || mr->length != LEN ||
			    mr->pd != r->f->pd)
				r->bad++;
			else
				r->ok++;
			vd_mr_put(mr);
		} else if (st == VD_ACCESS_INVALID_STAG) {
			r->gone++;
		} else {
			r->bad_status = st;
			r->bad++;
		}
		cond_resched();
	}
	return 0;
}

static void tpt_test_rcu_race(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	unsigned long end = jiffies + msecs_to_jiffies(500);
	struct race r = { .f = f };
	struct task_struct *t;
	struct vd_mr *mr = NULL;
	int i;

	t = kthread_run(race_reader, &r, "vd_tpt_race");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	/* Bounded in time as well, for slow (emulated, debug) kernels. */
	for (i = 0; i < 5000 && time_before(jiffies, end); i++) {
		mr = vd_mr_insert(&f->tpt, f->pd, NULL, BASE, LEN,
				  VIADUCT_ACCESS_LOCAL_WRITE, i);
		if (IS_ERR(mr))
			break;
		WRITE_ONCE(r.stag, mr->stag);
		if (i % 16 == 0)
			usleep_range(10, 20);
		vd_mr_deregister(mr);
		cond_resched();
	}
	kthread_stop(t);
	KUNIT_EXPECT_FALSE(test, IS_ERR(mr));
	KUNIT_EXPECT_GT(test, i, 100);
	KUNIT_EXPECT_EQ_MSG(test, r.bad, 0UL, "last bad status %d", r.bad_status);
	KUNIT_EXPECT_GT(test, r.ok + r.gone, 0UL);
	kunit_info(test, "%d registrations, lookups: %lu found, %lu gone\n", i,
		   r.ok, r.gone);
	flush_work(&f->tpt.release_work);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->tpt.nr_alive), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->pd->users), 0);
}

/* Page arithmetic of pinned regions, as pure functions (4 KiB pages). */
static void tpt_test_umem_arith(struct kunit *test)
{
	static const struct {
		unsigned long addr;
		u64 len;
		unsigned long npages;
	} np[] = {
		{ 0x1000, 1, 1 },
		{ 0x1000, 0x1000, 1 },
		{ 0x1000, 0x1001, 2 },
		{ 0x1fff, 1, 1 },
		{ 0x1fff, 2, 2 },
		{ 0x1001, 0x1000, 2 },
		{ 0x1001, 0xfff, 1 },
		{ 0x1123, 3 * 4096 + 7, 4 },
		{ 0x1fff, 2 * 4096 + 2, 4 },
		{ 0x10000000, 256ULL << 20, 65536 },
		{ 0x10000001, 256ULL << 20, 65537 },
	};
	static const struct {
		unsigned int first;
		u64 off;
		unsigned long index;
		unsigned int page_off;
	} pg[] = {
		{ 0, 0, 0, 0 },
		{ 0, 4095, 0, 4095 },
		{ 0, 4096, 1, 0 },
		{ 0x123, 0, 0, 0x123 },
		{ 0x123, 4096 - 0x123 - 1, 0, 4095 },
		{ 0x123, 4096 - 0x123, 1, 0 },
		{ 0x123, 2 * 4096, 2, 0x123 },
		{ 4095, 0, 0, 4095 },
		{ 4095, 1, 1, 0 },
		{ 4095, 4096, 1, 4095 },
		{ 1, (256ULL << 20) - 2, 65535, 4095 },
		{ 1, (256ULL << 20) - 1, 65536, 0 },
	};
	int i;

	if (PAGE_SIZE != 4096)
		kunit_skip(test, "tables assume 4 KiB pages");
	for (i = 0; i < ARRAY_SIZE(np); i++)
		KUNIT_EXPECT_EQ_MSG(test, vd_umem_num_pages(np[i].addr,
							    np[i].len),
				    np[i].npages, "case %d", i);
	for (i = 0; i < ARRAY_SIZE(pg); i++) {
		KUNIT_EXPECT_EQ_MSG(test, vd_umem_page_index(pg[i].first,
							     pg[i].off),
				    pg[i].index, "case %d", i);
		KUNIT_EXPECT_EQ_MSG(test, vd_umem_page_offset(pg[i].first,
							      pg[i].off),
				    pg[i].page_off, "case %d", i);
	}
	KUNIT_EXPECT_LE(test, vd_umem_num_pages(PAGE_SIZE - 1, VD_MR_MAX_SIZE),
			VD_UMEM_MAX_PAGES);
}

/* Copies across page boundaries, on a umem of kernel pages. */
static void tpt_test_umem_copy(struct kunit *test)
{
	const unsigned int npages = 3, first = PAGE_SIZE - 6;
	struct vd_umem umem = {
		.first_offset = first,
		.length = npages * PAGE_SIZE - first - 5,
		.npages = npages,
		.writable = true,
	};
	struct page *pages[3] = {};
	u8 *src, *dst, *p;
	unsigned int off;
	size_t i;

	src = kunit_kmalloc(test, umem.length, GFP_KERNEL);
	dst = kunit_kzalloc(test, umem.length, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, src);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, dst);
	for (i = 0; i < npages; i++) {
		pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!pages[i])
			goto out;
	}
	umem.pages = pages;
	for (i = 0; i < umem.length; i++)
		src[i] = i * 7 + 1;

	KUNIT_EXPECT_PTR_EQ(test, vd_umem_page(&umem, 0, &off), pages[0]);
	KUNIT_EXPECT_EQ(test, off, first);
	KUNIT_EXPECT_PTR_EQ(test, vd_umem_page(&umem, 6, &off), pages[1]);
	KUNIT_EXPECT_EQ(test, off, 0U);
	KUNIT_EXPECT_PTR_EQ(test, vd_umem_page(&umem, umem.length - 1, &off),
			    pages[2]);
	KUNIT_EXPECT_EQ(test, off, (unsigned int)PAGE_SIZE - 6);

	/* Crossing both page boundaries in one copy, then the rest. */
	KUNIT_EXPECT_EQ(test, vd_umem_copy_to(&umem, 3, src + 3,
					      umem.length - 3), 0);
	KUNIT_EXPECT_EQ(test, vd_umem_copy_to(&umem, 0, src, 3), 0);
	p = page_address(pages[0]);
	KUNIT_EXPECT_EQ(test, p[first], src[0]);
	KUNIT_EXPECT_EQ(test, p[PAGE_SIZE - 1], src[5]);
	KUNIT_EXPECT_EQ(test, p[first - 1], 0);
	p = page_address(pages[1]);
	KUNIT_EXPECT_EQ(test, p[0], src[6]);
	p = page_address(pages[2]);
	KUNIT_EXPECT_EQ(test, p[0], src[6 + PAGE_SIZE]);
	KUNIT_EXPECT_EQ(test, p[PAGE_SIZE - 6], src[umem.length - 1]);
	KUNIT_EXPECT_EQ(test, p[PAGE_SIZE - 5], 0);

	KUNIT_EXPECT_EQ(test, vd_umem_copy_from(&umem, 0, dst, umem.length), 0);
	KUNIT_EXPECT_EQ(test, memcmp(src, dst, umem.length), 0);
	memset(dst, 0, umem.length);
	KUNIT_EXPECT_EQ(test, vd_umem_copy_from(&umem, 5, dst, PAGE_SIZE + 10),
			0);
	KUNIT_EXPECT_EQ(test, memcmp(src + 5, dst, PAGE_SIZE + 10), 0);
	/* Zero bytes at the very end are in range. */
	KUNIT_EXPECT_EQ(test, vd_umem_copy_from(&umem, umem.length, dst, 0), 0);
out:
	for (i = 0; i < npages; i++)
		if (pages[i])
			__free_page(pages[i]);
	KUNIT_EXPECT_NOT_NULL(test, pages[npages - 1]);
}

/*
 * STag types. What each type grants of the registration's rights (a
 * window only remote ones), written out per type.
 */
#define QPA	11	/* the QP a type-2 window is bound to */
#define QPB	12	/* another QP of the same PD */

static const u32 type_mask[VD_STAG_TYPE_NR] = {
	[VD_STAG_MR]		= LR | LW | RR | RW | MW,
	[VD_STAG_FAST_REG]	= LR | LW | RR | RW | MW,
	[VD_STAG_MW1]		= RR | RW,
	[VD_STAG_MW2]		= RR | RW,
};

/* What the check answers: the rules of tpt.h, restated for the tables. */
static enum vd_access_status type_want(u32 t, bool valid, u32 qpn,
				       u32 granted, u32 need)
{
	if (!valid)
		return VD_ACCESS_INVALID_STATE;
	if (t == VD_STAG_MW2 && qpn != QPA)
		return VD_ACCESS_QP_MISMATCH;
	if (need && !(need & ~granted))
		return VD_ACCESS_OK;
	return VD_ACCESS_RIGHTS;
}

/* One STag of type @t, access @a: every accessing QP and needed right. */
static void type_matrix_one(struct kunit *test, u32 t, u32 a, bool valid)
{
	static const u32 qps[] = { 0, QPA, QPB };
	struct tpt_fixture *f = test->priv;
	u32 granted = access_table[a] & type_mask[t];
	enum vd_access_status want;
	struct vd_mr *mr;
	u32 need, q;

	mr = reg_type(test, f->pd, BASE, LEN, a, KEY, t,
		      t == VD_STAG_MW2 ? QPA : 0);
	KUNIT_EXPECT_EQ(test, mr->rights, granted);
	KUNIT_EXPECT_EQ(test, mr->type, t);
	if (!valid)
		WRITE_ONCE(mr->state, VD_MR_INVALID);
	for (q = 0; q < ARRAY_SIZE(qps); q++) {
		for (need = 0; need <= VD_RIGHT_ALL; need++) {
			want = type_want(t, valid, qps[q], granted, need);
			KUNIT_EXPECT_EQ_MSG(test,
					    check_qp(test, mr->stag, f->pd,
						     qps[q], need, BASE, LEN),
					    want,
					    "type %u access %#x valid %d qp %u need %#x",
					    t, a, valid, qps[q], need);
		}
	}
	/* bounds hold for every type; the PD beats the window's QP */
	want = type_want(t, valid, QPA, granted, RR);
	KUNIT_EXPECT_EQ(test, check_qp(test, mr->stag, f->pd, QPA, RR, BASE,
				       LEN + 1),
			want == VD_ACCESS_OK ? VD_ACCESS_BOUNDS : want);
	KUNIT_EXPECT_EQ(test, check_qp(test, mr->stag, f->pd2, QPB, RR, BASE,
				       1),
			valid ? VD_ACCESS_PD_MISMATCH :
				VD_ACCESS_INVALID_STATE);
	dereg(test, mr);
}

/* Every type x state x accessing QP x access bits x needed rights. */
static void tpt_test_type_matrix(struct kunit *test)
{
	u32 t, a;

	for (t = 0; t < VD_STAG_TYPE_NR; t++)
		for (a = 0; a < 16; a++)
			if (access_table[a] >= 0) {
				type_matrix_one(test, t, a, false);
				type_matrix_one(test, t, a, true);
			}
}

/*
 * Who may invalidate what: [type][remote][same QP], for an STag of the
 * caller's PD. A PD mismatch or an unknown STag come first, always.
 */
static const enum vd_access_status inv_table[VD_STAG_TYPE_NR][2][2] = {
	[VD_STAG_MR] = {
		{ VD_ACCESS_INVALIDATE, VD_ACCESS_INVALIDATE },
		{ VD_ACCESS_INVALIDATE, VD_ACCESS_INVALIDATE },
	},
	[VD_STAG_FAST_REG] = {
		{ VD_ACCESS_OK, VD_ACCESS_OK },
		{ VD_ACCESS_OK, VD_ACCESS_OK },
	},
	[VD_STAG_MW1] = {
		{ VD_ACCESS_INVALIDATE, VD_ACCESS_INVALIDATE },
		{ VD_ACCESS_INVALIDATE, VD_ACCESS_INVALIDATE },
	},
	[VD_STAG_MW2] = {
		{ VD_ACCESS_OK, VD_ACCESS_OK },	/* another QP: while INVALID */
		{ VD_ACCESS_QP_MISMATCH, VD_ACCESS_OK },
	},
};

static void invalidate_one(struct kunit *test, u32 t, bool remote, bool same,
			   bool valid)
{
	struct tpt_fixture *f = test->priv;
	enum vd_access_status want = inv_table[t][remote][same];
	struct vd_mr *mr;

	/* an INVALID type-2 window is the PD's again: any of its QPs */
	if (t == VD_STAG_MW2 && !remote && !same && valid)
		want = VD_ACCESS_QP_MISMATCH;

	mr = reg_type(test, f->pd, BASE, LEN, AALL, KEY, t,
		      t == VD_STAG_MW2 ? QPA : 0);
	if (!valid)
		WRITE_ONCE(mr->state, VD_MR_INVALID);
	KUNIT_EXPECT_EQ(test, inv(test, mr->stag, f->pd2, QPA, remote),
			VD_ACCESS_PD_MISMATCH);
	KUNIT_EXPECT_EQ(test, inv(test, mr->stag ^ 0x80, f->pd, QPA, remote),
			VD_ACCESS_INVALID_STAG);
	KUNIT_EXPECT_EQ_MSG(test,
			    inv(test, mr->stag, f->pd, same ? QPA : QPB,
				remote),
			    want, "type %u remote %d same %d valid %d", t,
			    remote, same, valid);
	/* a refused invalidation changes nothing */
	KUNIT_EXPECT_EQ(test, READ_ONCE(mr->state),
			want == VD_ACCESS_OK || !valid ? VD_MR_INVALID :
							 VD_MR_VALID);
	dereg(test, mr);
}

static void tpt_test_invalidate_types(struct kunit *test)
{
	u32 t, bits;

	for (t = 0; t < VD_STAG_TYPE_NR; t++)
		for (bits = 0; bits < 8; bits++)
			invalidate_one(test, t, bits & 1, bits & 2, bits & 4);
}

static void tpt_test_stag_insert_args(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	struct vd_mr *mr;
	u32 t;

	/* only a type-2 window names a QP */
	for (t = 0; t < VD_STAG_TYPE_NR; t++) {
		if (t == VD_STAG_MW2)
			continue;
		mr = vd_stag_insert(&f->tpt, f->pd, NULL, BASE, LEN, 0, KEY,
				    t, QPA, true);
		KUNIT_EXPECT_EQ(test, PTR_ERR(mr), -EINVAL);
	}
	mr = vd_stag_insert(&f->tpt, f->pd, NULL, BASE, LEN, 0, KEY,
			    VD_STAG_TYPE_NR, 0, true);
	KUNIT_EXPECT_EQ(test, PTR_ERR(mr), -EINVAL);
	/*
	 * An empty STag is a fast-register MR not yet registered or a
	 * window not yet bound, only: INVALID, never a plain MR.
	 */
	for (t = 0; t < VD_STAG_TYPE_NR; t++) {
		mr = vd_stag_insert(&f->tpt, f->pd, NULL, BASE, 0, 0, KEY,
				    t, 0, true);
		KUNIT_EXPECT_EQ(test, PTR_ERR(mr), -EINVAL);
		mr = vd_stag_insert(&f->tpt, f->pd, NULL, BASE, 0, 0, KEY,
				    t, 0, false);
		if (t == VD_STAG_MR) {
			KUNIT_EXPECT_EQ(test, PTR_ERR(mr), -EINVAL);
			continue;
		}
		KUNIT_ASSERT_NOT_ERR_OR_NULL(test, mr);
		KUNIT_EXPECT_EQ(test, check(test, mr->stag, f->pd, RR, BASE, 1),
				VD_ACCESS_INVALID_STATE);
		vd_mr_deregister(mr);
	}
	mr = vd_stag_insert(&f->tpt, f->pd, NULL, 0, 0, AALL, KEY,
			    VD_STAG_FAST_REG, 0, false);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, mr);
	KUNIT_EXPECT_EQ(test, check(test, mr->stag, f->pd, LR, 0, 1),
			VD_ACCESS_INVALID_STATE);
	KUNIT_EXPECT_EQ(test, check(test, mr->stag, f->pd, LR, 0, 0),
			VD_ACCESS_OK);
	vd_mr_deregister(mr);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->tpt.nr_mrs), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->pd->users), 0);
}

/* The copy bracket: open only on a VALID, registered region. */
static void tpt_test_use_bracket(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	struct vd_mr *fr = reg_fr(test, f->pd, BASE, LEN, AALL, KEY);
	struct vd_mr *mr = reg(test, f->pd, BASE, LEN, AALL, KEY);
	struct vd_mr *held;

	KUNIT_EXPECT_TRUE(test, vd_mr_use_begin(fr));
	vd_mr_use_end(fr);
	KUNIT_EXPECT_EQ(test, inv(test, fr->stag, f->pd, 0, false),
			VD_ACCESS_OK);
	KUNIT_EXPECT_FALSE(test, vd_mr_use_begin(fr));
	KUNIT_EXPECT_EQ(test, atomic_read(&fr->users), 0);

	KUNIT_ASSERT_EQ(test, vd_tpt_check(&f->tpt, mr->stag, f->pd, 0, LW,
					   BASE, 8, &held), VD_ACCESS_OK);
	KUNIT_EXPECT_TRUE(test, vd_mr_use_begin(held));
	vd_mr_use_end(held);
	dereg(test, mr);
	/* the reference keeps the region, not the access */
	KUNIT_EXPECT_FALSE(test, vd_mr_use_begin(held));
	KUNIT_EXPECT_EQ(test, atomic_read(&held->users), 0);
	vd_mr_put(held);
}

/*
 * A copy in progress (a thread inside the bracket, sleeping there to
 * make the point) holds up deregistration and a synchronous
 * invalidation: when they return, the copy has ended.
 */
struct user_thread {
	struct vd_mr *mr;
	struct completion inside, done;
	bool ended;
};

static int user_thread_fn(void *arg)
{
	struct user_thread *u = arg;
	struct vd_mr *mr = u->mr;

	if (vd_mr_use_begin(mr)) {
		complete(&u->inside);
		msleep(200);
		WRITE_ONCE(u->ended, true);
		vd_mr_use_end(mr);
	} else {
		complete(&u->inside);
	}
	/* the last touch of @u: its owner waits for this */
	complete(&u->done);
	return 0;
}

static void run_user_then(struct kunit *test, struct vd_mr *held,
			  bool deregister)
{
	struct tpt_fixture *f = test->priv;
	struct user_thread u = { .mr = held };
	struct task_struct *t;

	init_completion(&u.inside);
	init_completion(&u.done);
	t = kthread_run(user_thread_fn, &u, "vd_tpt_user");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	wait_for_completion(&u.inside);
	if (deregister)
		dereg(test, held);
	else
		KUNIT_EXPECT_EQ(test,
				vd_tpt_invalidate_sync(&f->tpt, held->stag,
						       f->pd, 0, false),
				VD_ACCESS_OK);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(u.ended));
	KUNIT_EXPECT_FALSE(test, vd_mr_use_begin(held));
	wait_for_completion(&u.done);
}

static void tpt_test_access_ends(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	struct vd_mr *mr = reg(test, f->pd, BASE, LEN, AALL, KEY);
	struct vd_mr *fr = reg_fr(test, f->pd, BASE, LEN, AALL, KEY);
	struct vd_mr *held;

	KUNIT_ASSERT_EQ(test, vd_tpt_check(&f->tpt, mr->stag, f->pd, 0, LW,
					   BASE, 8, &held), VD_ACCESS_OK);
	run_user_then(test, held, true);
	vd_mr_put(held);
	run_user_then(test, fr, false);
	/* a plain MR is not invalidated, synchronously or not */
	mr = reg(test, f->pd, BASE, LEN, AALL, KEY);
	KUNIT_EXPECT_EQ(test, vd_tpt_invalidate_sync(&f->tpt, mr->stag, f->pd,
						     0, false),
			VD_ACCESS_INVALIDATE);
	KUNIT_EXPECT_TRUE(test, vd_mr_use_begin(mr));
	vd_mr_use_end(mr);
}

/* MODIFY_MR: rights and PD change together, the STag stays. */
static void tpt_test_modify(struct kunit *test)
{
	struct tpt_fixture *f = test->priv;
	const u32 lw = VIADUCT_ACCESS_LOCAL_WRITE;
	const u32 rw = lw | VIADUCT_ACCESS_REMOTE_WRITE;
	struct vd_mr *mr = reg(test, f->pd, BASE, LEN, lw, KEY);
	struct vd_mr *fr = reg_fr(test, f->pd, BASE, LEN, rw, KEY);
	u32 stag = mr->stag;

	KUNIT_EXPECT_EQ(test, check(test, stag, f->pd, VD_RIGHT_REMOTE_WRITE,
				    BASE, 1), VD_ACCESS_RIGHTS);
	/* wider: nothing to wait for */
	KUNIT_EXPECT_EQ(test, vd_mr_modify(mr, f->pd, rw), 0);
	KUNIT_EXPECT_EQ(test, mr->stag, stag);
	KUNIT_EXPECT_EQ(test, check(test, stag, f->pd, VD_RIGHT_REMOTE_WRITE,
				    BASE, 1), VD_ACCESS_OK);

	/* refused, nothing changed */
	KUNIT_EXPECT_EQ(test, vd_mr_modify(mr, f->pd,
					   VIADUCT_ACCESS_REMOTE_WRITE),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, vd_mr_modify(mr, f->pd, 0x100), -EINVAL);
	KUNIT_EXPECT_EQ(test, vd_mr_modify(fr, f->pd, lw), -EINVAL);
	KUNIT_EXPECT_EQ(test, mr->access, rw);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->pd->users), 2);

	/* to the other PD: users move, the old PD no longer matches */
	KUNIT_EXPECT_EQ(test, vd_mr_modify(mr, f->pd2,
					   VIADUCT_ACCESS_REMOTE_READ), 1);
	vd_mr_wait_uses(mr);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->pd->users), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->pd2->users), 1);
	KUNIT_EXPECT_EQ(test, check(test, stag, f->pd, VD_RIGHT_LOCAL_READ,
				    BASE, 1), VD_ACCESS_PD_MISMATCH);
	KUNIT_EXPECT_EQ(test, check(test, stag, f->pd2, VD_RIGHT_REMOTE_READ,
				    BASE, 1), VD_ACCESS_OK);
	KUNIT_EXPECT_EQ(test, check(test, stag, f->pd2, VD_RIGHT_LOCAL_WRITE,
				    BASE, 1), VD_ACCESS_RIGHTS);
	/* a destroyed PD takes no region */
	dereg(test, fr);
	KUNIT_EXPECT_EQ(test, vd_pd_try_destroy(f->pd), 0);
	KUNIT_EXPECT_EQ(test, vd_mr_modify(mr, f->pd, lw), -ENOENT);
	KUNIT_EXPECT_PTR_EQ(test, mr->pd, f->pd2);
	dereg(test, mr);
	KUNIT_EXPECT_EQ(test, atomic_read(&f->pd2->users), 0);
}

static struct kunit_case tpt_test_cases[] = {
	KUNIT_CASE(tpt_test_access_rights),
	KUNIT_CASE(tpt_test_rights_matrix),
	KUNIT_CASE(tpt_test_bounds),
	KUNIT_CASE(tpt_test_bounds_top),
	KUNIT_CASE(tpt_test_insert_args),
	KUNIT_CASE(tpt_test_zero_length),
	KUNIT_CASE(tpt_test_keys),
	KUNIT_CASE(tpt_test_unknown_stags),
	KUNIT_CASE(tpt_test_wrong_pd),
	KUNIT_CASE(tpt_test_invalidate),
	KUNIT_CASE(tpt_test_type_matrix),
	KUNIT_CASE(tpt_test_invalidate_types),
	KUNIT_CASE(tpt_test_stag_insert_args),
	KUNIT_CASE(tpt_test_use_bracket),
	KUNIT_CASE(tpt_test_access_ends),
	KUNIT_CASE(tpt_test_order),
	KUNIT_CASE(tpt_test_stale_stag),
	KUNIT_CASE(tpt_test_index_wrap),
	KUNIT_CASE(tpt_test_ref_outlives_dereg),
	KUNIT_CASE(tpt_test_check_without_ref),
	KUNIT_CASE(tpt_test_pd_users),
	KUNIT_CASE(tpt_test_modify),
	KUNIT_CASE(tpt_test_max_mr),
	KUNIT_CASE(tpt_test_status_maps),
	KUNIT_CASE(tpt_test_rcu_race),
	KUNIT_CASE(tpt_test_umem_arith),
	KUNIT_CASE(tpt_test_umem_copy),
	{}
};

static struct kunit_suite tpt_test_suite = {
	.name = "viaduct_tpt",
	.init = tpt_test_init,
	.exit = tpt_test_exit,
	.test_cases = tpt_test_cases,
};

kunit_test_suite(tpt_test_suite);
