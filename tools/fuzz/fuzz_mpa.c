// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: MPA connection setup, from the module's own iwarp.c
 * (frame parsing and building) and mpa.c (negotiation). The input is our
 * own parameters (flags, IRD, ORD: the first 5 bytes) and a Request or
 * Reply frame from the peer (the rest). Both roles run:
 *   - responder: the frame is parsed as a Request; if valid, the Reply is
 *     settled by vd_mpa_accept(), built, and parsed back;
 *   - initiator: the frame is parsed as a Reply and vd_mpa_settle()
 *     decides.
 * Oracles: the settled parameters never exceed what either side offered
 * (ORD <= the peer's IRD, IRD and ORD <= ours), CRC is the same both
 * ways, an RTR is one both offered, and a Reply we build parses back to
 * what was meant.
 */
#include <viaduct/viaduct-abi.h>

#include "../../kernel/mpa.h"
#include "../../kernel/viaduct.h"

static void check_params(const struct vd_mpa_ours *ours, const struct vd_mpa_info *peer,
			 const struct vd_mpa_params *mpa)
{
	if (mpa->crc_tx != mpa->crc_rx)
		abort();
	if (mpa->ird > ours->ird || mpa->ord > ours->ord)
		abort();
	if (mpa->enhanced && mpa->ord > peer->ird)
		abort();
	if (mpa->rtr != VD_RTR_NONE && (!peer->p2p || !(ours->flags & VIADUCT_CM_F_P2P)))
		abort();
}

static void responder(const struct vd_mpa_ours *ours, const u8 *f, size_t size)
{
	struct vd_mpa_info req, rep, back;
	struct vd_mpa_params mpa = { 0 };
	u8 buf[sizeof(struct vd_mpa_rr) + sizeof(struct vd_mpa_v2)];
	int n;

	if (vd_mpa_rr_parse((const struct vd_mpa_rr *)f, false, &req) != VD_IW_OK)
		return;
	if (req.enhanced) {
		if (size < sizeof(struct vd_mpa_rr) + sizeof(struct vd_mpa_v2))
			return;
		vd_mpa_v2_parse((const struct vd_mpa_v2 *)(f + sizeof(struct vd_mpa_rr)), &req);
	}
	vd_mpa_reply_info(&req, false, ours->flags, &rep);
	vd_mpa_accept(&req, ours, &rep, &mpa);
	check_params(ours, &req, &mpa);
	if (mpa.rtr != VD_RTR_NONE && !rep.p2p)
		abort();
	rep.pd_len = 0;
	n = vd_mpa_rr_build(buf, sizeof(buf), &rep);
	if (n < 0 || (size_t)n > sizeof(buf))
		abort();
	if (vd_mpa_rr_parse((const struct vd_mpa_rr *)buf, true, &back) != VD_IW_OK)
		abort();
	if (back.enhanced)
		vd_mpa_v2_parse((const struct vd_mpa_v2 *)(buf + sizeof(struct vd_mpa_rr)), &back);
	if (back.crc != rep.crc || back.rev != rep.rev || back.enhanced != rep.enhanced ||
	    back.reject || (rep.enhanced && (back.ird != rep.ird || back.ord != rep.ord ||
					     back.p2p != rep.p2p || back.rtr != rep.rtr)))
		abort();
}

static void initiator(const struct vd_mpa_ours *ours, const u8 *f, size_t size)
{
	struct vd_mpa_params mpa = { 0 };
	struct vd_mpa_info rep;
	int ret;

	if (vd_mpa_rr_parse((const struct vd_mpa_rr *)f, true, &rep) != VD_IW_OK)
		return;
	if (rep.enhanced) {
		if (size < sizeof(struct vd_mpa_rr) + sizeof(struct vd_mpa_v2))
			return;
		vd_mpa_v2_parse((const struct vd_mpa_v2 *)(f + sizeof(struct vd_mpa_rr)), &rep);
	}
	ret = vd_mpa_settle(ours, &rep, &mpa);
	if (ret != 0 && ret != -ECONNREFUSED && ret != -EPROTO)
		abort();
	if (ret == -ECONNREFUSED && !rep.reject)
		abort();
	if (!ret)
		check_params(ours, &rep, &mpa);
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	struct vd_mpa_ours ours = { 0 };

	if (size < 5 + sizeof(struct vd_mpa_rr))
		return 0;
	ours.flags = data[0] & (VIADUCT_CM_F_CRC | VIADUCT_CM_F_MPA_V1 | VIADUCT_CM_F_P2P);
	ours.ird = min_t(u32, (u32)data[1] << 8 | data[2], VD_MAX_IRD);
	ours.ord = min_t(u32, (u32)data[3] << 8 | data[4], VD_MAX_ORD);
	data += 5;
	size -= 5;
	responder(&ours, data, size);
	initiator(&ours, data, size);
	return 0;
}
