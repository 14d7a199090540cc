// SPDX-License-Identifier: GPL-2.0
#include "nl_stats.hpp"

#include <memory>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <stdexcept>

#include <viaduct/viaduct-nl.h>

namespace viaduct::test {

namespace {

struct SockDeleter {
    void operator()(nl_sock *s) const noexcept { nl_socket_free(s); }
};
struct MsgDeleter {
    void operator()(nl_msg *m) const noexcept { nlmsg_free(m); }
};

std::runtime_error nl_failure(const std::string &what, int err) {
    return std::runtime_error(what + ": " + nl_geterror(err));
}

Counters parse_counters(nlattr *nest) {
    Counters out;
    nlattr *tb[VIADUCT_A_STAT_MAX + 1] = {};
    if (!nest || nla_parse_nested(tb, VIADUCT_A_STAT_MAX, nest, nullptr) < 0)
        return out;
    for (int i = 1; i <= VIADUCT_A_STAT_MAX; ++i)
        if (tb[i] && nla_len(tb[i]) >= 8)
            out[i] = nla_get_u64(tb[i]);
    return out;
}

struct Parse {
    StatsDump dump;
    bool first = true;
};

int on_valid(nl_msg *msg, void *arg) {
    auto *p = static_cast<Parse *>(arg);
    nlattr *tb[VIADUCT_A_MAX + 1] = {};
    if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, VIADUCT_A_MAX, nullptr) < 0)
        return NL_SKIP;
    if (!tb[VIADUCT_A_CTX_ID]) {
        // The module-wide message comes first and carries no context id.
        if (p->first)
            p->dump.module = parse_counters(tb[VIADUCT_A_STATS]);
        p->first = false;
        return NL_OK;
    }
    p->first = false;
    ContextCounters c;
    c.ctx_id = nla_get_u32(tb[VIADUCT_A_CTX_ID]);
    if (tb[VIADUCT_A_PID])
        c.pid = nla_get_u32(tb[VIADUCT_A_PID]);
    if (tb[VIADUCT_A_DEV_NAME])
        c.dev_name = nla_get_string(tb[VIADUCT_A_DEV_NAME]);
    c.counters = parse_counters(tb[VIADUCT_A_STATS]);
    p->dump.contexts.push_back(std::move(c));
    return NL_OK;
}

} // namespace

std::uint64_t StatsDump::sum_for_pid(pid_t pid, int stat) const {
    std::uint64_t sum = 0;
    for (const ContextCounters &c : contexts) {
        if (c.pid != static_cast<std::uint32_t>(pid))
            continue;
        auto it = c.counters.find(stat);
        if (it != c.counters.end())
            sum += it->second;
    }
    return sum;
}

StatsDump read_stats() {
    std::unique_ptr<nl_sock, SockDeleter> sock(nl_socket_alloc());
    if (!sock)
        throw std::runtime_error("nl_socket_alloc failed");
    if (int r = genl_connect(sock.get()); r < 0)
        throw nl_failure("genl_connect", r);
    int family = genl_ctrl_resolve(sock.get(), VIADUCT_GENL_NAME);
    if (family < 0)
        throw nl_failure("resolving the viaduct family", family);

    std::unique_ptr<nl_msg, MsgDeleter> msg(nlmsg_alloc());
    if (!msg || !genlmsg_put(msg.get(), NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, NLM_F_DUMP,
                             VIADUCT_CMD_STATS_GET, VIADUCT_GENL_VERSION))
        throw std::runtime_error("cannot build the STATS_GET request");
    Parse parse;
    if (int r = nl_socket_modify_cb(sock.get(), NL_CB_VALID, NL_CB_CUSTOM, on_valid, &parse); r < 0)
        throw nl_failure("nl_socket_modify_cb", r);
    if (int r = nl_send_auto(sock.get(), msg.get()); r < 0)
        throw nl_failure("sending STATS_GET", r);
    // The default handlers stop at the dump's NLMSG_DONE.
    if (int r = nl_recvmsgs_default(sock.get()); r < 0)
        throw nl_failure("receiving the STATS_GET dump", r);
    return parse.dump;
}

} // namespace viaduct::test
