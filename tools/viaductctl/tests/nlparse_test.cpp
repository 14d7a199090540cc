// SPDX-License-Identifier: GPL-2.0
// The parsing of the viaduct family's replies, on messages built here with
// libnl as the kernel would send them, and on malformed ones: short
// attributes, strings without their NUL, unknown attributes, and error
// replies with and without an extended-ack message.
#include <cerrno>
#include <cstring>
#include <gtest/gtest.h>
#include <memory>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <vector>

#include <viaduct/viaduct-abi.h>
#include <viaduct/viaduct-nl.h>

#include "nlparse.hpp"

using namespace viaductctl;

namespace {

struct MsgDeleter {
    void operator()(nl_msg *m) const noexcept { nlmsg_free(m); }
};
using Msg = std::unique_ptr<nl_msg, MsgDeleter>;

Msg genl_msg(std::uint8_t cmd) {
    Msg m(nlmsg_alloc());
    EXPECT_NE(nullptr, genlmsg_put(m.get(), 0, 1, 0x1d, 0, 0, cmd, VIADUCT_GENL_VERSION));
    return m;
}

// The top-level attributes of @m, as the callback of netlink.cpp sees them.
struct Parsed {
    nlattr *tb[VIADUCT_A_MAX + 1] = {};
    explicit Parsed(nl_msg *m) {
        EXPECT_EQ(0, genlmsg_parse(nlmsg_hdr(m), 0, tb, VIADUCT_A_MAX, nullptr));
    }
};

void put_addr(nl_msg *m, std::uint16_t family, const void *data, int len, std::uint8_t plen) {
    nlattr *a = nla_nest_start(m, VIADUCT_A_ADDR);
    nla_put_u16(m, VIADUCT_A_ADDR_FAMILY, family);
    nla_put_u8(m, VIADUCT_A_ADDR_PREFIXLEN, plen);
    nla_put(m, VIADUCT_A_ADDR_DATA, len, data);
    nla_nest_end(m, a);
}

} // namespace

TEST(NlParse, LinkWithAddressesLimitsAndResources) {
    Msg m = genl_msg(VIADUCT_CMD_LINK_GET);
    nla_put_u32(m.get(), VIADUCT_A_DEV_INDEX, 3);
    nla_put_string(m.get(), VIADUCT_A_DEV_NAME, "vd0");
    nla_put_u32(m.get(), VIADUCT_A_IFINDEX, 7);
    nla_put_string(m.get(), VIADUCT_A_IFNAME, "eth0");
    nla_put_u32(m.get(), VIADUCT_A_MTU, 1500);
    nla_put_u32(m.get(), VIADUCT_A_FLAGS, VIADUCT_DEV_F_UP | VIADUCT_DEV_F_RUNNING);
    nlattr *addrs = nla_nest_start(m.get(), VIADUCT_A_ADDRS);
    const std::uint8_t v4[4] = {192, 0, 2, 1};
    const std::uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    put_addr(m.get(), VIADUCT_AF_INET, v4, 4, 24);
    put_addr(m.get(), VIADUCT_AF_INET6, v6, 16, 64);
    put_addr(m.get(), 99, v4, 4, 8);               // unknown family: skipped
    put_addr(m.get(), VIADUCT_AF_INET6, v4, 4, 8); // too short for IPv6: skipped
    nla_nest_end(m.get(), addrs);
    nlattr *lim = nla_nest_start(m.get(), VIADUCT_A_LIMITS);
    nla_put_u32(m.get(), VIADUCT_A_LIMIT_MAX_PD, 1024);
    nla_put_u64(m.get(), VIADUCT_A_LIMIT_MAX_MSG_SIZE, 1ull << 31);
    nla_put_u32(m.get(), VIADUCT_A_LIMIT_MAX_MW, 4096);
    nla_nest_end(m.get(), lim);
    nlattr *st = nla_nest_start(m.get(), VIADUCT_A_STATS);
    nla_put_u64(m.get(), VIADUCT_A_STAT_PDS, 2);
    nla_put_u64(m.get(), VIADUCT_A_STAT_PINNED_PAGES, 256);
    nla_put_u64(m.get(), VIADUCT_A_STAT_SRQS, 1);
    nla_nest_end(m.get(), st);

    Parsed p(m.get());
    LinkInfo l = parse_link(p.tb);
    EXPECT_EQ(3u, l.index);
    EXPECT_EQ("vd0", l.name);
    EXPECT_EQ(7u, l.ifindex);
    EXPECT_EQ("eth0", l.ifname);
    EXPECT_EQ(1500u, l.mtu);
    EXPECT_EQ(std::uint32_t{VIADUCT_DEV_F_UP | VIADUCT_DEV_F_RUNNING}, l.flags);
    ASSERT_EQ(2u, l.addresses.size());
    EXPECT_EQ("192.0.2.1/24", l.addresses[0]);
    EXPECT_EQ("2001:db8::1/64", l.addresses[1]);
    ASSERT_EQ(3u, l.limits.size());
    EXPECT_EQ("max_pd", l.limits[0].first);
    EXPECT_EQ(1024u, l.limits[0].second);
    EXPECT_EQ("max_msg_size", l.limits[1].first);
    EXPECT_EQ(1ull << 31, l.limits[1].second);
    EXPECT_EQ("max_mw", l.limits[2].first);
    EXPECT_EQ(4096u, l.limits[2].second);
    ASSERT_EQ(3u, l.resources.size());
    EXPECT_EQ("pds", l.resources[0].first);
    EXPECT_EQ(2u, l.resources[0].second);
    EXPECT_EQ("pinned_pages", l.resources[1].first);
    EXPECT_EQ(256u, l.resources[1].second);
    EXPECT_EQ("srqs", l.resources[2].first);
    EXPECT_EQ(1u, l.resources[2].second);
}

// Attributes shorter than their type: absent, never read past their end.
TEST(NlParse, ShortAttributesAndUnterminatedStrings) {
    Msg m = genl_msg(VIADUCT_CMD_LINK_GET);
    const std::uint16_t two = 5;
    nla_put(m.get(), VIADUCT_A_DEV_INDEX, sizeof(two), &two); // a u32 of 2 bytes
    const char name[4] = {'v', 'd', '0', 'x'};                // no NUL
    nla_put(m.get(), VIADUCT_A_DEV_NAME, sizeof(name), name);
    nla_put(m.get(), VIADUCT_A_IFNAME, 0, nullptr); // empty
    Parsed p(m.get());
    LinkInfo l = parse_link(p.tb);
    EXPECT_EQ(0u, l.index);
    EXPECT_EQ("vd0x", l.name);
    EXPECT_EQ("", l.ifname);
    EXPECT_TRUE(l.addresses.empty());
    EXPECT_TRUE(l.limits.empty());
}

TEST(NlParse, ResourceFieldsPresentOrAbsent) {
    Msg m = genl_msg(VIADUCT_CMD_RES_GET);
    nla_put_u32(m.get(), VIADUCT_A_RES_TYPE, VIADUCT_RES_QP);
    nla_put_u32(m.get(), VIADUCT_A_CTX_ID, 4);
    nla_put_u32(m.get(), VIADUCT_A_PID, 123);
    nla_put_string(m.get(), VIADUCT_A_COMM, "foo");
    nla_put_string(m.get(), VIADUCT_A_DEV_NAME, "vd0");
    nla_put_u32(m.get(), VIADUCT_A_RES_HANDLE, 9);
    nla_put_u32(m.get(), VIADUCT_A_RES_QPN, 17);
    nla_put_u32(m.get(), VIADUCT_A_RES_QP_STATE, VIADUCT_QPS_RTS);
    const std::uint16_t short_depth = 16;
    nla_put(m.get(), VIADUCT_A_RES_SQ_DEPTH, sizeof(short_depth), &short_depth);
    Parsed p(m.get());
    ResInfo r = parse_res(p.tb);
    EXPECT_EQ(std::uint32_t{VIADUCT_RES_QP}, r.type);
    EXPECT_EQ(4u, r.owner.ctx);
    EXPECT_EQ(123u, r.owner.pid);
    EXPECT_EQ("foo", r.owner.comm);
    EXPECT_EQ("vd0", r.owner.dev);
    EXPECT_EQ(9u, r.handle);
    EXPECT_EQ(17u, r.qpn);
    EXPECT_EQ(std::uint32_t{VIADUCT_QPS_RTS}, r.state);
    EXPECT_FALSE(r.sq_depth) << "a 2-byte u32 must read as absent";
    EXPECT_FALSE(r.stag) << "not sent to unprivileged readers, not made up";
    EXPECT_FALSE(r.pd);
}

TEST(NlParse, CountersByNameIgnoringUnknownOnes) {
    Msg m = genl_msg(VIADUCT_CMD_STATS_GET);
    nlattr *st = nla_nest_start(m.get(), VIADUCT_A_STATS);
    nla_put_u64(m.get(), VIADUCT_A_STAT_CONTEXTS, 2);
    nla_put_u64(m.get(), VIADUCT_A_STAT_PDS, 5);
    nla_put_u64(m.get(), VIADUCT_A_STAT_MAX + 1, 77); // a newer module's counter
    nla_nest_end(m.get(), st);
    Parsed p(m.get());
    Counters c = parse_counters(p.tb[VIADUCT_A_STATS]);
    ASSERT_EQ(2u, c.size());
    EXPECT_EQ("contexts", c[0].first);
    EXPECT_EQ(2u, c[0].second);
    EXPECT_EQ("pds", c[1].first);
    EXPECT_EQ(5u, c[1].second);
    EXPECT_TRUE(parse_counters(nullptr).empty());
}

namespace {

constexpr std::size_t attr_hdrlen = sizeof(nlattr); // NLA_HDRLEN, 4-aligned

// An NLMSG_ERROR reply as the kernel builds it: nlmsghdr, nlmsgerr (with
// the request's header), the rest of the request unless CAPPED, then the
// extended-ack attributes.
std::vector<char> error_reply(int err, bool capped, const char *msg, std::size_t request_payload,
                              bool ack_tlvs = true) {
    std::vector<char> b(4096, 0);
    auto *nlh = reinterpret_cast<nlmsghdr *>(b.data());
    nlh->nlmsg_type = NLMSG_ERROR;
    nlh->nlmsg_flags =
        static_cast<std::uint16_t>((capped ? NLM_F_CAPPED : 0) | (ack_tlvs ? NLM_F_ACK_TLVS : 0));
    auto *e = reinterpret_cast<nlmsgerr *>(b.data() + NLMSG_HDRLEN);
    e->error = -err;
    e->msg.nlmsg_len = static_cast<std::uint32_t>(NLMSG_HDRLEN + request_payload);
    std::size_t off = NLMSG_HDRLEN + sizeof(*e);
    if (!capped)
        off += NLMSG_ALIGN(request_payload); // the echoed request, zeros here
    if (msg) {
        auto *a = reinterpret_cast<nlattr *>(b.data() + off);
        a->nla_type = NLMSGERR_ATTR_MSG;
        a->nla_len = static_cast<std::uint16_t>(attr_hdrlen + std::strlen(msg) + 1);
        std::memcpy(b.data() + off + attr_hdrlen, msg, std::strlen(msg) + 1);
        off += NLA_ALIGN(a->nla_len);
    }
    nlh->nlmsg_len = static_cast<std::uint32_t>(off);
    b.resize(off);
    return b;
}

std::string extack_of(const std::vector<char> &reply) {
    return extack_message(reinterpret_cast<const nlmsgerr *>(reply.data() + NLMSG_HDRLEN));
}

} // namespace

TEST(NlParse, ExtackAfterAnEchoedOrCappedRequest) {
    EXPECT_EQ("interface already has a viaduct device",
              extack_of(error_reply(EBUSY, false, "interface already has a viaduct device", 28)));
    EXPECT_EQ("name in use", extack_of(error_reply(EEXIST, true, "name in use", 28)));
    EXPECT_EQ("", extack_of(error_reply(EINVAL, true, nullptr, 28)));
    EXPECT_EQ("", extack_of(error_reply(EINVAL, true, "ignored", 28, false)))
        << "without NLM_F_ACK_TLVS there are no attributes to read";
}

TEST(NlParse, ExtackOfAMalformedReplyIsEmpty) {
    // The echoed request claims more than the reply holds.
    auto b = error_reply(EINVAL, false, "x", 28);
    reinterpret_cast<nlmsgerr *>(b.data() + NLMSG_HDRLEN)->msg.nlmsg_len = 4000;
    EXPECT_EQ("", extack_of(b));
    // An attribute longer than the message.
    b = error_reply(EINVAL, true, "abc", 28);
    reinterpret_cast<nlattr *>(b.data() + NLMSG_HDRLEN + sizeof(nlmsgerr))->nla_len = 200;
    EXPECT_EQ("", extack_of(b));
    // A message string without its NUL stops at the attribute's end.
    b = error_reply(EINVAL, true, "abcd", 28);
    auto *a = reinterpret_cast<nlattr *>(b.data() + NLMSG_HDRLEN + sizeof(nlmsgerr));
    a->nla_len = attr_hdrlen + 4; // "abcd" without the NUL
    EXPECT_EQ("abcd", extack_of(b));
}
