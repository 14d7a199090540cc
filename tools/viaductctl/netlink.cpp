// SPDX-License-Identifier: GPL-2.0
#include "netlink.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <linux/netlink.h>
#include <netlink/errno.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <optional>
#include <sys/socket.h>

#include <viaduct/viaduct-abi.h>
#include <viaduct/viaduct-nl.h>

namespace viaductctl {

namespace {

using Source = NetlinkError::Source;

struct MsgDeleter {
    void operator()(nl_msg *msg) const noexcept { nlmsg_free(msg); }
};
struct CbDeleter {
    void operator()(nl_cb *cb) const noexcept { nl_cb_put(cb); }
};

// What the callbacks collect from the replies to one request.
struct Reply {
    const std::function<void(nlattr **)> *on_msg = nullptr;
    bool done = false;
    int err = 0;
    std::string extack;
};

const char *const limit_names[VIADUCT_A_LIMIT_MAX + 1] = {
    nullptr,   "max_pd",     "max_mr",  "max_cq",  "max_cqe",      "max_qp",      "max_qp_wr",
    "max_sge", "max_inline", "max_ord", "max_ird", "max_msg_size", "max_mr_size", nullptr,
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
    return info;
}

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
};

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
    return r;
}

int on_valid(nl_msg *msg, void *arg) {
    auto *reply = static_cast<Reply *>(arg);
    nlattr *tb[VIADUCT_A_MAX + 1] = {};
    if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, VIADUCT_A_MAX, nullptr) < 0)
        return NL_SKIP;
    (*reply->on_msg)(tb);
    return NL_OK;
}

int on_finish(nl_msg *, void *arg) {
    static_cast<Reply *>(arg)->done = true;
    return NL_STOP;
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

int on_error(sockaddr_nl *, nlmsgerr *err, void *arg) {
    auto *reply = static_cast<Reply *>(arg);
    reply->err = -err->error;
    reply->extack = extack_message(err);
    reply->done = true;
    return NL_STOP;
}

std::string libnl_error(const char *what, int nlerr) {
    return std::string(what) + ": " + nl_geterror(nlerr);
}

} // namespace

void Genl::SocketDeleter::operator()(nl_sock *sock) const noexcept {
    nl_socket_free(sock); // closes the socket too
}

Genl::Genl() : sock_(nl_socket_alloc()) {
    if (!sock_)
        throw NetlinkError(Source::Local, ENOMEM, "cannot allocate a netlink socket");
    if (int r = genl_connect(sock_.get()); r < 0)
        throw NetlinkError(Source::Local, EIO, libnl_error("cannot open generic netlink", r));
    int one = 1;
    // Without extended acks the kernel's messages are lost; not fatal.
    (void)setsockopt(nl_socket_get_fd(sock_.get()), SOL_NETLINK, NETLINK_EXT_ACK, &one,
                     sizeof(one));
    family_ = genl_ctrl_resolve(sock_.get(), VIADUCT_GENL_NAME);
    if (family_ == -NLE_OBJ_NOTFOUND)
        throw NetlinkError(Source::FamilyMissing, ENOENT,
                           "viaduct generic netlink family not found: is viaduct.ko loaded?");
    if (family_ < 0)
        throw NetlinkError(
            Source::Local, EIO,
            libnl_error("cannot look up the viaduct generic netlink family", family_));
}

std::vector<LinkInfo> Genl::transact(std::uint8_t cmd, int flags, const std::string &name,
                                     const std::string &ifname) {
    std::vector<LinkInfo> links;
    exchange(
        cmd, flags,
        [&](nl_msg *msg) {
            return (name.empty() || nla_put_string(msg, VIADUCT_A_DEV_NAME, name.c_str()) >= 0) &&
                   (ifname.empty() || nla_put_string(msg, VIADUCT_A_IFNAME, ifname.c_str()) >= 0);
        },
        [&](nlattr **tb) { links.push_back(parse_link(tb)); });
    return links;
}

void Genl::exchange(std::uint8_t cmd, int flags, const std::function<bool(nl_msg *)> &fill,
                    const std::function<void(nlattr **)> &on_msg) {
    std::unique_ptr<nl_msg, MsgDeleter> msg(nlmsg_alloc());
    if (!msg)
        throw NetlinkError(Source::Local, ENOMEM, "out of memory");
    if (!genlmsg_put(msg.get(), NL_AUTO_PORT, NL_AUTO_SEQ, family_, 0, flags, cmd,
                     VIADUCT_GENL_VERSION) ||
        !fill(msg.get()))
        throw NetlinkError(Source::Local, EMSGSIZE, "cannot build the netlink request");

    std::unique_ptr<nl_cb, CbDeleter> cb(nl_cb_alloc(NL_CB_DEFAULT));
    if (!cb)
        throw NetlinkError(Source::Local, ENOMEM, "out of memory");
    Reply reply;
    reply.on_msg = &on_msg;
    nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, on_valid, &reply);
    nl_cb_set(cb.get(), NL_CB_FINISH, NL_CB_CUSTOM, on_finish, &reply);
    nl_cb_set(cb.get(), NL_CB_ACK, NL_CB_CUSTOM, on_finish, &reply);
    nl_cb_err(cb.get(), NL_CB_CUSTOM, on_error, &reply);

    if (int r = nl_send_auto(sock_.get(), msg.get()); r < 0)
        throw NetlinkError(Source::Local, EIO, libnl_error("netlink send", r));
    // An error reply makes nl_recvmsgs() fail as well; on_error has the
    // details by then, so "done" is checked first.
    while (!reply.done) {
        int r = nl_recvmsgs(sock_.get(), cb.get());
        if (reply.done)
            break;
        if (r < 0)
            throw NetlinkError(Source::Local, EIO, libnl_error("netlink receive", r));
    }
    if (reply.err)
        throw NetlinkError(Source::Kernel, reply.err, std::strerror(reply.err), reply.extack);
}

LinkInfo Genl::link_add(const std::string &name, const std::string &ifname) {
    auto links = transact(VIADUCT_CMD_LINK_ADD, NLM_F_ACK, name, ifname);
    return links.empty() ? LinkInfo{} : links.front();
}

void Genl::link_del(const std::string &name) {
    transact(VIADUCT_CMD_LINK_DEL, NLM_F_ACK, name, {});
}

std::vector<LinkInfo> Genl::link_get(const std::string &name) {
    if (name.empty())
        return transact(VIADUCT_CMD_LINK_GET, NLM_F_DUMP, {}, {});
    return transact(VIADUCT_CMD_LINK_GET, NLM_F_ACK, name, {});
}

Stats Genl::stats() {
    Stats st;
    bool global = false;
    exchange(
        VIADUCT_CMD_STATS_GET, NLM_F_DUMP, [](nl_msg *) { return true; },
        [&](nlattr **tb) {
            // The first message, without an owner, is the module-wide one.
            if (!global && !tb[VIADUCT_A_CTX_ID]) {
                st.global = parse_counters(tb[VIADUCT_A_STATS]);
                global = true;
                return;
            }
            st.contexts.push_back({parse_owner(tb), parse_counters(tb[VIADUCT_A_STATS])});
        });
    return st;
}

std::vector<ResInfo> Genl::res(std::uint32_t type) {
    std::vector<ResInfo> res;
    exchange(
        VIADUCT_CMD_RES_GET, NLM_F_DUMP,
        [type](nl_msg *msg) { return !type || nla_put_u32(msg, VIADUCT_A_RES_TYPE, type) >= 0; },
        [&](nlattr **tb) { res.push_back(parse_res(tb)); });
    return res;
}

} // namespace viaductctl
