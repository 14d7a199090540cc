// SPDX-License-Identifier: GPL-2.0
#include "res.hpp"

#include <sstream>

#include <viaduct/viaduct-abi.h>
#include <viaduct/viaduct-nl.h>

namespace viaductctl {

namespace {

std::string hex(std::uint32_t v) {
    std::ostringstream s;
    s << "0x" << std::hex << v;
    return s.str();
}

std::string dash(const std::string &s) {
    return s.empty() ? "-" : s;
}

std::string doorbell_mode(std::uint32_t flags) {
    return (flags & VIADUCT_QP_F_POLLED) ? "polled" : "syscall";
}

// One resource's own fields, as (text name, JSON name, value) rows; text
// values that are words print as they are, numbers as numbers.
struct Row {
    const char *text;
    const char *json;
    std::string word; // empty: @num is the value
    std::uint64_t num = 0;
};

std::vector<Row> rows(const ResInfo &r) {
    std::vector<Row> v;
    auto num = [&v](const char *t, const char *j, const auto &opt) {
        if (opt)
            v.push_back({t, j, {}, *opt});
    };
    switch (r.type) {
    case VIADUCT_RES_PD:
        num("pdn", "pdn", r.pdn);
        break;
    case VIADUCT_RES_MR:
        num("pd", "pd", r.pd);
        num("length", "length", r.length);
        num("pinned", "pinned_pages", r.pinned_pages);
        if (r.access)
            v.push_back({"access", "access", access_names(*r.access), 0});
        if (r.stag)
            v.push_back({"stag", "stag", hex(*r.stag), 0});
        break;
    case VIADUCT_RES_CQ:
        num("cqe", "cqe", r.cqe);
        break;
    case VIADUCT_RES_QP:
        num("lqpn", "lqpn", r.qpn);
        if (r.state)
            v.push_back({"state", "state", qp_state_name(*r.state), 0});
        num("sq", "sq_depth", r.sq_depth);
        num("rq", "rq_depth", r.rq_depth);
        if (r.qp_flags)
            v.push_back({"doorbell", "doorbell", doorbell_mode(*r.qp_flags), 0});
        num("pd", "pd", r.pd);
        num("scq", "send_cq", r.send_cq);
        num("rcq", "recv_cq", r.recv_cq);
        num("srq", "srq", r.srq);
        break;
    case VIADUCT_RES_SRQ:
        num("wr", "max_wr", r.rq_depth);
        num("limit", "limit", r.srq_limit);
        num("qps", "qps", r.srq_qps);
        num("pd", "pd", r.pd);
        break;
    default:
        break;
    }
    return v;
}

} // namespace

std::string res_type_name(std::uint32_t type) {
    switch (type) {
    case VIADUCT_RES_PD:
        return "pd";
    case VIADUCT_RES_MR:
        return "mr";
    case VIADUCT_RES_CQ:
        return "cq";
    case VIADUCT_RES_QP:
        return "qp";
    case VIADUCT_RES_SRQ:
        return "srq";
    default:
        return "res";
    }
}

std::uint32_t res_type_from_name(const std::string &name) {
    for (std::uint32_t t = VIADUCT_RES_PD; t <= VIADUCT_RES_SRQ; ++t)
        if (res_type_name(t) == name)
            return t;
    return 0;
}

std::string qp_state_name(std::uint32_t state) {
    switch (state) {
    case VIADUCT_QPS_IDLE:
        return "IDLE";
    case VIADUCT_QPS_RTS:
        return "RTS";
    case VIADUCT_QPS_CLOSING:
        return "CLOSING";
    case VIADUCT_QPS_TERMINATE:
        return "TERMINATE";
    case VIADUCT_QPS_ERROR:
        return "ERROR";
    default:
        return std::to_string(state);
    }
}

std::string access_names(std::uint32_t access) {
    static const std::pair<std::uint32_t, const char *> names[] = {
        {VIADUCT_ACCESS_LOCAL_WRITE, "LOCAL_WRITE"},
        {VIADUCT_ACCESS_REMOTE_WRITE, "REMOTE_WRITE"},
        {VIADUCT_ACCESS_REMOTE_READ, "REMOTE_READ"},
        {VIADUCT_ACCESS_MW_BIND, "MW_BIND"},
    };
    std::string s;
    for (const auto &[bit, name] : names) {
        if (!(access & bit))
            continue;
        if (!s.empty())
            s += ',';
        s += name;
        access &= ~bit;
    }
    if (access) {
        if (!s.empty())
            s += ',';
        s += hex(access);
    }
    return s.empty() ? "-" : s;
}

bool res_matches(const ResInfo &r, const std::vector<ResFilter> &filters) {
    for (const ResFilter &f : filters) {
        auto number = [&f](std::uint64_t v) { return std::to_string(v) == f.value; };
        bool ok = false;
        if (f.key == "ifname")
            ok = r.owner.dev == f.value;
        else if (f.key == "pid")
            ok = number(r.owner.pid);
        else if (f.key == "comm")
            ok = r.owner.comm == f.value;
        else if (f.key == "ctxn")
            ok = number(r.owner.ctx);
        else if (f.key == "handle")
            ok = number(r.handle);
        else if (f.key == "lqpn")
            ok = r.qpn && number(*r.qpn);
        if (!ok)
            return false;
    }
    return true;
}

void print_stats(std::ostream &out, const Stats &stats, OutputStyle style) {
    Printer p(out, style);
    p.begin_top_object();
    // The module-wide counters first: scripts that look for the first
    // "pinned_pages" find them.
    p.begin_record("global");
    p.text("global");
    for (const auto &[name, v] : stats.global)
        p.any(name.c_str(), name.c_str(), v);
    p.end_record();
    p.begin_json_array("contexts");
    for (const auto &c : stats.contexts) {
        p.begin_record();
        p.any("ctxn", "ctx", c.owner.ctx);
        p.any("ifname", "dev", c.owner.dev, dash(c.owner.dev));
        p.any("pid", "pid", c.owner.pid);
        p.any("comm", "comm", c.owner.comm, dash(c.owner.comm));
        for (const auto &[name, v] : c.counters)
            p.any(name.c_str(), name.c_str(), v);
        p.end_record();
    }
    p.end_json_array();
    p.end_top_object();
}

// rdma(8)'s keys: the device is "ifname", a context "ctxn", a QP "lqpn".
void print_res(std::ostream &out, const std::vector<ResInfo> &res, OutputStyle style) {
    Printer p(out, style);
    p.begin_list();
    for (const auto &r : res) {
        p.begin_record();
        p.any("type", "", res_type_name(r.type));
        p.any("ifname", "", r.owner.dev, dash(r.owner.dev));
        p.any("pid", "pid", r.owner.pid);
        p.any("comm", "comm", r.owner.comm, dash(r.owner.comm));
        p.any("ctxn", "ctx", r.owner.ctx);
        p.any("handle", "handle", r.handle);
        for (const auto &row : rows(r)) {
            if (row.word.empty())
                p.any(row.json, row.text, row.num);
            else
                p.any(row.json, row.text, row.word);
        }
        p.end_record();
    }
    p.end_list();
}

} // namespace viaductctl
