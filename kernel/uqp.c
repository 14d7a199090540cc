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
#include "qp.h"
#include "uctx.h"
#include "uobj_priv.h"

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

/* A CQ of the table for a new QP: NULL for handle 0 (a private ring). */
static int find_cq(struct vd_uobj_table *t, u32 handle, struct vd_cq **cq)
{
	struct vd_uobj *u;

	*cq = NULL;
	if (!handle)
		return 0;
	u = vd_uobj_find(t, handle, VD_UOBJ_CQ);
	if (!u)
		return -ENOENT;
	*cq = u->cq;
	return 0;
}

/* The SRQ of the table a new QP receives from: NULL for handle 0. */
static int find_srq(struct vd_uobj_table *t, u32 handle, struct vd_srq **srq)
{
	struct vd_uobj *u;

	*srq = NULL;
	if (!handle)
		return 0;
	u = vd_uobj_find(t, handle, VD_UOBJ_SRQ);
	if (!u)
		return -ENOENT;
	*srq = u->srq;
	return 0;
}

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
	struct vd_uobj *pdu;
	struct vd_qp *qp;
	int ret;

	pdu = vd_uobj_find(t, a->pd_handle, VD_UOBJ_PD);
	if (!pdu)
		return -ENOENT;
	ret = find_cq(t, a->send_cq, &init.send_cq);
	if (!ret)
		ret = find_cq(t, a->recv_cq, &init.recv_cq);
	if (!ret)
		ret = find_srq(t, a->srq_handle, &init.srq);
	if (ret)
		return ret;
	init.pd = pdu->pd;
	u->pd_handle = a->pd_handle;
	qp = vd_qp_create(&init);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
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
