// SPDX-License-Identifier: GPL-2.0
/*
 * The Translation and Protection Table's access check: the one function
 * every remote and local access goes through (vd_tpt_check()), the rules
 * of invalidation (vd_tpt_invalidate()), and how a failed check is
 * answered (the Terminate codes of RFC 5040/5041 and the completion
 * statuses). The table and a region's lifetime are tpt.c's; see tpt.h for
 * the rules and Documentation/memory.rst for the design.
 */
#include <linux/bug.h>
#include <linux/rcupdate.h>
#include <linux/xarray.h>
#include <kunit/visibility.h>

#include "mem.h"
#include "pd.h"
#include "tpt.h"

/**
 * vd_tpt_lookup() - steps 1 and 2 of the check: the region an STag names
 * @tpt: the table
 * @stag: the STag, index and key
 *
 * Context: Under rcu_read_lock(); the region is not referenced.
 * Return: the region whose index and key match, or NULL.
 */
struct vd_mr *vd_tpt_lookup(struct vd_tpt *tpt, u32 stag)
{
	u32 index = vd_stag_index(stag);
	struct vd_mr *mr;

	if (unlikely(!index))
		return NULL;
	mr = xa_load(&tpt->mrs, index);
	if (unlikely(!mr || mr->stag != stag))
		return NULL;
	return mr;
}

/* Steps 3 to 8 of the check. */
static enum vd_access_status vd_mr_check(const struct vd_mr *mr,
					 const struct vd_pd *pd, u32 qpn,
					 u32 rights, u64 addr, u64 length)
{
	const struct vd_pd *mr_pd;
	u32 mr_rights;
	u64 off;

	if (unlikely(READ_ONCE(mr->state) != VD_MR_VALID))
		return VD_ACCESS_INVALID_STATE;
	vd_mr_attrs(mr, &mr_pd, &mr_rights);
	if (unlikely(mr_pd != pd))
		return VD_ACCESS_PD_MISMATCH;
	if (unlikely(mr->type == VD_STAG_MW2 && mr->qpn != qpn))
		return VD_ACCESS_QP_MISMATCH;
	if (unlikely(!rights || (rights & ~mr_rights)))
		return VD_ACCESS_RIGHTS;
	/* Bytes addr .. addr + length - 1 must be addressable: no wrap. */
	if (unlikely(length - 1 > U64_MAX - addr))
		return VD_ACCESS_WRAP;
	/*
	 * off <= mr->length rules out addresses below the base (off wraps
	 * to a huge value) and keeps mr->length - off from underflowing.
	 */
	off = addr - mr->addr;
	if (unlikely(off > mr->length || length > mr->length - off))
		return VD_ACCESS_BOUNDS;
	return VD_ACCESS_OK;
}

/**
 * vd_tpt_check() - THE access check
 * @tpt: the table
 * @stag: the STag of the access
 * @pd: the PD of the QP the access comes through
 * @qpn: the number of that QP (0: none, a table test)
 * @rights: the VD_RIGHT_* the access needs
 * @addr: the first byte of the access
 * @length: its bytes
 * @mrp: set to the region, referenced, on VD_ACCESS_OK with @length > 0
 *       (the caller releases it with vd_mr_put()); else to NULL. May be
 *       NULL.
 *
 * In this order (the first failing step decides):
 *
 * 0. @length == 0: VD_ACCESS_OK, no region, nothing else is looked at (a
 *    zero-length access is not validated, not even its STag);
 * 1. the STag's index is 0 or not in the table: VD_ACCESS_INVALID_STAG;
 * 2. the STag's key differs from the region's: VD_ACCESS_INVALID_STAG;
 * 3. the region is INVALID: VD_ACCESS_INVALID_STATE;
 * 4. the region's PD is not @pd: VD_ACCESS_PD_MISMATCH;
 * 5. a type-2 window bound to a QP other than @qpn: VD_ACCESS_QP_MISMATCH;
 * 6. @rights is empty or not a subset of the region's rights:
 *    VD_ACCESS_RIGHTS;
 * 7. @addr + @length - 1 wraps 2^64: VD_ACCESS_WRAP;
 * 8. [@addr, @addr + @length) is not inside the region (byte granular):
 *    VD_ACCESS_BOUNDS.
 *
 * A region found whose last reference is gone is being deregistered:
 * VD_ACCESS_INVALID_STAG. The check is the same for every type of STag: a
 * fast-register MR is INVALID until a Fast-Register work request registers
 * pages in it, a window is a region of its own whose rights and bounds
 * were checked against its MR's when it was bound.
 *
 * Context: Any context (it only takes rcu_read_lock()).
 * Return: the status of the check.
 */
enum vd_access_status vd_tpt_check(struct vd_tpt *tpt, u32 stag,
				   const struct vd_pd *pd, u32 qpn, u32 rights,
				   u64 addr, u64 length, struct vd_mr **mrp)
{
	enum vd_access_status status;
	struct vd_mr *mr;

	if (mrp)
		*mrp = NULL;
	/* A zero-length access is not validated at all (verbs 7.6.3). */
	if (!length)
		return VD_ACCESS_OK;

	rcu_read_lock();
	mr = vd_tpt_lookup(tpt, stag);
	if (unlikely(!mr))
		status = VD_ACCESS_INVALID_STAG;
	else
		status = vd_mr_check(mr, pd, qpn, rights, addr, length);
	/* A region whose count reached zero is being deregistered: gone. */
	if (status == VD_ACCESS_OK && mrp) {
		if (likely(kref_get_unless_zero(&mr->ref)))
			*mrp = mr;
		else
			status = VD_ACCESS_INVALID_STAG;
	}
	rcu_read_unlock();
	return status;
}
EXPORT_SYMBOL_IF_KUNIT(vd_tpt_check);

/*
 * Which STags an invalidation may end: vd_tpt_invalidate() has the rules.
 * Invalidating
 * an already INVALID STag succeeds: the result the caller asked for holds.
 */
static enum vd_access_status vd_stag_invalidatable(const struct vd_mr *mr,
						   const struct vd_pd *pd,
						   u32 qpn, bool remote)
{
	if (mr->pd != pd)
		return VD_ACCESS_PD_MISMATCH;
	if (mr->type != VD_STAG_FAST_REG && mr->type != VD_STAG_MW2)
		return VD_ACCESS_INVALIDATE;
	/*
	 * A type-2 window is invalidated only through its QP: a peer's
	 * always, a Local Invalidate while it is bound (verbs 7.10.6.3).
	 */
	if (mr->type == VD_STAG_MW2 && mr->qpn != qpn &&
	    (remote || READ_ONCE(mr->state) == VD_MR_VALID))
		return VD_ACCESS_QP_MISMATCH;
	return VD_ACCESS_OK;
}

/**
 * vd_tpt_invalidate() - move an STag to INVALID
 * @tpt: the table
 * @stag: the STag to invalidate
 * @pd: the PD of the QP the invalidation comes through
 * @qpn: the number of that QP
 * @remote: a peer's Send with Invalidate arriving on QP @qpn; false for a
 *          Local Invalidate
 *
 * In this order:
 *
 * - the STag's index or key is unknown: VD_ACCESS_INVALID_STAG;
 * - its PD is not @pd: VD_ACCESS_PD_MISMATCH;
 * - its type cannot be invalidated that way: VD_ACCESS_INVALIDATE (a plain
 *   MR never; a type-1 window only by a bind, never by an invalidation; a
 *   fast-register MR and a type-2 window both ways);
 * - a type-2 window bound to another QP, when @remote or the window is
 *   VALID: VD_ACCESS_QP_MISMATCH.
 *
 * An STag already INVALID stays so and the call succeeds. A copy already
 * in progress may still finish: vd_tpt_invalidate_sync() waits for it.
 *
 * Context: Any context.
 * Return: the status; VD_ACCESS_OK if the STag is now INVALID.
 */
enum vd_access_status vd_tpt_invalidate(struct vd_tpt *tpt, u32 stag,
					const struct vd_pd *pd, u32 qpn,
					bool remote)
{
	enum vd_access_status status;
	struct vd_mr *mr;

	rcu_read_lock();
	mr = vd_tpt_lookup(tpt, stag);
	if (!mr) {
		status = VD_ACCESS_INVALID_STAG;
	} else {
		status = vd_stag_invalidatable(mr, pd, qpn, remote);
		if (status == VD_ACCESS_OK)
			WRITE_ONCE(mr->state, VD_MR_INVALID);
	}
	rcu_read_unlock();
	return status;
}
EXPORT_SYMBOL_IF_KUNIT(vd_tpt_invalidate);

/*
 * RFC 5040 section 7.2, RDMAP layer, Remote Protection Error: for a
 * failed check of the data source of an RDMA Read Request.
 */
static const u8 vd_term_rdmap_code[VD_ACCESS_NR] = {
	[VD_ACCESS_INVALID_STAG]	= 0x00,	/* invalid STag */
	[VD_ACCESS_INVALID_STATE]	= 0x00,	/* invalid STag */
	[VD_ACCESS_BOUNDS]		= 0x01,	/* base or bounds violation */
	[VD_ACCESS_RIGHTS]		= 0x02,	/* access rights violation */
	[VD_ACCESS_PD_MISMATCH]		= 0x03,	/* STag not associated with stream */
	[VD_ACCESS_WRAP]		= 0x04,	/* to wrap */
	[VD_ACCESS_QP_MISMATCH]		= 0x03,	/* STag not associated with stream */
	[VD_ACCESS_INVALIDATE]		= 0x09,	/* STag cannot be invalidated */
};

/*
 * RFC 5041 section 7.2, DDP layer, Tagged Buffer Error: for a failed check
 * of the sink of an RDMA Write or Read Response. DDP has no code for an
 * access rights violation; like the verbs draft, report the STag as not
 * associated with the stream.
 */
static const u8 vd_term_ddp_code[VD_ACCESS_NR] = {
	[VD_ACCESS_INVALID_STAG]	= 0x00,	/* invalid STag */
	[VD_ACCESS_INVALID_STATE]	= 0x00,	/* invalid STag */
	[VD_ACCESS_BOUNDS]		= 0x01,	/* base or bounds violation */
	[VD_ACCESS_RIGHTS]		= 0x02,	/* STag not associated with stream */
	[VD_ACCESS_PD_MISMATCH]		= 0x02,	/* STag not associated with stream */
	[VD_ACCESS_WRAP]		= 0x03,	/* to wrap */
	[VD_ACCESS_QP_MISMATCH]		= 0x02,	/* STag not associated with stream */
	[VD_ACCESS_INVALIDATE]		= 0x00,	/* invalid STag (no own code) */
};

/**
 * vd_access_term_rdmap() - the Terminate for a failed Read Request source
 * @status: the status of the check of the data source
 *
 * RDMAP layer, Remote Protection Error (RFC 5040 section 7.2). A pure map.
 *
 * Return: the Terminate code (VD_TERM_CODE()), 0 for VD_ACCESS_OK, which
 * has no Terminate.
 */
u16 vd_access_term_rdmap(enum vd_access_status status)
{
	if (status == VD_ACCESS_OK)
		return 0;
	if (status >= VD_ACCESS_NR)
		status = VD_ACCESS_INVALID_STAG;
	return VD_TERM_CODE(VD_TERM_LAYER_RDMAP, VD_TERM_RDMAP_REMOTE_PROT,
			    vd_term_rdmap_code[status]);
}
EXPORT_SYMBOL_IF_KUNIT(vd_access_term_rdmap);

/**
 * vd_access_term_ddp() - the Terminate for a failed tagged sink
 * @status: the status of the check of an RDMA Write or Read Response sink
 *
 * DDP layer, Tagged Buffer Error (RFC 5041 section 7.2). A pure map.
 *
 * Return: the Terminate code (VD_TERM_CODE()), 0 for VD_ACCESS_OK.
 */
u16 vd_access_term_ddp(enum vd_access_status status)
{
	if (status == VD_ACCESS_OK)
		return 0;
	if (status >= VD_ACCESS_NR)
		status = VD_ACCESS_INVALID_STAG;
	return VD_TERM_CODE(VD_TERM_LAYER_DDP, VD_TERM_DDP_TAGGED,
			    vd_term_ddp_code[status]);
}
EXPORT_SYMBOL_IF_KUNIT(vd_access_term_ddp);

/**
 * vd_access_term_invalidate() - the Terminate for a refused remote invalidation
 * @status: the status of vd_tpt_invalidate() for a Send with Invalidate
 *
 * RFC 5040 section 7.4 has "STag cannot be invalidated" twice: as a
 * Remote Protection Error for an STag the stream may not invalidate (its
 * PD, its type, its QP), and as a Remote Operation Error when there is no
 * such STag to invalidate. Linux siw answers the same way. A pure map.
 *
 * Return: the Terminate code (VD_TERM_CODE()), 0 for VD_ACCESS_OK.
 */
u16 vd_access_term_invalidate(enum vd_access_status status)
{
	if (status == VD_ACCESS_OK)
		return 0;
	return VD_TERM_CODE(VD_TERM_LAYER_RDMAP,
			    status == VD_ACCESS_INVALID_STAG ?
			    VD_TERM_RDMAP_REMOTE_OP : VD_TERM_RDMAP_REMOTE_PROT,
			    VD_TERM_RDMAP_CANNOT_INV);
}
EXPORT_SYMBOL_IF_KUNIT(vd_access_term_invalidate);

/**
 * vd_access_wc_status() - the CQE status for a check status
 * @status: the status of an access check
 * @remote: the failed check was made by the peer (reported to us in a
 *          Terminate) rather than by us on one of our own work requests
 *
 * A pure map.
 *
 * Return: VIADUCT_WC_SUCCESS for VD_ACCESS_OK, else
 * VIADUCT_WC_REM_ACCESS_ERR if @remote, VIADUCT_WC_LOC_PROT_ERR if not.
 */
u8 vd_access_wc_status(enum vd_access_status status, bool remote)
{
	if (status == VD_ACCESS_OK)
		return VIADUCT_WC_SUCCESS;
	return remote ? VIADUCT_WC_REM_ACCESS_ERR : VIADUCT_WC_LOC_PROT_ERR;
}
EXPORT_SYMBOL_IF_KUNIT(vd_access_wc_status);
