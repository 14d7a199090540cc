// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite viaduct_iwarp: the wire formats of iwarp.c. Every MPA, DDP
 * and RDMAP header is built and compared byte for byte with the layout
 * the RFCs (and Linux siw) use, parsed back, and mutated into each
 * malformed form the parser must refuse. The MPA CRC is checked against
 * the RFC 3720 vectors, against a bit-serial CRC32c, and on whole FPDUs
 * whose bytes and CRC were computed outside the kernel. Segmentation is
 * walked at the MSS edges.
 */
#include <kunit/test.h>
#include <linux/kernel.h>
#include <linux/string.h>

#include "../iwarp.h"

#define BUF_SIZE	640

/* ---- helpers ---- */

static void expect_bytes(struct kunit *test, const u8 *got, const u8 *want,
			 size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (got[i] != want[i])
			break;
	KUNIT_EXPECT_EQ_MSG(test, i, len,
			    "byte %zu is 0x%02x, want 0x%02x", i,
			    i < len ? got[i] : 0, i < len ? want[i] : 0);
}

static u32 get_le32(const u8 *p)
{
	__le32 v;

	memcpy(&v, p, sizeof(v));
	return le32_to_cpu(v);
}

/* CRC32c bit by bit (Castagnoli, reflected 0x82f63b78): a reference. */
static u32 ref_crc32c(const u8 *p, size_t len)
{
	u32 crc = ~0U;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (crc & 1 ? 0x82f63b78U : 0);
	}
	return ~crc;
}

/* ---- opcodes ---- */

static void iwarp_test_opcodes(struct kunit *test)
{
	static const struct {
		bool tagged;
		u32 qn;
		u32 hdr_len;
	} want[VD_OP_NR] = {
		[VD_OP_WRITE]		= { true, U32_MAX, 14 },
		[VD_OP_READ_REQ]	= { false, 1, 46 },
		[VD_OP_READ_RESP]	= { true, U32_MAX, 14 },
		[VD_OP_SEND]		= { false, 0, 18 },
		[VD_OP_SEND_INV]	= { false, 0, 18 },
		[VD_OP_SEND_SE]		= { false, 0, 18 },
		[VD_OP_SEND_SE_INV]	= { false, 0, 18 },
		[VD_OP_TERMINATE]	= { false, 2, 18 },
		[VD_OP_IMM]		= { false, 0, 26 },
		[VD_OP_IMM_SE]		= { false, 0, 26 },
		[VD_OP_SEND_IMM]	= { false, 0, 18 },
		[VD_OP_SEND_SE_IMM]	= { false, 0, 18 },
	};
	unsigned int op;

	for (op = 0; op < 16; op++) {
		/* RFC 7306's atomics, 0xa and 0xb, and 0xe, 0xf: unknown */
		bool valid = op < VD_OP_NR && op != 0xa && op != 0xb;

		KUNIT_EXPECT_EQ(test, vd_iw_opcode_valid(op), valid);
		if (!valid) {
			KUNIT_EXPECT_FALSE(test, vd_iw_opcode_tagged(op));
			KUNIT_EXPECT_EQ(test, vd_iw_opcode_qn(op), U32_MAX);
			KUNIT_EXPECT_EQ(test, vd_iw_opcode_hdr_len(op), 0U);
			KUNIT_EXPECT_STREQ(test, vd_iw_opcode_name(op),
					   "unknown");
			continue;
		}
		KUNIT_EXPECT_EQ(test, vd_iw_opcode_tagged(op), want[op].tagged);
		KUNIT_EXPECT_EQ(test, vd_iw_opcode_qn(op), want[op].qn);
		KUNIT_EXPECT_EQ(test, vd_iw_opcode_hdr_len(op),
				want[op].hdr_len);
		KUNIT_EXPECT_STRNEQ(test, vd_iw_opcode_name(op), "unknown");
	}
	/* The wire values of RFC 5040 section 4.2 and its queue numbers. */
	KUNIT_EXPECT_EQ(test, VD_OP_TERMINATE, 7);
	KUNIT_EXPECT_EQ(test, VD_OP_SEND_SE_INV, 6);
	KUNIT_EXPECT_EQ(test, VD_HDR_TERMINATE, 22U);
	/* RFC 7306 */
	KUNIT_EXPECT_EQ(test, VD_OP_IMM, 8);
	KUNIT_EXPECT_EQ(test, VD_OP_IMM_SE, 9);
}

/* ---- MPA Request/Reply ---- */

struct mpa_case {
	const char *name;
	struct vd_mpa_info info;
	u8 flags;		/* byte 16 on the wire */
	u16 wire_pd_len;	/* bytes 18-19 */
	u16 wire_ird, wire_ord;	/* the RFC 6581 words, if enhanced */
};

static const struct mpa_case mpa_cases[] = {
	{ "req v1", { .rev = 1, .pd_len = 0 }, 0x00, 0 },
	{ "req v1 crc pd", { .rev = 1, .crc = true, .pd_len = 100 },
	  0x40, 100 },
	{ "req v1 pd max", { .rev = 1, .crc = true, .pd_len = 512 },
	  0x40, 512 },
	{ "rep v1 crc", { .reply = true, .rev = 1, .crc = true, .pd_len = 7 },
	  0x40, 7 },
	{ "rep v1 reject", { .reply = true, .rev = 1, .reject = true,
			     .pd_len = 3 }, 0x20, 3 },
	{ "req v2 plain", { .rev = 2, .crc = true }, 0x40, 0 },
	{ "req v2 ird ord", { .rev = 2, .crc = true, .enhanced = true,
			      .ird = 16, .ord = 8, .pd_len = 20 },
	  0x50, 24, 0x0010, 0x0008 },
	{ "req v2 max", { .rev = 2, .enhanced = true, .ird = 0x3fff,
			  .ord = 0x3fff, .pd_len = 508 },
	  0x10, 512, 0x3fff, 0x3fff },
	{ "req v2 p2p send rtr", { .rev = 2, .crc = true, .enhanced = true,
				   .p2p = true, .rtr = VD_MPA_RTR_SEND,
				   .ird = 4, .ord = 4 },
	  0x50, 4, 0xc004, 0x0004 },
	{ "req v2 p2p all rtr", { .rev = 2, .enhanced = true, .p2p = true,
				  .rtr = VD_MPA_RTR_SEND | VD_MPA_RTR_WRITE |
					 VD_MPA_RTR_READ,
				  .ird = 1, .ord = 2 },
	  0x10, 4, 0xc001, 0xc002 },
	{ "rep v2 write rtr", { .reply = true, .rev = 2, .crc = true,
				.enhanced = true, .p2p = true,
				.rtr = VD_MPA_RTR_WRITE, .ird = 2, .ord = 3,
				.pd_len = 1 },
	  0x50, 5, 0x8002, 0x8003 },
	{ "rep v2 read rtr", { .reply = true, .rev = 2, .enhanced = true,
			       .p2p = true, .rtr = VD_MPA_RTR_READ,
			       .ird = 0, .ord = 0 },
	  0x10, 4, 0x8000, 0x4000 },
	{ "rep v2 reject", { .reply = true, .rev = 2, .reject = true,
			     .enhanced = true, .ird = 1, .ord = 1 },
	  0x30, 4, 0x0001, 0x0001 },
	/* viaduct's immediate data: offered in a request, taken in a reply */
	{ "req v1 imm", { .rev = 1, .imm = true }, 0x02, 0 },
	{ "req v2 imm", { .rev = 2, .crc = true, .enhanced = true,
			  .imm = true, .ird = 2, .ord = 2 },
	  0x52, 4, 0x0002, 0x0002 },
	{ "rep v2 imm", { .reply = true, .rev = 2, .enhanced = true,
			  .imm = true, .ird = 2, .ord = 2 },
	  0x11, 4, 0x0002, 0x0002 },
};

static void mpa_case_desc(const struct mpa_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(mpa, mpa_cases, mpa_case_desc);

static void iwarp_test_mpa_roundtrip(struct kunit *test)
{
	const struct mpa_case *c = test->param_value;
	const struct vd_mpa_info *in = &c->info;
	struct vd_mpa_info out;
	const struct vd_mpa_rr *hdr;
	int hlen = in->enhanced ? 24 : 20;
	u8 *buf;
	int n;

	buf = kunit_kzalloc(test, BUF_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	hdr = (const void *)buf;

	/* Exactly the header and the IRD/ORD words, and no room is too few. */
	KUNIT_EXPECT_EQ(test, vd_mpa_rr_build(buf, hlen - 1, in), -ENOSPC);
	n = vd_mpa_rr_build(buf, BUF_SIZE, in);
	KUNIT_ASSERT_EQ(test, n, hlen);

	expect_bytes(test, buf, in->reply ? "MPA ID Rep Frame" :
					    "MPA ID Req Frame", 16);
	KUNIT_EXPECT_EQ(test, buf[16], c->flags);
	KUNIT_EXPECT_EQ(test, buf[17], in->rev);
	KUNIT_EXPECT_EQ(test, buf[18], c->wire_pd_len >> 8);
	KUNIT_EXPECT_EQ(test, buf[19], c->wire_pd_len & 0xff);
	if (in->enhanced) {
		KUNIT_EXPECT_EQ(test, buf[20], c->wire_ird >> 8);
		KUNIT_EXPECT_EQ(test, buf[21], c->wire_ird & 0xff);
		KUNIT_EXPECT_EQ(test, buf[22], c->wire_ord >> 8);
		KUNIT_EXPECT_EQ(test, buf[23], c->wire_ord & 0xff);
	}

	KUNIT_ASSERT_EQ(test, vd_mpa_rr_parse(hdr, in->reply, &out),
			VD_IW_OK);
	KUNIT_EXPECT_EQ(test, out.reply, in->reply);
	KUNIT_EXPECT_EQ(test, out.rev, in->rev);
	KUNIT_EXPECT_EQ(test, out.crc, in->crc);
	KUNIT_EXPECT_EQ(test, out.reject, in->reject);
	KUNIT_EXPECT_EQ(test, out.enhanced, in->enhanced);
	KUNIT_EXPECT_EQ(test, out.imm, in->imm);
	KUNIT_EXPECT_EQ(test, out.pd_len, in->pd_len);
	if (in->enhanced) {
		vd_mpa_v2_parse((const void *)(hdr + 1), &out);
		KUNIT_EXPECT_EQ(test, out.ird, in->ird);
		KUNIT_EXPECT_EQ(test, out.ord, in->ord);
		KUNIT_EXPECT_EQ(test, out.p2p, in->p2p);
		KUNIT_EXPECT_EQ(test, out.rtr, in->rtr);
	}
	/* The other side's key is a different frame. */
	KUNIT_EXPECT_EQ(test, vd_mpa_rr_parse(hdr, !in->reply, &out),
			VD_IW_MPA_REQREP);
}

struct mpa_bad_build {
	const char *name;
	struct vd_mpa_info info;
};

static const struct mpa_bad_build mpa_bad_builds[] = {
	{ "rev 0", { .rev = 0 } },
	{ "rev 3", { .rev = 3 } },
	{ "reject in a request", { .rev = 1, .reject = true } },
	{ "enhanced in rev 1", { .rev = 1, .enhanced = true } },
	{ "ird too big", { .rev = 2, .enhanced = true, .ird = 0x4000 } },
	{ "ord too big", { .rev = 2, .enhanced = true, .ord = 0x4000 } },
	{ "rtr without p2p", { .rev = 2, .enhanced = true,
			       .rtr = VD_MPA_RTR_SEND } },
	{ "unknown rtr", { .rev = 2, .enhanced = true, .p2p = true,
			   .rtr = 0x8 } },
	{ "pd 513", { .rev = 1, .pd_len = 513 } },
	{ "pd 509 with ird/ord", { .rev = 2, .enhanced = true,
				   .pd_len = 509 } },
};

static void mpa_bad_build_desc(const struct mpa_bad_build *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(mpa_bad_build, mpa_bad_builds, mpa_bad_build_desc);

static void iwarp_test_mpa_build_invalid(struct kunit *test)
{
	const struct mpa_bad_build *c = test->param_value;
	u8 buf[32];

	memset(buf, 0xa5, sizeof(buf));
	KUNIT_EXPECT_EQ(test, vd_mpa_rr_build(buf, sizeof(buf), &c->info),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, buf[0], 0xa5);
}

/* A received frame: a good request with up to two bytes changed. */
struct mpa_bad_parse {
	const char *name;
	bool reply;		/* what the receiver expects */
	u8 at, val;		/* buf[at] = val */
	u8 at2, val2;
	enum vd_iw_err err;
};

/* Request, CRC, rev 2, 8 bytes of private data. */
#define MPA_GOOD_REQ	"MPA ID Req Frame\x40\x02\x00\x08"

static const struct mpa_bad_parse mpa_bad_parses[] = {
	{ "good", false, 17, 2, 17, 2, VD_IW_OK },
	{ "key lower case", false, 0, 'm', 0, 'm', VD_IW_MPA_REQREP },
	{ "key last byte", false, 15, 'f', 15, 'f', VD_IW_MPA_REQREP },
	{ "reply key expected", true, 17, 2, 17, 2, VD_IW_MPA_REQREP },
	{ "request key expected", false, 7, 'R', 9, 'p', VD_IW_MPA_REQREP },
	{ "rev 0", false, 17, 0, 17, 0, VD_IW_MPA_REQREP },
	{ "rev 3", false, 17, 3, 17, 3, VD_IW_MPA_REQREP },
	{ "markers", false, 16, 0xc0, 16, 0xc0, VD_IW_MPA_MARKERS },
	{ "markers, no CRC", false, 16, 0x80, 16, 0x80, VD_IW_MPA_MARKERS },
	{ "reject in a request", false, 16, 0x60, 16, 0x60,
	  VD_IW_MPA_REQREP },
	{ "pd 512", false, 18, 0x02, 19, 0x00, VD_IW_OK },
	{ "pd 513", false, 18, 0x02, 19, 0x01, VD_IW_MPA_REQREP },
	{ "pd 0xffff", false, 18, 0xff, 19, 0xff, VD_IW_MPA_REQREP },
	{ "enhanced, pd 3", false, 16, 0x50, 19, 0x03, VD_IW_MPA_REQREP },
	{ "enhanced, pd 4", false, 16, 0x50, 19, 0x04, VD_IW_OK },
	{ "reserved bits ignored", false, 16, 0x4f, 16, 0x4f, VD_IW_OK },
};

static void mpa_bad_parse_desc(const struct mpa_bad_parse *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(mpa_bad_parse, mpa_bad_parses, mpa_bad_parse_desc);

static void iwarp_test_mpa_parse_invalid(struct kunit *test)
{
	const struct mpa_bad_parse *c = test->param_value;
	struct vd_mpa_info info;
	u8 buf[20];

	memcpy(buf, MPA_GOOD_REQ, sizeof(buf));
	buf[c->at] = c->val;
	buf[c->at2] = c->val2;
	KUNIT_EXPECT_EQ(test, vd_mpa_rr_parse((void *)buf, c->reply, &info),
			c->err);
	if (c->err == VD_IW_OK) {
		KUNIT_EXPECT_TRUE(test, info.crc);
		KUNIT_EXPECT_FALSE(test, info.reject);
		KUNIT_EXPECT_EQ(test, info.rev, 2);
		/* Enhanced: the IRD/ORD words are not the ULP's. */
		KUNIT_EXPECT_EQ(test, info.pd_len + (info.enhanced ? 4 : 0),
				(buf[18] << 8) | buf[19]);
	}
}

/*
 * Frames as Linux siw writes them (siw_cm.c): an enhanced request with
 * CRC and its private GSO bit (0x08) set, IRD 128 and ORD 128 with P2P
 * and a zero-length RDMA Write RTR; and a rev 1 request whose H bit is
 * reserved and so ignored.
 */
static void iwarp_test_mpa_siw_frames(struct kunit *test)
{
	static const u8 req[] = "MPA ID Req Frame\x58\x02\x00\x04"
				"\x80\x80\x80\x80";
	static const u8 v1[] = "MPA ID Req Frame\x50\x01\x00\x00";
	struct vd_mpa_info info;

	KUNIT_ASSERT_EQ(test, vd_mpa_rr_parse((const void *)req, false, &info),
			VD_IW_OK);
	KUNIT_EXPECT_TRUE(test, info.crc);
	KUNIT_EXPECT_TRUE(test, info.enhanced);
	KUNIT_EXPECT_FALSE(test, info.reject);
	/* siw's GSO bit is not our offer of immediate data */
	KUNIT_EXPECT_FALSE(test, info.imm);
	KUNIT_EXPECT_EQ(test, info.pd_len, 0);
	vd_mpa_v2_parse((const void *)(req + 20), &info);
	KUNIT_EXPECT_TRUE(test, info.p2p);
	KUNIT_EXPECT_EQ(test, info.ird, 128);
	KUNIT_EXPECT_EQ(test, info.ord, 128);
	KUNIT_EXPECT_EQ(test, info.rtr, VD_MPA_RTR_WRITE);

	KUNIT_ASSERT_EQ(test, vd_mpa_rr_parse((const void *)v1, false, &info),
			VD_IW_OK);
	KUNIT_EXPECT_FALSE(test, info.enhanced);
	KUNIT_EXPECT_EQ(test, info.rev, 1);
}

/* ---- DDP/RDMAP headers ---- */

struct iw_case {
	const char *name;
	struct vd_iw_hdr hdr;
	u8 len;			/* header bytes */
	u8 wire[VD_HDR_READ_REQ];
};

/* The layouts of RFC 5041 section 4 and RFC 5040 section 4, by hand. */
static const struct iw_case iw_cases[] = {
	{ "RDMA Write",
	  { .opcode = VD_OP_WRITE, .last = true, .stag = 0x12345678,
	    .to = 0x1122334455667788ULL }, 14,
	  { 0xc1, 0x40, 0x12, 0x34, 0x56, 0x78,
	    0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88 } },
	{ "RDMA Write, not last",
	  { .opcode = VD_OP_WRITE, .stag = 0xfffffffe, .to = 1 }, 14,
	  { 0x81, 0x40, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 0, 0, 0, 0, 1 } },
	{ "RDMA Read Response",
	  { .opcode = VD_OP_READ_RESP, .last = true, .stag = 0x00000100,
	    .to = 0x7f0000001000ULL }, 14,
	  { 0xc1, 0x42, 0x00, 0x00, 0x01, 0x00,
	    0, 0, 0x7f, 0, 0, 0, 0x10, 0 } },
	{ "RDMA Read Request",
	  { .opcode = VD_OP_READ_REQ, .last = true, .msn = 5,
	    .sink_stag = 0xa1a2a3a4, .sink_to = 0xb1b2b3b4b5b6b7b8ULL,
	    .size = 0x00010000, .src_stag = 0xc1c2c3c4,
	    .src_to = 0xd1d2d3d4d5d6d7d8ULL }, 46,
	  { 0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0,
	    0xa1, 0xa2, 0xa3, 0xa4,
	    0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8,
	    0x00, 0x01, 0x00, 0x00,
	    0xc1, 0xc2, 0xc3, 0xc4,
	    0xd1, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8 } },
	{ "Send",
	  { .opcode = VD_OP_SEND, .last = true, .msn = 1 }, 18,
	  { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0 } },
	{ "Send, middle segment",
	  { .opcode = VD_OP_SEND, .msn = 0x01020304, .mo = 0x00005a0c }, 18,
	  { 0x01, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 0, 0, 0x5a, 0x0c } },
	{ "Send with SE",
	  { .opcode = VD_OP_SEND_SE, .last = true, .msn = 2 }, 18,
	  { 0x41, 0x45, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0 } },
	{ "Send with Invalidate",
	  { .opcode = VD_OP_SEND_INV, .last = true, .msn = 3,
	    .inv_stag = 0xdeadbe01 }, 18,
	  { 0x41, 0x44, 0xde, 0xad, 0xbe, 0x01, 0, 0, 0, 0, 0, 0, 0, 3,
	    0, 0, 0, 0 } },
	{ "Send with SE and Invalidate",
	  { .opcode = VD_OP_SEND_SE_INV, .last = true, .msn = 4,
	    .inv_stag = 0x00000201 }, 18,
	  { 0x41, 0x46, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0 } },
	{ "Terminate",
	  { .opcode = VD_OP_TERMINATE, .last = true, .msn = 1 }, 18,
	  { 0x41, 0x47, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0 } },
	{ "Immediate Data",
	  { .opcode = VD_OP_IMM, .last = true, .msn = 7, .imm = 0xcafef00d },
	  26,
	  { 0x41, 0x48, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0,
	    0xca, 0xfe, 0xf0, 0x0d, 0, 0, 0, 0 } },
	{ "Immediate Data with SE",
	  { .opcode = VD_OP_IMM_SE, .last = true, .msn = 0x10000,
	    .imm = 1 }, 26,
	  { 0x41, 0x49, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
	    0, 0, 0, 1, 0, 0, 0, 0 } },
	{ "Send with Immediate",
	  { .opcode = VD_OP_SEND_IMM, .last = true, .msn = 8,
	    .imm = 0x01020304 }, 18,
	  { 0x41, 0x4c, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0 } },
	{ "Send with SE and Immediate, middle segment",
	  { .opcode = VD_OP_SEND_SE_IMM, .msn = 9, .mo = 0x5a0,
	    .imm = 0xffffffff }, 18,
	  { 0x01, 0x4d, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 9,
	    0, 0, 0x05, 0xa0 } },
};

static void iw_case_desc(const struct iw_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(iw, iw_cases, iw_case_desc);

static void iwarp_test_hdr_roundtrip(struct kunit *test)
{
	const struct iw_case *c = test->param_value;
	const struct vd_iw_hdr *in = &c->hdr;
	u32 payload = in->opcode == VD_OP_READ_REQ ||
		      in->opcode == VD_OP_IMM ||
		      in->opcode == VD_OP_IMM_SE ? 0 :
		      in->opcode == VD_OP_TERMINATE ? 4 : 37;
	struct vd_iw_hdr out;
	u8 *buf;

	buf = kunit_kzalloc(test, BUF_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	memset(buf, 0xee, BUF_SIZE);

	KUNIT_EXPECT_EQ(test, vd_iw_build(buf, c->len - 1, in), -ENOSPC);
	KUNIT_ASSERT_EQ(test, vd_iw_build(buf, BUF_SIZE, in), (int)c->len);
	expect_bytes(test, buf, c->wire, c->len);
	KUNIT_EXPECT_EQ(test, buf[c->len], 0xee);	/* nothing beyond */

	KUNIT_ASSERT_EQ(test, vd_iw_parse(buf, c->len + payload, &out),
			VD_IW_OK);
	KUNIT_EXPECT_EQ(test, out.opcode, in->opcode);
	KUNIT_EXPECT_EQ(test, out.last, in->last);
	KUNIT_EXPECT_EQ(test, out.hdr_len, (u32)c->len);
	KUNIT_EXPECT_EQ(test, out.payload_len, payload);
	KUNIT_EXPECT_EQ(test, out.stag, in->stag);
	KUNIT_EXPECT_EQ(test, out.to, in->to);
	KUNIT_EXPECT_EQ(test, out.msn, in->msn);
	KUNIT_EXPECT_EQ(test, out.mo, in->mo);
	KUNIT_EXPECT_EQ(test, out.inv_stag, in->inv_stag);
	KUNIT_EXPECT_EQ(test, out.imm, in->imm);
	KUNIT_EXPECT_EQ(test, out.sink_stag, in->sink_stag);
	KUNIT_EXPECT_EQ(test, out.sink_to, in->sink_to);
	KUNIT_EXPECT_EQ(test, out.size, in->size);
	KUNIT_EXPECT_EQ(test, out.src_stag, in->src_stag);
	KUNIT_EXPECT_EQ(test, out.src_to, in->src_to);
	if (!vd_iw_opcode_tagged(in->opcode))
		KUNIT_EXPECT_EQ(test, out.qn, vd_iw_opcode_qn(in->opcode));
}

/* Read Requests and Terminates are single segments whatever one asks. */
static void iwarp_test_hdr_single_segment(struct kunit *test)
{
	static const u8 ops[] = { VD_OP_READ_REQ, VD_OP_TERMINATE, VD_OP_IMM,
				  VD_OP_IMM_SE };
	static const u32 lens[] = { 46, 22, 26, 26 };
	struct vd_iw_hdr in = { .mo = 99, .last = false }, out;
	u8 buf[VD_HDR_READ_REQ + 4] = {};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		in.opcode = ops[i];
		KUNIT_ASSERT_GT(test, vd_iw_build(buf, sizeof(buf), &in), 0);
		KUNIT_EXPECT_EQ(test, buf[0], 0x41);
		KUNIT_ASSERT_EQ(test, vd_iw_parse(buf, lens[i], &out),
				VD_IW_OK);
		KUNIT_EXPECT_TRUE(test, out.last);
		KUNIT_EXPECT_EQ(test, out.mo, 0U);
	}
	in.opcode = VD_OP_NR;
	KUNIT_EXPECT_EQ(test, vd_iw_build(buf, sizeof(buf), &in), -EINVAL);
	in.opcode = 0xf;
	KUNIT_EXPECT_EQ(test, vd_iw_build(buf, sizeof(buf), &in), -EINVAL);
	in.opcode = 0xa;
	KUNIT_EXPECT_EQ(test, vd_iw_build(buf, sizeof(buf), &in), -EINVAL);
}

/*
 * A malformed ULPDU: the headers of @op built with MSN 1, L, @mo and @to,
 * followed by @payload bytes; then buf[at] = (buf[at] & ~mask) | val, and
 * @len, if not -1, as the ULPDU length instead.
 */
struct iw_bad {
	const char *name;
	u8 op;
	u32 payload;
	u8 at, mask, val;
	s32 len;
	u32 mo;
	u64 to;
	enum vd_iw_err err;
};

/* A mask of 0 changes no byte. */
static const struct iw_bad iw_bads[] = {
	{ "empty", VD_OP_SEND, 0, 0, 0, 0, 0, 0, 0, VD_IW_MPA_FPDU },
	{ "one byte", VD_OP_SEND, 0, 0, 0, 0, 1, 0, 0, VD_IW_MPA_FPDU },
	{ "DDP version 0, untagged", VD_OP_SEND, 4, 0, 0x03, 0x00, -1, 0, 0,
	  VD_IW_DDP_UT_VERSION },
	{ "DDP version 2, untagged", VD_OP_READ_REQ, 0, 0, 0x03, 0x02, -1, 0,
	  0, VD_IW_DDP_UT_VERSION },
	{ "DDP version 3, tagged", VD_OP_WRITE, 4, 0, 0x03, 0x03, -1, 0, 0,
	  VD_IW_DDP_T_VERSION },
	{ "DDP version before length", VD_OP_WRITE, 0, 0, 0x03, 0x00, 2, 0, 0,
	  VD_IW_DDP_T_VERSION },
	{ "RDMAP version 0", VD_OP_SEND, 4, 1, 0xc0, 0x00, -1, 0, 0,
	  VD_IW_RDMAP_VERSION },
	{ "RDMAP version 2", VD_OP_WRITE, 4, 1, 0xc0, 0x80, -1, 0, 0,
	  VD_IW_RDMAP_VERSION },
	{ "RDMAP version 3", VD_OP_TERMINATE, 4, 1, 0xc0, 0xc0, -1, 0, 0,
	  VD_IW_RDMAP_VERSION },
	{ "RDMAP version before opcode", VD_OP_SEND, 4, 1, 0xcf, 0x0f, -1, 0,
	  0, VD_IW_RDMAP_VERSION },
	{ "opcode 0xe", VD_OP_SEND, 4, 1, 0x0f, 0x0e, -1, 0, 0,
	  VD_IW_RDMAP_OPCODE },
	{ "opcode 0xb (atomic response)", VD_OP_SEND, 4, 1, 0x0f, 0x0b, -1,
	  0, 0, VD_IW_RDMAP_OPCODE },
	{ "opcode 0xa (atomic)", VD_OP_SEND, 4, 1, 0x0f, 0x0a, -1, 0, 0,
	  VD_IW_RDMAP_OPCODE },
	{ "opcode 0xf, tagged", VD_OP_WRITE, 4, 1, 0x0f, 0x0f, -1, 0, 0,
	  VD_IW_RDMAP_OPCODE },
	{ "Send with T", VD_OP_SEND, 4, 0, 0x80, 0x80, -1, 0, 0,
	  VD_IW_RDMAP_OPCODE },
	{ "RDMA Write without T", VD_OP_WRITE, 8, 0, 0x80, 0x00, -1, 0, 0,
	  VD_IW_RDMAP_OPCODE },
	{ "Read Response without T", VD_OP_READ_RESP, 8, 0, 0x80, 0x00, -1, 0,
	  0, VD_IW_RDMAP_OPCODE },
	{ "Read Request with T", VD_OP_READ_REQ, 0, 0, 0x80, 0x80, -1, 0, 0,
	  VD_IW_RDMAP_OPCODE },
	{ "short tagged", VD_OP_WRITE, 0, 0, 0, 0, 13, 0, 0, VD_IW_MPA_FPDU },
	{ "short untagged", VD_OP_SEND, 0, 0, 0, 0, 17, 0, 0, VD_IW_MPA_FPDU },
	{ "short Read Request", VD_OP_READ_REQ, 0, 0, 0, 0, 45, 0, 0,
	  VD_IW_MPA_FPDU },
	{ "Terminate without control", VD_OP_TERMINATE, 0, 0, 0, 0, 21, 0, 0,
	  VD_IW_MPA_FPDU },
	{ "Send on QN 1", VD_OP_SEND, 4, 9, 0xff, 0x01, -1, 0, 0,
	  VD_IW_DDP_UT_QN },
	{ "Send on QN 2^24", VD_OP_SEND, 4, 6, 0xff, 0x01, -1, 0, 0,
	  VD_IW_DDP_UT_QN },
	{ "Read Request on QN 0", VD_OP_READ_REQ, 0, 9, 0xff, 0x00, -1, 0, 0,
	  VD_IW_DDP_UT_QN },
	{ "Terminate on QN 1", VD_OP_TERMINATE, 4, 9, 0xff, 0x01, -1, 0, 0,
	  VD_IW_DDP_UT_QN },
	{ "Send beyond MO 2^32", VD_OP_SEND, 5, 0, 0, 0, -1, 0xfffffffc, 0,
	  VD_IW_DDP_UT_TOO_LONG },
	{ "Send up to MO 2^32", VD_OP_SEND, 4, 0, 0, 0, -1, 0xfffffffc, 0,
	  VD_IW_OK },
	{ "Read Request with MO", VD_OP_READ_REQ, 0, 17, 0xff, 0x04, -1, 0, 0,
	  VD_IW_DDP_UT_MO },
	{ "Terminate with MO", VD_OP_TERMINATE, 4, 17, 0xff, 0x04, -1, 0, 0,
	  VD_IW_DDP_UT_MO },
	{ "Read Request without L", VD_OP_READ_REQ, 0, 0, 0x40, 0x00, -1, 0,
	  0, VD_IW_RDMAP_STREAM },
	{ "Terminate without L", VD_OP_TERMINATE, 4, 0, 0x40, 0x00, -1, 0, 0,
	  VD_IW_RDMAP_STREAM },
	{ "Read Request with payload", VD_OP_READ_REQ, 1, 0, 0, 0, -1, 0, 0,
	  VD_IW_RDMAP_STREAM },
	{ "TO wraps", VD_OP_WRITE, 2, 0, 0, 0, -1, 0, U64_MAX,
	  VD_IW_DDP_T_TO_WRAP },
	{ "TO ends at 2^64", VD_OP_WRITE, 1, 0, 0, 0, -1, 0, U64_MAX, VD_IW_OK },
	{ "TO 2^64 - 1, no payload", VD_OP_WRITE, 0, 0, 0, 0, -1, 0, U64_MAX,
	  VD_IW_OK },
	{ "DDP reserved bits ignored", VD_OP_SEND, 4, 0, 0x3c, 0x3c, -1, 0, 0,
	  VD_IW_OK },
	{ "RDMAP reserved bits ignored", VD_OP_WRITE, 4, 1, 0x30, 0x30, -1, 0,
	  0, VD_IW_OK },
	{ "Send RsvdULP ignored", VD_OP_SEND, 4, 2, 0xff, 0x5a, -1, 0, 0,
	  VD_IW_OK },
	{ "short Immediate Data", VD_OP_IMM, 0, 0, 0, 0, 25, 0, 0,
	  VD_IW_MPA_FPDU },
	{ "Immediate Data with payload", VD_OP_IMM, 1, 0, 0, 0, -1, 0, 0,
	  VD_IW_RDMAP_STREAM },
	{ "Immediate Data with MO", VD_OP_IMM_SE, 0, 17, 0xff, 0x08, -1, 0,
	  0, VD_IW_DDP_UT_MO },
	{ "Immediate Data without L", VD_OP_IMM, 0, 0, 0x40, 0x00, -1, 0, 0,
	  VD_IW_RDMAP_STREAM },
	{ "Immediate Data on QN 1", VD_OP_IMM, 0, 9, 0xff, 0x01, -1, 0, 0,
	  VD_IW_DDP_UT_QN },
	{ "Immediate Data with T", VD_OP_IMM, 0, 0, 0x80, 0x80, -1, 0, 0,
	  VD_IW_RDMAP_OPCODE },
	{ "Immediate Data reserved word ignored", VD_OP_IMM, 0, 25, 0xff,
	  0x77, -1, 0, 0, VD_IW_OK },
	{ "Send with Immediate on QN 2", VD_OP_SEND_IMM, 3, 9, 0xff, 0x02, -1,
	  0, 0, VD_IW_DDP_UT_QN },
};

static void iw_bad_desc(const struct iw_bad *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(iw_bad, iw_bads, iw_bad_desc);

static void iwarp_test_hdr_invalid(struct kunit *test)
{
	const struct iw_bad *c = test->param_value;
	struct vd_iw_hdr in = {
		.opcode = c->op, .last = true, .msn = 1, .mo = c->mo,
		.to = c->to,
	}, out;
	u8 *buf;
	int n;

	buf = kunit_kzalloc(test, BUF_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	n = vd_iw_build(buf, BUF_SIZE, &in);
	KUNIT_ASSERT_GT(test, n, 0);
	buf[c->at] = (buf[c->at] & ~c->mask) | c->val;
	KUNIT_EXPECT_EQ(test, vd_iw_parse(buf, c->len < 0 ? n + c->payload :
					  c->len, &out), c->err);
}

/* MO + payload may end exactly at 2^32, not beyond. */
static void iwarp_test_mo_limit(struct kunit *test)
{
	struct vd_iw_hdr in = {
		.opcode = VD_OP_SEND, .mo = 0xfffffff0,
	}, out;
	u8 buf[64] = {};

	KUNIT_ASSERT_EQ(test, vd_iw_build(buf, sizeof(buf), &in), 18);
	KUNIT_EXPECT_EQ(test, vd_iw_parse(buf, 18 + 16, &out), VD_IW_OK);
	KUNIT_EXPECT_EQ(test, vd_iw_parse(buf, 18 + 17, &out),
			VD_IW_DDP_UT_TOO_LONG);
}

static void iwarp_test_msn_mo_checks(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, vd_ddp_msn_check(1, 1, 1), VD_IW_OK);
	KUNIT_EXPECT_EQ(test, vd_ddp_msn_check(1, 1, 0),
			VD_IW_DDP_UT_MSN_NOBUF);
	KUNIT_EXPECT_EQ(test, vd_ddp_msn_check(2, 1, 5),
			VD_IW_DDP_UT_MSN_RANGE);
	KUNIT_EXPECT_EQ(test, vd_ddp_msn_check(0, 1, 5),
			VD_IW_DDP_UT_MSN_RANGE);
	/* Out of range wins over no buffer: the MSN is checked first. */
	KUNIT_EXPECT_EQ(test, vd_ddp_msn_check(7, 1, 0),
			VD_IW_DDP_UT_MSN_RANGE);
	/* MSNs wrap modulo 2^32 (RFC 5041 section 5.3). */
	KUNIT_EXPECT_EQ(test, vd_ddp_msn_check(0, 0, 1), VD_IW_OK);

	KUNIT_EXPECT_EQ(test, vd_ddp_mo_check(0, 0), VD_IW_OK);
	KUNIT_EXPECT_EQ(test, vd_ddp_mo_check(1436, 1436), VD_IW_OK);
	KUNIT_EXPECT_EQ(test, vd_ddp_mo_check(1435, 1436), VD_IW_DDP_UT_MO);

	KUNIT_EXPECT_EQ(test, vd_ddp_fits(0, 0, 0), VD_IW_OK);
	KUNIT_EXPECT_EQ(test, vd_ddp_fits(0, 1, 0), VD_IW_DDP_UT_TOO_LONG);
	KUNIT_EXPECT_EQ(test, vd_ddp_fits(100, 28, 128), VD_IW_OK);
	KUNIT_EXPECT_EQ(test, vd_ddp_fits(100, 29, 128),
			VD_IW_DDP_UT_TOO_LONG);
	KUNIT_EXPECT_EQ(test, vd_ddp_fits(U32_MAX, U32_MAX, 1ULL << 33),
			VD_IW_OK);
	KUNIT_EXPECT_EQ(test, vd_ddp_fits(U32_MAX, 2, 1ULL << 32),
			VD_IW_DDP_UT_TOO_LONG);
}

/* ---- MPA CRC ---- */

struct crc_vector {
	const char *name;
	u8 fill;		/* 0: zeros, 1: ones, 2: up, 3: down, 4: scsi */
	u32 crc;		/* the CRC value */
	u8 wire[4];		/* as RFC 3720 B.4 lists its bytes */
};

static const u8 scsi_read10[48] = {
	0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
	0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
	0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

static const struct crc_vector crc_vectors[] = {
	{ "32 bytes of zeros", 0, 0x8a9136aa, { 0xaa, 0x36, 0x91, 0x8a } },
	{ "32 bytes of ones", 1, 0x62a8ab43, { 0x43, 0xab, 0xa8, 0x62 } },
	{ "32 incrementing bytes", 2, 0x46dd794e, { 0x4e, 0x79, 0xdd, 0x46 } },
	{ "32 decrementing bytes", 3, 0x113fdb5c, { 0x5c, 0xdb, 0x3f, 0x11 } },
	{ "SCSI Read (10) PDU", 4, 0xd9963a56, { 0x56, 0x3a, 0x96, 0xd9 } },
};

static void crc_vector_desc(const struct crc_vector *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(crc_vector, crc_vectors, crc_vector_desc);

static void iwarp_test_crc_vectors(struct kunit *test)
{
	const struct crc_vector *c = test->param_value;
	__le32 le;
	u8 buf[48];
	size_t len = 32, i;
	u32 crc;

	for (i = 0; i < 32; i++)
		buf[i] = c->fill == 0 ? 0 : c->fill == 1 ? 0xff :
			 c->fill == 2 ? i : 31 - i;
	if (c->fill == 4) {
		memcpy(buf, scsi_read10, sizeof(scsi_read10));
		len = sizeof(scsi_read10);
	}
	crc = ~vd_mpa_crc(VD_MPA_CRC_SEED, buf, len);
	KUNIT_EXPECT_EQ(test, crc, c->crc);
	KUNIT_EXPECT_EQ(test, ref_crc32c(buf, len), c->crc);
	/* Sent least significant byte first, as listed in RFC 3720. */
	le = cpu_to_le32(crc);
	expect_bytes(test, (const u8 *)&le, c->wire, 4);
	/* In pieces: the running value carries over. */
	crc = vd_mpa_crc(VD_MPA_CRC_SEED, buf, 5);
	crc = vd_mpa_crc(crc, buf + 5, len - 5);
	KUNIT_EXPECT_EQ(test, ~crc, c->crc);
}

/* The kernel's crc32c against the bit-serial one, at odd lengths. */
static void iwarp_test_crc_reference(struct kunit *test)
{
	u8 *buf;
	size_t len, off;

	buf = kunit_kmalloc(test, 300, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	for (len = 0; len < 300; len++)
		buf[len] = len * 7 + 3;
	for (off = 0; off < 4; off++)
		for (len = 0; len + off <= 300; len += 13)
			KUNIT_EXPECT_EQ(test,
					~vd_mpa_crc(VD_MPA_CRC_SEED, buf + off,
						    len),
					ref_crc32c(buf + off, len));
}

/*
 * Whole FPDUs whose bytes and CRC were computed outside the kernel (a
 * bit-serial CRC32c in another language): a Send of "iWARP", MSN 1, which
 * needs 3 pad bytes, and a tagged RDMA Write of 8 bytes, which needs none.
 */
static const u8 fpdu_send[32] = {
	0x00, 0x17, 0x41, 0x43, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
	0x00, 0x00, 0x00, 0x00, 0x69, 0x57, 0x41, 0x52,
	0x50, 0x00, 0x00, 0x00, 0x8e, 0x5f, 0x33, 0x9c,
};

static const u8 fpdu_write[28] = {
	0x00, 0x16, 0xc1, 0x40, 0x12, 0x34, 0x56, 0x78,
	0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x6b, 0xe5, 0xa5, 0xaa,
};

static void iwarp_test_fpdu_golden(struct kunit *test)
{
	struct vd_iw_hdr send = { .opcode = VD_OP_SEND, .last = true,
				  .msn = 1 };
	struct vd_iw_hdr write = { .opcode = VD_OP_WRITE, .last = true,
				   .stag = 0x12345678,
				   .to = 0x1122334455667788ULL };
	struct vd_iw_hdr out;
	u8 buf[64];
	int n, i;

	/* Send: headers, payload, seal. */
	memset(buf, 0xcc, sizeof(buf));
	n = vd_iw_build(buf + 2, sizeof(buf) - 2, &send);
	KUNIT_ASSERT_EQ(test, n, 18);
	memcpy(buf + 2 + n, "iWARP", 5);
	KUNIT_EXPECT_EQ(test, vd_mpa_pad(n + 5), 3U);
	KUNIT_EXPECT_EQ(test, vd_mpa_fpdu_len(n + 5), 32U);
	KUNIT_EXPECT_EQ(test, vd_mpa_fpdu_seal(buf, 31, n + 5, true), -ENOSPC);
	KUNIT_ASSERT_EQ(test, vd_mpa_fpdu_seal(buf, sizeof(buf), n + 5, true),
			32);
	expect_bytes(test, buf, fpdu_send, sizeof(fpdu_send));
	KUNIT_EXPECT_EQ(test, vd_mpa_fpdu_crc(fpdu_send, 23), 0x9c335f8eU);
	KUNIT_EXPECT_EQ(test, vd_mpa_fpdu_verify(fpdu_send, 32, true),
			VD_IW_OK);
	KUNIT_EXPECT_EQ(test, vd_iw_parse(fpdu_send + 2, 23, &out), VD_IW_OK);
	KUNIT_EXPECT_EQ(test, out.payload_len, 5U);

	/* RDMA Write. */
	memset(buf, 0xcc, sizeof(buf));
	n = vd_iw_build(buf + 2, sizeof(buf) - 2, &write);
	KUNIT_ASSERT_EQ(test, n, 14);
	for (i = 0; i < 8; i++)
		buf[2 + n + i] = i;
	KUNIT_ASSERT_EQ(test, vd_mpa_fpdu_seal(buf, sizeof(buf), n + 8, true),
			28);
	expect_bytes(test, buf, fpdu_write, sizeof(fpdu_write));
	KUNIT_EXPECT_EQ(test, vd_mpa_fpdu_verify(fpdu_write, 28, true),
			VD_IW_OK);

	/* Without CRC the field is zero, and not looked at on receipt. */
	KUNIT_ASSERT_EQ(test, vd_mpa_fpdu_seal(buf, sizeof(buf), n + 8, false),
			28);
	KUNIT_EXPECT_EQ(test, buf[24] | buf[25] | buf[26] | buf[27], 0);
	KUNIT_EXPECT_EQ(test, vd_mpa_fpdu_verify(buf, 28, false), VD_IW_OK);
	KUNIT_EXPECT_EQ(test, vd_mpa_fpdu_verify(buf, 28, true),
			VD_IW_MPA_CRC);
}

static void iwarp_test_fpdu_corrupt(struct kunit *test)
{
	u8 buf[32];
	int bit;

	/* Any single bit flipped, the CRC included, is caught. */
	for (bit = 0; bit < 32 * 8; bit++) {
		memcpy(buf, fpdu_send, sizeof(buf));
		buf[bit / 8] ^= 1 << (bit % 8);
		/* The length bytes frame a different FPDU: FPDU error. */
		KUNIT_EXPECT_EQ(test, vd_mpa_fpdu_verify(buf, 32, true),
				bit < 16 ? VD_IW_MPA_FPDU : VD_IW_MPA_CRC);
	}
	KUNIT_EXPECT_EQ(test, vd_mpa_fpdu_verify(fpdu_send, 31, true),
			VD_IW_MPA_FPDU);
	KUNIT_EXPECT_EQ(test, vd_mpa_fpdu_verify(fpdu_send, 1, false),
			VD_IW_MPA_FPDU);
	KUNIT_EXPECT_EQ(test, vd_mpa_fpdu_verify(fpdu_send, 0, false),
			VD_IW_MPA_FPDU);
	KUNIT_EXPECT_EQ(test, vd_mpa_fpdu_seal(buf, sizeof(buf), 0x10000,
					       true), -EINVAL);
}

/* Pad and FPDU length for each ULPDU length mod 4, sealed and verified. */
static void iwarp_test_fpdu_pad(struct kunit *test)
{
	static const u8 pad[4] = { 2, 1, 0, 3 };
	u8 *buf;
	u32 len;

	buf = kunit_kmalloc(test, 128, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	for (len = 0; len < 64; len++) {
		KUNIT_EXPECT_EQ(test, vd_mpa_pad(len), (u32)pad[len % 4]);
		KUNIT_EXPECT_EQ(test, vd_mpa_fpdu_len(len),
				2 + len + pad[len % 4] + 4);
		KUNIT_EXPECT_EQ(test, vd_mpa_fpdu_len(len) % 4, 0U);
		memset(buf, 0xff, 128);
		KUNIT_ASSERT_EQ(test, vd_mpa_fpdu_seal(buf, 128, len, true),
				(int)vd_mpa_fpdu_len(len));
		/* The pad is zeros, and the CRC covers it. */
		KUNIT_EXPECT_NULL(test, memchr_inv(buf + 2 + len, 0,
						   pad[len % 4]));
		KUNIT_EXPECT_EQ(test, get_le32(buf + 2 + len + pad[len % 4]),
				ref_crc32c(buf, 2 + len + pad[len % 4]));
		KUNIT_EXPECT_EQ(test, vd_mpa_fpdu_verify(buf,
							 vd_mpa_fpdu_len(len),
							 true), VD_IW_OK);
	}
	KUNIT_EXPECT_EQ(test, vd_mpa_fpdu_len(65534), 65540U);
	KUNIT_EXPECT_EQ(test, vd_mpa_fpdu_len(65535), 65544U);
}

/* ---- segmentation ---- */

static void iwarp_test_mulpdu(struct kunit *test)
{
	/* RFC 5044 section 7.1 without markers: EMSS - (6 + EMSS mod 4). */
	KUNIT_EXPECT_EQ(test, vd_mpa_mulpdu(1460), 1454U);
	KUNIT_EXPECT_EQ(test, vd_mpa_mulpdu(1461), 1454U);
	KUNIT_EXPECT_EQ(test, vd_mpa_mulpdu(1462), 1454U);
	KUNIT_EXPECT_EQ(test, vd_mpa_mulpdu(1463), 1454U);
	KUNIT_EXPECT_EQ(test, vd_mpa_mulpdu(1464), 1458U);
	KUNIT_EXPECT_EQ(test, vd_mpa_mulpdu(536), 530U);
	KUNIT_EXPECT_EQ(test, vd_mpa_mulpdu(8948), 8942U);
	KUNIT_EXPECT_EQ(test, vd_mpa_mulpdu(65480), 65474U);
	KUNIT_EXPECT_EQ(test, vd_mpa_mulpdu(65540), 65534U);
	KUNIT_EXPECT_EQ(test, vd_mpa_mulpdu(1U << 20), 65534U);
	KUNIT_EXPECT_EQ(test, vd_mpa_mulpdu(7), 0U);
	KUNIT_EXPECT_EQ(test, vd_mpa_mulpdu(6), 0U);
	KUNIT_EXPECT_EQ(test, vd_mpa_mulpdu(0), 0U);
	KUNIT_EXPECT_EQ(test, vd_mpa_mulpdu(8), 2U);

	KUNIT_EXPECT_EQ(test, vd_fpdu_max_payload(1460, VD_HDR_TAGGED), 1440U);
	KUNIT_EXPECT_EQ(test, vd_fpdu_max_payload(1460, VD_HDR_UNTAGGED),
			1436U);
	KUNIT_EXPECT_EQ(test, vd_fpdu_max_payload(1463, VD_HDR_UNTAGGED),
			1436U);
	KUNIT_EXPECT_EQ(test, vd_fpdu_max_payload(1464, VD_HDR_UNTAGGED),
			1440U);
	KUNIT_EXPECT_EQ(test, vd_fpdu_max_payload(100, VD_HDR_UNTAGGED), 76U);
	/* Too small an MSS: FPDUs of the minimum payload, split by TCP. */
	KUNIT_EXPECT_EQ(test, vd_fpdu_max_payload(87, VD_HDR_UNTAGGED), 64U);
	KUNIT_EXPECT_EQ(test, vd_fpdu_max_payload(88, VD_HDR_UNTAGGED), 64U);
	KUNIT_EXPECT_EQ(test, vd_fpdu_max_payload(92, VD_HDR_UNTAGGED), 68U);
	KUNIT_EXPECT_EQ(test, vd_fpdu_max_payload(0, VD_HDR_TAGGED), 64U);
	KUNIT_EXPECT_EQ(test, vd_fpdu_max_payload(1U << 20, VD_HDR_TAGGED),
			65520U);
}

struct seg_case {
	const char *name;
	u32 emss;
	u32 hdr_len;
	u64 msg_len;
	u32 count;		/* FPDUs expected */
	u32 last_len;		/* payload of the last one */
};

static const struct seg_case seg_cases[] = {
	{ "0 bytes", 1460, VD_HDR_UNTAGGED, 0, 1, 0 },
	{ "1 byte", 1460, VD_HDR_UNTAGGED, 1, 1, 1 },
	{ "max payload - 1", 1460, VD_HDR_UNTAGGED, 1435, 1, 1435 },
	{ "max payload", 1460, VD_HDR_UNTAGGED, 1436, 1, 1436 },
	{ "max payload + 1", 1460, VD_HDR_UNTAGGED, 1437, 2, 1 },
	{ "2 max payloads", 1460, VD_HDR_UNTAGGED, 2872, 2, 1436 },
	{ "tagged max payload", 1460, VD_HDR_TAGGED, 1440, 1, 1440 },
	{ "tagged max payload + 1", 1460, VD_HDR_TAGGED, 1441, 2, 1 },
	{ "MSS 1461", 1461, VD_HDR_UNTAGGED, 1437, 2, 1 },
	{ "MSS 1463", 1463, VD_HDR_UNTAGGED, 1436 * 3, 3, 1436 },
	{ "MSS 1464", 1464, VD_HDR_UNTAGGED, 1437, 1, 1437 },
	{ "MSS 536", 536, VD_HDR_TAGGED, 4096, 8, 4096 - 7 * 516 },
	{ "jumbo", 8948, VD_HDR_TAGGED, 65536, 8, 65536 - 7 * 8928 },
	{ "tiny MSS", 60, VD_HDR_UNTAGGED, 200, 4, 8 },
	{ "1 MiB", 1460, VD_HDR_TAGGED, 1 << 20, 729, (1 << 20) - 728 * 1440 },
	{ "huge MSS 1 MiB", 1U << 20, VD_HDR_UNTAGGED, 1 << 20, 17,
	  (1 << 20) - 16 * 65516 },
};

static void seg_case_desc(const struct seg_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(seg, seg_cases, seg_case_desc);

static void iwarp_test_segment(struct kunit *test)
{
	const struct seg_case *c = test->param_value;
	u32 max = vd_fpdu_max_payload(c->emss, c->hdr_len);
	u32 n = vd_fpdu_count(c->msg_len, max), i;
	bool fits = vd_mpa_mulpdu(c->emss) >= c->hdr_len + VD_FPDU_MIN_PAYLOAD;
	struct vd_fpdu_seg seg;
	u64 off = 0;

	KUNIT_ASSERT_EQ(test, n, c->count);
	for (i = 0; i < n; i++) {
		vd_fpdu_segment(c->msg_len, max, c->hdr_len, i, &seg);
		KUNIT_ASSERT_EQ(test, (u64)seg.offset, off);
		KUNIT_EXPECT_EQ(test, seg.last, i == n - 1);
		KUNIT_EXPECT_EQ(test, seg.ulpdu_len, c->hdr_len + seg.len);
		KUNIT_EXPECT_EQ(test, seg.pad, vd_mpa_pad(seg.ulpdu_len));
		KUNIT_EXPECT_EQ(test, seg.fpdu_len,
				vd_mpa_fpdu_len(seg.ulpdu_len));
		KUNIT_EXPECT_LE(test, seg.ulpdu_len, VD_MPA_ULPDU_MAX);
		KUNIT_EXPECT_EQ(test, seg.fpdu_len % 4, 0U);
		if (fits)
			KUNIT_EXPECT_LE(test, seg.fpdu_len, c->emss);
		if (!seg.last) {
			KUNIT_EXPECT_EQ(test, seg.len, max);
			KUNIT_EXPECT_EQ(test, seg.len % 4, 0U);
			/* A full FPDU needs no pad. */
			KUNIT_EXPECT_EQ(test, seg.pad, 0U);
		} else {
			KUNIT_EXPECT_EQ(test, seg.len, c->last_len);
		}
		off += seg.len;
	}
	KUNIT_EXPECT_EQ(test, off, c->msg_len);
	/* Past the end: an empty last segment, never beyond the message. */
	vd_fpdu_segment(c->msg_len, max, c->hdr_len, n, &seg);
	KUNIT_EXPECT_EQ(test, (u64)seg.offset, c->msg_len);
	KUNIT_EXPECT_EQ(test, seg.len, 0U);
}

/* The largest message MO can address: 2^32 - 1 bytes. */
static void iwarp_test_segment_max_message(struct kunit *test)
{
	u32 max = vd_fpdu_max_payload(1460, VD_HDR_UNTAGGED);
	u32 n = vd_fpdu_count(U32_MAX, max);
	struct vd_fpdu_seg seg;

	KUNIT_EXPECT_EQ(test, (u64)n, DIV_ROUND_UP_ULL((u64)U32_MAX, max));
	vd_fpdu_segment(U32_MAX, max, VD_HDR_UNTAGGED, n - 1, &seg);
	KUNIT_EXPECT_TRUE(test, seg.last);
	KUNIT_EXPECT_EQ(test, (u64)seg.offset + seg.len, (u64)U32_MAX);
	KUNIT_EXPECT_EQ(test, seg.len, U32_MAX % max);
	vd_fpdu_segment(U32_MAX, max, VD_HDR_UNTAGGED, n - 2, &seg);
	KUNIT_EXPECT_FALSE(test, seg.last);
	KUNIT_EXPECT_EQ(test, seg.len, max);
	KUNIT_EXPECT_EQ(test, vd_fpdu_count(0, 0), 1U);
}

static struct kunit_case iwarp_test_cases[] = {
	KUNIT_CASE(iwarp_test_opcodes),
	KUNIT_CASE_PARAM(iwarp_test_mpa_roundtrip, mpa_gen_params),
	KUNIT_CASE_PARAM(iwarp_test_mpa_build_invalid,
			 mpa_bad_build_gen_params),
	KUNIT_CASE_PARAM(iwarp_test_mpa_parse_invalid,
			 mpa_bad_parse_gen_params),
	KUNIT_CASE(iwarp_test_mpa_siw_frames),
	KUNIT_CASE_PARAM(iwarp_test_hdr_roundtrip, iw_gen_params),
	KUNIT_CASE(iwarp_test_hdr_single_segment),
	KUNIT_CASE_PARAM(iwarp_test_hdr_invalid, iw_bad_gen_params),
	KUNIT_CASE(iwarp_test_mo_limit),
	KUNIT_CASE(iwarp_test_msn_mo_checks),
	KUNIT_CASE_PARAM(iwarp_test_crc_vectors, crc_vector_gen_params),
	KUNIT_CASE(iwarp_test_crc_reference),
	KUNIT_CASE(iwarp_test_fpdu_golden),
	KUNIT_CASE(iwarp_test_fpdu_corrupt),
	KUNIT_CASE(iwarp_test_fpdu_pad),
	KUNIT_CASE(iwarp_test_mulpdu),
	KUNIT_CASE_PARAM(iwarp_test_segment, seg_gen_params),
	KUNIT_CASE(iwarp_test_segment_max_message),
	{}
};

static struct kunit_suite iwarp_test_suite = {
	.name = "viaduct_iwarp",
	.test_cases = iwarp_test_cases,
};

kunit_test_suite(iwarp_test_suite);
