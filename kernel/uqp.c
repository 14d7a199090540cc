// SPDX-License-Identifier: GPL-2.0
/*
 * The queue pair commands of a user context: CREATE_QP, MODIFY_QP,
 * QUERY_QP and DOORBELL (include/uapi/viaduct/viaduct-abi.h); DESTROY_QP
 * is uobj.c's, with the other destroy commands. The handle table is
 * uobj.c's, the QP itself qp.c's.
 */
#include <linux/err.h>

#include "cq.h"
#include "device.h"
#include "pd.h"
#include "qp.h"
#include "srq.h"
#include "uctx.h"
#include "uobj_priv.h"

static_assert(offsetof(struct viaduct_create_qp, sq_ring_depth) ==
	      VIADUCT_CREATE_QP_SIZE_VER0);
static_assert(sizeof(struct viaduct_create_qp) == VIADUCT_CREATE_QP_SIZE_VER1);

/* Enters the rings of a new QP as mmap keys and fills their keys in @a. */
static int uobj_add_qp_keys(struct vd_uobj_table *t, struct vd_uobj *u,
			    struct viaduct_create_qp *a)
{
	struct vd_qp *qp = u->qp;
	int ret;

	ret = vd_uobj_add_key(t, u, qp->db_mem, &a->db_key);
	if (!ret)
		ret = vd_uobj_add_key(t, u, qp->sq.mem, &a->sq_key);
	/* a QP on an SRQ has no receive ring */
	if (!ret && qp->rq.mem)
		ret = vd_uobj_add_key(t, u, qp->rq.mem, &a->rq_key);
	/* private rings are never resized: their memory is fixed */
	if (!ret && qp->sq.private_cq)
		ret = vd_uobj_add_key(t, u, vd_cq_mem(qp->sq.cq), &a->scq_key);
	if (!ret && qp->rq.private_cq)
		ret = vd_uobj_add_key(t, u, vd_cq_mem(qp->rq.cq), &a->rcq_key);
	return ret;
}

/*
 * The CQ or SRQ of the table a new QP uses, referenced, in *@obj: NULL for
 * handle 0 (a private completion ring, an RQ of its own).
 */
static int hold_opt(struct vd_uobj_table *t, u32 handle,
		    enum vd_uobj_type type, void **obj)
{
	*obj = handle ? vd_uobj_hold(t, handle, type) : NULL;
	return handle && !*obj ? -ENOENT : 0;
}

/*
 * Without the table's lock (vd_uobj_create()): references keep the PD,
 * CQs and SRQ the QP will use, and the QP attaches to each, which fails
 * if one was destroyed meanwhile.
 */
static int build_qp(struct vd_uobj_table *t, struct vd_uobj *u, void *reply,
		    void *arg)
{
	struct viaduct_create_qp *a = reply;
	struct vd_device *vd = arg;
	struct vd_qp_init init = {
		.dev = vd,
		.aq = t->aq,
		.worker = &vd->db_worker,
		.handle = a->handle,
		.attr = a,
	};
	struct vd_qp *qp = ERR_PTR(-ENOENT);

	init.pd = vd_uobj_hold(t, a->pd_handle, VD_UOBJ_PD);
	if (init.pd &&
	    !hold_opt(t, a->send_cq, VD_UOBJ_CQ, (void **)&init.send_cq) &&
	    !hold_opt(t, a->recv_cq, VD_UOBJ_CQ, (void **)&init.recv_cq) &&
	    !hold_opt(t, a->srq_handle, VD_UOBJ_SRQ, (void **)&init.srq))
		qp = vd_qp_create(&init);
	vd_srq_put(init.srq);
	vd_cq_put(init.recv_cq);
	vd_cq_put(init.send_cq);
	vd_pd_put(init.pd);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	u->pd_handle = a->pd_handle;
	u->qp = qp;
	return uobj_add_qp_keys(t, u, a);
}

long vd_uobj_create_qp(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		       const struct vd_uarg *uarg)
{
	struct viaduct_create_qp *a = karg;

	return vd_uobj_create(&ctx->objs, VD_UOBJ_QP, build_qp, vd, a,
			      &a->handle, sizeof(*a), uarg);
}

long vd_uobj_modify_qp(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		       const struct vd_uarg *uarg)
{
	struct viaduct_modify_qp *m = karg;
	struct vd_qp *qp;
	long ret;

	qp = vd_uobj_get(&ctx->objs, m->handle, VD_UOBJ_QP);
	if (!qp)
		return -ENOENT;
	ret = vd_qp_modify(qp, m);
	vd_qp_put(qp);
	return ret;
}

long vd_uobj_query_qp(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		      const struct vd_uarg *uarg)
{
	struct viaduct_query_qp *q = karg;
	struct vd_qp *qp;

	if (q->reserved)
		return -EINVAL;
	qp = vd_uobj_get(&ctx->objs, q->handle, VD_UOBJ_QP);
	if (!qp)
		return -ENOENT;
	vd_qp_query(qp, q);
	vd_qp_put(qp);
	q->reserved = 0;
	return vd_uarg_reply(uarg, q, sizeof(*q));
}

long vd_uobj_doorbell(struct vd_uctx *ctx, struct vd_device *vd, void *karg,
		      const struct vd_uarg *uarg)
{
	struct viaduct_doorbell_req *d = karg;
	struct vd_qp *qp;
	long ret;

	qp = vd_uobj_get(&ctx->objs, d->handle, VD_UOBJ_QP);
	if (!qp)
		return -ENOENT;
	atomic64_inc(&ctx->objs.doorbells);
	ret = vd_qp_doorbell(qp, d->flags);
	vd_qp_put(qp);
	return ret;
}
