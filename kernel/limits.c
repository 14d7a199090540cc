// SPDX-License-Identifier: GPL-2.0
/*
 * Per-context object limits (limits.h), enforced by the create commands of
 * uobj.c.
 */
#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <viaduct/viaduct-nl.h>

#include "limits.h"
#include "viaduct.h"

static unsigned int ctx_max_pd = VD_MAX_PD;
module_param(ctx_max_pd, uint, 0644);
MODULE_PARM_DESC(ctx_max_pd, "Protection domains per context");
static unsigned int ctx_max_mr = VD_MAX_MR;
module_param(ctx_max_mr, uint, 0644);
MODULE_PARM_DESC(ctx_max_mr, "Memory regions per context");
static unsigned int ctx_max_cq = VD_MAX_CQ;
module_param(ctx_max_cq, uint, 0644);
MODULE_PARM_DESC(ctx_max_cq, "Completion queues per context");
static unsigned int ctx_max_qp = VD_MAX_QP;
module_param(ctx_max_qp, uint, 0644);
MODULE_PARM_DESC(ctx_max_qp, "Queue pairs per context");
static unsigned int ctx_max_mw = VD_MAX_MR;
module_param(ctx_max_mw, uint, 0644);
MODULE_PARM_DESC(ctx_max_mw, "Memory windows per context");

/**
 * vd_limit_objs() - whether a context may create one more object
 * @res_type: VIADUCT_RES_PD, _MR, _CQ or _QP
 * @held: how many of that type the context holds now
 *
 * Return: 0, or -ENOSPC when @held is at the type's limit. Other types
 * have no limit here.
 */
int vd_limit_objs(u32 res_type, long held)
{
	static const unsigned int *const limit[] = {
		[VIADUCT_RES_PD] = &ctx_max_pd,
		[VIADUCT_RES_MR] = &ctx_max_mr,
		[VIADUCT_RES_CQ] = &ctx_max_cq,
		[VIADUCT_RES_QP] = &ctx_max_qp,
	};

	if (res_type >= ARRAY_SIZE(limit) || !limit[res_type])
		return 0;
	return held >= READ_ONCE(*limit[res_type]) ? -ENOSPC : 0;
}

/**
 * vd_limit_mws() - whether a context may allocate one more memory window
 * @held: how many windows the context holds now
 *
 * Windows are no reported resource type, so they have a limit of their
 * own (module parameter ctx_max_mw).
 *
 * Return: 0, or -ENOSPC when @held is at the limit.
 */
int vd_limit_mws(long held)
{
	return held >= READ_ONCE(ctx_max_mw) ? -ENOSPC : 0;
}
