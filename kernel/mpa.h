/* SPDX-License-Identifier: GPL-2.0 */
/*
 * MPA negotiation (RFC 5044 section 7, RFC 6581): what a request offers and
 * what a reply settles, as pure functions of the frames and of our own
 * parameters. No sockets, no ids, no locks: the connection manager (cm.c)
 * sends and receives the frames (iwarp.c encodes and parses them) and calls
 * these to decide. KUnit: tests/mpa_test.c.
 *
 * The functions are documented (kernel-doc) at their definitions in mpa.c.
 *
 * "ours": the VIADUCT_CM_F_* flags of the command and the IRD/ORD the QP
 * will use (already capped at VD_MAX_IRD/VD_MAX_ORD).
 */
#ifndef _VD_MPA_H
#define _VD_MPA_H

#include <linux/types.h>

#include "conn.h"
#include "iwarp.h"

struct vd_mpa_ours {
	u32 flags;		/* VIADUCT_CM_F_* */
	u32 ird;
	u32 ord;
	u32 pd_len;
};

/* Private data of the ULP in an enhanced frame: the IRD/ORD words go first. */
#define VD_MPA_V2_PD_MAX	(VD_MPA_MAX_PD - sizeof(struct vd_mpa_v2))

u32 vd_mpa_pd_max(bool enhanced);
void vd_mpa_request(const struct vd_mpa_ours *ours, struct vd_mpa_info *info);
void vd_mpa_reply_info(const struct vd_mpa_info *req, bool reject, u32 flags,
		       struct vd_mpa_info *info);
void vd_mpa_accept(const struct vd_mpa_info *req,
		   const struct vd_mpa_ours *ours, struct vd_mpa_info *info,
		   struct vd_mpa_params *mpa);
int vd_mpa_settle(const struct vd_mpa_ours *ours,
		  const struct vd_mpa_info *rep, struct vd_mpa_params *mpa);

#endif /* _VD_MPA_H */
