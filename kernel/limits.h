/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-context object limits: how many PDs, MRs, CQs, QPs and memory windows
 * one context (an open file of /dev/viaduct) may hold. Module parameters
 * ctx_max_pd, ctx_max_mr, ctx_max_cq, ctx_max_qp and ctx_max_mw (0644); the
 * defaults are the device limits QUERY_DEVICE reports (windows: max_mr,
 * whose STags they share). Documentation/security.rst lists every limit.
 */
#ifndef _VD_LIMITS_H
#define _VD_LIMITS_H

#include <linux/types.h>

int vd_limit_objs(u32 res_type, long held);
int vd_limit_mws(long held);

#endif /* _VD_LIMITS_H */
