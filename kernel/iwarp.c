// SPDX-License-Identifier: GPL-2.0
/*
 * iWARP wire formats: building and validating MPA, DDP and RDMAP headers,
 * FPDU framing and segmentation. See iwarp.h and
 * Documentation/iwarp.rst for the layouts and the validation order.
 *
 * Nothing a peer sends is trusted: every length is checked against the
 * bytes actually present before a field behind it is read, and every
 * decoded value that a later step uses as an index or a size is range
 * checked here or by the step that owns the state (MSN, MO: the receive
 * queue; STag, TO: the TPT check).
 */
#include <linux/crc32c.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <kunit/visibility.h>

#include "iwarp.h"

struct vd_iw_op {
	const char *name;
	bool tagged;
	u8 qn;
	u8 hdr_len;	/* headers vd_iw_build() writes */
	u8 min_len;	/* ULPDU bytes a valid segment has at least */
};

static const struct vd_iw_op vd_iw_ops[VD_OP_NR] = {
	[VD_OP_WRITE]		= { "RDMA Write", true, 0,
				    VD_HDR_TAGGED, VD_HDR_TAGGED },
	[VD_OP_READ_REQ]	= { "RDMA Read Request", false, VD_QN_READ_REQ,
				    VD_HDR_READ_REQ, VD_HDR_READ_REQ },
	[VD_OP_READ_RESP]	= { "RDMA Read Response", true, 0,
				    VD_HDR_TAGGED, VD_HDR_TAGGED },
	[VD_OP_SEND]		= { "Send", false, VD_QN_SEND,
				    VD_HDR_UNTAGGED, VD_HDR_UNTAGGED },
	[VD_OP_SEND_INV]	= { "Send with Invalidate", false, VD_QN_SEND,
				    VD_HDR_UNTAGGED, VD_HDR_UNTAGGED },
	[VD_OP_SEND_SE]		= { "Send with SE", false, VD_QN_SEND,
				    VD_HDR_UNTAGGED, VD_HDR_UNTAGGED },
	[VD_OP_SEND_SE_INV]	= { "Send with SE and Invalidate", false,
				    VD_QN_SEND, VD_HDR_UNTAGGED,
				    VD_HDR_UNTAGGED },
	/* The Terminate control word is terminate.c's to write. */
	[VD_OP_TERMINATE]	= { "Terminate", false, VD_QN_TERMINATE,
				    VD_HDR_UNTAGGED, VD_HDR_TERMINATE },
	[VD_OP_IMM]		= { "Immediate Data", false, VD_QN_SEND,
				    VD_HDR_IMM, VD_HDR_IMM },
	[VD_OP_IMM_SE]		= { "Immediate Data with SE", false,
				    VD_QN_SEND, VD_HDR_IMM, VD_HDR_IMM },
	[VD_OP_SEND_IMM]	= { "Send with Immediate", false, VD_QN_SEND,
				    VD_HDR_UNTAGGED, VD_HDR_UNTAGGED },
	[VD_OP_SEND_SE_IMM]	= { "Send with SE and Immediate", false,
				    VD_QN_SEND, VD_HDR_UNTAGGED,
				    VD_HDR_UNTAGGED },
};

/**
 * vd_iw_opcode_valid() - whether an RDMAP opcode is one we know
 * @opcode: the opcode
 *
 * Return: true for the opcodes with a name; RFC 7306's atomics and the
 * reserved opcodes are unknown.
 */
bool vd_iw_opcode_valid(u8 opcode)
{
	return opcode < VD_OP_NR && vd_iw_ops[opcode].name;
}
EXPORT_SYMBOL_IF_KUNIT(vd_iw_opcode_valid);

/**
 * vd_iw_opcode_tagged() - whether an opcode uses the tagged buffer model
 * @opcode: the opcode
 *
 * Return: true for RDMA Write and Read Response; false for the others and
 * for unknown opcodes.
 */
bool vd_iw_opcode_tagged(u8 opcode)
{
	return vd_iw_opcode_valid(opcode) && vd_iw_ops[opcode].tagged;
}
EXPORT_SYMBOL_IF_KUNIT(vd_iw_opcode_tagged);

/**
 * vd_iw_opcode_qn() - the untagged queue of an opcode
 * @opcode: the opcode
 *
 * Return: the queue number (VD_QN_*) of an untagged opcode; U32_MAX for a
 * tagged or unknown one.
 */
u32 vd_iw_opcode_qn(u8 opcode)
{
	if (!vd_iw_opcode_valid(opcode) || vd_iw_ops[opcode].tagged)
		return U32_MAX;
	return vd_iw_ops[opcode].qn;
}
EXPORT_SYMBOL_IF_KUNIT(vd_iw_opcode_qn);

/**
 * vd_iw_opcode_hdr_len() - the header bytes of an opcode
 * @opcode: the opcode
 *
 * Return: the bytes vd_iw_build() writes for @opcode; 0 if it is unknown.
 */
u32 vd_iw_opcode_hdr_len(u8 opcode)
{
	return vd_iw_opcode_valid(opcode) ? vd_iw_ops[opcode].hdr_len : 0;
}
EXPORT_SYMBOL_IF_KUNIT(vd_iw_opcode_hdr_len);

/**
 * vd_iw_opcode_name() - the name of an opcode, for logs
 * @opcode: the opcode
 *
 * Return: a static string; "unknown" for an unknown opcode.
 */
const char *vd_iw_opcode_name(u8 opcode)
{
	return vd_iw_opcode_valid(opcode) ? vd_iw_ops[opcode].name :
					    "unknown";
}
EXPORT_SYMBOL_IF_KUNIT(vd_iw_opcode_name);

/* ---- MPA Request/Reply ---- */

/**
 * vd_mpa_rr_build() - write an MPA Request or Reply header
 * @buf: where to write
 * @size: bytes at @buf
 * @info: the frame: Request or Reply, revision, C, R, and for an enhanced
 *        frame the RFC 6581 IRD/ORD, P2P and RTR bits
 *
 * Writes the header and, if @info->enhanced, the IRD/ORD words that open
 * the private data; the caller appends @info->pd_len bytes of its own
 * private data. Refuses what vd_mpa_rr_parse() would not accept.
 *
 * Return: the bytes written (20, or 24 when enhanced); -EINVAL for a
 * revision other than 1 or 2, a rejecting Request, enhanced fields out of
 * range (revision 1, IRD or ORD above 14 bits, unknown RTR bits, RTR
 * without P2P) or private data beyond 512 bytes; -ENOSPC if @size is too
 * small.
 */
int vd_mpa_rr_build(void *buf, size_t size, const struct vd_mpa_info *info)
{
	struct vd_mpa_rr *hdr = buf;
	size_t need = sizeof(*hdr);
	u32 pd_len = info->pd_len;

	if (info->rev != VD_MPA_REV1 && info->rev != VD_MPA_REV2)
		return -EINVAL;
	if (info->reject && !info->reply)
		return -EINVAL;
	if (info->enhanced) {
		if (info->rev != VD_MPA_REV2 ||
		    info->ird > VD_MPA_V2_IRD_ORD_MASK ||
		    info->ord > VD_MPA_V2_IRD_ORD_MASK ||
		    (info->rtr & ~(VD_MPA_RTR_SEND | VD_MPA_RTR_WRITE |
				   VD_MPA_RTR_READ)) ||
		    (info->rtr && !info->p2p))
			return -EINVAL;
		need += sizeof(struct vd_mpa_v2);
		pd_len += sizeof(struct vd_mpa_v2);
	}
	if (pd_len > VD_MPA_MAX_PD)
		return -EINVAL;
	if (size < need)
		return -ENOSPC;

	memcpy(hdr->key, info->reply ? VD_MPA_KEY_REP : VD_MPA_KEY_REQ,
	       VD_MPA_KEY_SIZE);
	hdr->flags = (info->crc ? VD_MPA_FLAG_C : 0) |
		     (info->reject ? VD_MPA_FLAG_R : 0) |
		     (info->enhanced ? VD_MPA_FLAG_H : 0);
	hdr->rev = info->rev;
	hdr->pd_len = cpu_to_be16(pd_len);
	if (info->enhanced) {
		struct vd_mpa_v2 *v2 = (struct vd_mpa_v2 *)(hdr + 1);
		u16 ird = info->ird, ord = info->ord;

		if (info->p2p)
			ird |= VD_MPA_V2_P2P;
		if (info->rtr & VD_MPA_RTR_SEND)
			ird |= VD_MPA_V2_SEND_RTR;
		if (info->rtr & VD_MPA_RTR_WRITE)
			ord |= VD_MPA_V2_WRITE_RTR;
		if (info->rtr & VD_MPA_RTR_READ)
			ord |= VD_MPA_V2_READ_RTR;
		v2->ird = cpu_to_be16(ird);
		v2->ord = cpu_to_be16(ord);
	}
	return need;
}
EXPORT_SYMBOL_IF_KUNIT(vd_mpa_rr_build);

/**
 * vd_mpa_rr_parse() - validate a received MPA Request or Reply header
 * @hdr: the 20 bytes received
 * @reply: the frame is expected to be a Reply (the key decides)
 * @info: filled with the frame; for an enhanced frame @info->pd_len
 *        excludes the IRD/ORD words, which the caller reads next and hands
 *        to vd_mpa_v2_parse()
 *
 * A rejecting Reply is a valid frame, and @info is filled for it too. H is
 * a reserved bit, and so ignored, in revision 1.
 *
 * Return: VD_IW_OK; VD_IW_MPA_MARKERS if M is set; VD_IW_MPA_REQREP for a
 * wrong key, a revision other than 1 or 2, R in a Request, more than 512
 * bytes of private data, or an enhanced frame too short for its IRD/ORD
 * words.
 */
enum vd_iw_err vd_mpa_rr_parse(const struct vd_mpa_rr *hdr, bool reply,
			       struct vd_mpa_info *info)
{
	u16 pd_len = be16_to_cpu(hdr->pd_len);

	memset(info, 0, sizeof(*info));
	if (memcmp(hdr->key, reply ? VD_MPA_KEY_REP : VD_MPA_KEY_REQ,
		   VD_MPA_KEY_SIZE))
		return VD_IW_MPA_REQREP;
	if (hdr->rev != VD_MPA_REV1 && hdr->rev != VD_MPA_REV2)
		return VD_IW_MPA_REQREP;
	if (hdr->flags & VD_MPA_FLAG_M)
		return VD_IW_MPA_MARKERS;
	if (!reply && (hdr->flags & VD_MPA_FLAG_R))
		return VD_IW_MPA_REQREP;
	if (pd_len > VD_MPA_MAX_PD)
		return VD_IW_MPA_REQREP;

	info->reply = reply;
	info->rev = hdr->rev;
	info->crc = hdr->flags & VD_MPA_FLAG_C;
	info->reject = hdr->flags & VD_MPA_FLAG_R;
	/* H is a reserved bit, and so ignored, in revision 1. */
	info->enhanced = hdr->rev == VD_MPA_REV2 &&
			 (hdr->flags & VD_MPA_FLAG_H);
	if (info->enhanced) {
		if (pd_len < sizeof(struct vd_mpa_v2))
			return VD_IW_MPA_REQREP;
		pd_len -= sizeof(struct vd_mpa_v2);
	}
	info->pd_len = pd_len;
	return VD_IW_OK;
}
EXPORT_SYMBOL_IF_KUNIT(vd_mpa_rr_parse);

/**
 * vd_mpa_v2_parse() - decode the IRD/ORD words of an enhanced frame
 * @v2: the first four bytes of the private data
 * @info: its IRD, ORD, P2P and RTR (VD_MPA_RTR_*) are filled in
 */
void vd_mpa_v2_parse(const struct vd_mpa_v2 *v2, struct vd_mpa_info *info)
{
	u16 ird = be16_to_cpu(v2->ird), ord = be16_to_cpu(v2->ord);

	info->ird = ird & VD_MPA_V2_IRD_ORD_MASK;
	info->ord = ord & VD_MPA_V2_IRD_ORD_MASK;
	info->p2p = ird & VD_MPA_V2_P2P;
	info->rtr = (ird & VD_MPA_V2_SEND_RTR ? VD_MPA_RTR_SEND : 0) |
		    (ord & VD_MPA_V2_WRITE_RTR ? VD_MPA_RTR_WRITE : 0) |
		    (ord & VD_MPA_V2_READ_RTR ? VD_MPA_RTR_READ : 0);
}
EXPORT_SYMBOL_IF_KUNIT(vd_mpa_v2_parse);

/* ---- DDP/RDMAP headers ---- */

/* The single-segment messages: Read Request, Terminate, Immediate Data. */
static bool vd_iw_single(u8 op)
{
	return op == VD_OP_READ_REQ || op == VD_OP_TERMINATE ||
	       op == VD_OP_IMM || op == VD_OP_IMM_SE;
}

/* What the 32-bit field after the control bytes of an untagged header is. */
static bool vd_iw_ulp_inv(u8 op)
{
	return op == VD_OP_SEND_INV || op == VD_OP_SEND_SE_INV;
}

static bool vd_iw_ulp_imm(u8 op)
{
	return op == VD_OP_SEND_IMM || op == VD_OP_SEND_SE_IMM;
}

/**
 * vd_iw_build() - write the DDP and RDMAP headers of a segment
 * @ulpdu: where to write
 * @size: bytes at @ulpdu
 * @hdr: the segment; the tagged flag, the queue number and the header size
 *       follow from @hdr->opcode
 *
 * The single-segment messages (Read Request, Terminate, Immediate Data) are
 * always built with L set and MO 0, whatever @hdr says.
 *
 * Return: the header bytes written (vd_iw_opcode_hdr_len()); -EINVAL for an
 * unknown opcode; -ENOSPC if @size is too small.
 */
int vd_iw_build(void *ulpdu, size_t size, const struct vd_iw_hdr *hdr)
{
	u8 op = hdr->opcode;
	const struct vd_iw_op *o;
	bool last = hdr->last;
	u32 mo = hdr->mo;
	u8 *p = ulpdu;

	if (!vd_iw_opcode_valid(op))
		return -EINVAL;
	o = &vd_iw_ops[op];
	if (size < o->hdr_len)
		return -ENOSPC;
	if (vd_iw_single(op)) {
		last = true;
		mo = 0;
	}
	p[0] = (o->tagged ? VD_DDP_T : 0) | (last ? VD_DDP_L : 0) |
	       VD_DDP_VERSION;
	p[1] = VD_RDMAP_VERSION << VD_RDMAP_RV_SHIFT | op;

	if (o->tagged) {
		struct vd_ddp_tagged *t = ulpdu;

		t->stag = cpu_to_be32(hdr->stag);
		t->to = cpu_to_be64(hdr->to);
	} else {
		struct vd_ddp_untagged *u = ulpdu;

		u->ulp = cpu_to_be32(vd_iw_ulp_inv(op) ? hdr->inv_stag :
				     vd_iw_ulp_imm(op) ? hdr->imm : 0);
		u->qn = cpu_to_be32(o->qn);
		u->msn = cpu_to_be32(hdr->msn);
		u->mo = cpu_to_be32(mo);
	}
	if (op == VD_OP_READ_REQ) {
		struct vd_rdmap_rreq *r = (void *)(p + VD_HDR_UNTAGGED);

		r->sink_stag = cpu_to_be32(hdr->sink_stag);
		r->sink_to = cpu_to_be64(hdr->sink_to);
		r->size = cpu_to_be32(hdr->size);
		r->src_stag = cpu_to_be32(hdr->src_stag);
		r->src_to = cpu_to_be64(hdr->src_to);
	}
	if (op == VD_OP_IMM || op == VD_OP_IMM_SE) {
		struct vd_rdmap_imm *m = (void *)(p + VD_HDR_UNTAGGED);

		m->data = cpu_to_be32(hdr->imm);
		m->reserved = 0;
	}
	return o->hdr_len;
}
EXPORT_SYMBOL_IF_KUNIT(vd_iw_build);

/**
 * vd_iw_parse() - validate and decode the headers of one received ULPDU
 * @ulpdu: the ULPDU
 * @len: its bytes (the MPA ULPDU_Length)
 * @hdr: filled with the decoded headers, @hdr_len and @payload_len
 *
 * Stateless: MSN and MO against the receive queue are vd_ddp_msn_check()
 * and vd_ddp_mo_check(). The order of the checks is the order a receiver
 * learns the fields, and the first failing one decides
 * (Documentation/iwarp.rst):
 *
 *   1. two control bytes present                  VD_IW_MPA_FPDU
 *   2. DDP version 1                     VD_IW_DDP_T/UT_VERSION (by T)
 *   3. RDMAP version 1                            VD_IW_RDMAP_VERSION
 *   4. opcode known                               VD_IW_RDMAP_OPCODE
 *   5. T matches the opcode                       VD_IW_RDMAP_OPCODE
 *   6. the opcode's headers present               VD_IW_MPA_FPDU
 *   7. tagged: TO + payload does not wrap 2^64    VD_IW_DDP_T_TO_WRAP
 *   8. untagged: QN is the opcode's               VD_IW_DDP_UT_QN
 *   9. untagged: MO + payload fits 32 bits        VD_IW_DDP_UT_TOO_LONG
 *  10. single segment: MO 0                       VD_IW_DDP_UT_MO
 *  11. single segment: L set                      VD_IW_RDMAP_STREAM
 *  12. Read Request, Immediate Data: no payload   VD_IW_RDMAP_STREAM
 *
 * (single segment: Read Request, Terminate, Immediate Data). Reserved bits
 * are not checked (RFC 5040, 5041: set to zero, ignored).
 *
 * Return: VD_IW_OK or the error of the first failing check.
 */
enum vd_iw_err vd_iw_parse(const void *ulpdu, u32 len, struct vd_iw_hdr *hdr)
{
	const u8 *p = ulpdu;
	const struct vd_iw_op *o;
	bool tagged;
	u8 op;

	memset(hdr, 0, sizeof(*hdr));
	if (unlikely(len < 2))
		return VD_IW_MPA_FPDU;
	tagged = p[0] & VD_DDP_T;
	if (unlikely((p[0] & VD_DDP_DV_MASK) != VD_DDP_VERSION))
		return tagged ? VD_IW_DDP_T_VERSION : VD_IW_DDP_UT_VERSION;
	if (unlikely((p[1] & VD_RDMAP_RV_MASK) >> VD_RDMAP_RV_SHIFT !=
		     VD_RDMAP_VERSION))
		return VD_IW_RDMAP_VERSION;
	op = p[1] & VD_RDMAP_OP_MASK;
	if (unlikely(!vd_iw_opcode_valid(op)))
		return VD_IW_RDMAP_OPCODE;
	o = &vd_iw_ops[op];
	if (unlikely(tagged != o->tagged))
		return VD_IW_RDMAP_OPCODE;
	if (unlikely(len < o->min_len))
		return VD_IW_MPA_FPDU;

	hdr->opcode = op;
	hdr->last = p[0] & VD_DDP_L;
	hdr->hdr_len = o->hdr_len;
	hdr->payload_len = len - o->hdr_len;

	if (tagged) {
		const struct vd_ddp_tagged *t = ulpdu;

		hdr->stag = be32_to_cpu(t->stag);
		hdr->to = be64_to_cpu(t->to);
		if (hdr->payload_len &&
		    hdr->to + hdr->payload_len - 1 < hdr->to)
			return VD_IW_DDP_T_TO_WRAP;
		return VD_IW_OK;
	}

	{
		const struct vd_ddp_untagged *u = ulpdu;

		hdr->qn = be32_to_cpu(u->qn);
		hdr->msn = be32_to_cpu(u->msn);
		hdr->mo = be32_to_cpu(u->mo);
		if (vd_iw_ulp_inv(op))
			hdr->inv_stag = be32_to_cpu(u->ulp);
		else if (vd_iw_ulp_imm(op))
			hdr->imm = be32_to_cpu(u->ulp);
	}
	if (unlikely(hdr->qn != o->qn))
		return VD_IW_DDP_UT_QN;
	if (unlikely((u64)hdr->mo + hdr->payload_len > U32_MAX + 1ULL))
		return VD_IW_DDP_UT_TOO_LONG;
	if (vd_iw_single(op)) {
		if (unlikely(hdr->mo))
			return VD_IW_DDP_UT_MO;
		if (unlikely(!hdr->last))
			return VD_IW_RDMAP_STREAM;
	}
	if (op == VD_OP_IMM || op == VD_OP_IMM_SE) {
		const struct vd_rdmap_imm *m = (const void *)(p +
							      VD_HDR_UNTAGGED);

		if (unlikely(hdr->payload_len))
			return VD_IW_RDMAP_STREAM;
		hdr->imm = be32_to_cpu(m->data);
	}
	if (op == VD_OP_READ_REQ) {
		const struct vd_rdmap_rreq *r = (const void *)(p +
							       VD_HDR_UNTAGGED);

		if (unlikely(hdr->payload_len))
			return VD_IW_RDMAP_STREAM;
		hdr->sink_stag = be32_to_cpu(r->sink_stag);
		hdr->sink_to = be64_to_cpu(r->sink_to);
		hdr->size = be32_to_cpu(r->size);
		hdr->src_stag = be32_to_cpu(r->src_stag);
		hdr->src_to = be64_to_cpu(r->src_to);
	}
	return VD_IW_OK;
}
EXPORT_SYMBOL_IF_KUNIT(vd_iw_parse);

/**
 * vd_ddp_msn_check() - check the MSN of an untagged message's first segment
 * @msn: the MSN received
 * @expected: the queue's next MSN
 * @posted: buffers posted on the queue
 *
 * MPA runs over one ordered stream, so messages of a queue arrive in order
 * and any MSN but the next is out of range.
 *
 * Return: VD_IW_OK; VD_IW_DDP_UT_MSN_RANGE for another MSN;
 * VD_IW_DDP_UT_MSN_NOBUF for the right MSN with nothing posted.
 */
enum vd_iw_err vd_ddp_msn_check(u32 msn, u32 expected, u32 posted)
{
	if (msn != expected)
		return VD_IW_DDP_UT_MSN_RANGE;
	if (!posted)
		return VD_IW_DDP_UT_MSN_NOBUF;
	return VD_IW_OK;
}
EXPORT_SYMBOL_IF_KUNIT(vd_ddp_msn_check);

/**
 * vd_ddp_mo_check() - check the MO of an untagged segment
 * @mo: the MO received
 * @expected: the bytes of the message already placed
 *
 * Segments of a message arrive in order, so MO is the bytes already placed.
 *
 * Return: VD_IW_OK or VD_IW_DDP_UT_MO.
 */
enum vd_iw_err vd_ddp_mo_check(u32 mo, u32 expected)
{
	return mo == expected ? VD_IW_OK : VD_IW_DDP_UT_MO;
}
EXPORT_SYMBOL_IF_KUNIT(vd_ddp_mo_check);

/**
 * vd_ddp_fits() - check that an untagged segment fits its receive buffer
 * @mo: the segment's MO
 * @len: its payload bytes
 * @buf_len: the receive buffer's bytes
 *
 * Return: VD_IW_OK or VD_IW_DDP_UT_TOO_LONG.
 */
enum vd_iw_err vd_ddp_fits(u32 mo, u32 len, u64 buf_len)
{
	return (u64)mo + len <= buf_len ? VD_IW_OK : VD_IW_DDP_UT_TOO_LONG;
}
EXPORT_SYMBOL_IF_KUNIT(vd_ddp_fits);

/* ---- MPA FPDUs ---- */

/* FPDU fields sit at any byte offset of a buffer: copy, never cast. */
static u16 get_be16(const u8 *p)
{
	__be16 v;

	memcpy(&v, p, sizeof(v));
	return be16_to_cpu(v);
}

static void put_be16(u16 val, u8 *p)
{
	__be16 v = cpu_to_be16(val);

	memcpy(p, &v, sizeof(v));
}

static u32 get_le32(const u8 *p)
{
	__le32 v;

	memcpy(&v, p, sizeof(v));
	return le32_to_cpu(v);
}

static void put_le32(u32 val, u8 *p)
{
	__le32 v = cpu_to_le32(val);

	memcpy(p, &v, sizeof(v));
}

/**
 * vd_mpa_crc() - CRC32c, continued
 * @crc: VD_MPA_CRC_SEED to start, else the last result
 * @buf: the bytes
 * @len: their number
 *
 * crc32c() is the crypto API's "crc32c" (libcrc32c), which uses the CPU's
 * instruction where there is one.
 *
 * Return: the CRC so far; the value for the wire is the complement of the
 * last result.
 */
u32 vd_mpa_crc(u32 crc, const void *buf, size_t len)
{
	return crc32c(crc, buf, len);
}
EXPORT_SYMBOL_IF_KUNIT(vd_mpa_crc);

/**
 * vd_mpa_pad() - pad bytes after a ULPDU
 * @ulpdu_len: the ULPDU's bytes
 *
 * Return: what makes ULPDU_Length field + ULPDU + pad a multiple of 4.
 */
u32 vd_mpa_pad(u32 ulpdu_len)
{
	return -(VD_MPA_LEN_SIZE + ulpdu_len) & 3;
}
EXPORT_SYMBOL_IF_KUNIT(vd_mpa_pad);

/**
 * vd_mpa_fpdu_len() - bytes of an FPDU on the wire
 * @ulpdu_len: the ULPDU's bytes
 *
 * Return: length field, ULPDU, pad and CRC.
 */
u32 vd_mpa_fpdu_len(u32 ulpdu_len)
{
	return VD_MPA_LEN_SIZE + ulpdu_len + vd_mpa_pad(ulpdu_len) +
	       VD_MPA_CRC_SIZE;
}
EXPORT_SYMBOL_IF_KUNIT(vd_mpa_fpdu_len);

/**
 * vd_mpa_fpdu_crc() - the CRC of a linear FPDU
 * @fpdu: the FPDU, from its length field
 * @ulpdu_len: the ULPDU's bytes
 *
 * Return: the CRC over the length field, the ULPDU and the pad, as sent.
 */
u32 vd_mpa_fpdu_crc(const void *fpdu, u32 ulpdu_len)
{
	return ~vd_mpa_crc(VD_MPA_CRC_SEED, fpdu, VD_MPA_LEN_SIZE +
			   ulpdu_len + vd_mpa_pad(ulpdu_len));
}
EXPORT_SYMBOL_IF_KUNIT(vd_mpa_fpdu_crc);

/**
 * vd_mpa_fpdu_seal() - frame a linear FPDU
 * @fpdu: the FPDU; the ULPDU is at @fpdu + 2
 * @size: bytes at @fpdu
 * @ulpdu_len: the ULPDU's bytes
 * @crc: CRC is in use on the stream
 *
 * Writes the length, zeroes the pad, and writes the CRC (or zero when CRC
 * is not in use).
 *
 * Return: the FPDU's length; -EINVAL for a ULPDU longer than 65535 bytes;
 * -ENOSPC if @size is too small.
 */
int vd_mpa_fpdu_seal(void *fpdu, size_t size, u32 ulpdu_len, bool crc)
{
	u32 pad = vd_mpa_pad(ulpdu_len), len = vd_mpa_fpdu_len(ulpdu_len);
	u8 *p = fpdu;

	if (ulpdu_len > VD_MPA_ULPDU_MAX)
		return -EINVAL;
	if (size < len)
		return -ENOSPC;
	put_be16(ulpdu_len, p);
	memset(p + VD_MPA_LEN_SIZE + ulpdu_len, 0, pad);
	put_le32(crc ? vd_mpa_fpdu_crc(fpdu, ulpdu_len) : 0,
		 p + len - VD_MPA_CRC_SIZE);
	return len;
}
EXPORT_SYMBOL_IF_KUNIT(vd_mpa_fpdu_seal);

/**
 * vd_mpa_fpdu_verify() - check a received linear FPDU
 * @fpdu: the FPDU, from its length field
 * @len: the bytes of exactly one FPDU as framed by its length field
 * @crc: CRC is in use on the stream; without it the CRC field is not
 *       looked at (RFC 5044 section 4.5)
 *
 * Return: VD_IW_OK; VD_IW_MPA_FPDU if @len does not match the length field;
 * VD_IW_MPA_CRC for a CRC mismatch.
 */
enum vd_iw_err vd_mpa_fpdu_verify(const void *fpdu, size_t len, bool crc)
{
	const u8 *p = fpdu;
	u32 ulpdu_len;

	if (len < VD_MPA_LEN_SIZE)
		return VD_IW_MPA_FPDU;
	ulpdu_len = get_be16(p);
	if (len != vd_mpa_fpdu_len(ulpdu_len))
		return VD_IW_MPA_FPDU;
	if (crc && get_le32(p + len - VD_MPA_CRC_SIZE) !=
		   vd_mpa_fpdu_crc(fpdu, ulpdu_len))
		return VD_IW_MPA_CRC;
	return VD_IW_OK;
}
EXPORT_SYMBOL_IF_KUNIT(vd_mpa_fpdu_verify);

/* ---- Segmentation ---- */

/**
 * vd_mpa_mulpdu() - the largest ULPDU of a TCP segment
 * @emss: the connection's effective MSS
 *
 * RFC 5044 section 7.1 without markers: MULPDU = EMSS - (6 + EMSS mod 4),
 * so that a full FPDU (length field, ULPDU, CRC; no pad needed) fills a
 * TCP segment up to a multiple of 4. Capped at 65534 where the 16-bit
 * length field ends (the largest ULPDU that needs no pad).
 *
 * Return: the MULPDU; 0 when @emss cannot carry even the framing.
 */
u32 vd_mpa_mulpdu(u32 emss)
{
	u32 overhead = VD_MPA_LEN_SIZE + VD_MPA_CRC_SIZE + emss % 4;

	if (emss <= overhead)
		return 0;
	/* 65534 is the largest ULPDU that needs no pad. */
	return min(emss - overhead, VD_MPA_ULPDU_MAX - 1);
}
EXPORT_SYMBOL_IF_KUNIT(vd_mpa_mulpdu);

/**
 * vd_fpdu_max_payload() - payload bytes per FPDU
 * @emss: the connection's effective MSS
 * @hdr_len: the header bytes each segment of the message carries
 *
 * A multiple of 4, so that all segments but the last keep the offsets
 * aligned. When the MSS is too small to carry the headers and
 * VD_FPDU_MIN_PAYLOAD bytes, FPDUs of that payload are sent anyway: TCP
 * splits them, and a receiver takes FPDUs across segments (RFC 5044
 * section 4.4 only says SHOULD for alignment).
 *
 * Return: the payload bytes per FPDU, at least VD_FPDU_MIN_PAYLOAD.
 */
u32 vd_fpdu_max_payload(u32 emss, u32 hdr_len)
{
	u32 mulpdu = vd_mpa_mulpdu(emss);

	if (mulpdu < hdr_len + VD_FPDU_MIN_PAYLOAD)
		return VD_FPDU_MIN_PAYLOAD;
	return (mulpdu - hdr_len) & ~3U;
}
EXPORT_SYMBOL_IF_KUNIT(vd_fpdu_max_payload);

/**
 * vd_fpdu_count() - the segments of a message
 * @msg_len: the message's bytes
 * @max_payload: from vd_fpdu_max_payload()
 *
 * Return: the number of FPDUs; a message of 0 bytes is still one segment,
 * with L set.
 */
u32 vd_fpdu_count(u64 msg_len, u32 max_payload)
{
	if (!msg_len || !max_payload)
		return 1;
	return DIV_ROUND_UP_ULL(msg_len, max_payload);
}
EXPORT_SYMBOL_IF_KUNIT(vd_fpdu_count);

/**
 * vd_fpdu_segment() - one segment of a message
 * @msg_len: the message's bytes, at most U32_MAX (MO is 32 bits wide)
 * @max_payload: from vd_fpdu_max_payload()
 * @hdr_len: the header bytes of each segment
 * @index: the segment, below vd_fpdu_count()
 * @seg: filled with its offset, length, L, ULPDU length, pad and FPDU
 *       length
 */
void vd_fpdu_segment(u64 msg_len, u32 max_payload, u32 hdr_len, u32 index,
		     struct vd_fpdu_seg *seg)
{
	u64 off = (u64)index * max_payload;

	if (off > msg_len)
		off = msg_len;
	seg->offset = off;
	seg->len = min_t(u64, max_payload, msg_len - off);
	seg->last = off + seg->len == msg_len;
	seg->ulpdu_len = hdr_len + seg->len;
	seg->pad = vd_mpa_pad(seg->ulpdu_len);
	seg->fpdu_len = vd_mpa_fpdu_len(seg->ulpdu_len);
}
EXPORT_SYMBOL_IF_KUNIT(vd_fpdu_segment);
