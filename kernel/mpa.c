// SPDX-License-Identifier: GPL-2.0
/*
 * MPA negotiation: request, reply and the parameters of the stream, as pure
 * functions (mpa.h). Documentation/cm.rst has the protocol choices.
 */
#include <kunit/visibility.h>
#include <linux/errno.h>
#include <linux/minmax.h>
#include <linux/string.h>
#include <viaduct/viaduct-abi.h>

#include "mpa.h"

/* The RTR both offered, in our order of preference; NONE if none. */
static enum vd_rtr pick_rtr(u8 rtr)
{
	if (rtr & VD_MPA_RTR_WRITE)
		return VD_RTR_WRITE;
	if (rtr & VD_MPA_RTR_READ)
		return VD_RTR_READ;
	if (rtr & VD_MPA_RTR_SEND)
		return VD_RTR_SEND;
	return VD_RTR_NONE;
}

static u8 rtr_bit(enum vd_rtr rtr)
{
	switch (rtr) {
	case VD_RTR_WRITE:
		return VD_MPA_RTR_WRITE;
	case VD_RTR_READ:
		return VD_MPA_RTR_READ;
	case VD_RTR_SEND:
		return VD_MPA_RTR_SEND;
	default:
		return 0;
	}
}

/**
 * vd_mpa_pd_max() - the most private data a frame of ours may carry
 * @enhanced: the frame carries the IRD/ORD words (RFC 6581)
 *
 * Return: bytes of the ULP's private data; an enhanced frame spends four of
 * the 512 on the IRD/ORD words.
 */
u32 vd_mpa_pd_max(bool enhanced)
{
	return enhanced ? VD_MPA_V2_PD_MAX : VD_MPA_MAX_PD;
}
EXPORT_SYMBOL_IF_KUNIT(vd_mpa_pd_max);

/**
 * vd_mpa_request() - the request an initiator sends
 * @ours: our flags (VIADUCT_CM_F_*), IRD/ORD and private data length
 * @info: filled with the request
 *
 * Revision 2 and enhanced unless @ours asks for revision 1; with
 * VIADUCT_CM_F_P2P every RTR we can take is offered (the responder picks).
 * Immediate data is always offered, in either revision.
 */
void vd_mpa_request(const struct vd_mpa_ours *ours, struct vd_mpa_info *info)
{
	memset(info, 0, sizeof(*info));
	info->crc = ours->flags & VIADUCT_CM_F_CRC;
	info->rev = VD_MPA_REV1;
	info->pd_len = ours->pd_len;
	/* in the header, not the private data: the peer's ULP never sees it */
	info->imm = true;
	if (ours->flags & VIADUCT_CM_F_MPA_V1)
		return;
	info->rev = VD_MPA_REV2;
	info->enhanced = true;
	info->ird = ours->ird;
	info->ord = ours->ord;
	if (ours->flags & VIADUCT_CM_F_P2P) {
		info->p2p = true;
		info->rtr = VD_MPA_RTR_SEND | VD_MPA_RTR_WRITE |
			    VD_MPA_RTR_READ;
	}
}
EXPORT_SYMBOL_IF_KUNIT(vd_mpa_request);

/**
 * vd_mpa_reply_info() - the header of a responder's reply
 * @req: the initiator's request, as parsed
 * @reject: the reply rejects
 * @flags: the responder's VIADUCT_CM_F_* (only MPA_V1 matters here)
 * @info: filled with the reply's header
 *
 * The request's revision unless @flags asks for revision 1 (never higher);
 * enhanced if both are revision 2 and the request was enhanced.
 */
void vd_mpa_reply_info(const struct vd_mpa_info *req, bool reject, u32 flags,
		       struct vd_mpa_info *info)
{
	memset(info, 0, sizeof(*info));
	info->reply = true;
	info->reject = reject;
	info->rev = req->rev == VD_MPA_REV2 && !(flags & VIADUCT_CM_F_MPA_V1) ?
		    VD_MPA_REV2 : VD_MPA_REV1;
	info->enhanced = req->enhanced && info->rev == VD_MPA_REV2;
}
EXPORT_SYMBOL_IF_KUNIT(vd_mpa_reply_info);

/**
 * vd_mpa_accept() - what an accepting responder settles
 * @req: the initiator's request, as parsed
 * @ours: the responder's flags, IRD and ORD
 * @info: the reply from vd_mpa_reply_info(), completed here
 * @mpa: the parameters the stream will use (all but the peer's IRD/ORD
 *       and @active, which the caller knows)
 *
 * CRC in both directions if either side asked (RFC 5044); immediate data
 * if the initiator offered it; our ORD no more than the initiator's IRD;
 * the RTR both offered, in our order of preference (Write, Read, Send),
 * else client-server after all.
 */
void vd_mpa_accept(const struct vd_mpa_info *req,
		   const struct vd_mpa_ours *ours, struct vd_mpa_info *info,
		   struct vd_mpa_params *mpa)
{
	mpa->revision = info->rev;
	mpa->enhanced = info->enhanced;
	/* CRC in both directions if either side asked for it (RFC 5044) */
	mpa->crc_tx = req->crc || ours->flags & VIADUCT_CM_F_CRC;
	mpa->crc_rx = mpa->crc_tx;
	info->crc = mpa->crc_tx;
	/* immediate data only if the initiator offered it */
	mpa->imm = req->imm;
	info->imm = mpa->imm;
	mpa->ird = ours->ird;
	mpa->ord = ours->ord;
	mpa->rtr = VD_RTR_NONE;
	if (!info->enhanced)
		return;
	/* relaxed: read no more than the initiator will serve */
	mpa->ord = min_t(u32, mpa->ord, req->ird);
	info->ird = mpa->ird;
	info->ord = mpa->ord;
	if (req->p2p && ours->flags & VIADUCT_CM_F_P2P) {
		mpa->rtr = pick_rtr(req->rtr);
		/* no RTR in common: client-server after all */
		info->p2p = mpa->rtr != VD_RTR_NONE;
		info->rtr = rtr_bit(mpa->rtr);
	}
}
EXPORT_SYMBOL_IF_KUNIT(vd_mpa_accept);

/**
 * vd_mpa_settle() - what an initiator makes of the reply
 * @ours: the flags, IRD and ORD of our request
 * @rep: the responder's reply, as parsed
 * @mpa: the parameters the stream will use
 *
 * Immediate data only if the reply takes our offer (IMM_ACCEPT; an echo
 * of the offer is not that).
 *
 * Return: 0 when @mpa is final; -ECONNREFUSED when the responder rejected
 * (@mpa then has the revision and the peer's IRD/ORD); -EPROTO for a
 * revision we did not offer, or P2P without one of our RTRs.
 */
int vd_mpa_settle(const struct vd_mpa_ours *ours,
		  const struct vd_mpa_info *rep, struct vd_mpa_params *mpa)
{
	bool v1 = ours->flags & VIADUCT_CM_F_MPA_V1;

	/*
	 * A revision 1 responder may answer a revision 2 request (RFC 6581
	 * section 5), never the other way round.
	 */
	if (rep->rev > (v1 ? VD_MPA_REV1 : VD_MPA_REV2))
		return -EPROTO;
	mpa->revision = rep->rev;
	mpa->enhanced = rep->enhanced;
	mpa->peer_ird = rep->ird;
	mpa->peer_ord = rep->ord;
	if (rep->reject)
		return -ECONNREFUSED;
	mpa->crc_tx = rep->crc || ours->flags & VIADUCT_CM_F_CRC;
	mpa->crc_rx = mpa->crc_tx;
	/* we always offer it: the responder's answer decides */
	mpa->imm = rep->imm;
	mpa->ird = ours->ird;
	mpa->ord = ours->ord;
	mpa->rtr = VD_RTR_NONE;
	if (!rep->enhanced)
		return 0;
	/* relaxed: read no more than the responder will serve */
	mpa->ord = min_t(u32, mpa->ord, rep->ird);
	if (rep->p2p && ours->flags & VIADUCT_CM_F_P2P) {
		mpa->rtr = pick_rtr(rep->rtr);
		/* P2P without one of the RTRs we offered */
		if (mpa->rtr == VD_RTR_NONE)
			return -EPROTO;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(vd_mpa_settle);
