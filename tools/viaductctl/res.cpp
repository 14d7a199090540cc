// SPDX-License-Identifier: GPL-2.0
#include "res.hpp"

#include <sstream>

#include <uapi/viaduct.h>
#include <uapi/viaduct_nl.h>

#include "json.hpp"

namespace viaductctl {

namespace {

std::string hex(std::uint32_t v) {
    std::ostringstream s;
    s << "0x" << std::hex << v;
    return s.str();
}

std::string dev_or_dash(const Owner &o) {
    return o.dev.empty() ? "-" : o.dev;
}

void owner_text(std::ostream &out, const Owner &o) {
    out << dev_or_dash(o) << " pid " << o.pid << " comm " << (o.comm.empty() ? "-" : o.comm)
        << " ctx " << o.ctx;
}

// rdma(8)'s keys: the device is "ifname", a context "ctxn".
void owner_json(JsonWriter &j, const Owner &o) {
    j.field("ifname", o.dev).field("pid", o.pid).field("comm", o.comm).field("ctxn", o.ctx);
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
    default:
        return "res";
    }
}

std::uint32_t res_type_from_name(const std::string &name) {
    for (std::uint32_t t = VIADUCT_RES_PD; t <= VIADUCT_RES_QP; ++t)
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
    if (style.json) {
        JsonWriter j(style.pretty);
        // The module-wide counters first: scripts that look for the first
        // "pinned_pages" find them.
        j.begin_object().key("global").begin_object();
        for (const auto &[name, v] : stats.global)
            j.field(name, v);
        j.end_object().key("contexts").begin_array();
        for (const auto &c : stats.contexts) {
            j.begin_object();
            owner_json(j, c.owner);
            for (const auto &[name, v] : c.counters)
                j.field(name, v);
            j.end_object();
        }
        j.end_array().end_object();
        out << j.str() << '\n';
        return;
    }
    out << "global";
    for (const auto &[name, v] : stats.global)
        out << ' ' << name << ' ' << v;
    out << '\n';
    for (const auto &c : stats.contexts) {
        out << "ctx " << c.owner.ctx << " dev " << dev_or_dash(c.owner) << " pid " << c.owner.pid
            << " comm " << (c.owner.comm.empty() ? "-" : c.owner.comm);
        for (const auto &[name, v] : c.counters)
            out << ' ' << name << ' ' << v;
        out << '\n';
    }
}

void print_res(std::ostream &out, const std::vector<ResInfo> &res, OutputStyle style) {
    if (style.json) {
        JsonWriter j(style.pretty);
        j.begin_array();
        for (const auto &r : res) {
            j.begin_object().field("type", res_type_name(r.type));
            owner_json(j, r.owner);
            j.field("handle", r.handle);
            for (const auto &row : rows(r)) {
                if (row.word.empty())
                    j.field(row.json, row.num);
                else
                    j.field(row.json, row.word);
            }
            j.end_object();
        }
        j.end_array();
        out << j.str() << '\n';
        return;
    }
    for (const auto &r : res) {
        out << res_type_name(r.type) << ' ';
        owner_text(out, r.owner);
        out << " handle " << r.handle;
        for (const auto &row : rows(r)) {
            out << ' ' << row.text << ' ';
            if (row.word.empty())
                out << row.num;
            else
                out << row.word;
        }
        out << '\n';
    }
}

} // namespace viaductctl
