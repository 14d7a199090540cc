// SPDX-License-Identifier: GPL-2.0
/*
 * The memory commands of /dev/viaduct that create MRs: REG_MR (a region of
 * the caller's memory, pinned now) and ALLOC_MR (an empty fast-register
 * region the send queue fills). Both give an MR handle that DEREG_MR
 * releases; the handle table is uobj.c's. Documentation/memory.rst.
 */
#include <linux/err.h>

#include "device.h"
#include "tpt.h"
#include "uctx.h"
#include "uobj.h"

static struct vd_mr *umr_register(struct vd_device *vd, struct vd_pd *pd,
				  void *reply)
{
	struct viaduct_reg_mr *r = reply;

	return vd_mr_register(&vd->tpt, pd, r->addr, r->length, r->access,
			      r->key);
}

long vd_umr_reg_mr(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		   const struct vd_uarg *uarg)
{
	struct viaduct_reg_mr *r = karg;
	struct vd_uobj_mr_req req = {
		.vd = vd, .pd_handle = r->pd_handle, .stag = &r->stag,
		.make = umr_register,
	};

	if (r->reserved[0] || r->reserved[1] || r->reserved[2] || r->reserved2)
		return -EINVAL;
	return vd_uobj_create_mr(ctx, &req, r, &r->handle, sizeof(*r), uarg);
}

static struct vd_mr *umr_alloc(struct vd_device *vd, struct vd_pd *pd,
			       void *reply)
{
	struct viaduct_alloc_mr *r = reply;

	return vd_frmr_alloc(&vd->tpt, pd, r->max_pages, r->key);
}

long vd_umr_alloc_mr(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		     const struct vd_uarg *uarg)
{
	struct viaduct_alloc_mr *r = karg;
	struct vd_uobj_mr_req req = {
		.vd = vd, .pd_handle = r->pd_handle, .stag = &r->stag,
		.make = umr_alloc,
	};

	if (r->reserved[0] || r->reserved[1] || r->reserved[2] || r->reserved2)
		return -EINVAL;
	return vd_uobj_create_mr(ctx, &req, r, &r->handle, sizeof(*r), uarg);
}
