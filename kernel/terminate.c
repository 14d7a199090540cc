// SPDX-License-Identifier: GPL-2.0
/*
 * Terminate messages: the code table, the maps to it and to CQE statuses,
 * and the message itself. See terminate.h.
 *
 * The table follows the IANA RDDP registries (RFC 6580): RDMAP errors
 * from RFC 5040, DDP errors from RFC 5041, MPA errors from RFC 5044 and
 * RFC 6581.
 */
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <kunit/visibility.h>
#include <viaduct/viaduct-abi.h>

#include "terminate.h"

#define L_RDMAP		VD_TERM_LAYER_RDMAP
#define L_DDP		VD_TERM_LAYER_DDP
#define L_LLP		VD_TERM_LAYER_LLP

struct vd_term_entry {
	u8 layer;
	u8 etype;
	u8 ecode;
	u8 wc;		/* VIADUCT_WC_* for vd_term_wc_status() */
	const char *name;
};

#define E(l, t, c, w, n) { .layer = (l), .etype = (t), .ecode = (c), \
			   .wc = VIADUCT_WC_##w, .name = (n) }

static const struct vd_term_entry vd_term_table[VD_IW_NR] = {
	[VD_IW_LLP_LOST]	= E(L_LLP, 0, 0x01, TRANSPORT_ERR,
				    "MPA: TCP connection closed or lost"),
	[VD_IW_MPA_CRC]		= E(L_LLP, 0, 0x02, TRANSPORT_ERR,
				    "MPA: CRC error"),
	[VD_IW_MPA_FPDU]	= E(L_LLP, 0, 0x03, TRANSPORT_ERR,
				    "MPA: marker and ULPDU length mismatch"),
	[VD_IW_MPA_REQREP]	= E(L_LLP, 0, 0x04, TRANSPORT_ERR,
				    "MPA: invalid Request or Reply frame"),
	[VD_IW_MPA_MARKERS]	= E(L_LLP, 0, 0x04, TRANSPORT_ERR,
				    "MPA: invalid Request or Reply frame"),
	[VD_IW_MPA_CATASTROPHIC] = E(L_LLP, 0, 0x05, TRANSPORT_ERR,
				     "MPA: local catastrophic error"),
	[VD_IW_MPA_NO_IRD]	= E(L_LLP, 0, 0x06, TRANSPORT_ERR,
				    "MPA: insufficient IRD resources"),
	[VD_IW_MPA_NO_RTR]	= E(L_LLP, 0, 0x07, TRANSPORT_ERR,
				    "MPA: no matching RTR"),
	[VD_IW_DDP_CATASTROPHIC] = E(L_DDP, 0, 0x00, GENERAL_ERR,
				     "DDP: local catastrophic error"),
	[VD_IW_DDP_T_STAG]	= E(L_DDP, 1, 0x00, LOC_PROT_ERR,
				    "DDP tagged: invalid STag"),
	[VD_IW_DDP_T_BOUNDS]	= E(L_DDP, 1, 0x01, LOC_PROT_ERR,
				    "DDP tagged: base or bounds violation"),
	[VD_IW_DDP_T_NOT_ASSOC]	= E(L_DDP, 1, 0x02, LOC_PROT_ERR,
				    "DDP tagged: STag not associated with stream"),
	[VD_IW_DDP_T_TO_WRAP]	= E(L_DDP, 1, 0x03, LOC_PROT_ERR,
				    "DDP tagged: TO wrap"),
	[VD_IW_DDP_T_VERSION]	= E(L_DDP, 1, 0x04, REM_OP_ERR,
				    "DDP tagged: invalid DDP version"),
	[VD_IW_DDP_UT_QN]	= E(L_DDP, 2, 0x01, REM_OP_ERR,
				    "DDP untagged: invalid QN"),
	[VD_IW_DDP_UT_MSN_NOBUF] = E(L_DDP, 2, 0x02, REM_OP_ERR,
				     "DDP untagged: invalid MSN, no buffer"),
	[VD_IW_DDP_UT_MSN_RANGE] = E(L_DDP, 2, 0x03, REM_OP_ERR,
				     "DDP untagged: invalid MSN, out of range"),
	[VD_IW_DDP_UT_MO]	= E(L_DDP, 2, 0x04, REM_OP_ERR,
				    "DDP untagged: invalid MO"),
	[VD_IW_DDP_UT_TOO_LONG]	= E(L_DDP, 2, 0x05, LOC_LEN_ERR,
				    "DDP untagged: message too long for buffer"),
	[VD_IW_DDP_UT_VERSION]	= E(L_DDP, 2, 0x06, REM_OP_ERR,
				    "DDP untagged: invalid DDP version"),
	[VD_IW_RDMAP_CATASTROPHIC] = E(L_RDMAP, 0, 0x00, GENERAL_ERR,
				       "RDMAP: local catastrophic error"),
	[VD_IW_RDMAP_P_STAG]	= E(L_RDMAP, 1, 0x00, LOC_PROT_ERR,
				    "RDMAP protection: invalid STag"),
	[VD_IW_RDMAP_P_BOUNDS]	= E(L_RDMAP, 1, 0x01, LOC_PROT_ERR,
				    "RDMAP protection: base or bounds violation"),
	[VD_IW_RDMAP_P_RIGHTS]	= E(L_RDMAP, 1, 0x02, LOC_PROT_ERR,
				    "RDMAP protection: access rights violation"),
	[VD_IW_RDMAP_P_NOT_ASSOC] = E(L_RDMAP, 1, 0x03, LOC_PROT_ERR,
				      "RDMAP protection: STag not associated with stream"),
	[VD_IW_RDMAP_P_TO_WRAP]	= E(L_RDMAP, 1, 0x04, LOC_PROT_ERR,
				    "RDMAP protection: TO wrap"),
	[VD_IW_RDMAP_P_INVALIDATE] = E(L_RDMAP, 1, 0x09, LOC_PROT_ERR,
				       "RDMAP protection: STag cannot be invalidated"),
	[VD_IW_RDMAP_P_UNSPEC]	= E(L_RDMAP, 1, 0xff, LOC_PROT_ERR,
				    "RDMAP protection: unspecified"),
	[VD_IW_RDMAP_VERSION]	= E(L_RDMAP, 2, 0x05, REM_OP_ERR,
				    "RDMAP operation: invalid RDMAP version"),
	[VD_IW_RDMAP_OPCODE]	= E(L_RDMAP, 2, 0x06, REM_OP_ERR,
				    "RDMAP operation: unexpected opcode"),
	[VD_IW_RDMAP_STREAM]	= E(L_RDMAP, 2, 0x07, REM_OP_ERR,
				    "RDMAP operation: catastrophic, stream"),
	[VD_IW_RDMAP_GLOBAL]	= E(L_RDMAP, 2, 0x08, GENERAL_ERR,
				    "RDMAP operation: catastrophic, global"),
	[VD_IW_RDMAP_INVALIDATE] = E(L_RDMAP, 2, 0x09, LOC_PROT_ERR,
				     "RDMAP operation: STag cannot be invalidated"),
	[VD_IW_RDMAP_UNSPEC]	= E(L_RDMAP, 2, 0xff, REM_OP_ERR,
				    "RDMAP operation: unspecified"),
};

#undef E

/**
 * vd_term_code() - the Terminate code of one of our errors
 * @err: the error
 *
 * Return: its code; 0 (which reads as RDMAP catastrophic) for VD_IW_OK
 * and for values outside the table.
 */
u16 vd_term_code(enum vd_iw_err err)
{
	const struct vd_term_entry *e;

	if (err <= VD_IW_OK || err >= VD_IW_NR)
		return 0;
	e = &vd_term_table[err];
	return VD_TERM_CODE(e->layer, e->etype, e->ecode);
}
EXPORT_SYMBOL_IF_KUNIT(vd_term_code);

/**
 * vd_term_err() - our error for a Terminate code
 * @code: the code
 *
 * Where two errors share a code the first wins: VD_IW_MPA_REQREP, not
 * VD_IW_MPA_MARKERS.
 *
 * Return: the error, or VD_IW_NR if the code is not in the table.
 */
enum vd_iw_err vd_term_err(u16 code)
{
	enum vd_iw_err err;

	for (err = VD_IW_OK + 1; err < VD_IW_NR; err++)
		if (vd_term_code(err) == code)
			return err;
	return VD_IW_NR;
}
EXPORT_SYMBOL_IF_KUNIT(vd_term_err);

/**
 * vd_term_access_code() - the Terminate code of a failed TPT check
 * @status: the check's result
 * @tagged: the check was for the sink of tagged data (RDMA Write, Read
 *          Response), else for the source of an RDMA Read Request
 *
 * Return: the code through vd_access_term_ddp() for tagged data, through
 * vd_access_term_rdmap() for a Read Request's source.
 */
u16 vd_term_access_code(enum vd_access_status status, bool tagged)
{
	return tagged ? vd_access_term_ddp(status) :
			vd_access_term_rdmap(status);
}
EXPORT_SYMBOL_IF_KUNIT(vd_term_access_code);

/**
 * vd_term_name() - text of a Terminate code, for logs and viaductctl
 * @code: the code
 *
 * Return: a static string; "unknown" for a code not in the table.
 */
const char *vd_term_name(u16 code)
{
	enum vd_iw_err err = vd_term_err(code);

	return err < VD_IW_NR ? vd_term_table[err].name : "unknown";
}
EXPORT_SYMBOL_IF_KUNIT(vd_term_name);

/**
 * vd_term_wc_status() - CQE status of a local work request an error we detected ends
 * @err: the error
 *
 * Return: the table's status for @err; VIADUCT_WC_SUCCESS for VD_IW_OK;
 * VIADUCT_WC_GENERAL_ERR for values outside the table.
 */
u8 vd_term_wc_status(enum vd_iw_err err)
{
	if (err == VD_IW_OK)
		return VIADUCT_WC_SUCCESS;
	if (err >= VD_IW_NR)
		return VIADUCT_WC_GENERAL_ERR;
	return vd_term_table[err].wc;
}
EXPORT_SYMBOL_IF_KUNIT(vd_term_wc_status);

/**
 * vd_term_remote_wc_status() - CQE status of our work request that a received Terminate blames
 * @msg: the parsed Terminate
 *
 * Depends on the layer and error type only as an unordered pair, so a
 * peer that swaps the two nibbles (siw) gets the same answer.
 *
 * Return: a remote-error status (access, invalid request, operation), or
 * VIADUCT_WC_REM_TERMINATED for a layer and type it does not know.
 */
u8 vd_term_remote_wc_status(const struct vd_term_msg *msg)
{
	u8 a = vd_term_layer(msg->wire), b = vd_term_etype(msg->wire);
	u8 ecode = vd_term_ecode(msg->wire);
	u8 lo = min(a, b), hi = max(a, b);

	if (lo == 1 && hi == 1)		/* DDP tagged buffer */
		return VIADUCT_WC_REM_ACCESS_ERR;
	if (lo == 0 && hi == 1)		/* RDMAP protection, DDP catastr. */
		return VIADUCT_WC_REM_ACCESS_ERR;
	if (lo == 1 && hi == 2)		/* DDP untagged buffer */
		return ecode == 0x02 || ecode == 0x05 ?
		       VIADUCT_WC_REM_INV_REQ_ERR : VIADUCT_WC_REM_OP_ERR;
	if (lo == 0 && hi <= 2)		/* RDMAP operation, MPA */
		return VIADUCT_WC_REM_OP_ERR;
	return VIADUCT_WC_REM_TERMINATED;
}
EXPORT_SYMBOL_IF_KUNIT(vd_term_remote_wc_status);

static u16 vd_term_swap(u16 code)
{
	return VD_TERM_CODE(vd_term_etype(code), vd_term_layer(code),
			    vd_term_ecode(code));
}

static bool vd_term_known(u16 code)
{
	return vd_term_err(code) != VD_IW_NR;
}

/**
 * vd_term_fix_nibbles() - a received code with Layer and EType put right
 * @wire: the code as received
 *
 * Linux siw on little-endian hosts sends Layer and EType swapped (see
 * VD_TERM_SIW_M). Put them right where the code tells: a code that is not
 * in the table but is once swapped. A code that is valid both ways (RDMAP
 * or DDP catastrophic, DDP tagged, RDMAP invalid STag against DDP
 * catastrophic, MPA codes 5-7 against RDMAP remote operation) stays as
 * sent; nothing but reporting may depend on the two nibbles.
 *
 * Return: the code, swapped if only the swapped code is known.
 */
u16 vd_term_fix_nibbles(u16 wire)
{
	u16 swapped = vd_term_swap(wire);

	if (!vd_term_known(wire) && vd_term_known(swapped))
		return swapped;
	return wire;
}
EXPORT_SYMBOL_IF_KUNIT(vd_term_fix_nibbles);

/**
 * vd_term_hdrct() - the header control bits of a Terminate
 * @code: the Terminate's code
 * @bad: the first header bytes of the offending segment, or NULL (none at
 *       hand)
 * @bad_len: the bytes at @bad
 *
 * Headers are copied when they were received and can be read: not for MPA
 * errors (the FPDU may be corrupt), not for an RDMAP catastrophic error,
 * not for a DDP version error (the layout is unknown), not if @bad is too
 * short for the DDP header it starts. M and D go together: the DDP Segment
 * Length field precedes the copied DDP header. R adds the RDMA Read Request
 * header for RDMAP errors about a Read Request.
 *
 * Return: the M, D and R bits (VD_TERM_HDR_*): which copies vd_term_build()
 * appends.
 */
u32 vd_term_hdrct(u16 code, const void *bad, u32 bad_len)
{
	u8 layer = vd_term_layer(code), etype = vd_term_etype(code);
	u8 ecode = vd_term_ecode(code);
	const u8 *p = bad;
	u32 ddp_len;

	if (!bad || bad_len < 2)
		return 0;
	if (layer >= L_LLP)
		return 0;
	if (layer == L_RDMAP && etype == VD_TERM_RDMAP_CATASTROPHIC)
		return 0;
	if (layer == L_DDP && ((etype == VD_TERM_DDP_TAGGED && ecode == 0x04) ||
			       (etype == VD_TERM_DDP_UNTAGGED && ecode == 0x06)))
		return 0;
	if ((p[0] & VD_DDP_DV_MASK) != VD_DDP_VERSION)
		return 0;
	ddp_len = p[0] & VD_DDP_T ? VD_HDR_TAGGED : VD_HDR_UNTAGGED;
	if (bad_len < ddp_len)
		return 0;
	if (layer == L_RDMAP && !(p[0] & VD_DDP_T) &&
	    (p[1] & VD_RDMAP_OP_MASK) == VD_OP_READ_REQ &&
	    bad_len >= VD_HDR_READ_REQ)
		return VD_TERM_HDR_M | VD_TERM_HDR_D | VD_TERM_HDR_R;
	return VD_TERM_HDR_M | VD_TERM_HDR_D;
}
EXPORT_SYMBOL_IF_KUNIT(vd_term_hdrct);

/**
 * vd_term_build() - write a Terminate ULPDU
 * @ulpdu: where to write
 * @size: bytes at @ulpdu
 * @code: the Terminate's code
 * @msn: the MSN of the Terminate queue (VD_MSN_INITIAL: a stream carries
 *       one Terminate at most)
 * @bad: the offending segment's headers, or NULL; see vd_term_hdrct()
 * @bad_len: the bytes at @bad
 * @seg_len: the MPA ULPDU_Length of the offending segment, sent as the DDP
 *           Segment Length (saturated to 16 bits)
 *
 * Writes the DDP header, the control word and the copies of the offending
 * headers that vd_term_hdrct() asks for; vd_mpa_fpdu_seal() frames it.
 *
 * Return: the ULPDU's length; -EINVAL for a layer above LLP; -ENOSPC if
 * @size is too small.
 */
int vd_term_build(void *ulpdu, size_t size, u16 code, u32 msn,
		  const void *bad, u32 bad_len, u32 seg_len)
{
	struct vd_iw_hdr hdr = {
		.opcode = VD_OP_TERMINATE,
		.last = true,
		.msn = msn,
	};
	u32 hdrct = vd_term_hdrct(code, bad, bad_len);
	u32 ddp_len = 0, need = VD_HDR_TERMINATE;
	struct vd_rdmap_term *term;
	u8 *p = ulpdu;
	__be16 sl;

	if (vd_term_layer(code) > L_LLP)
		return -EINVAL;
	if (hdrct & VD_TERM_HDR_D) {
		ddp_len = *(const u8 *)bad & VD_DDP_T ? VD_HDR_TAGGED :
							VD_HDR_UNTAGGED;
		need += sizeof(sl) + ddp_len;
	}
	if (hdrct & VD_TERM_HDR_R)
		need += sizeof(struct vd_rdmap_rreq);
	if (size < need)
		return -ENOSPC;

	vd_iw_build(ulpdu, size, &hdr);
	term = (struct vd_rdmap_term *)(p + VD_HDR_UNTAGGED);
	term->ctrl = cpu_to_be32((u32)vd_term_layer(code) << VD_TERM_LAYER_SHIFT |
				 (u32)vd_term_etype(code) << VD_TERM_ETYPE_SHIFT |
				 (u32)vd_term_ecode(code) << VD_TERM_ECODE_SHIFT |
				 hdrct);
	p += VD_HDR_TERMINATE;
	if (hdrct & VD_TERM_HDR_D) {
		sl = cpu_to_be16(min_t(u32, seg_len, VD_MPA_ULPDU_MAX));
		memcpy(p, &sl, sizeof(sl));
		memcpy(p + sizeof(sl), bad, ddp_len);
		p += sizeof(sl) + ddp_len;
	}
	if (hdrct & VD_TERM_HDR_R)
		memcpy(p, (const u8 *)bad + VD_HDR_UNTAGGED,
		       sizeof(struct vd_rdmap_rreq));
	return need;
}
EXPORT_SYMBOL_IF_KUNIT(vd_term_build);

/**
 * vd_term_parse() - decode the payload of a received Terminate segment
 * @payload: the segment's bytes after its DDP header (vd_iw_parse() checked
 *           there are 4 at least)
 * @len: the bytes at @payload
 * @msg: filled with the message
 *
 * Lenient: copied headers that are cut short, or announced by a bit but
 * missing, are left out rather than failing the parse; an R bit without a
 * Read Request behind it (siw sets R for Sends too) is kept as sent but
 * yields no @msg->rreq. The DDP Segment Length field is there when M or D
 * is set. siw's bit layout (VD_TERM_SIW_M) is recognised, and its swapped
 * nibbles are put right in @msg->code.
 *
 * Return: VD_IW_OK; VD_IW_MPA_FPDU only for a payload without a control
 * word.
 */
enum vd_iw_err vd_term_parse(const void *payload, u32 len,
			     struct vd_term_msg *msg)
{
	const u8 *p = payload;
	__be32 ctrl_be;
	__be16 sl;
	u32 ctrl;

	memset(msg, 0, sizeof(*msg));
	if (len < sizeof(ctrl_be))
		return VD_IW_MPA_FPDU;
	memcpy(&ctrl_be, p, sizeof(ctrl_be));
	ctrl = be32_to_cpu(ctrl_be);
	p += sizeof(ctrl_be);
	len -= sizeof(ctrl_be);
	msg->wire = ctrl >> VD_TERM_ECODE_SHIFT;
	if (!(ctrl & VD_TERM_HDR_MASK) && (ctrl & VD_TERM_SIW_MASK)) {
		/* siw's bitfield layout: its nibbles are swapped too. */
		msg->siw = true;
		msg->code = vd_term_swap(msg->wire);
		msg->m = ctrl & VD_TERM_SIW_M;
		msg->d = ctrl & VD_TERM_SIW_D;
		msg->r = ctrl & VD_TERM_SIW_R;
	} else {
		msg->code = vd_term_fix_nibbles(msg->wire);
		msg->m = ctrl & VD_TERM_HDR_M;
		msg->d = ctrl & VD_TERM_HDR_D;
		msg->r = ctrl & VD_TERM_HDR_R;
	}

	if ((!msg->m && !msg->d) || len < sizeof(sl))
		return VD_IW_OK;
	memcpy(&sl, p, sizeof(sl));
	if (msg->m)
		msg->seg_len = be16_to_cpu(sl);
	p += sizeof(sl);
	len -= sizeof(sl);
	if (!msg->d || len < VD_HDR_TAGGED)
		return VD_IW_OK;
	msg->ddp_len = p[0] & VD_DDP_T ? VD_HDR_TAGGED : VD_HDR_UNTAGGED;
	if (len < msg->ddp_len) {
		msg->ddp_len = 0;
		return VD_IW_OK;
	}
	memcpy(msg->ddp, p, msg->ddp_len);
	p += msg->ddp_len;
	len -= msg->ddp_len;
	if (msg->r && msg->ddp_len == VD_HDR_UNTAGGED &&
	    (msg->ddp[1] & VD_RDMAP_OP_MASK) == VD_OP_READ_REQ &&
	    len >= sizeof(msg->rreq)) {
		memcpy(msg->rreq, p, sizeof(msg->rreq));
		msg->have_rreq = true;
	}
	return VD_IW_OK;
}
EXPORT_SYMBOL_IF_KUNIT(vd_term_parse);
