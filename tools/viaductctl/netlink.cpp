// SPDX-License-Identifier: GPL-2.0
#include "netlink.hpp"
#include "nlparse.hpp"

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
