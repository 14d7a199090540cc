// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite viaduct_terminate: the Terminate code table of terminate.c
 * against the RFC 5040/5041/5044/6581 values, written out again here, the
 * completion statuses each code gives on both ends, the message built,
 * framed and parsed back, Terminates as Linux siw writes them (Layer and
 * EType swapped, M/D/R in the wrong bits), and the nibble fixups.
 */
#include <kunit/test.h>
#include <linux/kernel.h>
#include <linux/string.h>

#include <viaduct/viaduct-abi.h>

#include "../iwarp.h"
#include "../terminate.h"

/* What a Terminate about each of our errors carries. */
enum offender {
	OFF_NONE,	/* no headers copied */
	OFF_SEND,	/* about a Send: M, D and its DDP header */
	OFF_WRITE,	/* about an RDMA Write: M, D and its DDP header */
	OFF_RREQ,	/* about a Read Request: M, D, R and both headers */
};

struct term_case {
	const char *name;
	enum vd_iw_err err;
	u8 layer, etype, ecode;
	u8 wc;			/* local CQE status */
	u8 remote_wc;		/* the peer's CQE status on receipt */
	enum offender off;
};

#define T(e, l, t, c, w, rw, o) { #e, VD_IW_##e, l, t, c, VIADUCT_WC_##w, \
				  VIADUCT_WC_##rw, OFF_##o }

/*
 * RFC 5044 section 8 and RFC 6581 section 9 (LLP, layer 2), RFC 5041
 * section 7.2 (DDP, layer 1), RFC 5040 section 7.2 (RDMAP, layer 0).
 */
static const struct term_case term_cases[] = {
	T(LLP_LOST,		2, 0, 0x01, TRANSPORT_ERR, REM_OP_ERR, NONE),
	T(MPA_CRC,		2, 0, 0x02, TRANSPORT_ERR, REM_OP_ERR, NONE),
	T(MPA_FPDU,		2, 0, 0x03, TRANSPORT_ERR, REM_OP_ERR, NONE),
	T(MPA_REQREP,		2, 0, 0x04, TRANSPORT_ERR, REM_OP_ERR, NONE),
	T(MPA_MARKERS,		2, 0, 0x04, TRANSPORT_ERR, REM_OP_ERR, NONE),
	T(MPA_CATASTROPHIC,	2, 0, 0x05, TRANSPORT_ERR, REM_OP_ERR, NONE),
	T(MPA_NO_IRD,		2, 0, 0x06, TRANSPORT_ERR, REM_OP_ERR, NONE),
	T(MPA_NO_RTR,		2, 0, 0x07, TRANSPORT_ERR, REM_OP_ERR, NONE),
	T(DDP_CATASTROPHIC,	1, 0, 0x00, GENERAL_ERR, REM_ACCESS_ERR,
	  SEND),
	T(DDP_T_STAG,		1, 1, 0x00, LOC_PROT_ERR, REM_ACCESS_ERR,
	  WRITE),
	T(DDP_T_BOUNDS,		1, 1, 0x01, LOC_PROT_ERR, REM_ACCESS_ERR,
	  WRITE),
	T(DDP_T_NOT_ASSOC,	1, 1, 0x02, LOC_PROT_ERR, REM_ACCESS_ERR,
	  WRITE),
	T(DDP_T_TO_WRAP,	1, 1, 0x03, LOC_PROT_ERR, REM_ACCESS_ERR,
	  WRITE),
	T(DDP_T_VERSION,	1, 1, 0x04, REM_OP_ERR, REM_ACCESS_ERR, NONE),
	T(DDP_UT_QN,		1, 2, 0x01, REM_OP_ERR, REM_OP_ERR, SEND),
	T(DDP_UT_MSN_NOBUF,	1, 2, 0x02, REM_OP_ERR, REM_INV_REQ_ERR,
	  SEND),
	T(DDP_UT_MSN_RANGE,	1, 2, 0x03, REM_OP_ERR, REM_OP_ERR, SEND),
	T(DDP_UT_MO,		1, 2, 0x04, REM_OP_ERR, REM_OP_ERR, SEND),
	T(DDP_UT_TOO_LONG,	1, 2, 0x05, LOC_LEN_ERR, REM_INV_REQ_ERR,
	  SEND),
	T(DDP_UT_VERSION,	1, 2, 0x06, REM_OP_ERR, REM_OP_ERR, NONE),
	T(RDMAP_CATASTROPHIC,	0, 0, 0x00, GENERAL_ERR, REM_OP_ERR, NONE),
	T(RDMAP_P_STAG,		0, 1, 0x00, LOC_PROT_ERR, REM_ACCESS_ERR,
	  RREQ),
	T(RDMAP_P_BOUNDS,	0, 1, 0x01, LOC_PROT_ERR, REM_ACCESS_ERR,
	  RREQ),
	T(RDMAP_P_RIGHTS,	0, 1, 0x02, LOC_PROT_ERR, REM_ACCESS_ERR,
	  RREQ),
	T(RDMAP_P_NOT_ASSOC,	0, 1, 0x03, LOC_PROT_ERR, REM_ACCESS_ERR,
	  RREQ),
	T(RDMAP_P_TO_WRAP,	0, 1, 0x04, LOC_PROT_ERR, REM_ACCESS_ERR,
	  RREQ),
	T(RDMAP_P_INVALIDATE,	0, 1, 0x09, LOC_PROT_ERR, REM_ACCESS_ERR,
	  SEND),
	T(RDMAP_P_UNSPEC,	0, 1, 0xff, LOC_PROT_ERR, REM_ACCESS_ERR,
	  RREQ),
	T(RDMAP_VERSION,	0, 2, 0x05, REM_OP_ERR, REM_OP_ERR, SEND),
	T(RDMAP_OPCODE,		0, 2, 0x06, REM_OP_ERR, REM_OP_ERR, SEND),
	T(RDMAP_STREAM,		0, 2, 0x07, REM_OP_ERR, REM_OP_ERR, RREQ),
	T(RDMAP_GLOBAL,		0, 2, 0x08, GENERAL_ERR, REM_OP_ERR, SEND),
	T(RDMAP_INVALIDATE,	0, 2, 0x09, LOC_PROT_ERR, REM_OP_ERR, SEND),
	T(RDMAP_UNSPEC,		0, 2, 0xff, REM_OP_ERR, REM_OP_ERR, WRITE),
};

static_assert(ARRAY_SIZE(term_cases) == VD_IW_NR - 1);

static void term_case_desc(const struct term_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(term, term_cases, term_case_desc);

static u16 code_of(const struct term_case *c)
{
	return c->layer << 12 | c->etype << 8 | c->ecode;
}

static void terminate_test_table(struct kunit *test)
{
	const struct term_case *c = test->param_value;
	u16 code = vd_term_code(c->err);
	struct vd_term_msg msg = { .wire = code_of(c) };

	KUNIT_EXPECT_EQ(test, code, code_of(c));
	KUNIT_EXPECT_EQ(test, vd_term_layer(code), c->layer);
	KUNIT_EXPECT_EQ(test, vd_term_etype(code), c->etype);
	KUNIT_EXPECT_EQ(test, vd_term_ecode(code), c->ecode);
	KUNIT_EXPECT_EQ(test, vd_term_wc_status(c->err), c->wc);
	msg.code = msg.wire;
	KUNIT_EXPECT_EQ(test, vd_term_remote_wc_status(&msg), c->remote_wc);
	/* MPA's markers error shares its code with the invalid frame. */
	KUNIT_EXPECT_EQ(test, vd_term_err(code),
			c->err == VD_IW_MPA_MARKERS ? VD_IW_MPA_REQREP :
						      c->err);
	KUNIT_EXPECT_STRNEQ(test, vd_term_name(code), "unknown");
	/* A code that is sent right is never changed. */
	KUNIT_EXPECT_EQ(test, vd_term_fix_nibbles(code), code);
}

static void terminate_test_table_edges(struct kunit *test)
{
	static const u16 unknown[] = {
		0x0001, 0x0105, 0x0200, 0x0204, 0x1001, 0x1105, 0x1200,
		0x1207, 0x1300, 0x2000, 0x2008, 0x2101, 0x3000, 0xf0ff,
	};
	unsigned int i;

	KUNIT_EXPECT_EQ(test, vd_term_code(VD_IW_OK), 0);
	KUNIT_EXPECT_EQ(test, vd_term_code(VD_IW_NR), 0);
	KUNIT_EXPECT_EQ(test, vd_term_wc_status(VD_IW_OK), VIADUCT_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, vd_term_wc_status(VD_IW_NR),
			VIADUCT_WC_GENERAL_ERR);
	for (i = 0; i < ARRAY_SIZE(unknown); i++) {
		KUNIT_EXPECT_EQ(test, vd_term_err(unknown[i]), VD_IW_NR);
		KUNIT_EXPECT_STREQ(test, vd_term_name(unknown[i]), "unknown");
	}
	/* Every code is distinct but for the markers alias. */
	KUNIT_EXPECT_EQ(test, vd_term_code(VD_IW_MPA_MARKERS),
			vd_term_code(VD_IW_MPA_REQREP));
}

/* A failed STag check: DDP tagged for a data sink, RDMAP for a source. */
static void terminate_test_access_codes(struct kunit *test)
{
	static const struct {
		enum vd_access_status st;
		u16 ddp, rdmap;
	} want[] = {
		{ VD_ACCESS_INVALID_STAG,	0x1100, 0x0100 },
		{ VD_ACCESS_INVALID_STATE,	0x1100, 0x0100 },
		{ VD_ACCESS_BOUNDS,		0x1101, 0x0101 },
		{ VD_ACCESS_RIGHTS,		0x1102, 0x0102 },
		{ VD_ACCESS_PD_MISMATCH,	0x1102, 0x0103 },
		{ VD_ACCESS_WRAP,		0x1103, 0x0104 },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(want); i++) {
		KUNIT_EXPECT_EQ(test, vd_term_access_code(want[i].st, true),
				want[i].ddp);
		KUNIT_EXPECT_EQ(test, vd_term_access_code(want[i].st, false),
				want[i].rdmap);
		/* Both are codes of the table. */
		KUNIT_EXPECT_NE(test, vd_term_err(want[i].ddp), VD_IW_NR);
		KUNIT_EXPECT_NE(test, vd_term_err(want[i].rdmap), VD_IW_NR);
	}
	KUNIT_EXPECT_EQ(test, vd_term_access_code(VD_ACCESS_OK, true), 0);
}

/* The headers of the segment a Terminate is about. */
static int offender_build(enum offender off, u8 *buf, size_t size)
{
	struct vd_iw_hdr h = { .last = true, .msn = 0x01020304 };

	switch (off) {
	case OFF_SEND:
		h.opcode = VD_OP_SEND_INV;
		h.inv_stag = 0xabcdef01;
		h.mo = 0x1000;
		break;
	case OFF_WRITE:
		h.opcode = VD_OP_WRITE;
		h.stag = 0x11223344;
		h.to = 0x5566778899aabbccULL;
		break;
	case OFF_RREQ:
		h.opcode = VD_OP_READ_REQ;
		h.sink_stag = 0x0a0b0c0d;
		h.sink_to = 0x1000;
		h.size = 4096;
		h.src_stag = 0x0e0f1011;
		h.src_to = 0x2000;
		break;
	default:
		h.opcode = VD_OP_SEND;
		break;
	}
	return vd_iw_build(buf, size, &h);
}

/*
 * Build a Terminate for each code about a fitting segment, frame it with
 * a CRC, and take it apart again as a receiver does.
 */
static void terminate_test_roundtrip(struct kunit *test)
{
	const struct term_case *c = test->param_value;
	u16 code = code_of(c);
	u8 bad[VD_HDR_READ_REQ + 8], *buf;
	u32 hdrct, want_hdrct, want_len, bad_len;
	struct vd_term_msg msg;
	struct vd_iw_hdr hdr;
	int n, ulpdu;

	buf = kunit_kzalloc(test, 256, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	n = offender_build(c->off, bad, sizeof(bad));
	KUNIT_ASSERT_GT(test, n, 0);
	bad_len = n;

	switch (c->off) {
	case OFF_NONE:
		want_hdrct = 0;
		want_len = VD_HDR_TERMINATE;
		break;
	case OFF_RREQ:
		want_hdrct = VD_TERM_HDR_M | VD_TERM_HDR_D | VD_TERM_HDR_R;
		want_len = VD_HDR_TERMINATE + 2 + VD_HDR_READ_REQ;
		break;
	case OFF_WRITE:
		want_hdrct = VD_TERM_HDR_M | VD_TERM_HDR_D;
		want_len = VD_HDR_TERMINATE + 2 + VD_HDR_TAGGED;
		break;
	default:
		want_hdrct = VD_TERM_HDR_M | VD_TERM_HDR_D;
		want_len = VD_HDR_TERMINATE + 2 + VD_HDR_UNTAGGED;
		break;
	}
	/* An RDMAP error about a Read Request whose header is cut short. */
	if (c->off == OFF_RREQ && c->layer == 0)
		KUNIT_EXPECT_EQ(test, vd_term_hdrct(code, bad, n - 1),
				VD_TERM_HDR_M | VD_TERM_HDR_D);

	/* The "none" rows are about a Send too, whose header stays out. */
	hdrct = vd_term_hdrct(code, bad, bad_len);
	KUNIT_EXPECT_EQ(test, hdrct, want_hdrct);

	KUNIT_EXPECT_EQ(test, vd_term_build(buf + 2, want_len - 1, code, 1,
					    bad, bad_len, bad_len + 100),
			-ENOSPC);
	ulpdu = vd_term_build(buf + 2, 254, code, 1, bad, bad_len,
			      bad_len + 100);
	KUNIT_ASSERT_EQ(test, ulpdu, (int)want_len);
	KUNIT_ASSERT_LE(test, ulpdu, (int)VD_TERM_ULPDU_MAX);
	KUNIT_ASSERT_EQ(test, vd_mpa_fpdu_seal(buf, 256, ulpdu, true),
			(int)vd_mpa_fpdu_len(ulpdu));

	/* The receiver's path. */
	KUNIT_ASSERT_EQ(test, vd_mpa_fpdu_verify(buf, vd_mpa_fpdu_len(ulpdu),
						 true), VD_IW_OK);
	KUNIT_ASSERT_EQ(test, vd_iw_parse(buf + 2, ulpdu, &hdr), VD_IW_OK);
	KUNIT_EXPECT_EQ(test, hdr.opcode, VD_OP_TERMINATE);
	KUNIT_EXPECT_EQ(test, hdr.qn, (u32)VD_QN_TERMINATE);
	KUNIT_EXPECT_EQ(test, hdr.msn, 1U);
	KUNIT_EXPECT_EQ(test, hdr.mo, 0U);
	KUNIT_EXPECT_TRUE(test, hdr.last);
	KUNIT_ASSERT_EQ(test, vd_term_parse(buf + 2 + hdr.hdr_len,
					    hdr.payload_len, &msg), VD_IW_OK);
	KUNIT_EXPECT_EQ(test, msg.wire, code);
	KUNIT_EXPECT_EQ(test, msg.code, code);
	KUNIT_EXPECT_FALSE(test, msg.siw);
	KUNIT_EXPECT_EQ(test, msg.m, !!(want_hdrct & VD_TERM_HDR_M));
	KUNIT_EXPECT_EQ(test, msg.d, !!(want_hdrct & VD_TERM_HDR_D));
	KUNIT_EXPECT_EQ(test, msg.r, !!(want_hdrct & VD_TERM_HDR_R));
	KUNIT_EXPECT_EQ(test, vd_term_err(msg.code),
			c->err == VD_IW_MPA_MARKERS ? VD_IW_MPA_REQREP :
						      c->err);
	KUNIT_EXPECT_EQ(test, vd_term_remote_wc_status(&msg), c->remote_wc);
	if (want_hdrct) {
		KUNIT_EXPECT_EQ(test, msg.seg_len, bad_len + 100);
		KUNIT_ASSERT_EQ(test, msg.ddp_len,
				c->off == OFF_WRITE ? 14 : 18);
		KUNIT_EXPECT_EQ(test, memcmp(msg.ddp, bad, msg.ddp_len), 0);
	} else {
		KUNIT_EXPECT_EQ(test, msg.ddp_len, 0);
	}
	KUNIT_EXPECT_EQ(test, msg.have_rreq, c->off == OFF_RREQ);
	if (msg.have_rreq)
		KUNIT_EXPECT_EQ(test, memcmp(msg.rreq, bad + VD_HDR_UNTAGGED,
					     sizeof(msg.rreq)), 0);
}

/*
 * One Terminate byte by byte (RFC 5040 section 4.8): DDP untagged error,
 * invalid MSN out of range, about a Send with MSN 2 and 1000 bytes.
 */
static void terminate_test_golden(struct kunit *test)
{
	static const u8 want[] = {
		/* DDP/RDMAP: untagged, L, DV 1, RV 1, Terminate */
		0x41, 0x47, 0, 0, 0, 0,
		0, 0, 0, 2,			/* QN 2 */
		0, 0, 0, 1,			/* MSN 1 */
		0, 0, 0, 0,			/* MO 0 */
		0x12, 0x03, 0xc0, 0x00,		/* DDP, untagged, 3, M D */
		0x03, 0xfa,			/* DDP Segment Length 1018 */
		0x41, 0x43, 0, 0, 0, 0,		/* the Send's header */
		0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0,
	};
	struct vd_iw_hdr send = { .opcode = VD_OP_SEND, .last = true,
				  .msn = 2 };
	u8 bad[VD_HDR_UNTAGGED], buf[64];
	int n;

	KUNIT_ASSERT_EQ(test, vd_iw_build(bad, sizeof(bad), &send),
			(int)sizeof(bad));
	memset(buf, 0xee, sizeof(buf));
	n = vd_term_build(buf, sizeof(buf),
			  vd_term_code(VD_IW_DDP_UT_MSN_RANGE), 1, bad,
			  sizeof(bad), sizeof(bad) + 1000);
	KUNIT_ASSERT_EQ(test, n, (int)sizeof(want));
	KUNIT_EXPECT_EQ(test, memcmp(buf, want, sizeof(want)), 0);
	KUNIT_EXPECT_EQ(test, buf[sizeof(want)], 0xee);

	/* A catastrophic error carries nothing after the control word. */
	n = vd_term_build(buf, sizeof(buf),
			  vd_term_code(VD_IW_RDMAP_CATASTROPHIC), 1, bad,
			  sizeof(bad), 0);
	KUNIT_ASSERT_EQ(test, n, 22);
	KUNIT_EXPECT_EQ(test, buf[18] | buf[19] | buf[20] | buf[21], 0);
	/* Nor does one without the offending headers at hand. */
	n = vd_term_build(buf, sizeof(buf), vd_term_code(VD_IW_DDP_UT_QN), 1,
			  NULL, 0, 0);
	KUNIT_ASSERT_EQ(test, n, 22);
	KUNIT_EXPECT_EQ(test, buf[18], 0x12);
	KUNIT_EXPECT_EQ(test, buf[19], 0x01);
	KUNIT_EXPECT_EQ(test, buf[20], 0);
	/* The segment length saturates. */
	n = vd_term_build(buf, sizeof(buf),
			  vd_term_code(VD_IW_DDP_UT_MSN_RANGE), 1, bad,
			  sizeof(bad), 70000);
	KUNIT_ASSERT_EQ(test, n, (int)sizeof(want));
	KUNIT_EXPECT_EQ(test, buf[22], 0xff);
	KUNIT_EXPECT_EQ(test, buf[23], 0xff);
	/* There is no layer 3. */
	KUNIT_EXPECT_EQ(test, vd_term_build(buf, sizeof(buf), 0x3000, 1, NULL,
					    0, 0), -EINVAL);
}

/* Offending headers whose layout cannot be trusted are not copied. */
static void terminate_test_hdrct_untrusted(struct kunit *test)
{
	struct vd_iw_hdr send = { .opcode = VD_OP_SEND, .last = true };
	u16 qn = vd_term_code(VD_IW_DDP_UT_QN);
	u8 bad[VD_HDR_UNTAGGED];

	KUNIT_ASSERT_EQ(test, vd_iw_build(bad, sizeof(bad), &send),
			(int)sizeof(bad));
	KUNIT_EXPECT_EQ(test, vd_term_hdrct(qn, bad, sizeof(bad)),
			VD_TERM_HDR_M | VD_TERM_HDR_D);
	KUNIT_EXPECT_EQ(test, vd_term_hdrct(qn, bad, sizeof(bad) - 1), 0U);
	KUNIT_EXPECT_EQ(test, vd_term_hdrct(qn, bad, 1), 0U);
	KUNIT_EXPECT_EQ(test, vd_term_hdrct(qn, NULL, sizeof(bad)), 0U);
	bad[0] &= ~VD_DDP_DV_MASK;	/* DDP version 0 */
	KUNIT_EXPECT_EQ(test, vd_term_hdrct(qn, bad, sizeof(bad)), 0U);
}

/*
 * Terminates as Linux siw sends them from a little-endian host: its
 * bitfield puts Layer in the low nibble of the first byte and M, D, R in
 * the low bits of the third (siw_send_terminate(), iwarp.h there).
 */
struct siw_case {
	const char *name;
	u8 ctrl[4];		/* the control word as siw sends it */
	u16 code;		/* what it means */
	bool m, d, r;
	u8 ddp_len;
	bool rreq;
	u8 remote_wc;
};

static const struct siw_case siw_cases[] = {
	{ "DDP untagged, MSN range, Send", { 0x21, 0x03, 0x03, 0x00 },
	  0x1203, true, true, false, 18, false, VIADUCT_WC_REM_OP_ERR },
	{ "DDP tagged, bounds, Write", { 0x11, 0x01, 0x03, 0x00 },
	  0x1101, true, true, false, 14, false, VIADUCT_WC_REM_ACCESS_ERR },
	{ "RDMAP protection, Read Request", { 0x10, 0x00, 0x07, 0x00 },
	  0x0100, true, true, true, 18, true, VIADUCT_WC_REM_ACCESS_ERR },
	{ "RDMAP protection, R for a Send", { 0x10, 0x09, 0x07, 0x00 },
	  0x0109, true, true, true, 18, false, VIADUCT_WC_REM_ACCESS_ERR },
	{ "RDMAP operation, Write", { 0x20, 0xff, 0x03, 0x00 },
	  0x02ff, true, true, false, 14, false, VIADUCT_WC_REM_OP_ERR },
	{ "MPA CRC", { 0x02, 0x02, 0x00, 0x00 },
	  0x2002, false, false, false, 0, false, VIADUCT_WC_REM_OP_ERR },
	/* Valid both ways: read as sent, RDMAP protection, invalid STag. */
	{ "DDP catastrophic", { 0x01, 0x00, 0x00, 0x00 },
	  0x0100, false, false, false, 0, false, VIADUCT_WC_REM_ACCESS_ERR },
	{ "RDMAP catastrophic", { 0x00, 0x00, 0x00, 0x00 },
	  0x0000, false, false, false, 0, false, VIADUCT_WC_REM_OP_ERR },
};

static void siw_case_desc(const struct siw_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(siw, siw_cases, siw_case_desc);

static void terminate_test_siw(struct kunit *test)
{
	const struct siw_case *c = test->param_value;
	struct vd_iw_hdr h = { .last = true, .msn = 7 };
	struct vd_term_msg msg;
	u8 buf[80] = {};
	u32 len = 4;
	int n;

	memcpy(buf, c->ctrl, 4);
	if (c->d) {
		/* siw sends the payload length as the segment length. */
		buf[4] = 0;
		buf[5] = 9;
		h.opcode = c->rreq ? VD_OP_READ_REQ :
			   c->ddp_len == 14 ? VD_OP_WRITE : VD_OP_SEND;
		h.sink_stag = 0x42;
		n = vd_iw_build(buf + 6, sizeof(buf) - 6, &h);
		KUNIT_ASSERT_GT(test, n, 0);
		len += 2 + n;
	}
	KUNIT_ASSERT_EQ(test, vd_term_parse(buf, len, &msg), VD_IW_OK);
	KUNIT_EXPECT_EQ(test, msg.code, c->code);
	KUNIT_EXPECT_EQ(test, msg.wire,
			(u16)(c->ctrl[0] << 8 | c->ctrl[1]));
	KUNIT_EXPECT_EQ(test, msg.siw, c->m || c->d || c->r);
	KUNIT_EXPECT_EQ(test, msg.m, c->m);
	KUNIT_EXPECT_EQ(test, msg.d, c->d);
	KUNIT_EXPECT_EQ(test, msg.r, c->r);
	KUNIT_EXPECT_EQ(test, msg.ddp_len, c->ddp_len);
	KUNIT_EXPECT_EQ(test, msg.have_rreq, c->rreq);
	if (c->d) {
		KUNIT_EXPECT_EQ(test, msg.seg_len, 9);
		KUNIT_EXPECT_EQ(test, memcmp(msg.ddp, buf + 6, c->ddp_len), 0);
	}
	if (c->rreq)
		KUNIT_EXPECT_EQ(test, msg.rreq[3], 0x42);
	KUNIT_EXPECT_EQ(test, vd_term_remote_wc_status(&msg), c->remote_wc);
}

/*
 * Nibble fixups of codes sent with Layer and EType swapped: put right
 * where only the swapped code is in the table, kept where both are.
 */
static void terminate_test_nibbles(struct kunit *test)
{
	static const struct {
		u16 wire, want;
	} fix[] = {
		{ 0x0202, 0x2002 },	/* MPA CRC */
		{ 0x0201, 0x2001 },	/* MPA: TCP connection lost */
		{ 0x0204, 0x2004 },	/* MPA: invalid Request/Reply */
		{ 0x2101, 0x1201 },	/* DDP untagged: invalid QN */
		{ 0x2106, 0x1206 },	/* DDP untagged: version */
		{ 0x1001, 0x0101 },	/* RDMAP protection: bounds */
		{ 0x1009, 0x0109 },	/* RDMAP protection: invalidate */
		{ 0x10ff, 0x01ff },	/* RDMAP protection: unspecified */
		{ 0x2008, 0x0208 },	/* RDMAP operation: global */
		{ 0x2009, 0x0209 },	/* RDMAP operation: invalidate */
		{ 0x20ff, 0x02ff },	/* RDMAP operation: unspecified */
		/* Valid as sent: kept. */
		{ 0x0000, 0x0000 },	/* RDMAP catastrophic */
		{ 0x1000, 0x1000 },	/* DDP catastrophic or invalid STag */
		{ 0x0100, 0x0100 },
		{ 0x1103, 0x1103 },	/* DDP tagged: symmetric */
		{ 0x2005, 0x2005 },	/* MPA 5 or RDMAP version */
		{ 0x0205, 0x0205 },
		{ 0x2007, 0x2007 },
		{ 0x0207, 0x0207 },
		/* Unknown either way: kept. */
		{ 0x3000, 0x3000 },
		{ 0x0300, 0x0300 },
		{ 0x0105, 0x0105 },
		{ 0x2200, 0x2200 },
	};
	unsigned int i;
	u16 code, swapped;

	for (i = 0; i < ARRAY_SIZE(fix); i++)
		KUNIT_EXPECT_EQ_MSG(test, vd_term_fix_nibbles(fix[i].wire),
				    fix[i].want, "wire 0x%04x", fix[i].wire);

	/* And for every code of the table, sent swapped. */
	for (i = 0; i < ARRAY_SIZE(term_cases); i++) {
		code = code_of(&term_cases[i]);
		swapped = term_cases[i].etype << 12 |
			  term_cases[i].layer << 8 | term_cases[i].ecode;
		if (vd_term_err(swapped) != VD_IW_NR)
			KUNIT_EXPECT_EQ(test, vd_term_fix_nibbles(swapped),
					swapped);
		else
			KUNIT_EXPECT_EQ(test, vd_term_fix_nibbles(swapped),
					code);
	}
}

/* Received Terminates cut short or with bits but no headers. */
static void terminate_test_parse_lenient(struct kunit *test)
{
	static const u8 md_only[] = { 0x12, 0x01, 0xc0, 0x00 };
	static const u8 md_len[] = { 0x12, 0x01, 0xc0, 0x00, 0x00, 0x20,
				     0x41, 0x43, 0, 0 };
	static const u8 d_only[] = { 0x12, 0x01, 0x40, 0x00, 0x00, 0x20 };
	struct vd_term_msg msg;

	KUNIT_EXPECT_EQ(test, vd_term_parse(md_only, 3, &msg),
			VD_IW_MPA_FPDU);
	KUNIT_EXPECT_EQ(test, vd_term_parse(md_only, 4, &msg), VD_IW_OK);
	KUNIT_EXPECT_TRUE(test, msg.m);
	KUNIT_EXPECT_TRUE(test, msg.d);
	KUNIT_EXPECT_EQ(test, msg.ddp_len, 0);
	KUNIT_EXPECT_EQ(test, msg.code, 0x1201);

	KUNIT_EXPECT_EQ(test, vd_term_parse(md_len, sizeof(md_len), &msg),
			VD_IW_OK);
	KUNIT_EXPECT_EQ(test, msg.seg_len, 0x20);
	KUNIT_EXPECT_EQ(test, msg.ddp_len, 0);
	KUNIT_EXPECT_FALSE(test, msg.have_rreq);

	/* D without M: the length field is there, but not valid. */
	KUNIT_EXPECT_EQ(test, vd_term_parse(d_only, sizeof(d_only), &msg),
			VD_IW_OK);
	KUNIT_EXPECT_FALSE(test, msg.m);
	KUNIT_EXPECT_TRUE(test, msg.d);
	KUNIT_EXPECT_EQ(test, msg.seg_len, 0);
}

static struct kunit_case terminate_test_cases[] = {
	KUNIT_CASE_PARAM(terminate_test_table, term_gen_params),
	KUNIT_CASE(terminate_test_table_edges),
	KUNIT_CASE(terminate_test_access_codes),
	KUNIT_CASE_PARAM(terminate_test_roundtrip, term_gen_params),
	KUNIT_CASE(terminate_test_golden),
	KUNIT_CASE(terminate_test_hdrct_untrusted),
	KUNIT_CASE_PARAM(terminate_test_siw, siw_gen_params),
	KUNIT_CASE(terminate_test_nibbles),
	KUNIT_CASE(terminate_test_parse_lenient),
	{}
};

static struct kunit_suite terminate_test_suite = {
	.name = "viaduct_terminate",
	.test_cases = terminate_test_cases,
};

kunit_test_suite(terminate_test_suite);
