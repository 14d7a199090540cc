// SPDX-License-Identifier: GPL-2.0
// Counters (VIADUCT_CMD_STATS_GET) and resources (VIADUCT_CMD_RES_GET) as
// viaductctl keeps and prints them: "stats" and "res", after rdma(8)'s
// "statistic" and "res show".
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "args.hpp"
#include "output.hpp"

namespace viaductctl {

using Counters = std::vector<std::pair<std::string, std::uint64_t>>;

// Who holds a context: an open file of /dev/viaduct.
struct Owner {
    std::uint32_t ctx = 0;
    std::uint32_t pid = 0; // 0: not visible in our pid namespace
    std::string comm;
    std::string dev; // empty: no device selected
};

struct ContextStats {
    Owner owner;
    Counters counters; // "pds", "mrs", "cqs", "qps", "pinned_pages", "doorbells"
};

struct Stats {
    Counters global; // module-wide, in VIADUCT_A_STAT_* order
    std::vector<ContextStats> contexts;
};

struct ResInfo {
    std::uint32_t type = 0; // VIADUCT_RES_*
    Owner owner;
    std::uint32_t handle = 0;
    std::optional<std::uint32_t> pd; // handle of the PD (MR, QP)
    std::optional<std::uint32_t> pdn;
    // MR
    std::optional<std::uint32_t> stag; // only for CAP_NET_ADMIN readers
    std::optional<std::uint64_t> length;
    std::optional<std::uint64_t> pinned_pages;
    std::optional<std::uint32_t> access; // VIADUCT_ACCESS_*
    // CQ
    std::optional<std::uint32_t> cqe;
    // QP
    std::optional<std::uint32_t> qpn;
    std::optional<std::uint32_t> state; // VIADUCT_QPS_*
    std::optional<std::uint32_t> qp_flags;
    std::optional<std::uint32_t> sq_depth;
    std::optional<std::uint32_t> rq_depth;
    std::optional<std::uint32_t> send_cq;
    std::optional<std::uint32_t> recv_cq;
    std::optional<std::uint32_t> srq; // QP: handle of its SRQ
    // SRQ (and rq_depth, pd, pdn)
    std::optional<std::uint32_t> srq_limit;
    std::optional<std::uint32_t> srq_qps;
};

// "pd", "mr", "cq", "qp", "srq"; "res" for a type this tool does not know.
std::string res_type_name(std::uint32_t type);
// VIADUCT_RES_* for a name above, 0 if none.
std::uint32_t res_type_from_name(const std::string &name);
// IDLE, RTS, CLOSING, TERMINATE, ERROR, or the number.
std::string qp_state_name(std::uint32_t state);
// "LOCAL_WRITE,REMOTE_READ", "-" for none.
std::string access_names(std::uint32_t access);

// Whether @r passes every filter (all must match; a qp filter such as lqpn
// matches no other type). Numbers compare in decimal.
bool res_matches(const ResInfo &r, const std::vector<ResFilter> &filters);

// "stats": a "global" line, then one line per context; JSON:
// {"global": {...}, "contexts": [{...}, ...]}.
void print_stats(std::ostream &out, const Stats &stats, OutputStyle style);

// "res": one line (JSON: one object) per resource, e.g.
// "qp vd0 pid 123 comm foo ctx 4 handle 5 qpn 5 state IDLE sq 16 rq 16 doorbell polled pd 1".
void print_res(std::ostream &out, const std::vector<ResInfo> &res, OutputStyle style);

} // namespace viaductctl
