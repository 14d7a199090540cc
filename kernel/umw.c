// SPDX-License-Identifier: GPL-2.0
/*
 * The memory-window commands of /dev/viaduct: ALLOC_MW (an unbound window
 * on a PD) and BIND_MW (a type-1 window bound by a call); DEALLOC_MW is
 * the handle table's destroy. The windows themselves are mw.c's; the
 * handle table is uobj.c's. Documentation/memory.rst, "Memory windows".
 */
#include <linux/err.h>

#include "device.h"
#include "tpt.h"
#include "uctx.h"
#include "uobj.h"

static struct vd_mr *umw_alloc(struct vd_device *vd, struct vd_pd *pd,
			       void *reply)
{
	struct viaduct_alloc_mw *r = reply;

	return vd_mw_alloc(&vd->tpt, pd,
			   r->type == VIADUCT_MW_TYPE_2 ? VD_STAG_MW2 :
							  VD_STAG_MW1, r->key);
}

long vd_umw_alloc_mw(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		     const struct vd_uarg *uarg)
{
	struct viaduct_alloc_mw *r = karg;
	struct vd_uobj_mr_req req = {
		.vd = vd, .pd_handle = r->pd_handle, .stag = &r->stag,
		.make = umw_alloc, .window = true,
	};

	if (r->reserved[0] || r->reserved[1] || r->reserved[2] || r->reserved2)
		return -EINVAL;
	if (r->type != VIADUCT_MW_TYPE_1 && r->type != VIADUCT_MW_TYPE_2)
		return -EINVAL;
	return vd_uobj_create_mr(ctx, &req, r, &r->handle, sizeof(*r), uarg);
}

long vd_umw_bind_mw(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		    const struct vd_uarg *uarg)
{
	struct viaduct_bind_mw *b = karg;
	struct vd_mr *slot;
	u32 stag;
	int ret;

	if (b->reserved[0] || b->reserved[1] || b->reserved[2] || b->reserved2)
		return -EINVAL;
	slot = vd_uobj_get_mw(&ctx->objs, b->mw_handle);
	if (!slot)
		return -ENOENT;
	/* a type-2 window is bound to a QP: through its send queue only */
	if (slot->type != VD_STAG_MW1) {
		vd_mr_put(slot);
		return -EINVAL;
	}
	/* unbound, the window's STag is the one ALLOC_MW gave */
	stag = b->length ? vd_stag_make(vd_stag_index(slot->stag), b->key) :
			   slot->stag;
	ret = vd_mw_bind(&vd->tpt, slot->pd, 0, stag, b->mr_stag, b->addr,
			 b->length, b->access);
	vd_mr_put(slot);
	/* the window went away meanwhile (DEALLOC_MW): no such window */
	if (ret == -EPERM)
		return -ENOENT;
	if (ret)
		return ret;
	b->stag = stag;
	return vd_uarg_reply(uarg, b, sizeof(*b));
}
