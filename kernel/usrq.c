// SPDX-License-Identifier: GPL-2.0
/*
 * The shared receive queue commands of a user context: CREATE_SRQ,
 * MODIFY_SRQ, QUERY_SRQ and DESTROY_SRQ (include/uapi/viaduct/viaduct-abi.h).
 * The handle table's side is uobj.c's (vd_uobj_add_srq() and friends), the
 * SRQ itself srq.c's.
 */
#include <linux/errno.h>

#include "srq.h"
#include "uctx.h"
#include "uobj.h"

long vd_usrq_create(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		    const struct vd_uarg *uarg)
{
	return vd_uobj_add_srq(&ctx->objs, karg, uarg);
}

long vd_usrq_modify(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		    const struct vd_uarg *uarg)
{
	struct viaduct_modify_srq *m = karg;
	struct vd_srq *srq;
	long ret;

	srq = vd_uobj_get_srq(&ctx->objs, m->handle);
	if (!srq)
		return -ENOENT;
	ret = vd_srq_modify(srq, m);
	vd_srq_put(srq);
	return ret;
}

long vd_usrq_query(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		   const struct vd_uarg *uarg)
{
	struct viaduct_query_srq *q = karg;
	struct vd_srq *srq;

	if (q->reserved)
		return -EINVAL;
	srq = vd_uobj_get_srq(&ctx->objs, q->handle);
	if (!srq)
		return -ENOENT;
	vd_srq_query(srq, q);
	vd_srq_put(srq);
	return vd_uarg_reply(uarg, q, sizeof(*q));
}

long vd_usrq_destroy(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		     const struct vd_uarg *uarg)
{
	struct viaduct_handle *h = karg;

	if (h->reserved)
		return -EINVAL;
	return vd_uobj_remove_srq(&ctx->objs, h->handle);
}
