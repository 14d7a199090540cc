// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite viaduct_mpa: the MPA negotiation of mpa.c. What a request
 * offers, the revision and enhancement of a reply, CRC, IRD/ORD and RTR as
 * each side settles them, the refusals (a revision we did not offer, P2P
 * without a common RTR, a rejecting reply), and whole exchanges through
 * iwarp.c's frame builder and parser in which both ends must agree.
 */
#include <kunit/test.h>
#include <linux/kernel.h>
#include <linux/string.h>

#include <viaduct/viaduct-abi.h>

#include "../mpa.h"

#define F_V1	VIADUCT_CM_F_MPA_V1
#define F_CRC	VIADUCT_CM_F_CRC
#define F_P2P	VIADUCT_CM_F_P2P
#define RTR_ALL	(VD_MPA_RTR_SEND | VD_MPA_RTR_WRITE | VD_MPA_RTR_READ)

static void mpa_test_pd_max(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, vd_mpa_pd_max(false), 512U);
	KUNIT_EXPECT_EQ(test, vd_mpa_pd_max(true), 508U);
}

static void mpa_test_request(struct kunit *test)
{
	struct vd_mpa_ours ours = { .ird = 4, .ord = 8, .pd_len = 10 };
	struct vd_mpa_info info;

	vd_mpa_request(&ours, &info);
	KUNIT_EXPECT_EQ(test, info.rev, VD_MPA_REV2);
	KUNIT_EXPECT_TRUE(test, info.enhanced);
	KUNIT_EXPECT_FALSE(test, info.reply);
	KUNIT_EXPECT_FALSE(test, info.crc);
	KUNIT_EXPECT_FALSE(test, info.p2p);
	KUNIT_EXPECT_EQ(test, info.rtr, 0);
	KUNIT_EXPECT_EQ(test, info.ird, 4);
	KUNIT_EXPECT_EQ(test, info.ord, 8);
	KUNIT_EXPECT_EQ(test, info.pd_len, 10);

	ours.flags = F_P2P | F_CRC;
	vd_mpa_request(&ours, &info);
	KUNIT_EXPECT_TRUE(test, info.crc);
	KUNIT_EXPECT_TRUE(test, info.p2p);
	KUNIT_EXPECT_EQ(test, info.rtr, RTR_ALL);

	/* revision 1 has no IRD/ORD words, and so no P2P */
	ours.flags = F_V1 | F_P2P;
	vd_mpa_request(&ours, &info);
	KUNIT_EXPECT_EQ(test, info.rev, VD_MPA_REV1);
	KUNIT_EXPECT_FALSE(test, info.enhanced);
	KUNIT_EXPECT_FALSE(test, info.p2p);
	KUNIT_EXPECT_EQ(test, info.ird, 0);
}

static void mpa_test_reply_info(struct kunit *test)
{
	struct vd_mpa_info req = { .rev = VD_MPA_REV2, .enhanced = true };
	struct vd_mpa_info info;

	vd_mpa_reply_info(&req, false, 0, &info);
	KUNIT_EXPECT_TRUE(test, info.reply);
	KUNIT_EXPECT_FALSE(test, info.reject);
	KUNIT_EXPECT_EQ(test, info.rev, VD_MPA_REV2);
	KUNIT_EXPECT_TRUE(test, info.enhanced);

	/* the acceptor may step down to revision 1 */
	vd_mpa_reply_info(&req, true, F_V1, &info);
	KUNIT_EXPECT_TRUE(test, info.reject);
	KUNIT_EXPECT_EQ(test, info.rev, VD_MPA_REV1);
	KUNIT_EXPECT_FALSE(test, info.enhanced);

	/* never up: a revision 1 request gets a revision 1 reply */
	req.rev = VD_MPA_REV1;
	req.enhanced = false;
	vd_mpa_reply_info(&req, false, 0, &info);
	KUNIT_EXPECT_EQ(test, info.rev, VD_MPA_REV1);
	KUNIT_EXPECT_FALSE(test, info.enhanced);

	/* revision 2 without H: not enhanced either */
	req.rev = VD_MPA_REV2;
	vd_mpa_reply_info(&req, false, 0, &info);
	KUNIT_EXPECT_EQ(test, info.rev, VD_MPA_REV2);
	KUNIT_EXPECT_FALSE(test, info.enhanced);
}

static void mpa_test_accept(struct kunit *test)
{
	struct vd_mpa_info req = {
		.rev = VD_MPA_REV2, .enhanced = true, .ird = 2, .ord = 16,
		.p2p = true, .rtr = VD_MPA_RTR_SEND | VD_MPA_RTR_READ,
	};
	struct vd_mpa_ours ours = { .flags = F_P2P, .ird = 8, .ord = 8 };
	struct vd_mpa_params mpa = {};
	struct vd_mpa_info info;

	vd_mpa_reply_info(&req, false, ours.flags, &info);
	vd_mpa_accept(&req, &ours, &info, &mpa);
	KUNIT_EXPECT_EQ(test, mpa.revision, VD_MPA_REV2);
	KUNIT_EXPECT_TRUE(test, mpa.enhanced);
	KUNIT_EXPECT_FALSE(test, mpa.crc_tx);
	KUNIT_EXPECT_EQ(test, mpa.ird, 8U);
	/* no more reads than the initiator serves */
	KUNIT_EXPECT_EQ(test, mpa.ord, 2U);
	KUNIT_EXPECT_EQ(test, info.ird, 8);
	KUNIT_EXPECT_EQ(test, info.ord, 2);
	/* Read preferred over Send; Write was not offered */
	KUNIT_EXPECT_EQ(test, mpa.rtr, VD_RTR_READ);
	KUNIT_EXPECT_TRUE(test, info.p2p);
	KUNIT_EXPECT_EQ(test, info.rtr, VD_MPA_RTR_READ);

	/* CRC if the initiator asked, though we did not */
	req.crc = true;
	vd_mpa_reply_info(&req, false, ours.flags, &info);
	vd_mpa_accept(&req, &ours, &info, &mpa);
	KUNIT_EXPECT_TRUE(test, mpa.crc_tx);
	KUNIT_EXPECT_TRUE(test, mpa.crc_rx);
	KUNIT_EXPECT_TRUE(test, info.crc);

	/* no RTR in common: client-server */
	req.rtr = 0;
	vd_mpa_reply_info(&req, false, ours.flags, &info);
	vd_mpa_accept(&req, &ours, &info, &mpa);
	KUNIT_EXPECT_EQ(test, mpa.rtr, VD_RTR_NONE);
	KUNIT_EXPECT_FALSE(test, info.p2p);
	KUNIT_EXPECT_EQ(test, info.rtr, 0);

	/* we did not ask for P2P: none, whatever was offered */
	req.rtr = RTR_ALL;
	ours.flags = 0;
	vd_mpa_reply_info(&req, false, ours.flags, &info);
	vd_mpa_accept(&req, &ours, &info, &mpa);
	KUNIT_EXPECT_EQ(test, mpa.rtr, VD_RTR_NONE);
	KUNIT_EXPECT_FALSE(test, info.p2p);

	/* revision 1 reply: no IRD/ORD exchanged, ours stand */
	ours.flags = F_V1;
	vd_mpa_reply_info(&req, false, ours.flags, &info);
	vd_mpa_accept(&req, &ours, &info, &mpa);
	KUNIT_EXPECT_EQ(test, mpa.revision, VD_MPA_REV1);
	KUNIT_EXPECT_FALSE(test, mpa.enhanced);
	KUNIT_EXPECT_EQ(test, mpa.ord, 8U);
	KUNIT_EXPECT_EQ(test, info.ird, 0);
}

static void mpa_test_settle(struct kunit *test)
{
	struct vd_mpa_ours ours = { .flags = F_P2P, .ird = 4, .ord = 16 };
	struct vd_mpa_info rep = {
		.reply = true, .rev = VD_MPA_REV2, .enhanced = true,
		.ird = 3, .ord = 4, .p2p = true, .rtr = VD_MPA_RTR_WRITE,
	};
	struct vd_mpa_params mpa = {};

	KUNIT_EXPECT_EQ(test, vd_mpa_settle(&ours, &rep, &mpa), 0);
	KUNIT_EXPECT_EQ(test, mpa.revision, VD_MPA_REV2);
	KUNIT_EXPECT_EQ(test, mpa.ord, 3U);
	KUNIT_EXPECT_EQ(test, mpa.ird, 4U);
	KUNIT_EXPECT_EQ(test, mpa.peer_ird, 3U);
	KUNIT_EXPECT_EQ(test, mpa.peer_ord, 4U);
	KUNIT_EXPECT_EQ(test, mpa.rtr, VD_RTR_WRITE);
	KUNIT_EXPECT_FALSE(test, mpa.crc_tx);

	/* CRC if we asked, though the responder did not */
	ours.flags |= F_CRC;
	KUNIT_EXPECT_EQ(test, vd_mpa_settle(&ours, &rep, &mpa), 0);
	KUNIT_EXPECT_TRUE(test, mpa.crc_tx);
	KUNIT_EXPECT_TRUE(test, mpa.crc_rx);

	/* P2P reply without any RTR we offered */
	rep.rtr = 0;
	KUNIT_EXPECT_EQ(test, vd_mpa_settle(&ours, &rep, &mpa), -EPROTO);

	/* a revision 2 reply to a revision 1 request */
	ours.flags = F_V1;
	rep.rtr = VD_MPA_RTR_WRITE;
	KUNIT_EXPECT_EQ(test, vd_mpa_settle(&ours, &rep, &mpa), -EPROTO);

	/* a revision 1 reply to a revision 2 request is fine */
	ours.flags = 0;
	memset(&rep, 0, sizeof(rep));
	rep.reply = true;
	rep.rev = VD_MPA_REV1;
	KUNIT_EXPECT_EQ(test, vd_mpa_settle(&ours, &rep, &mpa), 0);
	KUNIT_EXPECT_EQ(test, mpa.revision, VD_MPA_REV1);
	KUNIT_EXPECT_EQ(test, mpa.ord, 16U);
	KUNIT_EXPECT_EQ(test, mpa.rtr, VD_RTR_NONE);

	/* a rejection still tells the revision and the peer's numbers */
	rep.rev = VD_MPA_REV2;
	rep.enhanced = true;
	rep.reject = true;
	rep.ird = 7;
	KUNIT_EXPECT_EQ(test, vd_mpa_settle(&ours, &rep, &mpa), -ECONNREFUSED);
	KUNIT_EXPECT_EQ(test, mpa.revision, VD_MPA_REV2);
	KUNIT_EXPECT_EQ(test, mpa.peer_ird, 7U);
}

/* One whole exchange, framed and parsed, in which both ends must agree. */
struct exchange {
	u32 init_flags, resp_flags;
	u32 init_ird, init_ord, resp_ird, resp_ord;
};

static const struct exchange exchanges[] = {
	{ 0, 0, 4, 4, 4, 4 },
	{ F_CRC, 0, 1, 16, 8, 2 },
	{ 0, F_CRC, 16, 1, 2, 8 },
	{ F_P2P, F_P2P, 2, 2, 2, 2 },
	{ F_P2P, 0, 2, 2, 2, 2 },
	{ 0, F_P2P | F_CRC, 2, 2, 2, 2 },
	{ F_V1, 0, 4, 4, 4, 4 },
	{ 0, F_V1, 4, 4, 4, 4 },
	{ F_V1 | F_CRC, F_V1 | F_P2P, 4, 4, 4, 4 },
};

static void exchange_desc(const struct exchange *e, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "init %#x resp %#x",
		 e->init_flags, e->resp_flags);
}

KUNIT_ARRAY_PARAM(exchange, exchanges, exchange_desc);

/* Frames @info, parses it back as the peer would into @out. */
static void wire(struct kunit *test, const struct vd_mpa_info *info,
		 struct vd_mpa_info *out)
{
	u8 buf[sizeof(struct vd_mpa_rr) + VD_MPA_MAX_PD] = {};
	const struct vd_mpa_rr *hdr = (const void *)buf;
	int len;

	len = vd_mpa_rr_build(buf, sizeof(buf), info);
	KUNIT_ASSERT_GT(test, len, 0);
	KUNIT_ASSERT_EQ(test, vd_mpa_rr_parse(hdr, info->reply, out),
			VD_IW_OK);
	if (out->enhanced)
		vd_mpa_v2_parse((const void *)(hdr + 1), out);
}

static void mpa_test_exchange(struct kunit *test)
{
	const struct exchange *e = test->param_value;
	struct vd_mpa_ours init = {
		.flags = e->init_flags, .ird = e->init_ird, .ord = e->init_ord,
	};
	struct vd_mpa_ours resp = {
		.flags = e->resp_flags, .ird = e->resp_ird, .ord = e->resp_ord,
	};
	struct vd_mpa_params a = { .active = true }, p = {};
	struct vd_mpa_info req, got_req, rep, got_rep;

	vd_mpa_request(&init, &req);
	wire(test, &req, &got_req);
	vd_mpa_reply_info(&got_req, false, resp.flags, &rep);
	vd_mpa_accept(&got_req, &resp, &rep, &p);
	wire(test, &rep, &got_rep);
	KUNIT_ASSERT_EQ(test, vd_mpa_settle(&init, &got_rep, &a), 0);

	KUNIT_EXPECT_EQ(test, a.revision, p.revision);
	KUNIT_EXPECT_EQ(test, a.enhanced, p.enhanced);
	KUNIT_EXPECT_EQ(test, a.crc_tx, p.crc_rx);
	KUNIT_EXPECT_EQ(test, a.crc_rx, p.crc_tx);
	KUNIT_EXPECT_EQ(test, a.crc_tx,
			!!((e->init_flags | e->resp_flags) & F_CRC));
	KUNIT_EXPECT_EQ(test, a.rtr, p.rtr);
	/* two viaduct ends always agree on immediate data */
	KUNIT_EXPECT_TRUE(test, a.imm);
	KUNIT_EXPECT_TRUE(test, p.imm);
	KUNIT_EXPECT_EQ(test, a.rtr != VD_RTR_NONE,
			!((e->init_flags | e->resp_flags) & F_V1) &&
			(e->init_flags & e->resp_flags & F_P2P));
	if (a.enhanced) {
		/* nobody reads more at once than the other serves */
		KUNIT_EXPECT_LE(test, a.ord, p.ird);
		KUNIT_EXPECT_LE(test, p.ord, a.ird);
		KUNIT_EXPECT_EQ(test, a.peer_ird, p.ird);
	}
}

/*
 * Immediate data: offered in every request, taken by a responder only if
 * offered, in use at the initiator only if the reply takes it. A peer
 * that knows nothing of it (siw) sends requests without the offer and
 * echoes ours in its reply, which is not an acceptance: neither end then
 * uses it.
 */
static void mpa_test_imm(struct kunit *test)
{
	struct vd_mpa_ours ours = { .ird = 4, .ord = 4 };
	struct vd_mpa_params mpa = {};
	struct vd_mpa_info req, rep, got;
	u8 buf[sizeof(struct vd_mpa_rr) + 8] = {};
	struct vd_mpa_rr *hdr = (void *)buf;

	vd_mpa_request(&ours, &req);
	KUNIT_EXPECT_TRUE(test, req.imm);
	ours.flags = F_V1;
	vd_mpa_request(&ours, &req);
	KUNIT_EXPECT_TRUE(test, req.imm);
	KUNIT_ASSERT_GT(test, vd_mpa_rr_build(buf, sizeof(buf), &req), 0);
	KUNIT_EXPECT_EQ(test, hdr->flags & 0x0f, VD_MPA_FLAG_IMM_OFFER);

	/* responder: takes the offer, or there is none */
	ours.flags = 0;
	req.imm = true;
	vd_mpa_reply_info(&req, false, 0, &rep);
	KUNIT_EXPECT_FALSE(test, rep.imm);
	vd_mpa_accept(&req, &ours, &rep, &mpa);
	KUNIT_EXPECT_TRUE(test, mpa.imm);
	KUNIT_EXPECT_TRUE(test, rep.imm);
	KUNIT_ASSERT_GT(test, vd_mpa_rr_build(buf, sizeof(buf), &rep), 0);
	KUNIT_EXPECT_EQ(test, hdr->flags & 0x0f, VD_MPA_FLAG_IMM_ACCEPT);
	req.imm = false;
	vd_mpa_reply_info(&req, false, 0, &rep);
	vd_mpa_accept(&req, &ours, &rep, &mpa);
	KUNIT_EXPECT_FALSE(test, mpa.imm);
	KUNIT_EXPECT_FALSE(test, rep.imm);

	/* initiator: the answer decides */
	rep = (struct vd_mpa_info){ .reply = true, .rev = VD_MPA_REV1 };
	KUNIT_EXPECT_EQ(test, vd_mpa_settle(&ours, &rep, &mpa), 0);
	KUNIT_EXPECT_FALSE(test, mpa.imm);
	rep.imm = true;
	KUNIT_EXPECT_EQ(test, vd_mpa_settle(&ours, &rep, &mpa), 0);
	KUNIT_EXPECT_TRUE(test, mpa.imm);

	/* siw's reply: our request's header with the key changed */
	memcpy(hdr->key, VD_MPA_KEY_REP, VD_MPA_KEY_SIZE);
	hdr->flags = VD_MPA_FLAG_IMM_OFFER | 0x08;
	hdr->rev = VD_MPA_REV1;
	hdr->pd_len = 0;
	KUNIT_ASSERT_EQ(test, vd_mpa_rr_parse(hdr, true, &got), VD_IW_OK);
	KUNIT_EXPECT_FALSE(test, got.imm);
	KUNIT_EXPECT_EQ(test, vd_mpa_settle(&ours, &got, &mpa), 0);
	KUNIT_EXPECT_FALSE(test, mpa.imm);
	/* a request with only the accept bit offers nothing */
	memcpy(hdr->key, VD_MPA_KEY_REQ, VD_MPA_KEY_SIZE);
	hdr->flags = VD_MPA_FLAG_IMM_ACCEPT;
	KUNIT_ASSERT_EQ(test, vd_mpa_rr_parse(hdr, false, &got), VD_IW_OK);
	KUNIT_EXPECT_FALSE(test, got.imm);
}

static struct kunit_case mpa_test_cases[] = {
	KUNIT_CASE(mpa_test_pd_max),
	KUNIT_CASE(mpa_test_request),
	KUNIT_CASE(mpa_test_reply_info),
	KUNIT_CASE(mpa_test_accept),
	KUNIT_CASE(mpa_test_settle),
	KUNIT_CASE(mpa_test_imm),
	KUNIT_CASE_PARAM(mpa_test_exchange, exchange_gen_params),
	{}
};

static struct kunit_suite mpa_test_suite = {
	.name = "viaduct_mpa",
	.test_cases = mpa_test_cases,
};

kunit_test_suite(mpa_test_suite);
