// SPDX-License-Identifier: GPL-2.0
/*
 * What a user context's handle table reports (uobj.h): the description of
 * each published object and the table's numbers, for the netlink family's
 * RES_GET and STATS_GET. The table itself is uobj.c's.
 */
#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/string.h>
#include <linux/xarray.h>

#include "cq.h"
#include "pd.h"
#include "qp.h"
#include "tpt.h"
#include "uobj_priv.h"

static void uobj_describe(const struct vd_uobj *u, u32 handle,
			  struct vd_uobj_info *info)
{
	struct viaduct_query_qp q;
	struct vd_qp *qp;

	memset(info, 0, sizeof(*info));
	info->type = u->type + 1;
	info->handle = handle;
	info->pd_handle = u->pd_handle;
	switch (u->type) {
	case VD_UOBJ_PD:
		info->pdn = u->pd->pdn;
		break;
	case VD_UOBJ_MR:
		info->pdn = u->mr->pd->pdn;
		info->mr.stag = u->mr->stag;
		info->mr.access = u->mr->access;
		info->mr.length = u->mr->length;
		info->mr.pinned_pages = vd_uobj_pinned_pages(u);
		break;
	case VD_UOBJ_CQ:
		info->cq.entries = vd_cq_entries(u->cq);
		break;
	case VD_UOBJ_QP:
		qp = u->qp;
		vd_qp_query(qp, &q);
		info->pdn = qp->pd->pdn;
		info->qp.qpn = q.qpn;
		info->qp.state = q.state;
		info->qp.flags = qp->flags;
		info->qp.sq_depth = q.sq_depth;
		info->qp.rq_depth = q.rq_depth;
		/* fixed at creation, and the table holds the QP */
		info->qp.send_cq = qp->sq.private_cq ? 0 : qp->sq.cq->handle;
		info->qp.recv_cq = qp->rq.private_cq ? 0 : qp->rq.cq->handle;
		break;
	case VD_UOBJ_CM_ID:
	case VD_UOBJ_SRQ:
	case VD_UOBJ_MW:
		/* never reported: the walk skips them */
		break;
	}
}

/**
 * vd_uobj_table_walk() - describe the published objects, for reports
 * @t: the table
 * @handle: the lowest handle to visit; set to the handle of the object
 *          that stopped the walk
 * @type: VIADUCT_RES_* to visit only that type, or 0 for every type
 * @fn: called with the description of each object, in handle order;
 *      non-zero stops the walk
 * @arg: passed to @fn
 *
 * PDs, MRs, CQs and QPs are reported; CM ids, SRQs and reserved handles
 * are skipped. @fn runs with @lock held: the objects cannot go away and
 * @fn must not sleep. Never call it on a table that
 * vd_uobj_table_destroy() may be destroying (vd_uctx_walk() sees to
 * that).
 *
 * Context: Process context.
 * Return: the non-zero value of @fn that stopped the walk, leaving the
 * object's handle in *@handle; 0 once every object was visited.
 */
int vd_uobj_table_walk(struct vd_uobj_table *t, u32 *handle, u32 type,
		       int (*fn)(const struct vd_uobj_info *info, void *arg),
		       void *arg)
{
	struct vd_uobj_info info;
	unsigned long h = *handle;
	struct vd_uobj *u;
	int ret = 0;

	mutex_lock(&t->lock);
	/* reserved handles hold no entry yet, so this skips them */
	xa_for_each_start(&t->handles, h, u, *handle) {
		if (u->type >= VD_UOBJ_NR_TYPES ||
		    (type && u->type + 1 != type))
			continue;
		uobj_describe(u, h, &info);
		ret = fn(&info, arg);
		if (ret) {
			*handle = h;
			break;
		}
	}
	mutex_unlock(&t->lock);
	return ret;
}

/**
 * vd_uobj_table_counts() - the table's numbers, for reports
 * @t: the table
 * @counts: filled with the published objects by type, the pages their MRs
 *          pin and the DOORBELL commands so far
 *
 * Lockless: each number on its own is one the table had.
 *
 * Context: Any context.
 */
void vd_uobj_table_counts(struct vd_uobj_table *t,
			  struct vd_uobj_counts *counts)
{
	int i;

	for (i = 0; i < VD_UOBJ_NR_TYPES; i++)
		counts->objs[i] = atomic_long_read(&t->nr_objs[i]);
	counts->pinned_pages = atomic_long_read(&t->pinned_pages);
	counts->doorbells = atomic64_read(&t->doorbells);
}
