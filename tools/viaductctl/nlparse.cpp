// SPDX-License-Identifier: GPL-2.0
// Reading the viaduct family's replies: attributes into LinkInfo, Counters
// and ResInfo, and the kernel's extended-ack message out of an error reply.
// Nothing here trusts a length the message gives: a short attribute reads
// as absent (or 0), a string without its NUL stops at the attribute's end.
#include "nlparse.hpp"

#include <arpa/inet.h>
#include <cstring>
#include <netlink/attr.h>
#include <optional>
#include <sys/socket.h>

#include <viaduct/viaduct-abi.h>
#include <viaduct/viaduct-nl.h>

namespace viaductctl {

namespace {

const char *const limit_names[VIADUCT_A_LIMIT_MAX + 1] = {
    nullptr,   "max_pd",       "max_mr",      "max_cq",     "max_cqe",
    "max_qp",  "max_qp_wr",    "max_sge",     "max_inline", "max_ord",
    "max_ird", "max_msg_size", "max_mr_size", nullptr,      "max_mw",
};

std::size_t payload_len(const nlattr *a) {
    int len = nla_len(a);
    return len > 0 ? static_cast<std::size_t>(len) : 0;
}

std::string get_str(nlattr *a) {
    if (!a)
        return {};
    const char *s = static_cast<const char *>(nla_data(a));
    return std::string(s, strnlen(s, payload_len(a)));
}

std::uint32_t get_u32(nlattr *a) {
    return a && payload_len(a) >= 4 ? nla_get_u32(a) : 0;
}

std::uint64_t get_uint(nlattr *a) {
    return payload_len(a) >= 8 ? nla_get_u64(a) : get_u32(a);
}

void parse_addrs(nlattr *nest, LinkInfo &info) {
    nlattr *a;
    int rem;
    nla_for_each_nested(a, nest, rem) {
        nlattr *tb[VIADUCT_A_ADDR_MAX + 1] = {};
        if (nla_parse_nested(tb, VIADUCT_A_ADDR_MAX, a, nullptr) < 0)
            continue;
        nlattr *fam = tb[VIADUCT_A_ADDR_FAMILY], *data = tb[VIADUCT_A_ADDR_DATA];
        if (!fam || payload_len(fam) < 2 || !data)
            continue;
        int family;
        std::size_t want;
        switch (nla_get_u16(fam)) {
        case VIADUCT_AF_INET:
            family = AF_INET;
            want = 4;
            break;
        case VIADUCT_AF_INET6:
            family = AF_INET6;
            want = 16;
            break;
        default:
            continue;
        }
        if (payload_len(data) < want)
            continue;
        char buf[INET6_ADDRSTRLEN] = {};
        if (!inet_ntop(family, nla_data(data), buf, sizeof(buf)))
            continue;
        nlattr *plen = tb[VIADUCT_A_ADDR_PREFIXLEN];
        unsigned prefixlen = plen && payload_len(plen) >= 1 ? nla_get_u8(plen) : 0;
        info.addresses.push_back(std::string(buf) + "/" + std::to_string(prefixlen));
    }
}

void parse_limits(nlattr *nest, LinkInfo &info) {
    nlattr *tb[VIADUCT_A_LIMIT_MAX + 1] = {};
    if (nla_parse_nested(tb, VIADUCT_A_LIMIT_MAX, nest, nullptr) < 0)
        return;
    for (int i = 1; i <= VIADUCT_A_LIMIT_MAX; ++i)
        if (tb[i] && limit_names[i])
            info.limits.emplace_back(limit_names[i], get_uint(tb[i]));
}

} // namespace

LinkInfo parse_link(nlattr **tb) {
    LinkInfo info;
    info.index = get_u32(tb[VIADUCT_A_DEV_INDEX]);
    info.name = get_str(tb[VIADUCT_A_DEV_NAME]);
    info.ifindex = get_u32(tb[VIADUCT_A_IFINDEX]);
    info.ifname = get_str(tb[VIADUCT_A_IFNAME]);
    info.mtu = get_u32(tb[VIADUCT_A_MTU]);
    info.flags = get_u32(tb[VIADUCT_A_FLAGS]);
    info.abi_version = get_u32(tb[VIADUCT_A_ABI_VERSION]);
    info.contexts = get_u32(tb[VIADUCT_A_CONTEXTS]);
    if (tb[VIADUCT_A_ADDRS])
        parse_addrs(tb[VIADUCT_A_ADDRS], info);
    if (tb[VIADUCT_A_LIMITS])
        parse_limits(tb[VIADUCT_A_LIMITS], info);
    info.resources = parse_counters(tb[VIADUCT_A_STATS]);
    return info;
}

namespace {

// VIADUCT_A_STAT_* names, as the kernel's struct vd_stats has them.
const char *const stat_names[VIADUCT_A_STAT_MAX + 1] = {
    nullptr,
    nullptr,
    "contexts",
    "pds",
    "mrs",
    "cqs",
    "qps",
    "pinned_pages",
    "doorbells",
    "worker_polls",
    "worker_wakeups",
    "wqes_consumed",
    "cqes_written",
    "cq_overflows",
    "tx_zcopy_msgs",
    "tx_zcopy_copied",
    "tx_zcopy_fallbacks",
    "tx_direct",
    "tx_deferred",
    "rx_upcall",
    "rx_deferred",
    "srqs",
    "tx_onecopy_bytes",
    "tx_buffered_bytes",
    "rx_onecopy_bytes",
    "rx_buffered_bytes",
};

} // namespace

Counters parse_counters(nlattr *nest) {
    Counters c;
    nlattr *tb[VIADUCT_A_STAT_MAX + 1] = {};
    if (!nest || nla_parse_nested(tb, VIADUCT_A_STAT_MAX, nest, nullptr) < 0)
        return c;
    for (int i = 1; i <= VIADUCT_A_STAT_MAX; ++i)
        if (tb[i] && stat_names[i])
            c.emplace_back(stat_names[i], get_uint(tb[i]));
    return c;
}

Owner parse_owner(nlattr **tb) {
    Owner o;
    o.ctx = get_u32(tb[VIADUCT_A_CTX_ID]);
    o.pid = get_u32(tb[VIADUCT_A_PID]);
    o.comm = get_str(tb[VIADUCT_A_COMM]);
    o.dev = get_str(tb[VIADUCT_A_DEV_NAME]);
    return o;
}

namespace {

std::optional<std::uint32_t> opt_u32(nlattr *a) {
    if (!a || payload_len(a) < 4)
        return std::nullopt;
    return nla_get_u32(a);
}

std::optional<std::uint64_t> opt_u64(nlattr *a) {
    if (!a || payload_len(a) < 4)
        return std::nullopt;
    return get_uint(a);
}

} // namespace

ResInfo parse_res(nlattr **tb) {
    ResInfo r;
    r.type = get_u32(tb[VIADUCT_A_RES_TYPE]);
    r.owner = parse_owner(tb);
    r.handle = get_u32(tb[VIADUCT_A_RES_HANDLE]);
    r.pd = opt_u32(tb[VIADUCT_A_RES_PD_HANDLE]);
    r.pdn = opt_u32(tb[VIADUCT_A_RES_PDN]);
    r.stag = opt_u32(tb[VIADUCT_A_RES_STAG]);
    r.length = opt_u64(tb[VIADUCT_A_RES_LENGTH]);
    r.pinned_pages = opt_u64(tb[VIADUCT_A_RES_PINNED_PAGES]);
    r.access = opt_u32(tb[VIADUCT_A_RES_ACCESS]);
    r.cqe = opt_u32(tb[VIADUCT_A_RES_CQE]);
    r.qpn = opt_u32(tb[VIADUCT_A_RES_QPN]);
    r.state = opt_u32(tb[VIADUCT_A_RES_QP_STATE]);
    r.qp_flags = opt_u32(tb[VIADUCT_A_RES_QP_FLAGS]);
    r.sq_depth = opt_u32(tb[VIADUCT_A_RES_SQ_DEPTH]);
    r.rq_depth = opt_u32(tb[VIADUCT_A_RES_RQ_DEPTH]);
    r.send_cq = opt_u32(tb[VIADUCT_A_RES_SEND_CQ]);
    r.recv_cq = opt_u32(tb[VIADUCT_A_RES_RECV_CQ]);
    r.srq = opt_u32(tb[VIADUCT_A_RES_SRQ]);
    r.srq_limit = opt_u32(tb[VIADUCT_A_RES_SRQ_LIMIT]);
    r.srq_qps = opt_u32(tb[VIADUCT_A_RES_SRQ_QPS]);
    return r;
}

// The kernel's extended-ack message, which follows the echoed request in an
// error reply when the socket asked for NETLINK_EXT_ACK. libnl hands us
// @err, the payload of that reply, so its header sits just in front.
std::string extack_message(const nlmsgerr *err) {
    const char *payload = reinterpret_cast<const char *>(err);
    const auto *nlh = reinterpret_cast<const nlmsghdr *>(payload - NLMSG_HDRLEN);
    if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS) || nlh->nlmsg_len < NLMSG_HDRLEN)
        return {};
    std::size_t total = nlh->nlmsg_len - NLMSG_HDRLEN;
    std::size_t off = sizeof(*err);
    if (!(nlh->nlmsg_flags & NLM_F_CAPPED) && err->msg.nlmsg_len >= NLMSG_HDRLEN)
        off += NLMSG_ALIGN(err->msg.nlmsg_len - NLMSG_HDRLEN);
    if (off >= total)
        return {};
    auto *attrs = reinterpret_cast<nlattr *>(const_cast<char *>(payload + off));
    nlattr *tb[NLMSGERR_ATTR_MAX + 1] = {};
    if (nla_parse(tb, NLMSGERR_ATTR_MAX, attrs, static_cast<int>(total - off), nullptr) < 0)
        return {};
    return get_str(tb[NLMSGERR_ATTR_MSG]);
}

} // namespace viaductctl
