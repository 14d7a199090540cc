// SPDX-License-Identifier: GPL-2.0
/*
 * The memory commands of /dev/viaduct that create and change MRs: REG_MR
 * (a region of the caller's memory, pinned now) and ALLOC_MR (an empty
 * fast-register region the send queue fills) give an MR handle that
 * DEREG_MR releases; MODIFY_MR changes a REG_MR region's rights and PD in
 * place; the table's side of creating MRs and windows is here too, over
 * uobj.c's handle table. Documentation/memory.rst.
 */
#include <linux/err.h>
#include <linux/mutex.h>

#include "device.h"
#include "pd.h"
#include "tpt.h"
#include "uctx.h"
#include "uobj_priv.h"

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

/*
 * MODIFY_MR: the rights and/or the PD of a REG_MR region, in place. The
 * change is made under the table's lock, so that one change of an MR runs
 * at a time, none runs with its DEREG_MR, and the reports see the MR's PD
 * and PD handle agree; the wait for the copies checked before it is not
 * (the lock holds up the context's other commands).
 */
long vd_umr_modify_mr(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		      const struct vd_uarg *uarg)
{
	const u32 known = VIADUCT_MODIFY_MR_ACCESS | VIADUCT_MODIFY_MR_PD;
	struct viaduct_modify_mr *m = karg;
	struct vd_uobj_table *t = &ctx->objs;
	struct vd_uobj *u, *pdu = NULL;
	struct vd_mr *wait = NULL;
	long ret = -ENOENT;

	if (!m->flags || (m->flags & ~known))
		return -EINVAL;
	if (!(m->flags & VIADUCT_MODIFY_MR_ACCESS) && m->access)
		return -EINVAL;
	if (!(m->flags & VIADUCT_MODIFY_MR_PD) && m->pd_handle)
		return -EINVAL;

	mutex_lock(&t->lock);
	u = vd_uobj_find(t, m->handle, VD_UOBJ_MR);
	if (!u)
		goto out;
	if (m->flags & VIADUCT_MODIFY_MR_PD) {
		pdu = vd_uobj_find(t, m->pd_handle, VD_UOBJ_PD);
		if (!pdu)
			goto out;
	}
	ret = vd_mr_modify(u->mr, pdu ? pdu->pd : u->mr->pd,
			   m->flags & VIADUCT_MODIFY_MR_ACCESS ? m->access :
			   u->mr->access);
	if (ret < 0)
		goto out;
	if (pdu)
		u->pd_handle = m->pd_handle;
	if (ret)
		wait = vd_mr_get(u->mr);
	ret = 0;
out:
	mutex_unlock(&t->lock);
	if (wait) {
		vd_mr_wait_uses(wait);
		vd_mr_put(wait);
	}
	return ret;
}

/*
 * The MR create commands (umr.c) and ALLOC_MW (umw.c, @req->window):
 * @req->make creates the region or window on the PD @req->pd_handle
 * names, without the table's lock (it pins pages); its STag goes to
 * *@req->stag, which is in the reply.
 */
static int build_mr(struct vd_uobj_table *t, struct vd_uobj *u, void *reply,
		    void *arg)
{
	const struct vd_uobj_mr_req *req = arg;
	struct vd_pd *pd;
	struct vd_mr *mr;

	pd = vd_uobj_hold(t, req->pd_handle, VD_UOBJ_PD);
	if (!pd)
		return -ENOENT;
	/* attaches to the PD, or fails if it was destroyed meanwhile */
	mr = req->make(req->vd, pd, reply);
	vd_pd_put(pd);
	if (IS_ERR(mr))
		return PTR_ERR(mr);
	u->mr = mr;
	u->pd_handle = req->pd_handle;
	*req->stag = mr->stag;
	return 0;
}

long vd_uobj_create_mr(struct vd_uctx *ctx, const struct vd_uobj_mr_req *req,
		       void *reply, u32 *handle, size_t size,
		       const struct vd_uarg *uarg)
{
	return vd_uobj_create(&ctx->objs,
			      req->window ? VD_UOBJ_MW : VD_UOBJ_MR, build_mr,
			      (void *)req, reply, handle, size, uarg);
}
