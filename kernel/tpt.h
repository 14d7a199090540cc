/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Translation and Protection Table: STags, memory regions, and the one
 * access check that every data path calls before it touches registered
 * memory. Documentation/memory.rst has the rules and the design.
 *
 * API
 * ---
 *   vd_tpt_init(tpt, max_mr), vd_tpt_uninit(tpt)
 *       One table per device, embedded in it. Uninit runs after every MR of
 *       the device was deregistered and every reference to them dropped.
 *
 *   vd_mr_register(tpt, pd, addr, length, access, key)
 *       Pins [addr, addr + length) of the calling process (writable iff
 *       @access has LOCAL_WRITE or REMOTE_WRITE), enters the region in the
 *       table as VALID and returns it with one reference, the registration
 *       reference, which belongs to the caller. Errors: -EINVAL (bad access
 *       bits, REMOTE_WRITE without LOCAL_WRITE, length 0 or too large,
 *       addr + length wraps), -ENOENT (the PD was destroyed), -ENOMEM
 *       (memlock limit, memory, or @max_mr regions already registered), and
 *       the errors of vd_umem_pin() (-EFAULT, -EACCES, -EINTR). Process
 *       context.
 *   vd_mr_insert(tpt, pd, umem, addr, length, access, key)
 *       The same without pinning: takes over @umem (which may be NULL; then
 *       the region has no pages and is for tests of the table only).
 *   vd_stag_insert(tpt, pd, umem, addr, length, access, key, type, qpn,
 *                  valid)
 *       vd_mr_insert() for an STag of any type (enum vd_stag_type), in
 *       the state @valid says; @qpn is the QP a type-2 window is bound to
 *       (0 for every other type). A window grants only the remote rights
 *       of @access: nothing reaches local memory through it.
 *   vd_mr_deregister(mr)
 *       Consumes the registration reference: removes the STag from the
 *       table (no later lookup finds it), stops counting as a PD user, and
 *       drops the reference. If nobody else holds the MR, it is released
 *       (unpinned, uncharged) before this returns. Process context.
 *   vd_mr_get(mr), vd_mr_put(mr)
 *       References held by the data path. vd_mr_put() may be called in any
 *       context, including softirq: if it drops the last reference, the
 *       release (which sleeps) runs later from a work item of the table.
 *
 *   vd_tpt_check(tpt, stag, pd, qpn, rights, addr, length, &mr)
 *       THE access check; see below. @qpn is the number of the QP the
 *       access comes through (0: none, a table test). On VD_ACCESS_OK with
 *       @length > 0, *mr is the region, referenced: the caller releases it
 *       with vd_mr_put(). Any context (it only takes rcu_read_lock()).
 *   vd_tpt_invalidate(tpt, stag, pd, qpn, remote)
 *       Moves an STag to INVALID: Local Invalidate (@remote false) or a
 *       peer's Send with Invalidate arriving on QP @qpn (@remote true).
 *       In this order:
 *         the STag's index or key is unknown:        VD_ACCESS_INVALID_STAG
 *         its PD is not @pd:                         VD_ACCESS_PD_MISMATCH
 *         its type cannot be invalidated that way:   VD_ACCESS_INVALIDATE
 *           (a plain MR never; a type-1 window only by a bind, never by
 *           an invalidation; a fast-register MR and a type-2 window both
 *           ways)
 *         @remote and a type-2 window bound to
 *         another QP:                                VD_ACCESS_QP_MISMATCH
 *       An STag already INVALID stays so and the call succeeds. Any
 *       context.
 *   vd_tpt_invalidate_sync(tpt, stag, pd, qpn, remote)
 *       The same, and when it returns VD_ACCESS_OK no copy into or out of
 *       the region is in progress any more (the data path's), so none
 *       touches it after. Process context (it may wait, bounded).
 *   vd_mr_use_begin(mr), vd_mr_use_end(mr)
 *       Bracket every copy into or out of a referenced region. Begin fails
 *       (false, nothing to end) if the region was invalidated or
 *       deregistered since the check; between the two the region's pages
 *       may be touched. The bracket does not sleep. Deregistration and
 *       vd_tpt_invalidate_sync() wait until no bracket is open: "access
 *       ends when the application ends it" (Documentation/memory.rst).
 *   vd_access_term_invalidate(status)
 *       The Terminate for a refused remote invalidation (RFC 5040 7.4).
 *
 *   vd_frmr_alloc(tpt, pd, max_pages, key)
 *       ALLOC_MR: a VD_STAG_FAST_REG STag, INVALID and empty, that a
 *       Fast-Register WR can fill with up to @max_pages pages. Released
 *       with vd_mr_deregister(). Process context.
 *   vd_frmr_register(tpt, pd, qpn, stag, iova, access, sge, num_sge)
 *       The Fast-Register WR of QP @qpn: see frmr.c. Returns the CQE
 *       status. Process context (it allocates).
 *
 *   vd_access_term_rdmap(), vd_access_term_ddp(), vd_access_wc_status()
 *       Pure maps from a check status to the Terminate code to send and to
 *       the CQE status to complete with.
 *
 * The check, in this order (the first failing step decides):
 *   0. length == 0: VD_ACCESS_OK, *mr = NULL, nothing else is looked at
 *      (a zero-length access is not validated, not even its STag);
 *   1. the STag's index is 0 or not in the table:   VD_ACCESS_INVALID_STAG
 *   2. the STag's key differs from the region's:     VD_ACCESS_INVALID_STAG
 *   3. the region is INVALID:                        VD_ACCESS_INVALID_STATE
 *   4. the region's PD is not @pd:                   VD_ACCESS_PD_MISMATCH
 *   5. a type-2 window bound to a QP other than
 *      @qpn:                                         VD_ACCESS_QP_MISMATCH
 *   6. @rights is empty or not a subset of the
 *      region's rights:                              VD_ACCESS_RIGHTS
 *   7. addr + length - 1 wraps 2^64:                 VD_ACCESS_WRAP
 *   8. [addr, addr + length) is not inside the
 *      region (byte granular):                       VD_ACCESS_BOUNDS
 * The check is the same for every type of STag: a fast-register MR is
 * INVALID until a Fast-Register work request registers pages in it, a
 * window is a region of its own whose rights and bounds were checked
 * against its MR's when it was bound.
 */
#ifndef _VD_TPT_H
#define _VD_TPT_H

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/kref.h>
#include <linux/llist.h>
#include <linux/rcupdate.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <viaduct/viaduct-abi.h>

#include "viaduct.h"

struct vd_pd;
struct vd_umem;

/* VD_STAG_INDEX_BITS comes from viaduct.h, next to the device limits. */
static_assert(VD_STAG_INDEX_BITS == 32 - VIADUCT_STAG_INDEX_SHIFT);
#define VD_STAG_INDEX_MAX	((1U << VD_STAG_INDEX_BITS) - 1)

static inline u32 vd_stag_index(u32 stag)
{
	return stag >> VIADUCT_STAG_INDEX_SHIFT;
}

static inline u8 vd_stag_key(u32 stag)
{
	return stag & VIADUCT_STAG_KEY_MASK;
}

static inline u32 vd_stag_make(u32 index, u8 key)
{
	return index << VIADUCT_STAG_INDEX_SHIFT | key;
}

/* Rights a data path needs, and that a region grants. */
#define VD_RIGHT_LOCAL_READ	BIT(0)
#define VD_RIGHT_LOCAL_WRITE	BIT(1)
#define VD_RIGHT_REMOTE_READ	BIT(2)
#define VD_RIGHT_REMOTE_WRITE	BIT(3)
#define VD_RIGHT_MW_BIND	BIT(4)
#define VD_RIGHT_ALL		0x1fU

enum vd_mr_state {
	VD_MR_INVALID,
	VD_MR_VALID,
};

/* What an STag names (Documentation/memory.rst, "STag types"). */
enum vd_stag_type {
	VD_STAG_MR,		/* REG_MR: registered by a call */
	VD_STAG_FAST_REG,	/* ALLOC_MR: registered through the SQ */
	VD_STAG_MW1,		/* memory window type 1: bound by a call */
	VD_STAG_MW2,		/* memory window type 2: bound to one QP */
	VD_STAG_TYPE_NR
};

enum vd_access_status {
	VD_ACCESS_OK,
	VD_ACCESS_INVALID_STAG,
	VD_ACCESS_INVALID_STATE,
	VD_ACCESS_PD_MISMATCH,
	VD_ACCESS_RIGHTS,
	VD_ACCESS_WRAP,
	VD_ACCESS_BOUNDS,
	VD_ACCESS_QP_MISMATCH,		/* type-2 window of another QP */
	VD_ACCESS_INVALIDATE,		/* type cannot be invalidated */
	VD_ACCESS_NR
};

struct vd_tpt {
	struct xarray mrs;		/* index -> struct vd_mr, RCU lookups */
	u32 next;			/* xa_alloc_cyclic() cursor */
	u32 max_mr;
	atomic_t nr_mrs;		/* registered (not yet deregistered) */
	atomic_t nr_alive;		/* not yet freed */
	struct llist_head release_list;	/* last put outside process context */
	struct work_struct release_work;
};

struct vd_mr {
	struct kref ref;
	struct vd_tpt *tpt;
	struct vd_pd *pd;		/* referenced */
	u32 stag;
	u32 access;			/* VIADUCT_ACCESS_* as registered */
	u32 rights;			/* VD_RIGHT_*, derived from @access */
	u8 state;			/* enum vd_mr_state, READ_ONCE/WRITE_ONCE */
	u8 type;			/* enum vd_stag_type */
	u32 qpn;			/* VD_STAG_MW2: the QP bound to, else 0 */
	u32 max_pages;			/* VD_STAG_FAST_REG: page list capacity */
	/*
	 * A registration by a Fast-Register WR (frmr.c): the MRs its pages
	 * come from, referenced, and the table slot of ALLOC_MR it occupies.
	 */
	struct vd_mr **srcs;
	u32 nr_srcs;
	bool fr_instance;
	/* access ends: vd_mr_use_begin()/end() against deregistration */
	bool dead;			/* deregistered; READ_ONCE/WRITE_ONCE */
	atomic_t users;			/* copies in progress */
	u64 addr;			/* base: the address of the first byte */
	u64 length;			/* bytes, > 0 */
	struct vd_umem *umem;		/* owned; NULL for table-only tests */
	struct llist_node release_node;
	struct rcu_head rcu;
};

void vd_tpt_init(struct vd_tpt *tpt, u32 max_mr);
void vd_tpt_uninit(struct vd_tpt *tpt);

int vd_mr_access_rights(u32 access);
struct vd_mr *vd_mr_register(struct vd_tpt *tpt, struct vd_pd *pd, u64 addr,
			     u64 length, u32 access, u8 key);
struct vd_mr *vd_mr_insert(struct vd_tpt *tpt, struct vd_pd *pd,
			   struct vd_umem *umem, u64 addr, u64 length,
			   u32 access, u8 key);
struct vd_mr *vd_stag_insert(struct vd_tpt *tpt, struct vd_pd *pd,
			     struct vd_umem *umem, u64 addr, u64 length,
			     u32 access, u8 key, enum vd_stag_type type,
			     u32 qpn, bool valid);
void vd_mr_deregister(struct vd_mr *mr);
void vd_mr_put(struct vd_mr *mr);

static inline struct vd_mr *vd_mr_get(struct vd_mr *mr)
{
	kref_get(&mr->ref);
	return mr;
}

bool vd_mr_use_begin(struct vd_mr *mr);
void vd_mr_use_end(struct vd_mr *mr);
enum vd_access_status vd_tpt_invalidate_sync(struct vd_tpt *tpt, u32 stag,
					     const struct vd_pd *pd, u32 qpn,
					     bool remote);

/* Byte offset of @addr in the region; for addresses the check accepted. */
static inline u64 vd_mr_offset(const struct vd_mr *mr, u64 addr)
{
	return addr - mr->addr;
}

enum vd_access_status vd_tpt_check(struct vd_tpt *tpt, u32 stag,
				   const struct vd_pd *pd, u32 qpn, u32 rights,
				   u64 addr, u64 length, struct vd_mr **mrp);
enum vd_access_status vd_tpt_invalidate(struct vd_tpt *tpt, u32 stag,
					const struct vd_pd *pd, u32 qpn,
					bool remote);

/*
 * Terminate codes (RFC 5040 section 7.2), as 16 bits: layer << 12 |
 * error type << 8 | error code, the layout of struct
 * viaduct_query_qp.terminate.
 */
#define VD_TERM_LAYER_RDMAP		0x0
#define VD_TERM_LAYER_DDP		0x1
#define VD_TERM_RDMAP_REMOTE_PROT	0x1	/* RDMAP: remote protection error */
#define VD_TERM_RDMAP_REMOTE_OP		0x2	/* RDMAP: remote operation error */
#define VD_TERM_RDMAP_CANNOT_INV	0x9	/* both: STag cannot be invalidated */
#define VD_TERM_DDP_TAGGED		0x1	/* DDP: tagged buffer error */
#define VD_TERM_CODE(layer, etype, code) \
	((u16)((layer) << 12 | (etype) << 8 | (code)))

u16 vd_access_term_rdmap(enum vd_access_status status);
u16 vd_access_term_ddp(enum vd_access_status status);
u16 vd_access_term_invalidate(enum vd_access_status status);
u8 vd_access_wc_status(enum vd_access_status status, bool remote);

/* frmr.c: fast registration through the send queue. */
struct viaduct_sge;

struct vd_mr *vd_frmr_alloc(struct vd_tpt *tpt, struct vd_pd *pd,
			    u32 max_pages, u8 key);
u8 vd_frmr_register(struct vd_tpt *tpt, struct vd_pd *pd, u32 qpn, u32 stag,
		    u64 iova, u32 access, const struct viaduct_sge *sge,
		    u32 num_sge);

#endif /* _VD_TPT_H */
