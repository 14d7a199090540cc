// SPDX-License-Identifier: GPL-2.0
/*
 * The shared receive queue commands of a user context: CREATE_SRQ,
 * MODIFY_SRQ, QUERY_SRQ and DESTROY_SRQ (include/uapi/viaduct/viaduct-abi.h).
 * The table's side of them (vd_uobj_add_srq() and friends) is here, over
 * uobj.c's table; the SRQ itself is srq.c's.
 */
#include <linux/err.h>
#include <linux/errno.h>

#include "pd.h"
#include "srq.h"
#include "uctx.h"
#include "uobj.h"
#include "uobj_priv.h"

/* The table's side of the SRQ commands. */
static int build_srq(struct vd_uobj_table *t, struct vd_uobj *u, void *reply,
		     void *arg)
{
	struct viaduct_create_srq *a = reply;
	struct vd_srq *srq;
	struct vd_pd *pd;

	pd = vd_uobj_hold(t, a->pd_handle, VD_UOBJ_PD);
	if (!pd)
		return -ENOENT;
	/* attaches to the PD, or fails if it was destroyed meanwhile */
	srq = vd_srq_create(pd, t->aq, a->handle, a);
	vd_pd_put(pd);
	if (IS_ERR(srq))
		return PTR_ERR(srq);
	u->srq = srq;
	u->pd_handle = a->pd_handle;
	return vd_uobj_add_key(t, u, srq->mem, &a->mmap_key);
}

/**
 * vd_uobj_add_srq() - CREATE_SRQ's table work
 * @t: the table
 * @a: the request in, the reply out
 * @uarg: the caller's argument
 *
 * Makes the SRQ on the PD that @a->pd_handle names, enters its ring as an
 * mmap key, copies the reply out and only then publishes the handle.
 *
 * Context: Process context.
 * Return: 0, or a negative errno with nothing left behind.
 */
long vd_uobj_add_srq(struct vd_uobj_table *t, struct viaduct_create_srq *a,
		     const struct vd_uarg *uarg)
{
	return vd_uobj_create(t, VD_UOBJ_SRQ, build_srq, NULL, a, &a->handle,
			      sizeof(*a), uarg);
}

/**
 * vd_uobj_get_srq() - the SRQ a handle names
 * @t: the table
 * @handle: the handle
 *
 * Context: Any context; takes the xarray's spinlock.
 * Return: the SRQ, referenced, or NULL.
 */
struct vd_srq *vd_uobj_get_srq(struct vd_uobj_table *t, u32 handle)
{
	return vd_uobj_get(t, handle, VD_UOBJ_SRQ);
}

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
