// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the receive side's frame parsing, from the module's
 * own iwarp.c and terminate.c. The input is what a peer writes after the
 * MPA exchange (its first byte says whether CRC is in use); it is cut into
 * FPDUs as kernel/rx.c cuts them, and each is verified, parsed and, when
 * bad, answered with a Terminate, as rx.c does. Oracles besides the
 * sanitizers:
 *   - a segment that parses is rebuilt by vd_iw_build() and parses again
 *     to the same fields (encode and decode agree);
 *   - a Terminate about a bad segment fits VD_TERM_ULPDU_MAX, parses as a
 *     Terminate and carries the code it was built with and, when it says
 *     so, the offending DDP header byte for byte;
 *   - a received Terminate's payload parses without reading past it.
 */
#include "../../kernel/iwarp.h"
#include "../../kernel/terminate.h"

static void same(const struct vd_iw_hdr *a, const struct vd_iw_hdr *b)
{
	if (a->opcode != b->opcode || a->last != b->last || a->stag != b->stag ||
	    a->to != b->to || a->qn != b->qn || a->msn != b->msn || a->mo != b->mo ||
	    a->inv_stag != b->inv_stag || a->imm != b->imm || a->sink_stag != b->sink_stag ||
	    a->sink_to != b->sink_to || a->size != b->size || a->src_stag != b->src_stag ||
	    a->src_to != b->src_to || a->hdr_len != b->hdr_len ||
	    a->payload_len != b->payload_len)
		abort();
}

static void round_trip(const struct vd_iw_hdr *hdr)
{
	static u8 buf[VD_MPA_ULPDU_MAX];
	struct vd_iw_hdr again;
	int n;

	n = vd_iw_build(buf, sizeof(buf), hdr);
	if (n < 0 || (u32)n != hdr->hdr_len)
		abort();
	/* the payload's bytes are not looked at: leave them as they are */
	if (vd_iw_parse(buf, hdr->hdr_len + hdr->payload_len, &again) != VD_IW_OK)
		abort();
	same(hdr, &again);
}

/* What rx.c sends about @ulpdu (NULL: nothing trusted) failing with @err. */
static void answer(enum vd_iw_err err, const u8 *ulpdu, u32 have, u32 ulpdu_len)
{
	u8 t[VD_TERM_ULPDU_MAX];
	u16 code = vd_term_code(err);
	struct vd_term_msg msg;
	struct vd_iw_hdr hdr;
	u32 bad_len = ulpdu ? min_t(u32, have, VD_HDR_READ_REQ) : 0;
	int n;

	n = vd_term_build(t, sizeof(t), code, VD_MSN_INITIAL, ulpdu, bad_len, ulpdu_len);
	if (n < 0 || n > (int)sizeof(t))
		abort();
	if (vd_iw_parse(t, n, &hdr) != VD_IW_OK || hdr.opcode != VD_OP_TERMINATE)
		abort();
	if (vd_term_parse(t + hdr.hdr_len, hdr.payload_len, &msg) != VD_IW_OK)
		abort();
	if (msg.code != code || vd_term_name(code) == NULL)
		abort();
	if (msg.d && memcmp(msg.ddp, ulpdu, msg.ddp_len))
		abort();
	if (msg.m && msg.seg_len != min_t(u32, ulpdu_len, VD_MPA_ULPDU_MAX))
		abort();
	(void)vd_term_wc_status(err);
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	struct vd_iw_hdr hdr;
	enum vd_iw_err err;
	bool crc;

	if (!size)
		return 0;
	crc = data[0] & 1;
	data++;
	size--;
	while (size >= VD_MPA_LEN_SIZE) {
		u32 ulpdu_len = (u32)data[0] << 8 | data[1];
		u32 len = vd_mpa_fpdu_len(ulpdu_len);
		const u8 *ulpdu = data + VD_MPA_LEN_SIZE;

		if (len > size) {
			/* not whole: rx.c checks the headers that arrived */
			u32 got = size - VD_MPA_LEN_SIZE;
			u8 op = got >= 2 ? ulpdu[1] & VD_RDMAP_OP_MASK : 0;
			u32 need = !vd_iw_opcode_valid(op) ? 2 : vd_iw_opcode_hdr_len(op);

			if (got >= 2 && got >= min(need, ulpdu_len)) {
				err = vd_iw_parse(ulpdu, ulpdu_len, &hdr);
				if (err)
					answer(err, ulpdu, got, ulpdu_len);
			}
			break;
		}
		err = vd_mpa_fpdu_verify(data, len, crc);
		if (err) {
			answer(err, NULL, 0, ulpdu_len);
			break;
		}
		err = vd_iw_parse(ulpdu, ulpdu_len, &hdr);
		if (err) {
			answer(err, ulpdu, ulpdu_len, ulpdu_len);
			break;
		}
		round_trip(&hdr);
		if (hdr.opcode == VD_OP_TERMINATE) {
			struct vd_term_msg msg;

			vd_term_parse(ulpdu + hdr.hdr_len, hdr.payload_len, &msg);
			(void)vd_term_remote_wc_status(&msg);
			break;
		}
		(void)vd_ddp_mo_check(hdr.mo, 0);
		(void)vd_ddp_fits(hdr.mo, hdr.payload_len, 65536);
		data += len;
		size -= len;
	}
	return 0;
}
