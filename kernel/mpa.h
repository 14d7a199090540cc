/* SPDX-License-Identifier: GPL-2.0 */
/*
 * MPA negotiation (RFC 5044 section 7, RFC 6581): what a request offers and
 * what a reply settles, as pure functions of the frames and of our own
 * parameters. No sockets, no ids, no locks: the connection manager (cm.c)
 * sends and receives the frames (iwarp.c encodes and parses them) and calls
 * these to decide. KUnit: tests/mpa_test.c.
 *
 * API
 * ---
 *   vd_mpa_pd_max(enhanced)
 *       The most private data of the ULP a frame of ours may carry: an
 *       enhanced frame spends four bytes of it on the IRD/ORD words.
 *   vd_mpa_request(ours, info)
 *       The request an initiator sends: revision 2 and enhanced unless
 *       @ours asks for revision 1; with VIADUCT_CM_F_P2P every RTR we can
 *       take is offered (the responder picks one).
 *   vd_mpa_reply_info(req, reject, flags, info)
 *       The header of a responder's reply to @req: the request's revision
 *       unless @flags asks for revision 1, enhanced if both are revision 2
 *       and the request was enhanced.
 *   vd_mpa_accept(req, ours, info, mpa)
 *       Responder: completes the accepting reply @info (from
 *       vd_mpa_reply_info()) and the parameters @mpa the stream will use.
 *       CRC if either side asked; our ORD no more than the initiator's IRD;
 *       an RTR both offered, else client-server after all.
 *   vd_mpa_settle(ours, rep, mpa)
 *       Initiator: checks the reply @rep against what we asked and fills
 *       @mpa. -EPROTO: a revision we did not offer, or P2P without one of
 *       our RTRs; -ECONNREFUSED: the responder rejected (@mpa has the
 *       revision and the peer's IRD/ORD); 0: @mpa is final.
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
